//! Issuing, delegating, signing and verifying tokens through the public API.

mod common;

use common::{NOW, key, request, root, root_with, ulid};
use mandate_core::limits::{
    DEFAULT_TTL_SECONDS, MAX_CHILDREN_PER_TOKEN, MAX_DELEGATION_DEPTH, TRUST_L1,
};
use mandate_core::{
    AgentId, ApprovalRequirement, Audience, ChainError, ChainFault, Claims, Confirmation,
    Constraints, DenyReason, Framework, IdError, IssueError, Jti, JtiKind, Jwks, Limit, Policy,
    Renewal, ScopeError, Usd, VerifyError, VerifyOptions, Violation, Widening, check_fan_out,
    decode_unverified, delegate, renew, renew_within, sign, verify, verify_chain,
};

fn jwks() -> Jwks {
    Jwks::from_signing_keys([&key(1)])
}

#[test]
fn root_claims_follow_the_design() {
    let claims = root();
    assert_eq!(claims.jti.kind(), JtiKind::Root);
    assert_eq!(claims.svc_trust_score, TRUST_L1);
    assert_eq!(claims.exp - claims.iat, DEFAULT_TTL_SECONDS as i64);
    assert_eq!((claims.svc_depth, claims.svc_parent.as_ref()), (0, None));
    assert_eq!(claims.root_jth(), claims.jti.hash());
    assert_eq!(claims.cnf, None);
    let json = serde_json::to_value(&claims).unwrap();
    assert_eq!(json["sub"], "agent:bot");
    assert!(json.get("svc_constraints").is_none());
    assert!(json.get("act").is_none());
}

#[test]
fn sign_then_verify_round_trips() {
    let claims = root();
    let token = sign(&claims, &key(1)).unwrap();
    let verified = verify(&token, &jwks(), NOW, &VerifyOptions::default()).unwrap();
    assert_eq!(verified.claims, claims);
    assert_eq!(verified.header.kid, key(1).kid());
    assert_eq!(decode_unverified(&token).unwrap().claims, claims);
    let other = Jwks::from_signing_keys([&key(2)]);
    assert_eq!(
        verify(&token, &other, NOW, &VerifyOptions::default()),
        Err(VerifyError::UnknownKid)
    );
}

#[test]
fn decode_unverified_does_not_check_the_signature() {
    let token = sign(&root(), &key(1)).unwrap();
    let (rest, _) = token.rsplit_once('.').unwrap();
    let unsigned = format!("{rest}.AAAA");
    assert!(decode_unverified(&unsigned).is_ok());
    assert_eq!(
        verify(&unsigned, &jwks(), NOW, &VerifyOptions::default()),
        Err(VerifyError::MalformedSignature)
    );
}

#[test]
fn delegation_inherits_and_narrows() {
    let parent = root();
    let mut req = request(&["crm:contacts"], &["read", "delegate"]);
    req.agent_id = AgentId::parse("helper").unwrap();
    let child = delegate(&parent, req, NOW + 5, ulid(3), None).unwrap();
    assert_eq!(child.jti.kind(), JtiKind::Delegated);
    assert_eq!(child.svc_depth, 1);
    assert_eq!(child.svc_parent, Some(parent.jti.hash()));
    assert_eq!(child.ancestors(), [parent.jti.hash()]);
    assert_eq!(child.root_jth(), parent.jti.hash());
    assert_eq!(child.exp, parent.exp);
    assert_eq!(child.svc_prov, parent.svc_prov);
    assert_eq!(child.svc_human, parent.svc_human);
    assert_eq!(child.svc_trust_score, parent.svc_trust_score);
    assert_eq!(child.act.as_ref().unwrap().sub, "agent:bot");

    let grandchild = delegate(
        &child,
        request(&["crm:contacts"], &["read"]),
        NOW + 6,
        ulid(4),
        None,
    )
    .unwrap();
    assert_eq!(grandchild.svc_depth, 2);
    assert_eq!(
        grandchild.ancestors(),
        [parent.jti.hash(), child.jti.hash()]
    );
    let act = grandchild.act.as_ref().unwrap();
    assert_eq!(act.sub, "agent:helper");
    assert_eq!(act.act.as_ref().unwrap().sub, "agent:bot");
    let token = sign(&grandchild, &key(1)).unwrap();
    assert_eq!(
        verify(&token, &jwks(), NOW, &VerifyOptions::default())
            .unwrap()
            .claims,
        grandchild
    );
}

