// Argument constraints in Node: mandate-sdk's evaluatePolicy (core's rules
// in wasm) over the grant and arguments of bench/args/grant.json — the
// rules' ten statements as one policy (every rule applies to the attempt)
// and the arguments, both given as JSON text, as the native `args_eval`
// times `evaluate_json` for the wasm / native row. Wall time per call,
// median (with min and max) of the rounds after a warm-up round. Run after
// `cargo xtask wasm`:
//   node bench/args.mjs [--quick] [--json]
// `cargo xtask bench` runs it with --json, in turns with `args_eval`.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const argv = process.argv.slice(2);
const quick = argv.includes("--quick");
const asJson = argv.includes("--json");
const sdk = createRequire(import.meta.url)("..");
const fixture = JSON.parse(readFileSync(new URL("../../bench/args/grant.json", import.meta.url), "utf8"));
const pol = JSON.stringify(fixture.rules.flatMap((rule) => rule.pol));
const args = JSON.stringify(fixture.args);

const first = sdk.evaluatePolicy(pol, args);
if (!(first.ok && first.permits)) {
  throw new Error(`the fixture's arguments must satisfy its rules: ${JSON.stringify(first)}`);
}

const calls = quick ? 2_000 : 50_000;
const rounds = quick ? 2 : 7;
const samples = [];
for (let round = 0; round <= rounds; round++) {
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    if (!sdk.evaluatePolicy(pol, args).permits) throw new Error("refused");
  }
  // Round 0 warms up and is not counted.
  if (round > 0) samples.push(Number(process.hrtime.bigint() - started) / calls);
}
const sorted = [...samples].sort((a, b) => a - b);
const report = {
  rounds,
  calls,
  node: process.version,
  evaluate_ns: { median: sorted[Math.floor(sorted.length / 2)], min: sorted[0], max: sorted[sorted.length - 1] },
};
if (asJson) {
  console.log(JSON.stringify(report));
} else {
  const s = report.evaluate_ns;
  console.log(`evaluatePolicy: ${Math.round(s.median)} ns (${Math.round(s.min)}–${Math.round(s.max)})`);
}
