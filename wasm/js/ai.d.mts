import * as ai from "../pkg/node/ai.js";

export * from "../pkg/node/ai.js";
export default ai;
