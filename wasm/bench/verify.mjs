// Verification in Node, side by side in one process: mandate-sdk's
// verifyToken and Verifier.verify (uncached and through the cache) against
// jose's jwtVerify with a local JWKS, all on the same valid token. Rounds
// interleave the contenders; each figure is the median (with min and max) of
// the per-round figures, as wall time per call. Run after `cargo xtask wasm`:
//   node bench/verify.mjs [--quick] [--json]
// `cargo xtask bench` runs it with --json.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createLocalJWKSet, jwtVerify } from "jose";

const args = process.argv.slice(2);
const quick = args.includes("--quick");
const asJson = args.includes("--json");
const sdk = createRequire(import.meta.url)("..");
const vectors = JSON.parse(readFileSync(new URL("../../tests/vectors/tokens.json", import.meta.url)));
const { token, now } = vectors.cases.find((c) => c.name === "valid_root");
const jwks = vectors.jwks;

const verifier = new sdk.Verifier(jwks);
const cached = new sdk.Verifier(jwks, { cacheSize: 1024 });
const keySet = createLocalJWKSet(jwks);
const joseOptions = { currentDate: new Date(now * 1000), typ: "vat+jwt", algorithms: ["EdDSA"] };

function check(valid, name) {
  if (!valid) throw new Error(`${name} did not verify the token`);
}

const contenders = {
  verifyToken: () => check(sdk.verifyToken(token, jwks, { now }).valid, "verifyToken"),
  verifier: () => check(verifier.verify(token, now).valid, "Verifier"),
  cached: () => check(cached.verify(token, now).valid, "cached Verifier"),
  jose: async () => check((await jwtVerify(token, keySet, joseOptions)).payload, "jose"),
};

const calls = quick ? 100 : 1000;
const rounds = quick ? 3 : 15;
const times = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
for (let round = 0; round <= rounds; round++) {
  for (const [name, call] of Object.entries(contenders)) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) await call();
    // Round 0 warms up and is not counted.
    if (round > 0) times[name].push(Number(process.hrtime.bigint() - started) / calls);
  }
}

function spread(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)], min: sorted[0], max: sorted[sorted.length - 1] };
}
const ratio = (a, b) => spread(times[a].map((t, i) => t / times[b][i]));
const report = {
  rounds,
  calls,
  node: process.version,
  ns: Object.fromEntries(Object.entries(times).map(([name, samples]) => [name, spread(samples)])),
  jose_over_verifyToken: ratio("jose", "verifyToken"),
  jose_over_verifier: ratio("jose", "verifier"),
  jose_over_cached: ratio("jose", "cached"),
  verifier_over_cached: ratio("verifier", "cached"),
};
if (asJson) {
  console.log(JSON.stringify(report));
} else {
  console.log(`median ns per call over ${rounds} interleaved rounds of ${calls} calls`);
  for (const [name, s] of Object.entries(report.ns)) console.log(`${name.padEnd(12)} ${s.median.toFixed(0).padStart(8)}`);
  console.log(`jose / verifyToken ${report.jose_over_verifyToken.median.toFixed(2)}`);
  console.log(`jose / Verifier    ${report.jose_over_verifier.median.toFixed(2)}`);
  console.log(`jose / cache hit   ${report.jose_over_cached.median.toFixed(2)}`);
}
