// The consent page (`/oauth/consent?request=…`, DESIGN §17, docs/oauth.md):
// where a person lets an OAuth client (an MCP client, an agent framework)
// act for them. `GET /v1/oauth/authorize` sends the browser here with the
// request sealed by the server. The person signs in with an API key made
// for their e-mail (kept in this tab's sessionStorage, as the dashboard
// keeps it) or, where the deployment names one, with an identity provider
// (the server's `…/oidc/<name>/start`; the provider sends the browser back
// through the server, which sets a session cookie for this one request and
// comes back here with the session's CSRF value in the fragment — the
// sealed request waits in sessionStorage meanwhile), sees who asks — the client as the organisation registered
// it, or the host of the URL a client names itself by beside the name its
// metadata document claims — where the browser goes back to, the server
// the token is for, what is asked — narrows it, and approves or denies. The decision is a JSON
// `fetch` with the key; the page then sends the browser to the redirect the
// server answers (a form POST could not redirect to another origin under
// `form-action 'self'`). Every value the server or the client sent is set
// as text, never parsed as markup.

import "../dashboard/style.css";
import "./consent.css";
import type { Me } from "mandate-sdk/web";
import { h, replace } from "../dashboard/dom.js";
import { apiKey, client, signIn, signOut } from "../dashboard/session.js";
import { field, problemBox } from "../dashboard/ui.js";
import {
  type ConsentGrant,
  type Credential,
  type OpenedRequest,
  type SignInProvider,
  decide,
  openRequest,
  signInProviders,
  signInUrl,
} from "./api.js";

const main = document.getElementById("main") as HTMLElement;

/**
 * Who asks. A client the organisation registered: its registered name. A
 * client named by its metadata document's URL: the URL's host, large —
 * that is who it is — and the name its document gives, as its own claim
 * ("says it is", CIMD §6.4). Text only; no logo is loaded (§6.7).
 */
function who(asked: OpenedRequest): HTMLElement[] {
  if (asked.client_kind === "document" && asked.client_host) {
    return [
      h("p", { class: "client-name client-host" }, asked.client_host),
      h("p", { class: "says" }, "says it is ", h("q", { class: "claimed-name" }, asked.client_name)),
      h("p", { class: "hint" }, "identified by its metadata document at ", h("code", {}, asked.client_id)),
    ];
  }
  return [
    h("p", { class: "client-name" }, asked.client_name),
    h("p", {}, "registered by your organisation as ", h("code", {}, asked.client_id)),
  ];
}
const account = document.getElementById("account") as HTMLElement;
const identity = document.getElementById("identity") as HTMLElement;
/** Where this tab keeps the sealed request while the person signs in elsewhere. */
const REQUEST_KEY = "mandate.consent.request";
/** Where this tab keeps an identity provider's session's CSRF value. */
const CSRF_KEY = "mandate.consent.csrf";
const SIGNED_IN = "#signed-in=";

/**
 * The sealed request: from the URL (kept in this tab for a sign-in round
 * trip), or after a sign-in with an identity provider from this tab; the
 * session's CSRF value, when the server just sent one, kept likewise and
 * taken out of the address bar.
 */
function arrived(): string | null {
  const fromUrl = new URLSearchParams(location.search).get("request");
  if (fromUrl !== null && fromUrl !== "") {
    sessionStorage.setItem(REQUEST_KEY, fromUrl);
    sessionStorage.removeItem(CSRF_KEY);
  }
  if (location.hash.startsWith(SIGNED_IN)) {
    sessionStorage.setItem(CSRF_KEY, location.hash.slice(SIGNED_IN.length));
    history.replaceState(null, "", location.pathname + location.search);
  }
  return fromUrl !== null && fromUrl !== "" ? fromUrl : sessionStorage.getItem(REQUEST_KEY);
}

const request = arrived();

/** The lifetimes offered, in seconds (the longest is the server's most). */
const LIFETIMES: [string, number][] = [
  ["1 hour", 3600],
  ["1 day", 86_400],
  ["7 days", 604_800],
  ["30 days", 2_592_000],
];

/** Shows `alert` (a `role="alert"` box) in `region` and moves focus to it. */
function showAlert(region: HTMLElement, alert: HTMLElement): void {
  alert.tabIndex = -1;
  replace(region, alert);
  alert.focus();
}

function alertBox(title: string, detail: string): HTMLElement {
  return h(
    "div",
    { class: "problem", role: "alert" },
    h("p", { class: "problem-title" }, title),
    h("p", { class: "problem-detail" }, detail),
  );
}

