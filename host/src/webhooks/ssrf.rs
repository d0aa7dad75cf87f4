//! Where a webhook may send: the guard against server-side request forgery.
//! A tenant names the URL and Mandate's server makes the request, so
//! without this guard a tenant could make the server reach its own network
//! (a database, a cloud's metadata service at 169.254.169.254, an admin
//! port on loopback) and read the outcome in the delivery log.
//!
//! Unless the deployment sets `[webhooks] allow_private = true`:
//!
//! - a URL is `https`, absolute, without user information, at most
//!   [`MAX_WEBHOOK_URL_LEN`] bytes;
//! - every address of its host must be public ([`not_public`]): an IP
//!   literal is checked as written (after the URL standard's own reading,
//!   so `0x7f.1` is `127.0.0.1`), a name by every address DNS returns for
//!   it — one private address among public ones refuses the name, since
//!   the connection could be made to any of them;
//! - the check is made when a webhook is created or its URL changed
//!   ([`check_url`]), and again at every delivery: the HTTP client resolves
//!   names only through [`PublicOnly`], which refuses a name with a
//!   non-public address, so a name that changes its answer after the check
//!   (DNS rebinding) reaches nothing private: the client connects only to
//!   addresses that passed. IP literals never reach a resolver; the worker
//!   checks them itself ([`check_literal`]) before each request.
//!
//! Redirects are never followed and no proxy is used (the worker's client
//! says so), so a public endpoint cannot bounce a delivery inward.
//!
//! A refusal names an address only when the URL wrote it: what a name
//! resolves to is the server's network's answer, not the tenant's to read
//! (in a 422 or in the delivery log), so a refused name is refused without
//! its addresses or their range.
//!
//! A URL's port must be one of `[webhooks] ports` (443, 80 and 8443 by
//! default), at creation and at every delivery: a tenant cannot make the
//! server knock on other services of a public host.
//!
//! With `allow_private`, `http` is allowed and no address or port is
//! checked: for tests and deployments whose receivers sit on a private
//! network.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use mandate_core::limits::MAX_WEBHOOK_URL_LEN;
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// How long resolving a webhook's host may take when it is created.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a webhook URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("url is not an absolute URL: {0}")]
    Malformed(String),
    #[error("url must use https")]
    NotHttps,
    #[error("url must not carry a user name or password")]
    UserInfo,
    #[error("url may hold at most {MAX_WEBHOOK_URL_LEN} bytes")]
    TooLong,
    #[error("url's host {host} resolves to no address")]
    Unresolvable { host: String },
    #[error("{0}")]
    NotPublic(NotPublic),
    /// A name with an address that is not public; which one is not said.
    #[error("url's host {host} resolves to an address that is not public")]
    NameNotPublic { host: String },
    #[error("url's port {port} is not one webhooks may use ({allowed})")]
    PortNotAllowed { port: u16, allowed: String },
}

impl UrlError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            UrlError::Malformed(_) | UrlError::NotHttps | UrlError::UserInfo => {
                "invalid_webhook_url"
            }
            UrlError::TooLong => "too_long",
            UrlError::Unresolvable { .. } => "webhook_url_unresolvable",
            UrlError::NotPublic(_) | UrlError::NameNotPublic { .. } => "webhook_url_not_public",
            UrlError::PortNotAllowed { .. } => "webhook_port_not_allowed",
        }
    }
}

/// An address a webhook may not reach, and the range it is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{address} is not a public address ({range})")]
pub struct NotPublic {
    pub address: IpAddr,
    pub range: &'static str,
}

