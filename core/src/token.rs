//! Tokens (VATs): typed claims, issuing and delegating, signing, and the one
//! verification routine host and wasm both use.
//!
//! A token is a compact JWS with header
//! `{"alg":"EdDSA","typ":"vat+jwt","kid":<RFC 7638 thumbprint>}` and the
//! claims of [`Claims`]. [`verify`] applies every rule in a fixed order and
//! stops at the first failure, each with its own [`VerifyError`]:
//!
//! 1. size (over [`MAX_TOKEN_BYTES`] is refused before decoding);
//! 2. exactly three segments, each strict base64url;
//! 3. header: `alg` exactly `EdDSA`; no `jwk`, `jku`, `x5u`, `x5c`, `x5t`,
//!    `x5t#S256` or `crit`; `typ` exactly `vat+jwt`; `kid` present and in the
//!    given key set; no other member; no member twice;
//! 4. a 64-byte signature that passes `verify_strict`;
//! 5. claims: exactly the members of [`Claims`], none twice; `exp`, `nbf` and
//!    `iat` integers; the svc claims consistent with each other (depth, chain,
//!    actor, trust of the assurance level);
//! 6. `iss` when the caller names one;
//! 7. time: not expired (`now < exp + leeway`) and already valid
//!    (`nbf <= now + leeway`).
//!
//! The claims of a token are read without checking its signature only through
//! [`decode_unverified`].

use std::fmt;

use base64::Engine as _;
use ed25519_dalek::Signature;
use serde::{Deserialize, Serialize};

use crate::b64;
use crate::ids::{AgentId, HumanRef, IdError, Jkt, Jth, Jti, JtiKind, ProvenanceRef, Ulid};
use crate::json::{NumericDate, Present, has_duplicate_member, present};
use crate::keys::{Jwks, SigningKey};
use crate::limits::{
    DEFAULT_LEEWAY_SECONDS, DEFAULT_TTL_SECONDS, MAX_CHILDREN_PER_TOKEN, MAX_DELEGATION_DEPTH,
    MAX_TOKEN_BYTES, MAX_TTL_SECONDS, MIN_TTL_SECONDS, TRUST_L1, TRUST_L2, TRUST_L3,
};
use crate::scope::{
    Constraints, DELEGATE_ACTION, Grant, Policy, Scope, ScopeError, Widening, check_narrowing,
};

/// The JWS `alg` of every Mandate token.
pub const ALG: &str = "EdDSA";
/// The JWS `typ` of every Mandate token.
pub const TYP: &str = "vat+jwt";

/// How the human at the root of a chain was verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AssuranceLevel {
    /// API key, instant.
    L1,
    /// OIDC single sign-on.
    L2,
    /// Biometric or identity-provider verification.
    L3,
}

impl AssuranceLevel {
    /// The base trust score of tokens issued at this level.
    pub fn trust(self) -> f64 {
        match self {
            AssuranceLevel::L1 => TRUST_L1,
            AssuranceLevel::L2 => TRUST_L2,
            AssuranceLevel::L3 => TRUST_L3,
        }
    }

    /// `L1`, `L2` or `L3`.
    pub fn as_str(self) -> &'static str {
        match self {
            AssuranceLevel::L1 => "L1",
            AssuranceLevel::L2 => "L2",
            AssuranceLevel::L3 => "L3",
        }
    }
}

/// RFC 8693 actor claim: who delegated, nearest delegator first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Actor {
    /// `agent:<agent_id>` of the delegator.
    pub sub: String,
    /// The delegator's own delegator, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act: Option<Box<Actor>>,
}

impl Actor {
    fn depth(&self) -> u32 {
        1 + self.act.as_ref().map_or(0, |inner| inner.depth())
    }
}

/// RFC 7800 confirmation of a bound token: the RFC 7638 thumbprint of the
/// holder's key (RFC 9449 `jkt`). Every call made with the token carries a
/// proof signed by that key (see [`crate::dpop`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Confirmation {
    pub jkt: Jkt,
}

