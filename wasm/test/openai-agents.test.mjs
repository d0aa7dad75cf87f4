// mandate-sdk/openai-agents against a live `mandate serve` (MANDATE_BIN) and
// the real @openai/agents at its pinned version, driven by the SDK's own
// ScriptedModel (no network but 127.0.0.1, no API key, no model): each test
// scripts the model's function calls, runs the agent, and reads the records
// back with the API key. Node 22 or later (the SDK's requirement).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { after, before, test } from "node:test";

import { Agent, RunState, Runner, tool } from "@openai/agents";
import { ScriptedModel, assistantMessage, functionCall } from "@openai/agents/testing";
import { z } from "zod";

import { MandateClient, generateAgentKey } from "../js/index.mjs";
import * as esm from "../js/openai-agents.mjs";
import { startServer } from "./live-server.mjs";

const { MandateAgents, mandateAgents } = esm;

let live;
let client;
const runner = new Runner({ tracingDisabled: true });

before(async () => {
  live = await startServer();
  client = new MandateClient({ baseUrl: live.baseUrl, apiKey: live.apiKey });
});

after(() => {
  live?.stop();
});

/** The `sha256:<hex>` reference of a text, computed without the SDK. */
function sha256(text) {
  return `sha256:${createHash("sha256").update(text, "utf8").digest("hex")}`;
}

let calls = 0;
/** A call id no other test uses (the adapter's Idempotency-Key is made of it). */
function callId(name) {
  calls += 1;
  return `call_${name}_${process.pid}_${calls}`;
}

/** A token for the agent `mailer`: send mail to Ann, pay from bank accounts (with `constraints`). */
function issue(constraints = {}, extra = {}) {
  return client.issueL1({
    developer_email: "dev@example.com",
    agent_id: "mailer",
    resources: ["mail:ann@example.com", "bank:*"],
    actions: ["send", "pay"],
    constraints,
    ...extra,
  });
}

/** A send_email tool under Mandate, counting the times its body runs; `fail` makes it throw. */
function mailTool(mandate, { fail = false } = {}) {
  const counter = { runs: 0 };
  const send = tool(
    mandate.withMandate(
      {
        name: "send_email",
        description: "Send an e-mail",
        parameters: z.object({ to: z.string(), subject: z.string() }),
        execute: async ({ to, subject }) => {
          counter.runs += 1;
          if (fail) {
            throw new Error("smtp unavailable");
          }
          return { sent: true, to, subject };
        },
      },
      { action: "send", resource: (input) => `mail:${input.to}` },
    ),
  );
  return { send, counter };
}

/** An agent whose model first makes `toolCalls`, then answers "done". */
function agentWith(tools, toolCalls) {
  const model = new ScriptedModel([toolCalls, [assistantMessage("done")]]);
  return { agent: new Agent({ name: "mailer", instructions: "Send mail.", model, tools }), model };
}

/** The text the model was given as the output of `id`, from its last request. */
function outputSeen(model, id) {
  const item = model.lastCall.request.input.find((i) => i.type === "function_call_result" && i.callId === id);
  assert.ok(item, `no output for ${id} in the model's input`);
  return typeof item.output === "string" ? item.output : (item.output.text ?? JSON.stringify(item.output));
}

/** Every record of a workflow, read with the API key. */
async function recordsOf(provenanceRef) {
  return (await client.recordsPage({ provenance_ref: provenanceRef })).records;
}

test("the ESM entry lists every name of the CommonJS build", () => {
  const cjs = createRequire(import.meta.url)("../pkg/node/openai-agents.js");
  assert.deepEqual(Object.keys(esm).filter((name) => name !== "default").sort(), Object.keys(cjs).sort());
  assert.equal(esm.default, cjs);
  assert.equal(typeof MandateAgents, "function");
});

