//! The log's leaves: one [`LogEntry`] per state change, as its RFC 8785
//! (JCS) canonical JSON.
//!
//! An entry is a flat JSON object: `v` (1), `org`, `at` (unix
//! milliseconds), `kind`, and the members of its kind. Absent optional
//! members are left out, never `null`. A leaf names tokens by jti hash,
//! never by jti: a jti is what an agent call may act with.
//!
//! [`LogEntry::to_leaf`] writes the canonical form (serde_json over the
//! members sorted by name, which for the values a leaf holds is exactly
//! RFC 8785: a property test holds it to serde_jcs, an implementation of
//! JCS written by others);
//! [`LogEntry::from_leaf`] reads a leaf back and refuses anything that is
//! not exactly the canonical form of a valid entry: unknown kinds and
//! members, `null`s, another member order, whitespace, other escapes. Every
//! number is an integer of at most 2^53 − 1 (I-JSON), where JCS and plain
//! decimal agree.
//!
//! The rules an entry must follow (checked both ways, so the server cannot
//! log what a verifier would refuse): a token at depth 0 has no `parent`
//! and one below it has one; a record's `result` is there exactly when it
//! is `completed`, its `deny_reason` exactly when it is `denied` (so a
//! record created `awaiting_approval` has neither), and a `result_hash`
//! only with a result; an approval's decision names the deciding key (`by`)
//! exactly when a person decided (`approved`, `denied`), and an expiry has
//! no `note`; a vouch and its withdrawal name exactly one principal, an
//! API key (`by_key`) or an agent (`by_agent`), and a vouch's weight is in
//! millionths, 1 to 1,000,000 (`weight_ppm`); texts are capped and hold no
//! control characters but newline and tab.

use std::collections::BTreeMap;
use std::str::FromStr as _;

use serde::{Deserialize, Serialize};

use super::error::LogError;
use crate::ids::{
    AarId, AgentId, ArgsHash, ClaimsDigest, HumanRef, Jkt, Jth, KeyId, OrgId, ProvenanceRef,
    ResultHash, VouchId,
};
use crate::limits::{
    MAX_APPROVAL_NOTE_CHARS, MAX_DELEGATION_DEPTH, MAX_JSON_SAFE_INTEGER, MAX_KID_LEN,
    MAX_LEAF_BYTES, MAX_RATING_NOTE_CHARS, MAX_REVOKE_REASON_CHARS, MAX_USD, MICROS_PER_USD,
};
use crate::record::{ApprovalDecision, DenyReason, Outcome, Rating, Status};
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

/// What changed. New kinds may be added: match with a wildcard arm.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogEvent {
    /// `token.issued`: a root token issued or a token delegated.
    TokenIssued(TokenIssued),
    /// `token.revoked`: a token revoked (one entry per token the
    /// revocation voided, each naming the token it named).
    TokenRevoked(TokenRevoked),
    /// `record.created`: an action record written (pending, awaiting
    /// approval, completed or denied).
    RecordCreated(RecordCreated),
    /// `record.completed`: a pending record closed with its result.
    RecordCompleted(RecordCompleted),
    /// `record.rated`: a completed record given its human rating.
    RecordRated(RecordRated),
    /// `approval.decided`: the approval a record awaited approved, denied
    /// or expired.
    ApprovalDecided(ApprovalDecided),
    /// `vouch.created`: a person or an agent vouched for an agent.
    VouchCreated(VouchCreated),
    /// `vouch.withdrawn`: a vouch withdrawn.
    VouchWithdrawn(VouchWithdrawn),
}

