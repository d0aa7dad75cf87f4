// Live updates while a view is shown: the organisation's events
// (`GET /v1/events`, read by mandate-sdk's `events()`, which connects again
// after a drop without missing any) make a view load its data again. A
// status line says whether updates are live; a refused key signs out.

import type { MandateEvent } from "mandate-sdk/web";
import { replace } from "./dom.js";
import { client } from "./session.js";
import { problemBox, signedOut } from "./ui.js";

export interface Follow {
  /** Which events concern the view. */
  wanted: (event: MandateEvent) => boolean;
  /**
   * Loads the view's data: at once, again at each connection (events may
   * have been missed before it), and after each wanted event. Never run
   * twice at once: what arrives meanwhile makes one more run afterwards.
   */
  reload: () => Promise<void>;
  /** Where the status line goes. */
  status: HTMLElement;
}

/** Loads a view's data and follows the events for it; returns what stops it (the view's cleanup). */
export function follow({ wanted, reload, status }: Follow): () => void {
  const controller = new AbortController();
  let running: Promise<void> | undefined;
  let again = false;
  const refresh = (): void => {
    if (running !== undefined) {
      again = true;
      return;
    }
    running = reload().finally(() => {
      running = undefined;
      if (again && !controller.signal.aborted) {
        again = false;
        refresh();
      }
    });
  };
  replace(status, "Connecting for live updates…");
  refresh();
  const listen = async (): Promise<void> => {
    const events = client().events({
      signal: controller.signal,
      onOpen: () => {
        replace(status, "Updates live.");
        refresh();
      },
    });
    try {
      for await (const event of events) {
        if (wanted(event)) {
          refresh();
        }
      }
    } catch (error) {
      if (!signedOut(error)) {
        replace(status, "Live updates stopped; reload the page to resume them.", problemBox(error));
      }
    }
  };
  void listen();
  return () => controller.abort();
}
