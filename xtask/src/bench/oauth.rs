//! The authorization-code exchange row (issue 35): the time from a
//! person's consent decision to the client holding its access token —
//! `POST /v1/oauth/requests/decision` (one ledger write: the code) then
//! `POST /v1/oauth/token` (one ledger write: the grant root, the access
//! token, the grant, the refresh token, the code marked used) — as a
//! client and a consent page make them, against `mandate serve` with
//! `[oauth]` on. [`WORKERS`] flows run at once for the round's seconds;
//! each flow first asks `GET /v1/oauth/authorize` for a fresh sealed
//! request (untimed: one code per request). The figure is each round's
//! p99, the row the median of the rounds' p99s.

use std::net::TcpListener;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Plan;
use super::parsing::Spread;
use super::report::{Row, Target, Unit};
use super::running::{NO_LIMITS, Server};
use crate::{Result, fail};

/// Flows at once: a few clients finishing their consent together.
const WORKERS: usize = 4;
/// A PKCE pair (RFC 7636 §4.1–4.2) made for the bench: the verifier, and
/// the base64url SHA-256 of it (S256). Every flow may use the same pair:
/// what is measured is the server's work, not the client's secrecy.
const VERIFIER: &str = "mandate-bench-pkce-verifier-0123456789-abcdefghijklmnop";
const CHALLENGE: &str = "e3jMzqeStY04WsG4YBdgnSAGSZym0L1QpK9En0K7ZAg";
/// The client's redirect URI, and as a query parameter.
const REDIRECT: &str = "http://127.0.0.1/callback";
const REDIRECT_QUERY: &str = "http%3A%2F%2F127.0.0.1%2Fcallback";
/// The resource (`aud`) asked for, as a query parameter.
const RESOURCE_QUERY: &str = "https%3A%2F%2Fmcp.example.com%2Fmcp";

/// The exchange's measurements.
pub(super) struct ExchangeRows {
    /// Per round, the milliseconds of each flow's decision and token
    /// requests together.
    pub(super) rounds: Vec<Vec<f64>>,
}

/// The `q` quantile (0–1) of `samples` (nearest rank; NaN when empty).
pub(super) fn quantile(samples: &[f64], q: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        return f64::NAN;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "an index into a list of samples"
    )]
    let at = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[at]
}

impl ExchangeRows {
    fn p99s(&self) -> Spread {
        Spread::of(
            &self
                .rounds
                .iter()
                .map(|flows| quantile(flows, 0.99))
                .collect::<Vec<_>>(),
        )
    }

    /// The median of the rounds' p99s, ms.
    pub(super) fn p99_ms(&self) -> f64 {
        self.p99s().median
    }

    /// The row of the targets table.
    pub(super) fn target(&self) -> Row {
        Row::new(
            "3. authorization-code exchange (consent decision → token) p99",
            Target::AtMost(50.0, Unit::Ms),
            self.p99s(),
            1,
        )
    }

    /// The rows of the absolute figures: (what, figure).
    pub(super) fn figures(&self) -> [(String, String); 2] {
        let p50 = Spread::of(
            &self
                .rounds
                .iter()
                .map(|flows| quantile(flows, 0.5))
                .collect::<Vec<_>>(),
        );
        #[allow(clippy::cast_precision_loss, reason = "a count of flows")]
        let flows = Spread::of(
            &self
                .rounds
                .iter()
                .map(|flows| flows.len() as f64)
                .collect::<Vec<_>>(),
        );
        [
            (
                format!("authorization-code exchanges per round, {WORKERS} at once"),
                flows.show(0),
            ),
            (
                "authorization-code exchange (decision → token) p50 (ms)".to_owned(),
                p50.show(1),
            ),
        ]
    }
}

/// A member of a JSON answer that must be a string.
fn text<'a>(answer: &'a Value, name: &str) -> Result<&'a str> {
    answer[name]
        .as_str()
        .ok_or_else(|| format!("no `{name}` in {answer}").into())
}

/// The value of the query parameter `name` in `url`, as sent.
fn parameter<'a>(url: &'a str, name: &str) -> Result<&'a str> {
    url.split_once('?')
        .map_or("", |(_, query)| query)
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
        .ok_or_else(|| format!("no `{name}` in {url}").into())
}

/// What a flow needs: the server, the consenting person's key, the client.
struct Flow<'a> {
    agent: ureq::Agent,
    base: &'a str,
    key: &'a str,
    client_id: &'a str,
}

