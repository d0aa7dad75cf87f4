// Tokens: issuing root tokens (L1, L2, L3), delegating and revoking them,
// a token's status and the organisation's list, and checking them — the
// server's public key set, and a verifier that keeps itself current.

import { type AssuranceLevel, type Claims, type Jwks, Verifier, type VerifierOptions } from "../mandate_wasm.js";
import { createRemoteVerifier, type RemoteVerifier, type RemoteVerifierOptions } from "../remote.js";
import { MandateError } from "./errors.js";
import type { MandateClient } from "./index.js";
import type { operations } from "./openapi.js";
import {
  type AgentAuth,
  type Credential,
  queryString,
  type RequestOptions,
  segment,
  type Transport,
  type WriteOptions,
} from "./transport.js";
import type { Narrowed, Schemas, Sent, TokenState } from "./types.js";

/**
 * Options of `client.verifier()`: those of `createRemoteVerifier` but where
 * to fetch from and how, which the client gives. `maxStalenessSeconds` is
 * required: how long a revocation may take to reach the verifier.
 */
export type ClientVerifierOptions = Omit<RemoteVerifierOptions, "baseUrl" | "jwksUrl" | "fetch">;

export type IssueL1Request = Schemas["IssueL1Request"];
export type IssueL2Request = Schemas["IssueL2Request"];
export type AuthCaptureRequest = Schemas["CaptureRequest"];

type SentToken = Sent<Schemas["IssuedToken"]>;
export type IssuedToken = Narrowed<
  SentToken,
  {
    /** `DPoP` for a token bound to a key, else `Bearer`. */
    token_type: "Bearer" | "DPoP";
    /** The token's claims, which the document calls an object. */
    claims: Claims & SentToken["claims"];
  }
>;
export type DelegatedToken = Narrowed<
  IssuedToken,
  {
    /** The parent's `delegate` record, which every delegation writes. */
    aar_id: string;
  }
>;

export type DelegateRequest = Schemas["DelegateRequest"];
export type RevokeRequest = Schemas["RevokeRequest"];
export type RevokeResponse = Sent<Schemas["RevokeResponse"]>;

export type TokenDescendant = Narrowed<Sent<Schemas["TokenSummary"]>, { status: TokenState }>;
export type TokenStatus = Narrowed<Sent<Schemas["TokenStatus"]>, { status: TokenState; descendants: TokenDescendant[] }>;
export type TokenQuery = NonNullable<operations["token"]["parameters"]["query"]>;

export type TokenListQuery = Narrowed<
  NonNullable<operations["tokens"]["parameters"]["query"]>,
  { status?: TokenState | null }
>;
/** A token as the organisation's list shows it; `human_label` is what the organisation knows the human by. */
export type TokenListItem = Narrowed<
  Sent<Schemas["TokenListItem"]>,
  { status: TokenState; assurance_level: AssuranceLevel }
>;
export type TokenPage = Narrowed<Sent<Schemas["TokenPage"]>, { tokens: TokenListItem[] }>;

/** `POST /v1/vat/issue/l1`: a root token for an agent, on the API key. */
export function issueL1(t: Transport, request: IssueL1Request, options: WriteOptions = {}): Promise<IssuedToken> {
  return t.call("POST", "/v1/vat/issue/l1", t.key(), request, { ...options, retry: "write" });
}

/** `POST /v1/vat/issue/l2`: a root token at L2 (trust 0.7), on the API key and the human's OIDC ID token. */
export function issueL2(t: Transport, request: IssueL2Request, options: WriteOptions = {}): Promise<IssuedToken> {
  return t.call("POST", "/v1/vat/issue/l2", t.key(), request, { ...options, retry: "write" });
}

/** `POST /v1/vat/auth/capture`: a root token at L3 (trust 0.95), once a configured verifier accepts the evidence. */
export function authCapture(t: Transport, request: AuthCaptureRequest, options: WriteOptions = {}): Promise<IssuedToken> {
  return t.call("POST", "/v1/vat/auth/capture", t.key(), request, { ...options, retry: "write" });
}

/** `GET /v1/vat/tokens`: one page of the organisation's tokens, active first, each newest issued first. */
export function tokensPage(t: Transport, query: TokenListQuery = {}, options: RequestOptions = {}): Promise<TokenPage> {
  return t.call("GET", `/v1/vat/tokens${queryString(query)}`, t.key(), undefined, { ...options, retry: "read" });
}

/** Every token matching `query`, active first, page after page. */
export async function* tokens(
  client: MandateClient,
  query: TokenListQuery = {},
  options: RequestOptions = {},
): AsyncGenerator<TokenListItem, void, undefined> {
  let cursor = query.cursor;
  do {
    const page = await client.tokensPage({ ...query, cursor }, options);
    yield* page.tokens;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
}

/** `MandateClient.delegate`, documented there. */
export async function delegate(t: Transport, request: DelegateRequest, auth: AgentAuth = {}): Promise<DelegatedToken> {
  const path = "/v1/vat/delegate";
  return t.call("POST", path, () => t.agent("POST", path, auth), request, { ...auth, retry: "write" });
}

/** `MandateClient.revoke`, documented there. */
export async function revoke(t: Transport, request: RevokeRequest, auth: AgentAuth = {}): Promise<RevokeResponse> {
  const path = "/v1/vat/revoke";
  const credential = (): Credential => (auth.token === undefined ? t.key() : t.agent("POST", path, auth));
  const { idempotencyKey: _unused, ...options } = auth;
  return t.call("POST", path, credential, request, { ...options, retry: "once" });
}

/** `MandateClient.token`, documented there. */
export function token(t: Transport, name: string, query: TokenQuery = {}, options: RequestOptions = {}): Promise<TokenStatus> {
  return t.call("GET", `/v1/vat/tokens/${segment(name)}${queryString(query)}`, t.key(), undefined, { ...options, retry: "read" });
}

/** `GET /.well-known/jwks.json`: the public keys tokens are signed with. */
export function jwks(t: Transport, options: RequestOptions = {}): Promise<Jwks> {
  return t.call("GET", "/.well-known/jwks.json", undefined, undefined, { ...options, retry: "read" });
}

/** `MandateClient.verifier`, documented there. */
export async function verifier(
  t: Transport,
  client: MandateClient,
  options?: ClientVerifierOptions | Omit<VerifierOptions, "maxStalenessSeconds">,
): Promise<RemoteVerifier | Verifier> {
  if (options !== undefined && "maxStalenessSeconds" in options && options.maxStalenessSeconds !== undefined) {
    return createRemoteVerifier({
      ...(options as ClientVerifierOptions),
      baseUrl: t.base,
      fetch: (url, init) => t.statusFetch(url, init),
    });
  }
  const verifier = new Verifier(await client.jwks(), options);
  const error = verifier.error;
  if (error !== null) {
    verifier.free();
    throw new MandateError(0, { code: error.code, title: "Unusable key set", detail: error.message });
  }
  return verifier;
}
