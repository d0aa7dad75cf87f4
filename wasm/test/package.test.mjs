// The package as a user gets it: `npm pack`, install the tarball into a
// fresh project, and use it there from CommonJS, from ESM (the Node entry and
// the web entry) and from TypeScript (`tsc --noEmit`, strict, no skipLibCheck).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const tsc = fileURLToPath(new URL("../node_modules/typescript/bin/tsc", import.meta.url));
const tokens = JSON.parse(readFileSync(new URL("../../tests/vectors/tokens.json", import.meta.url), "utf8"));
const valid = tokens.cases.find((c) => c.name === "valid_root");

let project;
let packed;

function run(command, args, cwd) {
  return execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

function write(name, text) {
  writeFileSync(join(project, name), text);
}

before(() => {
  project = mkdtempSync(join(tmpdir(), "mandate-sdk-consumer-"));
  [packed] = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", project], packageDir));
  write("package.json", JSON.stringify({ name: "consumer", private: true }));
  write("vector.json", JSON.stringify({ token: valid.token, now: valid.now, jwks: tokens.jwks }));
  run("npm", ["install", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund", join(project, packed.filename)], project);
});

after(() => rmSync(project, { recursive: true, force: true }));

test("the tarball holds the builds and the entries, not the sources", () => {
  const files = packed.files.map((f) => f.path).sort();
  for (const needed of [
    "package.json",
    "js/index.mjs",
    "js/index.d.mts",
    "pkg/node/index.js",
    "pkg/node/index.d.ts",
    "pkg/node/mandate_wasm_bg.wasm",
    "pkg/web/web.js",
    "pkg/web/web.d.ts",
    "pkg/web/package.json",
    "pkg/web/mandate_wasm_bg.wasm",
  ]) {
    assert.ok(files.includes(needed), `${needed} missing from ${files.join(", ")}`);
  }
  assert.deepEqual(files.filter((f) => /^(src|ts|test|bench)\/|\.rs$|tsconfig/.test(f)), []);
});

test("CommonJS: require is synchronous and complete", () => {
  write(
    "use.cjs",
    `const assert = require("node:assert/strict");
    const sdk = require("mandate-sdk");
    const { token, now, jwks } = require("./vector.json");
    assert.equal(sdk.verifyToken(token, jwks, { now }).valid, true);
    assert.equal(new sdk.Verifier(jwks).verify(token, now).valid, true);
    assert.equal(typeof new sdk.MandateClient({ baseUrl: "http://127.0.0.1:1" }).records, "function");
    assert.ok(new sdk.MandateError(400, { code: "x" }) instanceof Error);
    assert.equal(require("mandate-sdk/package.json").name, "mandate-sdk");
    console.log("cjs ok");`,
  );
  assert.equal(run(process.execPath, ["use.cjs"], project).trim(), "cjs ok");
});

test("ESM: the Node entry and the web entry with init()", () => {
  write(
    "use.mjs",
    `import assert from "node:assert/strict";
    import { readFileSync } from "node:fs";
    import { createRequire } from "node:module";
    import sdk, { verifyToken, Verifier, MandateClient } from "mandate-sdk";
    import init, { verifyToken as webVerifyToken, MandateClient as WebClient } from "mandate-sdk/web";
    const require = createRequire(import.meta.url);
    const { token, now, jwks } = require("./vector.json");
    assert.equal(verifyToken(token, jwks, { now }).valid, true);
    assert.equal(sdk.verifyToken, verifyToken);
    assert.equal(new Verifier(jwks).verify(token, now).valid, true);
    assert.equal(typeof MandateClient, "function");
    await init(readFileSync(require.resolve("mandate-sdk/mandate.wasm")));
    assert.equal(webVerifyToken(token, jwks, { now }).valid, true);
    assert.equal(typeof WebClient, "function");
    console.log("esm ok");`,
  );
  assert.equal(run(process.execPath, ["use.mjs"], project).trim(), "esm ok");
});

test("without the frameworks: the adapters load and are not pulled in", () => {
  // The frameworks are optional peers: installing mandate-sdk brings none of them.
  for (const framework of ["@modelcontextprotocol/sdk", "ai", "@openai/agents"]) {
    assert.throws(() => run(process.execPath, ["-e", `require.resolve(${JSON.stringify(framework)})`], project));
  }
  const files = packed.files.map((f) => f.path);
  for (const adapter of ["mcp", "ai", "openai-agents", "authzen"]) {
    for (const file of [`js/${adapter}.mjs`, `js/${adapter}.d.mts`, `pkg/node/${adapter}.js`, `pkg/web/${adapter}.js`]) {
      assert.ok(files.includes(file), `${file} missing from the tarball`);
    }
  }
  write(
    "adapters.mjs",
    `import assert from "node:assert/strict";
    import { createRequire } from "node:module";
    import { mandateAuth, mandateTool, protectedResourceMetadata } from "mandate-sdk/mcp";
    import { withMandate, mandateToolApproval } from "mandate-sdk/ai";
    import { mandateAgents, MandateAgents } from "mandate-sdk/openai-agents";
    import { AuthzenPep, guard } from "mandate-sdk/authzen";
    const require = createRequire(import.meta.url);
    for (const fn of [mandateAuth, mandateTool, protectedResourceMetadata, withMandate, mandateToolApproval, mandateAgents, MandateAgents, AuthzenPep, guard]) {
      assert.equal(typeof fn, "function");
    }
    assert.equal(require("mandate-sdk/mcp").mandateTool, mandateTool);
    assert.equal(typeof require("mandate-sdk/ai").withMandate, "function");
    assert.equal(typeof require("mandate-sdk/openai-agents").mandateAgents, "function");
    assert.equal(require("mandate-sdk/authzen").guard, guard);
    const { MandateClient } = require("mandate-sdk");
    assert.equal(typeof new MandateClient({ baseUrl: "http://127.0.0.1:1" }).act, "function");
    console.log("adapters ok");`,
  );
  assert.equal(run(process.execPath, ["adapters.mjs"], project).trim(), "adapters ok");
});

// tsc's verdict does not depend on the Node that runs it: the test command
// type-checks under its first Node and sets MANDATE_TYPES_CHECKED for the
// other versions' runs of this file (13 s each).
const typesChecked = process.env.MANDATE_TYPES_CHECKED === "1" && "type-checked under the first Node of this run";

test("TypeScript: the declarations type-check a strict consumer", { skip: typesChecked }, () => {
  // `use` stands for any consumer of values (no console without DOM or Node types).
  const usage = (from) => `
    declare function use(...values: unknown[]): void;
    const jwks: Jwks = { keys: [] };
    const result: VerifyResult = verifyToken("a.b.c", jwks, { now: 1, leewaySeconds: 0, issuer: "x", revoked: [] });
    if (result.valid) {
      const resources: string[] = result.claims.svc_scope.resources;
      const depth: number = result.claims.svc_depth;
      use(resources, depth, result.header.kid);
    } else {
      const code: string = result.error.code;
      use(code, result.error.stage);
    }
    const verifier = new Verifier(jwks, { cacheSize: 64, revoked: ["vat_root_x"] });
    const again: VerifyResult = verifier.verify("a.b.c");
    use(again.valid, verifier.cached, verifier.error?.code);
    verifier.free();
    const chain: ChainResult = verifyChain(["a.b.c"], JSON.stringify(jwks), { revoked: [] });
    const permit: PermitResult = permits({ resources: ["crm:*"], actions: ["read"] }, "read", "crm:x");
    const narrowing: NarrowingResult = checkNarrowing({ resources: ["crm:x"], actions: ["read"], exp: 2 }, { resources: ["crm:*"], actions: ["read"], exp: 3 });
    const hash: string | null = sha256Ref(new Uint8Array([1, 2, 3]));
    const score = reputation({ successes: 1 });
    if (!("error" in score)) use(score.combined_reputation);
    const summary = summarizeWorkflow([{ agent_id: "a", action: "read", status: "completed", result: "success" }], "prov_x");
    use(chain.valid, permit.ok, narrowing.violations.length, hash, summary);
    const decoded: DecodeResult = decodeTokenUnverified("a.b.c");
    use(decoded.ok);
    const client = new MandateClient({ baseUrl: "https://mandate.example", apiKey: "mk_x" });
    async function flow(): Promise<void> {
      const issued: IssuedToken = await client.issueL1({ developer_email: "a@b.c", agent_id: "bot", resources: ["crm:*"], actions: ["read", "delegate"] });
      const verifier: Verifier = await client.verifier({ cacheSize: 8 });
      const recorded: RecordActionResponse = await client.recordAction({ vat_jti: issued.jti, action: "read", resource: "crm:a", result: "success" }, { token: issued.compact_jwt });
      const key: AgentKey = generateAgentKey();
      const bound: IssuedToken = await client.issueL1({ developer_email: "a@b.c", agent_id: "bot", resources: ["crm:*"], actions: ["read", "delegate"], holder_key: key.publicJwk });
      const tokenType: "Bearer" | "DPoP" = bound.token_type;
      const child: DelegatedToken = await client.delegate({ agent_id: "sub", resources: ["crm:a"], actions: ["read"] }, { token: bound.compact_jwt, key });
      const checked: VerifyResult = verifier.verifyRequest(child.compact_jwt, { method: "POST", url: "https://x/y", proof: "p" });
      use(tokenType, checked.valid, key.jkt);
      for await (const record of client.records({ provenance_ref: child.provenance_ref, since: new Date() })) {
        const status: "awaiting_approval" | "pending" | "completed" | "denied" = record.status;
        const argsHash: string | undefined = record.args_hash;
        const kept: JsonValue | undefined = record.args?.to;
        use(status, argsHash, kept);
      }
      // A call's arguments: sent as a JSON object, judged offline by the token's rules, and by a verifier.
      const args: JsonObject = { to: ["ann@example.com"], amount_usd: 5, draft: { urgent: false } };
      const permitted: AuthorizeResponse = await client.authorize({ action: "send", resource: "mail:outbox", args }, { token: issued.compact_jwt });
      const refusal: MandateError | undefined = checkArgsOffline(issued.compact_jwt, { action: "send", resource: "mail:outbox", args });
      const attempt: AttemptResult = await verifyAttempt(verifier, issued.compact_jwt, { action: "send", resource: "mail:outbox", args });
      if (!attempt.valid) use(attempt.error.code, attempt.error.stage);
      await client.recordActions([{ action: "send", resource: "mail:outbox", result: "success", args }], { token: issued.compact_jwt });
      use(permitted.authorized, refusal?.code);
      const asked: AuthorizeResponse = await client.authorize(
        { action: "pay", resource: "bank:x", spend_usd: 40 },
        { token: issued.compact_jwt, waitForApproval: { timeoutSeconds: 600 } },
      );
      if (asked.approval !== undefined) {
        const state: ApprovalStatus = asked.approval.status;
        const approval: Approval = await client.approval(asked.approval.approval_id, { wait: 30 });
        const decided: Approval = await client.decide(approval.approval_id, { decision: "approve", note: "fine" });
        use(state, asked.reason, decided.chain[0]?.agent_id, decided.record_status, decided.decided_by);
      }
      for await (const event of client.events({ lastEventId: "msg_x", onOpen: () => use("open") })) {
        if (event.type === "approval.decided") {
          const status: "pending" | "approved" | "denied" | "expired" = event.data.status;
          use(status, event.data.approval_id, event.id, event.timestamp);
        } else if (event.type === "budget.threshold") {
          const percent: 80 | 100 = event.data.threshold_percent;
          use(percent);
        }
      }
      use(recorded.aar_id, verifier.cached);
      try {
        await client.feedback(recorded.aar_id, { rating: "approved" });
      } catch (error) {
        if (error instanceof MandateError) use(error.status, error.code, error.title, error.detail, error.problem.aar_id);
      }
    }
    void flow;
    const hook: WebhookResult = verifyWebhook(["whsec_a", "whsec_b"], { "webhook-id": "x", "webhook-signature": ["a", "b"], host: undefined }, new Uint8Array(), { toleranceSeconds: 60, now: 1 });
    if (hook.valid) {
      const type: WebhookEventType = hook.event.type;
      use(type, hook.id, hook.event.timestamp, hook.event.data);
    } else {
      use(hook.error.code, hook.error.stage);
    }
    // ${from}
  `;
  const imports = `{
    verifyToken, verifyChain, decodeTokenUnverified, permits, checkNarrowing, sha256Ref, reputation,
    summarizeWorkflow, Verifier, MandateClient, MandateError, AgentKey, generateAgentKey,
    type Jwks, type VerifyResult, type ChainResult, type PermitResult, type NarrowingResult,
    type DecodeResult, type IssuedToken, type RecordActionResponse, type DelegatedToken,
    verifyWebhook, type WebhookResult, type WebhookEventType,
    type AuthorizeResponse, type Approval, type ApprovalStatus,
    checkArgsOffline, verifyAttempt, type AttemptResult, type JsonObject, type JsonValue,
  }`;
  write("check.ts", `import ${imports} from "mandate-sdk";\n${usage("CommonJS")}`);
  write("check-esm.mts", `import sdk, ${imports} from "mandate-sdk";\n${usage("ESM")}\nuse(typeof sdk.verifyToken);`);
  write(
    "check-web.mts",
    `import init, ${imports} from "mandate-sdk/web";\nawait init(new URL("https://cdn.example/mandate.wasm"));\n${usage("web")}`,
  );
  const compilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: false,
    target: "es2022",
    module: "node16",
    moduleResolution: "node16",
    types: [],
  };
  // Node consumers need no DOM types; the web entry's init() names fetch's.
  write("tsconfig.node.json", JSON.stringify({ compilerOptions: { ...compilerOptions, lib: ["es2022", "esnext.disposable"] }, files: ["check.ts", "check-esm.mts"] }));
  write("tsconfig.web.json", JSON.stringify({ compilerOptions: { ...compilerOptions, lib: ["es2022", "esnext.disposable", "dom"] }, files: ["check-web.mts"] }));
  for (const config of ["tsconfig.node.json", "tsconfig.web.json"]) {
    try {
      run(process.execPath, [tsc, "-p", config], project);
    } catch (error) {
      assert.fail(`tsc -p ${config}:\n${error.stdout}${error.stderr}`);
    }
  }
});

test("an adapter outside its supported Node or framework versions throws at first use, naming both", () => {
  // Fake frameworks (a package.json each), written where Node resolves them
  // from the installed package and rewritten between calls: the check reads
  // the version at each first use. The ranges expected are the package's own
  // peer ranges and engines; on the machine's Node 20 the AI SDK and Agents
  // adapters refuse the Node too.
  write(
    "support.cjs",
    `const assert = require("node:assert/strict");
    const { mkdirSync, rmSync, writeFileSync } = require("node:fs");
    const { join } = require("node:path");
    const { MandateClient, MandateError } = require("mandate-sdk");
    const { withMandate, mandateToolApproval } = require("mandate-sdk/ai");
    const { mandateAgents } = require("mandate-sdk/openai-agents");
    const { mandateTool, mandateTokenVerifier } = require("mandate-sdk/mcp");
    const { engines, peerDependencies } = require("mandate-sdk/package.json");
    const client = new MandateClient({ baseUrl: "http://127.0.0.1:1" });
    const ai = { framework: "ai", minNode: 22, inside: ["7.0.0", "7.0.173", "7.99.1"], outside: ["6.0.326", "8.0.0", "7.0.0-beta.5"] };
    const agents = { framework: "@openai/agents", minNode: 22, inside: ["0.20.0", "0.99.0"], outside: ["0.19.2", "1.0.0"] };
    const mcp = { framework: "@modelcontextprotocol/sdk", minNode: Number(/^>=(\\d+)$/.exec(engines.node)[1]), inside: ["1.32.0", "1.40.1"], outside: ["1.31.0", "2.0.0"] };
    const uses = [
      ["ai", ai, () => withMandate({}, { client, token: "t", actions: {} })],
      ["ai", ai, () => mandateToolApproval()],
      ["openai-agents", agents, () => mandateAgents({ client, token: "t" })],
      ["mcp", mcp, () => mandateTool(client, { action: "a", resource: "r:x" }, async () => ({ content: [] }))],
      ["mcp", mcp, () => mandateTokenVerifier({ verifier: { verify: async () => ({ valid: false }) }, invalidTokenError: Error })],
    ];
    function install(framework, manifest) {
      const dir = join("node_modules", framework);
      rmSync(dir, { recursive: true, force: true });
      if (manifest !== undefined) {
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, "package.json"), JSON.stringify({ name: framework, ...manifest }));
      }
    }
    function thrown(use) {
      try {
        use();
      } catch (error) {
        return error;
      }
      return undefined;
    }
    const node = process.versions.node;
    let refused = 0;
    for (const [adapter, { framework, minNode, inside, outside }, use] of uses) {
      const oldNode = Number(node.split(".")[0]) < minNode;
      const head = "mandate-sdk/" + adapter + " supports Node " + minNode + " or later with " + framework + " " + peerDependencies[framework] + "; found ";
      const cases = [
        ...inside.map((version) => [{ version }, undefined]),
        ...outside.map((version) => [{ version }, framework + " " + version]),
        [{}, framework + " without a version"],
        [undefined, "no " + framework + " package"],
      ];
      for (const [manifest, found] of cases) {
        install(framework, manifest);
        const error = thrown(use);
        const problems = [...(oldNode ? ["Node " + node] : []), ...(found === undefined ? [] : [found])];
        if (problems.length === 0) {
          assert.equal(error, undefined, adapter + " with " + JSON.stringify(manifest) + ": " + error);
          continue;
        }
        assert.ok(error instanceof MandateError, adapter + " with " + JSON.stringify(manifest) + ": " + error);
        assert.deepEqual([error.status, error.code], [0, "unsupported_environment"]);
        assert.ok(error.detail.startsWith(head + problems.join(" and ") + " ("), error.detail);
        refused += 1;
      }
      install(framework, undefined);
    }
    assert.ok(refused >= 20);
    console.log("support ok");`,
  );
  assert.equal(run(process.execPath, ["support.cjs"], project).trim(), "support ok");
});
