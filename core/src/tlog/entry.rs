//! The log's leaves: one [`LogEntry`] per state change, as its RFC 8785
//! (JCS) canonical JSON.
//!
//! An entry is a flat JSON object: `v` (1), `org`, `at` (unix
//! milliseconds), `kind`, and the members of its kind. Absent optional
//! members are left out, never `null`. A leaf names tokens by jti hash,
//! never by jti: a jti is what an agent call may act with.
//!
//! [`LogEntry::to_leaf`] writes the canonical form with `serde_jcs`;
//! [`LogEntry::from_leaf`] reads a leaf back and refuses anything that is
//! not exactly the canonical form of a valid entry: unknown kinds and
//! members, `null`s, another member order, whitespace, other escapes. Every
//! number is an integer of at most 2^53 − 1 (I-JSON), where JCS and plain
//! decimal agree.
//!
//! The rules an entry must follow (checked both ways, so the server cannot
//! log what a verifier would refuse): a token at depth 0 has no `parent`
//! and one below it has one; a record's `result` is there exactly when it
//! is `completed`, its `deny_reason` exactly when it is `denied`, and a
//! `result_hash` only with a result; texts are capped and hold no control
//! characters but newline and tab.

use serde::{Deserialize, Serialize};

use super::error::LogError;
use crate::ids::{
    AarId, AgentId, ClaimsDigest, HumanRef, Jkt, Jth, KeyId, OrgId, ProvenanceRef, ResultHash,
};
use crate::limits::{
    MAX_DELEGATION_DEPTH, MAX_JSON_SAFE_INTEGER, MAX_KID_LEN, MAX_LEAF_BYTES,
    MAX_RATING_NOTE_CHARS, MAX_REVOKE_REASON_CHARS, MAX_USD, MICROS_PER_USD,
};
use crate::record::{DenyReason, Outcome, Rating, Status};
use crate::scope::{Action, Resource};
use crate::token::AssuranceLevel;

/// The `v` of every entry this version of the rules writes and reads.
pub const LOG_ENTRY_VERSION: u32 = 1;

/// One leaf of the log: a state change of one organisation at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// [`LOG_ENTRY_VERSION`].
    pub v: u32,
    pub org: OrgId,
    /// Unix milliseconds.
    pub at: i64,
    pub event: LogEvent,
}

/// What changed. New kinds (`approval.decided`) may be added: match with a
/// wildcard arm.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogEvent {
    /// `token.issued`: a root token issued or a token delegated.
    TokenIssued(TokenIssued),
    /// `token.revoked`: a token revoked (one entry per token the
    /// revocation voided, each naming the token it named).
    TokenRevoked(TokenRevoked),
    /// `record.created`: an action record written (pending, completed or
    /// denied).
    RecordCreated(RecordCreated),
    /// `record.completed`: a pending record closed with its result.
    RecordCompleted(RecordCompleted),
    /// `record.rated`: a completed record given its human rating.
    RecordRated(RecordRated),
}

impl LogEvent {
    /// The `kind` member.
    pub fn kind(&self) -> &'static str {
        self.wire_kind().as_str()
    }

    fn wire_kind(&self) -> Kind {
        match self {
            LogEvent::TokenIssued(_) => Kind::TokenIssued,
            LogEvent::TokenRevoked(_) => Kind::TokenRevoked,
            LogEvent::RecordCreated(_) => Kind::RecordCreated,
            LogEvent::RecordCompleted(_) => Kind::RecordCompleted,
            LogEvent::RecordRated(_) => Kind::RecordRated,
        }
    }

    /// The record an event is about, for record events.
    pub fn aar_id(&self) -> Option<&AarId> {
        match self {
            LogEvent::RecordCreated(e) => Some(&e.aar_id),
            LogEvent::RecordCompleted(e) => Some(&e.aar_id),
            LogEvent::RecordRated(e) => Some(&e.aar_id),
            LogEvent::TokenIssued(_) | LogEvent::TokenRevoked(_) => None,
        }
    }
}

