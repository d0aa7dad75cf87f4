//! The OAuth tables (schema 12): `oauth_clients`, the public clients an
//! organisation's owner registered in advance, their redirect URIs and
//! grant types stored as JSON arrays (a deleted client keeps its row,
//! `revoked_at`, so its id is never handed out again and what it was
//! given stays explainable; it is unknown to every API); `oauth_codes`,
//! authorization codes by the SHA-256 of the code, one per sealed request;
//! `oauth_grants`, what a redeemed code made; `oauth_refresh_tokens`, the
//! refresh tokens of a grant by the SHA-256 of each, one generation after
//! another. Only the ledger writes them.

use mandate_core::oauth::family::RevokeReason;

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

/// The client `client_id` of whichever organisation registered it, unless
/// deleted: the authorization endpoint knows no organisation yet.
pub fn client_by_id(conn: &Connection, client_id: &str) -> sql::Result<Option<OAuthClient>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM oauth_clients WHERE client_id = ?1 AND revoked_at IS NULL"
    ))?
    .query_row([client_id], from_row)
    .optional()
}

/// An authorization code as stored: everything the token request is
/// checked against and the grant is made of, never the code itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthCode {
    /// SHA-256 of the code.
    pub code_hash: Vec<u8>,
    /// SHA-256 of the sealed request it answers (one code per request).
    pub request_hash: Vec<u8>,
    pub org: Org,
    /// The consenting human (`sha256:<hex>`).
    pub human_ref: String,
    /// How the human signed in (`L1`: an API key).
    pub assurance: String,
    pub client_id: String,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub resource: Option<String>,
    pub dpop_jkt: Option<String>,
    /// The human's choice, JSON (`api::oauth_consent::Choice`).
    pub choice: String,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Unix milliseconds.
    pub expires_at: i64,
    pub used_at: Option<i64>,
    /// The grant the code made, once redeemed.
    pub grant_id: Option<String>,
}

const CODE_COLUMNS: &str = "code_hash, request_hash, org, human_ref, assurance, client_id, \
    redirect_uri, code_challenge, resource, dpop_jkt, choice, created_at, expires_at, used_at, grant_id";

fn code_from_row(row: &Row<'_>) -> sql::Result<OAuthCode> {
    Ok(OAuthCode {
        code_hash: row.get("code_hash")?,
        request_hash: row.get("request_hash")?,
        org: row.get("org")?,
        human_ref: row.get("human_ref")?,
        assurance: row.get("assurance")?,
        client_id: row.get("client_id")?,
        redirect_uri: row.get("redirect_uri")?,
        code_challenge: row.get("code_challenge")?,
        resource: row.get("resource")?,
        dpop_jkt: row.get("dpop_jkt")?,
        choice: row.get("choice")?,
        created_at: row.get("created_at")?,
        expires_at: row.get("expires_at")?,
        used_at: row.get("used_at")?,
        grant_id: row.get("grant_id")?,
    })
}

/// Whether a code answers the sealed request of this hash already.
pub fn request_answered(conn: &Connection, request_hash: &[u8]) -> sql::Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM oauth_codes WHERE request_hash = ?1")?
        .query_row([request_hash], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Stores a new code.
pub fn insert_code(conn: &Connection, code: &OAuthCode) -> sql::Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO oauth_codes ({CODE_COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
    ))?
    .execute(params![
        code.code_hash.as_slice(),
        code.request_hash.as_slice(),
        code.org,
        code.human_ref,
        code.assurance,
        code.client_id,
        code.redirect_uri,
        code.code_challenge,
        code.resource,
        code.dpop_jkt,
        code.choice,
        code.created_at,
        code.expires_at,
        code.used_at,
        code.grant_id
    ])?;
    Ok(())
}

/// The code whose SHA-256 is `code_hash`, used or not.
pub fn code(conn: &Connection, code_hash: &[u8]) -> sql::Result<Option<OAuthCode>> {
    conn.prepare_cached(&format!(
        "SELECT {CODE_COLUMNS} FROM oauth_codes WHERE code_hash = ?1"
    ))?
    .query_row([code_hash], code_from_row)
    .optional()
}

