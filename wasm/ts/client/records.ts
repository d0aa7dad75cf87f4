// Records: an agent's actions — recorded in one step (one or a batch),
// or authorized first and completed after, and `act`, which does both
// around a function — with the offline check of a call's arguments
// against the token's own rules; then reading them: records, workflows and
// their graphs, reputation, ratings, and the reviewer's dashboard
// (inbox counts, agents, an agent's history, the overview).

import {
  type AssuranceLevel,
  decodeTokenUnverified,
  type ErrorInfo,
  permits,
  sha256Ref,
  type VerifyResult,
} from "../mandate_wasm.js";
import { awaitDecision, type PendingApproval, type WaitForApproval } from "./approvals.js";
import {
  type DenyReason,
  MandateApprovalPending,
  MandateError,
  MandateRefusal,
  type Problem,
  type ProblemCode,
} from "./errors.js";
import type { MandateClient } from "./index.js";
import type { operations } from "./openapi.js";
import {
  type AbortSignalLike,
  type AgentAuth,
  maybeDone,
  queryString,
  type RequestOptions,
  segment,
  type Transport,
} from "./transport.js";
import type {
  ActionResult,
  AgentBody,
  JsonObject,
  Narrowed,
  Rating,
  RecordArgs,
  RecordStatus,
  Schemas,
  Sent,
  TokenState,
  WithArgs,
  WithInstants,
} from "./types.js";

/** Options of `authorize`. */
export interface AuthorizeOptions extends AgentAuth {
  /**
   * Without it, an action that needs approval resolves at once with
   * `authorized: false` and the pending `approval`. With it, the call waits,
   * reading the approval with the agent's token (`token`, else the client's
   * API key), and resolves with the outcome: approved → `authorized: true`
   * (complete the record as usual); denied or expired → `authorized: false`
   * with `reason` `approval_denied` or `approval_expired`; still pending at
   * the timeout → `authorized: false` with the pending `approval`.
   */
  waitForApproval?: WaitForApproval;
}

/** What `act` asks to do: the action and resource checked, the spend reserved, and the call's arguments. */
export interface ActRequest {
  action: string;
  resource: string;
  /** US dollars to reserve against the budget (the record's spend unless `complete` says otherwise). */
  spend_usd?: number;
  /**
   * The call's arguments, judged against the token's argument rules
   * (`svc_constraints.args`): offline first (`checkArgsOffline`), then by
   * the server, which keeps their `args_hash` on the record.
   */
  args?: JsonObject;
}

/** What the function `act` runs is told about its authorization. */
export interface ActContext {
  /** The record the action is written on. */
  aarId: string;
  /** The workflow the token belongs to. */
  provenanceRef: string;
  /** The `authorize` answer (after the approval, when one was needed). */
  authorization: AuthorizeResponse;
  /** The caller's signal, when it gave one. */
  signal?: AbortSignalLike;
}

/** Options of `act`. */
export interface ActOptions<T = unknown> extends Pick<AgentAuth, "key" | "relayKey" | "forwardedProof" | "traceparent"> {
  /**
   * When the action needs a human's approval: how long to wait for the
   * decision before giving up (rejecting with `MandateApprovalPending`).
   * Without it, `act` rejects with `MandateApprovalPending` at once.
   */
  waitForApproval?: WaitForApproval;
  /**
   * Called once when the action needs approval, before any wait: to show
   * the reviewer's page to someone, ask a user to approve, or log it. A
   * rejection ends `act` with that rejection (the approval stays pending).
   */
  onApproval?: (approval: PendingApproval) => void | Promise<void>;
  /**
   * The `result_hash` of the function's output. Default: `sha256Ref` of a
   * string or bytes as they are, of anything else its `JSON.stringify`
   * text, and no hash for `undefined`.
   */
  resultHash?: (output: T) => string | undefined;
  /**
   * Passed to the function; an abort while it runs completes the record as
   * `cancelled` (that completion is still sent). An abort before it runs
   * abandons `authorize` and the wait.
   */
  signal?: AbortSignalLike;
  /** The timeout of each attempt of `authorize` and `complete`, ms, instead of the client's. */
  timeoutMs?: number;
}

