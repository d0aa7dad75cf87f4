// A record's place in the record log, shown by the dashboard and verified in
// Chromium with the SDK's wasm build, against a real server: the indices of
// each event (created, completed, rated) as the writes made them, a rating
// given in the dialog that adds its event, a proof altered on its way to the
// page (refused, with the code), a record written while the log was off, and
// the part at phone width.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { launchBrowser, openPage, screenshot, signIn, startServer } from "./harness.mjs";

/** The record's dialog from the agent's records, once its log part has a verdict. */
async function openRecord(page, base, agent, aarId, verdict = "verified") {
  await page.goto(`${base}/#/agent/${agent}`);
  await page.locator(`tr[data-aar-id="${aarId}"] button.details`).click();
  const dialog = page.getByRole("dialog");
  await dialog.locator(`.record-log[data-log="${verdict}"]`).waitFor();
  return dialog;
}

/** `[[kind, index], …]` of the events the page shows as verified. */
async function shownEvents(dialog) {
  return dialog
    .locator(".record-log .log-event")
    .evaluateAll((spans) => spans.map((span) => [span.dataset.kind, Number(span.dataset.index)]));
}

/** The leaf (base64) with one byte changed. */
function flipByte(leaf, at) {
  const bytes = Buffer.from(leaf, "base64");
  bytes[at] ^= 0x01;
  return bytes.toString("base64");
}

