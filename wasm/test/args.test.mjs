// Argument constraints in the SDK, without a server (DESIGN §15): tokens
// signed here with jose carry the argument rules of tests/vectors/args.json;
// a fetch records every request. The client sends `args`; `act`, the MCP
// gate and the AI SDK and OpenAI Agents adapters refuse offline, sending
// nothing, what the token's own rules refuse (a failing statement, missing
// arguments, `not` over an absent field), and send what they permit;
// `verifyAttempt` (and `RemoteVerifier.verifyAttempt`) judges a verified
// token's scope and rules over an attempt's arguments.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";

import * as jose from "jose";

import { MandateClient, MandateError, MandateRefusal, Verifier, checkArgsOffline, createRemoteVerifier, verifyAttempt } from "mandate-sdk";
import { withMandate, mandateToolApproval } from "mandate-sdk/ai";
import { META_AAR_ID, META_ERROR, mandateTool } from "mandate-sdk/mcp";
import { mandateAgents } from "mandate-sdk/openai-agents";

const vectors = (name) => JSON.parse(readFileSync(new URL(`../../tests/vectors/${name}.json`, import.meta.url), "utf8"));
const { check } = vectors("args");
const tokens = vectors("tokens");
const root = tokens.cases.find((c) => c.name === "valid_root");
const NOW = root.now;
const BASE = "https://mandate.example";
// The AI SDK and Agents adapters support Node 22 or later and refuse older
// ones (package.test.mjs checks that); their tests here run on Node 22 and 24.
const beforeNode22 = Number(process.versions.node.split(".")[0]) < 22 && "the adapter supports Node 22 or later";

const { privateKey, publicKey } = await jose.generateKeyPair("EdDSA", { crv: "Ed25519" });
const publicJwk = await jose.exportJWK(publicKey);
const kid = await jose.calculateJwkThumbprint(publicJwk);
const JWKS = { keys: [{ ...publicJwk, kid, alg: "EdDSA", use: "sig" }] };

/** A root token of the vectors' claims with `constraints` (the args vectors' rules by default), signed here. */
async function sign(constraints = { args: check.rules }) {
  const { status: _status, ...claims } = root.expect.claims;
  const payload = {
    ...claims,
    svc_scope: { actions: ["send", "pay", "read"], resources: ["mail:*", "bank:*", "files:*", "chat:*"] },
    svc_constraints: constraints,
  };
  return new jose.SignJWT(payload).setProtectedHeader({ alg: "EdDSA", typ: "vat+jwt", kid }).sign(privateKey);
}

const ruled = await sign();
/** The traps: `not` over an absent field, and `!=` over one, never permit (UCAN would). */
const trapped = await sign({
  args: [{ actions: ["send"], pol: [["not", ["==", ".bcc", "archive@evil.com"]], ["!=", ".cc", "archive@evil.com"]] }],
});
const unruled = await sign({});

const AUTHORIZED = { authorized: true, aar_id: "aar_1", trust_score: 0.4, provenance_ref: "prov_1", human_ref: "hr", assurance_level: "L1" };
const COMPLETED = { aar_id: "aar_1", status: "completed", result: "success" };

/** A fetch that records each request and answers authorize and complete as Mandate would for a permitted call. */
function recorder() {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ path: url.slice(BASE.length), body: init.body && JSON.parse(init.body) });
    const body = url.endsWith("/complete") ? COMPLETED : AUTHORIZED;
    return { ok: true, status: 200, statusText: "OK", headers: new Headers(), text: async () => JSON.stringify(body) };
  };
  return { calls, client: new MandateClient({ baseUrl: BASE, fetch, sleep: async () => {} }) };
}

const OUTSIDER = { to: ["ann@example.com", "eve@evil.com"] };
const INSIDERS = { to: ["ann@example.com", "raj@example.com"], subject: "q3" };

