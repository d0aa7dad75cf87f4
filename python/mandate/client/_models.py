# Generated from the OpenAPI document a `mandate serve` serves at /v1/openapi.json
# by datamodel-code-generator (`cargo xtask python` writes it; its test step
# checks it is current). Do not edit.

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypeAlias, TypedDict


class AccessApproval(TypedDict):
    """
    The approval a gated act waits for.
    """

    approval_id: str
    expires_at: str
    status: str
    """
    `pending`.
    """
    url: str
    """
    Where the approval is read (`GET`, with the agent's token or an API
    key): the deployment's public URL.
    """


class AccessDecisionContext(TypedDict):
    """
    What Mandate says of a decision (the Decision's `context`, AuthZEN
    §5.5.1).
    """

    aar_id: NotRequired[str | None]
    """
    The record the evaluation made or used.
    """
    approval: NotRequired[AccessApproval | None]
    detail: NotRequired[str | None]
    """
    The reason in words.
    """
    reason: NotRequired[str | None]
    """
    Why it is not permitted: Mandate's code (`action_not_permitted`,
    `budget_max_actions`, `args_not_permitted`, `approval_required`,
    `token_revoked`, `subject_unsupported`, …).
    """


Action: TypeAlias = str
"""
An action: `a-z` first, then `a-z 0-9 _ . -`, at most 64.
"""


AgentId: TypeAlias = str
"""
A bare agent id: 1–128 of `A-Z a-z 0-9 . _ -`, starting with a letter or digit.
"""


class AgentWindowBody(TypedDict):
    """
    An agent's counts over the window asked for.
    """

    denial_rate: float
    """
    `denied / records` (0 without records).
    """
    denied: int
    """
    Records denied.
    """
    error_rate: float
    """
    `errors / (successes + errors)` (0 without outcomes).
    """
    errors: int
    """
    Records completed with a result other than `success`.
    """
    records: int
    """
    Records made.
    """
    successes: int


class ApprovalData(TypedDict):
    """
    `approval.requested` and `approval.decided`.
    """

    aar_id: NotRequired[str | None]
    """
    The record waiting; left out while its `aar_id` completes it (a
    record made with a bare `vat_jti`, not yet completed).
    """
    action: str
    agent_id: str
    approval_id: str
    decided_at: NotRequired[str | None]
    decided_by: NotRequired[str | None]
    """
    The API key that decided (none for an expiry).
    """
    delegation_depth: int
    expires_at: str
    note: NotRequired[str | None]
    provenance_ref: str
    requested_at: str
    resource: str
    spend_usd: float
    status: str
    """
    `pending`, `approved`, `denied` or `expired`.
    """


ApprovalId: TypeAlias = str
"""
An approval id, `apr_<ulid>`.
"""


ApprovalStatus: TypeAlias = Literal['pending', 'approved', 'denied', 'expired']
"""
Where an approval stands.
"""


class AuthorizationServerMetadata(TypedDict):
    """
    Authorization server metadata (RFC 8414 §2), every URL under the
    deployment's `issuer` (= `public_url`).
    """

    authorization_endpoint: str
    authorization_response_iss_parameter_supported: bool
    """
    Every authorization response carries `iss` (RFC 9207).
    """
    client_id_metadata_document_supported: bool
    """
    A `client_id` may be the https URL of a client ID metadata document.
    """
    code_challenge_methods_supported: list[str]
    """
    `["S256"]` (PKCE, RFC 7636; `plain` is never accepted).
    """
    dpop_signing_alg_values_supported: list[str]
    """
    `["EdDSA", "Ed25519"]` (RFC 9449 §5.1; RFC 9864 names `Ed25519`).
    """
    grant_types_supported: list[str]
    issuer: str
    """
    The issuer: `public_url` exactly (RFC 8414 §3.3).
    """
    jwks_uri: str
    """
    The keys access tokens (VATs) are signed with.
    """
    response_modes_supported: list[str]
    """
    `["query"]`.
    """
    response_types_supported: list[str]
    """
    `["code"]`.
    """
    revocation_endpoint: str
    """
    RFC 7009 token revocation.
    """
    revocation_endpoint_auth_methods_supported: list[str]
    """
    `["none"]`.
    """
    token_endpoint: str
    token_endpoint_auth_methods_supported: list[str]
    """
    `["none"]`: public clients only.
    """


class AuthzenAction(TypedDict):
    """
    AuthZEN Action (§5.3): the act, by Mandate's action name.
    """

    name: str
    """
    Mandate's action (`read`, `send_email`, …).
    """
    properties: NotRequired[dict[str, Any]]
    """
    Ignored.
    """


class AuthzenContext(TypedDict):
    """
    AuthZEN Context (§5.4): what Mandate reads of it. Other members are
    ignored.
    """

    args: NotRequired[dict[str, Any] | None]
    """
    The arguments of the act, judged exactly as `authorize` judges its
    `args` (a JSON object, at most 16 KiB as RFC 8785 canonical JSON; no
    member twice; numbers within ±(2^53 − 1)).
    """
    dpop: NotRequired[str | None]
    """
    For a bound (DPoP) token: the holder's proof (RFC 9449), made for
    this evaluation request (`htm` `POST`, `htu` the URL of the
    endpoint asked, checked as every proof's `htu` is: `public_url` +
    path when set, as the metadata names it; `ath` the token's hash);
    used once per request.
    """
    spend_usd: NotRequired[float | None]
    """
    US dollars the act spends, reserved and charged as `authorize`'s
    `spend_usd`.
    """


class AuthzenResource(TypedDict):
    """
    AuthZEN Resource (§5.2): Mandate's resource `type:id`.
    """

    id: str
    """
    The rest of Mandate's resource, after the first `:`
    (`contact/42`).
    """
    properties: NotRequired[dict[str, Any]]
    """
    Ignored.
    """
    type: str
    """
    The resource's system: the part of Mandate's resource before the
    first `:` (`crm` in `crm:contact/42`); it holds no `:`.
    """


class AuthzenSubject(TypedDict):
    """
    AuthZEN Subject (§5.1): for Mandate, the agent's token.
    """

    id: str
    """
    The agent's compact token (`Authorization`'s credential as the agent
    sent it to the tool), never a bare jti: a jti proves nothing.
    """
    properties: NotRequired[dict[str, Any]]
    """
    Ignored.
    """
    type: str
    """
    `mandate_vat`: `id` is the agent's compact token. Anything else is
    refused (`decision: false`, reason `subject_unsupported`).
    """


class BudgetThresholdData(TypedDict):
    """
    `budget.threshold`: a token's budget, shared by its chain, reached a
    threshold.
    """

    aar_id: NotRequired[str | None]
    """
    The record whose charge reached the threshold; left out while its
    `aar_id` completes it (a record made with a bare `vat_jti`, not yet
    completed when charged).
    """
    agent_id: str
    budget: str
    """
    `max_spend_usd` or `max_actions`.
    """
    jth: str
    """
    The jti hash of the token whose budget it is.
    """
    limit: float
    provenance_ref: str
    threshold_percent: int
    """
    80 or 100.
    """
    used: float
    """
    What the token and its descendants have used (spend in US dollars
    including reservations, or actions).
    """


class BudgetUse(TypedDict):
    """
    A budget among the most used.
    """

    agent_id: str
    """
    `agent:<agent_id>`.
    """
    budget: str
    """
    `max_spend_usd` or `max_actions`.
    """
    jth: str
    """
    The token's jti hash (as events name it; a list never shows a jti
    of a chain's root).
    """
    limit: float
    percent: float
    """
    `used / limit` in percent.
    """
    provenance_ref: str
    used: float


class BulkFeedbackResponse(TypedDict):
    """
    The records a bulk rating rated.
    """

    aar_ids: list[str]
    rated: int


