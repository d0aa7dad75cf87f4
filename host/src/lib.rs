//! # mandate-host
//!
//! The Mandate server: the `/v1` API over durable SQLite. It is the only part
//! of Mandate with a clock, a socket, randomness or a database; every rule it
//! applies comes from `mandate-core`.
//!
//! [`setup::prepare`] opens (and on first start creates) a data folder;
//! [`app`] builds the router over an [`AppState`]; [`serve`] runs it until
//! SIGTERM or Ctrl-C, then lets in-flight requests finish and closes the
//! database.

pub mod api;
pub mod apikeys;
pub mod assurance;
pub mod client_documents;
pub mod clock;
pub mod config;
pub mod configdoc;
pub mod error;
pub mod events;
pub mod key_leases;
pub mod keyring;
pub mod ledger;
pub mod listen;
pub mod metrics;
pub mod model;
pub mod otel;
pub mod proofs;
pub mod queries;
pub mod random;
pub mod ratelimit;
pub mod recordlog;
pub mod secrets;
pub mod setup;
pub mod spans;
pub mod status;
pub mod store;
pub mod timers;
pub mod token_orgs;
pub mod transfer;
pub mod trust;
pub mod verified;
pub mod web;
pub mod webhooks;
pub mod witness;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

pub use api::app;
use assurance::Assurance;
use clock::Clock;
use config::Config;
use keyring::KeyRing;
use ledger::{Ledger, LedgerError, LogSetup};
use metrics::Metrics;
use proofs::SeenProofs;
use ratelimit::Limiters;
use recordlog::LogKeys;
use store::{Lanes, Store, StoreError};
use token_orgs::TokenOrgs;
use verified::VerifiedTokens;

/// Installs the TLS crypto provider (ring) that outgoing HTTPS uses; a
/// provider installed earlier wins. Call before building an HTTP client.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Everything a request handler may use, shared by all of them. Cloning it
/// (axum does, per request and per middleware) is one reference count.
#[derive(Debug, Clone)]
pub struct AppState(Arc<Shared>);

