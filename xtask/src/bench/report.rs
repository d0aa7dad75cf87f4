//! BENCHMARKS.md: the targets table, the absolute figures and the notes,
//! rendered from a run's measurements. Each target is declared once, as a
//! bound on a figure's median; its text in the table is rendered from it.

use std::fmt::Write as _;

use serde_json::Value;

use super::Plan;
use super::oauth::ExchangeRows;
use super::parsing::{Spread, p, p99_ratio, ratio, rps};
use super::python::PythonRows;
use super::running::{
    Against, ArgsRows, BUDGET_MS, Budget, DashboardRows, EventRows, Growth, Http, LANES, LogRows,
    OWN_CLIENTS, PROXY_DELAY_US, Postgres, READERS, WitnessRows,
};

/// Shares (0–1) as percentages.
fn percent(shares: &[f64]) -> Spread {
    Spread::of(&shares.iter().map(|share| share * 100.0).collect::<Vec<_>>())
}

impl Spread {
    /// `median (min–max)` with `digits` decimals.
    pub(super) fn show(&self, digits: usize) -> String {
        format!(
            "{:.d$} ({:.d$}–{:.d$})",
            self.median,
            self.min,
            self.max,
            d = digits
        )
    }
}

/// What a figure is counted in, as the tables write it after a number.
#[derive(Debug, Clone, Copy)]
pub(super) enum Unit {
    /// A ratio of two contenders.
    Times,
    Ms,
    Us,
}

impl Unit {
    fn suffix(self) -> &'static str {
        match self {
            Unit::Times => "×",
            Unit::Ms => " ms",
            Unit::Us => " µs",
        }
    }
}

/// The bound a figure's median must keep.
#[derive(Debug, Clone, Copy)]
pub(super) enum Target {
    AtMost(f64, Unit),
    AtLeast(f64, Unit),
    /// A ratio below 1×: faster than the peer.
    Faster,
    /// A ratio within `within` of the first row of its series (the empty
    /// data folder's), whose median is `reference`.
    Flat {
        reference: f64,
        within: f64,
    },
}

impl Target {
    fn unit(self) -> Unit {
        match self {
            Target::AtMost(_, unit) | Target::AtLeast(_, unit) => unit,
            Target::Faster | Target::Flat { .. } => Unit::Times,
        }
    }

    fn text(self) -> String {
        match self {
            Target::AtMost(bound, unit) => format!("≤ {bound}{}", unit.suffix()),
            Target::AtLeast(bound, unit) => format!("≥ {bound}{}", unit.suffix()),
            Target::Faster => "< 1× (faster)".to_owned(),
            Target::Flat { .. } => "flat (≈ the empty row)".to_owned(),
        }
    }

    fn met(self, median: f64) -> bool {
        match self {
            Target::AtMost(bound, _) => median <= bound,
            Target::AtLeast(bound, _) => median >= bound,
            Target::Faster => median < 1.0,
            Target::Flat { reference, within } => (median - reference).abs() < within,
        }
    }
}

/// A row of the targets table: what is measured, its target, and the
/// figure shown with `digits` decimals.
pub(super) struct Row {
    label: String,
    target: Target,
    measured: Spread,
    digits: usize,
}

impl Row {
    pub(super) fn new(
        label: impl Into<String>,
        target: Target,
        measured: Spread,
        digits: usize,
    ) -> Row {
        Row {
            label: label.into(),
            target,
            measured,
            digits,
        }
    }

    /// The median measured.
    pub(super) fn median(&self) -> f64 {
        self.measured.median
    }

    /// Whether the median keeps the target.
    pub(super) fn met(&self) -> bool {
        self.target.met(self.measured.median)
    }

    /// The row as a line of the Markdown table.
    pub(super) fn line(&self) -> String {
        let met = if self.target.met(self.measured.median) {
            "met"
        } else {
            "**not met**"
        };
        format!(
            "| {} | {} | {}{} | {met} |",
            self.label,
            self.target.text(),
            self.measured.show(self.digits),
            self.target.unit().suffix()
        )
    }
}

impl Budget {
    /// The rows of the targets table.
    pub(super) fn targets(&self) -> [Row; 2] {
        let answer = Spread::of(
            &self
                .unindexed
                .iter()
                .map(|l| l.p99_ms / f64::from(BUDGET_MS))
                .collect::<Vec<_>>(),
        );
        [
            Row::new(
                "5. unindexed record filter at 5 M records, p99 answer / query budget",
                Target::AtMost(1.2, Unit::Times),
                answer,
                3,
            ),
            Row::new(
                format!(
                    "5. API-key read p99 beside {} slow reads / alone",
                    2 * READERS
                ),
                Target::AtMost(10.0, Unit::Times),
                p99_ratio(&self.beside_slow, &self.alone),
                2,
            ),
        ]
    }

    /// The rows of the absolute figures: (what, figure).
    pub(super) fn figures(&self) -> [(String, String); 6] {
        [
            (
                "query time budget (ms; `query_budget_ms`, the default)".to_owned(),
                BUDGET_MS.to_string(),
            ),
            (
                "unindexed record filter at 5 M records, p99 answer (ms)".to_owned(),
                p(&self.unindexed, |l| l.p99_ms).show(1),
            ),
            (
                "the same filter with an hour's budget, one answer (ms)".to_owned(),
                format!("{:.0}", self.unbounded_ms),
            ),
            (
                "API-key read (reputation) alone, p99 (ms)".to_owned(),
                p(&self.alone, |l| l.p99_ms).show(2),
            ),
            (
                format!("API-key read beside {} slow reads, p99 (ms)", 2 * READERS),
                p(&self.beside_slow, |l| l.p99_ms).show(2),
            ),
            (
                "API-key read alone / beside slow reads (req/s)".to_owned(),
                format!(
                    "{} / {}",
                    rps(&self.alone).show(0),
                    rps(&self.beside_slow).show(0)
                ),
            ),
        ]
    }
}

