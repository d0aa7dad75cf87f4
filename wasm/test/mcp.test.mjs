// mandate-sdk/mcp against a live `mandate serve` and the real MCP SDK (its
// pinned version): an McpServer whose tools are gated by `mandateTool`,
// served over the SDK's Streamable HTTP transport on 127.0.0.1 behind
// `mandateAuth`, called by the SDK's own Client with the VAT as its bearer
// token. Records are read back with the API key; the gate's calls to Mandate
// go through a fetch that counts them. MANDATE_BIN names the server binary.
import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { after, before, test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InvalidTokenError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { OAuthProtectedResourceMetadataSchema } from "@modelcontextprotocol/sdk/shared/auth.js";
import {
  ElicitRequestSchema,
  ElicitationCompleteNotificationSchema,
  UrlElicitationRequiredError,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

import { MandateClient, createRemoteVerifier, generateAgentKey } from "mandate-sdk";
import {
  META_AAR_ID,
  META_DELEGATED_TOKEN,
  META_ERROR,
  META_PROVENANCE_REF,
  META_RESULT_HASH,
  mandateAuth,
  mandateAuthOf,
  mandateTokenVerifier,
  mandateTool,
  protectedResourceMetadata,
  protectedResourceMetadataHandler,
  protectedResourceMetadataUrl,
  toolResultHash,
} from "mandate-sdk/mcp";

import { startServer } from "./live-server.mjs";

// The ESM entry re-exports every name of the CommonJS build, the same objects.
const commonJs = createRequire(import.meta.url)("mandate-sdk/mcp");
const esm = await import("mandate-sdk/mcp");
assert.deepEqual(Object.keys(esm).filter((name) => name !== "default").sort(), Object.keys(commonJs).sort());
assert.equal(commonJs.mandateTool, mandateTool);

/** The MCP server's own key: bound tokens are delegated to it. */
const serverKey = generateAgentKey();

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

let live;
/** The owner's client: issues, revokes, reads records. */
let owner;
/** The gate's client: no API key, only the agents' tokens; every request it sends is logged. */
let gate;
const sent = [];
/** Seconds added to the gate verifier's clock (to let a status list's ttl pass). */
let skew = 0;
let verifier;
let mcp;
let mcpUrl;
/** How often each tool body ran. */
const runs = { read: 0, delete: 0, pay: 0, explode: 0, sulk: 0 };
const sessions = new Map();

/** SHA-256 of the content's JSON text, as `sha256:<hex>`, computed without the SDK. */
function contentHash(content) {
  return `sha256:${createHash("sha256").update(JSON.stringify(content), "utf8").digest("hex")}`;
}

function authorizeCalls() {
  return sent.filter((request) => request.path === "/v1/vat/authorize").length;
}

/** The MCP server of one session: four gated tools. */
function buildServer() {
  const server = new McpServer({ name: "files", version: "1.0.0" });
  const options = {
    server,
    urlElicitationRequiredError: UrlElicitationRequiredError,
    approvalTimeoutSeconds: 30,
    key: serverKey,
  };
  server.registerTool(
    "read_file",
    { inputSchema: { path: z.string() } },
    mandateTool(
      gate,
      { action: "read", resource: ({ path }) => `files:${path}` },
      async ({ path }, extra, context) => {
        runs.read += 1;
        return {
          content: [{ type: "text", text: `contents of ${path} for ${mandateAuthOf(extra.authInfo)?.agentId}` }],
          structuredContent: { aar: context.aarId },
        };
      },
      options,
    ),
  );
  server.registerTool(
    "delete_file",
    { inputSchema: { path: z.string() } },
    mandateTool(gate, { action: "delete", resource: ({ path }) => `files:${path}` }, async () => {
      runs.delete += 1;
      return { content: [{ type: "text", text: "deleted" }] };
    }),
  );
  server.registerTool(
    "pay",
    { inputSchema: { payee: z.string(), amount: z.number() } },
    mandateTool(
      gate,
      { action: "pay", resource: ({ payee }) => `bank:${payee}`, spendUsd: ({ amount }) => amount },
      async ({ payee, amount }) => {
        runs.pay += 1;
        return { content: [{ type: "text", text: `paid ${amount} to ${payee}` }] };
      },
      options,
    ),
  );
  server.registerTool(
    "explode",
    { inputSchema: {} },
    mandateTool(gate, { action: "read", resource: "files:boom" }, async () => {
      runs.explode += 1;
      throw new Error("disk on fire");
    }),
  );
  // Not gated: the same work as read_file, to measure the gate against.
  server.registerTool("plain_read", { inputSchema: { path: z.string() } }, async ({ path }) => ({
    content: [{ type: "text", text: `contents of ${path}` }],
  }));
  server.registerTool(
    "sulk",
    { inputSchema: {} },
    mandateTool(gate, { action: "read", resource: "files:sulk" }, async () => {
      runs.sulk += 1;
      return { content: [{ type: "text", text: "not today" }], isError: true };
    }),
  );
  return server;
}

async function bodyOf(req) {
  let text = "";
  for await (const chunk of req) {
    text += chunk;
  }
  return text === "" ? undefined : JSON.parse(text);
}

/** Serves one MCP request of its session (a new session on `initialize`). */
async function serveMcp(req, res) {
  const body = req.method === "POST" ? await bodyOf(req) : undefined;
  const id = req.headers["mcp-session-id"];
  let transport = id === undefined ? undefined : sessions.get(id);
  if (transport === undefined) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => sessions.set(sessionId, transport),
    });
    await buildServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
}

