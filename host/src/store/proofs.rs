//! The `dpop_proofs` table (PostgreSQL): the DPoP proofs any host has
//! accepted, so a proof replayed to another host is refused too.

use super::sql::{self, Connection, params};

/// Records a proof's first use, good until `until` (unix seconds):
/// `false` when a host stored it before and it has not lapsed at `now`.
pub fn first_use(conn: &Connection, key: &[u8; 32], until: i64, now: i64) -> sql::Result<bool> {
    let stored = conn
        .prepare_cached(
            "INSERT INTO dpop_proofs (key, until) VALUES (?1, ?2)
             ON CONFLICT (key) DO UPDATE SET until = excluded.until WHERE dpop_proofs.until < ?3",
        )?
        .execute(params![key.as_slice(), until, now])?;
    Ok(stored == 1)
}

/// Forgets the proofs that lapsed before `now`.
pub fn forget_lapsed(conn: &Connection, now: i64) -> sql::Result<()> {
    conn.prepare_cached("DELETE FROM dpop_proofs WHERE until < ?1")?
        .execute([now])?;
    Ok(())
}
