// Token status lists (IETF Token Status List) in the SDK beyond the vectors:
// a Verifier keeps the newest list per uri and re-checks status on every
// cached hit; no argument makes a function throw; our lists and tokens are
// read by implementations we did not write (jose, @sd-jwt/jwt-status-list),
// and theirs by ours; and createRemoteVerifier fetches lists only where it
// may, caches them for their ttl, honours ETags and fails closed, and
// checks a request's proof once, across list and key refreshes.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";

import { StatusList, createHeaderAndPayload, getListFromStatusListJWT } from "@sd-jwt/jwt-status-list";
import * as jose from "jose";

const sdk = createRequire(import.meta.url)("..");
const vectors = (name) => JSON.parse(readFileSync(new URL(`../../tests/vectors/${name}.json`, import.meta.url), "utf8"));
const lists = vectors("status_list");
const tokens = vectors("tokens");
const byName = (name) => lists.cases.find((c) => c.name === name);

const NOW = lists.now;
const good = byName("valid").list; // list 0 at NOW - 60: entries 7, 8, 1000 and 65535 revoked
const earlier = byName("valid_before_revocation").list; // list 0 at NOW - 600: nothing revoked
const old = byName("stale").list; // list 0 at NOW - 7200
const valid = byName("valid").token; // entry 3 of list 0
const revoked = byName("revoked").token; // entry 7 of list 0
const unlisted = byName("no_status_claim").token; // no status claim
const otherList = byName("other_list_valid"); // a token of list 1, and list 1
const LIST0 = "https://mandate.example/v1/vat/status/0";

const code = (result) => (result.valid ? null : result.error.code);

test("a Verifier keeps the newest list per uri, whatever the order it is given them", () => {
  const verifier = new sdk.Verifier(lists.jwks, { checkStatus: true });
  assert.equal(code(verifier.verify(revoked, NOW)), "status_unknown");
  const first = verifier.setStatusList(earlier, NOW);
  assert.deepEqual(
    { ok: first.ok, held: first.held, uri: first.uri, iat: first.iat, bits: first.bits, size: first.size, ttl: first.ttl },
    { ok: true, held: true, uri: LIST0, iat: NOW - 600, bits: 1, size: 65536, ttl: 300 },
  );
  assert.equal(code(verifier.verify(revoked, NOW)), null);
  assert.equal(verifier.setStatusList(good, NOW).held, true);
  assert.equal(code(verifier.verify(revoked, NOW)), "token_revoked");
  // An older list does not replace a newer one.
  assert.equal(verifier.setStatusList(earlier, NOW).held, false);
  assert.equal(code(verifier.verify(revoked, NOW)), "token_revoked");
  // Lists of other uris are held beside it.
  assert.equal(code(verifier.verify(otherList.token, NOW)), "status_unknown");
  assert.equal(verifier.setStatusList(otherList.list, NOW).ok, true);
  assert.equal(code(verifier.verify(otherList.token, NOW)), null);
  assert.equal(code(verifier.verify(revoked, NOW)), "token_revoked");
  verifier.free();
});

test("told its issuer's origins, a Verifier refuses a status uri on another (a Host forged at issue)", () => {
  const ORIGIN = "https://mandate.example";
  const verifier = new sdk.Verifier(lists.jwks, { checkStatus: true, statusOrigins: [ORIGIN] });
  assert.equal(verifier.setStatusList(good, NOW).ok, true);
  assert.equal(code(verifier.verify(valid, NOW)), null);
  assert.equal(code(verifier.verify(revoked, NOW)), "token_revoked");
  // The list an attacker keeps for the uri it forged is never held, and
  // the token naming it is refused before any list is looked for.
  const elsewhere = new sdk.Verifier(lists.jwks, { checkStatus: true, statusOrigins: ["https://other.example"] });
  const set = elsewhere.setStatusList(good, NOW);
  assert.equal(set.ok, false);
  assert.equal(set.error.code, "status_origin_not_allowed");
  assert.equal(code(elsewhere.verify(valid, NOW)), "status_origin_not_allowed");
  // Tokens without a status claim have no list to be on.
  assert.equal(code(elsewhere.verify(unlisted, NOW)), null);
  // verifyToken takes the origins beside its list.
  const once = (origins) => code(sdk.verifyToken(valid, lists.jwks, { now: NOW, statusList: good, statusOrigins: origins }));
  assert.equal(once([ORIGIN]), null);
  assert.equal(once(["HTTPS://MANDATE.EXAMPLE/"]), null);
  assert.equal(once(["https://other.example"]), "status_origin_not_allowed");
  // Origins only, and only with status checking.
  for (const bad of [["mandate.example"], [`${ORIGIN}/v1`], ["ftp://mandate.example"], [""]]) {
    assert.equal(new sdk.Verifier(lists.jwks, { checkStatus: true, statusOrigins: bad }).error?.code, "invalid_options", bad[0]);
  }
  assert.equal(new sdk.Verifier(lists.jwks, { statusOrigins: [ORIGIN] }).error?.code, "invalid_options");
  verifier.free();
  elsewhere.free();
});

