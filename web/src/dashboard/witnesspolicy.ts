// The witness policy the reviewer sets in this browser, which the record
// log part verifies proofs with: witness vkeys, the threshold k and the
// maximum cosignature age — the SDK's `WitnessPolicy` and `mandate audit
// watch --witness-policy`'s shape. It is kept in this browser's storage
// for this deployment's origin only and is never filled in from anything
// the server answers: a policy fetched from the log it checks would prove
// nothing (DESIGN §20). Whether each key is one core accepts is judged by
// the SDK's verifier when a proof is checked; here only the form is read.

import type { WitnessPolicy } from "mandate-sdk/web";
import { h } from "./dom.js";
import { field } from "./ui.js";

/** Where the policy is kept: `localStorage` is this origin's, so each deployment has its own. */
const STORAGE_KEY = "mandate.witness-policy";

/** A policy read from the form or storage, or why it cannot be. */
export type PolicyReading = { ok: true; policy: WitnessPolicy } | { ok: false; message: string };

/** The witness's name: a vkey is `name+keyid+key`. */
export function witnessName(vkey: string): string {
  const plus = vkey.indexOf("+");
  return plus <= 0 ? vkey : vkey.slice(0, plus);
}

/** A whole number from a form field, or undefined. */
function whole(text: string): number | undefined {
  const trimmed = text.trim();
  if (!/^[0-9]+$/.test(trimmed)) {
    return undefined;
  }
  const value = Number(trimmed);
  return Number.isSafeInteger(value) ? value : undefined;
}

/** Reads the form's three fields: keys one a line (blank lines skipped), k, and the age in seconds. */
export function readPolicy(keys: string, threshold: string, maxAge: string): PolicyReading {
  const witnesses = keys
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
  if (witnesses.length === 0) {
    return { ok: false, message: "List at least one witness key (name+keyid+key), one a line." };
  }
  const k = whole(threshold);
  if (k === undefined || k < 1) {
    return { ok: false, message: "The threshold must be a whole number of witnesses, 1 or more." };
  }
  if (k > witnesses.length) {
    return {
      ok: false,
      message: `The threshold (${k}) is more than the ${witnesses.length} witness key${witnesses.length === 1 ? "" : "s"} listed.`,
    };
  }
  const age = whole(maxAge);
  if (age === undefined || age < 1) {
    return { ok: false, message: "The maximum age must be a whole number of seconds, 1 or more." };
  }
  return { ok: true, policy: { witnesses, threshold: k, max_age_seconds: age } };
}

/** The stored policy; none when nothing (or something unreadable) is stored. */
export function storedPolicy(): WitnessPolicy | undefined {
  let text: string | null;
  try {
    text = localStorage.getItem(STORAGE_KEY);
  } catch {
    return undefined;
  }
  if (text === null) {
    return undefined;
  }
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== "object" || value === null) {
      return undefined;
    }
    const { witnesses, threshold, max_age_seconds } = value as Record<string, unknown>;
    if (!Array.isArray(witnesses) || !witnesses.every((w) => typeof w === "string")) {
      return undefined;
    }
    const read = readPolicy(witnesses.join("\n"), String(threshold), String(max_age_seconds));
    return read.ok ? read.policy : undefined;
  } catch {
    return undefined;
  }
}

function store(policy: WitnessPolicy | undefined): void {
  if (policy === undefined) {
    localStorage.removeItem(STORAGE_KEY);
  } else {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(policy));
  }
}

/** "3600 s" as "1 h", "90 s" as "90 s": the age as a reviewer reads it. */
export function ageText(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400} d`;
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/** "2 of 3 witnesses: a, b, c, max age 1 h". */
export function policyText(policy: WitnessPolicy): string {
  const n = policy.witnesses.length;
  return (
    `${policy.threshold} of ${n} witness${n === 1 ? "" : "es"}: ` +
    `${policy.witnesses.map(witnessName).join(", ")}, max age ${ageText(policy.max_age_seconds)}`
  );
}

function summaryText(policy: WitnessPolicy | undefined): string {
  return policy === undefined ? "Witness policy: none set" : `Witness policy: ${policyText(policy)}`;
}

let forms = 0;

/**
 * The policy's form, in a `<details>` whose summary says which policy is
 * set. Saving a readable policy (or removing it) stores it and calls
 * `changed`; an unreadable one is refused with the reason, as an alert,
 * and nothing is stored.
 */
export function policyEditor(changed: () => void): HTMLElement {
  const n = ++forms;
  const current = storedPolicy();
  const keys = h("textarea", {
    name: "witnesses",
    rows: 3,
    spellcheck: "false",
    autocomplete: "off",
    class: "wrap",
    "aria-describedby": `policy-keys-help-${n}`,
  });
  keys.value = current?.witnesses.join("\n") ?? "";
  const threshold = h("input", { name: "threshold", type: "number", min: 1, step: 1, inputmode: "numeric" });
  threshold.value = current === undefined ? "" : String(current.threshold);
  const maxAge = h("input", { name: "max_age_seconds", type: "number", min: 1, step: 1, inputmode: "numeric" });
  maxAge.value = current === undefined ? "" : String(current.max_age_seconds);
  const message = h("div", { class: "policy-message" });
  const summary = h("summary", {}, summaryText(current));
  const form = h(
    "form",
    {
      class: "policy-form",
      "aria-label": "Witness policy",
      novalidate: true,
      onsubmit: (event: Event) => {
        event.preventDefault();
        const read = readPolicy(keys.value, threshold.value, maxAge.value);
        if (!read.ok) {
          message.replaceChildren(
            h("p", { class: "problem policy-invalid", role: "alert" }, "Not saved: ", read.message),
          );
          return;
        }
        store(read.policy);
        summary.textContent = summaryText(read.policy);
        message.replaceChildren(h("p", { role: "status" }, "Saved in this browser."));
        changed();
      },
    },
    field("Witness keys, one a line", keys),
    h(
      "p",
      { class: "muted", id: `policy-keys-help-${n}` },
      "Each witness's verifier key (name+keyid+key), as its operator publishes it — from somewhere other than this server.",
    ),
    field("Threshold (cosignatures needed)", threshold),
    field("Maximum cosignature age (seconds)", maxAge),
    h(
      "div",
      { class: "policy-actions" },
      h("button", { type: "submit" }, "Save policy"),
      h(
        "button",
        {
          type: "button",
          onclick: () => {
            store(undefined);
            summary.textContent = summaryText(undefined);
            keys.value = "";
            threshold.value = "";
            maxAge.value = "";
            message.replaceChildren(h("p", { role: "status" }, "Removed: only the log's signature is checked."));
            changed();
          },
        },
        "Remove policy",
      ),
    ),
    message,
  );
  return h(
    "details",
    { class: "log-policy" },
    summary,
    h(
      "p",
      { class: "muted" },
      "Kept in this browser for this deployment only, never taken from the server: with a policy, a proof counts only when its checkpoint carries the threshold of fresh cosignatures by these witnesses.",
    ),
    form,
  );
}
