// MandateClient against a recording fetch: the method, URL, credential and
// body of every call; pages followed by async iteration; every failure a
// MandateError carrying the problem body and the answer's headers; timeouts,
// signals and retries (the pauses recorded by an injected sleep, so nothing
// waits); verifier() following a key rotation and applying status lists.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";

const { MandateClient, MandateError, RemoteVerifier, Verifier, argsHash, canonicalJson, generateAgentKey, verifyProof } =
  createRequire(import.meta.url)("..");
const tokens = JSON.parse(readFileSync(new URL("../../tests/vectors/tokens.json", import.meta.url), "utf8"));

const BASE = "https://mandate.test/api";
const KEY = "mk_test";

/**
 * A fetch that records each request and answers from `answers` in turn: an
 * answer `{ status, body, headers? }`, an Error to throw (no answer), or
 * "hang" for a fetch that never answers (and ignores its signal).
 */
function recorder(...answers) {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, method: init.method, headers: init.headers, body: init.body && JSON.parse(init.body), signal: init.signal });
    const answer = answers.shift() ?? { status: 200, body: {} };
    if (answer instanceof Error) throw answer;
    if (answer === "hang") return new Promise(() => {});
    const text = typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body);
    return {
      ok: answer.status < 300,
      status: answer.status,
      statusText: answer.statusText ?? "",
      headers: new Headers(answer.headers ?? {}),
      text: async () => text,
    };
  };
  return { calls, fetch };
}

/** A sleep that records each pause asked for and returns at once. */
function sleeper() {
  const pauses = [];
  return { pauses, sleep: async (ms) => void pauses.push(ms) };
}

function client(...answers) {
  const { calls, fetch } = recorder(...answers);
  const { pauses, sleep } = sleeper();
  return { calls, pauses, client: new MandateClient({ baseUrl: `${BASE}/`, apiKey: KEY, fetch, sleep }) };
}

/** A client with options of its own, answering from `answers`. */
function configured(options, ...answers) {
  const { calls, fetch } = recorder(...answers);
  const { pauses, sleep } = sleeper();
  return { calls, pauses, client: new MandateClient({ baseUrl: BASE, apiKey: KEY, fetch, sleep, ...options }) };
}

const KEY_FORM = /^mandate-sdk-[0-9a-f]{32}$/;

test("each method calls its endpoint with the right credential", async () => {
  const { calls, client: c } = client();
  const jwt = "eyJ.token.sig";
  await c.issueL1({ developer_email: "dev@example.com", agent_id: "bot", resources: ["crm:*"], actions: ["read"] });
  await c.issueL2({ id_token: "eyJ.id.tok", agent_id: "bot", resources: ["crm:*"], actions: ["read"] });
  await c.authCapture({ evidence: { score: 0.99 }, verifier: "face", agent_id: "bot", resources: ["crm:*"], actions: ["read"] });
  await c.recordAction({ vat_jti: "vat_root_x", action: "read", resource: "crm:a", result: "success" });
  await c.recordAction({ action: "read", resource: "crm:a", result: "success" }, { token: jwt });
  await c.authorize({ vat_jti: "vat_root_x", action: "read", resource: "crm:a" });
  await c.complete("aar_1/..", { result: "success" }, { token: jwt });
  await c.feedback("aar_1", { rating: "approved", note: "fine" });
  await c.reputation("agent:bot");
  await c.provenance("prov_1");
  await c.graph("prov_1");
  await c.record("aar_1");
  await c.delegate({ agent_id: "sub", resources: ["crm:a"], actions: ["read"] }, { token: jwt });
  await c.revoke({ jti: "vat_root_x", reason: "done" });
  await c.revoke({ jti: "vat_del_y" }, { token: jwt });
  await c.token("vat_root_x");
  await c.jwks();
  const seen = calls.map(({ method, url, headers }) => [method, url.slice(BASE.length), headers.authorization]);
  assert.deepEqual(seen, [
    ["POST", "/v1/vat/issue/l1", `Bearer ${KEY}`],
    ["POST", "/v1/vat/issue/l2", `Bearer ${KEY}`],
    ["POST", "/v1/vat/auth/capture", `Bearer ${KEY}`],
    ["POST", "/v1/vat/record/action", undefined],
    ["POST", "/v1/vat/record/action", `Bearer ${jwt}`],
    ["POST", "/v1/vat/authorize", undefined],
    ["POST", "/v1/vat/aar/aar_1%2F../complete", `Bearer ${jwt}`],
    ["POST", "/v1/vat/aar/aar_1/feedback", `Bearer ${KEY}`],
    ["GET", "/v1/vat/reputation/agent%3Abot", `Bearer ${KEY}`],
    ["GET", "/v1/vat/aar/provenance/prov_1", `Bearer ${KEY}`],
    ["GET", "/v1/vat/aar/provenance/prov_1/graph", `Bearer ${KEY}`],
    ["GET", "/v1/vat/aar/aar_1", `Bearer ${KEY}`],
    ["POST", "/v1/vat/delegate", `Bearer ${jwt}`],
    ["POST", "/v1/vat/revoke", `Bearer ${KEY}`],
    ["POST", "/v1/vat/revoke", `Bearer ${jwt}`],
    ["GET", "/v1/vat/tokens/vat_root_x", `Bearer ${KEY}`],
    ["GET", "/.well-known/jwks.json", undefined],
  ]);
  assert.deepEqual(calls[7].body, { rating: "approved", note: "fine" });
  assert.deepEqual(calls[2].body.evidence, { score: 0.99 });
  // The writes the server keeps an Idempotency-Key for carry one the client made, each its own; no other call does.
  const keyed = calls.map((call) => KEY_FORM.test(call.headers["idempotency-key"] ?? ""));
  assert.deepEqual(keyed, [true, true, true, true, true, true, true, false, false, false, false, false, true, false, false, false, false]);
  const made = calls.map((call) => call.headers["idempotency-key"]).filter(Boolean);
  assert.equal(new Set(made).size, made.length);
  for (const call of calls) {
    assert.equal(call.headers.accept, "application/json");
    assert.equal(call.headers["content-type"], call.method === "POST" ? "application/json" : undefined);
    assert.equal(call.body === undefined, call.method === "GET");
  }
});

test("a bound token goes as DPoP with a fresh proof, and never without its key", async () => {
  const dpop = JSON.parse(readFileSync(new URL("../../tests/vectors/dpop.json", import.meta.url), "utf8"));
  const { calls, client: c } = client();
  const stranger = generateAgentKey();
  for (const auth of [{ token: dpop.token }, { token: dpop.token, key: stranger }]) {
    const error = await c.recordAction({ action: "send", resource: "mail:outbox", result: "success" }, auth).catch((e) => e);
    assert.ok(error instanceof MandateError);
    assert.deepEqual([error.status, error.code], [0, "dpop_key_missing"]);
  }
  assert.equal(calls.length, 0, "nothing was sent");
  // A key of its own binds a token the client then sends as DPoP.
  const key = generateAgentKey();
  assert.equal(key.publicJwk.d, undefined);
  assert.equal(key.exportJwk().kty, "OKP");
  const proof = key.proof({ method: "POST", url: `${BASE}/v1/vat/delegate`, accessToken: "t" });
  assert.equal(proof.ok, true);
  const checked = verifyProof(proof.proof, {
    method: "POST",
    url: `${BASE}/v1/vat/delegate`,
    accessToken: "t",
    jkt: key.jkt,
  });
  assert.equal(checked.valid, true, JSON.stringify(checked.error));
});

