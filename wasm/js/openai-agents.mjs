// The Node ESM entry of mandate-sdk/openai-agents: the CommonJS build
// re-exported, so that `import` and `require` share one instance of the
// client and the wasm module. Every name the CommonJS build exports is
// listed here (a test checks).
import adapter from "../pkg/node/openai-agents.js";

export const { MandateAgents, mandateAgents } = adapter;

export default adapter;