/// The special-purpose range an IPv4 address is in, if it is not public:
/// the IANA IPv4 Special-Purpose Address Registry's ranges that are not
/// globally reachable, and multicast, reserved and broadcast.
fn v4_range(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => "\"this network\", 0.0.0.0/8",
        (10, _, _) => "private, 10.0.0.0/8",
        (100, 64..=127, _) => "shared address space (carrier-grade NAT), 100.64.0.0/10",
        (127, _, _) => "loopback, 127.0.0.0/8",
        (169, 254, _) => "link-local, 169.254.0.0/16",
        (172, 16..=31, _) => "private, 172.16.0.0/12",
        (192, 0, 0) => "IETF protocol assignments, 192.0.0.0/24",
        (192, 0, 2) => "documentation, 192.0.2.0/24",
        (192, 88, 99) => "6to4 relay anycast, 192.88.99.0/24",
        (192, 168, _) => "private, 192.168.0.0/16",
        (198, 18..=19, _) => "benchmarking, 198.18.0.0/15",
        (198, 51, 100) => "documentation, 198.51.100.0/24",
        (203, 0, 113) => "documentation, 203.0.113.0/24",
        (224..=239, _, _) => "multicast, 224.0.0.0/4",
        (240..=255, _, _) => "reserved or broadcast, 240.0.0.0/4",
        _ => return None,
    })
}

/// The range an IPv6 address is in, if it is not public. Public is global
/// unicast (2000::/3) outside its special-purpose ranges, or an IPv4
/// address that is public written as IPv4-mapped (::ffff:0:0/96) or behind
/// the well-known NAT64 prefix (64:ff9b::/96); everything else is refused,
/// IPv4-compatible addresses (::/96, deprecated) and 6to4 (2002::/16) with
/// it.
fn v6_range(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    let embedded = Ipv4Addr::new(
        (s[6] >> 8) as u8,
        (s[6] & 0xff) as u8,
        (s[7] >> 8) as u8,
        (s[7] & 0xff) as u8,
    );
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_range(v4);
    }
    Some(match s {
        [0, 0, 0, 0, 0, 0, 0, 0] => "unspecified, ::/128",
        [0, 0, 0, 0, 0, 0, 0, 1] => "loopback, ::1/128",
        [0, 0, 0, 0, 0, 0, _, _] => "IPv4-compatible, ::/96 (deprecated)",
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => return v4_range(embedded),
        [0x64, 0xff9b, 1, ..] => "local-use NAT64, 64:ff9b:1::/48",
        [0x100, 0, 0, 0, ..] => "discard-only, 100::/64",
        [0x2001, 0x0db8, ..] => "documentation, 2001:db8::/32",
        [0x2001, 0..=0x01ff, ..] => {
            "IETF protocol assignments (Teredo, benchmarking, ORCHID), 2001::/23"
        }
        [0x2002, ..] => "6to4, 2002::/16",
        [0x3fff, 0..=0x0fff, ..] => "documentation, 3fff::/20",
        [first, ..] if first & 0xfe00 == 0xfc00 => "unique local, fc00::/7",
        [first, ..] if first & 0xffc0 == 0xfe80 => "link-local, fe80::/10",
        [first, ..] if first & 0xffc0 == 0xfec0 => "site-local, fec0::/10 (deprecated)",
        [first, ..] if first & 0xff00 == 0xff00 => "multicast, ff00::/8",
        [first, ..] if first & 0xe000 != 0x2000 => "not global unicast (outside 2000::/3)",
        _ => return None,
    })
}

/// Why `address` is not public, if it is not.
pub fn not_public(address: IpAddr) -> Option<NotPublic> {
    let range = match address {
        IpAddr::V4(ip) => v4_range(ip),
        IpAddr::V6(ip) => v6_range(ip),
    }?;
    Some(NotPublic { address, range })
}

/// Whether every one of a name's addresses is public.
fn all_public(addresses: &[SocketAddr]) -> bool {
    addresses.iter().all(|a| not_public(a.ip()).is_none())
}

/// Refuses a URL whose port (written, or its scheme's) is not in `ports`.
pub fn check_port(url: &Url, ports: &[u16]) -> Result<(), UrlError> {
    let port = url.port_or_known_default().unwrap_or(0);
    if ports.contains(&port) {
        return Ok(());
    }
    let allowed = ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    Err(UrlError::PortNotAllowed { port, allowed })
}

/// Reads a webhook URL and checks its form: absolute, `https` (or `http`
/// with `allow_private`), no user information, a host, not too long.
pub fn parse(text: &str, allow_private: bool) -> Result<Url, UrlError> {
    if text.len() > MAX_WEBHOOK_URL_LEN {
        return Err(UrlError::TooLong);
    }
    let url = Url::parse(text).map_err(|e| UrlError::Malformed(e.to_string()))?;
    match url.scheme() {
        "https" => {}
        "http" if allow_private => {}
        _ => return Err(UrlError::NotHttps),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlError::UserInfo);
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(UrlError::Malformed("it has no host".to_owned()));
    }
    Ok(url)
}

