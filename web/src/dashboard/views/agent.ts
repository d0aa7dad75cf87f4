// An agent: its reputation with the numbers behind it, and its records.

import type { AgentReputation } from "mandate-sdk/web";
import { entry, h } from "../dom.js";
import { score } from "../format.js";
import { RecordsPanel } from "../records.js";
import { type Route, navigate, route } from "../router.js";
import { client } from "../session.js";
import { field, load } from "../ui.js";

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

export async function agentView(root: HTMLElement, current: Route): Promise<void> {
  const agentId = current.segments[1] ?? "";
  root.append(h("h1", { tabindex: -1 }, agentId === "" ? "Agents" : `Agent ${agentId}`), lookup(agentId));
  if (agentId === "") {
    root.append(h("p", { class: "lede" }, "Name an agent to see its reputation and records."));
    return;
  }
  const reputationRegion = h("div", { "aria-live": "polite" });
  const records = new RecordsPanel({
    fixed: { agent_id: agentId },
    filters: ["action", "result", "since", "until"],
    onRated: () => void load(reputationRegion, "the reputation", () => client().reputation(agentId), reputation),
  });
  root.append(
    h("section", { "aria-labelledby": "reputation-title" }, h("h2", { id: "reputation-title" }, "Reputation"), reputationRegion),
    h("section", { "aria-labelledby": "records-title" }, h("h2", { id: "records-title" }, "Recent records"), records.element),
  );
  await Promise.all([
    load(reputationRegion, "the reputation", () => client().reputation(agentId), reputation),
    records.reload(),
  ]);
}
