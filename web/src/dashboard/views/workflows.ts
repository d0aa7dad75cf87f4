// The list of recent workflows, most recently active first, searchable by
// provenance_ref, agent, human and time range (the search lives in the
// route).

import type { Workflow, WorkflowQuery } from "mandate-sdk/web";
import { h, link } from "../dom.js";
import { badge, fromLocalInput, human, idElement, time, toLocalInput } from "../format.js";
import { type Route, navigate, route } from "../router.js";
import { client } from "../session.js";
import { Pages, field, load } from "../ui.js";

const PAGE_SIZE = 20;

function searchForm(params: URLSearchParams): HTMLFormElement {
  const provenance = h("input", {
    name: "provenance_ref",
    value: params.get("provenance_ref") ?? "",
    placeholder: "prov_…",
    autocomplete: "off",
    spellcheck: false,
  });
  const agent = h("input", {
    name: "agent_id",
    value: params.get("agent_id") ?? "",
    placeholder: "research-bot",
    autocomplete: "off",
    spellcheck: false,
  });
  const humanRef = h("input", {
    name: "human_ref",
    value: params.get("human_ref") ?? "",
    placeholder: "sha256:…",
    autocomplete: "off",
    spellcheck: false,
  });
  const since = h("input", {
    name: "since",
    type: "datetime-local",
    value: toLocalInput(params.get("since") ?? undefined),
  });
  const until = h("input", {
    name: "until",
    type: "datetime-local",
    value: toLocalInput(params.get("until") ?? undefined),
  });
  return h(
    "form",
    {
      class: "filters",
      role: "search",
      "aria-label": "Search workflows",
      onsubmit: (event) => {
        event.preventDefault();
        navigate(
          route(["workflows"], {
            provenance_ref: provenance.value.trim(),
            agent_id: agent.value.trim(),
            human_ref: humanRef.value.trim(),
            since: fromLocalInput(since.value),
            until: fromLocalInput(until.value),
          }),
        );
      },
    },
    field("Provenance ref", provenance),
    field("Agent", agent),
    field("Human reference", humanRef),
    field("Active since", since),
    field("Active until", until),
    h(
      "div",
      { class: "filter-actions" },
      h("button", { type: "submit" }, "Search"),
      h("a", { href: "#/workflows", class: "button-link" }, "Clear"),
    ),
  );
}

function workflowRow(workflow: Workflow): HTMLTableRowElement {
  return h(
    "tr",
    { "data-provenance-ref": workflow.provenance_ref },
    h("td", { "data-label": "Workflow" }, link(route(["workflow", workflow.provenance_ref]), idElement(workflow.provenance_ref))),
    h("td", { "data-label": "Root agent" }, link(route(["agent", workflow.root_agent_id]), workflow.root_agent_id)),
    h(
      "td",
      { "data-label": "Human" },
      link(route(["workflows"], { human_ref: workflow.human_ref }), human(workflow.human_ref, workflow.human_label)),
    ),
    h("td", { "data-label": "Assurance" }, badge(workflow.assurance_level)),
    h("td", { "data-label": "Records", class: "number" }, workflow.total_records),
    h("td", { "data-label": "Started" }, time(workflow.created_at)),
    h("td", { "data-label": "Last activity" }, time(workflow.last_activity)),
  );
}

function workflowTable(workflows: Workflow[]): HTMLElement {
  if (workflows.length === 0) {
    return h("p", { class: "empty" }, "No workflow matches.");
  }
  return h(
    "table",
    { class: "list" },
    h("caption", { class: "visually-hidden" }, "Workflows"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "Workflow"),
        h("th", { scope: "col" }, "Root agent"),
        h("th", { scope: "col" }, "Human"),
        h("th", { scope: "col" }, "Assurance"),
        h("th", { scope: "col", class: "number" }, "Records"),
        h("th", { scope: "col" }, "Started"),
        h("th", { scope: "col" }, "Last activity"),
      ),
    ),
    h("tbody", {}, ...workflows.map(workflowRow)),
  );
}

export async function workflowsView(root: HTMLElement, current: Route): Promise<void> {
  const params = current.params;
  const query: WorkflowQuery = { limit: PAGE_SIZE };
  for (const name of ["provenance_ref", "agent_id", "human_ref", "since", "until"] as const) {
    const value = params.get(name);
    if (value !== null && value !== "") {
      query[name] = value;
    }
  }
  const pages = new Pages();
  const results = h("div", { class: "results", "aria-live": "polite" });
  root.append(
    h("h1", { tabindex: -1 }, "Workflows"),
    h("p", { class: "lede" }, "Recent workflows, most recently active first. Open one to see its execution graph and records."),
    searchForm(params),
    results,
  );
  const show = async (): Promise<void> => {
    await load(
      results,
      "workflows",
      () => {
        const page: WorkflowQuery = { ...query };
        if (pages.current !== undefined) {
          page.cursor = pages.current;
        }
        return client().workflowsPage(page);
      },
      (page) => {
        pages.loaded(page.next_cursor);
        const fragment = document.createDocumentFragment();
        fragment.append(workflowTable(page.workflows), pages.controls("Workflow", () => void show()));
        return fragment;
      },
    );
  };
  await show();
}
