//! `mandate-conformance`: the conformance vectors of `tests/vectors/` and
//! the hostile tokens behind them, generated from a fixed seed.
//!
//! `cargo xtask vectors` writes [`files`] to `tests/vectors/`; core's tests
//! and the wasm build's tests judge those files. [`hostile_tokens`] makes the
//! same rejection cases under any signing key, so the server's own tests can
//! present them at its door.
//!
//! Every random byte comes from SHA-256 of the seed and a counter, and
//! Ed25519 signing is deterministic, so the output never changes unless the
//! generator or core does. This is test tooling: it panics on impossible
//! inputs rather than returning errors.

#![allow(clippy::expect_used, reason = "test tooling: its inputs are fixed")]

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use ed25519_dalek::Signer as _;
use hmac::{Hmac, Mac as _};
use mandate_core::status_list::{compress, location};
use mandate_core::{
    AgentId, AssuranceLevel, Audience, Bits, Claims, Constraints, Framework, HumanRef, Identity,
    Jwks, NewProof, Policy, Renewal, ReputationCounts, RootIssue, Scope, SigningKey, StatusClaim,
    StatusList, StatusListClaims, StatusType, StatusUri, TokenRequest, Ulid, Usd, check_status,
    check_status_with, delegate, human_ref, issue_root, renew, reputation, sign, sign_proof,
    sign_status_list, verify, verify_status_list,
};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

mod approvals;
mod args;
mod log;
mod trace;
mod trust;
mod webhooks;
mod witness;

/// The seed every byte of the vectors derives from.
const SEED: &str = "mandate conformance vectors v1";
/// The `now` of every token case unless a case says otherwise (2027-01-15).
const NOW: i64 = 1_800_000_000;
/// The issuer of the vector tokens.
const ISSUER: &str = "https://mandate.example";

/// Deterministic bytes: SHA-256(seed ‖ label ‖ counter).
struct Rng {
    counter: u64,
}

impl Rng {
    fn bytes<const N: usize>(&mut self, label: &str) -> [u8; N] {
        let mut out = [0u8; N];
        let mut filled = 0;
        while filled < N {
            self.counter += 1;
            let block = Sha256::new()
                .chain_update(SEED)
                .chain_update(label)
                .chain_update(self.counter.to_be_bytes())
                .finalize();
            for byte in block {
                if filled == N {
                    break;
                }
                out[filled] = byte;
                filled += 1;
            }
        }
        out
    }

    fn ulid_ms(&mut self, unix_millis: u64, label: &str) -> Ulid {
        Ulid::new(unix_millis, self.bytes(label)).expect("vector time fits a ULID")
    }

    fn ulid(&mut self, unix_seconds: i64) -> Ulid {
        Ulid::new(unix_seconds as u64 * 1000, self.bytes("ulid")).expect("vector time fits a ULID")
    }
}

fn b64(bytes: impl AsRef<[u8]>) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A raw signer for hand-made tokens, next to the core key of the same secret.
struct Keys {
    secret: [u8; 32],
    core: SigningKey,
}

impl Keys {
    fn new(rng: &mut Rng, label: &str) -> Keys {
        Keys::from_secret(rng.bytes(label))
    }

    fn from_secret(secret: [u8; 32]) -> Keys {
        Keys {
            secret,
            core: SigningKey::from_secret(&secret),
        }
    }

    fn dalek(&self) -> ed25519_dalek::SigningKey {
        ed25519_dalek::SigningKey::from_bytes(&self.secret)
    }

    fn public_jwk(&self) -> Value {
        serde_json::to_value(self.core.public_jwk()).expect("a JWK serialises")
    }

    /// Signs `header.payload` made from arbitrary JSON texts.
    fn sign_raw(&self, header: &str, payload: &str) -> String {
        let input = format!("{}.{}", b64(header), b64(payload));
        let signature = self.dalek().sign(input.as_bytes()).to_bytes();
        format!("{input}.{}", b64(signature))
    }

    fn header(&self) -> String {
        format!(
            r#"{{"alg":"EdDSA","typ":"vat+jwt","kid":"{}"}}"#,
            self.core.kid()
        )
    }
}

fn claims_value(claims: &Claims) -> Value {
    serde_json::to_value(claims).expect("claims serialise")
}

fn request(agent: &str, resources: &[&str], actions: &[&str]) -> TokenRequest {
    TokenRequest {
        agent_id: AgentId::parse(agent).expect("vector agent ids are valid"),
        scope: Scope::parse(resources, actions).expect("vector scopes are valid"),
        constraints: Constraints::default(),
        policy: Policy::default(),
        ttl_seconds: None,
        holder: None,
    }
}

struct TokenCases {
    cases: Vec<Value>,
}

impl TokenCases {
    fn valid(&mut self, name: &str, description: &str, token: &str, now: i64, claims: &Claims) {
        self.cases.push(json!({
            "name": name,
            "description": description,
            "token": token,
            "now": now,
            "expect": { "valid": true, "claims": claims_value(claims) },
        }));
    }

    fn invalid(&mut self, name: &str, description: &str, token: &str, now: i64, code: &str) {
        self.cases.push(json!({
            "name": name,
            "description": description,
            "token": token,
            "now": now,
            "expect": { "valid": false, "stage": "verify", "error": code },
        }));
    }

    fn push(&mut self, case: Value) {
        self.cases.push(case);
    }
}

fn human(secret: &[u8; 32]) -> HumanRef {
    human_ref(
        secret,
        &Identity::email("dev@example.com").expect("a valid address"),
    )
}

