// A stock OAuth client against Mandate as the authorization server:
// oauth4webapi (panva's, pinned in package.json; not our code) discovers
// the server's RFC 8414 metadata, sends the authorization request with
// PKCE and `resource`, checks the redirect's `iss` (RFC 9207), redeems the
// code with its own DPoP proofs (RFC 9449), calls Mandate with the bound
// token and its proof, refreshes (the refresh bound to the same key), and
// exchanges the token for a sub-agent's (RFC 8693) — each answer read by
// its own response processing, which checks what a client relies on. The
// human's consent is given through the consent page's JSON API with a
// developer key (the browser page is the consent suite's subject).

import assert from "node:assert/strict";
import { test } from "node:test";

import * as oauth from "oauth4webapi";

import { freePort, startServer } from "./harness.mjs";

const RESOURCE = "https://mcp.example.com/mcp";
const EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token";
// The server runs on loopback over plain http, as `[oauth]` allows for 127.0.0.1.
const insecure = { [oauth.allowInsecureRequests]: true };

/** The RFC 7638 thumbprint of an Ed25519 public key. */
async function thumbprint(publicKey) {
  const { crv, kty, x } = await crypto.subtle.exportKey("jwk", publicKey);
  const canonical = JSON.stringify({ crv, kty, x });
  return Buffer.from(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonical))).toString("base64url");
}

/** The OAuth error an oauth4webapi response processor threw: `{ error, code }` (Mandate's code beside it). */
async function refusal(processing) {
  try {
    await processing;
  } catch (error) {
    assert.ok(error instanceof oauth.ResponseBodyError, String(error));
    return { error: error.error, code: error.cause.code };
  }
  assert.fail("the request was not refused");
}

test("oauth4webapi: PKCE, resource, iss, DPoP-bound tokens, refresh and token exchange", async () => {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const server = await startServer({
    listen: `127.0.0.1:${port}`,
    config: `public_url = "${issuer}"\nissuer = "${issuer}"\n\n[oauth]\nenabled = true\n`,
  });
  try {
    const registered = await server.api.call("POST", "/v1/oauth/clients", {
      name: "oauth4webapi",
      redirect_uris: ["http://127.0.0.1/callback"],
    });
    const developer = (await server.api.createKey({ role: "developer", email: "dev@example.com" })).api_key;

    const as = await oauth.processDiscoveryResponse(
      new URL(issuer),
      await oauth.discoveryRequest(new URL(issuer), { algorithm: "oauth2", ...insecure }),
    );
    const client = { client_id: registered.client_id };
    const none = oauth.None();
    const keys = await oauth.generateKeyPair("Ed25519");
    const DPoP = oauth.DPoP(client, keys);

    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const redirectUri = "http://127.0.0.1:8976/callback";
    const authorize = new URL(as.authorization_endpoint);
    for (const [name, value] of Object.entries({
      response_type: "code",
      client_id: client.client_id,
      redirect_uri: redirectUri,
      scope: "read delegate crm:*",
      resource: RESOURCE,
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    })) {
      authorize.searchParams.set(name, value);
    }
    const toConsent = await fetch(authorize, { redirect: "manual" });
    assert.equal(toConsent.status, 303);
    const sealed = new URL(toConsent.headers.get("location"), issuer).searchParams.get("request");
    const { redirect } = await server.api.call(
      "POST",
      "/v1/oauth/requests/decision",
      { request: sealed, decision: "approve", grant: { actions: ["read", "delegate"], resources: ["crm:*"] } },
      { key: developer },
    );

    // RFC 9207: the client checks `iss` against the metadata's issuer.
    const callback = oauth.validateAuthResponse(as, client, new URL(redirect), state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, none, callback, redirectUri, verifier, {
        DPoP,
        additionalParameters: { resource: RESOURCE },
        ...insecure,
      }),
    );
    assert.equal(tokens.token_type, "dpop");
    assert.equal(tokens.scope, "read delegate crm:*");
    assert.ok(tokens.refresh_token);
    const claims = JSON.parse(Buffer.from(tokens.access_token.split(".")[1], "base64url").toString());
    assert.equal(claims.aud, RESOURCE);
    assert.equal(claims.cnf.jkt, await thumbprint(keys.publicKey));

    // The bound token acts with oauth4webapi's own proof (`ath` and all).
    const act = async (token, action) =>
      oauth.protectedResourceRequest(
        token,
        "POST",
        new URL(`${issuer}/v1/vat/authorize`),
        new Headers({ "content-type": "application/json" }),
        JSON.stringify({ action, resource: "crm:contacts" }),
        { DPoP, ...insecure },
      );
    const acted = await act(tokens.access_token, "read");
    assert.equal(acted.status, 200, await acted.clone().text());
    assert.equal((await acted.json()).authorized, true);

    // A refresh of a bound grant needs the same key's proof.
    const refused = await refusal(
      oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, none, tokens.refresh_token, insecure),
      ),
    );
    assert.deepEqual(refused, { error: "invalid_dpop_proof", code: "dpop_required" });
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, none, tokens.refresh_token, { DPoP, ...insecure }),
    );
    assert.equal(refreshed.token_type, "dpop");
    assert.notEqual(refreshed.refresh_token, tokens.refresh_token);

    // RFC 8693: the bound token exchanged, with its holder's proof, for a sub-agent's narrower one.
    const exchanged = await oauth.processGenericTokenEndpointResponse(
      as,
      client,
      await oauth.genericTokenEndpointRequest(
        as,
        client,
        none,
        EXCHANGE,
        new URLSearchParams({
          subject_token: refreshed.access_token,
          subject_token_type: ACCESS_TOKEN,
          scope: "read",
          mandate_grant: JSON.stringify({ agent_id: "crm-helper" }),
        }),
        { DPoP, ...insecure },
      ),
    );
    assert.equal(exchanged.issued_token_type, ACCESS_TOKEN);
    assert.equal(exchanged.token_type, "dpop");
    const child = JSON.parse(Buffer.from(exchanged.access_token.split(".")[1], "base64url").toString());
    assert.equal(child.sub, "agent:crm-helper");
    assert.equal(child.aud, RESOURCE);
    assert.deepEqual(child.svc_scope.actions, ["read"]);
    const childActed = await act(exchanged.access_token, "read");
    assert.equal(childActed.status, 200, await childActed.clone().text());
    // Narrower: the child may not delegate.
    const widening = await act(exchanged.access_token, "delegate");
    assert.equal(widening.status, 200, await widening.clone().text());
    assert.deepEqual(
      Object.entries(await widening.json()).filter(([name]) => name === "authorized" || name === "reason"),
      [
        ["authorized", false],
        ["reason", "action_not_permitted"],
      ],
    );
  } finally {
    await server.stop();
  }
});
