//! The `orgs` table, and how an organisation is named inside the store: by
//! its number ([`Org`]), which is also the high bits of every `seq` of its
//! records. Outside the store an organisation is its id, `org_<ulid>`.

use crate::store::locks::Taken;
use crate::store::sql::types::{FromSql, ToSql, ValueRef};
use crate::store::sql::{self, Connection, OptionalExtension, Query, Row, params};
use mandate_core::OrgId;

/// Bits of a record's `seq` below the organisation's number: each
/// organisation holds 2^40 (about 10^12) records, and 2^23 organisations
/// fit in a positive `seq`.
pub const SEQ_BITS: u32 = 40;

/// The most organisations a deployment can hold: the last one's `seq`
/// range still ends within a positive `i64`.
pub const MAX_ORGS: i64 = (1 << (63 - SEQ_BITS)) - 1;

/// An organisation as the store names it: its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Org(i64);

impl Org {
    /// The organisation everything stored before organisations joined, and
    /// the admin key's own.
    pub const DEFAULT: Org = Org(0);

    /// The organisation stored as `number`.
    pub fn from_number(number: i64) -> Org {
        Org(number)
    }

    /// The number the tables store.
    pub fn number(self) -> i64 {
        self.0
    }

    /// The `seq` range of its records: `first..end`.
    pub fn seqs(self) -> std::ops::Range<i64> {
        (self.0 << SEQ_BITS)..((self.0 + 1) << SEQ_BITS)
    }

    /// The organisation a record's `seq` belongs to.
    pub fn of_seq(seq: i64) -> Org {
        Org(seq >> SEQ_BITS)
    }
}

impl ToSql for Org {
    fn to_sql(&self) -> sql::Result<ValueRef<'_>> {
        Ok(ValueRef::Integer(self.0))
    }
}

impl FromSql for Org {
    fn from_sql(value: ValueRef<'_>) -> sql::Result<Org> {
        i64::from_sql(value).map(Org)
    }
}

/// An organisation's limits; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quotas {
    /// Records (of every kind: allowed, denied, pending) per UTC day.
    pub records_per_day: Option<u64>,
    /// Tokens neither revoked nor expired.
    pub tokens_outstanding: Option<u64>,
}

/// An organisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrgRow {
    pub org: Org,
    pub id: String,
    pub name: String,
    /// Unix milliseconds.
    pub created_at: i64,
    pub quotas: Quotas,
}

const ORG_COLUMNS: &str = "num, id, name, created_at, records_per_day, tokens_outstanding";

/// An organisation's row by its number.
static ROW_BY_NUMBER: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("SELECT {ORG_COLUMNS} FROM orgs WHERE num = ?1"));

fn quota(value: Option<i64>) -> Option<u64> {
    value.map(|n| u64::try_from(n).unwrap_or(0))
}

fn stored_quota(value: Option<u64>) -> Option<i64> {
    value.map(|n| i64::try_from(n).unwrap_or(i64::MAX))
}

fn org_row(row: &Row<'_>) -> sql::Result<OrgRow> {
    Ok(OrgRow {
        org: row.get(0)?,
        id: row.get(1)?,
        name: row.get(2)?,
        created_at: row.get(3)?,
        quotas: Quotas {
            records_per_day: quota(row.get(4)?),
            tokens_outstanding: quota(row.get(5)?),
        },
    })
}

/// What [`enter`] found.
#[derive(Debug)]
pub enum Entered {
    /// The key is held, and the organisation's row as read under it.
    Row(OrgRow),
    /// Another transaction holds the key (and the caller would not wait).
    Busy,
    /// No organisation has this number.
    Missing,
}

/// Takes an organisation's key ([`crate::store::locks::org`], exclusive
/// or shared) until the transaction ends and reads its row (with its
/// quotas) after, by the next statement of the same flight (one round
/// trip): a statement sees what was committed before it began, so the row
/// read by the statement taking the key could miss a change committed by
/// the key's last holder after that statement began. When the key is not
/// free, waits for it (`wait`) and reads the row again, or answers
/// [`Entered::Busy`] at once.
///
/// `then`, a query of the caller's, rides in the flight after the row;
/// the answer's `bool` says whether it was read under the key (the key
/// was free). When it was not, what `then` read is stale: the caller
/// reads it again.
pub fn enter(
    conn: &Connection,
    org: Org,
    exclusive: bool,
    wait: bool,
    then: Option<Query<'_>>,
) -> sql::Result<(Entered, bool)> {
    let org_param = [org];
    let mut found = None;
    let mut read_row = |row: &Row<'_>| {
        found = Some(org_row(row)?);
        Ok(())
    };
    let mut flight = vec![Query {
        sql: &ROW_BY_NUMBER,
        params: &org_param,
        read: &mut read_row,
    }];
    if let Some(then) = then {
        // Its borrows shortened to the flight's.
        flight.push(Query {
            sql: then.sql,
            params: then.params,
            read: then.read,
        });
    }
    let key = crate::store::locks::org(org);
    let taken = crate::store::locks::take_then(conn, key, exclusive, wait, flight)?;
    Ok(match taken {
        Taken::Free => (found.map_or(Entered::Missing, Entered::Row), true),
        Taken::Busy => (Entered::Busy, false),
        Taken::AfterWait => {
            let entered = by_number(conn, org)?.map_or(Entered::Missing, Entered::Row);
            (entered, false)
        }
    })
}

