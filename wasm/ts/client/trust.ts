// Trust: vouches between the organisation's humans and agents, each
// agent's trust, the trust graph and an agent's signed trust statement.

import type { MandateClient } from "./index.js";
import { type AgentAuth, type Credential, queryString, type RequestOptions, segment, type Transport } from "./transport.js";
import type { Instant, Narrowed, Schemas, Sent } from "./types.js";

// The trust graph (docs/api.md, "Trust"): vouches between the
// organisation's humans and agents, and the trust score each agent gets
// from its reputation and the vouches it receives.

/** Who vouches: a human by the API key it vouched with (`key_…`), or an agent by its id. */
export type Voucher = Sent<Schemas["VoucherBody"]>;

/**
 * `POST /v1/trust/vouches`: a vouch for an agent of the organisation (bare
 * or as `agent:<id>`), `weight` in (0, 1], an optional `reason` (at most 512
 * characters) and `expires_at` (RFC 3339 text or a Date, in the future;
 * without it, until withdrawn).
 */
export type VouchRequest = Omit<Schemas["VouchRequest"], "expires_at"> & { expires_at?: Instant | null };

/** A vouch: `withdrawn_at` once withdrawn; one past its `expires_at` no longer counts. */
export type Vouch = Sent<Schemas["VouchBody"]>;

/**
 * `GET /v1/trust/agents/{agent_id}`: an agent's trust and its parts, as the
 * server last computed them (`computed_at`): `trust = min(ceiling, decay ×
 * (0.5 × reputation + 0.5 × graph))`, each in [0, 1]; `vouches` it receives
 * and `vouched` it gives, those in force.
 */
export type AgentTrust = Sent<Schemas["AgentTrustBody"]>;

/**
 * Options of `trustGraphPage`: pages by agent id (`limit` 1–1000, default
 * 100). Written here: the document names this operation `graph`, as it
 * names the workflow's graph.
 */
export interface TrustGraphQuery {
  cursor?: string | null;
  limit?: number | null;
}

/** An agent of the trust graph and its trust. */
export type TrustGraphNode = Sent<Schemas["TrustNode"]>;
/** A vouch in force of the trust graph: from `voucher` to `agent_id`, an agent of the page. */
export type TrustGraphEdge = Sent<Schemas["TrustEdge"]>;
/** `GET /v1/trust/graph`: a page of agents (by agent id) and the vouches in force they receive. */
export type TrustGraphPage = Narrowed<Sent<Schemas["TrustGraphPage"]>, { nodes: TrustGraphNode[]; edges: TrustGraphEdge[] }>;

/** `MandateClient.vouch`, documented there. */
export async function vouch(t: Transport, request: VouchRequest, auth: AgentAuth = {}): Promise<Vouch> {
  const path = "/v1/trust/vouches";
  const credential = (): Credential => (auth.token === undefined ? t.key() : t.agent("POST", path, auth));
  const { token: _token, key: _key, traceparent: _trace, idempotencyKey: _unused, ...options } = auth;
  const body: Record<string, unknown> = { ...request };
  if (request.expires_at instanceof Date) {
    body.expires_at = request.expires_at.toISOString();
  }
  return t.call("POST", path, credential, body, { ...options, retry: "once" });
}

/** `MandateClient.withdrawVouch`, documented there. */
export async function withdrawVouch(t: Transport, vouchId: string, auth: AgentAuth = {}): Promise<Vouch> {
  const path = `/v1/trust/vouches/${segment(vouchId)}`;
  const credential = (): Credential => (auth.token === undefined ? t.key() : t.agent("DELETE", path, auth));
  const { token: _token, key: _key, traceparent: _trace, idempotencyKey: _unused, ...options } = auth;
  return t.call("DELETE", path, credential, undefined, { ...options, retry: "once" });
}

/** `GET /v1/trust/agents/{agent_id}`: the agent's trust, its parts and the active vouches it receives and gives. */
export function trust(t: Transport, agentId: string, options: RequestOptions = {}): Promise<AgentTrust> {
  return t.call("GET", `/v1/trust/agents/${segment(agentId)}`, t.key(), undefined, { ...options, retry: "read" });
}

/** `GET /v1/trust/graph`: one page of the organisation's trust graph, agents in id order with their vouches. */
export function trustGraphPage(t: Transport, query: TrustGraphQuery = {}, options: RequestOptions = {}): Promise<TrustGraphPage> {
  return t.call("GET", `/v1/trust/graph${queryString(query)}`, t.key(), undefined, { ...options, retry: "read" });
}

/** The whole trust graph, page after page as iteration goes on: each page's agents and their vouches. */
export async function* trustGraph(
  client: MandateClient,
  query: TrustGraphQuery = {},
  options: RequestOptions = {},
): AsyncGenerator<TrustGraphPage, void, undefined> {
  let cursor = query.cursor;
  do {
    const page = await client.trustGraphPage({ ...query, cursor }, options);
    yield page;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
}

/** `MandateClient.trustStatement`, documented there. */
export async function trustStatement(
  t: Transport,
  agentId: string,
  auth: Pick<AgentAuth, "token" | "key"> & RequestOptions = {},
): Promise<string> {
  const path = `/v1/trust/agents/${segment(agentId)}/statement`;
  const credential = (): Credential => (auth.token === undefined ? t.key() : t.agent("GET", path, auth));
  const { token: _token, key: _key, ...options } = auth;
  const answer = await t.request("GET", path, credential, undefined, {
    ...options,
    accept: "application/trust-statement+jwt",
    retry: "read",
  });
  return answer.text.trim();
}
