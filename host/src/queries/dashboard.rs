//! The reviewer's dashboard on the read side: agents with their windows
//! and sparklines, an agent's history, the organisation's overview, its
//! inbox counts and its tokens. Everything but the token list is read from
//! the counters the ledger keeps (`crate::store::dashboard`), never from
//! records; scores are core's `reputation`, computed here from counts.
//!
//! A window of days is whole UTC days ending today: `24h` is today's and
//! yesterday's buckets, `7d` the last 7, `30d` the last 30. The overview's
//! `24h` is the last 24 whole UTC hours, this one included.

use std::cmp::Ordering;
use std::collections::HashMap;

use mandate_core::{Claims, CountsChange, Limit, Reputation, ReputationCounts, Usd, reputation};

use super::{Page, QueryError, count, decode_cursor, encode_cursor};
use crate::store::dashboard::{self as rows, DAY_MS, DayCounts, HOUR_MS, HourCounts};
use crate::store::orgs::Org;
use crate::store::sql::types::Value;
use crate::store::sql::{self, Connection, params_from_iter};
use crate::store::tokens::{self, TokenRow, token_row};

/// Days of the sparkline.
pub const SPARKLINE_DAYS: i64 = 14;
/// Budgets the overview lists.
pub const BUSIEST_BUDGETS: i64 = 10;

/// A window of time the dashboard counts over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Day,
    Week,
    Month,
}

impl Window {
    /// `24h`, `7d` or `30d`.
    pub fn parse(text: &str) -> Option<Window> {
        match text {
            "24h" => Some(Window::Day),
            "7d" => Some(Window::Week),
            "30d" => Some(Window::Month),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Window::Day => "24h",
            Window::Week => "7d",
            Window::Month => "30d",
        }
    }

    /// How many UTC day buckets the window covers, today's included.
    fn days(self) -> i64 {
        match self {
            Window::Day => 2,
            Window::Week => 7,
            Window::Month => 30,
        }
    }
}

/// What the agent list sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentSort {
    AgentId,
    Reputation,
    Activity,
    Actions,
    DenialRate,
    ErrorRate,
}

impl AgentSort {
    /// The query's name of a sort.
    pub fn parse(text: &str) -> Option<AgentSort> {
        Some(match text {
            "agent_id" => AgentSort::AgentId,
            "reputation" => AgentSort::Reputation,
            "activity" => AgentSort::Activity,
            "actions" => AgentSort::Actions,
            "denial_rate" => AgentSort::DenialRate,
            "error_rate" => AgentSort::ErrorRate,
            _ => return None,
        })
    }

    fn as_str(self) -> &'static str {
        match self {
            AgentSort::AgentId => "agent_id",
            AgentSort::Reputation => "reputation",
            AgentSort::Activity => "activity",
            AgentSort::Actions => "actions",
            AgentSort::DenialRate => "denial_rate",
            AgentSort::ErrorRate => "error_rate",
        }
    }
}

/// The agent list's query.
#[derive(Debug, Clone)]
pub struct AgentFilter {
    pub window: Window,
    /// Agent ids starting with this (bare).
    pub prefix: Option<String>,
    pub sort: AgentSort,
    pub descending: bool,
    pub limit: u32,
    pub cursor: Option<String>,
}

/// An agent's counts over a window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WindowCounts {
    pub records: u64,
    pub successes: u64,
    pub errors: u64,
    pub denied: u64,
    /// Denied of records made.
    pub denial_rate: f64,
    /// Errors of outcomes (successes and errors).
    pub error_rate: f64,
}

impl WindowCounts {
    fn of(sum: &DayCounts) -> WindowCounts {
        let records = count(sum.records);
        let successes = count(sum.counts.successes);
        let errors = count(sum.errors);
        let denied = count(sum.denied);
        let rate = |part: u64, whole: u64| {
            if whole == 0 {
                0.0
            } else {
                (part as f64 / whole as f64).min(1.0)
            }
        };
        WindowCounts {
            records,
            successes,
            errors,
            denied,
            denial_rate: rate(denied, records),
            error_rate: rate(errors, successes.saturating_add(errors)),
        }
    }
}

