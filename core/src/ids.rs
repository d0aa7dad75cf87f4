//! Identifiers: every id Mandate hands out or accepts, as a newtype whose
//! constructor enforces its form, so a wrong string cannot reach the rules.
//!
//! Generated ids are `<prefix>_<ulid>` where `<ulid>` is 26 lowercase
//! Crockford base32 characters in ULID layout: 48 bits of unix milliseconds
//! followed by 80 random bits. Ids made later sort after ids made earlier.
//! This module never reads a clock or draws randomness: callers pass both in.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::limits::{MAX_AGENT_ID_LEN, ULID_LEN};

/// Crockford's base32 alphabet, lowercase (no i, l, o, u).
pub(crate) const CROCKFORD: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// Why a string is not a valid id of the kind asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("{kind} must start with `{prefix}`")]
    WrongPrefix {
        kind: &'static str,
        prefix: &'static str,
    },
    #[error("{kind} must end in 26 lowercase Crockford base32 characters")]
    BadUlid { kind: &'static str },
    #[error("{kind} must be `sha256:` followed by 64 lowercase hex digits")]
    BadDigest { kind: &'static str },
    #[error(
        "agent_id must be 1 to {MAX_AGENT_ID_LEN} characters of A-Z a-z 0-9 . _ -, starting with a letter or digit"
    )]
    BadAgentId,
    #[error("timestamp {0} ms does not fit the 48 bits of a ULID")]
    TimestampOutOfRange(u64),
    #[error("{kind} must be 43 base64url characters (a SHA-256 digest)")]
    BadB64Digest { kind: &'static str },
}

impl IdError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            IdError::WrongPrefix { .. } => "invalid_id_prefix",
            IdError::BadUlid { .. } => "invalid_id",
            IdError::BadDigest { .. } => "invalid_digest",
            IdError::BadAgentId => "invalid_agent_id",
            IdError::TimestampOutOfRange(_) => "timestamp_out_of_range",
            IdError::BadB64Digest { .. } => "invalid_digest",
        }
    }
}

/// A ULID: 48-bit unix milliseconds and 80 random bits, rendered as 26
/// lowercase Crockford base32 characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ulid(u128);

impl Ulid {
    /// The largest millisecond timestamp a ULID can hold.
    pub const MAX_MILLIS: u64 = (1 << 48) - 1;

    /// Builds a ULID from a timestamp in unix milliseconds and 10 random bytes.
    pub fn new(unix_millis: u64, random: [u8; 10]) -> Result<Ulid, IdError> {
        if unix_millis > Self::MAX_MILLIS {
            return Err(IdError::TimestampOutOfRange(unix_millis));
        }
        let mut value = u128::from(unix_millis) << 80;
        for (i, byte) in random.iter().enumerate() {
            value |= u128::from(*byte) << (8 * (9 - i));
        }
        Ok(Ulid(value))
    }

    /// The millisecond timestamp the id was made with.
    pub fn unix_millis(self) -> u64 {
        // The shift leaves at most 48 significant bits.
        u64::try_from(self.0 >> 80).unwrap_or(u64::MAX)
    }

    fn encode(self) -> [u8; ULID_LEN] {
        let mut out = [b'0'; ULID_LEN];
        for (i, slot) in out.iter_mut().enumerate() {
            let shift = 5 * (ULID_LEN - 1 - i);
            let digit = ((self.0 >> shift) & 0x1f) as u8;
            *slot = CROCKFORD.get(usize::from(digit)).copied().unwrap_or(b'0');
        }
        out
    }

    fn parse(text: &str) -> Option<Ulid> {
        let bytes = text.as_bytes();
        if bytes.len() != ULID_LEN || bytes.first().is_none_or(|first| *first > b'7') {
            return None;
        }
        let mut value: u128 = 0;
        for byte in bytes {
            let digit = CROCKFORD.iter().position(|c| c == byte)?;
            value = (value << 5) | digit as u128;
        }
        Some(Ulid(value))
    }
}

impl fmt::Display for Ulid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let encoded = self.encode();
        // Every byte comes from the ASCII alphabet above.
        f.write_str(std::str::from_utf8(&encoded).map_err(|_| fmt::Error)?)
    }
}

