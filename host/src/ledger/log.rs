//! What a group of writes does to the record log and the token status
//! lists, in the group's transaction; and signing checkpoints.
//!
//! A write appends its leaf (and the tile entries it completes) as it
//! happens. The log's right edge is kept between groups and checked at a
//! group's first need against the size of the stored log (one index
//! lookup): another process may have appended (a PostgreSQL host, an
//! operator command), and then it is read again from the tiles. The next
//! status index and the lists a group changes are read at that first need
//! and written once before it commits. On PostgreSQL the state row is
//! locked first in every group (before any organisation's row, see
//! [`Ledger::enter`]): appends to the one log take turns across hosts, in
//! one order of locks. A rolled-back group forgets it all.
//!
//! Checkpoints are not signed by every group: a signature and a row per
//! commit cost more write throughput than the log's target allows
//! (measured, docs/decisions.md). [`Ledger::checkpoint`] signs one of the
//! committed tree when asked — by a read that needs one (a proof, the
//! newest checkpoint), so a write's proof is there as soon as it is
//! acknowledged — and never signs twice for one size.

use std::collections::BTreeMap;
use std::sync::Arc;

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
    pub(super) frontier: Frontier,
    /// The leaves and tile entries the group appended, stored just before
    /// it commits.
    pub(super) rows: recordlog::LogRows,
    next_status_idx: u64,
    /// The `seq` of the next event the group writes to the outbox.
    next_event_seq: i64,
    /// Whether the group wrote an event.
    events_written: bool,
    /// Whether the group allocated a status index.
    status_allocated: bool,
    /// Lists the group changed, with the revision they will be stored at.
    lists: BTreeMap<u64, (StatusList, u64)>,
    /// The time of the group's latest status change (unix ms).
    last_at: i64,
}

impl Ledger {
    /// The group's log state, read (and on PostgreSQL locked) at its first
    /// need, with the right edge kept from the last group when the stored
    /// log has not grown since.
    pub(super) fn group_log(&mut self) -> Result<&mut GroupLog, LedgerError> {
        if self.group.is_none() {
            let state = rows::lock_state(&self.conn)?;
            // Read with the lock (schema 15), or looked up after it.
            let size = match state.next_log_idx {
                Some(size) => size,
                None => rows::size(&self.conn)?,
            };
            let frontier = match self.frontier.take() {
                Some(kept) if kept.size() == size => kept,
                _ => recordlog::frontier_at(&self.conn, size)?,
            };
            self.group = Some(GroupLog {
                frontier,
                rows: recordlog::LogRows::default(),
                next_status_idx: state.next_status_idx,
                next_event_seq: state.next_event_seq,
                events_written: false,
                status_allocated: false,
                lists: BTreeMap::new(),
                last_at: 0,
            });
        }
        self.group
            .as_mut()
            .ok_or_else(|| internal("the group's log state vanished"))
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
        let idx = group.rows.append(&mut group.frontier, &org, at_ms, event)?;
        self.buffered += u64::try_from(group.rows.len() - kept).unwrap_or(u64::MAX);
        Ok(Some(idx))
    }

    /// The next token status index.
    pub(super) fn allocate_status_idx(&mut self) -> Result<u64, LedgerError> {
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
        let seq = group.next_event_seq;
        group.next_event_seq = seq + 1;
        group.events_written = true;
        Ok(seq)
    }

    /// Marks the token at status index `idx` revoked (INVALID) in its list
    /// at `at_ms`.
    pub(super) fn set_revoked(&mut self, idx: u64, at_ms: i64) -> Result<(), LedgerError> {
        let (list, offset) = location(idx);
        if !self.group_log()?.lists.contains_key(&list) {
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
    /// [`Ledger::store_tail`]). The right edge stays in the group until it commits
    /// (kept for the next group) or rolls back (forgotten).
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
        if group.events_written {
            rows::save_next_event_seq(&self.conn, group.next_event_seq)?;
        }
        Ok(())
    }

    /// Signs a checkpoint of the log as committed, at `now`, unless the
    /// newest one is of its size already; the newest checkpoint either way.
    /// Run it as a write of its own: the tree it signs is the one the
    /// group's lock sees.
    pub fn checkpoint(&mut self, now: Now) -> Result<StoredCheckpoint, LedgerError> {
        let size = self.group_log()?.frontier.size();
        let latest = rows::latest_checkpoint(&self.conn)?;
        if let Some(latest) = latest
            && latest.size >= size
        {
            return Ok(latest);
        }
        let frontier = &self.group_log()?.frontier;
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
        // The state row is every group's first lock (PostgreSQL).
        self.group_log()?;
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
        self.group_log()?;
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
        self.group_log()?;
        if let Some(cosignature) = cosignature {
            rows::insert_cosignature(&self.conn, cosignature)?;
        }
        rows::save_witness_size(&self.conn, name, key_id, size, now.ms())?;
        Ok(())
    }
}
