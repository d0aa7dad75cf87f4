//! Approval before the act, on the ledger: the record's machine, what is
//! reserved while it waits, who may decide, what time decides, and what
//! each step reports to the outbox and the record log.

use mandate_core::webhook::EventType;
use mandate_core::{
    ApprovalDecision, ApprovalRequirement, Constraints, DenyReason, KeyId, Outcome, RecordError,
    RecordState, Usd,
};

use super::*;
use crate::store::approvals::{self as approval_rows, ApprovalStatus};
use crate::store::events as event_rows;

/// Approval for `pay`, for anything under `crm:vip/*`… (here `crm:vip`
/// patterns), or spending over $100.
fn requirement() -> ApprovalRequirement {
    ApprovalRequirement::parse(Some(&["pay"]), None::<&[&str]>, Some(usd(100.0))).unwrap()
}

fn guarded(budget: Option<f64>) -> Constraints {
    Constraints {
        max_spend_per_action_usd: None,
        min_trust: None,
        max_spend_usd: budget.map(usd),
        max_actions: None,
        require_approval: Some(requirement()),
        args: Default::default(),
    }
}

fn reviewer() -> KeyId {
    KeyId::parse(RATER).unwrap()
}

impl Fixture {
    fn ask(&mut self, token: &Claims, action: &str, spend: Usd, now: Now) -> Attempted {
        let attempt = self.attempt(&token.jti, Credential::Token, action, spend);
        self.ledger.authorize(&attempt, now).unwrap()
    }

    /// A token's usage as stored once what the group holds is written.
    fn used(&mut self, token: &Claims) -> Usage {
        self.commit();
        tokens::usage(&self.ledger.conn, &token.jth()).unwrap()
    }

    fn record(&self, attempted: &Attempted) -> records::Record {
        records::by_id(&self.ledger.conn, attempted.aar_id.as_str())
            .unwrap()
            .unwrap()
    }

    /// The events stored once what the group holds is written.
    fn event_types(&mut self) -> Vec<String> {
        self.commit();
        event_rows::after(&self.ledger.conn, Org::DEFAULT, 0, 1000)
            .unwrap()
            .into_iter()
            .map(|event| event.kind)
            .collect()
    }

    fn denied_requests(&self, agent: &str) -> i64 {
        self.ledger
            .conn
            .query_row(
                "SELECT denied_requests FROM agents WHERE agent_id = ?1",
                [agent],
                |row| row.get(0),
            )
            .unwrap()
    }
}

#[test]
fn a_matching_authorize_waits_with_its_spend_reserved_and_approval_lets_it_complete() {
    let mut f = Fixture::new();
    let root = f.root(&["read", "pay"], guarded(Some(500.0)), 3600);
    let asked = f.ask(&root, "pay", usd(40.0), at(2));
    assert_eq!(asked.denied, None);
    let approval = asked.approval.clone().expect("an approval to wait for");
    assert_eq!(
        approval.approval_id,
        approval_id_of(&asked.aar_id, Credential::Token).unwrap()
    );
    assert_eq!(approval.expires_at, at(2).ms() + DEFAULT_APPROVAL_TTL_MS);
    assert_eq!(f.record(&asked).state, RecordState::AwaitingApproval);
    assert_eq!(f.used(&root).spent, usd(40.0), "reserved while it waits");
    assert_eq!(f.used(&root).actions, 1);

    // Nothing is done before the yes.
    let early = Completion {
        aar_id: asked.aar_id.clone(),
        result: Outcome::Success,
        result_hash: None,
        spend: None,
        presented: Some(root.jti.clone()),
        relay: None,
    };
    assert_eq!(
        f.ledger.complete(&early, at(3)).unwrap_err(),
        LedgerError::Lifecycle(RecordError::ApprovalPending)
    );

    let view = f
        .ledger
        .decide(
            Org::DEFAULT,
            &approval.approval_id,
            ApprovalDecision::Approved,
            Some("fine"),
            &reviewer(),
            at(5),
        )
        .unwrap();
    assert_eq!(
        view.approval.status,
        ApprovalStatus::Decided(ApprovalDecision::Approved)
    );
    assert_eq!(view.approval.decided_by.as_deref(), Some(RATER));
    assert!(view.approval.log_decided.is_some(), "a leaf of the log");
    assert_eq!(view.record.state, RecordState::Pending);
    assert_eq!(f.used(&root).spent, usd(40.0), "still reserved");
    let record = f.ledger.complete(&early, at(6)).unwrap();
    assert_eq!(
        record.state,
        RecordState::Completed {
            result: Outcome::Success
        }
    );
    f.commit();
    assert_eq!(f.counts("bot"), (1, 0, 0, 0));
    assert_eq!(
        f.event_types(),
        ["approval.requested", "approval.decided"],
        "a success reports nothing of its own"
    );
}

