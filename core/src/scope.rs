//! Scope: what a token allows (resources and actions), its budget constraints
//! and policy assertions, and the narrowing rule of delegation.
//!
//! # Forms
//! - **Action**: 1–64 characters, `a-z` first, then `a-z 0-9 _ . -`
//!   (`read`, `write`, `summarise`, `delegate`).
//! - **Resource**: `<namespace>:<name>`. The namespace is 1–64 characters of
//!   `a-z 0-9 _ . -` starting with a letter or digit; the name is one or more
//!   printable ASCII characters (`!` to `~`) other than `*` — it may contain
//!   further colons and slashes (`files:/reports/q3.pdf`). At most 256 bytes
//!   in all. Non-ASCII names must be percent-encoded by the caller.
//! - **Resource pattern**: a resource, or `<namespace>:*`, which covers every
//!   resource of that namespace. There is no other wildcard: no `*:*`, no
//!   prefix globs.
//! - **Framework** (policy assertion): 1–64 characters of `a-z 0-9 _ . -`
//!   starting with a letter or digit (`hipaa`, `gdpr`, `soc2`).
//!
//! Lists hold 1–64 entries (frameworks 0–64) without duplicates.
//!
//! # Narrowing
//! A child grant is narrower than (or equal to) its parent when every child
//! resource pattern is covered by a parent pattern, every child action is held
//! by the parent, every parent constraint is kept and not raised, the
//! child's approval requirement asks for approval wherever the parent's does
//! (see [`crate::approval`]), the parent's `min_trust` is kept and may only
//! be raised, every parent framework is kept, and the child expires no later
//! than the parent.
//! [`check_narrowing`] reports every way a child is wider, not just the first.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::approval::{ApprovalRequirement, check_covers};
use crate::audience::Audience;
use crate::limits::{
    MAX_ACTIONS_LIMIT, MAX_LIST_LEN, MAX_NAME_LEN, MAX_NAMESPACE_LEN, MAX_RESOURCE_LEN,
};
use crate::money::Usd;
use crate::policy::{ArgsRules, PolicyError, check_rules_kept};

/// The action a token must hold to delegate.
pub const DELEGATE_ACTION: &str = "delegate";

/// Why a scope, constraint or policy value is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    #[error("an action must be 1 to {MAX_NAME_LEN} characters: a-z first, then a-z 0-9 _ . -")]
    InvalidAction,
    #[error(
        "a resource must be `<namespace>:<name>`: namespace 1 to {MAX_NAMESPACE_LEN} of a-z 0-9 _ . -, name printable ASCII without `*`, {MAX_RESOURCE_LEN} bytes at most"
    )]
    InvalidResource,
    #[error(
        "a resource pattern must be `<namespace>:<name>` or `<namespace>:*` ({MAX_RESOURCE_LEN} bytes at most)"
    )]
    InvalidPattern,
    #[error("a framework must be 1 to {MAX_NAME_LEN} characters of a-z 0-9 _ . -")]
    InvalidFramework,
    #[error("`{0}` must not be empty")]
    Empty(&'static str),
    #[error("`{0}` may hold at most {MAX_LIST_LEN} entries")]
    TooMany(&'static str),
    #[error("`{field}` lists `{value}` twice")]
    Duplicate { field: &'static str, value: String },
    #[error("max_actions must be at most {MAX_ACTIONS_LIMIT}")]
    MaxActionsTooLarge,
    #[error("require_approval must have actions, resources or spend_over_usd")]
    ApprovalRequirementEmpty,
    #[error("min_trust must be a number in [0, 1]")]
    InvalidMinTrust,
    #[error(
        "require_approval.actions lists `{0}`, which the token does not hold: the requirement could never match"
    )]
    ApprovalActionNotHeld(Action),
    #[error(
        "require_approval.resources lists `{0}`, which no resource of the token overlaps: the requirement could never match"
    )]
    ApprovalResourceOutsideScope(ResourcePattern),
    #[error(
        "require_approval.spend_over_usd is {threshold}, at or above the token's spend cap {budget} (max_spend_usd, or max_spend_per_action_usd when lower): no spend the caps allow could pass it"
    )]
    ApprovalThresholdUnreachable { threshold: Usd, budget: Usd },
    #[error(transparent)]
    Args(PolicyError),
}

impl ScopeError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            ScopeError::InvalidAction => "invalid_action",
            ScopeError::InvalidResource => "invalid_resource",
            ScopeError::InvalidPattern => "invalid_resource_pattern",
            ScopeError::InvalidFramework => "invalid_framework",
            ScopeError::Empty(_) => "empty_list",
            ScopeError::TooMany(_) => "list_too_long",
            ScopeError::Duplicate { .. } => "duplicate_entry",
            ScopeError::MaxActionsTooLarge => "max_actions_too_large",
            ScopeError::ApprovalRequirementEmpty => "empty_approval_requirement",
            ScopeError::InvalidMinTrust => "invalid_min_trust",
            ScopeError::ApprovalActionNotHeld(_) => "approval_action_not_held",
            ScopeError::ApprovalResourceOutsideScope(_) => "approval_resource_outside_scope",
            ScopeError::ApprovalThresholdUnreachable { .. } => "approval_threshold_unreachable",
            ScopeError::Args(e) => e.code(),
        }
    }
}

fn is_name_char(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'.' | b'-')
}

fn valid_namespace(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_NAMESPACE_LEN
        && bytes
            .first()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes.iter().copied().all(is_name_char)
}

fn valid_resource_name(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_graphic() && b != b'*')
        && plain_segments(text)
}

