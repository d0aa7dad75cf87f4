// How every call of the client goes out (the `Transport` each operation
// module calls through). Every call has a timeout (per attempt; `timeoutMs`) and may be abandoned
// with an AbortSignal. A call that is safe to send again — a read, or a
// write carrying an `Idempotency-Key`, which the client makes itself for
// every write the server honours one for — is sent again after a failure
// that trying again may cure (no answer, a timeout, 429, 502, 503, 504),
// after the pause the server asks for (`Retry-After`) or a growing pause
// with jitter. Every answer's headers reach `onResponse`; a failure's ride
// on its MandateError (`headers`, `requestId`, `retryAfter`).
//
// The credential a call carries follows the contract: the API key for
// issuing and reading (`key()`); for agent calls the agent's own token
// (`agent()`) — as `Authorization: Bearer`, or, for a token bound to the
// agent's key, as `Authorization: DPoP` with a fresh proof (RFC 9449)
// signed by that key for each request; nothing for the public key set.

import { AgentKey, decodeTokenUnverified } from "../mandate_wasm.js";
import type { StatusFetch } from "../remote.js";
import { MandateError, type Problem } from "./errors.js";

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
   * An MCP gate's relay key, for a client's token bound to a key the gate
   * does not hold (not `key`'s): each call then carries the gate's own
   * proof (`Mandate-Relay`, signed by this key, which the token's
   * organisation registered for the token's `aud` with
   * `POST /v1/oauth/resources`) instead of a DPoP proof.
   */
  relayKey?: AgentKey;
  /**
   * With `relayKey`: the client's DPoP proof, exactly as the gate received
   * it, sent as `Mandate-Client-DPoP` (`authorize` uses it up; a completion
   * or an approval read carries the relay proof alone). Mandate takes it
   * once: a retry of the same call after a lost answer is refused.
   */
  forwardedProof?: string;
  /**
   * A W3C `traceparent` sent with the call, so the record's span joins the
   * agent's trace (honoured by recordAction, authorize, complete and delegate).
   */
  traceparent?: string;
}

