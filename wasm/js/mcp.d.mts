import * as mcp from "../pkg/node/mcp.js";

export * from "../pkg/node/mcp.js";
export default mcp;
