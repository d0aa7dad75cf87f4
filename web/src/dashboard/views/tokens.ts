// The organisation's tokens (active first; filtered by agent, human,
// workflow and status), each human shown by the label the organisation
// knows it by; a token's status and every descendant's, and revocation
// with a confirmation step: revoking a token ends it and its whole
// subtree. A token's argument rules (its own and those it inherited) read
// in words. Only a key whose role allows `revoke` is offered it. Tokens are
// named by jti hash (`jth`): the server shows a jti only to whoever
// receives the token, and a jth names a token without acting as it.

import type { TokenListItem, TokenListQuery, TokenPage, TokenState, TokenStatus } from "mandate-sdk/web";
import { entry, h, link } from "../dom.js";
import { badge, human, idElement, time, timeElement } from "../format.js";
import { type Route, navigate, route } from "../router.js";
import { can, client } from "../session.js";
import { approvalWords, ruleScope, ruleStatements } from "../policy.js";
import { Pages, confirmDialog, field, load } from "../ui.js";

const PAGE_SIZE = 50;

const STATES: TokenState[] = ["active", "revoked", "expired"];

/** Longest reason the server takes (`MAX_REVOKE_REASON_CHARS`). */
const REASON_MAX = 512;

function lookup(current: string): HTMLFormElement {
  const input = h("input", {
    name: "jth",
    value: current,
    placeholder: "jti hash (or the jti, if you hold it)",
    autocomplete: "off",
    spellcheck: false,
    required: true,
  });
  return h(
    "form",
    {
      class: "filters",
      role: "search",
      "aria-label": "Look up a token",
      onsubmit: (event) => {
        event.preventDefault();
        navigate(route(["tokens", input.value.trim()]));
      },
    },
    field("Token (jti hash)", input),
    h("div", { class: "filter-actions" }, h("button", { type: "submit" }, "Show")),
  );
}

function chainTable(status: TokenStatus): HTMLElement {
  const rows = [
    { jth: status.jth, agent_id: status.agent_id, delegation_depth: status.delegation_depth, status: status.status },
    ...status.descendants,
  ];
  const top = status.delegation_depth;
  return h(
    "table",
    { class: "list chain" },
    h("caption", {}, "This token and its descendants"),
    h(
      "thead",
      {},
      h("tr", {}, ...["Token", "Agent", "Depth", "Status"].map((name) => h("th", { scope: "col" }, name))),
    ),
    h(
      "tbody",
      {},
      ...rows.map((row) =>
        h(
          "tr",
          { "data-jth": row.jth, "data-status": row.status },
          h(
            "td",
            { "data-label": "Token", class: `indent-${Math.min(row.delegation_depth - top, 8)}` },
            row.jth === status.jth ? h("code", {}, row.jth) : link(route(["tokens", row.jth]), h("code", {}, row.jth)),
          ),
          h("td", { "data-label": "Agent" }, link(route(["agent", row.agent_id]), row.agent_id)),
          h("td", { "data-label": "Depth", class: "number" }, row.delegation_depth),
          h("td", { "data-label": "Status" }, badge(row.status)),
        ),
      ),
    ),
  );
}

/**
 * The rules on the token's arguments, in words: each `constraints.args`
 * rule (every statement must hold) and the statements that make an attempt
 * ask a human. Nothing when the token has neither.
 */
function argumentRules(status: TokenStatus): HTMLElement | null {
  const rules = status.constraints?.args ?? [];
  const asking = status.constraints?.require_approval?.args;
  if (rules.length === 0 && asking === undefined) {
    return null;
  }
  return h(
    "section",
    { class: "arg-rules", "aria-labelledby": "arg-rules-title" },
    h("h2", { id: "arg-rules-title" }, "Rules on arguments"),
    rules.length === 0
      ? null
      : h(
          "p",
          { class: "muted" },
          "An attempt a rule applies to is permitted only when every statement of the rule holds of its arguments; a missing field fails.",
        ),
    rules.length === 0
      ? null
      : h(
          "ul",
          { class: "arg-rule-list" },
          ...rules.map((rule) =>
            h(
              "li",
              { class: "arg-rule" },
              h("strong", {}, ruleScope(rule)),
              ": ",
              ...ruleStatements(rule).flatMap((words, index) => [index === 0 ? "" : " and ", h("code", {}, words)]),
            ),
          ),
        ),
    asking === undefined ? null : h("p", { class: "arg-approval" }, approvalWords(asking)),
  );
}

