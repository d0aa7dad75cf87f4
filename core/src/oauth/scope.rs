//! The `scope` parameter (RFC 6749 §3.3) ↔ Mandate's actions × resources.
//!
//! ```text
//! scope       = scope-token *( SP scope-token )
//! scope-token = 1*NQCHAR        ; NQCHAR = %x21 / %x23-5B / %x5D-7E
//! ```
//!
//! A scope token with a `:` is a **resource pattern** (`crm:*`,
//! `crm:contacts`, `files:/reports/*`); one without is an **action**
//! (`read`, `contacts.search`). The action grammar (`a-z` first, then
//! `a-z 0-9 _ . -`) has no colon and every resource pattern has one, so a
//! token reads one way only. `offline_access` (OpenID Connect's name for
//! "give me a refresh token") is reserved: never an action, accepted and
//! remembered, while refresh tokens follow the client's registered
//! `grant_types`. A resource pattern holding `"` or `\` (which
//! [`ResourcePattern`] allows and NQCHAR does not) cannot be written as a
//! scope token.
//!
//! The requested grant is the actions × the resources. A request may name
//! no resource (stock clients ask for what the MCP server's metadata
//! lists): then the consent page makes the human type the resource
//! patterns (fail closed), and [`RequestedScope::to_scope`] refuses until
//! both lists are there. The same token twice counts once: RFC 6749 §3.3
//! reads the parameter as a set ("the order does not matter").
//!
//! What the human chooses is checked against [`RequestedScope::ceiling`]
//! with core's `check_narrowing`, like any delegation: narrower or equal,
//! every widening named.

use std::collections::BTreeSet;

use super::OAuthError;
use crate::limits::MAX_LIST_LEN;
use crate::scope::{Action, Constraints, Grant, Policy, ResourcePattern, Scope, ScopeError};

/// The reserved scope token asking for a refresh token.
pub const OFFLINE_ACCESS: &str = "offline_access";

/// Why a `scope` parameter, or a scope to write as one, is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeGrammarError {
    #[error(
        "scope must be scope tokens separated by single spaces, each of printable ASCII other than `\"` and `\\` (RFC 6749 §3.3)"
    )]
    Malformed,
    #[error("scope token `{0}` is neither an action nor a resource pattern")]
    InvalidToken(String),
    #[error("scope may name at most {MAX_LIST_LEN} actions and {MAX_LIST_LEN} resource patterns")]
    TooLong,
    #[error("resource pattern `{0}` cannot be written as a scope token (it holds `\"` or `\\`)")]
    NotAToken(String),
    #[error("`{OFFLINE_ACCESS}` is reserved and cannot be granted as an action")]
    ReservedAction,
    #[error(transparent)]
    Scope(ScopeError),
}

impl ScopeGrammarError {
    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            ScopeGrammarError::Malformed => "scope_malformed",
            ScopeGrammarError::InvalidToken(_) => "scope_token_invalid",
            ScopeGrammarError::TooLong => "scope_too_long",
            ScopeGrammarError::NotAToken(_) => "scope_not_a_token",
            ScopeGrammarError::ReservedAction => "scope_reserved_action",
            ScopeGrammarError::Scope(e) => e.code(),
        }
    }

    /// The OAuth `error`: always `invalid_scope` (RFC 6749 §4.1.2.1, §5.2).
    pub fn oauth_error(&self) -> OAuthError {
        OAuthError::InvalidScope
    }
}

/// NQCHAR (RFC 6749 Appendix A.4).
fn is_nqchar(b: u8) -> bool {
    matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E)
}

/// A `scope` parameter read: the actions and resource patterns it names,
/// in the order first named, and whether it asked for `offline_access`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestedScope {
    actions: Vec<Action>,
    resources: Vec<ResourcePattern>,
    offline_access: bool,
}

impl RequestedScope {
    /// Reads a `scope` parameter.
    pub fn parse(text: &str) -> Result<RequestedScope, ScopeGrammarError> {
        let mut read = RequestedScope::default();
        let mut seen = BTreeSet::new();
        for token in text.split(' ') {
            if token.is_empty() || !token.bytes().all(is_nqchar) {
                return Err(ScopeGrammarError::Malformed);
            }
            if !seen.insert(token) {
                continue;
            }
            if token == OFFLINE_ACCESS {
                read.offline_access = true;
            } else if token.contains(':') {
                let pattern = ResourcePattern::parse(token)
                    .map_err(|_| ScopeGrammarError::InvalidToken(token.to_owned()))?;
                read.resources.push(pattern);
            } else {
                let action = Action::parse(token)
                    .map_err(|_| ScopeGrammarError::InvalidToken(token.to_owned()))?;
                read.actions.push(action);
            }
            if read.actions.len() > MAX_LIST_LEN || read.resources.len() > MAX_LIST_LEN {
                return Err(ScopeGrammarError::TooLong);
            }
        }
        Ok(read)
    }

