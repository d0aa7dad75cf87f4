//! Client ID metadata documents fetched for the authorization server
//! (draft-ietf-oauth-client-id-metadata-document-01, "CIMD"; docs/oauth.md).
//! A client that names itself by an `https` URL is known by the document
//! at that URL. The authorization endpoint checks only the URL's form
//! (core `ClientIdUrl`): the document is fetched once a person has signed
//! in on the consent page (`requests/open`, again or from the cache at
//! `requests/decision`), so an unauthenticated request makes the server
//! fetch nothing.
//!
//! A fetch follows the webhooks' rules against server-side request
//! forgery (CIMD §6.5; `webhooks::ssrf`):
//!
//! - the URL's every address is public ([`ssrf::check_url`]) and its port
//!   443 or 8443; the client resolves names only through
//!   [`ssrf::PublicOnly`], so a name that changes its answer after the
//!   check reaches nothing private;
//! - no redirect is followed (CIMD §4: a 3xx is an error like any other
//!   answer but 200), no proxy is used;
//! - the whole exchange ends after `[oauth.client_documents] timeout_ms`;
//! - the body is read up to `max_bytes` and the connection dropped beyond
//!   (§6.6: 5 KB recommended);
//! - the answer is `200` with a JSON media type (`application/json` or
//!   `application/*+json`), and core's `client_document::parse` judges the
//!   bytes (`client_id` equal to the URL, public clients only, …).
//!
//! A refusal gives a reason for the page and never names an address the
//! server resolved (only one the URL wrote).
//!
//! **Cache** (CIMD §4.4): in memory, per process, by URL. A document is
//! kept for its `Cache-Control: max-age` clamped to `[cache_min_s,
//! cache_max_s]` (`cache_min_s` without one); `no-store` or `no-cache`
//! keeps it not at all (Mandate does not revalidate). Errors and invalid
//! documents are never kept. At most [`MAX_ENTRIES`] documents: when full,
//! the expired go first, then the one closest to expiring.
//!
//! **Test hooks**: `allow_loopback` lets a URL name a loopback IP literal
//! on any port (not a name, and no other private address); `extra_roots`
//! adds certificate authorities. `Config::check` refuses both unless the
//! server listens on loopback.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mandate_core::oauth::client_document::{self, ClientDocument, ClientIdUrl};
use reqwest::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HeaderMap};

use crate::clock::Now;
use crate::config::ClientDocumentsConfig;
use crate::webhooks::ssrf::{self, UrlError};

/// The most documents kept at once.
pub const MAX_ENTRIES: usize = 1024;
/// The ports a document may be fetched from (unless the URL is a loopback
/// literal and `allow_loopback` is on).
pub const PORTS: [u16; 2] = [443, 8443];
const USER_AGENT: &str = concat!("Mandate-OAuth/", env!("CARGO_PKG_VERSION"));

/// Why a client's document cannot be used: a reason for the person on the
/// consent page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// A document kept, and the moment (unix ms) it is no longer used.
#[derive(Debug, Clone)]
struct Kept {
    document: Arc<ClientDocument>,
    until_ms: i64,
}

/// The fetcher and its cache.
#[derive(Debug)]
pub struct ClientDocuments {
    http: reqwest::Client,
    config: ClientDocumentsConfig,
    kept: Mutex<HashMap<String, Kept>>,
}