/// Display, and conversions from and to `String` (the serde form), for a
/// text id newtype with a `parse`.
macro_rules! text_conversions {
    ($name:ident) => {
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(text: String) -> Result<$name, IdError> {
                $name::parse(&text)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
    };
}

/// Declares a `<prefix>_<ulid>` id newtype with parsing, display and serde.
macro_rules! ulid_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// The prefix every id of this kind starts with.
            pub const PREFIX: &'static str = $prefix;

            /// Makes a new id from a ULID.
            pub fn new(ulid: Ulid) -> $name {
                $name(format!("{}{}", $prefix, ulid))
            }

            /// Parses an id, rejecting every other form.
            pub fn parse(text: &str) -> Result<$name, IdError> {
                let rest = text.strip_prefix($prefix).ok_or(IdError::WrongPrefix {
                    kind: $kind,
                    prefix: $prefix,
                })?;
                Ulid::parse(rest).ok_or(IdError::BadUlid { kind: $kind })?;
                Ok($name(text.to_owned()))
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The ULID part of the id.
            pub fn ulid(&self) -> Ulid {
                Ulid::parse(self.0.get($prefix.len()..).unwrap_or_default())
                    .unwrap_or(Ulid(0))
            }
        }

        text_conversions!($name);

        impl std::str::FromStr for $name {
            type Err = IdError;
            fn from_str(text: &str) -> Result<$name, IdError> {
                $name::parse(text)
            }
        }
    };
}

ulid_id!(
    /// An action record id, `aar_<ulid>`.
    AarId,
    "aar_id",
    "aar_"
);
ulid_id!(
    /// A workflow id shared by every token and record of one chain, `prov_<ulid>`.
    ProvenanceRef,
    "provenance_ref",
    "prov_"
);
ulid_id!(
    /// An organisation, `org_<ulid>`: the wall every key, token, agent,
    /// record and workflow stands behind.
    OrgId,
    "org_id",
    "org_"
);
ulid_id!(
    /// An API key's id, `key_<ulid>` (never the key itself).
    KeyId,
    "key_id",
    "key_"
);
ulid_id!(
    /// An approval a record waits for, `apr_<ulid>`.
    ApprovalId,
    "approval_id",
    "apr_"
);
ulid_id!(
    /// A webhook endpoint of an organisation, `wh_<ulid>`.
    WebhookId,
    "webhook_id",
    "wh_"
);
ulid_id!(
    /// A vouch of the trust graph, `vch_<ulid>`.
    VouchId,
    "vouch_id",
    "vch_"
);

/// Whether a token is the root of its chain or was delegated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JtiKind {
    /// `vat_root_<ulid>`: issued to an agent on a verified human's authority.
    Root,
    /// `vat_del_<ulid>`: delegated from another token.
    Delegated,
}

/// A token id: `vat_root_<ulid>` for root tokens, `vat_del_<ulid>` for
/// delegated ones.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Jti(String);

impl Jti {
    /// Prefix of root token ids.
    pub const ROOT_PREFIX: &'static str = "vat_root_";
    /// Prefix of delegated token ids.
    pub const DELEGATED_PREFIX: &'static str = "vat_del_";

    /// A root token id.
    pub fn root(ulid: Ulid) -> Jti {
        Jti(format!("{}{ulid}", Self::ROOT_PREFIX))
    }

    /// A delegated token id.
    pub fn delegated(ulid: Ulid) -> Jti {
        Jti(format!("{}{ulid}", Self::DELEGATED_PREFIX))
    }

    /// Parses a token id of either kind.
    pub fn parse(text: &str) -> Result<Jti, IdError> {
        let rest = text
            .strip_prefix(Self::ROOT_PREFIX)
            .or_else(|| text.strip_prefix(Self::DELEGATED_PREFIX))
            .ok_or(IdError::WrongPrefix {
                kind: "jti",
                prefix: "vat_root_` or `vat_del_",
            })?;
        Ulid::parse(rest).ok_or(IdError::BadUlid { kind: "jti" })?;
        Ok(Jti(text.to_owned()))
    }