export type RecordActionRequest = AgentBody<WithArgs<Schemas["RecordActionRequest"]>>;
export type RecordActionResponse = Narrowed<Sent<Schemas["RecordActionResponse"]>, { recorded: true }>;
/** A record of a batch (`recordActions`): the record as `recordAction` takes it. */
export type RecordActionsRequest = Omit<Schemas["RecordActionsRequest"], "records"> & { records: RecordActionRequest[] };
/** A record of a batch, recorded: what `recordAction` answers, with its position in the batch. */
export type RecordedAction = Sent<Schemas["RecordedAction"]>;
/** A record of a batch, refused: the status, code and detail of the problem `recordAction` answers for it alone. */
export type RefusedAction = Narrowed<Sent<Schemas["RefusedAction"]>, { code: ProblemCode | (string & {}) }>;
/** The answer to a committed batch: one result per record, in the order sent; narrow on `recorded`. */
export type RecordActionsResponse = Narrowed<
  Sent<Schemas["RecordActionsResponse"]>,
  { results: Array<RecordedAction | RefusedAction> }
>;
export type AuthorizeRequest = AgentBody<WithArgs<Schemas["AuthorizeRequest"]>>;
export type AuthorizeResponse = Narrowed<
  Sent<Schemas["AuthorizeResponse"]>,
  {
    assurance_level: AssuranceLevel;
    /** Why not, when `authorized` is false and no approval is awaited. */
    reason?: DenyReason;
  }
>;
export type CompleteRequest = Schemas["CompleteRequest"];

export type ActionRecord = Narrowed<
  Sent<Schemas["RecordBody"]>,
  {
    status: RecordStatus;
    result?: ActionResult;
    rating?: Rating;
    /** Why a `denied` record was refused. */
    deny_reason?: DenyReason;
    assurance_level: AssuranceLevel;
    /** What the agent proved: `token` (the token itself) or `jti` (a bare vat_jti, which proves nothing). */
    credential: "token" | "jti";
    /** The call that made it; `evaluation`: an AuthZEN evaluation by a gateway. */
    origin: "authorize" | "record_action" | "delegate" | "evaluation" | "unknown";
  }
> &
  RecordArgs;

export type FeedbackRequest = Schemas["FeedbackRequest"];
export type FeedbackResponse = Narrowed<Sent<Schemas["FeedbackResponse"]>, { rating: Rating }>;
export type AgentReputation = Sent<Schemas["ReputationBody"]>;
export type ProvenanceSummary = Sent<Schemas["SummaryBody"]>;

// The document describes the three kinds of graph node in one schema.
type GraphNode = Sent<Schemas["GraphNode"]>;
export type HumanNode = Narrowed<GraphNode, { kind: "human"; human_ref: string; assurance_level: AssuranceLevel }>;
export type TokenNode = Narrowed<
  GraphNode,
  { kind: "token"; agent_id: string; delegation_depth: number; status: TokenState; expires_at: string }
>;
export type RecordNode = Narrowed<
  GraphNode,
  {
    kind: "record";
    agent_id: string;
    action: string;
    resource: string;
    status: RecordStatus;
    result?: ActionResult;
    rating?: Rating;
    deny_reason?: DenyReason;
    created_at: string;
  }
>;
export type GraphEdge = Narrowed<Sent<Schemas["GraphEdge"]>, { kind: "issued" | "delegated" | "action" }>;
export type WorkflowGraph = Narrowed<
  Sent<Schemas["GraphBody"]>,
  { nodes: Array<HumanNode | TokenNode | RecordNode>; edges: GraphEdge[] }
>;

export type RecordQuery = WithInstants<NonNullable<operations["records"]["parameters"]["query"]>>;
export type RecordPage = Narrowed<Sent<Schemas["RecordPage"]>, { records: ActionRecord[] }>;

