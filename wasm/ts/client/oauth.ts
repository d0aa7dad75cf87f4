// The OAuth authorization server's administration (docs/oauth.md): the
// grants consents made — listed, and revoked, which ends each grant's whole
// chain — the organisation's pre-registered public clients, and its
// resources with the relay keys of their MCP gates.

import { queryString, type RequestOptions, segment, type Transport } from "./transport.js";
import type { operations } from "./openapi.js";
import type { Schemas, Sent } from "./types.js";

/**
 * A consent's grant: what a client holds for a human. `client_name` is the
 * client's self-declared name — show it as text, beside `client_host`.
 * Unlike most answers, a grant sends its absent members (`client_host`,
 * `resource`, `revoked_at`, `revoke_reason`) as `null`.
 */
export type OAuthGrant = Schemas["GrantBody"];
/** `GET /v1/oauth/grants`: one human's, one client's, or all (a developer key sees its own human's only). */
export type OAuthGrantQuery = NonNullable<operations["list_grants"]["parameters"]["query"]>;
export interface OAuthGrantPage {
  grants: OAuthGrant[];
  /** Pass back as `cursor` for the next page; absent on the last page. */
  next_cursor?: string;
}
/** A public client the organisation registered in advance. */
export type OAuthClient = Sent<Schemas["ClientBody"]>;
export type OAuthClientList = Sent<Schemas["ClientList"]>;
export type CreateOAuthClientRequest = Schemas["CreateClientRequest"];
/** A resource (an MCP server's RFC 8707 identifier, a token's `aud`) and the thumbprints of its gates' relay keys. */
export type OAuthResource = Sent<Schemas["ResourceBody"]>;
export type OAuthResourceList = Sent<Schemas["ResourceList"]>;
export type CreateOAuthResourceRequest = Schemas["CreateResourceRequest"];

/** `MandateClient.oauthGrantsPage`, documented there. */
export function oauthGrantsPage(t: Transport, query: OAuthGrantQuery = {}, options: RequestOptions = {}): Promise<OAuthGrantPage> {
  return t.call("GET", `/v1/oauth/grants${queryString(query)}`, t.key(), undefined, { ...options, retry: "read" });
}

/** `MandateClient.revokeOAuthGrant`, documented there. */
export async function revokeOAuthGrant(t: Transport, grantId: string, options: RequestOptions = {}): Promise<void> {
  // Revoking a revoked grant changes nothing: safe to send again. Answered 204, without a body.
  const key = t.key();
  await t.request("DELETE", `/v1/oauth/grants/${segment(grantId)}`, () => key, undefined, { ...options, retry: "read" });
}

/** `MandateClient.oauthClients`, documented there. */
export function oauthClients(t: Transport, options: RequestOptions = {}): Promise<OAuthClientList> {
  return t.call("GET", "/v1/oauth/clients", t.key(), undefined, { ...options, retry: "read" });
}

/** `MandateClient.createOAuthClient`, documented there. */
export function createOAuthClient(t: Transport, request: CreateOAuthClientRequest, options: RequestOptions = {}): Promise<OAuthClient> {
  return t.call("POST", "/v1/oauth/clients", t.key(), request, { ...options, retry: "once" });
}

/** `MandateClient.deleteOAuthClient`, documented there. */
export async function deleteOAuthClient(t: Transport, clientId: string, options: RequestOptions = {}): Promise<void> {
  // Answered 204, without a body.
  const key = t.key();
  await t.request("DELETE", `/v1/oauth/clients/${segment(clientId)}`, () => key, undefined, { ...options, retry: "once" });
}

/** `MandateClient.oauthResources`, documented there. */
export function oauthResources(t: Transport, options: RequestOptions = {}): Promise<OAuthResourceList> {
  return t.call("GET", "/v1/oauth/resources", t.key(), undefined, { ...options, retry: "read" });
}

/** `MandateClient.createOAuthResource`, documented there. */
export function createOAuthResource(
  t: Transport,
  request: CreateOAuthResourceRequest,
  options: RequestOptions = {},
): Promise<OAuthResource> {
  return t.call("POST", "/v1/oauth/resources", t.key(), request, { ...options, retry: "once" });
}

/** `MandateClient.deleteOAuthResource`, documented there. */
export async function deleteOAuthResource(t: Transport, resourceId: string, options: RequestOptions = {}): Promise<void> {
  // Answered 204, without a body.
  const key = t.key();
  await t.request("DELETE", `/v1/oauth/resources/${segment(resourceId)}`, () => key, undefined, { ...options, retry: "once" });
}
