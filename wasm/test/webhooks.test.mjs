// Webhooks: the vectors of tests/vectors/webhooks.json judged by the SDK
// (the same verdicts and codes as core natively), the forms of headers and
// bodies a receiver has at hand, and the SDK against the official
// JavaScript library of Standard Webhooks (npm `standardwebhooks`, pinned
// in package.json): signatures core made verify with it, and signatures it
// makes verify with the SDK, through a secret rotation both ways.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, request } from "node:http";
import { createRequire } from "node:module";
import { test } from "node:test";

const require = createRequire(import.meta.url);
const sdk = require("..");
const { Webhook, WebhookVerificationError } = require("standardwebhooks");

const vectors = JSON.parse(readFileSync(new URL("../../tests/vectors/webhooks.json", import.meta.url), "utf8"));

/** The verdict in the vectors' shape. */
function verdict(result) {
  return result.valid
    ? { valid: true, id: result.id, event: result.event }
    : { valid: false, error: result.error.code, stage: result.error.stage };
}

function expected(expect) {
  return expect.valid
    ? { valid: true, id: expect.id, event: expect.event }
    : { valid: false, error: expect.error, stage: "webhook" };
}

/** A record as Node's `req.headers` holds one: a name sent twice becomes a list. */
function record(pairs) {
  const out = {};
  for (const [name, value] of pairs) {
    if (name in out) {
      out[name] = [].concat(out[name], value);
    } else {
      out[name] = value;
    }
  }
  return out;
}

/** Whether a name is sent twice, ignoring case (a `Headers` object would join the two values). */
function repeats(pairs) {
  const names = pairs.map(([name]) => name.toLowerCase());
  return new Set(names).size !== names.length;
}

function options(testCase) {
  const out = { now: testCase.now };
  if (testCase.tolerance_seconds !== undefined) out.toleranceSeconds = testCase.tolerance_seconds;
  return out;
}

/** Runs `fn` with the JavaScript clock at `seconds` (the library reads only `Date.now`). */
function at(seconds, fn) {
  const real = Date.now;
  Date.now = () => seconds * 1000;
  try {
    return fn();
  } finally {
    Date.now = real;
  }
}

test("webhook vectors: verifyWebhook with a record, a Headers object and pairs", () => {
  assert.ok(vectors.cases.length >= 60, `only ${vectors.cases.length} cases`);
  for (const testCase of vectors.cases) {
    const want = expected(testCase.expect);
    const secrets = testCase.secrets;
    const result = sdk.verifyWebhook(secrets, record(testCase.headers), testCase.body, options(testCase));
    assert.deepEqual(verdict(result), want, `${testCase.name} (record)`);
    const pairs = sdk.verifyWebhookPairs(secrets, testCase.headers, testCase.body, testCase.now, testCase.tolerance_seconds);
    assert.deepEqual(verdict(pairs), want, `${testCase.name} (pairs)`);
    if (!repeats(testCase.headers)) {
      const headers = new Headers(testCase.headers);
      const bytes = new TextEncoder().encode(testCase.body);
      const fromHeaders = sdk.verifyWebhook(secrets, headers, bytes, options(testCase));
      assert.deepEqual(verdict(fromHeaders), want, `${testCase.name} (Headers, bytes)`);
    }
    if (secrets.length === 1) {
      const single = sdk.verifyWebhook(secrets[0], record(testCase.headers), testCase.body, options(testCase));
      assert.deepEqual(verdict(single), want, `${testCase.name} (one secret as a string)`);
    }
  }
});

test("webhook vectors: secrets read or refused", () => {
  const good = vectors.cases.find((c) => c.name === "valid");
  for (const secretCase of vectors.secrets) {
    const result = sdk.verifyWebhook(secretCase.secret, record(good.headers), good.body, { now: good.now });
    if (secretCase.expect.valid) {
      assert.notEqual(result.error?.code, "webhook_secret_invalid", secretCase.name);
    } else {
      assert.deepEqual([result.valid, result.error.code], [false, secretCase.expect.error], secretCase.name);
    }
  }
});