impl Postgres {
    /// The rows of the absolute figures: (what, figure).
    pub(super) fn figures(&self) -> Vec<(String, String)> {
        let delay = f64::from(PROXY_DELAY_US) / 1000.0;
        [
            (
                "record/action on PostgreSQL, one host (req/s)",
                rps(&self.record).show(0),
            ),
            (
                "record/action on PostgreSQL p99 (ms)",
                p(&self.record, |l| l.p99_ms).show(2),
            ),
            (
                "record/action on SQLite, same rounds (req/s)",
                rps(&self.sqlite).show(0),
            ),
            (
                "record/action, PostgreSQL / SQLite (same machine, same rounds)",
                format!("{}×", ratio(&self.record, &self.sqlite).show(3)),
            ),
            (
                "record/action, one host on PostgreSQL, in turns with three (req/s)",
                rps(&self.one_host).show(0),
            ),
            (
                "record/action, three hosts on one PostgreSQL database, together (req/s)",
                rps(&self.three_hosts).show(0),
            ),
            (
                "three hosts p99, the worst host's (ms)",
                p(&self.three_hosts, |l| l.p99_ms).show(2),
            ),
            (
                "three hosts / one host on the same 2 cores (coordination cost, not scale)",
                format!("{}×", ratio(&self.three_hosts, &self.one_host).show(3)),
            ),
        ]
        .map(|(what, figure)| (what.to_owned(), figure))
        .into_iter()
        .chain([
            (
                format!(
                    "record/action, one host, PostgreSQL through the {delay} ms proxy, in turns with three (req/s)"
                ),
                rps(&self.proxied_one_host).show(0),
            ),
            (
                format!("record/action, three hosts through the {delay} ms proxy, together (req/s)"),
                rps(&self.proxied_three_hosts).show(0),
            ),
            (
                format!("three hosts / one host through the {delay} ms proxy"),
                format!(
                    "{}×",
                    ratio(&self.proxied_three_hosts, &self.proxied_one_host).show(3)
                ),
            ),
            (
                format!(
                    "the machine's CPU busy, one host / three hosts through the {delay} ms proxy (%)"
                ),
                format!(
                    "{} / {}",
                    percent(&self.proxied_busy.0).show(0),
                    percent(&self.proxied_busy.1).show(0)
                ),
            ),
            (
                "three / one at most on these cores, at one host's CPU a request (1 / one host's busy share)"
                    .to_owned(),
                format!(
                    "{}×",
                    Spread::of(
                        &self
                            .proxied_busy
                            .0
                            .iter()
                            .map(|share| 1.0 / share)
                            .collect::<Vec<_>>()
                    )
                    .show(2)
                ),
            ),
            (
                format!(
                    "record/action through the {delay} ms proxy, {OWN_CLIENTS} clients a host: one host / three hosts together, in turns (req/s)"
                ),
                format!(
                    "{} / {}",
                    rps(&self.proxied_own.0).show(0),
                    rps(&self.proxied_own.1).show(0)
                ),
            ),
            (
                format!(
                    "three hosts / one host through the {delay} ms proxy, each host with {OWN_CLIENTS} clients of its own (round trips bind, not the cores)"
                ),
                format!(
                    "{}×",
                    ratio(&self.proxied_own.1, &self.proxied_own.0).show(3)
                ),
            ),
            (
                format!("the proxy's measured round trip, {delay} ms each way: median / p99 (µs)"),
                format!("{:.0} / {:.0}", self.rtt_us.0, self.rtt_us.1),
            ),
        ])
        .collect()
    }

    /// The round-trip tables (plan §3.1): per batch group and per commit
    /// group, by lane, beside what the proxy counted.
    pub(super) fn round_trips(&self) -> String {
        let mut out = String::new();
        let lanes = LANES.join(" | ");
        let _ = writeln!(
            out,
            "### Round trips to PostgreSQL per group\n\n\
             Counted by the host (`mandate_db_round_trips_total` by lane: each statement, and each \
             statement prepared the first time) and by the latency proxy in front of the database \
             (every connection; its idle rate over 2 s subtracted), on one host through the proxy.\n\n\
             A batch group: one `POST /v1/vat/record/actions` of N records sent alone \
             (median of the requests).\n\n\
             | records | budgeted token | {lanes} | proxy |\n|---|---|{}---|",
            "---|".repeat(LANES.len())
        );
        for row in &self.batches {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.1} |",
                row.records,
                if row.budgeted { "yes" } else { "no" },
                row.lanes
                    .iter()
                    .map(|v| format!("{v:.0}"))
                    .collect::<Vec<_>>()
                    .join(" | "),
                row.proxy
            );
        }
        let _ = writeln!(
            out,
            "\nA commit group: K concurrent clients of single `record/action` for the round's \
             seconds; round trips per group committed.\n\n\
             | clients | groups | writes per group | {lanes} | proxy |\n|---|---|---|{}---|",
            "---|".repeat(LANES.len())
        );
        for row in &self.commits {
            let _ = writeln!(
                out,
                "| {} | {:.0} | {:.1} | {} | {:.1} |",
                row.clients,
                row.groups,
                row.size,
                row.lanes
                    .iter()
                    .map(|v| format!("{v:.2}"))
                    .collect::<Vec<_>>()
                    .join(" | "),
                row.proxy
            );
        }
        out.push('\n');
        out
    }
}

impl WitnessRows {
    /// The `q` quantile (0–1) of the times to a cosigned checkpoint, ms.
    fn cosigned_quantile_ms(&self, q: f64) -> f64 {
        super::oauth::quantile(&self.cosigned_ms, q)
    }

    /// p99 of the times from a write to a checkpoint cosigned by two of
    /// three witnesses, ms.
    pub(super) fn cosigned_p99_ms(&self) -> f64 {
        self.cosigned_quantile_ms(0.99)
    }

