//! Arbitrary bytes as a JWKS: parsing refuses cleanly; whatever parses holds
//! only usable keys and survives a round trip through its own document.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mandate_core::Jwks;

fuzz_target!(|data: &[u8]| {
    if let Ok(keys) = Jwks::parse(data) {
        assert!(!keys.is_empty());
        let document = serde_json::to_vec(&keys.to_jwk_set()).expect("a key set serialises");
        let again = Jwks::parse(&document).expect("a key set's own document parses");
        assert_eq!(again.kids().collect::<Vec<_>>(), keys.kids().collect::<Vec<_>>());
    }
});