test("records and workflows iterate page after page", async () => {
  const record = (n) => ({ aar_id: `aar_${n}` });
  const { calls, client: c } = client(
    { status: 200, body: { records: [record(1), record(2)], next_cursor: "c1" } },
    { status: 200, body: { records: [record(3)], next_cursor: "c2" } },
    { status: 200, body: { records: [] } },
    { status: 200, body: { workflows: [{ provenance_ref: "prov_1" }] } },
  );
  const since = new Date(Date.UTC(2026, 10, 22, 10));
  const ids = [];
  for await (const r of c.records({ agent_id: "bot", since, limit: 2, action: undefined })) ids.push(r.aar_id);
  assert.deepEqual(ids, ["aar_1", "aar_2", "aar_3"]);
  const queries = calls.map(({ url }) => Object.fromEntries(new URL(url).searchParams));
  assert.deepEqual(queries, [
    { agent_id: "bot", since: "2026-11-22T10:00:00.000Z", limit: "2" },
    { agent_id: "bot", since: "2026-11-22T10:00:00.000Z", limit: "2", cursor: "c1" },
    { agent_id: "bot", since: "2026-11-22T10:00:00.000Z", limit: "2", cursor: "c2" },
  ]);
  const workflows = [];
  for await (const w of c.workflows()) workflows.push(w.provenance_ref);
  assert.deepEqual(workflows, ["prov_1"]);
  assert.equal(calls[3].url, `${BASE}/v1/vat/workflows`);
});

test("the reviewer's dashboard: counts, unrated records, a workflow rated at once, agents, history, overview, tokens", async () => {
  const { calls, client: c } = client(
    { status: 200, body: { approvals_pending: 2, records_unrated: 5 } },
    { status: 200, body: { records: [{ aar_id: "aar_1" }] } },
    { status: 200, body: { rated: 2, aar_ids: ["aar_1", "aar_2"] } },
    { status: 200, body: { agents: [{ agent_id: "agent:a" }], next_cursor: "c1" } },
    { status: 200, body: { agents: [{ agent_id: "agent:b" }] } },
    { status: 200, body: { agent_id: "agent:a", days: [] } },
    { status: 200, body: { window: "7d", bucket: "day", series: [], budgets: [] } },
    { status: 200, body: { tokens: [{ jth: "jth_1" }], next_cursor: "t1" } },
    { status: 200, body: { tokens: [{ jth: "jth_2" }] } },
    { status: 200, body: { workflows: [] } },
  );
  assert.deepEqual(await c.inboxCounts(), { approvals_pending: 2, records_unrated: 5 });
  const since = new Date(Date.UTC(2026, 10, 22, 10));
  assert.equal((await c.recordsPage({ rated: false, result: "success", since, limit: 50 })).records[0].aar_id, "aar_1");
  const rated = await c.rateWorkflow({ provenance_ref: "prov_1", result: "success", rating: "approved", note: "fine" });
  assert.deepEqual(rated.aar_ids, ["aar_1", "aar_2"]);
  const agents = [];
  for await (const agent of c.agents({ window: "24h", q: "a", sort: "error_rate", order: "asc", limit: 1 })) agents.push(agent.agent_id);
  assert.deepEqual(agents, ["agent:a", "agent:b"]);
  assert.equal((await c.agentHistory("agent:a/..", { days: 14 })).agent_id, "agent:a");
  assert.equal((await c.overview({ window: "7d" })).bucket, "day");
  const tokens = [];
  for await (const token of c.tokens({ human_ref: "sha256:abc", status: "active" })) tokens.push(token.jth);
  assert.deepEqual(tokens, ["jth_1", "jth_2"]);
  await c.workflowsPage({ human_ref: "sha256:abc" });
  assert.deepEqual(
    calls.map(({ method, url, headers, body }) => [method, url.slice(BASE.length), headers.authorization, body]),
    [
      ["GET", "/v1/vat/inbox/counts", `Bearer ${KEY}`, undefined],
      ["GET", "/v1/vat/aar?rated=false&result=success&since=2026-11-22T10%3A00%3A00.000Z&limit=50", `Bearer ${KEY}`, undefined],
      ["POST", "/v1/vat/aar/feedback", `Bearer ${KEY}`, { provenance_ref: "prov_1", result: "success", rating: "approved", note: "fine" }],
      ["GET", "/v1/vat/agents?window=24h&q=a&sort=error_rate&order=asc&limit=1", `Bearer ${KEY}`, undefined],
      ["GET", "/v1/vat/agents?window=24h&q=a&sort=error_rate&order=asc&limit=1&cursor=c1", `Bearer ${KEY}`, undefined],
      ["GET", "/v1/vat/agents/agent%3Aa%2F../history?days=14", `Bearer ${KEY}`, undefined],
      ["GET", "/v1/vat/overview?window=7d", `Bearer ${KEY}`, undefined],
      ["GET", "/v1/vat/tokens?human_ref=sha256%3Aabc&status=active", `Bearer ${KEY}`, undefined],
      ["GET", "/v1/vat/tokens?human_ref=sha256%3Aabc&status=active&cursor=t1", `Bearer ${KEY}`, undefined],
      ["GET", "/v1/vat/workflows?human_ref=sha256%3Aabc", `Bearer ${KEY}`, undefined],
    ],
  );
  // Defaults send no query at all.
  const { calls: bare, client: d } = client();
  await d.agentsPage();
  await d.agentHistory("a");
  await d.overview();
  await d.tokensPage();
  assert.deepEqual(
    bare.map(({ url }) => url.slice(BASE.length)),
    ["/v1/vat/agents", "/v1/vat/agents/a/history", "/v1/vat/overview", "/v1/vat/tokens"],
  );
});

test("a problem answer becomes a MandateError with the problem body", async () => {
  const problem = {
    type: "urn:mandate:problem:action_not_permitted",
    title: "Action not permitted",
    status: 403,
    detail: "the token does not hold `write`",
    code: "action_not_permitted",
    aar_id: "aar_9",
  };
  const { client: c } = client({ status: 403, body: problem });
  const error = await c.recordAction({ vat_jti: "vat_root_x", action: "write", resource: "crm:a", result: "success" }).catch((e) => e);
  assert.ok(error instanceof MandateError);
  assert.ok(error instanceof Error);
  assert.deepEqual(
    [error.name, error.status, error.code, error.title, error.detail, error.problem.aar_id],
    ["MandateError", 403, "action_not_permitted", "Action not permitted", problem.detail, "aar_9"],
  );
  assert.match(error.message, /Action not permitted: the token does not hold/);
});

test("answers that are not problems, and no answer at all, are MandateErrors too", async () => {
  const cause = new TypeError("fetch failed");
  const { client: c } = configured(
    { maxRetries: 0 },
    { status: 502, statusText: "Bad Gateway", body: "<html>upstream down</html>" },
    cause,
    { status: 200, body: "not json" },
  );
  const bad = await c.token("vat_root_x").catch((e) => e);
  assert.deepEqual([bad.status, bad.code, bad.title], [502, "http_error", "Bad Gateway"]);
  const down = await c.jwks().catch((e) => e);
  assert.deepEqual([down.status, down.code, down.cause], [0, "network_error", cause]);
  const garbled = await c.jwks().catch((e) => e);
  assert.deepEqual([garbled.status, garbled.code], [200, "invalid_response"]);
});

test("a network error names the method and the URL, without credentials, query or the ids that are credentials", async () => {
  const cause = new TypeError("fetch failed");
  const { client: c } = configured(
    { maxRetries: 0, baseUrl: "https://ops:s3cret@mandate.test/api" },
    cause,
    cause,
    cause,
  );
  const token = await c.token("vat_root_01JX").catch((e) => e);
  assert.deepEqual(
    [token.status, token.code, token.problem.method, token.problem.url, token.cause],
    [0, "network_error", "GET", "https://mandate.test/api/v1/vat/tokens/{jti}", cause],
  );
  assert.equal(token.message, "Network error: GET https://mandate.test/api/v1/vat/tokens/{jti}: TypeError: fetch failed");
  const page = await c.recordsPage({ agent_id: "bot", vat_jti: "vat_del_01JX" }).catch((e) => e);
  assert.deepEqual([page.problem.method, page.problem.url], ["GET", "https://mandate.test/api/v1/vat/aar"]);
  const completion = await c.complete("aar_01JX", { result: "success" }, { token: "eyJ.a.b" }).catch((e) => e);
  assert.deepEqual(
    [completion.code, completion.problem.method, completion.problem.url],
    ["network_error", "POST", "https://mandate.test/api/v1/vat/aar/{aar_id}/complete"],
  );
  for (const error of [token, page, completion]) {
    assert.doesNotMatch(error.message, /s3cret|ops@|01JX|bot/);
  }
});