/// Whether a resource name (or a pattern's prefix) has plain segments
/// only, `/` and `:` separating them: no `.` or `..` segment, no empty
/// one (`//`, `::`; a name may begin with one `/`), and no `.`, `/` or
/// `:` percent-encoded. Otherwise `files:/srv/reports/../../etc/shadow`
/// would read as under `files:/srv/reports/*` while naming what is not.
fn plain_segments(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    if ["%2e", "%2f", "%3a"]
        .iter()
        .any(|encoded| lower.contains(encoded))
    {
        return false;
    }
    let body = text.strip_prefix('/').unwrap_or(text);
    body.split(['/', ':'])
        .all(|segment| !segment.is_empty() && segment != "." && segment != "..")
}

/// The prefix of a prefix pattern's name (`contact/` of `contact/*`,
/// `bucket:` of `bucket:*`), or `None` for a name that is not one.
fn pattern_prefix(name: &str) -> Option<&str> {
    let prefix = name.strip_suffix('*')?;
    (prefix.ends_with('/') || prefix.ends_with(':')).then_some(prefix)
}

/// Whether `name` is a valid pattern name: `*`, a resource name, or a
/// prefix (a resource name followed by `/` or `:`) and `*`.
fn valid_pattern_name(name: &str) -> bool {
    if name == "*" || valid_resource_name(name) {
        return true;
    }
    // The prefix without its last separator is a resource name, or
    // nothing before a leading `/` (`files:/*`).
    pattern_prefix(name).is_some_and(|prefix| {
        prefix == "/"
            || prefix
                .get(..prefix.len() - 1)
                .is_some_and(valid_resource_name)
    })
}

/// Declares a validated string newtype with serde support.
macro_rules! name_type {
    ($(#[$doc:meta])* $name:ident, $check:expr, $err:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Parses the value, rejecting every other form.
            pub fn parse(text: &str) -> Result<$name, ScopeError> {
                let check: fn(&str) -> bool = $check;
                if check(text) {
                    Ok($name(text.to_owned()))
                } else {
                    Err($err)
                }
            }

            /// The value as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl TryFrom<String> for $name {
            type Error = ScopeError;
            fn try_from(text: String) -> Result<$name, ScopeError> {
                $name::parse(&text)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }
    };
}

name_type!(
    /// An action name such as `read`, `write` or `delegate`.
    Action,
    |text| {
        text.len() <= MAX_NAME_LEN
            && text.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
            && text.bytes().all(is_name_char)
    },
    ScopeError::InvalidAction
);

name_type!(
    /// A compliance framework asserted by a token's policy (`hipaa`, `gdpr`).
    Framework,
    |text| valid_namespace(text),
    ScopeError::InvalidFramework
);

name_type!(
    /// A concrete resource, `<namespace>:<name>`, as named in an action.
    Resource,
    |text| {
        text.len() <= MAX_RESOURCE_LEN
            && text
                .split_once(':')
                .is_some_and(|(ns, name)| valid_namespace(ns) && valid_resource_name(name))
    },
    ScopeError::InvalidResource
);

impl Resource {
    fn parts(&self) -> (&str, &str) {
        self.0.split_once(':').unwrap_or((&self.0, ""))
    }
}

name_type!(
    /// A resource, `<namespace>:*` (every resource of the namespace), or
    /// a prefix pattern `<namespace>:<prefix>/*` or `<namespace>:<prefix>:*`
    /// (every resource whose name extends the prefix), as granted in a
    /// scope.
    ResourcePattern,
    |text| {
        text.len() <= MAX_RESOURCE_LEN
            && text
                .split_once(':')
                .is_some_and(|(ns, name)| valid_namespace(ns) && valid_pattern_name(name))
    },
    ScopeError::InvalidPattern
);

/// What a pattern's name covers.
#[derive(Clone, Copy)]
enum Covered<'a> {
    /// Every name (`*`).
    All,
    /// Every name longer than this prefix that begins with it.
    Prefix(&'a str),
    /// This name.
    Exact(&'a str),
}

impl Covered<'_> {
    fn name(&self, name: &str) -> bool {
        match *self {
            Covered::All => true,
            Covered::Prefix(prefix) => name.len() > prefix.len() && name.starts_with(prefix),
            Covered::Exact(exact) => exact == name,
        }
    }
}

impl ResourcePattern {
    fn parts(&self) -> (&str, &str) {
        self.0.split_once(':').unwrap_or((&self.0, ""))
    }

    fn covered(&self) -> (&str, Covered<'_>) {
        let (ns, name) = self.parts();
        let covered = if name == "*" {
            Covered::All
        } else if let Some(prefix) = pattern_prefix(name) {
            Covered::Prefix(prefix)
        } else {
            Covered::Exact(name)
        };
        (ns, covered)
    }

    /// Whether this pattern covers a concrete resource.
    pub fn covers(&self, resource: &Resource) -> bool {
        let (ns, covered) = self.covered();
        let (r_ns, r_name) = resource.parts();
        ns == r_ns && covered.name(r_name)
    }

    /// Whether some resource is covered by both this pattern and `other`:
    /// the same namespace, and `*` on either side, the same name, a name
    /// the other's prefix covers, or one prefix extending the other.
    pub fn overlaps(&self, other: &ResourcePattern) -> bool {
        let (ns, mine) = self.covered();
        let (o_ns, theirs) = other.covered();
        ns == o_ns
            && match (mine, theirs) {
                (Covered::All, _) | (_, Covered::All) => true,
                (Covered::Exact(a), Covered::Exact(b)) => a == b,
                (Covered::Prefix(p), Covered::Exact(name))
                | (Covered::Exact(name), Covered::Prefix(p)) => Covered::Prefix(p).name(name),
                (Covered::Prefix(a), Covered::Prefix(b)) => a.starts_with(b) || b.starts_with(a),
            }
    }

    /// Whether everything `other` covers, this pattern covers too: `*`
    /// covers every pattern of its namespace; a prefix covers a name it
    /// covers and a prefix extending it (`crm:contact/*` covers
    /// `crm:contact/vip/*`); a name covers only itself.
    pub fn covers_pattern(&self, other: &ResourcePattern) -> bool {
        let (ns, mine) = self.covered();
        let (o_ns, theirs) = other.covered();
        ns == o_ns
            && match (mine, theirs) {
                (Covered::All, _) => true,
                (_, Covered::All) => false,
                (Covered::Prefix(p), Covered::Exact(name)) => Covered::Prefix(p).name(name),
                (Covered::Prefix(p), Covered::Prefix(q)) => q.starts_with(p),
                (Covered::Exact(a), Covered::Exact(b)) => a == b,
                (Covered::Exact(_), Covered::Prefix(_)) => false,
            }
    }
}

/// Checks a list of entries: not empty unless `allow_empty`, at most 64,
/// no entry twice.
pub(crate) fn check_list<T: PartialEq + fmt::Display>(
    field: &'static str,
    items: &[T],
    allow_empty: bool,
) -> Result<(), ScopeError> {
    if items.is_empty() && !allow_empty {
        return Err(ScopeError::Empty(field));
    }
    if items.len() > MAX_LIST_LEN {
        return Err(ScopeError::TooMany(field));
    }
    for (i, item) in items.iter().enumerate() {
        if items.iter().skip(i + 1).any(|other| other == item) {
            return Err(ScopeError::Duplicate {
                field,
                value: item.to_string(),
            });
        }
    }
    Ok(())
}

/// What a token allows: resource patterns and actions (`svc_scope`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawScope")]
pub struct Scope {
    resources: Vec<ResourcePattern>,
    actions: Vec<Action>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScope {
    resources: Vec<ResourcePattern>,
    actions: Vec<Action>,
}

impl TryFrom<RawScope> for Scope {
    type Error = ScopeError;
    fn try_from(raw: RawScope) -> Result<Scope, ScopeError> {
        Scope::new(raw.resources, raw.actions)
    }
}

/// Why an action on a resource is outside a scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ScopeDenial {
    #[error("the token does not hold this action")]
    ActionNotPermitted,
    #[error("no resource pattern of the token covers this resource")]
    ResourceNotPermitted,
}

impl ScopeDenial {
    /// Stable snake_case code for this denial.
    pub fn code(&self) -> &'static str {
        match self {
            ScopeDenial::ActionNotPermitted => "action_not_permitted",
            ScopeDenial::ResourceNotPermitted => "resource_not_permitted",
        }
    }
}

