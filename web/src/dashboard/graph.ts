// The execution graph of a workflow drawn with Cytoscape.js and laid out
// by dagre (left to right: the human, the root token, delegated tokens, and
// each token's actions). Colours say how each action ended and how it was
// rated. Beside the canvas, the same graph as a nested list: readable by a
// screen reader and usable from the keyboard.

import cytoscape from "cytoscape";
import dagre, { type DagreLayoutOptions } from "cytoscape-dagre";
import type { GraphEdge, RecordNode, TokenNode, WorkflowGraph } from "mandate-sdk/web";
import { h, link, replace } from "./dom.js";
import { badge, outcome, shortId } from "./format.js";
import { navigate, route } from "./router.js";

cytoscape.use(dagre);

const COLOURS = {
  human: "#334155",
  token: "#1d4ed8",
  // An ended token is pale with dark text, so it never reads as a pending record's slate.
  inactive: "#fef2f2",
  inactiveText: "#7f1d1d",
  success: "#15803d",
  error: "#c2410c",
  timeout: "#a16207",
  cancelled: "#a16207",
  denied: "#991b1b",
  pending: "#475569",
  awaiting_approval: "#6d28d9",
  approved: "#0ea5e9",
  flagged: "#eab308",
  rejected: "#111827",
  edge: "#94a3b8",
  delegated: "#1d4ed8",
};

const STYLE: cytoscape.StylesheetJson = [
  {
    selector: "node",
    style: {
      label: "data(label)",
      color: "#ffffff",
      "font-size": 13,
      "text-wrap": "wrap",
      "text-max-width": "166px",
      "text-valign": "center",
      "text-halign": "center",
      shape: "round-rectangle",
      width: 176,
      height: 54,
    },
  },
  { selector: 'node[kind = "human"]', style: { shape: "ellipse", width: 120, "background-color": COLOURS.human } },
  { selector: 'node[kind = "token"]', style: { "background-color": COLOURS.token, height: 58, "font-weight": "bold" } },
  {
    selector: 'node[kind = "token"][status != "active"]',
    style: {
      "background-color": COLOURS.inactive,
      color: COLOURS.inactiveText,
      "border-width": 3,
      "border-style": "dashed",
      "border-color": COLOURS.denied,
    },
  },
  { selector: 'node[kind = "record"]', style: { width: 170, height: 50, "font-size": 12 } },
  ...(["success", "error", "timeout", "cancelled", "denied", "pending", "awaiting_approval"] as const).map((result) => ({
    selector: `node[outcome = "${result}"]`,
    style: { "background-color": COLOURS[result] },
  })),
  ...(["approved", "flagged", "rejected"] as const).map(
    (rating): cytoscape.StylesheetStyle => ({
      selector: `node[rating = "${rating}"]`,
      style: {
        "border-width": 6,
        "border-color": COLOURS[rating],
        "border-style": rating === "flagged" ? "dashed" : "solid",
      },
    }),
  ),
  { selector: "node:selected", style: { "overlay-color": "#2563eb", "overlay-opacity": 0.25, "overlay-padding": 6 } },
  {
    selector: "edge",
    style: {
      width: 1.5,
      "line-color": COLOURS.edge,
      "target-arrow-color": COLOURS.edge,
      "target-arrow-shape": "triangle",
      "curve-style": "bezier",
    },
  },
  {
    selector: 'edge[kind = "delegated"]',
    style: { width: 3, "line-color": COLOURS.delegated, "target-arrow-color": COLOURS.delegated },
  },
];

/** Below this zoom the labels are too small to read: start there and let the reader pan. */
const READABLE_ZOOM = 0.8;

const LAYOUT: DagreLayoutOptions = {
  name: "dagre",
  rankDir: "LR",
  rankSep: 60,
  nodeSep: 14,
  padding: 16,
  fit: true,
};

