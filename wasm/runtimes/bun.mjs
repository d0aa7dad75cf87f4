// The verifier suite in Bun: the web build initialised with a compiled
// module, and the package's default entry as Bun resolves it. `bun bun.mjs`,
// from this folder.
import { runBuilds, wasmUrl, webBuild } from "./run-builds.mjs";

const ok = await runBuilds(`Bun ${Bun.version}`, [
  { name: "mandate-sdk/web, init(WebAssembly.Module)", load: async () => webBuild(await Bun.file(wasmUrl()).arrayBuffer()) },
  { name: "mandate-sdk (as Bun resolves it)", load: () => import("mandate-sdk") },
]);
process.exit(ok ? 0 : 1);
