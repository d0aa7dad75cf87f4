//! What an agent is: a principal of its organisation that one human owns,
//! and who may name it in a token. Naming an agent proves nothing, exactly
//! as naming a token proves nothing.
//!
//! - An agent id is registered the first time a token is issued for it,
//!   with one owner: the human of that root token (its `human_ref`). A root
//!   token for an agent another human owns needs `issue_for_anyone`
//!   ([`may_issue_for`]).
//! - A delegation names a new agent — registered as a sub-agent of the
//!   delegating agent, owned by the same human — or one already registered
//!   under the delegator (anywhere in its subtree, the delegator itself
//!   included); never one outside it ([`check_naming`]).
//! - The trust in force for an act is the minimum over the agents of the
//!   acting token's chain, an agent with no history of its own counting as
//!   its delegator's ([`chain_trust`]).
//!
//! The registry (which agent is registered under which, and whose it is)
//! is the caller's: [`check_naming`] reads it through a lookup the caller
//! gives, and registers nothing.
//!
//! Laws (proptest below): no sequence of delegations gives a token an agent
//! outside the subtree of its parent token's agent (so of its root's); a
//! child never acts with more trust than any agent of its chain.

use crate::ids::{AgentId, HumanRef};
use crate::limits::MAX_AGENT_TREE_DEPTH;

/// How a delegation may name its child's agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// An agent not registered yet: the delegation registers it as a
    /// sub-agent of the delegating agent, with the delegator's owner.
    New,
    /// The delegating agent itself, or an agent registered under it.
    Within,
}

/// A delegation named an agent outside the delegator's subtree, or a root
/// token an agent another human owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("this agent is registered to another owner, outside the delegating agent's subtree")]
pub struct NotYours;

impl NotYours {
    /// Stable snake_case code.
    pub fn code(self) -> &'static str {
        "agent_not_yours"
    }
}

/// Whether a root token for an agent whose registered owner is `owner`
/// (`None`: not registered yet) may be issued to `human`: an agent not
/// registered yet becomes `human`'s; one `human` owns, yes; another's only
/// with the `issue_for_anyone` permission.
pub fn may_issue_for(owner: Option<&HumanRef>, human: &HumanRef, issue_for_anyone: bool) -> bool {
    match owner {
        None => true,
        Some(owner) => owner == human || issue_for_anyone,
    }
}

/// How a token of `delegator` may name `child` in a delegation, reading the
/// registry through `parent_of`: for a registered agent `Some(its parent)`
/// (`Some(None)` for a top-level agent), `None` for one not registered.
/// `child` is [`Naming::Within`] when walking its parents up reaches
/// `delegator` (or it is `delegator`), [`Naming::New`] when it is not
/// registered, and [`NotYours`] otherwise — also when the walk passes
/// [`MAX_AGENT_TREE_DEPTH`] agents without reaching the top (fail closed).
pub fn check_naming<E>(
    delegator: &AgentId,
    child: &AgentId,
    mut parent_of: impl FnMut(&AgentId) -> Result<Option<Option<AgentId>>, E>,
) -> Result<Result<Naming, NotYours>, E> {
    if child == delegator {
        return Ok(Ok(Naming::Within));
    }
    let Some(mut parent) = parent_of(child)? else {
        return Ok(Ok(Naming::New));
    };
    for _ in 0..MAX_AGENT_TREE_DEPTH {
        match parent {
            None => return Ok(Err(NotYours)),
            Some(agent) if &agent == delegator => return Ok(Ok(Naming::Within)),
            Some(agent) => match parent_of(&agent)? {
                Some(next) => parent = next,
                // A registered agent's parent is registered before it; one
                // that is not is outside every subtree the walk could
                // prove.
                None => return Ok(Err(NotYours)),
            },
        }
    }
    Ok(Err(NotYours))
}

