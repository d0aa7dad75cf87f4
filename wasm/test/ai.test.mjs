// mandate-sdk/ai against a live `mandate serve` (MANDATE_BIN) and the real
// `ai` package (v7, which needs Node 22 or later): its mock language model
// scripts the tool calls, `generateText` runs them through tools wrapped by
// `withMandate` (and the `toolApproval` hook), and every record is read back
// with the organisation's API key. No model is called; the only network is
// 127.0.0.1.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

import { generateText, tool } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { z } from "zod";

import {
  MandateApprovalPending,
  MandateClient,
  MandateError,
  MandateRefusal,
  createRemoteVerifier,
  generateAgentKey,
} from "mandate-sdk";
import { mandateApprovalResponse, mandateToolApproval, withMandate } from "mandate-sdk/ai";
import { startServer } from "./live-server.mjs";

const packageDir = fileURLToPath(new URL("..", import.meta.url));

let live;
/** The organisation's owner: issues tokens, reads records, decides approvals. */
let admin;
/** The agent's client: no API key, so every agent call is made with the token alone. */
let agent;

before(async () => {
  live = await startServer();
  admin = new MandateClient({ baseUrl: live.baseUrl, apiKey: live.apiKey });
  agent = new MandateClient({ baseUrl: live.baseUrl });
});

after(() => {
  live?.stop();
});

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/** A model turn that calls tools: `[toolName, input]` pairs, each with a fresh tool call id. */
function callTools(...calls) {
  return {
    content: calls.map(([toolName, input]) => ({
      type: "tool-call",
      toolCallId: `call-${randomUUID()}`,
      toolName,
      input: JSON.stringify(input),
    })),
    finishReason: { unified: "tool-calls", raw: undefined },
    usage,
    warnings: [],
  };
}

/** A model turn that answers with text. */
function say(text) {
  return { content: [{ type: "text", text }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] };
}

/** The mock model, answering each call with the next turn. */
function scripted(...turns) {
  return new MockLanguageModelV4({ doGenerate: turns });
}

/** `sha256:<hex>` of text, computed here without the SDK. */
function sha256(text) {
  return `sha256:${createHash("sha256").update(text, "utf8").digest("hex")}`;
}

/** A fresh token for a fresh agent id. */
async function issue({ agent: name, actions, resources, constraints, holder_key }) {
  const agent_id = `${name}-${randomUUID().slice(0, 8)}`;
  const request = { developer_email: "dev@example.com", agent_id, resources, actions };
  if (constraints) request.constraints = constraints;
  if (holder_key) request.holder_key = holder_key;
  return admin.issueL1(request);
}

/** Every record of an agent, newest first. */
async function recordsOf(agentId) {
  const records = [];
  for await (const record of admin.records({ agent_id: agentId })) records.push(record);
  return records;
}

/** A weather tool that counts its runs. */
function weatherTool(runs) {
  return tool({
    description: "The weather in a city",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      runs.count += 1;
      return { city, celsius: 21 };
    },
  });
}

/** A payment tool that counts its runs. */
function payTool(runs) {
  return tool({
    description: "Pays an invoice",
    inputSchema: z.object({ invoice: z.string(), amount: z.number() }),
    execute: async ({ invoice, amount }) => {
      runs.count += 1;
      return `paid ${invoice}: ${amount} USD`;
    },
  });
}

const weatherAction = { action: "read", resource: ({ city }) => `weather:${city}` };
const payAction = { action: "pay", resource: ({ invoice }) => `bank:${invoice}`, spendUsd: ({ amount }) => amount };

test("a permitted call runs once and its record is completed with the output's hash", async () => {
  const token = await issue({ agent: "forecaster", actions: ["read"], resources: ["weather:*"] });
  const runs = { count: 0 };
  const tools = withMandate({ weather: weatherTool(runs) }, { client: agent, token: token.compact_jwt, actions: { weather: weatherAction } });

  const result = await generateText({ model: scripted(callTools(["weather", { city: "oslo" }])), tools, prompt: "Weather?" });

  assert.equal(runs.count, 1);
  const [output] = result.content.filter((part) => part.type === "tool-result");
  assert.deepEqual(output.output, { city: "oslo", celsius: 21 });
  const records = await recordsOf(token.claims.sub.slice("agent:".length));
  assert.equal(records.length, 1);
  const [record] = records;
  assert.deepEqual(
    [record.action, record.resource, record.status, record.result, record.credential],
    ["read", "weather:oslo", "completed", "success", "token"],
  );
  assert.equal(record.result_hash, sha256(JSON.stringify({ city: "oslo", celsius: 21 })));
});

