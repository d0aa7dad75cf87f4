//! Crash safety with the real `mandate` binary: `kill -9` at random moments
//! under concurrent writes, restart on the same data folder, and check that
//! every acknowledged record is there, unchanged, once; that budgets and
//! revocations hold; and that the database passes `PRAGMA integrity_check`.
//! Then a full disk (a small tmpfs): clean 503s, nothing acknowledged lost,
//! recovery when space returns.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{expect_json, jth, text, with_database};
use crate::process::{Server, admin_key, config_without_limits};

pub async fn issue(server: &Server, key: &str, constraints: Value) -> String {
    let body = json!({
        "developer_email": "dev@example.com", "agent_id": "crash-bot",
        "resources": ["crm:*"], "actions": ["read"], "constraints": constraints, "ttl_seconds": 86400
    });
    let response = server
        .client
        .post(server.url("/v1/vat/issue/l1"))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap();
    text(&expect_json(response, StatusCode::CREATED).await["jti"]).to_owned()
}

/// What a client was told: the record id and what it sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Ack {
    pub jti: String,
    pub resource: String,
    pub status: &'static str,
}

/// Records actions on `tokens` until the server goes away; collects every
/// acknowledged record (201 or a 403 naming a denied record).
pub async fn writer_client(
    base: String,
    tokens: Vec<String>,
    acks: Arc<Mutex<BTreeMap<String, Ack>>>,
    seed: usize,
) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    for n in seed.. {
        let jti = tokens[n % tokens.len()].clone();
        let resource = format!("crm:item{n}");
        let body = json!({"vat_jti": jti, "action": "read", "resource": resource, "result": "success", "spend_usd": 0.5});
        let Ok(response) = client
            .post(format!("{base}/v1/vat/record/action"))
            .json(&body)
            .send()
            .await
        else {
            return;
        };
        let status = response.status();
        let Ok(reply) = response.json::<Value>().await else {
            return;
        };
        let acked = match status {
            StatusCode::CREATED => "completed",
            StatusCode::FORBIDDEN => "denied",
            _ => continue,
        };
        acks.lock().unwrap().insert(
            text(&reply["aar_id"]).to_owned(),
            Ack {
                jti,
                resource,
                status: acked,
            },
        );
    }
}

pub fn random_below(bound: u64) -> u64 {
    u64::from_le_bytes(mandate_host::random::bytes()) % bound
}

/// Checks every acknowledged record against the server; returns the bodies.
pub async fn check_acks(
    server: &Server,
    key: &str,
    acks: &BTreeMap<String, Ack>,
    seen: &mut BTreeMap<String, Value>,
) {
    for (aar_id, ack) in acks {
        let response = server
            .client
            .get(server.url(&format!("/v1/vat/aar/{aar_id}")))
            .bearer_auth(key)
            .send()
            .await
            .unwrap();
        let record = expect_json(response, StatusCode::OK).await;
        assert_eq!(record["jth"], jth(&ack.jti), "{aar_id}");
        assert_eq!(record["resource"], ack.resource.as_str(), "{aar_id}");
        assert_eq!(record["status"], ack.status, "{aar_id}");
        if let Some(earlier) = seen.insert(aar_id.clone(), record.clone()) {
            assert_eq!(earlier, record, "{aar_id} changed across a crash");
        }
    }
}

