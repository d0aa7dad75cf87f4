// The trust graph's calls against a live `mandate serve` (MANDATE_BIN names
// the binary; without it these tests fail): a human and an agent vouch, the
// trust read once the server has recomputed it, the graph followed page
// after page, refusals (an existing vouch, an agent vouching for one it did
// not delegate to, a role without `vouch`, another organisation's agent, a
// withdrawal by someone else), a withdrawal; the signed statement fetched and verified offline by the
// wasm build — valid, refused when tampered with (invalid_signature) and
// when checked after it expired (statement_expired).
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { after, before, test } from "node:test";

import { startServer } from "./live-server.mjs";

const sdk = createRequire(import.meta.url)("..");
const { MandateClient, MandateError } = sdk;

let live;
let client;
let lead;
let sub;

before(async () => {
  live = await startServer();
  client = new MandateClient({ baseUrl: live.baseUrl, apiKey: live.apiKey });
  lead = await client.issueL1({
    developer_email: "dev@example.com",
    agent_id: "lead-live",
    resources: ["crm:*"],
    actions: ["read", "delegate"],
  });
  sub = await client.as(lead.compact_jwt).delegate({ agent_id: "sub-live", resources: ["crm:*"], actions: ["read"] });
});

after(() => {
  live?.stop();
});

/** The agent's trust once the server's computation is at least as late as `since` (RFC 3339). */
async function trustAfter(agentId, since) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const trust = await client.trust(agentId);
    if (Date.parse(trust.computed_at) >= Date.parse(since) || Date.now() > deadline) return trust;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function refusal(promise) {
  const error = await promise.then(
    () => assert.fail("the call was not refused"),
    (e) => e,
  );
  assert.ok(error instanceof MandateError, String(error));
  return [error.status, error.code];
}

test("a human and an agent vouch; the trust counts both once recomputed; the graph lists them; refusals carry their codes", async () => {
  const before = await client.trust("sub-live");
  assert.deepEqual(before.vouches, []);
  const human = await client.vouch({ agent_id: "sub-live", weight: 0.9, reason: "reviewed", expires_at: new Date(Date.now() + 86_400_000) });
  assert.match(human.vouch_id, /^vch_/);
  assert.equal(human.voucher.kind, "human");
  assert.match(human.voucher.key_id, /^key_/);
  assert.equal(human.reason, "reviewed");
  assert.ok(Date.parse(human.expires_at) > Date.now());
  const agent = await client.as(lead.compact_jwt).vouch({ agent_id: "sub-live", weight: 0.5 });
  assert.deepEqual(agent.voucher, { kind: "agent", agent_id: "lead-live" });

  // The same voucher again while its vouch is active; an agent for one it did not delegate to.
  assert.deepEqual(await refusal(client.vouch({ agent_id: "sub-live", weight: 0.3 })), [409, "vouch_exists"]);
  assert.deepEqual(
    await refusal(client.as(sub.compact_jwt).vouch({ agent_id: "lead-live", weight: 0.3 })),
    [403, "vouch_not_allowed"],
  );
  // A role without `vouch`, and another organisation's key (the agent is absent there).
  const auditor = await client.createKey({ role: "auditor", email: "audit@example.com" });
  assert.deepEqual(
    await refusal(new MandateClient({ baseUrl: live.baseUrl, apiKey: auditor.api_key }).vouch({ agent_id: "sub-live", weight: 0.3 })),
    [403, "role_forbidden"],
  );
  const other = await client.createOrg({ name: "elsewhere", owner_email: "ops@elsewhere.test" });
  const stranger = new MandateClient({ baseUrl: live.baseUrl, apiKey: other.owner_key.api_key });
  assert.deepEqual(await refusal(stranger.vouch({ agent_id: "sub-live", weight: 0.3 })), [404, "agent_not_found"]);
  assert.deepEqual(await refusal(stranger.trust("sub-live")), [404, "agent_not_found"]);
  // Nor may it withdraw this organisation's vouch (it is absent there), nor a reviewer another's.
  assert.deepEqual(await refusal(stranger.withdrawVouch(human.vouch_id)), [404, "vouch_not_found"]);
  const reviewer = await client.createKey({ role: "reviewer", email: "rev@example.com" });
  assert.deepEqual(
    await refusal(new MandateClient({ baseUrl: live.baseUrl, apiKey: reviewer.api_key }).withdrawVouch(human.vouch_id)),
    [403, "vouch_not_allowed"],
  );

  const trust = await trustAfter("sub-live", agent.created_at);
  assert.deepEqual(trust.vouches.map((vouch) => vouch.vouch_id).sort(), [human.vouch_id, agent.vouch_id].sort());
  assert.ok(trust.graph > before.graph, `graph ${trust.graph} after two vouches, ${before.graph} before`);
  assert.ok(trust.trust > before.trust);
  for (const part of ["trust", "reputation", "graph", "decay", "ceiling"]) {
    assert.ok(trust[part] >= 0 && trust[part] <= 1, `${part} ${trust[part]}`);
  }
  assert.ok(trust.trust <= trust.ceiling + 1e-12);
  const given = await client.trust("lead-live");
  assert.deepEqual(given.vouched.map((vouch) => vouch.vouch_id), [agent.vouch_id]);

  const nodes = [];
  const edges = [];
  for await (const page of client.trustGraph({ limit: 1 })) {
    nodes.push(...page.nodes.map((node) => node.agent_id));
    edges.push(...page.edges.map((edge) => edge.vouch_id));
  }
  assert.ok(nodes.includes("lead-live") && nodes.includes("sub-live"), nodes.join());
  assert.deepEqual([...new Set(edges)].sort(), [human.vouch_id, agent.vouch_id].sort());

  // Withdrawn, then withdrawn again.
  const withdrawn = await client.withdrawVouch(human.vouch_id);
  assert.ok(withdrawn.withdrawn_at);
  assert.deepEqual(await refusal(client.withdrawVouch(human.vouch_id)), [409, "vouch_withdrawn"]);
  const after = await trustAfter("sub-live", withdrawn.withdrawn_at);
  assert.deepEqual(after.vouches.map((vouch) => vouch.vouch_id), [agent.vouch_id]);
  assert.ok(after.trust <= trust.trust, "withdrawing never raises trust");
});

