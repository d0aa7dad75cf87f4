// The OAuth consent page (`/oauth/consent`, plan §2.5, docs/oauth.md) in
// Chromium against a live `mandate serve` with `[oauth]` on: a client the
// organisation registered sends the browser to `/v1/oauth/authorize`, which
// 303s to the page; the person signs in with their API key, narrows what is
// asked and approves (keyboard only) or denies; the browser lands on the
// client's callback (a tiny server of this test) with `code`, `state` and
// `iss` (RFC 6749 §4.1.2, RFC 9207 §2), or `error=access_denied`. A client
// may also name itself by the https URL of its metadata document (CIMD),
// served here over the API tests' test certificate authority, which the
// server trusts through `[oauth.client_documents] extra_roots`.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

import { freePort, launchBrowser, openPage, pkce, redeemCode, screenshot, startServer, tabTo } from "./harness.mjs";

const RESOURCE = "https://mcp.example.com/mcp";
const XSS_NAME = `<img src=x onerror="window.__xss=1">Notes & Co`;
const SCRIPT_NAME = "<img src=x onerror=alert(1)><script>alert(2)</script>";
const TLS = fileURLToPath(new URL("../../host/tests/fixtures/cimd-tls/", import.meta.url));

let server;
let browser;
let callback;
let documents;
let developerKey;
let reviewerKey;

/** The client's callback: a server that keeps each query it is sent and answers a plain page. */
async function startCallback() {
  const hits = [];
  const waiting = [];
  const http = createServer((request, response) => {
    const url = new URL(request.url, "http://127.0.0.1");
    hits.push(url.searchParams);
    for (const resolve of waiting.splice(0)) resolve();
    response.writeHead(200, { "content-type": "text/plain" }).end("back at the client");
  });
  await new Promise((resolve) => http.listen(0, "127.0.0.1", resolve));
  return {
    uri: `http://127.0.0.1:${http.address().port}/callback`,
    hits,
    close: () => new Promise((resolve) => http.close(resolve)),
  };
}

/**
 * An HTTPS server of client metadata documents on loopback (the test
 * certificate of host/tests/fixtures/cimd-tls): `serve(path, document)` sets
 * what a path answers; `hits` counts the requests it was sent.
 */
async function startDocuments() {
  const served = new Map();
  const state = { hits: 0 };
  const https = createHttpsServer(
    { cert: readFileSync(`${TLS}server.pem`), key: readFileSync(`${TLS}server.key`) },
    (request, response) => {
      state.hits += 1;
      const document = served.get(new URL(request.url, "https://127.0.0.1").pathname);
      if (document === undefined) {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(document));
    },
  );
  await new Promise((resolve) => https.listen(0, "127.0.0.1", resolve));
  const origin = `https://127.0.0.1:${https.address().port}`;
  return {
    state,
    /** Serves a public client's document at `path`; answers its URL, the client_id. */
    client(path, fields) {
      const url = `${origin}${path}`;
      served.set(path, { client_id: url, redirect_uris: [callback.uri], token_endpoint_auth_method: "none", ...fields });
      return url;
    },
    close: () => new Promise((resolve) => https.close(resolve)),
  };
}

/** A client registered by the admin key's organisation, with `name`. */
function registerClient(name) {
  return server.api.call("POST", "/v1/oauth/clients", { name, redirect_uris: [callback.uri] });
}


function authorizeUrl(clientId, { challenge, state, scope = "read write crm:*" }) {
  const query = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: callback.uri,
    code_challenge: challenge,
    code_challenge_method: "S256",
    resource: RESOURCE,
    scope,
    state,
  });
  return `${server.base}/v1/oauth/authorize?${query}`;
}


/** Opens the authorization URL and signs in with `key` by keyboard alone. */
async function signInByKeyboard(page, url, key) {
  await page.goto(url);
  await page.getByRole("heading", { name: "Sign in to grant access", level: 1 }).waitFor();
  await tabTo(page, "input[name=api_key]");
  await page.keyboard.type(key);
  await page.keyboard.press("Enter");
}

