//! `cargo xtask bench [--quick] [--only http|budget|events|reviewer|trust|args|python|postgres|witnessed|oauth|authzen]
//! [--against BIN]`: measures Mandate against peers and ceilings in one run
//! and writes `BENCHMARKS.md`.
//!
//! Every row is a ratio of two contenders measured side by side, in
//! interleaved rounds, reported as the median with its range, next to the
//! absolute figures. `--quick` runs a few seconds per row against the debug
//! build, checks loose sanity bounds and writes nothing: `cargo xtask test`
//! runs it so the harness never rots. `--only http` measures record/action
//! / `GET /healthz` on SQLite alone (rows 3 and 4's load, with its p99),
//! prints it and writes nothing — with `--against BIN`, the same two on
//! another build's `mandate` in the same interleaved rounds. `--only
//! budget` measures the read-budget rows alone on a fresh folder of 5 M
//! records (1 000 with `--quick`), prints them and writes nothing; `--only
//! events` the events rows alone; `--only reviewer` the dashboard's rows
//! alone, on a fresh
//! folder of 5 M records of several agents over 30 days; `--only trust`
//! the trust graph's recomputation at 10 000 agents and 100 000 vouches,
//! against its ceiling; `--only args` the argument-constraints section,
//! written into BENCHMARKS.md in place of the one there (unless
//! `--quick`); `--only python` the Python section (mandate-sdk for Python
//! against PyJWT, and the adapters' cost per tool call), likewise;
//! `--only postgres` the PostgreSQL rows (direct and through the latency
//! proxy) and the round-trip tables, printed, writing nothing; `--only
//! witnessed` the witnessed log's rows (two witnesses and the submitter
//! against none; the time from a write to a checkpoint cosigned by two of
//! three witnesses), likewise; `--only oauth` the authorization-code
//! exchange (a consent decision, then the token request) p99, likewise;
//! `--only authzen` AuthZEN evaluation / authorize, likewise.
//! `--against BIN` (without `--only http`) measures record/action and
//! delegate on this build and on another build's `mandate` in interleaved
//! rounds, prints the ratios and writes nothing.
//!
//! `running` runs wrk, the server and the bench programs; `parsing` reads
//! their output into figures; `report` renders BENCHMARKS.md, where each
//! target is declared once, as a bound its text is rendered from.

mod oauth;
mod parsing;
mod python;
mod receiver;
mod report;
mod running;

use std::path::Path;

use crate::wasm::target_dir;
use crate::{Result, fail, run};
use parsing::{Spread, errors, p, p99_ratio, ratio};
use report::Report;
use running::{
    DASHBOARD_AGENTS, against, args_rows, budget, cold_starts, dashboard, ensure_wrk, events,
    filled, filled_for_dashboard, growth, http, http_alone, json_of, machine, postgres, record_log,
    reference_verifier, today, wasm_sizes, witnessed,
};

/// How long and how often: full runs for the table, quick ones for CI.
#[derive(Debug, Clone, Copy)]
struct Plan {
    quick: bool,
    /// Seconds of load per contender per round.
    seconds: u32,
    /// Interleaved rounds per comparison.
    rounds: u32,
}