    /// The rows of the targets table: the submitter's cost on the write
    /// path, and how soon a write is witnessed (within one cadence and a
    /// round of local witnesses: the cadence plus half a second).
    pub(super) fn targets(&self) -> [Row; 2] {
        #[allow(clippy::cast_precision_loss, reason = "milliseconds")]
        let bound = self.interval_ms as f64 + 500.0;
        [
            Row::new(
                "6. record/action with two witnesses and the submitter at its cadence / without (req/s)",
                Target::AtLeast(0.95, Unit::Times),
                ratio(&self.with_witnesses, &self.without_witnesses),
                3,
            ),
            Row::new(
                format!(
                    "6. a write to a checkpoint cosigned by 2 of 3 local witnesses, p99 ({} ms cadence)",
                    self.interval_ms
                ),
                Target::AtMost(bound, Unit::Ms),
                Spread::of(&[self.cosigned_p99_ms()]),
                0,
            ),
        ]
    }

    /// The rows of the absolute figures: (what, figure).
    pub(super) fn figures(&self) -> [(String, String); 3] {
        [
            (
                "record/action, two witnesses and the submitter (req/s)".to_owned(),
                rps(&self.with_witnesses).show(0),
            ),
            (
                "record/action, the log without witnesses, same rounds (req/s)".to_owned(),
                rps(&self.without_witnesses).show(0),
            ),
            (
                format!(
                    "a write to a checkpoint cosigned by 2 of 3 witnesses, {} writes, p50 / p99 (ms)",
                    self.cosigned_ms.len()
                ),
                format!(
                    "{:.0} / {:.0}",
                    self.cosigned_quantile_ms(0.5),
                    self.cosigned_p99_ms()
                ),
            ),
        ]
    }
}

impl LogRows {
    /// The row of the targets table.
    fn target(&self) -> Row {
        Row::new(
            "6. record/action with the record log / without it (req/s)",
            Target::AtLeast(0.9, Unit::Times),
            ratio(&self.with_log, &self.without_log),
            3,
        )
    }

    /// The rows of the absolute figures: (what, figure).
    fn figures(&self) -> [(String, String); 4] {
        [
            (
                "record/action with the record log (req/s)".to_owned(),
                rps(&self.with_log).show(0),
            ),
            (
                "record/action without it, same rounds (req/s)".to_owned(),
                rps(&self.without_log).show(0),
            ),
            (
                format!(
                    "a record's proof (`GET /v1/vat/aar/{{id}}/proof`), log of {} leaves, p50 / p99 (ms)",
                    self.records
                ),
                format!(
                    "{} / {}",
                    p(&self.proof, |l| l.p50_ms).show(2),
                    p(&self.proof, |l| l.p99_ms).show(2)
                ),
            ),
            (
                "a record's proof (req/s)".to_owned(),
                rps(&self.proof).show(0),
            ),
        ]
    }
}

impl Against {
    /// The rows of the targets table: a change keeps the write path's
    /// speed within 5 % of the build it is measured against.
    pub(super) fn targets(&self) -> [Row; 2] {
        [
            Row::new(
                "record/action, this build / the baseline (req/s)",
                Target::AtLeast(0.95, Unit::Times),
                ratio(&self.record, &self.baseline_record),
                3,
            ),
            Row::new(
                "delegate, this build / the baseline (req/s)",
                Target::AtLeast(0.95, Unit::Times),
                ratio(&self.delegate, &self.baseline_delegate),
                3,
            ),
        ]
    }

    /// The rows of the absolute figures: (what, figure).
    pub(super) fn figures(&self) -> [(String, String); 4] {
        [
            (
                "record/action, this build (req/s)".to_owned(),
                rps(&self.record).show(0),
            ),
            (
                "record/action, the baseline, same rounds (req/s)".to_owned(),
                rps(&self.baseline_record).show(0),
            ),
            (
                "delegate, this build (req/s)".to_owned(),
                rps(&self.delegate).show(0),
            ),
            (
                "delegate, the baseline, same rounds (req/s)".to_owned(),
                rps(&self.baseline_delegate).show(0),
            ),
        ]
    }
}

/// Where the argument-constraints section starts in BENCHMARKS.md; it ends
/// where the paragraph that says how to reproduce the tables begins.
pub(super) const ARGS_HEADING: &str = "## Argument constraints";
pub(super) const REPRODUCE: &str = "Reproduce: ";

impl ArgsRows {
    /// Each round's median of `name` in the bench programs' outputs.
    fn per_round(outputs: &[Value], name: &str) -> Vec<f64> {
        outputs
            .iter()
            .map(|output| output[name]["median"].as_f64().unwrap_or(f64::NAN))
            .collect()
    }

    /// The rows of the section's targets table.
    pub(super) fn targets(&self) -> [Row; 3] {
        let native_us: Vec<f64> = Self::per_round(&self.native, "check_ns")
            .iter()
            .map(|ns| ns / 1000.0)
            .collect();
        let wasm_over_native: Vec<f64> = Self::per_round(&self.wasm, "evaluate_ns")
            .iter()
            .zip(Self::per_round(&self.native, "evaluate_json_ns"))
            .map(|(wasm, native)| wasm / native)
            .collect();
        [
            Row::new(
                "9. record/action with a 3-rule, 10-statement argument grant / the same grant without rules, both sending the same 1 KiB of arguments (req/s)",
                Target::AtLeast(0.95, Unit::Times),
                ratio(&self.with_rules, &self.without_rules),
                3,
            ),
            Row::new(
                "9. native evaluation of that grant over parsed arguments",
                Target::AtMost(5.0, Unit::Us),
                Spread::of(&native_us),
                2,
            ),
            Row::new(
                "9. wasm `evaluatePolicy` in Node / native `evaluate_json`, the same ten statements and arguments as JSON text",
                Target::AtMost(4.0, Unit::Times),
                Spread::of(&wasm_over_native),
                2,
            ),
        ]
    }

