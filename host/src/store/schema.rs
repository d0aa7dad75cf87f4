//! The schema: SQLite's, created on first start and migrated by
//! `user_version`, and PostgreSQL's, the same tables at the current version
//! ([`POSTGRES`]; its version is kept in `mandate_schema`).
//!
//! Tables:
//! - `meta`: deployment-wide values (the human-reference secret, sealed, and
//!   `kek_check`, the key-encryption key's check value).
//! - `signing_keys`: Ed25519 keys, sealed under the key-encryption key; one
//!   is active; retired keys stay published until every token they signed
//!   has expired (`max_exp`); a revoked key (`revoked_at`) is never loaded
//!   again.
//! - `api_keys`: SHA-256 hashes of API keys, never the keys.
//! - `tokens`: every issued token, its claims, revocation, the usage of its
//!   subtree (`spent_micros`, `actions`) for budgets, and its direct
//!   `children` (capped). Ancestors are found by `jth`, the jti hash tokens
//!   name their parents by.
//! - `records`: action records, with the `credential` they were made with
//!   (`jti`: a bare `vat_jti`; `token`: the token itself, and its proof when
//!   bound); `seq` is insertion order and the cursor, and
//!   `created_at` never decreases along it, so a time range is a `seq` range
//!   (found by binary search) and needs no index of its own.
//! - `agents`, `workflows`, `workflow_counts`: counters kept with every write
//!   so reputation, workflow lists and workflow summaries never scan records.
//!   `workflow_counts` counts the records of a workflow by agent, action and
//!   result key (core's `result_key`: the result, `denied` or `pending`).
//! - `idempotency`: responses stored under `Idempotency-Key`.
//! - `dpop_proofs` (PostgreSQL only): the DPoP proofs every host has
//!   accepted, by replay key, until they lapse; SQLite serves one process,
//!   which remembers them in memory.
//! - `orgs`: organisations, each with a number (`num`) that is the high bits
//!   of its records' `seq` (see [`crate::store::orgs::Org`]), and its quotas.
//! - The record log (`crate::store::log`): `log_leaves` (every leaf's bytes
//!   and hash, by index: the level-0 tiles), `log_nodes` (the tile entries
//!   of levels 1 and up), `log_checkpoints` (every checkpoint signed, by
//!   tree size), `log_keys` (the Ed25519 keys that sign checkpoints, sealed)
//!   and `ledger_state` (one row: the next token status index, event `seq`
//!   and leaf index; on PostgreSQL a group's tail takes it and holds it to
//!   its commit, the sequencer that orders leaves and events across hosts). A token's `log_issued` and `log_revoked`, a record's
//!   `log_created`, `log_completed` and `log_rated` are the indices of their
//!   events' leaves; a revoked token keeps the jti hash of the token its
//!   revocation named (`revoke_cause`); a record keeps what `authorize` reserved
//!   (`reserved_micros`) and the key that rated it (`rated_by`), which its
//!   leaves name.
//! - `status_lists`: the token status lists (`crate::store::status_lists`),
//!   one bit per token, by list number; a token's `status_idx` is its place.
//! - `approvals`: the approval each record awaiting one waits for (one per
//!   record), its expiry and its decision; a decision's leaf is
//!   `log_decided`. An agent's `denied_requests` counts its records denied
//!   at `authorize` or by an approval's decision; a record keeps the W3C `traceparent` its
//!   call carried.
//! - `events`: the outbox (`crate::store::events`), one row per event with
//!   its payload as delivered, numbered by `seq` from `ledger_state`'s
//!   `next_event_seq` in the transaction of the write it reports.
//!   `webhooks`: each endpoint, its sealed secrets (the previous one during a
//!   rotation), the `seq` it has been sent up to (`cursor`), the attempts at
//!   its next event and the host leasing its delivery; `deliveries`: every
//!   attempt, listed newest first (`deliveries_by_time`) and pruned by age
//!   (`deliveries_by_age`).
//!
//! - The reviewer's dashboard (`crate::store::dashboard`): `agent_days`
//!   counts each agent's records by UTC day (created; successes, errors and
//!   denials by the day of the change; the changes of its reputation
//!   counts, core's `CountsChange`, by the day they happened), so windows,
//!   sparklines and reputation over time never read records; `org_hours`
//!   counts an organisation's records, denials, errors, ratings and
//!   approval decisions (with their waits) by UTC hour; `org_counts` holds
//!   its inbox (approvals pending, completed records unrated); an agent's
//!   `last_activity`; a token's `budget_percent`, the largest share of a
//!   budget its subtree used (`tokens_by_budget`); `human_labels`, what
//!   the organisation knows a human by. Completed records awaiting a rating
//!   have partial indexes (`records_unrated`, `records_unrated_by_agent`).
//!
//! - `vouches` (`crate::store::trust`): the trust graph's vouches, each by
//!   a person's API key (`by_key`) or an agent (`by_agent`) for an agent of
//!   the same organisation, with its weight in millionths, its expiry and
//!   its withdrawal (when, by whom); `log_created` and `log_withdrawn` are
//!   their leaves.
//! - The agent registry (schema 10, `crate::store::agents`): an agent's
//!   `owner` (the `human_ref` of the root token it was first issued for)
//!   and `parent` (the agent a delegation registered it under), in
//!   `agents`; a record's `trust_ppm`, the trust in force it was judged
//!   with (millionths).
//! - A record's `args_hash` and `args` (schema 11): the arguments its act
//!   was attempted with, hashed, and as kept (redacted; see
//!   `[records]`).
//! - A record's `origin` (schema 9): the call that made it (`authorize`,
//!   `record_action`, `delegate`; null for records made before), which
//!   reputation counts a refusal by: a record denied at `authorize` is one
//!   of the agent's `denied_requests`, one denied at `record/action` a
//!   failure.
//!
//! - OAuth (schema 12, docs/oauth.md): `oauth_clients`, the public
//!   clients an organisation's owner registered in advance (their
//!   `redirect_uris` and `grant_types` as JSON arrays); `oauth_codes`,
//!   authorization codes by the SHA-256 of the code, one per sealed
//!   request (`request_hash`), with the human's choice (`choice`, JSON;
//!   `grant` is an SQL keyword) and, once redeemed, the grant it made;
//!   `oauth_grants`, a consent's grant (its refresh-token family) with the
//!   grant root it issued; `oauth_refresh_tokens`, each refresh token of a
//!   family by the SHA-256 of the token, with its generation and the one
//!   that replaced it.
//!
//! - Witnessed checkpoints (schema 13, docs/log.md): `log_witnesses`, per
//!   witness of `[log] witnesses` (its key name and id) the tree size it
//!   last cosigned, as its answers told the submitter;
//!   `log_cosignatures`, each cosignature line gathered, by checkpoint
//!   size and witness, with its timestamp; `log_submitter`, one row, the
//!   host whose lease lets it submit and until when.
//!
//! - The MCP gate's relay (schema 14, docs/oauth.md): `oauth_resources`,
//!   each resource an organisation registered (its URL, as tokens name it
//!   in `aud`) with the thumbprints of the relay keys its gates sign
//!   `Mandate-Relay` proofs with (`relay_jkts`, a JSON array); a record's
//!   `relay_jkt`, the relay key that authorized it for a client (null for
//!   any other record), which alone may then complete it or read its
//!   approval.
//!
//! - The log's size kept (schema 15, the write path's plan §2):
//!   `ledger_state.next_log_idx`, the index the next leaf takes, written
//!   with every group's leaves, so a group reads it with the state row's
//!   lock instead of looking the size up after it; null (an upgraded or
//!   imported database) until the first leaves are stored, when the size
//!   is read from `log_leaves`.
//!
//! - The sequencer (schema 16, the write path's plan §1.5, §1.8):
//!   `log_integration`, one row, how many leaves the tile entries of
//!   `log_nodes` cover — on PostgreSQL a group's tail stores leaves and
//!   hashes only, and the tree above is integrated after commit (before a
//!   checkpoint is signed, and by each host's integrator); SQLite's one
//!   writer keeps it at the log's size. PostgreSQL's `status_idx`
//!   sequence hands out token status indexes in blocks of 256 per host.
//!   `ledger_state.next_log_idx` is filled in.
//!
//! - Records numbered in the tail (schema 17, PostgreSQL only, the write
//!   path's plan §1.5, §1.6): `org_seqs`, per organisation the `seq` its
//!   next record takes, the first `seq` the last tail took (`base`, read
//!   by the tail's later statements) and the newest `created_at` given so
//!   far, written only by group tails, before the sequencer's row — so
//!   records are numbered in commit order across hosts; `lag_ms`, how far
//!   the last tail's first record was created before the newest record
//!   ahead of it (at most `MAX_TIME_DISORDER_MS`, a check), and
//!   `max_lag_ms`, the most ever (what record queries widen a time range
//!   by); a check keeps `next_seq` below the upper half of the
//!   organisation's range, where groups number provisionally. A row is
//!   made by the first
//!   tail that needs it, from the organisation's newest record (an
//!   upgraded or imported database needs nothing filled in). SQLite's one
//!   writer numbers records from the newest record, as before.
//!
//! Every object stands in one organisation: keys, tokens, workflows and
//! idempotency keys carry its number in `org`; agents are keyed by `(org,
//! agent_id)`; a record's organisation is its `seq >> 40` (the generated
//! column `org`), so the organisation costs records no index of their own:
//! an organisation's records are one range of the table's key, and each
//! record index, ending in `seq`, is searched within that range.