class ChainLink(TypedDict):
    """
    One token of a chain.
    """

    agent_id: str
    """
    `agent:<agent_id>`.
    """
    delegation_depth: int


class ClientBody(TypedDict):
    """
    A pre-registered client as the API shows it.
    """

    client_id: str
    """
    `mcl_<ulid>`: what the client sends as `client_id`.
    """
    created_at: str
    """
    RFC 3339.
    """
    created_by: str
    """
    The API key that registered it.
    """
    grant_types: list[str]
    name: str
    redirect_uris: list[str]
    token_endpoint_auth_method: str
    """
    Always `none`: a public client, without a secret.
    """


class ClientList(TypedDict):
    """
    The organisation's pre-registered clients, newest first.
    """

    clients: list[ClientBody]


ConsentDecision: TypeAlias = Literal['approve', 'deny']
"""
Approve or deny.
"""


class ConsentDecisionResponse(TypedDict):
    """
    Where the consent page sends the browser: the client's redirect URI
    with `code` (or `error`), `state` and `iss`.
    """

    redirect: str


class ConsistencyBody(TypedDict):
    """
    A consistency proof between two sizes of the record log (RFC 6962).
    """

    new: int
    old: int
    proof: list[str]
    """
    The proof's hashes, standard base64, in RFC 6962 order.
    """


class CosignedLinkBody(TypedDict):
    """
    An older, cosigned checkpoint and the RFC 6962 consistency proof from it
    to a newer one.
    """

    checkpoint: str
    """
    The checkpoint, signed by the log and cosigned by the witnesses.
    """
    consistency: list[str]
    """
    Consistency proof hashes from its size to the newer checkpoint's,
    standard base64.
    """


class CreateClientRequest(TypedDict):
    """
    A public client registered in advance by an owner (MCP
    "Client Registration": pre-registration).
    """

    grant_types: NotRequired[list[str] | None]
    """
    `authorization_code`, and `refresh_token` when the client may keep
    access by refreshing; by default both.
    """
    name: str
    """
    What the consent page shows: 1–100 characters, no control
    characters.
    """
    redirect_uris: list[str]
    """
    Where the authorization server may send the browser back: 1–10
    absolute URIs without fragment, `https`, or `http` on a loopback
    host (`127.0.0.1`, `[::1]`, `localhost`; RFC 8252 §7.3, §8.3).
    """


class CreateKeyRequest(TypedDict):
    """
    `POST /v1/keys`.
    """

    email: NotRequired[str | None]
    """
    Whose key it is; required for a developer, who issues tokens only for
    this address.
    """
    role: str
    """
    `owner`, `developer`, `reviewer`, `auditor` or `gateway`.
    """


class CreateResourceRequest(TypedDict):
    """
    A resource whose MCP gates relay clients' proofs (docs/oauth.md, "The
    gate relays the client's proof").
    """

    relay_jkts: list[str]
    """
    RFC 7638 thumbprints (base64url SHA-256, 43 characters) of the
    Ed25519 keys its gates sign `Mandate-Relay` proofs with: 1–10.
    """
    resource: str
    """
    The resource's URL, as tokens name it in `aud` (its RFC 8707
    resource indicator): absolute `https`, or `http` on a loopback
    host, without fragment.
    """


Decision: TypeAlias = Literal['approve', 'deny']
"""
What a person decides on an approval.
"""


DeliveryOutcome: TypeAlias = Literal['delivered', 'failed']
"""
How an attempt at a delivery ended.
"""


Email: TypeAlias = str
"""
An e-mail address: one `@` between non-empty parts, no spaces or
control characters, at most 254 characters.
"""


class EvaluationItem(TypedDict):
    """
    One evaluation of `POST /v1/access/evaluations`: each member it leaves
    out is the request's top-level one (AuthZEN §7.1.1, "Default values");
    one it holds replaces that default whole.
    """

    action: NotRequired[AuthzenAction | None]
    context: NotRequired[AuthzenContext | None]
    resource: NotRequired[AuthzenResource | None]
    subject: NotRequired[AuthzenSubject | None]


class EvaluationRequest(TypedDict):
    """
    `POST /v1/access/evaluation` (AuthZEN §6.1).
    """

    action: AuthzenAction
    context: NotRequired[AuthzenContext | None]
    resource: AuthzenResource
    subject: AuthzenSubject


EvaluationsSemantic: TypeAlias = Literal['execute_all', 'deny_on_first_deny', 'permit_on_first_permit']
"""
How the evaluations of a request run (AuthZEN §7.1.2.1).
"""


EventType: TypeAlias = Literal['record.denied', 'record.failed', 'record.rated', 'token.revoked', 'approval.requested', 'approval.decided', 'budget.threshold']
"""
An event type.
"""


class FeedbackResponse(TypedDict):
    """
    A rating, as set.
    """

    aar_id: str
    feedback_at: str
    rating: str


Framework: TypeAlias = str
"""
A compliance framework: `a-z 0-9 _ . -`, starting with a letter or digit.
"""


class GrantBody(TypedDict):
    """
    A consent's grant: what a client holds for a human, and whether it
    still does.
    """

    agent_id: str
    client_host: NotRequired[str | None]
    """
    The host of a client ID metadata document URL, if the client is one.
    """
    client_id: str
    client_name: str
    """
    The client's name as the consent page showed it.
    """
    created_at: str
    """
    RFC 3339.
    """
    expires_at: str
    """
    RFC 3339: the grant root's `exp`.
    """
    grant_id: str
    """
    `ogr_<ulid>`.
    """
    human_ref: str
    last_used_at: str
    """
    RFC 3339: the redemption or the last refresh.
    """
    resource: NotRequired[str | None]
    """
    The resource server the grant's tokens are for (`aud`).
    """
    revoke_reason: NotRequired[str | None]
    """
    `refresh_token_reused`, `code_replayed`, `client_revoked`,
    `revoked` (by a person) or `root_revoked`.
    """
    revoked_at: NotRequired[str | None]
    """
    RFC 3339, when revoked.
    """
    root_jti: str
    """
    The grant root: revoking it ends the grant.
    """
    scope: str
    """
    What was granted, as a `scope` parameter.
    """


class GrantList(TypedDict):
    """
    Grants, newest first.
    """

    grants: list[GrantBody]
    next_cursor: NotRequired[str | None]
    """
    Pass back as `cursor` for the next page; absent on the last page.
    """


GraphEdge = TypedDict(
    'GraphEdge',
    {
        'from': str,
        'kind': str,
        'to': str,
    },
)


class GraphNode(TypedDict):
    """
    A node of a workflow graph: the human, a token, or a record.
    """

    action: NotRequired[str | None]
    agent_id: NotRequired[str | None]
    assurance_level: NotRequired[str | None]
    created_at: NotRequired[str | None]
    delegation_depth: NotRequired[int | None]
    deny_reason: NotRequired[str | None]
    expires_at: NotRequired[str | None]
    human_ref: NotRequired[str | None]
    id: str
    kind: str
    """
    `human`, `token` or `record`.
    """
    parent: NotRequired[str | None]
    rating: NotRequired[str | None]
    resource: NotRequired[str | None]
    result: NotRequired[str | None]
    revoked_at: NotRequired[str | None]
    status: NotRequired[str | None]
    """
    Token: `active`/`revoked`/`expired`; record: `pending`/`completed`/`denied`.
    """


class Health(TypedDict):
    """
    `GET /healthz` and `GET /readyz`.
    """

    status: str


class HistoryDayBody(TypedDict):
    """
    One UTC day of an agent's history.
    """

    approved: int
    combined_reputation: float
    """
    The agent's combined reputation as the day ended.
    """
    day: str
    """
    `YYYY-MM-DD` (UTC).
    """
    denied: int
    errors: int
    flagged: int
    records: int
    """
    Records made that day.
    """
    rejected: int
    successes: int
    """
    Outcomes, denials and ratings that happened that day.
    """


