//! `mandate audit verify`: the record log recomputed from the database and
//! checked against every checkpoint ever signed.
//!
//! 1. The leaves, in order: each leaf's hash from its bytes (against the
//!    stored hash), the tree from the hashes (against the stored tile
//!    entries of levels 1 and up), and at each checkpoint's size, the
//!    checkpoint's signature by a log key and its root against the tree's.
//!    Every checkpoint's root being the root of one recomputed tree at its
//!    size is what "each is consistent with the next" means.
//! 2. The records, tokens and vouches, each: every event its row says it
//!    had (its creation, a completion after `authorize`, a rating; an
//!    issue, a revocation; a vouch, its withdrawal) made again from the row
//!    and compared with the leaf the row names, byte for byte.
//! 3. Every leaf is claimed by exactly the row it describes: a leaf no row
//!    claims names a record or token that was deleted.
//!
//! An edited record differs from its leaf; a deleted one leaves a leaf
//! unclaimed; one inserted without the log has no leaf; leaves reordered or
//! changed no longer make the signed roots. Each difference is a
//! [`Finding`], sorted by leaf index: the first is the earliest change.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use mandate_core::tlog::{
    Frontier, Hash, LogEntry, LogEvent, NoteVerifier, leaf_hash, open_checkpoint,
};
use mandate_core::{Claims, OrgId};

use super::events;
use crate::store::approvals::{self, Approval, ApprovalStatus};
use crate::store::log::{self as rows, StoredCheckpoint};
use crate::store::orgs::Org;
use crate::store::records::{self, Record};
use crate::store::sql::{self, Connection, params};

/// Rows read at a time.
const PAGE: u64 = 10_000;

/// One difference between the log and the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The leaf it concerns, if one.
    pub index: Option<u64>,
    pub what: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(index) => write!(f, "leaf {index}: {}", self.what),
            None => f.write_str(&self.what),
        }
    }
}

/// What the check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Leaves in the log.
    pub leaves: u64,
    /// Checkpoints checked.
    pub checkpoints: u64,
    /// The newest checkpoint's tree size: leaves after it are covered by
    /// no signature yet.
    pub signed: u64,
    pub records: u64,
    pub tokens: u64,
    /// Every difference, earliest leaf first.
    pub findings: Vec<Finding>,
}

impl Report {
    /// One line for the operator.
    pub fn summary(&self) -> String {
        let verdict = if self.findings.is_empty() {
            "the log matches the database".to_owned()
        } else {
            format!("{} differences", self.findings.len())
        };
        let unsigned = match self.leaves.saturating_sub(self.signed) {
            0 => String::new(),
            n => format!(" ({n} leaves after the newest checkpoint, signed by none yet)"),
        };
        format!(
            "{} leaves, {} checkpoints, {} records, {} tokens checked: {verdict}{unsigned}",
            self.leaves, self.checkpoints, self.records, self.tokens
        )
    }
}

/// The check's own failure (the database could not be read).
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error(transparent)]
    Sql(#[from] sql::Error),
}

#[derive(Debug, Default)]
struct Audit {
    findings: Vec<Finding>,
}

impl Audit {
    fn at(&mut self, index: u64, what: impl Into<String>) {
        self.findings.push(Finding {
            index: Some(index),
            what: what.into(),
        });
    }

    fn general(&mut self, what: impl Into<String>) {
        self.findings.push(Finding {
            index: None,
            what: what.into(),
        });
    }
}

/// Checks the log of the database on `conn`, named `origin`.
pub fn verify(conn: &Connection, origin: &str) -> Result<Report, AuditError> {
    let mut audit = Audit::default();
    let verifiers = verifiers(conn, &mut audit)?;
    let (leaves, checkpoints, claimed_by) = tree(conn, origin, &verifiers, &mut audit)?;
    let mut claimed = vec![false; usize::try_from(leaves).unwrap_or(0)];
    let orgs = org_ids(conn)?;
    let records = check_records(conn, &orgs, leaves, &mut claimed, &mut audit)?;
    let tokens = check_tokens(conn, &orgs, leaves, &mut claimed, &mut audit)?;
    check_vouches(conn, &orgs, leaves, &mut claimed, &mut audit)?;
    for (index, claimed) in claimed.iter().enumerate() {
        if !claimed {
            let index = u64::try_from(index).unwrap_or(u64::MAX);
            let names = claimed_by
                .get(&index)
                .cloned()
                .unwrap_or_else(|| "an unreadable event".to_owned());
            audit.at(
                index,
                format!("{names} is in the log but not in the database (deleted?)"),
            );
        }
    }
    let mut findings = audit.findings;
    findings.sort_by_key(|finding| finding.index.unwrap_or(u64::MAX));
    let signed = rows::latest_checkpoint(conn)?.map_or(0, |c| c.size);
    Ok(Report {
        leaves,
        checkpoints,
        signed,
        records,
        tokens,
        findings,
    })
}

