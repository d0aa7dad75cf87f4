// Organisations and roles in Chromium against a real server: the header says
// which organisation and role a key is; an owner makes a key on the Keys
// page (shown once) and revokes one after confirming; an auditor reads a
// record without any way to rate it; a reviewer rates; another
// organisation's owner sees only its own keys and objects.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ApiProblem, launchBrowser, openPage, screenshot, seedChain, signIn, startServer } from "./harness.mjs";

/** The header's account: organisation, role and admin flag. */
async function identity(page) {
  const box = page.locator("#identity");
  await box.waitFor();
  return {
    org: await box.getAttribute("data-org"),
    role: await box.getAttribute("data-role"),
    admin: await box.getAttribute("data-admin"),
    text: await box.innerText(),
  };
}

/** Opens a record of the seeded workflow in its dialog. */
async function openRecord(page, base, seeded, aarId) {
  await page.goto(`${base}/#/workflow/${seeded.root.provenance_ref}`);
  await page.locator(`tr[data-aar-id="${aarId}"] button.details`).click();
  const dialog = page.getByRole("dialog");
  await dialog.locator(".dialog-body dl.detail").waitFor();
  return dialog;
}

/** The errors a page collected, less the refused requests Chromium reports itself. */
function unexpected(errors, ...statuses) {
  return errors
    .splice(0)
    .filter((error) => !statuses.some((status) => error.includes(`status of ${status}`)));
}

