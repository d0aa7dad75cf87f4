//! Keys: the Ed25519 signing key, its public JWK, and key sets (JWKS) for
//! verification.
//!
//! A signing key is built from 32 secret bytes the caller supplies; core never
//! generates one. Public keys are published as JWKs with `kty OKP`,
//! `crv Ed25519`, `alg EdDSA`, `use sig` and `kid` = the RFC 7638 thumbprint.
//!
//! [`Jwks::parse`] accepts a key set only when it is safe to verify with: no
//! private key material anywhere, no small-order ("weak") or malformed
//! Ed25519 key, every Ed25519 key with a unique `kid`. Keys of other types are
//! skipped (they can never verify an EdDSA token); a set left with no Ed25519
//! key is refused.

use std::fmt;

use base64::Engine as _;
use ed25519_dalek::{Signer as _, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::b64;
use crate::ids::Jkt;
use crate::json::{Present, present};

/// Most keys a JWKS may hold.
pub const MAX_JWKS_KEYS: usize = 64;
/// Longest `kid` accepted.
pub const MAX_KID_LEN: usize = 256;

/// Why a key set cannot be used for verification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwksError {
    #[error("the key set is not a JSON object with a `keys` array of objects")]
    Malformed,
    #[error("the key set holds private key material (`{member}`); publish public keys only")]
    PrivateKeyMaterial { member: &'static str },
    #[error("an Ed25519 key is malformed: {reason}")]
    InvalidKey { reason: &'static str },
    #[error("an Ed25519 key is a small-order (weak) point that would accept forged signatures")]
    WeakKey,
    #[error("an Ed25519 key has no `kid`")]
    MissingKid,
    #[error("two Ed25519 keys share the kid `{0}`")]
    DuplicateKid(String),
    #[error("the key set holds no usable Ed25519 key")]
    NoUsableKeys,
    #[error("the key set holds more than {MAX_JWKS_KEYS} keys")]
    TooManyKeys,
}

impl JwksError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            JwksError::Malformed => "malformed_jwks",
            JwksError::PrivateKeyMaterial { .. } => "private_key_material",
            JwksError::InvalidKey { .. } => "invalid_key",
            JwksError::WeakKey => "weak_key",
            JwksError::MissingKid => "missing_kid",
            JwksError::DuplicateKid(_) => "duplicate_kid",
            JwksError::NoUsableKeys => "no_usable_keys",
            JwksError::TooManyKeys => "too_many_keys",
        }
    }
}

/// RFC 7638 thumbprint of an Ed25519 public key: SHA-256 over the canonical
/// `{"crv":"Ed25519","kty":"OKP","x":"…"}`, base64url.
pub fn thumbprint(public: &[u8; 32]) -> String {
    jkt(public).into()
}

/// The RFC 7638 thumbprint of an Ed25519 public key as a `jkt` (RFC 9449).
pub fn jkt(public: &[u8; 32]) -> Jkt {
    let x = b64::encode(public);
    let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    Jkt::from_digest(&Sha256::digest(canonical.as_bytes()).into())
}

/// The Ed25519 key Mandate signs tokens with.
pub struct SigningKey {
    inner: ed25519_dalek::SigningKey,
    kid: String,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A signing key from its 32 secret bytes.
    pub fn from_secret(secret: &[u8; 32]) -> SigningKey {
        let inner = ed25519_dalek::SigningKey::from_bytes(secret);
        let kid = thumbprint(inner.verifying_key().as_bytes());
        SigningKey { inner, kid }
    }

    /// The key id: its RFC 7638 thumbprint.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The 32 public key bytes.
    pub fn public_bytes(&self) -> [u8; 32] {
        self.inner.verifying_key().to_bytes()
    }

    /// The public key as a JWK.
    pub fn public_jwk(&self) -> Jwk {
        Jwk::ed25519(&self.public_bytes())
    }

    /// The key as a private JWK (RFC 8037), for a holder to store its own
    /// key. It holds the secret: never publish it.
    pub fn to_private_jwk(&self) -> PrivateJwk {
        let public = self.public_bytes();
        PrivateJwk {
            kty: "OKP".to_owned(),
            crv: "Ed25519".to_owned(),
            x: b64::encode(public),
            d: b64::encode(self.inner.to_bytes()),
        }
    }