impl Scope {
    /// A scope of 1–64 distinct resource patterns and 1–64 distinct actions.
    pub fn new(resources: Vec<ResourcePattern>, actions: Vec<Action>) -> Result<Scope, ScopeError> {
        check_list("resources", &resources, false)?;
        check_list("actions", &actions, false)?;
        Ok(Scope { resources, actions })
    }

    /// Parses resources and actions given as text.
    pub fn parse<R: AsRef<str>, A: AsRef<str>>(
        resources: &[R],
        actions: &[A],
    ) -> Result<Scope, ScopeError> {
        if resources.len() > MAX_LIST_LEN {
            return Err(ScopeError::TooMany("resources"));
        }
        if actions.len() > MAX_LIST_LEN {
            return Err(ScopeError::TooMany("actions"));
        }
        let resources = resources
            .iter()
            .map(|r| ResourcePattern::parse(r.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        let actions = actions
            .iter()
            .map(|a| Action::parse(a.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Scope::new(resources, actions)
    }

    /// The granted resource patterns.
    pub fn resources(&self) -> &[ResourcePattern] {
        &self.resources
    }

    /// The granted actions.
    pub fn actions(&self) -> &[Action] {
        &self.actions
    }

    /// Whether the scope holds an action, by name.
    pub fn holds(&self, action: &str) -> bool {
        self.actions.iter().any(|a| a.as_str() == action)
    }

    /// Whether `action` on `resource` is allowed, and if not, why.
    pub fn check(&self, action: &Action, resource: &Resource) -> Result<(), ScopeDenial> {
        if !self.actions.contains(action) {
            return Err(ScopeDenial::ActionNotPermitted);
        }
        if !self.resources.iter().any(|p| p.covers(resource)) {
            return Err(ScopeDenial::ResourceNotPermitted);
        }
        Ok(())
    }
}

/// Whether `scope` allows `action` on `resource`.
pub fn permits(scope: &Scope, action: &Action, resource: &Resource) -> bool {
    scope.check(action, resource).is_ok()
}

/// The least trust (`constraints.min_trust`) an agent must hold to act with
/// a token: a number in [0, 1] (see [`crate::trust`]). Never NaN, so it
/// compares and equals as a whole number would.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct MinTrust(f64);

impl Eq for MinTrust {}

impl MinTrust {
    /// A floor in [0, 1]; anything else (NaN included) is refused.
    pub fn new(value: f64) -> Result<MinTrust, ScopeError> {
        if (0.0..=1.0).contains(&value) {
            // -0.0 is 0.0.
            Ok(MinTrust(value + 0.0))
        } else {
            Err(ScopeError::InvalidMinTrust)
        }
    }

    /// The floor.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for MinTrust {
    type Error = ScopeError;
    fn try_from(value: f64) -> Result<MinTrust, ScopeError> {
        MinTrust::new(value)
    }
}

impl From<MinTrust> for f64 {
    fn from(floor: MinTrust) -> f64 {
        floor.0
    }
}

/// The constraints of a token (`svc_constraints`): budget limits,
/// cumulative over the token and its descendants, when an action needs a
/// human's approval first, and the least trust its agent must hold. An
/// absent limit is no limit; an absent requirement asks for no approval; an
/// absent `min_trust` asks for no trust.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawConstraints")]
pub struct Constraints {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_spend_usd: Option<Usd>,
    /// The most one act may spend (at `authorize`, `record/action` and
    /// completion), on its own rather than summed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_spend_per_action_usd: Option<Usd>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_actions: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub require_approval: Option<ApprovalRequirement>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_trust: Option<MinTrust>,
    /// Argument rules (see [`crate::policy`]); empty when there are none.
    #[serde(skip_serializing_if = "ArgsRules::is_empty")]
    pub args: ArgsRules,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConstraints {
    #[serde(default)]
    max_spend_usd: Option<Usd>,
    #[serde(default)]
    max_spend_per_action_usd: Option<Usd>,
    #[serde(default)]
    max_actions: Option<u64>,
    #[serde(default)]
    require_approval: Option<ApprovalRequirement>,
    #[serde(default)]
    min_trust: Option<MinTrust>,
    #[serde(default)]
    args: Option<ArgsRules>,
}

impl TryFrom<RawConstraints> for Constraints {
    type Error = ScopeError;
    fn try_from(raw: RawConstraints) -> Result<Constraints, ScopeError> {
        if raw.max_actions.is_some_and(|n| n > MAX_ACTIONS_LIMIT) {
            return Err(ScopeError::MaxActionsTooLarge);
        }
        let args = raw.args.unwrap_or_default();
        crate::policy::check_grant_size(
            &args,
            raw.require_approval
                .as_ref()
                .and_then(ApprovalRequirement::args),
        )
        .map_err(ScopeError::Args)?;
        Ok(Constraints {
            max_spend_usd: raw.max_spend_usd,
            max_spend_per_action_usd: raw.max_spend_per_action_usd,
            max_actions: raw.max_actions,
            require_approval: raw.require_approval,
            min_trust: raw.min_trust,
            args,
        })
    }
}

impl Constraints {
    /// The most one act may spend under these limits: the lower of
    /// `max_spend_usd` and `max_spend_per_action_usd` (none: no cap).
    pub fn spend_cap(&self) -> Option<Usd> {
        match (self.max_spend_usd, self.max_spend_per_action_usd) {
            (Some(total), Some(one)) => Some(total.min(one)),
            (total, one) => total.or(one),
        }
    }

    /// Whether no constraint is set: no limit, no approval requirement, no
    /// trust floor and no argument rule.
    pub fn is_empty(&self) -> bool {
        !self.has_budget()
            && self.require_approval.is_none()
            && self.min_trust.is_none()
            && self.args.is_empty()
    }

    /// Whether a budget limit is set.
    pub fn has_budget(&self) -> bool {
        self.max_spend_usd.is_some()
            || self.max_spend_per_action_usd.is_some()
            || self.max_actions.is_some()
    }
}

/// Compliance frameworks a token asserts (`svc_policy`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawPolicy")]
pub struct Policy {
    frameworks: Vec<Framework>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    frameworks: Vec<Framework>,
}

impl TryFrom<RawPolicy> for Policy {
    type Error = ScopeError;
    fn try_from(raw: RawPolicy) -> Result<Policy, ScopeError> {
        Policy::new(raw.frameworks)
    }
}

impl Policy {
    /// A policy of 0–64 distinct frameworks.
    pub fn new(frameworks: Vec<Framework>) -> Result<Policy, ScopeError> {
        check_list("frameworks", &frameworks, true)?;
        Ok(Policy { frameworks })
    }

    /// The asserted frameworks.
    pub fn frameworks(&self) -> &[Framework] {
        &self.frameworks
    }

    /// Whether no framework is asserted.
    pub fn is_empty(&self) -> bool {
        self.frameworks.is_empty()
    }
}

/// Everything a token grants, the unit narrowing compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub scope: Scope,
    pub constraints: Constraints,
    pub policy: Policy,
    /// Unix seconds after which the grant is void (`exp`).
    pub expires_at: i64,
    /// The one resource server the grant is for (`aud`); `None` for any.
    pub audience: Option<Audience>,
}

/// A budget limit, as named in requests, tokens and errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    MaxSpendUsd,
    /// The spend of one act, on its own.
    MaxSpendPerActionUsd,
    MaxActions,
}

impl Limit {
    /// The field name, `max_spend_usd`, `max_spend_per_action_usd` or
    /// `max_actions`.
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::MaxSpendUsd => "max_spend_usd",
            Limit::MaxSpendPerActionUsd => "max_spend_per_action_usd",
            Limit::MaxActions => "max_actions",
        }
    }
}

/// One way a child grant is wider than its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// A child resource pattern no parent pattern covers.
    ResourceNotCovered(ResourcePattern),
    /// A child action the parent does not hold.
    ActionNotHeld(Action),
    /// A limit the child sets higher than the parent's.
    ConstraintRaised(Limit),
    /// A limit the parent sets and the child leaves out.
    ConstraintDropped(Limit),
    /// The parent requires approval and the child requires none.
    ApprovalDropped,
    /// An action the parent's approval requirement lists and the child's
    /// does not.
    ApprovalActionDropped(Action),
    /// A resource pattern of the parent's approval requirement that no
    /// pattern of the child's covers.
    ApprovalResourceNotCovered(ResourcePattern),
    /// The child needs approval only above a higher spend than the parent.
    ApprovalThresholdRaised,
    /// The parent needs approval above a spend and the child at no spend.
    ApprovalThresholdDropped,
    /// The child's `min_trust` is lower than the parent's.
    MinTrustLowered,
    /// The parent sets `min_trust` and the child leaves it out.
    MinTrustDropped,
    /// A rule of the parent's `args` (by index) the child does not keep
    /// unchanged.
    ArgsRuleDropped(usize),
    /// The parent's approval requirement has `args` and the child's does
    /// not keep them unchanged.
    ApprovalArgsChanged,
    /// A framework the parent asserts and the child leaves out.
    FrameworkDropped(Framework),
    /// The child would outlive its parent.
    LifetimeBeyondParent { child_exp: i64, parent_exp: i64 },
    /// The child names another audience than its parent's.
    AudienceChanged { child: Audience, parent: Audience },
    /// The parent names an audience and the child names none (any).
    AudienceDropped(Audience),
}