/// Every log key ever used, retired ones too (they signed older
/// checkpoints).
fn verifiers(conn: &Connection, audit: &mut Audit) -> Result<Vec<NoteVerifier>, AuditError> {
    let vkeys: Vec<String> = conn
        .prepare_cached("SELECT key_id FROM log_keys ORDER BY created_at")?
        .query_map([], |row| row.get(0))?
        .collect::<sql::Result<_>>()?;
    let mut verifiers = Vec::new();
    for vkey in vkeys {
        match NoteVerifier::parse(&vkey) {
            Ok(verifier) => verifiers.push(verifier),
            Err(error) => audit.general(format!("the stored log key {vkey} is not valid: {error}")),
        }
    }
    Ok(verifiers)
}

/// Checks one checkpoint against the tree at its size.
fn check_checkpoint(
    checkpoint: &StoredCheckpoint,
    root: &Hash,
    origin: &str,
    verifiers: &[NoteVerifier],
    audit: &mut Audit,
) {
    let size = checkpoint.size;
    let at = size.saturating_sub(1);
    match open_checkpoint(&checkpoint.note, Some(origin), verifiers) {
        Err(error) => audit.at(
            at,
            format!("the checkpoint of size {size} does not verify: {error}"),
        ),
        Ok(signed) => {
            if signed.size != size || signed.root != checkpoint.root {
                audit.at(
                    at,
                    format!("the checkpoint of size {size} is stored beside another tree head"),
                );
            }
            if &signed.root != root {
                audit.at(
                    at,
                    format!(
                        "the checkpoint of size {size} signed another root: the log was changed \
                         at or before this leaf"
                    ),
                );
            }
        }
    }
}

/// The checkpoints, read a page at a time in the order of their sizes, and
/// checked as the recomputed tree reaches each size.
struct Checkpoints<'a> {
    conn: &'a Connection,
    page: Vec<StoredCheckpoint>,
    next: usize,
    /// Where the next page starts.
    from: u64,
    checked: u64,
}

impl Checkpoints<'_> {
    /// The next checkpoint not yet checked, if any.
    fn peek(&mut self) -> Result<Option<&StoredCheckpoint>, AuditError> {
        if self.next == self.page.len() {
            self.page = rows::checkpoints_from(self.conn, self.from, PAGE)?;
            self.next = 0;
            if let Some(last) = self.page.last() {
                self.from = last.size.saturating_add(1);
            }
        }
        Ok(self.page.get(self.next))
    }

    /// Checks every checkpoint of the tree's size.
    fn check_at(
        &mut self,
        frontier: &Frontier,
        origin: &str,
        verifiers: &[NoteVerifier],
        audit: &mut Audit,
    ) -> Result<(), AuditError> {
        while let Some(checkpoint) = self.peek()? {
            if checkpoint.size != frontier.size() {
                return Ok(());
            }
            check_checkpoint(checkpoint, &frontier.root(), origin, verifiers, audit);
            self.checked += 1;
            self.next += 1;
        }
        Ok(())
    }
}

