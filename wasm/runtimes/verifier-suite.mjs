// The conformance vectors (tests/vectors/*.json, the files core's native
// tests and wasm/test/*.test.mjs read) judged by one build of mandate-sdk,
// written once for every runtime the package claims: it imports nothing and
// touches no file, console, clock or network, so Node, Deno, Bun and workerd
// run the very same checks. The caller hands it the vectors and the loaded
// SDK (the web build after `init`, or the Node build) and prints `report`.
//
// It covers what the Node suites check against the vectors for the offline
// verifier: tokens and chains (verifyToken, the key set as text, Verifier
// uncached and cached), scopes (permits, checkNarrowing, delegatedGrant),
// DPoP proofs and the binding rule, reputation, status lists, webhooks and
// the record log. It leaves out what needs Node or a peer library (the
// packed package, standardwebhooks, the independent tlog verifier) and the
// HTTP client.

/** The names of the vector files this suite reads, without `.json`. */
export const VECTOR_FILES = ["tokens", "scope", "dpop", "reputation", "status_list", "webhooks", "log"];

/** Structural equality of JSON-like values: same keys, same order of arrays. */
function same(a, b) {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) {
    return Number.isNaN(a) && Number.isNaN(b);
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  return keysA.every((key) => Object.prototype.hasOwnProperty.call(b, key) && same(a[key], b[key]));
}

/** The checks run so far: counts and what failed. */
class Tally {
  constructor() {
    this.passed = 0;
    this.failed = 0;
    this.failures = [];
  }

  /** One check named `name`: `got()` must equal `want`; a throw is a failure. */
  equal(name, got, want) {
    let value;
    try {
      value = got();
    } catch (error) {
      this.fail(name, `threw ${error?.name ?? "error"}: ${error?.message ?? error}`);
      return;
    }
    if (same(value, want)) {
      this.passed += 1;
    } else {
      this.fail(name, `got ${JSON.stringify(value)}, want ${JSON.stringify(want)}`);
    }
  }

  /** A check that the vectors hold at least `min` cases of a kind. */
  atLeast(name, list, min) {
    this.equal(`${name}: at least ${min} cases`, () => Array.isArray(list) && list.length >= min, true);
  }

  fail(name, detail) {
    this.failed += 1;
    this.failures.push({ name, detail });
  }
}

