//! `mandate export` and `mandate import`: every row of a deployment as JSON
//! Lines, to move it between engines (a SQLite data folder into
//! PostgreSQL) or to copy it.
//!
//! The file: a header line `{"format":"mandate-export","version":1,
//! "schema":6}`; per table a line `{"table":…,"columns":[…]}` and one JSON
//! array per row, in the order of the table's key (null, numbers, text, and
//! blobs as `{"b64":…}`, base64url without padding); and a last line
//! `{"end":true,"rows":N}`, so a cut file is refused. Secrets stay sealed
//! under the key file, which is not in the export: the hosts of the new
//! database need the same key file.

use std::io::{BufRead, Write};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value as Json, json};

use crate::store::SCHEMA_VERSION;
use crate::store::sql::types::Value;
use crate::store::sql::{Connection, Dialect, params_from_iter};

/// The export format's version.
const FORMAT_VERSION: u64 = 1;

/// Every table of the schema with its columns (a record's `org` is derived
/// from its `seq`, and PostgreSQL's `dpop_proofs` live seconds: neither is
/// exported), in an order that inserts parents before what refers to them,
/// and the key each is written in the order of (tokens by depth, so a
/// parent comes before its children).
const TABLES: [(&str, &[&str], &str); 32] = [
    ("meta", &["key", "value"], "key"),
    (
        "signing_keys",
        &[
            "kid",
            "secret",
            "created_at",
            "retired_at",
            "max_exp",
            "revoked_at",
        ],
        "kid",
    ),
    (
        "orgs",
        &[
            "num",
            "id",
            "name",
            "created_at",
            "records_per_day",
            "tokens_outstanding",
        ],
        "num",
    ),
    (
        "api_keys",
        &[
            "id",
            "hash",
            "email",
            "is_admin",
            "created_at",
            "revoked_at",
            "org",
            "role",
        ],
        "id",
    ),
    (
        "tokens",
        &[
            "jti",
            "parent",
            "jth",
            "provenance_ref",
            "agent_id",
            "depth",
            "claims",
            "kid",
            "issued_at",
            "expires_at",
            "revoked_at",
            "revoke_reason",
            "issued_by",
            "spent_micros",
            "actions",
            "children",
            "org",
            "status_idx",
            "log_issued",
            "log_revoked",
            "revoke_cause",
            "budget_percent",
            "budget_limit",
        ],
        "depth, jti",
    ),
    (
        "records",
        &[
            "seq",
            "aar_id",
            "provenance_ref",
            "jti",
            "agent_id",
            "action",
            "resource",
            "status",
            "result",
            "deny_reason",
            "result_hash",
            "spend_micros",
            "trust_score",
            "delegation_depth",
            "human_ref",
            "assurance_level",
            "rating",
            "note",
            "feedback_at",
            "created_at",
            "completed_at",
            "delegated_jti",
            "credential",
            "reserved_micros",
            "rated_by",
            "log_created",
            "log_completed",
            "log_rated",
            "trust_ppm",
            "traceparent",
            "origin",
            "args_hash",
            "args",
        ],
        "seq",
    ),
    (
        "agents",
        &[
            "org",
            "agent_id",
            "successes",
            "failures",
            "pending",
            "approved",
            "flagged",
            "rejected",
            "denied_requests",
            "last_activity",
            "owner",
            "parent",
        ],
        "org, agent_id",
    ),
    (
        "agent_days",
        &[
            "org",
            "agent_id",
            "day",
            "records",
            "successes",
            "errors",
            "denied",
            "failures",
            "pending",
            "denied_requests",
            "approved",
            "flagged",
            "rejected",
        ],
        "org, agent_id, day",
    ),
    (
        "org_hours",
        &[
            "org",
            "hour",
            "records",
            "successes",
            "errors",
            "denied",
            "ratings",
            "approvals_decided",
            "approval_wait_ms",
            "approval_wait_max_ms",
        ],
        "org, hour",
    ),
    (
        "org_counts",
        &["org", "approvals_pending", "records_unrated"],
        "org",
    ),
    (
        "human_labels",
        &["org", "human_ref", "label", "first_seen"],
        "org, human_ref",
    ),
    (
        "workflows",
        &[
            "provenance_ref",
            "root_jti",
            "root_agent_id",
            "human_ref",
            "assurance_level",
            "created_at",
            "total_records",
            "last_activity",
            "org",
        ],
        "provenance_ref",
    ),
    (
        "workflow_counts",
        &[
            "provenance_ref",
            "agent_id",
            "action",
            "result_key",
            "count",
        ],
        "provenance_ref, agent_id, action, result_key",
    ),
    (
        "idempotency",
        &[
            "org",
            "scope",
            "key",
            "request_hash",
            "status",
            "body",
            "created_at",
        ],
        "org, scope, key",
    ),
    ("log_leaves", &["idx", "hash", "leaf"], "idx"),
    ("log_nodes", &["level", "idx", "hash"], "level, idx"),
    ("log_integration", &["id", "size"], "id"),
    (
        "log_checkpoints",
        &["size", "root", "note", "created_at"],
        "size",
    ),
    (
        "log_keys",
        &["key_id", "secret", "created_at", "retired_at"],
        "key_id",
    ),
    (
        "log_witnesses",
        &["name", "key_id", "size", "updated_at"],
        "name, key_id",
    ),
    (
        "log_cosignatures",
        &["size", "name", "key_id", "timestamp", "line"],
        "size, name, key_id",
    ),
    ("log_submitter", &["id", "owner", "until_ms"], "id"),
    (
        "ledger_state",
        &["id", "next_status_idx", "next_event_seq"],
        "id",
    ),
    (
        "status_lists",
        &["list", "bits", "revision", "updated_at"],
        "list",
    ),
    (
        "approvals",
        &[
            "id",
            "aar_id",
            "org",
            "status",
            "requested_at",
            "expires_at",
            "decided_at",
            "decided_by",
            "note",
            "log_decided",
        ],
        "id",
    ),
    (
        "events",
        &["seq", "id", "org", "type", "created_at", "payload"],
        "seq",
    ),
    (
        "webhooks",
        &[
            "id",
            "org",
            "url",
            "events",
            "description",
            "secret",
            "previous_secret",
            "previous_until",
            "created_at",
            "created_by",
            "enabled",
            "disabled_at",
            "disabled_reason",
            "cursor",
            "attempts",
            "first_attempt_at",
            "next_attempt_at",
            "lease_until",
            "lease_owner",
        ],
        "id",
    ),
    (
        "deliveries",
        &[
            "webhook",
            "event_seq",
            "attempt",
            "message_id",
            "type",
            "at",
            "outcome",
            "http_status",
            "error",
            "duration_ms",
        ],
        "webhook, event_seq, attempt",
    ),
    (
        "oauth_clients",
        &[
            "client_id",
            "org",
            "name",
            "redirect_uris",
            "grant_types",
            "created_by",
            "created_at",
            "revoked_at",
        ],
        "client_id",
    ),
    (
        "oauth_codes",
        &[
            "code_hash",
            "request_hash",
            "org",
            "human_ref",
            "assurance",
            "client_id",
            "redirect_uri",
            "code_challenge",
            "resource",
            "dpop_jkt",
            "choice",
            "created_at",
            "expires_at",
            "used_at",
            "grant_id",
        ],
        "code_hash",
    ),
    (
        "oauth_grants",
        &[
            "grant_id",
            "org",
            "human_ref",
            "client_id",
            "client_host",
            "client_name",
            "resource",
            "agent_id",
            "root_jti",
            "scope",
            "cnf_jkt",
            "created_at",
            "expires_at",
            "last_used_at",
            "revoked_at",
            "revoke_reason",
        ],
        "grant_id",
    ),
    (
        "oauth_refresh_tokens",
        &[
            "token_hash",
            "grant_id",
            "generation",
            "issued_at",
            "used_at",
            "replaced_by",
        ],
        "token_hash",
    ),
];

