//! The judge of `tests/vectors/approvals.json`: approval before the act —
//! the `require_approval` constraint, its narrowing and delegation, the
//! record states and events of an approval, the counts they move, and the
//! leaves of a decision. Compiled natively and for wasm32 with the rest of
//! `rules`.

use mandate_core::{
    Action, ApprovalRequirement, Constraints, CountsChange, DenyReason, Grant, IssueError,
    LogEntry, Outcome, Policy, Rating, RecordError, RecordEvent, RecordOrigin, RecordState,
    Resource, Scope, Usd, chain_requires_approval, check_constraints_reachable, check_narrowing,
    delegated_grant, transition,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{StoredState, read};

const APPROVALS: &str = include_str!("../../../tests/vectors/approvals.json");

#[derive(Deserialize)]
struct ApprovalsFile {
    requirements: Vec<RequirementCase>,
    applies: Vec<AppliesCase>,
    chains: Vec<ChainCase>,
    narrowing: Vec<NarrowingCase>,
    delegation: Vec<DelegationCase>,
    reachable: Vec<ReachableCase>,
    attempts: Vec<AttemptCase>,
    transitions: Vec<TransitionCase>,
    counts: Vec<CountsCase>,
    leaves: Vec<LeafCase>,
}

fn file() -> ApprovalsFile {
    read(APPROVALS)
}

#[derive(Deserialize)]
struct RequirementCase {
    name: String,
    require_approval: Value,
    expect: String,
}

/// The members of a requirement as text, read apart from core's own
/// parsing so that each refused value is named by its code.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequirement {
    #[serde(default)]
    actions: Option<Vec<String>>,
    #[serde(default)]
    resources: Option<Vec<String>>,
    #[serde(default)]
    spend_over_usd: Option<f64>,
}

fn requirement_verdict(value: &Value) -> String {
    let Ok(raw) = serde_json::from_value::<RawRequirement>(value.clone()) else {
        return "malformed".to_owned();
    };
    let spend = match raw.spend_over_usd.map(Usd::from_f64).transpose() {
        Ok(spend) => spend,
        Err(error) => return error.code().to_owned(),
    };
    match ApprovalRequirement::parse(raw.actions.as_deref(), raw.resources.as_deref(), spend) {
        Ok(_) => "ok".to_owned(),
        Err(error) => error.code().to_owned(),
    }
}

/// The forms of `require_approval`, read from text members and as JSON.
pub fn approval_requirements() {
    let file = file();
    assert!(file.requirements.len() >= 15);
    for case in &file.requirements {
        let verdict = requirement_verdict(&case.require_approval);
        assert_eq!(verdict, case.expect, "{}", case.name);
        // Read as JSON (as in svc_constraints): the same verdict, and a
        // requirement that writes itself back as it was read.
        let read = serde_json::from_value::<ApprovalRequirement>(case.require_approval.clone());
        assert_eq!(read.is_ok(), case.expect == "ok", "{}", case.name);
        if let Ok(requirement) = read {
            let written = serde_json::to_value(&requirement).unwrap();
            let again: ApprovalRequirement = serde_json::from_value(written).unwrap();
            assert_eq!(again, requirement, "{}", case.name);
            let constraints: Constraints =
                serde_json::from_value(json!({"require_approval": case.require_approval})).unwrap();
            assert_eq!(
                constraints.require_approval,
                Some(requirement),
                "{}",
                case.name
            );
        }
    }
}

#[derive(Deserialize)]
struct AppliesCase {
    name: String,
    require_approval: ApprovalRequirement,
    action: Action,
    resource: Resource,
    spend: Usd,
    expect: bool,
}

#[derive(Deserialize)]
struct ChainCase {
    name: String,
    chain: Vec<Constraints>,
    action: Action,
    resource: Resource,
    spend: Usd,
    expect: bool,
}