test("a permitted call runs once under one record, completed with its output's hash", async () => {
  const token = await issue();
  const ended = [];
  const mandate = mandateAgents({ client, token: token.compact_jwt, onCallEnd: (call) => ended.push(call) });
  const { send, counter } = mailTool(mandate);
  const id = callId("ok");
  const { agent, model } = agentWith([send], [functionCall("send_email", { to: "ann@example.com", subject: "hi" }, { callId: id })]);

  const result = await runner.run(agent, "mail Ann");
  assert.equal(result.finalOutput, "done");
  assert.equal(counter.runs, 1);
  const output = { sent: true, to: "ann@example.com", subject: "hi" };
  assert.deepEqual(JSON.parse(outputSeen(model, id)), output);

  assert.equal(ended.length, 1);
  const [call] = ended;
  assert.deepEqual([call.callId, call.state, call.result], [id, "completed", "success"]);
  const record = await client.record(call.aarId);
  assert.deepEqual(
    [record.status, record.result, record.action, record.resource, record.agent_id],
    ["completed", "success", "send", "mail:ann@example.com", "mailer"],
  );
  assert.equal(record.result_hash, sha256(JSON.stringify(output)));
  assert.equal(record.credential, "token");
  const all = await recordsOf(token.provenance_ref);
  assert.deepEqual(all.map((r) => r.aar_id), [call.aarId]);
});

test("an out-of-scope call is refused: nothing runs, the model reads the reason, the record is denied", async () => {
  const token = await issue();
  const ended = [];
  const mandate = mandateAgents({ client, token: token.compact_jwt, onCallEnd: (call) => ended.push(call) });
  const { send, counter } = mailTool(mandate);
  const id = callId("scope");
  const { agent, model } = agentWith([send], [functionCall("send_email", { to: "eve@elsewhere.net", subject: "x" }, { callId: id })]);

  const result = await runner.run(agent, "mail Eve");
  assert.equal(result.finalOutput, "done");
  assert.equal(counter.runs, 0);
  assert.equal(outputSeen(model, id), "Mandate refused send_email: resource_not_permitted");
  assert.equal(ended.length, 1);
  assert.deepEqual([ended[0].state, ended[0].reason], ["refused", "resource_not_permitted"]);
  const guardrail = result.toolInputGuardrailResults.find((r) => r.guardrail.name === "mandate");
  assert.equal(guardrail.output.behavior.type, "rejectContent");
  const record = await client.record(ended[0].aarId);
  assert.deepEqual([record.status, record.deny_reason, record.resource], ["denied", "resource_not_permitted", "mail:eve@elsewhere.net"]);
  assert.equal((await recordsOf(token.provenance_ref)).length, 1);
});

test("a revoked token is refused: nothing runs, the attempt is recorded as token_revoked", async () => {
  const token = await issue();
  await client.revoke({ jti: token.jti, reason: "test" });
  const ended = [];
  const mandate = mandateAgents({ client, token: token.compact_jwt, onCallEnd: (call) => ended.push(call) });
  const { send, counter } = mailTool(mandate);
  const id = callId("revoked");
  const { agent, model } = agentWith([send], [functionCall("send_email", { to: "ann@example.com", subject: "hi" }, { callId: id })]);

  await runner.run(agent, "mail Ann");
  assert.equal(counter.runs, 0);
  assert.equal(outputSeen(model, id), "Mandate refused send_email: token_revoked");
  assert.deepEqual([ended[0].state, ended[0].reason], ["refused", "token_revoked"]);
  const record = await client.record(ended[0].aarId);
  assert.deepEqual([record.status, record.deny_reason], ["denied", "token_revoked"]);
});

