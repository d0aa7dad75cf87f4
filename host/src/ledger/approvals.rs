//! Approval before the act: the approval an authorized attempt waits for
//! when a grant of its chain requires one, and its decision — by a person
//! with a `decide` key, or by time (expiry, or the revocation of the
//! record's token). Core decides every transition; the ledger stores it,
//! logs it, releases what was reserved on a no, and reports it.

use mandate_core::tlog::{ApprovalDecided, LogEvent};
use mandate_core::webhook::EventType;
use mandate_core::{AarId, ApprovalDecision, ApprovalId, Jti, KeyId, RecordState, Usd, transition};

use super::acts::AwaitedApproval;
use super::log::Logged;
use super::outbox::ChargedBy;
use super::{Ledger, LedgerError, internal};
use crate::clock::{Now, iso_ms};
use crate::events::ApprovalData;
use crate::store::approvals::{self as rows, Approval, ApprovalStatus, Decided};
use crate::store::orgs::Org;
use crate::store::records::{self, Credential, NewRecord, Record, SummaryKey, micros};

/// How many lapsed approvals one write expires at most.
pub const EXPIRY_BATCH: u32 = 100;

/// An approval with the record that waits (or waited) for it.
#[derive(Debug, Clone)]
pub struct ApprovalView {
    pub approval: Approval,
    pub record: Record,
}

impl ApprovalView {
    /// The approval as its events carry it.
    pub fn data(&self) -> ApprovalData {
        let (approval, record) = (&self.approval, &self.record);
        ApprovalData {
            approval_id: approval.id.clone(),
            aar_id: record.shown_aar_id().map(str::to_owned),
            status: approval.status.as_str().to_owned(),
            agent_id: record.agent_id.clone(),
            provenance_ref: record.provenance_ref.clone(),
            action: record.action.clone(),
            resource: record.resource.clone(),
            spend_usd: record.reserved.unwrap_or(record.spend).as_f64(),
            delegation_depth: record.delegation_depth,
            requested_at: iso_ms(approval.requested_at),
            expires_at: iso_ms(approval.expires_at),
            decided_at: approval.decided_at.map(iso_ms),
            decided_by: approval.decided_by.clone(),
            note: approval.note.clone(),
        }
    }
}

/// The approval id of a record (a record waits for one approval at most):
/// `apr_` with the record's ULID for a record made with the token itself;
/// for one made with a bare `vat_jti`, whose `aar_id` completes it, a ULID
/// of the same time whose random part is drawn from a hash of the `aar_id`
/// — an approval id is shown to every reviewer and event reader, and must
/// not lead back to the record's id (80 random bits stand between them).
pub fn approval_id_of(aar_id: &AarId, credential: Credential) -> Result<ApprovalId, LedgerError> {
    use sha2::Digest as _;
    let ulid = aar_id.ulid();
    if credential == Credential::Token {
        return Ok(ApprovalId::new(ulid));
    }
    let digest: [u8; 32] = sha2::Sha256::new()
        .chain_update(b"mandate approval id\0")
        .chain_update(aar_id.as_str().as_bytes())
        .finalize()
        .into();
    let [r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, ..] = digest;
    let random = [r0, r1, r2, r3, r4, r5, r6, r7, r8, r9];
    let hidden = mandate_core::Ulid::new(ulid.unix_millis(), random).map_err(internal)?;
    Ok(ApprovalId::new(hidden))
}

impl Ledger {
    /// Opens the approval a record just stored in `awaiting_approval`
    /// waits for: it lapses after the approval lifetime, and never after
    /// the token it was made with (unix seconds `token_exp`). Reports
    /// `approval.requested`.
    pub(super) fn request_approval(
        &mut self,
        org: Org,
        record: &NewRecord<'_>,
        token_exp: i64,
    ) -> Result<AwaitedApproval, LedgerError> {
        let requested_at = record.created_at;
        let expires_at = requested_at
            .saturating_add(self.approval_ttl_ms)
            .min(token_exp.saturating_mul(1000));
        let approval_id = approval_id_of(record.aar_id, record.credential)?;
        rows::insert(
            &self.conn,
            approval_id.as_str(),
            record.aar_id.as_str(),
            org,
            requested_at,
            expires_at,
        )?;
        if self.events {
            let view = self.approval_view(approval_id.as_str())?;
            self.emit(
                org,
                requested_at,
                EventType::ApprovalRequested,
                &view.data(),
            )?;
        }
        Ok(AwaitedApproval {
            approval_id,
            expires_at,
        })
    }

    fn approval_view(&mut self, id: &str) -> Result<ApprovalView, LedgerError> {
        let approval = rows::by_id(&self.conn, id)?.ok_or(LedgerError::UnknownApproval)?;
        self.store_records()?;
        let record = records::by_id(&self.conn, &approval.aar_id)?
            .ok_or_else(|| internal("an approval's record is missing"))?;
        Ok(ApprovalView { approval, record })
    }

