// mandate-sdk/mcp: the MCP server gate. An MCP server takes the agent's VAT
// as its OAuth access token, checks it offline (the wasm verifier and the
// token's status list; no call to Mandate), and runs each gated tool call as
// authorize → tool → complete, asking a human through MCP's URL-mode
// elicitation when the grant requires an approval.
//
// What it exports:
// - `mandateTokenVerifier(options)`: the `OAuthTokenVerifier` the MCP SDK's
//   `requireBearerAuth({ verifier })` takes. That hook sees the token and
//   never the request, so it refuses a bound (DPoP) token: it cannot check
//   the proof.
// - `mandateAuth(options)`: a `(req, res, next)` middleware (Express or
//   plain `node:http`) taking `Authorization: Bearer` and `Authorization:
//   DPoP` with its `DPoP` proof, setting `req.auth`, and answering failures
//   as the SDK does (401/403 with `WWW-Authenticate`).
// - `protectedResourceMetadata(options)`, `protectedResourceMetadataUrl`
//   and `protectedResourceMetadataHandler(options)`: the server's RFC 9728
//   document and a middleware serving it.
// - `mandateTool(client, grant, handler, options?)`: a tool callback for
//   `McpServer.registerTool` that runs the handler through `client.act`.
//   It acts with the token that authenticated the request, or with a child
//   of it the agent delegated to the server (`_meta`
//   `io.mandate/delegated_token`): Mandate takes a bound token only with its
//   holder's proof, so a bound token is exercised only by a server holding
//   the key it is bound to.
//
// The MCP SDK is imported only as types, so that mandate-sdk installs and
// runs without it: the runtime objects the gate needs from it (the server,
// to elicit; the SDK's error classes, which its handlers recognise with
// `instanceof`) come from the caller. Nothing here needs a Node-only API.
// `mandateTool` and `mandateTokenVerifier` check at first use that this
// Node and the installed SDK are ones the gate supports (Node 20 or later,
// SDK ^1.32.0: `support.ts`), throwing `unsupported_environment` otherwise.

