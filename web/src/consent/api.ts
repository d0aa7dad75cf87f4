// The two calls the consent page makes (DESIGN §17; docs/oauth.md): open
// the sealed authorization request, then send the human's decision. Their
// bodies are the OpenAPI document's schemas, as generated for the client
// (`openapi.ts`); a refusal is the client's MandateError, so the
// dashboard's problem box shows it. Plain `fetch`, JSON only, the API key
// as `Authorization: Bearer` (no ambient credential: nothing to forge
// from another site).

import { MandateError, type Problem } from "mandate-sdk/web";
import type { components } from "../../../wasm/ts/client/openapi.js";

type Schemas = components["schemas"];
export type OpenedRequest = Schemas["OpenedRequest"];
export type ConsentGrant = Schemas["ConsentGrant"];
export type ConsentDecisionRequest = Schemas["ConsentDecisionRequest"];

async function post<T>(key: string, path: string, body: unknown): Promise<T> {
  const response = await fetch(path, {
    method: "POST",
    headers: {
      accept: "application/json",
      "content-type": "application/json",
      authorization: `Bearer ${key}`,
    },
    body: JSON.stringify(body),
  });
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

/** What the sealed `request` asks for, as the signer's organisation knows its client. */
export function openRequest(key: string, request: string): Promise<OpenedRequest> {
  return post(key, "/v1/oauth/requests/open", { request });
}

/** The human's answer; resolves to where the browser goes next. */
export async function decide(key: string, decision: ConsentDecisionRequest): Promise<string> {
  const answer = await post<Schemas["ConsentDecisionResponse"]>(key, "/v1/oauth/requests/decision", decision);
  return answer.redirect;
}
