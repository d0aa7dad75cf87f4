//! OpenTelemetry: each action record, once its write has committed, as one
//! span sent to a collector over OTLP/HTTP (protobuf).
//!
//! Off unless `[otel] endpoint` is set; off, no [`Telemetry`] exists, no
//! thread is started and a record costs nothing. On, [`Telemetry::record`]
//! hands a finished span to the SDK's batch processor and returns at once:
//! a thread of its own sends batches (every 5 s, or at 512 spans) with a
//! blocking HTTP client on a thread of its own too, never a worker of the
//! server's runtime. The queue holds 2,048 spans; past that, spans are
//! dropped (counted, with one warning in the log) rather than slow a
//! request down. Telemetry may lose spans (a full queue, a collector down
//! beyond the export timeout, a crash before a batch left); the audit trail
//! never depends on it: the record and the record log are the truth, and
//! this module only copies from them after they have committed.
//!
//! The span follows the OpenTelemetry GenAI semantic conventions' *execute
//! tool* span (`gen_ai.execute_tool.internal`, status Development), as of
//! semantic-conventions v1.41.0 (`docs/gen-ai/gen-ai-spans.md`, the last
//! release that carried them; they have since moved, unchanged for this
//! span, to the `semantic-conventions-genai` repository) and its general
//! *Recording errors* rules (`docs/general/recording-errors.md`):
//!
//! - name `execute_tool {gen_ai.tool.name}`, kind `INTERNAL`;
//! - `gen_ai.operation.name` = `execute_tool` and `gen_ai.tool.name` = the
//!   action (both required), given when the span starts;
//! - `gen_ai.agent.id` = the agent id (a registry attribute the convention
//!   puts on agent spans; Mandate knows no agent name apart from its id, so
//!   `gen_ai.agent.name` is not set);
//! - `gen_ai.tool.call.id` is **not** set: the conventions define it as the
//!   model's tool-call identifier (the `id` of a `tool_call` part), which
//!   Mandate never sees; the record's id is `mandate.aar_id`;
//! - a denied record or a completed one whose result is not `success` ended
//!   in an error: status `Error` and `error.type` (the deny reason's code,
//!   or the result: `error`, `timeout`, `cancelled`); otherwise the status is
//!   left unset, as the rules require;
//! - Mandate's own values under `mandate.` (docs/decisions.md has the table).
//!
//! The span starts when the record was created and ends when it was
//! completed (when it was created, for a record not completed); with a W3C
//! trace context from the agent ([`SpanParent`]) it is a child of the
//! agent's span, otherwise the root of a trace of its own. Every record is
//! exported: the agent's sampling flag is not consulted.
//!
//! What this module refuses to know: HTTP requests and handlers, the ledger,
//! the database. It takes plain typed values; a jti cannot be given to it
//! (only its hash, [`Jth`]), nor an API key.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use mandate_core::{
    AarId, Action, AgentId, DenyReason, Jth, OrgId, Outcome, ProvenanceRef, RecordState, Resource,
    Usd,
};
use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt as _, TraceFlags, TraceId,
    TraceState, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource as OtelResource;
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider};

use crate::config::OtelConfig;

/// The schema of the conventions followed (see the module's comment).
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.41.0";

/// The OTLP/HTTP path of traces under the collector's base address.
const TRACES_PATH: &str = "/v1/traces";

/// The W3C trace context an agent sent with its call: the span Mandate's
/// span is a child of. An all-zero id (invalid in W3C Trace Context) makes
/// the span a root instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanParent {
    pub trace_id: [u8; 16],
    /// The agent's span (the `parent-id` of a `traceparent`).
    pub span_id: [u8; 8],
}

/// Where a record stands, as its span shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanOutcome {
    /// Completed with the agent's result (a rated record is completed too).
    Completed(Outcome),
    Denied(DenyReason),
    /// Authorized, not yet completed.
    Pending,
    /// Waiting for a human's approval.
    AwaitingApproval,
}

impl SpanOutcome {
    /// The outcome of a record in `state`.
    pub fn of(state: &RecordState) -> SpanOutcome {
        match *state {
            RecordState::AwaitingApproval => SpanOutcome::AwaitingApproval,
            RecordState::Pending => SpanOutcome::Pending,
            RecordState::Completed { result } | RecordState::Rated { result, .. } => {
                SpanOutcome::Completed(result)
            }
            RecordState::Denied { reason } => SpanOutcome::Denied(reason),
        }
    }

    /// Whether the record has ended (completed or denied): its span is
    /// exported then, once.
    pub fn ends(self) -> bool {
        matches!(self, SpanOutcome::Completed(_) | SpanOutcome::Denied(_))
    }

