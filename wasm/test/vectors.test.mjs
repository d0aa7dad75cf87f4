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

// The status list vectors: verifyStatusList alone, verifyToken with the list
// as its statusList, and a Verifier that checks status and is given the list.
const statusLists = vectors("status_list");

function stageCode(result) {
  return result.valid ? null : { stage: result.error.stage, error: result.error.code };
}

test("status list vectors: verifyStatusList", () => {
  assert.ok(statusLists.cases.length >= 40, `only ${statusLists.cases.length} status list cases`);
  for (const testCase of statusLists.cases) {
    const options = { now: testCase.now };
    if (testCase.uri !== null) options.uri = testCase.uri;
    const result = sdk.verifyStatusList(testCase.list, statusLists.jwks, options);
    const expected = testCase.expect.stage === "status_list" ? { stage: "status_list", error: testCase.expect.error } : null;
    assert.deepEqual(stageCode(result), expected, testCase.name);
    if (result.valid) {
      assert.equal(typeof result.iat, "number", testCase.name);
      assert.ok([1, 2, 4, 8].includes(result.bits), testCase.name);
    }
  }
});

test("status list vectors: verifyToken with statusList", () => {
  for (const testCase of statusLists.cases) {
    const options = { now: testCase.now, statusList: testCase.list, skipProofOfPossession: true };
    if (testCase.max_staleness_seconds !== null) options.maxStalenessSeconds = testCase.max_staleness_seconds;
    const result = sdk.verifyToken(testCase.token, statusLists.jwks, options);
    assert.deepEqual(stageCode(result), testCase.sdk.verify_token, testCase.name);
  }
});

test("status list vectors: Verifier.setStatusList, uncached and cached", () => {
  for (const cacheSize of [0, 16]) {
    for (const testCase of statusLists.cases) {
      const options = { checkStatus: true, cacheSize };
      if (testCase.max_staleness_seconds !== null) options.maxStalenessSeconds = testCase.max_staleness_seconds;
      const verifier = new sdk.Verifier(statusLists.jwks, options);
      const name = `${testCase.name}, cacheSize ${cacheSize}`;
      const set = verifier.setStatusList(testCase.list, testCase.now);
      assert.equal(set.ok ? "ok" : set.error.code, testCase.sdk.set_status_list, name);
      for (let round = 0; round < 2; round++) {
        const result = verifier.verify(testCase.token, testCase.now);
        assert.equal(result.valid ? null : result.error.code, testCase.sdk.verifier, name);
      }
      verifier.free();
    }
  }
});

const trust = vectors("trust");

test("trust vectors: trustScores", () => {
  assert.ok(trust.graphs.length >= 8, `only ${trust.graphs.length} graphs`);
  for (const testCase of trust.graphs) {
    const result = sdk.trustScores(testCase.graph, { now: testCase.now });
    if (testCase.expect.error !== undefined) {
      assert.equal(result.error?.code, testCase.expect.error, testCase.name);
      continue;
    }
    assert.ok(result.scores, `${testCase.name}: ${JSON.stringify(result.error)}`);
    assert.deepEqual(Object.keys(result.scores), Object.keys(testCase.expect.scores), testCase.name);
    for (const [agent, want] of Object.entries(testCase.expect.scores)) {
      const got = result.scores[agent];
      for (const part of ["trust", "reputation", "graph", "decay", "ceiling"]) {
        assert.ok(Math.abs(got[part] - want[part]) <= trust.tolerance, `${testCase.name} ${agent} ${part}: ${got[part]} != ${want[part]}`);
      }
      assert.equal(got.vouchers, want.vouchers, `${testCase.name} ${agent} vouchers`);
    }
  }
});

test("trust vectors: trustScores refuses what is not a graph, never throwing", () => {
  assert.equal(sdk.trustScores("nope").error.code, "invalid_graph");
  assert.equal(sdk.trustScores({ agents: [], extra: 1 }).error.code, "invalid_graph");
  assert.equal(sdk.trustScores({ agents: [] }, { params: { damping: 2 } }).error.code, "invalid_trust_params");
  assert.deepEqual(sdk.trustScores({ agents: [] }, { now: 0 }), { scores: {} });
});