/// What [`AppState`] shares.
#[derive(Debug)]
pub struct Shared {
    pub config: Config,
    /// Where every request reads the time, once.
    pub clock: Clock,
    pub store: Store<Ledger>,
    pub keys: KeyRing,
    /// The 32-byte secret human references are keyed with.
    pub human_secret: [u8; 32],
    /// The key-encryption key, to open signing keys read on refresh.
    pub kek: Arc<secrets::Kek>,
    /// DPoP proofs accepted and still live, shared by every worker.
    pub proofs: SeenProofs,
    /// Tokens already verified against the current keys.
    pub verified: VerifiedTokens,
    /// API keys found active lately, answered from memory for a lease.
    pub key_leases: key_leases::KeyLeases,
    /// The organisation of each token agents act with.
    pub token_orgs: TokenOrgs,
    pub limiters: Limiters,
    pub metrics: Arc<Metrics>,
    /// OIDC issuers (L2) and identity verifiers (L3).
    pub assurance: Assurance,
    /// The OAuth clients' metadata documents, fetched and kept.
    pub client_documents: client_documents::ClientDocuments,
    /// The record log's name (`origin`) and the keys that sign its
    /// checkpoints.
    pub log_origin: String,
    pub log_keys: Arc<LogKeys>,
    /// Token status lists signed lately, served again until they are due.
    pub status_lists: status::SignedLists,
    /// The OpenTelemetry exporter of action records, when `[otel] endpoint`
    /// is set; handlers call `record` after a record's write has committed.
    pub telemetry: Option<otel::Telemetry>,
    /// The tasks handing finished records' spans to the exporter: waited
    /// for at shutdown, before the exporter sends its last batch.
    pub span_tasks: tokio_util::task::TaskTracker,
    /// Counts the writes this process committed: approval waits and event
    /// streams wake on it to read again (and poll besides, for what other
    /// hosts commit).
    pub committed: tokio::sync::watch::Sender<u64>,
    /// The event streams each organisation holds open.
    pub streams: api::OpenStreams,
    /// Each organisation's trust scores in force (`crate::trust`), shared
    /// with the ledger, which judges `min_trust` against them.
    pub trust: Arc<trust::Board>,
    /// `[records] redact_args`, parsed: the selectors whose values records
    /// store as `"[redacted]"`.
    pub redact_args: Vec<mandate_core::policy::Selector>,
    /// The address the server listens on, once it does (`serve_until`): the
    /// base of signed URLs when `public_url` is not set.
    pub listening: std::sync::OnceLock<SocketAddr>,
    /// Cancelled when the server begins to stop: event streams end and
    /// approval waits answer at once, so graceful shutdown is not held
    /// open by a client that never hangs up.
    pub stopping: tokio_util::sync::CancellationToken,
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl AppState {
    /// Opens the data folder of `config` (creating it on first start) and
    /// starts the writer, on the system clock. Returns the admin key when it
    /// was just created.
    pub fn open(config: Config) -> anyhow::Result<(AppState, Option<String>)> {
        AppState::open_with_clock(config, Clock::system())
    }

    /// [`AppState::open`] on `clock` (a test's shifted clock).
    pub fn open_with_clock(
        config: Config,
        clock: Clock,
    ) -> anyhow::Result<(AppState, Option<String>)> {
        config.check()?;
        let assurance = Assurance::load(&config)?;
        let client_documents =
            client_documents::ClientDocuments::new(&config.oauth.client_documents)?;
        let redact_args = config.records.redactions()?;
        let telemetry = otel::Telemetry::start(&config.otel)?;
        let database = config.database()?;
        let metrics = Arc::new(Metrics::new());
        let lanes = Lanes {
            readers: config.readers,
            budget: config.query_budget(),
            max_batch: config.max_batch,
        };
        let trust = Arc::new(trust::Board::default());
        let (prepared, store) = store::off_runtime(|| {
            let prepared = setup::prepare(&config, &database, clock.now())?;
            let setup = LogSetup {
                enabled: config.log.enabled,
                origin: prepared.log.origin.clone(),
                keys: prepared.log.keys.clone(),
            };
            let events = config.events.enabled;
            let approval_ttl_ms = config.approvals.ttl_ms();
            let keep_args = config.records.keep_args;
            let board = trust.clone();
            let store = Store::open(&database, lanes, metrics.clone(), move |conn| {
                Ledger::new(conn, setup)
                    .with_events(events)
                    .with_approval_ttl(approval_ttl_ms)
                    .with_keep_args(keep_args)
                    .with_trust(board)
            })?;
            Ok((prepared, store))
        })?;
        let limiters = Limiters::new(&config.rate_limits, config.trusted_proxies.clone());
        let state = AppState(Arc::new(Shared {
            config,
            clock,
            store,
            keys: KeyRing::new(prepared.ring),
            human_secret: prepared.human_secret,
            kek: prepared.kek,
            proofs: SeenProofs::new(proofs::CAPACITY),
            verified: VerifiedTokens::new(verified::CAPACITY),
            key_leases: key_leases::KeyLeases::default(),
            token_orgs: TokenOrgs::default(),
            limiters,
            metrics,
            assurance,
            client_documents,
            log_origin: prepared.log.origin,
            log_keys: prepared.log.keys,
            status_lists: status::SignedLists::default(),
            telemetry,
            span_tasks: tokio_util::task::TaskTracker::new(),
            committed: tokio::sync::watch::Sender::new(0),
            streams: api::OpenStreams::default(),
            trust,
            redact_args,
            listening: std::sync::OnceLock::new(),
            stopping: tokio_util::sync::CancellationToken::new(),
        }));
        Ok((state, prepared.new_admin_key))
    }

    /// Runs `work` in the ledger; answers once its group has committed.
    /// When a token's signing key turns out to have been revoked (by the
    /// CLI, since the key ring was last read), the keys are read again at
    /// once, so the retry the answer asks for is signed by the new key.
    pub async fn write<T: Send + 'static>(
        &self,
        work: impl FnMut(&mut Ledger) -> Result<T, LedgerError> + Send + 'static,
    ) -> Result<T, LedgerError> {
        let outcome = self.store.write(work).await;
        if outcome.is_ok() {
            self.committed
                .send_modify(|count| *count = count.wrapping_add(1));
        }
        if matches!(outcome, Err(LedgerError::SigningKeyRevoked))
            && let Err(error) = self.refresh_keys().await
        {
            tracing::warn!(%error, "reading the signing keys after a revocation failed");
        }
        outcome
    }

    /// Re-reads the signing keys from the database (after a rotation by the
    /// CLI, or when a token names an unknown kid).
    pub async fn refresh_keys(&self) -> Result<(), StoreError> {
        let kek = self.kek.clone();
        let now = self.clock.now();
        let ring = self
            .store
            .read_keys(move |conn| keyring::load(conn, &kek, now))
            .await?;
        self.keys.replace(ring);
        Ok(())
    }

    /// Re-reads the keys that sign the record log's checkpoints (after a
    /// rotation or retirement by the CLI).
    pub async fn refresh_log_keys(&self) -> Result<(), StoreError> {
        let kek = self.kek.clone();
        let origin = self.log_origin.clone();
        let signers = self
            .store
            .read_keys(move |conn| recordlog::keys::load(conn, &kek, &origin))
            .await?;
        self.log_keys.replace(signers);
        Ok(())
    }

