// The MCP gate relaying a stock client's DPoP proof (docs/oauth.md, "The
// gate relays the client's proof") against a live `mandate serve` with
// `[oauth]` on: the client holds a token bound to its own key for the MCP
// server's resource; the gate, holding no key of the token, forwards the
// client's proof and adds its own by a relay key registered for the
// resource. MANDATE_BIN names the server binary.
import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

import { MandateClient, MandateError, createRemoteVerifier, generateAgentKey } from "mandate-sdk";
import { META_AAR_ID, META_ERROR, mandateAuth, mandateAuthOf, mandateTool } from "mandate-sdk/mcp";

import { freePort, startServer } from "./live-server.mjs";

const VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CALLBACK = "http://127.0.0.1/callback";

let live;
let owner;
let verifier;
let mcp;
let resource;
const sessions = new Map();
/** The gate's relay key, registered for `resource`; and one that is not. */
const relayKey = generateAgentKey();
const strangerKey = generateAgentKey();
/** Which relay key each session's gate uses (`x-test-relay` header: "registered", "stranger", "none"). */
const relayKeys = { registered: relayKey, stranger: strangerKey, none: undefined };
/** Every request the gates send to Mandate. */
const sent = [];
let runs = 0;

function buildServer(gate, relay) {
  const server = new McpServer({ name: "crm", version: "1.0.0" });
  server.registerTool(
    "read_lead",
    { inputSchema: { id: z.string() } },
    mandateTool(
      gate,
      { action: "read", resource: ({ id }) => `crm:lead/${id}` },
      async ({ id }, extra) => {
        runs += 1;
        return { content: [{ type: "text", text: `lead ${id} for ${mandateAuthOf(extra.authInfo)?.agentId}` }] };
      },
      relay === undefined ? {} : { relayKey: relay },
    ),
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

async function serveMcp(gate, req, res) {
  const body = req.method === "POST" ? await bodyOf(req) : undefined;
  const id = req.headers["mcp-session-id"];
  let transport = id === undefined ? undefined : sessions.get(id);
  if (transport === undefined) {
    const relay = relayKeys[req.headers["x-test-relay"] ?? "registered"];
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => sessions.set(sessionId, transport),
    });
    await buildServer(gate, relay).connect(transport);
  }
  await transport.handleRequest(req, res, body);
}

/** A call of the OAuth admin API with the owner's key (the client has no method for it); its JSON answer. */
async function admin(path, body) {
  const response = await fetch(`${live.baseUrl}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${live.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  assert.equal(response.status, 201, await response.clone().text());
  return response.json();
}

/** A form body (RFC 6749 §3.2). */
function form(fields) {
  return new URLSearchParams(fields).toString();
}

/**
 * The OAuth flow as a client and a person would run it, by API: the
 * authorization request, the person's approval (a developer key), the code
 * redeemed: a token for `resource` that may read and delegate.
 */
async function grant(developerKey, clientId) {
  const challenge = createHash("sha256").update(VERIFIER).digest("base64url");
  const query = form({
    response_type: "code",
    client_id: clientId,
    redirect_uri: CALLBACK,
    code_challenge: challenge,
    code_challenge_method: "S256",
    resource,
    scope: "read delegate crm:*",
    state: "s",
  });
  const start = await fetch(`${live.baseUrl}/v1/oauth/authorize?${query}`, { redirect: "manual" });
  assert.equal(start.status, 303);
  const sealed = new URL(start.headers.get("location")).searchParams.get("request");
  const decision = await fetch(`${live.baseUrl}/v1/oauth/requests/decision`, {
    method: "POST",
    headers: { authorization: `Bearer ${developerKey}`, "content-type": "application/json" },
    body: JSON.stringify({
      request: sealed,
      decision: "approve",
      grant: { actions: ["read", "delegate"], resources: ["crm:*"] },
    }),
  });
  assert.equal(decision.status, 200);
  const code = new URL((await decision.json()).redirect).searchParams.get("code");
  const token = await fetch(`${live.baseUrl}/v1/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: form({
      grant_type: "authorization_code",
      code,
      client_id: clientId,
      redirect_uri: CALLBACK,
      code_verifier: VERIFIER,
      resource,
    }),
  });
  assert.equal(token.status, 200);
  return (await token.json()).access_token;
}

/** The client's key and its bound token for `resource` (delegated from the OAuth token with `holder_key`). */
let clientKey;
let bound;