test("a bound token needs its key's proof: without it nothing runs; with it the call is recorded", async () => {
  const key = generateAgentKey();
  const token = await issue({}, { holder_key: key.publicJwk });
  assert.equal(token.token_type, "DPoP");

  // No key given: the client cannot make a proof and nothing is sent.
  const noKey = [];
  const unkeyed = mailTool(mandateAgents({ client, token: token.compact_jwt, onCallEnd: (call) => noKey.push(call) }));
  const first = callId("nokey");
  const run1 = agentWith([unkeyed.send], [functionCall("send_email", { to: "ann@example.com", subject: "a" }, { callId: first })]);
  await runner.run(run1.agent, "mail Ann");
  assert.equal(unkeyed.counter.runs, 0);
  assert.deepEqual([noKey[0].reason, noKey[0].aarId], ["dpop_key_missing", undefined]);
  assert.equal(outputSeen(run1.model, first), "Mandate refused send_email: dpop_key_missing");

  // The key given, but the proof lost on the way: the server refuses.
  const stripping = new MandateClient({
    baseUrl: live.baseUrl,
    fetch: (url, init) => {
      const { dpop, ...headers } = init.headers;
      assert.ok(dpop, "the client made a proof");
      return fetch(url, { ...init, headers });
    },
  });
  const stripped = [];
  const unproven = mailTool(mandateAgents({ client: stripping, token: token.compact_jwt, key, onCallEnd: (call) => stripped.push(call) }));
  const second = callId("noproof");
  const run2 = agentWith([unproven.send], [functionCall("send_email", { to: "ann@example.com", subject: "b" }, { callId: second })]);
  await runner.run(run2.agent, "mail Ann");
  assert.equal(unproven.counter.runs, 0);
  assert.equal(stripped[0].reason, "dpop_required");
  assert.equal((await recordsOf(token.provenance_ref)).length, 0);

  // With the key: each request carries a proof, and the call runs and is completed.
  const done = [];
  const keyed = mailTool(mandateAgents({ client, token: token.compact_jwt, key, onCallEnd: (call) => done.push(call) }));
  const third = callId("proof");
  const run3 = agentWith([keyed.send], [functionCall("send_email", { to: "ann@example.com", subject: "c" }, { callId: third })]);
  await runner.run(run3.agent, "mail Ann");
  assert.equal(keyed.counter.runs, 1);
  const record = await client.record(done[0].aarId);
  assert.deepEqual([record.status, record.result], ["completed", "success"]);
});

/** A pay tool under Mandate, counting its runs. */
function payTool(mandate) {
  const counter = { runs: 0 };
  const pay = tool(
    mandate.withMandate(
      {
        name: "pay",
        description: "Pay an amount from an account",
        parameters: z.object({ account: z.string(), amount: z.number() }),
        execute: async ({ account, amount }) => {
          counter.runs += 1;
          return `paid ${amount} from ${account}`;
        },
      },
      { action: "pay", resource: (input) => `bank:${input.account}`, spendUsd: (input) => input.amount },
    ),
  );
  return { pay, counter };
}

test("an approval in Mandate interrupts the run; approved by a reviewer, the run resumes under the same record", async () => {
  const token = await issue({ require_approval: { actions: ["pay"] } });
  const asked = [];
  const ended = [];
  const mandate = mandateAgents({
    client,
    token: token.compact_jwt,
    onApproval: (approval) => asked.push(approval),
    onCallEnd: (call) => ended.push(call),
  });
  const { pay, counter } = payTool(mandate);
  const id = callId("approval");
  const { agent, model } = agentWith([pay], [functionCall("pay", { account: "ops", amount: 40 }, { callId: id })]);

  const first = await runner.run(agent, "pay 40 from ops");
  assert.equal(counter.runs, 0);
  assert.equal(first.interruptions.length, 1);
  assert.equal(first.interruptions[0].rawItem.callId, id);
  assert.equal(asked.length, 1);
  const [approval] = asked;
  assert.equal(approval.url, client.approvalUrl(approval.approval_id));
  const waiting = await client.record(approval.aar_id);
  assert.equal(waiting.status, "awaiting_approval");

  // Not decided yet: the interruption stays.
  const undecided = await mandate.resolveApprovals(first.state);
  assert.deepEqual([undecided.pending.length, undecided.approved.length], [1, 0]);

  // A reviewer approves in Mandate; the helper applies it to the run's state.
  const decided = await client.decide(approval.approval_id, { decision: "approve", note: "fine" });
  assert.equal(decided.status, "approved");
  const resolution = await mandate.resolveApprovals(first.state, { waitSeconds: 5 });
  assert.deepEqual(resolution.approved.map((call) => call.callId), [id]);
  assert.deepEqual([resolution.rejected.length, resolution.pending.length, resolution.other.length], [0, 0, 0]);

  const resumed = await runner.run(agent, first.state);
  assert.equal(resumed.finalOutput, "done");
  assert.equal(counter.runs, 1);
  assert.equal(outputSeen(model, id), "paid 40 from ops");
  assert.equal(ended.length, 1);
  assert.equal(ended[0].aarId, approval.aar_id);
  const records = await recordsOf(token.provenance_ref);
  assert.equal(records.length, 1);
  const record = await client.record(approval.aar_id);
  assert.deepEqual([record.status, record.result, record.spend_usd], ["completed", "success", 40]);
  assert.equal(record.result_hash, sha256("paid 40 from ops"));
});

