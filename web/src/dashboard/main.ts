// The dashboard's shell: the header and navigation, sign-in, and the views
// chosen by the hash route. Each view renders into a fresh container.

import "./style.css";
import { h, replace } from "./dom.js";
import { type Route, currentRoute } from "./router.js";
import { apiKey, signOut } from "./session.js";
import { whenSignedOut } from "./ui.js";
import { agentView } from "./views/agent.js";
import { signInView } from "./views/signin.js";
import { tokensView } from "./views/tokens.js";
import { workflowView } from "./views/workflow.js";
import { workflowsView } from "./views/workflows.js";

type View = (root: HTMLElement, route: Route) => Promise<void | (() => void)>;

const VIEWS: Record<string, { view: View; title: string; nav: string }> = {
  "": { view: workflowsView, title: "Workflows", nav: "workflows" },
  workflow: { view: workflowView, title: "Workflow", nav: "workflows" },
  agent: { view: agentView, title: "Agent", nav: "agent" },
  tokens: { view: tokensView, title: "Tokens", nav: "tokens" },
};

const main = document.getElementById("main") as HTMLElement;
const nav = document.getElementById("nav") as HTMLElement;
const signOutButton = document.getElementById("sign-out") as HTMLButtonElement;

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

function showSignIn(why?: unknown): void {
  cleanup?.();
  cleanup = undefined;
  nav.hidden = true;
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
  nav.hidden = false;
  const current = currentRoute();
  const chosen = VIEWS[current.segments[0] ?? ""];
  const root = h("div", { class: "view" });
  replace(main, root);
  if (chosen === undefined) {
    markNav(undefined);
    document.title = "Not found · Mandate";
    root.append(
      h("h1", { tabindex: -1 }, "Not found"),
      h("p", {}, "There is no such page. ", h("a", { href: "#/" }, "See the workflows.")),
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
  showSignIn(problem);
});

signOutButton.addEventListener("click", () => {
  signOut();
  showSignIn();
});

window.addEventListener("hashchange", () => void render());
void render();