fn token_vectors(rng: &mut Rng, key: &Keys, issuer: &str, now: i64) -> Value {
    let other = Keys::new(rng, "signing key B");
    let deployment_secret = rng.bytes("deployment secret");
    let iat = now - 600;

    let mut root_request = request(
        "research-bot",
        &["crm:*", "mail:inbox", "files:/reports/q3.pdf"],
        &["read", "write", "summarise", "delegate"],
    );
    root_request.constraints = Constraints {
        max_spend_per_action_usd: None,
        min_trust: None,
        max_spend_usd: Some(Usd::from_f64(50.0).expect("valid amount")),
        max_actions: Some(100),
        require_approval: None,
        args: Default::default(),
    };
    root_request.policy = Policy::new(vec![
        Framework::parse("gdpr").expect("valid"),
        Framework::parse("soc2").expect("valid"),
    ])
    .expect("valid policy");
    let root = issue_root(
        root_request,
        RootIssue {
            issuer: issuer.to_owned(),
            human: human(&deployment_secret),
            level: AssuranceLevel::L1,
            now: iat,
            jti: rng.ulid(iat),
            provenance: rng.ulid(iat),
            status: None,
        },
    )
    .expect("root issues");
    let mut child_request = request(
        "summariser",
        &["crm:contacts", "mail:inbox"],
        &["read", "summarise", "delegate"],
    );
    child_request.constraints.max_spend_usd = Some(Usd::from_f64(10.5).expect("valid"));
    child_request.constraints.max_actions = Some(20);
    child_request.policy = Policy::new(vec![
        Framework::parse("gdpr").expect("valid"),
        Framework::parse("soc2").expect("valid"),
        Framework::parse("hipaa").expect("valid"),
    ])
    .expect("valid policy");
    child_request.ttl_seconds = Some(1800);
    let child = delegate(&root, child_request, iat + 10, rng.ulid(iat + 10), None)
        .expect("child delegates");
    let mut grandchild_request = request("reader", &["crm:contacts"], &["read"]);
    grandchild_request.constraints = child.constraints();
    grandchild_request.policy = child.svc_policy.clone().unwrap_or_default();
    let grandchild = delegate(
        &child,
        grandchild_request,
        iat + 20,
        rng.ulid(iat + 20),
        None,
    )
    .expect("grandchild delegates");

    let holder = Keys::new(rng, "holder key");
    let mut bound_request = request("courier", &["mail:outbox"], &["write", "delegate"]);
    bound_request.holder = Some(holder.core.holder_key().jkt().clone());
    let bound = issue_root(
        bound_request,
        RootIssue {
            issuer: issuer.to_owned(),
            human: human(&deployment_secret),
            level: AssuranceLevel::L2,
            now: iat,
            jti: rng.ulid(iat),
            provenance: rng.ulid(iat),
            status: None,
        },
    )
    .expect("bound root issues");
    let bound_child = delegate(
        &bound,
        request("courier-helper", &["mail:outbox"], &["write"]),
        iat + 10,
        rng.ulid(iat + 10),
        None,
    )
    .expect("bound child delegates");
    let mut unbound_child = bound_child.clone();
    unbound_child.cnf = None;

    let root_token = sign(&root, &key.core).expect("signs");
    let child_token = sign(&child, &key.core).expect("signs");
    let grandchild_token = sign(&grandchild, &key.core).expect("signs");
    let bound_token = sign(&bound, &key.core).expect("signs");
    let bound_child_token = sign(&bound_child, &key.core).expect("signs");
    let unbound_child_token = sign(&unbound_child, &key.core).expect("signs");
    let header = key.header();
    let root_payload = serde_json::to_string(&root).expect("serialises");

    let mut t = TokenCases { cases: Vec::new() };
    t.valid(
        "valid_root",
        "a root token at L1 with constraints and policy",
        &root_token,
        now,
        &root,
    );
    t.valid(
        "valid_delegated",
        "a token delegated once",
        &child_token,
        now,
        &child,
    );
    t.valid(
        "valid_delegated_twice",
        "a token delegated twice",
        &grandchild_token,
        now,
        &grandchild,
    );
    t.valid(
        "valid_bound",
        "a root token bound to a holder key (cnf.jkt)",
        &bound_token,
        now,
        &bound,
    );
    t.valid(
        "valid_bound_child",
        "a child that inherits its parent's binding",
        &bound_child_token,
        now,
        &bound_child,
    );

    // Algorithms other than EdDSA, whatever the signature.
    for alg in ["none", "None", "NONE", "noNE"] {
        let h = format!(
            r#"{{"alg":"{alg}","typ":"vat+jwt","kid":"{}"}}"#,
            key.core.kid()
        );
        let token = format!("{}.{}.", b64(&h), b64(&root_payload));
        t.invalid(
            &format!("alg_{alg}"),
            "unsigned token",
            &token,
            now,
            "unsupported_alg",
        );
    }
    {
        let h = format!(
            r#"{{"alg":"HS256","typ":"vat+jwt","kid":"{}"}}"#,
            key.core.kid()
        );
        let input = format!("{}.{}", b64(&h), b64(&root_payload));
        let mut mac =
            <Hmac<Sha256> as hmac::digest::KeyInit>::new_from_slice(&key.core.public_bytes())
                .expect("HMAC takes any key");
        mac.update(input.as_bytes());
        let token = format!("{input}.{}", b64(mac.finalize().into_bytes()));
        t.invalid(
            "alg_hs256_public_key",
            "HS256 keyed with the public key (key confusion)",
            &token,
            now,
            "unsupported_alg",
        );
    }
    {
        let h = format!(r#"{{"typ":"vat+jwt","kid":"{}"}}"#, key.core.kid());
        t.invalid(
            "alg_missing",
            "no alg",
            &key.sign_raw(&h, &root_payload),
            now,
            "unsupported_alg",
        );
    }

    // Key selection.
    {
        let h = r#"{"alg":"EdDSA","typ":"vat+jwt","kid":"not-a-known-kid"}"#;
        t.invalid(
            "unknown_kid",
            "kid not in the key set",
            &key.sign_raw(h, &root_payload),
            now,
            "unknown_kid",
        );
        let h = r#"{"alg":"EdDSA","typ":"vat+jwt"}"#;
        t.invalid(
            "kid_missing",
            "no kid",
            &key.sign_raw(h, &root_payload),
            now,
            "missing_kid",
        );
        t.invalid(
            "wrong_key_right_kid",
            "signed by another key under the trusted kid",
            &other.sign_raw(&header, &root_payload),
            now,
            "invalid_signature",
        );
    }

    // Header members that would let the token choose its own key or rules.
    let other_jwk = other.public_jwk();
    for (member, value) in [
        ("jwk", other_jwk.clone()),
        ("jku", json!("https://attacker.example/jwks.json")),
        ("x5u", json!("https://attacker.example/cert.pem")),
        ("x5c", json!(["MIIB"])),
        ("crit", json!(["exp"])),
    ] {
        let mut h = json!({"alg": "EdDSA", "typ": "vat+jwt", "kid": key.core.kid()});
        h[member] = value;
        let signer = if member == "jwk" { &other } else { key };
        let token = signer.sign_raw(&h.to_string(), &root_payload);
        t.invalid(
            &format!("header_{member}"),
            "a forbidden header member",
            &token,
            now,
            "forbidden_header_param",
        );
    }
    for (name, h) in [
        (
            "typ_missing",
            format!(r#"{{"alg":"EdDSA","kid":"{}"}}"#, key.core.kid()),
        ),
        (
            "typ_jwt",
            format!(
                r#"{{"alg":"EdDSA","typ":"JWT","kid":"{}"}}"#,
                key.core.kid()
            ),
        ),
    ] {
        t.invalid(
            name,
            "typ must be vat+jwt",
            &key.sign_raw(&h, &root_payload),
            now,
            "invalid_typ",
        );
    }
    {
        let h = format!(
            r#"{{"alg":"EdDSA","typ":"vat+jwt","kid":"{}","zip":"DEF"}}"#,
            key.core.kid()
        );
        t.invalid(
            "header_unknown_member",
            "an unknown header member",
            &key.sign_raw(&h, &root_payload),
            now,
            "malformed_header",
        );
        let h = format!(
            r#"{{"alg":"EdDSA","alg":"EdDSA","typ":"vat+jwt","kid":"{}"}}"#,
            key.core.kid()
        );
        t.invalid(
            "header_duplicate_member",
            "a header member twice",
            &key.sign_raw(&h, &root_payload),
            now,
            "malformed_header",
        );
        t.invalid(
            "header_not_json",
            "header is not JSON",
            &key.sign_raw("not json", &root_payload),
            now,
            "malformed_header",
        );
    }

    // Signatures.
    let parts: Vec<&str> = root_token.split('.').collect();
    let (h64, p64, s64) = (parts[0], parts[1], parts[2]);
    {
        let mut widened = root.clone();
        widened.svc_scope = Scope::parse(
            &["crm:*", "mail:*", "bank:*"],
            &["read", "write", "summarise", "delegate", "pay"],
        )
        .expect("valid");
        let token = format!(
            "{h64}.{}.{s64}",
            b64(serde_json::to_string(&widened).expect("serialises"))
        );
        t.invalid(
            "payload_swapped",
            "another payload under an old signature",
            &token,
            now,
            "invalid_signature",
        );
    }
    {
        let sig = URL_SAFE_NO_PAD.decode(s64).expect("own signature decodes");
        let s = add_group_order(sig[32..].try_into().expect("32 bytes"));
        let mut malleated = sig[..32].to_vec();
        malleated.extend_from_slice(&s);
        let token = format!("{h64}.{p64}.{}", b64(&malleated));
        t.invalid(
            "signature_s_plus_l",
            "non-canonical S (S + L)",
            &token,
            now,
            "invalid_signature",
        );
        let token = format!("{h64}.{p64}.{}", b64(&sig[..63]));
        t.invalid(
            "signature_63_bytes",
            "a truncated signature",
            &token,
            now,
            "malformed_signature",
        );
        let mut long = sig.clone();
        long.push(0);
        let token = format!("{h64}.{p64}.{}", b64(&long));
        t.invalid(
            "signature_65_bytes",
            "a signature with a trailing byte",
            &token,
            now,
            "malformed_signature",
        );
        let mut flipped = sig.clone();
        flipped[10] ^= 1;
        let token = format!("{h64}.{p64}.{}", b64(&flipped));
        t.invalid(
            "signature_bit_flipped",
            "one bit of R flipped",
            &token,
            now,
            "invalid_signature",
        );
    }

    // Encoding and structure.
    {
        let sig = URL_SAFE_NO_PAD.decode(s64).expect("own signature decodes");
        t.invalid(
            "signature_padded",
            "base64 with = padding",
            &format!("{h64}.{p64}.{}==", s64),
            now,
            "invalid_base64",
        );
        let standard = STANDARD_NO_PAD.encode(&sig);
        let standard_token = if standard == s64 {
            // Force a standard-alphabet character into the header instead.
            format!(
                "{}.{p64}.{s64}",
                h64.replacen(|c: char| c.is_ascii_alphabetic(), "+", 1)
            )
        } else {
            format!("{h64}.{p64}.{standard}")
        };
        t.invalid(
            "standard_alphabet",
            "base64 with + or / instead of - or _",
            &standard_token,
            now,
            "invalid_base64",
        );
        t.invalid(
            "two_segments",
            "two segments",
            &format!("{h64}.{p64}"),
            now,
            "malformed_token",
        );
        t.invalid(
            "four_segments",
            "four segments",
            &format!("{root_token}.{s64}"),
            now,
            "malformed_token",
        );
        t.invalid(
            "whitespace",
            "a space inside the token",
            &format!("{h64}.{p64} .{s64}"),
            now,
            "invalid_base64",
        );
        t.invalid("empty", "the empty string", "", now, "malformed_token");
    }
    {
        let mut huge = claims_value(&root);
        huge["iss"] = json!("x".repeat(8200));
        let token = key.sign_raw(&header, &huge.to_string());
        t.invalid(
            "over_8_kib",
            "longer than 8 KiB",
            &token,
            now,
            "token_too_large",
        );
    }

    // Weak key forgery: the identity point with R = identity and S = 0
    // "verifies" any message under a lax verifier.
    {
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let weak_jwks = json!({"keys": [
            key.public_jwk(),
            {"kty": "OKP", "crv": "Ed25519", "kid": "weak", "x": b64(identity), "alg": "EdDSA", "use": "sig"}
        ]});
        let mut forged_sig = identity.to_vec();
        forged_sig.extend_from_slice(&[0u8; 32]);
        let h = r#"{"alg":"EdDSA","typ":"vat+jwt","kid":"weak"}"#;
        let token = format!("{}.{}.{}", b64(h), b64(&root_payload), b64(&forged_sig));
        t.push(json!({
            "name": "weak_key_forgery",
            "description": "a key set holding the identity point, and a token forged for it",
            "token": token,
            "now": now,
            "jwks": weak_jwks,
            "expect": { "valid": false, "stage": "jwks", "error": "weak_key" },
        }));
        t.invalid(
            "weak_kid_against_good_set",
            "the forged token against the real key set",
            &token,
            now,
            "unknown_kid",
        );
    }

    // Claims.
    let resign = |edit: &dyn Fn(&mut Value)| {
        let mut payload = claims_value(&root);
        edit(&mut payload);
        key.sign_raw(&header, &payload.to_string())
    };
    t.invalid(
        "expired",
        "exp passed by more than the leeway",
        &root_token,
        root.exp + 61,
        "expired",
    );
    t.invalid(
        "expired_at_leeway_edge",
        "now equals exp + leeway",
        &root_token,
        root.exp + 60,
        "expired",
    );
    t.valid(
        "exp_within_leeway",
        "exp passed by less than the leeway",
        &root_token,
        root.exp + 59,
        &root,
    );
    t.invalid(
        "exp_missing",
        "no exp",
        &resign(&|p| {
            p.as_object_mut().map(|o| o.remove("exp"));
        }),
        now,
        "missing_exp",
    );
    t.invalid(
        "exp_string",
        "exp as a string",
        &resign(&|p| p["exp"] = json!(now.to_string())),
        now,
        "invalid_exp",
    );
    t.invalid(
        "exp_fraction",
        "exp as a fraction",
        &resign(&|p| p["exp"] = json!(now as f64 + 0.5)),
        now,
        "invalid_exp",
    );
    t.invalid(
        "nbf_future",
        "nbf beyond the leeway",
        &resign(&|p| p["nbf"] = json!(now + 61)),
        now,
        "not_yet_valid",
    );
    t.invalid(
        "nbf_string",
        "nbf as a string",
        &resign(&|p| p["nbf"] = json!("soon")),
        now,
        "invalid_nbf",
    );
    t.invalid(
        "iat_missing",
        "no iat",
        &resign(&|p| {
            p.as_object_mut().map(|o| o.remove("iat"));
        }),
        now,
        "invalid_iat",
    );
    {
        let payload = root_payload.replacen(
            "\"svc_scope\":",
            "\"svc_scope\":{\"resources\":[\"*:*\"],\"actions\":[\"admin\"]},\"svc_scope\":",
            1,
        );
        t.invalid(
            "duplicate_svc_scope",
            "svc_scope twice (a parser keeping the last would widen)",
            &key.sign_raw(&header, &payload),
            now,
            "duplicate_claim",
        );
    }
    t.invalid(
        "unknown_claim",
        "a claim Mandate does not define",
        &resign(&|p| p["admin"] = json!(true)),
        now,
        "malformed_claims",
    );
    t.invalid(
        "scope_wildcard_namespace",
        "a resource pattern *:*",
        &resign(&|p| p["svc_scope"]["resources"] = json!(["*:*"])),
        now,
        "malformed_claims",
    );
    t.invalid(
        "trust_raised",
        "svc_trust_score above its level",
        &resign(&|p| p["svc_trust_score"] = json!(0.95)),
        now,
        "invalid_claim",
    );
    t.invalid(
        "root_with_depth",
        "a root jti at depth 1",
        &resign(&|p| p["svc_depth"] = json!(1)),
        now,
        "invalid_claim",
    );
    t.invalid(
        "sub_not_agent",
        "sub without the agent: prefix",
        &resign(&|p| p["sub"] = json!("research-bot")),
        now,
        "invalid_claim",
    );
    t.invalid(
        "bad_jti",
        "a jti of another form",
        &resign(&|p| p["jti"] = json!("vat_root_NOTAULID")),
        now,
        "malformed_claims",
    );
    t.invalid(
        "bad_human_ref",
        "svc_human not sha256:<hex>",
        &resign(&|p| p["svc_human"] = json!("dev@example.com")),
        now,
        "malformed_claims",
    );
    t.invalid(
        "cnf_unknown_member",
        "cnf with a member other than jkt",
        &resign(&|p| {
            p["cnf"] = json!({"jkt": holder.core.holder_key().jkt().as_str(), "x5t#S256": "x"})
        }),
        now,
        "malformed_claims",
    );
    t.invalid(
        "cnf_bad_jkt",
        "cnf.jkt that is not a SHA-256 thumbprint",
        &resign(&|p| p["cnf"] = json!({"jkt": "not-a-thumbprint"})),
        now,
        "malformed_claims",
    );
    // The status claim (IETF Token Status List): typed, every member once,
    // nothing else. Lists live at the vectors' own base, whatever the
    // issuer (`hostile_tokens` is called with issuers that are no URL).
    {
        let status = StatusClaim::for_index(ISSUER, 3).expect("the vectors' base is a URL");
        let mut with_status = bound_child.clone();
        with_status.status = Some(status.clone());
        t.valid(
            "valid_with_status",
            "a bound child carrying its status list entry (written after cnf, before act)",
            &sign(&with_status, &key.core).expect("signs"),
            now,
            &with_status,
        );
        let uri = status.uri().as_str();
        for (name, description, value) in [
            (
                "status_unknown_member",
                "status_list with a member other than idx and uri",
                json!({"status_list": {"idx": 3, "uri": uri, "bits": 1}}),
            ),
            (
                "status_other_mechanism",
                "a status mechanism other than status_list",
                json!({"status_list": {"idx": 3, "uri": uri}, "status_crl": {}}),
            ),
            ("status_empty", "a status naming no mechanism", json!({})),
            (
                "status_idx_negative",
                "a negative idx",
                json!({"status_list": {"idx": -1, "uri": uri}}),
            ),
            (
                "status_idx_fraction",
                "a fractional idx",
                json!({"status_list": {"idx": 3.5, "uri": uri}}),
            ),
            (
                "status_idx_beyond_2_53",
                "an idx JavaScript cannot hold exactly",
                json!({"status_list": {"idx": 9_007_199_254_740_992_u64, "uri": uri}}),
            ),
            (
                "status_uri_relative",
                "a uri without scheme and host",
                json!({"status_list": {"idx": 3, "uri": "/v1/vat/status/0"}}),
            ),
            (
                "status_uri_fragment",
                "a uri with a fragment",
                json!({"status_list": {"idx": 3, "uri": format!("{uri}#x")}}),
            ),
            (
                "status_uri_userinfo",
                "a uri with user information",
                json!({"status_list": {"idx": 3, "uri": "https://user@mandate.example/v1/vat/status/0"}}),
            ),
            (
                "status_uri_javascript",
                "a uri of another scheme",
                json!({"status_list": {"idx": 3, "uri": "javascript:alert(1)"}}),
            ),
            (
                "status_uri_too_long",
                "a uri over 512 characters",
                json!({"status_list": {"idx": 3, "uri": format!("{uri}/{}", "x".repeat(512))}}),
            ),
        ] {
            t.invalid(
                name,
                description,
                &resign(&|p| p["status"] = value.clone()),
                now,
                "malformed_claims",
            );
        }
        let mut payload = claims_value(&root);
        payload["status"] = json!({"status_list": {"idx": 3, "uri": uri}});
        let text = payload
            .to_string()
            .replacen("\"idx\":3", "\"idx\":4,\"idx\":3", 1);
        t.invalid(
            "status_idx_twice",
            "idx twice inside status_list (a parser keeping the first would be fooled)",
            &key.sign_raw(&header, &text),
            now,
            "malformed_claims",
        );
        let text = payload.to_string().replacen(
            "\"status\":",
            &format!("\"status\":{{\"status_list\":{{\"idx\":4,\"uri\":\"{uri}\"}}}},\"status\":"),
            1,
        );
        t.invalid(
            "status_twice",
            "status twice",
            &key.sign_raw(&header, &text),
            now,
            "duplicate_claim",
        );
        let list = sign_status_list(
            &StatusList::new(mandate_core::limits::STATUS_LIST_SIZE).expect("list size"),
            &StatusListClaims {
                sub: status.uri().clone(),
                iat: now - 60,
                exp: now + 3600,
                ttl: 300,
            },
            &key.core,
        )
        .expect("the list signs");
        t.invalid(
            "status_list_as_token",
            "a status list token presented as a token",
            &list,
            now,
            "invalid_typ",
        );
    }
    {
        let mut payload = claims_value(&child);
        payload["svc_chain"] = json!([]);
        t.invalid(
            "delegated_chain_short",
            "svc_chain shorter than svc_depth",
            &key.sign_raw(&header, &payload.to_string()),
            now,
            "invalid_claim",
        );
        let mut payload = claims_value(&child);
        payload["svc_parent"] = json!(root.jti.as_str());
        payload["svc_chain"] = json!([root.jti.as_str()]);
        t.invalid(
            "delegated_chain_of_jtis",
            "ancestors named by jti, not by jti hash (what this release stops publishing)",
            &key.sign_raw(&header, &payload.to_string()),
            now,
            "malformed_claims",
        );
        let mut payload = claims_value(&child);
        let own = child.jti.hash();
        payload["svc_parent"] = json!(own.as_str());
        payload["svc_chain"] = json!([own.as_str()]);
        t.invalid(
            "delegated_chain_names_itself",
            "a token that names itself as its parent",
            &key.sign_raw(&header, &payload.to_string()),
            now,
            "invalid_claim",
        );
    }
    // The audience (`aud`): one resource URI (RFC 8707), never an array;
    // a renewal keeps it, and a chain may not change it.
    let mut for_mcp = root.clone();
    for_mcp.aud = Some(Audience::parse(AUD).expect("a resource URI"));
    let for_mcp_token = sign(&for_mcp, &key.core).expect("signs");
    let renewed = renew(
        &for_mcp,
        Renewal {
            now: iat + 30,
            ttl_seconds: 900,
            holder: Some(holder.core.holder_key().jkt().clone()),
            // Not drawn from `rng`, so the vectors generated after these
            // keep their bytes.
            jti: Ulid::new((iat as u64 + 30) * 1000, [0xa0; 10]).expect("a ulid"),
            status: None,
        },
    )
    .expect("the grant renews");
    let renewed_token = sign(&renewed, &key.core).expect("signs");
    let mut moved = renewed.clone();
    moved.aud = Some(Audience::parse(OTHER_AUD).expect("a resource URI"));
    let moved_token = sign(&moved, &key.core).expect("signs");
    t.valid(
        "valid_with_aud",
        "a root token for one resource server (aud, written after sub)",
        &for_mcp_token,
        now,
        &for_mcp,
    );
    t.valid(
        "valid_renewal_keeps_aud",
        "a renewal: its parent's grant and aud, its own exp and key, depth 1",
        &renewed_token,
        now,
        &renewed,
    );
    for (name, description, value, code) in [
        (
            "aud_array",
            "aud as an array (RFC 7519 allows it; Mandate reads one string)",
            json!([AUD]),
            "malformed_claims",
        ),
        (
            "aud_http_not_loopback",
            "aud over http on a host that is not loopback",
            json!("http://mcp.example.com/mcp"),
            "invalid_claim",
        ),
        (
            "aud_fragment",
            "aud with a fragment (RFC 8707 2)",
            json!(format!("{AUD}#tools")),
            "invalid_claim",
        ),
        (
            "aud_relative",
            "aud that is no absolute URI",
            json!("/mcp"),
            "invalid_claim",
        ),
        (
            "aud_too_long",
            "aud over 2048 bytes",
            json!(format!("{AUD}/{}", "a".repeat(2048))),
            "invalid_claim",
        ),
        (
            "aud_number",
            "aud that is neither a string nor an array",
            json!(7),
            "malformed_claims",
        ),
    ] {
        t.invalid(
            name,
            description,
            &resign(&|p| p["aud"] = value.clone()),
            now,
            code,
        );
    }
    t.push(json!({
        "name": "issuer_matches",
        "description": "the caller names the right issuer",
        "token": root_token,
        "now": now,
        "options": { "issuer": issuer },
        "expect": { "valid": true, "claims": claims_value(&root) },
    }));
    t.push(json!({
        "name": "issuer_mismatch",
        "description": "the caller names another issuer",
        "token": root_token,
        "now": now,
        "options": { "issuer": "https://other.example" },
        "expect": { "valid": false, "stage": "verify", "error": "issuer_mismatch" },
    }));
    t.push(json!({
        "name": "zero_leeway",
        "description": "expired by one second with no leeway",
        "token": root_token,
        "now": root.exp,
        "options": { "leeway_seconds": 0 },
        "expect": { "valid": false, "stage": "verify", "error": "expired" },
    }));

    let chains = json!([
        {
            "name": "chain_three_deep",
            "tokens": [root_token, child_token, grandchild_token],
            "now": now,
            "revoked": [],
            "expect": { "valid": true },
        },
        {
            "name": "chain_root_revoked",
            "tokens": [root_token, child_token, grandchild_token],
            "now": now,
            "revoked": [root.jti.as_str()],
            "expect": { "valid": false, "index": 0, "error": "revoked" },
        },
        {
            "name": "chain_middle_revoked",
            "tokens": [root_token, child_token, grandchild_token],
            "now": now,
            "revoked": [child.jti.as_str()],
            "expect": { "valid": false, "index": 1, "error": "revoked" },
        },
        {
            "name": "chain_root_revoked_by_hash",
            "tokens": [root_token, child_token, grandchild_token],
            "now": now,
            "revoked": [root.jti.hash().as_str()],
            "expect": { "valid": false, "index": 0, "error": "revoked" },
        },
        {
            "name": "chain_bound",
            "tokens": [bound_token, bound_child_token],
            "now": now,
            "revoked": [],
            "expect": { "valid": true },
        },
        {
            "name": "chain_binding_dropped",
            "tokens": [bound_token, unbound_child_token],
            "now": now,
            "revoked": [],
            "expect": { "valid": false, "index": 1, "error": "binding_dropped" },
        },
        {
            "name": "chain_link_skipped",
            "tokens": [root_token, grandchild_token],
            "now": now,
            "revoked": [],
            "expect": { "valid": false, "index": 1, "error": "broken_link" },
        },
        {
            "name": "chain_starts_below_root",
            "tokens": [child_token, grandchild_token],
            "now": now,
            "revoked": [],
            "expect": { "valid": false, "index": 0, "error": "not_root" },
        },
        {
            "name": "chain_renewal_keeps_aud",
            "tokens": [for_mcp_token, renewed_token],
            "now": now,
            "revoked": [],
            "expect": { "valid": true },
        },
        {
            "name": "chain_aud_changed",
            "tokens": [for_mcp_token, moved_token],
            "now": now,
            "revoked": [],
            "expect": { "valid": false, "index": 1, "error": "scope_widening" },
        },
        {
            "name": "chain_empty",
            "tokens": [],
            "now": now,
            "revoked": [],
            "expect": { "valid": false, "error": "chain_empty" },
        },
    ]);

    let jwks = json!({ "keys": [key.public_jwk()] });
    Jwks::parse(jwks.to_string().as_bytes()).expect("the vector key set parses");
    json!({
        "description": "Token verification vectors. For each case, parse `jwks` (the case's own, else the file's), then verify `token` at `now` with `options` (defaults: leeway_seconds 60, no issuer). `expect` gives validity, the stage that fails (jwks or verify) and the error code, or the claims of a valid token.",
        "generator": "cargo xtask vectors",
        "now": now,
        "jwks": jwks,
        "cases": t.cases,
        "chains": chains,
    })
}

/// The URL and method of the vector proofs.
const PROOF_URL: &str = "https://mandate.example/v1/vat/delegate";

fn dpop_vectors(rng: &mut Rng, key: &Keys, issuer: &str, now: i64) -> Value {
    let holder = Keys::new(rng, "dpop holder key");
    let other = Keys::new(rng, "dpop other key");
    let deployment_secret = rng.bytes("dpop deployment secret");
    let mut bound_request = request("courier", &["mail:outbox"], &["write"]);
    bound_request.holder = Some(holder.core.holder_key().jkt().clone());
    let issue = |request: TokenRequest, rng: &mut Rng| {
        let claims = issue_root(
            request,
            RootIssue {
                issuer: issuer.to_owned(),
                human: human(&deployment_secret),
                level: AssuranceLevel::L1,
                now: now - 600,
                jti: rng.ulid(now - 600),
                provenance: rng.ulid(now - 600),
                status: None,
            },
        )
        .expect("root issues");
        sign(&claims, &key.core).expect("signs")
    };
    let bound = issue(bound_request, rng);
    let unbound = issue(request("courier", &["mail:outbox"], &["write"]), rng);
    let jkt = holder.core.holder_key().jkt().clone();
    let proof_for =
        |signer: &Keys, method: &str, url: &str, token: &str, at: i64, rng: &mut Rng| {
            sign_proof(
                &signer.core,
                &NewProof {
                    method,
                    url,
                    access_token: Some(token),
                    now: at,
                    jti_random: rng.bytes("proof jti"),
                },
            )
            .expect("the vector URL is valid")
        };
    let good = proof_for(&holder, "POST", PROOF_URL, &bound, now, rng);
    let holder_jwk = json!({"kty": "OKP", "crv": "Ed25519", "x": b64(holder.core.public_bytes())});
    let header = json!({"typ": "dpop+jwt", "alg": "EdDSA", "jwk": holder_jwk});
    let claims = json!({
        "jti": b64(rng.bytes::<16>("proof jti")),
        "htm": "POST",
        "htu": PROOF_URL,
        "iat": now,
        "ath": mandate_core::dpop::ath(&bound),
    });
    let raw = |signer: &Keys, header: &Value, claims: &Value| {
        signer.sign_raw(&header.to_string(), &claims.to_string())
    };
    let with_header = |edit: &dyn Fn(&mut Value)| {
        let mut h = header.clone();
        edit(&mut h);
        raw(&holder, &h, &claims)
    };
    let with_claims = |edit: &dyn Fn(&mut Value)| {
        let mut c = claims.clone();
        edit(&mut c);
        raw(&holder, &header, &c)
    };
    let mut cases = Vec::new();
    let mut case = |name: &str,
                    description: &str,
                    proof: &str,
                    request: (&str, &str, i64),
                    error: Option<&str>| {
        let (method, url, at) = request;
        let expect = match error {
            None => json!({ "valid": true }),
            Some(code) => json!({ "valid": false, "error": code }),
        };
        cases.push(json!({
            "name": name,
            "description": description,
            "proof": proof,
            "method": method,
            "url": url,
            "now": at,
            "expect": expect,
        }));
    };
    let here = ("POST", PROOF_URL, now);
    case(
        "valid",
        "a proof by the holder for this request",
        &good,
        here,
        None,
    );
    case(
        "valid_equivalent_url",
        "the request URL with a query, a fragment, upper-case host and the default port",
        &good,
        (
            "POST",
            "https://MANDATE.example:443/v1/vat/delegate?dry=1#x",
            now,
        ),
        None,
    );
    case(
        "valid_hand_made",
        "the same checks on a hand-made proof",
        &raw(&holder, &header, &claims),
        here,
        None,
    );
    case(
        "iat_at_window_edge",
        "iat exactly 60 s old",
        &good,
        ("POST", PROOF_URL, now + 60),
        None,
    );
    case(
        "stale",
        "iat 61 s old",
        &good,
        ("POST", PROOF_URL, now + 61),
        Some("dpop_stale"),
    );
    case(
        "from_future",
        "iat 61 s ahead",
        &good,
        ("POST", PROOF_URL, now - 61),
        Some("dpop_from_future"),
    );
    case(
        "other_method",
        "a proof for POST used with GET",
        &good,
        ("GET", PROOF_URL, now),
        Some("dpop_method_mismatch"),
    );
    case(
        "other_url",
        "a proof for one endpoint used at another",
        &good,
        ("POST", "https://mandate.example/v1/vat/revoke", now),
        Some("dpop_url_mismatch"),
    );
    case(
        "other_host",
        "a proof for one server used at another",
        &good,
        (
            "POST",
            "https://mandate.attacker.example/v1/vat/delegate",
            now,
        ),
        Some("dpop_url_mismatch"),
    );
    let by_other = proof_for(&other, "POST", PROOF_URL, &bound, now, rng);
    case(
        "other_key",
        "a valid proof by another key than the token's",
        &by_other,
        here,
        Some("dpop_key_mismatch"),
    );
    let for_unbound = proof_for(&holder, "POST", PROOF_URL, &unbound, now, rng);
    case(
        "other_token",
        "a proof made for another token (ath)",
        &for_unbound,
        here,
        Some("dpop_ath_mismatch"),
    );
    case(
        "no_ath",
        "a proof without ath",
        &with_claims(&|c| {
            c.as_object_mut().map(|o| o.remove("ath"));
        }),
        here,
        Some("dpop_missing_ath"),
    );
    case(
        "nonce",
        "a nonce this server never sent",
        &with_claims(&|c| c["nonce"] = json!("abc")),
        here,
        Some("dpop_malformed_claims"),
    );
    case(
        "iat_string",
        "iat as a string",
        &with_claims(&|c| c["iat"] = json!(now.to_string())),
        here,
        Some("dpop_malformed_claims"),
    );
    case(
        "htu_missing",
        "no htu",
        &with_claims(&|c| {
            c.as_object_mut().map(|o| o.remove("htu"));
        }),
        here,
        Some("dpop_malformed_claims"),
    );
    {
        let text = claims.to_string().replacen(
            "\"htm\":",
            "\"htu\":\"https://mandate.example/x\",\"htm\":",
            1,
        );
        case(
            "htu_twice",
            "htu twice (a parser keeping the last would be fooled)",
            &holder.sign_raw(&header.to_string(), &text),
            here,
            Some("dpop_malformed_claims"),
        );
    }
    case(
        "jti_short",
        "a jti of fewer than 96 bits",
        &with_claims(&|c| c["jti"] = json!("abc")),
        here,
        Some("dpop_invalid_jti"),
    );
    case(
        "htu_relative",
        "htu without scheme and host",
        &with_claims(&|c| c["htu"] = json!("/v1/vat/delegate")),
        here,
        Some("dpop_invalid_url"),
    );
    case(
        "typ_jwt",
        "typ JWT",
        &with_header(&|h| h["typ"] = json!("JWT")),
        here,
        Some("dpop_invalid_typ"),
    );
    case(
        "typ_vat",
        "a Mandate token's typ",
        &with_header(&|h| h["typ"] = json!("vat+jwt")),
        here,
        Some("dpop_invalid_typ"),
    );
    {
        let h = json!({"typ": "dpop+jwt", "alg": "none", "jwk": holder_jwk});
        let unsigned = format!("{}.{}.", b64(h.to_string()), b64(claims.to_string()));
        case(
            "alg_none",
            "an unsigned proof",
            &unsigned,
            here,
            Some("dpop_unsupported_alg"),
        );
        let h = json!({"typ": "dpop+jwt", "alg": "HS256", "jwk": holder_jwk});
        case(
            "alg_hs256",
            "a MAC",
            &raw(&holder, &h, &claims),
            here,
            Some("dpop_unsupported_alg"),
        );
        let h = json!({"typ": "dpop+jwt", "alg": "Ed25519", "jwk": holder_jwk});
        case(
            "alg_ed25519",
            "alg Ed25519, EdDSA's fully specified name (RFC 9864), as oauth4webapi sends it",
            &raw(&holder, &h, &claims),
            here,
            None,
        );
        let h = json!({"typ": "dpop+jwt", "alg": "Ed448", "jwk": holder_jwk});
        case(
            "alg_ed448",
            "alg Ed448 on an Ed25519 key",
            &raw(&holder, &h, &claims),
            here,
            Some("dpop_unsupported_alg"),
        );
    }
    case(
        "jwk_missing",
        "no jwk",
        &with_header(&|h| {
            h.as_object_mut().map(|o| o.remove("jwk"));
        }),
        here,
        Some("dpop_malformed_header"),
    );
    case(
        "header_kid",
        "a header member beyond typ, alg and jwk",
        &with_header(&|h| h["kid"] = json!("k1")),
        here,
        Some("dpop_malformed_header"),
    );
    case(
        "jwk_private",
        "a jwk carrying the private key",
        &with_header(&|h| h["jwk"]["d"] = json!(b64(holder.secret))),
        here,
        Some("dpop_invalid_key"),
    );
    case(
        "jwk_p256",
        "a jwk of another curve",
        &with_header(&|h| {
            h["jwk"] = json!({"kty": "EC", "crv": "P-256", "x": "AAAA", "y": "AAAA"})
        }),
        here,
        Some("dpop_invalid_key"),
    );
    {
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let mut h = header.clone();
        h["jwk"]["x"] = json!(b64(identity));
        let mut forged = identity.to_vec();
        forged.extend_from_slice(&[0u8; 32]);
        let token = format!(
            "{}.{}.{}",
            b64(h.to_string()),
            b64(claims.to_string()),
            b64(&forged)
        );
        case(
            "jwk_weak",
            "the identity point and a forged signature",
            &token,
            here,
            Some("dpop_invalid_key"),
        );
    }
    case(
        "signed_by_another_key",
        "the holder's jwk, signed by another key",
        &raw(&other, &header, &claims),
        here,
        Some("dpop_invalid_signature"),
    );
    {
        let (rest, signature) = good.rsplit_once('.').expect("three segments");
        let mut bytes = URL_SAFE_NO_PAD
            .decode(signature)
            .expect("own signature decodes");
        bytes[5] ^= 1;
        case(
            "signature_flipped",
            "one bit of the signature flipped",
            &format!("{rest}.{}", b64(&bytes)),
            here,
            Some("dpop_invalid_signature"),
        );
    }
    case(
        "not_a_jwt",
        "two segments",
        "abc.def",
        here,
        Some("dpop_malformed"),
    );
    case(
        "over_8_kib",
        "longer than 8 KiB",
        &with_claims(&|c| c["htu"] = json!(format!("{PROOF_URL}/{}", "x".repeat(8200)))),
        here,
        Some("dpop_too_large"),
    );
    let binding = json!([
        {"name": "bound_with_proof", "token": bound, "proof": good, "expect": {"valid": true}},
        {"name": "bound_without_proof", "token": bound, "proof": null, "expect": {"valid": false, "error": "dpop_required"}},
        {"name": "unbound_without_proof", "token": unbound, "proof": null, "expect": {"valid": true}},
        {"name": "unbound_with_proof", "token": unbound, "proof": for_unbound, "expect": {"valid": false, "error": "dpop_not_bound"}},
    ]);
    json!({
        "description": "DPoP proof vectors (RFC 9449 with EdDSA). `cases`: check `proof`, sent with `token` (bound to `jkt`), against a request of `method` and `url` at `now`; expect validity or the error code. Replay is stateful and not covered here. `binding`: verify `token` against `jwks` at `now`, then apply the binding rule with `proof` (or none) for a POST to `url`.",
        "generator": "cargo xtask vectors",
        "jwks": { "keys": [key.public_jwk()] },
        "token": bound,
        "jkt": jkt,
        "url": PROOF_URL,
        "now": now,
        "cases": cases,
        "binding": binding,
    })
}

/// S + L for a little-endian scalar S < L: a non-canonical encoding of the
/// same scalar.
fn add_group_order(s: [u8; 32]) -> [u8; 32] {
    const L: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde,
        0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ];
    let mut out = [0u8; 32];
    let mut carry = 0u16;
    for i in 0..32 {
        let sum = u16::from(s[i]) + u16::from(L[i]) + carry;
        out[i] = sum as u8;
        carry = sum >> 8;
    }
    out
}

/// The audience (`aud`) of the vectors' tokens and grants that name one.
const AUD: &str = "https://mcp.example.com/mcp";
/// Another resource server.
const OTHER_AUD: &str = "https://other.example.com/mcp";

fn scope_vectors() -> Value {
    let permits = json!([
        {"resources": ["crm:contacts"], "actions": ["read"], "action": "read", "resource": "crm:contacts", "expect": true},
        {"resources": ["crm:contacts"], "actions": ["read"], "action": "write", "resource": "crm:contacts", "expect": false},
        {"resources": ["crm:contacts"], "actions": ["read"], "action": "read", "resource": "crm:deals", "expect": false},
        {"resources": ["crm:*"], "actions": ["read"], "action": "read", "resource": "crm:deals", "expect": true},
        {"resources": ["crm:*"], "actions": ["read"], "action": "read", "resource": "crmx:deals", "expect": false},
        {"resources": ["crm:*"], "actions": ["read"], "action": "read", "resource": "cr:m", "expect": false},
        {"resources": ["files:/a/*"], "actions": ["read"], "action": "read", "resource": "files:/a/b", "expect": true},
        {"resources": ["files:/a/*"], "actions": ["read"], "action": "read", "resource": "files:/a/b/c.txt", "expect": true},
        {"resources": ["files:/a/*"], "actions": ["read"], "action": "read", "resource": "files:/ab", "expect": false},
        {"resources": ["files:/a/*"], "actions": ["read"], "action": "read", "resource": "files:/a", "expect": false},
        {"resources": ["files:/a/*"], "actions": ["read"], "action": "read", "resource": "files:/a/../etc/shadow", "expect": "invalid_resource"},
        {"resources": ["files:/a/*"], "actions": ["read"], "action": "read", "resource": "files:/a/./b", "expect": "invalid_resource"},
        {"resources": ["files:/a/*"], "actions": ["read"], "action": "read", "resource": "files:/a//b", "expect": "invalid_resource"},
        {"resources": ["files:/a/*"], "actions": ["read"], "action": "read", "resource": "files:/a/%2e%2e/etc/shadow", "expect": "invalid_resource"},
        {"resources": ["files:/a/*"], "actions": ["read"], "action": "read", "resource": "files:/a%2Fb", "expect": "invalid_resource"},
        {"resources": ["files:/a/../*"], "actions": ["read"], "action": "read", "resource": "files:/b", "expect": "invalid_resource_pattern"},
        {"resources": ["files:/a*"], "actions": ["read"], "action": "read", "resource": "files:/ab", "expect": "invalid_resource_pattern"},
        {"resources": ["crm:contact/*"], "actions": ["read"], "action": "read", "resource": "crm:contact/42", "expect": true},
        {"resources": ["crm:contact/*"], "actions": ["read"], "action": "read", "resource": "crm:contacts/42", "expect": false},
        {"resources": ["s3:bucket:*"], "actions": ["read"], "action": "read", "resource": "s3:bucket:key", "expect": true},
        {"resources": ["s3:bucket:*"], "actions": ["read"], "action": "read", "resource": "s3:bucket::key", "expect": "invalid_resource"},
        {"resources": ["files:/a/b"], "actions": ["read"], "action": "read", "resource": "files:/a/b", "expect": true},
        {"resources": ["s3:bucket:key"], "actions": ["read"], "action": "read", "resource": "s3:bucket:key", "expect": true},
        {"resources": ["mail:*"], "actions": ["read", "write"], "action": "write", "resource": "mail:*", "expect": "invalid_resource"},
        {"resources": ["mail:inbox"], "actions": ["Read"], "action": "read", "resource": "mail:inbox", "expect": "invalid_action"},
        {"resources": [], "actions": ["read"], "action": "read", "resource": "mail:inbox", "expect": "empty_list"},
        {"resources": ["mail:inbox", "mail:inbox"], "actions": ["read"], "action": "read", "resource": "mail:inbox", "expect": "duplicate_entry"},
    ]);
    let parent = json!({
        "resources": ["crm:*", "mail:inbox"],
        "actions": ["read", "write", "delegate"],
        "constraints": {"max_spend_usd": 100, "max_actions": 50},
        "policy": {"frameworks": ["gdpr"]},
        "exp": 2000,
    });
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut child = parent.clone();
        edit(&mut child);
        child
    };
    let narrowing = json!([
        {"name": "equal", "parent": parent, "child": parent, "expect": {"ok": true, "violations": []}},
        {"name": "narrower", "parent": parent, "child": with(&|c| {
            c["resources"] = json!(["crm:contacts"]);
            c["actions"] = json!(["read"]);
            c["constraints"] = json!({"max_spend_usd": 10.25, "max_actions": 5});
            c["policy"] = json!({"frameworks": ["gdpr", "hipaa"]});
            c["exp"] = json!(1000);
        }), "expect": {"ok": true, "violations": []}},
        {"name": "wildcard_from_exact", "parent": with(&|p| p["resources"] = json!(["crm:contacts"])), "child": with(&|c| c["resources"] = json!(["crm:*"])),
         "expect": {"ok": false, "violations": [{"field": "resources", "code": "resource_not_covered"}]}},
        {"name": "other_namespace", "parent": parent, "child": with(&|c| c["resources"] = json!(["calendar:*"])),
         "expect": {"ok": false, "violations": [{"field": "resources", "code": "resource_not_covered"}]}},
        {"name": "action_added", "parent": parent, "child": with(&|c| c["actions"] = json!(["read", "pay"])),
         "expect": {"ok": false, "violations": [{"field": "actions", "code": "action_not_held"}]}},
        {"name": "spend_raised", "parent": parent, "child": with(&|c| c["constraints"]["max_spend_usd"] = json!(100.000001)),
         "expect": {"ok": false, "violations": [{"field": "constraints.max_spend_usd", "code": "constraint_raised"}]}},
        {"name": "actions_dropped", "parent": parent, "child": with(&|c| c["constraints"] = json!({"max_spend_usd": 1})),
         "expect": {"ok": false, "violations": [{"field": "constraints.max_actions", "code": "constraint_dropped"}]}},
        {"name": "framework_dropped", "parent": parent, "child": with(&|c| c["policy"] = json!({"frameworks": []})),
         "expect": {"ok": false, "violations": [{"field": "policy.frameworks", "code": "framework_dropped"}]}},
        {"name": "outlives_parent", "parent": parent, "child": with(&|c| c["exp"] = json!(2001)),
         "expect": {"ok": false, "violations": [{"field": "exp", "code": "lifetime_beyond_parent"}]}},
        {"name": "prefix_under_namespace", "parent": parent,
         "child": with(&|c| c["resources"] = json!(["crm:contact/*", "crm:contact/vip/*"])),
         "expect": {"ok": true, "violations": []}},
        {"name": "prefix_under_a_name", "parent": parent,
         "child": with(&|c| c["resources"] = json!(["mail:inbox/*"])),
         "expect": {"ok": false, "violations": [{"field": "resources", "code": "resource_not_covered"}]}},
        {"name": "prefix_under_prefix", "parent": with(&|p| p["resources"] = json!(["crm:contact/*"])),
         "child": with(&|c| c["resources"] = json!(["crm:contact/vip/*", "crm:contact/42"])),
         "expect": {"ok": true, "violations": []}},
        {"name": "prefix_wider_than_parent", "parent": with(&|p| p["resources"] = json!(["crm:contact/vip/*"])),
         "child": with(&|c| c["resources"] = json!(["crm:contact/*"])),
         "expect": {"ok": false, "violations": [{"field": "resources", "code": "resource_not_covered"}]}},
        {"name": "min_trust_raised", "parent": with(&|p| p["constraints"]["min_trust"] = json!(0.5)),
         "child": with(&|c| c["constraints"]["min_trust"] = json!(0.75)), "expect": {"ok": true, "violations": []}},
        {"name": "min_trust_added", "parent": parent,
         "child": with(&|c| c["constraints"]["min_trust"] = json!(0.25)), "expect": {"ok": true, "violations": []}},
        {"name": "min_trust_lowered", "parent": with(&|p| p["constraints"]["min_trust"] = json!(0.5)),
         "child": with(&|c| c["constraints"]["min_trust"] = json!(0.49)),
         "expect": {"ok": false, "violations": [{"field": "constraints.min_trust", "code": "min_trust_lowered"}]}},
        {"name": "min_trust_dropped", "parent": with(&|p| p["constraints"]["min_trust"] = json!(0.5)), "child": parent,
         "expect": {"ok": false, "violations": [{"field": "constraints.min_trust", "code": "min_trust_dropped"}]}},
        {"name": "aud_kept", "parent": with(&|p| p["aud"] = json!(AUD)),
         "child": with(&|c| c["aud"] = json!(AUD)), "expect": {"ok": true, "violations": []}},
        {"name": "aud_added", "parent": parent,
         "child": with(&|c| c["aud"] = json!(AUD)), "expect": {"ok": true, "violations": []}},
        {"name": "aud_changed", "parent": with(&|p| p["aud"] = json!(AUD)),
         "child": with(&|c| c["aud"] = json!(OTHER_AUD)),
         "expect": {"ok": false, "violations": [{"field": "aud", "code": "audience_changed"}]}},
        {"name": "aud_dropped", "parent": with(&|p| p["aud"] = json!(AUD)), "child": parent,
         "expect": {"ok": false, "violations": [{"field": "aud", "code": "audience_dropped"}]}},
        {"name": "everything_at_once", "parent": parent, "child": json!({
            "resources": ["bank:*"], "actions": ["pay"], "constraints": {"max_spend_usd": 1000}, "exp": 3000
         }), "expect": {"ok": false, "violations": [
            {"field": "resources", "code": "resource_not_covered"},
            {"field": "actions", "code": "action_not_held"},
            {"field": "constraints.max_spend_usd", "code": "constraint_raised"},
            {"field": "constraints.max_actions", "code": "constraint_dropped"},
            {"field": "policy.frameworks", "code": "framework_dropped"},
            {"field": "exp", "code": "lifetime_beyond_parent"}
         ]}},
    ]);
    let request = |edit: &dyn Fn(&mut Value)| {
        let mut asked = json!({"resources": ["crm:contacts"], "actions": ["read"], "exp": 1500});
        edit(&mut asked);
        asked
    };
    let many: Vec<String> = (0..64).map(|i| format!("fw{i}")).collect();
    let delegation = json!([
        {"name": "everything_left_out_is_inherited", "parent": parent, "request": request(&|_| {}),
         "expect": {"ok": true, "grant": {
            "resources": ["crm:contacts"], "actions": ["read"],
            "constraints": {"max_spend_usd": 100, "max_actions": 50},
            "policy": {"frameworks": ["gdpr"]}, "exp": 1500}}},
        {"name": "own_limit_kept_other_inherited", "parent": parent,
         "request": request(&|r| r["constraints"] = json!({"max_actions": 5})),
         "expect": {"ok": true, "grant": {
            "resources": ["crm:contacts"], "actions": ["read"],
            "constraints": {"max_spend_usd": 100, "max_actions": 5},
            "policy": {"frameworks": ["gdpr"]}, "exp": 1500}}},
        {"name": "frameworks_added_to_the_parents", "parent": parent,
         "request": request(&|r| r["policy"] = json!({"frameworks": ["hipaa"]})),
         "expect": {"ok": true, "grant": {
            "resources": ["crm:contacts"], "actions": ["read"],
            "constraints": {"max_spend_usd": 100, "max_actions": 50},
            "policy": {"frameworks": ["gdpr", "hipaa"]}, "exp": 1500}}},
        {"name": "explicitly_wider_spend", "parent": parent,
         "request": request(&|r| r["constraints"] = json!({"max_spend_usd": 1000})),
         "expect": {"ok": false, "error": "scope_widening", "violations": [{"field": "constraints.max_spend_usd", "code": "constraint_raised"}]}},
        {"name": "wider_scope_and_life", "parent": parent,
         "request": request(&|r| { r["resources"] = json!(["bank:*"]); r["exp"] = json!(2001); }),
         "expect": {"ok": false, "error": "scope_widening", "violations": [
            {"field": "resources", "code": "resource_not_covered"},
            {"field": "exp", "code": "lifetime_beyond_parent"}]}},
        {"name": "min_trust_inherited", "parent": with(&|p| p["constraints"]["min_trust"] = json!(0.5)),
         "request": request(&|_| {}),
         "expect": {"ok": true, "grant": {
            "resources": ["crm:contacts"], "actions": ["read"],
            "constraints": {"max_spend_usd": 100, "max_actions": 50, "min_trust": 0.5},
            "policy": {"frameworks": ["gdpr"]}, "exp": 1500}}},
        {"name": "min_trust_lowered", "parent": with(&|p| p["constraints"]["min_trust"] = json!(0.5)),
         "request": request(&|r| r["constraints"] = json!({"min_trust": 0.4})),
         "expect": {"ok": false, "error": "scope_widening", "violations": [{"field": "constraints.min_trust", "code": "min_trust_lowered"}]}},
        {"name": "aud_inherited", "parent": with(&|p| p["aud"] = json!(AUD)),
         "request": request(&|_| {}),
         "expect": {"ok": true, "grant": {
            "resources": ["crm:contacts"], "actions": ["read"],
            "constraints": {"max_spend_usd": 100, "max_actions": 50},
            "policy": {"frameworks": ["gdpr"]}, "exp": 1500, "aud": AUD}}},
        {"name": "aud_set_under_a_parent_without", "parent": parent,
         "request": request(&|r| r["aud"] = json!(AUD)),
         "expect": {"ok": true, "grant": {
            "resources": ["crm:contacts"], "actions": ["read"],
            "constraints": {"max_spend_usd": 100, "max_actions": 50},
            "policy": {"frameworks": ["gdpr"]}, "exp": 1500, "aud": AUD}}},
        {"name": "aud_widened", "parent": with(&|p| p["aud"] = json!(AUD)),
         "request": request(&|r| r["aud"] = json!(OTHER_AUD)),
         "expect": {"ok": false, "error": "scope_widening", "violations": [{"field": "aud", "code": "audience_changed"}]}},
        {"name": "frameworks_overflow", "parent": with(&|p| p["policy"] = json!({"frameworks": many})),
         "request": request(&|r| r["policy"] = json!({"frameworks": ["hipaa"]})),
         "expect": {"ok": false, "error": "list_too_long", "violations": []}},
    ]);
    json!({
        "description": "Scope vectors. `permits`: build the scope from resources and actions, parse action and resource, and expect true/false, or the code of the first parse error. `narrowing`: check child against parent (grants of resources, actions, constraints, policy, exp, aud) and expect ok and the violations in order. `delegation`: the grant a delegation `request` gets under `parent` (limits, frameworks and the aud it leaves out are inherited), or the error code and violations.",
        "generator": "cargo xtask vectors",
        "permits": permits,
        "narrowing": narrowing,
        "delegation": delegation,
    })
}

