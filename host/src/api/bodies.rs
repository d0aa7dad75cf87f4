//! Response bodies, made from what the ledger and the read side return:
//! the only place typed values become the wire's strings.

use mandate_core::{AarId, Claims, ReputationCounts, TokenStatus, WorkflowSummary, reputation};

use crate::apikeys::{KeyInfo, Principal};
use crate::clock::{Now, iso_ms, iso_s};
use crate::error::{ApiError, ApiResult};
use crate::ledger::{OrgCreated, Revoked};
use crate::model::dashboard::{
    AgentHistoryBody, AgentListItem, AgentPage, AgentWindowBody, BudgetUse, HistoryDayBody,
    OverviewBody, OverviewBucket, OverviewTotals, SparkDayBody, TokenListItem, TokenPage,
};
use crate::model::{
    GraphBody, GraphEdge, GraphNode, IssuedKeyBody, IssuedToken, KeyBody, KeyList, MeBody, OrgBody,
    OrgCreatedBody, OrgPage, OrgRef, QuotasBody, RecordBody, RecordPage, ReputationBody,
    ReputationCountsBody, RevokeResponse, SummaryBody, TokenStatus as TokenStatusBody,
    TokenSummary, WorkflowBody, WorkflowPage,
};
use crate::queries::dashboard::{AgentOverview, HistoryDay, ListedToken, Overview};
use crate::queries::{Graph, Page, TokenTree, Workflow};
use crate::store::dashboard::{DAY_MS, HourCounts};
use crate::store::orgs::{OrgRow, Quotas};
use crate::store::records::Record;
use crate::store::tokens::{self, TokenRow};

/// A token as issued: root or delegated (then with the parent's
/// `delegate` record).
pub(crate) fn issued(
    claims: &Claims,
    compact_jwt: String,
    aar_id: Option<&AarId>,
) -> ApiResult<IssuedToken> {
    Ok(IssuedToken {
        jti: claims.jti.to_string(),
        provenance_ref: claims.svc_prov.to_string(),
        compact_jwt,
        token_type: if claims.cnf.is_some() {
            "DPoP"
        } else {
            "Bearer"
        }
        .to_owned(),
        claims: serde_json::to_value(claims).map_err(ApiError::internal)?,
        expires_at: iso_s(claims.exp),
        delegation_depth: claims.svc_depth,
        aar_id: aar_id.map(AarId::to_string),
    })
}

/// The jti hash of a stored jti: how every answer but the issue and
/// delegate responses names a token (a jti acts; its hash names).
pub(crate) fn jth(jti: &str) -> String {
    tokens::jth_of(jti).to_string()
}

/// A record as lists, graphs and pages show it: its token by jti hash, and
/// its `aar_id` left out while that completes it.
pub(crate) fn record(record: Record) -> RecordBody {
    let aar_id = record.shown_aar_id().map(str::to_owned);
    RecordBody {
        aar_id,
        ..named_record(record)
    }
}

/// A record as shown to a caller who named it by its `aar_id` (or was just
/// given it): the same, with the `aar_id`.
pub(crate) fn named_record(record: Record) -> RecordBody {
    RecordBody {
        status: record.state.status().as_str().to_owned(),
        result: record.state.result().map(|r| r.as_str().to_owned()),
        deny_reason: record.state.deny_reason().map(|r| r.code().to_owned()),
        rating: record.state.rating().map(|r| r.as_str().to_owned()),
        aar_id: Some(record.aar_id),
        provenance_ref: record.provenance_ref,
        jth: jth(&record.jti),
        agent_id: record.agent_id,
        action: record.action,
        resource: record.resource,
        result_hash: record.result_hash,
        spend_usd: record.spend.as_f64(),
        trust_score: record.trust_score,
        trust_in_force: record.trust_in_force,
        delegation_depth: record.delegation_depth,
        human_ref: record.human_ref,
        assurance_level: record.assurance_level,
        note: record.note,
        feedback_at: record.feedback_at.map(iso_ms),
        created_at: iso_ms(record.created_at),
        completed_at: record.completed_at.map(iso_ms),
        delegated_jth: record.delegated_jti.as_deref().map(jth),
        credential: record.credential.as_str().to_owned(),
        args: shown_args(record.args.as_deref()),
        args_hash: record.args_hash,
        origin: record.origin.as_str().to_owned(),
    }
}

/// Stored arguments (canonical JSON this server wrote) as a value to show.
pub(crate) fn shown_args(stored: Option<&str>) -> Option<serde_json::Value> {
    stored.and_then(|text| match serde_json::from_str(text) {
        Ok(value) => Some(value),
        Err(error) => {
            tracing::error!(%error, "stored arguments are not JSON");
            None
        }
    })
}

