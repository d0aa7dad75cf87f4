// The dashboard's shell: the header with the navigation (the inbox's count
// of what waits, kept current by the events) and who is signed in, sign-in,
// and the views chosen by the hash route. Each view renders into a fresh
// container. A view that needs a permission the key's role lacks is neither
// linked nor shown. The landing page is the inbox for a key that may decide
// or rate, the workflows otherwise.

import "./style.css";
import type { Me, Permission } from "mandate-sdk/web";
import { h, replace } from "./dom.js";
import { follow, goLive, stopLive } from "./live.js";
import { type Route, currentRoute } from "./router.js";
import { apiKey, can, client, loadIdentity, signOut, whoAmI } from "./session.js";
import { loading, problemBox, signedOut, whenSignedOut } from "./ui.js";
import { agentView } from "./views/agent.js";
import { agentsView } from "./views/agents.js";
import { approvalView } from "./views/approval.js";
import { approvalsView } from "./views/approvals.js";
import { clientsView } from "./views/clients.js";
import { grantsView } from "./views/grants.js";
import { inboxView } from "./views/inbox.js";
import { keysView } from "./views/keys.js";
import { overviewView } from "./views/overview.js";
import { resourcesView } from "./views/resources.js";
import { signInView } from "./views/signin.js";
import { tokensView } from "./views/tokens.js";
import { workflowView } from "./views/workflow.js";
import { workflowsView } from "./views/workflows.js";

type View = (root: HTMLElement, route: Route) => Promise<void | (() => void)>;

const VIEWS: Record<string, { view: View; title: string; nav: string; needs?: Permission }> = {
  inbox: { view: inboxView, title: "Inbox", nav: "inbox" },
  workflows: { view: workflowsView, title: "Workflows", nav: "workflows" },
  workflow: { view: workflowView, title: "Workflow", nav: "workflows" },
  overview: { view: overviewView, title: "Overview", nav: "overview" },
  agents: { view: agentsView, title: "Agents", nav: "agents" },
  agent: { view: agentView, title: "Agent", nav: "agents" },
  tokens: { view: tokensView, title: "Tokens", nav: "tokens" },
  approvals: { view: approvalsView, title: "Approvals", nav: "approvals" },
  approval: { view: approvalView, title: "Approval", nav: "approvals" },
  keys: { view: keysView, title: "Keys", nav: "keys", needs: "manage_keys" },
  grants: { view: grantsView, title: "Grants", nav: "grants" },
  clients: { view: clientsView, title: "OAuth clients", nav: "clients", needs: "manage_clients" },
  resources: { view: resourcesView, title: "OAuth resources", nav: "resources", needs: "manage_clients" },
};

const main = document.getElementById("main") as HTMLElement;
const nav = document.getElementById("nav") as HTMLElement;
const account = document.getElementById("account") as HTMLElement;
const identity = document.getElementById("identity") as HTMLElement;
const signOutButton = document.getElementById("sign-out") as HTMLButtonElement;
const liveIndicator = document.getElementById("live") as HTMLElement;
const inboxCount = nav.querySelector<HTMLElement>('[data-count="inbox"]') as HTMLElement;

/** How often the inbox's count is asked again (a success, which may wait for a rating, has no event). */
const COUNTS_POLL_MS = 30_000;

let stopCounts: (() => void) | undefined;

/** Keeps the inbox's count in the navigation current; a server that cannot say leaves it out. */
function followCounts(): void {
  stopCounts ??= follow({
    wanted: (event) => event.type !== "token.revoked" && event.type !== "budget.threshold",
    reload: async () => {
      try {
        const counts = await client().inboxCounts();
        const waiting = counts.approvals_pending + counts.records_unrated;
        inboxCount.hidden = waiting === 0;
        replace(
          inboxCount,
          ` ${waiting}`,
          h(
            "span",
            { class: "visually-hidden" },
            ` waiting: ${counts.approvals_pending} approval${counts.approvals_pending === 1 ? "" : "s"}, ${counts.records_unrated} record${counts.records_unrated === 1 ? "" : "s"} to rate`,
          ),
        );
      } catch (error) {
        inboxCount.hidden = true;
        signedOut(error);
      }
    },
    pollMs: COUNTS_POLL_MS,
  });
}