/// The schema version this build writes.
pub(crate) const VERSION: i64 = 17;

/// PostgreSQL's schema at version 5 (version 6 adds [`POSTGRES_EVENTS`]
/// to it, version 7 [`POSTGRES_DASHBOARD`], version 8 [`POSTGRES_TRUST`],
/// version 9 [`POSTGRES_RECORD_ORIGIN`], version 10 [`POSTGRES_AGENTS`], version 11 [`POSTGRES_ARGS`],
/// version 12 [`POSTGRES_OAUTH`], version 13 [`POSTGRES_WITNESSED`], version 14 [`POSTGRES_RELAY`], version 15 [`POSTGRES_LOG_SIZE`], version 16 [`POSTGRES_SEQUENCER`], version 17 [`POSTGRES_ORG_SEQS`]): SQLite's tables with PostgreSQL's
/// types (every integer a `BIGINT`, blobs `BYTEA`, text compared byte by
/// byte, `COLLATE "C"`, as SQLite does). A record's `org` is stored, since
/// PostgreSQL 15 has no virtual generated columns; `seq` is still the
/// table's key and every record index ends in it.
pub(crate) const POSTGRES: &str = r#"
CREATE TABLE meta (
    key   TEXT COLLATE "C" PRIMARY KEY,
    value BYTEA NOT NULL
);

CREATE TABLE signing_keys (
    kid        TEXT COLLATE "C" PRIMARY KEY,
    secret     BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    retired_at BIGINT,
    max_exp    BIGINT NOT NULL DEFAULT 0,
    revoked_at BIGINT
);

CREATE TABLE orgs (
    num                BIGINT PRIMARY KEY,
    id                 TEXT COLLATE "C" NOT NULL UNIQUE,
    name               TEXT COLLATE "C" NOT NULL UNIQUE,
    created_at         BIGINT NOT NULL,
    records_per_day    BIGINT,
    tokens_outstanding BIGINT
);

CREATE TABLE api_keys (
    id         TEXT COLLATE "C" PRIMARY KEY,
    hash       BYTEA NOT NULL UNIQUE,
    email      TEXT COLLATE "C",
    is_admin   BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT,
    org        BIGINT NOT NULL DEFAULT 0,
    role       TEXT COLLATE "C" NOT NULL DEFAULT 'developer'
);
CREATE INDEX api_keys_by_org ON api_keys(org, created_at);

CREATE TABLE tokens (
    jti            TEXT COLLATE "C" PRIMARY KEY,
    parent         TEXT COLLATE "C" REFERENCES tokens(jti),
    jth            TEXT COLLATE "C" NOT NULL,
    provenance_ref TEXT COLLATE "C" NOT NULL,
    agent_id       TEXT COLLATE "C" NOT NULL,
    depth          BIGINT NOT NULL,
    claims         TEXT COLLATE "C" NOT NULL,
    kid            TEXT COLLATE "C" NOT NULL,
    issued_at      BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    revoked_at     BIGINT,
    revoke_reason  TEXT COLLATE "C",
    issued_by      TEXT COLLATE "C",
    spent_micros   BIGINT NOT NULL DEFAULT 0,
    actions        BIGINT NOT NULL DEFAULT 0,
    children       BIGINT NOT NULL DEFAULT 0,
    org            BIGINT NOT NULL DEFAULT 0,
    status_idx     BIGINT,
    log_issued     BIGINT,
    log_revoked    BIGINT,
    revoke_cause   TEXT COLLATE "C"
);
CREATE INDEX tokens_by_parent ON tokens(parent);
CREATE INDEX tokens_by_provenance ON tokens(provenance_ref);
CREATE INDEX tokens_by_agent ON tokens(org, agent_id);
CREATE INDEX tokens_by_expiry ON tokens(org, expires_at);
CREATE UNIQUE INDEX tokens_by_jth ON tokens(jth);