test("bodies: a string, a Uint8Array, a Buffer and an ArrayBuffer are the same bytes", () => {
  const testCase = vectors.cases.find((c) => c.name === "non_ascii_payload");
  const bytes = new TextEncoder().encode(testCase.body);
  for (const body of [testCase.body, bytes, Buffer.from(testCase.body, "utf8"), bytes.buffer.slice(0)]) {
    const result = sdk.verifyWebhook(testCase.secrets, record(testCase.headers), body, { now: testCase.now });
    assert.equal(result.valid, true, Object.prototype.toString.call(body));
    assert.deepEqual(result.event, JSON.parse(testCase.body));
  }
});

test("bad arguments are answered, never thrown", () => {
  const good = vectors.cases.find((c) => c.name === "valid");
  const headers = record(good.headers);
  const refusals = [
    [[5, headers, good.body, { now: good.now }], "invalid_argument"],
    [[[good.secrets[0], 5], headers, good.body, { now: good.now }], "invalid_argument"],
    [[good.secrets, null, good.body, { now: good.now }], "invalid_argument"],
    [[good.secrets, "webhook-id: x", good.body, { now: good.now }], "invalid_argument"],
    [[good.secrets, [["webhook-id", "x"]], good.body, { now: good.now }], "invalid_argument"],
    [[good.secrets, { "webhook-id": 5 }, good.body, { now: good.now }], "invalid_argument"],
    [[good.secrets, headers, 5, { now: good.now }], "invalid_argument"],
    [[good.secrets, headers, { body: good.body }, { now: good.now }], "invalid_argument"],
    [[good.secrets, headers, good.body, { now: "yesterday" }], "invalid_options"],
    [[good.secrets, headers, good.body, { now: good.now, toleranceSeconds: -1 }], "invalid_options"],
    [[good.secrets, headers, good.body, { now: good.now, toleranceSeconds: NaN }], "invalid_options"],
    [[good.secrets, headers, good.body, null], "invalid_options"],
  ];
  for (const [args, code] of refusals) {
    const result = sdk.verifyWebhook(...args);
    assert.deepEqual([result.valid, result.error.code, result.error.stage], [false, code, "input"], JSON.stringify(args.slice(1)));
  }
  assert.equal(sdk.verifyWebhook(good.secrets, headers, good.body, { now: good.now, toleranceSeconds: 0 }).valid, true);
  assert.equal(sdk.verifyWebhook(good.secrets, headers, good.body, { now: good.now + 1, toleranceSeconds: 0 }).error.code, "webhook_timestamp_too_old");
  assert.equal(sdk.verifyWebhookPairs(good.secrets, [["webhook-id"]], good.body).error.code, "invalid_argument");
});

test("standardwebhooks signs what core signs", () => {
  assert.equal(vectors.signatures[0].name, "standard_webhooks_example");
  for (const known of vectors.signatures) {
    const signature = new Webhook(known.secret).sign(known.id, new Date(known.timestamp * 1000), known.body);
    assert.equal(signature, known.signature, known.name);
  }
});

test("standardwebhooks accepts what core signed and refuses what core refuses for its signature or time", () => {
  let checked = 0;
  for (const testCase of vectors.cases) {
    const code = testCase.expect.error;
    // The library judges signatures and times only; core also refuses
    // header forms the library lets through (a timestamp with a leading
    // zero, an id with a dot, a header sent twice).
    const judged = ["webhook_signature_invalid", "webhook_signature_missing", "webhook_timestamp_too_old", "webhook_timestamp_in_future"];
    const signatureFine = code === undefined || code.startsWith("webhook_payload") || code === "webhook_event_type_unknown";
    if (!judged.includes(code) && !signatureFine) continue;
    if (testCase.tolerance_seconds !== undefined || repeats(testCase.headers)) continue;
    const outcomes = testCase.secrets.map((secret) =>
      at(testCase.now, () => {
        try {
          new Webhook(secret).verify(testCase.body, record(testCase.headers), { jsonParse: false });
          return "accepted";
        } catch (error) {
          assert.ok(error instanceof WebhookVerificationError, `${testCase.name}: ${error}`);
          return "refused";
        }
      }),
    );
    if (signatureFine) {
      assert.ok(outcomes.includes("accepted"), `${testCase.name}: ${outcomes}`);
    } else {
      assert.ok(outcomes.every((o) => o === "refused"), `${testCase.name}: ${outcomes}`);
    }
    checked++;
  }
  assert.ok(checked >= 40, `only ${checked} cases checked`);
  // A rotation: the sender signed with the new and the old secret; the
  // library, holding either, accepts.
  const rotating = vectors.cases.find((c) => c.name === "rotation_sender_signs_with_both_receiver_has_new");
  const old = vectors.cases.find((c) => c.name === "rotation_sender_signs_with_both_receiver_has_old");
  assert.equal(record(rotating.headers)["webhook-signature"].split(" ").length, 2);
  for (const secret of [rotating.secrets[0], old.secrets[0]]) {
    const event = at(rotating.now, () => new Webhook(secret).verify(rotating.body, record(rotating.headers)));
    assert.deepEqual(event, JSON.parse(rotating.body));
  }
});

