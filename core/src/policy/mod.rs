//! Argument constraints: which arguments a grant allows an action to be
//! taken with (`svc_constraints.args`), in UCAN 1.0's policy language,
//! judged in three-valued logic so that what a rule cannot see is never
//! permitted.
//!
//! # Rules
//! `svc_constraints.args` is a list of 1–[`MAX_ARGS_RULES`] rules
//! `{"actions"?: [...], "resources"?: [...], "pol": [statement, ...]}`. A
//! rule applies to an attempt whose action it lists (absent: every action)
//! and whose resource one of its patterns covers (absent: every resource).
//! An attempt is permitted only when every statement of every rule that
//! applies is *true* ([`check_args`]); arguments absent where a rule applies
//! are denied `args_required`, a statement not true `args_not_permitted`.
//!
//! # Statements
//! UCAN 1.0's policy language: `["==", sel, value]`, `["!=", sel, value]`,
//! `["<" | "<=" | ">" | ">=", sel, number]`, `["like", sel, pattern]`
//! (`*` any run of characters, `\*` a literal `*`), `["not", s]`,
//! `["and", [s...]]`, `["or", [s...]]`, `["all", sel, s]`, `["any", sel,
//! s]`, with the selectors of [`selector`]. Parsed into a typed tree
//! ([`Statement`]); anything else is refused with the JSON path of the
//! fault (`args[2].pol[1][0]`).
//!
//! # Three-valued logic (beyond UCAN: fail closed)
//! A comparison whose selector finds nothing, or finds the wrong type (a
//! string for `<`, a number for `like`; `all`/`any` over what is neither
//! an array nor an object) is [`Truth::Undefined`]. `not` of undefined is
//! undefined; `and`, `or`, `all` and `any` follow Kleene's tables. A rule
//! permits only when *true*: `["not", ["==", ".to", "x"]]` and
//! `["!=", ".to", "x"]` do not permit an attempt without `.to`. A `?`
//! selector that finds nothing yields `null`, which is found. As in UCAN,
//! an empty `and`, `or` or `all` holds; an empty `any` does not.
//!
//! # Arguments
//! [`Args`]: a JSON object read strictly — a member named twice at any
//! depth or a number beyond ±(2^53 − 1) is refused, so Rust, JavaScript
//! and Python read the same thing — at most [`MAX_ARGS_BYTES`] as RFC 8785
//! canonical JSON, hashed (`args_hash`) over that form. Numbers compare by
//! value (`1`, `1.0` and `1e0` are equal).
//!
//! # Narrowing
//! A child keeps every rule of its parent unchanged and may add rules
//! ([`check_rules_kept`]): rules AND together, so adding one only narrows.

pub mod selector;
mod statement;

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::ids::ArgsHash;
use crate::json::{Strict, StrictRefusal, write_canonical};
use crate::limits::{
    MAX_ARGS_BYTES, MAX_ARGS_RULES, MAX_ARGS_RULES_BYTES, MAX_JSON_SAFE_INTEGER, MAX_LIST_LEN,
};
use crate::scope::{Action, Resource, ResourcePattern, Violation};

pub use selector::Selector;
pub use statement::{Comparison, Glob, Statement};

/// The truth of a statement: true, false, or undefined (what it looks at
/// is missing or of the wrong type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Truth {
    True,
    False,
    Undefined,
}

impl From<bool> for Truth {
    fn from(value: bool) -> Truth {
        if value { Truth::True } else { Truth::False }
    }
}

impl Truth {
    /// Kleene negation: undefined stays undefined.
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Truth {
        match self {
            Truth::True => Truth::False,
            Truth::False => Truth::True,
            Truth::Undefined => Truth::Undefined,
        }
    }

    /// Kleene conjunction: false if any is false, else undefined if any is
    /// undefined, else true (true when there are none).
    pub fn all(values: impl IntoIterator<Item = Truth>) -> Truth {
        let mut result = Truth::True;
        for value in values {
            match value {
                Truth::False => return Truth::False,
                Truth::Undefined => result = Truth::Undefined,
                Truth::True => {}
            }
        }
        result
    }

    /// Kleene disjunction: true if any is true, else undefined if any is
    /// undefined, else false (false when there are none).
    pub fn any(values: impl IntoIterator<Item = Truth>) -> Truth {
        let mut result = Truth::False;
        for value in values {
            match value {
                Truth::True => return Truth::True,
                Truth::Undefined => result = Truth::Undefined,
                Truth::False => {}
            }
        }
        result
    }

