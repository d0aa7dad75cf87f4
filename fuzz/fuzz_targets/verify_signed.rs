//! Structure-aware: the fuzzer writes the header and the claims, and the
//! target signs them with the trusted key, so every input reaches the claim
//! parser and the consistency checks behind the signature. Whatever verifies
//! must re-sign to a token that verifies to the same claims.

#![no_main]

use std::sync::LazyLock;

use arbitrary::Arbitrary;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::Signer as _;
use libfuzzer_sys::fuzz_target;
use mandate_core::{Jwks, SigningKey, VerifyOptions, sign, verify};

const SECRET: [u8; 32] = [7; 32];

static KEY: LazyLock<SigningKey> = LazyLock::new(|| SigningKey::from_secret(&SECRET));
static KEYS: LazyLock<Jwks> = LazyLock::new(|| Jwks::from_signing_keys([&*KEY]));
static SIGNER: LazyLock<ed25519_dalek::SigningKey> = LazyLock::new(|| ed25519_dalek::SigningKey::from_bytes(&SECRET));

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    /// The header JSON; empty means the correct header.
    header: &'a [u8],
    claims: &'a [u8],
    now: i64,
    leeway: u8,
}

fuzz_target!(|input: Input<'_>| {
    let (key, keys) = (&*KEY, &*KEYS);
    let header = if input.header.is_empty() {
        format!(r#"{{"alg":"EdDSA","typ":"vat+jwt","kid":"{}"}}"#, key.kid()).into_bytes()
    } else {
        input.header.to_vec()
    };
    let signing_input = format!("{}.{}", URL_SAFE_NO_PAD.encode(header), URL_SAFE_NO_PAD.encode(input.claims));
    let signature = SIGNER.sign(signing_input.as_bytes());
    let token = format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()));
    let options = VerifyOptions {
        leeway_seconds: u64::from(input.leeway),
        issuer: None,
    };
    if let Ok(verified) = verify(&token, keys, input.now, &options) {
        let again = sign(&verified.claims, key).expect("verified claims sign again");
        let reverified = verify(&again, keys, input.now, &options).expect("re-signed claims verify");
        assert_eq!(reverified.claims, verified.claims);
    }
});