class HolderKey(TypedDict):
    """
    A holder's public Ed25519 key as a JWK (RFC 8037): the token is bound
    to it (RFC 9449), and every call made with the token carries a proof
    signed by it. `d` (the private key) is refused.
    """

    crv: str
    """
    `Ed25519`.
    """
    kty: str
    """
    `OKP`.
    """
    x: str
    """
    The 32-byte public key, base64url.
    """


class InboxCounts(TypedDict):
    """
    What waits for a reviewer.
    """

    approvals_pending: int
    records_unrated: int
    """
    Completed records without a rating.
    """


class IssuedKeyBody(TypedDict):
    """
    A key just made: the only answer that holds the key itself.
    """

    api_key: str
    """
    `mk_…`: shown once; store it now.
    """
    created_at: str
    email: NotRequired[str | None]
    key_id: str
    role: str


class IssuedToken(TypedDict):
    """
    A newly issued token.
    """

    aar_id: NotRequired[str | None]
    """
    The parent's `delegate` record (delegated tokens only).
    """
    claims: dict[str, Any]
    """
    The token's claims, as signed.
    """
    compact_jwt: str
    delegation_depth: int
    expires_at: str
    jti: str
    provenance_ref: str
    token_type: str
    """
    `Bearer`, or `DPoP` for a token bound to a holder key: the
    `Authorization` scheme to send it with (RFC 9449 §5).
    """


Jth: TypeAlias = str
"""
A jti hash (`jth`): base64url SHA-256 of a jti, 43 characters. Lists,
records, graphs and events name tokens by it; it names a token and
acts as none.
"""


Jti: TypeAlias = str
"""
A token id, `vat_root_<ulid>` or `vat_del_<ulid>`.
"""


class KeyBody(TypedDict):
    """
    An API key as listed (never the key itself).
    """

    admin: bool
    """
    The deployment's admin key.
    """
    created_at: str
    email: NotRequired[str | None]
    key_id: str
    revoked_at: NotRequired[str | None]
    role: str


class KeyList(TypedDict):
    """
    The keys of the caller's organisation, newest first.
    """

    keys: list[KeyBody]


class LogEventBody(TypedDict):
    """
    One event of a record in the record log.
    """

    index: int
    """
    The leaf's index in the log.
    """
    kind: str
    """
    `record.created`, `record.completed` or `record.rated`.
    """
    leaf: str
    """
    The leaf's bytes (RFC 8785 canonical JSON), standard base64.
    """
    proof: str
    """
    A C2SP `tlog-proof@v1`: the index, the inclusion proof and the
    signed checkpoint.
    """


class MandateApproval(TypedDict):
    """
    The approval an `authorization_pending` answer names.
    """

    approval_id: ApprovalId
    expires_at: str
    url: str
    """
    Where a person reads and decides it (`GET` with a key).
    """


class OAuthErrorBody(TypedDict):
    """
    An OAuth error body (RFC 6749 §5.2).
    """

    aar_id: NotRequired[str | None]
    """
    The record a refused token exchange wrote (its denied `delegate`
    record), when there is one.
    """
    code: str
    """
    Mandate's stable code, more precise than `error`.
    """
    error: str
    """
    OAuth's code: `invalid_request`, `unsupported_grant_type`, …
    """
    error_description: str
    """
    What went wrong, for the developer (the problem's detail).
    """
    mandate_approval: NotRequired[MandateApproval | None]


class OpenRequest(TypedDict):
    """
    `POST /v1/oauth/requests/open`.
    """

    request: str
    """
    The sealed authorization request, from the consent page's URL.
    """


class OpenedRequest(TypedDict):
    """
    A pending authorization request, as the consent page shows it.
    """

    actions: list[str]
    """
    The actions `scope` asks for.
    """
    agent_id: str
    """
    The agent the grant is for unless the human names another.
    """
    assurance: str
    """
    How they signed in: `L1` (an API key) or `L2` (an identity
    provider); the grant's tokens carry it as `svc_assurance`.
    """
    client_host: NotRequired[str | None]
    """
    For a `document` client, the host of its `client_id` URL: who the
    client is, whatever its name says (show it prominently).
    """
    client_id: str
    client_kind: str
    """
    `registered`: a client the organisation registered in advance;
    `document`: a client named by the URL of its metadata document.
    """
    client_name: str
    """
    The client's registered name, or for a metadata document's client
    the `client_name` it says (its own claim: show it as text, beside
    `client_host`).
    """
    expires_at: str
    """
    RFC 3339: when the request can no longer be decided.
    """
    redirect_host: str
    """
    The host of `redirect_uri`, which the page must show.
    """
    redirect_loopback: bool
    """
    Whether `redirect_uri` is on this machine (loopback): the page
    warns about it.
    """
    redirect_uri: str
    """
    Where the browser goes back to.
    """
    resource: str
    """
    The resource server the token will be for (its `aud`).
    """
    resources: list[str]
    """
    The resource patterns `scope` asks for (none: the human names them).
    """
    scope: NotRequired[str | None]
    """
    The `scope` parameter as sent, if any.
    """
    signed_in_as: str
    """
    Who consents, as the organisation knows them: the API key's e-mail,
    or the name the identity provider gave (else its subject).
    """


class OrgRef(TypedDict):
    """
    An organisation as a key names it.
    """

    name: str
    org_id: str


Outcome: TypeAlias = Literal['success', 'error', 'timeout', 'cancelled']
"""
How an action ended.
"""


class OverviewBucket(TypedDict):
    """
    One bucket (hour or day) of the overview.
    """

    approval_wait_ms_max: NotRequired[int | None]
    approval_wait_ms_mean: NotRequired[float | None]
    """
    Their mean and longest wait, in milliseconds; absent without any.
    """
    approvals_decided: int
    """
    Approvals decided by a person (expiries are not decisions).
    """
    denied: int
    errors: int
    ratings: int
    """
    Ratings given.
    """
    records: int
    start: str
    """
    The bucket's start (RFC 3339, UTC).
    """


class OverviewTotals(TypedDict):
    """
    The overview's window, summed.
    """

    approval_wait_ms_mean: NotRequired[float | None]
    approvals_decided: int
    denial_rate: float
    """
    `denied / records` (0 without records).
    """
    denied: int
    error_rate: float
    """
    `errors / (successes + errors)` (0 without outcomes).
    """
    errors: int
    ratings: int
    records: int


class PdpMetadata(TypedDict):
    """
    Policy Decision Point metadata (AuthZEN §9), at
    `/.well-known/authzen-configuration`.
    """

    access_evaluation_endpoint: str
    access_evaluations_endpoint: str
    policy_decision_point: str
    """
    The deployment's public URL.
    """


class PolicyBody(TypedDict):
    """
    Policy assertions, as sent.
    """

    frameworks: list[Framework]
    """
    Compliance frameworks (`hipaa`, `gdpr`, `soc2`, …).
    """


ProvenanceRef: TypeAlias = str
"""
A workflow id, `prov_<ulid>`.
"""


class QuotasBody(TypedDict):
    """
    An organisation's quotas; `null` is no limit.
    """

    records_per_day: NotRequired[int | None]
    """
    Records (allowed, denied and pending alike) per UTC day.
    """
    tokens_outstanding: NotRequired[int | None]
    """
    Tokens neither revoked nor expired.
    """


Rating: TypeAlias = Literal['approved', 'flagged', 'rejected']
"""
A human's rating.
"""


class RecordActionResponse(TypedDict):
    """
    A recorded action.
    """

    aar_id: str
    delegation_depth: int
    provenance_ref: str
    recorded: bool
    trust_in_force: NotRequired[float | None]
    """
    The trust in force the act was judged with: the minimum over the
    agents of the token's chain (an agent with no history of its own
    counting as its delegator's), beside the spec's `trust_score`, the
    token's base trust. Absent when judging stopped before trust.
    """
    trust_score: float


