// One workflow: its summary, its execution graph, and its records with
// filters, details and ratings. A rating redraws the graph in its colours;
// records written meanwhile appear without a reload.
// `?record=aar_…` opens that record's details once the page has loaded.

import type { WorkflowSummary } from "mandate-sdk/web";
import { entry, h, replace } from "../dom.js";
import { badge, idElement } from "../format.js";
import type { GraphView } from "../graph.js";
import { follow } from "../live.js";
import { RecordsPanel } from "../records.js";
import type { Route } from "../router.js";
import { client } from "../session.js";
import { load, signedOut } from "../ui.js";

/** How often an open workflow is fetched again while visible. */
const POLL_MS = 5_000;

function counts(title: string, values: Record<string, number>, asBadges: boolean): HTMLElement {
  const names = Object.keys(values).sort();
  return h(
    "div",
    { class: "counts" },
    h("h3", {}, title),
    names.length === 0
      ? h("p", { class: "muted" }, "none")
      : h(
          "ul",
          {},
          ...names.map((name) =>
            h("li", { "data-count": name }, asBadges ? badge(name) : h("span", {}, name), ` ${values[name] ?? 0}`),
          ),
        ),
  );
}

function summary(value: WorkflowSummary): HTMLElement {
  return h(
    "div",
    { class: "summary" },
    h(
      "dl",
      { class: "detail" },
      entry("Records", String(value.total_records)),
      entry("Agents", String(value.unique_agents)),
    ),
    counts("Results", value.results_by_type, true),
    counts("Actions", value.actions_by_type, false),
  );
}

export async function workflowView(root: HTMLElement, current: Route): Promise<() => void> {
  const provenanceRef = current.segments[1] ?? "";
  const summaryRegion = h("div", { "aria-live": "polite" });
  const graphRegion = h("div", { class: "graph-region" });
  // The summary shown and the graph drawn, as the server sent them: a live
  // update replaces only what changed (a redraw resets the graph's zoom and pan).
  let summed: string | undefined;
  const showSummary = (value: WorkflowSummary): HTMLElement => {
    summed = JSON.stringify(value);
    return summary(value);
  };
  let graph: GraphView | undefined;
  let drawn: string | undefined;
  const drawGraph = async (): Promise<void> => {
    graph?.destroy();
    await load(
      graphRegion,
      "the execution graph",
      // The graph library is loaded with the first graph, not with the dashboard.
      () => Promise.all([client().graph(provenanceRef), import("../graph.js")]),
      ([value, { GraphView }]) => {
        drawn = JSON.stringify(value);
        graph = new GraphView(value, { openRecord: (aarId) => void records.open(aarId) });
        return graph.element;
      },
    );
  };
  const records = new RecordsPanel({
    fixed: { provenance_ref: provenanceRef },
    filters: ["agent_id", "action", "result", "since", "until"],
    onRated: () => {
      void drawGraph();
      void load(summaryRegion, "the summary", () => client().provenance(provenanceRef), showSummary);
    },
  });
  root.append(
    h("h1", { tabindex: -1 }, "Workflow ", idElement(provenanceRef)),
    h("section", { "aria-labelledby": "summary-title" }, h("h2", { id: "summary-title" }, "Summary"), summaryRegion),
    h("section", { "aria-labelledby": "graph-title" }, h("h2", { id: "graph-title" }, "Execution graph"), graphRegion),
    h("section", { "aria-labelledby": "records-title" }, h("h2", { id: "records-title" }, "Records"), records.element),
  );
  await Promise.all([
    load(summaryRegion, "the summary", () => client().provenance(provenanceRef), showSummary),
    drawGraph(),
    records.reload(),
  ]);
  const opened = current.params.get("record");
  if (opened !== null && root.isConnected) {
    void records.open(opened);
  }
  // Live: what the page shows is fetched again, without loading states, at
  // each event of this workflow and every few seconds while the page is
  // visible (a record that ends in success has no event); only what changed
  // is drawn again.
  const update = async (): Promise<void> => {
    try {
      const [value, fresh] = await Promise.all([client().provenance(provenanceRef), client().graph(provenanceRef)]);
      if (JSON.stringify(value) !== summed) {
        replace(summaryRegion, showSummary(value));
      }
      if (JSON.stringify(fresh) !== drawn && graph !== undefined) {
        const { GraphView } = await import("../graph.js");
        graph.destroy();
        drawn = JSON.stringify(fresh);
        graph = new GraphView(fresh, { openRecord: (aarId) => void records.open(aarId) });
        replace(graphRegion, graph.element);
      }
    } catch (error) {
      // A failed update leaves the page as it was (the header says whether updates are live).
      signedOut(error);
    }
    await records.refresh();
  };
  const stop = follow({
    wanted: (event) => event.data.provenance_ref === provenanceRef,
    reload: update,
    pollMs: POLL_MS,
    loaded: true,
  });
  return () => {
    stop();
    graph?.destroy();
  };
}
