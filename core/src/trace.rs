//! W3C Trace Context: the `traceparent` header, read and written, and the
//! ids of a span started under it.
//!
//! Version `00` is `00-<trace-id>-<parent-id>-<trace-flags>`: 32, 16 and 2
//! lowercase hex digits; neither id may be all zeros. [`TraceParent::parse`]
//! reads it in this order, each refusal with its own [`TraceError`]:
//!
//! 1. leading and trailing spaces and tabs (HTTP's optional whitespace) are
//!    dropped;
//! 2. the version: two lowercase hex digits followed by `-`, and not `ff`
//!    (forbidden);
//! 3. the fields after it, separated by `-`: exactly three for version
//!    `00`; at least three for a higher version, whose further fields are
//!    ignored (the specification's rule for versions it does not know);
//! 4. the trace-id, then the parent-id, then the flags.
//!
//! For a higher version only the flags this version defines (sampled,
//! random trace id) are kept. Whatever version was read, a `TraceParent`
//! is written as version `00`, the highest this code knows.
//!
//! Not here: `tracestate` (vendors' opaque entries, which Mandate neither
//! reads nor writes), sampling decisions, and drawing random ids (callers
//! pass random bytes).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The only version written.
pub const VERSION: &str = "00";

/// Why a `traceparent` value was refused. The specification's answer to
/// each is the same: ignore the header and start a new trace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    #[error(
        "traceparent is not version-trace_id-parent_id-flags (version 00 has exactly four fields)"
    )]
    Malformed,
    #[error("traceparent's version must be two lowercase hex digits other than ff, then `-`")]
    InvalidVersion,
    #[error("traceparent's trace-id must be 32 lowercase hex digits")]
    InvalidTraceId,
    #[error("traceparent's trace-id must not be all zeros")]
    ZeroTraceId,
    #[error("traceparent's parent-id must be 16 lowercase hex digits")]
    InvalidParentId,
    #[error("traceparent's parent-id must not be all zeros")]
    ZeroParentId,
    #[error("traceparent's trace-flags must be 2 lowercase hex digits")]
    InvalidFlags,
}

impl TraceError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            TraceError::Malformed => "traceparent_malformed",
            TraceError::InvalidVersion => "traceparent_invalid_version",
            TraceError::InvalidTraceId => "traceparent_invalid_trace_id",
            TraceError::ZeroTraceId => "traceparent_zero_trace_id",
            TraceError::InvalidParentId => "traceparent_invalid_parent_id",
            TraceError::ZeroParentId => "traceparent_zero_parent_id",
            TraceError::InvalidFlags => "traceparent_invalid_flags",
        }
    }
}

/// Lowercase hex digits of exactly `N` bytes.
fn lower_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let bytes = text.as_bytes();
    if bytes.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (slot, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        let [high, low] = pair else { return None };
        *slot = (digit(*high)? << 4) | digit(*low)?;
    }
    Some(out)
}

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    bytes.iter().try_for_each(|b| write!(f, "{b:02x}"))
}

/// The id of a whole trace: 16 bytes, not all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TraceId([u8; 16]);

impl TraceId {
    /// A trace id from 16 random bytes; `ZeroTraceId` for all zeros.
    pub fn from_bytes(bytes: [u8; 16]) -> Result<TraceId, TraceError> {
        if bytes == [0; 16] {
            Err(TraceError::ZeroTraceId)
        } else {
            Ok(TraceId(bytes))
        }
    }

