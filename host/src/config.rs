//! Configuration: one typed struct. Defaults suit a developer machine; a TOML
//! file (`--config`) overrides them; command-line flags and their
//! environment variables override the file.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::secrets::KEY_FILE;
use crate::store::{DB_FILE, Database};

/// Requests per second allowed per caller, with the burst a caller may use
/// at once. `0` turns a limit off.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RateLimits {
    /// Per API key.
    pub per_api_key: u32,
    /// Per agent token (jti).
    pub per_token: u32,
    /// Per organisation: every request of its keys and tokens together.
    pub per_org: u32,
    /// Per client address (see `trusted_proxies`); an IPv6 client counts
    /// by its /64 network, an IPv4 one (mapped or not) by its address.
    pub per_ip: u32,
    /// How many requests beyond the steady rate a caller may send at once.
    pub burst: u32,
}

impl Default for RateLimits {
    fn default() -> RateLimits {
        RateLimits {
            per_api_key: 1000,
            per_token: 1000,
            per_org: 5000,
            per_ip: 5000,
            burst: 2000,
        }
    }
}

impl RateLimits {
    /// No limits at all (benchmarks).
    pub fn off() -> RateLimits {
        RateLimits {
            per_api_key: 0,
            per_token: 0,
            per_org: 0,
            per_ip: 0,
            burst: 0,
        }
    }
}

/// How `record/action` and `authorize` may name the token they act with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentAuth {
    /// As the spec shows: a bare `vat_jti` in the body, or the token itself.
    /// A bare `vat_jti` names a token without proving that the caller holds
    /// it; a bound token always needs itself and its proof.
    #[default]
    Jti,
    /// The token itself only (`Authorization: Bearer`, or `DPoP` with its
    /// proof when bound).
    Bearer,
}

/// An OpenID Connect provider whose ID tokens may issue L2 tokens.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OidcIssuer {
    /// The `iss` of its ID tokens, exactly.
    pub issuer: String,
    /// The `aud` its ID tokens must carry (Mandate's client id there).
    pub audience: String,
    /// A JWKS file with its public keys (relative to the config file).
    #[serde(default)]
    pub jwks_file: Option<PathBuf>,
    /// Where to fetch its keys; by default `jwks_uri` of its discovery
    /// document (`<issuer>/.well-known/openid-configuration`), whose
    /// `issuer` must equal `issuer` exactly. Every URL fetched (and every
    /// redirect) must be https.
    #[serde(default)]
    pub jwks_uri: Option<String>,
    /// Also fetch over plain http from a loopback address (an IP literal
    /// such as `127.0.0.1` or `::1`): for a provider on the same machine, or
    /// tests. Any other http URL is still refused.
    #[serde(default)]
    pub allow_insecure_http: bool,
    /// Sign-in with this provider on the consent page
    /// (`[oidc.issuer.sign_in]`), with `audience` as Mandate's `client_id`
    /// (docs/oauth.md, "Signing in with an identity provider").
    #[serde(default)]
    pub sign_in: Option<OidcSignIn>,
}

/// The relying-party side of an `[[oidc.issuer]]`: the consent page signs
/// a person in with this provider (authorization code with PKCE S256,
/// `state` and `nonce`), its ID token verified as an L2 one. Its
/// `client_id` is the issuer's `audience` (OIDC Core §3.1.3.7: the ID
/// token's `aud` must hold the client's id). Needs `[oauth]` enabled.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OidcSignIn {
    /// The provider's name in Mandate's paths: 1–32 letters, digits, `-`
    /// or `_`, different for each provider. The provider sends the browser
    /// back to `public_url` + `/v1/oauth/oidc/<name>/callback` (register
    /// that redirect URI with it): one per provider, so the callback knows
    /// which provider answers (RFC 9700 §4.4.2).
    pub name: String,
    /// The secret the provider gave Mandate's client, sent with HTTP Basic
    /// to its token endpoint (`client_secret_basic`); unset for a public
    /// client (`none`, PKCE alone). A secret: shown as `[redacted]` by
    /// `mandate config check`.
    #[serde(default, serialize_with = "redact")]
    pub client_secret: Option<String>,
    /// The organisation (by name) a person signed in this way consents in:
    /// they may grant their own agents there, as a key with `issue` may
    /// (never another human's). Anyone the provider signs in may consent,
    /// so name the provider of this organisation's people only.
    #[serde(default = "default_org_name")]
    pub org: String,
}

fn default_org_name() -> String {
    crate::store::orgs::DEFAULT_NAME.to_owned()
}

/// Longest sign-in provider name.
pub const MAX_SIGN_IN_NAME: usize = 32;

/// OIDC settings for L2.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Oidc {
    /// The providers (`[[oidc.issuer]]`).
    #[serde(default)]
    pub issuer: Vec<OidcIssuer>,
}

impl Oidc {
    /// Checks the sign-in providers: each named by a plain path segment,
    /// no name used twice, and `[oauth]` enabled (the consent page they
    /// sign in to is its).
    fn check_sign_in(&self, oauth_enabled: bool) -> anyhow::Result<()> {
        let mut names = std::collections::BTreeSet::new();
        for issuer in &self.issuer {
            let Some(sign_in) = &issuer.sign_in else {
                continue;
            };
            let provider = &issuer.issuer;
            if !oauth_enabled {
                anyhow::bail!(
                    "[[oidc.issuer]] {provider:?}: sign_in needs [oauth] enabled (it signs people in to the consent page)"
                );
            }
            let name = &sign_in.name;
            if name.is_empty()
                || name.len() > MAX_SIGN_IN_NAME
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
            {
                anyhow::bail!(
                    "[[oidc.issuer]] {provider:?}: sign_in.name {name:?} must be 1–{MAX_SIGN_IN_NAME} letters, digits, '-' or '_'"
                );
            }
            if !names.insert(name.as_str()) {
                anyhow::bail!(
                    "[[oidc.issuer]] {provider:?}: sign_in.name {name:?} is another provider's: each provider answers at its own callback"
                );
            }
        }
        Ok(())
    }
}

/// A named identity verifier for L3.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Verifier {
    /// A WebAssembly module (see docs/plugins.md), run sandboxed.
    Plugin {
        /// The name requests use.
        name: String,
        /// The module file (relative to the config file).
        module: PathBuf,
        /// Fuel per call (roughly, wasm instructions).
        #[serde(default = "default_fuel")]
        fuel: u64,
        /// Memory cap per call, MiB.
        #[serde(default = "default_memory_mib")]
        memory_mib: u64,
        /// Wall-clock deadline per call, milliseconds.
        #[serde(default = "default_timeout_ms")]
        timeout_ms: u64,
    },
    /// An identity-verification provider that signs its verdicts (a JWS).
    Provider {
        /// The name requests use.
        name: String,
        /// The `iss` of its attestations.
        issuer: String,
        /// Its public keys (relative to the config file).
        jwks_file: PathBuf,
        /// The `aud` its attestations must carry, if it sets one.
        #[serde(default)]
        audience: Option<String>,
    },
}

/// What every serialisation of the configuration (`mandate config check`)
/// shows in place of a secret.
pub const REDACTED: &str = "[redacted]";

/// Serialises a secret as [`REDACTED`] (or nothing when unset).
fn redact<S: serde::Serializer>(secret: &Option<String>, to: S) -> Result<S::Ok, S::Error> {
    secret.as_ref().map(|_| REDACTED).serialize(to)
}

/// Serialises a map's names with every value [`REDACTED`].
fn redact_values<S: serde::Serializer>(
    secrets: &BTreeMap<String, String>,
    to: S,
) -> Result<S::Ok, S::Error> {
    secrets
        .keys()
        .map(|name| (name, REDACTED))
        .collect::<BTreeMap<_, _>>()
        .serialize(to)
}

fn default_fuel() -> u64 {
    50_000_000
}

fn default_memory_mib() -> u64 {
    32
}

fn default_timeout_ms() -> u64 {
    1_000
}

