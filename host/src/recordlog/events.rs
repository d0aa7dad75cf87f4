//! The events of tokens, records and vouches as the record log states them (core's
//! `LogEvent`), made from what the tables hold: the ledger appends these
//! as it writes, and `mandate audit verify` makes them again from the
//! stored rows and compares, so one function per event serves both.

use mandate_core::tlog::{
    self, ApprovalDecided, LogEvent, RecordCompleted, RecordCreated, RecordRated, TokenIssued,
    TokenRevoked,
};
use mandate_core::{
    AarId, Action, AgentId, ArgsHash, Claims, ClaimsDigest, Jth, Jti, KeyId, ProvenanceRef,
    RecordState, Resource, ResultHash, VouchId,
};

use crate::store::StoreError;
use crate::store::approvals::{Approval, ApprovalStatus};
use crate::store::records::{Credential, Record};
use crate::store::trust::Vouch;

fn internal(cause: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(format!(
        "a stored value the record log cannot state: {cause}"
    ))
}

/// `token.issued`: a token as stored, with its claims' stored text and the
/// key that signed it.
pub fn token_issued(claims: &Claims, claims_text: &str, kid: &str) -> LogEvent {
    LogEvent::TokenIssued(TokenIssued {
        jth: claims.jth(),
        parent: claims.svc_parent.clone(),
        agent_id: claims.agent_id().clone(),
        provenance_ref: claims.svc_prov.clone(),
        depth: claims.svc_depth,
        human_ref: claims.svc_human.clone(),
        assurance: claims.svc_assurance,
        exp: claims.exp,
        kid: kid.to_owned(),
        claims_sha256: ClaimsDigest::of(claims_text),
        jkt: claims.cnf.as_ref().map(|cnf| cnf.jkt.clone()),
        status_idx: claims.status.as_ref().map(|status| status.idx()),
    })
}

/// `token.revoked`: the token `jth` ended by the revocation of `cause`
/// (itself or an ancestor; for a revoked signing key, itself).
pub fn token_revoked(jth: &str, cause: &str, reason: Option<&str>) -> Result<LogEvent, StoreError> {
    Ok(LogEvent::TokenRevoked(TokenRevoked {
        jth: Jth::parse(jth).map_err(internal)?,
        cause: Jth::parse(cause).map_err(internal)?,
        reason: reason.map(str::to_owned),
    }))
}

/// A record as it was created (its `state` and spend then), in typed
/// values: the ledger has them at hand; the audit reads them from a row
/// ([`created_of`]).
#[derive(Debug, Clone)]
pub struct Created<'a> {
    pub aar_id: &'a AarId,
    /// The jti hash of the token it was made with.
    pub jth: Jth,
    pub agent_id: &'a AgentId,
    pub provenance_ref: &'a ProvenanceRef,
    pub action: &'a str,
    pub resource: &'a str,
    pub state: RecordState,
    pub result_hash: Option<&'a ResultHash>,
    pub spend_micros: u64,
    pub credential: Credential,
    /// The jti hash of the token a `delegate` record made.
    pub delegated_jth: Option<Jth>,
    /// The hash of the arguments it was attempted with.
    pub args_hash: Option<&'a ArgsHash>,
}

/// `record.created`.
pub fn record_created(created: Created<'_>) -> Result<LogEvent, StoreError> {
    Ok(LogEvent::RecordCreated(RecordCreated {
        aar_id: created.aar_id.clone(),
        jth: created.jth,
        agent_id: created.agent_id.clone(),
        provenance_ref: created.provenance_ref.clone(),
        action: Action::parse(created.action).map_err(internal)?,
        resource: Resource::parse(created.resource).map_err(internal)?,
        status: created.state.status(),
        result: created.state.result(),
        deny_reason: created.state.deny_reason(),
        result_hash: created.result_hash.cloned(),
        spend_micros: created.spend_micros,
        credential: match created.credential {
            Credential::Jti => tlog::Credential::Jti,
            Credential::Token => tlog::Credential::Token,
        },
        delegated_jth: created.delegated_jth,
        args_hash: created.args_hash.cloned(),
    }))
}

fn jth_of(jti: &str) -> Result<Jth, StoreError> {
    Ok(Jti::parse(jti).map_err(internal)?.hash())
}

fn result_hash(text: Option<&str>) -> Result<Option<ResultHash>, StoreError> {
    text.map(|hash| ResultHash::parse(hash).map_err(internal))
        .transpose()
}

/// A state without its rating (the rating has a leaf of its own).
fn unrated(state: RecordState) -> RecordState {
    match state {
        RecordState::Rated { result, .. } => RecordState::Completed { result },
        other => other,
    }
}

/// Whether a stored record was made pending or awaiting approval (by
/// `authorize`): its completion, if any, has a leaf of its own.
pub fn made_pending(record: &Record) -> bool {
    record.reserved.is_some()
}

