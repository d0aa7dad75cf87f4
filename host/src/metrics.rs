//! Prometheus metrics: requests by route and status with latency histograms,
//! records written, group-commit batch sizes, verification failures by code,
//! read connections in use by lane, and the database statements and round
//! trips each lane sends. Served at `GET /metrics` in the OpenMetrics text format.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

/// Labels of a request: all `'static` or plain numbers, so counting a
/// request allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    route: &'static str,
    method: &'static str,
    status: u16,
}

/// The route label of the latency histograms.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RouteLabels {
    route: &'static str,
}

/// The lane label of the read-connection gauge.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LaneLabels {
    lane: &'static str,
}

fn latency_histogram() -> Histogram {
    // 50 µs to ~3 s.
    Histogram::new(exponential_buckets(0.000_05, 2.0, 16))
}

/// Every metric Mandate exports.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram, fn() -> Histogram>,
    records: Family<Labels, Counter>,
    batches: Histogram,
    verify_failures: Family<Labels, Counter>,
    readers_busy: Family<LaneLabels, Gauge>,
    db_statements: Family<LaneLabels, Counter>,
    db_round_trips: Family<LaneLabels, Counter>,
}

/// What one lane's connections send to the database: statements (a
/// batch of `;`-separated statements sent at once counts as one) on both
/// engines, and round trips to the server on PostgreSQL (a statement, or
/// the preparation of one not yet cached; SQLite has none: its statements
/// are calls in the process). Connecting is not counted.
#[derive(Debug, Clone, Default)]
pub struct DbTally {
    pub statements: Counter,
    pub round_trips: Counter,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("mandate");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let records = Family::<Labels, Counter>::default();
        let batches = Histogram::new(exponential_buckets(1.0, 2.0, 12));
        let verify_failures = Family::<Labels, Counter>::default();
        let readers_busy = Family::<LaneLabels, Gauge>::default();
        let db_statements = Family::<LaneLabels, Counter>::default();
        let db_round_trips = Family::<LaneLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests by route, method and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "HTTP request latency by route",
            latency.clone(),
        );
        registry.register(
            "records_written",
            "Action records written, by status",
            records.clone(),
        );
        registry.register(
            "group_commit_batch_size",
            "Writes committed together in one transaction",
            batches.clone(),
        );
        registry.register(
            "token_verification_failures",
            "Bearer tokens refused, by error code",
            verify_failures.clone(),
        );
        registry.register(
            "readers_busy",
            "Read connections in use, by lane",
            readers_busy.clone(),
        );
        registry.register(
            "db_statements",
            "Database statements sent, by lane (a batch sent at once counts once)",
            db_statements.clone(),
        );
        registry.register(
            "db_round_trips",
            "Round trips to the database server, by lane (PostgreSQL; SQLite has none)",
            db_round_trips.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
            records,
            batches,
            verify_failures,
            readers_busy,
            db_statements,
            db_round_trips,
        }
    }

    /// Counts a finished request. `route` is a route template (or
    /// `unmatched`) from a fixed set, and `method` one of the standard ones.
    pub fn observe_request(
        &self,
        route: &'static str,
        method: &'static str,
        status: u16,
        elapsed: Duration,
    ) {
        self.requests
            .get_or_create(&RequestLabels {
                route,
                method,
                status,
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels { route })
            .observe(elapsed.as_secs_f64());
    }

    /// Counts a record written with this status.
    pub fn record_written(&self, status: &str) {
        self.records
            .get_or_create(&vec![("status", status.to_owned())])
            .inc();
    }

    /// Records the size of a committed group.
    pub fn observe_batch(&self, size: usize) {
        self.batches.observe(size as f64);
    }

    /// Counts a refused Bearer token.
    pub fn verification_failed(&self, code: &str) {
        self.verify_failures
            .get_or_create(&vec![("code", code.to_owned())])
            .inc();
    }

    /// The gauge of read connections in use in `lane`.
    pub fn readers_busy(&self, lane: &'static str) -> Gauge {
        self.readers_busy
            .get_or_create(&LaneLabels { lane })
            .clone()
    }

    /// The counters of what `lane`'s connections send to the database:
    /// `writer`, or a read lane's name.
    pub fn db_lane(&self, lane: &'static str) -> DbTally {
        DbTally {
            statements: self
                .db_statements
                .get_or_create(&LaneLabels { lane })
                .clone(),
            round_trips: self
                .db_round_trips
                .get_or_create(&LaneLabels { lane })
                .clone(),
        }
    }

    /// The exposition text.
    pub fn render(&self) -> String {
        let mut text = String::new();
        if encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_family() {
        let metrics = Metrics::new();
        metrics.observe_request("/healthz", "GET", 200, Duration::from_millis(1));
        metrics.record_written("completed");
        metrics.observe_batch(3);
        metrics.verification_failed("expired");
        metrics.readers_busy("queries").inc();
        metrics.db_lane("writer").round_trips.inc();
        let text = metrics.render();
        for name in [
            "mandate_http_requests_total",
            "mandate_http_request_duration_seconds_bucket",
            "mandate_records_written_total",
            "mandate_group_commit_batch_size_bucket",
            "mandate_token_verification_failures_total",
            "mandate_readers_busy{lane=\"queries\"} 1",
            "mandate_db_statements_total{lane=\"writer\"} 0",
            "mandate_db_round_trips_total{lane=\"writer\"} 1",
        ] {
            assert!(text.contains(name), "{name} missing from\n{text}");
        }
    }
}
