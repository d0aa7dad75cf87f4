//! `mandate audit watch URL`: a monitor of a remote deployment's record
//! log. It trusts the first checkpoint it sees (or the one its state file
//! keeps), and afterwards accepts a new checkpoint only when its signature
//! verifies with the given keys and a consistency proof from the trusted
//! one verifies: the new tree extends the old. Anything else — two signed
//! checkpoints of one size with different roots, a smaller tree, a proof
//! that fails — is a fork: the log showed someone a history it later
//! rewrote. The watcher prints both checkpoints (each is signed: together
//! they prove it) and exits non-zero. With `--witness-policy`, a checkpoint
//! is trusted only with the policy's threshold of fresh cosignatures (core's
//! `verify_witnessed`); the policy is the auditor's file, never the log's.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mandate_core::tlog::{
    Checkpoint, Hash, NoteVerifier, WitnessPolicy, WitnessVerifier, open_checkpoint,
    verify_consistency, verify_witnessed,
};
use serde::Deserialize;

/// What to watch, and how.
#[derive(Debug, Clone)]
pub struct Watch {
    /// The deployment's address.
    pub url: String,
    /// Verifier keys of its log.
    pub vkeys: Vec<String>,
    pub interval: Duration,
    /// Keeps the last trusted checkpoint between runs.
    pub state: Option<PathBuf>,
    /// Check once and exit.
    pub once: bool,
    /// The witness policy file (`--witness-policy`), if any.
    pub witness_policy: Option<PathBuf>,
}

/// A witness policy file: TOML, `witnesses = ["<vkey>", …]`, `threshold`,
/// `max_age_seconds`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    witnesses: Vec<String>,
    threshold: usize,
    max_age_seconds: u64,
}

