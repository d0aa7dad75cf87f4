// Reviewers see what they decide (DESIGN §15), in Chromium against a real
// server. Arguments are attacker-controlled text: a record's and an
// approval's arguments carry markup and script (`<img src=x onerror=…>`,
// `<script>`), and the pages show them literally, as pretty JSON beside
// their hash, with no element injected and no script run (a window flag
// stays unset), on the approval page and in the inbox, where approvals are
// decided in place. The approval page names the human by the label the
// organisation knows and shows the chain, root first; the token page reads
// the argument rules in words, a rule an agent added by delegation
// included; the workflow table shows each denial's reason. A server that
// keeps no arguments shows the hash and says the arguments were not kept.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { ApiProblem, launchBrowser, openPage, screenshot, signIn, startServer } from "./harness.mjs";

/** A jti's hash, as the pages name a token (base64url SHA-256). */
const jthOf = (jti) => createHash("sha256").update(jti).digest("base64url");

/** Markup that would set `window.__pwned` if a page ever parsed it. */
const IMG = '<img src=x onerror="window.__pwned=1">';
const SCRIPT = "<script>window.__pwned=2</script>";

/** The mailer's grant: `send` on `mail:*` only to example.com, at most 5 recipients. */
const MAIL_RULE = {
  actions: ["send"],
  resources: ["mail:*"],
  pol: [
    ["all", ".to", ["like", ".", "*@example.com"]],
    ["<=", ".count", 5],
  ],
};

/** Whether anything the arguments held became markup or ran. */
async function assertInert(page, scope) {
  assert.equal(await page.evaluate(() => window.__pwned), undefined, "a script from the arguments ran");
  assert.equal(await page.locator(`${scope} img, ${scope} script`).count(), 0, "an element was injected");
}

/** `record/action` with the token itself; a refusal answers its problem. */
async function act(api, token, body) {
  try {
    return await api.call("POST", "/v1/vat/record/action", { result: "success", ...body }, { key: token.compact_jwt });
  } catch (error) {
    if (error instanceof ApiProblem && error.status === 403) return error.body;
    throw error;
  }
}