before(async () => {
  live = await startServer();
  owner = new MandateClient({ baseUrl: live.baseUrl, apiKey: live.apiKey });
  gate = new MandateClient({
    baseUrl: live.baseUrl,
    fetch: (url, init) => {
      sent.push({ path: new URL(url).pathname, headers: init.headers });
      return fetch(url, init);
    },
  });
  verifier = await createRemoteVerifier({
    baseUrl: live.baseUrl,
    maxStalenessSeconds: 300,
    clock: () => Math.floor(Date.now() / 1000) + skew,
  });
  mcp = createServer();
  await new Promise((resolve) => mcp.listen(0, "127.0.0.1", resolve));
  mcpUrl = `http://127.0.0.1:${mcp.address().port}`;
  const resource = `${mcpUrl}/mcp`;
  const metadata = protectedResourceMetadataHandler({
    resource,
    authorizationServer: live.baseUrl,
    resourceName: "Files",
    scopesSupported: ["read", "pay"],
  });
  const auth = mandateAuth({ verifier, resourceMetadataUrl: protectedResourceMetadataUrl(resource) });
  mcp.on("request", (req, res) => {
    const fail = (error) => {
      res.statusCode = 500;
      res.end(String(error));
    };
    metadata(req, res, () => auth(req, res, () => serveMcp(req, res).catch(fail))).catch(fail);
  });
});

after(async () => {
  for (const transport of sessions.values()) {
    await transport.close();
  }
  mcp?.closeAllConnections();
  mcp?.close();
  verifier?.free();
  live?.stop();
});

let agents = 0;

/** A fresh agent's token: read files, pay (with approval). */
async function issue(extra = {}) {
  agents += 1;
  return owner.issueL1({
    developer_email: "dev@example.com",
    agent_id: `mcp-agent-${agents}`,
    resources: ["files:*", "bank:*"],
    actions: ["read", "pay"],
    constraints: { require_approval: { actions: ["pay"] } },
    ...extra,
  });
}

/** The SDK's client, connected with the token as its bearer (or through `fetch`), declaring URL elicitation. */
async function connect(token, { fetch: customFetch, onElicit, elicit = true } = {}) {
  const client = new Client({ name: "agent", version: "1.0.0" }, { capabilities: elicit ? { elicitation: { url: {} } } : {} });
  const elicited = [];
  const completed = [];
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      elicited.push(request.params);
      onElicit?.(request.params);
      return { action: "accept" };
    });
    client.setNotificationHandler(ElicitationCompleteNotificationSchema, (notification) => {
      completed.push(notification.params.elicitationId);
    });
  }
  const transport = new StreamableHTTPClientTransport(
    new URL(`${mcpUrl}/mcp`),
    customFetch ? { fetch: customFetch } : { requestInit: { headers: { authorization: `Bearer ${token}` } } },
  );
  await client.connect(transport);
  return { client, elicited, completed, close: () => client.close() };
}

test("a permitted call is authorized, run, and completed with the hash of its content", async () => {
  const token = await issue();
  const session = await connect(token.compact_jwt);
  const before = runs.read;
  const result = await session.client.callTool({
    name: "read_file",
    arguments: { path: "notes.txt" },
    _meta: { traceparent: TRACEPARENT },
  });
  await session.close();
  assert.equal(runs.read, before + 1);
  assert.equal(result.isError, undefined);
  assert.deepEqual(result.content, [{ type: "text", text: "contents of notes.txt for mcp-agent-1" }]);
  const aarId = result._meta[META_AAR_ID];
  assert.match(aarId, /^aar_/);
  assert.equal(result.structuredContent.aar, aarId);
  assert.equal(result._meta[META_PROVENANCE_REF], token.provenance_ref);
  const expected = contentHash(result.content);
  assert.equal(toolResultHash(result), expected);
  assert.equal(result._meta[META_RESULT_HASH], expected);
  const record = await owner.record(aarId);
  assert.deepEqual(
    [record.status, record.result, record.result_hash, record.action, record.resource, record.credential, record.agent_id],
    ["completed", "success", expected, "read", "files:notes.txt", "token", "mcp-agent-1"],
  );
  // The request's traceparent went with the gate's calls to Mandate.
  const authorize = sent.findLast((request) => request.path === "/v1/vat/authorize");
  assert.equal(authorize.headers.traceparent, TRACEPARENT);
  assert.equal(authorize.headers.authorization, `Bearer ${token.compact_jwt}`);
});

