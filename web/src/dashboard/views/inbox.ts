// The reviewer's inbox, the landing page of a key that may decide or rate:
// the approvals waiting (oldest first, with the time left before each
// expires, what the agent asks, its arguments as text and its chain;
// approve or deny with a note)
// and the completed records nobody has rated yet (filtered by agent,
// action, result and age; rated in place, with keyboard shortcuts; every
// success of one workflow approved at once after a confirmation). Both
// follow the organisation's events. A key that may do neither reads them.

import type { ActionRecord, ActionResult, Approval, ApprovalPage, Rating, RecordQuery } from "mandate-sdk/web";
import { h, link, replace } from "../dom.js";
import { argsEntries, badge, bareAgent, idElement, outcome, time, timeElement, usd } from "../format.js";
import { follow } from "../live.js";
import { type Route, navigate, route } from "../router.js";
import { can, client } from "../session.js";
import { confirmDialog, field, load, problemBox, signedOut } from "../ui.js";
import { decisionForm } from "./approval.js";

/** Approvals shown at once; more wait behind the Approvals page. */
const APPROVALS_SHOWN = 100;
const RECORDS_SHOWN = 50;
/** The approvals are fetched again this often (the time left before each expires moves on). */
const POLL_MS = 30_000;
/** The records waiting for a rating are fetched again this often while the page is visible. */
const RECORDS_POLL_MS = 10_000;

const RATINGS: Array<{ rating: Rating; label: string; key: string }> = [
  { rating: "approved", label: "Approve", key: "a" },
  { rating: "flagged", label: "Flag", key: "f" },
  { rating: "rejected", label: "Reject", key: "r" },
];

const AGES: Array<{ value: string; label: string; ms: number }> = [
  { value: "1h", label: "the last hour", ms: 3_600_000 },
  { value: "24h", label: "the last 24 hours", ms: 86_400_000 },
  { value: "7d", label: "the last 7 days", ms: 604_800_000 },
];

const RESULTS: ActionResult[] = ["success", "error", "timeout", "cancelled"];

