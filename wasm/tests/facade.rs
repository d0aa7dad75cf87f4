//! The façade under Node (`wasm-bindgen-test`): results have the documented
//! shapes, refusals carry core's codes, the Verifier's cache honours expiry
//! and revocation, and no argument makes a function throw or panic.

#![cfg(target_arch = "wasm32")]

use js_sys::{JSON, Object, Reflect, Uint8Array};
use mandate_core::{
    AgentId, AssuranceLevel, Claims, Constraints, HumanRef, JwkSet, Policy, RootIssue, Scope,
    SigningKey, TokenRequest, Ulid, delegate, issue_root, sign,
};
use mandate_wasm::{
    AgentKey, Verifier, check_narrowing, decode_token_unverified, delegated_grant, evaluate_policy,
    permits, reputation, sha256_ref, summarize_workflow, verify_chain, verify_proof, verify_token,
};
use serde_json::{Value, json};
use wasm_bindgen::JsValue;
use wasm_bindgen::convert::TryFromJsValue as _;
use wasm_bindgen_test::wasm_bindgen_test;

const NOW: i64 = 1_800_000_000;
const TTL: i64 = 600;

/// A JavaScript value as JSON, to compare with `json!`.
fn read(value: &JsValue) -> Value {
    let text = JSON::stringify(value).unwrap().as_string().unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A JSON value as a JavaScript value.
fn js(value: &Value) -> JsValue {
    JSON::parse(&value.to_string()).unwrap()
}

fn key(seed: u8) -> SigningKey {
    SigningKey::from_secret(&[seed; 32])
}

fn jwks() -> JsValue {
    let set = JwkSet {
        keys: vec![key(7).public_jwk()],
    };
    js(&serde_json::to_value(set).unwrap())
}

fn ulid(n: u8) -> Ulid {
    Ulid::new(NOW as u64 * 1000, [n; 10]).unwrap()
}

fn request(agent: &str, resources: &[&str], actions: &[&str]) -> TokenRequest {
    TokenRequest {
        agent_id: AgentId::parse(agent).unwrap(),
        scope: Scope::parse(resources, actions).unwrap(),
        constraints: Constraints::default(),
        policy: Policy::default(),
        ttl_seconds: None,
        holder: None,
    }
}

fn root() -> Claims {
    let mut request = request("planner", &["crm:*", "mail:inbox"], &["read", "delegate"]);
    request.ttl_seconds = Some(TTL as u64);
    issue_root(
        request,
        RootIssue {
            issuer: "https://mandate.test".into(),
            human: HumanRef::from_digest(&[9; 32]),
            level: AssuranceLevel::L1,
            now: NOW,
            jti: ulid(1),
            provenance: ulid(2),
            status: None,
        },
    )
    .unwrap()
}

fn child(parent: &Claims) -> Claims {
    delegate(
        parent,
        request("reader", &["crm:contacts"], &["read"]),
        NOW,
        ulid(3),
        None,
    )
    .unwrap()
}

fn token(claims: &Claims) -> JsValue {
    JsValue::from_str(&sign(claims, &key(7)).unwrap())
}

fn options(value: Value) -> Option<JsValue> {
    Some(js(&value))
}

fn error_code(result: &JsValue) -> Value {
    read(result)["error"]["code"].clone()
}

/// Values no function takes: each must come back as a refusal.
fn garbage() -> Vec<JsValue> {
    let cyclic = Object::new();
    Reflect::set(&cyclic, &"self".into(), &cyclic).unwrap();
    vec![
        JsValue::UNDEFINED,
        JsValue::NULL,
        JsValue::from_f64(42.0),
        JsValue::from_bool(true),
        JsValue::symbol(Some("x")),
        js_sys::BigInt::from(5).into(),
        cyclic.into(),
        js(&json!([1, "two", null])),
        js(&json!({"keys": "no"})),
    ]
}

#[wasm_bindgen_test]
fn verify_token_returns_what_core_serialises() {
    let claims = root();
    let result = read(&verify_token(
        token(&claims),
        jwks(),
        options(json!({"now": NOW})),
    ));
    assert_eq!(result["valid"], json!(true));
    assert_eq!(result["claims"], serde_json::to_value(&claims).unwrap());
    assert_eq!(
        result["header"],
        json!({"alg": "EdDSA", "typ": "vat+jwt", "kid": key(7).kid()})
    );
    let as_text = JsValue::from_str(&JSON::stringify(&jwks()).unwrap().as_string().unwrap());
    let result = read(&verify_token(
        token(&claims),
        as_text,
        options(json!({"now": NOW})),
    ));
    assert_eq!(result["valid"], json!(true));
}

#[wasm_bindgen_test]
fn verify_token_refuses_with_core_codes() {
    let claims = root();
    let good = sign(&claims, &key(7)).unwrap();
    let mut tampered = good.clone();
    tampered.pop();
    tampered.push(if good.ends_with('A') { 'B' } else { 'A' });
    let cases = [
        (
            JsValue::from_str(&tampered),
            jwks(),
            json!({"now": NOW}),
            "verify",
            "invalid_signature",
        ),
        (
            token(&claims),
            jwks(),
            json!({"now": NOW + TTL + 60}),
            "verify",
            "expired",
        ),
        (
            token(&claims),
            jwks(),
            json!({"now": NOW + TTL + 59}),
            "",
            "",
        ),
        (
            token(&claims),
            jwks(),
            json!({"now": NOW + TTL, "leewaySeconds": 0}),
            "verify",
            "expired",
        ),
        (
            token(&claims),
            jwks(),
            json!({"now": NOW, "issuer": "https://other"}),
            "verify",
            "issuer_mismatch",
        ),
        (
            token(&claims),
            jwks(),
            json!({"now": NOW, "revoked": [claims.jti.as_str()]}),
            "verify",
            "revoked",
        ),
        (
            token(&claims),
            jwks(),
            json!({"now": NOW, "revoked": ["vat_root_x"]}),
            "input",
            "invalid_revoked",
        ),
        (
            token(&claims),
            jwks(),
            json!({"now": NOW, "cacheSize": 4}),
            "input",
            "invalid_options",
        ),
        (
            token(&claims),
            jwks(),
            json!({"nwo": NOW}),
            "input",
            "invalid_options",
        ),
        (
            token(&claims),
            js(&json!({"keys": []})),
            json!({"now": NOW}),
            "jwks",
            "no_usable_keys",
        ),
        (
            JsValue::from_str("a.b"),
            jwks(),
            json!({"now": NOW}),
            "verify",
            "malformed_token",
        ),
        (
            JsValue::from_f64(1.0),
            jwks(),
            json!({"now": NOW}),
            "input",
            "invalid_argument",
        ),
    ];
    for (token, jwks, options, stage, code) in cases {
        let result = read(&verify_token(token, jwks, Some(js(&options))));
        if code.is_empty() {
            assert_eq!(result["valid"], json!(true), "{options}");
        } else {
            assert_eq!(result["valid"], json!(false), "{options}");
            assert_eq!(result["error"]["stage"], json!(stage), "{options}");
            assert_eq!(result["error"]["code"], json!(code), "{options}");
            assert!(result["error"]["message"].is_string());
        }
    }
}

#[wasm_bindgen_test]
fn decode_reads_any_signer_without_trusting_it() {
    let claims = root();
    let foreign = JsValue::from_str(&sign(&claims, &key(8)).unwrap());
    let decoded = read(&decode_token_unverified(foreign.clone()));
    assert_eq!(decoded["ok"], json!(true));
    assert_eq!(decoded["claims"]["jti"], json!(claims.jti.as_str()));
    let verified = verify_token(foreign, jwks(), options(json!({"now": NOW})));
    assert_eq!(error_code(&verified), json!("unknown_kid"));
    let bad = read(&decode_token_unverified("x.y.z".into()));
    assert_eq!(bad["ok"], json!(false));
}

#[wasm_bindgen_test]
fn verifier_cache_honours_expiry_and_revocation() {
    let parent = root();
    let child = child(&parent);
    let mut verifier = Verifier::new(jwks(), options(json!({"cacheSize": 8})));
    assert!(verifier.error().is_null());
    let now = Some(JsValue::from_f64(NOW as f64));
    for _ in 0..3 {
        assert_eq!(
            read(&verifier.verify(token(&child), now.clone()))["valid"],
            json!(true)
        );
    }
    assert_eq!(verifier.cached(), 1);
    let later = Some(JsValue::from_f64((NOW + TTL + 60) as f64));
    assert_eq!(
        error_code(&verifier.verify(token(&child), later)),
        json!("expired")
    );
    assert_eq!(verifier.cached(), 0);
    assert_eq!(
        read(&verifier.verify(token(&child), now.clone()))["valid"],
        json!(true)
    );
    assert_eq!(
        read(&verifier.revoke(parent.jti.as_str().into()))["ok"],
        json!(true)
    );
    assert_eq!(verifier.cached(), 1);
    let refused = read(&verifier.verify(token(&child), now.clone()));
    assert_eq!(refused["error"]["code"], json!("revoked"));
    // Named by the only name the child carries: its parent's jti hash.
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains(parent.jti.hash().as_str())
    );
    let malformed = read(&verifier.revoke(js(&json!([child.jti.as_str(), "nope"]))));
    assert_eq!(malformed["ok"], json!(false));
    verifier.clear_cache();
    assert_eq!(verifier.cached(), 0);
    assert_eq!(
        error_code(&verifier.verify(token(&child), Some("soon".into()))),
        json!("invalid_argument")
    );
}

