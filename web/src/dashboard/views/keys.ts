// The organisation's API keys, for a key whose role allows `manage_keys`
// (the shell shows this view to no other): the list, newest first and never
// the keys themselves; a form that makes a key and shows it once; and
// revocation with a confirmation step. The server decides what each role
// may do; the role list here only describes it for the one choosing.

import type { ApiKey, IssuedKey, Role } from "mandate-sdk/web";
import { h, replace } from "../dom.js";
import { badge, idElement, timeElement } from "../format.js";
import { client, whoAmI } from "../session.js";
import { confirmDialog, field, load, submitting } from "../ui.js";

const ROLES: Array<{ role: Role; label: string }> = [
  { role: "gateway", label: "gateway — asks for decisions (AuthZEN) and nothing else" },
  { role: "auditor", label: "auditor — reads" },
  { role: "reviewer", label: "reviewer — reads, rates records, revokes tokens, vouches for agents" },
  { role: "developer", label: "developer — reads, issues tokens for its own e-mail" },
  { role: "owner", label: "owner — all of these, for any e-mail, and manages keys" },
];

/** The key just made, with its one showing, a copy button and the warning. */
function newKeyPanel(key: IssuedKey, dismiss: () => void): HTMLElement {
  const value = h("input", {
    id: "new-key-value",
    class: "secret",
    readonly: true,
    value: key.api_key,
    autocomplete: "off",
    spellcheck: false,
  });
  const copied = h("p", { class: "copy-status", role: "status" });
  const copy = async (): Promise<void> => {
    try {
      await navigator.clipboard.writeText(key.api_key);
      replace(copied, "Copied to the clipboard.");
    } catch {
      value.select();
      replace(copied, "The browser refused to copy; the key is selected: copy it with Ctrl+C (⌘C).");
    }
  };
  const org = whoAmI()?.org.name;
  return h(
    "section",
    { class: "new-key", "aria-labelledby": "new-key-title", tabindex: -1, "data-key-id": key.key_id },
    h("h2", { id: "new-key-title" }, "New key — shown once"),
    h(
      "p",
      { class: "warning" },
      h("strong", {}, "Copy this key now. "),
      "It is shown only this once: neither this page nor the server can show it again. ",
      `Whoever holds it acts with the ${key.role} role`,
      org === undefined ? "" : ` in ${org}`,
      key.email === null ? "." : `, as ${key.email}.`,
    ),
    h(
      "div",
      { class: "secret-row" },
      h("label", { class: "field" }, h("span", {}, `API key ${key.key_id}`), value),
      h("button", { type: "button", onclick: () => void copy() }, "Copy"),
    ),
    copied,
    h("button", { type: "button", class: "dismiss", onclick: dismiss }, "Done: I have stored it"),
  );
}

/** The form that makes a key; `created` gets the key, shown once. */
function createForm(created: (key: IssuedKey) => void): HTMLFormElement {
  const role = h(
    "select",
    { name: "role", required: true },
    ...ROLES.map((choice) => h("option", { value: choice.role }, choice.label)),
  );
  const email = h("input", {
    name: "email",
    type: "email",
    autocomplete: "off",
    spellcheck: false,
    placeholder: "dev@example.com",
    "aria-describedby": "key-email-hint",
  });
  // The server refuses a developer key without an e-mail: say so before it does.
  const needsEmail = (): void => {
    email.required = role.value === "developer";
  };
  role.addEventListener("change", needsEmail);
  const outcome = h("div", { "aria-live": "polite" });
  const submit = h("button", { type: "submit" }, "Create key");
  const form = h(
    "form",
    {
      class: "key-form",
      "aria-label": "Create a key",
      onsubmit: (event) => {
        event.preventDefault();
        void create();
      },
    },
    field("Role", role),
    h(
      "div",
      { class: "field-with-hint" },
      field("E-mail", email),
      h(
        "p",
        { id: "key-email-hint", class: "hint" },
        "Whose key it is. Required for a developer, who issues tokens only for this address.",
      ),
    ),
    h("div", { class: "filter-actions" }, submit),
    outcome,
  );
  const create = async (): Promise<void> => {
    const address = email.value.trim();
    const chosen = role.value as Role;
    await submitting(submit, outcome, "Creating the key…", async () => {
      const key = await client().createKey(address === "" ? { role: chosen } : { role: chosen, email: address });
      replace(outcome);
      form.reset();
      needsEmail();
      created(key);
    });
  };
  return form;
}

