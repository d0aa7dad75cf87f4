// The Node ESM entry of mandate-sdk/ai: the CommonJS build re-exported, so
// that `import` and `require` share one instance of the wasm module and of
// the client classes (a refusal is `instanceof MandateRefusal` either way).
// Every name the CommonJS build exports is listed here.
import ai from "../pkg/node/ai.js";

export const { mandateApprovalResponse, mandateToolApproval, withMandate } = ai;

export default ai;
