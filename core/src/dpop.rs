//! Proof of possession for bound tokens: RFC 9449 (DPoP) with EdDSA.
//!
//! A token bound to a holder's key carries `cnf.jkt`, the RFC 7638
//! thumbprint of that key. Every call made with it carries a DPoP proof: a
//! JWT the holder signs for that one request, with the header
//! `{"typ":"dpop+jwt","alg":"EdDSA","jwk":<the holder's public key>}` and the
//! claims `jti`, `htm`, `htu`, `iat` and `ath`. A stolen bound token is
//! useless without the key; a captured proof is good for one method on one
//! URL, for the token it names, for a minute, once.
//!
//! [`verify_proof`] applies the checks of RFC 9449 §4.3 in this order, each
//! with its own [`DpopError`]:
//!
//! 1. size (over [`MAX_PROOF_BYTES`] is refused before decoding); three
//!    segments of strict base64url;
//! 2. header: exactly `typ` `dpop+jwt`, `alg` and `jwk`, no member twice,
//!    nothing else; `alg` is `EdDSA` (RFC 8037) or `Ed25519`, its fully
//!    specified name (RFC 9864 §2.2, which deprecates `EdDSA`; stock clients
//!    such as oauth4webapi send it) — the same signature either way;
//! 3. `jwk`: a public Ed25519 key, no private member, not a weak point;
//! 4. the signature, `verify_strict` under that key;
//! 5. claims: exactly `jti` (16–128 characters), `htm`, `htu`, `iat` (an
//!    integer) and `ath`, none twice;
//! 6. the key is the one the token is bound to (`jkt`), and `ath` is the
//!    hash of the token presented with the proof;
//! 7. `htm` is the request's method and `htu` its URI, both normalised
//!    (RFC 3986 §6.2.2–6.2.3), ignoring query and fragment;
//! 8. `iat` within [`DPOP_IAT_WINDOW_SECONDS`] of `now`, either way.
//!
//! A proof used twice is a replay; spotting one needs memory, which core does
//! not keep: callers remember [`VerifiedProof::replay_key`] until
//! [`VerifiedProof::remember_until`] and report a repeat as
//! [`DpopError::Replayed`].
//!
//! Mandate sends no `DPoP-Nonce`, so a proof carrying a `nonce` was made for
//! another server and is refused with the other unknown claims.

use base64::Engine as _;
use ed25519_dalek::Signature;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::b64;
use crate::ids::Jkt;
use crate::json::{NumericDate, has_duplicate_member};
use crate::keys::{HolderKey, JwksError, PublicJwk, RawJwk, SigningKey};
use crate::limits::{
    DPOP_IAT_WINDOW_SECONDS, MAX_PROOF_BYTES, MAX_PROOF_JTI_LEN, MIN_PROOF_JTI_LEN,
};
use crate::token::{ALG, Claims};

/// The `alg`s a proof may name: both are an Ed25519 signature by the
/// header's key (module doc, step 2). Proofs made here name [`ALG`].
pub const ACCEPTED_ALGS: [&str; 2] = [ALG, "Ed25519"];

/// The JWS `typ` of a DPoP proof.
pub const DPOP_TYP: &str = "dpop+jwt";