    /// Root or delegated.
    pub fn kind(&self) -> JtiKind {
        if self.0.starts_with(Self::ROOT_PREFIX) {
            JtiKind::Root
        } else {
            JtiKind::Delegated
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The token's jti hash: what other tokens carry to name it.
    pub fn hash(&self) -> Jth {
        use sha2::Digest as _;
        Jth::from_digest(&sha2::Sha256::digest(self.0.as_bytes()).into())
    }
}

impl fmt::Display for Jti {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Jti {
    type Error = IdError;
    fn try_from(text: String) -> Result<Jti, IdError> {
        Jti::parse(&text)
    }
}

impl From<Jti> for String {
    fn from(id: Jti) -> String {
        id.0
    }
}

impl std::str::FromStr for Jti {
    type Err = IdError;
    fn from_str(text: &str) -> Result<Jti, IdError> {
        Jti::parse(text)
    }
}

/// Declares a newtype for a SHA-256 digest written as 43 characters of
/// unpadded base64url.
macro_rules! b64_digest_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Parses 43 base64url characters that decode to 32 bytes.
            pub fn parse(text: &str) -> Result<$name, IdError> {
                use base64::Engine as _;
                let digest = crate::b64::ENGINE
                    .decode(text)
                    .ok()
                    .filter(|bytes| bytes.len() == 32);
                match digest {
                    Some(_) => Ok($name(text.to_owned())),
                    None => Err(IdError::BadB64Digest { kind: $kind }),
                }
            }

            /// Wraps a 32-byte digest.
            pub fn from_digest(digest: &[u8; 32]) -> $name {
                $name(crate::b64::encode(digest))
            }

            /// The digest as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        text_conversions!($name);
    };
}

b64_digest_id!(
    /// A jti hash (`jth`): base64url of SHA-256 of a jti's ASCII. Tokens name
    /// their parent and ancestors by it, never by jti, because a jti names a
    /// token that an agent call may act with; its hash names it and nothing
    /// more.
    Jth,
    "jth"
);
b64_digest_id!(
    /// An RFC 7638 JWK SHA-256 thumbprint of a holder's public key, the `jkt`
    /// of a bound token's `cnf` claim (RFC 9449).
    Jkt,
    "jkt"
);

b64_digest_id!(
    /// base64url SHA-256 of a token's stored claims JSON text, as the record
    /// log names what was issued.
    ClaimsDigest,
    "claims_sha256"
);

impl ClaimsDigest {
    /// The digest of a claims JSON text.
    pub fn of(claims_json: &str) -> ClaimsDigest {
        use sha2::Digest as _;
        ClaimsDigest::from_digest(&sha2::Sha256::digest(claims_json.as_bytes()).into())
    }
}

/// The id a developer gives an agent at issue time. In tokens it appears as
/// `sub = "agent:<agent_id>"`; the reputation endpoint returns it the same way.
///
/// Form: 1 to 128 characters of `A-Z a-z 0-9 . _ -`, starting with a letter or
/// digit. No `:`, so `agent:<id>` always splits one way.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AgentId(String);

impl AgentId {
    /// The prefix of the agent's subject in tokens and in reputation answers.
    pub const SUBJECT_PREFIX: &'static str = "agent:";

    /// Parses a bare agent id (`research-bot`).
    pub fn parse(text: &str) -> Result<AgentId, IdError> {
        let bytes = text.as_bytes();
        let valid_first = bytes.first().is_some_and(u8::is_ascii_alphanumeric);
        let valid_rest = bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !valid_first || !valid_rest || bytes.len() > MAX_AGENT_ID_LEN {
            return Err(IdError::BadAgentId);
        }
        Ok(AgentId(text.to_owned()))
    }

    /// An id core builds from characters of the form only (see
    /// `oauth::agent`, whose tests parse what it builds).
    pub(crate) fn built(text: String) -> AgentId {
        AgentId(text)
    }

    /// Parses an agent id given bare (`research-bot`) or as a subject
    /// (`agent:research-bot`).
    pub fn parse_lenient(text: &str) -> Result<AgentId, IdError> {
        AgentId::parse(text.strip_prefix(Self::SUBJECT_PREFIX).unwrap_or(text))
    }

