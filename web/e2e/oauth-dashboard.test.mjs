// The dashboard's OAuth pages (docs/oauth.md "The dashboard") in Chromium
// against a live `mandate serve` with `[oauth]` on: the grants consents
// made — a client's self-declared name (one with markup) shown as text
// beside where the client comes from, the state with a root revoked
// elsewhere (`root_revoked`), paged by the server's cursor, revoked after a
// confirmation step by keyboard, the chain ended — and the pre-registered
// clients, which only a key with `manage_clients` is offered: registered
// and deleted through the page. Both pages axe-clean (WCAG 2.1 AA), one
// h1, no sideways scroll at phone width.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  axeViolations,
  freePort,
  launchBrowser,
  openPage,
  pkce,
  redeemCode,
  screenshot,
  signIn,
  startServer,
} from "./harness.mjs";

const RESOURCE = "https://mcp.example.com/mcp";
const REDIRECT = "http://127.0.0.1/callback";
const XSS_NAME = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>Notes & Co`;
/** One more grant than a page holds (the page shows 20). */
const GRANTS = 21;


/**
 * One authorization-code flow by API, as a client and the consent page make
 * it: authorize, the person's decision with `key`, the token request.
 * Answers the token response.
 */
async function grantFlow(server, clientId, key) {
  const { verifier, challenge } = pkce();
  const query = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: "S256",
    resource: RESOURCE,
    scope: "read crm:*",
  });
  const authorized = await fetch(`${server.base}/v1/oauth/authorize?${query}`, { redirect: "manual" });
  assert.equal(authorized.status, 303);
  const sealed = new URL(authorized.headers.get("location")).searchParams.get("request");
  const decided = await server.api.call(
    "POST",
    "/v1/oauth/requests/decision",
    { request: sealed, decision: "approve", grant: { actions: ["read"], resources: ["crm:*"], ttl_seconds: 3600 } },
    { key },
  );
  const code = new URL(decided.redirect).searchParams.get("code");
  const { status, token } = await redeemCode(server.base, { code, clientId, redirectUri: REDIRECT, verifier });
  assert.equal(status, 200);
  return token;
}

/** Horizontal overflow of the page, in CSS pixels. */
const overflow = (page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

describe("the dashboard's OAuth pages", () => {
  let server;
  let browser;
  let owner;
  let developer;
  let xssClient;
  let plainClient;

  before(async () => {
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    server = await startServer({
      listen: `127.0.0.1:${port}`,
      config: `public_url = "${issuer}"\nissuer = "${issuer}"\n\n[oauth]\nenabled = true\n`,
    });
    owner = (await server.api.call("POST", "/v1/keys", { role: "owner", email: "owner@example.com" })).api_key;
    developer = (await server.api.call("POST", "/v1/keys", { role: "developer", email: "dev@example.com" })).api_key;
    plainClient = await server.api.call("POST", "/v1/oauth/clients", { name: "Plain client", redirect_uris: [REDIRECT] });
    for (let n = 0; n < GRANTS - 2; n += 1) {
      await grantFlow(server, plainClient.client_id, owner);
    }
    // The root of the oldest grant revoked another way: the list says `root_revoked`.
    const oldest = (await server.api.call("GET", "/v1/oauth/grants")).grants.at(-1);
    await server.api.call("POST", "/v1/vat/revoke", { jti: oldest.root_jti, reason: "ended elsewhere" });
    xssClient = await server.api.call("POST", "/v1/oauth/clients", { name: XSS_NAME, redirect_uris: [REDIRECT] });
    await grantFlow(server, xssClient.client_id, owner);
    await grantFlow(server, xssClient.client_id, developer);
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("grants: the client's name as text, states, pages, revoking by keyboard; axe-clean; fits a phone", async () => {
    const { page, errors } = await openPage(browser, { width: 1280, height: 900 });
    await signIn(page, server.base, owner);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Grants" }).click();
    await page.getByRole("heading", { name: "Grants", level: 1 }).waitFor();
    await page.locator("tr[data-grant-id]").first().waitFor();
    assert.equal(await page.locator("h1").count(), 1);
    assert.equal(await page.locator("tr[data-grant-id]").count(), 20, "a page holds 20 grants");

    // The name with markup is text: no element made of it, no script run.
    const names = page.locator("tr[data-grant-id] .client-name", { hasText: "Notes & Co" });
    assert.equal(await names.count(), 2);
    assert.equal(await names.first().textContent(), XSS_NAME);
    assert.equal(await page.locator("tr[data-grant-id] .client-name img, tr[data-grant-id] .client-name script").count(), 0);
    assert.equal(await page.evaluate(() => window.__xss), undefined);
    // No jti (which acts as the agent) is on the page: the root token is linked by its hash.
    assert.doesNotMatch(await page.content(), /vat_(root|del)_/);
    const link = page.locator("tr[data-grant-id] a", { hasText: "Root token and workflow" }).first();
    assert.match(await link.getAttribute("href"), /^#\/tokens\/[A-Za-z0-9_-]{43}$/);

    assert.deepEqual(await axeViolations(page), []);
    await screenshot(page, "oauth-grants");

    // The second page holds the oldest grant, its root revoked elsewhere.
    await page.getByRole("navigation", { name: "Grant pages" }).getByRole("button", { name: "Next →" }).click();
    await page.waitForFunction(() => document.querySelectorAll("tr[data-grant-id]").length === 1);
    const oldest = page.locator("tr[data-grant-id]");
    assert.equal(await oldest.getAttribute("data-state"), "revoked");
    assert.equal(await oldest.locator(".revoke-reason").getAttribute("data-reason"), "root_revoked");
    await page.getByRole("button", { name: "← Previous" }).click();
    await page.waitForFunction(() => document.querySelectorAll("tr[data-grant-id]").length === 20);

    // Revoke the newest grant (the developer's, with the named client) by keyboard, through the dialog.
    const newest = page.locator("tr[data-grant-id]").first();
    const grantId = await newest.getAttribute("data-grant-id");
    await newest.getByRole("button", { name: /^Revoke the grant of/ }).focus();
    await page.keyboard.press("Enter");
    const dialog = page.getByRole("dialog", { name: "Revoke this grant?" });
    await dialog.waitFor();
    assert.match(await dialog.textContent(), /Notes & Co/);
    await screenshot(page, "oauth-grants-revoke", { fullPage: false });
    await dialog.getByRole("button", { name: "Revoke grant" }).focus();
    await page.keyboard.press("Enter");
    await page.locator(`tr[data-grant-id="${grantId}"][data-state="revoked"]`).waitFor();
    const revoked = (await server.api.call("GET", `/v1/oauth/grants?client_id=${xssClient.client_id}`)).grants.find(
      (grant) => grant.grant_id === grantId,
    );
    assert.equal(revoked.revoke_reason, "revoked");
    const root = await server.api.call("GET", `/v1/vat/tokens/${encodeURIComponent(revoked.root_jti)}`);
    assert.equal(root.status, "revoked", "revoking the grant revoked its root token");

    const phone = await openPage(browser, { width: 375, height: 812 });
    await signIn(phone.page, server.base, owner);
    await phone.page.goto(`${server.base}/#/grants`);
    await phone.page.locator("tr[data-grant-id]").first().waitFor();
    assert.ok((await overflow(phone.page)) <= 0, "no sideways scroll at phone width");
    await screenshot(phone.page, "oauth-grants-phone");
    assert.deepEqual([...errors, ...phone.errors], []);
  });

  test("grants: a developer sees only their own", async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, server.base, developer);
    await page.goto(`${server.base}/#/grants`);
    await page.locator("tr[data-grant-id]").first().waitFor();
    assert.equal(await page.locator("tr[data-grant-id]").count(), 1);
    assert.equal(await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Clients" }).isVisible(), false);
    await page.goto(`${server.base}/#/clients`);
    await page.getByRole("heading", { name: "Not allowed", level: 1 }).waitFor();
    assert.match(await page.locator("main").textContent(), /manage_clients/);
    assert.deepEqual(errors, []);
  });

  test("clients: register and delete through the page; names as text; axe-clean; fits a phone", async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, server.base, owner);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Clients" }).click();
    await page.getByRole("heading", { name: "OAuth clients", level: 1 }).waitFor();
    await page.locator(`tr[data-client-id="${xssClient.client_id}"]`).waitFor();
    assert.equal(await page.locator(`tr[data-client-id="${xssClient.client_id}"] .client-name`).textContent(), XSS_NAME);
    assert.equal(await page.evaluate(() => window.__xss), undefined);
    assert.deepEqual(await axeViolations(page), []);

    await page.getByLabel("Name").fill("<b>Inspector</b>");
    await page.getByLabel("Redirect URIs").fill("http://localhost:6274/oauth/callback\nhttps://app.example.com/cb\n");
    await page.getByRole("button", { name: "Register client" }).click();
    const added = page.locator("tr[data-client-id]", { hasText: "<b>Inspector</b>" });
    await added.waitFor();
    const clientId = await added.getAttribute("data-client-id");
    assert.match(clientId, /^mcl_/);
    assert.equal(await added.locator("b").count(), 0);
    const listed = (await server.api.call("GET", "/v1/oauth/clients")).clients.find((c) => c.client_id === clientId);
    assert.deepEqual(listed.redirect_uris, ["http://localhost:6274/oauth/callback", "https://app.example.com/cb"]);
    await screenshot(page, "oauth-clients");

    // A refused registration is shown, and nothing is added.
    await page.getByLabel("Name").fill("Broken");
    await page.getByLabel("Redirect URIs").fill("https://app.example.com/cb#fragment");
    await page.getByRole("button", { name: "Register client" }).click();
    await page.locator(".client-form .problem").waitFor();

    await added.getByRole("button", { name: /^Delete the client/ }).click();
    const dialog = page.getByRole("dialog", { name: "Delete this client?" });
    await dialog.getByRole("button", { name: "Delete client" }).click();
    await page.locator(`tr[data-client-id="${clientId}"]`).waitFor({ state: "detached" });
    assert.equal((await server.api.call("GET", "/v1/oauth/clients")).clients.some((c) => c.client_id === clientId), false);

    const phone = await openPage(browser, { width: 375, height: 812 });
    await signIn(phone.page, server.base, owner);
    await phone.page.goto(`${server.base}/#/clients`);
    await phone.page.locator("tr[data-client-id]").first().waitFor();
    assert.ok((await overflow(phone.page)) <= 0, "no sideways scroll at phone width");
    await screenshot(phone.page, "oauth-clients-phone");
    // The one failed request is the refused registration (422), which Chromium logs.
    const unexpected = errors.filter((error) => !/status of 422/.test(error));
    assert.equal(errors.length - unexpected.length, 1);
    assert.deepEqual([...unexpected, ...phone.errors], []);
  });
});
