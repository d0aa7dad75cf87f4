// The calls the consent page makes (DESIGN §17; docs/oauth.md): list the
// identity providers it may sign in with, open the sealed authorization
// request, then send the human's decision. Their bodies are the OpenAPI
// document's schemas, as generated for the client (`openapi.ts`); a
// refusal is the client's MandateError, so the dashboard's problem box
// shows it. Plain `fetch`, JSON only. The credential is the API key as
// `Authorization: Bearer`, or — after signing in with an identity
// provider — the session cookie the browser holds (`SameSite=Strict`,
// sent to this origin only) with the session's CSRF value in
// `Mandate-CSRF`, which no other site can know.

import { MandateError, type Problem } from "mandate-sdk/web";
import type { components } from "../../../wasm/ts/client/openapi.js";

type Schemas = components["schemas"];
export type OpenedRequest = Schemas["OpenedRequest"];
export type ConsentGrant = Schemas["ConsentGrant"];
export type ConsentDecisionRequest = Schemas["ConsentDecisionRequest"];
export type SignInProvider = Schemas["SignInProviderInfo"];

/** How the page signs its calls: an API key, or an identity provider's session. */
export type Credential = { kind: "key"; key: string } | { kind: "session"; csrf: string };

function credentialHeaders(credential: Credential): Record<string, string> {
  return credential.kind === "key" ? { authorization: `Bearer ${credential.key}` } : { "mandate-csrf": credential.csrf };
}

async function answer<T>(response: Response): Promise<T> {
  const text = await response.text();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (!response.ok) {
    const problem: Problem =
      typeof value === "object" && value !== null
        ? (value as Problem)
        : { code: "http_error", title: `HTTP ${response.status}`, detail: text.slice(0, 200) };
    throw new MandateError(response.status, problem);
  }
  return value as T;
}

async function post<T>(credential: Credential, path: string, body: unknown): Promise<T> {
  const response = await fetch(path, {
    method: "POST",
    credentials: "same-origin",
    headers: {
      accept: "application/json",
      "content-type": "application/json",
      ...credentialHeaders(credential),
    },
    body: JSON.stringify(body),
  });
  return answer(response);
}

/** The identity providers people may sign in with here (none when not configured). */
export async function signInProviders(): Promise<SignInProvider[]> {
  const response = await fetch("/v1/oauth/oidc/providers", { headers: { accept: "application/json" } });
  return (await answer<Schemas["SignInProviders"]>(response)).providers;
}

/** Where the browser goes to sign in with `provider` for the sealed `request`. */
export function signInUrl(provider: SignInProvider, request: string): string {
  return `/v1/oauth/oidc/${encodeURIComponent(provider.name)}/start?request=${encodeURIComponent(request)}`;
}

/** What the sealed `request` asks for, as the signer's organisation knows its client. */
export function openRequest(credential: Credential, request: string): Promise<OpenedRequest> {
  return post(credential, "/v1/oauth/requests/open", { request });
}

/** The human's answer; resolves to where the browser goes next. */
export async function decide(credential: Credential, decision: ConsentDecisionRequest): Promise<string> {
  const answered = await post<Schemas["ConsentDecisionResponse"]>(credential, "/v1/oauth/requests/decision", decision);
  return answered.redirect;
}
