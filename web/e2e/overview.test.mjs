// The overview in Chromium against a real server (it needs `GET
// /v1/vat/overview`): its charts, each with a table twin, for each window;
// the numbers follow a record written meanwhile. Desktop and phone
// screenshots, no sideways scroll.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { launchBrowser, openPage, screenshot, seedChain, signIn, startServer } from "./harness.mjs";

describe("overview", () => {
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

  test("charts with table twins for a chosen window, following new records", async () => {
    const { page, errors } = await openPage(browser, { width: 1280, height: 800 });
    await signIn(page, server.base, server.adminKey);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Overview" }).click();
    await page.locator("figure.chart canvas").first().waitFor();
    assert.equal(await page.locator("figure.chart").count(), 4);
    for (const figure of await page.locator("figure.chart").all()) {
      assert.equal(await figure.locator("details.chart-table table").count(), 1, "each chart has its table twin");
      assert.match(await figure.getByRole("img").getAttribute("aria-label"), /\./);
    }
    await page.locator('tr[data-jth]').first().waitFor();
    await screenshot(page, "overview");

    const totals = () => page.locator("dl.totals").innerText();
    const before = await totals();
    await server.api.act(seeded.summarizer.jti, "read", "docs:overview", "error");
    await page.waitForFunction((text) => document.querySelector("dl.totals")?.innerText !== text, before);

    await page.getByRole("form", { name: "Choose the window" }).getByLabel("Window").selectOption("7d");
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForFunction(() => location.hash.includes("window=7d"));
    await page.locator("figure.chart canvas").first().waitFor();
    assert.deepEqual(errors, []);
    await page.context().close();

    const phone = await openPage(browser, { width: 390, height: 844 });
    await signIn(phone.page, server.base, server.adminKey);
    await phone.page.goto(`${server.base}/#/overview`);
    await phone.page.locator("figure.chart canvas").first().waitFor();
    const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the overview is ${overflow}px wider than the screen`);
    await screenshot(phone.page, "phone-overview");
    await phone.context.close();
  });
});
