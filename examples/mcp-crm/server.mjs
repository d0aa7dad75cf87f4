// The CRM's MCP server: two tools over Streamable HTTP, each call gated by
// Mandate. The server holds no API key. An agent's VAT is its OAuth access
// token: `mandateAuth` checks it offline (the key set and status lists of
// the Mandate server, fetched by `createRemoteVerifier`), and `mandateTool`
// runs each call as authorize → tool → complete with that token, so every
// call is a record in the agent's workflow. `send_email` needs a reviewer's
// yes when the token's grant says so (`constraints.require_approval`): the
// client is sent the reviewer's page by URL-mode elicitation and the call
// waits for the decision.
//
// It is also an OAuth protected resource (RFC 9728): its metadata names
// Mandate as its authorization server and lists the scopes a stock MCP
// client asks for (the actions, then the resource patterns); a token naming
// an audience (`aud`, RFC 8707) passes only when it names this server. A
// stock client's token bound to its own DPoP key is relayed to Mandate
// with the client's proof and a relay key of this server's, registered for
// the resource (docs/oauth.md, "The gate relays the client's proof").
//
// `node server.mjs` serves it alone (on MCP_PORT, default 3333) and prints
// its relay key's thumbprint; `run.mjs` starts it in-process with the agent.
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { UrlElicitationRequiredError, isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { MandateClient, createRemoteVerifier, generateAgentKey } from "mandate-sdk";
import {
  mandateAuth,
  mandateAuthOf,
  mandateTool,
  protectedResourceMetadataHandler,
  protectedResourceMetadataUrl,
} from "mandate-sdk/mcp";
import { z } from "zod";

/** The CRM's contacts: what `crm_lookup` reads. */
export const CONTACTS = new Map([
  ["c-1001", { id: "c-1001", name: "Ada Lovelace", email: "ada@example.com", company: "Analytical Engines Ltd", stage: "renewal due" }],
  ["c-1002", { id: "c-1002", name: "Grace Hopper", email: "grace@example.com", company: "Compilers Inc", stage: "new lead" }],
]);

/** The largest request body the server reads, bytes. */
const MAX_BODY_BYTES = 1 << 20;

/** A request refused before it reached the MCP transport. */
export class RequestRefused extends Error {
  /**
   * @param {number} status the HTTP status it is answered with
   * @param {string} message what went wrong
   */
  constructor(status, message) {
    super(message);
    this.name = "RequestRefused";
    this.status = status;
  }
}

/**
 * @typedef {object} SentEmail
 * @property {string} id
 * @property {string} to
 * @property {string} subject
 * @property {string} body
 * @property {string} aarId the Mandate record of the call that sent it
 */

/**
 * @typedef {object} CrmServer
 * @property {string} url the MCP endpoint, `http://127.0.0.1:<port>/mcp`
 * @property {SentEmail[]} outbox what `send_email` sent (this demo sends nothing for real)
 * @property {string} relayJkt the RFC 7638 thumbprint of its relay key, to register for `url` at /v1/oauth/resources
 * @property {() => Promise<void>} close stops the server and its sessions
 */

/**
 * Starts the MCP server.
 *
 * @param {object} options
 * @param {string} options.mandateUrl the Mandate server's base URL (its tokens' issuer)
 * @param {number} [options.port] 0 (the default) picks a free port
 * @param {string} [options.host] default 127.0.0.1
 * @param {number} [options.approvalTimeoutSeconds] how long a call waits for a reviewer, default 300
 * @param {import("mandate-sdk").AgentKey} [options.relayKey] the key it relays stock clients' DPoP proofs with; a new one by default
 * @returns {Promise<CrmServer>}
 */
export async function startCrmServer({
  mandateUrl,
  port = 0,
  host = "127.0.0.1",
  approvalTimeoutSeconds = 300,
  relayKey = generateAgentKey(),
}) {
  // The agent's token authorizes each call; the server needs no credential of its own.
  const mandate = new MandateClient({ baseUrl: mandateUrl });
  // A revocation reaches this server within 60 s, without asking Mandate per call.
  const verifier = await createRemoteVerifier({ baseUrl: mandateUrl, maxStalenessSeconds: 60 });
  /** @type {SentEmail[]} */
  const outbox = [];
  /** @type {Map<string, { transport: StreamableHTTPServerTransport, jth: string }>} */
  const sessions = new Map();

  const http = createServer();
  await new Promise((resolve, reject) => {
    http.once("error", reject);
    http.listen(port, host, () => resolve(undefined));
  });
  const address = http.address();
  const origin = `http://${host}:${typeof address === "object" && address !== null ? address.port : port}`;
  const url = `${origin}/mcp`;
  const metadata = protectedResourceMetadataHandler({
    resource: url,
    authorizationServer: mandateUrl,
    resourceName: "Example CRM",
    scopesSupported: ["read", "send"],
    resources: ["crm:*", "mail:outbox"],
  });
  // `resource`: a token for another MCP server (its `aud`) is refused. The
  // example's agent holds tokens issued by API, which name no audience, so
  // one is not required (`audience: "required"` would refuse those).
  const auth = mandateAuth({ verifier, publicUrl: origin, resource: url, resourceMetadataUrl: protectedResourceMetadataUrl(url) });

  /** One MCP server per session, with the CRM's two tools. */
  const toolServer = () => {
    const mcp = new McpServer({ name: "example-crm", version: "0.1.0" });
    const gate = { server: mcp, urlElicitationRequiredError: UrlElicitationRequiredError, approvalTimeoutSeconds, relayKey };
    mcp.registerTool(
      "crm_lookup",
      {
        title: "Look up a contact",
        description: "Reads one contact of the CRM by its id (c-1001, …).",
        inputSchema: { contact_id: z.string().regex(/^c-\d{4}$/) },
      },
      mandateTool(
        mandate,
        { action: "read", resource: ({ contact_id }) => `crm:contact/${contact_id}` },
        async ({ contact_id }) => {
          const contact = CONTACTS.get(contact_id);
          if (contact === undefined) {
            return { content: [{ type: "text", text: `No contact ${contact_id}.` }], isError: true };
          }
          return { content: [{ type: "text", text: JSON.stringify(contact) }] };
        },
        gate,
      ),
    );
    mcp.registerTool(
      "send_email",
      {
        title: "Send an e-mail",
        description: "Sends an e-mail from the CRM's outbox. A reviewer may have to approve it first.",
        inputSchema: { to: z.email(), subject: z.string().max(200), body: z.string().max(10_000) },
      },
      mandateTool(
        mandate,
        { action: "send", resource: "mail:outbox" },
        async ({ to, subject, body }, _extra, context) => {
          const email = { id: `msg-${outbox.length + 1}`, to, subject, body, aarId: context.aarId };
          outbox.push(email);
          return { content: [{ type: "text", text: `Sent ${email.id} to ${to}.` }] };
        },
        gate,
      ),
    );
    return mcp;
  };

  /** Serves one request on /mcp; `req.auth` was set by `mandateAuth`. */
  const serveMcp = async (req, res) => {
    const caller = mandateAuthOf(req.auth);
    const sessionId = req.headers["mcp-session-id"];
    const body = req.method === "POST" ? await readJson(req) : undefined;
    if (typeof sessionId === "string") {
      const session = sessions.get(sessionId);
      if (session === undefined) {
        throw new RequestRefused(404, "unknown session");
      }
      // A session belongs to the token that opened it: another token (even a
      // sub-agent's) opens its own, so each call is recorded as its agent's.
      if (session.jth !== caller?.jth) {
        throw new RequestRefused(403, "this session was opened with another token");
      }
      await session.transport.handleRequest(req, res, body);
      return;
    }
    if (body === undefined || !isInitializeRequest(body)) {
      throw new RequestRefused(400, "no session: initialize first");
    }
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, jth: caller?.jth ?? "" });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) {
        sessions.delete(transport.sessionId);
      }
    };
    await toolServer().connect(transport);
    await transport.handleRequest(req, res, body);
  };

  http.on("request", (req, res) => {
    const serve = async () => {
      let handled = true;
      await metadata(req, res, () => {
        handled = false;
      });
      if (handled) {
        return;
      }
      if (new URL(req.url ?? "/", origin).pathname !== "/mcp") {
        throw new RequestRefused(404, "not found");
      }
      let passed = false;
      await auth(req, res, () => {
        passed = true;
      });
      if (passed) {
        await serveMcp(req, res);
      }
    };
    serve().catch((error) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const status = error instanceof RequestRefused ? error.status : 500;
      const message = error instanceof RequestRefused ? error.message : "internal error";
      if (status === 500) {
        console.error("mcp server:", error);
      }
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
    });
  });

  const close = async () => {
    await Promise.all([...sessions.values()].map(({ transport }) => transport.close()));
    await new Promise((resolve) => {
      http.close(() => resolve(undefined));
      http.closeAllConnections();
    });
  };
  return { url, outbox, relayJkt: relayKey.jkt, close };
}

/** The request's JSON body (at most MAX_BODY_BYTES). */
async function readJson(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      throw new RequestRefused(413, "body too large");
    }
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new RequestRefused(400, "the body is not JSON");
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const mandateUrl = process.env.MANDATE_URL ?? "http://127.0.0.1:8080";
  const server = await startCrmServer({ mandateUrl, port: Number(process.env.MCP_PORT ?? 3333) });
  console.log(`CRM MCP server on ${server.url}, gated by Mandate at ${mandateUrl}`);
  console.log(`relay key ${server.relayJkt}: register it for ${server.url} (POST /v1/oauth/resources) for stock OAuth clients' DPoP-bound tokens`);
  const stop = () => {
    server.close().then(() => process.exit(0));
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}
