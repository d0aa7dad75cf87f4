//! Authority: storing the root tokens a human was issued, delegating
//! narrower children from a token its holder presents, and revoking a token
//! with every descendant.

use mandate_core::trust::meets_trust_floor;
use mandate_core::{
    AarId, Action, AgentId, BudgetExceeded, Claims, DenyReason, HumanRef, IssueError, Jti, Naming,
    Outcome, RecordEvent, RecordOrigin, RecordState, Resource, SignError, SigningKey, TokenRequest,
    Ulid, Usd, chain_requires_approval, check_chain_budgets, check_fan_out, check_naming, delegate,
    may_issue_for, sign, transition,
};

use mandate_core::webhook::EventType;

use super::log::Logged;
use super::{AwaitedApproval, Completion, Ledger, LedgerError, Token, internal, new_aar_id};
use crate::clock::{Now, iso_s};
use crate::events::TokenRevokedData;
use crate::keyring::{self, KeyRevocation};
use crate::recordlog::events;
use crate::secrets::Kek;
use crate::store::agents;
use crate::store::dashboard;
use crate::store::orgs::{self as org_rows, Org};
use crate::store::records::{self, Credential, NewRecord, NewWorkflow};
use crate::store::tokens::{self, NewToken};
use mandate_core::status_list::StatusClaim;

/// A delegation request that reached its parent token.
#[derive(Debug, Clone)]
pub struct Delegation {
    pub parent: Jti,
    pub request: TokenRequest,
    pub child_random: [u8; 10],
    pub record_random: [u8; 10],
    /// The server's public address, under which the child's status list is.
    pub status_base: String,
    /// The W3C `traceparent` the call carried, kept on its record.
    pub traceparent: Option<String>,
    /// Whether the request carried an `Idempotency-Key`, by which a
    /// delegation that waits for an approval is fetched once approved.
    pub resumable: bool,
}

/// Why a delegation was refused; its denied `delegate` record is written.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The parent token is revoked or expired.
    Inactive(DenyReason),
    /// Core refused the child (the parent lacks `delegate`, the child would
    /// widen it, the chain is too deep, the parent has all its children),
    /// for the reason core gives.
    Issue(DenyReason, IssueError),
    /// One more action (the delegation) would break a budget of the chain.
    Budget(BudgetExceeded),
    /// The trust in force of the delegating chain is below the parent's
    /// `min_trust`.
    TrustTooLow,
    /// The approval the delegation waited for was denied, or expired.
    Approval(DenyReason),
}

impl Refusal {
    /// The reason the denied record gives.
    pub fn reason(&self) -> DenyReason {
        match self {
            Refusal::Inactive(reason) => *reason,
            Refusal::Issue(reason, _) => *reason,
            Refusal::Budget(exceeded) => (*exceeded).into(),
            Refusal::TrustTooLow => DenyReason::TrustTooLow,
            Refusal::Approval(reason) => *reason,
        }
    }
}

/// What came of a delegation.
#[derive(Debug, Clone)]
pub enum Delegated {
    /// The child, signed and stored, and the `delegate` record.
    Issued {
        child: Box<Claims>,
        compact_jwt: String,
        aar_id: AarId,
    },
    /// Refused, with the denied `delegate` record.
    Refused { aar_id: AarId, refusal: Refusal },
    /// A grant of the chain requires a human's approval of the delegation:
    /// its record waits, and repeating the request with its
    /// `Idempotency-Key` once approved issues the child.
    AwaitingApproval {
        aar_id: AarId,
        approval: AwaitedApproval,
    },
}

/// A child core allowed, with how its agent was named and what the
/// delegation is charged to.
struct Judged {
    child: Claims,
    naming: Naming,
    budgeted: super::Budgeted,
    trust: f64,
}

/// Who is revoking.
#[derive(Debug, Clone)]
pub enum Revoker {
    /// A human with an API key of an organisation: may revoke any token of
    /// it; another organisation's token is unknown.
    ApiKey(Org),
    /// An agent presenting its own token: may revoke it or a descendant.
    Token(Jti),
}