impl Verifier {
    /// The name requests use.
    pub fn name(&self) -> &str {
        match self {
            Verifier::Plugin { name, .. } | Verifier::Provider { name, .. } => name,
        }
    }

    fn resolve(&mut self, base: &Path) {
        match self {
            Verifier::Plugin { module, .. } => *module = base.join(&*module),
            Verifier::Provider { jwks_file, .. } => *jwks_file = base.join(&*jwks_file),
        }
    }
}

/// The default of `query_budget_ms`: some 25 times the p99 of an indexed
/// page of records at 5 M records under load, and less than reading all of
/// them takes (see docs/decisions.md).
const DEFAULT_QUERY_BUDGET_MS: NonZeroU64 = NonZeroU64::new(500).unwrap();

/// The record log (`[log]`): every token issued, delegated and revoked and
/// every record created, completed and rated is a leaf of one Merkle log
/// whose signed checkpoints anyone can check (docs/log.md).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// Append to the log. Off, nothing is appended and nothing new is
    /// tamper-evident: `mandate audit verify` then reports every later
    /// change as missing from the log. Kept for measuring the log's cost
    /// and for deployments that take their records on the operator's word.
    pub enabled: bool,
    /// The log's name, the first line of every checkpoint and its key's
    /// name: a schema-less URL such as `mandate.example.com/v1/log`. Fixed
    /// at the first start (stored in the database); a later start naming
    /// another is refused. By default the `public_url` without its scheme
    /// and `/v1/log`, else `mandate.invalid/` and a random name.
    pub origin: Option<String>,
    /// Witnesses the log submits its checkpoints to (C2SP tlog-witness,
    /// docs/log.md), each `{ url, vkey }`: `url` the witness's prefix
    /// (`add-checkpoint` is under it), https or http on a loopback literal;
    /// `vkey` its cosignature/v1 verifier key, taken from the witness's
    /// operator, never from the witness's answers.
    pub witnesses: Vec<LogWitnessConfig>,
    /// How many of `witnesses` must cosign a checkpoint before it counts as
    /// witnessed; needed with `witnesses`, at most their number.
    pub witness_threshold: Option<usize>,
    /// How often the log signs a checkpoint and submits it to its witnesses
    /// while it grows, milliseconds (nothing is sent while it does not):
    /// the longest a write waits for a checkpoint that covers it, plus the
    /// witnesses' round trip. 1000 by default: each witness persists one
    /// state per checkpoint, so one a second per log is little load on it,
    /// and a second is short against the minutes an auditor polls at.
    /// Between 100 and 3 600 000.
    pub checkpoint_interval_ms: NonZeroU64,
    /// How old a witness's newest cosignature of the log's current
    /// checkpoint may grow, seconds, before the submitter asks that witness
    /// again for the same checkpoint (a witness cosigns a checkpoint it
    /// holds once more, with a new timestamp): a log that stops growing
    /// keeps cosignatures younger than this plus the cadence, which
    /// verifiers' maximum age must exceed. 600 by default; between 10 and
    /// 86 400.
    pub cosignature_refresh_seconds: NonZeroU64,
}

/// The default of `checkpoint_interval_ms` (see its documentation).
const DEFAULT_CHECKPOINT_INTERVAL_MS: NonZeroU64 = NonZeroU64::new(1000).unwrap();

/// The bounds of `checkpoint_interval_ms`: faster than 100 ms asks a
/// witness for a durable write per checkpoint faster than a disk makes
/// them; slower than an hour leaves writes unwitnessed for longer than
/// any auditor's maximum age would accept.
const CHECKPOINT_INTERVAL_MS_BOUNDS: (u64, u64) = (100, 3_600_000);

/// The default of `cosignature_refresh_seconds`: ten minutes, well inside
/// the hours a verifier's maximum age is typically set to.
const DEFAULT_COSIGNATURE_REFRESH_SECONDS: NonZeroU64 = NonZeroU64::new(600).unwrap();

/// The bounds of `cosignature_refresh_seconds`: more often than every 10 s
/// asks witnesses for a durable write that says nothing new; less often
/// than daily outlasts any maximum age worth having.
const COSIGNATURE_REFRESH_SECONDS_BOUNDS: (u64, u64) = (10, 86_400);

impl Default for LogConfig {
    fn default() -> LogConfig {
        LogConfig {
            enabled: true,
            origin: None,
            witnesses: Vec::new(),
            witness_threshold: None,
            checkpoint_interval_ms: DEFAULT_CHECKPOINT_INTERVAL_MS,
            cosignature_refresh_seconds: DEFAULT_COSIGNATURE_REFRESH_SECONDS,
        }
    }
}

/// A witness the log submits to (`[log] witnesses`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogWitnessConfig {
    /// The witness's URL prefix: `<url>/add-checkpoint` is where
    /// checkpoints go.
    pub url: String,
    /// The witness's verifier key (`name+keyid+key`, type 0x04,
    /// cosignature/v1).
    pub vkey: String,
}

/// A witness of `[log] witnesses` with its URL and key checked.
#[derive(Debug, Clone)]
pub struct LogWitness {
    /// The URL prefix, without a trailing slash.
    pub url: reqwest::Url,
    /// Its cosignature key.
    pub verifier: mandate_core::tlog::WitnessVerifier,
}

impl LogConfig {
    /// The witnesses and threshold, checked: each URL https (http only on
    /// a loopback literal) without user information, query or fragment;
    /// each vkey a witness's key; no witness twice (by name or key: the
    /// cosignature does not sign the name); the threshold from 1 to the
    /// number of witnesses, and given exactly when witnesses are; witnesses
    /// only with the log enabled. `None` without witnesses.
    pub fn witness_set(&self) -> anyhow::Result<Option<(Vec<LogWitness>, usize)>> {
        let (low, high) = CHECKPOINT_INTERVAL_MS_BOUNDS;
        let interval = self.checkpoint_interval_ms.get();
        if !(low..=high).contains(&interval) {
            anyhow::bail!("[log] checkpoint_interval_ms must be between {low} and {high}");
        }
        let (low, high) = COSIGNATURE_REFRESH_SECONDS_BOUNDS;
        if !(low..=high).contains(&self.cosignature_refresh_seconds.get()) {
            anyhow::bail!("[log] cosignature_refresh_seconds must be between {low} and {high}");
        }
        let threshold = match (self.witnesses.is_empty(), self.witness_threshold) {
            (true, None) => return Ok(None),
            (true, Some(_)) => {
                anyhow::bail!("[log] witness_threshold is given without witnesses")
            }
            (false, None) => anyhow::bail!(
                "[log] witnesses need witness_threshold: how many of them must cosign a checkpoint"
            ),
            (false, Some(threshold)) => threshold,
        };
        if !self.enabled {
            anyhow::bail!("[log] witnesses need the log enabled");
        }
        let mut witnesses = Vec::with_capacity(self.witnesses.len());
        for witness in &self.witnesses {
            let verifier =
                mandate_core::tlog::WitnessVerifier::parse(&witness.vkey).map_err(|e| {
                    anyhow::anyhow!(
                        "[log] witnesses: {:?} is not a witness's vkey ({e})",
                        witness.vkey
                    )
                })?;
            witnesses.push(LogWitness {
                url: witness_url(&witness.url)?,
                verifier,
            });
        }
        // Core's policy holds the rules of a threshold over named keys
        // (1 ≤ k ≤ n, no witness twice); the age is a verifier's, any
        // positive one checks the same.
        mandate_core::tlog::WitnessPolicy::new(
            witnesses.iter().map(|w| w.verifier.clone()).collect(),
            threshold,
            1,
        )
        .map_err(|e| anyhow::anyhow!("[log] witnesses: {e}"))?;
        Ok(Some((witnesses, threshold)))
    }
}

