// Signing in with an API key: the server says what it is (`GET /v1/me`,
// which any key may ask), then it is kept in sessionStorage for this tab.

import { h, replace } from "../dom.js";
import { client, signIn } from "../session.js";
import { field, problemBox } from "../ui.js";

/** The sign-in form; `why` is a problem to show first (a refused key). */
export function signInView(root: HTMLElement, signedIn: () => void, why?: unknown): void {
  const key = h("input", {
    name: "api_key",
    type: "password",
    autocomplete: "off",
    spellcheck: false,
    required: true,
    placeholder: "mk_…",
  });
  const outcome = h("div", { "aria-live": "polite" }, why === undefined ? null : problemBox(why));
  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    {
      class: "signin",
      "aria-labelledby": "signin-title",
      onsubmit: (event) => {
        event.preventDefault();
        void attempt();
      },
    },
    h("h1", { id: "signin-title", tabindex: -1 }, "Sign in"),
    h(
      "p",
      {},
      "Sign in with a Mandate API key. The first start of the server writes the admin key to ",
      h("code", {}, "admin.key"),
      " in its data folder; an owner makes more on the Keys page, or the operator with ",
      h("code", {}, "mandate keys create"),
      ". The key stays in this tab only.",
    ),
    field("API key", key),
    submit,
    outcome,
  );
  const attempt = async (): Promise<void> => {
    const value = key.value.trim();
    submit.disabled = true;
    replace(outcome, h("p", { role: "status" }, "Checking the key…"));
    try {
      signIn(value, await client(value).me());
      signedIn();
    } catch (error) {
      replace(outcome, problemBox(error));
      submit.disabled = false;
    }
  };
  root.append(form);
  key.focus();
}
