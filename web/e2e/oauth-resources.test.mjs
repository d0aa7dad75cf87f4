// The dashboard's OAuth resources page (#/resources): an owner lists,
// registers and deletes the organisation's resources and the thumbprints
// of their gates' relay keys, by keyboard; values show as text; axe-clean;
// fits a phone. A developer key, which may not `manage_clients`, is neither
// linked to it nor shown it.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";

import { axeViolations, freePort, launchBrowser, openPage, screenshot, signIn, startServer } from "./harness.mjs";

// Characters HTML gives meaning to that a resource URI may hold (RFC 3986 keeps `<`, `>` and `"` out).
const ODD_RESOURCE = "https://mcp.example.com/a'onmouseover=alert(1)&amp;x=%3Cscript%3E";
/** Thumbprints have the form of a SHA-256 digest, base64url: two such. */
const JKT_A = createHash("sha256").update("gate a").digest("base64url");
const JKT_B = createHash("sha256").update("gate b").digest("base64url");

/** Horizontal overflow of the page, in CSS pixels. */
const overflow = (page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

describe("the dashboard's OAuth resources page", () => {
  let server;
  let browser;
  let owner;
  let developer;
  let odd;

  before(async () => {
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    server = await startServer({
      listen: `127.0.0.1:${port}`,
      config: `public_url = "${issuer}"\nissuer = "${issuer}"\n\n[oauth]\nenabled = true\n`,
    });
    owner = (await server.api.call("POST", "/v1/keys", { role: "owner", email: "owner@example.com" })).api_key;
    developer = (await server.api.call("POST", "/v1/keys", { role: "developer", email: "dev@example.com" })).api_key;
    odd = await server.api.call("POST", "/v1/oauth/resources", { resource: ODD_RESOURCE, relay_jkts: [JKT_A] });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("an owner lists, registers and deletes resources by keyboard; values as text; axe-clean; fits a phone", async () => {
    const { page, errors } = await openPage(browser);
    await page.addInitScript(() => {
      window.alert = () => {
        window.__xss = 1;
      };
    });
    await signIn(page, server.base, owner);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Resources" }).click();
    await page.getByRole("heading", { name: "OAuth resources", level: 1 }).waitFor();
    const oddRow = page.locator(`tr[data-resource-id="${odd.resource_id}"]`);
    await oddRow.waitFor();
    assert.equal(await oddRow.locator(".resource-uri").textContent(), ODD_RESOURCE);
    assert.deepEqual(await oddRow.locator("li code").allTextContents(), [JKT_A]);
    await oddRow.locator(".resource-uri").hover();
    assert.equal(await page.evaluate(() => window.__xss), undefined);
    assert.equal(await page.locator("main script").count(), 0);
    assert.deepEqual(await axeViolations(page), []);

    // Register by keyboard: type into the fields, Tab between them, Enter submits.
    await page.getByLabel("Resource", { exact: true }).focus();
    await page.keyboard.type("https://crm.example/mcp");
    await page.keyboard.press("Tab");
    await page.keyboard.type(`${JKT_A}\n${JKT_B}\n`);
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    const added = page.locator("tr[data-resource-id]", { hasText: "https://crm.example/mcp" });
    await added.waitFor();
    const resourceId = await added.getAttribute("data-resource-id");
    assert.match(resourceId, /^ors_/);
    assert.deepEqual(await added.locator("li code").allTextContents(), [JKT_A, JKT_B]);
    const listed = (await server.api.call("GET", "/v1/oauth/resources")).resources;
    assert.deepEqual(
      listed.map((r) => [r.resource, r.relay_jkts]),
      [
        ["https://crm.example/mcp", [JKT_A, JKT_B]],
        [ODD_RESOURCE, [JKT_A]],
      ],
    );
    await screenshot(page, "oauth-resources");

    // The same resource again is refused (409 resource_exists), shown, and nothing is added.
    await page.getByLabel("Resource", { exact: true }).fill("https://crm.example:443/mcp");
    await page.getByLabel("Relay key thumbprints").fill(JKT_B);
    await page.getByRole("button", { name: "Register resource" }).click();
    await page.locator(".client-form .problem").waitFor();
    assert.match(await page.locator(".client-form .problem").textContent(), /resource_exists|already/i);
    assert.equal(await page.locator("tr[data-resource-id]").count(), 2);

    // Delete by keyboard, through the confirmation dialog.
    await added.getByRole("button", { name: "Delete the resource https://crm.example/mcp" }).focus();
    await page.keyboard.press("Enter");
    const dialog = page.getByRole("dialog", { name: "Delete this resource?" });
    await dialog.waitFor();
    await dialog.getByRole("button", { name: "Delete resource" }).focus();
    await page.keyboard.press("Enter");
    await page.locator(`tr[data-resource-id="${resourceId}"]`).waitFor({ state: "detached" });
    assert.deepEqual(
      (await server.api.call("GET", "/v1/oauth/resources")).resources.map((r) => r.resource_id),
      [odd.resource_id],
    );

    const phone = await openPage(browser, { width: 375, height: 812 });
    await signIn(phone.page, server.base, owner);
    await phone.page.goto(`${server.base}/#/resources`);
    await phone.page.locator("tr[data-resource-id]").first().waitFor();
    assert.ok((await overflow(phone.page)) <= 0, "no sideways scroll at phone width");
    await screenshot(phone.page, "oauth-resources-phone");
    // The one failed request is the refused registration (409), which Chromium logs.
    const unexpected = errors.filter((error) => !/status of 409/.test(error));
    assert.equal(errors.length - unexpected.length, 1);
    assert.deepEqual([...unexpected, ...phone.errors], []);
  });

  test("a developer, who may not manage_clients, has no link to the page and is not shown it", async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, server.base, developer);
    await page.getByRole("navigation", { name: "Main" }).waitFor();
    assert.equal(await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Resources" }).isVisible(), false);
    await page.goto(`${server.base}/#/resources`);
    await page.getByRole("heading", { name: "Not allowed", level: 1 }).waitFor();
    assert.match(await page.locator("main").textContent(), /manage_clients/);
    assert.deepEqual(errors, []);
  });
});
