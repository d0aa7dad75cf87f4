//! The signed trust statement: an agent's trust, as the server computed it,
//! in a short-lived compact JWS a relying party or an edge worker verifies
//! offline against the server's JWKS, as it verifies the agent's token.
//!
//! Header `{"alg":"EdDSA","typ":"trust-statement+jwt","kid":<a key of the
//! JWKS>}`; claims, exactly: `iss` (the server), `sub` (`agent:<agent_id>`),
//! `org` (`org_…`), `iat`, `exp` (unix seconds; `exp − iat` is
//! [`TRUST_STATEMENT_TTL_SECONDS`] by default, at most
//! [`MAX_TRUST_STATEMENT_TTL_SECONDS`]), `trust`, `reputation`, `graph`,
//! `ceiling` (numbers in [0, 1], [`crate::trust::TrustScore`]) and
//! `computed_at` (unix seconds: when the score was computed, at or before
//! `iat`).
//!
//! Verification has the strictness of a token's and of a status list
//! token's: the same code checks the compact form, the header and the
//! signature; then the claims, with every unknown member refused. Error
//! codes are stable: the compact form's (`malformed_token`,
//! `invalid_base64`, `malformed_header`, `unsupported_alg`,
//! `forbidden_header_param`, `missing_kid`, `unknown_kid`,
//! `malformed_signature`, `invalid_signature`), then `statement_too_large`,
//! `wrong_typ`, `malformed_claims`, `duplicate_claim`, `invalid_claim`,
//! `statement_expired`, `statement_not_yet_valid`.

use serde::{Deserialize, Serialize};

use crate::ids::{AgentId, OrgId};
use crate::json::{NumericDate, has_duplicate_member};
use crate::keys::{Jwks, SigningKey};
use crate::limits::{MAX_TRUST_STATEMENT_BYTES, MAX_TRUST_STATEMENT_TTL_SECONDS};
use crate::token::{Kind, SignError, VerifyError, sign_payload, verify_signature};

pub use crate::limits::TRUST_STATEMENT_TTL_SECONDS;

/// The JWS `typ` of a trust statement.
pub const TRUST_STATEMENT_TYP: &str = "trust-statement+jwt";
/// The media type a trust statement is served with.
pub const TRUST_STATEMENT_MEDIA_TYPE: &str = "application/trust-statement+jwt";

const TRUST_STATEMENT_KIND: Kind = Kind {
    typ: TRUST_STATEMENT_TYP,
    max_bytes: MAX_TRUST_STATEMENT_BYTES,
};

/// Why a trust statement was refused, or could not be signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustStatementError {
    #[error("the trust statement is longer than {MAX_TRUST_STATEMENT_BYTES} bytes")]
    TooLarge,
    #[error("typ must be trust-statement+jwt")]
    WrongTyp,
    /// The compact form, header or signature, as token verification says it.
    #[error(transparent)]
    Jws(VerifyError),
    #[error(
        "the claims are not exactly iss, sub, org, iat, exp, trust, reputation, graph, ceiling and computed_at"
    )]
    MalformedClaims,
    #[error("a claim appears twice")]
    DuplicateClaim,
    #[error("claim `{claim}` {reason}")]
    InvalidClaim {
        claim: &'static str,
        reason: &'static str,
    },
    #[error("the trust statement has expired")]
    Expired,
    #[error("the trust statement was issued in the future")]
    NotYetValid,
}

impl TrustStatementError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            TrustStatementError::TooLarge => "statement_too_large",
            TrustStatementError::WrongTyp => "wrong_typ",
            TrustStatementError::Jws(error) => error.code(),
            TrustStatementError::MalformedClaims => "malformed_claims",
            TrustStatementError::DuplicateClaim => "duplicate_claim",
            TrustStatementError::InvalidClaim { .. } => "invalid_claim",
            TrustStatementError::Expired => "statement_expired",
            TrustStatementError::NotYetValid => "statement_not_yet_valid",
        }
    }

    fn from_jws(error: VerifyError) -> TrustStatementError {
        match error {
            VerifyError::TokenTooLarge => TrustStatementError::TooLarge,
            VerifyError::InvalidTyp => TrustStatementError::WrongTyp,
            other => TrustStatementError::Jws(other),
        }
    }
}

/// The claims of a trust statement, as signed and as verified.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustStatementClaims {
    /// The server that signed it (a token's `iss`).
    pub iss: String,
    /// `agent:<agent_id>`.
    pub sub: String,
    /// The agent's organisation.
    pub org: OrgId,
    pub iat: i64,
    pub exp: i64,
    pub trust: f64,
    pub reputation: f64,
    pub graph: f64,
    pub ceiling: f64,
    /// When the score was computed (unix seconds).
    pub computed_at: i64,
}