/// A witness's URL prefix as `[log] witnesses` takes it (see
/// [`LogConfig::witness_set`]), its trailing slash removed.
fn witness_url(url: &str) -> anyhow::Result<reqwest::Url> {
    let parsed = reqwest::Url::parse(url.trim_end_matches('/'))
        .map_err(|e| anyhow::anyhow!("[log] witnesses: url {url:?}: {e}"))?;
    let loopback = parsed.host_str().is_some_and(is_loopback_literal);
    let scheme_ok = parsed.scheme() == "https" || (parsed.scheme() == "http" && loopback);
    if !scheme_ok
        || !parsed.username().is_empty()
        || parsed.password().is_some()
        || parsed.query().is_some()
        || parsed.fragment().is_some()
    {
        anyhow::bail!(
            "[log] witnesses: url {url:?} must be an https URL (http only on 127.0.0.1 or [::1]) without user information, query or fragment"
        );
    }
    Ok(parsed)
}

/// Token status lists (`[status]`): what offline verifiers read to refuse a
/// revoked token.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct StatusConfig {
    /// How long a verifier may keep a status list before fetching it again
    /// (its `ttl` claim and `Cache-Control: max-age`), seconds: how late a
    /// revocation may reach the edge.
    pub ttl_seconds: NonZeroU64,
}

impl Default for StatusConfig {
    fn default() -> StatusConfig {
        StatusConfig {
            ttl_seconds: NonZeroU64::new(60).unwrap_or(NonZeroU64::MIN),
        }
    }
}

/// OpenTelemetry (`[otel]`): each action record exported as a span over
/// OTLP/HTTP (see `otel.rs` and docs/decisions.md). Off while `endpoint` is
/// unset: nothing is started then.
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct OtelConfig {
    /// The collector's OTLP/HTTP base address, such as
    /// `http://collector:4318`; spans are sent to `<endpoint>/v1/traces`.
    pub endpoint: Option<String>,
    /// `service.name` of the spans' resource.
    pub service_name: String,
    /// Headers sent with every export, such as an `authorization` token the
    /// collector asks for. Their values are secrets: never logged, and shown
    /// as `[redacted]` by `mandate config check`.
    #[serde(serialize_with = "redact_values")]
    pub headers: BTreeMap<String, String>,
    /// Longest one export may take, retries included, in milliseconds.
    pub timeout_ms: NonZeroU64,
}

impl Default for OtelConfig {
    fn default() -> OtelConfig {
        OtelConfig {
            endpoint: None,
            service_name: "mandate".to_owned(),
            headers: BTreeMap::new(),
            timeout_ms: NonZeroU64::new(10_000).unwrap_or(NonZeroU64::MIN),
        }
    }
}

/// Shows header names only: a header may carry the collector's token.
impl std::fmt::Debug for OtelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtelConfig")
            .field("endpoint", &self.endpoint)
            .field("service_name", &self.service_name)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

impl OtelConfig {
    /// `timeout_ms` as a duration.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.get())
    }
}

/// Approval before the act (`[approvals]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalsConfig {
    /// How long an approval waits for a decision before it expires (and
    /// never past the token's own expiry), seconds: 1 to 604800 (a week).
    pub ttl_seconds: NonZeroU64,
}

impl Default for ApprovalsConfig {
    fn default() -> ApprovalsConfig {
        ApprovalsConfig {
            ttl_seconds: NonZeroU64::new(900).unwrap_or(NonZeroU64::MIN),
        }
    }
}

/// What records keep of an act's arguments (`[records]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RecordsConfig {
    /// Keep the arguments on the record (their `args_hash` is always
    /// kept). Off, they are kept only while an approval of the act waits
    /// for a decision, for the reviewer to see, and dropped once decided.
    pub keep_args: bool,
    /// Selectors (`.password`, `.card.number`, `.items[].secret`) whose
    /// values are stored as `"[redacted]"`; `args_hash` stays the hash of
    /// the arguments as given.
    pub redact_args: Vec<String>,
}

impl Default for RecordsConfig {
    fn default() -> RecordsConfig {
        RecordsConfig {
            keep_args: true,
            redact_args: Vec::new(),
        }
    }
}

impl RecordsConfig {
    /// `redact_args` parsed; a malformed selector is an error naming it.
    pub fn redactions(&self) -> anyhow::Result<Vec<mandate_core::policy::Selector>> {
        self.redact_args
            .iter()
            .map(|text| {
                mandate_core::policy::Selector::parse(text).map_err(|_| {
                    anyhow::anyhow!(
                        "[records] redact_args: {text:?} is not a selector (.name, .a.b, .list[])"
                    )
                })
            })
            .collect()
    }
}

/// The longest approval lifetime accepted, seconds.
pub const MAX_APPROVAL_TTL_SECONDS: u64 = 7 * 24 * 3600;

impl ApprovalsConfig {
    /// `ttl_seconds` in milliseconds.
    pub fn ttl_ms(&self) -> i64 {
        i64::try_from(self.ttl_seconds.get().saturating_mul(1000)).unwrap_or(i64::MAX)
    }
}

/// Events (`[events]`): the outbox webhooks and `GET /v1/events` deliver.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EventsConfig {
    /// Write events to the outbox. Off, nothing is reported: no webhook
    /// is called and `GET /v1/events` stays silent. Kept for measuring the
    /// outbox's cost.
    pub enabled: bool,
    /// How long delivered events are kept for `Last-Event-ID` resumes,
    /// hours (at least 24, the webhook retry window). An event not yet sent
    /// to every webhook of its organisation is kept until it is.
    pub retain_hours: NonZeroU64,
    /// Event streams (`GET /v1/events`) one organisation may hold open at
    /// once on this process; one more is refused 429 `too_many_streams`.
    pub max_streams_per_org: usize,
    /// Event streams one API key may hold open at once on this process,
    /// below the organisation's so that one key (an auditor's) cannot take
    /// them all; one more is refused 429 `too_many_streams`.
    pub max_streams_per_key: usize,
    /// Seconds between the `:heartbeat` comments of a quiet event stream,
    /// 1 to 15: lower it behind a proxy that closes connections idle for
    /// less. Never more than 15, since the SDKs take a stream silent for
    /// 45 s (three missed heartbeats) for a dead one.
    pub heartbeat_seconds: u64,
}

/// The longest pause between an event stream's heartbeats, and the default.
const MAX_HEARTBEAT_SECONDS: u64 = 15;

impl EventsConfig {
    /// `heartbeat_seconds` as a duration.
    pub fn heartbeat(&self) -> Duration {
        Duration::from_secs(self.heartbeat_seconds)
    }
}

impl Default for EventsConfig {
    fn default() -> EventsConfig {
        EventsConfig {
            enabled: true,
            retain_hours: NonZeroU64::new(72).unwrap_or(NonZeroU64::MIN),
            max_streams_per_org: 16,
            max_streams_per_key: 4,
            heartbeat_seconds: MAX_HEARTBEAT_SECONDS,
        }
    }
}

/// Webhooks (`[webhooks]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct WebhooksConfig {
    /// Allow webhook URLs that name or resolve to private, loopback,
    /// link-local or other non-public addresses (and plain `http`). Off,
    /// such URLs are refused when a webhook is created and every delivery
    /// checks the addresses it connects to.
    pub allow_private: bool,
    /// The ports a webhook URL may name (its scheme's default when it names
    /// none); ignored with `allow_private`.
    pub ports: Vec<u16>,
    /// Longest one delivery attempt may take, milliseconds: connecting,
    /// sending and the answer's status. Slower is a failed attempt.
    pub timeout_ms: NonZeroU64,
    /// The delay before the first retry, milliseconds; each next one
    /// doubles up to an hour, and each is drawn between half and all of
    /// that (jitter).
    pub retry_first_delay_ms: NonZeroU64,
    /// How long an event is retried, from its first attempt, before its
    /// endpoint is disabled (its owner re-enables it, and it resumes from
    /// that event), hours.
    pub retry_for_hours: NonZeroU64,
    /// Deliveries in flight to one endpoint at once. Events of one endpoint
    /// are sent in order; with more than one in flight, a later event may
    /// arrive before an earlier one that is being retried.
    pub per_endpoint_concurrency: NonZeroU64,
}