/// One UTC day of a sparkline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SparkDay {
    /// Days since the unix epoch.
    pub day: i64,
    pub successes: u64,
    pub errors: u64,
    pub denied: u64,
}

/// An agent as the list shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentOverview {
    /// Bare.
    pub agent_id: String,
    pub reputation: Reputation,
    /// Unix milliseconds.
    pub last_activity: Option<i64>,
    pub window: WindowCounts,
    /// The last [`SPARKLINE_DAYS`] UTC days, oldest first.
    pub recent: Vec<SparkDay>,
}

impl AgentOverview {
    /// The value the list sorts by (an agent id sorts by its id alone).
    fn key(&self, sort: AgentSort) -> f64 {
        match sort {
            AgentSort::AgentId => 0.0,
            AgentSort::Reputation => self.reputation.combined_reputation,
            AgentSort::Activity => self.last_activity.map_or(-1.0, |at| at as f64),
            AgentSort::Actions => self.reputation.total_actions as f64,
            AgentSort::DenialRate => self.window.denial_rate,
            AgentSort::ErrorRate => self.window.error_rate,
        }
    }
}

/// Orders two (key, agent id) places: by key in the direction asked, ties
/// by agent id in the same direction.
fn order(a: (f64, &str), b: (f64, &str), descending: bool) -> Ordering {
    let ordering = a.0.total_cmp(&b.0).then_with(|| a.1.cmp(b.1));
    if descending {
        ordering.reverse()
    } else {
        ordering
    }
}

/// Why an agent list ran out of time.
const AGENTS_TOO_BROAD: &str = "this organisation has more agents than can be listed within the query time budget; \
     narrow the list with q (an agent id prefix)";

/// The counts an agents row holds.
fn counts_of(row: &sql::Row<'_>, first: usize) -> sql::Result<ReputationCounts> {
    Ok(ReputationCounts {
        successes: count(row.get(first)?),
        failures: count(row.get(first + 1)?),
        pending: count(row.get(first + 2)?),
        approved: count(row.get(first + 3)?),
        flagged: count(row.get(first + 4)?),
        rejected: count(row.get(first + 5)?),
        denied_requests: count(row.get(first + 6)?),
    })
}

/// One page of the agents of `org`, each with its reputation (core's),
/// its window and its sparkline, sorted as asked; `today` is the UTC day
/// of now.
pub fn agents(
    conn: &Connection,
    org: Org,
    filter: &AgentFilter,
    today: i64,
) -> Result<Page<AgentOverview>, QueryError> {
    agent_page(conn, org, filter, today).map_err(super::narrow(AGENTS_TOO_BROAD))
}

