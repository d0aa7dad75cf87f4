//! L3: named identity verifiers. A verifier is either a sandboxed plugin
//! (`kind = "plugin"`) that judges captured evidence, or an external
//! provider (`kind = "provider"`) whose signed attestation is checked
//! against its configured keys. Either way the answer is a subject and the
//! modalities that were checked; an unsigned or unparseable verdict is never
//! trusted.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode};
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

use super::plugin::{Limits, Plugin};
use crate::clock::Now;
use crate::config::Verifier as VerifierConfig;
use crate::error::{ApiError, ApiResult, truncate_chars};

/// What a plugin verifier must declare itself to be.
pub const IDENTITY_VERIFIER_KIND: &str = "identity-verifier";
/// Oldest provider attestation accepted, by `iat`.
const MAX_ATTESTATION_AGE_SECONDS: i64 = 600;
/// Clock skew tolerated on an attestation's `exp`, `nbf` and `iat`.
const LEEWAY_SECONDS: u64 = 60;
/// Plugin calls allowed at once; more wait.
const CONCURRENT_PLUGIN_CALLS: usize = 4;
/// Longest subject a verifier may name.
const MAX_SUBJECT_LEN: usize = 256;

/// A verifier's positive answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub subject: String,
    pub modalities: Vec<String>,
}

/// Captured evidence: always a JSON object.
pub type Evidence = serde_json::Map<String, serde_json::Value>;

/// What Mandate sends a plugin verifier.
#[derive(Serialize)]
struct PluginInput<'a> {
    verifier: &'a str,
    evidence: &'a Evidence,
}

/// What a plugin verifier answers.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PluginVerdict {
    verified: bool,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    modalities: Vec<String>,
    #[serde(default)]
    reason: Option<String>,
}

/// The claims of a provider's attestation.
#[derive(Deserialize)]
struct Attestation {
    sub: String,
    iat: i64,
    verified: bool,
    #[serde(default)]
    modalities: Vec<String>,
}

/// Evidence for a provider verifier.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderEvidence {
    attestation: String,
}

enum Kind {
    Plugin(Plugin),
    Provider {
        issuer: String,
        audience: Option<String>,
        keys: JwkSet,
    },
}

/// The configured verifiers, by name.
pub struct Verifiers {
    by_name: BTreeMap<String, Arc<Kind>>,
    plugin_slots: Arc<Semaphore>,
}

impl std::fmt::Debug for Verifiers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifiers")
            .field("names", &self.by_name.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn bad_gateway(code: &'static str, detail: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_GATEWAY, code, detail)
}

fn refused(code: &'static str, detail: impl Into<String>) -> ApiError {
    ApiError::unauthorized(code, detail)
}

fn check_answer(subject: String, modalities: Vec<String>) -> ApiResult<Verified> {
    if subject.is_empty()
        || subject.len() > MAX_SUBJECT_LEN
        || subject.chars().any(char::is_control)
    {
        return Err(bad_gateway(
            "verifier_bad_output",
            "the verifier named no usable subject",
        ));
    }
    if modalities.is_empty() {
        return Err(bad_gateway(
            "verifier_bad_output",
            "the verifier named no modality it checked",
        ));
    }
    Ok(Verified {
        subject,
        modalities,
    })
}

impl Verifiers {
    /// Loads every configured verifier: compiles plugins (checking their
    /// ABI and purpose) and reads providers' keys.
    pub fn load(configs: &[VerifierConfig]) -> anyhow::Result<Verifiers> {
        let mut by_name = BTreeMap::new();
        for config in configs {
            let kind = match config {
                VerifierConfig::Plugin {
                    module,
                    fuel,
                    memory_mib,
                    timeout_ms,
                    ..
                } => {
                    let limits = Limits {
                        fuel: *fuel,
                        memory_bytes: usize::try_from(memory_mib.saturating_mul(1024 * 1024))?,
                        timeout: Duration::from_millis(*timeout_ms),
                    };
                    Kind::Plugin(Plugin::load(module, IDENTITY_VERIFIER_KIND, limits)?)
                }
                VerifierConfig::Provider {
                    issuer,
                    jwks_file,
                    audience,
                    ..
                } => {
                    let text = std::fs::read(jwks_file)
                        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", jwks_file.display()))?;
                    let keys: JwkSet = serde_json::from_slice(&text).map_err(|e| {
                        anyhow::anyhow!("invalid JWKS {}: {e}", jwks_file.display())
                    })?;
                    Kind::Provider {
                        issuer: issuer.clone(),
                        audience: audience.clone(),
                        keys,
                    }
                }
            };
            if by_name
                .insert(config.name().to_owned(), Arc::new(kind))
                .is_some()
            {
                anyhow::bail!("two verifiers are named `{}`", config.name());
            }
        }
        Ok(Verifiers {
            by_name,
            plugin_slots: Arc::new(Semaphore::new(CONCURRENT_PLUGIN_CALLS)),
        })
    }

    /// Asks the named verifier about `evidence`, at `now`.
    pub async fn verify(&self, name: &str, evidence: &Evidence, now: Now) -> ApiResult<Verified> {
        let kind =
            self.by_name.get(name).cloned().ok_or_else(|| {
                ApiError::not_found("unknown_verifier", "no verifier has this name")
            })?;
        match kind.as_ref() {
            Kind::Plugin(plugin) => self.ask_plugin(plugin.clone(), name, evidence).await,
            Kind::Provider {
                issuer,
                audience,
                keys,
            } => check_attestation(issuer, audience.as_deref(), keys, evidence, now),
        }
    }

    async fn ask_plugin(
        &self,
        plugin: Plugin,
        name: &str,
        evidence: &Evidence,
    ) -> ApiResult<Verified> {
        let input = serde_json::to_vec(&PluginInput {
            verifier: name,
            evidence,
        })
        .map_err(ApiError::internal)?;
        let permit = self
            .plugin_slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ApiError::unavailable("verifiers are shutting down"))?;
        let output = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            plugin.call(&input)
        })
        .await
        .map_err(ApiError::internal)?
        .map_err(|error| {
            tracing::warn!(verifier = name, code = error.code(), %error, "plugin verifier failed");
            bad_gateway(error.code(), format!("the verifier failed: {error}"))
        })?;
        let verdict: PluginVerdict = serde_json::from_slice(&output).map_err(|e| {
            bad_gateway(
                "plugin_bad_output",
                format!("the verifier's answer is not valid: {e}"),
            )
        })?;
        if !verdict.verified {
            let mut reason = verdict
                .reason
                .unwrap_or_else(|| "no reason given".to_owned());
            truncate_chars(&mut reason, 200);
            return Err(refused(
                "evidence_not_verified",
                format!("the verifier did not verify the evidence: {reason}"),
            ));
        }
        check_answer(verdict.subject.unwrap_or_default(), verdict.modalities)
    }
}

