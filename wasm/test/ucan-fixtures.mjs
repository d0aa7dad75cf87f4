// UCAN's published policy fixtures (ucan-wg/rs-ucan
// `ucan/tests/fixtures/policy.json`) through mandate-sdk's evaluatePolicy
// (core's evaluator in wasm), as tests/tests/ucan_policy.rs runs them
// natively. The file is not in this repository and no registry these
// machines reach serves it, so this suite is run by hand with its path and
// fails without it (it is not one of the suites `cargo xtask test` runs):
//   MANDATE_UCAN_POLICY_FIXTURES=…/policy.json node --test test/ucan-fixtures.mjs
// Every statement of a `valid` policy must be true unless it is one of the
// fail-closed divergences docs/decisions.md documents — a statement over
// an absent field is undefined (UCAN: `not`/`!=` of it holds), an empty
// `any` is false — and no `invalid` policy may permit.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";

const { evaluatePolicy } = createRequire(import.meta.url)("..");

const path = process.env.MANDATE_UCAN_POLICY_FIXTURES;

test("UCAN's published policy fixtures, through evaluatePolicy", () => {
  assert.ok(path, "MANDATE_UCAN_POLICY_FIXTURES must name UCAN's policy.json (rs-ucan ucan/tests/fixtures/policy.json)");
  const fixtures = JSON.parse(readFileSync(path, "utf8"));
  let judged = 0;
  const differences = [];
  fixtures.valid.forEach((scenario, i) => {
    scenario.policies.forEach((policy, j) => {
      policy.forEach((statement, k) => {
        const name = `valid[${i}].policies[${j}][${k}]`;
        const result = evaluatePolicy([statement], scenario.args);
        assert.equal(result.ok, true, `${name}: refused: ${JSON.stringify(result)}`);
        judged += 1;
        if (result.truth !== "true") {
          const text = JSON.stringify(statement);
          const documented =
            (result.truth === "undefined" && /"(not|!=)"/.test(text)) || (result.truth === "false" && text.startsWith('["any"'));
          assert.ok(documented, `${name}: ${text} is ${result.truth}, undocumented`);
          differences.push(`${name}: ${text}: ${result.truth}`);
        }
      });
    });
  });
  fixtures.invalid.forEach((scenario, i) => {
    scenario.policies.forEach((policy, j) => {
      const result = evaluatePolicy(policy, scenario.args);
      assert.equal(result.ok, true, `invalid[${i}].policies[${j}]: refused: ${JSON.stringify(result)}`);
      judged += 1;
      assert.equal(result.permits, false, `invalid[${i}].policies[${j}]: ${JSON.stringify(policy)} permits`);
    });
  });
  console.log(`UCAN policy fixtures: ${judged} judged, ${differences.length} differ`);
  for (const difference of differences) console.log(`  ${difference}`);
  assert.ok(judged >= 30, `only ${judged} fixture cases`);
});
