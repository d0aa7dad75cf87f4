// A record's place in the record log, checked in this browser: the record's
// proof (`GET /v1/vat/aar/{aar_id}/proof`) and the log's verifier keys
// (`GET /v1/log/key`) are fetched, and the SDK's wasm build — core's rules —
// verifies the signed checkpoint and every event's inclusion in it. The
// wasm module is loaded the first time a record is opened, never before.
//
// What this proves is bounded by where the keys came from: keys fetched
// from the same server only show that the record is in the log this server
// signs. The keys are shown, so a reviewer can compare them with keys got
// elsewhere (docs/log.md). With a witness policy the reviewer set in this
// browser (witnesspolicy.ts), the checkpoint must also carry the policy's
// threshold of fresh cosignatures, and the verdict names the policy and the
// witnesses that cosigned; without one it says that only the log's own
// signature was checked.

import {
  type ErrorInfo,
  type Cosigned,
  type LogCheckpoint,
  MandateError,
  type RecordProof,
  type RecordProofResult,
  init,
  type WitnessPolicy,
  verifyRecordProof,
} from "mandate-sdk/web";
import wasmUrl from "mandate-sdk/mandate.wasm?url";
import { type Child, h, replace } from "./dom.js";
import { client } from "./session.js";
import { problemBox, signedOut } from "./ui.js";
import { policyEditor, policyText, storedPolicy } from "./witnesspolicy.js";

let wasm: Promise<void> | undefined;

/** Loads the SDK's WebAssembly module once; a failed load may be tried again. */
function loadWasm(): Promise<void> {
  wasm ??= init(new URL(wasmUrl, import.meta.url)).catch((error: unknown) => {
    wasm = undefined;
    throw error;
  });
  return wasm;
}

/** What the part shows, also its `data-log` attribute for tests and styles. */
type LogState =
  | "checking"
  /** Signed and included; no witness policy is set. */
  | "verified"
  /** Signed, included, and witnessed under the policy set in this browser. */
  | "witnessed"
  /** Signed and included, but the policy's cosignatures are not there. */
  | "unwitnessed"
  /** The policy set in this browser is one core refuses: nothing verified as witnessed. */
  | "policy_invalid"
  | "invalid"
  | "not_in_log"
  | "error";

/** What a proof checked under a policy carries about its witnesses. */
type Witnessed = { checkpoint: LogCheckpoint; cosigned_by: Cosigned[]; linked: boolean };

/** `record.completed` → `completed`. */
function eventName(kind: string): string {
  return kind.startsWith("record.") ? kind.slice("record.".length) : kind;
}

/** The vkeys of `GET /v1/log/key`, one a line. */
function keyLines(vkeys: string): string[] {
  return vkeys
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
}

/** "In the log at index N (created N, completed M, …), proof verified in this browser against checkpoint of size S." */
function verified(
  result: Extract<RecordProofResult, { valid: true }>,
  witnessed?: { policy: WitnessPolicy; by: Witnessed },
): HTMLElement {
  const events: Child[] = [];
  for (const [n, event] of result.events.entries()) {
    if (n > 0) {
      events.push(", ");
    }
    events.push(
      h(
        "span",
        { class: "log-event", "data-kind": event.entry.kind, "data-index": event.index },
        `${eventName(event.entry.kind)} ${event.index}`,
      ),
    );
  }
  const first = result.events[0];
  return h(
    "p",
    { class: "log-verdict log-verified" },
    h("span", { class: "log-mark", "aria-hidden": "true" }, "✓"),
    h("strong", {}, "Verified. "),
    `In the log at index ${first === undefined ? "?" : first.index} (`,
    ...events,
    `), proof verified in this browser against checkpoint of size ${result.checkpoint.size}`,
    witnessed === undefined ? "." : witnessedText(witnessed.policy, witnessed.by),
  );
}

