// Against a live `mandate serve` on port 0 with a fresh data folder: the
// client issues, records on both integration paths, delegates, rates and
// reads back; the token verifies offline against the fetched key set; a
// tampered token fails with the right code; a real three-deep chain verifies
// until its root is revoked; the record log's proofs, consistency proofs and
// checkpoints, checked by the SDK and by the independent verifier
// (tests/independent/tlog-verify.mjs); authorize waiting for a reviewer's
// decision (approved, denied, expired, or still pending at the timeout); the
// event stream live, through a relay whose connection the test cuts, with no
// event missed; the reviewer's dashboard calls against a fresh organisation's
// counters. MANDATE_BIN names the server binary (`cargo xtask test` sets
// it); without it these tests fail.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { connect, createServer } from "node:net";
import { createRequire } from "node:module";
import { after, before, test } from "node:test";

import * as tlog from "../../tests/independent/tlog-verify.mjs";
import { startServer } from "./live-server.mjs";

const {
  AgentKey,
  LogMonitor,
  MandateClient,
  MandateError,
  generateAgentKey,
  reputation,
  sha256Ref,
  summarizeWorkflow,
  verifyChain,
  verifyCheckpoint,
  verifyConsistency,
  verifyRecordProof,
  verifyToken,
} = createRequire(import.meta.url)("..");

let live;
let baseUrl;
let apiKey;
let client;

before(async () => {
  live = await startServer();
  ({ baseUrl, apiKey } = live);
  assert.match(apiKey, /^mk_/);
  client = new MandateClient({ baseUrl, apiKey });
});

after(() => {
  live?.stop();
});

/** Rejects with a MandateError of this status and code. */
async function refused(promise, status, code) {
  const error = await promise.then(
    (value) => assert.fail(`expected ${code}, got ${JSON.stringify(value)}`),
    (e) => e,
  );
  assert.ok(error instanceof MandateError, String(error));
  assert.deepEqual([error.status, error.code], [status, code], error.message);
  return error;
}

/** The token with one character of its signature changed. */
/** A jti's hash, as every list and page names a token (base64url SHA-256). */
const jthOf = (jti) => createHash("sha256").update(jti).digest("base64url");

function tamper(token) {
  const at = token.lastIndexOf(".") + 10;
  return token.slice(0, at) + (token[at] === "A" ? "B" : "A") + token.slice(at + 1);
}