class RecordData(TypedDict):
    """
    A record, as `record.*` events carry it.
    """

    aar_id: str
    action: str
    agent_id: str
    created_at: str
    delegation_depth: int
    deny_reason: NotRequired[str | None]
    note: NotRequired[str | None]
    provenance_ref: str
    rated_by: NotRequired[str | None]
    """
    The API key that rated it (`record.rated`).
    """
    rating: NotRequired[str | None]
    resource: str
    result: NotRequired[str | None]
    spend_usd: float
    status: str
    """
    `completed` or `denied`.
    """


class RecordProofBody(TypedDict):
    """
    A record's events in the record log, each proven against one
    checkpoint.
    """

    aar_id: str
    checkpoint: str
    """
    The signed checkpoint (C2SP `tlog-checkpoint`) every proof leads
    to, with the witnesses' cosignatures (C2SP `tlog-cosignature`)
    gathered for it so far.
    """
    cosigned: NotRequired[CosignedLinkBody | None]
    events: list[LogEventBody]
    origin: str
    """
    The log's name, the first line of its checkpoints.
    """


class RecordedAction(TypedDict):
    """
    A record of a batch, recorded: what `record/action` answers with 201.
    """

    aar_id: str
    delegation_depth: int
    index: int
    """
    The record's position in the request, from 0.
    """
    provenance_ref: str
    recorded: Literal[True]
    trust_in_force: NotRequired[float | None]
    """
    The trust in force the act was judged with: the minimum over the
    agents of the token's chain (an agent with no history of its own
    counting as its delegator's), beside the spec's `trust_score`, the
    token's base trust. Absent when judging stopped before trust.
    """
    trust_score: float


class RefusedAction(TypedDict):
    """
    A record of a batch, refused: the status, code and detail of the problem
    `record/action` answers for it alone, with the denied record's `aar_id`
    when one was written (out of scope, over budget, `approval_required`, an
    inactive token).
    """

    aar_id: NotRequired[str | None]
    """
    The denied record written for this refusal, if any.
    """
    code: str
    """
    Stable snake_case code, as in a problem body.
    """
    detail: str
    index: int
    """
    The record's position in the request, from 0.
    """
    recorded: Literal[False]
    status: int
    """
    The HTTP status the record alone would have been answered with.
    """


class ReputationCountsBody(TypedDict):
    """
    The counts reputation is computed from.
    """

    approved: int
    denied_requests: int
    """
    Records denied at `authorize` (the pre-flight check) or by an
    approval's decision (denied or expired): they count towards
    `total_actions` only.
    """
    failures: int
    flagged: int
    pending: int
    rejected: int
    successes: int


Resource: TypeAlias = str
"""
A resource, `<namespace>:<name>`: the name is printable ASCII without
`*`, in segments separated by `/` or `:` (it may begin with `/`),
none empty, `.` or `..`, and no `%2e`, `%2f` or `%3a`.
"""


class ResourceBody(TypedDict):
    """
    A registered resource as the API shows it.
    """

    created_at: str
    """
    RFC 3339.
    """
    created_by: str
    """
    The API key that registered it.
    """
    relay_jkts: list[str]
    resource: str
    resource_id: str
    """
    `ors_<ulid>`.
    """


class ResourceList(TypedDict):
    """
    The organisation's registered resources, newest first.
    """

    resources: list[ResourceBody]


ResourcePattern: TypeAlias = str
"""
A resource; `<namespace>:*` for every resource of the namespace; or
a prefix, `<namespace>:<prefix>/*` or `<namespace>:<prefix>:*`, for
every resource whose name extends it (`crm:contact/*`).
"""


ResultFilter: TypeAlias = Literal['success', 'error', 'timeout', 'cancelled', 'denied', 'pending', 'awaiting_approval']
"""
The `result` filter of a record query: a result, `denied`,
`pending` or `awaiting_approval`.
"""


class RevocationRequest(TypedDict):
    """
    A revocation request (RFC 7009 §2.1), as a form.
    """

    client_id: NotRequired[str | None]
    """
    When given, the token must have been issued to this client, else
    nothing is revoked (`unauthorized_client`).
    """
    token: str
    """
    The refresh token (`mrt_…`) or access token to revoke.
    """
    token_type_hint: NotRequired[str | None]
    """
    `refresh_token` or `access_token`; read by nobody (the tokens'
    forms tell them apart), accepted as RFC 7009 §2.1 allows.
    """


class RevokeResponse(TypedDict):
    """
    The tokens a revocation ended.
    """

    revoked: list[Jth]
    """
    The jti hashes of the revoked token and its descendants: every
    one, or the first 1000 when `truncated` (the rest:
    `GET /v1/vat/tokens/{jth}`).
    """
    revoked_at: str
    revoked_count: int
    """
    How many tokens the revocation covers.
    """
    truncated: bool


Secret: TypeAlias = str
"""
A signing secret as Standard Webhooks writes it: `whsec_` and the
secret's 32 bytes in standard base64.
"""


Sha256Ref: TypeAlias = str
"""
`sha256:` and 64 lowercase hex digits.
"""


class SignInProviderInfo(TypedDict):
    """
    An identity provider people may sign in with on the consent page.
    """

    host: str
    """
    The issuer's host, to show on the sign-in button.
    """
    issuer: str
    """
    Its issuer identifier.
    """
    name: str
    """
    Its name in `/v1/oauth/oidc/{name}/start`.
    """


class SignInProviders(TypedDict):
    """
    The identity providers people may sign in with on the consent page.
    """

    providers: list[SignInProviderInfo]


class SparkDayBody(TypedDict):
    """
    One UTC day of an agent's sparkline.
    """

    day: str
    """
    `YYYY-MM-DD` (UTC).
    """
    denied: int
    errors: int
    successes: int


class SummaryBody(TypedDict):
    """
    Every action of a workflow, counted (spec 2.4).
    """

    actions_by_type: dict[str, int]
    provenance_ref: str
    results_by_type: dict[str, int]
    total_records: int
    unique_agents: int


Text: TypeAlias = str
"""
Free text without control characters other than tab and newline.
"""


class TokenListItem(TypedDict):
    """
    A token in the list.
    """

    agent_id: str
    assurance_level: str
    delegation_depth: int
    expires_at: str
    human_label: NotRequired[str | None]
    """
    What the organisation knows the human by: the e-mail a token was
    issued for (L1), the ID token's name or e-mail (L2).
    """
    human_ref: str
    issued_at: str
    jth: Jth
    """
    The token's jti hash: a list never shows a jti.
    """
    parent: NotRequired[Jth | None]
    provenance_ref: str
    revoked_at: NotRequired[str | None]
    status: str
    """
    `active`, `revoked` or `expired`.
    """


class TokenPage(TypedDict):
    """
    A page of tokens: active ones first, then the others, newest issued
    first.
    """

    next_cursor: NotRequired[str | None]
    tokens: list[TokenListItem]