test("canonicalJson is RFC 8785: sorted members, ECMAScript numbers and strings; argsHash is its sha256", () => {
  // RFC 8785 section 3.2.3's sorting example and its number forms.
  assert.equal(
    canonicalJson({ "\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", 1: "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis" }),
    '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
  );
  assert.equal(canonicalJson({ numbers: [333333333.33333329, 1e30, 4.5, 2e-3, 0.000001, 1e-7, -0] }), '{"numbers":[333333333.3333333,1e+30,4.5,0.002,0.000001,1e-7,0]}');
  assert.equal(canonicalJson({ b: [1, { d: null, c: true }], a: "x", skipped: undefined }), '{"a":"x","b":[1,{"c":true,"d":null}]}');
  assert.equal(canonicalJson({ at: new Date(Date.UTC(2026, 0, 2)) }), '{"at":"2026-01-02T00:00:00.000Z"}');
  // The same arguments in another order hash the same; another value does not.
  assert.equal(argsHash({ to: "alice", amount: 150 }), argsHash({ amount: 150, to: "alice" }));
  assert.notEqual(argsHash({ to: "alice", amount: 150 }), argsHash({ to: "mallory", amount: 150 }));
  assert.match(argsHash({ to: "alice" }), /^sha256:[0-9a-f]{64}$/);
  // What JSON cannot hold is refused, never hashed as something else.
  const cyclic = {};
  cyclic.self = cyclic;
  for (const value of [{ n: Number.NaN }, { n: Infinity }, { n: 1n }, { set: new Set(["a"]) }, { map: new Map() }, cyclic, () => 1, undefined]) {
    assert.throws(() => canonicalJson(value), (e) => e instanceof MandateError && e.code === "invalid_arguments", String(value));
  }
});

test("verifier() fetches the key set once and verifies with it", async () => {
  const { calls, client: c } = client({ status: 200, body: tokens.jwks }, { status: 200, body: { keys: [] } });
  const verifier = await c.verifier({ cacheSize: 8 });
  assert.ok(verifier instanceof Verifier);
  const valid = tokens.cases.find((t) => t.name === "valid_root");
  assert.equal(verifier.verify(valid.token, valid.now).valid, true);
  assert.equal(verifier.verify(valid.token, valid.now).valid, true);
  assert.equal(calls.length, 1);
  const unusable = await c.verifier().catch((e) => e);
  assert.ok(unusable instanceof MandateError);
  assert.deepEqual([unusable.status, unusable.code], [0, "no_usable_keys"]);
});

test("the default fetch is the global one, called unbound", async () => {
  const original = globalThis.fetch;
  let receiver = "unset";
  globalThis.fetch = async function (url) {
    receiver = this;
    return { ok: true, status: 200, statusText: "OK", text: async () => JSON.stringify({ url }) };
  };
  try {
    const answer = await new MandateClient({ baseUrl: BASE }).jwks();
    assert.deepEqual(answer, { url: `${BASE}/.well-known/jwks.json` });
    assert.equal(receiver, undefined);
  } finally {
    globalThis.fetch = original;
  }
});

test("writes carry an Idempotency-Key when asked to", async () => {
  const { calls, client: c } = client();
  const jwt = "eyJ.token.sig";
  await c.issueL1({ developer_email: "dev@example.com", agent_id: "bot", resources: ["crm:*"], actions: ["read"] }, { idempotencyKey: "issue-1" });
  await c.issueL2({ id_token: "eyJ.id.tok", agent_id: "bot", resources: ["crm:*"], actions: ["read"] }, { idempotencyKey: "issue-2" });
  await c.authCapture({ evidence: {}, verifier: "face", agent_id: "bot", resources: ["crm:*"], actions: ["read"] }, { idempotencyKey: "issue-3" });
  await c.recordAction({ action: "read", resource: "crm:a", result: "success" }, { token: jwt, idempotencyKey: "act-1" });
  await c.authorize({ vat_jti: "vat_root_x", action: "read", resource: "crm:a" }, { idempotencyKey: "auth-1" });
  await c.delegate({ vat_jti: "vat_root_x", agent_id: "sub", resources: ["crm:a"], actions: ["read"] }, { idempotencyKey: "del-1" });
  assert.deepEqual(
    calls.map((call) => [call.headers["idempotency-key"], call.headers.authorization]),
    [
      ["issue-1", `Bearer ${KEY}`],
      ["issue-2", `Bearer ${KEY}`],
      ["issue-3", `Bearer ${KEY}`],
      ["act-1", `Bearer ${jwt}`],
      ["auth-1", undefined],
      ["del-1", undefined],
    ],
  );
});

test("organisation and key calls go on the API key, each with its method and body", async () => {
  const key = { key_id: "key_1", role: "auditor", email: null, admin: false, created_at: "2026-11-23T10:00:00Z", revoked_at: null };
  const { calls, client: c } = client(
    { status: 200, body: { key_id: "key_0", email: null, role: "owner", admin: true, permissions: ["read", "manage_keys"], org: { org_id: "org_0", name: "default" } } },
    { status: 201, body: { org: { org_id: "org_1", name: "acme" }, owner_key: { key_id: "key_2", api_key: "mk_new" } } },
    { status: 200, body: { orgs: [{ org_id: "org_1", name: "acme" }] } },
    { status: 200, body: { org_id: "org_1", quotas: { records_per_day: 10, tokens_outstanding: null } } },
    { status: 201, body: { ...key, api_key: "mk_auditor" } },
    { status: 200, body: { keys: [key] } },
    { status: 200, body: { ...key, revoked_at: "2026-11-23T11:00:00Z" } },
  );
  const me = await c.me();
  const created = await c.createOrg({ name: "acme", owner_email: "ops@acme.test", quotas: { records_per_day: 100000 } });
  const page = await c.listOrgs({ limit: 10, cursor: "c1" });
  const updated = await c.updateOrg("org_1/..", { quotas: { records_per_day: 10, tokens_outstanding: null } });
  const issued = await c.createKey({ role: "auditor" });
  const listed = await c.listKeys();
  const revoked = await c.revokeKey("key_1");
  assert.deepEqual(
    calls.map(({ method, url, headers }) => [method, url.slice(BASE.length), headers.authorization, headers["content-type"]]),
    [
      ["GET", "/v1/me", `Bearer ${KEY}`, undefined],
      ["POST", "/v1/orgs", `Bearer ${KEY}`, "application/json"],
      ["GET", "/v1/orgs?limit=10&cursor=c1", `Bearer ${KEY}`, undefined],
      ["PATCH", "/v1/orgs/org_1%2F..", `Bearer ${KEY}`, "application/json"],
      ["POST", "/v1/keys", `Bearer ${KEY}`, "application/json"],
      ["GET", "/v1/keys", `Bearer ${KEY}`, undefined],
      ["DELETE", "/v1/keys/key_1", `Bearer ${KEY}`, undefined],
    ],
  );
  assert.deepEqual(
    calls.map((call) => call.body),
    [
      undefined,
      { name: "acme", owner_email: "ops@acme.test", quotas: { records_per_day: 100000 } },
      undefined,
      { quotas: { records_per_day: 10, tokens_outstanding: null } },
      { role: "auditor" },
      undefined,
      undefined,
    ],
  );
  assert.deepEqual([me.org.name, me.role, me.admin], ["default", "owner", true]);
  assert.equal(created.owner_key.api_key, "mk_new");
  assert.deepEqual(page.orgs.map((org) => org.name), ["acme"]);
  assert.equal(updated.quotas.tokens_outstanding, null);
  assert.equal(issued.api_key, "mk_auditor");
  assert.deepEqual(listed.keys, [key]);
  assert.equal(revoked.revoked_at, "2026-11-23T11:00:00Z");
});