/// Why a proof was refused, or why a call needs one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DpopError {
    #[error(
        "the token is bound to a key: send it as `Authorization: DPoP <token>` with a `DPoP` proof header"
    )]
    Required,
    #[error(
        "the token is not bound to a key: send it as `Authorization: Bearer <token>`, without a proof"
    )]
    NotBound,
    #[error("the proof is longer than {MAX_PROOF_BYTES} bytes")]
    TooLarge,
    #[error("the proof is not a compact JWT of three base64url segments holding JSON")]
    Malformed,
    #[error("the proof's typ must be dpop+jwt")]
    InvalidTyp,
    #[error("the proof's alg must be EdDSA or Ed25519")]
    UnsupportedAlg,
    #[error("the proof's header holds exactly typ, alg and jwk, each once")]
    MalformedHeader,
    #[error("the proof's jwk is not usable: {0}")]
    InvalidKey(JwksError),
    #[error("the proof's signature does not verify under its jwk")]
    InvalidSignature,
    #[error("the proof's claims are exactly jti, htm, htu, iat (an integer) and ath, each once")]
    MalformedClaims,
    #[error(
        "the proof's jti must be {MIN_PROOF_JTI_LEN} to {MAX_PROOF_JTI_LEN} printable ASCII characters"
    )]
    InvalidJti,
    #[error("the proof has no ath: a proof sent with a token carries the token's hash")]
    MissingAth,
    #[error("the proof is signed by another key than the one the token is bound to")]
    KeyMismatch,
    #[error("the proof's ath is not the hash of the token sent with it")]
    AthMismatch,
    #[error("the proof's htm is not the request's method")]
    MethodMismatch,
    #[error("the proof's htu is not an absolute http(s) URL")]
    InvalidUrl,
    #[error("the proof's htu is not the request's URL")]
    UrlMismatch,
    #[error("the proof's iat is more than {DPOP_IAT_WINDOW_SECONDS} seconds old")]
    Stale,
    #[error("the proof's iat is more than {DPOP_IAT_WINDOW_SECONDS} seconds in the future")]
    FromFuture,
    #[error("the proof was used before")]
    Replayed,
}

impl DpopError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            DpopError::Required => "dpop_required",
            DpopError::NotBound => "dpop_not_bound",
            DpopError::TooLarge => "dpop_too_large",
            DpopError::Malformed => "dpop_malformed",
            DpopError::InvalidTyp => "dpop_invalid_typ",
            DpopError::UnsupportedAlg => "dpop_unsupported_alg",
            DpopError::MalformedHeader => "dpop_malformed_header",
            DpopError::InvalidKey(_) => "dpop_invalid_key",
            DpopError::InvalidSignature => "dpop_invalid_signature",
            DpopError::MalformedClaims => "dpop_malformed_claims",
            DpopError::InvalidJti => "dpop_invalid_jti",
            DpopError::MissingAth => "dpop_missing_ath",
            DpopError::KeyMismatch => "dpop_key_mismatch",
            DpopError::AthMismatch => "dpop_ath_mismatch",
            DpopError::MethodMismatch => "dpop_method_mismatch",
            DpopError::InvalidUrl => "dpop_invalid_url",
            DpopError::UrlMismatch => "dpop_url_mismatch",
            DpopError::Stale => "dpop_stale",
            DpopError::FromFuture => "dpop_from_future",
            DpopError::Replayed => "dpop_replayed",
        }
    }
}

/// The request a proof must have been made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProofRequest<'a> {
    /// The HTTP method, as sent (`POST`).
    pub method: &'a str,
    /// The request's absolute URL; its query and fragment are ignored.
    pub url: &'a str,
    /// Unix seconds.
    pub now: i64,
}

/// A proof that passed every check but the replay check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedProof {
    pub jti: String,
    pub iat: i64,
    pub jkt: Jkt,
}

impl VerifiedProof {
    /// What a verifier remembers to refuse the proof a second time:
    /// SHA-256 of the key's thumbprint and the proof's `jti`, so one holder
    /// cannot use up another's ids and a long `jti` costs 32 bytes.
    pub fn replay_key(&self) -> [u8; 32] {
        Sha256::new()
            .chain_update(self.jkt.as_str())
            .chain_update([0])
            .chain_update(&self.jti)
            .finalize()
            .into()
    }

    /// The last second at which the proof is still accepted; its replay key
    /// is needed until then.
    pub fn remember_until(&self) -> i64 {
        self.iat.saturating_add(DPOP_IAT_WINDOW_SECONDS)
    }
}

