//! Builders shared by core's integration tests.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test binary uses part of the helpers"
)]

use mandate_core::{
    AgentId, AssuranceLevel, Claims, Constraints, HumanRef, Policy, RootIssue, Scope, SigningKey,
    TokenRequest, Ulid, issue_root,
};

pub const NOW: i64 = 1_800_000_000;

pub fn key(seed: u8) -> SigningKey {
    SigningKey::from_secret(&[seed; 32])
}

pub fn ulid(n: u8) -> Ulid {
    Ulid::new(NOW as u64 * 1000, [n; 10]).unwrap()
}

pub fn request(resources: &[&str], actions: &[&str]) -> TokenRequest {
    TokenRequest {
        agent_id: AgentId::parse("bot").unwrap(),
        scope: Scope::parse(resources, actions).unwrap(),
        constraints: Constraints::default(),
        policy: Policy::default(),
        ttl_seconds: None,
        holder: None,
    }
}

/// How the test root is issued: at `NOW`, without a status list entry.
pub fn root_issue() -> RootIssue {
    RootIssue {
        issuer: "https://mandate.test".into(),
        human: HumanRef::from_digest(&[9; 32]),
        level: AssuranceLevel::L1,
        now: NOW,
        jti: ulid(1),
        provenance: ulid(2),
        status: None,
    }
}

pub fn root_with(request: TokenRequest) -> Claims {
    issue_root(request, root_issue()).unwrap()
}

pub fn root() -> Claims {
    root_with(request(
        &["crm:*", "mail:inbox"],
        &["read", "write", "delegate"],
    ))
}
