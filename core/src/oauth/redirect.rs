//! Redirect URIs: which ones a client may register, and whether the one an
//! authorization request names is a registered one.
//!
//! - **Registration** ([`RedirectUri::parse`]): an absolute `https` URI, or
//!   `http` on the loopback interface (`127.0.0.1`, `[::1]`, `localhost`)
//!   — MCP 2026-07-28 security considerations, "Communication Security"
//!   item 2; no fragment (RFC 6749 §3.1.2); no userinfo (RFC 9700 §4.1:
//!   `https://app.example@evil.example/` reads as one host and goes to
//!   another); at most [`MAX_OAUTH_URI_BYTES`](crate::limits::MAX_OAUTH_URI_BYTES) bytes.
//! - **Matching** ([`matches()`]): exact, byte for byte (RFC 9700 §2.1 and
//!   §4.1.3; draft-ietf-oauth-client-id-metadata-document-01 §4.5). One
//!   exception: `http` with an IP-literal loopback host (`127.0.0.1` or
//!   `[::1]`) on both sides compares with the port removed, because a
//!   native client opens whatever port is free (RFC 8252 §7.3: "MUST allow
//!   any port"). `localhost` is a name, not a literal: it matches exactly,
//!   port included (RFC 8252 §8.3 calls it NOT RECOMMENDED).
//! - **Classification** ([`RedirectUri::kind`]): what the consent page
//!   says about where the browser goes next (MCP security considerations
//!   "Localhost Redirect URI Risks": MUST display the redirect host, SHOULD
//!   warn for loopback).

use serde::{Deserialize, Serialize};

use super::OAuthError;
use super::uri::{LOOPBACK_LITERALS, Parts, is_loopback_host, split};

/// Where a redirect URI sends the browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RedirectKind {
    /// An `https` URI on a host other than loopback.
    Https,
    /// `http` on `127.0.0.1` or `[::1]`: any port matches.
    LoopbackIp,
    /// A loopback host matched exactly, port included: `localhost` (a
    /// name, RFC 8252 §8.3), or `https` on a loopback literal.
    Localhost,
}

impl RedirectKind {
    /// Whether the page should warn that the code goes to a program on the
    /// signer's own machine (loopback literal or `localhost`).
    pub fn is_loopback(self) -> bool {
        matches!(self, RedirectKind::LoopbackIp | RedirectKind::Localhost)
    }
}

/// A redirect URI a client may register.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RedirectUri(String);

/// Why a URI cannot be a redirect URI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RedirectError {
    #[error("a redirect URI must be an absolute http or https URI of at most 2048 bytes")]
    Invalid,
    #[error("a redirect URI must not have a fragment (RFC 6749 §3.1.2)")]
    Fragment,
    #[error("a redirect URI must not have userinfo")]
    Userinfo,
    #[error("a redirect URI must be https, or http on 127.0.0.1, [::1] or localhost")]
    NotHttps,
    #[error("redirect_uri is not one the client registered")]
    Mismatch,
}

impl RedirectError {
    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            RedirectError::Invalid => "redirect_uri_invalid",
            RedirectError::Fragment => "redirect_uri_fragment",
            RedirectError::Userinfo => "redirect_uri_userinfo",
            RedirectError::NotHttps => "redirect_uri_not_https",
            RedirectError::Mismatch => "redirect_uri_mismatch",
        }
    }

    /// The OAuth `error` (never sent to the URI itself: RFC 6749 §4.1.2.1).
    pub fn oauth_error(&self) -> OAuthError {
        OAuthError::for_code(self.code())
    }
}

/// The parts of a valid redirect URI, or why it is not one.
fn checked(text: &str) -> Result<Parts<'_>, RedirectError> {
    let parts = split(text).ok_or(RedirectError::Invalid)?;
    if parts.fragment.is_some() {
        return Err(RedirectError::Fragment);
    }
    if parts.userinfo.is_some() {
        return Err(RedirectError::Userinfo);
    }
    if parts.scheme == "http" && !is_loopback_host(parts.host) {
        return Err(RedirectError::NotHttps);
    }
    Ok(parts)
}

