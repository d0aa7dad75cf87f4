//! Offline verification of a whole delegation chain, root first: every link
//! verifies, each child names its parent (by jti hash) and inherits the
//! workflow, human, assurance, trust and issuer, grants nothing its parent
//! does not, and stays bound to a key if its parent is bound; no token of
//! the chain (nor any ancestor a token names) is revoked. Revocation is
//! asked by jti hash, the only name of an ancestor a token carries.

use std::collections::BTreeSet;

use crate::ids::{Jth, Jti};
use crate::keys::Jwks;
use crate::limits::MAX_DELEGATION_DEPTH;
use crate::scope::{Widening, check_narrowing};
use crate::token::{Claims, VerifiedToken, VerifyError, VerifyOptions, verify};

/// What is wrong with one link of a chain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainFault {
    #[error(transparent)]
    Verify(#[from] VerifyError),
    #[error("the first token of a chain must be a root token")]
    NotRoot,
    #[error(
        "the token does not name the previous token as its parent (svc_parent, svc_depth, svc_chain or act)"
    )]
    BrokenLink,
    #[error("the token belongs to another workflow than its parent")]
    ProvenanceMismatch,
    #[error("the token does not inherit `{0}` from its parent")]
    InheritanceMismatch(&'static str),
    #[error(transparent)]
    Widening(#[from] Widening),
    #[error("the parent is bound to a key and the token is bound to none")]
    BindingDropped,
    #[error("the token with jti hash `{0}` is revoked")]
    Revoked(Jth),
}

impl ChainFault {
    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            ChainFault::Verify(e) => e.code(),
            ChainFault::NotRoot => "not_root",
            ChainFault::BrokenLink => "broken_link",
            ChainFault::ProvenanceMismatch => "provenance_mismatch",
            ChainFault::InheritanceMismatch(_) => "inheritance_mismatch",
            ChainFault::Widening(w) => w.code(),
            ChainFault::BindingDropped => "binding_dropped",
            ChainFault::Revoked(_) => "revoked",
        }
    }
}

/// Why a chain was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    #[error("the chain is empty")]
    Empty,
    #[error("a chain holds at most {} tokens", MAX_DELEGATION_DEPTH + 1)]
    TooLong,
    #[error("token {index} of the chain: {fault}")]
    Link { index: usize, fault: ChainFault },
}

impl ChainError {
    /// Stable snake_case code (of the fault, for a bad link).
    pub fn code(&self) -> &'static str {
        match self {
            ChainError::Empty => "chain_empty",
            ChainError::TooLong => "chain_too_long",
            ChainError::Link { fault, .. } => fault.code(),
        }
    }
}

fn check_link(child: &Claims, parent: &Claims) -> Result<(), ChainFault> {
    let parent_jth = parent.jth();
    let mut expected_chain = parent.ancestors().to_vec();
    expected_chain.push(parent_jth.clone());
    let actor_ok = child.act.as_ref().is_some_and(|act| {
        act.sub == parent.sub.subject() && act.act.as_deref() == parent.act.as_ref()
    });
    if child.svc_parent.as_ref() != Some(&parent_jth)
        || child.svc_depth != parent.svc_depth + 1
        || child.ancestors() != expected_chain.as_slice()
        || !actor_ok
    {
        return Err(ChainFault::BrokenLink);
    }
    if child.svc_prov != parent.svc_prov {
        return Err(ChainFault::ProvenanceMismatch);
    }
    if child.svc_human != parent.svc_human {
        return Err(ChainFault::InheritanceMismatch("svc_human"));
    }
    if child.svc_assurance != parent.svc_assurance {
        return Err(ChainFault::InheritanceMismatch("svc_assurance"));
    }
    if child.svc_trust_score != parent.svc_trust_score {
        return Err(ChainFault::InheritanceMismatch("svc_trust_score"));
    }
    if child.iss != parent.iss {
        return Err(ChainFault::InheritanceMismatch("iss"));
    }
    check_narrowing(&child.grant(), &parent.grant())?;
    if parent.cnf.is_some() && child.cnf.is_none() {
        return Err(ChainFault::BindingDropped);
    }
    Ok(())
}

/// Verifies a delegation chain given root first. `is_revoked` is asked about
/// the jti hash of every token of the chain and every ancestor they name.
pub fn verify_chain(
    tokens: &[&str],
    keys: &Jwks,
    now: i64,
    options: &VerifyOptions,
    is_revoked: impl Fn(&Jth) -> bool,
) -> Result<Vec<VerifiedToken>, ChainError> {
    if tokens.is_empty() {
        return Err(ChainError::Empty);
    }
    if tokens.len() > MAX_DELEGATION_DEPTH as usize + 1 {
        return Err(ChainError::TooLong);
    }
    let mut verified: Vec<VerifiedToken> = Vec::with_capacity(tokens.len());
    for (index, token) in tokens.iter().enumerate() {
        let link = |fault: ChainFault| ChainError::Link { index, fault };
        let current = verify(token, keys, now, options).map_err(|e| link(e.into()))?;
        let claims = &current.claims;
        match verified.last() {
            None if claims.svc_depth != 0 => return Err(link(ChainFault::NotRoot)),
            None => {}
            Some(parent) => check_link(claims, &parent.claims).map_err(link)?,
        }
        if let Some(revoked) = claims.first_revoked(&is_revoked) {
            return Err(link(ChainFault::Revoked(revoked)));
        }
        verified.push(current);
    }
    Ok(verified)
}

/// A revocation entry that names no token: neither a jti nor a jti hash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("revoked: `{0}` is neither a jti nor a jti hash")]
pub struct InvalidRevoked(pub String);

impl InvalidRevoked {
    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        "invalid_revoked"
    }
}

/// The revocation set an offline verifier compares against: revoked tokens,
/// each named by its jti or by its jti hash (the name descendants carry),
/// as jti hashes. All or nothing: one malformed entry refuses the set.
pub fn revocation_set<S: AsRef<str>>(
    entries: impl IntoIterator<Item = S>,
) -> Result<BTreeSet<Jth>, InvalidRevoked> {
    // Inserted one by one: collecting into a `BTreeSet` sorts a vector
    // first, and that sort alone is 7.6 KB of the SDK's wasm module.
    let mut set = BTreeSet::new();
    for entry in entries {
        let entry = entry.as_ref();
        let jth = match Jti::parse(entry) {
            Ok(jti) => jti.hash(),
            Err(_) => Jth::parse(entry).map_err(|_| InvalidRevoked(entry.to_owned()))?,
        };
        set.insert(jth);
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Ulid;

    #[test]
    fn a_revocation_set_takes_jtis_and_jti_hashes_all_or_nothing() {
        let jti = Jti::root(Ulid::new(1_800_000_000_000, [7; 10]).unwrap());
        let other = Jti::delegated(Ulid::new(1_800_000_000_000, [8; 10]).unwrap());
        let hash = other.hash();
        let set = revocation_set([jti.as_str(), hash.as_str()]).unwrap();
        assert_eq!(set, BTreeSet::from([jti.hash(), hash.clone()]));
        assert_eq!(revocation_set(Vec::<String>::new()), Ok(BTreeSet::new()));
        let refused = revocation_set([jti.as_str(), "neither"]).unwrap_err();
        assert_eq!(refused, InvalidRevoked("neither".to_owned()));
        assert_eq!(refused.code(), "invalid_revoked");
    }
}