test("an out-of-scope call is refused and does not run: a tool-error in execute, a denial through the hook", async () => {
  const token = await issue({ agent: "clerk", actions: ["read"], resources: ["bank:*"] });
  const agentId = token.claims.sub.slice("agent:".length);
  const runs = { count: 0 };
  const tools = withMandate({ pay: payTool(runs) }, { client: agent, token: token.compact_jwt, actions: { pay: payAction } });

  // Without the hook: execute throws a MandateRefusal, which the SDK reports as a tool-error and sends to the model.
  const model = scripted(callTools(["pay", { invoice: "inv-1", amount: 40 }]), say("I could not pay."));
  const result = await generateText({ model, tools, prompt: "Pay inv-1", stopWhen: () => false });
  assert.equal(runs.count, 0);
  const errors = result.steps[0].content.filter((part) => part.type === "tool-error");
  assert.equal(errors.length, 1);
  assert.ok(errors[0].error instanceof MandateRefusal, String(errors[0].error));
  assert.equal(errors[0].error.reason, "action_not_permitted");
  const denied = await admin.record(errors[0].error.aarId);
  assert.deepEqual([denied.status, denied.deny_reason, denied.resource], ["denied", "action_not_permitted", "bank:inv-1"]);
  assert.match(JSON.stringify(model.doGenerateCalls[1].prompt), /action_not_permitted/);

  // With the hook: the SDK's own denial, with Mandate's reason; one denied record for the call.
  const hooked = await generateText({
    model: scripted(callTools(["pay", { invoice: "inv-2", amount: 40 }])),
    tools,
    toolApproval: mandateToolApproval(),
    prompt: "Pay inv-2",
  });
  assert.equal(runs.count, 0);
  const response = hooked.content.find((part) => part.type === "tool-approval-response");
  assert.equal(response.approved, false);
  assert.match(response.reason, /^Mandate refused pay on bank:inv-2: action_not_permitted \(aar_/);
  assert.equal(hooked.content.filter((part) => part.type === "tool-result" || part.type === "tool-error").length, 0);
  const records = await recordsOf(agentId);
  assert.deepEqual(
    records.map((r) => [r.resource, r.status, r.deny_reason]),
    [
      ["bank:inv-2", "denied", "action_not_permitted"],
      ["bank:inv-1", "denied", "action_not_permitted"],
    ],
  );
});

test("a revoked token is refused, by the server and offline by a status-list verifier, and nothing runs", async () => {
  const token = await issue({ agent: "revoked", actions: ["read"], resources: ["weather:*"] });
  const agentId = token.claims.sub.slice("agent:".length);
  await admin.revoke({ jti: token.jti, reason: "test" });
  const runs = { count: 0 };

  // The server refuses the token: the tool does not run.
  const online = withMandate({ weather: weatherTool(runs) }, { client: agent, token: token.compact_jwt, actions: { weather: weatherAction } });
  const first = await generateText({ model: scripted(callTools(["weather", { city: "rome" }])), tools: online, prompt: "?" });
  const [error] = first.content.filter((part) => part.type === "tool-error").map((part) => part.error);
  assert.ok(error instanceof MandateError, String(error));
  assert.deepEqual([error.status, error.code], [401, "token_revoked"]);
  assert.equal(runs.count, 0);
  const afterServer = await recordsOf(agentId);

  // A verifier holding the status list refuses it before anything is sent.
  const verifier = await createRemoteVerifier({ baseUrl: live.baseUrl, maxStalenessSeconds: 60 });
  const offline = withMandate(
    { weather: weatherTool(runs) },
    { client: agent, token: token.compact_jwt, actions: { weather: weatherAction }, verifier },
  );
  const second = await generateText({ model: scripted(callTools(["weather", { city: "rome" }])), tools: offline, prompt: "?" });
  const [offlineError] = second.content.filter((part) => part.type === "tool-error").map((part) => part.error);
  assert.ok(offlineError instanceof MandateError, String(offlineError));
  assert.deepEqual([offlineError.status, offlineError.code], [0, "token_revoked"]);
  assert.equal(runs.count, 0);
  assert.equal((await recordsOf(agentId)).length, afterServer.length, "the offline refusal wrote nothing");
});

test("a bound token without its proof is refused and nothing runs; with its key it runs", async () => {
  const key = generateAgentKey();
  const token = await issue({ agent: "courier", actions: ["read"], resources: ["weather:*"], holder_key: key.publicJwk });
  const agentId = token.claims.sub.slice("agent:".length);
  assert.equal(token.claims.cnf.jkt, key.jkt);
  const runs = { count: 0 };
  const call = () => scripted(callTools(["weather", { city: "lima" }]));
  const firstError = (result) => result.content.find((part) => part.type === "tool-error")?.error;

  // No key: the client will not send the token without a proof.
  const keyless = withMandate({ weather: weatherTool(runs) }, { client: agent, token: token.compact_jwt, actions: { weather: weatherAction } });
  const noKey = firstError(await generateText({ model: call(), tools: keyless, prompt: "?" }));
  assert.deepEqual([noKey.status, noKey.code], [0, "dpop_key_missing"]);

  // The proof lost on the way: the server refuses the token.
  const stripping = new MandateClient({
    baseUrl: live.baseUrl,
    fetch: (url, init) => {
      const { dpop: _proof, ...headers } = init.headers;
      return fetch(url, { ...init, headers });
    },
  });
  const stripped = withMandate(
    { weather: weatherTool(runs) },
    { client: stripping, token: token.compact_jwt, key, actions: { weather: weatherAction } },
  );
  const noProof = firstError(await generateText({ model: call(), tools: stripped, prompt: "?" }));
  assert.deepEqual([noProof.status, noProof.code], [401, "dpop_required"]);
  assert.equal(runs.count, 0);
  assert.equal((await recordsOf(agentId)).length, 0);

  // With the key, a proof per request: the call runs and is recorded.
  const bound = withMandate(
    { weather: weatherTool(runs) },
    { client: agent, token: token.compact_jwt, key, actions: { weather: weatherAction } },
  );
  const ok = await generateText({ model: call(), tools: bound, prompt: "?" });
  assert.equal(ok.content.filter((part) => part.type === "tool-result").length, 1);
  assert.equal(runs.count, 1);
  assert.deepEqual((await recordsOf(agentId)).map((r) => [r.status, r.result]), [["completed", "success"]]);
});

test("approval through the hook, waiting: the reviewer approves in Mandate, the tool runs once, one record", async () => {
  const token = await issue({
    agent: "payer",
    actions: ["pay"],
    resources: ["bank:*"],
    constraints: { require_approval: { actions: ["pay"] } },
  });
  const agentId = token.claims.sub.slice("agent:".length);
  const runs = { count: 0 };
  const asked = [];
  const decisions = [];
  const tools = withMandate(
    { pay: payTool(runs) },
    {
      client: agent,
      token: token.compact_jwt,
      actions: { pay: payAction },
      waitForApproval: { timeoutSeconds: 20 },
      onApproval: (approval, call) => {
        asked.push({ approval, call });
        // The reviewer decides a moment later, while the hook waits.
        decisions.push(
          new Promise((resolve) => setTimeout(resolve, 200)).then(() =>
            admin.decide(approval.approval_id, { decision: "approve", note: "due" }),
          ),
        );
      },
    },
  );

  const result = await generateText({
    model: scripted(callTools(["pay", { invoice: "rent", amount: 900 }])),
    tools,
    toolApproval: mandateToolApproval(),
    prompt: "Pay the rent",
  });
  await Promise.all(decisions);

  assert.equal(asked.length, 1);
  const [{ approval, call }] = asked;
  assert.equal(approval.url, agent.approvalUrl(approval.approval_id));
  assert.deepEqual(call.request, { action: "pay", resource: "bank:rent", spend_usd: 900, args: { invoice: "rent", amount: 900 } });
  const response = result.content.find((part) => part.type === "tool-approval-response");
  assert.equal(response.approved, true);
  assert.equal(response.reason, `approved in Mandate (${approval.aar_id})`);
  assert.equal(result.content.find((part) => part.type === "tool-result").output, "paid rent: 900 USD");
  assert.equal(runs.count, 1);
  const records = await recordsOf(agentId);
  assert.equal(records.length, 1, "one record per tool call");
  assert.deepEqual(
    [records[0].aar_id, records[0].status, records[0].result, records[0].result_hash],
    [approval.aar_id, "completed", "success", sha256("paid rent: 900 USD")],
  );
  assert.equal((await admin.approval(approval.approval_id)).status, "approved");
});

test("approval by the SDK's two calls: user-approval, the reviewer decides, the app resumes with Mandate's decision", async () => {
  const token = await issue({
    agent: "payer2",
    actions: ["pay"],
    resources: ["bank:*"],
    constraints: { require_approval: { actions: ["pay"] } },
  });
  const agentId = token.claims.sub.slice("agent:".length);
  const runs = { count: 0 };
  const tools = withMandate({ pay: payTool(runs) }, { client: agent, token: token.compact_jwt, actions: { pay: payAction } });
  const toolApproval = mandateToolApproval();
  const messages = [{ role: "user", content: "Pay the water and the power bills" }];

  const first = await generateText({
    model: scripted(callTools(["pay", { invoice: "water", amount: 30 }], ["pay", { invoice: "power", amount: 70 }])),
    tools,
    toolApproval,
    messages,
  });
  messages.push(...first.response.messages);
  const requests = first.content.filter((part) => part.type === "tool-approval-request");
  assert.equal(requests.length, 2);
  assert.ok(requests.every((part) => !part.isAutomatic && /^approve in Mandate: http:\/\/127\.0\.0\.1:\d+\/#\/approval\/apr_/.test(part.reason)));
  assert.equal(runs.count, 0);
  const pending = await recordsOf(agentId);
  assert.deepEqual(pending.map((r) => r.status), ["awaiting_approval", "awaiting_approval"]);

  // Nothing decided yet: no response to give.
  assert.equal(await mandateApprovalResponse(tools, requests[0]), undefined);

  // The reviewer approves the water bill and denies the power bill, on the pages the requests named.
  const approvalId = (part) => part.reason.split("/").at(-1);
  const water = requests.find((part) => part.toolCall.input.invoice === "water");
  const power = requests.find((part) => part.toolCall.input.invoice === "power");
  await admin.decide(approvalId(water), { decision: "approve" });
  await admin.decide(approvalId(power), { decision: "deny", note: "too much" });

  const responses = await Promise.all(requests.map((part) => mandateApprovalResponse(tools, part, { timeoutSeconds: 5 })));
  const byInvoice = Object.fromEntries(requests.map((part, i) => [part.toolCall.input.invoice, responses[i]]));
  assert.deepEqual(
    [byInvoice.water.type, byInvoice.water.approvalId, byInvoice.water.approved],
    ["tool-approval-response", water.approvalId, true],
  );
  assert.equal(byInvoice.power.approved, false);
  assert.match(byInvoice.power.reason, /approval_denied/);
  messages.push({ role: "tool", content: responses });

  const resumed = scripted(say("Paid the water bill."));
  const second = await generateText({ model: resumed, tools, toolApproval, messages });
  assert.equal(runs.count, 1);
  // What the model is sent on resuming: the water bill's output, the power bill's denial with Mandate's reason.
  const sent = resumed.doGenerateCalls[0].prompt.at(-1);
  assert.equal(sent.role, "tool");
  const outputs = Object.fromEntries(sent.content.map((part) => [part.toolCallId, part.output]));
  assert.deepEqual(outputs[water.toolCall.toolCallId], { type: "text", value: "paid water: 30 USD" });
  assert.equal(outputs[power.toolCall.toolCallId].type, "execution-denied");
  assert.match(outputs[power.toolCall.toolCallId].reason, /^Mandate refused pay on bank:power: approval_denied/);
  const records = await recordsOf(agentId);
  assert.equal(records.length, 2, "still one record per tool call");
  const byResource = Object.fromEntries(records.map((r) => [r.resource, r]));
  assert.deepEqual(
    [byResource["bank:water"].status, byResource["bank:water"].result_hash],
    ["completed", sha256("paid water: 30 USD")],
  );
  assert.deepEqual([byResource["bank:power"].status, byResource["bank:power"].deny_reason], ["denied", "approval_denied"]);
});

test("an approval response the app makes up does not run a tool Mandate has not approved", async () => {
  const token = await issue({
    agent: "payer3",
    actions: ["pay"],
    resources: ["bank:*"],
    constraints: { require_approval: { actions: ["pay"] } },
  });
  const runs = { count: 0 };
  const tools = withMandate({ pay: payTool(runs) }, { client: agent, token: token.compact_jwt, actions: { pay: payAction } });
  const toolApproval = mandateToolApproval();
  const messages = [{ role: "user", content: "Pay the gas bill" }];
  const first = await generateText({ model: scripted(callTools(["pay", { invoice: "gas", amount: 50 }])), tools, toolApproval, messages });
  messages.push(...first.response.messages);
  const request = first.content.find((part) => part.type === "tool-approval-request");
  messages.push({ role: "tool", content: [{ type: "tool-approval-response", approvalId: request.approvalId, approved: true }] });

  const resumed = scripted(say("ok"));
  const second = await generateText({ model: resumed, tools, toolApproval, messages });
  assert.equal(runs.count, 0);
  const [denied] = resumed.doGenerateCalls[0].prompt.at(-1).content;
  assert.deepEqual([denied.type, denied.toolCallId, denied.output.type], ["tool-result", request.toolCall.toolCallId, "execution-denied"]);
  assert.match(denied.output.reason, /^a reviewer has not approved this in Mandate yet: http:\/\/127\.0\.0\.1:\d+\/#\/approval\/apr_/);


  // Without the hook's memory (another process resuming), execute itself refuses: still pending.
  const elsewhere = withMandate({ pay: payTool(runs) }, { client: agent, token: token.compact_jwt, actions: { pay: payAction } });
  const pending = await elsewhere.pay.execute(request.toolCall.input, { toolCallId: request.toolCall.toolCallId, messages: [] }).then(
    () => assert.fail("ran without an approval"),
    (error) => error,
  );
  assert.ok(pending instanceof MandateApprovalPending, String(pending));
  assert.equal(runs.count, 0);
});

test("attack: history changed after the approval (pay alice 150 → mallory 99,999) runs nothing; the changed call is asked for anew", async () => {
  const token = await issue({
    agent: "payer4",
    actions: ["pay"],
    resources: ["bank:*"],
    constraints: { require_approval: { actions: ["pay"] } },
  });
  const agentId = token.claims.sub.slice("agent:".length);
  const runs = { count: 0 };
  const tools = withMandate({ pay: payTool(runs) }, { client: agent, token: token.compact_jwt, actions: { pay: payAction } });
  const toolApproval = mandateToolApproval();
  const messages = [{ role: "user", content: "Pay Alice" }];
  const first = await generateText({ model: scripted(callTools(["pay", { invoice: "alice", amount: 150 }])), tools, toolApproval, messages });
  messages.push(...first.response.messages);
  const request = first.content.find((part) => part.type === "tool-approval-request");
  await admin.decide(request.reason.split("/").at(-1), { decision: "approve" });
  const response = await mandateApprovalResponse(tools, request);
  assert.equal(response.approved, true);

  // The attacker holds the client's history: the approved call's input is changed before it runs.
  const call = messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).find((part) => part.type === "tool-call");
  call.input = { invoice: "mallory", amount: 99999 };
  messages.push({ role: "tool", content: [response] });
  const resumed = scripted(say("ok"));
  await generateText({ model: resumed, tools, toolApproval, messages });

  assert.equal(runs.count, 0, "the changed call ran under the approval of another");
  const [denied] = resumed.doGenerateCalls[0].prompt.at(-1).content;
  assert.deepEqual([denied.toolCallId, denied.output.type], [request.toolCall.toolCallId, "execution-denied"]);
  assert.match(denied.output.reason, /changed since Mandate was asked.*http:\/\/127\.0\.0\.1:\d+\/#\/approval\/apr_/);
  // The changed call is a request of its own, awaiting its own approval; the approved one never ran.
  const byResource = Object.fromEntries((await recordsOf(agentId)).map((r) => [r.resource, r]));
  assert.deepEqual(Object.keys(byResource).sort(), ["bank:alice", "bank:mallory"]);
  assert.deepEqual([byResource["bank:mallory"].status, byResource["bank:mallory"].spend_usd], ["awaiting_approval", 99999]);
  assert.notEqual(byResource["bank:alice"].status, "completed");
});

test("attack: execute with arguments changed after the approval re-authorizes, in this process and in another", async () => {
  const token = await issue({
    agent: "payer5",
    actions: ["pay"],
    resources: ["bank:*"],
    constraints: { require_approval: { actions: ["pay"] } },
  });
  const agentId = token.claims.sub.slice("agent:".length);
  const runs = { count: 0, to: [] };
  // The account paid to is an argument that neither the resource nor the spend shows.
  const transfer = () =>
    tool({
      inputSchema: z.object({ invoice: z.string(), amount: z.number(), iban: z.string() }),
      execute: async ({ iban }) => {
        runs.count += 1;
        runs.to.push(iban);
        return `paid to ${iban}`;
      },
    });
  const options = { client: agent, token: token.compact_jwt, actions: { pay: payAction } };
  const tools = withMandate({ pay: transfer() }, options);
  const toolCallId = `call-${randomUUID()}`;
  const approved = { invoice: "rent", amount: 150, iban: "DE-ALICE" };
  const changed = { ...approved, iban: "XX-MALLORY" };
  const asked = await mandateToolApproval()({ toolCall: { toolName: "pay", toolCallId, input: approved }, tools });
  assert.equal(asked.type, "user-approval");
  await admin.decide(asked.reason.split("/").at(-1), { decision: "approve" });

  const refusal = (error) => error;
  const here = await tools.pay.execute(changed, { toolCallId, messages: [] }).then(() => assert.fail("ran"), refusal);
  assert.ok(here instanceof MandateApprovalPending, String(here));
  const elsewhere = withMandate({ pay: transfer() }, options);
  const there = await elsewhere.pay.execute(changed, { toolCallId, messages: [] }).then(() => assert.fail("ran"), refusal);
  assert.ok(there instanceof MandateApprovalPending, String(there));
  assert.equal(there.aarId, here.aarId, "the same changed call is the same request: one record for it");
  assert.equal(runs.count, 0);

  // The call as approved still runs, once, under the approved record (another process too).
  assert.equal(await withMandate({ pay: transfer() }, options).pay.execute(approved, { toolCallId, messages: [] }), "paid to DE-ALICE");
  assert.deepEqual(runs.to, ["DE-ALICE"]);
  const records = await recordsOf(agentId);
  assert.deepEqual(
    records.map((r) => [r.aar_id === here.aarId, r.status]).sort(),
    [[false, "completed"], [true, "awaiting_approval"]],
  );
});

test("a tool that throws: the record is completed as error, and the SDK and the model see the error", async () => {
  const token = await issue({ agent: "flaky", actions: ["write"], resources: ["disk:*"] });
  const agentId = token.claims.sub.slice("agent:".length);
  const save = tool({
    inputSchema: z.object({ path: z.string() }),
    execute: async () => {
      throw new Error("disk full");
    },
  });
  const tools = withMandate({ save }, { client: agent, token: token.compact_jwt, actions: { save: { action: "write", resource: ({ path }) => `disk:${path}` } } });
  const model = scripted(callTools(["save", { path: "notes" }]), say("The disk is full."));

  const result = await generateText({ model, tools, prompt: "Save", stopWhen: () => false });

  const [error] = result.steps[0].content.filter((part) => part.type === "tool-error");
  assert.equal(error.error.message, "disk full");
  assert.match(JSON.stringify(model.doGenerateCalls[1].prompt), /disk full/);
  const [record] = await recordsOf(agentId);
  assert.deepEqual([record.status, record.result, record.resource], ["completed", "error", "disk:notes"]);
});

test("a tool without a declared action is refused when wrapping, never run unchecked", () => {
  const runs = { count: 0 };
  assert.throws(
    () => withMandate({ weather: weatherTool(runs), pay: payTool(runs) }, { client: agent, token: "x", actions: { weather: weatherAction } }),
    (error) => error instanceof MandateError && error.code === "invalid_options" && /pay/.test(error.detail),
  );
});

test("overhead: the wrapped execute against the live server, against the tool's execute alone", async (t) => {
  const token = await issue({ agent: "bench", actions: ["read"], resources: ["weather:*"] });
  const agentId = token.claims.sub.slice("agent:".length);
  const runs = { count: 0 };
  const raw = weatherTool(runs);
  const tools = withMandate({ weather: raw }, { client: agent, token: token.compact_jwt, actions: { weather: weatherAction } });
  const calls = 300;
  const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const time = async (execute) => {
    const took = [];
    for (let i = 0; i < calls; i += 1) {
      const start = performance.now();
      await execute({ city: "oslo" }, { toolCallId: `call-${randomUUID()}`, messages: [] });
      took.push(performance.now() - start);
    }
    return took;
  };
  // Warm both paths first (connections, JIT).
  await time(raw.execute).then(() => undefined);
  const direct = median(await time(raw.execute));
  const wrapped = median(await time(tools.weather.execute));
  t.diagnostic(`median per call over ${calls} calls: execute alone ${direct.toFixed(3)} ms, wrapped ${wrapped.toFixed(3)} ms`);
  assert.equal(runs.count, 3 * calls);
  assert.ok(wrapped > direct);
  const records = await recordsOf(agentId);
  assert.equal(records.length, calls);
  assert.ok(records.every((r) => r.status === "completed" && r.result === "success"));
});

test("types: the real `ai` types accept the wrapped tools, the hook and the responses; a missing action does not compile", () => {
  const project = mkdtempSync(join(tmpdir(), "mandate-sdk-ai-types-"));
  try {
    const modules = join(project, "node_modules");
    mkdirSync(join(modules, "@ai-sdk"), { recursive: true });
    symlinkSync(packageDir, join(modules, "mandate-sdk"));
    for (const name of ["ai", "zod", "@ai-sdk/provider", "@ai-sdk/provider-utils", "@ai-sdk/gateway"]) {
      symlinkSync(join(packageDir, "node_modules", name), join(modules, name));
    }
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    writeFileSync(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { strict: true, module: "nodenext", moduleResolution: "nodenext", target: "es2022", noEmit: true, skipLibCheck: true, types: [] },
        files: ["check.ts"],
      }),
    );
    writeFileSync(
      join(project, "check.ts"),
      `import { generateText, tool, type LanguageModel } from "ai";
import { z } from "zod";
import { MandateClient } from "mandate-sdk";
import { mandateApprovalResponse, mandateToolApproval, withMandate } from "mandate-sdk/ai";

declare const model: LanguageModel;
const client = new MandateClient({ baseUrl: "http://127.0.0.1:1" });
const raw = {
  pay: tool({
    inputSchema: z.object({ invoice: z.string(), amount: z.number() }),
    execute: async ({ invoice, amount }) => \`\${invoice} \${amount}\`,
  }),
};
const tools = withMandate(raw, {
  client,
  token: "t",
  actions: { pay: { action: "pay", resource: ({ invoice }) => \`bank:\${invoice}\`, spendUsd: ({ amount }) => amount } },
});
// @ts-expect-error: a tool without an action
withMandate(raw, { client, token: "t", actions: {} });
// @ts-expect-error: the resource function reads the tool's own input
withMandate(raw, { client, token: "t", actions: { pay: { action: "pay", resource: ({ city }) => city } } });
export async function run(): Promise<void> {
  const result = await generateText({ model, tools, toolApproval: mandateToolApproval(), prompt: "x" });
  for (const part of result.content) {
    if (part.type === "tool-approval-request") {
      const response = await mandateApprovalResponse(tools, part);
      if (response) {
        await generateText({ model, tools, messages: [{ role: "tool", content: [response] }] });
      }
    }
  }
}
`,
    );
    const tsc = join(packageDir, "node_modules", "typescript", "bin", "tsc");
    const run = spawnSync(process.execPath, [tsc, "-p", project], { encoding: "utf8" });
    assert.equal(run.stdout + run.stderr, "");
    assert.equal(run.status, 0);
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
});

test("argument rules, live: a call outside them is refused offline, sending and recording nothing; within them it runs and its record keeps the input", async () => {
  // Payments of at most 100 USD, to invoices named inv-*.
  const rules = [{ actions: ["pay"], pol: [["<=", ".amount", 100], ["like", ".invoice", "inv-*"]] }];
  const token = await issue({ agent: "bounded", actions: ["pay"], resources: ["bank:*"], constraints: { args: rules } });
  const agentId = token.claims.sub.slice("agent:".length);
  const runs = { count: 0 };
  const tools = withMandate({ pay: payTool(runs) }, { client: agent, token: token.compact_jwt, actions: { pay: payAction } });

  const model = scripted(callTools(["pay", { invoice: "inv-7", amount: 40 }], ["pay", { invoice: "inv-8", amount: 4000 }]), say("done"));
  const result = await generateText({ model, tools, prompt: "Pay both", stopWhen: () => false });
  assert.equal(runs.count, 1, "only the call within the rules ran");
  const [error] = result.steps[0].content.filter((part) => part.type === "tool-error");
  assert.ok(error.error instanceof MandateRefusal, String(error.error));
  assert.equal(error.error.reason, "args_not_permitted");
  assert.equal(error.error.aarId, undefined, "refused from the token: no record");

  const records = await recordsOf(agentId);
  assert.equal(records.length, 1);
  const [record] = records;
  assert.deepEqual([record.resource, record.status, record.spend_usd], ["bank:inv-7", "completed", 40]);
  assert.deepEqual(record.args, { invoice: "inv-7", amount: 40 });
  assert.match(record.args_hash, /^sha256:[0-9a-f]{64}$/);

  // Mandate refuses the same call when it is sent anyway: the holder learns the statement that failed.
  const answer = await agent.as(token.compact_jwt).authorize({
    action: "pay",
    resource: "bank:inv-8",
    spend_usd: 4000,
    args: { invoice: "inv-8", amount: 4000 },
  });
  assert.deepEqual([answer.authorized, answer.reason], [false, "args_not_permitted"]);
  assert.match(answer.reason_detail, /constraints\.args\[0\]\.pol\[0\]/);
  // Left out, where a rule applies: args_required.
  const bare = await agent.as(token.compact_jwt).authorize({ action: "pay", resource: "bank:inv-9", spend_usd: 1 });
  assert.deepEqual([bare.authorized, bare.reason], [false, "args_required"]);
});

test("require_approval.args, live: a payment over 100 waits for a reviewer who sees its input; one under runs at once; one without the field asks too", async () => {
  const token = await issue({
    agent: "asker",
    actions: ["pay"],
    resources: ["bank:*"],
    constraints: { require_approval: { args: [[">", ".amount", 100]] } },
  });
  const agentId = token.claims.sub.slice("agent:".length);
  const runs = { count: 0 };
  const asked = [];
  const decisions = [];
  const tools = withMandate(
    { pay: payTool(runs) },
    {
      client: agent,
      token: token.compact_jwt,
      actions: { pay: payAction },
      waitForApproval: { timeoutSeconds: 20 },
      onApproval: (approval) => {
        asked.push(approval);
        decisions.push(admin.decide(approval.approval_id, { decision: "approve" }));
      },
    },
  );
  const result = await generateText({
    model: scripted(callTools(["pay", { invoice: "small", amount: 40 }], ["pay", { invoice: "big", amount: 900 }])),
    tools,
    toolApproval: mandateToolApproval(),
    prompt: "Pay both",
  });
  await Promise.all(decisions);
  assert.equal(runs.count, 2);
  assert.equal(asked.length, 1, "only the payment over 100 asked");
  const approval = await admin.approval(asked[0].approval_id);
  assert.deepEqual([approval.status, approval.resource, approval.args], ["approved", "bank:big", { invoice: "big", amount: 900 }]);
  assert.deepEqual(
    result.content.filter((part) => part.type === "tool-result").map((part) => part.output).sort(),
    ["paid big: 900 USD", "paid small: 40 USD"],
  );
  const records = await recordsOf(agentId);
  assert.deepEqual(records.map((r) => [r.resource, r.status]).sort(), [["bank:big", "completed"], ["bank:small", "completed"]]);

  // The condition cannot be judged without its field: failing closed for an approval means asking.
  const renamed = await agent.as(token.compact_jwt).authorize({ action: "pay", resource: "bank:renamed", args: { amount_usd: 5000 } });
  assert.deepEqual([renamed.authorized, renamed.approval?.status], [false, "pending"]);
});