test("a run restored in another process resumes an approved call under its first record", async () => {
  const token = await issue({ require_approval: { actions: ["pay"] } });
  const asked = [];
  const earlier = mandateAgents({ client, token: token.compact_jwt, onApproval: (approval) => asked.push(approval) });
  const first = payTool(earlier);
  const id = callId("restored");
  const original = agentWith([first.pay], [functionCall("pay", { account: "ops", amount: 12 }, { callId: id })]);
  const interrupted = await runner.run(original.agent, "pay 12 from ops");
  assert.equal(interrupted.interruptions.length, 1);
  const saved = interrupted.state.toString();
  await client.decide(asked[0].approval_id, { decision: "approve" });

  // A new process: a new adapter (it never saw the call), the tool and agent made again, the state read back.
  const ended = [];
  const later = mandateAgents({ client, token: token.compact_jwt, onCallEnd: (call) => ended.push(call) });
  const second = payTool(later);
  const model = new ScriptedModel([[assistantMessage("done")]]);
  const agent = new Agent({ name: "mailer", instructions: "Send mail.", model, tools: [second.pay] });
  const state = await RunState.fromString(agent, saved);
  const resolution = await later.resolveApprovals(state);
  assert.deepEqual(resolution.approved.map((call) => [call.callId, call.aarId]), [[id, asked[0].aar_id]]);

  const resumed = await runner.run(agent, state);
  assert.equal(resumed.finalOutput, "done");
  assert.deepEqual([first.counter.runs, second.counter.runs], [0, 1]);
  assert.equal(ended[0].aarId, asked[0].aar_id);
  const records = await recordsOf(token.provenance_ref);
  assert.deepEqual(records.map((r) => [r.aar_id, r.status, r.result]), [[asked[0].aar_id, "completed", "success"]]);
});

test("attack: a stored run whose approved call is changed (pay alice 150 → mallory 99,999) runs nothing; the change is asked for anew", async () => {
  const token = await issue({ require_approval: { actions: ["pay"] } });
  const asked = [];
  const mandate = mandateAgents({ client, token: token.compact_jwt, onApproval: (approval) => asked.push(approval) });
  const { pay, counter } = payTool(mandate);
  const id = callId("tampered");
  const { agent } = agentWith([pay], [functionCall("pay", { account: "alice", amount: 150 }, { callId: id })]);
  const interrupted = await runner.run(agent, "pay 150 to alice");
  assert.equal(interrupted.interruptions.length, 1);
  await client.decide(asked[0].approval_id, { decision: "approve" });

  // The stored state is changed before it is resumed: the same call id, another payee and amount.
  const saved = interrupted.state.toString();
  const tampered = saved.replaceAll("alice", "mallory").replaceAll(String.raw`\"amount\":150`, String.raw`\"amount\":99999`);
  assert.notEqual(tampered, saved);
  const state = await RunState.fromString(agent, tampered);
  const resolution = await mandate.resolveApprovals(state);
  assert.deepEqual(resolution.approved, []);
  assert.deepEqual(resolution.pending.map((call) => [call.callId, call.resource, call.spendUsd]), [[id, "bank:mallory", 99999]]);
  // Resumed anyway (the interruption left as it is): still nothing runs.
  await runner.run(agent, state);

  assert.equal(counter.runs, 0, "the changed call ran under the approval of another");
  const byResource = Object.fromEntries((await recordsOf(token.provenance_ref)).map((r) => [r.resource, r]));
  assert.deepEqual(Object.keys(byResource).sort(), ["bank:alice", "bank:mallory"]);
  assert.deepEqual([byResource["bank:mallory"].status, byResource["bank:mallory"].spend_usd], ["awaiting_approval", 99999]);
  assert.notEqual(byResource["bank:alice"].status, "completed");
  // The reviewer was asked about the changed call as it is.
  assert.equal(asked.length, 2);
  assert.equal(asked[1].aar_id, byResource["bank:mallory"].aar_id);
});

