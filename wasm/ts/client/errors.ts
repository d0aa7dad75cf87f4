// The client's errors: every problem code the server may answer with
// (`ProblemCode`, copied from host/src/error/titles.rs), the client's own
// (`ClientErrorCode`), the refusal reasons of mandate-core (`DenyReason`),
// and the errors every call rejects with — `MandateError`, and the two `act`
// throws before running anything: `MandateRefusal` and
// `MandateApprovalPending`.

import type { PendingApproval } from "./approvals.js";
import type { Schemas, Sent } from "./types.js";

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
  | "actor_token_refused"
  | "add_checkpoint_malformed"
  | "add_checkpoint_too_large"
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
  | "audience_changed"
  | "audience_dropped"
  | "audience_mismatch"
  | "authorization_request_refused"
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
  | "client_document_auth_method"
  | "client_document_client_id_mismatch"
  | "client_document_duplicate_member"
  | "client_document_invalid_member"
  | "client_document_missing_member"
  | "client_document_not_json"
  | "client_document_redirect_uri"
  | "client_document_refused"
  | "client_document_shared_secret"
  | "client_document_too_large"
  | "client_id_invalid"
  | "client_mismatch"
  | "client_not_found"
  | "client_proof_invalid"
  | "client_proof_method"
  | "client_proof_outside_audience"
  | "client_proof_required"
  | "code_challenge_invalid"
  | "code_challenge_missing"
  | "code_invalid"
  | "code_verifier_invalid"
  | "code_verifier_mismatch"
  | "code_verifier_missing"
  | "consent_needs_email"
  | "consent_session_invalid"
  | "consent_session_other_request"
  | "constraint_dropped"
  | "constraint_raised"
  | "control_character"
  | "cosignature_invalid"
  | "cosignature_malformed"
  | "cosignatures_insufficient"
  | "csrf_refused"
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
  | "empty_text"
  | "evidence_not_verified"
  | "expired"
  | "expires_in_past"
  | "forbidden_header_param"
  | "form_malformed"
  | "form_required"
  | "framework_dropped"
  | "grant_exhausted"
  | "grant_expired"
  | "grant_idle"
  | "grant_not_found"
  | "grant_revoked"
  | "grant_type_unsupported"
  | "holder_key_invalid"
  | "human_not_yours"
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
  | "invalid_request_id"
  | "invalid_resource"
  | "invalid_resource_pattern"
  | "invalid_revoked"
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
  | "mandate_grant_invalid"
  | "max_actions_too_large"
  | "method_not_allowed"
  | "min_trust_dropped"
  | "min_trust_lowered"
  | "missing_exp"
  | "missing_field"
  | "missing_kid"
  | "missing_provenance_ref"
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
  | "parameter_missing"
  | "parameter_repeated"
  | "parent_expired"
  | "payload_too_large"
  | "pkce_method_not_s256"
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
  | "redirect_uri_fragment"
  | "redirect_uri_invalid"
  | "redirect_uri_mismatch"
  | "redirect_uri_not_https"
  | "redirect_uri_userinfo"
  | "refresh_token_invalid"
  | "refresh_token_reused"
  | "refresh_token_unknown"
  | "relay_beyond_reservation"
  | "relay_cph_mismatch"
  | "relay_invalid"
  | "relay_invalid_typ"
  | "relay_malformed_claims"
  | "relay_no_audience"
  | "relay_not_allowed"
  | "relay_not_registered"
  | "relay_not_yours"
  | "relay_required"
  | "request_answered"
  | "request_invalid"
  | "requested_token_type_unsupported"
  | "resource_exists"
  | "resource_mismatch"
  | "resource_not_covered"
  | "resource_not_found"
  | "resource_not_permitted"
  | "resource_uri_fragment"
  | "resource_uri_malformed"
  | "resource_uri_scheme"
  | "resource_uri_too_long"
  | "revoked"
  | "role_forbidden"
  | "rules_too_large"
  | "scope_malformed"
  | "scope_not_a_token"
  | "scope_reserved_action"
  | "scope_token_invalid"
  | "scope_too_long"
  | "scope_widening"
  | "sign_in_provider_failed"
  | "sign_in_provider_unknown"
  | "sign_in_refused"
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
  | "subject_token_invalid"
  | "subject_token_type_unsupported"
  | "subject_unsupported"
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
  | "too_many_clients"
  | "too_many_keys"
  | "too_many_orgs"
  | "too_many_records"
  | "too_many_resources"
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
  | "unsupported_grant_type"
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
  | "witness_bad_proof"
  | "witness_bad_request"
  | "witness_bad_signature"
  | "witness_conflict"
  | "witness_policy_duplicate_key"
  | "witness_policy_duplicate_name"
  | "witness_policy_max_age_zero"
  | "witness_policy_threshold_above_witnesses"
  | "witness_policy_threshold_zero"
  | "witness_split_view"
  | "witness_unknown_origin"
  | "witness_vkey_unsupported_type"
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
  | "jwks_unavailable"
  /** A framework adapter runs on a Node or with a framework version it does not support (status 0): the detail names both. */
  | "unsupported_environment";

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