/// Recomputes the tree from the leaves and checks every checkpoint; the
/// number of leaves, of checkpoints, and what each leaf says it is about.
fn tree(
    conn: &Connection,
    origin: &str,
    verifiers: &[NoteVerifier],
    audit: &mut Audit,
) -> Result<(u64, u64, HashMap<u64, String>), AuditError> {
    let nodes: BTreeMap<(u8, u64), Hash> = rows::nodes(conn)?
        .into_iter()
        .map(|(level, index, hash)| ((level, index), hash))
        .collect();
    // Tile entries are stored up to the integrated size; those above are
    // integrated later (PostgreSQL), from the leaves checked here.
    let integrated = rows::integrated(conn)?;
    let mut frontier = Frontier::new();
    let mut names = HashMap::new();
    let mut checkpoints = Checkpoints {
        conn,
        page: Vec::new(),
        next: 0,
        from: 0,
        checked: 0,
    };
    checkpoints.check_at(&frontier, origin, verifiers, audit)?;
    let mut start = 0u64;
    'leaves: loop {
        let page = rows::leaves_from(conn, start, PAGE)?;
        let Some((last, _, _)) = page.last() else {
            break;
        };
        start = last.saturating_add(1);
        for (index, stored_hash, leaf) in page {
            if index != frontier.size() {
                audit.at(
                    frontier.size(),
                    format!(
                        "leaves {} to {} are missing from the log",
                        frontier.size(),
                        index.saturating_sub(1)
                    ),
                );
                break 'leaves;
            }
            let hash = leaf_hash(&leaf);
            if hash != stored_hash {
                audit.at(index, "its stored hash is not the hash of its bytes");
            }
            match LogEntry::from_leaf(&leaf) {
                Ok(entry) => {
                    names.insert(index, describe(&entry));
                }
                Err(error) => audit.at(index, format!("it is not an event of the log: {error}")),
            }
            match frontier.push(hash) {
                Ok(completed) => {
                    for entry in completed {
                        if index < integrated
                            && nodes.get(&(entry.level, entry.index)) != Some(&entry.hash)
                        {
                            audit.at(
                                index,
                                format!(
                                    "the stored tile entry {}/{} is not the one its leaves make",
                                    entry.level, entry.index
                                ),
                            );
                        }
                    }
                }
                Err(error) => {
                    audit.at(index, format!("the tree cannot grow: {error}"));
                    break 'leaves;
                }
            }
            checkpoints.check_at(&frontier, origin, verifiers, audit)?;
        }
    }
    if let Some(latest) = rows::latest_checkpoint(conn)?
        && latest.size > frontier.size()
    {
        audit.at(
            frontier.size(),
            format!(
                "a checkpoint of size {} was signed, but the log holds {} leaves: leaves were \
                 deleted",
                latest.size,
                frontier.size()
            ),
        );
    }
    Ok((frontier.size(), checkpoints.checked, names))
}

/// What an event is about, for a finding.
fn describe(entry: &LogEntry) -> String {
    match &entry.event {
        LogEvent::TokenIssued(e) => format!("the issue of token {}", e.jth),
        LogEvent::TokenRevoked(e) => format!("the revocation of token {}", e.jth),
        LogEvent::RecordCreated(e) => format!("record {}", e.aar_id),
        LogEvent::RecordCompleted(e) => format!("the completion of record {}", e.aar_id),
        LogEvent::RecordRated(e) => format!("the rating of record {}", e.aar_id),
        LogEvent::VouchCreated(e) => format!("vouch {}", e.vouch_id),
        LogEvent::VouchWithdrawn(e) => format!("the withdrawal of vouch {}", e.vouch_id),
        _ => format!("an event of kind {}", entry.event.kind()),
    }
}

/// Organisation ids by number.
fn org_ids(conn: &Connection) -> Result<HashMap<Org, OrgId>, AuditError> {
    let rows: Vec<(Org, String)> = conn
        .prepare_cached("SELECT num, id FROM orgs")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<sql::Result<_>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|(org, id)| OrgId::parse(&id).ok().map(|id| (org, id)))
        .collect())
}

/// Compares an event made from a row with the leaf the row names.
struct Expected<'a> {
    /// What it is, for a finding.
    what: String,
    org: Org,
    at: i64,
    event: Result<LogEvent, crate::store::StoreError>,
    index: Option<u64>,
    leaves: u64,
    orgs: &'a HashMap<Org, OrgId>,
}

fn compare(
    conn: &Connection,
    expected: Expected<'_>,
    claimed: &mut [bool],
    audit: &mut Audit,
) -> Result<(), AuditError> {
    let Some(index) = expected.index else {
        audit.general(format!(
            "{} is in the database but not in the log",
            expected.what
        ));
        return Ok(());
    };
    if index >= expected.leaves {
        audit.at(
            index,
            format!("{} names a leaf the log does not hold", expected.what),
        );
        return Ok(());
    }
    let Some(org) = expected.orgs.get(&expected.org) else {
        audit.at(
            index,
            format!("{} stands in an unknown organisation", expected.what),
        );
        return Ok(());
    };
    let made = expected.event.map_err(|e| e.to_string()).and_then(|event| {
        LogEntry::new(org.clone(), expected.at, event)
            .to_leaf()
            .map_err(|e| e.to_string())
    });
    let leaf = rows::leaf(conn, index)?.unwrap_or_default();
    match made {
        Err(error) => audit.at(index, format!("{}: {error}", expected.what)),
        Ok(made) if made == leaf => {
            if let Some(slot) = usize::try_from(index).ok().and_then(|i| claimed.get_mut(i)) {
                *slot = true;
            }
        }
        Ok(made) => audit.at(
            index,
            format!(
                "{} differs from its leaf: {}",
                expected.what,
                differences(&made, &leaf)
            ),
        ),
    }
    Ok(())
}