/** The confirmation step: a modal dialog naming the key and what revoking it does. */
function revokeDialog(key: ApiKey, done: () => void): HTMLDialogElement {
  const own = key.key_id === whoAmI()?.key_id;
  const dialog = confirmDialog({
    headingId: "revoke-key-title",
    heading: "Revoke this key?",
    body: [
      h(
        "p",
        {},
        "The ",
        key.role,
        " key ",
        h("code", {}, key.key_id),
        key.email === null ? "" : ` of ${key.email}`,
        " stops working at once: every call made with it is refused. Revocation cannot be undone.",
      ),
      own ? h("p", { class: "warning" }, h("strong", {}, "This is the key you are signed in with: "), "you will be signed out.") : null,
    ],
    confirm: "Revoke key",
    pending: "Revoking…",
    act: async () => {
      await client().revokeKey(key.key_id);
    },
    done,
  });
  dialog.addEventListener("close", () => dialog.remove());
  return dialog;
}

function keyRow(key: ApiKey, revoke: (key: ApiKey) => void): HTMLTableRowElement {
  const status = key.revoked_at === null ? "active" : "revoked";
  const own = key.key_id === whoAmI()?.key_id;
  let action: HTMLElement | null;
  if (key.revoked_at !== null) {
    action = null;
  } else if (key.admin) {
    action = h("span", { class: "muted" }, "Revoked by the operator only");
  } else {
    action = h(
      "button",
      {
        type: "button",
        class: "danger",
        "aria-label": `Revoke the ${key.role} key ${key.key_id}`,
        onclick: () => revoke(key),
      },
      "Revoke…",
    );
  }
  // One element per cell: on a phone each cell is a label and its value.
  return h(
    "tr",
    { "data-key-id": key.key_id, "data-role": key.role, "data-status": status },
    h(
      "td",
      { "data-label": "Key" },
      h("span", {}, idElement(key.key_id), own ? h("span", { class: "muted" }, " (this key)") : null),
    ),
    h(
      "td",
      { "data-label": "Role" },
      h(
        "span",
        {},
        h("span", { class: "role" }, key.role),
        key.admin ? h("span", { class: "role role-admin" }, "admin") : null,
      ),
    ),
    h("td", { "data-label": "E-mail" }, key.email ?? h("span", { class: "muted" }, "none")),
    h("td", { "data-label": "Created" }, timeElement(key.created_at)),
    h(
      "td",
      { "data-label": "Status" },
      h(
        "span",
        {},
        badge(status),
        key.revoked_at === null ? null : h("span", { class: "muted" }, " ", timeElement(key.revoked_at)),
      ),
    ),
    h("td", {}, action),
  );
}

function keyTable(keys: ApiKey[], revoke: (key: ApiKey) => void): HTMLElement {
  if (keys.length === 0) {
    return h("p", { class: "empty" }, "This organisation has no keys.");
  }
  return h(
    "table",
    { class: "list keys" },
    h("caption", { class: "visually-hidden" }, "API keys, newest first"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ...["Key", "Role", "E-mail", "Created", "Status"].map((name) => h("th", { scope: "col" }, name)),
        h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Revoke")),
      ),
    ),
    h("tbody", {}, ...keys.map((key) => keyRow(key, revoke))),
  );
}

export async function keysView(root: HTMLElement): Promise<void> {
  const org = whoAmI()?.org.name ?? "this organisation";
  const fresh = h("div", { class: "new-key-region" });
  const news = h("div", { class: "keys-news", "aria-live": "polite" });
  const list = h("div", { class: "results", "aria-live": "polite" });
  const show = (): Promise<void> =>
    load(list, "the keys", () => client().listKeys(), (answer) => keyTable(answer.keys, confirmRevoke));
  const confirmRevoke = (key: ApiKey): void => {
    const dialog = revokeDialog(key, () => {
      replace(news, h("p", { class: "notice" }, "Key ", h("code", {}, key.key_id), " revoked."));
      // Its row loses the button that had focus: keyboard users resume at the list.
      root.querySelector<HTMLElement>("#keys-title")?.focus();
      void show();
    });
    root.append(dialog);
    dialog.showModal();
  };
  const created = (key: IssuedKey): void => {
    const panel = newKeyPanel(key, () => {
      replace(fresh);
      root.querySelector<HTMLElement>("#keys-title")?.focus();
    });
    replace(fresh, panel);
    replace(news);
    panel.focus();
    void show();
  };
  root.append(
    h("h1", { tabindex: -1 }, "Keys"),
    h(
      "p",
      { class: "lede" },
      `The API keys of ${org}. Each acts only within ${org}, with what its role allows. `,
      "A key is shown once, when it is made; the list never shows the keys themselves.",
    ),
    h(
      "section",
      { "aria-labelledby": "create-key-title" },
      h("h2", { id: "create-key-title" }, "Create a key"),
      createForm(created),
    ),
    fresh,
    h(
      "section",
      { "aria-labelledby": "keys-title" },
      h("h2", { id: "keys-title", tabindex: -1 }, `Keys of ${org}`),
      news,
      list,
    ),
  );
  await show();
}
