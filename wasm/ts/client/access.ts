// AuthZEN 1.0 (docs/authzen.md): a gateway, on an API key of the `gateway`
// role, asks whether an agent's token may do an act.

import { randomHex, type RequestOptions, type Transport } from "./transport.js";
import type { Narrowed, Schemas, Sent } from "./types.js";

/** AuthZEN Subject (§5.1): `type` `mandate_vat`, `id` the agent's compact token — never a jti. */
export type AuthzenSubject = Schemas["AuthzenSubject"];
/** AuthZEN Action (§5.3): `name` is the Mandate action. */
export type AuthzenAction = Schemas["AuthzenAction"];
/** AuthZEN Resource (§5.2): `type` and `id` make the Mandate resource `type:id`. */
export type AuthzenResource = Schemas["AuthzenResource"];
/** AuthZEN Context (§5.4): `args`, `spend_usd`, and `dpop` (a bound token's proof made for the evaluation request). */
export type AuthzenContext = Schemas["AuthzenContext"];
/** `POST /v1/access/evaluation` (AuthZEN §6.1). */
export type EvaluationRequest = Schemas["EvaluationRequest"];
/** One evaluation of an evaluations request: each member it leaves out is the request's (§7.1.1). */
export type EvaluationItem = Schemas["EvaluationItem"];
/** `POST /v1/access/evaluations` (AuthZEN §7.1). */
export type EvaluationsRequest = Schemas["EvaluationsRequest"];
/** How a request's evaluations run (§7.1.2.1). */
export type EvaluationsSemantic = Schemas["EvaluationsSemantic"];
/** A pending approval named by a refusal: read it at `url`. */
export type AccessApproval = Sent<Schemas["AccessApproval"]>;
/** What Mandate says of a decision: the record, the reason (Mandate's code) and its words, a pending approval. */
export type AccessDecisionContext = Sent<Schemas["AccessDecisionContext"]>;
/** AuthZEN Decision (§5.5). */
export type AccessDecision = Narrowed<Sent<Schemas["AccessDecision"]>, { context?: AccessDecisionContext }>;
/** The decisions of an evaluations request, in the order asked; fewer when the semantic stopped early (§7.2). */
export type EvaluationsResponse = Narrowed<Sent<Schemas["EvaluationsResponse"]>, { evaluations: AccessDecision[] }>;
/** `GET /.well-known/authzen-configuration` (AuthZEN §9). */
export type PdpMetadata = Sent<Schemas["PdpMetadata"]>;

/** Options of an evaluation. */
export interface EvaluationOptions extends RequestOptions {
  /**
   * Sent as `X-Request-ID` (1–255 visible ASCII characters): the server
   * answers a request with the same id and body again with its first
   * decisions and records nothing new. The client makes one when it is
   * left out, so that its own retries are never a second act; pass your
   * own to make a retry of yours (after a crash, say) safe too.
   */
  requestId?: string;
}

/** The request id of an evaluation: the caller's, or a fresh one. */
function requestIdOf(options: EvaluationOptions): string {
  return options.requestId ?? `mandate-sdk-${randomHex()}`;
}

/** `MandateClient.evaluation`, documented there. */
export function evaluation(t: Transport, request: EvaluationRequest, options: EvaluationOptions = {}): Promise<AccessDecision> {
  return t.call("POST", "/v1/access/evaluation", t.key(), request, { ...options, requestId: requestIdOf(options), retry: "keyed" });
}

/** `MandateClient.evaluations`, documented there. */
export async function evaluations(
  t: Transport,
  request: EvaluationsRequest,
  options: EvaluationOptions = {},
): Promise<EvaluationsResponse> {
  const answer = await t.call<EvaluationsResponse | AccessDecision>("POST", "/v1/access/evaluations", t.key(), request, {
    ...options,
    requestId: requestIdOf(options),
    retry: "keyed",
  });
  // A request without `evaluations` is answered as one Decision (§7.1): the
  // caller of this method always gets the list.
  return "evaluations" in answer ? answer : { evaluations: [answer] };
}

/** `MandateClient.authzenConfiguration`, documented there. */
export function authzenConfiguration(t: Transport, options: RequestOptions = {}): Promise<PdpMetadata> {
  return t.call("GET", "/.well-known/authzen-configuration", undefined, undefined, { ...options, retry: "read" });
}
