//! Running the benchmarks: wrk, `mandate serve` processes, the bench
//! programs, and the measurements of each section, handed back as loads
//! and figures for the report.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use super::Plan;
use super::parsing::{Load, Spread, parse_wrk};
use super::receiver::Receiver;
use crate::wasm::target_dir;
use crate::{Result, fail, run};

pub(super) fn ensure_wrk() -> Result<()> {
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
pub(super) fn wrk(
    url: &str,
    script: Option<&Path>,
    env: &[(&str, &str)],
    seconds: u32,
) -> Result<Load> {
    wrk_with(url, script, env, seconds, 64)
}

/// wrk against `url` for `seconds` with `connections` connections.
pub(super) fn wrk_with(
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
pub(super) fn wrk_command(
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
pub(super) struct Server {
    pub(super) child: Child,
    pub(super) base: String,
    pub(super) data: PathBuf,
    pub(super) started_ms: f64,
}

impl Server {
    pub(super) fn start(bin: &Path, data: &Path, config: &str) -> Result<Server> {
        Server::run(bin, "serve", data, config, "127.0.0.1:0")
    }

    /// `mandate serve` on the address `listen`: for a configuration that
    /// names the server's own URL (`public_url`).
    pub(super) fn start_on(bin: &Path, data: &Path, config: &str, listen: &str) -> Result<Server> {
        Server::run(bin, "serve", data, config, listen)
    }

    /// `mandate witness serve` on `data` with `config` (its `[witness]`).
    pub(super) fn witness(bin: &Path, data: &Path, config: &str) -> Result<Server> {
        Server::run(bin, "witness", data, config, "127.0.0.1:0")
    }

    /// `mandate serve`, or `mandate witness serve` (`mode` `witness`), on
    /// `listen`.
    fn run(bin: &Path, mode: &str, data: &Path, config: &str, listen: &str) -> Result<Server> {
        std::fs::create_dir_all(data)?;
        let config_path = data.with_extension("toml");
        std::fs::write(&config_path, config)?;
        let started = Instant::now();
        let mut command = Command::new(bin);
        if mode == "witness" {
            command.arg("witness");
        }
        let mut child = command
            .args(["serve", "--listen", listen, "--data-dir"])
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

    pub(super) fn key(&self) -> Result<String> {
        Ok(std::fs::read_to_string(self.data.join("admin.key"))?
            .trim()
            .to_owned())
    }

    /// Peak resident memory so far, MiB.
    pub(super) fn peak_rss_mib(&self) -> f64 {
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

    pub(super) fn post(&self, path: &str, key: Option<&str>, body: &Value) -> Result<Value> {
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

    pub(super) fn get(&self, path: &str, key: &str) -> Result<Value> {
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
    pub(super) fn token(&self, agent: &str, actions: &[&str]) -> Result<String> {
        Ok(self.issued(agent, actions)?.0)
    }

    /// A root token for the load, without limits, for a day: its jti and
    /// its compact form.
    pub(super) fn issued(&self, agent: &str, actions: &[&str]) -> Result<(String, String)> {
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

    pub(super) fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(super) const NO_LIMITS: &str =
    "[rate_limits]\nper_api_key = 0\nper_token = 0\nper_org = 0\nper_ip = 0\n";

/// Interleaves `a` and `b` for `plan.rounds` rounds; returns their loads.
pub(super) fn compare(
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

/// The rows of the HTTP section.
pub(super) struct Http {
    pub(super) healthz: Vec<Load>,
    pub(super) record: Vec<Load>,
    /// record/action with the token itself, in turns with `record_by_jti`.
    pub(super) record_by_token: Vec<Load>,
    pub(super) record_by_jti: Vec<Load>,
    pub(super) full_control: Vec<Load>,
    pub(super) delegate: Vec<Load>,
    /// An AuthZEN evaluation by a gateway key, the token as its subject,
    /// in turns with `authorize` of the same act with the token itself.
    pub(super) evaluation: Vec<Load>,
    pub(super) authorize: Vec<Load>,
    pub(super) single_commit: Vec<Load>,
    pub(super) grouped_for_single: Vec<Load>,
    pub(super) peak_rss_mib: f64,
    pub(super) batch_mean: f64,
}

/// Parent tokens for the delegation load: enough that none reaches its
/// 1000 children in a full run (about 11 k delegations a second).
pub(super) const DELEGATE_PARENTS: usize = 400;

/// Issues the parent tokens of the delegation load on `server` and writes
/// them to `file`, one compact token a line (delegate.lua's `PARENTS`);
/// returns the file's path.
fn delegate_parents(plan: Plan, server: &Server, file: &Path) -> Result<String> {
    let parents = (0..if plan.quick { 4 } else { DELEGATE_PARENTS })
        .map(|n| {
            Ok(server
                .issued(&format!("bench-parent-{n}"), &["read", "delegate"])?
                .1)
        })
        .collect::<Result<Vec<_>>>()?;
    std::fs::write(file, parents.join("\n") + "\n")?;
    Ok(file.to_str().ok_or("path")?.to_owned())
}

/// An AuthZEN evaluation by a gateway key with `compact` as its subject,
/// and `authorize` of the same act with the token itself, on `server` in
/// interleaved rounds: (evaluation, authorize).
pub(super) fn authzen(
    plan: Plan,
    server: &Server,
    scripts: &Path,
    compact: &str,
) -> Result<(Vec<Load>, Vec<Load>)> {
    let bearer_env = [("TOKEN", compact)];
    let gateway = server.post(
        "/v1/keys",
        Some(&server.key()?),
        &json!({"role": "gateway"}),
    )?;
    let Some(gateway) = gateway["api_key"].as_str() else {
        return fail(format!("no gateway key: {gateway}"));
    };
    let evaluation_url = format!("{}/v1/access/evaluation", server.base);
    let evaluation_script = scripts.join("evaluation.lua");
    let authorize_url = format!("{}/v1/vat/authorize", server.base);
    let authorize_script = scripts.join("authorize_bearer.lua");
    let (evaluation, authorize) = compare(
        plan,
        &|| {
            wrk(
                &evaluation_url,
                Some(&evaluation_script),
                &[("TOKEN", compact), ("KEY", gateway)],
                plan.seconds,
            )
        },
        &|| {
            wrk(
                &authorize_url,
                Some(&authorize_script),
                &bearer_env,
                plan.seconds,
            )
        },
    )?;
    Ok((evaluation, authorize))
}

/// `cargo xtask bench --only authzen`: the AuthZEN row alone, on a server
/// of its own: (evaluation, authorize).
pub(super) fn authzen_alone(
    plan: Plan,
    bin: &Path,
    scratch: &Path,
    scripts: &Path,
) -> Result<(Vec<Load>, Vec<Load>)> {
    let server = Server::start(bin, &scratch.join("authzen"), NO_LIMITS)?;
    let (_, compact) = server.issued("bench-bot", &["read", "delegate"])?;
    let loads = authzen(plan, &server, scripts, &compact);
    server.stop();
    loads
}

/// `cargo xtask bench --only http`: `GET /healthz` and record/action on
/// SQLite in interleaved rounds, on a server of its own — and, given a
/// `baseline` (another build's `mandate`), the same two on that build in
/// the same rounds.
pub(super) struct HttpAlone {
    pub(super) healthz: Vec<Load>,
    pub(super) record: Vec<Load>,
    pub(super) baseline_healthz: Vec<Load>,
    pub(super) baseline_record: Vec<Load>,
}

pub(super) fn http_alone(
    plan: Plan,
    bin: &Path,
    baseline: Option<&Path>,
    scratch: &Path,
    scripts: &Path,
) -> Result<HttpAlone> {
    let record_script = scripts.join("record.lua");
    let mut servers = vec![Server::start(bin, &scratch.join("ours"), NO_LIMITS)?];
    if let Some(baseline) = baseline {
        servers.push(Server::start(
            baseline,
            &scratch.join("baseline"),
            NO_LIMITS,
        )?);
    }
    let mut loads = Vec::new();
    for server in &servers {
        eprintln!("server {} (pid {})", server.base, server.child.id());
        loads.push((
            format!("{}/healthz", server.base),
            format!("{}/v1/vat/record/action", server.base),
            server.token("bench-bot", &["read"])?,
            Vec::new(),
            Vec::new(),
        ));
    }
    for _ in 0..plan.rounds {
        for (health_url, record_url, jti, healthz, record) in &mut loads {
            healthz.push(wrk(health_url, None, &[], plan.seconds)?);
            record.push(wrk(
                record_url,
                Some(&record_script),
                &[("JTI", jti.as_str())],
                plan.seconds,
            )?);
        }
    }
    for server in servers {
        server.stop();
    }
    let mut loads = loads.into_iter().map(|(_, _, _, h, r)| (h, r));
    let (healthz, record) = loads.next().unwrap_or_default();
    let (baseline_healthz, baseline_record) = loads.next().unwrap_or_default();
    Ok(HttpAlone {
        healthz,
        record,
        baseline_healthz,
        baseline_record,
    })
}

pub(super) fn http(plan: Plan, bin: &Path, scratch: &Path, scripts: &Path) -> Result<Http> {
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
    let (evaluation, authorize) = authzen(plan, &server, scripts, &compact)?;
    let full_script = scripts.join("full_control.lua");
    let full_control = (0..plan.rounds)
        .map(|_| wrk(&server.base, Some(&full_script), &env, plan.seconds))
        .collect::<Result<Vec<_>>>()?;
    let delegate_script = scripts.join("delegate.lua");
    let delegate_url = format!("{}/v1/vat/delegate", server.base);
    let parents_file = delegate_parents(plan, &server, &scratch.join("parents.txt"))?;
    let parents_env = [("PARENTS", parents_file.as_str())];
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
        evaluation,
        authorize,
        single_commit,
        grouped_for_single,
        peak_rss_mib,
        batch_mean,
    })
}

/// The write rows of this build against another build's, side by side.
pub(super) struct Against {
    /// record/action on this build, in turns with `baseline_record`.
    pub(super) record: Vec<Load>,
    pub(super) baseline_record: Vec<Load>,
    /// delegate on this build, in turns with `baseline_delegate`.
    pub(super) delegate: Vec<Load>,
    pub(super) baseline_delegate: Vec<Load>,
}

/// record/action and delegate on `bin` and on `baseline` (another build of
/// `mandate`), each on a fresh folder of its own, in interleaved rounds.
pub(super) fn against(
    plan: Plan,
    bin: &Path,
    baseline: &Path,
    scratch: &Path,
    scripts: &Path,
) -> Result<Against> {
    let ours = Server::start(bin, &scratch.join("ours"), NO_LIMITS)?;
    let theirs = Server::start(baseline, &scratch.join("baseline"), NO_LIMITS)?;
    let record_script = scripts.join("record.lua");
    let record_load = |server: &Server| -> Result<(String, String)> {
        Ok((
            format!("{}/v1/vat/record/action", server.base),
            server.token("bench-bot", &["read"])?,
        ))
    };
    let (ours_url, ours_jti) = record_load(&ours)?;
    let (theirs_url, theirs_jti) = record_load(&theirs)?;
    let (record, baseline_record) = compare(
        plan,
        &|| {
            wrk(
                &ours_url,
                Some(&record_script),
                &[("JTI", ours_jti.as_str())],
                plan.seconds,
            )
        },
        &|| {
            wrk(
                &theirs_url,
                Some(&record_script),
                &[("JTI", theirs_jti.as_str())],
                plan.seconds,
            )
        },
    )?;
    let delegate_script = scripts.join("delegate.lua");
    let delegate_load = |server: &Server, name: &str| -> Result<(String, String)> {
        let file = scratch.join(format!("{name}-parents.txt"));
        Ok((
            format!("{}/v1/vat/delegate", server.base),
            delegate_parents(plan, server, &file)?,
        ))
    };
    let (ours_url, ours_parents) = delegate_load(&ours, "ours")?;
    let (theirs_url, theirs_parents) = delegate_load(&theirs, "baseline")?;
    let (delegate, baseline_delegate) = compare(
        plan,
        &|| {
            wrk(
                &ours_url,
                Some(&delegate_script),
                &[("PARENTS", ours_parents.as_str())],
                plan.seconds,
            )
        },
        &|| {
            wrk(
                &theirs_url,
                Some(&delegate_script),
                &[("PARENTS", theirs_parents.as_str())],
                plan.seconds,
            )
        },
    )?;
    ours.stop();
    theirs.stop();
    Ok(Against {
        record,
        baseline_record,
        delegate,
        baseline_delegate,
    })
}

/// The rows of the growth section.
pub(super) struct Growth {
    /// Records stored before the load → (record/action, healthz) loads.
    pub(super) by_size: Vec<(u64, Vec<Load>, Vec<Load>)>,
    pub(super) summary: Vec<Load>,
    pub(super) query: Vec<Load>,
    pub(super) bytes_per_record: f64,
    pub(super) restart_ms: f64,
    pub(super) prefill_seconds: f64,
    pub(super) peak_rss_mib: f64,
    /// Records stored → seconds `mandate audit verify` took on them.
    pub(super) audit_seconds: Vec<(u64, f64)>,
}

pub(super) fn db_bytes(data: &Path) -> u64 {
    ["mandate.db", "mandate.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(data.join(f)).ok())
        .map(|m| m.len())
        .sum()
}

pub(super) fn growth(
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
    let mut audit_seconds = Vec::new();
    for (i, &size) in sizes.iter().enumerate() {
        if size > stored {
            let started = Instant::now();
            run(
                &prefill.to_string_lossy(),
                &[&data.to_string_lossy(), &jti, &(size - stored).to_string()],
            )?;
            prefill_seconds += started.elapsed().as_secs_f64();
            stored = size;
            let started = Instant::now();
            run(
                &bin.to_string_lossy(),
                &["audit", "verify", "--data-dir", &data.to_string_lossy()],
            )?;
            audit_seconds.push((size, started.elapsed().as_secs_f64()));
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
        audit_seconds,
    })
}

/// The rows of the witnessed log (issue 37).
pub(super) struct WitnessRows {
    /// record/action with two witnesses configured and the submitter at
    /// its cadence, in turns with `without_witnesses` (the log on, no
    /// witnesses).
    pub(super) with_witnesses: Vec<Load>,
    pub(super) without_witnesses: Vec<Load>,
    /// Milliseconds from a write's answer to the first checkpoint served
    /// that holds it with two cosignatures of three witnesses, a write each.
    pub(super) cosigned_ms: Vec<f64>,
    /// The submitter's cadence, `[log] checkpoint_interval_ms` (default).
    pub(super) interval_ms: u64,
}

/// The witnessed log's origin in the benchmark.
const WITNESSED_ORIGIN: &str = "bench.mandate.example/log";
/// The submitter's default cadence (`[log] checkpoint_interval_ms`).
const CHECKPOINT_INTERVAL_MS: u64 = 1000;

/// Three `mandate witness serve` of [`WITNESSED_ORIGIN`] for `log_vkey`,
/// with their verifier keys.
fn witnesses(bin: &Path, scratch: &Path, log_vkey: &str) -> Result<Vec<(Server, String)>> {
    (1..=3)
        .map(|n| {
            let witness = Server::witness(
                bin,
                &scratch.join(format!("witness-{n}")),
                &format!(
                    "[witness]\nname = \"witness.bench/w{n}\"\n\n[[witness.log]]\n\
                     origin = \"{WITNESSED_ORIGIN}\"\nvkeys = [\"{log_vkey}\"]\n"
                ),
            )?;
            let vkey = curl_text(&format!("{}/vkey", witness.base))?
                .trim()
                .to_owned();
            Ok((witness, vkey))
        })
        .collect()
}

/// The `[log]` of a log witnessed by `witnesses` at threshold 2.
fn witnessed_config(witnesses: &[(Server, String)]) -> String {
    let mut config =
        format!("{NO_LIMITS}[log]\norigin = \"{WITNESSED_ORIGIN}\"\nwitness_threshold = 2\n");
    for (witness, vkey) in witnesses {
        config.push_str(&format!(
            "\n[[log.witnesses]]\nurl = \"{}\"\nvkey = \"{vkey}\"\n",
            witness.base
        ));
    }
    config
}

fn curl_text(url: &str) -> Result<String> {
    let output = Command::new("curl").args(["-sS", "--fail", url]).output()?;
    if !output.status.success() {
        return fail(format!("GET {url} failed"));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The size of a checkpoint note and how many of its signature lines are
/// witnesses' (`witness.bench/…`).
fn checkpoint_size_and_cosignatures(note: &str) -> (u64, usize) {
    let size = note
        .lines()
        .nth(1)
        .and_then(|size| size.parse().ok())
        .unwrap_or(0);
    let cosignatures = note
        .lines()
        .filter(|line| line.starts_with("\u{2014} witness.bench/"))
        .count();
    (size, cosignatures)
}

/// record/action with two witnesses and the submitter running, against the
/// log without witnesses, in turns on servers of their own; then, three
/// witnesses at threshold 2, the time from writes to the checkpoint that
/// holds each with two cosignatures.
pub(super) fn witnessed(
    plan: Plan,
    bin: &Path,
    scratch: &Path,
    scripts: &Path,
) -> Result<WitnessRows> {
    // The log's key is made at its first start.
    let data = scratch.join("witnessed");
    let plain = format!("{NO_LIMITS}[log]\norigin = \"{WITNESSED_ORIGIN}\"\n");
    let first = Server::start(bin, &data, &plain)?;
    let log_vkey = curl_text(&format!("{}/v1/log/key", first.base))?
        .lines()
        .next()
        .ok_or("the log has no key")?
        .to_owned();
    first.stop();
    let all = witnesses(bin, scratch, &log_vkey)?;
    let witnessed = Server::start(bin, &data, &witnessed_config(&all[..2]))?;
    let unwitnessed = Server::start(bin, &scratch.join("unwitnessed"), &plain)?;
    let script = scripts.join("record.lua");
    let witnessed_jti = witnessed.token("bench-bot", &["read"])?;
    let unwitnessed_jti = unwitnessed.token("bench-bot", &["read"])?;
    let witnessed_url = format!("{}/v1/vat/record/action", witnessed.base);
    let unwitnessed_url = format!("{}/v1/vat/record/action", unwitnessed.base);
    let (with_witnesses, without_witnesses) = compare(
        plan,
        &|| {
            wrk(
                &witnessed_url,
                Some(&script),
                &[("JTI", witnessed_jti.as_str())],
                plan.seconds,
            )
        },
        &|| {
            wrk(
                &unwitnessed_url,
                Some(&script),
                &[("JTI", unwitnessed_jti.as_str())],
                plan.seconds,
            )
        },
    )?;
    unwitnessed.stop();
    witnessed.stop();
    // Three witnesses, two enough: a write is cosigned once the submitter
    // sent a checkpoint holding it and two answered.
    let witnessed = Server::start(bin, &data, &witnessed_config(&all))?;
    let jti = witnessed.token("bench-latency", &["read"])?;
    let checkpoint_url = format!("{}/v1/log/checkpoint", witnessed.base);
    let samples = if plan.quick { 3 } else { 50 };
    let mut cosigned_ms = Vec::with_capacity(samples);
    for n in 0..samples {
        // Writes at spread phases of the cadence (a fraction of it by the
        // golden ratio each), not each just after the round that cosigned
        // the one before.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "a fraction of a second"
        )]
        let phase = ((n as f64 * 0.618_034).fract() * CHECKPOINT_INTERVAL_MS as f64) as u64;
        std::thread::sleep(std::time::Duration::from_millis(phase));
        let made = witnessed.post(
            "/v1/vat/record/action",
            None,
            &json!({"vat_jti": jti, "action": "read", "resource": format!("crm:lead/{n}"), "result": "success"}),
        )?;
        let answered = Instant::now();
        let aar_id = made["aar_id"]
            .as_str()
            .ok_or_else(|| format!("record/action failed: {made}"))?;
        let proof = witnessed.get(&format!("/v1/vat/aar/{aar_id}/proof"), &witnessed.key()?)?;
        let index = proof["events"]
            .as_array()
            .and_then(|events| events.iter().filter_map(|e| e["index"].as_u64()).max())
            .ok_or_else(|| format!("a proof without events: {proof}"))?;
        loop {
            let (size, cosignatures) =
                checkpoint_size_and_cosignatures(&curl_text(&checkpoint_url)?);
            if size > index && cosignatures >= 2 {
                break;
            }
            if answered.elapsed().as_secs() > 30 {
                return fail("no checkpoint cosigned by two witnesses within 30 s of a write");
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        cosigned_ms.push(answered.elapsed().as_secs_f64() * 1000.0);
    }
    witnessed.stop();
    for (witness, _) in all {
        witness.stop();
    }
    Ok(WitnessRows {
        with_witnesses,
        without_witnesses,
        cosigned_ms,
        interval_ms: CHECKPOINT_INTERVAL_MS,
    })
}

/// The rows of the record-log section.
pub(super) struct LogRows {
    /// record/action with the log, in turns with `without_log`.
    pub(super) with_log: Vec<Load>,
    pub(super) without_log: Vec<Load>,
    /// `GET /v1/vat/aar/{id}/proof` of one record, a few thousand records in.
    pub(super) proof: Vec<Load>,
    /// Records in the log when the proofs were fetched.
    pub(super) records: u64,
}

/// record/action with the record log and without it (`[log] enabled =
/// false`), in turns, on servers of their own; then proofs fetched.
pub(super) fn record_log(
    plan: Plan,
    bin: &Path,
    scratch: &Path,
    scripts: &Path,
) -> Result<LogRows> {
    let logged = Server::start(bin, &scratch.join("logged"), NO_LIMITS)?;
    let unlogged = Server::start(
        bin,
        &scratch.join("unlogged"),
        &format!("{NO_LIMITS}[log]\nenabled = false\n"),
    )?;
    let script = scripts.join("record.lua");
    let logged_jti = logged.token("bench-bot", &["read"])?;
    let unlogged_jti = unlogged.token("bench-bot", &["read"])?;
    let logged_url = format!("{}/v1/vat/record/action", logged.base);
    let unlogged_url = format!("{}/v1/vat/record/action", unlogged.base);
    let (with_log, without_log) = compare(
        plan,
        &|| {
            wrk(
                &logged_url,
                Some(&script),
                &[("JTI", logged_jti.as_str())],
                plan.seconds,
            )
        },
        &|| {
            wrk(
                &unlogged_url,
                Some(&script),
                &[("JTI", unlogged_jti.as_str())],
                plan.seconds,
            )
        },
    )?;
    unlogged.stop();
    let key = logged.key()?;
    let made = logged.post(
        "/v1/vat/record/action",
        None,
        &json!({"vat_jti": logged_jti, "action": "read", "resource": "crm:proof", "result": "success"}),
    )?;
    let aar_id = made["aar_id"]
        .as_str()
        .ok_or_else(|| format!("record/action failed: {made}"))?
        .to_owned();
    let checkpoint = Command::new("curl")
        .args(["-sS", &format!("{}/v1/log/checkpoint", logged.base)])
        .output()?;
    let records = String::from_utf8_lossy(&checkpoint.stdout)
        .lines()
        .nth(1)
        .and_then(|size| size.parse().ok())
        .unwrap_or(0);
    let proof_path = format!("/v1/vat/aar/{aar_id}/proof");
    let get_script = scripts.join("get.lua");
    let proof = (0..plan.rounds)
        .map(|_| {
            wrk(
                &logged.base,
                Some(&get_script),
                &[("KEY", &key), ("PATH_QUERY", &proof_path)],
                plan.seconds,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    logged.stop();
    Ok(LogRows {
        with_log,
        without_log,
        proof,
        records,
    })
}

/// The rows of the events section.
pub(super) struct EventRows {
    /// record/action whose every record reports a failure (one
    /// `record.failed` event each), events on, in turns with
    /// `without_events`.
    pub(super) with_events: Vec<Load>,
    /// The same load with `[events] enabled = false`.
    pub(super) without_events: Vec<Load>,
    /// Webhook deliveries the receiver answered by ten seconds after the
    /// last round.
    pub(super) delivered: u64,
    /// Records (each an event) the server with events wrote.
    pub(super) written: u64,
    /// Seconds from the webhook's creation to that count.
    pub(super) delivering_s: f64,
}

/// record/action whose every record is an event, with events on (and a
/// webhook subscribed to them, delivering to a receiver on this machine)
/// and off (`[events] enabled = false`), in turns, on servers of their own.
pub(super) fn events(plan: Plan, bin: &Path, scratch: &Path, scripts: &Path) -> Result<EventRows> {
    let on = Server::start(
        bin,
        &scratch.join("events-on"),
        &format!("{NO_LIMITS}[webhooks]\nallow_private = true\n"),
    )?;
    let receiver = Receiver::start()?;
    let webhook = on.post(
        "/v1/webhooks",
        Some(&on.key()?),
        &json!({"url": receiver.url, "events": ["record.failed"]}),
    )?;
    if webhook["webhook_id"].as_str().is_none() {
        return fail(format!("the webhook was not created: {webhook}"));
    }
    let created = Instant::now();
    let off = Server::start(
        bin,
        &scratch.join("events-off"),
        &format!("{NO_LIMITS}[events]\nenabled = false\n"),
    )?;
    let script = scripts.join("record_failed.lua");
    let on_jti = on.token("bench-bot", &["read"])?;
    let off_jti = off.token("bench-bot", &["read"])?;
    let on_url = format!("{}/v1/vat/record/action", on.base);
    let off_url = format!("{}/v1/vat/record/action", off.base);
    let (with_events, without_events) = compare(
        plan,
        &|| {
            wrk(
                &on_url,
                Some(&script),
                &[("JTI", on_jti.as_str())],
                plan.seconds,
            )
        },
        &|| {
            wrk(
                &off_url,
                Some(&script),
                &[("JTI", off_jti.as_str())],
                plan.seconds,
            )
        },
    )?;
    off.stop();
    // The webhook's pace: one endpoint, one delivery in flight (the
    // default), with a backlog from the first round on; what it has been
    // sent ten seconds after the last round, against what was written.
    std::thread::sleep(std::time::Duration::from_secs(10));
    let delivered = receiver.received();
    let delivering_s = created.elapsed().as_secs_f64();
    let written = on.records_written()?;
    on.stop();
    Ok(EventRows {
        with_events,
        without_events,
        delivered,
        written,
        delivering_s,
    })
}

/// Query readers (`readers`) of the server's default configuration.
pub(super) const READERS: u32 = 4;

/// The server's default `query_budget_ms`, set explicitly for the budget rows.
pub(super) const BUDGET_MS: u32 = 500;

/// A record filter no index serves and no record matches: without a budget
/// every record would be read.
pub(super) const UNINDEXED: &str = "/v1/vat/aar?resource=crm:nothing&limit=50";

/// The rows of the read-budget section, on the largest data folder.
pub(super) struct Budget {
    /// The unindexed filter on `READERS` connections, every query reader busy.
    pub(super) unindexed: Vec<Load>,
    /// An API-key read (an agent's reputation) on an otherwise idle server…
    pub(super) alone: Vec<Load>,
    /// …and the same while `2 × READERS` unindexed filters run, in turns.
    pub(super) beside_slow: Vec<Load>,
    /// One unindexed filter on a server with an hour's budget (ms).
    pub(super) unbounded_ms: f64,
}

impl Server {
    /// Read connections of `lane` in use, from `/metrics` (open on loopback).
    pub(super) fn readers_busy(&self, lane: &str) -> Result<u32> {
        let output = Command::new("curl")
            .args(["-sS", &format!("{}/metrics", self.base)])
            .output()?;
        let prefix = format!("mandate_readers_busy{{lane=\"{lane}\"}} ");
        Ok(String::from_utf8_lossy(&output.stdout)
            .lines()
            .find_map(|line| line.strip_prefix(&prefix)?.trim().parse().ok())
            .unwrap_or(0))
    }

    /// Records written since the server started, from `/metrics`.
    pub(super) fn records_written(&self) -> Result<u64> {
        let output = Command::new("curl")
            .args(["-sS", &format!("{}/metrics", self.base)])
            .output()?;
        Ok(String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|line| line.starts_with("mandate_records_written_total"))
            .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum::<f64>() as u64)
    }

    /// Waits until no read of a load that ended still holds a query reader.
    pub(super) fn wait_for_idle_readers(&self) -> Result<()> {
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
pub(super) fn budget(
    plan: Plan,
    bin: &Path,
    data: &Path,
    scripts: &Path,
    agent: &str,
) -> Result<Budget> {
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

pub(super) fn cold_starts(bin: &Path, scratch: &Path, runs: u32) -> Result<Spread> {
    let mut samples = Vec::new();
    for n in 0..runs {
        let server = Server::start(bin, &scratch.join(format!("cold-{n}")), NO_LIMITS)?;
        samples.push(server.started_ms);
        server.stop();
    }
    Ok(Spread::of(&samples))
}

pub(super) fn wasm_sizes(root: &Path) -> Result<(u64, u64)> {
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

pub(super) fn json_of(program: &Path, args: &[&str], dir: &Path) -> Result<Value> {
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

pub(super) fn machine() -> String {
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

pub(super) fn today() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// Builds the reference verifier plugin; returns the module's path.
pub(super) fn reference_verifier(root: &Path) -> Result<PathBuf> {
    let target = target_dir(root)?.join("plugins");
    let manifest = root.join("host/plugins/reference-verifier/Cargo.toml");
    crate::wasm::ensure_target()?;
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

/// Fills a fresh data folder with `records` records of one agent's token;
/// returns the folder and the agent.
pub(super) fn filled(
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

/// The rows of the PostgreSQL section.
pub(super) struct Postgres {
    /// record/action on PostgreSQL, in turns with `sqlite`.
    pub(super) record: Vec<Load>,
    /// record/action on SQLite, the same load in the same rounds.
    pub(super) sqlite: Vec<Load>,
    /// record/action on one host of a PostgreSQL database, in turns with
    /// `three_hosts`.
    pub(super) one_host: Vec<Load>,
    /// The same load spread over three hosts on one database (a third of
    /// the connections each), their loads added up.
    pub(super) three_hosts: Vec<Load>,
    /// `one_host` and `three_hosts` again, the database reached through
    /// the latency proxy ([`PROXY_DELAY_US`] each way).
    pub(super) proxied_one_host: Vec<Load>,
    pub(super) proxied_three_hosts: Vec<Load>,
    /// The share of the machine's CPU time busy (0–1) during each round of
    /// `proxied_one_host` and of `proxied_three_hosts`: whether one host
    /// through the proxy leaves the cores three hosts would need.
    pub(super) proxied_busy: (Vec<f64>, Vec<f64>),
    /// Through the proxy, each host with clients of its own
    /// ([`OWN_CLIENTS`]): one host, and three hosts together, in turns —
    /// hosts added with their clients, where round trips bind.
    pub(super) proxied_own: (Vec<Load>, Vec<Load>),
    /// The proxy's measured round trip over those loads, median and p99 (µs).
    pub(super) rtt_us: (f64, f64),
    /// Round trips per batch group.
    pub(super) batches: Vec<BatchTrips>,
    /// Round trips per commit group.
    pub(super) commits: Vec<CommitTrips>,
}

/// wrk runs at once, each against its own URL with `per_host`
/// connections: requests and errors added up, the worst p99.
fn wrk_spread(
    urls: &[String],
    script: &Path,
    env: &[(&str, &str)],
    seconds: u32,
    per_host: u32,
) -> Result<Load> {
    let children = urls
        .iter()
        .map(|url| {
            wrk_command(url, Some(script), env, seconds, per_host)
                .stdout(Stdio::piped())
                .spawn()
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    let mut total = Load {
        rps: 0.0,
        p50_ms: 0.0,
        p99_ms: 0.0,
        errors: 0,
    };
    for child in children {
        let output = child.wait_with_output()?;
        if !output.status.success() {
            return fail("wrk failed");
        }
        let load = parse_wrk(&String::from_utf8_lossy(&output.stdout));
        total.rps += load.rps;
        total.p50_ms = total.p50_ms.max(load.p50_ms);
        total.p99_ms = total.p99_ms.max(load.p99_ms);
        total.errors += load.errors;
    }
    Ok(total)
}

/// The latency proxy (`bench/src/bin/latency_proxy.rs`) as a child: it
/// forwards to `upstream` after `delay_us` each way and counts round trips,
/// read and zeroed over its stdin.
pub(super) struct Proxy {
    child: Child,
    commands: std::process::ChildStdin,
    answers: std::io::Lines<BufReader<std::process::ChildStdout>>,
    /// Where it listens: `127.0.0.1:PORT`.
    pub(super) address: String,
}

impl Proxy {
    pub(super) fn start(bin: &Path, upstream: &str, delay_us: u32) -> Result<Proxy> {
        let mut child = Command::new(bin)
            .args(["--upstream", upstream, "--delay-us", &delay_us.to_string()])
            .args(["--listen", "127.0.0.1:0"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let commands = child.stdin.take().ok_or("no stdin")?;
        let mut answers = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
        let address = answers
            .by_ref()
            .map_while(std::result::Result::ok)
            .find_map(|line| line.strip_prefix("listening on ").map(str::to_owned))
            .ok_or("the latency proxy did not start")?;
        Ok(Proxy {
            child,
            commands,
            answers,
            address,
        })
    }

    fn ask(&mut self, command: &str) -> Result<Value> {
        use std::io::Write as _;
        writeln!(self.commands, "{command}")?;
        self.commands.flush()?;
        let line = self.answers.next().ok_or("the latency proxy exited")??;
        Ok(serde_json::from_str(&line)?)
    }

    /// Its counts since the last [`Proxy::reset`].
    pub(super) fn stats(&mut self) -> Result<Value> {
        self.ask("stats")
    }

    pub(super) fn reset(&mut self) -> Result<()> {
        self.ask("reset").map(drop)
    }

    pub(super) fn stop(mut self) {
        drop(self.commands);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The proxy's delay each way in the PostgreSQL rows: a database on
/// another machine of the same network.
pub(super) const PROXY_DELAY_US: u32 = 500;

/// The lanes of a host's database connections, as `/metrics` names them.
pub(super) const LANES: [&str; 5] = ["writer", "keys", "lookups", "queries", "proofs"];

/// A host's `/metrics` text.
fn metrics_of(server: &Server) -> Result<String> {
    let output = Command::new("curl")
        .args(["-sS", &format!("{}/metrics", server.base)])
        .output()?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// A sample's value in a `/metrics` text (0 when absent).
fn metric(text: &str, sample: &str) -> f64 {
    text.lines()
        .find_map(|line| {
            line.strip_prefix(sample)
                .and_then(|rest| rest.strip_prefix(' '))
                .and_then(|v| v.trim().parse::<f64>().ok())
        })
        .unwrap_or(0.0)
}

/// What a host had counted at one moment: round trips by lane, and groups
/// committed with their writes.
#[derive(Debug, Clone)]
struct Counted {
    lanes: Vec<f64>,
    groups: f64,
    writes: f64,
}

impl Counted {
    fn of(server: &Server) -> Result<Counted> {
        let text = metrics_of(server)?;
        Ok(Counted {
            lanes: LANES
                .iter()
                .map(|lane| {
                    metric(
                        &text,
                        &format!("mandate_db_round_trips_total{{lane=\"{lane}\"}}"),
                    )
                })
                .collect(),
            groups: metric(&text, "mandate_group_commit_batch_size_count"),
            writes: metric(&text, "mandate_group_commit_batch_size_sum"),
        })
    }

    /// What was counted between `self` and `later`.
    fn until(&self, later: &Counted) -> Counted {
        Counted {
            lanes: later
                .lanes
                .iter()
                .zip(&self.lanes)
                .map(|(b, a)| b - a)
                .collect(),
            groups: later.groups - self.groups,
            writes: later.writes - self.writes,
        }
    }
}

/// Round trips of one `record/actions` request of `records` records, sent
/// alone (the median of the requests).
#[derive(Debug, Clone)]
pub(super) struct BatchTrips {
    pub(super) records: usize,
    /// Whether the token has a spend budget (its usage read and charged
    /// per record).
    pub(super) budgeted: bool,
    /// Round trips by lane ([`LANES`]), median per request.
    pub(super) lanes: Vec<f64>,
    /// The proxy's round trips per request (median), less its idle rate.
    pub(super) proxy: f64,
}

/// Round trips per commit group under `clients` concurrent single
/// `record/action` writers.
#[derive(Debug, Clone)]
pub(super) struct CommitTrips {
    pub(super) clients: u32,
    pub(super) groups: f64,
    /// Writes per group (mean).
    pub(super) size: f64,
    /// Round trips by lane ([`LANES`]) per group.
    pub(super) lanes: Vec<f64>,
    /// The proxy's round trips per group, less its idle rate.
    pub(super) proxy: f64,
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The proxy's round trips per second with the host idle (background
/// tasks: trust recomputation, webhook and event workers).
fn idle_rate(proxy: &mut Proxy) -> Result<f64> {
    proxy.reset()?;
    let started = Instant::now();
    std::thread::sleep(std::time::Duration::from_secs(2));
    let trips = proxy.stats()?["round_trips"].as_f64().unwrap_or(f64::NAN);
    Ok(trips / started.elapsed().as_secs_f64())
}

/// The two round-trip tables of the plan's §3.1 on `server` (reaching
/// its database through `proxy`): batch groups of 1 … 500 records, sent
/// alone, with a token without limits and with a budgeted one; and
/// commit groups of 1, 8 and 64 concurrent writers.
fn round_trips(
    plan: Plan,
    server: &Server,
    proxy: &mut Proxy,
    script: &Path,
) -> Result<(Vec<BatchTrips>, Vec<CommitTrips>)> {
    let plain = server.token("trips-bot", &["read"])?;
    let body = json!({
        "developer_email": "bench@example.com", "agent_id": "budget-bot",
        "resources": ["crm:*"], "actions": ["read"], "ttl_seconds": 86_400,
        "constraints": {"max_spend_usd": 1_000_000}
    });
    let issued = server.post("/v1/vat/issue/l1", Some(&server.key()?), &body)?;
    let Some(budgeted) = issued["jti"].as_str().map(str::to_owned) else {
        return fail(format!("issue failed: {issued}"));
    };
    let requests = if plan.quick { 2 } else { 20 };
    let mut batches = Vec::new();
    for (jti, is_budgeted) in [(&plain, false), (&budgeted, true)] {
        let record = |_| {
            let mut record = json!({
                "vat_jti": jti, "action": "read", "resource": "crm:contacts", "result": "success"
            });
            if is_budgeted {
                record["spend_usd"] = json!(1);
            }
            record
        };
        // Warm: the token's claims cached, every statement prepared.
        server.post(
            "/v1/vat/record/actions",
            None,
            &json!({"records": (0..2).map(record).collect::<Vec<_>>()}),
        )?;
        let idle = idle_rate(proxy)?;
        for records in [1, 10, 100, 500] {
            let body = json!({"records": (0..records).map(record).collect::<Vec<_>>()});
            let mut lanes = vec![Vec::new(); LANES.len()];
            let mut through = Vec::new();
            for _ in 0..requests {
                let before = Counted::of(server)?;
                proxy.reset()?;
                let started = Instant::now();
                let answer = server.post("/v1/vat/record/actions", None, &body)?;
                let elapsed = started.elapsed().as_secs_f64();
                let trips = proxy.stats()?["round_trips"].as_f64().unwrap_or(f64::NAN);
                let recorded = answer["results"]
                    .as_array()
                    .map_or(0, |r| r.iter().filter(|r| r["recorded"] == true).count());
                if recorded != records {
                    return fail(format!(
                        "a batch of {records} recorded {recorded}: {answer}"
                    ));
                }
                let counted = before.until(&Counted::of(server)?);
                for (lane, value) in lanes.iter_mut().zip(counted.lanes) {
                    lane.push(value);
                }
                through.push(trips - idle * elapsed);
            }
            batches.push(BatchTrips {
                records,
                budgeted: is_budgeted,
                lanes: lanes.into_iter().map(median).collect(),
                proxy: median(through),
            });
        }
    }
    let idle = idle_rate(proxy)?;
    let env = [("JTI", plain.as_str())];
    let url = format!("{}/v1/vat/record/action", server.base);
    let mut commits = Vec::new();
    for clients in [1, 8, 64] {
        let before = Counted::of(server)?;
        proxy.reset()?;
        let started = Instant::now();
        let load = wrk_with(&url, Some(script), &env, plan.seconds, clients)?;
        let elapsed = started.elapsed().as_secs_f64();
        let trips = proxy.stats()?["round_trips"].as_f64().unwrap_or(f64::NAN);
        if load.errors > 0 {
            return fail(format!("{} requests failed under the load", load.errors));
        }
        let counted = before.until(&Counted::of(server)?);
        let groups = counted.groups.max(1.0);
        commits.push(CommitTrips {
            clients,
            groups: counted.groups,
            size: counted.writes / groups,
            lanes: counted.lanes.iter().map(|v| v / groups).collect(),
            proxy: (trips - idle * elapsed) / groups,
        });
    }
    Ok((batches, commits))
}

/// The machine's CPU time so far from `/proc/stat`: busy and in all
/// (clock ticks; idle and I/O wait count as not busy).
fn cpu_ticks() -> Result<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let line = stat
        .lines()
        .find(|line| line.starts_with("cpu "))
        .ok_or("/proc/stat has no cpu line")?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(str::parse)
        .collect::<std::result::Result<_, _>>()?;
    let total: u64 = ticks.iter().sum();
    let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
    Ok((total - idle, total))
}

/// `load`, and the share of the machine's CPU time busy while it ran.
fn busy_during(load: &dyn Fn() -> Result<Load>) -> Result<(Load, f64)> {
    let (busy, total) = cpu_ticks()?;
    let ran = load()?;
    let (busy_after, total_after) = cpu_ticks()?;
    let share = (busy_after - busy) as f64 / (total_after - total).max(1) as f64;
    Ok((ran, share))
}

/// Rounds of one host and of three: their loads, then the machine's busy
/// shares during them, then (when asked) the loads of one host and of
/// three with [`OWN_CLIENTS`] clients each.
type InTurns = (
    (Vec<Load>, Vec<Load>),
    (Vec<f64>, Vec<f64>),
    (Vec<Load>, Vec<Load>),
);

/// The clients each host has in the rows of hosts added with their own
/// clients: few enough that one host through the proxy is bound by its
/// round trips (a group's two, ~8 ms a request measured), not by the
/// machine's cores.
pub(super) const OWN_CLIENTS: u32 = 4;

/// One host against three of one PostgreSQL database reached at
/// `url(database)`, the load of `script` on one token (64 connections,
/// spread over the three), in turns; with the machine's busy share during
/// each round of either. With `own`, then the same hosts in turns again,
/// each with [`OWN_CLIENTS`] connections of its own.
fn one_and_three_hosts(
    plan: Plan,
    bin: &Path,
    scratch: &Path,
    script: &Path,
    config: &str,
    own: bool,
) -> Result<InTurns> {
    let first = Server::start(bin, &scratch.join("host-0"), config)?;
    let mut hosts = vec![first];
    for n in 1..3 {
        let data = scratch.join(format!("host-{n}"));
        std::fs::create_dir_all(&data)?;
        for file in ["key-encryption.key", "admin.key"] {
            std::fs::copy(hosts[0].data.join(file), data.join(file))?;
        }
        hosts.push(Server::start(bin, &data, config)?);
    }
    let jti = hosts[0].token("bench-bot", &["read"])?;
    let env = [("JTI", jti.as_str())];
    let urls: Vec<String> = hosts
        .iter()
        .map(|host| format!("{}/v1/vat/record/action", host.base))
        .collect();
    // The 64 connections of one host, a third on each.
    let spread = 64 / u32::try_from(urls.len())?;
    let busy = std::cell::RefCell::new((Vec::new(), Vec::new()));
    let loads = compare(
        plan,
        &|| {
            let (load, share) = busy_during(&|| wrk(&urls[0], Some(script), &env, plan.seconds))?;
            busy.borrow_mut().0.push(share);
            Ok(load)
        },
        &|| {
            let (load, share) =
                busy_during(&|| wrk_spread(&urls, script, &env, plan.seconds, spread))?;
            busy.borrow_mut().1.push(share);
            Ok(load)
        },
    );
    let owned = if own && loads.is_ok() {
        compare(
            plan,
            &|| wrk_with(&urls[0], Some(script), &env, plan.seconds, OWN_CLIENTS),
            &|| wrk_spread(&urls, script, &env, plan.seconds, OWN_CLIENTS),
        )
    } else {
        Ok((Vec::new(), Vec::new()))
    };
    for host in hosts {
        host.stop();
    }
    Ok((loads?, busy.into_inner(), owned?))
}

/// record/action on PostgreSQL against SQLite, and on three hosts of one
/// PostgreSQL database against one, on a throwaway cluster; then the same
/// hosts reaching the database through the latency proxy at
/// [`PROXY_DELAY_US`] each way, and the round trips per batch group and
/// per commit group measured through it.
pub(super) fn postgres(plan: Plan, bin: &Path, scratch: &Path, scripts: &Path) -> Result<Postgres> {
    let cluster = crate::postgres::Cluster::start(&crate::postgres::ensure_installed()?)?;
    let mut proxy = Proxy::start(
        &bin.with_file_name("latency_proxy"),
        &cluster.address(),
        PROXY_DELAY_US,
    )?;
    let config = |database: &str, through: Option<&str>| -> Result<String> {
        cluster.createdb(database)?;
        let url = match through {
            Some(address) => cluster.url_through(address, database),
            None => cluster.url(database),
        };
        Ok(format!("[database]\nurl = \"{url}\"\n{NO_LIMITS}"))
    };
    let script = scripts.join("record.lua");
    let on_postgres = Server::start(bin, &scratch.join("postgres"), &config("bench", None)?)?;
    let on_sqlite = Server::start(bin, &scratch.join("sqlite"), NO_LIMITS)?;
    let (pg_jti, lite_jti) = (
        on_postgres.token("bench-bot", &["read"])?,
        on_sqlite.token("bench-bot", &["read"])?,
    );
    let (pg_url, lite_url) = (
        format!("{}/v1/vat/record/action", on_postgres.base),
        format!("{}/v1/vat/record/action", on_sqlite.base),
    );
    let (record, sqlite) = compare(
        plan,
        &|| {
            wrk(
                &pg_url,
                Some(&script),
                &[("JTI", pg_jti.as_str())],
                plan.seconds,
            )
        },
        &|| {
            wrk(
                &lite_url,
                Some(&script),
                &[("JTI", lite_jti.as_str())],
                plan.seconds,
            )
        },
    )?;
    on_postgres.stop();
    on_sqlite.stop();

    let ((one_host, three_hosts), _, _) = one_and_three_hosts(
        plan,
        bin,
        &scratch.join("direct"),
        &script,
        &config("hosts", None)?,
        false,
    )?;
    let address = proxy.address.clone();
    let through = Some(address.as_str());
    let hosts_config = config("proxied", through)?;
    proxy.reset()?;
    let ((proxied_one_host, proxied_three_hosts), proxied_busy, proxied_own) = one_and_three_hosts(
        plan,
        bin,
        &scratch.join("proxied"),
        &script,
        &hosts_config,
        true,
    )?;
    let rtt = proxy.stats()?["rtt_us"].clone();
    let rtt_us = (
        rtt["median"].as_f64().unwrap_or(f64::NAN),
        rtt["p99"].as_f64().unwrap_or(f64::NAN),
    );

    let counted = Server::start(bin, &scratch.join("trips"), &config("trips", through)?)?;
    let trips = round_trips(plan, &counted, &mut proxy, &script);
    counted.stop();
    proxy.stop();
    let (batches, commits) = trips?;
    Ok(Postgres {
        record,
        sqlite,
        one_host,
        three_hosts,
        proxied_one_host,
        proxied_three_hosts,
        proxied_busy,
        proxied_own,
        rtt_us,
        batches,
        commits,
    })
}

/// The agents of the dashboard's folder: the first is `filled`'s.
pub(super) const DASHBOARD_AGENTS: [&str; 6] = [
    "growth-bot",
    "billing-bot",
    "triage-bot",
    "search-bot",
    "mail-bot",
    "report-bot",
];

/// Days the dashboard's folder spreads its records over, ending now.
pub(super) const DASHBOARD_DAYS: u32 = 30;

/// Budgeted tokens issued (and partly spent) before the dashboard's rows.
pub(super) const BUDGETED_TOKENS: u32 = 12;

/// Seconds of load per call per round in the dashboard's rows (16 calls).
pub(super) const DASHBOARD_SECONDS: u32 = 2;

/// Fills a fresh data folder for the dashboard: `records` records of
/// [`DASHBOARD_AGENTS`] (one token each) over [`DASHBOARD_DAYS`] days;
/// returns the folder and how long the prefill took (s).
pub(super) fn filled_for_dashboard(
    bin: &Path,
    prefill: &Path,
    scratch: &Path,
    records: u64,
) -> Result<(PathBuf, f64)> {
    let data = scratch.join("dashboard");
    let server = Server::start(bin, &data, NO_LIMITS)?;
    let jtis = DASHBOARD_AGENTS
        .iter()
        .map(|agent| server.token(agent, &["read", "write", "summarise"]))
        .collect::<Result<Vec<_>>>()?;
    server.stop();
    let started = Instant::now();
    run(
        &prefill.to_string_lossy(),
        &[
            &data.to_string_lossy(),
            &jtis.join(","),
            &records.to_string(),
            &DASHBOARD_DAYS.to_string(),
        ],
    )?;
    Ok((data, started.elapsed().as_secs_f64()))
}

/// One page of the dashboard: its name and the calls it makes, each with
/// its loads (one per round).
pub(super) struct DashboardPage {
    pub(super) name: &'static str,
    pub(super) calls: Vec<(String, Vec<Load>)>,
}

/// The rows of the dashboard's section, on the largest data folder.
pub(super) struct DashboardRows {
    pub(super) pages: Vec<DashboardPage>,
    /// Seconds the dashboard's prefill took (`--only reviewer`), if it ran.
    pub(super) prefill_seconds: Option<f64>,
}

/// The dashboard's pages and their calls, for `agent`'s history.
fn dashboard_pages(agent: &str) -> Vec<(&'static str, Vec<String>)> {
    let mut agents = vec!["/v1/vat/agents".to_owned()];
    for sort in [
        "agent_id",
        "reputation",
        "activity",
        "actions",
        "denial_rate",
        "error_rate",
    ] {
        agents.push(format!("/v1/vat/agents?sort={sort}"));
    }
    vec![
        (
            "inbox",
            vec![
                "/v1/vat/inbox/counts".to_owned(),
                "/v1/vat/aar?rated=false&limit=50".to_owned(),
                "/v1/vat/approvals?status=pending&limit=50".to_owned(),
            ],
        ),
        ("agents", agents),
        (
            "an agent's history",
            vec![format!("/v1/vat/agents/{agent}/history?days=30")],
        ),
        (
            "overview",
            ["24h", "7d", "30d"]
                .iter()
                .map(|w| format!("/v1/vat/overview?window={w}"))
                .collect(),
        ),
        (
            "tokens",
            vec![
                "/v1/vat/tokens?limit=50".to_owned(),
                format!("/v1/vat/tokens?agent_id={agent}&limit=50"),
            ],
        ),
    ]
}

/// Each dashboard page's calls on `data`, whose records are `agent`'s
/// (among others'), after [`BUDGETED_TOKENS`] budgeted tokens are issued
/// and spent from: wrk on 64 connections, every call in turn each round.
pub(super) fn dashboard(
    plan: Plan,
    bin: &Path,
    data: &Path,
    scripts: &Path,
    agent: &str,
) -> Result<DashboardRows> {
    let server = Server::start(bin, data, NO_LIMITS)?;
    let key = server.key()?;
    for n in 0..BUDGETED_TOKENS {
        let body = json!({
            "developer_email": "bench@example.com", "agent_id": format!("budget-bot-{n}"),
            "resources": ["crm:*"], "actions": ["read"], "ttl_seconds": 86_400,
            "constraints": {"max_spend_usd": 100, "max_actions": 50}
        });
        let issued = server.post("/v1/vat/issue/l1", Some(&key), &body)?;
        let jti = issued["jti"]
            .as_str()
            .ok_or_else(|| format!("issue failed: {issued}"))?
            .to_owned();
        for _ in 0..n {
            let made = server.post(
                "/v1/vat/record/action",
                None,
                &json!({"vat_jti": jti, "action": "read", "resource": "crm:budget",
                    "result": "success", "spend_usd": 3}),
            )?;
            if made["aar_id"].as_str().is_none() {
                return fail(format!("a budgeted record/action failed: {made}"));
            }
        }
    }
    let seconds = if plan.quick { 1 } else { DASHBOARD_SECONDS };
    let script = scripts.join("get.lua");
    let mut pages = Vec::new();
    for (name, paths) in dashboard_pages(agent) {
        let mut calls = Vec::new();
        for path in paths {
            let answer = server.get(&path, &key)?;
            if answer.get("code").is_some() || answer.get("status").is_some_and(Value::is_u64) {
                return fail(format!("{path} answered {answer}"));
            }
            calls.push((path, Vec::new()));
        }
        pages.push(DashboardPage { name, calls });
    }
    for _ in 0..plan.rounds {
        for page in &mut pages {
            for (path, loads) in &mut page.calls {
                let env = [("KEY", key.as_str()), ("PATH_QUERY", path.as_str())];
                loads.push(wrk(&server.base, Some(&script), &env, seconds)?);
            }
        }
    }
    server.stop();
    Ok(DashboardRows {
        pages,
        prefill_seconds: None,
    })
}

/// The rows of the argument-constraints section (DESIGN §15).
pub(super) struct ArgsRows {
    /// record/action of `bench/args/grant.json`'s attempt with its 1 KiB of
    /// arguments, on a token whose grant carries the three rules, in turns
    /// with `without_rules`.
    pub(super) with_rules: Vec<Load>,
    /// The same load and arguments on a token of the same grant without
    /// the rules, on the same server.
    pub(super) without_rules: Vec<Load>,
    /// `args_eval`'s output of each round (native, nanoseconds per call).
    pub(super) native: Vec<Value>,
    /// `bench/args.mjs`'s output of each round (wasm in Node), in turns
    /// with `native`.
    pub(super) wasm: Vec<Value>,
}

/// The argument-constraints rows: the HTTP load with and without the rules
/// in interleaved rounds on one server, then the native and the wasm
/// evaluation in turns, one process each per round.
pub(super) fn args_rows(
    plan: Plan,
    root: &Path,
    bins: &Path,
    scratch: &Path,
    scripts: &Path,
) -> Result<ArgsRows> {
    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(
        root.join("bench/args/grant.json"),
    )?)?;
    let args = fixture["args"].to_string();
    let server = Server::start(&bins.join("mandate"), &scratch.join("args"), NO_LIMITS)?;
    let key = server.key()?;
    let issue = |agent: &str, rules: Option<&Value>| -> Result<String> {
        let mut body = json!({
            "developer_email": "bench@example.com", "agent_id": agent,
            "resources": ["mail:*"], "actions": [fixture["action"]], "ttl_seconds": 86_400,
        });
        if let Some(rules) = rules {
            body["constraints"] = json!({ "args": rules });
        }
        let issued = server.post("/v1/vat/issue/l1", Some(&key), &body)?;
        match issued["jti"].as_str() {
            Some(jti) => Ok(jti.to_owned()),
            None => fail(format!("issue failed: {issued}")),
        }
    };
    let ruled = issue("args-bot", Some(&fixture["rules"]))?;
    let plain = issue("plain-bot", None)?;
    let url = format!("{}/v1/vat/record/action", server.base);
    let script = scripts.join("record_args.lua");
    let load = |jti: &str| {
        wrk(
            &url,
            Some(&script),
            &[("JTI", jti), ("ARGS", &args)],
            plan.seconds,
        )
    };
    let (with_rules, without_rules) = compare(plan, &|| load(&ruled), &|| load(&plain))?;
    server.stop();

    let flag: &[&str] = if plan.quick { &["--quick"] } else { &[] };
    let mut node_args = vec!["bench/args.mjs", "--json"];
    node_args.extend_from_slice(flag);
    let (mut native, mut wasm) = (Vec::new(), Vec::new());
    for _ in 0..plan.rounds {
        native.push(json_of(&bins.join("args_eval"), flag, root)?);
        wasm.push(json_of(Path::new("node"), &node_args, &root.join("wasm"))?);
    }
    Ok(ArgsRows {
        with_rules,
        without_rules,
        native,
        wasm,
    })
}
