//! The judge of the rule vectors in `tests/vectors/` (`status`,
//! `governance`, `refusals`, `counts`, `budgets`, `roles`, `approvals`, `args`,
//! the draft's encoding examples of `status_list`, the payloads and event
//! times of `webhooks`, `traceparent`, and `trust` (which the SDK also
//! exports: the Node suite runs it there too): rules the server applies and the
//! SDK does not export. This one source is compiled twice: into
//! core's native `vectors` test, and into the wasm façade's
//! `rule_vectors` test, which runs it as wasm32 under Node. Each function
//! panics at the first case whose verdict differs from the file's.

use std::collections::BTreeMap;

use mandate_core::{
    AgentId, AssuranceLevel, Bits, Claims, Constraints, CountsChange, DenyReason, Framework,
    HumanRef, IssueError, Jti, Outcome, Permission, Policy, Rating, RecordOrigin, RecordState,
    Role, RootIssue, Scope, Status, StatusList, StatusType, TokenRequest, TokenStatus, Ulid, Usage,
    Usd, check_chain_budgets, check_chain_extra_spend, check_fan_out, delegate, issue_root,
};
use mandate_core::{EventTime, EventType, SpanId, TraceError, TraceId, TraceParent, webhook};
use serde::Deserialize;

pub mod approvals;
pub mod args;
pub mod trust;

const STATUS: &str = include_str!("../../../tests/vectors/status.json");
const GOVERNANCE: &str = include_str!("../../../tests/vectors/governance.json");
const REFUSALS: &str = include_str!("../../../tests/vectors/refusals.json");
const COUNTS: &str = include_str!("../../../tests/vectors/counts.json");
const BUDGETS: &str = include_str!("../../../tests/vectors/budgets.json");
const ROLES: &str = include_str!("../../../tests/vectors/roles.json");
const STATUS_LIST: &str = include_str!("../../../tests/vectors/status_list.json");

fn read<T: serde::de::DeserializeOwned>(text: &str) -> T {
    serde_json::from_str(text).unwrap()
}

#[derive(Deserialize)]
struct StatusFile {
    cases: Vec<StatusCase>,
}

#[derive(Deserialize)]
struct StatusCase {
    name: String,
    exp: i64,
    revoked: bool,
    now: i64,
    expect: StatusExpect,
}

#[derive(Deserialize, Debug, PartialEq)]
struct StatusExpect {
    status: TokenStatus,
    deny_reason: Option<DenyReason>,
}

/// `TokenStatus::at`, its name and its deny reason.
pub fn token_status() {
    let file: StatusFile = read(STATUS);
    assert!(file.cases.len() >= 10);
    for case in &file.cases {
        let status = TokenStatus::at(case.exp, case.revoked, case.now);
        let got = StatusExpect {
            status,
            deny_reason: status.deny_reason(),
        };
        assert_eq!(got, case.expect, "{}", case.name);
        assert_eq!(
            serde_json::to_value(status).unwrap(),
            status.as_str(),
            "{}",
            case.name
        );
    }
}

#[derive(Deserialize)]
struct GovernanceFile {
    tokens: BTreeMap<String, Claims>,
    cases: Vec<GovernanceCase>,
}

#[derive(Deserialize)]
struct GovernanceCase {
    name: String,
    token: String,
    jti: Jti,
    expect: bool,
}

/// `Claims::is_governed_by`.
pub fn governance() {
    let file: GovernanceFile = read(GOVERNANCE);
    assert!(file.cases.len() >= 10);
    for case in &file.cases {
        let token = &file.tokens[&case.token];
        assert_eq!(
            token.is_governed_by(&case.jti),
            case.expect,
            "{}",
            case.name
        );
    }
}

#[derive(Deserialize)]
struct RefusalFile {
    issued_at: i64,
    delegations: Vec<DelegationCase>,
    fan_out: Vec<FanOutCase>,
    issue_root: Vec<IssueCase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Asked {
    resources: Vec<String>,
    actions: Vec<String>,
    #[serde(default)]
    frameworks: Vec<String>,
    #[serde(default)]
    ttl_seconds: Option<u64>,
    #[serde(default)]
    depth: u32,
}

impl Asked {
    fn request(&self) -> TokenRequest {
        let frameworks = self
            .frameworks
            .iter()
            .map(|name| Framework::parse(name).unwrap())
            .collect();
        TokenRequest {
            agent_id: AgentId::parse("planner").unwrap(),
            scope: Scope::parse(&self.resources, &self.actions).unwrap(),
            constraints: Constraints::default(),
            policy: Policy::new(frameworks).unwrap(),
            ttl_seconds: self.ttl_seconds,
            holder: None,
        }
    }
}

#[derive(Deserialize)]
struct DelegationCase {
    name: String,
    parent: Asked,
    request: Asked,
    now: i64,
    expect: Refusal,
}

#[derive(Deserialize)]
struct FanOutCase {
    children: u64,
    expect: Refusal,
}

#[derive(Deserialize)]
struct IssueCase {
    name: String,
    ttl_seconds: Option<u64>,
    now: i64,
    expect: Refusal,
}

#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct Refusal {
    ok: bool,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    deny_reason: Option<DenyReason>,
}

