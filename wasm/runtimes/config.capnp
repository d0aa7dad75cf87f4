# workerd's configuration for the verifier suite (worker.mjs, bundled by
# esbuild into dist/worker.js) with the SDK's web module as a compiled wasm
# module. The socket's address is a placeholder: xtask gives a free port on
# 127.0.0.1 with `--socket-addr http=127.0.0.1:<port>`.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [(name = "verifier", worker = .verifier)],
  sockets = [(name = "http", address = "127.0.0.1:0", http = (), service = "verifier")],
);

const verifier :Workerd.Worker = (
  modules = [
    (name = "worker.js", esModule = embed "dist/worker.js"),
    (name = "mandate.wasm", wasm = embed "../pkg/web/mandate_wasm_bg.wasm"),
  ],
  compatibilityDate = "2026-11-01",
);