/// The escalation this release closes: a child read its root's jti from its
/// own token and acted with it. No token carries another token's jti.
#[test]
fn no_token_carries_an_ancestors_jti() {
    let parent = root();
    let child = delegate(
        &parent,
        request(&["crm:contacts"], &["read", "delegate"]),
        NOW,
        ulid(3),
        None,
    )
    .unwrap();
    let grandchild = delegate(
        &child,
        request(&["crm:contacts"], &["read"]),
        NOW,
        ulid(4),
        None,
    )
    .unwrap();
    for (token, ancestors) in [
        (&child, vec![&parent]),
        (&grandchild, vec![&parent, &child]),
    ] {
        let compact = sign(token, &key(1)).unwrap();
        let payload = serde_json::to_string(&decode_unverified(&compact).unwrap().claims).unwrap();
        for ancestor in ancestors {
            assert!(!compact.contains(ancestor.jti.as_str()));
            assert!(!payload.contains(ancestor.jti.as_str()), "{payload}");
        }
    }
}

#[test]
fn delegation_refusals() {
    let parent = root();
    assert_eq!(
        delegate(
            &parent,
            request(&["crm:*"], &["read"]),
            parent.exp,
            ulid(3),
            None
        ),
        Err(IssueError::ParentExpired)
    );
    let no_delegate = root_with(request(&["crm:*"], &["read"]));
    assert_eq!(
        delegate(
            &no_delegate,
            request(&["crm:*"], &["read"]),
            NOW,
            ulid(3),
            None
        ),
        Err(IssueError::DelegateNotHeld)
    );
    let mut long = request(&["crm:*"], &["read"]);
    long.ttl_seconds = Some(DEFAULT_TTL_SECONDS + 1);
    let err = delegate(&parent, long, NOW, ulid(3), None).unwrap_err();
    assert_eq!(err.code(), "scope_widening");
    let IssueError::Widening(widening) = err else {
        unreachable!()
    };
    assert_eq!(
        widening.violations,
        vec![Violation::LifetimeBeyondParent {
            child_exp: NOW + 3601,
            parent_exp: NOW + 3600
        }]
    );
    let mut zero = request(&["crm:*"], &["read"]);
    zero.ttl_seconds = Some(0);
    assert_eq!(
        delegate(&parent, zero, NOW, ulid(3), None),
        Err(IssueError::TtlOutOfRange)
    );
}

/// Every refusal of a delegation that `delegate` and `check_fan_out` make,
/// with the reason it is recorded under; bad input and faults have none.
#[test]
fn refusals_are_recorded_with_a_deny_reason() {
    let parent = root();
    let no_delegate = root_with(request(&["crm:*"], &["read"]));
    let mut deepest = parent.clone();
    for depth in 1..=MAX_DELEGATION_DEPTH {
        let next = request(&["crm:*"], &["read", "delegate"]);
        deepest = delegate(&deepest, next, NOW, ulid(10 + depth as u8), None).unwrap();
    }
    let mut zero = request(&["crm:*"], &["read"]);
    zero.ttl_seconds = Some(0);
    let refused = [
        (
            delegate(
                &parent,
                request(&["crm:*"], &["read"]),
                parent.exp,
                ulid(3),
                None,
            ),
            Some(DenyReason::TokenExpired),
        ),
        (
            delegate(
                &no_delegate,
                request(&["crm:*"], &["read"]),
                NOW,
                ulid(3),
                None,
            ),
            Some(DenyReason::ActionNotPermitted),
        ),
        (
            delegate(&deepest, request(&["crm:*"], &["read"]), NOW, ulid(3), None),
            Some(DenyReason::DelegationTooDeep),
        ),
        (
            delegate(&parent, request(&["bank:*"], &["read"]), NOW, ulid(3), None),
            Some(DenyReason::ScopeWidening),
        ),
        (
            check_fan_out(MAX_CHILDREN_PER_TOKEN).map(|()| parent.clone()),
            Some(DenyReason::TooManyChildren),
        ),
        (delegate(&parent, zero, NOW, ulid(3), None), None),
    ];
    for (outcome, reason) in refused {
        let error = outcome.unwrap_err();
        assert_eq!(error.deny_reason(), reason, "{error:?}");
    }
    let others = [
        (
            IssueError::DelegateNotHeld,
            Some(DenyReason::ActionNotPermitted),
        ),
        (
            IssueError::Widening(Widening { violations: vec![] }),
            Some(DenyReason::ScopeWidening),
        ),
        (
            IssueError::DepthExceeded,
            Some(DenyReason::DelegationTooDeep),
        ),
        (
            IssueError::TooManyChildren,
            Some(DenyReason::TooManyChildren),
        ),
        (IssueError::ParentExpired, Some(DenyReason::TokenExpired)),
        (IssueError::TtlOutOfRange, None),
        (IssueError::InvalidNow, None),
        (IssueError::Scope(ScopeError::TooMany("frameworks")), None),
        (IssueError::Id(IdError::TimestampOutOfRange(u64::MAX)), None),
    ];
    for (error, reason) in others {
        assert_eq!(error.deny_reason(), reason, "{error:?}");
    }
}

