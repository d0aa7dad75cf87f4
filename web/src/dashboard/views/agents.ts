// Every agent of the organisation: its combined reputation, execution and
// feedback scores, actions, denial and error rates over a chosen window,
// last activity, and a sparkline of its last 14 days' outcomes; searched
// by name and sorted by any column (the sort lives in the route). The list
// follows the organisation's events and fetches again every minute.

import type { AgentDayOutcomes, AgentPage, AgentQuery, AgentSort, AgentSummary, DashboardWindow } from "mandate-sdk/web";
import { h, link, replace } from "../dom.js";
import { bareAgent, score, time } from "../format.js";
import { follow } from "../live.js";
import { type Route, navigate, route } from "../router.js";
import { client } from "../session.js";
import { Pages, WINDOWS, field, load, signedOut } from "../ui.js";

const PAGE_SIZE = 50;
const POLL_MS = 60_000;

const COLUMNS: Array<{ sort: AgentSort; label: string }> = [
  { sort: "agent_id", label: "Agent" },
  { sort: "reputation", label: "Reputation" },
  { sort: "actions", label: "Actions" },
  { sort: "denial_rate", label: "Denial rate" },
  { sort: "error_rate", label: "Error rate" },
  { sort: "activity", label: "Last activity" },
];

const percent = (value: number): string => `${(value * 100).toFixed(1)} %`;

/** What each window counts: whole UTC days, so `24h` is today's and yesterday's. */
const SPANS: Record<DashboardWindow, string> = {
  "24h": "today and yesterday",
  "7d": "the last 7 days",
  "30d": "the last 30 days",
};

interface Chosen {
  window: DashboardWindow;
  q: string;
  sort: AgentSort;
  order: "asc" | "desc";
}

function chosen(params: URLSearchParams): Chosen {
  const sort = COLUMNS.find((column) => column.sort === params.get("sort"))?.sort ?? "activity";
  return {
    window: WINDOWS.find((value) => value === params.get("window")) ?? "7d",
    q: params.get("q") ?? "",
    sort,
    order: params.get("order") === "asc" ? "asc" : "desc",
  };
}

function to(choice: Chosen): string {
  return route(["agents"], { ...choice });
}

/** The last 14 days as small stacked bars (successes, errors, denials), an image named by its totals. */
export function sparkline(days: AgentDayOutcomes[]): SVGElement {
  const ns = "http://www.w3.org/2000/svg";
  const most = Math.max(1, ...days.map((day) => day.successes + day.errors + day.denied));
  const svg = document.createElementNS(ns, "svg");
  const width = days.length * 6;
  svg.setAttribute("viewBox", `0 0 ${width} 24`);
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", "24");
  svg.setAttribute("class", "sparkline");
  svg.setAttribute("role", "img");
  const sum = (key: keyof Omit<AgentDayOutcomes, "day">): number => days.reduce((total, day) => total + day[key], 0);
  svg.setAttribute(
    "aria-label",
    `Last ${days.length} days: ${sum("successes")} successes, ${sum("errors")} errors, ${sum("denied")} denied`,
  );
  days.forEach((day, index) => {
    let y = 24;
    for (const [count, colour] of [
      [day.successes, "#15803d"],
      [day.errors, "#c2410c"],
      [day.denied, "#991b1b"],
    ] as const) {
      const height = (count / most) * 24;
      if (height > 0) {
        const bar = document.createElementNS(ns, "rect");
        y -= height;
        bar.setAttribute("x", String(index * 6));
        bar.setAttribute("y", String(y));
        bar.setAttribute("width", "5");
        bar.setAttribute("height", String(height));
        bar.setAttribute("fill", colour);
        svg.append(bar);
      }
    }
  });
  return svg;
}

function searchForm(choice: Chosen): HTMLFormElement {
  const q = h("input", { name: "q", type: "search", value: choice.q, autocomplete: "off", spellcheck: false });
  const window = h(
    "select",
    { name: "window" },
    ...WINDOWS.map((value) => h("option", { value, selected: value === choice.window }, SPANS[value])),
  );
  return h(
    "form",
    {
      class: "filters",
      role: "search",
      "aria-label": "Search agents",
      onsubmit: (event) => {
        event.preventDefault();
        navigate(to({ ...choice, q: q.value.trim(), window: window.value as DashboardWindow }));
      },
    },
    field("Agent name starts with", q),
    field("Rates over", window),
    h("div", { class: "filter-actions" }, h("button", { type: "submit" }, "Search")),
  );
}

