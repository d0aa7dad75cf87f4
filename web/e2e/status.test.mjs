// <mandate-verify> and token status lists (IETF Token Status List), in
// Chromium.
//
// Part one stands on the conformance vectors: a status list server is
// played by the browser's request routing (at https://mandate.example, with
// the page clock set to the vectors' `now`), so the widget's verdicts —
// not revoked, Revoked, Status unknown — and what it fetches, and from
// where, are checked against lists and tokens whose contents are known.
//
// Part two is the server's contract, which `mandate serve` meets once it
// publishes lists: tokens it issues name `<base>/v1/vat/status/<n>`;
// `GET /v1/vat/status/<n>` answers the list (no credentials, CORS open,
// `application/statuslist+jwt`, `Cache-Control: public, max-age=<ttl>`, an
// ETag); revoking a token sets its bit and its descendants' at once, and
// the widget then shows them revoked. Until the server publishes lists,
// part two fails at its first assertion.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { launchBrowser, openPage, screenshot, seedChain, startServer } from "./harness.mjs";

const vectors = JSON.parse(readFileSync(new URL("../../tests/vectors/status_list.json", import.meta.url), "utf8"));
const byName = (name) => vectors.cases.find((c) => c.name === name);
const STATUS_SERVER = "https://mandate.example";
const LIST0 = `${STATUS_SERVER}/v1/vat/status/0`;

