// The record log's vectors judged by an independent verifier
// (tests/independent/tlog-verify.mjs: node:crypto and the standards' texts,
// nothing of core's), which must reach core's verdict and code on every
// case, and agree with the SDK's wasm build.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";

import * as tlog from "../../tests/independent/tlog-verify.mjs";

const sdk = createRequire(import.meta.url)("..");
const log = JSON.parse(readFileSync(new URL("../../tests/vectors/log.json", import.meta.url), "utf8"));

/** `{ valid: true, ...ok() }`, or the TlogError's code. */
function judge(ok) {
  try {
    return { valid: true, ...ok() };
  } catch (error) {
    if (!(error instanceof tlog.TlogError)) throw error;
    return { valid: false, error: error.code };
  }
}

test("inclusion: the independent verifier reaches core's verdicts", () => {
  for (const c of log.inclusion) {
    const got = judge(() => {
      const { index, checkpoint } = tlog.verifyTlogProof(c.proof, Buffer.from(c.leaf, "base64"), [log.key.vkey], log.origin);
      return { index: Number(index), size: Number(checkpoint.size), root: checkpoint.root.toString("base64") };
    });
    assert.deepEqual(got, c.expect, c.name);
    const wasm = sdk.verifyLogProof(c.proof, c.leaf, log.key.vkey, log.origin);
    assert.equal(wasm.valid, got.valid, c.name);
    if (!wasm.valid) assert.equal(wasm.error.code, got.error, c.name);
  }
});

test("consistency: the independent verifier reaches core's verdicts", () => {
  for (const c of log.consistency) {
    const hash = (text) => tlog.decodeBase64(text);
    const got = judge(() => {
      tlog.verifyConsistency(BigInt(c.old_size), BigInt(c.new_size), hash(c.old_root), hash(c.new_root), c.proof.map(hash));
      return {};
    });
    assert.deepEqual(got, c.expect, c.name);
  }
});

test("checkpoints and keys: the independent verifier reaches core's verdicts", () => {
  for (const c of log.checkpoints) {
    const got = judge(() => {
      const checkpoint = tlog.openCheckpoint(c.note, tlog.parseVkeys(c.vkeys), c.origin);
      return { origin: checkpoint.origin, size: Number(checkpoint.size), root: checkpoint.root.toString("base64") };
    });
    assert.deepEqual(got, c.expect, c.name);
  }
  for (const c of log.vkeys) {
    const got = judge(() => {
      const key = tlog.parseVkey(c.vkey);
      return { name: key.name, key_id: key.id.toString(16).padStart(8, "0") };
    });
    assert.deepEqual(got, c.expect, c.name);
  }
});

test("the signed-note specification's example verifies", () => {
  const key = tlog.parseVkey("example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k");
  const note =
    "This is an example message.\n\n\u2014 example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";
  assert.deepEqual(tlog.openNote(note, [key]), { text: "This is an example message.\n", verifiedBy: ["example.com/foo"] });
});

test("the monitor's fixtures: the log is consistent, the fork is not", () => {
  const keys = tlog.parseVkeys(log.key.vkey);
  const open = (which, size) => tlog.openCheckpoint(log.monitor[which].checkpoints[size], keys, log.origin);
  const proof = (which, pair) => log.monitor[which].consistency[pair].map(tlog.decodeBase64);
  const a = open("log", "1000");
  const b = open("log", "1100");
  tlog.verifyConsistency(a.size, b.size, a.root, b.root, proof("log", "1000-1100"));
  const f = open("fork", "1100");
  assert.throws(() => tlog.verifyConsistency(a.size, f.size, a.root, f.root, proof("fork", "1000-1100")), { code: "log_root_mismatch" });
});

// witness.json's cosigned checkpoints, judged by the independent verifier
// (its cosignature/v1 written from C2SP tlog-cosignature), which must reach
// core's verdicts and agree with verifyWitnessed.
const witness = JSON.parse(readFileSync(new URL("../../tests/vectors/witness.json", import.meta.url), "utf8"));

test("cosignatures: the independent verifier reaches core's verdicts", () => {
  for (const c of witness.cosignatures) {
    const got = judge(() => ({ timestamp: Number(tlog.verifyCosignatureLine(c.checkpoint, c.line, tlog.parseWitnessVkey(c.vkey))) }));
    assert.deepEqual(got, c.expect, c.name);
  }
  for (const c of witness.signing) {
    const key = tlog.parseWitnessVkey(witness.witnesses.find((w) => w.name === c.witness).vkey);
    // JSON.parse reads the vectors' 2^63 − 1 as the nearest double: compare as JavaScript numbers.
    assert.equal(Number(tlog.verifyCosignatureLine(c.checkpoint, c.expect.line.slice(0, -1), key)), c.now);
  }
  for (const c of witness.witness_vkeys) {
    const got = judge(() => {
      const key = tlog.parseWitnessVkey(c.vkey);
      return { name: key.name, key_id: key.id.toString(16).padStart(8, "0") };
    });
    assert.deepEqual(got, c.expect, c.name);
  }
});

test("witnessed checkpoints: the independent verifier reaches core's verdicts, and the SDK's", () => {
  let met = 0;
  for (const c of witness.witnessed) {
    const got = judge(() => {
      const { checkpoint, cosignedBy } = tlog.verifyWitnessed(c.note, [witness.log.vkey], c.policy, witness.now, c.origin);
      met += 1;
      return {
        size: Number(checkpoint.size),
        root: checkpoint.root.toString("base64"),
        cosigned_by: cosignedBy.map(({ name, timestamp }) => ({ name, timestamp: Number(timestamp) })),
      };
    });
    const { fresh: _fresh, threshold: _threshold, ...expect } = c.expect;
    assert.deepEqual(got, expect, c.name);
    const sdkResult = sdk.verifyWitnessed(c.note, [witness.log.vkey], c.policy, { origin: c.origin, now: witness.now });
    assert.equal(sdkResult.valid, got.valid, c.name);
    if (!got.valid) assert.equal(sdkResult.error.code, got.error, c.name);
  }
  assert.ok(met >= 4);
});