/// `cargo xtask bench --only http [--against BIN]`: record/action /
/// `GET /healthz` on SQLite alone, with record/action's p99; with a
/// baseline, the same on it in the same rounds and this build's record/action
/// over the baseline's. Prints them and writes nothing.
fn http_only(
    plan: Plan,
    bins: &Path,
    baseline: Option<&Path>,
    scratch: &Path,
    scripts: &Path,
) -> Result<()> {
    let rows = http_alone(plan, &bins.join("mandate"), baseline, scratch, scripts)?;
    let _ = std::fs::remove_dir_all(scratch);
    let show = |name: &str, healthz: &[parsing::Load], record: &[parsing::Load]| {
        let spread = ratio(record, healthz);
        let (record_rps, healthz_rps) = (p(record, |l| l.rps), p(healthz, |l| l.rps));
        let p99 = p(record, |l| l.p99_ms);
        eprintln!(
            "{name}: record/action / healthz {:.3} ({:.3}–{:.3})× (target ≥ 0.5×); record/action {:.0} ({:.0}–{:.0}) req/s, p99 {:.2} ({:.2}–{:.2}) ms (target ≤ 10 ms); healthz {:.0} ({:.0}–{:.0}) req/s",
            spread.median,
            spread.min,
            spread.max,
            record_rps.median,
            record_rps.min,
            record_rps.max,
            p99.median,
            p99.min,
            p99.max,
            healthz_rps.median,
            healthz_rps.min,
            healthz_rps.max,
        );
    };
    show("this build", &rows.healthz, &rows.record);
    if !rows.baseline_record.is_empty() {
        show("baseline", &rows.baseline_healthz, &rows.baseline_record);
        let spread = ratio(&rows.record, &rows.baseline_record);
        eprintln!(
            "record/action, this build / baseline: {:.3} ({:.3}–{:.3})×",
            spread.median, spread.min, spread.max
        );
    }
    let failed = errors(&rows.healthz)
        + errors(&rows.record)
        + errors(&rows.baseline_healthz)
        + errors(&rows.baseline_record);
    if failed > 0 {
        return fail(format!("{failed} requests failed under the load"));
    }
    Ok(())
}

/// `cargo xtask bench --only budget`: the read-budget rows alone, on a
/// fresh folder of 5 M records; prints them and writes nothing.
fn budget_only(plan: Plan, bins: &Path, scratch: &Path, scripts: &Path) -> Result<()> {
    let records = if plan.quick { 1_000 } else { 5_000_000 };
    eprintln!("filling {records} records");
    let (data, agent) = filled(
        &bins.join("mandate"),
        &bins.join("prefill"),
        scratch,
        records,
    )?;
    eprintln!("read budget");
    let rows = budget(plan, &bins.join("mandate"), &data, scripts, agent)?;
    let _ = std::fs::remove_dir_all(scratch);
    for row in rows.targets() {
        eprintln!("{}", row.line());
    }
    for (what, figure) in rows.figures() {
        eprintln!("| {what} | {figure} |");
    }
    Ok(())
}

/// `cargo xtask bench --only events`: the events rows alone; prints them
/// and writes nothing.
fn events_only(plan: Plan, bins: &Path, scratch: &Path, scripts: &Path) -> Result<()> {
    let rows = events(plan, &bins.join("mandate"), scratch, scripts)?;
    let _ = std::fs::remove_dir_all(scratch);
    eprintln!("{}", rows.target().line());
    for (what, figure) in rows.figures() {
        eprintln!("| {what} | {figure} |");
    }
    Ok(())
}

/// `cargo xtask bench --only reviewer`: the dashboard's rows alone, on a
/// fresh folder of 5 M records (1 000 with `--quick`) of several agents
/// over 30 days; prints them and writes nothing.
fn reviewer_only(plan: Plan, bins: &Path, scratch: &Path, scripts: &Path) -> Result<()> {
    let records = if plan.quick { 1_000 } else { 5_000_000 };
    eprintln!("filling {records} records");
    let (data, seconds) = filled_for_dashboard(
        &bins.join("mandate"),
        &bins.join("prefill"),
        scratch,
        records,
    )?;
    eprintln!("the dashboard");
    let mut rows = dashboard(
        plan,
        &bins.join("mandate"),
        &data,
        scripts,
        DASHBOARD_AGENTS[0],
    )?;
    rows.prefill_seconds = Some(seconds);
    let _ = std::fs::remove_dir_all(scratch);
    for row in rows.targets() {
        eprintln!("{}", row.line());
    }
    for (what, figure) in rows.figures() {
        eprintln!("| {what} | {figure} |");
    }
    Ok(())
}