import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import type { NotificationOptions, RequestHandlerExtra, RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type {
  CallToolResult,
  ClientCapabilities,
  ElicitRequestURLParams,
  ElicitResult,
  ServerNotification,
  ServerRequest,
} from "@modelcontextprotocol/sdk/types.js";
import {
  MandateApprovalPending,
  MandateError,
  MandateRefusal,
  argsOf,
  checkArgsOffline,
  type ActContext,
  type ActOptions,
  type ActRequest,
  type MandateClient,
  type PendingApproval,
} from "./client/index.js";
import {
  audienceMatches,
  decodeTokenUnverified,
  sha256Ref,
  type AgentKey,
  type Claims,
  type RequestCheck,
  type VerifyResult,
} from "./mandate_wasm.js";
import { MCP_SUPPORT, requireSupported } from "./support.js";

// ---------------------------------------------------------------------------
// The API.

/**
 * What checks a token offline: a `RemoteVerifier` (`createRemoteVerifier`,
 * which fetches the key set and the status lists), a `Verifier`, or anything
 * with their `verify`. `verifyRequest` is needed for bound tokens.
 */
export interface TokenVerifierLike {
  verify(token: string): VerifyResult | Promise<VerifyResult>;
  verifyRequest?(token: string, request: RequestCheck): VerifyResult | Promise<VerifyResult>;
}

/** The MCP SDK's `OAuthTokenVerifier`, as `requireBearerAuth` calls it. */
export interface OAuthTokenVerifierLike {
  verifyAccessToken(token: string): Promise<AuthInfo>;
}

/** Options of `mandateTokenVerifier`. */
export interface MandateTokenVerifierOptions {
  /** Checks each token; give it a status list source (a `RemoteVerifier` does) so a revoked token is refused. */
  verifier: TokenVerifierLike;
  /**
   * The SDK's `InvalidTokenError` class (`@modelcontextprotocol/sdk/server/auth/errors.js`):
   * `requireBearerAuth` answers 401 only to an error of that class, and 500 to
   * any other.
   */
  invalidTokenError: new (message: string) => Error;
  /** This MCP server's resource identifier, as in `MandateAuthOptions.resource`. */
  resource?: string;
  /** Whether a token must name an audience, as in `MandateAuthOptions.audience`. */
  audience?: AudiencePolicy;
}

/**
 * What the gate asks of a token's audience (`aud`, the one resource server
 * it was issued for): `"if-present"` refuses a token whose `aud` is not this
 * server's `resource` and takes a token without `aud` (tokens Mandate's API
 * issues name none); `"required"` also refuses a token without `aud` (only
 * tokens Mandate issued for this server through OAuth pass).
 */
export type AudiencePolicy = "required" | "if-present";

/**
 * What the gate puts in `AuthInfo.extra`: the token's verified claims and
 * the names derived from them. Never the jti, which a bare `vat_jti` call
 * would accept as a credential; the jti hash (`jth`) names the token instead.
 */
export interface MandateAuthExtra {
  [member: string]: unknown;
  /** The agent's id, without `agent:` (also `AuthInfo.clientId`). */
  agentId: string;
  /** The workflow the token belongs to (`prov_…`). */
  provenanceRef: string;
  /** The token's jti hash: base64url SHA-256 of its jti, as `svc_parent` and events name tokens. */
  jth: string;
  /** The resource patterns the token covers (its actions are `AuthInfo.scopes`). */
  resources: string[];
  /** Whether the token is bound to a key (`cnf.jkt`); such a token passed only with its proof. */
  bound: boolean;
  /**
   * A bound token's DPoP proof, exactly as received: what the gate forwards
   * to Mandate (`Mandate-Client-DPoP`) when it acts for the client with
   * `MandateToolOptions.relayKey`.
   */
  dpopProof?: string;
  /** The verified claims, without `jti`. */
  claims: Omit<Claims, "jti">;
}

/** The request as `mandateAuth` reads it: Express's or `node:http`'s. */
export interface RequestLike {
  method?: string;
  /** The path and query (Express strips a mount path from it; `originalUrl` keeps it). */
  url?: string;
  originalUrl?: string;
  headers: Record<string, string | string[] | undefined>;
  socket?: { encrypted?: boolean };
  /** Set by `mandateAuth` once the token passed. */
  auth?: AuthInfo;
}

/** The response as `mandateAuth` writes it: Express's or `node:http`'s. */
export interface ResponseLike {
  statusCode: number;
  setHeader(name: string, value: string | string[]): unknown;
  end(body?: string): unknown;
}

/** A middleware's `next`. */
export type NextLike = (error?: unknown) => void;

/** A `(req, res, next)` middleware. */
export type Middleware = (req: RequestLike, res: ResponseLike, next: NextLike) => Promise<void>;

/** Options of `mandateAuth`. */
export interface MandateAuthOptions {
  /** Checks each token (and, for a bound token, its proof: `verifyRequest`, which a `RemoteVerifier` has). */
  verifier: TokenVerifierLike;
  /**
   * The server's public URL base (`https://mcp.example.com`, with any path
   * prefix a proxy strips): a DPoP proof's `htu` is compared with this base
   * and the request's path. Without it the URL is rebuilt from the request:
   * `http`/`https` by the socket and the `Host` header, or, with
   * `trustForwardedHeaders`, `X-Forwarded-Proto` and `X-Forwarded-Host`.
   */
  publicUrl?: string;
  /**
   * Take the scheme and host from `X-Forwarded-Proto` / `X-Forwarded-Host`.
   * Only behind a proxy that sets them: a client could otherwise name any
   * URL (a proof is still bound to the token's key and used once).
   */
  trustForwardedHeaders?: boolean;
  /** The protected-resource metadata URL, sent as `resource_metadata` in every challenge. */
  resourceMetadataUrl?: string;
  /** Actions the token must hold (its scopes): else 403 `insufficient_scope`. */
  requiredScopes?: string[];
  /**
   * This MCP server's resource identifier: the `resource` of its
   * protected-resource metadata (`https://mcp.example.com/mcp`), which OAuth
   * clients send as RFC 8707 `resource` and Mandate writes as the token's
   * `aud`. A token naming an audience passes only when it names this one
   * (compared after RFC 3986 normalisation: `audienceMatches`); a URL under
   * it is another resource. Without it, a token naming any audience is
   * refused: the gate cannot tell that the token is for it.
   */
  resource?: string;
  /** Whether a token must name an audience (`aud`): default `"if-present"`; `"required"` needs `resource`. */
  audience?: AudiencePolicy;
}

/** Options of `protectedResourceMetadata`. */
export interface ProtectedResourceMetadataOptions {
  /** The MCP server's URL, its resource identifier (`https://mcp.example.com/mcp`): https, no fragment. */
  resource: string;
  /** The Mandate server that issues the tokens (its base URL, the tokens' `iss`). */
  authorizationServer: string;
  /** A name people read (`resource_name`). */
  resourceName?: string;
  /** A page for developers (`resource_documentation`). */
  resourceDocumentation?: string;
  /** The actions tools are gated on (`scopes_supported`). */
  scopesSupported?: string[];
  /**
   * The resource patterns tools act on (`crm:*`, `crm:contacts`), appended
   * to `scopes_supported` after the actions: OAuth clients ask for the
   * scopes listed there, and Mandate's authorization server reads a scope
   * with a `:` as a resource pattern, one without as an action.
   */
  resources?: string[];
  /** Whether bound tokens are taken (`dpop_signing_alg_values_supported: ["EdDSA", "Ed25519"]`); default true. */
  dpop?: boolean;
  /** Whether only bound tokens are taken (`dpop_bound_access_tokens_required`). */
  dpopRequired?: boolean;
}

/** An RFC 9728 protected-resource metadata document, with the members the gate fills. */
export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  bearer_methods_supported: string[];
  scopes_supported?: string[];
  resource_name?: string;
  resource_documentation?: string;
  dpop_signing_alg_values_supported?: string[];
  dpop_bound_access_tokens_required?: boolean;
}

