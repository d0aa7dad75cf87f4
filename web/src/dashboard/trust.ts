// An agent's trust on its page: the score beside its reputation with the
// parts it is made of, who vouches for it and whom it vouches for, a small
// drawing of that neighbourhood (an SVG, its table twin the lists above it),
// and, for a key whose role may `vouch`, a form to vouch and a button to
// withdraw. The server decides who may do what; the page offers only what
// the key's permissions suggest and shows any refusal as it comes.

import type { AgentTrust, Vouch, Voucher } from "mandate-sdk/web";
import { type Child, h, link, replace } from "./dom.js";
import { fromLocalInput, score, time, timeElement } from "./format.js";
import { route } from "./router.js";
import { can, client, whoAmI } from "./session.js";
import { confirmDialog, field, loading, problemBox, signedOut, submitting } from "./ui.js";

const SVG = "http://www.w3.org/2000/svg";

/** How long the page waits for the server's recomputation to pass a vouch it just made, ms. */
const RECOMPUTE_WAIT_MS = 8000;
/** How often it asks again meanwhile, ms. */
const RECOMPUTE_POLL_MS = 400;

/** What the organisation knows its humans by: key id → e-mail, for a key that may list the keys. */
type Names = Map<string, string>;

async function keyNames(): Promise<Names> {
  const names: Names = new Map();
  const me = whoAmI();
  if (me?.email) {
    names.set(me.key_id, me.email);
  }
  if (!can("manage_keys")) {
    return names;
  }
  try {
    for (const key of (await client().listKeys()).keys) {
      if (key.email !== null) {
        names.set(key.key_id, key.email);
      }
    }
  } catch {
    // Names are a courtesy: the key ids still say who.
  }
  return names;
}

/** A voucher in words: a human by e-mail (or key id), "you" for this key; an agent by id. */
function voucherText(voucher: Voucher, names: Names): string {
  if (voucher.kind === "agent") {
    return voucher.agent_id;
  }
  const name = names.get(voucher.key_id) ?? voucher.key_id;
  return voucher.key_id === whoAmI()?.key_id ? `${name} (you)` : name;
}

function voucherElement(voucher: Voucher, names: Names): HTMLElement {
  if (voucher.kind === "agent") {
    return h("span", {}, h("span", { class: "muted" }, "agent "), link(route(["agent", voucher.agent_id]), voucher.agent_id));
  }
  return h("span", { title: voucher.key_id }, h("span", { class: "muted" }, "human "), voucherText(voucher, names));
}

function meter(label: string, value: number, name: string, low = 0.4, high = 0.7): HTMLElement {
  const id = `trust-${name}`;
  return h(
    "div",
    { class: "score", "data-trust": name },
    h("span", { id, class: "score-label" }, label),
    h("meter", { min: 0, max: 1, low, high, optimum: 1, value, "aria-labelledby": id }),
    h("span", { class: "score-value" }, score(value)),
  );
}

/** Whether this key may withdraw `vouch`: its own vouch, or any with a key that manages the organisation's keys (an owner's). */
function mayWithdraw(vouch: Vouch): boolean {
  const me = whoAmI();
  if (!can("vouch") || me === undefined) {
    return false;
  }
  return (vouch.voucher.kind === "human" && vouch.voucher.key_id === me.key_id) || can("manage_keys");
}

function vouchTable(
  caption: string,
  vouches: Vouch[],
  who: (vouch: Vouch) => Child,
  whoLabel: string,
  withdraw: ((vouch: Vouch) => void) | undefined,
): HTMLElement {
  if (vouches.length === 0) {
    return h("p", { class: "muted", "data-empty": caption }, `${caption}: none.`);
  }
  const actions = withdraw !== undefined && vouches.some(mayWithdraw);
  return h(
    "table",
    { class: "list vouches" },
    h("caption", {}, caption),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, whoLabel),
        h("th", { scope: "col", class: "number" }, "Weight"),
        h("th", { scope: "col" }, "Reason"),
        h("th", { scope: "col" }, "Since"),
        h("th", { scope: "col" }, "Expires"),
        actions ? h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Actions")) : null,
      ),
    ),
    h(
      "tbody",
      {},
      ...vouches.map((vouch) =>
        h(
          "tr",
          { "data-vouch-id": vouch.vouch_id, "data-voucher-kind": vouch.voucher.kind },
          h("td", { "data-label": whoLabel }, who(vouch)),
          h("td", { "data-label": "Weight", class: "number" }, score(vouch.weight)),
          h("td", { "data-label": "Reason" }, vouch.reason ?? h("span", { class: "muted" }, "—")),
          h("td", { "data-label": "Since" }, timeElement(vouch.created_at)),
          h("td", { "data-label": "Expires" }, vouch.expires_at === undefined ? "never (until withdrawn)" : timeElement(vouch.expires_at)),
          actions
            ? h(
                "td",
                {},
                mayWithdraw(vouch) && withdraw !== undefined
                  ? h("button", { type: "button", class: "danger", onclick: () => withdraw(vouch) }, "Withdraw")
                  : null,
              )
            : null,
        ),
      ),
    ),
  );
}

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number>, text?: string): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) {
    element.setAttribute(name, String(value));
  }
  if (text !== undefined) {
    element.textContent = text;
  }
  return element;
}

