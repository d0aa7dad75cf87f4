// A record's proof verified in Node, side by side in one process:
// mandate-sdk's verifyLogProof (core's rules in wasm) against the
// independent JavaScript verifier of the test suite (node:crypto), on the
// same proof: a leaf near the end of the vectors' log of 1100 leaves, in
// its largest checkpoint. Rounds interleave the two; each figure is the
// median (with min and max) of the per-round figures, as wall time per
// call. Run after `cargo xtask wasm`:
//   node bench/log.mjs [--quick] [--json]
// `cargo xtask bench` runs it with --json.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

import * as independent from "../../tests/independent/tlog-verify.mjs";

const args = process.argv.slice(2);
const quick = args.includes("--quick");
const asJson = args.includes("--json");
const sdk = createRequire(import.meta.url)("..");
const log = JSON.parse(readFileSync(new URL("../../tests/vectors/log.json", import.meta.url), "utf8"));
const passing = log.inclusion.filter((c) => c.expect.valid);
const proof = passing.reduce((a, b) => (b.expect.size > a.expect.size || (b.expect.size === a.expect.size && b.expect.index > a.expect.index) ? b : a));
const vkeys = [log.key.vkey];
const leaf = Buffer.from(proof.leaf, "base64");

function check(valid, name) {
  if (!valid) throw new Error(`${name} did not verify the proof`);
}

const contenders = {
  sdk: () => check(sdk.verifyLogProof(proof.proof, proof.leaf, vkeys, log.origin).valid, "verifyLogProof"),
  independent: () => check(independent.verifyTlogProof(proof.proof, leaf, vkeys, log.origin), "independent"),
};

const calls = quick ? 50 : 500;
const rounds = quick ? 3 : 15;
const times = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
for (let round = 0; round <= rounds; round++) {
  for (const [name, call] of Object.entries(contenders)) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) call();
    // Round 0 warms up and is not counted.
    if (round > 0) times[name].push(Number(process.hrtime.bigint() - started) / calls);
  }
}

function spread(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)], min: sorted[0], max: sorted[sorted.length - 1] };
}
const report = {
  rounds,
  calls,
  node: process.version,
  proof: { index: proof.expect.index, size: proof.expect.size },
  ns: Object.fromEntries(Object.entries(times).map(([name, samples]) => [name, spread(samples)])),
  sdk_over_independent: spread(times.sdk.map((t, i) => t / times.independent[i])),
};
if (asJson) {
  console.log(JSON.stringify(report));
} else {
  for (const [name, s] of Object.entries(report.ns)) {
    console.log(`${name}: ${Math.round(s.median)} ns (${Math.round(s.min)}–${Math.round(s.max)})`);
  }
  console.log(`sdk / independent: ${report.sdk_over_independent.median.toFixed(2)}×`);
}