/// The claims of a Mandate token, in the order they are written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawClaims")]
pub struct Claims {
    pub iss: String,
    /// `agent:<agent_id>`.
    #[serde(serialize_with = "serialize_subject")]
    pub sub: AgentId,
    pub iat: i64,
    pub nbf: i64,
    pub exp: i64,
    pub jti: Jti,
    pub svc_trust_score: f64,
    pub svc_scope: Scope,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub svc_constraints: Option<Constraints>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub svc_policy: Option<Policy>,
    pub svc_prov: ProvenanceRef,
    pub svc_human: HumanRef,
    pub svc_assurance: AssuranceLevel,
    pub svc_depth: u32,
    /// The parent's jti hash (delegated tokens).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub svc_parent: Option<Jth>,
    /// The jti hashes of every ancestor, root first (delegated tokens).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub svc_chain: Option<Vec<Jth>>,
    /// The holder's key, for a bound token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cnf: Option<Confirmation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub act: Option<Actor>,
}

fn serialize_subject<S: serde::Serializer>(agent: &AgentId, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&agent.subject())
}

impl Claims {
    /// The agent the token was issued to.
    pub fn agent_id(&self) -> &AgentId {
        &self.sub
    }

    /// Everything the token grants, for narrowing checks.
    pub fn grant(&self) -> Grant {
        Grant {
            scope: self.svc_scope.clone(),
            constraints: self.svc_constraints.unwrap_or_default(),
            policy: self.svc_policy.clone().unwrap_or_default(),
            expires_at: self.exp,
        }
    }

    /// The budget constraints (empty when the token sets none).
    pub fn constraints(&self) -> Constraints {
        self.svc_constraints.unwrap_or_default()
    }

    /// The jti hashes of this token's ancestors, root first (empty for a
    /// root token).
    pub fn ancestors(&self) -> &[Jth] {
        self.svc_chain.as_deref().unwrap_or_default()
    }

    /// This token's jti hash, the name its descendants know it by.
    pub fn jth(&self) -> Jth {
        self.jti.hash()
    }

    /// The root token's jti hash: the first ancestor, or this token's own.
    pub fn root_jth(&self) -> Jth {
        self.ancestors()
            .first()
            .cloned()
            .unwrap_or_else(|| self.jth())
    }

    /// The jti hash of the first token of this one's line, root first and
    /// the token itself last, that `is_revoked` reports revoked. A token is
    /// void when it or any ancestor is revoked.
    pub fn first_revoked(&self, is_revoked: impl Fn(&Jth) -> bool) -> Option<Jth> {
        if let Some(ancestor) = self.ancestors().iter().find(|jth| is_revoked(jth)) {
            return Some(ancestor.clone());
        }
        Some(self.jth()).filter(|own| is_revoked(own))
    }

    /// Checks the validity window at `now` with `leeway_seconds` of clock
    /// skew: not expired and not before `nbf`.
    pub fn check_time(&self, now: i64, leeway_seconds: u64) -> Result<(), VerifyError> {
        let leeway = i64::try_from(leeway_seconds).unwrap_or(i64::MAX);
        if now >= self.exp.saturating_add(leeway) {
            return Err(VerifyError::Expired);
        }
        if self.nbf > now.saturating_add(leeway) {
            return Err(VerifyError::NotYetValid);
        }
        Ok(())
    }

    /// Checks that the svc claims agree with each other.
    fn check_consistency(&self) -> Result<(), VerifyError> {
        let invalid = |claim: &'static str, reason: &'static str| {
            Err(VerifyError::InvalidClaim { claim, reason })
        };
        if self.svc_trust_score != self.svc_assurance.trust() {
            return invalid(
                "svc_trust_score",
                "does not equal the base trust of svc_assurance",
            );
        }
        if self.iat > self.exp {
            return invalid("iat", "is after exp");
        }
        if self.svc_depth > MAX_DELEGATION_DEPTH {
            return invalid("svc_depth", "is deeper than the delegation limit");
        }
        let depth = self.svc_depth;
        match (self.jti.kind(), depth) {
            (JtiKind::Root, 0) | (JtiKind::Delegated, 1..) => {}
            _ => return invalid("jti", "kind does not match svc_depth"),
        }
        if depth == 0 {
            if self.svc_parent.is_some() || self.svc_chain.is_some() || self.act.is_some() {
                return invalid("svc_parent", "a root token has no parent, chain or actor");
            }
            return Ok(());
        }
        let (Some(parent), Some(chain), Some(act)) = (&self.svc_parent, &self.svc_chain, &self.act)
        else {
            return invalid(
                "svc_parent",
                "a delegated token needs svc_parent, svc_chain and act",
            );
        };
        if chain.len() != depth as usize {
            return invalid("svc_chain", "length does not equal svc_depth");
        }
        if chain.last() != Some(parent) {
            return invalid("svc_chain", "does not end with svc_parent");
        }
        let own = self.jth();
        for (i, ancestor) in chain.iter().enumerate() {
            if *ancestor == own || chain.iter().skip(i + 1).any(|later| later == ancestor) {
                return invalid(
                    "svc_chain",
                    "must name distinct ancestors, not the token itself",
                );
            }
        }
        if act.depth() != depth {
            return invalid("act", "nesting does not equal svc_depth");
        }
        let mut actor = Some(act);
        while let Some(current) = actor {
            if AgentId::from_subject(&current.sub).is_err() {
                return invalid("act", "sub must be agent:<agent_id>");
            }
            actor = current.act.as_deref();
        }
        Ok(())
    }
}