class TokenRequest(TypedDict):
    """
    A token request (RFC 6749 §4.1.3, §6; RFC 8693 §2.1), as a form.
    Parameters not listed are ignored (RFC 6749 §3.1).
    """

    actor_token: NotRequired[str | None]
    """
    Token exchange: refused when sent (the chain names every actor).
    """
    actor_token_type: NotRequired[str | None]
    """
    Token exchange: refused when sent.
    """
    audience: NotRequired[str | None]
    """
    Token exchange: accepted only when equal to the child's `aud`.
    """
    client_id: NotRequired[str | None]
    """
    The client the code or refresh token was issued to (required).
    """
    code: NotRequired[str | None]
    """
    The authorization code (`authorization_code`).
    """
    code_verifier: NotRequired[str | None]
    """
    The PKCE verifier (RFC 7636 §4.5).
    """
    grant_type: str
    """
    The grant asked for: `authorization_code`, `refresh_token` or
    `urn:ietf:params:oauth:grant-type:token-exchange`.
    """
    holder_key: NotRequired[str | None]
    """
    Token exchange: a public Ed25519 JWK (JSON) the child is bound to.
    """
    mandate_grant: NotRequired[str | None]
    """
    Token exchange: a JSON object with the rest of `POST
    /v1/vat/delegate`'s body (`agent_id`, `constraints`, `policy`,
    `ttl_seconds`).
    """
    redirect_uri: NotRequired[str | None]
    """
    The `redirect_uri` of the authorization request, exactly.
    """
    refresh_token: NotRequired[str | None]
    """
    The refresh token (`refresh_token`).
    """
    requested_token_type: NotRequired[str | None]
    """
    Token exchange: absent or `urn:ietf:params:oauth:token-type:access_token`.
    """
    resource: NotRequired[str | None]
    """
    The resource the token is for: when sent, the authorization
    request's exactly (RFC 8707 §2.2).
    """
    scope: NotRequired[str | None]
    """
    `refresh_token`: the scope of the new access token, no wider than
    the grant's; the actions or resource patterns it leaves out are the
    grant's (RFC 6749 §6). Token exchange: the child's actions and
    resource patterns, each the subject's when left out.
    """
    subject_token: NotRequired[str | None]
    """
    Token exchange: the parent VAT itself, compact (never a jti).
    """
    subject_token_type: NotRequired[str | None]
    """
    Token exchange: `urn:ietf:params:oauth:token-type:access_token` or
    `…:jwt`.
    """


class TokenResponse(TypedDict):
    """
    A successful token response (RFC 6749 §5.1).
    """

    access_token: str
    """
    The access token: a VAT, compact.
    """
    expires_in: int
    """
    Seconds until the access token expires.
    """
    issued_token_type: NotRequired[str | None]
    """
    Token exchange: `urn:ietf:params:oauth:token-type:access_token`
    (RFC 8693 §2.2.1).
    """
    refresh_token: NotRequired[str | None]
    """
    A refresh token (`mrt_…`), when the client is registered for
    `refresh_token`; each refresh answers a new one and uses up the one
    presented. Never for a token exchange.
    """
    scope: NotRequired[str | None]
    """
    The granted scope: actions, then resource patterns (absent when a
    resource pattern cannot be written as a scope token).
    """
    token_type: str
    """
    `Bearer`, or `DPoP` for a token bound to a key (RFC 9449 §5).
    """


class TokenRevokedData(TypedDict):
    """
    `token.revoked`: the token a revocation named, and how many tokens it
    ended (the token and its descendants not revoked before).
    """

    agent_id: str
    delegation_depth: int
    jth: str
    """
    The jti hash of the token revoked.
    """
    provenance_ref: str
    reason: NotRequired[str | None]
    revoked_at: str
    tokens_revoked: int
    """
    Tokens the revocation ended: the token and descendants.
    """


class TokenSummary(TypedDict):
    """
    A descendant in a token status.
    """

    agent_id: str
    delegation_depth: int
    jth: Jth
    parent: NotRequired[Jth | None]
    status: str
    """
    `active`, `revoked` or `expired`.
    """


class TrustNode(TypedDict):
    """
    An agent of a page of the graph.
    """

    agent_id: str
    trust: float


class UpdateOrgRequest(TypedDict):
    """
    `PATCH /v1/orgs/{org_id}`.
    """

    quotas: QuotasBody
    """
    The quotas from now on (both replaced).
    """


class UpdateWebhookRequest(TypedDict):
    """
    `PATCH /v1/webhooks/{webhook_id}`: what to change; members left out stay
    as they are.
    """

    description: NotRequired[str | None]
    """
    A new note; an empty one removes it.
    """
    enabled: NotRequired[bool | None]
    """
    `false` stops deliveries; `true` resumes a disabled webhook from the
    event it stopped at, so nothing is lost.
    """
    events: NotRequired[list[EventType] | None]
    """
    A new list of event types (1–64, each once).
    """
    url: NotRequired[str | None]
    """
    A new URL, checked as at creation; the next event is tried at once.
    """


class ViolationBody(TypedDict):
    """
    One way a delegation would widen its parent, as sent to clients.
    """

    code: str
    """
    Stable code (`resource_not_covered`, `action_not_held`, …).
    """
    field: str
    """
    The widening request field (`resources`, `constraints.max_spend_usd`, …).
    """
    message: str


VouchId: TypeAlias = str
"""
A vouch id, `vch_<ulid>`.
"""


class VouchRequest(TypedDict):
    """
    `POST /v1/trust/vouches`.
    """

    agent_id: str
    """
    The agent vouched for, bare or as `agent:<id>`: an agent of the
    caller's organisation.
    """
    expires_at: NotRequired[str | None]
    """
    RFC 3339, in the future: from then on the vouch no longer counts.
    """
    reason: NotRequired[str | None]
    """
    Why, for people reading the graph (at most 512 characters).
    """
    weight: float
    """
    How strongly, in (0, 1]; kept to six decimals.
    """


class VoucherBody1(TypedDict):
    """
    A verified person of the organisation (`owner`, `reviewer`).
    """

    key_id: str
    """
    The API key's id, `key_<ulid>`.
    """
    kind: Literal['human']


class VoucherBody2(TypedDict):
    """
    An agent of the organisation, with its token.
    """

    agent_id: str
    kind: Literal['agent']


VoucherBody: TypeAlias = VoucherBody1 | VoucherBody2
"""
Who vouched: a person, by the API key they vouched with, or an agent.
"""


WebhookId: TypeAlias = str
"""
A webhook id, `wh_<ulid>`.
"""


class WorkflowBody(TypedDict):
    """
    A workflow in the list of recent workflows.
    """

    assurance_level: str
    created_at: str
    human_label: NotRequired[str | None]
    """
    What the organisation knows the human by, when it knows.
    """
    human_ref: str
    last_activity: str
    provenance_ref: str
    root_agent_id: str
    root_jth: Jth
    """
    The jti hash of the workflow's root token.
    """
    total_records: int


class WorkflowPage(TypedDict):
    """
    A page of workflows, most recently active first.
    """

    next_cursor: NotRequired[str | None]
    workflows: list[WorkflowBody]


class AccessDecision(TypedDict):
    """
    AuthZEN Decision (§5.5).
    """

    context: NotRequired[AccessDecisionContext | None]
    decision: bool


class AgentHistoryBody(TypedDict):
    """
    An agent's history, oldest day first.
    """

    agent_id: str
    """
    `agent:<agent_id>`.
    """
    days: list[HistoryDayBody]


class AgentListItem(TypedDict):
    """
    An agent in the list.
    """

    agent_id: str
    """
    `agent:<agent_id>`.
    """
    combined_reputation: float
    execution_score: float
    feedback_score: float
    last_activity: NotRequired[str | None]
    """
    When it last made or completed a record; absent if never.
    """
    recent: list[SparkDayBody]
    """
    The last 14 UTC days, oldest first, days without records included.
    """
    total_actions: int
    window: AgentWindowBody


class AgentPage(TypedDict):
    """
    A page of agents.
    """

    agents: list[AgentListItem]
    next_cursor: NotRequired[str | None]
    """
    Pass back as `cursor` (with the same `sort` and `order`) for the
    next page; absent on the last page.
    """


