//! Several hosts on one PostgreSQL database (this module runs on the
//! PostgreSQL pass only; `cargo xtask test` skips it on SQLite, which serves
//! one process): a token issued on one host acts on another, a revocation on
//! one is refused by the others the moment it returns and no write any host
//! acknowledged commits after it, as is an API key revoked on one, spenders spread over
//! the hosts never pass a budget, concurrent ratings have one winner, an
//! Idempotency-Key retried on another host gets the first answer, a DPoP
//! proof used on one host is refused on another; `kill -9` of one host
//! under load loses nothing either host acknowledged; and a PostgreSQL
//! restart under load (run alone) answers 503 meanwhile and loses nothing;
//! hosts writing at once append to one record log; quotas and an agent's
//! first-issue registration are exact across hosts, a record's proof is
//! served by any host the moment its write is acknowledged, and three
//! hosts with two organisations keep all of it at once. These are the
//! guarantees whatever replaces the organisation's lock must keep (plan
//! write-path-at-scale §4): each of the quota, registration and rating
//! tests fails when groups take no lock (checked once by hand).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use mandate_host::config::Config;

use crate::crash::{Ack, check_acks, integrity, issue, random_below, report, writer_client};
use crate::helpers::{
    Holder, TestApp, database_of, expect_json, expect_problem, postgres_server, share_database,
    test_database, text, with_database,
};
use crate::process::{Server, admin_key, config_without_limits};
use crate::races::{
    ratings_counted, ratings_race, ratings_race_by, spenders_race, spenders_race_in,
};

/// Stops a test of this module at once, with one line saying what it
/// needs, when no PostgreSQL server is named (the module is compiled only
/// with the `postgres-suite` feature, which `cargo xtask test` enables
/// where it starts one).
fn needs_postgres() {
    assert!(
        postgres_server().is_some(),
        "the multi-host suite needs PostgreSQL: run `cargo xtask test`, or set MANDATE_TEST_POSTGRES=postgres://USER@HOST:PORT/DB (a role that may create databases)"
    );
}

/// The address clients reach the hosts at, behind one load balancer: DPoP
/// proofs name it, so a proof is good at every host.
const PUBLIC_URL: &str = "https://mandate.example";

/// Three hosts on one database, behind one public address.
async fn three_hosts() -> Vec<TestApp> {
    let public = |config: &mut Config| config.public_url = Some(PUBLIC_URL.to_owned());
    let first = TestApp::spawn_with(public).await;
    let second = first.another_host(public).await;
    let third = first.another_host(public).await;
    vec![first, second, third]
}