fn kind_of(parts: &Parts<'_>) -> RedirectKind {
    if parts.scheme == "http" && LOOPBACK_LITERALS.contains(&parts.host) {
        RedirectKind::LoopbackIp
    } else if parts.host == "localhost" || LOOPBACK_LITERALS.contains(&parts.host) {
        RedirectKind::Localhost
    } else {
        RedirectKind::Https
    }
}

impl RedirectUri {
    /// Reads a redirect URI to register (or one a request names).
    pub fn parse(text: &str) -> Result<RedirectUri, RedirectError> {
        checked(text)?;
        Ok(RedirectUri(text.to_owned()))
    }

    /// The URI as registered.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The host as written (an IP literal keeps its brackets), for the page.
    pub fn host(&self) -> &str {
        split(&self.0).map_or("", |p| p.host)
    }

    /// Where it sends the browser.
    pub fn kind(&self) -> RedirectKind {
        split(&self.0).map_or(RedirectKind::Https, |p| kind_of(&p))
    }

    /// The requested URI if it matches this registered one (see [`matches()`]).
    pub fn check(&self, requested: &str) -> Result<RedirectUri, RedirectError> {
        if matches(&self.0, requested) {
            RedirectUri::parse(requested)
        } else {
            Err(RedirectError::Mismatch)
        }
    }
}

impl TryFrom<String> for RedirectUri {
    type Error = RedirectError;
    fn try_from(text: String) -> Result<RedirectUri, RedirectError> {
        RedirectUri::parse(&text)
    }
}

impl From<RedirectUri> for String {
    fn from(uri: RedirectUri) -> String {
        uri.0
    }
}

/// The text without its port, for an `http` loopback-literal URI only.
fn without_port(text: &str, parts: &Parts<'_>) -> Option<String> {
    if parts.scheme != "http" || !LOOPBACK_LITERALS.contains(&parts.host) {
        return None;
    }
    let prefix = format!("http://{}", parts.host);
    let rest = text.get(prefix.len()..)?;
    let rest = match parts.port {
        Some(port) => rest.strip_prefix(':')?.strip_prefix(port)?,
        None => rest,
    };
    Some(format!("{prefix}{rest}"))
}