    /// `mandate.outcome`.
    pub fn as_str(self) -> &'static str {
        match self {
            SpanOutcome::Completed(_) => "completed",
            SpanOutcome::Denied(_) => "denied",
            SpanOutcome::Pending => "pending",
            SpanOutcome::AwaitingApproval => "awaiting_approval",
        }
    }

    /// `error.type` when the action ended in an error, else `None`.
    pub fn error_type(self) -> Option<&'static str> {
        match self {
            SpanOutcome::Completed(Outcome::Success)
            | SpanOutcome::Pending
            | SpanOutcome::AwaitingApproval => None,
            SpanOutcome::Completed(result) => Some(result.as_str()),
            SpanOutcome::Denied(reason) => Some(reason.code()),
        }
    }
}

/// One action record, as its span is made from it: plain values, read
/// after the record's write has committed.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSpan {
    pub aar_id: AarId,
    pub provenance_ref: ProvenanceRef,
    pub agent_id: AgentId,
    pub org_id: OrgId,
    /// The hash of the token's jti (never the jti: a jti names a token an
    /// agent call may act with).
    pub token_jth: Jth,
    pub action: Action,
    pub resource: Resource,
    pub outcome: SpanOutcome,
    pub spend: Usd,
    /// Unix milliseconds.
    pub created_at_ms: i64,
    /// Unix milliseconds.
    pub completed_at_ms: Option<i64>,
    /// The agent's span, from the `traceparent` it sent.
    pub parent: Option<SpanParent>,
}

impl RecordSpan {
    /// The span's name: `execute_tool {gen_ai.tool.name}`.
    pub fn name(&self) -> String {
        format!("execute_tool {}", self.action.as_str())
    }

    /// The span's attributes, the conventions' first.
    pub fn attributes(&self) -> Vec<KeyValue> {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", self.action.as_str().to_owned()),
            KeyValue::new("gen_ai.agent.id", self.agent_id.as_str().to_owned()),
        ];
        if let Some(error_type) = self.outcome.error_type() {
            attributes.push(KeyValue::new("error.type", error_type));
        }
        attributes.extend([
            KeyValue::new("mandate.aar_id", self.aar_id.as_str().to_owned()),
            KeyValue::new(
                "mandate.provenance_ref",
                self.provenance_ref.as_str().to_owned(),
            ),
            KeyValue::new("mandate.resource", self.resource.as_str().to_owned()),
            KeyValue::new("mandate.org_id", self.org_id.as_str().to_owned()),
            KeyValue::new("mandate.token.jth", self.token_jth.as_str().to_owned()),
            KeyValue::new("mandate.outcome", self.outcome.as_str()),
            KeyValue::new("mandate.spend_usd", self.spend.as_f64()),
        ]);
        match self.outcome {
            SpanOutcome::Completed(result) => {
                attributes.push(KeyValue::new("mandate.result", result.as_str()));
            }
            SpanOutcome::Denied(reason) => {
                attributes.push(KeyValue::new("mandate.deny_reason", reason.code()));
            }
            SpanOutcome::Pending | SpanOutcome::AwaitingApproval => {}
        }
        attributes
    }

    /// When the span starts and ends: created, and completed (or created).
    fn times(&self) -> (SystemTime, SystemTime) {
        let start = unix_ms(self.created_at_ms);
        let end = self.completed_at_ms.map_or(start, unix_ms).max(start);
        (start, end)
    }
}

fn unix_ms(ms: i64) -> SystemTime {
    let ms = u64::try_from(ms).unwrap_or(0);
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
}

/// The exporter: built at start when `[otel] endpoint` is set, shut down
/// (its last spans sent) when the server stops. Cloning shares it.
#[derive(Debug, Clone)]
pub struct Telemetry {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    /// How long the last export at shutdown may take.
    shutdown_timeout: Duration,
}

