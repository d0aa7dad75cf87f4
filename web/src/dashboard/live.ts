// Live updates: one stream of the organisation's events per signed-in tab
// (`GET /v1/events`, read by mandate-sdk's `events()`, which connects again
// after a drop with `Last-Event-ID`, so no event is missed), shared by the
// view shown and the navigation's counts. A quiet indicator in the header
// says whether updates are live; a refused key signs out.
//
// A follower's data loads at once, again at each connection (events may
// have been missed before it, or while the server was away), and after
// each event it wants.

import type { MandateEvent } from "mandate-sdk/web";
import { replace } from "./dom.js";
import { client } from "./session.js";
import { signedOut } from "./ui.js";

export interface Follow {
  /** Which events concern the follower. */
  wanted: (event: MandateEvent) => boolean;
  /**
   * Loads the follower's data: at once, again at each connection, and after
   * each wanted event. Never run twice at once: what arrives meanwhile
   * makes one more run afterwards.
   */
  reload: () => Promise<void>;
  /**
   * Also reloads this often while the page is visible, for changes no event
   * announces (a record that ends in success has no event).
   */
  pollMs?: number;
  /** The data is shown already: the first reload waits for a connection, an event or the poll. */
  loaded?: boolean;
}

type State = "connecting" | "live" | "reconnecting" | "stopped";

const SAID: Record<State, string> = {
  connecting: "Connecting for live updates…",
  live: "Updates live.",
  reconnecting: "Reconnecting; updates resume where they stopped…",
  stopped: "Live updates stopped; reload the page to resume them.",
};

interface Follower {
  wanted: (event: MandateEvent) => boolean;
  refresh: () => void;
}

const followers = new Set<Follower>();
let stream: AbortController | undefined;
let indicator: HTMLElement | undefined;

function show(state: State): void {
  if (indicator !== undefined) {
    indicator.dataset.state = state;
    replace(indicator, SAID[state]);
  }
}

/** Opens the tab's stream (once), showing its state in `status`. */
export function goLive(status: HTMLElement): void {
  indicator = status;
  status.hidden = false;
  if (stream !== undefined) {
    return;
  }
  const controller = new AbortController();
  stream = controller;
  show("connecting");
  const listen = async (): Promise<void> => {
    const events = client().events({
      signal: controller.signal,
      onOpen: () => {
        show("live");
        for (const follower of followers) {
          follower.refresh();
        }
      },
      onDrop: () => show("reconnecting"),
    });
    try {
      for await (const event of events) {
        for (const follower of followers) {
          if (follower.wanted(event)) {
            follower.refresh();
          }
        }
      }
    } catch (error) {
      if (!signedOut(error) && stream === controller) {
        show("stopped");
      }
    }
  };
  void listen();
}

/** Closes the tab's stream (on sign-out). */
export function stopLive(): void {
  stream?.abort();
  stream = undefined;
  if (indicator !== undefined) {
    indicator.hidden = true;
  }
}

/** Loads a follower's data and follows the events for it; returns what stops it (a view's cleanup). */
export function follow({ wanted, reload, pollMs, loaded = false }: Follow): () => void {
  let stopped = false;
  let running: Promise<void> | undefined;
  let again = false;
  const refresh = (): void => {
    if (running !== undefined) {
      again = true;
      return;
    }
    running = reload().finally(() => {
      running = undefined;
      if (again && !stopped) {
        again = false;
        refresh();
      }
    });
  };
  const follower: Follower = { wanted, refresh };
  followers.add(follower);
  if (!loaded) {
    refresh();
  }
  const poll =
    pollMs === undefined
      ? undefined
      : setInterval(() => {
          if (document.visibilityState === "visible") {
            refresh();
          }
        }, pollMs);
  return () => {
    stopped = true;
    clearInterval(poll);
    followers.delete(follower);
  };
}