/// A token is governed by itself and its ancestors, by jti; never by a
/// descendant, a sibling, another line, or a jti of the other kind.
#[test]
fn a_token_is_governed_by_itself_and_its_ancestors() {
    let parent = root();
    let child = delegate(
        &parent,
        request(&["crm:*"], &["read", "delegate"]),
        NOW,
        ulid(3),
        None,
    )
    .unwrap();
    let grandchild = delegate(
        &child,
        request(&["crm:contacts"], &["read"]),
        NOW,
        ulid(4),
        None,
    )
    .unwrap();
    let sibling = delegate(&parent, request(&["crm:*"], &["read"]), NOW, ulid(5), None).unwrap();
    // Another line: a root token of its own.
    let other = Claims {
        jti: Jti::root(ulid(6)),
        ..root()
    };
    let same_ulid_other_kind = Jti::delegated(ulid(1));
    assert_eq!(parent.jti, Jti::root(ulid(1)));
    let governs = |governor: &Jti, governed: &Claims| governed.is_governed_by(governor);
    for token in [&parent, &child, &grandchild, &sibling, &other] {
        assert!(governs(&token.jti, token), "{} governs itself", token.jti);
    }
    assert!(governs(&parent.jti, &child));
    assert!(governs(&parent.jti, &grandchild));
    assert!(governs(&child.jti, &grandchild));
    assert!(governs(&parent.jti, &sibling));
    assert!(!governs(&child.jti, &parent));
    assert!(!governs(&grandchild.jti, &child));
    assert!(!governs(&grandchild.jti, &parent));
    assert!(!governs(&sibling.jti, &child));
    assert!(!governs(&child.jti, &sibling));
    assert!(!governs(&sibling.jti, &grandchild));
    assert!(!governs(&other.jti, &parent));
    assert!(!governs(&parent.jti, &other));
    assert!(!governs(&same_ulid_other_kind, &parent));
    assert!(!governs(&same_ulid_other_kind, &grandchild));
}

#[test]
fn delegation_depth_is_bounded() {
    let mut current = root();
    for depth in 1..=MAX_DELEGATION_DEPTH {
        current = delegate(
            &current,
            request(&["crm:*"], &["read", "delegate"]),
            NOW,
            ulid(depth as u8),
            None,
        )
        .unwrap();
        let token = sign(&current, &key(1)).unwrap();
        assert!(verify(&token, &jwks(), NOW, &VerifyOptions::default()).is_ok());
    }
    assert_eq!(
        delegate(
            &current,
            request(&["crm:*"], &["read"]),
            NOW,
            ulid(99),
            None
        ),
        Err(IssueError::DepthExceeded)
    );
}

fn framework(name: &str) -> Framework {
    Framework::parse(name).unwrap()
}

#[test]
fn what_a_delegation_leaves_out_it_inherits() {
    let mut req = request(&["crm:*"], &["read", "delegate"]);
    req.constraints = Constraints {
        max_spend_per_action_usd: None,
        min_trust: None,
        max_spend_usd: Some(Usd::from_f64(5.0).unwrap()),
        max_actions: None,
        require_approval: None,
        args: Default::default(),
    };
    req.policy = Policy::new(vec![framework("gdpr")]).unwrap();
    let parent = root_with(req);
    // A new user's request: a limit of its own, the parent's spend limit and
    // framework left out.
    let mut asked = request(&["crm:*"], &["read"]);
    asked.constraints.max_actions = Some(5);
    asked.policy = Policy::new(vec![framework("hipaa")]).unwrap();
    let child = delegate(&parent, asked, NOW, ulid(3), None).unwrap();
    assert_eq!(
        child.constraints(),
        Constraints {
            max_spend_per_action_usd: None,
            min_trust: None,
            max_spend_usd: Some(Usd::from_f64(5.0).unwrap()),
            max_actions: Some(5),
            require_approval: None,
            args: Default::default(),
        }
    );
    assert_eq!(
        child.svc_policy.unwrap().frameworks(),
        [framework("gdpr"), framework("hipaa")]
    );
    // Only an explicitly wider value is refused, naming the field.
    let mut wider = request(&["crm:*"], &["read"]);
    wider.constraints.max_spend_usd = Some(Usd::from_f64(5.000001).unwrap());
    let IssueError::Widening(widening) = delegate(&parent, wider, NOW, ulid(3), None).unwrap_err()
    else {
        unreachable!()
    };
    assert_eq!(
        widening.violations,
        vec![Violation::ConstraintRaised(Limit::MaxSpendUsd)]
    );
    assert_eq!(widening.violations[0].field(), "constraints.max_spend_usd");
}