class ApprovalBody(TypedDict):
    """
    An approval, with what the agent asks to do and the chain it acts for.
    """

    aar_id: NotRequired[str | None]
    """
    The record waiting; left out while its `aar_id` completes it (a
    record made with a bare `vat_jti`, not yet completed).
    """
    action: str
    agent_id: str
    """
    `agent:<agent_id>` of the agent asking.
    """
    approval_id: ApprovalId
    args: NotRequired[dict[str, Any] | None]
    """
    The arguments as kept: `[records] redact_args` values replaced by
    `"[redacted]"`; absent when none were given, or not kept
    (`[records] keep_args = false`, once no approval waits on them).
    Attacker-controlled text: show it as text, never as markup.
    """
    args_hash: NotRequired[Sha256Ref | None]
    assurance_level: str
    chain: list[ChainLink]
    """
    The agents of the chain, root first, the asking agent last.
    """
    decided_at: NotRequired[str | None]
    decided_by: NotRequired[str | None]
    """
    The API key that decided (absent for an expiry).
    """
    delegation_depth: int
    expires_at: str
    human_ref: str
    note: NotRequired[str | None]
    provenance_ref: str
    record_status: str
    """
    The record's status now: `awaiting_approval`, then `pending` (and
    on) or `denied`.
    """
    requested_at: str
    resource: str
    spend_usd: float
    """
    What the action would spend (reserved while it waits).
    """
    status: ApprovalStatus


class ApprovalPage(TypedDict):
    """
    A page of approvals, newest first.
    """

    approvals: list[ApprovalBody]
    next_cursor: NotRequired[str | None]
    """
    Pass back as `cursor` for the next page; absent on the last page.
    """


class ApprovalRef(TypedDict):
    """
    The approval an authorized action waits for.
    """

    approval_id: ApprovalId
    expires_at: str
    status: ApprovalStatus


class ApprovalRequirementBody(TypedDict):
    """
    When an action needs a human's approval: any member matching is enough;
    at least one member.
    """

    actions: NotRequired[list[Action] | None]
    """
    These actions always need approval.
    """
    args: NotRequired[list[Any] | None]
    """
    Statements over the attempt's `args` (UCAN 1.0's policy language):
    when they all hold, or are undefined (a member missing, `args` left
    out), the attempt needs approval. A delegation keeps the parent's
    unchanged.
    """
    resources: NotRequired[list[ResourcePattern] | None]
    """
    Resources these patterns cover always need approval.
    """
    spend_over_usd: NotRequired[float | None]
    """
    Spending strictly more than this needs approval.
    """


class AuthorizeRequest(TypedDict):
    """
    `POST /v1/vat/authorize`.
    """

    action: Action
    args: NotRequired[dict[str, Any] | None]
    """
    The arguments of the act (a JSON object, at most 16 KiB as RFC 8785
    canonical JSON; no member named twice, every number within
    ±(2^53 − 1)), judged against the argument rules of the token's
    chain. The record keeps their `args_hash`.
    """
    resource: Resource
    spend_usd: NotRequired[float | None]
    """
    US dollars to reserve against the budget.
    """
    vat_jti: Jti


class AuthorizeResponse(TypedDict):
    """
    The answer to a pre-flight check.
    """

    aar_id: str
    approval: NotRequired[ApprovalRef | None]
    assurance_level: str
    authorized: bool
    human_ref: str
    provenance_ref: str
    reason: NotRequired[str | None]
    """
    Why not, when `authorized` is false and no approval is awaited.
    """
    reason_detail: NotRequired[str | None]
    """
    Which argument rule and statement refused the arguments
    (`args_required`, `args_not_permitted`), in words: told only to a
    caller who presented the token itself.
    """
    trust_in_force: NotRequired[float | None]
    """
    The trust in force the act was judged with: the minimum over the
    agents of the token's chain (an agent with no history of its own
    counting as its delegator's), beside the spec's `trust_score`, the
    token's base trust. Absent when judging stopped before trust.
    """
    trust_score: float


class BulkFeedbackRequest(TypedDict):
    """
    `POST /v1/vat/aar/feedback`.
    """

    note: NotRequired[Text | None]
    provenance_ref: ProvenanceRef
    rating: Rating
    result: Outcome
    """
    The result of the records to rate.
    """


class CompleteRequest(TypedDict):
    """
    `POST /v1/vat/aar/{aar_id}/complete`.
    """

    result: Outcome
    result_hash: NotRequired[Sha256Ref | None]
    spend_usd: NotRequired[float | None]
    """
    The actual spend; replaces the amount reserved at authorize.
    """


class ConstraintsBody(TypedDict):
    """
    Budget limits, as sent.
    """

    args: NotRequired[list[dict[str, Any]] | None]
    """
    Argument rules (DESIGN §15): 1 to 32 rules `{actions?, resources?,
    pol}`, at most 4 KiB as canonical JSON with
    `require_approval.args`. An attempt a rule applies to (its action
    listed, absent: every action; its resource covered by a pattern,
    absent: every resource) is permitted only when every statement of
    `pol` (UCAN 1.0's policy language, judged in three-valued logic)
    is true of its `args`. A delegation that leaves it out inherits its
    parent's rules; one that sets it keeps each of them unchanged and
    may add rules.
    """
    max_actions: NotRequired[int | None]
    """
    Most actions the token and its descendants may be authorized for.
    """
    max_spend_per_action_usd: NotRequired[float | None]
    """
    Most US dollars one act may spend, on its own (≤ 6 decimals):
    judged at `authorize`, `record/action` and a completion reporting
    more than was reserved. A delegation keeps its parent's and may
    only lower it.
    """
    max_spend_usd: NotRequired[float | None]
    """
    Most US dollars the token and its descendants may spend (≤ 6 decimals).
    """
    min_trust: NotRequired[float | None]
    """
    The least trust (`GET /v1/trust/agents/{agent_id}`) the agent must
    hold to act with the token: below it, `authorize` and
    `record/action` refuse with a denied record, `trust_too_low`. A
    delegation keeps its parent's and may only raise it.
    """
    require_approval: NotRequired[ApprovalRequirementBody | None]


class CreateOrgRequest(TypedDict):
    """
    `POST /v1/orgs`.
    """

    name: str
    """
    1–64 of `a-z 0-9 . _ -`, starting with a letter or digit; unique.
    """
    owner_email: NotRequired[str | None]
    """
    The e-mail of the first owner key, if it has one.
    """
    quotas: NotRequired[QuotasBody | None]


class CreateWebhookRequest(TypedDict):
    """
    `POST /v1/webhooks`.
    """

    description: NotRequired[str | None]
    """
    A note for people (at most 256 characters).
    """
    events: list[EventType]
    """
    The event types to send: 1–64, each once.
    """
    url: str
    """
    Where events are POSTed: an absolute `https` URL without user
    information, whose host has only public addresses (unless the
    deployment allows private ones).
    """


class DecisionRequest(TypedDict):
    """
    `POST /v1/vat/approvals/{approval_id}/decision`.
    """

    decision: Decision
    note: NotRequired[Text | None]


class DelegateRequest(TypedDict):
    """
    `POST /v1/vat/delegate`, made with the parent token itself
    (`Authorization: Bearer`, or `DPoP` with its proof when bound).
    """

    actions: list[Action]
    agent_id: AgentId
    constraints: NotRequired[ConstraintsBody | None]
    holder_key: NotRequired[HolderKey | None]
    policy: NotRequired[PolicyBody | None]
    resources: list[ResourcePattern]
    ttl_seconds: NotRequired[int | None]
    """
    Lifetime in seconds; by default the child ends with its parent.
    """
    vat_jti: NotRequired[Jti | None]


class DelegationAwaitingApproval(TypedDict):
    """
    A delegation waiting for a human's approval (answered 202): once it
    is approved, the same request repeated with the same `Idempotency-Key`
    returns the child token.
    """

    aar_id: str
    """
    The `delegate` record, `awaiting_approval`.
    """
    approval: ApprovalRef