/// The host of a URL when it is an IP literal, as the URL standard reads
/// it (IPv6 without its brackets).
fn literal(url: &Url) -> Option<IpAddr> {
    let host = url.host_str()?;
    host.strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(host)
        .parse()
        .ok()
}

/// Refuses a URL whose host is an IP literal that is not public (a name is
/// left to the resolver).
pub fn check_literal(url: &Url) -> Result<(), NotPublic> {
    let Some(address) = literal(url) else {
        return Ok(());
    };
    match not_public(address) {
        Some(refused) => Err(refused),
        None => Ok(()),
    }
}

/// Every address `host` resolves to (port 0).
async fn lookup(host: &str) -> std::io::Result<Vec<SocketAddr>> {
    Ok(tokio::net::lookup_host((host, 0)).await?.collect())
}

/// Checks a webhook URL as it is created or changed: its form, and (unless
/// `allow_private`) every address of its host, then its port against
/// `ports`. Answers the URL as the URL standard writes it.
pub async fn check_url(text: &str, allow_private: bool, ports: &[u16]) -> Result<Url, UrlError> {
    let url = parse(text, allow_private)?;
    if allow_private {
        return Ok(url);
    }
    check_literal(&url).map_err(UrlError::NotPublic)?;
    if literal(&url).is_none()
        && let Some(host) = url.host_str()
    {
        let unresolvable = || UrlError::Unresolvable {
            host: host.to_owned(),
        };
        let addresses = tokio::time::timeout(RESOLVE_TIMEOUT, lookup(host))
            .await
            .map_err(|_| unresolvable())?
            .map_err(|_| unresolvable())?;
        if addresses.is_empty() {
            return Err(unresolvable());
        }
        if !all_public(&addresses) {
            return Err(UrlError::NameNotPublic {
                host: host.to_owned(),
            });
        }
    }
    check_port(&url, ports)?;
    Ok(url)
}