    /// `true`, `false` or `undefined`.
    pub fn as_str(self) -> &'static str {
        match self {
            Truth::True => "true",
            Truth::False => "false",
            Truth::Undefined => "undefined",
        }
    }
}

/// What is wrong with a policy or a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyFault {
    /// Not a statement: not an array, or the wrong number of parts.
    MalformedStatement,
    /// An operator the language does not have.
    UnknownOperator,
    /// A selector outside the grammar (or not a string).
    MalformedSelector,
    /// A bound of `<`, `<=`, `>`, `>=` that is not a number within
    /// ±(2^53 − 1).
    NotANumber,
    /// A `like` pattern that is not a string, or has a backslash not
    /// before `*`.
    MalformedPattern,
    /// Statements nested deeper than [`crate::limits::MAX_POLICY_DEPTH`].
    TooDeep,
    /// More than [`crate::limits::MAX_POLICY_STATEMENTS`] statements.
    TooManyStatements,
    /// More than [`MAX_ARGS_RULES`] rules.
    TooManyRules,
    /// Rules over [`MAX_ARGS_RULES_BYTES`] as canonical JSON.
    TooLarge,
    /// An empty list (of rules, statements, actions or resources).
    Empty,
    /// A rule that is not an object of `actions`, `resources` and `pol`.
    MalformedRule,
    /// An action or a resource pattern not in the forms of [`crate::scope`],
    /// or listed twice, or more than 64 of them.
    InvalidList,
    /// A member named twice somewhere in the document.
    DuplicateMember,
    /// A number beyond ±(2^53 − 1) somewhere in the document.
    UnsafeNumber,
}

impl PolicyFault {
    /// Stable snake_case code.
    pub fn code(self) -> &'static str {
        match self {
            PolicyFault::MalformedStatement => "malformed_statement",
            PolicyFault::UnknownOperator => "unknown_operator",
            PolicyFault::MalformedSelector => "malformed_selector",
            PolicyFault::NotANumber => "not_a_number",
            PolicyFault::MalformedPattern => "malformed_pattern",
            PolicyFault::TooDeep => "policy_too_deep",
            PolicyFault::TooManyStatements => "too_many_statements",
            PolicyFault::TooManyRules => "too_many_rules",
            PolicyFault::TooLarge => "rules_too_large",
            PolicyFault::Empty => "empty_list",
            PolicyFault::MalformedRule => "malformed_rule",
            PolicyFault::InvalidList => "invalid_rule_list",
            PolicyFault::DuplicateMember => "duplicate_member",
            PolicyFault::UnsafeNumber => "unsafe_number",
        }
    }

    fn message(self) -> &'static str {
        match self {
            PolicyFault::MalformedStatement => {
                "not a statement: an array of an operator and its operands"
            }
            PolicyFault::UnknownOperator => {
                "unknown operator: ==, !=, <, <=, >, >=, like, not, and, or, all, any"
            }
            PolicyFault::MalformedSelector => "malformed selector",
            PolicyFault::NotANumber => "the bound must be a number within ±(2^53 − 1)",
            PolicyFault::MalformedPattern => {
                "a like pattern is a string in which a backslash escapes only `*`"
            }
            PolicyFault::TooDeep => "statements are nested too deep (16 levels at most)",
            PolicyFault::TooManyStatements => "too many statements (64 at most in a policy)",
            PolicyFault::TooManyRules => "too many rules (32 at most)",
            PolicyFault::TooLarge => "the rules are over 4 KiB as canonical JSON",
            PolicyFault::Empty => "must not be empty",
            PolicyFault::MalformedRule => {
                "a rule is an object of pol and optional actions and resources"
            }
            PolicyFault::InvalidList => {
                "1 to 64 distinct actions or resource patterns in their usual forms"
            }
            PolicyFault::DuplicateMember => "a member is named twice",
            PolicyFault::UnsafeNumber => "a number is beyond ±(2^53 − 1)",
        }
    }
}

/// A refused policy or rule, with the JSON path of the fault
/// (`args[2].pol[1][0]`, `require_approval.args[0][1]`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {}", fault.message())]
pub struct PolicyError {
    pub path: String,
    pub fault: PolicyFault,
}