    /// A key from a private JWK (RFC 8037) that [`SigningKey::to_private_jwk`]
    /// wrote: `x` must be the public half of `d`.
    pub fn from_private_jwk(json: &[u8]) -> Result<SigningKey, JwksError> {
        let jwk: PrivateJwk = serde_json::from_slice(json).map_err(|_| JwksError::Malformed)?;
        if jwk.kty != "OKP" || jwk.crv != "Ed25519" {
            return Err(JwksError::InvalidKey {
                reason: "a holder key must be Ed25519 (`kty` OKP, `crv` Ed25519)",
            });
        }
        let secret: [u8; 32] = b64::ENGINE
            .decode(&jwk.d)
            .ok()
            .and_then(|d| d.try_into().ok())
            .ok_or(JwksError::InvalidKey {
                reason: "`d` is not 32 bytes of strict base64url",
            })?;
        let key = SigningKey::from_secret(&secret);
        if b64::encode(key.public_bytes()) != jwk.x {
            return Err(JwksError::InvalidKey {
                reason: "`x` is not the public half of `d`",
            });
        }
        Ok(key)
    }

    /// The public half as a holder key, for binding a token to this key.
    pub fn holder_key(&self) -> HolderKey {
        let key = self.inner.verifying_key();
        HolderKey {
            jkt: jkt(key.as_bytes()),
            key,
        }
    }

    pub(crate) fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.inner.sign(message).to_bytes()
    }
}

/// A private Ed25519 JWK: the members of RFC 8037's, and nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivateJwk {
    pub kty: String,
    pub crv: String,
    pub x: String,
    pub d: String,
}

/// A holder's public Ed25519 key: the `holder_key` a token is bound to, or
/// the `jwk` of a DPoP proof. Only the public key is accepted; its identity
/// is its RFC 7638 thumbprint ([`HolderKey::jkt`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderKey {
    key: VerifyingKey,
    jkt: Jkt,
}

/// The members of a holder's public JWK that identify it, in RFC 7638 order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PublicJwk {
    pub crv: &'static str,
    pub kty: &'static str,
    pub x: String,
}

impl HolderKey {
    /// Parses one JWK (a JSON object): an Ed25519 public key (`kty` `OKP`,
    /// `crv` `Ed25519`, `x`), with `alg` `EdDSA` and `use` `sig` if given; no
    /// private member; not a weak point. `kid` and other members are ignored.
    pub fn from_jwk_json(json: &[u8]) -> Result<HolderKey, JwksError> {
        let raw: RawJwk = serde_json::from_slice(json).map_err(|_| JwksError::Malformed)?;
        HolderKey::from_raw(&raw)
    }

    pub(crate) fn from_raw(raw: &RawJwk) -> Result<HolderKey, JwksError> {
        if let Some(member) = raw.private_member() {
            return Err(JwksError::PrivateKeyMaterial { member });
        }
        if raw.kty.as_deref() != Some("OKP") || raw.crv.as_deref() != Some("Ed25519") {
            return Err(JwksError::InvalidKey {
                reason: "a holder key must be Ed25519 (`kty` OKP, `crv` Ed25519)",
            });
        }
        let key = raw.public_key()?;
        Ok(HolderKey {
            jkt: jkt(key.as_bytes()),
            key,
        })
    }

    /// The key's RFC 7638 thumbprint.
    pub fn jkt(&self) -> &Jkt {
        &self.jkt
    }

    /// The public JWK members the thumbprint is computed over.
    pub fn public_jwk(&self) -> PublicJwk {
        PublicJwk {
            crv: "Ed25519",
            kty: "OKP",
            x: b64::encode(self.key.as_bytes()),
        }
    }

    pub(crate) fn verifying_key(&self) -> &VerifyingKey {
        &self.key
    }
}

/// A public Ed25519 JWK as Mandate publishes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwk {
    pub kty: String,
    pub crv: String,
    pub x: String,
    pub kid: String,
    pub alg: String,
    #[serde(rename = "use")]
    pub use_: String,
}