/** The handler's `extra` the MCP SDK passes a tool callback. */
export type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** A value, or a function of the tool's arguments giving it. */
export type FromArgs<Args, T> = T | ((args: Args) => T);

/** What a tool call asks Mandate for: its action, its resource, and the spend to reserve. */
export interface ToolGrant<Args> {
  action: FromArgs<Args, string>;
  resource: FromArgs<Args, string>;
  spendUsd?: FromArgs<Args, number | undefined>;
}

/** A gated tool's body: the SDK's arguments and `extra`, and the authorization it runs under. */
export type MandateToolHandler<Args> = (
  args: Args,
  extra: ToolExtra,
  context: ActContext,
) => CallToolResult | Promise<CallToolResult>;

/** The part of the MCP SDK's low-level `Server` the gate uses to ask for an approval. */
export interface ElicitingServer {
  getClientCapabilities(): ClientCapabilities | undefined;
  elicitInput(params: ElicitRequestURLParams, options?: RequestOptions): Promise<ElicitResult>;
  createElicitationCompletionNotifier(elicitationId: string, options?: NotificationOptions): () => Promise<void>;
}

/** Options of `mandateTool`. */
export interface MandateToolOptions {
  /**
   * The server the tool is registered on (an `McpServer`, or its low-level
   * `server`): when an approval is needed and the client declared URL-mode
   * elicitation, the reviewer's page is sent to it with `elicitInput`.
   */
  server?: ElicitingServer | { server: ElicitingServer };
  /**
   * The SDK's `UrlElicitationRequiredError` class: for a client that cannot
   * elicit, the call then ends with that JSON-RPC error (-32042) naming the
   * reviewer's page. Without it, with a tool error naming the page.
   */
  urlElicitationRequiredError?: new (elicitations: ElicitRequestURLParams[], message?: string) => Error;
  /** How long a call waits for a reviewer once the client was shown the page, seconds; default 300. */
  approvalTimeoutSeconds?: number;
  /**
   * The MCP server's own key. Mandate takes a bound token's authority only
   * with a proof by its holder for each call, so the gate can act only with
   * a token bound to a key it holds: a child token the agent delegated to
   * this server with `holder_key: key.publicJwk`, sent in the request's
   * `_meta` as `io.mandate/delegated_token`. A token bound to any other key
   * is refused (`dpop_key_not_held`), unless `relayKey` is given.
   */
  key?: AgentKey;
  /**
   * The gate's relay key, for a client's token bound to the client's own
   * key (a stock MCP client's DPoP token): the gate then acts at Mandate
   * with the client's token, forwarding the client's proof of the MCP
   * request (`mandateAuth` keeps it) and adding a proof of its own by this
   * key. Register its thumbprint (`relayKey.jkt`) for this server's
   * resource with `POST /v1/oauth/resources`; Mandate takes each client
   * proof once, and the relay completes only what it authorized.
   */
  relayKey?: AgentKey;
}

/** The `_meta` keys the gate sets on a tool result (reverse-DNS prefix, as MCP asks). */
export const META_AAR_ID = "io.mandate/aar_id";
export const META_PROVENANCE_REF = "io.mandate/provenance_ref";
export const META_RESULT_HASH = "io.mandate/result_hash";
/** A refused call's reason code (a `DenyReason`, or the gate's own: `token_required`, `dpop_key_not_held`, `approval_pending`, …). */
export const META_ERROR = "io.mandate/error";
/** An approval's reviewer page, on a call that ended waiting for it. */
export const META_APPROVAL_URL = "io.mandate/approval_url";
/**
 * In a request's `_meta`: a child of the authenticated token, delegated to
 * the server (bound to `MandateToolOptions.key`, or unbound), which the gate
 * acts with instead of the authenticated token.
 */
export const META_DELEGATED_TOKEN = "io.mandate/delegated_token";

/**
 * The `result_hash` the gate records for a tool result: `sha256Ref` of the
 * UTF-8 bytes of `JSON.stringify(result.content)`, the content array as the
 * handler returned it (before the gate adds `_meta`).
 */
export function toolResultHash(result: Pick<CallToolResult, "content">): string {
  return sha256Ref(JSON.stringify(result.content ?? [])) ?? "";
}

/** The token's `AuthInfo`, from verified claims: `clientId` the agent, `scopes` the actions, `resource` its `aud` (if any). */
export function authInfoOf(token: string, claims: Claims): AuthInfo {
  const { jti, ...rest } = claims;
  const extra: MandateAuthExtra = {
    agentId: claims.sub.replace(/^agent:/, ""),
    provenanceRef: claims.svc_prov,
    jth: jtiHash(jti),
    resources: [...claims.svc_scope.resources],
    bound: claims.cnf !== undefined,
    claims: rest,
  };
  const info: AuthInfo = {
    token,
    clientId: extra.agentId,
    scopes: [...claims.svc_scope.actions],
    expiresAt: claims.exp,
    extra,
  };
  if (claims.aud !== undefined) {
    info.resource = new URL(claims.aud);
  }
  return info;
}