impl PolicyError {
    /// Stable snake_case code of the fault.
    pub fn code(&self) -> &'static str {
        self.fault.code()
    }

    fn at(path: &str, fault: PolicyFault) -> PolicyError {
        PolicyError {
            path: path.to_owned(),
            fault,
        }
    }
}

fn refusal_fault(refusal: StrictRefusal) -> PolicyFault {
    match refusal {
        StrictRefusal::DuplicateMember => PolicyFault::DuplicateMember,
        StrictRefusal::UnsafeNumber => PolicyFault::UnsafeNumber,
    }
}

/// The canonical JSON of a value already read strictly (every number safe).
fn canonical(value: &Value, path: &str) -> Result<Vec<u8>, PolicyError> {
    let mut out = Vec::new();
    write_canonical(value, &mut out)
        .map_err(|_| PolicyError::at(path, PolicyFault::UnsafeNumber))?;
    Ok(out)
}

/// Checks that a value holds no number beyond ±(2^53 − 1) (a value built
/// in code rather than read by [`Strict`]).
fn check_numbers(value: &Value, path: &str) -> Result<(), PolicyError> {
    if numbers_safe(value) {
        Ok(())
    } else {
        Err(PolicyError::at(path, PolicyFault::UnsafeNumber))
    }
}

/// Whether every number in `value` lies within ±(2^53 − 1).
fn numbers_safe(value: &Value) -> bool {
    match value {
        Value::Number(n) => n
            .as_f64()
            .is_some_and(|x| x.abs() <= MAX_JSON_SAFE_INTEGER as f64),
        Value::Array(items) => items.iter().all(numbers_safe),
        Value::Object(members) => members.values().all(numbers_safe),
        _ => true,
    }
}

/// A policy: a non-empty list of statements, all of which must hold. Equal
/// policies have equal canonical JSON. A clone shares the parsed policy
/// (tokens' constraints are cloned on every attempt).
#[derive(Debug, Clone)]
pub struct Pol {
    statements: Arc<[Statement]>,
    source: Arc<Value>,
    canonical: Arc<[u8]>,
}

impl PartialEq for Pol {
    fn eq(&self, other: &Pol) -> bool {
        self.canonical == other.canonical
    }
}

impl Eq for Pol {}

impl Pol {
    /// Parses a policy at `path` (for errors): 1 to 64 statements in all,
    /// nested no deeper than 16.
    pub fn parse(value: &Value, path: &str) -> Result<Pol, PolicyError> {
        check_numbers(value, path)?;
        let Value::Array(items) = value else {
            return Err(PolicyError::at(path, PolicyFault::MalformedStatement));
        };
        if items.is_empty() {
            return Err(PolicyError::at(path, PolicyFault::Empty));
        }
        let mut budget = statement::Budget { statements: 0 };
        let statements = items
            .iter()
            .enumerate()
            .map(|(i, item)| statement::parse(item, &format!("{path}[{i}]"), 1, &mut budget))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Pol {
            statements: statements.into(),
            canonical: canonical(value, path)?.into(),
            source: Arc::new(value.clone()),
        })
    }

    /// Reads and parses a policy from JSON text, strictly.
    pub fn from_json(bytes: &[u8], path: &str) -> Result<Pol, PolicyError> {
        Pol::parse(&read_strict(bytes, path)?, path)
    }

    /// The statements.
    pub fn statements(&self) -> &[Statement] {
        &self.statements
    }

    /// The policy as given.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// The policy's truth over `args`: the Kleene conjunction of its
    /// statements.
    pub fn evaluate(&self, args: &Value) -> Truth {
        Truth::all(self.statements.iter().map(|s| s.evaluate(args)))
    }

    /// The first statement that is not true over `args`, with its truth.
    pub fn first_not_true(&self, args: &Value) -> Option<(usize, Truth)> {
        self.statements
            .iter()
            .map(|s| s.evaluate(args))
            .enumerate()
            .find(|(_, truth)| *truth != Truth::True)
    }

    fn canonical_len(&self) -> usize {
        self.canonical.len()
    }
}

impl Serialize for Pol {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.source.serialize(serializer)
    }
}

/// Reads JSON text strictly (no member twice, every number safe).
fn read_strict(bytes: &[u8], path: &str) -> Result<Value, PolicyError> {
    let Strict(read) = serde_json::from_slice::<Strict>(bytes)
        .map_err(|_| PolicyError::at(path, PolicyFault::MalformedRule))?;
    read.map_err(|refusal| PolicyError::at(path, refusal_fault(refusal)))
}