#[wasm_bindgen_test]
fn verifier_without_cache_or_with_bad_setup() {
    let mut plain = Verifier::new(jwks(), None);
    let now = Some(JsValue::from_f64(NOW as f64));
    assert_eq!(
        read(&plain.verify(token(&root()), now.clone()))["valid"],
        json!(true)
    );
    assert_eq!(plain.cached(), 0);
    for (jwks, options, code) in [
        (js(&json!({"keys": []})), None, "no_usable_keys"),
        (jwks(), options(json!({"now": NOW})), "invalid_options"),
        (
            jwks(),
            options(json!({"revoked": ["x"]})),
            "invalid_revoked",
        ),
    ] {
        let mut broken = Verifier::new(jwks, options);
        assert_eq!(read(&broken.error())["code"], json!(code));
        assert_eq!(
            error_code(&broken.verify(token(&root()), now.clone())),
            json!(code)
        );
    }
}

#[wasm_bindgen_test]
fn verify_chain_links_and_revocation() {
    let parent = root();
    let child = child(&parent);
    let chain = || {
        js(&json!([
            sign(&parent, &key(7)).unwrap(),
            sign(&child, &key(7)).unwrap()
        ]))
    };
    let valid = read(&verify_chain(chain(), jwks(), options(json!({"now": NOW}))));
    assert_eq!(valid["valid"], json!(true));
    assert_eq!(
        valid["tokens"][1]["claims"],
        serde_json::to_value(&child).unwrap()
    );
    let revoked = read(&verify_chain(
        chain(),
        jwks(),
        options(json!({"now": NOW, "revoked": [parent.jti.as_str()]})),
    ));
    assert_eq!(
        revoked["error"],
        json!({
            "code": "revoked", "stage": "chain", "index": 0,
            "message": revoked["error"]["message"],
        })
    );
    let reversed = js(&json!([
        sign(&child, &key(7)).unwrap(),
        sign(&parent, &key(7)).unwrap()
    ]));
    let refused = read(&verify_chain(
        reversed,
        jwks(),
        options(json!({"now": NOW})),
    ));
    assert_eq!(refused["error"]["code"], json!("not_root"));
    let expired = read(&verify_chain(
        chain(),
        jwks(),
        options(json!({"now": NOW + TTL + 60})),
    ));
    assert_eq!(
        (
            &expired["error"]["code"],
            &expired["error"]["stage"],
            &expired["error"]["index"]
        ),
        (&json!("expired"), &json!("verify"), &json!(0))
    );
    let empty = read(&verify_chain(js(&json!([])), jwks(), None));
    assert_eq!(empty["error"]["code"], json!("chain_empty"));
}

