//! The ledger on an in-memory database: every write path, with the attacks
//! and the edge cases that decide who may do what with what they hold.

use crate::store::sql;
use mandate_core::{
    AgentId, AssuranceLevel, Claims, Constraints, DenyReason, Identity, IssueError, Jti, Limit,
    Outcome, Policy, Rating, RecordError, RecordState, RootIssue, Scope, SigningKey, TokenRequest,
    Ulid, Usd, human_ref, issue_root,
};

mod approvals;

use super::idempotency::RETENTION_MS;
use super::*;
use crate::clock::Now;
use crate::store::idempotency::StoredReply;
use crate::store::records::Credential;
use crate::store::{self, Owned};

/// The start of every test's time: 2027-01-15T08:00:00Z.
const T0: i64 = 1_800_000_000_000;

fn at(seconds: i64) -> Now {
    Now::from_ms(T0 + seconds * 1000)
}

/// A log named `test.invalid/log`, signed by a fixed key.
fn test_log() -> LogSetup {
    let origin = "test.invalid/log";
    let signer = mandate_core::tlog::NoteSigner::new(&[9; 32], origin).unwrap();
    let vkeys = vec![signer.vkey()];
    LogSetup {
        enabled: true,
        origin: origin.to_owned(),
        keys: std::sync::Arc::new(crate::recordlog::LogKeys::new(crate::recordlog::Signers {
            signing: vec![signer],
            vkeys,
        })),
    }
}

/// The API key that rates and issues in these tests.
const RATER: &str = "key_01kaqv3f00000000000000000r";

/// Where the test server's status lists are.
const STATUS_BASE: &str = "https://mandate.test";

struct Fixture {
    ledger: Ledger,
    key: SigningKey,
    ids: u64,
}

impl Fixture {
    fn new() -> Fixture {
        let conn = store::open_in_memory().unwrap();
        let key = SigningKey::from_secret(&[7; 32]);
        conn.execute(
            "INSERT INTO signing_keys (kid, secret, created_at) VALUES (?1, x'00', ?2)",
            sql::params![key.kid(), T0 / 1000],
        )
        .unwrap();
        Fixture {
            ledger: Ledger::new(conn, test_log()),
            key,
            ids: 0,
        }
    }

    fn random(&mut self) -> [u8; 10] {
        self.ids += 1;
        let mut bytes = [0u8; 10];
        bytes[2..].copy_from_slice(&self.ids.to_be_bytes());
        bytes
    }

    fn ulid(&mut self) -> Ulid {
        Ulid::new(T0 as u64, self.random()).unwrap()
    }

    /// Writes what the group kept, as the writer does after each batch
    /// (in a transaction of its own: the statements before it ran one at
    /// a time).
    fn commit(&mut self) {
        self.ledger.conn.begin().unwrap();
        self.ledger.commit().unwrap();
    }

    /// The claims of a root token for `request`, issued at `at(0)`.
    fn issue(&mut self, request: TokenRequest) -> Claims {
        let issue = RootIssue {
            issuer: "https://mandate.test".to_owned(),
            human: human_ref(&[1; 32], &Identity::email("dev@example.com").unwrap()),
            level: AssuranceLevel::L1,
            now: at(0).s(),
            jti: self.ulid(),
            provenance: self.ulid(),
            status: None,
        };
        issue_root(request, issue).unwrap()
    }

    /// Signs and stores a root token; its claims as stored (with their
    /// status list index).
    fn store_root(&mut self, claims: Claims) -> Result<Claims, LedgerError> {
        self.ledger
            .store_root(
                Org::DEFAULT,
                claims,
                &self.key,
                Some(RATER),
                false,
                STATUS_BASE,
                at(0),
            )
            .map(|(claims, _)| claims)
    }

    fn root(&mut self, actions: &[&str], constraints: Constraints, ttl: u64) -> Claims {
        let claims = self.issue(request("bot", &["crm:*"], actions, constraints, Some(ttl)));
        self.store_root(claims).unwrap()
    }

    fn delegate(&mut self, parent: &Claims, request: TokenRequest, now: Now) -> Delegated {
        let delegation = Delegation {
            parent: parent.jti.clone(),
            request,
            child_random: self.random(),
            record_random: self.random(),
            status_base: STATUS_BASE.to_owned(),
            traceparent: None,
            resumable: false,
        };
        let key = SigningKey::from_secret(&[7; 32]);
        self.ledger.delegate(delegation, &key, now).unwrap()
    }