test("a refused key or organisation call is a MandateError with the server's code", async () => {
  const problem = (status, code, title, detail) => ({ status, body: { type: `urn:mandate:problem:${code}`, title, status, detail, code } });
  const { client: c } = client(
    problem(403, "role_forbidden", "Role forbidden", "this key's role does not allow `manage_keys`"),
    problem(409, "last_owner", "Last owner", "the organisation's last active owner cannot be revoked"),
    problem(409, "org_exists", "Organisation exists", "an organisation named `acme` exists"),
    problem(404, "key_not_found", "Key not found", "no key has this key_id"),
  );
  const refusals = [
    await c.listKeys().catch((e) => e),
    await c.revokeKey("key_owner").catch((e) => e),
    await c.createOrg({ name: "acme" }).catch((e) => e),
    await c.revokeKey("key_elsewhere").catch((e) => e),
  ];
  for (const error of refusals) assert.ok(error instanceof MandateError);
  assert.deepEqual(
    refusals.map((error) => [error.status, error.code]),
    [
      [403, "role_forbidden"],
      [409, "last_owner"],
      [409, "org_exists"],
      [404, "key_not_found"],
    ],
  );
  assert.equal(refusals[0].detail, "this key's role does not allow `manage_keys`");
});

const APPROVAL = "apr_01mcc56a20ypjs2bgtacdn684n";
const pending = { approval_id: APPROVAL, status: "pending", expires_at: "2026-11-25T10:15:00.000Z" };
const waiting = {
  authorized: false,
  aar_id: "aar_01mcc56a20ypjs2bgtacdn684n",
  trust_score: 0.5,
  provenance_ref: "prov_1",
  human_ref: "hr_1",
  assurance_level: "L1",
  approval: pending,
};
const approvalBody = (status) => ({ approval_id: APPROVAL, aar_id: waiting.aar_id, status, expires_at: pending.expires_at });

test("approvals: read (with a wait, on the key or the agent's token), listed page by page, decided on the key", async () => {
  const jwt = "eyJ.token.sig";
  const { calls, client: c } = client(
    { status: 200, body: approvalBody("pending") },
    { status: 200, body: approvalBody("approved") },
    { status: 200, body: { approvals: [approvalBody("pending")], next_cursor: "c1" } },
    { status: 200, body: { approvals: [approvalBody("denied")] } },
    { status: 200, body: approvalBody("denied") },
  );
  assert.equal((await c.approval(APPROVAL)).status, "pending");
  assert.equal((await c.approval(`${APPROVAL}/..`, { wait: 30, token: jwt })).status, "approved");
  const listed = [];
  for await (const approval of c.approvals({ status: "pending", limit: 1 })) listed.push(approval.status);
  assert.deepEqual(listed, ["pending", "denied"]);
  const decided = await c.decide(APPROVAL, { decision: "deny", note: "not this week" });
  assert.equal(decided.status, "denied");
  // A bound token without its key: refused before anything is sent, as a rejection.
  const dpop = JSON.parse(readFileSync(new URL("../../tests/vectors/dpop.json", import.meta.url), "utf8"));
  const unproven = c.approval(APPROVAL, { token: dpop.token });
  assert.ok(unproven instanceof Promise);
  const missing = await unproven.catch((e) => e);
  assert.deepEqual([missing.status, missing.code], [0, "dpop_key_missing"]);
  assert.deepEqual(
    calls.map(({ method, url, headers, body }) => [method, url.slice(BASE.length), headers.authorization, body]),
    [
      ["GET", `/v1/vat/approvals/${APPROVAL}`, `Bearer ${KEY}`, undefined],
      ["GET", `/v1/vat/approvals/${APPROVAL}%2F..?wait=30`, `Bearer ${jwt}`, undefined],
      ["GET", "/v1/vat/approvals?status=pending&limit=1", `Bearer ${KEY}`, undefined],
      ["GET", "/v1/vat/approvals?status=pending&limit=1&cursor=c1", `Bearer ${KEY}`, undefined],
      ["POST", `/v1/vat/approvals/${APPROVAL}/decision`, `Bearer ${KEY}`, { decision: "deny", note: "not this week" }],
    ],
  );
});

test("authorize without waitForApproval answers a 202 at once, with the pending approval", async () => {
  const { calls, client: c } = client({ status: 202, body: waiting });
  const answer = await c.authorize({ vat_jti: "vat_root_x", action: "pay", resource: "bank:x" });
  assert.deepEqual(answer, waiting);
  assert.equal(calls.length, 1);
});

test("authorize with waitForApproval reads the approval with the agent's token until it is decided", async () => {
  const jwt = "eyJ.token.sig";
  for (const [decision, outcome] of [
    ["approved", { authorized: true }],
    ["denied", { authorized: false, reason: "approval_denied" }],
    ["expired", { authorized: false, reason: "approval_expired" }],
  ]) {
    const { calls, client: c } = client(
      { status: 202, body: waiting },
      { status: 200, body: approvalBody("pending") },
      { status: 200, body: approvalBody(decision) },
    );
    const answer = await c.authorize(
      { action: "pay", resource: "bank:x", spend_usd: 40 },
      { token: jwt, waitForApproval: { timeoutSeconds: 600 } },
    );
    assert.deepEqual(answer, { ...waiting, ...outcome, approval: { ...pending, status: decision } }, decision);
    assert.deepEqual(
      calls.map(({ method, url, headers }) => [method, url.slice(BASE.length), headers.authorization]),
      [
        ["POST", "/v1/vat/authorize", `Bearer ${jwt}`],
        ["GET", `/v1/vat/approvals/${APPROVAL}?wait=30`, `Bearer ${jwt}`],
        ["GET", `/v1/vat/approvals/${APPROVAL}?wait=30`, `Bearer ${jwt}`],
      ],
    );
  }
});

test("a bound agent's wait carries a fresh proof for the approval's URL on every read", async () => {
  const dpop = JSON.parse(readFileSync(new URL("../../tests/vectors/dpop.json", import.meta.url), "utf8"));
  const key = generateAgentKey();
  // A token bound to this key is made by the server; the client only reads its cnf.
  const header = Buffer.from(JSON.stringify({ alg: "EdDSA", typ: "vat+jwt", kid: "k" })).toString("base64url");
  const claims = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(dpop.token.split(".")[1], "base64url")), cnf: { jkt: key.jkt } })).toString("base64url");
  const token = `${header}.${claims}.sig`;
  const { calls, client: c } = client(
    { status: 202, body: waiting },
    { status: 200, body: approvalBody("pending") },
    { status: 200, body: approvalBody("approved") },
  );
  const answer = await c.authorize({ action: "pay", resource: "bank:x" }, { token, key, waitForApproval: { timeoutSeconds: 60 } });
  assert.equal(answer.authorized, true);
  const reads = calls.slice(1);
  assert.deepEqual(reads.map((call) => call.headers.authorization), [`DPoP ${token}`, `DPoP ${token}`]);
  assert.notEqual(reads[0].headers.dpop, reads[1].headers.dpop, "a fresh proof per read");
  for (const call of reads) {
    const checked = verifyProof(call.headers.dpop, {
      method: "GET",
      url: `${BASE}/v1/vat/approvals/${APPROVAL}`,
      accessToken: token,
      jkt: key.jkt,
    });
    assert.equal(checked.valid, true, JSON.stringify(checked.error));
  }
});