CREATE TABLE records (
    seq              BIGINT PRIMARY KEY,
    aar_id           TEXT COLLATE "C" NOT NULL UNIQUE,
    provenance_ref   TEXT COLLATE "C" NOT NULL,
    jti              TEXT COLLATE "C" NOT NULL,
    agent_id         TEXT COLLATE "C" NOT NULL,
    action           TEXT COLLATE "C" NOT NULL,
    resource         TEXT COLLATE "C" NOT NULL,
    status           TEXT COLLATE "C" NOT NULL,
    result           TEXT COLLATE "C",
    deny_reason      TEXT COLLATE "C",
    result_hash      TEXT COLLATE "C",
    spend_micros     BIGINT NOT NULL,
    trust_score      DOUBLE PRECISION NOT NULL,
    delegation_depth BIGINT NOT NULL,
    human_ref        TEXT COLLATE "C" NOT NULL,
    assurance_level  TEXT COLLATE "C" NOT NULL,
    rating           TEXT COLLATE "C",
    note             TEXT COLLATE "C",
    feedback_at      BIGINT,
    created_at       BIGINT NOT NULL,
    completed_at     BIGINT,
    delegated_jti    TEXT COLLATE "C",
    credential       TEXT COLLATE "C" NOT NULL DEFAULT 'jti',
    org              BIGINT GENERATED ALWAYS AS (seq >> 40) STORED,
    reserved_micros  BIGINT,
    rated_by         TEXT COLLATE "C",
    log_created      BIGINT,
    log_completed    BIGINT,
    log_rated        BIGINT
);
CREATE INDEX records_by_provenance ON records(provenance_ref, seq);
CREATE INDEX records_by_agent ON records(agent_id, seq);
CREATE INDEX records_by_token ON records(jti, seq);

CREATE TABLE agents (
    org        BIGINT NOT NULL,
    agent_id   TEXT COLLATE "C" NOT NULL,
    successes  BIGINT NOT NULL DEFAULT 0,
    failures   BIGINT NOT NULL DEFAULT 0,
    pending    BIGINT NOT NULL DEFAULT 0,
    approved   BIGINT NOT NULL DEFAULT 0,
    flagged    BIGINT NOT NULL DEFAULT 0,
    rejected   BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (org, agent_id)
);

