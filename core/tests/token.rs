//! Issuing, delegating, signing and verifying tokens through the public API.

mod common;

use common::{NOW, key, request, root, root_with, ulid};
use mandate_core::limits::{DEFAULT_TTL_SECONDS, MAX_DELEGATION_DEPTH, TRUST_L1};
use mandate_core::{
    AgentId, Constraints, IssueError, JtiKind, Jwks, Limit, Usd, VerifyError, VerifyOptions,
    Violation, decode_unverified, delegate, sign, verify,
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
    assert_eq!(claims.root_jti(), &claims.jti);
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
    let child = delegate(&parent, req, NOW + 5, ulid(3)).unwrap();
    assert_eq!(child.jti.kind(), JtiKind::Delegated);
    assert_eq!(child.svc_depth, 1);
    assert_eq!(child.svc_parent.as_ref(), Some(&parent.jti));
    assert_eq!(child.ancestors(), std::slice::from_ref(&parent.jti));
    assert_eq!(child.root_jti(), &parent.jti);
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
    )
    .unwrap();
    assert_eq!(grandchild.svc_depth, 2);
    assert_eq!(
        grandchild.ancestors(),
        [parent.jti.clone(), child.jti.clone()]
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

#[test]
fn delegation_refusals() {
    let parent = root();
    assert_eq!(
        delegate(&parent, request(&["crm:*"], &["read"]), parent.exp, ulid(3)),
        Err(IssueError::ParentExpired)
    );
    let no_delegate = root_with(request(&["crm:*"], &["read"]));
    assert_eq!(
        delegate(&no_delegate, request(&["crm:*"], &["read"]), NOW, ulid(3)),
        Err(IssueError::DelegateNotHeld)
    );
    let mut long = request(&["crm:*"], &["read"]);
    long.ttl_seconds = Some(DEFAULT_TTL_SECONDS + 1);
    let err = delegate(&parent, long, NOW, ulid(3)).unwrap_err();
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
        delegate(&parent, zero, NOW, ulid(3)),
        Err(IssueError::TtlOutOfRange)
    );
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
        )
        .unwrap();
        let token = sign(&current, &key(1)).unwrap();
        assert!(verify(&token, &jwks(), NOW, &VerifyOptions::default()).is_ok());
    }
    assert_eq!(
        delegate(&current, request(&["crm:*"], &["read"]), NOW, ulid(99)),
        Err(IssueError::DepthExceeded)
    );
}

#[test]
fn constraints_must_be_kept() {
    let mut req = request(&["crm:*"], &["read", "delegate"]);
    req.constraints = Constraints {
        max_spend_usd: Some(Usd::from_f64(5.0).unwrap()),
        max_actions: None,
    };
    let parent = root_with(req);
    let err = delegate(&parent, request(&["crm:*"], &["read"]), NOW, ulid(3)).unwrap_err();
    let IssueError::Widening(widening) = err else {
        unreachable!()
    };
    assert_eq!(
        widening.violations,
        vec![Violation::ConstraintDropped(Limit::MaxSpendUsd)]
    );
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
