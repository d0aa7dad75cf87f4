//! Runs every conformance vector in `tests/vectors/` through core natively.
//! The wasm build runs the same files in Node and must reach the same
//! verdicts: those of the SDK's exports in `wasm/test/vectors.test.mjs`,
//! the rest (`rules`) in the façade's `rule_vectors` test, which compiles
//! the judge of `rules/` for wasm32.

mod rules;

use std::collections::BTreeMap;

use mandate_core::webhook::WebhookError;
use mandate_core::{
    Action, Audience, Constraints, Grant, IssueError, Jkt, Jth, Jti, Jwks, MessageId, Policy,
    ProofRequest, ReputationCounts, Resource, Scope, ScopeError, StatusUri, TokenStatusError,
    VerifiedStatusList, VerifyOptions, check_binding, check_narrowing, check_status,
    check_status_in_list, check_status_with, delegated_grant, reputation, verify, verify_chain,
    verify_proof, verify_status_list, webhook,
};
use serde::Deserialize;
use serde_json::Value;

const TOKENS: &str = include_str!("../../tests/vectors/tokens.json");
const DPOP: &str = include_str!("../../tests/vectors/dpop.json");
const SCOPE: &str = include_str!("../../tests/vectors/scope.json");
const REPUTATION: &str = include_str!("../../tests/vectors/reputation.json");
const STATUS_LIST: &str = include_str!("../../tests/vectors/status_list.json");

#[derive(Deserialize)]
struct TokenFile {
    jwks: Value,
    cases: Vec<TokenCase>,
    chains: Vec<ChainCase>,
}