/// `token.issued`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenIssued {
    /// The token's jti hash.
    pub jth: Jth,
    /// The parent's jti hash, for a delegated token.
    pub parent: Option<Jth>,
    pub agent_id: AgentId,
    pub provenance_ref: ProvenanceRef,
    pub depth: u32,
    pub human_ref: HumanRef,
    pub assurance: AssuranceLevel,
    /// Unix seconds.
    pub exp: i64,
    /// The id of the key that signed the token.
    pub kid: String,
    /// base64url SHA-256 of the token's stored claims JSON text.
    pub claims_sha256: ClaimsDigest,
    /// The holder key's thumbprint, for a bound token.
    pub jkt: Option<Jkt>,
    /// The token's index in its status list, when it has one.
    pub status_idx: Option<u64>,
}

/// `token.revoked`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRevoked {
    /// The token now revoked.
    pub jth: Jth,
    /// The token the revocation named (the same, or an ancestor).
    pub cause: Jth,
    pub reason: Option<String>,
}

/// What an agent proved it held when a record was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Credential {
    /// A bare `vat_jti`, which proves nothing.
    Jti,
    /// The token itself.
    Token,
}

/// `record.created`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordCreated {
    pub aar_id: AarId,
    /// The jti hash of the token the record was made with.
    pub jth: Jth,
    pub agent_id: AgentId,
    pub provenance_ref: ProvenanceRef,
    pub action: Action,
    pub resource: Resource,
    pub status: Status,
    pub result: Option<Outcome>,
    pub deny_reason: Option<DenyReason>,
    pub result_hash: Option<ResultHash>,
    pub spend_micros: u64,
    pub credential: Credential,
    /// The token a `delegate` record made.
    pub delegated_jth: Option<Jth>,
}

/// `record.completed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordCompleted {
    pub aar_id: AarId,
    pub result: Outcome,
    pub result_hash: Option<ResultHash>,
    pub spend_micros: u64,
}

/// `record.rated`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRated {
    pub aar_id: AarId,
    pub rating: Rating,
    pub note: Option<String>,
    /// The API key that rated; absent for a rating given before the
    /// deployment had a record log (its key was not kept then).
    pub by: Option<KeyId>,
}

/// The `kind` member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Kind {
    #[serde(rename = "token.issued")]
    TokenIssued,
    #[serde(rename = "token.revoked")]
    TokenRevoked,
    #[serde(rename = "record.created")]
    RecordCreated,
    #[serde(rename = "record.completed")]
    RecordCompleted,
    #[serde(rename = "record.rated")]
    RecordRated,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::TokenIssued => "token.issued",
            Kind::TokenRevoked => "token.revoked",
            Kind::RecordCreated => "record.created",
            Kind::RecordCompleted => "record.completed",
            Kind::RecordRated => "record.rated",
        }
    }
}

/// Every member any kind has, flat, in the order JCS sorts them (so plain
/// serde_json writes this struct canonically too; a test holds the two
/// writers to the same bytes).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    aar_id: Option<AarId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    action: Option<Action>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_id: Option<AgentId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    assurance: Option<AssuranceLevel>,
    at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by: Option<KeyId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cause: Option<Jth>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    claims_sha256: Option<ClaimsDigest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    credential: Option<Credential>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delegated_jth: Option<Jth>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deny_reason: Option<DenyReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    depth: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    human_ref: Option<HumanRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jkt: Option<Jkt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jth: Option<Jth>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kid: Option<String>,
    kind: Option<Kind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    org: Option<OrgId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent: Option<Jth>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    provenance_ref: Option<ProvenanceRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rating: Option<Rating>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resource: Option<Resource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result_hash: Option<ResultHash>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spend_micros: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<Status>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status_idx: Option<u64>,
    v: u32,
}

/// Takes a member the kind requires.
fn required<T>(value: Option<T>) -> Result<T, LogError> {
    value.ok_or(LogError::LeafMalformed)
}

/// Whether a number fits JSON exactly (an I-JSON integer), not negative.
fn safe(value: u64) -> bool {
    value <= MAX_JSON_SAFE_INTEGER
}

fn safe_signed(value: i64) -> bool {
    u64::try_from(value).is_ok_and(safe)
}

/// A free text of at most `max` characters, no control characters but
/// newline and tab.
fn valid_text(text: &str, max: usize) -> bool {
    text.chars().count() <= max
        && !text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
}

impl LogEntry {
    /// An entry of this version of the rules.
    pub fn new(org: OrgId, at: i64, event: LogEvent) -> LogEntry {
        LogEntry {
            v: LOG_ENTRY_VERSION,
            org,
            at,
            event,
        }
    }

