import * as adapter from "../pkg/node/openai-agents.js";

export * from "../pkg/node/openai-agents.js";
export default adapter;
