//! Configuration: one typed struct. Defaults suit a developer machine; a TOML
//! file (`--config`) overrides them; command-line flags and their
//! environment variables override the file.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Requests per second allowed per caller, with the burst a caller may use
/// at once. `0` turns a limit off.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RateLimits {
    /// Per API key.
    pub per_api_key: u32,
    /// Per agent token (jti).
    pub per_token: u32,
    /// Per client address (see `trusted_proxies`).
    pub per_ip: u32,
    /// How many requests beyond the steady rate a caller may send at once.
    pub burst: u32,
}

impl Default for RateLimits {
    fn default() -> RateLimits {
        RateLimits {
            per_api_key: 1000,
            per_token: 1000,
            per_ip: 5000,
            burst: 2000,
        }
    }
}

impl RateLimits {
    /// No limits at all (benchmarks).
    pub fn off() -> RateLimits {
        RateLimits {
            per_api_key: 0,
            per_token: 0,
            per_ip: 0,
            burst: 0,
        }
    }
}

/// Everything the server can be told.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Folder of the database and the admin key.
    pub data_dir: PathBuf,
    /// The `iss` of every token.
    pub issuer: String,
    /// Refuse agent calls that do not carry the token as `Authorization: Bearer`.
    pub require_bearer_token: bool,
    /// Read-only database connections.
    pub readers: usize,
    /// Most writes committed together in one transaction (1 = one commit per write).
    pub max_batch: usize,
    pub rate_limits: RateLimits,
    /// Peers whose `X-Forwarded-For` is believed for per-address limits.
    pub trusted_proxies: Vec<IpAddr>,
    /// Serve `/metrics` without an API key to loopback clients.
    pub metrics_open_on_loopback: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data_dir: PathBuf::from("./.mandate"),
            issuer: "mandate".to_owned(),
            require_bearer_token: false,
            readers: 4,
            max_batch: 512,
            rate_limits: RateLimits::default(),
            trusted_proxies: Vec::new(),
            metrics_open_on_loopback: true,
        }
    }
}

impl Config {
    /// Reads a TOML file; unknown keys are refused.
    pub fn from_file(path: &Path) -> anyhow::Result<Config> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read config {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| anyhow::anyhow!("invalid config {}: {e}", path.display()))
    }

    /// A configuration for tests: port 0 on loopback, the given folder.
    pub fn for_test(data_dir: &Path) -> Config {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: data_dir.to_path_buf(),
            ..Config::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses_unknown_keys() {
        let config: Config = toml::from_str(
            "listen = \"0.0.0.0:9000\"\nrequire_bearer_token = true\n[rate_limits]\nper_token = 5\n",
        )
        .unwrap();
        assert_eq!(config.listen.port(), 9000);
        assert!(config.require_bearer_token);
        assert_eq!(config.rate_limits.per_token, 5);
        assert_eq!(config.rate_limits.per_api_key, 1000);
        assert!(toml::from_str::<Config>("lisen = \"x\"").is_err());
    }
}