function newSecret() {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

/** A Mandate event, as the server writes one. */
function eventBody(type, data) {
  return JSON.stringify({ data, timestamp: new Date().toISOString(), type });
}

/** Signs with the library, once per secret, as a sender rotating its secret does. */
function signWithLibrary(secrets, id, seconds, body) {
  const signatures = secrets.map((secret) => new Webhook(secret).sign(id, new Date(seconds * 1000), body));
  return { "webhook-id": id, "webhook-timestamp": String(seconds), "webhook-signature": signatures.join(" ") };
}

test("the SDK accepts what standardwebhooks signs, through a rotation, and refuses what it must", () => {
  const [oldSecret, newSecretText, stranger] = [newSecret(), newSecret(), newSecret()];
  const now = Math.floor(Date.now() / 1000);
  for (const [index, type] of vectors.event_types.entries()) {
    const id = `msg_${randomBytes(12).toString("hex")}`;
    const body = eventBody(type, { n: index, note: "é ✓ 𝄞", nested: { list: [1, 2.5, null] } });
    const headers = signWithLibrary([newSecretText, oldSecret], id, now, body);
    // The clock read by the SDK itself (no `now`).
    for (const secrets of [newSecretText, oldSecret, [stranger, oldSecret], [oldSecret, newSecretText]]) {
      const result = sdk.verifyWebhook(secrets, headers, body);
      assert.deepEqual(verdict(result), { valid: true, id, event: JSON.parse(body) }, `${type} ${secrets}`);
    }
    assert.equal(sdk.verifyWebhook(stranger, headers, body).error.code, "webhook_signature_invalid");
    assert.equal(sdk.verifyWebhook(newSecretText, headers, body.replace(`"n":${index}`, `"n":${index + 1}`)).error.code, "webhook_signature_invalid");
    // A minute beyond the 300 s tolerance each way: the SDK reads its own
    // clock, which a busy machine moves on while the loop runs.
    const old = signWithLibrary([newSecretText], id, now - 360, body);
    assert.equal(sdk.verifyWebhook(newSecretText, old, body).error.code, "webhook_timestamp_too_old");
    assert.equal(sdk.verifyWebhook(newSecretText, old, body, { toleranceSeconds: 600 }).valid, true);
    const future = signWithLibrary([newSecretText], id, now + 360, body);
    assert.equal(sdk.verifyWebhook(newSecretText, future, body).error.code, "webhook_timestamp_in_future");
  }
  // The library signs any payload; the SDK accepts only Mandate's events.
  const id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";
  const foreign = JSON.stringify({ type: "contact.created", timestamp: "2022-11-03T20:26:10.344522Z", data: { id: "1f81eb52" } });
  const headers = signWithLibrary([newSecretText], id, now, foreign);
  assert.equal(sdk.verifyWebhook(newSecretText, headers, foreign).error.code, "webhook_event_type_unknown");
});

test("a receiver: node:http, the raw body and req.headers", async () => {
  const secret = newSecret();
  const received = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const result = sdk.verifyWebhook(secret, req.headers, Buffer.concat(chunks));
      received.push(result);
      res.writeHead(result.valid ? 204 : 400).end();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  const post = (headers, body) =>
    new Promise((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port, method: "POST", path: "/hooks/mandate", headers: { "content-type": "application/json", ...headers } }, (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on("error", reject);
      req.end(body);
    });
  try {
    const body = eventBody("token.revoked", { reason: "compromised" });
    const headers = signWithLibrary([secret], "msg_receiver1", Math.floor(Date.now() / 1000), body);
    assert.equal(await post(headers, body), 204);
    assert.equal(await post(headers, body.replace("compromised", "expired")), 400);
    assert.equal(received[0].event.type, "token.revoked");
    assert.equal(received[0].id, "msg_receiver1");
    assert.equal(received[1].error.code, "webhook_signature_invalid");
  } finally {
    server.close();
  }
});