async fn stop_all(hosts: Vec<TestApp>) {
    for host in hosts {
        host.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_token_issued_on_one_host_acts_on_the_others_and_a_revocation_holds_everywhere() {
    needs_postgres();
    let hosts = three_hosts().await;
    let root = hosts[0]
        .root("bot", &["crm:*"], &["read", "delegate"])
        .await;
    let jti = text(&root["jti"]);
    for host in &hosts {
        expect_json(
            host.act(jti, "read", "crm:a", "success").await,
            StatusCode::CREATED,
        )
        .await;
    }
    let child = expect_json(
        hosts[1]
            .delegate(
                &root,
                json!({"agent_id": "helper", "resources": ["crm:a"], "actions": ["read"]}),
            )
            .await,
        StatusCode::CREATED,
    )
    .await;
    // Every host counts the same four records of the workflow.
    for host in &hosts {
        let summary = expect_json(
            host.get_auth(
                &format!("/v1/vat/aar/provenance/{}", text(&root["provenance_ref"])),
                &host.admin_key,
            )
            .await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(summary["total_records"], 4, "{summary}");
    }
    // Revoked on the third host: the first and second refuse at once.
    revoked_everywhere(&hosts[2], &hosts[..2], jti, &[&root, &child]).await;
    stop_all(hosts).await;
}

/// An API key let in by every host, then revoked on the third: the first
/// and second refuse it the moment the revocation returns, though each
/// had just found it active (its look-up leased).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_revoked_on_one_host_is_refused_by_the_others_at_once() {
    needs_postgres();
    let hosts = three_hosts().await;
    let (_, owner) = hosts[0].org("beta").await;
    let auditor = hosts[0].key(&owner, "auditor", None).await;
    let me = expect_json(hosts[0].get_auth("/v1/me", &auditor).await, StatusCode::OK).await;
    for host in &hosts {
        expect_json(host.get_auth("/v1/me", &auditor).await, StatusCode::OK).await;
    }
    expect_json(
        hosts[2]
            .send(
                reqwest::Method::DELETE,
                &format!("/v1/keys/{}", text(&me["key_id"])),
                &owner,
                None,
            )
            .await,
        StatusCode::OK,
    )
    .await;
    for host in &hosts {
        expect_problem(
            host.get_auth("/v1/me", &auditor).await,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        )
        .await;
    }
    stop_all(hosts).await;
}

/// Revokes `jti` on `revoker`; each of `others` refuses every one of
/// `tokens` (the revoked token and its descendants) the moment it returns.
async fn revoked_everywhere(revoker: &TestApp, others: &[TestApp], jti: &str, tokens: &[&Value]) {
    expect_json(
        revoker
            .post_auth("/v1/vat/revoke", &revoker.admin_key, &json!({"jti": jti}))
            .await,
        StatusCode::OK,
    )
    .await;
    for host in others {
        for token in tokens {
            let refused = host
                .post_auth(
                    "/v1/vat/record/action",
                    text(&token["compact_jwt"]),
                    &json!({"action": "read", "resource": "crm:a", "result": "success"}),
                )
                .await;
            assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_spenders_over_three_hosts_never_pass_a_budget() {
    needs_postgres();
    let hosts = three_hosts().await;
    for trial in 0..5 {
        let (jti, actions) = spenders_race(&hosts.iter().collect::<Vec<_>>(), 32, trial).await;
        // What the token's counters say agrees with what was answered.
        let status = expect_json(
            hosts[1]
                .get_auth(&format!("/v1/vat/tokens/{jti}"), &hosts[1].admin_key)
                .await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(status["status"], "active", "{status}");
        let records = expect_json(
            hosts[2]
                .get_auth(
                    &format!("/v1/vat/aar?vat_jti={jti}&limit=100"),
                    &hosts[2].admin_key,
                )
                .await,
            StatusCode::OK,
        )
        .await;
        let allowed = records["records"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["status"] != "denied")
            .count();
        assert_eq!(allowed, actions, "trial {trial}");
    }
    stop_all(hosts).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_ratings_over_three_hosts_have_one_winner() {
    needs_postgres();
    let hosts = three_hosts().await;
    let root = hosts[0].root("bot", &["crm:*"], &["read"]).await;
    let all: Vec<&TestApp> = hosts.iter().collect();
    for trial in 0..5 {
        ratings_race(&all, &root, trial).await;
    }
    assert_eq!(ratings_counted(&hosts[2], "bot").await, 5);
    stop_all(hosts).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_idempotency_key_retried_on_another_host_gets_the_first_answer() {
    needs_postgres();
    let hosts = three_hosts().await;
    let root = hosts[0].root("bot", &["crm:*"], &["read"]).await;
    let body = json!({"vat_jti": text(&root["jti"]), "action": "read",
                      "resource": "crm:a", "result": "success"});
    let send = |host: &TestApp, body: &Value| {
        host.client
            .post(host.url("/v1/vat/record/action"))
            .header("Idempotency-Key", "retry-me-across-hosts")
            .json(body)
            .send()
    };
    let first = expect_json(send(&hosts[0], &body).await.unwrap(), StatusCode::CREATED).await;
    for host in &hosts[1..] {
        let again = expect_json(send(host, &body).await.unwrap(), StatusCode::CREATED).await;
        assert_eq!(again, first);
    }
    let other = json!({"vat_jti": text(&root["jti"]), "action": "read",
                       "resource": "crm:b", "result": "success"});
    expect_problem(
        send(&hosts[2], &other).await.unwrap(),
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency_key_reused",
    )
    .await;
    let records = expect_json(
        hosts[1]
            .get_auth(
                &format!("/v1/vat/aar?vat_jti={}", text(&root["jti"])),
                &hosts[1].admin_key,
            )
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(records["records"].as_array().unwrap().len(), 1);
    stop_all(hosts).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_proof_of_possession_used_on_one_host_is_refused_on_another() {
    needs_postgres();
    let hosts = three_hosts().await;
    let holder = Holder::new();
    let root = hosts[0]
        .issue(json!({
            "developer_email": "dev@example.com", "agent_id": "bound-bot",
            "resources": ["crm:*"], "actions": ["read"], "holder_key": holder.jwk(),
        }))
        .await;
    let token = text(&root["compact_jwt"]);
    let body = json!({"action": "read", "resource": "crm:a", "result": "success"});
    let proof = holder.proof("POST", &format!("{PUBLIC_URL}/v1/vat/record/action"), token);
    expect_json(
        hosts[0]
            .post_dpop("/v1/vat/record/action", token, Some(&proof), &body)
            .await,
        StatusCode::CREATED,
    )
    .await;
    // The same proof, captured and replayed to the other hosts.
    for host in &hosts[1..] {
        expect_problem(
            host.post_dpop("/v1/vat/record/action", token, Some(&proof), &body)
                .await,
            StatusCode::UNAUTHORIZED,
            "dpop_invalid",
        )
        .await;
    }
    // A fresh proof acts on any host.
    let fresh = holder.proof("POST", &format!("{PUBLIC_URL}/v1/vat/record/action"), token);
    expect_json(
        hosts[2]
            .post_dpop("/v1/vat/record/action", token, Some(&fresh), &body)
            .await,
        StatusCode::CREATED,
    )
    .await;
    stop_all(hosts).await;
}

/// Writers load two host processes; one is killed (`kill -9`) at a random
/// moment, again and again, while the other goes on; every write either
/// host acknowledged is there, unchanged, once, and the record log a dead
/// host was appending to audits clean (a group it had not committed left
/// no leaf, tile entry or numbering gap behind).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_nine_of_one_host_loses_nothing_either_acknowledged() {
    needs_postgres();
    let dir = tempfile::tempdir().unwrap();
    let (data, other) = (dir.path().join("a"), dir.path().join("b"));
    let config = config_without_limits(dir.path());
    let survivor = Server::start(&data, &config);
    let key = admin_key(&data);
    share_database(&data, &other);
    let tokens = vec![
        issue(&survivor, &key, json!({})).await,
        issue(&survivor, &key, json!({})).await,
    ];
    let acks = Arc::new(Mutex::new(BTreeMap::new()));
    let steady: Vec<_> = (0..3)
        .map(|seed| {
            tokio::spawn(writer_client(
                survivor.base.clone(),
                tokens.clone(),
                acks.clone(),
                seed * 1_000_000,
            ))
        })
        .collect();
    for cycle in 0..4 {
        let victim = Server::start(&other, &config);
        let writers: Vec<_> = (0..3)
            .map(|seed| {
                tokio::spawn(writer_client(
                    victim.base.clone(),
                    tokens.clone(),
                    acks.clone(),
                    (seed + 3) * 1_000_000 + cycle * 10_000,
                ))
            })
            .collect();
        let before = acks.lock().unwrap().len();
        let started = Instant::now();
        while acks.lock().unwrap().len() < before + 200
            && started.elapsed() < Duration::from_secs(10)
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(random_below(300))).await;
        victim.kill();
        for writer in writers {
            writer.await.unwrap();
        }
    }
    survivor.stop();
    for writer in steady {
        writer.await.unwrap();
    }
    let acks = acks.lock().unwrap().clone();
    assert!(acks.len() > 500, "only {} acknowledged writes", acks.len());
    let server = Server::start(&other, &config);
    check_acks(&server, &key, &acks, &mut BTreeMap::new()).await;
    server.stop();
    let (_, records, distinct) = integrity(&data);
    assert_eq!(records, distinct, "a record is duplicated");
    assert!(records as usize >= acks.len());
    let report = with_database(&data, |conn| {
        let origin = mandate_host::recordlog::stored_origin(conn)
            .unwrap()
            .unwrap();
        mandate_host::recordlog::audit::verify(conn, &origin).unwrap()
    });
    assert_eq!(report.findings, [], "{}", report.summary());
    assert_eq!(report.records, u64::try_from(records).unwrap());
}

/// PostgreSQL restarted under load (`cargo xtask test` runs this alone, with
/// `MANDATE_TEST_POSTGRES_RESTART` naming the command that restarts the
/// server): while it is down writes answer 503 with `Retry-After` and
/// `/readyz` 503, never a hang; once it is back the host serves again
/// without a restart of its own, and nothing it acknowledged is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "restarts the PostgreSQL server: cargo xtask test runs it alone"]
async fn a_postgresql_restart_under_load_loses_nothing_acknowledged() {
    needs_postgres();
    let restart = std::env::var("MANDATE_TEST_POSTGRES_RESTART")
        .expect("MANDATE_TEST_POSTGRES_RESTART names the command that restarts PostgreSQL");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = config_without_limits(dir.path());
    let server = Server::start(&data, &config);
    let key = admin_key(&data);
    let tokens = vec![issue(&server, &key, json!({})).await];
    let acks = Arc::new(Mutex::new(BTreeMap::new()));
    let (unavailable, stop) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let writers: Vec<_> = (0..4)
        .map(|seed| {
            let (base, tokens, acks, unavailable, stop) = (
                server.base.clone(),
                tokens.clone(),
                acks.clone(),
                unavailable.clone(),
                stop.clone(),
            );
            tokio::spawn(async move {
                let client = reqwest::Client::builder()
                    .timeout(Duration::from_secs(20))
                    .build()
                    .unwrap();
                let mut n = seed * 1_000_000;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let resource = format!("crm:item{n}");
                    let body = json!({"vat_jti": tokens[0], "action": "read",
                                      "resource": resource, "result": "success"});
                    let response = client
                        .post(format!("{base}/v1/vat/record/action"))
                        .json(&body)
                        .send()
                        .await
                        .expect("the host answers, also while the database is down");
                    match response.status() {
                        StatusCode::CREATED => {
                            let reply: Value = response.json().await.unwrap();
                            acks.lock().unwrap().insert(
                                text(&reply["aar_id"]).to_owned(),
                                Ack {
                                    jti: tokens[0].clone(),
                                    resource,
                                    status: "completed",
                                },
                            );
                        }
                        StatusCode::SERVICE_UNAVAILABLE => {
                            assert!(response.headers().contains_key("retry-after"));
                            unavailable.fetch_add(1, Ordering::Relaxed);
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                        other => panic!("{other}: {}", response.text().await.unwrap()),
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let restarted = tokio::task::spawn_blocking(move || {
        std::process::Command::new("sh")
            .args(["-c", &restart])
            .status()
            .unwrap()
    });
    // While it restarts, readiness says so (or the restart was quicker).
    let ready = server
        .client
        .get(server.url("/readyz"))
        .send()
        .await
        .unwrap()
        .status();
    assert!(
        ready == StatusCode::OK || ready == StatusCode::SERVICE_UNAVAILABLE,
        "{ready}"
    );
    assert!(restarted.await.unwrap().success(), "the restart failed");
    // Back: the host serves again without being restarted.
    let acked_before = acks.lock().unwrap().len();
    let started = Instant::now();
    while acks.lock().unwrap().len() < acked_before + 100 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the host did not take writes again after PostgreSQL came back"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.await.unwrap();
    }
    let ready = server
        .client
        .get(server.url("/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    let acks = acks.lock().unwrap().clone();
    check_acks(&server, &key, &acks, &mut BTreeMap::new()).await;
    report(&format!(
        "PostgreSQL restart under load: {} writes acknowledged, {} answered 503 while it was down, 0 lost",
        acks.len(),
        unavailable.load(Ordering::Relaxed)
    ));
    server.stop();
}

/// Two hosts started at once on one empty database (each with its own data
/// folder, one key file between them) make one deployment: both come up,
/// one of them migrates and creates the secrets, signing key, admin key and
/// log key, the other finds them — the first start is one transaction under
/// a transaction-level advisory lock, so a pooler in transaction mode can
/// carry it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_starting_at_once_on_an_empty_database_make_one_deployment() {
    needs_postgres();
    let (first, second, keys) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let url = test_database(first.path()).unwrap();
    let at_once = Arc::new(std::sync::Barrier::new(2));
    let starts: Vec<_> = [first.path(), second.path()]
        .into_iter()
        .map(|dir| {
            let mut config = Config::for_test(dir);
            config.database.url = Some(url.clone());
            config.key_file = Some(keys.path().join(mandate_host::secrets::KEY_FILE));
            let at_once = at_once.clone();
            tokio::task::spawn_blocking(move || {
                at_once.wait();
                let (state, admin_key) = mandate_host::AppState::open(config).unwrap();
                drop(state);
                admin_key.is_some()
            })
        })
        .collect();
    let mut created = Vec::new();
    for start in starts {
        created.push(start.await.unwrap());
    }
    assert_eq!(
        created.iter().filter(|made| **made).count(),
        1,
        "{created:?}"
    );
    let counts: Vec<i64> = crate::helpers::with_database(first.path(), |conn| {
        [
            "SELECT count(*) FROM mandate_schema",
            "SELECT count(*) FROM signing_keys",
            "SELECT count(*) FROM api_keys",
            "SELECT count(*) FROM log_keys",
            "SELECT count(*) FROM orgs",
        ]
        .iter()
        .map(|count| conn.query_row(count, [], |row| row.get(0)).unwrap())
        .collect()
    });
    assert_eq!(counts, [1; 5]);
}

/// TLS to PostgreSQL (`cargo xtask test` serves its cluster with a
/// certificate of its own authority, `MANDATE_TEST_POSTGRES_CA`): with
/// `sslmode=require` and that authority every connection is encrypted; with
/// the system's roots, which never signed it, the host refuses to start.
/// The server lets each client choose, and the rest of the suite asks for
/// none.
#[tokio::test]
async fn tls_to_postgresql_is_verified_and_used() {
    needs_postgres();
    let ca = std::env::var("MANDATE_TEST_POSTGRES_CA")
        .expect("MANDATE_TEST_POSTGRES_CA names the test cluster's certificate authority");
    let dir = tempfile::tempdir().unwrap();
    // The suite's other connections ask for no TLS (`sslmode=disable`).
    let url = test_database(dir.path())
        .unwrap()
        .replace("sslmode=disable", "sslmode=require");
    assert!(url.ends_with("sslmode=require"), "{url}");
    let app = TestApp::spawn_in(dir, |config| {
        config.database.url = Some(url.clone());
        config.database.ca_file = Some(ca.into());
    })
    .await;
    let root = app.root("bot", &["crm:*"], &["read"]).await;
    expect_json(
        app.act(text(&root["jti"]), "read", "crm:a", "success")
            .await,
        StatusCode::CREATED,
    )
    .await;
    let encrypted: Vec<bool> = app.with_database(|conn| {
        conn.prepare_cached(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid
             WHERE a.application_name = 'mandate' AND a.datname = current_database()
                 AND a.pid <> pg_backend_pid()",
        )
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    });
    assert!(encrypted.len() >= 2, "{encrypted:?}");
    assert!(encrypted.iter().all(|ssl| *ssl), "{encrypted:?}");
    let dir = app.stop().await;
    let mut untrusting = Config::for_test(dir.path());
    untrusting.database.url = Some(url);
    let refused = mandate_host::AppState::open(untrusting)
        .unwrap_err()
        .to_string();
    assert!(refused.contains("cannot connect"), "{refused}");
}

/// Rate limits are per host (docs/decisions.md): with one key allowed a
/// burst of 2 at 1 request a second, each of two hosts serves its own 2
/// before refusing.
#[tokio::test]
async fn rate_limits_are_per_host() {
    needs_postgres();
    let limited = |config: &mut Config| {
        config.rate_limits.per_api_key = 1;
        config.rate_limits.burst = 2;
    };
    let first = TestApp::spawn_with(limited).await;
    let second = first.another_host(limited).await;
    for host in [&first, &second] {
        let mut statuses = Vec::new();
        for _ in 0..3 {
            let response = host
                .get_auth("/v1/vat/reputation/bot", &host.admin_key)
                .await;
            statuses.push(response.status().as_u16());
        }
        assert_eq!(statuses, [404, 404, 429]);
    }
    stop_all(vec![first, second]).await;
}

/// While the database takes no connections, a host answers writes and
/// `/readyz` with 503 `unavailable` and `Retry-After` at once (never a
/// hang), and serves again, without a restart, as soon as it does.
/// (PostgreSQL is made to refuse this test's database alone: its
/// connections are ended and new ones refused.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_goes_away_answers_503_and_comes_back() {
    needs_postgres();
    let app = TestApp::spawn().await;
    let root = app.root("bot", &["crm:*"], &["read"]).await;
    let name = app.with_database(|conn| {
        conn.query_row("SELECT current_database()", [], |row| {
            row.get::<_, String>(0)
        })
        .unwrap()
    });
    let refuse = |allow: bool| {
        let name = name.clone();
        // Another database's session changes this one.
        let admin = postgres_server().unwrap();
        std::thread::spawn(move || {
            let mut client = ::postgres::Client::connect(&admin, ::postgres::NoTls).unwrap();
            client
                .batch_execute(&format!("ALTER DATABASE {name} ALLOW_CONNECTIONS {allow}"))
                .unwrap();
            if !allow {
                client
                    .execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                         WHERE datname = $1 AND pid <> pg_backend_pid()",
                        &[&name],
                    )
                    .unwrap();
            }
        })
        .join()
        .unwrap();
    };
    refuse(false);
    for _ in 0..3 {
        let started = Instant::now();
        let written = app
            .act(text(&root["jti"]), "read", "crm:a", "success")
            .await;
        assert_eq!(written.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(written.headers().contains_key("retry-after"));
        let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
        assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
    refuse(true);
    let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    expect_json(
        app.act(text(&root["jti"]), "read", "crm:a", "success")
            .await,
        StatusCode::CREATED,
    )
    .await;
    app.stop().await;
}

/// Hosts writing at once, for two organisations, append to one log: every
/// leaf in one tree, whose every checkpoint `mandate audit verify` finds
/// consistent with the database; a record written on one host is proven
/// by another; a revocation on one host is in the status list another
/// serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hosts_writing_at_once_append_to_one_log() {
    needs_postgres();
    let hosts = three_hosts().await;
    let (_, owner) = hosts[0].org("second").await;
    let issued = expect_json(
        hosts[1]
            .post_auth(
                "/v1/vat/issue/l1",
                &owner,
                &json!({"developer_email": "dev@example.com", "agent_id": "bot",
                        "resources": ["crm:*"], "actions": ["read"]}),
            )
            .await,
        StatusCode::CREATED,
    )
    .await;
    let roots = [hosts[0].root("bot", &["crm:*"], &["read"]).await, issued];
    let mut writers = Vec::new();
    for (n, host) in hosts.iter().enumerate() {
        for root in &roots {
            let (client, url, jti) = (
                host.client.clone(),
                host.url("/v1/vat/record/action"),
                text(&root["jti"]).to_owned(),
            );
            writers.push(tokio::spawn(async move {
                let mut ids = Vec::new();
                for i in 0..15 {
                    let response = client
                        .post(&url)
                        .json(&json!({"vat_jti": jti, "action": "read",
                                      "resource": format!("crm:{n}-{i}"), "result": "success"}))
                        .send()
                        .await
                        .unwrap();
                    let body: Value = expect_json(response, StatusCode::CREATED).await;
                    ids.push(text(&body["aar_id"]).to_owned());
                }
                ids
            }));
        }
    }
    let mut ids = Vec::new();
    for writer in writers {
        ids.extend(writer.await.unwrap());
    }
    assert_eq!(ids.len(), 90);
    // Written on the first host (its organisation's), proven by the third.
    let proof = expect_json(
        hosts[2]
            .get_auth(
                &format!("/v1/vat/aar/{}/proof", ids[0]),
                &hosts[2].admin_key,
            )
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(proof["events"].as_array().unwrap().len(), 1);
    // Revoked on the second host, revoked in the list the third serves.
    expect_json(
        hosts[1]
            .post_auth(
                "/v1/vat/revoke",
                &hosts[1].admin_key,
                &json!({"jti": text(&roots[0]["jti"])}),
            )
            .await,
        StatusCode::OK,
    )
    .await;
    let claims = mandate_core::decode_unverified(text(&roots[0]["compact_jwt"]))
        .unwrap()
        .claims;
    let status = claims.status.as_ref().unwrap();
    let list = hosts[2]
        .client
        .get(hosts[2].url(&format!("/v1/vat/status/{}", status.idx() / 65_536)))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let jwks = hosts[2]
        .client
        .get(hosts[2].url("/.well-known/jwks.json"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let jwks = mandate_core::Jwks::parse(&jwks).unwrap();
    let now = hosts[2].clock.now().s();
    let list = mandate_core::verify_status_list(&list, &jwks, now, None).unwrap();
    assert_eq!(
        mandate_core::check_status(&claims, &list, now, None),
        Err(mandate_core::StatusCheckError::Revoked)
    );
    let report = hosts[0].with_database(|conn| {
        let origin = mandate_host::recordlog::stored_origin(conn)
            .unwrap()
            .unwrap();
        mandate_host::recordlog::audit::verify(conn, &origin).unwrap()
    });
    assert_eq!(report.findings, [], "{}", report.summary());
    assert_eq!(report.records, 90);
    stop_all(hosts).await;
}

/// Revoking the root ends the chain on every host: no write that any host
/// acknowledged commits after the revocation did. Writers on two hosts
/// record with the root and a child while the third revokes the root; the
/// record log orders commits (each write's leaf is appended in its commit),
/// so every acknowledged record's leaf comes before the revocations'. The
/// guarantee whatever replaces the organisation's lock must keep (plan
/// write-path-at-scale §5.4, answer 2).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_write_acknowledged_on_any_host_commits_after_its_chain_was_revoked() {
    needs_postgres();
    let hosts = three_hosts().await;
    let root = hosts[0]
        .root("bot", &["crm:*"], &["read", "delegate"])
        .await;
    let child = expect_json(
        hosts[1]
            .delegate(
                &root,
                json!({"agent_id": "helper", "resources": ["crm:*"], "actions": ["read"]}),
            )
            .await,
        StatusCode::CREATED,
    )
    .await;
    let acknowledged = Arc::new(AtomicU64::new(0));
    let mut writers = Vec::new();
    for host in &hosts[..2] {
        for token in [&root, &child] {
            let (client, url, jti, acknowledged) = (
                host.client.clone(),
                host.url("/v1/vat/record/action"),
                text(&token["jti"]).to_owned(),
                acknowledged.clone(),
            );
            writers.push(tokio::spawn(async move {
                let mut ids = Vec::new();
                loop {
                    let response = client
                        .post(&url)
                        .json(&json!({"vat_jti": jti, "action": "read",
                                      "resource": "crm:a", "result": "success"}))
                        .send()
                        .await
                        .unwrap();
                    // Refused once revoked (a denied record of its own).
                    if response.status() == StatusCode::FORBIDDEN {
                        let body: Value = response.json().await.unwrap();
                        assert_eq!(body["code"], "token_inactive", "{body}");
                        return ids;
                    }
                    let body: Value = expect_json(response, StatusCode::CREATED).await;
                    ids.push(text(&body["aar_id"]).to_owned());
                    acknowledged.fetch_add(1, Ordering::SeqCst);
                }
            }));
        }
    }
    // Revoke once the writers are well under way.
    let started = Instant::now();
    while acknowledged.load(Ordering::SeqCst) < 40 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the writers never got going"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let jti = text(&root["jti"]).to_owned();
    expect_json(
        hosts[2]
            .post_auth("/v1/vat/revoke", &hosts[2].admin_key, &json!({"jti": jti}))
            .await,
        StatusCode::OK,
    )
    .await;
    let mut ids = Vec::new();
    for writer in writers {
        ids.extend(writer.await.unwrap());
    }
    let child_jti = text(&child["jti"]).to_owned();
    let (revoked, latest): (Vec<i64>, i64) = hosts[0].with_database(move |conn| {
        let revoked = [&jti, &child_jti]
            .iter()
            .map(|jti| {
                conn.query_row(
                    "SELECT log_revoked FROM tokens WHERE jti = ?1",
                    [jti.as_str()],
                    |row| row.get(0),
                )
                .unwrap()
            })
            .collect();
        let mut latest = i64::MIN;
        for id in &ids {
            let leaf: i64 = conn
                .query_row(
                    "SELECT log_created FROM records WHERE aar_id = ?1",
                    [id.as_str()],
                    |row| row.get(0),
                )
                .unwrap();
            latest = latest.max(leaf);
        }
        (revoked, latest)
    });
    let first_revocation = revoked.iter().copied().min().unwrap();
    assert!(
        latest < first_revocation,
        "an acknowledged record's leaf {latest} follows the revocation's {first_revocation}"
    );
    stop_all(hosts).await;
}

/// A PgBouncer in transaction mode in front of the suite's PostgreSQL
/// server (`MANDATE_TEST_PGBOUNCER`, else Debian's `/usr/sbin/pgbouncer`,
/// which `cargo xtask test` installs with PostgreSQL), with `pool_size`
/// server connections a database: fewer than the hosts' connections, so
/// their transactions take turns on shared server connections. Stopped
/// when dropped.
struct Bouncer {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Bouncer {
    fn start(pool_size: u32) -> Bouncer {
        let server: postgres::Config = postgres_server().unwrap().parse().unwrap();
        let host = match &server.get_hosts()[0] {
            postgres::config::Host::Tcp(name) => name.clone(),
            postgres::config::Host::Unix(path) => path.display().to_string(),
        };
        let server_port = server.get_ports().first().copied().unwrap_or(5432);
        let user = server.get_user().unwrap_or("postgres");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let ini = dir.path().join("pgbouncer.ini");
        std::fs::write(
            &ini,
            format!(
                "[databases]\n* = host={host} port={server_port} user={user}\n\
                 [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\n\
                 unix_socket_dir =\nauth_type = any\npool_mode = transaction\n\
                 default_pool_size = {pool_size}\nmax_client_conn = 1000\n"
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        for (path, mode) in [(dir.path(), 0o755), (ini.as_path(), 0o644)] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let program = std::env::var("MANDATE_TEST_PGBOUNCER")
            .unwrap_or_else(|_| "/usr/sbin/pgbouncer".to_owned());
        let mut command = std::process::Command::new(&program);
        // PgBouncer refuses to run as root.
        let root = std::process::Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0");
        if root {
            command.args(["-u", "postgres"]);
        }
        let child = command
            .arg(&ini)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("{program} did not start ({e}): `cargo xtask test` installs PgBouncer")
            });
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "PgBouncer never listened"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Bouncer {
            child,
            port,
            _dir: dir,
        }
    }

    /// The database `url` names, reached through the bouncer.
    fn url(&self, url: &str) -> String {
        let name = url
            .rsplit('/')
            .next()
            .and_then(|rest| rest.split('?').next())
            .unwrap();
        format!(
            "postgres://postgres@127.0.0.1:{}/{name}?sslmode=disable",
            self.port
        )
    }
}

impl Drop for Bouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Hosts behind PgBouncer in transaction mode (`[database] pooler =
/// "transaction"`) make one deployment: the first start (schema, keys,
/// admin key) goes through it, and three hosts sharing four server
/// connections issue, record at once, delegate, revoke, query and prove —
/// no statement prepared by name meets another client's, no session
/// setting of one lane leaks into another's transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hosts_behind_pgbouncer_make_one_deployment() {
    needs_postgres();
    let bouncer = Arc::new(Bouncer::start(4));
    let through = |bouncer: Arc<Bouncer>| {
        move |config: &mut Config| {
            let url = config.database.url.take().unwrap();
            config.database.url = Some(bouncer.url(&url));
            config.database.pooler = mandate_host::config::Pooler::Transaction;
            config.public_url = Some(PUBLIC_URL.to_owned());
        }
    };
    let first = TestApp::spawn_with(through(bouncer.clone())).await;
    let hosts = vec![
        first.another_host(through(bouncer.clone())).await,
        first.another_host(through(bouncer.clone())).await,
        first,
    ];
    let root = hosts[0]
        .root("bot", &["crm:*"], &["read", "delegate"])
        .await;
    let jti = text(&root["jti"]).to_owned();
    let mut writers = Vec::new();
    for (n, host) in hosts.iter().enumerate() {
        let (client, url, jti) = (
            host.client.clone(),
            host.url("/v1/vat/record/action"),
            jti.clone(),
        );
        writers.push(tokio::spawn(async move {
            for i in 0..20 {
                let response = client
                    .post(&url)
                    .json(&json!({"vat_jti": jti, "action": "read",
                                  "resource": format!("crm:{n}-{i}"), "result": "success"}))
                    .send()
                    .await
                    .unwrap();
                expect_json(response, StatusCode::CREATED).await;
            }
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    let child = expect_json(
        hosts[1]
            .delegate(
                &root,
                json!({"agent_id": "helper", "resources": ["crm:a"], "actions": ["read"]}),
            )
            .await,
        StatusCode::CREATED,
    )
    .await;
    let records = expect_json(
        hosts[2]
            .get_auth(
                &format!("/v1/vat/aar?vat_jti={jti}&limit=100"),
                &hosts[2].admin_key,
            )
            .await,
        StatusCode::OK,
    )
    .await;
    let records = records["records"].as_array().unwrap();
    // Sixty actions and the delegation's own record.
    assert_eq!(records.len(), 61);
    let proof = expect_json(
        hosts[1]
            .get_auth(
                &format!("/v1/vat/aar/{}/proof", text(&records[0]["aar_id"])),
                &hosts[1].admin_key,
            )
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(proof["events"].as_array().unwrap().len(), 1, "{proof}");
    revoked_everywhere(&hosts[2], &hosts[..2], &jti, &[&root, &child]).await;
    stop_all(hosts).await;
}

/// What one witness was asked, in the order the asks arrived, as a proxy
/// in front of it saw them: the size the log said the witness was at, the
/// checkpoint's size, and the witness's answer.
#[derive(Debug, Clone, Copy)]
struct Asked {
    old: u64,
    size: u64,
    status: u16,
    /// The witness's size a 409 answered.
    told: Option<u64>,
}

type Seen = Arc<Mutex<Vec<Asked>>>;

/// A proxy in front of the witness at `witness`, recording every
/// `add-checkpoint` it forwards; answers its URL (the one the log is
/// configured with) and the record.
async fn counting_proxy(witness: String) -> (String, Seen) {
    async fn forward(
        axum::extract::State((witness, client, seen)): axum::extract::State<(
            String,
            reqwest::Client,
            Seen,
        )>,
        body: String,
    ) -> axum::response::Response {
        let old = body
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("old "))
            .and_then(|size| size.parse().ok())
            .expect("an add-checkpoint body starts with its old size");
        let size = body
            .split_once("\n\n")
            .and_then(|(_, note)| note.lines().nth(1))
            .and_then(|size| size.parse().ok())
            .expect("an add-checkpoint body ends with a checkpoint");
        let index = {
            let mut seen = seen.lock().unwrap();
            seen.push(Asked {
                old,
                size,
                status: 0,
                told: None,
            });
            seen.len() - 1
        };
        // Its own task: an ask forwarded is recorded even when the host
        // that sent it is killed before the answer.
        let recorded = seen.clone();
        let (status, content_type, text) = tokio::spawn(async move {
            let answer = client
                .post(format!("{witness}/add-checkpoint"))
                .body(body)
                .send()
                .await
                .unwrap();
            let status = answer.status().as_u16();
            let content_type = answer.headers().get(reqwest::header::CONTENT_TYPE).cloned();
            let text = answer.text().await.unwrap();
            let mut seen = recorded.lock().unwrap();
            seen[index].status = status;
            if status == 409 {
                seen[index].told = text.trim().parse().ok();
            }
            (status, content_type, text)
        })
        .await
        .unwrap();
        let mut response = axum::response::Response::new(axum::body::Body::from(text));
        *response.status_mut() = axum::http::StatusCode::from_u16(status).unwrap();
        if let Some(value) = content_type {
            response.headers_mut().insert(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_bytes(value.as_bytes()).unwrap(),
            );
        }
        response
    }
    let seen: Seen = Arc::default();
    let app = axum::Router::new()
        .route("/add-checkpoint", axum::routing::post(forward))
        .with_state((witness, reqwest::Client::new(), seen.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

/// The submitter lease's holder, `(owner, until_ms)`, if one holds it.
fn lease(dir: &std::path::Path) -> Option<(String, i64)> {
    crate::helpers::with_database(dir, |conn| {
        let rows: Vec<(String, i64)> = conn
            .prepare_cached("SELECT owner, until_ms FROM log_submitter")
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(rows.len() <= 1, "one lease row: {rows:?}");
        rows.into_iter().next()
    })
}

/// Polls `what` every 100 ms until it answers, for at most `within`.
async fn once<T>(within: Duration, mut what: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(found) = what() {
            return found;
        }
        assert!(started.elapsed() < within, "not within {within:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The checkpoint `server` serves once it is of `size` leaves or more and
/// carries cosignatures of both witnesses of `policy` (k = 2); polled.
async fn cosigned_at_least(
    server: &Server,
    log_key: &mandate_core::tlog::NoteVerifier,
    policy: &mandate_core::tlog::WitnessPolicy,
    size: u64,
) -> u64 {
    let started = Instant::now();
    loop {
        let note = server
            .client
            .get(server.url("/v1/log/checkpoint"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let now = i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
        )
        .unwrap();
        if let Ok(witnessed) = mandate_core::tlog::verify_witnessed(
            &note,
            Some(crate::submitter::ORIGIN),
            std::slice::from_ref(log_key),
            policy,
            now,
        ) && witnessed.checkpoint.size >= size
        {
            return witnessed.checkpoint.size;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no checkpoint of {size} leaves cosigned by both witnesses: {note}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One submitter across two hosts with the same `[log] witnesses`: while
/// both write, one lease row names one holder throughout, and each witness
/// is asked one sequence of checkpoints that never shrinks, each ask from
/// the size it last answered (at most one 409 a witness, at the takeover);
/// once the holder is killed (SIGKILL: no release) the other host claims
/// the lapsed lease within its time and the cosignatures keep coming.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hosts_with_witnesses_have_one_submitter_and_the_other_takes_over_when_it_dies() {
    use mandate_core::tlog::{NoteVerifier, WitnessPolicy, WitnessVerifier};
    needs_postgres();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let limits = "[rate_limits]\nper_api_key = 0\nper_token = 0\nper_org = 0\nper_ip = 0\n";
    let log = format!("[log]\norigin = \"{}\"\n", crate::submitter::ORIGIN);
    let plain = dir.path().join("plain.toml");
    std::fs::write(&plain, format!("{limits}\n{log}")).unwrap();
    // The log's key, fixed at the first start, is what the witnesses take.
    let first = Server::start(&a, &plain);
    let log_vkey = first
        .client
        .get(first.url("/v1/log/key"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    first.stop();
    let witnesses = [
        crate::submitter::witness(dir.path(), "w1", &log_vkey),
        crate::submitter::witness(dir.path(), "w2", &log_vkey),
    ];
    let mut vkeys = Vec::new();
    let mut proxies = Vec::new();
    let mut configured = String::new();
    for witness in &witnesses {
        let vkey = crate::submitter::vkey(witness).await;
        let (url, seen) = counting_proxy(witness.base.clone()).await;
        configured.push_str(&format!(
            "[[log.witnesses]]\nurl = \"{url}\"\nvkey = \"{vkey}\"\n\n"
        ));
        vkeys.push(vkey);
        proxies.push(seen);
    }
    let config = dir.path().join("witnessed.toml");
    std::fs::write(
        &config,
        format!(
            "{limits}\n{log}witness_threshold = 2\ncheckpoint_interval_ms = 100\n\n{configured}"
        ),
    )
    .unwrap();
    let policy = WitnessPolicy::new(
        vkeys
            .iter()
            .map(|vkey| WitnessVerifier::parse(vkey).unwrap())
            .collect(),
        2,
        3600,
    )
    .unwrap();
    let log_key = NoteVerifier::parse(&log_vkey).unwrap();

    let holder = Server::start(&a, &config);
    // Alone, the first host claims the lease.
    let (owner, first_until) = once(Duration::from_secs(10), || lease(&a)).await;
    share_database(&a, &b);
    let other = Server::start(&b, &config);
    let key = admin_key(&a);
    let jti = issue(&holder, &key, json!({})).await;
    let act = |server: &Server, n: u32| {
        let request = server
            .client
            .post(server.url("/v1/vat/record/action"))
            .json(&json!({
                "vat_jti": jti, "action": "read", "resource": format!("crm:lead/{n}"), "result": "success"
            }));
        async move {
            assert_eq!(request.send().await.unwrap().status(), StatusCode::CREATED);
        }
    };
    // Both hosts write for a while; the lease stays with its holder,
    // renewed (its end moves on), never taken by the other.
    for n in 0..30 {
        act(if n % 2 == 0 { &holder } else { &other }, n).await;
        let (now_owner, _) = lease(&a).expect("the lease is held while its holder runs");
        assert_eq!(
            now_owner, owner,
            "the lease changed hands while its holder ran"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let written = u64::try_from(crate::helpers::with_database(&a, |conn| {
        conn.query_row("SELECT COUNT(*) FROM log_leaves", [], |row| {
            row.get::<_, i64>(0)
        })
        .unwrap()
    }))
    .unwrap();
    let before = cosigned_at_least(&other, &log_key, &policy, written).await;
    let (still, until) = lease(&a).unwrap();
    assert_eq!(still, owner);
    assert!(until > first_until, "the holder renews its lease");

    // The holder dies without releasing; the other host takes the lapsed
    // lease over and goes on submitting.
    holder.kill();
    let killed = Instant::now();
    let (successor, _) = once(Duration::from_secs(60), || {
        lease(&a).filter(|(holder, _)| *holder != owner)
    })
    .await;
    let takeover = killed.elapsed();
    for n in 100..110 {
        act(&other, n).await;
    }
    let after = cosigned_at_least(&other, &log_key, &policy, before + 10).await;
    assert_eq!(lease(&b).unwrap().0, successor);
    // The lease lasts the cadence plus two request timeouts plus 10 s.
    assert!(
        takeover < Duration::from_millis(100 + 20_000 + 10_000 + 2_000),
        "the other host took over after {takeover:?}"
    );
    other.stop();

    for (name, seen) in ["w1", "w2"].iter().zip(&proxies) {
        let seen = seen.lock().unwrap().clone();
        assert!(
            seen.iter()
                .any(|asked| asked.status == 200 && asked.size >= after),
            "{name} cosigned the newest: {seen:?}"
        );
        let conflicts = seen.iter().filter(|asked| asked.status == 409).count();
        assert!(conflicts <= 1, "{name} answered {conflicts} 409s: {seen:?}");
        // One sequence: sizes never shrink, and each ask starts from the
        // size the witness last cosigned (or, after a 409, told).
        let mut at = 0;
        for (n, asked) in seen.iter().enumerate() {
            assert!(asked.size >= at, "{name}'s ask {n} went back: {seen:?}");
            if asked.status == 409 {
                at = asked.told.expect("a 409 tells the witness's size");
                continue;
            }
            assert_eq!(
                asked.old, at,
                "{name}'s ask {n} is from elsewhere: {seen:?}"
            );
            assert_eq!(asked.status, 200, "{name}'s ask {n}: {seen:?}");
            at = asked.size;
        }
    }
    drop(witnesses);
}

/// Moves every host's clock to the next UTC noon, so a test counting one
/// day's records never straddles midnight.
fn to_noon(hosts: &[TestApp]) {
    const DAY_MS: i64 = 86_400_000;
    let into_day = hosts[0].clock.now().ms().rem_euclid(DAY_MS);
    let by = (DAY_MS / 2 - into_day).rem_euclid(DAY_MS);
    for host in hosts {
        host.clock
            .advance(Duration::from_millis(u64::try_from(by).unwrap()));
    }
}

/// One POST of [`at_once`]: the host, the path, the bearer (none for a
/// body naming its token) and the JSON body.
type Post<'a> = (&'a TestApp, &'static str, Option<String>, Value);

/// Sends `posts` at once, released together by a barrier; the answers'
/// statuses and bodies, in order.
async fn at_once(posts: Vec<Post<'_>>) -> Vec<(StatusCode, Value)> {
    let barrier = Arc::new(tokio::sync::Barrier::new(posts.len()));
    let mut tasks = Vec::new();
    for (host, path, bearer, body) in posts {
        let mut request = host.client.post(host.url(path)).json(&body);
        if let Some(bearer) = bearer {
            request = request.bearer_auth(bearer);
        }
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let response = request.send().await.unwrap();
            let status = response.status();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }));
    }
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    answers
}

/// The answers of `answers` with `status`; panics on a status neither
/// `ok` nor a problem with `code`.
fn tally(
    answers: &[(StatusCode, Value)],
    ok: StatusCode,
    refused: StatusCode,
    code: &str,
) -> usize {
    let mut passed = 0;
    for (status, body) in answers {
        if *status == ok {
            passed += 1;
        } else {
            assert_eq!((*status, text(&body["code"])), (refused, code), "{body}");
        }
    }
    passed
}

/// An organisation's `records_per_day` is exact across hosts: 120 writes
/// at once over three hosts against a quota of 50 record exactly 50 and
/// refuse 70 with 429 `quota_exceeded`; the next UTC day writes again.
/// Whatever replaces the organisation's lock must keep this (plan
/// write-path-at-scale §1.7).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn records_per_day_is_exact_across_hosts() {
    needs_postgres();
    let hosts = three_hosts().await;
    to_noon(&hosts);
    let (org, owner) = hosts[0].org("counted").await;
    expect_json(
        hosts[1]
            .send(
                reqwest::Method::PATCH,
                &format!("/v1/orgs/{org}"),
                &hosts[1].admin_key,
                Some(&json!({"quotas": {"records_per_day": 50}})),
            )
            .await,
        StatusCode::OK,
    )
    .await;
    let issue = json!({"developer_email": "dev@example.com", "agent_id": "bot",
                       "resources": ["crm:*"], "actions": ["read"]});
    let token = expect_json(
        hosts[2].post_auth("/v1/vat/issue/l1", &owner, &issue).await,
        StatusCode::CREATED,
    )
    .await;
    let jti = text(&token["jti"]).to_owned();
    let calls = (0..120)
        .map(|i| {
            let body = json!({"vat_jti": jti, "action": "read",
                              "resource": format!("crm:{i}"), "result": "success"});
            (&hosts[i % 3], "/v1/vat/record/action", None, body)
        })
        .collect();
    let answers = at_once(calls).await;
    let recorded = tally(
        &answers,
        StatusCode::CREATED,
        StatusCode::TOO_MANY_REQUESTS,
        "quota_exceeded",
    );
    assert_eq!(recorded, 50);
    let listed = expect_json(
        hosts[0]
            .get_auth(&format!("/v1/vat/aar?vat_jti={jti}&limit=100"), &owner)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(listed["records"].as_array().unwrap().len(), 50);
    // The next UTC day: a fresh token (the first has expired) writes again
    // on every host.
    for host in &hosts {
        host.clock.advance(Duration::from_secs(86_400));
    }
    let token = expect_json(
        hosts[2].post_auth("/v1/vat/issue/l1", &owner, &issue).await,
        StatusCode::CREATED,
    )
    .await;
    for host in &hosts {
        expect_json(
            host.act(text(&token["jti"]), "read", "crm:next-day", "success")
                .await,
            StatusCode::CREATED,
        )
        .await;
    }
    stop_all(hosts).await;
}

/// `tokens_outstanding` is exact across hosts: 30 issues at once over
/// three hosts against a quota of 10 issue exactly 10.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tokens_outstanding_is_exact_across_hosts() {
    needs_postgres();
    let hosts = three_hosts().await;
    let (org, owner) = hosts[0].org("capped").await;
    expect_json(
        hosts[1]
            .send(
                reqwest::Method::PATCH,
                &format!("/v1/orgs/{org}"),
                &hosts[1].admin_key,
                Some(&json!({"quotas": {"tokens_outstanding": 10}})),
            )
            .await,
        StatusCode::OK,
    )
    .await;
    let calls = (0..30)
        .map(|i| {
            let body = json!({"developer_email": "dev@example.com", "agent_id": format!("bot-{i}"),
                              "resources": ["crm:*"], "actions": ["read"]});
            (&hosts[i % 3], "/v1/vat/issue/l1", Some(owner.clone()), body)
        })
        .collect();
    let answers = at_once(calls).await;
    let issued = tally(
        &answers,
        StatusCode::CREATED,
        StatusCode::TOO_MANY_REQUESTS,
        "quota_exceeded",
    );
    assert_eq!(issued, 10);
    stop_all(hosts).await;
}

/// DESIGN §14 across hosts: two humans issuing for one new agent id at
/// once, on two hosts, make one owner; the other is refused
/// `agent_not_yours` — twenty times over.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agent_is_registered_once_across_hosts() {
    needs_postgres();
    let hosts = three_hosts().await;
    let (_, owner) = hosts[0].org("registry").await;
    let humans = [
        (
            hosts[0]
                .key(&owner, "developer", Some("ann@example.com"))
                .await,
            "ann@example.com",
        ),
        (
            hosts[0]
                .key(&owner, "developer", Some("bob@example.com"))
                .await,
            "bob@example.com",
        ),
    ];
    for trial in 0..20 {
        let agent = format!("fresh-{trial}");
        let calls = humans
            .iter()
            .enumerate()
            .map(|(n, (key, email))| {
                let body = json!({"developer_email": email, "agent_id": agent,
                                  "resources": ["crm:*"], "actions": ["read"]});
                (
                    &hosts[(trial + n) % 3],
                    "/v1/vat/issue/l1",
                    Some(key.clone()),
                    body,
                )
            })
            .collect();
        let answers = at_once(calls).await;
        let issued = tally(
            &answers,
            StatusCode::CREATED,
            StatusCode::FORBIDDEN,
            "agent_not_yours",
        );
        assert_eq!(issued, 1, "trial {trial}: {answers:?}");
    }
    stop_all(hosts).await;
}

/// A record's proof exists the moment its write is acknowledged, on every
/// host: each write is proven at once by a host that did not make it, and
/// the proof verifies offline against the keys that host publishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_proof_exists_once_acknowledged_on_every_host() {
    needs_postgres();
    let hosts = three_hosts().await;
    let root = hosts[0].root("bot", &["crm:*"], &["read"]).await;
    let verifiers = crate::log::verifiers(&hosts[1]).await;
    for i in 0..12 {
        let (writer, prover) = (&hosts[i % 3], &hosts[(i + 1) % 3]);
        let written = expect_json(
            writer
                .act(text(&root["jti"]), "read", &format!("crm:{i}"), "success")
                .await,
            StatusCode::CREATED,
        )
        .await;
        let proof = expect_json(
            prover
                .get_auth(
                    &format!("/v1/vat/aar/{}/proof", text(&written["aar_id"])),
                    &prover.admin_key,
                )
                .await,
            StatusCode::OK,
        )
        .await;
        let origin = text(&proof["origin"]);
        let events = proof["events"].as_array().unwrap();
        assert_eq!(events.len(), 1, "{proof}");
        let leaf = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            text(&events[0]["leaf"]),
        )
        .unwrap();
        mandate_core::tlog::verify_tlog_proof(
            text(&events[0]["proof"]),
            &leaf,
            Some(origin),
            &verifiers,
        )
        .unwrap();
    }
    stop_all(hosts).await;
}

/// A host's integrator never waits for another's integration: with the
/// log's integration row held by another transaction (as while a host
/// integrates), a host's writes find its integrator going on without it —
/// no backend waits for the row — and once the row is free the host
/// integrates every committed leaf by itself. Before, each host's
/// integrator queued for the row after every local commit, holding a
/// connection of its `proofs` lane (DPoP proofs' lane) meanwhile, and
/// three hosts through the 0.5 ms proxy sent more round trips integrating
/// than writing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_integrator_skips_an_integration_in_progress_and_catches_up() {
    needs_postgres();
    let hosts = three_hosts().await;
    let root = hosts[0].root("bot", &["crm:*"], &["read"]).await;
    let sizes = |host: &TestApp| -> (u64, u64) {
        host.with_database(|conn| mandate_host::store::log::sizes(conn).unwrap())
    };
    let (release, holder) = hold_rows(
        &hosts[0],
        "SELECT size FROM log_integration WHERE id = 1 FOR UPDATE",
    );
    let (before, _) = sizes(&hosts[0]);
    for i in 0..3 {
        expect_json(
            hosts[0]
                .act(text(&root["jti"]), "read", &format!("crm:{i}"), "success")
                .await,
            StatusCode::CREATED,
        )
        .await;
    }
    // The integrators run 250 ms after a local commit and every second.
    let watched = Instant::now();
    while watched.elapsed() < Duration::from_millis(1500) {
        let waiting: i64 = hosts[0].with_database(|conn| {
            conn.query_row(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
                 AND wait_event_type = 'Lock' AND query LIKE '%log_integration%'",
                [],
                |row| row.get(0),
            )
            .unwrap()
        });
        assert_eq!(waiting, 0, "an integrator waits for another's integration");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    release.send(()).unwrap();
    holder.join().unwrap();
    let (committed, integrated) = once(Duration::from_secs(10), || {
        let (committed, integrated) = sizes(&hosts[0]);
        (integrated == committed).then_some((committed, integrated))
    })
    .await;
    assert!(committed >= before + 3, "{before} → {committed}");
    assert_eq!(integrated, committed);
    stop_all(hosts).await;
}

/// A group between its round trips holds nothing every host needs: host
/// 1's write waits mid-group for its organisation's row (a test
/// connection holds it), and host 2's write of another organisation is
/// answered meanwhile — the log's state row, which hands out leaf indexes
/// and event `seq`, is taken only in a group's tail (plan
/// write-path-at-scale §1.5); before, every group took it first and held
/// it to its commit, so every host waited behind host 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_group_between_round_trips_holds_no_log_state() {
    needs_postgres();
    let hosts = three_hosts().await;
    let (_, owner) = hosts[0].org("second").await;
    let free = hosts[0].root("free", &["crm:*"], &["read"]).await;
    let held = expect_json(
        hosts[0]
            .post_auth(
                "/v1/vat/issue/l1",
                &owner,
                &json!({"developer_email": "dev@example.com", "agent_id": "held",
                        "resources": ["crm:*"], "actions": ["read"]}),
            )
            .await,
        StatusCode::CREATED,
    )
    .await;
    // The second organisation's key, held exclusive: host 1's write of it
    // waits for it mid-group.
    let number: i64 = hosts[0].with_database(|conn| {
        conn.query_row("SELECT max(num) FROM orgs", [], |row| row.get(0))
            .unwrap()
    });
    let key = mandate_host::store::locks::org(mandate_host::store::orgs::Org::from_number(number));
    held_stops_one_write_and_no_others(
        &hosts,
        format!("SELECT pg_advisory_xact_lock({key})"),
        text(&held["jti"]),
        text(&free["jti"]),
        "a write of another organisation waited behind a group between round trips",
    )
    .await;
    stop_all(hosts).await;
}

/// The issue's multi-host suite: three hosts and two organisations writing
/// at once, and every guarantee of DESIGN §9 holding meanwhile — budgeted
/// chains spent from every host never overspent, ratings raced from every
/// host have one winner, a revocation on one host refused by the others'
/// next call and no write any host acknowledged committed after it, every
/// acknowledged write stored once, the log auditing clean, and a record
/// proven by a host that did not write it — with a fourth host, a process
/// writing both organisations' records, killed (`kill -9`) mid-run.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_hosts_two_organisations_write_at_once_and_every_guarantee_holds() {
    needs_postgres();
    let hosts = three_hosts().await;
    let (_, owner) = hosts[0].org("second").await;
    let issuers = [hosts[0].admin_key.clone(), owner];
    let mut roots = Vec::new();
    for issuer in &issuers {
        roots.push(
            expect_json(
                hosts[1]
                    .post_auth(
                        "/v1/vat/issue/l1",
                        issuer,
                        &json!({"developer_email": "dev@example.com", "agent_id": "writer",
                                "resources": ["crm:*"], "actions": ["read"]}),
                    )
                    .await,
                StatusCode::CREATED,
            )
            .await,
        );
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for (n, host) in hosts.iter().enumerate() {
        for (org, root) in roots.iter().enumerate() {
            let (client, url, jti, stop) = (
                host.client.clone(),
                host.url("/v1/vat/record/action"),
                text(&root["jti"]).to_owned(),
                stop.clone(),
            );
            writers.push(tokio::spawn(async move {
                let mut ids = Vec::new();
                for i in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let response = client
                        .post(&url)
                        .json(&json!({"vat_jti": jti, "action": "read",
                                      "resource": format!("crm:{n}-{i}"), "result": "success"}))
                        .send()
                        .await
                        .unwrap();
                    if response.status() == StatusCode::FORBIDDEN {
                        let body: Value = response.json().await.unwrap();
                        assert_eq!(body["code"], "token_inactive", "{body}");
                        break;
                    }
                    let body: Value = expect_json(response, StatusCode::CREATED).await;
                    ids.push(text(&body["aar_id"]).to_owned());
                }
                (org, ids)
            }));
        }
    }
    // A fourth host, a process of its own, writes both organisations'
    // records too, and is killed (`kill -9`) mid-run: what it acknowledged
    // is kept, and the group it was writing leaves nothing behind.
    let fourth = tempfile::tempdir().unwrap();
    share_database(hosts[0].dir.as_ref().unwrap().path(), fourth.path());
    let victim = Server::start(fourth.path(), &config_without_limits(fourth.path()));
    let mut victims = Vec::new();
    let victim_acks = Arc::new(AtomicU64::new(0));
    for (org, root) in roots.iter().enumerate() {
        let (client, url, jti, acks) = (
            victim.client.clone(),
            format!("{}/v1/vat/record/action", victim.base),
            text(&root["jti"]).to_owned(),
            victim_acks.clone(),
        );
        victims.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in 0.. {
                let Ok(response) = client
                    .post(&url)
                    .json(&json!({"vat_jti": jti, "action": "read",
                                  "resource": format!("crm:killed-{i}"), "result": "success"}))
                    .send()
                    .await
                else {
                    break;
                };
                if response.status() != StatusCode::CREATED {
                    continue;
                }
                let Ok(body) = response.json::<Value>().await else {
                    break;
                };
                ids.push(text(&body["aar_id"]).to_owned());
                acks.fetch_add(1, Ordering::SeqCst);
            }
            (org, ids)
        }));
    }
    let all: Vec<&TestApp> = hosts.iter().collect();
    let mut victim = Some(victim);
    for trial in 0..3 {
        let ((first, _), (second, _)) = tokio::join!(
            spenders_race_in(&all, &issuers[0], 24, trial),
            spenders_race_in(&all, &issuers[1], 24, trial),
        );
        assert_ne!(first, second);
        if let Some(victim) = victim.take() {
            // Once the fourth host acknowledged some.
            once(Duration::from_secs(60), || {
                (victim_acks.load(Ordering::SeqCst) >= 4).then_some(())
            })
            .await;
            tokio::time::sleep(Duration::from_millis(random_below(200))).await;
            victim.kill();
        }
        tokio::join!(
            ratings_race_by(&all, &roots[0], &issuers[0], trial),
            ratings_race_by(&all, &roots[1], &issuers[1], trial + 1),
        );
    }
    let mut killed: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    for writer in victims {
        let (org, written) = writer.await.unwrap();
        killed[org].extend(written);
    }
    // The first organisation's writer revoked on the third host: refused
    // by the other two at once, while the second organisation's writes go
    // on.
    let revoked = text(&roots[0]["jti"]).to_owned();
    revoked_everywhere(&hosts[2], &hosts[..2], &revoked, &[&roots[0]]).await;
    stop.store(true, Ordering::SeqCst);
    let mut ids: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    for writer in writers {
        let (org, written) = writer.await.unwrap();
        ids[org].extend(written);
    }
    assert!(
        ids.iter().all(|written| written.len() >= 3),
        "the writers never got going: {} and {}",
        ids[0].len(),
        ids[1].len()
    );
    let acknowledged: Vec<String> = [ids.concat(), killed.concat()].concat();
    let first: Vec<String> = [ids[0].clone(), killed[0].clone()].concat();
    let (stored, revoked_at, latest, report) = hosts[0].with_database(move |conn| {
        let mut stored = 0;
        for id in &acknowledged {
            let count: i64 = conn
                .query_row(
                    "SELECT count(*) FROM records WHERE aar_id = ?1",
                    [id.as_str()],
                    |row| row.get(0),
                )
                .unwrap();
            stored += count;
        }
        let revoked_at: i64 = conn
            .query_row(
                "SELECT log_revoked FROM tokens WHERE jti = ?1",
                [revoked.as_str()],
                |row| row.get(0),
            )
            .unwrap();
        let mut latest = i64::MIN;
        for id in &first {
            let leaf: i64 = conn
                .query_row(
                    "SELECT log_created FROM records WHERE aar_id = ?1",
                    [id.as_str()],
                    |row| row.get(0),
                )
                .unwrap();
            latest = latest.max(leaf);
        }
        let origin = mandate_host::recordlog::stored_origin(conn)
            .unwrap()
            .unwrap();
        let report = mandate_host::recordlog::audit::verify(conn, &origin).unwrap();
        (stored, revoked_at, latest, report)
    });
    assert_eq!(
        usize::try_from(stored).unwrap(),
        ids[0].len() + ids[1].len() + killed[0].len() + killed[1].len()
    );
    assert!(
        latest < revoked_at,
        "an acknowledged record's leaf {latest} follows the revocation's {revoked_at}"
    );
    assert_eq!(report.findings, [], "{}", report.summary());
    // Written on one host, proven by another.
    for (n, id) in [&ids[0][0], &ids[1][0]].into_iter().enumerate() {
        let prover = &hosts[2 - n];
        let proof = expect_json(
            prover
                .get_auth(&format!("/v1/vat/aar/{id}/proof"), &issuers[n])
                .await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(proof["events"].as_array().unwrap().len(), 1, "{proof}");
    }
    stop_all(hosts).await;
}

/// With what `lock` locks held by a test connection, a record of
/// `waiting` on the first host waits for it, while a record of `free` on
/// each other host is answered (`otherwise` says what a wait there would
/// mean); once released, the first host's record is answered too.
async fn held_stops_one_write_and_no_others(
    hosts: &[TestApp],
    lock: String,
    waiting: &str,
    free: &str,
    otherwise: &str,
) {
    let (release, holder) = hold_rows(&hosts[0], lock);
    let waiting = {
        let (client, url, jti) = (
            hosts[0].client.clone(),
            hosts[0].url("/v1/vat/record/action"),
            waiting.to_owned(),
        );
        tokio::spawn(async move {
            client
                .post(url)
                .json(
                    &json!({"vat_jti": jti, "action": "read", "resource": "crm:held",
                              "result": "success"}),
                )
                .send()
                .await
                .unwrap()
                .status()
        })
    };
    let started = Instant::now();
    while waiting_for_locks(&hosts[0]) < 1 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the first host's write never waited"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for (i, host) in hosts[1..].iter().enumerate() {
        // Well within the writer's lock timeout (10 s), after which the
        // first host's group would give up and free whatever it held.
        let answered = tokio::time::timeout(
            Duration::from_secs(5),
            host.act(free, "read", &format!("crm:{i}"), "success"),
        )
        .await
        .expect(otherwise);
        expect_json(answered, StatusCode::CREATED).await;
    }
    assert!(
        !waiting.is_finished(),
        "the first host's write did not wait"
    );
    release.send(()).unwrap();
    holder.join().unwrap();
    assert_eq!(waiting.await.unwrap(), StatusCode::CREATED);
}

/// Holds what `select` locks (rows `FOR UPDATE`, an advisory key) in a
/// transaction of a connection of its own, until the answer's sender is
/// dropped or sent to; returns once they are held.
fn hold_rows(
    host: &TestApp,
    select: impl Into<String>,
) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let dir = host.dir.as_ref().unwrap().path().to_owned();
    let select = select.into();
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        crate::helpers::with_database(&dir, move |conn| {
            conn.execute_batch("BEGIN").unwrap();
            conn.execute_batch(&select).unwrap();
            held_tx.send(()).unwrap();
            let _ = release_rx.recv();
            conn.execute_batch("ROLLBACK").unwrap();
        });
    });
    held_rx.recv().unwrap();
    (release_tx, holder)
}

/// How many backends of the database wait for a lock.
fn waiting_for_locks(host: &TestApp) -> i64 {
    host.with_database(|conn| {
        conn.query_row(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
            [],
            |row| row.get(0),
        )
        .unwrap()
    })
}

/// A commit held back on one host keeps every later write behind it in
/// every order users read by: host 1's write is stopped in its commit (a
/// test connection holds its agent's counter rows), hosts 2 and 3 write
/// meanwhile; once released, a stream opened on host 3 before it all gets
/// every event once with host 1's first and in `seq` order, resuming after
/// each one on another host gives exactly the rest, and newest-first
/// record pages return every record once. What a sequencer handing out
/// numbers at commit must keep (plan write-path-at-scale §1.5, §1.6).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_commit_held_back_keeps_every_later_write_behind_it() {
    needs_postgres();
    let hosts = three_hosts().await;
    let held = hosts[0].root("held", &["crm:*"], &["read"]).await;
    let free = hosts[0].root("free", &["crm:*"], &["read"]).await;
    // The held agent's counter rows exist: its first denial made them.
    let before = crate::events::deny(&hosts[0], text(&held["jti"])).await;
    let mut stream = crate::events::Stream::open(&hosts[2], &hosts[2].admin_key, None).await;
    let (release, holder) = hold_rows(
        &hosts[0],
        "SELECT 1 FROM agents WHERE agent_id = 'held' FOR UPDATE; \
         SELECT 1 FROM agent_days WHERE agent_id = 'held' FOR UPDATE",
    );
    let first = {
        let (host, jti) = (hosts[0].client.clone(), text(&held["jti"]).to_owned());
        let url = hosts[0].url("/v1/vat/record/action");
        tokio::spawn(async move {
            let response = host
                .post(url)
                .json(&json!({"vat_jti": jti, "action": "write", "resource": "crm:a", "result": "success"}))
                .send()
                .await
                .unwrap();
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["code"], "action_not_permitted", "{body}");
            text(&body["aar_id"]).to_owned()
        })
    };
    let started = Instant::now();
    while waiting_for_locks(&hosts[0]) < 1 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "host 1's write never waited"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let answered = Arc::new(AtomicU64::new(0));
    let mut later = Vec::new();
    for i in 0..8 {
        let host = &hosts[1 + i % 2];
        let (client, url, jti, answered) = (
            host.client.clone(),
            host.url("/v1/vat/record/action"),
            text(&free["jti"]).to_owned(),
            answered.clone(),
        );
        later.push(tokio::spawn(async move {
            let response = client
                .post(url)
                .json(&json!({"vat_jti": jti, "action": "write", "resource": format!("crm:{i}"), "result": "success"}))
                .send()
                .await
                .unwrap();
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["code"], "action_not_permitted", "{body}");
            answered.fetch_add(1, Ordering::SeqCst);
            text(&body["aar_id"]).to_owned()
        }));
    }
    // Hosts 2 and 3 answer meanwhile, or wait behind host 1 (today: the
    // log's state row, taken first by every group).
    let started = Instant::now();
    while answered.load(Ordering::SeqCst) < 8 && waiting_for_locks(&hosts[0]) < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the later writes neither answered nor waited"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    release.send(()).unwrap();
    holder.join().unwrap();
    let first = first.await.unwrap();
    let mut written = vec![first.clone()];
    for write in later {
        written.push(write.await.unwrap());
    }
    // The stream: each event once, host 1's first, in `seq` order.
    let mut events = Vec::new();
    for _ in 0..written.len() {
        events.push(stream.next(Duration::from_secs(30)).await.unwrap());
    }
    assert!(stream.next(Duration::from_millis(300)).await.is_none());
    let streamed: Vec<String> = events
        .iter()
        .map(|event| text(&crate::events::payload(event)["data"]["aar_id"]).to_owned())
        .collect();
    assert_eq!(streamed[0], first);
    let mut sorted = streamed.clone();
    sorted.sort();
    let mut expected = written.clone();
    expected.sort();
    assert_eq!(sorted, expected);
    let ids: Vec<String> = events.iter().map(|event| event.id.clone()).collect();
    let seqs: Vec<i64> = hosts[0].with_database(move |conn| {
        ids.iter()
            .map(|id| {
                conn.query_row(
                    "SELECT seq FROM events WHERE id = ?1",
                    [id.as_str()],
                    |row| row.get(0),
                )
                .unwrap()
            })
            .collect()
    });
    assert!(seqs.windows(2).all(|pair| pair[0] < pair[1]), "{seqs:?}");
    // Resumed after each event on another host: exactly the rest.
    for (n, event) in events.iter().enumerate() {
        let host = &hosts[n % 2];
        let mut resumed = crate::events::Stream::open(host, &host.admin_key, Some(&event.id)).await;
        for rest in &events[n + 1..] {
            let next = resumed.next(Duration::from_secs(30)).await.unwrap();
            assert_eq!(next.id, rest.id, "resumed after event {n}");
        }
        assert!(resumed.next(Duration::from_millis(200)).await.is_none());
    }
    // Newest-first pages of three: every record once.
    let mut paged = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(cursor) => format!("/v1/vat/aar?limit=3&cursor={cursor}"),
            None => "/v1/vat/aar?limit=3".to_owned(),
        };
        let page = expect_json(
            hosts[1].get_auth(&path, &hosts[1].admin_key).await,
            StatusCode::OK,
        )
        .await;
        for record in page["records"].as_array().unwrap() {
            paged.push(text(&record["aar_id"]).to_owned());
        }
        match page.get("next_cursor") {
            Some(next) => cursor = Some(text(next).to_owned()),
            None => break,
        }
    }
    let mut all = written;
    all.push(before);
    all.sort();
    paged.sort();
    assert_eq!(paged, all);
    stop_all(hosts).await;
}

/// A host whose clock runs behind another's numbers its records after
/// theirs with earlier times (`created_at` steps back along `seq`, within
/// `MAX_TIME_DISORDER_MS`): `since` and `until` still return exactly the
/// records created in range; and a host more than the bound behind is
/// refused (503) rather than step back further.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn time_filters_are_exact_with_disorder() {
    needs_postgres();
    let ahead = TestApp::spawn().await;
    let behind = ahead.another_host(|_| {}).await;
    let token = ahead.root("bot", &["crm:*"], &["read"]).await;
    let jti = text(&token["jti"]);
    ahead.clock.advance(Duration::from_millis(800));
    let mut ids = Vec::new();
    for (host, resource) in [(&ahead, "crm:first"), (&behind, "crm:second")] {
        let recorded = expect_json(
            host.act(jti, "read", resource, "success").await,
            StatusCode::CREATED,
        )
        .await;
        ids.push(text(&recorded["aar_id"]).to_owned());
    }
    let created = |record: Value| text(&record["created_at"]).to_owned();
    let mut times = Vec::new();
    for id in &ids {
        times.push(created(
            expect_json(
                ahead
                    .get_auth(&format!("/v1/vat/aar/{id}"), &ahead.admin_key)
                    .await,
                StatusCode::OK,
            )
            .await,
        ));
    }
    // The second record follows the first in `seq` and was created before.
    assert!(times[1] < times[0], "{times:?}");
    let listed = |query: String| {
        let (host, ids) = (&ahead, &ids);
        async move {
            let page = expect_json(
                host.get_auth(&format!("/v1/vat/aar?{query}"), &host.admin_key)
                    .await,
                StatusCode::OK,
            )
            .await;
            page["records"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| text(&r["aar_id"]).to_owned())
                .filter(|id| ids.contains(id))
                .collect::<Vec<_>>()
        }
    };
    let at = |time: &str| time.replace('+', "%2B");
    assert_eq!(
        listed(format!("since={}", at(&times[0]))).await,
        [ids[0].clone()]
    );
    assert_eq!(
        listed(format!("until={}", at(&times[0]))).await,
        [ids[1].clone()]
    );
    assert_eq!(
        listed(format!("since={}&until={}", at(&times[1]), at(&times[0]))).await,
        [ids[1].clone()]
    );
    assert_eq!(
        listed(format!("since={}", at(&times[1]))).await,
        [ids[1].clone(), ids[0].clone()]
    );
    // More than a second behind: refused, nothing stored.
    ahead.clock.advance(Duration::from_millis(1_500));
    expect_json(
        ahead.act(jti, "read", "crm:third", "success").await,
        StatusCode::CREATED,
    )
    .await;
    let refused = behind.act(jti, "read", "crm:fourth", "success").await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    stop_all(vec![ahead, behind]).await;
}

/// Writes of an organisation lock no row of `orgs`: with a test connection
/// holding the organisation's row, its records are written on every host.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_take_no_organisation_row_lock() {
    needs_postgres();
    let hosts = three_hosts().await;
    let token = hosts[0].root("bot", &["crm:*"], &["read"]).await;
    let (release, holder) = hold_rows(&hosts[0], "SELECT 1 FROM orgs WHERE num = 0 FOR UPDATE");
    for (i, host) in hosts.iter().enumerate() {
        let answered = tokio::time::timeout(
            Duration::from_secs(5),
            host.act(text(&token["jti"]), "read", &format!("crm:{i}"), "success"),
        )
        .await
        .expect("a write waited for its organisation's row");
        expect_json(answered, StatusCode::CREATED).await;
    }
    release.send(()).unwrap();
    holder.join().unwrap();
    stop_all(hosts).await;
}

/// A write sent with an `Idempotency-Key` takes its organisation's key as
/// it would without one: with a test connection holding the key shared,
/// idempotent records are written on every host (they share it); and one
/// key sent to three hosts at once acts once, every host answering the
/// same (the idempotency key's own lock).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idempotent_records_share_their_organisations_key_and_act_once() {
    needs_postgres();
    let hosts = three_hosts().await;
    let token = hosts[0].root("bot", &["crm:*"], &["read"]).await;
    let jti = text(&token["jti"]).to_owned();
    let send = |host: &TestApp, key: String, resource: String| {
        host.client
            .post(host.url("/v1/vat/record/action"))
            .header("Idempotency-Key", key)
            .json(
                &json!({"vat_jti": jti, "action": "read", "resource": resource,
                          "result": "success"}),
            )
            .send()
    };
    let org = mandate_host::store::locks::org(mandate_host::store::orgs::Org::from_number(0));
    let (release, holder) = hold_rows(
        &hosts[0],
        format!("SELECT pg_advisory_xact_lock_shared({org})"),
    );
    for (i, host) in hosts.iter().enumerate() {
        let answered = tokio::time::timeout(
            Duration::from_secs(5),
            send(host, format!("shared-{i}"), format!("crm:{i}")),
        )
        .await
        .expect("an idempotent record waited for its organisation's key");
        expect_json(answered.unwrap(), StatusCode::CREATED).await;
    }
    release.send(()).unwrap();
    holder.join().unwrap();
    for round in 0..4 {
        let barrier = Arc::new(tokio::sync::Barrier::new(hosts.len()));
        let sent: Vec<_> = hosts
            .iter()
            .map(|host| {
                let request = send(
                    host,
                    format!("at-once-{round}"),
                    format!("crm:once-{round}"),
                );
                let barrier = barrier.clone();
                tokio::spawn(async move {
                    barrier.wait().await;
                    expect_json(request.await.unwrap(), StatusCode::CREATED).await
                })
            })
            .collect();
        let mut answers = Vec::new();
        for task in sent {
            answers.push(task.await.unwrap());
        }
        assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");
        let listed = expect_json(
            hosts[1]
                .get_auth(
                    &format!("/v1/vat/aar?vat_jti={jti}&resource=crm:once-{round}"),
                    &hosts[1].admin_key,
                )
                .await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(listed["records"].as_array().unwrap().len(), 1, "{listed}");
    }
    stop_all(hosts).await;
}

/// A chain with a budget is spent by one host's group at a time, and only
/// it: with a test connection holding chain X's key, X's write waits, while
/// chain Y of the same organisation is spent on the other hosts; X's write
/// is answered once the key is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_held_chain_stops_its_writes_and_no_others() {
    needs_postgres();
    let hosts = three_hosts().await;
    let budgeted = |agent: &'static str| {
        let host = &hosts[0];
        async move {
            host.issue(
                json!({"developer_email": "dev@example.com", "agent_id": agent,
                              "resources": ["crm:*"], "actions": ["read"],
                              "constraints": {"max_actions": 100}}),
            )
            .await
        }
    };
    let x = budgeted("x").await;
    let y = budgeted("y").await;
    let root = mandate_core::Jti::parse(text(&x["jti"])).unwrap().hash();
    let key = mandate_host::store::locks::chain(root.as_str());
    held_stops_one_write_and_no_others(
        &hosts,
        format!("SELECT pg_advisory_xact_lock({key})"),
        text(&x["jti"]),
        text(&y["jti"]),
        "chain Y's write waited behind chain X's key",
    )
    .await;
    stop_all(hosts).await;
}

/// The writer's flight (`Connection::commit_flight`: a transaction's last
/// statements and its `COMMIT`, one round trip) reports a commit only when
/// PostgreSQL made one: a failed statement in the flight aborts the
/// transaction and the server answers its `COMMIT` with a rollback — the
/// flight fails with that statement's error and nothing is kept; after a
/// statement that failed before the flight no `COMMIT` is sent at all; a
/// sound flight commits, its `BEGIN` carried by the first statement.
#[tokio::test]
async fn a_flight_with_a_failed_statement_keeps_nothing() {
    use mandate_host::store::sql::{Error, Step, types::Value};
    needs_postgres();
    let app = TestApp::spawn().await;
    app.with_database(|conn| {
        conn.execute_batch("CREATE TABLE flight_probe (n BIGINT PRIMARY KEY)")
            .unwrap();
        let count = || -> i64 {
            conn.query_row("SELECT count(*) FROM flight_probe", [], |row| row.get(0))
                .unwrap()
        };
        let insert = "INSERT INTO flight_probe VALUES (?1)";
        let (one, two) = ([Value::Integer(1)], [Value::Integer(2)]);

        conn.begin().unwrap();
        conn.execute(insert, [1]).unwrap();
        let failed = conn.commit_flight(
            &[Step::Execute(insert, &two), Step::Execute(insert, &one)],
            &mut [],
        );
        assert!(matches!(failed, Err(Error::Postgres(_))), "{failed:?}");
        conn.execute_batch("ROLLBACK").unwrap();
        assert_eq!(count(), 0, "a flight whose statement failed kept nothing");

        conn.begin().unwrap();
        conn.execute(insert, [2]).unwrap();
        assert!(conn.execute(insert, [2]).is_err());
        let refused = conn.commit_flight(&[], &mut []);
        assert!(matches!(refused, Err(Error::RolledBack)), "{refused:?}");
        conn.execute_batch("ROLLBACK").unwrap();
        assert_eq!(count(), 0, "no COMMIT after a failed statement");

        conn.begin().unwrap();
        conn.commit_flight(
            &[Step::Execute(insert, &one), Step::Execute(insert, &two)],
            &mut [],
        )
        .unwrap();
        assert_eq!(count(), 2, "a sound flight commits");
        conn.execute_batch("DROP TABLE flight_probe").unwrap();
    });
    app.stop().await;
}

/// How many advisory keys the backend `pid` holds.
fn keys_held(conn: &mandate_host::store::sql::Connection, pid: i32) -> i64 {
    conn.query_row(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = ?1",
        [pid],
        |row| row.get(0),
    )
    .unwrap()
}

/// A commit's flight may begin the next transaction ahead, entering an
/// organisation shared (its key tried, its row and a standing read after):
/// a write that adopts it runs in it, holding the key from the flight on;
/// unadopted, the next statement lets it go first (its key released, what
/// it read never used), and a key another transaction holds is reported
/// not taken. What lets a busy writer's group cost one round trip.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_begun_ahead_is_adopted_or_let_go() {
    needs_postgres();
    let host = TestApp::spawn().await;
    host.root("bot", &["crm:*"], &["read"]).await;
    let dir = host.dir.as_ref().unwrap().path().to_owned();
    host.with_database(move |conn| {
        use mandate_host::store::orgs::{self, Org};
        use mandate_host::store::sql::{Step, types::Value};
        let number: i64 = conn
            .query_row("SELECT num FROM orgs ORDER BY num LIMIT 1", [], |row| {
                row.get(0)
            })
            .unwrap();
        let org = Org::from_number(number);
        let pid: i32 = conn
            .query_row("SELECT pg_backend_pid()", [], |row| row.get(0))
            .unwrap();
        let watcher = database_of(&dir).open_writer().unwrap();
        // The keys this connection's own backend holds.
        let own_keys = || -> i64 {
            conn.query_row(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()",
                [],
                |row| row.get(0),
            )
            .unwrap()
        };
        // Adopted: the key stays held into the statements after.
        conn.begin().unwrap();
        let entered = orgs::commit_entering(conn, &[], org, None)
            .unwrap()
            .expect("begun ahead");
        assert!(entered.taken);
        assert_eq!(entered.row.unwrap().org, org);
        assert_eq!(keys_held(&watcher, pid), 1, "the key is held ahead");
        conn.begin().unwrap();
        assert!(conn.adopt_ahead());
        assert!(!conn.adopt_ahead(), "adopted once");
        let own = own_keys();
        assert_eq!(own, 1, "the adopting statement runs in the transaction begun ahead");
        conn.commit_flight(&[], &mut []).unwrap();
        assert_eq!(keys_held(&watcher, pid), 0, "released at the commit");
        // Not adopted: let go before the next statement.
        conn.begin().unwrap();
        assert!(orgs::commit_entering(conn, &[], org, None).unwrap().is_some());
        conn.begin().unwrap();
        let own = own_keys();
        assert_eq!(own, 0, "an unadopted transaction is rolled back first");
        assert!(!conn.adopt_ahead(), "nothing left to adopt");
        conn.commit_flight(&[], &mut []).unwrap();
        // Another transaction holds the key: begun ahead, not taken.
        watcher.execute_batch("BEGIN").unwrap();
        watcher
            .query_row(
                "SELECT pg_advisory_xact_lock(?1)",
                [mandate_host::store::locks::org(org)],
                |_| Ok(()),
            )
            .unwrap();
        conn.begin().unwrap();
        let entered = orgs::commit_entering(conn, &[], org, None)
            .unwrap()
            .expect("begun ahead");
        assert!(!entered.taken, "the key is another's");
        watcher.execute_batch("ROLLBACK").unwrap();
        conn.begin().unwrap();
        conn.commit_flight(&[], &mut []).unwrap();
        // A failed commit: nothing begun ahead is left once the writer
        // rolls back.
        conn.begin().unwrap();
        let missing = [Value::Integer(1)];
        let failed = orgs::commit_entering(
            conn,
            &[Step::Execute("INSERT INTO no_such_table VALUES (?1)", &missing)],
            org,
            None,
        );
        assert!(failed.is_err(), "{failed:?}");
        conn.execute_batch("ROLLBACK").unwrap();
        assert!(!conn.adopt_ahead(), "nothing to adopt after a failed commit");
        assert_eq!(keys_held(&watcher, pid), 0, "no key held after the rollback");
        watcher.close().unwrap();
    });
    host.stop().await;
}

/// A busy writer begins the next group's transaction in the last one's
/// commit flight, but only while writes wait: once the writes stop, no
/// backend of the host is left in a transaction (an idle host holding its
/// organisation's key shared would keep every exclusive write of it —
/// issue, revoke, settings — waiting on every host), and every write the
/// burst was answered for is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_idle_writer_holds_no_transaction_begun_ahead() {
    needs_postgres();
    let host = TestApp::spawn().await;
    let root = host.root("bot", &["crm:*"], &["read"]).await;
    let jti = text(&root["jti"]).to_owned();
    // The organisation's key held while the burst queues: the first group
    // waits for it, the rest queue behind, and the first commit finds them.
    let number: i64 = host.with_database(|conn| {
        conn.query_row("SELECT num FROM orgs ORDER BY num LIMIT 1", [], |row| {
            row.get(0)
        })
        .unwrap()
    });
    let key = mandate_host::store::locks::org(mandate_host::store::orgs::Org::from_number(number));
    let (release, holder) = hold_rows(&host, format!("SELECT pg_advisory_xact_lock({key})"));
    let writes = futures_util::future::join_all((0..48).map(|i| {
        let (host, jti) = (&host, &jti);
        async move {
            host.act(jti, "read", &format!("crm:{i}"), "success")
                .await
                .status()
        }
    }));
    let released = async {
        once(Duration::from_secs(10), || {
            (waiting_for_locks(&host) > 0).then_some(())
        })
        .await;
        release.send(()).unwrap();
    };
    let (statuses, ()) = tokio::join!(writes, released);
    holder.join().unwrap();
    assert!(
        statuses.iter().all(|status| *status == StatusCode::CREATED),
        "{statuses:?}"
    );
    // The writer's last group found no write waiting: it began nothing
    // ahead, and the organisation's key is free at once. (A transaction
    // begun ahead and never adopted would hold it until the next group —
    // a timer's, seconds later.)
    let (classid, objid) = ((key >> 32) & 0xffff_ffff, key & 0xffff_ffff);
    let holders = || -> i64 {
        host.with_database(|conn| {
            conn.query_row(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
                 AND classid::bigint = ?1 AND objid::bigint = ?2 AND objsubid = 1",
                [classid, objid],
                |row| row.get(0),
            )
            .unwrap()
        })
    };
    once(Duration::from_secs(1), || (holders() == 0).then_some(())).await;
    let stored: i64 = host.with_database(|conn| {
        conn.query_row(
            "SELECT count(*) FROM records WHERE resource LIKE 'crm:%'",
            [],
            |row| row.get(0),
        )
        .unwrap()
    });
    assert_eq!(stored, 48);
    host.stop().await;
}
