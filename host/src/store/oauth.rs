//! The OAuth tables (schema 12). Today: `oauth_clients`, the public
//! clients an organisation's owner registered in advance, their redirect
//! URIs and grant types stored as JSON arrays. A deleted client keeps its
//! row (`revoked_at`), so its id is never handed out again and what it
//! was given stays explainable; it is unknown to every API. Only the
//! ledger writes them.

use super::orgs::Org;
use crate::store::sql::{self, Connection, OptionalExtension, Row, params};

/// A pre-registered public client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthClient {
    /// `mcl_<ulid>`.
    pub client_id: String,
    pub org: Org,
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub grant_types: Vec<String>,
    /// The API key that registered it.
    pub created_by: String,
    /// Unix milliseconds.
    pub created_at: i64,
}

const COLUMNS: &str = "client_id, org, name, redirect_uris, grant_types, created_by, created_at";

/// A JSON array of strings as stored.
fn list(row: &Row<'_>, column: &str) -> sql::Result<Vec<String>> {
    let text: String = row.get(column)?;
    serde_json::from_str(&text).map_err(|error| sql::Error::corrupt(column, error))
}

fn from_row(row: &Row<'_>) -> sql::Result<OAuthClient> {
    Ok(OAuthClient {
        client_id: row.get("client_id")?,
        org: row.get("org")?,
        name: row.get("name")?,
        redirect_uris: list(row, "redirect_uris")?,
        grant_types: list(row, "grant_types")?,
        created_by: row.get("created_by")?,
        created_at: row.get("created_at")?,
    })
}

/// Stores a new client.
pub fn insert_client(conn: &Connection, client: &OAuthClient) -> sql::Result<()> {
    let json = |items: &[String]| {
        serde_json::to_string(items).map_err(|error| sql::Error::corrupt("a list of text", error))
    };
    conn.prepare_cached(&format!(
        "INSERT INTO oauth_clients ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
    ))?
    .execute(params![
        client.client_id,
        client.org,
        client.name,
        json(&client.redirect_uris)?,
        json(&client.grant_types)?,
        client.created_by,
        client.created_at
    ])?;
    Ok(())
}

/// The client `client_id` of `org`, unless deleted; another
/// organisation's is none.
pub fn client(conn: &Connection, org: Org, client_id: &str) -> sql::Result<Option<OAuthClient>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM oauth_clients
         WHERE client_id = ?1 AND org = ?2 AND revoked_at IS NULL"
    ))?
    .query_row(params![client_id, org], from_row)
    .optional()
}

/// The clients of `org` not deleted, newest first.
pub fn clients(conn: &Connection, org: Org) -> sql::Result<Vec<OAuthClient>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM oauth_clients WHERE org = ?1 AND revoked_at IS NULL
         ORDER BY created_at DESC, client_id DESC"
    ))?
    .query_map([org], from_row)?
    .collect()
}

/// How many clients `org` has, not counting deleted ones.
pub fn count_clients(conn: &Connection, org: Org) -> sql::Result<u64> {
    let count: i64 = conn
        .prepare_cached("SELECT count(*) FROM oauth_clients WHERE org = ?1 AND revoked_at IS NULL")?
        .query_row([org], |row| row.get(0))?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// Marks a client deleted at `now` (unix milliseconds).
pub fn delete_client(conn: &Connection, client_id: &str, now: i64) -> sql::Result<()> {
    conn.prepare_cached("UPDATE oauth_clients SET revoked_at = ?2 WHERE client_id = ?1")?
        .execute(params![client_id, now])?;
    Ok(())
}