/** The confirmation step: a modal dialog naming what ends, with an optional reason. */
function revokeDialog(status: TokenStatus, done: () => void): HTMLDialogElement {
  const count = 1 + status.descendants.length;
  const reason = h("input", { name: "reason", maxlength: REASON_MAX, autocomplete: "off" });
  return confirmDialog({
    headingId: "revoke-title",
    heading: "Revoke this token?",
    body: [
      h(
        "p",
        {},
        "This ends ",
        h("code", {}, status.jth),
        status.descendants.length === 0
          ? " at once. "
          : ` and its ${status.descendants.length} descendant${status.descendants.length === 1 ? "" : "s"} at once. `,
        "A revoked token authorizes nothing, and revocation cannot be undone.",
      ),
      field("Reason (optional)", reason),
    ],
    confirm: `Revoke ${count} token${count === 1 ? "" : "s"}`,
    pending: "Revoking…",
    act: async () => {
      const text = reason.value.trim();
      await client().revoke(text === "" ? { jth: status.jth } : { jth: status.jth, reason: text });
    },
    done,
  });
}

function statusView(status: TokenStatus, reload: () => void): HTMLElement {
  const rows: DocumentFragment[] = [
    entry("Status", badge(status.status)),
    entry("Agent", link(route(["agent", status.agent_id]), status.agent_id)),
    entry("Delegation depth", String(status.delegation_depth)),
    entry("Workflow", link(route(["workflow", status.provenance_ref]), h("code", {}, status.provenance_ref))),
    entry("Issued", timeElement(status.issued_at)),
    entry("Expires", timeElement(status.expires_at)),
  ];
  if (status.parent !== undefined) {
    rows.push(entry("Parent", link(route(["tokens", status.parent]), h("code", {}, status.parent))));
  }
  if (status.revoked_at !== undefined) {
    rows.push(entry("Revoked", timeElement(status.revoked_at)));
  }
  if (status.revoke_reason !== undefined) {
    rows.push(entry("Reason", status.revoke_reason));
  }
  const container = h("div", { class: "token-status", "data-status": status.status });
  container.append(h("dl", { class: "detail" }, ...rows));
  const rules = argumentRules(status);
  if (rules !== null) {
    container.append(rules);
  }
  container.append(chainTable(status));
  if (status.status === "active" && can("revoke")) {
    const dialog = revokeDialog(status, reload);
    container.append(
      h("button", { type: "button", class: "danger", onclick: () => dialog.showModal() }, "Revoke…"),
      dialog,
    );
  } else if (status.status === "active") {
    container.append(
      h(
        "p",
        { class: "read-only" },
        "This key may not revoke tokens (it lacks the ",
        h("code", {}, "revoke"),
        " permission).",
      ),
    );
  }
  return container;
}

function listFilters(params: URLSearchParams): HTMLFormElement {
  const input = (name: string): HTMLInputElement =>
    h("input", { name, value: params.get(name) ?? "", autocomplete: "off", spellcheck: false });
  const agent = input("agent_id");
  const humanRef = input("human_ref");
  const workflow = input("provenance_ref");
  const status = h(
    "select",
    { name: "status" },
    h("option", { value: "" }, "any"),
    ...STATES.map((state) => h("option", { value: state, selected: params.get("status") === state }, state)),
  );
  return h(
    "form",
    {
      class: "filters",
      role: "search",
      "aria-label": "Filter tokens",
      onsubmit: (event) => {
        event.preventDefault();
        navigate(
          route(["tokens"], {
            agent_id: agent.value.trim(),
            human_ref: humanRef.value.trim(),
            provenance_ref: workflow.value.trim(),
            status: status.value,
          }),
        );
      },
    },
    field("Agent", agent),
    field("Human reference", humanRef),
    field("Workflow (provenance_ref)", workflow),
    field("Status", status),
    h("div", { class: "filter-actions" }, h("button", { type: "submit" }, "Filter"), link(route(["tokens"]), "Clear")),
  );
}