    /// A person's decision on an approval of `org`, by the API key `by`
    /// (approved or denied; an expiry is time's). Another organisation's
    /// approval is unknown; one expired before (by the timer, or by a
    /// revocation) is [`LedgerError::ApprovalExpired`]; one a person
    /// decided before is `not_awaiting_approval`; one that lapsed before
    /// the timer expired it is expired now, and the answer says so (its
    /// status is not the decision asked for).
    pub fn decide(
        &mut self,
        org: Org,
        id: &ApprovalId,
        decision: ApprovalDecision,
        note: Option<&str>,
        by: &KeyId,
        now: Now,
    ) -> Result<ApprovalView, LedgerError> {
        if !decision.is_human() {
            return Err(internal("a person decides approve or deny"));
        }
        self.enter(org)?;
        let approval = rows::by_id(&self.conn, id.as_str())?
            .filter(|approval| approval.org == org)
            .ok_or(LedgerError::UnknownApproval)?;
        if approval.status == ApprovalStatus::Decided(ApprovalDecision::Expired) {
            return Err(LedgerError::ApprovalExpired);
        }
        if approval.status == ApprovalStatus::Pending && now.ms() >= approval.expires_at {
            // Lapsed, and the timer has not come by yet: time decided
            // first. The caller sees it expired.
            let at = approval.expires_at;
            return self.settle(approval, ApprovalDecision::Expired, None, None, at);
        }
        self.settle(approval, decision, note, Some(by.as_str()), now.ms())
    }

    /// Expires up to [`EXPIRY_BATCH`] approvals that lapsed by `now`;
    /// answers the records they closed.
    pub fn expire_due(&mut self, now: Now) -> Result<Vec<AarId>, LedgerError> {
        let due = rows::due(&self.conn, now.ms(), EXPIRY_BATCH)?;
        let mut expired = Vec::new();
        for approval in due {
            self.enter(approval.org)?;
            // Read again under the organisation's lock: another host may
            // have decided it since.
            let Some(approval) = rows::by_id(&self.conn, &approval.id)?
                .filter(|approval| approval.status == ApprovalStatus::Pending)
            else {
                continue;
            };
            let at = approval.expires_at.max(approval.requested_at);
            let aar_id = AarId::parse(&approval.aar_id).map_err(internal)?;
            self.settle(approval, ApprovalDecision::Expired, None, None, at)?;
            expired.push(aar_id);
        }
        Ok(expired)
    }

    /// Expires, at `now`, every approval that records made with the tokens
    /// `jtis` (just revoked) wait for: nobody can act on them any more.
    pub(super) fn expire_approvals_of(
        &mut self,
        jtis: &[String],
        now: Now,
    ) -> Result<(), LedgerError> {
        self.store_records()?;
        for approval in rows::pending_of_tokens(&self.conn, jtis)? {
            self.settle(approval, ApprovalDecision::Expired, None, None, now.ms())?;
        }
        Ok(())
    }

    /// Moves an approval and its record by `decision` at `at_ms`: the
    /// record to `pending` (approved) or `denied`, releasing what was
    /// reserved; the decision to the approval, the record log and the
    /// outbox.
    fn settle(
        &mut self,
        approval: Approval,
        decision: ApprovalDecision,
        note: Option<&str>,
        by: Option<&str>,
        at_ms: i64,
    ) -> Result<ApprovalView, LedgerError> {
        self.store_records()?;
        let mut record = records::by_id(&self.conn, &approval.aar_id)?
            .ok_or_else(|| internal("an approval's record is missing"))?;
        if approval.status != ApprovalStatus::Pending {
            return Err(LedgerError::Lifecycle(
                mandate_core::RecordError::NotAwaitingApproval,
            ));
        }
        let before = record.state;
        let state = transition(Some(before), decision.event()).map_err(LedgerError::Lifecycle)?;
        let aar_id = AarId::parse(&record.aar_id).map_err(internal)?;
        let event = LogEvent::ApprovalDecided(ApprovalDecided {
            aar_id: aar_id.clone(),
            decision,
            note: note.map(str::to_owned),
            by: by.map(KeyId::parse).transpose().map_err(internal)?,
        });
        let log = self.append(record.org(), at_ms, event)?;
        self.logged_in(Logged::Approvals, &approval.id)?;
        rows::decide(
            &self.conn,
            &approval.id,
            &Decided {
                decision,
                at: at_ms,
                by,
                note,
                log,
            },
        )?;
        let reserved = record.spend;
        let spend = match state {
            RecordState::Pending => reserved,
            _ => Usd::ZERO,
        };
        records::decide(&self.conn, &record.aar_id, state, spend)?;
        if !self.keep_args && record.args.is_some() {
            records::forget_args(&self.conn, &record.aar_id)?;
        }
        if state != RecordState::Pending {
            let jti = Jti::parse(&record.jti).map_err(internal)?;
            let claims = self
                .token(&jti)?
                .ok_or_else(|| internal("the record's token is missing"))?
                .claims;
            let budgeted = self.budgeted(&claims)?;
            let by = ChargedBy {
                org: record.org(),
                aar_id: &aar_id,
                at_ms,
            };
            self.charge(&budgeted, -micros(reserved), -1, by)?;
        }
        self.counters.record_moved(
            record.org(),
            &record.agent_id,
            at_ms,
            record.origin,
            Some(&before),
            &state,
        );
        if by.is_some() {
            self.counters.approval_decided(
                record.org(),
                at_ms,
                at_ms.saturating_sub(approval.requested_at).max(0),
            );
        }
        for (key_state, change) in [(before, -1), (state, 1)] {
            self.counters.count_in_summary(
                &SummaryKey {
                    provenance_ref: &record.provenance_ref,
                    agent_id: &record.agent_id,
                    action: &record.action,
                    result_key: key_state.result_key(),
                },
                change,
            );
        }
        record.state = state;
        record.spend = spend;
        let view = ApprovalView {
            approval: Approval {
                status: ApprovalStatus::Decided(decision),
                decided_at: Some(at_ms),
                decided_by: by.map(str::to_owned),
                note: note.map(str::to_owned),
                log_decided: log,
                ..approval
            },
            record,
        };
        self.emit(
            view.record.org(),
            at_ms,
            EventType::ApprovalDecided,
            &view.data(),
        )?;
        Ok(view)
    }
}
