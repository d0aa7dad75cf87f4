//! Webhooks on the read side: an organisation's endpoints (never their
//! secrets, which stay sealed) and each one's delivery log, newest first.
//! Another organisation's webhook is unknown.

use crate::store::orgs::Org;
use crate::store::sql::Connection;
use crate::store::webhooks::{self as rows, Delivery, DeliveryKey, Webhook};

use super::{Page, QueryError, decode_cursor, page_of};

/// The webhook `id` of `org`.
pub fn webhook(conn: &Connection, org: Org, id: &str) -> Result<Webhook, QueryError> {
    rows::by_id(conn, id)?
        .filter(|webhook| webhook.org == org)
        .ok_or(QueryError::UnknownWebhook)
}

/// The webhooks of `org`, newest first (at most
/// `mandate_core::limits::MAX_WEBHOOKS_PER_ORG`: one page).
pub fn webhooks(conn: &Connection, org: Org) -> Result<Vec<Webhook>, QueryError> {
    Ok(rows::of_org(conn, org)?)
}

/// A page of the attempts at delivering to the webhook `id` of `org`,
/// newest first.
pub fn deliveries(
    conn: &Connection,
    org: Org,
    id: &str,
    limit: u32,
    cursor: Option<&str>,
) -> Result<Page<Delivery>, QueryError> {
    webhook(conn, org, id)?;
    let before = cursor
        .map(|cursor| {
            let text = decode_cursor(cursor, 'h')?;
            let mut parts = text.split(':').map(str::parse::<i64>);
            match (parts.next(), parts.next(), parts.next(), parts.next()) {
                (Some(Ok(at)), Some(Ok(event_seq)), Some(Ok(attempt)), None) => Ok(DeliveryKey {
                    at,
                    event_seq,
                    attempt,
                }),
                _ => Err(QueryError::InvalidCursor),
            }
        })
        .transpose()?;
    let found = rows::deliveries(conn, id, before, limit + 1)?;
    Ok(page_of(found, limit, |d| {
        format!("h:{}:{}:{}", d.at, d.event_seq, d.attempt)
    }))
}