/// The delivery client's resolver: the system's, refusing a name unless
/// every address it has is public. The client connects only to what this
/// answers, checked at that moment.
#[derive(Debug, Clone, Copy, Default)]
pub struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addresses = lookup(&host).await?;
            if !all_public(&addresses) {
                return Err(format!("{host} resolves to an address that is not public").into());
            }
            let addresses: Addrs = Box::new(addresses.into_iter());
            Ok(addresses)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> bool {
        not_public(text.parse().unwrap()).is_some()
    }

    #[test]
    fn private_loopback_link_local_and_reserved_addresses_are_refused() {
        for text in [
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "100.64.0.1",
            "100.127.255.254",
            "127.0.0.1",
            "127.255.255.255",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::127.0.0.1",
            "::8.8.8.8",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::10.0.0.1",
            "64:ff9b::127.0.0.1",
            "64:ff9b:1::1",
            "100::1",
            "2001::1",
            "2001:2::1",
            "2001:db8::1",
            "2002:7f00:1::1",
            "3fff::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            "4000::1",
            "1::1",
        ] {
            assert!(refused(text), "{text} passed");
        }
    }

    #[test]
    fn public_addresses_pass_in_every_form() {
        for text in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.1.1",
            "192.169.0.1",
            "198.20.0.1",
            "223.255.255.255",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
            "2001:200::1",
            "2001:4860:4860::8888",
            "2606:4700::1111",
            "3ffe::1",
        ] {
            assert!(!refused(text), "{text} was refused");
        }
    }

    #[test]
    fn a_refusal_names_the_address_and_its_range() {
        let refusal = not_public("::ffff:169.254.169.254".parse().unwrap()).unwrap();
        assert_eq!(
            refusal.to_string(),
            "::ffff:169.254.169.254 is not a public address (link-local, 169.254.0.0/16)"
        );
    }

    #[test]
    fn urls_are_https_absolute_and_without_user_information() {
        assert!(parse("https://hooks.example.com/in?x=1", false).is_ok());
        assert_eq!(
            parse("http://hooks.example.com/", false),
            Err(UrlError::NotHttps)
        );
        assert!(parse("http://127.0.0.1:8080/", true).is_ok());
        assert_eq!(
            parse("ftp://hooks.example.com/", true),
            Err(UrlError::NotHttps)
        );
        assert_eq!(
            parse("https://user:pass@hooks.example.com/", false),
            Err(UrlError::UserInfo)
        );
        assert_eq!(
            parse("https://user@hooks.example.com/", false),
            Err(UrlError::UserInfo)
        );
        assert!(matches!(
            parse("/relative", false),
            Err(UrlError::Malformed(_))
        ));
        let long = format!("https://example.com/{}", "a".repeat(MAX_WEBHOOK_URL_LEN));
        assert_eq!(parse(&long, false), Err(UrlError::TooLong));
        assert_eq!(UrlError::TooLong.code(), "too_long");
    }

    #[test]
    fn ip_literals_are_read_as_the_url_standard_reads_them() {
        for text in [
            "https://127.0.0.1/",
            "https://0x7f.1/",
            "https://2130706433/",
            "https://0177.0.0.1/",
            "https://[::1]/",
            "https://[::ffff:7f00:1]/",
            "https://[0:0:0:0:0:ffff:169.254.169.254]/",
        ] {
            let url = parse(text, false).unwrap();
            assert!(check_literal(&url).is_err(), "{text} passed");
        }
        let public = parse("https://8.8.8.8/", false).unwrap();
        assert_eq!(check_literal(&public), Ok(()));
        let name = parse("https://localhost/", false).unwrap();
        assert_eq!(check_literal(&name), Ok(()), "names are the resolver's");
    }

    const PORTS: &[u16] = &[443, 80, 8443];

    #[tokio::test]
    async fn names_are_checked_by_every_address_they_resolve_to() {
        let refused = check_url("https://localhost/hook", false, PORTS)
            .await
            .unwrap_err();
        assert_eq!(
            refused,
            UrlError::NameNotPublic {
                host: "localhost".to_owned()
            }
        );
        assert_eq!(refused.code(), "webhook_url_not_public");
        let said = refused.to_string();
        for answer in ["127.0.0.1", "::1", "loopback", "127.0.0.0/8"] {
            assert!(!said.contains(answer), "{said} echoes the DNS answer");
        }
        assert!(
            check_url("https://localhost:9/hook", true, PORTS)
                .await
                .is_ok()
        );
        assert!(matches!(
            check_url("https://10.0.0.1/", false, PORTS).await,
            Err(UrlError::NotPublic(_))
        ));
        assert_eq!(
            check_url("https://no-such-host.invalid/", false, PORTS)
                .await
                .map_err(|e| e.code()),
            Err("webhook_url_unresolvable")
        );
        let resolved = PublicOnly
            .resolve("localhost".parse().unwrap())
            .await
            .map(|addrs| addrs.count());
        let refused = resolved.unwrap_err().to_string();
        assert!(refused.contains("not public"), "{refused}");
        assert!(!refused.contains("127.0.0.1"), "{refused}");
    }

    #[tokio::test]
    async fn only_the_configured_ports_are_allowed() {
        for ok in [
            "https://8.8.8.8/",
            "https://8.8.8.8:443/",
            "https://8.8.8.8:8443/",
            "https://8.8.8.8:80/",
        ] {
            assert!(check_url(ok, false, PORTS).await.is_ok(), "{ok}");
        }
        for refused in [
            "https://8.8.8.8:22/",
            "https://8.8.8.8:6379/",
            "https://8.8.8.8:1/",
        ] {
            let error = check_url(refused, false, PORTS).await.unwrap_err();
            assert_eq!(error.code(), "webhook_port_not_allowed", "{refused}");
        }
        assert!(
            check_url("https://8.8.8.8:9000/", false, &[9000])
                .await
                .is_ok()
        );
        assert!(
            check_url("http://127.0.0.1:9000/", true, PORTS)
                .await
                .is_ok()
        );
    }
}