before(async () => {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  live = await startServer({
    listen: `127.0.0.1:${port}`,
    config: `public_url = "${issuer}"\nissuer = "${issuer}"\n\n[oauth]\nenabled = true\n`,
  });
  owner = new MandateClient({ baseUrl: live.baseUrl, apiKey: live.apiKey });
  const gate = new MandateClient({
    baseUrl: live.baseUrl,
    fetch: (url, init) => {
      sent.push({ path: new URL(url).pathname, headers: init.headers });
      return fetch(url, init);
    },
  });
  verifier = await createRemoteVerifier({ baseUrl: live.baseUrl, maxStalenessSeconds: 300 });
  mcp = createServer();
  await new Promise((resolve) => mcp.listen(0, "127.0.0.1", resolve));
  resource = `http://127.0.0.1:${mcp.address().port}/mcp`;
  const auth = mandateAuth({ verifier, resource, audience: "required" });
  mcp.on("request", (req, res) => {
    const fail = (error) => {
      res.statusCode = 500;
      res.end(String(error));
    };
    auth(req, res, () => serveMcp(gate, req, res).catch(fail)).catch(fail);
  });

  const client = await admin("/v1/oauth/clients", { name: "Stock client", redirect_uris: [CALLBACK] });
  const developer = await owner.createKey({ role: "developer", email: "dev@example.com" });
  const access = await grant(developer.api_key, client.client_id);
  clientKey = generateAgentKey();
  const child = await new MandateClient({ baseUrl: live.baseUrl }).as(access).delegate({
    agent_id: "stock-client",
    resources: ["crm:*"],
    actions: ["read"],
    holder_key: clientKey.publicJwk,
  });
  bound = child.compact_jwt;
  assert.equal(child.claims.aud, resource);
  await admin("/v1/oauth/resources", { resource, relay_jkts: [relayKey.jkt] });
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

/** A stock MCP client with its DPoP token: a fresh proof by its own key on every request to the MCP server. */
async function connect(relay = "registered") {
  const proving = (url, init) => {
    const headers = new Headers(init?.headers);
    headers.set("authorization", `DPoP ${bound}`);
    headers.set("dpop", clientKey.proof({ method: init?.method ?? "GET", url: String(url), accessToken: bound }).proof);
    headers.set("x-test-relay", relay);
    return fetch(url, { ...init, headers });
  };
  const client = new Client({ name: "stock", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(resource), { fetch: proving }));
  return client;
}

test("the gate relays the client's proof: the tool runs and its record is completed through the relay", async () => {
  const client = await connect();
  const before = runs;
  const result = await client.callTool({ name: "read_lead", arguments: { id: "7" } });
  await client.close();
  assert.equal(result.isError, undefined, JSON.stringify(result));
  assert.equal(runs, before + 1);
  const record = await owner.record(result._meta[META_AAR_ID]);
  assert.deepEqual([record.status, record.result, record.agent_id], ["completed", "success", "stock-client"]);
  const authorize = sent.findLast((request) => request.path === "/v1/vat/authorize");
  assert.equal(authorize.headers.authorization, `DPoP ${bound}`);
  assert.ok(authorize.headers["mandate-client-dpop"]);
  assert.ok(authorize.headers["mandate-relay"]);
  assert.equal(authorize.headers.dpop, undefined);
  const complete = sent.findLast((request) => request.path.endsWith("/complete"));
  assert.ok(complete.headers["mandate-relay"]);
  assert.equal(complete.headers["mandate-client-dpop"], undefined);
});

test("a relay key nobody registered for the resource is refused, and the tool does not run", async () => {
  const client = await connect("stranger");
  const before = runs;
  const result = await client.callTool({ name: "read_lead", arguments: { id: "8" } });
  await client.close();
  assert.equal(result.isError, true);
  assert.equal(result._meta[META_ERROR], "relay_not_registered");
  assert.equal(runs, before);
});

test("without a relay key the gate refuses a token bound to the client's key", async () => {
  const client = await connect("none");
  const result = await client.callTool({ name: "read_lead", arguments: { id: "9" } });
  await client.close();
  assert.equal(result._meta[META_ERROR], "dpop_key_not_held");
});

test("client.act with forwardedProof: a captured client proof acts once, a replay is refused", async () => {
  const gate = new MandateClient({ baseUrl: live.baseUrl });
  const forwardedProof = clientKey.proof({ method: "POST", url: resource, accessToken: bound }).proof;
  const request = { action: "read", resource: "crm:lead/10" };
  const options = { relayKey, forwardedProof };
  const first = await gate.act(bound, request, (context) => context.aarId, options);
  assert.match(first, /^aar_/);
  await assert.rejects(
    gate.act(bound, request, () => "ran", options),
    (error) => error instanceof MandateError && error.code === "client_proof_invalid" && error.problem.reason === "dpop_replayed",
  );
  // A proof for another resource's URL.
  const elsewhere = clientKey.proof({ method: "POST", url: "http://127.0.0.1:1/other", accessToken: bound }).proof;
  await assert.rejects(
    gate.act(bound, request, () => "ran", { relayKey, forwardedProof: elsewhere }),
    (error) => error instanceof MandateError && error.problem.reason === "client_proof_outside_audience",
  );
});