    /// The actions asked for.
    pub fn actions(&self) -> &[Action] {
        &self.actions
    }

    /// The resource patterns asked for (may be none).
    pub fn resources(&self) -> &[ResourcePattern] {
        &self.resources
    }

    /// Whether `offline_access` was asked for.
    pub fn offline_access(&self) -> bool {
        self.offline_access
    }

    /// The scope asked for: refused while it names no action or no
    /// resource (`empty_list`, naming which).
    pub fn to_scope(&self) -> Result<Scope, ScopeGrammarError> {
        Scope::new(self.resources.clone(), self.actions.clone()).map_err(ScopeGrammarError::Scope)
    }

    /// What a refresh asking for this scope gets of `granted` (RFC 6749
    /// §6: at most what was granted, all of it when `scope` is omitted):
    /// the actions named, else the granted ones; the resource patterns
    /// named, else the granted ones. Whether that is within `granted` is
    /// the renewal's to judge (`renew_within`, by `check_narrowing`).
    pub fn within(&self, granted: &Scope) -> Result<Scope, ScopeGrammarError> {
        let actions = if self.actions.is_empty() {
            granted.actions()
        } else {
            &self.actions
        };
        let resources = if self.resources.is_empty() {
            granted.resources()
        } else {
            &self.resources
        };
        Scope::new(resources.to_vec(), actions.to_vec()).map_err(ScopeGrammarError::Scope)
    }

    /// The most a consent may grant for this request: the actions × the
    /// resources asked for, no constraint, no policy, until `expires_at`.
    /// The human's choice must narrow it (`check_narrowing(choice,
    /// ceiling)`); constraints the human adds only tighten.
    pub fn ceiling(&self, expires_at: i64) -> Result<Grant, ScopeGrammarError> {
        Ok(Grant {
            scope: self.to_scope()?,
            constraints: Constraints::default(),
            policy: Policy::default(),
            expires_at,
            // Any audience: the request's `resource` sets the token's `aud`,
            // which the choice carries and narrowing then keeps.
            audience: None,
        })
    }
}

