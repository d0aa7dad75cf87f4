//! The reviewer's dashboard's counters (`agent_days`, `org_hours`,
//! `org_counts`), what an organisation knows its humans by
//! (`human_labels`) and the busiest budgets: every statement on them, once,
//! for the ledger (which adds to them in the transaction of each record
//! change), the read side and the migration that fills them from the
//! records already stored ([`backfill`]).
//!
//! Days and hours are UTC, numbered from the unix epoch (`ms / DAY_MS`,
//! `ms / HOUR_MS`). What a record change adds is [`Moved::of`]'s to
//! decide, from core's states and `CountsChange`.

use std::collections::HashMap;

use mandate_core::{
    Claims, CountsChange, DenyReason, Outcome, Rating, RecordOrigin, RecordState, Status, Usage,
    Usd, largest_share,
};

use super::orgs::Org;
use crate::store::sql::types::Value;
use crate::store::sql::{self, Connection, OptionalExtension, params};

/// Milliseconds of an hour and of a day.
pub const HOUR_MS: i64 = 3_600_000;
pub const DAY_MS: i64 = 86_400_000;

/// The UTC day of a time (unix milliseconds).
pub fn day_of(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS)
}

/// The UTC hour of a time (unix milliseconds).
pub fn hour_of(ms: i64) -> i64 {
    ms.div_euclid(HOUR_MS)
}

/// An agent's records of one day: created, and the changes of state that
/// happened that day (its reputation counts' changes among them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DayCounts {
    /// Records created.
    pub records: i64,
    /// Records completed with a result other than `success`.
    pub errors: i64,
    /// Records denied (by scope, budget, standing, or an approval's no).
    pub denied: i64,
    /// How its reputation counts moved (core's `CountsChange`).
    pub counts: CountsChange,
}

impl DayCounts {
    /// `n` times these counts.
    fn times(&self, n: i64) -> DayCounts {
        let c = &self.counts;
        DayCounts {
            records: self.records * n,
            errors: self.errors * n,
            denied: self.denied * n,
            counts: CountsChange {
                successes: c.successes * n,
                failures: c.failures * n,
                pending: c.pending * n,
                denied_requests: c.denied_requests * n,
                approved: c.approved * n,
                flagged: c.flagged * n,
                rejected: c.rejected * n,
            },
        }
    }

    /// Adds `other`, counter by counter.
    pub fn add(&mut self, other: &DayCounts) {
        self.records += other.records;
        self.errors += other.errors;
        self.denied += other.denied;
        self.counts.add(other.counts);
    }
}

/// An organisation's hour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HourCounts {
    pub records: i64,
    pub successes: i64,
    pub errors: i64,
    pub denied: i64,
    pub ratings: i64,
    /// Approvals decided by a person (expiries are not decisions).
    pub approvals_decided: i64,
    /// Their waits, summed, and the longest (milliseconds).
    pub approval_wait_ms: i64,
    pub approval_wait_max_ms: i64,
}

impl HourCounts {
    /// `n` times these counts (records' only: no approvals).
    fn times(&self, n: i64) -> HourCounts {
        HourCounts {
            records: self.records * n,
            successes: self.successes * n,
            errors: self.errors * n,
            denied: self.denied * n,
            ratings: self.ratings * n,
            ..HourCounts::default()
        }
    }

    /// Adds `other`, counter by counter (the longest wait is the longer).
    pub fn add(&mut self, other: &HourCounts) {
        self.records += other.records;
        self.successes += other.successes;
        self.errors += other.errors;
        self.denied += other.denied;
        self.ratings += other.ratings;
        self.approvals_decided += other.approvals_decided;
        self.approval_wait_ms += other.approval_wait_ms;
        self.approval_wait_max_ms = self.approval_wait_max_ms.max(other.approval_wait_max_ms);
    }
}

