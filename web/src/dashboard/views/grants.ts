// The OAuth grants consents made (docs/oauth.md "The dashboard"): for each,
// the client — its self-declared name, always as text, beside the host of
// its client ID metadata document URL or its registered `client_id` — the
// resource (MCP server), the scope granted, the agent, when it was made and
// last used, and its state: active, expired, or revoked with the reason
// (`root_revoked` when its root token was revoked another way). A developer
// key sees its own human's grants only; the server decides. Paged by the
// server's cursor; a key whose role allows `revoke` revokes a grant after a
// confirmation step, which ends its whole chain as the API does. The
// grant's root token is linked by its jti hash (the page names no jti),
// and that token's page links its workflow.

import { MandateError, type OAuthGrant, type OAuthGrantPage, type OAuthGrantQuery } from "mandate-sdk/web";
import { h, link, replace } from "../dom.js";
import { badge, human, idElement, timeElement } from "../format.js";
import { type Route, navigate, route } from "../router.js";
import { can, client, whoAmI } from "../session.js";
import { Pages, confirmDialog, field, loading, problemBox, signedOut } from "../ui.js";

const PAGE_SIZE = 20;

/** What a grant's `revoke_reason` means, in words. */
const REASONS: Record<string, string> = {
  revoked: "revoked by a person",
  root_revoked: "its root token was revoked",
  refresh_token_reused: "a used refresh token came back (the family was revoked)",
  code_replayed: "its authorization code was presented twice",
  client_revoked: "the client revoked its refresh token (RFC 7009)",
};

/** A grant's state: revoked, expired (its root's `exp` passed), or active. */
function stateOf(grant: OAuthGrant): "active" | "expired" | "revoked" {
  if (typeof grant.revoked_at === "string") {
    return "revoked";
  }
  return Date.parse(grant.expires_at) <= Date.now() ? "expired" : "active";
}

/** The base64url SHA-256 of a jti: how the pages name a token without acting as it. */
async function jthOf(jti: string): Promise<string | undefined> {
  // A page on a plain-http origin other than loopback has no Web Crypto: no link then.
  if (globalThis.crypto?.subtle === undefined) {
    return undefined;
  }
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(jti)));
  return btoa(String.fromCharCode(...digest))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

/** The client: its self-declared name as text, and where its identity comes from. */
function clientCell(grant: OAuthGrant): HTMLElement {
  const host = grant.client_host ?? undefined;
  return h(
    "span",
    { class: "oauth-client" },
    h("span", { class: "client-name" }, grant.client_name),
    h(
      "span",
      { class: "muted client-origin" },
      host === undefined ? " · registered " : ` · from ${host} `,
      h("code", { title: grant.client_id }, host === undefined ? grant.client_id : "metadata document"),
    ),
  );
}

function stateCell(grant: OAuthGrant): HTMLElement {
  const state = stateOf(grant);
  const code = grant.revoke_reason ?? undefined;
  const revokedAt = grant.revoked_at ?? undefined;
  return h(
    "span",
    {},
    badge(state),
    revokedAt === undefined ? null : h("span", { class: "muted" }, " ", timeElement(revokedAt)),
    code === undefined ? null : h("span", { class: "revoke-reason", "data-reason": code }, ` (${REASONS[code] ?? code})`),
  );
}

/** The confirmation step: what revoking ends. */
function revokeDialog(grant: OAuthGrant, done: () => void): HTMLDialogElement {
  const dialog = confirmDialog({
    headingId: "revoke-grant-title",
    heading: "Revoke this grant?",
    body: [
      h(
        "p",
        {},
        "The client ",
        h("strong", {}, grant.client_name),
        ` loses what it holds for ${grant.resource ?? "every resource"} at once: the grant's root token, every access token it issued and its descendants are revoked, and its refresh token refreshes no more. `,
        "Revocation cannot be undone; the client must ask a person again.",
      ),
    ],
    confirm: "Revoke grant",
    pending: "Revoking…",
    act: async () => {
      await client().revokeOAuthGrant(grant.grant_id);
    },
    done,
  });
  dialog.addEventListener("close", () => dialog.remove());
  return dialog;
}

