// The verifier suite in Node (22 and 24 from wasm/runtimes' node_modules;
// any Node ≥ 20 runs it): the web build initialised with a compiled module,
// and the package's default entry as Node resolves it (ES module over the
// CommonJS build). `node node.mjs`, from this folder.
import { readFile } from "node:fs/promises";
import { runBuilds, wasmUrl, webBuild } from "./run-builds.mjs";

const ok = await runBuilds(`Node ${process.versions.node}`, [
  { name: "mandate-sdk/web, init(WebAssembly.Module)", load: async () => webBuild(await readFile(wasmUrl())) },
  { name: "mandate-sdk (the node condition)", load: () => import("mandate-sdk") },
]);
process.exitCode = ok ? 0 : 1;