#[derive(Deserialize)]
struct TokenCase {
    name: String,
    token: String,
    now: i64,
    #[serde(default)]
    jwks: Option<Value>,
    #[serde(default)]
    options: CaseOptions,
    expect: Expect,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CaseOptions {
    leeway_seconds: Option<u64>,
    issuer: Option<String>,
}

impl CaseOptions {
    fn to_options(&self) -> VerifyOptions {
        let mut options = VerifyOptions::default();
        if let Some(leeway) = self.leeway_seconds {
            options.leeway_seconds = leeway;
        }
        options.issuer.clone_from(&self.issuer);
        options
    }
}

#[derive(Deserialize)]
struct Expect {
    valid: bool,
    #[serde(default)]
    stage: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    claims: Option<Value>,
}

#[derive(Deserialize)]
struct ChainCase {
    name: String,
    tokens: Vec<String>,
    now: i64,
    revoked: Vec<String>,
    expect: ChainExpect,
}

#[derive(Deserialize)]
struct ChainExpect {
    valid: bool,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    error: Option<String>,
}

fn parse_jwks(value: &Value) -> Result<Jwks, String> {
    Jwks::parse(value.to_string().as_bytes()).map_err(|e| e.code().to_owned())
}

#[test]
fn token_vectors() {
    let file: TokenFile = serde_json::from_str(TOKENS).unwrap();
    assert!(
        file.cases.len() >= 50,
        "only {} token cases",
        file.cases.len()
    );
    for case in &file.cases {
        let jwks = parse_jwks(case.jwks.as_ref().unwrap_or(&file.jwks));
        let outcome = match jwks {
            Err(code) => Err(("jwks", code)),
            Ok(jwks) => verify(&case.token, &jwks, case.now, &case.options.to_options())
                .map_err(|e| ("verify", e.code().to_owned())),
        };
        match (&outcome, case.expect.valid) {
            (Ok(verified), true) => {
                let claims = serde_json::to_value(&verified.claims).unwrap();
                assert_eq!(Some(&claims), case.expect.claims.as_ref(), "{}", case.name);
            }
            (Err((stage, code)), false) => {
                assert_eq!(Some(*stage), case.expect.stage.as_deref(), "{}", case.name);
                assert_eq!(Some(code), case.expect.error.as_ref(), "{}", case.name);
            }
            _ => panic!(
                "{}: expected valid={}, got {outcome:?}",
                case.name, case.expect.valid
            ),
        }
    }
}

#[test]
fn chain_vectors() {
    let file: TokenFile = serde_json::from_str(TOKENS).unwrap();
    let jwks = parse_jwks(&file.jwks).unwrap();
    for case in &file.chains {
        let tokens: Vec<&str> = case.tokens.iter().map(String::as_str).collect();
        // Revoked tokens are named by jti or by jti hash.
        let revoked: Vec<Jth> = case
            .revoked
            .iter()
            .map(|j| {
                Jti::parse(j)
                    .map(|jti| jti.hash())
                    .or_else(|_| Jth::parse(j))
            })
            .collect::<Result<_, _>>()
            .unwrap();
        let outcome = verify_chain(&tokens, &jwks, case.now, &VerifyOptions::default(), |jti| {
            revoked.contains(jti)
        });
        match outcome {
            Ok(verified) => {
                assert!(case.expect.valid, "{}: unexpectedly valid", case.name);
                assert_eq!(verified.len(), tokens.len());
            }
            Err(error) => {
                assert!(!case.expect.valid, "{}: {error}", case.name);
                assert_eq!(
                    Some(error.code()),
                    case.expect.error.as_deref(),
                    "{}",
                    case.name
                );
                let index = match error {
                    mandate_core::ChainError::Link { index, .. } => Some(index),
                    _ => None,
                };
                assert_eq!(index, case.expect.index, "{}", case.name);
            }
        }
    }
}

#[derive(Deserialize)]
struct DpopFile {
    jwks: Value,
    token: String,
    jkt: Jkt,
    url: String,
    now: i64,
    cases: Vec<ProofCase>,
    binding: Vec<BindingCase>,
}

#[derive(Deserialize)]
struct ProofCase {
    name: String,
    proof: String,
    method: String,
    url: String,
    now: i64,
    expect: ProofExpect,
}

#[derive(Deserialize, Debug, PartialEq)]
struct ProofExpect {
    valid: bool,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct BindingCase {
    name: String,
    token: String,
    proof: Option<String>,
    expect: ProofExpect,
}

fn proof_verdict<T, E: Into<String>>(outcome: Result<T, E>) -> ProofExpect {
    match outcome {
        Ok(_) => ProofExpect {
            valid: true,
            error: None,
        },
        Err(code) => ProofExpect {
            valid: false,
            error: Some(code.into()),
        },
    }
}

#[test]
fn dpop_vectors() {
    let file: DpopFile = serde_json::from_str(DPOP).unwrap();
    assert!(
        file.cases.len() >= 25,
        "only {} proof cases",
        file.cases.len()
    );
    for case in &file.cases {
        let request = ProofRequest {
            method: &case.method,
            url: &case.url,
            now: case.now,
        };
        let outcome = verify_proof(&case.proof, &file.token, &file.jkt, &request)
            .map_err(|e| e.code().to_owned());
        assert_eq!(proof_verdict(outcome), case.expect, "{}", case.name);
    }
    let jwks = parse_jwks(&file.jwks).unwrap();
    for case in &file.binding {
        let claims = verify(&case.token, &jwks, file.now, &VerifyOptions::default())
            .unwrap()
            .claims;
        let request = ProofRequest {
            method: "POST",
            url: &file.url,
            now: file.now,
        };
        let outcome = check_binding(&claims, &case.token, case.proof.as_deref(), &request)
            .map_err(|e| e.code().to_owned());
        assert_eq!(proof_verdict(outcome), case.expect, "{}", case.name);
    }
}

#[derive(Deserialize)]
struct ScopeFile {
    permits: Vec<PermitCase>,
    narrowing: Vec<NarrowingCase>,
    delegation: Vec<DelegationCase>,
}

#[derive(Deserialize)]
struct DelegationCase {
    name: String,
    parent: GrantJson,
    request: GrantJson,
    expect: Value,
}

#[derive(Deserialize)]
struct PermitCase {
    resources: Vec<String>,
    actions: Vec<String>,
    action: String,
    resource: String,
    expect: Value,
}

#[derive(Deserialize)]
struct GrantJson {
    resources: Vec<String>,
    actions: Vec<String>,
    #[serde(default)]
    constraints: Constraints,
    #[serde(default)]
    policy: Policy,
    exp: i64,
    #[serde(default)]
    aud: Option<Audience>,
}

impl GrantJson {
    fn grant(&self) -> Grant {
        Grant {
            scope: Scope::parse(&self.resources, &self.actions).unwrap(),
            constraints: self.constraints.clone(),
            policy: self.policy.clone(),
            expires_at: self.exp,
            audience: self.aud.clone(),
        }
    }
}

#[derive(Deserialize)]
struct NarrowingCase {
    name: String,
    parent: GrantJson,
    child: GrantJson,
    expect: NarrowingExpect,
}

#[derive(Deserialize, PartialEq, Debug)]
struct NarrowingExpect {
    ok: bool,
    violations: Vec<FieldCode>,
}

#[derive(Deserialize, PartialEq, Debug)]
struct FieldCode {
    field: String,
    code: String,
}

fn permit(case: &PermitCase) -> Result<bool, ScopeError> {
    let scope = Scope::parse(&case.resources, &case.actions)?;
    let action = Action::parse(&case.action)?;
    let resource = Resource::parse(&case.resource)?;
    Ok(mandate_core::permits(&scope, &action, &resource))
}

#[test]
fn scope_vectors() {
    let file: ScopeFile = serde_json::from_str(SCOPE).unwrap();
    for case in &file.permits {
        let got = match permit(case) {
            Ok(allowed) => Value::Bool(allowed),
            Err(error) => Value::String(error.code().to_owned()),
        };
        assert_eq!(
            got, case.expect,
            "{} {} under {:?}",
            case.action, case.resource, case.resources
        );
    }
    for case in &file.narrowing {
        let got = match check_narrowing(&case.child.grant(), &case.parent.grant()) {
            Ok(()) => NarrowingExpect {
                ok: true,
                violations: vec![],
            },
            Err(widening) => NarrowingExpect {
                ok: false,
                violations: widening
                    .violations
                    .iter()
                    .map(|v| FieldCode {
                        field: v.field(),
                        code: v.code().to_owned(),
                    })
                    .collect(),
            },
        };
        assert_eq!(got, case.expect, "{}", case.name);
    }
    for case in &file.delegation {
        let got = match delegated_grant(case.request.grant(), &case.parent.grant()) {
            Ok(grant) => {
                let expected: GrantJson =
                    serde_json::from_value(case.expect["grant"].clone()).unwrap();
                assert_eq!(grant, expected.grant(), "{}", case.name);
                serde_json::json!({"ok": true, "grant": case.expect["grant"]})
            }
            Err(error) => {
                let violations = match &error {
                    IssueError::Widening(widening) => widening
                        .violations
                        .iter()
                        .map(|v| serde_json::json!({"field": v.field(), "code": v.code()}))
                        .collect(),
                    _ => Vec::new(),
                };
                serde_json::json!({"ok": false, "error": error.code(), "violations": violations})
            }
        };
        assert_eq!(got, case.expect, "{}", case.name);
    }
}

#[derive(Deserialize)]
struct ReputationFile {
    cases: Vec<ReputationCase>,
}

#[derive(Deserialize)]
struct ReputationCase {
    counts: ReputationCounts,
    expect: Value,
}

#[test]
fn reputation_vectors() {
    let file: ReputationFile = serde_json::from_str(REPUTATION).unwrap();
    for case in &file.cases {
        let got = serde_json::to_value(reputation(&case.counts)).unwrap();
        assert_eq!(got, case.expect, "{:?}", case.counts);
    }
}

#[test]
fn status_vectors() {
    rules::token_status();
}

#[test]
fn governance_vectors() {
    rules::governance();
}

#[test]
fn refusal_vectors() {
    rules::refusals();
}

#[test]
fn counts_vectors() {
    rules::counts();
}

#[test]
fn budget_vectors() {
    rules::budgets();
}

#[test]
fn role_vectors() {
    rules::roles();
}

#[test]
fn status_list_encoding_vectors() {
    rules::status_list_encodings();
}

#[test]
fn approval_requirement_vectors() {
    rules::approvals::approval_requirements();
}

#[test]
fn approval_matching_vectors() {
    rules::approvals::approval_matching();
}

#[test]
fn approval_narrowing_vectors() {
    rules::approvals::approval_narrowing();
}

#[test]
fn approval_reachability_vectors() {
    rules::approvals::approval_reachability();
}

#[test]
fn approval_lifecycle_vectors() {
    rules::approvals::approval_lifecycle();
}

#[test]
fn approval_leaf_vectors() {
    rules::approvals::approval_leaves();
}

#[test]
fn args_evaluation_vectors() {
    rules::args::evaluations();
}

#[test]
fn args_rule_error_vectors() {
    rules::args::rule_errors();
}

#[test]
fn args_form_vectors() {
    rules::args::args_forms();
}

#[test]
fn args_check_vectors() {
    rules::args::checks();
}

#[test]
fn args_narrowing_vectors() {
    rules::args::narrowing();
}

#[test]
fn args_approval_vectors() {
    rules::args::approval();
}

#[test]
fn webhook_payload_vectors() {
    rules::webhook_payloads();
}

#[test]
fn traceparent_vectors() {
    rules::traceparents();
}

const WEBHOOKS: &str = include_str!("../../tests/vectors/webhooks.json");

#[derive(Deserialize)]
struct WebhookFile {
    tolerance_seconds: u64,
    signatures: Vec<SignatureCase>,
    secrets: Vec<SecretCase>,
    cases: Vec<WebhookCase>,
}

#[derive(Deserialize)]
struct SignatureCase {
    name: String,
    secret: String,
    id: String,
    timestamp: i64,
    body: String,
    signature: String,
}

#[derive(Deserialize)]
struct SecretCase {
    name: String,
    secret: String,
    expect: SecretExpect,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SecretExpect {
    valid: bool,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct WebhookCase {
    name: String,
    secrets: Vec<String>,
    headers: Vec<(String, String)>,
    body: String,
    now: i64,
    #[serde(default)]
    tolerance_seconds: Option<u64>,
    expect: WebhookExpect,
}

#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct WebhookExpect {
    valid: bool,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    timestamp: Option<i64>,
    #[serde(default)]
    secret_index: Option<usize>,
    #[serde(default)]
    event: Option<Value>,
}

impl WebhookExpect {
    fn refused(error: &WebhookError) -> WebhookExpect {
        WebhookExpect {
            valid: false,
            error: Some(error.code().to_owned()),
            id: None,
            timestamp: None,
            secret_index: None,
            event: None,
        }
    }
}

/// The message, as a receiver judges it: the headers picked, the
/// signature and timestamp verified, the payload read.
fn receive(file: &WebhookFile, case: &WebhookCase) -> Result<WebhookExpect, WebhookError> {
    let secrets = case
        .secrets
        .iter()
        .map(|s| webhook::Secret::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let headers = webhook::Headers::from_pairs(
        case.headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str())),
    )?;
    let tolerance = case.tolerance_seconds.unwrap_or(file.tolerance_seconds);
    let verified = webhook::verify(
        &secrets,
        &headers,
        case.body.as_bytes(),
        case.now,
        tolerance,
    )?;
    let event = webhook::parse_event::<webhook::AnyObject>(case.body.as_bytes())?;
    let data = serde_json::from_str::<Value>(&case.body).unwrap()["data"].take();
    Ok(WebhookExpect {
        valid: true,
        error: None,
        id: Some(verified.id.to_string()),
        timestamp: Some(verified.timestamp),
        secret_index: Some(verified.secret_index),
        event: Some(serde_json::json!({
            "type": event.event_type,
            "timestamp": event.timestamp,
            "data": data,
        })),
    })
}

#[test]
fn webhook_vectors() {
    let file: WebhookFile = serde_json::from_str(WEBHOOKS).unwrap();
    assert_eq!(file.tolerance_seconds, webhook::WEBHOOK_TOLERANCE_SECONDS);
    assert!(file.signatures.len() >= 5);
    for case in &file.signatures {
        let secret = webhook::Secret::parse(&case.secret).unwrap();
        let id = MessageId::parse(&case.id).unwrap();
        let signature = webhook::sign(&secret, &id, case.timestamp, case.body.as_bytes());
        assert_eq!(signature, case.signature, "{}", case.name);
    }
    for case in &file.secrets {
        // A secret read is written back as it was given.
        let got = webhook::Secret::parse(&case.secret)
            .map(|secret| secret.to_whsec())
            .map_err(|e| e.code().to_owned());
        let expected = match &case.expect {
            SecretExpect { valid: true, .. } => Ok(case.secret.clone()),
            SecretExpect { error, .. } => Err(error.clone().unwrap_or_default()),
        };
        assert_eq!(got, expected, "{}", case.name);
    }
    assert!(file.cases.len() >= 60, "only {} cases", file.cases.len());
    for case in &file.cases {
        let got = receive(&file, case).unwrap_or_else(|e| WebhookExpect::refused(&e));
        assert_eq!(got, case.expect, "{}", case.name);
    }
}

#[derive(Deserialize)]
struct StatusListFile {
    jwks: Value,
    cases: Vec<StatusListCase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatusListCase {
    name: String,
    description: String,
    list: String,
    token: String,
    now: i64,
    uri: Option<String>,
    max_staleness_seconds: Option<u64>,
    expect: Expect,
    sdk: SdkExpect,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SdkExpect {
    verify_token: Option<StageCode>,
    set_status_list: String,
    verifier: Option<String>,
}

#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct StageCode {
    stage: String,
    error: String,
}

#[test]
fn status_list_vectors() {
    let file: StatusListFile = serde_json::from_str(STATUS_LIST).unwrap();
    assert!(
        file.cases.len() >= 30,
        "only {} status list cases",
        file.cases.len()
    );
    let jwks = parse_jwks(&file.jwks).unwrap();
    for case in &file.cases {
        assert!(!case.description.is_empty());
        let claims = verify(&case.token, &jwks, case.now, &VerifyOptions::default())
            .unwrap()
            .claims;
        let outcome = verify_status_list(&case.list, &jwks, case.now, case.uri.as_deref())
            .map_err(|e| ("status_list", e.code()))
            .and_then(|list| {
                check_status(&claims, &list, case.now, case.max_staleness_seconds)
                    .map_err(|e| ("status", e.code()))
            });
        match outcome {
            Ok(()) => assert!(case.expect.valid, "{}: unexpectedly valid", case.name),
            Err((stage, code)) => {
                assert!(!case.expect.valid, "{}: {stage} {code}", case.name);
                assert_eq!(Some(stage), case.expect.stage.as_deref(), "{}", case.name);
                assert_eq!(Some(code), case.expect.error.as_deref(), "{}", case.name);
            }
        }

        // verifyToken with the list (core's sequence both SDKs call): the
        // token's own uri expected.
        let with_list = check_status_in_list(
            &claims,
            &case.list,
            &jwks,
            case.now,
            case.max_staleness_seconds,
            None,
        )
        .err()
        .map(|error| match error {
            TokenStatusError::List(e) => ("status_list", e.code()),
            TokenStatusError::Status(e) => ("status", e.code()),
        });
        let expected = case
            .sdk
            .verify_token
            .as_ref()
            .map(|e| (e.stage.as_str(), e.error.as_str()));
        assert_eq!(with_list, expected, "{}", case.name);

        // A verifier that keeps lists by their own subject and finds a
        // token's list by the token's uri.
        let mut held: BTreeMap<StatusUri, VerifiedStatusList> = BTreeMap::new();
        let set = match verify_status_list(&case.list, &jwks, case.now, None) {
            Ok(list) => {
                held.insert(list.uri.clone(), list);
                "ok".to_owned()
            }
            Err(error) => error.code().to_owned(),
        };
        assert_eq!(set, case.sdk.set_status_list, "{}", case.name);
        let verified = check_status_with(
            &claims,
            |uri| held.get(uri),
            case.now,
            case.max_staleness_seconds,
        )
        .err()
        .map(|e| e.code().to_owned());
        assert_eq!(verified, case.sdk.verifier, "{}", case.name);
    }
}

mod log {
    //! `log.json`: the record log's checkpoints, proofs, keys and leaves.

    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use mandate_core::tlog::{Hash, LogEntry, LogEvent, NoteVerifier, TlogProof};
    use mandate_core::{Args, open_checkpoint, verify_consistency, verify_tlog_proof};
    use serde_json::{Value, json};