export type WorkflowQuery = WithInstants<NonNullable<operations["workflows"]["parameters"]["query"]>>;
export type Workflow = Narrowed<Sent<Schemas["WorkflowBody"]>, { assurance_level: AssuranceLevel }>;
export type WorkflowPage = Narrowed<Sent<Schemas["WorkflowPage"]>, { workflows: Workflow[] }>;

// The reviewer's dashboard: answers read from counters the server keeps in
// each record change's transaction (docs/api.md, "The reviewer's
// dashboard"). Windows of days are whole UTC days: `24h` is today's and
// yesterday's day buckets on the agents list, true hours on the overview.

/** A dashboard window; the document gives it as a string and lists its values in prose. */
export type DashboardWindow = "24h" | "7d" | "30d";
/** The agents list's sort columns. */
export type AgentSort = "agent_id" | "reputation" | "activity" | "actions" | "denial_rate" | "error_rate";

/** `GET /v1/vat/inbox/counts`: what waits for a reviewer. */
export type InboxCounts = Sent<Schemas["InboxCounts"]>;
/** One rating for every unrated record of a workflow with one result. */
export type RateWorkflowRequest = Schemas["BulkFeedbackRequest"];
export type RateWorkflowResponse = Sent<Schemas["BulkFeedbackResponse"]>;

export type AgentQuery = Narrowed<
  NonNullable<operations["agents"]["parameters"]["query"]>,
  { window?: DashboardWindow | null; sort?: AgentSort | null; order?: "asc" | "desc" | null }
>;
/** One UTC day's outcomes in an agent's 14-day sparkline. */
export type AgentDayOutcomes = Sent<Schemas["SparkDayBody"]>;
/** What an agent did over the window asked for. */
export type AgentWindow = Sent<Schemas["AgentWindowBody"]>;
export type AgentSummary = Sent<Schemas["AgentListItem"]>;
export type AgentPage = Narrowed<Sent<Schemas["AgentPage"]>, { agents: AgentSummary[] }>;
/** Options of `agentHistory`. */
export type AgentHistoryQuery = NonNullable<operations["agent_history"]["parameters"]["query"]>;
export type AgentHistoryDay = Sent<Schemas["HistoryDayBody"]>;
export type AgentHistory = Sent<Schemas["AgentHistoryBody"]>;

/** Options of `overview`. */
export type OverviewQuery = Narrowed<
  NonNullable<operations["overview"]["parameters"]["query"]>,
  { window?: DashboardWindow | null }
>;
export type OverviewBucket = Sent<Schemas["OverviewBucket"]>;
export type OverviewTotals = Sent<Schemas["OverviewTotals"]>;
/** A token's budget, named by its jti hash (`jth`, as events name it), never its jti. */
export type BudgetUse = Narrowed<Sent<Schemas["BudgetUse"]>, { budget: "max_spend_usd" | "max_actions" }>;
export type Overview = Narrowed<
  Sent<Schemas["OverviewBody"]>,
  { window: DashboardWindow; bucket: "hour" | "day"; budgets: BudgetUse[] }
>;

/** The `result_hash` `act` gives an output by default (see `ActOptions.resultHash`). */
export function outputHash(output: unknown): string | undefined {
  if (output === undefined) {
    return undefined;
  }
  const data = typeof output === "string" || output instanceof Uint8Array ? output : JSON.stringify(output);
  return typeof data === "string" || data instanceof Uint8Array ? (sha256Ref(data) ?? undefined) : undefined;
}

function invalidArguments(detail: string): MandateError {
  return new MandateError(0, { code: "invalid_arguments", title: "Arguments are not JSON", detail });
}