fn requirement(actions: &[&str], spend_over_usd: Option<f64>) -> ApprovalRequirement {
    let spend = spend_over_usd.map(|usd| Usd::from_f64(usd).unwrap());
    ApprovalRequirement::parse::<&str, &str>(Some(actions), None, spend).unwrap()
}

#[test]
fn an_approval_requirement_travels_with_the_chain() {
    let mut req = request(&["bank:*"], &["read", "pay", "delegate"]);
    req.constraints.require_approval = Some(requirement(&["pay"], Some(100.0)));
    let root = root_with(req);
    let json = serde_json::to_value(&root).unwrap();
    assert_eq!(
        json["svc_constraints"],
        serde_json::json!({"require_approval": {"actions": ["pay"], "spend_over_usd": 100.0}})
    );
    let root_token = sign(&root, &key(1)).unwrap();
    let verified = verify(&root_token, &jwks(), NOW, &VerifyOptions::default()).unwrap();
    assert_eq!(verified.claims, root);

    // Left out, the requirement is inherited; set, it is added to.
    let child = delegate(&root, request(&["bank:*"], &["pay"]), NOW, ulid(3), None).unwrap();
    assert_eq!(child.constraints(), root.constraints());
    let mut stricter = request(&["bank:*"], &["read", "pay"]);
    stricter.constraints.require_approval = Some(requirement(&["read"], Some(10.0)));
    let stricter = delegate(&root, stricter, NOW, ulid(4), None).unwrap();
    assert_eq!(
        stricter.constraints().require_approval,
        Some(requirement(&["pay", "read"], Some(10.0)))
    );
    // A higher threshold is refused, naming the field.
    let mut laxer = request(&["bank:*"], &["pay"]);
    laxer.constraints.require_approval = Some(requirement(&["pay"], Some(100.5)));
    let IssueError::Widening(widening) = delegate(&root, laxer, NOW, ulid(5), None).unwrap_err()
    else {
        unreachable!()
    };
    assert_eq!(
        widening.violations,
        vec![Violation::ApprovalThresholdRaised]
    );
    assert_eq!(
        widening.violations[0].field(),
        "constraints.require_approval.spend_over_usd"
    );

    // Offline, a chain whose child dropped the requirement is refused.
    let child_token = sign(&child, &key(1)).unwrap();
    assert!(
        verify_chain(
            &[&root_token, &child_token],
            &jwks(),
            NOW,
            &VerifyOptions::default(),
            |_| false
        )
        .is_ok()
    );
    let mut dropped = child.clone();
    dropped.svc_constraints = None;
    let dropped_token = sign(&dropped, &key(1)).unwrap();
    assert_eq!(
        verify_chain(
            &[&root_token, &dropped_token],
            &jwks(),
            NOW,
            &VerifyOptions::default(),
            |_| false
        )
        .map(|_| ()),
        Err(ChainError::Link {
            index: 1,
            fault: ChainFault::Widening(Widening {
                violations: vec![Violation::ApprovalDropped]
            })
        })
    );
}

#[test]
fn binding_is_kept_or_moved_never_dropped() {
    let holder = key(7).holder_key();
    let other = key(8).holder_key();
    let mut req = request(&["crm:*"], &["read", "delegate"]);
    req.holder = Some(holder.jkt().clone());
    let bound = root_with(req);
    assert_eq!(
        bound.cnf,
        Some(Confirmation {
            jkt: holder.jkt().clone()
        })
    );
    let json = serde_json::to_value(&bound).unwrap();
    assert_eq!(json["cnf"]["jkt"], holder.jkt().as_str());
    // A child left unbound in the request stays bound to the parent's key.
    let inherited = delegate(&bound, request(&["crm:*"], &["read"]), NOW, ulid(3), None).unwrap();
    assert_eq!(inherited.cnf, bound.cnf);
    // A child of a bound token may be bound to another key.
    let mut moved = request(&["crm:*"], &["read"]);
    moved.holder = Some(other.jkt().clone());
    let moved = delegate(&bound, moved, NOW, ulid(4), None).unwrap();
    assert_eq!(moved.cnf.unwrap().jkt, *other.jkt());
    // An unbound parent may bind its child.
    let mut bind = request(&["crm:*"], &["read"]);
    bind.holder = Some(other.jkt().clone());
    assert!(
        delegate(&root(), bind, NOW, ulid(5), None)
            .unwrap()
            .cnf
            .is_some()
    );
    let token = sign(&inherited, &key(1)).unwrap();
    assert_eq!(
        verify(&token, &jwks(), NOW, &VerifyOptions::default())
            .unwrap()
            .claims
            .cnf,
        bound.cnf
    );
}