fn reputation_vectors() -> Value {
    let cases: Vec<Value> = [
        ReputationCounts::default(),
        ReputationCounts {
            successes: 1,
            ..Default::default()
        },
        ReputationCounts {
            failures: 1,
            ..Default::default()
        },
        ReputationCounts {
            successes: 8,
            failures: 2,
            pending: 1,
            approved: 3,
            flagged: 1,
            rejected: 1,
            ..Default::default()
        },
        ReputationCounts {
            successes: 8,
            failures: 2,
            pending: 1,
            denied_requests: 4,
            approved: 3,
            flagged: 1,
            rejected: 1,
        },
        // The issue's example: two successes and a refused pre-flight
        // (a denied request), then a refused act (a failure) instead.
        ReputationCounts {
            successes: 2,
            denied_requests: 1,
            ..Default::default()
        },
        ReputationCounts {
            successes: 2,
            failures: 1,
            ..Default::default()
        },
        ReputationCounts {
            successes: 1000,
            failures: 0,
            pending: 0,
            approved: 0,
            flagged: 0,
            rejected: 40,
            ..Default::default()
        },
        ReputationCounts {
            successes: 0,
            failures: 0,
            pending: 7,
            approved: 0,
            flagged: 2,
            rejected: 0,
            ..Default::default()
        },
        ReputationCounts {
            successes: u64::MAX,
            failures: 1,
            pending: 0,
            approved: 1,
            flagged: 0,
            rejected: 0,
            ..Default::default()
        },
    ]
    .iter()
    .map(|counts| json!({ "counts": counts, "expect": reputation(counts) }))
    .collect();
    json!({
        "description": "Reputation vectors: counts in, the exact scores out (Beta(1,1) posterior means: execution = (successes + 1) / (successes + failures + 2), feedback = (approved + 0.5 flagged + 1) / (ratings + 2); combined = 0.6 execution + 0.4 feedback; pending and denied_requests, refused pre-flight checks, count only towards total_actions).",
        "generator": "cargo xtask vectors",
        "cases": cases,
    })
}

