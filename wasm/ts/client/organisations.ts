// Organisations and keys: the caller's key (`me`), the deployment's
// organisations (the admin key) and an organisation's API keys.

import type { operations } from "./openapi.js";
import { queryString, type RequestOptions, segment, type Transport } from "./transport.js";
import type { Narrowed, Schemas } from "./types.js";

// Organisations and keys. Unlike the rest of the API, these answers send
// `null` for an absent e-mail, revocation time or quota rather than leaving
// the member out, so their types keep the document's `null`s.

/** The role of an API key within its organisation. */
export type Role = "owner" | "developer" | "reviewer" | "auditor" | "gateway";
/** What a role allows; `GET /v1/me` lists the caller's. */
export type Permission =
  | "read"
  | "issue"
  | "issue_for_anyone"
  | "rate"
  | "revoke"
  | "manage_keys"
  | "decide"
  | "manage_webhooks"
  | "vouch"
  | "evaluate"
  | "manage_clients";

/** `GET /v1/me`: the key a request is made with, its organisation and what its role allows. */
export type Me = Narrowed<Schemas["MeBody"], { email: string | null; role: Role; permissions: Permission[] }>;

/** An organisation's quotas as sent; `null` is no limit. */
export type Quotas = Narrowed<
  Schemas["QuotasBody"],
  { records_per_day: number | null; tokens_outstanding: number | null }
>;
export type Org = Narrowed<Schemas["OrgBody"], { quotas: Quotas }>;
export type CreateOrgRequest = Schemas["CreateOrgRequest"];
export type UpdateOrgRequest = Schemas["UpdateOrgRequest"];
export type OrgQuery = NonNullable<operations["list_orgs"]["parameters"]["query"]>;
export type OrgPage = Narrowed<Schemas["OrgPage"], { orgs: Org[]; next_cursor?: string }>;

export type CreateKeyRequest = Narrowed<Schemas["CreateKeyRequest"], { role: Role }>;
/** A key just made: the only answer that holds the key itself (`api_key`). */
export type IssuedKey = Narrowed<Schemas["IssuedKeyBody"], { role: Role; email: string | null }>;
/** An API key as listed, never the key itself. */
export type ApiKey = Narrowed<Schemas["KeyBody"], { role: Role; email: string | null; revoked_at: string | null }>;
export type KeyList = Narrowed<Schemas["KeyList"], { keys: ApiKey[] }>;
export type OrgCreated = Narrowed<Schemas["OrgCreatedBody"], { org: Org; owner_key: IssuedKey }>;

/** `GET /v1/me`: the API key's organisation, role and permissions; any key may ask. */
export function me(t: Transport, options: RequestOptions = {}): Promise<Me> {
  return t.call("GET", "/v1/me", t.key(), undefined, { ...options, retry: "read" });
}

/** `POST /v1/orgs`: a new organisation and its first owner key, shown only in this answer; the admin key only. */
export function createOrg(t: Transport, request: CreateOrgRequest, options: RequestOptions = {}): Promise<OrgCreated> {
  return t.call("POST", "/v1/orgs", t.key(), request, { ...options, retry: "once" });
}

/** `GET /v1/orgs`: one page of the deployment's organisations, oldest first; the admin key only. */
export function listOrgs(t: Transport, query: OrgQuery = {}, options: RequestOptions = {}): Promise<OrgPage> {
  return t.call("GET", `/v1/orgs${queryString(query)}`, t.key(), undefined, { ...options, retry: "read" });
}

/** `PATCH /v1/orgs/{org_id}`: replaces an organisation's quotas; the admin key only. */
export function updateOrg(t: Transport, orgId: string, request: UpdateOrgRequest, options: RequestOptions = {}): Promise<Org> {
  return t.call("PATCH", `/v1/orgs/${segment(orgId)}`, t.key(), request, { ...options, retry: "once" });
}

/** `POST /v1/keys`: a new API key of the caller's organisation, shown only in this answer; an owner key only. */
export function createKey(t: Transport, request: CreateKeyRequest, options: RequestOptions = {}): Promise<IssuedKey> {
  return t.call("POST", "/v1/keys", t.key(), request, { ...options, retry: "once" });
}

/** `GET /v1/keys`: the organisation's API keys, newest first; an owner key only. */
export function listKeys(t: Transport, options: RequestOptions = {}): Promise<KeyList> {
  return t.call("GET", "/v1/keys", t.key(), undefined, { ...options, retry: "read" });
}

/** `DELETE /v1/keys/{key_id}`: revokes an API key at once; an owner key only. */
export function revokeKey(t: Transport, keyId: string, options: RequestOptions = {}): Promise<ApiKey> {
  return t.call("DELETE", `/v1/keys/${segment(keyId)}`, t.key(), undefined, { ...options, retry: "once" });
}
