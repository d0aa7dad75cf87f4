// The records table: filters, cursor pages, and each record's full detail in
// a dialog with its rating controls and its place in the record log. Used
// by the workflow view (records of one provenance_ref) and the agent view
// (records of one agent).

import type { ActionRecord, RecordPage, RecordQuery } from "mandate-sdk/web";
import { type Child, entry, h, link, replace } from "./dom.js";
import { argsEntries, badge, fromLocalInput, idElement, outcome, score, time, timeElement, usd } from "./format.js";
import { ratingControls } from "./rating.js";
import { recordLog } from "./recordlog.js";
import { route } from "./router.js";
import { client } from "./session.js";
import { Pages, field, load, problemBox, signedOut } from "./ui.js";

const PAGE_SIZE = 25;

const RESULTS = ["success", "error", "timeout", "cancelled", "denied", "pending", "awaiting_approval"] as const;

type Filter = "agent_id" | "action" | "result" | "since" | "until";

export interface RecordsOptions {
  /** The query every page keeps: the workflow's provenance_ref or the agent. */
  fixed: RecordQuery;
  /** The filters offered. */
  filters: Filter[];
  /** Called after a record was rated. */
  onRated?: (record: ActionRecord) => void;
}

/**
 * The approval a record waited for, when it is known to have had one: it
 * awaits it, or was denied by it. A record waits for one approval at most;
 * the server names the approval of a record made with the token itself
 * after the record: `apr_` and the record's ULID. That of a record made
 * with a bare jti does not lead back to the record (whose id completes it),
 * so it is found from the approvals list only.
 */
function approvalOf(record: ActionRecord): string | undefined {
  const asked =
    record.status === "awaiting_approval" ||
    record.deny_reason === "approval_denied" ||
    record.deny_reason === "approval_expired";
  return asked && record.credential === "token" && record.aar_id !== undefined
    ? `apr_${record.aar_id.slice("aar_".length)}`
    : undefined;
}

/** What a record's id cell shows when the server leaves the id out. */
const HIDDEN_ID = "shown only to the agent that made it until it is completed (it completes the record)";

function detail(record: ActionRecord): HTMLElement {
  const rows: DocumentFragment[] = [
    entry("Record", record.aar_id === undefined ? h("span", { class: "muted" }, HIDDEN_ID) : h("code", {}, record.aar_id)),
    entry("Outcome", badge(outcome(record)), record.deny_reason === undefined ? null : ` — ${record.deny_reason}`),
    entry("Agent", link(route(["agent", record.agent_id]), record.agent_id)),
    entry("Action", record.action),
    entry("Resource", h("code", {}, record.resource)),
    ...argsEntries(record.args, record.args_hash),
    entry(
      "Token",
      link(route(["tokens", record.jth]), h("code", {}, record.jth)),
      h("span", { class: "muted" }, " (jti hash)"),
    ),
    entry("Made with", record.credential === "token" ? "the token itself" : "its jti (vat_jti), which proves nothing"),
    entry("Workflow", link(route(["workflow", record.provenance_ref]), h("code", {}, record.provenance_ref))),
    entry("Delegation depth", record.delegation_depth),
    entry("Trust score", score(record.trust_score)),
    entry("Assurance", record.assurance_level),
    entry("Human", h("code", { class: "wrap" }, record.human_ref)),
    entry("Spend", usd(record.spend_usd)),
    entry("Created", timeElement(record.created_at)),
    entry("Completed", timeElement(record.completed_at)),
  ];
  if (record.result_hash !== undefined) {
    rows.push(entry("Result hash", h("code", { class: "wrap" }, record.result_hash)));
  }
  if (record.delegated_jth !== undefined) {
    rows.push(entry("Delegated to", link(route(["tokens", record.delegated_jth]), h("code", {}, record.delegated_jth))));
  }
  const approval = approvalOf(record);
  if (approval !== undefined) {
    rows.push(
      entry(
        "Approval",
        link(route(["approval", approval]), h("code", {}, approval)),
        record.status === "awaiting_approval" ? " — waiting for a person's decision" : null,
      ),
    );
  }
  return h("dl", { class: "detail" }, ...rows);
}

