// The record log part under a witness policy the reviewer sets in this
// browser, against a real server whose log two `mandate witness serve`
// processes cosign: without a policy the verdict says only the log's
// signature was checked; with "2 of 2" it names the policy and the
// witnesses that cosigned, and the policy is kept across a reload; a
// policy naming a witness that never cosigned is refused with the code;
// input that is not a policy is not saved, and a key core does not read
// verifies nothing as witnessed. Entered by keyboard, through labelled
// fields.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { launchBrowser, openPage, screenshot, signIn, startServer, startWitness } from "./harness.mjs";

const AGENT = "witnessed-bot";

/** The record's dialog, once its log part shows `verdict`. */
async function openRecord(page, base, aarId, verdict) {
  await page.goto(`${base}/#/agent/${AGENT}`);
  await page.locator(`tr[data-aar-id="${aarId}"] button.details`).click();
  const dialog = page.getByRole("dialog");
  await dialog.locator(`.record-log[data-log="${verdict}"]`).waitFor();
  return dialog;
}

/** Types a policy into the dialog's form with the keyboard and saves it. */
async function enterPolicy(dialog, { keys, threshold, maxAge }) {
  const part = dialog.locator(".record-log");
  const summary = part.locator(".log-policy summary");
  if ((await part.locator(".log-policy").getAttribute("open")) === null) {
    await summary.focus();
    await summary.press("Enter");
  }
  const field = part.getByLabel("Witness keys, one a line");
  await field.fill("");
  await field.focus();
  await field.pressSequentially(keys.join("\n"));
  await part.getByLabel("Threshold (cosignatures needed)").fill(threshold);
  await part.getByLabel("Maximum cosignature age (seconds)").fill(maxAge);
  await part.getByRole("button", { name: "Save policy" }).press("Enter");
}