/// Claims as read from JSON, before the checks that give their own errors.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClaims {
    iss: String,
    sub: String,
    #[serde(default)]
    iat: NumericDate,
    #[serde(default)]
    nbf: NumericDate,
    #[serde(default)]
    exp: NumericDate,
    jti: Jti,
    svc_trust_score: f64,
    svc_scope: Scope,
    #[serde(default)]
    svc_constraints: Option<Constraints>,
    #[serde(default)]
    svc_policy: Option<Policy>,
    svc_prov: ProvenanceRef,
    svc_human: HumanRef,
    svc_assurance: AssuranceLevel,
    svc_depth: u32,
    #[serde(default)]
    svc_parent: Option<Jth>,
    #[serde(default)]
    svc_chain: Option<Vec<Jth>>,
    #[serde(default)]
    cnf: Option<Confirmation>,
    #[serde(default)]
    act: Option<Actor>,
}

impl RawClaims {
    fn into_claims(self) -> Result<Claims, VerifyError> {
        let exp = match self.exp {
            NumericDate::Absent => return Err(VerifyError::MissingExp),
            NumericDate::Invalid => return Err(VerifyError::InvalidExp),
            NumericDate::Int(exp) => exp,
        };
        let NumericDate::Int(nbf) = self.nbf else {
            return Err(VerifyError::InvalidNbf);
        };
        let NumericDate::Int(iat) = self.iat else {
            return Err(VerifyError::InvalidIat);
        };
        let sub = AgentId::from_subject(&self.sub).map_err(|_| VerifyError::InvalidClaim {
            claim: "sub",
            reason: "must be agent:<agent_id>",
        })?;
        let claims = Claims {
            iss: self.iss,
            sub,
            iat,
            nbf,
            exp,
            jti: self.jti,
            svc_trust_score: self.svc_trust_score,
            svc_scope: self.svc_scope,
            svc_constraints: self.svc_constraints,
            svc_policy: self.svc_policy,
            svc_prov: self.svc_prov,
            svc_human: self.svc_human,
            svc_assurance: self.svc_assurance,
            svc_depth: self.svc_depth,
            svc_parent: self.svc_parent,
            svc_chain: self.svc_chain,
            cnf: self.cnf,
            act: self.act,
        };
        claims.check_consistency()?;
        Ok(claims)
    }
}

impl TryFrom<RawClaims> for Claims {
    type Error = VerifyError;
    fn try_from(raw: RawClaims) -> Result<Claims, VerifyError> {
        raw.into_claims()
    }
}

/// The protected header of a Mandate token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Header {
    pub alg: &'static str,
    pub typ: &'static str,
    pub kid: String,
}

/// The header as read, with every member whose presence is refused.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeader {
    #[serde(default)]
    alg: Option<String>,
    #[serde(default)]
    typ: Option<String>,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default, deserialize_with = "present")]
    jwk: Option<Present>,
    #[serde(default, deserialize_with = "present")]
    jku: Option<Present>,
    #[serde(default, deserialize_with = "present")]
    x5u: Option<Present>,
    #[serde(default, deserialize_with = "present")]
    x5c: Option<Present>,
    #[serde(default, deserialize_with = "present")]
    x5t: Option<Present>,
    #[serde(default, deserialize_with = "present", rename = "x5t#S256")]
    x5t_s256: Option<Present>,
    #[serde(default, deserialize_with = "present")]
    crit: Option<Present>,
}

