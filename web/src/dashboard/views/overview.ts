// The organisation at a glance over a chosen window (24 h by hour, 7 or 30
// days by day): records, denial and error rates, ratings given, approvals
// decided and how long they waited, and the budgets of the busiest chains
// against their limits. Each chart has its table twin (charts.ts). The page
// follows the organisation's events and fetches again every minute.

import type { BudgetUse, DashboardWindow, Overview } from "mandate-sdk/web";
import { entry, h, link, replace } from "../dom.js";
import { bareAgent, idElement, time } from "../format.js";
import { follow } from "../live.js";
import { type Route, navigate, route } from "../router.js";
import { client } from "../session.js";
import { WINDOWS, field, load, signedOut } from "../ui.js";

type Charts = typeof import("../charts.js");

/** The overview is fetched again this often (most records have no event). */
const POLL_MS = 60_000;

const percent = (value: number): string => `${(value * 100).toFixed(1)} %`;

const perRecord = (count: number, records: number): string => percent(records === 0 ? 0 : count / records);

function seconds(ms: number | undefined): string {
  return ms === undefined ? "—" : `${(ms / 1000).toFixed(1)} s`;
}

function windowForm(current: DashboardWindow): HTMLFormElement {
  const select = h(
    "select",
    { name: "window" },
    ...WINDOWS.map((value) => h("option", { value, selected: value === current }, value)),
  );
  return h(
    "form",
    {
      class: "filters",
      "aria-label": "Choose the window",
      onsubmit: (event) => {
        event.preventDefault();
        navigate(route(["overview"], { window: select.value }));
      },
    },
    field("Window", select),
    h("div", { class: "filter-actions" }, h("button", { type: "submit" }, "Show")),
  );
}

function budgetTable(budgets: BudgetUse[]): HTMLElement {
  if (budgets.length === 0) {
    return h("p", { class: "empty" }, "No chain has a budget in use.");
  }
  return h(
    "table",
    { class: "list budgets" },
    h("caption", { class: "visually-hidden" }, "Spend against budgets, busiest chains first"),
    h(
      "thead",
      {},
      h("tr", {}, ...["Agent", "Workflow", "Budget", "Used", "Limit", "Use"].map((name) => h("th", { scope: "col" }, name))),
    ),
    h(
      "tbody",
      {},
      ...budgets.map((budget) => {
        const money = budget.budget === "max_spend_usd";
        const amount = (value: number): string => (money ? `$${value.toFixed(2)}` : String(value));
        return h(
          "tr",
          { "data-jth": budget.jth },
          h("td", { "data-label": "Agent" }, link(route(["agent", bareAgent(budget.agent_id)]), bareAgent(budget.agent_id))),
          h("td", { "data-label": "Workflow" }, link(route(["workflow", budget.provenance_ref]), idElement(budget.provenance_ref))),
          h("td", { "data-label": "Budget" }, money ? "spend" : "actions"),
          h("td", { "data-label": "Used", class: "number" }, amount(budget.used)),
          h("td", { "data-label": "Limit", class: "number" }, amount(budget.limit)),
          h(
            "td",
            { "data-label": "Use" },
            h("meter", { min: 0, max: 100, low: 80, high: 99, optimum: 0, value: budget.percent, "aria-label": `${budget.percent.toFixed(0)} % used` }),
            ` ${budget.percent.toFixed(0)} %`,
          ),
        );
      }),
    ),
  );
}