describe("record log", () => {
  let server;
  let browser;
  let seeded;

  before(async () => {
    server = await startServer();
    const { api } = server;
    const token = await api.issue({ agent_id: "ledger-bot", resources: ["crm:*"], actions: ["read", "write"] });
    // Each write appends its leaves at the end of the log: the size before
    // it is the index of its (first) leaf.
    const actedAt = await api.logSize();
    const acted = await api.act(token.jti, "read", "crm:contacts", "success");
    const authorizedAt = await api.logSize();
    const authorized = await api.authorize(token.jti, "write", "crm:notes");
    assert.equal(authorized.authorized, true);
    const completedAt = await api.logSize();
    await api.complete(authorized.aar_id, "success");
    const ratedAt = await api.logSize();
    await api.rate(authorized.aar_id, "approved");
    const size = await api.logSize();
    assert.equal(size, ratedAt + 1, "a rating appends one leaf");
    seeded = {
      token,
      acted: { aar_id: acted.aar_id, events: [["record.created", actedAt]] },
      authorized: {
        aar_id: authorized.aar_id,
        events: [
          ["record.created", authorizedAt],
          ["record.completed", completedAt],
          ["record.rated", ratedAt],
        ],
      },
      size,
    };
    // The server's own answer names the same events.
    for (const record of [seeded.acted, seeded.authorized]) {
      const proof = await api.recordProof(record.aar_id);
      assert.deepEqual(
        proof.events.map((event) => [event.kind, event.index]),
        record.events,
      );
    }
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("each record shows its events' indices, verified in this browser", async () => {
    const { page, context, errors } = await openPage(browser);
    const wasmFetched = [];
    page.on("request", (request) => {
      if (new URL(request.url()).pathname.endsWith(".wasm")) wasmFetched.push(request.url());
    });
    await signIn(page, server.base, server.adminKey);
    await page.goto(`${server.base}/#/agent/ledger-bot`);
    await page.locator(`tr[data-aar-id="${seeded.acted.aar_id}"]`).waitFor();
    assert.deepEqual(wasmFetched, [], "the dashboard loads no wasm until a record is opened");

    const one = await openRecord(page, server.base, "ledger-bot", seeded.acted.aar_id);
    assert.equal(wasmFetched.length, 1, "the SDK's wasm, once");
    const [created] = seeded.acted.events;
    assert.match(
      await one.locator(".record-log").innerText(),
      new RegExp(
        `In the log at index ${created[1]} \\(created ${created[1]}\\), ` +
          `proof verified in this browser against checkpoint of size ${seeded.size}\\.`,
      ),
    );
    assert.deepEqual(await shownEvents(one), seeded.acted.events);
    // The key the proof was checked with is shown, to compare with one got elsewhere.
    const vkeys = (await server.api.text("/v1/log/key")).trim().split("\n");
    assert.deepEqual(await one.locator(".log-vkey").allTextContents(), vkeys);
    assert.match(await one.locator(".log-help").innerText(), /came from this same server/);
    await one.getByRole("button", { name: "Close" }).click();

    const three = await openRecord(page, server.base, "ledger-bot", seeded.authorized.aar_id);
    const [c, d, r] = seeded.authorized.events.map(([, index]) => index);
    assert.match(
      await three.locator(".record-log").innerText(),
      new RegExp(
        `In the log at index ${c} \\(created ${c}, completed ${d}, rated ${r}\\), ` +
          `proof verified in this browser against checkpoint of size ${seeded.size}\\.`,
      ),
    );
    assert.deepEqual(await shownEvents(three), seeded.authorized.events);
    assert.equal(wasmFetched.length, 1, "loaded once for every record");
    await three.locator(".log-keys summary").click();
    await screenshot(page, "record-log-verified", { fullPage: false });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("a rating given in the dialog is checked again with its event", async () => {
    const { page, context, errors } = await openPage(browser);
    await signIn(page, server.base, server.adminKey);
    const dialog = await openRecord(page, server.base, "ledger-bot", seeded.acted.aar_id);
    const ratedAt = await server.api.logSize();
    await dialog.getByRole("button", { name: "Flag" }).click();
    await dialog.locator('.rating-given[data-rating="flagged"]').waitFor();
    const rated = dialog.locator(`.record-log[data-log="verified"] .log-event[data-kind="record.rated"]`);
    await rated.waitFor();
    assert.deepEqual(await shownEvents(dialog), [...seeded.acted.events, ["record.rated", ratedAt]]);
    assert.match(
      await dialog.locator(".record-log").innerText(),
      new RegExp(`against checkpoint of size ${ratedAt + 1}\\.`),
    );
    await screenshot(page, "record-log-rated", { fullPage: false });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("a proof altered on its way to the page is refused, with its code", async () => {
    const { page, context, errors } = await openPage(browser);
    await signIn(page, server.base, server.adminKey);
    // The proof's answer is held until the page has shown that it is checking.
    let release;
    const held = new Promise((resolve) => {
      release = resolve;
    });
    let alter = (answer) => answer;
    await page.route("**/v1/vat/aar/*/proof", async (route) => {
      const response = await route.fetch();
      const answer = alter(await response.json());
      await held;
      await route.fulfill({ response, json: answer });
    });

    // One byte of the created event's leaf changed: its hash is not in the tree.
    alter = (answer) => {
      answer.events[0].leaf = flipByte(answer.events[0].leaf, 20);
      return answer;
    };
    await page.goto(`${server.base}/#/agent/ledger-bot`);
    await page.locator(`tr[data-aar-id="${seeded.authorized.aar_id}"] button.details`).click();
    const dialog = page.getByRole("dialog");
    const checking = dialog.locator('.record-log[data-log="checking"]').getByRole("status");
    await checking.waitFor();
    assert.match(await checking.innerText(), /Checking the record's proof in this browser/);
    release();
    await dialog.locator('.record-log[data-log="invalid"]').waitFor();
    const alert = dialog.locator(".record-log").getByRole("alert");
    assert.match(await alert.innerText(), /The proof does not verify: log_root_mismatch/);
    assert.match(await alert.innerText(), /the created event, index/);
    assert.equal(await dialog.locator(".record-log .log-verified").count(), 0);
    await screenshot(page, "record-log-tampered", { fullPage: false });
    await dialog.getByRole("button", { name: "Close" }).click();

    // Another record's genuine event passed off as this one's: every proof
    // checks, but the leaf names another record.
    const other = await server.api.recordProof(seeded.acted.aar_id);
    alter = (answer) => {
      answer.events[0] = other.events[0];
      return answer;
    };
    const swapped = await openRecord(page, server.base, "ledger-bot", seeded.authorized.aar_id, "invalid");
    assert.match(
      await swapped.locator(".record-log").getByRole("alert").innerText(),
      /The proof does not verify: record_mismatch/,
    );
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("a record written while the log was off says so", async () => {
    const off = await startServer({ config: "[log]\nenabled = false\n" });
    try {
      const token = await off.api.issue({ agent_id: "unlogged-bot", resources: ["crm:*"], actions: ["read"] });
      const acted = await off.api.act(token.jti, "read", "crm:contacts", "success");
      const { page, context, errors } = await openPage(browser);
      await signIn(page, off.base, off.adminKey);
      const dialog = await openRecord(page, off.base, "unlogged-bot", acted.aar_id, "not_in_log");
      assert.match(
        await dialog.locator(".record-log").innerText(),
        /This record was written while the record log was off/,
      );
      assert.equal(await dialog.locator(".record-log").getByRole("alert").count(), 0, "not an error");
      await screenshot(page, "record-log-off", { fullPage: false });
      // Chromium reports the 409 answer itself as a console error.
      assert.deepEqual(
        errors.filter((error) => !/status of 409/.test(error)),
        [],
      );
      await context.close();
    } finally {
      await off.stop();
    }
  });

  test("the record log part fits a phone", async () => {
    const { page, context, errors } = await openPage(browser, { width: 375, height: 812 });
    await signIn(page, server.base, server.adminKey);
    const dialog = await openRecord(page, server.base, "ledger-bot", seeded.authorized.aar_id);
    await dialog.locator(".log-keys summary").click();
    const part = dialog.locator(".record-log");
    await part.scrollIntoViewIfNeeded();
    const overflow = await part.evaluate((element) => {
      const dialogElement = element.closest("dialog");
      const over = (wide, room) => Math.max(0, wide - room);
      return {
        page: over(document.documentElement.scrollWidth, window.innerWidth),
        dialog: over(dialogElement.scrollWidth, dialogElement.clientWidth),
        part: over(element.scrollWidth, element.clientWidth),
      };
    });
    assert.deepEqual(overflow, { page: 0, dialog: 0, part: 0 }, "nothing is wider than the screen");
    await screenshot(page, "phone-record-log", { fullPage: false });
    assert.deepEqual(errors, []);
    await context.close();
  });
});