impl TrustStatementClaims {
    /// The claims of `agent`'s statement of `score`, computed at
    /// `computed_at`, issued at `now` for `ttl_s` seconds.
    pub fn new(
        iss: &str,
        org: OrgId,
        agent: &AgentId,
        score: &crate::trust::TrustScore,
        computed_at: i64,
        now: i64,
        ttl_s: u64,
    ) -> TrustStatementClaims {
        TrustStatementClaims {
            iss: iss.to_owned(),
            sub: format!("{}{}", AgentId::SUBJECT_PREFIX, agent.as_str()),
            org,
            iat: now,
            exp: now.saturating_add(i64::try_from(ttl_s).unwrap_or(i64::MAX)),
            trust: score.trust,
            reputation: score.reputation,
            graph: score.graph,
            ceiling: score.ceiling,
            computed_at,
        }
    }

    /// The agent the statement is about.
    pub fn agent_id(&self) -> Result<AgentId, TrustStatementError> {
        self.sub
            .strip_prefix(AgentId::SUBJECT_PREFIX)
            .and_then(|id| AgentId::parse(id).ok())
            .ok_or(TrustStatementError::InvalidClaim {
                claim: "sub",
                reason: "must be agent:<agent_id>",
            })
    }

    /// Every rule the claims obey, but time: a subject of an agent, scores in
    /// [0, 1], `computed_at ≤ iat < exp`, a lifetime of at most an hour.
    fn check(&self) -> Result<AgentId, TrustStatementError> {
        if self.iss.is_empty() {
            return Err(TrustStatementError::InvalidClaim {
                claim: "iss",
                reason: "must not be empty",
            });
        }
        let agent = self.agent_id()?;
        for (claim, value) in [
            ("trust", self.trust),
            ("reputation", self.reputation),
            ("graph", self.graph),
            ("ceiling", self.ceiling),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(TrustStatementError::InvalidClaim {
                    claim,
                    reason: "must be a number in [0, 1]",
                });
            }
        }
        if self.iat >= self.exp {
            return Err(TrustStatementError::InvalidClaim {
                claim: "exp",
                reason: "must be after iat",
            });
        }
        let ttl = u64::try_from(self.exp.saturating_sub(self.iat)).unwrap_or(u64::MAX);
        if ttl > MAX_TRUST_STATEMENT_TTL_SECONDS {
            return Err(TrustStatementError::InvalidClaim {
                claim: "exp",
                reason: "must be at most an hour after iat",
            });
        }
        if self.computed_at > self.iat {
            return Err(TrustStatementError::InvalidClaim {
                claim: "computed_at",
                reason: "must not be after iat",
            });
        }
        Ok(agent)
    }
}

/// A verified trust statement.
#[derive(Debug, Clone, PartialEq)]
pub struct TrustStatement {
    /// The key it was signed with.
    pub kid: String,
    /// The agent it is about (its `sub`).
    pub agent_id: AgentId,
    pub claims: TrustStatementClaims,
}