/// `ApprovalRequirement::applies` and `chain_requires_approval`.
pub fn approval_matching() {
    let file = file();
    assert!(file.applies.len() >= 10);
    for case in &file.applies {
        let got = case
            .require_approval
            .applies(&case.action, &case.resource, case.spend);
        assert_eq!(got, case.expect, "{}", case.name);
        // A requirement alone is a chain of one.
        let one = Constraints {
            require_approval: Some(case.require_approval.clone()),
            ..Constraints::default()
        };
        assert_eq!(
            chain_requires_approval([&one], &case.action, &case.resource, case.spend),
            case.expect,
            "{}",
            case.name
        );
    }
    assert!(file.chains.len() >= 5);
    for case in &file.chains {
        let got = chain_requires_approval(&case.chain, &case.action, &case.resource, case.spend);
        assert_eq!(got, case.expect, "{}", case.name);
    }
}

/// A grant as the vectors write it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrantJson {
    resources: Vec<String>,
    actions: Vec<String>,
    #[serde(default)]
    constraints: Constraints,
    #[serde(default)]
    policy: Policy,
    exp: i64,
}

impl GrantJson {
    fn grant(&self) -> Grant {
        Grant {
            scope: Scope::parse(&self.resources, &self.actions).unwrap(),
            constraints: self.constraints.clone(),
            policy: self.policy.clone(),
            expires_at: self.exp,
            audience: None,
        }
    }
}

#[derive(Deserialize)]
struct NarrowingCase {
    name: String,
    parent: GrantJson,
    child: GrantJson,
    expect: Value,
}

#[derive(Deserialize)]
struct DelegationCase {
    name: String,
    parent: GrantJson,
    request: GrantJson,
    expect: Value,
}

fn violations(error: &IssueError) -> Vec<Value> {
    match error {
        IssueError::Widening(widening) => widening
            .violations
            .iter()
            .map(|v| json!({"field": v.field(), "code": v.code()}))
            .collect(),
        _ => Vec::new(),
    }
}

/// `check_narrowing` and `delegated_grant` with approval requirements.
pub fn approval_narrowing() {
    let file = file();
    assert!(file.narrowing.len() >= 10);
    for case in &file.narrowing {
        let got = match check_narrowing(&case.child.grant(), &case.parent.grant()) {
            Ok(()) => json!({"ok": true, "violations": []}),
            Err(widening) => {
                json!({"ok": false, "violations": violations(&IssueError::Widening(widening))})
            }
        };
        assert_eq!(got, case.expect, "{}", case.name);
    }
    assert!(file.delegation.len() >= 8);
    for case in &file.delegation {
        let got = match delegated_grant(case.request.grant(), &case.parent.grant()) {
            Ok(grant) => {
                let expected: GrantJson =
                    serde_json::from_value(case.expect["grant"].clone()).unwrap();
                assert_eq!(grant, expected.grant(), "{}", case.name);
                json!({"ok": true, "grant": case.expect["grant"]})
            }
            Err(error) => json!({
                "ok": false, "error": error.code(), "violations": violations(&error),
            }),
        };
        assert_eq!(got, case.expect, "{}", case.name);
    }
}

#[derive(Deserialize)]
struct ReachableCase {
    name: String,
    grant: GrantJson,
    expect: Value,
}

