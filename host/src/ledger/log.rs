//! What a group of writes does to the record log and the token status
//! lists, in the group's transaction; and signing checkpoints.
//!
//! A write appends its leaf as it happens, kept in memory and stored with
//! the group's other rows just before it commits. On SQLite (one writer)
//! the group numbers leaves, events and status indexes from the stored
//! state as it goes, and keeps the log's right edge: the tile entries a
//! leaf completes are stored with it. On PostgreSQL a group numbers its
//! leaves and events provisionally (from [`rows::PENDING`]); its tail's
//! first statement, the sequencer ([`rows::SEQUENCE`]), hands out the real
//! numbers and holds the state row to the commit, so numbers follow commit
//! order with no gap; the tail's later statements read them from the row
//! on the server ([`rows::BASES`]), so the tail and its `COMMIT` are one
//! flight and no group holds the row across a round trip. Rows the group
//! wrote inline with a provisional leaf index (a token issued or revoked,
//! a record completed, rated or decided, a vouch) are renumbered by a
//! statement of the same flight. The tile entries above the
//! leaves are integrated after commit ([`recordlog::integrate`]): before a
//! checkpoint is signed, and by each host's integrator. Status indexes
//! come in blocks from the `status_idx` sequence. A rolled-back group
//! forgets it all.
//!
//! Checkpoints are not signed by every group: a signature and a row per
//! commit cost more write throughput than the log's target allows
//! (measured, docs/decisions.md). [`Ledger::checkpoint`] signs one of the
//! committed tree when asked — by a read that needs one (a proof, the
//! newest checkpoint), so a write's proof is there as soon as it is
//! acknowledged — and never signs twice for one size.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, LazyLock};

use mandate_core::OrgId;
use mandate_core::limits::STATUS_LIST_SIZE;
use mandate_core::status_list::{Bits, StatusList, StatusType, location};
use mandate_core::tlog::{Frontier, LogEvent};

use super::{Ledger, LedgerError, internal};
use crate::clock::Now;
use crate::recordlog::{self, LogKeys};
use crate::store::log::{self as rows, StoredCheckpoint, StoredCosignature};
use crate::store::orgs::{self as org_rows, Org};
use crate::store::status_lists::{self, StoredList};

/// How the ledger logs: whether it appends, under which name, with which
/// keys.
#[derive(Debug, Clone)]
pub struct LogSetup {
    pub enabled: bool,
    pub origin: String,
    pub keys: Arc<LogKeys>,
}

/// The log and status state of the current group.
#[derive(Debug)]
pub(super) struct GroupLog {
    /// The log's right edge (SQLite), grown by the group's leaves; `None`
    /// on PostgreSQL, where the tree is integrated after commit.
    pub(super) frontier: Option<Frontier>,
    /// The leaves and tile entries the group appended, stored just before
    /// it commits.
    pub(super) rows: recordlog::LogRows,
    /// The index of the group's first leaf: the stored size (SQLite), or
    /// [`rows::PENDING`] until the tail's sequencer (PostgreSQL).
    first_leaf: u64,
    /// Leaves the group appended.
    pub(super) leaves: u64,
    /// The `seq` of the group's first event, as `first_leaf`.
    first_event: i64,
    /// Events the group wrote to the outbox.
    pub(super) events: i64,
    /// The next status index (SQLite).
    next_status_idx: u64,
    /// Whether the group allocated a status index.
    status_allocated: bool,
    /// Lists the group changed, with the revision they will be stored at.
    lists: BTreeMap<u64, (StatusList, u64)>,
    /// The time of the group's latest status change (unix ms).
    last_at: i64,
    /// Rows written inline with a provisional leaf index (PostgreSQL),
    /// by table, renumbered in the tail.
    pub(super) renumber: BTreeMap<Logged, BTreeSet<String>>,
}

/// A table whose rows point at their leaves (PostgreSQL's tail renumbers
/// what a group wrote inline with a provisional index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Logged {
    /// By `jti`: `log_issued`, `log_revoked`.
    Tokens,
    /// By `aar_id`: `log_created`, `log_completed`, `log_rated`.
    Records,
    /// By `id`: `log_decided`.
    Approvals,
    /// By `id`: `log_created`, `log_withdrawn`.
    Vouches,
}

impl Logged {
    /// The statement moving the table's provisional leaf indexes of the
    /// rows named (`$1`) to the group's first leaf (`$2`).
    pub(super) fn renumbering(self) -> &'static str {
        static TEXTS: LazyLock<[String; 4]> = LazyLock::new(|| {
            let text = |table: &str, key: &str, columns: &[&str]| {
                let sets: Vec<String> = columns
                    .iter()
                    .map(|column| {
                        format!(
                            "{column} = CASE WHEN {column} >= {p} THEN {column} - {p} + d.base \
                             ELSE {column} END",
                            p = rows::PENDING
                        )
                    })
                    .collect();
                format!(
                    "UPDATE {table} SET {} FROM unnest($1::text[], $2::bigint[]) AS d(key, base) \
                     WHERE {table}.{key} = d.key",
                    sets.join(", ")
                )
            };
            [
                text("tokens", "jti", &["log_issued", "log_revoked"]),
                text(
                    "records",
                    "aar_id",
                    &["log_created", "log_completed", "log_rated"],
                ),
                text("approvals", "id", &["log_decided"]),
                text("vouches", "id", &["log_created", "log_withdrawn"]),
            ]
        });
        let i = match self {
            Logged::Tokens => 0,
            Logged::Records => 1,
            Logged::Approvals => 2,
            Logged::Vouches => 3,
        };
        &TEXTS[i]
    }
}

