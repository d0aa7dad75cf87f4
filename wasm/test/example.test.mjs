// The example examples/mcp-crm end to end, as its README runs it: its one
// command (`node run.mjs --auto-approve`) against a live `mandate serve`,
// in a child process, in examples/mcp-crm itself with its dependencies
// installed by `npm ci` from its committed lockfile (mandate-sdk is linked
// from this package; the MCP SDK and zod are the versions this package
// tests with; npm's cache serves them when it has them). Then the server's
// records are checked: the workflow holds the assistant's and the
// sub-agent's records, completed with their result hashes, the sub-agent's
// refused lookup, the delegation, and the approval the send asked for and
// got; the printed links name the workflow and the approval. MANDATE_BIN names the server binary.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { execFileSync, spawn } from "node:child_process";
import { readFileSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import { after, before, test } from "node:test";

import { freePort, startServer } from "./live-server.mjs";

const require = createRequire(import.meta.url);
const { MandateClient } = require("..");
const { toolResultHash } = require("../pkg/node/mcp.js");

const wasmDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const exampleDir = join(wasmDir, "..", "examples", "mcp-crm");

let live;
const exampleCwd = exampleDir;

before(async () => {
  installExample();
  live = await startServer();
});

after(() => live?.stop());

/** The example's dependencies as its README installs them: `npm ci` from its committed lockfile. */
function installExample() {
  const { dependencies } = JSON.parse(readFileSync(join(exampleDir, "package.json"), "utf8"));
  assert.deepEqual(Object.keys(dependencies).sort(), ["@modelcontextprotocol/sdk", "mandate-sdk", "zod"]);
  assert.equal(dependencies["mandate-sdk"], "file:../../wasm");
  for (const name of ["@modelcontextprotocol/sdk", "zod"]) {
    const tested = join(wasmDir, "node_modules", name, "package.json");
    // The example pins the versions this package tests with.
    assert.equal(JSON.parse(readFileSync(tested, "utf8")).version, dependencies[name], name);
  }
  execFileSync("npm", ["ci", "--prefer-offline", "--no-audit", "--no-fund"], { cwd: exampleDir, stdio: ["ignore", "pipe", "pipe"] });
  assert.equal(realpathSync(join(exampleDir, "node_modules", "mandate-sdk")), realpathSync(wasmDir));
}

/**
 * Runs `node run.mjs …args` in `cwd` against the live server; resolves with
 * its exit code and output. `onLine` is given each line it prints, as it
 * prints it.
 */
function runExample(cwd, args, onLine = () => {}) {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, MANDATE_URL: live.baseUrl, MANDATE_API_KEY: live.apiKey };
    const child = spawn(process.execPath, ["run.mjs", ...args], { cwd, env });
    let stdout = "";
    let stderr = "";
    createInterface({ input: child.stdout }).on("line", (text) => {
      stdout += `${text}\n`;
      onLine(text);
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill(), 120_000);
    child.once("error", reject);
    // "close" comes once the output has been read to its end.
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** The text after the label of the one line that starts with `label`. */
function line(stdout, label) {
  const found = stdout.split("\n").filter((l) => l.startsWith(`${label} `));
  assert.equal(found.length, 1, `one "${label}" line in:\n${stdout}`);
  return found[0].slice(label.length).trim();
}

test("examples/mcp-crm: the agent, its sub-agent and the approval, recorded in one workflow", async () => {
  const run = await runExample(exampleCwd, ["--auto-approve"]);
  assert.equal(run.code, 0, `exit ${run.code} (${run.signal}); stdout:\n${run.stdout}\nstderr:\n${run.stderr}`);
  assert.ok(!run.stdout.includes(live.apiKey), "the API key is never printed");

  const client = new MandateClient({ baseUrl: live.baseUrl, apiKey: live.apiKey });
  const provenance = line(run.stdout, "workflow");
  assert.match(provenance, /^prov_[0-9a-z]{26}$/);
  assert.equal(line(run.stdout, "dashboard"), `${live.baseUrl}/#/workflow/${provenance}`);
  assert.equal(line(run.stdout, "dashboard"), client.workflowUrl(provenance));
  assert.match(line(run.stdout, "mcp"), /^http:\/\/127\.0\.0\.1:\d+\/mcp: tools crm_lookup, send_email$/);

  const records = [];
  for await (const record of client.records({ provenance_ref: provenance })) {
    records.push(record);
  }
  const shape = (r) => [r.agent_id, r.action, r.resource, r.status, r.result ?? r.deny_reason, r.delegation_depth];
  assert.deepEqual(records.map(shape).sort(), [
    ["crm-assistant", "delegate", "agent:crm-mailer", "completed", "success", 0],
    ["crm-assistant", "read", "crm:contact/c-1001", "completed", "success", 0],
    ["crm-mailer", "read", "crm:contact/c-1001", "denied", "action_not_permitted", 1],
    ["crm-mailer", "send", "mail:outbox", "completed", "success", 1],
  ].sort());

  // Each tool call is recorded with the hash of what the tool returned, and named in the output.
  const lookup = records.find((r) => r.action === "read" && r.status === "completed");
  const contact = { id: "c-1001", name: "Ada Lovelace", email: "ada@example.com", company: "Analytical Engines Ltd", stage: "renewal due" };
  assert.equal(lookup.result_hash, toolResultHash({ content: [{ type: "text", text: JSON.stringify(contact) }] }));
  assert.ok(line(run.stdout, "lookup").endsWith(`(${lookup.aar_id})`), run.stdout);
  const send = records.find((r) => r.action === "send");
  assert.equal(send.result_hash, toolResultHash({ content: [{ type: "text", text: "Sent msg-1 to ada@example.com." }] }));
  assert.ok(line(run.stdout, "send").endsWith(`Sent msg-1 to ada@example.com. (${send.aar_id})`), run.stdout);
  const denied = records.find((r) => r.status === "denied");
  const refusals = run.stdout.split("\n").filter((l) => l.startsWith("refused "));
  assert.deepEqual(refusals, [
    `refused   crm-mailer → crm_lookup: action_not_permitted (${denied.aar_id})`,
    // The mailer's token allows addresses at example.com only: the MCP server refused this from the token,
    // so no record of it was made (the records above are all there are).
    "refused   crm-mailer → send_email to ada@example.com.attacker.test: args_not_permitted (refused from the token, before Mandate)",
  ]);
  // The send that went out is recorded with its arguments and their hash.
  assert.deepEqual(send.args, {
    to: "ada@example.com",
    subject: "Your renewal",
    body: "Dear Ada Lovelace, your contract with us is due for renewal. Shall we talk this week?",
  });
  assert.match(send.args_hash, /^sha256:[0-9a-f]{64}$/);
  for (const record of [lookup, send]) {
    assert.equal(record.credential, "token", "each call was made with the token itself");
  }

  // The send was asked for, shown to the agent as the reviewer's page, and approved by the key that ran the demo.
  const approvals = [];
  for await (const approval of client.approvals({ status: "approved" })) {
    if (approval.provenance_ref === provenance) approvals.push(approval);
  }
  assert.equal(approvals.length, 1);
  const [approval] = approvals;
  assert.deepEqual(
    [approval.aar_id, approval.agent_id, approval.action, approval.resource, approval.delegation_depth, approval.record_status],
    [send.aar_id, "agent:crm-mailer", "send", "mail:outbox", 1, "completed"],
  );
  assert.deepEqual(approval.chain.map((link) => link.agent_id), ["agent:crm-assistant", "agent:crm-mailer"]);
  // The reviewer decided on the arguments: the approval carries them.
  assert.deepEqual(approval.args, send.args);
  assert.equal(approval.decided_by, (await client.me()).key_id);
  assert.match(approval.note, /--auto-approve/);
  const approvalLines = run.stdout.split("\n").filter((l) => l.startsWith("approval "));
  assert.ok(approvalLines.includes(`approval  send_email waits for a reviewer: ${client.approvalUrl(approval.approval_id)}`), run.stdout);

  // The graph: the assistant's token issued to the human, the mailer's delegated from it.
  const graph = await client.graph(provenance);
  const tokens = graph.nodes.filter((n) => n.kind === "token");
  assert.deepEqual(tokens.map((t) => [t.agent_id, t.delegation_depth]).sort(), [["crm-assistant", 0], ["crm-mailer", 1]]);
  const [root, child] = [0, 1].map((depth) => tokens.find((t) => t.delegation_depth === depth));
  assert.ok(graph.edges.some((e) => e.kind === "delegated" && e.from === root.id && e.to === child.id));
  assert.ok(graph.edges.some((e) => e.kind === "action" && e.from === child.id && e.to === send.aar_id));
});

test("examples/mcp-crm without --auto-approve: the send waits for a reviewer, who says no", async () => {
  const client = new MandateClient({ baseUrl: live.baseUrl, apiKey: live.apiKey });
  let decision;
  const run = await runExample(exampleCwd, [], (text) => {
    // The reviewer opens the page the agent printed and denies the e-mail there.
    const id = /^approval  send_email waits for a reviewer: .*#\/approval\/(apr_[0-9a-z]{26})$/.exec(text)?.[1];
    if (id !== undefined) {
      decision = client.decide(id, { decision: "deny", note: "not this week" });
    }
  });
  assert.equal(run.code, 0, `exit ${run.code} (${run.signal}); stdout:\n${run.stdout}\nstderr:\n${run.stderr}`);
  assert.ok(decision !== undefined, `the reviewer's page was printed:\n${run.stdout}`);
  const denial = await decision;
  assert.equal(denial.status, "denied");
  assert.ok(!run.stdout.includes("--auto-approve"), run.stdout);
  assert.ok(run.stdout.includes("approval  open the page, approve, and the call goes on"), run.stdout);

  const provenance = line(run.stdout, "workflow");
  assert.equal(line(run.stdout, "dashboard"), client.workflowUrl(provenance));
  assert.equal(denial.provenance_ref, provenance);
  const send = await client.record(denial.aar_id);
  assert.deepEqual([send.agent_id, send.action, send.status, send.deny_reason], ["crm-mailer", "send", "denied", "approval_denied"]);
  assert.equal(send.result_hash, undefined, "nothing ran, so nothing was hashed");
  assert.equal(line(run.stdout, "not sent"), `crm-mailer → send_email: approval_denied (${send.aar_id})`);
  assert.equal(run.stdout.split("\n").filter((l) => l.startsWith("send ")).length, 0, run.stdout);
});

test("examples/mcp-crm is a protected resource: its RFC 9728 metadata names Mandate, its scopes and resources", async () => {
  const { startCrmServer } = await import(pathToFileURL(join(exampleDir, "server.mjs")).href);
  const crm = await startCrmServer({ mandateUrl: live.baseUrl });
  try {
    const anonymous = await fetch(crm.url, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    assert.equal(anonymous.status, 401);
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(anonymous.headers.get("www-authenticate"))?.[1];
    assert.equal(metadataUrl, `${new URL(crm.url).origin}/.well-known/oauth-protected-resource/mcp`);
    const metadata = await (await fetch(metadataUrl)).json();
    assert.equal(metadata.resource, crm.url);
    assert.deepEqual(metadata.authorization_servers, [live.baseUrl.replace(/\/+$/, "")]);
    assert.deepEqual(metadata.scopes_supported, ["read", "send", "crm:*", "mail:outbox"]);
    assert.match(crm.relayJkt, /^[A-Za-z0-9_-]{43}$/);
  } finally {
    await crm.close();
  }
});

test("examples/mcp-crm checks aud: a token for another resource is refused, one for it passes", async () => {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const oauthLive = await startServer({
    listen: `127.0.0.1:${port}`,
    config: `public_url = "${issuer}"\nissuer = "${issuer}"\n\n[oauth]\nenabled = true\n`,
  });
  const { startCrmServer } = await import(pathToFileURL(join(exampleDir, "server.mjs")).href);
  const crm = await startCrmServer({ mandateUrl: issuer });
  try {
    const owner = new MandateClient({ baseUrl: issuer, apiKey: oauthLive.apiKey });
    const developer = (await owner.createKey({ role: "developer", email: "dev@example.com" })).api_key;
    const callback = "http://127.0.0.1/callback";
    const registered = await (
      await fetch(`${issuer}/v1/oauth/clients`, {
        method: "POST",
        headers: { authorization: `Bearer ${oauthLive.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "Stock client", redirect_uris: [callback] }),
      })
    ).json();
    /** A Bearer token for `resource` by the authorization-code flow, approved with the developer's key. */
    const tokenFor = async (resource) => {
      const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
      const query = new URLSearchParams({
        response_type: "code",
        client_id: registered.client_id,
        redirect_uri: callback,
        code_challenge: createHash("sha256").update(verifier).digest("base64url"),
        code_challenge_method: "S256",
        resource,
        scope: "read crm:*",
        state: "s",
      });
      const start = await fetch(`${issuer}/v1/oauth/authorize?${query}`, { redirect: "manual" });
      const sealed = new URL(start.headers.get("location")).searchParams.get("request");
      const decided = await fetch(`${issuer}/v1/oauth/requests/decision`, {
        method: "POST",
        headers: { authorization: `Bearer ${developer}`, "content-type": "application/json" },
        body: JSON.stringify({ request: sealed, decision: "approve", grant: { actions: ["read"], resources: ["crm:*"] } }),
      });
      const code = new URL((await decided.json()).redirect).searchParams.get("code");
      const token = await fetch(`${issuer}/v1/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code,
          client_id: registered.client_id,
          redirect_uri: callback,
          code_verifier: verifier,
          resource,
        }),
      });
      assert.equal(token.status, 200);
      return (await token.json()).access_token;
    };
    const initialize = (token) =>
      fetch(crm.url, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "stock", version: "1" } },
        }),
      });
    const elsewhere = await initialize(await tokenFor("https://other.example/mcp"));
    assert.equal(elsewhere.status, 401);
    assert.match(elsewhere.headers.get("www-authenticate"), /error="invalid_token", error_description="audience_mismatch/);
    const mine = await initialize(await tokenFor(crm.url));
    assert.equal(mine.status, 200, await mine.clone().text());
  } finally {
    await crm.close();
    oauthLive.stop();
  }
});
