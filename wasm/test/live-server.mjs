// A live `mandate serve` for the suites that need one: started on port 0
// with a fresh data folder from the binary MANDATE_BIN names (`cargo xtask
// test` sets it), its address read from its first line, its admin key from
// the folder. `stop()` ends it and removes the folder. `listen` and `config`
// (the text of a TOML configuration file) change how it serves.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

/** Starts a server; resolves with `{ baseUrl, apiKey, dataDir, process, stop }` once it listens. */
export async function startServer({ binary = process.env.MANDATE_BIN, args = [], listen = "127.0.0.1:0", config } = {}) {
  if (!binary) {
    throw new Error("set MANDATE_BIN to the mandate server binary");
  }
  const dataDir = mkdtempSync(join(tmpdir(), "mandate-sdk-live-"));
  const configArgs = [];
  if (config !== undefined) {
    const file = join(dataDir, "config.toml");
    writeFileSync(file, config, { mode: 0o600 });
    configArgs.push("--config", file);
  }
  const server = spawn(binary, ["serve", "--listen", listen, "--data-dir", dataDir, ...configArgs, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stop = () => {
    server.kill();
    rmSync(dataDir, { recursive: true, force: true });
  };
  // The log is kept (its tail) to explain a failed start.
  let log = "";
  server.stderr.on("data", (chunk) => {
    log = (log + chunk).slice(-8192);
  });
  let baseUrl;
  try {
    baseUrl = await new Promise((resolve, reject) => {
      const fail = (why) => reject(new Error(`${why}; its log ends:\n${log}`));
      const timer = setTimeout(() => fail("the server did not start within 60 s"), 60_000);
      server.once("error", reject);
      server.once("exit", (code) => fail(`the server exited with ${code} before listening`));
      createInterface({ input: server.stdout }).on("line", (line) => {
        const address = /listening on (http:\/\/\S+)/.exec(line)?.[1];
        if (address) {
          clearTimeout(timer);
          resolve(address);
        }
      });
    });
  } catch (error) {
    stop();
    throw error;
  }
  const apiKey = readFileSync(join(dataDir, "admin.key"), "utf8").trim();
  return { baseUrl, apiKey, dataDir, process: server, stop };
}

/** A port on loopback free now (for a server whose configuration names its own address). */
export async function freePort() {
  const probe = createServer();
  await new Promise((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
