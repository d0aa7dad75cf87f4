//! Rate limits per API key, per agent token, per organisation and per
//! client address, each a keyed GCRA limiter (governor). An organisation's
//! limit counts every request of its keys and tokens together, so one
//! organisation's many keys cannot take what the others need. A refusal is a 429 with `Retry-After`.
//! An IPv6 client is counted by its /64 network, not its address: a host
//! owns a whole /64 and can pick a fresh address for every request.
//! A batch of `n` records counts `n` requests: beyond the burst, the key
//! owes the rest and is refused until `n / rate` seconds have passed.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, InsufficientCapacity, Quota, RateLimiter};

use crate::config::RateLimits;
use crate::error::{ApiError, ApiResult};
use crate::store::orgs::Org;

type Keyed<K> = DefaultKeyedRateLimiter<K>;

/// One keyed limiter, with what batches larger than its burst still owe.
#[derive(Debug)]
struct Limited<K: std::hash::Hash + Eq + Clone> {
    limiter: Keyed<K>,
    /// Requests allowed per second.
    rate: NonZeroU32,
    /// Keys refused until the instant given: a batch of `n` requests larger
    /// than the burst costs `n / rate` seconds, as `n` requests sent alone
    /// would, and the key is refused until they have been paid for.
    owed: Mutex<HashMap<K, Instant>>,
    /// How many keys `owed` holds, read without its lock.
    debts: AtomicUsize,
}

/// The limiters of one server.
#[derive(Debug)]
pub struct Limiters {
    api_keys: Option<Limited<String>>,
    tokens: Option<Limited<String>>,
    orgs: Option<Limited<Org>>,
    addresses: Option<Limited<IpAddr>>,
    trusted_proxies: Vec<IpAddr>,
}

fn keyed<K: std::hash::Hash + Eq + Clone>(per_second: u32, burst: u32) -> Option<Limited<K>> {
    let rate = NonZeroU32::new(per_second)?;
    let burst = NonZeroU32::new(burst.max(per_second)).unwrap_or(rate);
    Some(Limited {
        limiter: RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst)),
        rate,
        owed: Mutex::new(HashMap::new()),
        debts: AtomicUsize::new(0),
    })
}

fn check<K: std::hash::Hash + Eq + Clone>(limiter: Option<&Limited<K>>, key: &K) -> ApiResult<()> {
    check_n(limiter, key, 1)
}

fn refused(wait: Duration) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
        "too many requests; retry after the number of seconds in Retry-After",
    )
    .with_retry_after(wait.as_secs() + 1)
}

/// Counts `n` requests at once (a batch of `n` records): all of them or
/// none. A batch larger than the burst takes the whole burst now and owes
/// the rest: the key is refused until `n / rate` seconds have passed, so a
/// batch costs each of its records, never only the burst.
fn check_n<K: std::hash::Hash + Eq + Clone>(
    limited: Option<&Limited<K>>,
    key: &K,
    n: u32,
) -> ApiResult<()> {
    let (Some(limited), Some(n)) = (limited, NonZeroU32::new(n)) else {
        return Ok(());
    };
    let now = Instant::now();
    // Most of the time nobody owes anything: no lock on the hot path.
    if limited.debts.load(Ordering::Acquire) > 0 {
        let mut owed = limited.owed();
        if let Some(until) = owed.get(key).copied() {
            if now < until {
                return Err(refused(until - now));
            }
            owed.remove(key);
            limited.debts.store(owed.len(), Ordering::Release);
        }
    }
    let outcome = match limited.limiter.check_key_n(key, n) {
        Ok(outcome) => outcome,
        Err(InsufficientCapacity(burst)) => {
            let taken = NonZeroU32::new(burst)
                .map_or(Ok(Ok(())), |burst| limited.limiter.check_key_n(key, burst))
                .unwrap_or(Ok(()));
            if taken.is_ok() {
                let cost =
                    Duration::from_secs_f64(f64::from(n.get()) / f64::from(limited.rate.get()));
                let mut owed = limited.owed();
                owed.insert(key.clone(), now + cost);
                limited.debts.store(owed.len(), Ordering::Release);
            }
            taken
        }
    };
    outcome.map_err(|not_until| refused(not_until.wait_time_from(DefaultClock::default().now())))
}

impl Limiters {
    /// Limiters for a configuration.
    pub fn new(limits: &RateLimits, trusted_proxies: Vec<IpAddr>) -> Limiters {
        Limiters {
            api_keys: keyed(limits.per_api_key, limits.burst),
            tokens: keyed(limits.per_token, limits.burst),
            orgs: keyed(limits.per_org, limits.burst),
            addresses: keyed(limits.per_ip, limits.burst),
            trusted_proxies,
        }
    }