/** Writes `value` as RFC 8785 canonical JSON into `out`; `seen` holds the objects being written (a cycle is refused). */
function writeCanonical(value: unknown, out: string[], seen: Set<object>, at: string): void {
  if (typeof value === "object" && value !== null && typeof (value as { toJSON?: unknown }).toJSON === "function") {
    value = (value as { toJSON: (key: string) => unknown }).toJSON(at);
  }
  if (value === null || typeof value === "boolean" || typeof value === "string") {
    out.push(JSON.stringify(value));
    return;
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value)) {
      throw invalidArguments(`${at || "the value"} is ${value}, which JSON cannot hold`);
    }
    // ECMAScript's Number-to-String is RFC 8785's number form; -0 is written 0.
    out.push(JSON.stringify(value));
    return;
  }
  if (typeof value !== "object") {
    throw invalidArguments(`${at || "the value"} is a ${typeof value}, which JSON cannot hold`);
  }
  const prototype = Object.getPrototypeOf(value) as unknown;
  const array = Array.isArray(value);
  if (!array && prototype !== Object.prototype && prototype !== null) {
    throw invalidArguments(`${at || "the value"} is not plain JSON data (an object of a class without toJSON)`);
  }
  if (seen.has(value)) {
    throw invalidArguments(`${at || "the value"} contains itself`);
  }
  seen.add(value);
  if (array) {
    out.push("[");
    (value as unknown[]).forEach((item, index) => {
      if (index > 0) {
        out.push(",");
      }
      // As JSON.stringify: an array's undefined is null.
      writeCanonical(item === undefined ? null : item, out, seen, `${at}[${index}]`);
    });
    out.push("]");
  } else {
    // Members by name in UTF-16 code units, which is how JavaScript compares strings; undefined members are left out.
    const names = Object.keys(value)
      .filter((name) => (value as Record<string, unknown>)[name] !== undefined)
      .sort();
    out.push("{");
    names.forEach((name, index) => {
      if (index > 0) {
        out.push(",");
      }
      out.push(JSON.stringify(name), ":");
      writeCanonical((value as Record<string, unknown>)[name], out, seen, `${at}.${name}`);
    });
    out.push("}");
  }
  seen.delete(value);
}

/**
 * `value` as RFC 8785 (JCS) canonical JSON: members sorted by name, numbers
 * and strings as ECMAScript writes them, no whitespace; `toJSON` applied
 * and `undefined` members left out, as `JSON.stringify` does. Anything JSON
 * cannot hold — a non-finite number, a bigint, a function, a symbol, a Map
 * or other class instance without `toJSON`, a cycle — throws a MandateError
 * `invalid_arguments`, so two different values never write the same text.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  writeCanonical(value, out, new Set(), "");
  return out.join("");
}

/**
 * `sha256:<hex>` of the canonical JSON of a call's arguments (`canonicalJson`):
 * the same arguments in any member order hash the same. The adapters bind an
 * authorization to it.
 */
export function argsHash(args: unknown): string {
  return sha256Ref(canonicalJson(args)) as string;
}

/** `value` when it is a JSON object (not an array, not null): the `args` a tool's input makes. */
export function argsOf(value: unknown): JsonObject | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as JsonObject) : undefined;
}

/**
 * Why the token's own argument rules (`svc_constraints.args`) refuse
 * `request`, judged offline by mandate-core's evaluator (the wasm
 * `permits`), or `undefined` when they do not: a `MandateRefusal` (status
 * 0, no record) `args_required` when a rule applies and `request.args` is
 * absent, `args_not_permitted` when a statement is not true (the problem
 * names `rule`, `statement` and `truth`); a `MandateError` with the
 * evaluator's code when the arguments are not ones the server takes (a
 * member named twice, a number beyond ±2^53, not an object).
 *
 * The claims are read without checking the signature: this check can only
 * refuse, never permit — the server judges every call that passes it. So
 * it leaves to the server what it cannot read (a string that is not a
 * token, claims this SDK's version does not know) and a refusal by scope
 * (`action_not_permitted`, `resource_not_permitted`), which the server
 * records as a denied record as before.
 */