    /// Re-reads the signing keys because a token names a kid the ring does
    /// not know, at most once a second however many such tokens arrive: a
    /// flood of forged kids costs one database read a second, not one each.
    /// When it is not yet due, the ring stays as it is (another request may
    /// have just refreshed it).
    pub async fn refresh_keys_for_unknown_kid(&self) -> Result<(), StoreError> {
        if self
            .keys
            .may_refresh_for_unknown_kid(std::time::Instant::now())
        {
            self.refresh_keys().await?;
        }
        Ok(())
    }
}

/// How often the server re-reads signing keys and forgets idle limiter keys.
const HOUSEKEEPING_INTERVAL: Duration = Duration::from_secs(10);
/// Every how many housekeeping rounds expired idempotency keys are deleted.
const IDEMPOTENCY_SWEEP_ROUNDS: u32 = 60;

async fn housekeeping(state: AppState) {
    let mut ticks = tokio::time::interval(HOUSEKEEPING_INTERVAL);
    ticks.tick().await;
    for round in 1u32.. {
        ticks.tick().await;
        if let Err(error) = state.refresh_keys().await {
            tracing::warn!(%error, "refreshing signing keys failed");
        }
        if let Err(error) = state.refresh_log_keys().await {
            tracing::warn!(%error, "refreshing the record log's keys failed");
        }
        state.limiters.forget_idle();
        let now = state.clock.now();
        state.proofs.forget_lapsed(now.s());
        if let Err(error) = state.store.forget_lapsed_proofs(now.s()).await {
            tracing::warn!(%error, "forgetting lapsed proofs failed");
        }
        if round % IDEMPOTENCY_SWEEP_ROUNDS == 0
            && let Err(error) = state
                .write(move |ledger| ledger.forget_old_replies(now))
                .await
        {
            tracing::warn!(%error, "deleting expired idempotency keys failed");
        }
    }
}

/// The server's stop: SIGTERM or SIGINT (Ctrl-C). Both are caught from
/// the call on, so a caller makes it before it says it listens: a signal
/// sent the moment the line is read, before the accept loop first polls
/// the future, stops the server gracefully rather than killing it (a
/// test's SIGTERM did, once, on a loaded machine).
pub(crate) fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {},
            _ = terminate.recv() => {},
        }
        tracing::info!("shutting down: finishing in-flight requests");
    })
}

/// Holds the address the server listens on, the base of signed URLs
/// without `public_url`; warns when verifiers elsewhere could not reach it.
fn note_listening(state: &AppState, address: SocketAddr) {
    let _ = state.listening.set(address);
    if state.config.public_url.is_none() && !publicly_reachable(address.ip()) {
        tracing::warn!(
            %address,
            "public_url is not set: token status lists are signed for http://{address}, \
             which verifiers on other machines cannot reach; set public_url to the address \
             clients use"
        );
    }
}

/// Whether an address could be reached from other networks: not
/// unspecified, loopback, private or link-local.
fn publicly_reachable(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => {
            !(v4.is_unspecified() || v4.is_loopback() || v4.is_private() || v4.is_link_local())
        }
        std::net::IpAddr::V6(v6) => {
            !(v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_unique_local()
                || v6.is_unicast_link_local())
                && v6
                    .to_ipv4_mapped()
                    .is_none_or(|v4| publicly_reachable(v4.into()))
        }
    }
}