/// A case of [`status_vectors`].
fn status_case(name: &str, exp: i64, revoked: bool, now: i64, status: &str) -> Value {
    let deny_reason = match status {
        "revoked" => json!("token_revoked"),
        "expired" => json!("token_expired"),
        _ => Value::Null,
    };
    json!({
        "name": name, "exp": exp, "revoked": revoked, "now": now,
        "expect": {"status": status, "deny_reason": deny_reason},
    })
}

fn status_vectors() -> Value {
    let exp = NOW + 600;
    let cases = vec![
        status_case("active", exp, false, NOW, "active"),
        status_case("last_active_second", exp, false, exp - 1, "active"),
        status_case("expired_at_exp", exp, false, exp, "expired"),
        status_case("expired_after_exp", exp, false, exp + 1, "expired"),
        status_case("revoked_while_active", exp, true, NOW, "revoked"),
        status_case("revoked_at_exp", exp, true, exp, "revoked"),
        status_case("revoked_and_expired", exp, true, exp + 86_400, "revoked"),
        status_case("exp_zero_at_zero", 0, false, 0, "expired"),
        status_case("before_1970", 0, false, -1, "active"),
        status_case("latest_exp", i64::MAX, false, NOW, "active"),
        status_case(
            "latest_exp_at_the_end_of_time",
            i64::MAX,
            false,
            i64::MAX,
            "expired",
        ),
        status_case("earliest_exp", i64::MIN, false, i64::MIN, "expired"),
        status_case("earliest_now", NOW, false, i64::MIN, "active"),
    ];
    json!({
        "description": "Token status vectors: the status at `now` of a token ending at `exp` (unix seconds) and revoked or not, and the deny reason an attempt with it is recorded under (null when active). Revoked wins over expired; expired when now >= exp, with no leeway.",
        "generator": "cargo xtask vectors",
        "cases": cases,
    })
}

