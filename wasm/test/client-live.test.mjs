// The client's resilience against a live `mandate serve` (MANDATE_BIN names
// the binary; without it these tests fail): a write whose answer is lost
// on the way back is sent again with the Idempotency-Key the client made,
// and the server records it once; a completion whose answer is lost is
// retried and resolves (the record read back shows the outcome asked), and
// `act` survives it without an API key; a long-poll's wait is added to the
// attempt's timeout; refusals carry the server's headers and request id;
// `verifier({ maxStalenessSeconds })` verifies the server's tokens and
// refuses one once its revocation is in the status list; a batch of records
// answers one result per record, and a batch whose answer is lost is
// recorded once.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { after, before, test } from "node:test";

import { startServer } from "./live-server.mjs";

const { MandateClient, MandateError, RemoteVerifier } = createRequire(import.meta.url)("..");

let live;
let baseUrl;
let apiKey;
let client;

before(async () => {
  live = await startServer();
  ({ baseUrl, apiKey } = live);
  client = new MandateClient({ baseUrl, apiKey });
});

after(() => {
  live?.stop();
});

/**
 * A fetch that sends every request to the server, but loses the answer of
 * the first `times` requests `lose(url, init)` picks: the server acted, the
 * caller hears nothing (a dropped connection).
 */
function losing(lose, times = 1) {
  const sent = [];
  let lost = 0;
  const fetch = async (url, init) => {
    sent.push({ url, method: init.method, key: init.headers["idempotency-key"] });
    const response = await globalThis.fetch(url, init);
    if (lost < times && lose(url, init)) {
      lost += 1;
      await response.text();
      throw new TypeError("fetch failed: the connection dropped");
    }
    return response;
  };
  return { fetch, sent };
}

const grant = (agent, more = {}) => ({
  developer_email: "dev@example.com",
  agent_id: agent,
  resources: ["crm:*"],
  actions: ["read", "write"],
  ...more,
});

test("a write whose answer is lost is sent again with the client's Idempotency-Key, and recorded once", async () => {
  const token = await client.issueL1(grant("retrier-live"));
  const { fetch, sent } = losing((url) => url.endsWith("/v1/vat/record/action"));
  const agent = new MandateClient({ baseUrl, fetch, sleep: async () => {} });
  const answer = await agent.recordAction(
    { action: "read", resource: "crm:a", result: "success" },
    { token: token.compact_jwt },
  );
  assert.equal(answer.recorded, true);
  assert.equal(sent.length, 2);
  assert.match(sent[0].key, /^mandate-sdk-[0-9a-f]{32}$/);
  assert.equal(sent[1].key, sent[0].key);
  // The server acted on the first attempt and answered the second from it: one record.
  const page = await client.recordsPage({ provenance_ref: token.provenance_ref });
  assert.deepEqual(
    page.records.map((record) => record.aar_id),
    [answer.aar_id],
  );
});

test("a completion whose answer is lost resolves: the record shows the outcome asked, and act takes it as done", async () => {
  const token = await client.issueL1(grant("completer-live"));
  const authorized = await client.authorize({ action: "write", resource: "crm:b" }, { token: token.compact_jwt });
  assert.equal(authorized.authorized, true);
  const completing = losing((url) => url.endsWith("/complete"));
  const withKey = new MandateClient({ baseUrl, apiKey, fetch: completing.fetch, sleep: async () => {} });
  const request = { result: "success", result_hash: `sha256:${"b".repeat(64)}`, spend_usd: 1.25 };
  const record = await withKey.complete(authorized.aar_id, request, { token: token.compact_jwt });
  assert.deepEqual(
    [record.aar_id, record.status, record.result, record.result_hash, record.spend_usd],
    [authorized.aar_id, "completed", "success", request.result_hash, 1.25],
  );
  assert.deepEqual(
    completing.sent.map(({ method, url }) => [method, url.slice(baseUrl.length)]).slice(0, 2),
    [
      ["POST", `/v1/vat/aar/${authorized.aar_id}/complete`],
      ["POST", `/v1/vat/aar/${authorized.aar_id}/complete`],
    ],
  );
  // The agent alone (no API key): act authorizes, runs, completes; the lost answer does not fail it.
  const acting = losing((url) => url.endsWith("/complete"));
  const agent = new MandateClient({ baseUrl, fetch: acting.fetch, sleep: async () => {} });
  const output = await agent.as(token.compact_jwt).act({ action: "read", resource: "crm:c" }, ({ aarId }) => ({ aarId }));
  const completed = await client.record(output.aarId);
  assert.deepEqual([completed.status, completed.result], ["completed", "success"]);
  assert.equal(acting.sent.filter(({ url }) => url.endsWith("/complete")).length, 2);
});