test("a cached token's status is checked again on every hit", () => {
  const verifier = new sdk.Verifier(lists.jwks, { checkStatus: true, cacheSize: 16, maxStalenessSeconds: 700 });
  verifier.setStatusList(earlier, NOW);
  assert.equal(code(verifier.verify(revoked, NOW)), null);
  assert.equal(verifier.cached, 1);
  // The revocation arrives: the cached token is refused.
  verifier.setStatusList(good, NOW);
  assert.equal(code(verifier.verify(revoked, NOW)), "token_revoked");
  assert.equal(code(verifier.verify(valid, NOW)), null);
  // A held list grows old: refused, cached or not, once older than 700 s.
  assert.equal(code(verifier.verify(valid, NOW + 640)), null);
  assert.equal(code(verifier.verify(valid, NOW + 641)), "status_stale");
  assert.equal(verifier.verify(valid, NOW + 641).error.stage, "status");
  // A token without a status claim is not looked up.
  assert.equal(code(verifier.verify(unlisted, NOW + 641)), null);
  verifier.free();
});

test("status checking is asked for, and its options are checked", () => {
  const plain = new sdk.Verifier(lists.jwks);
  // Without checkStatus no list is needed, and none may be given.
  assert.equal(code(plain.verify(revoked, NOW)), null);
  assert.equal(plain.setStatusList(good, NOW).error.code, "status_checking_off");
  plain.free();
  for (const options of [
    { statusList: good },
    { maxStalenessSeconds: 60 },
    { checkStatus: true, uri: LIST0 },
  ]) {
    const verifier = new sdk.Verifier(lists.jwks, options);
    assert.equal(verifier.error?.code, "invalid_options", JSON.stringify(options));
    assert.equal(verifier.setStatusList(good, NOW).error.code, "invalid_options");
    verifier.free();
  }
  for (const options of [{ checkStatus: true }, { maxStalenessSeconds: 5 }, { statusList: 5 }, { uri: LIST0 }]) {
    const result = sdk.verifyToken(valid, lists.jwks, { now: NOW, ...options });
    assert.equal(result.error.code, "invalid_options", JSON.stringify(options));
  }
  for (const options of [{ issuer: "x" }, { statusList: good }, { maxStalenessSeconds: 5 }, { uri: 5 }, [1]]) {
    const result = sdk.verifyStatusList(good, lists.jwks, options);
    assert.equal(result.error.code, "invalid_options", JSON.stringify(options));
  }
  assert.equal(code(sdk.verifyChain([valid], lists.jwks, { now: NOW, statusList: good })), "invalid_options");
});

test("no argument makes the status functions throw", () => {
  const weird = [undefined, null, 0, NaN, "", "a.b.c", {}, [], () => 1, Symbol("s"), 10n, new Uint8Array(3)];
  const verifier = new sdk.Verifier(lists.jwks, { checkStatus: true });
  for (const value of weird) {
    assert.equal(sdk.verifyStatusList(value, lists.jwks).valid, false);
    assert.equal(sdk.verifyStatusList(good, value, { now: NOW }).valid, false);
    assert.equal(verifier.setStatusList(value, NOW).ok, false);
    const set = verifier.setStatusList(good, value);
    assert.equal(typeof set.ok, "boolean");
    // Options cross as JSON: what JSON drops (undefined, functions,
    // symbols) or makes null (NaN) is no list; anything else but a list is
    // refused.
    const withList = sdk.verifyToken(valid, lists.jwks, { now: NOW, statusList: value });
    const absent = typeof value !== "bigint" && ["{}", '{"value":null}'].includes(JSON.stringify({ value }));
    assert.equal(withList.valid, absent, String(typeof value));
  }
  verifier.free();
});

