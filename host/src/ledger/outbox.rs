//! Events written to the outbox in the transaction of the write they
//! report (`crate::events` lists them): nothing reported is lost once the
//! write is acknowledged, and nothing is reported that did not commit.

use mandate_core::webhook::{self, EventTime, EventType, MessageId};
use mandate_core::{AarId, Claims, Constraints, Jth, Usage, scope::Limit, thresholds_reached};
use serde::Serialize;

use super::{Ledger, LedgerError, internal};
use crate::clock::iso_ms;
use crate::events::{BudgetThresholdData, RecordData};
use crate::store::events::{self as rows, StoredEvent};
use crate::store::orgs::Org;
use crate::store::records::{self, NewRecord, Record};

/// The record whose write changed a chain's budgets.
#[derive(Debug, Clone, Copy)]
pub(super) struct ChargedBy<'a> {
    pub org: Org,
    pub aar_id: &'a AarId,
    /// Unix milliseconds.
    pub at_ms: i64,
}

impl Ledger {
    /// Writes an event of `org` at `at_ms` to the outbox (when events are
    /// on): its payload, `{data, timestamp, type}`, is made once, here, and
    /// delivered as it is. The event is kept with the group's others and
    /// stored with them before the group commits (its `seq` is taken now).
    pub(super) fn emit<T: Serialize>(
        &mut self,
        org: Org,
        at_ms: i64,
        kind: EventType,
        data: &T,
    ) -> Result<(), LedgerError> {
        if !self.events {
            return Ok(());
        }
        let at = EventTime::from_unix_millis(at_ms).map_err(internal)?;
        let payload = webhook::payload(kind, at, data).map_err(internal)?;
        let seq = self.allocate_event_seq()?;
        let ulid =
            mandate_core::Ulid::new(u64::try_from(at_ms).unwrap_or(0), crate::random::bytes())
                .map_err(internal)?;
        self.events_held.push(rows::row(StoredEvent {
            seq,
            id: MessageId::new(ulid).to_string(),
            org,
            kind: kind.as_str().to_owned(),
            created_at: at_ms,
            payload,
        }));
        self.buffered += 1;
        Ok(())
    }

    /// Deletes up to `limit` events created before `before_ms` that every
    /// webhook of their organisation has been sent; answers how many.
    pub fn prune_events(&mut self, before_ms: i64, limit: u32) -> Result<usize, LedgerError> {
        self.store_events()?;
        Ok(rows::prune(&self.conn, before_ms, limit)?)
    }

    /// Reports a record's state as a `record.*` event.
    pub(super) fn emit_record(
        &mut self,
        kind: EventType,
        record: &Record,
        at_ms: i64,
    ) -> Result<(), LedgerError> {
        let data = record_data(record);
        self.emit(record.org(), at_ms, kind, &data)
    }

    /// Reports each threshold of a budget of the chain that a charge made
    /// its usage reach: `before` is the usage the charge started from.
    pub(super) fn report_thresholds(
        &mut self,
        jth: &Jth,
        constraints: &Constraints,
        before: Usage,
        after: Usage,
        by: ChargedBy<'_>,
    ) -> Result<(), LedgerError> {
        if !self.events {
            return Ok(());
        }
        let reached = thresholds_reached(constraints, before, after);
        if reached.is_empty() {
            return Ok(());
        }
        let claims: std::sync::Arc<Claims> = self
            .claims(jth)?
            .ok_or_else(|| internal("a budgeted token is missing"))?;
        // The charging record is written before its charge, in this
        // transaction; its id is left out while it completes it.
        self.store_records()?;
        let aar_id = records::by_id(&self.conn, by.aar_id.as_str())?
            .and_then(|record| record.shown_aar_id().map(str::to_owned));
        for threshold in reached {
            let (budget, used, limit) = match threshold.limit {
                Limit::MaxSpendUsd => (
                    "max_spend_usd",
                    after.spent.as_f64(),
                    constraints.max_spend_usd.map_or(0.0, |max| max.as_f64()),
                ),
                Limit::MaxActions => (
                    "max_actions",
                    after.actions as f64,
                    constraints.max_actions.unwrap_or(0) as f64,
                ),
                // A cap on one act is not used up over time: core reports
                // no threshold of it.
                Limit::MaxSpendPerActionUsd => continue,
            };
            let data = BudgetThresholdData {
                jth: jth.to_string(),
                agent_id: claims.agent_id().to_string(),
                provenance_ref: claims.svc_prov.to_string(),
                budget: budget.to_owned(),
                threshold_percent: threshold.percent,
                used,
                limit,
                aar_id: aar_id.clone(),
            };
            self.emit(by.org, by.at_ms, EventType::BudgetThreshold, &data)?;
        }
        Ok(())
    }
}

/// A record as `record.*` events carry it.
pub(super) fn record_data(record: &Record) -> RecordData {
    RecordData {
        aar_id: record.aar_id.clone(),
        agent_id: record.agent_id.clone(),
        provenance_ref: record.provenance_ref.clone(),
        action: record.action.clone(),
        resource: record.resource.clone(),
        status: record.state.status().as_str().to_owned(),
        result: record.state.result().map(|r| r.as_str().to_owned()),
        deny_reason: record.state.deny_reason().map(|r| r.code().to_owned()),
        rating: record.state.rating().map(|r| r.as_str().to_owned()),
        note: record.note.clone(),
        rated_by: record.rated_by.clone(),
        spend_usd: record.spend.as_f64(),
        delegation_depth: record.delegation_depth,
        created_at: iso_ms(record.created_at),
    }
}

/// A record about to be stored, as `record.*` events carry it.
pub(super) fn new_record_data(record: &NewRecord<'_>) -> RecordData {
    let claims = record.token;
    RecordData {
        aar_id: record.aar_id.to_string(),
        agent_id: claims.agent_id().to_string(),
        provenance_ref: claims.svc_prov.to_string(),
        action: record.action.to_owned(),
        resource: record.resource.to_owned(),
        status: record.state.status().as_str().to_owned(),
        result: record.state.result().map(|r| r.as_str().to_owned()),
        deny_reason: record.state.deny_reason().map(|r| r.code().to_owned()),
        rating: None,
        note: None,
        rated_by: None,
        spend_usd: record.spend.as_f64(),
        delegation_depth: claims.svc_depth,
        created_at: iso_ms(record.created_at),
    }
}