    pub fn to_bytes(self) -> [u8; 16] {
        self.0
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

/// The id of a span (`parent-id` in the header of the span's calls): 8
/// bytes, not all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SpanId([u8; 8]);

impl SpanId {
    /// A span id from 8 random bytes; `ZeroParentId` for all zeros.
    pub fn from_bytes(bytes: [u8; 8]) -> Result<SpanId, TraceError> {
        if bytes == [0; 8] {
            Err(TraceError::ZeroParentId)
        } else {
            Ok(SpanId(bytes))
        }
    }

    pub fn to_bytes(self) -> [u8; 8] {
        self.0
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

/// The 8 bits of `trace-flags`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TraceFlags(u8);

impl TraceFlags {
    /// The caller may have recorded the trace.
    pub const SAMPLED: u8 = 0x01;
    /// At least the right-most 7 bytes of the trace id are random.
    pub const RANDOM: u8 = 0x02;
    /// The flags this version of the specification defines.
    pub const KNOWN: u8 = Self::SAMPLED | Self::RANDOM;

    pub fn from_bits(bits: u8) -> TraceFlags {
        TraceFlags(bits)
    }

    pub fn bits(self) -> u8 {
        self.0
    }

    pub fn sampled(self) -> bool {
        self.0 & Self::SAMPLED != 0
    }

    pub fn random(self) -> bool {
        self.0 & Self::RANDOM != 0
    }
}

/// A `traceparent` header's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TraceParent {
    pub trace_id: TraceId,
    pub parent_id: SpanId,
    pub flags: TraceFlags,
}

impl TraceParent {
    /// Reads a header value (see the module docs for the rules and their
    /// order).
    pub fn parse(value: &str) -> Result<TraceParent, TraceError> {
        let value = value.trim_matches([' ', '\t']);
        let (version, rest) = value
            .split_at_checked(2)
            .ok_or(TraceError::InvalidVersion)?;
        let version = lower_hex::<1>(version).ok_or(TraceError::InvalidVersion)?;
        let rest = rest.strip_prefix('-').ok_or(TraceError::InvalidVersion)?;
        if version == [0xff] {
            return Err(TraceError::InvalidVersion);
        }
        let mut fields = rest.split('-');
        let (Some(trace_id), Some(parent_id), Some(flags)) =
            (fields.next(), fields.next(), fields.next())
        else {
            return Err(TraceError::Malformed);
        };
        if version == [0x00] && fields.next().is_some() {
            return Err(TraceError::Malformed);
        }
        let trace_id = lower_hex::<16>(trace_id).ok_or(TraceError::InvalidTraceId)?;
        let trace_id = TraceId::from_bytes(trace_id)?;
        let parent_id = lower_hex::<8>(parent_id).ok_or(TraceError::InvalidParentId)?;
        let parent_id = SpanId::from_bytes(parent_id)?;
        let [mut flags] = lower_hex::<1>(flags).ok_or(TraceError::InvalidFlags)?;
        if version != [0x00] {
            flags &= TraceFlags::KNOWN;
        }
        Ok(TraceParent {
            trace_id,
            parent_id,
            flags: TraceFlags(flags),
        })
    }

    /// A new trace: a fresh trace id and the id of its first span, both
    /// from random bytes the caller drew (so the random-trace-id flag is
    /// set), sampled or not.
    pub fn start(trace_id: TraceId, span_id: SpanId, sampled: bool) -> TraceParent {
        let sampled = if sampled { TraceFlags::SAMPLED } else { 0 };
        TraceParent {
            trace_id,
            parent_id: span_id,
            flags: TraceFlags(TraceFlags::RANDOM | sampled),
        }
    }

    /// The header of a call made from a new span under this one: the same
    /// trace id, the span's id (from random bytes the caller drew) as
    /// parent-id, the sampled and random-trace-id flags kept and the flags
    /// this version does not define cleared, as the specification asks of
    /// outgoing headers.
    pub fn child(&self, span_id: SpanId) -> TraceParent {
        TraceParent {
            trace_id: self.trace_id,
            parent_id: span_id,
            flags: TraceFlags(self.flags.0 & TraceFlags::KNOWN),
        }
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{VERSION}-{}-{}-{:02x}",
            self.trace_id, self.parent_id, self.flags.0
        )
    }
}

impl std::str::FromStr for TraceParent {
    type Err = TraceError;
    fn from_str(text: &str) -> Result<TraceParent, TraceError> {
        TraceParent::parse(text)
    }
}

impl TryFrom<String> for TraceParent {
    type Error = TraceError;
    fn try_from(text: String) -> Result<TraceParent, TraceError> {
        TraceParent::parse(&text)
    }
}

impl From<TraceParent> for String {
    fn from(value: TraceParent) -> String {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_specifications_example() {
        let parsed = TraceParent::parse(GOOD).unwrap();
        assert_eq!(
            parsed.trace_id.to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(parsed.parent_id.to_string(), "00f067aa0ba902b7");
        assert!(parsed.flags.sampled() && !parsed.flags.random());
        assert_eq!(parsed.to_string(), GOOD);
        assert_eq!(GOOD.parse::<TraceParent>(), Ok(parsed));
        let json = serde_json::to_string(&parsed).unwrap();
        assert_eq!(json, format!("\"{GOOD}\""));
        assert_eq!(serde_json::from_str::<TraceParent>(&json).unwrap(), parsed);
        assert!(serde_json::from_str::<TraceParent>("\"00-x\"").is_err());
    }

    #[test]
    fn refusals() {
        let t = "4bf92f3577b34da6a3ce929d0e0e4736";
        let p = "00f067aa0ba902b7";
        for (value, error) in [
            (String::new(), TraceError::InvalidVersion),
            (format!("ff-{t}-{p}-01"), TraceError::InvalidVersion),
            (format!("0-{t}-{p}-01"), TraceError::InvalidVersion),
            (format!("000-{t}-{p}-01"), TraceError::InvalidVersion),
            (format!("0A-{t}-{p}-01"), TraceError::InvalidVersion),
            (format!("00-{t}-{p}"), TraceError::Malformed),
            (format!("00-{t}-{p}-01-"), TraceError::Malformed),
            (format!("00-{t}-{p}-01-future"), TraceError::Malformed),
            (
                format!("00-{}-{p}-01", t.to_uppercase()),
                TraceError::InvalidTraceId,
            ),
            (format!("00-{t}0-{p}-01"), TraceError::InvalidTraceId),
            (
                format!("00-{}-{p}-01", "0".repeat(32)),
                TraceError::ZeroTraceId,
            ),
            (
                format!("00-{t}-{}-01", p.to_uppercase()),
                TraceError::InvalidParentId,
            ),
            (
                format!("00-{t}-{}-01", "0".repeat(16)),
                TraceError::ZeroParentId,
            ),
            (format!("00-{t}-{p}-1"), TraceError::InvalidFlags),
            (format!("00-{t}-{p}-0F"), TraceError::InvalidFlags),
            (format!("00-{t}-{p}-01."), TraceError::InvalidFlags),
            (format!("cc-{t}-{p}-01.future"), TraceError::InvalidFlags),
        ] {
            assert_eq!(TraceParent::parse(&value), Err(error), "{value:?}");
        }
    }

    #[test]
    fn higher_versions_and_whitespace() {
        let t = "4bf92f3577b34da6a3ce929d0e0e4736";
        let p = "00f067aa0ba902b7";
        let expected = TraceParent::parse(&format!("00-{t}-{p}-03")).unwrap();
        assert_eq!(TraceParent::parse(&format!("cc-{t}-{p}-ff")), Ok(expected));
        assert_eq!(
            TraceParent::parse(&format!("cc-{t}-{p}-07-what-the-future-holds")),
            Ok(expected)
        );
        let exact = format!("00-{t}-{p}-ff");
        assert_eq!(TraceParent::parse(&exact).unwrap().to_string(), exact);
        assert_eq!(
            TraceParent::parse(&format!(" \t{exact}\t "))
                .unwrap()
                .to_string(),
            exact
        );
    }

    #[test]
    fn children_and_new_traces() {
        let parent =
            TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff").unwrap();
        let span = SpanId::from_bytes([1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        assert_eq!(
            parent.child(span).to_string(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0102030405060708-03"
        );
        let trace = TraceId::from_bytes([0xab; 16]).unwrap();
        assert_eq!(
            TraceParent::start(trace, span, false).to_string(),
            "00-abababababababababababababababab-0102030405060708-02"
        );
        assert_eq!(TraceParent::start(trace, span, true).flags.bits(), 3);
        assert_eq!(TraceId::from_bytes([0; 16]), Err(TraceError::ZeroTraceId));
        assert_eq!(SpanId::from_bytes([0; 8]), Err(TraceError::ZeroParentId));
    }
}