impl Jwk {
    /// The JWK of a 32-byte Ed25519 public key.
    pub fn ed25519(public: &[u8; 32]) -> Jwk {
        Jwk {
            kty: "OKP".to_owned(),
            crv: "Ed25519".to_owned(),
            x: b64::encode(public),
            kid: thumbprint(public),
            alg: "EdDSA".to_owned(),
            use_: "sig".to_owned(),
        }
    }
}

/// A verification key with its id.
#[derive(Debug, Clone)]
pub(crate) struct KeyEntry {
    pub(crate) kid: String,
    pub(crate) key: VerifyingKey,
}

/// A key set ready to verify tokens: parsed and checked once, then reused.
#[derive(Debug, Clone, Default)]
pub struct Jwks {
    keys: Vec<KeyEntry>,
}

#[derive(Deserialize)]
struct RawJwks {
    keys: Vec<RawJwk>,
}

/// One JWK as read: the members Mandate looks at, plus every member that
/// carries private key material in any key type (so their presence can be
/// refused). Other members are ignored.
#[derive(Deserialize)]
pub(crate) struct RawJwk {
    kty: Option<String>,
    crv: Option<String>,
    x: Option<String>,
    kid: Option<String>,
    alg: Option<String>,
    #[serde(rename = "use")]
    use_: Option<String>,
    #[serde(default, deserialize_with = "present")]
    d: Option<Present>,
    #[serde(default, deserialize_with = "present")]
    p: Option<Present>,
    #[serde(default, deserialize_with = "present")]
    q: Option<Present>,
    #[serde(default, deserialize_with = "present")]
    dp: Option<Present>,
    #[serde(default, deserialize_with = "present")]
    dq: Option<Present>,
    #[serde(default, deserialize_with = "present")]
    qi: Option<Present>,
    #[serde(default, deserialize_with = "present")]
    oth: Option<Present>,
    #[serde(default, deserialize_with = "present")]
    k: Option<Present>,
}

impl RawJwk {
    fn private_member(&self) -> Option<&'static str> {
        [
            ("d", self.d),
            ("p", self.p),
            ("q", self.q),
            ("dp", self.dp),
            ("dq", self.dq),
            ("qi", self.qi),
            ("oth", self.oth),
            ("k", self.k),
        ]
        .into_iter()
        .find_map(|(name, member)| member.map(|_| name))
    }

    fn ed25519_key(&self) -> Result<(&str, VerifyingKey), JwksError> {
        let key = self.public_key()?;
        let kid = self.kid.as_deref().ok_or(JwksError::MissingKid)?;
        if kid.is_empty() || kid.len() > MAX_KID_LEN {
            return Err(JwksError::InvalidKey {
                reason: "`kid` must be 1 to 256 bytes",
            });
        }
        Ok((kid, key))
    }

    /// The Ed25519 public key of `x`, checked against `alg` and `use`.
    fn public_key(&self) -> Result<VerifyingKey, JwksError> {
        if self.alg.as_deref().is_some_and(|alg| alg != "EdDSA") {
            return Err(JwksError::InvalidKey {
                reason: "`alg` must be EdDSA",
            });
        }
        if self.use_.as_deref().is_some_and(|u| u != "sig") {
            return Err(JwksError::InvalidKey {
                reason: "`use` must be sig",
            });
        }
        let x = self.x.as_deref().ok_or(JwksError::InvalidKey {
            reason: "`x` is missing",
        })?;
        let bytes = b64::ENGINE.decode(x).map_err(|_| JwksError::InvalidKey {
            reason: "`x` is not strict base64url",
        })?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| JwksError::InvalidKey {
            reason: "`x` is not 32 bytes",
        })?;
        let key = VerifyingKey::from_bytes(&bytes).map_err(|_| JwksError::InvalidKey {
            reason: "`x` is not a point on the curve",
        })?;
        if key.is_weak() {
            return Err(JwksError::WeakKey);
        }
        Ok(key)
    }
}

