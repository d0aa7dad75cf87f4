//! The parts of an absolute `http`/`https` URI (RFC 3986 §3), read
//! strictly and without normalisation: the OAuth rules compare URIs byte
//! for byte, so this module only splits and checks, it never rewrites.
//!
//! Refused outright: anything that is not ASCII of RFC 3986's character
//! set (`unreserved`, `gen-delims`, `sub-delims`, `%`), a `%` not followed
//! by two hex digits, a scheme other than lowercase `http` or `https`, an
//! empty host, and a port that is not 1 to 65535 in decimal.

use crate::limits::MAX_OAUTH_URI_BYTES;

/// An absolute URI split at its delimiters; every part borrows the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Parts<'a> {
    /// `http` or `https`.
    pub(crate) scheme: &'a str,
    /// Before an `@` in the authority, if any.
    pub(crate) userinfo: Option<&'a str>,
    /// The host as written: a name or an IP literal in brackets.
    pub(crate) host: &'a str,
    /// The port as written (digits), if any.
    pub(crate) port: Option<&'a str>,
    /// The path (may be empty).
    pub(crate) path: &'a str,
    /// After `?`, if a `?` is present (may be empty).
    pub(crate) query: Option<&'a str>,
    /// After `#`, if a `#` is present (may be empty).
    pub(crate) fragment: Option<&'a str>,
}

/// Whether `b` may appear in a URI (RFC 3986 §2: unreserved, reserved, `%`).
fn is_uri_char(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'.'
                | b'_'
                | b'~'
                | b':'
                | b'/'
                | b'?'
                | b'#'
                | b'['
                | b']'
                | b'@'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b'%'
        )
}

/// Whether every `%` starts a two-hex-digit escape (RFC 3986 §2.1).
fn escapes_well_formed(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().all(|(i, b)| {
        *b != b'%'
            || (bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    })
}

/// A port: 1 to 5 decimal digits, 1 to 65535.
fn valid_port(port: &str) -> bool {
    !port.is_empty()
        && port.len() <= 5
        && port.bytes().all(|b| b.is_ascii_digit())
        && port.parse::<u32>().is_ok_and(|p| (1..=65535).contains(&p))
}

/// A host: an IP literal in brackets, or a non-empty name without `[`/`]`.
fn valid_host(host: &str) -> bool {
    if let Some(inner) = host.strip_prefix('[') {
        return inner.strip_suffix(']').is_some_and(|ip| {
            !ip.is_empty()
                && ip
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() || matches!(b, b':' | b'.'))
        });
    }
    !host.is_empty() && !host.contains(['[', ']'])
}

/// Splits an absolute `http`/`https` URI, or `None` when it is not one.
pub(crate) fn split(text: &str) -> Option<Parts<'_>> {
    if text.len() > MAX_OAUTH_URI_BYTES
        || !text.bytes().all(is_uri_char)
        || !escapes_well_formed(text)
    {
        return None;
    }
    let (scheme, rest) = text.split_once("://")?;
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let (rest, fragment) = match rest.split_once('#') {
        Some((before, after)) => (before, Some(after)),
        None => (rest, None),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((before, after)) => (before, Some(after)),
        None => (rest, None),
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let (userinfo, host_port) = match authority.rsplit_once('@') {
        Some((user, hp)) => (Some(user), hp),
        None => (None, authority),
    };
    // The port follows the last `:` outside an IP literal's brackets.
    let (host, port) = match host_port.rfind(':') {
        Some(at) if !host_port.get(at..)?.contains(']') => {
            let (host, port) = host_port.split_at(at);
            (host, Some(port.get(1..)?))
        }
        _ => (host_port, None),
    };
    if !valid_host(host) || port.is_some_and(|p| !valid_port(p)) {
        return None;
    }
    Some(Parts {
        scheme,
        userinfo,
        host,
        port,
        path,
        query,
        fragment,
    })
}

/// The loopback IP literals of RFC 8252 §7.3 (and OAuth 2.1 "Loopback
/// Interface Redirection"). `localhost` is a name, not one of them.
pub(crate) const LOOPBACK_LITERALS: [&str; 2] = ["127.0.0.1", "[::1]"];

/// Whether `host` names the loopback interface: one of the IP literals, or
/// the name `localhost`.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    LOOPBACK_LITERALS.contains(&host) || host == "localhost"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_the_delimiters() {
        let p = split("https://u:p@host.example:8443/a/b?x=1#frag").unwrap();
        assert_eq!(
            p,
            Parts {
                scheme: "https",
                userinfo: Some("u:p"),
                host: "host.example",
                port: Some("8443"),
                path: "/a/b",
                query: Some("x=1"),
                fragment: Some("frag"),
            }
        );
        let p = split("http://[::1]:9000/cb").unwrap();
        assert_eq!((p.host, p.port, p.path), ("[::1]", Some("9000"), "/cb"));
        let p = split("http://[::1]/cb").unwrap();
        assert_eq!((p.host, p.port), ("[::1]", None));
        let p = split("https://a.example").unwrap();
        assert_eq!((p.path, p.query, p.fragment), ("", None, None));
        let p = split("https://a.example/?#").unwrap();
        assert_eq!((p.path, p.query, p.fragment), ("/", Some(""), Some("")));
    }

    #[test]
    fn refuses_what_is_not_an_http_uri() {
        for bad in [
            "",
            "/relative",
            "a.example/cb",
            "ftp://a.example/x",
            "HTTPS://a.example/x",
            "https:/a.example",
            "https://",
            "https://:443/x",
            "https://a.example:0/x",
            "https://a.example:65536/x",
            "https://a.example:/x",
            "https://a.example:+1/x",
            "https://a.example/a b",
            "https://a.example/\u{e9}",
            "https://a.example/%zz",
            "https://a.example/%2",
            "https://a.example/<x>",
            "https://[::1/x",
            "https://[zz]/x",
        ] {
            assert_eq!(split(bad), None, "{bad}");
        }
        let long = format!("https://a.example/{}", "x".repeat(MAX_OAUTH_URI_BYTES));
        assert_eq!(split(&long), None);
    }
}