fn attestation_algorithm(token: &str) -> Option<Algorithm> {
    match jsonwebtoken::decode_header(token).ok()?.alg {
        alg @ (Algorithm::RS256 | Algorithm::ES256 | Algorithm::EdDSA) => Some(alg),
        _ => None,
    }
}

/// Checks a provider's signed attestation.
fn check_attestation(
    issuer: &str,
    audience: Option<&str>,
    keys: &JwkSet,
    evidence: &Evidence,
    now: Now,
) -> ApiResult<Verified> {
    let evidence: ProviderEvidence =
        serde_json::from_value(serde_json::Value::Object(evidence.clone())).map_err(|_| {
            ApiError::invalid(
                "evidence",
                "invalid_evidence",
                "a provider verifier takes {\"attestation\": \"<JWS>\"}",
            )
        })?;
    let token = evidence.attestation;
    let alg = attestation_algorithm(&token).ok_or_else(|| {
        refused(
            "attestation_invalid",
            "the attestation is not a JWS signed with RS256, ES256 or EdDSA",
        )
    })?;
    let kid = jsonwebtoken::decode_header(&token).ok().and_then(|h| h.kid);
    let jwk = match kid {
        Some(kid) => keys.find(&kid),
        None if keys.keys.len() == 1 => keys.keys.first(),
        None => None,
    }
    .ok_or_else(|| {
        refused(
            "attestation_unknown_key",
            "the attestation names no key of this provider",
        )
    })?;
    let key = DecodingKey::from_jwk(jwk)
        .map_err(|_| refused("attestation_unknown_key", "the provider's key is unusable"))?;
    let mut validation = Validation::new(alg);
    validation.leeway = LEEWAY_SECONDS;
    validation.set_issuer(&[issuer]);
    // jsonwebtoken checks `aud` only when the token has one: a configured
    // audience must also be a required claim, or an attestation without
    // `aud` (minted for anyone) would pass.
    match audience {
        Some(audience) => {
            validation.set_audience(&[audience]);
            validation.set_required_spec_claims(&["iss", "sub", "aud"]);
        }
        None => {
            validation.validate_aud = false;
            validation.set_required_spec_claims(&["iss", "sub"]);
        }
    }
    let claims = decode::<Attestation>(&token, &key, &validation)
        .map_err(|e| match e.kind() {
            ErrorKind::InvalidSignature => refused(
                "attestation_bad_signature",
                "the attestation's signature does not verify",
            ),
            ErrorKind::ExpiredSignature => {
                refused("attestation_expired", "the attestation has expired")
            }
            ErrorKind::InvalidIssuer => refused(
                "attestation_wrong_issuer",
                "the attestation is from another issuer",
            ),
            ErrorKind::InvalidAudience => refused(
                "attestation_wrong_audience",
                "the attestation is for another audience",
            ),
            ErrorKind::MissingRequiredClaim(claim) => refused(
                "attestation_missing_claim",
                format!("the attestation lacks `{claim}`"),
            ),
            _ => refused(
                "attestation_invalid",
                "the attestation could not be decoded",
            ),
        })?
        .claims;
    let now = now.s();
    if claims.iat > now + LEEWAY_SECONDS as i64 {
        return Err(refused(
            "attestation_issued_in_future",
            "the attestation's iat is in the future",
        ));
    }
    if now - claims.iat > MAX_ATTESTATION_AGE_SECONDS {
        return Err(refused(
            "attestation_too_old",
            "the attestation was issued more than ten minutes ago",
        ));
    }
    if !claims.verified {
        return Err(refused(
            "evidence_not_verified",
            "the provider did not verify this person",
        ));
    }
    check_answer(claims.sub, claims.modalities)
}
