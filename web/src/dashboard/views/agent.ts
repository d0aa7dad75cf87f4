// An agent: its reputation with the numbers behind it, its trust beside it
// (the parts, who vouches for it, its neighbourhood; vouching and
// withdrawing for a key that may vouch), its history (reputation over time
// and outcomes per day, each chart with its table twin), and its records.

import type { AgentHistory, AgentReputation } from "mandate-sdk/web";
import { entry, h, link } from "../dom.js";
import { score } from "../format.js";
import { RecordsPanel } from "../records.js";
import { type Route, navigate, route } from "../router.js";
import { client } from "../session.js";
import { TrustPanel } from "../trust.js";
import { field, load } from "../ui.js";

/** How many days of history the page offers. */
const SPANS = [14, 30, 90];

function history(value: AgentHistory, chart: typeof import("../charts.js").chart): { element: HTMLElement; destroy: () => void } {
  const times = value.days.map((day) => day.day);
  const timeLabel = (iso: string): string => iso.slice(0, 10);
  const last = value.days.at(-1);
  const sum = (pick: (day: AgentHistory["days"][number]) => number): number => value.days.reduce((total, day) => total + pick(day), 0);
  const charts = [
    chart({
      title: "Combined reputation",
      summary: last === undefined ? "No history yet." : `Now ${score(last.combined_reputation)}.`,
      times,
      timeLabel,
      series: [{ label: "Combined reputation", values: value.days.map((day) => day.combined_reputation), colour: "#1d4ed8", format: score }],
      yMax: 1,
    }),
    chart({
      title: "Outcomes per day",
      summary: `${sum((day) => day.successes)} successes, ${sum((day) => day.errors)} errors, ${sum((day) => day.denied)} denied; rated ${sum((day) => day.approved)} approved, ${sum((day) => day.flagged)} flagged, ${sum((day) => day.rejected)} rejected.`,
      times,
      timeLabel,
      series: [
        { label: "Successes", values: value.days.map((day) => day.successes), colour: "#15803d", bars: true },
        { label: "Errors", values: value.days.map((day) => day.errors), colour: "#c2410c" },
        { label: "Denied", values: value.days.map((day) => day.denied), colour: "#991b1b" },
        { label: "Flagged or rejected", values: value.days.map((day) => day.flagged + day.rejected), colour: "#a16207" },
      ],
    }),
  ];
  return {
    element: h("div", { class: "charts" }, ...charts.map((item) => item.element)),
    destroy: () => {
      for (const item of charts) {
        item.destroy();
      }
    },
  };
}

function meter(label: string, value: number, name: string): HTMLElement {
  const id = `score-${name}`;
  return h(
    "div",
    { class: "score", "data-score": name },
    h("span", { id, class: "score-label" }, label),
    h("meter", { min: 0, max: 1, low: 0.4, high: 0.7, optimum: 1, value, "aria-labelledby": id }),
    h("span", { class: "score-value" }, score(value)),
  );
}

function reputation(value: AgentReputation): HTMLElement {
  const counts = value.counts;
  return h(
    "div",
    { class: "reputation" },
    meter("Combined reputation", value.combined_reputation, "combined"),
    meter("Execution score", value.execution_score, "execution"),
    meter("Feedback score", value.feedback_score, "feedback"),
    h("p", { class: "muted" }, "Combined = 0.6 × execution + 0.4 × feedback; each score starts at 0.5 for a new agent."),
    h(
      "dl",
      { class: "detail counts-list" },
      entry("Total actions", String(value.total_actions)),
      entry("Successes", String(counts.successes)),
      entry("Failures (errors and denials)", String(counts.failures)),
      entry("Pending", String(counts.pending)),
      entry("Approved", String(counts.approved)),
      entry("Flagged", String(counts.flagged)),
      entry("Rejected", String(counts.rejected)),
      entry("Human feedback", value.has_human_feedback ? "yes" : "none yet"),
    ),
  );
}

function lookup(current: string): HTMLFormElement {
  const input = h("input", { name: "agent_id", value: current, autocomplete: "off", spellcheck: false, required: true });
  return h(
    "form",
    {
      class: "filters",
      role: "search",
      "aria-label": "Look up an agent",
      onsubmit: (event) => {
        event.preventDefault();
        navigate(route(["agent", input.value.trim()]));
      },
    },
    field("Agent", input),
    h("div", { class: "filter-actions" }, h("button", { type: "submit" }, "Show")),
  );
}

export async function agentView(root: HTMLElement, current: Route): Promise<() => void> {
  const agentId = current.segments[1] ?? "";
  root.append(h("h1", { tabindex: -1 }, agentId === "" ? "Agents" : `Agent ${agentId}`), lookup(agentId));
  if (agentId === "") {
    root.append(h("p", { class: "lede" }, "Name an agent to see its reputation, trust and records, or ", link(route(["agents"]), "see every agent"), "."));
    return () => undefined;
  }
  const days = SPANS.find((span) => String(span) === current.params.get("days")) ?? SPANS[0] ?? 14;
  const reputationRegion = h("div", { "aria-live": "polite" });
  const historyRegion = h("div", {});
  const span = h(
    "select",
    {
      name: "days",
      onchange: () => navigate(route(["agent", agentId], { days: span.value })),
    },
    ...SPANS.map((value) => h("option", { value, selected: value === days }, `${value} days`)),
  );
  let stopCharts: () => void = () => undefined;
  const trust = new TrustPanel(agentId);
  const records = new RecordsPanel({
    fixed: { agent_id: agentId },
    filters: ["action", "result", "since", "until"],
    onRated: () => {
      void load(reputationRegion, "the reputation", () => client().reputation(agentId), reputation);
      void trust.reload();
    },
  });
  root.append(
    h("section", { "aria-labelledby": "reputation-title" }, h("h2", { id: "reputation-title" }, "Reputation"), reputationRegion),
    trust.element,
    h(
      "section",
      { "aria-labelledby": "history-title" },
      h("h2", { id: "history-title" }, "History"),
      h("div", { class: "filters" }, field("Show the last", span)),
      historyRegion,
    ),
    h("section", { "aria-labelledby": "records-title" }, h("h2", { id: "records-title" }, "Recent records"), records.element),
  );
  await Promise.all([
    load(reputationRegion, "the reputation", () => client().reputation(agentId), reputation),
    // The chart library is loaded with the first chart, not with the dashboard.
    load(historyRegion, "the history", () => Promise.all([client().agentHistory(agentId, { days }), import("../charts.js")]), ([value, { chart }]) => {
      const drawn = history(value, chart);
      stopCharts = drawn.destroy;
      return drawn.element;
    }),
    trust.reload(),
    records.reload(),
  ]);
  return () => {
    stopCharts();
    trust.destroy();
  };
}
