// The AuthZEN calls and the PEP helper (mandate-sdk/authzen) against a
// live `mandate serve` (MANDATE_BIN): a gateway key gets decisions and
// nothing else; a retry of an evaluation (its answer lost) is the same act,
// recorded once; the guard lets a permitted call through to the handler,
// refuses an argument the token's rules forbid, a revoked token, a request
// without a token, and — failing closed — answers 503 without calling the
// handler when Mandate cannot be reached.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { after, before, test } from "node:test";

import { startServer } from "./live-server.mjs";

const require = createRequire(import.meta.url);
const { MandateClient, MandateError, generateAgentKey } = require("..");
const { AuthzenPep, guard } = require("../pkg/node/authzen.js");

let live;
let admin;
let gateway;
let gatewayKey;

before(async () => {
  live = await startServer();
  admin = new MandateClient({ baseUrl: live.baseUrl, apiKey: live.apiKey });
  gatewayKey = (await admin.createKey({ role: "gateway" })).api_key;
  gateway = new MandateClient({ baseUrl: live.baseUrl, apiKey: gatewayKey });
});

after(() => {
  live?.stop();
});

/** A token for `agent` that may `call` the mail tools, sending only to example.com. */
async function mailToken(agent, more = {}) {
  const issued = await admin.issueL1({
    ...more,
    developer_email: "dev@example.com",
    agent_id: agent,
    actions: ["call"],
    resources: ["mcp:mail/*"],
    constraints: { args: [{ actions: ["call"], pol: [["all", ".to", ["like", ".", "*@example.com"]]] }] },
  });
  return issued.compact_jwt;
}

/** The records of `agent`, as the admin key reads them. */
async function recordsOf(agent) {
  const page = await admin.recordsPage({ agent_id: agent });
  return page.records;
}

test("a gateway key gets decisions, the PDP's metadata, and nothing else", async () => {
  const token = await mailToken("pep-metadata");
  const metadata = await gateway.authzenConfiguration();
  assert.equal(metadata.policy_decision_point, live.baseUrl);
  assert.equal(metadata.access_evaluation_endpoint, `${live.baseUrl}/v1/access/evaluation`);
  const permitted = await gateway.evaluation({
    subject: { type: "mandate_vat", id: token },
    action: { name: "call" },
    resource: { type: "mcp", id: "mail/send" },
    context: { args: { to: ["ann@example.com"] } },
  });
  assert.equal(permitted.decision, true);
  assert.match(permitted.context.aar_id, /^aar_/);
  const several = await gateway.evaluations({
    subject: { type: "mandate_vat", id: token },
    action: { name: "call" },
    resource: { type: "mcp", id: "mail/send" },
    evaluations: [{ context: { args: { to: ["ann@example.com"] } } }, { context: { args: { to: ["eve@evil.example"] } } }],
  });
  assert.deepEqual(
    several.evaluations.map((d) => [d.decision, d.context?.reason]),
    [
      [true, undefined],
      [false, "args_not_permitted"],
    ],
  );
  // Without `evaluations` the server answers one Decision; the client still returns the list.
  const one = await gateway.evaluations({
    subject: { type: "mandate_vat", id: token },
    action: { name: "call" },
    resource: { type: "mcp", id: "mail/read" },
    context: { args: { to: [] } },
  });
  assert.equal(one.evaluations.length, 1);
  assert.equal(one.evaluations[0].decision, true);
  const refused = await gateway.issueL1({ developer_email: "dev@example.com", agent_id: "x", actions: ["call"], resources: ["mcp:*"] }).catch((e) => e);
  assert.ok(refused instanceof MandateError);
  assert.equal(refused.status, 403);
});

test("an evaluation whose answer is lost is sent again with the same X-Request-ID, and recorded once", async () => {
  const token = await mailToken("pep-retry");
  const sent = [];
  let lost = false;
  const fetch = async (url, init) => {
    sent.push(init.headers["x-request-id"]);
    const response = await globalThis.fetch(url, init);
    if (!lost) {
      lost = true;
      await response.text();
      throw new TypeError("fetch failed: the connection dropped");
    }
    return response;
  };
  const retrying = new MandateClient({ baseUrl: live.baseUrl, apiKey: gatewayKey, fetch, sleep: async () => {} });
  const decision = await retrying.evaluation({
    subject: { type: "mandate_vat", id: token },
    action: { name: "call" },
    resource: { type: "mcp", id: "mail/send" },
    context: { args: { to: ["ann@example.com"] } },
  });
  assert.equal(decision.decision, true);
  assert.equal(sent.length, 2);
  assert.match(sent[0], /^mandate-sdk-[0-9a-f]{32}$/);
  assert.equal(sent[1], sent[0]);
  assert.equal((await recordsOf("pep-retry")).length, 1);
});