CREATE TABLE workflows (
    provenance_ref  TEXT COLLATE "C" PRIMARY KEY,
    root_jti        TEXT COLLATE "C" NOT NULL,
    root_agent_id   TEXT COLLATE "C" NOT NULL,
    human_ref       TEXT COLLATE "C" NOT NULL,
    assurance_level TEXT COLLATE "C" NOT NULL,
    created_at      BIGINT NOT NULL,
    total_records   BIGINT NOT NULL DEFAULT 0,
    last_activity   BIGINT NOT NULL,
    org             BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX workflows_by_activity ON workflows(org, last_activity);

CREATE TABLE workflow_counts (
    provenance_ref TEXT COLLATE "C" NOT NULL,
    agent_id       TEXT COLLATE "C" NOT NULL,
    action         TEXT COLLATE "C" NOT NULL,
    result_key     TEXT COLLATE "C" NOT NULL,
    count          BIGINT NOT NULL,
    PRIMARY KEY (provenance_ref, agent_id, action, result_key)
);

CREATE TABLE idempotency (
    org          BIGINT NOT NULL,
    scope        TEXT COLLATE "C" NOT NULL,
    key          TEXT COLLATE "C" NOT NULL,
    request_hash BYTEA NOT NULL,
    status       BIGINT NOT NULL,
    body         BYTEA NOT NULL,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (org, scope, key)
);
CREATE INDEX idempotency_by_age ON idempotency(created_at);

CREATE TABLE dpop_proofs (
    key   BYTEA PRIMARY KEY,
    until BIGINT NOT NULL
);
CREATE INDEX dpop_proofs_by_age ON dpop_proofs(until);

CREATE TABLE log_leaves (
    idx  BIGINT PRIMARY KEY,
    hash BYTEA NOT NULL,
    leaf BYTEA NOT NULL
);

CREATE TABLE log_nodes (
    level BIGINT NOT NULL,
    idx   BIGINT NOT NULL,
    hash  BYTEA NOT NULL,
    PRIMARY KEY (level, idx)
);

CREATE TABLE log_checkpoints (
    size       BIGINT PRIMARY KEY,
    root       BYTEA NOT NULL,
    note       TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE log_keys (
    key_id     TEXT COLLATE "C" PRIMARY KEY,
    secret     BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    retired_at BIGINT
);

CREATE TABLE ledger_state (
    id              BIGINT PRIMARY KEY CHECK (id = 1),
    next_status_idx BIGINT NOT NULL
);
INSERT INTO ledger_state (id, next_status_idx) VALUES (1, 0);

CREATE TABLE status_lists (
    list       BIGINT PRIMARY KEY,
    bits       BYTEA NOT NULL,
    revision   BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
"#;

/// Version 6 on PostgreSQL, over version 5: approvals, events, webhooks.
pub(crate) const POSTGRES_EVENTS: &str = r#"
ALTER TABLE agents ADD COLUMN denied_requests BIGINT NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN traceparent TEXT COLLATE "C";
ALTER TABLE ledger_state ADD COLUMN next_event_seq BIGINT NOT NULL DEFAULT 1;

CREATE TABLE approvals (
    id           TEXT COLLATE "C" PRIMARY KEY,
    aar_id       TEXT COLLATE "C" NOT NULL UNIQUE,
    org          BIGINT NOT NULL,
    status       TEXT COLLATE "C" NOT NULL,
    requested_at BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    decided_at   BIGINT,
    decided_by   TEXT COLLATE "C",
    note         TEXT COLLATE "C",
    log_decided  BIGINT
);
CREATE INDEX approvals_by_org ON approvals(org, status, requested_at);
CREATE INDEX approvals_due ON approvals(expires_at) WHERE status = 'pending';

CREATE TABLE events (
    seq        BIGINT PRIMARY KEY,
    id         TEXT COLLATE "C" NOT NULL UNIQUE,
    org        BIGINT NOT NULL,
    type       TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,
    payload    BYTEA NOT NULL
);
CREATE INDEX events_by_org ON events(org, seq);

CREATE TABLE webhooks (
    id               TEXT COLLATE "C" PRIMARY KEY,
    org              BIGINT NOT NULL,
    url              TEXT COLLATE "C" NOT NULL,
    events           TEXT COLLATE "C" NOT NULL,
    description      TEXT COLLATE "C",
    secret           BYTEA NOT NULL,
    previous_secret  BYTEA,
    previous_until   BIGINT,
    created_at       BIGINT NOT NULL,
    created_by       TEXT COLLATE "C" NOT NULL,
    enabled          BIGINT NOT NULL,
    disabled_at      BIGINT,
    disabled_reason  TEXT COLLATE "C",
    cursor           BIGINT NOT NULL,
    attempts         BIGINT NOT NULL DEFAULT 0,
    first_attempt_at BIGINT,
    next_attempt_at  BIGINT,
    lease_until      BIGINT,
    lease_owner      TEXT COLLATE "C"
);
CREATE INDEX webhooks_by_org ON webhooks(org, created_at);

CREATE TABLE deliveries (
    webhook     TEXT COLLATE "C" NOT NULL,
    event_seq   BIGINT NOT NULL,
    attempt     BIGINT NOT NULL,
    message_id  TEXT COLLATE "C" NOT NULL,
    type        TEXT COLLATE "C" NOT NULL,
    at          BIGINT NOT NULL,
    outcome     TEXT COLLATE "C" NOT NULL,
    http_status BIGINT,
    error       TEXT COLLATE "C",
    duration_ms BIGINT NOT NULL,
    PRIMARY KEY (webhook, event_seq, attempt)
);
CREATE INDEX deliveries_by_time ON deliveries(webhook, at, event_seq, attempt);
CREATE INDEX deliveries_by_age ON deliveries(at);
"#;

/// Version 7: the reviewer's dashboard's counters and indexes (see the
/// module's table list). What was stored before is counted into them by
/// `crate::store::dashboard::backfill` in the same transaction.
pub(crate) const DASHBOARD: &str = r#"
ALTER TABLE agents ADD COLUMN last_activity INTEGER;
ALTER TABLE tokens ADD COLUMN budget_percent REAL;
ALTER TABLE tokens ADD COLUMN budget_limit TEXT;

CREATE TABLE agent_days (
    org             INTEGER NOT NULL,
    agent_id        TEXT NOT NULL,
    day             INTEGER NOT NULL,
    records         INTEGER NOT NULL DEFAULT 0,
    successes       INTEGER NOT NULL DEFAULT 0,
    errors          INTEGER NOT NULL DEFAULT 0,
    denied          INTEGER NOT NULL DEFAULT 0,
    failures        INTEGER NOT NULL DEFAULT 0,
    pending         INTEGER NOT NULL DEFAULT 0,
    denied_requests INTEGER NOT NULL DEFAULT 0,
    approved        INTEGER NOT NULL DEFAULT 0,
    flagged         INTEGER NOT NULL DEFAULT 0,
    rejected        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (org, agent_id, day)
) STRICT, WITHOUT ROWID;
CREATE INDEX agent_days_by_day ON agent_days(org, day);

CREATE TABLE org_hours (
    org                  INTEGER NOT NULL,
    hour                 INTEGER NOT NULL,
    records              INTEGER NOT NULL DEFAULT 0,
    successes            INTEGER NOT NULL DEFAULT 0,
    errors               INTEGER NOT NULL DEFAULT 0,
    denied               INTEGER NOT NULL DEFAULT 0,
    ratings              INTEGER NOT NULL DEFAULT 0,
    approvals_decided    INTEGER NOT NULL DEFAULT 0,
    approval_wait_ms     INTEGER NOT NULL DEFAULT 0,
    approval_wait_max_ms INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (org, hour)
) STRICT, WITHOUT ROWID;

CREATE TABLE org_counts (
    org               INTEGER PRIMARY KEY,
    approvals_pending INTEGER NOT NULL DEFAULT 0,
    records_unrated   INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE human_labels (
    org        INTEGER NOT NULL,
    human_ref  TEXT NOT NULL,
    label      TEXT NOT NULL,
    first_seen INTEGER NOT NULL,
    PRIMARY KEY (org, human_ref)
) STRICT, WITHOUT ROWID;

CREATE INDEX records_unrated ON records(seq) WHERE status = 'completed' AND rating IS NULL;
CREATE INDEX records_unrated_by_agent ON records(agent_id, seq)
    WHERE status = 'completed' AND rating IS NULL;
DROP INDEX tokens_by_agent;
CREATE INDEX tokens_by_agent ON tokens(org, agent_id, issued_at);
CREATE INDEX tokens_by_issue ON tokens(org, issued_at);
CREATE INDEX tokens_by_budget ON tokens(org, budget_percent) WHERE budget_percent IS NOT NULL;
CREATE INDEX workflows_by_human ON workflows(org, human_ref, last_activity);
"#;

/// Version 7 on PostgreSQL, over version 6: [`DASHBOARD`] with
/// PostgreSQL's types.
pub(crate) const POSTGRES_DASHBOARD: &str = r#"
ALTER TABLE agents ADD COLUMN last_activity BIGINT;
ALTER TABLE tokens ADD COLUMN budget_percent DOUBLE PRECISION;
ALTER TABLE tokens ADD COLUMN budget_limit TEXT COLLATE "C";

CREATE TABLE agent_days (
    org             BIGINT NOT NULL,
    agent_id        TEXT COLLATE "C" NOT NULL,
    day             BIGINT NOT NULL,
    records         BIGINT NOT NULL DEFAULT 0,
    successes       BIGINT NOT NULL DEFAULT 0,
    errors          BIGINT NOT NULL DEFAULT 0,
    denied          BIGINT NOT NULL DEFAULT 0,
    failures        BIGINT NOT NULL DEFAULT 0,
    pending         BIGINT NOT NULL DEFAULT 0,
    denied_requests BIGINT NOT NULL DEFAULT 0,
    approved        BIGINT NOT NULL DEFAULT 0,
    flagged         BIGINT NOT NULL DEFAULT 0,
    rejected        BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (org, agent_id, day)
);
CREATE INDEX agent_days_by_day ON agent_days(org, day);

CREATE TABLE org_hours (
    org                  BIGINT NOT NULL,
    hour                 BIGINT NOT NULL,
    records              BIGINT NOT NULL DEFAULT 0,
    successes            BIGINT NOT NULL DEFAULT 0,
    errors               BIGINT NOT NULL DEFAULT 0,
    denied               BIGINT NOT NULL DEFAULT 0,
    ratings              BIGINT NOT NULL DEFAULT 0,
    approvals_decided    BIGINT NOT NULL DEFAULT 0,
    approval_wait_ms     BIGINT NOT NULL DEFAULT 0,
    approval_wait_max_ms BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (org, hour)
);

CREATE TABLE org_counts (
    org               BIGINT PRIMARY KEY,
    approvals_pending BIGINT NOT NULL DEFAULT 0,
    records_unrated   BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE human_labels (
    org        BIGINT NOT NULL,
    human_ref  TEXT COLLATE "C" NOT NULL,
    label      TEXT COLLATE "C" NOT NULL,
    first_seen BIGINT NOT NULL,
    PRIMARY KEY (org, human_ref)
);

CREATE INDEX records_unrated ON records(seq) WHERE status = 'completed' AND rating IS NULL;
CREATE INDEX records_unrated_by_agent ON records(agent_id, seq)
    WHERE status = 'completed' AND rating IS NULL;
DROP INDEX tokens_by_agent;
CREATE INDEX tokens_by_agent ON tokens(org, agent_id, issued_at);
CREATE INDEX tokens_by_issue ON tokens(org, issued_at);
CREATE INDEX tokens_by_budget ON tokens(org, budget_percent) WHERE budget_percent IS NOT NULL;
CREATE INDEX workflows_by_human ON workflows(org, human_ref, last_activity);
"#;

/// Version 8: the trust graph's vouches. An organisation's active vouches
/// are read by target (`vouches_by_target`) and by voucher
/// (`vouches_by_key`, `vouches_by_agent`); withdrawn ones stay for the log.
pub(crate) const TRUST: &str = r#"
CREATE TABLE vouches (
    id                 TEXT PRIMARY KEY,
    org                INTEGER NOT NULL,
    by_key             TEXT,
    by_agent           TEXT,
    agent_id           TEXT NOT NULL,
    weight_ppm         INTEGER NOT NULL,
    reason             TEXT,
    created_at         INTEGER NOT NULL,
    expires_at         INTEGER,
    withdrawn_at       INTEGER,
    withdrawn_by_key   TEXT,
    withdrawn_by_agent TEXT,
    log_created        INTEGER,
    log_withdrawn      INTEGER
) STRICT;
CREATE INDEX vouches_by_target ON vouches(org, agent_id) WHERE withdrawn_at IS NULL;
CREATE INDEX vouches_by_key ON vouches(org, by_key, agent_id)
    WHERE withdrawn_at IS NULL AND by_key IS NOT NULL;
CREATE INDEX vouches_by_agent ON vouches(org, by_agent, agent_id)
    WHERE withdrawn_at IS NULL AND by_agent IS NOT NULL;
"#;

/// Version 8 on PostgreSQL, over version 7: [`TRUST`] with PostgreSQL's
/// types.
pub(crate) const POSTGRES_TRUST: &str = r#"
CREATE TABLE vouches (
    id                 TEXT COLLATE "C" PRIMARY KEY,
    org                BIGINT NOT NULL,
    by_key             TEXT COLLATE "C",
    by_agent           TEXT COLLATE "C",
    agent_id           TEXT COLLATE "C" NOT NULL,
    weight_ppm         BIGINT NOT NULL,
    reason             TEXT COLLATE "C",
    created_at         BIGINT NOT NULL,
    expires_at         BIGINT,
    withdrawn_at       BIGINT,
    withdrawn_by_key   TEXT COLLATE "C",
    withdrawn_by_agent TEXT COLLATE "C",
    log_created        BIGINT,
    log_withdrawn      BIGINT
);
CREATE INDEX vouches_by_target ON vouches(org, agent_id) WHERE withdrawn_at IS NULL;
CREATE INDEX vouches_by_key ON vouches(org, by_key, agent_id)
    WHERE withdrawn_at IS NULL AND by_key IS NOT NULL;
CREATE INDEX vouches_by_agent ON vouches(org, by_agent, agent_id)
    WHERE withdrawn_at IS NULL AND by_agent IS NOT NULL;
"#;

/// Version 9: how each record came to be (`origin`: `authorize`,
/// `record_action`, `delegate`; core's `RecordOrigin`), which reputation
/// counts a refusal by. Records made before stay null, read as `unknown`,
/// and count as they always did (a refusal a failure unless an approval's
/// decision made it): which call made them was never stored.
pub(crate) const RECORD_ORIGIN: &str = r#"
ALTER TABLE records ADD COLUMN origin TEXT;
"#;

/// Version 9 on PostgreSQL, over version 8: [`RECORD_ORIGIN`] with
/// PostgreSQL's types.
pub(crate) const POSTGRES_RECORD_ORIGIN: &str = r#"
ALTER TABLE records ADD COLUMN origin TEXT COLLATE "C";
"#;

/// Version 10: the agent registry (`crate::store::agents`): each agent's
/// owner (a `human_ref`) and the agent a delegation registered it under
/// (`parent`), filled for the agents stored before by
/// `agents::register_existing`; and each record's trust in force when it
/// was made (`trust_ppm`, millionths; null for records made before).
pub(crate) const AGENTS: &str = r#"
ALTER TABLE agents ADD COLUMN owner TEXT;
ALTER TABLE agents ADD COLUMN parent TEXT;
ALTER TABLE records ADD COLUMN trust_ppm INTEGER;
"#;

/// Version 10 on PostgreSQL, over version 9: [`AGENTS`] with PostgreSQL's
/// types.
pub(crate) const POSTGRES_AGENTS: &str = r#"
ALTER TABLE agents ADD COLUMN owner TEXT COLLATE "C";
ALTER TABLE agents ADD COLUMN parent TEXT COLLATE "C";
ALTER TABLE records ADD COLUMN trust_ppm BIGINT;
"#;

/// Version 11: the arguments of acts (DESIGN §15): a record's
/// `args_hash` (`sha256:` of their canonical JSON) and `args` (canonical
/// JSON with `[records] redact_args` replaced; null when not kept). Null
/// for records made before.
pub(crate) const ARGS: &str = r#"
ALTER TABLE records ADD COLUMN args_hash TEXT;
ALTER TABLE records ADD COLUMN args TEXT;
"#;

/// Version 11 on PostgreSQL, over version 10: [`ARGS`] with PostgreSQL's
/// types.
pub(crate) const POSTGRES_ARGS: &str = r#"
ALTER TABLE records ADD COLUMN args_hash TEXT COLLATE "C";
ALTER TABLE records ADD COLUMN args TEXT;
"#;

/// Version 12: the OAuth authorization server's clients, codes, grants
/// and refresh tokens (see the module's table list).
pub(crate) const OAUTH: &str = r#"
CREATE TABLE oauth_clients (
    client_id     TEXT PRIMARY KEY,
    org           INTEGER NOT NULL,
    name          TEXT NOT NULL,
    redirect_uris TEXT NOT NULL,
    grant_types   TEXT NOT NULL,
    created_by    TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    revoked_at    INTEGER
) STRICT;
CREATE INDEX oauth_clients_by_org ON oauth_clients(org, created_at);

CREATE TABLE oauth_codes (
    code_hash      BLOB PRIMARY KEY,
    request_hash   BLOB NOT NULL UNIQUE,
    org            INTEGER NOT NULL,
    human_ref      TEXT NOT NULL,
    assurance      TEXT NOT NULL,
    client_id      TEXT NOT NULL,
    redirect_uri   TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    resource       TEXT,
    dpop_jkt       TEXT,
    choice         TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    used_at        INTEGER,
    grant_id       TEXT
) STRICT;
CREATE INDEX oauth_codes_by_expiry ON oauth_codes(expires_at);

CREATE TABLE oauth_grants (
    grant_id      TEXT PRIMARY KEY,
    org           INTEGER NOT NULL,
    human_ref     TEXT NOT NULL,
    client_id     TEXT NOT NULL,
    client_host   TEXT,
    client_name   TEXT NOT NULL,
    resource      TEXT,
    agent_id      TEXT NOT NULL,
    root_jti      TEXT NOT NULL,
    scope         TEXT NOT NULL,
    cnf_jkt       TEXT,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    last_used_at  INTEGER,
    revoked_at    INTEGER,
    revoke_reason TEXT
) STRICT;
CREATE INDEX oauth_grants_by_human ON oauth_grants(org, human_ref);
CREATE INDEX oauth_grants_by_client ON oauth_grants(org, client_id);

CREATE TABLE oauth_refresh_tokens (
    token_hash  BLOB PRIMARY KEY,
    grant_id    TEXT NOT NULL,
    generation  INTEGER NOT NULL,
    issued_at   INTEGER NOT NULL,
    used_at     INTEGER,
    replaced_by BLOB
) STRICT;
CREATE INDEX oauth_refresh_tokens_by_grant ON oauth_refresh_tokens(grant_id);
"#;

/// Version 12 on PostgreSQL, over version 11: [`OAUTH`] with PostgreSQL's
/// types.
pub(crate) const POSTGRES_OAUTH: &str = r#"
CREATE TABLE oauth_clients (
    client_id     TEXT COLLATE "C" PRIMARY KEY,
    org           BIGINT NOT NULL,
    name          TEXT COLLATE "C" NOT NULL,
    redirect_uris TEXT COLLATE "C" NOT NULL,
    grant_types   TEXT COLLATE "C" NOT NULL,
    created_by    TEXT COLLATE "C" NOT NULL,
    created_at    BIGINT NOT NULL,
    revoked_at    BIGINT
);
CREATE INDEX oauth_clients_by_org ON oauth_clients(org, created_at);

CREATE TABLE oauth_codes (
    code_hash      BYTEA PRIMARY KEY,
    request_hash   BYTEA NOT NULL UNIQUE,
    org            BIGINT NOT NULL,
    human_ref      TEXT COLLATE "C" NOT NULL,
    assurance      TEXT COLLATE "C" NOT NULL,
    client_id      TEXT COLLATE "C" NOT NULL,
    redirect_uri   TEXT COLLATE "C" NOT NULL,
    code_challenge TEXT COLLATE "C" NOT NULL,
    resource       TEXT COLLATE "C",
    dpop_jkt       TEXT COLLATE "C",
    choice         TEXT COLLATE "C" NOT NULL,
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    used_at        BIGINT,
    grant_id       TEXT COLLATE "C"
);
CREATE INDEX oauth_codes_by_expiry ON oauth_codes(expires_at);

CREATE TABLE oauth_grants (
    grant_id      TEXT COLLATE "C" PRIMARY KEY,
    org           BIGINT NOT NULL,
    human_ref     TEXT COLLATE "C" NOT NULL,
    client_id     TEXT COLLATE "C" NOT NULL,
    client_host   TEXT COLLATE "C",
    client_name   TEXT COLLATE "C" NOT NULL,
    resource      TEXT COLLATE "C",
    agent_id      TEXT COLLATE "C" NOT NULL,
    root_jti      TEXT COLLATE "C" NOT NULL,
    scope         TEXT COLLATE "C" NOT NULL,
    cnf_jkt       TEXT COLLATE "C",
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    last_used_at  BIGINT,
    revoked_at    BIGINT,
    revoke_reason TEXT COLLATE "C"
);
CREATE INDEX oauth_grants_by_human ON oauth_grants(org, human_ref);
CREATE INDEX oauth_grants_by_client ON oauth_grants(org, client_id);

CREATE TABLE oauth_refresh_tokens (
    token_hash  BYTEA PRIMARY KEY,
    grant_id    TEXT COLLATE "C" NOT NULL,
    generation  BIGINT NOT NULL,
    issued_at   BIGINT NOT NULL,
    used_at     BIGINT,
    replaced_by BYTEA
);
CREATE INDEX oauth_refresh_tokens_by_grant ON oauth_refresh_tokens(grant_id);
"#;

/// Version 13: what the submitter keeps of its witnesses (see the
/// module's table list).
pub(crate) const WITNESSED: &str = r#"
CREATE TABLE log_witnesses (
    name       TEXT NOT NULL,
    key_id     INTEGER NOT NULL,
    size       INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (name, key_id)
) STRICT;

CREATE TABLE log_cosignatures (
    size      INTEGER NOT NULL,
    name      TEXT NOT NULL,
    key_id    INTEGER NOT NULL,
    timestamp INTEGER NOT NULL,
    line      TEXT NOT NULL,
    PRIMARY KEY (size, name, key_id)
) STRICT;

CREATE TABLE log_submitter (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    owner    TEXT NOT NULL,
    until_ms INTEGER NOT NULL
) STRICT;
"#;

/// Version 13 on PostgreSQL, over version 12: [`WITNESSED`] with
/// PostgreSQL's types.
pub(crate) const POSTGRES_WITNESSED: &str = r#"
CREATE TABLE log_witnesses (
    name       TEXT COLLATE "C" NOT NULL,
    key_id     BIGINT NOT NULL,
    size       BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (name, key_id)
);

CREATE TABLE log_cosignatures (
    size      BIGINT NOT NULL,
    name      TEXT COLLATE "C" NOT NULL,
    key_id    BIGINT NOT NULL,
    timestamp BIGINT NOT NULL,
    line      TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (size, name, key_id)
);

CREATE TABLE log_submitter (
    id       BIGINT PRIMARY KEY CHECK (id = 1),
    owner    TEXT COLLATE "C" NOT NULL,
    until_ms BIGINT NOT NULL
);
"#;

/// Version 14: the resources whose gates relay clients' proofs, and the
/// relay key of a record made through one (see the module's table list).
pub(crate) const RELAY: &str = r#"
CREATE TABLE oauth_resources (
    resource_id TEXT PRIMARY KEY,
    org         INTEGER NOT NULL,
    resource    TEXT NOT NULL,
    relay_jkts  TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  INTEGER NOT NULL
) STRICT;
CREATE UNIQUE INDEX oauth_resources_by_org ON oauth_resources(org, resource);
ALTER TABLE records ADD COLUMN relay_jkt TEXT;
"#;

/// Version 15: the log's size kept in the state row (see the module's
/// table list).
pub(crate) const LOG_SIZE: &str = "ALTER TABLE ledger_state ADD COLUMN next_log_idx INTEGER;";

/// Version 15 on PostgreSQL, over version 14: [`LOG_SIZE`] with
/// PostgreSQL's types.
pub(crate) const POSTGRES_LOG_SIZE: &str =
    "ALTER TABLE ledger_state ADD COLUMN next_log_idx BIGINT;";

/// Version 16: the tile entries' integrated size (see the module's table
/// list), the log's size filled in.
pub(crate) const SEQUENCER: &str = r#"
CREATE TABLE log_integration (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    size INTEGER NOT NULL
) STRICT;
INSERT INTO log_integration (id, size) SELECT 1, COALESCE(max(idx) + 1, 0) FROM log_leaves;
UPDATE ledger_state SET next_log_idx = (SELECT COALESCE(max(idx) + 1, 0) FROM log_leaves)
    WHERE next_log_idx IS NULL;
"#;

/// Version 16 on PostgreSQL, over version 15: [`SEQUENCER`] with
/// PostgreSQL's types, and the status index sequence started at the state
/// row's next index.
pub(crate) const POSTGRES_SEQUENCER: &str = r#"
CREATE TABLE log_integration (
    id   BIGINT PRIMARY KEY CHECK (id = 1),
    size BIGINT NOT NULL
);
INSERT INTO log_integration (id, size) SELECT 1, COALESCE(max(idx) + 1, 0) FROM log_leaves;
UPDATE ledger_state SET next_log_idx = (SELECT COALESCE(max(idx) + 1, 0) FROM log_leaves)
    WHERE next_log_idx IS NULL;
CREATE SEQUENCE status_idx INCREMENT BY 256 MINVALUE 0 START WITH 0;
SELECT setval('status_idx', GREATEST(next_status_idx,
    (SELECT COALESCE(max(status_idx) + 1, 0) FROM tokens)), false) FROM ledger_state WHERE id = 1;
"#;

/// Version 17 on PostgreSQL, over version 16: where each organisation's
/// records are numbered (see the module's table list). SQLite's version 17
/// changes nothing.
pub(crate) const POSTGRES_ORG_SEQS: &str = r#"
CREATE TABLE org_seqs (
    org             BIGINT PRIMARY KEY,
    next_seq        BIGINT NOT NULL,
    base            BIGINT NOT NULL DEFAULT 0,
    last_created_at BIGINT NOT NULL,
    lag_ms          BIGINT NOT NULL DEFAULT 0,
    max_lag_ms      BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT org_seqs_clock CHECK (lag_ms <= 1000),
    CONSTRAINT org_seqs_range CHECK (next_seq <= (org << 40) + 549755813888)
);
"#;

/// Version 14 on PostgreSQL, over version 13: [`RELAY`] with PostgreSQL's
/// types.
pub(crate) const POSTGRES_RELAY: &str = r#"
CREATE TABLE oauth_resources (
    resource_id TEXT COLLATE "C" PRIMARY KEY,
    org         BIGINT NOT NULL,
    resource    TEXT COLLATE "C" NOT NULL,
    relay_jkts  TEXT COLLATE "C" NOT NULL,
    created_by  TEXT COLLATE "C" NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE UNIQUE INDEX oauth_resources_by_org ON oauth_resources(org, resource);
ALTER TABLE records ADD COLUMN relay_jkt TEXT COLLATE "C";
"#;

/// Version 6: approvals, the events outbox, webhooks and their delivery
/// log; an agent's `denied_requests`, a record's `traceparent`, and the
/// next event's `seq` in `ledger_state`.
pub(crate) const EVENTS: &str = r#"
ALTER TABLE agents ADD COLUMN denied_requests INTEGER NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN traceparent TEXT;
ALTER TABLE ledger_state ADD COLUMN next_event_seq INTEGER NOT NULL DEFAULT 1;

CREATE TABLE approvals (
    id           TEXT PRIMARY KEY,
    aar_id       TEXT NOT NULL UNIQUE,
    org          INTEGER NOT NULL,
    status       TEXT NOT NULL,
    requested_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    decided_at   INTEGER,
    decided_by   TEXT,
    note         TEXT,
    log_decided  INTEGER
) STRICT;
CREATE INDEX approvals_by_org ON approvals(org, status, requested_at);
CREATE INDEX approvals_due ON approvals(expires_at) WHERE status = 'pending';

CREATE TABLE events (
    seq        INTEGER PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    org        INTEGER NOT NULL,
    type       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    payload    BLOB NOT NULL
) STRICT;
CREATE INDEX events_by_org ON events(org, seq);

CREATE TABLE webhooks (
    id               TEXT PRIMARY KEY,
    org              INTEGER NOT NULL,
    url              TEXT NOT NULL,
    events           TEXT NOT NULL,
    description      TEXT,
    secret           BLOB NOT NULL,
    previous_secret  BLOB,
    previous_until   INTEGER,
    created_at       INTEGER NOT NULL,
    created_by       TEXT NOT NULL,
    enabled          INTEGER NOT NULL,
    disabled_at      INTEGER,
    disabled_reason  TEXT,
    cursor           INTEGER NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    first_attempt_at INTEGER,
    next_attempt_at  INTEGER,
    lease_until      INTEGER,
    lease_owner      TEXT
) STRICT;
CREATE INDEX webhooks_by_org ON webhooks(org, created_at);

CREATE TABLE deliveries (
    webhook     TEXT NOT NULL,
    event_seq   INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    message_id  TEXT NOT NULL,
    type        TEXT NOT NULL,
    at          INTEGER NOT NULL,
    outcome     TEXT NOT NULL,
    http_status INTEGER,
    error       TEXT,
    duration_ms INTEGER NOT NULL,
    PRIMARY KEY (webhook, event_seq, attempt)
) STRICT, WITHOUT ROWID;
CREATE INDEX deliveries_by_time ON deliveries(webhook, at, event_seq, attempt);
CREATE INDEX deliveries_by_age ON deliveries(at);
"#;

/// Version 5: the record log and token status lists (see the module's
/// table list). A pending record's spend is its reservation. The log's
/// first leaves, for what was stored before, are appended at the next
/// start (`crate::recordlog::backfill`).
pub(crate) const LOG: &str = r#"
CREATE TABLE log_leaves (
    idx  INTEGER PRIMARY KEY,
    hash BLOB NOT NULL,
    leaf BLOB NOT NULL
) STRICT;

CREATE TABLE log_nodes (
    level INTEGER NOT NULL,
    idx   INTEGER NOT NULL,
    hash  BLOB NOT NULL,
    PRIMARY KEY (level, idx)
) STRICT, WITHOUT ROWID;

CREATE TABLE log_checkpoints (
    size       INTEGER PRIMARY KEY,
    root       BLOB NOT NULL,
    note       TEXT NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE log_keys (
    key_id     TEXT PRIMARY KEY,
    secret     BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    retired_at INTEGER
) STRICT;

CREATE TABLE ledger_state (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    next_status_idx INTEGER NOT NULL
) STRICT;
INSERT INTO ledger_state (id, next_status_idx) VALUES (1, 0);

CREATE TABLE status_lists (
    list       INTEGER PRIMARY KEY,
    bits       BLOB NOT NULL,
    revision   INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

ALTER TABLE tokens ADD COLUMN status_idx INTEGER;
ALTER TABLE tokens ADD COLUMN log_issued INTEGER;
ALTER TABLE tokens ADD COLUMN log_revoked INTEGER;
ALTER TABLE tokens ADD COLUMN revoke_cause TEXT;
ALTER TABLE records ADD COLUMN reserved_micros INTEGER;
ALTER TABLE records ADD COLUMN rated_by TEXT;
ALTER TABLE records ADD COLUMN log_created INTEGER;
ALTER TABLE records ADD COLUMN log_completed INTEGER;
ALTER TABLE records ADD COLUMN log_rated INTEGER;
UPDATE records SET reserved_micros = spend_micros WHERE status = 'pending';
"#;

/// Version 4: organisations. Everything stored before joins `default`
/// (number 0, so no record's `seq` changes); the admin key becomes its
/// owner, every other key a developer. The default organisation's row is
/// added by the migration, with a fresh id.
pub(crate) const ORGANISATIONS: &str = r#"
CREATE TABLE orgs (
    num                INTEGER PRIMARY KEY,
    id                 TEXT NOT NULL UNIQUE,
    name               TEXT NOT NULL UNIQUE,
    created_at         INTEGER NOT NULL,
    records_per_day    INTEGER,
    tokens_outstanding INTEGER
) STRICT;

ALTER TABLE api_keys ADD COLUMN org INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'developer';
UPDATE api_keys SET role = 'owner' WHERE is_admin = 1;
CREATE INDEX api_keys_by_org ON api_keys(org, created_at);

ALTER TABLE tokens ADD COLUMN org INTEGER NOT NULL DEFAULT 0;
DROP INDEX tokens_by_agent;
CREATE INDEX tokens_by_agent ON tokens(org, agent_id);
CREATE INDEX tokens_by_expiry ON tokens(org, expires_at);

ALTER TABLE records ADD COLUMN org INTEGER GENERATED ALWAYS AS (seq >> 40) VIRTUAL;

CREATE TABLE agents_v4 (
    org        INTEGER NOT NULL,
    agent_id   TEXT NOT NULL,
    successes  INTEGER NOT NULL DEFAULT 0,
    failures   INTEGER NOT NULL DEFAULT 0,
    pending    INTEGER NOT NULL DEFAULT 0,
    approved   INTEGER NOT NULL DEFAULT 0,
    flagged    INTEGER NOT NULL DEFAULT 0,
    rejected   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (org, agent_id)
) STRICT, WITHOUT ROWID;
INSERT INTO agents_v4 (org, agent_id, successes, failures, pending, approved, flagged, rejected)
    SELECT 0, agent_id, successes, failures, pending, approved, flagged, rejected FROM agents;
DROP TABLE agents;
ALTER TABLE agents_v4 RENAME TO agents;

ALTER TABLE workflows ADD COLUMN org INTEGER NOT NULL DEFAULT 0;
DROP INDEX workflows_by_activity;
CREATE INDEX workflows_by_activity ON workflows(org, last_activity);

CREATE TABLE idempotency_v4 (
    org          INTEGER NOT NULL,
    scope        TEXT NOT NULL,
    key          TEXT NOT NULL,
    request_hash BLOB NOT NULL,
    status       INTEGER NOT NULL,
    body         BLOB NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (org, scope, key)
) STRICT;
INSERT INTO idempotency_v4 (org, scope, key, request_hash, status, body, created_at)
    SELECT 0, scope, key, request_hash, status, body, created_at FROM idempotency;
DROP TABLE idempotency;
ALTER TABLE idempotency_v4 RENAME TO idempotency;
CREATE INDEX idempotency_by_age ON idempotency(created_at);
"#;

/// Version 3: tokens found by jti hash (the `root` column, never read,
/// becomes `jth`, filled by the migration); children counted for the
/// fan-out cap; records say which credential made them.
pub(crate) const AUTHORITY: &str = r#"
DROP INDEX tokens_by_root;
ALTER TABLE tokens RENAME COLUMN root TO jth;
ALTER TABLE tokens ADD COLUMN children INTEGER NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN credential TEXT NOT NULL DEFAULT 'jti';
"#;

/// Version 3, after the tokens' `jth` is filled.
pub(crate) const AUTHORITY_INDEX: &str = r#"
CREATE UNIQUE INDEX tokens_by_jth ON tokens(jth);
UPDATE tokens SET children = (SELECT count(*) FROM tokens c WHERE c.parent = tokens.jti);
"#;

/// Version 3 too: signing keys can be revoked (`mandate signing-key revoke`).
pub(crate) const SIGNING_KEY_REVOCATION: &str = r#"
ALTER TABLE signing_keys ADD COLUMN revoked_at INTEGER;
"#;

/// Version 2: the counts behind workflow summaries.
pub(crate) const WORKFLOW_COUNTS: &str = r#"
CREATE TABLE workflow_counts (
    provenance_ref TEXT NOT NULL,
    agent_id       TEXT NOT NULL,
    action         TEXT NOT NULL,
    result_key     TEXT NOT NULL,
    count          INTEGER NOT NULL,
    PRIMARY KEY (provenance_ref, agent_id, action, result_key)
) STRICT, WITHOUT ROWID;
"#;

/// Version 1: everything the later versions add to.
pub(crate) const SCHEMA: &str = r#"
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value BLOB NOT NULL
) STRICT;

CREATE TABLE signing_keys (
    kid        TEXT PRIMARY KEY,
    secret     BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    retired_at INTEGER,
    max_exp    INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    hash       BLOB NOT NULL UNIQUE,
    email      TEXT,
    is_admin   INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
) STRICT;

CREATE TABLE tokens (
    jti            TEXT PRIMARY KEY,
    parent         TEXT REFERENCES tokens(jti),
    root           TEXT NOT NULL,
    provenance_ref TEXT NOT NULL,
    agent_id       TEXT NOT NULL,
    depth          INTEGER NOT NULL,
    claims         TEXT NOT NULL,
    kid            TEXT NOT NULL,
    issued_at      INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    revoked_at     INTEGER,
    revoke_reason  TEXT,
    issued_by      TEXT,
    spent_micros   INTEGER NOT NULL DEFAULT 0,
    actions        INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX tokens_by_parent ON tokens(parent);
CREATE INDEX tokens_by_root ON tokens(root);
CREATE INDEX tokens_by_provenance ON tokens(provenance_ref);
CREATE INDEX tokens_by_agent ON tokens(agent_id);

CREATE TABLE records (
    seq              INTEGER PRIMARY KEY,
    aar_id           TEXT NOT NULL UNIQUE,
    provenance_ref   TEXT NOT NULL,
    jti              TEXT NOT NULL,
    agent_id         TEXT NOT NULL,
    action           TEXT NOT NULL,
    resource         TEXT NOT NULL,
    status           TEXT NOT NULL,
    result           TEXT,
    deny_reason      TEXT,
    result_hash      TEXT,
    spend_micros     INTEGER NOT NULL,
    trust_score      REAL NOT NULL,
    delegation_depth INTEGER NOT NULL,
    human_ref        TEXT NOT NULL,
    assurance_level  TEXT NOT NULL,
    rating           TEXT,
    note             TEXT,
    feedback_at      INTEGER,
    created_at       INTEGER NOT NULL,
    completed_at     INTEGER,
    delegated_jti    TEXT
) STRICT;
CREATE INDEX records_by_provenance ON records(provenance_ref, seq);
CREATE INDEX records_by_agent ON records(agent_id, seq);
CREATE INDEX records_by_token ON records(jti, seq);

CREATE TABLE agents (
    agent_id   TEXT PRIMARY KEY,
    successes  INTEGER NOT NULL DEFAULT 0,
    failures   INTEGER NOT NULL DEFAULT 0,
    pending    INTEGER NOT NULL DEFAULT 0,
    approved   INTEGER NOT NULL DEFAULT 0,
    flagged    INTEGER NOT NULL DEFAULT 0,
    rejected   INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE workflows (
    provenance_ref  TEXT PRIMARY KEY,
    root_jti        TEXT NOT NULL,
    root_agent_id   TEXT NOT NULL,
    human_ref       TEXT NOT NULL,
    assurance_level TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    total_records   INTEGER NOT NULL DEFAULT 0,
    last_activity   INTEGER NOT NULL
) STRICT;
CREATE INDEX workflows_by_activity ON workflows(last_activity);

CREATE TABLE idempotency (
    scope        TEXT NOT NULL,
    key          TEXT NOT NULL,
    request_hash BLOB NOT NULL,
    status       INTEGER NOT NULL,
    body         BLOB NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
) STRICT;
CREATE INDEX idempotency_by_age ON idempotency(created_at);
"#;