describe("arguments", () => {
  let server;
  let browser;
  let page;
  let errors;
  let mailer;
  let helper;
  let sent;
  let refused;

  before(async () => {
    server = await startServer();
    mailer = await server.api.issue({
      agent_id: "mailer",
      resources: ["mail:*"],
      actions: ["send", "delegate"],
      constraints: { args: [MAIL_RULE] },
    });
    // The helper keeps the mailer's rule (inherited), adds one of its own
    // (its text is the delegating agent's: shown as text too) and asks a
    // human above 100 dollars.
    helper = await server.api.delegate(mailer, {
      agent_id: "helper",
      resources: ["mail:*"],
      actions: ["send"],
      constraints: {
        args: [MAIL_RULE, { actions: ["send"], pol: [["!=", ".subject", IMG]] }],
        require_approval: { args: [[">", ".amount_usd", 100]] },
      },
    });
    sent = {
      to: ["ann@example.com"],
      count: 1,
      subject: IMG,
      body: SCRIPT,
    };
    const done = await act(server.api, mailer, { action: "send", resource: "mail:outbox", args: sent });
    assert.ok(done.aar_id, JSON.stringify(done));
    sent.aar_id = done.aar_id;
    refused = await act(server.api, mailer, {
      action: "send",
      resource: "mail:outbox",
      args: { to: ["eve@evil.test"], count: 1 },
    });
    assert.equal(refused.code, "args_not_permitted", JSON.stringify(refused));
    browser = await launchBrowser();
    ({ page, errors } = await openPage(browser));
    await signIn(page, server.base, server.adminKey);
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("a record's arguments show as text beside their hash; the workflow table shows the denial's reason", async () => {
    const record = await server.api.call("GET", `/v1/vat/aar/${sent.aar_id}`);
    await page.goto(`${server.base}/#/workflow/${mailer.provenance_ref}?record=${sent.aar_id}`);
    const dialog = page.getByRole("dialog");
    const shown = dialog.locator("pre.args");
    await shown.waitFor();
    const text = await shown.textContent();
    assert.ok(text.includes(IMG.replaceAll('"', '\\"')), text);
    assert.ok(text.includes(SCRIPT), text);
    assert.deepEqual(JSON.parse(text), { to: sent.to, count: 1, subject: IMG, body: SCRIPT });
    assert.equal(await dialog.locator(".args-hash").textContent(), record.args_hash);
    assert.match(record.args_hash, /^sha256:/);
    await assertInert(page, ".record-dialog");
    await screenshot(page, "record-arguments", { fullPage: false });
    await dialog.getByRole("button", { name: "Close" }).click();

    const row = page.locator(`tr[data-aar-id="${refused.aar_id}"]`);
    await row.waitFor();
    assert.equal(await row.getAttribute("data-outcome"), "denied");
    assert.equal(await row.locator(".deny-reason").textContent(), "args_not_permitted");
    assert.match(await row.locator('td[data-label="Outcome"]').innerText(), /denied\s*args_not_permitted/);
    assert.equal(await page.locator(`tr[data-aar-id="${sent.aar_id}"] .deny-reason`).count(), 0);
    await screenshot(page, "workflow-deny-reasons");
    await assertInert(page, "main");
    assert.deepEqual(errors.splice(0), []);
  });

  test("the approval page shows the arguments as text, the human by label and the chain", async () => {
    const asked = {
      to: ["bob@example.com"],
      count: 1,
      amount_usd: 700,
      subject: "invoice",
      note: IMG,
      body: SCRIPT,
    };
    const waiting = await server.api.call(
      "POST",
      "/v1/vat/authorize",
      { action: "send", resource: "mail:outbox", args: asked },
      { key: helper.compact_jwt },
    );
    assert.equal(waiting.approval?.status, "pending", JSON.stringify(waiting));
    const approval = await server.api.call("GET", `/v1/vat/approvals/${waiting.approval.approval_id}`);
    await page.goto(`${server.base}/#/approval/${approval.approval_id}`);
    await page.locator('.approval[data-status="pending"]').waitFor();
    const asks = page.getByRole("region", { name: "What the agent asks" });
    const text = await asks.locator("pre.args").textContent();
    assert.deepEqual(JSON.parse(text), asked);
    assert.ok(text.includes(SCRIPT), text);
    assert.equal(await asks.locator(".args-hash").textContent(), approval.args_hash);

    const whom = page.getByRole("region", { name: "For whom" });
    // The harness issues every root token for reviewer@example.com (L1): that e-mail is the label.
    assert.equal(await whom.locator(".human-label").innerText(), "reviewer@example.com");
    assert.match(await whom.innerText(), new RegExp(`Reference\\s+${approval.human_ref}`));
    assert.equal(await whom.locator(".chain-path").textContent(), "mailer → helper");
    assert.deepEqual(
      await whom
        .getByRole("list", { name: "Delegation chain, root first" })
        .getByRole("listitem")
        .evaluateAll((items) => items.map((item) => [item.dataset.agent, item.dataset.depth])),
      [
        ["mailer", "0"],
        ["helper", "1"],
      ],
    );
    await assertInert(page, "main");
    await screenshot(page, "approval-arguments");

    // The inbox decides approvals in place: the same arguments, as text.
    await page.goto(`${server.base}/#/inbox`);
    const card = page.locator(`article[data-approval-id="${approval.approval_id}"]`);
    await card.waitFor();
    assert.deepEqual(JSON.parse(await card.locator("pre.args").textContent()), asked);
    assert.equal(await card.locator(".args-hash").textContent(), approval.args_hash);
    await assertInert(page, "main");
    assert.deepEqual(errors.splice(0), []);
  });

  test("the token page reads the argument rules in words", async () => {
    await page.goto(`${server.base}/#/tokens/${jthOf(helper.jti)}`);
    const rules = page.getByRole("region", { name: "Rules on arguments" });
    await rules.waitFor();
    assert.deepEqual(await rules.locator(".arg-rule").allInnerTexts(), [
      'send on mail:*: all .to: like "*@example.com" and .count <= 5',
      `send on every resource: .subject != ${JSON.stringify(IMG)}`,
    ]);
    assert.equal(
      await rules.locator(".arg-approval").innerText(),
      "require approval when .amount_usd > 100 (or when it is missing)",
    );
    await assertInert(page, "main");
    await screenshot(page, "token-argument-rules");

    // A token without rules shows none.
    const plain = await server.api.issue({ agent_id: "reader", resources: ["crm:*"], actions: ["read"] });
    await page.goto(`${server.base}/#/tokens/${jthOf(plain.jti)}`);
    await page.locator(".token-status").waitFor();
    assert.equal(await page.locator(".arg-rules").count(), 0);
    assert.deepEqual(errors.splice(0), []);
  });
});

describe("arguments not kept", () => {
  let server;
  let browser;

  before(async () => {
    server = await startServer({ config: "[records]\nkeep_args = false\n" });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("a record shows the hash and says the arguments were not kept", async () => {
    const mailer = await server.api.issue({
      agent_id: "mailer",
      resources: ["mail:*"],
      actions: ["send"],
      constraints: { args: [MAIL_RULE] },
    });
    const done = await act(server.api, mailer, {
      action: "send",
      resource: "mail:outbox",
      args: { to: ["ann@example.com"], count: 1 },
    });
    const record = await server.api.call("GET", `/v1/vat/aar/${done.aar_id}`);
    assert.equal(record.args, undefined);
    const { page, errors } = await openPage(browser);
    await signIn(page, server.base, server.adminKey);
    await page.goto(`${server.base}/#/workflow/${mailer.provenance_ref}?record=${done.aar_id}`);
    const dialog = page.getByRole("dialog");
    await dialog.locator(".args-not-kept").waitFor();
    assert.equal(await dialog.locator(".args-not-kept").textContent(), "arguments not kept");
    assert.equal(await dialog.locator(".args-hash").textContent(), record.args_hash);
    assert.equal(await dialog.locator("pre.args").count(), 0);
    assert.deepEqual(errors, []);
  });
});