#[test]
fn fan_out_is_capped() {
    assert_eq!(check_fan_out(0), Ok(()));
    assert_eq!(check_fan_out(MAX_CHILDREN_PER_TOKEN - 1), Ok(()));
    assert_eq!(
        check_fan_out(MAX_CHILDREN_PER_TOKEN),
        Err(IssueError::TooManyChildren)
    );
    assert_eq!(IssueError::TooManyChildren.code(), "too_many_children");
}

#[test]
fn root_ttl_bounds() {
    let mut req = request(&["crm:*"], &["read"]);
    req.ttl_seconds = Some(30 * 24 * 3600 + 1);
    let err = mandate_core::issue_root(
        req,
        mandate_core::RootIssue {
            issuer: "i".into(),
            human: mandate_core::HumanRef::from_digest(&[0; 32]),
            level: mandate_core::AssuranceLevel::L3,
            now: NOW,
            jti: ulid(1),
            provenance: ulid(2),
            status: None,
        },
    )
    .unwrap_err();
    assert_eq!(err, IssueError::TtlOutOfRange);
}

#[test]
fn time_window() {
    let claims = root();
    assert_eq!(claims.check_time(claims.exp - 1, 0), Ok(()));
    assert_eq!(claims.check_time(claims.exp, 0), Err(VerifyError::Expired));
    assert_eq!(
        claims.check_time(claims.nbf - 61, 60),
        Err(VerifyError::NotYetValid)
    );
    assert_eq!(claims.check_time(claims.nbf - 60, 60), Ok(()));
}

#[test]
fn every_verify_error_has_a_distinct_code() {
    use mandate_core::token::Segment;
    let errors = [
        VerifyError::TokenTooLarge,
        VerifyError::MalformedToken,
        VerifyError::InvalidBase64(Segment::Header),
        VerifyError::MalformedHeader,
        VerifyError::UnsupportedAlg,
        VerifyError::ForbiddenHeaderParam("jwk"),
        VerifyError::InvalidTyp,
        VerifyError::MissingKid,
        VerifyError::UnknownKid,
        VerifyError::MalformedSignature,
        VerifyError::InvalidSignature,
        VerifyError::MalformedClaims,
        VerifyError::DuplicateClaim,
        VerifyError::MissingExp,
        VerifyError::InvalidExp,
        VerifyError::InvalidNbf,
        VerifyError::InvalidIat,
        VerifyError::InvalidClaim {
            claim: "x",
            reason: "y",
        },
        VerifyError::IssuerMismatch,
        VerifyError::Expired,
        VerifyError::NotYetValid,
    ];
    let mut codes: Vec<&str> = errors.iter().map(VerifyError::code).collect();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), errors.len());
    assert!(codes.iter().all(|c| {
        c.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    }));
}

/// Constraints with argument rules and an approval requirement on
/// arguments, from their JSON.
fn args_constraints(text: &str) -> Constraints {
    serde_json::from_str(text).unwrap()
}

#[test]
fn argument_rules_survive_signing_and_delegation() {
    let constraints = args_constraints(
        r#"{"args":[{"actions":["write"],"pol":[["all",".to",["like",".","*@example.com"]]]}],
            "require_approval":{"args":[[">",".amount_usd",100]]}}"#,
    );
    let mut req = request(&["crm:*", "mail:inbox"], &["read", "write", "delegate"]);
    req.constraints = constraints.clone();
    let parent = root_with(req);
    let token = sign(&parent, &key(1)).unwrap();
    let verified = verify(&token, &jwks(), NOW, &VerifyOptions::default()).unwrap();
    assert_eq!(verified.claims.svc_constraints, Some(constraints.clone()));

    // A request without rules inherits them; one that drops them is refused.
    let child = delegate(
        &parent,
        request(&["mail:inbox"], &["write"]),
        NOW,
        ulid(3),
        None,
    )
    .unwrap();
    assert_eq!(child.svc_constraints, Some(constraints));
    let mut dropping = request(&["mail:inbox"], &["write"]);
    dropping.constraints = args_constraints(r#"{"args":[{"pol":[["==",".to","x"]]}]}"#);
    let Err(IssueError::Widening(widening)) = delegate(&parent, dropping, NOW, ulid(3), None)
    else {
        panic!("a dropped rule must be refused");
    };
    assert_eq!(widening.violations, vec![Violation::ArgsRuleDropped(0)]);
}

