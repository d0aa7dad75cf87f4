//! The submitter: the log's side of C2SP tlog-witness. One host of a
//! deployment at a time (a lease in `log_submitter`, as webhook delivery
//! leases an endpoint) wakes every `[log] checkpoint_interval_ms`; when the
//! log grew since the newest checkpoint it signs one, and it sends the
//! newest checkpoint to every witness of `[log] witnesses` that has not
//! cosigned its size yet, or whose cosignature of it is older than `[log]
//! cosignature_refresh_seconds` (the witness cosigns it anew):
//!
//! ```text
//! POST <url>/add-checkpoint
//! old <size the witness last cosigned>\n
//! <consistency proof from that size, one base64 hash a line>\n
//! \n
//! <the signed checkpoint>
//! ```
//!
//! A 200 answers cosignature lines: the one by the configured key is
//! verified against the checkpoint and stored, with the witness's new
//! size. A 409 answers the witness's size (`text/x.tlog.size`): the size is
//! stored and the checkpoint sent once more with a proof from it. Any other
//! answer, a timeout or a connection refused is logged and tried again at
//! the next wake; witnesses are asked at once, so one failing holds none of
//! the others up. The sizes are stored, so a restart (or another host
//! taking the lease over) sends from where each witness is.

use std::sync::Arc;
use std::time::Duration;

use mandate_core::tlog::{AddCheckpoint, Checkpoint, TLOG_SIZE_CONTENT_TYPE};
use reqwest::StatusCode;
use reqwest::header::CONTENT_TYPE;
use tokio::sync::oneshot;

use super::proofs;
use crate::AppState;
use crate::config::LogWitness;
use crate::queries::QueryError;
use crate::store::StoreError;
use crate::store::log::{self as rows, StoredCheckpoint, StoredCosignature};

/// How long one add-checkpoint request may take (connecting, sending,
/// reading the answer).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// A lease outlives a round (two requests a witness, at once) by this much.
const LEASE_MARGIN_MS: i64 = 10_000;
/// Longest answer body read from a witness.
const MAX_ANSWER_BYTES: usize = 16 * 1024;
/// The `user-agent` of submissions.
const USER_AGENT: &str = concat!("Mandate-Log/", env!("CARGO_PKG_VERSION"));

/// What every round of a process shares.
struct Submitter {
    state: AppState,
    client: reqwest::Client,
    witnesses: Vec<LogWitness>,
    /// This process's name in the lease row.
    owner: String,
    lease_ms: i64,
    /// `[log] cosignature_refresh_seconds`.
    refresh_s: u64,
}

/// Submits checkpoints to the configured witnesses until `stop` resolves
/// (or its sender is dropped); returns at once without witnesses.
pub async fn submit(state: AppState, mut stop: oneshot::Receiver<()>) {
    let witnesses = match state.config.log.witness_set() {
        Ok(Some((witnesses, _))) => witnesses,
        Ok(None) => return,
        Err(error) => {
            // `Config::check` refused this at start already.
            tracing::error!(error = format!("{error:#}"), "the log's witnesses are off");
            return;
        }
    };
    let client = match reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
    {
        Ok(client) => client,
        Err(error) => {
            tracing::error!(%error, "the log's witnesses are off: the HTTP client cannot be built");
            return;
        }
    };
    let interval_ms = state.config.log.checkpoint_interval_ms.get();
    let interval = Duration::from_millis(interval_ms);
    let round_ms = i64::try_from(REQUEST_TIMEOUT.as_millis().saturating_mul(2)).unwrap_or(i64::MAX);
    let submitter = Arc::new(Submitter {
        owner: format!("host_{}", crate::random::ulid(state.clock.now())),
        lease_ms: i64::try_from(interval_ms)
            .unwrap_or(i64::MAX)
            .saturating_add(round_ms)
            .saturating_add(LEASE_MARGIN_MS),
        client,
        witnesses,
        refresh_s: state.config.log.cosignature_refresh_seconds.get(),
        state: state.clone(),
    });
    if state.config.database.url.is_none()
        && let Err(error) = state.write(|ledger| ledger.release_submitter(None)).await
    {
        tracing::warn!(%error, "releasing the submitter lease of an earlier process failed");
    }
    loop {
        tokio::select! {
            _ = &mut stop => break,
            () = round(&submitter) => {}
        }
        tokio::select! {
            _ = &mut stop => break,
            () = tokio::time::sleep(interval) => {}
        }
    }
    let owner = submitter.owner.clone();
    if let Err(error) = state
        .write(move |ledger| ledger.release_submitter(Some(&owner)))
        .await
    {
        tracing::warn!(%error, "releasing the submitter lease failed");
    }
}

