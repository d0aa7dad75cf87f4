//! Both integration paths of the spec, end to end.

use mandate_host::config::AgentAuth;
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{TestApp, expect_json, expect_problem, text};

#[tokio::test]
async fn simple_path_issue_then_record_each_action() {
    let app = TestApp::spawn().await;
    let token = app
        .root(
            "research-bot",
            &["crm:*", "mail:inbox"],
            &["read", "summarise"],
        )
        .await;
    let jti = text(&token["jti"]);
    assert!(jti.starts_with("vat_root_"));
    assert!(text(&token["provenance_ref"]).starts_with("prov_"));
    assert_eq!(token["claims"]["svc_trust_score"], 0.4);
    assert_eq!(
        token["claims"]["svc_scope"]["actions"],
        json!(["read", "summarise"])
    );
    assert!(text(&token["expires_at"]).ends_with('Z'));

    let recorded = expect_json(
        app.act(jti, "read", "crm:contacts", "success").await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(recorded["recorded"], true);
    assert!(text(&recorded["aar_id"]).starts_with("aar_"));
    assert_eq!(recorded["provenance_ref"], token["provenance_ref"]);
    assert_eq!(recorded["trust_score"], 0.4);
    assert_eq!(recorded["delegation_depth"], 0);
    expect_json(
        app.act(jti, "summarise", "mail:inbox", "error").await,
        StatusCode::CREATED,
    )
    .await;

    let denied = expect_problem(
        app.act(jti, "write", "crm:contacts", "success").await,
        StatusCode::FORBIDDEN,
        "action_not_permitted",
    )
    .await;
    let denied_id = text(&denied["aar_id"]).to_owned();
    expect_problem(
        app.act(jti, "read", "calendar:today", "success").await,
        StatusCode::FORBIDDEN,
        "resource_not_permitted",
    )
    .await;

    let record = expect_json(
        app.get_auth(&format!("/v1/vat/aar/{denied_id}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(record["status"], "denied");
    assert_eq!(record["deny_reason"], "action_not_permitted");
    assert!(record.get("result").is_none());

    let prov = text(&token["provenance_ref"]);
    let summary = expect_json(
        app.get_auth(&format!("/v1/vat/aar/provenance/{prov}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        summary,
        json!({
            "provenance_ref": prov,
            "total_records": 4,
            "unique_agents": 1,
            "actions_by_type": {"read": 2, "summarise": 1, "write": 1},
            "results_by_type": {"success": 1, "error": 1, "denied": 2},
        })
    );
}

#[tokio::test]
async fn full_control_path_authorize_act_complete_rate_reputation() {
    let app = TestApp::spawn().await;
    let token = app.root("ops-bot", &["db:orders"], &["write"]).await;
    let jti = text(&token["jti"]);

    let body = json!({"vat_jti": jti, "action": "write", "resource": "db:orders"});
    let auth = expect_json(app.post("/v1/vat/authorize", &body).await, StatusCode::OK).await;
    assert_eq!(auth["authorized"], true);
    assert_eq!(auth["assurance_level"], "L1");
    assert_eq!(auth["trust_score"], 0.4);
    assert!(text(&auth["human_ref"]).starts_with("sha256:"));
    assert_eq!(text(&auth["human_ref"]).len(), 71);
    assert!(auth.get("reason").is_none());
    let aar = text(&auth["aar_id"]).to_owned();

    let pending = expect_json(
        app.get_auth(&format!("/v1/vat/aar/{aar}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(pending["status"], "pending");
    let summary_path = format!("/v1/vat/aar/provenance/{}", text(&token["provenance_ref"]));
    let summary = expect_json(
        app.get_auth(&summary_path, &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(summary["results_by_type"], json!({"pending": 1}));

    let hash = format!("sha256:{}", "ab".repeat(32));
    let completed = expect_json(
        app.post(
            &format!("/v1/vat/aar/{aar}/complete"),
            &json!({"result": "success", "result_hash": hash}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["result"], "success");
    assert_eq!(completed["result_hash"], hash);
    assert!(text(&completed["completed_at"]).ends_with('Z'));

    let again = app
        .post(
            &format!("/v1/vat/aar/{aar}/complete"),
            &json!({"result": "error"}),
        )
        .await;
    expect_problem(again, StatusCode::CONFLICT, "already_completed").await;

    let refused = expect_json(
        app.post(
            "/v1/vat/authorize",
            &json!({"vat_jti": jti, "action": "read", "resource": "db:orders"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(refused["authorized"], false);
    assert_eq!(refused["reason"], "action_not_permitted");
    let refused_id = text(&refused["aar_id"]).to_owned();
    let not_completable = app
        .post(
            &format!("/v1/vat/aar/{refused_id}/complete"),
            &json!({"result": "success"}),
        )
        .await;
    expect_problem(not_completable, StatusCode::CONFLICT, "not_completable").await;

    let before = expect_json(
        app.get_auth("/v1/vat/reputation/ops-bot", &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(before["agent_id"], "agent:ops-bot");
    assert_eq!(before["has_human_feedback"], false);
    assert_eq!(before["total_actions"], 2);

    let rated = expect_json(
        app.post_auth(
            &format!("/v1/vat/aar/{aar}/feedback"),
            &app.admin_key,
            &json!({"rating": "approved", "note": "good"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(rated["aar_id"], aar);
    assert_eq!(rated["rating"], "approved");
    let at = text(&rated["feedback_at"]);
    assert!(at.ends_with('Z') && at.contains('T'));
    let second = app
        .post_auth(
            &format!("/v1/vat/aar/{aar}/feedback"),
            &app.admin_key,
            &json!({"rating": "rejected"}),
        )
        .await;
    expect_problem(second, StatusCode::CONFLICT, "already_rated").await;
    let denied_rating = app
        .post_auth(
            &format!("/v1/vat/aar/{refused_id}/feedback"),
            &app.admin_key,
            &json!({"rating": "flagged"}),
        )
        .await;
    expect_problem(denied_rating, StatusCode::CONFLICT, "not_ratable").await;
    let summary = expect_json(
        app.get_auth(&summary_path, &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(summary["total_records"], 2);
    assert_eq!(summary["unique_agents"], 1);
    assert_eq!(summary["actions_by_type"], json!({"write": 1, "read": 1}));
    assert_eq!(
        summary["results_by_type"],
        json!({"success": 1, "denied": 1})
    );

    let after = expect_json(
        app.get_auth("/v1/vat/reputation/agent:ops-bot", &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(after["has_human_feedback"], true);
    // One success and one refused pre-flight (a denied request, not a
    // failure): (1+1)/(1+2); one approval: (1+1)/(1+2).
    assert_eq!(after["counts"]["denied_requests"], 1);
    let execution = after["execution_score"].as_f64().unwrap();
    assert!((execution - 2.0 / 3.0).abs() < 1e-12);
    let feedback = after["feedback_score"].as_f64().unwrap();
    assert!((feedback - 2.0 / 3.0).abs() < 1e-12);
    let combined = after["combined_reputation"].as_f64().unwrap();
    assert!((combined - (0.6 * 2.0 / 3.0 + 0.4 * 2.0 / 3.0)).abs() < 1e-12);
    let record = expect_json(
        app.get_auth(&format!("/v1/vat/aar/{aar}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(record["rating"], "approved");
    assert_eq!(record["note"], "good");
}

#[tokio::test]
async fn bearer_token_may_replace_or_accompany_vat_jti() {
    let app = TestApp::spawn().await;
    let token = app.root("bot", &["crm:*"], &["read"]).await;
    let (jti, jwt) = (text(&token["jti"]), text(&token["compact_jwt"]));
    let body = json!({"action": "read", "resource": "crm:a", "result": "success"});
    expect_json(
        app.post_auth("/v1/vat/record/action", jwt, &body).await,
        StatusCode::CREATED,
    )
    .await;
    let mut with_jti = body.clone();
    with_jti["vat_jti"] = json!(jti);
    expect_json(
        app.post_auth("/v1/vat/record/action", jwt, &with_jti).await,
        StatusCode::CREATED,
    )
    .await;

    let other = app.root("bot", &["crm:*"], &["read"]).await;
    with_jti["vat_jti"] = other["jti"].clone();
    expect_problem(
        app.post_auth("/v1/vat/record/action", jwt, &with_jti).await,
        StatusCode::UNAUTHORIZED,
        "token_mismatch",
    )
    .await;

    // Flip one character inside the signature segment.
    let at = jwt.len() - 20;
    let flipped = if &jwt[at..=at] == "A" { "B" } else { "A" };
    let tampered = format!("{}{flipped}{}", &jwt[..at], &jwt[at + 1..]);
    let response = app
        .post_auth("/v1/vat/record/action", &tampered, &body)
        .await;
    assert!(response.headers().contains_key("www-authenticate"));
    let problem = expect_problem(response, StatusCode::UNAUTHORIZED, "invalid_signature").await;
    assert!(problem.get("aar_id").is_none());
}

#[tokio::test]
async fn bearer_can_be_required() {
    let app = TestApp::spawn_with(|c| c.agent_auth = AgentAuth::Bearer).await;
    let token = app.root("bot", &["crm:*"], &["read"]).await;
    let body = json!({"vat_jti": token["jti"], "action": "read", "resource": "crm:a", "result": "success"});
    expect_problem(
        app.post("/v1/vat/record/action", &body).await,
        StatusCode::UNAUTHORIZED,
        "token_required",
    )
    .await;
    expect_json(
        app.post_auth("/v1/vat/record/action", text(&token["compact_jwt"]), &body)
            .await,
        StatusCode::CREATED,
    )
    .await;
}

#[tokio::test]
async fn spend_is_reserved_then_settled_on_complete() {
    let app = TestApp::spawn().await;
    let token = app
        .issue(json!({
            "developer_email": "dev@example.com", "agent_id": "buyer",
            "resources": ["shop:*"], "actions": ["buy"],
            "constraints": {"max_spend_usd": 10}
        }))
        .await;
    let jti = text(&token["jti"]);
    let authorize = |spend: f64| json!({"vat_jti": jti, "action": "buy", "resource": "shop:x", "spend_usd": spend});
    let first = expect_json(
        app.post("/v1/vat/authorize", &authorize(6.0)).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(first["authorized"], true);
    let over = expect_json(
        app.post("/v1/vat/authorize", &authorize(5.0)).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (over["authorized"].clone(), over["reason"].clone()),
        (json!(false), json!("budget_max_spend_usd"))
    );
    let aar = text(&first["aar_id"]);
    // Actual spend 2.5 releases 3.5 of the reservation.
    let done = expect_json(
        app.post(
            &format!("/v1/vat/aar/{aar}/complete"),
            &json!({"result": "success", "spend_usd": 2.5}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(done["spend_usd"], 2.5);
    let second = expect_json(
        app.post("/v1/vat/authorize", &authorize(7.5)).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(second["authorized"], true);
    let aar2 = text(&second["aar_id"]);
    // Only the token's holder may report more than was reserved (anyone
    // who has seen the aar_id may complete by it), and not past a budget.
    let too_much = app
        .post_auth(
            &format!("/v1/vat/aar/{aar2}/complete"),
            text(&token["compact_jwt"]),
            &json!({"result": "success", "spend_usd": 7.500001}),
        )
        .await;
    expect_problem(too_much, StatusCode::FORBIDDEN, "budget_max_spend_usd").await;
    let record = expect_json(
        app.get_auth(&format!("/v1/vat/aar/{aar2}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        record["status"], "pending",
        "a refused completion changes nothing"
    );
}

#[tokio::test]
async fn records_filter_by_time_and_page_with_cursors() {
    let app = TestApp::spawn().await;
    let token = app.root("bot", &["crm:*"], &["read", "write"]).await;
    let jti = text(&token["jti"]);
    let mut ids = Vec::new();
    for n in 0..5 {
        let action = if n % 2 == 0 { "read" } else { "write" };
        let recorded = expect_json(
            app.act(jti, action, &format!("crm:r{n}"), "success").await,
            StatusCode::CREATED,
        )
        .await;
        ids.push(text(&recorded["aar_id"]).to_owned());
        app.clock.advance(std::time::Duration::from_millis(15));
    }
    let third = expect_json(
        app.get_auth(&format!("/v1/vat/aar/{}", ids[2]), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    let at = text(&third["created_at"]).replace('+', "%2B");
    let page = |query: String| {
        let app = &app;
        async move {
            expect_json(
                app.get_auth(&format!("/v1/vat/aar?{query}"), &app.admin_key)
                    .await,
                StatusCode::OK,
            )
            .await
        }
    };
    let listed = |page: &serde_json::Value| -> Vec<String> {
        page["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| text(&r["aar_id"]).to_owned())
            .collect()
    };
    assert_eq!(
        listed(&page(format!("since={at}")).await),
        [ids[4].clone(), ids[3].clone(), ids[2].clone()]
    );
    assert_eq!(
        listed(&page(format!("until={at}")).await),
        [ids[1].clone(), ids[0].clone()]
    );
    assert_eq!(
        listed(&page(format!("since={at}&action=read")).await),
        [ids[4].clone(), ids[2].clone()]
    );
    assert_eq!(
        listed(&page("since=2999-01-01T00:00:00Z".into()).await),
        Vec::<String>::new()
    );

    let first = page("limit=2".into()).await;
    assert_eq!(listed(&first), [ids[4].clone(), ids[3].clone()]);
    let cursor = text(&first["next_cursor"]).to_owned();
    let second = page(format!("limit=2&cursor={cursor}")).await;
    assert_eq!(listed(&second), [ids[2].clone(), ids[1].clone()]);
    let last = page(format!("limit=2&cursor={}", text(&second["next_cursor"]))).await;
    assert_eq!(listed(&last), [ids[0].clone()]);
    assert!(last.get("next_cursor").is_none());
}