impl Jwks {
    /// Parses and checks a JWKS document (`{"keys":[…]}`).
    pub fn parse(json: &[u8]) -> Result<Jwks, JwksError> {
        let raw: RawJwks = serde_json::from_slice(json).map_err(|_| JwksError::Malformed)?;
        if raw.keys.len() > MAX_JWKS_KEYS {
            return Err(JwksError::TooManyKeys);
        }
        let mut set = Jwks::default();
        for jwk in &raw.keys {
            if let Some(member) = jwk.private_member() {
                return Err(JwksError::PrivateKeyMaterial { member });
            }
            if jwk.kty.as_deref() != Some("OKP") || jwk.crv.as_deref() != Some("Ed25519") {
                continue;
            }
            let (kid, key) = jwk.ed25519_key()?;
            set.insert(kid, key)?;
        }
        if set.keys.is_empty() {
            return Err(JwksError::NoUsableKeys);
        }
        Ok(set)
    }

    /// A key set of the public halves of signing keys, each under its thumbprint.
    pub fn from_signing_keys<'a>(keys: impl IntoIterator<Item = &'a SigningKey>) -> Jwks {
        Jwks {
            keys: keys
                .into_iter()
                .map(|k| KeyEntry {
                    kid: k.kid.clone(),
                    key: k.inner.verifying_key(),
                })
                .collect(),
        }
    }

    /// A key set of 32-byte public keys, each under its thumbprint. Weak keys
    /// are refused.
    pub fn from_public_keys<'a>(
        keys: impl IntoIterator<Item = &'a [u8; 32]>,
    ) -> Result<Jwks, JwksError> {
        let mut set = Jwks::default();
        for bytes in keys {
            let key = VerifyingKey::from_bytes(bytes).map_err(|_| JwksError::InvalidKey {
                reason: "not a point on the curve",
            })?;
            if key.is_weak() {
                return Err(JwksError::WeakKey);
            }
            set.insert(&thumbprint(bytes), key)?;
        }
        Ok(set)
    }

    fn insert(&mut self, kid: &str, key: VerifyingKey) -> Result<(), JwksError> {
        if self.keys.len() >= MAX_JWKS_KEYS {
            return Err(JwksError::TooManyKeys);
        }
        if self.keys.iter().any(|entry| entry.kid == kid) {
            return Err(JwksError::DuplicateKid(kid.to_owned()));
        }
        self.keys.push(KeyEntry {
            kid: kid.to_owned(),
            key,
        });
        Ok(())
    }

    pub(crate) fn find(&self, kid: &str) -> Option<&VerifyingKey> {
        self.keys
            .iter()
            .find(|entry| entry.kid == kid)
            .map(|entry| &entry.key)
    }

    /// The key ids in the set.
    pub fn kids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|entry| entry.kid.as_str())
    }

    /// How many keys the set holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The set as a JWKS document, each key as a full public JWK.
    pub fn to_jwk_set(&self) -> JwkSet {
        JwkSet {
            keys: self
                .keys
                .iter()
                .map(|entry| {
                    let mut jwk = Jwk::ed25519(entry.key.as_bytes());
                    jwk.kid.clone_from(&entry.kid);
                    jwk
                })
                .collect(),
        }
    }
}