    /// Counts a request made with an API key (by key id).
    pub fn api_key(&self, id: &str) -> ApiResult<()> {
        check(self.api_keys.as_ref(), &id.to_owned())
    }

    /// Counts a consent made by a person signed in with an identity
    /// provider (by their human reference) as a key's request: a session
    /// spends what a key would.
    pub fn signed_in(&self, human: &str) -> ApiResult<()> {
        check(self.api_keys.as_ref(), &format!("signed-in {human}"))
    }

    /// Counts a request made with an agent token (by jti).
    pub fn token(&self, jti: &str) -> ApiResult<()> {
        check(self.tokens.as_ref(), &jti.to_owned())
    }

    /// Counts `records` records made at once with an agent token (a
    /// batch), as that many requests.
    pub fn tokens(&self, jti: &str, records: u32) -> ApiResult<()> {
        check_n(self.tokens.as_ref(), &jti.to_owned(), records)
    }

    /// Counts a request made with a key or a token of an organisation.
    pub fn org(&self, org: Org) -> ApiResult<()> {
        check(self.orgs.as_ref(), &org)
    }

    /// Counts `records` records made at once by tokens of an organisation
    /// (a batch), as that many requests.
    pub fn orgs(&self, org: Org, records: u32) -> ApiResult<()> {
        check_n(self.orgs.as_ref(), &org, records)
    }

    /// Counts a request from a client address (an IPv6 client by its /64).
    pub fn address(&self, peer: SocketAddr, headers: &HeaderMap) -> ApiResult<()> {
        let key = limit_key(self.client_address(peer, headers));
        check(self.addresses.as_ref(), &key)
    }

    /// The client's address: the peer, unless the peer is a trusted proxy, in
    /// which case the nearest untrusted hop of `X-Forwarded-For`. An untrusted
    /// peer cannot change its key by sending the header. An IPv4-mapped IPv6
    /// address (`::ffff:a.b.c.d`, an IPv4 client of a dual-stack socket) is
    /// the IPv4 address.
    pub fn client_address(&self, peer: SocketAddr, headers: &HeaderMap) -> IpAddr {
        let peer = peer.ip().to_canonical();
        if !self.trusted_proxies.contains(&peer) {
            return peer;
        }
        let hops = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .filter_map(|hop| hop.trim().parse::<IpAddr>().ok())
            .map(|hop| hop.to_canonical())
            .collect::<Vec<_>>();
        hops.into_iter()
            .rev()
            .find(|hop| !self.trusted_proxies.contains(hop))
            .unwrap_or(peer)
    }

    /// Forgets callers idle long enough to be back at full allowance, and
    /// debts paid.
    pub fn forget_idle(&self) {
        for limited in [&self.api_keys, &self.tokens].into_iter().flatten() {
            limited.forget_idle();
        }
        if let Some(limited) = &self.orgs {
            limited.forget_idle();
        }
        if let Some(limited) = &self.addresses {
            limited.forget_idle();
        }
    }
}