fn to_json(value: Value) -> Json {
    match value {
        Value::Null => Json::Null,
        Value::Integer(i) => json!(i),
        Value::Real(f) => json!(f),
        Value::Text(text) => Json::String(text),
        Value::Blob(bytes) => json!({ "b64": URL_SAFE_NO_PAD.encode(bytes) }),
    }
}

fn from_json(value: &Json) -> anyhow::Result<Value> {
    Ok(match value {
        Json::Null => Value::Null,
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Integer(i),
            None => Value::Real(
                n.as_f64()
                    .ok_or_else(|| anyhow::anyhow!("a number out of range: {n}"))?,
            ),
        },
        Json::String(text) => Value::Text(text.clone()),
        Json::Object(blob) => match (blob.get("b64"), blob.len()) {
            (Some(Json::String(b64)), 1) => Value::Blob(
                URL_SAFE_NO_PAD
                    .decode(b64)
                    .map_err(|e| anyhow::anyhow!("a blob is not base64url: {e}"))?,
            ),
            _ => anyhow::bail!("an object that is not a blob: {value}"),
        },
        Json::Bool(_) | Json::Array(_) => anyhow::bail!("a value of no column type: {value}"),
    })
}

/// Writes every row of `conn`'s database to `out`; answers how many.
pub fn export(conn: &Connection, out: &mut impl Write) -> anyhow::Result<u64> {
    writeln!(
        out,
        "{}",
        json!({"format": "mandate-export", "version": FORMAT_VERSION, "schema": SCHEMA_VERSION})
    )?;
    let mut total = 0u64;
    for (table, columns, order) in TABLES {
        writeln!(out, "{}", json!({"table": table, "columns": columns}))?;
        let mut statement = conn.prepare_cached(&format!(
            "SELECT {} FROM {table} ORDER BY {order}",
            columns.join(", ")
        ))?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            let values = (0..columns.len())
                .map(|i| row.get::<_, Value>(i).map(to_json))
                .collect::<Result<Vec<_>, _>>()?;
            writeln!(out, "{}", Json::Array(values))?;
            total += 1;
        }
    }
    writeln!(out, "{}", json!({"end": true, "rows": total}))?;
    out.flush()?;
    Ok(total)
}