    fn child(&mut self, parent: &Claims, agent: &str, actions: &[&str]) -> Claims {
        let request = request(agent, &["crm:*"], actions, Constraints::default(), None);
        match self.delegate(parent, request, at(1)) {
            Delegated::Issued { child, .. } => *child,
            other => panic!("not issued: {other:?}"),
        }
    }

    fn attempt(&mut self, jti: &Jti, credential: Credential, action: &str, spend: Usd) -> Attempt {
        Attempt {
            jti: jti.clone(),
            credential,
            action: mandate_core::Action::parse(action).unwrap(),
            resource: mandate_core::Resource::parse("crm:lead/1").unwrap(),
            spend,
            random: self.random(),
            traceparent: None,
            args: None,
            stored_args: None,
            relay_jkt: None,
        }
    }

    fn act(&mut self, token: &Claims, action: &str, now: Now) -> Attempted {
        let attempt = self.attempt(&token.jti, Credential::Token, action, Usd::ZERO);
        self.ledger
            .record_action(&attempt, Outcome::Success, None, now)
            .unwrap()
    }

    fn authorize(&mut self, token: &Claims, credential: Credential, spend: Usd) -> Attempted {
        let attempt = self.attempt(&token.jti, credential, "read", spend);
        self.ledger.authorize(&attempt, at(2)).unwrap()
    }

    fn counts(&self, agent_id: &str) -> (i64, i64, i64, i64) {
        self.ledger
            .conn
            .query_row(
                "SELECT successes, failures, pending, approved FROM agents WHERE agent_id = ?1",
                [agent_id],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
            )
            .unwrap()
    }
}

fn request(
    agent: &str,
    resources: &[&str],
    actions: &[&str],
    constraints: Constraints,
    ttl_seconds: Option<u64>,
) -> TokenRequest {
    TokenRequest {
        agent_id: AgentId::parse(agent).unwrap(),
        scope: Scope::parse(resources, actions).unwrap(),
        constraints,
        policy: Policy::default(),
        ttl_seconds,
        holder: None,
    }
}

fn usd(amount: f64) -> Usd {
    Usd::from_f64(amount).unwrap()
}

#[test]
fn an_allowed_action_is_recorded_and_counted_once_the_group_commits() {
    let mut f = Fixture::new();
    let root = f.root(&["read"], Constraints::default(), 3600);
    let attempted = f.act(&root, "read", at(2));
    assert_eq!(attempted.denied, None);
    assert_eq!(
        f.counts("bot"),
        (0, 0, 0, 0),
        "counters wait for the commit"
    );
    f.commit();
    assert_eq!(f.counts("bot"), (1, 0, 0, 0));
    let record = records::by_id(&f.ledger.conn, attempted.aar_id.as_str())
        .unwrap()
        .unwrap();
    assert_eq!(
        record.state,
        RecordState::Completed {
            result: Outcome::Success
        }
    );
    assert_eq!(record.credential, Credential::Token);
    assert_eq!(record.created_at, at(2).ms());
}

#[test]
fn a_rolled_back_group_forgets_its_counters() {
    let mut f = Fixture::new();
    let root = f.root(&["read"], Constraints::default(), 3600);
    f.act(&root, "read", at(2));
    f.ledger.after_rollback();
    f.commit();
    assert_eq!(f.counts("bot"), (0, 0, 0, 0));
}

#[test]
fn an_action_outside_the_scope_is_denied_and_recorded_as_a_failure() {
    let mut f = Fixture::new();
    let root = f.root(&["read"], Constraints::default(), 3600);
    let attempted = f.act(&root, "write", at(2));
    assert_eq!(attempted.denied, Some(DenyReason::ActionNotPermitted));
    f.commit();
    assert_eq!(f.counts("bot"), (0, 1, 0, 0));
}