#[wasm_bindgen_test]
fn permits_takes_a_scope_or_claims() {
    let scope = js(&json!({"resources": ["crm:*"], "actions": ["read"]}));
    let claims = js(&serde_json::to_value(root()).unwrap());
    for subject in [scope.clone(), claims] {
        assert_eq!(
            read(&permits(
                subject.clone(),
                "read".into(),
                "crm:deals".into(),
                None
            )),
            json!({"ok": true})
        );
        let denied = read(&permits(subject, "write".into(), "crm:deals".into(), None));
        assert_eq!(denied["reason"]["code"], json!("action_not_permitted"));
    }
    let outside = read(&permits(
        scope.clone(),
        "read".into(),
        "files:x".into(),
        None,
    ));
    assert_eq!(outside["reason"]["code"], json!("resource_not_permitted"));
    let bad = read(&permits(scope, "Read".into(), "crm:x".into(), None));
    assert_eq!(bad["error"]["code"], json!("invalid_action"));
}

#[wasm_bindgen_test]
fn permits_judges_the_argument_rules_of_claims() {
    let mut claims = serde_json::to_value(root()).unwrap();
    claims["svc_constraints"] =
        json!({"args": [{"actions": ["read"], "pol": [["like", ".q", "acme*"]]}]});
    let claims = js(&claims);
    let judge = |args: Option<JsValue>| {
        read(&permits(
            claims.clone(),
            "read".into(),
            "crm:deals".into(),
            args,
        ))
    };
    assert_eq!(
        judge(Some(js(&json!({"q": "acme corp"})))),
        json!({"ok": true})
    );
    let refused = judge(Some(js(&json!({"q": "other"}))));
    assert_eq!(
        (
            &refused["reason"]["code"],
            &refused["reason"]["rule"],
            &refused["reason"]["truth"]
        ),
        (&json!("args_not_permitted"), &json!(0), &json!("false"))
    );
    assert_eq!(judge(None)["reason"]["code"], json!("args_required"));
    assert_eq!(
        judge(Some(JsValue::NULL))["reason"]["code"],
        json!("args_required")
    );
    assert_eq!(
        judge(Some(r#"{"q":"acme","q":"x"}"#.into()))["error"]["code"],
        json!("duplicate_member")
    );
    let judged = read(&evaluate_policy(
        js(&json!([["!=", ".to", "x"]])),
        js(&json!({})),
    ));
    assert_eq!(
        judged,
        json!({"ok": true, "truth": "undefined", "permits": false})
    );
}

#[wasm_bindgen_test]
fn narrowing_of_grants_and_claims() {
    let parent = root();
    let child = child(&parent);
    let as_js = |claims: &Claims| js(&serde_json::to_value(claims).unwrap());
    assert_eq!(
        read(&check_narrowing(as_js(&child), as_js(&parent))),
        json!({"ok": true, "violations": []})
    );
    let wide = js(&json!({
        "resources": ["crm:*", "bank:*"], "actions": ["read", "pay"],
        "exp": parent.exp + 1,
    }));
    let result = read(&check_narrowing(wide, as_js(&parent)));
    let found: Vec<(Value, Value)> = result["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["field"].clone(), v["code"].clone()))
        .collect();
    assert_eq!(
        found,
        vec![
            (json!("resources"), json!("resource_not_covered")),
            (json!("actions"), json!("action_not_held")),
            (json!("exp"), json!("lifetime_beyond_parent")),
        ]
    );
    let typo =
        js(&json!({"resources": ["crm:*"], "actions": ["read"], "exp": 1, "constraint": {}}));
    let refused = read(&check_narrowing(typo, as_js(&parent)));
    assert_eq!(refused["error"]["code"], json!("invalid_grant"));
}

#[wasm_bindgen_test]
fn sha256_ref_of_text_and_bytes() {
    let abc = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    let bytes = Uint8Array::from(&b"abc"[..]);
    assert_eq!(sha256_ref("abc".into()).as_string().as_deref(), Some(abc));
    assert_eq!(
        sha256_ref(bytes.clone().into()).as_string().as_deref(),
        Some(abc)
    );
    assert_eq!(
        sha256_ref(bytes.buffer().into()).as_string().as_deref(),
        Some(abc)
    );
    assert!(sha256_ref(JsValue::from_f64(1.0)).is_null());
}

#[wasm_bindgen_test]
fn reputation_and_summary_are_core_numbers() {
    let counts = json!({"successes": 8, "failures": 2, "pending": 1, "approved": 3, "flagged": 1, "rejected": 1});
    let expected = mandate_core::reputation(&serde_json::from_value(counts.clone()).unwrap());
    assert_eq!(
        read(&reputation(js(&counts))),
        serde_json::to_value(expected).unwrap()
    );
    assert_eq!(
        error_code(&reputation(js(&json!({"successes": -1})))),
        json!("invalid_counts")
    );
    let records = json!([
        {"agent_id": "a", "action": "read", "status": "completed", "result": "success", "provenance_ref": "prov_x", "spend_usd": 0},
        {"agent_id": "a", "action": "write", "status": "denied", "result": null, "provenance_ref": "prov_x"},
        {"agent_id": "b", "action": "read", "status": "pending", "provenance_ref": "prov_x"},
    ]);
    assert_eq!(
        read(&summarize_workflow(js(&records), None)),
        json!({
            "provenance_ref": "prov_x", "total_records": 3, "unique_agents": 2,
            "actions_by_type": {"read": 2, "write": 1},
            "results_by_type": {"denied": 1, "pending": 1, "success": 1},
        })
    );
    let other = summarize_workflow(js(&records), Some("prov_y".into()));
    assert_eq!(error_code(&other), json!("provenance_mismatch"));
    let empty = read(&summarize_workflow(js(&json!([])), Some("prov_z".into())));
    assert_eq!(empty["total_records"], json!(0));
    let unknown = summarize_workflow(
        js(&json!([{"agent_id": "a", "action": "x", "status": "done"}])),
        None,
    );
    assert_eq!(error_code(&unknown), json!("inconsistent_record"));
}

#[wasm_bindgen_test]
fn no_argument_throws() {
    let good = token(&root());
    for bad in garbage() {
        for result in [
            verify_token(bad.clone(), jwks(), None),
            verify_token(good.clone(), bad.clone(), None),
            verify_token(good.clone(), jwks(), Some(bad.clone())),
            verify_chain(bad.clone(), jwks(), None),
            verify_chain(js(&json!([])), bad.clone(), Some(bad.clone())),
            Verifier::new(bad.clone(), Some(bad.clone())).verify(bad.clone(), Some(bad.clone())),
            Verifier::new(jwks(), None).revoke(bad.clone()),
            Verifier::new(jwks(), None).verify_request(good.clone(), bad.clone()),
            verify_proof(bad.clone(), bad.clone()),
            delegated_grant(bad.clone(), bad.clone()),
            decode_token_unverified(bad.clone()),
            permits(bad.clone(), bad.clone(), bad.clone(), Some(bad.clone())),
            evaluate_policy(bad.clone(), bad.clone()),
            check_narrowing(bad.clone(), bad.clone()),
            reputation(bad.clone()),
            summarize_workflow(bad.clone(), Some(bad.clone())),
        ] {
            let result = read(&result);
            assert!(result["error"].is_object(), "{result}");
            assert_ne!(result["valid"], json!(true));
            assert_ne!(result["ok"], json!(true));
        }
        assert!(sha256_ref(bad).is_null());
    }
}

/// A bound token, checked as an MCP server or an edge worker would: with the
/// holder's proof for the request, used once.
#[wasm_bindgen_test]
fn bound_tokens_need_their_holders_proof_once() {
    let holder = AgentKey::generate(Some(Uint8Array::from(&[5u8; 32][..]).into()));
    let holder = AgentKey::try_from_js_value(holder).unwrap();
    let mut bound = root();
    bound.cnf = Some(mandate_core::Confirmation {
        jkt: mandate_core::Jkt::parse(&holder.jkt()).unwrap(),
    });
    let compact = sign(&bound, &key(7)).unwrap();
    let url = "https://tools.example/mcp";
    let proof = |now: i64| {
        let made = read(&holder.proof(js(&json!({
            "method": "POST", "url": url, "accessToken": compact, "now": now
        }))));
        assert_eq!(made["ok"], json!(true), "{made}");
        made["proof"].as_str().unwrap().to_owned()
    };
    let mut verifier = Verifier::new(jwks(), options(json!({"cacheSize": 8})));
    let now = Some(JsValue::from_f64(NOW as f64));
    assert_eq!(
        error_code(&verifier.verify(compact.clone().into(), now)),
        json!("dpop_required")
    );
    let first = proof(NOW);
    let request =
        |proof: &str| js(&json!({"method": "POST", "url": url, "proof": proof, "now": NOW}));
    for round in 0..2 {
        let result = read(&verifier.verify_request(compact.clone().into(), request(&first)));
        if round == 0 {
            assert_eq!(result["valid"], json!(true), "{result}");
            assert_eq!(result["claims"]["cnf"]["jkt"], json!(holder.jkt()));
        } else {
            assert_eq!(result["error"]["code"], json!("dpop_replayed"));
            assert_eq!(result["error"]["stage"], json!("dpop"));
        }
    }
    // A second proof is good, also from the cache.
    let second = proof(NOW);
    assert_eq!(
        read(&verifier.verify_request(compact.clone().into(), request(&second)))["valid"],
        json!(true)
    );
    let missing = js(&json!({"method": "POST", "url": url, "now": NOW}));
    assert_eq!(
        error_code(&verifier.verify_request(compact.clone().into(), missing)),
        json!("dpop_required")
    );
    // verifyToken: with the request, without it, or only to show it.
    let checked = read(&verify_token(
        compact.clone().into(),
        jwks(),
        options(json!({"now": NOW, "request": {"method": "POST", "url": url, "proof": second}})),
    ));
    assert_eq!(checked["valid"], json!(true));
    assert_eq!(
        error_code(&verify_token(
            compact.clone().into(),
            jwks(),
            options(json!({"now": NOW}))
        )),
        json!("dpop_required")
    );
    let shown = read(&verify_token(
        compact.clone().into(),
        jwks(),
        options(json!({"now": NOW, "skipProofOfPossession": true})),
    ));
    assert_eq!(shown["valid"], json!(true));
    // The stateless proof check names the rule that fails.
    let check = |proof: &str, method: &str| {
        read(&verify_proof(
            proof.into(),
            js(
                &json!({"method": method, "url": url, "accessToken": compact, "jkt": holder.jkt(), "now": NOW}),
            ),
        ))
    };
    assert_eq!(check(&second, "POST")["valid"], json!(true));
    assert_eq!(
        check(&second, "GET")["error"]["code"],
        json!("dpop_method_mismatch")
    );
    // A key survives export and import.
    let exported = holder.export_jwk();
    let again = AgentKey::try_from_js_value(AgentKey::from_jwk(exported)).unwrap();
    assert_eq!(again.jkt(), holder.jkt());
    let public = read(&holder.public_jwk());
    assert_eq!(public["kty"], json!("OKP"));
    assert!(public.get("d").is_none());
    assert!(read(&AgentKey::generate(Some(js(&json!("short")))))["error"].is_object());
    assert!(read(&AgentKey::from_jwk(js(&public)))["error"].is_object());
}

#[wasm_bindgen_test]
fn delegation_grants_inherit_what_they_leave_out() {
    let parent = js(
        &json!({"resources": ["crm:*"], "actions": ["read", "delegate"],
                            "constraints": {"max_spend_usd": 10}, "policy": {"frameworks": ["gdpr"]},
                            "exp": NOW + 100}),
    );
    let granted = read(&delegated_grant(
        js(
            &json!({"resources": ["crm:a"], "actions": ["read"], "constraints": {"max_actions": 5}, "exp": NOW + 50}),
        ),
        parent.clone(),
    ));
    assert_eq!(granted["ok"], json!(true), "{granted}");
    // Through JSON.parse, 10.0 reads back as the integer 10.
    assert_eq!(
        granted["grant"]["constraints"],
        json!({"max_spend_usd": 10, "max_actions": 5})
    );
    assert_eq!(granted["grant"]["policy"], json!({"frameworks": ["gdpr"]}));
    let refused = read(&delegated_grant(
        js(&json!({"resources": ["bank:*"], "actions": ["read"], "exp": NOW + 50})),
        parent,
    ));
    assert_eq!(refused["code"], json!("scope_widening"));
    assert_eq!(refused["violations"][0]["field"], json!("resources"));
}