before(async () => {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  server = await startServer({
    listen: `127.0.0.1:${port}`,
    config:
      `public_url = "${issuer}"\nissuer = "${issuer}"\n\n[oauth]\nenabled = true\n\n` +
      `[oauth.client_documents]\nallow_loopback = true\nextra_roots = [${JSON.stringify(`${TLS}ca.pem`)}]\n`,
  });
  callback = await startCallback();
  documents = await startDocuments();
  browser = await launchBrowser();
  developerKey = (await server.api.createKey({ role: "developer", email: "dev@example.com" })).api_key;
  reviewerKey = (await server.api.createKey({ role: "reviewer", email: "rev@example.com" })).api_key;
});

after(async () => {
  await browser?.close();
  await callback?.close();
  await documents?.close();
  await server?.stop();
});

test("approving by keyboard alone sends code, state and iss back; the code buys a token that records", async () => {
  const client = await registerClient("Research assistant");
  const { verifier, challenge } = pkce();
  const state = "s t&ä=1";
  const { page, errors } = await openPage(browser);
  await signInByKeyboard(page, authorizeUrl(client.client_id, { challenge, state }), developerKey);
  await page.getByRole("heading", { name: "Grant access", level: 1 }).waitFor();
  assert.equal(await page.locator(".client-name").textContent(), "Research assistant");
  assert.equal(await page.locator(".host").textContent(), "127.0.0.1");
  assert.match(await page.locator(".warning").textContent(), /loopback/);
  await screenshot(page, "oauth-consent");

  // Narrow crm:* to crm:contacts, drop `write`, then approve.
  await tabTo(page, "input[name=action][value=write]");
  await page.keyboard.press("Space");
  await tabTo(page, "input[name=resource]");
  await page.keyboard.press("Control+A");
  await page.keyboard.type("crm:contacts");
  const landed = page.waitForURL((url) => url.href.startsWith(callback.uri));
  await tabTo(page, "button[type=submit]");
  await page.keyboard.press("Enter");
  await landed;
  const query = new URL(page.url()).searchParams;
  assert.match(query.get("code"), /^moc_[A-Za-z0-9_-]{43}$/);
  assert.equal(query.get("state"), state);
  assert.equal(query.get("iss"), server.base);
  assert.deepEqual(errors, []);
  await page.context().close();

  const { status, token } = await redeemCode(server.base, {
    code: query.get("code"),
    clientId: client.client_id,
    redirectUri: callback.uri,
    verifier,
    resource: RESOURCE,
  });
  assert.equal(status, 200, JSON.stringify(token));
  assert.equal(token.token_type, "Bearer");
  assert.equal(token.scope, "read crm:contacts");
  const record = await server.api.call(
    "POST",
    "/v1/vat/record/action",
    { action: "read", resource: "crm:contacts", result: "success" },
    { key: token.access_token },
  );
  assert.match(record.aar_id, /./);
});

