// client.events() against a scripted fetch that streams bytes: the stream
// read by the HTML Standard's rules for text/event-stream (any line ending,
// chunks cut anywhere, comments, `retry`), each event yielded as
// { id, type, timestamp, data }; a dropped or failed connection connected
// again with Last-Event-ID; refusals and the caller's signal end the
// iteration.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { test } from "node:test";

const { MandateClient, MandateError } = createRequire(import.meta.url)("..");

const BASE = "https://mandate.test";
const KEY = "mk_test";
const encoder = new TextEncoder();

/** A webhook payload, as each event's `data` carries it. */
function payload(type, data, timestamp = "2026-11-25T10:00:00.000Z") {
  return JSON.stringify({ data, timestamp, type });
}

/** One event in the server's framing. */
function frame(id, type, data) {
  return `id: ${id}\nevent: ${type}\ndata: ${payload(type, data)}\n\n`;
}

/**
 * An answer streaming `chunks` (strings or bytes, or a function called with
 * the stream's controller to end it some other way), then ending, unless
 * `open` leaves it open until its request is aborted.
 */
function streaming(chunks, { open = false, type = "text/event-stream" } = {}) {
  return (init) => {
    const body = new ReadableStream({
      start(controller) {
        for (const chunk of chunks) {
          if (typeof chunk === "function") {
            chunk(controller);
            return;
          }
          controller.enqueue(typeof chunk === "string" ? encoder.encode(chunk) : chunk);
        }
        if (open) {
          init.signal.addEventListener("abort", () => controller.error(init.signal.reason));
        } else {
          controller.close();
        }
      },
    });
    return { ok: true, status: 200, statusText: "OK", headers: new Headers({ "content-type": type }), body, text: async () => "" };
  };
}

/** A problem answer. */
function problem(status, code) {
  return () => {
    const body = JSON.stringify({ type: `urn:mandate:problem:${code}`, title: code, status, code });
    return { ok: false, status, statusText: "", headers: new Headers(), body: null, text: async () => body };
  };
}

/** A client whose fetch answers each connection from `answers` in turn, recording the requests. */
function scripted(...answers) {
  const requests = [];
  const fetch = async (url, init) => {
    requests.push({ url, headers: init.headers, signal: init.signal });
    const answer = answers.shift();
    if (answer === undefined) {
      // Nothing more to say: hold the connection until the caller leaves.
      return streaming([], { open: true })(init);
    }
    if (answer instanceof Error) throw answer;
    return answer(init);
  };
  return { requests, client: new MandateClient({ baseUrl: BASE, apiKey: KEY, fetch }) };
}

/** The first `count` events, then leaves the loop. */
async function take(iterable, count) {
  const events = [];
  if (count === 0) return events;
  for await (const event of iterable) {
    events.push(event);
    if (events.length === count) break;
  }
  return events;
}

const approval = { approval_id: "apr_1", aar_id: "aar_1", status: "pending" };
const denied = { aar_id: "aar_2", status: "denied", deny_reason: "action_not_permitted" };

test("events are read as the standard says, whatever the line endings and wherever chunks are cut", async () => {
  const text =
    "\uFEFF: heartbeat\n" +
    "retry: 3000\n" +
    `id: msg_1\r\nevent: approval.requested\r\ndata: ${payload("approval.requested", approval)}\r\n\r\n` +
    `id:msg_2\revent:record.denied\rdata:${payload("record.denied", denied)}\r\r` +
    // An unknown field is ignored; a comment between fields too.
    `id: msg_3\nunknown: x\n: note\nevent: approval.decided\ndata: ${payload("approval.decided", { ...approval, status: "approved" })}\n\n`;
  const bytes = encoder.encode(text);
  // Cut into 7-byte pieces: inside lines, inside "\r\n", inside multi-byte characters.
  const pieces = [];
  for (let at = 0; at < bytes.length; at += 7) pieces.push(bytes.slice(at, at + 7));
  const { requests, client } = scripted(streaming(pieces, { open: true }));
  const events = await take(client.events(), 3);
  assert.deepEqual(events, [
    { id: "msg_1", type: "approval.requested", timestamp: "2026-11-25T10:00:00.000Z", data: approval },
    { id: "msg_2", type: "record.denied", timestamp: "2026-11-25T10:00:00.000Z", data: denied },
    { id: "msg_3", type: "approval.decided", timestamp: "2026-11-25T10:00:00.000Z", data: { ...approval, status: "approved" } },
  ]);
  assert.equal(requests.length, 1);
  assert.equal(requests[0].url, `${BASE}/v1/events`);
  assert.deepEqual(requests[0].headers, { accept: "text/event-stream", authorization: `Bearer ${KEY}` });
  assert.equal(requests[0].signal.aborted, true, "leaving the loop closes the connection");
});