/// The `record.created` of a stored record: awaiting approval (when it
/// waited for one, `awaited`) or pending, with its reservation, when
/// `authorize` made it; else as it stands, without a rating.
pub fn created_of(record: &Record, awaited: bool) -> Result<LogEvent, StoreError> {
    let (state, spend, hash) = match record.reserved {
        Some(reserved) if awaited => (RecordState::AwaitingApproval, reserved, None),
        Some(reserved) => (RecordState::Pending, reserved, None),
        None => (
            unrated(record.state),
            record.spend,
            result_hash(record.result_hash.as_deref())?,
        ),
    };
    let args_hash = record
        .args_hash
        .as_deref()
        .map(|hash| ArgsHash::parse(hash).map_err(internal))
        .transpose()?;
    record_created(Created {
        aar_id: &AarId::parse(&record.aar_id).map_err(internal)?,
        jth: jth_of(&record.jti)?,
        agent_id: &AgentId::parse(&record.agent_id).map_err(internal)?,
        provenance_ref: &ProvenanceRef::parse(&record.provenance_ref).map_err(internal)?,
        action: &record.action,
        resource: &record.resource,
        state,
        result_hash: hash.as_ref(),
        spend_micros: spend.micros(),
        credential: record.credential,
        delegated_jth: record.delegated_jti.as_deref().map(jth_of).transpose()?,
        args_hash: args_hash.as_ref(),
    })
}

/// `record.completed`, for a stored record completed after it was made
/// pending.
pub fn record_completed(record: &Record) -> Result<LogEvent, StoreError> {
    Ok(LogEvent::RecordCompleted(RecordCompleted {
        aar_id: AarId::parse(&record.aar_id).map_err(internal)?,
        result: record
            .state
            .result()
            .ok_or_else(|| internal("a completed record has no result"))?,
        result_hash: result_hash(record.result_hash.as_deref())?,
        spend_micros: record.spend.micros(),
    }))
}

/// `record.rated`, for a stored rated record.
pub fn record_rated(record: &Record) -> Result<LogEvent, StoreError> {
    Ok(LogEvent::RecordRated(RecordRated {
        aar_id: AarId::parse(&record.aar_id).map_err(internal)?,
        rating: record
            .state
            .rating()
            .ok_or_else(|| internal("a rated record has no rating"))?,
        note: record.note.clone(),
        by: record
            .rated_by
            .as_deref()
            .map(KeyId::parse)
            .transpose()
            .map_err(internal)?,
    }))
}

/// Whether a stored record's state needs a `record.completed` leaf: made
/// pending (or awaiting approval), and completed since.
pub fn needs_completion(record: &Record) -> bool {
    made_pending(record) && record.state.result().is_some()
}

/// `approval.decided`, for a stored decided approval.
pub fn approval_decided(approval: &Approval) -> Result<LogEvent, StoreError> {
    let ApprovalStatus::Decided(decision) = approval.status else {
        return Err(internal("a pending approval has no decision"));
    };
    Ok(LogEvent::ApprovalDecided(ApprovalDecided {
        aar_id: AarId::parse(&approval.aar_id).map_err(internal)?,
        decision,
        note: approval.note.clone(),
        by: approval
            .decided_by
            .as_deref()
            .map(KeyId::parse)
            .transpose()
            .map_err(internal)?,
    }))
}

/// Who a stored vouch names in the pair of columns `by_key`, `by_agent`.
fn vouch_principal(
    by_key: Option<&str>,
    by_agent: Option<&str>,
) -> Result<tlog::VouchPrincipal, StoreError> {
    Ok(tlog::VouchPrincipal {
        by_key: by_key.map(KeyId::parse).transpose().map_err(internal)?,
        by_agent: by_agent.map(AgentId::parse).transpose().map_err(internal)?,
    })
}

/// `vouch.created`: a vouch as stored.
pub fn vouch_created(vouch: &Vouch) -> Result<LogEvent, StoreError> {
    Ok(LogEvent::VouchCreated(tlog::VouchCreated {
        vouch_id: VouchId::parse(&vouch.id).map_err(internal)?,
        by: vouch_principal(vouch.by_key.as_deref(), vouch.by_agent.as_deref())?,
        agent_id: AgentId::parse(&vouch.agent_id).map_err(internal)?,
        weight_ppm: vouch.weight_ppm,
        reason: vouch.reason.clone(),
        expires_at: vouch.expires_at,
    }))
}

/// `vouch.withdrawn`: a withdrawn vouch as stored.
pub fn vouch_withdrawn(vouch: &Vouch) -> Result<LogEvent, StoreError> {
    Ok(LogEvent::VouchWithdrawn(tlog::VouchWithdrawn {
        vouch_id: VouchId::parse(&vouch.id).map_err(internal)?,
        by: vouch_principal(
            vouch.withdrawn_by_key.as_deref(),
            vouch.withdrawn_by_agent.as_deref(),
        )?,
    }))
}