describe("status lists in the widget, against a routed list server", () => {
  let server;
  let browser;

  before(async () => {
    server = await startServer();
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  /**
   * A page of another origin with the widget, its clock at the vectors'
   * `now`, and https://mandate.example (or `jwksOrigin`) answering the key
   * set and list 0 from `list` (a JWT, or a status code).
   */
  async function widgetPage({ list, jwksOrigin = STATUS_SERVER }) {
    const opened = await openPage(browser, { width: 760, height: 900 });
    const { page } = opened;
    await page.clock.setFixedTime(new Date(vectors.now * 1000));
    const requests = [];
    const cors = { "access-control-allow-origin": "*" };
    await page.route(/^https:\/\/(mandate|other)\.example\//, async (route) => {
      const request = route.request();
      requests.push({ url: request.url(), accept: request.headers().accept });
      const url = new URL(request.url());
      if (url.pathname === "/.well-known/jwks.json") {
        return route.fulfill({ status: 200, headers: cors, contentType: "application/json", body: JSON.stringify(vectors.jwks) });
      }
      if (request.url() === LIST0 && typeof list === "string") {
        return route.fulfill({ status: 200, headers: cors, contentType: "application/statuslist+jwt", body: list });
      }
      return route.fulfill({ status: typeof list === "number" ? list : 404, headers: cors, body: "" });
    });
    await page.setContent(`<!doctype html><html lang="en"><head><title>Elsewhere</title><link rel="icon" href="data:,"></head><body>
      <script type="module" src="${server.base}/mandate-verify.js"></script>
      <mandate-verify jwks-url="${jwksOrigin}/.well-known/jwks.json"></mandate-verify></body></html>`);
    const show = async (token, verdict) => {
      await page.locator("mandate-verify").evaluate((element, t) => element.setAttribute("token", t), token);
      await page.locator(`mandate-verify[data-verdict="${verdict}"]`).waitFor();
      return page.locator("mandate-verify .card").innerText();
    };
    return { ...opened, requests, show };
  }

  test("a valid token is shown not revoked; a revoked one as Revoked; the list is fetched once", async () => {
    const { page, context, errors, requests, show } = await widgetPage({ list: byName("valid").list });
    const valid = await show(byName("valid").token, "valid");
    assert.match(valid, /Valid token/);
    assert.match(valid, /not revoked/);
    assert.match(valid, /Revocation\s+not revoked by the status list signed .* \(entry 3\)/);
    assert.equal(await page.locator("mandate-verify").getAttribute("data-status"), "not-revoked");
    await screenshot(page, "widget-status-not-revoked");

    const revoked = await show(byName("revoked").token, "revoked");
    assert.match(revoked, /^Revoked/i);
    assert.match(revoked, /it has been revoked: it authorizes nothing/);
    assert.match(revoked, /What the token granted before it was revoked/);
    assert.doesNotMatch(revoked, /Valid token/);
    const verdict = page.locator("mandate-verify .verdict-revoked");
    assert.equal(await verdict.getAttribute("role"), "alert");
    // Its own look: not the valid green, not the invalid red.
    const background = await verdict.evaluate((element) => getComputedStyle(element).backgroundColor);
    assert.equal(background, "rgb(76, 5, 25)");
    await screenshot(page, "widget-status-revoked");

    const lists = requests.filter((r) => r.url.includes("/v1/vat/status/"));
    assert.deepEqual(lists, [{ url: LIST0, accept: "application/statuslist+jwt" }], "one fetch of list 0, by its media type");
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("a token without a status claim is valid, and no list is fetched", async () => {
    const { context, errors, requests, show } = await widgetPage({ list: byName("valid").list });
    const text = await show(byName("no_status_claim").token, "valid");
    assert.match(text, /Revocation\s+not checkable here: the token names no status list/);
    assert.equal(requests.filter((r) => r.url.includes("/v1/vat/status/")).length, 0);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("a list that cannot be fetched, or is refused, shows Status unknown", async () => {
    for (const [list, reason] of [
      [503, /answered HTTP 503/],
      [byName("tampered_lst").list, /status list was refused.*invalid_signature/],
      [byName("zip_bomb").list, /list_too_large/],
      [byName("expired_list").list, /status_list_expired/],
    ]) {
      const { page, context, show } = await widgetPage({ list });
      const text = await show(byName("revoked").token, "status-unknown");
      assert.match(text, /^Status unknown/, String(reason));
      assert.match(text, reason);
      assert.doesNotMatch(text, /Revoked|not revoked/);
      if (list === 503) await screenshot(page, "widget-status-unknown");
      await context.close();
    }
  });

  test("a status list on another host than the key set's is never fetched", async () => {
    const { context, errors, requests, show } = await widgetPage({ list: byName("valid").list, jwksOrigin: "https://other.example" });
    const text = await show(byName("revoked").token, "status-unknown");
    assert.match(text, /status list is on https:\/\/mandate\.example, and this widget asks only https:\/\/other\.example/);
    assert.deepEqual(requests.map((r) => r.url), ["https://other.example/.well-known/jwks.json"]);
    assert.deepEqual(errors, []);
    await context.close();
  });
});

describe("status lists against mandate serve (the server's contract)", () => {
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

  test("issued tokens name their list, which is served as the draft says", async () => {
    const uri = seeded.root.claims.status?.status_list?.uri;
    assert.match(String(uri), new RegExp(`^${server.base.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/v1/vat/status/\\d+$`));
    for (const token of [seeded.researcher, seeded.summarizer]) {
      assert.equal(typeof token.claims.status.status_list.idx, "number");
    }
    const response = await fetch(uri, { headers: { accept: "application/statuslist+jwt", origin: "https://elsewhere.example" } });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type"), /^application\/statuslist\+jwt/);
    assert.match(response.headers.get("cache-control"), /public/);
    assert.match(response.headers.get("cache-control"), /max-age=\d+/);
    assert.ok(response.headers.get("etag"), "an ETag");
    assert.equal(response.headers.get("access-control-allow-origin"), "*");
    const jwt = (await response.text()).trim();
    const header = JSON.parse(Buffer.from(jwt.split(".")[0], "base64url").toString("utf8"));
    assert.equal(header.typ, "statuslist+jwt");
    assert.equal(header.alg, "EdDSA");
    const again = await fetch(uri, { headers: { "if-none-match": response.headers.get("etag") } });
    assert.equal(again.status, 304);
  });

  test("the widget shows a revoked chain as revoked, and the rest as valid", async () => {
    const look = async (token, verdict) => {
      // A fresh page each time: the widget keeps a list for its ttl within a page.
      const { page, context, errors } = await openPage(browser, { width: 900, height: 900 });
      const requests = [];
      page.on("request", (request) => requests.push(new URL(request.url()).pathname));
      await page.goto(`${server.base}/widget.html`);
      await page.getByLabel("Token").fill(token.compact_jwt);
      await page.locator(`mandate-verify[data-verdict="${verdict}"]`).waitFor();
      const text = await page.locator("mandate-verify .card").innerText();
      return { page, context, errors, requests, text };
    };
    const before = await look(seeded.summarizer, "valid");
    assert.match(before.text, /not revoked/);
    assert.deepEqual(
      before.requests.filter((path) => path.startsWith("/v1")),
      [new URL(seeded.summarizer.claims.status.status_list.uri).pathname],
      "the one API call is the token's status list",
    );
    assert.deepEqual(before.errors, []);
    await before.context.close();

    // Revoking the middle of the chain sets its bit and its descendant's.
    await server.api.call("POST", "/v1/vat/revoke", { jti: seeded.researcher.jti });
    for (const token of [seeded.researcher, seeded.summarizer]) {
      const { page, context, errors, text } = await look(token, "revoked");
      // The badge's text (its style shows it in capitals).
      assert.equal(await page.locator("mandate-verify .verdict-revoked .badge").textContent(), "Revoked");
      assert.match(text, /it has been revoked: it authorizes nothing/);
      if (token === seeded.summarizer) await screenshot(page, "widget-served-revoked");
      assert.deepEqual(errors, []);
      await context.close();
    }
    const root = await look(seeded.root, "valid");
    assert.match(root.text, /not revoked/);
    await root.context.close();
  });
});
