//! `mandate`: the server and its operator commands.

use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use mandate_core::{OrgId, Role};
use mandate_host::clock::Clock;
use mandate_host::config::Config;
use mandate_host::ledger::{Ledger, LogSetup, NewOrg, create_org};
use mandate_host::recordlog;
use mandate_host::secrets::Kek;
use mandate_host::store::{Connection, orgs};
use mandate_host::{apikeys, key_leases, keyring, setup, store, transfer};

/// mimalloc: the server allocates small, short-lived buffers per request on
/// several threads, where it beats the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "mandate",
    version,
    about = "Delegated, accountable authority for AI agents"
)]
struct Cli {
    /// Folder of the database and the admin key [default: ./.mandate]
    #[arg(long, global = true, env = "MANDATE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// TOML configuration file
    #[arg(long, global = true, env = "MANDATE_CONFIG")]
    config: Option<PathBuf>,
    /// File of the key that encrypts the signing keys and the human-reference
    /// secret in the database; created (0600) on first start [default:
    /// key-encryption.key in the data folder]
    #[arg(long, global = true, env = "MANDATE_KEY_FILE")]
    key_file: Option<PathBuf>,
    /// PostgreSQL URL (postgres://user:password@host:port/database), shared
    /// by any number of hosts [default: SQLite in the data folder]
    #[arg(long = "database", global = true, env = "MANDATE_DATABASE_URL")]
    database_url: Option<String>,
    /// PEM file of the authorities that may sign the PostgreSQL server's
    /// certificate [default: the system's]
    #[arg(long, global = true, env = "MANDATE_DATABASE_CA_FILE")]
    database_ca_file: Option<PathBuf>,
    /// What stands between the hosts and PostgreSQL: none, or a pooler in
    /// transaction mode (PgBouncer's `pool_mode = transaction`) [default:
    /// none]
    #[arg(long, global = true, env = "MANDATE_DATABASE_POOLER")]
    database_pooler: Option<mandate_host::config::Pooler>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the API (and the dashboard, when built)
    Serve {
        /// Address to listen on [default: 127.0.0.1:8080]
        #[arg(long, env = "MANDATE_LISTEN")]
        listen: Option<SocketAddr>,
        /// The address clients reach this server at (public_url); needed
        /// when listening on every interface
        #[arg(long, env = "MANDATE_PUBLIC_URL")]
        public_url: Option<String>,
    },
    /// Create or upgrade the database's schema (and, on first use, the
    /// deployment's keys), then exit
    Migrate,
    /// Write every row of the database to FILE (JSON Lines, mode 0600; the
    /// secrets in it stay sealed under the key file, which it does not hold)
    Export { file: PathBuf },
    /// Load an export into a new database (e.g. --database postgres://…),
    /// in one transaction; its hosts need the key file of the source
    Import { file: PathBuf },
    /// Manage organisations
    Orgs {
        #[command(subcommand)]
        command: OrgsCommand,
    },
    /// Manage API keys
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Manage the token signing key
    SigningKey {
        #[command(subcommand)]
        command: SigningKeyCommand,
    },
    /// Manage the keys that sign the record log's checkpoints
    LogKey {
        #[command(subcommand)]
        command: LogKeyCommand,
    },
    /// Check the record log (docs/log.md)
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Check a configuration file, or print the configuration reference
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Ask the server on this machine whether it takes writes (GET /readyz
    /// on the listen address, loopback for every interface); exits 0 only
    /// on a 200 within 5 s. For a container's health check, which has no
    /// shell tools
    Healthcheck {
        /// The address the server listens on, as `mandate serve --listen`
        /// [default: 127.0.0.1:8080]
        #[arg(long, env = "MANDATE_LISTEN")]
        listen: Option<SocketAddr>,
    },
    /// Witness other deployments' record logs (C2SP tlog-witness;
    /// `[witness]`, docs/log.md)
    Witness {
        #[command(subcommand)]
        command: WitnessCommand,
    },
}

#[derive(Debug, Subcommand)]
enum WitnessCommand {
    /// Serve `add-checkpoint` for the logs of `[[witness.log]]`; the
    /// witness's key (witness.key) and state (witness.db) are in the data
    /// folder, made at the first start
    Serve {
        /// Address the witness listens on (`mandate witness serve
        /// --listen`) [default: 127.0.0.1:8090]
        #[arg(long, env = "MANDATE_WITNESS_LISTEN")]
        listen: Option<SocketAddr>,
    },
    /// Print the witness's verifier key (making its key on first use), for
    /// the logs it witnesses to configure
    Vkey,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Read FILE as `mandate serve` would (with the flags and environment
    /// variables that override it) and print the configuration it resolves
    /// to, secrets redacted; exits non-zero naming the first mistake
    Check {
        file: PathBuf,
        /// Address to listen on, as `mandate serve --listen` [default:
        /// 127.0.0.1:8080]
        #[arg(long, env = "MANDATE_LISTEN")]
        listen: Option<SocketAddr>,
        /// The address clients reach the server at, as `mandate serve
        /// --public-url`
        #[arg(long, env = "MANDATE_PUBLIC_URL")]
        public_url: Option<String>,
    },
    /// Print the configuration reference (docs/configuration.md): every
    /// option, its type, its default, its environment variable
    Reference,
}

#[derive(Debug, Subcommand)]
enum LogKeyCommand {
    /// Add a new log key: from the next checkpoint on it signs beside the
    /// keys already signing; retire the old one once monitors trust the new
    Rotate,
    /// Stop a log key from signing (it stays published: the checkpoints it
    /// signed still verify); the last signing key cannot be retired
    Retire {
        /// The key's verifier key, as `GET /v1/log/key` lists it
        vkey: String,
    },
}

#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// Recompute the record log from the database — every leaf from the
    /// stored records and tokens, the tree from the leaves — and check every
    /// checkpoint ever signed; exits non-zero naming the first difference
    Verify,
    /// Follow a deployment's checkpoints (checking each new one's
    /// signature and its consistency with the last) and alert on a fork
    Watch {
        /// The deployment's address, e.g. https://mandate.example
        url: String,
        /// A verifier key of its log to trust (`GET /v1/log/key`; give it
        /// from a source other than the deployment itself)
        #[arg(long, required = true)]
        vkey: Vec<String>,
        /// Seconds between two checks
        #[arg(long, default_value_t = 10)]
        interval: u64,
        /// File that keeps the last checkpoint trusted, between runs
        #[arg(long)]
        state: Option<PathBuf>,
        /// Check once and exit (0: consistent, 1: a fork or an invalid
        /// checkpoint)
        #[arg(long)]
        once: bool,
        /// A witness policy file (TOML: `witnesses = ["<vkey>", …]`,
        /// `threshold`, `max_age_seconds`): trust a checkpoint only with
        /// `threshold` fresh cosignatures of those witnesses (docs/log.md)
        #[arg(long)]
        witness_policy: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum OrgsCommand {
    /// Create an organisation and its first owner key; the key is shown once
    Create {
        /// 1-64 of a-z 0-9 . _ -, starting with a letter or digit
        name: String,
        /// The e-mail of the owner key
        #[arg(long)]
        owner_email: Option<String>,
        /// Most records the organisation may write per UTC day
        #[arg(long)]
        records_per_day: Option<u64>,
        /// Most tokens it may hold neither revoked nor expired
        #[arg(long)]
        tokens_outstanding: Option<u64>,
    },
    /// List organisations
    List,
}

#[derive(Debug, Subcommand)]
enum KeysCommand {
    /// Create an API key; it is shown once
    Create {
        /// Whose key it is; a developer key may issue tokens only for this
        /// address (required for a developer)
        #[arg(long)]
        email: Option<String>,
        /// The organisation, by name or id
        #[arg(long, default_value = "default")]
        org: String,
        /// owner, developer, reviewer or auditor
        #[arg(long, default_value = "developer")]
        role: Role,
    },
    /// List keys (never the keys themselves)
    List {
        /// Only this organisation's, by name or id
        #[arg(long)]
        org: Option<String>,
    },
    /// Revoke a key by id
    Revoke { id: String },
}

#[derive(Debug, Subcommand)]
enum SigningKeyCommand {
    /// Sign new tokens with a new key; old keys stay published until their tokens expire
    Rotate,
    /// Retire a compromised key at once: it leaves the published keys, and
    /// every token it signed (and every descendant) is revoked; revoking the
    /// active key rotates first
    Revoke {
        /// The key's kid, as the JWKS lists it (base64url: it may begin
        /// with `-`)
        #[arg(allow_hyphen_values = true)]
        kid: String,
    },
}

fn config(cli: &Cli) -> anyhow::Result<Config> {
    let file = match &cli.command {
        Command::Config {
            command: ConfigCommand::Check { file, .. },
        } => Some(file),
        // The reference is the types' own, whatever file is configured.
        Command::Config {
            command: ConfigCommand::Reference,
        } => None,
        _ => cli.config.as_ref(),
    };
    let mut config = match file {
        Some(path) => Config::from_file(path)?,
        None => Config::default(),
    };
    if let Some(dir) = &cli.data_dir {
        config.data_dir.clone_from(dir);
    }
    if let Some(file) = &cli.key_file {
        config.key_file = Some(file.clone());
    }
    if let Some(url) = &cli.database_url {
        config.database.url = Some(url.clone());
    }
    if let Some(file) = &cli.database_ca_file {
        config.database.ca_file = Some(file.clone());
    }
    if let Some(pooler) = cli.database_pooler {
        config.database.pooler = pooler;
    }
    if let Command::Serve { listen, public_url }
    | Command::Config {
        command: ConfigCommand::Check {
            listen, public_url, ..
        },
    } = &cli.command
    {
        if let Some(listen) = listen {
            config.listen = *listen;
        }
        if let Some(url) = public_url {
            config.public_url = Some(url.clone());
        }
    }
    if let Command::Healthcheck {
        listen: Some(listen),
    } = &cli.command
    {
        config.listen = *listen;
    }
    if let Command::Witness {
        command: WitnessCommand::Serve {
            listen: Some(listen),
        },
    } = &cli.command
    {
        config.witness.listen = *listen;
    }
    Ok(config)
}

/// `mandate config check`: the checks a start makes before it reads or
/// writes anything (the loader's, [`Config::check`]'s, the database URL's,
/// the OpenTelemetry headers'), then the configuration, secrets redacted.
fn check_config(config: &Config) -> anyhow::Result<()> {
    config.check()?;
    config.database()?;
    mandate_host::otel::validate(&config.otel)?;
    config.witness.witnessed_logs()?;
    say(mandate_host::configdoc::resolved(config)?.trim_end());
    Ok(())
}

/// How long `mandate healthcheck` waits for the answer.
const HEALTHCHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// `mandate healthcheck`: `GET /readyz` on this machine's server (the
/// database takes writes); fails, saying why, on anything but a 200.
fn healthcheck(config: &Config) -> anyhow::Result<()> {
    let url = format!(
        "http://{}/readyz",
        mandate_host::local_address(config.listen)
    );
    mandate_host::install_tls_provider();
    let answer = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(async {
            reqwest::Client::builder()
                .no_proxy()
                .timeout(HEALTHCHECK_TIMEOUT)
                .build()?
                .get(&url)
                .send()
                .await
        });
    match answer {
        Ok(answer) if answer.status() == reqwest::StatusCode::OK => {
            say(&format!("{url}: ready"));
            Ok(())
        }
        Ok(answer) => anyhow::bail!("{url} answered {}", answer.status()),
        Err(error) => anyhow::bail!("{url}: {error}"),
    }
}

/// Values tried for a flag when finding what it sets: an address first
/// (the only flag that needs one), then anything else, then the one value
/// of `--database-pooler` that is not its default.
const FLAG_SAMPLES: [&str; 3] = [
    "198.51.100.7:9",
    "postgres://sample@example.invalid/db",
    "transaction",
];

/// Every environment variable the server reads, with the option each sets:
/// the flags' own (as clap declares them), each tried with a value and the
/// configuration [`config`] resolves compared with the one it resolves
/// without — the option that changes is the one it sets — and the log
/// filter's.
fn env_variables() -> Vec<mandate_host::configdoc::EnvVariable> {
    use clap::CommandFactory as _;
    let command = Cli::command();
    let subcommand = |path: &[&'static str]| {
        let mut found = Some(&command);
        for name in path {
            found = found.and_then(|c| c.find_subcommand(name));
        }
        found.map(|c| {
            (
                path.to_vec(),
                c.get_arguments().cloned().collect::<Vec<_>>(),
            )
        })
    };
    let global = command
        .get_arguments()
        .map(|arg| (arg.clone(), vec!["serve"], true));
    let local: Vec<_> = [subcommand(&["serve"]), subcommand(&["witness", "serve"])]
        .into_iter()
        .flatten()
        .flat_map(|(path, args)| args.into_iter().map(move |arg| (arg, path.clone(), false)))
        .collect();
    let resolve = |argv: &[&str]| {
        let cli = Cli::try_parse_from(argv).ok()?;
        serde_json::to_value(config(&cli).ok()?).ok()
    };
    let mut variables: Vec<_> = global
        .chain(local)
        .filter_map(|(arg, path, global)| {
            let name = arg.get_env()?.to_string_lossy().into_owned();
            let flag = format!("--{}", arg.get_long()?);
            let option = FLAG_SAMPLES.iter().find_map(|sample| {
                let mut argv = vec!["mandate"];
                if global {
                    argv.extend([flag.as_str(), sample]);
                    argv.extend(&path);
                } else {
                    argv.extend(&path);
                    argv.extend([flag.as_str(), sample]);
                }
                let before = resolve(&[&["mandate"][..], &path].concat())?;
                let after = resolve(&argv)?;
                let changed = changed_options(&before, &after, "");
                (changed.len() == 1).then(|| changed.concat())
            });
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            Some(mandate_host::configdoc::EnvVariable {
                name,
                flag: Some(flag),
                option,
                help,
            })
        })
        .collect();
    variables.push(mandate_host::configdoc::EnvVariable {
        name: tracing_subscriber::EnvFilter::DEFAULT_ENV.to_owned(),
        flag: None,
        option: None,
        help: format!("What the log shows, as tracing's filter directives [default: {LOG_FILTER}]"),
    });
    variables
}

/// The options (`a.b`) whose values differ between two configurations.
fn changed_options(
    before: &serde_json::Value,
    after: &serde_json::Value,
    path: &str,
) -> Vec<String> {
    match (before, after) {
        (serde_json::Value::Object(before), serde_json::Value::Object(after)) => after
            .iter()
            .flat_map(|(name, value)| {
                let option = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                match before.get(name) {
                    Some(old) => changed_options(old, value, &option),
                    None => vec![option],
                }
            })
            .collect(),
        (before, after) if before == after => Vec::new(),
        _ => vec![path.to_owned()],
    }
}

/// The log filter when `RUST_LOG` is unset.
const LOG_FILTER: &str = "info";

/// The database, the key that opens its secrets, and the record log's
/// name and keys.
fn operator_connection(
    config: &Config,
) -> anyhow::Result<(Connection, Arc<Kek>, recordlog::Prepared)> {
    let database = config.database()?;
    let prepared = setup::prepare(config, &database, Clock::system().now())?;
    if let Some(key) = prepared.new_admin_key {
        let to_terminal = std::io::stdout().is_terminal();
        say(&format!(
            "created the data folder; {}",
            setup::admin_key_notice(&config.data_dir, &key, to_terminal)
        ));
    }
    Ok((database.open_writer()?, prepared.kek, prepared.log))
}

/// A ledger on the operator's connection, logging as the server does.
fn operator_ledger(config: &Config) -> anyhow::Result<(Ledger, Arc<Kek>)> {
    let (conn, kek, log) = operator_connection(config)?;
    let setup = LogSetup {
        enabled: config.log.enabled,
        origin: log.origin,
        keys: log.keys,
    };
    Ok((Ledger::new(conn, setup), kek))
}

fn migrate(config: &Config) -> anyhow::Result<()> {
    let (conn, _, _) = operator_connection(config)?;
    conn.close()?;
    say(&format!(
        "the {} is at schema version {}",
        config.database()?.describe(),
        store::SCHEMA_VERSION
    ));
    Ok(())
}

fn export(config: &Config, file: &std::path::Path) -> anyhow::Result<()> {
    let database = config.database()?;
    let conn = database.open_writer()?;
    let out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(file)
        .map_err(|e| {
            anyhow::anyhow!("cannot create {} (it must not exist): {e}", file.display())
        })?;
    let rows = transfer::export(&conn, &mut std::io::BufWriter::new(out))?;
    conn.close()?;
    say(&format!(
        "exported {rows} rows of the {} to {}",
        database.describe(),
        file.display()
    ));
    Ok(())
}

fn import(config: &Config, file: &std::path::Path) -> anyhow::Result<()> {
    let database = config.database()?;
    let input = std::fs::File::open(file)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
    let conn = database.open_writer()?;
    let rows = transfer::import(&conn, std::io::BufReader::new(input))?;
    conn.close()?;
    say(&format!(
        "imported {rows} rows into the {}",
        database.describe()
    ));
    say("start its hosts with the key file of the source (--key-file)");
    Ok(())
}

#[allow(clippy::print_stdout, reason = "operator commands answer on stdout")]
fn say(line: &str) {
    println!("{line}");
}

/// An organisation by name or id.
fn find_org(conn: &Connection, name_or_id: &str) -> anyhow::Result<orgs::OrgRow> {
    let found = match OrgId::parse(name_or_id) {
        Ok(id) => orgs::by_id(conn, id.as_str())?,
        Err(_) => orgs::by_name(conn, name_or_id)?,
    };
    found.ok_or_else(|| anyhow::anyhow!("no organisation is named {name_or_id}"))
}

fn quota(value: Option<u64>) -> String {
    value.map_or_else(|| "unlimited".to_owned(), |n| n.to_string())
}

fn orgs(config: &Config, command: &OrgsCommand) -> anyhow::Result<()> {
    let (conn, _, _) = operator_connection(config)?;
    match command {
        OrgsCommand::Create {
            name,
            owner_email,
            records_per_day,
            tokens_outstanding,
        } => {
            if let Some(email) = owner_email {
                mandate_core::Identity::email(email)?;
            }
            let now = Clock::system().now();
            let new = NewOrg {
                id: OrgId::new(mandate_host::random::ulid(now)),
                name: name.clone(),
                quotas: orgs::Quotas {
                    records_per_day: *records_per_day,
                    tokens_outstanding: *tokens_outstanding,
                },
                owner_email: owner_email.clone(),
            };
            let tx = conn.unchecked_transaction()?;
            let created = create_org(&tx, &new, now).map_err(|e| anyhow::anyhow!("{e}"))?;
            tx.commit()?;
            say(&format!("{} {}", created.org.id, created.org.name));
            say(&format!(
                "{} {} (owner)",
                created.owner.id, created.owner_key
            ));
            say("the key is shown once; store it now");
        }
        OrgsCommand::List => {
            for org in orgs::list(&conn, None, i64::MAX)? {
                say(&format!(
                    "{} {} records_per_day={} tokens_outstanding={}",
                    org.id,
                    org.name,
                    quota(org.quotas.records_per_day),
                    quota(org.quotas.tokens_outstanding)
                ));
            }
        }
    }
    Ok(())
}

fn keys(config: &Config, command: &KeysCommand) -> anyhow::Result<()> {
    let (conn, _, _) = operator_connection(config)?;
    match command {
        KeysCommand::Create { email, org, role } => {
            if let Some(email) = email {
                mandate_core::Identity::email(email)?;
            } else if *role == Role::Developer {
                anyhow::bail!(
                    "a developer key issues tokens for its own e-mail only: give --email"
                );
            }
            let org = find_org(&conn, org)?;
            let new = apikeys::NewKey {
                org: org.org,
                role: *role,
                email: email.as_deref(),
                is_admin: false,
            };
            let (key, secret) = apikeys::create(&conn, new, Clock::system().now())?;
            say(&format!("{} {secret}", key.id));
            say(&format!(
                "a {role} key of {}; the key is shown once; store it now",
                org.name
            ));
        }
        KeysCommand::List { org } => {
            let org = org.as_deref().map(|org| find_org(&conn, org)).transpose()?;
            let names: std::collections::HashMap<_, _> = orgs::list(&conn, None, i64::MAX)?
                .into_iter()
                .map(|org| (org.org, org.name))
                .collect();
            for key in apikeys::list(&conn, org.map(|org| org.org))? {
                let owner = match (&key.email, key.is_admin) {
                    (_, true) => "(admin)".to_owned(),
                    (Some(email), false) => email.clone(),
                    (None, false) => "-".to_owned(),
                };
                let state = if key.revoked_at.is_some() {
                    "revoked"
                } else {
                    "active"
                };
                let org = names.get(&key.org).map_or("?", String::as_str);
                say(&format!("{} {org} {} {owner} {state}", key.id, key.role));
            }
        }
        KeysCommand::Revoke { id } => {
            if apikeys::revoke(&conn, None, id, Clock::system().now())?.is_err() {
                anyhow::bail!("no key has the id {id}");
            }
            // A running server's look-ups of the key end their leases.
            key_leases::settle();
            say(&format!("revoked {id}"));
        }
    }
    Ok(())
}

fn rotate(config: &Config) -> anyhow::Result<()> {
    let (conn, kek, _) = operator_connection(config)?;
    let tx = conn.unchecked_transaction()?;
    let kid = keyring::rotate(&tx, &kek, Clock::system().now())?;
    tx.commit()?;
    say(&format!(
        "new signing key {kid}; a running server picks it up within seconds"
    ));
    Ok(())
}

fn revoke_signing_key(config: &Config, kid: &str) -> anyhow::Result<()> {
    let (mut ledger, kek) = operator_ledger(config)?;
    let now = Clock::system().now();
    let done = ledger.transact(|ledger| ledger.revoke_signing_key(&kek, kid, now))?;
    drop(ledger);
    let Some(done) = done else {
        anyhow::bail!("no signing key has the kid {kid}");
    };
    if let Some(new_kid) = &done.new_kid {
        say(&format!("new signing key {new_kid} signs from now on"));
    }
    let was = if done.already_revoked {
        " (it was revoked before)"
    } else {
        ""
    };
    say(&format!(
        "revoked signing key {kid}{was} and {} tokens it signed or that descend from them",
        done.tokens_revoked
    ));
    say(
        "the tokens are refused at once; a running server signs nothing more with the key and \
         stops publishing it within 10 seconds",
    );
    Ok(())
}

fn log_key(config: &Config, command: &LogKeyCommand) -> anyhow::Result<()> {
    let (conn, kek, log) = operator_connection(config)?;
    let now = Clock::system().now();
    let tx = conn.unchecked_transaction()?;
    match command {
        LogKeyCommand::Rotate => {
            let vkey = recordlog::keys::rotate(&tx, &kek, &log.origin, now)?;
            tx.commit()?;
            say(&format!(
                "new log key {vkey} signs checkpoints from the next one on (a running server \
                 within 10 seconds), beside the keys already signing"
            ));
        }
        LogKeyCommand::Retire { vkey } => {
            let was_signing = recordlog::keys::retire(&tx, vkey, now)?;
            tx.commit()?;
            say(&if was_signing {
                format!("log key {vkey} signs no more checkpoints (it stays published)")
            } else {
                format!("log key {vkey} was retired before")
            });
        }
    }
    conn.close()?;
    Ok(())
}

fn audit(config: &Config, command: &AuditCommand) -> anyhow::Result<()> {
    match command {
        AuditCommand::Verify => {
            let (conn, _, log) = operator_connection(config)?;
            let report = recordlog::audit::verify(&conn, &log.origin)?;
            conn.close()?;
            say(&report.summary());
            if let Some(first) = report.findings.first() {
                for finding in report.findings.iter().take(AUDIT_FINDINGS_SHOWN) {
                    say(&format!("  {finding}"));
                }
                if report.findings.len() > AUDIT_FINDINGS_SHOWN {
                    say(&format!(
                        "  … and {} more",
                        report.findings.len() - AUDIT_FINDINGS_SHOWN
                    ));
                }
                anyhow::bail!("the record log and the database differ: first, {first}");
            }
            Ok(())
        }
        AuditCommand::Watch {
            url,
            vkey,
            interval,
            state,
            once,
            witness_policy,
        } => recordlog::watch::run(&recordlog::watch::Watch {
            url: url.clone(),
            vkeys: vkey.clone(),
            interval: std::time::Duration::from_secs((*interval).max(1)),
            state: state.clone(),
            once: *once,
            witness_policy: witness_policy.clone(),
        }),
    }
}

/// Differences `mandate audit verify` lists before counting the rest.
const AUDIT_FINDINGS_SHOWN: usize = 20;

fn main() -> anyhow::Result<()> {
    // Everything this process creates is its user's alone: the data folder
    // 0700, the database and its -wal and -shm files, the admin key and the
    // key file 0600, whatever the umask it was started with.
    rustix::process::umask(rustix::fs::Mode::RWXG | rustix::fs::Mode::RWXO);
    // Log lines are written by a thread of their own, so a request pays for
    // formatting its line, not for a write to stderr; none is dropped (a
    // full queue makes the logger wait), and the rest are written when the
    // guard drops, as `main` returns.
    let (log_writer, _log_flush) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .thread_name("mandate-log")
        .finish(std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(LOG_FILTER)),
        )
        .with_writer(log_writer)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let cli = Cli::parse();
    let config = config(&cli)?;
    match &cli.command {
        Command::Serve { .. } => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(mandate_host::serve(config)),
        Command::Migrate => migrate(&config),
        Command::Export { file } => export(&config, file),
        Command::Import { file } => import(&config, file),
        Command::Orgs { command } => orgs(&config, command),
        Command::Keys { command } => keys(&config, command),
        Command::SigningKey {
            command: SigningKeyCommand::Rotate,
        } => rotate(&config),
        Command::SigningKey {
            command: SigningKeyCommand::Revoke { kid },
        } => revoke_signing_key(&config, kid),
        Command::LogKey { command } => log_key(&config, command),
        Command::Audit { command } => audit(&config, command),
        Command::Config {
            command: ConfigCommand::Check { .. },
        } => check_config(&config),
        Command::Witness {
            command: WitnessCommand::Serve { .. },
        } => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(mandate_host::witness::serve(config)),
        Command::Witness {
            command: WitnessCommand::Vkey,
        } => {
            say(&mandate_host::witness::vkey(&config)?);
            Ok(())
        }
        Command::Config {
            command: ConfigCommand::Reference,
        } => {
            say(mandate_host::configdoc::reference(&env_variables()).trim_end());
            Ok(())
        }
        Command::Healthcheck { .. } => healthcheck(&config),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kid_that_begins_with_a_hyphen_is_a_kid_not_an_option() {
        let cli = Cli::try_parse_from(["mandate", "signing-key", "revoke", "-y3kQ_x"]).unwrap();
        let Command::SigningKey {
            command: SigningKeyCommand::Revoke { kid },
        } = cli.command
        else {
            panic!("not a signing-key revoke");
        };
        assert_eq!(kid, "-y3kQ_x");
    }
}
