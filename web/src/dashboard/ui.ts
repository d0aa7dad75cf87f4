// Pieces every view shares: the loading state, problem boxes that show a
// problem's title and detail, the pager for cursor-paginated lists, and the
// dialog that asks before an act that cannot be undone.

import { type DashboardWindow, MandateError } from "mandate-sdk/web";
import { type Child, h, replace } from "./dom.js";

/** The windows the agents list and the overview offer. */
export const WINDOWS: DashboardWindow[] = ["24h", "7d", "30d"];

let onSignedOut: (problem: MandateError) => void = () => undefined;

/** Sets what happens when the server refuses the API key (the shell signs out). */
export function whenSignedOut(handler: (problem: MandateError) => void): void {
  onSignedOut = handler;
}

/** Hands a 401 to the sign-out handler; true when it was one. */
export function signedOut(error: unknown): boolean {
  if (error instanceof MandateError && error.status === 401) {
    onSignedOut(error);
    return true;
  }
  return false;
}

/** A problem's title, detail and code, as an alert. */
export function problemBox(error: unknown): HTMLElement {
  if (error instanceof MandateError) {
    return h(
      "div",
      { class: "problem", role: "alert" },
      h("p", { class: "problem-title" }, error.title),
      error.detail === undefined ? null : h("p", { class: "problem-detail" }, error.detail),
      h(
        "p",
        { class: "problem-code" },
        error.status === 0 ? error.code : `${error.status} · ${error.code}`,
      ),
    );
  }
  return h(
    "div",
    { class: "problem", role: "alert" },
    h("p", { class: "problem-title" }, "Something went wrong"),
    h("p", { class: "problem-detail" }, error instanceof Error ? error.message : String(error)),
  );
}

export function loading(what: string): HTMLElement {
  return h("p", { class: "loading", role: "status" }, `Loading ${what}…`);
}

/**
 * Shows "loading" in `region`, then what `show` makes of the answer, or the
 * problem; a refused API key signs out instead.
 */
export async function load<T>(
  region: HTMLElement,
  what: string,
  fetch: () => Promise<T>,
  show: (value: T) => Node,
): Promise<void> {
  region.setAttribute("aria-busy", "true");
  replace(region, loading(what));
  try {
    const value = await fetch();
    replace(region, show(value));
  } catch (error) {
    if (!signedOut(error)) {
      replace(region, problemBox(error));
    }
  } finally {
    region.removeAttribute("aria-busy");
  }
}

/**
 * Walks a cursor-paginated list: remembers the cursors of the pages seen so
 * that "Previous" goes back without the server keeping state.
 */
export class Pages {
  #cursors: Array<string | undefined> = [undefined];
  #next: string | undefined;

  /** The cursor of the page being shown. */
  get current(): string | undefined {
    return this.#cursors[this.#cursors.length - 1];
  }

  get number(): number {
    return this.#cursors.length;
  }

  /** Records the next page's cursor as the server gave it. */
  loaded(nextCursor: string | undefined): void {
    this.#next = nextCursor;
  }

  reset(): void {
    this.#cursors = [undefined];
    this.#next = undefined;
  }

  forward(): boolean {
    if (this.#next === undefined) {
      return false;
    }
    this.#cursors.push(this.#next);
    return true;
  }

  back(): boolean {
    if (this.#cursors.length < 2) {
      return false;
    }
    this.#cursors.pop();
    return true;
  }

  /** Previous / page n / Next controls calling `go` after moving. */
  controls(label: string, go: () => void): HTMLElement {
    return h(
      "nav",
      { class: "pager", "aria-label": `${label} pages` },
      h(
        "button",
        {
          type: "button",
          disabled: this.#cursors.length < 2,
          onclick: () => this.back() && go(),
        },
        "← Previous",
      ),
      h("span", {}, `Page ${this.number}`),
      h(
        "button",
        {
          type: "button",
          disabled: this.#next === undefined,
          onclick: () => this.forward() && go(),
        },
        "Next →",
      ),
    );
  }
}

/** What a confirmation dialog says and does. */
export interface Confirmation {
  /** The id of its heading, which labels the dialog. */
  headingId: string;
  heading: string;
  /** What the act does, and any fields it takes. */
  body: Child[];
  /** The confirm button's label. */
  confirm: string;
  /** What the dialog says while `act` runs. */
  pending: string;
  act: () => Promise<void>;
  /** Called once `act` succeeded and the dialog closed. */
  done: () => void;
}

/**
 * A modal dialog asking before an act that cannot be undone: Cancel, or the
 * confirm button, which runs the act; a refusal is shown in the dialog (a
 * refused API key signs out instead).
 */
export function confirmDialog(asked: Confirmation): HTMLDialogElement {
  const outcome = h("div", { "aria-live": "polite" });
  const confirm = h("button", { type: "submit", class: "danger" }, asked.confirm);
  const dialog = h("dialog", { class: "confirm", "aria-labelledby": asked.headingId });
  const run = async (): Promise<void> => {
    confirm.disabled = true;
    replace(outcome, h("p", { role: "status" }, asked.pending));
    try {
      await asked.act();
      dialog.close();
      asked.done();
    } catch (error) {
      confirm.disabled = false;
      if (!signedOut(error)) {
        replace(outcome, problemBox(error));
      }
    }
  };
  const form = h(
    "form",
    {
      onsubmit: (event) => {
        event.preventDefault();
        void run();
      },
    },
    h("h2", { id: asked.headingId }, asked.heading),
    ...asked.body,
    outcome,
    h(
      "div",
      { class: "dialog-actions" },
      h("button", { type: "button", onclick: () => dialog.close() }, "Cancel"),
      confirm,
    ),
  );
  dialog.append(form);
  return dialog;
}

/**
 * Runs a form's act with its submit button disabled and `pending` said in
 * `outcome` meanwhile; a refusal is shown in `outcome` (a refused API key
 * signs out instead). What success shows is the act's to say.
 */
export async function submitting(
  submit: HTMLButtonElement,
  outcome: HTMLElement,
  pending: string,
  act: () => Promise<void>,
): Promise<void> {
  submit.disabled = true;
  replace(outcome, h("p", { role: "status" }, pending));
  try {
    await act();
  } catch (error) {
    if (!signedOut(error)) {
      replace(outcome, problemBox(error));
    }
  } finally {
    submit.disabled = false;
  }
}

/** A labelled form field. */
export function field(label: string, control: HTMLElement): HTMLElement {
  return h("label", { class: "field" }, h("span", {}, label), control);
}