describe("organisations and roles", () => {
  let server;
  let browser;
  let seeded;
  let owner;
  let auditorKey;

  before(async () => {
    server = await startServer();
    seeded = await seedChain(server.api);
    browser = await launchBrowser();
    owner = await openPage(browser);
    await owner.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.base });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("the admin key signs in as the owner of default, and sees the Keys page", async () => {
    const { page, errors } = owner;
    await signIn(page, server.base, server.adminKey);
    const who = await identity(page);
    assert.deepEqual([who.org, who.role, who.admin], ["default", "owner", "true"]);
    assert.match(who.text, /default/);
    assert.match(who.text, /owner/);
    assert.match(who.text, /admin/);
    const keysLink = page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Keys" });
    assert.ok(await keysLink.isVisible());
    await keysLink.click();
    await page.getByRole("heading", { name: "Keys", level: 1 }).waitFor();
    assert.equal(page.url(), `${server.base}/#/keys`);
    assert.equal(await keysLink.getAttribute("aria-current"), "page");
    const admin = page.locator("tr[data-key-id]").filter({ hasText: "this key" });
    await admin.waitFor();
    assert.equal(await admin.getAttribute("data-role"), "owner");
    assert.match(await admin.innerText(), /admin/);
    assert.equal(await admin.getByRole("button").count(), 0, "the admin key is revoked by its operator only");
    assert.deepEqual(errors, []);
  });

  test("an owner creates an auditor key, shown once with a copy button", async () => {
    const { page, errors } = owner;
    const form = page.getByRole("form", { name: "Create a key" });
    await form.getByLabel("Role").selectOption("auditor");
    await form.getByLabel("E-mail", { exact: true }).fill("auditor@example.com");
    await form.getByRole("button", { name: "Create key" }).click();

    const panel = page.locator("section.new-key");
    await panel.waitFor();
    assert.ok(await panel.evaluate((element) => element === document.activeElement), "focus moves to the new key");
    assert.match(await panel.innerText(), /shown only this once/);
    auditorKey = await panel.locator("#new-key-value").inputValue();
    assert.match(auditorKey, /^mk_/);
    const keyId = await panel.getAttribute("data-key-id");
    const row = page.locator(`tr[data-key-id="${keyId}"]`);
    await row.waitFor();
    assert.equal(await row.getAttribute("data-role"), "auditor");
    assert.equal(await row.getAttribute("data-status"), "active");
    assert.match(await row.innerText(), /auditor@example\.com/);
    assert.ok(!(await row.innerText()).includes(auditorKey), "the list never shows a key");

    await panel.getByRole("button", { name: "Copy" }).click();
    await panel.getByText("Copied to the clipboard.").waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), auditorKey);
    await screenshot(page, "keys-page");

    const me = await server.api.me(auditorKey);
    assert.deepEqual([me.role, me.email, me.admin, me.org.name], ["auditor", "auditor@example.com", false, "default"]);

    // Once dismissed, the key is gone from the page for good.
    await panel.getByRole("button", { name: "Done: I have stored it" }).click();
    assert.equal(await page.locator("section.new-key").count(), 0);
    assert.ok(!(await page.content()).includes(auditorKey));
    assert.deepEqual(errors, []);
  });

  test("a developer key needs an e-mail before it is sent", async () => {
    const { page, errors } = owner;
    const form = page.getByRole("form", { name: "Create a key" });
    await form.getByLabel("Role").selectOption("developer");
    const email = form.getByLabel("E-mail", { exact: true });
    assert.equal(await email.evaluate((input) => input.required), true);
    const before = await page.locator("tr[data-key-id]").count();
    await form.getByRole("button", { name: "Create key" }).click();
    assert.equal(await email.evaluate((input) => input.validity.valueMissing), true);
    assert.equal(await page.locator("section.new-key").count(), 0);
    assert.equal(await page.locator("tr[data-key-id]").count(), before);
    await form.getByLabel("Role").selectOption("auditor");
    assert.equal(await email.evaluate((input) => input.required), false);
    assert.deepEqual(errors, []);
  });

  test("an owner revokes a key after confirming; cancelling keeps it", async () => {
    const { page, errors } = owner;
    const developer = await server.api.createKey({ role: "developer", email: "dev@example.com" });
    await page.reload();
    const row = page.locator(`tr[data-key-id="${developer.key_id}"]`);
    await row.waitFor();
    assert.equal(await row.getAttribute("data-status"), "active");

    await row.getByRole("button", { name: /^Revoke the developer key/ }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByRole("heading", { name: "Revoke this key?" }).waitFor();
    assert.match(await dialog.innerText(), /dev@example\.com/);
    assert.match(await dialog.innerText(), /cannot be undone/);
    await dialog.getByRole("button", { name: "Cancel" }).click();
    assert.equal(await page.getByRole("dialog").count(), 0);
    assert.equal(await row.getAttribute("data-status"), "active");
    assert.equal((await server.api.me(developer.api_key)).role, "developer");

    await row.getByRole("button", { name: /^Revoke the developer key/ }).click();
    await screenshot(page, "key-revoke-confirm", { fullPage: false });
    await page.getByRole("dialog").getByRole("button", { name: "Revoke key" }).click();
    await page.locator(`tr[data-key-id="${developer.key_id}"][data-status="revoked"]`).waitFor();
    assert.equal(await page.locator(`tr[data-key-id="${developer.key_id}"]`).getByRole("button").count(), 0);
    await page.getByText(`Key ${developer.key_id} revoked.`).waitFor();
    const refused = await server.api.me(developer.api_key).catch((error) => error);
    assert.ok(refused instanceof ApiProblem);
    assert.equal(refused.status, 401);
    assert.deepEqual(errors, []);
  });

  test("the Keys page fits a phone", async () => {
    const phone = await openPage(browser, { width: 375, height: 812 });
    await signIn(phone.page, server.base, server.adminKey);
    await phone.page.goto(`${server.base}/#/keys`);
    await phone.page.locator("tr[data-key-id]").first().waitFor();
    const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the page is ${overflow}px wider than the screen`);
    await screenshot(phone.page, "phone-keys");
    assert.deepEqual(phone.errors, []);
    await phone.context.close();
  });

  test("an auditor sees a record read-only, with no rating buttons and no revoke", async () => {
    assert.ok(auditorKey, "the owner made the auditor key");
    const { page, context, errors } = await openPage(browser);
    await signIn(page, server.base, auditorKey);
    const who = await identity(page);
    assert.deepEqual([who.org, who.role, who.admin], ["default", "auditor", "false"]);
    assert.doesNotMatch(who.text, /admin/);
    assert.ok(!(await page.getByRole("link", { name: "Keys" }).isVisible()), "no Keys page in the navigation");

    const dialog = await openRecord(page, server.base, seeded, seeded.records.contacts);
    const note = dialog.locator(".read-only");
    await note.waitFor();
    assert.match(await note.innerText(), /Read-only/);
    for (const name of ["Approve", "Flag", "Reject"]) {
      assert.equal(await dialog.getByRole("button", { name }).count(), 0, name);
    }
    assert.equal(await dialog.getByLabel("Note (optional)").count(), 0);
    await screenshot(page, "record-read-only", { fullPage: false });
    await dialog.getByRole("button", { name: "Close" }).click();
    // The server agrees: the role does not allow rating.
    const refused = await server.api.rate(seeded.records.contacts, "approved", { key: auditorKey }).catch((error) => error);
    assert.deepEqual([refused.status, refused.body?.code], [403, "role_forbidden"]);

    await page.goto(`${server.base}/#/tokens/${seeded.root.jti}`);
    await page.locator('.token-status[data-status="active"]').waitFor();
    assert.equal(await page.getByRole("button", { name: "Revoke…" }).count(), 0);
    assert.match(await page.locator(".token-status .read-only").innerText(), /may not revoke/);

    await page.goto(`${server.base}/#/keys`);
    await page.getByRole("heading", { name: "Not allowed", level: 1 }).waitFor();
    assert.match(await page.locator("main").innerText(), /manage_keys/);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("a reviewer rates a record and may revoke, but manages no keys", async () => {
    const reviewer = await server.api.createKey({ role: "reviewer", email: "reviewer@example.com" });
    const { page, context, errors } = await openPage(browser);
    await signIn(page, server.base, reviewer.api_key);
    const who = await identity(page);
    assert.deepEqual([who.org, who.role, who.admin], ["default", "reviewer", "false"]);
    assert.ok(!(await page.getByRole("link", { name: "Keys" }).isVisible()));

    const dialog = await openRecord(page, server.base, seeded, seeded.records.report);
    await dialog.getByText("Rate this outcome").waitFor();
    assert.equal(await dialog.locator(".read-only").count(), 0);
    await dialog.getByRole("button", { name: "Flag" }).click();
    await dialog.locator('.rating-given[data-rating="flagged"]').waitFor();
    await dialog.getByRole("button", { name: "Close" }).click();
    const record = await server.api.call("GET", `/v1/vat/aar/${seeded.records.report}`);
    assert.equal(record.rating, "flagged");

    await page.goto(`${server.base}/#/tokens/${seeded.root.jti}`);
    await page.getByRole("button", { name: "Revoke…" }).waitFor();
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("another organisation's owner sees only its own keys and objects, and keeps its last owner", async () => {
    const acme = await server.api.createOrg({ name: "acme", owner_email: "ops@acme.test" });
    const { page, context, errors } = await openPage(browser);
    await signIn(page, server.base, acme.owner_key.api_key);
    const who = await identity(page);
    assert.deepEqual([who.org, who.role, who.admin], ["acme", "owner", "false"]);
    await page.goto(`${server.base}/#/workflows`);
    await page.getByText("No workflow matches.").waitFor();

    await page.getByRole("link", { name: "Keys" }).click();
    const rows = page.locator("tr[data-key-id]");
    await rows.first().waitFor();
    assert.equal(await rows.count(), 1, "only acme's own key");
    assert.equal(await rows.first().getAttribute("data-key-id"), acme.owner_key.key_id);
    await rows.first().getByRole("button", { name: /^Revoke the owner key/ }).click();
    const dialog = page.getByRole("dialog");
    assert.match(await dialog.innerText(), /the key you are signed in with/);
    await dialog.getByRole("button", { name: "Revoke key" }).click();
    const problem = dialog.getByRole("alert");
    await problem.waitFor();
    assert.match(await problem.innerText(), /409 · last_owner/);
    await dialog.getByRole("button", { name: "Cancel" }).click();
    assert.equal(await rows.first().getAttribute("data-status"), "active");

    // The default organisation's workflow is, to acme, one that does not exist.
    await page.goto(`${server.base}/#/workflow/${seeded.root.provenance_ref}`);
    const missing = page.getByRole("alert").first();
    await missing.waitFor();
    assert.match(await missing.innerText(), /404 · workflow_not_found/);
    assert.deepEqual(unexpected(errors, 404, 409), []);
    await context.close();
  });
});