test("the wait asks for no more than the time left, and a timeout answers the approval still pending", async () => {
  const waits = [];
  const fetch = async (url, init) => {
    if (init.method === "POST") {
      return { ok: true, status: 202, statusText: "Accepted", text: async () => JSON.stringify(waiting) };
    }
    const wait = Number(new URL(url).searchParams.get("wait"));
    waits.push(wait);
    // The server holds the read for `wait` seconds while nobody decides.
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
    return { ok: true, status: 200, statusText: "OK", text: async () => JSON.stringify(approvalBody("pending")) };
  };
  const c = new MandateClient({ baseUrl: BASE, apiKey: KEY, fetch });
  const started = Date.now();
  const answer = await c.authorize({ vat_jti: "vat_root_x", action: "pay", resource: "bank:x" }, { waitForApproval: { timeoutSeconds: 1.5 } });
  const took = Date.now() - started;
  assert.deepEqual(answer, waiting, "authorized: false with the pending approval");
  assert.deepEqual(waits, [2]);
  assert.ok(took >= 1500 && took < 3000, `took ${took} ms`);
  const at0 = await c.authorize({ vat_jti: "vat_root_x", action: "pay", resource: "bank:x" }, { waitForApproval: { timeoutSeconds: 0 } });
  assert.deepEqual([at0, waits.length], [waiting, 1], "no time to wait: no read");
});

test("the wait reads on the API key without a token, survives a server hiccup, and stops on its signal", async () => {
  const { calls, pauses, client: c } = client(
    { status: 202, body: waiting },
    { status: 503, body: { code: "unavailable", title: "Storage unavailable", status: 503 } },
    new TypeError("fetch failed"),
    { status: 200, body: approvalBody("approved") },
  );
  const answer = await c.authorize({ vat_jti: "vat_root_x", action: "pay", resource: "bank:x" }, { waitForApproval: { timeoutSeconds: 30 } });
  assert.equal(answer.authorized, true);
  assert.deepEqual(pauses, [1000, 2000], "one pause of 1 s, then 2 s: each read is sent once, the wait retries");
  assert.deepEqual(calls.slice(1).map((call) => call.headers.authorization), Array(3).fill(`Bearer ${KEY}`));

  // A refusal that no retry cures ends the wait.
  const { client: refusing } = client(
    { status: 202, body: waiting },
    { status: 401, body: { code: "token_expired", title: "Token expired", status: 401 } },
  );
  const expired = await refusing
    .authorize({ action: "pay", resource: "bank:x" }, { token: "eyJ.token.sig", waitForApproval: { timeoutSeconds: 30 } })
    .catch((e) => e);
  assert.deepEqual([expired.status, expired.code], [401, "token_expired"]);

  // Nothing to read the approval with: refused before anything is sent.
  const anonymous = new MandateClient({ baseUrl: BASE, fetch: async () => assert.fail("nothing may be sent") });
  const unread = await anonymous
    .authorize({ vat_jti: "vat_root_x", action: "pay", resource: "bank:x" }, { waitForApproval: { timeoutSeconds: 5 } })
    .catch((e) => e);
  assert.deepEqual([unread.status, unread.code], [0, "token_required"]);

  // The caller's signal ends the wait, and the read it interrupts.
  const controller = new AbortController();
  let readSignal;
  const hanging = new MandateClient({
    baseUrl: BASE,
    apiKey: KEY,
    fetch: (url, init) => {
      if (init.method === "POST") {
        return Promise.resolve({ ok: true, status: 202, statusText: "", text: async () => JSON.stringify(waiting) });
      }
      readSignal = init.signal;
      return new Promise((_, reject) => init.signal.addEventListener("abort", () => reject(init.signal.reason)));
    },
  });
  const stopped = hanging.authorize(
    { vat_jti: "vat_root_x", action: "pay", resource: "bank:x" },
    { waitForApproval: { timeoutSeconds: 60, signal: controller.signal } },
  );
  setTimeout(() => controller.abort(), 50);
  const error = await stopped.catch((e) => e);
  assert.ok(error instanceof MandateError);
  assert.deepEqual([error.status, error.code], [0, "aborted"]);
  assert.equal(readSignal.aborted, true);
});

test("a hung attempt times out (retried as a read is), a per-call timeout wins, and the caller's signal aborts", async () => {
  // Client-wide timeout, retries off: one attempt, a `timeout` of status 0.
  const once = configured({ timeoutMs: 30, maxRetries: 0 }, "hang");
  const started = Date.now();
  const timedOut = await once.client.me().catch((e) => e);
  assert.ok(timedOut instanceof MandateError);
  assert.deepEqual([timedOut.status, timedOut.code], [0, "timeout"]);
  assert.ok(Date.now() - started < 1000);
  assert.equal(once.calls.length, 1);
  assert.equal(once.calls[0].signal.aborted, true, "the attempt's fetch is told to stop");
  // A read is retried after a timeout; every attempt hung: the last timeout rejects.
  const retried = configured({ timeoutMs: 20 }, "hang", "hang", "hang");
  const again = await retried.client.me().catch((e) => e);
  assert.deepEqual([again.code, retried.calls.length, retried.pauses.length], ["timeout", 3, 2]);
  // The call's own timeoutMs and maxRetries win over the client's.
  const slow = configured({ timeoutMs: 60_000 }, "hang", { status: 200, body: { ok: 1 } });
  assert.deepEqual(await slow.client.me({ timeoutMs: 20, maxRetries: 1 }), { ok: 1 });
  assert.equal(slow.calls.length, 2);
  // The caller's signal: `aborted`, at once, never retried.
  const hung = configured({}, "hang", "hang");
  const controller = new AbortController();
  setTimeout(() => controller.abort(new Error("user left")), 20);
  const stopped = await hung.client.record("aar_1", { signal: controller.signal }).catch((e) => e);
  assert.deepEqual([stopped.status, stopped.code, stopped.cause.message], [0, "aborted", "user left"]);
  assert.equal(hung.calls.length, 1);
  // An aborted signal sends nothing.
  const none = configured({});
  const early = await none.client.jwks({ signal: AbortSignal.abort() }).catch((e) => e);
  assert.deepEqual([early.code, none.calls.length], ["aborted", 0]);
  // Options that cannot be used are refused.
  assert.throws(() => new MandateClient({ baseUrl: BASE, fetch: async () => {}, timeoutMs: -1 }), { code: "invalid_options" });
  const bad = await configured({}).client.me({ maxRetries: Number.NaN }).catch((e) => e);
  assert.equal(bad.code, "invalid_options");
});

test("a long-poll's wait is added to its timeout", async () => {
  const answers = [];
  const fetch = async (url) => {
    answers.push(url);
    // The server holds the read 150 ms, longer than the timeout alone.
    await new Promise((resolve) => setTimeout(resolve, 150));
    return { ok: true, status: 200, statusText: "OK", text: async () => JSON.stringify(approvalBody("pending")) };
  };
  const c = new MandateClient({ baseUrl: BASE, apiKey: KEY, fetch, timeoutMs: 50, maxRetries: 0 });
  assert.equal((await c.approval(APPROVAL, { wait: 1 })).status, "pending");
  const cut = await c.approval(APPROVAL).catch((e) => e);
  assert.equal(cut.code, "timeout");
});