export async function overviewView(root: HTMLElement, current: Route): Promise<() => void> {
  const window = WINDOWS.find((value) => value === current.params.get("window")) ?? "24h";
  const region = h("div", { "aria-live": "polite" });
  root.append(
    h("h1", { tabindex: -1 }, "Overview"),
    h("p", { class: "lede" }, "What the organisation's agents did, and what its reviewers did about it."),
    windowForm(window),
    region,
  );
  let destroy: Array<() => void> = [];
  let shown: string | undefined;
  const show = ([value, { chart }]: [Overview, Charts]): Node => {
    shown = JSON.stringify(value);
    for (const stop of destroy) {
      stop();
    }
    const hourly = value.bucket === "hour";
    const timeLabel = (iso: string): string => (hourly ? time(iso).slice(0, 16) : iso.slice(0, 10));
    const times = value.series.map((bucket) => bucket.start);
    const t = value.totals;
    const charts = [
      chart({
        title: `Records per ${value.bucket}`,
        summary: `${t.records} records, ${t.denied} denied, ${t.errors} errors.`,
        times,
        timeLabel,
        series: [
          { label: "Records", values: value.series.map((b) => b.records), colour: "#1d4ed8", bars: true },
          { label: "Denied", values: value.series.map((b) => b.denied), colour: "#991b1b" },
          { label: "Errors", values: value.series.map((b) => b.errors), colour: "#c2410c" },
        ],
      }),
      chart({
        // A bucket counts no successes, so its errors are shown per record
        // made, not as the totals' error rate (errors over outcomes).
        title: "Denials and errors per record",
        summary: `Denial rate ${percent(t.denial_rate)}; ${perRecord(t.errors, t.records)} errors per record made over the window.`,
        times,
        timeLabel,
        series: [
          { label: "Denial rate", values: value.series.map((b) => (b.records === 0 ? null : b.denied / b.records)), colour: "#991b1b", format: percent },
          { label: "Errors per record", values: value.series.map((b) => (b.records === 0 ? null : b.errors / b.records)), colour: "#c2410c", format: percent },
        ],
        yMax: 1,
      }),
      chart({
        title: "Ratings given and approvals decided",
        summary: `${t.ratings} ratings given, ${t.approvals_decided} approvals decided.`,
        times,
        timeLabel,
        series: [
          { label: "Ratings", values: value.series.map((b) => b.ratings), colour: "#0e7490", bars: true },
          { label: "Approvals decided", values: value.series.map((b) => b.approvals_decided), colour: "#6d28d9" },
        ],
      }),
      chart({
        title: "Approval wait",
        summary: `Approvals waited ${seconds(t.approval_wait_ms_mean)} on average.`,
        times,
        timeLabel,
        series: [
          { label: "Mean wait (s)", values: value.series.map((b) => (b.approval_wait_ms_mean === undefined ? null : b.approval_wait_ms_mean / 1000)), colour: "#6d28d9" },
          { label: "Longest wait (s)", values: value.series.map((b) => (b.approval_wait_ms_max === undefined ? null : b.approval_wait_ms_max / 1000)), colour: "#a16207" },
        ],
      }),
    ];
    destroy = charts.map((item) => item.destroy);
    return h(
      "div",
      { class: "overview" },
      h(
        "dl",
        { class: "detail totals" },
        entry("Window", `${time(value.from)} to ${time(value.to)}`),
        entry("Records", String(t.records)),
        entry("Denial rate", percent(t.denial_rate)),
        entry("Error rate", percent(t.error_rate)),
        entry("Ratings given", String(t.ratings)),
        entry("Approvals decided", String(t.approvals_decided)),
        entry("Mean approval wait", seconds(t.approval_wait_ms_mean)),
      ),
      h("div", { class: "charts" }, ...charts.map((item) => item.element)),
      h(
        "section",
        { "aria-labelledby": "budgets-title" },
        h("h2", { id: "budgets-title" }, "Spend against budgets, busiest chains"),
        budgetTable(value.budgets),
      ),
    );
  };
  // The chart library is loaded with the first chart, not with the dashboard.
  const fetch = (): Promise<[Overview, Charts]> => Promise.all([client().overview({ window }), import("../charts.js")]);
  // The first load says it is loading; a live update redraws only what changed.
  const reload = async (): Promise<void> => {
    if (shown === undefined) {
      await load(region, "the overview", fetch, show);
      return;
    }
    try {
      const fetched = await fetch();
      if (JSON.stringify(fetched[0]) !== shown) {
        replace(region, show(fetched));
      }
    } catch (error) {
      signedOut(error);
    }
  };
  const stop = follow({ wanted: () => true, reload, pollMs: POLL_MS });
  return () => {
    stop();
    for (const item of destroy) {
      item();
    }
  };
}