/// `cargo xtask bench --only postgres`: the PostgreSQL rows, direct and
/// through the latency proxy, and the round trips per group; prints them
/// and writes nothing.
fn postgres_only(plan: Plan, bins: &Path, scratch: &Path, scripts: &Path) -> Result<()> {
    let rows = postgres(plan, &bins.join("mandate"), scratch, scripts)?;
    let _ = std::fs::remove_dir_all(scratch);
    for (what, figure) in rows.figures() {
        eprintln!("| {what} | {figure} |");
    }
    eprint!("\n{}", rows.round_trips());
    let failed = errors(&rows.record)
        + errors(&rows.one_host)
        + errors(&rows.three_hosts)
        + errors(&rows.proxied_one_host)
        + errors(&rows.proxied_three_hosts)
        + errors(&rows.proxied_own.0)
        + errors(&rows.proxied_own.1);
    if failed > 0 {
        return fail(format!("{failed} requests failed under the load"));
    }
    Ok(())
}

/// `cargo xtask bench --only witnessed`: the witnessed log's rows alone,
/// printed; writes nothing.
fn witnessed_only(plan: Plan, bins: &Path, scratch: &Path, scripts: &Path) -> Result<()> {
    let rows = witnessed(plan, &bins.join("mandate"), scratch, scripts)?;
    let _ = std::fs::remove_dir_all(scratch);
    for row in rows.targets() {
        eprintln!("{}", row.line());
    }
    for (what, figure) in rows.figures() {
        eprintln!("| {what} | {figure} |");
    }
    let failed = errors(&rows.with_witnesses) + errors(&rows.without_witnesses);
    if failed > 0 {
        return fail(format!("{failed} requests failed under the load"));
    }
    Ok(())
}

/// `cargo xtask bench --only oauth`: the authorization-code exchange
/// alone, printed; writes nothing.
fn oauth_only(plan: Plan, bins: &Path, scratch: &Path) -> Result<()> {
    let rows = oauth::exchange(plan, &bins.join("mandate"), scratch)?;
    let _ = std::fs::remove_dir_all(scratch);
    eprintln!("{}", rows.target().line());
    for (what, figure) in rows.figures() {
        eprintln!("| {what} | {figure} |");
    }
    Ok(())
}

/// `cargo xtask bench --only authzen`: AuthZEN evaluation by a gateway /
/// `authorize` with the token itself, in interleaved rounds; prints the
/// row and writes nothing.
fn authzen_only(plan: Plan, bins: &Path, scratch: &Path, scripts: &Path) -> Result<()> {
    let (evaluation, authorize) =
        running::authzen_alone(plan, &bins.join("mandate"), scratch, scripts)?;
    let _ = std::fs::remove_dir_all(scratch);
    let failed = errors(&evaluation) + errors(&authorize);
    let spread = ratio(&evaluation, &authorize);
    eprintln!(
        "AuthZEN evaluation / authorize: {:.3} ({:.3}–{:.3})× (target ≥ 0.9×)",
        spread.median, spread.min, spread.max
    );
    if failed > 0 {
        return fail(format!("{failed} requests failed under the load"));
    }
    Ok(())
}

/// `cargo xtask bench --against BIN`: record/action and delegate on this
/// build and on `baseline` (the `mandate` of another build, e.g. a release
/// build of the commit before a change), in interleaved rounds; prints the
/// ratios and writes nothing. A change on the write path states its cost
/// with it.
fn against_only(
    plan: Plan,
    bins: &Path,
    baseline: &Path,
    scratch: &Path,
    scripts: &Path,
) -> Result<()> {
    let rows = against(plan, &bins.join("mandate"), baseline, scratch, scripts)?;
    let _ = std::fs::remove_dir_all(scratch);
    let failed = errors(&rows.record)
        + errors(&rows.baseline_record)
        + errors(&rows.delegate)
        + errors(&rows.baseline_delegate);
    for row in rows.targets() {
        eprintln!("{}", row.line());
    }
    for (what, figure) in rows.figures() {
        eprintln!("| {what} | {figure} |");
    }
    if failed > 0 {
        return fail(format!("{failed} requests failed under the load"));
    }
    Ok(())
}