test("a 503 then a 200: one retry after the Retry-After asked for, with the same key and a fresh proof", async () => {
  const key = generateAgentKey();
  const dpop = JSON.parse(readFileSync(new URL("../../tests/vectors/dpop.json", import.meta.url), "utf8"));
  const header = Buffer.from(JSON.stringify({ alg: "EdDSA", typ: "vat+jwt", kid: "k" })).toString("base64url");
  const claims = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(dpop.token.split(".")[1], "base64url")), cnf: { jkt: key.jkt } })).toString("base64url");
  const token = `${header}.${claims}.sig`;
  const unavailable = { status: 503, headers: { "retry-after": "2", "x-request-id": "req_1" }, body: { code: "unavailable", title: "Storage unavailable", status: 503 } };
  const recorded = { status: 201, headers: { "x-request-id": "req_2" }, body: { recorded: true, aar_id: "aar_1" } };
  const seen = [];
  const { calls, pauses, client: c } = configured({ onResponse: (info) => seen.push(info) }, unavailable, recorded);
  const answer = await c.recordAction({ action: "send", resource: "mail:outbox", result: "success" }, { token, key });
  assert.equal(answer.aar_id, "aar_1");
  assert.deepEqual(pauses, [2000]);
  assert.equal(calls.length, 2);
  assert.match(calls[0].headers["idempotency-key"], KEY_FORM);
  assert.equal(calls[1].headers["idempotency-key"], calls[0].headers["idempotency-key"], "a retry is the same write");
  assert.notEqual(calls[1].headers.dpop, calls[0].headers.dpop, "a proof is good for one request");
  assert.deepEqual(
    seen.map(({ method, url, status, requestId, attempt, headers }) => [method, url.slice(BASE.length), status, requestId, attempt, headers["retry-after"]]),
    [
      ["POST", "/v1/vat/record/action", 503, "req_1", 1, "2"],
      ["POST", "/v1/vat/record/action", 201, "req_2", 2, undefined],
    ],
  );
  // A key of the caller's own is kept as it is.
  const own = configured({}, unavailable, recorded);
  await own.client.issueL1({ developer_email: "d@example.com", agent_id: "a", resources: ["x"], actions: ["read"] }, { idempotencyKey: "mine" });
  assert.deepEqual(own.calls.map((call) => call.headers["idempotency-key"]), ["mine", "mine"]);
});

test("a 429's Retry-After as seconds or an HTTP date; longer than the longest pause, or a quota: not retried", async () => {
  const limited = (retryAfter) => ({ status: 429, headers: { "retry-after": retryAfter }, body: { code: "rate_limited", title: "Too many requests", status: 429 } });
  const { calls, pauses, client: c } = configured({}, limited("1"), limited(new Date(Date.now() + 5000).toUTCString()), { status: 200, body: { keys: [] } });
  assert.deepEqual(await c.jwks(), { keys: [] });
  assert.equal(calls.length, 3);
  assert.equal(pauses[0], 1000);
  assert.ok(pauses[1] >= 4000 && pauses[1] <= 5000, `an HTTP date 5 s ahead: ${pauses[1]} ms`);
  // Past maxRetryDelayMs the answer is the caller's, with when to try again.
  const patient = configured({ maxRetryDelayMs: 10_000 }, limited("120"));
  const later = await patient.client.me().catch((e) => e);
  assert.deepEqual([later.status, later.code, later.retryAfter, patient.calls.length], [429, "rate_limited", 120, 1]);
  // A quota is not a rate limit: no retry cures it.
  const quota = configured({}, { status: 429, headers: { "retry-after": "3" }, body: { code: "quota_exceeded", status: 429 } });
  const full = await quota.client.recordAction({ vat_jti: "vat_root_x", action: "read", resource: "crm:a", result: "success" }).catch((e) => e);
  assert.deepEqual([full.code, full.retryAfter, quota.calls.length], ["quota_exceeded", 3, 1]);
});

test("no answer to a read: retried after a growing pause with jitter, maxRetries times", async () => {
  const down = new TypeError("fetch failed");
  const { calls, pauses, client: c } = configured({}, down, down, { status: 200, body: { agent_id: "agent:a" } });
  assert.equal((await c.reputation("a")).agent_id, "agent:a");
  assert.equal(calls.length, 3);
  assert.ok(pauses[0] >= 375 && pauses[0] <= 500, `first pause ${pauses[0]}`);
  assert.ok(pauses[1] >= 750 && pauses[1] <= 1000, `second pause ${pauses[1]}`);
  // 502 and 504 too; a 500 or a 4xx is the answer.
  const gateway = configured({}, { status: 502, body: "" }, { status: 504, body: "" }, { status: 500, body: { code: "internal", status: 500 } });
  const failed = await gateway.client.provenance("prov_1").catch((e) => e);
  assert.deepEqual([failed.status, failed.code, gateway.calls.length], [500, "internal", 3]);
  // maxRetries 0, client-wide: each call once.
  const single = configured({ maxRetries: 0 }, down);
  const once = await single.client.reputation("a").catch((e) => e);
  assert.deepEqual([once.code, single.calls.length, single.pauses.length], ["network_error", 1, 0]);
  // With retries off, writes carry no key of the client's making.
  const plain = configured({ maxRetries: 0 });
  await plain.client.authorize({ vat_jti: "vat_root_x", action: "read", resource: "crm:a" });
  assert.equal(plain.calls[0].headers["idempotency-key"], undefined);
});

test("a write the server keeps no Idempotency-Key for is never sent twice", async () => {
  const down = new TypeError("fetch failed");
  const unavailable = { status: 503, body: { code: "unavailable", status: 503 } };
  const { calls, client: c } = configured({}, down, unavailable, down, unavailable, down);
  const refusals = [
    await c.revoke({ jti: "vat_root_x" }).catch((e) => e),
    await c.feedback("aar_1", { rating: "approved" }).catch((e) => e),
    await c.decide(APPROVAL, { decision: "approve" }).catch((e) => e),
    await c.rateWorkflow({ provenance_ref: "prov_1", result: "success", rating: "approved" }).catch((e) => e),
    await c.createKey({ role: "auditor" }).catch((e) => e),
  ];
  assert.deepEqual(refusals.map((e) => e.code), ["network_error", "unavailable", "network_error", "unavailable", "network_error"]);
  assert.equal(calls.length, 5);
  for (const call of calls) assert.equal(call.headers["idempotency-key"], undefined);
});

test("a failure carries the answer's headers, its request id and Retry-After; a success's reach onResponse", async () => {
  const seen = [];
  const { client: c } = configured(
    { maxRetries: 0, onResponse: (info) => seen.push(info) },
    { status: 200, headers: { "x-request-id": "req_ok" }, body: { records: [] } },
    {
      status: 503,
      headers: { "x-request-id": "req_busy", "retry-after": "5", "content-type": "application/problem+json" },
      body: { code: "unavailable", title: "Storage unavailable", status: 503 },
    },
    { status: 404, body: { code: "record_not_found", title: "Record not found", status: 404 } },
  );
  await c.recordsPage();
  const busy = await c.record("aar_1").catch((e) => e);
  assert.deepEqual(
    [busy.status, busy.code, busy.requestId, busy.retryAfter, busy.headers["content-type"]],
    [503, "unavailable", "req_busy", 5, "application/problem+json"],
  );
  const missing = await c.record("aar_2").catch((e) => e);
  assert.deepEqual([missing.requestId, missing.retryAfter, missing.headers], [undefined, undefined, {}]);
  const down = await configured({ maxRetries: 0 }, new TypeError("fetch failed")).client.me().catch((e) => e);
  assert.deepEqual([down.status, down.headers, down.requestId], [0, {}, undefined]);
  assert.deepEqual(
    seen.map(({ status, requestId, attempt }) => [status, requestId, attempt]),
    [
      [200, "req_ok", 1],
      [503, "req_busy", 1],
      [404, undefined, 1],
    ],
  );
  // A Headers-like without forEach still gives the headers the client knows.
  const bare = new MandateClient({
    baseUrl: BASE,
    maxRetries: 0,
    fetch: async () => ({
      ok: false,
      status: 429,
      statusText: "",
      headers: { get: (name) => ({ "retry-after": "7", "x-request-id": "req_7" })[name] ?? null },
      text: async () => JSON.stringify({ code: "rate_limited" }),
    }),
  });
  const limited = await bare.me().catch((e) => e);
  assert.deepEqual([limited.retryAfter, limited.requestId], [7, "req_7"]);
});

