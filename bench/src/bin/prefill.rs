//! Fills a stopped server's data folder with `count` records of existing
//! tokens, in their organisation after its last record, written by the
//! statements the ledger writes them with — each with its leaf in the
//! record log (and its rating's), and a checkpoint signed per
//! transaction — for the growth runs of `cargo xtask bench`, with the
//! counters the ledger keeps with them: the agents', the workflows' and
//! the dashboard's, each change counted by `dashboard::Moved::of` as the
//! ledger's `Counters::record_moved` counts it.
//!
//! `prefill <data-dir> <jti>[,<jti>…] <count> [<days>]`
//!
//! The records go to the tokens in turn (every token of one organisation).
//! Most succeed; about 2 % end in an error and 0.5 % are denied, a little
//! more for each later token, so agents' rates differ; a quarter of the
//! completed ones are rated (mostly approved) at their creation, the rest
//! await a rating. Without `<days>` the records are one a millisecond,
//! ending now; with it they spread over that many days, ending now.

use std::collections::{BTreeMap, HashMap};

use mandate_core::tlog::{LogEvent, RecordRated};
use mandate_core::{
    AarId, Claims, CountsChange, DenyReason, Jti, KeyId, OrgId, Outcome, Rating, RecordOrigin,
    RecordState, Ulid, Usd,
};
use mandate_host::recordlog::{self, events};
use mandate_host::secrets::{KEY_FILE, Kek};
use mandate_host::store::dashboard::{self, DAY_MS, DayCounts, HourCounts, Moved};
use mandate_host::store::log as log_rows;
use mandate_host::store::orgs::{self, Org};
use mandate_host::store::records::{self, Credential, NewRating, NewRecord, SummaryKey};
use mandate_host::store::{DB_FILE, open_writer, tokens};

const ACTIONS: [&str; 3] = ["read", "write", "summarise"];
const ROWS_PER_TRANSACTION: u64 = 200_000;

/// What one transaction changes in the counters, gathered as the ledger's
/// `Counters` gathers a group's.
#[derive(Default)]
struct Counts {
    /// Per token: the agent's counts and latest activity.
    agents: HashMap<usize, (CountsChange, Option<i64>)>,
    days: BTreeMap<(usize, i64), DayCounts>,
    hours: BTreeMap<i64, HourCounts>,
    inbox: (i64, i64),
    /// Per token: its workflow's records added and latest activity.
    workflows: HashMap<usize, (i64, i64)>,
    summaries: BTreeMap<(usize, &'static str, &'static str), i64>,
}

impl Counts {
    fn moved(&mut self, token: usize, at: i64, before: Option<&RecordState>, after: &RecordState) {
        // Every prefilled record is a record/action report.
        let moved = Moved::of(RecordOrigin::RecordAction, before, after);
        let agent = self.agents.entry(token).or_default();
        agent.0.add(moved.day.counts);
        if moved.activity {
            agent.1 = Some(agent.1.map_or(at, |last| last.max(at)));
        }
        self.days
            .entry((token, dashboard::day_of(at)))
            .or_default()
            .add(&moved.day);
        self.hours
            .entry(dashboard::hour_of(at))
            .or_default()
            .add(&moved.hour);
        self.inbox.0 += moved.approvals_pending;
        self.inbox.1 += moved.records_unrated;
    }
}