/// Reads and builds a witness policy file, with core's refusals.
pub fn read_policy(path: &std::path::Path) -> anyhow::Result<WitnessPolicy> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("the witness policy {}: {e}", path.display()))?;
    let file: PolicyFile = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("the witness policy {}: {e}", path.display()))?;
    let witnesses = file
        .witnesses
        .iter()
        .map(|vkey| {
            WitnessVerifier::parse(vkey)
                .map_err(|e| anyhow::anyhow!("the witness policy's vkey {vkey}: {e}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    WitnessPolicy::new(witnesses, file.threshold, file.max_age_seconds)
        .map_err(|e| anyhow::anyhow!("the witness policy {}: {e}", path.display()))
}

/// A checkpoint and its signed note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trusted {
    pub checkpoint: Checkpoint,
    pub note: String,
}

/// What one look at the deployment found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// The first checkpoint, now trusted.
    First(Trusted),
    /// Nothing new.
    Same,
    /// A larger tree, proven consistent with the trusted one; now trusted.
    Grown(Trusted),
    /// A fork: `new` cannot extend `old`.
    Fork { new: Trusted, why: String },
}

/// Judges a freshly fetched checkpoint note against the trusted one;
/// `consistency` fetches the proof from one size to another. With a
/// `policy` (and the time, POSIX seconds), the note must also carry the
/// policy's threshold of fresh cosignatures.
pub fn judge(
    trusted: Option<&Trusted>,
    note: &str,
    origin: &str,
    verifiers: &[NoteVerifier],
    policy: Option<(&WitnessPolicy, i64)>,
    consistency: impl FnOnce(u64, u64) -> anyhow::Result<Vec<Hash>>,
) -> anyhow::Result<Seen> {
    let checkpoint = match policy {
        None => open_checkpoint(note, Some(origin), verifiers),
        Some((policy, now)) => verify_witnessed(note, Some(origin), verifiers, policy, now)
            .map(|witnessed| witnessed.checkpoint),
    }
    .map_err(|e| anyhow::anyhow!("the deployment's checkpoint does not verify: {e}"))?;
    let new = Trusted {
        checkpoint,
        note: note.to_owned(),
    };
    let Some(old) = trusted else {
        return Ok(Seen::First(new));
    };
    let (old_size, new_size) = (old.checkpoint.size, new.checkpoint.size);
    if new_size < old_size {
        return Ok(Seen::Fork {
            new,
            why: format!("the log shrank from {old_size} to {new_size} leaves"),
        });
    }
    if new_size == old_size {
        if new.checkpoint.root == old.checkpoint.root {
            return Ok(Seen::Same);
        }
        return Ok(Seen::Fork {
            new,
            why: format!("two checkpoints of {new_size} leaves with different roots"),
        });
    }
    let proof = consistency(old_size, new_size)?;
    match verify_consistency(
        old_size,
        new_size,
        &old.checkpoint.root,
        &new.checkpoint.root,
        &proof,
    ) {
        Ok(()) => Ok(Seen::Grown(new)),
        Err(error) => Ok(Seen::Fork {
            new,
            why: format!(
                "the tree of {new_size} leaves does not extend the tree of {old_size}: {error}"
            ),
        }),
    }
}

#[derive(Debug, Deserialize)]
struct ConsistencyBody {
    proof: Vec<String>,
}

async fn fetch_text(client: &reqwest::Client, url: &str) -> anyhow::Result<String> {
    let response = client.get(url).send().await?.error_for_status()?;
    Ok(response.text().await?)
}

async fn fetch_consistency(
    client: &reqwest::Client,
    base: &str,
    old: u64,
    new: u64,
) -> anyhow::Result<Vec<Hash>> {
    let url = format!("{base}/v1/log/consistency?old={old}&new={new}");
    let body: ConsistencyBody = client
        .get(url)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    body.proof
        .iter()
        .map(|hash| {
            let bytes = STANDARD.decode(hash)?;
            Hash::try_from(bytes.as_slice())
                .map_err(|_| anyhow::anyhow!("a consistency proof hash is not 32 bytes"))
        })
        .collect()
}

#[allow(clippy::print_stdout, reason = "the watcher reports to its operator")]
fn say(line: &str) {
    println!("{line}");
}

/// Watches until a fork (an error naming it) or, with `once`, after one
/// look.
pub fn run(watch: &Watch) -> anyhow::Result<()> {
    crate::install_tls_provider();
    let verifiers = watch
        .vkeys
        .iter()
        .map(|vkey| NoteVerifier::parse(vkey).map_err(|e| anyhow::anyhow!("--vkey {vkey}: {e}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let origin = verifiers
        .first()
        .map(|verifier| verifier.name().to_owned())
        .ok_or_else(|| anyhow::anyhow!("give at least one --vkey"))?;
    let policy = watch
        .witness_policy
        .as_deref()
        .map(read_policy)
        .transpose()?;
    let base = watch.url.trim_end_matches('/').to_owned();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut trusted = match &watch.state {
        Some(path) if path.exists() => {
            let note = std::fs::read_to_string(path)?;
            let checkpoint = open_checkpoint(&note, Some(&origin), &verifiers).map_err(|e| {
                anyhow::anyhow!("the state file {} does not verify: {e}", path.display())
            })?;
            Some(Trusted { checkpoint, note })
        }
        _ => None,
    };
    loop {
        let looked = runtime.block_on(async {
            let note = fetch_text(&client, &format!("{base}/v1/log/checkpoint")).await?;
            let proof = match &trusted {
                Some(old) => {
                    let new = open_checkpoint(&note, Some(&origin), &verifiers).ok();
                    match new {
                        Some(new) if new.size > old.checkpoint.size => Some(
                            fetch_consistency(&client, &base, old.checkpoint.size, new.size).await,
                        ),
                        _ => None,
                    }
                }
                None => None,
            };
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
            let policy = policy.as_ref().map(|policy| (policy, now));
            judge(
                trusted.as_ref(),
                &note,
                &origin,
                &verifiers,
                policy,
                |_, _| {
                    proof
                        .unwrap_or_else(|| Err(anyhow::anyhow!("no consistency proof was fetched")))
                },
            )
        });
        match looked {
            Ok(Seen::Fork { new, why }) => {
                let old = trusted.map(|t| t.note).unwrap_or_default();
                anyhow::bail!(
                    "FORK: {why}\n--- trusted checkpoint ---\n{old}--- new checkpoint ---\n{}",
                    new.note
                );
            }
            Ok(Seen::Same) => {}
            Ok(Seen::First(new) | Seen::Grown(new)) => {
                say(&format!(
                    "trusting {} at {} leaves, root {}",
                    new.checkpoint.origin,
                    new.checkpoint.size,
                    STANDARD.encode(new.checkpoint.root)
                ));
                if let Some(path) = &watch.state {
                    std::fs::write(path, &new.note)?;
                }
                trusted = Some(new);
            }
            Err(error) if watch.once => return Err(error),
            Err(error) => tracing::warn!(%error, "looking at the deployment's log failed"),
        }
        if watch.once {
            return Ok(());
        }
        std::thread::sleep(watch.interval);
    }
}