fn agent_page(
    conn: &Connection,
    org: Org,
    filter: &AgentFilter,
    today: i64,
) -> Result<Page<AgentOverview>, QueryError> {
    let after = filter
        .cursor
        .as_deref()
        .map(|cursor| {
            let text = decode_cursor(cursor, 'g')?;
            let mut parts = text.splitn(4, ':');
            let (Some(sort), Some(direction), Some(key), Some(agent_id)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err(QueryError::InvalidCursor);
            };
            let key = u64::from_str_radix(key, 16).map_err(|_| QueryError::InvalidCursor)?;
            if sort != filter.sort.as_str() || direction != direction_of(filter.descending) {
                return Err(QueryError::InvalidCursor);
            }
            Ok((f64::from_bits(key), agent_id.to_owned()))
        })
        .transpose()?;
    let mut sql = String::from(
        "SELECT agent_id, successes, failures, pending, approved, flagged, rejected, denied_requests,
            last_activity FROM agents WHERE org = ?",
    );
    let mut values = vec![Value::Integer(org.number())];
    if let Some(prefix) = &filter.prefix {
        // Agent ids are made of `A-Z a-z 0-9 . _ -`, all below `~`.
        sql.push_str(" AND agent_id >= ? AND agent_id < ?");
        values.push(Value::Text(prefix.clone()));
        values.push(Value::Text(format!("{prefix}~")));
    }
    let mut statement = conn.prepare_cached(&sql)?;
    let found = statement
        .query_map(params_from_iter(values), |row| {
            Ok((
                row.get::<_, String>(0)?,
                counts_of(row, 1)?,
                row.get::<_, Option<i64>>(8)?,
            ))
        })?
        .collect::<sql::Result<Vec<_>>>()?;
    let first_window_day = today - (filter.window.days() - 1);
    let first_spark_day = today - (SPARKLINE_DAYS - 1);
    let mut windows: HashMap<String, DayCounts> = HashMap::new();
    let mut sparks: HashMap<String, Vec<SparkDay>> = HashMap::new();
    for (agent_id, day, counts) in
        rows::days_from(conn, org, first_window_day.min(first_spark_day))?
    {
        if (first_window_day..=today).contains(&day) {
            windows.entry(agent_id.clone()).or_default().add(&counts);
        }
        if (first_spark_day..=today).contains(&day) {
            sparks.entry(agent_id).or_default().push(SparkDay {
                day,
                successes: count(counts.counts.successes),
                errors: count(counts.errors),
                denied: count(counts.denied),
            });
        }
    }
    let mut agents: Vec<AgentOverview> = found
        .into_iter()
        .map(|(agent_id, counts, last_activity)| {
            let window = WindowCounts::of(&windows.remove(&agent_id).unwrap_or_default());
            let recent = sparkline(sparks.remove(&agent_id).unwrap_or_default(), today);
            AgentOverview {
                agent_id,
                reputation: reputation(&counts),
                last_activity,
                window,
                recent,
            }
        })
        .collect();
    let (sort, descending) = (filter.sort, filter.descending);
    agents.sort_by(|a, b| {
        order(
            (a.key(sort), &a.agent_id),
            (b.key(sort), &b.agent_id),
            descending,
        )
    });
    if let Some((key, agent_id)) = &after {
        agents.retain(|a| {
            order((a.key(sort), &a.agent_id), (*key, agent_id), descending) == Ordering::Greater
        });
    }
    let limit = filter.limit as usize;
    let more = agents.len() > limit;
    agents.truncate(limit);
    let next_cursor = more
        .then(|| {
            agents.last().map(|a| {
                encode_cursor(&format!(
                    "g:{}:{}:{:x}:{}",
                    sort.as_str(),
                    direction_of(descending),
                    a.key(sort).to_bits(),
                    a.agent_id
                ))
            })
        })
        .flatten();
    Ok(Page {
        items: agents,
        next_cursor,
    })
}

fn direction_of(descending: bool) -> &'static str {
    if descending { "desc" } else { "asc" }
}

/// The last [`SPARKLINE_DAYS`] days up to `today`, oldest first, with the
/// days `found` lacks as zeros.
fn sparkline(found: Vec<SparkDay>, today: i64) -> Vec<SparkDay> {
    let found: HashMap<i64, SparkDay> = found.into_iter().map(|d| (d.day, d)).collect();
    (today - (SPARKLINE_DAYS - 1)..=today)
        .map(|day| {
            found.get(&day).copied().unwrap_or(SparkDay {
                day,
                successes: 0,
                errors: 0,
                denied: 0,
            })
        })
        .collect()
}

/// One UTC day of an agent's history.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryDay {
    /// Days since the unix epoch.
    pub day: i64,
    pub records: u64,
    pub successes: u64,
    pub errors: u64,
    pub denied: u64,
    pub approved: u64,
    pub flagged: u64,
    pub rejected: u64,
    /// The agent's reputation as the day ended.
    pub reputation: Reputation,
}

