// The trust graph's calls of MandateClient against a recording fetch: the
// method, URL, credential and body of each (an API key, or an agent's own
// token, as DPoP when bound); writes sent once, reads retried; the graph
// followed page after page; the statement read as text; refusals as
// MandateErrors with the server's code; AgentClient's counterparts.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";

const { MandateClient, MandateError, generateAgentKey } = createRequire(import.meta.url)("..");
const tokens = JSON.parse(readFileSync(new URL("../../tests/vectors/tokens.json", import.meta.url), "utf8"));
const dpop = JSON.parse(readFileSync(new URL("../../tests/vectors/dpop.json", import.meta.url), "utf8"));

const BASE = "https://mandate.test/api";
const KEY = "mk_test";

/** A fetch that records each request and answers from `answers` in turn (`{ status, body, headers? }`). */
function recorder(...answers) {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, method: init.method, headers: init.headers, body: init.body && JSON.parse(init.body) });
    const answer = answers.shift() ?? { status: 200, body: {} };
    const text = typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body);
    return {
      ok: answer.status < 300,
      status: answer.status,
      statusText: "",
      headers: new Headers(answer.headers ?? {}),
      text: async () => text,
    };
  };
  return { calls, fetch };
}

function client(...answers) {
  const { calls, fetch } = recorder(...answers);
  const pauses = [];
  const sleep = async (ms) => void pauses.push(ms);
  return { calls, pauses, client: new MandateClient({ baseUrl: `${BASE}/`, apiKey: KEY, fetch, sleep }) };
}

const vouch = (more = {}) => ({
  vouch_id: "vch_01",
  voucher: { kind: "human", key_id: "key_1" },
  agent_id: "bot",
  weight: 0.8,
  created_at: "2026-11-26T10:00:00Z",
  ...more,
});

test("each trust call goes to its endpoint with the right credential and body", async () => {
  const { calls, client: c } = client(
    { status: 201, body: vouch() },
    { status: 201, body: vouch({ voucher: { kind: "agent", agent_id: "lead" } }) },
    { status: 200, body: vouch({ withdrawn_at: "2026-11-26T11:00:00Z" }) },
    { status: 200, body: vouch({ withdrawn_at: "2026-11-26T11:00:00Z" }) },
    { status: 200, body: { agent_id: "bot", trust: 0.5, vouches: [], vouched: [] } },
    { status: 200, body: { nodes: [], edges: [] } },
    { status: 200, body: "eyJ.statement.sig\n", headers: { "content-type": "application/trust-statement+jwt" } },
    { status: 200, body: "eyJ.statement.sig", headers: { "content-type": "application/trust-statement+jwt" } },
  );
  const jwt = "eyJ.token.sig";
  const expires = new Date(Date.UTC(2026, 11, 1, 12));
  const made = await c.vouch({ agent_id: "bot", weight: 0.8, reason: "ran clean for a month", expires_at: expires });
  assert.deepEqual(made.voucher, { kind: "human", key_id: "key_1" });
  await c.vouch({ agent_id: "sub", weight: 0.5 }, { token: jwt });
  const withdrawn = await c.withdrawVouch("vch_01/..");
  assert.equal(withdrawn.withdrawn_at, "2026-11-26T11:00:00Z");
  await c.withdrawVouch("vch_02", { token: jwt });
  assert.equal((await c.trust("agent:bot")).trust, 0.5);
  await c.trustGraphPage({ limit: 50, cursor: null });
  assert.equal(await c.trustStatement("bot"), "eyJ.statement.sig");
  assert.equal(await c.trustStatement("bot", { token: jwt }), "eyJ.statement.sig");
  const seen = calls.map(({ method, url, headers }) => [method, url.slice(BASE.length), headers.authorization, headers.accept]);
  const json = "application/json";
  const statement = "application/trust-statement+jwt";
  assert.deepEqual(seen, [
    ["POST", "/v1/trust/vouches", `Bearer ${KEY}`, json],
    ["POST", "/v1/trust/vouches", `Bearer ${jwt}`, json],
    ["DELETE", "/v1/trust/vouches/vch_01%2F..", `Bearer ${KEY}`, json],
    ["DELETE", "/v1/trust/vouches/vch_02", `Bearer ${jwt}`, json],
    ["GET", "/v1/trust/agents/agent%3Abot", `Bearer ${KEY}`, json],
    ["GET", "/v1/trust/graph?limit=50", `Bearer ${KEY}`, json],
    ["GET", "/v1/trust/agents/bot/statement", `Bearer ${KEY}`, statement],
    ["GET", "/v1/trust/agents/bot/statement", `Bearer ${jwt}`, statement],
  ]);
  // A Date is sent as its ISO text; members left out stay out.
  assert.deepEqual(calls[0].body, {
    agent_id: "bot",
    weight: 0.8,
    reason: "ran clean for a month",
    expires_at: "2026-12-01T12:00:00.000Z",
  });
  assert.deepEqual(calls[1].body, { agent_id: "sub", weight: 0.5 });
  for (const call of calls) {
    // No trust call carries an Idempotency-Key: the server keeps none for them.
    assert.equal(call.headers["idempotency-key"], undefined);
    assert.equal(call.body === undefined, call.method !== "POST");
  }
});

