// The MCP TypeScript SDK's own OAuth client against Mandate as the
// authorization server (issue 35; plan row C7): the example CRM's MCP
// server (examples/mcp-crm) is the protected resource; the SDK's
// `StreamableHTTPClientTransport` with an `authProvider` (the SDK's
// `OAuthClientProvider` interface, implemented here in memory) meets the
// server's 401, finds Mandate in the RFC 9728 metadata, names itself by
// the https URL of its client metadata document (CIMD: the SDK's
// `clientMetadataUrl`, served over the API tests' test certificate
// authority, trusted through `[oauth.client_documents] extra_roots`) and
// sends the person to the consent page. There Chromium signs in with a
// developer key, as the person would, and approves; the code on the
// callback goes to `transport.finishAuth`, and the SDK's client calls
// `crm_lookup`: the tool ran, and its record is in that person's workflow.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer as createHttpsServer } from "node:https";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { META_AAR_ID } from "mandate-sdk/mcp";

import { startCrmServer } from "../../examples/mcp-crm/server.mjs";
import { approveConsent, freePort, launchBrowser, startServer } from "./harness.mjs";

const TLS = fileURLToPath(new URL("../../host/tests/fixtures/cimd-tls/", import.meta.url));

let server;
let crm;
let browser;
let documents;
let developerKey;

/** An HTTPS server on loopback (the test certificate) answering one client metadata document at `/sdk-client.json`. */
async function startDocuments() {
  const state = { hits: 0, document: undefined };
  const https = createHttpsServer(
    { cert: readFileSync(`${TLS}server.pem`), key: readFileSync(`${TLS}server.key`) },
    (request, response) => {
      state.hits += 1;
      if (new URL(request.url, "https://127.0.0.1").pathname !== "/sdk-client.json" || state.document === undefined) {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(state.document));
    },
  );
  await new Promise((resolve) => https.listen(0, "127.0.0.1", resolve));
  return {
    state,
    url: `https://127.0.0.1:${https.address().port}/sdk-client.json`,
    close: () => new Promise((resolve) => https.close(resolve)),
  };
}

/**
 * The SDK's `OAuthClientProvider`, in memory: a CIMD client
 * (`clientMetadataUrl`); `redirectToAuthorization` hands the URL to the
 * person in Chromium, and `landing` is where the browser came back.
 */
class MemoryProvider {
  constructor(clientMetadataUrl, redirectUrl) {
    this.clientMetadataUrl = clientMetadataUrl;
    this.redirectUrl = redirectUrl;
    this.stored = {};
    this.landing = undefined;
  }

  get clientMetadata() {
    return {
      client_name: "MCP TypeScript SDK",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }

  clientInformation() {
    return this.stored.client;
  }

  saveClientInformation(information) {
    this.stored.client = information;
  }

  tokens() {
    return this.stored.tokens;
  }

  saveTokens(tokens) {
    this.stored.tokens = tokens;
  }

  redirectToAuthorization(url) {
    this.authorizationUrl = url;
    this.landing = approveConsent(browser, url, developerKey);
  }

  saveCodeVerifier(verifier) {
    this.stored.verifier = verifier;
  }

  codeVerifier() {
    return this.stored.verifier;
  }
}

before(async () => {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  server = await startServer({
    listen: `127.0.0.1:${port}`,
    config:
      `public_url = "${issuer}"\nissuer = "${issuer}"\n\n[oauth]\nenabled = true\n\n` +
      `[oauth.client_documents]\nallow_loopback = true\nextra_roots = [${JSON.stringify(`${TLS}ca.pem`)}]\n`,
  });
  documents = await startDocuments();
  crm = await startCrmServer({ mandateUrl: issuer });
  browser = await launchBrowser();
  developerKey = (await server.api.createKey({ role: "developer", email: "dev@example.com" })).api_key;
});

after(async () => {
  await browser?.close();
  await crm?.close();
  await documents?.close();
  await server?.stop();
});

test("the SDK's OAuth provider (CIMD) completes the flow through the consent page, and its tool call records in the person's workflow", async () => {
  const provider = new MemoryProvider(documents.url, "http://127.0.0.1:8976/callback");
  documents.state.document = { client_id: documents.url, ...provider.clientMetadata };
  const client = new Client({ name: "sdk-oauth", version: "1.0.0" });

  // No token: the SDK meets the 401, discovers, and sends the person to consent.
  await assert.rejects(
    client.connect(new StreamableHTTPClientTransport(new URL(crm.url), { authProvider: provider })),
    UnauthorizedError,
  );
  assert.equal(provider.stored.client.client_id, documents.url, "the SDK named itself by its metadata document's URL");
  const authorization = provider.authorizationUrl;
  assert.equal(authorization.searchParams.get("client_id"), documents.url);
  assert.equal(authorization.searchParams.get("resource"), crm.url);
  assert.equal(authorization.searchParams.get("code_challenge_method"), "S256");
  const landing = await provider.landing;
  assert.equal(landing.searchParams.get("iss"), server.base);
  assert.ok(documents.state.hits >= 1, "Mandate fetched the client's document");

  const transport = new StreamableHTTPClientTransport(new URL(crm.url), { authProvider: provider });
  await transport.finishAuth(landing.searchParams.get("code"));
  assert.equal(provider.stored.tokens.token_type, "Bearer");
  const claims = JSON.parse(Buffer.from(provider.stored.tokens.access_token.split(".")[1], "base64url").toString());
  assert.equal(claims.aud, crm.url);

  await client.connect(transport);
  const result = await client.callTool({ name: "crm_lookup", arguments: { contact_id: "c-1001" } });
  await client.close();
  assert.equal(result.isError, undefined, JSON.stringify(result));
  assert.equal(JSON.parse(result.content[0].text).name, "Ada Lovelace");

  // The record, completed, in the workflow of the grant the person gave (their key sees their own grants).
  const record = await server.api.call("GET", `/v1/vat/aar/${result._meta[META_AAR_ID]}`, undefined, { key: developerKey });
  assert.deepEqual(
    [record.status, record.result, record.action, record.resource],
    ["completed", "success", "read", "crm:contact/c-1001"],
  );
  const { grants } = await server.api.call("GET", "/v1/oauth/grants", undefined, { key: developerKey });
  assert.equal(grants.length, 1);
  assert.deepEqual([grants[0].client_id, grants[0].resource], [documents.url, crm.url]);
  assert.equal(record.human_ref, grants[0].human_ref);
  const { workflows } = await server.api.call(
    "GET",
    `/v1/vat/workflows?human_ref=${encodeURIComponent(record.human_ref)}`,
    undefined,
    { key: developerKey },
  );
  assert.deepEqual(
    workflows.map((workflow) => workflow.provenance_ref),
    [record.provenance_ref],
  );
  const summary = await server.api.call("GET", `/v1/vat/aar/provenance/${record.provenance_ref}`, undefined, {
    key: developerKey,
  });
  assert.deepEqual([summary.total_records, summary.actions_by_type], [1, { read: 1 }]);
});