test("a whole workflow through the client, judged offline by the wasm build", async () => {
  const root = await client.issueL1({
    developer_email: "dev@example.com",
    agent_id: "planner",
    resources: ["crm:*", "mail:inbox"],
    actions: ["read", "write", "delegate"],
    constraints: { max_spend_usd: 10, max_actions: 50 },
  });
  assert.match(root.jti, /^vat_root_/);
  const provenance = root.provenance_ref;

  // The token verifies offline against the published keys, exactly as issued.
  const jwks = await client.jwks();
  const verified = verifyToken(root.compact_jwt, jwks);
  assert.equal(verified.valid, true, JSON.stringify(verified.error));
  assert.deepEqual(verified.claims, root.claims);
  const tampered = verifyToken(tamper(root.compact_jwt), jwks);
  assert.deepEqual([tampered.valid, tampered.error.code], [false, "invalid_signature"]);

  // The simple path, with vat_jti and with the token as Bearer.
  const recorded = await client.recordAction({
    vat_jti: root.jti,
    action: "read",
    resource: "crm:contacts",
    result: "success",
    result_hash: sha256Ref("three contacts"),
    spend_usd: 1.5,
  });
  assert.equal(recorded.recorded, true);
  assert.equal(recorded.provenance_ref, provenance);
  const byBearer = await client.recordAction(
    { action: "write", resource: "mail:inbox", result: "error" },
    { token: root.compact_jwt },
  );
  assert.equal(byBearer.recorded, true);
  const outOfScope = await refused(
    client.recordAction({ vat_jti: root.jti, action: "pay", resource: "crm:contacts", result: "success" }),
    403,
    "action_not_permitted",
  );
  assert.match(outOfScope.problem.aar_id, /^aar_/);

  // The full-control path: authorize, act, complete; a refusal is an answer.
  const authorized = await client.authorize({ vat_jti: root.jti, action: "write", resource: "mail:inbox", spend_usd: 2 });
  assert.equal(authorized.authorized, true);
  const completed = await client.complete(authorized.aar_id, { result: "success", spend_usd: 1.25 });
  assert.deepEqual([completed.status, completed.result], ["completed", "success"]);
  await refused(client.complete(authorized.aar_id, { result: "success" }), 409, "already_completed");
  const denied = await client.authorize({ vat_jti: root.jti, action: "write", resource: "files:x" });
  assert.deepEqual([denied.authorized, denied.reason], [false, "resource_not_permitted"]);

  // A three-deep chain, each link narrower; widening is refused with its reasons.
  // Delegating needs the parent token itself: its jti proves nothing.
  const childRequest = {
    agent_id: "researcher",
    resources: ["crm:contacts"],
    actions: ["read", "delegate"],
    constraints: { max_spend_usd: 5, max_actions: 20 },
  };
  await refused(client.delegate({ vat_jti: root.jti, ...childRequest }), 401, "token_required");
  const child = await client.delegate(childRequest, { token: root.compact_jwt });
  const grandchild = await client.delegate(
    { agent_id: "summariser", resources: ["crm:contacts"], actions: ["read"], constraints: { max_spend_usd: 1, max_actions: 5 } },
    { token: child.compact_jwt },
  );
  assert.deepEqual([child.delegation_depth, grandchild.delegation_depth], [1, 2]);
  assert.equal(grandchild.provenance_ref, provenance);
  const widening = await refused(
    client.delegate(
      { agent_id: "greedy", resources: ["crm:*"], actions: ["read"], constraints: { max_spend_usd: 5, max_actions: 20 } },
      { token: child.compact_jwt },
    ),
    403,
    "scope_widening",
  );
  assert.ok(!child.compact_jwt.includes(root.jti), "a child never carries its parent's jti");
  assert.deepEqual(widening.problem.violations.map((v) => v.code), ["resource_not_covered"]);
  await client.recordAction({ vat_jti: grandchild.jti, action: "read", resource: "crm:contacts", result: "success" });

  const chain = [root.compact_jwt, child.compact_jwt, grandchild.compact_jwt];
  const verifiedChain = verifyChain(chain, jwks);
  assert.equal(verifiedChain.valid, true, JSON.stringify(verifiedChain.error));
  assert.deepEqual(verifiedChain.tokens.map((t) => t.claims.svc_depth), [0, 1, 2]);
  const verifier = await client.verifier({ cacheSize: 16 });
  assert.equal(verifier.verify(grandchild.compact_jwt).valid, true);

  // A human rates once.
  const rated = await client.feedback(recorded.aar_id, { rating: "approved", note: "as asked" });
  assert.equal(rated.rating, "approved");
  await refused(client.feedback(recorded.aar_id, { rating: "rejected" }), 409, "already_rated");
  await client.feedback(completed.aar_id, { rating: "flagged" });

  // The server's numbers are the wasm build's numbers.
  const score = await client.reputation("planner");
  assert.equal(score.agent_id, "agent:planner");
  assert.equal(score.has_human_feedback, true);
  const { counts, agent_id: _id, ...numbers } = score;
  assert.deepEqual(numbers, reputation(counts));
  const records = [];
  for await (const record of client.records({ provenance_ref: provenance, limit: 2 })) records.push(record);
  const summary = await client.provenance(provenance);
  assert.equal(records.length, summary.total_records);
  assert.deepEqual(summarizeWorkflow(records), summary);
  assert.deepEqual(summarizeWorkflow(records, provenance), summary);

  const graph = await client.graph(provenance);
  // Every answer but the issue and delegate responses names tokens by jti hash.
  const jth = (jti) => createHash("sha256").update(jti).digest("base64url");
  const tokenNodes = graph.nodes.filter((n) => n.kind === "token").map((n) => n.id).sort();
  assert.deepEqual(tokenNodes, [root.jti, child.jti, grandchild.jti].map(jth).sort());
  assert.ok(graph.edges.some((e) => e.kind === "delegated" && e.from === jth(child.jti) && e.to === jth(grandchild.jti)));
  assert.ok(!JSON.stringify(graph).includes("vat_"), "a graph shows no jti");
  const workflows = [];
  for await (const workflow of client.workflows({ limit: 1 })) workflows.push(workflow.provenance_ref);
  assert.ok(workflows.includes(provenance));
  const status = await client.token(jth(root.jti));
  assert.equal(status.status, "active");
  assert.deepEqual(status.descendants.map((d) => d.jth).sort(), [child.jti, grandchild.jti].map(jth).sort());
  assert.equal((await client.record(recorded.aar_id)).rating, "approved");

  // Revoking the root ends the whole chain, offline and on the server.
  const revocation = await client.revoke({ jti: root.jti, reason: "workflow done" });
  assert.deepEqual([...revocation.revoked].sort(), [root.jti, child.jti, grandchild.jti].map(jth).sort());
  const afterRevoke = verifyChain(chain, jwks, { revoked: revocation.revoked });
  assert.deepEqual(
    [afterRevoke.valid, afterRevoke.error.code, afterRevoke.error.index],
    [false, "revoked", 0],
  );
  verifier.revoke(root.jti);
  assert.equal(verifier.verify(grandchild.compact_jwt).error.code, "revoked");
  await refused(
    client.recordAction({ vat_jti: grandchild.jti, action: "read", resource: "crm:contacts", result: "success" }),
    403,
    "token_inactive",
  );
  assert.equal((await client.token(grandchild.jti)).status, "revoked");
});