function header(column: { sort: AgentSort; label: string }, choice: Chosen): HTMLElement {
  const active = choice.sort === column.sort;
  const next: "asc" | "desc" = active && choice.order === "desc" ? "asc" : "desc";
  return h(
    "th",
    { scope: "col", "aria-sort": active ? (choice.order === "asc" ? "ascending" : "descending") : false },
    h(
      "a",
      { href: `#${to({ ...choice, sort: column.sort, order: next })}`, "aria-label": `${column.label}, sort ${next === "asc" ? "ascending" : "descending"}` },
      column.label,
      active ? (choice.order === "asc" ? " ▲" : " ▼") : "",
    ),
  );
}

function agentRow(agent: AgentSummary): HTMLTableRowElement {
  const name = bareAgent(agent.agent_id);
  return h(
    "tr",
    { "data-agent": name },
    h("td", { "data-label": "Agent" }, link(route(["agent", name]), name)),
    h(
      "td",
      { "data-label": "Reputation", class: "number" },
      // One child each: a cell is a two-column grid (label, value) on a phone.
      h(
        "span",
        {},
        h("strong", {}, score(agent.combined_reputation)),
        h("span", { class: "muted" }, ` exec ${score(agent.execution_score)} · feedback ${score(agent.feedback_score)}`),
      ),
    ),
    h("td", { "data-label": "Actions", class: "number" }, h("span", {}, `${agent.window.records}`, h("span", { class: "muted" }, ` of ${agent.total_actions}`))),
    h("td", { "data-label": "Denial rate", class: "number" }, percent(agent.window.denial_rate)),
    h("td", { "data-label": "Error rate", class: "number" }, percent(agent.window.error_rate)),
    h("td", { "data-label": "Last activity" }, time(agent.last_activity)),
    h("td", { "data-label": "14 days" }, sparkline(agent.recent)),
  );
}

export async function agentsView(root: HTMLElement, current: Route): Promise<() => void> {
  const choice = chosen(current.params);
  const pages = new Pages();
  const results = h("div", { class: "results", "aria-live": "polite" });
  root.append(
    h("h1", { tabindex: -1 }, "Agents"),
    h("p", { class: "lede" }, `Every agent of the organisation. Actions and rates count ${SPANS[choice.window]} (whole UTC days); scores are all time.`),
    searchForm(choice),
    results,
  );
  const fetchPage = (): Promise<AgentPage> => {
    const query: AgentQuery = { window: choice.window, sort: choice.sort, order: choice.order, limit: PAGE_SIZE };
    if (choice.q !== "") {
      query.q = choice.q;
    }
    if (pages.current !== undefined) {
      query.cursor = pages.current;
    }
    return client().agentsPage(query);
  };
  let shown: string | undefined;
  const render = (page: AgentPage): Node => {
    shown = JSON.stringify(page);
    pages.loaded(page.next_cursor);
    const fragment = document.createDocumentFragment();
    if (page.agents.length === 0) {
      fragment.append(h("p", { class: "empty" }, choice.q === "" ? "No agent has acted yet." : "No agent matches."));
      return fragment;
    }
    fragment.append(
      h(
        "table",
        { class: "list agents" },
        h("caption", { class: "visually-hidden" }, "Agents"),
        h("thead", {}, h("tr", {}, ...COLUMNS.map((column) => header(column, choice)), h("th", { scope: "col" }, "14 days"))),
        h("tbody", {}, ...page.agents.map(agentRow)),
      ),
      pages.controls("Agent", () => void show(true)),
    );
    return fragment;
  };
  const show = async (loading = shown === undefined): Promise<void> => {
    if (loading) {
      await load(results, "the agents", fetchPage, render);
      return;
    }
    try {
      const page = await fetchPage();
      if (JSON.stringify(page) !== shown) {
        replace(results, render(page));
      }
    } catch (error) {
      signedOut(error);
    }
  };
  return follow({
    wanted: (event) => event.type.startsWith("record."),
    reload: () => show(),
    pollMs: POLL_MS,
  });
}
