//! Fills a stopped server's data folder with `count` completed records of
//! an existing token, as record/action would have written them, for the
//! growth runs of `cargo xtask bench`. `prefill <data-dir> <jti> <count>`

use mandate_core::{AarId, Ulid};
use mandate_host::store::{DB_FILE, open_writer};
use rusqlite::params;

const ACTIONS: [&str; 3] = ["read", "write", "summarise"];
const ROWS_PER_TRANSACTION: u64 = 200_000;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [data_dir, jti, count] = args.as_slice() else {
        anyhow::bail!("usage: prefill <data-dir> <jti> <count>");
    };
    let count: u64 = count.parse()?;
    let conn = open_writer(&std::path::Path::new(data_dir).join(DB_FILE))?;
    let (provenance, agent, human, assurance, depth, claims): (
        String,
        String,
        String,
        String,
        i64,
        String,
    ) = conn.query_row(
        "SELECT t.provenance_ref, t.agent_id, w.human_ref, w.assurance_level, t.depth, t.claims
         FROM tokens t JOIN workflows w ON w.provenance_ref = t.provenance_ref WHERE t.jti = ?1",
        [jti],
        |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
                row.get(5)?,
            ))
        },
    )?;
    let trust: f64 = serde_json::from_str::<serde_json::Value>(&claims)?["svc_trust_score"]
        .as_f64()
        .unwrap_or(0.4);
    let last: i64 = conn.query_row(
        "SELECT coalesce((SELECT created_at FROM records ORDER BY seq DESC LIMIT 1), 0)",
        [],
        |row| row.get(0),
    )?;
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
    let mut written = 0;
    while written < count {
        let tx = conn.unchecked_transaction()?;
        {
            let mut insert = tx.prepare(
                "INSERT INTO records (aar_id, provenance_ref, jti, agent_id, action, resource, status, result,
                    spend_micros, trust_score, delegation_depth, human_ref, assurance_level, created_at, completed_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'completed', 'success', 0, ?7, ?8, ?9, ?10, ?11, ?11)",
            )?;
            let end = (written + ROWS_PER_TRANSACTION).min(count);
            let mut per_action = [0i64; ACTIONS.len()];
            for n in written..end {
                per_action[(n % 3) as usize] += 1;
                let at = stamp(n);
                let mut random = [0u8; 10];
                random[2..].copy_from_slice(&n.to_be_bytes());
                let aar_id = AarId::new(Ulid::new(at as u64, random)?);
                insert.execute(params![
                    aar_id.as_str(),
                    provenance,
                    jti,
                    agent,
                    ACTIONS[(n % 3) as usize],
                    format!("crm:item{}", n % 1000),
                    trust,
                    depth,
                    human,
                    assurance,
                    at,
                ])?;
            }
            tx.execute(
                "UPDATE agents SET successes = successes + ?1 WHERE agent_id = ?2",
                params![(end - written) as i64, agent],
            )?;
            tx.execute(
                "UPDATE workflows SET total_records = total_records + ?1, last_activity = max(last_activity, ?2)
                 WHERE provenance_ref = ?3",
                params![(end - written) as i64, stamp(end - 1), provenance],
            )?;
            for (action, records) in ACTIONS.iter().zip(per_action) {
                tx.execute(
                    "INSERT INTO workflow_counts (provenance_ref, agent_id, action, result_key, count)
                     VALUES (?1, ?2, ?3, 'success', ?4)
                     ON CONFLICT DO UPDATE SET count = count + excluded.count",
                    params![provenance, agent, action, records],
                )?;
            }
            written = end;
        }
        tx.commit()?;
    }
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
    Ok(())
}