impl RawHeader {
    fn forbidden_member(&self) -> Option<&'static str> {
        [
            ("jwk", self.jwk),
            ("jku", self.jku),
            ("x5u", self.x5u),
            ("x5c", self.x5c),
            ("x5t", self.x5t),
            ("x5t#S256", self.x5t_s256),
            ("crit", self.crit),
        ]
        .into_iter()
        .find_map(|(name, member)| member.map(|_| name))
    }
}

/// Which segment of a compact token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    Header,
    Payload,
    Signature,
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Segment::Header => "header",
            Segment::Payload => "payload",
            Segment::Signature => "signature",
        })
    }
}

/// Why a token was refused. Every rule has its own variant and code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the token is longer than {MAX_TOKEN_BYTES} bytes")]
    TokenTooLarge,
    #[error("a compact token has exactly three dot-separated segments")]
    MalformedToken,
    #[error("the {0} segment is not strict unpadded base64url")]
    InvalidBase64(Segment),
    #[error("the header is not a JSON object of alg, typ and kid")]
    MalformedHeader,
    #[error("alg must be EdDSA")]
    UnsupportedAlg,
    #[error("the header member `{0}` is not allowed")]
    ForbiddenHeaderParam(&'static str),
    #[error("typ must be vat+jwt")]
    InvalidTyp,
    #[error("the header has no kid")]
    MissingKid,
    #[error("the kid is not in the key set")]
    UnknownKid,
    #[error("the signature must be 64 bytes")]
    MalformedSignature,
    #[error("the signature does not verify")]
    InvalidSignature,
    #[error("the claims are not a well-formed Mandate claim set")]
    MalformedClaims,
    #[error("a claim appears twice")]
    DuplicateClaim,
    #[error("the token has no exp")]
    MissingExp,
    #[error("exp must be an integer number of seconds")]
    InvalidExp,
    #[error("nbf must be an integer number of seconds")]
    InvalidNbf,
    #[error("iat must be an integer number of seconds")]
    InvalidIat,
    #[error("claim `{claim}` {reason}")]
    InvalidClaim {
        claim: &'static str,
        reason: &'static str,
    },
    #[error("the token was issued by another issuer")]
    IssuerMismatch,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
}

impl VerifyError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            VerifyError::TokenTooLarge => "token_too_large",
            VerifyError::MalformedToken => "malformed_token",
            VerifyError::InvalidBase64(_) => "invalid_base64",
            VerifyError::MalformedHeader => "malformed_header",
            VerifyError::UnsupportedAlg => "unsupported_alg",
            VerifyError::ForbiddenHeaderParam(_) => "forbidden_header_param",
            VerifyError::InvalidTyp => "invalid_typ",
            VerifyError::MissingKid => "missing_kid",
            VerifyError::UnknownKid => "unknown_kid",
            VerifyError::MalformedSignature => "malformed_signature",
            VerifyError::InvalidSignature => "invalid_signature",
            VerifyError::MalformedClaims => "malformed_claims",
            VerifyError::DuplicateClaim => "duplicate_claim",
            VerifyError::MissingExp => "missing_exp",
            VerifyError::InvalidExp => "invalid_exp",
            VerifyError::InvalidNbf => "invalid_nbf",
            VerifyError::InvalidIat => "invalid_iat",
            VerifyError::InvalidClaim { .. } => "invalid_claim",
            VerifyError::IssuerMismatch => "issuer_mismatch",
            VerifyError::Expired => "expired",
            VerifyError::NotYetValid => "not_yet_valid",
        }
    }
}

/// Options of [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyOptions {
    /// Clock skew tolerated on `exp` and `nbf`.
    pub leeway_seconds: u64,
    /// When set, `iss` must equal it.
    pub issuer: Option<String>,
}

impl Default for VerifyOptions {
    fn default() -> VerifyOptions {
        VerifyOptions {
            leeway_seconds: DEFAULT_LEEWAY_SECONDS,
            issuer: None,
        }
    }
}

/// A token whose signature and claims passed every check.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedToken {
    pub header: Header,
    pub claims: Claims,
}

struct Segments<'a> {
    header: &'a str,
    payload: &'a str,
    signature: &'a str,
    signing_input: &'a str,
}

