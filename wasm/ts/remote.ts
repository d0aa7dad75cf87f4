// RemoteVerifier: a Verifier that fetches what it needs from one Mandate
// server — its key set once, and the status list (IETF Token Status List)
// each token names — so an edge worker or a browser refuses a revoked token
// without calling the API for every request.
//
// What it fetches, and from where:
// - Status lists only from an allowed origin: by default the origin of the
//   server's key set, never the origin a token happens to name (a token must
//   not make its verifier fetch arbitrary URLs). A token naming another
//   origin is refused (`status_origin_not_allowed`).
// - Only for a token that passed every other check: a forged or expired
//   token triggers no fetch.
// - With `Accept: application/statuslist+jwt`, without credentials, and with
//   `If-None-Match` when a list of that URI is held.
//
// How long a list is kept:
// - A list is fetched again once its `ttl` has passed since it was fetched,
//   the `ttl` held within [MIN_STATUS_TTL_SECONDS, MAX_STATUS_TTL_SECONDS]
//   (the draft's advice: a server's ttl of 1 s, or of a year, is not taken
//   as it is). HTTP caching headers are ignored: the signed `ttl` and `exp`
//   decide (the draft says they take precedence).
// - A `304 Not Modified` keeps the held list and restarts its ttl: the
//   server says the list is current. It does not make the list younger:
//   its age for `maxStalenessSeconds` is counted from its signed `iat`,
//   which an unsigned 304 (or a cache answering one) cannot vouch for.
// - A list whose fetch fails is still used while the Verifier accepts it
//   (not expired, not older than `maxStalenessSeconds`); past that the
//   token is refused (`status_stale`, `status_list_expired`), and with no
//   list at all `status_unknown`: it fails closed. A URI is fetched at most
//   once per MIN_STATUS_TTL_SECONDS, whatever happens.

import { MandateError, verifyAttempt, type AttemptResult, type Attempt as CallAttempt } from "./client/index.js";
import {
  Verifier,
  decodeTokenUnverified,
  type Jwks,
  type RequestCheck,
  type VerifierOptions,
  type VerifyResult,
} from "./mandate_wasm.js";

/** The media type of a status list token in JWT form. */
export const STATUS_LIST_MEDIA_TYPE = "application/statuslist+jwt";
/** A list is kept at least this long, and its URI fetched at most once per this long (seconds). */
export const MIN_STATUS_TTL_SECONDS = 10;
/** A list is fetched again at the latest this long after it was fetched, whatever its `ttl` (seconds). */
export const MAX_STATUS_TTL_SECONDS = 3600;
/**
 * The key set is fetched again, for a kid it lacks, at most once per this
 * long after it was last fetched (seconds) by default, as jose's
 * `createRemoteJWKSet` does with its `cooldownDuration`.
 */
const KEY_REFRESH_SECONDS = 30;

/** The part of the Fetch API the remote verifier uses; `globalThis.fetch` fits. */
export type StatusFetch = (
  url: string,
  init: { method: "GET"; headers: Record<string, string>; credentials: "omit" },
) => Promise<{
  ok: boolean;
  status: number;
  /** The URL finally answered from, after redirects (when the implementation says). */
  url?: string;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}>;

export interface RemoteVerifierOptions
  extends Omit<VerifierOptions, "checkStatus" | "maxStalenessSeconds" | "statusOrigins"> {
  /** The Mandate server, e.g. `https://mandate.example.com` (a path prefix is kept): its key set is `<baseUrl>/.well-known/jwks.json`. */
  baseUrl?: string;
  /** The key set's URL, instead of `baseUrl`. */
  jwksUrl?: string;
  /**
   * Refuse a token whose status list was signed longer ago than this (`status_stale`): how long a revocation may
   * take to reach this verifier. Required: only the caller knows what it can afford.
   */
  maxStalenessSeconds: number;
  /** Origins (`https://host[:port]`) status lists may be fetched from; default the key set's origin only. */
  allowedStatusOrigins?: string[];
  /** A fetch implementation; default `globalThis.fetch`. */
  fetch?: StatusFetch;
  /** The clock, in unix seconds; default the JavaScript clock. */
  clock?: () => number;
  /**
   * A token signed with a key id the key set lacks makes the verifier fetch
   * the key set again (a key rotated in), then verify again — at most once
   * per this many seconds after the last fetch (default 30), so tokens
   * naming unknown keys cannot make it fetch on every request.
   */
  keyRefreshCooldownSeconds?: number;
}

