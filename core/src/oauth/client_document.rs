//! Client ID metadata documents (CIMD,
//! draft-ietf-oauth-client-id-metadata-document-01): a client names
//! itself by an `https` URL, and the document at that URL says who it is
//! and where its redirects go. The host fetches (after sign-in, with the
//! SSRF rules of §6.5, no redirects, §4); this module judges the URL and
//! the bytes fetched.
//!
//! **The URL** ([`ClientIdUrl`], §3): `https`; a path, and not the bare
//! root (the MCP SDKs refuse a root path too); no `.` or `..` segment
//! (percent-encoded ones included, RFC 3986 §6.2.2.2 makes them the
//! same); no fragment; no userinfo; and **no query** — §3 says "SHOULD
//! NOT", Mandate refuses it (docs/decisions.md). At most
//! [`MAX_OAUTH_URI_BYTES`](crate::limits::MAX_OAUTH_URI_BYTES) bytes. A pre-registered client's
//! id (`mcl_…`) never starts with `https://` (§6.9), so the two kinds
//! cannot be confused.
//!
//! **The document** ([`parse`]):
//! - at most [`MAX_CLIENT_DOCUMENT_BYTES`] (§6.6: 5 KB recommended);
//! - strict JSON ([RFC 8259]), an object, no member twice at any depth
//!   (a duplicate would read differently in different parsers);
//! - `client_id` equal to the URL by simple string comparison (§4.1,
//!   RFC 3986 §6.2.1; MCP client registration: "MUST validate … matches
//!   the URL exactly");
//! - `client_name` (a non-empty string, shown "says it is" beside the
//!   URL's host, §6.4) and `redirect_uris` (a non-empty list) required —
//!   the MCP specification requires both;
//! - `token_endpoint_auth_method` absent or `none`: §4.1 forbids
//!   shared-secret methods and lets other specifications require `none`;
//!   Mandate takes public clients only (no `private_key_jwt` either);
//! - no `client_secret` or `client_secret_expires_at` (§4.1 "MUST NOT be
//!   used"), nor any other `client_secret…` member;
//! - every redirect URI `https` or loopback `http` (see
//!   [`super::redirect`]);
//! - `grant_types`, if present, a list of strings holding
//!   `authorization_code` (absent means `["authorization_code"]`, RFC
//!   7591 §2);
//! - `logo_uri` ignored (§6.7: never loaded by the page), and every other
//!   member too (§4.1: "MAY define additional properties").
//!
//! An invalid document is never cached (§4.4); that is the host's rule,
//! and this module says only whether a document is valid.

use serde::Deserialize as _;
use serde_json::Value;

use super::OAuthError;
use super::redirect::{RedirectError, RedirectUri};
use super::uri::split;
use crate::json::{Strict, StrictRefusal};
use crate::limits::{MAX_CLIENT_DOCUMENT_BYTES, MAX_CLIENT_NAME_CHARS, MAX_REDIRECT_URIS};

