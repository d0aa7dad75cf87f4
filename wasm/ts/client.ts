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

import {
  AgentKey,
  Verifier,
  decodeTokenUnverified,
  permits,
  sha256Ref,
  type AssuranceLevel,
  type Claims,
  type ErrorInfo,
  type Jwks,
  type VerifierOptions,
  type VerifyResult,
  type WebhookEventType,
} from "./mandate_wasm.js";
import { createParser } from "eventsource-parser";
import type { components, operations } from "./openapi.js";
import { createRemoteVerifier, type RemoteVerifier, type RemoteVerifierOptions, type StatusFetch } from "./remote.js";

/**
 * An `AbortSignal`, as far as the client reads one (declared here, so Node
 * consumers need no DOM types).
 */
export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/** What `events()` reads of a response body: a `ReadableStream` of bytes. */
export interface ByteStreamLike {
  getReader(): {
    read(): Promise<{ done: boolean; value?: Uint8Array }>;
    cancel(reason?: unknown): Promise<void>;
  };
}

/** The headers of an answer, as far as the client reads them (a `Headers` fits). */
export interface ResponseHeadersLike {
  get(name: string): string | null;
  /** Each header, name in lower case; without it, only the headers the client knows are read. */
  forEach?(callback: (value: string, name: string) => void): void;
}

/**
 * The part of the Fetch API the client uses; `globalThis.fetch` fits. Every
 * call passes a `signal` (its timeout and the caller's signal); `events()`
 * needs the answer's `body` (a stream); the verifier's fetches pass
 * `credentials: "omit"`.
 */
export type FetchLike = (
  url: string,
  init: {
    method: string;
    headers: Record<string, string>;
    body?: string;
    signal?: AbortSignalLike;
    credentials?: "omit";
  },
) => Promise<{
  ok: boolean;
  status: number;
  statusText: string;
  text(): Promise<string>;
  headers?: ResponseHeadersLike;
  /** The URL finally answered from, after redirects (when the implementation says). */
  url?: string;
  body?: ByteStreamLike | null;
}>;

/** An answer as `onResponse` is told of it: every answer, to every attempt, refusals included. */
export interface ResponseInfo {
  method: string;
  url: string;
  status: number;
  /** The answer's headers, names in lower case. */
  headers: Record<string, string>;
  /** The server's `x-request-id`, when it sent one: quote it when asking about a call. */
  requestId: string | undefined;
  /** 1 for the first attempt, 2 for the first retry, and so on. */
  attempt: number;
}

/** The client's default timeout of one attempt, ms. */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** The client's default number of retries after the first attempt. */
export const DEFAULT_MAX_RETRIES = 2;
/** The client's default longest pause before a retry, ms: a longer `Retry-After` is not waited for. */
export const DEFAULT_MAX_RETRY_DELAY_MS = 30_000;

export interface MandateClientOptions {
  /** The server's address, e.g. `https://mandate.example.com` (a path prefix is kept). */
  baseUrl: string;
  /** An API key (`mk_…`) for the calls that need one. */
  apiKey?: string;
  /** A fetch implementation; default `globalThis.fetch`. */
  fetch?: FetchLike;
  /**
   * How long one attempt of a call may take, ms, from sending to the end of
   * the answer's body (default 30 s; 0 for no limit). A long-poll's wait is
   * added to it; the event stream's applies to connecting only. Past it the
   * attempt rejects with a MandateError `timeout` (status 0), which is
   * retried as a lost answer is.
   */
  timeoutMs?: number;
  /** Retries of a call safe to send again (default 2; 0 sends each call once). */
  maxRetries?: number;
  /**
   * The longest pause before a retry, ms (default 30 s). A `Retry-After`
   * asking for longer is not waited for: the call rejects with the answer,
   * whose `retryAfter` says when to try again.
   */
  maxRetryDelayMs?: number;
  /** Told of every answer (status, headers, `x-request-id`), successes and refusals alike, each attempt. */
  onResponse?: (response: ResponseInfo) => void;
  /**
   * How the client pauses before a retry (and between reads of an approval
   * or connections of the event stream); default `setTimeout`. For tests,
   * and for runtimes with timers of their own. It should resolve early when
   * `signal` aborts.
   */
  sleep?: (ms: number, signal?: AbortSignalLike) => Promise<void>;
}

/** Options every call takes. */
export interface RequestOptions {
  /** Abandons the call (its attempts and pauses): it rejects with a MandateError `aborted` (status 0). */
  signal?: AbortSignalLike;
  /** This call's timeout per attempt, ms, instead of the client's `timeoutMs` (0 for no limit). */
  timeoutMs?: number;
  /** This call's retries, instead of the client's `maxRetries`. */
  maxRetries?: number;
}

/** Options of a call that creates something. */
export interface WriteOptions extends RequestOptions {
  /**
   * Sent as `Idempotency-Key` (1–255 visible ASCII characters): a retry with
   * the same key and body gets the first answer and creates nothing new.
   * Honoured by the issue calls, `recordAction`, `authorize` and `delegate`;
   * when retries are on, the client makes one for each such call left
   * without, so that its own retries are safe.
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
  /**
   * A W3C `traceparent` sent with the call, so the record's span joins the
   * agent's trace (honoured by recordAction, authorize, complete and delegate).
   */
  traceparent?: string;
}

/** How `authorize` waits for a human's decision when the action needs one. */
export interface WaitForApproval {
  /**
   * The longest wait, in seconds; the approval is read again (a long-poll of
   * at most 30 s each time) until it is decided or this has passed.
   */
  timeoutSeconds: number;
  /** Stops waiting: the call rejects with a MandateError `aborted`; the approval stays pending. */
  signal?: AbortSignalLike;
}

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

/** Options of `approval`: how long to wait for a decision, and whose credential reads it. */
export interface ApprovalReadOptions extends Pick<AgentAuth, "token" | "key">, RequestOptions {
  /**
   * Answer once the approval is decided, or after this many seconds (0–30)
   * if it stays pending. The wait is added to the read's timeout.
   */
  wait?: number;
}

/** Options of `events()`. */
export interface EventsOptions {
  /**
   * Start after this event (an event's `id`, `msg_…`): every later event the
   * server still keeps comes first. Without it, the events from the moment
   * the stream connects.
   */
  lastEventId?: string;
  /** Ends the iteration, and the connection, when aborted. */
  signal?: AbortSignalLike;
  /** Called each time the stream is connected (again): events from then on will be delivered. */
  onOpen?: () => void;
  /** Called each time a connection drops or cannot be made, before the pause that precedes the next attempt. */
  onDrop?: () => void;
}

/**
 * Why Mandate refused an attempt (a denied record's `deny_reason`, an
 * `authorize` answer's `reason`): the codes of mandate-core's `DenyReason`.
 */
export type DenyReason =
  | "action_not_permitted"
  | "resource_not_permitted"
  | "budget_max_spend_usd"
  | "budget_max_spend_per_action_usd"
  | "budget_max_actions"
  | "scope_widening"
  | "delegation_too_deep"
  | "too_many_children"
  | "token_revoked"
  | "token_expired"
  | "approval_required"
  | "approval_denied"
  | "approval_expired"
  | "trust_too_low"
  | "args_required"
  | "args_not_permitted";

/**
 * Every problem code the server (and mandate-core, whose codes verifiers
 * give too) may answer with: `MandateError.code` is one of these, one of
 * the client's own (`ClientErrorCode`), or a code newer than this list.
 * Copied from the server's table of problem titles
 * (host/src/error/titles.rs); the client's tests fail when the two differ.
 */
