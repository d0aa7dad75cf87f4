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
use mandate_core::{
    AgentId, AssuranceLevel, Claims, Constraints, Framework, HumanRef, Identity, Jwks, Policy,
    ReputationCounts, RootIssue, Scope, SigningKey, TokenRequest, Ulid, Usd, delegate, human_ref,
    issue_root, reputation, sign,
};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

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
        max_spend_usd: Some(Usd::from_f64(50.0).expect("valid amount")),
        max_actions: Some(100),
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
    let child =
        delegate(&root, child_request, iat + 10, rng.ulid(iat + 10)).expect("child delegates");
    let mut grandchild_request = request("reader", &["crm:contacts"], &["read"]);
    grandchild_request.constraints = child.constraints();
    grandchild_request.policy = child.svc_policy.clone().unwrap_or_default();
    let grandchild = delegate(&child, grandchild_request, iat + 20, rng.ulid(iat + 20))
        .expect("grandchild delegates");

    let root_token = sign(&root, &key.core).expect("signs");
    let child_token = sign(&child, &key.core).expect("signs");
    let grandchild_token = sign(&grandchild, &key.core).expect("signs");
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

fn scope_vectors() -> Value {
    let permits = json!([
        {"resources": ["crm:contacts"], "actions": ["read"], "action": "read", "resource": "crm:contacts", "expect": true},
        {"resources": ["crm:contacts"], "actions": ["read"], "action": "write", "resource": "crm:contacts", "expect": false},
        {"resources": ["crm:contacts"], "actions": ["read"], "action": "read", "resource": "crm:deals", "expect": false},
        {"resources": ["crm:*"], "actions": ["read"], "action": "read", "resource": "crm:deals", "expect": true},
        {"resources": ["crm:*"], "actions": ["read"], "action": "read", "resource": "crmx:deals", "expect": false},
        {"resources": ["crm:*"], "actions": ["read"], "action": "read", "resource": "cr:m", "expect": false},
        {"resources": ["files:/a/*"], "actions": ["read"], "action": "read", "resource": "files:/a/b", "expect": "invalid_resource_pattern"},
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
    json!({
        "description": "Scope vectors. `permits`: build the scope from resources and actions, parse action and resource, and expect true/false, or the code of the first parse error. `narrowing`: check child against parent (grants of resources, actions, constraints, policy, exp) and expect ok and the violations in order.",
        "generator": "cargo xtask vectors",
        "permits": permits,
        "narrowing": narrowing,
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
        },
        ReputationCounts {
            successes: 1000,
            failures: 0,
            pending: 0,
            approved: 0,
            flagged: 0,
            rejected: 40,
        },
        ReputationCounts {
            successes: 0,
            failures: 0,
            pending: 7,
            approved: 0,
            flagged: 2,
            rejected: 0,
        },
        ReputationCounts {
            successes: u64::MAX,
            failures: 1,
            pending: 0,
            approved: 1,
            flagged: 0,
            rejected: 0,
        },
    ]
    .iter()
    .map(|counts| json!({ "counts": counts, "expect": reputation(counts) }))
    .collect();
    json!({
        "description": "Reputation vectors: counts in, the exact scores out (Beta(1,1) posterior means; combined = 0.6 execution + 0.4 feedback).",
        "generator": "cargo xtask vectors",
        "cases": cases,
    })
}

/// Every vector file: its name in `tests/vectors/` and its pretty JSON text.
pub fn files() -> Vec<(&'static str, String)> {
    let mut rng = Rng { counter: 0 };
    let key = Keys::new(&mut rng, "signing key A");
    [
        ("tokens.json", token_vectors(&mut rng, &key, ISSUER, NOW)),
        ("scope.json", scope_vectors()),
        ("reputation.json", reputation_vectors()),
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