function truncate(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

function tokenLabel(node: TokenNode): string {
  return `${truncate(node.agent_id, 22)}\ndepth ${node.delegation_depth} · ${node.status}`;
}

function recordLabel(node: RecordNode): string {
  const ended = outcome(node);
  const rating = node.rating === undefined ? "" : ` · ${node.rating}`;
  return `${truncate(node.action, 20)} ${ended}${rating}\n${truncate(node.resource, 24)}`;
}

function elements(graph: WorkflowGraph): cytoscape.ElementDefinition[] {
  const nodes: cytoscape.ElementDefinition[] = graph.nodes.map((node) => {
    switch (node.kind) {
      case "human":
        return { data: { id: node.id, kind: "human", label: `human\n${node.assurance_level}` } };
      case "token":
        return {
          data: { id: node.id, kind: "token", status: node.status, agent: node.agent_id, label: tokenLabel(node) },
        };
      case "record":
        return {
          data: {
            id: node.id,
            kind: "record",
            outcome: outcome(node),
            rating: node.rating ?? "",
            agent: node.agent_id,
            label: recordLabel(node),
          },
        };
    }
  });
  const edges = graph.edges.map((edge: GraphEdge) => ({
    data: { id: `${edge.kind}:${edge.from}:${edge.to}`, source: edge.from, target: edge.to, kind: edge.kind },
  }));
  return [...nodes, ...edges];
}

/** What a list item says about a node, in words. */
function describe(node: cytoscape.NodeSingular, graph: Map<string, WorkflowGraph["nodes"][number]>): string {
  const source = graph.get(node.id());
  switch (source?.kind) {
    case "human":
      return `Human ${shortId(source.human_ref)} (${source.assurance_level})`;
    case "token":
      return `Agent ${source.agent_id}: token ${shortId(source.id)}, depth ${source.delegation_depth}, ${source.status}`;
    case "record":
      return `${source.action} ${source.resource}: ${outcome(source)}${source.deny_reason ? ` (${source.deny_reason})` : ""}${
        source.rating ? `, rated ${source.rating}` : ", not rated"
      }`;
    default:
      return node.id();
  }
}

function legend(): HTMLElement {
  const item = (swatch: string, label: string): HTMLElement =>
    h("li", {}, h("span", { class: `swatch swatch-${swatch}`, "aria-hidden": "true" }), label);
  return h(
    "ul",
    { class: "legend", "aria-label": "Legend" },
    item("human", "human"),
    item("token", "agent token"),
    item("inactive", "revoked or expired token"),
    item("success", "success"),
    item("error", "error"),
    item("timeout", "timeout or cancelled"),
    item("denied", "denied"),
    item("pending", "pending"),
    item("awaiting_approval", "awaiting approval"),
    item("approved", "approved (border)"),
    item("flagged", "flagged (dashed border)"),
    item("rejected", "rejected (border)"),
  );
}

/** The graph endpoint's answer; `truncated` says older records were left out. */
type Graph = WorkflowGraph & { truncated?: boolean };

export interface GraphActions {
  /** Shows a record's detail. */
  openRecord(aarId: string): void;
}

/** The drawn graph of one workflow; `destroy` when the view goes away. */
export class GraphView {
  readonly element: HTMLElement;
  readonly #graph: Graph;
  readonly #actions: GraphActions;
  readonly #canvas = h("div", { class: "graph-canvas", role: "img", "aria-label": "Execution graph of the workflow" });
  readonly #outline = h("div", { class: "graph-outline" });
  readonly #observer: ResizeObserver;
  #cy: cytoscape.Core | undefined;

  constructor(graph: Graph, actions: GraphActions) {
    this.#graph = graph;
    this.#actions = actions;
    const roots = graph.nodes.filter((node): node is TokenNode => node.kind === "token" && node.parent === undefined);
    this.element = h(
      "div",
      { class: "graph" },
      h(
        "p",
        { class: "graph-roots" },
        `Human ${shortId(graph.human_ref)} delegated to `,
        ...roots.flatMap((token, index) => [
          index === 0 ? null : ", ",
          link(route(["tokens", token.id]), token.agent_id),
          " (",
          badge(token.status),
          ")",
        ]),
      ),
      h(
        "div",
        { class: "graph-tools" },
        h("button", { type: "button", onclick: () => this.#zoom(1.25) }, "Zoom in"),
        h("button", { type: "button", onclick: () => this.#zoom(0.8) }, "Zoom out"),
        h("button", { type: "button", onclick: () => this.#cy?.fit(undefined, 16) }, "Fit"),
      ),
      h("p", { class: "muted graph-hint" }, "Drag to move the graph; select an action to see its record, a token to see its status."),
      graph.truncated
        ? h("p", { class: "muted" }, "Only the newest records are drawn; the table below lists them all.")
        : null,
      this.#canvas,
      legend(),
      h("details", { class: "graph-list" }, h("summary", {}, "The graph as a list"), this.#outline),
    );
    // Cytoscape needs a sized container: draw once the canvas is laid out,
    // and fit again whenever its size changes.
    this.#observer = new ResizeObserver(() => this.#resized());
    this.#observer.observe(this.#canvas);
  }

  #resized(): void {
    if (this.#canvas.clientWidth === 0) {
      return;
    }
    if (this.#cy === undefined) {
      this.#draw();
    } else {
      this.#cy.resize();
      this.#cy.fit(undefined, 16);
      this.#readable(this.#cy);
    }
  }

  /** Zooms a graph too wide to read when fitted in to a readable size, its left end in view. */
  #readable(cy: cytoscape.Core): void {
    if (cy.zoom() >= READABLE_ZOOM) {
      return;
    }
    cy.zoom(READABLE_ZOOM);
    const box = cy.elements().renderedBoundingBox();
    cy.panBy({ x: 16 - box.x1, y: (this.#canvas.clientHeight - box.h) / 2 - box.y1 });
  }

  #draw(): void {
    const cy = cytoscape({
      container: this.#canvas,
      elements: elements(this.#graph),
      style: STYLE,
      layout: LAYOUT,
      minZoom: 0.1,
      maxZoom: 2.5,
      userZoomingEnabled: false,
      boxSelectionEnabled: false,
      autoungrabify: true,
    });
    cy.on("tap", "node", (event) => this.#open(event.target as cytoscape.NodeSingular));
    this.#readable(cy);
    this.#cy = cy;
    this.#outlineFrom(cy);
    this.#canvas.dataset.ready = "true";
  }

  #zoom(factor: number): void {
    const cy = this.#cy;
    if (cy !== undefined) {
      cy.zoom({
        level: cy.zoom() * factor,
        renderedPosition: { x: this.#canvas.clientWidth / 2, y: this.#canvas.clientHeight / 2 },
      });
    }
  }

  #open(node: cytoscape.NodeSingular): void {
    const kind = node.data("kind") as string;
    if (kind === "record") {
      // A record whose id completes it is named by a hash of the id, which
      // opens nothing.
      if (node.id().startsWith("aar_")) {
        this.#actions.openRecord(node.id());
      }
    } else if (kind === "token") {
      navigate(route(["tokens", node.id()]));
    }
  }

  /** The nested list: each node under the node it came from, as the graph's edges say. */
  #outlineFrom(cy: cytoscape.Core): void {
    const sources = new Map(this.#graph.nodes.map((node) => [node.id, node]));
    const item = (node: cytoscape.NodeSingular): HTMLLIElement => {
      const kind = node.data("kind") as string;
      const text = describe(node, sources);
      const label =
        kind === "human"
          ? h("span", {}, text)
          : h(
              "button",
              {
                type: "button",
                class: "link-button",
                onclick: () => {
                  cy.elements().unselect();
                  node.select();
                  this.#open(node);
                },
              },
              text,
            );
      const children = node.outgoers().nodes();
      return h(
        "li",
        {
          "data-node-id": node.id(),
          "data-kind": kind,
          "data-outcome": (node.data("outcome") as string | undefined) ?? "",
          "data-rating": (node.data("rating") as string | undefined) ?? "",
          "data-status": (node.data("status") as string | undefined) ?? "",
          "data-agent": (node.data("agent") as string | undefined) ?? "",
        },
        label,
        children.length === 0 ? null : h("ul", {}, ...children.map((child) => item(child))),
      );
    };
    replace(this.#outline, h("ul", { class: "tree" }, ...cy.nodes().roots().map((root) => item(root as cytoscape.NodeSingular))));
  }

  destroy(): void {
    this.#observer.disconnect();
    this.#cy?.destroy();
  }
}