test("an out-of-scope call is refused and nothing runs; the denied record says why", async () => {
  const token = await issue();
  const session = await connect(token.compact_jwt);
  const result = await session.client.callTool({ name: "delete_file", arguments: { path: "notes.txt" } });
  await session.close();
  assert.equal(runs.delete, 0);
  assert.equal(result.isError, true);
  assert.equal(result._meta[META_ERROR], "action_not_permitted");
  assert.match(result.content[0].text, /action_not_permitted/);
  const record = await owner.record(result._meta[META_AAR_ID]);
  assert.deepEqual([record.status, record.deny_reason, record.action], ["denied", "action_not_permitted", "delete"]);
});

test("a revoked token is refused offline by the status list: no authorize reaches Mandate", async () => {
  const token = await issue();
  const session = await connect(token.compact_jwt);
  const ok = await session.client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
  assert.equal(ok.isError, undefined);
  await owner.revoke({ jti: token.jti, reason: "leaked" });
  // Time passes beyond the list's ttl (60 s): the gate's verifier fetches the list again.
  skew += 61;
  const asked = authorizeCalls();
  const reads = runs.read;
  await assert.rejects(session.client.callTool({ name: "read_file", arguments: { path: "b.txt" } }), (error) => {
    assert.equal(error.code, 401);
    assert.match(error.message, /"error":"invalid_token","error_description":"token_revoked: /);
    return true;
  });
  const response = await fetch(`${mcpUrl}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token.compact_jwt}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  assert.equal(response.status, 401);
  const body = await response.json();
  assert.equal(body.error, "invalid_token");
  assert.match(body.error_description, /^token_revoked: /);
  const challenge = response.headers.get("www-authenticate");
  assert.match(challenge, /^Bearer error="invalid_token", error_description="token_revoked: /);
  assert.ok(challenge.endsWith(`resource_metadata="${mcpUrl}/.well-known/oauth-protected-resource/mcp"`), challenge);
  assert.equal(authorizeCalls(), asked);
  assert.equal(runs.read, reads);
  await session.close().catch(() => undefined);
  // Back to the true time, for the proofs of the tests that follow (the list is kept until its ttl passes again).
  skew = 0;
});

test("a bound token is refused without its proof; with it, the gate acts only with a child delegated to its own key", async () => {
  const key = generateAgentKey();
  const token = await issue({ holder_key: key.publicJwk, actions: ["read", "pay", "delegate"] });
  assert.equal(token.token_type, "DPoP");
  const post = (headers) =>
    fetch(`${mcpUrl}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
  const asBearer = await post({ authorization: `Bearer ${token.compact_jwt}` });
  assert.equal(asBearer.status, 401);
  assert.match(asBearer.headers.get("www-authenticate"), /^DPoP error="invalid_token", error_description="dpop_required: .*algs="EdDSA Ed25519"$/);
  const noProof = await post({ authorization: `DPoP ${token.compact_jwt}` });
  assert.equal(noProof.status, 401);
  assert.equal((await noProof.json()).error, "invalid_dpop_proof");
  const wrongUrl = await post({
    authorization: `DPoP ${token.compact_jwt}`,
    dpop: key.proof({ method: "POST", url: `${mcpUrl}/other`, accessToken: token.compact_jwt }).proof,
  });
  assert.equal(wrongUrl.status, 401);
  assert.match((await wrongUrl.json()).error_description, /^dpop_url_mismatch/);

  // The SDK's own hook sees no request, so it must refuse the bound token.
  const hook = mandateTokenVerifier({ verifier, invalidTokenError: InvalidTokenError });
  await assert.rejects(hook.verifyAccessToken(token.compact_jwt), (error) => {
    assert.ok(error instanceof InvalidTokenError);
    assert.match(error.message, /^dpop_required: /);
    return true;
  });

  // With a fresh proof per request the gate lets the agent in; the tool wrapper holds no key for the token.
  const proving = (url, init) => {
    const headers = new Headers(init?.headers);
    headers.set("authorization", `DPoP ${token.compact_jwt}`);
    headers.set("dpop", key.proof({ method: init?.method ?? "GET", url: String(url), accessToken: token.compact_jwt }).proof);
    return fetch(url, { ...init, headers });
  };
  const session = await connect(undefined, { fetch: proving });
  const asked = authorizeCalls();
  const reads = runs.read;
  const result = await session.client.callTool({ name: "read_file", arguments: { path: "c.txt" } });
  assert.equal(result.isError, true);
  assert.equal(result._meta[META_ERROR], "dpop_key_not_held");
  assert.equal(authorizeCalls(), asked);
  assert.equal(runs.read, reads);

  // The agent delegates a narrower child bound to the server's key; the gate acts with it, proving with its key.
  const agent = new MandateClient({ baseUrl: live.baseUrl }).as(token.compact_jwt, { key });
  const child = await agent.delegate({
    agent_id: "files-server",
    resources: ["files:*"],
    actions: ["read"],
    holder_key: serverKey.publicJwk,
  });
  const delegated = await session.client.callTool({
    name: "read_file",
    arguments: { path: "c.txt" },
    _meta: { [META_DELEGATED_TOKEN]: child.compact_jwt },
  });
  assert.equal(delegated.isError, undefined, JSON.stringify(delegated));
  assert.equal(runs.read, reads + 1);
  const record = await owner.record(delegated._meta[META_AAR_ID]);
  assert.deepEqual(
    [record.status, record.result, record.agent_id, record.credential, record.provenance_ref],
    ["completed", "success", "files-server", "token", token.provenance_ref],
  );
  const authorize = sent.findLast((request) => request.path === "/v1/vat/authorize");
  assert.equal(authorize.headers.authorization, `DPoP ${child.compact_jwt}`);
  assert.ok(authorize.headers.dpop);

  // A token that is not the authenticated token's child is refused before anything is asked of Mandate.
  const stranger = await issue();
  const refusedChild = await session.client.callTool({
    name: "read_file",
    arguments: { path: "c.txt" },
    _meta: { [META_DELEGATED_TOKEN]: stranger.compact_jwt },
  });
  await session.close();
  assert.equal(refusedChild._meta[META_ERROR], "delegation_invalid");
  assert.equal(runs.read, reads + 1);
});

test("the SDK's requireBearerAuth with mandateTokenVerifier: AuthInfo for a valid token, 401 for a forged one", async () => {
  const token = await issue();
  const middleware = requireBearerAuth({
    verifier: mandateTokenVerifier({ verifier, invalidTokenError: InvalidTokenError }),
    requiredScopes: ["read"],
    resourceMetadataUrl: `${mcpUrl}/.well-known/oauth-protected-resource/mcp`,
  });
  const call = async (authorization) => {
    const req = { headers: { authorization } };
    const answer = { status: 0, headers: {}, body: undefined, next: false };
    const res = {
      set(name, value) {
        answer.headers[name.toLowerCase()] = value;
        return res;
      },
      status(code) {
        answer.status = code;
        return res;
      },
      json(body) {
        answer.body = body;
        return res;
      },
    };
    await middleware(req, res, () => {
      answer.next = true;
    });
    return { req, answer };
  };
  const good = await call(`Bearer ${token.compact_jwt}`);
  assert.equal(good.answer.next, true);
  const { auth } = good.req;
  assert.equal(auth.token, token.compact_jwt);
  assert.equal(auth.clientId, `mcp-agent-${agents}`);
  assert.deepEqual(auth.scopes, ["read", "pay"]);
  assert.equal(auth.expiresAt, token.claims.exp);
  assert.equal(auth.resource, undefined);
  assert.equal(auth.extra.provenanceRef, token.provenance_ref);
  assert.deepEqual(auth.extra.resources, ["files:*", "bank:*"]);
  assert.equal(auth.extra.jth, createHash("sha256").update(token.jti).digest("base64url"));
  assert.equal(auth.extra.claims.jti, undefined);
  assert.equal(JSON.stringify(auth.extra).includes(token.jti), false);

  const forged = await call(`Bearer ${token.compact_jwt.slice(0, -4)}AAAA`);
  assert.equal(forged.answer.status, 401);
  assert.equal(forged.answer.body.error, "invalid_token");
  assert.match(forged.answer.headers["www-authenticate"], /resource_metadata="/);
});

test("an approval is asked for by URL elicitation, approved by a reviewer, and then the tool runs", async () => {
  const keyOfReviewer = await owner.createKey({ role: "reviewer", email: "reviewer@example.com" });
  const reviewer = new MandateClient({ baseUrl: live.baseUrl, apiKey: keyOfReviewer.api_key });
  const token = await issue();
  let shown;
  const seen = new Promise((resolve) => {
    shown = resolve;
  });
  const session = await connect(token.compact_jwt, { onElicit: shown });
  const call = session.client.callTool({ name: "pay", arguments: { payee: "rent", amount: 120 } });
  const params = await seen;
  assert.equal(runs.pay, 0);
  assert.equal(params.mode, "url");
  assert.match(params.elicitationId, /^apr_/);
  assert.equal(params.url, owner.approvalUrl(params.elicitationId));
  const pending = await reviewer.approval(params.elicitationId);
  assert.deepEqual([pending.status, pending.action, pending.resource, pending.spend_usd], ["pending", "pay", "bank:rent", 120]);
  await reviewer.decide(params.elicitationId, { decision: "approve", note: "rent is due" });
  const result = await call;
  await session.close();
  assert.equal(runs.pay, 1);
  assert.deepEqual(result.content, [{ type: "text", text: "paid 120 to rent" }]);
  assert.deepEqual(session.completed, [params.elicitationId]);
  const record = await owner.record(result._meta[META_AAR_ID]);
  assert.equal(record.aar_id, pending.aar_id);
  assert.deepEqual(
    [record.status, record.result, record.result_hash, record.spend_usd],
    ["completed", "success", contentHash(result.content), 120],
  );
});

test("an approval covers its one call: the next call with other arguments is asked for anew, not run under it", async () => {
  const keyOfReviewer = await owner.createKey({ role: "reviewer", email: "reviewer3@example.com" });
  const reviewer = new MandateClient({ baseUrl: live.baseUrl, apiKey: keyOfReviewer.api_key });
  const token = await issue();
  const shown = [];
  let next;
  const session = await connect(token.compact_jwt, {
    onElicit: (params) => {
      shown.push(params);
      next?.(params);
    },
  });
  const elicited = () =>
    new Promise((resolve) => {
      next = resolve;
    });
  const before = runs.pay;
  let seen = elicited();
  const first = session.client.callTool({ name: "pay", arguments: { payee: "alice", amount: 150 } });
  await reviewer.decide((await seen).elicitationId, { decision: "approve" });
  assert.deepEqual((await first).content, [{ type: "text", text: "paid 150 to alice" }]);

  seen = elicited();
  const second = session.client.callTool({ name: "pay", arguments: { payee: "mallory", amount: 99999 } });
  const asked = await seen;
  assert.notEqual(asked.elicitationId, shown[0].elicitationId);
  const pending = await reviewer.approval(asked.elicitationId);
  assert.deepEqual([pending.status, pending.resource, pending.spend_usd], ["pending", "bank:mallory", 99999]);
  await reviewer.decide(asked.elicitationId, { decision: "deny" });
  const refused = await second;
  await session.close();
  assert.equal(refused._meta[META_ERROR], "approval_denied");
  assert.equal(runs.pay, before + 1, "only the approved call ran");
});

test("a denied approval is a refusal: the tool does not run", async () => {
  const keyOfReviewer = await owner.createKey({ role: "reviewer", email: "reviewer2@example.com" });
  const reviewer = new MandateClient({ baseUrl: live.baseUrl, apiKey: keyOfReviewer.api_key });
  const token = await issue();
  let shown;
  const seen = new Promise((resolve) => {
    shown = resolve;
  });
  const session = await connect(token.compact_jwt, { onElicit: shown });
  const before = runs.pay;
  const call = session.client.callTool({ name: "pay", arguments: { payee: "yacht", amount: 90 } });
  const params = await seen;
  await reviewer.decide(params.elicitationId, { decision: "deny", note: "no" });
  const result = await call;
  await session.close();
  assert.equal(runs.pay, before);
  assert.equal(result.isError, true);
  assert.equal(result._meta[META_ERROR], "approval_denied");
  assert.deepEqual(session.completed, [params.elicitationId]);
  const record = await owner.record(result._meta[META_AAR_ID]);
  assert.deepEqual([record.status, record.deny_reason], ["denied", "approval_denied"]);
});

test("a client that cannot elicit gets the SDK's URL elicitation error (-32042) naming the reviewer's page", async () => {
  const token = await issue();
  const session = await connect(token.compact_jwt, { elicit: false });
  const before = runs.pay;
  const error = await session.client.callTool({ name: "pay", arguments: { payee: "rent", amount: 10 } }).then(
    (value) => assert.fail(`expected -32042, got ${JSON.stringify(value)}`),
    (e) => e,
  );
  await session.close();
  assert.ok(error instanceof UrlElicitationRequiredError, String(error));
  assert.equal(error.code, -32042);
  const [elicitation] = error.elicitations;
  assert.equal(elicitation.mode, "url");
  assert.equal(elicitation.url, owner.approvalUrl(elicitation.elicitationId));
  assert.equal(runs.pay, before);
  const approval = await owner.approval(elicitation.elicitationId);
  assert.deepEqual([approval.status, approval.resource], ["pending", "bank:rent"]);
});

test("a tool that throws is recorded as error, and the model sees its message", async () => {
  const token = await issue();
  const session = await connect(token.compact_jwt);
  const result = await session.client.callTool({ name: "explode", arguments: {} });
  await session.close();
  assert.equal(runs.explode, 1);
  assert.equal(result.isError, true);
  assert.deepEqual(result.content, [{ type: "text", text: "disk on fire" }]);
  assert.equal(result._meta[META_ERROR], "tool_error");
  const record = await owner.record(result._meta[META_AAR_ID]);
  assert.deepEqual([record.status, record.result, record.resource], ["completed", "error", "files:boom"]);
});

test("a tool result with isError is recorded as error and returned as it is", async () => {
  const token = await issue();
  const session = await connect(token.compact_jwt);
  const result = await session.client.callTool({ name: "sulk", arguments: {} });
  await session.close();
  assert.equal(runs.sulk, 1);
  assert.equal(result.isError, true);
  assert.deepEqual(result.content, [{ type: "text", text: "not today" }]);
  assert.equal(result._meta[META_ERROR], undefined);
  const record = await owner.record(result._meta[META_AAR_ID]);
  assert.deepEqual([record.status, record.result, record.result_hash], ["completed", "error", undefined]);
});

test("the protected-resource metadata is served at its RFC 9728 path and passes the SDK's schema", async () => {
  const response = await fetch(`${mcpUrl}/.well-known/oauth-protected-resource/mcp`);
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("access-control-allow-origin"), "*");
  const document = await response.json();
  assert.deepEqual(document, {
    resource: `${mcpUrl}/mcp`,
    authorization_servers: [live.baseUrl],
    bearer_methods_supported: ["header"],
    scopes_supported: ["read", "pay"],
    resource_name: "Files",
    dpop_signing_alg_values_supported: ["EdDSA", "Ed25519"],
  });
  assert.deepEqual(OAuthProtectedResourceMetadataSchema.parse(document), document);
  assert.deepEqual(
    protectedResourceMetadata({ resource: "https://mcp.example.com/", authorizationServer: "https://mandate.example.com/", dpop: false }),
    { resource: "https://mcp.example.com/", authorization_servers: ["https://mandate.example.com"], bearer_methods_supported: ["header"] },
  );
  assert.deepEqual(
    protectedResourceMetadata({
      resource: "https://mcp.example.com/mcp",
      authorizationServer: "https://mandate.example.com",
      scopesSupported: ["read"],
      resources: ["crm:*", "crm:contacts"],
      dpop: false,
    }).scopes_supported,
    ["read", "crm:*", "crm:contacts"],
  );
  assert.equal(protectedResourceMetadataUrl("https://mcp.example.com/"), "https://mcp.example.com/.well-known/oauth-protected-resource");
  const missing = await fetch(`${mcpUrl}/mcp`, { method: "POST" });
  assert.equal(missing.status, 401);
  const challenges = missing.headers.get("www-authenticate");
  assert.match(challenges, /^Bearer error="invalid_token", error_description="Missing Authorization header", resource_metadata="[^"]+", DPoP error="invalid_token"/);
});

/** The median of a list of numbers. */
function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

test("per-call overhead of the gate over calling the tool handler directly", async (t) => {
  const CALLS = 300;
  const token = await issue();
  const handler = async ({ path }) => ({ content: [{ type: "text", text: `contents of ${path}` }] });
  const gated = mandateTool(gate, { action: "read", resource: ({ path }) => `files:${path}` }, handler);
  assert.equal((await verifier.verify(token.compact_jwt)).valid, true);
  const extra = (i) => ({
    signal: new AbortController().signal,
    requestId: i,
    authInfo: { token: token.compact_jwt, clientId: "bench", scopes: ["read"] },
    sendNotification: async () => undefined,
    sendRequest: async () => undefined,
  });
  const direct = [];
  const verify = [];
  const wrapped = [];
  for (let i = 0; i < CALLS; i += 1) {
    let start = performance.now();
    const plain = await handler({ path: `f${i}` }, extra(i));
    direct.push(performance.now() - start);
    start = performance.now();
    const checked = await verifier.verify(token.compact_jwt);
    verify.push(performance.now() - start);
    start = performance.now();
    const result = await gated({ path: `f${i}` }, extra(i));
    wrapped.push(performance.now() - start);
    assert.equal(checked.valid, true);
    assert.deepEqual(result.content, plain.content);
    assert.match(result._meta[META_AAR_ID], /^aar_/);
  }
  // The same through the whole MCP stack (HTTP, mandateAuth, the SDK): a gated tool and an ungated one, interleaved.
  const session = await connect(token.compact_jwt);
  const viaMcpPlain = [];
  const viaMcpGated = [];
  for (let i = 0; i < CALLS; i += 1) {
    let start = performance.now();
    const plain = await session.client.callTool({ name: "plain_read", arguments: { path: `g${i}` } });
    viaMcpPlain.push(performance.now() - start);
    start = performance.now();
    const gatedResult = await session.client.callTool({ name: "read_file", arguments: { path: `g${i}` } });
    viaMcpGated.push(performance.now() - start);
    assert.equal(plain.isError, undefined);
    assert.match(gatedResult._meta[META_AAR_ID], /^aar_/);
  }
  await session.close();
  const figures = {
    direct: median(direct),
    verify: median(verify),
    gated: median(wrapped),
    mcpPlain: median(viaMcpPlain),
    mcpGated: median(viaMcpGated),
  };
  t.diagnostic(
    `median ms per call over ${CALLS}: handler alone ${figures.direct.toFixed(4)}, ` +
      `offline token check ${figures.verify.toFixed(4)}, gated tool (authorize + handler + complete) ${figures.gated.toFixed(3)}; ` +
      `over MCP (HTTP, mandateAuth on both): ungated tool ${figures.mcpPlain.toFixed(3)}, gated tool ${figures.mcpGated.toFixed(3)}`,
  );
  assert.ok(figures.gated > figures.direct);
  assert.ok(figures.mcpGated > figures.mcpPlain);
  assert.ok(Number.isFinite(figures.gated) && figures.gated < 1000);
});

test("argument rules, live: a call outside them is refused offline with no authorize sent; within them it runs and its record keeps the arguments", async () => {
  const token = await issue({ constraints: { args: [{ actions: ["read"], pol: [["like", ".path", "reports/*"]] }] } });
  const session = await connect(token.compact_jwt);
  const [reads, asked] = [runs.read, authorizeCalls()];
  const refused = await session.client.callTool({ name: "read_file", arguments: { path: "secrets/key.pem" } });
  assert.equal(refused.isError, true);
  assert.equal(refused._meta[META_ERROR], "args_not_permitted");
  assert.equal(refused._meta[META_AAR_ID], undefined, "refused from the token: no record");
  assert.equal(authorizeCalls(), asked, "nothing reached Mandate");
  assert.equal(runs.read, reads);

  const result = await session.client.callTool({ name: "read_file", arguments: { path: "reports/q3.txt" } });
  await session.close();
  assert.equal(result.isError, undefined);
  assert.equal(runs.read, reads + 1);
  const record = await owner.record(result._meta[META_AAR_ID]);
  assert.deepEqual([record.status, record.resource, record.args], ["completed", "files:reports/q3.txt", { path: "reports/q3.txt" }]);
  assert.match(record.args_hash, /^sha256:[0-9a-f]{64}$/);
  const records = [];
  for await (const r of owner.records({ agent_id: token.claims.sub.slice("agent:".length) })) records.push(r);
  assert.deepEqual(records.map((r) => r.aar_id), [record.aar_id], "the refused call left no record");
});

test("require_approval.args, live: a payment over 100 is elicited and the reviewer sees its arguments; one under runs at once", async () => {
  const keyOfReviewer = await owner.createKey({ role: "reviewer", email: "reviewer4@example.com" });
  const reviewer = new MandateClient({ baseUrl: live.baseUrl, apiKey: keyOfReviewer.api_key });
  const token = await issue({ constraints: { require_approval: { args: [[">", ".amount", 100]] } } });
  let shown;
  const seen = new Promise((resolve) => {
    shown = resolve;
  });
  const session = await connect(token.compact_jwt, { onElicit: shown });
  const before = runs.pay;
  const small = await session.client.callTool({ name: "pay", arguments: { payee: "cafe", amount: 12 } });
  assert.deepEqual(small.content, [{ type: "text", text: "paid 12 to cafe" }]);
  assert.equal(session.elicited.length, 0, "under the threshold: no approval asked");

  const call = session.client.callTool({ name: "pay", arguments: { payee: "landlord", amount: 1500 } });
  const params = await seen;
  assert.equal(runs.pay, before + 1);
  const pending = await reviewer.approval(params.elicitationId);
  assert.deepEqual([pending.status, pending.resource, pending.args], ["pending", "bank:landlord", { payee: "landlord", amount: 1500 }]);
  assert.equal(pending.args_hash, (await owner.record(pending.aar_id)).args_hash);
  await reviewer.decide(params.elicitationId, { decision: "approve" });
  const result = await call;
  await session.close();
  assert.deepEqual(result.content, [{ type: "text", text: "paid 1500 to landlord" }]);
  assert.equal(runs.pay, before + 2);
});

test("the gate checks a token's aud against its resource: if-present by default, required on demand", async () => {
  const resource = "https://mcp.example.com/mcp";
  const base = {
    iss: "https://mandate.example.com",
    sub: "agent:crm-bot",
    iat: 1,
    nbf: 1,
    exp: 4_000_000_000,
    jti: "vat_root_01jdxk0000000000000000000a",
    svc_trust_score: 0.4,
    svc_scope: { resources: ["files:*"], actions: ["read"] },
    svc_prov: "prov_01jdxk0000000000000000000b",
    svc_human: `sha256:${"0".repeat(64)}`,
    svc_assurance: "L1",
    svc_depth: 0,
  };
  /** A verifier that passes every token with the claims of its name. */
  const claimsOf = {
    none: base,
    mine: { ...base, aud: resource },
    spelled: { ...base, aud: "https://MCP.example.com:443/mcp" },
    under: { ...base, aud: `${resource}/tools` },
    other: { ...base, aud: "https://other.example.com/mcp" },
  };
  const fixed = { verify: (token) => ({ valid: true, header: {}, claims: claimsOf[token] }) };
  const call = async (options, token) => {
    const res = {
      statusCode: 0,
      headers: {},
      body: undefined,
      setHeader(name, value) {
        this.headers[name] = value;
      },
      end(body) {
        this.body = body === undefined ? undefined : JSON.parse(body);
      },
    };
    let passed = false;
    await mandateAuth({ verifier: fixed, ...options })({ headers: { authorization: `Bearer ${token}` } }, res, () => {
      passed = true;
    });
    return { passed, status: res.statusCode, body: res.body, challenge: res.headers["www-authenticate"] };
  };
  const cases = [
    // [options, token, passes, description prefix]
    [{ resource }, "none", true],
    [{ resource }, "mine", true],
    [{ resource }, "spelled", true],
    [{ resource }, "under", false, "audience_mismatch"],
    [{ resource }, "other", false, "audience_mismatch"],
    [{}, "none", true],
    [{}, "mine", false, "audience_mismatch"],
    [{ resource, audience: "if-present" }, "other", false, "audience_mismatch"],
    [{ resource, audience: "required" }, "mine", true],
    [{ resource, audience: "required" }, "none", false, "audience_required"],
    [{ resource, audience: "required" }, "other", false, "audience_mismatch"],
  ];
  for (const [options, token, passes, code] of cases) {
    const answer = await call(options, token);
    const label = `${JSON.stringify(options)} ${token}`;
    assert.equal(answer.passed, passes, label);
    if (!passes) {
      assert.equal(answer.status, 401, label);
      assert.equal(answer.body.error, "invalid_token", label);
      assert.ok(answer.body.error_description.startsWith(`${code}: `), `${label}: ${answer.body.error_description}`);
      assert.match(answer.challenge[0], /^Bearer error="invalid_token", error_description="audience_/, label);
    }
  }
  const other = await call({ resource }, "other");
  assert.equal(
    other.body.error_description,
    `audience_mismatch: the token is for https://other.example.com/mcp, not for this server (${resource})`,
  );

  assert.throws(() => mandateAuth({ verifier: fixed, audience: "required" }), /audience "required" needs the server's resource/);
  assert.throws(() => mandateAuth({ verifier: fixed, resource, audience: "always" }), /audience must be "required" or "if-present"/);

  // The SDK's requireBearerAuth hook checks the audience the same way.
  const hook = mandateTokenVerifier({ verifier: fixed, invalidTokenError: InvalidTokenError, resource, audience: "required" });
  const mine = await hook.verifyAccessToken("mine");
  assert.deepEqual([mine.clientId, mine.resource?.href], ["crm-bot", resource]);
  await assert.rejects(hook.verifyAccessToken("none"), (error) => error instanceof InvalidTokenError && /^audience_required: /.test(error.message));
  await assert.rejects(hook.verifyAccessToken("other"), (error) => error instanceof InvalidTokenError && /^audience_mismatch: /.test(error.message));
  assert.throws(() => mandateTokenVerifier({ verifier: fixed, invalidTokenError: InvalidTokenError, audience: "required" }), TypeError);
});
