// The verifier suite in workerd, Cloudflare's edge runtime: a worker that
// answers any request with the suite's report (`N passed, N failed` last),
// status 200 when every check passed and 500 otherwise. esbuild bundles it
// with the SDK's web build and the vectors (a worker has no file system);
// the module stays outside the bundle, and workerd hands it over compiled,
// as an edge platform does:
//   esbuild worker.mjs --bundle --format=esm --platform=neutral \
//     --external:./mandate.wasm --outfile=dist/worker.js
//   workerd serve config.capnp --socket-addr http=127.0.0.1:<port>
import init, * as sdk from "mandate-sdk/web";
import wasm from "./mandate.wasm";
import { report, runVerifierSuite, succeeded } from "./verifier-suite.mjs";
import vectors from "./vectors.mjs";

let ready;

export default {
  async fetch() {
    ready ??= init(wasm);
    try {
      await ready;
    } catch (error) {
      return new Response(`workerd: init failed: ${error?.stack ?? error}\n0 passed, 1 failed\n`, { status: 500 });
    }
    const result = runVerifierSuite(sdk, vectors);
    const lines = `workerd, mandate-sdk/web, init(WebAssembly.Module): ${result.passed} checks passed, ${result.failed} failed`;
    return new Response(`${lines}\n${report("workerd", result)}\n`, {
      status: succeeded(result) ? 200 : 500,
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  },
};