test("jose and @sd-jwt/jwt-status-list read our lists", async () => {
  const keys = jose.createLocalJWKSet(lists.jwks);
  const { payload, protectedHeader } = await jose.jwtVerify(good, keys, {
    typ: "statuslist+jwt",
    algorithms: ["EdDSA"],
    subject: LIST0,
    currentDate: new Date(NOW * 1000),
  });
  assert.equal(protectedHeader.typ, "statuslist+jwt");
  assert.deepEqual(Object.keys(payload), ["sub", "iat", "exp", "ttl", "status_list"]);
  const theirs = getListFromStatusListJWT(good);
  assert.equal(theirs.getBitsPerStatus(), 1);
  assert.equal(theirs.statusList.length, 65536);
  const set = new Set([7, 8, 1000, 65535]);
  theirs.statusList.forEach((status, index) => assert.equal(status, set.has(index) ? 1 : 0, `entry ${index}`));
  // The 2-bit list of the vectors, entries 1, 2 and 3 at 1, 2 and 3.
  const twoBit = getListFromStatusListJWT(byName("suspended").list);
  assert.deepEqual([0, 1, 2, 3, 4].map((i) => twoBit.getStatus(i)), [0, 1, 2, 3, 0]);
  // Our tokens too: the status claim is where the draft puts it.
  const claims = jose.decodeJwt(valid);
  assert.deepEqual(claims.status, { status_list: { idx: 3, uri: LIST0 } });
});

test("we read lists made by @sd-jwt/jwt-status-list and signed by jose", async () => {
  const { privateKey, publicKey } = await jose.generateKeyPair("EdDSA", { crv: "Ed25519" });
  const jwk = await jose.exportJWK(publicKey);
  const kid = await jose.calculateJwkThumbprint(jwk);
  const jwks = { keys: [{ ...jwk, kid, alg: "EdDSA", use: "sig" }] };
  const uri = "https://issuer.example/statuslists/1";
  const list = new StatusList(new Array(16).fill(0), 1);
  list.setStatus(5, 1);
  const { header, payload } = createHeaderAndPayload(
    list,
    { sub: uri, iat: NOW - 10, exp: NOW + 600, ttl: 60 },
    { alg: "EdDSA", typ: "statuslist+jwt", kid },
  );
  const listJwt = await new jose.SignJWT(payload).setProtectedHeader(header).sign(privateKey);
  const info = sdk.verifyStatusList(listJwt, jwks, { uri, now: NOW });
  assert.deepEqual([info.valid, info.bits, info.size, info.ttl], [true, 1, 16, 60]);
  // A Mandate token signed by jose under the same key, naming entry idx.
  const root = tokens.cases.find((c) => c.name === "valid_root").expect.claims;
  const token = (idx) =>
    new jose.SignJWT({ ...root, status: { status_list: { idx, uri } } })
      .setProtectedHeader({ alg: "EdDSA", typ: "vat+jwt", kid })
      .sign(privateKey);
  const check = async (idx) => code(sdk.verifyToken(await token(idx), jwks, { now: NOW, statusList: listJwt }));
  assert.equal(await check(4), null);
  assert.equal(await check(5), "token_revoked");
  assert.equal(await check(16), "status_index_out_of_range");
});

/** A fake server: answers each status list URL from `routes`, recording every request. */
function fakeServer(routes, { jwks = lists.jwks } = {}) {
  const requests = [];
  const fetch = async (url, init) => {
    requests.push({ url, headers: init.headers, credentials: init.credentials });
    if (url === "https://mandate.example/.well-known/jwks.json") {
      return answer(200, JSON.stringify(jwks));
    }
    const route = routes[url];
    const next = typeof route === "function" ? route(init) : route;
    if (next === undefined) return answer(404, "");
    if (next instanceof Error) throw next;
    return next;
  };
  return { requests, fetch, statusRequests: () => requests.filter((r) => !r.url.endsWith("jwks.json")) };
}