/// What one record's change of state adds to the dashboard's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Moved {
    pub day: DayCounts,
    pub hour: HourCounts,
    /// Change of the organisation's approvals pending.
    pub approvals_pending: i64,
    /// Change of its completed records awaiting a rating.
    pub records_unrated: i64,
    /// Whether the agent acted (made the record or completed it).
    pub activity: bool,
}

impl Moved {
    /// The record, made by `origin`, went from `before` (`None`: it is
    /// new) to `after`.
    pub fn of(origin: RecordOrigin, before: Option<&RecordState>, after: &RecordState) -> Moved {
        let created = before.is_none();
        let ended = after.result().is_some() && before.is_none_or(|b| b.result().is_none());
        let failed = ended && after.result() != Some(Outcome::Success);
        let denied = matches!(after, RecordState::Denied { .. })
            && !matches!(before, Some(RecordState::Denied { .. }));
        let rated = matches!(after, RecordState::Rated { .. })
            && !matches!(before, Some(RecordState::Rated { .. }));
        let unrated = |state: Option<&RecordState>| {
            i64::from(matches!(state, Some(RecordState::Completed { .. })))
        };
        let awaiting = |state: Option<&RecordState>| {
            i64::from(matches!(state, Some(RecordState::AwaitingApproval)))
        };
        let counts = CountsChange::of(origin, before, after);
        Moved {
            day: DayCounts {
                records: i64::from(created),
                errors: i64::from(failed),
                denied: i64::from(denied),
                counts,
            },
            hour: HourCounts {
                records: i64::from(created),
                successes: counts.successes,
                errors: i64::from(failed),
                denied: i64::from(denied),
                ratings: i64::from(rated),
                ..HourCounts::default()
            },
            approvals_pending: awaiting(Some(after)) - awaiting(before),
            records_unrated: unrated(Some(after)) - unrated(before),
            activity: created || ended,
        }
    }
}

/// The columns of [`add_agent_days`]' rows.
pub const AGENT_DAY: [sql::Column; 13] = {
    use sql::Column::{Integer as I, Text as T};
    [I, T, I, I, I, I, I, I, I, I, I, I, I]
};

/// What a group adds to an agent's day, as a row of [`add_agent_days`].
pub fn agent_day(org: Org, agent_id: &str, day: i64, add: &DayCounts) -> Vec<Value> {
    let c = &add.counts;
    let counts = [
        day,
        add.records,
        add.errors,
        add.denied,
        c.successes,
        c.failures,
        c.pending,
        c.denied_requests,
        c.approved,
        c.flagged,
        c.rejected,
    ];
    [
        Value::Integer(org.number()),
        Value::Text(agent_id.to_owned()),
    ]
    .into_iter()
    .chain(counts.into_iter().map(Value::Integer))
    .collect()
}

/// The part of a group's statement ([`Connection::apply_tables`]) adding
/// to agents' days ([`agent_day`] rows, one per agent and day).
pub fn add_agent_days(rows: &[Vec<Value>]) -> sql::RowsFor<'_> {
    sql::RowsFor {
        sqlite: "INSERT INTO agent_days (org, agent_id, day, records, errors, denied, successes, failures,
            pending, denied_requests, approved, flagged, rejected)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
         ON CONFLICT (org, agent_id, day) DO UPDATE SET
            records = agent_days.records + excluded.records,
            errors = agent_days.errors + excluded.errors,
            denied = agent_days.denied + excluded.denied,
            successes = agent_days.successes + excluded.successes,
            failures = agent_days.failures + excluded.failures,
            pending = agent_days.pending + excluded.pending,
            denied_requests = agent_days.denied_requests + excluded.denied_requests,
            approved = agent_days.approved + excluded.approved,
            flagged = agent_days.flagged + excluded.flagged,
            rejected = agent_days.rejected + excluded.rejected",
        postgres: "INSERT INTO agent_days (org, agent_id, day, records, errors, denied, successes, failures,
            pending, denied_requests, approved, flagged, rejected)
         SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[],
             $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[],
             $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[])
         ON CONFLICT (org, agent_id, day) DO UPDATE SET
            records = agent_days.records + excluded.records,
            errors = agent_days.errors + excluded.errors,
            denied = agent_days.denied + excluded.denied,
            successes = agent_days.successes + excluded.successes,
            failures = agent_days.failures + excluded.failures,
            pending = agent_days.pending + excluded.pending,
            denied_requests = agent_days.denied_requests + excluded.denied_requests,
            approved = agent_days.approved + excluded.approved,
            flagged = agent_days.flagged + excluded.flagged,
            rejected = agent_days.rejected + excluded.rejected",
        columns: &AGENT_DAY,
        rows,
    }
}

