// The tokens list in Chromium against a real server (it needs `GET
// /v1/vat/tokens` with `human_label`): the organisation's tokens, active
// first, each human by a label and never only its hash, filtered by agent
// and status; a revoked token's badge is not a pending record's grey; the
// workflows list names each workflow's human and filters by one.
// Desktop and phone screenshots, no sideways scroll.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { launchBrowser, openPage, screenshot, seedChain, signIn, startServer } from "./harness.mjs";

/** A jti's hash, as the pages name a token (base64url SHA-256). */
const jthOf = (jti) => createHash("sha256").update(jti).digest("base64url");

describe("tokens", () => {
  let server;
  let browser;
  let seeded;

  before(async () => {
    server = await startServer();
    seeded = await seedChain(server.api);
    await server.api.call("POST", "/v1/vat/revoke", { jti: seeded.summarizer.jti, reason: "done" });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("lists the tokens, active first, humans by label; filters; fits a phone", async () => {
    const { page, errors } = await openPage(browser, { width: 1280, height: 800 });
    await signIn(page, server.base, server.adminKey);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Tokens" }).click();
    await page.locator("tr[data-jth]").first().waitFor();
    const statuses = await page.locator("tr[data-jth]").evaluateAll((rows) => rows.map((row) => row.dataset.status));
    assert.deepEqual(statuses, ["active", "active", "revoked"]);
    for (const cell of await page.locator('td[data-label="Human"]').allInnerTexts()) {
      assert.doesNotMatch(cell, /^sha256/, "a human is never shown only by its hash");
    }
    const revoked = await page.locator('tr[data-status="revoked"] .badge').evaluate((badge) => getComputedStyle(badge).backgroundColor);
    const pending = await page.evaluate(() => {
      const probe = document.createElement("span");
      probe.className = "badge badge-pending";
      document.body.append(probe);
      const colour = getComputedStyle(probe).backgroundColor;
      probe.remove();
      return colour;
    });
    assert.notEqual(revoked, pending);
    await screenshot(page, "tokens");

    await page.getByLabel("Status").selectOption("revoked");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForFunction(() => document.querySelectorAll("tr[data-jth]").length === 1);
    assert.equal(await page.locator(`tr[data-jth="${jthOf(seeded.summarizer.jti)}"]`).count(), 1);
    // Tokens are named by jti hash: no jti, which would act as the agent, is on the page.
    assert.doesNotMatch(await page.content(), /vat_(root|del)_/);
    assert.deepEqual(errors, []);
    await page.context().close();

    const phone = await openPage(browser, { width: 390, height: 844 });
    await signIn(phone.page, server.base, server.adminKey);
    await phone.page.goto(`${server.base}/#/tokens`);
    await phone.page.locator("tr[data-jth]").first().waitFor();
    const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the tokens page is ${overflow}px wider than the screen`);
    await screenshot(phone.page, "phone-tokens");
    await phone.context.close();
  });

  test("the workflows list names each workflow's human by label and filters by one", async () => {
    const other = await server.api.issue({
      developer_email: "ops@example.com",
      agent_id: "ops-bot",
      resources: ["crm:*"],
      actions: ["read"],
    });
    await server.api.act(other.jti, "read", "crm:accounts", "success");
    const { page, errors } = await openPage(browser, { width: 1280, height: 800 });
    await signIn(page, server.base, server.adminKey);
    await page.goto(`${server.base}/#/workflows`);
    await page.locator("tr[data-provenance-ref]").first().waitFor();
    const humans = await page.locator('td[data-label="Human"]').allInnerTexts();
    assert.deepEqual([...humans].sort(), ["ops@example.com", "reviewer@example.com"]);
    await page.locator('td[data-label="Human"]').getByText("ops@example.com").click();
    await page.waitForFunction(() => document.querySelectorAll("tr[data-provenance-ref]").length === 1);
    assert.equal(await page.locator(`tr[data-provenance-ref="${other.provenance_ref}"]`).count(), 1);
    await screenshot(page, "workflows-by-human");
    assert.deepEqual(errors, []);
    await page.context().close();
  });
});