impl LogEvent {
    /// The `kind` member.
    pub fn kind(&self) -> &'static str {
        self.kind_of().as_str()
    }

    fn kind_of(&self) -> Kind {
        match self {
            LogEvent::TokenIssued(_) => Kind::TokenIssued,
            LogEvent::TokenRevoked(_) => Kind::TokenRevoked,
            LogEvent::RecordCreated(_) => Kind::RecordCreated,
            LogEvent::RecordCompleted(_) => Kind::RecordCompleted,
            LogEvent::RecordRated(_) => Kind::RecordRated,
            LogEvent::ApprovalDecided(_) => Kind::ApprovalDecided,
            LogEvent::VouchCreated(_) => Kind::VouchCreated,
            LogEvent::VouchWithdrawn(_) => Kind::VouchWithdrawn,
        }
    }

    /// The record an event is about, for record events.
    pub fn aar_id(&self) -> Option<&AarId> {
        match self {
            LogEvent::RecordCreated(e) => Some(&e.aar_id),
            LogEvent::RecordCompleted(e) => Some(&e.aar_id),
            LogEvent::RecordRated(e) => Some(&e.aar_id),
            LogEvent::ApprovalDecided(e) => Some(&e.aar_id),
            LogEvent::TokenIssued(_)
            | LogEvent::TokenRevoked(_)
            | LogEvent::VouchCreated(_)
            | LogEvent::VouchWithdrawn(_) => None,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Credential {
    /// A bare `vat_jti`, which proves nothing.
    Jti,
    /// The token itself.
    Token,
}

impl Credential {
    /// `jti` or `token`.
    pub fn as_str(self) -> &'static str {
        match self {
            Credential::Jti => "jti",
            Credential::Token => "token",
        }
    }

    /// Reads `jti` or `token`.
    pub fn parse(text: &str) -> Option<Credential> {
        match text {
            "jti" => Some(Credential::Jti),
            "token" => Some(Credential::Token),
            _ => None,
        }
    }
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
    /// `sha256:` of the canonical JSON of the arguments the act was
    /// attempted with (DESIGN §15); absent without arguments.
    pub args_hash: Option<ArgsHash>,
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

/// `approval.decided`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalDecided {
    /// The record that awaited the approval.
    pub aar_id: AarId,
    pub decision: ApprovalDecision,
    /// The reviewer's note; never on an expiry.
    pub note: Option<String>,
    /// The API key that decided: there exactly when a person decided
    /// (`approved`, `denied`), absent for an expiry.
    pub by: Option<KeyId>,
}

/// Who vouched or withdrew a vouch: one of the two.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VouchPrincipal {
    /// The API key of a person (`owner`, `reviewer`; an owner withdrawing
    /// another's vouch).
    pub by_key: Option<KeyId>,
    /// The agent that vouched with its token.
    pub by_agent: Option<AgentId>,
}

impl VouchPrincipal {
    /// Names exactly one principal.
    fn is_one(&self) -> bool {
        self.by_key.is_some() != self.by_agent.is_some()
    }
}

/// `vouch.created`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VouchCreated {
    pub vouch_id: VouchId,
    /// The voucher.
    pub by: VouchPrincipal,
    /// The agent vouched for.
    pub agent_id: AgentId,
    /// The weight in millionths: 1 to 1,000,000.
    pub weight_ppm: u64,
    pub reason: Option<String>,
    /// Unix milliseconds.
    pub expires_at: Option<i64>,
}

/// `vouch.withdrawn`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VouchWithdrawn {
    pub vouch_id: VouchId,
    /// Who withdrew it: its voucher, or an owner's key.
    pub by: VouchPrincipal,
}

/// The largest `weight_ppm`: a weight of 1.
pub const MAX_VOUCH_WEIGHT_PPM: u64 = 1_000_000;

/// The `kind` member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    TokenIssued,
    TokenRevoked,
    RecordCreated,
    RecordCompleted,
    RecordRated,
    ApprovalDecided,
    VouchCreated,
    VouchWithdrawn,
}

impl Kind {
    const ALL: [Kind; 8] = [
        Kind::TokenIssued,
        Kind::TokenRevoked,
        Kind::RecordCreated,
        Kind::RecordCompleted,
        Kind::RecordRated,
        Kind::ApprovalDecided,
        Kind::VouchCreated,
        Kind::VouchWithdrawn,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Kind::TokenIssued => "token.issued",
            Kind::TokenRevoked => "token.revoked",
            Kind::RecordCreated => "record.created",
            Kind::RecordCompleted => "record.completed",
            Kind::RecordRated => "record.rated",
            Kind::ApprovalDecided => "approval.decided",
            Kind::VouchCreated => "vouch.created",
            Kind::VouchWithdrawn => "vouch.withdrawn",
        }
    }

    fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.as_str() == text)
    }
}

/// A member's value: every member of an entry is a string or an integer
/// (`null` is read, to be refused as not canonical or as missing).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Scalar {
    Str(String),
    Int(i64),
    Null,
}