#[test]
fn a_token_with_the_largest_rules_stays_under_8_kib() {
    // Rules of just under 4 KiB as canonical JSON.
    let filler = "x".repeat(4000);
    let text = format!(r#"{{"args":[{{"pol":[["!=",".note?","{filler}"]]}}]}}"#);
    let mut req = request(&["crm:*", "mail:inbox"], &["read", "write", "delegate"]);
    req.constraints = args_constraints(&text);
    let token = sign(&root_with(req), &key(1)).unwrap();
    assert!(
        token.len() <= mandate_core::limits::MAX_TOKEN_BYTES,
        "{}",
        token.len()
    );
    assert!(verify(&token, &jwks(), NOW, &VerifyOptions::default()).is_ok());
    // A rule set over 4 KiB is no grant at all.
    let over = format!(
        r#"{{"args":[{{"pol":[["!=",".note?","{filler}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"]]}}]}}"#
    );
    let refused = serde_json::from_str::<Constraints>(&over).unwrap_err();
    assert!(
        refused.to_string().contains("rules_too_large") || refused.to_string().contains("4 KiB"),
        "{refused}"
    );
}

#[test]
fn claims_with_a_duplicated_member_in_a_rule_are_refused() {
    let text = r#"{"args":[{"pol":[["==",".to",{"a":1,"a":2}]]}]}"#;
    assert!(serde_json::from_str::<Constraints>(text).is_err());
}

const AUD: &str = "https://mcp.example.com/mcp";

/// The test root, for the resource server `aud`.
fn root_for(aud: &str) -> Claims {
    Claims {
        aud: Some(Audience::parse(aud).unwrap()),
        ..root()
    }
}

/// The claims of `claims` as JSON, signed after `change`.
fn resigned(claims: &Claims, change: impl Fn(&mut serde_json::Value)) -> String {
    let mut payload = serde_json::to_value(claims).unwrap();
    change(&mut payload);
    let header = serde_json::json!({"alg": "EdDSA", "typ": "vat+jwt", "kid": key(1).kid()});
    let b64 = |v: &serde_json::Value| {
        base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            serde_json::to_vec(v).unwrap(),
        )
    };
    let input = format!("{}.{}", b64(&header), b64(&payload));
    let signature = ed25519_dalek::Signer::sign(
        &ed25519_dalek::SigningKey::from_bytes(&[1; 32]),
        input.as_bytes(),
    );
    format!(
        "{input}.{}",
        base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            signature.to_bytes()
        )
    )
}

#[test]
fn the_audience_is_one_resource_uri() {
    let claims = root_for(AUD);
    let token = sign(&claims, &key(1)).unwrap();
    let verified = verify(&token, &jwks(), NOW, &VerifyOptions::default()).unwrap();
    assert_eq!(
        verified.claims.aud.as_ref().map(Audience::as_str),
        Some(AUD)
    );
    let json = serde_json::to_value(&verified.claims).unwrap();
    assert_eq!(json["aud"], AUD);
    assert!(serde_json::to_value(root()).unwrap().get("aud").is_none());

    let refused = |value: serde_json::Value| {
        let token = resigned(&claims, |p| p["aud"] = value.clone());
        verify(&token, &jwks(), NOW, &VerifyOptions::default())
    };
    // RFC 7519 allows an array; Mandate reads one string only.
    assert_eq!(
        refused(serde_json::json!([AUD])),
        Err(VerifyError::MalformedClaims)
    );
    for bad in [
        "http://mcp.example.com/mcp",
        "https://mcp.example.com/mcp#x",
        "mcp.example.com",
        "https://user@mcp.example.com/",
    ] {
        let error = refused(serde_json::json!(bad)).unwrap_err();
        assert!(
            matches!(error, VerifyError::InvalidClaim { claim: "aud", .. }),
            "{bad}: {error:?}"
        );
    }
    assert_eq!(
        refused(serde_json::json!(7)),
        Err(VerifyError::MalformedClaims)
    );
    assert_eq!(
        refused(serde_json::json!({"uri": AUD})),
        Err(VerifyError::MalformedClaims)
    );
}