#[test]
fn an_unknown_token_writes_nothing() {
    let mut f = Fixture::new();
    f.root(&["read"], Constraints::default(), 3600);
    let stranger = Jti::root(f.ulid());
    let attempt = f.attempt(&stranger, Credential::Jti, "read", Usd::ZERO);
    assert_eq!(
        f.ledger
            .record_action(&attempt, Outcome::Success, None, at(2))
            .unwrap_err(),
        LedgerError::TokenInactive
    );
}

#[test]
fn a_revoked_or_expired_token_is_denied_with_its_reason() {
    let mut f = Fixture::new();
    let root = f.root(&["read"], Constraints::default(), 60);
    assert_eq!(
        f.act(&root, "read", at(60)).denied,
        Some(DenyReason::TokenExpired),
        "a token is expired at its exp"
    );
    f.ledger
        .revoke(&root.jti, None, &Revoker::ApiKey(Org::DEFAULT), at(10))
        .unwrap();
    assert_eq!(
        f.act(&root, "read", at(11)).denied,
        Some(DenyReason::TokenRevoked),
        "revoked wins over expired"
    );
    assert_eq!(
        f.act(&root, "read", at(61)).denied,
        Some(DenyReason::TokenRevoked)
    );
}

#[test]
fn a_bound_token_named_by_its_bare_jti_is_refused() {
    let mut f = Fixture::new();
    let mut request = request("bot", &["crm:*"], &["read"], Constraints::default(), None);
    request.holder =
        Some(mandate_core::Jkt::parse("0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I").unwrap());
    let claims = f.issue(request);
    let claims = f.store_root(claims).unwrap();
    let attempt = f.attempt(&claims.jti, Credential::Jti, "read", Usd::ZERO);
    assert_eq!(
        f.ledger.authorize(&attempt, at(1)).unwrap_err(),
        LedgerError::DpopRequired
    );
}

#[test]
fn every_budget_up_the_chain_binds_a_descendant() {
    let mut f = Fixture::new();
    let budget = Constraints {
        max_actions: Some(3),
        ..Constraints::default()
    };
    let root = f.root(&["read", "delegate"], budget, 3600);
    let child = f.child(&root, "helper", &["read"]);
    // The delegation itself is one of the root's actions.
    assert_eq!(f.act(&child, "read", at(2)).denied, None);
    assert_eq!(f.act(&child, "read", at(2)).denied, None);
    assert_eq!(
        f.act(&child, "read", at(2)).denied,
        Some(DenyReason::BudgetMaxActions),
        "the child has no budget of its own; its root's binds it"
    );
}

#[test]
fn a_completion_over_the_reservation_is_checked_against_the_chain() {
    let mut f = Fixture::new();
    let budget = Constraints {
        max_spend_usd: Some(usd(10.0)),
        ..Constraints::default()
    };
    let root = f.root(&["read"], budget, 3600);
    let pending = f.authorize(&root, Credential::Token, usd(4.0));
    assert_eq!(pending.denied, None);
    let over = Completion {
        aar_id: pending.aar_id.clone(),
        result: Outcome::Success,
        result_hash: None,
        spend: Some(usd(10.5)),
        presented: Some(root.jti.clone()),
        relay: None,
    };
    assert!(matches!(
        f.ledger.complete(&over, at(3)).unwrap_err(),
        LedgerError::OverBudget { exceeded, .. } if exceeded.0 == Limit::MaxSpendUsd
    ));
    let within = Completion {
        spend: Some(usd(9.0)),
        ..over
    };
    let record = f.ledger.complete(&within, at(3)).unwrap();
    assert_eq!(record.spend, usd(9.0));
    assert_eq!(record.completed_at, Some(at(3).ms()));
    f.commit();
    let used = tokens::usage(&f.ledger.conn, &root.jth()).unwrap();
    assert_eq!(used.spent, usd(9.0));
    assert_eq!(f.counts("bot"), (1, 0, 0, 0), "pending moved to success");
}