/// Whether the database holds a deployment already (keys, tokens or
/// records): an import never mixes two.
fn holds_a_deployment(conn: &Connection) -> anyhow::Result<bool> {
    for table in ["meta", "signing_keys", "api_keys", "tokens", "records"] {
        let found: i64 = conn.query_row(
            &format!("SELECT count(*) FROM (SELECT 1 FROM {table} LIMIT 1) AS any_row"),
            [],
            |row| row.get(0),
        )?;
        if found > 0 {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Loads an export into `conn`'s database, which must hold no deployment,
/// in one transaction: a refused or cut file leaves nothing. Answers how
/// many rows.
pub fn import(conn: &Connection, input: impl BufRead) -> anyhow::Result<u64> {
    if holds_a_deployment(conn)? {
        anyhow::bail!(
            "the database already holds a deployment (keys, tokens or records); import only into a new one"
        );
    }
    let mut lines = input.lines();
    let mut next = || -> anyhow::Result<Option<Json>> {
        match lines.next() {
            None => Ok(None),
            Some(line) => Ok(Some(serde_json::from_str(&line?)?)),
        }
    };
    let header = next()?.ok_or_else(|| anyhow::anyhow!("the file is empty"))?;
    if header["format"] != "mandate-export" || header["version"] != FORMAT_VERSION {
        anyhow::bail!("not a Mandate export of format version {FORMAT_VERSION}");
    }
    if header["schema"] != SCHEMA_VERSION {
        anyhow::bail!(
            "the export is of schema version {}, this build writes {SCHEMA_VERSION}; import it with the build that made it and upgrade then",
            header["schema"]
        );
    }
    let tx = conn.unchecked_transaction()?;
    // A new database holds the default organisation and the empty log's
    // state its schema made; the export has its own.
    tx.execute("DELETE FROM orgs", [])?;
    tx.execute("DELETE FROM ledger_state", [])?;
    tx.execute("DELETE FROM log_integration", [])?;
    let mut insert: Option<(String, usize)> = None;
    let mut total = 0u64;
    loop {
        let line = next()?.ok_or_else(|| {
            anyhow::anyhow!("the file ends before its last line: it was cut; nothing was imported")
        })?;
        match line {
            Json::Array(values) => {
                let Some((sql, width)) = &insert else {
                    anyhow::bail!("a row before any table");
                };
                if values.len() != *width {
                    anyhow::bail!(
                        "a row of {} values where {width} were expected",
                        values.len()
                    );
                }
                let values = values
                    .iter()
                    .map(from_json)
                    .collect::<anyhow::Result<Vec<_>>>()?;
                tx.prepare_cached(sql)?.execute(params_from_iter(values))?;
                total += 1;
            }
            Json::Object(ref object) if object.contains_key("table") => {
                let table = line["table"].as_str().unwrap_or_default();
                let columns: Vec<&str> = line["columns"]
                    .as_array()
                    .map(|c| c.iter().filter_map(Json::as_str).collect())
                    .unwrap_or_default();
                match TABLES.iter().find(|(name, _, _)| *name == table) {
                    Some((_, known, _)) if *known == columns.as_slice() => {}
                    Some(_) => anyhow::bail!("the columns of {table} are not those of this schema"),
                    None => anyhow::bail!("an unknown table: {table:?}"),
                }
                let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
                insert = Some((
                    format!(
                        "INSERT INTO {table} ({}) VALUES ({})",
                        columns.join(", "),
                        marks.join(", ")
                    ),
                    columns.len(),
                ));
            }
            Json::Object(ref object) if object.get("end") == Some(&Json::Bool(true)) => {
                if line["rows"] != total {
                    anyhow::bail!(
                        "the file says {} rows and holds {total}: nothing was imported",
                        line["rows"]
                    );
                }
                break;
            }
            other => anyhow::bail!("a line of no known kind: {other}"),
        }
    }
    // Status indexes go on past every token's: a PostgreSQL deployment
    // takes them from its `status_idx` sequence, not the state row.
    tx.execute(
        "UPDATE ledger_state SET next_status_idx = CASE
             WHEN (SELECT COALESCE(max(status_idx) + 1, 0) FROM tokens) > next_status_idx
             THEN (SELECT COALESCE(max(status_idx) + 1, 0) FROM tokens)
             ELSE next_status_idx END",
        [],
    )?;
    if tx.dialect() == Dialect::Postgres {
        tx.execute(
            "SELECT setval('status_idx', next_status_idx, false) FROM ledger_state",
            [],
        )?;
    }
    tx.commit()?;
    Ok(total)
}