    /// The rows of the section's absolute figures: (what, figure).
    pub(super) fn figures(&self) -> [(String, String); 6] {
        let ns =
            |outputs: &[Value], name: &str| Spread::of(&Self::per_round(outputs, name)).show(0);
        [
            (
                "record/action with the rules, 1 KiB of arguments (req/s)".to_owned(),
                rps(&self.with_rules).show(0),
            ),
            (
                "the same arguments, the grant without rules, same rounds (req/s)".to_owned(),
                rps(&self.without_rules).show(0),
            ),
            (
                "native `check_args` of the grant over parsed arguments (ns)".to_owned(),
                ns(&self.native, "check_ns"),
            ),
            (
                "native, reading the arguments strictly, writing their canonical form, hashing it (`args_hash`) and `check_args` (ns)".to_owned(),
                ns(&self.native, "parse_hash_check_ns"),
            ),
            (
                "native `evaluate_json` of the ten statements over the arguments' text (ns)".to_owned(),
                ns(&self.native, "evaluate_json_ns"),
            ),
            (
                "wasm `evaluatePolicy` of the same in Node (ns)".to_owned(),
                ns(&self.wasm, "evaluate_ns"),
            ),
        ]
    }

    /// The section of BENCHMARKS.md; `measured` says how and when.
    pub(super) fn section(&self, measured: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{ARGS_HEADING}\n\n{measured} The grant and the arguments are `bench/args/grant.json`: \
             the HTTP rows alternate the two tokens on one server; the native and wasm rows alternate \
             `args_eval` and `bench/args.mjs`, one process each per round.\n"
        );
        let _ = writeln!(out, "| row | target | measured | |\n|---|---|---|---|");
        for row in self.targets() {
            let _ = writeln!(out, "{}", row.line());
        }
        let _ = writeln!(out, "\n| what | figure |\n|---|---|");
        for (what, figure) in self.figures() {
            let _ = writeln!(out, "| {what} | {figure} |");
        }
        out.push('\n');
        out
    }

    /// `benchmarks` (BENCHMARKS.md's text) with this section in place of
    /// the one it has, or before the paragraph that says how to reproduce
    /// the tables; `None` if it has no such paragraph.
    pub(super) fn spliced(&self, benchmarks: &str, measured: &str) -> Option<String> {
        let reproduce = benchmarks.find(REPRODUCE)?;
        let start = benchmarks[..reproduce]
            .find(ARGS_HEADING)
            .unwrap_or(reproduce);
        Some(format!(
            "{}{}{}",
            &benchmarks[..start],
            self.section(measured),
            &benchmarks[reproduce..]
        ))
    }
}

impl EventRows {
    /// The row of the targets table.
    pub(super) fn target(&self) -> Row {
        Row::new(
            "7. record/action with events on, each record one event sent to a webhook / events off (req/s)",
            Target::AtLeast(0.9, Unit::Times),
            ratio(&self.with_events, &self.without_events),
            3,
        )
    }

    /// The rows of the absolute figures: (what, figure).
    pub(super) fn figures(&self) -> [(String, String); 3] {
        [
            (
                "record/action, each record a `record.failed` event sent to a webhook (req/s)"
                    .to_owned(),
                rps(&self.with_events).show(0),
            ),
            (
                "the same with `[events] enabled = false`, same rounds (req/s)".to_owned(),
                rps(&self.without_events).show(0),
            ),
            (
                "one webhook (one delivery in flight): events delivered / written by 10 s after the load; deliveries per second".to_owned(),
                format!(
                    "{} / {}; {:.0}",
                    self.delivered,
                    self.written,
                    self.delivered as f64 / self.delivering_s
                ),
            ),
        ]
    }
}

impl DashboardRows {
    /// The rows of the targets table: per page, the p99 of its slowest
    /// call in each round.
    pub(super) fn targets(&self) -> Vec<Row> {
        self.pages
            .iter()
            .map(|page| {
                let rounds = page.calls.first().map_or(0, |(_, loads)| loads.len());
                let slowest = (0..rounds)
                    .map(|round| {
                        page.calls
                            .iter()
                            .filter_map(|(_, loads)| loads.get(round))
                            .map(|l| l.p99_ms)
                            .fold(f64::NAN, f64::max)
                    })
                    .collect::<Vec<_>>();
                Row::new(
                    format!(
                        "8. dashboard at 5 M records, {}: its slowest call's p99",
                        page.name
                    ),
                    Target::AtMost(50.0, Unit::Ms),
                    Spread::of(&slowest),
                    2,
                )
            })
            .collect()
    }

    /// The rows of the absolute figures: (what, figure).
    pub(super) fn figures(&self) -> Vec<(String, String)> {
        let calls = self.pages.iter().flat_map(|page| {
            page.calls.iter().map(|(path, loads)| {
                (
                    format!(
                        "dashboard, {}: `GET {path}` at 5 M records, p99 (ms) / req/s",
                        page.name
                    ),
                    format!(
                        "{} / {}",
                        p(loads, |l| l.p99_ms).show(2),
                        rps(loads).show(0)
                    ),
                )
            })
        });
        let prefill = self.prefill_seconds.map(|seconds| {
            (
                "prefilling the dashboard's 5 M records, 6 agents over 30 days (s)".to_owned(),
                format!("{seconds:.0}"),
            )
        });
        calls.chain(prefill).collect()
    }
}