/// The serialisable form of a JWKS, `{"keys":[…]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JwkSet {
    pub keys: Vec<Jwk>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_secret(&[seed; 32])
    }

    fn jwks_json(jwks: &JwkSet) -> Vec<u8> {
        serde_json::to_vec(jwks).unwrap()
    }

    #[test]
    fn rfc8037_thumbprint_example() {
        // RFC 8037 appendix A.3: the thumbprint of its example public key.
        let x = b64::ENGINE
            .decode("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
            .unwrap();
        let x: [u8; 32] = x.try_into().unwrap();
        assert_eq!(
            thumbprint(&x),
            "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
        );
    }

    #[test]
    fn public_jwk_round_trips_through_parse() {
        let k = key(1);
        let set = JwkSet {
            keys: vec![k.public_jwk(), key(2).public_jwk()],
        };
        let parsed = Jwks::parse(&jwks_json(&set)).unwrap();
        assert_eq!(parsed.len(), 2);
        assert!(parsed.find(k.kid()).is_some());
        assert_eq!(parsed.to_jwk_set(), set);
        let jwk = k.public_jwk();
        assert_eq!((jwk.kty.as_str(), jwk.crv.as_str()), ("OKP", "Ed25519"));
        assert_eq!((jwk.alg.as_str(), jwk.use_.as_str()), ("EdDSA", "sig"));
        assert_eq!(jwk.kid, k.kid());
    }

    #[test]
    fn rejects_private_members() {
        let mut jwk = serde_json::to_value(key(1).public_jwk()).unwrap();
        jwk["d"] = "AAAA".into();
        let doc = serde_json::json!({ "keys": [jwk] }).to_string();
        assert_eq!(
            Jwks::parse(doc.as_bytes()).unwrap_err(),
            JwksError::PrivateKeyMaterial { member: "d" }
        );
        let doc = r#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#;
        assert_eq!(
            Jwks::parse(doc.as_bytes()).unwrap_err(),
            JwksError::PrivateKeyMaterial { member: "k" }
        );
    }

    #[test]
    fn rejects_weak_keys() {
        // The identity point (0, 1), which accepts a forged signature on any message.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let doc = serde_json::json!({"keys":[{
            "kty":"OKP","crv":"Ed25519","kid":"weak","x": b64::encode(identity)
        }]})
        .to_string();
        assert_eq!(Jwks::parse(doc.as_bytes()).unwrap_err(), JwksError::WeakKey);
        assert_eq!(
            Jwks::from_public_keys([&identity]).unwrap_err(),
            JwksError::WeakKey
        );
    }

    #[test]
    fn rejects_malformed_sets() {
        let x = b64::encode(key(1).public_bytes());
        let cases: Vec<(String, JwksError)> = vec![
            ("[]".into(), JwksError::Malformed),
            (r#"{"keys":{}}"#.into(), JwksError::Malformed),
            (r#"{"keys":[1]}"#.into(), JwksError::Malformed),
            (r#"{"keys":[]}"#.into(), JwksError::NoUsableKeys),
            (
                r#"{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB","kid":"r"}]}"#.into(),
                JwksError::NoUsableKeys,
            ),
            (
                format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}"}}]}}"#),
                JwksError::MissingKid,
            ),
            (
                format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}=","kid":"a"}}]}}"#),
                JwksError::InvalidKey {
                    reason: "`x` is not strict base64url",
                },
            ),
            (
                r#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA","kid":"a"}]}"#.into(),
                JwksError::InvalidKey {
                    reason: "`x` is not 32 bytes",
                },
            ),
            (
                format!(
                    r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"a","alg":"ES256"}}]}}"#
                ),
                JwksError::InvalidKey {
                    reason: "`alg` must be EdDSA",
                },
            ),
            (
                format!(
                    r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"a"}},{{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"a"}}]}}"#
                ),
                JwksError::DuplicateKid("a".into()),
            ),
        ];
        for (doc, expected) in cases {
            assert_eq!(Jwks::parse(doc.as_bytes()).unwrap_err(), expected, "{doc}");
        }
    }

    #[test]
    fn private_jwks_round_trip_and_must_match() {
        let k = key(5);
        let jwk = k.to_private_jwk();
        let text = serde_json::to_vec(&jwk).unwrap();
        assert_eq!(SigningKey::from_private_jwk(&text).unwrap().kid(), k.kid());
        let mut other = jwk.clone();
        other.x = key(6).to_private_jwk().x;
        assert_eq!(
            SigningKey::from_private_jwk(&serde_json::to_vec(&other).unwrap()).unwrap_err(),
            JwksError::InvalidKey {
                reason: "`x` is not the public half of `d`"
            }
        );
        assert_eq!(
            SigningKey::from_private_jwk(b"{\"kty\":\"OKP\"}").unwrap_err(),
            JwksError::Malformed
        );
        // A holder key never takes the private member.
        let public = serde_json::to_vec(&jwk).unwrap();
        assert_eq!(
            HolderKey::from_jwk_json(&public).unwrap_err(),
            JwksError::PrivateKeyMaterial { member: "d" }
        );
        let public = serde_json::to_vec(&k.holder_key().public_jwk()).unwrap();
        assert_eq!(
            HolderKey::from_jwk_json(&public).unwrap().jkt().as_str(),
            k.kid()
        );
    }

    #[test]
    fn debug_hides_the_secret() {
        let text = format!("{:?}", key(7));
        assert!(text.contains("kid"));
        assert!(!text.contains("07"));
    }
}