impl Violation {
    /// The request field that widens (`resources`, `constraints.max_spend_usd`, …).
    pub fn field(&self) -> String {
        match self {
            Violation::ResourceNotCovered(_) => "resources".to_owned(),
            Violation::ActionNotHeld(_) => "actions".to_owned(),
            Violation::ConstraintRaised(limit) | Violation::ConstraintDropped(limit) => {
                format!("constraints.{}", limit.as_str())
            }
            Violation::ApprovalDropped => "constraints.require_approval".to_owned(),
            Violation::ApprovalActionDropped(_) => {
                "constraints.require_approval.actions".to_owned()
            }
            Violation::ApprovalResourceNotCovered(_) => {
                "constraints.require_approval.resources".to_owned()
            }
            Violation::ApprovalThresholdRaised | Violation::ApprovalThresholdDropped => {
                "constraints.require_approval.spend_over_usd".to_owned()
            }
            Violation::MinTrustLowered | Violation::MinTrustDropped => {
                "constraints.min_trust".to_owned()
            }
            Violation::FrameworkDropped(_) => "policy.frameworks".to_owned(),
            Violation::LifetimeBeyondParent { .. } => "exp".to_owned(),
            Violation::ArgsRuleDropped(_) => "constraints.args".to_owned(),
            Violation::ApprovalArgsChanged => "constraints.require_approval.args".to_owned(),
            Violation::AudienceChanged { .. } | Violation::AudienceDropped(_) => "aud".to_owned(),
        }
    }

    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            Violation::ResourceNotCovered(_) => "resource_not_covered",
            Violation::ActionNotHeld(_) => "action_not_held",
            Violation::ConstraintRaised(_) => "constraint_raised",
            Violation::ConstraintDropped(_) => "constraint_dropped",
            Violation::ApprovalDropped => "approval_dropped",
            Violation::ApprovalActionDropped(_) => "approval_action_dropped",
            Violation::ApprovalResourceNotCovered(_) => "approval_resource_not_covered",
            Violation::ApprovalThresholdRaised => "approval_threshold_raised",
            Violation::ApprovalThresholdDropped => "approval_threshold_dropped",
            Violation::MinTrustLowered => "min_trust_lowered",
            Violation::MinTrustDropped => "min_trust_dropped",
            Violation::FrameworkDropped(_) => "framework_dropped",
            Violation::LifetimeBeyondParent { .. } => "lifetime_beyond_parent",
            Violation::ArgsRuleDropped(_) => "args_rule_dropped",
            Violation::ApprovalArgsChanged => "approval_args_changed",
            Violation::AudienceChanged { .. } => "audience_changed",
            Violation::AudienceDropped(_) => "audience_dropped",
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::ResourceNotCovered(p) => {
                write!(
                    f,
                    "resource `{p}` is not covered by any resource of the parent"
                )
            }
            Violation::ActionNotHeld(a) => write!(f, "action `{a}` is not held by the parent"),
            Violation::ConstraintRaised(l) => {
                write!(f, "{} is higher than the parent's", l.as_str())
            }
            Violation::ConstraintDropped(l) => {
                write!(f, "{} is set by the parent and must be kept", l.as_str())
            }
            Violation::ApprovalDropped => f.write_str(
                "the parent requires approval (require_approval) and the child must too",
            ),
            Violation::ApprovalActionDropped(a) => write!(
                f,
                "action `{a}` needs approval under the parent and must stay in require_approval.actions"
            ),
            Violation::ApprovalResourceNotCovered(p) => write!(
                f,
                "resource `{p}` needs approval under the parent and no pattern of require_approval.resources covers it"
            ),
            Violation::ApprovalThresholdRaised => {
                f.write_str("require_approval.spend_over_usd is higher than the parent's")
            }
            Violation::ApprovalThresholdDropped => {
                f.write_str("require_approval.spend_over_usd is set by the parent and must be kept")
            }
            Violation::MinTrustLowered => {
                f.write_str("min_trust is lower than the parent's and may only be raised")
            }
            Violation::MinTrustDropped => {
                f.write_str("min_trust is set by the parent and must be kept")
            }
            Violation::FrameworkDropped(fw) => {
                write!(f, "policy framework `{fw}` of the parent must be kept")
            }
            Violation::LifetimeBeyondParent {
                child_exp,
                parent_exp,
            } => write!(
                f,
                "the child would expire at {child_exp}, after its parent at {parent_exp}"
            ),
            Violation::ArgsRuleDropped(i) => write!(
                f,
                "argument rule {i} of the parent (constraints.args[{i}]) must be kept unchanged"
            ),
            Violation::ApprovalArgsChanged => {
                f.write_str("require_approval.args is set by the parent and must be kept unchanged")
            }
            Violation::AudienceChanged { child, parent } => write!(
                f,
                "aud `{child}` is not the parent's audience `{parent}`, which a child keeps"
            ),
            Violation::AudienceDropped(parent) => {
                write!(f, "aud is set by the parent (`{parent}`) and must be kept")
            }
        }
    }
}