test("the signed statement verifies offline with the wasm build; tampered or expired, it is refused", async () => {
  assert.equal(typeof sdk.verifyTrustStatement, "function", "the wasm build exports verifyTrustStatement");
  const jwks = await client.jwks();
  const mine = await client.as(sub.compact_jwt).trustStatement();
  const read = await client.trustStatement("sub-live");
  for (const statement of [mine, read]) {
    assert.equal(statement.split(".").length, 3);
    const checked = sdk.verifyTrustStatement(statement, jwks);
    assert.equal(checked.valid, true, JSON.stringify(checked.error));
    assert.equal(checked.claims.sub, "agent:sub-live");
    assert.match(checked.claims.org, /^org_/);
    assert.ok(checked.claims.exp - checked.claims.iat <= 3600);
    for (const part of ["trust", "reputation", "graph", "ceiling"]) {
      assert.ok(checked.claims[part] >= 0 && checked.claims[part] <= 1, part);
    }
  }
  const claims = sdk.verifyTrustStatement(read, jwks).claims;

  // Tampered: a higher trust written into the payload, the signature kept.
  const [header, payload, signature] = read.split(".");
  const raised = { ...JSON.parse(Buffer.from(payload, "base64url").toString("utf8")), trust: 1 };
  const forged = `${header}.${Buffer.from(JSON.stringify(raised)).toString("base64url")}.${signature}`;
  const tampered = sdk.verifyTrustStatement(forged, jwks);
  assert.equal(tampered.valid, false);
  assert.equal(tampered.error.code, "invalid_signature");
  assert.equal(tampered.error.stage, "trust");

  // Expired: checked an hour after its end.
  const expired = sdk.verifyTrustStatement(read, jwks, { now: claims.exp + 3600 });
  assert.equal(expired.valid, false);
  assert.equal(expired.error.code, "statement_expired");

  // Another agent's token cannot fetch this agent's statement, not even its delegator's.
  assert.deepEqual(await refusal(client.as(lead.compact_jwt).trustStatement("sub-live")), [403, "not_the_agent"]);
});