/// Deserializes through [`Strict`] and a parser taking the value and a path.
fn strict_de<'de, D: Deserializer<'de>, T>(
    deserializer: D,
    path: &str,
    parse: fn(&Value, &str) -> Result<T, PolicyError>,
) -> Result<T, D::Error> {
    let Strict(read) = Strict::deserialize(deserializer)?;
    let value = read.map_err(|refusal| {
        serde::de::Error::custom(PolicyError::at(path, refusal_fault(refusal)))
    })?;
    parse(&value, path).map_err(serde::de::Error::custom)
}

/// `deserialize_with` helper for `require_approval.args`.
pub(crate) fn approval_args<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Pol>, D::Error> {
    strict_de(deserializer, "require_approval.args", Pol::parse).map(Some)
}

impl<'de> Deserialize<'de> for Pol {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Pol, D::Error> {
        strict_de(deserializer, "pol", Pol::parse)
    }
}

/// One argument rule: which attempts it applies to and the policy their
/// arguments must satisfy.
#[derive(Debug, Clone)]
pub struct ArgsRule {
    actions: Vec<Action>,
    resources: Vec<ResourcePattern>,
    pol: Pol,
    source: Value,
    canonical: Vec<u8>,
}

impl PartialEq for ArgsRule {
    fn eq(&self, other: &ArgsRule) -> bool {
        self.canonical == other.canonical
    }
}

impl Eq for ArgsRule {}

/// Parses a present list of actions or resource patterns: 1–64 distinct
/// entries in their forms.
fn rule_list<T: PartialEq + fmt::Display>(
    value: Option<&Value>,
    path: &str,
    parse: fn(&str) -> Result<T, crate::scope::ScopeError>,
) -> Result<Vec<T>, PolicyError> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = value else {
        return Err(PolicyError::at(path, PolicyFault::InvalidList));
    };
    if items.is_empty() {
        return Err(PolicyError::at(path, PolicyFault::Empty));
    }
    if items.len() > MAX_LIST_LEN {
        return Err(PolicyError::at(path, PolicyFault::InvalidList));
    }
    let mut parsed: Vec<T> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let entry = item
            .as_str()
            .and_then(|text| parse(text).ok())
            .filter(|entry| !parsed.contains(entry))
            .ok_or_else(|| PolicyError::at(&format!("{path}[{i}]"), PolicyFault::InvalidList))?;
        parsed.push(entry);
    }
    Ok(parsed)
}

impl ArgsRule {
    /// Parses a rule at `path` (for errors).
    pub fn parse(value: &Value, path: &str) -> Result<ArgsRule, PolicyError> {
        let Value::Object(members) = value else {
            return Err(PolicyError::at(path, PolicyFault::MalformedRule));
        };
        if let Some(unknown) = members
            .keys()
            .find(|k| !matches!(k.as_str(), "actions" | "resources" | "pol"))
        {
            return Err(PolicyError::at(
                &format!("{path}.{unknown}"),
                PolicyFault::MalformedRule,
            ));
        }
        let actions = rule_list(
            members.get("actions"),
            &format!("{path}.actions"),
            Action::parse,
        )?;
        let resources = rule_list(
            members.get("resources"),
            &format!("{path}.resources"),
            ResourcePattern::parse,
        )?;
        let pol_path = format!("{path}.pol");
        let pol = members
            .get("pol")
            .ok_or_else(|| PolicyError::at(&pol_path, PolicyFault::MalformedRule))?;
        let pol = Pol::parse(pol, &pol_path)?;
        Ok(ArgsRule {
            actions,
            resources,
            pol,
            canonical: canonical(value, path)?,
            source: value.clone(),
        })
    }

    /// The actions the rule applies to (empty: every action).
    pub fn actions(&self) -> &[Action] {
        &self.actions
    }

    /// The resource patterns the rule applies to (empty: every resource).
    pub fn resources(&self) -> &[ResourcePattern] {
        &self.resources
    }

    /// The rule's policy.
    pub fn pol(&self) -> &Pol {
        &self.pol
    }