function tokenRow(item: TokenListItem): HTMLTableRowElement {
  return h(
    "tr",
    { "data-jth": item.jth, "data-status": item.status },
    h("td", { "data-label": "Token" }, link(route(["tokens", item.jth]), idElement(item.jth))),
    h(
      "td",
      { "data-label": "Agent" },
      // One child: a cell is a two-column grid (label, value) on a phone.
      h("span", {}, link(route(["agent", item.agent_id]), item.agent_id), item.delegation_depth > 0 ? ` (depth ${item.delegation_depth})` : ""),
    ),
    h("td", { "data-label": "Human" }, link(route(["tokens"], { human_ref: item.human_ref }), human(item.human_ref, item.human_label))),
    h("td", { "data-label": "Workflow" }, link(route(["workflow", item.provenance_ref]), idElement(item.provenance_ref))),
    h("td", { "data-label": "Status" }, badge(item.status)),
    h("td", { "data-label": item.status === "revoked" ? "Revoked" : "Expires" }, time(item.status === "revoked" ? item.revoked_at : item.expires_at)),
  );
}

/** The organisation's tokens, a page at a time. */
async function tokenList(root: HTMLElement, params: URLSearchParams): Promise<void> {
  const pages = new Pages();
  const results = h("div", { class: "results", "aria-live": "polite" });
  root.append(listFilters(params), results);
  const query: TokenListQuery = { limit: PAGE_SIZE };
  for (const name of ["agent_id", "human_ref", "provenance_ref"] as const) {
    const value = params.get(name);
    if (value !== null && value !== "") {
      query[name] = value;
    }
  }
  const status = STATES.find((state) => state === params.get("status"));
  if (status !== undefined) {
    query.status = status;
  }
  const show = (): Promise<void> =>
    load(
      results,
      "the tokens",
      () => (client().tokensPage(pages.current === undefined ? query : { ...query, cursor: pages.current })),
      (page: TokenPage) => {
        pages.loaded(page.next_cursor);
        const fragment = document.createDocumentFragment();
        fragment.append(
          page.tokens.length === 0
            ? h("p", { class: "empty" }, "No token matches.")
            : h(
                "table",
                { class: "list tokens" },
                h("caption", { class: "visually-hidden" }, "Tokens, active first"),
                h(
                  "thead",
                  {},
                  h("tr", {}, ...["Token", "Agent", "Human", "Workflow", "Status", "Expires or revoked"].map((name) => h("th", { scope: "col" }, name))),
                ),
                h("tbody", {}, ...page.tokens.map(tokenRow)),
              ),
          pages.controls("Token", () => void show()),
        );
        return fragment;
      },
    );
  await show();
}

export async function tokensView(root: HTMLElement, current: Route): Promise<void> {
  const name = current.segments[1] ?? "";
  root.append(h("h1", { tabindex: -1 }, "Tokens"), lookup(name));
  if (name === "") {
    root.append(
      h(
        "p",
        { class: "lede" },
        can("revoke")
          ? "The organisation's tokens, active first. Open one to see its status and its descendants', and to revoke it with its whole chain."
          : "The organisation's tokens, active first. Open one to see its status and its descendants'.",
      ),
    );
    await tokenList(root, current.params);
    return;
  }
  const region = h("section", { "aria-live": "polite", "aria-label": "Token status" });
  root.append(region);
  const show = (): Promise<void> => load(region, "the token", () => client().token(name), (status) => statusView(status, () => void show()));
  await show();
}
