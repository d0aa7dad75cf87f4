//! The compact JWS form of a token: its header, signing, and the one
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
//!
//! Steps 1 to 4 are shared, crate-internally, with the other compact JWS
//! Mandate signs: the status list tokens of [`crate::status_list`]. Each kind
//! names its own `typ` and size limit ([`Kind`]); a status list token is
//! never accepted as a token, nor a token as a status list.
//!
//! It owns the bytes of a token, not the meaning of its claims (see
//! `claims`) nor how they are chosen (see `issue`).

use std::fmt;

use base64::Engine as _;
use ed25519_dalek::Signature;
use serde::{Deserialize, Serialize};

use super::claims::{Claims, read_claims};
use crate::b64;
use crate::json::{Present, present};
use crate::keys::{Jwks, SigningKey};
use crate::limits::{DEFAULT_LEEWAY_SECONDS, MAX_TOKEN_BYTES};

/// The JWS `alg` of every Mandate token.
pub const ALG: &str = "EdDSA";
/// The JWS `typ` of every Mandate token.
pub const TYP: &str = "vat+jwt";

/// Which kind of compact JWS is expected: the `typ` its header must carry
/// and the most bytes it may take. Everything else about the compact form
/// (alg, refused header members, kid, signature) is the same for every kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Kind {
    pub(crate) typ: &'static str,
    pub(crate) max_bytes: usize,
}

/// A Mandate token (VAT).
const TOKEN: Kind = Kind {
    typ: TYP,
    max_bytes: MAX_TOKEN_BYTES,
};

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

fn split(compact: &str, kind: Kind) -> Result<Segments<'_>, VerifyError> {
    if compact.len() > kind.max_bytes {
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

/// Reads and checks the header of a JWS of `kind`; returns the kid.
fn read_header(bytes: &[u8], kind: Kind) -> Result<String, VerifyError> {
    let header: RawHeader =
        serde_json::from_slice(bytes).map_err(|_| VerifyError::MalformedHeader)?;
    if header.alg.as_deref() != Some(ALG) {
        return Err(VerifyError::UnsupportedAlg);
    }
    if let Some(member) = header.forbidden_member() {
        return Err(VerifyError::ForbiddenHeaderParam(member));
    }
    if header.typ.as_deref() != Some(kind.typ) {
        return Err(VerifyError::InvalidTyp);
    }
    header.kid.ok_or(VerifyError::MissingKid)
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
    let signed = verify_signature(compact, keys, TOKEN)?;
    let claims = read_claims(&signed.payload)?;
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
            kid: signed.kid,
        },
        claims,
    })
}

/// A compact JWS whose size, form, header and signature passed (steps 1 to
/// 4 of [`verify`]); its payload is still to be read.
pub(crate) struct Signed {
    pub(crate) kid: String,
    pub(crate) payload: Vec<u8>,
}

/// Steps 1 to 4 of [`verify`] for a compact JWS of `kind`: size, three
/// strict base64url segments, the header (alg exactly EdDSA, no member that
/// chooses a key, `typ` of the kind, a kid in `keys`) and a signature that
/// passes `verify_strict` under that key.
pub(crate) fn verify_signature(
    compact: &str,
    keys: &Jwks,
    kind: Kind,
) -> Result<Signed, VerifyError> {
    let segments = split(compact, kind)?;
    let header_bytes = decode(segments.header, Segment::Header)?;
    let payload = decode(segments.payload, Segment::Payload)?;
    let signature_bytes = decode(segments.signature, Segment::Signature)?;
    let kid = read_header(&header_bytes, kind)?;
    let key = keys.find(&kid).ok_or(VerifyError::UnknownKid)?;
    let signature: [u8; 64] = signature_bytes
        .try_into()
        .map_err(|_| VerifyError::MalformedSignature)?;
    key.verify_strict(
        segments.signing_input.as_bytes(),
        &Signature::from_bytes(&signature),
    )
    .map_err(|_| VerifyError::InvalidSignature)?;
    Ok(Signed { kid, payload })
}

/// Reads a token's header and claims **without checking its signature, its
/// issuer or its lifetime**. For display and debugging only: nothing read this
/// way may be trusted.
pub fn decode_unverified(compact: &str) -> Result<VerifiedToken, VerifyError> {
    let segments = split(compact, TOKEN)?;
    let header_bytes = decode(segments.header, Segment::Header)?;
    let payload_bytes = decode(segments.payload, Segment::Payload)?;
    let kid = read_header(&header_bytes, TOKEN)?;
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
    let payload = serde_json::to_vec(claims).map_err(|_| SignError::Serialize)?;
    sign_payload(&payload, key, TOKEN)
}

/// Signs a payload into a compact JWS of `kind` under the header
/// `{"alg":"EdDSA","typ":<kind>,"kid":<the key's kid>}`; refused when the
/// result would be longer than the kind allows.
pub(crate) fn sign_payload(
    payload: &[u8],
    key: &SigningKey,
    kind: Kind,
) -> Result<String, SignError> {
    let header = Header {
        alg: ALG,
        typ: kind.typ,
        kid: key.kid().to_owned(),
    };
    let header = serde_json::to_vec(&header).map_err(|_| SignError::Serialize)?;
    let mut compact = b64::encode(header);
    compact.push('.');
    compact.push_str(&b64::encode(payload));
    let signature = key.sign(compact.as_bytes());
    compact.push('.');
    compact.push_str(&b64::encode(signature));
    if compact.len() > kind.max_bytes {
        return Err(SignError::TooLarge);
    }
    Ok(compact)
}
