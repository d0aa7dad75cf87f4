// The browser and edge entry of mandate-sdk (`mandate-sdk/web`): the wasm
// build for the web, which must be initialised once with `init()` before any
// other function is called, and the HTTP client.

import initWasm, { type InitInput } from "./mandate_wasm.js";

export * from "./mandate_wasm.js";
export * from "./client/index.js";
export * from "./log.js";
export * from "./remote.js";
export * from "./webhooks.js";

/**
 * Loads the WebAssembly module; call once, before anything else. `input` is
 * the module's bytes, its URL (or a fetch `Response`), or a compiled
 * `WebAssembly.Module` (as edge workers import it). Without it, the module
 * is fetched from beside this file. Calling again does nothing.
 */
export async function init(input?: InitInput | Promise<InitInput>): Promise<void> {
  await initWasm(input === undefined ? undefined : { module_or_path: input });
}

export default init;
