//! RFC 8693 token exchange at the token endpoint (plan §3.4): the subject
//! token is the parent VAT, and the exchange is a `delegate` — its rules,
//! its record — answered as RFC 8693 §2.2 says.

use reqwest::StatusCode;
use serde_json::json;

use super::{
    Flow, FormBody as _, Holder, act_bound, act_with, claims_of, location, oauth_error_of, pair,
    query_of, text,
};
use crate::helpers::expect_json;

const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";

impl Flow {
    /// An access token granting `read` and `delegate` on `crm:*` (bound to
    /// `holder`'s key when given): the subject of the exchanges below.
    async fn delegating(&self, holder: Option<&Holder>) -> String {
        self.delegating_granted(
            holder,
            json!({"actions": ["read", "delegate"], "resources": ["crm:*"]}),
        )
        .await
    }

    /// As [`Flow::delegating`], the human granting `grant`.
    async fn delegating_granted(
        &self,
        holder: Option<&Holder>,
        grant: serde_json::Value,
    ) -> String {
        let response = self
            .authorize(&[("scope", Some("read write delegate crm:*"))])
            .await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        let sealed = query_of(&location(&response))["request"].clone();
        let code = self.approve(&sealed, grant).await["code"].clone();
        let proofs: Vec<String> = holder.map(|h| self.token_proof(h)).into_iter().collect();
        let proofs: Vec<&str> = proofs.iter().map(String::as_str).collect();
        let issued = expect_json(self.redeem_with(&code, &proofs).await, StatusCode::OK).await;
        text(&issued["access_token"]).to_owned()
    }

    /// A token exchange of `subject` with `more` parameters and the `DPoP`
    /// headers `proofs`.
    async fn exchange(
        &self,
        subject: &str,
        more: &[(&str, &str)],
        proofs: &[&str],
    ) -> reqwest::Response {
        let mut form = vec![
            ("grant_type", GRANT_TYPE),
            ("subject_token", subject),
            ("subject_token_type", ACCESS_TOKEN),
        ];
        form.extend_from_slice(more);
        let mut request = self.app.client.post(self.token_url()).form_of(&form);
        for proof in proofs {
            request = request.header("dpop", *proof);
        }
        request.send().await.unwrap()
    }
}

