// MandateClient: a small fetch-based client for every /v1 endpoint of a
// Mandate server (docs/api.md is the contract). One typed method per call;
// every failure, from a refused request to an unreachable server, rejects
// with a MandateError that carries the problem body.
//
// Which credential goes with a call follows the contract: the API key for
// issuing and reading; for agent calls the agent's own token (required to
// delegate or revoke; optional beside `vat_jti` for recordAction and
// authorize) — as `Authorization: Bearer`, or, for a token bound to the
// agent's key, as `Authorization: DPoP` with a fresh proof (RFC 9449) signed
// by that key for each request; nothing for the public key set.
//
// Every call has a timeout (per attempt; `timeoutMs`) and may be abandoned
// with an AbortSignal. A call that is safe to send again — a read, or a
// write carrying an `Idempotency-Key`, which the client makes itself for
// every write the server honours one for — is sent again after a failure
// that trying again may cure (no answer, a timeout, 429, 502, 503, 504),
// after the pause the server asks for (`Retry-After`) or a growing pause
// with jitter. Every answer's headers reach `onResponse`; a failure's ride
// on its MandateError (`headers`, `requestId`, `retryAfter`).
//
// Two calls last: `authorize` told to wait for a human's approval reads the
// approval again and again (each read a long-poll of at most 30 s) until it
// is decided or the caller's timeout passes, and `events()` reads the
// organisation's Server-Sent Events with `fetch` (an EventSource cannot
// send an Authorization header), parsed by eventsource-parser, connecting
// again after a drop with `Last-Event-ID` so that no event is missed.
//
// This module composes the client: `MandateClient` holds a `Transport`
// (transport.ts: options, timeouts, retries, credentials) and each of its
// methods calls the operation of its group — tokens.ts, records.ts,
// approvals.ts, events.ts, trust.ts, organisations.ts, log.ts, the same
// groups as the Python client's modules — which also declares that group's
// request and response types (over the generated `openapi.ts`, through
// types.ts); errors.ts holds the problem codes and the errors. The methods'
// documentation is here, on the class the package exports; what this
// module exports is the client's whole public surface.

import { decodeTokenUnverified, type Claims, type Jwks, type Verifier, type VerifierOptions } from "../mandate_wasm.js";
import type { RemoteVerifier } from "../remote.js";
import {
  Transport,
  type AbortSignalLike,
  type AgentAuth,
  type ByteStreamLike,
  DEFAULT_MAX_RETRIES,
  DEFAULT_MAX_RETRY_DELAY_MS,
  DEFAULT_TIMEOUT_MS,
  type FetchLike,
  generateAgentKey,
  type MandateClientOptions,
  type RequestOptions,
  type ResponseHeadersLike,
  type ResponseInfo,
  type WriteOptions,
} from "./transport.js";
import {
  type ClientErrorCode,
  type DenyReason,
  MandateApprovalPending,
  MandateError,
  MandateRefusal,
  type Problem,
  type ProblemCode,
} from "./errors.js";
import type {
  ActionResult,
  Instant,
  JsonObject,
  JsonValue,
  Rating,
  RecordArgs,
  RecordStatus,
  TokenState,
} from "./types.js";
import * as Tokens from "./tokens.js";
import type {
  AuthCaptureRequest,
  ClientVerifierOptions,
  DelegatedToken,
  DelegateRequest,
  IssuedToken,
  IssueL1Request,
  IssueL2Request,
  RevokeRequest,
  RevokeResponse,
  TokenDescendant,
  TokenListItem,
  TokenListQuery,
  TokenPage,
  TokenQuery,
  TokenStatus,
} from "./tokens.js";
import * as Records from "./records.js";
import {
  type ActContext,
  type ActionRecord,
  type ActOptions,
  type ActRequest,
  type AgentDayOutcomes,
  type AgentHistory,
  type AgentHistoryDay,
  type AgentHistoryQuery,
  type AgentPage,
  type AgentQuery,
  type AgentReputation,
  type AgentSort,
  type AgentSummary,
  type AgentWindow,
  argsHash,
  argsOf,
  type Attempt,
  type AttemptError,
  type AttemptResult,
  type AuthorizeOptions,
  type AuthorizeRequest,
  type AuthorizeResponse,
  type BudgetUse,
  canonicalJson,
  checkArgsOffline,
  type CompleteRequest,
  type DashboardWindow,
  type FeedbackRequest,
  type FeedbackResponse,
  type GraphEdge,
  type HumanNode,
  type InboxCounts,
  outputHash,
  type Overview,
  type OverviewBucket,
  type OverviewQuery,
  type OverviewTotals,
  type ProvenanceSummary,
  type RateWorkflowRequest,
  type RateWorkflowResponse,
  type RecordActionRequest,
  type RecordActionResponse,
  type RecordActionsRequest,
  type RecordActionsResponse,
  type RecordedAction,
  type RecordNode,
  type RecordPage,
  type RecordQuery,
  type RefusedAction,
  type TokenNode,
  verifyAttempt,
  type Workflow,
  type WorkflowGraph,
  type WorkflowPage,
  type WorkflowQuery,
} from "./records.js";
import * as Approvals from "./approvals.js";
import type {
  Approval,
  ApprovalPage,
  ApprovalQuery,
  ApprovalReadOptions,
  ApprovalRef,
  ApprovalStatus,
  ChainLink,
  DecisionRequest,
  PendingApproval,
  WaitForApproval,
} from "./approvals.js";
import * as Events from "./events.js";
import type {
  ApprovalEventData,
  BudgetThresholdEventData,
  EventData,
  EventsOptions,
  MandateEvent,
  RecordEventData,
  TokenRevokedEventData,
} from "./events.js";
import * as Trust from "./trust.js";
import type {
  AgentTrust,
  TrustGraphEdge,
  TrustGraphNode,
  TrustGraphPage,
  TrustGraphQuery,
  Vouch,
  Voucher,
  VouchRequest,
} from "./trust.js";
import * as Organisations from "./organisations.js";
import type {
  ApiKey,
  CreateKeyRequest,
  CreateOrgRequest,
  IssuedKey,
  KeyList,
  Me,
  Org,
  OrgCreated,
  OrgPage,
  OrgQuery,
  Permission,
  Quotas,
  Role,
  UpdateOrgRequest,
} from "./organisations.js";
import * as Log from "./log.js";
import type { LogConsistency, RecordProof, RecordProofEvent } from "./log.js";
import * as OAuth from "./oauth.js";
import type {
  CreateOAuthClientRequest,
  OAuthClient,
  OAuthClientList,
  CreateOAuthResourceRequest,
  OAuthResource,
  OAuthResourceList,
  OAuthGrant,
  OAuthGrantPage,
  OAuthGrantQuery,
} from "./oauth.js";
import * as Access from "./access.js";
import type {
  AccessApproval,
  AccessDecision,
  AccessDecisionContext,
  AuthzenAction,
  AuthzenContext,
  AuthzenResource,
  AuthzenSubject,
  EvaluationItem,
  EvaluationOptions,
  EvaluationRequest,
  EvaluationsRequest,
  EvaluationsResponse,
  EvaluationsSemantic,
  PdpMetadata,
} from "./access.js";

