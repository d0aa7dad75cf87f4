//! Fills a stopped server's data folder with `count` completed records of
//! an existing token, in its organisation after its last record, written
//! by the statements the ledger writes them with — each with its leaf in
//! the record log, and a checkpoint signed per transaction — for the
//! growth runs of `cargo xtask bench` (with the counters the ledger keeps
//! with them: the agent's, the workflow's and the dashboard's).
//! `prefill <data-dir> <jti> <count>`

use std::collections::BTreeMap;

use mandate_core::{AarId, Claims, CountsChange, Jti, OrgId, Outcome, RecordState, Ulid, Usd};
use mandate_host::recordlog::{self, events};
use mandate_host::secrets::{KEY_FILE, Kek};
use mandate_host::store::dashboard::{self, DayCounts, HourCounts, Moved};
use mandate_host::store::log as log_rows;
use mandate_host::store::orgs;
use mandate_host::store::records::{self, Credential, NewRecord, SummaryKey};
use mandate_host::store::{DB_FILE, open_writer, tokens};

const ACTIONS: [&str; 3] = ["read", "write", "summarise"];
const ROWS_PER_TRANSACTION: u64 = 200_000;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [data_dir, jti, count] = args.as_slice() else {
        anyhow::bail!("usage: prefill <data-dir> <jti> <count>");
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
    let jti = Jti::parse(jti)?;
    let claims = tokens::claims_text(&conn, &jti.hash())?
        .ok_or_else(|| anyhow::anyhow!("no token has the jti {jti}"))?;
    let token: Claims = serde_json::from_str(&claims)?;
    let org = tokens::standing(&conn, &jti.hash())?
        .ok_or_else(|| anyhow::anyhow!("no token has the jti {jti}"))?
        .org;
    let org_id = OrgId::parse(
        &orgs::by_number(&conn, org)?
            .ok_or_else(|| anyhow::anyhow!("the token's organisation is missing"))?
            .id,
    )?;
    let (mut seq, last) = records::tail(&conn, org)?.unwrap_or((org.seqs().start - 1, 0));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as i64;
    // One record a millisecond, ending now; when that would reach back before
    // what is stored, the records share the milliseconds since the last one.
    // Never in the future: the server stamps new records no earlier than the
    // newest stored, so a future stamp would pin every later record to it.
    let start = (now - count as i64).max(last);
    let span = (now - start).max(0);
    let stamp = |n: u64| start + (n as i64 * span) / count as i64;
    let state = RecordState::Completed {
        result: Outcome::Success,
    };
    let agent_id = token.agent_id().as_str().to_owned();
    let mut frontier = recordlog::frontier(&conn)?;
    let mut written = 0;
    while written < count {
        let tx = conn.unchecked_transaction()?;
        let end = (written + ROWS_PER_TRANSACTION).min(count);
        let mut per_action = [0i64; ACTIONS.len()];
        let mut days = BTreeMap::<i64, DayCounts>::new();
        let mut hours = BTreeMap::<i64, HourCounts>::new();
        let moved = Moved::of(None, &state);
        for n in written..end {
            per_action[(n % 3) as usize] += 1;
            let at = stamp(n);
            days.entry(dashboard::day_of(at))
                .or_default()
                .add(&moved.day);
            hours
                .entry(dashboard::hour_of(at))
                .or_default()
                .add(&moved.hour);
            let mut random = [0u8; 10];
            random[2..].copy_from_slice(&n.to_be_bytes());
            let aar_id = AarId::new(Ulid::new(at as u64, random)?);
            seq += 1;
            let record = NewRecord {
                aar_id: &aar_id,
                token: &token,
                action: ACTIONS[(n % 3) as usize],
                resource: &format!("crm:item{}", n % 1000),
                state,
                result_hash: None,
                spend: Usd::ZERO,
                created_at: at,
                delegated_jti: None,
                credential: Credential::Jti,
                traceparent: None,
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
            })?;
            let index = recordlog::append(&tx, &mut frontier, &org_id, at, created)?;
            records::insert(&tx, seq, &record, Some(index))?;
        }
        let added = (end - written) as i64;
        let change = CountsChange {
            successes: added,
            ..CountsChange::default()
        };
        records::count_for_agent(&tx, org, &agent_id, &change, Some(stamp(end - 1)))?;
        for (day, counts) in &days {
            dashboard::add_agent_day(&tx, org, &agent_id, *day, counts)?;
        }
        for (hour, counts) in &hours {
            dashboard::add_org_hour(&tx, org, *hour, counts)?;
        }
        dashboard::add_inbox(&tx, org, 0, added * moved.records_unrated)?;
        records::count_for_workflow(&tx, token.svc_prov.as_str(), added, stamp(end - 1))?;
        for (action, added) in ACTIONS.iter().zip(per_action) {
            let key = SummaryKey {
                provenance_ref: token.svc_prov.as_str(),
                agent_id: &agent_id,
                action,
                result_key: state.result_key(),
            };
            records::count_in_summary(&tx, &key, added)?;
        }
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
