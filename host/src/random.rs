//! Randomness from the operating system, for ids, keys and secrets. Core
//! never draws any; the host does here and passes the bytes in.

use mandate_core::Ulid;

/// `N` bytes from the operating system's generator.
pub fn bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    // Without a working OS generator no key or id would be safe to hand out.
    getrandom::getrandom(&mut out).expect("the operating system's random generator failed");
    out
}

/// A fresh ULID for the current time.
pub fn ulid() -> Ulid {
    let millis = u64::try_from(crate::clock::now_ms())
        .unwrap_or(0)
        .min(Ulid::MAX_MILLIS);
    Ulid::new(millis, bytes()).expect("the time is clamped to the ULID range")
}