function base64Text(base64) {
  const binary = atob(base64);
  const bytes = Uint8Array.from(binary, (char) => char.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}

function tokenChecks(t, sdk, tokens) {
  const verdict = (result) =>
    result.valid
      ? { valid: true, claims: result.claims }
      : { valid: false, stage: result.error.stage, error: result.error.code };
  const expected = (expect) =>
    expect.valid ? { valid: true, claims: expect.claims } : { valid: false, stage: expect.stage, error: expect.error };
  // What Verifier.verify answers: the token's verdict, or for a bound token its proof's absence.
  const verifierExpected = (expect) =>
    expect.valid && expect.claims.cnf !== undefined
      ? { valid: false, stage: "dpop", error: "dpop_required" }
      : expected(expect);
  const optionsOf = (c) => {
    const options = {};
    if (c.options?.leeway_seconds !== undefined) options.leewaySeconds = c.options.leeway_seconds;
    if (c.options?.issuer !== undefined) options.issuer = c.options.issuer;
    return options;
  };
  // The token vectors are core's `verify`: the token alone.
  const tokenOnly = { skipProofOfPossession: true };

  t.atLeast("tokens", tokens.cases, 50);
  for (const c of tokens.cases) {
    const jwks = c.jwks ?? tokens.jwks;
    t.equal(
      `tokens/${c.name}: verifyToken`,
      () => verdict(sdk.verifyToken(c.token, jwks, { now: c.now, ...tokenOnly, ...optionsOf(c) })),
      expected(c.expect),
    );
    t.equal(
      `tokens/${c.name}: verifyToken with the binding rule`,
      () => verdict(sdk.verifyToken(c.token, jwks, { now: c.now, ...optionsOf(c) })),
      verifierExpected(c.expect),
    );
    t.equal(
      `tokens/${c.name}: verifyToken, the key set as JSON text`,
      () => verdict(sdk.verifyToken(c.token, JSON.stringify(jwks), { now: c.now, ...tokenOnly, ...optionsOf(c) })),
      expected(c.expect),
    );
    for (const cacheSize of [0, 16]) {
      t.equal(
        `tokens/${c.name}: Verifier, cacheSize ${cacheSize}, twice`,
        () => {
          const verifier = new sdk.Verifier(jwks, { cacheSize, ...optionsOf(c) });
          try {
            // Twice: with a cache the second answer comes from it.
            return [0, 1].map(() => verdict(verifier.verify(c.token, c.now)));
          } finally {
            verifier.free();
          }
        },
        [verifierExpected(c.expect), verifierExpected(c.expect)],
      );
    }
  }

  t.atLeast("chains", tokens.chains, 5);
  for (const chain of tokens.chains) {
    t.equal(
      `chains/${chain.name}: verifyChain`,
      () => {
        const result = sdk.verifyChain(chain.tokens, tokens.jwks, { now: chain.now, revoked: chain.revoked });
        return result.valid
          ? { valid: true, length: result.tokens.length }
          : { valid: false, error: result.error.code, index: result.error.index };
      },
      chain.expect.valid
        ? { valid: true, length: chain.tokens.length }
        : { valid: false, error: chain.expect.error, index: chain.expect.index },
    );
  }
}

function scopeChecks(t, sdk, scope) {
  const violations = (list) => list.map(({ field, code }) => ({ field, code }));

  t.atLeast("scope permits", scope.permits, 10);
  for (const c of scope.permits) {
    t.equal(
      `scope/permits ${c.action} ${c.resource} under ${c.resources}`,
      () => {
        const result = sdk.permits({ resources: c.resources, actions: c.actions }, c.action, c.resource);
        return result.ok ? true : result.reason ? false : result.error.code;
      },
      c.expect,
    );
  }

  t.atLeast("scope narrowing", scope.narrowing, 5);
  for (const c of scope.narrowing) {
    t.equal(
      `scope/narrowing ${c.name}: checkNarrowing`,
      () => {
        const result = sdk.checkNarrowing(c.child, c.parent);
        return result.error !== undefined ? { error: result.error } : { ok: result.ok, violations: violations(result.violations) };
      },
      c.expect,
    );
  }

  t.atLeast("scope delegation", scope.delegation, 5);
  for (const c of scope.delegation) {
    t.equal(
      `scope/delegation ${c.name}: delegatedGrant`,
      () => {
        const result = sdk.delegatedGrant(c.request, c.parent);
        if (result.error !== undefined) return { error: result.error };
        return result.ok
          ? { ok: true, grant: result.grant }
          : { ok: false, error: result.code, violations: violations(result.violations) };
      },
      c.expect,
    );
  }
}

function dpopChecks(t, sdk, dpop) {
  const verdict = (result) => (result.valid ? { valid: true } : { valid: false, error: result.error.code });

  t.atLeast("dpop proofs", dpop.cases, 25);
  for (const c of dpop.cases) {
    t.equal(
      `dpop/${c.name}: verifyProof`,
      () =>
        verdict(
          sdk.verifyProof(c.proof, { method: c.method, url: c.url, accessToken: dpop.token, jkt: dpop.jkt, now: c.now }),
        ),
      c.expect,
    );
  }

  t.atLeast("dpop binding", dpop.binding, 3);
  for (const c of dpop.binding) {
    const request = { method: "POST", url: dpop.url };
    if (c.proof !== null) request.proof = c.proof;
    t.equal(
      `dpop/binding ${c.name}: verifyToken`,
      () => verdict(sdk.verifyToken(c.token, dpop.jwks, { now: dpop.now, request })),
      c.expect,
    );
    t.equal(
      `dpop/binding ${c.name}: Verifier.verifyRequest`,
      () => {
        const verifier = new sdk.Verifier(dpop.jwks);
        try {
          return verdict(verifier.verifyRequest(c.token, { ...request, now: dpop.now }));
        } finally {
          verifier.free();
        }
      },
      c.expect,
    );
  }
}

function reputationChecks(t, sdk, reputation) {
  t.atLeast("reputation", reputation.cases, 5);
  for (const c of reputation.cases) {
    t.equal(`reputation/${JSON.stringify(c.counts)}`, () => sdk.reputation(c.counts), c.expect);
  }
}

function statusListChecks(t, sdk, lists) {
  const stageCode = (result) => (result.valid ? null : { stage: result.error.stage, error: result.error.code });

  t.atLeast("status lists", lists.cases, 40);
  for (const c of lists.cases) {
    t.equal(
      `status_list/${c.name}: verifyStatusList`,
      () => {
        const options = { now: c.now };
        if (c.uri !== null) options.uri = c.uri;
        const result = sdk.verifyStatusList(c.list, lists.jwks, options);
        if (result.valid && (typeof result.iat !== "number" || ![1, 2, 4, 8].includes(result.bits))) {
          return { malformed: result };
        }
        return stageCode(result);
      },
      c.expect.stage === "status_list" ? { stage: "status_list", error: c.expect.error } : null,
    );
    t.equal(
      `status_list/${c.name}: verifyToken with statusList`,
      () => {
        const options = { now: c.now, statusList: c.list, skipProofOfPossession: true };
        if (c.max_staleness_seconds !== null) options.maxStalenessSeconds = c.max_staleness_seconds;
        return stageCode(sdk.verifyToken(c.token, lists.jwks, options));
      },
      c.sdk.verify_token,
    );
    for (const cacheSize of [0, 16]) {
      t.equal(
        `status_list/${c.name}: Verifier.setStatusList, cacheSize ${cacheSize}`,
        () => {
          const options = { checkStatus: true, cacheSize };
          if (c.max_staleness_seconds !== null) options.maxStalenessSeconds = c.max_staleness_seconds;
          const verifier = new sdk.Verifier(lists.jwks, options);
          try {
            const set = verifier.setStatusList(c.list, c.now);
            const rounds = [0, 1].map(() => {
              const result = verifier.verify(c.token, c.now);
              return result.valid ? null : result.error.code;
            });
            return [set.ok ? "ok" : set.error.code, ...rounds];
          } finally {
            verifier.free();
          }
        },
        [c.sdk.set_status_list, c.sdk.verifier, c.sdk.verifier],
      );
    }
  }
}

function webhookChecks(t, sdk, webhooks) {
  const verdict = (result) =>
    result.valid
      ? { valid: true, id: result.id, event: result.event }
      : { valid: false, error: result.error.code, stage: result.error.stage };
  const expected = (expect) =>
    expect.valid ? { valid: true, id: expect.id, event: expect.event } : { valid: false, error: expect.error, stage: "webhook" };
  // A record as Node's `req.headers` holds one: a name sent twice becomes a list.
  const record = (pairs) => {
    const out = {};
    for (const [name, value] of pairs) out[name] = name in out ? [].concat(out[name], value) : value;
    return out;
  };
  const repeats = (pairs) => new Set(pairs.map(([name]) => name.toLowerCase())).size !== pairs.length;
  const options = (c) => {
    const out = { now: c.now };
    if (c.tolerance_seconds !== undefined) out.toleranceSeconds = c.tolerance_seconds;
    return out;
  };

  t.atLeast("webhooks", webhooks.cases, 60);
  for (const c of webhooks.cases) {
    const want = expected(c.expect);
    t.equal(
      `webhooks/${c.name}: verifyWebhook, headers as a record`,
      () => verdict(sdk.verifyWebhook(c.secrets, record(c.headers), c.body, options(c))),
      want,
    );
    t.equal(
      `webhooks/${c.name}: verifyWebhookPairs`,
      () => verdict(sdk.verifyWebhookPairs(c.secrets, c.headers, c.body, c.now, c.tolerance_seconds)),
      want,
    );
    if (!repeats(c.headers)) {
      // A `Headers` object would join the values of a name sent twice.
      t.equal(
        `webhooks/${c.name}: verifyWebhook, a Headers object and bytes`,
        () => verdict(sdk.verifyWebhook(c.secrets, new Headers(c.headers), new TextEncoder().encode(c.body), options(c))),
        want,
      );
    }
    if (c.secrets.length === 1) {
      t.equal(
        `webhooks/${c.name}: verifyWebhook, one secret as a string`,
        () => verdict(sdk.verifyWebhook(c.secrets[0], record(c.headers), c.body, options(c))),
        want,
      );
    }
  }

  const good = webhooks.cases.find((c) => c.name === "valid");
  t.equal("webhooks: the case named valid is there", () => good !== undefined, true);
  if (good === undefined) return;
  t.atLeast("webhook secrets", webhooks.secrets, 5);
  for (const s of webhooks.secrets) {
    t.equal(
      `webhooks/secret ${s.name}`,
      () => {
        const result = sdk.verifyWebhook(s.secret, record(good.headers), good.body, { now: good.now });
        // A secret that reads is not refused for its form (it may sign nothing here).
        return s.expect.valid ? result.error?.code !== "webhook_secret_invalid" : [result.valid, result.error?.code];
      },
      s.expect.valid ? true : [false, s.expect.error],
    );
  }
}

function logChecks(t, sdk, log) {
  const vkey = log.key.vkey;
  const failure = (result) =>
    result.error.stage === "log" ? { valid: false, error: result.error.code } : { wrongStage: result.error };

  t.atLeast("log inclusion", log.inclusion, 30);
  for (const c of log.inclusion) {
    t.equal(
      `log/inclusion ${c.name}: verifyLogProof`,
      () => {
        const result = sdk.verifyLogProof(c.proof, c.leaf, [vkey], log.origin);
        if (!result.valid) return failure(result);
        const entryMatches = same(result.entry, JSON.parse(base64Text(c.leaf))) && result.checkpoint.origin === log.origin;
        return entryMatches
          ? { valid: true, index: result.index, size: result.checkpoint.size, root: result.checkpoint.root }
          : { entry: result.entry, origin: result.checkpoint.origin };
      },
      c.expect,
    );
    // The keys as text, one a line, and without an origin; trusting the other key too, its signature verifies.
    const keys = `${log.other_vkey}\n${vkey}\n`;
    const withoutOrigin =
      c.name === "other_key_only" || c.expect.error === "checkpoint_origin_mismatch" || c.expect.valid
        ? { valid: true }
        : c.expect;
    t.equal(
      `log/inclusion ${c.name}: verifyLogProof, keys as text, no origin`,
      () => {
        const result = sdk.verifyLogProof(c.proof, c.leaf, keys);
        return result.valid ? { valid: true } : failure(result);
      },
      withoutOrigin,
    );
  }

  t.atLeast("log consistency", log.consistency, 20);
  for (const c of log.consistency) {
    const { old_size, old_root, new_size, new_root, proof } = c;
    t.equal(
      `log/consistency ${c.name}: verifyConsistency`,
      () => {
        const result = sdk.verifyConsistency({ old_size, old_root, new_size, new_root, proof });
        return result.valid ? { valid: true } : failure(result);
      },
      c.expect,
    );
  }

  t.atLeast("log checkpoints", log.checkpoints, 5);
  for (const c of log.checkpoints) {
    t.equal(
      `log/checkpoint ${c.name}: verifyCheckpoint`,
      () => {
        const result = sdk.verifyCheckpoint(c.note, c.vkeys, c.origin);
        return result.valid ? { valid: true, ...result.checkpoint } : failure(result);
      },
      c.expect,
    );
  }

  t.atLeast("log vkeys", log.vkeys, 5);
  for (const c of log.vkeys) {
    t.equal(
      `log/vkey ${c.name}: verifyCheckpoint`,
      () => {
        const result = sdk.verifyCheckpoint(log.monitor.log.checkpoints["1100"], c.vkey);
        return result.valid ? { valid: true } : failure(result);
      },
      c.expect.valid ? { valid: true } : c.expect,
    );
  }

  t.atLeast("log leaves", log.leaves, 15);
  for (const c of log.leaves) {
    t.equal(
      `log/leaf ${c.name}: parseLogLeaf`,
      () => {
        const result = sdk.parseLogLeaf(c.leaf);
        return result.ok ? { ok: true, entry: result.entry } : { ok: false, error: result.error.code };
      },
      c.expect,
    );
  }

  t.atLeast("log record proofs", log.record_proofs, 3);
  for (const c of log.record_proofs) {
    t.equal(
      `log/record proof ${c.name}: verifyRecordProof`,
      () => {
        const result = sdk.verifyRecordProof(c.response, vkey, { origin: log.origin });
        if (result.valid) {
          return {
            valid: true,
            aar_id: result.aar_id,
            kinds: result.events.map((e) => e.entry.kind),
            indices: result.events.map((e) => e.index),
          };
        }
        const got = { valid: false, error: result.error.code };
        if (c.expect.index !== undefined) got.index = result.error.index;
        return got;
      },
      c.expect.valid
        ? { valid: true, aar_id: c.response.aar_id, kinds: c.expect.kinds, indices: c.response.events.map((e) => e.index) }
        : c.expect,
    );
  }
}

/**
 * Runs every check against `sdk` (the loaded package) with `vectors` (an
 * object holding each file of VECTOR_FILES, parsed, by name). Never throws
 * for a failing check; answers `{ passed, failed, failures: [{ name, detail }] }`.
 */
export function runVerifierSuite(sdk, vectors) {
  const t = new Tally();
  const missing = VECTOR_FILES.filter((name) => typeof vectors?.[name] !== "object" || vectors[name] === null);
  for (const name of missing) t.fail(`tests/vectors/${name}.json`, "not given to the suite");
  if (missing.length > 0) return t;
  const groups = [
    [tokenChecks, vectors.tokens],
    [scopeChecks, vectors.scope],
    [dpopChecks, vectors.dpop],
    [reputationChecks, vectors.reputation],
    [statusListChecks, vectors.status_list],
    [webhookChecks, vectors.webhooks],
    [logChecks, vectors.log],
  ];
  for (const [checks, data] of groups) {
    try {
      checks(t, sdk, data);
    } catch (error) {
      // A vector file of an unexpected shape: the group stops, the suite goes on.
      t.fail(`${checks.name}`, `stopped: ${error?.message ?? error}`);
    }
  }
  return t;
}

/** The most failures `report` lists, and the most characters of each. */
const SHOWN_FAILURES = 40;
const SHOWN_DETAIL = 600;

/**
 * The suite's outcome as text: the first failures, one a line prefixed by
 * `label`, then the closing line `N passed, N failed` alone, as test
 * runners print it.
 */
export function report(label, result) {
  const lines = result.failures.slice(0, SHOWN_FAILURES).map(({ name, detail }) => {
    const shown = detail.length > SHOWN_DETAIL ? `${detail.slice(0, SHOWN_DETAIL)}…` : detail;
    return `${label}: FAIL ${name}: ${shown}`;
  });
  if (result.failures.length > SHOWN_FAILURES) {
    lines.push(`${label}: … and ${result.failures.length - SHOWN_FAILURES} more failures`);
  }
  lines.push(`${result.passed} passed, ${result.failed} failed`);
  return lines.join("\n");
}

/** Whether the run counts as a success: something ran and nothing failed. */
export function succeeded(result) {
  return result.passed > 0 && result.failed === 0;
}
