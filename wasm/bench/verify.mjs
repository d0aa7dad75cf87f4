// A first figure, not the formal benchmark: verifies the same valid token
// with mandate-sdk and with jose's jwtVerify in Node, and prints the median
// time per call over interleaved rounds, as wall time and as the process's
// CPU time (steadier on a busy machine: it leaves out time spent waiting
// for a core). jose's work on Node's thread pool counts in its CPU time.
// Run after `cargo xtask wasm`: node bench/verify.mjs [calls per round]
// On a machine busy with other work, `chrt -f 10 node bench/verify.mjs`
// (real-time priority) measures the code rather than the scheduler.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createLocalJWKSet, importJWK, jwtVerify } from "jose";

const sdk = createRequire(import.meta.url)("..");
const vectors = JSON.parse(readFileSync(new URL("../../tests/vectors/tokens.json", import.meta.url)));
const { token, now } = vectors.cases.find((c) => c.name === "valid_root");
const jwks = vectors.jwks;

const verifier = new sdk.Verifier(jwks);
const cached = new sdk.Verifier(jwks, { cacheSize: 1024 });
const key = await importJWK(jwks.keys[0], "EdDSA");
const keySet = createLocalJWKSet(jwks);
const joseOptions = { currentDate: new Date(now * 1000), typ: "vat+jwt", algorithms: ["EdDSA"] };

function check(valid, name) {
  if (!valid) throw new Error(`${name} did not verify the token`);
}

const contenders = {
  "mandate-sdk verifyToken (key set object)": () => check(sdk.verifyToken(token, jwks, { now }).valid, "verifyToken"),
  "mandate-sdk Verifier.verify": () => check(verifier.verify(token, now).valid, "Verifier"),
  "mandate-sdk Verifier.verify, cache hit": () => check(cached.verify(token, now).valid, "cached Verifier"),
  "jose jwtVerify (imported key)": async () => check((await jwtVerify(token, key, joseOptions)).payload, "jose"),
  "jose jwtVerify (createLocalJWKSet)": async () => check((await jwtVerify(token, keySet, joseOptions)).payload, "jose"),
};

const calls = Number(process.argv[2] ?? 500);
const rounds = 9;
const times = Object.fromEntries(Object.keys(contenders).map((name) => [name, { wall: [], cpu: [] }]));
for (let round = 0; round <= rounds; round++) {
  for (const [name, call] of Object.entries(contenders)) {
    const wall = process.hrtime.bigint();
    const cpu = process.cpuUsage();
    for (let i = 0; i < calls; i++) await call();
    const used = process.cpuUsage(cpu);
    // Round 0 warms up and is not counted.
    if (round > 0) {
      times[name].wall.push(Number(process.hrtime.bigint() - wall) / 1000 / calls);
      times[name].cpu.push((used.user + used.system) / calls);
    }
  }
}
const median = (samples) => samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)];
console.log(`median µs per call over ${rounds} rounds of ${calls} calls`);
console.log(`${"".padEnd(42)} ${"wall".padStart(7)} ${"cpu".padStart(7)}`);
for (const [name, { wall, cpu }] of Object.entries(times)) {
  console.log(`${name.padEnd(42)} ${median(wall).toFixed(1).padStart(7)} ${median(cpu).toFixed(1).padStart(7)}`);
}