export type ProblemCode =
  | "action_not_held"
  | "action_not_permitted"
  | "admin_key"
  | "admin_required"
  | "agent_not_found"
  | "agent_not_yours"
  | "already_completed"
  | "already_rated"
  | "amount_negative"
  | "amount_not_finite"
  | "amount_too_large"
  | "amount_too_precise"
  | "approval_action_dropped"
  | "approval_action_not_held"
  | "approval_args_changed"
  | "approval_denied"
  | "approval_dropped"
  | "approval_expired"
  | "approval_not_found"
  | "approval_pending"
  | "approval_required"
  | "approval_resource_not_covered"
  | "approval_resource_outside_scope"
  | "approval_threshold_dropped"
  | "approval_threshold_raised"
  | "approval_threshold_unreachable"
  | "args_not_an_object"
  | "args_not_permitted"
  | "args_required"
  | "args_rule_dropped"
  | "args_too_large"
  | "attestation_bad_signature"
  | "attestation_expired"
  | "attestation_invalid"
  | "attestation_issued_in_future"
  | "attestation_missing_claim"
  | "attestation_too_old"
  | "attestation_unknown_key"
  | "attestation_wrong_audience"
  | "attestation_wrong_issuer"
  | "binding_dropped"
  | "broken_link"
  | "budget_max_actions"
  | "budget_max_spend_per_action_usd"
  | "budget_max_spend_usd"
  | "chain_empty"
  | "chain_too_long"
  | "checkpoint_malformed"
  | "checkpoint_origin_mismatch"
  | "claims_not_serializable"
  | "constraint_dropped"
  | "constraint_raised"
  | "control_character"
  | "delegate_not_held"
  | "delegation_too_deep"
  | "dpop_ath_mismatch"
  | "dpop_from_future"
  | "dpop_invalid"
  | "dpop_invalid_jti"
  | "dpop_invalid_key"
  | "dpop_invalid_signature"
  | "dpop_invalid_typ"
  | "dpop_invalid_url"
  | "dpop_key_mismatch"
  | "dpop_malformed"
  | "dpop_malformed_claims"
  | "dpop_malformed_header"
  | "dpop_method_mismatch"
  | "dpop_missing_ath"
  | "dpop_not_bound"
  | "dpop_replayed"
  | "dpop_required"
  | "dpop_stale"
  | "dpop_too_large"
  | "dpop_unsupported_alg"
  | "dpop_url_mismatch"
  | "duplicate_agent"
  | "duplicate_claim"
  | "duplicate_entry"
  | "duplicate_kid"
  | "duplicate_member"
  | "email_mismatch"
  | "empty_approval_requirement"
  | "empty_list"
  | "evidence_not_verified"
  | "expired"
  | "expires_in_past"
  | "forbidden_header_param"
  | "framework_dropped"
  | "id_token_bad_signature"
  | "id_token_expired"
  | "id_token_issued_in_future"
  | "id_token_malformed"
  | "id_token_missing_claim"
  | "id_token_nonce_mismatch"
  | "id_token_not_yet_valid"
  | "id_token_too_old"
  | "id_token_unknown_issuer"
  | "id_token_unknown_kid"
  | "id_token_unsupported_alg"
  | "id_token_wrong_audience"
  | "idempotency_key_required"
  | "idempotency_key_reused"
  | "inconsistent_record"
  | "index_out_of_range"
  | "inheritance_mismatch"
  | "internal"
  | "invalid_action"
  | "invalid_agent_id"
  | "invalid_args"
  | "invalid_base64"
  | "invalid_bits"
  | "invalid_claim"
  | "invalid_compression"
  | "invalid_cursor"
  | "invalid_decision"
  | "invalid_digest"
  | "invalid_email"
  | "invalid_evidence"
  | "invalid_exp"
  | "invalid_field"
  | "invalid_framework"
  | "invalid_iat"
  | "invalid_id"
  | "invalid_id_prefix"
  | "invalid_idempotency_key"
  | "invalid_key"
  | "invalid_last_event_id"
  | "invalid_lst"
  | "invalid_min_trust"
  | "invalid_nbf"
  | "invalid_now"
  | "invalid_org_name"
  | "invalid_query"
  | "invalid_reputation"
  | "invalid_resource"
  | "invalid_resource_pattern"
  | "invalid_role"
  | "invalid_rule_list"
  | "invalid_signature"
  | "invalid_status_index"
  | "invalid_status_uri"
  | "invalid_time"
  | "invalid_trust_params"
  | "invalid_typ"
  | "invalid_webhook_url"
  | "invalid_weight"
  | "issuer_mismatch"
  | "key_not_found"
  | "last_owner"
  | "leaf_malformed"
  | "leaf_not_canonical"
  | "leaf_too_large"
  | "lifetime_beyond_parent"
  | "list_too_large"
  | "list_too_long"
  | "log_frontier_malformed"
  | "log_full"
  | "log_index_out_of_range"
  | "log_proof_invalid"
  | "log_proof_too_long"
  | "log_root_mismatch"
  | "log_sizes_out_of_order"
  | "log_tile_invalid"
  | "log_tile_path_malformed"
  | "log_tile_unreadable"
  | "malformed_claims"
  | "malformed_header"
  | "malformed_json"
  | "malformed_jwks"
  | "malformed_pattern"
  | "malformed_rule"
  | "malformed_selector"
  | "malformed_signature"
  | "malformed_statement"
  | "malformed_token"
  | "max_actions_too_large"
  | "method_not_allowed"
  | "min_trust_dropped"
  | "min_trust_lowered"
  | "missing_exp"
  | "missing_field"
  | "missing_kid"
  | "no_usable_keys"
  | "not_a_number"
  | "not_an_ancestor"
  | "not_awaiting_approval"
  | "not_completable"
  | "not_found"
  | "not_in_log"
  | "not_ratable"
  | "not_root"
  | "not_the_agent"
  | "not_yet_valid"
  | "note_duplicate_signature"
  | "note_key_name_invalid"
  | "note_malformed"
  | "note_signature_invalid"
  | "note_too_large"
  | "note_too_many_signatures"
  | "note_unknown_key"
  | "oidc_discovery_mismatch"
  | "oidc_insecure_uri"
  | "oidc_keys_unavailable"
  | "org_exists"
  | "org_not_found"
  | "parent_expired"
  | "payload_too_large"
  | "plugin_bad_output"
  | "plugin_out_of_fuel"
  | "plugin_out_of_memory"
  | "plugin_oversized_output"
  | "plugin_timeout"
  | "plugin_trapped"
  | "policy_too_deep"
  | "private_key_material"
  | "provenance_mismatch"
  | "query_too_broad"
  | "quota_exceeded"
  | "quota_too_large"
  | "rate_limited"
  | "record_exists"
  | "record_not_found"
  | "resource_not_covered"
  | "resource_not_permitted"
  | "revoked"
  | "role_forbidden"
  | "rules_too_large"
  | "scope_widening"
  | "signing_key_revoked"
  | "statement_expired"
  | "statement_not_yet_valid"
  | "statement_too_large"
  | "status_index_out_of_range"
  | "status_list_expired"
  | "status_list_not_found"
  | "status_list_not_yet_valid"
  | "status_list_too_large"
  | "status_origin_not_allowed"
  | "status_stale"
  | "status_unknown"
  | "status_unrecognised"
  | "status_uri_mismatch"
  | "status_value_too_wide"
  | "subject_mismatch"
  | "tile_not_found"
  | "timestamp_out_of_range"
  | "tlog_proof_malformed"
  | "tlog_proof_too_large"
  | "token_expired"
  | "token_inactive"
  | "token_mismatch"
  | "token_not_found"
  | "token_required"
  | "token_revoked"
  | "token_suspended"
  | "token_too_large"
  | "too_long"
  | "too_many_children"
  | "too_many_keys"
  | "too_many_orgs"
  | "too_many_records"
  | "too_many_rules"
  | "too_many_statements"
  | "too_many_streams"
  | "too_many_webhooks"
  | "traceparent_invalid_flags"
  | "traceparent_invalid_parent_id"
  | "traceparent_invalid_trace_id"
  | "traceparent_invalid_version"
  | "traceparent_malformed"
  | "traceparent_zero_parent_id"
  | "traceparent_zero_trace_id"
  | "trust_too_low"
  | "ttl_out_of_range"
  | "unauthorized"
  | "unavailable"
  | "unknown_deny_reason"
  | "unknown_field"
  | "unknown_kid"
  | "unknown_operator"
  | "unknown_rating"
  | "unknown_result"
  | "unknown_verifier"
  | "unreadable_body"
  | "unsafe_number"
  | "unsupported_alg"
  | "unsupported_media_type"
  | "verifier_bad_output"
  | "vkey_id_mismatch"
  | "vkey_malformed"
  | "vkey_unsupported_type"
  | "vouch_exists"
  | "vouch_not_allowed"
  | "vouch_not_found"
  | "vouch_withdrawn"
  | "weak_key"
  | "webhook_event_type_unknown"
  | "webhook_header_malformed"
  | "webhook_header_missing"
  | "webhook_no_secret"
  | "webhook_not_found"
  | "webhook_payload_invalid"
  | "webhook_port_not_allowed"
  | "webhook_secret_invalid"
  | "webhook_signature_invalid"
  | "webhook_signature_missing"
  | "webhook_timestamp_in_future"
  | "webhook_timestamp_too_old"
  | "webhook_url_not_public"
  | "webhook_url_unresolvable"
  | "workflow_not_found"
  | "wrong_typ";

/** The codes of failures the client finds itself, before or without a server's answer. */
export type ClientErrorCode =
  /** No answer came: the network or the server is down (status 0). */
  | "network_error"
  /** An attempt took longer than its timeout (status 0). */
  | "timeout"
  /** The caller's signal abandoned the call (status 0). */
  | "aborted"
  /** The answer could not be read: not JSON, or not the event stream it should be. */
  | "invalid_response"
  /** An answer that is not a problem body, e.g. a proxy's error page. */
  | "http_error"
  /** A bound token was given without its key, so no proof could be made. */
  | "dpop_key_missing"
  /** The call's options cannot be used. */
  | "invalid_options"
  /** A value `canonicalJson` cannot write: it is not JSON data (a tool call's arguments, for the adapters). */
  | "invalid_arguments"
  /** The key set could not be fetched for a verifier. */
  | "jwks_unavailable";

