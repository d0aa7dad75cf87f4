// The package's JavaScript surface beyond the vectors: the CommonJS and ESM
// entries agree, the web entry initialises from bytes, a compiled module, a
// Response or a URL, the Verifier's cache honours expiry and revocation, and
// no argument makes a function throw.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import esm, * as esmNamed from "../js/index.mjs";

const require = createRequire(import.meta.url);
const sdk = require("..");
const tokens = JSON.parse(readFileSync(new URL("../../tests/vectors/tokens.json", import.meta.url), "utf8"));
const byName = (name) => tokens.cases.find((c) => c.name === name);
const root = byName("valid_root");
const delegated = byName("valid_delegated");
const webEntry = new URL("../pkg/web/web.js", import.meta.url).href;
const wasmFile = fileURLToPath(new URL("../pkg/web/mandate_wasm_bg.wasm", import.meta.url));

test("the ESM entry exports exactly what the CommonJS entry does", () => {
  const named = Object.keys(esmNamed).filter((name) => name !== "default").sort();
  assert.deepEqual(named, Object.keys(sdk).sort());
  assert.equal(esm, sdk);
  assert.equal(esmNamed.verifyToken, sdk.verifyToken);
});

/** Runs a module script in a fresh Node, where the web build is not yet initialised. */
async function runModule(source) {
  const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", source]);
  return stdout;
}