#[test]
fn after_its_token_ends_a_completion_reports_up_to_the_reservation() {
    let mut f = Fixture::new();
    let root = f.root(&["read"], Constraints::default(), 3600);
    let pending = f.authorize(&root, Credential::Jti, usd(2.0));
    f.ledger
        .revoke(&root.jti, None, &Revoker::ApiKey(Org::DEFAULT), at(3))
        .unwrap();
    let over = Completion {
        aar_id: pending.aar_id.clone(),
        result: Outcome::Error,
        result_hash: None,
        spend: Some(usd(2.5)),
        presented: Some(root.jti.clone()),
        relay: None,
    };
    assert!(matches!(
        f.ledger.complete(&over, at(4)).unwrap_err(),
        LedgerError::BeyondReservation { expired: false, .. }
    ));
    // By the aar_id alone, never more than the reservation, whatever the
    // token's standing.
    let bare = Completion {
        presented: None,
        relay: None,
        ..over.clone()
    };
    assert_eq!(
        f.ledger.complete(&bare, at(4)).unwrap_err(),
        LedgerError::BeyondReservationWithoutToken { reserved: usd(2.0) }
    );
    let within = Completion {
        spend: Some(usd(1.0)),
        ..over
    };
    assert_eq!(f.ledger.complete(&within, at(4)).unwrap().spend, usd(1.0));
}

#[test]
fn only_the_records_token_or_an_ancestor_completes_a_token_made_record() {
    let mut f = Fixture::new();
    let root = f.root(&["read", "delegate"], Constraints::default(), 3600);
    let child = f.child(&root, "helper", &["read"]);
    let sibling = f.child(&root, "other", &["read"]);
    let pending = f.authorize(&child, Credential::Token, Usd::ZERO);
    let by = |presented: Option<&Claims>| Completion {
        aar_id: pending.aar_id.clone(),
        result: Outcome::Success,
        result_hash: None,
        spend: None,
        presented: presented.map(|c| c.jti.clone()),
        relay: None,
    };
    assert_eq!(
        f.ledger.complete(&by(Some(&sibling)), at(3)).unwrap_err(),
        LedgerError::NotTheRecordsToken
    );
    assert_eq!(
        f.ledger.complete(&by(None), at(3)).unwrap_err(),
        LedgerError::UnknownRecord,
        "an aar_id alone does not complete a token-made record, nor learns it exists"
    );
    f.ledger.complete(&by(Some(&root)), at(3)).unwrap();
    assert_eq!(
        f.ledger.complete(&by(Some(&root)), at(3)).unwrap_err(),
        LedgerError::Lifecycle(RecordError::AlreadyCompleted)
    );
}

#[test]
fn a_record_is_rated_once_and_the_rating_counts() {
    let mut f = Fixture::new();
    let root = f.root(&["read"], Constraints::default(), 3600);
    let done = f.act(&root, "read", at(2));
    let rated = f
        .ledger
        .rate(
            Org::DEFAULT,
            &done.aar_id,
            Rating::Approved,
            Some("fine"),
            RATER,
            at(5),
        )
        .unwrap();
    assert_eq!(rated.at, at(5).ms());
    assert_eq!(
        f.ledger
            .rate(
                Org::DEFAULT,
                &done.aar_id,
                Rating::Rejected,
                None,
                RATER,
                at(6),
            )
            .unwrap_err(),
        LedgerError::Lifecycle(RecordError::AlreadyRated)
    );
    f.commit();
    assert_eq!(f.counts("bot"), (1, 0, 0, 1));
}

#[test]
fn a_widening_delegation_is_refused_and_recorded_as_denied() {
    let mut f = Fixture::new();
    let root = f.root(&["read", "delegate"], Constraints::default(), 3600);
    let wider = request(
        "helper",
        &["crm:*"],
        &["read", "write"],
        Constraints::default(),
        None,
    );
    let Delegated::Refused { aar_id, refusal } = f.delegate(&root, wider, at(1)) else {
        panic!("a wider child was issued");
    };
    assert!(matches!(
        refusal,
        Refusal::Issue(DenyReason::ScopeWidening, IssueError::Widening(_))
    ));
    f.commit();
    let record = records::by_id(&f.ledger.conn, aar_id.as_str())
        .unwrap()
        .unwrap();
    assert_eq!(
        record.state,
        RecordState::Denied {
            reason: DenyReason::ScopeWidening
        }
    );
    let no_delegate = f.root(&["read"], Constraints::default(), 3600);
    let narrow = request(
        "helper",
        &["crm:*"],
        &["read"],
        Constraints::default(),
        None,
    );
    assert!(matches!(
        f.delegate(&no_delegate, narrow, at(1)),
        Delegated::Refused {
            refusal: Refusal::Issue(DenyReason::ActionNotPermitted, _),
            ..
        }
    ));
}