test("the guard runs the handler only for a permitted call, and answers refusals as problems", async () => {
  const token = await mailToken("pep-guard");
  const pep = new AuthzenPep(gateway);
  const handled = [];
  const handler = guard(
    pep,
    {
      describe: async (request) => {
        const body = await request.clone().json();
        if (typeof body !== "object" || body === null || typeof body.tool !== "string") {
          throw new TypeError("the body names no tool");
        }
        return { action: "call", resource: `mcp:mail/${body.tool}`, args: body.args };
      },
    },
    (request, verdict) => {
      handled.push(verdict.aarId);
      return new Response("sent");
    },
  );
  const call = (authorization, body) =>
    handler(
      new Request("http://tools.example/mcp", {
        method: "POST",
        headers: authorization === undefined ? {} : { authorization },
        body: JSON.stringify(body),
      }),
    );

  const ok = await call(`Bearer ${token}`, { tool: "send", args: { to: ["ann@example.com"] } });
  assert.equal(ok.status, 200);
  assert.equal(await ok.text(), "sent");
  assert.equal(handled.length, 1);
  assert.match(handled[0], /^aar_/);

  const outsider = await call(`Bearer ${token}`, { tool: "send", args: { to: ["eve@evil.example"] } });
  assert.equal(outsider.status, 403);
  assert.equal(outsider.headers.get("content-type"), "application/problem+json");
  const problem = await outsider.json();
  assert.equal(problem.code, "args_not_permitted");
  assert.match(problem.aar_id, /^aar_/);

  const none = await call(undefined, { tool: "send", args: {} });
  assert.equal(none.status, 401);
  assert.match(none.headers.get("www-authenticate"), /^Bearer error="invalid_token"/);

  const jti = JSON.parse(Buffer.from(token.split(".")[1], "base64url")).jti;
  const byName = await call(`Bearer ${jti}`, { tool: "send", args: { to: ["ann@example.com"] } });
  assert.equal(byName.status, 403, "a jti is not a token");

  const undescribable = await call(`Bearer ${token}`, "not an object");
  assert.equal(undescribable.status, 400);

  await admin.revoke({ jti, reason: "test" });
  const revoked = await call(`Bearer ${token}`, { tool: "send", args: { to: ["ann@example.com"] } });
  assert.equal(revoked.status, 403);
  assert.equal((await revoked.json()).code, "token_revoked");
  assert.equal(handled.length, 1, "no refused call reached the handler");
});

test("a bound token goes through the guard only with its agent's proof for the evaluation endpoint", async () => {
  const key = generateAgentKey();
  const token = await mailToken("pep-bound", { holder_key: key.publicJwk });
  const endpoint = (await gateway.authzenConfiguration()).access_evaluation_endpoint;
  const handler = guard(
    new AuthzenPep(gateway),
    {
      describe: () => ({ action: "call", resource: "mcp:mail/send", args: { to: ["ann@example.com"] } }),
      evaluationProof: (request) => request.headers.get("mandate-evaluation-dpop") ?? undefined,
    },
    () => new Response("sent"),
  );
  const call = (headers) => handler(new Request("http://tools.example/mcp", { method: "POST", headers: { authorization: `DPoP ${token}`, ...headers } }));
  const proof = () => {
    const made = key.proof({ method: "POST", url: endpoint, accessToken: token });
    assert.ok(made.ok);
    return made.proof;
  };
  const without = await call({});
  assert.equal(without.status, 403);
  assert.equal((await without.json()).code, "dpop_required");
  const used = proof();
  const permitted = await call({ "mandate-evaluation-dpop": used });
  assert.equal(permitted.status, 200);
  const replayed = await call({ "mandate-evaluation-dpop": used });
  assert.equal(replayed.status, 403, "a proof is good for one evaluation");
  assert.equal((await replayed.json()).code, "dpop_invalid");
});

test("the guard fails closed: no decision from Mandate, no call", async () => {
  const token = await mailToken("pep-unreachable");
  const unreachable = new MandateClient({ baseUrl: "http://127.0.0.1:1", apiKey: gatewayKey, maxRetries: 0, timeoutMs: 2000 });
  const wrongKey = new MandateClient({ baseUrl: live.baseUrl, apiKey: "mk_not_a_key", maxRetries: 0 });
  for (const client of [unreachable, wrongKey]) {
    let reached = false;
    const handler = guard(new AuthzenPep(client), { describe: () => ({ action: "call", resource: "mcp:mail/send" }) }, () => {
      reached = true;
      return new Response("sent");
    });
    const answer = await handler(new Request("http://tools.example/mcp", { method: "POST", headers: { authorization: `Bearer ${token}` } }));
    assert.equal(answer.status, 503);
    assert.equal((await answer.json()).code, "decision_unavailable");
    assert.equal(reached, false);
  }
  await assert.rejects(new AuthzenPep(unreachable).decide({ token, action: "call", resource: "mcp:mail/send" }), MandateError);
});