function heading(text: string): HTMLHeadingElement {
  return h("h1", { tabindex: -1 }, text);
}

function render(): void {
  if (request === null || request === "") {
    const title = heading("Grant access");
    replace(main, title);
    showAlert(
      main.appendChild(h("div", {})),
      alertBox(
        "There is no request to answer",
        "This page is opened by an application that asks for access to Mandate on your behalf. Start again from that application.",
      ),
    );
    return;
  }
  const csrf = sessionStorage.getItem(CSRF_KEY);
  if (csrf !== null) {
    void signedInWithProvider(csrf, request);
    return;
  }
  const key = apiKey();
  if (key === null) {
    signInForm(request);
    return;
  }
  void signedIn(key, request);
}

/** A link per identity provider the deployment lets people sign in with. */
function providerLinks(sealed: string, providers: SignInProvider[]): HTMLElement | null {
  if (providers.length === 0) return null;
  return h(
    "section",
    { class: "providers", "aria-label": "Sign in with your identity provider" },
    h("p", {}, "Or sign in with your organisation's identity provider:"),
    ...providers.map((provider) =>
      h("a", { class: "button-link", href: signInUrl(provider, sealed) }, "Sign in with ", h("strong", {}, provider.host)),
    ),
  );
}

function signInForm(sealed: string, why?: unknown): void {
  account.hidden = true;
  const key = h("input", {
    name: "api_key",
    type: "password",
    autocomplete: "off",
    spellcheck: false,
    required: true,
    placeholder: "mk_…",
  });
  const outcome = h("div", {});
  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    {
      class: "signin",
      "aria-labelledby": "consent-title",
      onsubmit: (event) => {
        event.preventDefault();
        void attempt();
      },
    },
    h("h1", { id: "consent-title", tabindex: -1 }, "Sign in to grant access"),
    h(
      "p",
      {},
      "An application asks to act for you through Mandate. Sign in with your Mandate API key (one made for your e-mail) to see what it asks. The key stays in this tab only.",
    ),
    field("API key", key),
    submit,
    outcome,
  );
  signInProviders().then(
    (providers) => {
      const links = providerLinks(sealed, providers);
      if (links !== null) form.append(links);
    },
    () => undefined,
  );
  const attempt = async (): Promise<void> => {
    const value = key.value.trim();
    submit.disabled = true;
    replace(outcome, h("p", { role: "status" }, "Checking the key…"));
    try {
      signIn(value, await client(value).me());
      await signedIn(value, sealed);
    } catch (error) {
      submit.disabled = false;
      showAlert(outcome, problemBox(error));
    }
  };
  replace(main, form);
  if (why !== undefined) {
    showAlert(outcome, problemBox(why));
  } else {
    key.focus();
  }
}

/** Why this key cannot grant, if it cannot: no `issue`, or made for no e-mail. */
function cannotGrant(me: Me): string | undefined {
  if (!me.permissions.includes("issue")) {
    return `This key's role (${me.role}) cannot grant access: only a key that may issue tokens (an owner's, an admin's or a developer's) can. Sign out and sign in with such a key.`;
  }
  if (me.email === undefined || me.email === null) {
    return "This key was made for no person: a grant is given by a person, as themselves. Sign out and sign in with an API key made for your e-mail.";
  }
  return undefined;
}

async function signedIn(key: string, sealed: string): Promise<void> {
  replace(main, h("p", { class: "loading", role: "status" }, "Loading the request…"));
  let me: Me;
  try {
    me = await client(key).me();
  } catch (error) {
    signOut();
    signInForm(sealed, error);
    return;
  }
  account.hidden = false;
  identity.textContent = `${me.email ?? "no e-mail"} · ${me.key_id}`;
  const refusal = cannotGrant(me);
  if (refusal !== undefined) {
    const title = heading("You cannot grant access with this key");
    replace(main, title);
    showAlert(main.appendChild(h("div", {})), alertBox("This key cannot grant access", refusal));
    return;
  }
  const credential: Credential = { kind: "key", key };
  try {
    consentForm(credential, sealed, await openRequest(credential, sealed));
  } catch (error) {
    replace(main, heading("Grant access"));
    showAlert(main.appendChild(h("div", {})), problemBox(error));
  }
}

