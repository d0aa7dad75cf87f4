//! The prepared verifier (`Verifier`), over mandate-facade's `Verifier`: a
//! key set parsed once, a revocation set, the status lists it was given, an
//! optional bounded cache of tokens that already verified and a memory of
//! the DPoP proofs it accepted, judged by the same sequence as the npm
//! package's (a cache hit re-checks lifetime, revocation, status and
//! binding exactly as a miss does); each verified token's result is kept as
//! JSON text, so every hit gives the caller fresh Python values. And an
//! agent's own key (`AgentKey`), which signs DPoP proofs with core's signer.

use mandate_core::{NewProof, NewRelay, SigningKey};
use mandate_facade::{RequestInput, VerifierSetup};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::convert::{
    Answer, flag_arg, json_or_text, loads, now_arg, optional_string, seconds_arg, string_arg,
    strings_arg, to_py,
};
use crate::error::{Failure, raised};
use crate::token::{parse_jwks, parse_revoked, status_options, verified_json, verify_options};

/// Verifies tokens against one key set, prepared once. The constructor
/// raises `MandateError` when the key set or an option is unusable.
#[pyclass(module = "mandate._native")]
#[derive(Debug)]
pub(crate) struct Verifier {
    inner: mandate_facade::Verifier<String>,
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
        let status = status_options(check_status, max_staleness_seconds, status_origins)?;
        let cache_size = seconds_arg(cache_size, "cache_size", "invalid_options")?.unwrap_or(0);
        Ok(Verifier {
            inner: mandate_facade::Verifier::new(VerifierSetup {
                options: verify_options(leeway_seconds, issuer)?,
                revoked: parse_revoked(revoked)?,
                keys: parse_jwks(jwks)?,
                cache_size: usize::try_from(cache_size).unwrap_or(usize::MAX),
                status,
            }),
        })
    }

    /// How many verified tokens the cache holds.
    #[getter]
    fn cached(&self) -> usize {
        self.inner.cached()
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
        let json = self
            .inner
            .check(&token, now, None, verified_json)
            .map_err(raised)?;
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
        let json = self
            .inner
            .check(&token, now, Some(&request), verified_json)
            .map_err(raised)?;
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
        self.inner
            .revoke(mandate_facade::parse_revoked(&list).map_err(raised)?);
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
            info: mandate_facade::ListInfo<'a>,
        }
        let now = now_arg(now)?;
        let jwt = string_arg(jwt, "jwt")?;
        self.inner
            .set_status_list(
                &jwt,
                now,
                "this verifier checks no status: make it with check_status=True",
                |held, info| to_py(py, &Set { held, info }),
            )
            .map_err(raised)?
    }

    /// Replaces the key set (a key rotated in or out), raising
    /// `MandateError` when it is unusable. Cached tokens and held status
    /// lists are dropped, as they were verified with the old keys: give the
    /// lists again. The revocation set and the memory of accepted proofs
    /// stay, so a proof is not good twice across a key refresh.
    fn set_keys(&mut self, jwks: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.set_keys(parse_jwks(jwks)?);
        Ok(())
    }

    /// Forgets every cached token (the revocation set and status lists stay).
    fn clear_cache(&mut self) {
        self.inner.clear_cache();
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
    /// its `DPoP` header. Without `access_token`, a proof for a token
    /// request (RFC 9449 §5: no `ath`), which binds what the authorization
    /// server issues to this key.
    #[pyo3(signature = (*, method, url, access_token = None, now = None))]
    fn proof(
        &self,
        py: Python<'_>,
        method: &Bound<'_, PyAny>,
        url: &Bound<'_, PyAny>,
        access_token: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let method = string_arg(method, "method")?;
        let url = string_arg(url, "url")?;
        let access_token = match access_token {
            Some(token) if !token.is_none() => Some(string_arg(token, "access_token")?),
            _ => None,
        };
        let now = now_arg(now)?;
        let jti_random = random_bytes::<16>(py)?;
        mandate_core::sign_proof(
            &self.key,
            &NewProof {
                method: &method,
                url: &url,
                access_token: access_token.as_deref(),
                now,
                jti_random,
            },
        )
        .map_err(|e| Failure::input(e.code(), e).into())
    }

    /// An MCP gate's relay proof for one Mandate request made with a
    /// client's `access_token` (the value of its `Mandate-Relay` header),
    /// naming the client's proof it forwards, if any, by its hash (`cph`;
    /// docs/oauth.md, "The gate relays the client's proof").
    #[pyo3(signature = (*, method, url, access_token, forwarded_proof = None, now = None))]
    fn relay_proof(
        &self,
        py: Python<'_>,
        method: &Bound<'_, PyAny>,
        url: &Bound<'_, PyAny>,
        access_token: &Bound<'_, PyAny>,
        forwarded_proof: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let method = string_arg(method, "method")?;
        let url = string_arg(url, "url")?;
        let access_token = string_arg(access_token, "access_token")?;
        let forwarded = match forwarded_proof {
            Some(proof) if !proof.is_none() => Some(string_arg(proof, "forwarded_proof")?),
            _ => None,
        };
        let now = now_arg(now)?;
        let jti_random = random_bytes::<16>(py)?;
        mandate_core::sign_relay(
            &self.key,
            &NewRelay {
                method: &method,
                url: &url,
                access_token: &access_token,
                forwarded: forwarded.as_deref(),
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