/// Serves the API on a bound listener until `shutdown` completes, then
/// closes the database after every in-flight request has finished. When
/// the writer thread is lost (a panic outside any write), the server stops
/// the same way and returns an error: a process that can take no write
/// exits, so its supervisor restarts it, rather than answering every write
/// with an error while it looks alive. Every write it acknowledged is
/// committed.
pub async fn serve_until(
    listener: TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    note_listening(&state, listener.local_addr()?);
    let router = app(state.clone());
    let keeper = tokio::spawn(housekeeping(state.clone()));
    let expirer = tokio::spawn(timers::expire_approvals(state.clone()));
    let pruner = tokio::spawn(timers::prune_events(state.clone()));
    let scorer = tokio::spawn(trust::recompute(state.clone()));
    let integrator = tokio::spawn(recordlog::integrator(state.clone()));
    let (stop_delivery, delivery_stop) = tokio::sync::oneshot::channel();
    let deliverer = tokio::spawn(webhooks::deliver(state.clone(), delivery_stop));
    let (stop_submitting, submitter_stop) = tokio::sync::oneshot::channel();
    let submitter = tokio::spawn(recordlog::submit::submit(state.clone(), submitter_stop));
    let stopping = state.stopping.clone();
    let lost = state.store.writer_lost();
    let writer_lost = lost.clone();
    listen::serve(
        listener,
        router,
        state.config.header_read_timeout(),
        async move {
            tokio::select! {
                () = shutdown => {},
                () = writer_lost.cancelled() => {},
            }
            stopping.cancel();
        },
    )
    .await;
    for task in [keeper, expirer, pruner, scorer, integrator] {
        task.abort();
        let _ = task.await;
    }
    // Deliveries in flight are abandoned (sent again later) and this
    // process's leases released, while the database is still open.
    let _ = stop_delivery.send(());
    if deliverer.await.is_err() {
        tracing::error!("the webhook delivery task did not stop cleanly");
    }
    let _ = stop_submitting.send(());
    if submitter.await.is_err() {
        tracing::error!("the checkpoint submitter did not stop cleanly");
    }
    // The log's end is signed before the database closes: no leaf is left
    // without a checkpoint that covers it.
    let now = state.clock.now();
    if let Err(error) = state.write(move |ledger| ledger.checkpoint(now)).await {
        tracing::warn!(%error, "signing the record log's last checkpoint failed");
    }
    // Every request has finished; once the spans they handed over are
    // recorded, the last ones are sent (or given up after the export
    // timeout).
    state.span_tasks.close();
    state.span_tasks.wait().await;
    if let Some(telemetry) = &state.telemetry
        && let Err(error) = telemetry.shutdown().await
    {
        tracing::warn!(
            error = format!("{error:#}"),
            "sending the last spans failed"
        );
    }
    // Every other holder of the state is gone with the server; dropping the
    // last one leaves the store's handle as the writer's only sender.
    let store = state.store.clone();
    drop(state);
    store.close().await;
    tracing::info!("database closed");
    if lost.is_cancelled() {
        anyhow::bail!(
            "the writer thread stopped (see the error above): the server took no more writes, so it stopped; start it again"
        );
    }
    Ok(())
}

/// Binds the configured address and serves. Prints the listening address
/// on stdout, and on first start the admin key (on a terminal) or where it
/// was written (anywhere else).
pub async fn serve(config: Config) -> anyhow::Result<()> {
    let listen = config.listen;
    let data_dir = config.data_dir.clone();
    let public_url = config.public_url.clone();
    let (state, new_admin_key) = AppState::open(config)?;
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    let address = listener.local_addr()?;
    let stop = shutdown_signal()?;
    report(
        &data_dir,
        address,
        public_url.as_deref(),
        new_admin_key.as_deref(),
    );
    serve_until(listener, state, stop).await
}

#[allow(
    clippy::print_stdout,
    reason = "the operator reads these lines once, at start"
)]
fn report(
    data_dir: &std::path::Path,
    address: SocketAddr,
    public_url: Option<&str>,
    new_admin_key: Option<&str>,
) {
    let to_terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
    if let Some(key) = new_admin_key {
        println!("{}", setup::admin_key_notice(data_dir, key, to_terminal));
    }
    // Only the start that created the deployment (the one that made the
    // admin key), and only for a person: a pipe or a log gets nothing more.
    // Before the address line, which tools wait for as the sign of a start.
    if new_admin_key.is_some() && to_terminal {
        println!(
            "{}",
            setup::first_run_guide(&reached_at(address, public_url), data_dir)
        );
    }
    println!("listening on http://{address}");
}

/// The base address a client on this machine reaches the server at: the
/// public URL when set, else the address it listens on, loopback in place
/// of an unspecified address (`0.0.0.0` is no address to send to).
fn reached_at(address: SocketAddr, public_url: Option<&str>) -> String {
    if let Some(url) = public_url {
        return url.trim_end_matches('/').to_owned();
    }
    format!("http://{}", local_address(address))
}

/// The address a client on this machine sends to for a server listening on
/// `address`: loopback in place of an unspecified address (`0.0.0.0` and
/// `[::]` are no addresses to send to).
pub fn local_address(address: SocketAddr) -> SocketAddr {
    let mut address = address;
    if address.ip().is_unspecified() {
        address.set_ip(match address.ip() {
            std::net::IpAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            std::net::IpAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    address
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guide_sends_to_the_public_url_else_to_a_loopback_address() {
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert_eq!(reached_at(any, None), "http://127.0.0.1:8080");
        let any6: SocketAddr = "[::]:8080".parse().unwrap();
        assert_eq!(reached_at(any6, None), "http://[::1]:8080");
        let one: SocketAddr = "192.0.2.1:80".parse().unwrap();
        assert_eq!(reached_at(one, None), "http://192.0.2.1:80");
        assert_eq!(
            reached_at(any, Some("https://mandate.example/")),
            "https://mandate.example"
        );
    }
}