impl ClientDocuments {
    /// The fetcher for `config`; a PEM file of `extra_roots` that cannot be
    /// read stops the start.
    pub fn new(config: &ClientDocumentsConfig) -> anyhow::Result<ClientDocuments> {
        let mut roots = Vec::new();
        for file in &config.extra_roots {
            let pem = std::fs::read(file).map_err(|e| {
                anyhow::anyhow!(
                    "[oauth.client_documents] extra_roots: cannot read {}: {e}",
                    file.display()
                )
            })?;
            let found = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                anyhow::anyhow!(
                    "[oauth.client_documents] extra_roots: {} holds no usable certificate: {e}",
                    file.display()
                )
            })?;
            roots.extend(found);
        }
        let timeout = Duration::from_millis(config.timeout_ms.get());
        crate::install_tls_provider();
        let http = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .https_only(true)
            .dns_resolver(ssrf::PublicOnly)
            .tls_certs_merge(roots)
            .build()
            .map_err(|e| anyhow::anyhow!("the client-document HTTP client: {e}"))?;
        Ok(ClientDocuments {
            http,
            config: config.clone(),
            kept: Mutex::new(HashMap::new()),
        })
    }

    /// The document of `client_id`: kept and still fresh at `now`, else
    /// fetched (and kept as its answer allows).
    pub async fn get(
        &self,
        client_id: &ClientIdUrl,
        now: Now,
    ) -> Result<Arc<ClientDocument>, Refused> {
        if let Some(kept) = self.kept_at(client_id.as_str(), now) {
            return Ok(kept);
        }
        let (document, keep_s) = self.fetch(client_id).await?;
        let document = Arc::new(document);
        if let Some(seconds) = keep_s {
            let until_ms = now.ms().saturating_add(
                i64::try_from(seconds)
                    .unwrap_or(i64::MAX)
                    .saturating_mul(1000),
            );
            self.keep(client_id.as_str(), document.clone(), until_ms, now);
        }
        Ok(document)
    }

    fn kept_at(&self, url: &str, now: Now) -> Option<Arc<ClientDocument>> {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.get(url)
            .filter(|entry| now.ms() < entry.until_ms)
            .map(|entry| entry.document.clone())
    }

    fn keep(&self, url: &str, document: Arc<ClientDocument>, until_ms: i64, now: Now) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() >= MAX_ENTRIES && !kept.contains_key(url) {
            kept.retain(|_, entry| now.ms() < entry.until_ms);
            if kept.len() >= MAX_ENTRIES
                && let Some(soonest) = kept
                    .iter()
                    .min_by_key(|(_, entry)| entry.until_ms)
                    .map(|(key, _)| key.clone())
            {
                kept.remove(&soonest);
            }
        }
        kept.insert(url.to_owned(), Kept { document, until_ms });
    }

    /// Checks where `client_id` points (the SSRF rules), fetches it and
    /// judges it; also how long it may be kept (`None`: not at all).
    async fn fetch(
        &self,
        client_id: &ClientIdUrl,
    ) -> Result<(ClientDocument, Option<u64>), Refused> {
        let url = self.checked_url(client_id.as_str()).await?;
        let mut response = self
            .http
            .get(url)
            .header(ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| self.transport(&e))?;
        let status = response.status();
        if status != reqwest::StatusCode::OK {
            return Err(Refused(format!(
                "its URL answered HTTP {} (only 200 is taken, and redirects are not followed)",
                status.as_u16()
            )));
        }
        if !is_json(response.headers()) {
            return Err(Refused(
                "its URL did not answer with a JSON media type (application/json)".to_owned(),
            ));
        }
        let keep_s = self.keep_seconds(response.headers());
        let max = usize::try_from(self.config.max_bytes.get()).unwrap_or(usize::MAX);
        let too_large = || Refused(format!("the document is larger than {max} bytes"));
        if response
            .content_length()
            .is_some_and(|length| length > self.config.max_bytes.get())
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.transport(&e))? {
            if body.len().saturating_add(chunk.len()) > max {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        let document =
            client_document::parse(client_id, &body).map_err(|e| Refused(e.to_string()))?;
        Ok((document, keep_s))
    }

    /// The URL to fetch, once the SSRF rules pass.
    async fn checked_url(&self, text: &str) -> Result<reqwest::Url, Refused> {
        let url = reqwest::Url::parse(text).map_err(|e| Refused(format!("bad URL: {e}")))?;
        if self.config.allow_loopback && is_loopback_literal(&url) {
            return Ok(url);
        }
        ssrf::check_url(text, false, &PORTS)
            .await
            .map_err(|refused| match refused {
                UrlError::PortNotAllowed { port, .. } => Refused(format!(
                    "port {port} is not one documents are fetched from (443, 8443)"
                )),
                other => Refused(other.to_string().replacen("url", "the client_id URL", 1)),
            })
    }

    /// A transport failure, told without the addresses or text of the
    /// underlying error (which can name what a name resolved to).
    fn transport(&self, error: &reqwest::Error) -> Refused {
        if error.is_timeout() {
            Refused(format!(
                "its URL did not answer within {} ms",
                self.config.timeout_ms.get()
            ))
        } else if error.is_connect() {
            Refused("its URL could not be reached".to_owned())
        } else {
            Refused("fetching it failed".to_owned())
        }
    }

    /// How long an answer with these headers is kept, in seconds.
    fn keep_seconds(&self, headers: &HeaderMap) -> Option<u64> {
        let (min, max) = (self.config.cache_min_s.get(), self.config.cache_max_s.get());
        let mut max_age = None;
        for value in headers.get_all(CACHE_CONTROL) {
            let Ok(value) = value.to_str() else {
                return None;
            };
            for directive in value.split(',') {
                let directive = directive.trim().to_ascii_lowercase();
                if directive == "no-store" || directive == "no-cache" {
                    return None;
                }
                if let Some(seconds) = directive.strip_prefix("max-age=") {
                    max_age = seconds.trim_matches('"').parse::<u64>().ok();
                }
            }
        }
        Some(max_age.unwrap_or(min).clamp(min, max))
    }
}