/// The state record `n` of token number `token` is made in, and its
/// rating, if any.
fn fate(n: u64, token: usize) -> (RecordState, Option<Rating>) {
    let h = n.wrapping_mul(2_654_435_761) % 1000;
    let t = token as u64;
    if h < 5 + t {
        let reason = DenyReason::ResourceNotPermitted;
        return (RecordState::Denied { reason }, None);
    }
    let result = if h < 25 + 3 * t {
        Outcome::Error
    } else {
        Outcome::Success
    };
    let rating = match h % 10 {
        0 => Rating::Rejected,
        1 | 2 => Rating::Flagged,
        _ => Rating::Approved,
    };
    let rating = (n / 7).is_multiple_of(4).then_some(rating);
    (RecordState::Completed { result }, rating)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (data_dir, jtis, count, days) = match args.as_slice() {
        [data_dir, jtis, count] => (data_dir, jtis, count, None),
        [data_dir, jtis, count, days] => (data_dir, jtis, count, Some(days.parse::<i64>()?)),
        _ => anyhow::bail!("usage: prefill <data-dir> <jti>[,<jti>…] <count> [<days>]"),
    };
    let count: u64 = count.parse()?;
    let data_dir = std::path::Path::new(data_dir);
    let conn = open_writer(&data_dir.join(DB_FILE))?;
    let kek = Kek::read_file(&data_dir.join(KEY_FILE))?
        .ok_or_else(|| anyhow::anyhow!("the data folder has no key file"))?;
    let origin = recordlog::stored_origin(&conn)?.ok_or_else(|| {
        anyhow::anyhow!("the data folder's log has no origin: start the server once")
    })?;
    let signers = recordlog::keys::load(&conn, &kek, &origin)?;
    let mut tokens_: Vec<Claims> = Vec::new();
    let mut org: Option<Org> = None;
    for jti in jtis.split(',') {
        let jti = Jti::parse(jti)?;
        let claims = tokens::claims_text(&conn, &jti.hash())?
            .ok_or_else(|| anyhow::anyhow!("no token has the jti {jti}"))?;
        tokens_.push(serde_json::from_str(&claims)?);
        let of = tokens::standing(&conn, &jti.hash())?
            .ok_or_else(|| anyhow::anyhow!("no token has the jti {jti}"))?
            .org;
        if org.is_some_and(|org| org != of) {
            anyhow::bail!("the tokens are of different organisations");
        }
        org = Some(of);
    }
    let org = org.ok_or_else(|| anyhow::anyhow!("no token given"))?;
    let org_id = OrgId::parse(
        &orgs::by_number(&conn, org)?
            .ok_or_else(|| anyhow::anyhow!("the token's organisation is missing"))?
            .id,
    )?;
    // The ratings are the organisation's first key's (the admin key's).
    let rater: String = conn.query_row(
        "SELECT id FROM api_keys WHERE org = ?1 ORDER BY created_at LIMIT 1",
        [org],
        |row| row.get(0),
    )?;
    let rater_id = KeyId::parse(&rater)?;
    let (mut seq, last) = records::tail(&conn, org)?.unwrap_or((org.seqs().start - 1, 0));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as i64;
    // Ending now; when that would reach back before what is stored, the
    // records share the milliseconds since the last one. Never in the
    // future: the server stamps new records no earlier than the newest
    // stored, so a future stamp would pin every later record to it.
    let reach = days.map_or(count as i64, |days| days * DAY_MS);
    let start = (now - reach).max(last);
    let span = (now - start).max(0);
    let stamp = |n: u64| start + ((n as i128 * span as i128) / count as i128) as i64;
    let size = log_rows::committed_size(&conn)?;
    let mut frontier = recordlog::integrate(&conn, size, &mut None)?;
    let mut written = 0;
    while written < count {
        let tx = conn.unchecked_transaction()?;
        let end = (written + ROWS_PER_TRANSACTION).min(count);
        let mut counts = Counts::default();
        for n in written..end {
            let which = (n % tokens_.len() as u64) as usize;
            let token = &tokens_[which];
            let own = n / tokens_.len() as u64;
            let action = ACTIONS[(own % 3) as usize];
            let at = stamp(n);
            let (state, rating) = fate(n, which);
            let mut random = [0u8; 10];
            random[2..].copy_from_slice(&n.to_be_bytes());
            let aar_id = AarId::new(Ulid::new(at as u64, random)?);
            seq += 1;
            let resource = match state {
                RecordState::Denied { .. } => format!("hr:item{}", n % 1000),
                _ => format!("crm:item{}", n % 1000),
            };
            let record = NewRecord {
                aar_id: &aar_id,
                token,
                action,
                resource: &resource,
                state,
                result_hash: None,
                spend: Usd::ZERO,
                created_at: at,
                delegated_jti: None,
                credential: Credential::Jti,
                traceparent: None,
                origin: RecordOrigin::RecordAction,
                trust: None,
                args_hash: None,
                args: None,
                relay_jkt: None,
            };
            let created = events::record_created(events::Created {
                aar_id: &aar_id,
                jth: token.jth(),
                agent_id: token.agent_id(),
                provenance_ref: &token.svc_prov,
                action: record.action,
                resource: record.resource,
                state,
                result_hash: None,
                spend_micros: 0,
                credential: Credential::Jti,
                delegated_jth: None,
                args_hash: None,
            })?;
            let index = recordlog::append(&tx, &mut frontier, &org_id, at, created)?;
            tx.insert_rows(
                records::INSERT_INTO,
                &records::INSERTED,
                &[records::row(seq, &record, Some(index))?],
            )?;
            counts.moved(which, at, None, &state);
            let workflow = counts.workflows.entry(which).or_insert((0, at));
            workflow.0 += 1;
            workflow.1 = workflow.1.max(at);
            *counts
                .summaries
                .entry((which, action, state.result_key()))
                .or_default() += 1;
            if let (Some(rating), Some(result)) = (rating, state.result()) {
                let rated = RecordState::Rated { result, rating };
                let event = LogEvent::RecordRated(RecordRated {
                    aar_id: aar_id.clone(),
                    rating,
                    note: None,
                    by: Some(rater_id.clone()),
                });
                let log = recordlog::append(&tx, &mut frontier, &org_id, at, event)?;
                let rating = NewRating {
                    rating,
                    note: None,
                    by: &rater,
                    at,
                    log: Some(log),
                };
                records::rate(&tx, aar_id.as_str(), &rating)?;
                counts.moved(which, at, Some(&state), &rated);
            }
        }
        let agents: Vec<_> = counts
            .agents
            .iter()
            .map(|(which, (change, active_at))| {
                let agent_id = tokens_[*which].agent_id().as_str();
                records::agent_counted(org, agent_id, change, *active_at)
            })
            .collect();
        let days: Vec<_> = counts
            .days
            .iter()
            .map(|((which, day), day_counts)| {
                let agent_id = tokens_[*which].agent_id().as_str();
                dashboard::agent_day(org, agent_id, *day, day_counts)
            })
            .collect();
        let hours: Vec<_> = counts
            .hours
            .iter()
            .map(|(hour, hour_counts)| dashboard::org_hour(org, *hour, hour_counts))
            .collect();
        let inboxes = [dashboard::inbox_moved(org, counts.inbox.0, counts.inbox.1)];
        let workflows: Vec<_> = counts
            .workflows
            .iter()
            .map(|(which, (added, at))| {
                records::workflow_counted(tokens_[*which].svc_prov.as_str(), *added, *at)
            })
            .collect();
        let summaries: Vec<_> = counts
            .summaries
            .iter()
            .map(|((which, action, result_key), added)| {
                let token = &tokens_[*which];
                let key = SummaryKey {
                    provenance_ref: token.svc_prov.as_str(),
                    agent_id: token.agent_id().as_str(),
                    action,
                    result_key,
                };
                records::summary_counted(&key, *added)
            })
            .collect();
        tx.apply_tables(&[
            records::count_for_agents(&agents),
            dashboard::add_agent_days(&days),
            dashboard::add_org_hours(&hours),
            dashboard::add_inboxes(&inboxes),
            records::count_for_workflows(&workflows),
            records::count_in_summaries(&summaries),
        ])?;
        let checkpoint = recordlog::sign_checkpoint(
            &signers,
            &origin,
            frontier.size(),
            frontier.root(),
            stamp(end - 1),
        )?;
        log_rows::insert_checkpoint(&tx, &checkpoint)?;
        written = end;
        tx.commit()?;
    }
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
    Ok(())
}