/// `check_constraints_reachable`: the rule at issue, a requirement that
/// could never match under its own grant.
pub fn approval_reachability() {
    let file = file();
    assert!(file.reachable.len() >= 6);
    for case in &file.reachable {
        let grant = case.grant.grant();
        let got = match check_constraints_reachable(&grant.scope, &grant.constraints) {
            Ok(()) => json!({"ok": true}),
            Err(error) => json!({"ok": false, "error": error.code()}),
        };
        assert_eq!(got, case.expect, "{}", case.name);
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AttemptCase {
    path: String,
    deny_reason: Option<DenyReason>,
    needs_approval: bool,
    expect: StoredState,
}

/// An event as the vectors write it.
#[derive(Deserialize, Debug)]
#[serde(tag = "event", rename_all = "snake_case", deny_unknown_fields)]
enum EventJson {
    Authorize {
        deny_reason: Option<DenyReason>,
    },
    RequestApproval,
    RecordAction {
        deny_reason: Option<DenyReason>,
        result: Outcome,
    },
    Approve,
    DenyApproval,
    ExpireApproval,
    Complete {
        result: Outcome,
    },
    Rate {
        rating: Rating,
    },
}

fn decision(deny_reason: Option<DenyReason>) -> Result<(), DenyReason> {
    deny_reason.map_or(Ok(()), Err)
}

impl EventJson {
    fn event(&self) -> RecordEvent {
        match *self {
            EventJson::Authorize { deny_reason } => RecordEvent::Authorize(decision(deny_reason)),
            EventJson::RequestApproval => RecordEvent::RequestApproval,
            EventJson::RecordAction {
                deny_reason,
                result,
            } => RecordEvent::RecordAction {
                decision: decision(deny_reason),
                result,
            },
            EventJson::Approve => RecordEvent::Approve,
            EventJson::DenyApproval => RecordEvent::DenyApproval,
            EventJson::ExpireApproval => RecordEvent::ExpireApproval,
            EventJson::Complete { result } => RecordEvent::Complete(result),
            EventJson::Rate { rating } => RecordEvent::Rate(rating),
        }
    }
}

#[derive(Deserialize)]
struct TransitionCase {
    before: Option<StoredState>,
    event: EventJson,
    expect: TransitionExpect,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TransitionExpect {
    #[serde(default)]
    state: Option<StoredState>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct CountsCase {
    origin: RecordOrigin,
    before: Option<StoredState>,
    after: StoredState,
    expect: CountsChange,
}

/// The events of an attempt, `transition` for every state and event of an
/// approval, and `CountsChange::of` along its paths.
pub fn approval_lifecycle() {
    let file = file();
    assert_eq!(file.attempts.len(), 8);
    for case in &file.attempts {
        let decision = decision(case.deny_reason);
        let event = match case.path.as_str() {
            "authorize" => RecordEvent::authorize(decision, case.needs_approval),
            "record_action" => {
                RecordEvent::record_action(decision, case.needs_approval, Outcome::Success)
            }
            other => panic!("unknown path {other}"),
        };
        assert_eq!(
            transition(None, event),
            Ok(case.expect.state()),
            "{} {:?} {}",
            case.path,
            case.deny_reason,
            case.needs_approval
        );
    }
    assert!(file.transitions.len() >= 80);
    for case in &file.transitions {
        let before = case.before.as_ref().map(StoredState::state);
        let got = transition(before, case.event.event());
        let expected: Result<RecordState, String> = match &case.expect {
            TransitionExpect {
                state: Some(state),
                error: None,
            } => Ok(state.state()),
            TransitionExpect {
                state: None,
                error: Some(code),
            } => Err(code.clone()),
            _ => panic!("a transition expects a state or an error"),
        };
        let got = got.map_err(|error: RecordError| error.code().to_owned());
        assert_eq!(got, expected, "{:?} {:?}", case.before, case.event);
    }
    assert!(file.counts.len() >= 6);
    for case in &file.counts {
        let before = case.before.as_ref().map(StoredState::state);
        let got = CountsChange::of(case.origin, before.as_ref(), &case.after.state());
        assert_eq!(
            got, case.expect,
            "{:?}: {:?} -> {:?}",
            case.origin, case.before, case.after
        );
    }
}

#[derive(Deserialize)]
struct LeafCase {
    name: String,
    leaf: String,
    expect: String,
}

/// `LogEntry::from_leaf` for the leaves of approvals: a valid one reads
/// back to the same bytes.
pub fn approval_leaves() {
    let file = file();
    assert!(file.leaves.len() >= 10);
    for case in &file.leaves {
        let got = match LogEntry::from_leaf(case.leaf.as_bytes()) {
            Ok(entry) => {
                assert_eq!(
                    entry.to_leaf().unwrap(),
                    case.leaf.as_bytes(),
                    "{}",
                    case.name
                );
                "ok".to_owned()
            }
            Err(error) => error.code().to_owned(),
        };
        assert_eq!(got, case.expect, "{}", case.name);
    }
}