/// SQLite's integrity check ("ok" on PostgreSQL, which checks its own
/// pages as it reads them), the records stored, and how many distinct ids
/// they have.
pub fn integrity(data_dir: &Path) -> (String, i64, i64) {
    with_database(data_dir, |conn| {
        let check: String = match conn.as_sqlite() {
            Some(sqlite) => sqlite
                .query_row("PRAGMA integrity_check", [], |row| row.get(0))
                .unwrap(),
            None => "ok".to_owned(),
        };
        let records: i64 = conn
            .query_row("SELECT count(*) FROM records", [], |row| row.get(0))
            .unwrap();
        let distinct: i64 = conn
            .query_row("SELECT count(DISTINCT aar_id) FROM records", [], |row| {
                row.get(0)
            })
            .unwrap();
        (check, records, distinct)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_nine_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = config_without_limits(dir.path());
    let acks = Arc::new(Mutex::new(BTreeMap::new()));
    let mut seen = BTreeMap::new();
    let mut revoked = Vec::new();
    let mut tokens = Vec::new();
    let mut budget_token = String::new();
    const CYCLES: usize = 6;
    for cycle in 0..CYCLES {
        let server = Server::start(&data, &config);
        let key = admin_key(&data);
        if cycle == 0 {
            budget_token = issue(
                &server,
                &key,
                json!({"max_actions": 250, "max_spend_usd": 1000}),
            )
            .await;
            tokens = vec![
                budget_token.clone(),
                issue(&server, &key, json!({})).await,
                issue(&server, &key, json!({})).await,
            ];
        }
        let snapshot = acks.lock().unwrap().clone();
        check_acks(&server, &key, &snapshot, &mut seen).await;
        for jti in &revoked {
            let body =
                json!({"vat_jti": jti, "action": "read", "resource": "crm:a", "result": "success"});
            let response = server
                .client
                .post(server.url("/v1/vat/record/action"))
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(
                response.status(),
                StatusCode::FORBIDDEN,
                "revocation of {jti} was lost"
            );
        }
        let mut clients = Vec::new();
        for seed in 0..6 {
            clients.push(tokio::spawn(writer_client(
                server.base.clone(),
                tokens.clone(),
                acks.clone(),
                seed * 1_000_000 + cycle * 10_000,
            )));
        }
        let victim = issue(&server, &key, json!({})).await;
        let response = server
            .client
            .post(server.url("/v1/vat/revoke"))
            .bearer_auth(&key)
            .json(&json!({"jti": victim}))
            .send()
            .await
            .unwrap();
        expect_json(response, StatusCode::OK).await;
        revoked.push(victim);
        // However busy the machine, let this cycle's writers be acknowledged
        // a hundred times (for at most ten seconds), then kill at a random
        // moment.
        let started = std::time::Instant::now();
        while acks.lock().unwrap().len() < snapshot.len() + 100
            && started.elapsed() < Duration::from_secs(10)
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(random_below(400))).await;
        server.kill();
        for client in clients {
            client.await.unwrap();
        }
    }
    let server = Server::start(&data, &config);
    let key = admin_key(&data);
    let acks = acks.lock().unwrap().clone();
    assert!(acks.len() > 500, "only {} acknowledged writes", acks.len());
    check_acks(&server, &key, &acks, &mut seen).await;
    server.kill();

    let (check, records, distinct) = integrity(&data);
    assert_eq!(check, "ok");
    assert_eq!(records, distinct, "a record is duplicated");
    assert!(records as usize >= acks.len());
    let (charged, completed): (i64, i64) = with_database(&data, |conn| {
        conn.query_row(
            "SELECT t.actions, (SELECT count(*) FROM records r WHERE r.jti = t.jti AND r.status != 'denied')
             FROM tokens t WHERE t.jti = ?1",
            [&budget_token],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap()
    });
    assert_eq!(
        charged, completed,
        "the budget counter and the records disagree"
    );
    assert!(completed <= 250, "{completed} actions on a budget of 250");
    report(&format!(
        "crash: {CYCLES} kill -9 cycles, {} acknowledged, 0 lost, {records} records stored, {} revocations held, integrity ok",
        acks.len(),
        revoked.len()
    ));
}

/// One line of figures for RELIABILITY.md (`cargo test … -- --nocapture`).
#[allow(
    clippy::print_stderr,
    reason = "the reliability figures are read from the test output"
)]
pub fn report(line: &str) {
    eprintln!("{line}");
}

/// A tmpfs mounted for the test and unmounted after.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(path: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(path).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(path)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "the full-disk test mounts a small tmpfs and needs root (as on CI)"
        );
        Tmpfs(path.to_owned())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Fills a file system to the last byte.
fn fill(path: &Path) {
    use std::io::Write as _;
    let mut file = std::fs::File::create(path).unwrap();
    let chunk = vec![0u8; 16 * 1024];
    while file
        .write_all(&chunk)
        .and_then(|()| file.sync_all())
        .is_ok()
    {}
    let small = [0u8; 512];
    while file
        .write_all(&small)
        .and_then(|()| file.sync_all())
        .is_ok()
    {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_disk_gives_503_loses_nothing_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let mount = Tmpfs::mount(&dir.path().join("disk"), "3m");
    let data = mount.0.join("data");
    let config = config_without_limits(dir.path());
    let server = Server::start(&data, &config);
    let key = admin_key(&data);
    let jti = issue(&server, &key, json!({})).await;
    let mut acked = Vec::new();
    let mut unavailable = 0;
    let act = |n: usize| json!({"vat_jti": jti, "action": "read", "resource": format!("crm:r{n}"), "result": "success"});
    for n in 0..20 {
        let response = server
            .client
            .post(server.url("/v1/vat/record/action"))
            .json(&act(n))
            .send()
            .await
            .unwrap();
        acked.push(text(&expect_json(response, StatusCode::CREATED).await["aar_id"]).to_owned());
    }
    fill(&mount.0.join("filler"));
    for n in 20..400 {
        let response = server
            .client
            .post(server.url("/v1/vat/record/action"))
            .json(&act(n))
            .send()
            .await
            .unwrap();
        match response.status() {
            StatusCode::CREATED => {
                acked.push(text(&response.json::<Value>().await.unwrap()["aar_id"]).to_owned())
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                assert_eq!(
                    response.headers()["content-type"],
                    "application/problem+json"
                );
                assert_eq!(response.headers()["retry-after"], "5");
                let problem: Value = response.json().await.unwrap();
                assert_eq!(problem["code"], "unavailable");
                unavailable += 1;
                if unavailable >= 20 {
                    break;
                }
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert!(unavailable >= 20, "the disk never filled up");
    let health = server
        .client
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK, "the server stays up");

    std::fs::remove_file(mount.0.join("filler")).unwrap();
    let mut recovered = false;
    for n in 400..450 {
        let response = server
            .client
            .post(server.url("/v1/vat/record/action"))
            .json(&act(n))
            .send()
            .await
            .unwrap();
        if response.status() == StatusCode::CREATED {
            acked.push(text(&response.json::<Value>().await.unwrap()["aar_id"]).to_owned());
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(recovered, "no write succeeded after space returned");
    server.kill();

    let server = Server::start(&data, &config);
    for aar_id in &acked {
        let response = server
            .client
            .get(server.url(&format!("/v1/vat/aar/{aar_id}")))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            StatusCode::OK,
            "{aar_id} was acknowledged and lost"
        );
    }
    server.kill();
    assert_eq!(integrity(&data).0, "ok");
    report(&format!(
        "full disk: {} acknowledged, 0 lost, {unavailable} answered 503, recovered when space returned, integrity ok",
        acked.len()
    ));
}