impl Serialize for Scalar {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Scalar::Str(text) => serializer.serialize_str(text),
            Scalar::Int(number) => serializer.serialize_i64(*number),
            Scalar::Null => serializer.serialize_unit(),
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Scalar, D::Error> {
        struct Visitor;

        impl serde::de::Visitor<'_> for Visitor {
            type Value = Scalar;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar::Str(v.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Scalar, E> {
                Ok(Scalar::Str(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar::Int(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Scalar, E> {
                i64::try_from(v)
                    .map(Scalar::Int)
                    .map_err(|_| E::custom("integer out of range"))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Scalar, E> {
                Ok(Scalar::Null)
            }
        }

        deserializer.deserialize_any(Visitor)
    }
}

/// An entry's members by name. Read from JSON, a name given twice is
/// refused (serde_json's maps would keep the last).
#[derive(Debug, Default)]
struct Members(BTreeMap<String, Scalar>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Members, D::Error> {
        struct Visitor;

        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Members;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Members, A::Error> {
                let mut members = BTreeMap::new();
                while let Some((name, value)) = map.next_entry::<String, Scalar>()? {
                    if members.insert(name, value).is_some() {
                        return Err(serde::de::Error::custom("a member given twice"));
                    }
                }
                Ok(Members(members))
            }
        }

        deserializer.deserialize_map(Visitor)
    }
}

/// Every integer of an entry: not negative, at most 2^53 − 1.
fn safe(value: u64) -> bool {
    value <= MAX_JSON_SAFE_INTEGER
}

fn safe_signed(value: i64) -> bool {
    u64::try_from(value).is_ok_and(safe)
}

/// A member as written: borrowed from the entry.
#[derive(Debug, Clone, Copy)]
enum Field<'a> {
    Str(&'a str),
    Int(i64),
}

impl Serialize for Field<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Field::Str(text) => serializer.serialize_str(text),
            Field::Int(n) => serializer.serialize_i64(*n),
        }
    }
}

/// An entry's members as written, sorted by name (JCS's order: the names
/// are ASCII), borrowing the entry's texts: no allocation but the list.
#[derive(Debug, Default)]
struct Fields<'a>(Vec<(&'static str, Field<'a>)>);

impl<'a> Fields<'a> {
    fn put(&mut self, name: &'static str, value: Option<&'a str>) {
        if let Some(value) = value {
            self.0.push((name, Field::Str(value)));
        }
    }

    fn put_int(&mut self, name: &'static str, value: Option<i64>) {
        if let Some(value) = value {
            self.0.push((name, Field::Int(value)));
        }
    }

    fn sorted(mut self) -> Fields<'a> {
        self.0.sort_unstable_by_key(|(name, _)| *name);
        self
    }
}

impl Serialize for Fields<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

impl Members {
    /// Takes an optional text member (`null` reads as absent).
    fn text(&mut self, name: &str) -> Result<Option<String>, LogError> {
        match self.0.remove(name) {
            None | Some(Scalar::Null) => Ok(None),
            Some(Scalar::Str(text)) => Ok(Some(text)),
            Some(Scalar::Int(_)) => Err(LogError::LeafMalformed),
        }
    }

