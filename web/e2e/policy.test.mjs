// The argument-rule renderer (src/dashboard/policy.ts) on its own, in Node:
// the module has no imports and touches no DOM, so it is transpiled with the
// package's TypeScript and imported as it is. Each of UCAN 1.0's operators,
// the forms the token page shows (`all .to: like "*@example.com"`), and
// what the server would never have taken, shown as its JSON.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const source = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "..", "src", "dashboard", "policy.ts"), "utf8");
const { outputText } = ts.transpileModule(source, {
  compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 },
});
const { statementWords, ruleScope, ruleStatements, ruleWords, approvalWords } = await import(
  `data:text/javascript;base64,${Buffer.from(outputText).toString("base64")}`
);

describe("argument rules in words", () => {
  test("comparisons read as selector, operator, value (strings quoted)", () => {
    assert.equal(statementWords(["==", ".status", "draft"]), '.status == "draft"');
    assert.equal(statementWords(["!=", ".to[0]", null]), ".to[0] != null");
    assert.equal(statementWords(["<", ".count", 5]), ".count < 5");
    assert.equal(statementWords(["<=", ".count", 5]), ".count <= 5");
    assert.equal(statementWords([">", ".amount_usd", 100]), ".amount_usd > 100");
    assert.equal(statementWords([">=", ".a.b?", 1.5]), ".a.b? >= 1.5");
    assert.equal(statementWords(["like", ".to", "*@example.com"]), '.to like "*@example.com"');
    assert.equal(statementWords(["==", ".", { a: [1] }]), '. == {"a":[1]}');
  });

  test("quantifiers name the list and drop the element's own selector", () => {
    assert.equal(statementWords(["all", ".recipients", ["like", ".", "*@example.com"]]), 'all .recipients: like "*@example.com"');
    assert.equal(statementWords(["any", ".tags", ["==", ".", "urgent"]]), 'any .tags: == "urgent"');
    assert.equal(statementWords(["all", ".items", ["<", ".price", 10]]), "all .items: .price < 10");
    assert.equal(
      statementWords(["all", ".to", ["not", ["like", ".", "*@evil.test"]]]),
      'all .to: not (like "*@evil.test")',
    );
  });

  test("connectives group their parts; empty ones say what UCAN makes of them", () => {
    assert.equal(statementWords(["not", ["==", ".draft", true]]), "not (.draft == true)");
    assert.equal(statementWords(["and", [["<", ".a", 1], [">", ".b", 2]]]), "(.a < 1 and .b > 2)");
    assert.equal(
      statementWords(["or", [["==", ".to", "a@example.com"], ["and", [["==", ".cc", null]]]]]),
      '(.to == "a@example.com" or .cc == null)',
    );
    assert.equal(statementWords(["and", []]), "always");
    assert.equal(statementWords(["or", []]), "never");
  });

  test("what is not a statement is shown as its JSON, never guessed at", () => {
    assert.equal(statementWords(["matches", ".a", "x"]), '["matches",".a","x"]');
    assert.equal(statementWords(["==", "a", 1]), '["==","a",1]');
    assert.equal(statementWords("<script>"), '"<script>"');
    assert.equal(statementWords(["all", ".to"]), '["all",".to"]');
  });

  test("a rule reads as what it applies to, then every statement", () => {
    const mail = {
      actions: ["send"],
      resources: ["mail:*"],
      pol: [
        ["all", ".to", ["like", ".", "*@example.com"]],
        ["<=", ".count", 5],
      ],
    };
    assert.equal(ruleScope(mail), "send on mail:*");
    assert.deepEqual(ruleStatements(mail), ['all .to: like "*@example.com"', ".count <= 5"]);
    assert.equal(ruleWords(mail), 'send on mail:*: all .to: like "*@example.com" and .count <= 5');
    assert.equal(ruleWords({ resources: ["fs:/srv/reports/*"], pol: [["like", ".path", "/srv/reports/*"]] }),
      'every action on fs:/srv/reports/*: .path like "/srv/reports/*"');
    assert.equal(ruleWords({ actions: ["pay", "refund"], pol: [] }), "pay, refund on every resource: always");
  });

  test("an approval condition says that a missing field asks too", () => {
    assert.equal(approvalWords([[">", ".amount_usd", 100]]), "require approval when .amount_usd > 100 (or when it is missing)");
    assert.equal(
      approvalWords([[">", ".amount_usd", 100], ["!=", ".payee", "acme"]]),
      'require approval when .amount_usd > 100 and .payee != "acme" (or when that cannot be decided: a field missing)',
    );
  });
});