impl Refusal {
    fn of<T>(outcome: Result<T, IssueError>) -> Refusal {
        match outcome {
            Ok(_) => Refusal {
                ok: true,
                error: None,
                deny_reason: None,
            },
            Err(error) => Refusal {
                ok: false,
                error: Some(error.code().to_owned()),
                deny_reason: error.deny_reason(),
            },
        }
    }
}

/// Ids of the vector tokens: fixed, whatever `now` a case gives.
fn ulid(issued_at: i64, n: u32) -> Ulid {
    let mut random = [0; 10];
    random[6..].copy_from_slice(&n.to_be_bytes());
    Ulid::new(u64::try_from(issued_at).unwrap() * 1000, random).unwrap()
}

fn root(issued_at: i64, request: TokenRequest, now: i64) -> Result<Claims, IssueError> {
    issue_root(
        request,
        RootIssue {
            issuer: "https://mandate.example".to_owned(),
            human: HumanRef::from_digest(&[9; 32]),
            level: AssuranceLevel::L1,
            now,
            jti: ulid(issued_at, 1),
            provenance: ulid(issued_at, 2),
            status: None,
        },
    )
}

/// The parent of a delegation case: a root issued at `issued_at`, delegated
/// `depth` times with the same scope.
fn parent(issued_at: i64, asked: &Asked) -> Claims {
    let mut parent = root(issued_at, asked.request(), issued_at).unwrap();
    for n in 0..asked.depth {
        let same = TokenRequest {
            ttl_seconds: None,
            policy: Policy::default(),
            ..asked.request()
        };
        parent = delegate(&parent, same, issued_at, ulid(issued_at, 10 + n), None).unwrap();
    }
    assert_eq!(parent.svc_depth, asked.depth);
    parent
}

/// The error codes and deny reasons of `delegate`, `check_fan_out` and
/// `issue_root`.
pub fn refusals() {
    let file: RefusalFile = read(REFUSALS);
    assert!(file.delegations.len() >= 10);
    for case in &file.delegations {
        let parent = parent(file.issued_at, &case.parent);
        let jti = ulid(file.issued_at, 99);
        let got = Refusal::of(delegate(
            &parent,
            case.request.request(),
            case.now,
            jti,
            None,
        ));
        assert_eq!(got, case.expect, "{}", case.name);
    }
    for case in &file.fan_out {
        let got = Refusal::of(check_fan_out(case.children));
        assert_eq!(got, case.expect, "{} children", case.children);
    }
    for case in &file.issue_root {
        let request = Asked {
            resources: vec!["crm:*".to_owned()],
            actions: vec!["read".to_owned()],
            frameworks: vec![],
            ttl_seconds: case.ttl_seconds,
            depth: 0,
        };
        let got = Refusal::of(root(file.issued_at, request.request(), case.now));
        assert_eq!(got, case.expect, "{}", case.name);
    }
}

/// A record state as the vectors write it: its stored parts.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct StoredState {
    status: Status,
    #[serde(default)]
    result: Option<Outcome>,
    #[serde(default)]
    rating: Option<Rating>,
    #[serde(default)]
    reason: Option<DenyReason>,
}

impl StoredState {
    fn state(&self) -> RecordState {
        RecordState::from_parts(self.status, self.result, self.rating, self.reason).unwrap()
    }
}

#[derive(Deserialize)]
struct CountsFile {
    cases: Vec<CountsCase>,
}

#[derive(Deserialize)]
struct CountsCase {
    origin: RecordOrigin,
    before: Option<StoredState>,
    after: StoredState,
    expect: CountsChange,
}