/** The gate's part of an `AuthInfo`, when the gate made it. */
export function mandateAuthOf(auth: AuthInfo | undefined): MandateAuthExtra | undefined {
  const extra = auth?.extra;
  return extra !== undefined && typeof extra.jth === "string" && typeof extra.provenanceRef === "string"
    ? (extra as MandateAuthExtra)
    : undefined;
}

/**
 * An `OAuthTokenVerifier` for `requireBearerAuth({ verifier })`: the VAT
 * checked offline, and its audience as `mandateAuth` checks it. A bound
 * token is refused: this hook is given the token alone, never the request
 * and its `DPoP` proof (use `mandateAuth`).
 */
export function mandateTokenVerifier(options: MandateTokenVerifierOptions): OAuthTokenVerifierLike {
  requireSupported(MCP_SUPPORT);
  const { verifier, invalidTokenError: InvalidToken } = options;
  checkAudienceOptions(options);
  return {
    async verifyAccessToken(token: string): Promise<AuthInfo> {
      const result = await verifier.verify(token);
      if (!result.valid) {
        const reason =
          result.error.code === "dpop_required"
            ? "the token is bound to a key (DPoP); this server's bearer check cannot see its proof"
            : result.error.message;
        throw new InvalidToken(`${result.error.code}: ${reason}`);
      }
      const wrongAudience = audienceProblem(result.claims, options);
      if (wrongAudience !== undefined) {
        throw new InvalidToken(wrongAudience);
      }
      return authInfoOf(token, result.claims);
    },
  };
}

/**
 * A middleware that lets a request through with a valid VAT, as `Bearer`, or
 * bound to a key as `DPoP` with its `DPoP` proof for this request, and sets
 * `req.auth` (a bound token's proof kept in `extra.dpopProof`, for a gate
 * with a `relayKey` to forward). A token naming an audience (`aud`) must name this server's
 * `resource` (`options.audience` says whether one must be named). Refusals are answered as the MCP SDK's `requireBearerAuth`
 * answers them: 401 `invalid_token` (`invalid_dpop_proof` for a refused
 * proof) or 403 `insufficient_scope`, a JSON `{error, error_description}`
 * body and a `WWW-Authenticate` challenge naming `resource_metadata`.
 */
export function mandateAuth(options: MandateAuthOptions): Middleware {
  checkAudienceOptions(options);
  return async (req, res, next) => {
    let outcome: AuthOutcome;
    try {
      outcome = await authenticate(req, options);
    } catch (cause) {
      send(res, 500, { error: "server_error", error_description: `the token could not be checked: ${String(cause)}` });
      return;
    }
    if ("refusal" in outcome) {
      refuse(res, outcome.refusal, options);
      return;
    }
    req.auth = outcome.auth;
    next();
  };
}

/** The URL the protected-resource metadata of `resource` is served at (RFC 9728 §3.1). */
export function protectedResourceMetadataUrl(resource: string): string {
  const url = new URL(resource);
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "");
  return `${url.origin}/.well-known/oauth-protected-resource${path}`;
}

/** The MCP server's RFC 9728 protected-resource metadata. */
export function protectedResourceMetadata(options: ProtectedResourceMetadataOptions): ProtectedResourceMetadata {
  const metadata: ProtectedResourceMetadata = {
    resource: options.resource,
    authorization_servers: [String(options.authorizationServer).replace(/\/+$/, "")],
    bearer_methods_supported: ["header"],
  };
  if (options.scopesSupported !== undefined || options.resources !== undefined) {
    metadata.scopes_supported = [...(options.scopesSupported ?? []), ...(options.resources ?? [])];
  }
  if (options.resourceName !== undefined) {
    metadata.resource_name = options.resourceName;
  }
  if (options.resourceDocumentation !== undefined) {
    metadata.resource_documentation = options.resourceDocumentation;
  }
  if (options.dpop ?? true) {
    metadata.dpop_signing_alg_values_supported = ["EdDSA", "Ed25519"];
  }
  if (options.dpopRequired !== undefined) {
    metadata.dpop_bound_access_tokens_required = options.dpopRequired;
  }
  return metadata;
}

/**
 * A middleware serving the document at its well-known path (a `GET` or
 * `HEAD` of `protectedResourceMetadataUrl(resource)`'s path), to anyone
 * (`Access-Control-Allow-Origin: *`); every other request goes to `next`.
 */
export function protectedResourceMetadataHandler(options: ProtectedResourceMetadataOptions): Middleware {
  const path = new URL(protectedResourceMetadataUrl(options.resource)).pathname;
  const body = JSON.stringify(protectedResourceMetadata(options));
  return async (req, res, next) => {
    const asked = pathOf(req);
    if (asked !== path || (req.method !== "GET" && req.method !== "HEAD")) {
      next();
      return;
    }
    res.statusCode = 200;
    res.setHeader("content-type", "application/json");
    res.setHeader("access-control-allow-origin", "*");
    res.setHeader("cache-control", "public, max-age=3600");
    res.end(req.method === "HEAD" ? undefined : body);
  };
}