/// Whether `requested` is the `registered` redirect URI: both valid, and
/// equal byte for byte — or, when both are `http` on the same loopback IP
/// literal, equal once their ports are removed (RFC 8252 §7.3). Nothing is
/// normalised: case, percent-encoding, a trailing `/` or an added query
/// all make a different URI (RFC 9700 §4.1.3).
pub fn matches(registered: &str, requested: &str) -> bool {
    let (Ok(reg), Ok(req)) = (checked(registered), checked(requested)) else {
        return false;
    };
    if registered == requested {
        return true;
    }
    match (
        without_port(registered, &reg),
        without_port(requested, &req),
    ) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// The registered URI that `requested` matches, if any.
pub fn find<'a>(registered: &'a [RedirectUri], requested: &str) -> Option<&'a RedirectUri> {
    registered.iter().find(|r| matches(r.as_str(), requested))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan's §5.1 "redirect URI mismatch" table, and more.
    #[test]
    fn redirect_uri_must_match_exactly() {
        let table: &[(&str, &str, bool)] = &[
            ("https://app.example/cb", "https://app.example/cb", true),
            (
                "https://app.example/cb",
                "https://app.example/cb/evil",
                false,
            ),
            ("https://app.example/cb", "https://APP.example/cb", false),
            ("https://app.example/cb", "https://app.example/cb/", false),
            (
                "https://app.example/cb",
                "https://app.example/cb?x=1",
                false,
            ),
            (
                "https://app.example/cb?x=1",
                "https://app.example/cb?x=1",
                true,
            ),
            (
                "https://app.example/cb",
                "https://app.example@evil.example/cb",
                false,
            ),
            ("https://app.example/cb", "https://app.example/cb#x", false),
            (
                "https://app.example/cb",
                "https://app.example:443/cb",
                false,
            ),
            ("https://app.example/cb", "https://app.example/%63b", false),
            ("https://app.example/cb", "http://app.example/cb", false),
            (
                "http://localhost:6274/oauth/callback",
                "http://localhost:6274/oauth/callback",
                true,
            ),
            (
                "http://localhost:6274/cb",
                "http://localhost:6275/cb",
                false,
            ),
            ("http://localhost/cb", "http://localhost:6274/cb", false),
            (
                "http://127.0.0.1/callback",
                "http://127.0.0.1:49152/callback",
                true,
            ),
            (
                "http://127.0.0.1:8080/callback",
                "http://127.0.0.1:49152/callback",
                true,
            ),
            (
                "http://127.0.0.1:8080/callback",
                "http://127.0.0.1/callback",
                true,
            ),
            ("http://[::1]/callback", "http://[::1]:61000/callback", true),
            ("http://[::1]:1/callback", "http://[::1]:2/callback", true),
            (
                "http://127.0.0.1/callback",
                "http://127.0.0.1:49152/callback/evil",
                false,
            ),
            (
                "http://127.0.0.1/callback",
                "http://127.0.0.1:49152/callback?x",
                false,
            ),
            (
                "http://127.0.0.1/callback",
                "http://localhost:49152/callback",
                false,
            ),
            (
                "http://127.0.0.1/callback",
                "http://localhost/callback",
                false,
            ),
            ("http://127.0.0.1/callback", "http://[::1]/callback", false),
            (
                "http://127.0.0.1/callback",
                "https://127.0.0.1:49152/callback",
                false,
            ),
            (
                "https://127.0.0.1/callback",
                "https://127.0.0.1:49152/callback",
                false,
            ),
            (
                "http://127.0.0.1/callback",
                "http://127.0.0.1:0/callback",
                false,
            ),
            (
                "http://127.0.0.1/callback",
                "http://127.0.0.1:49152/callback#f",
                false,
            ),
            (
                "http://127.0.0.1/callback",
                "http://u@127.0.0.1:49152/callback",
                false,
            ),
            ("http://app.example/cb", "http://app.example/cb", false),
            (
                "https://app.example/cb#f",
                "https://app.example/cb#f",
                false,
            ),
        ];
        for (registered, requested, expect) in table {
            assert_eq!(
                matches(registered, requested),
                *expect,
                "{registered} vs {requested}"
            );
        }
    }

    #[test]
    fn registration() {
        for (text, kind, host) in [
            ("https://app.example/cb", RedirectKind::Https, "app.example"),
            ("http://127.0.0.1/cb", RedirectKind::LoopbackIp, "127.0.0.1"),
            ("http://[::1]:8000/cb", RedirectKind::LoopbackIp, "[::1]"),
            (
                "http://localhost:6274/cb",
                RedirectKind::Localhost,
                "localhost",
            ),
            ("https://localhost/cb", RedirectKind::Localhost, "localhost"),
            ("https://127.0.0.1/cb", RedirectKind::Localhost, "127.0.0.1"),
        ] {
            let uri = RedirectUri::parse(text).unwrap();
            assert_eq!((uri.kind(), uri.host()), (kind, host), "{text}");
            assert_eq!(kind.is_loopback(), kind != RedirectKind::Https);
        }
        for (text, error) in [
            ("/cb", RedirectError::Invalid),
            ("myapp://cb", RedirectError::Invalid),
            ("https://app.example/cb#", RedirectError::Fragment),
            ("https://u:p@app.example/cb", RedirectError::Userinfo),
            ("http://app.example/cb", RedirectError::NotHttps),
            ("http://127.0.0.2/cb", RedirectError::NotHttps),
        ] {
            assert_eq!(RedirectUri::parse(text), Err(error), "{text}");
        }
    }

    #[test]
    fn check_and_find() {
        let registered = [
            RedirectUri::parse("https://app.example/cb").unwrap(),
            RedirectUri::parse("http://127.0.0.1/callback").unwrap(),
        ];
        let found = find(&registered, "http://127.0.0.1:5000/callback").unwrap();
        assert_eq!(found.as_str(), "http://127.0.0.1/callback");
        assert_eq!(
            found
                .check("http://127.0.0.1:5000/callback")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:5000/callback"
        );
        assert_eq!(find(&registered, "https://app.example/cb2"), None);
        assert_eq!(
            registered[0].check("https://app.example/cb2"),
            Err(RedirectError::Mismatch)
        );
    }

    #[test]
    fn codes_are_in_the_table() {
        for e in [
            RedirectError::Invalid,
            RedirectError::Fragment,
            RedirectError::Userinfo,
            RedirectError::NotHttps,
            RedirectError::Mismatch,
        ] {
            assert!(super::super::listed(e.code()), "{}", e.code());
        }
    }
}
