//! # mandate-core
//!
//! The pure rules of Mandate: identifiers, scopes and their narrowing, keys
//! and key sets, token claims with issuing, delegation, signing and
//! verification, proofs of possession for bound tokens (DPoP), token status
//! lists (the IETF Token Status List), human references, approval
//! requirements, the action-record lifecycle, budgets, reputation, workflow
//! summaries, the record log's Merkle tree, signed checkpoints and proofs,
//! webhooks (Standard Webhooks signatures and Mandate's event payloads),
//! W3C trace context, and the rules of Mandate as an OAuth authorization
//! server (redirect URIs, PKCE, scopes, client metadata documents, refresh
//! families, token exchange).
//!
//! This crate refuses to know about the world: it does no I/O, reads no
//! clock, draws no randomness and starts no thread. Callers pass `now` (unix
//! seconds) and random bytes in. The server (`mandate-host`) and the wasm
//! build (`mandate-wasm`) call the same functions, so a rule is written once
//! and judged the same everywhere.
//!
//! Every number a rule depends on is a named constant in [`limits`]. Every
//! error is a value with a stable snake_case `code()`.

#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::unreachable,
        clippy::todo
    )
)]

pub mod agents;
pub mod approval;
pub mod audience;
mod b64;
pub mod budget;
pub mod chain;
pub mod dpop;
pub mod human;
pub mod ids;
mod json;
pub mod keys;
pub mod limits;
pub mod money;
pub mod oauth;
pub mod policy;
pub mod record;
pub mod relay;
pub mod reputation;
pub mod roles;
pub mod scope;
pub mod status_list;
pub mod summary;
pub mod tlog;
pub mod token;
pub mod trace;
pub mod trust;
pub mod trust_statement;
pub mod webhook;

pub use agents::{Naming, NotYours, chain_trust, check_naming, may_issue_for};
pub use approval::{
    ApprovalRequirement, chain_requires_approval, chain_requires_approval_with_args,
    check_constraints_reachable, check_reachable,
};
pub use audience::{Audience, ResourceUriError, check_resource_uri};
pub use budget::{
    BUDGET_THRESHOLDS, BudgetExceeded, CompletionSpendRefused, ThresholdReached, Usage,
    check_budget, check_chain_budgets, check_chain_extra_spend, check_completion_spend,
    check_extra_spend, largest_share, thresholds_reached,
};
pub use chain::{ChainError, ChainFault, InvalidRevoked, revocation_set, verify_chain};
pub use dpop::{
    DpopError, NewProof, ProofRequest, VerifiedProof, check_binding, sign_proof, verify_proof,
    verify_token_request_proof,
};
pub use human::{EmailError, Identity, human_ref};
pub use ids::{
    AarId, AgentId, ApprovalId, ArgsHash, ClaimsDigest, HumanRef, IdError, Jkt, Jth, Jti, JtiKind,
    KeyId, OrgId, ProvenanceRef, ResultHash, Ulid, VouchId, WebhookId,
};
pub use keys::{
    HolderKey, Jwk, JwkSet, Jwks, JwksError, PrivateJwk, PublicJwk, SigningKey, jkt, thumbprint,
};
pub use money::{MoneyError, Usd};
pub use policy::{
    Args, ArgsDenial, ArgsError, ArgsRule, ArgsRules, ChainArgsDenial, Pol, PolicyError,
    StrictJson, Truth, check_args, check_chain_args,
};
pub use record::{
    ApprovalDecision, Decision, DenyReason, Outcome, Rating, RecordError, RecordEvent,
    RecordOrigin, RecordState, Status, result_key, transition,
};
pub use relay::{NewRelay, RelayError, sign_relay, verify_forwarded, verify_relay};
pub use reputation::{CountsChange, Reputation, ReputationCounts, reputation};
pub use roles::{Permission, Role, UnknownRole};
pub use scope::{
    Action, Constraints, Framework, Grant, Limit, MinTrust, Policy, Resource, ResourcePattern,
    Scope, ScopeDenial, ScopeError, Violation, Widening, check_narrowing, permits,
};
pub use status_list::{
    Bits, StatusCheckError, StatusClaim, StatusList, StatusListClaims, StatusListError,
    StatusListRef, StatusType, StatusUri, TokenStatusError, VerifiedStatusList, check_status,
    check_status_in_list, check_status_origin, check_status_with, sign_status_list,
    verify_status_list,
};
pub use summary::{
    RecordRow, SummaryError, SummaryRow, WorkflowSummary, summarize, summarize_records,
};
pub use tlog::{
    Checkpoint, Frontier, LogEntry, LogError, LogEvent, NoteSigner, NoteVerifier, OpenedNote,
    ReadError, TileEntry, TileId, TileReader, TlogProof, WitnessPolicy, WitnessPolicyError,
    WitnessSigner, WitnessVerifier, open_checkpoint, open_note, verify_consistency,
    verify_inclusion, verify_tlog_proof, verify_witnessed,
};
pub use token::{
    Actor, AssuranceLevel, Claims, Confirmation, Header, IssueError, Renewal, RootIssue, SignError,
    TokenRequest, TokenStatus, VerifiedToken, VerifyError, VerifyOptions, check_fan_out,
    decode_unverified, delegate, delegated_grant, issue_root, renew, renew_within, sign, verify,
    verify_ignoring_lifetime,
};
pub use trace::{SpanId, TraceError, TraceFlags, TraceId, TraceParent};
pub use trust::{
    AgentInput, TrustError, TrustGraph, TrustParams, TrustScore, VouchInput, Voucher,
    meets_trust_floor, trust_floor, trust_scores,
};
pub use trust_statement::{
    TrustStatement, TrustStatementClaims, TrustStatementError, sign_trust_statement,
    verify_trust_statement,
};
pub use webhook::{EventTime, EventType, MessageId, WebhookError};

/// SHA-256 of bytes as `sha256:<hex>`, the form of `result_hash`.
pub fn sha256_ref(data: &[u8]) -> ResultHash {
    use sha2::Digest as _;
    ResultHash::from_digest(&sha2::Sha256::digest(data).into())
}
