// Rating a record: approve, flag or reject with an optional note. A record
// takes one rating; once rated it shows the rating, and nothing changes it.
// A key whose role does not allow `rate` sees the record read-only.

import { type ActionRecord, MandateError, type Rating } from "mandate-sdk/web";
import { h, replace } from "./dom.js";
import { badge, time } from "./format.js";
import { can, client, whoAmI } from "./session.js";
import { problemBox, signedOut } from "./ui.js";

const CHOICES: Array<{ rating: Rating; label: string }> = [
  { rating: "approved", label: "Approve" },
  { rating: "flagged", label: "Flag" },
  { rating: "rejected", label: "Reject" },
];

/** Most bytes of a note the server takes. */
const NOTE_MAX = 2048;

function given(record: ActionRecord & { rating: Rating }): HTMLElement {
  return h(
    "div",
    { class: "rating-given", "data-rating": record.rating },
    h("p", {}, "Rated ", badge(record.rating), record.feedback_at === undefined ? null : ` at ${time(record.feedback_at)}`),
    record.note === undefined ? null : h("blockquote", {}, record.note),
  );
}

/** Says that this key reads records but does not rate them. */
function readOnly(): HTMLElement {
  const role = whoAmI()?.role;
  return h(
    "p",
    { class: "read-only" },
    h("strong", {}, "Read-only. "),
    `This ${role === undefined ? "" : `${role} `}key may read records but not rate them (it lacks the `,
    h("code", {}, "rate"),
    " permission).",
  );
}

/**
 * The rating of `record`, or the controls to rate it when it is completed
 * and unrated and the key may rate. `rated` gets the record as it is after
 * a rating.
 */
export function ratingControls(record: ActionRecord, rated: (record: ActionRecord) => void): HTMLElement {
  if (!can("rate")) {
    const box = h("div", {});
    if (record.rating !== undefined) {
      box.append(given({ ...record, rating: record.rating }));
    }
    box.append(readOnly());
    return box;
  }
  if (record.rating !== undefined) {
    return given({ ...record, rating: record.rating });
  }
  if (record.status !== "completed") {
    return h("p", { class: "muted" }, `A ${record.status} record cannot be rated; only completed ones can.`);
  }
  const note = h("textarea", { name: "note", rows: 2, maxlength: NOTE_MAX });
  const outcome = h("div", { "aria-live": "polite" });
  const buttons = CHOICES.map(({ rating, label }) =>
    h(
      "button",
      {
        type: "button",
        class: `rate rate-${rating}`,
        "data-rating": rating,
        onclick: () => void rate(rating),
      },
      label,
    ),
  );
  const form = h(
    "fieldset",
    { class: "rating" },
    h("legend", {}, "Rate this outcome"),
    h("label", { class: "field" }, h("span", {}, "Note (optional)"), note),
    h("div", { class: "rate-buttons" }, ...buttons),
    outcome,
  );
  const rate = async (rating: Rating): Promise<void> => {
    for (const button of buttons) {
      button.disabled = true;
    }
    replace(outcome, h("p", { role: "status" }, "Saving…"));
    const text = note.value.trim();
    try {
      // Only a completed record is rated, and its id is always shown.
      const answer = await client().feedback(record.aar_id ?? "", text === "" ? { rating } : { rating, note: text });
      const updated: ActionRecord = { ...record, rating: answer.rating, feedback_at: answer.feedback_at };
      if (text !== "") {
        updated.note = text;
      }
      form.replaceWith(given({ ...updated, rating: answer.rating }));
      rated(updated);
    } catch (error) {
      if (!signedOut(error)) {
        replace(outcome, problemBox(error));
      }
      // A rating already given stays; anything else may be tried again.
      const settled = error instanceof MandateError && error.code === "already_rated";
      for (const button of buttons) {
        button.disabled = settled;
      }
    }
  };
  return form;
}
