// The dashboard in Chromium against a real server: sign in, a three-deep
// delegation chain in the graph and the table, a rating that moves the
// agent's reputation, revoking the root, and the views at phone width.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { launchBrowser, openPage, screenshot, seedChain, signIn, startServer } from "./harness.mjs";

/** A token's jti hash: how the dashboard names tokens (it is never shown a jti). */
const jth = (jti) => createHash("sha256").update(jti).digest("base64url");

describe("dashboard", () => {
  let server;
  let browser;
  let seeded;
  let page;
  let errors;

  before(async () => {
    server = await startServer();
    seeded = await seedChain(server.api);
    browser = await launchBrowser();
    ({ page, errors } = await openPage(browser));
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("serves the page with a strict policy", async () => {
    const response = await page.goto(`${server.base}/`);
    const headers = response.headers();
    assert.match(headers["content-security-policy"], /script-src 'self' 'wasm-unsafe-eval';/);
    assert.doesNotMatch(headers["content-security-policy"], /unsafe-inline/);
    assert.match(headers["content-security-policy"], /frame-ancestors 'none'/);
    assert.equal(headers["x-content-type-options"], "nosniff");
    assert.equal(headers["referrer-policy"], "no-referrer");
  });

  test("a wrong key shows the problem; the right one signs in", async () => {
    await page.goto(`${server.base}/`);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await screenshot(page, "signin");
    await page.getByLabel("API key").fill("mk_not-a-real-key");
    await page.getByRole("button", { name: "Sign in" }).click();
    const problem = page.getByRole("alert");
    await problem.waitFor();
    assert.match(await problem.innerText(), /401 · unauthorized/);
    await screenshot(page, "signin-refused");
    // Chromium reports the refused request itself as a console error.
    assert.deepEqual(
      errors.splice(0).filter((error) => !/status of 401/.test(error)),
      [],
    );

    await signIn(page, server.base, server.adminKey);
    assert.ok(!page.url().includes(server.adminKey), "the key never enters the URL");
    assert.equal(await page.evaluate(() => sessionStorage.getItem("mandate.api_key")), server.adminKey);
    // An owner may decide and rate: it lands on the inbox.
    await page.getByRole("heading", { name: "Inbox", level: 1 }).waitFor();
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Workflows" }).click();
    const row = page.locator(`tr[data-provenance-ref="${seeded.root.provenance_ref}"]`);
    await row.waitFor();
    assert.match(await row.innerText(), /orchestrator/);
    assert.match(await row.innerText(), /\b7\b/, "five actions and the two delegations' records");
    await screenshot(page, "workflows");
    assert.deepEqual(errors, []);
  });

  test("workflows search by agent and by provenance_ref", async () => {
    await page.getByLabel("Agent").fill("nobody-at-all");
    await page.getByRole("button", { name: "Search" }).click();
    await page.getByText("No workflow matches.").waitFor();
    await page.getByRole("link", { name: "Clear" }).click();
    await page.getByLabel("Provenance ref").fill(seeded.root.provenance_ref);
    await page.getByRole("button", { name: "Search" }).click();
    await page.locator(`tr[data-provenance-ref="${seeded.root.provenance_ref}"]`).waitFor();
    assert.ok(!page.url().includes(server.adminKey));
    assert.deepEqual(errors, []);
  });

  test("the workflow shows the chain, each outcome in the graph and in the table", async () => {
    await page.locator(`tr[data-provenance-ref="${seeded.root.provenance_ref}"] a`).first().click();
    await page.locator('.graph-canvas[data-ready="true"]').waitFor();
    await page.getByText("The graph as a list").click();

    const node = (id) => page.locator(`li[data-node-id="${id}"]`);
    // human → orchestrator → researcher → summarizer, each nested in its parent.
    const root = node(jth(seeded.root.jti));
    assert.equal(await root.getAttribute("data-agent"), "orchestrator");
    assert.equal(await root.locator(`li[data-node-id="${jth(seeded.researcher.jti)}"]`).count(), 1);
    assert.equal(
      await node(jth(seeded.researcher.jti)).locator(`li[data-node-id="${jth(seeded.summarizer.jti)}"]`).count(),
      1,
    );
    assert.equal(await page.locator('li[data-kind="human"]').count(), 1);
    const expected = {
      [seeded.records.rootWrite]: "success",
      [seeded.records.contacts]: "success",
      [seeded.records.leads]: "error",
      [seeded.records.report]: "success",
      [seeded.records.denied]: "denied",
    };
    for (const [id, outcome] of Object.entries(expected)) {
      assert.equal(await node(id).getAttribute("data-outcome"), outcome, id);
      const row = page.locator(`tr[data-aar-id="${id}"]`);
      assert.equal(await row.getAttribute("data-outcome"), outcome, id);
    }
    assert.equal(
      await node(jth(seeded.summarizer.jti)).locator(`li[data-node-id="${seeded.records.denied}"]`).count(),
      1,
      "the denied attempt hangs under the summarizer's token",
    );
    assert.match(await node(seeded.records.denied).innerText(), /action_not_permitted/);
    await screenshot(page, "workflow");

    // The result filter narrows the table to the denied attempt.
    await page.getByLabel("Result").selectOption("denied");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.locator("tr[data-aar-id]").first().waitFor();
    await page.waitForFunction(() => document.querySelectorAll("tr[data-aar-id]").length === 1);
    assert.equal(await page.locator(`tr[data-aar-id="${seeded.records.denied}"]`).count(), 1);
    await page.getByRole("button", { name: "Reset" }).click();
    await page.waitForFunction(() => document.querySelectorAll("tr[data-aar-id]").length === 7);
    assert.deepEqual(errors, []);
  });

  test("rating a record moves the agent's reputation", async () => {
    const reputation = async () => {
      await page.goto(`${server.base}/#/agent/researcher`);
      const value = page.locator('[data-score="feedback"] .score-value');
      await value.waitFor();
      return {
        feedback: await value.innerText(),
        combined: await page.locator('[data-score="combined"] .score-value').innerText(),
      };
    };
    const before = await reputation();
    assert.equal(before.feedback, "0.500");

    await page.goto(`${server.base}/#/workflow/${seeded.root.provenance_ref}`);
    await page.locator('.graph-canvas[data-ready="true"]').waitFor();
    await page.locator(`tr[data-aar-id="${seeded.records.contacts}"] button.details`).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText("Rate this outcome").waitFor();
    await screenshot(page, "record", { fullPage: false });
    await dialog.getByLabel("Note (optional)").fill("Right contacts, well scoped.");
    await dialog.getByRole("button", { name: "Approve" }).click();
    await dialog.locator('.rating-given[data-rating="approved"]').waitFor();
    assert.equal(await dialog.getByRole("button", { name: "Approve" }).count(), 0, "a rating cannot change");
    assert.match(await dialog.innerText(), /Right contacts, well scoped\./);
    await screenshot(page, "record-rated", { fullPage: false });
    await dialog.getByRole("button", { name: "Close" }).click();

    // The graph is redrawn with the rating; the row shows it.
    await page.waitForFunction(
      (id) => document.querySelector(`li[data-node-id="${id}"]`)?.getAttribute("data-rating") === "approved",
      seeded.records.contacts,
    );
    await page.waitForFunction(
      (id) => document.querySelector(`tr[data-aar-id="${id}"]`)?.getAttribute("data-rating") === "approved",
      seeded.records.contacts,
    );
    // Reopened, the record shows its rating and no buttons.
    await page.locator(`tr[data-aar-id="${seeded.records.contacts}"] button.details`).click();
    await dialog.locator('.rating-given[data-rating="approved"]').waitFor();
    assert.equal(await dialog.getByRole("button", { name: "Reject" }).count(), 0);
    await dialog.getByRole("button", { name: "Close" }).click();

    const afterRating = await reputation();
    assert.equal(afterRating.feedback, "0.667", "(1 + 1) / (1 + 2)");
    assert.notEqual(afterRating.combined, before.combined);
    await screenshot(page, "agent");
    assert.deepEqual(errors, []);
  });

  test("revoking the root revokes the whole chain", async () => {
    await page.goto(`${server.base}/#/tokens/${seeded.root.jti}`);
    const status = page.locator(".token-status");
    await status.waitFor();
    assert.equal(await page.locator('tr[data-jth][data-status="active"]').count(), 3);
    await page.getByRole("button", { name: "Revoke…" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText("and its 2 descendants").waitFor();
    await dialog.getByLabel("Reason (optional)").fill("Workflow finished.");
    await screenshot(page, "revoke-confirm", { fullPage: false });
    await dialog.getByRole("button", { name: "Revoke 3 tokens" }).click();
    await page.locator('.token-status[data-status="revoked"]').waitFor();
    assert.equal(await page.locator('tr[data-jth][data-status="revoked"]').count(), 3);
    assert.equal(await page.locator('tr[data-jth][data-status="active"]').count(), 0);
    assert.match(await status.innerText(), /Workflow finished\./);
    await screenshot(page, "tokens-revoked");

    await page.goto(`${server.base}/#/workflow/${seeded.root.provenance_ref}`);
    await page.locator('.graph-canvas[data-ready="true"]').waitFor();
    for (const token of [seeded.root, seeded.researcher, seeded.summarizer]) {
      assert.equal(await page.locator(`li[data-node-id="${jth(token.jti)}"]`).getAttribute("data-status"), "revoked");
    }
    await screenshot(page, "workflow-revoked");
    assert.deepEqual(errors, []);
  });

  test("long lists go page by page", async () => {
    const bulk = await server.api.issue({ agent_id: "bulk-bot", resources: ["docs:*"], actions: ["read"] });
    for (let n = 0; n < 27; n += 1) {
      await server.api.act(bulk.jti, "read", `docs:page-${n}`, "success");
    }
    await page.goto(`${server.base}/#/agent/bulk-bot`);
    const rows = page.locator("tr[data-aar-id]");
    await rows.first().waitFor();
    assert.equal(await rows.count(), 25);
    assert.match(await rows.first().innerText(), /docs:page-26/, "newest first");
    await page.getByRole("button", { name: "Next →" }).click();
    await page.getByText("Page 2").waitFor();
    assert.equal(await rows.count(), 2);
    assert.match(await rows.last().innerText(), /docs:page-0/);
    assert.ok(await page.getByRole("button", { name: "Next →" }).isDisabled());
    await page.getByRole("button", { name: "← Previous" }).click();
    await page.getByText("Page 1").waitFor();
    assert.equal(await rows.count(), 25);
    assert.deepEqual(errors, []);
  });

  test("an unknown workflow shows the problem, not a blank page", async () => {
    await page.goto(`${server.base}/#/workflow/prov_00000000000000000000000000`);
    const problem = page.getByRole("alert").first();
    await problem.waitFor();
    assert.match(await problem.innerText(), /Workflow not found/);
    assert.match(await problem.innerText(), /no workflow has this provenance_ref/);
    assert.match(await problem.innerText(), /404 · workflow_not_found/);
    assert.deepEqual(
      errors.splice(0).filter((error) => !/status of 404/.test(error)),
      [],
    );
  });

  test("every view works at phone width", async () => {
    const phone = await openPage(browser, { width: 375, height: 812 });
    const fits = async (name, options) => {
      const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `${name}: the page is ${overflow}px wider than the screen`);
      await screenshot(phone.page, `phone-${name}`, options);
    };
    await signIn(phone.page, server.base, server.adminKey);
    await phone.page.goto(`${server.base}/#/workflows`);
    await phone.page.locator("tr[data-provenance-ref]").first().waitFor();
    await fits("workflows");
    await phone.page.goto(`${server.base}/#/workflow/${seeded.root.provenance_ref}`);
    await phone.page.locator('.graph-canvas[data-ready="true"]').waitFor();
    await phone.page.locator("tr[data-aar-id]").first().waitFor();
    await fits("workflow");
    await phone.page.locator(`tr[data-aar-id="${seeded.records.leads}"] button.details`).click();
    await phone.page.getByRole("dialog").getByText("Rate this outcome").waitFor();
    await fits("record", { fullPage: false });
    await phone.page.getByRole("dialog").getByRole("button", { name: "Close" }).click();
    await phone.page.goto(`${server.base}/#/agent/researcher`);
    await phone.page.locator('[data-score="combined"]').waitFor();
    await phone.page.locator("tr[data-aar-id]").first().waitFor();
    await fits("agent");
    await phone.page.goto(`${server.base}/#/tokens/${seeded.root.jti}`);
    await phone.page.locator(".token-status").waitFor();
    await fits("tokens");
    assert.deepEqual(phone.errors, []);
    await phone.context.close();
  });
});
