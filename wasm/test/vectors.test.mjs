// Every conformance vector in tests/vectors/ (the files core's native tests
// read, not a copy), judged by the wasm build in Node: the same verdicts, the
// same error codes and stages, the same claims and numbers.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";

const sdk = createRequire(import.meta.url)("..");

function vectors(name) {
  return JSON.parse(readFileSync(new URL(`../../tests/vectors/${name}.json`, import.meta.url), "utf8"));
}

const tokens = vectors("tokens");

/** What a case expects, in the shape verifyToken answers. */
function verdict(result) {
  return result.valid
    ? { valid: true, claims: result.claims }
    : { valid: false, stage: result.error.stage, error: result.error.code };
}

function expected(expect) {
  return expect.valid
    ? { valid: true, claims: expect.claims }
    : { valid: false, stage: expect.stage, error: expect.error };
}

function optionsOf(testCase) {
  const options = {};
  if (testCase.options?.leeway_seconds !== undefined) options.leewaySeconds = testCase.options.leeway_seconds;
  if (testCase.options?.issuer !== undefined) options.issuer = testCase.options.issuer;
  return options;
}

// The token vectors are core's `verify`: the token alone. verifyToken
// applies the binding rule on top unless told the token is only shown.
const tokenOnly = { skipProofOfPossession: true };

/** What `Verifier.verify` answers: the token's verdict, or for a bound token its proof's absence. */
function verifierExpected(expect) {
  return expect.valid && expect.claims.cnf !== undefined
    ? { valid: false, stage: "dpop", error: "dpop_required" }
    : expected(expect);
}

test("token vectors: verifyToken", () => {
  assert.ok(tokens.cases.length >= 50, `only ${tokens.cases.length} token cases`);
  for (const testCase of tokens.cases) {
    const jwks = testCase.jwks ?? tokens.jwks;
    const result = sdk.verifyToken(testCase.token, jwks, { now: testCase.now, ...tokenOnly, ...optionsOf(testCase) });
    assert.deepEqual(verdict(result), expected(testCase.expect), testCase.name);
    const withBinding = sdk.verifyToken(testCase.token, jwks, { now: testCase.now, ...optionsOf(testCase) });
    assert.deepEqual(verdict(withBinding), verifierExpected(testCase.expect), testCase.name);
  }
});

test("token vectors: the key set as JSON text", () => {
  for (const testCase of tokens.cases) {
    const jwks = JSON.stringify(testCase.jwks ?? tokens.jwks);
    const result = sdk.verifyToken(testCase.token, jwks, { now: testCase.now, ...tokenOnly, ...optionsOf(testCase) });
    assert.deepEqual(verdict(result), expected(testCase.expect), testCase.name);
  }
});

test("token vectors: Verifier, uncached and cached", () => {
  for (const cacheSize of [0, 16]) {
    for (const testCase of tokens.cases) {
      const verifier = new sdk.Verifier(testCase.jwks ?? tokens.jwks, { cacheSize, ...optionsOf(testCase) });
      // Twice: with a cache the second answer comes from it.
      for (let round = 0; round < 2; round++) {
        const result = verifier.verify(testCase.token, testCase.now);
        const name = `${testCase.name}, cacheSize ${cacheSize}`;
        assert.deepEqual(verdict(result), verifierExpected(testCase.expect), name);
      }
      verifier.free();
    }
  }
});

test("chain vectors: verifyChain", () => {
  assert.ok(tokens.chains.length >= 5);
  for (const chain of tokens.chains) {
    const result = sdk.verifyChain(chain.tokens, tokens.jwks, { now: chain.now, revoked: chain.revoked });
    if (chain.expect.valid) {
      assert.equal(result.valid, true, `${chain.name}: ${JSON.stringify(result.error)}`);
      assert.equal(result.tokens.length, chain.tokens.length, chain.name);
    } else {
      assert.equal(result.valid, false, chain.name);
      assert.deepEqual(
        { error: result.error.code, index: result.error.index },
        { error: chain.expect.error, index: chain.expect.index },
        chain.name,
      );
    }
  }
});

test("scope vectors: permits", () => {
  const { permits } = vectors("scope");
  assert.ok(permits.length >= 10);
  for (const testCase of permits) {
    const result = sdk.permits({ resources: testCase.resources, actions: testCase.actions }, testCase.action, testCase.resource);
    const got = result.ok ? true : result.reason ? false : result.error.code;
    assert.equal(got, testCase.expect, `${testCase.action} ${testCase.resource} under ${testCase.resources}`);
  }
});

test("scope vectors: checkNarrowing", () => {
  const { narrowing } = vectors("scope");
  assert.ok(narrowing.length >= 5);
  for (const testCase of narrowing) {
    const result = sdk.checkNarrowing(testCase.child, testCase.parent);
    assert.equal(result.error, undefined, testCase.name);
    assert.deepEqual(
      { ok: result.ok, violations: result.violations.map(({ field, code }) => ({ field, code })) },
      testCase.expect,
      testCase.name,
    );
  }
});

test("dpop vectors: verifyProof", () => {
  const dpop = vectors("dpop");
  assert.ok(dpop.cases.length >= 25, `only ${dpop.cases.length} proof cases`);
  for (const testCase of dpop.cases) {
    const result = sdk.verifyProof(testCase.proof, {
      method: testCase.method,
      url: testCase.url,
      accessToken: dpop.token,
      jkt: dpop.jkt,
      now: testCase.now,
    });
    const got = result.valid ? { valid: true } : { valid: false, error: result.error.code };
    assert.deepEqual(got, testCase.expect, testCase.name);
  }
});

test("dpop vectors: the binding rule in verifyToken and Verifier.verifyRequest", () => {
  const dpop = vectors("dpop");
  for (const testCase of dpop.binding) {
    const request = { method: "POST", url: dpop.url };
    if (testCase.proof !== null) request.proof = testCase.proof;
    const viaToken = sdk.verifyToken(testCase.token, dpop.jwks, { now: dpop.now, request });
    const verifier = new sdk.Verifier(dpop.jwks);
    const viaVerifier = verifier.verifyRequest(testCase.token, { ...request, now: dpop.now });
    verifier.free();
    for (const result of [viaToken, viaVerifier]) {
      const got = result.valid ? { valid: true } : { valid: false, error: result.error.code };
      assert.deepEqual(got, testCase.expect, testCase.name);
    }
  }
});

test("scope vectors: delegatedGrant", () => {
  const { delegation } = vectors("scope");
  assert.ok(delegation.length >= 5);
  for (const testCase of delegation) {
    const result = sdk.delegatedGrant(testCase.request, testCase.parent);
    assert.equal(result.error, undefined, testCase.name);
    const got = result.ok
      ? { ok: true, grant: result.grant }
      : { ok: false, error: result.code, violations: result.violations.map(({ field, code }) => ({ field, code })) };
    assert.deepEqual(got, testCase.expect, testCase.name);
  }
});

test("reputation vectors", () => {
  const { cases } = vectors("reputation");
  assert.ok(cases.length >= 5);
  for (const testCase of cases) {
    assert.deepEqual(sdk.reputation(testCase.counts), testCase.expect, JSON.stringify(testCase.counts));
  }
});