/** A JSON value, as `JSON.parse` gives one. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;

/** A JSON object: what a call's `args` is (DESIGN §15). */
export interface JsonObject {
  [member: string]: JsonValue;
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

/** A pending approval, with the reviewer's page for it. */
export interface PendingApproval extends ApprovalRef {
  aar_id: string;
  /** The dashboard's page of this approval, where a reviewer decides it. */
  url: string;
}

/** Options of `act`. */
export interface ActOptions<T = unknown> extends Pick<AgentAuth, "key" | "traceparent"> {
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

/**
 * Options of `client.verifier()`: those of `createRemoteVerifier` but where
 * to fetch from and how, which the client gives. `maxStalenessSeconds` is
 * required: how long a revocation may take to reach the verifier.
 */
export type ClientVerifierOptions = Omit<RemoteVerifierOptions, "baseUrl" | "jwksUrl" | "fetch">;

/** Options of `as`: the agent's key for a bound token, and a trace to join. */
export type AgentOptions = Pick<AgentAuth, "key" | "traceparent">;

// The request and response types come from the server's OpenAPI document:
// `openapi.ts` is generated from /v1/openapi.json by openapi-typescript
// (`cargo xtask wasm`; the package's tests fail when it is stale). Each type
// the client takes or returns is the document's schema. Where the client
// knows more than the document states (values it lists only in prose, the
// claims it calls an object, the three kinds of graph node it describes in
// one schema), members are narrowed with `Narrowed`, which the compiler
// holds to the document; the two widenings (`AgentBody`, `WithInstants`)
// are the client's own conveniences. The key set is core's `Jwks`, which
// the document calls an object.

/** The document's schemas. */
type Schemas = components["schemas"];

/**
 * An answer as the server sends it. The document allows `null` in optional
 * members (a request may send one); an answer leaves such a member out and
 * never sends `null`.
 */
type Sent<T> = T extends readonly (infer Item)[]
  ? Sent<Item>[]
  : T extends object
    ? { [K in keyof T]: Sent<Exclude<T[K], null>> }
    : T;

/**
 * `T` with the members of `R` in place of its own: each must be assignable
 * to the member it replaces, so a narrowing cannot contradict the document.
 */
type Narrowed<T, R extends { [K in keyof R]: K extends keyof T ? T[K] : never }> = Omit<T, keyof R> & R;

/**
 * An agent call's body. The document requires `vat_jti`, which a call
 * without the token needs; a call that presents the token
 * (`AgentAuth.token`) may leave it out.
 */
type AgentBody<T extends { vat_jti: unknown }> = Omit<T, "vat_jti"> & { vat_jti?: T["vat_jti"] };

/**
 * A request that carries a call's arguments (`args`, DESIGN §15): the
 * server takes them on `authorize`, `record/action` and each record of
 * `record/actions`. The client's own member, typed as a JSON object, in
 * place of the document's (which, until the server's document names it,
 * has none).
 */
type WithArgs<T> = Omit<T, "args"> & { args?: JsonObject };

/**
 * What a record keeps of its call's arguments: `args_hash` (`sha256:` of
 * their canonical JSON) and, unless the server drops them, the arguments.
 * Added to the document's record until it names them; both optional, as a
 * record of a call without arguments has neither.
 */
export interface RecordArgs {
  args_hash?: string;
  args?: JsonObject;
}

/** A time bound: ISO 8601 text or a Date (sent as its ISO text). */
export type Instant = string | Date;

/** A query whose `since` and `until` may also be Dates. */
type WithInstants<T> = Omit<T, "since" | "until"> & { since?: Instant | null; until?: Instant | null };

export type ActionResult = Schemas["Outcome"];
export type Rating = Schemas["Rating"];
// The document gives these as strings and lists their values in prose.
export type RecordStatus = "awaiting_approval" | "pending" | "completed" | "denied";
export type TokenState = "active" | "revoked" | "expired";

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
/** The approval an action waits for (answered 202), or, after a wait, how it was decided. */
export type ApprovalRef = Sent<Schemas["ApprovalRef"]>;
export type AuthorizeResponse = Narrowed<
  Sent<Schemas["AuthorizeResponse"]>,
  {
    assurance_level: AssuranceLevel;
    /** Why not, when `authorized` is false and no approval is awaited. */
    reason?: DenyReason;
  }
>;
export type CompleteRequest = Schemas["CompleteRequest"];

// Approvals: what a grant's `require_approval` makes an action wait for.
export type ApprovalStatus = Schemas["ApprovalStatus"];
export type ChainLink = Sent<Schemas["ChainLink"]>;
export type Approval = Narrowed<
  Sent<Schemas["ApprovalBody"]>,
  {
    assurance_level: AssuranceLevel;
    /** The record's status now: `awaiting_approval`, then `pending` (and on) or `denied`. */
    record_status: RecordStatus;
  }
>;
export type ApprovalQuery = NonNullable<operations["approvals"]["parameters"]["query"]>;
export type ApprovalPage = Narrowed<Sent<Schemas["ApprovalPage"]>, { approvals: Approval[] }>;
export type DecisionRequest = Schemas["DecisionRequest"];

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

export type DelegateRequest = Schemas["DelegateRequest"];
export type RevokeRequest = Schemas["RevokeRequest"];
export type RevokeResponse = Sent<Schemas["RevokeResponse"]>;

export type TokenDescendant = Narrowed<Sent<Schemas["TokenSummary"]>, { status: TokenState }>;
export type TokenStatus = Narrowed<Sent<Schemas["TokenStatus"]>, { status: TokenState; descendants: TokenDescendant[] }>;
export type TokenQuery = NonNullable<operations["token"]["parameters"]["query"]>;

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

// Organisations and keys. Unlike the rest of the API, these answers send
// `null` for an absent e-mail, revocation time or quota rather than leaving
// the member out, so their types keep the document's `null`s.

/** The role of an API key within its organisation. */
export type Role = "owner" | "developer" | "reviewer" | "auditor";
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
  | "vouch";

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

// The record log's JSON answers; the checkpoint and the keys are
// text/plain, and the client returns them as strings.

/** One event of a record, as `GET /v1/vat/aar/{aar_id}/proof` lists it. */
export type RecordProofEvent = Narrowed<
  Sent<Schemas["LogEventBody"]>,
  {
    /** The event's kind, which the document lists in prose. */
    kind: "record.created" | "record.completed" | "record.rated" | "approval.decided";
  }
>;

/** `GET /v1/vat/aar/{aar_id}/proof`: every event of a record with its proof. */
export type RecordProof = Narrowed<Sent<Schemas["RecordProofBody"]>, { events: RecordProofEvent[] }>;

/** `GET /v1/log/consistency?old=N&new=M`: RFC 6962 consistency proof hashes, standard base64. */
export type LogConsistency = Sent<Schemas["ConsistencyBody"]>;

// Events (`GET /v1/events`, and the webhooks' payloads): what each type's
// `data` holds. The document states their schemas for clients; the values
// listed in prose are narrowed here.

/** A record, as `record.denied`, `record.failed` and `record.rated` carry it. */
export type RecordEventData = Narrowed<
  Sent<Schemas["RecordData"]>,
  { status: "completed" | "denied"; result?: ActionResult; rating?: Rating; deny_reason?: DenyReason }
>;
/** `token.revoked`: the token named (by its jti hash, never its jti) and how many tokens it ended. */
export type TokenRevokedEventData = Sent<Schemas["TokenRevokedData"]>;
/** `approval.requested` (status `pending`) and `approval.decided` (`approved`, `denied` or `expired`). */
export type ApprovalEventData = Narrowed<Sent<Schemas["ApprovalData"]>, { status: ApprovalStatus }>;
/** `budget.threshold`: a chain's use of a token's budget reached 80 % or 100 %. */
export type BudgetThresholdEventData = Narrowed<
  Sent<Schemas["BudgetThresholdData"]>,
  { budget: "max_spend_usd" | "max_actions"; threshold_percent: 80 | 100 }
>;

/** What each type of event carries as `data`. */
export interface EventData {
  "record.denied": RecordEventData;
  "record.failed": RecordEventData;
  "record.rated": RecordEventData;
  "token.revoked": TokenRevokedEventData;
  "approval.requested": ApprovalEventData;
  "approval.decided": ApprovalEventData;
  "budget.threshold": BudgetThresholdEventData;
}

/**
 * One event: `id` is its message id (`msg_…`, the same as its webhook's
 * `webhook-id`; pass it as `lastEventId` to resume after it), `timestamp`
 * when it happened (RFC 3339, UTC, milliseconds). Narrow on `type` to read
 * `data`. (`EventData` is indexed by the wasm build's list of types, so a
 * type without its data fails to compile.)
 */
export type MandateEvent = {
  [T in WebhookEventType]: { id: string; type: T; timestamp: string; data: EventData[T] };
}[WebhookEventType];

/**
 * An RFC 9457 problem body. Any member may be missing: the client makes
 * problems of its own (`network_error`), and a proxy in front of the server
 * may answer with anything.
 */
export type Problem = Partial<Sent<Schemas["Problem"]>> & { [member: string]: unknown };

/**
 * A refused or failed call. `status` is the HTTP status, or 0 when no answer
 * came (`network_error`, `timeout`, `aborted`) or the client refused before
 * sending (`dpop_key_missing`, `invalid_options`, or the key set's code from
 * `verifier()`). `code` is the problem's stable code: match on it.
 */
export class MandateError extends Error {
  readonly status: number;
  readonly code: ProblemCode | ClientErrorCode | (string & {});
  readonly title: string;
  readonly detail: string | undefined;
  /** The whole problem body. */
  readonly problem: Problem;
  /** The answer's headers, names in lower case; empty when no answer came. */
  readonly headers: Record<string, string>;
  /** The server's `x-request-id` for the answer, when it sent one: quote it when asking about a call. */
  readonly requestId: string | undefined;
  /** How long the server asked the caller to wait before trying again (`Retry-After`), seconds. */
  readonly retryAfter: number | undefined;