test("a bound token: the client signs a proof per call, the server and the wasm verifier check it", async () => {
  const key = generateAgentKey();
  const token = await client.issueL1({
    developer_email: "dev@example.com",
    agent_id: "courier",
    resources: ["mail:*"],
    actions: ["send", "delegate"],
    holder_key: key.publicJwk,
  });
  assert.equal(token.token_type, "DPoP");
  assert.equal(token.claims.cnf.jkt, key.jkt);
  const act = { action: "send", resource: "mail:outbox", result: "success" };
  const sent = await client.recordAction(act, { token: token.compact_jwt, key });
  assert.equal(sent.recorded, true);
  // Twice more: a fresh proof each time.
  await client.recordAction(act, { token: token.compact_jwt, key });
  // The token without the key: refused before it leaves, and at the server.
  await refused(client.recordAction(act, { token: token.compact_jwt }), 0, "dpop_key_missing");
  await refused(client.recordAction({ vat_jti: token.jti, ...act }), 401, "dpop_required");
  // A sub-agent with its own key.
  const subKey = generateAgentKey();
  const sub = await client.delegate(
    { agent_id: "courier-helper", resources: ["mail:outbox"], actions: ["send"], holder_key: subKey.publicJwk },
    { token: token.compact_jwt, key },
  );
  assert.equal(sub.claims.cnf.jkt, subKey.jkt);
  await client.recordAction(act, { token: sub.compact_jwt, key: subKey });
  await refused(client.recordAction(act, { token: sub.compact_jwt, key }), 0, "dpop_key_missing");
  // The edge checks the same proof with the same rules, once.
  const verifier = await client.verifier();
  const url = "https://tools.example/mcp";
  const made = subKey.proof({ method: "POST", url, accessToken: sub.compact_jwt });
  assert.equal(made.ok, true);
  assert.equal(verifier.verify(sub.compact_jwt).error.code, "dpop_required");
  const first = verifier.verifyRequest(sub.compact_jwt, { method: "POST", url, proof: made.proof });
  assert.equal(first.valid, true, JSON.stringify(first.error));
  const replay = verifier.verifyRequest(sub.compact_jwt, { method: "POST", url, proof: made.proof });
  assert.equal(replay.error.code, "dpop_replayed");
  // A stored key signs for its tokens after a restart of the agent.
  const restored = AgentKey.fromJwk(JSON.stringify(subKey.exportJwk()));
  await client.recordAction(act, { token: sub.compact_jwt, key: restored });
});

test("an unknown record and a missing key answer as problems", async () => {
  const missing = await client.record("aar_01mcc56a20ypjs2bgtacdn684n").catch((e) => e);
  assert.ok(missing instanceof MandateError);
  assert.deepEqual([missing.status, missing.code], [404, "record_not_found"]);
  const anonymous = new MandateClient({ baseUrl });
  await refused(anonymous.reputation("planner"), 401, "unauthorized");
});

test("a retried write with its Idempotency-Key acts once", async () => {
  const root = await client.issueL1(
    { developer_email: "dev@example.com", agent_id: "retrier", resources: ["crm:*"], actions: ["read"] },
    { idempotencyKey: "live-issue-1" },
  );
  const again = await client.issueL1(
    { developer_email: "dev@example.com", agent_id: "retrier", resources: ["crm:*"], actions: ["read"] },
    { idempotencyKey: "live-issue-1" },
  );
  assert.equal(again.jti, root.jti);
  const action = { vat_jti: root.jti, action: "read", resource: "crm:a", result: "success" };
  const first = await client.recordAction(action, { idempotencyKey: "live-act-1" });
  const retry = await client.recordAction(action, { idempotencyKey: "live-act-1" });
  assert.equal(retry.aar_id, first.aar_id);
  assert.equal((await client.provenance(root.provenance_ref)).total_records, 1);
  await refused(
    client.recordAction({ ...action, result: "error" }, { idempotencyKey: "live-act-1" }),
    422,
    "idempotency_key_reused",
  );
});