/** ", witnessed under this browser's policy (k of N witnesses: …): cosigned by a, b." */
function witnessedText(policy: WitnessPolicy, by: Witnessed): HTMLElement {
  return h(
    "span",
    { class: "log-witnessed" },
    `, witnessed under this browser's policy (${policyText(policy)}): cosigned by `,
    ...by.cosigned_by.flatMap((cosigned, n) => [
      n > 0 ? ", " : null,
      h("span", { class: "log-cosigner", "data-timestamp": cosigned.timestamp }, cosigned.name),
    ]),
    by.linked
      ? ` at size ${by.checkpoint.size}, which the proof's checkpoint extends (consistency proof verified).`
      : ".",
  );
}

/** Without a policy: what was not checked. */
function unwitnessedNote(): HTMLElement {
  return h(
    "p",
    { class: "log-policy-none" },
    "Only the log's own signature was checked: no witness policy is set in this browser, so nothing shows that independent witnesses saw this checkpoint.",
  );
}

/** Codes core gives for a policy it cannot build (a key it does not read, k or the age out of range). */
function policyRefused(code: string): boolean {
  return /^(witness_policy_|witness_vkey_|vkey_|key_name_)/.test(code);
}

/** The policy's threshold of fresh cosignatures is not there, as an alert. */
function notWitnessed(error: ErrorInfo, policy: WitnessPolicy): HTMLElement {
  return h(
    "div",
    { class: "problem log-verdict log-unwitnessed", role: "alert" },
    h(
      "p",
      { class: "problem-title" },
      h("span", { class: "log-mark", "aria-hidden": "true" }, "✗"),
      "Not witnessed under this browser's policy: ",
      h("code", { class: "log-code" }, error.code),
    ),
    h("p", { class: "problem-detail" }, error.message),
    h(
      "p",
      {},
      `The policy: ${policyText(policy)}. The log's signature and the inclusion proofs verify, but the checkpoint does not carry enough fresh cosignatures by these witnesses, so this record's place in the log is not shown to be seen by them.`,
    ),
  );
}

/** The stored policy is one core refuses. */
function policyInvalid(error: ErrorInfo): HTMLElement {
  return h(
    "div",
    { class: "problem log-verdict log-policy-invalid", role: "alert" },
    h(
      "p",
      { class: "problem-title" },
      "The witness policy set in this browser is not valid: ",
      h("code", { class: "log-code" }, error.code),
    ),
    h("p", { class: "problem-detail" }, error.message),
    h("p", {}, "Nothing was verified as witnessed. Correct the policy below, or remove it."),
  );
}

/** "The proof does not verify: <code>", as an alert. */
function invalid(error: ErrorInfo, proof: RecordProof): HTMLElement {
  const event = error.index === undefined ? undefined : proof.events[error.index];
  return h(
    "div",
    { class: "problem log-verdict log-invalid", role: "alert" },
    h(
      "p",
      { class: "problem-title" },
      h("span", { class: "log-mark", "aria-hidden": "true" }, "✗"),
      "The proof does not verify: ",
      h("code", { class: "log-code" }, error.code),
    ),
    h(
      "p",
      { class: "problem-detail" },
      error.message,
      event === undefined ? null : ` (the ${eventName(event.kind)} event, index ${event.index}).`,
    ),
    h(
      "p",
      {},
      "Either the server sent a proof that is wrong or the answer was altered on its way: this record's place in the log is not shown to be true.",
    ),
  );
}

/** The keys the proof was checked with, and what trusting them means. */
function keysHelp(vkeys: string[], origin: string | undefined): HTMLElement {
  return h(
    "div",
    { class: "log-help" },
    h(
      "p",
      { class: "muted" },
      "The log's keys came from this same server (",
      h("code", {}, "/v1/log/key"),
      "), so this shows the record is in the log this server signs, not that the server is honest. Compare the key below with one you got elsewhere.",
    ),
    h(
      "details",
      { class: "log-keys" },
      h("summary", {}, vkeys.length === 1 ? "The log's key" : `The log's ${vkeys.length} keys`),
      origin === undefined ? null : h("p", {}, "Log: ", h("code", { class: "wrap" }, origin)),
      h("ul", {}, ...vkeys.map((vkey) => h("li", {}, h("code", { class: "wrap log-vkey" }, vkey)))),
    ),
  );
}