    /// Takes an optional member parsed from its text.
    fn parsed<T, E>(
        &mut self,
        name: &str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<Option<T>, LogError> {
        self.text(name)?
            .map(|text| parse(&text).map_err(|_| LogError::LeafMalformed))
            .transpose()
    }

    /// Takes a required member parsed from its text.
    fn required<T, E>(
        &mut self,
        name: &str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<T, LogError> {
        self.parsed(name, parse)?.ok_or(LogError::LeafMalformed)
    }

    /// Takes an optional integer member: 0 to 2^53 − 1.
    fn int(&mut self, name: &str) -> Result<Option<u64>, LogError> {
        match self.0.remove(name) {
            None | Some(Scalar::Null) => Ok(None),
            Some(Scalar::Int(n)) => u64::try_from(n)
                .ok()
                .filter(|n| safe(*n))
                .map(Some)
                .ok_or(LogError::LeafMalformed),
            Some(Scalar::Str(_)) => Err(LogError::LeafMalformed),
        }
    }

    fn required_int(&mut self, name: &str) -> Result<u64, LogError> {
        self.int(name)?.ok_or(LogError::LeafMalformed)
    }
}

/// A number read from an entry as the type its member has.
fn narrow<T: TryFrom<u64>>(value: u64) -> Result<T, LogError> {
    T::try_from(value).map_err(|_| LogError::LeafMalformed)
}

/// Reads an enum spelled as its `as_str`.
fn one_of<T: Copy>(all: &[T], as_str: fn(T) -> &'static str) -> impl Fn(&str) -> Result<T, ()> {
    move |text| all.iter().copied().find(|v| as_str(*v) == text).ok_or(())
}

const LEVELS: [AssuranceLevel; 3] = [AssuranceLevel::L1, AssuranceLevel::L2, AssuranceLevel::L3];

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
            LogEvent::ApprovalDecided(e) => {
                e.by.is_some() == e.decision.is_human()
                    && (e.note.is_none() || e.decision.is_human())
                    && e.note
                        .as_deref()
                        .is_none_or(|n| valid_text(n, MAX_APPROVAL_NOTE_CHARS))
            }
            LogEvent::VouchCreated(e) => {
                e.by.is_one()
                    && (1..=MAX_VOUCH_WEIGHT_PPM).contains(&e.weight_ppm)
                    && e.expires_at.is_none_or(safe_signed)
                    && e.reason
                        .as_deref()
                        .is_none_or(|r| valid_text(r, MAX_REVOKE_REASON_CHARS))
            }
            LogEvent::VouchWithdrawn(e) => e.by.is_one(),
        };
        if ok { Ok(()) } else { Err(malformed) }
    }

    /// The entry's members, flat, sorted by name.
    fn members(&self) -> Fields<'_> {
        let mut m = Fields::default();
        m.put_int("v", Some(i64::from(self.v)));
        m.put("org", Some(self.org.as_str()));
        m.put_int("at", Some(self.at));
        m.put("kind", Some(self.event.kind()));
        // Integers were checked to be at most 2^53 − 1, so they fit i64.
        let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        match &self.event {
            LogEvent::TokenIssued(e) => {
                m.put("jth", Some(e.jth.as_str()));
                m.put("parent", e.parent.as_ref().map(Jth::as_str));
                m.put("agent_id", Some(e.agent_id.as_str()));
                m.put("provenance_ref", Some(e.provenance_ref.as_str()));
                m.put_int("depth", Some(i64::from(e.depth)));
                m.put("human_ref", Some(e.human_ref.as_str()));
                m.put("assurance", Some(e.assurance.as_str()));
                m.put_int("exp", Some(e.exp));
                m.put("kid", Some(e.kid.as_str()));
                m.put("claims_sha256", Some(e.claims_sha256.as_str()));
                m.put("jkt", e.jkt.as_ref().map(Jkt::as_str));
                m.put_int("status_idx", e.status_idx.map(int));
            }
            LogEvent::TokenRevoked(e) => {
                m.put("jth", Some(e.jth.as_str()));
                m.put("cause", Some(e.cause.as_str()));
                m.put("reason", e.reason.as_deref());
            }
            LogEvent::RecordCreated(e) => {
                m.put("aar_id", Some(e.aar_id.as_str()));
                m.put("jth", Some(e.jth.as_str()));
                m.put("agent_id", Some(e.agent_id.as_str()));
                m.put("provenance_ref", Some(e.provenance_ref.as_str()));
                m.put("action", Some(e.action.as_str()));
                m.put("resource", Some(e.resource.as_str()));
                m.put("status", Some(e.status.as_str()));
                m.put("result", e.result.map(Outcome::as_str));
                m.put("deny_reason", e.deny_reason.map(DenyReason::code));
                m.put(
                    "result_hash",
                    e.result_hash.as_ref().map(ResultHash::as_str),
                );
                m.put_int("spend_micros", Some(int(e.spend_micros)));
                m.put("credential", Some(e.credential.as_str()));
                m.put("delegated_jth", e.delegated_jth.as_ref().map(Jth::as_str));
                m.put("args_hash", e.args_hash.as_ref().map(ArgsHash::as_str));
            }
            LogEvent::RecordCompleted(e) => {
                m.put("aar_id", Some(e.aar_id.as_str()));
                m.put("result", Some(e.result.as_str()));
                m.put(
                    "result_hash",
                    e.result_hash.as_ref().map(ResultHash::as_str),
                );
                m.put_int("spend_micros", Some(int(e.spend_micros)));
            }
            LogEvent::RecordRated(e) => {
                m.put("aar_id", Some(e.aar_id.as_str()));
                m.put("rating", Some(e.rating.as_str()));
                m.put("note", e.note.as_deref());
                m.put("by", e.by.as_ref().map(KeyId::as_str));
            }
            LogEvent::ApprovalDecided(e) => {
                m.put("aar_id", Some(e.aar_id.as_str()));
                m.put("decision", Some(e.decision.as_str()));
                m.put("note", e.note.as_deref());
                m.put("by", e.by.as_ref().map(KeyId::as_str));
            }
            LogEvent::VouchCreated(e) => {
                m.put("vouch_id", Some(e.vouch_id.as_str()));
                m.put("by_key", e.by.by_key.as_ref().map(KeyId::as_str));
                m.put("by_agent", e.by.by_agent.as_ref().map(AgentId::as_str));
                m.put("agent_id", Some(e.agent_id.as_str()));
                m.put_int("weight_ppm", Some(int(e.weight_ppm)));
                m.put("reason", e.reason.as_deref());
                m.put_int("expires_at", e.expires_at);
            }
            LogEvent::VouchWithdrawn(e) => {
                m.put("vouch_id", Some(e.vouch_id.as_str()));
                m.put("by_key", e.by.by_key.as_ref().map(KeyId::as_str));
                m.put("by_agent", e.by.by_agent.as_ref().map(AgentId::as_str));
            }
        }
        m.sorted()
    }

    /// The typed entry of its members, refusing a missing or mistyped
    /// member and any member its kind does not have.
    fn from_members(mut m: Members) -> Result<LogEntry, LogError> {
        let v = narrow(m.required_int("v")?)?;
        let org = m.required("org", OrgId::parse)?;
        let at = narrow(m.required_int("at")?)?;
        let kind = m.required("kind", |k| Kind::parse(k).ok_or(()))?;
        let event = match kind {
            Kind::TokenIssued => LogEvent::TokenIssued(TokenIssued {
                jth: m.required("jth", Jth::parse)?,
                parent: m.parsed("parent", Jth::parse)?,
                agent_id: m.required("agent_id", AgentId::parse)?,
                provenance_ref: m.required("provenance_ref", ProvenanceRef::parse)?,
                depth: narrow(m.required_int("depth")?)?,
                human_ref: m.required("human_ref", HumanRef::parse)?,
                assurance: m.required("assurance", one_of(&LEVELS, AssuranceLevel::as_str))?,
                exp: narrow(m.required_int("exp")?)?,
                kid: m.required("kid", |k| Ok::<_, ()>(k.to_owned()))?,
                claims_sha256: m.required("claims_sha256", ClaimsDigest::parse)?,
                jkt: m.parsed("jkt", Jkt::parse)?,
                status_idx: m.int("status_idx")?,
            }),
            Kind::TokenRevoked => LogEvent::TokenRevoked(TokenRevoked {
                jth: m.required("jth", Jth::parse)?,
                cause: m.required("cause", Jth::parse)?,
                reason: m.text("reason")?,
            }),
            Kind::RecordCreated => LogEvent::RecordCreated(RecordCreated {
                aar_id: m.required("aar_id", AarId::parse)?,
                jth: m.required("jth", Jth::parse)?,
                agent_id: m.required("agent_id", AgentId::parse)?,
                provenance_ref: m.required("provenance_ref", ProvenanceRef::parse)?,
                action: m.required("action", Action::parse)?,
                resource: m.required("resource", Resource::parse)?,
                status: m.required("status", Status::from_str)?,
                result: m.parsed("result", Outcome::from_str)?,
                deny_reason: m.parsed("deny_reason", DenyReason::from_str)?,
                result_hash: m.parsed("result_hash", ResultHash::parse)?,
                spend_micros: m.required_int("spend_micros")?,
                credential: m.required("credential", |c| Credential::parse(c).ok_or(()))?,
                delegated_jth: m.parsed("delegated_jth", Jth::parse)?,
                args_hash: m.parsed("args_hash", ArgsHash::parse)?,
            }),
            Kind::RecordCompleted => LogEvent::RecordCompleted(RecordCompleted {
                aar_id: m.required("aar_id", AarId::parse)?,
                result: m.required("result", Outcome::from_str)?,
                result_hash: m.parsed("result_hash", ResultHash::parse)?,
                spend_micros: m.required_int("spend_micros")?,
            }),
            Kind::RecordRated => LogEvent::RecordRated(RecordRated {
                aar_id: m.required("aar_id", AarId::parse)?,
                rating: m.required("rating", Rating::from_str)?,
                note: m.text("note")?,
                by: m.parsed("by", KeyId::parse)?,
            }),
            Kind::ApprovalDecided => LogEvent::ApprovalDecided(ApprovalDecided {
                aar_id: m.required("aar_id", AarId::parse)?,
                decision: m.required("decision", |d| ApprovalDecision::parse(d).ok_or(()))?,
                note: m.text("note")?,
                by: m.parsed("by", KeyId::parse)?,
            }),
            Kind::VouchCreated => LogEvent::VouchCreated(VouchCreated {
                vouch_id: m.required("vouch_id", VouchId::parse)?,
                by: VouchPrincipal {
                    by_key: m.parsed("by_key", KeyId::parse)?,
                    by_agent: m.parsed("by_agent", AgentId::parse)?,
                },
                agent_id: m.required("agent_id", AgentId::parse)?,
                weight_ppm: m.required_int("weight_ppm")?,
                reason: m.text("reason")?,
                expires_at: m.int("expires_at")?.map(narrow).transpose()?,
            }),
            Kind::VouchWithdrawn => LogEvent::VouchWithdrawn(VouchWithdrawn {
                vouch_id: m.required("vouch_id", VouchId::parse)?,
                by: VouchPrincipal {
                    by_key: m.parsed("by_key", KeyId::parse)?,
                    by_agent: m.parsed("by_agent", AgentId::parse)?,
                },
            }),
        };
        if !m.0.is_empty() {
            return Err(LogError::LeafMalformed);
        }
        Ok(LogEntry { v, org, at, event })
    }

    /// The leaf bytes: the entry's canonical JSON (RFC 8785; see
    /// [`LogEntry::from_leaf`]), after checking the entry's rules. Written
    /// by serde_json over the sorted members: the server writes a leaf per
    /// state change, and a general JCS writer (one through `Value`) cost
    /// a measured share of its write throughput.
    pub fn to_leaf(&self) -> Result<Vec<u8>, LogError> {
        self.check()?;
        let leaf = serde_json::to_vec(&self.members()).map_err(|_| LogError::LeafMalformed)?;
        if leaf.len() > MAX_LEAF_BYTES {
            return Err(LogError::LeafTooLarge);
        }
        Ok(leaf)
    }

    /// Reads a leaf, refusing anything but the canonical form of a valid
    /// entry: `leaf_malformed` for what is not an entry (not a JSON object,
    /// an unknown kind or member, a missing or mistyped member, a member
    /// twice, a broken rule), `leaf_not_canonical` for an entry written
    /// another way.
    ///
    /// The entry is written again and compared. For the values an entry
    /// holds (ASCII member names, strings, integers up to 2^53 − 1) the
    /// canonical form is the members sorted by name and written by
    /// serde_json; this needs no second JSON writer in the wasm build, and
    /// a property test holds the two writers to the same bytes.
    pub fn from_leaf(bytes: &[u8]) -> Result<LogEntry, LogError> {
        if bytes.len() > MAX_LEAF_BYTES {
            return Err(LogError::LeafTooLarge);
        }
        let members: Members =
            serde_json::from_slice(bytes).map_err(|_| LogError::LeafMalformed)?;
        let entry = LogEntry::from_members(members)?;
        entry.check()?;
        let canonical = entry.to_leaf()?;
        if canonical != bytes {
            return Err(LogError::LeafNotCanonical);
        }
        Ok(entry)
    }

    /// The canonical form as serde_jcs, a JCS writer of others, writes it.
    #[cfg(test)]
    pub(crate) fn canonical_by_serde_jcs(&self) -> Vec<u8> {
        serde_jcs::to_vec(&self.members()).unwrap_or_default()
    }
}