test("the record log: a record's proof and the log's growth, checked by the SDK and by the independent verifier", async () => {
  const vkeys = await client.logKey();
  const keys = tlog.parseVkeys(vkeys);
  assert.ok(keys.length >= 1, "the log publishes a key");
  const token = await client.issueL1({
    developer_email: "dev@example.com",
    agent_id: "logged",
    resources: ["crm:*"],
    actions: ["write"],
  });

  // The checkpoint before the record's writes, and a monitor that trusts it.
  const oldNote = await client.logCheckpoint();
  const origin = oldNote.split("\n")[0];
  assert.equal(keys[0].name, origin, "the log's key is named after its origin");
  const monitor = new LogMonitor({ client, vkeys, origin });
  const first = await monitor.check();
  assert.equal(first.status, "first");
  assert.equal(monitor.trusted, oldNote);

  // A record with three events: created (authorize), completed, rated.
  const sizeBefore = first.checkpoint.size;
  const authorized = await client.authorize({ vat_jti: token.jti, action: "write", resource: "crm:notes", spend_usd: 1 });
  await client.complete(authorized.aar_id, { result: "success", spend_usd: 0.5 });
  await client.feedback(authorized.aar_id, { rating: "approved" });

  const proof = await client.recordProof(authorized.aar_id);
  assert.equal(proof.aar_id, authorized.aar_id);
  assert.equal(proof.origin, origin);
  assert.deepEqual(
    proof.events.map((event) => [event.kind, event.index]),
    [
      ["record.created", sizeBefore],
      ["record.completed", sizeBefore + 1],
      ["record.rated", sizeBefore + 2],
    ],
    "each write appended its event at the end of the log",
  );

  // The SDK (core's rules in wasm).
  const checked = verifyRecordProof(proof, vkeys, { origin });
  assert.equal(checked.valid, true, JSON.stringify(checked.error));
  assert.deepEqual(checked.checkpoint, verifyCheckpoint(proof.checkpoint, vkeys, origin).checkpoint);
  assert.equal(checked.checkpoint.size, sizeBefore + 3);
  assert.deepEqual(
    checked.events.map(({ index, entry }) => [entry.kind, index, entry.aar_id]),
    proof.events.map((event) => [event.kind, event.index, authorized.aar_id]),
  );
  assert.equal(checked.events[1].entry.result, "success");
  assert.equal(checked.events[2].entry.rating, "approved");

  // The independent verifier (node:crypto and the standards' texts).
  const checkpoint = tlog.openCheckpoint(proof.checkpoint, keys, origin);
  assert.equal(checkpoint.size, BigInt(checked.checkpoint.size));
  assert.equal(checkpoint.root.toString("base64"), checked.checkpoint.root);
  for (const event of proof.events) {
    const leaf = Buffer.from(event.leaf, "base64");
    const verified = tlog.verifyTlogProof(event.proof, leaf, vkeys, origin);
    assert.equal(verified.index, BigInt(event.index));
    assert.ok(verified.checkpoint.root.equals(checkpoint.root), "every event leads to the answer's checkpoint");
    const entry = JSON.parse(leaf.toString("utf8"));
    assert.deepEqual([entry.kind, entry.aar_id], [event.kind, authorized.aar_id]);
  }
  // Both refuse the same altered leaf with the same code.
  const altered = Buffer.from(proof.events[0].leaf, "base64");
  altered[20] ^= 0x01;
  const tampered = { ...proof, events: [{ ...proof.events[0], leaf: altered.toString("base64") }, ...proof.events.slice(1)] };
  const refused = verifyRecordProof(tampered, vkeys, { origin });
  assert.deepEqual([refused.valid, refused.error.code, refused.error.index], [false, "log_root_mismatch", 0]);
  assert.throws(() => tlog.verifyTlogProof(proof.events[0].proof, altered, vkeys, origin), { code: "log_root_mismatch" });

  // More writes, then the proof that the newer tree extends the older one.
  await client.recordAction({ vat_jti: token.jti, action: "write", resource: "crm:contacts", result: "success" });
  const newNote = await client.logCheckpoint();
  const oldHead = verifyCheckpoint(oldNote, vkeys, origin).checkpoint;
  const newHead = verifyCheckpoint(newNote, vkeys, origin).checkpoint;
  assert.equal(newHead.size, oldHead.size + 4);
  const consistency = await client.logConsistency(oldHead.size, newHead.size);
  assert.deepEqual([consistency.old, consistency.new], [oldHead.size, newHead.size]);
  assert.ok(consistency.proof.length > 0);
  const claim = { old_size: oldHead.size, old_root: oldHead.root, new_size: newHead.size, new_root: newHead.root };
  const consistent = verifyConsistency({ ...claim, proof: consistency.proof });
  assert.equal(consistent.valid, true, JSON.stringify(consistent.error));
  const hashes = consistency.proof.map(tlog.decodeBase64);
  const [oldTree, newTree] = [tlog.openCheckpoint(oldNote, keys, origin), tlog.openCheckpoint(newNote, keys, origin)];
  tlog.verifyConsistency(oldTree.size, newTree.size, oldTree.root, newTree.root, hashes);
  // A changed hash fails both.
  const bent = Buffer.from(hashes[0]);
  bent[0] ^= 0x01;
  const bentProof = [bent.toString("base64"), ...consistency.proof.slice(1)];
  assert.equal(verifyConsistency({ ...claim, proof: bentProof }).error.code, "log_root_mismatch");
  assert.throws(
    () => tlog.verifyConsistency(oldTree.size, newTree.size, oldTree.root, newTree.root, bentProof.map(tlog.decodeBase64)),
    { code: "log_root_mismatch" },
  );

  // The monitor: the log grew, consistently; then nothing changed.
  const grew = await monitor.check();
  assert.equal(grew.status, "grew", JSON.stringify(grew.error));
  assert.deepEqual([grew.old.size, grew.new.size], [oldHead.size, newHead.size]);
  assert.equal(grew.new.root, newHead.root);
  assert.equal(monitor.trusted, newNote);
  assert.equal((await monitor.check()).status, "unchanged");
  // Resumed from the old checkpoint, a fresh monitor reaches the same verdict.
  const resumed = await new LogMonitor({ baseUrl, vkeys, origin, trusted: oldNote }).check();
  assert.deepEqual([resumed.status, resumed.new.size], ["grew", newHead.size]);
  // Checkpoints of another log are not trusted.
  const elsewhere = await new LogMonitor({ client, vkeys, origin: "other.example/log" }).check();
  assert.deepEqual([elsewhere.status, elsewhere.error.code], ["invalid", "checkpoint_origin_mismatch"]);
});

