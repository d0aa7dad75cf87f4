// What every browser test stands on: a real `mandate serve` on port 0 with a
// fresh data folder, a small client of its API for seeding data, Debian's
// Chromium driven by playwright-core, console-error collection, and
// screenshots saved under web/test-artifacts/screenshots.
//
// MANDATE_BIN names the server binary (`cargo xtask test` passes it);
// CHROMIUM the browser (default /usr/bin/chromium).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createServer } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));

export const SCREENSHOTS = join(here, "..", "test-artifacts", "screenshots");

const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Runs `mandate serve` with `args`; answers the child and its address once it listens. */
async function serve(binary, args) {
  const child = spawn(binary, args, {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? "warn" },
  });
  const lines = createInterface({ input: child.stdout });
  const base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the server did not start within 30 s")), 30_000);
    child.once("exit", (code) => reject(new Error(`the server exited early (${code})`)));
    lines.on("line", (line) => {
      const found = /listening on (http:\/\/\S+)/.exec(line);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
  });
  return { child, base };
}

/** How long a server may take to stop after SIGTERM; longer is a bug. */
const STOP_MS = 10_000;

/**
 * Ends a server process and waits for it to exit. A stopping server ends its
 * event streams and answers approval waits at once, so one still running
 * `STOP_MS` after SIGTERM (or one that exits with a failure) is a regression:
 * it is killed, and the test fails saying so.
 */
async function end(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  child.kill("SIGTERM");
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve(undefined), STOP_MS);
  });
  const stopped = await Promise.race([exited, late]);
  clearTimeout(timer);
  if (stopped === undefined) {
    child.kill("SIGKILL");
    await exited;
    throw new Error(`the server did not stop within ${STOP_MS / 1000} s of SIGTERM (a page's open event stream holds its shutdown?)`);
  }
  if (stopped.code !== 0) {
    throw new Error(`the server stopped with ${stopped.code ?? stopped.signal} after SIGTERM, not 0`);
  }
}

/** A port no one listens on right now (the OS's pick, released). */
export async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts `mandate serve` with a fresh data folder, on `listen` (by default
 * a free port on loopback); `config`, when given, is the text of its TOML
 * configuration file. `restart()` stops it and serves the same data folder
 * again at the same address.
 */