/** Signed in by an identity provider: the session cookie and its CSRF value. */
async function signedInWithProvider(csrf: string, sealed: string): Promise<void> {
  replace(main, h("p", { class: "loading", role: "status" }, "Loading the request…"));
  const credential: Credential = { kind: "session", csrf };
  try {
    const asked = await openRequest(credential, sealed);
    account.hidden = false;
    identity.textContent = `${asked.signed_in_as} · signed in by your identity provider`;
    consentForm(credential, sealed, asked);
  } catch (error) {
    sessionStorage.removeItem(CSRF_KEY);
    signInForm(sealed, error);
  }
}

function checkbox(name: string, value: string, checked: boolean): HTMLInputElement {
  const box = h("input", { type: "checkbox", name, value });
  box.checked = checked;
  return box;
}

function choiceList(legend: string, name: string, values: string[], checked: boolean): [HTMLElement, HTMLInputElement[]] {
  const boxes = values.map((value) => checkbox(name, value, checked));
  const set = h(
    "fieldset",
    {},
    h("legend", {}, legend),
    ...boxes.map((box) => h("label", { class: "check" }, box, h("code", {}, box.value))),
  );
  return [set, boxes];
}

function numberInput(name: string): HTMLInputElement {
  return h("input", { name, type: "number", min: 0, step: "any", inputmode: "decimal" });
}

/** The value of a number input, absent when empty. */
function numberOf(input: HTMLInputElement): number | undefined {
  return input.value.trim() === "" ? undefined : Number(input.value);
}

/**
 * The argument rules typed on the page: none when empty, else a JSON list
 * (the server judges each rule and names the one at fault).
 */
