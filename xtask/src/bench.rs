//! `cargo xtask bench [--quick] [--only budget]`: measures Mandate against
//! peers and ceilings in one run and writes `BENCHMARKS.md`.
//!
//! Every row is a ratio of two contenders measured side by side, in
//! interleaved rounds, reported as the median with its range, next to the
//! absolute figures. `--quick` runs a few seconds per row against the debug
//! build, checks loose sanity bounds and writes nothing: `cargo xtask test`
//! runs it so the harness never rots. `--only budget` measures the
//! read-budget rows alone on a fresh folder of 5 M records (1 000 with
//! `--quick`), prints them and writes nothing.

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use crate::wasm::target_dir;
use crate::{Result, fail, run};

/// How long and how often: full runs for the table, quick ones for CI.
#[derive(Debug, Clone, Copy)]
struct Plan {
    quick: bool,
    /// Seconds of load per contender per round.
    seconds: u32,
    /// Interleaved rounds per comparison.
    rounds: u32,
}

/// Median and range of per-round figures.
#[derive(Debug, Clone, Copy)]
struct Spread {
    median: f64,
    min: f64,
    max: f64,
}

impl Spread {
    fn of(samples: &[f64]) -> Spread {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        Spread {
            median: sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN),
            min: sorted.first().copied().unwrap_or(f64::NAN),
            max: sorted.last().copied().unwrap_or(f64::NAN),
        }
    }

    fn from_json(value: &Value) -> Spread {
        let get = |k: &str| value[k].as_f64().unwrap_or(f64::NAN);
        Spread {
            median: get("median"),
            min: get("min"),
            max: get("max"),
        }
    }

    fn show(&self, digits: usize) -> String {
        format!(
            "{:.d$} ({:.d$}–{:.d$})",
            self.median,
            self.min,
            self.max,
            d = digits
        )
    }
}

/// One load run of wrk.
#[derive(Debug, Clone, Copy)]
struct Load {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
}

fn ms(text: &str) -> f64 {
    let (number, unit) = text.split_at(
        text.find(|c: char| c.is_ascii_alphabetic())
            .unwrap_or(text.len()),
    );
    let value: f64 = number.parse().unwrap_or(f64::NAN);
    match unit {
        "us" => value / 1000.0,
        "ms" => value,
        "s" => value * 1000.0,
        _ => f64::NAN,
    }
}

fn parse_wrk(output: &str) -> Load {
    let mut load = Load {
        rps: f64::NAN,
        p50_ms: f64::NAN,
        p99_ms: f64::NAN,
        errors: 0,
    };
    for line in output.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["Requests/sec:", rps] => load.rps = rps.parse().unwrap_or(f64::NAN),
            ["50%", value] => load.p50_ms = ms(value),
            ["99%", value] => load.p99_ms = ms(value),
            ["Non-2xx", "or", "3xx", "responses:", n] => {
                load.errors += n.parse::<u64>().unwrap_or(0)
            }
            ["Socket", "errors:", rest @ ..] => {
                load.errors += rest
                    .iter()
                    .filter_map(|w| w.trim_end_matches(',').parse::<u64>().ok())
                    .sum::<u64>();
            }
            _ => {}
        }
    }
    load
}

fn ensure_wrk() -> Result<()> {
    if Command::new("wrk").arg("--version").output().is_ok() {
        return Ok(());
    }
    for _ in 0..3 {
        if run(
            "apt-get",
            &["install", "-y", "--no-install-recommends", "wrk"],
        )
        .is_ok()
        {
            return Ok(());
        }
    }
    fail("wrk is missing and could not be installed")
}

/// wrk against `url` for `seconds` with 64 connections on 2 threads.
fn wrk(url: &str, script: Option<&Path>, env: &[(&str, &str)], seconds: u32) -> Result<Load> {
    wrk_with(url, script, env, seconds, 64)
}