/// Marks a code redeemed at `now` (unix milliseconds) into `grant_id`.
pub fn use_code(conn: &Connection, code_hash: &[u8], now: i64, grant_id: &str) -> sql::Result<()> {
    conn.prepare_cached("UPDATE oauth_codes SET used_at = ?2, grant_id = ?3 WHERE code_hash = ?1")?
        .execute(params![code_hash, now, grant_id])?;
    Ok(())
}

/// A consent's grant: what a redeemed code made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthGrant {
    /// `ogr_<ulid>`.
    pub grant_id: String,
    pub org: Org,
    pub human_ref: String,
    pub client_id: String,
    /// The host of a client ID metadata document URL; none for a
    /// pre-registered client.
    pub client_host: Option<String>,
    /// The client's name as the consent showed it.
    pub client_name: String,
    pub resource: Option<String>,
    pub agent_id: String,
    /// The grant root's jti: revoking it ends everything the grant issued.
    pub root_jti: String,
    /// The granted scope, as a `scope` parameter.
    pub scope: String,
    /// The thumbprint of the key the grant's refresh tokens and access
    /// tokens are bound to (RFC 9449 §5), fixed at redemption; none for an
    /// unbound grant, which stays unbound.
    pub cnf_jkt: Option<String>,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Unix milliseconds: the grant root's `exp`.
    pub expires_at: i64,
    /// Unix milliseconds: the redemption or the last refresh.
    pub last_used_at: i64,
    /// Unix milliseconds.
    pub revoked_at: Option<i64>,
    /// Why it was revoked (core's `family::RevokeReason`, as stored).
    pub revoke_reason: Option<String>,
}

const GRANT_COLUMNS: &str = "grant_id, org, human_ref, client_id, client_host, client_name, \
    resource, agent_id, root_jti, scope, cnf_jkt, created_at, expires_at, last_used_at, revoked_at, \
    revoke_reason";

fn grant_from_row(row: &Row<'_>) -> sql::Result<OAuthGrant> {
    let created_at: i64 = row.get("created_at")?;
    Ok(OAuthGrant {
        grant_id: row.get("grant_id")?,
        org: row.get("org")?,
        human_ref: row.get("human_ref")?,
        client_id: row.get("client_id")?,
        client_host: row.get("client_host")?,
        client_name: row.get("client_name")?,
        resource: row.get("resource")?,
        agent_id: row.get("agent_id")?,
        root_jti: row.get("root_jti")?,
        scope: row.get("scope")?,
        cnf_jkt: row.get("cnf_jkt")?,
        created_at,
        expires_at: row.get("expires_at")?,
        last_used_at: row
            .get::<_, Option<i64>>("last_used_at")?
            .unwrap_or(created_at),
        revoked_at: row.get("revoked_at")?,
        revoke_reason: row.get("revoke_reason")?,
    })
}

/// Stores a new grant.
pub fn insert_grant(conn: &Connection, grant: &OAuthGrant) -> sql::Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO oauth_grants ({GRANT_COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
    ))?
    .execute(params![
        grant.grant_id,
        grant.org,
        grant.human_ref,
        grant.client_id,
        grant.client_host,
        grant.client_name,
        grant.resource,
        grant.agent_id,
        grant.root_jti,
        grant.scope,
        grant.cnf_jkt,
        grant.created_at,
        grant.expires_at,
        grant.last_used_at,
        grant.revoked_at,
        grant.revoke_reason
    ])?;
    Ok(())
}

/// The grant `grant_id`, of whichever organisation.
pub fn grant(conn: &Connection, grant_id: &str) -> sql::Result<Option<OAuthGrant>> {
    conn.prepare_cached(&format!(
        "SELECT {GRANT_COLUMNS} FROM oauth_grants WHERE grant_id = ?1"
    ))?
    .query_row([grant_id], grant_from_row)
    .optional()
}

/// The grant whose root is `root_jti`, if that token is a grant root.
pub fn grant_of_root(conn: &Connection, root_jti: &str) -> sql::Result<Option<OAuthGrant>> {
    conn.prepare_cached(&format!(
        "SELECT {GRANT_COLUMNS} FROM oauth_grants WHERE root_jti = ?1"
    ))?
    .query_row([root_jti], grant_from_row)
    .optional()
}