  constructor(status: number, problem: Problem, options?: { cause?: unknown; headers?: Record<string, string> }) {
    const code = problem.code ?? "http_error";
    const title = problem.title ?? `HTTP ${status}`;
    super(problem.detail ? `${title}: ${problem.detail}` : title, options);
    this.name = "MandateError";
    this.status = status;
    this.code = code;
    this.title = title;
    this.detail = problem.detail;
    this.problem = problem;
    this.headers = options?.headers ?? {};
    this.requestId = this.headers["x-request-id"];
    this.retryAfter = retryAfterSeconds(this.headers["retry-after"], Date.now());
  }
}

/**
 * A `Retry-After` value in seconds from `now` (ms): delay-seconds, or an
 * HTTP date (0 once it has passed); undefined when absent or unreadable.
 */
function retryAfterSeconds(value: string | undefined, now: number): number | undefined {
  if (value === undefined) {
    return undefined;
  }
  const text = value.trim();
  if (/^\d+$/.test(text)) {
    return Number(text);
  }
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/**
 * Mandate refused the action `act` was asked to run, and it did not run:
 * `reason` says why (`code` is the same), `aarId` names the denied record.
 * A refusal made offline, before anything was sent (the token's own
 * argument rules refuse the call: `checkArgsOffline`), has status 0 and no
 * record; its problem names the rule and statement that refused.
 */
export class MandateRefusal extends MandateError {
  readonly reason: DenyReason;
  readonly aarId: string | undefined;

  constructor(reason: DenyReason, aarId: string | undefined, detail: string, problem: Problem & { status?: 0 } = {}) {
    const { status, ...members } = problem;
    super(status ?? 403, { ...members, code: reason, title: "Refused", detail, aar_id: aarId });
    this.name = "MandateRefusal";
    this.reason = reason;
    this.aarId = aarId;
  }
}

/**
 * The action needs a human's approval that has not been given (yet): it did
 * not run. `approval.url` is the reviewer's page; once approved, the record
 * `aarId` may be completed (or `act` called again, which asks anew).
 */
export class MandateApprovalPending extends MandateError {
  readonly approval: PendingApproval;
  readonly aarId: string;

  constructor(approval: PendingApproval) {
    super(403, {
      code: "approval_pending",
      title: "Approval pending",
      detail: `a reviewer must approve this action first: ${approval.url}`,
      aar_id: approval.aar_id,
    });
    this.name = "MandateApprovalPending";
    this.approval = approval;
    this.aarId = approval.aar_id;
  }
}

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

/** The query string of `query`; members that are `undefined` or `null` are left out. */
function queryString(query: object): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query) as Array<[string, unknown]>) {
    if (value !== undefined && value !== null) {
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

/** The longest wait the server takes on one read of an approval, seconds. */
const MAX_APPROVAL_WAIT_SECONDS = 30;
/** The first pause before trying again after a failed read or a dropped stream, ms. */
const RETRY_MS = 1000;
/** The longest pause between attempts, ms. */
const MAX_RETRY_MS = 30_000;
/** The first pause before a call's retry without `Retry-After`, ms; it doubles with each retry. */
const FIRST_BACKOFF_MS = 500;
/** The longest pause before a call's retry without `Retry-After`, ms. */
const MAX_BACKOFF_MS = 8000;
/**
 * A stream silent this long is taken as dead and connected again, ms: the
 * server sends a comment every 15 s while nothing happens.
 */
const STREAM_IDLE_MS = 45_000;
/** The headers a `ResponseHeadersLike` without `forEach` is asked for. */
const KNOWN_HEADERS = ["content-type", "retry-after", "x-request-id", "www-authenticate", "etag"];

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal?: AbortSignalLike): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** A failure that trying again may cure: no answer, a rate limit, or the server unavailable. */
function transient(error: unknown): boolean {
  return (
    error instanceof MandateError &&
    ((error.status === 0 && (error.code === "network_error" || error.code === "timeout")) ||
      (error.status === 429 && error.code !== "quota_exceeded") ||
      error.status >= 500)
  );
}

/**
 * A failure after which a call safe to send again is sent again: no answer
 * (or none in time), a rate limit (not a quota, which a retry does not
 * cure), a gateway's failure, or the server unavailable.
 */
function retryable(error: MandateError): boolean {
  if (error.status === 0) {
    return error.code === "network_error" || error.code === "timeout";
  }
  return (
    (error.status === 429 && error.code !== "quota_exceeded") ||
    error.status === 502 ||
    error.status === 503 ||
    error.status === 504
  );
}

/**
 * Whether a failed attempt may have been carried out all the same: no
 * answer, or a gateway's failure. A 429 or 503 from the server kept nothing.
 */
function maybeDone(error: MandateError): boolean {
  return error.status === 0 || error.status === 502 || error.status === 504;
}

/** The problem an abandoned call rejects with. */
function aborted(signal: AbortSignalLike): MandateError {
  return new MandateError(
    0,
    { code: "aborted", title: "Aborted", detail: "the caller's signal aborted the call" },
    { cause: signal.reason },
  );
}

/**
 * A URL as an error may show it: no user name or password, no query and no
 * fragment, and each path segment that is itself a credential (a token's jti,
 * a record's `aar_id`) shown as `{jti}` or `{aar_id}`.
 */
function shownUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "(an invalid URL)";
  }
  const path = parsed.pathname
    .split("/")
    .map((part) => (/^vat_/i.test(part) ? "{jti}" : /^aar_/i.test(part) ? "{aar_id}" : part))
    .join("/");
  return `${parsed.protocol}//${parsed.host}${path}`;
}

/** The problem of a request that got no (whole) answer: it names the method and the URL (`shownUrl`). */
function networkError(
  method: string | undefined,
  url: string,
  title: string,
  cause: unknown,
  headers?: Record<string, string>,
): MandateError {
  const shown = shownUrl(url);
  const verb = (method ?? "GET").toUpperCase();
  return new MandateError(
    0,
    { code: "network_error", title, detail: `${verb} ${shown}: ${String(cause)}`, method: verb, url: shown },
    { cause, headers },
  );
}

/** The problem an attempt past its timeout rejects with. */
function timedOut(ms: number): MandateError {
  return new MandateError(0, { code: "timeout", title: "Timed out", detail: `no complete answer within ${ms} ms` });
}

/** An answer's headers as a record, names in lower case. */
function headersOf(headers: ResponseHeadersLike | undefined): Record<string, string> {
  const record: Record<string, string> = {};
  if (headers === undefined) {
    return record;
  }
  if (typeof headers.forEach === "function") {
    headers.forEach((value, name) => {
      record[name.toLowerCase()] = value;
    });
    return record;
  }
  for (const name of KNOWN_HEADERS) {
    const value = headers.get(name);
    if (value !== null) {
      record[name] = value;
    }
  }
  return record;
}

/** A signal that aborts when any of `signals` does (or one of them, when only one is given). */
function anySignal(...signals: Array<AbortSignalLike | undefined>): AbortSignalLike | undefined {
  const given = signals.filter((signal): signal is AbortSignalLike => signal !== undefined);
  if (given.length <= 1) {
    return given[0];
  }
  const controller = new AbortController();
  for (const signal of given) {
    if (signal.aborted) {
      controller.abort(signal.reason);
      break;
    }
    signal.addEventListener("abort", () => controller.abort(signal.reason), { once: true });
  }
  return controller.signal;
}

/** 16 random bytes as hex, from the platform's cryptographic generator (the wasm module's where there is none). */
function randomHex(): string {
  const crypto = (globalThis as { crypto?: { getRandomValues(bytes: Uint8Array): Uint8Array } }).crypto;
  if (crypto !== undefined) {
    return Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, "0")).join("");
  }
  // A fresh key's thumbprint: 256 bits drawn by the wasm module.
  const key = generateAgentKey();
  const jkt = key.jkt;
  key.free();
  return jkt;
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

/** A problem body from an answer's text, or its status text. */
function problemOf(text: string, statusText: string): Problem {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    data = undefined;
  }
  return isObject(data) ? data : { title: statusText || undefined };
}

/** An event of the stream from its SSE `id` and `data` (the webhook payload), or undefined if it is not one. */
function eventOf(id: string, data: string): MandateEvent | undefined {
  let payload: unknown;
  try {
    payload = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (
    !isObject(payload) ||
    typeof payload.type !== "string" ||
    typeof payload.timestamp !== "string" ||
    !isObject(payload.data)
  ) {
    return undefined;
  }
  return { id, type: payload.type, timestamp: payload.timestamp, data: payload.data } as MandateEvent;
}

/** The `Authorization` value and headers a request carries. */
type Credential = { authorization: string; dpop?: string } | undefined;

/** A count option (ms, retries): `fallback` when absent; refused when negative or not a number. */
function count(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) {
    return fallback;
  }
  if (typeof value !== "number" || Number.isNaN(value) || value < 0) {
    throw new MandateError(0, {
      code: "invalid_options",
      title: "Invalid options",
      detail: `${name} must be a number, 0 or more`,
    });
  }
  return value;
}

/** A new agent key from the platform's cryptographic random generator. */
export function generateAgentKey(): AgentKey {
  const key: unknown = AgentKey.generate();
  if (key instanceof AgentKey) {
    return key;
  }
  const error = (key as { error: { code: string; message: string } }).error;
  throw new MandateError(0, { code: error.code, title: "No agent key", detail: error.message });
}

/** How a request goes out: the internals of one call, beside the caller's options. */
interface CallOptions extends WriteOptions {
  /** A W3C `traceparent`, sent as it is. */
  traceparent?: string | undefined;
  /** `Accept`; default JSON. */
  accept?: string;
  /**
   * Whether the call may be sent again: `read` (a GET), `write` (a write
   * the server honours an `Idempotency-Key` for: one is made when missing),
   * or `once` (never sent again).
   */
  retry: "read" | "write" | "once";
  /** Added to each attempt's timeout, ms (a long-poll's wait). */
  extraTimeoutMs?: number;
  /** Told of each failed attempt that will be retried. */
  onRetry?: (error: MandateError) => void;
}

