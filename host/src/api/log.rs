//! The record log over HTTP: the newest checkpoint and the verifier keys
//! (public, for anyone to check), consistency proofs and tiles (public, for
//! monitors and mirrors: hashes only), and a record's events with their
//! proofs (an API key of its organisation: leaves hold its data).

use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mandate_core::tlog::TileId;
use serde::Deserialize;
use utoipa::IntoParams;

use super::docs::Errors;
use super::extract::ApiKeyAuth;
use super::query::{Query, record_id};
use crate::AppState;
use crate::error::ApiResult;
use crate::model::{ConsistencyBody, CosignedLinkBody, LogEventBody, RecordProofBody};
use crate::queries::QueryError;
use crate::recordlog::proofs;
use crate::store::log::{self as log_rows, StoredCheckpoint};

/// A text answer, with how long it may be kept.
fn text(body: String, cache: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    // Public: any monitor, page or edge worker may read it.
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

/// The newest checkpoint of the record log: a C2SP `tlog-checkpoint`
/// signed note (origin, tree size, root hash), signed by every log key in
/// force. With `[log] witnesses`, the newest checkpoint cosigned by
/// `witness_threshold` of them, their cosignatures (C2SP
/// `tlog-cosignature`) appended as signature lines; until one is, the
/// newest checkpoint with the cosignatures it has.
#[utoipa::path(
    get,
    path = "/v1/log/checkpoint",
    tag = "log",
    responses((status = 200, description = "The signed checkpoint", body = String, content_type = "text/plain"), Errors)
)]
pub(crate) async fn checkpoint(State(state): State<AppState>) -> ApiResult<Response> {
    // `Config::check` refused a bad witness set at start.
    let witnessed = state.config.log.witness_set().ok().flatten();
    let checkpoint = match witnessed {
        None => fresh_checkpoint(&state).await?,
        Some((witnesses, threshold)) => {
            let keys: Vec<(String, u32)> = witnesses
                .iter()
                .map(|w| (w.verifier.name().to_owned(), w.verifier.key_id()))
                .collect();
            state
                .store
                .lookup(move |conn| proofs::witnessed(conn, &keys, threshold))
                .await?
        }
    };
    Ok(text(checkpoint.note, "public, max-age=1"))
}

/// The newest checkpoint, signed now if the log has grown since the last
/// one: checkpoints are signed when a read needs one, not by every write
/// (docs/decisions.md), so a proof is there as soon as its write is
/// acknowledged. Signing is a write of its own, once per size.
async fn fresh_checkpoint(state: &AppState) -> ApiResult<StoredCheckpoint> {
    let (latest, size) = state
        .store
        .lookup(|conn| Ok::<_, QueryError>((proofs::latest(conn)?, log_rows::size(conn)?)))
        .await?;
    if latest.size >= size {
        return Ok(latest);
    }
    let now = state.clock.now();
    Ok(state.write(move |ledger| ledger.checkpoint(now)).await?)
}

/// The record log's verifier keys (C2SP `signed-note` vkeys), one per line:
/// those signing checkpoints first, newest first, then retired ones (which
/// signed older checkpoints).
#[utoipa::path(
    get,
    path = "/v1/log/key",
    tag = "log",
    responses((status = 200, description = "The verifier keys, one per line", body = String, content_type = "text/plain"))
)]
pub(crate) async fn key(State(state): State<AppState>) -> Response {
    let mut keys = state.log_keys.current().vkeys.join("\n");
    keys.push('\n');
    text(keys, "public, max-age=60")
}

/// Query of a consistency proof.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConsistencyQuery {
    /// The older tree size.
    pub(crate) old: u64,
    /// The newer tree size, at most the newest checkpoint's.
    pub(crate) new: u64,
}

