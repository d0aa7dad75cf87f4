// One approval: what the agent asks (action, resource, spend, and the
// arguments as text, never markup), the chain it acts for (root first), for
// whom (the human by the label the organisation knows, found from the
// organisation's tokens, with the reference and its assurance),
// when it expires, and — for a key whose role may `decide` — approve or
// deny with a note. The page follows the organisation's approval events, so
// a decision made elsewhere, or an expiry, shows without a reload.

import { type Approval, MandateError } from "mandate-sdk/web";
import { entry, h, link, replace } from "../dom.js";
import { argsEntries, badge, bareAgent, human, idElement, timeElement, usd } from "../format.js";
import { follow } from "../live.js";
import { type Route, route } from "../router.js";
import { can, client, whoAmI } from "../session.js";
import { load, problemBox, signedOut } from "../ui.js";

/** Most characters of a note the server takes. */
const NOTE_MAX = 2048;

/**
 * What the organisation knows the human by: approvals carry only the
 * reference (an agent reads them too), the token list the label. Undefined
 * when no label is known or the list cannot be read.
 */
async function labelOf(humanRef: string): Promise<string | undefined> {
  try {
    const page = await client().tokensPage({ human_ref: humanRef, limit: 1 });
    return page.tokens[0]?.human_label;
  } catch (error) {
    signedOut(error);
    return undefined;
  }
}

/** The chain of agents the request comes through, root first, the asking agent last. */
function chain(approval: Approval): HTMLElement {
  const last = approval.chain.length - 1;
  return h(
    "ol",
    { class: "chain-list", "aria-label": "Delegation chain, root first" },
    ...approval.chain.map((linkOfChain, index) =>
      h(
        "li",
        { "data-agent": bareAgent(linkOfChain.agent_id), "data-depth": linkOfChain.delegation_depth },
        link(route(["agent", bareAgent(linkOfChain.agent_id)]), bareAgent(linkOfChain.agent_id)),
        h(
          "span",
          { class: "muted" },
          ` · depth ${linkOfChain.delegation_depth}`,
          index === 0 ? " · the root, on the human's authority" : "",
          index === last ? " · asking" : "",
        ),
      ),
    ),
  );
}

function details(approval: Approval, label: string | undefined): HTMLElement {
  const agent = bareAgent(approval.agent_id);
  const asks = h(
    "dl",
    { class: "detail" },
    entry("Action", h("strong", {}, approval.action)),
    entry("Resource", h("code", {}, approval.resource)),
    entry("Spend", usd(approval.spend_usd)),
    ...argsEntries(approval.args, approval.args_hash),
    entry("Agent", link(route(["agent", agent]), agent), ` (depth ${approval.delegation_depth})`),
    entry(
      "Record",
      approval.aar_id === undefined
        ? h("span", { class: "muted" }, "its id is shown only to the agent that made it until it is completed")
        : link(route(["workflow", approval.provenance_ref], { record: approval.aar_id }), h("code", {}, approval.aar_id)),
      " ",
      badge(approval.record_status),
    ),
    entry("Workflow", link(route(["workflow", approval.provenance_ref]), idElement(approval.provenance_ref))),
  );
  const whom = h(
    "dl",
    { class: "detail" },
    entry("Human", h("span", { class: "human-label" }, human(approval.human_ref, label))),
    entry("Reference", h("code", { class: "wrap" }, approval.human_ref)),
    entry("Assurance", badge(approval.assurance_level)),
  );
  const when = h(
    "dl",
    { class: "detail" },
    entry("Status", badge(approval.status)),
    entry("Requested", timeElement(approval.requested_at)),
    entry(approval.status === "expired" ? "Expired" : "Expires", timeElement(approval.expires_at)),
  );
  if (approval.decided_at !== undefined && approval.status !== "expired") {
    when.append(entry("Decided", timeElement(approval.decided_at)));
  }
  if (approval.decided_by !== undefined) {
    when.append(entry("Decided by", h("code", {}, approval.decided_by)));
  }
  if (approval.note !== undefined) {
    when.append(entry("Note", h("blockquote", { class: "note" }, approval.note)));
  }
  return h(
    "div",
    { class: "approval", "data-status": approval.status, "data-record-status": approval.record_status },
    h("section", { "aria-labelledby": "asks-title" }, h("h2", { id: "asks-title" }, "What the agent asks"), asks),
    h(
      "section",
      { "aria-labelledby": "whom-title" },
      h("h2", { id: "whom-title" }, "For whom"),
      whom,
      h("h3", {}, "Delegation chain, root first"),
      h("p", { class: "chain-path" }, approval.chain.map((linkOfChain) => bareAgent(linkOfChain.agent_id)).join(" → ")),
      chain(approval),
    ),
    h("section", { "aria-labelledby": "when-title" }, h("h2", { id: "when-title" }, "Decision"), when),
  );
}