/// `CountsChange::of` for every pair of states and origins.
pub fn counts() {
    let file: CountsFile = read(COUNTS);
    assert!(file.cases.len() >= 500);
    for case in &file.cases {
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
struct BudgetFile {
    cases: Vec<BudgetCase>,
}

#[derive(Deserialize)]
struct BudgetCase {
    name: String,
    chain: Vec<BudgetedToken>,
    spend: Usd,
    expect: BudgetExpect,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetedToken {
    constraints: Constraints,
    used: Used,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Used {
    spent: Usd,
    actions: u64,
}

#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct BudgetExpect {
    check_chain_budgets: Option<String>,
    check_chain_extra_spend: Option<String>,
}

/// `check_chain_budgets` and `check_chain_extra_spend`.
pub fn budgets() {
    let file: BudgetFile = read(BUDGETS);
    assert!(file.cases.len() >= 10);
    for case in &file.cases {
        let chain: Vec<(Constraints, Usage)> = case
            .chain
            .iter()
            .map(|token| {
                let used = Usage {
                    spent: token.used.spent,
                    actions: token.used.actions,
                };
                (token.constraints.clone(), used)
            })
            .collect();
        let code = |outcome: Result<(), mandate_core::BudgetExceeded>| {
            outcome.err().map(|exceeded| exceeded.code().to_owned())
        };
        let got = BudgetExpect {
            check_chain_budgets: code(check_chain_budgets(&chain, case.spend)),
            check_chain_extra_spend: code(check_chain_extra_spend(&chain, case.spend)),
        };
        assert_eq!(got, case.expect, "{}", case.name);
    }
}

#[derive(Deserialize)]
struct RolesFile {
    cases: Vec<RoleCase>,
}

#[derive(Deserialize)]
struct RoleCase {
    name: String,
    role: Role,
    permission: Permission,
    expect: bool,
}

/// The permission table: `Role::allows` for every role and permission, and
/// every pair listed.
pub fn roles() {
    let file: RolesFile = read(ROLES);
    assert_eq!(file.cases.len(), Role::ALL.len() * Permission::ALL.len());
    for case in &file.cases {
        assert_eq!(
            case.role.allows(case.permission),
            case.expect,
            "{}",
            case.name
        );
    }
    for role in Role::ALL {
        for permission in Permission::ALL {
            assert!(
                file.cases
                    .iter()
                    .any(|c| c.role == role && c.permission == permission),
                "{role} {permission:?} is not in the file"
            );
        }
    }
}

#[derive(Deserialize)]
struct StatusListFile {
    encodings: Vec<Encoding>,
}

#[derive(Deserialize)]
struct Encoding {
    name: String,
    bits: u64,
    lst: String,
    /// Short examples: every status, the packed bytes and their compression.
    #[serde(default)]
    statuses: Option<Vec<u8>>,
    #[serde(default)]
    bytes_hex: Option<String>,
    #[serde(default)]
    compressed_hex: Option<String>,
    /// Long examples: `size` entries, zero but for `set`.
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    set: Vec<(u64, u8)>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The IETF draft's encoding examples: statuses packed from the least
/// significant bit, compressed as the draft shows, and `lst` read back.
pub fn status_list_encodings() {
    let file: StatusListFile = read(STATUS_LIST);
    assert!(file.encodings.len() >= 4);
    for case in &file.encodings {
        let bits = Bits::from_number(case.bits).unwrap();
        let read = StatusList::from_lst(bits, &case.lst).unwrap();
        if let Some(statuses) = &case.statuses {
            let mut list = StatusList::with_bits(bits, statuses.len() as u64).unwrap();
            for (idx, value) in statuses.iter().enumerate() {
                list.set(idx as u64, StatusType(*value)).unwrap();
            }
            assert_eq!(Some(hex(list.as_bytes())), case.bytes_hex, "{}", case.name);
            assert_eq!(
                Some(hex(&list.compress())),
                case.compressed_hex,
                "{}",
                case.name
            );
            assert_eq!(list.lst(), case.lst, "{}", case.name);
            assert_eq!(read, list, "{}", case.name);
        }
        if let Some(size) = case.size {
            assert_eq!(read.len(), size, "{}", case.name);
            let mut expected = StatusList::with_bits(bits, size).unwrap();
            for (idx, value) in &case.set {
                expected.set(*idx, StatusType(*value)).unwrap();
            }
            assert_eq!(read, expected, "{}", case.name);
            for (idx, value) in &case.set {
                assert_eq!(
                    read.get(*idx),
                    Some(StatusType(*value)),
                    "{} {idx}",
                    case.name
                );
            }
        }
    }
}

const WEBHOOKS: &str = include_str!("../../../tests/vectors/webhooks.json");
const TRACEPARENT: &str = include_str!("../../../tests/vectors/traceparent.json");

#[derive(Deserialize)]
struct WebhookFile {
    event_types: Vec<String>,
    payloads: Vec<PayloadCase>,
    event_times: EventTimes,
}

#[derive(Deserialize)]
struct PayloadCase {
    name: String,
    #[serde(rename = "type")]
    event_type: String,
    at_ms: i64,
    data: serde_json::Value,
    expect: PayloadExpect,
}

#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct PayloadExpect {
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct EventTimes {
    valid: Vec<EventTimeCase>,
    invalid: Vec<EventTimeRefusal>,
}

#[derive(Deserialize)]
struct EventTimeCase {
    at_ms: i64,
    text: String,
}

#[derive(Deserialize)]
struct EventTimeRefusal {
    text: String,
    error: String,
}

/// Mandate's event payloads as `payload` writes them (RFC 8785), the
/// event types' names, and event times both ways.
pub fn webhook_payloads() {
    let file: WebhookFile = read(WEBHOOKS);
    let names: Vec<&str> = EventType::ALL.iter().map(|e| e.as_str()).collect();
    assert_eq!(file.event_types, names);
    assert!(file.payloads.len() >= 15);
    for case in &file.payloads {
        let written = case.event_type.parse::<EventType>().and_then(|event_type| {
            let at = EventTime::from_unix_millis(case.at_ms)?;
            webhook::payload(event_type, at, &case.data)
        });
        let got = match written {
            Ok(bytes) => PayloadExpect {
                body: Some(String::from_utf8(bytes).unwrap()),
                error: None,
            },
            Err(error) => PayloadExpect {
                body: None,
                error: Some(error.code().to_owned()),
            },
        };
        assert_eq!(got, case.expect, "{}", case.name);
    }
    for case in &file.event_times.valid {
        let time = EventTime::from_unix_millis(case.at_ms).unwrap();
        assert_eq!(time.to_string(), case.text);
        assert_eq!(EventTime::parse(&case.text), Ok(time));
    }
    for case in &file.event_times.invalid {
        let got = EventTime::parse(&case.text).map_err(|e| e.code());
        assert_eq!(got, Err(case.error.as_str()), "{}", case.text);
    }
}

#[derive(Deserialize)]
struct TraceFile {
    parse: Vec<TraceCase>,
    children: Vec<ChildCase>,
    starts: Vec<StartCase>,
}

#[derive(Deserialize)]
struct TraceCase {
    name: String,
    header: String,
    expect: TraceExpect,
}

#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct TraceExpect {
    valid: bool,
    #[serde(default)]
    trace_id: Option<String>,
    #[serde(default)]
    parent_id: Option<String>,
    #[serde(default)]
    flags: Option<u8>,
    #[serde(default)]
    sampled: Option<bool>,
    #[serde(default)]
    random: Option<bool>,
    #[serde(default)]
    header: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct HeaderExpect {
    #[serde(default)]
    header: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

impl HeaderExpect {
    fn of(outcome: Result<TraceParent, TraceError>) -> HeaderExpect {
        match outcome {
            Ok(header) => HeaderExpect {
                header: Some(header.to_string()),
                error: None,
            },
            Err(error) => HeaderExpect {
                header: None,
                error: Some(error.code().to_owned()),
            },
        }
    }
}

#[derive(Deserialize)]
struct ChildCase {
    name: String,
    parent: String,
    span_id: String,
    expect: HeaderExpect,
}

#[derive(Deserialize)]
struct StartCase {
    name: String,
    trace_id: String,
    span_id: String,
    sampled: bool,
    expect: HeaderExpect,
}

fn bytes_of<const N: usize>(hex: &str) -> [u8; N] {
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    bytes.try_into().unwrap()
}

/// W3C `traceparent` values read, child spans' headers and new traces.
pub fn traceparents() {
    let file: TraceFile = read(TRACEPARENT);
    assert!(file.parse.len() >= 40);
    for case in &file.parse {
        let got = match TraceParent::parse(&case.header) {
            Ok(parsed) => TraceExpect {
                valid: true,
                trace_id: Some(parsed.trace_id.to_string()),
                parent_id: Some(parsed.parent_id.to_string()),
                flags: Some(parsed.flags.bits()),
                sampled: Some(parsed.flags.sampled()),
                random: Some(parsed.flags.random()),
                header: Some(parsed.to_string()),
                error: None,
            },
            Err(error) => TraceExpect {
                valid: false,
                trace_id: None,
                parent_id: None,
                flags: None,
                sampled: None,
                random: None,
                header: None,
                error: Some(error.code().to_owned()),
            },
        };
        assert_eq!(got, case.expect, "{}", case.name);
    }
    for case in &file.children {
        let child = TraceParent::parse(&case.parent)
            .and_then(|parent| Ok(parent.child(SpanId::from_bytes(bytes_of(&case.span_id))?)));
        assert_eq!(HeaderExpect::of(child), case.expect, "{}", case.name);
    }
    for case in &file.starts {
        let started = TraceId::from_bytes(bytes_of(&case.trace_id)).and_then(|trace| {
            let span = SpanId::from_bytes(bytes_of(&case.span_id))?;
            Ok(TraceParent::start(trace, span, case.sampled))
        });
        assert_eq!(HeaderExpect::of(started), case.expect, "{}", case.name);
    }
}
