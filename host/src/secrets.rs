//! The key-encryption key (KEK) and the secrets sealed under it.
//!
//! Signing keys, the human-reference secret and webhook secrets are stored
//! in the database sealed with XChaCha20-Poly1305 under a key derived from
//! the KEK: 32 random bytes in a file that never enters the database
//! (`--key-file`, 0600; by default [`KEY_FILE`] in the data folder). A
//! sealed secret is
//!
//! ```text
//! version (1 byte) ‖ nonce (24 bytes, random) ‖ ciphertext and tag (32 + 16 bytes)
//! ```
//!
//! with the version, the secret's purpose and its id bound as associated
//! data, so a sealed value cannot be moved to another row or purpose. The
//! database also keeps a check value (an HMAC of a constant under the KEK),
//! so a wrong key file is reported before any secret is opened.
//!
//! This module knows the sealing format and the key file; it does not know
//! which rows hold secrets (`setup`, `keyring`, the record log's keys and
//! the webhooks do).

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read as _, Write as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use chacha20poly1305::aead::{Aead as _, Payload};
use chacha20poly1305::{KeyInit as _, XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac as _};
use sha2::Sha256;

/// The key file's default name inside the data folder.
pub const KEY_FILE: &str = "key-encryption.key";

/// The `meta` key of the check value.
pub const CHECK_KEY: &str = "kek_check";

/// The sealing format this build writes (the first byte of every sealed
/// secret and of the check value).
const VERSION: u8 = 1;
const KEY_LEN: usize = 32;
const NONCE_LEN: usize = 24;
const TAG_LEN: usize = 16;
/// The length of a sealed 32-byte secret.
pub const SEALED_LEN: usize = 1 + NONCE_LEN + KEY_LEN + TAG_LEN;

const SEALING_LABEL: &[u8] = b"mandate kek v1: sealing key";
const CHECK_LABEL: &[u8] = b"mandate kek v1: check value";
const REQUEST_LABEL: &[u8] = b"mandate kek v1: oauth request";

/// What a sealed message carried by the browser is; its associated data,
/// so one kind never opens as another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carried {
    /// An OAuth authorization request, in the consent page's URL.
    Request,
    /// A sign-in with an identity provider under way (its `state`, `nonce`
    /// and PKCE verifier), in a cookie until the provider answers.
    SignIn,
    /// A person signed in by an identity provider, in the consent page's
    /// session cookie.
    Session,
}

impl Carried {
    fn aad(self) -> &'static [u8] {
        match self {
            Carried::Request => b"mandate oauth_request v1",
            Carried::SignIn => b"mandate oidc_sign_in v1",
            Carried::Session => b"mandate consent_session v1",
        }
    }
}

/// What a sealed secret is for; part of its associated data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// An Ed25519 signing key; its id is the kid.
    SigningKey,
    /// The human-reference secret; its id is its `meta` key.
    HumanRefSecret,
    /// An Ed25519 key that signs the record log's checkpoints; its id is
    /// its verifier key (C2SP `signed-note` vkey).
    LogKey,
    /// A webhook's signing secret (current or previous); its id is the
    /// webhook's id.
    WebhookSecret,
}

impl Purpose {
    fn label(self) -> &'static [u8] {
        match self {
            Purpose::SigningKey => b"signing_key",
            Purpose::HumanRefSecret => b"human_ref_secret",
            Purpose::LogKey => b"log_key",
            Purpose::WebhookSecret => b"webhook_secret",
        }
    }
}

/// Why a secret could not be sealed or opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("the cipher refused to seal the secret")]
    Encryption,
    #[error("the sealed secret has format version {0}, which this build does not know")]
    UnknownVersion(u8),
    #[error("the sealed secret is {0} bytes long, not {SEALED_LEN}")]
    WrongLength(usize),
    #[error("the sealed secret does not open with this key (wrong key, or changed)")]
    NotAuthentic,
}

/// The key-encryption key, as the keys derived from it.
pub struct Kek {
    sealing: XChaCha20Poly1305,
    check: [u8; 32],
    /// Seals pending OAuth authorization requests (docs/oauth.md): derived
    /// like the others, so every host with the key file opens them.
    requests: XChaCha20Poly1305,
}

impl std::fmt::Debug for Kek {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Kek(..)")
    }
}