fn split(compact: &str) -> Result<Segments<'_>, VerifyError> {
    if compact.len() > MAX_TOKEN_BYTES {
        return Err(VerifyError::TokenTooLarge);
    }
    let mut parts = compact.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(VerifyError::MalformedToken);
    };
    let signing_input = compact
        .get(..header.len() + 1 + payload.len())
        .ok_or(VerifyError::MalformedToken)?;
    Ok(Segments {
        header,
        payload,
        signature,
        signing_input,
    })
}

fn decode(segment: &str, which: Segment) -> Result<Vec<u8>, VerifyError> {
    b64::ENGINE
        .decode(segment)
        .map_err(|_| VerifyError::InvalidBase64(which))
}

/// Reads and checks the header; returns the kid.
fn read_header(bytes: &[u8]) -> Result<String, VerifyError> {
    let header: RawHeader =
        serde_json::from_slice(bytes).map_err(|_| VerifyError::MalformedHeader)?;
    if header.alg.as_deref() != Some(ALG) {
        return Err(VerifyError::UnsupportedAlg);
    }
    if let Some(member) = header.forbidden_member() {
        return Err(VerifyError::ForbiddenHeaderParam(member));
    }
    if header.typ.as_deref() != Some(TYP) {
        return Err(VerifyError::InvalidTyp);
    }
    header.kid.ok_or(VerifyError::MissingKid)
}

fn read_claims(bytes: &[u8]) -> Result<Claims, VerifyError> {
    match serde_json::from_slice::<RawClaims>(bytes) {
        Ok(raw) => raw.into_claims(),
        Err(_) if has_duplicate_member(bytes) => Err(VerifyError::DuplicateClaim),
        Err(_) => Err(VerifyError::MalformedClaims),
    }
}

/// Verifies a compact token against a key set at `now` (unix seconds).
pub fn verify(
    compact: &str,
    keys: &Jwks,
    now: i64,
    options: &VerifyOptions,
) -> Result<VerifiedToken, VerifyError> {
    let verified = verify_ignoring_lifetime(compact, keys, options)?;
    verified.claims.check_time(now, options.leeway_seconds)?;
    Ok(verified)
}

/// Verifies a compact token as [`verify`] does in every rule but the last:
/// its lifetime (`exp`, `nbf`) is not checked. Only for acts that report the
/// past, such as completing a record the token made while it was valid;
/// never to authorize anything new.
pub fn verify_ignoring_lifetime(
    compact: &str,
    keys: &Jwks,
    options: &VerifyOptions,
) -> Result<VerifiedToken, VerifyError> {
    let segments = split(compact)?;
    let header_bytes = decode(segments.header, Segment::Header)?;
    let payload_bytes = decode(segments.payload, Segment::Payload)?;
    let signature_bytes = decode(segments.signature, Segment::Signature)?;
    let kid = read_header(&header_bytes)?;
    let key = keys.find(&kid).ok_or(VerifyError::UnknownKid)?;
    let signature: [u8; 64] = signature_bytes
        .try_into()
        .map_err(|_| VerifyError::MalformedSignature)?;
    key.verify_strict(
        segments.signing_input.as_bytes(),
        &Signature::from_bytes(&signature),
    )
    .map_err(|_| VerifyError::InvalidSignature)?;
    let claims = read_claims(&payload_bytes)?;
    if options
        .issuer
        .as_ref()
        .is_some_and(|issuer| claims.iss != *issuer)
    {
        return Err(VerifyError::IssuerMismatch);
    }
    Ok(VerifiedToken {
        header: Header {
            alg: ALG,
            typ: TYP,
            kid,
        },
        claims,
    })
}

/// Reads a token's header and claims **without checking its signature, its
/// issuer or its lifetime**. For display and debugging only: nothing read this
/// way may be trusted.
pub fn decode_unverified(compact: &str) -> Result<VerifiedToken, VerifyError> {
    let segments = split(compact)?;
    let header_bytes = decode(segments.header, Segment::Header)?;
    let payload_bytes = decode(segments.payload, Segment::Payload)?;
    let kid = read_header(&header_bytes)?;
    let claims = read_claims(&payload_bytes)?;
    Ok(VerifiedToken {
        header: Header {
            alg: ALG,
            typ: TYP,
            kid,
        },
        claims,
    })
}

/// Why a token could not be signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    #[error("the claims could not be serialised")]
    Serialize,
    #[error("the signed token would be longer than {MAX_TOKEN_BYTES} bytes")]
    TooLarge,
}

