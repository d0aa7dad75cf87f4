//! The audience of a token (`aud`, RFC 7519 §4.1.3): the one resource
//! server the token is meant for, named by an RFC 8707 resource indicator.
//!
//! - [`check_resource_uri`]: the form Mandate takes for a resource
//!   indicator, as a token's `aud` and as an OAuth `resource` parameter;
//! - [`Audience`]: a URI of that form, as a token carries it;
//! - [`Audience::matches`]: whether a resource server's own identifier names
//!   the same resource (RFC 3986 §6.2.2–6.2.3 equivalence).
//!
//! RFC 7519 lets `aud` be a string or an array of strings. Mandate issues
//! and accepts a single string only: a token is for one resource server,
//! and narrowing compares one value. A token whose `aud` is an array, or
//! any other type, is refused as malformed claims (`malformed_claims`); a
//! string that is not a resource URI as an invalid claim (`invalid_claim`).
//!
//! It refuses to know which resources exist or who may name them: the
//! server decides which `resource` to accept, a gate which identifier is
//! its own.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::dpop::normalize_url;
use crate::limits::MAX_AUDIENCE_LEN;
use crate::status_list::{path_byte, percent_ok};

/// Why a resource indicator was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ResourceUriError {
    #[error("a resource URI may be at most {MAX_AUDIENCE_LEN} bytes")]
    TooLong,
    #[error("a resource URI must not have a fragment (RFC 8707 §2)")]
    Fragment,
    #[error(
        "a resource URI must be an absolute https URI, or http on a loopback host (127.0.0.1, [::1], localhost)"
    )]
    Scheme,
    #[error(
        "a resource URI must be `scheme://host[:port][/path][?query]`: a host, no user information, RFC 3986 characters only"
    )]
    Malformed,
}

impl ResourceUriError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            ResourceUriError::TooLong => "resource_uri_too_long",
            ResourceUriError::Fragment => "resource_uri_fragment",
            ResourceUriError::Scheme => "resource_uri_scheme",
            ResourceUriError::Malformed => "resource_uri_malformed",
        }
    }
}

/// The hosts `http` is taken for: a resource on this machine (a local MCP
/// server). An audience is an identifier and never fetched, so this allows
/// no request anywhere.
const LOOPBACK_HOSTS: [&str; 3] = ["127.0.0.1", "[::1]", "localhost"];

/// Checks the form of a resource indicator, the one rule for a token's `aud`
/// and an OAuth `resource` parameter: an absolute URI (RFC 3986 §4.3) with
/// no fragment (RFC 8707 §2: "MUST NOT include a fragment component"),
/// `https` — or `http` with a loopback host — in lower case, with a host, an
/// optional port of digits, no user information, only RFC 3986 characters
/// (so no spaces, controls or non-ASCII; `%` only as a triplet), and at most
/// [`MAX_AUDIENCE_LEN`] bytes. RFC 8707 §2 says the indicator SHOULD NOT
/// have a query; one is taken, and compared like the rest.
pub fn check_resource_uri(uri: &str) -> Result<(), ResourceUriError> {
    if uri.len() > MAX_AUDIENCE_LEN {
        return Err(ResourceUriError::TooLong);
    }
    if uri.contains('#') {
        return Err(ResourceUriError::Fragment);
    }
    let (secure, rest) = match uri.strip_prefix("https://") {
        Some(rest) => (true, rest),
        None => (
            false,
            uri.strip_prefix("http://")
                .ok_or(ResourceUriError::Scheme)?,
        ),
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let host = host_of(authority).ok_or(ResourceUriError::Malformed)?;
    if !path.bytes().all(path_byte) || !percent_ok(path.as_bytes()) {
        return Err(ResourceUriError::Malformed);
    }
    if !secure && !LOOPBACK_HOSTS.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        return Err(ResourceUriError::Scheme);
    }
    Ok(())
}