fn hmac(key: &[u8; KEY_LEN], message: &[u8]) -> [u8; 32] {
    // HMAC zero-pads keys shorter than the hash block; padding here lets the
    // fixed-size (infallible) constructor take the key.
    let mut block = hmac::digest::Key::<Hmac<Sha256>>::default();
    for (slot, byte) in block.iter_mut().zip(key) {
        *slot = *byte;
    }
    let mut mac = <Hmac<Sha256> as hmac::digest::KeyInit>::new(&block);
    mac.update(message);
    mac.finalize().into_bytes().into()
}

fn associated_data(purpose: Purpose, id: &str) -> Vec<u8> {
    let mut data = Vec::with_capacity(2 + purpose.label().len() + id.len());
    data.push(VERSION);
    data.extend_from_slice(purpose.label());
    data.push(0);
    data.extend_from_slice(id.as_bytes());
    data
}

impl Kek {
    /// The KEK of these 32 bytes.
    pub fn from_bytes(kek: &[u8; KEY_LEN]) -> Kek {
        let sealing = hmac(kek, SEALING_LABEL);
        Kek {
            sealing: XChaCha20Poly1305::new(&sealing.into()),
            check: hmac(kek, CHECK_LABEL),
            requests: XChaCha20Poly1305::new(&hmac(kek, REQUEST_LABEL).into()),
        }
    }

    /// Seals what the browser carries (an OAuth authorization request's
    /// JSON, a sign-in under way, a consent session) under a fresh random
    /// nonce: `version ‖ nonce (24 bytes) ‖ ciphertext and tag`, the kind
    /// its associated data. It travels in a URL or a cookie instead of a
    /// row, so unauthenticated endpoints write nothing; it opens only with
    /// this deployment's key file, unchanged, and as its own kind.
    pub fn seal_carried(&self, kind: Carried, plain: &[u8]) -> Result<Vec<u8>, SealError> {
        let nonce: [u8; NONCE_LEN] = crate::random::bytes();
        let ciphertext = self
            .requests
            .encrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: plain,
                    aad: kind.aad(),
                },
            )
            .map_err(|_| SealError::Encryption)?;
        let mut sealed = Vec::with_capacity(1 + NONCE_LEN + ciphertext.len());
        sealed.push(VERSION);
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&ciphertext);
        Ok(sealed)
    }

    /// Opens what [`Kek::seal_carried`] sealed as `kind`; anything else,
    /// changed, of another kind or sealed under another key file is
    /// [`SealError::NotAuthentic`].
    pub fn open_carried(&self, kind: Carried, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
        let (&version, rest) = sealed.split_first().ok_or(SealError::NotAuthentic)?;
        if version != VERSION {
            return Err(SealError::UnknownVersion(version));
        }
        if rest.len() < NONCE_LEN + TAG_LEN {
            return Err(SealError::NotAuthentic);
        }
        let (nonce, ciphertext) = rest.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| SealError::NotAuthentic)?;
        self.requests
            .decrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: ciphertext,
                    aad: kind.aad(),
                },
            )
            .map_err(|_| SealError::NotAuthentic)
    }

    /// Seals a 32-byte secret under a fresh random nonce.
    pub fn seal(
        &self,
        purpose: Purpose,
        id: &str,
        secret: &[u8; KEY_LEN],
    ) -> Result<Vec<u8>, SealError> {
        let nonce: [u8; NONCE_LEN] = crate::random::bytes();
        let ciphertext = self
            .sealing
            .encrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: secret,
                    aad: &associated_data(purpose, id),
                },
            )
            .map_err(|_| SealError::Encryption)?;
        let mut sealed = Vec::with_capacity(SEALED_LEN);
        sealed.push(VERSION);
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&ciphertext);
        Ok(sealed)
    }

    /// Opens a sealed secret, checking that it was sealed for this purpose
    /// and id under this key.
    pub fn open(
        &self,
        purpose: Purpose,
        id: &str,
        sealed: &[u8],
    ) -> Result<[u8; KEY_LEN], SealError> {
        let (&version, rest) = sealed.split_first().ok_or(SealError::WrongLength(0))?;
        if version != VERSION {
            return Err(SealError::UnknownVersion(version));
        }
        if sealed.len() != SEALED_LEN {
            return Err(SealError::WrongLength(sealed.len()));
        }
        let (nonce, ciphertext) = rest.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce
            .try_into()
            .map_err(|_| SealError::WrongLength(sealed.len()))?;
        let plain = self
            .sealing
            .decrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &associated_data(purpose, id),
                },
            )
            .map_err(|_| SealError::NotAuthentic)?;
        plain
            .as_slice()
            .try_into()
            .map_err(|_| SealError::WrongLength(sealed.len()))
    }

    /// The value stored in `meta` under [`CHECK_KEY`].
    pub fn check_value(&self) -> Vec<u8> {
        let mut value = Vec::with_capacity(1 + self.check.len());
        value.push(VERSION);
        value.extend_from_slice(&self.check);
        value
    }

    /// Whether a stored check value is this key's, compared in constant time.
    pub fn matches_check(&self, stored: &[u8]) -> bool {
        let ours = self.check_value();
        stored.len() == ours.len()
            && stored
                .iter()
                .zip(&ours)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }

    /// Reads a key file; `None` when there is none. A file that is not
    /// exactly 32 bytes is an error, as is one that others may read (outside
    /// the data folder Mandate does not change its mode; it says so).
    pub fn read_file(path: &Path) -> anyhow::Result<Option<Kek>> {
        Ok(read_key_file(path)?.map(|key| Kek::from_bytes(&key)))
    }

    /// Creates a key file of 32 random bytes, mode 0600 (see
    /// [`create_key_file`]).
    pub fn create_file(path: &Path) -> anyhow::Result<Kek> {
        Ok(Kek::from_bytes(&create_key_file(path)?))
    }
}