/**
 * A tool callback for `server.registerTool(name, config, callback)` (give the
 * tool an `inputSchema`, `{}` when it takes no arguments) that runs `handler`
 * as an action of the agent whose token authenticated the request
 * (`extra.authInfo.token`): `authorize` → `handler` → `complete`.
 *
 * - The tool's arguments (an object) are sent as the call's `args`, and
 *   judged first offline against the token's argument rules
 *   (`checkArgsOffline`): refused there (`args_required`,
 *   `args_not_permitted`, or arguments Mandate would not take), nothing
 *   is sent to Mandate and the result is a tool error with `_meta`
 *   `io.mandate/error` (the code) and no record.
 * - Refused (out of scope, over budget, revoked, approval denied or
 *   expired): the handler does not run; the result is a tool error
 *   (`isError`) whose text names the reason, with `_meta`
 *   `io.mandate/error` (the reason code) and `io.mandate/aar_id` (the
 *   denied record).
 * - Needing approval: the client is sent the reviewer's page by URL-mode
 *   elicitation (when it declared it and `options.server` is given) and the
 *   call waits for the decision; approved, the handler runs; otherwise see
 *   `MandateToolOptions.urlElicitationRequiredError`.
 * - Run: the record is completed `success` with `toolResultHash(result)`,
 *   or `error` when the handler throws or returns `isError: true`
 *   (`cancelled` when the request is cancelled); the result carries `_meta`
 *   `io.mandate/aar_id`, `io.mandate/provenance_ref` and
 *   `io.mandate/result_hash`.
 * - The request's `_meta.traceparent` (W3C Trace Context) is passed on, so
 *   the record's span joins the caller's trace.
 */
export function mandateTool<Args>(
  client: Pick<MandateClient, "act">,
  grant: ToolGrant<Args>,
  handler: MandateToolHandler<Args>,
  options: MandateToolOptions = {},
): (args: Args, extra: ToolExtra) => Promise<CallToolResult> {
  requireSupported(MCP_SUPPORT);
  return (args, extra) => runTool(client, grant, handler, options, args, extra);
}

// ---------------------------------------------------------------------------
// How it works.

/** Why a request was refused at the gate. */
interface Refusal {
  status: 401 | 403;
  error: "invalid_token" | "invalid_dpop_proof" | "insufficient_scope";
  description: string;
  /** The challenge's scheme: `DPoP` for a bound token or a proof, `Bearer` otherwise. */
  scheme: "Bearer" | "DPoP" | "both";
}

type AuthOutcome = { auth: AuthInfo } | { refusal: Refusal };

async function authenticate(req: RequestLike, options: MandateAuthOptions): Promise<AuthOutcome> {
  const header = single(req.headers.authorization);
  if (header === undefined || header.trim() === "") {
    return refusal(401, "invalid_token", "Missing Authorization header", "both");
  }
  const match = /^(\S+)\s+(\S+)$/.exec(header.trim());
  const scheme = match?.[1]?.toLowerCase();
  const token = match?.[2];
  if (token === undefined || (scheme !== "bearer" && scheme !== "dpop")) {
    return refusal(401, "invalid_token", "Invalid Authorization header format, expected 'Bearer TOKEN' or 'DPoP TOKEN'", "both");
  }
  let result: VerifyResult;
  let proof: string | undefined;
  if (scheme === "bearer") {
    result = await options.verifier.verify(token);
    if (!result.valid && result.error.code === "dpop_required") {
      return refusal(401, "invalid_token", "dpop_required: the token is bound to a key: send it as DPoP with its proof", "DPoP");
    }
  } else {
    const proofs = req.headers.dpop;
    proof = single(proofs);
    if (proof === undefined || Array.isArray(proofs) || proof.includes(",")) {
      return refusal(401, "invalid_dpop_proof", "dpop_required: a DPoP token needs exactly one DPoP proof header", "DPoP");
    }
    if (options.verifier.verifyRequest === undefined) {
      return refusal(401, "invalid_token", "this server's verifier cannot check DPoP proofs", "Bearer");
    }
    result = await options.verifier.verifyRequest(token, {
      method: (req.method ?? "GET").toUpperCase(),
      url: requestUrl(req, options),
      proof,
    });
    if (!result.valid && result.error.stage === "dpop") {
      return refusal(401, "invalid_dpop_proof", `${result.error.code}: ${result.error.message}`, "DPoP");
    }
  }
  if (!result.valid) {
    return refusal(401, "invalid_token", `${result.error.code}: ${result.error.message}`, scheme === "dpop" ? "DPoP" : "Bearer");
  }
  const wrongAudience = audienceProblem(result.claims, options);
  if (wrongAudience !== undefined) {
    return refusal(401, "invalid_token", wrongAudience, scheme === "dpop" ? "DPoP" : "Bearer");
  }
  const auth = authInfoOf(token, result.claims);
  if (proof !== undefined) {
    // Kept as received, for the gate to relay to Mandate.
    (auth.extra as MandateAuthExtra).dpopProof = proof;
  }
  const missing = (options.requiredScopes ?? []).filter((scope) => !auth.scopes.includes(scope));
  if (missing.length > 0) {
    return refusal(403, "insufficient_scope", `Insufficient scope: the token lacks ${missing.join(", ")}`, scheme === "dpop" ? "DPoP" : "Bearer");
  }
  return { auth };
}

