//! The host's clock. Core never reads one; the host reads it here and passes
//! `now` down.

use std::time::{SystemTime, UNIX_EPOCH};

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Unix time in milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Unix time in seconds.
pub fn now_s() -> i64 {
    now_ms() / 1000
}

/// ISO 8601 UTC with `Z`, to the millisecond when there are milliseconds.
pub fn iso_ms(unix_ms: i64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}

/// ISO 8601 UTC with `Z`, to the second.
pub fn iso_s(unix_s: i64) -> String {
    iso_ms(unix_s.saturating_mul(1000))
}

/// Parses an RFC 3339 timestamp into unix milliseconds.
pub fn parse_iso_ms(text: &str) -> Option<i64> {
    let t = OffsetDateTime::parse(text, &Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_with_z() {
        assert_eq!(iso_s(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_ms(1_800_000_000_123), "2027-01-15T08:00:00.123Z");
        assert_eq!(
            parse_iso_ms("2027-01-15T08:00:00.123Z"),
            Some(1_800_000_000_123)
        );
        assert_eq!(
            parse_iso_ms("2027-01-15T10:00:00+02:00"),
            Some(1_800_000_000_000)
        );
        assert_eq!(parse_iso_ms("yesterday"), None);
    }
}