/// Reads a file of one 32-byte key; `None` when there is none. A file that
/// is not exactly 32 bytes is an error; one that group or others may read
/// is logged as a warning.
pub fn read_key_file(path: &Path) -> anyhow::Result<Option<[u8; KEY_LEN]>> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => anyhow::bail!("cannot read the key file {}: {e}", path.display()),
    };
    let mode = file
        .metadata()
        .map_err(|e| anyhow::anyhow!("cannot read the key file {}: {e}", path.display()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        tracing::warn!(
            path = %path.display(),
            mode = format!("{:04o}", mode & 0o7777),
            "the key file is open to group or others; make it 0600"
        );
    }
    let mut bytes = Vec::with_capacity(KEY_LEN);
    file.take(KEY_LEN as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| anyhow::anyhow!("cannot read the key file {}: {e}", path.display()))?;
    let key: [u8; KEY_LEN] = bytes.as_slice().try_into().map_err(|_| {
        anyhow::anyhow!(
            "the key file {} must hold exactly {KEY_LEN} bytes",
            path.display()
        )
    })?;
    Ok(Some(key))
}

/// Creates a file of 32 random bytes, mode 0600. It is written under a
/// temporary name, synced and renamed, and its folder synced, so a crash
/// never leaves a short key file behind.
pub fn create_key_file(path: &Path) -> anyhow::Result<[u8; KEY_LEN]> {
    let fail =
        |e: std::io::Error| anyhow::anyhow!("cannot create the key file {}: {e}", path.display());
    let key: [u8; KEY_LEN] = crate::random::bytes();
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    match std::fs::remove_file(&temporary) {
        Err(e) if e.kind() != ErrorKind::NotFound => return Err(fail(e)),
        _ => {}
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(fail)?;
    file.write_all(&key).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    drop(file);
    std::fs::rename(&temporary, path).map_err(fail)?;
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    File::open(folder)
        .and_then(|folder| folder.sync_all())
        .map_err(fail)?;
    tracing::info!(path = %path.display(), "created the key file (mode 0600)");
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_and_opens_for_the_same_purpose_and_id_only() {
        let kek = Kek::from_bytes(&[7; 32]);
        let secret = [42u8; 32];
        let sealed = kek.seal(Purpose::SigningKey, "kid-a", &secret).unwrap();
        assert_eq!(sealed.len(), SEALED_LEN);
        assert_eq!(sealed[0], VERSION);
        assert!(!sealed.windows(32).any(|w| w == secret));
        assert_eq!(kek.open(Purpose::SigningKey, "kid-a", &sealed), Ok(secret));
        assert_eq!(
            kek.open(Purpose::SigningKey, "kid-b", &sealed),
            Err(SealError::NotAuthentic)
        );
        assert_eq!(
            kek.open(Purpose::HumanRefSecret, "kid-a", &sealed),
            Err(SealError::NotAuthentic)
        );
        let other = Kek::from_bytes(&[8; 32]);
        assert_eq!(
            other.open(Purpose::SigningKey, "kid-a", &sealed),
            Err(SealError::NotAuthentic)
        );
    }

    #[test]
    fn every_seal_has_its_own_nonce() {
        let kek = Kek::from_bytes(&[7; 32]);
        let a = kek.seal(Purpose::HumanRefSecret, "x", &[1; 32]).unwrap();
        let b = kek.seal(Purpose::HumanRefSecret, "x", &[1; 32]).unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn refuses_malformed_sealed_values() {
        let kek = Kek::from_bytes(&[7; 32]);
        let mut sealed = kek.seal(Purpose::SigningKey, "k", &[1; 32]).unwrap();
        assert_eq!(
            kek.open(Purpose::SigningKey, "k", &[]),
            Err(SealError::WrongLength(0))
        );
        assert_eq!(
            kek.open(Purpose::SigningKey, "k", &[1; 32]),
            Err(SealError::WrongLength(32))
        );
        sealed[0] = 2;
        assert_eq!(
            kek.open(Purpose::SigningKey, "k", &sealed),
            Err(SealError::UnknownVersion(2))
        );
        sealed[0] = VERSION;
        sealed[40] ^= 1;
        assert_eq!(
            kek.open(Purpose::SigningKey, "k", &sealed),
            Err(SealError::NotAuthentic)
        );
    }

    #[test]
    fn carried_messages_open_only_unchanged_as_their_kind_and_under_their_key_file() {
        let kek = Kek::from_bytes(&[7; 32]);
        let plain = br#"{"client_id":"mcl_x"}"#;
        let sealed = kek.seal_carried(Carried::Request, plain).unwrap();
        assert_ne!(sealed, kek.seal_carried(Carried::Request, plain).unwrap());
        assert!(!sealed.windows(plain.len()).any(|w| w == plain));
        assert_eq!(kek.open_carried(Carried::Request, &sealed).unwrap(), plain);
        for at in [1, 30, sealed.len() - 1] {
            let mut changed = sealed.clone();
            changed[at] ^= 1;
            assert_eq!(
                kek.open_carried(Carried::Request, &changed),
                Err(SealError::NotAuthentic)
            );
        }
        assert_eq!(
            Kek::from_bytes(&[8; 32]).open_carried(Carried::Request, &sealed),
            Err(SealError::NotAuthentic)
        );
        assert_eq!(
            kek.open_carried(Carried::Request, &sealed[..20]),
            Err(SealError::NotAuthentic)
        );
        assert_eq!(
            kek.open_carried(Carried::Request, &[]),
            Err(SealError::NotAuthentic)
        );
        // Not a secret of another purpose, nor one of those a request.
        let secret = kek.seal(Purpose::SigningKey, "", &[1; 32]).unwrap();
        assert_eq!(
            kek.open_carried(Carried::Request, &secret),
            Err(SealError::NotAuthentic)
        );
        // A request never opens as a sign-in or a session, nor they as it.
        for kind in [Carried::SignIn, Carried::Session] {
            assert_eq!(
                kek.open_carried(kind, &sealed),
                Err(SealError::NotAuthentic)
            );
            let other = kek.seal_carried(kind, plain).unwrap();
            assert_eq!(kek.open_carried(kind, &other).unwrap(), plain);
            assert_eq!(
                kek.open_carried(Carried::Request, &other),
                Err(SealError::NotAuthentic)
            );
        }
    }

    #[test]
    fn the_check_value_tells_keys_apart_and_hides_the_key() {
        let kek = Kek::from_bytes(&[7; 32]);
        let check = kek.check_value();
        assert!(kek.matches_check(&check));
        assert!(!Kek::from_bytes(&[8; 32]).matches_check(&check));
        assert!(!kek.matches_check(&check[1..]));
        assert!(!check.windows(32).any(|w| w == [7; 32]));
    }

    #[test]
    fn key_files_are_created_0600_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEY_FILE);
        assert!(Kek::read_file(&path).unwrap().is_none());
        let created = Kek::create_file(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read(&path).unwrap().len(), 32);
        let read = Kek::read_file(&path).unwrap().unwrap();
        assert!(read.matches_check(&created.check_value()));
        assert!(!dir.path().join(format!("{KEY_FILE}.tmp")).exists());
    }

    #[test]
    fn a_key_file_of_the_wrong_size_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEY_FILE);
        std::fs::write(&path, [1u8; 33]).unwrap();
        let error = Kek::read_file(&path).unwrap_err().to_string();
        assert!(error.contains("must hold exactly 32 bytes"), "{error}");
    }
}