/// The members two leaves disagree on, as `member: database ≠ log`.
fn differences(database: &[u8], log: &[u8]) -> String {
    type Members = serde_json::Map<String, serde_json::Value>;
    let parse = |bytes: &[u8]| serde_json::from_slice::<Members>(bytes).unwrap_or_default();
    let (database, log) = (parse(database), parse(log));
    let mut keys: Vec<&String> = database.keys().chain(log.keys()).collect();
    keys.sort();
    keys.dedup();
    let shown = |value: Option<&serde_json::Value>| {
        value.map_or_else(|| "absent".to_owned(), serde_json::Value::to_string)
    };
    keys.into_iter()
        .filter(|key| database.get(*key) != log.get(*key))
        .map(|key| {
            format!(
                "{key} {} in the database, {} in the log",
                shown(database.get(key)),
                shown(log.get(key))
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn check_records(
    conn: &Connection,
    orgs: &HashMap<Org, OrgId>,
    leaves: u64,
    claimed: &mut [bool],
    audit: &mut Audit,
) -> Result<u64, AuditError> {
    let mut count = 0u64;
    let mut after = i64::MIN;
    let approvals = approvals_by_record(conn)?;
    let select = format!(
        "{} WHERE seq > ?1 ORDER BY seq LIMIT ?2",
        records::select_sql()
    );
    loop {
        let page: Vec<Record> = conn
            .prepare_cached(&select)?
            .query_map(params![after, PAGE], records::from_row)?
            .collect::<sql::Result<_>>()?;
        let Some(last) = page.last() else {
            return Ok(count);
        };
        after = last.seq;
        for record in &page {
            count += 1;
            let approval = approvals.get(&record.aar_id);
            check_record(conn, record, approval, orgs, leaves, claimed, audit)?;
        }
    }
}

/// Every approval, by the record that waited for it (records wait for
/// approval far more rarely than they are made).
fn approvals_by_record(conn: &Connection) -> Result<HashMap<String, Approval>, AuditError> {
    let mut found = HashMap::new();
    let mut after = String::new();
    loop {
        let page = approvals::page_by_id(conn, &after, PAGE)?;
        let Some(last) = page.last() else {
            return Ok(found);
        };
        after = last.id.clone();
        for approval in page {
            found.insert(approval.aar_id.clone(), approval);
        }
    }
}

fn check_record(
    conn: &Connection,
    record: &Record,
    approval: Option<&Approval>,
    orgs: &HashMap<Org, OrgId>,
    leaves: u64,
    claimed: &mut [bool],
    audit: &mut Audit,
) -> Result<(), AuditError> {
    let name = &record.aar_id;
    let expect = |what: String, at: i64, event, index| Expected {
        what,
        org: record.org(),
        at,
        event,
        index,
        leaves,
        orgs,
    };
    let created = events::created_of(record, approval.is_some());
    compare(
        conn,
        expect(
            format!("record {name}"),
            record.created_at,
            created,
            record.log.created,
        ),
        claimed,
        audit,
    )?;
    if events::needs_completion(record) {
        compare(
            conn,
            expect(
                format!("the completion of record {name}"),
                record.completed_at.unwrap_or_default(),
                events::record_completed(record),
                record.log.completed,
            ),
            claimed,
            audit,
        )?;
    } else if let Some(index) = record.log.completed {
        audit.at(
            index,
            format!("record {name} names a completion it never had"),
        );
    }
    if let Some(approval) = approval {
        match approval.status {
            ApprovalStatus::Decided(_) => compare(
                conn,
                expect(
                    format!("the approval decision of record {name}"),
                    approval.decided_at.unwrap_or_default(),
                    events::approval_decided(approval),
                    approval.log_decided,
                ),
                claimed,
                audit,
            )?,
            ApprovalStatus::Pending => {
                if let Some(index) = approval.log_decided {
                    audit.at(
                        index,
                        format!("record {name} names an approval decision it never had"),
                    );
                }
            }
        }
    }
    if record.state.rating().is_some() {
        compare(
            conn,
            expect(
                format!("the rating of record {name}"),
                record.feedback_at.unwrap_or_default(),
                events::record_rated(record),
                record.log.rated,
            ),
            claimed,
            audit,
        )?;
    } else if let Some(index) = record.log.rated {
        audit.at(index, format!("record {name} names a rating it never had"));
    }
    Ok(())
}

/// A token as the audit reads it.
struct TokenRow {
    jti: String,
    org: Org,
    claims: String,
    kid: String,
    revoked_at: Option<i64>,
    revoke_reason: Option<String>,
    revoke_cause: Option<String>,
    log_issued: Option<u64>,
    log_revoked: Option<u64>,
}

fn check_tokens(
    conn: &Connection,
    orgs: &HashMap<Org, OrgId>,
    leaves: u64,
    claimed: &mut [bool],
    audit: &mut Audit,
) -> Result<u64, AuditError> {
    let mut count = 0u64;
    let mut after = String::new();
    loop {
        let page: Vec<TokenRow> = conn
            .prepare_cached(
                "SELECT jti, org, claims, kid, revoked_at, revoke_reason, revoke_cause, log_issued,
                     log_revoked
                 FROM tokens WHERE jti > ?1 ORDER BY jti LIMIT ?2",
            )?
            .query_map(params![after, PAGE], |row| {
                Ok(TokenRow {
                    jti: row.get(0)?,
                    org: row.get(1)?,
                    claims: row.get(2)?,
                    kid: row.get(3)?,
                    revoked_at: row.get(4)?,
                    revoke_reason: row.get(5)?,
                    revoke_cause: row.get(6)?,
                    log_issued: row.get(7)?,
                    log_revoked: row.get(8)?,
                })
            })?
            .collect::<sql::Result<_>>()?;
        let Some(last) = page.last() else {
            return Ok(count);
        };
        after = last.jti.clone();
        for token in &page {
            count += 1;
            check_token(conn, token, orgs, leaves, claimed, audit)?;
        }
    }
}

/// Every vouch: its creation, and its withdrawal when it was withdrawn.
fn check_vouches(
    conn: &Connection,
    orgs: &HashMap<Org, OrgId>,
    leaves: u64,
    claimed: &mut [bool],
    audit: &mut Audit,
) -> Result<(), AuditError> {
    let mut after = String::new();
    loop {
        let page = crate::store::trust::page(conn, &after, PAGE)?;
        let Some(last) = page.last() else {
            return Ok(());
        };
        after = last.id.clone();
        for vouch in &page {
            let expect = |what: String, at: i64, event, index| Expected {
                what,
                org: vouch.org,
                at,
                event,
                index,
                leaves,
                orgs,
            };
            compare(
                conn,
                expect(
                    format!("vouch {}", vouch.id),
                    vouch.created_at,
                    events::vouch_created(vouch),
                    vouch.log_created,
                ),
                claimed,
                audit,
            )?;
            match vouch.withdrawn_at {
                Some(at) => compare(
                    conn,
                    expect(
                        format!("the withdrawal of vouch {}", vouch.id),
                        at,
                        events::vouch_withdrawn(vouch),
                        vouch.log_withdrawn,
                    ),
                    claimed,
                    audit,
                )?,
                None => {
                    if let Some(index) = vouch.log_withdrawn {
                        audit.at(
                            index,
                            format!("vouch {} names a withdrawal it never had", vouch.id),
                        );
                    }
                }
            }
        }
    }
}

fn check_token(
    conn: &Connection,
    token: &TokenRow,
    orgs: &HashMap<Org, OrgId>,
    leaves: u64,
    claimed: &mut [bool],
    audit: &mut Audit,
) -> Result<(), AuditError> {
    let claims: Claims = match serde_json::from_str(&token.claims) {
        Ok(claims) => claims,
        Err(error) => {
            audit.general(format!("a stored token's claims do not parse: {error}"));
            return Ok(());
        }
    };
    let jth = claims.jth();
    let expect = |what: String, at: i64, event, index| Expected {
        what,
        org: token.org,
        at,
        event,
        index,
        leaves,
        orgs,
    };
    compare(
        conn,
        expect(
            format!("token {jth}"),
            claims.iat.saturating_mul(1000),
            Ok(events::token_issued(&claims, &token.claims, &token.kid)),
            token.log_issued,
        ),
        claimed,
        audit,
    )?;
    match token.revoked_at {
        Some(revoked_at) => {
            let cause = token.revoke_cause.as_deref().unwrap_or(jth.as_str());
            compare(
                conn,
                expect(
                    format!("the revocation of token {jth}"),
                    revoked_at.saturating_mul(1000),
                    events::token_revoked(jth.as_str(), cause, token.revoke_reason.as_deref()),
                    token.log_revoked,
                ),
                claimed,
                audit,
            )?;
        }
        None => {
            if let Some(index) = token.log_revoked {
                audit.at(
                    index,
                    format!("token {jth} names a revocation it never had"),
                );
            }
        }
    }
    Ok(())
}