test("the web entry initialises from bytes, a compiled module, a Response and a URL", async () => {
  const server = createServer((request, response) => {
    response.writeHead(200, { "content-type": "application/wasm" });
    response.end(readFileSync(wasmFile));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}/mandate.wasm`;
  try {
    const inputs = {
      bytes: "bytes",
      module: "new WebAssembly.Module(bytes)",
      response: "new Response(bytes, { headers: { 'content-type': 'application/wasm' } })",
      url: `new URL(${JSON.stringify(url)})`,
    };
    for (const [name, input] of Object.entries(inputs)) {
      const output = await runModule(`
        import { readFileSync } from "node:fs";
        import init, { verifyToken, MandateClient } from ${JSON.stringify(webEntry)};
        const bytes = readFileSync(${JSON.stringify(wasmFile)});
        await init(${input});
        await init(${input});
        const result = verifyToken(${JSON.stringify(root.token)}, ${JSON.stringify(tokens.jwks)}, { now: ${root.now} });
        console.log(JSON.stringify({ valid: result.valid, client: typeof MandateClient }));
      `);
      assert.deepEqual(JSON.parse(output), { valid: true, client: "function" }, name);
    }
  } finally {
    server.close();
  }
});

test("Verifier: a cache hit still honours expiry and revocation", () => {
  const verifier = new sdk.Verifier(tokens.jwks, { cacheSize: 8 });
  assert.equal(verifier.error, null);
  for (let i = 0; i < 3; i++) {
    assert.equal(verifier.verify(delegated.token, delegated.now).valid, true);
  }
  assert.equal(verifier.cached, 1);
  const exp = delegated.expect.claims.exp;
  const expired = verifier.verify(delegated.token, exp + 60);
  assert.deepEqual([expired.valid, expired.error.code], [false, "expired"]);
  assert.equal(verifier.cached, 0);
  assert.equal(verifier.verify(delegated.token, delegated.now).valid, true);
  const parent = delegated.expect.claims.svc_parent;
  assert.deepEqual(verifier.revoke([parent]), { ok: true });
  const revoked = verifier.verify(delegated.token, delegated.now);
  assert.deepEqual([revoked.error.code, revoked.error.stage], ["revoked", "verify"]);
  assert.match(revoked.error.message, new RegExp(parent));
  assert.equal(verifier.revoke("not a jti").ok, false);
  verifier.free();
});

test("Verifier: the clock is the default now, and a bad key set is reported, not thrown", () => {
  const verifier = new sdk.Verifier(tokens.jwks);
  // The vectors' tokens are dated in the future of any clock this test runs on.
  const result = verifier.verify(root.token);
  assert.equal(result.valid, false);
  assert.equal(result.error.code, Date.now() / 1000 < root.now - 3600 ? "not_yet_valid" : result.error.code);
  const broken = new sdk.Verifier({ keys: [] });
  assert.equal(broken.error.code, "no_usable_keys");
  assert.equal(broken.error.stage, "jwks");
  assert.equal(broken.verify(root.token, root.now).error.code, "no_usable_keys");
});

test("verifyToken judges a key set changed in place by its new keys", () => {
  const jwks = structuredClone(tokens.jwks);
  assert.equal(sdk.verifyToken(root.token, jwks, { now: root.now }).valid, true);
  const [key] = jwks.keys;
  const original = key.kid;
  key.kid = "another-kid";
  const changed = sdk.verifyToken(root.token, jwks, { now: root.now });
  assert.equal(changed.valid, false);
  assert.equal(changed.error.code, byName("unknown_kid").expect.error);
  key.kid = original;
  assert.equal(sdk.verifyToken(root.token, jwks, { now: root.now }).valid, true);
  assert.equal(sdk.verifyToken(root.token, JSON.stringify(jwks), { now: root.now }).valid, true);
});

test("decodeTokenUnverified reads without verifying", () => {
  const wrongKey = byName("wrong_key_right_kid");
  const decoded = sdk.decodeTokenUnverified(wrongKey.token);
  assert.equal(decoded.ok, true);
  assert.equal(decoded.header.alg, "EdDSA");
  assert.equal(sdk.verifyToken(wrongKey.token, tokens.jwks, { now: wrongKey.now }).error.code, "invalid_signature");
  assert.equal(sdk.decodeTokenUnverified("nope").error.code, "malformed_token");
});

test("sha256Ref agrees with node:crypto on text and bytes", () => {
  for (const text of ["", "abc", "naïve ✓", "x".repeat(10_000)]) {
    const hex = createHash("sha256").update(text, "utf8").digest("hex");
    assert.equal(sdk.sha256Ref(text), `sha256:${hex}`);
    const bytes = new TextEncoder().encode(text);
    assert.equal(sdk.sha256Ref(bytes), `sha256:${hex}`);
    assert.equal(sdk.sha256Ref(bytes.buffer), `sha256:${hex}`);
    assert.equal(sdk.sha256Ref(Buffer.from(text)), `sha256:${hex}`);
  }
  assert.equal(sdk.sha256Ref(12), null);
});

test("summarizeWorkflow counts as the server does", () => {
  const records = [
    { aar_id: "aar_1", agent_id: "a", action: "read", status: "completed", result: "success", provenance_ref: "prov_1" },
    { aar_id: "aar_2", agent_id: "a", action: "read", status: "completed", result: "timeout", provenance_ref: "prov_1" },
    { aar_id: "aar_3", agent_id: "b", action: "delegate", status: "denied", deny_reason: "scope_widening", provenance_ref: "prov_1" },
    { aar_id: "aar_4", agent_id: "c", action: "write", status: "pending", provenance_ref: "prov_1" },
  ];
  assert.deepEqual(sdk.summarizeWorkflow(records), {
    provenance_ref: "prov_1",
    total_records: 4,
    unique_agents: 3,
    actions_by_type: { delegate: 1, read: 2, write: 1 },
    results_by_type: { denied: 1, pending: 1, success: 1, timeout: 1 },
  });
  assert.equal(sdk.summarizeWorkflow(records, "prov_2").error.code, "provenance_mismatch");
  assert.equal(sdk.summarizeWorkflow([]).error.code, "missing_provenance_ref");
  assert.equal(sdk.summarizeWorkflow([{ agent_id: "a" }], "prov_1").error.code, "invalid_records");
});

test("no argument makes a function throw, and none is taken for a valid one", () => {
  const cyclic = {};
  cyclic.self = cyclic;
  const boom = () => {
    throw new Error("boom");
  };
  const hostile = { get agent_id() { return boom(); }, toJSON: boom };
  const trap = new Proxy([], { get: boom, has: boom, ownKeys: boom, getPrototypeOf: boom });
  const empty = {};
  const none = [];
  const garbage = [
    undefined, null, 0, -1, NaN, "", "x", true, Symbol("s"), 10n, cyclic, none, [1, 2], empty, () => 1,
    new Uint8Array(3), hostile, [hostile], trap,
  ];
  // Invalid with any clock and any options: its lifetime ends where the vectors' clock starts.
  const expired = byName("expired");
  const verifier = new sdk.Verifier(tokens.jwks, { cacheSize: 4 });
  const scope = { resources: ["crm:*"], actions: ["read"] };
  // The two garbage values that are legitimate here: no counts, nothing to revoke.
  const counts = (bad) => (bad === empty ? { pending: -1 } : bad);
  const jtis = (bad) => (bad === none ? ["x"] : bad);
  for (const [index, bad] of garbage.entries()) {
    const calls = {
      "verifyToken(bad)": () => sdk.verifyToken(bad, tokens.jwks),
      "verifyToken(_, bad)": () => sdk.verifyToken(root.token, bad),
      "verifyToken(_, _, bad)": () => sdk.verifyToken(expired.token, tokens.jwks, bad),
      "verifyChain(bad)": () => sdk.verifyChain(bad, tokens.jwks, { now: root.now }),
      "verifyChain(_, bad, bad)": () => sdk.verifyChain([root.token], bad, bad),
      "decodeTokenUnverified(bad)": () => sdk.decodeTokenUnverified(bad),
      "permits(bad)": () => sdk.permits(bad, "read", "crm:x"),
      "permits(_, bad, bad)": () => sdk.permits(scope, bad, bad),
      "checkNarrowing(bad, bad)": () => sdk.checkNarrowing(bad, bad),
      "reputation(bad)": () => sdk.reputation(counts(bad)),
      "summarizeWorkflow(bad)": () => sdk.summarizeWorkflow(bad),
      "new Verifier(bad, bad)": () => new sdk.Verifier(bad, bad).verify(root.token, root.now),
      "verify(bad)": () => verifier.verify(bad, root.now),
      "verify(_, bad)": () => verifier.verify(expired.token, bad),
      "revoke(bad)": () => verifier.revoke(jtis(bad)),
    };
    for (const [call, run] of Object.entries(calls)) {
      const result = run();
      const label = `${call} with garbage[${index}] (${typeof bad})`;
      assert.equal(typeof result.error, "object", `${label}: ${JSON.stringify(result)}`);
      assert.equal(typeof result.error.code, "string", label);
      assert.notEqual(result.valid, true, label);
      assert.notEqual(result.ok, true, label);
    }
  }
});

test("audienceMatches compares a token's aud with a resource identifier as RFC 3986 normalises URIs", () => {
  const aud = "https://mcp.example.com/mcp";
  assert.equal(sdk.audienceMatches(aud, aud), true);
  assert.equal(sdk.audienceMatches(aud, "HTTPS://MCP.example.com:443/mcp"), true);
  assert.equal(sdk.audienceMatches("https://mcp.example.com", "https://mcp.example.com/"), true);
  assert.equal(sdk.audienceMatches(aud, "https://mcp.example.com/mcp/tools"), false);
  assert.equal(sdk.audienceMatches(aud, "https://mcp.example.com/mcp?x=1"), false);
  assert.equal(sdk.audienceMatches(aud, "http://mcp.example.com/mcp"), false);
  // An aud Mandate would never take matches nothing.
  assert.equal(sdk.audienceMatches("http://mcp.example.com/mcp", "http://mcp.example.com/mcp"), false);
  assert.equal(sdk.audienceMatches(`${aud}#x`, aud), false);
});