function grantRow(grant: OAuthGrant, jth: string | undefined, revoke: (grant: OAuthGrant) => void): HTMLTableRowElement {
  const state = stateOf(grant);
  let action: HTMLElement | null = null;
  if (state === "active" && can("revoke")) {
    action = h(
      "button",
      {
        type: "button",
        class: "danger",
        "aria-label": `Revoke the grant of ${grant.client_name} (${grant.grant_id})`,
        onclick: () => revoke(grant),
      },
      "Revoke…",
    );
  }
  // One element per cell: on a phone each cell is a label and its value.
  return h(
    "tr",
    { "data-grant-id": grant.grant_id, "data-state": state },
    h("td", { "data-label": "Client" }, clientCell(grant)),
    h("td", { "data-label": "Resource" }, h("code", {}, grant.resource ?? "any")),
    h("td", { "data-label": "Scope" }, h("code", { class: "scope" }, grant.scope)),
    h(
      "td",
      { "data-label": "Agent" },
      h("span", {}, link(route(["agent", grant.agent_id]), grant.agent_id), h("span", { class: "muted" }, " for "), human(grant.human_ref, undefined)),
    ),
    h(
      "td",
      { "data-label": "Made, last used" },
      h("span", {}, timeElement(grant.created_at), h("br"), h("span", { class: "muted" }, "used "), timeElement(grant.last_used_at)),
    ),
    h("td", { "data-label": "State" }, stateCell(grant)),
    h(
      "td",
      { "data-label": "Workflow" },
      jth === undefined ? h("span", { class: "muted" }, "—") : link(route(["tokens", jth]), "Root token and workflow"),
    ),
    h("td", {}, action),
  );
}

async function grantTable(page: OAuthGrantPage, revoke: (grant: OAuthGrant) => void): Promise<HTMLElement> {
  if (page.grants.length === 0) {
    return h("p", { class: "empty" }, "No grant: no client holds anything here yet.");
  }
  const jths = await Promise.all(page.grants.map((grant) => jthOf(grant.root_jti)));
  return h(
    "table",
    { class: "list grants" },
    h("caption", { class: "visually-hidden" }, "OAuth grants, newest first"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ...["Client", "Resource", "Scope", "Agent", "Made, last used", "State", "Workflow"].map((name) => h("th", { scope: "col" }, name)),
        h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Revoke")),
      ),
    ),
    h("tbody", {}, ...page.grants.map((grant, index) => grantRow(grant, jths[index], revoke))),
  );
}

function filters(params: URLSearchParams): HTMLFormElement {
  const clientId = h("input", { name: "client_id", value: params.get("client_id") ?? "", autocomplete: "off", spellcheck: false });
  return h(
    "form",
    {
      class: "filters",
      role: "search",
      "aria-label": "Filter grants",
      onsubmit: (event) => {
        event.preventDefault();
        navigate(route(["grants"], { client_id: clientId.value.trim() }));
      },
    },
    field("Client (client_id)", clientId),
    h("div", { class: "filter-actions" }, h("button", { type: "submit" }, "Filter"), link(route(["grants"]), "Clear")),
  );
}

/** A 404 from the grants path: the deployment's authorization server is off. */
function oauthOff(error: unknown): HTMLElement {
  if (error instanceof MandateError && error.status === 404) {
    return h(
      "p",
      { class: "notice", role: "status" },
      "This deployment does not run the OAuth authorization server (",
      h("code", {}, "[oauth] enabled"),
      " is off), so no client holds a grant.",
    );
  }
  return problemBox(error);
}

export async function grantsView(root: HTMLElement, current: Route): Promise<void> {
  const me = whoAmI();
  const pages = new Pages();
  const news = h("div", { class: "grants-news", "aria-live": "polite" });
  const results = h("div", { class: "results", "aria-live": "polite" });
  const query: OAuthGrantQuery = { limit: PAGE_SIZE };
  const clientId = current.params.get("client_id");
  if (clientId !== null && clientId !== "") {
    query.client_id = clientId;
  }
  const show = async (): Promise<void> => {
    results.setAttribute("aria-busy", "true");
    replace(results, loading("the grants"));
    try {
      const page = await client().oauthGrantsPage(pages.current === undefined ? query : { ...query, cursor: pages.current });
      const table = await grantTable(page, confirmRevoke);
      pages.loaded(page.next_cursor);
      replace(results, table, pages.controls("Grant", () => void show()));
    } catch (error) {
      if (!signedOut(error)) {
        replace(results, oauthOff(error));
      }
    } finally {
      results.removeAttribute("aria-busy");
    }
  };
  const confirmRevoke = (grant: OAuthGrant): void => {
    const dialog = revokeDialog(grant, () => {
      replace(news, h("p", { class: "notice" }, "Grant ", idElement(grant.grant_id), " of ", h("strong", {}, grant.client_name), " revoked."));
      root.querySelector<HTMLElement>("#grants-title")?.focus();
      void show();
    });
    root.append(dialog);
    dialog.showModal();
  };
  root.append(
    h("h1", { tabindex: -1 }, "Grants"),
    h(
      "p",
      { class: "lede" },
      `What OAuth clients hold in ${me?.org.name ?? "this organisation"}, as each person granted it on the consent page (a developer's key sees that person's grants only). `,
      "A client's name is what the client says of itself: trust the host beside it.",
      can("revoke") ? " Revoking a grant ends every token it issued." : "",
    ),
    filters(current.params),
    h("section", { "aria-labelledby": "grants-title" }, h("h2", { id: "grants-title", tabindex: -1 }, "Grants, newest first"), news, results),
  );
  await show();
}