/** Says that this key reads approvals but does not decide them. */
function readOnly(): HTMLElement {
  const role = whoAmI()?.role;
  return h(
    "p",
    { class: "read-only" },
    h("strong", {}, "Read-only. "),
    `This ${role === undefined ? "" : `${role} `}key may read approvals but not decide them (it lacks the `,
    h("code", {}, "decide"),
    " permission).",
  );
}

/**
 * Approve or deny with an optional note; `decided` gets the approval as the
 * server answers it, `settled` the refusal of one decided elsewhere or
 * lapsed first.
 */
export function decisionForm(
  approval: Approval,
  decided: (approval: Approval) => void,
  settled: (refusal: MandateError) => void,
): HTMLElement {
  const note = h("textarea", { name: "note", rows: 3, maxlength: NOTE_MAX });
  const outcome = h("div", { "aria-live": "polite" });
  const decide = async (decision: "approve" | "deny"): Promise<void> => {
    for (const button of buttons) {
      button.disabled = true;
    }
    replace(outcome, h("p", { role: "status" }, decision === "approve" ? "Approving…" : "Denying…"));
    const text = note.value.trim();
    try {
      decided(await client().decide(approval.approval_id, text === "" ? { decision } : { decision, note: text }));
    } catch (error) {
      if (signedOut(error)) {
        return;
      }
      if (error instanceof MandateError && (error.code === "not_awaiting_approval" || error.code === "approval_expired")) {
        settled(error);
        return;
      }
      replace(outcome, problemBox(error));
      for (const button of buttons) {
        button.disabled = false;
      }
    }
  };
  const buttons = [
    h("button", { type: "button", class: "decide-approve", onclick: () => void decide("approve") }, "Approve"),
    h("button", { type: "button", class: "danger", onclick: () => void decide("deny") }, "Deny"),
  ];
  return h(
    "fieldset",
    { class: "decision" },
    h("legend", {}, "Decide"),
    h(
      "p",
      { class: "muted" },
      "Approving lets the agent do exactly this, once; denying refuses it. Either is final, and the record log keeps it with this key and the note.",
    ),
    h("label", { class: "field" }, h("span", {}, "Note (optional)"), note),
    h("div", { class: "rate-buttons" }, ...buttons),
    outcome,
  );
}

export async function approvalView(root: HTMLElement, current: Route): Promise<() => void> {
  const id = current.segments[1] ?? "";
  const region = h("div", { "aria-live": "polite" });
  root.append(
    h("h1", { tabindex: -1 }, "Approval ", idElement(id)),
    h("p", {}, link(route(["approvals"]), "← Pending approvals")),
    region,
  );
  // The decision form while it is shown: a reload that finds the approval
  // still pending leaves it (and a note half written) alone.
  let decision: HTMLElement | undefined;
  // Why a decision was refused, shown above the approval as it now stands.
  let refusal: MandateError | undefined;
  // The human's label, looked up with the approval first loaded.
  let label: string | undefined;
  const show = (approval: Approval): Node => {
    const fragment = document.createDocumentFragment();
    if (refusal !== undefined) {
      fragment.append(problemBox(refusal));
      refusal = undefined;
    }
    fragment.append(details(approval, label));
    if (approval.status === "pending") {
      if (can("decide")) {
        decision = decisionForm(
          approval,
          (decided) => replace(region, show(decided)),
          (refused) => {
            refusal = refused;
            decision = undefined;
            void reload();
          },
        );
        fragment.append(decision);
      } else {
        fragment.append(readOnly());
      }
    }
    return fragment;
  };
  let shown = false;
  const reload = async (): Promise<void> => {
    if (!shown) {
      shown = true;
      const first = async (): Promise<Approval> => {
        const approval = await client().approval(id);
        label = await labelOf(approval.human_ref);
        return approval;
      };
      await load(region, "the approval", first, show);
      return;
    }
    try {
      const approval = await client().approval(id);
      if (approval.status === "pending" && decision !== undefined && region.contains(decision)) {
        // Nothing changed, and a note may be half written.
        return;
      }
      replace(region, show(approval));
    } catch (error) {
      if (!signedOut(error)) {
        replace(region, problemBox(error));
      }
    }
  };
  return follow({
    wanted: (event) => event.type === "approval.decided" && event.data.approval_id === id,
    reload,
  });
}