// The public surface: every name the package exports from the client.
export {
  type AbortSignalLike,
  type AgentAuth,
  type ByteStreamLike,
  DEFAULT_MAX_RETRIES,
  DEFAULT_MAX_RETRY_DELAY_MS,
  DEFAULT_TIMEOUT_MS,
  type FetchLike,
  generateAgentKey,
  type MandateClientOptions,
  type RequestOptions,
  type ResponseHeadersLike,
  type ResponseInfo,
  type WriteOptions,
};
export {
  type ClientErrorCode,
  type DenyReason,
  MandateApprovalPending,
  MandateError,
  MandateRefusal,
  type Problem,
  type ProblemCode,
};
export {
  type ActionResult,
  type Instant,
  type JsonObject,
  type JsonValue,
  type Rating,
  type RecordArgs,
  type RecordStatus,
  type TokenState,
};
export {
  type AuthCaptureRequest,
  type ClientVerifierOptions,
  type DelegatedToken,
  type DelegateRequest,
  type IssuedToken,
  type IssueL1Request,
  type IssueL2Request,
  type RevokeRequest,
  type RevokeResponse,
  type TokenDescendant,
  type TokenListItem,
  type TokenListQuery,
  type TokenPage,
  type TokenQuery,
  type TokenStatus,
};
export {
  type ActContext,
  type ActionRecord,
  type ActOptions,
  type ActRequest,
  type AgentDayOutcomes,
  type AgentHistory,
  type AgentHistoryDay,
  type AgentHistoryQuery,
  type AgentPage,
  type AgentQuery,
  type AgentReputation,
  type AgentSort,
  type AgentSummary,
  type AgentWindow,
  argsHash,
  argsOf,
  type Attempt,
  type AttemptError,
  type AttemptResult,
  type AuthorizeOptions,
  type AuthorizeRequest,
  type AuthorizeResponse,
  type BudgetUse,
  canonicalJson,
  checkArgsOffline,
  type CompleteRequest,
  type DashboardWindow,
  type FeedbackRequest,
  type FeedbackResponse,
  type GraphEdge,
  type HumanNode,
  type InboxCounts,
  outputHash,
  type Overview,
  type OverviewBucket,
  type OverviewQuery,
  type OverviewTotals,
  type ProvenanceSummary,
  type RateWorkflowRequest,
  type RateWorkflowResponse,
  type RecordActionRequest,
  type RecordActionResponse,
  type RecordActionsRequest,
  type RecordActionsResponse,
  type RecordedAction,
  type RecordNode,
  type RecordPage,
  type RecordQuery,
  type RefusedAction,
  type TokenNode,
  verifyAttempt,
  type Workflow,
  type WorkflowGraph,
  type WorkflowPage,
  type WorkflowQuery,
};
export {
  type Approval,
  type ApprovalPage,
  type ApprovalQuery,
  type ApprovalReadOptions,
  type ApprovalRef,
  type ApprovalStatus,
  type ChainLink,
  type DecisionRequest,
  type PendingApproval,
  type WaitForApproval,
};
export {
  type ApprovalEventData,
  type BudgetThresholdEventData,
  type EventData,
  type EventsOptions,
  type MandateEvent,
  type RecordEventData,
  type TokenRevokedEventData,
};
export {
  type AgentTrust,
  type TrustGraphEdge,
  type TrustGraphNode,
  type TrustGraphPage,
  type TrustGraphQuery,
  type Vouch,
  type Voucher,
  type VouchRequest,
};
export {
  type ApiKey,
  type CreateKeyRequest,
  type CreateOrgRequest,
  type IssuedKey,
  type KeyList,
  type Me,
  type Org,
  type OrgCreated,
  type OrgPage,
  type OrgQuery,
  type Permission,
  type Quotas,
  type Role,
  type UpdateOrgRequest,
};
export { type LogConsistency, type RecordProof, type RecordProofEvent };
export {
  type CreateOAuthClientRequest,
  type OAuthClient,
  type OAuthClientList,
  type CreateOAuthResourceRequest,
  type OAuthResource,
  type OAuthResourceList,
  type OAuthGrant,
  type OAuthGrantPage,
  type OAuthGrantQuery,
};
export {
  type AccessApproval,
  type AccessDecision,
  type AccessDecisionContext,
  type AuthzenAction,
  type AuthzenContext,
  type AuthzenResource,
  type AuthzenSubject,
  type EvaluationItem,
  type EvaluationOptions,
  type EvaluationRequest,
  type EvaluationsRequest,
  type EvaluationsResponse,
  type EvaluationsSemantic,
  type PdpMetadata,
};