/// Writes a scope as a `scope` parameter (the token response's `scope`,
/// RFC 6749 §5.1): its actions, then its resource patterns, each once, in
/// their order. Refused when an action is `offline_access` or a pattern is
/// no scope token.
pub fn format(scope: &Scope) -> Result<String, ScopeGrammarError> {
    let mut tokens = Vec::with_capacity(scope.actions().len() + scope.resources().len());
    for action in scope.actions() {
        if action.as_str() == OFFLINE_ACCESS {
            return Err(ScopeGrammarError::ReservedAction);
        }
        tokens.push(action.as_str());
    }
    for pattern in scope.resources() {
        if !pattern.as_str().bytes().all(is_nqchar) {
            return Err(ScopeGrammarError::NotAToken(pattern.as_str().to_owned()));
        }
        tokens.push(pattern.as_str());
    }
    Ok(tokens.join(" "))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::scope::{Violation, check_narrowing};

    fn actions(scope: &RequestedScope) -> Vec<&str> {
        scope.actions().iter().map(Action::as_str).collect()
    }

    fn resources(scope: &RequestedScope) -> Vec<&str> {
        scope
            .resources()
            .iter()
            .map(ResourcePattern::as_str)
            .collect()
    }

    #[test]
    fn tokens_read_one_way() {
        let read = RequestedScope::parse(
            "read crm:* write crm:contact/* files:/r/q3.pdf offline_access read",
        )
        .unwrap();
        assert_eq!(actions(&read), ["read", "write"]);
        assert_eq!(
            resources(&read),
            ["crm:*", "crm:contact/*", "files:/r/q3.pdf"]
        );
        assert!(read.offline_access());
        let scope = read.to_scope().unwrap();
        assert_eq!(
            format(&scope).unwrap(),
            "read write crm:* crm:contact/* files:/r/q3.pdf"
        );

        let actions_only = RequestedScope::parse("tools.call").unwrap();
        assert_eq!(actions(&actions_only), ["tools.call"]);
        assert!(resources(&actions_only).is_empty());
        assert!(!actions_only.offline_access());
        assert_eq!(
            actions_only.to_scope().unwrap_err().code(),
            "empty_list",
            "no resource: the page must ask for one"
        );
    }

    #[test]
    fn malformed_scopes() {
        for bad in [
            "",
            " ",
            "read  write",
            " read",
            "read ",
            "read\twrite",
            "re\"ad",
            "a\\b",
            "r\u{e9}ad",
        ] {
            assert_eq!(
                RequestedScope::parse(bad),
                Err(ScopeGrammarError::Malformed),
                "{bad:?}"
            );
        }
        for bad in [
            "Read",
            "1read",
            "crm:",
            ":x",
            "crm:a*",
            "CRM:x",
            "files:/a/../b",
            "*:*",
        ] {
            assert_eq!(
                RequestedScope::parse(bad),
                Err(ScopeGrammarError::InvalidToken(bad.to_owned())),
                "{bad:?}"
            );
        }
        let many = (0..=MAX_LIST_LEN)
            .map(|i| format!("a{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(
            RequestedScope::parse(&many),
            Err(ScopeGrammarError::TooLong)
        );
        let many = (0..=MAX_LIST_LEN)
            .map(|i| format!("n:{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(
            RequestedScope::parse(&many),
            Err(ScopeGrammarError::TooLong)
        );
        // Repeats count once, however many.
        let repeated = vec!["read"; 1000].join(" ");
        assert_eq!(
            actions(&RequestedScope::parse(&repeated).unwrap()),
            ["read"]
        );
    }

    #[test]
    fn what_cannot_be_written() {
        let quoted = Scope::parse(&["crm:a\"b"], &["read"]).unwrap();
        assert_eq!(
            format(&quoted),
            Err(ScopeGrammarError::NotAToken("crm:a\"b".into()))
        );
        let backslash = Scope::parse(&["crm:a\\b"], &["read"]).unwrap();
        assert_eq!(format(&backslash).unwrap_err().code(), "scope_not_a_token");
        let reserved = Scope::parse(&["crm:*"], &["offline_access"]).unwrap();
        assert_eq!(format(&reserved), Err(ScopeGrammarError::ReservedAction));
        for e in [quoted, backslash, reserved]
            .iter()
            .filter_map(|s| format(s).err())
        {
            assert_eq!(e.oauth_error(), OAuthError::InvalidScope);
            assert!(super::super::listed(e.code()), "{}", e.code());
        }
        for e in [
            ScopeGrammarError::Malformed,
            ScopeGrammarError::InvalidToken("x".into()),
            ScopeGrammarError::TooLong,
        ] {
            assert!(super::super::listed(e.code()), "{}", e.code());
        }
    }

    /// RFC 6749 §6: a refresh names what it keeps; what it leaves out is
    /// the grant's.
    #[test]
    fn a_refresh_scope_fills_in_the_granted_half_it_leaves_out() {
        let granted = Scope::parse(&["crm:*", "mail:*"], &["read", "write"]).unwrap();
        for (asked, resources, actions) in [
            ("read", vec!["crm:*", "mail:*"], vec!["read"]),
            ("crm:contacts", vec!["crm:contacts"], vec!["read", "write"]),
            ("write mail:*", vec!["mail:*"], vec!["write"]),
            (
                "offline_access",
                vec!["crm:*", "mail:*"],
                vec!["read", "write"],
            ),
            // Wider is written as asked: the renewal refuses it.
            ("delete", vec!["crm:*", "mail:*"], vec!["delete"]),
        ] {
            let scope = RequestedScope::parse(asked).unwrap().within(&granted);
            assert_eq!(
                scope,
                Ok(Scope::parse(&resources[..], &actions[..]).unwrap()),
                "{asked}"
            );
        }
    }

    #[test]
    fn a_wider_choice_is_refused_naming_the_field() {
        let asked = RequestedScope::parse("read crm:contacts").unwrap();
        let ceiling = asked.ceiling(2_000).unwrap();
        let wider = Grant {
            scope: Scope::parse(&["crm:*"], &["read", "write"]).unwrap(),
            constraints: Constraints::default(),
            policy: Policy::default(),
            expires_at: 3_000,
            audience: None,
        };
        let widening = check_narrowing(&wider, &ceiling).unwrap_err();
        assert_eq!(
            widening.violations,
            vec![
                Violation::ResourceNotCovered(ResourcePattern::parse("crm:*").unwrap()),
                Violation::ActionNotHeld(Action::parse("write").unwrap()),
                Violation::LifetimeBeyondParent {
                    child_exp: 3_000,
                    parent_exp: 2_000,
                },
            ]
        );
    }

    fn action() -> impl Strategy<Value = String> {
        "[a-z][a-z0-9_.-]{0,8}".prop_filter("reserved", |a| a != OFFLINE_ACCESS)
    }

    fn pattern() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z][a-z0-9]{0,5}:\\*",
            "[a-z][a-z0-9]{0,5}:[a-z0-9]{1,6}(/[a-z0-9]{1,6}){0,2}",
            "[a-z][a-z0-9]{0,5}:[a-z0-9]{1,6}/\\*",
        ]
    }

    fn scope() -> impl Strategy<Value = Scope> {
        (
            prop::collection::btree_set(pattern(), 1..6),
            prop::collection::btree_set(action(), 1..6),
        )
            .prop_map(|(r, a)| {
                Scope::parse(
                    &r.into_iter().collect::<Vec<_>>(),
                    &a.into_iter().collect::<Vec<_>>(),
                )
                .unwrap()
            })
    }

    proptest! {
        /// Writing a scope and reading it back gives the same scope.
        #[test]
        fn scope_round_trip(scope in scope()) {
            let text = format(&scope).unwrap();
            let read = RequestedScope::parse(&text).unwrap();
            prop_assert!(!read.offline_access());
            prop_assert_eq!(read.to_scope().unwrap(), scope);
        }

        /// Any subset of what was asked, with any constraint added, passes
        /// the ceiling; adding an action or a resource not asked for never
        /// does, and the violation names it.
        #[test]
        fn consent_choice_never_widens(
            asked in scope(),
            keep_actions in prop::collection::vec(any::<bool>(), 6),
            keep_resources in prop::collection::vec(any::<bool>(), 6),
            max_actions in prop::option::of(0u64..100),
            extra_action in action(),
            extra_namespace in "[a-z]{1,4}",
        ) {
            let ceiling = RequestedScope::parse(&format(&asked).unwrap())
                .unwrap()
                .ceiling(1_000)
                .unwrap();
            let pick = |keep: &[bool], i: usize| keep.get(i).copied().unwrap_or(true);
            let mut chosen_actions: Vec<Action> = asked.actions().iter().enumerate()
                .filter(|(i, _)| pick(&keep_actions, *i)).map(|(_, a)| a.clone()).collect();
            if chosen_actions.is_empty() { chosen_actions.push(asked.actions()[0].clone()); }
            let mut chosen_resources: Vec<ResourcePattern> = asked.resources().iter().enumerate()
                .filter(|(i, _)| pick(&keep_resources, *i)).map(|(_, r)| r.clone()).collect();
            if chosen_resources.is_empty() { chosen_resources.push(asked.resources()[0].clone()); }
            let choice = Grant {
                scope: Scope::new(chosen_resources.clone(), chosen_actions.clone()).unwrap(),
                constraints: Constraints { max_actions, ..Constraints::default() },
                policy: Policy::default(),
                expires_at: 1_000,
                audience: None,
            };
            prop_assert!(check_narrowing(&choice, &ceiling).is_ok());

            let extra = Action::parse(&extra_action).unwrap();
            if !asked.actions().contains(&extra) {
                let mut actions = chosen_actions.clone();
                actions.push(extra.clone());
                let wider = Grant { scope: Scope::new(chosen_resources.clone(), actions).unwrap(), ..choice.clone() };
                let widening = check_narrowing(&wider, &ceiling).unwrap_err();
                prop_assert_eq!(widening.violations, vec![Violation::ActionNotHeld(extra)]);
            }
            // A whole namespace the request does not cover is refused.
            let outside = ResourcePattern::parse(&std::format!("{extra_namespace}:*")).unwrap();
            if !asked.resources().iter().any(|p| p.covers_pattern(&outside)) {
                let mut resources = chosen_resources;
                resources.push(outside.clone());
                let wider = Grant { scope: Scope::new(resources, chosen_actions).unwrap(), ..choice };
                let widening = check_narrowing(&wider, &ceiling).unwrap_err();
                prop_assert_eq!(widening.violations, vec![Violation::ResourceNotCovered(outside)]);
            }
        }
    }
}
