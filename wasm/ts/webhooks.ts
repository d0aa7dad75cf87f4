// Webhooks from Mandate, received: `verifyWebhook` takes the request's
// headers as a `Headers` object or a plain record (Node's `req.headers`,
// Express, Fastify…) and hands them, as [name, value] pairs, to the wasm
// export `verifyWebhookPairs`, where core checks the Standard Webhooks
// signature, the timestamp and the payload. This file owns no rule.

import { verifyWebhookPairs, type ErrorInfo, type WebhookResult } from "./mandate_wasm.js";

/** What is read of a fetch `Headers` object (declared here, so Node consumers need no DOM types). */
export interface HeadersLike {
  get(name: string): string | null;
  forEach(callback: (value: string, name: string) => void): void;
}

/** A request's headers: a fetch `Headers` object, or a record whose values are strings (or lists of them, one per line received). */
export type WebhookHeaders = HeadersLike | Record<string, string | readonly string[] | undefined>;

export interface VerifyWebhookOptions {
  /** How far `webhook-timestamp` may be from `now`, either way, in seconds. Default 300. */
  toleranceSeconds?: number;
  /** Unix seconds. Default: the clock. */
  now?: number;
}

function refusal(message: string): { valid: false; error: ErrorInfo } {
  return { valid: false, error: { code: "invalid_argument", message, stage: "input" } };
}

/** A fetch `Headers` object, whichever implementation made it (Node's, undici's, node-fetch's, a worker's). */
function isHeaders(value: object): value is HeadersLike {
  const candidate = value as { get?: unknown; forEach?: unknown };
  return typeof candidate.get === "function" && typeof candidate.forEach === "function";
}

/** The headers as [name, value] pairs, or `undefined` for anything else. */
function headerPairs(headers: unknown): [string, string][] | undefined {
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) {
    return undefined;
  }
  const pairs: [string, string][] = [];
  if (isHeaders(headers)) {
    headers.forEach((value, name) => pairs.push([name, value]));
    return pairs;
  }
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === "string") {
      pairs.push([name, value]);
    } else if (Array.isArray(value) && value.every((item) => typeof item === "string")) {
      // A header received twice: each line counts, so the check sees the repetition.
      for (const item of value) {
        pairs.push([name, item]);
      }
    } else if (value !== undefined) {
      return undefined;
    }
  }
  return pairs;
}

/**
 * Checks a webhook Mandate sent (Standard Webhooks, symmetric `v1` signatures): that a signature in `webhook-signature`
 * was made with one of `secret` (`whsec_…`; give the old and the new one while rotating), that `webhook-timestamp` is
 * within `toleranceSeconds` (default 300) of now, and that the body is a Mandate event. `body` must be the raw bytes
 * received (or their text), not a parsed and re-serialised object. Answers `{ valid: true, id, event }` — `id` is
 * `webhook-id`, the same on every retry of one event — or `{ valid: false, error }` with a stable `code`
 * (`webhook_signature_invalid`, `webhook_timestamp_too_old`…). Never throws.
 */
export function verifyWebhook(
  secret: string | readonly string[],
  headers: WebhookHeaders,
  body: string | Uint8Array,
  options: VerifyWebhookOptions = {},
): WebhookResult {
  const pairs = headerPairs(headers);
  if (pairs === undefined) {
    return refusal("headers must be a Headers object or a record of strings");
  }
  if (typeof options !== "object" || options === null) {
    return { valid: false, error: { code: "invalid_options", message: "options must be an object", stage: "input" } };
  }
  const secrets = typeof secret === "string" ? [secret] : secret;
  return verifyWebhookPairs(secrets as string[], pairs, body, options.now, options.toleranceSeconds);
}
