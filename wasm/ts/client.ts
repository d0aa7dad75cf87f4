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

import {
  AgentKey,
  Verifier,
  decodeTokenUnverified,
  type AssuranceLevel,
  type Claims,
  type Constraints,
  type Jwks,
  type Policy,
  type PublicJwk,
  type VerifierOptions,
  type Violation,
  type WorkflowSummary,
} from "./mandate_wasm.js";

/** The part of the Fetch API the client uses; `globalThis.fetch` fits. */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string },
) => Promise<{ ok: boolean; status: number; statusText: string; text(): Promise<string> }>;

export interface MandateClientOptions {
  /** The server's address, e.g. `https://mandate.example.com` (a path prefix is kept). */
  baseUrl: string;
  /** An API key (`mk_…`) for the calls that need one. */
  apiKey?: string;
  /** A fetch implementation; default `globalThis.fetch`. */
  fetch?: FetchLike;
}

/** Options of a call that creates something. */
export interface WriteOptions {
  /**
   * Sent as `Idempotency-Key` (1–255 visible ASCII characters): a retry with
   * the same key and body gets the first answer and creates nothing new.
   * Honoured by the issue calls, `recordAction`, `authorize` and `delegate`.
   */
  idempotencyKey?: string;
}

/** How an agent call presents its token. */
export interface AgentAuth extends WriteOptions {
  /**
   * The token's compact JWT: sent as `Authorization: Bearer`, or, when the
   * token is bound to a key (`cnf`), as `Authorization: DPoP` with a proof
   * signed by `key`. Without it, recordAction and authorize rely on `vat_jti`.
   */
  token?: string;
  /** The agent's own key, for a bound token: it signs a DPoP proof per request. */
  key?: AgentKey;
}

export type ActionResult = "success" | "error" | "timeout" | "cancelled";
export type Rating = "approved" | "flagged" | "rejected";
export type RecordStatus = "pending" | "completed" | "denied";
export type TokenState = "active" | "revoked" | "expired";

export interface IssueL1Request {
  developer_email: string;
  agent_id: string;
  resources: string[];
  actions: string[];
  constraints?: Constraints;
  policy?: Policy;
  /** Default 3600, at most 2592000. */
  ttl_seconds?: number;
  /** Binds the token to this key (`agentKey.publicJwk`): each use then needs the key's proof. */
  holder_key?: PublicJwk;
}

export interface IssueL2Request {
  /** An OIDC ID token from an identity provider the server is configured to trust. */
  id_token: string;
  /** The nonce the sign-in was started with, checked against the ID token's. */
  nonce?: string;
  agent_id: string;
  resources: string[];
  actions: string[];
  constraints?: Constraints;
  policy?: Policy;
  /** Default 3600, at most 2592000. */
  ttl_seconds?: number;
  /** Binds the token to this key. */
  holder_key?: PublicJwk;
}

export interface AuthCaptureRequest {
  /** The captured verification data, or a provider's signed result (`{ attestation: "<JWS>" }`). */
  evidence: Record<string, unknown>;
  /** The name of a verifier configured on the server. */
  verifier: string;
  agent_id: string;
  resources: string[];
  actions: string[];
  constraints?: Constraints;
  policy?: Policy;
  /** Default 3600, at most 2592000. */
  ttl_seconds?: number;
  /** Binds the token to this key. */
  holder_key?: PublicJwk;
}

export interface IssuedToken {
  jti: string;
  provenance_ref: string;
  compact_jwt: string;
  /** `DPoP` for a token bound to a key, else `Bearer`. */
  token_type: "Bearer" | "DPoP";
  claims: Claims;
  expires_at: string;
}

export interface RecordActionRequest {
  /** The acting token; may be left out when `AgentAuth.token` is given. */
  vat_jti?: string;
  action: string;
  resource: string;
  result: ActionResult;
  /** `sha256:<64 hex>`; see `sha256Ref`. */
  result_hash?: string;
  spend_usd?: number;
}

export interface RecordActionResponse {
  recorded: true;
  aar_id: string;
  provenance_ref: string;
  trust_score: number;
  delegation_depth: number;
}

export interface AuthorizeRequest {
  vat_jti?: string;
  action: string;
  resource: string;
  /** Reserved against the budget until `complete`. */
  spend_usd?: number;
}