    const LOG: &str = include_str!("../../tests/vectors/log.json");

    fn hash(value: &Value) -> Hash {
        STANDARD
            .decode(value.as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap()
    }

    fn verdict<T>(
        outcome: Result<T, mandate_core::LogError>,
        ok: impl FnOnce(T) -> Value,
    ) -> Value {
        match outcome {
            Ok(value) => ok(value),
            Err(error) => json!({ "valid": false, "error": error.code() }),
        }
    }

    fn keys(values: &Value) -> Vec<NoteVerifier> {
        values
            .as_array()
            .unwrap()
            .iter()
            .map(|v| NoteVerifier::parse(v.as_str().unwrap()).unwrap())
            .collect()
    }

    #[test]
    fn inclusion() {
        let file: Value = serde_json::from_str(LOG).unwrap();
        let origin = file["origin"].as_str().unwrap();
        let trusted = keys(&json!([file["key"]["vkey"]]));
        let cases = file["inclusion"].as_array().unwrap();
        assert!(cases.len() >= 30, "only {} inclusion cases", cases.len());
        for case in cases {
            let leaf = STANDARD.decode(case["leaf"].as_str().unwrap()).unwrap();
            let proof = case["proof"].as_str().unwrap();
            let outcome = verify_tlog_proof(proof, &leaf, Some(origin), &trusted);
            let got = verdict(outcome, |checkpoint| {
                LogEntry::from_leaf(&leaf).unwrap();
                json!({
                    "valid": true,
                    "index": TlogProof::parse(proof).unwrap().index,
                    "size": checkpoint.size,
                    "root": STANDARD.encode(checkpoint.root),
                })
            });
            assert_eq!(got, case["expect"], "{}", case["name"]);
        }
    }

    #[test]
    fn consistency() {
        let file: Value = serde_json::from_str(LOG).unwrap();
        let cases = file["consistency"].as_array().unwrap();
        assert!(cases.len() >= 20);
        for case in cases {
            let proof: Vec<Hash> = case["proof"].as_array().unwrap().iter().map(hash).collect();
            let outcome = verify_consistency(
                case["old_size"].as_u64().unwrap(),
                case["new_size"].as_u64().unwrap(),
                &hash(&case["old_root"]),
                &hash(&case["new_root"]),
                &proof,
            );
            let got = verdict(outcome, |()| json!({ "valid": true }));
            assert_eq!(got, case["expect"], "{}", case["name"]);
        }
    }

    #[test]
    fn checkpoints_and_keys() {
        let file: Value = serde_json::from_str(LOG).unwrap();
        for case in file["checkpoints"].as_array().unwrap() {
            let outcome = open_checkpoint(
                case["note"].as_str().unwrap(),
                case["origin"].as_str(),
                &keys(&case["vkeys"]),
            );
            let got = verdict(
                outcome,
                |c| json!({ "valid": true, "origin": c.origin, "size": c.size, "root": STANDARD.encode(c.root) }),
            );
            assert_eq!(got, case["expect"], "{}", case["name"]);
        }
        for case in file["vkeys"].as_array().unwrap() {
            let outcome = NoteVerifier::parse(case["vkey"].as_str().unwrap());
            let got = verdict(
                outcome,
                |key| json!({ "valid": true, "name": key.name(), "key_id": format!("{:08x}", key.key_id()) }),
            );
            assert_eq!(got, case["expect"], "{}", case["name"]);
        }
    }

    #[test]
    fn leaves() {
        let file: Value = serde_json::from_str(LOG).unwrap();
        let cases = file["leaves"].as_array().unwrap();
        assert!(cases.len() >= 15);
        assert!(cases.iter().filter(|c| c.get("args").is_some()).count() >= 3);
        for case in cases {
            let leaf = STANDARD.decode(case["leaf"].as_str().unwrap()).unwrap();
            let got = match LogEntry::from_leaf(&leaf) {
                Ok(entry) => {
                    assert_eq!(entry.to_leaf().unwrap(), leaf);
                    if let Some(args) = case.get("args") {
                        let LogEvent::RecordCreated(record) = &entry.event else {
                            panic!("{}: arguments for a leaf not of a record", case["name"]);
                        };
                        let hash = Args::from_value(args.clone()).unwrap().hash();
                        assert_eq!(record.args_hash.as_ref(), Some(&hash), "{}", case["name"]);
                    }
                    json!({ "ok": true, "entry": serde_json::to_value(&entry).unwrap() })
                }
                Err(error) => json!({ "ok": false, "error": error.code() }),
            };
            assert_eq!(got, case["expect"], "{}", case["name"]);
        }
    }

    #[test]
    fn record_proofs_and_monitor_fixtures() {
        let file: Value = serde_json::from_str(LOG).unwrap();
        let origin = file["origin"].as_str();
        let trusted = keys(&json!([file["key"]["vkey"]]));
        let valid = &file["record_proofs"][0];
        assert_eq!(valid["name"], "valid");
        for event in valid["response"]["events"].as_array().unwrap() {
            let leaf = STANDARD.decode(event["leaf"].as_str().unwrap()).unwrap();
            verify_tlog_proof(event["proof"].as_str().unwrap(), &leaf, origin, &trusted).unwrap();
            let entry = LogEntry::from_leaf(&leaf).unwrap();
            assert_eq!(entry.event.kind(), event["kind"]);
            assert_eq!(
                entry.event.aar_id().unwrap().as_str(),
                valid["response"]["aar_id"]
            );
        }
        let monitor = &file["monitor"];
        let checkpoint = |log: &str, size: &str| {
            open_checkpoint(
                monitor[log]["checkpoints"][size].as_str().unwrap(),
                origin,
                &trusted,
            )
            .unwrap()
        };
        for (log, old, new, consistent) in [
            ("log", "257", "1000", true),
            ("log", "1000", "1100", true),
            ("fork", "1000", "1100", true),
        ] {
            let (a, b) = (checkpoint(log, old), checkpoint(log, new));
            let proof: Vec<Hash> = monitor[log]["consistency"][format!("{old}-{new}")]
                .as_array()
                .unwrap()
                .iter()
                .map(hash)
                .collect();
            let outcome = verify_consistency(a.size, b.size, &a.root, &b.root, &proof);
            assert_eq!(outcome.is_ok(), consistent, "{log} {old}-{new}");
        }
        // The fork agrees with the log up to 900 leaves, not at 1000.
        let (log_1000, fork_1000) = (checkpoint("log", "1000"), checkpoint("fork", "1000"));
        assert_ne!(log_1000.root, fork_1000.root);
        let proof: Vec<Hash> = monitor["fork"]["consistency"]["1000-1100"]
            .as_array()
            .unwrap()
            .iter()
            .map(hash)
            .collect();
        let fork_1100 = checkpoint("fork", "1100");
        assert!(verify_consistency(1000, 1100, &log_1000.root, &fork_1100.root, &proof).is_err());
    }
}

#[test]
fn trust_graph_vectors() {
    rules::trust::trust_graphs();
}

#[test]
fn trust_statement_vectors() {
    rules::trust::trust_statements();
}

mod witness {
    //! `witness.json`: cosignatures, witness policies and the witness's rule.

    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use mandate_core::LogError;
    use mandate_core::tlog::{
        AddCheckpoint, Checkpoint, CosignedLink, Hash, NoteVerifier, Refusal, Submission,
        WitnessPolicy, WitnessSigner, WitnessState, WitnessVerifier, WitnessedLogs,
        verify_witnessed, verify_witnessed_inclusion,
    };
    use serde_json::{Value, json};