/// The last `days` UTC days (up to `today`) of an agent of `org`, oldest
/// first: what happened each day, and its reputation at each day's end —
/// its counts now less what every later day changed.
pub fn agent_history(
    conn: &Connection,
    org: Org,
    agent_id: &str,
    days: i64,
    today: i64,
) -> Result<Vec<HistoryDay>, QueryError> {
    let now_counts = super::agent_counts(conn, org, agent_id)?;
    let first = today - (days - 1);
    let found: HashMap<i64, DayCounts> = rows::agent_days_from(conn, org, agent_id, first)?
        .into_iter()
        .collect();
    // What changed after each day, summed from the newest stored day back.
    let mut later = CountsChange::default();
    for (day, counts) in &found {
        if *day > today {
            later.add(counts.counts);
        }
    }
    let mut history = Vec::new();
    for day in (first..=today).rev() {
        let counts = found.get(&day).copied().unwrap_or_default();
        let at_end = less(&now_counts, &later);
        history.push(HistoryDay {
            day,
            records: count(counts.records),
            successes: count(counts.counts.successes),
            errors: count(counts.errors),
            denied: count(counts.denied),
            approved: count(counts.counts.approved),
            flagged: count(counts.counts.flagged),
            rejected: count(counts.counts.rejected),
            reputation: reputation(&at_end),
        });
        later.add(counts.counts);
    }
    history.reverse();
    Ok(history)
}

/// `counts` without the changes `later`.
fn less(counts: &ReputationCounts, later: &CountsChange) -> ReputationCounts {
    let minus = |now: u64, change: i64| count(i64::try_from(now).unwrap_or(i64::MAX) - change);
    ReputationCounts {
        successes: minus(counts.successes, later.successes),
        failures: minus(counts.failures, later.failures),
        pending: minus(counts.pending, later.pending),
        denied_requests: minus(counts.denied_requests, later.denied_requests),
        approved: minus(counts.approved, later.approved),
        flagged: minus(counts.flagged, later.flagged),
        rejected: minus(counts.rejected, later.rejected),
    }
}

/// One bucket of the overview.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    /// Unix milliseconds.
    pub start: i64,
    pub counts: HourCounts,
}

/// A budget near its end.
#[derive(Debug, Clone, PartialEq)]
pub struct BusyBudget {
    pub jth: String,
    /// Bare.
    pub agent_id: String,
    pub provenance_ref: String,
    pub limit: Limit,
    pub used: f64,
    pub max: f64,
    pub percent: f64,
}

/// The organisation over a window.
#[derive(Debug, Clone, PartialEq)]
pub struct Overview {
    pub window: Window,
    /// Unix milliseconds: the first bucket's start, the last one's end.
    pub from: i64,
    pub to: i64,
    /// Hours (`24h`) or days.
    pub hourly: bool,
    pub series: Vec<Bucket>,
    pub totals: HourCounts,
    pub budgets: Vec<BusyBudget>,
}

/// The overview of `org` over `window` ending with the bucket of `now_ms`.
pub fn overview(
    conn: &Connection,
    org: Org,
    window: Window,
    now_ms: i64,
) -> Result<Overview, QueryError> {
    let (bucket_ms, buckets) = match window {
        Window::Day => (HOUR_MS, 24),
        other => (DAY_MS, other.days()),
    };
    let to = (now_ms.div_euclid(bucket_ms) + 1) * bucket_ms;
    let from = to - buckets * bucket_ms;
    let mut series: Vec<Bucket> = (0..buckets)
        .map(|i| Bucket {
            start: from + i * bucket_ms,
            counts: HourCounts::default(),
        })
        .collect();
    let mut totals = HourCounts::default();
    for (hour, counts) in rows::hours(conn, org, from / HOUR_MS, to / HOUR_MS)? {
        let index = usize::try_from((hour * HOUR_MS - from) / bucket_ms).unwrap_or(0);
        if let Some(bucket) = series.get_mut(index) {
            bucket.counts.add(&counts);
        }
        totals.add(&counts);
    }
    let budgets = rows::busiest_budgets(conn, org, from / 1000, BUSIEST_BUDGETS)?
        .into_iter()
        .map(busy_budget)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Overview {
        window,
        from,
        to,
        hourly: window == Window::Day,
        series,
        totals,
        budgets,
    })
}

