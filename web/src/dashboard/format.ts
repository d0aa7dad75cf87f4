// How values read on screen: times in UTC, scores to three places, long ids
// shortened with the whole id kept in a tooltip.

import type { ActionRecord } from "mandate-sdk/web";
import { entry, h } from "./dom.js";

/** `2026-11-22 10:00:03 UTC` from an ISO 8601 time. */
export function time(iso: string | undefined): string {
  if (iso === undefined) {
    return "—";
  }
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) {
    return iso;
  }
  return `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** A `<time>` element showing `time(iso)`. */
export function timeElement(iso: string | undefined): HTMLElement {
  return iso === undefined ? h("span", {}, "—") : h("time", { datetime: iso }, time(iso));
}

export function score(value: number): string {
  return value.toFixed(3);
}

export function usd(value: number): string {
  return `$${value.toFixed(2)}`;
}

/** `vat_root_01jd…7x2k`: the prefix, the first and last four characters. */
export function shortId(id: string): string {
  const cut = id.lastIndexOf("_") + 1;
  const body = id.slice(cut);
  return body.length > 12 ? `${id.slice(0, cut)}${body.slice(0, 6)}…${body.slice(-4)}` : id;
}

/** An agent id without the `agent:` prefix some answers give it (`agent:research-bot` → `research-bot`). */
export function bareAgent(agentId: string): string {
  return agentId.startsWith("agent:") ? agentId.slice("agent:".length) : agentId;
}

/** An id, shortened, with the full id as its title and accessible name. */
export function idElement(id: string): HTMLElement {
  return h("code", { title: id, "aria-label": id }, shortId(id));
}

/** A human as the organisation knows them: its label, the reference itself only as a tooltip and for a screen reader. */
export function human(humanRef: string, label: string | undefined): HTMLElement {
  return label === undefined
    ? h("span", {}, h("span", { class: "muted" }, "unlabelled "), idElement(humanRef))
    : h("span", { title: humanRef }, label);
}

/** How a record ended: its result, or its status (`denied`, `pending`, `awaiting_approval`). */
export function outcome(record: Pick<ActionRecord, "status" | "result">): string {
  if (record.status === "completed") {
    return record.result ?? "completed";
  }
  return record.status;
}

/** A coloured badge for an outcome, a rating or a token status. */
export function badge(word: string): HTMLElement {
  return h("span", { class: `badge badge-${word}` }, word);
}

/** An ISO 8601 time from a `datetime-local` input's value (read as local time), or undefined when empty. */
export function fromLocalInput(value: string): string | undefined {
  if (value === "") {
    return undefined;
  }
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** A `datetime-local` value (local time) for an ISO 8601 time. */
export function toLocalInput(iso: string | undefined): string {
  if (iso === undefined) {
    return "";
  }
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) {
    return "";
  }
  const local = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 16);
}

/**
 * A record's or an approval's arguments and their hash, as `<dl>` entries.
 * The arguments are attacker-controlled: pretty JSON in a text node, never
 * markup. A hash without arguments means the server did not keep them
 * (`[records] keep_args = false`).
 */
export function argsEntries(args: Record<string, unknown> | undefined, argsHash: string | undefined): DocumentFragment[] {
  if (args === undefined && argsHash === undefined) {
    return [entry("Arguments", h("span", { class: "muted" }, "none given"))];
  }
  return [
    entry(
      "Arguments",
      args === undefined
        ? h("span", { class: "muted args-not-kept" }, "arguments not kept")
        : h("pre", { class: "args" }, JSON.stringify(args, null, 2)),
    ),
    entry("Arguments hash", argsHash === undefined ? "—" : h("code", { class: "wrap args-hash" }, argsHash)),
  ];
}