/// Why a client identifier URL or its document is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientDocumentError {
    #[error("client_id is not a usable metadata document URL: {0}")]
    ClientId(&'static str),
    #[error("the client metadata document is larger than {MAX_CLIENT_DOCUMENT_BYTES} bytes")]
    TooLarge,
    #[error("the client metadata document is not a JSON object")]
    NotJson,
    #[error("the client metadata document names a member twice")]
    DuplicateMember,
    #[error("the document's client_id is not its URL")]
    ClientIdMismatch,
    #[error("the client metadata document has no `{0}`")]
    MissingMember(&'static str),
    #[error("the client metadata document's `{0}` is not valid")]
    InvalidMember(&'static str),
    #[error("the client metadata document has `{0}`: public clients only, no shared secret")]
    SharedSecret(String),
    #[error("token_endpoint_auth_method must be absent or `none` (public clients only)")]
    AuthMethod,
    #[error("redirect_uris[{index}]: {error}")]
    RedirectUri { index: usize, error: RedirectError },
}

impl ClientDocumentError {
    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            ClientDocumentError::ClientId(_) => "client_id_invalid",
            ClientDocumentError::TooLarge => "client_document_too_large",
            ClientDocumentError::NotJson => "client_document_not_json",
            ClientDocumentError::DuplicateMember => "client_document_duplicate_member",
            ClientDocumentError::ClientIdMismatch => "client_document_client_id_mismatch",
            ClientDocumentError::MissingMember(_) => "client_document_missing_member",
            ClientDocumentError::InvalidMember(_) => "client_document_invalid_member",
            ClientDocumentError::SharedSecret(_) => "client_document_shared_secret",
            ClientDocumentError::AuthMethod => "client_document_auth_method",
            ClientDocumentError::RedirectUri { .. } => "client_document_redirect_uri",
        }
    }

    /// The OAuth `error`: `invalid_client`. At the authorization endpoint
    /// the page tells the person and nobody is redirected (RFC 6749
    /// §4.1.2.1).
    pub fn oauth_error(&self) -> OAuthError {
        OAuthError::for_code(self.code())
    }
}

/// A client identifier that is a metadata document's URL (CIMD §3).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientIdUrl {
    text: String,
    host_end: usize,
}

/// Whether a path segment is `.` or `..`, spelled plainly or escaped.
fn is_dot_segment(segment: &str) -> bool {
    let lower = segment.to_ascii_lowercase().replace("%2e", ".");
    lower == "." || lower == ".."
}

impl ClientIdUrl {
    /// Reads a `client_id` that should be a metadata document URL.
    pub fn parse(text: &str) -> Result<ClientIdUrl, ClientDocumentError> {
        use ClientDocumentError::ClientId;
        let parts = split(text).ok_or(ClientId("not an absolute https URL"))?;
        if parts.scheme != "https" {
            return Err(ClientId("the scheme must be https"));
        }
        if parts.userinfo.is_some() {
            return Err(ClientId("userinfo is not allowed"));
        }
        if parts.fragment.is_some() {
            return Err(ClientId("a fragment is not allowed"));
        }
        if parts.query.is_some() {
            return Err(ClientId("a query is not accepted"));
        }
        if parts.path.is_empty() || parts.path == "/" {
            return Err(ClientId("a path is required"));
        }
        if parts.path.split('/').any(is_dot_segment) {
            return Err(ClientId("`.` and `..` path segments are not allowed"));
        }
        let host_end = "https://".len() + parts.host.len();
        Ok(ClientIdUrl {
            text: text.to_owned(),
            host_end,
        })
    }

    /// Whether a `client_id` is meant as a metadata document URL (it
    /// starts with `https://`, which no pre-registered id does, CIMD §6.9).
    pub fn is_url(client_id: &str) -> bool {
        client_id.starts_with("https://")
    }

    /// The URL as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The host of the URL, shown large on the consent page (CIMD §6.4).
    pub fn host(&self) -> &str {
        self.text.get("https://".len()..self.host_end).unwrap_or("")
    }
}

/// A valid client metadata document: what the server keeps of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientDocument {
    /// The URL, equal to the document's `client_id`.
    pub client_id: ClientIdUrl,
    /// What the client says it is called (shown as "says it is").
    pub client_name: String,
    /// Where its redirects may go.
    pub redirect_uris: Vec<RedirectUri>,
    /// Whether it registered the `refresh_token` grant type.
    pub refresh_token: bool,
}

