// The example in one command: starts the CRM's MCP server, runs the agent
// against it and a local Mandate server, prints the workflow's page in the
// dashboard, and stops.
//
//   node examples/mcp-crm/run.mjs [--auto-approve]
//
// MANDATE_URL: the Mandate server (default http://127.0.0.1:8080, where
// `cargo xtask serve` listens). MANDATE_API_KEY: an API key that may issue
// tokens and decide approvals (an owner's); default the admin key
// `cargo xtask serve` writes to `.mandate/admin.key`, looked for in the
// current folder, then at the root of this repository. MCP_PORT: the MCP
// server's port (default 0: any free port).
//
// --auto-approve is for demos and tests only: the API key approves the
// e-mail the agent asks to send, standing in for a reviewer. Without it,
// open the printed page and approve it there.
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

import { runAgent } from "./agent.mjs";
import { startCrmServer } from "./server.mjs";

const { values: flags } = parseArgs({ options: { "auto-approve": { type: "boolean", default: false } } });

/** The API key: MANDATE_API_KEY, else the admin key of a local `cargo xtask serve`. */
function apiKey() {
  const fromEnv = process.env.MANDATE_API_KEY?.trim();
  if (fromEnv) {
    return fromEnv;
  }
  const candidates = [resolve(".mandate/admin.key"), join(import.meta.dirname, "../../.mandate/admin.key")];
  const file = candidates.find((path) => existsSync(path));
  if (file === undefined) {
    console.error("No API key: set MANDATE_API_KEY, or start `cargo xtask serve`, which writes .mandate/admin.key.");
    process.exit(2);
  }
  return readFileSync(file, "utf8").trim();
}

const mandateUrl = (process.env.MANDATE_URL ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
const key = apiKey();
const server = await startCrmServer({ mandateUrl, port: Number(process.env.MCP_PORT ?? 0) });
console.log(`mandate   ${mandateUrl}`);
console.log(`mcp       ${server.url}: tools crm_lookup, send_email`);
try {
  await runAgent({ mandateUrl, apiKey: key, mcpUrl: server.url, autoApprove: flags["auto-approve"] });
} catch (error) {
  console.error(`failed    ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  await server.close();
}
