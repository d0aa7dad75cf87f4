// An agent's trust on its page, in Chromium against a real server (it needs
// the /v1/trust endpoints): the score and its parts beside the reputation;
// who vouches for it (a human by e-mail, an agent by id with a link) and
// whom it vouches for; the neighbourhood drawn as an SVG; a reviewer
// vouches from the page (weight, reason, expiry) and the score rises once
// the server has recomputed it, then withdraws; an auditor sees the same
// read-only. Desktop and phone screenshots, no sideways scroll.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { launchBrowser, openPage, screenshot, signIn, startServer } from "./harness.mjs";

describe("trust", () => {
  let server;
  let browser;
  let reviewer;
  let auditor;
  let root;

  before(async () => {
    server = await startServer();
    const api = server.api;
    root = await api.issue({
      agent_id: "orchestrator",
      resources: ["crm:*"],
      actions: ["read", "write", "delegate"],
    });
    const researcher = await api.delegate(root, { agent_id: "researcher", resources: ["crm:*"], actions: ["read"] });
    await api.act(root.jti, "write", "crm:accounts", "success");
    await api.act(researcher.jti, "read", "crm:contacts", "success");
    // The orchestrator vouches for the agent it delegated to, with its own token.
    await api.call("POST", "/v1/trust/vouches", { agent_id: "researcher", weight: 0.6, reason: "my delegate" }, { key: root.compact_jwt });
    reviewer = await api.createKey({ role: "reviewer", email: "reviewer@example.com" });
    auditor = await api.createKey({ role: "auditor", email: "auditor@example.com" });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  /** The trust meter's value as the page shows it. */
  const shownTrust = (page) =>
    page.locator('[data-trust="trust"] meter').evaluate((meter) => Number(meter.getAttribute("value")));

  test("a reviewer sees the trust, its parts and the vouches, vouches from the page and withdraws", async () => {
    const { page, errors } = await openPage(browser, { width: 1280, height: 900 });
    await signIn(page, server.base, reviewer.api_key);
    await page.goto(`${server.base}/#/agent/researcher`);
    const section = page.getByRole("region", { name: "Trust" });
    await section.locator('[data-trust="trust"]').waitFor();
    for (const part of ["trust", "reputation", "graph", "decay", "ceiling"]) {
      assert.equal(await section.locator(`[data-trust="${part}"] meter`).count(), 1, part);
    }
    // The agent's vouch: by id, linking to the voucher's page.
    const byAgent = section.locator('tr[data-voucher-kind="agent"]');
    await byAgent.waitFor();
    assert.equal(await byAgent.getByRole("link", { name: "orchestrator" }).count(), 1);
    assert.match(await byAgent.innerText(), /0\.600/);
    assert.match(await byAgent.innerText(), /my delegate/);
    // A reviewer withdraws its own vouches only: none here.
    assert.equal(await byAgent.getByRole("button", { name: "Withdraw" }).count(), 0);
    // The neighbourhood: the agent and its voucher, one line between them.
    const drawing = section.locator("svg.trust-graph");
    assert.equal(await drawing.locator("line.trust-edge").count(), 1);
    assert.equal(await drawing.locator('a[data-agent="orchestrator"]').count(), 1);
    const before = await shownTrust(page);
    assert.ok(before > 0 && before <= 1, `trust ${before}`);

    // Vouch from the page.
    const form = section.getByRole("form", { name: "Vouch for researcher" });
    await form.getByLabel("Weight (0–1]").fill("0.9");
    await form.getByLabel("Reason").fill("checked by hand");
    await form.getByLabel("Expires (optional)").fill("2099-01-01T12:00");
    await form.getByRole("button", { name: "Vouch" }).click();
    const byHuman = section.locator('tr[data-voucher-kind="human"]');
    await byHuman.waitFor();
    const row = await byHuman.innerText();
    assert.match(row, /reviewer@example\.com \(you\)/);
    assert.match(row, /0\.900/);
    assert.match(row, /checked by hand/);
    assert.match(row, /2099-01-01/);
    assert.equal(await drawing.locator("line.trust-edge").count(), 2);
    // The score the page shows is the server's after the vouch: the page waits for the recomputation.
    await page.waitForFunction((was) => Number(document.querySelector('[data-trust="trust"] meter')?.getAttribute("value")) > was, before);
    const served = await server.api.call("GET", "/v1/trust/agents/researcher", undefined, { key: reviewer.api_key });
    assert.ok(served.trust > before, `the server's trust ${served.trust} after the vouch, ${before} before`);
    assert.equal(served.vouches.length, 2);
    await screenshot(page, "agent-trust");

    // A second vouch by the same key is refused while the first is active: the problem shows in the form.
    await form.getByLabel("Weight (0–1]").fill("0.5");
    await form.getByRole("button", { name: "Vouch" }).click();
    await section.locator(".problem").waitFor();
    assert.match(await section.locator(".problem-code").innerText(), /409 · vouch_exists/);

    // Withdraw it.
    await section.locator('tr[data-voucher-kind="human"]').getByRole("button", { name: "Withdraw" }).click();
    const dialog = page.getByRole("dialog", { name: "Withdraw this vouch?" });
    await dialog.waitFor();
    await dialog.getByRole("button", { name: "Withdraw" }).click();
    await page.waitForFunction(() => document.querySelectorAll('tr[data-voucher-kind="human"]').length === 0);
    const withdrawn = await server.api.call("GET", "/v1/trust/agents/researcher", undefined, { key: reviewer.api_key });
    assert.deepEqual(
      withdrawn.vouches.map((vouch) => vouch.voucher.kind),
      ["agent"],
    );
    assert.deepEqual(errors.filter((error) => !/status of 409/.test(error)), []);
    await page.context().close();
  });

  test("the voucher's page lists whom it vouches for; an auditor sees trust read-only; the page fits a phone", async () => {
    const { page, errors } = await openPage(browser, { width: 1280, height: 900 });
    await signIn(page, server.base, auditor.api_key);
    await page.goto(`${server.base}/#/agent/orchestrator`);
    const section = page.getByRole("region", { name: "Trust" });
    await section.locator('[data-trust="trust"]').waitFor();
    const vouched = section.getByRole("table", { name: "Vouches for" });
    await vouched.waitFor();
    assert.equal(await vouched.getByRole("link", { name: "researcher" }).count(), 1);
    assert.equal(await section.locator("svg.trust-graph line.trust-edge").count(), 1);
    // Read-only: no form, no withdrawal.
    assert.equal(await section.getByRole("form").count(), 0);
    assert.equal(await section.getByRole("button", { name: "Withdraw" }).count(), 0);
    assert.match(await section.locator(".read-only").innerText(), /may not vouch/);
    // The drawing's agents lead to their pages.
    await section.locator('svg.trust-graph a[data-agent="researcher"]').click();
    await page.getByRole("heading", { name: "Agent researcher", level: 1 }).waitFor();
    await page.getByRole("region", { name: "Trust" }).locator('[data-trust="trust"]').waitFor();
    assert.deepEqual(errors, []);
    await page.context().close();

    const phone = await openPage(browser, { width: 390, height: 844 });
    await signIn(phone.page, server.base, reviewer.api_key);
    await phone.page.goto(`${server.base}/#/agent/researcher`);
    await phone.page.locator("svg.trust-graph").waitFor();
    const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the agent page is ${overflow}px wider than the screen`);
    await screenshot(phone.page, "phone-agent-trust");
    assert.deepEqual(phone.errors, []);
    await phone.context.close();
  });
});