test("vouches and withdrawals are sent once; reads are sent again after a failure trying again may cure", async () => {
  const unavailable = { status: 503, body: { code: "unavailable", title: "Unavailable" }, headers: { "retry-after": "1" } };
  const { calls, pauses, client: c } = client(unavailable, unavailable, unavailable, { status: 200, body: { agent_id: "bot", trust: 0.1 } });
  for (const call of [() => c.vouch({ agent_id: "bot", weight: 1 }), () => c.withdrawVouch("vch_1")]) {
    const error = await call().catch((e) => e);
    assert.ok(error instanceof MandateError);
    assert.deepEqual([error.status, error.code, error.retryAfter], [503, "unavailable", 1]);
  }
  assert.equal(calls.length, 2);
  assert.equal((await c.trust("bot")).trust, 0.1);
  assert.deepEqual(calls.map((call) => call.method), ["POST", "DELETE", "GET", "GET"]);
  assert.deepEqual(pauses, [1000]);
});

test("refusals carry the server's code: a vouch that exists, one withdrawn, a vouch the agent may not give, a role without vouch", async () => {
  const problem = (status, code) => ({ status, body: { type: "about:blank", title: code, status, code, detail: `refused: ${code}` } });
  const { client: c } = client(
    problem(409, "vouch_exists"),
    problem(409, "vouch_withdrawn"),
    problem(403, "vouch_not_allowed"),
    problem(403, "forbidden"),
    problem(404, "agent_not_found"),
  );
  const outcomes = [];
  for (const call of [
    () => c.vouch({ agent_id: "bot", weight: 0.5 }),
    () => c.withdrawVouch("vch_1"),
    () => c.vouch({ agent_id: "stranger", weight: 0.5 }, { token: "eyJ.token.sig" }),
    () => c.vouch({ agent_id: "bot", weight: 0.5 }),
    () => c.trust("elsewhere"),
  ]) {
    const error = await call().catch((e) => e);
    assert.ok(error instanceof MandateError);
    outcomes.push([error.status, error.code, error.detail]);
  }
  assert.deepEqual(outcomes, [
    [409, "vouch_exists", "refused: vouch_exists"],
    [409, "vouch_withdrawn", "refused: vouch_withdrawn"],
    [403, "vouch_not_allowed", "refused: vouch_not_allowed"],
    [403, "forbidden", "refused: forbidden"],
    [404, "agent_not_found", "refused: agent_not_found"],
  ]);
});

