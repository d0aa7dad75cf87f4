//! Resource patterns, scopes and narrowing from arbitrary text: parsing
//! refuses cleanly, and the laws hold for whatever parses — a child that
//! passes narrowing permits nothing its parent does not.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mandate_core::{
    Action, Constraints, Grant, Policy, Resource, ResourcePattern, Scope, Usd, check_narrowing, permits,
};

#[derive(Arbitrary, Debug)]
struct Side {
    resources: Vec<String>,
    actions: Vec<String>,
    max_spend_micros: Option<u64>,
    max_actions: Option<u64>,
    exp: i64,
}

#[derive(Arbitrary, Debug)]
struct Input {
    child: Side,
    parent: Side,
    action: String,
    resource: String,
}

fn grant(side: &Side) -> Option<Grant> {
    let scope = Scope::parse(&side.resources, &side.actions).ok()?;
    Some(Grant {
        scope,
        constraints: Constraints {
            max_spend_usd: side.max_spend_micros.and_then(|m| Usd::from_micros(m).ok()),
            max_actions: side.max_actions,
        },
        policy: Policy::default(),
        expires_at: side.exp,
    })
}

fuzz_target!(|input: Input| {
    for text in input.child.resources.iter().chain(&input.parent.resources) {
        let _ = ResourcePattern::parse(text);
    }
    let (Some(child), Some(parent)) = (grant(&input.child), grant(&input.parent)) else {
        return;
    };
    let (Ok(action), Ok(resource)) = (Action::parse(&input.action), Resource::parse(&input.resource)) else {
        return;
    };
    if check_narrowing(&child, &parent).is_ok() && permits(&child.scope, &action, &resource) {
        assert!(permits(&parent.scope, &action, &resource));
    }
    assert!(check_narrowing(&parent, &parent).is_ok());
});