test("checkArgsOffline: every check vector with a rule-made verdict, as the token's own rules judge it", () => {
  let judged = 0;
  for (const testCase of check.cases) {
    const refusal = checkArgsOffline(ruled, { action: testCase.action, resource: testCase.resource, args: testCase.args });
    if (testCase.expect.ok) {
      assert.equal(refusal, undefined, testCase.name);
      continue;
    }
    judged += 1;
    assert.ok(refusal instanceof MandateRefusal, testCase.name);
    const { code, rule, statement, truth } = testCase.expect;
    assert.deepEqual(
      [refusal.status, refusal.reason, refusal.code, refusal.aarId, refusal.problem.rule, refusal.problem.statement, refusal.problem.truth],
      [0, code, code, undefined, rule, statement, truth],
      testCase.name,
    );
  }
  assert.ok(judged >= 8);
  // What the rules do not govern is left to the server: a token without rules, scope, a string that is not a token.
  assert.equal(checkArgsOffline(unruled, { action: "send", resource: "mail:outbox", args: OUTSIDER }), undefined);
  assert.equal(checkArgsOffline(ruled, { action: "delete", resource: "mail:outbox" }), undefined);
  assert.equal(checkArgsOffline("eyJ.token.sig", { action: "send", resource: "mail:outbox" }), undefined);
  // Arguments Mandate would not take are refused before they are sent.
  const duplicate = checkArgsOffline(unruled, { action: "send", resource: "mail:outbox", args: '{"to":["a@example.com"],"to":[]}' });
  assert.ok(duplicate instanceof MandateError && !(duplicate instanceof MandateRefusal));
  assert.deepEqual([duplicate.status, duplicate.code], [0, "duplicate_member"]);
  const huge = checkArgsOffline(unruled, { action: "pay", resource: "bank:acct", args: { amount_usd: 2 ** 53 + 2 } });
  assert.equal(huge?.status, 0);
});

test("the traps: `not` and `!=` over an absent field refuse offline (undefined is not true)", () => {
  const absent = checkArgsOffline(trapped, { action: "send", resource: "mail:outbox", args: { to: ["ann@example.com"] } });
  assert.deepEqual([absent?.code, absent?.problem.rule, absent?.problem.statement, absent?.problem.truth], ["args_not_permitted", 0, 0, "undefined"]);
  const ccAbsent = checkArgsOffline(trapped, { action: "send", resource: "mail:outbox", args: { bcc: "ann@example.com" } });
  assert.deepEqual([ccAbsent?.code, ccAbsent?.problem.statement, ccAbsent?.problem.truth], ["args_not_permitted", 1, "undefined"]);
  const named = { action: "send", resource: "mail:outbox", args: { bcc: "ann@example.com", cc: "raj@example.com" } };
  assert.equal(checkArgsOffline(trapped, named), undefined);
  const forbidden = checkArgsOffline(trapped, { ...named, args: { bcc: "archive@evil.com", cc: "raj@example.com" } });
  assert.deepEqual([forbidden?.code, forbidden?.problem.truth], ["args_not_permitted", "false"]);
});

test("the client sends args on authorize, recordAction and each record of recordActions", async () => {
  const { calls, client } = recorder();
  await client.authorize({ action: "send", resource: "mail:outbox", args: INSIDERS }, { token: ruled });
  await client.recordAction({ action: "send", resource: "mail:outbox", result: "success", args: INSIDERS }, { token: ruled });
  await client.recordActions(
    [
      { action: "send", resource: "mail:outbox", result: "success", args: INSIDERS },
      { action: "read", resource: "files:other", result: "success" },
    ],
    { token: ruled },
  );
  assert.deepEqual(
    calls.map(({ path, body }) => [path, body.args ?? body.records.map((r) => r.args)]),
    [
      ["/v1/vat/authorize", INSIDERS],
      ["/v1/vat/record/action", INSIDERS],
      ["/v1/vat/record/actions", [INSIDERS, undefined]],
    ],
  );
});

test("act: permitted args are sent and the action runs; refused args send nothing and run nothing", async () => {
  const { calls, client } = recorder();
  const output = await client.act(ruled, { action: "send", resource: "mail:outbox", args: INSIDERS }, () => "sent");
  assert.equal(output, "sent");
  assert.deepEqual(calls.map(({ path, body }) => [path, body.args]), [
    ["/v1/vat/authorize", INSIDERS],
    ["/v1/vat/aar/aar_1/complete", undefined],
  ]);
  calls.length = 0;
  const run = () => assert.fail("must not run");
  const refused = await client.act(ruled, { action: "send", resource: "mail:outbox", args: OUTSIDER }, run).catch((e) => e);
  assert.deepEqual([refused.name, refused.reason, refused.status, refused.aarId], ["MandateRefusal", "args_not_permitted", 0, undefined]);
  const missing = await client.act(ruled, { action: "pay", resource: "bank:acct", spend_usd: 5 }, run).catch((e) => e);
  assert.deepEqual([missing.name, missing.reason, missing.problem.rule], ["MandateRefusal", "args_required", 1]);
  const trap = await client.act(trapped, { action: "send", resource: "mail:outbox", args: { to: ["a@example.com"] } }, run).catch((e) => e);
  assert.equal(trap.reason, "args_not_permitted");
  assert.deepEqual(calls, [], "nothing reached Mandate");
});