test("trust vectors: verifyTrustStatement", () => {
  assert.ok(trust.statements.length >= 8);
  for (const testCase of trust.statements) {
    const result = sdk.verifyTrustStatement(testCase.jwt, trust.jwks, { now: testCase.now });
    const got = result.valid
      ? { valid: true, claims: result.claims }
      : { valid: false, error: result.error.code, stage: result.error.stage };
    const want = testCase.expect.valid
      ? testCase.expect
      : { valid: false, error: testCase.expect.error, stage: "trust" };
    assert.deepEqual(got, want, testCase.name);
  }
  const bad = sdk.verifyTrustStatement(42, trust.jwks);
  assert.equal(bad.valid, false);
  assert.equal(bad.error.stage, "input");
});

const argsVectors = vectors("args");

test("args vectors: evaluatePolicy, arguments as JSON text and as values", () => {
  assert.ok(argsVectors.evaluate.length >= 80);
  for (const testCase of argsVectors.evaluate) {
    const fromText = sdk.evaluatePolicy(testCase.pol, testCase.args_json);
    assert.deepEqual(fromText, { ok: true, truth: testCase.expect, permits: testCase.expect === "true" }, testCase.name);
    const fromValue = sdk.evaluatePolicy(JSON.stringify(testCase.pol), JSON.parse(testCase.args_json));
    assert.deepEqual(fromValue, fromText, testCase.name);
  }
});

test("args vectors: arguments read strictly by evaluatePolicy", () => {
  for (const testCase of argsVectors.args) {
    const result = sdk.evaluatePolicy([["==", ".", null]], testCase.args_json);
    if (testCase.code === undefined) {
      assert.equal(result.ok, true, `${testCase.name}: ${JSON.stringify(result.error)}`);
    } else {
      assert.equal(result.error?.code, testCase.code, testCase.name);
      assert.equal(result.error?.stage, "input", testCase.name);
    }
  }
  // A JavaScript number beyond 2^53 cannot be held exactly, and is refused.
  assert.equal(sdk.evaluatePolicy([["==", ".n", 1]], { n: 2 ** 53 }).error.code, "unsafe_number");
  assert.equal(sdk.evaluatePolicy([["=", ".n", 1]], { n: 1 }).error.code, "unknown_operator");
  assert.equal(sdk.evaluatePolicy(42, {}).error.code, "malformed_statement");
  assert.equal(sdk.evaluatePolicy([["==", ".n", 1]], undefined).error.code, "invalid_argument");
});

test("args vectors: permits judges the argument rules of token claims", () => {
  const { rules, cases } = argsVectors.check;
  const claims = {
    svc_scope: { resources: ["mail:*", "bank:*", "files:*", "chat:*"], actions: ["send", "pay", "read"] },
    svc_constraints: { args: rules },
  };
  assert.ok(cases.length >= 15);
  for (const testCase of cases) {
    const result = sdk.permits(claims, testCase.action, testCase.resource, testCase.args);
    const got = result.ok
      ? { ok: true }
      : {
          ok: false,
          code: result.reason.code,
          rule: result.reason.rule,
          ...(result.reason.statement === undefined ? {} : { statement: result.reason.statement, truth: result.reason.truth }),
        };
    assert.deepEqual(got, testCase.expect, testCase.name);
  }
  // A bare scope has no argument rules; the scope is judged first.
  assert.deepEqual(sdk.permits(claims.svc_scope, "pay", "bank:x"), { ok: true });
  assert.equal(sdk.permits(claims, "delete", "bank:x", {}).reason.code, "action_not_permitted");
  assert.equal(sdk.permits(claims, "pay", "bank:x", '{"a":1,"a":2}').error.code, "duplicate_member");
});

test("args vectors: checkNarrowing and delegatedGrant keep every rule", () => {
  const { check, delegate } = argsVectors.narrowing;
  for (const testCase of check) {
    const result = sdk.checkNarrowing(testCase.child, testCase.parent);
    assert.equal(result.error, undefined, testCase.name);
    assert.deepEqual(
      { ok: result.ok, violations: result.violations.map(({ field, code }) => ({ field, code })) },
      testCase.expect,
      testCase.name,
    );
  }
  for (const testCase of delegate) {
    const result = sdk.delegatedGrant(testCase.request, testCase.parent);
    assert.equal(result.error, undefined, testCase.name);
    const got = result.ok
      ? { ok: true, constraints: result.grant.constraints }
      : { ok: false, error: result.code, violations: result.violations.map(({ field, code }) => ({ field, code })) };
    assert.deepEqual(got, testCase.expect, testCase.name);
  }
});