    /// Whether the rule applies to an attempt of `action` on `resource`.
    pub fn applies(&self, action: &Action, resource: &Resource) -> bool {
        (self.actions.is_empty() || self.actions.contains(action))
            && (self.resources.is_empty() || self.resources.iter().any(|p| p.covers(resource)))
    }
}

impl Serialize for ArgsRule {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.source.serialize(serializer)
    }
}

/// The argument rules of a grant (`svc_constraints.args`); empty when the
/// grant has none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArgsRules {
    rules: Arc<[ArgsRule]>,
}

/// The path of a grant's rules in errors.
const RULES_PATH: &str = "args";

impl ArgsRules {
    /// Parses a grant's rules at `path` (`args` in a grant's constraints):
    /// 1 to 32 rules, at most 4 KiB as canonical JSON.
    pub fn parse(value: &Value, path: &str) -> Result<ArgsRules, PolicyError> {
        let Value::Array(items) = value else {
            return Err(PolicyError::at(path, PolicyFault::MalformedRule));
        };
        if items.is_empty() {
            return Err(PolicyError::at(path, PolicyFault::Empty));
        }
        if items.len() > MAX_ARGS_RULES {
            return Err(PolicyError::at(path, PolicyFault::TooManyRules));
        }
        if canonical(value, path)?.len() > MAX_ARGS_RULES_BYTES {
            return Err(PolicyError::at(path, PolicyFault::TooLarge));
        }
        let rules = items
            .iter()
            .enumerate()
            .map(|(i, item)| ArgsRule::parse(item, &format!("{path}[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ArgsRules {
            rules: rules.into(),
        })
    }

    /// Reads and parses rules from JSON text, strictly; errors name paths
    /// under `args`.
    pub fn from_json(bytes: &[u8]) -> Result<ArgsRules, PolicyError> {
        ArgsRules::parse(&read_strict(bytes, RULES_PATH)?, RULES_PATH)
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[ArgsRule] {
        &self.rules
    }

    /// Whether there is no rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules' size as canonical JSON (0 when there is none).
    pub fn canonical_len(&self) -> usize {
        if self.rules.is_empty() {
            0
        } else {
            // `[`, `]` and a comma between rules.
            self.rules.iter().map(|r| r.canonical.len()).sum::<usize>() + self.rules.len() + 1
        }
    }
}

impl Serialize for ArgsRules {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.rules.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ArgsRules {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ArgsRules, D::Error> {
        strict_de(deserializer, RULES_PATH, ArgsRules::parse)
    }
}

/// Checks that a grant's argument statements — its rules and its approval
/// requirement's `args` — are at most 4 KiB together as canonical JSON, so
/// a token stays under 8 KiB.
pub fn check_grant_size(rules: &ArgsRules, approval: Option<&Pol>) -> Result<(), PolicyError> {
    let total = rules.canonical_len() + approval.map_or(0, Pol::canonical_len);
    if total > MAX_ARGS_RULES_BYTES {
        return Err(PolicyError::at(RULES_PATH, PolicyFault::TooLarge));
    }
    Ok(())
}

/// Why arguments were refused before any rule was judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    #[error("args must be JSON")]
    Malformed,
    #[error("args must be a JSON object")]
    NotAnObject,
    #[error("args name a member twice")]
    DuplicateMember,
    #[error("args hold a number beyond ±(2^53 − 1)")]
    UnsafeNumber,
    #[error("args are over {MAX_ARGS_BYTES} bytes as canonical JSON")]
    TooLarge,
}

impl ArgsError {
    /// Stable snake_case code.
    pub fn code(self) -> &'static str {
        match self {
            ArgsError::Malformed => "invalid_args",
            ArgsError::NotAnObject => "args_not_an_object",
            ArgsError::DuplicateMember => "duplicate_member",
            ArgsError::UnsafeNumber => "unsafe_number",
            ArgsError::TooLarge => "args_too_large",
        }
    }
}

/// The arguments of an attempt: a JSON object read strictly, with its RFC
/// 8785 canonical form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    value: Value,
    canonical: Vec<u8>,
}

impl Args {
    /// Reads arguments from JSON text: an object naming no member twice at
    /// any depth, every number within ±(2^53 − 1), at most 16 KiB as
    /// canonical JSON.
    pub fn parse(bytes: &[u8]) -> Result<Args, ArgsError> {
        let Strict(read) =
            serde_json::from_slice::<Strict>(bytes).map_err(|_| ArgsError::Malformed)?;
        let value = read.map_err(|refusal| match refusal {
            StrictRefusal::DuplicateMember => ArgsError::DuplicateMember,
            StrictRefusal::UnsafeNumber => ArgsError::UnsafeNumber,
        })?;
        Args::from_value(value)
    }