fn governance_vectors(rng: &mut Rng) -> Value {
    let root = issue_root(
        request("planner", &["crm:*"], &["read", "delegate"]),
        RootIssue {
            issuer: ISSUER.to_owned(),
            human: human(&rng.bytes("governance secret")),
            level: AssuranceLevel::L1,
            now: NOW,
            jti: rng.ulid(NOW),
            provenance: rng.ulid(NOW),
            status: None,
        },
    )
    .expect("root issues");
    let down = |parent: &Claims, agent: &str, actions: &[&str], rng: &mut Rng| {
        delegate(
            parent,
            request(agent, &["crm:*"], actions),
            NOW,
            rng.ulid(NOW),
            None,
        )
        .expect("delegation succeeds")
    };
    let child = down(&root, "researcher", &["read", "delegate"], rng);
    let grandchild = down(&child, "reader", &["read"], rng);
    let sibling = down(&root, "writer", &["read"], rng);
    let mut other_request = request("planner", &["crm:*"], &["read"]);
    other_request.ttl_seconds = Some(600);
    let other_root = issue_root(
        other_request,
        RootIssue {
            issuer: ISSUER.to_owned(),
            human: root.svc_human.clone(),
            level: AssuranceLevel::L1,
            now: NOW,
            jti: rng.ulid(NOW),
            provenance: rng.ulid(NOW),
            status: None,
        },
    )
    .expect("root issues");
    let jti = |claims: &Claims| claims.jti.to_string();
    // The root's ULID with the delegated prefix: another id altogether.
    let other_kind = jti(&root).replacen("vat_root_", "vat_del_", 1);
    let case = |token: &str, by: &str, jti: String, expect: bool| {
        json!({
            "name": format!("{token} governed by {by}"), "token": token, "jti": jti, "expect": expect,
        })
    };
    let cases = vec![
        case("root", "itself", jti(&root), true),
        case("child", "itself", jti(&child), true),
        case("grandchild", "itself", jti(&grandchild), true),
        case("child", "root", jti(&root), true),
        case("grandchild", "root", jti(&root), true),
        case("grandchild", "child", jti(&child), true),
        case("sibling", "root", jti(&root), true),
        case("root", "child", jti(&child), false),
        case("root", "grandchild", jti(&grandchild), false),
        case("child", "grandchild", jti(&grandchild), false),
        case("child", "sibling", jti(&sibling), false),
        case("sibling", "child", jti(&child), false),
        case("grandchild", "sibling", jti(&sibling), false),
        case("root", "other_root", jti(&other_root), false),
        case("other_root", "root", jti(&root), false),
        case("grandchild", "other_root", jti(&other_root), false),
        case(
            "root",
            "the root's ulid as a delegated jti",
            other_kind.clone(),
            false,
        ),
        case(
            "grandchild",
            "the root's ulid as a delegated jti",
            other_kind,
            false,
        ),
    ];
    json!({
        "description": "Governance vectors: whether the token named `jti` governs `token` (one of `tokens`, given as claims): it is the token itself or one of its ancestors. It may then revoke the token and complete the records made with it.",
        "generator": "cargo xtask vectors",
        "tokens": {
            "root": claims_value(&root),
            "child": claims_value(&child),
            "grandchild": claims_value(&grandchild),
            "sibling": claims_value(&sibling),
            "other_root": claims_value(&other_root),
        },
        "cases": cases,
    })
}