/// A name shown to a person: no control characters and no bidirectional
/// overrides or isolates, which could make the page read otherwise than
/// the text is.
fn displayable(name: &str) -> bool {
    !name.trim().is_empty()
        && name.chars().count() <= MAX_CLIENT_NAME_CHARS
        && !name.chars().any(|c| {
            c.is_control()
                || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
}

/// Judges the document fetched from `url`.
pub fn parse(url: &ClientIdUrl, bytes: &[u8]) -> Result<ClientDocument, ClientDocumentError> {
    use ClientDocumentError as E;
    if bytes.len() > MAX_CLIENT_DOCUMENT_BYTES {
        return Err(E::TooLarge);
    }
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    let Strict(read) = Strict::deserialize(&mut reader).map_err(|_| E::NotJson)?;
    reader.end().map_err(|_| E::NotJson)?;
    let members = match read {
        Ok(Value::Object(members)) => members,
        Err(StrictRefusal::DuplicateMember) => return Err(E::DuplicateMember),
        Ok(_) | Err(StrictRefusal::UnsafeNumber) => return Err(E::NotJson),
    };
    if let Some(secret) = members.keys().find(|k| k.starts_with("client_secret")) {
        return Err(E::SharedSecret(secret.clone()));
    }
    match members.get("token_endpoint_auth_method") {
        None => {}
        Some(Value::String(method)) if method == "none" => {}
        Some(_) => return Err(E::AuthMethod),
    }
    match members.get("client_id") {
        None => return Err(E::MissingMember("client_id")),
        Some(Value::String(id)) if id == url.as_str() => {}
        Some(_) => return Err(E::ClientIdMismatch),
    }
    let client_name = match members.get("client_name") {
        None => return Err(E::MissingMember("client_name")),
        Some(Value::String(name)) if displayable(name) => name.clone(),
        Some(_) => return Err(E::InvalidMember("client_name")),
    };
    let redirect_uris = match members.get("redirect_uris") {
        None => return Err(E::MissingMember("redirect_uris")),
        Some(Value::Array(list)) if !list.is_empty() && list.len() <= MAX_REDIRECT_URIS => list
            .iter()
            .enumerate()
            .map(|(index, uri)| {
                let text = uri.as_str().ok_or(E::InvalidMember("redirect_uris"))?;
                RedirectUri::parse(text).map_err(|error| E::RedirectUri { index, error })
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(E::InvalidMember("redirect_uris")),
    };
    let refresh_token = match members.get("grant_types") {
        None => false,
        Some(Value::Array(list)) => {
            let names = list
                .iter()
                .map(Value::as_str)
                .collect::<Option<Vec<_>>>()
                .ok_or(E::InvalidMember("grant_types"))?;
            if !names.contains(&"authorization_code") {
                return Err(E::InvalidMember("grant_types"));
            }
            names.contains(&"refresh_token")
        }
        Some(_) => return Err(E::InvalidMember("grant_types")),
    };
    Ok(ClientDocument {
        client_id: url.clone(),
        client_name,
        redirect_uris,
        refresh_token,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const URL: &str = "https://client.example/oauth/metadata.json";

    fn url() -> ClientIdUrl {
        ClientIdUrl::parse(URL).unwrap()
    }

    fn document() -> Value {
        json!({
            "client_id": URL,
            "client_name": "Example Client",
            "redirect_uris": ["http://127.0.0.1/callback", "https://client.example/cb"],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "none",
            "logo_uri": "https://tracker.example/logo.png",
            "software_id": "anything else is ignored"
        })
    }

    fn judge(value: &Value) -> Result<ClientDocument, ClientDocumentError> {
        parse(&url(), value.to_string().as_bytes())
    }

    #[test]
    fn client_id_urls() {
        for (good, host) in [
            (URL, "client.example"),
            ("https://client.example:8443/c.json", "client.example"),
            ("https://127.0.0.1:9000/client.json", "127.0.0.1"),
            ("https://a.example/x/", "a.example"),
            ("https://a.example/.well-known/client", "a.example"),
        ] {
            let parsed = ClientIdUrl::parse(good).unwrap();
            assert_eq!((parsed.as_str(), parsed.host()), (good, host));
            assert!(ClientIdUrl::is_url(good));
        }
        for bad in [
            "http://client.example/c.json",
            "HTTPS://client.example/c.json",
            "client.example/c.json",
            "https://client.example",
            "https://client.example/",
            "https://client.example/a/./c.json",
            "https://client.example/a/../c.json",
            "https://client.example/a/%2e%2E/c.json",
            "https://client.example/..",
            "https://client.example/c.json#x",
            "https://client.example/c.json#",
            "https://u:p@client.example/c.json",
            "https://client.example@evil.example/c.json",
            "https://client.example/c.json?v=1",
            "https://client.example/c.json?",
            "mcl_01jd0000000000000000000000",
        ] {
            let error = ClientIdUrl::parse(bad).unwrap_err();
            assert_eq!(error.code(), "client_id_invalid", "{bad}");
            assert_eq!(error.oauth_error(), OAuthError::InvalidClient);
        }
        assert!(!ClientIdUrl::is_url("mcl_01jd0000000000000000000000"));
    }

    #[test]
    fn a_valid_document() {
        let read = judge(&document()).unwrap();
        assert_eq!(read.client_id.as_str(), URL);
        assert_eq!(read.client_name, "Example Client");
        assert_eq!(
            read.redirect_uris
                .iter()
                .map(RedirectUri::as_str)
                .collect::<Vec<_>>(),
            ["http://127.0.0.1/callback", "https://client.example/cb"]
        );
        assert!(read.refresh_token);
        let mut minimal = document();
        let members = minimal.as_object_mut().unwrap();
        members.remove("grant_types");
        members.remove("token_endpoint_auth_method");
        assert!(!judge(&minimal).unwrap().refresh_token);
    }

    #[test]
    fn refused_documents() {
        use ClientDocumentError as E;
        let with = |name: &str, value: Value| {
            let mut doc = document();
            doc.as_object_mut().unwrap().insert(name.to_owned(), value);
            doc
        };
        let without = |name: &str| {
            let mut doc = document();
            doc.as_object_mut().unwrap().remove(name);
            doc
        };
        let cases: Vec<(&str, Value, ClientDocumentError)> = vec![
            (
                "client_id other",
                with("client_id", json!("https://client.example/other.json")),
                E::ClientIdMismatch,
            ),
            (
                "client_id trailing slash",
                with("client_id", json!(format!("{URL}/"))),
                E::ClientIdMismatch,
            ),
            (
                "client_id case",
                with("client_id", json!(URL.to_uppercase())),
                E::ClientIdMismatch,
            ),
            (
                "client_id number",
                with("client_id", json!(1)),
                E::ClientIdMismatch,
            ),
            (
                "no client_id",
                without("client_id"),
                E::MissingMember("client_id"),
            ),
            (
                "no client_name",
                without("client_name"),
                E::MissingMember("client_name"),
            ),
            (
                "empty client_name",
                with("client_name", json!("  ")),
                E::InvalidMember("client_name"),
            ),
            (
                "client_name not text",
                with("client_name", json!(["x"])),
                E::InvalidMember("client_name"),
            ),
            (
                "client_name bidi",
                with("client_name", json!("Good\u{202e}lapyap")),
                E::InvalidMember("client_name"),
            ),
            (
                "client_name newline",
                with("client_name", json!("a\nb")),
                E::InvalidMember("client_name"),
            ),
            (
                "client_name long",
                with("client_name", json!("n".repeat(MAX_CLIENT_NAME_CHARS + 1))),
                E::InvalidMember("client_name"),
            ),
            (
                "no redirect_uris",
                without("redirect_uris"),
                E::MissingMember("redirect_uris"),
            ),
            (
                "empty redirect_uris",
                with("redirect_uris", json!([])),
                E::InvalidMember("redirect_uris"),
            ),
            (
                "redirect_uris text",
                with("redirect_uris", json!("https://client.example/cb")),
                E::InvalidMember("redirect_uris"),
            ),
            (
                "redirect_uri number",
                with("redirect_uris", json!([1])),
                E::InvalidMember("redirect_uris"),
            ),
            (
                "redirect_uri http",
                with(
                    "redirect_uris",
                    json!(["https://client.example/cb", "http://client.example/cb"]),
                ),
                E::RedirectUri {
                    index: 1,
                    error: RedirectError::NotHttps,
                },
            ),
            (
                "redirect_uri fragment",
                with("redirect_uris", json!(["https://client.example/cb#x"])),
                E::RedirectUri {
                    index: 0,
                    error: RedirectError::Fragment,
                },
            ),
            (
                "redirect_uri custom scheme",
                with("redirect_uris", json!(["com.example.app:/cb"])),
                E::RedirectUri {
                    index: 0,
                    error: RedirectError::Invalid,
                },
            ),
            (
                "too many redirect_uris",
                with(
                    "redirect_uris",
                    json!(vec!["https://client.example/cb"; MAX_REDIRECT_URIS + 1]),
                ),
                E::InvalidMember("redirect_uris"),
            ),
            (
                "client_secret_basic",
                with("token_endpoint_auth_method", json!("client_secret_basic")),
                E::AuthMethod,
            ),
            (
                "client_secret_post",
                with("token_endpoint_auth_method", json!("client_secret_post")),
                E::AuthMethod,
            ),
            (
                "private_key_jwt",
                with("token_endpoint_auth_method", json!("private_key_jwt")),
                E::AuthMethod,
            ),
            (
                "auth method null",
                with("token_endpoint_auth_method", Value::Null),
                E::AuthMethod,
            ),
            (
                "client_secret",
                with("client_secret", json!("s3cret")),
                E::SharedSecret("client_secret".into()),
            ),
            (
                "client_secret_expires_at",
                with("client_secret_expires_at", json!(0)),
                E::SharedSecret("client_secret_expires_at".into()),
            ),
            (
                "grant_types without code",
                with("grant_types", json!(["refresh_token"])),
                E::InvalidMember("grant_types"),
            ),
            (
                "grant_types not text",
                with("grant_types", json!(["authorization_code", 2])),
                E::InvalidMember("grant_types"),
            ),
            (
                "grant_types text",
                with("grant_types", json!("authorization_code")),
                E::InvalidMember("grant_types"),
            ),
        ];
        for (name, doc, expect) in cases {
            let error = judge(&doc).unwrap_err();
            assert_eq!(error, expect, "{name}");
            assert!(super::super::listed(error.code()), "{}", error.code());
            assert_eq!(error.oauth_error(), OAuthError::InvalidClient, "{name}");
        }
    }

    #[test]
    fn strict_bytes() {
        use ClientDocumentError as E;
        let good = document().to_string();
        let duplicate = good.replacen('{', &format!("{{\"client_id\":\"{URL}\","), 1);
        let nested_duplicate = good.replacen('{', "{\"x\":{\"a\":1,\"a\":2},", 1);
        let padded = format!(
            "{good}{}",
            " ".repeat(MAX_CLIENT_DOCUMENT_BYTES - good.len())
        );
        let too_big = format!("{padded} ");
        for (name, bytes, expect) in [
            ("duplicate", duplicate.as_bytes(), Err(E::DuplicateMember)),
            (
                "nested duplicate",
                nested_duplicate.as_bytes(),
                Err(E::DuplicateMember),
            ),
            ("too big", too_big.as_bytes(), Err(E::TooLarge)),
            ("not json", b"<html>".as_slice(), Err(E::NotJson)),
            ("trailing", b"{} {}".as_slice(), Err(E::NotJson)),
            ("array", b"[]".as_slice(), Err(E::NotJson)),
            (
                "unsafe number",
                br#"{"n":9007199254740993}"#.as_slice(),
                Err(E::NotJson),
            ),
            ("empty", b"".as_slice(), Err(E::NotJson)),
        ] {
            assert_eq!(parse(&url(), bytes).map(|_| ()), expect, "{name}");
        }
        assert_eq!(padded.len(), MAX_CLIENT_DOCUMENT_BYTES);
        assert!(
            parse(&url(), padded.as_bytes()).is_ok(),
            "exactly the limit"
        );
    }
}