#[test]
fn a_child_keeps_its_parents_audience() {
    let parent = root_for(AUD);
    let child = delegate(&parent, request(&["crm:a"], &["read"]), NOW, ulid(3), None).unwrap();
    assert_eq!(child.aud, parent.aud);
    assert_eq!(child.grant().audience, parent.aud);

    let unbound = delegate(&root(), request(&["crm:a"], &["read"]), NOW, ulid(3), None).unwrap();
    assert_eq!(unbound.aud, None);

    let mut asked = child.grant();
    asked.audience = Some(Audience::parse("https://other.example.com/mcp").unwrap());
    let widening = mandate_core::check_narrowing(&asked, &parent.grant()).unwrap_err();
    assert_eq!(
        widening.violations,
        vec![Violation::AudienceChanged {
            child: Audience::parse("https://other.example.com/mcp").unwrap(),
            parent: Audience::parse(AUD).unwrap(),
        }]
    );
    assert_eq!(widening.violations[0].field(), "aud");
    assert_eq!(widening.violations[0].code(), "audience_changed");
    assert_eq!(
        mandate_core::delegated_grant(asked.clone(), &parent.grant())
            .unwrap_err()
            .code(),
        "scope_widening"
    );

    let mut dropped = child.grant();
    dropped.audience = None;
    let widening = mandate_core::check_narrowing(&dropped, &parent.grant()).unwrap_err();
    assert_eq!(
        widening.violations,
        vec![Violation::AudienceDropped(Audience::parse(AUD).unwrap())]
    );
    assert_eq!(widening.violations[0].field(), "aud");

    let mut named = unbound.grant();
    named.audience = Some(Audience::parse(AUD).unwrap());
    assert_eq!(
        mandate_core::check_narrowing(&named, &root().grant()),
        Ok(())
    );
    assert_eq!(
        mandate_core::delegated_grant(named, &root().grant())
            .unwrap()
            .audience,
        Some(Audience::parse(AUD).unwrap())
    );
}

#[test]
fn a_chain_that_changes_its_audience_is_refused() {
    let parent = root_for(AUD);
    let child = delegate(&parent, request(&["crm:a"], &["read"]), NOW, ulid(3), None).unwrap();
    let other = Claims {
        aud: Some(Audience::parse("https://other.example.com").unwrap()),
        ..child.clone()
    };
    let tokens = [
        sign(&parent, &key(1)).unwrap(),
        sign(&other, &key(1)).unwrap(),
    ];
    let chain: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let error =
        verify_chain(&chain, &jwks(), NOW, &VerifyOptions::default(), |_| false).unwrap_err();
    assert_eq!(error.code(), "scope_widening");
    let kept = [tokens[0].clone(), sign(&child, &key(1)).unwrap()];
    let chain: Vec<&str> = kept.iter().map(String::as_str).collect();
    assert!(verify_chain(&chain, &jwks(), NOW, &VerifyOptions::default(), |_| false).is_ok());
}

fn renewal(ttl_seconds: u64) -> Renewal {
    Renewal {
        now: NOW + 100,
        ttl_seconds,
        holder: None,
        jti: ulid(4),
        status: None,
    }
}

#[test]
fn a_renewal_grants_exactly_its_parent() {
    let mut grant_root = root_for(AUD);
    grant_root.svc_scope = mandate_core::Scope::parse(&["crm:*"], &["read"]).unwrap();
    grant_root.svc_constraints = Some(Constraints {
        max_spend_usd: Some(Usd::from_micros(5_000_000).unwrap()),
        max_actions: Some(10),
        require_approval: Some(requirement(&["read"], Some(1.0))),
        ..Constraints::default()
    });
    grant_root.svc_policy = Some(Policy::new(vec![framework("gdpr")]).unwrap());
    let holder = key(7).holder_key().jkt().clone();
    let access = renew(
        &grant_root,
        Renewal {
            holder: Some(holder.clone()),
            ..renewal(900)
        },
    )
    .unwrap();
    assert_eq!(
        access.grant(),
        mandate_core::Grant {
            expires_at: NOW + 100 + 900,
            ..grant_root.grant()
        }
    );
    assert_eq!(access.aud, grant_root.aud);
    assert_eq!(access.sub, grant_root.sub);
    assert_eq!(access.svc_constraints, grant_root.svc_constraints);
    assert_eq!(access.svc_policy, grant_root.svc_policy);
    assert_eq!((access.iat, access.nbf), (NOW + 100, NOW + 100));
    assert_eq!(access.cnf, Some(Confirmation { jkt: holder }));
    assert_eq!(access.jti, Jti::delegated(ulid(4)));
    assert_eq!(access.svc_depth, 1);
    assert_eq!(access.svc_parent, Some(grant_root.jth()));
    assert_eq!(access.svc_chain, Some(vec![grant_root.jth()]));
    assert_eq!(
        access.act,
        Some(mandate_core::Actor {
            sub: "agent:bot".into(),
            act: None
        })
    );
    let tokens = [
        sign(&grant_root, &key(1)).unwrap(),
        sign(&access, &key(1)).unwrap(),
    ];
    let chain: Vec<&str> = tokens.iter().map(String::as_str).collect();
    assert!(
        verify_chain(
            &chain,
            &jwks(),
            NOW + 100,
            &VerifyOptions::default(),
            |_| false
        )
        .is_ok()
    );

    // A renewal of a renewal keeps the binding of its parent when it names
    // no key, and nests `act`.
    let again = renew(
        &access,
        Renewal {
            now: NOW + 200,
            ..renewal(900)
        },
    )
    .unwrap();
    assert_eq!(again.cnf, access.cnf);
    assert_eq!(again.aud, grant_root.aud);
    assert_eq!(
        again.act.as_ref().and_then(|a| a.act.as_deref()),
        access.act.as_ref()
    );
}