test("a long-poll's wait is added to its timeout; a refusal carries the server's headers and request id", async () => {
  const token = await client.issueL1(
    grant("waiter-live", { constraints: { require_approval: { actions: ["write"] } } }),
  );
  const waiting = await client.authorize({ action: "write", resource: "crm:d" }, { token: token.compact_jwt });
  assert.equal(waiting.approval?.status, "pending");
  const seen = [];
  const patient = new MandateClient({ baseUrl, apiKey, timeoutMs: 300, maxRetries: 0, onResponse: (info) => seen.push(info) });
  const started = Date.now();
  const read = await patient.approval(waiting.approval.approval_id, { wait: 1 });
  const took = Date.now() - started;
  assert.equal(read.status, "pending");
  assert.ok(took >= 900, `the server held the read ${took} ms, past the 300 ms timeout alone`);
  assert.equal(seen.at(-1).status, 200);
  assert.equal(seen.at(-1).requestId, seen.at(-1).headers["x-request-id"]);
  // A refusal: the problem, and the answer's headers with it.
  const missing = await client.record("aar_01mcc56a20ypjs2bgtacdn684n").catch((e) => e);
  assert.ok(missing instanceof MandateError);
  assert.deepEqual([missing.status, missing.code], [404, "record_not_found"]);
  assert.match(missing.headers["content-type"], /^application\/problem\+json/);
  assert.equal(missing.requestId, missing.headers["x-request-id"]);
  if (missing.requestId !== undefined) {
    assert.match(missing.requestId, /^req_/);
  }
});

test("verifier({ maxStalenessSeconds }) verifies the server's tokens and refuses one once the status list says revoked", async () => {
  const token = await client.issueL1(grant("verified-live", { ttl_seconds: 86_400 }));
  const status = token.claims.status?.status_list;
  assert.ok(status, "the server names each token's status list");
  const fetched = [];
  const watching = new MandateClient({ baseUrl, onResponse: ({ url, status: code }) => fetched.push([url.slice(baseUrl.length), code]) });
  const verifier = await watching.verifier({
    maxStalenessSeconds: 7200,
    allowedStatusOrigins: [new URL(status.uri).origin],
  });
  assert.ok(verifier instanceof RemoteVerifier);
  const now = Math.floor(Date.now() / 1000);
  const valid = await verifier.verify(token.compact_jwt, now);
  assert.equal(valid.valid, true, JSON.stringify(valid.error));
  await client.revoke({ jti: token.jti, reason: "done" });
  // Past the list's ttl (an hour at most) the verifier fetches it again, and the revocation is in it.
  const revoked = await verifier.verify(token.compact_jwt, now + 3600);
  assert.deepEqual([revoked.valid, revoked.error?.code], [false, "token_revoked"]);
  assert.deepEqual(fetched[0], ["/.well-known/jwks.json", 200]);
  assert.ok(fetched.filter(([path]) => path.startsWith("/v1/vat/status/")).length >= 2);
  verifier.free();
});

test("recordActions: one result per record, and a batch whose answer is lost is recorded once", async () => {
  const token = await client.issueL1(grant("batcher-live", { actions: ["read"] }));
  const { fetch, sent } = losing((url) => url.endsWith("/v1/vat/record/actions"));
  const agent = new MandateClient({ baseUrl, fetch, sleep: async () => {} }).as(token.compact_jwt);
  const answer = await agent.recordActions([
    { action: "read", resource: "crm:a", result: "success" },
    { action: "write", resource: "crm:a", result: "success" },
    { action: "read", resource: "crm:b", result: "error" },
  ]);
  assert.deepEqual(
    answer.results.map((r) => [r.index, r.recorded, r.recorded ? undefined : r.code]),
    [
      [0, true, undefined],
      [1, false, "action_not_permitted"],
      [2, true, undefined],
    ],
  );
  assert.equal(sent.length, 2);
  assert.equal(sent[1].key, sent[0].key);
  // Three records written (one of them denied), once: the retry was answered from the first attempt.
  const page = await client.recordsPage({ provenance_ref: token.provenance_ref });
  assert.deepEqual(
    page.records.map((record) => record.aar_id).sort(),
    answer.results.map((r) => r.aar_id).sort(),
  );
  assert.equal(page.records.length, 3);
});