test("attack: a restored run whose call's unbound argument changed re-authorizes; the call as approved still runs", async () => {
  const token = await issue({ require_approval: { actions: ["pay"] } });
  const asked = [];
  const transfer = (mandate, counter) =>
    tool(
      mandate.withMandate(
        {
          name: "pay",
          description: "Pay an amount from an account to an IBAN",
          parameters: z.object({ account: z.string(), amount: z.number(), iban: z.string() }),
          execute: async ({ iban }) => {
            counter.to.push(iban);
            return `paid to ${iban}`;
          },
        },
        { action: "pay", resource: (input) => `bank:${input.account}`, spendUsd: (input) => input.amount },
      ),
    );
  const earlier = mandateAgents({ client, token: token.compact_jwt, onApproval: (approval) => asked.push(approval) });
  const id = callId("iban");
  const original = agentWith([transfer(earlier, { to: [] })], [functionCall("pay", { account: "ops", amount: 12, iban: "DE-ALICE" }, { callId: id })]);
  const interrupted = await runner.run(original.agent, "pay 12 to Alice");
  const saved = interrupted.state.toString();
  await client.decide(asked[0].approval_id, { decision: "approve" });

  // Another process resumes a copy whose IBAN (in neither the resource nor the spend) was changed.
  const counter = { to: [] };
  const later = mandateAgents({ client, token: token.compact_jwt, onApproval: (approval) => asked.push(approval) });
  const model = new ScriptedModel([[assistantMessage("done")]]);
  const agent = new Agent({ name: "mailer", instructions: "Pay.", model, tools: [transfer(later, counter)] });
  const changed = await RunState.fromString(agent, saved.replaceAll("DE-ALICE", "XX-MALLORY"));
  const resolution = await later.resolveApprovals(changed);
  assert.deepEqual([resolution.approved.length, resolution.pending.length], [0, 1]);
  assert.notEqual(resolution.pending[0].aarId, asked[0].aar_id);
  assert.deepEqual(counter.to, []);

  // The untouched copy resumes under the approved record.
  const state = await RunState.fromString(agent, saved);
  const approved = await later.resolveApprovals(state);
  assert.deepEqual(approved.approved.map((call) => call.aarId), [asked[0].aar_id]);
  await runner.run(agent, state);
  assert.deepEqual(counter.to, ["DE-ALICE"]);
  const record = await client.record(asked[0].aar_id);
  assert.deepEqual([record.status, record.result], ["completed", "success"]);
});

test("an approval denied in Mandate rejects the call in the run: nothing runs, the record is denied", async () => {
  const token = await issue({ require_approval: { actions: ["pay"] } });
  const asked = [];
  const mandate = mandateAgents({ client, token: token.compact_jwt, onApproval: (approval) => asked.push(approval) });
  const { pay, counter } = payTool(mandate);
  const id = callId("denied");
  const { agent, model } = agentWith([pay], [functionCall("pay", { account: "ops", amount: 900 }, { callId: id })]);

  const first = await runner.run(agent, "pay 900 from ops");
  assert.equal(first.interruptions.length, 1);
  await client.decide(asked[0].approval_id, { decision: "deny", note: "too much" });
  const resolution = await mandate.resolveApprovals(first.state, { waitSeconds: 5 });
  assert.deepEqual(resolution.rejected.map((call) => [call.callId, call.reason]), [[id, "approval_denied"]]);

  const resumed = await runner.run(agent, first.state);
  assert.equal(resumed.finalOutput, "done");
  assert.equal(counter.runs, 0);
  assert.equal(outputSeen(model, id), "Mandate refused pay: approval_denied");
  const record = await client.record(asked[0].aar_id);
  assert.deepEqual([record.status, record.deny_reason], ["denied", "approval_denied"]);
});