/// Most jtis a revocation answer lists; the rest are counted.
pub const REVOKED_LIST_LIMIT: usize = 1000;

/// What a revocation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revoked {
    /// The revoked token and its descendants, at most
    /// [`REVOKED_LIST_LIMIT`], sorted.
    pub jtis: Vec<String>,
    /// How many tokens the revocation covers in all.
    pub count: u64,
    /// Unix seconds.
    pub at: i64,
}

/// The largest status list entry a token may name: a token that fits
/// with it fits with any entry it is given.
const LARGEST_STATUS_IDX: u64 = u32::MAX as u64;

/// Refuses claims whose token would be over 8 KiB signed, before anything
/// is written: signed as they will be, with the longest status claim.
fn check_token_size(
    claims: &Claims,
    status_base: &str,
    key: &SigningKey,
) -> Result<(), LedgerError> {
    let mut trial = claims.clone();
    trial.status = Some(StatusClaim::for_index(status_base, LARGEST_STATUS_IDX).map_err(internal)?);
    match sign(&trial, key) {
        Ok(_) => Ok(()),
        Err(SignError::TooLarge) => Err(LedgerError::TokenTooLarge),
        Err(error) => Err(internal(error)),
    }
}

/// Whether a grant of the chain (`budgeted`: its tokens that carry
/// constraints) requires approval of delegating to `child_agent`
/// (`agent:<id>`): `delegate` is an act like any other. A child agent that
/// is no resource asks whenever any grant of the chain requires approval
/// of anything (fail closed).
fn requires_approval(budgeted: &super::Budgeted, child_agent: &str) -> bool {
    let constraints = budgeted.iter().map(|(_, constraints)| constraints);
    match (
        Action::parse(mandate_core::scope::DELEGATE_ACTION),
        Resource::parse(child_agent),
    ) {
        (Ok(action), Ok(resource)) => {
            chain_requires_approval(constraints, &action, &resource, Usd::ZERO)
        }
        _ => budgeted
            .iter()
            .any(|(_, constraints)| constraints.require_approval.is_some()),
    }
}