/// `ath`: base64url of SHA-256 of the access token's ASCII.
pub fn ath(access_token: &str) -> String {
    b64::encode(Sha256::digest(access_token.as_bytes()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProofHeader {
    #[serde(default)]
    typ: Option<String>,
    #[serde(default)]
    alg: Option<String>,
    #[serde(default)]
    jwk: Option<RawJwk>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProofClaims {
    jti: String,
    htm: String,
    htu: String,
    #[serde(default)]
    iat: NumericDate,
    #[serde(default)]
    ath: Option<String>,
}

#[derive(Serialize)]
struct ProofHeaderOut {
    typ: &'static str,
    alg: &'static str,
    jwk: PublicJwk,
}

#[derive(Serialize)]
struct ProofClaimsOut<'a> {
    jti: &'a str,
    htm: &'a str,
    htu: &'a str,
    iat: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    ath: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cph: Option<String>,
}

fn decode(segment: &str) -> Result<Vec<u8>, DpopError> {
    b64::ENGINE
        .decode(segment)
        .map_err(|_| DpopError::Malformed)
}

fn read_header(bytes: &[u8], typ: &str) -> Result<HolderKey, DpopError> {
    let header: RawProofHeader = match serde_json::from_slice(bytes) {
        Ok(header) => header,
        Err(_) if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_err() => {
            return Err(DpopError::Malformed);
        }
        Err(_) => return Err(DpopError::MalformedHeader),
    };
    if header.typ.as_deref() != Some(typ) {
        return Err(DpopError::InvalidTyp);
    }
    if !header
        .alg
        .as_deref()
        .is_some_and(|alg| ACCEPTED_ALGS.contains(&alg))
    {
        return Err(DpopError::UnsupportedAlg);
    }
    let jwk = header.jwk.ok_or(DpopError::MalformedHeader)?;
    HolderKey::from_raw(&jwk).map_err(DpopError::InvalidKey)
}

fn read_claims(bytes: &[u8]) -> Result<(RawProofClaims, i64), DpopError> {
    let claims: RawProofClaims = match serde_json::from_slice(bytes) {
        Ok(claims) => claims,
        Err(_) if has_duplicate_member(bytes) => return Err(DpopError::MalformedClaims),
        Err(_) if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_err() => {
            return Err(DpopError::Malformed);
        }
        Err(_) => return Err(DpopError::MalformedClaims),
    };
    let NumericDate::Int(iat) = claims.iat else {
        return Err(DpopError::MalformedClaims);
    };
    if !jti_ok(&claims.jti) {
        return Err(DpopError::InvalidJti);
    }
    Ok((claims, iat))
}

/// Rules 1–4 for a compact JWS whose header must be exactly `typ`,
/// `alg` `EdDSA` and `jwk`: its key and its payload's bytes, the
/// signature verified.
pub(crate) fn verify_signed(proof: &str, typ: &str) -> Result<(HolderKey, Vec<u8>), DpopError> {
    if proof.len() > MAX_PROOF_BYTES {
        return Err(DpopError::TooLarge);
    }
    let mut parts = proof.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(DpopError::Malformed);
    };
    let header_bytes = decode(header)?;
    let payload_bytes = decode(payload)?;
    let signature_bytes = decode(signature)?;
    let key = read_header(&header_bytes, typ)?;
    let signature: [u8; 64] = signature_bytes
        .try_into()
        .map_err(|_| DpopError::InvalidSignature)?;
    let signing_input = proof
        .get(..header.len() + 1 + payload.len())
        .ok_or(DpopError::Malformed)?;
    key.verifying_key()
        .verify_strict(signing_input.as_bytes(), &Signature::from_bytes(&signature))
        .map_err(|_| DpopError::InvalidSignature)?;
    Ok((key, payload_bytes))
}

/// A DPoP proof's signature checked and its claims read: the key that
/// signed it, its claims and its `iat` (rules 1–5 of the module docs).
fn signed(proof: &str) -> Result<(HolderKey, RawProofClaims, i64), DpopError> {
    let (key, payload_bytes) = verify_signed(proof, DPOP_TYP)?;
    let (claims, iat) = read_claims(&payload_bytes)?;
    Ok((key, claims, iat))
}

/// Rules 7 and 8 of the module docs: `request_ok` accepts the proof's
/// `htm` and its `htu` normalised (an `htu` that does not normalise is
/// refused before), and `iat` is about `now`.
fn made_for(
    key: &HolderKey,
    claims: RawProofClaims,
    iat: i64,
    now: i64,
    request_ok: impl FnOnce(&str, &str) -> Result<(), DpopError>,
) -> Result<VerifiedProof, DpopError> {
    let htu = normalize_url(&claims.htu).ok_or(DpopError::InvalidUrl)?;
    request_ok(&claims.htm, &htu)?;
    check_iat(iat, now)?;
    Ok(VerifiedProof {
        jti: claims.jti,
        iat,
        jkt: key.jkt().clone(),
    })
}

/// The request check of [`verify_proof`] and
/// [`verify_token_request_proof`]: `htm` is `request`'s method and `htu`
/// its URL.
fn same_request<'a>(
    request: &'a ProofRequest<'_>,
) -> impl FnOnce(&str, &str) -> Result<(), DpopError> + 'a {
    move |htm, htu| {
        if htm != request.method {
            return Err(DpopError::MethodMismatch);
        }
        if Some(htu) != normalize_url(request.url).as_deref() {
            return Err(DpopError::UrlMismatch);
        }
        Ok(())
    }
}