impl Default for WebhooksConfig {
    fn default() -> WebhooksConfig {
        WebhooksConfig {
            allow_private: false,
            ports: vec![443, 80, 8443],
            timeout_ms: NonZeroU64::new(10_000).unwrap_or(NonZeroU64::MIN),
            retry_first_delay_ms: NonZeroU64::new(5_000).unwrap_or(NonZeroU64::MIN),
            retry_for_hours: NonZeroU64::new(24).unwrap_or(NonZeroU64::MIN),
            per_endpoint_concurrency: NonZeroU64::MIN,
        }
    }
}

/// Client ID metadata documents (`[oauth.client_documents]`): how the
/// authorization server fetches the document an `https://` `client_id`
/// names (draft-ietf-oauth-client-id-metadata-document).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ClientDocumentsConfig {
    /// Longest one fetch may take, milliseconds.
    pub timeout_ms: NonZeroU64,
    /// Largest document accepted, bytes (the draft's §6 suggests 5 KB; at
    /// most 5120).
    pub max_bytes: NonZeroU64,
    /// Shortest time a fetched document is kept, seconds, whatever its
    /// `Cache-Control` says.
    pub cache_min_s: NonZeroU64,
    /// Longest time a fetched document is kept, seconds.
    pub cache_max_s: NonZeroU64,
    /// Fetch documents from a URL whose host is a loopback IP literal, on
    /// any port (tests). Off, a URL naming or resolving to a private,
    /// loopback or link-local address is refused. Only when the server
    /// listens on loopback.
    pub allow_loopback: bool,
    /// PEM files of extra certificate authorities trusted for these
    /// fetches (relative to the config file; tests). Only when the server
    /// listens on loopback.
    pub extra_roots: Vec<PathBuf>,
}

impl Default for ClientDocumentsConfig {
    fn default() -> ClientDocumentsConfig {
        ClientDocumentsConfig {
            timeout_ms: NonZeroU64::new(5_000).unwrap_or(NonZeroU64::MIN),
            max_bytes: NonZeroU64::new(5_120).unwrap_or(NonZeroU64::MIN),
            cache_min_s: NonZeroU64::new(300).unwrap_or(NonZeroU64::MIN),
            cache_max_s: NonZeroU64::new(86_400).unwrap_or(NonZeroU64::MIN),
            allow_loopback: false,
            extra_roots: Vec::new(),
        }
    }
}

/// Mandate as the OAuth 2.1 authorization server of MCP servers
/// (`[oauth]`, docs/oauth.md). Off by default: every `/v1/oauth/…` path and
/// the metadata document answer 404 then. On, the server refuses to start
/// unless `public_url` is https (plain http only for a `127.0.0.1` or
/// `[::1]` literal) and `issuer` equals it: one issuer names the metadata,
/// the `iss` of redirects and of every token (RFC 8414 §2, §3.3; RFC 9207).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct OAuthConfig {
    /// Serve the authorization server: its metadata and `/v1/oauth/…`.
    pub enabled: bool,
    /// Lifetime of an access token, seconds.
    pub access_token_ttl_seconds: NonZeroU64,
    /// Lifetime of an authorization code, seconds (OAuth 2.1: at most 10
    /// minutes is recommended).
    pub code_ttl_seconds: NonZeroU64,
    /// How long a pending authorization request waits for the human's
    /// decision on the consent page, seconds.
    pub request_ttl_seconds: NonZeroU64,
    /// A grant whose refresh token is not used for this many days expires.
    pub refresh_idle_days: NonZeroU64,
    /// How client ID metadata documents are fetched.
    pub client_documents: ClientDocumentsConfig,
}

impl Default for OAuthConfig {
    fn default() -> OAuthConfig {
        OAuthConfig {
            enabled: false,
            access_token_ttl_seconds: NonZeroU64::new(900).unwrap_or(NonZeroU64::MIN),
            code_ttl_seconds: NonZeroU64::new(60).unwrap_or(NonZeroU64::MIN),
            request_ttl_seconds: NonZeroU64::new(600).unwrap_or(NonZeroU64::MIN),
            refresh_idle_days: NonZeroU64::new(14).unwrap_or(NonZeroU64::MIN),
            client_documents: ClientDocumentsConfig::default(),
        }
    }
}

/// The longest authorization-code lifetime accepted, seconds (OAuth 2.1
/// "Authorization Response": a maximum of 10 minutes is RECOMMENDED).
pub const MAX_CODE_TTL_SECONDS: u64 = 600;
/// The longest access-token lifetime accepted, seconds (a day; MCP asks
/// for short-lived tokens).
pub const MAX_ACCESS_TOKEN_TTL_SECONDS: u64 = 24 * 3600;
/// The longest wait on the consent page accepted, seconds.
pub const MAX_REQUEST_TTL_SECONDS: u64 = 3600;
/// The longest refresh idle time accepted, days (a grant lives at most 30).
pub const MAX_REFRESH_IDLE_DAYS: u64 = 30;

impl OAuthConfig {
    /// On, with the defaults, fetching client documents from loopback
    /// (the tests' servers); the test sets `public_url` and `issuer`.
    pub fn for_test() -> OAuthConfig {
        OAuthConfig {
            enabled: true,
            client_documents: ClientDocumentsConfig {
                allow_loopback: true,
                ..ClientDocumentsConfig::default()
            },
            ..OAuthConfig::default()
        }
    }

    /// The bounds of each lifetime; an error names the option.
    fn check_bounds(&self) -> anyhow::Result<()> {
        for (name, value, max) in [
            (
                "access_token_ttl_seconds",
                self.access_token_ttl_seconds.get(),
                MAX_ACCESS_TOKEN_TTL_SECONDS,
            ),
            (
                "code_ttl_seconds",
                self.code_ttl_seconds.get(),
                MAX_CODE_TTL_SECONDS,
            ),
            (
                "request_ttl_seconds",
                self.request_ttl_seconds.get(),
                MAX_REQUEST_TTL_SECONDS,
            ),
            (
                "refresh_idle_days",
                self.refresh_idle_days.get(),
                MAX_REFRESH_IDLE_DAYS,
            ),
        ] {
            if value > max {
                anyhow::bail!("[oauth] {name} may be at most {max}");
            }
        }
        let documents = &self.client_documents;
        if documents.cache_min_s > documents.cache_max_s {
            anyhow::bail!("[oauth.client_documents] cache_min_s may not exceed cache_max_s");
        }
        let most =
            u64::try_from(mandate_core::limits::MAX_CLIENT_DOCUMENT_BYTES).unwrap_or(u64::MAX);
        if documents.max_bytes.get() > most {
            anyhow::bail!(
                "[oauth.client_documents] max_bytes may be at most {most} (larger documents are refused anyway)"
            );
        }
        Ok(())
    }
}

/// Whether `host` (as a URL writes it) is a loopback IP literal: the only
/// hosts an http issuer may name.
fn is_loopback_literal(host: &str) -> bool {
    host == "127.0.0.1" || host == "[::1]"
}

/// Checks `public_url` as a start needs it. A server listening on every
/// interface (`0.0.0.0`, `[::]`, as inside a container) must be told the
/// address clients reach it at: every URL it signs (token status lists) is
/// under `public_url`, else the listen address, and an unspecified address
/// signed into a token is one no verifier can fetch (DESIGN §14: nothing
/// signed is taken from a request's `Host`, so there is nothing else).
fn check_public_url(listen: SocketAddr, public_url: Option<&str>) -> anyhow::Result<()> {
    match public_url {
        Some(url) if mandate_core::dpop::normalize_url(url).is_none() => anyhow::bail!(
            "public_url {url:?} must be an absolute http(s) URL without user information"
        ),
        Some(_) => Ok(()),
        None if listen.ip().is_unspecified() => anyhow::bail!(
            "listening on {listen} (every interface) needs public_url, the address clients reach this server at: the URLs it signs into tokens are under it, and {listen} is no address to fetch (set public_url in the file, --public-url, or MANDATE_PUBLIC_URL)"
        ),
        None => Ok(()),
    }
}