/** An answer read in full within its attempt's timeout. */
interface Answer {
  status: number;
  statusText: string;
  headers: Record<string, string>;
  text: string;
  /** The URL finally answered from, when the fetch says. */
  url?: string;
}

/** An answer whose body is a stream, read after the attempt. */
interface StreamAnswer {
  status: number;
  statusText: string;
  headers: Record<string, string>;
  response: Awaited<ReturnType<FetchLike>>;
}

/** A client of one Mandate server. */
export class MandateClient {
  readonly #base: string;
  readonly #apiKey: string | undefined;
  readonly #fetch: FetchLike;
  readonly #timeoutMs: number;
  readonly #maxRetries: number;
  readonly #maxRetryDelayMs: number;
  readonly #onResponse: ((response: ResponseInfo) => void) | undefined;
  readonly #sleep: (ms: number, signal?: AbortSignalLike) => Promise<void>;
  /** Completions refused as done twice after an attempt whose answer was lost (`act` takes them as its own). */
  readonly #unconfirmed = new WeakSet<MandateError>();

  constructor(options: MandateClientOptions) {
    this.#base = String(options.baseUrl).replace(/\/+$/, "");
    this.#apiKey = options.apiKey;
    const fetch = options.fetch ?? (globalThis as { fetch?: FetchLike }).fetch;
    if (fetch === undefined) {
      throw new TypeError("MandateClient needs a fetch implementation");
    }
    // Called unbound: a browser's fetch refuses any `this` but the global.
    this.#fetch = (url, init) => fetch(url, init);
    this.#timeoutMs = count("timeoutMs", options.timeoutMs, DEFAULT_TIMEOUT_MS);
    this.#maxRetries = Math.floor(count("maxRetries", options.maxRetries, DEFAULT_MAX_RETRIES));
    this.#maxRetryDelayMs = count("maxRetryDelayMs", options.maxRetryDelayMs, DEFAULT_MAX_RETRY_DELAY_MS);
    this.#onResponse = options.onResponse;
    this.#sleep = options.sleep ?? pause;
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

  /** The headers of a request with `credential`. */
  #headers(accept: string, credential: Credential): Record<string, string> {
    const headers: Record<string, string> = { accept };
    if (credential !== undefined) {
      headers.authorization = credential.authorization;
      if (credential.dpop !== undefined) {
        headers.dpop = credential.dpop;
      }
    }
    return headers;
  }