/// Whether a URL's host is a loopback IP literal.
fn is_loopback_literal(url: &reqwest::Url) -> bool {
    url.host_str()
        .map(|host| host.trim_start_matches('[').trim_end_matches(']'))
        .and_then(|host| host.parse::<IpAddr>().ok())
        .is_some_and(|ip| ip.is_loopback())
}

/// Whether the answer says it is JSON: `application/json` or
/// `application/<something>+json` (RFC 6839 §3.1), parameters aside.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(Ok(value)) = headers.get(CONTENT_TYPE).map(|v| v.to_str()) else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || essence
            .strip_prefix("application/")
            .is_some_and(|subtype| subtype.ends_with("+json") && subtype.len() > "+json".len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(reqwest::header::HeaderName, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn only_json_media_types_are_taken() {
        for (value, json) in [
            ("application/json", true),
            ("Application/JSON; charset=utf-8", true),
            ("application/client-metadata+json", true),
            ("application/+json", false),
            ("text/json", false),
            ("text/html", false),
            ("application/jsonp", false),
        ] {
            assert_eq!(is_json(&headers(&[(CONTENT_TYPE, value)])), json, "{value}");
        }
        assert!(!is_json(&HeaderMap::new()));
    }

    #[test]
    fn max_age_is_clamped_and_no_store_keeps_nothing() {
        let documents = ClientDocuments::new(&ClientDocumentsConfig::default()).unwrap();
        for (value, kept) in [
            ("max-age=600", Some(600)),
            ("public, max-age=10", Some(300)),
            ("max-age=999999999", Some(86_400)),
            ("max-age=oops", Some(300)),
            ("no-store", None),
            ("max-age=600, no-store", None),
            ("no-cache", None),
        ] {
            assert_eq!(
                documents.keep_seconds(&headers(&[(CACHE_CONTROL, value)])),
                kept,
                "{value}"
            );
        }
        assert_eq!(documents.keep_seconds(&HeaderMap::new()), Some(300));
    }

    #[test]
    fn the_cache_is_bounded_and_drops_the_soonest_to_expire_first() {
        let documents = ClientDocuments::new(&ClientDocumentsConfig::default()).unwrap();
        let now = Now::from_ms(1_000);
        let document = |n: usize| {
            let url = format!("https://client{n}.example/c.json");
            let id = ClientIdUrl::parse(&url).unwrap();
            let body = serde_json::json!({
                "client_id": url, "client_name": "C", "redirect_uris": ["https://app.example/cb"]
            });
            (
                url,
                Arc::new(client_document::parse(&id, body.to_string().as_bytes()).unwrap()),
            )
        };
        for n in 0..MAX_ENTRIES {
            let (url, doc) = document(n);
            // Entry 7 expires first.
            let until = if n == 7 { 2_000 } else { 10_000 };
            documents.keep(&url, doc, until, now);
        }
        let (url, doc) = document(MAX_ENTRIES);
        documents.keep(&url, doc, 10_000, now);
        let kept = documents.kept.lock().unwrap();
        assert_eq!(kept.len(), MAX_ENTRIES);
        assert!(!kept.contains_key("https://client7.example/c.json"));
        assert!(kept.contains_key(&url));
        drop(kept);
        assert!(documents.kept_at(&url, Now::from_ms(9_999)).is_some());
        assert!(documents.kept_at(&url, Now::from_ms(10_000)).is_none());
    }
}
