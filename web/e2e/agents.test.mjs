// The agents list and an agent's history in Chromium against a real server
// (it needs `GET /v1/vat/agents` and `…/history`): every seeded agent with
// its scores and a sparkline, searched and sorted; a rating made meanwhile
// moves the list without a reload; the agent page's charts each have a
// table twin. Desktop and phone screenshots, no sideways scroll.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { launchBrowser, openPage, screenshot, seedChain, signIn, startServer } from "./harness.mjs";

describe("agents", () => {
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

  test("lists, searches and sorts the agents; a rating moves the list live", async () => {
    const { page, errors } = await openPage(browser, { width: 1280, height: 800 });
    await signIn(page, server.base, server.adminKey);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Agents" }).click();
    for (const agent of ["orchestrator", "researcher", "summarizer"]) {
      await page.locator(`tr[data-agent="${agent}"]`).waitFor();
    }
    assert.match(await page.locator('tr[data-agent="summarizer"] svg.sparkline').getAttribute("aria-label"), /1 denied/);
    await screenshot(page, "agents");

    await page.getByRole("link", { name: /^Agent, sort/ }).click();
    await page.waitForFunction(() => document.querySelector("th[aria-sort]")?.getAttribute("aria-sort") !== null);
    await page.getByLabel("Agent name starts with").fill("summ");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForFunction(() => document.querySelectorAll("tr[data-agent]").length === 1);

    const row = page.locator('tr[data-agent="summarizer"]');
    const before = await row.locator("strong").innerText();
    await server.api.rate(seeded.records.report, "rejected");
    await page.waitForFunction(
      (text) => document.querySelector('tr[data-agent="summarizer"] strong')?.textContent !== text,
      before,
    );
    assert.deepEqual(errors, []);
    await page.context().close();
  });

  test("the agent page shows its history with table twins; the pages fit a phone", async () => {
    const { page, errors } = await openPage(browser, { width: 1280, height: 800 });
    await signIn(page, server.base, server.adminKey);
    await page.goto(`${server.base}/#/agent/researcher`);
    await page.locator("figure.chart canvas").first().waitFor();
    assert.equal(await page.locator("figure.chart").count(), 2);
    await page.getByText("Outcomes per day: the numbers").click();
    assert.ok((await page.locator("details.chart-table[open] tbody tr").count()) >= 1);
    await screenshot(page, "agent-history");
    assert.deepEqual(errors, []);
    await page.context().close();

    const phone = await openPage(browser, { width: 390, height: 844 });
    await signIn(phone.page, server.base, server.adminKey);
    for (const [path, name, ready] of [
      ["#/agents", "phone-agents", "tr[data-agent]"],
      ["#/agent/researcher", "phone-agent-history", "figure.chart canvas"],
    ]) {
      await phone.page.goto(`${server.base}/${path}`);
      await phone.page.locator(ready).first().waitFor();
      const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `${path} is ${overflow}px wider than the screen`);
      await screenshot(phone.page, name);
    }
    await phone.context.close();
  });
});
