//! The size of the token status lists a deployment serves for one million
//! tokens, with none, 1 % and 10 % of them revoked (spread at random over
//! the lists, from a fixed seed), signed as the server signs them: one list
//! per 65,536 tokens. Prints JSON for `cargo xtask bench`.
//! `status_sizes`

use mandate_core::limits::STATUS_LIST_SIZE;
use mandate_core::{
    SigningKey, StatusList, StatusListClaims, StatusType, StatusUri, sign_status_list,
};
use serde_json::json;

const TOKENS: u64 = 1_000_000;

/// A small deterministic generator (SplitMix64): the same revocations every
/// run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Bytes of the signed lists covering `TOKENS` tokens with `percent` of
/// them revoked.
fn signed_bytes(percent: u64, key: &SigningKey) -> anyhow::Result<(usize, usize)> {
    let lists = TOKENS.div_ceil(STATUS_LIST_SIZE);
    let mut rng = Rng(percent);
    let (mut compressed, mut signed) = (0, 0);
    for list in 0..lists {
        let mut bits = StatusList::new(STATUS_LIST_SIZE)?;
        let in_list = (TOKENS - list * STATUS_LIST_SIZE).min(STATUS_LIST_SIZE);
        for offset in 0..in_list {
            if rng.next() % 100 < percent {
                bits.set(offset, StatusType::INVALID)?;
            }
        }
        compressed += bits.compress().len();
        let claims = StatusListClaims {
            sub: StatusUri::for_list("https://mandate.example", list)?,
            iat: 1_800_000_000,
            exp: 1_800_086_400,
            ttl: 60,
        };
        signed += sign_status_list(&bits, &claims, key)?.len();
    }
    Ok((compressed, signed))
}

#[allow(clippy::print_stdout, reason = "the bench harness reads the JSON")]
fn main() -> anyhow::Result<()> {
    let key = SigningKey::from_secret(&[5; 32]);
    let mut sizes = serde_json::Map::new();
    for percent in [0, 1, 10] {
        let (compressed, signed) = signed_bytes(percent, &key)?;
        sizes.insert(
            percent.to_string(),
            json!({"compressed": compressed, "signed": signed}),
        );
    }
    println!(
        "{}",
        json!({"tokens": TOKENS, "lists": TOKENS.div_ceil(STATUS_LIST_SIZE), "revoked_percent": sizes})
    );
    Ok(())
}