fn busy_budget(row: rows::BudgetRow) -> Result<BusyBudget, QueryError> {
    let stored = |cause: &str| {
        QueryError::Store(crate::store::StoreError::Internal(format!(
            "a budgeted token's {cause} is not as stored"
        )))
    };
    let claims: Claims = serde_json::from_str(&row.claims).map_err(|_| stored("claims"))?;
    let constraints = claims.constraints();
    let (limit, used, max) = match row.limit.as_str() {
        "max_spend_usd" => (
            Limit::MaxSpendUsd,
            Usd::from_micros(u64::try_from(row.spent_micros).unwrap_or(0))
                .map_err(|_| stored("spend"))?
                .as_f64(),
            constraints.max_spend_usd.map_or(0.0, Usd::as_f64),
        ),
        "max_actions" => (
            Limit::MaxActions,
            row.actions as f64,
            constraints.max_actions.unwrap_or(0) as f64,
        ),
        _ => return Err(stored("budget")),
    };
    Ok(BusyBudget {
        jth: row.jth,
        agent_id: row.agent_id,
        provenance_ref: row.provenance_ref,
        limit,
        used,
        max,
        percent: row.percent,
    })
}

/// The inbox of `org`: approvals pending, completed records unrated.
pub fn inbox(conn: &Connection, org: Org) -> Result<(u64, u64), QueryError> {
    let (approvals, unrated) = rows::inbox(conn, org)?;
    Ok((count(approvals), count(unrated)))
}

/// Which tokens are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenState {
    Active,
    Revoked,
    Expired,
}

impl TokenState {
    pub fn parse(text: &str) -> Option<TokenState> {
        match text {
            "active" => Some(TokenState::Active),
            "revoked" => Some(TokenState::Revoked),
            "expired" => Some(TokenState::Expired),
            _ => None,
        }
    }
}

/// Filters of the token list.
#[derive(Debug, Clone, Default)]
pub struct TokenFilter {
    /// Bare.
    pub agent_id: Option<String>,
    pub human_ref: Option<String>,
    pub provenance_ref: Option<String>,
    pub status: Option<TokenState>,
    pub limit: u32,
    pub cursor: Option<String>,
}

/// A token as the list shows it: with its workflow's human and how the
/// organisation knows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedToken {
    pub token: TokenRow,
    pub human_ref: String,
    pub human_label: Option<String>,
    pub assurance_level: String,
}

/// Why a token list ran out of time.
const TOKENS_TOO_BROAD: &str = "listing these tokens takes longer than the query time budget. \
     agent_id, provenance_ref and human_ref are served by indexes; add one";

/// A page of the tokens of `org`: active ones (at `now_s`) first, then the
/// others, each part newest issued first.
pub fn tokens(
    conn: &Connection,
    org: Org,
    filter: &TokenFilter,
    now_s: i64,
) -> Result<Page<ListedToken>, QueryError> {
    token_page(conn, org, filter, now_s).map_err(super::narrow(TOKENS_TOO_BROAD))
}