/// An OAuth refresh asking for less (RFC 6749 §6): the scope narrowed by
/// the delegation rules, everything else the parent's; wider is refused.
#[test]
fn a_renewal_within_a_narrower_scope_keeps_the_rest_and_refuses_wider() {
    let mut grant_root = root_for(AUD);
    grant_root.svc_scope = mandate_core::Scope::parse(&["crm:*"], &["read", "write"]).unwrap();
    grant_root.svc_constraints = Some(Constraints {
        max_actions: Some(10),
        require_approval: Some(requirement(&["write"], None)),
        ..Constraints::default()
    });
    let narrower = mandate_core::Scope::parse(&["crm:contacts"], &["read"]).unwrap();
    let access = renew_within(&grant_root, renewal(900), narrower.clone()).unwrap();
    assert_eq!(
        access.grant(),
        mandate_core::Grant {
            scope: narrower,
            expires_at: NOW + 100 + 900,
            ..grant_root.grant()
        }
    );
    assert_eq!(access.svc_parent, Some(grant_root.jth()));
    assert_eq!(access.jti, Jti::delegated(ulid(4)));
    // The whole scope is `renew`'s token, exactly.
    assert_eq!(
        renew_within(&grant_root, renewal(900), grant_root.svc_scope.clone()),
        renew(&grant_root, renewal(900))
    );
    for (resources, actions) in [(&["crm:*"][..], &["delete"][..]), (&["mail:*"], &["read"])] {
        let wider = mandate_core::Scope::parse(resources, actions).unwrap();
        let refused = renew_within(&grant_root, renewal(900), wider).unwrap_err();
        assert_eq!(
            refused.code(),
            "scope_widening",
            "{resources:?} {actions:?}"
        );
    }
    assert_eq!(
        renew_within(
            &grant_root,
            Renewal {
                now: grant_root.exp,
                ..renewal(900)
            },
            grant_root.svc_scope.clone()
        ),
        Err(IssueError::ParentExpired)
    );
}

#[test]
fn a_renewal_ends_with_its_parent_and_needs_no_delegate_action() {
    let mut parent = root_for(AUD);
    parent.svc_scope = mandate_core::Scope::parse(&["crm:*"], &["read"]).unwrap();
    let near_end = renew(
        &parent,
        Renewal {
            now: parent.exp - 10,
            ..renewal(900)
        },
    )
    .unwrap();
    assert_eq!(near_end.exp, parent.exp);
    let unnamed = renew(&root(), renewal(900)).unwrap();
    assert_eq!(unnamed.aud, None);
    let cases = [
        (
            Renewal {
                now: parent.exp,
                ..renewal(900)
            },
            IssueError::ParentExpired,
        ),
        (
            Renewal {
                now: -1,
                ..renewal(900)
            },
            IssueError::InvalidNow,
        ),
        (renewal(0), IssueError::TtlOutOfRange),
        (renewal(31 * 24 * 3600), IssueError::TtlOutOfRange),
    ];
    for (asked, expected) in cases {
        assert_eq!(renew(&parent, asked), Err(expected));
    }
    let mut deepest = renew(&parent, renewal(900)).unwrap();
    for _ in 1..MAX_DELEGATION_DEPTH {
        deepest = renew(&deepest, renewal(900)).unwrap();
    }
    assert_eq!(deepest.svc_depth, MAX_DELEGATION_DEPTH);
    assert_eq!(
        renew(&deepest, renewal(900)),
        Err(IssueError::DepthExceeded)
    );
}