class DeliveryBody(TypedDict):
    """
    One attempt at delivering an event.
    """

    at: str
    attempt: int
    """
    1 for the first attempt at this event, then 2, …
    """
    duration_ms: int
    error: NotRequired[str | None]
    """
    Why there was no answer, or why it does not count (a redirect).
    """
    http_status: NotRequired[int | None]
    """
    The status the endpoint answered, if it answered.
    """
    message_id: str
    """
    The event's message id, the `webhook-id` header: the same on every
    attempt at one event.
    """
    outcome: DeliveryOutcome
    type: EventType
    """
    The event type.
    """


class DeliveryPage(TypedDict):
    """
    A page of a webhook's delivery log, newest first.
    """

    deliveries: list[DeliveryBody]
    next_cursor: NotRequired[str | None]
    """
    Pass back as `cursor` for the next page; absent on the last page.
    """


class EvaluationsOptions(TypedDict):
    """
    `options` of an evaluations request (AuthZEN §7.1.2); other members are
    ignored.
    """

    evaluations_semantic: NotRequired[EvaluationsSemantic | None]


class EvaluationsRequest(TypedDict):
    """
    `POST /v1/access/evaluations` (AuthZEN §7.1). Without `evaluations`
    (or with none) it is one evaluation of the top-level members, answered
    as `POST /v1/access/evaluation` answers.
    """

    action: NotRequired[AuthzenAction | None]
    context: NotRequired[AuthzenContext | None]
    evaluations: NotRequired[list[EvaluationItem] | None]
    """
    At most 1000.
    """
    options: NotRequired[EvaluationsOptions | None]
    resource: NotRequired[AuthzenResource | None]
    subject: NotRequired[AuthzenSubject | None]


class EvaluationsResponse(TypedDict):
    """
    The decisions of an evaluations request, in the order asked; fewer when
    a short-circuiting semantic stopped early (AuthZEN §7.2).
    """

    evaluations: list[AccessDecision]


class FeedbackRequest(TypedDict):
    """
    `POST /v1/vat/aar/{aar_id}/feedback`.
    """

    note: NotRequired[Text | None]
    rating: Rating
    """
    `approved`, `flagged` or `rejected`.
    """


class GraphBody(TypedDict):
    """
    The execution graph of one workflow.
    """

    edges: list[GraphEdge]
    human_ref: str
    nodes: list[GraphNode]
    provenance_ref: str
    truncated: bool
    """
    Whether records (the oldest) or tokens (the deepest) were left out
    because there are more than `limit` of them.
    """


class IssueL1Request(TypedDict):
    """
    `POST /v1/vat/issue/l1`.
    """

    actions: list[Action]
    agent_id: AgentId
    constraints: NotRequired[ConstraintsBody | None]
    developer_email: Email
    holder_key: NotRequired[HolderKey | None]
    policy: NotRequired[PolicyBody | None]
    resources: list[ResourcePattern]
    ttl_seconds: NotRequired[int | None]
    """
    Lifetime in seconds (default 3600, at most 2592000).
    """


class IssueL2Request(TypedDict):
    """
    `POST /v1/vat/issue/l2`.
    """

    actions: list[Action]
    agent_id: AgentId
    constraints: NotRequired[ConstraintsBody | None]
    holder_key: NotRequired[HolderKey | None]
    id_token: str
    """
    An OIDC ID token from a configured identity provider.
    """
    nonce: NotRequired[Text | None]
    policy: NotRequired[PolicyBody | None]
    resources: list[ResourcePattern]
    ttl_seconds: NotRequired[int | None]


class MeBody(TypedDict):
    """
    `GET /v1/me`: the key a request is made with.
    """

    admin: bool
    """
    The deployment's admin key, which also manages organisations.
    """
    email: NotRequired[str | None]
    key_id: str
    org: OrgRef
    permissions: list[str]
    """
    What the role allows: `read`, `issue`, `issue_for_anyone`, `rate`,
    `revoke`, `manage_keys`, `decide`, `manage_webhooks`, `vouch`,
    `evaluate`, `manage_clients`.
    """
    role: str


class OrgBody(TypedDict):
    """
    An organisation.
    """

    created_at: str
    name: str
    org_id: str
    quotas: QuotasBody


class OrgCreatedBody(TypedDict):
    """
    An organisation created, with its first owner key.
    """

    org: OrgBody
    owner_key: IssuedKeyBody


class OrgPage(TypedDict):
    """
    A page of organisations, oldest first.
    """

    next_cursor: NotRequired[str | None]
    orgs: list[OrgBody]


OverviewBody = TypedDict(
    'OverviewBody',
    {
        'bucket': str,
        'budgets': list[BudgetUse],
        'from': str,
        'series': list[OverviewBucket],
        'to': str,
        'totals': OverviewTotals,
        'window': str,
    },
)


class Problem(TypedDict):
    """
    An RFC 9457 problem body.
    """

    aar_id: NotRequired[str | None]
    """
    The denied record written for this refusal, if any.
    """
    code: str
    """
    Stable snake_case code.
    """
    detail: str
    field: NotRequired[str | None]
    """
    The request field at fault, for input errors.
    """
    reason: NotRequired[str | None]
    """
    The precise rule that refused the request, when `code` names a
    family (`dpop_invalid` → `dpop_url_mismatch`).
    """
    status: int
    title: str
    type: str
    """
    `urn:mandate:problem:<code>`.
    """
    violations: NotRequired[list[ViolationBody]]
    """
    Every widening, for refused delegations.
    """


class RecordActionRequest(TypedDict):
    """
    `POST /v1/vat/record/action`.
    """

    action: Action
    args: NotRequired[dict[str, Any] | None]
    """
    The arguments of the act (a JSON object, at most 16 KiB as RFC 8785
    canonical JSON; no member named twice, every number within
    ±(2^53 − 1)), judged against the argument rules of the token's
    chain. The record keeps their `args_hash`.
    """
    resource: Resource
    result: Outcome
    """
    `success`, `error`, `timeout` or `cancelled`.
    """
    result_hash: NotRequired[Sha256Ref | None]
    spend_usd: NotRequired[float | None]
    """
    US dollars spent by the action (≤ 6 decimals).
    """
    vat_jti: Jti
    """
    The token's jti; may be left out when a Bearer token is sent.
    """


RecordActionResult: TypeAlias = RecordedAction | RefusedAction
"""
What came of one record of a batch: recorded, or refused with the
problem `record/action` would have answered for it alone.
"""


class RecordActionsRequest(TypedDict):
    """
    `POST /v1/vat/record/actions`: many `record/action` requests in one
    call, recorded in this order and committed together.
    """

    records: list[RecordActionRequest]
    """
    1 to 1000 records, each as `record/action` takes it (within the
    64 KiB body). With the token presented a record may leave
    `vat_jti` out, and one naming another token is refused alone.
    """


class RecordActionsResponse(TypedDict):
    """
    The answer to a batch that was committed: one result per record, in the
    order sent.
    """

    results: list[RecordActionResult]