/// How many records `org` created in the UTC hours `hours` (as counted in
/// `org_hours`, which every record's creation adds one to).
pub fn records_in_hours(
    conn: &Connection,
    org: Org,
    hours: std::ops::Range<i64>,
) -> sql::Result<u64> {
    let records: i64 = conn
        .prepare_cached(
            "SELECT CAST(COALESCE(sum(records), 0) AS BIGINT) FROM org_hours
             WHERE org = ?1 AND hour >= ?2 AND hour < ?3",
        )?
        .query_row(params![org, hours.start, hours.end], |row| row.get(0))?;
    Ok(u64::try_from(records).unwrap_or(0))
}

/// The columns of [`add_org_hours`]' rows.
pub const ORG_HOUR: [sql::Column; 10] = [sql::Column::Integer; 10];

/// What a group adds to an organisation's hour, as a row of
/// [`add_org_hours`].
pub fn org_hour(org: Org, hour: i64, add: &HourCounts) -> Vec<Value> {
    [
        org.number(),
        hour,
        add.records,
        add.successes,
        add.errors,
        add.denied,
        add.ratings,
        add.approvals_decided,
        add.approval_wait_ms,
        add.approval_wait_max_ms,
    ]
    .into_iter()
    .map(Value::Integer)
    .collect()
}

/// The part of a group's statement ([`Connection::apply_tables`]) adding
/// to organisations' hours ([`org_hour`] rows, one per organisation and
/// hour).
pub fn add_org_hours(rows: &[Vec<Value>]) -> sql::RowsFor<'_> {
    sql::RowsFor {
        sqlite: "INSERT INTO org_hours (org, hour, records, successes, errors, denied, ratings,
            approvals_decided, approval_wait_ms, approval_wait_max_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT (org, hour) DO UPDATE SET
            records = org_hours.records + excluded.records,
            successes = org_hours.successes + excluded.successes,
            errors = org_hours.errors + excluded.errors,
            denied = org_hours.denied + excluded.denied,
            ratings = org_hours.ratings + excluded.ratings,
            approvals_decided = org_hours.approvals_decided + excluded.approvals_decided,
            approval_wait_ms = org_hours.approval_wait_ms + excluded.approval_wait_ms,
            approval_wait_max_ms = CASE WHEN org_hours.approval_wait_max_ms > excluded.approval_wait_max_ms
                THEN org_hours.approval_wait_max_ms ELSE excluded.approval_wait_max_ms END",
        postgres: "INSERT INTO org_hours (org, hour, records, successes, errors, denied, ratings,
            approvals_decided, approval_wait_ms, approval_wait_max_ms)
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[],
             $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[],
             $10::bigint[])
         ON CONFLICT (org, hour) DO UPDATE SET
            records = org_hours.records + excluded.records,
            successes = org_hours.successes + excluded.successes,
            errors = org_hours.errors + excluded.errors,
            denied = org_hours.denied + excluded.denied,
            ratings = org_hours.ratings + excluded.ratings,
            approvals_decided = org_hours.approvals_decided + excluded.approvals_decided,
            approval_wait_ms = org_hours.approval_wait_ms + excluded.approval_wait_ms,
            approval_wait_max_ms = CASE WHEN org_hours.approval_wait_max_ms > excluded.approval_wait_max_ms
                THEN org_hours.approval_wait_max_ms ELSE excluded.approval_wait_max_ms END",
        columns: &ORG_HOUR,
        rows,
    }
}