export interface AuthorizeResponse {
  authorized: boolean;
  aar_id: string;
  trust_score: number;
  provenance_ref: string;
  human_ref: string;
  assurance_level: AssuranceLevel;
  /** Why not, when `authorized` is false. */
  reason?: string;
}

export interface CompleteRequest {
  result: ActionResult;
  result_hash?: string;
  /** The actual spend; replaces the reservation. */
  spend_usd?: number;
}

export interface ActionRecord {
  aar_id: string;
  provenance_ref: string;
  /** The record's token; absent from the answer to a completion made by `aar_id` alone. */
  vat_jti?: string;
  agent_id: string;
  action: string;
  resource: string;
  status: RecordStatus;
  result?: ActionResult;
  deny_reason?: string;
  result_hash?: string;
  spend_usd: number;
  trust_score: number;
  delegation_depth: number;
  human_ref: string;
  assurance_level: AssuranceLevel;
  rating?: Rating;
  note?: string;
  feedback_at?: string;
  created_at: string;
  completed_at?: string;
  /** The child token, on a `delegate` record. */
  delegated_jti?: string;
  /** What the agent proved: `token` (the token itself) or `jti` (a bare vat_jti, which proves nothing). */
  credential: "token" | "jti";
}

export interface FeedbackRequest {
  rating: Rating;
  /** At most 2 KiB. */
  note?: string;
}

export interface FeedbackResponse {
  aar_id: string;
  rating: Rating;
  feedback_at: string;
}

export interface AgentReputation {
  /** `agent:<id>`. */
  agent_id: string;
  total_actions: number;
  execution_score: number;
  feedback_score: number;
  combined_reputation: number;
  has_human_feedback: boolean;
  counts: {
    successes: number;
    failures: number;
    pending: number;
    approved: number;
    flagged: number;
    rejected: number;
  };
}

export interface HumanNode {
  id: string;
  kind: "human";
  human_ref: string;
  assurance_level: AssuranceLevel;
}

export interface TokenNode {
  id: string;
  kind: "token";
  agent_id: string;
  delegation_depth: number;
  status: TokenState;
  parent?: string;
  expires_at: string;
  revoked_at?: string;
}

export interface RecordNode {
  id: string;
  kind: "record";
  agent_id: string;
  action: string;
  resource: string;
  status: RecordStatus;
  result?: ActionResult;
  deny_reason?: string;
  rating?: Rating;
  created_at: string;
}

export interface GraphEdge {
  from: string;
  to: string;
  kind: "issued" | "delegated" | "action";
}

export interface WorkflowGraph {
  provenance_ref: string;
  human_ref: string;
  nodes: Array<HumanNode | TokenNode | RecordNode>;
  edges: GraphEdge[];
}

export interface DelegateRequest {
  /** The parent's jti, if given, must be that of `AgentAuth.token`, which delegating needs. */
  vat_jti?: string;
  agent_id: string;
  resources: string[];
  actions: string[];
  constraints?: Constraints;
  policy?: Policy;
  /** Default: the parent's end. */
  ttl_seconds?: number;
  /** Binds the child to the sub-agent's key; by default a child of a bound token keeps its parent's key. */
  holder_key?: PublicJwk;
}

export interface DelegatedToken extends IssuedToken {
  delegation_depth: number;
  /** The parent's `delegate` record. */
  aar_id: string;
}

export interface RevokeRequest {
  jti: string;
  reason?: string;
  /** An agent revoking with its own token (`AgentAuth.token`) may name its jti here too. */
  vat_jti?: string;
}

export interface RevokeResponse {
  /** The revoked token and its descendants: all, or the first 1000 when `truncated`. */
  revoked: string[];
  revoked_count: number;
  truncated: boolean;
  revoked_at: string;
}

export interface TokenStatus {
  jti: string;
  status: TokenState;
  agent_id: string;
  parent?: string;
  delegation_depth: number;
  provenance_ref: string;
  issued_at: string;
  expires_at: string;
  revoked_at?: string;
  revoke_reason?: string;
  /** A page of descendants, by depth then issue time. */
  descendants: Array<{
    jti: string;
    agent_id: string;
    parent: string;
    delegation_depth: number;
    status: TokenState;
  }>;
  /** Pass back as `cursor` for the next page; absent on the last. */
  next_cursor?: string;
}