pub(crate) fn record_page(page: Page<Record>) -> RecordPage {
    RecordPage {
        records: page.items.into_iter().map(record).collect(),
        next_cursor: page.next_cursor,
    }
}

/// An agent's reputation, computed by core from its counts.
pub(crate) fn reputation_of(agent_id: &str, counts: &ReputationCounts) -> ReputationBody {
    let scores = reputation(counts);
    ReputationBody {
        agent_id: format!("agent:{agent_id}"),
        total_actions: scores.total_actions,
        execution_score: scores.execution_score,
        feedback_score: scores.feedback_score,
        combined_reputation: scores.combined_reputation,
        has_human_feedback: scores.has_human_feedback,
        counts: ReputationCountsBody {
            successes: counts.successes,
            failures: counts.failures,
            pending: counts.pending,
            denied_requests: counts.denied_requests,
            approved: counts.approved,
            flagged: counts.flagged,
            rejected: counts.rejected,
        },
    }
}

pub(crate) fn summary(summary: WorkflowSummary) -> SummaryBody {
    SummaryBody {
        provenance_ref: summary.provenance_ref,
        total_records: summary.total_records,
        unique_agents: summary.unique_agents,
        actions_by_type: summary.actions_by_type,
        results_by_type: summary.results_by_type,
    }
}

/// A revocation's answer: the tokens it ended by jti hash, sorted.
pub(crate) fn revoked(revoked: Revoked) -> RevokeResponse {
    let mut jths: Vec<String> = revoked.jtis.iter().map(|jti| jth(jti)).collect();
    jths.sort();
    RevokeResponse {
        truncated: revoked.count > revoked.jtis.len() as u64,
        revoked_count: revoked.count,
        revoked: jths,
        revoked_at: iso_s(revoked.at),
    }
}

/// A token's status at `now`, as core rules it.
fn status(token: &TokenRow, now: Now) -> String {
    TokenStatus::at(token.expires_at, token.revoked_at.is_some(), now.s())
        .as_str()
        .to_owned()
}

/// A token and a page of its descendants, each with its status at `now`.
pub(crate) fn token_tree(tree: TokenTree, now: Now) -> TokenStatusBody {
    let descendants = tree
        .descendants
        .items
        .into_iter()
        .map(|t| TokenSummary {
            status: status(&t, now),
            jth: jth(&t.jti),
            agent_id: t.agent_id,
            parent: t.parent.as_deref().map(jth),
            delegation_depth: t.depth,
        })
        .collect();
    let token = tree.token;
    TokenStatusBody {
        status: status(&token, now),
        jth: jth(&token.jti),
        agent_id: token.agent_id,
        parent: token.parent.as_deref().map(jth),
        delegation_depth: token.depth,
        provenance_ref: token.provenance_ref,
        issued_at: iso_s(token.issued_at),
        expires_at: iso_s(token.expires_at),
        revoked_at: token.revoked_at.map(iso_s),
        revoke_reason: token.revoke_reason,
        constraints: None,
        descendants,
        next_cursor: tree.descendants.next_cursor,
    }
}

fn empty_node(id: String, kind: &str) -> GraphNode {
    GraphNode {
        id,
        kind: kind.to_owned(),
        agent_id: None,
        human_ref: None,
        assurance_level: None,
        delegation_depth: None,
        status: None,
        parent: None,
        expires_at: None,
        revoked_at: None,
        action: None,
        resource: None,
        result: None,
        deny_reason: None,
        rating: None,
        created_at: None,
    }
}