    /// Parses a token subject, which must be `agent:<agent_id>`.
    pub fn from_subject(subject: &str) -> Result<AgentId, IdError> {
        let bare = subject
            .strip_prefix(Self::SUBJECT_PREFIX)
            .ok_or(IdError::WrongPrefix {
                kind: "sub",
                prefix: Self::SUBJECT_PREFIX,
            })?;
        AgentId::parse(bare)
    }

    /// `agent:<agent_id>`.
    pub fn subject(&self) -> String {
        format!("{}{}", Self::SUBJECT_PREFIX, self.0)
    }

    /// The bare id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for AgentId {
    type Error = IdError;
    fn try_from(text: String) -> Result<AgentId, IdError> {
        AgentId::parse(&text)
    }
}

impl From<AgentId> for String {
    fn from(id: AgentId) -> String {
        id.0
    }
}

/// Checks the `sha256:<64 lowercase hex>` form.
fn is_sha256_ref(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// Formats 32 bytes as `sha256:<64 lowercase hex>`.
pub(crate) fn sha256_ref_text(digest: &[u8; 32]) -> String {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(71);
    text.push_str("sha256:");
    for byte in digest {
        // Writing to a String cannot fail.
        let _ = write!(text, "{byte:02x}");
    }
    text
}

/// Declares a `sha256:<hex>` newtype.
macro_rules! digest_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Parses `sha256:<64 lowercase hex>`.
            pub fn parse(text: &str) -> Result<$name, IdError> {
                if is_sha256_ref(text) {
                    Ok($name(text.to_owned()))
                } else {
                    Err(IdError::BadDigest { kind: $kind })
                }
            }

            /// Wraps a 32-byte digest.
            pub fn from_digest(digest: &[u8; 32]) -> $name {
                $name(sha256_ref_text(digest))
            }

            /// The reference as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        text_conversions!($name);
    };
}

digest_id!(
    /// Reference to the verified human at the root of a chain: an HMAC of their
    /// identity under a per-deployment secret (see [`crate::human_ref`]).
    HumanRef,
    "human_ref"
);
digest_id!(
    /// SHA-256 of an action's result, `sha256:<hex>`, sent by the agent.
    ResultHash,
    "result_hash"
);
digest_id!(
    /// SHA-256 of an attempt's arguments as RFC 8785 canonical JSON,
    /// `sha256:<hex>` (see [`crate::policy::Args::hash`]).
    ArgsHash,
    "args_hash"
);

#[cfg(test)]
mod tests {
    use super::*;

    fn ulid(millis: u64, fill: u8) -> Ulid {
        Ulid::new(millis, [fill; 10]).unwrap()
    }

    #[test]
    fn ulid_known_encodings() {
        assert_eq!(ulid(0, 0).to_string(), "00000000000000000000000000");
        assert_eq!(
            Ulid::new(Ulid::MAX_MILLIS, [0xff; 10]).unwrap().to_string(),
            "7zzzzzzzzzzzzzzzzzzzzzzzzz"
        );
        // The ULID spec's example timestamp 1469918176385 encodes as 01ARYZ6S41.
        assert!(
            ulid(1_469_918_176_385, 0)
                .to_string()
                .starts_with("01aryz6s41")
        );
    }

    #[test]
    fn ulid_round_trips_and_keeps_millis() {
        let id = Ulid::new(1_700_000_000_123, [7, 1, 2, 3, 4, 5, 6, 7, 8, 9]).unwrap();
        assert_eq!(Ulid::parse(&id.to_string()), Some(id));
        assert_eq!(id.unix_millis(), 1_700_000_000_123);
    }

    #[test]
    fn ulid_rejects_out_of_range_time() {
        assert_eq!(
            Ulid::new(1 << 48, [0; 10]),
            Err(IdError::TimestampOutOfRange(1 << 48))
        );
    }

    #[test]
    fn ids_sort_by_time() {
        let early = AarId::new(ulid(1_000, 0xff));
        let late = AarId::new(ulid(1_001, 0x00));
        assert!(early < late);
    }