impl SignError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            SignError::Serialize => "claims_not_serializable",
            SignError::TooLarge => "token_too_large",
        }
    }
}

/// Signs claims into a compact token.
pub fn sign(claims: &Claims, key: &SigningKey) -> Result<String, SignError> {
    let header = Header {
        alg: ALG,
        typ: TYP,
        kid: key.kid().to_owned(),
    };
    let header = serde_json::to_vec(&header).map_err(|_| SignError::Serialize)?;
    let payload = serde_json::to_vec(claims).map_err(|_| SignError::Serialize)?;
    let mut compact = b64::encode(header);
    compact.push('.');
    compact.push_str(&b64::encode(payload));
    let signature = key.sign(compact.as_bytes());
    compact.push('.');
    compact.push_str(&b64::encode(signature));
    if compact.len() > MAX_TOKEN_BYTES {
        return Err(SignError::TooLarge);
    }
    Ok(compact)
}

/// What an agent is to be allowed, as asked for at issue or delegation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRequest {
    pub agent_id: AgentId,
    pub scope: Scope,
    pub constraints: Constraints,
    pub policy: Policy,
    /// Lifetime; `None` takes the default (root) or the parent's end (delegated).
    pub ttl_seconds: Option<u64>,
    /// The key the token is bound to; `None` leaves a root token unbound and
    /// binds a delegated one to its parent's key, if the parent has one.
    pub holder: Option<Jkt>,
}

/// Why a token could not be issued or delegated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IssueError {
    #[error("ttl_seconds must be between {MIN_TTL_SECONDS} and {MAX_TTL_SECONDS}")]
    TtlOutOfRange,
    #[error("now must be a unix time in seconds after 1970")]
    InvalidNow,
    #[error("the parent token has expired")]
    ParentExpired,
    #[error("the parent token does not hold the `delegate` action")]
    DelegateNotHeld,
    #[error("a chain may be at most {MAX_DELEGATION_DEPTH} delegations deep")]
    DepthExceeded,
    #[error("a token may delegate to at most {MAX_CHILDREN_PER_TOKEN} tokens")]
    TooManyChildren,
    #[error(transparent)]
    Widening(#[from] Widening),
    #[error(transparent)]
    Scope(#[from] ScopeError),
    #[error("the id could not be made: {0}")]
    Id(#[from] IdError),
}

impl IssueError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            IssueError::TtlOutOfRange => "ttl_out_of_range",
            IssueError::InvalidNow => "invalid_now",
            IssueError::ParentExpired => "parent_expired",
            IssueError::DelegateNotHeld => "delegate_not_held",
            IssueError::DepthExceeded => "delegation_too_deep",
            IssueError::TooManyChildren => "too_many_children",
            IssueError::Widening(w) => w.code(),
            IssueError::Scope(e) => e.code(),
            IssueError::Id(e) => e.code(),
        }
    }
}

fn expiry(now: i64, ttl_seconds: u64) -> Result<i64, IssueError> {
    if !(MIN_TTL_SECONDS..=MAX_TTL_SECONDS).contains(&ttl_seconds) {
        return Err(IssueError::TtlOutOfRange);
    }
    // Bounded above by 30 days, so it fits.
    let ttl = i64::try_from(ttl_seconds).map_err(|_| IssueError::TtlOutOfRange)?;
    now.checked_add(ttl).ok_or(IssueError::InvalidNow)
}

/// Who issues a root token, for whom, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootIssue {
    /// The `iss` of the deployment.
    pub issuer: String,
    /// The verified human.
    pub human: HumanRef,
    /// How the human was verified.
    pub level: AssuranceLevel,
    /// Unix seconds.
    pub now: i64,
    /// The new token's id, `vat_root_<ulid>`.
    pub jti: Ulid,
    /// The new workflow's id, `prov_<ulid>`.
    pub provenance: Ulid,
}