/// The host of `host[:port]`: a registered name (RFC 3986 `reg-name`) or an
/// IPv6 literal in brackets; the port, when present, 1 to 5 digits. `None`
/// for anything else, user information included.
fn host_of(authority: &str) -> Option<&str> {
    let (host, port) = if authority.starts_with('[') {
        let close = authority.find(']')?;
        let (host, rest) = authority.split_at(close + 1);
        let inner = host.get(1..host.len() - 1)?;
        let literal = !inner.is_empty()
            && inner
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
        (literal.then_some(host)?, rest.strip_prefix(':'))
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let name_ok = host.starts_with('[')
        || (!host.is_empty() && host.bytes().all(reg_name_byte) && percent_ok(host.as_bytes()));
    let port_ok =
        port.is_none_or(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()));
    (name_ok && port_ok).then_some(host)
}

/// Whether a byte may appear in a registered name (RFC 3986 `unreserved`,
/// `sub-delims` and `%` of a triplet).
fn reg_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=%".contains(&b)
}

/// A token's audience: one resource indicator of the form
/// [`check_resource_uri`] takes, kept as written. Narrowing compares two
/// audiences character for character (a child keeps its parent's exactly);
/// a resource server compares its identifier with [`Audience::matches`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Audience(String);

impl Audience {
    /// An audience, if `uri` has the form of a resource indicator.
    pub fn parse(uri: &str) -> Result<Audience, ResourceUriError> {
        check_resource_uri(uri)?;
        Ok(Audience(uri.to_owned()))
    }

    /// The URI as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `resource`, a resource server's own identifier (the
    /// `resource` of its RFC 9728 metadata), names this audience: equal
    /// after RFC 3986 §6.2.2 and §6.2.3 normalisation (scheme and host in
    /// lower case, the default port dropped, an empty path as `/`,
    /// percent-encoding normalised, dot segments removed), and with the same
    /// query, character for character. So `https://mcp.example.com` matches
    /// `https://MCP.example.com:443/` (clients that parse the identifier as
    /// a URL send the latter), and never `https://mcp.example.com/other`
    /// or a URL under it: a token is for the resource it names.
    pub fn matches(&self, resource: &str) -> bool {
        let query = |uri: &str| uri.split_once('?').map(|(_, q)| q.to_owned());
        if resource.contains('#') {
            return false;
        }
        match (normalize_url(&self.0), normalize_url(resource)) {
            (Some(own), Some(other)) => own == other && query(&self.0) == query(resource),
            _ => false,
        }
    }
}

impl TryFrom<String> for Audience {
    type Error = ResourceUriError;
    fn try_from(uri: String) -> Result<Audience, ResourceUriError> {
        check_resource_uri(&uri)?;
        Ok(Audience(uri))
    }
}

impl From<Audience> for String {
    fn from(audience: Audience) -> String {
        audience.0
    }
}