/// The columns of [`add_inboxes`]' rows.
pub const INBOX: [sql::Column; 3] = [sql::Column::Integer; 3];

/// What a group adds to an organisation's inbox counts, as a row of
/// [`add_inboxes`].
pub fn inbox_moved(org: Org, approvals_pending: i64, records_unrated: i64) -> Vec<Value> {
    vec![
        Value::Integer(org.number()),
        Value::Integer(approvals_pending),
        Value::Integer(records_unrated),
    ]
}

/// The part of a group's statement ([`Connection::apply_tables`]) adding
/// to organisations' inbox counts ([`inbox_moved`] rows, one per
/// organisation).
pub fn add_inboxes(rows: &[Vec<Value>]) -> sql::RowsFor<'_> {
    sql::RowsFor {
        sqlite:
            "INSERT INTO org_counts (org, approvals_pending, records_unrated) VALUES (?1, ?2, ?3)
         ON CONFLICT (org) DO UPDATE SET
            approvals_pending = org_counts.approvals_pending + excluded.approvals_pending,
            records_unrated = org_counts.records_unrated + excluded.records_unrated",
        postgres: "INSERT INTO org_counts (org, approvals_pending, records_unrated)
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[])
         ON CONFLICT (org) DO UPDATE SET
            approvals_pending = org_counts.approvals_pending + excluded.approvals_pending,
            records_unrated = org_counts.records_unrated + excluded.records_unrated",
        columns: &INBOX,
        rows,
    }
}