impl<K: std::hash::Hash + Eq + Clone> Limited<K> {
    fn owed(&self) -> std::sync::MutexGuard<'_, HashMap<K, Instant>> {
        match self.owed.lock() {
            Ok(owed) => owed,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn forget_idle(&self) {
        self.limiter.retain_recent();
        let now = Instant::now();
        let mut owed = self.owed();
        owed.retain(|_, until| *until > now);
        self.debts.store(owed.len(), Ordering::Release);
    }
}

/// Bits of an IPv6 address that name the client's network.
const IPV6_CLIENT_PREFIX: u32 = 64;

/// What the per-address limiter counts a client by: an IPv4 address as it
/// is (IPv4-mapped IPv6 included), an IPv6 address by its /64 network.
fn limit_key(address: IpAddr) -> IpAddr {
    match address.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let network = u128::MAX << (128 - IPV6_CLIENT_PREFIX);
            IpAddr::V6(Ipv6Addr::from_bits(v6.to_bits() & network))
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
                per_org: 0,
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
    fn a_batch_counts_its_records_and_at_most_the_burst() {
        let limiters = Limiters::new(
            &RateLimits {
                per_token: 1,
                per_org: 1,
                burst: 10,
                ..RateLimits::off()
            },
            vec![],
        );
        assert!(limiters.tokens("t", 4).is_ok());
        assert!(limiters.tokens("t", 6).is_ok());
        let refused = limiters.tokens("t", 1).unwrap_err();
        assert_eq!(refused.status.as_u16(), 429);
        assert!(refused.retry_after().is_some());
        // More than the burst takes the whole burst, then owes the rest:
        // 1,000 records at 1 a second keep the token out for 1,000 s.
        assert!(limiters.tokens("big", 1000).is_ok());
        assert_eq!(
            limiters.tokens("big", 1000).unwrap_err().status.as_u16(),
            429
        );
        let owed = limiters.token("big").unwrap_err();
        assert!(owed.retry_after().is_some_and(|s| s >= 990), "{owed:?}");
        let org = Org::from_number(3);
        assert!(limiters.orgs(org, 10).is_ok());
        assert!(limiters.org(org).is_err());
        assert!(limiters.orgs(Org::from_number(4), 0).is_ok());
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

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn ipv6_clients_are_keyed_by_their_64_and_ipv4_by_address() {
        let cases = [
            ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::"),
            ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::"),
            ("2001:db8:1:3::1", "2001:db8:1:3::"),
            ("::1", "::"),
            ("192.0.2.7", "192.0.2.7"),
            ("192.0.2.8", "192.0.2.8"),
            ("::ffff:192.0.2.7", "192.0.2.7"),
        ];
        for (address, key) in cases {
            assert_eq!(limit_key(ip(address)), ip(key), "{address}");
        }
    }

    #[test]
    fn one_organisation_spends_only_its_own_allowance() {
        let limiters = Limiters::new(
            &RateLimits {
                per_org: 1,
                burst: 2,
                ..RateLimits::off()
            },
            vec![],
        );
        let noisy = Org::from_number(1);
        assert!(limiters.org(noisy).is_ok());
        assert!(limiters.org(noisy).is_ok());
        let refused = limiters.org(noisy).unwrap_err();
        assert_eq!(refused.status.as_u16(), 429);
        assert!(refused.retry_after().is_some());
        assert!(limiters.org(Org::DEFAULT).is_ok());
        assert!(limiters.org(Org::from_number(2)).is_ok());
    }

    fn per_ip(per_second: u32, burst: u32, trusted_proxies: Vec<IpAddr>) -> Limiters {
        let limits = RateLimits {
            per_api_key: 0,
            per_token: 0,
            per_org: 0,
            per_ip: per_second,
            burst,
        };
        Limiters::new(&limits, trusted_proxies)
    }

    fn status(limiters: &Limiters, peer: &str, headers: &HeaderMap) -> u16 {
        let peer = SocketAddr::new(ip(peer), 5000);
        match limiters.address(peer, headers) {
            Ok(()) => 200,
            Err(error) => error.status.as_u16(),
        }
    }

    #[test]
    fn rotating_ipv6_addresses_within_a_64_share_one_allowance() {
        let limiters = per_ip(1, 2, vec![]);
        let none = HeaderMap::new();
        let statuses: Vec<u16> = ["2001:db8:0:1::a", "2001:db8:0:1::b", "2001:db8:0:1:ffff::c"]
            .iter()
            .map(|peer| status(&limiters, peer, &none))
            .collect();
        assert_eq!(statuses, [200, 200, 429]);
        assert_eq!(
            status(&limiters, "2001:db8:0:2::a", &none),
            200,
            "another /64"
        );
    }

    #[test]
    fn ipv4_clients_are_limited_per_address_whether_mapped_or_not() {
        let limiters = per_ip(1, 2, vec![]);
        let none = HeaderMap::new();
        assert_eq!(status(&limiters, "192.0.2.7", &none), 200);
        assert_eq!(status(&limiters, "::ffff:192.0.2.7", &none), 200);
        assert_eq!(
            status(&limiters, "192.0.2.7", &none),
            429,
            "mapped counts as IPv4"
        );
        assert_eq!(
            status(&limiters, "192.0.2.8", &none),
            200,
            "a neighbour is not limited"
        );
        assert_eq!(status(&limiters, "192.0.2.8", &none), 200);
    }

    #[test]
    fn forwarded_ipv6_clients_are_keyed_by_their_64_and_mapped_proxies_are_trusted() {
        let limiters = per_ip(1, 2, vec![ip("10.0.0.1")]);
        let statuses: Vec<u16> = ["2001:db8::1", "2001:db8::2", "2001:db8::3"]
            .iter()
            .map(|client| {
                let mut headers = HeaderMap::new();
                headers.insert("x-forwarded-for", client.parse().unwrap());
                status(&limiters, "::ffff:10.0.0.1", &headers)
            })
            .collect();
        assert_eq!(statuses, [200, 200, 429]);
    }
}