test("a dropped connection is connected again with Last-Event-ID, after the stream's retry time", async () => {
  const opened = [];
  const { requests, client } = scripted(
    // Ends cleanly after two events (a proxy's timeout, a restart).
    streaming(["retry: 20\n\n", frame("msg_1", "record.denied", denied), frame("msg_2", "record.denied", denied)]),
    // Fails mid-event, once what came before is read: the partial event is dropped, not delivered.
    streaming([
      frame("msg_3", "record.denied", denied),
      "id: msg_4\ndata: {\"da",
      (controller) => setTimeout(() => controller.error(new TypeError("terminated")), 20),
    ]),
    // No answer at all.
    new TypeError("fetch failed"),
    // A server briefly unavailable.
    problem(503, "storage_unavailable"),
    streaming([frame("msg_4", "record.denied", denied)], { open: true }),
  );
  const started = Date.now();
  const events = await take(client.events({ lastEventId: "msg_0", onOpen: () => opened.push(Date.now()) }), 4);
  // Pauses of 20, 20, 40 and 80 ms: the stream's retry, doubled while attempts fail (1 s by default).
  assert.ok(Date.now() - started < 1000, `took ${Date.now() - started} ms`);
  assert.deepEqual(events.map((event) => event.id), ["msg_1", "msg_2", "msg_3", "msg_4"]);
  assert.deepEqual(
    requests.map((request) => request.headers["last-event-id"]),
    ["msg_0", "msg_2", "msg_3", "msg_3", "msg_3"],
  );
  assert.equal(opened.length, 3, "connected three times; two attempts failed");
});

test("a refusal no retry cures ends the iteration with a MandateError", async () => {
  for (const [status, code] of [
    [401, "unauthorized"],
    [403, "role_forbidden"],
    [400, "invalid_last_event_id"],
  ]) {
    const { requests, client } = scripted(problem(status, code));
    const error = await take(client.events({ lastEventId: "msg_gone" }), 1).catch((e) => e);
    assert.ok(error instanceof MandateError, String(error));
    assert.deepEqual([error.status, error.code, requests.length], [status, code, 1]);
  }
  // Something that is not an event stream, or an event that is not Mandate's.
  const { client: html } = scripted(streaming(["<html>"], { type: "text/html" }));
  const notStream = await take(html.events(), 1).catch((e) => e);
  assert.deepEqual([notStream.status, notStream.code], [200, "invalid_response"]);
  const { client: garbled } = scripted(streaming(["id: msg_1\ndata: not json\n\n"], { open: true }));
  const notEvent = await take(garbled.events(), 1).catch((e) => e);
  assert.deepEqual([notEvent.status, notEvent.code], [0, "invalid_response"]);
});

test("the caller's signal ends the iteration: while connected, and while waiting to connect again", async () => {
  const controller = new AbortController();
  const { requests, client } = scripted(streaming([frame("msg_1", "record.denied", denied)], { open: true }));
  const seen = [];
  setTimeout(() => controller.abort(), 100);
  for await (const event of client.events({ signal: controller.signal })) seen.push(event.id);
  assert.deepEqual(seen, ["msg_1"]);
  assert.equal(requests[0].signal.aborted, true);

  const later = new AbortController();
  const { requests: attempts, client: failing } = scripted(new TypeError("fetch failed"));
  setTimeout(() => later.abort(), 100);
  const started = Date.now();
  assert.deepEqual(await take(failing.events({ signal: later.signal }), 1), []);
  assert.ok(Date.now() - started < 900, "the pause before the next attempt was cut short");
  assert.equal(attempts.length, 1);

  const aborted = new AbortController();
  aborted.abort();
  const { requests: none, client: idle } = scripted();
  assert.deepEqual(await take(idle.events({ signal: aborted.signal }), 1), []);
  assert.equal(none.length, 0, "an aborted signal connects nothing");
});