function truncate(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

/** The most vouchers (and vouched) drawn on each side; the lists above hold them all. */
const DRAWN = 8;

/**
 * The neighbourhood: vouchers on the left, the agent in the middle, the
 * agents it vouches for on the right; each line as thick as the vouch's
 * weight. Agents link to their pages.
 */
export function neighbourhood(value: AgentTrust, names: Names): SVGSVGElement {
  const left = value.vouches.slice(0, DRAWN);
  const right = value.vouched.slice(0, DRAWN);
  const rows = Math.max(left.length, right.length, 1);
  const width = 640;
  const rowHeight = 44;
  const height = Math.max(rows * rowHeight + 16, 80);
  const node = { w: 170, h: 32 };
  const centre = { x: width / 2, y: height / 2 };
  const drawing = svg("svg", {
    viewBox: `0 0 ${width} ${height}`,
    class: "trust-graph",
    role: "img",
    "aria-label": `${value.agent_id}: vouched for by ${value.vouches.length}, vouches for ${value.vouched.length}`,
    preserveAspectRatio: "xMidYMid meet",
  });
  const defs = svg("defs", {});
  const marker = svg("marker", { id: "trust-arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto" });
  marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#64748b" }));
  defs.append(marker);
  drawing.append(defs);
  const y = (index: number, count: number): number => (height - count * rowHeight) / 2 + index * rowHeight + rowHeight / 2;
  const box = (x: number, top: number, label: string, kind: string, agent: string | undefined, title: string): SVGElement => {
    const group = svg("g", { class: `trust-node trust-node-${kind}`, "data-kind": kind });
    const title_ = svg("title", {}, title);
    group.append(title_);
    group.append(svg("rect", { x: x - node.w / 2, y: top - node.h / 2, width: node.w, height: node.h, rx: kind === "human" ? 16 : 5 }));
    group.append(svg("text", { x, y: top + 5, "text-anchor": "middle" }, truncate(label, 21)));
    if (agent === undefined || kind === "self") {
      return group;
    }
    const anchor = svg("a", { href: `#${route(["agent", agent])}`, "data-agent": agent });
    anchor.append(group);
    return anchor;
  };
  const edge = (x1: number, y1: number, x2: number, y2: number, weight: number, id: string): SVGElement =>
    svg("line", {
      x1,
      y1,
      x2,
      y2,
      class: "trust-edge",
      "data-vouch-id": id,
      "stroke-width": 1 + weight * 4,
      "marker-end": "url(#trust-arrow)",
    });
  left.forEach((vouch, index) => {
    const top = y(index, left.length);
    drawing.append(edge(node.w / 2 + 8 + node.w / 2, top, centre.x - node.w / 2, centre.y, vouch.weight, vouch.vouch_id));
  });
  right.forEach((vouch, index) => {
    const top = y(index, right.length);
    drawing.append(edge(centre.x + node.w / 2, centre.y, width - node.w - 8, top, vouch.weight, vouch.vouch_id));
  });
  left.forEach((vouch, index) => {
    const label = voucherText(vouch.voucher, names);
    const agent = vouch.voucher.kind === "agent" ? vouch.voucher.agent_id : undefined;
    drawing.append(box(node.w / 2 + 8, y(index, left.length), label, vouch.voucher.kind, agent, `${label} vouches ${score(vouch.weight)}`));
  });
  right.forEach((vouch, index) => {
    drawing.append(box(width - node.w / 2 - 8, y(index, right.length), vouch.agent_id, "agent", vouch.agent_id, `vouched for ${vouch.agent_id}, ${score(vouch.weight)}`));
  });
  drawing.append(box(centre.x, centre.y, `${value.agent_id} · ${score(value.trust)}`, "self", value.agent_id, `${value.agent_id}: trust ${score(value.trust)}`));
  return drawing;
}

/** The score and its parts. */
function scores(value: AgentTrust): HTMLElement {
  return h(
    "div",
    { class: "trust" },
    meter("Trust", value.trust, "trust"),
    meter("Reputation", value.reputation, "reputation"),
    meter("Vouches (graph)", value.graph, "graph"),
    meter("Activity (decay)", value.decay, "decay"),
    meter("Ceiling", value.ceiling, "ceiling"),
    h(
      "p",
      { class: "muted" },
      "Trust = min(ceiling, decay × (0.5 × reputation + 0.5 × graph)). The graph part grows with the vouches received, each weighted by its voucher's own trust (a human counts fully; fresh agents of one creator count once); decay halves it every 30 days without activity; the ceiling is 1 for an agent a human issued a token to, else the highest trust of the agents that delegated to it.",
    ),
    h("p", { class: "muted computed" }, "Computed ", h("time", { datetime: value.computed_at }, time(value.computed_at)), "."),
  );
}

/** The vouch form, for a key that may vouch. */
function vouchForm(agentId: string, vouched: (vouch: Vouch) => Promise<void>): HTMLFormElement {
  const weight = h("input", { name: "weight", type: "number", min: 0.01, max: 1, step: 0.01, value: "0.5", required: true });
  const reason = h("input", { name: "reason", maxlength: 512, autocomplete: "off", placeholder: "ran clean for a month" });
  const expires = h("input", { name: "expires_at", type: "datetime-local" });
  const outcome = h("div", { "aria-live": "polite" });
  const submit = h("button", { type: "submit" }, "Vouch");
  const form = h(
    "form",
    {
      class: "filters vouch-form",
      "aria-label": `Vouch for ${agentId}`,
      onsubmit: (event) => {
        event.preventDefault();
        void send();
      },
    },
    field("Weight (0–1]", weight),
    field("Reason", reason),
    field("Expires (optional)", expires),
    h("div", { class: "filter-actions" }, submit),
    outcome,
  );
  const send = async (): Promise<void> => {
    await submitting(submit, outcome, "Vouching…", async () => {
      const text = reason.value.trim();
      const until = fromLocalInput(expires.value);
      const made = await client().vouch({
        agent_id: agentId,
        weight: Number(weight.value),
        ...(text === "" ? {} : { reason: text }),
        ...(until === undefined ? {} : { expires_at: until }),
    });
    form.reset();
    replace(outcome, h("p", { role: "status", class: "vouched" }, `Vouched (${made.vouch_id}); the trust is recomputed in a moment.`));
    await vouched(made);
    });
  };
  return form;
}

/** The trust section of an agent's page. */
export class TrustPanel {
  readonly element: HTMLElement;
  readonly #agentId: string;
  readonly #region = h("div", { "aria-live": "polite", class: "trust-region" });
  #names: Names | undefined;
  #stopped = false;

  constructor(agentId: string) {
    this.#agentId = agentId;
    this.element = h(
      "section",
      { "aria-labelledby": "trust-title", class: "trust-section" },
      h("h2", { id: "trust-title" }, "Trust"),
      this.#region,
    );
  }

  /** Loads the trust again; with `after`, until the server's computation is later than it (or a few seconds passed). */
  async reload(after?: string): Promise<void> {
    if (this.#region.childElementCount === 0) {
      replace(this.#region, loading("the trust"));
    }
    this.#region.setAttribute("aria-busy", "true");
    try {
      this.#names ??= await keyNames();
      let value = await client().trust(this.#agentId);
      const deadline = Date.now() + RECOMPUTE_WAIT_MS;
      while (after !== undefined && !this.#stopped && Date.parse(value.computed_at) < Date.parse(after) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, RECOMPUTE_POLL_MS));
        value = await client().trust(this.#agentId);
      }
      if (!this.#stopped) {
        this.#show(value, this.#names);
      }
    } catch (error) {
      if (!signedOut(error)) {
        replace(this.#region, problemBox(error));
      }
    } finally {
      this.#region.removeAttribute("aria-busy");
    }
  }

  #show(value: AgentTrust, names: Names): void {
    const withdraw = (vouch: Vouch): void => {
      let withdrawnAt: string | undefined;
      const dialog = confirmDialog({
        headingId: "withdraw-title",
        heading: "Withdraw this vouch?",
        body: [
          h(
            "p",
            {},
            `${voucherText(vouch.voucher, names)} vouches for ${vouch.agent_id} with weight ${score(vouch.weight)}. `,
            "Withdrawn, it no longer counts; the withdrawal is written in the record log and cannot be undone (a new vouch can be made).",
          ),
        ],
        confirm: "Withdraw",
        pending: "Withdrawing…",
        act: async () => {
          withdrawnAt = (await client().withdrawVouch(vouch.vouch_id)).withdrawn_at;
        },
        done: () => void this.reload(withdrawnAt),
      });
      document.body.append(dialog);
      dialog.addEventListener("close", () => dialog.remove());
      dialog.showModal();
    };
    const form = can("vouch")
      ? vouchForm(this.#agentId, (made) => this.reload(made.created_at))
      : h("p", { class: "muted read-only" }, "This key's role may not vouch: vouching is for owners and reviewers.");
    replace(
      this.#region,
      h("div", { "data-computed-at": value.computed_at }, scores(value)),
      vouchTable("Vouched for by", value.vouches, (vouch) => voucherElement(vouch.voucher, names), "Voucher", withdraw),
      vouchTable(
        "Vouches for",
        value.vouched,
        (vouch) => link(route(["agent", vouch.agent_id]), vouch.agent_id),
        "Agent",
        withdraw,
      ),
      h(
        "figure",
        { class: "trust-neighbourhood" },
        neighbourhood(value, names),
        h(
          "figcaption",
          { class: "muted" },
          "Its neighbourhood: who vouches for it (left) and whom it vouches for (right); a thicker line is a heavier vouch.",
          value.vouches.length > DRAWN || value.vouched.length > DRAWN ? ` Only the first ${DRAWN} of each side are drawn.` : "",
        ),
      ),
      h("h3", {}, "Vouch"),
      form,
    );
  }

  destroy(): void {
    this.#stopped = true;
  }
}