describe("record log under a witness policy", () => {
  let server;
  let witnesses = [];
  let stranger;
  let browser;
  let aarId;

  before(async () => {
    server = await startServer();
    const origin = (await server.api.text("/v1/log/checkpoint")).split("\n")[0];
    const logVkey = (await server.api.text("/v1/log/key")).trim().split("\n")[0];
    witnesses = [
      await startWitness({ name: "w1", origin, logVkey }),
      await startWitness({ name: "w2", origin, logVkey }),
    ];
    // A witness of the same log the server does not submit to.
    stranger = await startWitness({ name: "w3", origin, logVkey });
    await server.restart({
      config:
        "[log]\nwitness_threshold = 2\ncheckpoint_interval_ms = 100\n\n" +
        witnesses.map((w) => `[[log.witnesses]]\nurl = "${w.base}"\nvkey = "${w.vkey}"\n\n`).join(""),
    });
    const token = await server.api.issue({ agent_id: AGENT, resources: ["crm:*"], actions: ["read"] });
    aarId = (await server.api.act(token.jti, "read", "crm:contacts", "success")).aar_id;
    // Until both witnesses have cosigned a checkpoint with the record in it.
    const size = await server.api.logSize();
    for (let tries = 0; ; tries++) {
      const note = await server.api.text("/v1/log/checkpoint");
      const cosigned = note.split("\n").filter((line) => line.startsWith("\u2014 witness.test/")).length;
      if (Number(note.split("\n")[1]) >= size && cosigned === 2) break;
      assert.ok(tries < 300, `the witnesses never cosigned: ${note}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    for (const witness of [...witnesses, stranger]) await witness?.stop();
  });

  test("without a policy the verdict says only the log's signature was checked", async () => {
    const { page, context, errors } = await openPage(browser);
    await signIn(page, server.base, server.adminKey);
    const dialog = await openRecord(page, server.base, aarId, "verified");
    const part = dialog.locator(".record-log");
    assert.match(await part.innerText(), /proof verified in this browser against checkpoint of size \d+\./);
    assert.match(await part.locator(".log-policy-none").innerText(), /Only the log's own signature was checked/);
    assert.equal(await part.locator(".log-policy summary").innerText(), "Witness policy: none set");
    assert.equal(await part.getByLabel("Witness keys, one a line").inputValue(), "", "never filled in from the server");
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("a policy set in this browser is checked, named, and kept for this deployment", async () => {
    const { page, context, errors } = await openPage(browser);
    await signIn(page, server.base, server.adminKey);
    let dialog = await openRecord(page, server.base, aarId, "verified");
    await enterPolicy(dialog, { keys: witnesses.map((w) => w.vkey), threshold: "2", maxAge: "3600" });
    const part = dialog.locator('.record-log[data-log="witnessed"]');
    await part.waitFor();
    assert.match(
      await part.locator(".log-verified").innerText(),
      /proof verified in this browser against checkpoint of size \d+, witnessed under this browser's policy \(2 of 2 witnesses: witness\.test\/w1, witness\.test\/w2, max age 1 h\): cosigned by /,
    );
    assert.deepEqual((await part.locator(".log-cosigner").allTextContents()).sort(), ["witness.test/w1", "witness.test/w2"]);
    assert.equal(
      await part.locator(".log-policy summary").innerText(),
      "Witness policy: 2 of 2 witnesses: witness.test/w1, witness.test/w2, max age 1 h",
    );
    await screenshot(page, "record-log-witnessed", { fullPage: false });

    // Kept in this browser: a reload checks with it again.
    await page.reload();
    dialog = await openRecord(page, server.base, aarId, "witnessed");
    assert.equal(await dialog.locator(".record-log .log-policy-none").count(), 0);

    // One witness the log never submitted to: its cosignature is missing.
    await enterPolicy(dialog, { keys: [witnesses[0].vkey, stranger.vkey], threshold: "2", maxAge: "3600" });
    const refused = dialog.locator('.record-log[data-log="unwitnessed"]');
    await refused.waitFor();
    const alert = refused.getByRole("alert");
    assert.match(await alert.innerText(), /Not witnessed under this browser's policy: \w+/);
    assert.match(await alert.innerText(), /The policy: 2 of 2 witnesses: witness\.test\/w1, witness\.test\/w3, max age 1 h\./);
    assert.equal(await refused.locator(".log-verified").count(), 0);
    await screenshot(page, "record-log-unwitnessed", { fullPage: false });

    // Removed: back to the log's signature only.
    await refused.getByRole("button", { name: "Remove policy" }).click();
    await dialog.locator('.record-log[data-log="verified"] .log-policy-none').waitFor();
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("input that is not a policy is not saved, and a key core refuses verifies nothing as witnessed", async () => {
    const { page, context, errors } = await openPage(browser);
    await signIn(page, server.base, server.adminKey);
    const dialog = await openRecord(page, server.base, aarId, "verified");
    const part = dialog.locator(".record-log");

    await enterPolicy(dialog, { keys: [witnesses[0].vkey], threshold: "2", maxAge: "3600" });
    assert.match(
      await part.locator(".policy-invalid").innerText(),
      /Not saved: The threshold \(2\) is more than the 1 witness key listed\./,
    );
    await enterPolicy(dialog, { keys: [witnesses[0].vkey], threshold: "1", maxAge: "0" });
    assert.match(await part.locator(".policy-invalid").innerText(), /maximum age must be a whole number of seconds/);
    assert.equal(await part.locator(".log-policy summary").innerText(), "Witness policy: none set");
    assert.equal(await page.evaluate(() => localStorage.getItem("mandate.witness-policy")), null);

    // Well formed, but not a witness key core reads.
    await enterPolicy(dialog, { keys: ["witness.test/w9+0badc0de+AAAA"], threshold: "1", maxAge: "60" });
    const invalid = dialog.locator('.record-log[data-log="policy_invalid"]');
    await invalid.waitFor();
    assert.match(
      await invalid.locator(".log-policy-invalid").innerText(),
      /The witness policy set in this browser is not valid: \w+[\s\S]*Nothing was verified as witnessed/,
    );
    assert.equal(await invalid.locator(".log-witnessed").count(), 0);
    await screenshot(page, "record-log-policy-invalid", { fullPage: false });
    await invalid.getByRole("button", { name: "Remove policy" }).click();
    await dialog.locator('.record-log[data-log="verified"]').waitFor();
    assert.deepEqual(errors, []);
    await context.close();
  });
});