/// One wake: the lease, a checkpoint, every witness behind it.
async fn round(submitter: &Arc<Submitter>) {
    let state = &submitter.state;
    let now = state.clock.now();
    let until = now.ms().saturating_add(submitter.lease_ms);
    let owner = submitter.owner.clone();
    match state
        .write(move |ledger| ledger.claim_submitter(&owner, now, until))
        .await
    {
        Ok(true) => {}
        Ok(false) => return,
        Err(error) => {
            tracing::warn!(%error, "claiming the checkpoint submitter's lease failed");
            return;
        }
    }
    let checkpoint = match state.write(move |ledger| ledger.checkpoint(now)).await {
        Ok(checkpoint) => Arc::new(checkpoint),
        Err(error) => {
            tracing::warn!(%error, "signing a checkpoint to submit failed");
            return;
        }
    };
    let mut asked = tokio::task::JoinSet::new();
    for index in 0..submitter.witnesses.len() {
        asked.spawn(ask(submitter.clone(), index, checkpoint.clone()));
    }
    while asked.join_next().await.is_some() {}
}

/// What a witness answered one add-checkpoint.
enum Answer {
    Cosigned(StoredCosignature),
    /// 409: the witness is at this size.
    AtSize(u64),
}

/// Why a witness gave no usable answer.
#[derive(Debug, thiserror::Error)]
enum Failed {
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    #[error("reading the log: {0}")]
    Query(#[from] QueryError),
    #[error("answered {status}: {body}")]
    Refused { status: StatusCode, body: String },
    #[error("{0}")]
    Answer(String),
}

impl From<StoreError> for Failed {
    fn from(error: StoreError) -> Failed {
        Failed::Query(error.into())
    }
}

/// Brings the witness `index` to `checkpoint`: from the size it is known
/// to be at, and once more from the size a 409 says. A witness at the
/// checkpoint's size is asked again (with an empty proof) when it has no
/// cosignature of it here, or only one older than `[log]
/// cosignature_refresh_seconds`: it cosigns the checkpoint it holds anew,
/// so an idle log's cosignatures stay younger than verifiers' maximum age.
async fn ask(submitter: Arc<Submitter>, index: usize, checkpoint: Arc<StoredCheckpoint>) {
    let witness = &submitter.witnesses[index];
    let (name, key_id) = (
        witness.verifier.name().to_owned(),
        witness.verifier.key_id(),
    );
    let (lookup_name, size) = (name.clone(), checkpoint.size);
    let known = submitter
        .state
        .store
        .lookup(move |conn| {
            Ok::<_, StoreError>((
                rows::witness_size(conn, &lookup_name, key_id)?,
                rows::cosigned_at(conn, size, &lookup_name, key_id)?,
            ))
        })
        .await;
    let now_s = u64::try_from(submitter.state.clock.now().s()).unwrap_or(0);
    let fresh = |cosigned: Option<u64>| {
        cosigned.is_some_and(|at| now_s.saturating_sub(at) < submitter.refresh_s)
    };
    let mut old = match known {
        Ok((Some(size), _)) if size > checkpoint.size => return,
        Ok((Some(size), cosigned)) if size == checkpoint.size && fresh(cosigned) => return,
        Ok((known, _)) => known.unwrap_or(0),
        Err(error) => {
            tracing::warn!(%error, witness = %name, "reading a witness's size failed");
            return;
        }
    };
    for attempt in 0..2 {
        let answer = match send(&submitter, witness, &checkpoint, old).await {
            Ok(answer) => answer,
            Err(error) => {
                tracing::warn!(%error, witness = %name, size = checkpoint.size, "a witness did not cosign");
                return;
            }
        };
        let (size, cosignature) = match answer {
            Answer::Cosigned(cosignature) => (checkpoint.size, Some(cosignature)),
            Answer::AtSize(size) => (size, None),
        };
        let now = submitter.state.clock.now();
        let (stored_name, stored) = (name.clone(), cosignature.clone());
        if let Err(error) = submitter
            .state
            .write(move |ledger| {
                ledger.record_witness(&stored_name, key_id, size, stored.as_ref(), now)
            })
            .await
        {
            tracing::warn!(%error, witness = %name, "storing a witness's answer failed");
            return;
        }
        if cosignature.is_some() {
            return;
        }
        if size > checkpoint.size {
            tracing::error!(
                witness = %name,
                witness_size = size,
                log_size = checkpoint.size,
                "a witness has cosigned a larger tree than this log has: the log was rolled back \
                 (restored from a backup?) and can no longer be witnessed under its origin"
            );
            return;
        }
        if attempt == 0 && size == old {
            tracing::warn!(witness = %name, size, "a witness answered 409 with the size sent");
            return;
        }
        old = size;
    }
}

/// One add-checkpoint request of `checkpoint` from `old`.
async fn send(
    submitter: &Submitter,
    witness: &LogWitness,
    checkpoint: &StoredCheckpoint,
    old: u64,
) -> Result<Answer, Failed> {
    let new = checkpoint.size;
    let proof = submitter
        .state
        .store
        .lookup(move |conn| proofs::consistency(conn, old, new))
        .await?;
    let body = AddCheckpoint {
        old_size: old,
        proof,
        checkpoint: checkpoint.note.clone(),
    }
    .to_text();
    let url = format!(
        "{}/add-checkpoint",
        witness.url.as_str().trim_end_matches('/')
    );
    let response = submitter.client.post(url).body(body).send().await?;
    let status = response.status();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let bytes = response.bytes().await?;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_ANSWER_BYTES)]).into_owned();
    match status {
        StatusCode::OK => cosignature_of(&submitter.state.log_origin, witness, checkpoint, &text)
            .map(Answer::Cosigned),
        StatusCode::CONFLICT => {
            let media = content_type
                .as_deref()
                .and_then(|value| value.split(';').next())
                .map(str::trim);
            if media != Some(TLOG_SIZE_CONTENT_TYPE) {
                return Err(Failed::Answer(format!(
                    "a 409 of type {content_type:?}, not {TLOG_SIZE_CONTENT_TYPE}"
                )));
            }
            let size = text.trim_end_matches('\n');
            size.parse::<u64>()
                .ok()
                .filter(|_| !size.starts_with('+') && (size == "0" || !size.starts_with('0')))
                .map(Answer::AtSize)
                .ok_or_else(|| Failed::Answer(format!("a 409 without a size: {size:?}")))
        }
        status => Err(Failed::Refused {
            status,
            body: text.chars().take(300).collect(),
        }),
    }
}

/// The cosignature by `witness`'s key among the lines of a 200 answer,
/// verified on `checkpoint`.
fn cosignature_of(
    origin: &str,
    witness: &LogWitness,
    checkpoint: &StoredCheckpoint,
    text: &str,
) -> Result<StoredCosignature, Failed> {
    let signed = Checkpoint::new(origin, checkpoint.size, checkpoint.root);
    let verifier = &witness.verifier;
    for line in text.lines().filter(|line| !line.is_empty()) {
        match verifier.verify_line(&signed, line) {
            Ok(timestamp) => {
                return Ok(StoredCosignature {
                    size: checkpoint.size,
                    name: verifier.name().to_owned(),
                    key_id: verifier.key_id(),
                    timestamp,
                    line: line.to_owned(),
                });
            }
            Err(mandate_core::tlog::LogError::NoteUnknownKey) => continue,
            Err(error) => {
                return Err(Failed::Answer(format!(
                    "its cosignature does not verify: {error}"
                )));
            }
        }
    }
    Err(Failed::Answer(
        "a 200 without a cosignature by its configured key".to_owned(),
    ))
}
