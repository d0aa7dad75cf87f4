//! `TestApp`: a real server on port 0 with a fresh data folder, and small
//! request helpers.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mandate_host::AppState;
use mandate_host::clock::Clock;
use mandate_host::config::{Config, RateLimits};
use mandate_host::store::{Connection, Database};
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The database of the data folder `dir`: on the PostgreSQL pass its own
/// database there, else SQLite in the folder.
pub fn database_of(dir: &Path) -> Database {
    let mut config = Config::for_test(dir);
    config.database.url = test_database(dir);
    config.database().unwrap()
}

/// Runs `work` on a connection to the database of the data folder `dir`,
/// on a thread of its own: the PostgreSQL client blocks, and tests are
/// async tasks.
pub fn with_database<T: Send>(dir: &Path, work: impl FnOnce(&Connection) -> T + Send) -> T {
    let database = database_of(dir);
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                let conn = database.open_writer().unwrap();
                let answer = work(&conn);
                conn.close().unwrap();
                answer
            })
            .join()
            .unwrap()
    })
}

/// Makes the data folder `to` another host's of the database of the folder
/// `from` (the PostgreSQL pass): the same key file, admin key and database.
pub fn share_database(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for file in [
        mandate_host::secrets::KEY_FILE,
        mandate_host::setup::ADMIN_KEY_FILE,
        "test-database",
    ] {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
}

/// The PostgreSQL server the suite runs against (`MANDATE_TEST_POSTGRES`,
/// which `cargo xtask test` sets for the suite's second pass), or none for
/// the embedded SQLite.
pub fn postgres_server() -> Option<String> {
    std::env::var("MANDATE_TEST_POSTGRES")
        .ok()
        .filter(|url| !url.is_empty())
}

/// On the PostgreSQL pass, the URL of a database of the data folder `dir`'s
/// own: created on first use and named in the folder, so a restart on the
/// same folder finds it again.
pub fn test_database(dir: &Path) -> Option<String> {
    static CREATED: AtomicU64 = AtomicU64::new(0);
    let server = postgres_server()?;
    std::fs::create_dir_all(dir).unwrap();
    let named = dir.join("test-database");
    let name = match std::fs::read_to_string(&named) {
        Ok(name) => name,
        Err(_) => {
            let name = format!(
                "t_{}_{}",
                std::process::id(),
                CREATED.fetch_add(1, Ordering::Relaxed)
            );
            let (url, create) = (server.clone(), format!("CREATE DATABASE {name}"));
            let url = url.replace("sslmode=require", "sslmode=disable");
            // The synchronous client blocks: never on an async task.
            std::thread::spawn(move || {
                let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
                client.batch_execute(&create).unwrap();
            })
            .join()
            .unwrap();
            std::fs::write(&named, &name).unwrap();
            name
        }
    };
    let (path, query) = server.split_once('?').unwrap_or((&server, ""));
    let (server_root, _) = path.rsplit_once('/').unwrap();
    let query = if query.is_empty() {
        String::new()
    } else {
        format!("?{query}")
    };
    Some(format!("{server_root}/{name}{query}"))
}

/// Undoes schemas 12 (the OAuth tables), 13 (the witnessed log's), 14 and
/// 15, for
/// a test that sets a database back to an earlier version: the upgrade
/// adds them again.
pub const DROP_OAUTH_TABLES: &str = "DROP TABLE oauth_clients; DROP TABLE oauth_codes; \
     DROP TABLE oauth_grants; DROP TABLE oauth_refresh_tokens; \
     DROP TABLE log_witnesses; DROP TABLE log_cosignatures; DROP TABLE log_submitter; \
     DROP TABLE oauth_resources; ALTER TABLE records DROP COLUMN relay_jkt; \
     ALTER TABLE ledger_state DROP COLUMN next_log_idx;";

/// Undoes schemas 13, 14 and 15 (the witnessed log's tables, the
/// relay's, the log's kept size), for a test that sets a database back to
/// version 12.
pub const DROP_WITNESSED_TABLES: &str = "DROP TABLE log_witnesses; DROP TABLE log_cosignatures; DROP TABLE log_submitter; \
     DROP TABLE oauth_resources; ALTER TABLE records DROP COLUMN relay_jkt; \
     ALTER TABLE ledger_state DROP COLUMN next_log_idx;";

/// Sets the schema version a database says it has (SQLite's
/// `user_version`, PostgreSQL's `mandate_schema`), for a test that sets a
/// database back to an earlier version: the next start upgrades it.
/// Below 17 on PostgreSQL it undoes schema 17 (`org_seqs`); below 16,
/// schema 16 too (the integrated size's table, and PostgreSQL's status
/// index sequence).
pub fn set_schema_version(conn: &Connection, version: i64) {
    if version < 17 && conn.dialect() == mandate_host::store::sql::Dialect::Postgres {
        conn.execute_batch("DROP TABLE org_seqs").unwrap();
    }
    if version < 16 {
        conn.execute_batch("DROP TABLE log_integration").unwrap();
        if conn.dialect() == mandate_host::store::sql::Dialect::Postgres {
            conn.execute_batch("DROP SEQUENCE status_idx").unwrap();
        }
    }
    match conn.dialect() {
        mandate_host::store::sql::Dialect::Sqlite => conn
            .execute_batch(&format!("PRAGMA user_version = {version}"))
            .unwrap(),
        mandate_host::store::sql::Dialect::Postgres => conn
            .execute_batch(&format!("UPDATE mandate_schema SET version = {version}"))
            .unwrap(),
    }
}

/// Undoes schema 15 (the log's kept size), for a test that sets a
/// database back to version 14.
pub const DROP_LOG_SIZE: &str = "ALTER TABLE ledger_state DROP COLUMN next_log_idx;";

/// Undoes schemas 14 and 15 (the relay's table and record column, the
/// log's kept size), for a test that sets a database back to version 13.
pub const DROP_RELAY: &str = "DROP TABLE oauth_resources; ALTER TABLE records DROP COLUMN relay_jkt; \
     ALTER TABLE ledger_state DROP COLUMN next_log_idx;";

pub struct TestApp {
    pub base: String,
    pub admin_key: String,
    pub client: reqwest::Client,
    pub dir: Option<TempDir>,
    /// The server's clock: `clock.advance(…)` moves its time forward.
    pub clock: Clock,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<anyhow::Result<()>>>,
}

impl TestApp {
    /// A server with the test configuration (rate limits off).
    pub async fn spawn() -> TestApp {
        TestApp::spawn_with(|_| {}).await
    }

    /// A server whose configuration `edit` adjusts.
    pub async fn spawn_with(edit: impl FnOnce(&mut Config)) -> TestApp {
        TestApp::spawn_in(tempfile::tempdir().unwrap(), edit).await
    }

    /// A server on an existing data folder (a restart).
    pub async fn spawn_in(dir: TempDir, edit: impl FnOnce(&mut Config)) -> TestApp {
        TestApp::spawn_inspecting(dir, edit, |_| {}).await
    }

    /// A server on `dir` whose state `inspect` sees before it serves, to
    /// keep a part of it (keeping the state itself would hold the database
    /// open past `stop`).
    pub async fn spawn_inspecting(
        dir: TempDir,
        edit: impl FnOnce(&mut Config),
        inspect: impl FnOnce(&AppState),
    ) -> TestApp {
        mandate_host::install_tls_provider();
        // Bound first, so that `edit` sees the address (`config.listen`)
        // a configuration naming its own URL needs.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut config = Config::for_test(dir.path());
        config.listen = listener.local_addr().unwrap();
        config.database.url = test_database(dir.path());
        config.rate_limits = RateLimits::off();
        edit(&mut config);
        let clock = Clock::shifted();
        let (state, _) = AppState::open_with_clock(config, clock.clone()).unwrap();
        inspect(&state);
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (shutdown, stop) = oneshot::channel::<()>();
        let server = tokio::spawn(mandate_host::serve_until(listener, state, async move {
            let _ = stop.await;
        }));
        let admin_key = std::fs::read_to_string(dir.path().join("admin.key"))
            .unwrap()
            .trim()
            .to_owned();
        TestApp {
            base,
            admin_key,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            dir: Some(dir),
            clock,
            shutdown: Some(shutdown),
            server: Some(server),
        }
    }

    /// Another host on this server's database (the PostgreSQL pass): a
    /// data folder of its own holding the same key file and admin key, and
    /// naming the same database.
    pub async fn another_host(&self, edit: impl FnOnce(&mut Config)) -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        share_database(self.dir.as_ref().unwrap().path(), dir.path());
        TestApp::spawn_in(dir, edit).await
    }

    /// Runs `work` on a connection to the server's database (see
    /// [`with_database`]).
    pub fn with_database<T: Send>(&self, work: impl FnOnce(&Connection) -> T + Send) -> T {
        with_database(self.dir.as_ref().unwrap().path(), work)
    }

    /// Shuts the server down gracefully and hands back its data folder.
    pub async fn stop(mut self) -> TempDir {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(server) = self.server.take() {
            server.await.unwrap().unwrap();
        }
        self.dir.take().unwrap()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn post(&self, path: &str, body: &Value) -> Response {
        self.client
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .unwrap()
    }

    pub async fn post_auth(&self, path: &str, bearer: &str, body: &Value) -> Response {
        self.client
            .post(self.url(path))
            .bearer_auth(bearer)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    pub async fn get_auth(&self, path: &str, bearer: &str) -> Response {
        self.client
            .get(self.url(path))
            .bearer_auth(bearer)
            .send()
            .await
            .unwrap()
    }

    /// Sends `method` to `path` with an API key or token, and a JSON body
    /// when given.
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        bearer: &str,
        body: Option<&Value>,
    ) -> Response {
        let mut request = self
            .client
            .request(method, self.url(path))
            .bearer_auth(bearer);
        if let Some(body) = body {
            request = request.json(body);
        }
        request.send().await.unwrap()
    }

    /// Creates an organisation with the admin key; returns its id and its
    /// owner key.
    pub async fn org(&self, name: &str) -> (String, String) {
        let created = expect_json(
            self.post_auth("/v1/orgs", &self.admin_key, &json!({"name": name}))
                .await,
            StatusCode::CREATED,
        )
        .await;
        (
            text(&created["org"]["org_id"]).to_owned(),
            text(&created["owner_key"]["api_key"]).to_owned(),
        )
    }

    /// Creates a key with `role` (and `email`) in the organisation of
    /// `owner_key`; returns the key.
    pub async fn key(&self, owner_key: &str, role: &str, email: Option<&str>) -> String {
        let created = expect_json(
            self.post_auth(
                "/v1/keys",
                owner_key,
                &json!({"role": role, "email": email}),
            )
            .await,
            StatusCode::CREATED,
        )
        .await;
        text(&created["api_key"]).to_owned()
    }

    /// Issues a root token with the admin key; panics unless 201.
    pub async fn issue(&self, body: Value) -> Value {
        let response = self
            .post_auth("/v1/vat/issue/l1", &self.admin_key, &body)
            .await;
        expect_json(response, StatusCode::CREATED).await
    }

    /// A root token for `agent` over `resources` and `actions`.
    pub async fn root(&self, agent: &str, resources: &[&str], actions: &[&str]) -> Value {
        self.issue(json!({
            "developer_email": "dev@example.com",
            "agent_id": agent,
            "resources": resources,
            "actions": actions,
        }))
        .await
    }

    /// Records an action with a token's jti; returns the response.
    pub async fn act(&self, jti: &str, action: &str, resource: &str, result: &str) -> Response {
        self.post(
            "/v1/vat/record/action",
            &json!({"vat_jti": jti, "action": action, "resource": resource, "result": result}),
        )
        .await
    }

    /// Delegates from `parent`, an issued token, presented as Bearer;
    /// returns the response.
    pub async fn delegate(&self, parent: &Value, body: Value) -> Response {
        self.post_auth("/v1/vat/delegate", text(&parent["compact_jwt"]), &body)
            .await
    }
}

/// An agent's own key, for tokens bound to it (RFC 9449 DPoP).
pub struct Holder {
    pub key: mandate_core::SigningKey,
    secret: [u8; 32],
}

impl Holder {
    /// A holder with a fresh random key.
    pub fn new() -> Holder {
        use rand_core::RngCore as _;
        let mut secret = [0u8; 32];
        rand_core::OsRng.fill_bytes(&mut secret);
        Holder {
            key: mandate_core::SigningKey::from_secret(&secret),
            secret,
        }
    }

    /// The private key's 32 bytes, for hand-made proofs.
    pub fn secret(&self) -> [u8; 32] {
        self.secret
    }

    /// The public key as `holder_key` takes it.
    pub fn jwk(&self) -> Value {
        serde_json::to_value(self.key.holder_key().public_jwk()).unwrap()
    }

    /// A proof for one request with `token`, made `age` seconds ago.
    pub fn proof_aged(&self, method: &str, url: &str, token: &str, age: i64) -> String {
        self.proof_at(method, url, Some(token), mandate_host::clock::now_s() - age)
    }

    /// A proof for one request, with `token` (none for a token request,
    /// RFC 9449 §5), made at `now` (unix seconds).
    pub fn proof_at(&self, method: &str, url: &str, token: Option<&str>, now: i64) -> String {
        use rand_core::RngCore as _;
        let mut jti = [0u8; 16];
        rand_core::OsRng.fill_bytes(&mut jti);
        mandate_core::sign_proof(
            &self.key,
            &mandate_core::NewProof {
                method,
                url,
                access_token: token,
                now,
                jti_random: jti,
            },
        )
        .unwrap()
    }

    /// The RFC 7638 thumbprint of the public key.
    pub fn jkt(&self) -> String {
        self.key.holder_key().jkt().as_str().to_owned()
    }

    /// A fresh proof for one request with `token`.
    pub fn proof(&self, method: &str, url: &str, token: &str) -> String {
        self.proof_aged(method, url, token, 0)
    }
}

impl TestApp {
    /// A POST with a bound token (`Authorization: DPoP`) and a proof, if any.
    pub async fn post_dpop(
        &self,
        path: &str,
        token: &str,
        proof: Option<&str>,
        body: &Value,
    ) -> Response {
        let mut request = self
            .client
            .post(self.url(path))
            .header("authorization", format!("DPoP {token}"))
            .json(body);
        if let Some(proof) = proof {
            request = request.header("dpop", proof);
        }
        request.send().await.unwrap()
    }
}

/// Asserts the status and returns the JSON body.
pub async fn expect_json(response: Response, status: StatusCode) -> Value {
    let actual = response.status();
    let text = response.text().await.unwrap();
    assert_eq!(actual, status, "body: {text}");
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
}

/// Asserts a problem response with this status and code, titled from the
/// table of titles; returns its body.
pub async fn expect_problem(response: Response, status: StatusCode, code: &str) -> Value {
    let actual = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = response.text().await.unwrap();
    assert_eq!(actual, status, "body: {text}");
    assert_eq!(content_type, "application/problem+json", "body: {text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["code"], code, "body: {text}");
    assert_eq!(body["status"], status.as_u16());
    assert_eq!(body["type"], format!("urn:mandate:problem:{code}"));
    let title = mandate_host::error::title(code).unwrap_or_else(|| panic!("{code} has no title"));
    assert_eq!(body["title"], title, "body: {text}");
    assert!(body["detail"].as_str().is_some_and(|t| !t.is_empty()));
    body
}

pub fn text(value: &Value) -> &str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"))
}

/// The jti hash of `jti`: how every answer but the issue and delegate
/// responses names a token.
pub fn jth(jti: &str) -> String {
    mandate_core::Jti::parse(jti).unwrap().hash().to_string()
}