/// The grants of `org`, of one human and one client when named, newest
/// first, older than `before` (a grant's `created_at` and id) when given,
/// at most `limit`. A grant whose root was revoked by another path
/// (`POST /v1/vat/revoke`, a signing key's revocation) shows as revoked
/// for `root_revoked` at the root's revocation, though its row is marked
/// only when a refresh finds it out.
pub fn grants(
    conn: &Connection,
    org: Org,
    human_ref: Option<&str>,
    client_id: Option<&str>,
    before: Option<(i64, &str)>,
    limit: u32,
) -> sql::Result<Vec<OAuthGrant>> {
    // One statement per combination of filters: each is a plain equality
    // the indexes (org, human_ref) and (org, client_id) serve.
    let limit = i64::from(limit);
    let mut values: Vec<&dyn sql::types::ToSql> = vec![&org, &limit];
    let mut filter = String::new();
    for (column, value) in [("human_ref", &human_ref), ("client_id", &client_id)] {
        if let Some(value) = value {
            values.push(value);
            filter.push_str(&format!(" AND g.{column} = ?{}", values.len()));
        }
    }
    if let Some((at, id)) = &before {
        values.push(at);
        values.push(id);
        let (at, id) = (values.len() - 1, values.len());
        filter.push_str(&format!(
            " AND (g.created_at < ?{at} OR (g.created_at = ?{at} AND g.grant_id < ?{id}))"
        ));
    }
    let mut statement = conn.prepare_cached(&format!(
        "SELECT g.grant_id, g.org, g.human_ref, g.client_id, g.client_host, g.client_name,
                g.resource, g.agent_id, g.root_jti, g.scope, g.cnf_jkt, g.created_at, g.expires_at,
                g.last_used_at,
                COALESCE(g.revoked_at, t.revoked_at * 1000) AS revoked_at,
                CASE WHEN g.revoked_at IS NOT NULL THEN g.revoke_reason
                     WHEN t.revoked_at IS NOT NULL THEN '{root_revoked}' END AS revoke_reason
         FROM oauth_grants g LEFT JOIN tokens t ON t.jti = g.root_jti
         WHERE g.org = ?1{filter}
         ORDER BY g.created_at DESC, g.grant_id DESC LIMIT ?2",
        root_revoked = RevokeReason::RootRevoked.as_str(),
    ))?;
    statement
        .query_map(values.as_slice(), grant_from_row)?
        .collect()
}

/// Marks a grant used at `now` (unix milliseconds): a refresh.
pub fn touch_grant(conn: &Connection, grant_id: &str, now: i64) -> sql::Result<()> {
    conn.prepare_cached("UPDATE oauth_grants SET last_used_at = ?2 WHERE grant_id = ?1")?
        .execute(params![grant_id, now])?;
    Ok(())
}

/// Marks a grant revoked at `now` (unix milliseconds) for `reason`,
/// unless it was before (the first reason stands).
pub fn revoke_grant(conn: &Connection, grant_id: &str, now: i64, reason: &str) -> sql::Result<()> {
    conn.prepare_cached(
        "UPDATE oauth_grants SET revoked_at = ?2, revoke_reason = ?3
         WHERE grant_id = ?1 AND revoked_at IS NULL",
    )?
    .execute(params![grant_id, now, reason])?;
    Ok(())
}

/// A refresh token as stored: never the token, only its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshToken {
    pub token_hash: Vec<u8>,
    pub grant_id: String,
    /// 0 for the redemption's, then one more at each refresh.
    pub generation: u64,
    /// Unix milliseconds.
    pub issued_at: i64,
    /// Unix milliseconds: when it was refreshed with.
    pub used_at: Option<i64>,
}

fn refresh_from_row(row: &Row<'_>) -> sql::Result<RefreshToken> {
    let generation: i64 = row.get("generation")?;
    Ok(RefreshToken {
        token_hash: row.get("token_hash")?,
        grant_id: row.get("grant_id")?,
        generation: u64::try_from(generation)
            .map_err(|error| sql::Error::corrupt("generation", error))?,
        issued_at: row.get("issued_at")?,
        used_at: row.get("used_at")?,
    })
}