/// `iat` within [`DPOP_IAT_WINDOW_SECONDS`] of `now`, either way.
pub(crate) fn check_iat(iat: i64, now: i64) -> Result<(), DpopError> {
    if iat < now.saturating_sub(DPOP_IAT_WINDOW_SECONDS) {
        return Err(DpopError::Stale);
    }
    if iat > now.saturating_add(DPOP_IAT_WINDOW_SECONDS) {
        return Err(DpopError::FromFuture);
    }
    Ok(())
}

/// Whether `jti` is a usable proof `jti`: 16–128 printable ASCII
/// characters.
pub(crate) fn jti_ok(jti: &str) -> bool {
    (MIN_PROOF_JTI_LEN..=MAX_PROOF_JTI_LEN).contains(&jti.len())
        && jti.bytes().all(|b| b.is_ascii_graphic())
}

/// Checks a proof sent with `access_token`, a token bound to `jkt`, against
/// the request it came with. Every rule but replay (see the module docs).
pub fn verify_proof(
    proof: &str,
    access_token: &str,
    jkt: &Jkt,
    request: &ProofRequest<'_>,
) -> Result<VerifiedProof, DpopError> {
    verify_proof_where(proof, access_token, jkt, request.now, same_request(request))
}

/// [`verify_proof`] with the request check left to `request_ok`, given
/// the proof's `htm` and its `htu` normalised (an `htu` that does not
/// normalise is refused before).
pub(crate) fn verify_proof_where(
    proof: &str,
    access_token: &str,
    jkt: &Jkt,
    now: i64,
    request_ok: impl FnOnce(&str, &str) -> Result<(), DpopError>,
) -> Result<VerifiedProof, DpopError> {
    let (key, claims, iat) = signed(proof)?;
    if key.jkt() != jkt {
        return Err(DpopError::KeyMismatch);
    }
    let proof_ath = claims.ath.as_deref().ok_or(DpopError::MissingAth)?;
    if proof_ath != ath(access_token) {
        return Err(DpopError::AthMismatch);
    }
    made_for(&key, claims, iat, now, request_ok)
}

/// Checks a proof sent to a token endpoint (RFC 9449 §5): no access token
/// goes with it, so it names none — a proof carrying `ath` was made for a
/// resource and is refused as [`DpopError::MalformedClaims`] — and any key
/// may sign it; the caller compares the returned thumbprint with the one
/// the grant is bound to, if any. Every other rule as [`verify_proof`],
/// replay excepted.
pub fn verify_token_request_proof(
    proof: &str,
    request: &ProofRequest<'_>,
) -> Result<VerifiedProof, DpopError> {
    let (key, claims, iat) = signed(proof)?;
    if claims.ath.is_some() {
        return Err(DpopError::MalformedClaims);
    }
    made_for(&key, claims, iat, request.now, same_request(request))
}

/// The binding rule, the same for the server and offline verifiers: a token
/// bound to a key (`cnf.jkt`) is used only with a valid proof by that key,
/// and a token bound to none is used without one. Returns the checked proof,
/// if any, for the caller's replay check.
pub fn check_binding(
    claims: &Claims,
    access_token: &str,
    proof: Option<&str>,
    request: &ProofRequest<'_>,
) -> Result<Option<VerifiedProof>, DpopError> {
    match (&claims.cnf, proof) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(DpopError::NotBound),
        (Some(_), None) => Err(DpopError::Required),
        (Some(cnf), Some(proof)) => verify_proof(proof, access_token, &cnf.jkt, request).map(Some),
    }
}