/// An organisation's inbox: approvals pending and completed records
/// awaiting a rating.
pub fn inbox(conn: &Connection, org: Org) -> sql::Result<(i64, i64)> {
    Ok(conn
        .prepare_cached("SELECT approvals_pending, records_unrated FROM org_counts WHERE org = ?1")?
        .query_row(params![org], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?
        .unwrap_or((0, 0)))
}

/// Stores what `org` knows the human `human_ref` by (the newest label
/// wins; `first_seen` stays).
pub fn label_human(
    conn: &Connection,
    org: Org,
    human_ref: &str,
    label: &str,
    at_ms: i64,
) -> sql::Result<()> {
    conn.prepare_cached(
        "INSERT INTO human_labels (org, human_ref, label, first_seen) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (org, human_ref) DO UPDATE SET label = excluded.label",
    )?
    .execute(params![org, human_ref, label, at_ms])?;
    Ok(())
}

/// Records a token's largest share of a budget used, after a charge.
pub fn note_budget_share(
    conn: &Connection,
    jth: &str,
    constraints: &mandate_core::Constraints,
    used: Usage,
) -> sql::Result<()> {
    let (limit, percent) =
        largest_share(constraints, used).map_or((None, None), |(l, p)| (Some(l.as_str()), Some(p)));
    conn.prepare_cached("UPDATE tokens SET budget_percent = ?1, budget_limit = ?2 WHERE jth = ?3")?
        .execute(params![percent, limit, jth])?;
    Ok(())
}

fn day_counts(row: &sql::Row<'_>, first: usize) -> sql::Result<DayCounts> {
    Ok(DayCounts {
        records: row.get(first)?,
        errors: row.get(first + 1)?,
        denied: row.get(first + 2)?,
        counts: CountsChange {
            successes: row.get(first + 3)?,
            failures: row.get(first + 4)?,
            pending: row.get(first + 5)?,
            denied_requests: row.get(first + 6)?,
            approved: row.get(first + 7)?,
            flagged: row.get(first + 8)?,
            rejected: row.get(first + 9)?,
        },
    })
}

const DAY_COLUMNS: &str = "records, errors, denied, successes, failures, pending, denied_requests, approved, flagged, rejected";

/// Every agent's days of `org` from `from_day` on (`agent_days_by_day`).
pub fn days_from(
    conn: &Connection,
    org: Org,
    from_day: i64,
) -> sql::Result<Vec<(String, i64, DayCounts)>> {
    conn.prepare_cached(&format!(
        "SELECT agent_id, day, {DAY_COLUMNS} FROM agent_days WHERE org = ?1 AND day >= ?2"
    ))?
    .query_map(params![org, from_day], |row| {
        Ok((row.get(0)?, row.get(1)?, day_counts(row, 2)?))
    })?
    .collect()
}

/// One agent's days from `from_day` on, oldest first (the table's key).
pub fn agent_days_from(
    conn: &Connection,
    org: Org,
    agent_id: &str,
    from_day: i64,
) -> sql::Result<Vec<(i64, DayCounts)>> {
    conn.prepare_cached(&format!(
        "SELECT day, {DAY_COLUMNS} FROM agent_days WHERE org = ?1 AND agent_id = ?2 AND day >= ?3
         ORDER BY day"
    ))?
    .query_map(params![org, agent_id, from_day], |row| {
        Ok((row.get(0)?, day_counts(row, 1)?))
    })?
    .collect()
}

/// An organisation's hours in `from_hour..to_hour`, oldest first.
pub fn hours(
    conn: &Connection,
    org: Org,
    from_hour: i64,
    to_hour: i64,
) -> sql::Result<Vec<(i64, HourCounts)>> {
    conn.prepare_cached(
        "SELECT hour, records, successes, errors, denied, ratings, approvals_decided,
            approval_wait_ms, approval_wait_max_ms
         FROM org_hours WHERE org = ?1 AND hour >= ?2 AND hour < ?3 ORDER BY hour",
    )?
    .query_map(params![org, from_hour, to_hour], |row| {
        Ok((
            row.get(0)?,
            HourCounts {
                records: row.get(1)?,
                successes: row.get(2)?,
                errors: row.get(3)?,
                denied: row.get(4)?,
                ratings: row.get(5)?,
                approvals_decided: row.get(6)?,
                approval_wait_ms: row.get(7)?,
                approval_wait_max_ms: row.get(8)?,
            },
        ))
    })?
    .collect()
}

/// A budgeted token as the overview lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetRow {
    pub jth: String,
    pub agent_id: String,
    pub provenance_ref: String,
    pub claims: String,
    pub spent_micros: i64,
    pub actions: i64,
    /// `max_spend_usd` or `max_actions`.
    pub limit: String,
    pub percent: f64,
}

/// The `limit` tokens of `org`, neither revoked nor expired before
/// `alive_at_s`, that have used the largest share of a budget, largest
/// first (`tokens_by_budget`, read from its end).
pub fn busiest_budgets(
    conn: &Connection,
    org: Org,
    alive_at_s: i64,
    limit: i64,
) -> sql::Result<Vec<BudgetRow>> {
    conn.prepare_cached(
        "SELECT jth, agent_id, provenance_ref, claims, spent_micros, actions, budget_limit, budget_percent
         FROM tokens WHERE org = ?1 AND budget_percent IS NOT NULL AND revoked_at IS NULL
            AND expires_at > ?2
         ORDER BY budget_percent DESC LIMIT ?3",
    )?
    .query_map(params![org, alive_at_s, limit], |row| {
        Ok(BudgetRow {
            jth: row.get(0)?,
            agent_id: row.get(1)?,
            provenance_ref: row.get(2)?,
            claims: row.get(3)?,
            spent_micros: row.get(4)?,
            actions: row.get(5)?,
            limit: row.get(6)?,
            percent: row.get(7)?,
        })
    })?
    .collect()
}

/// A stored value that does not have the form the writer gave it.
fn corrupt(what: &str, cause: impl std::fmt::Display) -> sql::Error {
    sql::Error::corrupt(what, cause)
}