export function checkArgsOffline(token: string, request: Attempt): MandateError | undefined {
  const decoded = decodeTokenUnverified(token);
  if (!decoded.ok) {
    return undefined;
  }
  const verdict = permits(decoded.claims, request.action, request.resource, request.args);
  if (verdict.ok) {
    return undefined;
  }
  if ("error" in verdict) {
    const { code, message } = (verdict as { error: ErrorInfo }).error;
    if (code === "invalid_claims") {
      return undefined;
    }
    return new MandateError(0, { code, title: "Invalid arguments", detail: message });
  }
  const { reason } = verdict;
  if (reason.code !== "args_required" && reason.code !== "args_not_permitted") {
    return undefined;
  }
  const problem: Problem & { status: 0 } = { status: 0, rule: reason.rule };
  if (reason.statement !== undefined) {
    problem.statement = reason.statement;
  }
  if (reason.truth !== undefined) {
    problem.truth = reason.truth;
  }
  return new MandateRefusal(
    reason.code,
    undefined,
    `${request.action} on ${request.resource} was refused offline by the token's argument rules (${reason.code}): ${reason.message}`,
    problem,
  );
}

/** An attempt a token is checked for: an action on a resource, with the call's arguments. */
export interface Attempt {
  action: string;
  resource: string;
  args?: JsonObject;
}

/** Why `verifyAttempt` refused an attempt of a valid token: its scope or its argument rules (stage `permit`). */
export interface AttemptError extends Omit<ErrorInfo, "stage"> {
  stage: "permit";
  /** For `args_required` and `args_not_permitted`: the token's rule that refused. */
  rule?: number;
  /** For `args_not_permitted`: the statement of that rule that is not true. */
  statement?: number;
  /** For `args_not_permitted`: that statement's truth. */
  truth?: "false" | "undefined";
}

/** What `verifyAttempt` answers: the verified token, or why not. */
export type AttemptResult = VerifyResult | { valid: false; error: AttemptError };

/**
 * Checks, offline, that `token` may make `attempt`: the token as `verifier`
 * checks it (signature, expiry, revocation, status — a `Verifier` or a
 * `RemoteVerifier`), then its scope and its argument rules over
 * `attempt.args` (`permits` on the verified claims). A refusal by scope or
 * by argument rules is `{ valid: false, error }` with stage `permit` and the
 * code `action_not_permitted`, `resource_not_permitted`, `args_required` or
 * `args_not_permitted` (with the rule and statement); arguments the
 * evaluator refuses to read give its error (stage `input`).
 */
export async function verifyAttempt(
  verifier: { verify(token: string): VerifyResult | Promise<VerifyResult> },
  token: string,
  attempt: Attempt,
): Promise<AttemptResult> {
  const verified = await verifier.verify(token);
  if (!verified.valid) {
    return verified;
  }
  const verdict = permits(verified.claims, attempt.action, attempt.resource, attempt.args);
  if (verdict.ok) {
    return verified;
  }
  if ("error" in verdict) {
    return { valid: false, error: (verdict as { error: ErrorInfo }).error };
  }
  return { valid: false, error: { stage: "permit", ...verdict.reason } };
}

/** What a completion reported, as a record shows it: the same result, hash and (when given) spend. */
function completedAs(record: ActionRecord, request: CompleteRequest): boolean {
  return (
    record.status === "completed" &&
    record.result === request.result &&
    (record.result_hash ?? undefined) === (request.result_hash ?? undefined) &&
    (request.spend_usd === undefined || request.spend_usd === null || Math.abs(record.spend_usd - request.spend_usd) < 5e-7)
  );
}

/** `POST /v1/vat/record/action`: an action done and its result, in one step. */
export async function recordAction(t: Transport, request: RecordActionRequest, auth: AgentAuth = {}): Promise<RecordActionResponse> {
  const path = "/v1/vat/record/action";
  return t.call("POST", path, () => t.agent("POST", path, auth), request, { ...auth, retry: "write" });
}

