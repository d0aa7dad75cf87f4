// The verifier suite in Deno: the web build initialised with a compiled
// module, and the package's default entry as Deno resolves it from
// node_modules. `deno run --no-lock --allow-read=node_modules/mandate-sdk
// deno.mjs`, from this folder: reading the package's .wasm files needs the
// permission; the vectors are JSON modules, loaded as code is.
import { runBuilds, wasmUrl, webBuild } from "./run-builds.mjs";

const ok = await runBuilds(`Deno ${Deno.version.deno}`, [
  { name: "mandate-sdk/web, init(WebAssembly.Module)", load: async () => webBuild(await Deno.readFile(wasmUrl())) },
  { name: "mandate-sdk (as Deno resolves it)", load: () => import("mandate-sdk") },
]);
Deno.exit(ok ? 0 : 1);
