// mandate-sdk/authzen: a policy enforcement point in front of tools that
// asks Mandate, by AuthZEN 1.0 (docs/authzen.md), whether an agent's call
// may go through — for a gateway or an HTTP service written against the
// Fetch API (Node ≥ 20, Deno, Bun, edge workers).
//
// `AuthzenPep.decide` asks one question and answers a verdict; `guard`
// wraps a `(Request) => Response` handler so that the handler runs only for
// a permitted call. Both fail closed: an answer other than a decision — the
// server unreachable, a timeout, the gateway key refused — is never taken
// for a permit (`decide` rejects; `guard` answers 503 and never calls the
// handler). The subject is the agent's compact token as the agent sent it
// (never a jti, which proves nothing). Each question carries an
// `X-Request-ID`, so the client's retries are one act: a permitted act is
// recorded and counted once, and never completed by the gateway.

import {
  type AccessApproval,
  type AccessDecision,
  type EvaluationOptions,
  type JsonObject,
  type MandateClient,
  MandateError,
} from "./client/index.js";

/** What a gateway asks of one call. */
export interface Question {
  /** The agent's compact token, as it presented it to the tool (without the `Bearer `/`DPoP ` scheme). */
  token: string;
  /** The Mandate action (`call`, `send_email`, …). */
  action: string;
  /** The resource: `type:id` (`mcp:mail/send_email`), or its AuthZEN parts `{ type, id }`. */
  resource: string | { type: string; id: string };
  /** The call's arguments, judged by the chain's argument rules (DESIGN §15). */
  args?: JsonObject;
  /** What the call spends, in US dollars, judged by the chain's budgets. */
  spendUsd?: number;
  /**
   * For a token bound to its agent's key: a DPoP proof by that key made for
   * Mandate's evaluation endpoint (`POST`, the URL the PDP metadata names).
   * Without it a bound token is refused (`dpop_required`).
   */
  dpop?: string;
}

/** A permitted call: `aarId` names its record, already completed. */
export interface Permit {
  permitted: true;
  aarId: string | undefined;
}

/** A refused call: Mandate's code, its words, and the approval a human may still give. */
export interface Refusal {
  permitted: false;
  /** Mandate's code: `action_not_permitted`, `args_not_permitted`, `approval_required`, `token_revoked`, … */
  reason: string;
  detail: string | undefined;
  /** For `approval_required`: the pending approval; once approved, the same question is permitted once. */
  approval: AccessApproval | undefined;
  aarId: string | undefined;
}

export type Verdict = Permit | Refusal;

/** The AuthZEN resource of a question: `type:id` split at its first colon. */
function resourceOf(resource: Question["resource"]): { type: string; id: string } {
  if (typeof resource !== "string") {
    return { type: resource.type, id: resource.id };
  }
  const colon = resource.indexOf(":");
  if (colon <= 0) {
    throw new MandateError(0, {
      code: "invalid_resource",
      title: "Invalid resource",
      detail: "a resource is `type:id`, with a type before the first colon",
    });
  }
  return { type: resource.slice(0, colon), id: resource.slice(colon + 1) };
}

/** A decision read as a verdict; a decision without a reason is refused for want of one. */
function verdictOf(decision: AccessDecision): Verdict {
  const context = decision.context ?? {};
  if (decision.decision === true) {
    return { permitted: true, aarId: context.aar_id };
  }
  return {
    permitted: false,
    reason: context.reason ?? "not_permitted",
    detail: context.detail,
    approval: context.approval,
    aarId: context.aar_id,
  };
}

/** A policy enforcement point: asks Mandate, on a `gateway` API key, for each call's decision. */
export class AuthzenPep {
  readonly #client: MandateClient;

  /** `client` holds the API key of the `gateway` role the questions are asked with. */
  constructor(client: MandateClient) {
    this.#client = client;
  }

  /**
   * Asks whether `question` may go through. Resolves with the verdict;
   * rejects with a MandateError when Mandate gave no decision (unreachable,
   * the key refused, a malformed question) — which a gateway must treat as
   * a refusal.
   */
  async decide(question: Question, options: EvaluationOptions = {}): Promise<Verdict> {
    const context: Record<string, unknown> = {};
    if (question.args !== undefined) {
      context.args = question.args;
    }
    if (question.spendUsd !== undefined) {
      context.spend_usd = question.spendUsd;
    }
    if (question.dpop !== undefined) {
      context.dpop = question.dpop;
    }
    const decision = await this.#client.evaluation(
      {
        subject: { type: "mandate_vat", id: question.token },
        action: { name: question.action },
        resource: resourceOf(question.resource),
        context,
      },
      options,
    );
    return verdictOf(decision);
  }
}

