// <mandate-verify>: verifies a Mandate token in the page, with the rules of
// mandate-core compiled to WebAssembly, and shows what it allows.
//
//   <script type="module" src="https://mandate.example.com/mandate-verify.js"></script>
//   <mandate-verify token="eyJ…"></mandate-verify>
//
// Attributes: `token`; `jwks` (the key set as JSON) or `jwks-url` (where to
// fetch it; by default the key set of the server this script came from);
// `api-key`, sent with the key set request when the key set is behind a
// key (it is visible to anyone who can read the page, so only ever a
// publishable key). The verdict is computed here. Besides the key set, the
// widget fetches one thing: for a token that names its status list (IETF
// Token Status List), that list, and only from the Mandate server the key
// set comes from (the script's own server when the key set is inline),
// never from another host a token names. A revoked token is shown as
// revoked; when its list cannot be fetched or checked, its status as
// unknown. Styles live in the shadow root and touch nothing outside.

import {
  type Claims,
  type ErrorInfo,
  type Jwks,
  MAX_STATUS_TTL_SECONDS,
  MIN_STATUS_TTL_SECONDS,
  STATUS_LIST_MEDIA_TYPE,
  decodeTokenUnverified,
  init,
  verifyStatusList,
  verifyToken,
} from "mandate-sdk/web";
import wasmUrl from "mandate-sdk/mandate.wasm?url";
import css from "./element.css?inline";
import { inWords } from "./words.js";

/** Clock skew verification tolerates, in seconds (the SDK's default). */
const LEEWAY_SECONDS = 60;

const DEFAULT_JWKS_URL = new URL(/* @vite-ignore */ "/.well-known/jwks.json", import.meta.url).href;

let wasm: Promise<void> | undefined;

function loadWasm(): Promise<void> {
  wasm ??= init(new URL(wasmUrl, import.meta.url)).catch((error: unknown) => {
    wasm = undefined;
    throw error;
  });
  return wasm;
}

/** Key sets fetched in this page, by URL and key; dropped when a token names a kid they lack. */
const keySets = new Map<string, Promise<Jwks>>();

/** Fetches a key set; a failure is an Error saying why (not a verdict on the token). */
async function fetchKeySet(url: string, apiKey: string | null): Promise<Jwks> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (apiKey !== null) {
    headers.authorization = `Bearer ${apiKey}`;
  }
  let response: Response;
  try {
    response = await fetch(url, { headers, credentials: "omit" });
  } catch (error) {
    throw new Error(`The key set at ${url} could not be fetched (${String(error)}).`);
  }
  if (!response.ok) {
    throw new Error(`The key set at ${url} answered HTTP ${response.status}.`);
  }
  try {
    return (await response.json()) as Jwks;
  } catch {
    throw new Error(`The key set at ${url} is not JSON.`);
  }
}

/** Status lists fetched in this page, by URL, and until when each is used before it is fetched again (unix seconds). */
const statusLists = new Map<string, { jwt: Promise<string>; until: number }>();

/** Fetches a status list; a failure is an Error saying why. */
async function fetchStatusList(url: string): Promise<string> {
  let response: Response;
  try {
    response = await fetch(url, { headers: { accept: STATUS_LIST_MEDIA_TYPE }, credentials: "omit" });
  } catch (error) {
    throw new Error(`the status list at ${url} could not be fetched (${String(error)})`);
  }
  if (!response.ok) {
    throw new Error(`the status list at ${url} answered HTTP ${response.status}`);
  }
  return (await response.text()).trim();
}

/** What the token's status list says, or why it cannot be known. */
type ListSays = { listIat: number; until: number; idx: number };
type Withdrawn = { kind: "revoked" | "suspended" } & ListSays;
type StatusVerdict =
  | { kind: "none" }
  | ({ kind: "not-revoked" } & ListSays)
  | Withdrawn
  | { kind: "unknown"; reason: string; until: number };

function withdrawn(status: StatusVerdict): status is Withdrawn {
  return status.kind === "revoked" || status.kind === "suspended";
}

const now = (): number => Math.floor(Date.now() / 1000);

const sheet = new CSSStyleSheet();
sheet.replaceSync(css);

type Child = Node | string | null;

function el(tag: string, className: string | null, ...children: Child[]): HTMLElement {
  const element = document.createElement(tag);
  if (className !== null) {
    element.className = className;
  }
  for (const child of children) {
    if (child !== null) {
      element.append(child);
    }
  }
  return element;
}

function row(term: string, ...description: Child[]): DocumentFragment {
  const fragment = document.createDocumentFragment();
  fragment.append(el("dt", null, term), el("dd", null, ...description));
  return fragment;
}

function chips(values: string[] | undefined, empty: string): HTMLElement {
  if (values === undefined || values.length === 0) {
    return el("span", "none", empty);
  }
  return el("ul", "chips", ...values.map((value) => el("li", null, el("code", null, value))));
}