/** `MandateClient.recordActions`, documented there. */
export async function recordActions(t: Transport, records: RecordActionRequest[], auth: AgentAuth = {}): Promise<RecordActionsResponse> {
  const path = "/v1/vat/record/actions";
  const body: RecordActionsRequest = { records };
  return t.call("POST", path, () => t.agent("POST", path, auth), body, { ...auth, retry: "write" });
}

/** `MandateClient.authorize`, documented there. */
export async function authorize(
  t: Transport,
  client: MandateClient,
  request: AuthorizeRequest,
  auth: AuthorizeOptions = {},
): Promise<AuthorizeResponse> {
  const path = "/v1/vat/authorize";
  const { waitForApproval: wait, ...options } = auth;
  if (wait !== undefined) {
    if (!(typeof wait.timeoutSeconds === "number" && wait.timeoutSeconds >= 0 && Number.isFinite(wait.timeoutSeconds))) {
      throw new MandateError(0, {
        code: "invalid_options",
        title: "Invalid options",
        detail: "waitForApproval.timeoutSeconds must be a finite number of seconds, 0 or more",
      });
    }
    if (auth.token === undefined && t.apiKey === undefined) {
      throw new MandateError(0, {
        code: "token_required",
        title: "Token required",
        detail: "waiting for an approval reads it with the agent's token (auth.token) or the client's API key",
      });
    }
  }
  const answer: AuthorizeResponse = await t.call("POST", path, () => t.agent("POST", path, auth), request, {
    ...options,
    retry: "write",
  });
  if (wait === undefined || answer.approval?.status !== "pending") {
    return answer;
  }
  return awaitDecision(t, client, answer, answer.approval, wait, auth);
}

/** `MandateClient.complete`, documented there. */
export async function complete(
  t: Transport,
  client: MandateClient,
  aarId: string,
  request: CompleteRequest,
  auth: AgentAuth = {},
): Promise<ActionRecord> {
  const path = `/v1/vat/aar/${segment(aarId)}/complete`;
  let lost = false;
  try {
    return await t.call("POST", path, () => t.agent("POST", path, auth), request, {
      ...auth,
      retry: "write",
      onRetry: (error) => {
        lost ||= maybeDone(error);
      },
    });
  } catch (error) {
    if (!(lost && error instanceof MandateError && error.status === 409 && error.code === "already_completed")) {
      throw error;
    }
    if (t.apiKey !== undefined) {
      const record = await client.record(aarId, { signal: auth.signal, timeoutMs: auth.timeoutMs }).catch(() => undefined);
      if (record !== undefined && completedAs(record, request)) {
        return record;
      }
    }
    const unconfirmed = new MandateError(
      error.status,
      {
        ...error.problem,
        detail: `${error.detail ?? "the record was completed before"}; an earlier attempt of this call, whose answer was lost, may have completed it`,
      },
      { cause: error, headers: error.headers },
    );
    t.unconfirmed.add(unconfirmed);
    throw unconfirmed;
  }
}

/** `POST /v1/vat/aar/{aar_id}/feedback`: a human's one rating of a completed action. */
export function feedback(t: Transport, aarId: string, request: FeedbackRequest, options: RequestOptions = {}): Promise<FeedbackResponse> {
  return t.call("POST", `/v1/vat/aar/${segment(aarId)}/feedback`, t.key(), request, { ...options, retry: "once" });
}

/** `GET /v1/vat/reputation/{agent_id}`; the id bare or as `agent:<id>`. */
export function reputation(t: Transport, agentId: string, options: RequestOptions = {}): Promise<AgentReputation> {
  return t.call("GET", `/v1/vat/reputation/${segment(agentId)}`, t.key(), undefined, { ...options, retry: "read" });
}

/** `GET /v1/vat/aar/provenance/{provenance_ref}`: the workflow summary. */
export function provenance(t: Transport, provenanceRef: string, options: RequestOptions = {}): Promise<ProvenanceSummary> {
  return t.call("GET", `/v1/vat/aar/provenance/${segment(provenanceRef)}`, t.key(), undefined, { ...options, retry: "read" });
}

