//! The migrations to schemas 4 (organisations) and 5 (the record log), on a
//! database made by the release before organisations
//! (`tests/fixtures/v3-data.sql`, schema 3): everything stored joins the
//! `default` organisation and answers exactly as it did, opening the
//! database again changes nothing, a new organisation sees none of it, and
//! the first start begins the record log with all of it.
//!
//! The expected answers are read from the fixture before it is migrated,
//! with plain SQL and with the store's functions that need no `org` column,
//! never written down by hand.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use mandate_core::{OrgId, ReputationCounts, Role, SummaryRow, Ulid, WorkflowSummary, summarize};
use mandate_host::apikeys;
use mandate_host::queries::{
    self, DescendantPage, MAX_LIMIT, Page, QueryError, RecordFilter, TokenTree, Workflow,
    WorkflowFilter,
};
use mandate_host::store::Connection;
use mandate_host::store::idempotency::{self, Stored, StoredReply};
use mandate_host::store::orgs::{self, Org, Quotas};
use mandate_host::store::records::{self, Record};
use mandate_host::store::sql::types::Value;
use mandate_host::store::tokens::{self, After, TokenRow};
use mandate_host::store::{self, DB_FILE};

/// The data folder's database as the release before organisations left it,
/// without the rows of `meta` and `signing_keys`, and without its
/// `user_version` (3), which [`load_fixture`] sets.
const FIXTURE: &str = include_str!("../fixtures/v3-data.sql");

/// The tables of schema 3 that hold data, each with the order of its key.
const TABLES: [(&str, &str); 7] = [
    ("api_keys", "id"),
    ("tokens", "jti"),
    ("records", "seq"),
    ("agents", "agent_id"),
    ("workflows", "provenance_ref"),
    (
        "workflow_counts",
        "provenance_ref, agent_id, action, result_key",
    ),
    ("idempotency", "scope, key"),
];

/// Tables that gain an `org` column (generated, for records).
const WITH_ORG: [&str; 6] = [
    "api_keys",
    "tokens",
    "records",
    "agents",
    "workflows",
    "idempotency",
];

/// An API key as schema 3 stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct OldKey {
    id: String,
    email: Option<String>,
    is_admin: bool,
    created_at: i64,
    revoked_at: Option<i64>,
}

/// What the fixture holds and how it answered, read before migrating.
#[derive(Debug)]
struct Before {
    /// Every table's schema-3 columns and rows, in the order of its key.
    tables: BTreeMap<&'static str, (Vec<String>, Vec<Vec<Value>>)>,
    keys: Vec<OldKey>,
    /// Oldest first.
    records: Vec<Record>,
    agents: Vec<(String, ReputationCounts)>,
    summaries: Vec<WorkflowSummary>,
    /// Most recently active first, as the workflow list orders them.
    workflows: Vec<Workflow>,
    /// Every token, with every one of its descendants.
    trees: Vec<(TokenRow, Vec<TokenRow>)>,
    idempotency: Vec<(String, String, Stored)>,
}

fn load_fixture(path: &Path) {
    let conn = Connection::sqlite(rusqlite::Connection::open(path).unwrap());
    conn.execute_batch(FIXTURE).unwrap();
    conn.as_sqlite()
        .unwrap()
        .pragma_update(None, "user_version", 3)
        .unwrap();
}

fn user_version(conn: &Connection) -> i64 {
    conn.as_sqlite()
        .unwrap()
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap()
}