const COMPLETED = {
  aar_id: "aar_1",
  status: "completed",
  result: "success",
  result_hash: `sha256:${"a".repeat(64)}`,
  spend_usd: 2.5,
};
const twice = { status: 409, body: { code: "already_completed", title: "Record already completed", status: 409 } };

test("complete: a retry after a lost answer, refused already_completed, resolves when the record shows that outcome", async () => {
  const request = { result: "success", result_hash: COMPLETED.result_hash, spend_usd: 2.5 };
  const down = new TypeError("socket hang up");
  const { calls, client: c } = configured({}, down, twice, { status: 200, body: COMPLETED });
  assert.deepEqual(await c.complete("aar_1", request, { token: "eyJ.token.sig", idempotencyKey: "complete-aar_1" }), COMPLETED);
  assert.deepEqual(
    calls.map(({ method, url, headers }) => [method, url.slice(BASE.length), headers.authorization, headers["idempotency-key"]]),
    [
      ["POST", "/v1/vat/aar/aar_1/complete", "Bearer eyJ.token.sig", "complete-aar_1"],
      ["POST", "/v1/vat/aar/aar_1/complete", "Bearer eyJ.token.sig", "complete-aar_1"],
      ["GET", "/v1/vat/aar/aar_1", `Bearer ${KEY}`, undefined],
    ],
  );
  // Another outcome on the record: the 409 stands.
  const other = configured({}, down, twice, { status: 200, body: { ...COMPLETED, result: "error" } });
  const refused = await other.client.complete("aar_1", request).catch((e) => e);
  assert.deepEqual([refused.status, refused.code], [409, "already_completed"]);
  // A 409 with no lost attempt before it is the answer, nothing read.
  const plain = configured({}, twice);
  const first = await plain.client.complete("aar_1", request).catch((e) => e);
  assert.deepEqual([first.code, plain.calls.length], ["already_completed", 1]);
  assert.doesNotMatch(first.detail ?? "", /earlier attempt/);
  // A 503 keeps nothing: a 409 after it is not taken for our own completion.
  const busy = configured({}, { status: 503, body: { code: "unavailable", status: 503 } }, twice);
  const after = await busy.client.complete("aar_1", request).catch((e) => e);
  assert.deepEqual([after.code, busy.calls.length], ["already_completed", 2]);
  // Without an API key nothing can be read: the 409 says an earlier attempt may have done it.
  const agentOnly = recorder(down, twice);
  const agent = new MandateClient({ baseUrl: BASE, fetch: agentOnly.fetch, sleep: async () => {} });
  const unsure = await agent.complete("aar_1", request, { token: "eyJ.token.sig" }).catch((e) => e);
  assert.deepEqual([unsure.status, unsure.code], [409, "already_completed"]);
  assert.match(unsure.detail, /an earlier attempt of this call, whose answer was lost, may have completed it/);
  assert.equal(agentOnly.calls.length, 2);
});

test("act completes with the key complete-<aar_id>, and a lost completion answer does not fail the action", async () => {
  const authorized = { authorized: true, aar_id: "aar_7", trust_score: 0.5, provenance_ref: "prov_7", human_ref: "hr", assurance_level: "L1" };
  const { calls, fetch } = recorder({ status: 200, body: authorized }, new TypeError("socket hang up"), twice);
  const agent = new MandateClient({ baseUrl: BASE, fetch, sleep: async () => {} });
  const output = await agent.act("eyJ.token.sig", { action: "send", resource: "mail:outbox" }, async ({ aarId }) => `sent by ${aarId}`);
  assert.equal(output, "sent by aar_7");
  assert.deepEqual(
    calls.map(({ url, headers, body }) => [url.slice(BASE.length), headers["idempotency-key"], body.result]),
    [
      ["/v1/vat/authorize", calls[0].headers["idempotency-key"], undefined],
      ["/v1/vat/aar/aar_7/complete", "complete-aar_7", "success"],
      ["/v1/vat/aar/aar_7/complete", "complete-aar_7", "success"],
    ],
  );
  assert.match(calls[0].headers["idempotency-key"], KEY_FORM);
  // A refusal is typed: its reason a DenyReason.
  const refusing = recorder({ status: 200, body: { ...authorized, authorized: false, reason: "budget_max_actions" } });
  const refused = await new MandateClient({ baseUrl: BASE, fetch: refusing.fetch })
    .act("eyJ.token.sig", { action: "send", resource: "mail:outbox" }, () => assert.fail("must not run"))
    .catch((e) => e);
  assert.deepEqual([refused.name, refused.reason, refused.aarId], ["MandateRefusal", "budget_max_actions", "aar_7"]);
  // The caller's signal aborts the run: the completion is still sent, as `cancelled`.
  const cancelling = recorder({ status: 200, body: authorized }, { status: 200, body: { ...COMPLETED, result: "cancelled" } });
  const controller = new AbortController();
  const cancelled = await new MandateClient({ baseUrl: BASE, fetch: cancelling.fetch })
    .act("eyJ.token.sig", { action: "send", resource: "mail:outbox" }, async () => {
      controller.abort();
      throw new Error("stopped");
    }, { signal: controller.signal })
    .catch((e) => e);
  assert.equal(cancelled.message, "stopped");
  assert.equal(cancelling.calls[1].body.result, "cancelled");
  assert.equal(cancelling.calls[1].signal.aborted, false, "the completion does not carry the aborted signal");
});

/** An Ed25519 key pair made with jose, its public JWK named by its thumbprint. */
async function signingKey(jose) {
  const { privateKey, publicKey } = await jose.generateKeyPair("EdDSA", { crv: "Ed25519" });
  const jwk = await jose.exportJWK(publicKey);
  const kid = await jose.calculateJwkThumbprint(jwk);
  return { privateKey, kid, jwk: { ...jwk, kid, alg: "EdDSA", use: "sig" } };
}

test("verifier({ maxStalenessSeconds }) follows a key rotation: one fetch for a new kid, none within the cooldown", async () => {
  const jose = await import("jose");
  const [first, rotated, stranger] = await Promise.all([signingKey(jose), signingKey(jose), signingKey(jose)]);
  const root = tokens.cases.find((t) => t.name === "valid_root");
  const { status: _status, ...claims } = root.expect.claims;
  const sign = (key) => new jose.SignJWT(claims).setProtectedHeader({ alg: "EdDSA", typ: "vat+jwt", kid: key.kid }).sign(key.privateKey);
  let published = [first.jwk];
  const fetched = [];
  const fetch = async (url, init) => {
    fetched.push({ url, credentials: init.credentials, authorization: init.headers.authorization });
    assert.equal(url, `${BASE}/.well-known/jwks.json`);
    return { ok: true, status: 200, statusText: "OK", headers: new Headers(), text: async () => JSON.stringify({ keys: published }) };
  };
  let now = root.now;
  const c = new MandateClient({ baseUrl: BASE, apiKey: KEY, fetch });
  const verifier = await c.verifier({ maxStalenessSeconds: 300, clock: () => now });
  assert.ok(verifier instanceof RemoteVerifier);
  assert.deepEqual(fetched, [{ url: `${BASE}/.well-known/jwks.json`, credentials: "omit", authorization: undefined }]);
  assert.equal((await verifier.verify(await sign(first))).valid, true);
  // The server rotates in a new key; a token signed with it makes the verifier fetch the set once.
  published = [rotated.jwk, first.jwk];
  now += 31;
  const fresh = await verifier.verify(await sign(rotated));
  assert.equal(fresh.valid, true, JSON.stringify(fresh.error));
  assert.equal(fetched.length, 2);
  // A kid nobody publishes, again and again, within the cooldown: no fetch.
  now += 5;
  const unknown = await sign(stranger);
  for (let i = 0; i < 5; i += 1) assert.equal((await verifier.verify(unknown)).error.code, "unknown_kid");
  assert.equal(fetched.length, 2);
  // Past the cooldown, many at once: one fetch, shared.
  now += 31;
  const verdicts = await Promise.all(Array.from({ length: 4 }, () => verifier.verify(unknown)));
  assert.deepEqual(verdicts.map((v) => v.error.code), Array(4).fill("unknown_kid"));
  assert.equal(fetched.length, 3);
  assert.equal((await verifier.verify(await sign(rotated))).valid, true);
  verifier.free();
  // The cooldown is an option.
  const eager = await c.verifier({ maxStalenessSeconds: 300, clock: () => now, keyRefreshCooldownSeconds: 0 });
  await eager.verify(unknown);
  await eager.verify(unknown);
  assert.equal(fetched.length, 6, "one fetch to start, one per unknown kid");
  eager.free();
});

