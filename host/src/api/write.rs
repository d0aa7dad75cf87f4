//! Writes from handlers: a job for the ledger, run once per
//! `Idempotency-Key`, and its answer as stored and replayed.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::clock::Now;
use crate::error::{ApiError, ApiResult};
use crate::ledger::{IdempotencyKey, Ledger, LedgerError, Reply};
use crate::store::idempotency::StoredReply;

/// An answer as stored and replayed: status and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rendered {
    pub(crate) status: StatusCode,
    pub(crate) body: Vec<u8>,
}

impl Rendered {
    /// A JSON success body.
    pub(crate) fn json(status: StatusCode, value: &impl serde::Serialize) -> Rendered {
        match serde_json::to_vec(value) {
            Ok(body) => Rendered { status, body },
            Err(error) => Rendered::problem(&ApiError::internal(error)),
        }
    }

    /// A problem body.
    pub(crate) fn problem(error: &ApiError) -> Rendered {
        Rendered {
            status: error.status,
            body: serde_json::to_vec(&error.problem()).unwrap_or_default(),
        }
    }

    fn stored(self) -> StoredReply {
        StoredReply {
            status: self.status.as_u16(),
            body: self.body,
        }
    }

    fn replayed(reply: StoredReply) -> ApiResult<Rendered> {
        Ok(Rendered {
            status: StatusCode::from_u16(reply.status).map_err(ApiError::internal)?,
            body: reply.body,
        })
    }
}

impl IntoResponse for Rendered {
    fn into_response(self) -> Response {
        let content_type = if self.status.is_success() {
            "application/json"
        } else {
            "application/problem+json"
        };
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, content_type)],
            self.body,
        )
            .into_response();
        // A stored refusal of a presented token (`token_revoked`,
        // `token_expired`) is a 401, which always names its scheme.
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(r#"Bearer realm="mandate""#),
            );
        }
        response
    }
}

/// Runs `work` in the ledger once per `key`: a retry with the same body gets
/// the first answer and changes nothing. Returns the outcome when the work
/// ran now (not when an answer was replayed) and the answer, which `render`
/// makes.
pub(crate) async fn once<T: Send + 'static>(
    state: &AppState,
    key: Option<IdempotencyKey>,
    now: Now,
    work: impl FnMut(&mut Ledger) -> Result<T, LedgerError> + Send + 'static,
    render: fn(&T) -> Rendered,
) -> ApiResult<(Option<T>, Rendered)> {
    once_where(state, move |_| Ok(key.clone()), now, work, render).await
}

/// [`once`] for a write whose answer may be to wait (202): a repeat of its
/// key runs `resume` with the stored answer, which may replace it
/// (`Ledger::once_resuming`).
pub(crate) async fn once_resuming<T: Send + 'static>(
    state: &AppState,
    key: Option<IdempotencyKey>,
    now: Now,
    mut work: impl FnMut(&mut Ledger) -> Result<T, LedgerError> + Send + 'static,
    mut resume: impl FnMut(&mut Ledger, &StoredReply) -> Result<Option<T>, LedgerError> + Send + 'static,
    render: fn(&T) -> Rendered,
) -> ApiResult<(Option<T>, Rendered)> {
    let reply = state
        .write(move |ledger| {
            ledger.once_resuming(key.as_ref(), now, &mut work, &mut resume, |outcome| {
                render(outcome).stored()
            })
        })
        .await?;
    replied(reply, render)
}

/// The answer of a write run once per key: the stored one, or one made
/// now.
fn replied<T>(reply: Reply<T>, render: fn(&T) -> Rendered) -> ApiResult<(Option<T>, Rendered)> {
    match reply {
        Reply::Fresh(outcome, Some(stored)) => Ok((Some(outcome), Rendered::replayed(stored)?)),
        Reply::Fresh(outcome, None) => {
            let rendered = render(&outcome);
            Ok((Some(outcome), rendered))
        }
        Reply::Replayed(reply) => Ok((None, Rendered::replayed(reply)?)),
    }
}

/// [`once`] for a write whose key's organisation only the ledger knows (a
/// completion names its record, not its organisation): `key` makes the key
/// in the writer's transaction, before the stored answers are looked up.
pub(crate) async fn once_where<T: Send + 'static>(
    state: &AppState,
    mut key: impl FnMut(&mut Ledger) -> Result<Option<IdempotencyKey>, LedgerError> + Send + 'static,
    now: Now,
    mut work: impl FnMut(&mut Ledger) -> Result<T, LedgerError> + Send + 'static,
    render: fn(&T) -> Rendered,
) -> ApiResult<(Option<T>, Rendered)> {
    let reply = state
        .write(move |ledger| {
            let key = key(ledger)?;
            ledger.once(key.as_ref(), now, &mut work, |outcome| {
                render(outcome).stored()
            })
        })
        .await?;
    replied(reply, render)
}