function answer(status, body, headers = {}) {
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return {
    ok: status >= 200 && status < 300,
    status,
    headers: { get: (name) => lower[name.toLowerCase()] ?? null },
    text: async () => body,
  };
}

const list = (jwt, etag) => answer(200, jwt, { "content-type": "application/statuslist+jwt", etag });

async function remote(server, options = {}) {
  return sdk.createRemoteVerifier({
    baseUrl: "https://mandate.example/",
    fetch: server.fetch,
    maxStalenessSeconds: 3600,
    ...options,
  });
}

test("remote: one fetch of the list, asked for by its media type, without credentials", async () => {
  const server = fakeServer({ [LIST0]: list(good, '"v1"') });
  const verifier = await remote(server);
  assert.deepEqual(server.requests.map((r) => r.url), ["https://mandate.example/.well-known/jwks.json"]);
  assert.deepEqual(verifier.allowedStatusOrigins, ["https://mandate.example"]);
  assert.equal(code(await verifier.verify(valid, NOW)), null);
  assert.equal(code(await verifier.verify(revoked, NOW)), "token_revoked");
  assert.equal(code(await verifier.verify(valid, NOW + 299)), null);
  const fetched = server.statusRequests();
  assert.equal(fetched.length, 1);
  assert.deepEqual(fetched[0], { url: LIST0, headers: { accept: "application/statuslist+jwt" }, credentials: "omit" });
  // A token without a status claim, and an invalid one, fetch nothing.
  assert.equal(code(await verifier.verify(unlisted, NOW)), null);
  assert.equal(code(await verifier.verify(byName("typ_jwt").list, NOW)), "invalid_typ");
  assert.equal(code(await verifier.verify(valid, NOW + 5000)), "expired");
  assert.equal(server.statusRequests().length, 1);
  verifier.free();
});

test("remote: after its ttl the list is fetched again with If-None-Match; a 304 keeps it, a new list replaces it", async () => {
  let next = list(earlier, '"v1"');
  const server = fakeServer({ [LIST0]: () => next });
  const verifier = await remote(server);
  assert.equal(code(await verifier.verify(revoked, NOW)), null);
  // Within the ttl (300 s): no fetch, whatever the server now has.
  next = answer(304, "");
  assert.equal(code(await verifier.verify(revoked, NOW + 299)), null);
  assert.equal(server.statusRequests().length, 1);
  // Past it: asked again, with the ETag; 304 keeps the list and restarts the ttl.
  assert.equal(code(await verifier.verify(revoked, NOW + 300)), null);
  assert.equal(server.statusRequests().length, 2);
  assert.equal(server.statusRequests()[1].headers["if-none-match"], '"v1"');
  assert.equal(code(await verifier.verify(revoked, NOW + 599)), null);
  assert.equal(server.statusRequests().length, 2);
  // The revocation is published: the next refresh brings it.
  next = list(good, '"v2"');
  assert.equal(code(await verifier.verify(revoked, NOW + 600)), "token_revoked");
  assert.equal(server.statusRequests().length, 3);
  verifier.free();
});

test("remote: a 304 does not make a list younger; past maxStalenessSeconds it fails closed", async () => {
  let next = list(good, '"v1"');
  const server = fakeServer({ [LIST0]: () => next });
  const verifier = await remote(server, { maxStalenessSeconds: 600 });
  assert.equal(code(await verifier.verify(valid, NOW)), null);
  next = answer(304, "");
  // good was signed at NOW - 60: at NOW + 541 it is 601 s old.
  assert.equal(code(await verifier.verify(valid, NOW + 540)), null);
  const stale = await verifier.verify(valid, NOW + 541);
  assert.equal(code(stale), "status_stale");
  assert.equal(stale.error.stage, "status");
  verifier.free();
});

test("remote: a list that cannot be fetched or is refused fails closed, and is not asked for again at once", async () => {
  for (const [route, reason] of [
    [new TypeError("fetch failed"), /could not be fetched/],
    [answer(500, "oops"), /HTTP 500/],
    [list(byName("tampered_lst").list), /invalid_signature/],
    [list(byName("zip_bomb").list), /list_too_large/],
    [list(otherList.list), /is the list of/],
    [list(old), /issued longer ago/],
  ]) {
    const server = fakeServer({ [LIST0]: route });
    const verifier = await remote(server, { maxStalenessSeconds: 3600 });
    const result = await verifier.verify(valid, NOW);
    assert.equal(result.valid, false, String(reason));
    assert.ok(["status_unknown", "status_stale"].includes(result.error.code), `${reason}: ${result.error.code}`);
    assert.match(result.error.message, reason);
    // Throttled: asking again at once does not fetch again.
    await verifier.verify(valid, NOW + 1);
    assert.equal(server.statusRequests().length, 1, String(reason));
    verifier.free();
  }
});