fn refusal_vectors() -> Value {
    let refused = |error: &str, deny_reason: Option<&str>| {
        json!({
            "ok": false, "error": error, "deny_reason": deny_reason,
        })
    };
    let ok = json!({"ok": true});
    let parent = json!({
        "resources": ["crm:*"], "actions": ["read", "delegate"], "ttl_seconds": 600, "depth": 0,
    });
    let with = |base: &Value, edit: &dyn Fn(&mut Value)| {
        let mut value = base.clone();
        edit(&mut value);
        value
    };
    let asked = json!({"resources": ["crm:contacts"], "actions": ["read"]});
    let many: Vec<String> = (0..64).map(|i| format!("fw{i}")).collect();
    let delegation = |name: &str, parent: &Value, request: &Value, now: i64, expect: &Value| {
        json!({
            "name": name, "parent": parent, "request": request, "now": now, "expect": expect,
        })
    };
    let delegations = vec![
        delegation("allowed", &parent, &asked, NOW, &ok),
        delegation("last_second_of_the_parent", &parent, &asked, NOW + 599, &ok),
        delegation(
            "parent_expired_at_exp",
            &parent,
            &asked,
            NOW + 600,
            &refused("parent_expired", Some("token_expired")),
        ),
        delegation(
            "parent_without_delegate",
            &with(&parent, &|p| p["actions"] = json!(["read"])),
            &asked,
            NOW,
            &refused("delegate_not_held", Some("action_not_permitted")),
        ),
        delegation(
            "expiry_is_judged_before_delegate",
            &with(&parent, &|p| p["actions"] = json!(["read"])),
            &asked,
            NOW + 600,
            &refused("parent_expired", Some("token_expired")),
        ),
        delegation(
            "below_the_depth_limit",
            &with(&parent, &|p| p["depth"] = json!(7)),
            &asked,
            NOW,
            &ok,
        ),
        delegation(
            "at_the_depth_limit",
            &with(&parent, &|p| p["depth"] = json!(8)),
            &asked,
            NOW,
            &refused("delegation_too_deep", Some("delegation_too_deep")),
        ),
        delegation(
            "wider_resource",
            &parent,
            &with(&asked, &|r| r["resources"] = json!(["bank:*"])),
            NOW,
            &refused("scope_widening", Some("scope_widening")),
        ),
        delegation(
            "action_not_held",
            &parent,
            &with(&asked, &|r| r["actions"] = json!(["read", "pay"])),
            NOW,
            &refused("scope_widening", Some("scope_widening")),
        ),
        delegation(
            "outlives_the_parent",
            &parent,
            &with(&asked, &|r| r["ttl_seconds"] = json!(601)),
            NOW,
            &refused("scope_widening", Some("scope_widening")),
        ),
        delegation(
            "ttl_zero",
            &parent,
            &with(&asked, &|r| r["ttl_seconds"] = json!(0)),
            NOW,
            &refused("ttl_out_of_range", None),
        ),
        delegation(
            "frameworks_overflow",
            &with(&parent, &|p| p["frameworks"] = json!(many)),
            &with(&asked, &|r| r["frameworks"] = json!(["hipaa"])),
            NOW,
            &refused("list_too_long", None),
        ),
    ];
    let too_many = refused("too_many_children", Some("too_many_children"));
    let fan_out = vec![
        json!({"children": 0, "expect": ok}),
        json!({"children": 999, "expect": ok}),
        json!({"children": 1000, "expect": too_many}),
        json!({"children": u64::MAX, "expect": too_many}),
    ];
    let issue = |name: &str, ttl: Option<u64>, now: i64, expect: &Value| {
        json!({
            "name": name, "ttl_seconds": ttl, "now": now, "expect": expect,
        })
    };
    let issue_root = vec![
        issue("default_ttl", None, NOW, &ok),
        issue("shortest_ttl", Some(1), NOW, &ok),
        issue("longest_ttl", Some(30 * 24 * 3600), NOW, &ok),
        issue("ttl_zero", Some(0), NOW, &refused("ttl_out_of_range", None)),
        issue(
            "ttl_too_long",
            Some(30 * 24 * 3600 + 1),
            NOW,
            &refused("ttl_out_of_range", None),
        ),
        issue("now_before_1970", None, -1, &refused("invalid_now", None)),
        issue(
            "exp_past_the_end_of_time",
            Some(1),
            i64::MAX,
            &refused("invalid_now", None),
        ),
    ];
    json!({
        "description": "Refusal vectors: the error code of a refused issue or delegation and the deny reason it is recorded under (null: bad input or a fault, not a refusal of authority). `delegations`: a root of the parent's resources, actions, frameworks and ttl_seconds is issued at `issued_at`, delegated `depth` times with the same scope, and the request (resources, actions, frameworks, ttl_seconds) is delegated from it at `now`. `fan_out`: a delegation from a token that already has `children` children. `issue_root`: a root token with ttl_seconds (null: the default) at `now`.",
        "generator": "cargo xtask vectors",
        "issued_at": NOW,
        "delegations": delegations,
        "fan_out": fan_out,
        "issue_root": issue_root,
    })
}

/// A record state as the counts vectors write it, with what a new record in
/// it counts as and the rating it carries.
struct CountedState {
    state: Value,
    counts_as: &'static str,
    rating: Option<&'static str>,
}

fn counts_vectors() -> Value {
    let completed = |result: &str| json!({"status": "completed", "result": result});
    let denied = |reason: &str| json!({"status": "denied", "reason": reason});
    let rated = |result: &str, rating: &str| {
        json!({
            "status": "completed", "result": result, "rating": rating,
        })
    };
    let state = |state: Value, counts_as, rating| CountedState {
        state,
        counts_as,
        rating,
    };
    let states = [
        state(json!({"status": "pending"}), "pending", None),
        state(json!({"status": "awaiting_approval"}), "pending", None),
        state(completed("success"), "successes", None),
        state(completed("error"), "failures", None),
        state(completed("timeout"), "failures", None),
        state(completed("cancelled"), "failures", None),
        state(denied("action_not_permitted"), "failures", None),
        state(denied("token_revoked"), "failures", None),
        state(denied("approval_required"), "failures", None),
        state(denied("trust_too_low"), "failures", None),
        state(denied("approval_denied"), "denied_requests", None),
        state(denied("approval_expired"), "denied_requests", None),
        state(rated("success", "approved"), "successes", Some("approved")),
        state(rated("success", "flagged"), "successes", Some("flagged")),
        state(rated("success", "rejected"), "successes", Some("rejected")),
        state(rated("error", "approved"), "failures", Some("approved")),
    ];
    // What a new record in `state` made by `origin` counts as: a record
    // denied at `authorize` is a denied request whatever the reason.
    let counts_as = |origin: &str, state: &CountedState| {
        if origin == "authorize" && state.state["status"] == "denied" {
            "denied_requests"
        } else {
            state.counts_as
        }
    };
    let mut cases = Vec::new();
    // Every pair for the two origins a refusal tells apart; the others
    // count as `record_action`, shown on new records.
    for origin in ["authorize", "record_action", "delegate", "unknown"] {
        let befores: Vec<Option<&CountedState>> = match origin {
            "authorize" | "record_action" => std::iter::once(None)
                .chain(states.iter().map(Some))
                .collect(),
            _ => vec![None],
        };
        for before in befores {
            for after in &states {
                let mut change = json!({
                    "successes": 0, "failures": 0, "pending": 0, "denied_requests": 0,
                    "approved": 0, "flagged": 0, "rejected": 0,
                });
                match before.map(|b| b.counts_as) {
                    None => change[counts_as(origin, after)] = json!(1),
                    Some("pending") => {
                        change[counts_as(origin, after)] = json!(1);
                        change["pending"] = json!(change["pending"].as_i64().expect("a count") - 1);
                    }
                    Some(_) => {
                        if let Some(rating) = after.rating {
                            change[rating] = json!(1);
                        }
                    }
                }
                cases.push(json!({
                    "origin": origin,
                    "before": before.map(|b| b.state.clone()),
                    "after": after.state,
                    "expect": change,
                }));
            }
        }
    }
    json!({
        "description": "Counts vectors: how an agent's reputation counts move when one of its records, made by `origin` (authorize, record_action: record/action or a report of record/actions, delegate, or unknown: made before the origin was stored), goes from `before` (null: it did not exist) to `after`, for every pair of states (for delegate and unknown, new records only). A state is its stored parts (status, result, rating, deny reason). A new record counts once: pending (awaiting approval too), a success, a denied request (denied at authorize, the pre-flight check, for any reason, or by an approval's decision: approval_denied, approval_expired), or a failure (any other result, or denied at record_action, delegate or unknown for any other reason); a pending or awaiting record that changes leaves pending; a settled record counts only a rating it receives.",
        "generator": "cargo xtask vectors",
        "cases": cases,
    })
}

fn budget_vectors() -> Value {
    let token = |constraints: Value, spent: Value, actions: u64| {
        json!({
            "constraints": constraints, "used": {"spent": spent, "actions": actions},
        })
    };
    let root = token(
        json!({"max_spend_usd": 100, "max_actions": 10}),
        json!(50),
        3,
    );
    let child = token(json!({"max_spend_usd": 20}), json!(15), 3);
    let exhausted_root = token(json!({"max_spend_usd": 100, "max_actions": 3}), json!(0), 3);
    let max = json!(1_000_000_000);
    let case = |name: &str,
                chain: Vec<&Value>,
                spend: Value,
                budgets: Option<&str>,
                extra: Option<&str>| {
        json!({
            "name": name, "chain": chain, "spend": spend,
            "expect": {"check_chain_budgets": budgets, "check_chain_extra_spend": extra},
        })
    };
    let spend = Some("budget_max_spend_usd");
    let actions = Some("budget_max_actions");
    let cases = vec![
        case("no_budgeted_token", vec![], json!(1_000_000), None, None),
        case(
            "unlimited",
            vec![&token(json!({}), json!(999_999_999.5), 1_000_000_000)],
            json!(0.5),
            None,
            None,
        ),
        case(
            "within_every_budget",
            vec![&root, &child],
            json!(4.25),
            None,
            None,
        ),
        case(
            "reaching_the_second_limit_exactly",
            vec![&root, &child],
            json!(5),
            None,
            None,
        ),
        case(
            "the_second_token_fails",
            vec![&root, &child],
            json!(5.000001),
            spend,
            spend,
        ),
        case(
            "the_root_is_judged_first",
            vec![&exhausted_root, &child],
            json!(6),
            actions,
            spend,
        ),
        case(
            "out_of_actions_only",
            vec![&exhausted_root, &child],
            json!(1),
            actions,
            None,
        ),
        case(
            "no_actions_at_all",
            vec![&token(json!({"max_actions": 0}), json!(0), 0)],
            json!(0),
            actions,
            None,
        ),
        case(
            "spend_limit_of_the_first_token",
            vec![&child, &root],
            json!(6),
            spend,
            spend,
        ),
        case(
            "spend_past_the_largest_amount_unlimited",
            vec![&token(json!({}), max.clone(), 0)],
            json!(0.000001),
            None,
            None,
        ),
        case(
            "spend_past_the_largest_amount",
            vec![
                &token(json!({}), max.clone(), 0),
                &token(json!({"max_spend_usd": max}), max.clone(), 0),
            ],
            json!(0.000001),
            spend,
            spend,
        ),
        case(
            "largest_spend_on_the_largest_used",
            vec![&token(json!({"max_spend_usd": max}), max.clone(), 0)],
            max.clone(),
            spend,
            spend,
        ),
        case(
            "nothing_more_at_the_largest_amount",
            vec![&token(json!({"max_spend_usd": max}), max.clone(), 0)],
            json!(0),
            None,
            None,
        ),
    ];
    json!({
        "description": "Budget chain vectors: one more action spending `spend` (USD) checked against every budgeted token of a chain (root first; `used`: what it and its descendants have spent and how many actions they took), and the same amount as extra spend on an action already counted. Expect the code of the first limit passed, or null.",
        "generator": "cargo xtask vectors",
        "cases": cases,
    })
}

