//! The MCP gate's relay of a client's DPoP proof (docs/oauth.md, "The
//! gate relays the client's proof").
//!
//! A stock MCP client holds a token bound to its own key (`cnf.jkt`) and
//! proves possession to the MCP server it calls, not to Mandate. The gate in
//! front of that server acts at Mandate for the client's tool call with
//! three headers: the client's token (`Authorization: DPoP`), the client's
//! proof exactly as received (`Mandate-Client-DPoP`), and a proof of its
//! own (`Mandate-Relay`), signed by the gate's Ed25519 key, which the
//! token's organisation registered for the token's audience.
//!
//! [`verify_forwarded`] checks the client's proof as RFC 9449 §4.3 does,
//! but for the MCP request it was made for: `htm` `POST`, `htu` the token's
//! `aud` or a URL under it (same origin, the path equal or below it at a
//! `/` boundary), the key the token's `cnf.jkt`, `ath` the token's hash,
//! `iat` within [`crate::limits::DPOP_IAT_WINDOW_SECONDS`] of now.
//!
//! [`verify_relay`] checks the gate's proof: a JWS like a DPoP proof whose
//! `typ` is [`RELAY_TYP`], made for this Mandate request (`htm`, `htu`),
//! with `iat`, `jti`, `ath` (the token's hash) and `cph`, base64url of
//! SHA-256 of the forwarded proof's ASCII; without a forwarded proof (a
//! completion, an approval read) it has no `cph`. Each is used once:
//! callers remember both replay keys in the one store they keep for DPoP
//! proofs. Which relay key is registered for which audience is the
//! caller's to know.

use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use crate::audience::Audience;
use crate::b64;
use crate::dpop::{
    DpopError, NewProof, ProofRequest, VerifiedProof, ath, check_iat, jti_ok, normalize_url,
    sign_with, verify_proof_where, verify_signed,
};
use crate::ids::Jkt;
use crate::json::{NumericDate, has_duplicate_member};
use crate::keys::SigningKey;

/// The JWS `typ` of a relay proof.
pub const RELAY_TYP: &str = "mandate-relay+jwt";

/// The method of the MCP requests a forwarded proof may have been made for
/// (Streamable HTTP sends every JSON-RPC request as a `POST`).
pub const FORWARDED_METHOD: &str = "POST";

/// Why a relayed call was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RelayError {
    /// The client's forwarded proof breaks a DPoP rule.
    #[error("the forwarded client proof was refused: {0}")]
    Client(DpopError),
    #[error(
        "the forwarded client proof's htu is not the token's audience or a URL under it (same origin, path at a `/` boundary)"
    )]
    ClientOutsideAudience,
    #[error("the forwarded client proof's htm must be POST, the method of an MCP request")]
    ClientMethod,
    /// The relay's own proof breaks a rule it shares with DPoP proofs.
    #[error("the relay proof was refused: {0}")]
    Relay(DpopError),
    #[error("the relay proof's typ must be mandate-relay+jwt")]
    RelayTyp,
    #[error(
        "the relay proof's claims are exactly jti, htm, htu, iat (an integer), ath and, with a forwarded proof, cph, each once"
    )]
    RelayClaims,
    #[error("the relay proof's cph is not the hash of the client proof forwarded with it")]
    CphMismatch,
    #[error("the token names no audience (aud): only a token for a resource can be relayed")]
    NoAudience,
}

impl RelayError {
    /// Stable snake_case code for this error; a [`DpopError`] inside keeps
    /// its own code.
    pub fn code(&self) -> &'static str {
        match self {
            RelayError::Client(inner) | RelayError::Relay(inner) => inner.code(),
            RelayError::ClientOutsideAudience => "client_proof_outside_audience",
            RelayError::ClientMethod => "client_proof_method",
            RelayError::RelayTyp => "relay_invalid_typ",
            RelayError::RelayClaims => "relay_malformed_claims",
            RelayError::CphMismatch => "relay_cph_mismatch",
            RelayError::NoAudience => "relay_no_audience",
        }
    }

    /// Whether the error is about the client's forwarded proof (rather than
    /// the relay's own proof or the token).
    pub fn is_client_proof(&self) -> bool {
        matches!(
            self,
            RelayError::Client(_) | RelayError::ClientOutsideAudience | RelayError::ClientMethod
        )
    }
}