/// The trust in force for an act of a token whose chain's agents, root
/// first and the acting token's agent last, hold `own`: `Some(trust)` for
/// an agent with a history of its own (its score), `None` for one with
/// none, which counts as its delegator's. A root with no history of its
/// own counts as `new_agent`, the trust the rule gives a new agent with a
/// root token. The minimum over the chain, in [0, 1]; a value that is not
/// a number counts as 0, and an empty chain is 0 (fail closed).
pub fn chain_trust(own: impl IntoIterator<Item = Option<f64>>, new_agent: f64) -> f64 {
    let unit = |value: f64| {
        if value.is_finite() {
            value.clamp(0.0, 1.0)
        } else {
            0.0
        }
    };
    let mut trust: Option<f64> = None;
    for agent in own {
        trust = Some(match (trust, agent) {
            (None, agent) => unit(agent.unwrap_or(new_agent)),
            (Some(so_far), Some(value)) => so_far.min(unit(value)),
            (Some(so_far), None) => so_far,
        });
    }
    trust.unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::convert::Infallible;

    use proptest::prelude::*;

    use super::*;

    fn id(n: usize) -> AgentId {
        AgentId::parse(&format!("agent-{n}")).unwrap()
    }

    fn lookup(
        registry: &BTreeMap<AgentId, Option<AgentId>>,
    ) -> impl FnMut(&AgentId) -> Result<Option<Option<AgentId>>, Infallible> + '_ {
        |agent| Ok(registry.get(agent).cloned())
    }

    fn within(
        registry: &BTreeMap<AgentId, Option<AgentId>>,
        agent: &AgentId,
        ancestor: &AgentId,
    ) -> bool {
        let mut at = Some(agent.clone());
        while let Some(current) = at {
            if &current == ancestor {
                return true;
            }
            at = registry.get(&current).cloned().flatten();
        }
        false
    }

    #[test]
    fn a_delegation_names_itself_a_new_agent_or_one_of_its_subtree() {
        let mut registry = BTreeMap::new();
        registry.insert(id(1), None);
        registry.insert(id(2), Some(id(1)));
        registry.insert(id(3), Some(id(2)));
        registry.insert(id(9), None);
        let naming = |delegator: usize, child: usize| {
            check_naming(&id(delegator), &id(child), lookup(&registry)).unwrap()
        };
        assert_eq!(naming(1, 1), Ok(Naming::Within));
        assert_eq!(naming(1, 3), Ok(Naming::Within));
        assert_eq!(naming(2, 3), Ok(Naming::Within));
        assert_eq!(naming(1, 4), Ok(Naming::New));
        assert_eq!(naming(3, 2), Err(NotYours));
        assert_eq!(naming(1, 9), Err(NotYours));
        assert_eq!(naming(9, 1), Err(NotYours));
    }

    #[test]
    fn a_registry_deeper_than_the_limit_fails_closed() {
        let mut registry = BTreeMap::new();
        registry.insert(id(0), None);
        for n in 1..=MAX_AGENT_TREE_DEPTH + 1 {
            registry.insert(id(n), Some(id(n - 1)));
        }
        let deepest = id(MAX_AGENT_TREE_DEPTH + 1);
        assert_eq!(
            check_naming(&id(0), &deepest, lookup(&registry)).unwrap(),
            Err(NotYours)
        );
        assert_eq!(
            check_naming(&id(1), &deepest, lookup(&registry)).unwrap(),
            Ok(Naming::Within)
        );
    }

    #[test]
    fn issuing_for_another_owners_agent_needs_issue_for_anyone() {
        let alice = HumanRef::from_digest(&[1; 32]);
        let bob = HumanRef::from_digest(&[2; 32]);
        assert!(may_issue_for(None, &alice, false));
        assert!(may_issue_for(Some(&alice), &alice, false));
        assert!(!may_issue_for(Some(&bob), &alice, false));
        assert!(may_issue_for(Some(&bob), &alice, true));
    }

    #[test]
    fn a_fresh_sub_agent_counts_as_its_delegator() {
        assert_eq!(chain_trust([Some(0.7), None], 0.25), 0.7);
        assert_eq!(chain_trust([None, None], 0.25), 0.25);
        assert_eq!(chain_trust([Some(0.7), Some(0.3), None], 0.25), 0.3);
        assert_eq!(chain_trust([Some(0.7), Some(f64::NAN)], 0.25), 0.0);
        assert_eq!(chain_trust([], 0.25), 0.0);
    }

    proptest! {
        /// No sequence of delegations gives a token an agent outside the
        /// subtree of its parent token's agent, nor of its root's.
        #[test]
        fn no_delegation_names_an_agent_outside_its_subtree(
            roots in proptest::collection::vec(0usize..12, 1..4),
            steps in proptest::collection::vec((0usize..64, 0usize..12), 0..64),
        ) {
            let mut registry: BTreeMap<AgentId, Option<AgentId>> = BTreeMap::new();
            // Tokens: (agent, parent token's agent, root token's agent).
            let mut tokens: Vec<(AgentId, AgentId, AgentId)> = Vec::new();
            for root in roots {
                registry.entry(id(root)).or_insert(None);
                tokens.push((id(root), id(root), id(root)));
            }
            for (from, child) in steps {
                let (delegator, _, root) = tokens[from % tokens.len()].clone();
                let child = id(child);
                match check_naming(&delegator, &child, lookup(&registry)).unwrap() {
                    Ok(Naming::New) => {
                        prop_assert!(!registry.contains_key(&child));
                        registry.insert(child.clone(), Some(delegator.clone()));
                    }
                    Ok(Naming::Within) => {}
                    Err(NotYours) => continue,
                }
                tokens.push((child, delegator, root));
            }
            for (agent, parent, root) in &tokens {
                prop_assert!(within(&registry, agent, parent));
                prop_assert!(within(&registry, agent, root));
            }
        }

        /// A child never acts with more trust than any agent of its chain
        /// with a history of its own, nor than its parent's chain.
        #[test]
        fn a_child_never_acts_with_more_trust_than_its_chain(
            chain in proptest::collection::vec(proptest::option::of(0.0f64..=1.0), 1..10),
            child in proptest::option::of(0.0f64..=1.0),
            new_agent in 0.0f64..=1.0,
        ) {
            let parent = chain_trust(chain.iter().copied(), new_agent);
            let with_child = chain_trust(chain.iter().copied().chain([child]), new_agent);
            prop_assert!(with_child <= parent);
            for own in chain.iter().chain([&child]).flatten() {
                prop_assert!(with_child <= *own);
            }
            if child.is_none() {
                prop_assert_eq!(with_child, parent);
            }
            prop_assert!((0.0..=1.0).contains(&with_child));
        }
    }
}