test("remote: a list held is still used while a refresh fails", async () => {
  let next = list(good, '"v1"');
  const server = fakeServer({ [LIST0]: () => next });
  const verifier = await remote(server);
  assert.equal(code(await verifier.verify(revoked, NOW)), "token_revoked");
  next = new TypeError("offline");
  assert.equal(code(await verifier.verify(revoked, NOW + 400)), "token_revoked");
  assert.equal(code(await verifier.verify(valid, NOW + 400)), null);
  verifier.free();
});

test("remote: a token naming another origin makes no request there", async () => {
  const server = fakeServer({ [LIST0]: list(good) });
  const elsewhere = await sdk.createRemoteVerifier({
    jwksUrl: "https://mandate.example/.well-known/jwks.json",
    allowedStatusOrigins: ["https://status.example"],
    fetch: server.fetch,
    maxStalenessSeconds: 3600,
  });
  const refused = await elsewhere.verify(valid, NOW);
  assert.equal(code(refused), "status_origin_not_allowed");
  assert.equal(refused.error.stage, "status");
  assert.equal(server.statusRequests().length, 0);
  elsewhere.free();
  // Allowed explicitly, it is fetched.
  const allowed = await remote(server, { allowedStatusOrigins: ["https://mandate.example"] });
  assert.equal(code(await allowed.verify(valid, NOW)), null);
  assert.equal(server.statusRequests().length, 1);
  allowed.free();
});

test("remote: verifications at once share one fetch", async () => {
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  const server = fakeServer({ [LIST0]: () => gate.then(() => list(good)) });
  const verifier = await remote(server);
  const results = Promise.all([verifier.verify(valid, NOW), verifier.verify(revoked, NOW), verifier.verify(valid, NOW)]);
  release();
  assert.deepEqual((await results).map(code), [null, "token_revoked", null]);
  assert.equal(server.statusRequests().length, 1);
  verifier.free();
});

test("remote: an unusable key set or server is a MandateError", async () => {
  await assert.rejects(
    sdk.createRemoteVerifier({ baseUrl: "https://mandate.example", maxStalenessSeconds: 60, fetch: fakeServer({}, { jwks: { keys: "no" } }).fetch }),
    (error) => error instanceof sdk.MandateError && error.code === "malformed_jwks",
  );
  await assert.rejects(
    sdk.createRemoteVerifier({
      baseUrl: "https://mandate.example",
      maxStalenessSeconds: 60,
      fetch: async () => {
        throw new TypeError("down");
      },
    }),
    (error) => error instanceof sdk.MandateError && error.code === "network_error",
  );
  await assert.rejects(sdk.createRemoteVerifier({ maxStalenessSeconds: 60, fetch: async () => answer(200, "{}") }), TypeError);
});

/** A signing key of our own, published as the server would (kid: its RFC 7638 thumbprint), signing with jose. */
async function signingKey() {
  const { privateKey, publicKey } = await jose.generateKeyPair("EdDSA", { crv: "Ed25519" });
  const jwk = await jose.exportJWK(publicKey);
  const kid = await jose.calculateJwkThumbprint(jwk);
  const sign = (typ, claims) => new jose.SignJWT(claims).setProtectedHeader({ alg: "EdDSA", typ, kid }).sign(privateKey);
  return {
    jwk: { ...jwk, kid, alg: "EdDSA", use: "sig" },
    /** The vectors' valid token (entry 3 of list 0), signed with this key. */
    token: (extra = {}) => sign("vat+jwt", { ...sdk.decodeTokenUnverified(valid).claims, ...extra }),
    /** List 0, nothing revoked, signed at `iat` with a ttl of 300 s. */
    statusList: (iat) => {
      const { payload } = createHeaderAndPayload(
        new StatusList(new Array(16).fill(0), 1),
        { sub: LIST0, iat, exp: iat + 86_400, ttl: 300 },
        { alg: "EdDSA" },
      );
      return sign("statuslist+jwt", payload);
    },
  };
}

