// The record log's vectors (tests/vectors/log.json, the file core's native
// tests read) judged by the SDK: verifyLogProof, verifyConsistency,
// verifyCheckpoint and parseLogLeaf reach core's verdicts and codes;
// verifyRecordProof checks a record's proof as the server answers it; a
// LogMonitor follows a log and reports a fork or a rollback.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";

const sdk = createRequire(import.meta.url)("..");
const log = JSON.parse(readFileSync(new URL("../../tests/vectors/log.json", import.meta.url), "utf8"));
const vkey = log.key.vkey;

function failure(result) {
  assert.equal(result.error.stage, "log", JSON.stringify(result.error));
  return { valid: false, error: result.error.code };
}

test("inclusion vectors: verifyLogProof", () => {
  assert.ok(log.inclusion.length >= 30);
  for (const c of log.inclusion) {
    const result = sdk.verifyLogProof(c.proof, c.leaf, [vkey], log.origin);
    const got = result.valid
      ? { valid: true, index: result.index, size: result.checkpoint.size, root: result.checkpoint.root }
      : failure(result);
    assert.deepEqual(got, c.expect, c.name);
    if (result.valid) {
      assert.equal(result.checkpoint.origin, log.origin);
      assert.deepEqual(result.entry, JSON.parse(Buffer.from(c.leaf, "base64").toString("utf8")), c.name);
    }
  }
});

test("inclusion vectors: the keys as text, one a line, and without an origin", () => {
  const keys = `${log.other_vkey}\n${vkey}\n`;
  for (const c of log.inclusion) {
    const result = sdk.verifyLogProof(c.proof, c.leaf, keys);
    const expected = c.expect.error === "checkpoint_origin_mismatch" ? { valid: true } : c.expect;
    const got = result.valid ? { valid: true } : failure(result);
    if (c.name === "other_key_only") {
      // Trusting the other key too, its signature verifies.
      assert.equal(result.valid, true, c.name);
      continue;
    }
    assert.deepEqual(got, expected.valid ? { valid: true } : expected, c.name);
  }
});

test("consistency vectors: verifyConsistency", () => {
  assert.ok(log.consistency.length >= 20);
  for (const c of log.consistency) {
    const { old_size, old_root, new_size, new_root, proof } = c;
    const result = sdk.verifyConsistency({ old_size, old_root, new_size, new_root, proof });
    assert.deepEqual(result.valid ? { valid: true } : failure(result), c.expect, c.name);
  }
});

test("checkpoint vectors: verifyCheckpoint", () => {
  for (const c of log.checkpoints) {
    const result = sdk.verifyCheckpoint(c.note, c.vkeys, c.origin);
    const got = result.valid ? { valid: true, ...result.checkpoint } : failure(result);
    assert.deepEqual(got, c.expect, c.name);
  }
});

test("vkey vectors: a refused key refuses every checkpoint", () => {
  for (const c of log.vkeys) {
    const result = sdk.verifyCheckpoint(log.monitor.log.checkpoints["1100"], c.vkey);
    const got = result.valid ? { valid: true } : failure(result);
    const expected = c.expect.valid ? { valid: true } : c.expect;
    assert.deepEqual(got, expected, c.name);
  }
});

test("leaf vectors: parseLogLeaf; argsHash of a case's arguments is its record's args_hash", () => {
  assert.ok(log.leaves.length >= 15);
  assert.ok(log.leaves.filter((c) => c.args !== undefined).length >= 3);
  for (const c of log.leaves) {
    const result = sdk.parseLogLeaf(c.leaf);
    const got = result.ok ? { ok: true, entry: result.entry } : { ok: false, error: result.error.code };
    assert.deepEqual(got, c.expect, c.name);
    if (c.args !== undefined) {
      assert.equal(result.entry.kind, "record.created", c.name);
      assert.equal(sdk.argsHash(c.args), result.entry.args_hash, c.name);
    }
  }
});

test("record proof vectors: verifyRecordProof", () => {
  for (const c of log.record_proofs) {
    const result = sdk.verifyRecordProof(c.response, vkey, { origin: log.origin });
    if (c.expect.valid) {
      assert.equal(result.valid, true, `${c.name}: ${JSON.stringify(result.error)}`);
      assert.equal(result.aar_id, c.response.aar_id);
      assert.deepEqual(result.events.map((e) => e.entry.kind), c.expect.kinds, c.name);
      assert.deepEqual(result.events.map((e) => e.index), c.response.events.map((e) => e.index));
    } else {
      assert.equal(result.valid, false, c.name);
      const got = { valid: false, error: result.error.code };
      if (c.expect.index !== undefined) got.index = result.error.index;
      assert.deepEqual(got, c.expect, c.name);
    }
  }
  const valid = log.record_proofs[0].response;
  assert.equal(sdk.verifyRecordProof(valid, log.other_vkey).error.code, "note_unknown_key");
  assert.equal(
    sdk.verifyRecordProof(valid, vkey, { origin: "mandate.example/other-log" }).error.code,
    "checkpoint_origin_mismatch",
  );
  assert.equal(sdk.verifyRecordProof({ ...valid, aar_id: "aar_x" }, vkey).error.code, "record_mismatch");
});