/** `in 4 min`, `in 2 h 5 min`, or `expired`, from now to `iso`. */
function timeLeft(iso: string, now: number): string {
  const minutes = Math.floor((new Date(iso).getTime() - now) / 60_000);
  if (Number.isNaN(minutes) || minutes < 0) {
    return "expired";
  }
  if (minutes < 60) {
    return `${minutes} min left`;
  }
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min left`;
}

function approvalCard(approval: Approval, now: number, reload: () => void): HTMLElement {
  const title = `${approval.action} · ${approval.resource}`;
  const headingId = `inbox-${approval.approval_id}`;
  return h(
    "article",
    { class: "inbox-approval", "data-approval-id": approval.approval_id, "aria-labelledby": headingId },
    h("h3", { id: headingId }, title),
    h(
      "dl",
      { class: "detail" },
      h("dt", {}, "Time left"),
      h("dd", { class: "time-left" }, timeLeft(approval.expires_at, now), " (until ", timeElement(approval.expires_at), ")"),
      h("dt", {}, "Spend"),
      h("dd", {}, usd(approval.spend_usd)),
      // Decided in place: the reviewer sees the arguments here too.
      ...argsEntries(approval.args, approval.args_hash),
      h("dt", {}, "Chain"),
      h(
        "dd",
        {},
        h(
          "ol",
          { class: "chain-inline", "aria-label": "Delegation chain, root first" },
          ...approval.chain.map((item) => h("li", {}, link(route(["agent", bareAgent(item.agent_id)]), bareAgent(item.agent_id)))),
        ),
      ),
      h("dt", {}, "Requested"),
      h("dd", {}, timeElement(approval.requested_at)),
      h("dt", {}, "Workflow"),
      h("dd", {}, link(route(["workflow", approval.provenance_ref]), idElement(approval.provenance_ref))),
    ),
    h("p", {}, link(route(["approval", approval.approval_id]), `Open the approval of ${title}`)),
    can("decide") ? decisionForm(approval, reload, reload) : null,
  );
}

function approvalsList(approvals: Approval[], more: boolean, reload: () => void): HTMLElement {
  const now = Date.now();
  const oldestFirst = [...approvals].sort((a, b) => a.requested_at.localeCompare(b.requested_at));
  const box = h("div", {});
  if (oldestFirst.length === 0) {
    box.append(h("p", { class: "empty" }, "Nothing waits for a decision."));
  }
  box.append(...oldestFirst.map((approval) => approvalCard(approval, now, reload)));
  if (more) {
    box.append(h("p", {}, "More wait than are shown here: ", link(route(["approvals"]), "see every pending approval"), "."));
  }
  return box;
}

/** The filter form of the unrated records: agent, action, result, age; its values live in the route. */
function recordFilters(params: URLSearchParams): HTMLFormElement {
  const agent = h("input", { name: "agent_id", value: params.get("agent_id") ?? "", autocomplete: "off", spellcheck: false });
  const action = h("input", { name: "action", value: params.get("action") ?? "", autocomplete: "off", spellcheck: false });
  const result = h(
    "select",
    { name: "result" },
    h("option", { value: "" }, "any"),
    ...RESULTS.map((value) => h("option", { value, selected: params.get("result") === value }, value)),
  );
  const age = h(
    "select",
    { name: "age" },
    h("option", { value: "" }, "any time"),
    ...AGES.map(({ value, label }) => h("option", { value, selected: params.get("age") === value }, label)),
  );
  return h(
    "form",
    {
      class: "filters",
      role: "search",
      "aria-label": "Filter records waiting for a rating",
      onsubmit: (event) => {
        event.preventDefault();
        navigate(
          route(["inbox"], {
            agent_id: agent.value.trim(),
            action: action.value.trim(),
            result: result.value,
            age: age.value,
          }),
        );
      },
    },
    field("Agent", agent),
    field("Action", action),
    field("Result", result),
    field("Written in", age),
    h("div", { class: "filter-actions" }, h("button", { type: "submit" }, "Filter"), link(route(["inbox"]), "Clear")),
  );
}

function unratedQuery(params: URLSearchParams): RecordQuery {
  const query: RecordQuery = { rated: false, limit: RECORDS_SHOWN };
  for (const name of ["agent_id", "action"] as const) {
    const value = params.get(name);
    if (value !== null && value !== "") {
      query[name] = value;
    }
  }
  const result = RESULTS.find((value) => value === params.get("result"));
  if (result !== undefined) {
    query.result = result;
  }
  const age = AGES.find(({ value }) => value === params.get("age"));
  if (age !== undefined) {
    query.since = new Date(Date.now() - age.ms).toISOString();
  }
  return query;
}

/** The keyboard shortcuts, said on the page. */
function shortcuts(): HTMLElement {
  return h(
    "details",
    { class: "shortcuts" },
    h("summary", {}, "Keyboard shortcuts"),
    h(
      "dl",
      { class: "detail" },
      h("dt", {}, h("kbd", {}, "j"), " / ", h("kbd", {}, "k")),
      h("dd", {}, "Next / previous record waiting for a rating"),
      ...RATINGS.flatMap(({ label, key }) => [h("dt", {}, h("kbd", {}, key)), h("dd", {}, `${label} the record in focus`)]),
    ),
  );
}

/**
 * The records waiting for a rating: a table whose rows take focus (one at a
 * time in the tab order, moved with j and k), each rated with its buttons or
 * a, f, r; a rated row leaves and the focus moves to the next.
 */
class UnratedList {
  readonly #said = h("p", { class: "visually-hidden", role: "status" });
  /** What a bulk rating did; kept outside the list, which it reloads. */
  readonly #notice = h("div", { class: "bulk-outcome", "aria-live": "polite" });
  #rows: HTMLTableRowElement[] = [];

  readonly #reload: () => void;

  constructor(reload: () => void) {
    this.#reload = reload;
  }

  get status(): HTMLElement {
    return this.#said;
  }

  get notice(): HTMLElement {
    return this.#notice;
  }

  show(records: ActionRecord[]): Node {
    const fragment = document.createDocumentFragment();
    if (records.length === 0) {
      this.#rows = [];
      fragment.append(h("p", { class: "empty" }, "Every completed record is rated."));
      return fragment;
    }
    this.#rows = records.map((record, index) => this.#row(record, index === 0));
    const table = h(
      "table",
      { class: "list unrated" },
      h("caption", { class: "visually-hidden" }, "Records waiting for a rating, newest first"),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ...["Time", "Agent", "Action", "Resource", "Outcome", "Workflow"].map((name) => h("th", { scope: "col" }, name)),
          h("th", { scope: "col" }, can("rate") ? "Rate" : h("span", { class: "visually-hidden" }, "Open")),
        ),
      ),
      h("tbody", {}, ...this.#rows),
    );
    fragment.append(table, this.#bulk(records));
    return fragment;
  }

  /**
   * A live update: the records again, shown only if they changed, with the
   * focus kept on the record it was on.
   */
  update(records: ActionRecord[], region: HTMLElement): void {
    const ids = records.map((record) => record.aar_id ?? "").join(" ");
    if (ids === this.#rows.map((row) => row.dataset.aarId).join(" ")) {
      return;
    }
    const focused = this.#current()?.dataset.aarId;
    replace(region, this.show(records));
    const again = this.#rows.find((row) => row.dataset.aarId === focused);
    if (again !== undefined) {
      this.#focus(again);
      again.focus();
    }
  }

  #row(record: ActionRecord, first: boolean): HTMLTableRowElement {
    // Records to rate are completed: the server shows their ids.
    const aarId = record.aar_id ?? "";
    const label = `${record.action} ${record.resource} (${aarId})`;
    const row = h(
      "tr",
      {
        "data-aar-id": aarId,
        "data-outcome": outcome(record),
        tabindex: first ? 0 : -1,
        "aria-label": `${record.action} ${record.resource}, ${outcome(record)}, by ${record.agent_id}`,
      },
      h("td", { "data-label": "Time" }, time(record.created_at)),
      h("td", { "data-label": "Agent" }, link(route(["agent", record.agent_id]), record.agent_id)),
      h("td", { "data-label": "Action" }, record.action),
      h("td", { "data-label": "Resource" }, h("code", {}, record.resource)),
      h("td", { "data-label": "Outcome" }, badge(outcome(record))),
      h(
        "td",
        { "data-label": "Workflow" },
        link(route(["workflow", record.provenance_ref], { record: aarId }), idElement(record.provenance_ref)),
      ),
      h(
        "td",
        {},
        can("rate")
          ? h(
              "div",
              { class: "rate-buttons" },
              ...RATINGS.map(({ rating, label: word }) =>
                h(
                  "button",
                  {
                    type: "button",
                    class: `rate rate-${rating}`,
                    tabindex: -1,
                    "aria-label": `${word} ${label}`,
                    onclick: () => void this.#rate(row, record, rating),
                  },
                  word,
                ),
              ),
            )
          : h("span", { class: "muted" }, "read-only"),
      ),
    );
    row.addEventListener("focus", () => this.#focus(row));
    return row;
  }

  /** Makes `row` the one row in the tab order. */
  #focus(row: HTMLTableRowElement): void {
    for (const other of this.#rows) {
      other.tabIndex = other === row ? 0 : -1;
    }
  }

  #current(): HTMLTableRowElement | undefined {
    const active = document.activeElement;
    return this.#rows.find((row) => row === active || row.contains(active)) ?? undefined;
  }

  /** The shortcuts: j/k move, a/f/r rate the row in focus. Answers whether the key was one. */
  key(key: string): boolean {
    if (key === "j" || key === "k") {
      const current = this.#current();
      const at = current === undefined ? -1 : this.#rows.indexOf(current);
      const next = this.#rows[key === "j" ? Math.min(at + 1, this.#rows.length - 1) : Math.max(at - 1, 0)];
      next?.focus();
      return next !== undefined;
    }
    const choice = RATINGS.find((item) => item.key === key);
    const row = this.#current();
    if (choice === undefined || row === undefined || !can("rate")) {
      return false;
    }
    row.querySelector<HTMLButtonElement>(`button.rate-${choice.rating}`)?.click();
    return true;
  }

  async #rate(row: HTMLTableRowElement, record: ActionRecord, rating: Rating): Promise<void> {
    const buttons = [...row.querySelectorAll("button")];
    for (const button of buttons) {
      button.disabled = true;
    }
    try {
      await client().feedback(record.aar_id ?? "", { rating });
      const at = this.#rows.indexOf(row);
      this.#rows.splice(at, 1);
      row.remove();
      replace(this.#said, `Rated ${rating}: ${record.action} ${record.resource}.`);
      const next = this.#rows[Math.min(at, this.#rows.length - 1)];
      if (next !== undefined) {
        this.#focus(next);
        next.focus();
      } else {
        this.#reload();
      }
    } catch (error) {
      if (!signedOut(error)) {
        row.after(h("tr", { class: "row-problem" }, h("td", { colspan: 7 }, problemBox(error))));
      }
      for (const button of buttons) {
        button.disabled = false;
      }
    }
  }

  /** Approve every unrated success of one workflow (those listed name the choices), after a confirmation. */
  #bulk(records: ActionRecord[]): Node {
    const workflows = [...new Set(records.filter((record) => record.result === "success").map((record) => record.provenance_ref))];
    if (!can("rate") || workflows.length === 0) {
      return document.createDocumentFragment();
    }
    const select = h("select", { name: "provenance_ref" }, ...workflows.map((ref) => h("option", { value: ref }, ref)));
    const chosen = h("code", {});
    const dialog = confirmDialog({
      headingId: "bulk-title",
      heading: "Approve every success of this workflow?",
      body: [
        h(
          "p",
          {},
          "Every completed record of ",
          chosen,
          " whose result is success and that nobody has rated yet will be rated approved, as this key. A rating cannot be changed.",
        ),
      ],
      confirm: "Approve all successes",
      pending: "Rating…",
      act: async () => {
        const answer = await client().rateWorkflow({ provenance_ref: select.value, result: "success", rating: "approved" });
        replace(this.#notice, h("p", { class: "notice", role: "status" }, `Approved ${answer.rated} record${answer.rated === 1 ? "" : "s"}.`));
      },
      done: this.#reload,
    });
    // The dialog holds a form of its own, so it stands beside this one, not in it.
    const fragment = document.createDocumentFragment();
    fragment.append(
      h(
        "form",
        {
          class: "bulk",
          "aria-label": "Approve all successes of a workflow",
          onsubmit: (event) => {
            event.preventDefault();
            replace(chosen, select.value);
            dialog.showModal();
          },
        },
        field("Workflow", select),
        h("div", { class: "filter-actions" }, h("button", { type: "submit" }, "Approve all successes…")),
      ),
      dialog,
    );
    return fragment;
  }
}

export async function inboxView(root: HTMLElement, current: Route): Promise<() => void> {
  const approvalsRegion = h("div", { "aria-live": "polite" });
  const recordsRegion = h("div", {});
  const fetchApprovals = () => client().approvalsPage({ status: "pending", limit: APPROVALS_SHOWN });
  const showApprovals = (page: ApprovalPage): Node =>
    approvalsList(page.approvals, page.next_cursor !== undefined, () => void loadApprovals());
  // The first load says it is loading; a live update replaces the list
  // when it has the new one, unless a note is being written on an approval
  // still pending: then only the cards decided meanwhile leave.
  let approvalsShown = false;
  const loadApprovals = async (): Promise<void> => {
    if (!approvalsShown) {
      approvalsShown = true;
      await load(approvalsRegion, "the approvals waiting", fetchApprovals, showApprovals);
      return;
    }
    try {
      const page = await fetchApprovals();
      const pending = new Set(page.approvals.map((approval) => approval.approval_id));
      const cards = [...approvalsRegion.querySelectorAll<HTMLElement>("article[data-approval-id]")];
      const open = (card: HTMLElement): boolean => pending.has(card.dataset.approvalId ?? "");
      const writing = cards.some((card) => open(card) && [...card.querySelectorAll("textarea")].some((note) => note.value !== ""));
      const still = page.approvals.every((approval) => cards.some((card) => card.dataset.approvalId === approval.approval_id));
      if (writing && still) {
        // The note being written stays; only the cards decided meanwhile leave.
        for (const card of cards.filter((card) => !open(card))) {
          card.remove();
        }
      } else {
        replace(approvalsRegion, showApprovals(page));
      }
    } catch (error) {
      signedOut(error);
    }
  };
  const unrated = new UnratedList(() => void loadRecords());
  let recordsShown = false;
  const loadRecords = async (): Promise<void> => {
    const fetchRecords = () => client().recordsPage(unratedQuery(current.params));
    if (!recordsShown) {
      recordsShown = true;
      await load(recordsRegion, "the records waiting for a rating", fetchRecords, (page) => unrated.show(page.records));
      return;
    }
    try {
      unrated.update((await fetchRecords()).records, recordsRegion);
    } catch (error) {
      signedOut(error);
    }
  };
  root.append(
    h("h1", { tabindex: -1 }, "Inbox"),
    h(
      "p",
      { class: "lede" },
      can("decide") || can("rate")
        ? "What waits for you: actions to approve or deny before they happen, and outcomes to rate."
        : "What waits for a reviewer: actions to approve before they happen, and outcomes to rate. This key reads them; it may not decide or rate.",
    ),
    h(
      "section",
      { "aria-labelledby": "inbox-approvals-title" },
      h("h2", { id: "inbox-approvals-title" }, "Waiting for approval, oldest first"),
      approvalsRegion,
    ),
    h(
      "section",
      { "aria-labelledby": "inbox-records-title" },
      h("h2", { id: "inbox-records-title" }, "Waiting for a rating"),
      shortcuts(),
      recordFilters(current.params),
      unrated.status,
      unrated.notice,
      recordsRegion,
    ),
  );
  const onKey = (event: KeyboardEvent): void => {
    const target = event.target as HTMLElement;
    if (event.altKey || event.ctrlKey || event.metaKey || target.closest("input, textarea, select, dialog") !== null) {
      return;
    }
    if (unrated.key(event.key)) {
      event.preventDefault();
    }
  };
  document.addEventListener("keydown", onKey);
  const stopApprovals = follow({
    wanted: (event) => event.type === "approval.requested" || event.type === "approval.decided",
    reload: loadApprovals,
    pollMs: POLL_MS,
  });
  // A success has no event: the list is fetched again every little while too.
  const stopRecords = follow({
    wanted: (event) => event.type === "record.failed" || event.type === "record.rated",
    reload: loadRecords,
    pollMs: RECORDS_POLL_MS,
  });
  return () => {
    document.removeEventListener("keydown", onKey);
    stopApprovals();
    stopRecords();
  };
}
