//! Resource patterns, scopes and narrowing from arbitrary text: parsing
//! refuses cleanly, and the laws hold for whatever parses — a child that
//! passes narrowing permits nothing its parent does not, and asks approval
//! for everything its parent asks approval for, and holds it to a trust
//! floor at least its parent's, for the parent's audience if it names one.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mandate_core::{
    Action, ApprovalRequirement, Audience, Constraints, Grant, MinTrust, Policy, Resource, ResourcePattern,
    Scope, Usd, check_narrowing, permits,
};

#[derive(Arbitrary, Debug)]
struct Side {
    resources: Vec<String>,
    actions: Vec<String>,
    max_spend_micros: Option<u64>,
    max_spend_per_action_micros: Option<u64>,
    max_actions: Option<u64>,
    approval: Option<Approval>,
    min_trust: Option<f64>,
    exp: i64,
    audience: Option<String>,
}

#[derive(Arbitrary, Debug)]
struct Approval {
    actions: Option<Vec<String>>,
    resources: Option<Vec<String>>,
    spend_over_micros: Option<u64>,
}

#[derive(Arbitrary, Debug)]
struct Input {
    child: Side,
    parent: Side,
    action: String,
    resource: String,
    spend_micros: u64,
}

fn grant(side: &Side) -> Option<Grant> {
    let scope = Scope::parse(&side.resources, &side.actions).ok()?;
    let require_approval = match &side.approval {
        Some(approval) => Some(
            ApprovalRequirement::parse(
                approval.actions.as_deref(),
                approval.resources.as_deref(),
                approval
                    .spend_over_micros
                    .and_then(|m| Usd::from_micros(m).ok()),
            )
            .ok()?,
        ),
        None => None,
    };
    let audience = match &side.audience {
        Some(uri) => Some(Audience::parse(uri).ok()?),
        None => None,
    };
    Some(Grant {
        scope,
        constraints: Constraints {
            max_spend_usd: side.max_spend_micros.and_then(|m| Usd::from_micros(m).ok()),
            max_spend_per_action_usd: side
                .max_spend_per_action_micros
                .and_then(|m| Usd::from_micros(m).ok()),
            max_actions: side.max_actions,
            require_approval,
            min_trust: side.min_trust.and_then(|floor| MinTrust::new(floor).ok()),
            args: Default::default(),
        },
        policy: Policy::default(),
        expires_at: side.exp,
        audience,
    })
}

fuzz_target!(|input: Input| {
    for text in input.child.resources.iter().chain(&input.parent.resources) {
        let _ = ResourcePattern::parse(text);
    }
    let (Some(child), Some(parent)) = (grant(&input.child), grant(&input.parent)) else {
        return;
    };
    let (Ok(action), Ok(resource)) = (
        Action::parse(&input.action),
        Resource::parse(&input.resource),
    ) else {
        return;
    };
    if check_narrowing(&child, &parent).is_ok() {
        if permits(&child.scope, &action, &resource) {
            assert!(permits(&parent.scope, &action, &resource));
        }
        if let (Some(theirs), Ok(spend)) = (
            &parent.constraints.require_approval,
            Usd::from_micros(input.spend_micros),
        ) && theirs.applies(&action, &resource, spend)
        {
            let ours = child.constraints.require_approval.as_ref();
            assert!(ours.is_some_and(|ours| ours.applies(&action, &resource, spend)));
        }
        if let Some(theirs) = &parent.audience {
            assert_eq!(child.audience.as_ref(), Some(theirs));
        }
        if let Some(theirs) = parent.constraints.min_trust {
            let ours = child.constraints.min_trust;
            assert!(ours.is_some_and(|ours| ours.get() >= theirs.get()));
        }
    }
    assert!(check_narrowing(&parent, &parent).is_ok());
});