    /// Arguments from a value already read (by a reader that keeps only one
    /// of a member named twice: prefer [`Args::parse`] on the bytes).
    pub fn from_value(value: Value) -> Result<Args, ArgsError> {
        if !value.is_object() {
            return Err(ArgsError::NotAnObject);
        }
        if !numbers_safe(&value) {
            return Err(ArgsError::UnsafeNumber);
        }
        let mut canonical = Vec::new();
        write_canonical(&value, &mut canonical).map_err(|_| ArgsError::UnsafeNumber)?;
        if canonical.len() > MAX_ARGS_BYTES {
            return Err(ArgsError::TooLarge);
        }
        Ok(Args { value, canonical })
    }

    /// The arguments.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The RFC 8785 canonical JSON of the arguments.
    pub fn canonical(&self) -> &[u8] {
        &self.canonical
    }

    /// `args_hash`: `sha256:` of the canonical JSON, in lowercase hex.
    pub fn hash(&self) -> ArgsHash {
        ArgsHash::from_digest(&Sha256::digest(&self.canonical).into())
    }
}

impl Serialize for Args {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Args {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Args, D::Error> {
        let Strict(read) = Strict::deserialize(deserializer)?;
        let value = read.map_err(|refusal| {
            serde::de::Error::custom(match refusal {
                StrictRefusal::DuplicateMember => ArgsError::DuplicateMember,
                StrictRefusal::UnsafeNumber => ArgsError::UnsafeNumber,
            })
        })?;
        Args::from_value(value).map_err(serde::de::Error::custom)
    }
}

/// Why an attempt's arguments are not permitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ArgsDenial {
    /// A rule applies and the attempt carries no arguments.
    #[error("argument rule {rule} applies to this action and no args were given")]
    Required { rule: usize },
    /// A statement of a rule that applies is not true.
    #[error("statement {statement} of argument rule {rule} is {} for these args", truth.as_str())]
    NotPermitted {
        rule: usize,
        statement: usize,
        truth: Truth,
    },
}

impl ArgsDenial {
    /// Stable snake_case code: `args_required` or `args_not_permitted`.
    pub fn code(&self) -> &'static str {
        match self {
            ArgsDenial::Required { .. } => "args_required",
            ArgsDenial::NotPermitted { .. } => "args_not_permitted",
        }
    }
}

impl From<ArgsDenial> for crate::record::DenyReason {
    fn from(denial: ArgsDenial) -> crate::record::DenyReason {
        match denial {
            ArgsDenial::Required { .. } => crate::record::DenyReason::ArgsRequired,
            ArgsDenial::NotPermitted { .. } => crate::record::DenyReason::ArgsNotPermitted,
        }
    }
}

/// A denial by the rules of one grant of a chain: the grant's position in
/// the chain as given (0 is the first, the root when the chain is given
/// root first) and what its rules refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainArgsDenial {
    pub grant: usize,
    pub denial: ArgsDenial,
}

/// Whether `args` are permitted for `action` on `resource` by every grant
/// of a chain (each grant's rules, as [`check_args`] judges them): a
/// delegated token carries its ancestors' rules, and judging theirs too
/// keeps a token minted otherwise from escaping them. The first grant (in
/// the order given) that refuses names the denial.
pub fn check_chain_args<'a>(
    chain: impl IntoIterator<Item = &'a ArgsRules>,
    action: &Action,
    resource: &Resource,
    args: Option<&Args>,
) -> Result<(), ChainArgsDenial> {
    for (grant, rules) in chain.into_iter().enumerate() {
        check_args(rules, action, resource, args)
            .map_err(|denial| ChainArgsDenial { grant, denial })?;
    }
    Ok(())
}

/// JSON read strictly (no member twice at any depth, every number within
/// ±(2^53 − 1)) from a request body, keeping a refusal as a value so the
/// caller names where it was: rules, an approval's statements or an
/// attempt's arguments are then parsed from it.
#[derive(Debug, Clone, PartialEq)]
pub struct StrictJson(Result<Value, StrictRefusal>);