test("a tool that throws is recorded as error; the model reads the SDK's error text", async () => {
  const token = await issue();
  const ended = [];
  const mandate = mandateAgents({ client, token: token.compact_jwt, onCallEnd: (call) => ended.push(call) });
  const { send, counter } = mailTool(mandate, { fail: true });
  const id = callId("throws");
  const { agent, model } = agentWith([send], [functionCall("send_email", { to: "ann@example.com", subject: "hi" }, { callId: id })]);

  const result = await runner.run(agent, "mail Ann");
  assert.equal(result.finalOutput, "done");
  assert.equal(counter.runs, 1);
  // The SDK's default errorFunction: the model is not shown the error itself.
  assert.equal(outputSeen(model, id), "An error occurred while running the tool. Please try again.");
  assert.deepEqual([ended[0].state, ended[0].result], ["completed", "error"]);
  const record = await client.record(ended[0].aarId);
  assert.deepEqual([record.status, record.result, record.result_hash], ["completed", "error", undefined]);
  assert.equal((await recordsOf(token.provenance_ref)).length, 1);
});

test("overhead: the wrapped tool against the same tool unwrapped, alternating in one run", async (t) => {
  const n = Number(process.env.MANDATE_OA_CALLS ?? 200);
  const token = await issue();
  // The adapter's requests are timed, to tell the server's share from the adapter's own.
  let inFlight = 0;
  const timed = new MandateClient({
    baseUrl: live.baseUrl,
    fetch: async (url, init) => {
      const start = performance.now();
      const response = await fetch(url, init);
      const text = await response.text();
      inFlight += performance.now() - start;
      return { ok: response.ok, status: response.status, statusText: response.statusText, text: async () => text };
    },
  });
  const mandate = mandateAgents({ client: timed, token: token.compact_jwt });
  const body = async ({ to }) => `queued for ${to}`;
  const options = {
    description: "Send an e-mail",
    parameters: z.object({ to: z.string(), subject: z.string() }),
    execute: body,
  };
  const plain = tool({ ...options, name: "send_plain" });
  const wrapped = tool(mandate.withMandate({ ...options, name: "send_wrapped" }, { action: "send", resource: (i) => `mail:${i.to}` }));
  // Turn i calls the plain tool when i is even, the wrapped one when odd; a turn is the time from one model call to the next.
  const stamps = [];
  const http = [];
  const steps = [];
  for (let i = 0; i < 2 * n; i += 1) {
    const name = i % 2 === 0 ? "send_plain" : "send_wrapped";
    steps.push({
      type: "responder",
      respond: () => {
        stamps.push(performance.now());
        http.push(inFlight);
        return [functionCall(name, { to: "ann@example.com", subject: `m${i}` }, { callId: callId(`bench${i}`) })];
      },
    });
  }
  steps.push({
    type: "responder",
    respond: () => {
      stamps.push(performance.now());
      return [assistantMessage("done")];
    },
  });
  const agent = new Agent({ name: "bench", instructions: "Send mail.", model: new ScriptedModel(steps), tools: [plain, wrapped] });
  const result = await runner.run(agent, "send them all", { maxTurns: 2 * n + 5 });
  assert.equal(result.finalOutput, "done");

  const turns = { plain: [], wrapped: [], http: [] };
  for (let i = 0; i < 2 * n; i += 1) {
    turns[i % 2 === 0 ? "plain" : "wrapped"].push(stamps[i + 1] - stamps[i]);
    if (i % 2 === 1) {
      turns.http.push(http[i + 1] - http[i]);
    }
  }
  const median = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    return (sorted[(sorted.length - 1) >> 1] + sorted[sorted.length >> 1]) / 2;
  };
  const plainMs = median(turns.plain);
  const wrappedMs = median(turns.wrapped);
  const httpMs = median(turns.http);
  // The server's share: the same two requests (authorize, complete, each with an Idempotency-Key) made directly.
  const direct = [];
  for (let i = 0; i < n; i += 1) {
    const start = performance.now();
    const auth = { token: token.compact_jwt, idempotencyKey: callId("direct") };
    const answer = await client.authorize({ action: "send", resource: "mail:ann@example.com" }, auth);
    await client.complete(answer.aar_id, { result: "success" }, { token: token.compact_jwt, idempotencyKey: `complete-${answer.aar_id}` });
    direct.push(performance.now() - start);
  }
  const directMs = median(direct);
  t.diagnostic(
    `${n} calls each: median turn ${plainMs.toFixed(3)} ms unwrapped, ${wrappedMs.toFixed(3)} ms under Mandate: ` +
      `${(wrappedMs - plainMs).toFixed(3)} ms per call, of which the adapter's two requests take ${httpMs.toFixed(3)} ms ` +
      `(authorize + complete made directly, outside a run: ${directMs.toFixed(3)} ms)`,
  );
  assert.ok(wrappedMs > 0 && plainMs > 0 && httpMs > 0);
  const records = [];
  for await (const record of client.records({ provenance_ref: token.provenance_ref })) {
    records.push(record);
  }
  const wrappedRecords = records.filter((r) => r.result_hash !== undefined);
  assert.equal(records.length, 2 * n);
  assert.equal(wrappedRecords.length, n);
  assert.ok(wrappedRecords.every((r) => r.status === "completed" && r.result === "success" && r.result_hash === sha256("queued for ann@example.com")));
});

