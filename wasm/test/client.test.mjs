// MandateClient against a recording fetch: the method, URL, credential and
// body of every call; pages followed by async iteration; every failure a
// MandateError carrying the problem body and the answer's headers; timeouts,
// signals and retries (the pauses recorded by an injected sleep, so nothing
// waits); verifier() following a key rotation and applying status lists.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";

const { MandateClient, MandateError, RemoteVerifier, Verifier, generateAgentKey, verifyProof } =
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
    { status: 200, body: { tokens: [{ jti: "vat_root_1" }], next_cursor: "t1" } },
    { status: 200, body: { tokens: [{ jti: "vat_del_2" }] } },
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
  for await (const token of c.tokens({ human_ref: "sha256:abc", status: "active" })) tokens.push(token.jti);
  assert.deepEqual(tokens, ["vat_root_1", "vat_del_2"]);
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