export async function startServer({ config, listen = "127.0.0.1:0" } = {}) {
  const binary = process.env.MANDATE_BIN;
  assert.ok(binary, "MANDATE_BIN must name the mandate binary (cargo xtask test sets it)");
  const dataDir = mkdtempSync(join(tmpdir(), "mandate-e2e-"));
  const args = ["serve", "--data-dir", dataDir];
  const file = join(dataDir, "config.toml");
  const configure = (text) => {
    writeFileSync(file, text, { mode: 0o600 });
    if (!args.includes("--config")) args.push("--config", file);
  };
  if (config !== undefined) configure(config);
  let { child, base } = await serve(binary, [...args, "--listen", listen]);
  const adminKey = readFileSync(join(dataDir, "admin.key"), "utf8").trim();
  return {
    base,
    adminKey,
    api: new Api(base, adminKey),
    /** Serves the same data folder again at the same address; with `config`, under that configuration text. */
    async restart({ config: next } = {}) {
      await end(child);
      if (next !== undefined) configure(next);
      ({ child } = await serve(binary, [...args, "--listen", new URL(base).host]));
    },
    async stop() {
      try {
        await end(child);
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * Starts `mandate witness serve` (the same binary) with a fresh data folder,
 * as the witness `witness.test/<name>` of the log `origin` whose key is
 * `logVkey`; answers its URL, its verifier key and `stop()`.
 */
export async function startWitness({ name, origin, logVkey }) {
  const binary = process.env.MANDATE_BIN;
  assert.ok(binary, "MANDATE_BIN must name the mandate binary (cargo xtask test sets it)");
  const folder = mkdtempSync(join(tmpdir(), "mandate-e2e-witness-"));
  const file = join(folder, "witness.toml");
  writeFileSync(
    file,
    `[witness]\nname = "witness.test/${name}"\n\n[[witness.log]]\norigin = "${origin}"\nvkeys = ["${logVkey}"]\n`,
  );
  const { child, base } = await serve(binary, [
    "witness",
    "serve",
    "--data-dir",
    join(folder, "data"),
    "--config",
    file,
    "--listen",
    "127.0.0.1:0",
  ]);
  const response = await fetch(`${base}/vkey`);
  assert.equal(response.status, 200);
  const vkey = (await response.text()).trim();
  return {
    base,
    vkey,
    async stop() {
      try {
        await end(child);
      } finally {
        rmSync(folder, { recursive: true, force: true });
      }
    },
  };
}

/** A problem answer from the API, kept for assertions. */
export class ApiProblem extends Error {
  constructor(status, body) {
    super(`${status} ${body?.code}: ${body?.detail}`);
    this.status = status;
    this.body = body;
  }
}

/** The calls the tests seed data with. */
export class Api {
  constructor(base, adminKey) {
    this.base = base;
    this.adminKey = adminKey;
  }

  async call(method, path, body, { key = this.adminKey } = {}) {
    const headers = { accept: "application/json" };
    if (key) headers.authorization = `Bearer ${key}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(`${this.base}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const data = await response.json();
    if (!response.ok) throw new ApiProblem(response.status, data);
    return data;
  }

  issue(body) {
    return this.call("POST", "/v1/vat/issue/l1", { developer_email: "reviewer@example.com", ...body });
  }

  /** Delegates from `parent`, an issued token, presented itself. */
  delegate(parent, body) {
    return this.call("POST", "/v1/vat/delegate", body, { key: parent.compact_jwt });
  }

  act(jti, action, resource, result) {
    return this.call("POST", "/v1/vat/record/action", { vat_jti: jti, action, resource, result }, { key: null });
  }

  /** Asks before acting, naming the token by `vat_jti`: `{ authorized, aar_id, … }`. */
  authorize(jti, action, resource) {
    return this.call("POST", "/v1/vat/authorize", { vat_jti: jti, action, resource }, { key: null });
  }

  /** Completes an authorized (pending) record with its result. */
  complete(aarId, result) {
    return this.call("POST", `/v1/vat/aar/${encodeURIComponent(aarId)}/complete`, { result }, { key: null });
  }

  /** A record's events in the record log with their proofs. */
  recordProof(aarId) {
    return this.call("GET", `/v1/vat/aar/${encodeURIComponent(aarId)}/proof`);
  }

  /** A public text answer (the log's checkpoint or keys). */
  async text(path) {
    const response = await fetch(`${this.base}${path}`);
    assert.equal(response.status, 200, path);
    return response.text();
  }

  /** The size of the record log's newest checkpoint (its second line). */
  async logSize() {
    return Number((await this.text("/v1/log/checkpoint")).split("\n")[1]);
  }

  /** `GET /v1/me` for `key` (default the admin key). */
  me(key) {
    return this.call("GET", "/v1/me", undefined, { key });
  }

  /** A new API key of the admin key's organisation (`default`): `{ role, email? }`. */
  createKey(body) {
    return this.call("POST", "/v1/keys", body);
  }

  /** A new organisation and its owner key: `{ name, owner_email?, quotas? }`. */
  createOrg(body) {
    return this.call("POST", "/v1/orgs", body);
  }

  /** A rating of a completed record, made with `key`. */
  rate(aarId, rating, { key } = {}) {
    return this.call("POST", `/v1/vat/aar/${encodeURIComponent(aarId)}/feedback`, { rating }, { key });
  }

  /** An out-of-scope attempt: refused, and written down as a denied record. */
  async attempt(jti, action, resource) {
    try {
      await this.act(jti, action, resource, "success");
    } catch (error) {
      if (error instanceof ApiProblem && error.status === 403 && error.body.aar_id) {
        return error.body;
      }
      throw error;
    }
    throw new Error(`${action} ${resource} was not refused`);
  }
}

/**
 * A workflow three tokens deep: orchestrator → researcher → summarizer, with
 * successes at every level, one error and one denied attempt.
 */
export async function seedChain(api) {
  const root = await api.issue({
    agent_id: "orchestrator",
    resources: ["crm:*", "docs:*"],
    actions: ["read", "write", "delegate"],
    constraints: { max_spend_usd: 50, max_actions: 100 },
    policy: { frameworks: ["gdpr"] },
  });
  const researcher = await api.delegate(root, {
    agent_id: "researcher",
    resources: ["crm:*", "docs:*"],
    actions: ["read", "delegate"],
    constraints: { max_spend_usd: 20, max_actions: 50 },
    policy: { frameworks: ["gdpr"] },
  });
  const summarizer = await api.delegate(researcher, {
    agent_id: "summarizer",
    resources: ["docs:*"],
    actions: ["read"],
    constraints: { max_spend_usd: 5, max_actions: 10 },
    policy: { frameworks: ["gdpr", "soc2"] },
  });
  const records = {
    rootWrite: (await api.act(root.jti, "write", "crm:accounts", "success")).aar_id,
    contacts: (await api.act(researcher.jti, "read", "crm:contacts", "success")).aar_id,
    leads: (await api.act(researcher.jti, "read", "crm:leads", "error")).aar_id,
    report: (await api.act(summarizer.jti, "read", "docs:q3-report", "success")).aar_id,
    denied: (await api.attempt(summarizer.jti, "write", "docs:q3-report")).aar_id,
  };
  return { root, researcher, summarizer, records };
}

/** Debian's Chromium, headless, with a fresh profile. */
export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: CHROMIUM_ARGS,
  });
}

/**
 * A page that remembers every console error, uncaught exception and failed
 * request, so a test can assert that none happened. The page's own event
 * stream, aborted when it reloads, navigates or signs out, is no failure.
 */
export async function openPage(browser, { width = 1280, height = 900 } = {}) {
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  const errors = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => errors.push(`exception: ${error.message}`));
  page.on("requestfailed", (request) => {
    const why = request.failure()?.errorText;
    if (!(new URL(request.url()).pathname === "/v1/events" && why === "net::ERR_ABORTED")) {
      errors.push(`request failed: ${request.url()} ${why}`);
    }
  });
  return { page, context, errors };
}