/// The compressed lists of the draft's test vectors of 2^20 entries
/// (draft-ietf-oauth-status-list, "Test vectors for Status List encoding"),
/// as it gives them, line breaks removed.
const DRAFT_1BIT_LONG_LST: &str = "eNrt3AENwCAMAEGogklACtKQPg9LugC9k_ACvreiogEAAKkeCQAAAAAAAAAAAAAAAAAAAIBylgQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAXG9IAAAAAAAAAPwsJAAAAAAAAAAAAAAAvhsSAAAAAAAAAAAA7KpLAAAAAAAAAAAAAAAAAAAAAJsLCQAAAAAAAAAAADjelAAAAAAAAAAAKjDMAQAAAACAZC8L2AEb";
const DRAFT_2BIT_LONG_LST: &str = "eNrt2zENACEQAEEuoaBABP5VIO01fCjIHTMStt9ovGVIAAAAAABAbiEBAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAEB5WwIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAID0ugQAAAAAAAAAAAAAAAAAQG12SgAAAAAAAAAAAAAAAAAAAAAAAAAAAOCSIQEAAAAAAAAAAAAAAAAAAAAAAAD8ExIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAwJEuAQAAAAAAAAAAAAAAAAAAAAAAAMB9SwIAAAAAAAAAAAAAAAAAAACoYUoAAAAAAAAAAAAAAEBqH81gAQw";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The draft's own encoding examples: statuses in, the packed bytes, their
/// compressed form and `lst` out (the short ones), or `lst` in and the
/// statuses out (the long ones, whose unlisted entries are 0). Each is
/// checked here against core before it is written.
fn status_list_encodings() -> Value {
    let short =
        |name: &str, bits: Bits, statuses: &[u8], bytes: &str, compressed: &str, lst: &str| {
            let mut list = StatusList::with_bits(bits, statuses.len() as u64).expect("small list");
            for (idx, value) in statuses.iter().enumerate() {
                list.set(idx as u64, StatusType(*value)).expect("fits");
            }
            assert_eq!(hex(list.as_bytes()), bytes, "{name}");
            assert_eq!(hex(&list.compress()), compressed, "{name}");
            assert_eq!(list.lst(), lst, "{name}");
            json!({
                "name": name, "bits": bits.get(), "statuses": statuses,
                "bytes_hex": bytes, "compressed_hex": compressed, "lst": lst,
            })
        };
    let long = |name: &str, bits: Bits, set: &[(u64, u8)], lst: &str| {
        let list = StatusList::from_lst(bits, lst).expect("the draft's lst decodes");
        assert_eq!(list.len(), 1 << 20, "{name}");
        for idx in 0..list.len() {
            let want = set.iter().find(|(i, _)| *i == idx).map_or(0, |(_, v)| *v);
            assert_eq!(list.get(idx), Some(StatusType(want)), "{name} {idx}");
        }
        json!({
            "name": name, "bits": bits.get(), "size": 1 << 20,
            "set": set.iter().map(|(i, v)| json!([i, v])).collect::<Vec<_>>(), "lst": lst,
        })
    };
    json!([
        short(
            "draft_1bit_16",
            Bits::One,
            &[1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1],
            "b9a3",
            "78dadbb918000217015d",
            "eNrbuRgAAhcBXQ",
        ),
        short(
            "draft_2bit_12",
            Bits::Two,
            &[1, 2, 0, 3, 0, 1, 0, 1, 1, 2, 3, 3],
            "c944f9",
            "78da3be9f2130003df0207",
            "eNo76fITAAPfAgc",
        ),
        long(
            "draft_1bit_2^20",
            Bits::One,
            &[
                (0, 1),
                (1993, 1),
                (25460, 1),
                (159495, 1),
                (495669, 1),
                (554353, 1),
                (645645, 1),
                (723232, 1),
                (854545, 1),
                (934534, 1),
                (1000345, 1),
            ],
            DRAFT_1BIT_LONG_LST,
        ),
        long(
            "draft_2bit_2^20",
            Bits::Two,
            &[
                (0, 1),
                (1993, 2),
                (25460, 1),
                (159495, 3),
                (495669, 1),
                (554353, 1),
                (645645, 2),
                (723232, 1),
                (854545, 1),
                (934534, 2),
                (1000345, 3),
            ],
            DRAFT_2BIT_LONG_LST,
        ),
    ])
}

/// One case of [`status_list_vectors`]: `list` verified against the key set
/// at `now` (with `uri` as the expected subject when it is set), then the
/// status of `token` (valid at `now`) checked in it with
/// `max_staleness_seconds`. The expectation is computed by core here, and
/// must equal the one the case states, so the generator cannot write a
/// verdict core does not reach.
struct StatusListCase<'a> {
    name: &'a str,
    description: &'a str,
    list: &'a str,
    token: &'a str,
    uri: Option<&'a str>,
    max_staleness_seconds: Option<u64>,
    /// `None` for valid, else the stage and code.
    expect: Option<(&'a str, &'a str)>,
}

fn status_list_case(case: StatusListCase<'_>, jwks: &Jwks, now: i64) -> Value {
    let claims = verify(case.token, jwks, now, &Default::default())
        .expect("vector tokens are valid at now")
        .claims;
    let got = match verify_status_list(case.list, jwks, now, case.uri) {
        Err(error) => Some(("status_list", error.code())),
        Ok(list) => check_status(&claims, &list, now, case.max_staleness_seconds)
            .err()
            .map(|error| ("status", error.code())),
    };
    assert_eq!(got, case.expect, "{}", case.name);
    let expect = match case.expect {
        None => json!({"valid": true}),
        Some((stage, error)) => json!({"valid": false, "stage": stage, "error": error}),
    };
    // What the SDK answers, as core decides it: `verifyToken` with the list
    // names the token's own uri as the expected subject (and looks at no
    // list for a token without a status claim); a `Verifier` holds a list
    // by its own subject, verified without an expected one, and finds a
    // token's list by the token's uri.
    let max = case.max_staleness_seconds;
    let verify_token = match &claims.status {
        None => Value::Null,
        Some(status) => match verify_status_list(case.list, jwks, now, Some(status.uri().as_str()))
        {
            Err(error) => json!({"stage": "status_list", "error": error.code()}),
            Ok(list) => match check_status(&claims, &list, now, max) {
                Ok(()) => Value::Null,
                Err(error) => json!({"stage": "status", "error": error.code()}),
            },
        },
    };
    let held = verify_status_list(case.list, jwks, now, None);
    let set = match &held {
        Ok(_) => "ok",
        Err(error) => error.code(),
    };
    let found = |uri: &StatusUri| held.as_ref().ok().filter(|list| list.uri == *uri);
    let verifier = check_status_with(&claims, found, now, max)
        .err()
        .map(|error| error.code());
    json!({
        "name": case.name,
        "description": case.description,
        "list": case.list,
        "token": case.token,
        "now": now,
        "uri": case.uri,
        "max_staleness_seconds": case.max_staleness_seconds,
        "expect": expect,
        "sdk": {"verify_token": verify_token, "set_status_list": set, "verifier": verifier},
    })
}