/// Fills the dashboard's counters from what is stored (upgrading a version
/// 6 database): each record is counted on its creation day and hour, its
/// outcome (or denial) on its completion's (its creation's when it has
/// none), its rating on the rating's; approvals decided by a person on
/// the decision's hour; each budgeted token's share; the labels of humans
/// whose L1 tokens a developer key issued (its e-mail is the human's).
/// Records read in groups, never one by one. Their origin is
/// `RecordOrigin::Unknown`: this runs on an upgrade from version 6, before
/// version 9 stored it, so they count as they did.
pub fn backfill(conn: &Connection) -> sql::Result<()> {
    let mut groups = conn.prepare_cached(
        "SELECT org, agent_id, status, result, deny_reason, rating,
            created_at / 3600000, COALESCE(completed_at, created_at) / 3600000, feedback_at / 3600000,
            count(*), max(COALESCE(completed_at, created_at))
         FROM records
         GROUP BY org, agent_id, status, result, deny_reason, rating,
            created_at / 3600000, COALESCE(completed_at, created_at) / 3600000, feedback_at / 3600000",
    )?;
    let rows = groups
        .query_map([], |row| {
            let parse = |i: usize, what: &str| -> sql::Result<Option<String>> {
                row.get::<_, Option<String>>(i)
                    .map_err(|e| corrupt(what, e))
            };
            let status: Status = parse(2, "records.status")?
                .unwrap_or_default()
                .parse()
                .map_err(|e| corrupt("records.status", e))?;
            let result = parse(3, "records.result")?
                .map(|r| r.parse::<Outcome>())
                .transpose()
                .map_err(|e| corrupt("records.result", e))?;
            let reason = parse(4, "records.deny_reason")?
                .map(|r| r.parse::<DenyReason>())
                .transpose()
                .map_err(|e| corrupt("records.deny_reason", e))?;
            let rating = parse(5, "records.rating")?
                .map(|r| r.parse::<Rating>())
                .transpose()
                .map_err(|e| corrupt("records.rating", e))?;
            let state = RecordState::from_parts(status, result, rating, reason)
                .map_err(|e| corrupt("records.status", e))?;
            Ok((
                row.get::<_, Org>(0)?,
                row.get::<_, String>(1)?,
                state,
                [
                    row.get::<_, i64>(6)?,
                    row.get::<_, i64>(7)?,
                    row.get::<_, Option<i64>>(8)?.unwrap_or(0),
                ],
                row.get::<_, i64>(9)?,
                row.get::<_, i64>(10)?,
            ))
        })?
        .collect::<sql::Result<Vec<_>>>()?;
    drop(groups);
    let mut days = HashMap::<(Org, String, i64), DayCounts>::new();
    let mut hours = HashMap::<(Org, i64), HourCounts>::new();
    let mut inboxes = HashMap::<Org, (i64, i64)>::new();
    let mut activity = HashMap::<(Org, String), i64>::new();
    for (org, agent_id, state, [created, ended, rated], n, last) in rows {
        // The record as made (on its creation's hour), as it ended (on its
        // completion's), then as rated (on the rating's).
        let unrated = match state {
            RecordState::Rated { result, .. } => RecordState::Completed { result },
            other => other,
        };
        let outcome = Moved::of(RecordOrigin::Unknown, None, &unrated);
        let made = Moved {
            day: DayCounts {
                records: 1,
                ..DayCounts::default()
            },
            hour: HourCounts {
                records: 1,
                ..HourCounts::default()
            },
            ..Moved::default()
        };
        let mut steps = vec![
            (created, made),
            (
                ended,
                Moved {
                    day: DayCounts {
                        records: 0,
                        ..outcome.day
                    },
                    hour: HourCounts {
                        records: 0,
                        ..outcome.hour
                    },
                    ..outcome
                },
            ),
        ];
        if let RecordState::Rated { .. } = state {
            steps.push((
                rated,
                Moved::of(RecordOrigin::Unknown, Some(&unrated), &state),
            ));
        }
        for (hour, moved) in steps {
            days.entry((org, agent_id.clone(), hour.div_euclid(24)))
                .or_default()
                .add(&moved.day.times(n));
            hours
                .entry((org, hour))
                .or_default()
                .add(&moved.hour.times(n));
            let inbox = inboxes.entry(org).or_default();
            inbox.0 += moved.approvals_pending * n;
            inbox.1 += moved.records_unrated * n;
        }
        let seen = activity.entry((org, agent_id)).or_insert(last);
        *seen = (*seen).max(last);
    }
    let days: Vec<_> = days
        .iter()
        .map(|((org, agent_id, day), counts)| agent_day(*org, agent_id, *day, counts))
        .collect();
    let hours: Vec<_> = hours
        .iter()
        .map(|((org, hour), counts)| org_hour(*org, *hour, counts))
        .collect();
    let inboxes: Vec<_> = inboxes
        .iter()
        .map(|(org, (pending, unrated))| inbox_moved(*org, *pending, *unrated))
        .collect();
    conn.apply_tables(&[
        add_agent_days(&days),
        add_org_hours(&hours),
        add_inboxes(&inboxes),
    ])?;
    let mut touch = conn
        .prepare_cached("UPDATE agents SET last_activity = ?1 WHERE org = ?2 AND agent_id = ?3")?;
    for ((org, agent_id), last) in &activity {
        touch.execute(params![*last, *org, agent_id.as_str()])?;
    }
    drop(touch);
    backfill_decisions(conn)?;
    backfill_budgets(conn)?;
    conn.execute(
        "INSERT INTO human_labels (org, human_ref, label, first_seen)
         SELECT w.org, w.human_ref, min(k.email), min(w.created_at)
         FROM workflows w JOIN tokens t ON t.jti = w.root_jti JOIN api_keys k ON k.id = t.issued_by
         WHERE w.assurance_level = 'L1' AND k.role = 'developer' AND k.email IS NOT NULL
         GROUP BY w.org, w.human_ref",
        [],
    )?;
    Ok(())
}