/// What a holder signs a proof for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewProof<'a> {
    /// The HTTP method.
    pub method: &'a str,
    /// The request's absolute URL; `htu` is it without query and fragment.
    pub url: &'a str,
    /// The token sent with the proof; none for a token request (RFC 9449
    /// §5), whose proof has no `ath`.
    pub access_token: Option<&'a str>,
    /// Unix seconds.
    pub now: i64,
    /// Random bytes of the proof's `jti` (128 bits, base64url).
    pub jti_random: [u8; 16],
}

/// Signs a proof with the holder's key.
pub fn sign_proof(key: &SigningKey, proof: &NewProof<'_>) -> Result<String, DpopError> {
    sign_with(key, DPOP_TYP, proof, None)
}

/// Signs a proof of `typ` for `proof`'s request, with `cph` when given
/// (a relay proof's): one signer for DPoP and relay proofs.
pub(crate) fn sign_with(
    key: &SigningKey,
    typ: &'static str,
    proof: &NewProof<'_>,
    cph: Option<String>,
) -> Result<String, DpopError> {
    let htu = normalize_url(proof.url).ok_or(DpopError::InvalidUrl)?;
    let header = ProofHeaderOut {
        typ,
        alg: ALG,
        jwk: key.holder_key().public_jwk(),
    };
    let jti = b64::encode(proof.jti_random);
    let ath = proof.access_token.map(ath);
    let claims = ProofClaimsOut {
        jti: &jti,
        htm: proof.method,
        htu: &htu,
        iat: proof.now,
        ath: ath.as_deref(),
        cph,
    };
    let header = serde_json::to_vec(&header).map_err(|_| DpopError::Malformed)?;
    let claims = serde_json::to_vec(&claims).map_err(|_| DpopError::Malformed)?;
    let mut compact = b64::encode(header);
    compact.push('.');
    compact.push_str(&b64::encode(claims));
    let signature = key.sign(compact.as_bytes());
    compact.push('.');
    compact.push_str(&b64::encode(signature));
    Ok(compact)
}

/// The characters of RFC 3986 `unreserved`.
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-encoding normalised: triplets in upper case, unreserved
/// characters decoded. `None` for a `%` not followed by two hex digits, or
/// a character that is not printable ASCII.
fn normalize_percent(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if !b.is_ascii_graphic() {
            return None;
        }
        if b == b'%' {
            let high = hex_value(*bytes.get(i + 1)?)?;
            let low = hex_value(*bytes.get(i + 2)?)?;
            let decoded = high * 16 + low;
            if is_unreserved(decoded) {
                out.push(char::from(decoded));
            } else {
                out.push('%');
                out.push(char::from(
                    b"0123456789ABCDEF".get(usize::from(high)).copied()?,
                ));
                out.push(char::from(
                    b"0123456789ABCDEF".get(usize::from(low)).copied()?,
                ));
            }
            i += 3;
        } else {
            out.push(char::from(b));
            i += 1;
        }
    }
    Some(out)
}

/// RFC 3986 §5.2.4 for an absolute path.
fn remove_dot_segments(path: &str) -> String {
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    let mut out: Vec<&str> = Vec::with_capacity(segments.len());
    for (i, segment) in segments.iter().enumerate() {
        match *segment {
            "." => {}
            ".." => {
                out.pop();
            }
            other => {
                out.push(other);
                continue;
            }
        }
        if i == last {
            out.push("");
        }
    }
    format!("/{}", out.join("/"))
}