test("denying sends access_denied, state and iss back", async () => {
  const client = await registerClient("Mail helper");
  const { challenge } = pkce();
  const { page, errors } = await openPage(browser);
  await signInByKeyboard(page, authorizeUrl(client.client_id, { challenge, state: "deny-1" }), developerKey);
  await page.getByRole("heading", { name: "Grant access", level: 1 }).waitFor();
  const landed = page.waitForURL((url) => url.href.startsWith(callback.uri));
  await tabTo(page, "button.danger");
  await page.keyboard.press("Enter");
  await landed;
  const query = new URL(page.url()).searchParams;
  assert.equal(query.get("error"), "access_denied");
  assert.equal(query.get("state"), "deny-1");
  assert.equal(query.get("iss"), server.base);
  assert.equal(query.get("code"), null);
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("a client's name is shown as text: markup in it never runs", async () => {
  const client = await registerClient(XSS_NAME);
  const { challenge } = pkce();
  const { page, errors } = await openPage(browser);
  await signInByKeyboard(page, authorizeUrl(client.client_id, { challenge, state: "x" }), developerKey);
  await page.getByRole("heading", { name: "Grant access", level: 1 }).waitFor();
  assert.equal(await page.locator(".client-name").textContent(), XSS_NAME);
  assert.equal(await page.locator("main img").count(), 0);
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("a reviewer's key is told it cannot grant, and why", async () => {
  const client = await registerClient("Calendar bot");
  const { challenge } = pkce();
  const { page } = await openPage(browser);
  await signInByKeyboard(page, authorizeUrl(client.client_id, { challenge, state: "r" }), reviewerKey);
  const alert = page.getByRole("alert");
  await alert.waitFor();
  assert.match(await alert.textContent(), /reviewer.*cannot grant access/);
  assert.ok(await alert.evaluate((element) => element === document.activeElement));
  assert.equal(await page.getByRole("button", { name: "Approve" }).count(), 0);
  await page.context().close();
});

test("the admin key, made for no person, is told a grant is a person's", async () => {
  const client = await registerClient("Calendar bot");
  const { challenge } = pkce();
  const { page } = await openPage(browser);
  await signInByKeyboard(page, authorizeUrl(client.client_id, { challenge, state: "a" }), server.adminKey);
  const alert = page.getByRole("alert");
  await alert.waitFor();
  assert.match(await alert.textContent(), /made for no person/);
  await page.context().close();
});

test("the page refuses framing and is never stored (RFC 9700 §4.16)", async () => {
  const response = await fetch(`${server.base}/oauth/consent?request=x`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-security-policy"), /frame-ancestors 'none'/);
  assert.equal(response.headers.get("x-frame-options"), "DENY");
  assert.equal(response.headers.get("cache-control"), "no-store");
  assert.equal(response.headers.get("referrer-policy"), "no-referrer");
});

test("on a 375×812 phone the page has no horizontal scroll", async () => {
  const client = await registerClient("A client with a rather long registered name, for narrow screens");
  const { challenge } = pkce();
  const { page, errors } = await openPage(browser, { width: 375, height: 812 });
  await signInByKeyboard(page, authorizeUrl(client.client_id, { challenge, state: "p" }), developerKey);
  await page.getByRole("heading", { name: "Grant access", level: 1 }).waitFor();
  await screenshot(page, "oauth-consent-375");
  const [scrollWidth, clientWidth] = await page.evaluate(() => [
    document.documentElement.scrollWidth,
    document.documentElement.clientWidth,
  ]);
  assert.ok(scrollWidth <= clientWidth, `scrollWidth ${scrollWidth} > ${clientWidth}`);
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("a metadata document's client: fetched after sign-in, its host shown, its script-bearing name only text", async () => {
  const clientId = documents.client("/agents/scripted.json", {
    client_name: SCRIPT_NAME,
    logo_uri: "https://logo.example/logo.png",
  });
  const { verifier, challenge } = pkce();
  const { page, errors } = await openPage(browser);
  const dialogs = [];
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  const origins = new Set();
  page.on("request", (request) => origins.add(new URL(request.url()).origin));
  await page.goto(authorizeUrl(clientId, { challenge, state: "cimd" }));
  await page.getByRole("heading", { name: "Sign in to grant access", level: 1 }).waitFor();
  assert.equal(documents.state.hits, 0, "nothing is fetched before sign-in");
  await page.getByLabel("API key").fill(developerKey);
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { name: "Grant access", level: 1 }).waitFor();
  assert.equal(await page.locator(".client-host").textContent(), "127.0.0.1");
  assert.equal(documents.state.hits, 1);
  assert.equal(await page.locator(".claimed-name").textContent(), SCRIPT_NAME);
  assert.match(await page.locator(".says").textContent(), /^says it is /);
  assert.equal(await page.locator("main img").count(), 0);
  assert.equal(await page.locator("main script").count(), 0);
  assert.deepEqual(dialogs, []);
  assert.deepEqual([...origins], [server.base], "no request to any other host (no logo)");
  assert.deepEqual(errors, []);

  const landed = page.waitForURL((url) => url.href.startsWith(callback.uri));
  await page.getByRole("button", { name: "Approve" }).click();
  await landed;
  const query = new URL(page.url()).searchParams;
  assert.equal(query.get("state"), "cimd");
  assert.equal(query.get("iss"), server.base);
  assert.deepEqual(dialogs, []);
  await page.context().close();

  const { status, token } = await redeemCode(server.base, {
    code: query.get("code"),
    clientId: clientId,
    redirectUri: callback.uri,
    verifier,
    resource: RESOURCE,
  });
  assert.equal(status, 200, JSON.stringify(token));
  assert.equal(token.token_type, "Bearer");
  assert.equal(documents.state.hits, 1, "the decision used the document kept");
});
