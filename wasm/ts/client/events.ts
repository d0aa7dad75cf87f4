// Events: the organisation's Server-Sent Events (`GET /v1/events`), read
// with `fetch` (an EventSource cannot send an Authorization header),
// parsed by eventsource-parser, connected again after a drop with
// `Last-Event-ID` so that no event is missed; and what each type of event
// carries, here and in the webhooks' payloads.

import type { WebhookEventType } from "../mandate_wasm.js";
import type { ApprovalStatus } from "./approvals.js";
import { type DenyReason, MandateError } from "./errors.js";
import {
  type AbortSignalLike,
  isObject,
  MAX_RETRY_MS,
  networkError,
  problemOf,
  RETRY_MS,
  transient,
  type Transport,
} from "./transport.js";
import type { ActionResult, Narrowed, Rating, Schemas, Sent } from "./types.js";
import { createParser } from "eventsource-parser";

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
 * A stream silent this long is taken as dead and connected again, ms: the
 * server sends a comment every 15 s while nothing happens.
 */
const STREAM_IDLE_MS = 45_000;

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

/** `MandateClient.events`, documented there. */
export async function* events(t: Transport, options: EventsOptions = {}): AsyncGenerator<MandateEvent, void, undefined> {
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
      const reader = await openEvents(t, lastEventId, connection.signal);
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
          throw networkError("GET", `${t.base}/v1/events`, "Stream dropped", cause);
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
    await t.sleep(Math.max(backoff, Math.min(asked, t.maxRetryDelayMs)), signal);
    asked = 0;
  }
}

/** Connects to the event stream (after `lastEventId`), answering the body's reader or a MandateError. */
export async function openEvents(t: Transport, lastEventId: string | undefined, signal: AbortSignalLike) {
  const headers = t.headers("text/event-stream", t.key());
  if (lastEventId !== undefined && lastEventId !== "") {
    headers["last-event-id"] = lastEventId;
  }
  const url = `${t.base}/v1/events`;
  const answer = await t.exchange(url, { method: "GET", headers }, signal, t.timeoutMs, 1, true);
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