impl fmt::Display for Audience {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_uris() {
        let long_path = format!("https://mcp.example.com/{}", "a".repeat(MAX_AUDIENCE_LEN));
        let cases: &[(&str, Result<(), ResourceUriError>)] = &[
            ("https://mcp.example.com", Ok(())),
            ("https://mcp.example.com/", Ok(())),
            ("https://mcp.example.com/mcp", Ok(())),
            ("https://mcp.example.com:8443/a/b?tenant=1", Ok(())),
            ("https://[2001:db8::1]/mcp", Ok(())),
            ("https://[2001:db8::1]:443/mcp", Ok(())),
            ("https://my%2Dhost.example/mcp%20x", Ok(())),
            ("http://127.0.0.1:8080/mcp", Ok(())),
            ("http://[::1]/mcp", Ok(())),
            ("http://localhost:3000/mcp", Ok(())),
            ("http://LOCALHOST/mcp", Ok(())),
            (
                "https://mcp.example.com/mcp#frag",
                Err(ResourceUriError::Fragment),
            ),
            ("https://mcp.example.com#", Err(ResourceUriError::Fragment)),
            ("http://mcp.example.com/mcp", Err(ResourceUriError::Scheme)),
            ("http://127.0.0.2/mcp", Err(ResourceUriError::Scheme)),
            (
                "http://localhost.example.com/",
                Err(ResourceUriError::Scheme),
            ),
            ("HTTPS://mcp.example.com", Err(ResourceUriError::Scheme)),
            ("ftp://mcp.example.com", Err(ResourceUriError::Scheme)),
            ("urn:mcp:server", Err(ResourceUriError::Scheme)),
            ("/mcp", Err(ResourceUriError::Scheme)),
            ("mcp.example.com/mcp", Err(ResourceUriError::Scheme)),
            ("", Err(ResourceUriError::Scheme)),
            ("https://", Err(ResourceUriError::Malformed)),
            ("https:///mcp", Err(ResourceUriError::Malformed)),
            (
                "https://user@mcp.example.com/",
                Err(ResourceUriError::Malformed),
            ),
            (
                "https://user:pw@mcp.example.com/",
                Err(ResourceUriError::Malformed),
            ),
            (
                "https://mcp.example.com:/",
                Err(ResourceUriError::Malformed),
            ),
            (
                "https://mcp.example.com:443443/",
                Err(ResourceUriError::Malformed),
            ),
            (
                "https://mcp.example.com:ab/",
                Err(ResourceUriError::Malformed),
            ),
            ("https://[::1/mcp", Err(ResourceUriError::Malformed)),
            ("https://[]/mcp", Err(ResourceUriError::Malformed)),
            ("https://[v1.x]/mcp", Err(ResourceUriError::Malformed)),
            (
                "https://mcp.example.com/a b",
                Err(ResourceUriError::Malformed),
            ),
            (
                "https://mcp.example.com/\u{e9}",
                Err(ResourceUriError::Malformed),
            ),
            (
                "https://mcp.example.com/%zz",
                Err(ResourceUriError::Malformed),
            ),
            (
                "https://mcp.exa mple.com/",
                Err(ResourceUriError::Malformed),
            ),
            (
                "https://mcp.example.com/a\nb",
                Err(ResourceUriError::Malformed),
            ),
            (&long_path, Err(ResourceUriError::TooLong)),
        ];
        for (uri, expected) in cases {
            assert_eq!(check_resource_uri(uri), *expected, "{uri}");
            assert_eq!(Audience::parse(uri).map(|_| ()), *expected, "{uri}");
        }
        let longest = format!("https://a.example/{}", "a".repeat(MAX_AUDIENCE_LEN - 18));
        assert_eq!(longest.len(), MAX_AUDIENCE_LEN);
        assert_eq!(check_resource_uri(&longest), Ok(()));
    }

    #[test]
    fn matching_a_resource_identifier() {
        let aud = Audience::parse("https://mcp.example.com").unwrap();
        for same in [
            "https://mcp.example.com",
            "https://mcp.example.com/",
            "https://MCP.Example.com:443/",
            "HTTPS://mcp.example.com",
        ] {
            assert!(aud.matches(same), "{same}");
        }
        for other in [
            "https://mcp.example.com/mcp",
            "https://mcp.example.com:8443",
            "http://mcp.example.com",
            "https://mcp.example.com.evil.example",
            "https://mcp.example.com/?x=1",
            "https://mcp.example.com/#x",
            "not a url",
        ] {
            assert!(!aud.matches(other), "{other}");
        }
        let with_path = Audience::parse("https://mcp.example.com/tools/%7Ecrm?t=1").unwrap();
        assert!(with_path.matches("https://mcp.example.com/tools/~crm?t=1"));
        assert!(!with_path.matches("https://mcp.example.com/tools/~crm"));
        assert!(!with_path.matches("https://mcp.example.com/tools/~crm/?t=1"));
        assert!(!with_path.matches("https://mcp.example.com/tools/~crm?t=2"));
    }

    #[test]
    fn serde_refuses_what_parse_refuses() {
        let aud: Audience = serde_json::from_str("\"https://mcp.example.com/mcp\"").unwrap();
        assert_eq!(aud.as_str(), "https://mcp.example.com/mcp");
        assert_eq!(
            serde_json::to_string(&aud).unwrap(),
            "\"https://mcp.example.com/mcp\""
        );
        assert!(serde_json::from_str::<Audience>("\"http://mcp.example.com\"").is_err());
        assert!(serde_json::from_str::<Audience>("[\"https://mcp.example.com\"]").is_err());
    }
}