/// What [`commit_entering`] read for the next transaction.
#[derive(Debug)]
pub struct EnteredAhead {
    /// Whether the organisation's key was free and is now held, shared.
    pub taken: bool,
    /// The organisation's row, read after the key.
    pub row: Option<OrgRow>,
    /// The token's standing, read after the key (when one was named and
    /// exists).
    pub standing: Option<crate::store::tokens::Standing>,
}

/// Commits `steps` ([`Connection::commit_flight`]) and, in the same
/// flight, begins the next transaction as a write taking `org`'s key
/// shared begins one ([`enter`] without a wait): the key tried, then the
/// organisation's row and the standing of the token `standing_of` (its
/// jti hash), each after the key. Answers what they read when the
/// transaction they began is open: the next group's first write adopts it
/// ([`Connection::adopt_ahead`]) if it enters `org` shared and the key
/// was taken; otherwise the next statement rolls it back first.
pub fn commit_entering(
    conn: &Connection,
    steps: &[sql::Step<'_>],
    org: Org,
    standing_of: Option<&str>,
) -> sql::Result<Option<EnteredAhead>> {
    let key = [crate::store::locks::org(org)];
    let org_param = [org];
    let jth_param = standing_of.map(|jth| [jth]);
    let mut taken = false;
    let mut found = None;
    let mut standing = None;
    let mut read_taken = |row: &Row<'_>| {
        taken = row.get(0)?;
        Ok(())
    };
    let mut read_row = |row: &Row<'_>| {
        found = Some(org_row(row)?);
        Ok(())
    };
    let mut read_standing = |row: &Row<'_>| {
        standing = Some(crate::store::tokens::standing_row(row)?);
        Ok(())
    };
    let mut ahead = vec![
        Query {
            sql: crate::store::locks::TRY_SHARED,
            params: &key,
            read: &mut read_taken,
        },
        Query {
            sql: &ROW_BY_NUMBER,
            params: &org_param,
            read: &mut read_row,
        },
    ];
    if let Some(param) = &jth_param {
        ahead.push(Query {
            sql: crate::store::tokens::STANDING,
            params: param,
            read: &mut read_standing,
        });
    }
    let opened = conn.commit_flight(steps, &mut ahead)?;
    drop(ahead);
    Ok(opened.then_some(EnteredAhead {
        taken,
        row: found,
        standing,
    }))
}

/// Locks every organisation, in the order of their numbers, until the
/// transaction ends (each one's key, exclusive), in one statement (a
/// function scan takes the keys in the array's order).
pub fn lock_all(conn: &Connection) -> sql::Result<()> {
    let numbers: Vec<i64> = conn
        .prepare_cached("SELECT num FROM orgs ORDER BY num")?
        .query_map([], |row| row.get(0))?
        .collect::<sql::Result<_>>()?;
    let keys: Vec<String> = numbers
        .into_iter()
        .map(|number| crate::store::locks::org(Org(number)).to_string())
        .collect();
    conn.prepare_cached(
        "SELECT count(*) FROM (SELECT pg_advisory_xact_lock(k::bigint)
         FROM jsonb_array_elements_text((?1::text)::jsonb) AS k) AS taken",
    )?
    .query_row(params![format!("[{}]", keys.join(","))], |row| {
        row.get::<_, i64>(0)
    })?;
    Ok(())
}

/// Stores the default organisation (number 0), unless it exists.
pub fn add_default(conn: &Connection, id: &OrgId, created_at_ms: i64) -> sql::Result<()> {
    conn.execute(ADD_DEFAULT, params![id.as_str(), created_at_ms])?;
    Ok(())
}

/// The default organisation's name.
pub const DEFAULT_NAME: &str = "default";

/// Adds the default organisation unless it exists: `?1` its id, `?2` its
/// creation time.
pub(crate) const ADD_DEFAULT: &str = "INSERT INTO orgs (num, id, name, created_at)
     VALUES (0, ?1, 'default', ?2) ON CONFLICT DO NOTHING";

/// Why an organisation was not created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotCreated {
    /// Another organisation has the name.
    NameTaken,
    /// The deployment holds [`MAX_ORGS`] already.
    Full,
}