/// The execution graph of a workflow: the human, its tokens (statuses at
/// `now`) and its records, with the edges between them. Tokens are named
/// by jti hash; a record whose `aar_id` completes it, by base64url SHA-256
/// of its `aar_id`, which names it and completes nothing.
pub(crate) fn graph(provenance_ref: String, graph: Graph, now: Now) -> GraphBody {
    let human_ref = graph.human_ref;
    let mut nodes = vec![GraphNode {
        human_ref: Some(human_ref.clone()),
        assurance_level: Some(graph.assurance_level),
        ..empty_node(human_ref.clone(), "human")
    }];
    let mut edges = Vec::new();
    for token in graph.tokens {
        let parent = token.parent.as_deref().map(jth);
        let (from, kind) = match &parent {
            Some(parent) => (parent.clone(), "delegated"),
            None => (human_ref.clone(), "issued"),
        };
        let id = jth(&token.jti);
        edges.push(GraphEdge {
            from,
            to: id.clone(),
            kind: kind.to_owned(),
        });
        nodes.push(GraphNode {
            status: Some(status(&token, now)),
            agent_id: Some(token.agent_id),
            delegation_depth: Some(token.depth),
            parent,
            expires_at: Some(iso_s(token.expires_at)),
            revoked_at: token.revoked_at.map(iso_s),
            ..empty_node(id, "token")
        });
    }
    for record in graph.records {
        let id = match record.shown_aar_id() {
            Some(aar_id) => aar_id.to_owned(),
            None => jth(&record.aar_id),
        };
        let record = self::record(record);
        edges.push(GraphEdge {
            from: record.jth.clone(),
            to: id.clone(),
            kind: "action".to_owned(),
        });
        nodes.push(GraphNode {
            agent_id: Some(record.agent_id),
            status: Some(record.status),
            action: Some(record.action),
            resource: Some(record.resource),
            result: record.result,
            deny_reason: record.deny_reason,
            rating: record.rating,
            created_at: Some(record.created_at),
            ..empty_node(id, "record")
        });
    }
    GraphBody {
        provenance_ref,
        human_ref,
        nodes,
        edges,
        truncated: graph.truncated,
    }
}

pub(crate) fn workflow_page(page: Page<Workflow>) -> WorkflowPage {
    WorkflowPage {
        workflows: page
            .items
            .into_iter()
            .map(|w| WorkflowBody {
                provenance_ref: w.provenance_ref,
                root_jth: jth(&w.root_jti),
                root_agent_id: w.root_agent_id,
                human_ref: w.human_ref,
                human_label: w.human_label,
                assurance_level: w.assurance_level,
                total_records: w.total_records,
                created_at: iso_ms(w.created_at),
                last_activity: iso_ms(w.last_activity),
            })
            .collect(),
        next_cursor: page.next_cursor,
    }
}

fn quotas(quotas: Quotas) -> QuotasBody {
    QuotasBody {
        records_per_day: quotas.records_per_day,
        tokens_outstanding: quotas.tokens_outstanding,
    }
}

pub(crate) fn org(org: OrgRow) -> OrgBody {
    OrgBody {
        org_id: org.id,
        name: org.name,
        created_at: iso_ms(org.created_at),
        quotas: quotas(org.quotas),
    }
}

pub(crate) fn org_page(page: Page<OrgRow>) -> OrgPage {
    OrgPage {
        orgs: page.items.into_iter().map(org).collect(),
        next_cursor: page.next_cursor,
    }
}

pub(crate) fn issued_key(key: KeyInfo, api_key: String) -> IssuedKeyBody {
    IssuedKeyBody {
        key_id: key.id,
        api_key,
        role: key.role.as_str().to_owned(),
        email: key.email,
        created_at: iso_s(key.created_at),
    }
}

pub(crate) fn org_created(created: OrgCreated) -> OrgCreatedBody {
    OrgCreatedBody {
        org: org(created.org),
        owner_key: issued_key(created.owner, created.owner_key),
    }
}

pub(crate) fn key(key: KeyInfo) -> KeyBody {
    KeyBody {
        key_id: key.id,
        role: key.role.as_str().to_owned(),
        email: key.email,
        admin: key.is_admin,
        created_at: iso_s(key.created_at),
        revoked_at: key.revoked_at.map(iso_s),
    }
}

pub(crate) fn key_list(keys: Vec<KeyInfo>) -> KeyList {
    KeyList {
        keys: keys.into_iter().map(key).collect(),
    }
}

pub(crate) fn me(principal: Principal, org: OrgRow) -> MeBody {
    MeBody {
        key_id: principal.id,
        email: principal.email,
        role: principal.role.as_str().to_owned(),
        admin: principal.is_admin,
        permissions: principal
            .role
            .permissions()
            .iter()
            .map(|p| p.as_str().to_owned())
            .collect(),
        org: OrgRef {
            org_id: org.id,
            name: org.name,
        },
    }
}

/// A UTC day (days since the epoch) as `YYYY-MM-DD`.
fn day(day: i64) -> String {
    iso_ms(day.saturating_mul(DAY_MS))
        .get(..10)
        .unwrap_or_default()
        .to_owned()
}

