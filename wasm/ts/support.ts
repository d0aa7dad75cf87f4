// What each framework adapter supports, checked at its first use: the Node
// major its framework needs and the framework versions the adapter was
// written and tested for (the same ranges as the package's
// `peerDependencies`, which a test holds them to). A combination outside
// them throws `unsupported_environment`, naming what is supported and what
// was found, rather than run with a framework that would ignore the
// adapter's hooks — AI SDK 6, which npm installs on Node 20, never calls
// `toolApproval`.
//
// The Node version is read where `process.versions.node` exists (Node, and
// the runtimes that imitate it). The framework's version is read from its
// `package.json`, found where Node's `require` would look for it from this
// package: where there is no module resolution at run time (a bundle, a
// browser, an edge worker) that check cannot run, and the peer ranges npm
// and bundlers check at install time are what remains.

import { MandateError } from "./client/index.js";

/** A version as major, minor, patch. */
type Triple = readonly [number, number, number];

/** What one adapter supports. */
export interface AdapterSupport {
  /** The adapter's entry, e.g. `mandate-sdk/ai`. */
  adapter: string;
  /** The oldest Node major it runs on. */
  nodeMajor: number;
  /** The framework's npm name. */
  framework: string;
  /** The framework's versions, as in the package's `peerDependencies`. */
  range: string;
  /** The oldest version of the range. */
  from: Triple;
  /** The first version past the range. */
  below: Triple;
  /** What goes wrong outside the range, told with the refusal. */
  why: string;
}

/** What was found: each `undefined` when it cannot be told here. */
export interface FoundEnvironment {
  /** `process.versions.node`. */
  node: string | undefined;
  /** The framework's `version`; `null` when it is not installed where Node would look. */
  framework: string | null | undefined;
}

/** AI SDK 7 needs Node 22 (its `engines`). */
export const AI_SUPPORT: AdapterSupport = {
  adapter: "mandate-sdk/ai",
  nodeMajor: 22,
  framework: "ai",
  range: "^7.0.0",
  from: [7, 0, 0],
  below: [8, 0, 0],
  why: "the AI SDK before 7 never calls the toolApproval hook, and AI SDK 7 needs Node 22",
};

/** The Agents SDK 0.20 needs Node 22 (the `engines` of the `openai` 7 client it depends on). */
export const OPENAI_AGENTS_SUPPORT: AdapterSupport = {
  adapter: "mandate-sdk/openai-agents",
  nodeMajor: 22,
  framework: "@openai/agents",
  range: ">=0.20.0 <1",
  from: [0, 20, 0],
  below: [1, 0, 0],
  why: "the adapter is written and tested against the tool options of 0.20 (needsApproval with the call id, tool input guardrails), and the Agents SDK's openai 7 client needs Node 22",
};

/** The MCP SDK runs on Node 18 (its `engines`); the package's own floor, Node 20, is the adapter's. */
export const MCP_SUPPORT: AdapterSupport = {
  adapter: "mandate-sdk/mcp",
  nodeMajor: 20,
  framework: "@modelcontextprotocol/sdk",
  range: "^1.32.0",
  from: [1, 32, 0],
  below: [2, 0, 0],
  why: "the gate is written and tested against the SDK's handlers and URL-mode elicitation of 1.32",
};

function parse(version: string): Triple | undefined {
  const match = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  return match === null ? undefined : [Number(match[1]), Number(match[2]), Number(match[3])];
}

function compare(a: Triple, b: Triple): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/**
 * Why `found` is outside what `support` names, as a sentence; `undefined`
 * when it is inside (or cannot be told). A pre-release or an unreadable
 * version is outside.
 */
export function unsupportedReason(support: AdapterSupport, found: FoundEnvironment): string | undefined {
  const problems: string[] = [];
  if (found.node !== undefined) {
    const major = Number(/^v?(\d+)\./.exec(found.node)?.[1]);
    if (!(major >= support.nodeMajor)) {
      problems.push(`Node ${found.node}`);
    }
  }
  if (found.framework === null) {
    problems.push(`no ${support.framework} package`);
  } else if (found.framework !== undefined) {
    const version = parse(found.framework);
    if (version === undefined || compare(version, support.from) < 0 || compare(version, support.below) >= 0) {
      problems.push(`${support.framework} ${found.framework || "without a version"}`);
    }
  }
  if (problems.length === 0) {
    return undefined;
  }
  return (
    `${support.adapter} supports Node ${support.nodeMajor} or later with ${support.framework} ${support.range}; ` +
    `found ${problems.join(" and ")} (${support.why})`
  );
}

/** The `version` in the `package.json` of `name` where Node's `require` would find it from here. */
function installedVersion(name: string): string | null | undefined {
  const load = typeof require === "function" ? require : undefined;
  const dirs = load?.resolve?.paths?.(name);
  if (load === undefined || dirs === undefined || dirs === null) {
    return undefined;
  }
  const fs = load("node:fs") as { readFileSync(path: string, encoding: "utf8"): string };
  for (const dir of dirs) {
    let text: string;
    try {
      text = fs.readFileSync(`${dir}/${name}/package.json`, "utf8");
    } catch {
      continue;
    }
    const version: unknown = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === "string" ? version : "";
  }
  return null;
}

/** What runs here, as far as it can be told. */
export function foundEnvironment(framework: string): FoundEnvironment {
  const process = (globalThis as { process?: { versions?: { node?: unknown } } }).process;
  const node = process?.versions?.node;
  return { node: typeof node === "string" ? node : undefined, framework: installedVersion(framework) };
}

/** Throws `unsupported_environment` when this Node or the installed framework is outside what `support` names. */
export function requireSupported(support: AdapterSupport): void {
  const reason = unsupportedReason(support, foundEnvironment(support.framework));
  if (reason !== undefined) {
    throw new MandateError(0, { code: "unsupported_environment", title: "Unsupported environment", detail: reason });
  }
}
