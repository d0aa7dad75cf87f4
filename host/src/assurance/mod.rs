//! Verifying the human at assurance levels L2 (OIDC sign-in) and L3
//! (identity verifiers: sandboxed plugins or signed provider attestations).
//! L1 needs nothing here: the API key is the verification.

pub mod oidc;
pub mod plugin;
pub mod verifier;

use crate::config::Config;
use oidc::OidcIssuers;
use verifier::Verifiers;

/// The configured ways to verify humans beyond L1.
#[derive(Debug)]
pub struct Assurance {
    pub oidc: OidcIssuers,
    pub verifiers: Verifiers,
}

impl Assurance {
    /// Loads the OIDC issuers and verifiers of a configuration; plugins are
    /// compiled here, once.
    pub fn load(config: &Config) -> anyhow::Result<Assurance> {
        Ok(Assurance {
            oidc: OidcIssuers::new(&config.oidc.issuer)?,
            verifiers: Verifiers::load(&config.verifier)?,
        })
    }
}