/// Stores a new organisation under the next free number.
pub fn create(
    conn: &Connection,
    id: &OrgId,
    name: &str,
    quotas: Quotas,
    created_at_ms: i64,
) -> sql::Result<Result<OrgRow, NotCreated>> {
    if by_name(conn, name)?.is_some() {
        return Ok(Err(NotCreated::NameTaken));
    }
    let next: i64 = conn.query_row("SELECT coalesce(max(num), -1) + 1 FROM orgs", [], |row| {
        row.get(0)
    })?;
    if next >= MAX_ORGS {
        return Ok(Err(NotCreated::Full));
    }
    conn.prepare_cached(
        "INSERT INTO orgs (num, id, name, created_at, records_per_day, tokens_outstanding)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        next,
        id.as_str(),
        name,
        created_at_ms,
        stored_quota(quotas.records_per_day),
        stored_quota(quotas.tokens_outstanding),
    ])?;
    Ok(Ok(OrgRow {
        org: Org(next),
        id: id.as_str().to_owned(),
        name: name.to_owned(),
        created_at: created_at_ms,
        quotas,
    }))
}

/// The organisation with this id, if any.
pub fn by_id(conn: &Connection, id: &str) -> sql::Result<Option<OrgRow>> {
    conn.prepare_cached(&format!("SELECT {ORG_COLUMNS} FROM orgs WHERE id = ?1"))?
        .query_row([id], org_row)
        .optional()
}

/// The organisation with this name, if any.
pub fn by_name(conn: &Connection, name: &str) -> sql::Result<Option<OrgRow>> {
    conn.prepare_cached(&format!("SELECT {ORG_COLUMNS} FROM orgs WHERE name = ?1"))?
        .query_row([name], org_row)
        .optional()
}

/// The organisation with this number, if any.
pub fn by_number(conn: &Connection, org: Org) -> sql::Result<Option<OrgRow>> {
    conn.prepare_cached(&ROW_BY_NUMBER)?
        .query_row([org], org_row)
        .optional()
}

/// Up to `limit` organisations numbered above `after`, in order.
pub fn list(conn: &Connection, after: Option<Org>, limit: i64) -> sql::Result<Vec<OrgRow>> {
    conn.prepare_cached(&format!(
        "SELECT {ORG_COLUMNS} FROM orgs WHERE num > ?1 ORDER BY num LIMIT ?2"
    ))?
    .query_map(params![after.map_or(-1, Org::number), limit], org_row)?
    .collect()
}

/// Replaces an organisation's quotas; `false` if there is no such
/// organisation.
pub fn set_quotas(conn: &Connection, org: Org, quotas: Quotas) -> sql::Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE orgs SET records_per_day = ?1, tokens_outstanding = ?2 WHERE num = ?3",
        )?
        .execute(params![
            stored_quota(quotas.records_per_day),
            stored_quota(quotas.tokens_outstanding),
            org
        ])?;
    Ok(changed == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_organisation_holds_one_range_of_seq() {
        assert_eq!(Org::DEFAULT.seqs(), 0..(1 << 40));
        let org = Org::from_number(3);
        assert_eq!(Org::of_seq(org.seqs().start), org);
        assert_eq!(Org::of_seq(org.seqs().end - 1), org);
        assert_eq!(Org::of_seq(org.seqs().end), Org::from_number(4));
        let last = Org::from_number(MAX_ORGS - 1);
        // The last organisation's range ends without overflowing.
        assert!(0 < last.seqs().start && last.seqs().start < last.seqs().end);
        assert_eq!(Org::of_seq(last.seqs().end - 1), last);
    }

    #[test]
    fn names_are_unique_and_numbers_follow_each_other() {
        let conn = crate::store::open_in_memory().unwrap();
        let default = by_name(&conn, "default").unwrap().unwrap();
        assert_eq!(default.org, Org::DEFAULT);
        let id = |n: u8| OrgId::new(mandate_core::Ulid::new(1, [n; 10]).unwrap());
        let acme = create(&conn, &id(1), "acme", Quotas::default(), 5)
            .unwrap()
            .unwrap();
        assert_eq!(acme.org, Org::from_number(1));
        assert_eq!(
            create(&conn, &id(2), "acme", Quotas::default(), 6).unwrap(),
            Err(NotCreated::NameTaken)
        );
        let quotas = Quotas {
            records_per_day: Some(10),
            tokens_outstanding: None,
        };
        assert!(set_quotas(&conn, acme.org, quotas).unwrap());
        assert_eq!(by_id(&conn, &acme.id).unwrap().unwrap().quotas, quotas);
        assert!(!set_quotas(&conn, Org::from_number(9), quotas).unwrap());
        let listed = list(&conn, None, 10).unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(list(&conn, Some(Org::DEFAULT), 10).unwrap()[0].name, "acme");
    }
}
