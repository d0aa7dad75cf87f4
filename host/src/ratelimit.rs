//! Rate limits per API key, per agent token and per client address, each a
//! keyed GCRA limiter (governor). A refusal is a 429 with `Retry-After`.

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;

use axum::http::HeaderMap;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::config::RateLimits;
use crate::error::{ApiError, ApiResult};

type Keyed<K> = DefaultKeyedRateLimiter<K>;

/// The limiters of one server.
#[derive(Debug)]
pub struct Limiters {
    api_keys: Option<Keyed<String>>,
    tokens: Option<Keyed<String>>,
    addresses: Option<Keyed<IpAddr>>,
    trusted_proxies: Vec<IpAddr>,
}

fn keyed<K: std::hash::Hash + Eq + Clone>(per_second: u32, burst: u32) -> Option<Keyed<K>> {
    let rate = NonZeroU32::new(per_second)?;
    let burst = NonZeroU32::new(burst.max(per_second)).unwrap_or(rate);
    Some(RateLimiter::keyed(
        Quota::per_second(rate).allow_burst(burst),
    ))
}

fn check<K: std::hash::Hash + Eq + Clone>(limiter: Option<&Keyed<K>>, key: &K) -> ApiResult<()> {
    let Some(limiter) = limiter else {
        return Ok(());
    };
    limiter.check_key(key).map_err(|not_until| {
        let wait = not_until.wait_time_from(DefaultClock::default().now());
        ApiError::new(
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            "too many requests; retry after the number of seconds in Retry-After",
        )
        .with_retry_after(wait.as_secs() + 1)
    })
}

impl Limiters {
    /// Limiters for a configuration.
    pub fn new(limits: &RateLimits, trusted_proxies: Vec<IpAddr>) -> Limiters {
        Limiters {
            api_keys: keyed(limits.per_api_key, limits.burst),
            tokens: keyed(limits.per_token, limits.burst),
            addresses: keyed(limits.per_ip, limits.burst),
            trusted_proxies,
        }
    }

    /// Counts a request made with an API key (by key id).
    pub fn api_key(&self, id: &str) -> ApiResult<()> {
        check(self.api_keys.as_ref(), &id.to_owned())
    }

    /// Counts a request made with an agent token (by jti).
    pub fn token(&self, jti: &str) -> ApiResult<()> {
        check(self.tokens.as_ref(), &jti.to_owned())
    }

    /// Counts a request from a client address.
    pub fn address(&self, peer: SocketAddr, headers: &HeaderMap) -> ApiResult<()> {
        check(self.addresses.as_ref(), &self.client_address(peer, headers))
    }

    /// The client's address: the peer, unless the peer is a trusted proxy, in
    /// which case the nearest untrusted hop of `X-Forwarded-For`. An untrusted
    /// peer cannot change its key by sending the header.
    pub fn client_address(&self, peer: SocketAddr, headers: &HeaderMap) -> IpAddr {
        let peer = peer.ip();
        if !self.trusted_proxies.contains(&peer) {
            return peer;
        }
        let hops = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .filter_map(|hop| hop.trim().parse::<IpAddr>().ok())
            .collect::<Vec<_>>();
        hops.into_iter()
            .rev()
            .find(|hop| !self.trusted_proxies.contains(hop))
            .unwrap_or(peer)
    }

    /// Forgets callers idle long enough to be back at full allowance.
    pub fn forget_idle(&self) {
        for limiter in [&self.api_keys, &self.tokens].into_iter().flatten() {
            limiter.retain_recent();
        }
        if let Some(limiter) = &self.addresses {
            limiter.retain_recent();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_answers_with_retry_after() {
        let limiters = Limiters::new(
            &RateLimits {
                per_api_key: 1,
                per_token: 0,
                per_ip: 0,
                burst: 2,
            },
            vec![],
        );
        assert!(limiters.api_key("k").is_ok());
        assert!(limiters.api_key("k").is_ok());
        let refused = limiters.api_key("k").unwrap_err();
        assert_eq!(refused.status.as_u16(), 429);
        assert!(refused.retry_after().is_some_and(|s| s >= 1));
        assert!(limiters.api_key("other").is_ok());
        for _ in 0..100 {
            assert!(limiters.token("t").is_ok());
        }
    }

    #[test]
    fn forwarded_for_only_from_trusted_proxies() {
        let proxy: IpAddr = "10.0.0.1".parse().unwrap();
        let limiters = Limiters::new(&RateLimits::default(), vec![proxy]);
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", "203.0.113.9, 10.0.0.1".parse().unwrap());
        let untrusted: SocketAddr = "192.0.2.7:5000".parse().unwrap();
        assert_eq!(limiters.client_address(untrusted, &headers), untrusted.ip());
        let trusted = SocketAddr::new(proxy, 5000);
        assert_eq!(
            limiters.client_address(trusted, &headers),
            "203.0.113.9".parse::<IpAddr>().unwrap()
        );
    }
}