/// The entry's JSON: the flat members of its leaf.
impl Serialize for LogEntry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.members().serialize(serializer)
    }
}

/// Reads an entry's JSON in any member order and spacing (the canonical
/// form is [`LogEntry::from_leaf`]'s business), with the entry's rules.
impl<'de> Deserialize<'de> for LogEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<LogEntry, D::Error> {
        let entry = LogEntry::from_members(Members::deserialize(deserializer)?)
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
            args_hash: None,
        };
        [
            LogEvent::TokenIssued(issued),
            LogEvent::TokenRevoked(TokenRevoked {
                jth: jth(2),
                cause: jth(3),
                reason: Some("compromised \"key\"\n\u{e9}\u{1f600}".into()),
            }),
            LogEvent::RecordCreated(created.clone()),
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
            LogEvent::ApprovalDecided(ApprovalDecided {
                aar_id: AarId::new(ulid(7)),
                decision: ApprovalDecision::Approved,
                note: Some("ok for \"Q3\"\n".into()),
                by: Some(KeyId::new(ulid(9))),
            }),
            LogEvent::ApprovalDecided(ApprovalDecided {
                aar_id: AarId::new(ulid(7)),
                decision: ApprovalDecision::Expired,
                note: None,
                by: None,
            }),
            LogEvent::RecordCreated(RecordCreated {
                status: Status::AwaitingApproval,
                result: None,
                result_hash: None,
                args_hash: Some(ArgsHash::from_digest(&[11; 32])),
                ..created.clone()
            }),
            LogEvent::VouchCreated(VouchCreated {
                vouch_id: VouchId::new(ulid(10)),
                by: VouchPrincipal {
                    by_key: Some(KeyId::new(ulid(9))),
                    by_agent: None,
                },
                agent_id: AgentId::parse("summariser").unwrap(),
                weight_ppm: 750_000,
                reason: Some("reviewed its first week".into()),
                expires_at: Some(1_802_592_000_000),
            }),
            LogEvent::VouchWithdrawn(VouchWithdrawn {
                vouch_id: VouchId::new(ulid(10)),
                by: VouchPrincipal {
                    by_key: None,
                    by_agent: Some(AgentId::parse("planner").unwrap()),
                },
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
            // JCS sorts members; serde_json over sorted members writes the
            // same bytes.
            assert_eq!(
                entry.canonical_by_serde_jcs(),
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

    proptest::proptest! {
        /// serde_json over sorted members (which writes and checks
        /// leaves) and serde_jcs write the same bytes for any text and any
        /// number an entry may hold.
        #[test]
        fn both_writers_agree(
            reason in "[\\PC\n\t\"\\\\/\u{2028}\u{2029}\u{fffd}]{0,40}",
            note in proptest::option::of("\\PC{0,40}"),
            at in 0i64..=(1 << 53) - 1,
            spend in 0u64..=1_000_000_000_000_000,
        ) {
            let mut entries = samples();
            entries[1].at = at;
            let LogEvent::TokenRevoked(revoked) = &mut entries[1].event else { unreachable!() };
            revoked.reason = Some(reason);
            let LogEvent::RecordRated(rated) = &mut entries[4].event else { unreachable!() };
            rated.note = note;
            let LogEvent::RecordCompleted(completed) = &mut entries[3].event else { unreachable!() };
            completed.spend_micros = spend;
            for entry in entries {
                let leaf = entry.to_leaf().unwrap();
                proptest::prop_assert_eq!(&entry.canonical_by_serde_jcs(), &leaf);
                proptest::prop_assert_eq!(LogEntry::from_leaf(&leaf), Ok(entry));
            }
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
        let LogEvent::ApprovalDecided(approved) = &mut entries[5].event else {
            panic!()
        };
        approved.by = None;
        let LogEvent::ApprovalDecided(expired) = &mut entries[6].event else {
            panic!()
        };
        expired.note = Some("too late".into());
        let LogEvent::RecordCreated(awaiting) = &mut entries[7].event else {
            panic!()
        };
        awaiting.deny_reason = Some(DenyReason::ApprovalRequired);
        let LogEvent::VouchCreated(vouch) = &mut entries[8].event else {
            panic!()
        };
        vouch.weight_ppm = MAX_VOUCH_WEIGHT_PPM + 1;
        let LogEvent::VouchWithdrawn(withdrawn) = &mut entries[9].event else {
            panic!()
        };
        withdrawn.by.by_key = Some(KeyId::new(ulid(9)));
        let mut more = samples();
        let LogEvent::VouchCreated(nobody) = &mut more[8].event else {
            panic!()
        };
        nobody.by.by_key = None;
        let mut weightless = samples().swap_remove(8);
        let LogEvent::VouchCreated(vouch) = &mut weightless.event else {
            panic!()
        };
        vouch.weight_ppm = 0;
        entries.push(weightless);
        let LogEvent::ApprovalDecided(expired) = &mut more[6].event else {
            panic!()
        };
        expired.by = Some(KeyId::new(ulid(9)));
        let LogEvent::ApprovalDecided(long) = &mut more[5].event else {
            panic!()
        };
        long.note = Some("n".repeat(MAX_APPROVAL_NOTE_CHARS + 1));
        entries.push(more.swap_remove(8));
        entries.push(more.swap_remove(6));
        entries.push(more.swap_remove(5));
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