#[test]
fn a_lifetime_out_of_range_is_bad_input_and_records_nothing() {
    let mut f = Fixture::new();
    let root = f.root(&["read", "delegate"], Constraints::default(), 3600);
    let delegation = Delegation {
        parent: root.jti.clone(),
        request: request(
            "helper",
            &["crm:*"],
            &["read"],
            Constraints::default(),
            Some(0),
        ),
        child_random: f.random(),
        record_random: f.random(),
        status_base: STATUS_BASE.to_owned(),
        traceparent: None,
        resumable: false,
    };
    let key = SigningKey::from_secret(&[7; 32]);
    assert!(matches!(
        f.ledger.delegate(delegation, &key, at(1)).unwrap_err(),
        LedgerError::TtlOutOfRange(_)
    ));
    let records: i64 = f
        .ledger
        .conn
        .query_row("SELECT count(*) FROM records", [], |row| row.get(0))
        .unwrap();
    assert_eq!(records, 0);
}

#[test]
fn an_agent_revokes_itself_and_its_descendants_and_nothing_else() {
    let mut f = Fixture::new();
    let root = f.root(&["read", "delegate"], Constraints::default(), 3600);
    let child = f.child(&root, "helper", &["read", "delegate"]);
    let grandchild = f.child(&child, "worker", &["read"]);
    let as_child = Revoker::Token(child.jti.clone());
    assert_eq!(
        f.ledger
            .revoke(&root.jti, None, &as_child, at(2))
            .unwrap_err(),
        LedgerError::NotAnAncestor,
        "a sub-agent cannot revoke its root"
    );
    let as_grandchild = Revoker::Token(grandchild.jti.clone());
    assert_eq!(
        f.ledger
            .revoke(&child.jti, None, &as_grandchild, at(2))
            .unwrap_err(),
        LedgerError::NotAnAncestor
    );
    let revoked = f
        .ledger
        .revoke(&child.jti, Some("done"), &as_child, at(3))
        .unwrap();
    assert_eq!(revoked.count, 2);
    assert_eq!(revoked.at, at(3).s());
    assert_eq!(
        f.ledger
            .revoke(&child.jti, None, &as_child, at(4))
            .unwrap_err(),
        LedgerError::HolderInactive { expired: false },
        "a revoked token revokes nothing more"
    );
    assert_eq!(
        f.act(&grandchild, "read", at(4)).denied,
        Some(DenyReason::TokenRevoked)
    );
    assert_eq!(f.act(&root, "read", at(4)).denied, None);
}

/// A token's standing is read once a group (the fixture's writes are one
/// group: it never ends one), so revoking an ancestor within the group
/// must be seen by the next act of a descendant acted with before.
#[test]
fn a_standing_read_earlier_in_the_group_does_not_outlive_a_revocation() {
    let mut f = Fixture::new();
    let root = f.root(&["read", "delegate"], Constraints::default(), 3600);
    let child = f.child(&root, "helper", &["read"]);
    assert_eq!(f.act(&child, "read", at(2)).denied, None);
    assert_eq!(f.act(&root, "read", at(2)).denied, None);
    f.ledger
        .revoke(&root.jti, None, &Revoker::ApiKey(Org::DEFAULT), at(3))
        .unwrap();
    assert_eq!(
        f.act(&child, "read", at(4)).denied,
        Some(DenyReason::TokenRevoked)
    );
    assert_eq!(
        f.act(&root, "read", at(4)).denied,
        Some(DenyReason::TokenRevoked)
    );
}

#[test]
fn a_signing_key_revoked_since_signing_stores_nothing() {
    let mut f = Fixture::new();
    f.ledger
        .conn
        .execute("UPDATE signing_keys SET revoked_at = 1", [])
        .unwrap();
    let claims = f.issue(request(
        "bot",
        &["crm:*"],
        &["read"],
        Constraints::default(),
        None,
    ));
    assert_eq!(
        f.store_root(claims).unwrap_err(),
        LedgerError::SigningKeyRevoked
    );
}