/// Everything a full run measured, and where.
pub(super) struct Report {
    /// The machine measured on, and the day.
    pub(super) machine: String,
    pub(super) date: String,
    /// `bench/NOTES.md`: what limits each row and what was done about it.
    pub(super) notes: String,
    pub(super) native: Value,
    pub(super) node: Value,
    pub(super) plugin_cost: Value,
    pub(super) http: Http,
    pub(super) exchange: ExchangeRows,
    pub(super) growth: Growth,
    pub(super) budget: Budget,
    pub(super) postgres: Postgres,
    pub(super) log: LogRows,
    pub(super) witnessed: WitnessRows,
    pub(super) events: EventRows,
    pub(super) dashboard: DashboardRows,
    pub(super) args: ArgsRows,
    pub(super) python: PythonRows,
    /// `status_sizes`: the signed status lists of a million tokens.
    pub(super) status_sizes: Value,
    /// `bench/log.mjs`: record proofs verified in Node.
    pub(super) node_log: Value,
    pub(super) cold: Spread,
    pub(super) wasm: (u64, u64),
    pub(super) plan: Plan,
}

impl Report {
    /// The rows of the targets table.
    fn targets(&self) -> Vec<Row> {
        use Target::{AtLeast, AtMost, Faster};
        use Unit::{Ms, Times};
        let native = |k: &str| Spread::from_json(&self.native[k]);
        let node = |k: &str| Spread::from_json(&self.node[k]);
        let (h, g) = (&self.http, &self.growth);
        let mut rows = vec![
            Row::new(
                "1. native verify / bare `verify_strict`",
                AtMost(1.15, Times),
                native("core_over_bare"),
                3,
            ),
            Row::new(
                "1. native verify / jsonwebtoken",
                Faster,
                native("core_over_jsonwebtoken"),
                3,
            ),
            Row::new(
                "2. jose / `verifyToken` (Node)",
                AtLeast(1.3, Times),
                node("jose_over_verifyToken"),
                2,
            ),
            Row::new(
                "2. jose / `Verifier.verify` (Node)",
                AtLeast(1.3, Times),
                node("jose_over_verifier"),
                2,
            ),
            Row::new(
                "2. jose / cached `Verifier.verify`",
                AtLeast(20.0, Times),
                node("jose_over_cached"),
                1,
            ),
            Row::new(
                "3. record/action / `GET /healthz` (req/s)",
                AtLeast(0.5, Times),
                ratio(&h.record, &h.healthz),
                3,
            ),
            Row::new(
                "3. record/action p99",
                AtMost(10.0, Ms),
                p(&h.record, |l| l.p99_ms),
                2,
            ),
            Row::new(
                "3. record/action with the token itself / with its `vat_jti` (req/s)",
                AtLeast(0.8, Times),
                ratio(&h.record_by_token, &h.record_by_jti),
                3,
            ),
            Row::new(
                "3. AuthZEN evaluation by a gateway / `authorize` with the token itself (req/s)",
                AtLeast(0.9, Times),
                ratio(&h.evaluation, &h.authorize),
                3,
            ),
            self.exchange.target(),
            Row::new(
                "3. native check of a bound token's call (token + DPoP proof) / of a Bearer call",
                AtMost(2.2, Times),
                native("bound_over_bearer"),
                2,
            ),
            Row::new(
                "4. provenance summary of a 10 k-record workflow, p99",
                AtMost(20.0, Ms),
                p(&g.summary, |l| l.p99_ms),
                2,
            ),
            Row::new(
                "4. filtered, paginated record query at 5 M records, p99",
                AtMost(20.0, Ms),
                p(&g.query, |l| l.p99_ms),
                2,
            ),
        ];
        let by_size: Vec<(u64, Spread)> = g
            .by_size
            .iter()
            .map(|(size, record, healthz)| (*size, ratio(record, healthz)))
            .collect();
        if let Some(&(_, empty)) = by_size.first() {
            for (size, growth) in by_size {
                rows.push(Row::new(
                    format!("4. record/action / healthz with {size} records stored"),
                    Target::Flat {
                        reference: empty.median,
                        within: 0.1,
                    },
                    growth,
                    3,
                ));
            }
        }
        rows.extend(self.budget.targets());
        rows.push(self.log.target());
        rows.extend(self.witnessed.targets());
        rows.push(Row::new(
            "6. a record proof verified in Node: mandate-sdk (wasm) / an independent JavaScript verifier",
            AtMost(2.0, Times),
            Spread::from_json(&self.node_log["sdk_over_independent"]),
            2,
        ));
        rows.push(self.events.target());
        rows.extend(self.dashboard.targets());
        rows
    }