test("verifyAttempt: a verified token's scope and argument rules over the attempt, with a Verifier and a RemoteVerifier", async () => {
  const verifier = new Verifier(JWKS);
  const at = { verify: (token) => verifier.verify(token, NOW) };
  const permitted = await verifyAttempt(at, ruled, { action: "send", resource: "mail:outbox", args: INSIDERS });
  assert.equal(permitted.valid, true, JSON.stringify(permitted.error));
  assert.equal(permitted.claims.svc_constraints.args.length, 3);
  const failing = await verifyAttempt(at, ruled, { action: "send", resource: "mail:outbox", args: OUTSIDER });
  assert.deepEqual(failing, {
    valid: false,
    error: { stage: "permit", code: "args_not_permitted", message: failing.error.message, rule: 0, statement: 0, truth: "false" },
  });
  const missing = await verifyAttempt(at, ruled, { action: "pay", resource: "bank:acct" });
  assert.deepEqual([missing.error.stage, missing.error.code, missing.error.rule], ["permit", "args_required", 1]);
  const trap = await verifyAttempt(at, trapped, { action: "send", resource: "mail:outbox", args: {} });
  assert.deepEqual([trap.error.code, trap.error.truth], ["args_not_permitted", "undefined"]);
  const scope = await verifyAttempt(at, ruled, { action: "delete", resource: "mail:outbox", args: INSIDERS });
  assert.deepEqual([scope.error.stage, scope.error.code], ["permit", "action_not_permitted"]);
  // The token is checked first: a forged one is refused as `verify` refuses it, whatever the arguments.
  const [head, payload] = ruled.split(".");
  const forged = await verifyAttempt(at, `${head}.${payload}.${"A".repeat(86)}`, { action: "send", resource: "mail:outbox", args: INSIDERS });
  assert.deepEqual([forged.valid, forged.error.stage], [false, "verify"]);
  verifier.free();

  const fetch = async () => ({ ok: true, status: 200, url: `${BASE}/.well-known/jwks.json`, headers: new Headers(), text: async () => JSON.stringify(JWKS) });
  const remote = await createRemoteVerifier({ baseUrl: BASE, fetch, maxStalenessSeconds: 300, clock: () => NOW });
  // The vectors' claims name no status list, so a RemoteVerifier takes the token on its signature alone.
  const remoteOk = await remote.verifyAttempt(ruled, { action: "pay", resource: "bank:acct", args: { amount_usd: 100, currency: "USD" } });
  assert.equal(remoteOk.valid, true, JSON.stringify(remoteOk.error));
  const remoteRefused = await remote.verifyAttempt(ruled, { action: "pay", resource: "bank:acct", args: { amount_usd: 100.01, currency: "USD" } });
  assert.deepEqual([remoteRefused.error.code, remoteRefused.error.rule, remoteRefused.error.statement], ["args_not_permitted", 1, 0]);
  remote.free();
});

/** The MCP SDK's `extra` of a call authenticated with `token`. */
function extraOf(token) {
  return { authInfo: { token, clientId: "research-bot", scopes: ["send"] }, signal: new AbortController().signal, requestId: 1, _meta: {} };
}

test("the MCP gate sends the tool's arguments as args, and refuses offline, with the code, what the token's rules refuse", async () => {
  const { calls, client } = recorder();
  let runs = 0;
  const send = mandateTool(client, { action: "send", resource: "mail:outbox" }, async ({ to }) => {
    runs += 1;
    return { content: [{ type: "text", text: `sent to ${to.join(", ")}` }] };
  });
  const sent = await send(INSIDERS, extraOf(ruled));
  assert.equal(sent.isError, undefined);
  assert.equal(sent._meta[META_AAR_ID], "aar_1");
  assert.deepEqual(calls.map(({ path, body }) => [path, body.args]), [
    ["/v1/vat/authorize", INSIDERS],
    ["/v1/vat/aar/aar_1/complete", undefined],
  ]);
  calls.length = 0;
  for (const [token, args, code] of [
    [ruled, OUTSIDER, "args_not_permitted"],
    [ruled, { subject: "no recipients" }, "args_not_permitted"],
    [trapped, { to: ["ann@example.com"] }, "args_not_permitted"],
  ]) {
    const result = await send(args, extraOf(token));
    assert.equal(result.isError, true);
    assert.equal(result._meta[META_ERROR], code);
    assert.equal(result._meta[META_AAR_ID], undefined, "no record was made");
    assert.match(result.content[0].text, new RegExp(code));
  }
  // A tool whose input is not an object sends no args: where a rule applies, that is args_required.
  const pay = mandateTool(client, { action: "pay", resource: "bank:acct" }, async () => assert.fail("must not run"));
  const required = await pay(undefined, extraOf(ruled));
  assert.deepEqual([required.isError, required._meta[META_ERROR]], [true, "args_required"]);
  assert.equal(runs, 1);
  assert.deepEqual(calls, [], "no authorize reached Mandate");
});

