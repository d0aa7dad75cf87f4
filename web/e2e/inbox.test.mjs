// The reviewer's inbox in Chromium against a real server (it needs the
// reviewer endpoints: inbox counts, unrated records, bulk rating). A
// reviewer lands on it; rates a record with the keyboard and the agent's
// reputation moves; approves a waiting agent's request, which unblocks
// it; sees a record an agent writes appear without a reload; approves
// every success of a workflow after a confirmation. An auditor sees what
// waits and no control. Desktop and phone screenshots, no sideways scroll.

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { after, before, describe, test } from "node:test";
import { launchBrowser, openPage, screenshot, seedChain, signIn, startServer } from "./harness.mjs";

const { MandateClient } = createRequire(import.meta.url)("mandate-sdk");

/** Leaving a page closes its event stream, which Chromium reports as an aborted request. */
describe("inbox", () => {
  let server;
  let browser;
  let seeded;
  let page;
  let errors;
  let reviewerKey;
  let payer;

  before(async () => {
    server = await startServer();
    seeded = await seedChain(server.api);
    reviewerKey = await server.api.createKey({ role: "reviewer", email: "reviewer@example.com" });
    const root = await server.api.issue({
      agent_id: "treasurer",
      resources: ["bank:*"],
      actions: ["pay"],
      constraints: { max_spend_usd: 500, require_approval: { actions: ["pay"] } },
    });
    payer = root;
    browser = await launchBrowser();
    ({ page, errors } = await openPage(browser, { width: 1280, height: 800 }));
    await signIn(page, server.base, reviewerKey.api_key);
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("a reviewer lands on the inbox and rates with the keyboard; the agent's reputation moves", async () => {
    await page.getByRole("heading", { name: "Inbox", level: 1 }).waitFor();
    const row = page.locator(`tr[data-aar-id="${seeded.records.contacts}"]`);
    await row.waitFor();
    // The navigation counts what waits: four completed records unrated (the denied attempt is not completed).
    await page.locator('[data-count="inbox"]:not([hidden])').waitFor();
    await screenshot(page, "inbox");
    const before = await server.api.call("GET", "/v1/vat/reputation/researcher");
    await row.focus();
    await page.keyboard.press("a");
    await row.waitFor({ state: "detached" });
    await page.getByRole("status").filter({ hasText: "Rated approved: read crm:contacts." }).waitFor({ state: "attached" });
    const afterRating = await server.api.call("GET", "/v1/vat/reputation/researcher");
    assert.ok(afterRating.feedback_score > before.feedback_score, "an approval raises the feedback score");
    assert.notEqual(afterRating.combined_reputation, before.combined_reputation);
    // The focus moved to the next record; j and k move it; f flags.
    const focused = await page.evaluate(() => document.activeElement?.dataset.aarId);
    assert.ok(focused, "a record row has the focus");
    await page.keyboard.press("f");
    await page.locator(`tr[data-aar-id="${focused}"]`).waitFor({ state: "detached" });
    assert.equal((await server.api.call("GET", `/v1/vat/aar/${focused}`)).rating, "flagged");
    assert.deepEqual(errors.splice(0), []);
  });

  test("an approval decided from the inbox unblocks the waiting agent", async () => {
    const agent = new MandateClient({ baseUrl: server.base });
    const asking = agent.authorize(
      { action: "pay", resource: "bank:rent", spend_usd: 120 },
      { token: payer.compact_jwt, waitForApproval: { timeoutSeconds: 60 } },
    );
    const card = page.locator("article.inbox-approval", { hasText: "pay · bank:rent" });
    await card.waitFor();
    assert.match(await card.innerText(), /min left/);
    assert.match(await card.innerText(), /\$120\.00/);
    await card.getByLabel("Note (optional)").fill("Rent is due.");
    await card.getByRole("button", { name: "Approve" }).click();
    const answer = await asking;
    assert.equal(answer.authorized, true);
    await card.waitFor({ state: "detached" });
    assert.deepEqual(errors.splice(0), []);
  });

  test("a record an agent writes appears in the inbox without a reload", async () => {
    await page.evaluate(() => {
      window.notReloaded = true;
    });
    const { aar_id: failed } = await server.api.act(seeded.summarizer.jti, "read", "docs:late", "error");
    await page.locator(`tr[data-aar-id="${failed}"]`).waitFor({ timeout: 5_000 });
    const { aar_id: success } = await server.api.act(seeded.root.jti, "write", "crm:late", "success");
    await page.locator(`tr[data-aar-id="${success}"]`).waitFor({ timeout: 15_000 });
    assert.equal(await page.evaluate(() => window.notReloaded), true);
    assert.deepEqual(errors.splice(0), []);
  });

  test("every success of a workflow is approved at once after a confirmation", async () => {
    const form = page.getByRole("form", { name: "Approve all successes of a workflow" });
    await form.getByLabel("Workflow").selectOption(seeded.root.provenance_ref);
    await form.getByRole("button", { name: "Approve all successes…" }).click();
    const dialog = page.getByRole("dialog", { name: "Approve every success of this workflow?" });
    await dialog.waitFor();
    await screenshot(page, "inbox-bulk", { fullPage: false });
    await dialog.getByRole("button", { name: "Approve all successes" }).click();
    await page.getByText(/^Approved \d+ records?\.$/).waitFor();
    const { records } = await server.api.call("GET", `/v1/vat/aar?rated=false&result=success&provenance_ref=${seeded.root.provenance_ref}`);
    assert.deepEqual(records, []);
    assert.deepEqual(errors.splice(0), []);
  });

  test("an auditor sees what waits and no control; the page fits a phone", async () => {
    const auditorKey = await server.api.createKey({ role: "auditor", email: "auditor@example.com" });
    await server.api.act(seeded.researcher.jti, "read", "crm:audit", "error");
    await server.api.authorize(payer.jti, "pay", "bank:fees");
    for (const [width, height, name] of [
      [1280, 800, "inbox-auditor"],
      [390, 844, "phone-inbox-auditor"],
    ]) {
      const auditor = await openPage(browser, { width, height });
      await signIn(auditor.page, server.base, auditorKey.api_key);
      await auditor.page.goto(`${server.base}/#/inbox`);
      await auditor.page.locator("article.inbox-approval").first().waitFor();
      await auditor.page.locator("tr[data-aar-id]").first().waitFor();
      assert.equal(await auditor.page.getByRole("button", { name: /^(Approve|Deny|Flag|Reject)/ }).count(), 0);
      const overflow = await auditor.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `the inbox is ${overflow}px wider than the screen`);
      await screenshot(auditor.page, name);
      assert.deepEqual(auditor.errors, []);
      await auditor.context.close();
    }
    const phone = await openPage(browser, { width: 390, height: 844 });
    await signIn(phone.page, server.base, reviewerKey.api_key);
    await phone.page.locator("article.inbox-approval").first().waitFor();
    const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the inbox is ${overflow}px wider than the screen`);
    await screenshot(phone.page, "phone-inbox");
    await phone.context.close();
  });
});
