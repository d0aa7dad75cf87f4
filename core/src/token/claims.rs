//! The claims of a token: the typed [`Claims`], what each claim must be
//! (every member once, the svc claims consistent with each other), how a
//! token names its ancestors and which tokens govern it, and its validity
//! window at a given moment.
//!
//! It knows nothing of the compact form, signatures or keys (see `jws`), nor
//! of how claims are made for a new token (see `issue`). Claims that fail
//! their checks are refused with the [`VerifyError`] the verifier reports.

use serde::{Deserialize, Serialize};

use super::jws::VerifyError;
use crate::audience::Audience;
use crate::ids::{AgentId, HumanRef, Jkt, Jth, Jti, JtiKind, ProvenanceRef};
use crate::json::{NumericDate, has_duplicate_member};
use crate::limits::{MAX_DELEGATION_DEPTH, TRUST_L1, TRUST_L2, TRUST_L3};
use crate::scope::{Constraints, Grant, Policy, Scope};
use crate::status_list::StatusClaim;

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
    /// The one resource server the token is for (RFC 7519 §4.1.3, an RFC
    /// 8707 resource indicator), when it names one. A single string: Mandate
    /// neither issues nor accepts an array (`malformed_claims`), and a string
    /// that is no resource URI is `invalid_claim`. Delegation keeps it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aud: Option<Audience>,
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
    /// Where the token's status is published (IETF Token Status List); none
    /// on tokens issued before Mandate published status lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<StatusClaim>,
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
            constraints: self.constraints(),
            policy: self.svc_policy.clone().unwrap_or_default(),
            expires_at: self.exp,
            audience: self.aud.clone(),
        }
    }

    /// The constraints: budget limits and approval requirement (empty when
    /// the token sets none).
    pub fn constraints(&self) -> Constraints {
        self.svc_constraints.clone().unwrap_or_default()
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

    /// Whether the token named `jti` governs this one: it is this token or
    /// one of its ancestors. A token may revoke itself and its descendants,
    /// and complete the records made with them; nothing else.
    pub fn is_governed_by(&self, jti: &Jti) -> bool {
        *jti == self.jti || self.ancestors().contains(&jti.hash())
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
    /// One string: an array (which RFC 7519 §4.1.3 allows) fails to read,
    /// as malformed claims.
    #[serde(default)]
    aud: Option<String>,
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
    status: Option<StatusClaim>,
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
        let aud = self
            .aud
            .map(|uri| {
                Audience::try_from(uri).map_err(|_| VerifyError::InvalidClaim {
                    claim: "aud",
                    reason: "must be an absolute https URI (http only on a loopback host) without fragment, at most 2048 bytes",
                })
            })
            .transpose()?;
        let claims = Claims {
            iss: self.iss,
            sub,
            aud,
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
            status: self.status,
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

pub(super) fn read_claims(bytes: &[u8]) -> Result<Claims, VerifyError> {
    match serde_json::from_slice::<RawClaims>(bytes) {
        Ok(raw) => raw.into_claims(),
        Err(_) if has_duplicate_member(bytes) => Err(VerifyError::DuplicateClaim),
        Err(_) => Err(VerifyError::MalformedClaims),
    }
}
