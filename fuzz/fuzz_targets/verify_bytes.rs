//! Arbitrary bytes as a compact token, checked against the key set of the
//! conformance vectors (whose tokens seed the corpus): verification and the
//! unverified decoder refuse cleanly and never panic, and the time checks
//! agree with the claims of whatever verifies.

#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use mandate_core::{Jwks, VerifyOptions, decode_unverified, verify};

const NOW: i64 = 1_800_000_000;

static KEYS: LazyLock<Jwks> = LazyLock::new(|| {
    let vectors: serde_json::Value =
        serde_json::from_str(include_str!("../../tests/vectors/tokens.json")).expect("the vectors are JSON");
    Jwks::parse(vectors["jwks"].to_string().as_bytes()).expect("the vectors' key set parses")
});

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(verified) = verify(&text, &KEYS, NOW, &VerifyOptions::default()) {
        assert!(verified.claims.check_time(NOW, 60).is_ok());
        assert_eq!(decode_unverified(&text).map(|t| t.claims), Ok(verified.claims));
    } else {
        let _ = decode_unverified(&text);
    }
});
