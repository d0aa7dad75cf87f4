//! Proof Key for Code Exchange (RFC 7636), S256 only.
//!
//! - A **code verifier** is 43 to 128 characters of RFC 3986 `unreserved`
//!   (`A-Z a-z 0-9 - . _ ~`), RFC 7636 §4.1.
//! - Its **S256 challenge** is `BASE64URL(SHA256(ASCII(verifier)))`, always
//!   43 characters (32 bytes, unpadded), RFC 7636 §4.2. The general ABNF of
//!   §4.2 allows 43–128 characters because `plain` exists; an S256
//!   challenge of another length cannot come from any verifier, so it is
//!   refused at the authorization endpoint instead of failing at the token
//!   endpoint.
//! - `plain` is never accepted, and an absent `code_challenge_method`
//!   means `plain` (RFC 7636 §4.3), so it is refused too: RFC 9700 §2.1.1
//!   and the MCP specification require S256 ("Authorization Code
//!   Protection"). The authorization endpoint answers `invalid_request`
//!   (RFC 7636 §4.4.1).
//! - At the token endpoint the server recomputes the challenge from the
//!   verifier and compares it with the stored one in constant time (RFC
//!   7636 §4.6); a mismatch is `invalid_grant`.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use super::OAuthError;
use crate::b64;
use crate::limits::{MAX_CODE_VERIFIER_LEN, MIN_CODE_VERIFIER_LEN, S256_CHALLENGE_LEN};

/// The only `code_challenge_method` accepted.
pub const S256: &str = "S256";

/// Why a PKCE parameter is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PkceError {
    #[error("code_challenge_method must be S256 (absent means plain, which is not accepted)")]
    MethodNotS256,
    #[error("code_challenge is required")]
    ChallengeMissing,
    #[error("code_challenge must be 43 base64url characters (an S256 challenge)")]
    ChallengeInvalid,
    #[error("code_verifier is required")]
    VerifierMissing,
    #[error("code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~")]
    VerifierInvalid,
    #[error("code_verifier does not match the code_challenge")]
    Mismatch,
}

impl PkceError {
    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            PkceError::MethodNotS256 => "pkce_method_not_s256",
            PkceError::ChallengeMissing => "code_challenge_missing",
            PkceError::ChallengeInvalid => "code_challenge_invalid",
            PkceError::VerifierMissing => "code_verifier_missing",
            PkceError::VerifierInvalid => "code_verifier_invalid",
            PkceError::Mismatch => "code_verifier_mismatch",
        }
    }

    /// The OAuth `error`: `invalid_request` for a malformed or missing
    /// parameter, `invalid_grant` for a verifier that does not match.
    pub fn oauth_error(&self) -> OAuthError {
        OAuthError::for_code(self.code())
    }
}

/// A code verifier (RFC 7636 §4.1).
#[derive(Clone, PartialEq, Eq)]
pub struct CodeVerifier(String);

impl std::fmt::Debug for CodeVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A verifier is a secret until the code is redeemed.
        f.write_str("CodeVerifier(..)")
    }
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

impl CodeVerifier {
    /// Reads a verifier: 43–128 unreserved characters.
    pub fn parse(text: &str) -> Result<CodeVerifier, PkceError> {
        let valid = (MIN_CODE_VERIFIER_LEN..=MAX_CODE_VERIFIER_LEN).contains(&text.len())
            && text.bytes().all(is_unreserved);
        if valid {
            Ok(CodeVerifier(text.to_owned()))
        } else {
            Err(PkceError::VerifierInvalid)
        }
    }

    /// A verifier made from 32 random bytes the caller draws (RFC 7636
    /// §4.1's recommendation: 43 base64url characters).
    pub fn from_random(random: [u8; 32]) -> CodeVerifier {
        CodeVerifier(b64::encode(random))
    }

    /// The verifier's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its S256 challenge (RFC 7636 §4.2).
    pub fn s256(&self) -> CodeChallenge {
        CodeChallenge(b64::encode(Sha256::digest(self.0.as_bytes())))
    }
}

/// An S256 code challenge, as an authorization request sends it and the
/// server keeps it with the code.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CodeChallenge(String);

impl CodeChallenge {
    /// Reads an S256 challenge: 43 base64url characters that decode
    /// strictly to 32 bytes.
    pub fn parse(text: &str) -> Result<CodeChallenge, PkceError> {
        let decoded = b64::ENGINE.decode(text).ok();
        if text.len() == S256_CHALLENGE_LEN && decoded.is_some_and(|d| d.len() == 32) {
            Ok(CodeChallenge(text.to_owned()))
        } else {
            Err(PkceError::ChallengeInvalid)
        }
    }

    /// The challenge of an authorization request: `code_challenge` present
    /// and well formed, `code_challenge_method` exactly `S256` (RFC 7636
    /// §4.3, §4.4.1). The method is checked first: a `plain` request is
    /// refused as a downgrade whatever its challenge looks like.
    pub fn from_request(
        challenge: Option<&str>,
        method: Option<&str>,
    ) -> Result<CodeChallenge, PkceError> {
        if method != Some(S256) {
            return Err(PkceError::MethodNotS256);
        }
        CodeChallenge::parse(challenge.ok_or(PkceError::ChallengeMissing)?)
    }