/// Counts approvals decided by a person on the hours they were decided.
fn backfill_decisions(conn: &Connection) -> sql::Result<()> {
    let decided = conn
        .prepare_cached(
            "SELECT org, decided_at / 3600000, count(*), sum(decided_at - requested_at),
                max(decided_at - requested_at)
             FROM approvals WHERE decided_by IS NOT NULL AND decided_at IS NOT NULL
             GROUP BY org, decided_at / 3600000",
        )?
        .query_map([], |row| {
            Ok((
                row.get::<_, Org>(0)?,
                row.get::<_, i64>(1)?,
                HourCounts {
                    approvals_decided: row.get(2)?,
                    approval_wait_ms: row.get(3)?,
                    approval_wait_max_ms: row.get(4)?,
                    ..HourCounts::default()
                },
            ))
        })?
        .collect::<sql::Result<Vec<_>>>()?;
    let decided: Vec<_> = decided
        .iter()
        .map(|(org, hour, counts)| org_hour(*org, *hour, counts))
        .collect();
    conn.apply_tables(&[add_org_hours(&decided)])
}

/// Notes the share each used budget has reached.
fn backfill_budgets(conn: &Connection) -> sql::Result<()> {
    let used = conn
        .prepare_cached(
            "SELECT jth, claims, spent_micros, actions FROM tokens
             WHERE spent_micros > 0 OR actions > 0",
        )?
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, i64>(3)?,
            ))
        })?
        .collect::<sql::Result<Vec<_>>>()?;
    for (jth, claims, spent, actions) in used {
        let claims: Claims =
            serde_json::from_str(&claims).map_err(|e| corrupt("tokens.claims", e))?;
        let constraints = claims.constraints();
        if constraints.is_empty() {
            continue;
        }
        let usage = Usage {
            spent: Usd::from_micros(u64::try_from(spent).unwrap_or(0))
                .map_err(|e| corrupt("tokens.spent_micros", e))?,
            actions: u64::try_from(actions).unwrap_or(0),
        };
        note_budget_share(conn, &jth, &constraints, usage)?;
    }
    Ok(())
}
