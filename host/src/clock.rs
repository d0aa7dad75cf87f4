//! The host's clock. Core never reads one; the host reads it here and passes
//! `now` down.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Unix time in milliseconds, from the system clock. Outside the request
/// path only (the CLI, start-up); a request reads its server's [`Clock`]
/// once and passes that [`Now`] down.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Unix time in seconds, from the system clock (see [`now_ms`]).
pub fn now_s() -> i64 {
    now_ms() / 1000
}

/// A moment, in unix milliseconds: what a request calls "now", read once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Now(i64);

impl Now {
    /// The moment `ms` unix milliseconds.
    pub fn from_ms(ms: i64) -> Now {
        Now(ms)
    }

    /// Unix milliseconds.
    pub fn ms(self) -> i64 {
        self.0
    }

    /// Unix seconds, as tokens count time.
    pub fn s(self) -> i64 {
        self.0.div_euclid(1000)
    }

    /// How long after `earlier` this is; zero when it is not after it.
    pub fn since(self, earlier: Now) -> Duration {
        Duration::from_millis(u64::try_from(self.0.saturating_sub(earlier.0)).unwrap_or(0))
    }
}

/// Where a server reads the time: the system clock, or (in tests) the
/// system clock moved forward on demand, so a test of expiry need not wait
/// for it.
#[derive(Debug, Clone, Default)]
pub struct Clock(Option<Arc<AtomicI64>>);

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock(None)
    }

    /// The system clock, plus whatever [`Clock::advance`] adds.
    pub fn shifted() -> Clock {
        Clock(Some(Arc::new(AtomicI64::new(0))))
    }

    /// The time now.
    pub fn now(&self) -> Now {
        Now(match &self.0 {
            None => now_ms(),
            Some(shift) => now_ms().saturating_add(shift.load(Ordering::SeqCst)),
        })
    }

    /// Moves a shifted clock forward by `by`; the system clock is left as
    /// it is.
    pub fn advance(&self, by: Duration) {
        if let Some(shift) = &self.0 {
            let by = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
            shift.fetch_add(by, Ordering::SeqCst);
        }
    }
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
    fn a_shifted_clock_jumps_when_told() {
        let clock = Clock::shifted();
        let start = clock.now();
        clock.advance(Duration::from_secs(3600));
        let later = clock.now();
        assert!(later.since(start) >= Duration::from_secs(3600));
        assert!(later.since(start) < Duration::from_secs(3660));
        assert_eq!(start.since(later), Duration::ZERO);
        assert_eq!(Now::from_ms(1_999).s(), 1);
        assert_eq!(Now::from_ms(-1).s(), -1);
        let system = Clock::system();
        system.advance(Duration::from_secs(3600));
        assert!(system.now().ms() - now_ms() < 60_000);
    }

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
