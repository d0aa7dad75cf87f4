// The MCP conformance suite's authorization-server scenarios
// (@modelcontextprotocol/conformance, pinned in package.json; not our
// code) against a live `mandate serve` with `[oauth]` on. Today the
// metadata scenario: RFC 8414 discovery at the issuer, its `issuer`
// byte for byte, `code_challenge_methods_supported` holding S256, and
// client ID metadata documents announced. The suite runs on Node 22 or
// later (it imports `fs.globSync`); the machine's Node is 20, so it runs
// on the Node 24 that wasm/runtimes pins (MANDATE_NODE24).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { freePort, startServer } from "./harness.mjs";

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

/** Runs the suite's CLI; answers its exit code and output. */
function conformance(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(node22(), [CLI, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, output });
    });
  });
}

/** The checks the suite wrote under `dir` (one folder per scenario run). */
function checksIn(dir) {
  const runs = readdirSync(dir).filter((name) => existsSync(join(dir, name, "checks.json")));
  assert.equal(runs.length, 1, `one scenario run under ${dir}: ${runs}`);
  return JSON.parse(readFileSync(join(dir, runs[0], "checks.json"), "utf8"));
}

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
