//! Webhooks, received: a message's Standard Webhooks signature, timestamp
//! and payload checked by core's rules with the receiver's secrets. Nothing
//! here signs.

use mandate_core::MessageId;
use mandate_core::webhook::{self, Headers, Secret, WebhookError};

use crate::failure::{Failure, Stage};

pub use mandate_core::webhook::WEBHOOK_TOLERANCE_SECONDS;

fn webhook_failure(error: &WebhookError) -> Failure {
    Failure::new(Stage::Webhook, error.code(), error)
}

/// A webhook that verified: its message id and its payload, a Mandate
/// event, as the JSON text received.
#[derive(Debug)]
pub struct VerifiedWebhook<'a> {
    pub id: MessageId,
    pub event: &'a str,
}

/// Checks a received webhook, its headers as `(name, value)` pairs (names
/// in any case): the signature under any of `secrets` (`whsec_…`; several
/// during a rotation), the timestamp within `tolerance` seconds of `now`,
/// and the payload, which must be a Mandate event.
pub fn verify_webhook<'a>(
    secrets: &[String],
    pairs: &[(String, String)],
    body: &'a [u8],
    now: i64,
    tolerance: u64,
) -> Result<VerifiedWebhook<'a>, Failure> {
    let mut keys = Vec::with_capacity(secrets.len());
    for text in secrets {
        keys.push(Secret::parse(text).map_err(|e| webhook_failure(&e))?);
    }
    let check = || {
        let headers = Headers::from_pairs(pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())))?;
        let verified = webhook::verify(&keys, &headers, body, now, tolerance)?;
        webhook::parse_event::<webhook::AnyObject>(body)?;
        Ok(verified)
    };
    let verified = check().map_err(|e| webhook_failure(&e))?;
    // A payload read as a Mandate event is JSON text, so UTF-8.
    let event = std::str::from_utf8(body)
        .map_err(|_| webhook_failure(&WebhookError::PayloadInvalid("not UTF-8")))?;
    Ok(VerifiedWebhook {
        id: verified.id,
        event,
    })
}