function utc(seconds: number): string {
  return `${new Date(seconds * 1000).toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** `2 h 5 min`, `4 min 10 s`, `12 s`. */
function span(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const days = Math.floor(s / 86_400);
  const hours = Math.floor((s % 86_400) / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  if (days > 0) return `${days} d ${hours} h`;
  if (hours > 0) return `${hours} h ${minutes} min`;
  if (minutes > 0) return `${minutes} min ${rest} s`;
  return `${rest} s`;
}

function untilExpiry(exp: number): string {
  const left = exp - Date.now() / 1000;
  return left >= 0 ? `expires in ${span(left)}` : `expired ${span(-left)} ago`;
}

/** The delegators, nearest first, from the nested `act` claim. */
function actors(claims: Claims): string[] {
  const names: string[] = [];
  for (let actor = claims.act; actor !== undefined; actor = actor.act) {
    names.push(actor.sub);
  }
  return names;
}

function constraints(claims: Claims): HTMLElement {
  const limits = claims.svc_constraints;
  const parts: string[] = [];
  if (limits?.max_spend_usd !== undefined) {
    parts.push(`at most $${limits.max_spend_usd} spent`);
  }
  if (limits?.max_actions !== undefined) {
    parts.push(`at most ${limits.max_actions} actions`);
  }
  return parts.length === 0 ? el("span", "none", "none") : el("span", null, parts.join("; "));
}

export class MandateVerify extends HTMLElement {
  static readonly observedAttributes = ["token", "jwks", "jwks-url", "api-key"];

  readonly #shadow: ShadowRoot;
  #generation = 0;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor() {
    super();
    this.#shadow = this.attachShadow({ mode: "open" });
    this.#shadow.adoptedStyleSheets = [sheet];
  }

  connectedCallback(): void {
    void this.#update();
  }

  disconnectedCallback(): void {
    this.#stopClock();
  }

  attributeChangedCallback(): void {
    if (this.isConnected) {
      void this.#update();
    }
  }

  #stopClock(): void {
    if (this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  #show(...children: Child[]): void {
    this.#shadow.replaceChildren(el("div", "card", ...children));
  }

  /** The origin status lists may be fetched from: the key set's server, or this script's when the key set is inline. */
  #statusOrigin(): string {
    const jwksUrl = this.hasAttribute("jwks") ? DEFAULT_JWKS_URL : (this.getAttribute("jwks-url") ?? DEFAULT_JWKS_URL);
    return new URL(jwksUrl, document.baseURI).origin;
  }

  /**
   * The status of a token whose signature, claims and lifetime were checked:
   * its list fetched (from the allowed origin only, once per ttl) and
   * verified against the same key set, then the token's entry read.
   */
  async #status(token: string, claims: Claims, keys: Jwks | string): Promise<StatusVerdict> {
    const reference = claims.status?.status_list;
    if (reference === undefined) {
      return { kind: "none" };
    }
    const retry = now() + MIN_STATUS_TTL_SECONDS;
    let origin: string;
    try {
      origin = new URL(reference.uri).origin;
    } catch {
      return { kind: "unknown", reason: `the token's status list address is not a URL`, until: retry };
    }
    const allowed = this.#statusOrigin();
    if (origin !== allowed) {
      return {
        kind: "unknown",
        reason: `the token's status list is on ${origin}, and this widget asks only ${allowed}`,
        until: retry,
      };
    }
    let entry = statusLists.get(reference.uri);
    if (entry === undefined || now() >= entry.until) {
      entry = { jwt: fetchStatusList(reference.uri), until: retry };
      statusLists.set(reference.uri, entry);
    }
    let jwt: string;
    try {
      jwt = await entry.jwt;
    } catch (error) {
      statusLists.delete(reference.uri);
      return { kind: "unknown", reason: error instanceof Error ? error.message : String(error), until: retry };
    }
    const list = verifyStatusList(jwt, keys, { uri: reference.uri });
    if (!list.valid) {
      statusLists.delete(reference.uri);
      return { kind: "unknown", reason: `its status list was refused: ${list.error.message} (${list.error.code})`, until: retry };
    }
    // The signed ttl decides how long the list is used, within sane bounds.
    const ttl = Math.min(Math.max(list.ttl, MIN_STATUS_TTL_SECONDS), MAX_STATUS_TTL_SECONDS);
    entry.until = Math.max(entry.until, now() + ttl);
    const until = Math.min(entry.until, list.exp);
    const checked = verifyToken(token, keys, { skipProofOfPossession: true, statusList: jwt });
    const known = { listIat: list.iat, until, idx: reference.idx };
    if (checked.valid) {
      return { kind: "not-revoked", ...known };
    }
    switch (checked.error.code) {
      case "token_revoked":
        return { kind: "revoked", ...known };
      case "token_suspended":
        return { kind: "suspended", ...known };
      default:
        return { kind: "unknown", reason: `${inWords(checked.error.code)} (${checked.error.code})`, until: retry };
    }
  }

  /** The inline key set as text (the SDK reads and judges it), or the one fetched. */
  async #keySet(refresh: boolean): Promise<Jwks | string> {
    const inline = this.getAttribute("jwks");
    if (inline !== null) {
      return inline;
    }
    const url = new URL(this.getAttribute("jwks-url") ?? DEFAULT_JWKS_URL, document.baseURI).href;
    const apiKey = this.getAttribute("api-key");
    const key = `${url} ${apiKey ?? ""}`;
    if (refresh) {
      keySets.delete(key);
    }
    let keySet = keySets.get(key);
    if (keySet === undefined) {
      keySet = fetchKeySet(url, apiKey);
      keySets.set(key, keySet);
      keySet.catch(() => keySets.delete(key));
    }
    return keySet;
  }

  async #update(): Promise<void> {
    const generation = ++this.#generation;
    this.#stopClock();
    delete this.dataset.verdict;
    delete this.dataset.error;
    delete this.dataset.status;
    const token = (this.getAttribute("token") ?? "").trim();
    if (token === "") {
      this.#show(el("p", "verdict verdict-empty", "No token to verify."));
      return;
    }
    this.#show(el("p", "verdict verdict-busy", "Verifying…"));
    try {
      await loadWasm();
      // The widget shows a token; it authorizes nothing, so a bound token is
      // shown without its holder's proof (and says it needs one to be used).
      const options = { skipProofOfPossession: true };
      let keys = await this.#keySet(false);
      let result = verifyToken(token, keys, options);
      if (!result.valid && result.error.code === "unknown_kid" && !this.hasAttribute("jwks")) {
        // The keys may have been rotated since the set was fetched.
        keys = await this.#keySet(true);
        result = verifyToken(token, keys, options);
      }
      if (generation !== this.#generation) {
        return;
      }
      if (result.valid) {
        const { claims, header } = result;
        if (claims.status !== undefined) {
          this.#show(el("p", "verdict verdict-busy", "Checking whether the token was revoked…"));
        }
        const status = await this.#status(token, claims, keys);
        if (generation !== this.#generation) {
          return;
        }
        if (withdrawn(status)) {
          this.#revoked(claims, header.kid, status);
        } else {
          this.#valid(claims, header.kid, status);
        }
      } else if (result.error.stage === "jwks") {
        this.#unusableKeySet(result.error.message);
      } else {
        this.#invalid(token, result.error);
      }
    } catch (error) {
      if (generation === this.#generation) {
        this.#unusableKeySet(error instanceof Error ? error.message : String(error));
      }
    }
  }

  #valid(claims: Claims, kid: string, status: Exclude<StatusVerdict, Withdrawn>): void {
    const countdown = el("span", "countdown", untilExpiry(claims.exp));
    const checked = ` — signature, claims and lifetime checked in this browser (key ${kid})`;
    if (status.kind === "unknown") {
      this.#show(
        el(
          "div",
          "verdict verdict-status-unknown",
          el("strong", null, "Status unknown"),
          el("span", null, `${checked}, but whether it was revoked could not be checked.`),
          el("p", "message", `Do not rely on it until its status is known: ${status.reason}.`),
        ),
        this.#details(claims, countdown, status),
      );
      this.dataset.verdict = "status-unknown";
    } else {
      this.#show(
        el(
          "div",
          "verdict verdict-valid",
          el("strong", null, "Valid token"),
          el("span", null, status.kind === "not-revoked" ? `${checked}; not revoked.` : `${checked}.`),
        ),
        this.#details(claims, countdown, status),
      );
      this.dataset.verdict = "valid";
    }
    this.dataset.status = status.kind;
    this.#tick(claims, countdown, status);
  }

  /** A token whose signature and claims hold, and which its issuer has revoked (or suspended). */
  #revoked(claims: Claims, kid: string, status: Withdrawn): void {
    const word = status.kind === "revoked" ? "Revoked" : "Suspended";
    const verdict = el(
      "div",
      "verdict verdict-revoked",
      el("strong", "badge", word),
      el(
        "span",
        null,
        status.kind === "revoked"
          ? " — this token is genuine (key " + kid + "), but it has been revoked: it authorizes nothing."
          : " — this token is genuine (key " + kid + "), but it is suspended: it authorizes nothing for now.",
      ),
      el("p", "message", `Its status list, signed ${utc(status.listIat)}, says so.`),
    );
    verdict.setAttribute("role", "alert");
    const countdown = el("span", "countdown", untilExpiry(claims.exp));
    this.#show(
      verdict,
      el(
        "div",
        "revoked-grant",
        el("p", "caution", `What the token granted before it was ${word.toLowerCase()}:`),
        this.#details(claims, countdown, status),
      ),
    );
    this.dataset.verdict = status.kind;
    this.dataset.status = status.kind;
    this.#tick(claims, countdown, status);
  }

  /** Keeps the countdown running; verifies again when the token expires or its status is due for a refresh. */
  #tick(claims: Claims, countdown: HTMLElement, status: StatusVerdict): void {
    const refreshAt = status.kind === "none" ? Infinity : status.until;
    this.#timer = setInterval(() => {
      countdown.textContent = untilExpiry(claims.exp);
      if (Date.now() / 1000 >= claims.exp + LEEWAY_SECONDS || now() >= refreshAt) {
        void this.#update();
      }
    }, 1000);
  }

  #invalid(token: string, error: ErrorInfo): void {
    const decoded = decodeTokenUnverified(token);
    this.#show(
      el(
        "div",
        "verdict verdict-invalid",
        el("strong", null, "Invalid token: "),
        el("span", "reason", inWords(error.code)),
        el("span", "code", ` (${error.code})`),
        el("p", "message", error.message),
      ),
      decoded.ok
        ? el(
            "div",
            "unverified",
            el("p", "caution", "What the token claims — not verified, do not trust it:"),
            this.#details(decoded.claims, el("span", "countdown", untilExpiry(decoded.claims.exp)), null),
          )
        : null,
    );
    this.dataset.verdict = "invalid";
    this.dataset.error = error.code;
  }

  #unusableKeySet(message: string): void {
    this.#show(
      el("div", "verdict verdict-unknown", el("strong", null, "Cannot verify: "), el("span", null, message)),
    );
    this.dataset.verdict = "unknown";
  }

  /** The status row: what the token's status list says, when it was checked. */
  #statusRow(claims: Claims, status: StatusVerdict | null): DocumentFragment | null {
    const reference = claims.status?.status_list;
    if (status === null) {
      return reference === undefined ? null : row("Status list", el("code", null, reference.uri));
    }
    switch (status.kind) {
      case "none":
        return row(
          "Revocation",
          el("span", "muted", "not checkable here: the token names no status list (issued before status lists)"),
        );
      case "unknown":
        return row("Revocation", el("strong", null, "unknown"), el("span", "muted", ` (${status.reason})`));
      default:
        return row(
          "Revocation",
          el("strong", null, status.kind === "not-revoked" ? "not revoked" : status.kind),
          el("span", "muted", ` by the status list signed ${utc(status.listIat)} (entry ${status.idx})`),
        );
    }
  }

  #details(claims: Claims, countdown: HTMLElement, status: StatusVerdict | null): HTMLElement {
    const agent = claims.sub.startsWith("agent:") ? claims.sub.slice("agent:".length) : claims.sub;
    const delegators = actors(claims);
    return el(
      "dl",
      "details",
      row("Agent", el("strong", null, agent)),
      row("Assurance", `${claims.svc_assurance} · trust ${claims.svc_trust_score.toFixed(2)}`),
      row("Resources", chips(claims.svc_scope.resources, "none")),
      row("Actions", chips(claims.svc_scope.actions, "none")),
      row("Constraints", constraints(claims)),
      row("Policy", chips(claims.svc_policy?.frameworks, "no frameworks")),
      row(
        "Delegation",
        claims.svc_depth === 0
          ? "root token (depth 0)"
          : `depth ${claims.svc_depth}, delegated by ${delegators.map((sub) => sub.replace(/^agent:/, "")).join(" ← ")}`,
      ),
      row(
        "Chain",
        el(
          "ol",
          "chain",
          // Ancestors are named by jti hash: a token never carries another's jti.
          ...(claims.svc_chain ?? []).map((jth) => el("li", null, el("code", null, jth), el("span", "muted", " (jti hash)"))),
          el("li", null, el("code", null, claims.jti), " (this token)"),
        ),
      ),
      row(
        "Holder",
        claims.cnf === undefined
          ? "not bound: whoever holds the token can use it"
          : el(
              "span",
              null,
              "bound to key ",
              el("code", null, claims.cnf.jkt),
              el("span", "muted", ": each use needs a proof signed by that key (DPoP)"),
            ),
      ),
      this.#statusRow(claims, status),
      row("Expiry", countdown, el("span", "muted", ` (${utc(claims.exp)})`)),
      row("Issued", `${utc(claims.iat)} by ${claims.iss}`),
      row("Workflow", el("code", null, claims.svc_prov)),
      row("Human", el("code", null, claims.svc_human)),
    );
  }
}

if (customElements.get("mandate-verify") === undefined) {
  customElements.define("mandate-verify", MandateVerify);
}

declare global {
  interface HTMLElementTagNameMap {
    "mandate-verify": MandateVerify;
  }
}