test("verifier({ maxStalenessSeconds }) applies the status lists tokens name: a revoked token is token_revoked", async () => {
  const lists = JSON.parse(readFileSync(new URL("../../tests/vectors/status_list.json", import.meta.url), "utf8"));
  const byName = (name) => lists.cases.find((c) => c.name === name);
  const server = "https://mandate.example";
  const fetched = [];
  const fetch = async (url, init) => {
    fetched.push({ url, accept: init.headers.accept, credentials: init.credentials });
    const body = url === `${server}/.well-known/jwks.json` ? JSON.stringify(lists.jwks) : url === `${server}/v1/vat/status/0` ? byName("valid").list : undefined;
    if (body === undefined) return { ok: false, status: 404, statusText: "", headers: new Headers(), text: async () => "" };
    return { ok: true, status: 200, statusText: "OK", headers: new Headers({ etag: 'W/"1"' }), text: async () => body };
  };
  const c = new MandateClient({ baseUrl: server, fetch });
  const verifier = await c.verifier({ maxStalenessSeconds: 700, clock: () => lists.now });
  const revoked = await verifier.verify(byName("revoked").token);
  assert.deepEqual([revoked.valid, revoked.error.code], [false, "token_revoked"]);
  assert.equal((await verifier.verify(byName("valid").token)).valid, true);
  assert.deepEqual(fetched, [
    { url: `${server}/.well-known/jwks.json`, accept: "application/json", credentials: "omit" },
    { url: `${server}/v1/vat/status/0`, accept: "application/statuslist+jwt", credentials: "omit" },
  ]);
  verifier.free();
  // A key set that cannot be fetched: the client's MandateError.
  const down = new MandateClient({ baseUrl: server, fetch: async () => ({ ok: false, status: 503, statusText: "", text: async () => "" }) });
  const error = await down.verifier({ maxStalenessSeconds: 60 }).catch((e) => e);
  assert.ok(error instanceof MandateError);
  assert.deepEqual([error.status, error.code], [503, "jwks_unavailable"]);
});

test("ProblemCode lists exactly the codes of the server's table of problem titles", () => {
  const titles = readFileSync(new URL("../../host/src/error/titles.rs", import.meta.url), "utf8");
  const server = [...titles.matchAll(/^ {4}\("([a-z0-9_]+)",/gm)].map((m) => m[1]);
  const declarations = readFileSync(new URL("../pkg/node/client/errors.d.ts", import.meta.url), "utf8");
  const union = /export type ProblemCode =([^;]+);/.exec(declarations)[1];
  const client = [...union.matchAll(/"([a-z0-9_]+)"/g)].map((m) => m[1]);
  assert.ok(server.length > 200);
  assert.deepEqual(client, server, "regenerate ProblemCode in ts/client/errors.ts from host/src/error/titles.rs");
  const reasons = /export type DenyReason =([^;]+);/.exec(declarations)[1];
  for (const reason of reasons.matchAll(/"([a-z0-9_]+)"/g)) assert.ok(server.includes(reason[1]), reason[1]);
});

test("events(): a connection that does not answer in time, or a 503 asking for a pause, is connected again after it; the timeout spares the stream", async () => {
  const event = JSON.stringify({ type: "token.revoked", timestamp: "2026-11-25T10:00:00.000Z", data: { jth: "x", revoked: 1 } });
  const stream = (init) => {
    const body = new ReadableStream({
      start(controller) {
        // Later than the timeout: it bounds connecting, not the stream.
        setTimeout(() => controller.enqueue(new TextEncoder().encode(`id: msg_1\nevent: token.revoked\ndata: ${event}\n\n`)), 80);
        init.signal.addEventListener("abort", () => controller.error(init.signal.reason));
      },
    });
    return { ok: true, status: 200, statusText: "OK", headers: new Headers({ "content-type": "text/event-stream" }), body, text: async () => "" };
  };
  const answers = [
    () => new Promise(() => {}),
    () => ({ ok: false, status: 503, statusText: "", headers: new Headers({ "retry-after": "4" }), body: null, text: async () => JSON.stringify({ code: "unavailable" }) }),
    stream,
  ];
  let connections = 0;
  const fetch = async (url, init) => {
    connections += 1;
    return answers.shift()(init);
  };
  const { pauses, sleep } = sleeper();
  const c = new MandateClient({ baseUrl: BASE, apiKey: KEY, fetch, sleep, timeoutMs: 20 });
  const controller = new AbortController();
  let drops = 0;
  const seen = [];
  for await (const e of c.events({ signal: controller.signal, onDrop: () => (drops += 1) })) {
    seen.push([e.id, e.type]);
    controller.abort();
  }
  assert.deepEqual(seen, [["msg_1", "token.revoked"]]);
  assert.deepEqual([connections, drops], [3, 2]);
  // The first pause is the stream's own (1 s); the second the 4 s the server asked for.
  assert.deepEqual(pauses, [1000, 4000]);
});

test("recordActions sends the batch as records, keyed once for every attempt, and answers one result per record", async () => {
  const results = [
    { index: 0, recorded: true, aar_id: "aar_1", provenance_ref: "prov_1", trust_score: 0.5, delegation_depth: 0 },
    { index: 1, recorded: false, status: 403, code: "action_not_permitted", detail: "the token does not hold this action", aar_id: "aar_2" },
  ];
  const { calls, pauses, client: c } = configured(
    {},
    { status: 503, headers: { "retry-after": "1" }, body: { code: "unavailable", status: 503 } },
    { status: 200, body: { results } },
  );
  const records = [
    { action: "read", resource: "crm:a", result: "success" },
    { action: "write", resource: "crm:a", result: "success", result_hash: `sha256:${"c".repeat(64)}` },
  ];
  const answer = await c.as("eyJ.token.sig").recordActions(records);
  assert.deepEqual(answer.results, results);
  assert.deepEqual(pauses, [1000]);
  assert.deepEqual(
    calls.map(({ method, url, headers, body }) => [method, url.slice(BASE.length), headers.authorization, body]),
    [
      ["POST", "/v1/vat/record/actions", "Bearer eyJ.token.sig", { records }],
      ["POST", "/v1/vat/record/actions", "Bearer eyJ.token.sig", { records }],
    ],
  );
  assert.match(calls[0].headers["idempotency-key"], KEY_FORM);
  assert.equal(calls[1].headers["idempotency-key"], calls[0].headers["idempotency-key"]);
  // By vat_jti, each record naming its own token: no credential, the caller's key kept.
  const bare = configured({}, { status: 200, body: { results: [] } });
  await bare.client.recordActions([{ vat_jti: "vat_root_x", action: "read", resource: "crm:a", result: "success" }], { idempotencyKey: "batch-1" });
  assert.deepEqual([bare.calls[0].headers.authorization, bare.calls[0].headers["idempotency-key"]], [undefined, "batch-1"]);
});
