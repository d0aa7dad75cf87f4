// The <mandate-verify> widget in Chromium: the demo page marks a valid token
// valid and a tampered one invalid with the reason, fetching nothing but the
// key set and the tokens' status lists (status.test.mjs); and the element
// works on a page of another origin with one module script.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { launchBrowser, openPage, screenshot, seedChain, startServer } from "./harness.mjs";

/** The token with one claim changed and the signature kept. */
function tampered(token) {
  const [header, payload, signature] = token.split(".");
  const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  claims.svc_scope.actions.push("delete");
  return [header, Buffer.from(JSON.stringify(claims)).toString("base64url"), signature].join(".");
}

describe("verification widget", () => {
  let server;
  let browser;
  let seeded;

  before(async () => {
    server = await startServer();
    seeded = await seedChain(server.api);
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("the demo page verifies locally: valid, delegated, tampered", async () => {
    const { page, context, errors } = await openPage(browser, { width: 900, height: 900 });
    const requests = [];
    page.on("request", (request) => requests.push(new URL(request.url()).pathname));
    await page.goto(`${server.base}/widget.html`);
    // Locators reach into the element's open shadow root.
    const widget = page.locator("mandate-verify .card");

    await page.getByLabel("Token").fill(seeded.root.compact_jwt);
    await page.locator('mandate-verify[data-verdict="valid"]').waitFor();
    const valid = await widget.innerText();
    assert.match(valid, /Valid token/);
    assert.match(valid, /orchestrator/);
    assert.match(valid, /L1 · trust 0\.40/);
    assert.match(valid, /crm:\*/);
    assert.match(valid, /delegate/);
    assert.match(valid, /gdpr/);
    assert.match(valid, /at most \$50 spent; at most 100 actions/);
    assert.match(valid, /root token \(depth 0\)/);
    assert.match(valid, /expires in (59|60) min/);
    await screenshot(page, "widget-valid");

    await page.getByLabel("Token").fill(seeded.summarizer.compact_jwt);
    await page.locator('mandate-verify[data-verdict="valid"]').waitFor();
    const delegated = await widget.innerText();
    assert.match(delegated, /summarizer/);
    assert.match(delegated, /depth 2, delegated by researcher ← orchestrator/);
    // The chain names the ancestors by jti hash, never by jti.
    for (const jth of seeded.summarizer.claims.svc_chain) {
      assert.ok(delegated.includes(jth), `the chain names ${jth}`);
    }
    assert.ok(delegated.includes(seeded.summarizer.jti));
    for (const ancestor of [seeded.root.jti, seeded.researcher.jti]) {
      assert.ok(!delegated.includes(ancestor), `the widget shows no ancestor's jti (${ancestor})`);
    }
    assert.match(delegated, /not bound/);
    await screenshot(page, "widget-delegated");

    await page.getByLabel("Token").fill(tampered(seeded.root.compact_jwt));
    await page.locator('mandate-verify[data-verdict="invalid"]').waitFor();
    assert.equal(await page.locator("mandate-verify").getAttribute("data-error"), "invalid_signature");
    const invalid = await widget.innerText();
    assert.match(invalid, /Invalid token: The signature does not match/);
    assert.match(invalid, /invalid_signature/);
    assert.match(invalid, /not verified, do not trust it/);
    await screenshot(page, "widget-invalid");

    await page.getByLabel("Token").fill("not-a-token");
    await page.locator('mandate-verify[data-error="malformed_token"]').waitFor();

    assert.deepEqual(
      requests.filter((path) => path.startsWith("/v1") && !/^\/v1\/vat\/status\/\d+$/.test(path)),
      [],
      "verification calls no API but the tokens' status lists",
    );
    assert.equal(requests.filter((path) => path === "/.well-known/jwks.json").length, 1, "the key set, once");
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("an api-key goes with the key set request, and only there", async () => {
    const { page, context, errors } = await openPage(browser);
    const authorizations = [];
    page.on("request", (request) => {
      authorizations.push([new URL(request.url()).pathname, request.headers().authorization]);
    });
    await page.goto(`${server.base}/widget.html`);
    await page.locator("mandate-verify").evaluate((element, args) => {
      element.setAttribute("api-key", args.key);
      element.setAttribute("token", args.token);
    }, { key: server.adminKey, token: seeded.root.compact_jwt });
    await page.locator('mandate-verify[data-verdict="valid"]').waitFor();
    const sent = authorizations.filter(([, authorization]) => authorization !== undefined);
    assert.deepEqual(sent, [["/.well-known/jwks.json", `Bearer ${server.adminKey}`]]);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("one module script puts the widget on a page of another origin", async () => {
    const { page, context, errors } = await openPage(browser, { width: 700, height: 800 });
    const jwks = await server.api.call("GET", "/.well-known/jwks.json", undefined, { key: null });
    await page.setContent(`<!doctype html><html lang="en"><head><title>Elsewhere</title><link rel="icon" href="data:,"></head><body>
      <script type="module" src="${server.base}/mandate-verify.js"></script>
      <mandate-verify></mandate-verify></body></html>`);
    await page.locator("mandate-verify").evaluate((element, args) => {
      element.setAttribute("jwks", JSON.stringify(args.jwks));
      element.setAttribute("token", args.token);
    }, { jwks, token: seeded.researcher.compact_jwt });
    await page.locator('mandate-verify[data-verdict="valid"]').waitFor();
    assert.match(await page.locator("mandate-verify .card").innerText(), /researcher/);
    await screenshot(page, "widget-elsewhere");
    assert.deepEqual(errors, []);
    await context.close();
  });
});