/** The query string of `query`; members that are `undefined` or `null` are left out. */
export function queryString(query: object): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query) as Array<[string, unknown]>) {
    if (value !== undefined && value !== null) {
      params.set(name, value instanceof Date ? value.toISOString() : String(value));
    }
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

export const segment = encodeURIComponent;

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The first pause before trying again after a failed read or a dropped stream, ms. */
export const RETRY_MS = 1000;
/** The longest pause between attempts, ms. */
export const MAX_RETRY_MS = 30_000;
/** The first pause before a call's retry without `Retry-After`, ms; it doubles with each retry. */
const FIRST_BACKOFF_MS = 500;
/** The longest pause before a call's retry without `Retry-After`, ms. */
const MAX_BACKOFF_MS = 8000;

/** The headers a `ResponseHeadersLike` without `forEach` is asked for. */
const KNOWN_HEADERS = ["content-type", "retry-after", "x-request-id", "www-authenticate", "etag"];

/** Resolves after `ms`, or at once when `signal` aborts. */
export function pause(ms: number, signal?: AbortSignalLike): Promise<void> {
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
export function transient(error: unknown): boolean {
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
export function maybeDone(error: MandateError): boolean {
  return error.status === 0 || error.status === 502 || error.status === 504;
}

/** The problem an abandoned call rejects with. */
export function aborted(signal: AbortSignalLike): MandateError {
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
export function networkError(
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
export function anySignal(...signals: Array<AbortSignalLike | undefined>): AbortSignalLike | undefined {
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
export function randomHex(): string {
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

/** A problem body from an answer's text, or its status text. */
export function problemOf(text: string, statusText: string): Problem {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    data = undefined;
  }
  return isObject(data) ? data : { title: statusText || undefined };
}

/** The `Authorization` value and headers a request carries. */
export type Credential = { authorization: string; dpop?: string; relay?: string; clientDpop?: string } | undefined;

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
export interface CallOptions extends WriteOptions {
  /** A W3C `traceparent`, sent as it is. */
  traceparent?: string | undefined;
  /** `Accept`; default JSON. */
  accept?: string;
  /**
   * Whether the call may be sent again: `read` (a GET), `write` (a write
   * the server honours an `Idempotency-Key` for: one is made when missing),
   * `keyed` (a write that carries its own key, `requestId`: sent again as
   * it is), or `once` (never sent again).
   */
  retry: "read" | "write" | "keyed" | "once";
  /** Sent as `X-Request-ID`: the key an AuthZEN evaluation is replayed by (AuthZEN §10.1.3). */
  requestId?: string;
  /** Added to each attempt's timeout, ms (a long-poll's wait). */
  extraTimeoutMs?: number;
  /** Told of each failed attempt that will be retried. */
  onRetry?: (error: MandateError) => void;
}

/** An answer read in full within its attempt's timeout. */
export interface Answer {
  status: number;
  statusText: string;
  headers: Record<string, string>;
  text: string;
  /** The URL finally answered from, when the fetch says. */
  url?: string;
}

/** An answer whose body is a stream, read after the attempt. */
export interface StreamAnswer {
  status: number;
  statusText: string;
  headers: Record<string, string>;
  response: Awaited<ReturnType<FetchLike>>;
}

/** How a client reaches its server: its address, credentials, fetch, timeouts and retries. */
export class Transport {
  readonly base: string;
  readonly apiKey: string | undefined;
  readonly fetch: FetchLike;
  readonly timeoutMs: number;
  readonly maxRetries: number;
  readonly maxRetryDelayMs: number;
  readonly onResponse: ((response: ResponseInfo) => void) | undefined;
  readonly sleep: (ms: number, signal?: AbortSignalLike) => Promise<void>;
  /** Completions refused as done twice after an attempt whose answer was lost (`act` takes them as its own). */
  readonly unconfirmed = new WeakSet<MandateError>();

  constructor(options: MandateClientOptions) {
    this.base = String(options.baseUrl).replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    const fetch = options.fetch ?? (globalThis as { fetch?: FetchLike }).fetch;
    if (fetch === undefined) {
      throw new TypeError("MandateClient needs a fetch implementation");
    }
    // Called unbound: a browser's fetch refuses any `this` but the global.
    this.fetch = (url, init) => fetch(url, init);
    this.timeoutMs = count("timeoutMs", options.timeoutMs, DEFAULT_TIMEOUT_MS);
    this.maxRetries = Math.floor(count("maxRetries", options.maxRetries, DEFAULT_MAX_RETRIES));
    this.maxRetryDelayMs = count("maxRetryDelayMs", options.maxRetryDelayMs, DEFAULT_MAX_RETRY_DELAY_MS);
    this.onResponse = options.onResponse;
    this.sleep = options.sleep ?? pause;
  }

  /** The API key as a credential. */
  key(): Credential {
    return this.apiKey === undefined ? undefined : { authorization: `Bearer ${this.apiKey}` };
  }

  /**
   * An agent's token as a credential for one request: Bearer, or for a bound
   * token DPoP with a proof by `auth.key` for this method and URL.
   */
  agent(method: string, path: string, auth: AgentAuth | undefined): Credential {
    if (auth?.token === undefined) {
      return undefined;
    }
    const decoded = decodeTokenUnverified(auth.token);
    const jkt = decoded.ok ? decoded.claims.cnf?.jkt : undefined;
    if (jkt === undefined) {
      return { authorization: `Bearer ${auth.token}` };
    }
    if ((auth.key === undefined || auth.key.jkt !== jkt) && auth.relayKey !== undefined) {
      return this.relayed(method, path, auth.token, auth.relayKey, auth.forwardedProof);
    }
    if (auth.key === undefined || auth.key.jkt !== jkt) {
      throw new MandateError(0, {
        code: "dpop_key_missing",
        title: "Proof of possession needed",
        detail: "the token is bound to a key: pass that AgentKey as `key` so each call carries its proof",
      });
    }
    const made = auth.key.proof({ method, url: `${this.base}${path}`, accessToken: auth.token });
    if (!made.ok) {
      throw new MandateError(0, { code: made.error.code, title: "No proof", detail: made.error.message });
    }
    return { authorization: `DPoP ${auth.token}`, dpop: made.proof };
  }

  /**
   * A client's bound token relayed by an MCP gate for one request: the
   * token as `DPoP`, the gate's relay proof by `relayKey` for this method
   * and URL, naming the client's `forwarded` proof, which goes with it.
   */
  relayed(method: string, path: string, token: string, relayKey: AgentKey, forwarded: string | undefined): Credential {
    const made = relayKey.relayProof({
      method,
      url: `${this.base}${path}`,
      accessToken: token,
      ...(forwarded === undefined ? {} : { forwardedProof: forwarded }),
    });
    if (!made.ok) {
      throw new MandateError(0, { code: made.error.code, title: "No relay proof", detail: made.error.message });
    }
    const credential: NonNullable<Credential> = { authorization: `DPoP ${token}`, relay: made.proof };
    if (forwarded !== undefined) {
      credential.clientDpop = forwarded;
    }
    return credential;
  }

  /** The headers of a request with `credential`. */
  headers(accept: string, credential: Credential): Record<string, string> {
    const headers: Record<string, string> = { accept };
    if (credential !== undefined) {
      headers.authorization = credential.authorization;
      if (credential.dpop !== undefined) {
        headers.dpop = credential.dpop;
      }
      if (credential.relay !== undefined) {
        headers["mandate-relay"] = credential.relay;
      }
      if (credential.clientDpop !== undefined) {
        headers["mandate-client-dpop"] = credential.clientDpop;
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
  async exchange(
    url: string,
    init: Parameters<FetchLike>[1],
    signal: AbortSignalLike | undefined,
    timeoutMs: number,
    attempt: number,
    stream: true,
  ): Promise<StreamAnswer>;
  async exchange(
    url: string,
    init: Parameters<FetchLike>[1],
    signal: AbortSignalLike | undefined,
    timeoutMs: number,
    attempt: number,
    stream?: false,
  ): Promise<Answer>;
  async exchange(
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
        response = await Promise.race([this.fetch(url, { ...init, signal: controller.signal }), stopped]);
      } catch (cause) {
        if (cause instanceof MandateError) {
          throw cause;
        }
        throw networkError(init.method, url, "Network error", cause);
      }
      const headers = headersOf(response.headers);
      this.onResponse?.({
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
  async request(method: string, path: string, credential: () => Credential, body: unknown, options: CallOptions): Promise<Answer> {
    const url = `${this.base}${path}`;
    const maxRetries = options.retry === "once" ? 0 : Math.floor(count("maxRetries", options.maxRetries, this.maxRetries));
    const timeoutMs = count("timeoutMs", options.timeoutMs, this.timeoutMs);
    const extra = timeoutMs > 0 ? (options.extraTimeoutMs ?? 0) : 0;
    let idempotencyKey = options.idempotencyKey;
    if (idempotencyKey === undefined && options.retry === "write" && maxRetries > 0) {
      idempotencyKey = `mandate-sdk-${randomHex()}`;
    }
    const text = body === undefined ? undefined : JSON.stringify(body);
    for (let attempt = 1; ; attempt += 1) {
      // A fresh credential per attempt: a DPoP proof is good for one request.
      const headers = this.headers(options.accept ?? "application/json", credential());
      if (idempotencyKey !== undefined) {
        headers["idempotency-key"] = idempotencyKey;
      }
      if (options.traceparent !== undefined) {
        headers.traceparent = options.traceparent;
      }
      if (options.requestId !== undefined) {
        headers["x-request-id"] = options.requestId;
      }
      const init: Parameters<FetchLike>[1] = { method, headers };
      if (text !== undefined) {
        headers["content-type"] = "application/json";
        init.body = text;
      }
      let failure: MandateError;
      try {
        const answer = await this.exchange(url, init, options.signal, timeoutMs + extra, attempt);
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
      if (delay > this.maxRetryDelayMs) {
        if (failure.retryAfter !== undefined) {
          throw failure;
        }
        delay = this.maxRetryDelayMs;
      }
      options.onRetry?.(failure);
      await this.sleep(delay, options.signal);
      if (options.signal?.aborted) {
        throw aborted(options.signal);
      }
    }
  }

  /** A call answered with JSON: the answer, or a MandateError. */
  async call<T>(
    method: "GET" | "POST" | "PATCH" | "DELETE",
    path: string,
    credential: Credential | (() => Credential),
    body: unknown,
    options: CallOptions,
  ): Promise<T> {
    const answer = await this.request(
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
  async text(path: string, options: RequestOptions = {}): Promise<string> {
    const answer = await this.request("GET", path, () => undefined, undefined, {
      ...options,
      accept: "text/plain",
      retry: "read",
    });
    return answer.text;
  }

  /** A fetch for the remote verifier: one attempt through the client's fetch, within its timeout. */
  async statusFetch(url: string, init: Parameters<StatusFetch>[1]): ReturnType<StatusFetch> {
    const request = { method: init.method, headers: init.headers, credentials: init.credentials };
    const answer = await this.exchange(url, request, undefined, this.timeoutMs, 1);
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
}