test("argument rules, live: a call outside them is refused before Mandate is asked, nothing runs or is recorded; within them the record keeps the input", async () => {
  const token = await issue({ args: [{ actions: ["send"], pol: [["like", ".subject", "[ops] *"]] }] });
  const ended = [];
  const mandate = mandateAgents({ client, token: token.compact_jwt, onCallEnd: (call) => ended.push(call) });
  const { send, counter } = mailTool(mandate);
  const [outside, within] = [callId("args-out"), callId("args-in")];
  const { agent, model } = agentWith(
    [send],
    [
      functionCall("send_email", { to: "ann@example.com", subject: "wire the money" }, { callId: outside }),
      functionCall("send_email", { to: "ann@example.com", subject: "[ops] rota" }, { callId: within }),
    ],
  );

  const result = await runner.run(agent, "mail Ann twice");
  assert.equal(result.finalOutput, "done");
  assert.equal(counter.runs, 1, "only the call within the rules ran");
  assert.equal(outputSeen(model, outside), "Mandate refused send_email: args_not_permitted");
  const refused = ended.find((call) => call.callId === outside);
  assert.deepEqual([refused.state, refused.reason, refused.aarId], ["refused", "args_not_permitted", undefined]);
  const records = await recordsOf(token.provenance_ref);
  assert.equal(records.length, 1, "the refused call left no record");
  assert.deepEqual([records[0].status, records[0].args], ["completed", { to: "ann@example.com", subject: "[ops] rota" }]);
});

test("require_approval.args, live: a payment over 100 interrupts the run and the reviewer sees its input; one under runs", async () => {
  const token = await issue({ require_approval: { args: [[">", ".amount", 100]] } });
  const asked = [];
  const mandate = mandateAgents({ client, token: token.compact_jwt, onApproval: (approval) => asked.push(approval) });
  const { pay, counter } = payTool(mandate);
  const [small, big] = [callId("small"), callId("big")];
  const { agent } = agentWith(
    [pay],
    [
      functionCall("pay", { account: "ops", amount: 40 }, { callId: small }),
      functionCall("pay", { account: "ops", amount: 400 }, { callId: big }),
    ],
  );
  const first = await runner.run(agent, "pay twice");
  assert.equal(counter.runs, 1, "the payment under 100 ran");
  assert.deepEqual(first.interruptions.map((i) => i.rawItem.callId), [big]);
  assert.equal(asked.length, 1);
  const approval = await client.approval(asked[0].approval_id);
  assert.deepEqual([approval.status, approval.spend_usd, approval.args], ["pending", 400, { account: "ops", amount: 400 }]);
});