/// Stores a grant's refresh token of `generation`.
pub fn insert_refresh_token(
    conn: &Connection,
    token_hash: &[u8],
    grant_id: &str,
    generation: u64,
    now: i64,
) -> sql::Result<()> {
    let generation =
        i64::try_from(generation).map_err(|error| sql::Error::corrupt("generation", error))?;
    conn.prepare_cached(
        "INSERT INTO oauth_refresh_tokens (token_hash, grant_id, generation, issued_at)
         VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![token_hash, grant_id, generation, now])?;
    Ok(())
}

/// The refresh token whose SHA-256 is `token_hash`, used or not.
pub fn refresh_token(conn: &Connection, token_hash: &[u8]) -> sql::Result<Option<RefreshToken>> {
    conn.prepare_cached(
        "SELECT token_hash, grant_id, generation, issued_at, used_at
         FROM oauth_refresh_tokens WHERE token_hash = ?1",
    )?
    .query_row([token_hash], refresh_from_row)
    .optional()
}

/// The newest generation of `grant_id`'s refresh tokens: the current one.
pub fn current_generation(conn: &Connection, grant_id: &str) -> sql::Result<Option<u64>> {
    let newest: Option<i64> = conn
        .prepare_cached("SELECT max(generation) FROM oauth_refresh_tokens WHERE grant_id = ?1")?
        .query_row([grant_id], |row| row.get(0))?;
    newest
        .map(|generation| {
            u64::try_from(generation).map_err(|error| sql::Error::corrupt("generation", error))
        })
        .transpose()
}

/// Marks a refresh token used at `now` (unix milliseconds), replaced by
/// the token of SHA-256 `replaced_by`.
pub fn use_refresh_token(
    conn: &Connection,
    token_hash: &[u8],
    now: i64,
    replaced_by: &[u8],
) -> sql::Result<()> {
    conn.prepare_cached(
        "UPDATE oauth_refresh_tokens SET used_at = ?2, replaced_by = ?3 WHERE token_hash = ?1",
    )?
    .execute(params![token_hash, now, replaced_by])?;
    Ok(())
}

/// A resource whose gates relay clients' proofs (schema 14): its URL, as
/// tokens name it in `aud`, and the thumbprints of its relay keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthResource {
    /// `ors_<ulid>`.
    pub resource_id: String,
    pub org: Org,
    pub resource: String,
    /// RFC 7638 thumbprints of the relay keys.
    pub relay_jkts: Vec<String>,
    /// The API key that registered it.
    pub created_by: String,
    /// Unix milliseconds.
    pub created_at: i64,
}

const RESOURCE_COLUMNS: &str = "resource_id, org, resource, relay_jkts, created_by, created_at";

fn resource_from_row(row: &Row<'_>) -> sql::Result<OAuthResource> {
    Ok(OAuthResource {
        resource_id: row.get("resource_id")?,
        org: row.get("org")?,
        resource: row.get("resource")?,
        relay_jkts: list(row, "relay_jkts")?,
        created_by: row.get("created_by")?,
        created_at: row.get("created_at")?,
    })
}

/// Stores a new resource.
pub fn insert_resource(conn: &Connection, resource: &OAuthResource) -> sql::Result<()> {
    let jkts = serde_json::to_string(&resource.relay_jkts)
        .map_err(|error| sql::Error::corrupt("relay_jkts", error))?;
    conn.prepare_cached(&format!(
        "INSERT INTO oauth_resources ({RESOURCE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
    ))?
    .execute(params![
        resource.resource_id,
        resource.org,
        resource.resource,
        jkts,
        resource.created_by,
        resource.created_at
    ])?;
    Ok(())
}

/// The resources of `org`, newest first.
pub fn resources(conn: &Connection, org: Org) -> sql::Result<Vec<OAuthResource>> {
    conn.prepare_cached(&format!(
        "SELECT {RESOURCE_COLUMNS} FROM oauth_resources WHERE org = ?1
         ORDER BY created_at DESC, resource_id DESC"
    ))?
    .query_map([org], resource_from_row)?
    .collect()
}

/// Deletes the resource `resource_id` of `org`; whether there was one.
pub fn delete_resource(conn: &Connection, org: Org, resource_id: &str) -> sql::Result<bool> {
    let deleted = conn
        .prepare_cached("DELETE FROM oauth_resources WHERE resource_id = ?1 AND org = ?2")?
        .execute(params![resource_id, org])?;
    Ok(deleted > 0)
}
