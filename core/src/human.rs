//! Human references: who stands behind a chain, without naming them.
//!
//! `human_ref = "sha256:" + hex(HMAC-SHA256(deployment secret, identity))`.
//! The identity is a canonical string per assurance level, so the same
//! person verified the same way always maps to the same reference within a
//! deployment, and the raw e-mail or subject never leaves the host.

use hmac::digest::KeyInit;
use hmac::{Hmac, Mac as _};
use sha2::Sha256;

use crate::ids::HumanRef;

/// Longest e-mail address accepted, in characters (RFC 5321's path limit).
pub const MAX_EMAIL_LEN: usize = 254;

/// Why an e-mail address was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "developer_email must be an address `local@domain` of at most {MAX_EMAIL_LEN} printable characters"
)]
pub struct EmailError;

impl EmailError {
    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        "invalid_email"
    }
}

/// A verified identity, in the canonical form that is hashed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// L1: the developer's e-mail address, lower-cased.
    Email(String),
    /// L2: an OIDC issuer and subject.
    Oidc { issuer: String, subject: String },
    /// L3: a named verifier and the subject it vouched for.
    Verified { verifier: String, subject: String },
}

impl Identity {
    /// An L1 identity from an e-mail address: one `@`, a non-empty local
    /// part and domain, printable ASCII or UTF-8 without spaces or controls.
    /// Compared case-insensitively.
    pub fn email(address: &str) -> Result<Identity, EmailError> {
        let ok = address.chars().count() <= MAX_EMAIL_LEN
            && address.split_once('@').is_some_and(|(local, domain)| {
                !local.is_empty() && !domain.is_empty() && !domain.contains('@')
            })
            && address
                .chars()
                .all(|c| !c.is_whitespace() && !c.is_control());
        if ok {
            Ok(Identity::Email(address.to_lowercase()))
        } else {
            Err(EmailError)
        }
    }

    /// The canonical byte string hashed into the human reference. Each part
    /// is length-prefixed, so no two identities share a string.
    pub fn canonical(&self) -> String {
        match self {
            Identity::Email(address) => format!("email:{address}"),
            Identity::Oidc { issuer, subject } => {
                format!("oidc:{}:{issuer}{subject}", issuer.len())
            }
            Identity::Verified { verifier, subject } => {
                format!("verified:{}:{verifier}{subject}", verifier.len())
            }
        }
    }
}

/// The human reference of an identity under a 32-byte deployment secret.
pub fn human_ref(secret: &[u8; 32], identity: &Identity) -> HumanRef {
    // HMAC zero-pads keys shorter than the hash block; padding here lets the
    // fixed-size (infallible) constructor take the secret.
    let mut key = hmac::digest::Key::<Hmac<Sha256>>::default();
    for (slot, byte) in key.iter_mut().zip(secret) {
        *slot = *byte;
    }
    let mut mac = <Hmac<Sha256> as KeyInit>::new(&key);
    mac.update(identity.canonical().as_bytes());
    HumanRef::from_digest(&mac.finalize().into_bytes().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_key_equals_plain_hmac() {
        let secret = [0x5a; 32];
        let identity = Identity::email("dev@example.com").unwrap();
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&secret).unwrap();
        mac.update(b"email:dev@example.com");
        let digest: [u8; 32] = mac.finalize().into_bytes().into();
        assert_eq!(
            human_ref(&secret, &identity),
            HumanRef::from_digest(&digest)
        );
    }

    #[test]
    fn same_person_same_ref_other_secret_other_ref() {
        let a = Identity::email("Dev@Example.com").unwrap();
        let b = Identity::email("dev@example.com").unwrap();
        assert_eq!(human_ref(&[1; 32], &a), human_ref(&[1; 32], &b));
        assert_ne!(human_ref(&[1; 32], &a), human_ref(&[2; 32], &a));
        assert!(human_ref(&[1; 32], &a).as_str().starts_with("sha256:"));
    }

    #[test]
    fn identities_do_not_collide() {
        let x = Identity::Oidc {
            issuer: "https://a".into(),
            subject: "bc".into(),
        };
        let y = Identity::Oidc {
            issuer: "https://ab".into(),
            subject: "c".into(),
        };
        assert_ne!(x.canonical(), y.canonical());
        assert_ne!(human_ref(&[3; 32], &x), human_ref(&[3; 32], &y));
    }

    #[test]
    fn email_forms() {
        for good in ["a@b", "dev+agents@example.com", "ü@例え.jp"] {
            assert!(Identity::email(good).is_ok(), "{good}");
        }
        let long = format!("{}@x.com", "a".repeat(250));
        for bad in [
            "",
            "a",
            "@b",
            "a@",
            "a@b@c",
            "a b@c",
            "a@b\n",
            long.as_str(),
        ] {
            assert_eq!(Identity::email(bad), Err(EmailError), "{bad:?}");
        }
    }
}