test("bad input never throws", () => {
  const odd = [undefined, null, 5, "", "x", [], {}, ["x"], { proof: 5 }];
  for (const a of odd) {
    for (const b of odd) {
      for (const result of [
        sdk.verifyLogProof(a, b, b),
        sdk.verifyLogProof(log.inclusion[0].proof, log.inclusion[0].leaf, a, b),
        sdk.verifyCheckpoint(a, b),
        sdk.verifyCheckpoint(log.checkpoints[0].note, a, b),
        sdk.verifyConsistency(a),
        sdk.verifyRecordProof(a, b),
      ]) {
        assert.equal(result.valid, false);
        assert.equal(typeof result.error.code, "string");
      }
      assert.equal(sdk.parseLogLeaf(a).ok, false);
    }
  }
  const { old_size, old_root, new_size, new_root, proof } = log.consistency[0];
  for (const bad of [
    { old_size: -1, old_root, new_size, new_root, proof },
    { old_size: 1.5, old_root, new_size, new_root, proof },
    { old_size, old_root: "AA==", new_size, new_root, proof },
    { old_size, old_root, new_size, new_root, proof: ["x"] },
    { old_size, old_root, new_size, new_root, proof, extra: 1 },
  ]) {
    const result = sdk.verifyConsistency(bad);
    assert.deepEqual([result.valid, result.error.stage], [false, "input"], JSON.stringify(bad));
  }
});

/** A server that serves the checkpoints of `script` one after another, and consistency proofs from `sources`. */
function fakeServer(script, sources) {
  const calls = [];
  const fetch = async (url) => {
    const { pathname, searchParams } = new URL(url);
    calls.push(pathname);
    const reply = (status, text) => ({ ok: status < 400, status, statusText: "", text: async () => text });
    if (pathname === "/v1/log/checkpoint") {
      return reply(200, script.shift());
    }
    if (pathname === "/v1/log/consistency") {
      const [oldSize, newSize] = [searchParams.get("old"), searchParams.get("new")];
      for (const source of sources) {
        const proof = source.consistency[`${oldSize}-${newSize}`];
        if (proof !== undefined) {
          return reply(200, JSON.stringify({ old: Number(oldSize), new: Number(newSize), proof }));
        }
      }
      return reply(404, JSON.stringify({ code: "not_found", title: "Not Found" }));
    }
    return reply(404, "{}");
  };
  return { fetch, calls };
}

const main = log.monitor.log;
const fork = log.monitor.fork;

test("LogMonitor: follows a growing log and resumes from what it trusted", async () => {
  const server = fakeServer([main.checkpoints["257"], main.checkpoints["257"], main.checkpoints["1000"], main.checkpoints["1100"]], [main]);
  const monitor = new sdk.LogMonitor({ baseUrl: "https://mandate.example", fetch: server.fetch, vkeys: vkey, origin: log.origin });
  assert.equal(monitor.trusted, undefined);
  assert.equal((await monitor.check()).status, "first");
  assert.equal(monitor.trusted, main.checkpoints["257"]);
  assert.equal((await monitor.check()).status, "unchanged");
  const grew = await monitor.check();
  assert.deepEqual([grew.status, grew.old.size, grew.new.size], ["grew", 257, 1000]);
  assert.equal(monitor.trusted, main.checkpoints["1000"]);
  assert.equal(monitor.checkpoint.size, 1000);
  // A new monitor resumes from the persisted note.
  const resumed = new sdk.LogMonitor({ baseUrl: "https://mandate.example", fetch: server.fetch, vkeys: [vkey], origin: log.origin, trusted: monitor.trusted });
  const next = await resumed.check();
  assert.deepEqual([next.status, next.old.size, next.new.size], ["grew", 1000, 1100]);
  assert.ok(server.calls.includes("/v1/log/consistency"));
});

test("LogMonitor: a fork or a rollback is reported and never trusted", async () => {
  const cases = [
    ["same size, another root", main.checkpoints["1000"], fork.checkpoints["1000"], "log_fork"],
    ["a smaller tree", main.checkpoints["1100"], main.checkpoints["1000"], "log_rollback"],
    ["a larger tree that does not extend the trusted one", main.checkpoints["1000"], fork.checkpoints["1100"], "log_root_mismatch"],
  ];
  for (const [name, trusted, served, code] of cases) {
    const server = fakeServer([served], [fork]);
    const monitor = new sdk.LogMonitor({ baseUrl: "https://mandate.example", fetch: server.fetch, vkeys: vkey, origin: log.origin, trusted });
    const result = await monitor.check();
    assert.equal(result.status, "fork", name);
    assert.equal(result.error.code, code, name);
    assert.equal(result.old.size, sdk.verifyCheckpoint(trusted, vkey).checkpoint.size, name);
    // Both signed checkpoints, which together prove the split view.
    assert.deepEqual([result.oldNote, result.newNote], [trusted, served], name);
    assert.equal(monitor.trusted, trusted, `${name}: the trusted checkpoint stays`);
  }
  // A fork that parted after the trusted size is consistent with it: only
  // a second view (the log's own 1100) shows the fork.
  const server = fakeServer([fork.checkpoints["1100"], main.checkpoints["1100"]], [fork]);
  const monitor = new sdk.LogMonitor({ baseUrl: "https://mandate.example", fetch: server.fetch, vkeys: vkey, origin: log.origin, trusted: main.checkpoints["257"] });
  assert.equal((await monitor.check()).status, "grew");
  const seen = await monitor.check();
  assert.deepEqual([seen.status, seen.error.code], ["fork", "log_fork"]);
});