/// An RFC 6962 consistency proof between two sizes of the record log.
#[utoipa::path(
    get,
    path = "/v1/log/consistency",
    tag = "log",
    params(ConsistencyQuery),
    responses((status = 200, description = "The consistency proof", body = ConsistencyBody), Errors)
)]
pub(crate) async fn consistency(
    State(state): State<AppState>,
    Query(query): Query<ConsistencyQuery>,
) -> ApiResult<Response> {
    let ConsistencyQuery { old, new } = query;
    let hashes = state
        .store
        .lookup(move |conn| proofs::consistency(conn, old, new))
        .await?;
    let body = ConsistencyBody {
        old,
        new,
        proof: hashes.iter().map(|hash| STANDARD.encode(hash)).collect(),
    };
    let mut response = axum::Json(body).into_response();
    response.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    Ok(response)
}

/// A tile of the record log's Merkle tree (C2SP `tlog-tiles`), at
/// `/v1/log/tile/<L>/<N>[.p/<W>]`: level `L`, index `N` in 3-digit path
/// elements, `.p/W` for a partial tile. Public, like the checkpoint. Leaves
/// are not served here (they hold organisations' data): a record's own are
/// in its proof. Routed outside the OpenAPI document, whose path templates
/// cannot span several segments (docs/api.md describes it).
pub(crate) async fn tile(
    State(state): State<AppState>,
    Path(path): Path<String>,
) -> ApiResult<Response> {
    let id = TileId::parse(&format!("tile/{path}")).map_err(|_| QueryError::UnknownTile)?;
    let bytes = state
        .store
        .lookup(move |conn| proofs::tile(conn, id))
        .await?;
    let mut response = bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    // A tile never changes: a partial one is a prefix of what follows.
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    Ok(response)
}

/// Every event of a record in the record log — its creation, completion
/// and rating — each with its leaf (RFC 8785 canonical JSON, base64) and a
/// C2SP `tlog-proof@v1` against the newest checkpoint, which covers every
/// acknowledged write. With `[log] witnesses`, the checkpoint carries the
/// cosignatures gathered so far, and until `witness_threshold` of them have
/// cosigned it, `cosigned` carries the newest checkpoint they have, with
/// the consistency proof from it (docs/log.md).
#[utoipa::path(
    get,
    path = "/v1/vat/aar/{aar_id}/proof",
    tag = "log",
    params(("aar_id" = String, Path, description = "The record, `aar_<ulid>`")),
    responses((status = 200, description = "The record's events and their proofs", body = RecordProofBody), Errors)
)]
pub(crate) async fn record_proof(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(aar_id): Path<String>,
) -> ApiResult<axum::Json<RecordProofBody>> {
    let aar_id = record_id(&aar_id)?;
    fresh_checkpoint(&state).await?;
    // `Config::check` refused a bad witness set at start.
    let witnesses = state
        .config
        .log
        .witness_set()
        .ok()
        .flatten()
        .map(|(witnesses, threshold)| {
            let keys: Vec<(String, u32)> = witnesses
                .iter()
                .map(|w| (w.verifier.name().to_owned(), w.verifier.key_id()))
                .collect();
            (keys, threshold)
        });
    let proof = state
        .store
        .lookup(move |conn| {
            proofs::record_proof(
                conn,
                principal.org,
                aar_id.as_str(),
                witnesses.as_ref().map(|(keys, k)| (keys.as_slice(), *k)),
            )
        })
        .await?;
    Ok(axum::Json(RecordProofBody {
        aar_id: proof.aar_id,
        origin: state.log_origin.clone(),
        checkpoint: proof.checkpoint,
        events: proof
            .events
            .into_iter()
            .map(|event| LogEventBody {
                kind: event.kind.to_owned(),
                index: event.index,
                leaf: STANDARD.encode(event.leaf),
                proof: event.proof,
            })
            .collect(),
        cosigned: proof
            .cosigned
            .map(|(checkpoint, consistency)| CosignedLinkBody {
                checkpoint,
                consistency: consistency.iter().map(|h| STANDARD.encode(h)).collect(),
            }),
    }))
}