    /// The rows of the absolute figures: (what, figure).
    fn figures(&self) -> Vec<(String, String)> {
        let native = |k: &str| Spread::from_json(&self.native[k]);
        let node_ns = |k: &str| Spread::from_json(&self.node["ns"][k]);
        let (h, g) = (&self.http, &self.growth);
        let grouping = ratio(&h.grouped_for_single, &h.single_commit);
        let lines = [
            (
                "native `mandate_core::verify` (ns)",
                native("core_ns").show(0),
            ),
            (
                "native bare `verify_strict` (ns)",
                native("bare_ns").show(0),
            ),
            (
                "native jsonwebtoken `decode` (ns)",
                native("jsonwebtoken_ns").show(0),
            ),
            ("Node `verifyToken` (ns)", node_ns("verifyToken").show(0)),
            ("Node `Verifier.verify` (ns)", node_ns("verifier").show(0)),
            (
                "Node cached `Verifier.verify` (ns)",
                node_ns("cached").show(0),
            ),
            (
                "Node jose `jwtVerify`, local JWKS (ns)",
                node_ns("jose").show(0),
            ),
            ("`GET /healthz` (req/s)", rps(&h.healthz).show(0)),
            ("record/action (req/s)", rps(&h.record).show(0)),
            ("record/action p50 (ms)", p(&h.record, |l| l.p50_ms).show(2)),
            (
                "record/action with the token itself as Bearer (req/s)",
                rps(&h.record_by_token).show(0),
            ),
            (
                "record/action with `vat_jti`, same rounds (req/s)",
                rps(&h.record_by_jti).show(0),
            ),
            (
                "native check of a DPoP proof, `dpop::verify_proof` (ns)",
                native("proof_ns").show(0),
            ),
            (
                "authorize + complete (req/s; two per action)",
                rps(&h.full_control).show(0),
            ),
            (
                "authorize + complete p99 (ms)",
                p(&h.full_control, |l| l.p99_ms).show(2),
            ),
            ("delegate (req/s)", rps(&h.delegate).show(0)),
            ("delegate p99 (ms)", p(&h.delegate, |l| l.p99_ms).show(2)),
            (
                "record/action, one commit per write (req/s)",
                rps(&h.single_commit).show(0),
            ),
            (
                "record/action, group commit, same rounds (req/s)",
                rps(&h.grouped_for_single).show(0),
            ),
            (
                "what group commit buys (grouped / one per write)",
                format!("{}×", grouping.show(2)),
            ),
            (
                "mean writes per commit under the record/action load",
                format!("{:.1}", h.batch_mean),
            ),
            (
                "provenance summary, 10 k records (req/s)",
                rps(&g.summary).show(0),
            ),
            ("record query at 5 M records (req/s)", rps(&g.query).show(0)),
            (
                "database bytes per record",
                format!("{:.0}", g.bytes_per_record),
            ),
            (
                "prefilling 5 M records (s)",
                format!("{:.0}", g.prefill_seconds),
            ),
            (
                "server peak RSS under the HTTP load (MiB)",
                format!("{:.1}", h.peak_rss_mib),
            ),
            (
                "server peak RSS at 5 M records (MiB)",
                format!("{:.1}", g.peak_rss_mib),
            ),
            (
                "cold start, fresh data folder, to listening (ms)",
                self.cold.show(0),
            ),
            (
                "restart on 5 M records, to listening (ms)",
                format!("{:.0}", g.restart_ms),
            ),
            (
                "wasm module raw / gzip (bytes)",
                format!("{} / {}", self.wasm.0, self.wasm.1),
            ),
            (
                "reference plugin call: fresh instance + JSON in/out (ns)",
                Spread::from_json(&self.plugin_cost["call_ns"]).show(0),
            ),
            (
                "reference plugin compile at start (ms)",
                format!(
                    "{:.0}",
                    self.plugin_cost["compile_ms"].as_f64().unwrap_or(f64::NAN)
                ),
            ),
        ];
        let audits = g.audit_seconds.iter().map(|(size, seconds)| {
            (
                format!("`mandate audit verify` on {size} records (s)"),
                format!("{seconds:.1}"),
            )
        });
        let sizes = &self.status_sizes["revoked_percent"];
        let status = [0, 1, 10].map(|percent| {
            let size = &sizes[percent.to_string()];
            (
                format!(
                    "status lists of 1 M tokens, {percent} % revoked, compressed / signed (bytes)"
                ),
                format!("{} / {}", size["compressed"], size["signed"]),
            )
        });
        let node_log = |k: &str| Spread::from_json(&self.node_log["ns"][k]);
        let proofs = [
            (
                "a record proof verified in Node, mandate-sdk `verifyLogProof` (ns)".to_owned(),
                node_log("sdk").show(0),
            ),
            (
                "the same, the independent JavaScript verifier (ns)".to_owned(),
                node_log("independent").show(0),
            ),
        ];
        lines
            .into_iter()
            .map(|(what, figure)| (what.to_owned(), figure))
            .chain(self.exchange.figures())
            .chain(self.budget.figures())
            .chain(self.postgres.figures())
            .chain(self.log.figures())
            .chain(self.witnessed.figures())
            .chain(self.events.figures())
            .chain(self.dashboard.figures())
            .chain(proofs)
            .chain(audits)
            .chain(status)
            .collect()
    }