    #[test]
    fn parse_rejects_every_other_form() {
        let good = format!("aar_{}", ulid(5, 3));
        assert!(AarId::parse(&good).is_ok());
        for bad in [
            "aar_".to_owned(),
            good.to_uppercase(),
            good.replace("aar_", "AAR_"),
            format!("{good}0"),
            good[..good.len() - 1].to_owned(),
            "aar_8zzzzzzzzzzzzzzzzzzzzzzzzz".to_owned(),
            "aar_0000000000000000000000000i".to_owned(),
            "aar_0000000000000000000000000u".to_owned(),
            format!(" {good}"),
            format!("prov_{}", ulid(5, 3)),
        ] {
            assert!(AarId::parse(&bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(
            ProvenanceRef::parse("aar_00000000000000000000000000"),
            Err(IdError::WrongPrefix {
                kind: "provenance_ref",
                prefix: "prov_"
            })
        );
        assert_eq!(
            AarId::parse("aar_0000000000000000000000000I"),
            Err(IdError::BadUlid { kind: "aar_id" })
        );
    }

    #[test]
    fn jti_kinds() {
        let root = Jti::root(ulid(9, 9));
        let child = Jti::delegated(ulid(9, 9));
        assert_eq!(root.kind(), JtiKind::Root);
        assert_eq!(child.kind(), JtiKind::Delegated);
        assert!(root.as_str().starts_with("vat_root_"));
        assert!(child.as_str().starts_with("vat_del_"));
        assert_eq!(Jti::parse(root.as_str()), Ok(root));
        assert!(Jti::parse("vat_00000000000000000000000000").is_err());
        assert_eq!(
            Jti::parse("vat_root_000"),
            Err(IdError::BadUlid { kind: "jti" })
        );
    }

    #[test]
    fn jti_hashes() {
        let jti = Jti::parse("vat_root_00000000000000000000000000").unwrap();
        let jth = jti.hash();
        assert_eq!(jth.as_str(), "V3RlwE5lFcp5G5x2OXaaVn5WY2UjdQIxt-N5vJCkGrs");
        assert_eq!(Jth::parse(jth.as_str()), Ok(jth.clone()));
        assert_ne!(Jti::root(ulid(9, 8)).hash(), jth);
        for bad in [
            "",
            "vat_root_00000000000000000000000000",
            &format!("{jth}="),
            &jth.as_str()[..42],
            &format!("{jth}A"),
            &jth.as_str().replace(|c: char| c.is_ascii_alphabetic(), "+"),
        ] {
            assert_eq!(
                Jth::parse(bad),
                Err(IdError::BadB64Digest { kind: "jth" }),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn agent_ids() {
        for good in ["a", "research-bot", "Agent_7.v2", &"x".repeat(128)] {
            assert!(AgentId::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "-x",
            ".x",
            "a b",
            "a:b",
            "ä",
            "a/b",
            &"x".repeat(129),
            "a\0",
        ] {
            assert_eq!(AgentId::parse(bad), Err(IdError::BadAgentId), "{bad:?}");
        }
        let id = AgentId::parse("bot").unwrap();
        assert_eq!(id.subject(), "agent:bot");
        assert_eq!(AgentId::from_subject("agent:bot"), Ok(id.clone()));
        assert_eq!(AgentId::parse_lenient("agent:bot"), Ok(id.clone()));
        assert_eq!(AgentId::parse_lenient("bot"), Ok(id));
        assert!(AgentId::from_subject("bot").is_err());
    }

    #[test]
    fn digests() {
        let text = format!("sha256:{}", "ab".repeat(32));
        assert_eq!(HumanRef::parse(&text).unwrap().as_str(), text);
        assert_eq!(HumanRef::from_digest(&[0xab; 32]).as_str(), text);
        for bad in [
            "sha256:".to_owned(),
            format!("sha256:{}", "AB".repeat(32)),
            format!("sha512:{}", "ab".repeat(32)),
            format!("sha256:{}", "ab".repeat(33)),
            "ab".repeat(32),
        ] {
            assert_eq!(
                ResultHash::parse(&bad),
                Err(IdError::BadDigest {
                    kind: "result_hash"
                })
            );
        }
    }

    #[test]
    fn serde_enforces_form() {
        let id: Result<AarId, _> = serde_json::from_str("\"aar_bad\"");
        assert!(id.is_err());
        let id = AarId::new(ulid(1, 1));
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(serde_json::from_str::<AarId>(&json).unwrap(), id);
    }
}