/** A held list: its text, to give the Verifier again after a key refresh, and when to fetch it again. */
interface HeldList {
  jwt: string;
  etag: string | null;
  /** When it was fetched (or confirmed by a 304), unix seconds. */
  fetchedAt: number;
  ttl: number;
}

/** Why the last fetch of a URI failed, and when it may be tried again. */
interface Attempt {
  at: number;
  reason: string | undefined;
}

const STATUS_CODES_TO_REFRESH = new Set(["status_unknown", "status_stale", "status_list_expired"]);

function refusal(code: string, message: string): VerifyResult {
  return { valid: false, error: { code, message, stage: "status" } };
}

function clamp(ttl: number): number {
  return Math.min(Math.max(ttl, MIN_STATUS_TTL_SECONDS), MAX_STATUS_TTL_SECONDS);
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/** A Verifier fed by one Mandate server's key set and status lists. Make one with `createRemoteVerifier`. */
export class RemoteVerifier {
  readonly #fetch: StatusFetch;
  readonly #jwksUrl: string;
  readonly #allowed: ReadonlySet<string>;
  readonly #clock: () => number;
  readonly #verifier: Verifier;
  #keysFetchedAt: number;
  readonly #keyCooldown: number;
  /** The key set's fetch under way, which concurrent verifications of unknown kids wait for. */
  #keysPending: Promise<boolean> | undefined;
  readonly #lists = new Map<string, HeldList>();
  readonly #attempts = new Map<string, Attempt>();
  readonly #pending = new Map<string, Promise<void>>();

  /** Use `createRemoteVerifier`, which fetches the key set first. */
  constructor(jwks: Jwks, options: RemoteVerifierOptions & { jwksUrl: string; fetch: StatusFetch }) {
    const {
      baseUrl: _base,
      jwksUrl,
      allowedStatusOrigins,
      fetch,
      clock,
      keyRefreshCooldownSeconds,
      ...verifierOptions
    } = options;
    this.#keyCooldown = keyRefreshCooldownSeconds ?? KEY_REFRESH_SECONDS;
    this.#jwksUrl = jwksUrl;
    this.#fetch = fetch;
    this.#clock = clock ?? (() => Math.floor(Date.now() / 1000));
    const own = originOf(jwksUrl);
    this.#allowed = new Set(allowedStatusOrigins?.map((origin) => originOf(origin) ?? origin) ?? (own ? [own] : []));
    // The Verifier refuses what the fetcher would not fetch, lists included.
    this.#verifier = RemoteVerifier.#make(jwks, { ...verifierOptions, checkStatus: true, statusOrigins: [...this.#allowed] });
    this.#keysFetchedAt = this.#clock();
  }

  static #make(jwks: Jwks, options: VerifierOptions): Verifier {
    const verifier = new Verifier(jwks, options);
    const error = verifier.error;
    if (error !== null) {
      verifier.free();
      throw new MandateError(0, { code: error.code, title: "Unusable key set or options", detail: error.message });
    }
    return verifier;
  }

  /** The origins status lists are fetched from. */
  get allowedStatusOrigins(): string[] {
    return [...this.#allowed];
  }

  /**
   * Verifies a token at `now` (unix seconds; default the clock) as `Verifier.verify` does, with its status checked in
   * the list it names, fetched or refreshed first when needed. Never rejects: every refusal is a result.
   */
  async verify(token: string, now?: number): Promise<VerifyResult> {
    const at = now ?? this.#clock();
    const run = (): VerifyResult => this.#verifier.verify(token, at);
    return this.#judge(token, at, run, run);
  }

  /** `Verifier.verifyRequest` (a bound token's proof for this request), with the token's status checked likewise. */
  async verifyRequest(token: string, request: RequestCheck): Promise<VerifyResult> {
    const at = request.now ?? this.#clock();
    return this.#judge(
      token,
      at,
      () => this.#verifier.verify(token, at),
      () => this.#verifier.verifyRequest(token, { ...request, now: at }),
    );
  }

  /**
   * `verify` at `now`, then the token's scope and argument rules over the
   * attempt (`verifyAttempt`): a call the token may not make is refused
   * offline, with the rule and statement that refused it.
   */
  async verifyAttempt(token: string, attempt: CallAttempt, now?: number): Promise<AttemptResult> {
    return verifyAttempt({ verify: (presented) => this.verify(presented, now) }, token, attempt);
  }

  /** Frees the wasm Verifier; the object is unusable afterwards. */
  free(): void {
    this.#verifier.free();
  }

  /**
   * `run`'s verdict, with the token's list fetched first when it is due,
   * missing, stale or expired. `run` (for a request: its proof, which is
   * good once) is judged once unless it failed before its proof was
   * remembered (an unknown kid, the token's status); `probe` decides
   * whether a held list due for refresh is fetched before it: only for a
   * token passing every check but its binding.
   */
  async #judge(token: string, now: number, probe: () => VerifyResult, run: () => VerifyResult): Promise<VerifyResult> {
    const due = this.#due(token, now);
    if (due !== undefined) {
      const probed = probe();
      if (probed.valid || probed.error.code === "dpop_required") {
        await this.#refresh(due, now);
      }
    }
    let result = run();
    if (!result.valid && result.error.code === "unknown_kid" && (await this.#refreshKeys(now))) {
      result = run();
    }
    const uri = this.#uriToFetch(result, token);
    if (uri === undefined) {
      return result;
    }
    if (!this.#allowed.has(originOf(uri) ?? "")) {
      // Held lists all come from allowed origins, so this is a token naming another one.
      return refusal(
        "status_origin_not_allowed",
        `the token's status list ${uri} is not on an allowed origin (${[...this.#allowed].join(", ")}); it is not fetched`,
      );
    }
    await this.#refresh(uri, now);
    const again = run();
    const reason = this.#attempts.get(uri)?.reason;
    if (!again.valid && again.error.stage === "status" && reason !== undefined) {
      return { valid: false, error: { ...again.error, message: `${again.error.message} (${reason})` } };
    }
    return again;
  }

  /**
   * The token's status list when it is held and due for refresh. The token
   * is decoded only when some list is due, to keep a verification cheap;
   * its claims are unverified, and only choose which held list `probe` may
   * refresh.
   */
  #due(token: string, now: number): string | undefined {
    const isDue = (held: HeldList): boolean => now >= held.fetchedAt + clamp(held.ttl);
    if (![...this.#lists.values()].some(isDue)) {
      return undefined;
    }
    const uri = statusUri(token);
    const held = uri === undefined ? undefined : this.#lists.get(uri);
    return held !== undefined && isDue(held) ? uri : undefined;
  }

  /** The status list a refusal calls for: one missing, stale or expired. */
  #uriToFetch(result: VerifyResult, token: string): string | undefined {
    if (result.valid || result.error.stage !== "status" || !STATUS_CODES_TO_REFRESH.has(result.error.code)) {
      return undefined;
    }
    // The Verifier only judges a token's status once its signature and
    // claims have passed, so its claims are those it verified.
    return statusUri(token);
  }

  /** Fetches one list, once at a time per URI, at most once per MIN_STATUS_TTL_SECONDS. */
  #refresh(uri: string, now: number): Promise<void> {
    const pending = this.#pending.get(uri);
    if (pending !== undefined) {
      return pending;
    }
    const last = this.#attempts.get(uri);
    if (last !== undefined && now < last.at + MIN_STATUS_TTL_SECONDS) {
      return Promise.resolve();
    }
    const fetching = this.#fetchList(uri, now).finally(() => this.#pending.delete(uri));
    this.#pending.set(uri, fetching);
    return fetching;
  }

  async #fetchList(uri: string, now: number): Promise<void> {
    const held = this.#lists.get(uri);
    const headers: Record<string, string> = { accept: STATUS_LIST_MEDIA_TYPE };
    if (held?.etag) {
      headers["if-none-match"] = held.etag;
    }
    const fail = (reason: string): void => {
      this.#attempts.set(uri, { at: now, reason });
    };
    let response: Awaited<ReturnType<StatusFetch>>;
    try {
      response = await this.#fetch(uri, { method: "GET", headers, credentials: "omit" });
    } catch (error) {
      return fail(`the status list could not be fetched: ${String(error)}`);
    }
    if (response.url && !this.#allowed.has(originOf(response.url) ?? "")) {
      return fail(`the status list was redirected to ${response.url}, which is not an allowed origin`);
    }
    if (response.status === 304 && held !== undefined) {
      held.fetchedAt = now;
      this.#attempts.set(uri, { at: now, reason: undefined });
      return;
    }
    if (!response.ok) {
      return fail(`the status list answered HTTP ${response.status}`);
    }
    const jwt = (await response.text()).trim();
    let set = this.#verifier.setStatusList(jwt, now);
    if (!set.ok && set.error.code === "unknown_kid" && (await this.#refreshKeys(now))) {
      set = this.#verifier.setStatusList(jwt, now);
    }
    if (!set.ok) {
      return fail(`the status list was refused: ${set.error.code}: ${set.error.message}`);
    }
    if (set.uri !== uri) {
      // Held under its own subject, which is not the URI asked for.
      return fail(`the list fetched from ${uri} is the list of ${set.uri}`);
    }
    this.#attempts.set(uri, { at: now, reason: undefined });
    if (set.held) {
      this.#lists.set(uri, { jwt, etag: response.headers.get("etag"), fetchedAt: now, ttl: set.ttl });
    } else if (held !== undefined) {
      // An older list than the one held: keep that one, and its ttl running.
      held.fetchedAt = now;
    }
  }

  /**
   * Fetches the key set again (at most once per cooldown; a fetch under way
   * is shared) and gives the Verifier the lists held again. Answers whether
   * a new key set is in force.
   */
  #refreshKeys(now: number): Promise<boolean> {
    if (this.#keysPending !== undefined) {
      return this.#keysPending;
    }
    if (now < this.#keysFetchedAt + this.#keyCooldown) {
      return Promise.resolve(false);
    }
    this.#keysFetchedAt = now;
    const pending = this.#fetchKeys(now).finally(() => {
      this.#keysPending = undefined;
    });
    this.#keysPending = pending;
    return pending;
  }

  async #fetchKeys(now: number): Promise<boolean> {
    let jwks: Jwks;
    try {
      jwks = await fetchKeySet(this.#fetch, this.#jwksUrl);
    } catch {
      return false;
    }
    // The same Verifier keeps its memory of accepted proofs: a key refresh
    // (which a forged kid can cause) must not make a proof good again.
    if (!this.#verifier.setKeys(jwks).ok) {
      return false;
    }
    // Its lists were dropped with the old keys: each is verified again with the new ones.
    for (const [uri, held] of this.#lists) {
      if (!this.#verifier.setStatusList(held.jwt, now).ok) {
        this.#lists.delete(uri);
      }
    }
    return true;
  }
}

