// Approvals: what a grant's `require_approval` makes an action wait for —
// reading one (a long-poll with `wait`), listing them, deciding, the
// reviewer's page, and the wait `authorize` and `act` make for a decision.

import type { AssuranceLevel } from "../mandate_wasm.js";
import { MandateError } from "./errors.js";
import type { MandateClient } from "./index.js";
import type { operations } from "./openapi.js";
import type { AuthorizeResponse } from "./records.js";
import {
  aborted,
  type AbortSignalLike,
  type AgentAuth,
  anySignal,
  type Credential,
  MAX_RETRY_MS,
  queryString,
  type RequestOptions,
  RETRY_MS,
  segment,
  transient,
  type Transport,
} from "./transport.js";
import type { Narrowed, RecordStatus, Schemas, Sent } from "./types.js";

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

/** Options of `approval`: how long to wait for a decision, and whose credential reads it. */
export interface ApprovalReadOptions extends Pick<AgentAuth, "token" | "key" | "relayKey">, RequestOptions {
  /**
   * Answer once the approval is decided, or after this many seconds (0–30)
   * if it stays pending. The wait is added to the read's timeout.
   */
  wait?: number;
}

/** The approval an action waits for (answered 202), or, after a wait, how it was decided. */
export type ApprovalRef = Sent<Schemas["ApprovalRef"]>;

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

/** A pending approval, with the reviewer's page for it. */
export interface PendingApproval extends ApprovalRef {
  aar_id: string;
  /** The dashboard's page of this approval, where a reviewer decides it. */
  url: string;
}

/** The longest wait the server takes on one read of an approval, seconds. */
const MAX_APPROVAL_WAIT_SECONDS = 30;

/**
 * Reads the approval `pending` until it is decided or `wait` times out,
 * and answers `answer` as the decision makes it. A failure that trying
 * again may cure is tried again, after a pause (or the `Retry-After`
 * asked for), while time is left; each read is sent once, this loop
 * being its retries.
 */
export async function awaitDecision(
  t: Transport,
  client: MandateClient,
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
    if (auth.relayKey !== undefined) {
      read.relayKey = auth.relayKey;
    }
  }
  let retry = RETRY_MS;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) {
      return answer;
    }
    let approval: Approval;
    try {
      approval = await client.approval(pending.approval_id, {
        ...read,
        wait: Math.min(MAX_APPROVAL_WAIT_SECONDS, Math.ceil(left / 1000)),
      });
    } catch (error) {
      const delay = Math.max(retry, error instanceof MandateError ? (error.retryAfter ?? 0) * 1000 : 0);
      if (!transient(error) || deadline - Date.now() <= delay) {
        throw error;
      }
      await t.sleep(delay, signal);
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

/** `MandateClient.approval`, documented there. */
export async function approval(t: Transport, approvalId: string, options: ApprovalReadOptions = {}): Promise<Approval> {
  const path = `/v1/vat/approvals/${segment(approvalId)}`;
  const credential = (): Credential => (options.token === undefined ? t.key() : t.agent("GET", path, options));
  const { token: _token, key: _key, relayKey: _relayKey, wait, ...rest } = options;
  return t.call("GET", `${path}${queryString({ wait })}`, credential, undefined, {
    ...rest,
    retry: "read",
    extraTimeoutMs: (wait ?? 0) * 1000,
  });
}

/** `GET /v1/vat/approvals`: one page of the organisation's approvals, newest first (`status` to choose). */
export function approvalsPage(t: Transport, query: ApprovalQuery = {}, options: RequestOptions = {}): Promise<ApprovalPage> {
  return t.call("GET", `/v1/vat/approvals${queryString(query)}`, t.key(), undefined, { ...options, retry: "read" });
}

/** Every approval matching `query`, newest first, page after page. */
export async function* approvals(
  client: MandateClient,
  query: ApprovalQuery = {},
  options: RequestOptions = {},
): AsyncGenerator<Approval, void, undefined> {
  let cursor = query.cursor;
  do {
    const page = await client.approvalsPage({ ...query, cursor }, options);
    yield* page.approvals;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
}

/** `MandateClient.decide`, documented there. */
export function decide(t: Transport, approvalId: string, request: DecisionRequest, options: RequestOptions = {}): Promise<Approval> {
  return t.call("POST", `/v1/vat/approvals/${segment(approvalId)}/decision`, t.key(), request, { ...options, retry: "once" });
}

/** The dashboard's page of an approval, where a reviewer decides it. */
export function approvalUrl(t: Transport, approvalId: string): string {
  return `${t.base}/#/approval/${segment(approvalId)}`;
}
