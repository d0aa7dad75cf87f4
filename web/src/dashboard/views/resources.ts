// The organisation's OAuth resources (docs/oauth.md "Registering a resource
// and its relay keys"), for a key whose role allows `manage_clients` (the
// API's requirement; the shell shows this view to no other): each resource
// — an MCP server's identifier, as its tokens name it in `aud` — with the
// RFC 7638 thumbprints of the Ed25519 keys its gates relay clients' proofs
// with; a form that registers one; and deletion with a confirmation step,
// which is how a relay key is revoked. Every value is shown as text.

import type { OAuthResource } from "mandate-sdk/web";
import { h, replace } from "../dom.js";
import { timeElement } from "../format.js";
import { client, whoAmI } from "../session.js";
import { confirmDialog, field, load, submitting } from "../ui.js";

/** Most relay keys of one resource (the server's limit). */
const MAX_RELAY_KEYS = 10;

/** The lines of a textarea, trimmed, empty ones left out. */
function lines(text: string): string[] {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
}

/** The form that registers a resource; `created` gets it. */
function registerForm(created: (registered: OAuthResource) => void): HTMLFormElement {
  const resource = h("input", {
    name: "resource",
    type: "url",
    required: true,
    autocomplete: "off",
    spellcheck: false,
    placeholder: "https://mcp.example.com/mcp",
    "aria-describedby": "resource-hint",
  });
  const keys = h("textarea", {
    name: "relay_jkts",
    required: true,
    rows: 2,
    spellcheck: false,
    autocomplete: "off",
    "aria-describedby": "relay-keys-hint",
  });
  const outcome = h("div", { "aria-live": "polite" });
  const submit = h("button", { type: "submit" }, "Register resource");
  const form = h(
    "form",
    {
      class: "client-form",
      "aria-label": "Register a resource",
      onsubmit: (event) => {
        event.preventDefault();
        void register();
      },
    },
    h(
      "div",
      { class: "field-with-hint" },
      field("Resource", resource),
      h(
        "p",
        { id: "resource-hint", class: "hint" },
        "The MCP server's URL, as OAuth clients send it in resource and its tokens name it in aud: https, or http on a loopback address.",
      ),
    ),
    h(
      "div",
      { class: "field-with-hint" },
      field("Relay key thumbprints", keys),
      h(
        "p",
        { id: "relay-keys-hint", class: "hint" },
        `One a line, at most ${MAX_RELAY_KEYS}: the RFC 7638 thumbprint of each gate's Ed25519 relay key (relayKey.jkt in mandate-sdk/mcp).`,
      ),
    ),
    h("div", { class: "filter-actions" }, submit),
    outcome,
  );
  const register = async (): Promise<void> => {
    await submitting(submit, outcome, "Registering the resource…", async () => {
      const registered = await client().createOAuthResource({ resource: resource.value.trim(), relay_jkts: lines(keys.value) });
      replace(outcome);
      form.reset();
      created(registered);
    });
  };
  return form;
}

/** The confirmation step: what deleting a resource does. */
function deleteDialog(registered: OAuthResource, done: () => void): HTMLDialogElement {
  const dialog = confirmDialog({
    headingId: "delete-resource-title",
    heading: "Delete this resource?",
    body: [
      h(
        "p",
        {},
        "The relay keys of ",
        h("code", {}, registered.resource),
        " relay nothing from now on: its gates can no longer act for clients whose tokens are bound to their own keys, completions included. Tokens for it stay valid. To rotate a key, register the resource again with the keys it keeps.",
      ),
    ],
    confirm: "Delete resource",
    pending: "Deleting…",
    act: async () => {
      await client().deleteOAuthResource(registered.resource_id);
    },
    done,
  });
  dialog.addEventListener("close", () => dialog.remove());
  return dialog;
}

function resourceRow(registered: OAuthResource, remove: (registered: OAuthResource) => void): HTMLTableRowElement {
  // One element per cell: on a phone each cell is a label and its value.
  return h(
    "tr",
    { "data-resource-id": registered.resource_id },
    h("td", { "data-label": "Resource" }, h("code", { class: "resource-uri" }, registered.resource)),
    h(
      "td",
      { "data-label": "Relay keys" },
      h("ul", { class: "plain" }, ...registered.relay_jkts.map((jkt) => h("li", {}, h("code", {}, jkt)))),
    ),
    h("td", { "data-label": "Registered" }, timeElement(registered.created_at), " by ", h("code", {}, registered.created_by)),
    h(
      "td",
      {},
      h(
        "button",
        {
          type: "button",
          class: "danger",
          "aria-label": `Delete the resource ${registered.resource}`,
          onclick: () => remove(registered),
        },
        "Delete…",
      ),
    ),
  );
}

function resourceTable(resources: OAuthResource[], remove: (registered: OAuthResource) => void): HTMLElement {
  if (resources.length === 0) {
    return h("p", { class: "empty" }, "No resource is registered.");
  }
  return h(
    "table",
    { class: "list resources" },
    h("caption", { class: "visually-hidden" }, "Registered resources, newest first"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ...["Resource", "Relay keys", "Registered"].map((name) => h("th", { scope: "col" }, name)),
        h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Delete")),
      ),
    ),
    h("tbody", {}, ...resources.map((registered) => resourceRow(registered, remove))),
  );
}

export async function resourcesView(root: HTMLElement): Promise<void> {
  const org = whoAmI()?.org.name ?? "this organisation";
  const news = h("div", { class: "resources-news", "aria-live": "polite" });
  const list = h("div", { class: "results", "aria-live": "polite" });
  const show = (): Promise<void> =>
    load(list, "the resources", () => client().oauthResources(), (answer) => resourceTable(answer.resources, confirmDelete));
  const confirmDelete = (registered: OAuthResource): void => {
    const dialog = deleteDialog(registered, () => {
      replace(news, h("p", { class: "notice" }, "Resource ", h("code", {}, registered.resource), " deleted."));
      root.querySelector<HTMLElement>("#resources-title")?.focus();
      void show();
    });
    root.append(dialog);
    dialog.showModal();
  };
  const created = (registered: OAuthResource): void => {
    replace(news, h("p", { class: "notice" }, "Resource ", h("code", {}, registered.resource), " registered."));
    void show();
  };
  root.append(
    h("h1", { tabindex: -1 }, "OAuth resources"),
    h(
      "p",
      { class: "lede" },
      `The MCP servers of ${org} whose gates relay a client's DPoP proof to Mandate: a gate signs its relay proof with a key registered here for the resource its tokens name in `,
      h("code", {}, "aud"),
      ".",
    ),
    h(
      "section",
      { "aria-labelledby": "register-resource-title" },
      h("h2", { id: "register-resource-title" }, "Register a resource"),
      registerForm(created),
    ),
    h(
      "section",
      { "aria-labelledby": "resources-title" },
      h("h2", { id: "resources-title", tabindex: -1 }, `Resources of ${org}`),
      news,
      list,
    ),
  );
  await show();
}