/** The status list uri a token names, read without checking it. */
function statusUri(token: string): string | undefined {
  const decoded = decodeTokenUnverified(token);
  return decoded.ok ? decoded.claims.status?.status_list.uri : undefined;
}

async function fetchKeySet(fetch: StatusFetch, url: string): Promise<Jwks> {
  let response: Awaited<ReturnType<StatusFetch>>;
  try {
    response = await fetch(url, { method: "GET", headers: { accept: "application/json" }, credentials: "omit" });
  } catch (cause) {
    // The key set's URL is public; shown without any user name, query or fragment, as the client shows URLs.
    const parsed = URL.canParse(url) ? new URL(url) : undefined;
    const shown = parsed === undefined ? "(an invalid URL)" : `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
    throw new MandateError(
      0,
      { code: "network_error", title: "Network error", detail: `GET ${shown}: ${String(cause)}`, method: "GET", url: shown },
      { cause },
    );
  }
  const text = await response.text();
  if (!response.ok) {
    throw new MandateError(response.status, { code: "jwks_unavailable", title: `The key set answered HTTP ${response.status}` });
  }
  try {
    return JSON.parse(text) as Jwks;
  } catch {
    throw new MandateError(response.status, { code: "invalid_response", title: "Invalid response", detail: "the key set is not JSON" });
  }
}

/**
 * Fetches a Mandate server's key set and returns a RemoteVerifier for it, which fetches the status lists tokens name
 * from the allowed origins only (by default the key set's). Rejects with a MandateError when the key set cannot be
 * fetched or used.
 */
export async function createRemoteVerifier(options: RemoteVerifierOptions): Promise<RemoteVerifier> {
  const fetch = options.fetch ?? (globalThis as { fetch?: StatusFetch }).fetch;
  if (fetch === undefined) {
    throw new TypeError("createRemoteVerifier needs a fetch implementation");
  }
  let jwksUrl = options.jwksUrl;
  if (jwksUrl === undefined) {
    if (options.baseUrl === undefined) {
      throw new TypeError("createRemoteVerifier needs baseUrl or jwksUrl");
    }
    jwksUrl = `${String(options.baseUrl).replace(/\/+$/, "")}/.well-known/jwks.json`;
  }
  // Called unbound: a browser's fetch refuses any `this` but the global.
  const unbound: StatusFetch = (url, init) => fetch(url, init);
  const jwks = await fetchKeySet(unbound, jwksUrl);
  return new RemoteVerifier(jwks, { ...options, jwksUrl, fetch: unbound });
}
