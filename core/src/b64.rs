//! Strict base64url: the URL-safe alphabet, no padding, no stray trailing
//! bits. Anything else (`=`, `+`, `/`, whitespace, non-canonical final
//! characters) fails to decode.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// The one base64 engine of Mandate.
pub(crate) const ENGINE: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(false),
);

/// Standard base64 (RFC 4648 §4) with its padding, strictly: the form of
/// signed notes, checkpoints and tlog proofs. Missing or extra padding and
/// stray trailing bits fail to decode.
pub(crate) const STANDARD: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_encode_padding(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(false),
);

/// Encodes bytes as unpadded base64url.
pub(crate) fn encode(bytes: impl AsRef<[u8]>) -> String {
    ENGINE.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strictness() {
        assert_eq!(ENGINE.decode("_-8").unwrap(), vec![0xff, 0xef]);
        for bad in ["_-8=", "/+8", "_-8 ", "_-9", "A"] {
            assert!(ENGINE.decode(bad).is_err(), "{bad}");
        }
        assert_eq!(encode([0xff, 0xef]), "_-8");
        assert_eq!(STANDARD.decode("/+8=").unwrap(), vec![0xff, 0xef]);
        for bad in ["/+8", "/+8==", "_-8=", "/+9=", "/+8= "] {
            assert!(STANDARD.decode(bad).is_err(), "{bad}");
        }
    }
}
