// The MCP conformance suite's authorization-server scenarios
// (@modelcontextprotocol/conformance, pinned in package.json; not our
// code) against a live `mandate serve` with `[oauth]` on: the metadata
// scenario (RFC 8414 discovery at the issuer, its `issuer` byte for byte,
// `code_challenge_methods_supported` holding S256, client ID metadata
// documents announced), and the authorization-code-grant scenario, whose
// authorization URL this test opens in Chromium and answers on the consent
// page as a person would, then the suite redeems the code. The suite runs on Node 22 or
// later (it imports `fs.globSync`); the machine's Node is 20, so it runs
// on the Node 24 that wasm/runtimes pins (MANDATE_NODE24).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { freePort, launchBrowser, openPage, startServer } from "./harness.mjs";

const web = join(dirname(fileURLToPath(import.meta.url)), "..");
const CLI = join(web, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");

/** A Node of at least version 22 for the suite: this one, or the pinned Node 24 `cargo xtask test` names. */
function node22() {
  if (Number(process.versions.node.split(".")[0]) >= 22) return process.execPath;
  const pinned = process.env.MANDATE_NODE24;
  assert.ok(
    pinned !== undefined && existsSync(pinned),
    `the conformance suite needs Node 22 or later; this is ${process.version}: set MANDATE_NODE24 to a newer node (cargo xtask test sets it to wasm/runtimes' pinned Node 24)`,
  );
  return pinned;
}

/** Runs the suite's CLI; answers its exit code and output. `onOutput` is told the output so far, as it grows. */
function conformance(args, onOutput = () => {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(node22(), [CLI, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const read = (chunk) => {
      output += chunk;
      onOutput(output);
    };
    child.stdout.on("data", read);
    child.stderr.on("data", read);
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, output });
    });
  });
}

/** The checks the suite wrote under `dir` (one folder per scenario run), `runs` of them. */
function checksIn(dir, runs = 1) {
  const found = readdirSync(dir).filter((name) => existsSync(join(dir, name, "checks.json")));
  assert.equal(found.length, runs, `${runs} scenario runs under ${dir}: ${found}`);
  return found.flatMap((run) => JSON.parse(readFileSync(join(dir, run, "checks.json"), "utf8")));
}

const RESOURCE = "https://mcp.example.com/mcp";

test("the conformance suite's authorization-server-metadata-endpoint scenario passes", async () => {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const server = await startServer({
    listen: `127.0.0.1:${port}`,
    config: `public_url = "${issuer}"\nissuer = "${issuer}"\n\n[oauth]\nenabled = true\n`,
  });
  const results = mkdtempSync(join(tmpdir(), "mandate-conformance-"));
  try {
    const run = await conformance([
      "authorization",
      "--url",
      issuer,
      "--scenario",
      "authorization-server-metadata-endpoint",
      "-o",
      results,
    ]);
    assert.equal(run.code, 0, run.output);
    const checks = checksIn(results);
    const status = Object.fromEntries(checks.map((check) => [check.id, check.status]));
    assert.equal(status["authorization-server-metadata"], "SUCCESS", JSON.stringify(checks, null, 2));
    assert.equal(status["authorization-server-metadata-cimd"], "SUCCESS", JSON.stringify(checks, null, 2));
    for (const check of checks) {
      assert.notEqual(check.status, "FAILURE", JSON.stringify(check));
      assert.notEqual(check.status, "WARNING", JSON.stringify(check));
    }
  } finally {
    rmSync(results, { recursive: true, force: true });
    await server.stop();
  }
});

test("the conformance suite's authorization-code-grant scenario passes through the consent page", async () => {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const server = await startServer({
    listen: `127.0.0.1:${port}`,
    config: `public_url = "${issuer}"\nissuer = "${issuer}"\n\n[oauth]\nenabled = true\n`,
  });
  // The suite's callback is http://127.0.0.1:<port>/callback: a loopback
  // redirect registered without a port matches any (RFC 8252 §7.3).
  const client = await server.api.call("POST", "/v1/oauth/clients", {
    name: "MCP conformance suite",
    redirect_uris: ["http://127.0.0.1/callback"],
  });
  const developer = (await server.api.createKey({ role: "developer", email: "dev@example.com" })).api_key;
  const browser = await launchBrowser();
  const results = mkdtempSync(join(tmpdir(), "mandate-conformance-"));
  let consent;
  try {
    const { page, errors } = await openPage(browser);
    // The suite's callback server closes once answered, so the browser's
    // later fetches there (its icon) fail, at a moment of their own: those
    // errors are the suite's, not the consent page's.
    const callbackPort = await freePort();
    const callback = `http://127.0.0.1:${callbackPort}/`;
    const theSuites = [];
    page.on("console", (message) => {
      if (message.type() === "error" && message.location().url.startsWith(callback)) {
        theSuites.push(`console: ${message.text()}`);
      }
    });
    const authorizeUrl = new RegExp(`^${issuer.replaceAll(".", "\\.")}/v1/oauth/authorize\\?\\S+$`, "m");
    // The suite prints the authorization URL and waits for its callback:
    // answer it on the consent page as a person would.
    const answer = async (url) => {
      await page.goto(url);
      await page.getByLabel("API key").fill(developer);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("heading", { name: "Grant access", level: 1 }).waitFor();
      // The suite sends no `scope`: the person names what is granted.
      await page.getByLabel(/^Actions, separated by spaces/).fill("read");
      await page.getByLabel(/^Resource patterns, one a line/).fill("crm:contacts");
      await page.getByRole("button", { name: "Approve" }).click();
      await page.waitForURL((landed) => landed.href.startsWith(callback) && landed.pathname === "/callback");
      const pages = errors.filter((error) => {
        const at = theSuites.indexOf(error);
        if (at === -1) return true;
        theSuites.splice(at, 1);
        return false;
      });
      assert.deepEqual(pages, []);
    };
    const run = await conformance(
      [
        "authorization",
        "--url",
        issuer,
        "--client-id",
        client.client_id,
        "--resource",
        RESOURCE,
        "--port",
        String(callbackPort),
        "-o",
        results,
      ],
      (output) => {
        const url = output.match(authorizeUrl);
        if (url !== null && consent === undefined) consent = answer(url[0]).then(() => undefined, (error) => error);
      },
    );
    assert.ok(consent !== undefined, `the suite printed no authorization URL:\n${run.output}`);
    const failure = await consent;
    if (failure !== undefined) throw failure;
    assert.equal(run.code, 0, run.output);
    const checks = checksIn(results, 2);
    const status = Object.fromEntries(checks.map((check) => [check.id, check.status]));
    for (const id of ["authorization-server-metadata", "authorization-server-metadata-cimd", "authorization-code-grant"]) {
      assert.equal(status[id], "SUCCESS", `${id}: ${JSON.stringify(checks, null, 2)}`);
    }
    for (const check of checks) {
      assert.notEqual(check.status, "FAILURE", JSON.stringify(check));
    }
  } finally {
    await browser.close();
    rmSync(results, { recursive: true, force: true });
    await server.stop();
  }
});