impl StrictJson {
    /// The value, or why it was refused, as a fault at `path`.
    fn value(&self, path: &str) -> Result<&Value, PolicyError> {
        self.0
            .as_ref()
            .map_err(|refusal| PolicyError::at(path, refusal_fault(*refusal)))
    }

    /// A grant's rules at `path` (`constraints.args`).
    pub fn rules(&self, path: &str) -> Result<ArgsRules, PolicyError> {
        ArgsRules::parse(self.value(path)?, path)
    }

    /// An approval requirement's statements at `path`.
    pub fn pol(&self, path: &str) -> Result<Pol, PolicyError> {
        Pol::parse(self.value(path)?, path)
    }

    /// An attempt's arguments.
    pub fn args(&self) -> Result<Args, ArgsError> {
        match &self.0 {
            Ok(value) => Args::from_value(value.clone()),
            Err(StrictRefusal::DuplicateMember) => Err(ArgsError::DuplicateMember),
            Err(StrictRefusal::UnsafeNumber) => Err(ArgsError::UnsafeNumber),
        }
    }
}

impl<'de> Deserialize<'de> for StrictJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<StrictJson, D::Error> {
        let Strict(read) = Strict::deserialize(deserializer)?;
        Ok(StrictJson(read))
    }
}

/// What stored arguments hold in place of a redacted value.
pub const REDACTED: &str = "[redacted]";

/// The canonical JSON of arguments with every value each selector finds
/// replaced by [`REDACTED`] (`[records] redact_args`), for storing: the
/// hash stays that of the arguments as given. `None` only if the
/// arguments could not be written (they were read strictly: never).
pub fn redact(args: &Args, selectors: &[Selector]) -> Option<String> {
    if selectors.is_empty() {
        return String::from_utf8(args.canonical.clone()).ok();
    }
    let mut value = args.value.clone();
    for selector in selectors {
        selector.replace(&mut value, &Value::String(REDACTED.to_owned()));
    }
    let mut out = Vec::new();
    write_canonical(&value, &mut out).ok()?;
    String::from_utf8(out).ok()
}

/// Whether `args` are permitted for `action` on `resource` under `rules`:
/// every statement of every rule that applies must be true. The first rule
/// (in order) that refuses names the denial.
pub fn check_args(
    rules: &ArgsRules,
    action: &Action,
    resource: &Resource,
    args: Option<&Args>,
) -> Result<(), ArgsDenial> {
    for (rule, item) in rules.rules.iter().enumerate() {
        if !item.applies(action, resource) {
            continue;
        }
        let Some(args) = args else {
            return Err(ArgsDenial::Required { rule });
        };
        if let Some((statement, truth)) = item.pol.first_not_true(&args.value) {
            return Err(ArgsDenial::NotPermitted {
                rule,
                statement,
                truth,
            });
        }
    }
    Ok(())
}

/// Whether an approval requirement's `args` statements ask for approval:
/// when they all hold or are undefined (not when any is false). Absent
/// arguments leave them undefined: approval is asked.
pub fn approval_args_match(pol: &Pol, args: Option<&Args>) -> bool {
    args.is_none_or(|args| pol.evaluate(&args.value) != Truth::False)
}

/// Pushes a violation for each rule of `parent` that `child` does not keep
/// unchanged (by canonical JSON).
pub(crate) fn check_rules_kept(
    child: &ArgsRules,
    parent: &ArgsRules,
    violations: &mut Vec<Violation>,
) {
    for (i, rule) in parent.rules.iter().enumerate() {
        if !child.rules.contains(rule) {
            violations.push(Violation::ArgsRuleDropped(i));
        }
    }
}

/// The truth of a policy given as JSON over arguments given as JSON (the
/// wasm façade and the vectors): both read strictly.
pub fn evaluate_json(pol: &[u8], args: &[u8]) -> Result<Truth, EvaluateError> {
    let pol = Pol::from_json(pol, "pol").map_err(EvaluateError::Policy)?;
    let args = Args::parse(args).map_err(EvaluateError::Args)?;
    Ok(pol.evaluate(&args.value))
}

/// Why [`evaluate_json`] could not judge.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvaluateError {
    #[error(transparent)]
    Policy(PolicyError),
    #[error(transparent)]
    Args(ArgsError),
}

impl EvaluateError {
    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            EvaluateError::Policy(e) => e.code(),
            EvaluateError::Args(e) => e.code(),
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod laws;