export interface TokenQuery {
  /** Descendants per page, 1–1000; default 500. */
  limit?: number;
  cursor?: string;
}

/** A time bound: ISO 8601 text or a Date. */
export type Instant = string | Date;

export interface RecordQuery {
  agent_id?: string;
  action?: string;
  result?: ActionResult | "denied" | "pending";
  resource?: string;
  provenance_ref?: string;
  vat_jti?: string;
  since?: Instant;
  until?: Instant;
  /** Page size, 1–500; default 50. */
  limit?: number;
  cursor?: string;
}

export interface RecordPage {
  records: ActionRecord[];
  /** Absent on the last page. */
  next_cursor?: string;
}

export interface WorkflowQuery {
  agent_id?: string;
  provenance_ref?: string;
  since?: Instant;
  until?: Instant;
  limit?: number;
  cursor?: string;
}

export interface Workflow {
  provenance_ref: string;
  root_jti: string;
  root_agent_id: string;
  human_ref: string;
  assurance_level: AssuranceLevel;
  total_records: number;
  created_at: string;
  last_activity: string;
}

export interface WorkflowPage {
  workflows: Workflow[];
  next_cursor?: string;
}

/** An RFC 9457 problem body as the server sends it. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  code?: string;
  /** The denied record written for a refused action. */
  aar_id?: string;
  /** The offending input field. */
  field?: string;
  /** Every widening of a refused delegation. */
  violations?: Violation[];
  /** The precise rule, when `code` names a family (`dpop_invalid` → `dpop_replayed`). */
  reason?: string;
  [member: string]: unknown;
}

/**
 * A refused or failed call. `status` is the HTTP status, or 0 when no answer
 * came (`network_error`) or the answer was unusable (`invalid_response`,
 * or the key set's code from `verifier()`).
 */
export class MandateError extends Error {
  readonly status: number;
  readonly code: string;
  readonly title: string;
  readonly detail: string | undefined;
  /** The whole problem body. */
  readonly problem: Problem;

  constructor(status: number, problem: Problem, options?: { cause?: unknown }) {
    const code = problem.code ?? "http_error";
    const title = problem.title ?? `HTTP ${status}`;
    super(problem.detail ? `${title}: ${problem.detail}` : title, options);
    this.name = "MandateError";
    this.status = status;
    this.code = code;
    this.title = title;
    this.detail = problem.detail;
    this.problem = problem;
  }
}