impl Ledger {
    /// The group's log state, made at its first need: on SQLite read
    /// from the state row, with the right edge kept from the last group
    /// when the stored log has not grown since; on PostgreSQL without a
    /// statement (numbers are provisional until the tail).
    pub(super) fn group_log(&mut self) -> Result<&mut GroupLog, LedgerError> {
        if self.group.is_none() {
            let (frontier, first_leaf, first_event, next_status_idx) = if self.shared {
                let pending = i64::try_from(rows::PENDING).map_err(internal)?;
                (None, rows::PENDING, pending, 0)
            } else {
                let state = rows::state(&self.conn)?;
                // Read with the state (schema 15), or looked up after it.
                let size = match state.next_log_idx {
                    Some(size) => size,
                    None => rows::size(&self.conn)?,
                };
                let frontier = match self.frontier.take() {
                    Some(kept) if kept.size() == size => kept,
                    _ => recordlog::frontier_at(&self.conn, size)?,
                };
                (
                    Some(frontier),
                    size,
                    state.next_event_seq,
                    state.next_status_idx,
                )
            };
            self.group = Some(GroupLog {
                frontier,
                rows: recordlog::LogRows::default(),
                first_leaf,
                leaves: 0,
                first_event,
                events: 0,
                next_status_idx,
                status_allocated: false,
                lists: BTreeMap::new(),
                last_at: 0,
                renumber: BTreeMap::new(),
            });
        }
        self.group
            .as_mut()
            .ok_or_else(|| internal("the group's log state vanished"))
    }

    /// Notes that the row `key` of `table` was written with a leaf index
    /// of this group: provisional on PostgreSQL until the tail renumbers
    /// it.
    pub(super) fn logged_in(&mut self, table: Logged, key: &str) -> Result<(), LedgerError> {
        if !self.shared || !self.log.enabled {
            return Ok(());
        }
        self.group_log()?
            .renumber
            .entry(table)
            .or_default()
            .insert(key.to_owned());
        Ok(())
    }

    /// The id of organisation `org` (ids never change, so they are kept).
    fn org_id(&mut self, org: Org) -> Result<OrgId, LedgerError> {
        if let Some(id) = self.org_ids.get(&org) {
            return Ok(id.clone());
        }
        let row = org_rows::by_number(&self.conn, org)?
            .ok_or_else(|| internal("an organisation of a stored object is missing"))?;
        let id = OrgId::parse(&row.id).map_err(internal)?;
        self.org_ids.insert(org, id.clone());
        Ok(id)
    }

    /// Appends an event of `org` at `at_ms` to the log; its leaf index, or
    /// `None` when the log is off.
    pub(super) fn append(
        &mut self,
        org: Org,
        at_ms: i64,
        event: LogEvent,
    ) -> Result<Option<u64>, LedgerError> {
        if !self.log.enabled {
            return Ok(None);
        }
        let org = self.org_id(org)?;
        self.group_log()?;
        let group = self
            .group
            .as_mut()
            .ok_or_else(|| internal("the group's log state vanished"))?;
        let kept = group.rows.len();
        let idx = group.first_leaf + group.leaves;
        group
            .rows
            .append(group.frontier.as_mut(), idx, &org, at_ms, event)?;
        group.leaves += 1;
        self.buffered += u64::try_from(group.rows.len() - kept).unwrap_or(u64::MAX);
        Ok(Some(idx))
    }

    /// The next token status index: on PostgreSQL from this host's block
    /// of the `status_idx` sequence, taken when the last one ran out.
    pub(super) fn allocate_status_idx(&mut self) -> Result<u64, LedgerError> {
        if self.shared {
            if self.status_block.is_empty() {
                let first = rows::status_block(&self.conn)?;
                self.status_block = first..first.saturating_add(rows::STATUS_BLOCK);
            }
            return self
                .status_block
                .next()
                .ok_or_else(|| internal("the status lists are full"));
        }
        let group = self.group_log()?;
        let idx = group.next_status_idx;
        group.next_status_idx = idx
            .checked_add(1)
            .ok_or_else(|| internal("the status lists are full"))?;
        group.status_allocated = true;
        Ok(idx)
    }

    /// The `seq` of the next event of the outbox.
    pub(super) fn allocate_event_seq(&mut self) -> Result<i64, LedgerError> {
        let group = self.group_log()?;
        let seq = group.first_event + group.events;
        group.events += 1;
        Ok(seq)
    }

