// The approvals: actions waiting for a person's yes before they are done
// (pending, the default) or decided, newest first, each linked to its page.
// The list follows the organisation's approval events, so a new request
// appears, and a decided one leaves the pending list, without a reload.

import type { Approval, ApprovalPage, ApprovalQuery, ApprovalStatus } from "mandate-sdk/web";
import { h, link, replace } from "../dom.js";
import { badge, bareAgent, time, usd } from "../format.js";
import { follow } from "../live.js";
import { type Route, navigate, route } from "../router.js";
import { can, client } from "../session.js";
import { Pages, field, load, problemBox, signedOut } from "../ui.js";

const PAGE_SIZE = 25;

const STATUSES: ApprovalStatus[] = ["pending", "approved", "denied", "expired"];

/** The status the route asks for: pending unless it names another, or `any`. */
function chosenStatus(params: URLSearchParams): ApprovalStatus | undefined {
  const asked = params.get("status");
  if (asked === "any") {
    return undefined;
  }
  return STATUSES.find((status) => status === asked) ?? "pending";
}

function statusForm(current: ApprovalStatus | undefined): HTMLFormElement {
  const select = h(
    "select",
    { name: "status" },
    ...STATUSES.map((status) => h("option", { value: status, selected: status === current }, status)),
    h("option", { value: "any", selected: current === undefined }, "any"),
  );
  return h(
    "form",
    {
      class: "filters",
      role: "search",
      "aria-label": "Filter approvals",
      onsubmit: (event) => {
        event.preventDefault();
        navigate(route(["approvals"], { status: select.value === "pending" ? undefined : select.value }));
      },
    },
    field("Status", select),
    h("div", { class: "filter-actions" }, h("button", { type: "submit" }, "Show")),
  );
}

function approvalRow(approval: Approval): HTMLTableRowElement {
  const decided = approval.status !== "pending";
  return h(
    "tr",
    { "data-approval-id": approval.approval_id, "data-status": approval.status },
    h("td", { "data-label": "Requested" }, time(approval.requested_at)),
    h("td", { "data-label": "Agent" }, link(route(["agent", bareAgent(approval.agent_id)]), bareAgent(approval.agent_id))),
    h("td", { "data-label": "Action" }, approval.action),
    h("td", { "data-label": "Resource" }, h("code", {}, approval.resource)),
    h("td", { "data-label": "Spend", class: "number" }, usd(approval.spend_usd)),
    h("td", { "data-label": "Status" }, badge(approval.status)),
    h("td", { "data-label": decided ? "Decided" : "Expires" }, time(decided ? approval.decided_at : approval.expires_at)),
    h(
      "td",
      {},
      h(
        "a",
        {
          href: `#${route(["approval", approval.approval_id])}`,
          "aria-label": `${decided ? "See" : "Review"} ${approval.action} ${approval.resource} (${approval.approval_id})`,
        },
        decided ? "See" : "Review",
      ),
    ),
  );
}

function approvalTable(approvals: Approval[], status: ApprovalStatus | undefined): HTMLElement {
  if (approvals.length === 0) {
    return h("p", { class: "empty" }, status === "pending" ? "Nothing waits for a decision." : "No approval matches.");
  }
  return h(
    "table",
    { class: "list approvals" },
    h("caption", { class: "visually-hidden" }, "Approvals, newest first"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "Requested"),
        h("th", { scope: "col" }, "Agent"),
        h("th", { scope: "col" }, "Action"),
        h("th", { scope: "col" }, "Resource"),
        h("th", { scope: "col", class: "number" }, "Spend"),
        h("th", { scope: "col" }, "Status"),
        h("th", { scope: "col" }, status === "pending" ? "Expires" : "Expires or decided"),
        h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Open")),
      ),
    ),
    h("tbody", {}, ...approvals.map(approvalRow)),
  );
}

export async function approvalsView(root: HTMLElement, current: Route): Promise<() => void> {
  const status = chosenStatus(current.params);
  const pages = new Pages();
  const results = h("div", { class: "results", "aria-live": "polite" });
  root.append(
    h("h1", { tabindex: -1 }, "Approvals"),
    h(
      "p",
      { class: "lede" },
      can("decide")
        ? "Actions a grant says a person must approve before they are done. Open one to see what the agent asks, and approve or deny it."
        : "Actions a grant says a person must approve before they are done. Open one to see what the agent asks.",
    ),
    statusForm(status),
    results,
  );
  const fetchPage = (): Promise<ApprovalPage> => {
    const query: ApprovalQuery = { limit: PAGE_SIZE };
    if (status !== undefined) {
      query.status = status;
    }
    if (pages.current !== undefined) {
      query.cursor = pages.current;
    }
    return client().approvalsPage(query);
  };
  const render = (page: ApprovalPage): Node => {
    pages.loaded(page.next_cursor);
    const fragment = document.createDocumentFragment();
    fragment.append(approvalTable(page.approvals, status), pages.controls("Approval", () => void show()));
    return fragment;
  };
  let shown = false;
  // The first load says it is loading; a live update replaces the list when it has the new one.
  const show = async (): Promise<void> => {
    if (!shown) {
      shown = true;
      await load(results, "approvals", fetchPage, render);
      return;
    }
    try {
      replace(results, render(await fetchPage()));
    } catch (error) {
      if (!signedOut(error)) {
        replace(results, problemBox(error));
      }
    }
  };
  return follow({
    wanted: (event) => event.type === "approval.requested" || event.type === "approval.decided",
    reload: show,
  });
}