test("remote: verifyRequest checks a proof once, when the list is refreshed first and across a key refresh", async () => {
  const key = await signingKey();
  const agent = sdk.generateAgentKey();
  const server = fakeServer({ [LIST0]: list(await key.statusList(NOW)) }, { jwks: { keys: [key.jwk] } });
  const keyRequests = () => server.requests.length - server.statusRequests().length;
  const verifier = await remote(server, { clock: () => NOW });
  const token = await key.token({ cnf: { jkt: agent.jkt } });
  const url = "https://api.example/crm";
  const proof = (at) => {
    const made = agent.proof({ method: "POST", url, accessToken: token, now: at });
    assert.equal(made.ok, true);
    return made.proof;
  };
  const request = (dpop, now) => verifier.verifyRequest(token, { method: "POST", url, proof: dpop, now });
  assert.equal(code(await verifier.verify(token, NOW)), "dpop_required");
  const first = proof(NOW);
  const accepted = await request(first, NOW);
  assert.equal(code(accepted), null);
  assert.equal(accepted.claims.cnf.jkt, agent.jkt);
  assert.equal(code(await request(first, NOW)), "dpop_replayed");
  assert.equal(code(await verifier.verifyRequest(token, { method: "POST", url, now: NOW })), "dpop_required");
  // Past the list's ttl (300 s) the list is fetched first, and a proof is still good once.
  const later = proof(NOW + 300);
  assert.equal(code(await request(later, NOW + 300)), null);
  assert.equal(server.statusRequests().length, 2);
  // A key refresh, which anyone can cause with a forged kid, does not make a proof good again.
  const stranger = await signingKey();
  assert.equal(code(await verifier.verify(await stranger.token(), NOW + 301)), "unknown_kid");
  assert.equal(keyRequests(), 2);
  assert.equal(code(await request(later, NOW + 301)), "dpop_replayed");
  // The held list was given again with the new keys: a fresh proof passes without a fetch
  // (one would be throttled, 1 s after the last, and the token refused status_unknown).
  assert.equal(code(await request(proof(NOW + 301), NOW + 301)), null);
  assert.equal(server.statusRequests().length, 2);
  verifier.free();
});

test("Verifier.setKeys drops the cache and the lists, and keeps the revocation set", () => {
  const verifier = new sdk.Verifier(lists.jwks, { checkStatus: true, cacheSize: 8 });
  assert.equal(verifier.setStatusList(good, NOW).ok, true);
  assert.equal(code(verifier.verify(valid, NOW)), null);
  assert.equal(verifier.cached, 1);
  for (const [junk, refusedAs] of [
    [{ keys: "no" }, "malformed_jwks"],
    [5, "malformed_jwks"],
    ["not json", "malformed_jwks"],
    [{ keys: [{ kty: "RSA" }] }, "no_usable_keys"],
  ]) {
    const refused = verifier.setKeys(junk);
    assert.equal(refused.ok, false, JSON.stringify(junk));
    assert.equal(refused.error.code, refusedAs, JSON.stringify(junk));
  }
  // An unusable key set changes nothing.
  assert.equal(verifier.cached, 1);
  assert.equal(code(verifier.verify(valid, NOW)), null);
  assert.deepEqual(verifier.revoke(sdk.decodeTokenUnverified(unlisted).claims.jti), { ok: true });
  assert.deepEqual(verifier.setKeys(JSON.stringify(lists.jwks)), { ok: true });
  assert.equal(verifier.cached, 0);
  assert.equal(code(verifier.verify(valid, NOW)), "status_unknown");
  assert.equal(verifier.setStatusList(good, NOW).ok, true);
  assert.equal(code(verifier.verify(valid, NOW)), null);
  assert.equal(code(verifier.verify(revoked, NOW)), "token_revoked");
  assert.equal(code(verifier.verify(unlisted, NOW)), "revoked");
  verifier.free();
  // A Verifier that cannot verify keeps its error.
  const broken = new sdk.Verifier({ keys: "no" });
  assert.equal(broken.setKeys(lists.jwks).error.code, "malformed_jwks");
});