test("the AI SDK adapter sends the tool input as args and refuses offline, in execute and in the approval hook", { skip: beforeNode22 }, async () => {
  const { calls, client } = recorder();
  const tools = withMandate(
    { send_mail: { description: "send", inputSchema: {}, execute: async (input) => `sent to ${input.to.length}` } },
    { client, token: ruled, actions: { send_mail: { action: "send", resource: "mail:outbox" } } },
  );
  const options = (id) => ({ toolCallId: id, messages: [] });
  assert.equal(await tools.send_mail.execute(INSIDERS, options("c1")), "sent to 2");
  assert.deepEqual(calls.map(({ path, body }) => [path, body.args]), [
    ["/v1/vat/authorize", INSIDERS],
    ["/v1/vat/aar/aar_1/complete", undefined],
  ]);
  calls.length = 0;
  const refused = await tools.send_mail.execute(OUTSIDER, options("c2")).catch((e) => e);
  assert.deepEqual([refused.name, refused.reason, refused.aarId], ["MandateRefusal", "args_not_permitted", undefined]);
  const hook = mandateToolApproval();
  const denied = await hook({ toolCall: { toolName: "send_mail", toolCallId: "c3", input: { subject: "hi" } }, tools });
  assert.equal(denied.type, "denied");
  assert.match(denied.reason, /args_not_permitted/);
  assert.deepEqual(calls, [], "nothing reached Mandate");
  // Permitted in the hook, the call runs under the record the hook made; a changed input is judged anew, offline first.
  assert.equal(await hook({ toolCall: { toolName: "send_mail", toolCallId: "c4", input: INSIDERS }, tools }), "not-applicable");
  const changed = await tools.send_mail.execute(OUTSIDER, options("c4")).catch((e) => e);
  assert.equal(changed.reason, "args_not_permitted");
  assert.deepEqual(calls.map(({ path }) => path), ["/v1/vat/authorize"]);
});

test("the OpenAI Agents adapter sends the parsed input as args and refuses offline before asking Mandate", { skip: beforeNode22 }, async () => {
  const { calls, client } = recorder();
  const ended = [];
  const agents = mandateAgents({ client, token: ruled, onCallEnd: (call) => ended.push(call) });
  const options = agents.withMandate(
    { name: "pay", parameters: {}, execute: async (input) => `paid ${input.amount_usd}` },
    { action: "pay", resource: "bank:acct", spendUsd: (input) => input.amount_usd },
  );
  const within = { amount_usd: 40, currency: "USD" };
  assert.equal(await options.needsApproval({}, within, "call_1"), false);
  const ok = await options.inputGuardrails[0].run({ toolCall: { callId: "call_1", name: "pay", arguments: JSON.stringify(within) } });
  assert.equal(ok.behavior.type, "allow");
  assert.equal(await options.execute(within, {}, { toolCall: { callId: "call_1", name: "pay", arguments: JSON.stringify(within) } }), "paid 40");
  assert.deepEqual(calls.map(({ path, body }) => [path, body.args, body.spend_usd]), [
    ["/v1/vat/authorize", within, 40],
    ["/v1/vat/aar/aar_1/complete", undefined, undefined],
  ]);
  calls.length = 0;
  const over = { amount_usd: 500, currency: "USD" };
  assert.equal(await options.needsApproval({}, over, "call_2"), false);
  const rejected = await options.inputGuardrails[0].run({ toolCall: { callId: "call_2", name: "pay", arguments: JSON.stringify(over) } });
  assert.equal(rejected.behavior.type, "rejectContent");
  assert.match(rejected.behavior.message, /args_not_permitted/);
  assert.deepEqual([rejected.outputInfo.state, rejected.outputInfo.reason, rejected.outputInfo.aarId], ["refused", "args_not_permitted", undefined]);
  const thrown = await options.execute(over, {}, { toolCall: { callId: "call_2", name: "pay", arguments: JSON.stringify(over) } }).catch((e) => e);
  assert.equal(thrown.code, "args_not_permitted");
  assert.deepEqual(calls, [], "nothing reached Mandate");
  assert.ok(ended.some((call) => call.reason === "args_not_permitted"));
});