/** Refuses, when the gate is built, an `audience` it does not know, or `"required"` without a `resource`. */
function checkAudienceOptions(options: { resource?: string; audience?: AudiencePolicy }): void {
  const policy = options.audience ?? "if-present";
  if (policy !== "if-present" && policy !== "required") {
    throw new TypeError(`audience must be "required" or "if-present", not ${JSON.stringify(policy)}`);
  }
  if (policy === "required" && options.resource === undefined) {
    throw new TypeError('audience "required" needs the server\'s resource (its protected-resource metadata `resource`)');
  }
}

/**
 * Why a verified token is not for this server, or `undefined`: its `aud`
 * names another resource (or this server names none to compare), or it names
 * none and the gate requires one. MCP authorization, "Token Handling": a
 * server MUST validate that a token was issued for it as the audience
 * (RFC 8707 §2).
 */
function audienceProblem(claims: Claims, options: { resource?: string; audience?: AudiencePolicy }): string | undefined {
  const { aud } = claims;
  if (aud === undefined) {
    return options.audience === "required"
      ? `audience_required: the token names no audience (aud); this server takes only tokens issued for ${options.resource}`
      : undefined;
  }
  if (options.resource === undefined) {
    return `audience_mismatch: the token is for ${aud}, and this server names no resource to compare it with`;
  }
  return audienceMatches(aud, options.resource)
    ? undefined
    : `audience_mismatch: the token is for ${aud}, not for this server (${options.resource})`;
}

function refusal(status: Refusal["status"], error: Refusal["error"], description: string, scheme: Refusal["scheme"]): AuthOutcome {
  return { refusal: { status, error, description, scheme } };
}

/** Answers a refusal with its challenge(s) and the SDK's JSON error body. */
function refuse(res: ResponseLike, refused: Refusal, options: MandateAuthOptions): void {
  const params = [`error="${quoted(refused.error)}"`, `error_description="${quoted(refused.description)}"`];
  if (options.requiredScopes !== undefined && options.requiredScopes.length > 0) {
    params.push(`scope="${quoted(options.requiredScopes.join(" "))}"`);
  }
  if (options.resourceMetadataUrl !== undefined) {
    params.push(`resource_metadata="${quoted(options.resourceMetadataUrl)}"`);
  }
  const bearer = `Bearer ${params.join(", ")}`;
  const dpop = `DPoP ${[...params, 'algs="EdDSA Ed25519"'].join(", ")}`;
  const challenges = refused.scheme === "both" ? [bearer, dpop] : [refused.scheme === "DPoP" ? dpop : bearer];
  res.setHeader("www-authenticate", challenges);
  send(res, refused.status, { error: refused.error, error_description: refused.description });
}

function send(res: ResponseLike, status: number, body: Record<string, string>): void {
  res.statusCode = status;
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(body));
}

