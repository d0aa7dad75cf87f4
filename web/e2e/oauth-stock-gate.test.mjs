// A stock OAuth client through the MCP gate (docs/oauth.md, "The gate
// relays the client's proof"): oauth4webapi (pinned, not our code) finds
// the authorization server in the MCP server's RFC 9728 metadata, obtains
// a DPoP-bound token for that resource (PKCE, `resource`, its own DPoP
// key), then the MCP TypeScript SDK's client calls a tool with every HTTP
// request made by oauth4webapi's `protectedResourceRequest` — its own DPoP
// proof for the MCP server's URL. The server is the MCP SDK's, gated by
// `mandate-sdk/mcp` (`mandateAuth`, `mandateTool` with a `relayKey`
// registered at /v1/oauth/resources). The call is allowed and its record
// completed; a Bearer presentation of the bound token, a replayed proof, a
// proof by another key and a token for another resource are refused, and
// the tool does not run.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { MandateClient, createRemoteVerifier, generateAgentKey } from "mandate-sdk";
import { META_AAR_ID, mandateAuth, mandateTool, protectedResourceMetadataHandler } from "mandate-sdk/mcp";
import * as oauth from "oauth4webapi";
import { z } from "zod";

import { freePort, startServer } from "./harness.mjs";

// The servers run on loopback over plain http, as `[oauth]` allows for 127.0.0.1.
const insecure = { [oauth.allowInsecureRequests]: true };
const REDIRECT = "http://127.0.0.1:8976/callback";

let server;
let issuer;
let developer;
let mcp;
let resource;
let verifier;
let runs = 0;
/** The gate's relay key; its thumbprint is registered for `resource`. */
const relayKey = generateAgentKey();

/** The MCP server for one request (stateless): one tool, gated by Mandate, relaying the client's proof. */
function buildServer(gate) {
  const built = new McpServer({ name: "crm", version: "1.0.0" });
  built.registerTool(
    "read_contact",
    { inputSchema: { id: z.string() } },
    mandateTool(
      gate,
      { action: "read", resource: ({ id }) => `crm:contacts/${id}` },
      async ({ id }) => {
        runs += 1;
        return { content: [{ type: "text", text: `contact ${id}` }] };
      },
      { relayKey },
    ),
  );
  return built;
}

async function bodyOf(req) {
  let text = "";
  for await (const chunk of req) {
    text += chunk;
  }
  return text === "" ? undefined : JSON.parse(text);
}

before(async () => {
  const port = await freePort();
  issuer = `http://127.0.0.1:${port}`;
  server = await startServer({
    listen: `127.0.0.1:${port}`,
    config: `public_url = "${issuer}"\nissuer = "${issuer}"\n\n[oauth]\nenabled = true\n`,
  });
  developer = (await server.api.createKey({ role: "developer", email: "dev@example.com" })).api_key;
  verifier = await createRemoteVerifier({ baseUrl: issuer, maxStalenessSeconds: 300 });
  const gate = new MandateClient({ baseUrl: issuer });

  mcp = createServer();
  await new Promise((resolve) => mcp.listen(0, "127.0.0.1", resolve));
  resource = `http://127.0.0.1:${mcp.address().port}/mcp`;
  const metadata = protectedResourceMetadataHandler({
    resource,
    authorizationServer: issuer,
    scopesSupported: ["read"],
    resources: ["crm:*"],
  });
  const auth = mandateAuth({
    verifier,
    resource,
    audience: "required",
    resourceMetadataUrl: `http://127.0.0.1:${mcp.address().port}/.well-known/oauth-protected-resource/mcp`,
  });
  mcp.on("request", (req, res) => {
    const fail = (error) => {
      res.statusCode = 500;
      res.end(String(error));
    };
    metadata(req, res, () =>
      auth(req, res, async () => {
        if (req.method !== "POST") {
          // Stateless: no stream of server-sent messages.
          res.statusCode = 405;
          res.end();
          return;
        }
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
        await buildServer(gate).connect(transport);
        await transport.handleRequest(req, res, await bodyOf(req));
      }).catch(fail),
    ).catch(fail);
  });

  await server.api.call("POST", "/v1/oauth/resources", { resource, relay_jkts: [relayKey.jkt] });
});

