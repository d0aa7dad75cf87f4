//! The bridge from committed records to OpenTelemetry spans: once a
//! record has reached where it ends (completed or denied), its span is
//! read from the database and handed to the exporter, off the request's
//! path. Nothing here runs unless `[otel] endpoint` is set.

use mandate_core::trace::TraceParent;
use mandate_core::{AarId, Action, AgentId, Jti, OrgId, ProvenanceRef, Resource};

use crate::AppState;
use crate::otel::{RecordSpan, SpanOutcome, SpanParent};
use crate::store::StoreError;
use crate::store::orgs;
use crate::store::records::{self, Record};

/// Exports the span of record `aar_id` once it has committed, when
/// telemetry is on; returns at once. A record still pending or awaiting
/// approval is exported later, when it ends.
pub fn export(state: &AppState, aar_id: &AarId) {
    let Some(telemetry) = state.telemetry.clone() else {
        return;
    };
    let store = state.store.clone();
    let id = aar_id.to_string();
    state.span_tasks.spawn(async move {
        let read = store
            .lookup(move |conn| {
                let Some(record) = records::by_id(conn, &id)? else {
                    return Ok::<_, StoreError>(None);
                };
                let org = orgs::by_number(conn, record.org())?.map(|row| row.id);
                Ok(org.map(|org| (record, org)))
            })
            .await;
        match read {
            Ok(Some((record, org))) => match span_of(&record, &org) {
                Some(span) if span.outcome.ends() => telemetry.record(&span),
                Some(_) => {}
                None => tracing::warn!("a stored record does not make a span"),
            },
            Ok(None) => {}
            Err(error) => tracing::warn!(%error, "reading a record for its span failed"),
        }
    });
}

/// The span of a stored record of the organisation `org_id`.
fn span_of(record: &Record, org_id: &str) -> Option<RecordSpan> {
    let parent = record
        .traceparent
        .as_deref()
        .and_then(|text| TraceParent::parse(text).ok())
        .map(|parent| SpanParent {
            trace_id: parent.trace_id.to_bytes(),
            span_id: parent.parent_id.to_bytes(),
        });
    Some(RecordSpan {
        aar_id: AarId::parse(&record.aar_id).ok()?,
        provenance_ref: ProvenanceRef::parse(&record.provenance_ref).ok()?,
        agent_id: AgentId::parse(&record.agent_id).ok()?,
        org_id: OrgId::parse(org_id).ok()?,
        token_jth: Jti::parse(&record.jti).ok()?.hash(),
        action: Action::parse(&record.action).ok()?,
        resource: Resource::parse(&record.resource).ok()?,
        outcome: SpanOutcome::of(&record.state),
        spend: record.spend,
        created_at_ms: record.created_at,
        completed_at_ms: record.completed_at,
        parent,
    })
}