/** A quoted-string's content (RFC 9110): backslashes and quotes escaped, controls dropped. */
function quoted(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f]/g, " ").replace(/["\\]/g, (c) => `\\${c}`);
}

/** A header's one value: `undefined` when absent or sent more than once. */
function single(value: string | string[] | undefined): string | undefined {
  if (Array.isArray(value)) {
    return value.length === 1 ? value[0] : undefined;
  }
  return value;
}

/** The request's path, without query or fragment. */
function pathOf(req: RequestLike): string {
  const target = req.originalUrl ?? req.url ?? "/";
  const end = target.search(/[?#]/);
  return end === -1 ? target : target.slice(0, end);
}

/** The URL a DPoP proof of this request must name (`htu`). */
function requestUrl(req: RequestLike, options: MandateAuthOptions): string {
  if (options.publicUrl !== undefined) {
    return `${String(options.publicUrl).replace(/\/+$/, "")}${pathOf(req)}`;
  }
  const first = (value: string | string[] | undefined): string | undefined =>
    single(value)?.split(",")[0]?.trim() || undefined;
  let scheme = req.socket?.encrypted ? "https" : "http";
  let host = first(req.headers.host) ?? "localhost";
  if (options.trustForwardedHeaders) {
    scheme = first(req.headers["x-forwarded-proto"]) ?? scheme;
    host = first(req.headers["x-forwarded-host"]) ?? host;
  }
  return `${scheme}://${host}${pathOf(req)}`;
}

/** base64url (no padding) SHA-256 of the jti's ASCII: the token's jti hash. */
function jtiHash(jti: string): string {
  const hex = (sha256Ref(jti) ?? "").replace(/^sha256:/, "");
  let binary = "";
  for (let at = 0; at + 1 < hex.length; at += 2) {
    binary += String.fromCharCode(parseInt(hex.slice(at, at + 2), 16));
  }
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function valueOf<Args, T>(value: FromArgs<Args, T>, args: Args): T {
  return typeof value === "function" ? (value as (args: Args) => T)(args) : value;
}

/** A tool error the model sees, with the gate's `_meta`. */
function toolError(text: string, meta: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text }], isError: true, _meta: meta };
}

/** Carries a handler's `isError` result out of `act`, so the record is completed `error`. */
class ToolFailed extends Error {
  readonly result: CallToolResult;
  constructor(result: CallToolResult) {
    super("the tool reported an error");
    this.result = result;
  }
}

/** The client declined or cancelled the approval's elicitation. */
class ElicitationDeclined extends Error {
  readonly action: ElicitResult["action"];
  constructor(action: ElicitResult["action"]) {
    super(`the user did not open the approval page (${action})`);
    this.action = action;
  }
}

/** A JSON-RPC error the SDK passes on as it is (an `McpError`, e.g. -32042). */
function isProtocolError(error: unknown): boolean {
  return error instanceof Error && typeof (error as { code?: unknown }).code === "number";
}

function elicitingServer(server: MandateToolOptions["server"]): ElicitingServer | undefined {
  if (server === undefined) {
    return undefined;
  }
  return "elicitInput" in server ? server : server.server;
}

async function runTool<Args>(
  client: Pick<MandateClient, "act">,
  grant: ToolGrant<Args>,
  handler: MandateToolHandler<Args>,
  options: MandateToolOptions,
  args: Args,
  extra: ToolExtra,
): Promise<CallToolResult> {
  const presented = extra.authInfo?.token;
  if (presented === undefined) {
    return toolError("Not authorized: the request carried no Mandate token.", { [META_ERROR]: "token_required" });
  }
  let token = presented;
  const delegated = extra._meta?.[META_DELEGATED_TOKEN];
  if (delegated !== undefined) {
    const problem = typeof delegated === "string" ? delegationProblem(presented, delegated) : "it is not a string";
    if (typeof delegated !== "string" || problem !== undefined) {
      return toolError(`Not authorized: the delegated token in _meta is refused: ${problem}.`, {
        [META_ERROR]: "delegation_invalid",
      });
    }
    token = delegated;
  }
  const decoded = decodeTokenUnverified(token);
  const jkt = decoded.ok ? decoded.claims.cnf?.jkt : undefined;
  // The client's own proof, relayed: only for the token it was made with.
  const forwarded = token === presented ? mandateAuthOf(extra.authInfo)?.dpopProof : undefined;
  const relaying = jkt !== undefined && options.key?.jkt !== jkt && options.relayKey !== undefined && forwarded !== undefined;
  if (jkt !== undefined && options.key?.jkt !== jkt && !relaying) {
    return toolError(
      "Not authorized: the token is bound to a key this server does not hold, and Mandate takes a bound token " +
        "only with its holder's proof. Delegate a child token to this server's key and send it in _meta " +
        `as ${META_DELEGATED_TOKEN}, or relay the client's proof with a registered relayKey.`,
      { [META_ERROR]: "dpop_key_not_held" },
    );
  }
  const request: ActRequest = { action: valueOf(grant.action, args), resource: valueOf(grant.resource, args) };
  const spend = grant.spendUsd === undefined ? undefined : valueOf(grant.spendUsd, args);
  if (spend !== undefined) {
    request.spend_usd = spend;
  }
  const sent = argsOf(args);
  if (sent !== undefined) {
    request.args = sent;
  }
  // The token's own argument rules refuse here, before any round trip to Mandate.
  const offline = checkArgsOffline(token, request);
  if (offline !== undefined) {
    return refused(offline, request);
  }
  const server = elicitingServer(options.server);
  const canElicit = server?.getClientCapabilities()?.elicitation?.url !== undefined;
  let elicited: string | undefined;
  let hash: string | undefined;
  const notifyDecided = async (): Promise<void> => {
    if (elicited !== undefined && server !== undefined) {
      const id = elicited;
      elicited = undefined;
      await server.createElicitationCompletionNotifier(id, { relatedRequestId: extra.requestId })();
    }
  };
  const act: ActOptions<CallToolResult> = {
    signal: extra.signal,
    resultHash: (result) => {
      hash = toolResultHash(result);
      return hash;
    },
    onApproval: async (approval: PendingApproval) => {
      const params: ElicitRequestURLParams = {
        mode: "url",
        url: approval.url,
        elicitationId: approval.approval_id,
        message: `A reviewer must approve ${request.action} on ${request.resource} before it runs.`,
      };
      if (canElicit && server !== undefined) {
        const answer = await server.elicitInput(params, { relatedRequestId: extra.requestId, signal: extra.signal });
        if (answer.action !== "accept") {
          throw new ElicitationDeclined(answer.action);
        }
        elicited = approval.approval_id;
        return;
      }
      if (options.urlElicitationRequiredError !== undefined) {
        throw new options.urlElicitationRequiredError([params], `Approval required: ${approval.url}`);
      }
    },
    waitForApproval: canElicit ? { timeoutSeconds: options.approvalTimeoutSeconds ?? 300, signal: extra.signal } : undefined,
  };
  if (options.key !== undefined) {
    act.key = options.key;
  }
  if (relaying) {
    act.relayKey = options.relayKey;
    act.forwardedProof = forwarded;
  }
  const traceparent = extra._meta?.traceparent;
  if (typeof traceparent === "string") {
    act.traceparent = traceparent;
  }
  let context: ActContext | undefined;
  // What the handler threw, told apart from a failure of Mandate's calls around it.
  let thrown: { error: unknown } | undefined;
  try {
    const result = await client.act(
      token,
      request,
      async (ctx) => {
        context = ctx;
        await notifyDecided();
        let result: CallToolResult;
        try {
          result = await handler(args, extra, ctx);
        } catch (error) {
          thrown = { error };
          throw error;
        }
        if (result.isError === true) {
          thrown = { error: new ToolFailed(result) };
          throw thrown.error;
        }
        return result;
      },
      act,
    );
    return withMeta(result, context, hash);
  } catch (error) {
    await notifyDecided().catch(() => undefined);
    if (context === undefined) {
      return refused(error, request);
    }
    const meta = { [META_AAR_ID]: context.aarId, [META_PROVENANCE_REF]: context.provenanceRef };
    if (thrown === undefined || error !== thrown.error) {
      // The handler ran, and completing its record failed: the record stays `pending` for a reviewer to see.
      return toolError(`The tool ran, but Mandate could not record how it ended: ${String(error)}`, {
        ...meta,
        [META_ERROR]: error instanceof MandateError ? error.code : "completion_failed",
      });
    }
    if (error instanceof ToolFailed) {
      return withMeta(error.result, context, undefined);
    }
    if (isProtocolError(error)) {
      throw error;
    }
    // The record was completed `error`; the model sees the message, as the SDK would show it.
    return toolError(error instanceof Error ? error.message : String(error), { ...meta, [META_ERROR]: "tool_error" });
  }
}

/**
 * Why `child` may not stand in for `parent` (the authenticated token), or
 * undefined: it must be `parent`'s own child (`svc_parent` is its jti hash)
 * in the same workflow. Mandate verifies it (signature, expiry, revocation)
 * when the gate authorizes with it.
 */
function delegationProblem(parent: string, child: string): string | undefined {
  const up = decodeTokenUnverified(parent);
  const down = decodeTokenUnverified(child);
  if (!up.ok || !down.ok) {
    return "it is not a token";
  }
  if (down.claims.svc_parent !== jtiHash(up.claims.jti) || down.claims.svc_prov !== up.claims.svc_prov) {
    return "it was not delegated by the token that authenticated the request";
  }
  return undefined;
}

/** The tool error for a call that did not run, or the error itself when the SDK must answer it (-32042). */
function refused(error: unknown, request: ActRequest): CallToolResult {
  if (error instanceof MandateRefusal && error.aarId === undefined) {
    // Refused offline by the token's argument rules: no record was made.
    return toolError(`Refused by Mandate's rules for this token: ${error.reason}: ${error.detail ?? ""}`, {
      [META_ERROR]: error.reason,
    });
  }
  if (error instanceof MandateRefusal) {
    return toolError(`Refused by Mandate: ${error.reason} (${request.action} on ${request.resource}).`, {
      [META_ERROR]: error.reason,
      [META_AAR_ID]: error.aarId,
    });
  }
  if (error instanceof MandateApprovalPending) {
    return toolError(`Approval required: a reviewer must approve this call first: ${error.approval.url}`, {
      [META_ERROR]: "approval_pending",
      [META_AAR_ID]: error.aarId,
      [META_APPROVAL_URL]: error.approval.url,
    });
  }
  if (error instanceof ElicitationDeclined) {
    return toolError(`Not run: ${error.message}; the approval stays pending until it expires.`, {
      [META_ERROR]: "approval_declined",
    });
  }
  if (error instanceof MandateError) {
    return toolError(`Not run: Mandate could not authorize the call: ${error.message}`, { [META_ERROR]: error.code });
  }
  throw error;
}

/** The result with the record's names in its `_meta`. */
function withMeta(result: CallToolResult, context: ActContext | undefined, hash: string | undefined): CallToolResult {
  if (context === undefined) {
    return result;
  }
  const meta: Record<string, unknown> = {
    ...result._meta,
    [META_AAR_ID]: context.aarId,
    [META_PROVENANCE_REF]: context.provenanceRef,
  };
  if (hash !== undefined) {
    meta[META_RESULT_HASH] = hash;
  }
  return { ...result, _meta: meta };
}