/// Checks the issuer an `[oauth]` deployment announces: `public_url` set,
/// an https URL (http only for a loopback literal) without user
/// information, query or fragment and without a trailing slash (RFC 8414
/// §2: "a URL that uses the "https" scheme and has no query or fragment
/// components"), and `issuer` equal to it byte for byte (RFC 8414 §3.3:
/// the metadata's `issuer` MUST be identical to the issuer identifier
/// clients use; the tokens' `iss` is `issuer`).
fn check_oauth_issuer(public_url: Option<&str>, issuer: &str) -> anyhow::Result<()> {
    let Some(public_url) = public_url else {
        anyhow::bail!(
            "[oauth] enabled needs public_url: the authorization server's issuer is the address clients reach it at (set public_url, and issuer to the same value)"
        );
    };
    let parsed = reqwest::Url::parse(public_url).map_err(|error| {
        anyhow::anyhow!("[oauth] enabled: public_url {public_url:?} is not a URL ({error})")
    })?;
    let host = parsed.host_str().unwrap_or_default();
    match parsed.scheme() {
        "https" => {}
        "http" if is_loopback_literal(host) => {}
        _ => anyhow::bail!(
            "[oauth] enabled: public_url {public_url:?} must be an https URL (plain http only for 127.0.0.1 or [::1])"
        ),
    }
    if !parsed.username().is_empty()
        || parsed.password().is_some()
        || parsed.query().is_some()
        || parsed.fragment().is_some()
        || public_url.contains(['?', '#'])
    {
        anyhow::bail!(
            "[oauth] enabled: public_url {public_url:?} may hold no user information, query or fragment (RFC 8414 §2)"
        );
    }
    if public_url.ends_with('/') {
        anyhow::bail!(
            "[oauth] enabled: public_url {public_url:?} must not end with a slash: it is the issuer, compared byte for byte (RFC 8414 §3.3)"
        );
    }
    if issuer != public_url {
        anyhow::bail!(
            "[oauth] enabled: issuer {issuer:?} must equal public_url {public_url:?}: the metadata, the `iss` of redirects and the `iss` of tokens name one issuer"
        );
    }
    Ok(())
}

/// A log a witness witnesses (`[[witness.log]]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WitnessedLogConfig {
    /// The log's origin, the first line of its checkpoints (a Mandate
    /// deployment's is its `[log] origin`).
    pub origin: String,
    /// Verifier keys of the log (a Mandate deployment lists its own at
    /// `GET /v1/log/key`; take them from a source other than the log): a
    /// checkpoint is cosigned only when one of them signed it and none of
    /// their signatures on it fails. List the new key beside the old while
    /// the log rotates.
    pub vkeys: Vec<String>,
}

/// `mandate witness serve` (`[witness]`, docs/log.md): a C2SP tlog-witness
/// for other deployments' record logs. Its key and state are in the data
/// folder (`witness.key`, `witness.db`), apart from a server's.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct WitnessConfig {
    /// Address the witness listens on.
    pub listen: SocketAddr,
    /// The witness's name: its key's name, on every cosignature it makes —
    /// a schema-less URL such as `witness.example.com/w1`. Needed to serve.
    pub name: Option<String>,
    /// Longest one request may take, reading its body included,
    /// milliseconds; slower is answered 408. A client slower to send its
    /// headers is disconnected.
    pub request_timeout_ms: NonZeroU64,
    /// The logs it witnesses (`[[witness.log]]`); a checkpoint of any
    /// other origin is answered 404.
    pub log: Vec<WitnessedLogConfig>,
}

impl Default for WitnessConfig {
    fn default() -> WitnessConfig {
        WitnessConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8090)),
            name: None,
            request_timeout_ms: NonZeroU64::new(10_000).unwrap_or(NonZeroU64::MIN),
            log: Vec::new(),
        }
    }
}

impl WitnessConfig {
    /// The witnessed logs with their keys parsed; an origin listed twice,
    /// a log without keys or a key that is not a log's vkey is an error
    /// naming it.
    pub fn witnessed_logs(&self) -> anyhow::Result<mandate_core::tlog::WitnessedLogs> {
        let mut logs = mandate_core::tlog::WitnessedLogs::new();
        for log in &self.log {
            if log.vkeys.is_empty() {
                anyhow::bail!("[[witness.log]] {:?}: give its vkeys", log.origin);
            }
            let keys = log
                .vkeys
                .iter()
                .map(|vkey| {
                    mandate_core::tlog::NoteVerifier::parse(vkey).map_err(|e| {
                        anyhow::anyhow!(
                            "[[witness.log]] {:?}: {vkey:?} is not a log's vkey: {e}",
                            log.origin
                        )
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            if logs.insert(log.origin.clone(), keys).is_some() {
                anyhow::bail!("[[witness.log]] {:?} is listed twice", log.origin);
            }
        }
        Ok(logs)
    }

    /// `request_timeout_ms` as a duration.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms.get())
    }
}

/// Where the database is (`[database]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseConfig {
    /// `postgres://…` for PostgreSQL, shared by any number of hosts;
    /// unset for the embedded SQLite in the data folder. A secret (it may
    /// carry a password): shown as `[redacted]` by `mandate config check`.
    #[serde(serialize_with = "redact")]
    pub url: Option<String>,
    /// PEM file of the certificate authorities that may sign the database
    /// server's certificate (relative to the config file); by default the
    /// system's.
    pub ca_file: Option<PathBuf>,
    /// What stands between the hosts and PostgreSQL: `none` (the default)
    /// or a pooler in `transaction` mode (PgBouncer's `pool_mode =
    /// transaction`), which hands each transaction any server connection:
    /// then no statement is prepared by name and every read runs in a
    /// transaction of its own that carries its settings (docs/postgres.md).
    pub pooler: Pooler,
}

/// What stands between the hosts and PostgreSQL (`[database] pooler`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum Pooler {
    /// Each connection is a server session of its own.
    #[default]
    None,
    /// A pooler in transaction mode.
    Transaction,
}

/// Everything the server can be told.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Folder of the database (SQLite), the key file and the admin key.
    pub data_dir: PathBuf,
    /// Where the database is (`[database]`).
    pub database: DatabaseConfig,
    /// The key-encryption key's file (relative to the config file), which
    /// seals the signing keys and the human-reference secret; by default
    /// `key-encryption.key` in the data folder (`Config::key_file_path`).
    pub key_file: Option<PathBuf>,
    /// The `iss` of every token.
    pub issuer: String,
    /// The address clients reach this server at (`https://mandate.example`,
    /// with any path prefix a proxy adds): DPoP proofs name it in `htu`
    /// (by default `http://` and the request's `Host`), and every URL the
    /// server signs is under it — token status lists (by default `http://`
    /// and the address it listens on, never a request's `Host`). Set it in
    /// production; behind a proxy that terminates TLS it is needed, and a
    /// start listening on every interface (`0.0.0.0`, `[::]`, as in a
    /// container) is refused without it.
    pub public_url: Option<String>,
    /// How `record/action` and `authorize` may name their token (`delegate`,
    /// an agent's `revoke` and every bound token always need the token).
    pub agent_auth: AgentAuth,
    /// Read-only database connections for record lists, graphs, workflow
    /// lists and token trees (API-key checks and single-item reads have
    /// connections of their own).
    pub readers: usize,
    /// Longest a read may run, in milliseconds. A read still running then
    /// is stopped and answered 422 `query_too_broad` (a filter no index
    /// serves, over many records), so it never holds a connection longer.
    pub query_budget_ms: NonZeroU64,
    /// Longest a client may take to send a request's line and headers,
    /// milliseconds, and to start its next request on a kept-alive
    /// connection; the connection is closed then. A client that trickles
    /// its headers cannot hold connections open (the slow-header attack).
    pub header_read_timeout_ms: NonZeroU64,
    /// Most writes committed together in one transaction (1 = one commit per write).
    pub max_batch: usize,
    /// Requests per second per caller (`[rate_limits]`).
    pub rate_limits: RateLimits,
    /// Peers whose `X-Forwarded-For` is believed for per-address limits.
    pub trusted_proxies: Vec<IpAddr>,
    /// Serve `/metrics` without an API key to loopback clients. Ignored when
    /// `trusted_proxies` is set: behind a reverse proxy on the same machine
    /// every client arrives from loopback, so an API key is always needed.
    pub metrics_open_on_loopback: bool,
    /// Identity providers for L2 (`[[oidc.issuer]]`).
    pub oidc: Oidc,
    /// Identity verifiers for L3 (`[[verifier]]`).
    pub verifier: Vec<Verifier>,
    /// The record log (`[log]`).
    pub log: LogConfig,
    /// Token status lists (`[status]`).
    pub status: StatusConfig,
    /// OpenTelemetry export of action records (`[otel]`); off by default.
    pub otel: OtelConfig,
    /// Approval before the act (`[approvals]`).
    pub approvals: ApprovalsConfig,
    /// What records keep of arguments (`[records]`).
    pub records: RecordsConfig,
    /// The events outbox (`[events]`).
    pub events: EventsConfig,
    /// Webhook delivery (`[webhooks]`).
    pub webhooks: WebhooksConfig,
    /// The OAuth authorization server (`[oauth]`); off by default.
    pub oauth: OAuthConfig,
    /// `mandate witness serve`: a witness for other logs (`[witness]`).
    pub witness: WitnessConfig,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data_dir: PathBuf::from("./.mandate"),
            database: DatabaseConfig::default(),
            key_file: None,
            issuer: "mandate".to_owned(),
            public_url: None,
            agent_auth: AgentAuth::Jti,
            readers: 4,
            query_budget_ms: DEFAULT_QUERY_BUDGET_MS,
            header_read_timeout_ms: NonZeroU64::new(10_000).unwrap_or(NonZeroU64::MIN),
            max_batch: 512,
            rate_limits: RateLimits::default(),
            trusted_proxies: Vec::new(),
            metrics_open_on_loopback: true,
            oidc: Oidc::default(),
            verifier: Vec::new(),
            log: LogConfig::default(),
            status: StatusConfig::default(),
            otel: OtelConfig::default(),
            approvals: ApprovalsConfig::default(),
            records: RecordsConfig::default(),
            events: EventsConfig::default(),
            webhooks: WebhooksConfig::default(),
            oauth: OAuthConfig::default(),
            witness: WitnessConfig::default(),
        }
    }
}