fn status_list_vectors(rng: &mut Rng, key: &Keys, now: i64) -> Value {
    let other = Keys::new(rng, "status list other key");
    let deployment_secret = rng.bytes("status deployment secret");
    let uri = |list: u64| StatusUri::for_list(ISSUER, list).expect("valid base");
    let (list0, list1, list2) = (uri(0), uri(1), uri(2));
    let size = mandate_core::limits::STATUS_LIST_SIZE;
    assert_eq!(location(size + 5), (1, 5));

    // Tokens, each issued with its own entry (index = list * size + idx).
    let issue = |agent: &str, index: Option<u64>, rng: &mut Rng| {
        let claims = issue_root(
            request(agent, &["crm:*"], &["read"]),
            RootIssue {
                issuer: ISSUER.to_owned(),
                human: human(&deployment_secret),
                level: AssuranceLevel::L1,
                now: now - 600,
                jti: rng.ulid(now - 600),
                provenance: rng.ulid(now - 600),
                status: index
                    .map(|index| StatusClaim::for_index(ISSUER, index).expect("valid base")),
            },
        )
        .expect("root issues");
        sign(&claims, &key.core).expect("signs")
    };
    let valid = issue("active-bot", Some(3), rng);
    let revoked = issue("revoked-bot", Some(7), rng);
    let last = issue("last-entry-bot", Some(size - 1), rng);
    let before_last = issue("second-to-last-bot", Some(size - 2), rng);
    let on_list1 = issue("other-list-bot", Some(size + 3), rng);
    let unlisted = issue("old-bot", None, rng);
    let suspended = issue("suspended-bot", Some(2 * size + 2), rng);
    let two_bit_valid = issue("two-bit-bot", Some(2 * size), rng);
    let two_bit_revoked = issue("two-bit-revoked-bot", Some(2 * size + 1), rng);
    let unrecognised = issue("odd-status-bot", Some(2 * size + 3), rng);
    // An index beyond the end of a list: a token of another deployment's
    // list size, as a hand-made claim.
    let beyond = {
        let mut claims = verify(
            &valid,
            &Jwks::from_signing_keys([&key.core]),
            now,
            &Default::default(),
        )
        .expect("valid")
        .claims;
        claims.status = Some(
            serde_json::from_value(json!({"status_list": {"idx": size, "uri": list0.as_str()}}))
                .expect("a valid claim"),
        );
        sign(&claims, &key.core).expect("signs")
    };

    // List 0: 1 bit per token; entries 7, 8, 1000 and the last revoked.
    let mut bits0 = StatusList::new(size).expect("list size");
    for idx in [7, 8, 1000, size - 1] {
        bits0.set(idx, StatusType::INVALID).expect("in range");
    }
    // List 2: 2 bits per token (Mandate writes 1; the reader takes both).
    let mut bits2 = StatusList::with_bits(Bits::Two, size).expect("list size");
    for (idx, value) in [(1, 1), (2, 2), (3, 3)] {
        bits2.set(idx, StatusType(value)).expect("fits");
    }
    let signed = |list: &StatusList, sub: &StatusUri, iat: i64, exp: i64| {
        sign_status_list(
            list,
            &StatusListClaims {
                sub: sub.clone(),
                iat,
                exp,
                ttl: 300,
            },
            &key.core,
        )
        .expect("the list signs")
    };
    let good = signed(&bits0, &list0, now - 60, now + 3600);
    let earlier = signed(
        &StatusList::new(size).expect("list size"),
        &list0,
        now - 600,
        now + 3000,
    );
    let good1 = signed(
        &StatusList::new(size).expect("size"),
        &list1,
        now - 60,
        now + 3600,
    );
    let two_bit = signed(&bits2, &list2, now - 60, now + 3600);
    let old = signed(&bits0, &list0, now - 7200, now + 3600);
    let expired = signed(&bits0, &list0, now - 7200, now - 61);
    let expired_in_leeway = signed(&bits0, &list0, now - 7200, now - 59);
    let future = signed(&bits0, &list0, now + 61, now + 3600);

    // Hand-made lists: any header, any claims.
    let header = |typ: &str| {
        format!(
            r#"{{"alg":"EdDSA","typ":"{typ}","kid":"{}"}}"#,
            key.core.kid()
        )
    };
    let list_header = header("statuslist+jwt");
    let claims = json!({
        "sub": list0.as_str(), "iat": now - 60, "exp": now + 3600, "ttl": 300,
        "status_list": {"bits": 1, "lst": bits0.lst()},
    });
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut c = claims.clone();
        edit(&mut c);
        key.sign_raw(&list_header, &c.to_string())
    };
    let payload = claims.to_string();
    let hand_made = key.sign_raw(&list_header, &payload);
    let tampered = {
        let (h, rest) = good.split_once('.').expect("three segments");
        let (_, signature) = rest.split_once('.').expect("three segments");
        let all_valid = StatusList::new(size).expect("size");
        let mut c = claims.clone();
        c["status_list"]["lst"] = json!(all_valid.lst());
        format!("{h}.{}.{signature}", b64(c.to_string()))
    };
    let bomb = b64(compress(
        &vec![0; 2 * mandate_core::limits::MAX_STATUS_LIST_BYTES],
    ));
    let huge = with(&|c| {
        c["pad"] = json!("x".repeat(mandate_core::limits::MAX_STATUS_LIST_TOKEN_BYTES * 3 / 4))
    });
    let duplicate = key.sign_raw(
        &list_header,
        &payload.replacen(
            "\"status_list\":",
            "\"status_list\":{\"bits\":1,\"lst\":\"eNoDAAAAAAE\"},\"status_list\":",
            1,
        ),
    );
    let unsigned = format!(
        "{}.{}.",
        b64(format!(
            r#"{{"alg":"none","typ":"statuslist+jwt","kid":"{}"}}"#,
            key.core.kid()
        )),
        b64(&payload)
    );
    let jku = {
        let h = json!({"alg": "EdDSA", "typ": "statuslist+jwt", "kid": key.core.kid(), "jku": "https://attacker.example/jwks.json"});
        key.sign_raw(&h.to_string(), &payload)
    };

    let jwks = Jwks::from_signing_keys([&key.core]);
    let u0 = Some(list0.as_str());
    let u2 = Some(list2.as_str());
    let case = |name, description, list, token, uri, max_staleness_seconds, expect| {
        status_list_case(
            StatusListCase {
                name,
                description,
                list,
                token,
                uri,
                max_staleness_seconds,
                expect,
            },
            &jwks,
            now,
        )
    };
    let revoked_code = Some(("status", "token_revoked"));
    let cases = vec![
        case(
            "valid",
            "a token whose bit is 0",
            &good,
            &valid,
            u0,
            None,
            None,
        ),
        case(
            "revoked",
            "a token whose bit is 1",
            &good,
            &revoked,
            u0,
            None,
            revoked_code,
        ),
        case(
            "valid_before_revocation",
            "the same token in an earlier list of the same uri, before its bit was set",
            &earlier,
            &revoked,
            u0,
            None,
            None,
        ),
        case(
            "revoked_last_entry",
            "the last entry of a list, revoked",
            &good,
            &last,
            u0,
            None,
            revoked_code,
        ),
        case(
            "valid_before_last",
            "the entry before the last, valid",
            &good,
            &before_last,
            u0,
            None,
            None,
        ),
        case(
            "no_status_claim",
            "a token issued without a status claim passes",
            &good,
            &unlisted,
            u0,
            None,
            None,
        ),
        case(
            "valid_without_expected_uri",
            "the list verified without naming the uri; the check compares it",
            &good,
            &valid,
            None,
            None,
            None,
        ),
        case(
            "hand_made_valid",
            "the same list hand-signed",
            &hand_made,
            &valid,
            u0,
            None,
            None,
        ),
        case(
            "revoked_fresh_enough",
            "revoked, within the staleness bound",
            &good,
            &revoked,
            u0,
            Some(60),
            revoked_code,
        ),
        case(
            "out_of_range",
            "an index beyond the end of the list",
            &good,
            &beyond,
            u0,
            None,
            Some(("status", "status_index_out_of_range")),
        ),
        case(
            "subject_mismatch",
            "the list of another uri than the token names",
            &good,
            &on_list1,
            Some(list1.as_str()),
            None,
            Some(("status_list", "subject_mismatch")),
        ),
        case(
            "uri_mismatch",
            "verified without an expected uri, the list is for another uri",
            &good,
            &on_list1,
            None,
            None,
            Some(("status", "status_uri_mismatch")),
        ),
        case(
            "other_list_valid",
            "a token of list 1 against list 1",
            &good1,
            &on_list1,
            Some(list1.as_str()),
            None,
            None,
        ),
        case(
            "stale",
            "a list signed two hours ago, one hour accepted",
            &old,
            &valid,
            u0,
            Some(3600),
            Some(("status", "status_stale")),
        ),
        case(
            "stale_edge",
            "a list exactly as old as accepted",
            &old,
            &valid,
            u0,
            Some(7200),
            None,
        ),
        case(
            "old_without_bound",
            "an old list, no staleness bound: only exp counts",
            &old,
            &valid,
            u0,
            None,
            None,
        ),
        case(
            "expired_list",
            "a list whose exp passed by more than the leeway",
            &expired,
            &valid,
            u0,
            None,
            Some(("status_list", "status_list_expired")),
        ),
        case(
            "expired_within_leeway",
            "a list whose exp passed by less than the leeway",
            &expired_in_leeway,
            &valid,
            u0,
            None,
            None,
        ),
        case(
            "issued_in_future",
            "a list whose iat is beyond the leeway ahead",
            &future,
            &valid,
            u0,
            None,
            Some(("status_list", "status_list_not_yet_valid")),
        ),
        case(
            "two_bit_valid",
            "a 2-bit list, value 0",
            &two_bit,
            &two_bit_valid,
            u2,
            None,
            None,
        ),
        case(
            "two_bit_revoked",
            "a 2-bit list, value 1 (INVALID)",
            &two_bit,
            &two_bit_revoked,
            u2,
            None,
            revoked_code,
        ),
        case(
            "suspended",
            "a 2-bit list, value 2 (SUSPENDED)",
            &two_bit,
            &suspended,
            u2,
            None,
            Some(("status", "token_suspended")),
        ),
        case(
            "unrecognised_status",
            "a 2-bit list, value 3 (application-specific, undefined here)",
            &two_bit,
            &unrecognised,
            u2,
            None,
            Some(("status", "status_unrecognised")),
        ),
        case(
            "typ_jwt",
            "typ JWT",
            &key.sign_raw(&header("JWT"), &payload),
            &valid,
            u0,
            None,
            Some(("status_list", "invalid_typ")),
        ),
        case(
            "typ_vat",
            "a token's typ",
            &key.sign_raw(&header("vat+jwt"), &payload),
            &valid,
            u0,
            None,
            Some(("status_list", "invalid_typ")),
        ),
        case(
            "typ_missing",
            "no typ",
            &key.sign_raw(
                &format!(r#"{{"alg":"EdDSA","kid":"{}"}}"#, key.core.kid()),
                &payload,
            ),
            &valid,
            u0,
            None,
            Some(("status_list", "invalid_typ")),
        ),
        case(
            "token_as_list",
            "a Mandate token given as a status list",
            &valid,
            &valid,
            u0,
            None,
            Some(("status_list", "invalid_typ")),
        ),
        case(
            "alg_none",
            "an unsigned list",
            &unsigned,
            &valid,
            u0,
            None,
            Some(("status_list", "unsupported_alg")),
        ),
        case(
            "wrong_key",
            "signed by another key under the trusted kid",
            &other.sign_raw(&list_header, &payload),
            &valid,
            u0,
            None,
            Some(("status_list", "invalid_signature")),
        ),
        case(
            "unknown_kid",
            "a kid not in the key set",
            &other.sign_raw(
                &format!(
                    r#"{{"alg":"EdDSA","typ":"statuslist+jwt","kid":"{}"}}"#,
                    other.core.kid()
                ),
                &payload,
            ),
            &valid,
            u0,
            None,
            Some(("status_list", "unknown_kid")),
        ),
        case(
            "header_jku",
            "a header member that chooses a key",
            &jku,
            &valid,
            u0,
            None,
            Some(("status_list", "forbidden_header_param")),
        ),
        case(
            "tampered_lst",
            "lst replaced by an all-valid list under the old signature",
            &tampered,
            &revoked,
            u0,
            None,
            Some(("status_list", "invalid_signature")),
        ),
        case(
            "lst_not_zlib",
            "a signed lst that is not ZLIB data",
            &with(&|c| c["status_list"]["lst"] = json!(b64(b"not zlib at all"))),
            &valid,
            u0,
            None,
            Some(("status_list", "invalid_compression")),
        ),
        case(
            "lst_padded",
            "lst with base64 padding",
            &with(&|c| c["status_list"]["lst"] = json!(format!("{}==", bits0.lst()))),
            &valid,
            u0,
            None,
            Some(("status_list", "invalid_lst")),
        ),
        case(
            "zip_bomb",
            "a signed lst of a few KiB that inflates to 2 MiB",
            &with(&|c| c["status_list"]["lst"] = json!(bomb)),
            &valid,
            u0,
            None,
            Some(("status_list", "list_too_large")),
        ),
        case(
            "bits_3",
            "bits other than 1, 2, 4 or 8",
            &with(&|c| c["status_list"]["bits"] = json!(3)),
            &valid,
            u0,
            None,
            Some(("status_list", "invalid_bits")),
        ),
        case(
            "aggregation_uri",
            "a status_list member Mandate does not write (the draft's optional aggregation_uri)",
            &with(&|c| c["status_list"]["aggregation_uri"] = json!("https://mandate.example/agg")),
            &valid,
            u0,
            None,
            Some(("status_list", "malformed_claims")),
        ),
        case(
            "unknown_claim",
            "a claim Mandate does not write",
            &with(&|c| c["iss"] = json!(ISSUER)),
            &valid,
            u0,
            None,
            Some(("status_list", "malformed_claims")),
        ),
        case(
            "duplicate_claim",
            "status_list twice (a parser keeping the first would be fooled)",
            &duplicate,
            &revoked,
            u0,
            None,
            Some(("status_list", "duplicate_claim")),
        ),
        case(
            "exp_missing",
            "no exp",
            &with(&|c| {
                c.as_object_mut().map(|o| o.remove("exp"));
            }),
            &valid,
            u0,
            None,
            Some(("status_list", "malformed_claims")),
        ),
        case(
            "ttl_zero",
            "ttl 0",
            &with(&|c| c["ttl"] = json!(0)),
            &valid,
            u0,
            None,
            Some(("status_list", "invalid_claim")),
        ),
        case(
            "ttl_fraction",
            "ttl 0.5",
            &with(&|c| c["ttl"] = json!(0.5)),
            &valid,
            u0,
            None,
            Some(("status_list", "malformed_claims")),
        ),
        case(
            "sub_relative",
            "a sub that is not an absolute URI",
            &with(&|c| c["sub"] = json!("/v1/vat/status/0")),
            &valid,
            None,
            None,
            Some(("status_list", "invalid_claim")),
        ),
        case(
            "iat_after_exp",
            "iat after exp",
            &with(&|c| c["iat"] = json!(now + 4000)),
            &valid,
            u0,
            None,
            Some(("status_list", "invalid_claim")),
        ),
        case(
            "over_64_kib",
            "longer than 64 KiB",
            &huge,
            &valid,
            u0,
            None,
            Some(("status_list", "status_list_too_large")),
        ),
    ];
    let jwks_json = json!({ "keys": [key.public_jwk()] });
    json!({
        "description": "Token status list vectors (draft-ietf-oauth-status-list). `encodings`: the draft's own examples — set `statuses` (or, for the long ones, `set` [index, value] pairs over `size` zero entries) at `bits` each, and expect the packed bytes, their ZLIB compression at the highest level and `lst` (base64url, no padding); or read `lst` back. `cases`: verify `list` (a statuslist+jwt) against `jwks` at `now`, naming `uri` as the expected subject when it is not null, then check the status of `token` (a token valid at `now`) in it, refusing a list older than `max_staleness_seconds` when it is not null. `expect` gives validity, or the stage that refuses (`status_list`: the list; `status`: the token's status in it) and the code. `sdk`: what the SDK answers — `verify_token`, verifying `token` with `list` as its status list (the token's own uri expected; null when valid, else the stage and code); `set_status_list`, giving `list` to a verifier that checks status (`ok` or a code); `verifier`, that verifier's refusal of `token` (null when valid; it finds a list by the token's uri, so a list of another uri is `status_unknown`).",
        "generator": "cargo xtask vectors",
        "now": now,
        "jwks": jwks_json,
        "encodings": status_list_encodings(),
        "cases": cases,
    })
}

/// Every vector file: its name in `tests/vectors/` and its pretty JSON text.
pub fn files() -> Vec<(&'static str, String)> {
    let mut rng = Rng { counter: 0 };
    let key = Keys::new(&mut rng, "signing key A");
    [
        ("tokens.json", token_vectors(&mut rng, &key, ISSUER, NOW)),
        ("dpop.json", dpop_vectors(&mut rng, &key, ISSUER, NOW)),
        ("scope.json", scope_vectors()),
        ("reputation.json", reputation_vectors()),
        ("status.json", status_vectors()),
        ("governance.json", governance_vectors(&mut rng)),
        ("refusals.json", refusal_vectors()),
        ("counts.json", counts_vectors()),
        ("budgets.json", budget_vectors()),
        ("status_list.json", status_list_vectors(&mut rng, &key, NOW)),
        ("log.json", log::log_vectors(&mut rng)),
        ("approvals.json", approvals::approvals_vectors()),
        ("args.json", args::args_vectors()),
        ("webhooks.json", webhooks::webhook_vectors(&mut rng)),
        ("traceparent.json", trace::traceparent_vectors(&mut rng)),
        ("trust.json", trust::trust_vectors(&mut rng)),
        // A counter of its own: its bytes do not move when files before it change.
        (
            "witness.json",
            witness::witness_vectors(&mut Rng { counter: 0 }),
        ),
    ]
    .into_iter()
    .map(|(name, value)| {
        let mut text = serde_json::to_string_pretty(&value).expect("vectors serialise");
        text.push('\n');
        (name, text)
    })
    .collect()
}

/// A token the verifier must refuse, and the code it must refuse it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hostile {
    pub name: String,
    pub token: String,
    pub code: String,
}

/// The rejection cases of the vectors, made under `signing_secret` for a
/// verifier of `issuer` whose clock reads `now`: every case that a verifier
/// holding only that key refuses at that moment, with its code.
pub fn hostile_tokens(signing_secret: [u8; 32], issuer: &str, now: i64) -> Vec<Hostile> {
    let mut rng = Rng { counter: 0 };
    let key = Keys::from_secret(signing_secret);
    let vectors = token_vectors(&mut rng, &key, issuer, now);
    let cases = vectors["cases"].as_array().cloned().unwrap_or_default();
    cases
        .into_iter()
        .filter(|case| {
            case["expect"]["valid"] == false
                && case["expect"]["stage"] == "verify"
                && case["now"] == now
                && case.get("options").is_none()
                && case.get("jwks").is_none()
        })
        .map(|case| Hostile {
            name: case["name"].as_str().unwrap_or_default().to_owned(),
            token: case["token"].as_str().unwrap_or_default().to_owned(),
            code: case["expect"]["error"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        })
        .collect()
}