    /// Marks the token at status index `idx` revoked (INVALID) in its list
    /// at `at_ms`.
    pub(super) fn set_revoked(&mut self, idx: u64, at_ms: i64) -> Result<(), LedgerError> {
        let (list, offset) = location(idx);
        if !self.group_log()?.lists.contains_key(&list) {
            status_lists::lock(&self.conn, list)?;
            let entry = match status_lists::get(&self.conn, list)? {
                Some(StoredList { bytes, revision }) => (
                    StatusList::from_bytes(Bits::One, bytes).map_err(internal)?,
                    revision + 1,
                ),
                None => (StatusList::new(STATUS_LIST_SIZE).map_err(internal)?, 1),
            };
            self.group_log()?.lists.insert(list, entry);
        }
        let group = self.group_log()?;
        let (status, _) = group
            .lists
            .get_mut(&list)
            .ok_or_else(|| internal("a status list vanished"))?;
        status.set(offset, StatusType::INVALID).map_err(internal)?;
        group.last_at = group.last_at.max(at_ms);
        Ok(())
    }

    /// Writes what the group changed: every status list it touched, and
    /// the next status index and event `seq` when it took one (its leaves
    /// and tile entries are stored with the rest of the group's rows,
    /// [`Ledger::store_tail`]). The right edge stays in the group until it
    /// commits (kept for the next group) or rolls back (forgotten).
    pub(super) fn flush_log(&mut self) -> Result<(), LedgerError> {
        let Some(group) = self.group.as_mut() else {
            return Ok(());
        };
        for (list, (status, revision)) in &group.lists {
            status_lists::put(
                &self.conn,
                *list,
                &StoredList {
                    bytes: status.as_bytes().to_vec(),
                    revision: *revision,
                },
                group.last_at,
            )?;
        }
        if group.status_allocated {
            rows::save_next_status_idx(&self.conn, group.next_status_idx)?;
        }
        // PostgreSQL's sequencer moves it in the tail.
        if !self.shared && group.events > 0 {
            rows::save_next_event_seq(&self.conn, group.first_event + group.events)?;
        }
        Ok(())
    }

    /// Signs a checkpoint of the log as committed, at `now`, unless the
    /// newest one is of its size already; the newest checkpoint either way.
    /// Run it as a write of its own. On PostgreSQL the committed log is
    /// integrated first, in this transaction: every leaf committed when it
    /// starts is in the tree it signs, so a write's proof exists once the
    /// write is acknowledged.
    pub fn checkpoint(&mut self, now: Now) -> Result<StoredCheckpoint, LedgerError> {
        let frontier = if self.shared {
            let to = rows::committed_size(&self.conn)?;
            // Waiting for the integration row while the group holds a key
            // could close a cycle (see `enter`): then, if it is busy, the
            // write runs again first in the next group.
            let wait = self.held.is_empty();
            match recordlog::integrate_unless_busy(&self.conn, to, &mut self.integrated, wait)? {
                Some(frontier) => {
                    self.integrating = true;
                    frontier
                }
                None => {
                    self.deferred = true;
                    return Err(LedgerError::Store(crate::store::StoreError::Unavailable(
                        "the log is being integrated: the write runs again in the next group",
                    )));
                }
            }
        } else {
            self.group_log()?
                .frontier
                .clone()
                .ok_or_else(|| internal("the group's right edge vanished"))?
        };
        let latest = rows::latest_checkpoint(&self.conn)?;
        if let Some(latest) = latest
            && latest.size >= frontier.size()
        {
            return Ok(latest);
        }
        let (size, root) = (frontier.size(), frontier.root());
        let checkpoint = recordlog::sign_checkpoint(
            &self.log.keys.current(),
            &self.log.origin,
            size,
            root,
            now.ms(),
        )?;
        rows::insert_checkpoint(&self.conn, &checkpoint)?;
        Ok(checkpoint)
    }

    /// Leases the checkpoint submitter to the host `owner` until
    /// `until_ms`, unless another host holds it; answers whether `owner`
    /// holds it.
    pub fn claim_submitter(
        &mut self,
        owner: &str,
        now: Now,
        until_ms: i64,
    ) -> Result<bool, LedgerError> {
        Ok(rows::claim_submitter(
            &self.conn,
            owner,
            now.ms(),
            until_ms,
        )?)
    }

    /// Ends the submitter's lease of `owner` (when it stops), or of any
    /// host (`None`: a process that alone submits, at its start).
    pub fn release_submitter(&mut self, owner: Option<&str>) -> Result<usize, LedgerError> {
        Ok(rows::release_submitter(&self.conn, owner)?)
    }

    /// Stores what a witness answered: the size it is at and, when it
    /// cosigned, its cosignature.
    pub fn record_witness(
        &mut self,
        name: &str,
        key_id: u32,
        size: u64,
        cosignature: Option<&StoredCosignature>,
        now: Now,
    ) -> Result<(), LedgerError> {
        if let Some(cosignature) = cosignature {
            rows::insert_cosignature(&self.conn, cosignature)?;
        }
        rows::save_witness_size(&self.conn, name, key_id, size, now.ms())?;
        Ok(())
    }
}