// witness.json: what a verifier does with it — cosignature lines, witness
// vkeys, policies and witnessed checkpoints. Its `witness.cases` are the
// witness's add-checkpoint rule, a server's, which no SDK function takes:
// core's native tests run those.
const witness = vectors("witness");
const witnessVkey = (name) => witness.witnesses.find((w) => w.name === name).vkey;

/** A refusal in the vectors' shape: cosignatures_insufficient's counts are read from its message. */
function witnessFailure(result) {
  assert.equal(result.error.stage, "log", JSON.stringify(result.error));
  const got = { valid: false, error: result.error.code };
  if (result.error.code === "cosignatures_insufficient") {
    const counts = /^(\d+) fresh cosignatures by the policy's witnesses, (\d+) needed$/.exec(result.error.message);
    assert.ok(counts, result.error.message);
    got.fresh = Number(counts[1]);
    got.threshold = Number(counts[2]);
  }
  return got;
}

test("witness vectors: verifyCosignature, lines and witness vkeys", () => {
  assert.ok(witness.cosignatures.length >= 9);
  for (const c of witness.cosignatures) {
    const result = sdk.verifyCosignature(c.checkpoint, c.line, c.vkey);
    assert.deepEqual(result.valid ? result : witnessFailure(result), c.expect, c.name);
  }
  // The lines the vectors' witnesses signed (each with its newline) verify, at the time they were signed.
  assert.ok(witness.signing.length >= 4);
  for (const c of witness.signing) {
    assert.ok(c.expect.line.endsWith("\n"));
    const result = sdk.verifyCosignature(c.checkpoint, c.expect.line.slice(0, -1), witnessVkey(c.witness));
    assert.deepEqual(result, { valid: true, timestamp: c.now }, c.witness);
  }
  // A witness vkey is refused with core's code; a valid one verifies its line.
  const line = witness.cosignatures.find((c) => c.name === "valid");
  for (const c of witness.witness_vkeys) {
    const result = sdk.verifyCosignature(line.checkpoint, line.line, c.vkey);
    assert.deepEqual(result.valid ? { valid: true } : witnessFailure(result), c.expect.valid ? { valid: true } : c.expect, c.name);
  }
  // The log's key is a signed-note key: a witness policy refuses it.
  assert.equal(
    sdk.verifyWitnessed("", [witness.log.vkey], { witnesses: [witness.log.vkey], threshold: 1, max_age_seconds: 60 }).error.code,
    "witness_vkey_unsupported_type",
  );
});

test("witness vectors: policies and verifyWitnessed", () => {
  const good = witness.witnessed.find((c) => c.expect.valid);
  for (const c of witness.policies) {
    // A valid policy lets a note through to its own verdict; a refused one is refused before the note is read.
    const result = sdk.verifyWitnessed(good.note, [witness.log.vkey], c.policy, { now: witness.now });
    const got = c.expect.valid ? { valid: !(result.error?.code ?? "").startsWith("witness_policy_") } : witnessFailure(result);
    assert.deepEqual(got, c.expect, c.name);
  }
  assert.ok(witness.witnessed.length >= 15);
  let met = 0;
  for (const c of witness.witnessed) {
    const result = sdk.verifyWitnessed(c.note, [witness.log.vkey], c.policy, { origin: c.origin, now: witness.now });
    if (result.valid) {
      met += 1;
      assert.equal(result.checkpoint.origin, witness.log.origin, c.name);
    }
    const got = result.valid
      ? { valid: true, size: result.checkpoint.size, root: result.checkpoint.root, cosigned_by: result.cosigned_by }
      : witnessFailure(result);
    assert.deepEqual(got, c.expect, c.name);
  }
  assert.ok(met >= 4 && met < witness.witnessed.length);
  // The log keys as text, one a line, as GET /v1/log/key serves them.
  assert.equal(sdk.verifyWitnessed(good.note, `${witness.log.vkey}\n`, good.policy, { now: witness.now }).valid, true);
});