/** Headers of the request a guard judges: what it reads of a Fetch `Request`. */
interface RequestLike {
  headers: { get(name: string): string | null };
}

/** Options of `guard`. */
export interface GuardOptions<R extends RequestLike> {
  /**
   * The question's act for a request: its action, resource, arguments and
   * spend. It may read the body from a clone (`request.clone().json()`); a
   * rejection answers 400 and the handler is not called.
   */
  describe: (request: R) => Omit<Question, "token" | "dpop"> | Promise<Omit<Question, "token" | "dpop">>;
  /**
   * For a token sent with the `DPoP` scheme: the proof the agent made for
   * Mandate's evaluation endpoint, wherever the deployment has the agent put
   * it. Without it a bound token is refused by Mandate (`dpop_required`).
   */
  evaluationProof?: (request: R) => string | undefined;
  /** Options of each evaluation (a timeout, say). Each question gets its own request id. */
  evaluation?: Omit<EvaluationOptions, "requestId">;
}

/** A problem answer (RFC 9457) of the guard. */
function problem(status: number, code: string, title: string, detail: string, more: Record<string, unknown> = {}): Response {
  const headers: Record<string, string> = { "content-type": "application/problem+json", "cache-control": "no-store" };
  if (status === 401) {
    headers["www-authenticate"] = `Bearer error="invalid_token", error_description="${detail.replace(/["\\]/g, "")}"`;
  }
  return new Response(JSON.stringify({ type: "about:blank", title, status, code, detail, ...more }), { status, headers });
}

/** The compact token and scheme of an `Authorization` header: `Bearer` or `DPoP`, any case. */
function credentialOf(authorization: string | null): { token: string; bound: boolean } | undefined {
  const match = /^(Bearer|DPoP) +([A-Za-z0-9._~+/-]+=*) *$/i.exec(authorization ?? "");
  if (match === null) {
    return undefined;
  }
  return { token: match[2] as string, bound: (match[1] as string).toLowerCase() === "dpop" };
}

/**
 * Wraps `handler` so that it runs only for a call Mandate permits: the
 * agent's token from the request's `Authorization` (`Bearer` or `DPoP`),
 * the act from `options.describe`. A request without a token answers 401;
 * a refusal 403 with Mandate's code (and, for `approval_required`, the
 * approval to wait for); a question `describe` cannot make 400; no decision
 * from Mandate 503. Each answer is an RFC 9457 problem. The handler gets the
 * verdict, whose `aarId` names the call's record.
 */
export function guard<R extends RequestLike>(
  pep: AuthzenPep,
  options: GuardOptions<R>,
  handler: (request: R, verdict: Permit) => Response | Promise<Response>,
): (request: R) => Promise<Response> {
  return async (request: R): Promise<Response> => {
    const credential = credentialOf(request.headers.get("authorization"));
    if (credential === undefined) {
      return problem(401, "token_required", "Token required", "the call carries no agent token (`Authorization: Bearer` or `DPoP`)");
    }
    let act: Omit<Question, "token" | "dpop">;
    try {
      act = await options.describe(request);
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      return problem(400, "invalid_request", "Invalid request", `the call could not be described: ${detail}`);
    }
    const question: Question = { ...act, token: credential.token };
    const proof = credential.bound ? options.evaluationProof?.(request) : undefined;
    if (proof !== undefined) {
      question.dpop = proof;
    }
    let verdict: Verdict;
    try {
      verdict = await pep.decide(question, options.evaluation);
    } catch (error) {
      if (error instanceof MandateError && error.status === 0 && error.code === "invalid_resource") {
        return problem(400, "invalid_resource", "Invalid resource", error.detail ?? "the call's resource is not `type:id`");
      }
      return problem(503, "decision_unavailable", "Decision unavailable", "Mandate gave no decision for this call, so it does not go through");
    }
    if (!verdict.permitted) {
      const more: Record<string, unknown> = {};
      if (verdict.aarId !== undefined) {
        more.aar_id = verdict.aarId;
      }
      if (verdict.approval !== undefined) {
        more.approval = verdict.approval;
      }
      return problem(403, verdict.reason, "Not permitted", verdict.detail ?? "Mandate refused this call", more);
    }
    return handler(request, verdict);
  };
}