    /// Checks the rules of the module documentation.
    fn check(&self) -> Result<(), LogError> {
        let malformed = LogError::LeafMalformed;
        if self.v != LOG_ENTRY_VERSION || !safe_signed(self.at) {
            return Err(malformed);
        }
        let spend_ok = |micros: u64| micros <= MAX_USD.saturating_mul(MICROS_PER_USD);
        let ok = match &self.event {
            LogEvent::TokenIssued(e) => {
                e.depth <= MAX_DELEGATION_DEPTH
                    && e.parent.is_some() == (e.depth > 0)
                    && safe_signed(e.exp)
                    && !e.kid.is_empty()
                    && e.kid.len() <= MAX_KID_LEN
                    && e.kid.bytes().all(|b| b.is_ascii_graphic())
                    && e.status_idx.is_none_or(safe)
            }
            LogEvent::TokenRevoked(e) => e
                .reason
                .as_deref()
                .is_none_or(|r| valid_text(r, MAX_REVOKE_REASON_CHARS)),
            LogEvent::RecordCreated(e) => {
                e.result.is_some() == (e.status == Status::Completed)
                    && e.deny_reason.is_some() == (e.status == Status::Denied)
                    && (e.result_hash.is_none() || e.result.is_some())
                    && spend_ok(e.spend_micros)
            }
            LogEvent::RecordCompleted(e) => spend_ok(e.spend_micros),
            LogEvent::RecordRated(e) => e
                .note
                .as_deref()
                .is_none_or(|n| valid_text(n, MAX_RATING_NOTE_CHARS)),
        };
        if ok { Ok(()) } else { Err(malformed) }
    }

    fn to_wire(&self) -> Wire {
        let mut wire = Wire {
            v: self.v,
            org: Some(self.org.clone()),
            at: self.at,
            kind: Some(self.event.wire_kind()),
            ..Wire::default()
        };
        match self.event.clone() {
            LogEvent::TokenIssued(e) => {
                wire.jth = Some(e.jth);
                wire.parent = e.parent;
                wire.agent_id = Some(e.agent_id);
                wire.provenance_ref = Some(e.provenance_ref);
                wire.depth = Some(e.depth);
                wire.human_ref = Some(e.human_ref);
                wire.assurance = Some(e.assurance);
                wire.exp = Some(e.exp);
                wire.kid = Some(e.kid);
                wire.claims_sha256 = Some(e.claims_sha256);
                wire.jkt = e.jkt;
                wire.status_idx = e.status_idx;
            }
            LogEvent::TokenRevoked(e) => {
                wire.jth = Some(e.jth);
                wire.cause = Some(e.cause);
                wire.reason = e.reason;
            }
            LogEvent::RecordCreated(e) => {
                wire.aar_id = Some(e.aar_id);
                wire.jth = Some(e.jth);
                wire.agent_id = Some(e.agent_id);
                wire.provenance_ref = Some(e.provenance_ref);
                wire.action = Some(e.action);
                wire.resource = Some(e.resource);
                wire.status = Some(e.status);
                wire.result = e.result;
                wire.deny_reason = e.deny_reason;
                wire.result_hash = e.result_hash;
                wire.spend_micros = Some(e.spend_micros);
                wire.credential = Some(e.credential);
                wire.delegated_jth = e.delegated_jth;
            }
            LogEvent::RecordCompleted(e) => {
                wire.aar_id = Some(e.aar_id);
                wire.result = Some(e.result);
                wire.result_hash = e.result_hash;
                wire.spend_micros = Some(e.spend_micros);
            }
            LogEvent::RecordRated(e) => {
                wire.aar_id = Some(e.aar_id);
                wire.rating = Some(e.rating);
                wire.note = e.note;
                wire.by = e.by;
            }
        }
        wire
    }