test("LogMonitor: with a policy, only a witnessed checkpoint is trusted", async () => {
  const witness = JSON.parse(readFileSync(new URL("../../tests/vectors/witness.json", import.meta.url), "utf8"));
  const note = (name) => witness.witnessed.find((c) => c.name === name).note;
  const policy = witness.witnessed.find((c) => c.name === "two_of_three").policy;
  const server = fakeServer([note("one_of_two_needed"), note("two_of_three"), note("not_cosigned")], []);
  const monitor = new sdk.LogMonitor({
    baseUrl: "https://mandate.example",
    fetch: server.fetch,
    vkeys: witness.log.vkey,
    origin: witness.log.origin,
    policy,
    now: () => witness.now,
  });
  const refused = await monitor.check();
  assert.deepEqual([refused.status, refused.error.code, monitor.trusted], ["invalid", "cosignatures_insufficient", undefined]);
  assert.equal((await monitor.check()).status, "first");
  assert.equal(monitor.trusted, note("two_of_three"));
  // The same tree, signed by the log but not cosigned: not trusted.
  assert.equal((await monitor.check()).status, "invalid");
  assert.equal(monitor.trusted, note("two_of_three"));
});

test("LogMonitor: a checkpoint that does not verify changes nothing", async () => {
  const unknown = log.checkpoints.find((c) => c.name === "only_an_unknown_key").note;
  const server = fakeServer([unknown, main.checkpoints["1100"].replace("1100", "1101")], [main]);
  const monitor = new sdk.LogMonitor({ baseUrl: "https://mandate.example", fetch: server.fetch, vkeys: vkey, origin: log.origin, trusted: main.checkpoints["1000"] });
  const first = await monitor.check();
  assert.deepEqual([first.status, first.error.code], ["invalid", "note_unknown_key"]);
  const second = await monitor.check();
  assert.deepEqual([second.status, second.error.code], ["invalid", "note_signature_invalid"]);
  assert.equal(monitor.trusted, main.checkpoints["1000"]);
  assert.throws(
    () => new sdk.LogMonitor({ baseUrl: "https://x", fetch: server.fetch, vkeys: log.other_vkey, origin: log.origin, trusted: main.checkpoints["1000"] }),
    (error) => error instanceof sdk.MandateError && error.code === "note_unknown_key",
  );
  assert.throws(() => new sdk.LogMonitor({ vkeys: vkey, origin: log.origin }), TypeError);
});

test("MandateClient: the log's calls", async () => {
  const seen = [];
  const fetch = async (url, init) => {
    seen.push([url, init.method, init.headers.accept, init.headers.authorization]);
    const body = url.endsWith("/v1/log/key") ? `${vkey}\n` : url.includes("/proof") ? JSON.stringify(log.record_proofs[0].response) : url.includes("consistency") ? JSON.stringify({ old: 1, new: 2, proof: [] }) : main.checkpoints["257"];
    return { ok: true, status: 200, statusText: "OK", text: async () => body };
  };
  const client = new sdk.MandateClient({ baseUrl: "https://mandate.example/", apiKey: "mk_test", fetch });
  assert.equal(await client.logCheckpoint(), main.checkpoints["257"]);
  assert.equal(await client.logKey(), `${vkey}\n`);
  assert.deepEqual(await client.logConsistency(1, 2), { old: 1, new: 2, proof: [] });
  const proof = await client.recordProof(log.record_proofs[0].response.aar_id);
  assert.equal(sdk.verifyRecordProof(proof, await client.logKey()).valid, true);
  assert.deepEqual(seen.map(([url, method, accept]) => [url, method, accept]), [
    ["https://mandate.example/v1/log/checkpoint", "GET", "text/plain"],
    ["https://mandate.example/v1/log/key", "GET", "text/plain"],
    ["https://mandate.example/v1/log/consistency?old=1&new=2", "GET", "application/json"],
    [`https://mandate.example/v1/vat/aar/${log.record_proofs[0].response.aar_id}/proof`, "GET", "application/json"],
    ["https://mandate.example/v1/log/key", "GET", "text/plain"],
  ]);
  const failing = new sdk.MandateClient({
    baseUrl: "https://mandate.example",
    fetch: async () => ({ ok: false, status: 503, statusText: "Unavailable", text: async () => JSON.stringify({ code: "unavailable", title: "Unavailable" }) }),
  });
  await assert.rejects(failing.logCheckpoint(), (error) => error.status === 503 && error.code === "unavailable");
});