class RecordBody(TypedDict):
    """
    An action record, in full.
    """

    aar_id: NotRequired[str | None]
    """
    The record's id. Left out of lists, graphs and approvals while it
    completes the record — one made with a bare `vat_jti`, pending or
    awaiting approval: then only the agent that made it (the
    `authorize` answer) and whoever names it are shown it.
    """
    action: str
    agent_id: str
    args: NotRequired[dict[str, Any] | None]
    """
    The arguments as kept: `[records] redact_args` values replaced by
    `"[redacted]"`; absent when none were given, or not kept
    (`[records] keep_args = false`, once no approval waits on them).
    Attacker-controlled text: show it as text, never as markup.
    """
    args_hash: NotRequired[Sha256Ref | None]
    assurance_level: str
    completed_at: NotRequired[str | None]
    created_at: str
    credential: str
    """
    What the agent proved it held: `token` (the token itself, with its
    proof when bound) or `jti` (a bare `vat_jti`, which proves nothing).
    """
    delegated_jth: NotRequired[Jth | None]
    delegation_depth: int
    deny_reason: NotRequired[str | None]
    feedback_at: NotRequired[str | None]
    human_ref: str
    jth: Jth
    """
    The jti hash of the token the record was made with (a jti is shown
    only to whoever receives the token).
    """
    note: NotRequired[str | None]
    origin: str
    """
    The call that made the record: `authorize`, `record_action`,
    `delegate`, `evaluation` (an AuthZEN evaluation by a gateway:
    permitted and completed in one step, or denied, or awaiting
    approval), or `unknown` (made before the origin was stored).
    """
    provenance_ref: str
    rating: NotRequired[str | None]
    resource: str
    result: NotRequired[str | None]
    result_hash: NotRequired[str | None]
    spend_usd: float
    status: str
    """
    `pending`, `completed` or `denied`.
    """
    trust_in_force: NotRequired[float | None]
    """
    The trust in force the record was judged with: the minimum over the
    agents of the token's chain (an agent with no history of its own
    counting as its delegator's), beside the spec's `trust_score`, the
    token's base trust. Absent when judging stopped before trust, and for records made
    before schema 10.
    """
    trust_score: float


class RecordPage(TypedDict):
    """
    A page of records, newest first.
    """

    next_cursor: NotRequired[str | None]
    """
    Pass back as `cursor` for the next page; absent on the last page.
    """
    records: list[RecordBody]


class ReputationBody(TypedDict):
    """
    An agent's reputation (spec 2.3) with its counts.
    """

    agent_id: str
    """
    `agent:<agent_id>`.
    """
    combined_reputation: float
    counts: ReputationCountsBody
    execution_score: float
    feedback_score: float
    has_human_feedback: bool
    total_actions: int


class RevokeRequest(TypedDict):
    """
    `POST /v1/vat/revoke`.
    """

    jth: NotRequired[Jth | None]
    jti: NotRequired[Jti | None]
    reason: NotRequired[Text | None]
    vat_jti: NotRequired[Jti | None]


class SecretRotatedBody(TypedDict):
    """
    A webhook's new signing secret: shown only now.
    """

    previous_secret_expires_at: str
    """
    Until then deliveries are signed with the previous secret too.
    """
    secret: Secret
    webhook_id: WebhookId


class TokenStatus(TypedDict):
    """
    The status of a token and its descendants.
    """

    agent_id: str
    constraints: NotRequired[ConstraintsBody | None]
    delegation_depth: int
    descendants: list[TokenSummary]
    """
    A page of the token's descendants, by depth, then issue time.
    """
    expires_at: str
    issued_at: str
    jth: Jth
    next_cursor: NotRequired[str | None]
    """
    Pass back as `cursor` for the next page of descendants; absent on the last.
    """
    parent: NotRequired[Jth | None]
    provenance_ref: str
    revoke_reason: NotRequired[str | None]
    revoked_at: NotRequired[str | None]
    status: str
    """
    `active`, `revoked` or `expired`.
    """


class TrustEdge(TypedDict):
    """
    A vouch in force of a page of the graph.
    """

    agent_id: str
    """
    The agent vouched for: a node of the page.
    """
    vouch_id: VouchId
    voucher: VoucherBody
    weight: float


class TrustGraphPage(TypedDict):
    """
    `GET /v1/trust/graph`: a page of the organisation's agents by id, with
    the vouches in force they receive.
    """

    computed_at: str
    """
    RFC 3339: when the scores were computed.
    """
    edges: list[TrustEdge]
    next_cursor: NotRequired[str | None]
    """
    The next page's `cursor`, when there is one.
    """
    nodes: list[TrustNode]


class VouchBody(TypedDict):
    """
    A vouch.
    """

    agent_id: str
    """
    The agent vouched for.
    """
    created_at: str
    """
    RFC 3339.
    """
    expires_at: NotRequired[str | None]
    """
    RFC 3339: from then on it no longer counts.
    """
    reason: NotRequired[str | None]
    vouch_id: VouchId
    voucher: VoucherBody
    weight: float
    """
    In (0, 1].
    """
    withdrawn_at: NotRequired[str | None]
    """
    RFC 3339: when it was withdrawn.
    """


class WebhookBody(TypedDict):
    """
    A webhook (never its secret).
    """

    created_at: str
    created_by: str
    """
    The API key that created it.
    """
    description: NotRequired[str | None]
    disabled_at: NotRequired[str | None]
    """
    When it was disabled, by its owner or after failing for the retry
    window.
    """
    disabled_reason: NotRequired[str | None]
    enabled: bool
    events: list[EventType]
    failed_attempts: int
    """
    Failed attempts in a row at the next event to send.
    """
    failing_since: NotRequired[str | None]
    """
    When the first of them was made.
    """
    next_attempt_at: NotRequired[str | None]
    """
    When the next attempt is due.
    """
    previous_secret_expires_at: NotRequired[str | None]
    """
    Until when deliveries are also signed with the secret before the
    last rotation.
    """
    url: str
    webhook_id: WebhookId


class WebhookCreatedBody(WebhookBody):
    """
    A webhook just created, with its signing secret: shown only now.
    """

    secret: Secret


class WebhookList(TypedDict):
    """
    The webhooks of an organisation, newest first.
    """

    webhooks: list[WebhookBody]


class AgentTrustBody(TypedDict):
    """
    `GET /v1/trust/agents/{agent_id}`: an agent's trust in force and its
    parts (see docs/api.md, "Trust"), with the vouches in force it
    receives and gives.
    """

    agent_id: str
    ceiling: float
    """
    The most its delegators let it have (1 with a root token).
    """
    computed_at: str
    """
    RFC 3339: when the scores in force were computed (the server's
    time); a change made before it is counted.
    """
    decay: float
    """
    What inactivity leaves (1: active now).
    """
    graph: float
    """
    What the vouches it receives give, in [0, 1].
    """
    reputation: float
    """
    Its combined reputation, in [0, 1].
    """
    trust: float
    """
    `T`, in [0, 1]: `min(ceiling, decay · (β · reputation + (1 − β) ·
    graph))`.
    """
    vouched: list[VouchBody]
    """
    Vouches in force it gives, oldest first (at most 1000).
    """
    vouches: list[VouchBody]
    """
    Vouches in force it receives, oldest first (at most 1000).
    """


class CaptureRequest(TypedDict):
    """
    `POST /v1/vat/auth/capture`.
    """

    actions: list[Action]
    agent_id: AgentId
    constraints: NotRequired[ConstraintsBody | None]
    evidence: dict[str, Any]
    """
    The captured verification data, or a provider's result
    (`{"attestation": "<JWS>"}` for provider verifiers).
    """
    holder_key: NotRequired[HolderKey | None]
    policy: NotRequired[PolicyBody | None]
    resources: list[ResourcePattern]
    ttl_seconds: NotRequired[int | None]
    verifier: str
    """
    The name of a configured verifier.
    """


class ConsentGrant(TypedDict):
    """
    What the human grants: never wider than asked (the actions and
    resource patterns of `scope`), for an agent of their own.
    """

    actions: list[Action]
    agent_id: NotRequired[AgentId | None]
    constraints: NotRequired[ConstraintsBody | None]
    policy: NotRequired[PolicyBody | None]
    resources: list[ResourcePattern]
    ttl_seconds: NotRequired[int | None]
    """
    The grant's lifetime in seconds (default 3600, at most 2592000).
    """


EvaluationsAnswer: TypeAlias = EvaluationsResponse | AccessDecision
"""
The answer to `POST /v1/access/evaluations`: the decisions, or one
decision for a request without `evaluations`.
"""


class ConsentDecisionRequest(TypedDict):
    """
    `POST /v1/oauth/requests/decision`.
    """

    decision: ConsentDecision
    grant: NotRequired[ConsentGrant | None]
    request: str
    """
    The sealed authorization request.
    """