    /// The typed entry of a wire form, refusing members its kind does not
    /// have.
    fn from_wire(mut wire: Wire) -> Result<LogEntry, LogError> {
        let kind = required(wire.kind.take())?;
        let org = required(wire.org.take())?;
        // Each kind takes its members out; any left over is refused.
        let event = match kind {
            Kind::TokenIssued => LogEvent::TokenIssued(TokenIssued {
                jth: required(wire.jth.take())?,
                parent: wire.parent.take(),
                agent_id: required(wire.agent_id.take())?,
                provenance_ref: required(wire.provenance_ref.take())?,
                depth: required(wire.depth.take())?,
                human_ref: required(wire.human_ref.take())?,
                assurance: required(wire.assurance.take())?,
                exp: required(wire.exp.take())?,
                kid: required(wire.kid.take())?,
                claims_sha256: required(wire.claims_sha256.take())?,
                jkt: wire.jkt.take(),
                status_idx: wire.status_idx.take(),
            }),
            Kind::TokenRevoked => LogEvent::TokenRevoked(TokenRevoked {
                jth: required(wire.jth.take())?,
                cause: required(wire.cause.take())?,
                reason: wire.reason.take(),
            }),
            Kind::RecordCreated => LogEvent::RecordCreated(RecordCreated {
                aar_id: required(wire.aar_id.take())?,
                jth: required(wire.jth.take())?,
                agent_id: required(wire.agent_id.take())?,
                provenance_ref: required(wire.provenance_ref.take())?,
                action: required(wire.action.take())?,
                resource: required(wire.resource.take())?,
                status: required(wire.status.take())?,
                result: wire.result.take(),
                deny_reason: wire.deny_reason.take(),
                result_hash: wire.result_hash.take(),
                spend_micros: required(wire.spend_micros.take())?,
                credential: required(wire.credential.take())?,
                delegated_jth: wire.delegated_jth.take(),
            }),
            Kind::RecordCompleted => LogEvent::RecordCompleted(RecordCompleted {
                aar_id: required(wire.aar_id.take())?,
                result: required(wire.result.take())?,
                result_hash: wire.result_hash.take(),
                spend_micros: required(wire.spend_micros.take())?,
            }),
            Kind::RecordRated => LogEvent::RecordRated(RecordRated {
                aar_id: required(wire.aar_id.take())?,
                rating: required(wire.rating.take())?,
                note: wire.note.take(),
                by: wire.by.take(),
            }),
        };
        if !wire.is_spent() {
            return Err(LogError::LeafMalformed);
        }
        Ok(LogEntry {
            v: wire.v,
            org,
            at: wire.at,
            event,
        })
    }

    /// The leaf bytes: the entry's canonical JSON (RFC 8785), after checking
    /// the entry's rules.
    pub fn to_leaf(&self) -> Result<Vec<u8>, LogError> {
        self.check()?;
        let leaf = serde_jcs::to_vec(&self.to_wire()).map_err(|_| LogError::LeafMalformed)?;
        if leaf.len() > MAX_LEAF_BYTES {
            return Err(LogError::LeafTooLarge);
        }
        Ok(leaf)
    }

    /// Reads a leaf, refusing anything but the canonical form of a valid
    /// entry: `leaf_malformed` for what is not an entry (not JSON, an
    /// unknown kind or member, a missing or mistyped member, a broken
    /// rule), `leaf_not_canonical` for an entry written another way.
    pub fn from_leaf(bytes: &[u8]) -> Result<LogEntry, LogError> {
        if bytes.len() > MAX_LEAF_BYTES {
            return Err(LogError::LeafTooLarge);
        }
        let wire: Wire = serde_json::from_slice(bytes).map_err(|_| LogError::LeafMalformed)?;
        let entry = LogEntry::from_wire(wire)?;
        if entry.to_leaf()? != bytes {
            return Err(LogError::LeafNotCanonical);
        }
        Ok(entry)
    }
}

impl Wire {
    /// Whether every member a kind may take has been taken.
    fn is_spent(&self) -> bool {
        let Wire {
            aar_id,
            action,
            agent_id,
            assurance,
            at: _,
            by,
            cause,
            claims_sha256,
            credential,
            delegated_jth,
            deny_reason,
            depth,
            exp,
            human_ref,
            jkt,
            jth,
            kid,
            kind,
            note,
            org,
            parent,
            provenance_ref,
            rating,
            reason,
            resource,
            result,
            result_hash,
            spend_micros,
            status,
            status_idx,
            v: _,
        } = self;
        kind.is_none()
            && org.is_none()
            && aar_id.is_none()
            && action.is_none()
            && agent_id.is_none()
            && assurance.is_none()
            && by.is_none()
            && cause.is_none()
            && claims_sha256.is_none()
            && credential.is_none()
            && delegated_jth.is_none()
            && deny_reason.is_none()
            && depth.is_none()
            && exp.is_none()
            && human_ref.is_none()
            && jkt.is_none()
            && jth.is_none()
            && kid.is_none()
            && note.is_none()
            && parent.is_none()
            && provenance_ref.is_none()
            && rating.is_none()
            && reason.is_none()
            && resource.is_none()
            && result.is_none()
            && result_hash.is_none()
            && spend_micros.is_none()
            && status.is_none()
            && status_idx.is_none()
    }
}