/** Options of `as`: the agent's key for a bound token, and a trace to join. */
export type AgentOptions = Pick<AgentAuth, "key" | "traceparent">;

/** A client of one Mandate server. */
export class MandateClient {
  readonly #transport: Transport;

  constructor(options: MandateClientOptions) {
    this.#transport = new Transport(options);
  }

  /** `POST /v1/vat/issue/l1`: a root token for an agent, on the API key. */
  issueL1(request: IssueL1Request, options: WriteOptions = {}): Promise<IssuedToken> {
    return Tokens.issueL1(this.#transport, request, options);
  }

  /** `POST /v1/vat/issue/l2`: a root token at L2 (trust 0.7), on the API key and the human's OIDC ID token. */
  issueL2(request: IssueL2Request, options: WriteOptions = {}): Promise<IssuedToken> {
    return Tokens.issueL2(this.#transport, request, options);
  }

  /** `POST /v1/vat/auth/capture`: a root token at L3 (trust 0.95), once a configured verifier accepts the evidence. */
  authCapture(request: AuthCaptureRequest, options: WriteOptions = {}): Promise<IssuedToken> {
    return Tokens.authCapture(this.#transport, request, options);
  }

  /** `POST /v1/vat/record/action`: an action done and its result, in one step. */
  async recordAction(request: RecordActionRequest, auth: AgentAuth = {}): Promise<RecordActionResponse> {
    return Records.recordAction(this.#transport, request, auth);
  }

  /**
   * `POST /v1/vat/record/actions`: many `recordAction` calls in one (1 to
   * 1000 records within the 64 KiB body), committed together, each judged
   * as it would be alone, in order. Resolves, once the batch is committed,
   * with one result per record: `recorded: true` with its `aar_id`, or
   * `recorded: false` with the `status`, `code` and `detail` of the problem
   * it alone would have had (`aar_id` when a denied record was written). It
   * rejects, and nothing is written, when the batch as a whole is refused
   * (empty or too long, a malformed record, the token presented failing).
   * With `auth.token` every record acts with that token; without it, each
   * with its own `vat_jti`. Retried as a keyed write: the key holds for the
   * whole batch.
   */
  async recordActions(records: RecordActionRequest[], auth: AgentAuth = {}): Promise<RecordActionsResponse> {
    return Records.recordActions(this.#transport, records, auth);
  }

  /**
   * `POST /v1/vat/authorize`: asks before acting; a refusal is `authorized: false`, not an error. An action a grant
   * requires a human's approval for answers `authorized: false` with the pending `approval` — at once, or, with
   * `waitForApproval`, once it is decided or the wait times out (see `AuthorizeOptions`).
   */
  async authorize(request: AuthorizeRequest, auth: AuthorizeOptions = {}): Promise<AuthorizeResponse> {
    return Records.authorize(this.#transport, this, request, auth);
  }

  /**
   * `POST /v1/vat/aar/{aar_id}/complete`: how an authorized action ended. A
   * record authorized with the token itself is completed with it (`auth`).
   *
   * Sent again, as a write with an `Idempotency-Key`, after a failure that
   * trying again may cure. Until the server replays a completion for its
   * key, a retry after an attempt whose answer was lost may be refused 409
   * `already_completed` because that attempt did complete the record: then,
   * with the client's API key, the record is read, and when it was completed
   * as `request` says (result, hash, spend) the call resolves with it.
   * Without an API key (or with another outcome) the 409 stands, its detail
   * saying an earlier attempt may have completed it.
   */
  async complete(aarId: string, request: CompleteRequest, auth: AgentAuth = {}): Promise<ActionRecord> {
    return Records.complete(this.#transport, this, aarId, request, auth);
  }

  /** `POST /v1/vat/aar/{aar_id}/feedback`: a human's one rating of a completed action. */
  feedback(aarId: string, request: FeedbackRequest, options: RequestOptions = {}): Promise<FeedbackResponse> {
    return Records.feedback(this.#transport, aarId, request, options);
  }

  /** `GET /v1/vat/reputation/{agent_id}`; the id bare or as `agent:<id>`. */
  reputation(agentId: string, options: RequestOptions = {}): Promise<AgentReputation> {
    return Records.reputation(this.#transport, agentId, options);
  }

  /** `GET /v1/vat/aar/provenance/{provenance_ref}`: the workflow summary. */
  provenance(provenanceRef: string, options: RequestOptions = {}): Promise<ProvenanceSummary> {
    return Records.provenance(this.#transport, provenanceRef, options);
  }

  /** `GET /v1/vat/aar/provenance/{provenance_ref}/graph`: tokens and records of a workflow. */
  graph(provenanceRef: string, options: RequestOptions = {}): Promise<WorkflowGraph> {
    return Records.graph(this.#transport, provenanceRef, options);
  }

  /** `GET /v1/vat/aar/{aar_id}`: one full record. */
  record(aarId: string, options: RequestOptions = {}): Promise<ActionRecord> {
    return Records.record(this.#transport, aarId, options);
  }

  /** `GET /v1/vat/aar`: one page of records, newest first; `rated: false` for the completed records awaiting a rating. */
  recordsPage(query: RecordQuery = {}, options: RequestOptions = {}): Promise<RecordPage> {
    return Records.recordsPage(this.#transport, query, options);
  }

  /** Every record matching `query`, newest first, fetching page after page as iteration goes on. */
  async *records(query: RecordQuery = {}, options: RequestOptions = {}): AsyncGenerator<ActionRecord, void, undefined> {
    yield* Records.records(this, query, options);
  }

  /** `GET /v1/vat/workflows`: one page of workflows, newest activity first. */
  workflowsPage(query: WorkflowQuery = {}, options: RequestOptions = {}): Promise<WorkflowPage> {
    return Records.workflowsPage(this.#transport, query, options);
  }

  /** Every workflow matching `query`, page after page. */
  async *workflows(query: WorkflowQuery = {}, options: RequestOptions = {}): AsyncGenerator<Workflow, void, undefined> {
    yield* Records.workflows(this, query, options);
  }

  /**
   * `POST /v1/vat/aar/feedback`: rates every completed record of a workflow with one `result` that nobody has rated
   * yet ("approve every success"), each as `feedback` would, in one transaction; a key whose role may `rate`.
   * Answers how many were rated and their ids (`rated: 0` when none waited); 422 `too_many_records` above 1000,
   * and then nothing is rated.
   */
  rateWorkflow(request: RateWorkflowRequest, options: RequestOptions = {}): Promise<RateWorkflowResponse> {
    return Records.rateWorkflow(this.#transport, request, options);
  }

  /** `GET /v1/vat/inbox/counts`: approvals pending and completed records awaiting a rating. */
  inboxCounts(options: RequestOptions = {}): Promise<InboxCounts> {
    return Records.inboxCounts(this.#transport, options);
  }

  /**
   * `GET /v1/vat/agents`: one page of the organisation's agents, with scores, their counts over `window` (default
   * `7d`) and the last 14 days' outcomes; sorted by `sort` (default `activity`) and `order`.
   */
  agentsPage(query: AgentQuery = {}, options: RequestOptions = {}): Promise<AgentPage> {
    return Records.agentsPage(this.#transport, query, options);
  }

  /** Every agent matching `query`, in its order, page after page. */
  async *agents(query: AgentQuery = {}, options: RequestOptions = {}): AsyncGenerator<AgentSummary, void, undefined> {
    yield* Records.agents(this, query, options);
  }

  /**
   * `GET /v1/vat/agents/{agent_id}/history`: the agent's last `days` UTC days (1–90, default 30), oldest first, with
   * its combined reputation as each ended; the id bare or as `agent:<id>`.
   */
  agentHistory(agentId: string, query: AgentHistoryQuery = {}, options: RequestOptions = {}): Promise<AgentHistory> {
    return Records.agentHistory(this.#transport, agentId, query, options);
  }

  /** `GET /v1/vat/overview`: the organisation over `window` (`24h` by hour, the default; `7d` or `30d` by day). */
  overview(query: OverviewQuery = {}, options: RequestOptions = {}): Promise<Overview> {
    return Records.overview(this.#transport, query, options);
  }

  /** `GET /v1/vat/tokens`: one page of the organisation's tokens, active first, each newest issued first. */
  tokensPage(query: TokenListQuery = {}, options: RequestOptions = {}): Promise<TokenPage> {
    return Tokens.tokensPage(this.#transport, query, options);
  }

  /** Every token matching `query`, active first, page after page. */
  async *tokens(query: TokenListQuery = {}, options: RequestOptions = {}): AsyncGenerator<TokenListItem, void, undefined> {
    yield* Tokens.tokens(this, query, options);
  }

  /**
   * `POST /v1/vat/delegate`: a narrower child token. Delegating changes
   * authority, so it needs the parent token itself as `auth.token` (and its
   * `key` when bound); a `vat_jti` alone is refused.
   */
  async delegate(request: DelegateRequest, auth: AgentAuth = {}): Promise<DelegatedToken> {
    return Tokens.delegate(this.#transport, request, auth);
  }

  /**
   * `POST /v1/vat/revoke`: revokes a token and all its descendants. On the
   * API key, or, with `auth.token`, on the revoking agent's own token (an
   * ancestor of the target, or the target itself). Never sent twice: the
   * server keeps no `Idempotency-Key` for it.
   */
  async revoke(request: RevokeRequest, auth: AgentAuth = {}): Promise<RevokeResponse> {
    return Tokens.revoke(this.#transport, request, auth);
  }

  /**
   * `GET /v1/vat/tokens/{jth}`: a token's status and a page of its descendants, the token named by its jti hash (as
   * lists show it) or by its jti (as its holder was given it). Every token in the answer is named by jti hash.
   */
  token(name: string, query: TokenQuery = {}, options: RequestOptions = {}): Promise<TokenStatus> {
    return Tokens.token(this.#transport, name, query, options);
  }

  /**
   * `GET /v1/vat/approvals/{approval_id}`: an approval, what its agent asks and the chain it acts for; with `wait`,
   * answered once it is decided or after that many seconds (0–30). Read with the client's API key, or with the agent's
   * token (`token`, and `key` when bound): an agent reads the approvals of its own records and its descendants'.
   */
  async approval(approvalId: string, options: ApprovalReadOptions = {}): Promise<Approval> {
    return Approvals.approval(this.#transport, approvalId, options);
  }

  /** `GET /v1/vat/approvals`: one page of the organisation's approvals, newest first (`status` to choose). */
  approvalsPage(query: ApprovalQuery = {}, options: RequestOptions = {}): Promise<ApprovalPage> {
    return Approvals.approvalsPage(this.#transport, query, options);
  }

  /** Every approval matching `query`, newest first, page after page. */
  async *approvals(query: ApprovalQuery = {}, options: RequestOptions = {}): AsyncGenerator<Approval, void, undefined> {
    yield* Approvals.approvals(this, query, options);
  }

  /**
   * `POST /v1/vat/approvals/{approval_id}/decision`: approves or denies, with an optional note; a key whose role
   * may `decide` (reviewer, owner). Answers the decided approval; 409 `not_awaiting_approval` when it was decided
   * before, `approval_expired` when it lapsed first.
   */
  decide(approvalId: string, request: DecisionRequest, options: RequestOptions = {}): Promise<Approval> {
    return Approvals.decide(this.#transport, approvalId, request, options);
  }

  /**
   * `GET /v1/events`: the organisation's events as they happen, on the API key (any role that reads). Iterate with
   * `for await`; the iteration ends when `signal` aborts (or the loop is left). A dropped connection, or one silent
   * past the server's heartbeats, is connected again after a pause (growing while attempts fail, and as the stream's
   * `retry` sets it) with `Last-Event-ID`, so every event after the last one yielded still comes, in order. A
   * refusal that trying again cannot cure (401, 403, 400 `invalid_last_event_id` once the server no longer keeps
   * that event) ends the iteration with a MandateError.
   */
  async *events(options: EventsOptions = {}): AsyncGenerator<MandateEvent, void, undefined> {
    yield* Events.events(this.#transport, options);
  }

  /** `GET /v1/me`: the API key's organisation, role and permissions; any key may ask. */
  me(options: RequestOptions = {}): Promise<Me> {
    return Organisations.me(this.#transport, options);
  }

  /** `POST /v1/orgs`: a new organisation and its first owner key, shown only in this answer; the admin key only. */
  createOrg(request: CreateOrgRequest, options: RequestOptions = {}): Promise<OrgCreated> {
    return Organisations.createOrg(this.#transport, request, options);
  }

  /** `GET /v1/orgs`: one page of the deployment's organisations, oldest first; the admin key only. */
  listOrgs(query: OrgQuery = {}, options: RequestOptions = {}): Promise<OrgPage> {
    return Organisations.listOrgs(this.#transport, query, options);
  }

  /** `PATCH /v1/orgs/{org_id}`: replaces an organisation's quotas; the admin key only. */
  updateOrg(orgId: string, request: UpdateOrgRequest, options: RequestOptions = {}): Promise<Org> {
    return Organisations.updateOrg(this.#transport, orgId, request, options);
  }

  /** `POST /v1/keys`: a new API key of the caller's organisation, shown only in this answer; an owner key only. */
  createKey(request: CreateKeyRequest, options: RequestOptions = {}): Promise<IssuedKey> {
    return Organisations.createKey(this.#transport, request, options);
  }

  /** `GET /v1/keys`: the organisation's API keys, newest first; an owner key only. */
  listKeys(options: RequestOptions = {}): Promise<KeyList> {
    return Organisations.listKeys(this.#transport, options);
  }

  /** `DELETE /v1/keys/{key_id}`: revokes an API key at once; an owner key only. */
  revokeKey(keyId: string, options: RequestOptions = {}): Promise<ApiKey> {
    return Organisations.revokeKey(this.#transport, keyId, options);
  }

  /** `GET /v1/vat/aar/{aar_id}/proof`: every event of a record with its inclusion proof; check it with `verifyRecordProof`. */
  recordProof(aarId: string, options: RequestOptions = {}): Promise<RecordProof> {
    return Log.recordProof(this.#transport, aarId, options);
  }

  /** `GET /v1/log/checkpoint`: the record log's latest signed checkpoint (a C2SP signed note); check it with `verifyCheckpoint`. */
  logCheckpoint(options: RequestOptions = {}): Promise<string> {
    return Log.logCheckpoint(this.#transport, options);
  }

  /** `GET /v1/log/key`: the log's verifier keys (signed-note vkeys), one a line, the active one first. */
  logKey(options: RequestOptions = {}): Promise<string> {
    return Log.logKey(this.#transport, options);
  }

  /** `GET /v1/log/consistency?old=N&new=M`: the proof that the tree of `newSize` leaves extends the tree of `oldSize`. */
  logConsistency(oldSize: number, newSize: number, options: RequestOptions = {}): Promise<LogConsistency> {
    return Log.logConsistency(this.#transport, oldSize, newSize, options);
  }

  /**
   * `POST /v1/access/evaluation` (AuthZEN §6): may the agent's token (`subject.id`, never a jti) do this act?
   * On an API key of the `gateway` role. A permitted act is recorded and counted at once (a gateway never
   * completes); a refusal is `decision: false` with Mandate's code in `context.reason`, and a pending
   * approval in `context.approval`. Sent with an `X-Request-ID` (`requestId`, made when missing), so a
   * retry answers the first decision and records nothing new (docs/authzen.md).
   */
  evaluation(request: EvaluationRequest, options: EvaluationOptions = {}): Promise<AccessDecision> {
    return Access.evaluation(this.#transport, request, options);
  }

  /**
   * `POST /v1/access/evaluations` (AuthZEN §7): several decisions in one request, under
   * `options.evaluations_semantic`; each as `evaluation` decides one. A request without `evaluations`
   * is answered by the server as one decision; this method returns it as a list of one.
   */
  evaluations(request: EvaluationsRequest, options: EvaluationOptions = {}): Promise<EvaluationsResponse> {
    return Access.evaluations(this.#transport, request, options);
  }

  /**
   * `GET /v1/oauth/grants`: one page of the grants consents made, newest first — one human's (`human_ref`), one
   * client's (`client_id`), or all; a developer key sees its own human's only. Each `client_name` is the client's
   * self-declared name: show it as text.
   */
  oauthGrantsPage(query: OAuthGrantQuery = {}, options: RequestOptions = {}): Promise<OAuthGrantPage> {
    return OAuth.oauthGrantsPage(this.#transport, query, options);
  }

  /**
   * `DELETE /v1/oauth/grants/{grant_id}`: revokes a grant — its root token, every access token it issued, and its
   * refresh token; revoking a revoked grant changes nothing. A key whose role allows `revoke`.
   */
  revokeOAuthGrant(grantId: string, options: RequestOptions = {}): Promise<void> {
    return OAuth.revokeOAuthGrant(this.#transport, grantId, options);
  }

  /** `GET /v1/oauth/clients`: the organisation's pre-registered OAuth clients, newest first; `manage_clients`. */
  oauthClients(options: RequestOptions = {}): Promise<OAuthClientList> {
    return OAuth.oauthClients(this.#transport, options);
  }

  /** `POST /v1/oauth/clients`: registers a public client (no secret) with its redirect URIs; `manage_clients`. */
  createOAuthClient(request: CreateOAuthClientRequest, options: RequestOptions = {}): Promise<OAuthClient> {
    return OAuth.createOAuthClient(this.#transport, request, options);
  }

  /** `DELETE /v1/oauth/clients/{client_id}`: deletes a pre-registered client, which is unknown from then on. */
  deleteOAuthClient(clientId: string, options: RequestOptions = {}): Promise<void> {
    return OAuth.deleteOAuthClient(this.#transport, clientId, options);
  }

  /** `GET /v1/oauth/resources`: the organisation's resources and their gates' relay keys, newest first; `manage_clients`. */
  oauthResources(options: RequestOptions = {}): Promise<OAuthResourceList> {
    return OAuth.oauthResources(this.#transport, options);
  }

  /**
   * `POST /v1/oauth/resources`: registers a resource (as tokens name it in `aud`) with the RFC 7638 thumbprints of
   * the Ed25519 keys its MCP gates relay with; `manage_clients`. 409 `resource_exists` when it is registered.
   */
  createOAuthResource(request: CreateOAuthResourceRequest, options: RequestOptions = {}): Promise<OAuthResource> {
    return OAuth.createOAuthResource(this.#transport, request, options);
  }

  /** `DELETE /v1/oauth/resources/{resource_id}`: deletes a resource; its relay keys relay nothing from then on. */
  deleteOAuthResource(resourceId: string, options: RequestOptions = {}): Promise<void> {
    return OAuth.deleteOAuthResource(this.#transport, resourceId, options);
  }

  /** `GET /.well-known/authzen-configuration` (AuthZEN §9): the policy decision point's endpoints. */
  authzenConfiguration(options: RequestOptions = {}): Promise<PdpMetadata> {
    return Access.authzenConfiguration(this.#transport, options);
  }

  /** `GET /.well-known/jwks.json`: the public keys tokens are signed with. */
  jwks(options: RequestOptions = {}): Promise<Jwks> {
    return Tokens.jwks(this.#transport, options);
  }

  /**
   * `POST /v1/trust/vouches`: vouches for an agent of the organisation. On the client's API key (a role that may
   * `vouch`: owner, reviewer), or, with `auth.token` (and `key` when bound), as the agent holding that token, for
   * an agent it delegated to (else 403 `vouch_not_allowed`). 409 `vouch_exists` while the same voucher's vouch
   * for that agent is active. Never sent twice: a lost answer is seen by reading the agent's `trust`.
   */
  async vouch(request: VouchRequest, auth: AgentAuth = {}): Promise<Vouch> {
    return Trust.vouch(this.#transport, request, auth);
  }

  /**
   * `DELETE /v1/trust/vouches/{vouch_id}`: withdraws a vouch, by its voucher (the same API key, or with
   * `auth.token` the same agent) or an owner key; answers it with `withdrawn_at`. 409 `vouch_withdrawn` the second
   * time.
   */
  async withdrawVouch(vouchId: string, auth: AgentAuth = {}): Promise<Vouch> {
    return Trust.withdrawVouch(this.#transport, vouchId, auth);
  }

  /** `GET /v1/trust/agents/{agent_id}`: the agent's trust, its parts and the active vouches it receives and gives. */
  trust(agentId: string, options: RequestOptions = {}): Promise<AgentTrust> {
    return Trust.trust(this.#transport, agentId, options);
  }

  /** `GET /v1/trust/graph`: one page of the organisation's trust graph, agents in id order with their vouches. */
  trustGraphPage(query: TrustGraphQuery = {}, options: RequestOptions = {}): Promise<TrustGraphPage> {
    return Trust.trustGraphPage(this.#transport, query, options);
  }

  /** The whole trust graph, page after page as iteration goes on: each page's agents and their vouches. */
  async *trustGraph(query: TrustGraphQuery = {}, options: RequestOptions = {}): AsyncGenerator<TrustGraphPage, void, undefined> {
    yield* Trust.trustGraph(this, query, options);
  }

  /**
   * `GET /v1/trust/agents/{agent_id}/statement`: the agent's signed trust statement, a compact JWT
   * (`trust-statement+jwt`, a few minutes' lifetime) that anyone holding the server's key set checks offline with
   * `verifyTrustStatement`. On the client's API key, or with `auth.token` on the agent's own token.
   */
  async trustStatement(agentId: string, auth: Pick<AgentAuth, "token" | "key"> & RequestOptions = {}): Promise<string> {
    return Trust.trustStatement(this.#transport, agentId, auth);
  }

  /** The dashboard's page of an approval, where a reviewer decides it. */
  approvalUrl(approvalId: string): string {
    return Approvals.approvalUrl(this.#transport, approvalId);
  }

  /** The dashboard's page of a workflow: its chain of tokens and every record. */
  workflowUrl(provenanceRef: string): string {
    return Records.workflowUrl(this.#transport, provenanceRef);
  }

  /**
   * Runs `run` as an action of the agent holding `token`: `authorize` first
   * (nothing runs when it is refused: a `MandateRefusal`; or when it needs
   * an approval not given: a `MandateApprovalPending`, see `ActOptions`),
   * then `run`, then `complete` with the output's `result_hash`, or with
   * `error` (`cancelled` when the signal aborted) when `run` throws — whose
   * error `act` then throws again. Resolves with `run`'s output.
   */
  async act<T>(
    token: string,
    request: ActRequest,
    run: (context: ActContext) => T | Promise<T>,
    options: ActOptions<T> = {},
  ): Promise<T> {
    return Records.act(this.#transport, this, token, request, run, options);
  }

  /**
   * A client acting as the agent holding `token` (with `key` for a bound
   * token: every call then carries its DPoP proof).
   */
  as(token: string, options: AgentOptions = {}): AgentClient {
    return new AgentClient(this, token, options);
  }

  /**
   * A verifier of this server's tokens that keeps itself current: a
   * `RemoteVerifier` (see `createRemoteVerifier`) fetching through this
   * client (its fetch, timeout and `onResponse`) the key set — again when a
   * token names a key id it lacks, at most once per
   * `keyRefreshCooldownSeconds` — and the status list each token names, so
   * a revoked token is refused (`token_revoked`) within
   * `maxStalenessSeconds`. Rejects with a MandateError when the key set
   * cannot be fetched or used.
   */
  async verifier(options: ClientVerifierOptions): Promise<RemoteVerifier>;
  /**
   * Without `maxStalenessSeconds`, as before: fetches the key set once and
   * returns a bare `Verifier` for it, which neither follows a key rotation
   * nor reads status lists. Rejects with a MandateError (status 0, the key
   * set's code) when the keys are unusable. Free it with `free()` when done,
   * or let the garbage collector.
   * @deprecated Pass `maxStalenessSeconds` for a verifier that keeps itself current.
   */
  async verifier(options?: Omit<VerifierOptions, "maxStalenessSeconds">): Promise<Verifier>;
  async verifier(
    options?: ClientVerifierOptions | Omit<VerifierOptions, "maxStalenessSeconds">,
  ): Promise<RemoteVerifier | Verifier> {
    return Tokens.verifier(this.#transport, this, options);
  }
}

/**
 * A client bound to one agent token (`MandateClient.as`): the agent calls
 * without passing the token (and key, and trace) each time.
 */
export class AgentClient {
  readonly #client: MandateClient;
  readonly #auth: AgentAuth;
  /** The token's compact JWT. */
  readonly token: string;

  constructor(client: MandateClient, token: string, options: AgentOptions = {}) {
    this.#client = client;
    this.token = token;
    this.#auth = { token, key: options.key, traceparent: options.traceparent };
  }

  /** The token's claims, read without any check (for display and routing, never to authorize). */
  get claims(): Claims | undefined {
    const decoded = decodeTokenUnverified(this.token);
    return decoded.ok ? decoded.claims : undefined;
  }

  /** `MandateClient.act` with this agent's token. */
  act<T>(request: ActRequest, run: (context: ActContext) => T | Promise<T>, options: ActOptions<T> = {}): Promise<T> {
    return this.#client.act(this.token, request, run, { ...this.#options(), ...options });
  }

  /** `MandateClient.authorize` with this agent's token. */
  authorize(request: AuthorizeRequest, options: Omit<AuthorizeOptions, "token" | "key"> = {}): Promise<AuthorizeResponse> {
    return this.#client.authorize(request, { ...this.#auth, ...options });
  }

  /** `MandateClient.recordAction` with this agent's token. */
  recordAction(request: RecordActionRequest, options: WriteOptions = {}): Promise<RecordActionResponse> {
    return this.#client.recordAction(request, { ...this.#auth, ...options });
  }

  /** `MandateClient.recordActions` with this agent's token: every record of the batch acts with it. */
  recordActions(records: RecordActionRequest[], options: WriteOptions = {}): Promise<RecordActionsResponse> {
    return this.#client.recordActions(records, { ...this.#auth, ...options });
  }

  /** `MandateClient.complete` with this agent's token. */
  complete(aarId: string, request: CompleteRequest, options: WriteOptions = {}): Promise<ActionRecord> {
    return this.#client.complete(aarId, request, { ...this.#auth, ...options });
  }

  /** `MandateClient.delegate` with this agent's token: a narrower child token. */
  delegate(request: DelegateRequest, options: WriteOptions = {}): Promise<DelegatedToken> {
    return this.#client.delegate(request, { ...this.#auth, ...options });
  }

  /** `MandateClient.revoke` with this agent's token (itself or a descendant). */
  revoke(request: RevokeRequest, options: RequestOptions = {}): Promise<RevokeResponse> {
    return this.#client.revoke(request, { ...this.#auth, ...options });
  }

  /** `MandateClient.approval` read with this agent's token. */
  approval(approvalId: string, options: Omit<ApprovalReadOptions, "token" | "key"> = {}): Promise<Approval> {
    return this.#client.approval(approvalId, { ...options, token: this.token, key: this.#auth.key });
  }

  /** `MandateClient.vouch` as this agent: for an agent it delegated to. */
  vouch(request: VouchRequest, options: RequestOptions = {}): Promise<Vouch> {
    return this.#client.vouch(request, { ...this.#auth, ...options });
  }

  /** `MandateClient.withdrawVouch` as this agent: one of its own vouches. */
  withdrawVouch(vouchId: string, options: RequestOptions = {}): Promise<Vouch> {
    return this.#client.withdrawVouch(vouchId, { ...this.#auth, ...options });
  }

  /** `MandateClient.trustStatement` on this agent's token: its own statement (the token's agent), unless `agentId` names another. */
  trustStatement(agentId?: string, options: RequestOptions = {}): Promise<string> {
    const own = this.claims?.sub.replace(/^agent:/, "");
    const agent = agentId ?? own;
    if (agent === undefined) {
      return Promise.reject(
        new MandateError(0, { code: "invalid_options", title: "Invalid options", detail: "the token names no agent: pass agentId" }),
      );
    }
    return this.#client.trustStatement(agent, { ...options, token: this.token, key: this.#auth.key });
  }

  #options(): AgentOptions {
    const options: AgentOptions = {};
    if (this.#auth.key !== undefined) {
      options.key = this.#auth.key;
    }
    if (this.#auth.traceparent !== undefined) {
      options.traceparent = this.#auth.traceparent;
    }
    return options;
  }
}