#[test]
fn a_denial_releases_the_reservation_and_counts_apart_from_failures() {
    let mut f = Fixture::new();
    let root = f.root(&["pay"], guarded(Some(500.0)), 3600);
    let asked = f.ask(&root, "pay", usd(40.0), at(2));
    let id = asked.approval.clone().unwrap().approval_id;
    let view = f
        .ledger
        .decide(
            Org::DEFAULT,
            &id,
            ApprovalDecision::Denied,
            None,
            &reviewer(),
            at(3),
        )
        .unwrap();
    assert_eq!(
        view.record.state,
        RecordState::Denied {
            reason: DenyReason::ApprovalDenied
        }
    );
    assert_eq!(view.record.spend, Usd::ZERO);
    assert_eq!(f.used(&root), Usage::default(), "released");
    // A decision is made once.
    assert_eq!(
        f.ledger
            .decide(
                Org::DEFAULT,
                &id,
                ApprovalDecision::Approved,
                None,
                &reviewer(),
                at(4)
            )
            .unwrap_err(),
        LedgerError::Lifecycle(RecordError::NotAwaitingApproval)
    );
    f.commit();
    assert_eq!(f.counts("bot"), (0, 0, 0, 0), "no failure, nothing pending");
    assert_eq!(f.denied_requests("bot"), 1);
}

#[test]
fn an_approval_nobody_decides_expires_at_its_time_and_not_before() {
    let mut f = Fixture::new();
    let root = f.root(&["pay"], guarded(None), 3600);
    let asked = f.ask(&root, "pay", usd(1.0), at(2));
    let expires = asked.approval.clone().unwrap().expires_at;
    let before = Now::from_ms(expires - 1);
    assert_eq!(f.ledger.expire_due(before).unwrap(), []);
    assert_eq!(
        f.ledger.expire_due(Now::from_ms(expires)).unwrap(),
        std::slice::from_ref(&asked.aar_id),
        "expired at its time"
    );
    let record = f.record(&asked);
    assert_eq!(
        record.state,
        RecordState::Denied {
            reason: DenyReason::ApprovalExpired
        }
    );
    let approval = approval_rows::by_record(&f.ledger.conn, asked.aar_id.as_str())
        .unwrap()
        .unwrap();
    assert_eq!(
        approval.status,
        ApprovalStatus::Decided(ApprovalDecision::Expired)
    );
    assert_eq!(approval.decided_by, None, "time decided, not a key");
    assert_eq!(approval.decided_at, Some(expires));
    assert_eq!(f.used(&root), Usage::default());
}

#[test]
fn a_decision_after_the_lapse_finds_it_expired() {
    let mut f = Fixture::new();
    let root = f.root(&["pay"], guarded(None), 3600);
    let asked = f.ask(&root, "pay", usd(1.0), at(2));
    let approval = asked.approval.clone().unwrap();
    let late = Now::from_ms(approval.expires_at + 5);
    let view = f
        .ledger
        .decide(
            Org::DEFAULT,
            &approval.approval_id,
            ApprovalDecision::Approved,
            None,
            &reviewer(),
            late,
        )
        .unwrap();
    assert_eq!(
        view.approval.status,
        ApprovalStatus::Decided(ApprovalDecision::Expired)
    );
    assert_eq!(view.approval.decided_at, Some(approval.expires_at));
}