/// RFC 8693 §2.2.1: the child of a delegation — narrower scope, the named
/// sub-agent, `act` naming the subject's agent, the subject as parent, the
/// subject's `aud` — with `issued_token_type`, no refresh token; it acts
/// like any delegated token, and the subject's record of the delegation is
/// written. `holder_key` binds the child to that key; an unbound subject
/// exchanged with a proof gives a child bound to the proof's key.
#[tokio::test]
async fn an_exchange_is_a_delegation() {
    let flow = Flow::start().await;
    let subject = flow.delegating(None).await;
    let response = flow
        .exchange(
            &subject,
            &[
                ("scope", "read"),
                (
                    "mandate_grant",
                    r#"{"agent_id": "crm-helper", "ttl_seconds": 600}"#,
                ),
                ("requested_token_type", ACCESS_TOKEN),
            ],
            &[],
        )
        .await;
    assert_eq!(response.headers()["cache-control"], "no-store");
    let issued = expect_json(response, StatusCode::OK).await;
    assert_eq!(issued["issued_token_type"], ACCESS_TOKEN);
    assert_eq!(issued["token_type"], "Bearer");
    assert_eq!(issued["scope"], "read crm:*");
    assert!(issued.get("refresh_token").is_none(), "{issued}");
    let expires_in = issued["expires_in"].as_u64().unwrap();
    assert!((595..=600).contains(&expires_in), "{expires_in}");
    let (parent, child) = (
        claims_of(&subject),
        claims_of(text(&issued["access_token"])),
    );
    assert_eq!(child["sub"], "agent:crm-helper");
    assert_eq!(child["act"]["sub"], parent["sub"]);
    assert_eq!(child["aud"], parent["aud"]);
    assert_eq!(child["svc_prov"], parent["svc_prov"]);
    assert_eq!(child["svc_depth"], 2);
    assert_eq!(child["svc_scope"]["actions"], json!(["read"]));
    let (status, record) = act_with(&flow.app, text(&issued["access_token"]), "read").await;
    assert_eq!(status, StatusCode::CREATED, "{record}");

    // holder_key: the child is bound to the key named, and only to it.
    let named = Holder::new();
    let holder_key = named.jwk().to_string();
    let issued = expect_json(
        flow.exchange(
            &subject,
            &[("scope", "read"), ("holder_key", holder_key.as_str())],
            &[],
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(issued["token_type"], "DPoP");
    let child = text(&issued["access_token"]).to_owned();
    assert_eq!(claims_of(&child)["cnf"]["jkt"], json!(named.jkt()));
    let (status, record) = act_bound(&flow.app, &child, Some(&named)).await;
    assert_eq!(status, StatusCode::CREATED, "{record}");

    // An unbound subject with a proof: the child is bound to its key.
    let prover = Holder::new();
    let issued = expect_json(
        flow.exchange(&subject, &[], &[&flow.token_proof(&prover)])
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(issued["token_type"], "DPoP");
    assert_eq!(
        claims_of(text(&issued["access_token"]))["cnf"]["jkt"],
        json!(prover.jkt())
    );
}

/// A bound subject is exchanged only by its holder (RFC 9449 §5 at the
/// token endpoint): without a proof, or with another key's, the exchange
/// is `invalid_dpop_proof`; the holder's proof gives a child bound to the
/// same key.
#[tokio::test]
async fn a_bound_subject_needs_its_holders_proof() {
    let flow = Flow::start().await;
    let holder = Holder::new();
    let subject = flow.delegating(Some(&holder)).await;
    assert_eq!(
        oauth_error_of(flow.exchange(&subject, &[], &[]).await).await,
        pair("invalid_dpop_proof", "dpop_required")
    );
    assert_eq!(
        oauth_error_of(
            flow.exchange(&subject, &[], &[&flow.token_proof(&Holder::new())])
                .await
        )
        .await,
        pair("invalid_dpop_proof", "dpop_key_mismatch")
    );
    let issued = expect_json(
        flow.exchange(
            &subject,
            &[("scope", "read")],
            &[&flow.token_proof(&holder)],
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(issued["token_type"], "DPoP");
    assert_eq!(
        claims_of(text(&issued["access_token"]))["cnf"]["jkt"],
        json!(holder.jkt())
    );
}

/// RFC 8693 §2.2.2 with the delegation's rules: a wider scope is
/// `invalid_scope` naming the widening, with the denied record's `aar_id`;
/// another human's agent is `invalid_grant` (`agent_not_yours`); a revoked
/// subject is `invalid_grant`; `actor_token` is refused; a jti is not a
/// subject token; another `requested_token_type` or `resource` is refused.
#[tokio::test]
async fn exchange_attacks_are_refused() {
    let flow = Flow::start().await;
    let subject = flow.delegating(None).await;

    let response = flow
        .exchange(&subject, &[("scope", "read write")], &[])
        .await;
    let body = expect_json(response, StatusCode::BAD_REQUEST).await;
    assert_eq!(
        (text(&body["error"]), text(&body["code"])),
        ("invalid_scope", "scope_widening")
    );
    assert!(text(&body["aar_id"]).starts_with("aar_"), "{body}");

    // Another human's agent.
    let other = flow
        .app
        .key(&flow.app.admin_key, "developer", Some("other@example.com"))
        .await;
    let sealed = flow.sealed().await;
    let answer = expect_json(
        flow.decide(
            &other,
            json!({"request": sealed, "decision": "approve", "grant": {"agent_id": "others-bot", "actions": ["read"], "resources": ["crm:*"]}}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let code = query_of(text(&answer["redirect"]))["code"].clone();
    expect_json(flow.redeem(&code).await, StatusCode::OK).await;
    assert_eq!(
        oauth_error_of(
            flow.exchange(
                &subject,
                &[("mandate_grant", r#"{"agent_id": "others-bot"}"#)],
                &[]
            )
            .await
        )
        .await,
        pair("invalid_grant", "agent_not_yours")
    );

    for (more, expected) in [
        (
            vec![
                ("actor_token", subject.as_str()),
                ("actor_token_type", ACCESS_TOKEN),
            ],
            pair("invalid_request", "actor_token_refused"),
        ),
        (
            vec![(
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:refresh_token",
            )],
            pair("invalid_request", "requested_token_type_unsupported"),
        ),
        (
            vec![("resource", "https://elsewhere.example/mcp")],
            pair("invalid_target", "audience_mismatch"),
        ),
        (
            vec![("mandate_grant", r#"{"vat_jti": "x"}"#)],
            pair("invalid_request", "mandate_grant_invalid"),
        ),
    ] {
        assert_eq!(
            oauth_error_of(flow.exchange(&subject, &more, &[]).await).await,
            expected
        );
    }

    // A jti names a token; it proves nothing.
    let jti = text(&claims_of(&subject)["jti"]).to_owned();
    assert_eq!(
        oauth_error_of(flow.exchange(&jti, &[], &[]).await).await,
        pair("invalid_grant", "subject_token_invalid")
    );

    // A revoked subject delegates nothing.
    let revoked = flow
        .app
        .client
        .post(flow.app.url("/v1/oauth/revoke"))
        .form_of(&[("token", subject.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), StatusCode::OK);
    assert_eq!(
        oauth_error_of(flow.exchange(&subject, &[("scope", "read")], &[]).await).await,
        pair("invalid_grant", "token_revoked")
    );
}

/// An exchange whose delegation a grant of the chain puts before a person
/// (plan §3.4): `authorization_pending` with the approval, the same until
/// decided (one approval, however often the client repeats); once
/// approved, the same exchange returns the child, and again the same child
/// if repeated. Only the same exchange resumes it: other parameters, or a
/// proof that would bind the child to another key, ask anew; a denial ends
/// it with `approval_denied`.
#[tokio::test]
async fn an_exchange_needing_approval_waits_then_returns_the_child() {
    let flow = Flow::start().await;
    let subject = flow
        .delegating_granted(
            None,
            json!({
                "actions": ["read", "delegate"],
                "resources": ["crm:*"],
                "constraints": {"require_approval": {"actions": ["delegate"]}},
            }),
        )
        .await;
    let asked: &[(&str, &str)] = &[
        ("scope", "read"),
        ("mandate_grant", r#"{"agent_id": "crm-helper"}"#),
    ];
    let pending = |response: reqwest::Response| async move {
        let body = expect_json(response, StatusCode::BAD_REQUEST).await;
        assert_eq!(
            (text(&body["error"]), text(&body["code"])),
            ("authorization_pending", "approval_pending"),
            "{body}"
        );
        let approval = body["mandate_approval"].clone();
        let id = text(&approval["approval_id"]).to_owned();
        assert!(id.starts_with("apr_"), "{body}");
        assert!(
            text(&approval["url"]).ends_with(&format!("/v1/vat/approvals/{id}")),
            "{body}"
        );
        assert!(!text(&approval["expires_at"]).is_empty(), "{body}");
        assert!(text(&body["aar_id"]).starts_with("aar_"), "{body}");
        id
    };

    let id = pending(flow.exchange(&subject, asked, &[]).await).await;
    assert_eq!(pending(flow.exchange(&subject, asked, &[]).await).await, id);
    // Another child, or the same one bound to a key the proof names: each
    // is its own delegation, asked for on its own.
    let other = pending(
        flow.exchange(
            &subject,
            &[
                ("scope", "read"),
                ("mandate_grant", r#"{"agent_id": "crm-other"}"#),
            ],
            &[],
        )
        .await,
    )
    .await;
    let prover = Holder::new();
    let bound = pending(
        flow.exchange(&subject, asked, &[&flow.token_proof(&prover)])
            .await,
    )
    .await;
    assert_ne!(other, id);
    assert_ne!(bound, id);

    let decide = |id: String, decision: &'static str| {
        let app = &flow.app;
        async move {
            expect_json(
                app.post_auth(
                    &format!("/v1/vat/approvals/{id}/decision"),
                    &app.admin_key,
                    &json!({"decision": decision}),
                )
                .await,
                StatusCode::OK,
            )
            .await
        }
    };
    decide(id.clone(), "approve").await;
    let issued = expect_json(flow.exchange(&subject, asked, &[]).await, StatusCode::OK).await;
    assert_eq!(issued["issued_token_type"], ACCESS_TOKEN);
    assert_eq!(issued["token_type"], "Bearer");
    let child = text(&issued["access_token"]).to_owned();
    assert_eq!(claims_of(&child)["sub"], "agent:crm-helper");
    assert_eq!(claims_of(&child)["act"]["sub"], claims_of(&subject)["sub"]);
    let (status, record) = act_with(&flow.app, &child, "read").await;
    assert_eq!(status, StatusCode::CREATED, "{record}");
    // The approval was used once: the repeat returns that child.
    let again = expect_json(flow.exchange(&subject, asked, &[]).await, StatusCode::OK).await;
    assert_eq!(again["access_token"], issued["access_token"]);
    // The bound request was not approved by the approval of the unbound.
    assert_eq!(
        pending(
            flow.exchange(&subject, asked, &[&flow.token_proof(&prover)])
                .await
        )
        .await,
        bound
    );

    decide(other, "deny").await;
    assert_eq!(
        oauth_error_of(
            flow.exchange(
                &subject,
                &[
                    ("scope", "read"),
                    ("mandate_grant", r#"{"agent_id": "crm-other"}"#)
                ],
                &[],
            )
            .await
        )
        .await,
        pair("invalid_grant", "approval_denied")
    );
}