function stopFollowing(): void {
  stopCounts?.();
  stopCounts = undefined;
  stopLive();
}

let cleanup: (() => void) | undefined;

function markNav(current: string | undefined): void {
  for (const anchor of nav.querySelectorAll<HTMLAnchorElement>("a[data-nav]")) {
    if (anchor.dataset.nav === current) {
      anchor.setAttribute("aria-current", "page");
    } else {
      anchor.removeAttribute("aria-current");
    }
  }
}

/** The header's account: the organisation, the role, and whether it is the admin key. */
function showAccount(me: Me): void {
  identity.dataset.org = me.org.name;
  identity.dataset.role = me.role;
  identity.dataset.admin = String(me.admin);
  identity.title = `${me.email ?? "no e-mail"} · ${me.key_id}`;
  replace(
    identity,
    h("span", { class: "visually-hidden" }, "Signed in to organisation "),
    h("span", { class: "identity-org" }, me.org.name),
    h("span", { class: "visually-hidden" }, " as "),
    h("span", { class: "identity-role" }, me.role),
    me.admin
      ? h(
          "span",
          { class: "identity-role identity-admin" },
          h("span", { class: "visually-hidden" }, ", with the "),
          "admin",
          h("span", { class: "visually-hidden" }, " key"),
        )
      : null,
  );
  for (const anchor of nav.querySelectorAll<HTMLAnchorElement>("a[data-needs]")) {
    anchor.hidden = !can(anchor.dataset.needs as Permission);
  }
  nav.hidden = false;
  account.hidden = false;
  goLive(liveIndicator);
  followCounts();
}

function showSignIn(why?: unknown): void {
  cleanup?.();
  cleanup = undefined;
  nav.hidden = true;
  account.hidden = true;
  document.title = "Sign in · Mandate";
  const root = h("div", { class: "view" });
  replace(main, root);
  signInView(root, () => void render(), why);
}

async function render(): Promise<void> {
  if (apiKey() === null) {
    showSignIn();
    return;
  }
  cleanup?.();
  cleanup = undefined;
  const root = h("div", { class: "view" });
  replace(main, root);
  let me = whoAmI();
  if (me === undefined) {
    root.append(loading("this key's organisation and role"));
    try {
      me = await loadIdentity();
    } catch (error) {
      if (!signedOut(error)) {
        // Signing out stays possible while the server cannot say who this is.
        replace(identity);
        account.hidden = false;
        replace(root, problemBox(error));
      }
      return;
    }
    if (!main.contains(root)) {
      // A newer render took over while the server was asked.
      return;
    }
    replace(root);
  }
  showAccount(me);
  const current = currentRoute();
  const landing = can("decide") || can("rate") ? "inbox" : "workflows";
  const chosen = VIEWS[current.segments[0] ?? landing];
  if (chosen === undefined) {
    markNav(undefined);
    document.title = "Not found · Mandate";
    root.append(
      h("h1", { tabindex: -1 }, "Not found"),
      h("p", {}, "There is no such page. ", h("a", { href: "#/workflows" }, "See the workflows.")),
    );
    root.querySelector("h1")?.focus();
    return;
  }
  if (chosen.needs !== undefined && !can(chosen.needs)) {
    markNav(undefined);
    document.title = "Not allowed · Mandate";
    root.append(
      h("h1", { tabindex: -1 }, "Not allowed"),
      h(
        "p",
        {},
        `${chosen.title} needs the `,
        h("code", {}, chosen.needs),
        ` permission, which this ${me.role} key of ${me.org.name} does not hold. `,
        h("a", { href: "#/workflows" }, "See the workflows."),
      ),
    );
    root.querySelector("h1")?.focus();
    return;
  }
  markNav(chosen.nav);
  document.title = `${chosen.title} · Mandate`;
  const finished = chosen.view(root, current);
  root.querySelector("h1")?.focus();
  const done = await finished;
  if (typeof done === "function") {
    if (main.contains(root)) {
      cleanup = done;
    } else {
      done();
    }
  }
}

whenSignedOut((problem) => {
  signOut();
  stopFollowing();
  showSignIn(problem);
});

signOutButton.addEventListener("click", () => {
  signOut();
  stopFollowing();
  showSignIn();
});

window.addEventListener("hashchange", () => void render());
void render();