/// A child grant that is wider than its parent, with every reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Widening {
    pub violations: Vec<Violation>,
}

impl fmt::Display for Widening {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the delegation would widen its parent: ")?;
        for (i, v) in self.violations.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{v}")?;
        }
        Ok(())
    }
}

impl Widening {
    /// Stable code for the whole refusal.
    pub fn code(&self) -> &'static str {
        "scope_widening"
    }
}

fn check_limit<T: PartialOrd>(
    limit: Limit,
    child: Option<T>,
    parent: Option<T>,
    violations: &mut Vec<Violation>,
) {
    match (child, parent) {
        (None, Some(_)) => violations.push(Violation::ConstraintDropped(limit)),
        (Some(c), Some(p)) if c > p => violations.push(Violation::ConstraintRaised(limit)),
        _ => {}
    }
}

/// Checks that `child` grants nothing `parent` does not. Lists every
/// violation when it does. An audience (`aud`) is kept exactly: a child of
/// a grant with one names the same (`audience_changed` otherwise, and
/// `audience_dropped` for none, which would mean any resource server); a
/// child of a grant without one may name one, which only narrows.
pub fn check_narrowing(child: &Grant, parent: &Grant) -> Result<(), Widening> {
    let mut violations = Vec::new();
    for pattern in child.scope.resources() {
        if !parent
            .scope
            .resources()
            .iter()
            .any(|p| p.covers_pattern(pattern))
        {
            violations.push(Violation::ResourceNotCovered(pattern.clone()));
        }
    }
    for action in child.scope.actions() {
        if !parent.scope.actions().contains(action) {
            violations.push(Violation::ActionNotHeld(action.clone()));
        }
    }
    check_limit(
        Limit::MaxSpendUsd,
        child.constraints.max_spend_usd,
        parent.constraints.max_spend_usd,
        &mut violations,
    );
    check_limit(
        Limit::MaxSpendPerActionUsd,
        child.constraints.max_spend_per_action_usd,
        parent.constraints.max_spend_per_action_usd,
        &mut violations,
    );
    check_limit(
        Limit::MaxActions,
        child.constraints.max_actions,
        parent.constraints.max_actions,
        &mut violations,
    );
    check_covers(
        child.constraints.require_approval.as_ref(),
        parent.constraints.require_approval.as_ref(),
        &mut violations,
    );
    match (child.constraints.min_trust, parent.constraints.min_trust) {
        (None, Some(_)) => violations.push(Violation::MinTrustDropped),
        (Some(c), Some(p)) if c < p => violations.push(Violation::MinTrustLowered),
        _ => {}
    }
    check_rules_kept(
        &child.constraints.args,
        &parent.constraints.args,
        &mut violations,
    );
    for framework in parent.policy.frameworks() {
        if !child.policy.frameworks().contains(framework) {
            violations.push(Violation::FrameworkDropped(framework.clone()));
        }
    }
    if child.expires_at > parent.expires_at {
        violations.push(Violation::LifetimeBeyondParent {
            child_exp: child.expires_at,
            parent_exp: parent.expires_at,
        });
    }
    match (&child.audience, &parent.audience) {
        (Some(child), Some(parent)) if child != parent => {
            violations.push(Violation::AudienceChanged {
                child: child.clone(),
                parent: parent.clone(),
            });
        }
        (None, Some(parent)) => violations.push(Violation::AudienceDropped(parent.clone())),
        _ => {}
    }
    if violations.is_empty() {
        Ok(())
    } else {
        Err(Widening { violations })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(resources: &[&str], actions: &[&str]) -> Scope {
        Scope::parse(resources, actions).unwrap()
    }

    fn grant(resources: &[&str], actions: &[&str]) -> Grant {
        Grant {
            scope: scope(resources, actions),
            constraints: Constraints::default(),
            policy: Policy::default(),
            expires_at: 1_000,
            audience: None,
        }
    }

    fn res(text: &str) -> Resource {
        Resource::parse(text).unwrap()
    }

    fn act(text: &str) -> Action {
        Action::parse(text).unwrap()
    }

    #[test]
    fn names_with_dot_or_empty_segments_or_encoded_separators_are_refused() {
        for bad in [
            "fs:/srv/reports/../../etc/shadow",
            "fs:/srv/./x",
            "fs:..",
            "fs:.",
            "fs:/srv//x",
            "fs://srv",
            "fs:a/",
            "s3:bucket::key",
            "s3:bucket:..:key",
            "fs:/srv/%2e%2e/x",
            "fs:/srv/%2E./x",
            "fs:/srv%2Fx",
            "crm:a%3ab",
        ] {
            assert_eq!(
                Resource::parse(bad),
                Err(ScopeError::InvalidResource),
                "{bad}"
            );
            assert_eq!(
                ResourcePattern::parse(bad),
                Err(ScopeError::InvalidPattern),
                "{bad}"
            );
        }
        for good in [
            "fs:/srv/reports/q3.pdf",
            "fs:/.hidden/x",
            "fs:a..b",
            "s3:bucket:key",
        ] {
            assert!(Resource::parse(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn prefix_patterns_cover_what_extends_them() {
        let p = |text: &str| ResourcePattern::parse(text).unwrap();
        let r = |text: &str| Resource::parse(text).unwrap();
        for good in ["crm:contact/*", "s3:bucket:*", "fs:/srv/reports/*", "fs:/*"] {
            assert!(ResourcePattern::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "crm:contact*",
            "crm:contact/**",
            "crm:*/x",
            "crm:a//*",
            "fs:/srv/../*",
            "crm::*",
            "crm:contact/*/x",
        ] {
            assert_eq!(
                ResourcePattern::parse(bad),
                Err(ScopeError::InvalidPattern),
                "{bad}"
            );
        }
        let contacts = p("crm:contact/*");
        assert!(contacts.covers(&r("crm:contact/42")));
        assert!(contacts.covers(&r("crm:contact/vip/7")));
        assert!(!contacts.covers(&r("crm:contact")));
        assert!(!contacts.covers(&r("crm:contacts/1")));
        assert!(!contacts.covers(&r("mail:contact/1")));
        // Narrowing: a child pattern is covered when its prefix extends
        // the parent's.
        assert!(p("crm:*").covers_pattern(&contacts));
        assert!(contacts.covers_pattern(&p("crm:contact/vip/*")));
        assert!(contacts.covers_pattern(&p("crm:contact/42")));
        assert!(contacts.covers_pattern(&contacts));
        assert!(!contacts.covers_pattern(&p("crm:*")));
        assert!(!contacts.covers_pattern(&p("crm:contacts/*")));
        assert!(!contacts.covers_pattern(&p("crm:contact")));
        assert!(!p("crm:contact/42").covers_pattern(&p("crm:contact/42/*")));
        assert!(!p("crm:contact:*").covers_pattern(&contacts));
        // Overlap, for approval requirements.
        assert!(contacts.overlaps(&p("crm:contact/vip/*")));
        assert!(p("crm:contact/vip/*").overlaps(&contacts));
        assert!(contacts.overlaps(&p("crm:contact/1")));
        assert!(contacts.overlaps(&p("crm:*")));
        assert!(!contacts.overlaps(&p("crm:deal/*")));
        assert!(!contacts.overlaps(&p("crm:contact")));
    }

    #[test]
    fn resource_forms() {
        for good in [
            "crm:contacts",
            "files:/reports/q3.pdf",
            "s3:bucket:key",
            "a:b",
            "0x:y",
        ] {
            assert!(Resource::parse(good).is_ok(), "{good}");
            assert!(ResourcePattern::parse(good).is_ok(), "{good}");
        }
        assert!(ResourcePattern::parse("crm:*").is_ok());
        assert_eq!(Resource::parse("crm:*"), Err(ScopeError::InvalidResource));
        let too_long = format!("ns:{}", "x".repeat(254));
        for bad in [
            "crm",
            ":x",
            "crm:",
            "CRM:x",
            "-a:x",
            "crm:a b",
            "crm:a*",
            "*:*",
            "crm:ä",
            "crm:\u{0}",
            too_long.as_str(),
        ] {
            assert_eq!(
                Resource::parse(bad),
                Err(ScopeError::InvalidResource),
                "{bad:?}"
            );
            assert_eq!(
                ResourcePattern::parse(bad),
                Err(ScopeError::InvalidPattern),
                "{bad:?}"
            );
        }
        assert!(Resource::parse(&format!("ns:{}", "x".repeat(253))).is_ok());
    }

    #[test]
    fn action_forms() {
        for good in ["read", "summarise", "delegate", "db.query", "a-b_c9"] {
            assert!(Action::parse(good).is_ok());
        }
        for bad in ["", "Read", "9read", "re ad", "read\n", &"a".repeat(65)] {
            assert_eq!(
                Action::parse(bad),
                Err(ScopeError::InvalidAction),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn scope_lists() {
        assert_eq!(
            Scope::parse::<&str, &str>(&[], &["read"]),
            Err(ScopeError::Empty("resources"))
        );
        assert_eq!(
            Scope::parse::<&str, &str>(&["a:b"], &[]),
            Err(ScopeError::Empty("actions"))
        );
        assert_eq!(
            Scope::parse(&["a:b"], &["read", "read"]),
            Err(ScopeError::Duplicate {
                field: "actions",
                value: "read".into()
            })
        );
        let many: Vec<String> = (0..65).map(|i| format!("ns:r{i}")).collect();
        assert_eq!(
            Scope::parse(&many, &["read"]),
            Err(ScopeError::TooMany("resources"))
        );
        let json = r#"{"resources":["crm:*"],"actions":["read"],"extra":1}"#;
        assert!(serde_json::from_str::<Scope>(json).is_err());
        let json = r#"{"resources":["crm:*"],"actions":["read"]}"#;
        let parsed: Scope = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_string(&parsed).unwrap(), json);
    }

    #[test]
    fn permits_exact_and_wildcard() {
        let s = scope(&["crm:contacts", "mail:*"], &["read", "write"]);
        assert!(permits(&s, &act("read"), &res("crm:contacts")));
        assert!(permits(&s, &act("write"), &res("mail:inbox")));
        assert!(!permits(&s, &act("read"), &res("crm:deals")));
        assert!(!permits(&s, &act("read"), &res("crmx:contacts")));
        assert_eq!(
            s.check(&act("delete"), &res("crm:contacts")),
            Err(ScopeDenial::ActionNotPermitted)
        );
        assert_eq!(
            s.check(&act("read"), &res("calendar:x")),
            Err(ScopeDenial::ResourceNotPermitted)
        );
    }

    #[test]
    fn narrowing_accepts_equal_and_narrower() {
        let parent = grant(&["crm:*", "mail:inbox"], &["read", "write", "delegate"]);
        assert_eq!(check_narrowing(&parent, &parent), Ok(()));
        let child = grant(&["crm:contacts"], &["read"]);
        assert_eq!(check_narrowing(&child, &parent), Ok(()));
    }

    #[test]
    fn narrowing_names_every_widening() {
        let mut parent = grant(&["crm:contacts"], &["read", "delegate"]);
        parent.constraints = Constraints {
            max_spend_per_action_usd: None,
            min_trust: None,
            max_spend_usd: Some(Usd::from_micros(10).unwrap()),
            max_actions: Some(5),
            require_approval: None,
            args: ArgsRules::default(),
        };
        parent.policy = Policy::new(vec![Framework::parse("hipaa").unwrap()]).unwrap();
        let mut child = grant(&["crm:*", "mail:x"], &["read", "write"]);
        child.constraints = Constraints {
            max_spend_per_action_usd: None,
            min_trust: None,
            max_spend_usd: Some(Usd::from_micros(11).unwrap()),
            max_actions: None,
            require_approval: None,
            args: ArgsRules::default(),
        };
        child.expires_at = 1_001;
        let err = check_narrowing(&child, &parent).unwrap_err();
        assert_eq!(
            err.violations,
            vec![
                Violation::ResourceNotCovered(ResourcePattern::parse("crm:*").unwrap()),
                Violation::ResourceNotCovered(ResourcePattern::parse("mail:x").unwrap()),
                Violation::ActionNotHeld(act("write")),
                Violation::ConstraintRaised(Limit::MaxSpendUsd),
                Violation::ConstraintDropped(Limit::MaxActions),
                Violation::FrameworkDropped(Framework::parse("hipaa").unwrap()),
                Violation::LifetimeBeyondParent {
                    child_exp: 1_001,
                    parent_exp: 1_000
                },
            ]
        );
        let fields: Vec<String> = err.violations.iter().map(Violation::field).collect();
        assert_eq!(
            fields,
            [
                "resources",
                "resources",
                "actions",
                "constraints.max_spend_usd",
                "constraints.max_actions",
                "policy.frameworks",
                "exp"
            ]
        );
    }

    #[test]
    fn child_may_add_limits_and_frameworks() {
        let parent = grant(&["crm:*"], &["read"]);
        let mut child = grant(&["crm:*"], &["read"]);
        child.constraints.max_actions = Some(3);
        child.policy = Policy::new(vec![Framework::parse("gdpr").unwrap()]).unwrap();
        assert_eq!(check_narrowing(&child, &parent), Ok(()));
        assert!(check_narrowing(&parent, &child).is_err());
    }

    #[test]
    fn constraints_serde() {
        let c: Constraints = serde_json::from_str(r#"{"max_spend_usd":2.5}"#).unwrap();
        assert_eq!(c.max_spend_usd.map(Usd::micros), Some(2_500_000));
        assert_eq!(c.max_actions, None);
        assert!(serde_json::from_str::<Constraints>(r#"{"max_actions":1.5}"#).is_err());
        assert!(serde_json::from_str::<Constraints>(r#"{"max_actions":-1}"#).is_err());
        assert!(serde_json::from_str::<Constraints>(r#"{"max_actions":2000000000}"#).is_err());
        assert!(serde_json::from_str::<Constraints>(r#"{"max_spend_usd":-1}"#).is_err());
        assert!(serde_json::from_str::<Constraints>(r#"{"budget":1}"#).is_err());
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"max_spend_usd":2.5}"#
        );
    }

    #[test]
    fn min_trust_may_only_be_raised() {
        let floor = |value: f64| Some(MinTrust::new(value).unwrap());
        let mut parent = grant(&["crm:*"], &["read"]);
        parent.constraints.min_trust = floor(0.5);
        let mut child = parent.clone();
        assert_eq!(check_narrowing(&child, &parent), Ok(()));
        child.constraints.min_trust = floor(0.9);
        assert_eq!(check_narrowing(&child, &parent), Ok(()));
        child.constraints.min_trust = floor(0.4);
        let err = check_narrowing(&child, &parent).unwrap_err();
        assert_eq!(err.violations, vec![Violation::MinTrustLowered]);
        assert_eq!(err.violations[0].field(), "constraints.min_trust");
        assert_eq!(err.violations[0].code(), "min_trust_lowered");
        child.constraints.min_trust = None;
        let err = check_narrowing(&child, &parent).unwrap_err();
        assert_eq!(err.violations, vec![Violation::MinTrustDropped]);
        assert_eq!(err.violations[0].field(), "constraints.min_trust");
        // A child may set a floor its parent does not.
        assert_eq!(
            check_narrowing(&parent, &grant(&["crm:*"], &["read"])),
            Ok(())
        );
    }

    #[test]
    fn min_trust_serde() {
        let c: Constraints = serde_json::from_str(r#"{"min_trust":0.5}"#).unwrap();
        assert_eq!(c.min_trust.map(MinTrust::get), Some(0.5));
        assert!(!c.is_empty());
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"min_trust":0.5}"#);
        for bad in ["1.5", "-0.1", "\"0.5\"", "null"] {
            let text = format!(r#"{{"min_trust":{bad}}}"#);
            let parsed = serde_json::from_str::<Constraints>(&text);
            assert!(bad == "null" || parsed.is_err(), "{bad}");
        }
        assert_eq!(MinTrust::new(f64::NAN), Err(ScopeError::InvalidMinTrust));
        assert_eq!(MinTrust::new(-0.0).map(MinTrust::get), Ok(0.0));
    }
}
