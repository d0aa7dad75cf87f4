// The reviewer's endpoints (issue 20): the inbox's counts and unrated
// records, rating a workflow's successes at once, the agents list and an
// agent's history, the overview, and the tokens list. Typed here from the
// agreed contract until the server that serves them lands and the SDK's
// types are generated from its OpenAPI document; then these calls move into
// mandate-sdk's `MandateClient` and this module goes (docs/decisions.md,
// "The reviewer's dashboard"). Refusals are the SDK's `MandateError`.

import { type AssuranceLevel, MandateError, type Problem, type Rating, type RecordPage } from "mandate-sdk/web";
import { apiKey } from "./session.js";

export type Window = "24h" | "7d" | "30d";

export const WINDOWS: Window[] = ["24h", "7d", "30d"];

/** `GET /v1/vat/inbox/counts`. */
export interface InboxCounts {
  approvals_pending: number;
  records_unrated: number;
}

/** `GET /v1/vat/aar?rated=false&…`: completed records nobody has rated, filtered like the records list. */
export interface UnratedQuery {
  agent_id?: string;
  action?: string;
  result?: string;
  since?: string;
  until?: string;
  limit?: number;
  cursor?: string;
}

/** `POST /v1/vat/aar/feedback`: one rating for every unrated success of a workflow. */
export interface BulkFeedback {
  provenance_ref: string;
  result: "success";
  rating: Rating;
  note?: string;
}

export interface BulkFeedbackResponse {
  rated: number;
  aar_ids: string[];
}

/** Outcomes of one day (UTC), oldest first. */
export interface DayOutcomes {
  day: string;
  successes: number;
  errors: number;
  denied: number;
}

export interface AgentSummary {
  /** `agent:<id>`. */
  agent_id: string;
  combined_reputation: number;
  execution_score: number;
  feedback_score: number;
  total_actions: number;
  last_activity?: string;
  window: { records: number; successes: number; errors: number; denied: number; denial_rate: number; error_rate: number };
  /** The last 14 days. */
  recent: DayOutcomes[];
}

export type AgentSort = "agent_id" | "reputation" | "activity" | "actions" | "denial_rate" | "error_rate";

export interface AgentQuery {
  window?: Window;
  q?: string;
  sort?: AgentSort;
  order?: "asc" | "desc";
  limit?: number;
  cursor?: string;
}

export interface AgentPage {
  agents: AgentSummary[];
  next_cursor?: string;
}

export interface AgentDay {
  day: string;
  records: number;
  successes: number;
  errors: number;
  denied: number;
  approved: number;
  flagged: number;
  rejected: number;
  combined_reputation: number;
}

export interface AgentHistory {
  agent_id: string;
  days: AgentDay[];
}

export interface OverviewBucket {
  start: string;
  records: number;
  denied: number;
  errors: number;
  ratings: number;
  approvals_decided: number;
  approval_wait_ms_mean?: number;
  approval_wait_ms_max?: number;
}

export interface BudgetUse {
  jth: string;
  agent_id: string;
  provenance_ref: string;
  budget: "max_spend_usd" | "max_actions";
  used: number;
  limit: number;
  percent: number;
}

export interface Overview {
  window: Window;
  from: string;
  to: string;
  bucket: "hour" | "day";
  series: OverviewBucket[];
  totals: {
    records: number;
    denied: number;
    errors: number;
    ratings: number;
    approvals_decided: number;
    denial_rate: number;
    error_rate: number;
    approval_wait_ms_mean?: number;
  };
  budgets: BudgetUse[];
}

export type TokenState = "active" | "revoked" | "expired";

export interface TokenItem {
  jti: string;
  agent_id: string;
  parent?: string;
  delegation_depth: number;
  provenance_ref: string;
  human_ref: string;
  /** A label the organisation knows the human by (an e-mail, a name), when it has one. */
  human_label?: string;
  assurance_level: AssuranceLevel;
  status: TokenState;
  issued_at: string;
  expires_at: string;
  revoked_at?: string;
}

export interface TokenListQuery {
  agent_id?: string;
  human_ref?: string;
  provenance_ref?: string;
  status?: TokenState;
  limit?: number;
  cursor?: string;
}

export interface TokenList {
  tokens: TokenItem[];
  next_cursor?: string;
}

function query(params: object): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== "") {
      search.set(name, String(value));
    }
  }
  const text = search.toString();
  return text === "" ? "" : `?${text}`;
}

async function call<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  const key = apiKey();
  if (key !== null) {
    headers.authorization = `Bearer ${key}`;
  }
  if (body !== undefined) {
    headers["content-type"] = "application/json";
  }
  let response: Response;
  try {
    response = await fetch(`${location.origin}${path}`, {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
    });
  } catch (cause) {
    throw new MandateError(0, { code: "network_error", title: "Network error", detail: String(cause) }, { cause });
  }
  let data: unknown;
  try {
    data = await response.json();
  } catch {
    data = undefined;
  }
  if (!response.ok) {
    const problem: Problem =
      typeof data === "object" && data !== null ? (data as Problem) : { code: "http_error", title: response.statusText };
    throw new MandateError(response.status, problem);
  }
  if (data === undefined) {
    throw new MandateError(response.status, {
      code: "invalid_response",
      title: "Invalid response",
      detail: "the server did not answer with JSON",
    });
  }
  return data as T;
}

export function inboxCounts(): Promise<InboxCounts> {
  return call("GET", "/v1/vat/inbox/counts");
}

export function unratedRecords(filters: UnratedQuery): Promise<RecordPage> {
  return call("GET", `/v1/vat/aar${query({ rated: "false", ...filters })}`);
}

export function rateSuccesses(request: BulkFeedback): Promise<BulkFeedbackResponse> {
  return call("POST", "/v1/vat/aar/feedback", request);
}

export function agents(filters: AgentQuery): Promise<AgentPage> {
  return call("GET", `/v1/vat/agents${query(filters)}`);
}

export function agentHistory(agentId: string, days: number): Promise<AgentHistory> {
  return call("GET", `/v1/vat/agents/${encodeURIComponent(agentId)}/history${query({ days })}`);
}

export function overview(window: Window): Promise<Overview> {
  return call("GET", `/v1/vat/overview${query({ window })}`);
}

export function tokens(filters: TokenListQuery): Promise<TokenList> {
  return call("GET", `/v1/vat/tokens${query(filters)}`);
}