#[test]
fn record_times_never_go_back_when_the_clock_does() {
    let mut f = Fixture::new();
    let root = f.root(&["read"], Constraints::default(), 3600);
    let first = f.act(&root, "read", at(20));
    let second = f.act(&root, "read", at(10));
    f.commit();
    let time = |aar_id: &AarId| {
        records::by_id(&f.ledger.conn, aar_id.as_str())
            .unwrap()
            .unwrap()
            .created_at
    };
    assert_eq!(time(&first.aar_id), at(20).ms());
    assert_eq!(time(&second.aar_id), at(20).ms());
}

#[test]
fn an_idempotency_key_answers_its_first_reply_and_refuses_another_body() {
    let mut f = Fixture::new();
    let root = f.root(&["read"], Constraints::default(), 3600);
    let key = IdempotencyKey {
        org: Org::DEFAULT,
        scope: format!("record_action {}", root.jti),
        key: "retry-1".to_owned(),
        body_sha256: [1; 32],
    };
    let reply = |attempted: &Attempted| StoredReply {
        status: 201,
        body: attempted.aar_id.to_string().into_bytes(),
    };
    let attempt = f.attempt(&root.jti, Credential::Token, "read", Usd::ZERO);
    let first = f
        .ledger
        .once(
            Some(&key),
            at(2),
            |ledger| ledger.record_action(&attempt, Outcome::Success, None, at(2)),
            reply,
        )
        .unwrap();
    let Reply::Fresh(attempted, Some(_)) = first else {
        panic!("the first attempt was not fresh");
    };
    let again = f
        .ledger
        .once(
            Some(&key),
            at(3),
            |ledger| ledger.record_action(&attempt, Outcome::Success, None, at(3)),
            reply,
        )
        .unwrap();
    let Reply::Replayed(stored) = again else {
        panic!("a retry acted again");
    };
    assert_eq!(stored.body, attempted.aar_id.to_string().into_bytes());
    let other = IdempotencyKey {
        body_sha256: [2; 32],
        ..key.clone()
    };
    assert_eq!(
        f.ledger
            .once(
                Some(&other),
                at(3),
                |ledger| ledger.record_action(&attempt, Outcome::Success, None, at(3)),
                reply,
            )
            .unwrap_err(),
        LedgerError::IdempotencyKeyReused
    );
    let expired = at(2 + RETENTION_MS / 1000 + 1);
    assert!(matches!(
        f.ledger
            .once(
                Some(&other),
                expired,
                |ledger| ledger.record_action(&attempt, Outcome::Success, None, expired),
                reply,
            )
            .unwrap(),
        Reply::Fresh(..)
    ));
    assert_eq!(f.ledger.forget_old_replies(expired).unwrap(), 0);
}

/// Creates an organisation through the ledger.
fn organisation(fixture: &mut Fixture, name: &str, quotas: Quotas) -> Org {
    let new = NewOrg {
        id: mandate_core::OrgId::new(fixture.ulid()),
        name: name.to_owned(),
        quotas,
        owner_email: None,
    };
    fixture.ledger.create_org(&new, at(0)).unwrap().org.org
}

#[test]
fn organisations_write_records_into_their_own_ranges_of_seq() {
    let mut fixture = Fixture::new();
    let beta = organisation(&mut fixture, "beta", Quotas::default());
    let alpha_token = fixture.root(&["read"], Constraints::default(), 3600);
    let beta_token = fixture.issue(request(
        "bot",
        &["crm:*"],
        &["read"],
        Constraints::default(),
        None,
    ));
    let (beta_token, _) = fixture
        .ledger
        .store_root(
            beta,
            beta_token,
            &fixture.key,
            Some("key_beta"),
            false,
            STATUS_BASE,
            at(0),
        )
        .unwrap();
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(fixture.act(&alpha_token, "read", at(n)).aar_id);
        ids.push(fixture.act(&beta_token, "read", at(n)).aar_id);
    }
    fixture.commit();
    let seqs: Vec<(Org, i64)> = ids
        .iter()
        .map(|id| {
            let record = records::by_id(&fixture.ledger.conn, id.as_str())
                .unwrap()
                .unwrap();
            (record.org(), record.seq)
        })
        .collect();
    assert_eq!(
        seqs,
        [
            (Org::DEFAULT, 0),
            (beta, beta.seqs().start),
            (Org::DEFAULT, 1),
            (beta, beta.seqs().start + 1),
            (Org::DEFAULT, 2),
            (beta, beta.seqs().start + 2),
        ]
    );
    // The same agent id in two organisations: two agents.
    for org in [Org::DEFAULT, beta] {
        let successes: i64 = fixture
            .ledger
            .conn
            .query_row(
                "SELECT successes FROM agents WHERE org = ?1 AND agent_id = 'bot'",
                [org],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(successes, 3);
    }
    // A ledger started again on the same database carries on after each
    // organisation's newest record.
    let conn = std::mem::replace(
        &mut fixture.ledger,
        Ledger::new(store::open_in_memory().unwrap(), test_log()),
    )
    .conn;
    fixture.ledger = Ledger::new(conn, test_log());
    let next = fixture.act(&beta_token, "read", at(9)).aar_id;
    fixture.commit();
    let record = records::by_id(&fixture.ledger.conn, next.as_str())
        .unwrap()
        .unwrap();
    assert_eq!(record.seq, beta.seqs().start + 3);
}