    /// BENCHMARKS.md.
    pub(super) fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# Benchmarks\n\nMeasured by `cargo xtask bench` on {} ({}). Every ratio is measured side by side in one run: \
             the contenders alternate within each round ({} rounds; HTTP loads {} s each, wrk with 64 connections on 2 threads \
             on the same machine), and each figure is the median of the per-round figures with their range in parentheses. \
             The machine is shared and noisy; the ranges say how much.\n",
            self.machine, self.date, self.plan.rounds, self.plan.seconds
        );
        let _ = writeln!(
            out,
            "## Targets\n\n| row | target | measured | |\n|---|---|---|---|"
        );
        for row in self.targets() {
            let _ = writeln!(out, "{}", row.line());
        }
        let _ = writeln!(out, "\n## Absolute figures\n");
        let _ = writeln!(out, "| what | figure |\n|---|---|");
        for (what, figure) in self.figures() {
            let _ = writeln!(out, "| {what} | {figure} |");
        }
        out.push('\n');
        out.push_str(&self.postgres.round_trips());
        out.push_str(&self.python.section("Measured in the same run."));
        out.push_str(&self.args.section("Measured in the same run."));
        let _ = writeln!(
            out,
            "{REPRODUCE}`cargo xtask bench` (about ten minutes here; it fills 5 M records); \
             `cargo xtask bench --only budget` measures the read-budget rows alone, \
             `cargo xtask bench --only events` the events rows, \
             `cargo xtask bench --only reviewer` the dashboard's rows on a folder of its own, \
             `cargo xtask bench --only oauth` the authorization-code exchange, \
             `cargo xtask bench --only args` the argument-constraints section and \
             `cargo xtask bench --only python` the Python section (each written in place).\n"
        );
        out.push_str(&self.notes);
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::bench::parsing::Load;
    use crate::bench::running::{BatchTrips, CommitTrips, DashboardPage};

    /// Five rounds around `rps` and `p99_ms`, each figure different, so a
    /// spread shows its median and range; `turn` shifts the rounds, so the
    /// ratios of two contenders differ from round to round too.
    fn loads(rps: f64, p99_ms: f64, turn: usize) -> Vec<Load> {
        let factors = [1.0, 0.93, 1.07, 0.98, 1.12];
        (0..factors.len())
            .map(|round| factors[(round + turn) % factors.len()])
            .map(|f| Load {
                rps: rps * f,
                p50_ms: p99_ms / 3.0 * f,
                p99_ms: p99_ms / f,
                errors: 0,
            })
            .collect()
    }

    fn spread(median: f64, min: f64, max: f64) -> Value {
        json!({"median": median, "min": min, "max": max})
    }

    /// A full run's report from fixed figures (those of the committed
    /// BENCHMARKS.md where a figure is given whole, made-up rounds where it
    /// is computed from wrk's loads).
    fn report() -> Report {
        Report {
            machine: "2 cores of a test CPU, 8 GiB, Linux 6.0".to_owned(),
            date: "2026-11-23".to_owned(),
            notes: "## Notes\n\nThe notes follow the tables.\n".to_owned(),
            native: json!({
                "core_over_bare": spread(1.182, 1.165, 1.261),
                "core_over_jsonwebtoken": spread(0.987, 0.965, 1.160),
                "bound_over_bearer": spread(2.05, 1.94, 2.16),
                "core_ns": spread(45275.0, 45039.0, 49144.0),
                "bare_ns": spread(38240.0, 38056.0, 39897.0),
                "jsonwebtoken_ns": spread(41745.0, 41410.0, 43740.0),
                "proof_ns": spread(47835.0, 47637.0, 50159.0),
            }),
            node: json!({
                "jose_over_verifyToken": spread(1.23, 1.14, 1.48),
                "jose_over_verifier": spread(1.31, 1.22, 1.50),
                "jose_over_cached": spread(35.8, 34.5, 42.4),
                "ns": {
                    "verifyToken": spread(149010.0, 147026.0, 158399.0),
                    "verifier": spread(145300.0, 143882.0, 149316.0),
                    "cached": spread(5186.0, 5102.0, 5408.0),
                    "jose": spread(183814.0, 178421.0, 220870.0),
                },
            }),
            plugin_cost: json!({
                "call_ns": spread(41806.0, 40499.0, 43282.0),
                "compile_ms": 165.4,
            }),
            http: Http {
                healthz: loads(89100.0, 2.1, 1),
                record: loads(38705.0, 4.03, 2),
                record_by_token: loads(37873.0, 4.2, 3),
                record_by_jti: loads(34810.0, 4.1, 4),
                full_control: loads(35315.0, 4.14, 0),
                delegate: loads(4810.0, 23.91, 1),
                evaluation: loads(34410.0, 4.5, 2),
                authorize: loads(35120.0, 4.3, 4),
                single_commit: loads(4312.0, 30.0, 2),
                grouped_for_single: loads(36787.0, 4.5, 3),
                peak_rss_mib: 32.04,
                batch_mean: 20.94,
            },
            exchange: ExchangeRows {
                rounds: vec![
                    vec![9.1, 10.4, 12.8, 31.0],
                    vec![8.7, 11.2, 13.5, 27.4],
                    vec![9.4, 10.1, 12.2, 29.9],
                    vec![9.0, 10.8, 14.1, 33.6],
                    vec![8.8, 10.6, 12.9, 28.3],
                ],
            },
            growth: Growth {
                by_size: vec![
                    (0, loads(38000.0, 4.0, 4), loads(85000.0, 2.0, 0)),
                    (1_000_000, loads(36000.0, 4.2, 1), loads(86000.0, 2.0, 2)),
                    (5_000_000, loads(26000.0, 5.0, 3), loads(88000.0, 2.0, 4)),
                ],
                summary: loads(22923.0, 4.40, 0),
                query: loads(6149.0, 24.23, 1),
                bytes_per_record: 452.4,
                restart_ms: 7.2,
                prefill_seconds: 27.3,
                peak_rss_mib: 237.91,
                audit_seconds: vec![(1_000_000, 21.4), (5_000_000, 108.2)],
            },
            budget: Budget {
                unindexed: loads(7.8, 516.0, 2),
                alone: loads(25086.0, 4.03, 3),
                beside_slow: loads(10680.0, 26.32, 4),
                unbounded_ms: 5410.4,
            },
            postgres: Postgres {
                record: loads(9500.0, 12.5, 0),
                sqlite: loads(31000.0, 4.5, 1),
                one_host: loads(9400.0, 12.0, 2),
                three_hosts: loads(8100.0, 30.0, 3),
                proxied_one_host: loads(900.0, 80.0, 0),
                proxied_three_hosts: loads(950.0, 90.0, 1),
                proxied_busy: (vec![0.66, 0.62, 0.7], vec![0.83, 0.8, 0.86]),
                proxied_own: (loads(450.0, 12.0, 2), loads(960.0, 14.0, 3)),
                rtt_us: (1100.0, 1900.0),
                batches: vec![BatchTrips {
                    records: 10,
                    budgeted: false,
                    lanes: vec![53.0, 0.0, 0.0, 0.0, 0.0],
                    proxy: 62.0,
                }],
                commits: vec![CommitTrips {
                    clients: 8,
                    groups: 400.0,
                    size: 7.5,
                    lanes: vec![43.0, 0.0, 0.0, 0.0, 0.0],
                    proxy: 44.0,
                }],
            },
            log: LogRows {
                with_log: loads(34100.0, 4.4, 0),
                without_log: loads(36200.0, 4.1, 1),
                proof: loads(9100.0, 9.8, 2),
                records: 412_000,
            },
            witnessed: WitnessRows {
                with_witnesses: loads(33900.0, 4.5, 0),
                without_witnesses: loads(34100.0, 4.4, 1),
                cosigned_ms: vec![420.0, 980.0, 1040.0],
                interval_ms: 1000,
            },
            events: EventRows {
                with_events: loads(33800.0, 4.5, 0),
                without_events: loads(35100.0, 4.3, 1),
                delivered: 130_000,
                written: 1_012_000,
                delivering_s: 100.0,
            },
            dashboard: DashboardRows {
                pages: vec![
                    DashboardPage {
                        name: "inbox",
                        calls: vec![
                            ("/v1/vat/inbox/counts".to_owned(), loads(21000.0, 5.1, 0)),
                            (
                                "/v1/vat/aar?rated=false&limit=50".to_owned(),
                                loads(4200.0, 24.0, 1),
                            ),
                        ],
                    },
                    DashboardPage {
                        name: "overview",
                        calls: vec![(
                            "/v1/vat/overview?window=30d".to_owned(),
                            loads(6000.0, 17.5, 2),
                        )],
                    },
                ],
                prefill_seconds: Some(61.2),
            },
            args: ArgsRows {
                with_rules: loads(30100.0, 4.6, 0),
                without_rules: loads(31000.0, 4.4, 1),
                native: [1.0, 0.96, 1.05]
                    .map(|f| {
                        json!({
                            "check_ns": spread(1900.0 * f, 1850.0 * f, 2100.0 * f),
                            "parse_hash_check_ns": spread(9800.0 * f, 9500.0 * f, 10400.0 * f),
                            "evaluate_json_ns": spread(7600.0 * f, 7400.0 * f, 8000.0 * f),
                        })
                    })
                    .to_vec(),
                wasm: [1.0, 1.08, 0.97]
                    .map(|f| json!({"evaluate_ns": spread(21000.0 * f, 20000.0 * f, 23000.0 * f)}))
                    .to_vec(),
            },
            python: PythonRows::of(
                json!({
                    "rounds": 15,
                    "calls": 2000,
                    "python": "3.11.7",
                    "pyjwt": "2.15.1",
                    "ns": {
                        "verify_token": spread(21000.0, 20000.0, 24000.0),
                        "verifier": spread(20000.0, 19000.0, 23000.0),
                        "cached": spread(900.0, 850.0, 1000.0),
                        "pyjwt": spread(60000.0, 57000.0, 66000.0),
                    },
                    "pyjwt_over_verify_token": spread(2.9, 2.7, 3.1),
                    "pyjwt_over_verifier": spread(3.0, 2.8, 3.2),
                    "pyjwt_over_cached": spread(66.0, 60.0, 70.0),
                }),
                json!({
                    "rounds": 200,
                    "adapters": {
                        "langchain": {"overhead": spread(0.12, -1.7, 1.2), "own": spread(0.017, 0.016, 0.036)},
                        "mcp": {"overhead": spread(0.09, -1.6, 1.5), "own": spread(0.007, 0.006, 0.025)},
                        "openai_agents": {"overhead": spread(0.25, -4.2, 2.7), "own": spread(0.34, 0.16, 0.6)},
                        "pydantic_ai": {"overhead": spread(0.16, -1.7, 3.4), "own": spread(0.04, 0.03, 0.09)},
                    },
                }),
            ),
            status_sizes: json!({
                "tokens": 1_000_000,
                "lists": 16,
                "revoked_percent": {
                    "0": {"compressed": 400, "signed": 1900},
                    "1": {"compressed": 70000, "signed": 96000},
                    "10": {"compressed": 390000, "signed": 525000},
                },
            }),
            node_log: json!({
                "sdk_over_independent": spread(1.4, 1.2, 1.7),
                "ns": {
                    "sdk": spread(160000.0, 150000.0, 190000.0),
                    "independent": spread(110000.0, 100000.0, 130000.0),
                },
            }),
            cold: Spread::of(&[9.1, 9.4, 12.0, 9.0, 10.2]),
            wasm: (411_721, 191_773),
            plan: Plan {
                quick: false,
                seconds: 5,
                rounds: 5,
            },
        }
    }

    /// `--only args` puts its section before the paragraph that says how to
    /// reproduce the tables, or in place of the section there, leaving
    /// the rest of the file as it was.
    #[test]
    fn the_args_section_is_written_in_place() {
        let rows = report().args;
        let before = "# Benchmarks\n\n| what | figure |\n|---|---|\n| x | 1 |\n\nReproduce: run it.\n## Notes\n";
        let once = rows
            .spliced(before, "Measured once.")
            .expect("has Reproduce");
        assert!(once.starts_with("# Benchmarks\n\n| what | figure |\n|---|---|\n| x | 1 |\n\n## Argument constraints\n\nMeasured once."));
        assert!(once.ends_with("\n\nReproduce: run it.\n## Notes\n"));
        assert_eq!(once.matches(ARGS_HEADING).count(), 1);
        let twice = rows
            .spliced(&once, "Measured twice.")
            .expect("has Reproduce");
        assert_eq!(twice, once.replace("Measured once.", "Measured twice."));
        assert_eq!(rows.spliced("# Benchmarks\n", "Measured."), None);
        // The full report carries the same section.
        let full = report().render();
        assert_eq!(rows.spliced(&full, "Measured in the same run."), Some(full));
    }

    /// `--only python` puts its section before the argument-constraints
    /// section, or in place of the one there, and leaves the rest as it was;
    /// the full report carries the same section.
    #[test]
    fn the_python_section_is_written_in_place() {
        let rows = report().python;
        let full = report().render();
        assert_eq!(
            rows.spliced(&full, "Measured in the same run."),
            Some(full.clone())
        );
        let without = full.replace(&rows.section("Measured in the same run."), "");
        assert!(!without.contains(super::super::python::PYTHON_HEADING));
        let once = rows
            .spliced(&without, "Measured once.")
            .expect("has the args section");
        assert_eq!(
            once,
            full.replace(
                "## Python\n\nMeasured in the same run.",
                "## Python\n\nMeasured once."
            )
        );
        assert_eq!(rows.spliced("# Benchmarks\n", "Measured."), None);
    }

    /// The renderer's output for the fixed report, as committed: any change
    /// to BENCHMARKS.md's format shows here first.
    #[test]
    fn the_report_renders_as_committed() {
        let expected = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/bench_report.md"
        ));
        assert_eq!(report().render(), expected);
    }
}
