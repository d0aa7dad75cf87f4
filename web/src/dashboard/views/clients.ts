// The organisation's pre-registered OAuth clients (docs/oauth.md "The
// dashboard"), for a key whose role allows `manage_clients` (the shell
// shows this view to no other): the list, newest first, each client's name
// as text; a form that registers a public client (its name and redirect
// URIs; the server makes its `client_id`); and deletion with a
// confirmation step, after which the client is unknown (its codes and
// refresh tokens are refused; its grants' access tokens live until they
// expire, or until the grants are revoked). A client that names itself by the URL of its metadata
// document needs no registration and is not listed here.

import type { OAuthClient } from "mandate-sdk/web";
import { h, link, replace } from "../dom.js";
import { timeElement } from "../format.js";
import { route } from "../router.js";
import { client, whoAmI } from "../session.js";
import { confirmDialog, field, load, submitting } from "../ui.js";

/** Most redirect URIs of one client, and the longest name (the server's limits). */
const MAX_REDIRECT_URIS = 10;
const NAME_MAX = 100;

/** The lines of a textarea, trimmed, empty ones left out. */
function lines(text: string): string[] {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
}

/** The form that registers a client; `created` gets it. */
function registerForm(created: (registered: OAuthClient) => void): HTMLFormElement {
  const name = h("input", { name: "name", required: true, maxlength: NAME_MAX, autocomplete: "off" });
  const uris = h("textarea", {
    name: "redirect_uris",
    required: true,
    rows: 3,
    spellcheck: false,
    autocomplete: "off",
    placeholder: "https://app.example.com/oauth/callback",
    "aria-describedby": "client-uris-hint",
  });
  const outcome = h("div", { "aria-live": "polite" });
  const submit = h("button", { type: "submit" }, "Register client");
  const form = h(
    "form",
    {
      class: "client-form",
      "aria-label": "Register a client",
      onsubmit: (event) => {
        event.preventDefault();
        void register();
      },
    },
    field("Name", name),
    h(
      "div",
      { class: "field-with-hint" },
      field("Redirect URIs", uris),
      h(
        "p",
        { id: "client-uris-hint", class: "hint" },
        `One a line, at most ${MAX_REDIRECT_URIS}: https, or http on a loopback address. A redirect must match one exactly, but a loopback IP literal's port may vary.`,
      ),
    ),
    h("div", { class: "filter-actions" }, submit),
    outcome,
  );
  const register = async (): Promise<void> => {
    await submitting(submit, outcome, "Registering the client…", async () => {
      const registered = await client().createOAuthClient({ name: name.value.trim(), redirect_uris: lines(uris.value) });
      replace(outcome);
      form.reset();
      created(registered);
    });
  };
  return form;
}

/** The confirmation step: what deleting a client does. */
function deleteDialog(registered: OAuthClient, done: () => void): HTMLDialogElement {
  const dialog = confirmDialog({
    headingId: "delete-client-title",
    heading: "Delete this client?",
    body: [
      h(
        "p",
        {},
        "The client ",
        h("strong", {}, registered.name),
        " (",
        h("code", {}, registered.client_id),
        ") becomes unknown at once: its authorization requests, codes and refresh tokens are refused. Access tokens it already holds stay valid until they expire: revoke its grants to end them now. Deletion cannot be undone.",
      ),
    ],
    confirm: "Delete client",
    pending: "Deleting…",
    act: async () => {
      await client().deleteOAuthClient(registered.client_id);
    },
    done,
  });
  dialog.addEventListener("close", () => dialog.remove());
  return dialog;
}

function clientRow(registered: OAuthClient, remove: (registered: OAuthClient) => void): HTMLTableRowElement {
  // One element per cell: on a phone each cell is a label and its value.
  return h(
    "tr",
    { "data-client-id": registered.client_id },
    h("td", { "data-label": "Name" }, h("span", { class: "client-name" }, registered.name)),
    h("td", { "data-label": "Client ID" }, h("code", {}, registered.client_id)),
    h(
      "td",
      { "data-label": "Redirect URIs" },
      h("ul", { class: "plain" }, ...registered.redirect_uris.map((uri) => h("li", {}, h("code", {}, uri)))),
    ),
    h("td", { "data-label": "Created" }, timeElement(registered.created_at)),
    h("td", { "data-label": "Grants" }, link(route(["grants"], { client_id: registered.client_id }), "Its grants")),
    h(
      "td",
      {},
      h(
        "button",
        {
          type: "button",
          class: "danger",
          "aria-label": `Delete the client ${registered.name} (${registered.client_id})`,
          onclick: () => remove(registered),
        },
        "Delete…",
      ),
    ),
  );
}

function clientTable(clients: OAuthClient[], remove: (registered: OAuthClient) => void): HTMLElement {
  if (clients.length === 0) {
    return h("p", { class: "empty" }, "No client is registered.");
  }
  return h(
    "table",
    { class: "list clients" },
    h("caption", { class: "visually-hidden" }, "Registered clients, newest first"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ...["Name", "Client ID", "Redirect URIs", "Created", "Grants"].map((name) => h("th", { scope: "col" }, name)),
        h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Delete")),
      ),
    ),
    h("tbody", {}, ...clients.map((registered) => clientRow(registered, remove))),
  );
}

export async function clientsView(root: HTMLElement): Promise<void> {
  const org = whoAmI()?.org.name ?? "this organisation";
  const news = h("div", { class: "clients-news", "aria-live": "polite" });
  const list = h("div", { class: "results", "aria-live": "polite" });
  const show = (): Promise<void> =>
    load(list, "the clients", () => client().oauthClients(), (answer) => clientTable(answer.clients, confirmDelete));
  const confirmDelete = (registered: OAuthClient): void => {
    const dialog = deleteDialog(registered, () => {
      replace(news, h("p", { class: "notice" }, "Client ", h("strong", {}, registered.name), " deleted."));
      root.querySelector<HTMLElement>("#clients-title")?.focus();
      void show();
    });
    root.append(dialog);
    dialog.showModal();
  };
  const created = (registered: OAuthClient): void => {
    replace(
      news,
      h("p", { class: "notice" }, "Client ", h("strong", {}, registered.name), " registered as ", h("code", {}, registered.client_id), "."),
    );
    void show();
  };
  root.append(
    h("h1", { tabindex: -1 }, "OAuth clients"),
    h(
      "p",
      { class: "lede" },
      `The public OAuth clients ${org} registered in advance. A client sends its `,
      h("code", {}, "client_id"),
      " and has no secret; one that names itself by the URL of its metadata document needs no registration.",
    ),
    h("section", { "aria-labelledby": "register-client-title" }, h("h2", { id: "register-client-title" }, "Register a client"), registerForm(created)),
    h("section", { "aria-labelledby": "clients-title" }, h("h2", { id: "clients-title", tabindex: -1 }, `Clients of ${org}`), news, list),
  );
  await show();
}
