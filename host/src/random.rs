//! Randomness from the operating system, for ids, keys and secrets. Core
//! never draws any; the host does here and passes the bytes in.

use mandate_core::Ulid;

use crate::clock::Now;

/// `N` bytes from the operating system's generator.
pub fn bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    // Without a working OS generator no key or id would be safe to hand out.
    getrandom::getrandom(&mut out).expect("the operating system's random generator failed");
    out
}

/// A fresh ULID for `now`.
pub fn ulid(now: Now) -> Ulid {
    let millis = u64::try_from(now.ms()).unwrap_or(0).min(Ulid::MAX_MILLIS);
    Ulid::new(millis, bytes()).expect("the time is clamped to the ULID range")
}