/// The entry's JSON: the flat members of its leaf.
impl Serialize for LogEntry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_wire().serialize(serializer)
    }
}

/// Reads an entry's JSON in any member order and spacing (the canonical
/// form is [`LogEntry::from_leaf`]'s business), with the entry's rules.
impl<'de> Deserialize<'de> for LogEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<LogEntry, D::Error> {
        let entry = LogEntry::from_wire(Wire::deserialize(deserializer)?)
            .map_err(serde::de::Error::custom)?;
        entry.check().map_err(serde::de::Error::custom)?;
        Ok(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{Jti, Ulid};

    fn ulid(n: u8) -> Ulid {
        Ulid::new(1_800_000_000_000, [n; 10]).unwrap()
    }

    fn jth(n: u8) -> Jth {
        Jti::root(ulid(n)).hash()
    }

    fn org() -> OrgId {
        OrgId::new(ulid(1))
    }

    pub(super) fn samples() -> Vec<LogEntry> {
        let issued = TokenIssued {
            jth: jth(2),
            parent: Some(jth(3)),
            agent_id: AgentId::parse("summariser").unwrap(),
            provenance_ref: ProvenanceRef::new(ulid(4)),
            depth: 1,
            human_ref: HumanRef::from_digest(&[5; 32]),
            assurance: AssuranceLevel::L2,
            exp: 1_800_003_600,
            kid: "kid-1".into(),
            claims_sha256: ClaimsDigest::of("{\"claims\":true}"),
            jkt: Some(Jkt::from_digest(&[6; 32])),
            status_idx: Some(17),
        };
        let created = RecordCreated {
            aar_id: AarId::new(ulid(7)),
            jth: jth(2),
            agent_id: AgentId::parse("summariser").unwrap(),
            provenance_ref: ProvenanceRef::new(ulid(4)),
            action: Action::parse("read").unwrap(),
            resource: Resource::parse("crm:contacts").unwrap(),
            status: Status::Completed,
            result: Some(Outcome::Success),
            deny_reason: None,
            result_hash: Some(ResultHash::from_digest(&[8; 32])),
            spend_micros: 1_500_000,
            credential: Credential::Token,
            delegated_jth: None,
        };
        [
            LogEvent::TokenIssued(issued),
            LogEvent::TokenRevoked(TokenRevoked {
                jth: jth(2),
                cause: jth(3),
                reason: Some("compromised \"key\"\n\u{e9}\u{1f600}".into()),
            }),
            LogEvent::RecordCreated(created),
            LogEvent::RecordCompleted(RecordCompleted {
                aar_id: AarId::new(ulid(7)),
                result: Outcome::Error,
                result_hash: None,
                spend_micros: 0,
            }),
            LogEvent::RecordRated(RecordRated {
                aar_id: AarId::new(ulid(7)),
                rating: Rating::Flagged,
                note: Some("tab\there".into()),
                by: Some(KeyId::new(ulid(9))),
            }),
        ]
        .into_iter()
        .map(|event| LogEntry::new(org(), 1_800_000_000_123, event))
        .collect()
    }

    #[test]
    fn leaves_round_trip_and_are_canonical() {
        for entry in samples() {
            let leaf = entry.to_leaf().unwrap();
            assert_eq!(LogEntry::from_leaf(&leaf), Ok(entry.clone()));
            // JCS sorts members; the wire struct declares them sorted, so
            // plain serde_json writes the same bytes.
            assert_eq!(
                serde_json::to_vec(&entry).unwrap(),
                leaf,
                "{}",
                entry.event.kind()
            );
            let text = String::from_utf8(leaf).unwrap();
            assert!(text.starts_with('{') && !text.contains(": "), "{text}");
            assert!(text.contains(&format!("\"kind\":\"{}\"", entry.event.kind())));
            assert!(!text.contains("vat_root_"), "a leaf carries no jti");
        }
    }

    #[test]
    fn the_token_issued_leaf() {
        let leaf = samples()[0].to_leaf().unwrap();
        let text = String::from_utf8(leaf).unwrap();
        let members: Vec<&str> = text
            .trim_matches(['{', '}'])
            .split(',')
            .map(|m| m.split(':').next().unwrap())
            .collect();
        assert_eq!(
            members,
            [
                "\"agent_id\"",
                "\"assurance\"",
                "\"at\"",
                "\"claims_sha256\"",
                "\"depth\"",
                "\"exp\"",
                "\"human_ref\"",
                "\"jkt\"",
                "\"jth\"",
                "\"kid\"",
                "\"kind\"",
                "\"org\"",
                "\"parent\"",
                "\"provenance_ref\"",
                "\"status_idx\"",
                "\"v\"",
            ]
        );
    }

    #[test]
    fn other_spellings_are_not_canonical() {
        let entry = &samples()[3];
        let leaf = String::from_utf8(entry.to_leaf().unwrap()).unwrap();
        let reordered = leaf
            .replacen("{\"aar_id\"", "{\"v\":1,\"aar_id\"", 1)
            .replacen(",\"v\":1}", "}", 1);
        for bad in [
            format!(" {leaf}"),
            format!("{leaf}\n"),
            leaf.replace(',', ", "),
            reordered,
            leaf.replacen("}", ",\"result_hash\":null}", 1),
            leaf.replace("\"error\"", "\"\\u0065rror\""),
        ] {
            assert_eq!(
                LogEntry::from_leaf(bad.as_bytes()),
                Err(LogError::LeafNotCanonical),
                "{bad}"
            );
        }
    }

    #[test]
    fn what_is_not_an_entry() {
        let leaf = String::from_utf8(samples()[3].to_leaf().unwrap()).unwrap();
        for bad in [
            "".to_owned(),
            "[]".to_owned(),
            leaf.replace("record.completed", "record.archived"),
            leaf.replace("\"v\":1", "\"v\":2"),
            leaf.replacen("{", "{\"agent_id\":\"bot\",", 1),
            leaf.replacen("{", "{\"extra\":1,", 1),
            leaf.replace("\"spend_micros\":0,", ""),
            leaf.replace("\"spend_micros\":0", "\"spend_micros\":-1"),
            leaf.replace("\"spend_micros\":0", "\"spend_micros\":0.5"),
            leaf.replace("\"spend_micros\":0", "\"spend_micros\":1000000000000001"),
            leaf.replace("\"at\":1800000000123", "\"at\":9007199254740992"),
            leaf.replace("\"org\":", "\"org\":null,\"x\":"),
            leaf.replacen("{", "{\"aar_id\":\"aar_x\",", 1),
            leaf.replace("\"kind\":\"record.completed\",", ""),
        ] {
            assert_eq!(
                LogEntry::from_leaf(bad.as_bytes()),
                Err(LogError::LeafMalformed),
                "{bad}"
            );
        }
        assert_eq!(
            LogEntry::from_leaf(&vec![b' '; MAX_LEAF_BYTES + 1]),
            Err(LogError::LeafTooLarge)
        );
    }

    #[test]
    fn the_rules_hold_both_ways() {
        let mut entries = samples();
        let LogEvent::TokenIssued(issued) = &mut entries[0].event else {
            panic!()
        };
        issued.parent = None;
        let LogEvent::RecordCreated(created) = &mut entries[2].event else {
            panic!()
        };
        created.status = Status::Pending;
        let LogEvent::TokenRevoked(revoked) = &mut entries[1].event else {
            panic!()
        };
        revoked.reason = Some("x".repeat(MAX_REVOKE_REASON_CHARS + 1));
        let LogEvent::RecordRated(rated) = &mut entries[4].event else {
            panic!()
        };
        rated.note = Some("bell\u{7}".into());
        entries[3].v = 2;
        for entry in entries {
            assert_eq!(
                entry.to_leaf(),
                Err(LogError::LeafMalformed),
                "{}",
                entry.event.kind()
            );
        }
    }
}