/// `cargo xtask bench --only args`: the argument-constraints section alone
/// (the HTTP load with and without the rules, the native and the wasm
/// evaluation); prints it and, unless `--quick`, writes it into
/// BENCHMARKS.md in place of the one there.
fn args_only(plan: Plan, root: &Path, bins: &Path, scratch: &Path, scripts: &Path) -> Result<()> {
    if !plan.quick || !root.join("wasm/pkg/node").exists() {
        crate::wasm::build(root)?;
    }
    let rows = args_rows(plan, root, bins, scratch, scripts)?;
    let _ = std::fs::remove_dir_all(scratch);
    let failed = errors(&rows.with_rules) + errors(&rows.without_rules);
    if failed > 0 {
        return fail(format!("{failed} requests failed under the load"));
    }
    let measured = format!(
        "Measured by `cargo xtask bench --only args` on {} ({}), {} rounds of {} s per HTTP contender.",
        machine(),
        today(),
        plan.rounds,
        plan.seconds
    );
    eprint!("{}", rows.section(&measured));
    if plan.quick {
        return Ok(());
    }
    let path = root.join("BENCHMARKS.md");
    let Some(text) = rows.spliced(&std::fs::read_to_string(&path)?, &measured) else {
        return fail("BENCHMARKS.md has no `Reproduce:` paragraph to put the section before");
    };
    std::fs::write(&path, text)?;
    eprintln!("wrote the section into BENCHMARKS.md");
    Ok(())
}

/// `cargo xtask bench --only python`: the Python section alone; prints it
/// and, unless `--quick`, writes it into BENCHMARKS.md in place of the one
/// there, failing when a target is not met.
fn python_only(root: &Path, quick: bool) -> Result<()> {
    let bins = programs(root, quick)?;
    let rows = python::python_rows(root, quick, &bins.join("mandate"))?;
    let measured = format!(
        "Measured by `cargo xtask bench --only python` on {} ({}).",
        machine(),
        today()
    );
    eprint!("{}", rows.section(&measured));
    if quick {
        return Ok(());
    }
    let path = root.join("BENCHMARKS.md");
    let Some(text) = rows.spliced(&std::fs::read_to_string(&path)?, &measured) else {
        return fail("BENCHMARKS.md has no `Reproduce:` paragraph to put the section before");
    };
    std::fs::write(&path, text)?;
    eprintln!("wrote the section into BENCHMARKS.md");
    if rows.met() {
        Ok(())
    } else {
        fail("a target of the Python section is not met")
    }
}

/// The folder of the server and the bench programs: the test command's
/// debug build for `--quick`, else a release build.
fn programs(root: &Path, quick: bool) -> Result<std::path::PathBuf> {
    if quick {
        return crate::debug_programs(root);
    }
    run(
        "cargo",
        &[
            "build",
            "-p",
            "mandate-host",
            "-p",
            "mandate-bench",
            "--bins",
            "--release",
        ],
    )?;
    Ok(target_dir(root)?.join("release"))
}

/// The most a recomputation of the trust scores of 10 000 agents and
/// 100 000 vouches may take (the median of five, release build): the
/// server recomputes an organisation in the background after a change, and
/// a change must count within a few seconds. Measured: about 90 ms.
const TRUST_RECOMPUTE_CEILING_MS: f64 = 1_000.0;

/// `cargo xtask bench --only trust`: `trust_scores` over a graph of 10 000
/// agents and 100 000 vouches (1 000 and 10 000 with `--quick`), held to
/// [`TRUST_RECOMPUTE_CEILING_MS`]; prints the row and writes nothing.
fn trust_only(root: &Path, quick: bool) -> Result<()> {
    let bin = programs(root, quick)?.join("trust_recompute");
    let flag: &[&str] = if quick { &["--quick"] } else { &[] };
    let row = json_of(&bin, flag, root)?;
    let median = row["median_ms"].as_f64().unwrap_or(f64::NAN);
    eprintln!(
        "| trust recompute, {} agents / {} vouches | {median:.1} ms median of 5 (ceiling {TRUST_RECOMPUTE_CEILING_MS} ms) |",
        row["agents"], row["vouches"]
    );
    if quick || median <= TRUST_RECOMPUTE_CEILING_MS {
        Ok(())
    } else {
        fail(format!(
            "trust recompute took {median:.1} ms, over the ceiling of {TRUST_RECOMPUTE_CEILING_MS} ms"
        ))
    }
}