impl Config {
    /// Reads a TOML file; unknown keys are refused. Relative file names in
    /// it are taken from the file's folder.
    pub fn from_file(path: &Path) -> anyhow::Result<Config> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read config {}: {e}", path.display()))?;
        let mut config: Config = toml::from_str(&text)
            .map_err(|e| anyhow::anyhow!("invalid config {}: {e}", path.display()))?;
        if let Some(url) = &config.public_url
            && mandate_core::dpop::normalize_url(url).is_none()
        {
            anyhow::bail!(
                "invalid config {}: public_url must be an absolute http(s) URL without user information",
                path.display()
            );
        }
        if config.approvals.ttl_seconds.get() > MAX_APPROVAL_TTL_SECONDS {
            anyhow::bail!(
                "invalid config {}: [approvals] ttl_seconds may be at most {MAX_APPROVAL_TTL_SECONDS}",
                path.display()
            );
        }
        config
            .records
            .redactions()
            .map_err(|e| anyhow::anyhow!("invalid config {}: {e}", path.display()))?;
        if config.events.retain_hours.get() < 24 {
            anyhow::bail!(
                "invalid config {}: [events] retain_hours must be at least 24 (the webhook retry window)",
                path.display()
            );
        }
        let base = path.parent().unwrap_or_else(|| Path::new("."));
        if let Some(file) = &mut config.key_file {
            *file = base.join(&*file);
        }
        if let Some(file) = &mut config.database.ca_file {
            *file = base.join(&*file);
        }
        for issuer in &mut config.oidc.issuer {
            if let Some(file) = &mut issuer.jwks_file {
                *file = base.join(&*file);
            }
        }
        for verifier in &mut config.verifier {
            verifier.resolve(base);
        }
        for file in &mut config.oauth.client_documents.extra_roots {
            *file = base.join(&*file);
        }
        Ok(config)
    }

    /// The key file in force: the configured one, else [`KEY_FILE`] in the
    /// data folder.
    pub fn key_file_path(&self) -> PathBuf {
        self.key_file
            .clone()
            .unwrap_or_else(|| self.data_dir.join(KEY_FILE))
    }

    /// The database in force: `[database] url`, else SQLite in the data
    /// folder.
    pub fn database(&self) -> anyhow::Result<Database> {
        match &self.database.url {
            Some(url) => Database::from_url(
                url,
                self.database.ca_file.as_deref(),
                self.database.pooler == Pooler::Transaction,
            ),
            None => Ok(Database::Sqlite(self.data_dir.join(DB_FILE))),
        }
    }

    /// What must hold before the server starts, whichever way the
    /// configuration was assembled (file, flags, a test): `[oauth]`'s
    /// bounds and, with it on, its issuer (see [`check_oauth_issuer`]);
    /// `[log]`'s witnesses, threshold and cadence (see
    /// [`LogConfig::witness_set`]); `[events]`'s heartbeat; the OIDC
    /// sign-in providers (see [`Oidc::check_sign_in`]); `public_url` an absolute http(s) URL,
    /// and set when the server listens on every interface (see
    /// [`check_public_url`]).
    pub fn check(&self) -> anyhow::Result<()> {
        self.oauth.check_bounds()?;
        self.log.witness_set()?;
        if !(1..=MAX_HEARTBEAT_SECONDS).contains(&self.events.heartbeat_seconds) {
            anyhow::bail!(
                "[events] heartbeat_seconds must be 1 to {MAX_HEARTBEAT_SECONDS} (the SDKs take 45 s of silence for a dead stream)"
            );
        }
        if self.oauth.enabled {
            check_oauth_issuer(self.public_url.as_deref(), &self.issuer)?;
        }
        self.oidc.check_sign_in(self.oauth.enabled)?;
        let documents = &self.oauth.client_documents;
        if (documents.allow_loopback || !documents.extra_roots.is_empty())
            && !self.listen.ip().is_loopback()
        {
            anyhow::bail!(
                "[oauth.client_documents] allow_loopback and extra_roots are for tests: they need the server to listen on a loopback address, not {}",
                self.listen
            );
        }
        check_public_url(self.listen, self.public_url.as_deref())
    }

    /// `header_read_timeout_ms` as a duration.
    pub fn header_read_timeout(&self) -> Duration {
        Duration::from_millis(self.header_read_timeout_ms.get())
    }

    /// `query_budget_ms` as a duration.
    pub fn query_budget(&self) -> Duration {
        Duration::from_millis(self.query_budget_ms.get())
    }

    /// A configuration for tests: port 0 on loopback, the given folder.
    pub fn for_test(data_dir: &Path) -> Config {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: data_dir.to_path_buf(),
            ..Config::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses_unknown_keys() {
        let config: Config = toml::from_str(
            "listen = \"0.0.0.0:9000\"\nagent_auth = \"bearer\"\n[rate_limits]\nper_token = 5\n",
        )
        .unwrap();
        assert_eq!(config.listen.port(), 9000);
        assert_eq!(config.agent_auth, AgentAuth::Bearer);
        assert_eq!(Config::default().agent_auth, AgentAuth::Jti);
        assert!(toml::from_str::<Config>("agent_auth = \"api_key\"").is_err());
        assert_eq!(config.rate_limits.per_token, 5);
        assert_eq!(config.rate_limits.per_api_key, 1000);
        assert!(toml::from_str::<Config>("lisen = \"x\"").is_err());
    }

    #[test]
    fn records_keep_args_by_default_and_refuse_a_redaction_that_is_no_selector() {
        assert!(Config::default().records.keep_args);
        let config: Config = toml::from_str(
            "[records]\nkeep_args = false\nredact_args = [\".password\", \".cards[].number\"]\n",
        )
        .unwrap();
        assert!(!config.records.keep_args);
        assert_eq!(config.records.redactions().unwrap().len(), 2);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mandate.toml");
        std::fs::write(&file, "[records]\nredact_args = [\"password\"]\n").unwrap();
        let refused = Config::from_file(&file).unwrap_err().to_string();
        assert!(refused.contains("redact_args"), "{refused}");
    }

    #[test]
    fn the_key_file_defaults_to_the_data_folder_and_follows_the_config_file() {
        let config = Config::for_test(Path::new("data"));
        assert_eq!(config.key_file_path(), Path::new("data").join(KEY_FILE));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mandate.toml");
        std::fs::write(&file, "key_file = \"secrets/kek\"\n").unwrap();
        let config = Config::from_file(&file).unwrap();
        assert_eq!(config.key_file_path(), dir.path().join("secrets/kek"));
    }

    #[test]
    fn witnessed_logs_need_keys_of_logs_and_one_entry_an_origin() {
        let log = mandate_core::tlog::NoteSigner::new(&[1; 32], "log.example/a").unwrap();
        let witness =
            mandate_core::tlog::WitnessSigner::new(&[2; 32], "witness.example/w").unwrap();
        let parse = |logs: &str| {
            toml::from_str::<Config>(&format!("[witness]\nname = \"witness.example/w\"\n{logs}"))
                .unwrap()
                .witness
                .witnessed_logs()
                .map_err(|e| e.to_string())
        };
        let entry = |origin: &str, vkeys: &str| {
            format!("[[witness.log]]\norigin = \"{origin}\"\nvkeys = [{vkeys}]\n")
        };
        let good = entry("log.example/a", &format!("\"{}\"", log.vkey()));
        let logs = parse(&good).unwrap();
        assert_eq!(logs["log.example/a"].len(), 1);
        assert!(parse("").unwrap().is_empty());
        let refused = parse(&format!("{good}{good}")).unwrap_err();
        assert!(refused.contains("listed twice"), "{refused}");
        let refused = parse(&entry("log.example/b", "")).unwrap_err();
        assert!(refused.contains("give its vkeys"), "{refused}");
        // A witness's vkey (type 0x04) is no log key.
        let refused =
            parse(&entry("log.example/c", &format!("\"{}\"", witness.vkey()))).unwrap_err();
        assert!(refused.contains("is not a log's vkey"), "{refused}");
        assert!(toml::from_str::<Config>("[witness]\nnmae = \"x\"").is_err());
        assert!(toml::from_str::<Config>("[witness]\nrequest_timeout_ms = 0").is_err());
        let defaults = WitnessConfig::default();
        assert_eq!(defaults.listen.port(), 8090);
        assert_eq!(defaults.request_timeout(), Duration::from_secs(10));
    }

    #[test]
    fn log_witnesses_are_checked_at_start() {
        let w1 = mandate_core::tlog::WitnessSigner::new(&[3; 32], "witness.example/w1").unwrap();
        let w2 = mandate_core::tlog::WitnessSigner::new(&[4; 32], "witness.example/w2").unwrap();
        let log = mandate_core::tlog::NoteSigner::new(&[1; 32], "log.example/a").unwrap();
        let parse = |section: &str| {
            let config: Config = toml::from_str(&format!("[log]\n{section}")).unwrap();
            config.check().map_err(|e| e.to_string())?;
            config.log.witness_set().map_err(|e| e.to_string())
        };
        let entry = |url: &str, vkey: &str| format!("{{ url = \"{url}\", vkey = \"{vkey}\" }}");
        let two = format!(
            "witnesses = [{}, {}]\n",
            entry("https://w1.example/", &w1.vkey()),
            entry("http://127.0.0.1:8090", &w2.vkey())
        );
        let (witnesses, threshold) = parse(&format!("{two}witness_threshold = 2\n"))
            .unwrap()
            .unwrap();
        assert_eq!(threshold, 2);
        assert_eq!(witnesses[0].url.as_str(), "https://w1.example/");
        assert_eq!(witnesses[1].verifier.name(), "witness.example/w2");
        assert!(parse("").unwrap().is_none());
        assert_eq!(
            LogConfig::default().checkpoint_interval_ms,
            NonZeroU64::new(1000).unwrap()
        );
        assert_eq!(
            LogConfig::default().cosignature_refresh_seconds,
            NonZeroU64::new(600).unwrap()
        );
        for (section, message) in [
            (format!("{two}witness_threshold = 3\n"), "can never be met"),
            (format!("{two}witness_threshold = 0\n"), "threshold of 0"),
            (two.clone(), "need witness_threshold"),
            ("witness_threshold = 1\n".into(), "without witnesses"),
            (
                format!("{two}witness_threshold = 1\nenabled = false\n"),
                "log enabled",
            ),
            (
                format!("{two}witness_threshold = 1\ncheckpoint_interval_ms = 50\n"),
                "between 100",
            ),
            (
                format!("{two}witness_threshold = 1\ncosignature_refresh_seconds = 9\n"),
                "cosignature_refresh_seconds must be between 10",
            ),
            (
                format!("{two}witness_threshold = 1\ncosignature_refresh_seconds = 86401\n"),
                "cosignature_refresh_seconds must be between 10",
            ),
            (
                format!(
                    "witnesses = [{}]\nwitness_threshold = 1\n",
                    entry("http://w1.example", &w1.vkey())
                ),
                "must be an https URL",
            ),
            (
                format!(
                    "witnesses = [{}]\nwitness_threshold = 1\n",
                    entry("https://w1.example/?q=1", &w1.vkey())
                ),
                "must be an https URL",
            ),
            // A log's key (type 0x01) is no witness's.
            (
                format!(
                    "witnesses = [{}]\nwitness_threshold = 1\n",
                    entry("https://w1.example", &log.vkey())
                ),
                "is not a witness's vkey",
            ),
            (
                format!(
                    "witnesses = [{}, {}]\nwitness_threshold = 1\n",
                    entry("https://w1.example", &w1.vkey()),
                    entry("https://w2.example", &w1.vkey())
                ),
                "named twice",
            ),
        ] {
            let refused = parse(&section).unwrap_err();
            assert!(refused.contains(message), "{section}: {refused}");
        }
        assert!(toml::from_str::<Config>("[log]\nwitnesses = [{ url = \"https://a\" }]").is_err());
    }

    #[test]
    fn the_query_budget_is_a_positive_number_of_milliseconds() {
        assert_eq!(Config::default().query_budget(), Duration::from_millis(500));
        let config: Config = toml::from_str("query_budget_ms = 250").unwrap();
        assert_eq!(config.query_budget(), Duration::from_millis(250));
        assert!(toml::from_str::<Config>("query_budget_ms = 0").is_err());
        assert!(toml::from_str::<Config>("query_budget_ms = -1").is_err());
    }

    #[test]
    fn otel_is_off_by_default_and_hides_its_header_values() {
        let config = Config::default();
        assert_eq!(config.otel.endpoint, None);
        assert_eq!(config.otel.service_name, "mandate");
        assert_eq!(config.otel.timeout(), Duration::from_secs(10));
        let config: Config = toml::from_str(
            r#"
            [otel]
            endpoint = "http://collector:4318"
            headers = { authorization = "Bearer sekrit" }
            timeout_ms = 2500
            "#,
        )
        .unwrap();
        assert_eq!(
            config.otel.endpoint.as_deref(),
            Some("http://collector:4318")
        );
        assert_eq!(config.otel.service_name, "mandate");
        assert_eq!(config.otel.timeout(), Duration::from_millis(2500));
        let shown = format!("{config:?}");
        assert!(shown.contains("authorization") && !shown.contains("sekrit"));
        assert!(toml::from_str::<Config>("[otel]\nendpiont = \"x\"").is_err());
        assert!(toml::from_str::<Config>("[otel]\ntimeout_ms = 0").is_err());
    }

    fn sign_in_config(oauth: bool, names: &[&str]) -> anyhow::Result<Config> {
        let mut text = String::from("listen = \"127.0.0.1:0\"\n");
        if oauth {
            text.push_str("public_url = \"https://mandate.example\"\nissuer = \"https://mandate.example\"\n[oauth]\nenabled = true\n");
        }
        for (index, name) in names.iter().enumerate() {
            text.push_str(&format!(
                "[[oidc.issuer]]\nissuer = \"https://idp{index}.example\"\naudience = \"mandate\"\n[oidc.issuer.sign_in]\nclient_secret = \"sekrit\"\nname = \"{name}\"\n"
            ));
        }
        let config = toml::from_str::<Config>(&text)?;
        config.check()?;
        Ok(config)
    }

    #[test]
    fn sign_in_providers_need_oauth_and_their_own_name() {
        let config = sign_in_config(true, &["corp", "Partner_2-x"]).unwrap();
        let sign_in = config.oidc.issuer[0].sign_in.as_ref().unwrap();
        assert_eq!(sign_in.org, "default");
        let error = sign_in_config(false, &["corp"]).unwrap_err();
        assert!(
            error.to_string().contains("needs [oauth] enabled"),
            "{error}"
        );
        let twice = sign_in_config(true, &["corp", "corp"]).unwrap_err();
        assert!(twice.to_string().contains("another provider's"), "{twice}");
        let long = "x".repeat(MAX_SIGN_IN_NAME + 1);
        for name in ["", "a/b", "a b", "../x", "a?x=1", "é", long.as_str()] {
            let error = sign_in_config(true, &[name]).unwrap_err();
            assert!(error.to_string().contains("must be 1–"), "{name}: {error}");
        }
        let shown = toml::to_string(&config).unwrap();
        assert!(
            shown.contains(REDACTED) && !shown.contains("sekrit"),
            "{shown}"
        );
        assert!(toml::from_str::<Config>("[[oidc.issuer]]\nissuer = \"x\"\naudience = \"m\"\n[oidc.issuer.sign_in]\nname = \"a\"\nredirect_path = \"/v1/oauth/oidc/a\"\n").is_err());
    }

    #[test]
    fn assurance_sections() {
        let config: Config = toml::from_str(
            r#"
            [[oidc.issuer]]
            issuer = "https://idp.example"
            audience = "mandate"
            jwks_uri = "https://idp.example/jwks"

            [[verifier]]
            kind = "plugin"
            name = "reference"
            module = "reference.wasm"

            [[verifier]]
            kind = "provider"
            name = "acme"
            issuer = "https://idv.acme.example"
            jwks_file = "acme.json"
            "#,
        )
        .unwrap();
        assert_eq!(config.oidc.issuer[0].audience, "mandate");
        assert!(!config.oidc.issuer[0].allow_insecure_http);
        assert_eq!(config.verifier[0].name(), "reference");
        assert!(matches!(
            config.verifier[0],
            Verifier::Plugin {
                fuel: 50_000_000,
                ..
            }
        ));
        assert!(matches!(config.verifier[1], Verifier::Provider { .. }));
        assert!(toml::from_str::<Config>("[[verifier]]\nkind = \"magic\"\nname = \"x\"").is_err());
        assert!(config.oidc.issuer[0].sign_in.is_none());
    }

    #[test]
    fn oauth_is_off_by_default_and_refuses_unknown_keys() {
        let config = Config::default();
        assert!(!config.oauth.enabled);
        assert_eq!(config.oauth.access_token_ttl_seconds.get(), 900);
        assert_eq!(config.oauth.code_ttl_seconds.get(), 60);
        assert_eq!(config.oauth.client_documents.max_bytes.get(), 5120);
        config.check().unwrap();
        let config: Config = toml::from_str(
            "issuer = \"https://mandate.example\"\npublic_url = \"https://mandate.example\"\n\
             [oauth]\nenabled = true\naccess_token_ttl_seconds = 300\n\
             [oauth.client_documents]\ntimeout_ms = 2000\n",
        )
        .unwrap();
        assert!(config.oauth.enabled);
        assert_eq!(config.oauth.access_token_ttl_seconds.get(), 300);
        assert_eq!(config.oauth.client_documents.timeout_ms.get(), 2000);
        config.check().unwrap();
        assert!(toml::from_str::<Config>("[oauth]\nenabeld = true").is_err());
        assert!(toml::from_str::<Config>("[oauth.client_documents]\nmax = 1").is_err());
        assert!(toml::from_str::<Config>("[oauth]\ncode_ttl_seconds = 0").is_err());
    }

    #[test]
    fn oauth_lifetimes_are_bounded() {
        for (option, text) in [
            ("code_ttl_seconds", "code_ttl_seconds = 601"),
            (
                "access_token_ttl_seconds",
                "access_token_ttl_seconds = 86401",
            ),
            ("request_ttl_seconds", "request_ttl_seconds = 3601"),
            ("refresh_idle_days", "refresh_idle_days = 31"),
        ] {
            let config: Config = toml::from_str(&format!("[oauth]\n{text}")).unwrap();
            let refused = config.check().unwrap_err().to_string();
            assert!(refused.contains(option), "{refused}");
        }
        let config: Config =
            toml::from_str("[oauth.client_documents]\ncache_min_s = 10\ncache_max_s = 5").unwrap();
        assert!(
            config
                .check()
                .unwrap_err()
                .to_string()
                .contains("cache_min_s")
        );
    }

    /// RFC 8414 §2 (https, no query or fragment), §3.3 (the issuer is
    /// compared byte for byte), and F1 of the OAuth plan: tokens' `iss` is
    /// `issuer`, so it must be the public URL.
    #[test]
    fn oauth_needs_an_https_public_url_equal_to_the_issuer() {
        let start = |public_url: Option<&str>, issuer: &str| {
            let mut config = Config::for_test(Path::new("data"));
            config.oauth = OAuthConfig::for_test();
            config.public_url = public_url.map(str::to_owned);
            config.issuer = issuer.to_owned();
            config.check().map_err(|e| e.to_string())
        };
        for accepted in [
            "https://mandate.example",
            "https://mandate.example/tenant",
            "https://mandate.example:8443",
            "http://127.0.0.1:8080",
            "http://[::1]:8080",
        ] {
            assert_eq!(start(Some(accepted), accepted), Ok(()), "{accepted}");
        }
        for (public_url, issuer, says) in [
            (None, "mandate", "needs public_url"),
            (
                Some("http://mandate.example"),
                "http://mandate.example",
                "https",
            ),
            (
                Some("http://localhost:8080"),
                "http://localhost:8080",
                "https",
            ),
            (Some("http://10.0.0.1"), "http://10.0.0.1", "https"),
            (
                Some("ftp://mandate.example"),
                "ftp://mandate.example",
                "https",
            ),
            (
                Some("https://mandate.example/"),
                "https://mandate.example/",
                "slash",
            ),
            (
                Some("https://mandate.example?a=1"),
                "https://mandate.example?a=1",
                "query",
            ),
            (
                Some("https://mandate.example#x"),
                "https://mandate.example#x",
                "fragment",
            ),
            (
                Some("https://u:p@mandate.example"),
                "https://u:p@mandate.example",
                "user",
            ),
            (
                Some("https://mandate.example"),
                "mandate",
                "must equal public_url",
            ),
            (
                Some("https://mandate.example"),
                "https://mandate.example/",
                "must equal public_url",
            ),
            (
                Some("https://mandate.example"),
                "https://MANDATE.example",
                "must equal public_url",
            ),
        ] {
            let refused = start(public_url, issuer).unwrap_err();
            assert!(refused.contains(says), "{public_url:?} {issuer}: {refused}");
            assert!(refused.starts_with("[oauth] enabled"), "{refused}");
        }
        let mut off = Config::for_test(Path::new("data"));
        off.public_url = Some("http://mandate.example".to_owned());
        off.check().unwrap();
    }
}