/** Saves a screenshot as `<name>.png`: the whole page, or the viewport (for a modal dialog). */
export async function screenshot(page, name, { fullPage = true } = {}) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage });
}

/** Signs in through the form with `key`; the landing page is the inbox or the workflows, as the key's role has it. */
export async function signIn(page, base, key) {
  await page.goto(`${base}/`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: /^(Inbox|Workflows)$/, level: 1 }).waitFor();
}

/** axe-core's source, run in a page by `axeViolations`. */
const AXE = readFileSync(join(here, "..", "node_modules", "axe-core", "axe.min.js"), "utf8");

/**
 * The WCAG 2.1 A and AA violations axe-core finds on the page as it is now
 * (rule id and the first offending element of each). axe is evaluated
 * through the DevTools protocol, so the page's CSP (no inline script) need
 * not be loosened for it.
 */
export async function axeViolations(page) {
  await page.evaluate(AXE);
  return page.evaluate(async () => {
    const result = await globalThis.axe.run(document, {
      runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] },
    });
    return result.violations.map((violation) => `${violation.id}: ${violation.nodes[0]?.html ?? ""}`);
  });
}

/**
 * A person granting what an OAuth client asks, in `browser`: opens the
 * authorization URL, signs in on the consent page with `key`, names the
 * `actions` (space-separated) and `resources` (one pattern a line) to
 * grant when given (a client that asks for no scope leaves them to the
 * person), approves, and answers the URL the browser is sent back to (the client's
 * `redirect_uri` from the authorization URL, with `code`, `state`, `iss`):
 * the request the browser makes there, so no client need listen.
 */
export async function approveConsent(browser, authorizationUrl, key, { actions, resources } = {}) {
  const redirectUri = new URL(authorizationUrl).searchParams.get("redirect_uri");
  assert.ok(redirectUri, "the authorization URL names a redirect_uri");
  const { page, context, errors } = await openPage(browser);
  try {
    await page.goto(String(authorizationUrl));
    await page.getByRole("heading", { name: "Sign in to grant access", level: 1 }).waitFor();
    await page.locator("input[name=api_key]").fill(key);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Grant access", level: 1 }).waitFor();
    if (actions !== undefined) await page.getByLabel(/^Actions, separated by spaces/).fill(actions);
    if (resources !== undefined) await page.getByLabel(/^Resource patterns, one a line/).fill(resources);
    const landed = page.waitForRequest((request) => request.url().startsWith(redirectUri));
    await page.getByRole("button", { name: "Approve" }).click();
    const callback = await landed.catch(async (error) => {
      await screenshot(page, "oauth-consent-not-approved");
      throw error;
    });
    // Nobody need listen at the redirect URI: the browser's request there
    // failing is expected (and may be reported before or after this line).
    const callbackFailed = `request failed: ${callback.url()} `;
    assert.deepEqual(
      errors.filter((error) => !error.startsWith(callbackFailed)),
      [],
    );
    return new URL(callback.url());
  } finally {
    await context.close();
  }
}

/** A PKCE pair (RFC 7636 §4.1–4.2, S256). */
export function pkce() {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

/** Presses `key` (Tab, or Shift+Tab to go back) until the focused element matches `selector` (at most 40 times). */
export async function tabTo(page, selector, key = "Tab") {
  for (let presses = 0; presses < 40; presses += 1) {
    if (await page.evaluate((wanted) => document.activeElement?.matches(wanted) ?? false, selector)) return;
    await page.keyboard.press(key);
  }
  assert.fail(`${key} never reached ${selector}`);
}

/** Redeems an authorization code at `base`'s token endpoint (RFC 6749 §4.1.3): the status and the JSON answer. */
export async function redeemCode(base, { code, clientId, redirectUri, verifier, resource }) {
  const form = { grant_type: "authorization_code", code, client_id: clientId, redirect_uri: redirectUri, code_verifier: verifier };
  if (resource !== undefined) form.resource = resource;
  const response = await fetch(`${base}/v1/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form),
  });
  return { status: response.status, token: await response.json() };
}