impl Ledger {
    /// Stores a token this server signed with `kid`, and appends its issue
    /// to the record log; a delegated one counts as a child of `parent`, a
    /// root one opens its workflow. The key is checked first, so a key
    /// revoked since the caller read the key ring leaves nothing changed.
    /// The caller checked the quotas ([`Ledger::check_token_quota`]) before
    /// writing anything.
    #[allow(
        clippy::too_many_arguments,
        reason = "each named at its few call sites"
    )]
    fn store_token(
        &mut self,
        org: Org,
        claims: &Claims,
        parent: Option<&Jti>,
        renewal: bool,
        kid: &str,
        issued_by: Option<&str>,
        now_ms: i64,
    ) -> Result<(), LedgerError> {
        if !tokens::note_signed(&self.conn, kid, claims.exp)? {
            return Err(LedgerError::SigningKeyRevoked);
        }
        let claims_text = tokens::claims_json(claims)?;
        let issued = events::token_issued(claims, &claims_text, kid);
        // A token's issue is logged at its `iat`, which its row keeps.
        let log_issued = self.append(org, claims.iat.saturating_mul(1000), issued)?;
        self.logged_in(Logged::Tokens, claims.jti.as_str())?;
        self.forget_standings();
        tokens::insert(
            &self.conn,
            &NewToken {
                org,
                claims,
                parent,
                renewal,
                kid,
                issued_by,
                claims_text: &claims_text,
                log_issued,
            },
        )?;
        self.touched.insert(org);
        if claims.svc_depth == 0 {
            records::open_workflow(
                &self.conn,
                &NewWorkflow {
                    org,
                    root: claims,
                    created_at: now_ms,
                },
            )?;
        }
        Ok(())
    }

    /// The status list reference of the next token: its index, and the
    /// list's URI under `base` (the server's public address).
    fn next_status(&mut self, base: &str) -> Result<StatusClaim, LedgerError> {
        let idx = self.allocate_status_idx()?;
        StatusClaim::for_index(base, idx).map_err(internal)
    }

    /// Signs and stores a root token of `org` issued on the API key
    /// `issued_by` (none for a consent given by a person an identity
    /// provider signed in), with the next status list index (the list's URI under
    /// `status_base`): the claims as core made them, signed here so the
    /// index is the ledger's to hand out. Its agent, when new, is
    /// registered as the token's human's; one another human owns is
    /// refused unless the key holds `issue_for_anyone` (`for_anyone`).
    #[allow(
        clippy::too_many_arguments,
        reason = "each named at its few call sites"
    )]
    pub fn store_root(
        &mut self,
        org: Org,
        mut claims: Claims,
        key: &SigningKey,
        issued_by: Option<&str>,
        for_anyone: bool,
        status_base: &str,
        now: Now,
    ) -> Result<(Claims, String), LedgerError> {
        self.enter(org)?;
        check_token_size(&claims, status_base, key)?;
        let agent = claims.agent_id().as_str().to_owned();
        let owner = agents::registered(&self.conn, org, &agent)?.map(|agent| agent.owner);
        let allowed = match &owner {
            None => true,
            Some(None) => for_anyone,
            Some(Some(owner)) => may_issue_for(Some(owner), &claims.svc_human, for_anyone),
        };
        if !allowed {
            return Err(LedgerError::AgentNotYours(
                "this agent id is registered to another human; issuing for it needs the issue_for_anyone permission (an owner's key)",
            ));
        }
        self.check_token_quota(org, now.s())?;
        if owner.is_none() {
            agents::register(&self.conn, org, &agent, &claims.svc_human, None)?;
        }
        claims.status = Some(self.next_status(status_base)?);
        let compact = sign(&claims, key).map_err(internal)?;
        self.store_token(org, &claims, None, false, key.kid(), issued_by, now.ms())?;
        Ok((claims, compact))
    }

    /// Stores what `org` knows the human `human` by (the newest label wins),
    /// in the transaction of the issue that tells it.
    pub fn label_human(
        &mut self,
        org: Org,
        human: &HumanRef,
        label: &str,
        now: Now,
    ) -> Result<(), LedgerError> {
        dashboard::label_human(&self.conn, org, human.as_str(), label, now.ms())?;
        Ok(())
    }

    /// Delegates from a parent token presented by its holder: core decides,
    /// then the registry (the child names the delegating agent, one
    /// registered under it, or a new agent), then the chain's trust in
    /// force against `min_trust` and its budgets, then whether a grant of
    /// the chain requires approval of `delegate`. The ledger records the
    /// `delegate` action either way, and signs and stores the child when
    /// allowed and no approval is needed.
    pub fn delegate(
        &mut self,
        delegation: Delegation,
        key: &SigningKey,
        now: Now,
    ) -> Result<Delegated, LedgerError> {
        let parent = self
            .token(&delegation.parent)?
            .ok_or(LedgerError::HolderInactive { expired: false })?;
        let org = parent.standing.org;
        let at = self.record_time(org, now.ms())?;
        self.check_record_quota(org, at)?;
        let child_agent = format!("agent:{}", delegation.request.agent_id);
        let aar_id = new_aar_id(at, delegation.record_random)?;
        let record = |state, delegated_jti, trust| NewRecord {
            aar_id: &aar_id,
            token: &parent.claims,
            action: mandate_core::scope::DELEGATE_ACTION,
            resource: &child_agent,
            state,
            result_hash: None,
            spend: Usd::ZERO,
            created_at: at,
            delegated_jti,
            credential: Credential::Token,
            traceparent: delegation.traceparent.as_deref(),
            origin: RecordOrigin::Delegate,
            trust,
            args_hash: None,
            args: None,
            relay_jkt: None,
        };
        let ulid =
            Ulid::new(u64::try_from(at).unwrap_or(0), delegation.child_random).map_err(internal)?;
        let judged = match self.judge_delegation(&parent, delegation.request, at, ulid)? {
            Ok(judged) => judged,
            Err((refusal, trust)) => {
                let state = transition(None, RecordEvent::Authorize(Err(refusal.reason())))
                    .map_err(internal)?;
                self.insert_record(org, &record(state, None, trust))?;
                return Ok(Delegated::Refused { aar_id, refusal });
            }
        };
        let by = super::outbox::ChargedBy {
            org,
            aar_id: &aar_id,
            at_ms: at,
        };
        if requires_approval(&judged.budgeted, &child_agent) {
            if !delegation.resumable {
                return Err(LedgerError::IdempotencyKeyRequired);
            }
            let state = transition(None, RecordEvent::RequestApproval).map_err(internal)?;
            let waiting = record(state, None, Some(judged.trust));
            self.insert_record(org, &waiting)?;
            let approval = self.request_approval(org, &waiting, parent.claims.exp)?;
            self.charge(&judged.budgeted, 0, 1, by)?;
            return Ok(Delegated::AwaitingApproval { aar_id, approval });
        }
        let Judged {
            mut child,
            naming,
            budgeted,
            trust,
        } = judged;
        let compact_jwt = self.issue_child(
            org,
            &parent,
            &mut child,
            naming,
            &delegation.status_base,
            key,
            at,
        )?;
        let state = transition(
            None,
            RecordEvent::RecordAction {
                decision: Ok(()),
                result: Outcome::Success,
            },
        )
        .map_err(internal)?;
        self.insert_record(org, &record(state, Some(&child.jti), Some(trust)))?;
        self.charge(&budgeted, 0, 1, by)?;
        Ok(Delegated::Issued {
            child: Box::new(child),
            compact_jwt,
            aar_id,
        })
    }

    /// Takes up a delegation that waited for an approval (`aar_id`, its
    /// `delegate` record), when its request is repeated with the same
    /// `Idempotency-Key`: still waiting, `None` (the stored answer
    /// stands); approved, the child is judged again (the parent's
    /// standing, core, the registry), signed, stored, and the record
    /// completed with it; denied or expired, refused. Budgets were charged
    /// when it was asked.
    pub fn resume_delegation(
        &mut self,
        aar_id: &AarId,
        delegation: Delegation,
        key: &SigningKey,
        now: Now,
    ) -> Result<Option<Delegated>, LedgerError> {
        self.store_records()?;
        let record =
            records::by_id(&self.conn, aar_id.as_str())?.ok_or(LedgerError::UnknownRecord)?;
        self.enter(record.org())?;
        // Read again under the organisation's lock (PostgreSQL).
        let record =
            records::by_id(&self.conn, aar_id.as_str())?.ok_or(LedgerError::UnknownRecord)?;
        let parent = self
            .token(&Jti::parse(&record.jti).map_err(internal)?)?
            .ok_or_else(|| internal("the record's token is missing"))?;
        if record.action != mandate_core::scope::DELEGATE_ACTION
            || parent.claims.jti != delegation.parent
        {
            return Err(internal("a stored delegation names another record"));
        }
        match record.state {
            RecordState::Pending => {}
            RecordState::Denied { reason } => {
                return Ok(Some(Delegated::Refused {
                    aar_id: aar_id.clone(),
                    refusal: Refusal::Approval(reason),
                }));
            }
            _ => return Ok(None),
        }
        let org = parent.standing.org;
        let at = now.ms();
        let ulid =
            Ulid::new(u64::try_from(at).unwrap_or(0), delegation.child_random).map_err(internal)?;
        let refused = |ledger: &mut Ledger, refusal: Refusal| {
            ledger.complete_delegation(
                &Completion {
                    aar_id: aar_id.clone(),
                    result: Outcome::Cancelled,
                    result_hash: None,
                    spend: None,
                    presented: Some(delegation.parent.clone()),
                    relay: None,
                },
                now,
            )?;
            Ok(Some(Delegated::Refused {
                aar_id: aar_id.clone(),
                refusal,
            }))
        };
        if let Some(reason) = parent.inactive_reason(at / 1000) {
            return refused(self, Refusal::Inactive(reason));
        }
        let mut child = match self.allowed_child(&parent, delegation.request, at, ulid)? {
            Ok(child) => child,
            Err(refusal) => return refused(self, refusal),
        };
        let naming = self.naming(org, &parent.claims, &child)?;
        let compact_jwt = self.issue_child(
            org,
            &parent,
            &mut child,
            naming,
            &delegation.status_base,
            key,
            at,
        )?;
        self.complete_delegation(
            &Completion {
                aar_id: aar_id.clone(),
                result: Outcome::Success,
                result_hash: None,
                spend: None,
                presented: Some(delegation.parent.clone()),
                relay: None,
            },
            now,
        )?;
        self.store_records()?;
        records::set_delegated(&self.conn, aar_id.as_str(), child.jti.as_str())?;
        Ok(Some(Delegated::Issued {
            child: Box::new(child),
            compact_jwt,
            aar_id: aar_id.clone(),
        }))
    }

    /// Registers the child's agent when new (a sub-agent of the delegating
    /// agent, with its owner), then signs and stores the child with the
    /// next status list index.
    #[allow(clippy::too_many_arguments, reason = "one call site each, all named")]
    fn issue_child(
        &mut self,
        org: Org,
        parent: &Token,
        child: &mut Claims,
        naming: Naming,
        status_base: &str,
        key: &SigningKey,
        at_ms: i64,
    ) -> Result<String, LedgerError> {
        check_token_size(child, status_base, key)?;
        self.check_token_quota(org, at_ms / 1000)?;
        if naming == Naming::New {
            let delegator = parent.claims.agent_id().as_str();
            let owner = agents::registered(&self.conn, org, delegator)?
                .and_then(|agent| agent.owner)
                .ok_or(LedgerError::AgentNotYours(
                    "the delegating agent has no owner; a delegation from it registers no agent",
                ))?;
            agents::register(
                &self.conn,
                org,
                child.agent_id().as_str(),
                &owner,
                Some(delegator),
            )?;
        }
        child.status = Some(self.next_status(status_base)?);
        let compact_jwt = sign(child, key).map_err(internal)?;
        self.store_token(
            org,
            child,
            Some(&parent.claims.jti),
            false,
            key.kid(),
            None,
            at_ms,
        )?;
        Ok(compact_jwt)
    }

    /// Signs and stores a renewal of `parent` (core `renew`: the same
    /// grant, a later `exp`), with the next status list index: a child of
    /// `parent` in the chain — revoked with it, its budgets shared — but
    /// no delegation: no record, not counted among the parent's children
    /// (docs/oauth.md, the access tokens of a grant).
    pub(super) fn issue_renewal(
        &mut self,
        org: Org,
        parent: &Claims,
        renewal: &mut Claims,
        status_base: &str,
        key: &SigningKey,
        at_ms: i64,
    ) -> Result<String, LedgerError> {
        check_token_size(renewal, status_base, key)?;
        self.check_token_quota(org, at_ms / 1000)?;
        renewal.status = Some(self.next_status(status_base)?);
        let compact = sign(renewal, key).map_err(internal)?;
        self.store_token(
            org,
            renewal,
            Some(&parent.jti),
            true,
            key.kid(),
            None,
            at_ms,
        )?;
        Ok(compact)
    }

    /// How the child names its agent: the delegating agent, one
    /// registered under it, or a new one; another's is refused.
    fn naming(&mut self, org: Org, parent: &Claims, child: &Claims) -> Result<Naming, LedgerError> {
        let conn = &self.conn;
        let naming = check_naming(parent.agent_id(), child.agent_id(), |agent: &AgentId| {
            agents::registered(conn, org, agent.as_str()).map(|r| r.map(|r| r.parent))
        })?;
        naming.map_err(|_| {
            LedgerError::AgentNotYours(
                "a delegation names a new agent or one registered under the delegating agent; this agent id is registered outside its subtree",
            )
        })
    }

    /// The child core makes of `request` under `parent` at `at_ms`, or why
    /// core refuses it. Input core refuses (a lifetime out of range, an
    /// invalid policy) is an error: nothing is recorded for it.
    fn allowed_child(
        &mut self,
        parent: &Token,
        request: TokenRequest,
        at_ms: i64,
        ulid: Ulid,
    ) -> Result<Result<Claims, Refusal>, LedgerError> {
        match check_fan_out(parent.standing.children)
            // No status list entry yet: the server does not publish lists.
            .and_then(|()| delegate(&parent.claims, request, at_ms / 1000, ulid, None))
        {
            Ok(child) => Ok(Ok(child)),
            Err(error @ IssueError::TtlOutOfRange) => Err(LedgerError::TtlOutOfRange(error)),
            Err(IssueError::Scope(error)) => Err(LedgerError::Frameworks(error)),
            Err(error) => match error.deny_reason() {
                Some(reason) => Ok(Err(Refusal::Issue(reason, error))),
                None => Err(internal(error)),
            },
        }
    }

    /// The child core makes of `request` under `parent` at `at_ms`, how it
    /// names its agent, the budgeted tokens of the chain to charge and the
    /// chain's trust in force; or why the delegation is refused (with the
    /// trust in force when it was judged). A child naming an agent outside
    /// the delegator's subtree is an error: nothing is recorded for it.
    fn judge_delegation(
        &mut self,
        parent: &Token,
        request: TokenRequest,
        at_ms: i64,
        ulid: Ulid,
    ) -> Result<Result<Judged, (Refusal, Option<f64>)>, LedgerError> {
        if let Some(reason) = parent.inactive_reason(at_ms / 1000) {
            return Ok(Err((Refusal::Inactive(reason), None)));
        }
        let child = match self.allowed_child(parent, request, at_ms, ulid)? {
            Ok(child) => child,
            Err(refusal) => return Ok(Err((refusal, None))),
        };
        let naming = self.naming(parent.standing.org, &parent.claims, &child)?;
        let trust = self.trust_in_force(parent, at_ms / 1000)?;
        let constraints = parent.claims.svc_constraints.as_ref();
        if !meets_trust_floor(constraints, Some(trust)) {
            return Ok(Err((Refusal::TrustTooLow, Some(trust))));
        }
        let budgeted = self.budgeted(&parent.claims)?;
        if let Err(exceeded) = check_chain_budgets(&self.usage(&budgeted)?, Usd::ZERO) {
            return Ok(Err((Refusal::Budget(exceeded), Some(trust))));
        }
        Ok(Ok(Judged {
            child,
            naming,
            budgeted,
            trust,
        }))
    }

    /// Revokes a token and every descendant. An agent may revoke only its
    /// own token and the tokens delegated from it, and only while its own
    /// token is active.
    pub fn revoke(
        &mut self,
        target: &Jti,
        reason: Option<&str>,
        by: &Revoker,
        now: Now,
    ) -> Result<Revoked, LedgerError> {
        let now_s = now.s();
        let token = self.token(target)?.ok_or(LedgerError::UnknownToken)?;
        if let Revoker::ApiKey(org) = by
            && token.standing.org != *org
        {
            return Err(LedgerError::UnknownToken);
        }
        if let Revoker::Token(revoker) = by {
            let own = self
                .token(revoker)?
                .ok_or(LedgerError::HolderInactive { expired: false })?;
            // Another organisation's token is told what naming a token
            // that does not exist tells.
            if token.standing.org != own.standing.org {
                return Err(LedgerError::UnknownToken);
            }
            if let Some(reason) = own.inactive_reason(now_s) {
                return Err(LedgerError::HolderInactive {
                    expired: reason == DenyReason::TokenExpired,
                });
            }
            if !token.claims.is_governed_by(revoker) {
                return Err(LedgerError::NotAnAncestor);
            }
        }
        let mut jtis = Vec::new();
        let mut ended = Vec::new();
        let mut count = 0u64;
        let cause = target.hash();
        for token in tokens::subtree(&self.conn, target)? {
            count += 1;
            if !token.revoked {
                self.end_token(&token, cause.as_str(), reason, now)?;
                ended.push(token.jti.clone());
            }
            if jtis.len() < REVOKED_LIST_LIMIT {
                jtis.push(token.jti);
            }
        }
        jtis.sort();
        if !ended.is_empty() {
            self.report_revocation(&token, reason, ended.len() as u64, now)?;
            self.expire_approvals_of(&ended, now)?;
        }
        Ok(Revoked {
            jtis,
            count,
            at: now_s,
        })
    }

    /// Reports a revocation of `token` that ended `count` tokens (it and
    /// its descendants not revoked before) as `token.revoked`.
    fn report_revocation(
        &mut self,
        token: &Token,
        reason: Option<&str>,
        count: u64,
        now: Now,
    ) -> Result<(), LedgerError> {
        let claims = &token.claims;
        let data = TokenRevokedData {
            jth: claims.jth().to_string(),
            agent_id: claims.agent_id().to_string(),
            provenance_ref: claims.svc_prov.to_string(),
            delegation_depth: claims.svc_depth,
            reason: reason.map(str::to_owned),
            tokens_revoked: count,
            revoked_at: iso_s(now.s()),
        };
        self.emit(token.standing.org, now.ms(), EventType::TokenRevoked, &data)
    }

    /// Revokes one token not revoked before, because `cause` (its jti hash,
    /// itself or an ancestor) was revoked: the row, its leaf in the record
    /// log, and its bit in its status list.
    fn end_token(
        &mut self,
        token: &tokens::InSubtree,
        cause: &str,
        reason: Option<&str>,
        now: Now,
    ) -> Result<(), LedgerError> {
        let event = events::token_revoked(&token.jth, cause, reason)?;
        // Logged at the second its row keeps.
        let log = self.append(token.org, now.s().saturating_mul(1000), event)?;
        self.logged_in(Logged::Tokens, &token.jti)?;
        self.forget_standings();
        tokens::revoke(
            &self.conn,
            &token.jti,
            &tokens::Revocation {
                at: now.s(),
                reason,
                cause,
                log,
            },
        )?;
        if let Some(idx) = token.status_idx {
            self.set_revoked(idx, now.ms())?;
        }
        Ok(())
    }

    /// Revokes a signing key, and with it every token it signed and every
    /// descendant (reason [`keyring::KEY_REVOKED_REASON`]; each token is its
    /// own cause); revoking the active key rotates first. `None` when no key
    /// has this kid. On PostgreSQL it takes every organisation's lock (as
    /// each write takes its own, first): no host then judges a write by a
    /// token the revocation is ending.
    pub fn revoke_signing_key(
        &mut self,
        kek: &Kek,
        kid: &str,
        now: Now,
    ) -> Result<Option<KeyRevocation>, LedgerError> {
        if self.shared {
            org_rows::lock_all(&self.conn)?;
        }
        let Some(mut revocation) = keyring::revoke_key(&self.conn, kek, kid, now)? else {
            return Ok(None);
        };
        let mut ended = Vec::new();
        for token in tokens::signed_with(&self.conn, kid)? {
            if !token.revoked {
                let jth = token.jth.clone();
                self.end_token(&token, &jth, Some(keyring::KEY_REVOKED_REASON), now)?;
                revocation.tokens_revoked += 1;
                let jti = Jti::parse(&token.jti).map_err(internal)?;
                if let Some(ended_token) = self.token(&jti)? {
                    self.report_revocation(
                        &ended_token,
                        Some(keyring::KEY_REVOKED_REASON),
                        1,
                        now,
                    )?;
                }
                ended.push(token.jti);
            }
        }
        self.expire_approvals_of(&ended, now)?;
        Ok(Some(revocation))
    }
}