after(async () => {
  mcp?.closeAllConnections();
  mcp?.close();
  verifier?.free();
  await server?.stop();
});

/**
 * What a stock client does for `target`: RFC 9728 discovery at the MCP
 * server (when `target` is it), RFC 8414 discovery at the authorization
 * server it names, the authorization request (PKCE S256, `resource`), the
 * human's approval (the consent page's JSON API, a developer key), the
 * code redeemed with a DPoP proof by `keys`. Answers the token response.
 */
async function obtain(target, keys, { discover = true } = {}) {
  let authorizationServer = new URL(issuer);
  if (discover) {
    const rs = await oauth.processResourceDiscoveryResponse(
      new URL(target),
      await oauth.resourceDiscoveryRequest(new URL(target), insecure),
    );
    assert.deepEqual(rs.authorization_servers, [issuer]);
    assert.ok(rs.dpop_signing_alg_values_supported.includes("Ed25519"));
    authorizationServer = new URL(rs.authorization_servers[0]);
  }
  const as = await oauth.processDiscoveryResponse(
    authorizationServer,
    await oauth.discoveryRequest(authorizationServer, { algorithm: "oauth2", ...insecure }),
  );
  const registered = await server.api.call("POST", "/v1/oauth/clients", {
    name: "oauth4webapi",
    redirect_uris: ["http://127.0.0.1/callback"],
  });
  const client = { client_id: registered.client_id };
  const verifierCode = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const authorize = new URL(as.authorization_endpoint);
  for (const [name, value] of Object.entries({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    scope: "read crm:*",
    resource: target,
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifierCode),
    code_challenge_method: "S256",
  })) {
    authorize.searchParams.set(name, value);
  }
  const toConsent = await fetch(authorize, { redirect: "manual" });
  assert.equal(toConsent.status, 303);
  const sealed = new URL(toConsent.headers.get("location"), issuer).searchParams.get("request");
  const { redirect } = await server.api.call(
    "POST",
    "/v1/oauth/requests/decision",
    { request: sealed, decision: "approve", grant: { actions: ["read"], resources: ["crm:*"] } },
    { key: developer },
  );
  const callback = oauth.validateAuthResponse(as, client, new URL(redirect), state);
  const tokens = await oauth.processAuthorizationCodeResponse(
    as,
    client,
    await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), callback, REDIRECT, verifierCode, {
      DPoP: oauth.DPoP(client, keys),
      additionalParameters: { resource: target },
      ...insecure,
    }),
  );
  assert.equal(tokens.token_type, "dpop");
  return { token: tokens.access_token, client };
}

/**
 * The MCP SDK's client whose every HTTP request is oauth4webapi's
 * `protectedResourceRequest` with `DPoP` (a fresh proof by its key for the
 * request's method and URL); `sent` collects what went on the wire.
 */
async function connect(token, DPoP, sent = []) {
  const recording = (url, init) => {
    sent.push({ url, init });
    return fetch(url, init);
  };
  const stock = (url, init) =>
    oauth.protectedResourceRequest(token, init?.method ?? "GET", new URL(url), new Headers(init?.headers), init?.body ?? null, {
      DPoP,
      [oauth.customFetch]: recording,
      ...insecure,
    });
  const client = new Client({ name: "stock", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(resource), { fetch: stock }));
  return client;
}

/** A `tools/call` of read_contact as JSON-RPC over HTTP (what the SDK client sends). */
function toolCall(id) {
  return JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "read_contact", arguments: { id } } });
}

/** The MCP server's answer to a single JSON-RPC request sent with `headers`: its status and JSON-RPC message or error body. */
async function post(headers, body) {
  const response = await fetch(resource, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body,
  });
  const text = await response.text();
  const data = text.split("\n").find((line) => line.startsWith("data: "));
  return { status: response.status, challenge: response.headers.get("www-authenticate"), body: JSON.parse(data ? data.slice(6) : text) };
}