/// An `http` or `https` URL normalised for comparison (RFC 3986 §6.2.2 and
/// §6.2.3), without query and fragment: scheme and host in lower case, the
/// default port dropped, an empty path as `/`, percent-encoding normalised
/// and dot segments removed. `None` for anything else, including a URL with
/// user information.
pub fn normalize_url(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => "80",
        "https" => "443",
        _ => return None,
    };
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, ""),
    };
    if authority.is_empty() || authority.contains('@') || !authority.is_ascii() {
        return None;
    }
    let (host, port) = match authority.rfind(':') {
        Some(colon) if !authority.ends_with(']') => {
            let (host, port) = authority.split_at(colon);
            (host, port.get(1..).unwrap_or_default())
        }
        _ => (authority, ""),
    };
    if host.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let port = port.trim_start_matches('0');
    let mut normalized = format!("{scheme}://{}", host.to_ascii_lowercase());
    if !port.is_empty() && port != default_port {
        normalized.push(':');
        normalized.push_str(port);
    }
    let path = if path.is_empty() { "/" } else { path };
    normalized.push_str(&remove_dot_segments(&normalize_percent(path)?));
    Some(normalized)
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "https://mandate.example/v1/vat/delegate";

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_secret(&[seed; 32])
    }

    fn proof(key: &SigningKey, now: i64) -> String {
        sign_proof(
            key,
            &NewProof {
                method: "POST",
                url: URL,
                access_token: Some("token"),
                now,
                jti_random: [7; 16],
            },
        )
        .unwrap()
    }

    fn check(
        proof: &str,
        jkt: &Jkt,
        method: &str,
        url: &str,
        now: i64,
    ) -> Result<VerifiedProof, DpopError> {
        verify_proof(proof, "token", jkt, &ProofRequest { method, url, now })
    }

    #[test]
    fn a_signed_proof_verifies_for_its_request_only() {
        let holder = key(1);
        let jkt = holder.holder_key().jkt().clone();
        let p = proof(&holder, 1_000);
        let verified = check(&p, &jkt, "POST", URL, 1_000).unwrap();
        assert_eq!((verified.iat, verified.jkt.clone()), (1_000, jkt.clone()));
        assert_eq!(verified.remember_until(), 1_060);
        assert_eq!(
            check(&p, &jkt, "GET", URL, 1_000),
            Err(DpopError::MethodMismatch)
        );
        assert_eq!(
            check(
                &p,
                &jkt,
                "POST",
                "https://mandate.example/v1/vat/revoke",
                1_000
            ),
            Err(DpopError::UrlMismatch)
        );
        assert_eq!(check(&p, &jkt, "POST", URL, 1_061), Err(DpopError::Stale));
        assert_eq!(
            check(&p, &jkt, "POST", URL, 939),
            Err(DpopError::FromFuture)
        );
        assert!(check(&p, &jkt, "POST", URL, 1_060).is_ok());
        let other = key(2).holder_key().jkt().clone();
        assert_eq!(
            check(&p, &other, "POST", URL, 1_000),
            Err(DpopError::KeyMismatch)
        );
        assert_eq!(
            verify_proof(
                &p,
                "another token",
                &jkt,
                &ProofRequest {
                    method: "POST",
                    url: URL,
                    now: 1_000
                }
            ),
            Err(DpopError::AthMismatch)
        );
    }

    #[test]
    fn the_query_and_equivalent_spellings_do_not_matter() {
        let holder = key(1);
        let jkt = holder.holder_key().jkt().clone();
        let p = proof(&holder, 1_000);
        for url in [
            "HTTPS://Mandate.Example:443/v1/vat/delegate?x=1#f",
            "https://mandate.example/v1/vat/./delegate",
            "https://mandate.example/v1/x/../vat/%64elegate",
        ] {
            assert!(check(&p, &jkt, "POST", url, 1_000).is_ok(), "{url}");
        }
    }

    #[test]
    fn normalization() {
        for (url, expected) in [
            ("http://a.example", Some("http://a.example/")),
            ("http://A.example:80/", Some("http://a.example/")),
            ("http://a.example:8080/x", Some("http://a.example:8080/x")),
            ("https://a.example:0443/x", Some("https://a.example/x")),
            (
                "https://a.example/a/b/../c/./d",
                Some("https://a.example/a/c/d"),
            ),
            ("https://a.example/a/..", Some("https://a.example/")),
            (
                "https://a.example/%7e%2f%41",
                Some("https://a.example/~%2FA"),
            ),
            ("https://[::1]:8443/x", Some("https://[::1]:8443/x")),
            ("https://[::1]/x", Some("https://[::1]/x")),
            ("ftp://a.example/", None),
            ("https://user@a.example/", None),
            ("https:///x", None),
            ("https://a.example:x/", None),
            ("https://a.example/%zz", None),
            ("https://a.example/a b", None),
            ("/v1/vat/delegate", None),
        ] {
            assert_eq!(normalize_url(url).as_deref(), expected, "{url}");
        }
    }

    #[test]
    fn binding_rule() {
        let holder = key(1);
        let jkt = holder.holder_key().jkt().clone();
        let request = ProofRequest {
            method: "POST",
            url: URL,
            now: 1_000,
        };
        let mut claims = crate::token::issue_root(
            crate::token::TokenRequest {
                agent_id: crate::AgentId::parse("bot").unwrap(),
                scope: crate::Scope::parse(&["crm:*"], &["read"]).unwrap(),
                constraints: crate::Constraints::default(),
                policy: crate::Policy::default(),
                ttl_seconds: None,
                holder: None,
            },
            crate::token::RootIssue {
                issuer: "mandate".into(),
                human: crate::HumanRef::from_digest(&[1; 32]),
                level: crate::AssuranceLevel::L1,
                now: 1_000,
                jti: crate::Ulid::new(1, [1; 10]).unwrap(),
                provenance: crate::Ulid::new(1, [2; 10]).unwrap(),
                status: None,
            },
        )
        .unwrap();
        assert_eq!(check_binding(&claims, "token", None, &request), Ok(None));
        let p = proof(&holder, 1_000);
        assert_eq!(
            check_binding(&claims, "token", Some(&p), &request),
            Err(DpopError::NotBound)
        );
        claims.cnf = Some(crate::token::Confirmation { jkt });
        assert_eq!(
            check_binding(&claims, "token", None, &request),
            Err(DpopError::Required)
        );
        assert!(check_binding(&claims, "token", Some(&p), &request).is_ok());
    }

    /// RFC 9449 §5: a token request's proof names no token; any key
    /// signs it, and the thumbprint is returned. One made for a resource
    /// (with `ath`) is refused there, and a token request's proof is
    /// refused at a resource (no `ath`).
    #[test]
    fn a_token_request_proof_has_no_ath_and_any_key() {
        const TOKEN_URL: &str = "https://mandate.example/v1/oauth/token";
        let holder = key(3);
        let jkt = holder.holder_key().jkt().clone();
        let request = ProofRequest {
            method: "POST",
            url: TOKEN_URL,
            now: 1_000,
        };
        let signed = |access_token, url| {
            sign_proof(
                &holder,
                &NewProof {
                    method: "POST",
                    url,
                    access_token,
                    now: 1_000,
                    jti_random: [9; 16],
                },
            )
            .unwrap()
        };
        let bare = signed(None, TOKEN_URL);
        assert_eq!(
            verify_token_request_proof(&bare, &request).map(|proof| proof.jkt),
            Ok(jkt.clone())
        );
        assert_eq!(
            verify_token_request_proof(&signed(Some("token"), TOKEN_URL), &request),
            Err(DpopError::MalformedClaims)
        );
        assert_eq!(
            verify_token_request_proof(&signed(None, URL), &request),
            Err(DpopError::UrlMismatch)
        );
        assert_eq!(
            verify_token_request_proof(
                &bare,
                &ProofRequest {
                    method: "GET",
                    ..request
                }
            ),
            Err(DpopError::MethodMismatch)
        );
        assert_eq!(
            verify_proof(&bare, "token", &jkt, &request),
            Err(DpopError::MissingAth)
        );
    }

    #[test]
    fn replay_keys_differ_by_holder_and_jti() {
        let a = VerifiedProof {
            jti: "0123456789abcdef".into(),
            iat: 5,
            jkt: key(1).holder_key().jkt().clone(),
        };
        let mut b = a.clone();
        b.jkt = key(2).holder_key().jkt().clone();
        let mut c = a.clone();
        c.jti.push('x');
        assert_ne!(a.replay_key(), b.replay_key());
        assert_ne!(a.replay_key(), c.replay_key());
        assert_eq!(a.replay_key(), a.clone().replay_key());
    }
}