/// Signs `claims` with `key`. Refused when the claims break a rule of
/// [`verify_trust_statement`] but time.
pub fn sign_trust_statement(
    claims: &TrustStatementClaims,
    key: &SigningKey,
) -> Result<String, TrustStatementError> {
    claims.check()?;
    let payload = serde_json::to_vec(claims).map_err(|_| TrustStatementError::MalformedClaims)?;
    sign_payload(&payload, key, TRUST_STATEMENT_KIND).map_err(|error| match error {
        SignError::TooLarge => TrustStatementError::TooLarge,
        SignError::Serialize => TrustStatementError::MalformedClaims,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClaims {
    iss: String,
    sub: String,
    org: OrgId,
    #[serde(default)]
    iat: NumericDate,
    #[serde(default)]
    exp: NumericDate,
    trust: f64,
    reputation: f64,
    graph: f64,
    ceiling: f64,
    #[serde(default)]
    computed_at: NumericDate,
}

/// Verifies a trust statement against a key set at `now` (unix seconds),
/// with `leeway_s` of clock skew, stopping at the first failure: the compact
/// form, header (`typ` `trust-statement+jwt`) and signature as a token's;
/// the claims, exactly those of [`TrustStatementClaims`] with integer
/// times, scores in [0, 1], `computed_at ≤ iat < exp ≤ iat + 3600`; then
/// `now < exp + leeway_s` (else `statement_expired`) and
/// `iat ≤ now + leeway_s` (else `statement_not_yet_valid`).
pub fn verify_trust_statement(
    jwt: &str,
    keys: &Jwks,
    now: i64,
    leeway_s: u64,
) -> Result<TrustStatement, TrustStatementError> {
    let signed =
        verify_signature(jwt, keys, TRUST_STATEMENT_KIND).map_err(TrustStatementError::from_jws)?;
    let raw: RawClaims = match serde_json::from_slice(&signed.payload) {
        Ok(raw) => raw,
        Err(_) if has_duplicate_member(&signed.payload) => {
            return Err(TrustStatementError::DuplicateClaim);
        }
        Err(_) => return Err(TrustStatementError::MalformedClaims),
    };
    let (NumericDate::Int(iat), NumericDate::Int(exp), NumericDate::Int(computed_at)) =
        (raw.iat, raw.exp, raw.computed_at)
    else {
        return Err(TrustStatementError::MalformedClaims);
    };
    let claims = TrustStatementClaims {
        iss: raw.iss,
        sub: raw.sub,
        org: raw.org,
        iat,
        exp,
        trust: raw.trust,
        reputation: raw.reputation,
        graph: raw.graph,
        ceiling: raw.ceiling,
        computed_at,
    };
    let agent_id = claims.check()?;
    let leeway = i64::try_from(leeway_s).unwrap_or(i64::MAX);
    if now >= exp.saturating_add(leeway) {
        return Err(TrustStatementError::Expired);
    }
    if iat > now.saturating_add(leeway) {
        return Err(TrustStatementError::NotYetValid);
    }
    Ok(TrustStatement {
        kid: signed.kid,
        agent_id,
        claims,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::b64;
    use crate::ids::Ulid;
    use crate::trust::TrustScore;

    const NOW: i64 = 1_750_000_000;

    fn key(n: u8) -> SigningKey {
        SigningKey::from_secret(&[n; 32])
    }

    fn claims() -> TrustStatementClaims {
        let score = TrustScore {
            trust: 0.625,
            reputation: 0.5,
            graph: 0.75,
            decay: 1.0,
            ceiling: 1.0,
            vouchers: 1,
        };
        TrustStatementClaims::new(
            "https://mandate.example",
            OrgId::new(Ulid::new(1_700_000_000_000, [7; 10]).unwrap()),
            &AgentId::parse("research-bot").unwrap(),
            &score,
            NOW - 5,
            NOW,
            TRUST_STATEMENT_TTL_SECONDS,
        )
    }

    fn verify(jwt: &str, now: i64) -> Result<TrustStatement, TrustStatementError> {
        verify_trust_statement(jwt, &Jwks::from_signing_keys([&key(1)]), now, 60)
    }

    #[test]
    fn signs_and_verifies() {
        let jwt = sign_trust_statement(&claims(), &key(1)).unwrap();
        let statement = verify(&jwt, NOW + 10).unwrap();
        assert_eq!(statement.claims, claims());
        assert_eq!(statement.agent_id.as_str(), "research-bot");
        assert_eq!(statement.kid, key(1).kid());
        assert_eq!(statement.claims.exp - statement.claims.iat, 300);
        let header = jwt.split('.').next().unwrap();
        use base64::Engine as _;
        let header: serde_json::Value =
            serde_json::from_slice(&b64::ENGINE.decode(header).unwrap()).unwrap();
        assert_eq!(header["typ"], "trust-statement+jwt");
        assert_eq!(header["alg"], "EdDSA");
    }

    #[test]
    fn refuses_what_it_should() {
        let jwt = sign_trust_statement(&claims(), &key(1)).unwrap();
        // Expired (past exp and the leeway), and not yet valid.
        assert_eq!(
            verify(&jwt, NOW + 360).unwrap_err().code(),
            "statement_expired"
        );
        assert!(verify(&jwt, NOW + 359).is_ok());
        assert_eq!(
            verify(&jwt, NOW - 61).unwrap_err().code(),
            "statement_not_yet_valid"
        );
        // Another key.
        let other = sign_trust_statement(&claims(), &key(2)).unwrap();
        assert_eq!(verify(&other, NOW).unwrap_err().code(), "unknown_kid");
        // Tampered: the payload changed under the same signature.
        let mut parts: Vec<&str> = jwt.split('.').collect();
        let mut raised = claims();
        raised.trust = 1.0;
        let payload = b64::encode(serde_json::to_vec(&raised).unwrap());
        parts[1] = &payload;
        assert_eq!(
            verify(&parts.join("."), NOW).unwrap_err().code(),
            "invalid_signature"
        );
        // A token is no statement.
        let header = b64::encode(format!(
            r#"{{"alg":"EdDSA","typ":"vat+jwt","kid":"{}"}}"#,
            key(1).kid()
        ));
        let forged = format!(
            "{header}.{}.{}",
            jwt.split('.').nth(1).unwrap(),
            jwt.split('.').nth(2).unwrap()
        );
        assert_eq!(verify(&forged, NOW).unwrap_err().code(), "wrong_typ");
        assert_eq!(verify("a.b", NOW).unwrap_err().code(), "malformed_token");
    }

    #[test]
    fn refuses_to_sign_bad_claims() {
        let mut long = claims();
        long.exp = long.iat + 3601;
        assert_eq!(
            sign_trust_statement(&long, &key(1)).unwrap_err().code(),
            "invalid_claim"
        );
        let mut wild = claims();
        wild.trust = 1.5;
        assert!(sign_trust_statement(&wild, &key(1)).is_err());
        let mut later = claims();
        later.computed_at = later.iat + 1;
        assert!(sign_trust_statement(&later, &key(1)).is_err());
        let mut nobody = claims();
        nobody.sub = "human:x".to_owned();
        assert!(sign_trust_statement(&nobody, &key(1)).is_err());
    }
}
