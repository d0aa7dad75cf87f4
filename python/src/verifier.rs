//! The prepared verifier (`Verifier`): a key set parsed once, a revocation
//! set, the status lists it was given, an optional bounded cache of tokens
//! that already verified, and a memory of the DPoP proofs it accepted, so
//! none is used twice. And an agent's own key (`AgentKey`), which signs
//! DPoP proofs with core's signer.
//!
//! A cache hit is not a free pass: every hit re-checks the token's lifetime,
//! its line against the revocation set, its status (when checked) and its
//! binding, exactly as a miss does.

use std::collections::{BTreeSet, HashMap};

use mandate_core::{
    Claims, DpopError, Jth, Jwks, NewProof, SigningKey, StatusCheckError, VerifiedProof,
    VerifiedStatusList, VerifyOptions,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::convert::{
    Answer, flag_arg, json_or_text, loads, now_arg, optional_string, seconds_arg, string_arg,
    strings_arg, to_py,
};
use crate::error::{Failure, Stage};
use crate::token::{
    ListInfo, RequestInput, dpop_failure, parse_jwks, parse_revoked, revoked_failure,
    status_failure, status_list_failure, status_origins, verified_json, verify_failure,
    verify_options,
};

/// Most proofs a verifier remembers at once.
const PROOF_MEMORY: usize = 65_536;
/// Most status lists a verifier holds at once; past it, the list signed
/// longest ago is dropped, and a token of that list is refused
/// (`status_unknown`) until it is given again.
const MAX_HELD_LISTS: usize = 256;

/// Status checking: the lists held, newest per uri, and the oldest list
/// accepted.
#[derive(Debug, Default)]
struct StatusLists {
    max_staleness_seconds: Option<u64>,
    origins: Option<Vec<String>>,
    lists: Vec<VerifiedStatusList>,
}

impl StatusLists {
    /// The token's status in the list held for its uri (core's rule): a
    /// token without a status claim passes; one whose list is not held is
    /// `status_unknown`.
    fn check(&self, claims: &Claims, now: i64) -> Result<(), Failure> {
        if let Some(origins) = &self.origins {
            mandate_core::check_status_origin(claims, origins).map_err(|e| status_failure(&e))?;
        }
        mandate_core::check_status_with(
            claims,
            |uri| self.lists.iter().find(|list| list.uri == *uri),
            now,
            self.max_staleness_seconds,
        )
        .map_err(|e| status_failure(&e))
    }

    /// Holds `list` for its uri unless one signed later is held; answers
    /// whether it is now the one checked against.
    fn hold(&mut self, list: VerifiedStatusList) -> bool {
        if self
            .lists
            .iter()
            .any(|held| held.uri == list.uri && held.iat > list.iat)
        {
            return false;
        }
        self.lists.retain(|held| held.uri != list.uri);
        if self.lists.len() >= MAX_HELD_LISTS {
            let oldest = (0..self.lists.len()).min_by_key(|i| self.lists.get(*i).map(|l| l.iat));
            if let Some(oldest) = oldest {
                self.lists.swap_remove(oldest);
            }
        }
        self.lists.push(list);
        true
    }
}

/// A token that verified: its claims, and its result as JSON text (every
/// hit gives the caller fresh Python values).
#[derive(Debug)]
struct Entry {
    claims: Claims,
    json: String,
}

/// A bounded map from tokens to what their verification found, in two
/// generations: a lookup moves a token to the young one; when the young one
/// is full it becomes the old one, and the previous old one is dropped.
#[derive(Debug)]
struct Cache {
    half: usize,
    young: HashMap<String, Entry>,
    old: HashMap<String, Entry>,
}

impl Cache {
    fn new(capacity: usize) -> Cache {
        Cache {
            half: capacity / 2,
            young: HashMap::new(),
            old: HashMap::new(),
        }
    }

    fn get(&mut self, token: &str) -> Option<&Entry> {
        if !self.young.contains_key(token) {
            let entry = self.old.remove(token)?;
            self.insert(token.to_owned(), entry);
        }
        self.young.get(token)
    }

    fn insert(&mut self, token: String, entry: Entry) {
        if self.half == 0 {
            return;
        }
        if self.young.len() >= self.half {
            self.old = std::mem::take(&mut self.young);
        }
        self.young.insert(token, entry);
    }

    fn remove(&mut self, token: &str) {
        self.young.remove(token);
        self.old.remove(token);
    }
}

/// Verifies tokens against one key set, prepared once. The constructor
/// raises `MandateError` when the key set or an option is unusable.
#[pyclass(module = "mandate._native")]
#[derive(Debug)]
pub(crate) struct Verifier {
    keys: Jwks,
    options: VerifyOptions,
    revoked: BTreeSet<Jth>,
    cache: Cache,
    /// Replay keys of accepted proofs, with the last second each is good for.
    proofs: HashMap<[u8; 32], i64>,
    /// With `check_status`, the status lists held; `None` checks no status.
    status: Option<StatusLists>,
}

#[pymethods]
impl Verifier {
    #[new]
    #[pyo3(signature = (
        jwks, *, leeway_seconds = None, issuer = None, revoked = None, cache_size = None,
        check_status = None, max_staleness_seconds = None, status_origins = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        jwks: &Bound<'_, PyAny>,
        leeway_seconds: Option<&Bound<'_, PyAny>>,
        issuer: Option<&Bound<'_, PyAny>>,
        revoked: Option<&Bound<'_, PyAny>>,
        cache_size: Option<&Bound<'_, PyAny>>,
        check_status: Option<&Bound<'_, PyAny>>,
        max_staleness_seconds: Option<&Bound<'_, PyAny>>,
        status_origins: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Verifier> {
        let check_status = flag_arg(check_status, "check_status")?;
        let max_staleness = seconds_arg(
            max_staleness_seconds,
            "max_staleness_seconds",
            "invalid_options",
        )?;
        let origins = self::status_origins(status_origins)?;
        if !check_status && (max_staleness.is_some() || origins.is_some()) {
            return Err(Failure::input(
                "invalid_options",
                "max_staleness_seconds and status_origins apply to status lists: give check_status=True",
            )
            .into());
        }
        let cache_size = seconds_arg(cache_size, "cache_size", "invalid_options")?.unwrap_or(0);
        Ok(Verifier {
            options: verify_options(leeway_seconds, issuer)?,
            revoked: parse_revoked(revoked)?,
            keys: parse_jwks(jwks)?,
            cache: Cache::new(usize::try_from(cache_size).unwrap_or(usize::MAX)),
            proofs: HashMap::new(),
            status: check_status.then(|| StatusLists {
                max_staleness_seconds: max_staleness,
                origins,
                lists: Vec::new(),
            }),
        })
    }

    /// How many verified tokens the cache holds.
    #[getter]
    fn cached(&self) -> usize {
        self.cache.young.len() + self.cache.old.len()
    }

    /// Verifies a token at `now` (default the clock). A bound token is
    /// refused (`dpop_required`): check it with `verify_request`.
    #[pyo3(signature = (token, *, now = None))]
    fn verify(
        &mut self,
        py: Python<'_>,
        token: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> Answer {
        let now = now_arg(now)?;
        let token = string_arg(token, "token")?;
        let json = self.checked(&token, now, None)?;
        loads(py, &json)
    }

    /// Verifies a token presented with a request: everything `verify`
    /// checks, then the binding rule — a bound token needs `proof`, a valid
    /// DPoP proof by its holder for this `method` and `url`, never seen
    /// before by this verifier; an unbound token takes none.
    #[pyo3(signature = (token, *, method, url, proof = None, now = None))]
    fn verify_request(
        &mut self,
        py: Python<'_>,
        token: &Bound<'_, PyAny>,
        method: &Bound<'_, PyAny>,
        url: &Bound<'_, PyAny>,
        proof: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> Answer {
        let token = string_arg(token, "token")?;
        let request = RequestInput {
            proof: optional_string(proof, "proof")?,
            method: string_arg(method, "method")?,
            url: string_arg(url, "url")?,
        };
        let now = now_arg(now)?;
        let json = self.checked(&token, now, Some(&request))?;
        loads(py, &json)
    }

    /// Adds one revoked token or a list to the revocation set, each named by
    /// its jti or its jti hash. All or nothing: a malformed entry adds none.
    fn revoke(&mut self, jtis: &Bound<'_, PyAny>) -> PyResult<()> {
        let list = if jtis.is_instance_of::<PyString>() {
            vec![string_arg(jtis, "jtis")?]
        } else {
            strings_arg(jtis, "jtis")?
        };
        let jths = mandate_core::revocation_set(&list).map_err(|e| Failure::input(e.code(), e))?;
        self.revoked.extend(jths);
        Ok(())
    }

    /// Verifies a status list token against the key set at `now` and holds
    /// it for its `sub`, unless a list of that uri signed later is held.
    /// Answers what the list says about itself and `held`. Refused
    /// (`status_checking_off`) unless made with `check_status=True`.
    #[pyo3(signature = (jwt, *, now = None))]
    fn set_status_list(
        &mut self,
        py: Python<'_>,
        jwt: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> Answer {
        #[derive(serde::Serialize)]
        struct Set<'a> {
            held: bool,
            #[serde(flatten)]
            info: ListInfo<'a>,
        }
        let now = now_arg(now)?;
        let jwt = string_arg(jwt, "jwt")?;
        let Some(status) = self.status.as_mut() else {
            return Err(Failure::input(
                "status_checking_off",
                "this verifier checks no status: make it with check_status=True",
            )
            .into());
        };
        let list = mandate_core::verify_status_list(&jwt, &self.keys, now, None)
            .map_err(|e| status_list_failure(&e))?;
        if status
            .origins
            .as_ref()
            .is_some_and(|origins| !list.uri.on_origin(origins))
        {
            return Err(status_failure(&StatusCheckError::OriginNotAllowed).into());
        }
        let result = to_py(
            py,
            &Set {
                held: !status
                    .lists
                    .iter()
                    .any(|held| held.uri == list.uri && held.iat > list.iat),
                info: ListInfo::of(&list),
            },
        )?;
        status.hold(list);
        Ok(result)
    }

    /// Replaces the key set (a key rotated in or out), raising
    /// `MandateError` when it is unusable. Cached tokens and held status
    /// lists are dropped, as they were verified with the old keys: give the
    /// lists again. The revocation set and the memory of accepted proofs
    /// stay, so a proof is not good twice across a key refresh.
    fn set_keys(&mut self, jwks: &Bound<'_, PyAny>) -> PyResult<()> {
        self.keys = parse_jwks(jwks)?;
        self.cache.young.clear();
        self.cache.old.clear();
        if let Some(status) = self.status.as_mut() {
            status.lists.clear();
        }
        Ok(())
    }

    /// Forgets every cached token (the revocation set and status lists stay).
    fn clear_cache(&mut self) {
        self.cache.young.clear();
        self.cache.old.clear();
    }
}

impl Verifier {
    /// Revocation, the token's status (when checked), then the binding rule.
    /// Returns the proof to remember.
    fn judge(
        &self,
        claims: &Claims,
        token: &str,
        now: i64,
        request: Option<&RequestInput>,
    ) -> Result<Option<VerifiedProof>, Failure> {
        if let Some(jth) = claims.first_revoked(|jth| self.revoked.contains(jth)) {
            return Err(revoked_failure(jth));
        }
        if let Some(status) = &self.status {
            status.check(claims, now)?;
        }
        match request {
            Some(request) => request.check(claims, token, now),
            None if claims.cnf.is_some() => Err(dpop_failure(&DpopError::Required)),
            None => Ok(None),
        }
    }

    /// The verdict on a token at `now` as JSON text, from the cache or
    /// afresh, with the binding rule for `request`.
    fn checked(
        &mut self,
        token: &str,
        now: i64,
        request: Option<&RequestInput>,
    ) -> Result<String, Failure> {
        let leeway = self.options.leeway_seconds;
        let hit = self.cache.get(token).map(|entry| {
            (
                entry
                    .claims
                    .check_time(now, leeway)
                    .map(|()| entry.claims.clone()),
                entry.json.clone(),
            )
        });
        if let Some((claims, json)) = hit {
            let claims = match claims {
                Ok(claims) => claims,
                Err(error) => {
                    self.cache.remove(token);
                    return Err(verify_failure(&error));
                }
            };
            if let Some(proof) = self.judge(&claims, token, now, request)? {
                self.first_use(&proof, now)?;
            }
            return Ok(json);
        }
        let verified = mandate_core::verify(token, &self.keys, now, &self.options)
            .map_err(|e| verify_failure(&e))?;
        if let Some(proof) = self.judge(&verified.claims, token, now, request)? {
            self.first_use(&proof, now)?;
        }
        let json = verified_json(&verified);
        self.cache.insert(
            token.to_owned(),
            Entry {
                claims: verified.claims,
                json: json.clone(),
            },
        );
        Ok(json)
    }

    /// Remembers a proof's first use, or refuses a second.
    fn first_use(&mut self, proof: &VerifiedProof, now: i64) -> Result<(), Failure> {
        let key = proof.replay_key();
        if self.proofs.get(&key).is_some_and(|until| *until >= now) {
            return Err(dpop_failure(&DpopError::Replayed));
        }
        if self.proofs.len() >= PROOF_MEMORY {
            self.proofs.retain(|_, until| *until >= now);
            if self.proofs.len() >= PROOF_MEMORY {
                return Err(Failure::new(
                    Stage::Dpop,
                    "dpop_memory_full",
                    "too many live proofs to remember one more; retry in a minute",
                ));
            }
        }
        self.proofs.insert(key, proof.remember_until());
        Ok(())
    }
}

/// `N` bytes from `os.urandom`, the operating system's randomness.
fn random_bytes<const N: usize>(py: Python<'_>) -> PyResult<[u8; N]> {
    let bytes = py.import("os")?.getattr("urandom")?.call1((N,))?;
    let bytes = bytes.cast::<PyBytes>()?.as_bytes();
    <[u8; N]>::try_from(bytes)
        .map_err(|_| Failure::input("no_randomness", "os.urandom gave too few bytes").into())
}

/// An agent's own Ed25519 key, for tokens bound to it (RFC 9449 DPoP).
#[pyclass(module = "mandate._native", frozen)]
#[derive(Debug)]
pub(crate) struct AgentKey {
    key: SigningKey,
}

#[pymethods]
impl AgentKey {
    /// A new key: from `secret` (32 random bytes) when given, else from
    /// `os.urandom`.
    #[staticmethod]
    #[pyo3(signature = (secret = None))]
    fn generate(py: Python<'_>, secret: Option<&Bound<'_, PyAny>>) -> PyResult<AgentKey> {
        let secret: [u8; 32] = match secret.filter(|s| !s.is_none()) {
            None => random_bytes::<32>(py)?,
            Some(secret) => secret
                .cast::<PyBytes>()
                .ok()
                .and_then(|bytes| <[u8; 32]>::try_from(bytes.as_bytes()).ok())
                .ok_or_else(|| Failure::argument("secret must be 32 bytes"))?,
        };
        Ok(AgentKey {
            key: SigningKey::from_secret(&secret),
        })
    }

    /// A key stored with `export_jwk` (a dict or JSON text).
    #[staticmethod]
    fn from_jwk(jwk: &Bound<'_, PyAny>) -> PyResult<AgentKey> {
        let text = json_or_text(jwk, "jwk")?;
        let key = SigningKey::from_private_jwk(text.as_bytes())
            .map_err(|e| Failure::input(e.code(), e))?;
        Ok(AgentKey { key })
    }

    /// The public key, as `holder_key` takes it when a token is issued or
    /// delegated to this agent.
    #[getter]
    fn public_jwk(&self, py: Python<'_>) -> Answer {
        to_py(py, &self.key.holder_key().public_jwk())
    }

    /// The key's RFC 7638 thumbprint: `cnf.jkt` of the tokens bound to it.
    #[getter]
    fn jkt(&self) -> String {
        self.key.holder_key().jkt().to_string()
    }

    /// The key with its secret (`d`), to store it; `AgentKey.from_jwk` reads
    /// it back. Whoever holds this can act with every token bound to it.
    fn export_jwk(&self, py: Python<'_>) -> Answer {
        to_py(py, &self.key.to_private_jwk())
    }

    /// A DPoP proof for one request made with `access_token`: the value of
    /// its `DPoP` header.
    #[pyo3(signature = (*, method, url, access_token, now = None))]
    fn proof(
        &self,
        py: Python<'_>,
        method: &Bound<'_, PyAny>,
        url: &Bound<'_, PyAny>,
        access_token: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let method = string_arg(method, "method")?;
        let url = string_arg(url, "url")?;
        let access_token = string_arg(access_token, "access_token")?;
        let now = now_arg(now)?;
        let jti_random = random_bytes::<16>(py)?;
        mandate_core::sign_proof(
            &self.key,
            &NewProof {
                method: &method,
                url: &url,
                access_token: &access_token,
                now,
                jti_random,
            },
        )
        .map_err(|e| Failure::input(e.code(), e).into())
    }

    fn __repr__(&self) -> String {
        format!(
            "AgentKey(jkt={:?})",
            self.key.holder_key().jkt().to_string()
        )
    }
}
