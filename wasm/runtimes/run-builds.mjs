// What the Node, Deno and Bun entries share: load each build of mandate-sdk
// the runtime offers, run the verifier suite against it, print what failed
// and one closing line `N passed, N failed` for them all. workerd's worker
// answers a request instead (worker.mjs). The package is the built one that
// xtask (xtask/src/runtimes.rs) copies into node_modules/mandate-sdk before
// each run, as npm would install it.
import { report, runVerifierSuite, succeeded } from "./verifier-suite.mjs";
import vectors from "./vectors.mjs";

/**
 * `builds` is a list of `{ name, load }`, where `load()` resolves to the
 * SDK's exports, ready to call. A build that fails to load counts as one
 * failed check. Resolves to whether every build ran checks and none failed.
 */
export async function runBuilds(runtime, builds) {
  const total = { passed: 0, failed: 0, failures: [] };
  for (const { name, load } of builds) {
    let result;
    try {
      result = runVerifierSuite(await load(), vectors);
    } catch (error) {
      result = { passed: 0, failed: 1, failures: [{ name: "loading the build", detail: String(error?.stack ?? error) }] };
    }
    console.log(`${runtime}, ${name}: ${result.passed} checks passed, ${result.failed} failed`);
    total.passed += result.passed;
    total.failed += result.failed;
    total.failures.push(...result.failures.map((failure) => ({ ...failure, name: `${name}: ${failure.name}` })));
  }
  console.log(report(runtime, total));
  return builds.length > 0 && succeeded(total);
}

/** The web build (`mandate-sdk/web`), initialised with a compiled `WebAssembly.Module` of these bytes. */
export async function webBuild(bytes) {
  const web = await import("mandate-sdk/web");
  await web.init(await WebAssembly.compile(bytes));
  return web;
}

/** Where `mandate-sdk/mandate.wasm` resolves (the web build's module), as a file URL. */
export function wasmUrl() {
  return new URL(import.meta.resolve("mandate-sdk/mandate.wasm"));
}