/** Marks `promise` as handled (it is awaited later), so a rejection is not reported twice. */
function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

/**
 * The "Record log" part of a record's dialog. It starts checking at once and
 * shows "Checking…" (a status) until the verdict: verified with each
 * event's index, does not verify (an alert with the code), not in the log
 * (written while the log was off), or the problem that stopped the check.
 */
export function recordLog(aarId: string): HTMLElement {
  const result = h("div", { class: "log-result", "aria-live": "polite" });
  const section = h(
    "section",
    { class: "record-log", "aria-labelledby": "record-log-title" },
    h("h3", { id: "record-log-title" }, "Record log"),
    result,
  );
  const show = (state: LogState, ...children: Child[]): void => {
    section.dataset.log = state;
    if (state === "checking") {
      result.setAttribute("aria-busy", "true");
    } else {
      result.removeAttribute("aria-busy");
    }
    replace(result, ...children);
  };
  // A policy saved while a check runs starts another; only the newest
  // check's verdict is shown.
  let checks = 0;
  const recheck = (): void => {
    const run = ++checks;
    show("checking", h("p", { class: "loading", role: "status" }, "Checking the record's proof in this browser…"));
    void check(aarId, (state, ...children) => {
      if (run === checks) {
        show(state, ...children);
      }
    });
  };
  section.append(policyEditor(recheck));
  recheck();
  return section;
}

async function check(aarId: string, show: (state: LogState, ...children: Child[]) => void): Promise<void> {
  const api = client();
  const proofAnswer = quiet(api.recordProof(aarId));
  const keysAnswer = quiet(api.logKey());
  const loaded = quiet(loadWasm());
  let proof: RecordProof;
  let vkeys: string[];
  try {
    proof = await proofAnswer;
    vkeys = keyLines(await keysAnswer);
  } catch (error) {
    if (error instanceof MandateError && error.status === 409 && error.code === "not_in_log") {
      show(
        "not_in_log",
        h(
          "p",
          { class: "log-verdict log-off" },
          "This record was written while the record log was off: it has no proof in the log.",
        ),
      );
    } else if (!signedOut(error)) {
      show("error", problemBox(error));
    }
    return;
  }
  try {
    await loaded;
  } catch (error) {
    show(
      "error",
      h(
        "div",
        { class: "problem", role: "alert" },
        h("p", { class: "problem-title" }, "The verifier could not be loaded in this browser"),
        h("p", { class: "problem-detail" }, error instanceof Error ? error.message : String(error)),
      ),
    );
    return;
  }
  // The origin is the one the answer names: like the keys, this server's word.
  const outcome = verifyRecordProof(proof, vkeys, { origin: proof.origin });
  if (!outcome.valid) {
    show("invalid", invalid(outcome.error, proof), keysHelp(vkeys, proof.origin));
    return;
  }
  const policy = storedPolicy();
  if (policy === undefined) {
    show("verified", verified(outcome), unwitnessedNote(), keysHelp(vkeys, outcome.checkpoint.origin));
    return;
  }
  // The same proof again under the policy: its signature and inclusion
  // already verified, a refusal now is the policy's (or the policy itself).
  const witnessed = verifyRecordProof(proof, vkeys, { origin: proof.origin, policy });
  if (witnessed.valid && witnessed.witnessed !== undefined) {
    show(
      "witnessed",
      verified(witnessed, { policy, by: witnessed.witnessed }),
      keysHelp(vkeys, witnessed.checkpoint.origin),
    );
  } else if (witnessed.valid) {
    // Under a policy the SDK answers every valid proof with its witnesses.
    show(
      "error",
      h(
        "div",
        { class: "problem", role: "alert" },
        h("p", { class: "problem-title" }, "The verifier answered without the witnesses it counted"),
      ),
    );
  } else if (policyRefused(witnessed.error.code)) {
    show("policy_invalid", verified(outcome), policyInvalid(witnessed.error), keysHelp(vkeys, outcome.checkpoint.origin));
  } else {
    show("unwitnessed", notWitnessed(witnessed.error, policy), keysHelp(vkeys, outcome.checkpoint.origin));
  }
}