#[test]
fn an_approval_never_outlives_its_token() {
    let mut f = Fixture::new();
    let root = f.root(&["pay"], guarded(None), 120);
    let asked = f.ask(&root, "pay", usd(1.0), at(2));
    assert_eq!(asked.approval.unwrap().expires_at, root.exp * 1000);
}

#[test]
fn another_organisations_key_does_not_find_the_approval() {
    let mut f = Fixture::new();
    let other = super::organisation(&mut f, "other", Quotas::default());
    let root = f.root(&["pay"], guarded(None), 3600);
    let asked = f.ask(&root, "pay", usd(1.0), at(2));
    let id = asked.approval.unwrap().approval_id;
    assert_eq!(
        f.ledger
            .decide(
                other,
                &id,
                ApprovalDecision::Approved,
                None,
                &reviewer(),
                at(3)
            )
            .unwrap_err(),
        LedgerError::UnknownApproval
    );
}

#[test]
fn acting_without_asking_is_refused_approval_required() {
    let mut f = Fixture::new();
    let root = f.root(&["read", "pay"], guarded(None), 3600);
    assert_eq!(
        f.act(&root, "pay", at(2)).denied,
        Some(DenyReason::ApprovalRequired)
    );
    // Over the threshold, by record/action, is the same.
    let big = f.attempt(&root.jti, Credential::Token, "read", usd(150.0));
    let attempted = f
        .ledger
        .record_action(&big, Outcome::Success, None, at(3))
        .unwrap();
    assert_eq!(attempted.denied, Some(DenyReason::ApprovalRequired));
    // What no member matches goes through.
    let small = f.attempt(&root.jti, Credential::Token, "read", usd(100.0));
    assert_eq!(
        f.ledger
            .record_action(&small, Outcome::Success, None, at(4))
            .unwrap()
            .denied,
        None,
        "the threshold is strictly over"
    );
    // No budget limit: nothing is measured against the token, so it keeps
    // no usage (as a token without constraints keeps none).
    assert_eq!(f.used(&root), Usage::default());
    assert_eq!(f.event_types(), ["record.denied", "record.denied"]);
}

#[test]
fn a_refusal_wins_over_an_approval_requirement() {
    let mut f = Fixture::new();
    // Over the budget (500) and over the approval threshold (100) at once.
    let root = f.root(&["pay"], guarded(Some(500.0)), 3600);
    let asked = f.ask(&root, "pay", usd(600.0), at(2));
    assert_eq!(asked.denied, Some(DenyReason::BudgetMaxSpendUsd));
    assert!(asked.approval.is_none(), "nobody is asked to approve it");
}

#[test]
fn a_child_inherits_its_parents_requirement() {
    let mut f = Fixture::new();
    let root = f.root(&["pay", "delegate"], guarded(None), 3600);
    let child = f.child(&root, "helper", &["pay"]);
    assert_eq!(
        child.constraints().require_approval,
        Some(requirement()),
        "left out, it is inherited"
    );
    let asked = f.ask(&child, "pay", usd(1.0), at(2));
    assert!(asked.approval.is_some());
    assert_eq!(
        f.act(&child, "pay", at(3)).denied,
        Some(DenyReason::ApprovalRequired)
    );
}

#[test]
fn revoking_the_root_ends_what_its_chain_waits_for() {
    let mut f = Fixture::new();
    let root = f.root(&["pay", "delegate"], guarded(Some(500.0)), 3600);
    let child = f.child(&root, "helper", &["pay"]);
    let asked = f.ask(&child, "pay", usd(30.0), at(2));
    assert_eq!(f.used(&root).spent, usd(30.0));
    f.ledger
        .revoke(
            &root.jti,
            Some("done"),
            &Revoker::ApiKey(Org::DEFAULT),
            at(4),
        )
        .unwrap();
    assert_eq!(
        f.record(&asked).state,
        RecordState::Denied {
            reason: DenyReason::ApprovalExpired
        }
    );
    assert_eq!(f.used(&root).spent, Usd::ZERO, "released");
    let id = asked.approval.unwrap().approval_id;
    assert_eq!(
        f.ledger
            .decide(
                Org::DEFAULT,
                &id,
                ApprovalDecision::Approved,
                None,
                &reviewer(),
                at(5)
            )
            .unwrap_err(),
        LedgerError::ApprovalExpired,
        "nothing is left to approve"
    );
    assert_eq!(
        f.event_types(),
        ["approval.requested", "token.revoked", "approval.decided"]
    );
}

