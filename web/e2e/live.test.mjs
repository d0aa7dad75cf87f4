// Live updates in Chromium against a real server: a record an agent writes
// appears in an open workflow (table, graph and summary) without a reload,
// a success (which no event announces) as well as an error; the header's
// indicator says the page is live; after the server restarts on the same
// data folder the stream connects again with Last-Event-ID, and the pages
// follow what happens next.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { launchBrowser, openPage, screenshot, seedChain, signIn, startServer } from "./harness.mjs";

/** A server going away drops the stream and the requests of the moment; leaving a page aborts its stream. */
const unexpected = (errors) =>
  errors.filter((error) => !/\/v1\/(events|vat\/\S+) net::ERR_(ABORTED|CONNECTION_REFUSED|EMPTY_RESPONSE|CONNECTION_RESET|INCOMPLETE_CHUNKED_ENCODING)|Failed to load resource/.test(error));

describe("live", () => {
  let server;
  let browser;
  let seeded;
  let page;
  let errors;
  /** The Last-Event-ID of each stream the page opened, in order ("" when none). */
  const streams = [];

  before(async () => {
    server = await startServer();
    seeded = await seedChain(server.api);
    browser = await launchBrowser();
    ({ page, errors } = await openPage(browser));
    page.on("request", (request) => {
      if (new URL(request.url()).pathname === "/v1/events") {
        streams.push(request.headers()["last-event-id"] ?? "");
      }
    });
    await signIn(page, server.base, server.adminKey);
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  const indicator = () => page.getByRole("banner").getByRole("status");

  test("a record an agent writes appears in the open workflow without a reload", async () => {
    const ref = seeded.root.provenance_ref;
    await page.goto(`${server.base}/#/workflow/${ref}`);
    await page.locator('.graph-canvas[data-ready="true"]').waitFor();
    await indicator().filter({ hasText: "Updates live." }).waitFor();
    // The table renders apart from the graph: wait for its seventh row.
    await page.locator("tr[data-aar-id]").nth(6).waitFor();
    assert.equal(await page.locator("tr[data-aar-id]").count(), 7);
    await page.evaluate(() => {
      window.notReloaded = true;
    });

    // A success: no event announces it; the page's poll finds it.
    const { aar_id: success } = await server.api.act(seeded.researcher.jti, "read", "crm:forecast", "success");
    const row = page.locator(`tr[data-aar-id="${success}"]`);
    await row.waitFor({ timeout: 15_000 });
    assert.equal(await row.getAttribute("data-outcome"), "success");
    await page.locator(`li[data-node-id="${success}"]`).waitFor({ state: "attached" });
    // An error: `record.failed` brings it at once.
    const { aar_id: failed } = await server.api.act(seeded.summarizer.jti, "read", "docs:missing", "error");
    await page.locator(`tr[data-aar-id="${failed}"][data-outcome="error"]`).waitFor({ timeout: 4_000 });
    await page.locator('li[data-count="error"]', { hasText: "2" }).waitFor();
    assert.equal(await page.evaluate(() => window.notReloaded), true, "the page was not reloaded");
    await screenshot(page, "workflow-live");

    const phone = await openPage(browser, { width: 390, height: 844 });
    await signIn(phone.page, server.base, server.adminKey);
    await phone.page.goto(`${server.base}/#/workflow/${ref}`);
    await phone.page.locator('.graph-canvas[data-ready="true"]').waitFor();
    await phone.page.getByRole("banner").getByRole("status").filter({ hasText: "Updates live." }).waitFor();
    const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the workflow page is ${overflow}px wider than the screen`);
    await screenshot(phone.page, "phone-workflow-live");
    await phone.context.close();
    assert.deepEqual(unexpected(errors.splice(0)), []);
  });

  test("after the server restarts the stream resumes after the last event, and the pages follow again", async () => {
    const ref = seeded.root.provenance_ref;
    // An event the page receives before the restart: the stream's last id.
    const before = streams.length;
    await server.api.attempt(seeded.summarizer.jti, "delete", "docs:q3-report");
    await page.locator('li[data-count="denied"]', { hasText: "2" }).waitFor({ timeout: 4_000 });

    await server.restart();
    await indicator().filter({ hasText: "Updates live." }).waitFor({ timeout: 20_000 });
    const resumed = streams.slice(before);
    assert.ok(resumed.length >= 1, "the page connected again");
    assert.match(resumed.at(-1), /^msg_/, "it resumed after the last event it had");

    // Events after the restart reach the open page.
    const { aar_id: failed } = await server.api.act(seeded.researcher.jti, "read", "crm:after-restart", "timeout");
    await page.locator(`tr[data-aar-id="${failed}"][data-outcome="timeout"]`).waitFor({ timeout: 4_000 });
    await screenshot(page, "workflow-after-restart");
    assert.deepEqual(unexpected(errors.splice(0)), []);
  });
});