    const WITNESS: &str = include_str!("../../tests/vectors/witness.json");

    fn file() -> Value {
        serde_json::from_str(WITNESS).unwrap()
    }

    fn hash(value: &Value) -> Hash {
        STANDARD
            .decode(value.as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap()
    }

    fn seed(value: &Value) -> [u8; 32] {
        let hex = value.as_str().unwrap();
        (0..32)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect::<Vec<_>>()
            .try_into()
            .unwrap()
    }

    fn signer(file: &Value, name: &str) -> WitnessSigner {
        let entry = file["witnesses"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == name)
            .unwrap();
        let signer = WitnessSigner::new(&seed(&entry["seed"]), name).unwrap();
        assert_eq!(signer.vkey(), entry["vkey"]);
        signer
    }

    fn policy(value: &Value) -> Result<WitnessPolicy, &'static str> {
        let witnesses = value["witnesses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| WitnessVerifier::parse(k.as_str().unwrap()).unwrap())
            .collect();
        WitnessPolicy::new(
            witnesses,
            value["threshold"].as_u64().unwrap() as usize,
            value["max_age_seconds"].as_u64().unwrap(),
        )
        .map_err(|e| e.code())
    }

    #[test]
    fn cosignatures_are_made_and_checked_byte_for_byte() {
        let file = file();
        let signing = file["signing"].as_array().unwrap();
        assert!(signing.len() >= 4);
        for case in signing {
            let witness = signer(&file, case["witness"].as_str().unwrap());
            let checkpoint = Checkpoint::parse(case["checkpoint"].as_str().unwrap()).unwrap();
            let line = witness
                .cosign(&checkpoint, case["now"].as_i64().unwrap())
                .unwrap();
            assert_eq!(line, case["expect"]["line"], "{}", case["witness"]);
        }
        let cases = file["cosignatures"].as_array().unwrap();
        assert!(cases.len() >= 9);
        for case in cases {
            let verifier = WitnessVerifier::parse(case["vkey"].as_str().unwrap()).unwrap();
            let checkpoint = Checkpoint::parse(case["checkpoint"].as_str().unwrap()).unwrap();
            let got = match verifier.verify_line(&checkpoint, case["line"].as_str().unwrap()) {
                Ok(timestamp) => json!({ "valid": true, "timestamp": timestamp }),
                Err(error) => json!({ "valid": false, "error": error.code() }),
            };
            assert_eq!(got, case["expect"], "{}", case["name"]);
        }
        for case in file["witness_vkeys"].as_array().unwrap() {
            let got = match WitnessVerifier::parse(case["vkey"].as_str().unwrap()) {
                Ok(key) => {
                    json!({ "valid": true, "name": key.name(), "key_id": format!("{:08x}", key.key_id()) })
                }
                Err(error) => json!({ "valid": false, "error": error.code() }),
            };
            assert_eq!(got, case["expect"], "{}", case["name"]);
        }
        // The log's key is a signed-note key, never a witness's.
        assert_eq!(
            NoteVerifier::parse(file["witnesses"][0]["vkey"].as_str().unwrap()),
            Err(LogError::VkeyUnsupportedType)
        );
    }

    #[test]
    fn policies_and_witnessed_checkpoints() {
        let file = file();
        for case in file["policies"].as_array().unwrap() {
            let got = match policy(&case["policy"]) {
                Ok(_) => json!({ "valid": true }),
                Err(code) => json!({ "valid": false, "error": code }),
            };
            assert_eq!(got, case["expect"], "{}", case["name"]);
        }
        let log_key = NoteVerifier::parse(file["log"]["vkey"].as_str().unwrap()).unwrap();
        let now = file["now"].as_i64().unwrap();
        let cases = file["witnessed"].as_array().unwrap();
        assert!(cases.len() >= 15);
        let mut met = 0;
        for case in cases {
            let outcome = verify_witnessed(
                case["note"].as_str().unwrap(),
                case["origin"].as_str(),
                std::slice::from_ref(&log_key),
                &policy(&case["policy"]).unwrap(),
                now,
            );
            let got = match outcome {
                Ok(w) => {
                    met += 1;
                    json!({
                        "valid": true,
                        "size": w.checkpoint.size,
                        "root": STANDARD.encode(w.checkpoint.root),
                        "cosigned_by": w.cosigned_by.iter()
                            .map(|c| json!({ "name": c.name, "timestamp": c.timestamp }))
                            .collect::<Vec<_>>(),
                    })
                }
                Err(LogError::CosignaturesInsufficient { fresh, threshold }) => json!({
                    "valid": false,
                    "error": "cosignatures_insufficient",
                    "fresh": fresh,
                    "threshold": threshold,
                }),
                Err(error) => json!({ "valid": false, "error": error.code() }),
            };
            assert_eq!(got, case["expect"], "{}", case["name"]);
        }
        assert!(met >= 4 && met < cases.len());
    }

    #[test]
    fn record_proofs_under_a_witness_policy() {
        let file = file();
        let log_key = NoteVerifier::parse(file["log"]["vkey"].as_str().unwrap()).unwrap();
        let proofs = &file["witnessed_proofs"];
        let policy = policy(&proofs["policy"]).unwrap();
        let cases = proofs["cases"].as_array().unwrap();
        assert!(cases.len() >= 15);
        let (mut direct, mut linked) = (0, 0);
        for case in cases {
            let link = case["cosigned"].as_object().map(|link| CosignedLink {
                checkpoint: link["checkpoint"].as_str().unwrap().to_owned(),
                consistency: link["consistency"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(hash)
                    .collect(),
            });
            let leaf = STANDARD.decode(case["leaf"].as_str().unwrap()).unwrap();
            let outcome = verify_witnessed_inclusion(
                case["proof"].as_str().unwrap(),
                &leaf,
                file["log"]["origin"].as_str(),
                std::slice::from_ref(&log_key),
                link.as_ref(),
                &policy,
                case["now"].as_i64().unwrap(),
            );
            let got = match outcome {
                Ok(w) => {
                    if w.linked {
                        linked += 1;
                    } else {
                        direct += 1;
                    }
                    json!({
                        "valid": true,
                        "size": w.checkpoint.size,
                        "root": STANDARD.encode(w.checkpoint.root),
                        "linked": w.linked,
                        "witnessed": {
                            "size": w.witnessed.checkpoint.size,
                            "root": STANDARD.encode(w.witnessed.checkpoint.root),
                            "cosigned_by": w.witnessed.cosigned_by.iter()
                                .map(|c| json!({ "name": c.name, "timestamp": c.timestamp }))
                                .collect::<Vec<_>>(),
                        },
                    })
                }
                Err(LogError::CosignaturesInsufficient { fresh, threshold }) => json!({
                    "valid": false,
                    "error": "cosignatures_insufficient",
                    "fresh": fresh,
                    "threshold": threshold,
                }),
                Err(error) => json!({ "valid": false, "error": error.code() }),
            };
            assert_eq!(got, case["expect"], "{}", case["name"]);
        }
        assert!(direct >= 2 && linked >= 3 && direct + linked < cases.len());
    }

    #[test]
    fn the_witness_rule() {
        let file = file();
        let logs: WitnessedLogs = file["witness"]["logs"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(origin, keys)| {
                let keys = keys
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|k| NoteVerifier::parse(k.as_str().unwrap()).unwrap())
                    .collect();
                (origin.clone(), keys)
            })
            .collect();
        let witness = signer(&file, file["witnesses"][0]["name"].as_str().unwrap());
        let now = file["now"].as_i64().unwrap();
        let cases = file["witness"]["cases"].as_array().unwrap();
        assert!(cases.len() >= 18);
        let mut statuses = std::collections::BTreeSet::new();
        for case in cases {
            let state = match &case["state"] {
                Value::Null => None,
                s => Some(WitnessState {
                    size: s["size"].as_u64().unwrap(),
                    root: hash(&s["root"]),
                }),
            };
            let outcome = AddCheckpoint::parse(case["body"].as_str().unwrap())
                .map_err(Refusal::BadRequest)
                .and_then(|request| Submission::route(&logs, &request))
                .and_then(|submission| submission.apply(state.as_ref()));
            let got = match outcome {
                Ok(accepted) => json!({
                    "accepted": true,
                    "state": { "size": accepted.state.size, "root": STANDARD.encode(accepted.state.root) },
                    "cosignature": witness.cosign(&accepted.checkpoint, now).unwrap(),
                }),
                Err(refusal) => {
                    statuses.insert(refusal.status());
                    let mut got = json!({
                        "accepted": false,
                        "status": refusal.status(),
                        "refusal": refusal.code(),
                    });
                    if let Some(cause) = refusal.cause() {
                        got["error"] = json!(cause.code());
                    }
                    match refusal {
                        Refusal::Conflict { size } => got["size"] = json!(size),
                        Refusal::SplitView {
                            size,
                            known,
                            submitted,
                        } => {
                            got["size"] = json!(size);
                            got["known"] = json!(STANDARD.encode(known));
                            got["submitted"] = json!(STANDARD.encode(submitted));
                        }
                        Refusal::UnknownOrigin { origin } => got["origin"] = json!(origin),
                        _ => {}
                    }
                    got
                }
            };
            assert_eq!(got, case["expect"], "{}", case["name"]);
        }
        assert_eq!(
            statuses.into_iter().collect::<Vec<_>>(),
            vec![400, 403, 404, 409, 422]
        );
    }
}
