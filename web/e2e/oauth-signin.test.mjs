// Signing in on the consent page with an identity provider (docs/oauth.md,
// "Signing in with an identity provider") in Chromium against a live
// `mandate serve`: the deployment names a provider (`[oidc.issuer.sign_in]`);
// the page offers it beside the API key; the person follows the link, the
// provider (a small OpenID provider of this test on loopback, which signs
// its ID tokens with Ed25519 and lets everyone in as one person) sends the
// browser back through Mandate's callback, and the page — now holding the
// session cookie Mandate set and the CSRF value from the fragment — shows
// the request, signed in as that person, and approves it. The code buys an
// L2 token. This is what checks that a browser keeps the `__Host-` cookies
// on http://127.0.0.1 and sends the `SameSite=Strict` one with the page's
// calls after a cross-site redirect chain.

import assert from "node:assert/strict";
import { createHash, generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import {
  axeViolations,
  freePort,
  launchBrowser,
  openPage,
  pkce,
  redeemCode,
  screenshot,
  startServer,
  tabTo,
} from "./harness.mjs";

const RESOURCE = "https://mcp.example.com/mcp";
const CLIENT_ID = "mandate-consent";
const SECRET = "s3cret";
const RULES = '[{"actions": ["read"], "pol": [["==", ".customer", "acme"]]}]';

let server;
let browser;
let callback;
let provider;

/** The client's callback: keeps each query it is sent. */
async function startCallback() {
  const http = createServer((request, response) => {
    response.writeHead(200, { "content-type": "text/plain" }).end("back at the client");
  });
  await new Promise((resolve) => http.listen(0, "127.0.0.1", resolve));
  return {
    uri: `http://127.0.0.1:${http.address().port}/callback`,
    close: () => new Promise((resolve) => http.close(resolve)),
  };
}

const b64url = (value) => Buffer.from(value).toString("base64url");

/**
 * An OpenID provider on loopback: discovery, its one Ed25519 key, an
 * authorization endpoint that signs everyone in as Ada at once, and a
 * token endpoint that checks Mandate's secret, the redirect URI and the
 * PKCE verifier, and answers each code once.
 */
async function startProvider() {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const jwk = { ...publicKey.export({ format: "jwk" }), kid: "ed-1", alg: "EdDSA", use: "sig" };
  const codes = new Map();
  const state = { tokenRequests: 0 };
  let issuer;
  const http = createServer((request, response) => {
    const url = new URL(request.url, issuer);
    const json = (status, body) =>
      response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    if (url.pathname === "/.well-known/openid-configuration") {
      json(200, {
        issuer,
        jwks_uri: `${issuer}/keys`,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        code_challenge_methods_supported: ["S256"],
      });
    } else if (url.pathname === "/keys") {
      json(200, { keys: [jwk] });
    } else if (url.pathname === "/authorize") {
      const query = url.searchParams;
      assert.equal(query.get("client_id"), CLIENT_ID);
      const code = randomBytes(16).toString("base64url");
      codes.set(code, {
        nonce: query.get("nonce"),
        challenge: query.get("code_challenge"),
        redirectUri: query.get("redirect_uri"),
      });
      const back = new URL(query.get("redirect_uri"));
      back.searchParams.set("code", code);
      back.searchParams.set("state", query.get("state"));
      back.searchParams.set("iss", issuer);
      response.writeHead(302, { location: back.href }).end();
    } else if (url.pathname === "/token" && request.method === "POST") {
      let body = "";
      request.on("data", (chunk) => {
        body += chunk;
      });
      request.on("end", () => {
        state.tokenRequests += 1;
        const form = new URLSearchParams(body);
        const expected = `Basic ${Buffer.from(`${CLIENT_ID}:${SECRET}`).toString("base64")}`;
        const grant = codes.get(form.get("code"));
        codes.delete(form.get("code"));
        const verifier = form.get("code_verifier") ?? "";
        if (
          request.headers.authorization !== expected ||
          grant === undefined ||
          form.get("redirect_uri") !== grant.redirectUri ||
          createHash("sha256").update(verifier).digest("base64url") !== grant.challenge
        ) {
          json(400, { error: "invalid_grant" });
          return;
        }
        const now = Math.floor(Date.now() / 1000);
        const header = b64url(JSON.stringify({ alg: "EdDSA", kid: "ed-1", typ: "JWT" }));
        const claims = b64url(
          JSON.stringify({
            iss: issuer,
            aud: CLIENT_ID,
            sub: "ada-42",
            name: "Ada Lovelace",
            nonce: grant.nonce,
            iat: now,
            exp: now + 300,
          }),
        );
        const signature = sign(null, Buffer.from(`${header}.${claims}`), privateKey).toString("base64url");
        json(200, { access_token: "at", token_type: "Bearer", id_token: `${header}.${claims}.${signature}` });
      });
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise((resolve) => http.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${http.address().port}`;
  return {
    issuer,
    state,
    // Mandate keeps its connection to the provider open: end it, not wait for it.
    close: () =>
      new Promise((resolve) => {
        http.close(resolve);
        http.closeAllConnections();
      }),
  };
}



before(async () => {
  provider = await startProvider();
  callback = await startCallback();
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  server = await startServer({
    listen: `127.0.0.1:${port}`,
    config:
      `public_url = "${issuer}"\nissuer = "${issuer}"\n\n[oauth]\nenabled = true\n\n` +
      `[[oidc.issuer]]\nissuer = "${provider.issuer}"\naudience = "${CLIENT_ID}"\nallow_insecure_http = true\n\n` +
      `[oidc.issuer.sign_in]\nname = "corp"\nclient_secret = "${SECRET}"\n`,
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await callback?.close();
  await provider?.close();
  await server?.stop();
});

test("a person signs in with the identity provider by keyboard and grants at L2", async () => {
  const client = await server.api.call("POST", "/v1/oauth/clients", {
    name: "Research assistant",
    redirect_uris: [callback.uri],
  });
  const { verifier, challenge } = pkce();
  const query = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: callback.uri,
    code_challenge: challenge,
    code_challenge_method: "S256",
    resource: RESOURCE,
    scope: "read crm:*",
    state: "st-1",
  });
  const { page, errors } = await openPage(browser);
  await page.goto(`${server.base}/v1/oauth/authorize?${query}`);
  await page.getByRole("heading", { name: "Sign in to grant access", level: 1 }).waitFor();
  const link = page.getByRole("link", { name: "Sign in with 127.0.0.1" });
  await link.waitFor();
  assert.deepEqual(await axeViolations(page), []);
  await tabTo(page, "a.button-link");
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { name: "Grant access", level: 1 }).waitFor();
  assert.equal(new URL(page.url()).hash, "", "the CSRF value is taken out of the address bar");
  assert.match(await page.locator("#identity").textContent(), /^Ada Lovelace · signed in by your identity provider$/);
  assert.equal(await page.locator(".client-name").textContent(), "Research assistant");
  const cookies = await page.context().cookies();
  const session = cookies.find((cookie) => cookie.name === "__Host-mandate-consent");
  assert.ok(session, "the browser kept the session cookie");
  assert.equal(session.httpOnly, true);
  assert.equal(session.secure, true);
  assert.equal(session.sameSite, "Strict");
  assert.deepEqual(await axeViolations(page), []);
  await screenshot(page, "oauth-consent-signed-in");

  // Argument rules: one the server cannot judge is refused and named;
  // then a rule limiting `read` to one customer.
  await tabTo(page, "textarea[name=args]");
  await page.keyboard.type('[{"actions": ["read"], "pol": [["~=", ".customer", "acme"]]}]');
  await tabTo(page, "button[type=submit]");
  await page.keyboard.press("Enter");
  const refusal = page.getByRole("alert");
  await refusal.waitFor();
  assert.match(await refusal.textContent(), /unknown_operator/);
  await tabTo(page, "textarea[name=args]", "Shift+Tab");
  await page.keyboard.press("Control+A");
  await page.keyboard.type(RULES);
  const landed = page.waitForURL((url) => url.href.startsWith(callback.uri));
  await tabTo(page, "button[type=submit]");
  await page.keyboard.press("Enter");
  await landed;
  const answer = new URL(page.url()).searchParams;
  assert.equal(answer.get("state"), "st-1");
  assert.equal(answer.get("iss"), server.base);
  assert.deepEqual(
    errors.filter((error) => !error.includes("422")),
    [],
    "nothing failed but the refused grant",
  );
  await page.context().close();
  assert.equal(provider.state.tokenRequests, 1);

  const { status, token } = await redeemCode(server.base, {
    code: answer.get("code"),
    clientId: client.client_id,
    redirectUri: callback.uri,
    verifier,
    resource: RESOURCE,
  });
  assert.equal(status, 200, JSON.stringify(token));
  const claims = JSON.parse(Buffer.from(token.access_token.split(".")[1], "base64url").toString());
  assert.equal(claims.svc_assurance, "L2");
  assert.equal(claims.svc_trust_score, 0.7);
  assert.deepEqual(claims.svc_constraints.args, JSON.parse(RULES));
});