impl Flow<'_> {
    /// A fresh sealed authorization request.
    fn request(&self) -> Result<String> {
        let url = format!(
            "{}/v1/oauth/authorize?response_type=code&client_id={}&redirect_uri={REDIRECT_QUERY}\
             &code_challenge={CHALLENGE}&code_challenge_method=S256&resource={RESOURCE_QUERY}\
             &scope=read%20crm%3A%2A&state=bench",
            self.base, self.client_id
        );
        let answer = self.agent.get(&url).call()?;
        let location = answer
            .headers()
            .get("location")
            .and_then(|value| value.to_str().ok());
        match (answer.status().as_u16(), location) {
            (303, Some(location)) => Ok(parameter(location, "request")?.to_owned()),
            (status, _) => fail(format!(
                "authorize answered {status}, not a 303 to the consent page"
            )),
        }
    }

    /// The decision and the token request for `sealed`: their time, ms.
    fn exchange(&self, sealed: &str) -> Result<f64> {
        let started = Instant::now();
        let mut decided = self
            .agent
            .post(format!("{}/v1/oauth/requests/decision", self.base))
            .header("authorization", format!("Bearer {}", self.key))
            .send_json(json!({
                "request": sealed, "decision": "approve",
                "grant": {"actions": ["read"], "resources": ["crm:*"], "ttl_seconds": 3600}
            }))?;
        let decision: Value = decided.body_mut().read_json()?;
        if decided.status().as_u16() != 200 {
            return fail(format!("the decision was refused: {decision}"));
        }
        let code = parameter(text(&decision, "redirect")?, "code")?.to_owned();
        let mut redeemed = self
            .agent
            .post(format!("{}/v1/oauth/token", self.base))
            .send_form([
                ("grant_type", "authorization_code"),
                ("code", code.as_str()),
                ("client_id", self.client_id),
                ("redirect_uri", REDIRECT),
                ("code_verifier", VERIFIER),
            ])?;
        let token: Value = redeemed.body_mut().read_json()?;
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        if redeemed.status().as_u16() != 200 || token["access_token"].as_str().is_none() {
            return fail(format!("the token request was refused: {token}"));
        }
        Ok(elapsed)
    }

    /// Flows one after another until `until`: each one's time, ms.
    fn run(&self, until: Instant) -> Result<Vec<f64>> {
        let mut times = Vec::new();
        while Instant::now() < until {
            let sealed = self.request()?;
            times.push(self.exchange(&sealed)?);
        }
        Ok(times)
    }
}

/// Measures the exchange: a server with `[oauth]` on (its issuer the
/// loopback address it listens on), an owner key made for a person, a
/// registered client, then `plan.rounds` rounds of `plan.seconds`.
pub(super) fn exchange(plan: Plan, bin: &Path, scratch: &Path) -> Result<ExchangeRows> {
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let issuer = format!("http://127.0.0.1:{port}");
    let config = format!(
        "public_url = \"{issuer}\"\nissuer = \"{issuer}\"\n{NO_LIMITS}\n[oauth]\nenabled = true\n"
    );
    let server = Server::start_on(
        bin,
        &scratch.join("oauth"),
        &config,
        &format!("127.0.0.1:{port}"),
    )?;
    let outcome = measure(plan, &server);
    server.stop();
    outcome
}

fn measure(plan: Plan, server: &Server) -> Result<ExchangeRows> {
    let admin = server.key()?;
    let person = server.post(
        "/v1/keys",
        Some(&admin),
        &json!({"role": "owner", "email": "bench@example.com"}),
    )?;
    let key = text(&person, "api_key")?;
    let client = server.post(
        "/v1/oauth/clients",
        Some(&admin),
        &json!({"name": "bench client", "redirect_uris": [REDIRECT]}),
    )?;
    let client_id = text(&client, "client_id")?;
    let mut rounds = Vec::new();
    for _ in 0..plan.rounds {
        let until = Instant::now() + Duration::from_secs(u64::from(plan.seconds));
        let times = thread::scope(|scope| {
            let workers: Vec<_> = (0..WORKERS)
                .map(|_| {
                    scope.spawn(|| {
                        let flow = Flow {
                            agent: ureq::Agent::config_builder()
                                .http_status_as_error(false)
                                .max_redirects(0)
                                .timeout_global(Some(Duration::from_secs(10)))
                                .build()
                                .into(),
                            base: &server.base,
                            key,
                            client_id,
                        };
                        // The error as text: a boxed error may not cross threads.
                        flow.run(until).map_err(|error| error.to_string())
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|worker| match worker.join() {
                    Ok(Ok(times)) => Ok(times),
                    Ok(Err(why)) => fail(why),
                    Err(_) => fail("a flow panicked"),
                })
                .collect::<Result<Vec<Vec<f64>>>>()
        })?;
        rounds.push(times.concat());
    }
    Ok(ExchangeRows { rounds })
}