/// A page of agents, each with its reputation, window and sparkline.
pub(crate) fn agent_page(page: Page<AgentOverview>) -> AgentPage {
    AgentPage {
        agents: page
            .items
            .into_iter()
            .map(|a| AgentListItem {
                agent_id: format!("agent:{}", a.agent_id),
                combined_reputation: a.reputation.combined_reputation,
                execution_score: a.reputation.execution_score,
                feedback_score: a.reputation.feedback_score,
                total_actions: a.reputation.total_actions,
                last_activity: a.last_activity.map(iso_ms),
                window: AgentWindowBody {
                    records: a.window.records,
                    successes: a.window.successes,
                    errors: a.window.errors,
                    denied: a.window.denied,
                    denial_rate: a.window.denial_rate,
                    error_rate: a.window.error_rate,
                },
                recent: a
                    .recent
                    .into_iter()
                    .map(|d| SparkDayBody {
                        day: day(d.day),
                        successes: d.successes,
                        errors: d.errors,
                        denied: d.denied,
                    })
                    .collect(),
            })
            .collect(),
        next_cursor: page.next_cursor,
    }
}

/// An agent's history.
pub(crate) fn agent_history(agent_id: &str, days: Vec<HistoryDay>) -> AgentHistoryBody {
    AgentHistoryBody {
        agent_id: format!("agent:{agent_id}"),
        days: days
            .into_iter()
            .map(|d| HistoryDayBody {
                day: day(d.day),
                records: d.records,
                successes: d.successes,
                errors: d.errors,
                denied: d.denied,
                approved: d.approved,
                flagged: d.flagged,
                rejected: d.rejected,
                combined_reputation: d.reputation.combined_reputation,
            })
            .collect(),
    }
}

/// `part / whole`, 0 when `whole` is.
fn rate(part: i64, whole: i64) -> f64 {
    if whole <= 0 {
        0.0
    } else {
        (part as f64 / whole as f64).clamp(0.0, 1.0)
    }
}

/// The mean approval wait of some counts, if any was decided.
fn mean_wait(counts: &HourCounts) -> Option<f64> {
    (counts.approvals_decided > 0)
        .then(|| counts.approval_wait_ms as f64 / counts.approvals_decided as f64)
}

fn whole(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// The organisation over a window.
pub(crate) fn overview(overview: Overview) -> OverviewBody {
    let t = overview.totals;
    OverviewBody {
        window: overview.window.as_str().to_owned(),
        from: iso_ms(overview.from),
        to: iso_ms(overview.to),
        bucket: if overview.hourly { "hour" } else { "day" }.to_owned(),
        series: overview
            .series
            .into_iter()
            .map(|b| {
                let c = b.counts;
                OverviewBucket {
                    start: iso_ms(b.start),
                    records: whole(c.records),
                    denied: whole(c.denied),
                    errors: whole(c.errors),
                    ratings: whole(c.ratings),
                    approvals_decided: whole(c.approvals_decided),
                    approval_wait_ms_mean: mean_wait(&c),
                    approval_wait_ms_max: (c.approvals_decided > 0)
                        .then(|| whole(c.approval_wait_max_ms)),
                }
            })
            .collect(),
        totals: OverviewTotals {
            records: whole(t.records),
            denied: whole(t.denied),
            errors: whole(t.errors),
            ratings: whole(t.ratings),
            approvals_decided: whole(t.approvals_decided),
            denial_rate: rate(t.denied, t.records),
            error_rate: rate(t.errors, t.successes.saturating_add(t.errors)),
            approval_wait_ms_mean: mean_wait(&t),
        },
        budgets: overview
            .budgets
            .into_iter()
            .map(|b| BudgetUse {
                jth: b.jth,
                agent_id: format!("agent:{}", b.agent_id),
                provenance_ref: b.provenance_ref,
                budget: b.limit.as_str().to_owned(),
                used: b.used,
                limit: b.max,
                percent: b.percent,
            })
            .collect(),
    }
}

/// A page of tokens, each with its status at `now`.
pub(crate) fn token_page(page: Page<ListedToken>, now: Now) -> TokenPage {
    TokenPage {
        tokens: page
            .items
            .into_iter()
            .map(|t| TokenListItem {
                status: status(&t.token, now),
                jth: jth(&t.token.jti),
                agent_id: t.token.agent_id,
                parent: t.token.parent.as_deref().map(jth),
                delegation_depth: t.token.depth,
                provenance_ref: t.token.provenance_ref,
                human_ref: t.human_ref,
                human_label: t.human_label,
                assurance_level: t.assurance_level,
                issued_at: iso_s(t.token.issued_at),
                expires_at: iso_s(t.token.expires_at),
                revoked_at: t.token.revoked_at.map(iso_s),
            })
            .collect(),
        next_cursor: page.next_cursor,
    }
}