fn token_page(
    conn: &Connection,
    org: Org,
    filter: &TokenFilter,
    now_s: i64,
) -> Result<Page<ListedToken>, QueryError> {
    // Part 0 is the active tokens, part 1 the others.
    let after = filter
        .cursor
        .as_deref()
        .map(|cursor| {
            let text = decode_cursor(cursor, 'k')?;
            let mut parts = text.splitn(3, ':');
            let (Some(part), Some(issued_at), Some(jth)) =
                (parts.next(), parts.next(), parts.next())
            else {
                return Err(QueryError::InvalidCursor);
            };
            let part: u8 = part.parse().map_err(|_| QueryError::InvalidCursor)?;
            let issued_at: i64 = issued_at.parse().map_err(|_| QueryError::InvalidCursor)?;
            Ok((part.min(1), issued_at, jth.to_owned()))
        })
        .transpose()?;
    let parts: &[u8] = match filter.status {
        Some(TokenState::Active) => &[0],
        Some(_) => &[1],
        None => &[0, 1],
    };
    let wanted = filter.limit as usize + 1;
    let mut items = Vec::new();
    for &part in parts {
        if after.as_ref().is_some_and(|(at, _, _)| *at > part) {
            continue;
        }
        let within = after
            .as_ref()
            .filter(|(at, _, _)| *at == part)
            .map(|(_, issued_at, jth)| (*issued_at, jth.as_str()));
        let found = tokens_of_part(conn, org, filter, part, within, now_s, wanted - items.len())?;
        items.extend(found.into_iter().map(|t| (part, t)));
        if items.len() >= wanted {
            break;
        }
    }
    let more = items.len() > filter.limit as usize;
    items.truncate(filter.limit as usize);
    let next_cursor = more
        .then(|| {
            items.last().map(|(part, t)| {
                let jth = tokens::jth_of(&t.token.jti);
                encode_cursor(&format!("k:{part}:{}:{jth}", t.token.issued_at))
            })
        })
        .flatten();
    Ok(Page {
        items: items.into_iter().map(|(_, t)| t).collect(),
        next_cursor,
    })
}

/// Up to `limit` tokens of one part (0: active, 1: not), newest issued
/// first, after `after` (issue time, jti hash: a cursor is shown to
/// readers, who are never shown a jti).
fn tokens_of_part(
    conn: &Connection,
    org: Org,
    filter: &TokenFilter,
    part: u8,
    after: Option<(i64, &str)>,
    now_s: i64,
    limit: usize,
) -> Result<Vec<ListedToken>, QueryError> {
    let mut sql = String::from(
        "SELECT t.jti, t.parent, t.agent_id, t.depth, t.provenance_ref, t.issued_at, t.expires_at,
            t.revoked_at, t.revoke_reason, w.human_ref, w.assurance_level, h.label
         FROM tokens t JOIN workflows w ON w.provenance_ref = t.provenance_ref
         LEFT JOIN human_labels h ON h.org = w.org AND h.human_ref = w.human_ref
         WHERE t.org = ?",
    );
    let mut values = vec![Value::Integer(org.number())];
    // Core's order of statuses: revoked, else expired from `exp` on.
    let (state, at_now) = match (part, filter.status) {
        (0, _) => (" AND t.revoked_at IS NULL AND t.expires_at > ?", true),
        (_, Some(TokenState::Expired)) => (" AND t.revoked_at IS NULL AND t.expires_at <= ?", true),
        (_, Some(TokenState::Revoked)) => (" AND t.revoked_at IS NOT NULL", false),
        _ => (" AND (t.revoked_at IS NOT NULL OR t.expires_at <= ?)", true),
    };
    sql.push_str(state);
    if at_now {
        values.push(Value::Integer(now_s));
    }
    let mut equal = |clause: &str, value: &Option<String>| {
        if let Some(value) = value {
            sql.push_str(clause);
            values.push(Value::Text(value.clone()));
        }
    };
    equal(" AND t.agent_id = ?", &filter.agent_id);
    equal(" AND t.provenance_ref = ?", &filter.provenance_ref);
    equal(" AND w.human_ref = ?", &filter.human_ref);
    if let Some((issued_at, jth)) = after {
        sql.push_str(" AND (t.issued_at < ? OR (t.issued_at = ? AND t.jth < ?))");
        values.extend([
            Value::Integer(issued_at),
            Value::Integer(issued_at),
            Value::Text(jth.to_owned()),
        ]);
    }
    sql.push_str(" ORDER BY t.issued_at DESC, t.jth DESC LIMIT ?");
    values.push(Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement
        .query_map(params_from_iter(values), |row| {
            Ok(ListedToken {
                token: token_row(row)?,
                human_ref: row.get(9)?,
                assurance_level: row.get(10)?,
                human_label: row.get(11)?,
            })
        })?
        .collect::<sql::Result<Vec<_>>>()?;
    Ok(rows)
}