function argumentRules(text: string): Record<string, unknown>[] | undefined {
  if (text.trim() === "") return undefined;
  let rules: unknown;
  try {
    rules = JSON.parse(text);
  } catch (error) {
    throw new Error(`The argument rules are not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!Array.isArray(rules)) throw new Error("The argument rules are a JSON list of rules: [ {…}, … ]");
  return rules as Record<string, unknown>[];
}

function consentForm(credential: Credential, sealed: string, asked: OpenedRequest): void {
  const [actionSet, actions] = choiceList("Actions it may take", "action", asked.actions, true);
  const namedActions = h("input", { name: "actions", spellcheck: false, placeholder: "read" });
  if (asked.actions.length === 0) {
    actionSet.append(field("Actions, separated by spaces (the request named none)", namedActions));
  }
  const resources = asked.resources.map((pattern) =>
    h("input", { name: "resource", value: pattern, spellcheck: false, "aria-label": `Resource pattern (asked: ${pattern})` }),
  );
  const named = h("textarea", { name: "resources", rows: 2, spellcheck: false });
  const resourceSet = h(
    "fieldset",
    {},
    h("legend", {}, "Resources it may act on"),
    asked.resources.length === 0
      ? field("Resource patterns, one a line (the request named none)", named)
      : h("p", { class: "hint" }, "You may narrow a pattern, e.g. crm:* to crm:contacts."),
    ...resources,
  );
  const spend = numberInput("max_spend_usd");
  const count = h("input", { name: "max_actions", type: "number", min: 1, step: 1, inputmode: "numeric" });
  const [approvalSet, approvals] = choiceList(
    "Ask me before these actions",
    "approval",
    asked.actions.filter((action) => action !== "delegate"),
    false,
  );
  const spendOver = numberInput("spend_over_usd");
  approvalSet.append(field("Ask me before spending more than (USD) at once", spendOver));
  const argRules = h("textarea", {
    name: "args",
    rows: 4,
    spellcheck: false,
    placeholder: '[{"actions": ["send"], "pol": [["all", ".to", ["like", ".", "*@example.com"]]]}]',
  });
  const argSet = h(
    "fieldset",
    {},
    h("legend", {}, "Rules on the arguments"),
    h(
      "p",
      { class: "hint" },
      "Limit the arguments it may act with, e.g. whom it may e-mail or pay: a JSON list of rules, each with the actions and resources it applies to and its statements (UCAN's policy language; see the API documentation, constraints.args). An action a rule applies to is refused without arguments that make every statement true.",
    ),
    field("Argument rules (empty: none)", argRules),
  );
  const lifetime = h(
    "select",
    { name: "lifetime" },
    ...LIFETIMES.map(([label, seconds]) => h("option", { value: seconds }, label)),
  );
  const agent = h("input", { name: "agent_id", spellcheck: false, placeholder: asked.agent_id });
  const outcome = h("div", {});
  const approve = h("button", { type: "submit" }, "Approve");
  const deny = h("button", { type: "button", class: "danger", onclick: () => void send("deny") }, "Deny");
  const title = h("h1", { id: "consent-title", tabindex: -1 }, "Grant access");

  const send = async (decision: "approve" | "deny"): Promise<void> => {
    approve.disabled = true;
    deny.disabled = true;
    replace(outcome, h("p", { role: "status" }, decision === "approve" ? "Granting…" : "Denying…"));
    try {
      const grant = decision === "approve" ? chosen() : null;
      const redirect = await decide(credential, { request: sealed, decision, grant });
      sessionStorage.removeItem(REQUEST_KEY);
      sessionStorage.removeItem(CSRF_KEY);
      location.assign(redirect);
    } catch (error) {
      approve.disabled = false;
      deny.disabled = false;
      showAlert(outcome, problemBox(error));
    }
  };

  const chosen = (): ConsentGrant => {
    const patterns =
      asked.resources.length === 0
        ? named.value.split("\n").map((line) => line.trim()).filter((line) => line !== "")
        : resources.map((input) => input.value.trim());
    const maxSpend = numberOf(spend);
    const maxActions = numberOf(count);
    const overUsd = numberOf(spendOver);
    const ask = approvals.filter((box) => box.checked).map((box) => box.value);
    const rules = argumentRules(argRules.value);
    const grant: ConsentGrant = {
      actions:
        asked.actions.length === 0
          ? namedActions.value.split(" ").filter((action) => action !== "")
          : actions.filter((box) => box.checked).map((box) => box.value),
      resources: patterns,
      ttl_seconds: Number(lifetime.value),
    };
    if (agent.value.trim() !== "") grant.agent_id = agent.value.trim();
    if (maxSpend !== undefined || maxActions !== undefined || ask.length > 0 || overUsd !== undefined || rules !== undefined) {
      grant.constraints = {
        max_spend_usd: maxSpend ?? null,
        max_actions: maxActions ?? null,
        args: rules ?? null,
        require_approval:
          ask.length > 0 || overUsd !== undefined
            ? { actions: ask.length > 0 ? ask : null, spend_over_usd: overUsd ?? null }
            : null,
      };
    }
    return grant;
  };

  const form = h(
    "form",
    {
      class: "consent",
      "aria-labelledby": "consent-title",
      onsubmit: (event) => {
        event.preventDefault();
        void send("approve");
      },
    },
    title,
    h(
      "section",
      { class: "who", "aria-label": "Who asks" },
      ...who(asked),
      h("p", {}, "asks to act for you. When you answer, your browser goes back to ", h("strong", { class: "host" }, asked.redirect_host), "."),
      asked.redirect_loopback
        ? h(
            "p",
            { class: "warning" },
            "It goes back to a program on this computer (loopback). Approve only if you started that program yourself just now.",
          )
        : null,
      h("p", {}, "The token is for the server ", h("code", { class: "resource" }, asked.resource), "."),
    ),
    h(
      "section",
      { "aria-label": "What it asks" },
      h("h2", {}, "What it asks"),
      h(
        "table",
        {},
        h("caption", {}, "Requested actions on requested resources"),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Actions"), h("th", { scope: "col" }, "Resources"))),
        h(
          "tbody",
          {},
          h(
            "tr",
            {},
            h("td", {}, asked.actions.length === 0 ? "none named: you name them" : asked.actions.join(", ")),
            h("td", {}, asked.resources.length === 0 ? "none named: you name them" : asked.resources.join(", ")),
          ),
        ),
      ),
      asked.actions.includes("delegate")
        ? h("p", { class: "hint" }, "It asks to hand narrower tokens to sub-agents (delegate): clear that action to refuse it.")
        : null,
    ),
    h("h2", {}, "What you grant"),
    actionSet,
    resourceSet,
    h(
      "fieldset",
      {},
      h("legend", {}, "Limits"),
      field("Budget (USD, empty: none)", spend),
      field("Most actions (empty: no limit)", count),
    ),
    approvalSet,
    argSet,
    field("For how long", lifetime),
    field(`Agent name (empty: ${asked.agent_id})`, agent),
    h("p", { class: "hint" }, `Answer before ${asked.expires_at}.`),
    h("div", { class: "decision" }, approve, deny),
    outcome,
  );
  replace(main, form);
  title.focus();
}

document.getElementById("sign-out")?.addEventListener("click", () => {
  signOut();
  sessionStorage.removeItem(CSRF_KEY);
  render();
});

render();