/// `cph`: base64url of SHA-256 of the forwarded proof's ASCII.
pub fn cph(forwarded_proof: &str) -> String {
    b64::encode(Sha256::digest(forwarded_proof.as_bytes()))
}

/// Whether `htu` (normalised) is `audience` or under it: the same origin,
/// and the path equal to the audience's or below it at a `/` boundary.
/// The audience's query takes no part: a proof's `htu` has none.
fn under_audience(htu: &str, audience: &Audience) -> bool {
    let Some(base) = normalize_url(audience.as_str()) else {
        return false;
    };
    if htu == base {
        return true;
    }
    match base.ends_with('/') {
        true => htu.starts_with(&base),
        false => htu
            .strip_prefix(&base)
            .is_some_and(|rest| rest.starts_with('/')),
    }
}

/// Checks a client's proof forwarded by a gate: made with `access_token`,
/// bound to `jkt`, for an MCP request under `audience` (see the module
/// docs). Every rule but replay.
pub fn verify_forwarded(
    proof: &str,
    access_token: &str,
    jkt: &Jkt,
    audience: &Audience,
    now: i64,
) -> Result<VerifiedProof, RelayError> {
    let mut outside = None;
    let verified = verify_proof_where(proof, access_token, jkt, now, |htm, htu| {
        if htm != FORWARDED_METHOD {
            outside = Some(RelayError::ClientMethod);
        } else if !under_audience(htu, audience) {
            outside = Some(RelayError::ClientOutsideAudience);
        }
        // Reported below, once the rest has been checked in order.
        Ok(())
    })
    .map_err(RelayError::Client)?;
    match outside {
        Some(error) => Err(error),
        None => Ok(verified),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRelayClaims {
    jti: String,
    htm: String,
    htu: String,
    #[serde(default)]
    iat: NumericDate,
    ath: String,
    #[serde(default)]
    cph: Option<String>,
}

/// Checks a relay proof sent with `access_token` and, when it relays one,
/// the client's `forwarded` proof, against the Mandate request it came
/// with. Returns the relay key's thumbprint in the proof; every rule but
/// replay and registration.
pub fn verify_relay(
    proof: &str,
    access_token: &str,
    forwarded: Option<&str>,
    request: &ProofRequest<'_>,
) -> Result<VerifiedProof, RelayError> {
    let (key, payload) = verify_signed(proof, RELAY_TYP).map_err(|error| match error {
        DpopError::InvalidTyp => RelayError::RelayTyp,
        other => RelayError::Relay(other),
    })?;
    let claims: RawRelayClaims = match serde_json::from_slice(&payload) {
        Ok(claims) => claims,
        Err(_) if has_duplicate_member(&payload) => return Err(RelayError::RelayClaims),
        Err(_) if serde_json::from_slice::<serde::de::IgnoredAny>(&payload).is_err() => {
            return Err(RelayError::Relay(DpopError::Malformed));
        }
        Err(_) => return Err(RelayError::RelayClaims),
    };
    let NumericDate::Int(iat) = claims.iat else {
        return Err(RelayError::RelayClaims);
    };
    if !jti_ok(&claims.jti) {
        return Err(RelayError::Relay(DpopError::InvalidJti));
    }
    if claims.ath != ath(access_token) {
        return Err(RelayError::Relay(DpopError::AthMismatch));
    }
    if claims.cph != forwarded.map(cph) {
        return Err(RelayError::CphMismatch);
    }
    if claims.htm != request.method {
        return Err(RelayError::Relay(DpopError::MethodMismatch));
    }
    let htu = normalize_url(&claims.htu).ok_or(RelayError::Relay(DpopError::InvalidUrl))?;
    if Some(htu) != normalize_url(request.url) {
        return Err(RelayError::Relay(DpopError::UrlMismatch));
    }
    check_iat(iat, request.now).map_err(RelayError::Relay)?;
    Ok(VerifiedProof {
        jti: claims.jti,
        iat,
        jkt: key.jkt().clone(),
    })
}

/// What a gate signs a relay proof for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewRelay<'a> {
    /// The Mandate request's method.
    pub method: &'a str,
    /// The Mandate request's absolute URL; `htu` is it without query and
    /// fragment.
    pub url: &'a str,
    /// The client's token sent with it.
    pub access_token: &'a str,
    /// The client's proof forwarded with it, if any.
    pub forwarded: Option<&'a str>,
    /// Unix seconds.
    pub now: i64,
    /// Random bytes of the proof's `jti` (128 bits, base64url).
    pub jti_random: [u8; 16],
}

/// Signs a relay proof with the gate's key.
pub fn sign_relay(key: &SigningKey, relay: &NewRelay<'_>) -> Result<String, RelayError> {
    let proof = NewProof {
        method: relay.method,
        url: relay.url,
        access_token: Some(relay.access_token),
        now: relay.now,
        jti_random: relay.jti_random,
    };
    sign_with(key, RELAY_TYP, &proof, relay.forwarded.map(cph)).map_err(RelayError::Relay)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dpop::sign_proof;

    const MCP: &str = "https://crm.example/mcp";
    const MANDATE: &str = "https://mandate.example/v1/vat/authorize";
    const TOKEN: &str = "token";

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_secret(&[seed; 32])
    }

    fn client_proof(key: &SigningKey, method: &str, url: &str, now: i64) -> String {
        sign_proof(
            key,
            &NewProof {
                method,
                url,
                access_token: Some(TOKEN),
                now,
                jti_random: [3; 16],
            },
        )
        .unwrap()
    }

    fn relay(key: &SigningKey, forwarded: Option<&str>, now: i64) -> String {
        sign_relay(
            key,
            &NewRelay {
                method: "POST",
                url: MANDATE,
                access_token: TOKEN,
                forwarded,
                now,
                jti_random: [4; 16],
            },
        )
        .unwrap()
    }

    #[test]
    fn a_forwarded_proof_must_be_for_a_post_under_the_audience() {
        let client = key(1);
        let jkt = client.holder_key().jkt().clone();
        let audience = Audience::parse(MCP).unwrap();
        let root = Audience::parse("https://crm.example").unwrap();
        let slash = Audience::parse("https://crm.example/mcp/").unwrap();
        for (aud, method, url, expected) in [
            (&audience, "POST", MCP, Ok(())),
            (&audience, "POST", "https://CRM.example:443/mcp?x=1", Ok(())),
            (&audience, "POST", "https://crm.example/mcp/tools", Ok(())),
            (&root, "POST", "https://crm.example/anything", Ok(())),
            (&slash, "POST", "https://crm.example/mcp/x", Ok(())),
            (&slash, "POST", MCP, Err(RelayError::ClientOutsideAudience)),
            (
                &audience,
                "POST",
                "https://crm.example/mcp2",
                Err(RelayError::ClientOutsideAudience),
            ),
            (
                &audience,
                "POST",
                "https://crm.example/other",
                Err(RelayError::ClientOutsideAudience),
            ),
            (
                &audience,
                "POST",
                "http://crm.example/mcp",
                Err(RelayError::ClientOutsideAudience),
            ),
            (
                &audience,
                "POST",
                "https://crm.example:8443/mcp",
                Err(RelayError::ClientOutsideAudience),
            ),
            (
                &root,
                "POST",
                "https://crm.example.evil/mcp",
                Err(RelayError::ClientOutsideAudience),
            ),
            (
                &audience,
                "POST",
                "https://crm.example/mcp/../other",
                Err(RelayError::ClientOutsideAudience),
            ),
            (&audience, "GET", MCP, Err(RelayError::ClientMethod)),
        ] {
            let proof = client_proof(&client, method, url, 1_000);
            assert_eq!(
                verify_forwarded(&proof, TOKEN, &jkt, aud, 1_000).map(|_| ()),
                expected,
                "{aud:?} {method} {url}"
            );
        }
    }

    #[test]
    fn a_forwarded_proof_keeps_every_dpop_rule() {
        let client = key(1);
        let jkt = client.holder_key().jkt().clone();
        let audience = Audience::parse(MCP).unwrap();
        let proof = client_proof(&client, "POST", MCP, 1_000);
        let verified = verify_forwarded(&proof, TOKEN, &jkt, &audience, 1_060).unwrap();
        assert_eq!(verified.jkt, jkt);
        for (jkt, token, now, expected) in [
            (
                key(2).holder_key().jkt().clone(),
                TOKEN,
                1_000,
                DpopError::KeyMismatch,
            ),
            (jkt.clone(), "another", 1_000, DpopError::AthMismatch),
            (jkt.clone(), TOKEN, 1_061, DpopError::Stale),
            (jkt.clone(), TOKEN, 939, DpopError::FromFuture),
        ] {
            assert_eq!(
                verify_forwarded(&proof, token, &jkt, &audience, now),
                Err(RelayError::Client(expected))
            );
        }
        // A proof for another resource is refused for its key before its URL.
        let stranger = client_proof(&key(2), "POST", "https://other.example/", 1_000);
        assert_eq!(
            verify_forwarded(&stranger, TOKEN, &jkt, &audience, 1_000),
            Err(RelayError::Client(DpopError::KeyMismatch))
        );
    }

    #[test]
    fn a_relay_proof_binds_the_forwarded_proof_and_this_request() {
        let gate = key(9);
        let forwarded = client_proof(&key(1), "POST", MCP, 1_000);
        let other = client_proof(&key(1), "POST", "https://crm.example/mcp/x", 1_000);
        let proof = relay(&gate, Some(&forwarded), 1_000);
        let request = |url, now| ProofRequest {
            method: "POST",
            url,
            now,
        };
        let verified = verify_relay(&proof, TOKEN, Some(&forwarded), &request(MANDATE, 1_000))
            .expect("a good relay proof");
        assert_eq!(&verified.jkt, gate.holder_key().jkt());
        for (token, forwarded, url, now, expected) in [
            (
                TOKEN,
                Some(other.as_str()),
                MANDATE,
                1_000,
                RelayError::CphMismatch,
            ),
            (TOKEN, None, MANDATE, 1_000, RelayError::CphMismatch),
            (
                "another",
                Some(forwarded.as_str()),
                MANDATE,
                1_000,
                RelayError::Relay(DpopError::AthMismatch),
            ),
            (
                TOKEN,
                Some(forwarded.as_str()),
                "https://mandate.example/v1/vat/record/action",
                1_000,
                RelayError::Relay(DpopError::UrlMismatch),
            ),
            (
                TOKEN,
                Some(forwarded.as_str()),
                MANDATE,
                1_061,
                RelayError::Relay(DpopError::Stale),
            ),
        ] {
            assert_eq!(
                verify_relay(&proof, token, forwarded, &request(url, now)),
                Err(expected)
            );
        }
        // Without a forwarded proof: no cph, and none expected.
        let alone = relay(&gate, None, 1_000);
        assert!(verify_relay(&alone, TOKEN, None, &request(MANDATE, 1_000)).is_ok());
        assert_eq!(
            verify_relay(&alone, TOKEN, Some(&forwarded), &request(MANDATE, 1_000)),
            Err(RelayError::CphMismatch)
        );
    }

    #[test]
    fn a_dpop_proof_is_not_a_relay_proof_nor_the_reverse() {
        let gate = key(9);
        let dpop = client_proof(&gate, "POST", MANDATE, 1_000);
        let request = ProofRequest {
            method: "POST",
            url: MANDATE,
            now: 1_000,
        };
        assert_eq!(
            verify_relay(&dpop, TOKEN, None, &request),
            Err(RelayError::RelayTyp)
        );
        let relayed = relay(&gate, None, 1_000);
        assert_eq!(
            crate::dpop::verify_proof(&relayed, TOKEN, gate.holder_key().jkt(), &request),
            Err(DpopError::InvalidTyp)
        );
    }

    #[test]
    fn codes_are_distinct() {
        let all = [
            RelayError::ClientOutsideAudience,
            RelayError::ClientMethod,
            RelayError::RelayTyp,
            RelayError::RelayClaims,
            RelayError::CphMismatch,
            RelayError::NoAudience,
        ];
        let codes: std::collections::BTreeSet<_> = all.iter().map(RelayError::code).collect();
        assert_eq!(codes.len(), all.len());
        assert!(RelayError::Client(DpopError::Replayed).is_client_proof());
        assert!(!RelayError::Relay(DpopError::Replayed).is_client_proof());
    }
}
