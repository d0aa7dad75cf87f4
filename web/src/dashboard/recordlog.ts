// A record's place in the record log, checked in this browser: the record's
// proof (`GET /v1/vat/aar/{aar_id}/proof`) and the log's verifier keys
// (`GET /v1/log/key`) are fetched, and the SDK's wasm build — core's rules —
// verifies the signed checkpoint and every event's inclusion in it. The
// wasm module is loaded the first time a record is opened, never before.
//
// What this proves is bounded by where the keys came from: keys fetched
// from the same server only show that the record is in the log this server
// signs. The keys are shown, so a reviewer can compare them with keys got
// elsewhere (docs/log.md).

import {
  type ErrorInfo,
  MandateError,
  type RecordProof,
  type RecordProofResult,
  init,
  verifyRecordProof,
} from "mandate-sdk/web";
import wasmUrl from "mandate-sdk/mandate.wasm?url";
import { type Child, h, replace } from "./dom.js";
import { client } from "./session.js";
import { problemBox, signedOut } from "./ui.js";

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
type LogState = "checking" | "verified" | "invalid" | "not_in_log" | "error";

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
function verified(result: Extract<RecordProofResult, { valid: true }>): HTMLElement {
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
    `), proof verified in this browser against checkpoint of size ${result.checkpoint.size}.`,
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
  show("checking", h("p", { class: "loading", role: "status" }, "Checking the record's proof in this browser…"));
  void check(aarId, show);
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
  if (outcome.valid) {
    show("verified", verified(outcome), keysHelp(vkeys, outcome.checkpoint.origin));
  } else {
    show("invalid", invalid(outcome.error, proof), keysHelp(vkeys, proof.origin));
  }
}