function queryString(query: object): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query) as Array<[string, unknown]>) {
    if (value !== undefined) {
      params.set(name, value instanceof Date ? value.toISOString() : String(value));
    }
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

const segment = encodeURIComponent;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The `Authorization` value and headers a request carries. */
type Credential = { authorization: string; dpop?: string } | undefined;

/** A new agent key from the platform's cryptographic random generator. */
export function generateAgentKey(): AgentKey {
  const key: unknown = AgentKey.generate();
  if (key instanceof AgentKey) {
    return key;
  }
  const error = (key as { error: { code: string; message: string } }).error;
  throw new MandateError(0, { code: error.code, title: "No agent key", detail: error.message });
}

/** A client of one Mandate server. */
export class MandateClient {
  readonly #base: string;
  readonly #apiKey: string | undefined;
  readonly #fetch: FetchLike;

  constructor(options: MandateClientOptions) {
    this.#base = String(options.baseUrl).replace(/\/+$/, "");
    this.#apiKey = options.apiKey;
    const fetch = options.fetch ?? (globalThis as { fetch?: FetchLike }).fetch;
    if (fetch === undefined) {
      throw new TypeError("MandateClient needs a fetch implementation");
    }
    // Called unbound: a browser's fetch refuses any `this` but the global.
    this.#fetch = (url, init) => fetch(url, init);
  }

  /** The API key as a credential. */
  #key(): Credential {
    return this.#apiKey === undefined ? undefined : { authorization: `Bearer ${this.#apiKey}` };
  }

  /**
   * An agent's token as a credential for one request: Bearer, or for a bound
   * token DPoP with a proof by `auth.key` for this method and URL.
   */
  #agent(method: string, path: string, auth: AgentAuth | undefined): Credential {
    if (auth?.token === undefined) {
      return undefined;
    }
    const decoded = decodeTokenUnverified(auth.token);
    const jkt = decoded.ok ? decoded.claims.cnf?.jkt : undefined;
    if (jkt === undefined) {
      return { authorization: `Bearer ${auth.token}` };
    }
    if (auth.key === undefined || auth.key.jkt !== jkt) {
      throw new MandateError(0, {
        code: "dpop_key_missing",
        title: "Proof of possession needed",
        detail: "the token is bound to a key: pass that AgentKey as `key` so each call carries its proof",
      });
    }
    const made = auth.key.proof({ method, url: `${this.#base}${path}`, accessToken: auth.token });
    if (!made.ok) {
      throw new MandateError(0, { code: made.error.code, title: "No proof", detail: made.error.message });
    }
    return { authorization: `DPoP ${auth.token}`, dpop: made.proof };
  }

  async #call<T>(
    method: "GET" | "POST",
    path: string,
    credential: Credential,
    body?: unknown,
    options?: WriteOptions,
  ): Promise<T> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (credential !== undefined) {
      headers.authorization = credential.authorization;
      if (credential.dpop !== undefined) {
        headers.dpop = credential.dpop;
      }
    }
    if (options?.idempotencyKey !== undefined) {
      headers["idempotency-key"] = options.idempotencyKey;
    }
    const init: { method: string; headers: Record<string, string>; body?: string } = { method, headers };
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await this.#fetch(`${this.#base}${path}`, init);
    } catch (cause) {
      throw new MandateError(
        0,
        { code: "network_error", title: "Network error", detail: String(cause) },
        { cause },
      );
    }
    const text = await response.text();
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      data = undefined;
    }
    if (!response.ok) {
      const problem: Problem = isObject(data) ? data : { title: response.statusText || undefined };
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

  /** `POST /v1/vat/issue/l1`: a root token for an agent, on the API key. */
  issueL1(request: IssueL1Request, options?: WriteOptions): Promise<IssuedToken> {
    return this.#call("POST", "/v1/vat/issue/l1", this.#key(), request, options);
  }

  /** `POST /v1/vat/issue/l2`: a root token at L2 (trust 0.7), on the API key and the human's OIDC ID token. */
  issueL2(request: IssueL2Request, options?: WriteOptions): Promise<IssuedToken> {
    return this.#call("POST", "/v1/vat/issue/l2", this.#key(), request, options);
  }

  /** `POST /v1/vat/auth/capture`: a root token at L3 (trust 0.95), once a configured verifier accepts the evidence. */
  authCapture(request: AuthCaptureRequest, options?: WriteOptions): Promise<IssuedToken> {
    return this.#call("POST", "/v1/vat/auth/capture", this.#key(), request, options);
  }

  /** `POST /v1/vat/record/action`: an action done and its result, in one step. */
  async recordAction(request: RecordActionRequest, auth?: AgentAuth): Promise<RecordActionResponse> {
    const path = "/v1/vat/record/action";
    return this.#call("POST", path, this.#agent("POST", path, auth), request, auth);
  }

  /** `POST /v1/vat/authorize`: asks before acting; a refusal is `authorized: false`, not an error. */
  async authorize(request: AuthorizeRequest, auth?: AgentAuth): Promise<AuthorizeResponse> {
    const path = "/v1/vat/authorize";
    return this.#call("POST", path, this.#agent("POST", path, auth), request, auth);
  }

  /**
   * `POST /v1/vat/aar/{aar_id}/complete`: how an authorized action ended. A
   * record authorized with the token itself is completed with it (`auth`).
   */
  async complete(aarId: string, request: CompleteRequest, auth?: AgentAuth): Promise<ActionRecord> {
    const path = `/v1/vat/aar/${segment(aarId)}/complete`;
    return this.#call("POST", path, this.#agent("POST", path, auth), request);
  }

  /** `POST /v1/vat/aar/{aar_id}/feedback`: a human's one rating of a completed action. */
  feedback(aarId: string, request: FeedbackRequest): Promise<FeedbackResponse> {
    return this.#call("POST", `/v1/vat/aar/${segment(aarId)}/feedback`, this.#key(), request);
  }

  /** `GET /v1/vat/reputation/{agent_id}`; the id bare or as `agent:<id>`. */
  reputation(agentId: string): Promise<AgentReputation> {
    return this.#call("GET", `/v1/vat/reputation/${segment(agentId)}`, this.#key());
  }

  /** `GET /v1/vat/aar/provenance/{provenance_ref}`: the workflow summary. */
  provenance(provenanceRef: string): Promise<WorkflowSummary> {
    return this.#call("GET", `/v1/vat/aar/provenance/${segment(provenanceRef)}`, this.#key());
  }

  /** `GET /v1/vat/aar/provenance/{provenance_ref}/graph`: tokens and records of a workflow. */
  graph(provenanceRef: string): Promise<WorkflowGraph> {
    return this.#call("GET", `/v1/vat/aar/provenance/${segment(provenanceRef)}/graph`, this.#key());
  }

  /** `GET /v1/vat/aar/{aar_id}`: one full record. */
  record(aarId: string): Promise<ActionRecord> {
    return this.#call("GET", `/v1/vat/aar/${segment(aarId)}`, this.#key());
  }

  /** `GET /v1/vat/aar`: one page of records, newest first. */
  recordsPage(query: RecordQuery = {}): Promise<RecordPage> {
    return this.#call("GET", `/v1/vat/aar${queryString(query)}`, this.#key());
  }

  /** Every record matching `query`, newest first, fetching page after page as iteration goes on. */
  async *records(query: RecordQuery = {}): AsyncGenerator<ActionRecord, void, undefined> {
    let cursor = query.cursor;
    do {
      const page = await this.recordsPage({ ...query, cursor });
      yield* page.records;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /** `GET /v1/vat/workflows`: one page of workflows, newest activity first. */
  workflowsPage(query: WorkflowQuery = {}): Promise<WorkflowPage> {
    return this.#call("GET", `/v1/vat/workflows${queryString(query)}`, this.#key());
  }

  /** Every workflow matching `query`, page after page. */
  async *workflows(query: WorkflowQuery = {}): AsyncGenerator<Workflow, void, undefined> {
    let cursor = query.cursor;
    do {
      const page = await this.workflowsPage({ ...query, cursor });
      yield* page.workflows;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /**
   * `POST /v1/vat/delegate`: a narrower child token. Delegating changes
   * authority, so it needs the parent token itself as `auth.token` (and its
   * `key` when bound); a `vat_jti` alone is refused.
   */
  async delegate(request: DelegateRequest, auth?: AgentAuth): Promise<DelegatedToken> {
    const path = "/v1/vat/delegate";
    return this.#call("POST", path, this.#agent("POST", path, auth), request, auth);
  }

  /**
   * `POST /v1/vat/revoke`: revokes a token and all its descendants. On the
   * API key, or, with `auth.token`, on the revoking agent's own token (an
   * ancestor of the target, or the target itself).
   */
  async revoke(request: RevokeRequest, auth?: AgentAuth): Promise<RevokeResponse> {
    const path = "/v1/vat/revoke";
    const credential = auth ? this.#agent("POST", path, auth) : this.#key();
    return this.#call("POST", path, credential, request);
  }

  /** `GET /v1/vat/tokens/{jti}`: a token's status and a page of its descendants. */
  token(jti: string, query: TokenQuery = {}): Promise<TokenStatus> {
    return this.#call("GET", `/v1/vat/tokens/${segment(jti)}${queryString(query)}`, this.#key());
  }

  /** `GET /.well-known/jwks.json`: the public keys tokens are signed with. */
  jwks(): Promise<Jwks> {
    return this.#call("GET", "/.well-known/jwks.json", undefined);
  }

  /**
   * Fetches the key set once and returns a `Verifier` for it. Rejects with a
   * MandateError (status 0, the key set's code) when the keys are unusable.
   * Free the verifier with `free()` when done, or let the garbage collector.
   */
  async verifier(options?: VerifierOptions): Promise<Verifier> {
    const verifier = new Verifier(await this.jwks(), options);
    const error = verifier.error;
    if (error !== null) {
      verifier.free();
      throw new MandateError(0, { code: error.code, title: "Unusable key set", detail: error.message });
    }
    return verifier;
  }
}