#[test]
fn budgets_report_reaching_80_and_100_percent_once_each() {
    let mut f = Fixture::new();
    let budget = Constraints {
        max_spend_usd: Some(usd(10.0)),
        ..Constraints::default()
    };
    let root = f.root(&["read"], budget, 3600);
    for spend in [7.0, 1.0, 1.0, 1.0] {
        let attempt = f.attempt(&root.jti, Credential::Token, "read", usd(spend));
        f.ledger
            .record_action(&attempt, Outcome::Success, None, at(2))
            .unwrap();
    }
    f.commit();
    let events = event_rows::after(&f.ledger.conn, Org::DEFAULT, 0, 10).unwrap();
    let thresholds: Vec<serde_json::Value> = events
        .iter()
        .map(|event| serde_json::from_slice::<serde_json::Value>(&event.payload).unwrap())
        .map(|payload| payload["data"].clone())
        .collect();
    assert_eq!(thresholds.len(), 2, "{thresholds:?}");
    assert_eq!(thresholds[0]["threshold_percent"], 80);
    assert_eq!(thresholds[0]["used"], 8.0);
    assert_eq!(thresholds[1]["threshold_percent"], 100);
    assert_eq!(thresholds[1]["budget"], "max_spend_usd");
    assert_eq!(thresholds[1]["jth"], root.jth().to_string());
    assert!(
        !String::from_utf8_lossy(&events[0].payload).contains(root.jti.as_str()),
        "no event carries a jti"
    );
}

#[test]
fn failures_ratings_and_revocations_are_reported_and_nothing_else() {
    let mut f = Fixture::new();
    let root = f.root(&["read"], Constraints::default(), 3600);
    let ok = f.act(&root, "read", at(2));
    let attempt = f.attempt(&root.jti, Credential::Token, "read", Usd::ZERO);
    f.ledger
        .record_action(&attempt, Outcome::Error, None, at(2))
        .unwrap();
    f.ledger
        .rate(
            Org::DEFAULT,
            &ok.aar_id,
            mandate_core::Rating::Approved,
            Some("good"),
            RATER,
            at(3),
        )
        .unwrap();
    f.ledger
        .revoke(&root.jti, None, &Revoker::ApiKey(Org::DEFAULT), at(4))
        .unwrap();
    assert_eq!(
        f.event_types(),
        ["record.failed", "record.rated", "token.revoked"]
    );
    f.commit();
    let events = event_rows::after(&f.ledger.conn, Org::DEFAULT, 0, 10).unwrap();
    let seqs: Vec<i64> = events.iter().map(|event| event.seq).collect();
    assert_eq!(seqs, [1, 2, 3], "numbered in order from 1");
    let rated: serde_json::Value = serde_json::from_slice(&events[1].payload).unwrap();
    assert_eq!(rated["type"], EventType::RecordRated.as_str());
    assert_eq!(rated["data"]["rated_by"], RATER);
    assert_eq!(rated["data"]["note"], "good");
}

#[test]
fn with_events_off_nothing_is_written_to_the_outbox() {
    let mut f = Fixture::new();
    f.ledger = std::mem::replace(
        &mut f.ledger,
        Ledger::new(store::open_in_memory().unwrap(), test_log()),
    )
    .with_events(false);
    let root = f.root(&["read"], Constraints::default(), 3600);
    f.act(&root, "write", at(2));
    f.commit();
    assert!(f.event_types().is_empty());
}