/// Builds the claims of a root token.
pub fn issue_root(request: TokenRequest, issue: RootIssue) -> Result<Claims, IssueError> {
    if issue.now < 0 {
        return Err(IssueError::InvalidNow);
    }
    let exp = expiry(
        issue.now,
        request.ttl_seconds.unwrap_or(DEFAULT_TTL_SECONDS),
    )?;
    Ok(Claims {
        iss: issue.issuer,
        sub: request.agent_id,
        iat: issue.now,
        nbf: issue.now,
        exp,
        jti: Jti::root(issue.jti),
        svc_trust_score: issue.level.trust(),
        svc_scope: request.scope,
        svc_constraints: Some(request.constraints).filter(|c| !c.is_empty()),
        svc_policy: Some(request.policy).filter(|p| !p.is_empty()),
        svc_prov: ProvenanceRef::new(issue.provenance),
        svc_human: issue.human,
        svc_assurance: issue.level,
        svc_depth: 0,
        svc_parent: None,
        svc_chain: None,
        cnf: request.holder.map(|jkt| Confirmation { jkt }),
        act: None,
    })
}

/// What a delegation grants: the request, with every limit and framework it
/// leaves out taken from the parent, refused if it is wider than the parent
/// anyway (a resource, an action, a raised limit or a longer life).
pub fn delegated_grant(requested: Grant, parent: &Grant) -> Result<Grant, IssueError> {
    let constraints = Constraints {
        max_spend_usd: requested
            .constraints
            .max_spend_usd
            .or(parent.constraints.max_spend_usd),
        max_actions: requested
            .constraints
            .max_actions
            .or(parent.constraints.max_actions),
    };
    let mut frameworks = parent.policy.frameworks().to_vec();
    for framework in requested.policy.frameworks() {
        if !frameworks.contains(framework) {
            frameworks.push(framework.clone());
        }
    }
    let grant = Grant {
        scope: requested.scope,
        constraints,
        policy: Policy::new(frameworks)?,
        expires_at: requested.expires_at,
    };
    check_narrowing(&grant, parent)?;
    Ok(grant)
}

/// Refuses a delegation from a token that already has `children` children
/// (a server-side rule: only the issuer counts them).
pub fn check_fan_out(children: u64) -> Result<(), IssueError> {
    if children >= MAX_CHILDREN_PER_TOKEN {
        return Err(IssueError::TooManyChildren);
    }
    Ok(())
}

/// Builds the claims of a token delegated from `parent`: same issuer, human,
/// assurance, trust and workflow; depth + 1; the parent's jti hash appended
/// to the chain; the parent's agent as the nearest actor; the grant of
/// [`delegated_grant`]; bound to the requested holder key, else to the
/// parent's. Refused unless the parent is unexpired, holds `delegate`, and
/// the request is no wider than the parent.
pub fn delegate(
    parent: &Claims,
    request: TokenRequest,
    now: i64,
    jti: Ulid,
) -> Result<Claims, IssueError> {
    if now >= parent.exp {
        return Err(IssueError::ParentExpired);
    }
    if !parent.svc_scope.holds(DELEGATE_ACTION) {
        return Err(IssueError::DelegateNotHeld);
    }
    if parent.svc_depth >= MAX_DELEGATION_DEPTH {
        return Err(IssueError::DepthExceeded);
    }
    let exp = match request.ttl_seconds {
        None => parent.exp,
        Some(ttl) => expiry(now, ttl)?,
    };
    let child_grant = delegated_grant(
        Grant {
            scope: request.scope,
            constraints: request.constraints,
            policy: request.policy,
            expires_at: exp,
        },
        &parent.grant(),
    )?;
    let parent_jth = parent.jth();
    let mut chain = parent.ancestors().to_vec();
    chain.push(parent_jth.clone());
    Ok(Claims {
        iss: parent.iss.clone(),
        sub: request.agent_id,
        iat: now,
        nbf: now,
        exp,
        jti: Jti::delegated(jti),
        svc_trust_score: parent.svc_trust_score,
        svc_scope: child_grant.scope,
        svc_constraints: Some(child_grant.constraints).filter(|c| !c.is_empty()),
        svc_policy: Some(child_grant.policy).filter(|p| !p.is_empty()),
        svc_prov: parent.svc_prov.clone(),
        svc_human: parent.svc_human.clone(),
        svc_assurance: parent.svc_assurance,
        svc_depth: parent.svc_depth + 1,
        svc_parent: Some(parent_jth),
        svc_chain: Some(chain),
        cnf: request
            .holder
            .map(|jkt| Confirmation { jkt })
            .or_else(|| parent.cnf.clone()),
        act: Some(Actor {
            sub: parent.sub.subject(),
            act: parent.act.clone().map(Box::new),
        }),
    })
}