/// wrk against `url` for `seconds` with `connections` connections.
fn wrk_with(
    url: &str,
    script: Option<&Path>,
    env: &[(&str, &str)],
    seconds: u32,
    connections: u32,
) -> Result<Load> {
    let output = wrk_command(url, script, env, seconds, connections).output()?;
    if !output.status.success() {
        return fail(format!(
            "wrk failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(parse_wrk(&String::from_utf8_lossy(&output.stdout)))
}

/// The wrk command for `connections` connections (on at most 2 threads).
fn wrk_command(
    url: &str,
    script: Option<&Path>,
    env: &[(&str, &str)],
    seconds: u32,
    connections: u32,
) -> Command {
    let mut command = Command::new("wrk");
    command.args([
        &format!("-t{}", connections.min(2)),
        &format!("-c{connections}"),
        "--latency",
        &format!("-d{seconds}s"),
    ]);
    if let Some(script) = script {
        command.arg("-s").arg(script);
    }
    command.arg(url).envs(env.iter().copied());
    command
}

/// A `mandate serve` process for the benchmarks.
struct Server {
    child: Child,
    base: String,
    data: PathBuf,
    started_ms: f64,
}

impl Server {
    fn start(bin: &Path, data: &Path, config: &str) -> Result<Server> {
        std::fs::create_dir_all(data)?;
        let config_path = data.with_extension("toml");
        std::fs::write(&config_path, config)?;
        let started = Instant::now();
        let mut child = Command::new(bin)
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data)
            .arg("--config")
            .arg(&config_path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let base = BufReader::new(stdout)
            .lines()
            .map_while(std::result::Result::ok)
            .find_map(|line| line.strip_prefix("listening on ").map(str::to_owned))
            .ok_or("the server did not start")?;
        Ok(Server {
            child,
            base,
            data: data.to_owned(),
            started_ms: started.elapsed().as_secs_f64() * 1000.0,
        })
    }

    fn key(&self) -> Result<String> {
        Ok(std::fs::read_to_string(self.data.join("admin.key"))?
            .trim()
            .to_owned())
    }

    /// Peak resident memory so far, MiB.
    fn peak_rss_mib(&self) -> f64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|status| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| {
                        v.split_whitespace()
                            .next()
                            .and_then(|kb| kb.parse::<f64>().ok())
                    })
            })
            .map_or(f64::NAN, |kb| kb / 1024.0)
    }

    fn post(&self, path: &str, key: Option<&str>, body: &Value) -> Result<Value> {
        let mut command = Command::new("curl");
        command.args(["-sS", "-X", "POST", "-H", "content-type: application/json"]);
        if let Some(key) = key {
            command.args(["-H", &format!("authorization: Bearer {key}")]);
        }
        let output = command
            .args(["-d", &body.to_string(), &format!("{}{path}", self.base)])
            .output()?;
        Ok(serde_json::from_slice(&output.stdout)?)
    }

    fn get(&self, path: &str, key: &str) -> Result<Value> {
        let output = Command::new("curl")
            .args([
                "-sS",
                "-H",
                &format!("authorization: Bearer {key}"),
                &format!("{}{path}", self.base),
            ])
            .output()?;
        Ok(serde_json::from_slice(&output.stdout)?)
    }

    /// A root token for the load, without limits, for a day: its jti.
    fn token(&self, agent: &str, actions: &[&str]) -> Result<String> {
        Ok(self.issued(agent, actions)?.0)
    }

    /// A root token for the load, without limits, for a day: its jti and
    /// its compact form.
    fn issued(&self, agent: &str, actions: &[&str]) -> Result<(String, String)> {
        let body = json!({
            "developer_email": "bench@example.com", "agent_id": agent,
            "resources": ["crm:*"], "actions": actions, "ttl_seconds": 86_400
        });
        let issued = self.post("/v1/vat/issue/l1", Some(&self.key()?), &body)?;
        match (issued["jti"].as_str(), issued["compact_jwt"].as_str()) {
            (Some(jti), Some(compact)) => Ok((jti.to_owned(), compact.to_owned())),
            _ => fail(format!("issue failed: {issued}")),
        }
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const NO_LIMITS: &str = "[rate_limits]\nper_api_key = 0\nper_token = 0\nper_ip = 0\n";

/// Interleaves `a` and `b` for `plan.rounds` rounds; returns their loads.
fn compare(
    plan: Plan,
    a: &dyn Fn() -> Result<Load>,
    b: &dyn Fn() -> Result<Load>,
) -> Result<(Vec<Load>, Vec<Load>)> {
    let (mut first, mut second) = (Vec::new(), Vec::new());
    for _ in 0..plan.rounds {
        first.push(a()?);
        second.push(b()?);
    }
    Ok((first, second))
}

fn rps(loads: &[Load]) -> Spread {
    Spread::of(&loads.iter().map(|l| l.rps).collect::<Vec<_>>())
}

fn p(loads: &[Load], pick: fn(&Load) -> f64) -> Spread {
    Spread::of(&loads.iter().map(pick).collect::<Vec<_>>())
}

fn ratio(a: &[Load], b: &[Load]) -> Spread {
    Spread::of(
        &a.iter()
            .zip(b)
            .map(|(a, b)| a.rps / b.rps)
            .collect::<Vec<_>>(),
    )
}

fn errors(loads: &[Load]) -> u64 {
    loads.iter().map(|l| l.errors).sum()
}

/// The rows of the HTTP section.
struct Http {
    healthz: Vec<Load>,
    record: Vec<Load>,
    /// record/action with the token itself, in turns with `record_by_jti`.
    record_by_token: Vec<Load>,
    record_by_jti: Vec<Load>,
    full_control: Vec<Load>,
    delegate: Vec<Load>,
    single_commit: Vec<Load>,
    grouped_for_single: Vec<Load>,
    peak_rss_mib: f64,
    batch_mean: f64,
}

/// Parent tokens for the delegation load: enough that none reaches its
/// 1000 children in a full run (about 11 k delegations a second).
const DELEGATE_PARENTS: usize = 400;

fn http(plan: Plan, bin: &Path, scratch: &Path, scripts: &Path) -> Result<Http> {
    let server = Server::start(bin, &scratch.join("http"), NO_LIMITS)?;
    let (jti, compact) = server.issued("bench-bot", &["read", "delegate"])?;
    let health_url = format!("{}/healthz", server.base);
    let record_url = format!("{}/v1/vat/record/action", server.base);
    let env = [("JTI", jti.as_str())];
    let record_script = scripts.join("record.lua");
    let healthz = || wrk(&health_url, None, &[], plan.seconds);
    let record = || wrk(&record_url, Some(&record_script), &env, plan.seconds);
    let (healthz_loads, record_loads) = compare(plan, &healthz, &record)?;
    let bearer_script = scripts.join("record_bearer.lua");
    let bearer_env = [("TOKEN", compact.as_str())];
    let (record_by_token, record_by_jti) = compare(
        plan,
        &|| wrk(&record_url, Some(&bearer_script), &bearer_env, plan.seconds),
        &record,
    )?;
    let full_script = scripts.join("full_control.lua");
    let full_control = (0..plan.rounds)
        .map(|_| wrk(&server.base, Some(&full_script), &env, plan.seconds))
        .collect::<Result<Vec<_>>>()?;
    let delegate_script = scripts.join("delegate.lua");
    let delegate_url = format!("{}/v1/vat/delegate", server.base);
    let parents_file = scratch.join("parents.txt");
    let parents = (0..if plan.quick { 4 } else { DELEGATE_PARENTS })
        .map(|n| {
            Ok(server
                .issued(&format!("bench-parent-{n}"), &["read", "delegate"])?
                .1)
        })
        .collect::<Result<Vec<_>>>()?;
    std::fs::write(&parents_file, parents.join("\n") + "\n")?;
    let parents_env = [("PARENTS", parents_file.to_str().ok_or("path")?)];
    let delegate = (0..plan.rounds)
        .map(|_| {
            wrk(
                &delegate_url,
                Some(&delegate_script),
                &parents_env,
                plan.seconds,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let metrics = Command::new("curl")
        .args(["-sS", &format!("{}/metrics", server.base)])
        .output()?;
    let metrics = String::from_utf8_lossy(&metrics.stdout);
    let metric = |name: &str| {
        metrics
            .lines()
            .find_map(|l| {
                l.strip_prefix(name)
                    .and_then(|v| v.trim().parse::<f64>().ok())
            })
            .unwrap_or(f64::NAN)
    };
    let batch_mean = metric("mandate_group_commit_batch_size_sum")
        / metric("mandate_group_commit_batch_size_count");
    let peak_rss_mib = server.peak_rss_mib();
    server.stop();

    // The same load with one commit per write, against group commit, in turns.
    let single = Server::start(
        bin,
        &scratch.join("single"),
        &format!("max_batch = 1\n{NO_LIMITS}"),
    )?;
    let grouped = Server::start(bin, &scratch.join("grouped"), NO_LIMITS)?;
    let single_jti = single.token("bench-bot", &["read"])?;
    let grouped_jti = grouped.token("bench-bot", &["read"])?;
    let single_url = format!("{}/v1/vat/record/action", single.base);
    let grouped_url = format!("{}/v1/vat/record/action", grouped.base);
    let (single_commit, grouped_for_single) = compare(
        plan,
        &|| {
            wrk(
                &single_url,
                Some(&record_script),
                &[("JTI", single_jti.as_str())],
                plan.seconds,
            )
        },
        &|| {
            wrk(
                &grouped_url,
                Some(&record_script),
                &[("JTI", grouped_jti.as_str())],
                plan.seconds,
            )
        },
    )?;
    single.stop();
    grouped.stop();
    Ok(Http {
        healthz: healthz_loads,
        record: record_loads,
        record_by_token,
        record_by_jti,
        full_control,
        delegate,
        single_commit,
        grouped_for_single,
        peak_rss_mib,
        batch_mean,
    })
}

/// The rows of the growth section.
struct Growth {
    /// Records stored before the load → (record/action, healthz) loads.
    by_size: Vec<(u64, Vec<Load>, Vec<Load>)>,
    summary: Vec<Load>,
    query: Vec<Load>,
    bytes_per_record: f64,
    restart_ms: f64,
    prefill_seconds: f64,
    peak_rss_mib: f64,
}

fn db_bytes(data: &Path) -> u64 {
    ["mandate.db", "mandate.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(data.join(f)).ok())
        .map(|m| m.len())
        .sum()
}

fn growth(
    plan: Plan,
    bin: &Path,
    prefill: &Path,
    scratch: &Path,
    scripts: &Path,
    sizes: &[u64],
) -> Result<Growth> {
    let data = scratch.join("growth");
    let server = Server::start(bin, &data, NO_LIMITS)?;
    let key = server.key()?;
    let jti = server.token("growth-bot", &["read"])?;
    let workflow_jti = server.token("summary-bot", &["read"])?;
    let provenance = server.get(&format!("/v1/vat/tokens/{workflow_jti}"), &key)?["provenance_ref"]
        .as_str()
        .map(str::to_owned)
        .ok_or("no provenance_ref")?;
    server.stop();
    let workflow_records = if plan.quick { 200 } else { 10_000 };
    run(
        &prefill.to_string_lossy(),
        &[
            &data.to_string_lossy(),
            &workflow_jti,
            &workflow_records.to_string(),
        ],
    )?;
    let mut stored = workflow_records;
    let mut by_size = Vec::new();
    let mut prefill_seconds = 0.0;
    let record_script = scripts.join("record.lua");
    let mut restart_ms = f64::NAN;
    let mut peak_rss_mib = f64::NAN;
    let mut summary = Vec::new();
    let mut query = Vec::new();
    for (i, &size) in sizes.iter().enumerate() {
        if size > stored {
            let started = Instant::now();
            run(
                &prefill.to_string_lossy(),
                &[&data.to_string_lossy(), &jti, &(size - stored).to_string()],
            )?;
            prefill_seconds += started.elapsed().as_secs_f64();
            stored = size;
        }
        let server = Server::start(bin, &data, NO_LIMITS)?;
        restart_ms = server.started_ms;
        let env = [("JTI", jti.as_str())];
        let record_url = format!("{}/v1/vat/record/action", server.base);
        let health_url = format!("{}/healthz", server.base);
        let (record, healthz) = compare(
            plan,
            &|| wrk(&record_url, Some(&record_script), &env, plan.seconds),
            &|| wrk(&health_url, None, &[], plan.seconds),
        )?;
        by_size.push((size, record, healthz));
        if i + 1 == sizes.len() {
            let get_script = scripts.join("get.lua");
            let summary_path = format!("/v1/vat/aar/provenance/{provenance}");
            let counted = server.get(&summary_path, &key)?;
            if counted["total_records"].as_u64() != Some(workflow_records) {
                return fail(format!(
                    "the summary of the prefilled workflow is wrong: {counted}"
                ));
            }
            let page = server.get("/v1/vat/aar?agent_id=growth-bot&action=read&limit=50", &key)?;
            let cursor = page["next_cursor"].as_str().unwrap_or_default().to_owned();
            let query_path =
                format!("/v1/vat/aar?agent_id=growth-bot&action=read&limit=50&cursor={cursor}");
            for _ in 0..plan.rounds {
                summary.push(wrk(
                    &server.base,
                    Some(&get_script),
                    &[("KEY", &key), ("PATH_QUERY", &summary_path)],
                    plan.seconds,
                )?);
                query.push(wrk(
                    &server.base,
                    Some(&get_script),
                    &[("KEY", &key), ("PATH_QUERY", &query_path)],
                    plan.seconds,
                )?);
            }
            peak_rss_mib = server.peak_rss_mib();
        }
        server.stop();
    }
    let records: f64 = stored as f64
        + by_size
            .iter()
            .flat_map(|(_, r, _)| r)
            .map(|l| l.rps * f64::from(plan.seconds))
            .sum::<f64>();
    Ok(Growth {
        by_size,
        summary,
        query,
        bytes_per_record: db_bytes(&data) as f64 / records,
        restart_ms,
        prefill_seconds,
        peak_rss_mib,
    })
}

/// Query readers (`readers`) of the server's default configuration.
const READERS: u32 = 4;
/// The server's default `query_budget_ms`, set explicitly for the budget rows.
const BUDGET_MS: u32 = 500;
/// A record filter no index serves and no record matches: without a budget
/// every record would be read.
const UNINDEXED: &str = "/v1/vat/aar?resource=crm:nothing&limit=50";

/// The rows of the read-budget section, on the largest data folder.
struct Budget {
    /// The unindexed filter on `READERS` connections, every query reader busy.
    unindexed: Vec<Load>,
    /// An API-key read (an agent's reputation) on an otherwise idle server…
    alone: Vec<Load>,
    /// …and the same while `2 × READERS` unindexed filters run, in turns.
    beside_slow: Vec<Load>,
    /// One unindexed filter on a server with an hour's budget (ms).
    unbounded_ms: f64,
}

impl Server {
    /// Read connections of `lane` in use, from `/metrics` (open on loopback).
    fn readers_busy(&self, lane: &str) -> Result<u32> {
        let output = Command::new("curl")
            .args(["-sS", &format!("{}/metrics", self.base)])
            .output()?;
        let prefix = format!("mandate_readers_busy{{lane=\"{lane}\"}} ");
        Ok(String::from_utf8_lossy(&output.stdout)
            .lines()
            .find_map(|line| line.strip_prefix(&prefix)?.trim().parse().ok())
            .unwrap_or(0))
    }

    /// Waits until no read of a load that ended still holds a query reader.
    fn wait_for_idle_readers(&self) -> Result<()> {
        let started = Instant::now();
        while self.readers_busy("queries")? > 0 {
            if started.elapsed().as_millis() > u128::from(2 * BUDGET_MS) {
                return fail("the query readers stayed busy after the load ended");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Ok(())
    }
}

/// The budget rows on `data`, whose records belong to `agent`: how long an
/// unindexed filter takes to be answered, and what slow reads do to an
/// API-key read.
fn budget(plan: Plan, bin: &Path, data: &Path, scripts: &Path, agent: &str) -> Result<Budget> {
    let config = format!("query_budget_ms = {BUDGET_MS}\n{NO_LIMITS}");
    let server = Server::start(bin, data, &config)?;
    let key = server.key()?;
    let refused = server.get(UNINDEXED, &key)?;
    // A quick run's thousand records are read within any budget.
    if !plan.quick && refused["code"] != "query_too_broad" {
        return fail(format!(
            "the unindexed filter was not stopped at the budget: {refused}"
        ));
    }
    let script = scripts.join("get.lua");
    let reputation = format!("/v1/vat/reputation/{agent}");
    let slow_env = [("KEY", key.as_str()), ("PATH_QUERY", UNINDEXED)];
    let read_env = [("KEY", key.as_str()), ("PATH_QUERY", reputation.as_str())];
    let (mut unindexed, mut alone, mut beside_slow) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..plan.rounds {
        server.wait_for_idle_readers()?;
        unindexed.push(wrk_with(
            &server.base,
            Some(&script),
            &slow_env,
            plan.seconds,
            READERS,
        )?);
        server.wait_for_idle_readers()?;
        alone.push(wrk(&server.base, Some(&script), &read_env, plan.seconds)?);
        let mut slow = wrk_command(
            &server.base,
            Some(&script),
            &slow_env,
            plan.seconds + 3,
            2 * READERS,
        )
        .stdout(Stdio::null())
        .spawn()?;
        let started = Instant::now();
        while server.readers_busy("queries")? < READERS {
            if started.elapsed().as_secs() >= 2 {
                if plan.quick {
                    break;
                }
                let _ = slow.kill();
                return fail("the slow reads never held every query reader");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        beside_slow.push(wrk(&server.base, Some(&script), &read_env, plan.seconds)?);
        slow.wait()?;
    }
    server.stop();
    let unbounded = Server::start(
        bin,
        data,
        &format!("query_budget_ms = 3600000\n{NO_LIMITS}"),
    )?;
    let started = Instant::now();
    unbounded.get(UNINDEXED, &key)?;
    let unbounded_ms = started.elapsed().as_secs_f64() * 1000.0;
    unbounded.stop();
    Ok(Budget {
        unindexed,
        alone,
        beside_slow,
        unbounded_ms,
    })
}

/// Per-round ratios of the p99 latencies of `a` and `b`.
fn p99_ratio(a: &[Load], b: &[Load]) -> Spread {
    Spread::of(
        &a.iter()
            .zip(b)
            .map(|(a, b)| a.p99_ms / b.p99_ms)
            .collect::<Vec<_>>(),
    )
}

impl Budget {
    /// The rows of the targets table: (row, target, measured, met).
    fn targets(&self) -> [(String, &'static str, String, bool); 2] {
        let answer = Spread::of(
            &self
                .unindexed
                .iter()
                .map(|l| l.p99_ms / f64::from(BUDGET_MS))
                .collect::<Vec<_>>(),
        );
        let isolation = p99_ratio(&self.beside_slow, &self.alone);
        [
            (
                "5. unindexed record filter at 5 M records, p99 answer / query budget".to_owned(),
                "≤ 1.2×",
                format!("{}×", answer.show(3)),
                answer.median <= 1.2,
            ),
            (
                format!(
                    "5. API-key read p99 beside {} slow reads / alone",
                    2 * READERS
                ),
                "≤ 10×",
                format!("{}×", isolation.show(2)),
                isolation.median <= 10.0,
            ),
        ]
    }

    /// The rows of the absolute figures: (what, figure).
    fn figures(&self) -> [(String, String); 6] {
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

fn cold_starts(bin: &Path, scratch: &Path, runs: u32) -> Result<Spread> {
    let mut samples = Vec::new();
    for n in 0..runs {
        let server = Server::start(bin, &scratch.join(format!("cold-{n}")), NO_LIMITS)?;
        samples.push(server.started_ms);
        server.stop();
    }
    Ok(Spread::of(&samples))
}

fn wasm_sizes(root: &Path) -> Result<(u64, u64)> {
    let wasm = std::fs::read_dir(root.join("wasm/pkg/web"))?
        .filter_map(std::result::Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "wasm"))
        .ok_or("no .wasm in wasm/pkg/web; run cargo xtask wasm")?;
    let bytes = std::fs::read(&wasm)?;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut encoder, &bytes)?;
    Ok((bytes.len() as u64, encoder.finish()?.len() as u64))
}

fn json_of(program: &Path, args: &[&str], dir: &Path) -> Result<Value> {
    let output = Command::new(program).args(args).current_dir(dir).output()?;
    if !output.status.success() {
        return fail(format!(
            "{} failed: {}",
            program.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    Ok(serde_json::from_str(
        stdout.lines().last().unwrap_or_default(),
    )?)
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines().find_map(|l| {
                l.strip_prefix("MemTotal:")
                    .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            })
        })
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    let kernel = Command::new("uname")
        .arg("-r")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    format!("{cores} cores of {cpu}, {memory:.0} GiB, Linux {kernel}")
}

fn today() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// Builds the reference verifier plugin; returns the module's path.
fn reference_verifier(root: &Path) -> Result<PathBuf> {
    let target = target_dir(root)?.join("plugins");
    let manifest = root.join("host/plugins/reference-verifier/Cargo.toml");
    run(
        "cargo",
        &[
            "build",
            "--release",
            "--target",
            "wasm32-unknown-unknown",
            "--manifest-path",
            &manifest.to_string_lossy(),
            "--target-dir",
            &target.to_string_lossy(),
        ],
    )?;
    Ok(target.join("wasm32-unknown-unknown/release/reference_verifier.wasm"))
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "**not met**" }
}

/// Fills a fresh data folder with `records` records of one agent's token;
/// returns the folder and the agent.
fn filled(
    bin: &Path,
    prefill: &Path,
    scratch: &Path,
    records: u64,
) -> Result<(PathBuf, &'static str)> {
    let agent = "growth-bot";
    let data = scratch.join("filled");
    let server = Server::start(bin, &data, NO_LIMITS)?;
    let jti = server.token(agent, &["read"])?;
    server.stop();
    run(
        &prefill.to_string_lossy(),
        &[&data.to_string_lossy(), &jti, &records.to_string()],
    )?;
    Ok((data, agent))
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
    for (row, target, measured, ok) in rows.targets() {
        eprintln!("| {row} | {target} | {measured} | {} |", met(ok));
    }
    for (what, figure) in rows.figures() {
        eprintln!("| {what} | {figure} |");
    }
    Ok(())
}

/// `cargo xtask bench [--quick] [--only budget]`.
pub(crate) fn bench(root: &Path, args: &[&str]) -> Result<()> {
    let quick = args.contains(&"--quick");
    let only = match args.iter().position(|a| *a == "--only") {
        None => None,
        Some(i) => match args.get(i + 1) {
            Some(&"budget") => Some("budget"),
            other => {
                return fail(format!(
                    "--only takes `budget` (the read-budget rows), not {other:?}"
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
    ensure_wrk()?;
    let profile = if quick { "debug" } else { "release" };
    let mut build = vec![
        "build",
        "-p",
        "mandate-host",
        "-p",
        "mandate-bench",
        "--bins",
    ];
    if !quick {
        build.push("--release");
    }
    run("cargo", &build)?;
    let bins = target_dir(root)?.join(profile);
    let scripts = root.join("bench/wrk");
    let scratch = std::env::temp_dir().join(format!("mandate-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch)?;
    if only.is_some() {
        return budget_only(plan, &bins, &scratch, &scripts);
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
    eprintln!("plugin calls");
    let mut plugin_args = vec![plugin.to_str().ok_or("path")?];
    plugin_args.extend_from_slice(flag);
    let plugin_cost = json_of(&bins.join("plugin_cost"), &plugin_args, root)?;
    eprintln!("durable writes over HTTP");
    let http = http(plan, &bins.join("mandate"), &scratch, &scripts)?;
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
    let cold = cold_starts(&bins.join("mandate"), &scratch, if quick { 1 } else { 5 })?;
    let (wasm_raw, wasm_gzip) = wasm_sizes(root)?;
    let _ = std::fs::remove_dir_all(&scratch);

    let record_over_health = ratio(&http.record, &http.healthz);
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
            ("record/healthz", record_over_health.median),
            (
                "API-key read p99 beside slow reads / alone",
                p99_ratio(&budget.beside_slow, &budget.alone).median,
            ),
            (
                "plugin call ns",
                Spread::from_json(&plugin_cost["call_ns"]).median,
            ),
        ];
        for (name, value) in sane {
            eprintln!("{name}: {value:.3}");
            if !(value.is_finite() && value > 0.0) {
                return fail(format!("bench sanity: {name} is {value}"));
            }
        }
        let lost = errors(&http.record)
            + errors(&http.healthz)
            + errors(&http.record_by_token)
            + errors(&http.full_control)
            + errors(&http.delegate);
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
        growth,
        budget,
        cold,
        wasm: (wasm_raw, wasm_gzip),
        plan,
    };
    std::fs::write(root.join("BENCHMARKS.md"), report.render())?;
    eprintln!("wrote BENCHMARKS.md");
    Ok(())
}

struct Report {
    /// The machine measured on, and the day.
    machine: String,
    date: String,
    /// `bench/NOTES.md`: what limits each row and what was done about it.
    notes: String,
    native: Value,
    node: Value,
    plugin_cost: Value,
    http: Http,
    growth: Growth,
    budget: Budget,
    cold: Spread,
    wasm: (u64, u64),
    plan: Plan,
}

impl Report {
    fn render(&self) -> String {
        let mut out = String::new();
        let native = |k: &str| Spread::from_json(&self.native[k]);
        let node = |k: &str| Spread::from_json(&self.node[k]);
        let node_ns = |k: &str| Spread::from_json(&self.node["ns"][k]);
        let h = &self.http;
        let g = &self.growth;
        let record_over_health = ratio(&h.record, &h.healthz);
        let record_p99 = p(&h.record, |l| l.p99_ms);
        let token_over_jti = ratio(&h.record_by_token, &h.record_by_jti);
        let bound_over_bearer = native("bound_over_bearer");
        let grouping = ratio(&h.grouped_for_single, &h.single_commit);
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
        let core_bare = native("core_over_bare");
        let core_peer = native("core_over_jsonwebtoken");
        let jose_sdk = node("jose_over_verifyToken");
        let jose_verifier = node("jose_over_verifier");
        let jose_cached = node("jose_over_cached");
        let summary_p99 = p(&g.summary, |l| l.p99_ms);
        let query_p99 = p(&g.query, |l| l.p99_ms);
        let rows = [
            (
                "1. native verify / bare `verify_strict`",
                "≤ 1.15×",
                format!("{}×", core_bare.show(3)),
                core_bare.median <= 1.15,
            ),
            (
                "1. native verify / jsonwebtoken",
                "< 1× (faster)",
                format!("{}×", core_peer.show(3)),
                core_peer.median < 1.0,
            ),
            (
                "2. jose / `verifyToken` (Node)",
                "≥ 1.3×",
                format!("{}×", jose_sdk.show(2)),
                jose_sdk.median >= 1.3,
            ),
            (
                "2. jose / `Verifier.verify` (Node)",
                "≥ 1.3×",
                format!("{}×", jose_verifier.show(2)),
                jose_verifier.median >= 1.3,
            ),
            (
                "2. jose / cached `Verifier.verify`",
                "≥ 20×",
                format!("{}×", jose_cached.show(1)),
                jose_cached.median >= 20.0,
            ),
            (
                "3. record/action / `GET /healthz` (req/s)",
                "≥ 0.5×",
                format!("{}×", record_over_health.show(3)),
                record_over_health.median >= 0.5,
            ),
            (
                "3. record/action p99",
                "≤ 10 ms",
                format!("{} ms", record_p99.show(2)),
                record_p99.median <= 10.0,
            ),
            (
                "3. record/action with the token itself / with its `vat_jti` (req/s)",
                "≥ 0.8×",
                format!("{}×", token_over_jti.show(3)),
                token_over_jti.median >= 0.8,
            ),
            (
                "3. native check of a bound token's call (token + DPoP proof) / of a Bearer call",
                "≤ 2.2×",
                format!("{}×", bound_over_bearer.show(2)),
                bound_over_bearer.median <= 2.2,
            ),
            (
                "4. provenance summary of a 10 k-record workflow, p99",
                "≤ 20 ms",
                format!("{} ms", summary_p99.show(2)),
                summary_p99.median <= 20.0,
            ),
            (
                "4. filtered, paginated record query at 5 M records, p99",
                "≤ 20 ms",
                format!("{} ms", query_p99.show(2)),
                query_p99.median <= 20.0,
            ),
        ];
        for (row, target, measured, ok) in rows {
            let _ = writeln!(out, "| {row} | {target} | {measured} | {} |", met(ok));
        }
        for (size, record, healthz) in &g.by_size {
            let r = ratio(record, healthz);
            let _ = writeln!(
                out,
                "| 4. record/action / healthz with {size} records stored | flat (≈ the empty row) | {}× | {} |",
                r.show(3),
                met((r.median
                    - g.by_size
                        .first()
                        .map_or(r.median, |f| ratio(&f.1, &f.2).median))
                .abs()
                    < 0.1)
            );
        }
        for (row, target, measured, ok) in self.budget.targets() {
            let _ = writeln!(out, "| {row} | {target} | {measured} | {} |", met(ok));
        }
        let _ = writeln!(out, "\n## Absolute figures\n");
        let _ = writeln!(out, "| what | figure |\n|---|---|");
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
        for (what, figure) in lines {
            let _ = writeln!(out, "| {what} | {figure} |");
        }
        for (what, figure) in self.budget.figures() {
            let _ = writeln!(out, "| {what} | {figure} |");
        }
        let _ = writeln!(
            out,
            "\nReproduce: `cargo xtask bench` (about ten minutes here; it fills 5 M records); \
             `cargo xtask bench --only budget` measures the read-budget rows alone.\n"
        );
        out.push_str(&self.notes);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                single_commit: loads(4312.0, 30.0, 2),
                grouped_for_single: loads(36787.0, 4.5, 3),
                peak_rss_mib: 32.04,
                batch_mean: 20.94,
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
            },
            budget: Budget {
                unindexed: loads(7.8, 516.0, 2),
                alone: loads(25086.0, 4.03, 3),
                beside_slow: loads(10680.0, 26.32, 4),
                unbounded_ms: 5410.4,
            },
            cold: Spread::of(&[9.1, 9.4, 12.0, 9.0, 10.2]),
            wasm: (411_721, 191_773),
            plan: Plan {
                quick: false,
                seconds: 5,
                rounds: 5,
            },
        }
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