fn columns(conn: &Connection, table: &str) -> Vec<String> {
    let mut statement = conn
        .prepare_cached(&format!("SELECT name FROM pragma_table_info('{table}')"))
        .unwrap();
    statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Every row of `sql`, every column as stored.
fn rows(conn: &Connection, sql: &str) -> Vec<Vec<Value>> {
    let mut statement = conn.prepare_cached(sql).unwrap();
    let width = statement.column_names().unwrap().len();
    statement
        .query_map([], |row| (0..width).map(|i| row.get(i)).collect())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The rows of `table` in the columns schema 3 gave it.
fn old_rows(conn: &Connection, table: &str, order: &str, columns: &[String]) -> Vec<Vec<Value>> {
    rows(
        conn,
        &format!(
            "SELECT {} FROM {table} ORDER BY {order}",
            columns.join(", ")
        ),
    )
}

fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap()
}

/// Reads the fixture at schema 3.
fn read_before(conn: &Connection) -> Before {
    assert_eq!(user_version(conn), 3);
    let tables = TABLES
        .iter()
        .map(|&(table, order)| {
            let columns = columns(conn, table);
            assert!(
                !columns.iter().any(|c| c == "org"),
                "{table} has no org before"
            );
            let rows = old_rows(conn, table, order, &columns);
            (table, (columns, rows))
        })
        .collect();

    let keys = conn
        .prepare_cached(
            "SELECT id, email, is_admin, created_at, revoked_at FROM api_keys ORDER BY id",
        )
        .unwrap()
        .query_map([], |row| {
            Ok(OldKey {
                id: row.get(0)?,
                email: row.get(1)?,
                is_admin: row.get(2)?,
                created_at: row.get(3)?,
                revoked_at: row.get(4)?,
            })
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();

    // The record columns the store reads all exist in schema 3 but those of
    // schemas 5 and 6, which the migrations fill so: a pending record's
    // spend is its reservation; the log's columns wait for the log's first
    // start; no record had a trace context, nor arguments (schema 11).
    let schema_3 = records::select_sql().replace(
        "reserved_micros, rated_by, log_created, log_completed, log_rated, traceparent, origin, trust_ppm, args_hash, args, relay_jkt",
        "CASE WHEN status = 'pending' THEN spend_micros END, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL",
    );
    let records = conn
        .prepare_cached(&format!("{schema_3} ORDER BY seq"))
        .unwrap()
        .query_map([], records::from_row)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();

    let agents = conn
        .prepare_cached(
            "SELECT agent_id, successes, failures, pending, approved, flagged, rejected
             FROM agents ORDER BY agent_id",
        )
        .unwrap()
        .query_map([], |row| {
            Ok((
                row.get(0)?,
                ReputationCounts {
                    successes: count(row.get(1)?),
                    failures: count(row.get(2)?),
                    pending: count(row.get(3)?),
                    approved: count(row.get(4)?),
                    flagged: count(row.get(5)?),
                    rejected: count(row.get(6)?),
                    ..ReputationCounts::default()
                },
            ))
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();

    let workflows = conn
        .prepare_cached(
            "SELECT provenance_ref, root_jti, root_agent_id, human_ref, assurance_level,
                    total_records, created_at, last_activity,
                    (SELECT k.email FROM tokens t JOIN api_keys k ON k.id = t.issued_by
                     WHERE t.jti = w.root_jti AND k.is_admin = 0 AND w.assurance_level = 'L1')
             FROM workflows w ORDER BY last_activity DESC, provenance_ref DESC",
        )
        .unwrap()
        .query_map([], |row| {
            Ok(Workflow {
                provenance_ref: row.get(0)?,
                root_jti: row.get(1)?,
                root_agent_id: row.get(2)?,
                human_ref: row.get(3)?,
                assurance_level: row.get(4)?,
                total_records: count(row.get(5)?),
                created_at: row.get(6)?,
                last_activity: row.get(7)?,
                // A developer key issues only for its own e-mail: the
                // migration to schema 7 labels its humans with it.
                human_label: row.get(8)?,
            })
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();

    // A summary as schema 3 answered it: its `workflow_counts`, folded.
    let counts: Vec<(String, String, String, String, i64)> = conn
        .prepare_cached(
            "SELECT provenance_ref, agent_id, action, result_key, count FROM workflow_counts
             ORDER BY provenance_ref, agent_id, action, result_key",
        )
        .unwrap()
        .query_map([], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let summaries = workflows
        .iter()
        .map(|workflow| {
            let rows = counts
                .iter()
                .filter(|c| c.0 == workflow.provenance_ref)
                .map(|(_, agent_id, action, result, n)| SummaryRow {
                    agent_id,
                    action,
                    result,
                    count: count(*n),
                });
            summarize(&workflow.provenance_ref, rows)
        })
        .collect();

    // Descendants come from the store's own reading, which needs no `org`.
    let trees = conn
        .prepare_cached(&format!("{} ORDER BY jti", tokens::select_sql()))
        .unwrap()
        .query_map([], tokens::token_row)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
        .into_iter()
        .map(|token| {
            let descendants =
                tokens::descendants(conn, &token.jti, &After::start(), i64::from(MAX_LIMIT))
                    .unwrap();
            (token, descendants)
        })
        .collect();

    let idempotency = conn
        .prepare_cached(
            "SELECT scope, key, request_hash, status, body FROM idempotency ORDER BY scope, key",
        )
        .unwrap()
        .query_map([], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                Stored {
                    request_sha256: row.get(2)?,
                    reply: StoredReply {
                        status: row.get(3)?,
                        body: row.get(4)?,
                    },
                },
            ))
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();

    Before {
        tables,
        keys,
        records,
        agents,
        summaries,
        workflows,
        trees,
        idempotency,
    }
}

/// The fixture holds what its header says, so that every check below has
/// something to check.
fn assert_fixture_is_rich(before: &Before) {
    assert_eq!(before.keys.len(), 2, "the admin key and a developer key");
    assert_eq!(before.keys.iter().filter(|k| k.is_admin).count(), 1);
    let results: BTreeSet<&str> = before
        .records
        .iter()
        .map(|r| r.state.result_key())
        .collect();
    for key in ["success", "error", "denied", "pending"] {
        assert!(results.contains(key), "a {key} record: {results:?}");
    }
    assert!(before.records.iter().any(|r| r.state.rating().is_some()));
    assert!(before.records.iter().any(|r| r.delegated_jti.is_some()));
    assert!(
        before
            .records
            .iter()
            .any(|r| r.completed_at > Some(r.created_at))
    );
    assert!(before.trees.iter().any(|(t, _)| t.revoked_at.is_some()));
    assert!(before.trees.iter().any(|(_, d)| !d.is_empty()));
    assert!(before.agents.len() >= 3 && before.workflows.len() >= 2);
    assert_eq!(before.idempotency.len(), 1);
    assert!(before.records.windows(2).all(|w| w[0].seq < w[1].seq));
    assert!(before.records.iter().all(|r| r.seq < 1 << 40));
}

fn filter() -> RecordFilter {
    RecordFilter {
        limit: MAX_LIMIT,
        ..RecordFilter::default()
    }
}

/// The records of `org` a filter finds, following every cursor.
fn all_records(conn: &Connection, org: Org, filter: &RecordFilter) -> Vec<Record> {
    let mut found = Vec::new();
    let mut filter = filter.clone();
    loop {
        let page = queries::records(conn, org, &filter).unwrap();
        found.extend(page.items);
        match page.next_cursor {
            Some(cursor) => filter.cursor = Some(cursor),
            None => return found,
        }
    }
}

/// The fixture's records matching `keep`, newest first, as record lists
/// order them.
fn newest_first(before: &Before, keep: impl Fn(&Record) -> bool) -> Vec<Record> {
    before
        .records
        .iter()
        .rev()
        .filter(|r| keep(r))
        .cloned()
        .collect()
}

fn check_migrated(conn: &Connection, before: &Before) {
    assert_eq!(user_version(conn), store::SCHEMA_VERSION);

    // One organisation, `default`, number 0.
    let listed = orgs::list(conn, None, 10).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let default = &listed[0];
    assert_eq!(default.org, Org::DEFAULT);
    assert_eq!(default.org.number(), 0);
    assert_eq!(default.name, "default");
    assert!(default.id.starts_with("org_"), "{}", default.id);
    OrgId::parse(&default.id).unwrap();
    assert_eq!(default.quotas, Quotas::default());
    assert_eq!(
        orgs::by_name(conn, "default").unwrap().as_ref(),
        Some(default)
    );

    // Keys: the admin key owns `default`, the others are its developers.
    let keys = apikeys::list(conn, None).unwrap();
    assert_eq!(keys, apikeys::list(conn, Some(Org::DEFAULT)).unwrap());
    assert_eq!(keys.len(), before.keys.len());
    for old in &before.keys {
        let key = keys.iter().find(|k| k.id == old.id).unwrap();
        assert_eq!(key.org, Org::DEFAULT);
        assert_eq!(key.email, old.email);
        assert_eq!(key.is_admin, old.is_admin);
        assert_eq!(key.created_at, old.created_at);
        assert_eq!(key.revoked_at, old.revoked_at);
        let role = if old.is_admin {
            Role::Owner
        } else {
            Role::Developer
        };
        assert_eq!(key.role, role, "{}", old.id);
    }
    let admin = keys.iter().find(|k| k.is_admin).unwrap();
    assert_eq!(
        (admin.role, admin.org, admin.email.as_deref()),
        (Role::Owner, Org::DEFAULT, None)
    );
    let developer = keys.iter().find(|k| !k.is_admin).unwrap();
    assert_eq!(developer.email.as_deref(), Some("dev@example.com"));
    assert_eq!(developer.role, Role::Developer);

    // Every object is in organisation 0, and every old column is unchanged.
    for table in WITH_ORG {
        let outside: i64 = conn
            .query_row(
                &format!("SELECT count(*) FROM {table} WHERE org != 0"),
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(outside, 0, "{table} rows outside organisation 0");
    }
    for (table, order) in TABLES {
        let (columns, rows) = &before.tables[table];
        assert!(!rows.is_empty(), "the fixture has {table} rows");
        assert_eq!(
            &old_rows(conn, table, order, columns),
            rows,
            "{table} as it was"
        );
    }
    let seqs = rows(conn, "SELECT seq, org FROM records ORDER BY seq");
    let expected: Vec<Vec<Value>> = before
        .records
        .iter()
        .map(|r| vec![Value::Integer(r.seq), Value::Integer(0)])
        .collect();
    assert_eq!(seqs, expected, "records keep their seq, in organisation 0");
    for (token, _) in &before.trees {
        assert_eq!(
            tokens::org_of(conn, &token.jti).unwrap(),
            Some(Org::DEFAULT)
        );
    }

    // Agents: found under (0, agent_id), counters unchanged.
    let agents = rows(conn, "SELECT org, agent_id FROM agents ORDER BY agent_id");
    let expected: Vec<Vec<Value>> = before
        .agents
        .iter()
        .map(|(agent, _)| vec![Value::Integer(0), Value::Text(agent.clone())])
        .collect();
    assert_eq!(agents, expected);
    for (agent, counts) in &before.agents {
        assert_eq!(
            queries::agent_counts(conn, Org::DEFAULT, agent),
            Ok(*counts),
            "{agent}"
        );
        assert_eq!(
            mandate_core::reputation(&queries::agent_counts(conn, Org::DEFAULT, agent).unwrap()),
            mandate_core::reputation(counts)
        );
    }

    // Workflow summaries: as schema 3 counted them, and as the records fold.
    for summary in &before.summaries {
        let provenance_ref = &summary.provenance_ref;
        assert_eq!(
            queries::workflow_summary(conn, Org::DEFAULT, provenance_ref).as_ref(),
            Ok(summary)
        );
        let folded = summarize(
            provenance_ref,
            before
                .records
                .iter()
                .filter(|r| &r.provenance_ref == provenance_ref)
                .map(|r| SummaryRow {
                    agent_id: &r.agent_id,
                    action: &r.action,
                    result: r.state.result_key(),
                    count: 1,
                }),
        );
        assert_eq!(&folded, summary);
    }

    // Workflow lists.
    let workflows = queries::workflows(
        conn,
        Org::DEFAULT,
        &WorkflowFilter {
            limit: 50,
            ..WorkflowFilter::default()
        },
    )
    .unwrap();
    assert_eq!(workflows.items, before.workflows);
    assert_eq!(workflows.next_cursor, None);
    for (agent, _) in &before.agents {
        let theirs: BTreeSet<&str> = before
            .trees
            .iter()
            .filter(|(t, _)| &t.agent_id == agent)
            .map(|(t, _)| t.provenance_ref.as_str())
            .collect();
        let expected: Vec<Workflow> = before
            .workflows
            .iter()
            .filter(|w| theirs.contains(w.provenance_ref.as_str()))
            .cloned()
            .collect();
        let found = queries::workflows(
            conn,
            Org::DEFAULT,
            &WorkflowFilter {
                agent_id: Some(agent.clone()),
                limit: 50,
                ..WorkflowFilter::default()
            },
        )
        .unwrap();
        assert_eq!(found.items, expected, "workflows of {agent}");
    }

    // Records, one by one and listed.
    for record in &before.records {
        assert_eq!(
            queries::record(conn, Org::DEFAULT, &record.aar_id).as_ref(),
            Ok(record)
        );
        assert_eq!(record.org(), Org::DEFAULT);
    }
    let everything = newest_first(before, |_| true);
    let page = queries::records(conn, Org::DEFAULT, &filter()).unwrap();
    assert_eq!(page.items, everything);
    assert_eq!(page.next_cursor, None);
    let small_pages = RecordFilter {
        limit: 3,
        ..RecordFilter::default()
    };
    assert_eq!(
        all_records(conn, Org::DEFAULT, &small_pages),
        everything,
        "pages of 3"
    );
    for (agent, _) in &before.agents {
        let by_agent = RecordFilter {
            agent_id: Some(agent.clone()),
            ..filter()
        };
        let expected = newest_first(before, |r| &r.agent_id == agent);
        assert!(!expected.is_empty());
        assert_eq!(
            all_records(conn, Org::DEFAULT, &by_agent),
            expected,
            "{agent}"
        );
    }
    for workflow in &before.workflows {
        let by_workflow = RecordFilter {
            provenance_ref: Some(workflow.provenance_ref.clone()),
            ..filter()
        };
        let expected = newest_first(before, |r| r.provenance_ref == workflow.provenance_ref);
        assert_eq!(
            u64::try_from(expected.len()).unwrap(),
            workflow.total_records
        );
        assert_eq!(all_records(conn, Org::DEFAULT, &by_workflow), expected);
    }
    for (token, _) in &before.trees {
        let by_token = RecordFilter {
            vat_jti: Some(token.jti.clone()),
            ..filter()
        };
        let expected = newest_first(before, |r| r.jti == token.jti);
        assert_eq!(all_records(conn, Org::DEFAULT, &by_token), expected);
    }
    for result in ["success", "error", "denied", "pending"] {
        let by_result = RecordFilter {
            result: Some(result.to_owned()),
            ..filter()
        };
        let expected = newest_first(before, |r| r.state.result_key() == result);
        assert_eq!(
            all_records(conn, Org::DEFAULT, &by_result),
            expected,
            "{result}"
        );
    }
    // Time ranges: from a third of the way in to two thirds, alone and with
    // an agent, and every split at a record's time.
    let n = before.records.len();
    let since = before.records[n / 3].created_at;
    let until = before.records[2 * n / 3].created_at;
    let in_range = |r: &Record| since <= r.created_at && r.created_at < until;
    let expected = newest_first(before, in_range);
    assert!(!expected.is_empty() && expected.len() < n);
    let ranged = RecordFilter {
        since: Some(since),
        until: Some(until),
        ..filter()
    };
    assert_eq!(all_records(conn, Org::DEFAULT, &ranged), expected);
    let agent = before.records[n / 3].agent_id.clone();
    let ranged_agent = RecordFilter {
        agent_id: Some(agent.clone()),
        ..ranged.clone()
    };
    assert_eq!(
        all_records(conn, Org::DEFAULT, &ranged_agent),
        newest_first(before, |r| in_range(r) && r.agent_id == agent)
    );
    for record in &before.records {
        let at = record.created_at;
        let from = RecordFilter {
            since: Some(at),
            ..filter()
        };
        let to = RecordFilter {
            until: Some(at),
            ..filter()
        };
        assert_eq!(
            all_records(conn, Org::DEFAULT, &from),
            newest_first(before, |r| r.created_at >= at)
        );
        assert_eq!(
            all_records(conn, Org::DEFAULT, &to),
            newest_first(before, |r| r.created_at < at)
        );
    }

    // Token trees.
    for (token, descendants) in &before.trees {
        let tree = queries::token_tree(
            conn,
            Org::DEFAULT,
            &token.jti,
            &DescendantPage {
                limit: 500,
                cursor: None,
            },
        );
        assert_eq!(
            tree,
            Ok(TokenTree {
                token: token.clone(),
                descendants: Page {
                    items: descendants.clone(),
                    next_cursor: None,
                },
            })
        );
    }

    // Stored answers to an Idempotency-Key replay as before.
    for (scope, key, stored) in &before.idempotency {
        assert_eq!(
            idempotency::find(conn, Org::DEFAULT, scope, key, 0).unwrap(),
            Some(stored.clone())
        );
    }
}

/// A database as a whole, to compare two openings of it.
#[derive(Debug, PartialEq)]
struct Snapshot {
    user_version: i64,
    /// Every row of `sqlite_master`.
    schema: Vec<Vec<Value>>,
    /// Every table's rows, by table name.
    contents: BTreeMap<String, Vec<Vec<Value>>>,
}

/// Every table's rows and the schema.
fn snapshot(conn: &Connection) -> Snapshot {
    let schema = rows(
        conn,
        "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name",
    );
    let tables: Vec<String> = conn
        .prepare_cached("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let contents = tables
        .into_iter()
        .map(|table| {
            let width = columns(conn, &table).len();
            let order = (1..=width)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let rows = rows(conn, &format!("SELECT * FROM {table} ORDER BY {order}"));
            (table, rows)
        })
        .collect();
    Snapshot {
        user_version: user_version(conn),
        schema,
        contents,
    }
}

#[test]
fn a_database_of_the_release_before_organisations_joins_the_default_organisation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DB_FILE);
    load_fixture(&path);
    let before = {
        let conn = Connection::sqlite(rusqlite::Connection::open(&path).unwrap());
        read_before(&conn)
    };
    assert_fixture_is_rich(&before);

    let conn = store::open_writer(&path).unwrap();
    check_migrated(&conn, &before);
    check_dashboard(&conn, &before);
    let migrated = snapshot(&conn);
    drop(conn);

    // Opening it again migrates nothing: not even a new default
    // organisation's id.
    let conn = store::open_writer(&path).unwrap();
    assert_eq!(snapshot(&conn), migrated);
    check_migrated(&conn, &before);

    // A second organisation is number 1 and sees none of `default`'s
    // objects, which stay where they were.
    let id = OrgId::new(Ulid::new(1_800_000_000_000, [7; 10]).unwrap());
    let second = orgs::create(&conn, &id, "second", Quotas::default(), 1_800_000_000_000)
        .unwrap()
        .unwrap();
    assert_eq!(second.org, Org::from_number(1));
    assert_eq!(orgs::list(&conn, None, 10).unwrap().len(), 2);
    let other = second.org;
    assert_eq!(queries::records(&conn, other, &filter()).unwrap().items, []);
    let ranged = RecordFilter {
        since: Some(before.records[0].created_at),
        until: Some(i64::MAX),
        ..filter()
    };
    assert_eq!(queries::records(&conn, other, &ranged).unwrap().items, []);
    for record in &before.records {
        assert_eq!(
            queries::record(&conn, other, &record.aar_id),
            Err(QueryError::UnknownRecord)
        );
        let by_agent = RecordFilter {
            agent_id: Some(record.agent_id.clone()),
            ..filter()
        };
        assert_eq!(queries::records(&conn, other, &by_agent).unwrap().items, []);
    }
    for (agent, _) in &before.agents {
        assert_eq!(
            queries::agent_counts(&conn, other, agent),
            Err(QueryError::UnknownAgent)
        );
    }
    for workflow in &before.workflows {
        assert_eq!(
            queries::workflow_summary(&conn, other, &workflow.provenance_ref),
            Err(QueryError::UnknownWorkflow)
        );
    }
    let listed = queries::workflows(
        &conn,
        other,
        &WorkflowFilter {
            limit: 50,
            ..WorkflowFilter::default()
        },
    )
    .unwrap();
    assert_eq!(listed.items, []);
    for (token, _) in &before.trees {
        assert_eq!(
            queries::token_tree(
                &conn,
                other,
                &token.jti,
                &DescendantPage {
                    limit: 500,
                    cursor: None,
                },
            ),
            Err(QueryError::UnknownToken)
        );
    }
    for (scope, key, _) in &before.idempotency {
        assert_eq!(
            idempotency::find(&conn, other, scope, key, 0).unwrap(),
            None
        );
    }
    assert_eq!(apikeys::list(&conn, Some(other)).unwrap(), []);
    check_migrated_after_second(&conn, &before);
}

/// The dashboard's counters, filled by the migration to schema 7, add up
/// to what the records say: every agent's days to its counts, the inbox to
/// the completed records unrated.
fn check_dashboard(conn: &Connection, before: &Before) {
    use mandate_host::store::dashboard;
    for (agent, counts) in &before.agents {
        let days = dashboard::agent_days_from(conn, Org::DEFAULT, agent, i64::MIN).unwrap();
        let mut sum = dashboard::DayCounts::default();
        for (_, day) in &days {
            sum.add(day);
        }
        let c = sum.counts;
        assert_eq!(
            [
                c.successes,
                c.failures,
                c.pending,
                c.approved,
                c.flagged,
                c.rejected
            ],
            [
                counts.successes,
                counts.failures,
                counts.pending,
                counts.approved,
                counts.flagged,
                counts.rejected
            ]
            .map(|n| n as i64),
            "{agent}"
        );
        let made = before
            .records
            .iter()
            .filter(|r| &r.agent_id == agent)
            .count();
        assert_eq!(sum.records, made as i64, "{agent}");
    }
    let unrated = before
        .records
        .iter()
        .filter(|r| matches!(r.state, mandate_core::RecordState::Completed { .. }))
        .count();
    assert_eq!(
        dashboard::inbox(conn, Org::DEFAULT).unwrap(),
        (0, unrated as i64)
    );
    assert!(unrated > 0 && unrated < before.records.len());
}

/// `default` answers as before once a second organisation exists, except
/// that the organisations are two.
fn check_migrated_after_second(conn: &Connection, before: &Before) {
    let page = queries::records(conn, Org::DEFAULT, &filter()).unwrap();
    assert_eq!(page.items, newest_first(before, |_| true));
    for (agent, counts) in &before.agents {
        assert_eq!(
            queries::agent_counts(conn, Org::DEFAULT, agent),
            Ok(*counts)
        );
    }
}

/// At its first start on the upgraded database, the record log begins with
/// everything the release before stored, each as it stands: every record
/// has its proof, and `mandate audit verify` finds the log and the database
/// in agreement.
#[tokio::test]
async fn an_upgraded_database_starts_its_log_with_what_it_held() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DB_FILE);
    load_fixture(&path);
    let before = {
        let conn = Connection::sqlite(rusqlite::Connection::open(&path).unwrap());
        read_before(&conn)
    };
    let app = crate::helpers::TestApp::spawn_in(dir, |_| {}).await;
    for record in &before.records {
        let proof = crate::helpers::expect_json(
            app.get_auth(
                &format!("/v1/vat/aar/{}/proof", record.aar_id),
                &app.admin_key,
            )
            .await,
            reqwest::StatusCode::OK,
        )
        .await;
        let kinds: Vec<&str> = proof["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|event| event["kind"].as_str().unwrap())
            .collect();
        let mut expected = vec!["record.created"];
        if record.state.rating().is_some() {
            expected.push("record.rated");
        }
        assert_eq!(kinds, expected, "{}", record.aar_id);
    }
    let dir = app.stop().await;
    let conn = store::open_writer(&dir.path().join(DB_FILE)).unwrap();
    let origin = mandate_host::recordlog::stored_origin(&conn)
        .unwrap()
        .unwrap();
    let report = mandate_host::recordlog::audit::verify(&conn, &origin).unwrap();
    assert_eq!(report.findings, [], "{}", report.summary());
    assert_eq!(report.records, before.records.len() as u64);
}
