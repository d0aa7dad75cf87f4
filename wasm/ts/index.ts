// The Node entry of mandate-sdk: the wasm build for Node (loaded
// synchronously on require) and the HTTP client.

export * from "./mandate_wasm.js";
export * from "./client/index.js";
export * from "./log.js";
export * from "./remote.js";
export * from "./webhooks.js";