/** Resolves after `ms`. */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `check()` is true, looking every 20 ms; fails after `seconds`. */
async function until(what, check, seconds = 20) {
  const deadline = Date.now() + seconds * 1000;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `waited ${seconds} s for ${what}`);
    await sleep(20);
  }
}

/** The pending approval of `resource`, once `reviewer`'s list shows it (while the agent waits). */
async function pendingApproval(reviewer, resource) {
  let found;
  await until(`a pending approval of ${resource}`, async () => {
    const page = await reviewer.approvalsPage({ status: "pending" });
    found = page.approvals.find((approval) => approval.resource === resource);
    return found !== undefined;
  });
  return found;
}

test("authorize waits for a reviewer's decision: approved, denied, expired, or still pending at the timeout", async () => {
  const key = await client.createKey({ role: "reviewer", email: "reviewer@example.com" });
  const reviewer = new MandateClient({ baseUrl, apiKey: key.api_key });
  const root = await client.issueL1({
    developer_email: "dev@example.com",
    agent_id: "treasurer",
    resources: ["bank:*"],
    actions: ["pay", "delegate"],
    constraints: { max_spend_usd: 500, require_approval: { actions: ["pay"] } },
  });
  // The sub-agent inherits the requirement; it holds its token and no API key.
  const payer = await client.delegate(
    { agent_id: "payer", resources: ["bank:*"], actions: ["pay"], constraints: { max_spend_usd: 200 } },
    { token: root.compact_jwt },
  );
  const agent = new MandateClient({ baseUrl });
  const auth = { token: payer.compact_jwt };
  await refused(agent.recordAction({ action: "pay", resource: "bank:rent", result: "success" }, auth), 403, "approval_required");

  // Approved: the wait resolves authorized, and the agent completes as usual.
  const asking = agent.authorize(
    { action: "pay", resource: "bank:rent", spend_usd: 120 },
    { ...auth, waitForApproval: { timeoutSeconds: 60 } },
  );
  const rent = await pendingApproval(reviewer, "bank:rent");
  assert.deepEqual(
    [rent.status, rent.record_status, rent.agent_id, rent.action, rent.spend_usd, rent.delegation_depth, rent.assurance_level],
    ["pending", "awaiting_approval", "agent:payer", "pay", 120, 1, "L1"],
  );
  assert.deepEqual(rent.chain, [
    { agent_id: "agent:treasurer", delegation_depth: 0 },
    { agent_id: "agent:payer", delegation_depth: 1 },
  ]);
  const waitingRecord = await client.record(rent.aar_id);
  assert.deepEqual([waitingRecord.status, waitingRecord.human_ref], ["awaiting_approval", rent.human_ref]);
  const approved = await reviewer.decide(rent.approval_id, { decision: "approve", note: "rent is due" });
  assert.deepEqual([approved.status, approved.decided_by, approved.note], ["approved", key.key_id, "rent is due"]);
  const yes = await asking;
  assert.deepEqual(
    [yes.authorized, yes.aar_id, yes.reason, yes.approval],
    [true, rent.aar_id, undefined, { approval_id: rent.approval_id, status: "approved", expires_at: rent.expires_at }],
  );
  assert.equal((await client.record(rent.aar_id)).status, "pending");
  const done = await agent.complete(rent.aar_id, { result: "success", spend_usd: 118.5 }, auth);
  assert.deepEqual([done.status, done.result, done.spend_usd], ["completed", "success", 118.5]);
  await refused(reviewer.decide(rent.approval_id, { decision: "deny" }), 409, "not_awaiting_approval");

  // Denied: the wait resolves refused, and the record is denied.
  const askingAgain = agent.authorize({ action: "pay", resource: "bank:yacht", spend_usd: 50 }, { ...auth, waitForApproval: { timeoutSeconds: 60 } });
  const yacht = await pendingApproval(reviewer, "bank:yacht");
  await reviewer.decide(yacht.approval_id, { decision: "deny", note: "no" });
  const no = await askingAgain;
  assert.deepEqual([no.authorized, no.reason, no.approval.status], [false, "approval_denied", "denied"]);
  const deniedRecord = await client.record(yacht.aar_id);
  assert.deepEqual([deniedRecord.status, deniedRecord.deny_reason], ["denied", "approval_denied"]);

  // Nobody decides within the timeout: still pending, as without waiting.
  const started = Date.now();
  const later = await agent.authorize({ action: "pay", resource: "bank:later" }, { ...auth, waitForApproval: { timeoutSeconds: 1 } });
  assert.ok(Date.now() - started >= 1000);
  assert.deepEqual([later.authorized, later.reason, later.approval.status], [false, undefined, "pending"]);
  const atOnce = await agent.authorize({ action: "pay", resource: "bank:later" }, auth);
  assert.deepEqual([atOnce.authorized, atOnce.approval.status], [false, "pending"]);
  const read = await agent.approval(later.approval.approval_id, { ...auth, wait: 0 });
  assert.deepEqual([read.status, read.aar_id, read.record_status], ["pending", later.aar_id, "awaiting_approval"]);

  // Expired: an approval never outlives its token (here 2 s); waited for on the API key, the record named by vat_jti.
  const brief = await client.issueL1({
    developer_email: "dev@example.com",
    agent_id: "brief",
    resources: ["bank:*"],
    actions: ["pay"],
    ttl_seconds: 2,
    constraints: { require_approval: { resources: ["bank:*"] } },
  });
  const lapsed = await client.authorize({ vat_jti: brief.jti, action: "pay", resource: "bank:lapse" }, { waitForApproval: { timeoutSeconds: 30 } });
  assert.deepEqual([lapsed.authorized, lapsed.reason, lapsed.approval.status], [false, "approval_expired", "expired"]);
  assert.equal((await client.record(lapsed.aar_id)).deny_reason, "approval_expired");
});