test("a stock client's DPoP-bound token calls a tool through the gate, and its record is completed", async () => {
  // Without a token the MCP server names its metadata, where the client starts.
  const anonymous = await post({}, toolCall("0"));
  assert.equal(anonymous.status, 401);
  assert.match(anonymous.challenge, /resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"/);

  const keys = await oauth.generateKeyPair("Ed25519");
  const { token, client } = await obtain(resource, keys);
  const claims = JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString());
  assert.equal(claims.aud, resource);
  assert.ok(claims.cnf.jkt);

  const sent = [];
  const mcpClient = await connect(token, oauth.DPoP(client, keys), sent);
  const before = runs;
  const result = await mcpClient.callTool({ name: "read_contact", arguments: { id: "7" } });
  await mcpClient.close();
  assert.equal(result.isError, undefined, JSON.stringify(result));
  assert.deepEqual(result.content, [{ type: "text", text: "contact 7" }]);
  assert.equal(runs, before + 1);
  const record = await server.api.call("GET", `/v1/vat/aar/${result._meta[META_AAR_ID]}`);
  assert.deepEqual(
    [record.status, record.result, record.action, record.resource],
    ["completed", "success", "read", "crm:contacts/7"],
  );

  // The same tool call again, byte for byte with the same proof: a replay, refused.
  const call = sent.find(({ init }) => typeof init.body === "string" && init.body.includes('"tools/call"'));
  assert.ok(call, "the client sent the tool call");
  assert.match(call.init.headers.authorization, /^DPoP /);
  const replayed = await post(call.init.headers, call.init.body);
  assert.equal(runs, before + 1, "a replayed proof runs nothing");
  // The gate's verifier keeps the proofs it took (Mandate would refuse it too: one use, in its DPoP replay store).
  assert.equal(replayed.status, 401);
  assert.deepEqual(replayed.body, { error: "invalid_dpop_proof", error_description: "dpop_replayed: the proof was used before" });
});

test("the bound token presented as Bearer, with a proof by another key, or for another resource is refused", async () => {
  const keys = await oauth.generateKeyPair("Ed25519");
  const { token, client } = await obtain(resource, keys);
  const before = runs;

  // Bearer only: oauth4webapi without its DPoP handle.
  const bearer = await post({ authorization: `Bearer ${token}` }, toolCall("1"));
  assert.equal(bearer.status, 401);
  assert.equal(bearer.body.error, "invalid_token");

  // The token with a proof made by another key.
  const other = oauth.DPoP(client, await oauth.generateKeyPair("Ed25519"));
  const refusedByKey = await oauth
    .protectedResourceRequest(token, "POST", new URL(resource), new Headers({ "content-type": "application/json", accept: "application/json, text/event-stream" }), toolCall("2"), {
      DPoP: other,
      ...insecure,
    })
    .then(
      () => assert.fail("a proof by another key was taken"),
      (error) => error,
    );
  assert.ok(refusedByKey instanceof oauth.WWWAuthenticateChallengeError, String(refusedByKey));
  assert.equal(refusedByKey.response.status, 401);
  assert.equal(refusedByKey.cause[0].parameters.error, "invalid_dpop_proof");

  // A token the same client obtained, bound to its key, but for another resource (`aud`).
  const elsewhere = await obtain("https://other.example/mcp", keys, { discover: false });
  const refusedByAudience = await oauth
    .protectedResourceRequest(elsewhere.token, "POST", new URL(resource), new Headers({ "content-type": "application/json", accept: "application/json, text/event-stream" }), toolCall("3"), {
      DPoP: oauth.DPoP(elsewhere.client, keys),
      ...insecure,
    })
    .then(
      () => assert.fail("a token for another resource was taken"),
      (error) => error,
    );
  assert.ok(refusedByAudience instanceof oauth.WWWAuthenticateChallengeError, String(refusedByAudience));
  assert.equal(refusedByAudience.response.status, 401);
  assert.equal(refusedByAudience.cause[0].parameters.error, "invalid_token");
  assert.match(refusedByAudience.cause[0].parameters.error_description, /^audience_mismatch/);
  assert.equal(runs, before, "no refused call ran the tool");
});