test("the trust graph iterates page after page", async () => {
  const edge = (id, from, to) => ({ vouch_id: id, voucher: { kind: "agent", agent_id: from }, agent_id: to, weight: 0.5 });
  const { calls, client: c } = client(
    { status: 200, body: { nodes: [{ agent_id: "a", trust: 0.5 }, { agent_id: "b", trust: 0.4 }], edges: [edge("vch_1", "a", "b")], next_cursor: "c1" } },
    { status: 200, body: { nodes: [{ agent_id: "c", trust: 0.2 }], edges: [edge("vch_2", "b", "c")] } },
  );
  const nodes = [];
  const edges = [];
  for await (const page of c.trustGraph({ limit: 2 })) {
    nodes.push(...page.nodes.map((node) => node.agent_id));
    edges.push(...page.edges.map((e) => e.vouch_id));
  }
  assert.deepEqual(nodes, ["a", "b", "c"]);
  assert.deepEqual(edges, ["vch_1", "vch_2"]);
  assert.deepEqual(
    calls.map(({ url }) => Object.fromEntries(new URL(url).searchParams)),
    [{ limit: "2" }, { limit: "2", cursor: "c1" }],
  );
});

test("a bound token is never sent without its key for a vouch, a withdrawal or a statement", async () => {
  const { calls, client: c } = client();
  const stranger = generateAgentKey();
  for (const call of [
    (auth) => c.vouch({ agent_id: "sub", weight: 1 }, auth),
    (auth) => c.withdrawVouch("vch_1", auth),
    (auth) => c.trustStatement("bot", auth),
  ]) {
    for (const auth of [{ token: dpop.token }, { token: dpop.token, key: stranger }]) {
      const error = await call(auth).catch((e) => e);
      assert.ok(error instanceof MandateError);
      assert.deepEqual([error.status, error.code], [0, "dpop_key_missing"]);
    }
  }
  assert.equal(calls.length, 0, "nothing was sent");
  stranger.free();
});

test("AgentClient vouches, withdraws and reads its own statement with its token", async () => {
  const { calls, client: c } = client(
    { status: 201, body: vouch({ voucher: { kind: "agent", agent_id: "lead" } }) },
    { status: 200, body: vouch({ withdrawn_at: "2026-11-26T11:00:00Z" }) },
    { status: 200, body: "eyJ.own.sig" },
    { status: 200, body: "eyJ.other.sig" },
  );
  const token = tokens.cases.find((item) => item.name === "valid_root").token;
  const agent = c.as(token);
  const own = agent.claims.sub.replace(/^agent:/, "");
  await agent.vouch({ agent_id: "sub", weight: 0.7, reason: "my delegate" });
  await agent.withdrawVouch("vch_01");
  assert.equal(await agent.trustStatement(), "eyJ.own.sig");
  assert.equal(await agent.trustStatement("sub"), "eyJ.other.sig");
  assert.deepEqual(
    calls.map(({ method, url, headers }) => [method, url.slice(BASE.length), headers.authorization]),
    [
      ["POST", "/v1/trust/vouches", `Bearer ${token}`],
      ["DELETE", "/v1/trust/vouches/vch_01", `Bearer ${token}`],
      ["GET", `/v1/trust/agents/${encodeURIComponent(own)}/statement`, `Bearer ${token}`],
      ["GET", "/v1/trust/agents/sub/statement", `Bearer ${token}`],
    ],
  );
  assert.deepEqual(calls[0].body, { agent_id: "sub", weight: 0.7, reason: "my delegate" });
});

test("the types know trust: DenyReason has trust_too_low, Permission has vouch", () => {
  const declarations = ["errors", "organisations"].map((file) => readFileSync(new URL(`../pkg/node/client/${file}.d.ts`, import.meta.url), "utf8")).join("\n");
  const union = (name) => [...new RegExp(`export type ${name} =([^;]+);`).exec(declarations)[1].matchAll(/"([a-z0-9_]+)"/g)].map((m) => m[1]);
  assert.ok(union("DenyReason").includes("trust_too_low"));
  assert.ok(union("Permission").includes("vouch"));
  for (const method of ["vouch", "withdrawVouch", "trust", "trustGraphPage", "trustGraph", "trustStatement"]) {
    assert.equal(typeof MandateClient.prototype[method], "function", method);
  }
});