/**
 * A TCP relay to the server whose connections the test can cut (`drop`),
 * and which can refuse new ones for a while (`refusing`).
 */
async function relay(target) {
  const { hostname, port } = new URL(target);
  const sockets = new Set();
  let refusing = false;
  const server = createServer((downstream) => {
    if (refusing) {
      downstream.destroy();
      return;
    }
    const upstream = connect(Number(port), hostname);
    for (const socket of [downstream, upstream]) {
      sockets.add(socket);
      socket.on("error", () => undefined);
      socket.on("close", () => {
        sockets.delete(socket);
        downstream.destroy();
        upstream.destroy();
      });
    }
    downstream.pipe(upstream);
    upstream.pipe(downstream);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    set refusing(value) {
      refusing = value;
    },
    drop() {
      for (const socket of sockets) socket.destroy();
    },
    close() {
      this.drop();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Iterates `client.events(options)` in the background: what came, how often it connected, and when it ended. */
function watch(eventClient, options = {}) {
  const controller = new AbortController();
  const watcher = { events: [], opened: 0, stop: () => controller.abort() };
  const iterable = eventClient.events({ ...options, signal: controller.signal, onOpen: () => (watcher.opened += 1) });
  watcher.done = (async () => {
    for await (const event of iterable) watcher.events.push(event);
  })();
  return watcher;
}

test("events: live from the stream; a cut connection connects again with Last-Event-ID; none missed", async (t) => {
  const cut = await relay(baseUrl);
  const watchers = [];
  // A failed assertion must fail the run, not leave streams that keep it open.
  t.after(() => {
    watchers.forEach((w) => w.stop());
    cut.drop();
  });
  const token = await client.issueL1({
    developer_email: "dev@example.com",
    agent_id: "streamer",
    resources: ["bank:*"],
    actions: ["pay"],
    constraints: { require_approval: { actions: ["pay"] } },
  });
  const ask = (resource) => client.authorize({ vat_jti: token.jti, action: "pay", resource });
  const refuse = (resource) => client.authorize({ vat_jti: token.jti, action: "read", resource });
  const ids = (watcher) => watcher.events.map((event) => event.id);

  // One stream straight to the server, for reference; one through the relay.
  const direct = watch(client);
  const relayed = watch(new MandateClient({ baseUrl: cut.url, apiKey }));
  watchers.push(direct, relayed);
  await until("both streams to connect", () => direct.opened === 1 && relayed.opened === 1);

  const first = await ask("bank:one");
  const outOfScope = await refuse("bank:two");
  await until("the first two events", () => relayed.events.length === 2);
  const [requested, denied] = relayed.events;
  assert.equal(requested.type, "approval.requested");
  assert.match(requested.id, /^msg_/);
  assert.ok(!Number.isNaN(Date.parse(requested.timestamp)));
  // Asked by bare vat_jti, the pending record's aar_id completes it: the
  // event leaves it out (only the agent that asked is told it).
  assert.deepEqual(
    [requested.data.approval_id, requested.data.status, requested.data.resource],
    [first.approval.approval_id, "pending", "bank:one"],
  );
  assert.equal("aar_id" in requested.data, false);
  assert.ok(first.aar_id);
  assert.equal(denied.type, "record.denied");
  assert.deepEqual([denied.data.aar_id, denied.data.status, denied.data.deny_reason], [outOfScope.aar_id, "denied", "action_not_permitted"]);

  // Cut the relayed stream and keep it out while three more events happen.
  cut.refusing = true;
  cut.drop();
  const second = await ask("bank:three");
  await client.decide(first.approval.approval_id, { decision: "approve" });
  await refuse("bank:four");
  await until("the reference stream to see five events", () => direct.events.length === 5);
  cut.refusing = false;
  await until("the relayed stream to catch up", () => relayed.events.length === 5);
  assert.equal(relayed.opened, 2, "connected again once the relay let it");
  assert.deepEqual(ids(relayed), ids(direct), "the same events, in the same order, none missed or repeated");
  assert.deepEqual(
    relayed.events.slice(2).map((event) => [event.type, event.data.aar_id]),
    [
      ["approval.requested", undefined],
      ["approval.decided", undefined],
      ["record.denied", relayed.events[4].data.aar_id],
    ],
  );
  assert.equal(relayed.events[3].data.status, "approved");

  // The caller stops, and later resumes after the last event it saw.
  relayed.stop();
  await relayed.done;
  const last = relayed.events.at(-1).id;
  await client.decide(second.approval.approval_id, { decision: "deny", note: "not now" });
  await until("the reference stream to see the sixth event", () => direct.events.length === 6);
  const resumed = watch(client, { lastEventId: last });
  watchers.push(resumed);
  await until("the resumed stream to catch up", () => resumed.events.length === 1);
  assert.deepEqual(ids(resumed), ids(direct).slice(5));
  assert.deepEqual([resumed.events[0].type, resumed.events[0].data.note], ["approval.decided", "not now"]);

  // An event the server no longer knows cannot be resumed after.
  const unknown = watch(client, { lastEventId: "msg_01mcc56a20ypjs2bgtacdn684n" });
  await assert.rejects(unknown.done, (error) => error instanceof MandateError && error.code === "invalid_last_event_id");

  direct.stop();
  resumed.stop();
  await Promise.all([direct.done, resumed.done]);
  await cut.close();
});

test("the reviewer's dashboard: inbox counts, unrated records, a workflow rated at once, agents, history, overview, tokens", async () => {
  // An organisation of its own, so that its counters hold this test's records only.
  const created = await client.createOrg({ name: "dashboard-live", owner_email: "owner@example.com" });
  const owner = new MandateClient({ baseUrl, apiKey: created.owner_key.api_key });
  const root = await owner.issueL1({
    developer_email: "alice@example.com",
    agent_id: "clerk",
    resources: ["crm:*"],
    actions: ["read", "write"],
    constraints: { max_actions: 10 },
  });
  const act = (action, resource, result) => owner.recordAction({ vat_jti: root.jti, action, resource, result });
  await act("read", "crm:a", "success");
  await act("read", "crm:b", "success");
  const failed = await act("write", "crm:c", "error");
  await refused(act("pay", "crm:d", "success"), 403, "action_not_permitted");

  assert.deepEqual(await owner.inboxCounts(), { approvals_pending: 0, records_unrated: 3 });
  const unrated = await owner.recordsPage({ rated: false });
  assert.equal(unrated.records.length, 3);
  assert.ok(unrated.records.every((record) => record.status === "completed" && record.rating === undefined));

  // Every unrated success of the workflow at once; a second call finds none left.
  const rated = await owner.rateWorkflow({ provenance_ref: root.provenance_ref, result: "success", rating: "approved" });
  assert.equal(rated.rated, 2);
  assert.equal((await owner.rateWorkflow({ provenance_ref: root.provenance_ref, result: "success", rating: "approved" })).rated, 0);
  assert.deepEqual(
    (await owner.recordsPage({ rated: false })).records.map((record) => record.aar_id),
    [failed.aar_id],
  );
  assert.deepEqual(await owner.inboxCounts(), { approvals_pending: 0, records_unrated: 1 });
  await refused(
    owner.rateWorkflow({ provenance_ref: `prov_${"0".repeat(26)}`, result: "success", rating: "approved" }),
    404,
    "workflow_not_found",
  );

  // The agent over today's and yesterday's days.
  const agents = [];
  for await (const agent of owner.agents({ window: "24h" })) agents.push(agent);
  assert.equal(agents.length, 1);
  const [clerk] = agents;
  assert.equal(clerk.agent_id, "agent:clerk");
  assert.deepEqual(
    [clerk.window.records, clerk.window.successes, clerk.window.errors, clerk.window.denied],
    [4, 2, 1, 1],
  );
  assert.equal(clerk.window.denial_rate, 1 / 4);
  assert.equal(clerk.window.error_rate, 1 / 3);
  assert.equal(clerk.recent.length, 14);
  assert.deepEqual(clerk.recent.at(-1), { day: new Date().toISOString().slice(0, 10), successes: 2, errors: 1, denied: 1 });
  assert.equal(typeof clerk.last_activity, "string");
  const reputation = await owner.reputation("clerk");
  assert.equal(clerk.combined_reputation, reputation.combined_reputation);

  const history = await owner.agentHistory("clerk", { days: 2 });
  assert.equal(history.agent_id, "agent:clerk");
  assert.equal(history.days.length, 2);
  const today = history.days.at(-1);
  assert.deepEqual(
    [today.records, today.successes, today.errors, today.denied, today.approved],
    [4, 2, 1, 1, 2],
  );
  assert.equal(today.combined_reputation, reputation.combined_reputation);
  await refused(owner.agentHistory("nobody"), 404, "agent_not_found");

  const overview = await owner.overview();
  assert.deepEqual([overview.window, overview.bucket, overview.series.length], ["24h", "hour", 24]);
  assert.deepEqual(
    [overview.totals.records, overview.totals.denied, overview.totals.errors, overview.totals.ratings],
    [4, 1, 1, 2],
  );
  // The budget is named by the token's jti hash, never its jti.
  assert.equal(overview.budgets.length, 1);
  const [budget] = overview.budgets;
  assert.equal(budget.budget, "max_actions");
  assert.equal(budget.limit, 10);
  assert.equal(budget.jth, jthOf(root.jti));
  assert.equal(budget.provenance_ref, root.provenance_ref);
  assert.equal((await owner.overview({ window: "30d" })).series.length, 30);
  await refused(owner.overview({ window: "1y" }), 400, "invalid_query");

  // The token, its human by the e-mail issued for, and the workflows of that human.
  const tokens = [];
  for await (const token of owner.tokens()) tokens.push(token);
  assert.equal(tokens.length, 1);
  const [token] = tokens;
  assert.deepEqual(
    [token.jth, token.jti, token.agent_id, token.status, token.assurance_level, token.human_label],
    [jthOf(root.jti), undefined, "clerk", "active", "L1", "alice@example.com"],
  );
  const workflows = await owner.workflowsPage({ human_ref: token.human_ref });
  assert.deepEqual(
    workflows.workflows.map((workflow) => [workflow.provenance_ref, workflow.human_label]),
    [[root.provenance_ref, "alice@example.com"]],
  );
  assert.equal((await owner.tokensPage({ status: "revoked" })).tokens.length, 0);
});