export class RecordsPanel {
  readonly element: HTMLElement;
  readonly #options: RecordsOptions;
  readonly #pages = new Pages();
  readonly #results = h("div", { class: "results", "aria-live": "polite" });
  readonly #dialog = h("dialog", { class: "record-dialog", "aria-labelledby": "record-dialog-title" });
  #filters: RecordQuery = {};
  /** The page shown, as the server sent it: a refresh that finds it unchanged leaves the table (and the focus in it) alone. */
  #shown: string | undefined;

  constructor(options: RecordsOptions) {
    this.#options = options;
    this.#dialog.addEventListener("click", (event) => {
      // A click on the backdrop (the dialog itself, outside its content) closes it.
      if (event.target === this.#dialog) {
        this.#dialog.close();
      }
    });
    this.element = h(
      "div",
      { class: "records" },
      // Open on a wide screen; on a phone the filters wait behind their summary.
      h(
        "details",
        { class: "filter-box", open: matchMedia("(min-width: 40rem)").matches },
        h("summary", {}, "Filters"),
        this.#filterForm(),
      ),
      this.#results,
      this.#dialog,
    );
  }

  #filterForm(): HTMLFormElement {
    const controls: Partial<Record<Filter, HTMLInputElement | HTMLSelectElement>> = {};
    const fields: HTMLElement[] = [];
    for (const filter of this.#options.filters) {
      if (filter === "result") {
        const select = h(
          "select",
          { name: "result" },
          h("option", { value: "" }, "any"),
          ...RESULTS.map((result) => h("option", { value: result }, result)),
        );
        controls.result = select;
        fields.push(field("Result", select));
      } else if (filter === "since" || filter === "until") {
        const input = h("input", { name: filter, type: "datetime-local" });
        controls[filter] = input;
        fields.push(field(filter === "since" ? "Since" : "Until", input));
      } else {
        const input = h("input", { name: filter, autocomplete: "off", spellcheck: false });
        controls[filter] = input;
        fields.push(field(filter === "agent_id" ? "Agent" : "Action", input));
      }
    }
    return h(
      "form",
      {
        class: "filters",
        role: "search",
        "aria-label": "Filter records",
        onsubmit: (event) => {
          event.preventDefault();
          const filters: RecordQuery = {};
          for (const [name, control] of Object.entries(controls) as Array<[Filter, HTMLInputElement | HTMLSelectElement]>) {
            const value =
              name === "since" || name === "until" ? fromLocalInput(control.value) : control.value.trim() || undefined;
            if (value !== undefined) {
              Object.assign(filters, { [name]: value });
            }
          }
          this.#filters = filters;
          this.#pages.reset();
          void this.reload();
        },
        onreset: () => {
          this.#filters = {};
          this.#pages.reset();
          void this.reload();
        },
      },
      ...fields,
      h("div", { class: "filter-actions" }, h("button", { type: "submit" }, "Filter"), h("button", { type: "reset" }, "Reset")),
    );
  }

  #row(record: ActionRecord): HTMLTableRowElement {
    const result = outcome(record);
    return h(
      "tr",
      { "data-aar-id": record.aar_id ?? "", "data-outcome": result, "data-rating": record.rating ?? "" },
      h("td", { "data-label": "Time" }, time(record.created_at)),
      h("td", { "data-label": "Agent" }, link(route(["agent", record.agent_id]), record.agent_id)),
      h("td", { "data-label": "Action" }, record.action),
      h("td", { "data-label": "Resource" }, h("code", {}, record.resource)),
      h(
        "td",
        { "data-label": "Outcome" },
        // One child: a cell is a two-column grid (label, value) on a phone.
        h(
          "span",
          {},
          badge(result),
          record.deny_reason === undefined ? null : h("code", { class: "deny-reason" }, record.deny_reason),
        ),
      ),
      h("td", { "data-label": "Rating" }, record.rating === undefined ? "—" : badge(record.rating)),
      h(
        "td",
        {},
        h(
          "button",
          {
            type: "button",
            class: "details",
            "aria-label": `Details of ${record.action} ${record.resource}${record.aar_id === undefined ? "" : ` (${record.aar_id})`}`,
            onclick: () => this.show(record),
          },
          "Details",
        ),
      ),
    );
  }

  #table(records: ActionRecord[]): HTMLElement {
    if (records.length === 0) {
      return h("p", { class: "empty" }, "No record matches.");
    }
    return h(
      "table",
      { class: "list" },
      h("caption", { class: "visually-hidden" }, "Action records, newest first"),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ...["Time", "Agent", "Action", "Resource", "Outcome", "Rating"].map((name) => h("th", { scope: "col" }, name)),
          h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Details")),
        ),
      ),
      h("tbody", {}, ...records.map((record) => this.#row(record))),
    );
  }

  #fetch(): Promise<RecordPage> {
    const query: RecordQuery = { ...this.#options.fixed, ...this.#filters, limit: PAGE_SIZE };
    if (this.#pages.current !== undefined) {
      query.cursor = this.#pages.current;
    }
    return client().recordsPage(query);
  }

  #render(page: RecordPage): Node {
    this.#shown = JSON.stringify(page);
    this.#pages.loaded(page.next_cursor);
    const fragment = document.createDocumentFragment();
    fragment.append(this.#table(page.records), this.#pages.controls("Record", () => void this.reload()));
    return fragment;
  }

  /** Loads the current page with the current filters. */
  async reload(): Promise<void> {
    await load(this.#results, "records", () => this.#fetch(), (page) => this.#render(page));
  }

  /**
   * Loads the current page again without a loading state (a live update),
   * replacing the table only if it changed; a failure leaves it as it was.
   */
  async refresh(): Promise<void> {
    try {
      const page = await this.#fetch();
      if (JSON.stringify(page) !== this.#shown) {
        replace(this.#results, this.#render(page));
      }
    } catch (error) {
      signedOut(error);
    }
  }

  #openDialog(title: string, ...content: Child[]): HTMLElement {
    const body = h("div", { class: "dialog-body" }, ...content);
    replace(
      this.#dialog,
      h(
        "div",
        { class: "dialog-head" },
        h("h2", { id: "record-dialog-title" }, title),
        h("button", { type: "button", class: "close", onclick: () => this.#dialog.close() }, "Close"),
      ),
      body,
    );
    if (!this.#dialog.open) {
      this.#dialog.showModal();
    }
    return body;
  }

  /**
   * Shows a record's full detail, its rating controls and its place in the
   * record log, checked in this browser (again after a rating, which the
   * log records too).
   */
  show(record: ActionRecord): void {
    const aarId = record.aar_id;
    if (aarId === undefined) {
      // A record whose id completes it: pending, so nothing to rate, and
      // its proof is asked for by its id.
      this.#openDialog(`${record.action} · ${record.resource}`, detail(record));
      return;
    }
    let log = recordLog(aarId);
    this.#openDialog(
      `${record.action} · ${record.resource}`,
      detail(record),
      ratingControls(record, (updated) => {
        const fresh = recordLog(aarId);
        log.replaceWith(fresh);
        log = fresh;
        this.#options.onRated?.(updated);
        void this.reload();
      }),
      log,
    );
  }

  /** Fetches a record by id and shows it. */
  async open(aarId: string): Promise<void> {
    const body = this.#openDialog("Record", h("p", { class: "loading", role: "status" }, "Loading the record…"));
    try {
      this.show(await client().record(aarId));
    } catch (error) {
      if (!signedOut(error)) {
        replace(body, problemBox(error), h("p", {}, idElement(aarId)));
      }
    }
  }
}
