// Approvals in Chromium against a real server. An agent (mandate-sdk in
// Node, holding only its token) asks to pay and waits for a decision; a
// reviewer signed in to the dashboard sees the request appear in the
// pending list without a reload, reviews it on its page (what the agent
// asks, the chain root first, the human by label with its reference and
// assurance, when it expires) and approves it with a note; the agent's
// waiting authorize resolves authorized, and the record shows pending,
// then completed. A second request is denied from the record awaiting
// approval; an auditor sees an approval read-only, and its page follows a
// decision made elsewhere.

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { after, before, describe, test } from "node:test";
import { launchBrowser, openPage, screenshot, signIn, startServer } from "./harness.mjs";

const { MandateClient } = createRequire(import.meta.url)("mandate-sdk");

/** Leaving a page closes its event stream, which Chromium reports as an aborted request. */
describe("approvals", () => {
  let server;
  let browser;
  let page;
  let errors;
  let reviewerKey;
  let payer;
  let agent;

  /** The pending approval of `resource`, once the server lists it. */
  async function pendingOf(resource) {
    for (let attempt = 0; attempt < 200; attempt += 1) {
      const { approvals } = await server.api.call("GET", "/v1/vat/approvals?status=pending");
      const found = approvals.find((approval) => approval.resource === resource);
      if (found) return found;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`no pending approval of ${resource}`);
  }

  /** The agent asks to pay for `resource` and waits up to a minute for the decision. */
  function ask(resource, spend) {
    return agent.authorize(
      { action: "pay", resource, spend_usd: spend },
      { token: payer.compact_jwt, waitForApproval: { timeoutSeconds: 60 } },
    );
  }

  before(async () => {
    server = await startServer();
    reviewerKey = await server.api.createKey({ role: "reviewer", email: "reviewer@example.com" });
    const root = await server.api.issue({
      agent_id: "treasurer",
      resources: ["bank:*"],
      actions: ["pay", "delegate"],
      constraints: { max_spend_usd: 500, require_approval: { actions: ["pay"] } },
    });
    // The sub-agent inherits the requirement.
    payer = await server.api.delegate(root, { agent_id: "payer", resources: ["bank:*"], actions: ["pay"] });
    agent = new MandateClient({ baseUrl: server.base });
    browser = await launchBrowser();
    ({ page, errors } = await openPage(browser));
    await signIn(page, server.base, reviewerKey.api_key);
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("a reviewer approves from the approval page; the waiting agent is authorized; the record goes pending, then completed", async () => {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Approvals", exact: true }).click();
    await page.getByRole("heading", { name: "Approvals", level: 1 }).waitFor();
    await page.getByRole("status").filter({ hasText: "Updates live." }).waitFor();
    await page.getByText("Nothing waits for a decision.").waitFor();

    const asking = ask("bank:rent", 120);
    // The request appears without a reload.
    const row = page.locator('tr[data-status="pending"]', { hasText: "bank:rent" });
    await row.waitFor();
    assert.match(await row.innerText(), /payer[\s\S]*pay[\s\S]*bank:rent[\s\S]*\$120\.00/);
    await screenshot(page, "approvals");

    const listed = await pendingOf("bank:rent");
    await row.getByRole("link", { name: `Review pay bank:rent (${listed.approval_id})` }).click();
    await page.getByRole("heading", { name: /^Approval/, level: 1 }).waitFor();
    const approval = page.locator('.approval[data-status="pending"]');
    await approval.waitFor();
    const asks = await page.getByRole("region", { name: "What the agent asks" }).innerText();
    assert.match(asks, /Action\s+pay/);
    assert.match(asks, /Resource\s+bank:rent/);
    assert.match(asks, /Spend\s+\$120\.00/);
    assert.match(asks, /Agent\s+payer \(depth 1\)/);
    assert.match(asks, new RegExp(`Record\\s+${listed.aar_id}\\s+awaiting_approval`));
    const whom = page.getByRole("region", { name: "For whom" });
    // The human by the label the organisation knows (the e-mail the root token was issued for), and the reference.
    assert.match(await whom.innerText(), /Human\s+reviewer@example\.com/);
    assert.match(await whom.innerText(), new RegExp(`Reference\\s+${listed.human_ref}`));
    assert.match(await whom.innerText(), /Assurance\s+L1/);
    const chain = whom.getByRole("list", { name: "Delegation chain, root first" }).getByRole("listitem");
    assert.deepEqual(
      await chain.evaluateAll((items) => items.map((item) => [item.dataset.agent, item.dataset.depth])),
      [
        ["treasurer", "0"],
        ["payer", "1"],
      ],
    );
    const expires = await page.getByRole("region", { name: "Decision" }).locator("time").nth(1).getAttribute("datetime");
    assert.equal(expires, listed.expires_at);
    await screenshot(page, "approval");

    await page.getByLabel("Note (optional)").fill("Rent is due.");
    await page.getByRole("button", { name: "Approve" }).click();
    await page.locator('.approval[data-status="approved"]').waitFor();
    const decided = await page.getByRole("region", { name: "Decision" }).innerText();
    assert.match(decided, /Rent is due\./);
    assert.match(decided, new RegExp(`Decided by\\s+${reviewerKey.key_id}`));
    assert.equal(await page.getByRole("button", { name: "Approve" }).count(), 0, "a decision is final");
    await screenshot(page, "approval-approved");

    // The agent's wait ends: authorized, with the record to complete.
    const answer = await asking;
    assert.deepEqual([answer.authorized, answer.aar_id, answer.approval.status], [true, listed.aar_id, "approved"]);

    // The record, pending, from the approval's page; then completed by the agent.
    await page.getByRole("link", { name: listed.aar_id }).click();
    const recordRow = page.locator(`tr[data-aar-id="${listed.aar_id}"]`);
    await recordRow.waitFor();
    assert.equal(await recordRow.getAttribute("data-outcome"), "pending");
    const dialog = page.getByRole("dialog");
    await dialog.getByText("pay · bank:rent").waitFor();
    await dialog.getByRole("button", { name: "Close" }).click();
    await agent.complete(listed.aar_id, { result: "success", spend_usd: 118.5 }, { token: payer.compact_jwt });
    await page.reload();
    await page.waitForFunction(
      (id) => document.querySelector(`tr[data-aar-id="${id}"]`)?.getAttribute("data-outcome") === "success",
      listed.aar_id,
    );
    await page.getByRole("dialog").getByRole("button", { name: "Close" }).click();
    await screenshot(page, "approval-record-completed");

    // Decided, it has left the pending list.
    await page.goto(`${server.base}/#/approvals`);
    await page.getByText("Nothing waits for a decision.").waitFor();
    assert.deepEqual(errors.splice(0), []);
  });

  test("a reviewer denies from the record awaiting approval; the waiting agent is refused", async () => {
    const asking = ask("bank:yacht", 80);
    const listed = await pendingOf("bank:yacht");
    await page.goto(`${server.base}/#/workflow/${listed.provenance_ref}`);
    const recordRow = page.locator(`tr[data-aar-id="${listed.aar_id}"]`);
    await recordRow.waitFor();
    assert.equal(await recordRow.getAttribute("data-outcome"), "awaiting_approval");
    await recordRow.getByRole("button", { name: /^Details/ }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByRole("link", { name: listed.approval_id }).click();
    await page.locator('.approval[data-status="pending"]').waitFor();
    await page.getByLabel("Note (optional)").fill("Not this quarter.");
    await page.getByRole("button", { name: "Deny" }).click();
    await page.locator('.approval[data-status="denied"][data-record-status="denied"]').waitFor();

    const answer = await asking;
    assert.deepEqual([answer.authorized, answer.reason, answer.approval.status], [false, "approval_denied", "denied"]);
    await page.goto(`${server.base}/#/workflow/${listed.provenance_ref}?record=${listed.aar_id}`);
    await page.getByRole("dialog").getByText("approval_denied").waitFor();
    assert.equal(await recordRow.getAttribute("data-outcome"), "denied");
    assert.deepEqual(errors.splice(0), []);
  });

  test("an auditor reads an approval without deciding it; its page follows a decision made elsewhere", async () => {
    const auditorKey = await server.api.createKey({ role: "auditor", email: "auditor@example.com" });
    const asking = ask("bank:fees", 5);
    const listed = await pendingOf("bank:fees");
    const auditor = await openPage(browser);
    await signIn(auditor.page, server.base, auditorKey.api_key);
    await auditor.page.goto(`${server.base}/#/approval/${listed.approval_id}`);
    await auditor.page.locator('.approval[data-status="pending"]').waitFor();
    await auditor.page.getByRole("status").filter({ hasText: "Updates live." }).waitFor();
    assert.match(await auditor.page.locator(".read-only").innerText(), /lacks the decide permission/);
    assert.equal(await auditor.page.getByRole("button", { name: "Approve" }).count(), 0);

    await server.api.call("POST", `/v1/vat/approvals/${listed.approval_id}/decision`, { decision: "approve" }, { key: reviewerKey.api_key });
    await auditor.page.locator('.approval[data-status="approved"]').waitFor();
    assert.equal((await asking).authorized, true);

    // The page at phone width.
    const phone = await openPage(browser, { width: 375, height: 812 });
    await signIn(phone.page, server.base, auditorKey.api_key);
    await phone.page.goto(`${server.base}/#/approval/${listed.approval_id}`);
    await phone.page.locator(".approval").waitFor();
    const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the approval page is ${overflow}px wider than the screen`);
    await screenshot(phone.page, "phone-approval");
    assert.deepEqual(auditor.errors, []);
    assert.deepEqual(phone.errors, []);
    await Promise.all([auditor.context.close(), phone.context.close()]);
  });
});