#[test]
fn a_records_per_day_quota_counts_the_day_and_starts_again_the_next() {
    let mut fixture = Fixture::new();
    let token = fixture.root(&["read"], Constraints::default(), 86_400 * 3);
    fixture.act(&token, "read", at(0));
    let quotas = Quotas {
        records_per_day: Some(2),
        tokens_outstanding: None,
    };
    let default_id: String = fixture
        .ledger
        .conn
        .query_row("SELECT id FROM orgs WHERE num = 0", [], |row| row.get(0))
        .unwrap();
    fixture
        .ledger
        .set_quotas(&mandate_core::OrgId::parse(&default_id).unwrap(), quotas)
        .unwrap();
    fixture.act(&token, "read", at(1));
    let attempt = fixture.attempt(&token.jti, Credential::Token, "read", Usd::ZERO);
    let refused = fixture
        .ledger
        .record_action(&attempt, Outcome::Success, None, at(2));
    let Err(LedgerError::QuotaExceeded(QuotaExceeded::RecordsPerDay {
        limit: 2,
        retry_after_s,
    })) = refused
    else {
        panic!("not refused: {refused:?}");
    };
    // T0 is 08:00 UTC: the day ends 16 hours later.
    assert_eq!(retry_after_s, 16 * 3600 - 2);
    // A rolled-back group forgets the count; it is read again, the same.
    // (The fixture runs without transactions: what was written stays, so
    // the group's log state is stored first, as a commit would.)
    fixture.commit();
    fixture.ledger.after_rollback();
    let attempt = fixture.attempt(&token.jti, Credential::Token, "read", Usd::ZERO);
    assert!(
        fixture
            .ledger
            .record_action(&attempt, Outcome::Success, None, at(3))
            .is_err()
    );
    // The next UTC day starts from nothing.
    fixture.act(&token, "read", at(16 * 3600));
}

/// A PostgreSQL tail renumbers a held record's leaf and finds a flushed
/// one's key by the columns' places in the insert: both are found.
#[test]
fn a_held_records_key_and_leaf_index_are_found_in_its_row() {
    assert_eq!(super::record_column("aar_id"), 0);
    assert_eq!(super::record_column("log_created"), 21);
    assert_eq!(super::record_column("no_such_column"), usize::MAX);
    assert_eq!(
        crate::store::records::INSERTED.len(),
        crate::store::records::INSERT_INTO.split(',').count()
    );
}

/// `org_seqs`' checks (PostgreSQL's schema 17, literal SQL) refuse what the
/// ledger's bounds say: a clock behind by more than the disorder bound, and
/// a `seq` reaching the upper half of its organisation's range where
/// groups number provisionally.
#[test]
fn the_numbering_checks_are_the_ledgers_bounds() {
    let schema = store::schema::POSTGRES_ORG_SEQS;
    assert!(
        schema.contains(&format!(
            "CONSTRAINT {} CHECK (lag_ms <= {MAX_TIME_DISORDER_MS})",
            rows_log::CLOCK_CHECK
        )),
        "{schema}"
    );
    assert!(
        schema.contains(&format!(
            "CHECK (next_seq <= (org << 40) + {})",
            rows_log::PENDING_SEQS
        )),
        "{schema}"
    );
}