  /**
   * One attempt: sends the request and reads the answer (the whole body,
   * unless `stream`) within `timeoutMs`. No answer, the timeout or the
   * caller's `signal` reject with a MandateError. A fetch that ignores its
   * signal is left behind, not waited for.
   */
  async #exchange(
    url: string,
    init: Parameters<FetchLike>[1],
    signal: AbortSignalLike | undefined,
    timeoutMs: number,
    attempt: number,
    stream: true,
  ): Promise<StreamAnswer>;
  async #exchange(
    url: string,
    init: Parameters<FetchLike>[1],
    signal: AbortSignalLike | undefined,
    timeoutMs: number,
    attempt: number,
    stream?: false,
  ): Promise<Answer>;
  async #exchange(
    url: string,
    init: Parameters<FetchLike>[1],
    signal: AbortSignalLike | undefined,
    timeoutMs: number,
    attempt: number,
    stream = false,
  ): Promise<Answer | StreamAnswer> {
    if (signal?.aborted) {
      throw aborted(signal);
    }
    const controller = new AbortController();
    let stop: (error: MandateError) => void = () => undefined;
    const stopped = new Promise<never>((_, reject) => {
      stop = reject;
    });
    stopped.catch(() => undefined);
    const onAbort = (): void => {
      controller.abort(signal?.reason);
      if (signal !== undefined) {
        stop(aborted(signal));
      }
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    let timer: ReturnType<typeof setTimeout> | undefined;
    if (timeoutMs > 0 && Number.isFinite(timeoutMs)) {
      timer = setTimeout(() => {
        const error = timedOut(timeoutMs);
        controller.abort(error);
        stop(error);
      }, timeoutMs);
    }
    let kept = false;
    try {
      let response: Awaited<ReturnType<FetchLike>>;
      try {
        response = await Promise.race([this.#fetch(url, { ...init, signal: controller.signal }), stopped]);
      } catch (cause) {
        if (cause instanceof MandateError) {
          throw cause;
        }
        throw networkError(init.method, url, "Network error", cause);
      }
      const headers = headersOf(response.headers);
      this.#onResponse?.({
        method: init.method,
        url,
        status: response.status,
        headers,
        requestId: headers["x-request-id"],
        attempt,
      });
      if (stream) {
        // The stream's reading is abandoned with the caller's signal, not the timeout.
        kept = response.ok;
        return { status: response.status, statusText: response.statusText, headers, response };
      }
      let text: string;
      try {
        text = await Promise.race([response.text(), stopped]);
      } catch (cause) {
        if (cause instanceof MandateError) {
          throw cause;
        }
        throw networkError(init.method, url, "Network error", cause, headers);
      }
      const answer: Answer = { status: response.status, statusText: response.statusText, headers, text };
      if (typeof response.url === "string" && response.url !== "") {
        answer.url = response.url;
      }
      return answer;
    } finally {
      clearTimeout(timer);
      if (!kept) {
        signal?.removeEventListener("abort", onAbort);
      }
    }
  }

  /**
   * Sends a request, and sends it again after a failure that trying again
   * may cure when the call is safe to send again: answers the first
   * successful answer, or rejects with the last failure.
   */
  async #request(method: string, path: string, credential: () => Credential, body: unknown, options: CallOptions): Promise<Answer> {
    const url = `${this.#base}${path}`;
    const maxRetries = options.retry === "once" ? 0 : Math.floor(count("maxRetries", options.maxRetries, this.#maxRetries));
    const timeoutMs = count("timeoutMs", options.timeoutMs, this.#timeoutMs);
    const extra = timeoutMs > 0 ? (options.extraTimeoutMs ?? 0) : 0;
    let idempotencyKey = options.idempotencyKey;
    if (idempotencyKey === undefined && options.retry === "write" && maxRetries > 0) {
      idempotencyKey = `mandate-sdk-${randomHex()}`;
    }
    const text = body === undefined ? undefined : JSON.stringify(body);
    for (let attempt = 1; ; attempt += 1) {
      // A fresh credential per attempt: a DPoP proof is good for one request.
      const headers = this.#headers(options.accept ?? "application/json", credential());
      if (idempotencyKey !== undefined) {
        headers["idempotency-key"] = idempotencyKey;
      }
      if (options.traceparent !== undefined) {
        headers.traceparent = options.traceparent;
      }
      const init: Parameters<FetchLike>[1] = { method, headers };
      if (text !== undefined) {
        headers["content-type"] = "application/json";
        init.body = text;
      }
      let failure: MandateError;
      try {
        const answer = await this.#exchange(url, init, options.signal, timeoutMs + extra, attempt);
        if (answer.status >= 200 && answer.status < 300) {
          return answer;
        }
        failure = new MandateError(answer.status, problemOf(answer.text, answer.statusText), { headers: answer.headers });
      } catch (error) {
        if (!(error instanceof MandateError)) {
          throw error;
        }
        failure = error;
      }
      if (attempt > maxRetries || !retryable(failure)) {
        throw failure;
      }
      let delay = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (attempt - 1)) * (1 - Math.random() * 0.25);
      if (failure.retryAfter !== undefined) {
        delay = failure.retryAfter * 1000;
      }
      if (delay > this.#maxRetryDelayMs) {
        if (failure.retryAfter !== undefined) {
          throw failure;
        }
        delay = this.#maxRetryDelayMs;
      }
      options.onRetry?.(failure);
      await this.#sleep(delay, options.signal);
      if (options.signal?.aborted) {
        throw aborted(options.signal);
      }
    }
  }

  /** A call answered with JSON: the answer, or a MandateError. */
  async #call<T>(
    method: "GET" | "POST" | "PATCH" | "DELETE",
    path: string,
    credential: Credential | (() => Credential),
    body: unknown,
    options: CallOptions,
  ): Promise<T> {
    const answer = await this.#request(
      method,
      path,
      typeof credential === "function" ? credential : () => credential,
      body,
      options,
    );
    let data: unknown;
    try {
      data = JSON.parse(answer.text);
    } catch {
      data = undefined;
    }
    if (data === undefined) {
      throw new MandateError(
        answer.status,
        { code: "invalid_response", title: "Invalid response", detail: "the server did not answer with JSON" },
        { headers: answer.headers },
      );
    }
    return data as T;
  }

  /** A GET answered with text (`text/plain`): the text, or a MandateError. */
  async #text(path: string, options: RequestOptions = {}): Promise<string> {
    const answer = await this.#request("GET", path, () => undefined, undefined, {
      ...options,
      accept: "text/plain",
      retry: "read",
    });
    return answer.text;
  }

  /** `POST /v1/vat/issue/l1`: a root token for an agent, on the API key. */
  issueL1(request: IssueL1Request, options: WriteOptions = {}): Promise<IssuedToken> {
    return this.#call("POST", "/v1/vat/issue/l1", this.#key(), request, { ...options, retry: "write" });
  }

  /** `POST /v1/vat/issue/l2`: a root token at L2 (trust 0.7), on the API key and the human's OIDC ID token. */
  issueL2(request: IssueL2Request, options: WriteOptions = {}): Promise<IssuedToken> {
    return this.#call("POST", "/v1/vat/issue/l2", this.#key(), request, { ...options, retry: "write" });
  }

  /** `POST /v1/vat/auth/capture`: a root token at L3 (trust 0.95), once a configured verifier accepts the evidence. */
  authCapture(request: AuthCaptureRequest, options: WriteOptions = {}): Promise<IssuedToken> {
    return this.#call("POST", "/v1/vat/auth/capture", this.#key(), request, { ...options, retry: "write" });
  }

  /** `POST /v1/vat/record/action`: an action done and its result, in one step. */
  async recordAction(request: RecordActionRequest, auth: AgentAuth = {}): Promise<RecordActionResponse> {
    const path = "/v1/vat/record/action";
    return this.#call("POST", path, () => this.#agent("POST", path, auth), request, { ...auth, retry: "write" });
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
    const path = "/v1/vat/record/actions";
    const body: RecordActionsRequest = { records };
    return this.#call("POST", path, () => this.#agent("POST", path, auth), body, { ...auth, retry: "write" });
  }

  /**
   * `POST /v1/vat/authorize`: asks before acting; a refusal is `authorized: false`, not an error. An action a grant
   * requires a human's approval for answers `authorized: false` with the pending `approval` — at once, or, with
   * `waitForApproval`, once it is decided or the wait times out (see `AuthorizeOptions`).
   */
  async authorize(request: AuthorizeRequest, auth: AuthorizeOptions = {}): Promise<AuthorizeResponse> {
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
      if (auth.token === undefined && this.#apiKey === undefined) {
        throw new MandateError(0, {
          code: "token_required",
          title: "Token required",
          detail: "waiting for an approval reads it with the agent's token (auth.token) or the client's API key",
        });
      }
    }
    const answer: AuthorizeResponse = await this.#call("POST", path, () => this.#agent("POST", path, auth), request, {
      ...options,
      retry: "write",
    });
    if (wait === undefined || answer.approval?.status !== "pending") {
      return answer;
    }
    return this.#awaitDecision(answer, answer.approval, wait, auth);
  }

  /**
   * Reads the approval `pending` until it is decided or `wait` times out,
   * and answers `answer` as the decision makes it. A failure that trying
   * again may cure is tried again, after a pause (or the `Retry-After`
   * asked for), while time is left; each read is sent once, this loop
   * being its retries.
   */
  async #awaitDecision(
    answer: AuthorizeResponse,
    pending: ApprovalRef,
    wait: WaitForApproval,
    auth: AgentAuth,
  ): Promise<AuthorizeResponse> {
    const deadline = Date.now() + wait.timeoutSeconds * 1000;
    const signal = anySignal(wait.signal, auth.signal);
    const read: ApprovalReadOptions = { signal, maxRetries: 0 };
    if (auth.timeoutMs !== undefined) {
      read.timeoutMs = auth.timeoutMs;
    }
    if (auth.token !== undefined) {
      read.token = auth.token;
      read.key = auth.key;
    }
    let retry = RETRY_MS;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) {
        return answer;
      }
      let approval: Approval;
      try {
        approval = await this.approval(pending.approval_id, {
          ...read,
          wait: Math.min(MAX_APPROVAL_WAIT_SECONDS, Math.ceil(left / 1000)),
        });
      } catch (error) {
        const delay = Math.max(retry, error instanceof MandateError ? (error.retryAfter ?? 0) * 1000 : 0);
        if (!transient(error) || deadline - Date.now() <= delay) {
          throw error;
        }
        await this.#sleep(delay, signal);
        if (signal?.aborted) {
          throw aborted(signal);
        }
        retry = Math.min(retry * 2, MAX_RETRY_MS);
        continue;
      }
      retry = RETRY_MS;
      if (approval.status === "pending") {
        continue;
      }
      const decided: AuthorizeResponse = { ...answer, approval: { ...pending, status: approval.status } };
      if (approval.status === "approved") {
        decided.authorized = true;
      } else {
        decided.reason = approval.status === "denied" ? "approval_denied" : "approval_expired";
      }
      return decided;
    }
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
    const path = `/v1/vat/aar/${segment(aarId)}/complete`;
    let lost = false;
    try {
      return await this.#call("POST", path, () => this.#agent("POST", path, auth), request, {
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
      if (this.#apiKey !== undefined) {
        const record = await this.record(aarId, { signal: auth.signal, timeoutMs: auth.timeoutMs }).catch(() => undefined);
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
      this.#unconfirmed.add(unconfirmed);
      throw unconfirmed;
    }
  }

  /** `POST /v1/vat/aar/{aar_id}/feedback`: a human's one rating of a completed action. */
  feedback(aarId: string, request: FeedbackRequest, options: RequestOptions = {}): Promise<FeedbackResponse> {
    return this.#call("POST", `/v1/vat/aar/${segment(aarId)}/feedback`, this.#key(), request, { ...options, retry: "once" });
  }

  /** `GET /v1/vat/reputation/{agent_id}`; the id bare or as `agent:<id>`. */
  reputation(agentId: string, options: RequestOptions = {}): Promise<AgentReputation> {
    return this.#call("GET", `/v1/vat/reputation/${segment(agentId)}`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /** `GET /v1/vat/aar/provenance/{provenance_ref}`: the workflow summary. */
  provenance(provenanceRef: string, options: RequestOptions = {}): Promise<ProvenanceSummary> {
    return this.#call("GET", `/v1/vat/aar/provenance/${segment(provenanceRef)}`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /** `GET /v1/vat/aar/provenance/{provenance_ref}/graph`: tokens and records of a workflow. */
  graph(provenanceRef: string, options: RequestOptions = {}): Promise<WorkflowGraph> {
    return this.#call("GET", `/v1/vat/aar/provenance/${segment(provenanceRef)}/graph`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /** `GET /v1/vat/aar/{aar_id}`: one full record. */
  record(aarId: string, options: RequestOptions = {}): Promise<ActionRecord> {
    return this.#call("GET", `/v1/vat/aar/${segment(aarId)}`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /** `GET /v1/vat/aar`: one page of records, newest first; `rated: false` for the completed records awaiting a rating. */
  recordsPage(query: RecordQuery = {}, options: RequestOptions = {}): Promise<RecordPage> {
    return this.#call("GET", `/v1/vat/aar${queryString(query)}`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /** Every record matching `query`, newest first, fetching page after page as iteration goes on. */
  async *records(query: RecordQuery = {}, options: RequestOptions = {}): AsyncGenerator<ActionRecord, void, undefined> {
    let cursor = query.cursor;
    do {
      const page = await this.recordsPage({ ...query, cursor }, options);
      yield* page.records;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /** `GET /v1/vat/workflows`: one page of workflows, newest activity first. */
  workflowsPage(query: WorkflowQuery = {}, options: RequestOptions = {}): Promise<WorkflowPage> {
    return this.#call("GET", `/v1/vat/workflows${queryString(query)}`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /** Every workflow matching `query`, page after page. */
  async *workflows(query: WorkflowQuery = {}, options: RequestOptions = {}): AsyncGenerator<Workflow, void, undefined> {
    let cursor = query.cursor;
    do {
      const page = await this.workflowsPage({ ...query, cursor }, options);
      yield* page.workflows;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /**
   * `POST /v1/vat/aar/feedback`: rates every completed record of a workflow with one `result` that nobody has rated
   * yet ("approve every success"), each as `feedback` would, in one transaction; a key whose role may `rate`.
   * Answers how many were rated and their ids (`rated: 0` when none waited); 422 `too_many_records` above 1000,
   * and then nothing is rated.
   */
  rateWorkflow(request: RateWorkflowRequest, options: RequestOptions = {}): Promise<RateWorkflowResponse> {
    return this.#call("POST", "/v1/vat/aar/feedback", this.#key(), request, { ...options, retry: "once" });
  }

  /** `GET /v1/vat/inbox/counts`: approvals pending and completed records awaiting a rating. */
  inboxCounts(options: RequestOptions = {}): Promise<InboxCounts> {
    return this.#call("GET", "/v1/vat/inbox/counts", this.#key(), undefined, { ...options, retry: "read" });
  }

  /**
   * `GET /v1/vat/agents`: one page of the organisation's agents, with scores, their counts over `window` (default
   * `7d`) and the last 14 days' outcomes; sorted by `sort` (default `activity`) and `order`.
   */
  agentsPage(query: AgentQuery = {}, options: RequestOptions = {}): Promise<AgentPage> {
    return this.#call("GET", `/v1/vat/agents${queryString(query)}`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /** Every agent matching `query`, in its order, page after page. */
  async *agents(query: AgentQuery = {}, options: RequestOptions = {}): AsyncGenerator<AgentSummary, void, undefined> {
    let cursor = query.cursor;
    do {
      const page = await this.agentsPage({ ...query, cursor }, options);
      yield* page.agents;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /**
   * `GET /v1/vat/agents/{agent_id}/history`: the agent's last `days` UTC days (1–90, default 30), oldest first, with
   * its combined reputation as each ended; the id bare or as `agent:<id>`.
   */
  agentHistory(agentId: string, query: AgentHistoryQuery = {}, options: RequestOptions = {}): Promise<AgentHistory> {
    return this.#call("GET", `/v1/vat/agents/${segment(agentId)}/history${queryString(query)}`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /** `GET /v1/vat/overview`: the organisation over `window` (`24h` by hour, the default; `7d` or `30d` by day). */
  overview(query: OverviewQuery = {}, options: RequestOptions = {}): Promise<Overview> {
    return this.#call("GET", `/v1/vat/overview${queryString(query)}`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /** `GET /v1/vat/tokens`: one page of the organisation's tokens, active first, each newest issued first. */
  tokensPage(query: TokenListQuery = {}, options: RequestOptions = {}): Promise<TokenPage> {
    return this.#call("GET", `/v1/vat/tokens${queryString(query)}`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /** Every token matching `query`, active first, page after page. */
  async *tokens(query: TokenListQuery = {}, options: RequestOptions = {}): AsyncGenerator<TokenListItem, void, undefined> {
    let cursor = query.cursor;
    do {
      const page = await this.tokensPage({ ...query, cursor }, options);
      yield* page.tokens;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /**
   * `POST /v1/vat/delegate`: a narrower child token. Delegating changes
   * authority, so it needs the parent token itself as `auth.token` (and its
   * `key` when bound); a `vat_jti` alone is refused.
   */
  async delegate(request: DelegateRequest, auth: AgentAuth = {}): Promise<DelegatedToken> {
    const path = "/v1/vat/delegate";
    return this.#call("POST", path, () => this.#agent("POST", path, auth), request, { ...auth, retry: "write" });
  }

  /**
   * `POST /v1/vat/revoke`: revokes a token and all its descendants. On the
   * API key, or, with `auth.token`, on the revoking agent's own token (an
   * ancestor of the target, or the target itself). Never sent twice: the
   * server keeps no `Idempotency-Key` for it.
   */
  async revoke(request: RevokeRequest, auth: AgentAuth = {}): Promise<RevokeResponse> {
    const path = "/v1/vat/revoke";
    const credential = (): Credential => (auth.token === undefined ? this.#key() : this.#agent("POST", path, auth));
    const { idempotencyKey: _unused, ...options } = auth;
    return this.#call("POST", path, credential, request, { ...options, retry: "once" });
  }

  /**
   * `GET /v1/vat/tokens/{jth}`: a token's status and a page of its descendants, the token named by its jti hash (as
   * lists show it) or by its jti (as its holder was given it). Every token in the answer is named by jti hash.
   */
  token(name: string, query: TokenQuery = {}, options: RequestOptions = {}): Promise<TokenStatus> {
    return this.#call("GET", `/v1/vat/tokens/${segment(name)}${queryString(query)}`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /**
   * `GET /v1/vat/approvals/{approval_id}`: an approval, what its agent asks and the chain it acts for; with `wait`,
   * answered once it is decided or after that many seconds (0–30). Read with the client's API key, or with the agent's
   * token (`token`, and `key` when bound): an agent reads the approvals of its own records and its descendants'.
   */
  async approval(approvalId: string, options: ApprovalReadOptions = {}): Promise<Approval> {
    const path = `/v1/vat/approvals/${segment(approvalId)}`;
    const credential = (): Credential => (options.token === undefined ? this.#key() : this.#agent("GET", path, options));
    const { token: _token, key: _key, wait, ...rest } = options;
    return this.#call("GET", `${path}${queryString({ wait })}`, credential, undefined, {
      ...rest,
      retry: "read",
      extraTimeoutMs: (wait ?? 0) * 1000,
    });
  }

  /** `GET /v1/vat/approvals`: one page of the organisation's approvals, newest first (`status` to choose). */
  approvalsPage(query: ApprovalQuery = {}, options: RequestOptions = {}): Promise<ApprovalPage> {
    return this.#call("GET", `/v1/vat/approvals${queryString(query)}`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /** Every approval matching `query`, newest first, page after page. */
  async *approvals(query: ApprovalQuery = {}, options: RequestOptions = {}): AsyncGenerator<Approval, void, undefined> {
    let cursor = query.cursor;
    do {
      const page = await this.approvalsPage({ ...query, cursor }, options);
      yield* page.approvals;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /**
   * `POST /v1/vat/approvals/{approval_id}/decision`: approves or denies, with an optional note; a key whose role
   * may `decide` (reviewer, owner). Answers the decided approval; 409 `not_awaiting_approval` when it was decided
   * before, `approval_expired` when it lapsed first.
   */
  decide(approvalId: string, request: DecisionRequest, options: RequestOptions = {}): Promise<Approval> {
    return this.#call("POST", `/v1/vat/approvals/${segment(approvalId)}/decision`, this.#key(), request, { ...options, retry: "once" });
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
    const { signal } = options;
    // The standard's last event ID: kept across events and connections, sent when connecting again.
    let lastEventId = options.lastEventId;
    let reconnectMs = RETRY_MS;
    let failures = 0;
    // The pause a refusal's `Retry-After` asks for, ms.
    let asked = 0;
    const ready: MandateEvent[] = [];
    let invalid: string | undefined;
    const parser = createParser({
      onEvent: (message) => {
        if (invalid !== undefined) {
          return;
        }
        if (message.id !== undefined) {
          lastEventId = message.id;
        }
        const event = eventOf(lastEventId ?? "", message.data);
        if (event === undefined) {
          invalid = message.data;
        } else {
          ready.push(event);
        }
      },
      onRetry: (ms) => {
        reconnectMs = ms;
      },
    });
    while (!signal?.aborted) {
      const connection = new AbortController();
      const stop = (): void => connection.abort();
      signal?.addEventListener("abort", stop, { once: true });
      let idle: ReturnType<typeof setTimeout> | undefined;
      try {
        const reader = await this.#openEvents(lastEventId, connection.signal);
        failures = 0;
        parser.reset();
        options.onOpen?.();
        const decoder = new TextDecoder();
        for (;;) {
          idle = setTimeout(stop, STREAM_IDLE_MS);
          let chunk;
          try {
            chunk = await reader.read();
          } catch (cause) {
            throw networkError("GET", `${this.#base}/v1/events`, "Stream dropped", cause);
          }
          clearTimeout(idle);
          if (chunk.done) {
            break;
          }
          parser.feed(decoder.decode(chunk.value, { stream: true }));
          while (ready.length > 0) {
            yield ready.shift() as MandateEvent;
          }
          if (invalid !== undefined) {
            throw new MandateError(0, {
              code: "invalid_response",
              title: "Invalid response",
              detail: `an event's data is not a Mandate event: ${invalid.slice(0, 200)}`,
            });
          }
        }
      } catch (error) {
        if (signal?.aborted) {
          return;
        }
        if (!transient(error)) {
          throw error;
        }
        failures += 1;
        asked = error instanceof MandateError ? (error.retryAfter ?? 0) * 1000 : 0;
      } finally {
        clearTimeout(idle);
        signal?.removeEventListener("abort", stop);
        connection.abort();
      }
      if (!signal?.aborted) {
        options.onDrop?.();
      }
      const backoff = Math.min(reconnectMs * 2 ** Math.max(0, failures - 1), MAX_RETRY_MS);
      await this.#sleep(Math.max(backoff, Math.min(asked, this.#maxRetryDelayMs)), signal);
      asked = 0;
    }
  }

  /** Connects to the event stream (after `lastEventId`), answering the body's reader or a MandateError. */
  async #openEvents(lastEventId: string | undefined, signal: AbortSignalLike) {
    const headers = this.#headers("text/event-stream", this.#key());
    if (lastEventId !== undefined && lastEventId !== "") {
      headers["last-event-id"] = lastEventId;
    }
    const url = `${this.#base}/v1/events`;
    const answer = await this.#exchange(url, { method: "GET", headers }, signal, this.#timeoutMs, 1, true);
    const { response } = answer;
    if (!response.ok) {
      const text = await response.text().catch(() => "");
      throw new MandateError(response.status, problemOf(text, response.statusText), { headers: answer.headers });
    }
    const type = answer.headers["content-type"] ?? "";
    if (!/^text\/event-stream\s*(;|$)/i.test(type) || !response.body) {
      throw new MandateError(response.status, {
        code: "invalid_response",
        title: "Invalid response",
        detail: response.body
          ? `the server answered ${type || "no content type"}, not text/event-stream`
          : "this fetch gives no response body to stream",
      });
    }
    return response.body.getReader();
  }

  /** `GET /v1/me`: the API key's organisation, role and permissions; any key may ask. */
  me(options: RequestOptions = {}): Promise<Me> {
    return this.#call("GET", "/v1/me", this.#key(), undefined, { ...options, retry: "read" });
  }

  /** `POST /v1/orgs`: a new organisation and its first owner key, shown only in this answer; the admin key only. */
  createOrg(request: CreateOrgRequest, options: RequestOptions = {}): Promise<OrgCreated> {
    return this.#call("POST", "/v1/orgs", this.#key(), request, { ...options, retry: "once" });
  }

  /** `GET /v1/orgs`: one page of the deployment's organisations, oldest first; the admin key only. */
  listOrgs(query: OrgQuery = {}, options: RequestOptions = {}): Promise<OrgPage> {
    return this.#call("GET", `/v1/orgs${queryString(query)}`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /** `PATCH /v1/orgs/{org_id}`: replaces an organisation's quotas; the admin key only. */
  updateOrg(orgId: string, request: UpdateOrgRequest, options: RequestOptions = {}): Promise<Org> {
    return this.#call("PATCH", `/v1/orgs/${segment(orgId)}`, this.#key(), request, { ...options, retry: "once" });
  }

  /** `POST /v1/keys`: a new API key of the caller's organisation, shown only in this answer; an owner key only. */
  createKey(request: CreateKeyRequest, options: RequestOptions = {}): Promise<IssuedKey> {
    return this.#call("POST", "/v1/keys", this.#key(), request, { ...options, retry: "once" });
  }

  /** `GET /v1/keys`: the organisation's API keys, newest first; an owner key only. */
  listKeys(options: RequestOptions = {}): Promise<KeyList> {
    return this.#call("GET", "/v1/keys", this.#key(), undefined, { ...options, retry: "read" });
  }

  /** `DELETE /v1/keys/{key_id}`: revokes an API key at once; an owner key only. */
  revokeKey(keyId: string, options: RequestOptions = {}): Promise<ApiKey> {
    return this.#call("DELETE", `/v1/keys/${segment(keyId)}`, this.#key(), undefined, { ...options, retry: "once" });
  }

  /** `GET /v1/vat/aar/{aar_id}/proof`: every event of a record with its inclusion proof; check it with `verifyRecordProof`. */
  recordProof(aarId: string, options: RequestOptions = {}): Promise<RecordProof> {
    return this.#call("GET", `/v1/vat/aar/${segment(aarId)}/proof`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /** `GET /v1/log/checkpoint`: the record log's latest signed checkpoint (a C2SP signed note); check it with `verifyCheckpoint`. */
  logCheckpoint(options: RequestOptions = {}): Promise<string> {
    return this.#text("/v1/log/checkpoint", options);
  }

  /** `GET /v1/log/key`: the log's verifier keys (signed-note vkeys), one a line, the active one first. */
  logKey(options: RequestOptions = {}): Promise<string> {
    return this.#text("/v1/log/key", options);
  }

  /** `GET /v1/log/consistency?old=N&new=M`: the proof that the tree of `newSize` leaves extends the tree of `oldSize`. */
  logConsistency(oldSize: number, newSize: number, options: RequestOptions = {}): Promise<LogConsistency> {
    return this.#call("GET", `/v1/log/consistency${queryString({ old: oldSize, new: newSize })}`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /** `GET /.well-known/jwks.json`: the public keys tokens are signed with. */
  jwks(options: RequestOptions = {}): Promise<Jwks> {
    return this.#call("GET", "/.well-known/jwks.json", undefined, undefined, { ...options, retry: "read" });
  }

  /**
   * `POST /v1/trust/vouches`: vouches for an agent of the organisation. On the client's API key (a role that may
   * `vouch`: owner, reviewer), or, with `auth.token` (and `key` when bound), as the agent holding that token, for
   * an agent it delegated to (else 403 `vouch_not_allowed`). 409 `vouch_exists` while the same voucher's vouch
   * for that agent is active. Never sent twice: a lost answer is seen by reading the agent's `trust`.
   */
  async vouch(request: VouchRequest, auth: AgentAuth = {}): Promise<Vouch> {
    const path = "/v1/trust/vouches";
    const credential = (): Credential => (auth.token === undefined ? this.#key() : this.#agent("POST", path, auth));
    const { token: _token, key: _key, traceparent: _trace, idempotencyKey: _unused, ...options } = auth;
    const body: Record<string, unknown> = { ...request };
    if (request.expires_at instanceof Date) {
      body.expires_at = request.expires_at.toISOString();
    }
    return this.#call("POST", path, credential, body, { ...options, retry: "once" });
  }

  /**
   * `DELETE /v1/trust/vouches/{vouch_id}`: withdraws a vouch, by its voucher (the same API key, or with
   * `auth.token` the same agent) or an owner key; answers it with `withdrawn_at`. 409 `vouch_withdrawn` the second
   * time.
   */
  async withdrawVouch(vouchId: string, auth: AgentAuth = {}): Promise<Vouch> {
    const path = `/v1/trust/vouches/${segment(vouchId)}`;
    const credential = (): Credential => (auth.token === undefined ? this.#key() : this.#agent("DELETE", path, auth));
    const { token: _token, key: _key, traceparent: _trace, idempotencyKey: _unused, ...options } = auth;
    return this.#call("DELETE", path, credential, undefined, { ...options, retry: "once" });
  }

  /** `GET /v1/trust/agents/{agent_id}`: the agent's trust, its parts and the active vouches it receives and gives. */
  trust(agentId: string, options: RequestOptions = {}): Promise<AgentTrust> {
    return this.#call("GET", `/v1/trust/agents/${segment(agentId)}`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /** `GET /v1/trust/graph`: one page of the organisation's trust graph, agents in id order with their vouches. */
  trustGraphPage(query: TrustGraphQuery = {}, options: RequestOptions = {}): Promise<TrustGraphPage> {
    return this.#call("GET", `/v1/trust/graph${queryString(query)}`, this.#key(), undefined, { ...options, retry: "read" });
  }

  /** The whole trust graph, page after page as iteration goes on: each page's agents and their vouches. */
  async *trustGraph(query: TrustGraphQuery = {}, options: RequestOptions = {}): AsyncGenerator<TrustGraphPage, void, undefined> {
    let cursor = query.cursor;
    do {
      const page = await this.trustGraphPage({ ...query, cursor }, options);
      yield page;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /**
   * `GET /v1/trust/agents/{agent_id}/statement`: the agent's signed trust statement, a compact JWT
   * (`trust-statement+jwt`, a few minutes' lifetime) that anyone holding the server's key set checks offline with
   * `verifyTrustStatement`. On the client's API key, or with `auth.token` on the agent's own token.
   */
  async trustStatement(agentId: string, auth: Pick<AgentAuth, "token" | "key"> & RequestOptions = {}): Promise<string> {
    const path = `/v1/trust/agents/${segment(agentId)}/statement`;
    const credential = (): Credential => (auth.token === undefined ? this.#key() : this.#agent("GET", path, auth));
    const { token: _token, key: _key, ...options } = auth;
    const answer = await this.#request("GET", path, credential, undefined, {
      ...options,
      accept: "application/trust-statement+jwt",
      retry: "read",
    });
    return answer.text.trim();
  }

  /** A fetch for the remote verifier: one attempt through the client's fetch, within its timeout. */
  async #statusFetch(url: string, init: Parameters<StatusFetch>[1]): ReturnType<StatusFetch> {
    const request = { method: init.method, headers: init.headers, credentials: init.credentials };
    const answer = await this.#exchange(url, request, undefined, this.#timeoutMs, 1);
    const response: Awaited<ReturnType<StatusFetch>> = {
      ok: answer.status >= 200 && answer.status < 300,
      status: answer.status,
      headers: { get: (name) => answer.headers[name.toLowerCase()] ?? null },
      text: async () => answer.text,
    };
    if (answer.url !== undefined) {
      response.url = answer.url;
    }
    return response;
  }

  /** The dashboard's page of an approval, where a reviewer decides it. */
  approvalUrl(approvalId: string): string {
    return `${this.#base}/#/approval/${segment(approvalId)}`;
  }

  /** The dashboard's page of a workflow: its chain of tokens and every record. */
  workflowUrl(provenanceRef: string): string {
    return `${this.#base}/#/workflow/${segment(provenanceRef)}`;
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
    const auth: AgentAuth = { token, key: options.key, traceparent: options.traceparent };
    if (options.timeoutMs !== undefined) {
      auth.timeoutMs = options.timeoutMs;
    }
    // Arguments the token's own rules refuse are refused here: nothing is sent.
    const offline = checkArgsOffline(token, request);
    if (offline !== undefined) {
      throw offline;
    }
    // The caller's signal abandons the asking; the completion is sent whatever happens.
    let authorization = await this.authorize(request, { ...auth, signal: options.signal });
    const pending = authorization.approval;
    if (!authorization.authorized && pending?.status === "pending") {
      const approval: PendingApproval = {
        ...pending,
        aar_id: authorization.aar_id,
        url: this.approvalUrl(pending.approval_id),
      };
      await options.onApproval?.(approval);
      if (options.waitForApproval === undefined) {
        throw new MandateApprovalPending(approval);
      }
      authorization = await this.#awaitDecision(authorization, pending, options.waitForApproval, {
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
      await this.#completeOnce(authorization.aar_id, { result }, completion);
      throw error;
    }
    const hash = (options.resultHash ?? outputHash)(output);
    const body: CompleteRequest = { result: "success" };
    if (hash !== undefined) {
      body.result_hash = hash;
    }
    await this.#completeOnce(authorization.aar_id, body, completion);
    return output;
  }

  /**
   * `complete` for `act`: a record refused as completed already after an
   * attempt whose answer was lost was completed by that attempt (only this
   * call completes the record `act` just authorized).
   */
  async #completeOnce(aarId: string, request: CompleteRequest, auth: AgentAuth): Promise<void> {
    try {
      await this.complete(aarId, request, auth);
    } catch (error) {
      if (!(error instanceof MandateError && this.#unconfirmed.has(error))) {
        throw error;
      }
    }
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
    if (options !== undefined && "maxStalenessSeconds" in options && options.maxStalenessSeconds !== undefined) {
      return createRemoteVerifier({
        ...(options as ClientVerifierOptions),
        baseUrl: this.#base,
        fetch: (url, init) => this.#statusFetch(url, init),
      });
    }
    const verifier = new Verifier(await this.jwks(), options);
    const error = verifier.error;
    if (error !== null) {
      verifier.free();
      throw new MandateError(0, { code: error.code, title: "Unusable key set", detail: error.message });
    }
    return verifier;
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