/// `cargo xtask bench [--quick] [--only http|budget|events|reviewer|trust|args|python|postgres|witnessed|oauth|authzen] [--against BIN]`.
pub(crate) fn bench(root: &Path, args: &[&str]) -> Result<()> {
    let quick = args.contains(&"--quick");
    let only = match args.iter().position(|a| *a == "--only") {
        None => None,
        Some(i) => match args.get(i + 1) {
            Some(&"http") => Some("http"),
            Some(&"budget") => Some("budget"),
            Some(&"events") => Some("events"),
            Some(&"reviewer") => Some("reviewer"),
            Some(&"trust") => Some("trust"),
            Some(&"args") => Some("args"),
            Some(&"python") => Some("python"),
            Some(&"postgres") => Some("postgres"),
            Some(&"witnessed") => Some("witnessed"),
            Some(&"oauth") => Some("oauth"),
            Some(&"authzen") => Some("authzen"),
            other => {
                return fail(format!(
                    "--only takes `http` (record/action / healthz on SQLite), `budget` (the read-budget rows), `events` (the events rows), `reviewer` (the dashboard's rows), `trust` (the trust recompute row), `args` (the argument-constraints section), `python` (the Python section), `postgres` (the PostgreSQL rows and round trips), `witnessed` (the witnessed log's rows), `oauth` (the authorization-code exchange) or `authzen` (AuthZEN evaluation / authorize), not {other:?}"
                ));
            }
        },
    };
    let plan = if quick {
        Plan {
            quick,
            seconds: 1,
            rounds: 1,
        }
    } else {
        Plan {
            quick,
            seconds: 5,
            rounds: 5,
        }
    };
    let baseline = match args.iter().position(|a| *a == "--against") {
        None => None,
        Some(i) => match args.get(i + 1) {
            Some(path) if Path::new(path).is_file() => Some(Path::new(path).to_owned()),
            other => {
                return fail(format!(
                    "--against takes the path of another build's mandate executable, not {other:?}"
                ));
            }
        },
    };
    if only == Some("trust") {
        return trust_only(root, quick);
    }
    if only == Some("python") {
        return python_only(root, quick);
    }
    ensure_wrk()?;
    let bins = programs(root, quick)?;
    let scripts = root.join("bench/wrk");
    let scratch = std::env::temp_dir().join(format!("mandate-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch)?;
    if only == Some("http") {
        return http_only(plan, &bins, baseline.as_deref(), &scratch, &scripts);
    }
    if let Some(baseline) = baseline {
        return against_only(plan, &bins, &baseline, &scratch, &scripts);
    }
    match only {
        Some("budget") => return budget_only(plan, &bins, &scratch, &scripts),
        Some("reviewer") => return reviewer_only(plan, &bins, &scratch, &scripts),
        Some("args") => return args_only(plan, root, &bins, &scratch, &scripts),
        Some("postgres") => return postgres_only(plan, &bins, &scratch, &scripts),
        Some("witnessed") => return witnessed_only(plan, &bins, &scratch, &scripts),
        Some("oauth") => return oauth_only(plan, &bins, &scratch),
        Some("authzen") => return authzen_only(plan, &bins, &scratch, &scripts),
        Some(_) => return events_only(plan, &bins, &scratch, &scripts),
        None => {}
    }
    if !quick || !root.join("wasm/pkg/web").exists() {
        crate::wasm::build(root)?;
    }
    let plugin = reference_verifier(root)?;
    let flag: &[&str] = if quick { &["--quick"] } else { &[] };

    eprintln!("\nnative verification");
    let native = json_of(&bins.join("native_verify"), flag, root)?;
    eprintln!("verification in Node");
    let mut node_args = vec!["bench/verify.mjs", "--json"];
    node_args.extend_from_slice(flag);
    let node = json_of(Path::new("node"), &node_args, &root.join("wasm"))?;
    eprintln!("record proofs in Node");
    let mut log_args = vec!["bench/log.mjs", "--json"];
    log_args.extend_from_slice(flag);
    let node_log = json_of(Path::new("node"), &log_args, &root.join("wasm"))?;
    eprintln!("status list sizes");
    let status_sizes = json_of(&bins.join("status_sizes"), &[], root)?;
    eprintln!("plugin calls");
    let mut plugin_args = vec![plugin.to_str().ok_or("path")?];
    plugin_args.extend_from_slice(flag);
    let plugin_cost = json_of(&bins.join("plugin_cost"), &plugin_args, root)?;
    eprintln!("durable writes over HTTP");
    let http = http(plan, &bins.join("mandate"), &scratch, &scripts)?;
    eprintln!("the authorization-code exchange");
    let exchange = oauth::exchange(plan, &bins.join("mandate"), &scratch)?;
    eprintln!("the record log");
    let log = record_log(plan, &bins.join("mandate"), &scratch, &scripts)?;
    eprintln!("the witnessed log");
    let witnessed = witnessed(plan, &bins.join("mandate"), &scratch, &scripts)?;
    eprintln!("events");
    let events = events(plan, &bins.join("mandate"), &scratch, &scripts)?;
    let sizes: &[u64] = if quick {
        &[1_000]
    } else {
        &[0, 1_000_000, 5_000_000]
    };
    eprintln!("growth");
    let growth = growth(
        plan,
        &bins.join("mandate"),
        &bins.join("prefill"),
        &scratch,
        &scripts,
        sizes,
    )?;
    eprintln!("read budget");
    let budget = budget(
        plan,
        &bins.join("mandate"),
        &scratch.join("growth"),
        &scripts,
        "growth-bot",
    )?;
    eprintln!("the dashboard");
    let dashboard = dashboard(
        plan,
        &bins.join("mandate"),
        &scratch.join("growth"),
        &scripts,
        "growth-bot",
    )?;
    eprintln!("argument constraints");
    let args = args_rows(plan, root, &bins, &scratch, &scripts)?;
    eprintln!("Python");
    let python = python::python_rows(root, quick, &bins.join("mandate"))?;
    eprintln!("PostgreSQL");
    let postgres = postgres(plan, &bins.join("mandate"), &scratch, &scripts)?;
    let cold = cold_starts(&bins.join("mandate"), &scratch, if quick { 1 } else { 5 })?;
    let (wasm_raw, wasm_gzip) = wasm_sizes(root)?;
    let _ = std::fs::remove_dir_all(&scratch);

    if quick {
        let sane = [
            (
                "native core/bare",
                Spread::from_json(&native["core_over_bare"]).median,
            ),
            (
                "node jose/verifyToken",
                Spread::from_json(&node["jose_over_verifyToken"]).median,
            ),
            ("record/healthz", ratio(&http.record, &http.healthz).median),
            ("authorization-code exchange p99 ms", exchange.p99_ms()),
            (
                "AuthZEN evaluation/authorize",
                ratio(&http.evaluation, &http.authorize).median,
            ),
            (
                "PostgreSQL/SQLite",
                ratio(&postgres.record, &postgres.sqlite).median,
            ),
            (
                "three hosts/one host",
                ratio(&postgres.three_hosts, &postgres.one_host).median,
            ),
            (
                "three hosts/one host through the proxy",
                ratio(&postgres.proxied_three_hosts, &postgres.proxied_one_host).median,
            ),
            (
                "three hosts/one host through the proxy, own clients",
                ratio(&postgres.proxied_own.1, &postgres.proxied_own.0).median,
            ),
            ("proxy round trip µs", postgres.rtt_us.0),
            (
                "writer round trips per batch of one",
                postgres.batches.first().map_or(f64::NAN, |b| b.lanes[0]),
            ),
            (
                "API-key read p99 beside slow reads / alone",
                p99_ratio(&budget.beside_slow, &budget.alone).median,
            ),
            (
                "plugin call ns",
                Spread::from_json(&plugin_cost["call_ns"]).median,
            ),
            (
                "record/action with the log / without",
                ratio(&log.with_log, &log.without_log).median,
            ),
            ("proof p99 ms", p(&log.proof, |l| l.p99_ms).median),
            (
                "record/action with two witnesses / without",
                ratio(&witnessed.with_witnesses, &witnessed.without_witnesses).median,
            ),
            (
                "write to 2-of-3 cosigned checkpoint, p99 ms",
                witnessed.cosigned_p99_ms(),
            ),
            (
                "record/action with events / without",
                ratio(&events.with_events, &events.without_events).median,
            ),
            (
                "dashboard, slowest page p99 ms",
                dashboard
                    .targets()
                    .iter()
                    .map(|row| row.median())
                    .fold(f64::NAN, f64::max),
            ),
            (
                "record/action with argument rules / without",
                ratio(&args.with_rules, &args.without_rules).median,
            ),
            ("args wasm/native", args.targets()[2].median()),
            ("PyJWT/verify_token", python.targets()[0].median()),
            ("PyJWT/cached Verifier", python.targets()[1].median()),
            (
                "node sdk/independent log proof",
                Spread::from_json(&node_log["sdk_over_independent"]).median,
            ),
            (
                "status list bytes, 10 % revoked",
                status_sizes["revoked_percent"]["10"]["signed"]
                    .as_f64()
                    .unwrap_or(f64::NAN),
            ),
        ];
        let adapters = python
            .adapters_alone()
            .into_iter()
            .map(|(name, ms)| (format!("{name} adapter alone ms"), ms));
        let sane = sane
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value));
        for (name, value) in sane.chain(adapters) {
            eprintln!("{name}: {value:.3}");
            if !(value.is_finite() && value > 0.0) {
                return fail(format!("bench sanity: {name} is {value}"));
            }
        }
        let lost = errors(&http.record)
            + errors(&http.healthz)
            + errors(&http.record_by_token)
            + errors(&http.full_control)
            + errors(&http.delegate)
            + errors(&http.evaluation)
            + errors(&http.authorize)
            + errors(&postgres.record)
            + errors(&postgres.one_host)
            + errors(&postgres.three_hosts)
            + errors(&postgres.proxied_one_host)
            + errors(&postgres.proxied_three_hosts)
            + errors(&postgres.proxied_own.0)
            + errors(&postgres.proxied_own.1)
            + errors(&log.with_log)
            + errors(&log.without_log)
            + errors(&log.proof)
            + errors(&witnessed.with_witnesses)
            + errors(&witnessed.without_witnesses)
            + errors(&events.with_events)
            + errors(&events.without_events)
            + errors(&args.with_rules)
            + errors(&args.without_rules)
            + dashboard
                .pages
                .iter()
                .flat_map(|page| &page.calls)
                .map(|(_, loads)| errors(loads))
                .sum::<u64>();
        if lost > 0 {
            return fail(format!("bench sanity: {lost} failed requests under load"));
        }
        eprintln!("bench --quick: sane");
        return Ok(());
    }
    let report = Report {
        machine: machine(),
        date: today(),
        notes: std::fs::read_to_string(root.join("bench/NOTES.md")).unwrap_or_default(),
        native,
        node,
        plugin_cost,
        http,
        exchange,
        growth,
        budget,
        postgres,
        log,
        witnessed,
        events,
        dashboard,
        args,
        python,
        status_sizes,
        node_log,
        cold,
        wasm: (wasm_raw, wasm_gzip),
        plan,
    };
    std::fs::write(root.join("BENCHMARKS.md"), report.render())?;
    eprintln!("wrote BENCHMARKS.md");
    Ok(())
}