impl Telemetry {
    /// The exporter `config` asks for: `None` when no endpoint is set. An
    /// endpoint that is not an absolute http(s) URL, or a header that HTTP
    /// would refuse, stops the start.
    pub fn start(config: &OtelConfig) -> anyhow::Result<Option<Telemetry>> {
        let Some(endpoint) = &config.endpoint else {
            return Ok(None);
        };
        let url = traces_url(endpoint)?;
        validate(config)?;
        let headers: HashMap<String, String> = config
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        // The blocking client's TLS (https endpoints) uses the process's
        // provider, as every other outgoing client does.
        crate::install_tls_provider();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url)
            .with_timeout(config.timeout())
            .with_headers(headers)
            .build()
            .context("cannot start the OpenTelemetry exporter")?;
        let resource = OtelResource::builder()
            .with_service_name(config.service_name.clone())
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_sampler(Sampler::AlwaysOn)
            .with_resource(resource)
            .build();
        let scope = InstrumentationScope::builder("mandate")
            .with_version(env!("CARGO_PKG_VERSION"))
            .with_schema_url(SCHEMA_URL)
            .build();
        let tracer = provider.tracer_with_scope(scope);
        Ok(Some(Telemetry {
            provider,
            tracer,
            shutdown_timeout: config.timeout() + Duration::from_secs(1),
        }))
    }

    /// Hands the record's span to the batch processor; never waits (a span
    /// that finds the queue full is dropped).
    pub fn record(&self, record: &RecordSpan) {
        let parent = match record.parent {
            Some(parent) => Context::new().with_remote_span_context(SpanContext::new(
                TraceId::from_bytes(parent.trace_id),
                SpanId::from_bytes(parent.span_id),
                TraceFlags::SAMPLED,
                true,
                TraceState::default(),
            )),
            None => Context::new(),
        };
        let (start, end) = record.times();
        let mut span = self
            .tracer
            .span_builder(record.name())
            .with_kind(SpanKind::Internal)
            .with_start_time(start)
            .with_attributes(record.attributes())
            .start_with_context(&self.tracer, &parent);
        if record.outcome.error_type().is_some() {
            // The error's class is `error.type`; the description says only
            // what it does not.
            let description = match record.outcome {
                SpanOutcome::Denied(_) => "refused by Mandate",
                _ => "the agent reported the action failed",
            };
            span.set_status(Status::error(description));
        }
        span.end_with_timestamp(end);
    }

    /// Sends every span recorded so far, waiting at most 5 s; on a thread
    /// for blocking work.
    pub async fn flush(&self) -> anyhow::Result<()> {
        let provider = self.provider.clone();
        tokio::task::spawn_blocking(move || provider.force_flush())
            .await
            .context("flushing spans")?
            .context("flushing spans")
    }

    /// Sends the spans still queued and stops the exporter's threads;
    /// spans recorded afterwards are dropped.
    pub async fn shutdown(&self) -> anyhow::Result<()> {
        let provider = self.provider.clone();
        let timeout = self.shutdown_timeout;
        tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(timeout))
            .await
            .context("shutting the OpenTelemetry exporter down")?
            .context("shutting the OpenTelemetry exporter down")
    }
}

/// `<endpoint>/v1/traces`, for an absolute http(s) base address.
/// The checks of `[otel]` that need no connection: the endpoint is a
/// URL the exporter takes, each header a valid name and value (the value,
/// a secret, never in the message).
pub fn validate(config: &OtelConfig) -> anyhow::Result<()> {
    if let Some(endpoint) = &config.endpoint {
        traces_url(endpoint)?;
    }
    for (name, value) in &config.headers {
        reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .with_context(|| format!("invalid config: [otel] header name {name:?}"))?;
        reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| anyhow::anyhow!("invalid config: [otel] header {name:?}'s value"))?;
    }
    Ok(())
}

fn traces_url(endpoint: &str) -> anyhow::Result<String> {
    let url = reqwest::Url::parse(endpoint)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https") && url.has_host())
        .filter(|url| url.query().is_none() && url.fragment().is_none())
        .ok_or_else(|| {
            anyhow::anyhow!("invalid config: [otel] endpoint must be an absolute http(s) URL")
        })?;
    Ok(format!(
        "{}{TRACES_PATH}",
        url.as_str().trim_end_matches('/')
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traces_path_is_added_to_the_base_address() {
        for (endpoint, url) in [
            ("http://collector:4318", "http://collector:4318/v1/traces"),
            ("http://collector:4318/", "http://collector:4318/v1/traces"),
            (
                "https://otel.example/ingest/",
                "https://otel.example/ingest/v1/traces",
            ),
        ] {
            assert_eq!(traces_url(endpoint).unwrap(), url);
        }
        for endpoint in ["collector:4318", "ftp://collector", "http://c/?q=1", ""] {
            assert!(traces_url(endpoint).is_err(), "{endpoint}");
        }
    }

    #[test]
    fn off_without_an_endpoint() {
        assert!(Telemetry::start(&OtelConfig::default()).unwrap().is_none());
    }

    #[test]
    fn errors_are_the_deny_reason_or_the_result() {
        assert_eq!(SpanOutcome::Completed(Outcome::Success).error_type(), None);
        assert_eq!(
            SpanOutcome::Completed(Outcome::Timeout).error_type(),
            Some("timeout")
        );
        assert_eq!(
            SpanOutcome::Denied(DenyReason::BudgetMaxSpendUsd).error_type(),
            Some("budget_max_spend_usd")
        );
        assert_eq!(SpanOutcome::Pending.error_type(), None);
        assert_eq!(SpanOutcome::AwaitingApproval.error_type(), None);
        assert_eq!(
            SpanOutcome::of(&RecordState::Denied {
                reason: DenyReason::TokenRevoked
            }),
            SpanOutcome::Denied(DenyReason::TokenRevoked)
        );
    }
}