    /// The challenge's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the token request's `code_verifier` proves this challenge:
    /// present, well formed, and its S256 equal to this one, compared in
    /// constant time (RFC 7636 §4.6).
    pub fn verify(&self, verifier: Option<&str>) -> Result<(), PkceError> {
        let verifier = CodeVerifier::parse(verifier.ok_or(PkceError::VerifierMissing)?)?;
        let computed = verifier.s256();
        if bool::from(computed.0.as_bytes().ct_eq(self.0.as_bytes())) {
            Ok(())
        } else {
            Err(PkceError::Mismatch)
        }
    }
}

impl TryFrom<String> for CodeChallenge {
    type Error = PkceError;
    fn try_from(text: String) -> Result<CodeChallenge, PkceError> {
        CodeChallenge::parse(&text)
    }
}

impl From<CodeChallenge> for String {
    fn from(challenge: CodeChallenge) -> String {
        challenge.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7636 Appendix B: the specification's own example.
    const APPENDIX_B_VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const APPENDIX_B_CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    #[test]
    fn rfc_7636_appendix_b() {
        let verifier = CodeVerifier::parse(APPENDIX_B_VERIFIER).unwrap();
        assert_eq!(verifier.s256().as_str(), APPENDIX_B_CHALLENGE);
        let challenge =
            CodeChallenge::from_request(Some(APPENDIX_B_CHALLENGE), Some("S256")).unwrap();
        assert_eq!(challenge.verify(Some(APPENDIX_B_VERIFIER)), Ok(()));
        // Appendix B's verifier is the base64url of these 32 octets.
        let octets: [u8; 32] = [
            116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186, 22, 212,
            37, 77, 105, 214, 191, 240, 91, 88, 5, 88, 83, 132, 141, 121,
        ];
        assert_eq!(
            CodeVerifier::from_random(octets).as_str(),
            APPENDIX_B_VERIFIER
        );
    }

    /// The plan's §5.1 "PKCE downgrade" table, as far as core judges it.
    #[test]
    fn pkce_downgrade_is_refused() {
        let good = APPENDIX_B_CHALLENGE;
        for (challenge, method, expect) in [
            (None, Some("S256"), PkceError::ChallengeMissing),
            (Some(good), Some("plain"), PkceError::MethodNotS256),
            (Some(good), None, PkceError::MethodNotS256),
            (Some(good), Some("s256"), PkceError::MethodNotS256),
            (Some(APPENDIX_B_VERIFIER), None, PkceError::MethodNotS256),
            (
                Some("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-c"),
                Some("S256"),
                PkceError::ChallengeInvalid,
            ),
            (
                Some("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cMx"),
                Some("S256"),
                PkceError::ChallengeInvalid,
            ),
            (
                Some("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw+cM"),
                Some("S256"),
                PkceError::ChallengeInvalid,
            ),
            (
                Some("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cN"),
                Some("S256"),
                PkceError::ChallengeInvalid,
            ),
            (Some(""), Some("S256"), PkceError::ChallengeInvalid),
        ] {
            assert_eq!(
                CodeChallenge::from_request(challenge, method),
                Err(expect),
                "{challenge:?} {method:?}"
            );
            assert_eq!(expect.oauth_error(), OAuthError::InvalidRequest);
        }
        let challenge = CodeChallenge::parse(good).unwrap();
        let other = CodeVerifier::from_random([7; 32]);
        let too_short = "a".repeat(42);
        let too_long = "a".repeat(129);
        for (verifier, expect) in [
            (None, PkceError::VerifierMissing),
            (Some(other.as_str()), PkceError::Mismatch),
            (Some(good), PkceError::Mismatch),
            (Some(too_short.as_str()), PkceError::VerifierInvalid),
            (Some(too_long.as_str()), PkceError::VerifierInvalid),
            (
                Some("dBjftJeZ4CVP+mB92K27uhbUJU1p1r/wW1gFWFOEjXk"),
                PkceError::VerifierInvalid,
            ),
            (
                Some("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk "),
                PkceError::VerifierInvalid,
            ),
            (
                Some("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEj\u{e9}"),
                PkceError::VerifierInvalid,
            ),
        ] {
            assert_eq!(challenge.verify(verifier), Err(expect), "{verifier:?}");
        }
        assert_eq!(PkceError::Mismatch.oauth_error(), OAuthError::InvalidGrant);
        assert_eq!(
            PkceError::VerifierInvalid.oauth_error(),
            OAuthError::InvalidRequest
        );
    }

    #[test]
    fn verifier_lengths_and_alphabet() {
        for len in [43, 64, 128] {
            let text = "A-._~z9".chars().cycle().take(len).collect::<String>();
            let verifier = CodeVerifier::parse(&text).unwrap();
            let challenge = verifier.s256();
            assert_eq!(challenge.as_str().len(), S256_CHALLENGE_LEN);
            assert_eq!(
                CodeChallenge::parse(challenge.as_str()),
                Ok(challenge.clone())
            );
            assert_eq!(challenge.verify(Some(&text)), Ok(()));
        }
        assert_eq!(
            format!("{:?}", CodeVerifier::from_random([1; 32])),
            "CodeVerifier(..)"
        );
    }

    #[test]
    fn codes_are_in_the_table() {
        for e in [
            PkceError::MethodNotS256,
            PkceError::ChallengeMissing,
            PkceError::ChallengeInvalid,
            PkceError::VerifierMissing,
            PkceError::VerifierInvalid,
            PkceError::Mismatch,
        ] {
            assert!(super::super::listed(e.code()), "{}", e.code());
        }
    }
}