test("witness vectors: verifyWitnessedLogProof, record proofs under a policy", () => {
  const { policy, cases } = witness.witnessed_proofs;
  assert.ok(cases.length >= 15);
  let linked = 0;
  for (const c of cases) {
    const result = sdk.verifyWitnessedLogProof(c.proof, c.leaf, [witness.log.vkey], policy, {
      origin: witness.log.origin,
      now: c.now,
      cosigned: c.cosigned,
    });
    if (result.valid) {
      linked += result.linked ? 1 : 0;
      assert.deepEqual(result.entry, JSON.parse(Buffer.from(c.leaf, "base64").toString("utf8")), c.name);
    }
    const got = result.valid
      ? {
          valid: true,
          size: result.checkpoint.size,
          root: result.checkpoint.root,
          linked: result.linked,
          witnessed: {
            size: result.witnessed.checkpoint.size,
            root: result.witnessed.checkpoint.root,
            cosigned_by: result.witnessed.cosigned_by,
          },
        }
      : witnessFailure(result);
    assert.deepEqual(got, c.expect, c.name);
  }
  assert.ok(linked >= 3);
  // verifyCheckpoint with a policy is verifyWitnessed; its origin may be the third argument or an option.
  const good = witness.witnessed.find((c) => c.name === "two_of_three");
  const bare = witness.witnessed.find((c) => c.name === "not_cosigned");
  const withPolicy = sdk.verifyCheckpoint(good.note, witness.log.vkey, { origin: good.origin, policy: good.policy, now: witness.now });
  assert.deepEqual(withPolicy.cosigned_by, good.expect.cosigned_by);
  assert.deepEqual(
    witnessFailure(sdk.verifyCheckpoint(bare.note, witness.log.vkey, { policy: bare.policy, now: witness.now })),
    bare.expect,
  );
  assert.equal(sdk.verifyCheckpoint(bare.note, witness.log.vkey, bare.origin).valid, true);
  assert.equal(sdk.verifyCheckpoint(bare.note, witness.log.vkey, { origin: bare.origin }).valid, true);
  // The record proof answer, checked with the caller's policy through its link.
  const c = cases.find((x) => x.name === "linked");
  const entry = JSON.parse(Buffer.from(c.leaf, "base64").toString("utf8"));
  const answer = {
    aar_id: entry.aar_id,
    origin: witness.log.origin,
    checkpoint: c.proof.split("\n\n").slice(1).join("\n\n"),
    events: [{ kind: entry.kind, index: 11, leaf: c.leaf, proof: c.proof }],
    cosigned: c.cosigned,
  };
  const held = sdk.verifyRecordProof(answer, witness.log.vkey, { policy, now: c.now });
  assert.equal(held.valid, true, JSON.stringify(held.error));
  assert.deepEqual([held.witnessed.checkpoint.size, held.witnessed.linked], [c.expect.witnessed.size, true]);
  const { cosigned: _, ...unlinked } = answer;
  const refused = sdk.verifyRecordProof(unlinked, witness.log.vkey, { policy, now: c.now });
  assert.deepEqual([refused.valid, refused.error.code, refused.error.index], [false, "cosignatures_insufficient", 0]);
  assert.equal(sdk.verifyRecordProof(unlinked, witness.log.vkey).valid, true);
});

test("witness vectors: verifyWitnessed refuses what is not its arguments, never throwing", () => {
  const good = witness.witnessed.find((c) => c.expect.valid);
  const keys = [witness.log.vkey];
  const code = (...args) => {
    const result = sdk.verifyWitnessed(...args);
    assert.equal(result.valid, false);
    return `${result.error.stage}/${result.error.code}`;
  };
  assert.equal(code(42, keys, good.policy), "input/invalid_argument");
  assert.equal(code(good.note, keys, [good.policy]), "input/invalid_argument");
  assert.equal(code(good.note, keys, { ...good.policy, k: 1 }), "input/invalid_argument");
  assert.equal(code(good.note, keys, { ...good.policy, threshold: -1 }), "input/invalid_argument");
  assert.equal(code(good.note, keys, good.policy, { now: "soon" }), "input/invalid_options");
  assert.equal(code(good.note, keys, good.policy, { origin: good.origin, when: 1 }), "input/invalid_options");
  // Without `now`, the JavaScript clock judges freshness.
  const clock = Math.floor(Date.now() / 1000);
  const fresh = good.expect.cosigned_by.filter(
    ({ timestamp }) => timestamp >= clock - good.policy.max_age_seconds && timestamp <= clock + witness.future_skew_seconds,
  );
  const byClock = sdk.verifyWitnessed(good.note, keys, good.policy);
  assert.equal(byClock.valid, fresh.length >= good.policy.threshold);
  assert.equal(sdk.verifyWitnessed(good.note, keys, good.policy, { now: clock }).valid, byClock.valid);
});