/** `GET /v1/vat/aar/provenance/{provenance_ref}/graph`: tokens and records of a workflow. */
export function graph(t: Transport, provenanceRef: string, options: RequestOptions = {}): Promise<WorkflowGraph> {
  return t.call("GET", `/v1/vat/aar/provenance/${segment(provenanceRef)}/graph`, t.key(), undefined, { ...options, retry: "read" });
}

/** `GET /v1/vat/aar/{aar_id}`: one full record. */
export function record(t: Transport, aarId: string, options: RequestOptions = {}): Promise<ActionRecord> {
  return t.call("GET", `/v1/vat/aar/${segment(aarId)}`, t.key(), undefined, { ...options, retry: "read" });
}

/** `GET /v1/vat/aar`: one page of records, newest first; `rated: false` for the completed records awaiting a rating. */
export function recordsPage(t: Transport, query: RecordQuery = {}, options: RequestOptions = {}): Promise<RecordPage> {
  return t.call("GET", `/v1/vat/aar${queryString(query)}`, t.key(), undefined, { ...options, retry: "read" });
}

/** Every record matching `query`, newest first, fetching page after page as iteration goes on. */
export async function* records(
  client: MandateClient,
  query: RecordQuery = {},
  options: RequestOptions = {},
): AsyncGenerator<ActionRecord, void, undefined> {
  let cursor = query.cursor;
  do {
    const page = await client.recordsPage({ ...query, cursor }, options);
    yield* page.records;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
}

/** `GET /v1/vat/workflows`: one page of workflows, newest activity first. */
export function workflowsPage(t: Transport, query: WorkflowQuery = {}, options: RequestOptions = {}): Promise<WorkflowPage> {
  return t.call("GET", `/v1/vat/workflows${queryString(query)}`, t.key(), undefined, { ...options, retry: "read" });
}

/** Every workflow matching `query`, page after page. */
export async function* workflows(
  client: MandateClient,
  query: WorkflowQuery = {},
  options: RequestOptions = {},
): AsyncGenerator<Workflow, void, undefined> {
  let cursor = query.cursor;
  do {
    const page = await client.workflowsPage({ ...query, cursor }, options);
    yield* page.workflows;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
}

/** `MandateClient.rateWorkflow`, documented there. */
export function rateWorkflow(t: Transport, request: RateWorkflowRequest, options: RequestOptions = {}): Promise<RateWorkflowResponse> {
  return t.call("POST", "/v1/vat/aar/feedback", t.key(), request, { ...options, retry: "once" });
}

/** `GET /v1/vat/inbox/counts`: approvals pending and completed records awaiting a rating. */
export function inboxCounts(t: Transport, options: RequestOptions = {}): Promise<InboxCounts> {
  return t.call("GET", "/v1/vat/inbox/counts", t.key(), undefined, { ...options, retry: "read" });
}

/** `MandateClient.agentsPage`, documented there. */
export function agentsPage(t: Transport, query: AgentQuery = {}, options: RequestOptions = {}): Promise<AgentPage> {
  return t.call("GET", `/v1/vat/agents${queryString(query)}`, t.key(), undefined, { ...options, retry: "read" });
}

/** Every agent matching `query`, in its order, page after page. */
export async function* agents(
  client: MandateClient,
  query: AgentQuery = {},
  options: RequestOptions = {},
): AsyncGenerator<AgentSummary, void, undefined> {
  let cursor = query.cursor;
  do {
    const page = await client.agentsPage({ ...query, cursor }, options);
    yield* page.agents;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
}

/** `MandateClient.agentHistory`, documented there. */
export function agentHistory(
  t: Transport,
  agentId: string,
  query: AgentHistoryQuery = {},
  options: RequestOptions = {},
): Promise<AgentHistory> {
  return t.call("GET", `/v1/vat/agents/${segment(agentId)}/history${queryString(query)}`, t.key(), undefined, { ...options, retry: "read" });
}

/** `GET /v1/vat/overview`: the organisation over `window` (`24h` by hour, the default; `7d` or `30d` by day). */
export function overview(t: Transport, query: OverviewQuery = {}, options: RequestOptions = {}): Promise<Overview> {
  return t.call("GET", `/v1/vat/overview${queryString(query)}`, t.key(), undefined, { ...options, retry: "read" });
}

/** The dashboard's page of a workflow: its chain of tokens and every record. */
export function workflowUrl(t: Transport, provenanceRef: string): string {
  return `${t.base}/#/workflow/${segment(provenanceRef)}`;
}

/** `MandateClient.act`, documented there. */
export async function act<T>(
  t: Transport,
  client: MandateClient,
  token: string,
  request: ActRequest,
  run: (context: ActContext) => T | Promise<T>,
  options: ActOptions<T> = {},
): Promise<T> {
  const auth: AgentAuth = { token, key: options.key, traceparent: options.traceparent };
  if (options.relayKey !== undefined) {
    auth.relayKey = options.relayKey;
  }
  if (options.timeoutMs !== undefined) {
    auth.timeoutMs = options.timeoutMs;
  }
  // Arguments the token's own rules refuse are refused here: nothing is sent.
  const offline = checkArgsOffline(token, request);
  if (offline !== undefined) {
    throw offline;
  }
  // The caller's signal abandons the asking; the completion is sent whatever happens.
  // A relay forwards the client's proof to `authorize` alone, which uses it up.
  const asking: AgentAuth = { ...auth, signal: options.signal };
  if (options.forwardedProof !== undefined) {
    asking.forwardedProof = options.forwardedProof;
  }
  let authorization = await client.authorize(request, asking);
  const pending = authorization.approval;
  if (!authorization.authorized && pending?.status === "pending") {
    const approval: PendingApproval = {
      ...pending,
      aar_id: authorization.aar_id,
      url: client.approvalUrl(pending.approval_id),
    };
    await options.onApproval?.(approval);
    if (options.waitForApproval === undefined) {
      throw new MandateApprovalPending(approval);
    }
    authorization = await awaitDecision(t, client, authorization, pending, options.waitForApproval, {
      ...auth,
      signal: options.signal,
    });
    if (!authorization.authorized && authorization.approval?.status === "pending") {
      throw new MandateApprovalPending(approval);
    }
  }
  if (!authorization.authorized) {
    const reason = authorization.reason ?? "action_not_permitted";
    throw new MandateRefusal(
      reason,
      authorization.aar_id,
      `${request.action} on ${request.resource} was refused: ${reason}`,
    );
  }
  const context: ActContext = {
    aarId: authorization.aar_id,
    provenanceRef: authorization.provenance_ref,
    authorization,
  };
  if (options.signal !== undefined) {
    context.signal = options.signal;
  }
  // The key makes a retried completion (a lost answer) harmless.
  const completion: AgentAuth = { ...auth, idempotencyKey: `complete-${authorization.aar_id}` };
  let output: T;
  try {
    output = await run(context);
  } catch (error) {
    const result = options.signal?.aborted ? "cancelled" : "error";
    await completeOnce(t, client, authorization.aar_id, { result }, completion);
    throw error;
  }
  const hash = (options.resultHash ?? outputHash)(output);
  const body: CompleteRequest = { result: "success" };
  if (hash !== undefined) {
    body.result_hash = hash;
  }
  await completeOnce(t, client, authorization.aar_id, body, completion);
  return output;
}

/**
 * `complete` for `act`: a record refused as completed already after an
 * attempt whose answer was lost was completed by that attempt (only this
 * call completes the record `act` just authorized).
 */
export async function completeOnce(
  t: Transport,
  client: MandateClient,
  aarId: string,
  request: CompleteRequest,
  auth: AgentAuth,
): Promise<void> {
  try {
    await client.complete(aarId, request, auth);
  } catch (error) {
    if (!(error instanceof MandateError && t.unconfirmed.has(error))) {
      throw error;
    }
  }
}
