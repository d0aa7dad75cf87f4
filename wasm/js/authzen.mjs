// The Node ESM entry of mandate-sdk/authzen: the CommonJS build
// re-exported, so that `import` and `require` share one instance of the
// client and the wasm module. Every name the CommonJS build exports is
// listed here (a test checks).
import pep from "../pkg/node/authzen.js";

export const { AuthzenPep, guard } = pep;

export default pep;
