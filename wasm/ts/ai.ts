// mandate-sdk/ai: Mandate for the Vercel AI SDK (the `ai` package, v7).
//
// `withMandate(tools, options)` returns the same tool set with each tool's
// `execute` run as one Mandate action: authorize, then the tool, then
// complete with the output's `result_hash` (or `error`, or `cancelled` when
// the SDK's abort signal fired). A refusal throws a `MandateRefusal` before
// the tool runs; the SDK turns a throwing `execute` into a `tool-error` part
// that the model sees, which is how the SDK documents tool failures.
//
// `mandateToolApproval()` is the SDK's `toolApproval` hook (v7 calls it for
// each tool call before executing it; it may be async). For a tool wrapped by
// `withMandate` it asks Mandate once per tool call: a call the grant permits
// runs without an approval part; a refused call is `denied` (the tool never
// runs; the model gets the SDK's `execution-denied` output); a call that
// needs a human's approval either waits for the reviewer's decision in
// Mandate (`waitForApproval`) and answers `approved` or `denied`, or answers
// `user-approval` with the reviewer's page as its reason — then
// `mandateApprovalResponse` turns Mandate's decision into the SDK's
// `tool-approval-response` with which the app resumes. The record the hook
// made is the one `execute` completes: one record per tool call.
//
// The tool's input (an object) is sent as the call's `args` and judged
// first offline against the token's argument rules (`checkArgsOffline`): a
// call they refuse is refused (`args_required`, `args_not_permitted`)
// without asking Mandate, and no record is made of it.
//
// An authorization is bound to the call as it was asked for: its id, the
// tool, the action, resource and spend, and the hash of its input's
// canonical JSON (`argsHash`). A call whose input changed afterwards (a
// history edited before the app resumes, a stored conversation) is another
// request: it is authorized anew, under its own record and its own approval,
// and never runs under the first one's.
//
// This module owns only the glue. It imports `ai` for its types alone, so
// mandate-sdk installs and loads without it, and it never permits anything
// itself: every permission comes from the Mandate server (the offline check
// of arguments only refuses). `withMandate` and `mandateToolApproval` check
// at first use that this Node and the installed `ai` are ones the adapter
// supports (Node 22 or later, `ai` ^7.0.0: `support.ts`) and throw
// `unsupported_environment` otherwise: AI SDK 6 takes the `toolApproval`
// option without a word and never calls it.

import type {
  InferToolInput,
  ToolApprovalResponse,
  ToolApprovalStatus,
  ToolExecutionOptions,
  ToolSet,
} from "ai";
import {
  MandateApprovalPending,
  MandateError,
  MandateRefusal,
  argsHash,
  argsOf,
  checkArgsOffline,
  outputHash,
  type AbortSignalLike,
  type ActRequest,
  type AgentAuth,
  type ApprovalStatus,
  type AuthorizeResponse,
  type DenyReason,
  type MandateClient,
  type PendingApproval,
  type WaitForApproval,
} from "./client/index.js";
import type { AgentKey } from "./mandate_wasm.js";
import type { RemoteVerifier } from "./remote.js";
import { AI_SUPPORT, requireSupported } from "./support.js";

/** How one tool's calls become Mandate actions: the action, the resource and the spend, from the tool's input. */
export interface MandateToolAction<INPUT> {
  /** The action checked against the token's scope, e.g. `send`. */
  action: string;
  /** The resource acted on (`<namespace>:<name>`), fixed or from the input. */
  resource: string | ((input: INPUT) => string);
  /** US dollars to reserve against the budget, fixed or from the input. */
  spendUsd?: number | ((input: INPUT) => number | undefined);
}

/**
 * One `MandateToolAction` for every tool of the set: a tool without one is a
 * type error (and, from JavaScript, `withMandate` throws `invalid_options`).
 */
export type MandateToolActions<TOOLS extends ToolSet> = {
  [NAME in keyof TOOLS]-?: MandateToolAction<InferToolInput<TOOLS[NAME]>>;
};

/** A tool call as Mandate sees it: told to `onApproval` and `resultHash`. */
export interface MandateToolCall {
  toolName: string;
  toolCallId: string;
  input: unknown;
  /** What Mandate is asked. */
  request: ActRequest;
  /** `sha256:` of the input's canonical JSON (RFC 8785): the authorization holds for this input only. */
  argsHash: string;
}

/** Options of `withMandate`. */
export interface WithMandateOptions<TOOLS extends ToolSet> {
  /** The client of the Mandate server. Its API key is not used: the agent's token is the credential. */
  client: MandateClient;
  /** The agent's token (compact JWT): every call is authorized and completed with it. */
  token: string;
  /** The agent's own key, for a token bound to it (`cnf`): each request then carries a DPoP proof. */
  key?: AgentKey;
  /** A W3C `traceparent` sent with each call, so the records' spans join the agent's trace. */
  traceparent?: string;
  /** What each tool does, in Mandate's terms. */
  actions: MandateToolActions<TOOLS>;
  /**
   * When a call needs a human's approval: how long to wait for the reviewer's
   * decision (in `execute`, or in `mandateToolApproval`'s hook). Without it,
   * `execute` throws `MandateApprovalPending` at once, and the hook answers
   * `user-approval`.
   */
  waitForApproval?: WaitForApproval;
  /** Called once when a call needs approval, before any wait: to show the reviewer's page (`approval.url`). */
  onApproval?: (approval: PendingApproval, call: MandateToolCall) => void | Promise<void>;
  /** The `result_hash` of a tool's output; default `outputHash` (sha256 of a string, else of its JSON). */
  resultHash?: (output: unknown, call: MandateToolCall) => string | undefined;
  /**
   * Checked before each call is sent: a token this verifier refuses (bad
   * signature, expired, revoked in its status list) fails at once, with the
   * verifier's code, and nothing is asked or run. A bound token's proof is
   * made per request and checked by the server, so `dpop_required` passes
   * when `key` is given.
   */
  verifier?: Pick<RemoteVerifier, "verify">;
}

/** Options of `mandateApprovalResponse`. */
export interface ApprovalResponseOptions {
  /** Wait this long for the reviewer's decision (a pending approval answers `undefined` after it); default 0. */
  timeoutSeconds?: number;
  /** Stops waiting: rejects with a MandateError `aborted`. */
  signal?: AbortSignalLike;
}

/** The part of a tool call the approval hook reads. */
export interface HookToolCall {
  toolName: string;
  toolCallId: string;
  input: unknown;
}

/** The part of the SDK's `tool-approval-request` (a `ToolApprovalRequestOutput`) `mandateApprovalResponse` reads. */
export interface ApprovalRequestLike {
  approvalId: string;
  isAutomatic?: boolean;
  toolCall: HookToolCall;
}

/**
 * The hook `mandateToolApproval` returns: assignable to the `toolApproval`
 * option of `generateText`, `streamText` and `ToolLoopAgent` (a
 * `GenericToolApprovalFunction`) for any tool set.
 */
export type MandateToolApproval = (options: {
  toolCall: HookToolCall;
  tools: ToolSet | undefined;
}) => Promise<ToolApprovalStatus>;

/** What one tool call got from Mandate. */
interface CallState {
  call: MandateToolCall;
  /** The hex SHA-256 of what the authorization is bound to (see `binding`). */
  binding: string;
  authorization: AuthorizeResponse;
  /** The approval the call waits for, while it waits. */
  approval: PendingApproval | undefined;
}

/** The execute function of a tool, as the wrapper calls it. */
type Execute = (input: unknown, options: ToolExecutionOptions<unknown>) => unknown;

/** The tools `withMandate` made, each with its gate and the name its action was declared under. */
const gated = new WeakMap<object, { gate: Gate; name: string }>();

/** The longest wait the server takes on one read of an approval, seconds. */
const MAX_APPROVAL_WAIT_SECONDS = 30;

/** The gate of the tool the model called by `name`, if `withMandate` made it (own properties only: the name is the model's). */
function ownerOf(tools: ToolSet, name: string): { gate: Gate; name: string } | undefined {
  const tool: unknown = Object.prototype.hasOwnProperty.call(tools, name) ? tools[name] : undefined;
  return typeof tool === "object" && tool !== null ? gated.get(tool) : undefined;
}

function invalidOptions(detail: string): MandateError {
  return new MandateError(0, { code: "invalid_options", title: "Invalid options", detail });
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === "function"
  );
}

function isAsyncGeneratorFunction(fn: unknown): boolean {
  return Object.prototype.toString.call(fn) === "[object AsyncGeneratorFunction]";
}

/**
 * What an authorization is bound to, as hex SHA-256: the tool call's id, the
 * tool, the request (action, resource, spend) and the input's hash. Also the
 * authorize call's Idempotency-Key, so that a changed call is a new request
 * to the server too (in another process, which has no memory of the first).
 */
function binding(call: MandateToolCall): string {
  const { action, resource, spend_usd } = call.request;
  return argsHash({
    call_id: call.toolCallId,
    tool: call.toolName,
    action,
    resource,
    spend_usd,
    args_hash: call.argsHash,
  }).slice("sha256:".length);
}

/** The text a refusal gives the model and the app. */
function refusalText(request: ActRequest, reason: string, aarId: string | undefined): string {
  return `Mandate refused ${request.action} on ${request.resource}: ${reason}${aarId ? ` (${aarId})` : ""}`;
}

/** One `withMandate` call's configuration and the tool calls it has seen, by tool call id. */
class Gate {
  readonly #options: WithMandateOptions<ToolSet>;
  readonly #calls = new Map<string, CallState>();

  constructor(options: WithMandateOptions<ToolSet>) {
    this.#options = options;
  }

  /** The request for a call of the tool declared as `name`. */
  #call(name: string, toolCall: HookToolCall): MandateToolCall {
    const declared = this.#options.actions[name];
    if (declared === undefined) {
      throw invalidOptions(`no Mandate action is declared for the tool "${name}"`);
    }
    const input = toolCall.input;
    const resource = typeof declared.resource === "function" ? declared.resource(input) : declared.resource;
    const request: ActRequest = { action: declared.action, resource };
    const spend = typeof declared.spendUsd === "function" ? declared.spendUsd(input) : declared.spendUsd;
    if (spend !== undefined) {
      request.spend_usd = spend;
    }
    const args = argsOf(input);
    if (args !== undefined) {
      request.args = args;
    }
    return { toolName: toolCall.toolName, toolCallId: toolCall.toolCallId, input, request, argsHash: argsHash(input) };
  }

  #auth(): AgentAuth {
    const auth: AgentAuth = { token: this.#options.token };
    if (this.#options.key !== undefined) {
      auth.key = this.#options.key;
    }
    if (this.#options.traceparent !== undefined) {
      auth.traceparent = this.#options.traceparent;
    }
    return auth;
  }

  /** Refuses the token at once when the configured verifier does. */
  async #verify(): Promise<void> {
    const verifier = this.#options.verifier;
    if (verifier === undefined) {
      return;
    }
    const result = await verifier.verify(this.#options.token);
    if (result.valid) {
      return;
    }
    const code = result.error?.code ?? "invalid_token";
    if (code === "dpop_required" && this.#options.key !== undefined) {
      return;
    }
    throw new MandateError(0, {
      code,
      title: "Token refused offline",
      detail: result.error?.message ?? "the verifier refused the token",
    });
  }

  /**
   * Authorizes a call, once per tool call id and binding: the
   * `Idempotency-Key` (the binding, scoped by the server to the token and
   * route) makes a second ask for the same call — from another process
   * resuming the conversation — answer the first record instead of making
   * another. A call id seen with another binding (the call changed) is asked
   * for anew, and its state replaces the first.
   */
  async #ask(call: MandateToolCall): Promise<CallState> {
    const bound = binding(call);
    const known = this.#calls.get(call.toolCallId);
    if (known !== undefined && known.binding === bound) {
      return known;
    }
    await this.#verify();
    // The token's own argument rules refuse here, before any round trip.
    const offline = checkArgsOffline(this.#options.token, call.request);
    if (offline !== undefined) {
      throw offline;
    }
    const authorization = await this.#options.client.authorize(call.request, {
      ...this.#auth(),
      idempotencyKey: `mandate-ai:${bound}`,
    });
    const pending = authorization.approval;
    const state: CallState = {
      call,
      binding: bound,
      authorization,
      approval:
        !authorization.authorized && pending?.status === "pending"
          ? { ...pending, aar_id: authorization.aar_id, url: this.#options.client.approvalUrl(pending.approval_id) }
          : undefined,
    };
    this.#calls.set(call.toolCallId, state);
    return state;
  }

  /** The approval's status now, or after a wait of at most `timeoutSeconds`. */
  async #decision(
    approval: PendingApproval,
    timeoutSeconds: number,
    signal: AbortSignalLike | undefined,
  ): Promise<ApprovalStatus> {
    const deadline = Date.now() + timeoutSeconds * 1000;
    const auth = this.#auth();
    for (;;) {
      const left = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
      const read = await this.#options.client.approval(approval.approval_id, {
        token: auth.token,
        key: auth.key,
        wait: Math.min(MAX_APPROVAL_WAIT_SECONDS, left),
        signal,
      });
      if (read.status !== "pending" || Date.now() >= deadline) {
        return read.status;
      }
    }
  }

  /** Settles a waiting call with its approval's status: approved makes it authorized. */
  #settle(state: CallState, status: ApprovalStatus): void {
    if (status === "pending" || state.approval === undefined) {
      return;
    }
    if (status === "approved") {
      state.authorization = { ...state.authorization, authorized: true };
    } else {
      state.authorization = {
        ...state.authorization,
        reason: status === "denied" ? "approval_denied" : "approval_expired",
      };
    }
    state.authorization.approval = { ...state.approval, status };
    state.approval = undefined;
  }

  /** Waits for a call's approval as configured (once `onApproval` was told); the call is settled or still waits. */
  async #await(state: CallState, signal: AbortSignalLike | undefined): Promise<void> {
    const approval = state.approval;
    if (approval === undefined) {
      return;
    }
    // A decision may have come already (another process asked first).
    this.#settle(state, await this.#decision(approval, 0, signal));
    if (state.approval === undefined) {
      return;
    }
    await this.#options.onApproval?.(approval, state.call);
    const wait = this.#options.waitForApproval;
    if (wait !== undefined) {
      this.#settle(state, await this.#decision(approval, wait.timeoutSeconds, wait.signal ?? signal));
    }
  }

  /** The approval hook for one call of the tool declared as `name`. */
  async approve(name: string, toolCall: HookToolCall): Promise<ToolApprovalStatus> {
    const earlier = this.#calls.get(toolCall.toolCallId);
    let call: MandateToolCall;
    let state: CallState;
    try {
      call = this.#call(name, toolCall);
      state = await this.#ask(call);
      if (state.approval !== undefined) {
        if (state === earlier) {
          // The SDK asks again when the app resumes with an approval response: Mandate's decision decides.
          this.#settle(state, await this.#decision(state.approval, 0, undefined));
        } else {
          await this.#await(state, undefined);
        }
      }
    } catch (error) {
      if (error instanceof MandateError) {
        // Fail closed: the tool does not run, and the model is told why.
        return { type: "denied", reason: `Mandate could not authorize the call of ${name}: ${error.message}` };
      }
      throw error;
    }
    const { authorization } = state;
    if (authorization.authorized) {
      return authorization.approval === undefined
        ? "not-applicable"
        : { type: "approved", reason: `approved in Mandate (${authorization.aar_id})` };
    }
    if (state.approval !== undefined) {
      if (earlier === undefined) {
        return { type: "user-approval", reason: `approve in Mandate: ${state.approval.url}` };
      }
      // Asked before: the app resumes, and the SDK runs the call unless it is denied here.
      return {
        type: "denied",
        reason:
          state === earlier
            ? `a reviewer has not approved this in Mandate yet: ${state.approval.url}`
            : `the call changed since Mandate was asked; as it is now, it needs its own approval: ${state.approval.url}`,
      };
    }
    // Denied: the SDK will not execute this call, so nothing more is kept of it.
    this.#calls.delete(call.toolCallId);
    const reason = authorization.reason ?? "action_not_permitted";
    return { type: "denied", reason: refusalText(call.request, reason, authorization.aar_id) };
  }

  /** The SDK's approval response for a call the hook answered `user-approval`, once Mandate has decided it. */
  async respond(
    name: string,
    request: ApprovalRequestLike,
    options: ApprovalResponseOptions,
  ): Promise<ToolApprovalResponse | undefined> {
    const state = await this.#ask(this.#call(name, request.toolCall));
    const approval = state.approval;
    if (approval !== undefined) {
      this.#settle(state, await this.#decision(approval, options.timeoutSeconds ?? 0, options.signal));
    }
    if (state.approval !== undefined) {
      return undefined;
    }
    const { authorization } = state;
    return {
      type: "tool-approval-response",
      approvalId: request.approvalId,
      approved: authorization.authorized,
      reason: authorization.authorized
        ? `approved in Mandate (${authorization.aar_id})`
        : refusalText(state.call.request, authorization.reason ?? "action_not_permitted", authorization.aar_id),
    };
  }

  /** Authorizes a call for `execute` (the record the hook made, if it made one), or throws why it may not run. */
  async #authorized(call: MandateToolCall, signal: AbortSignalLike | undefined): Promise<AuthorizeResponse> {
    const state = await this.#ask(call);
    if (state.approval !== undefined) {
      await this.#await(state, signal);
      if (state.approval !== undefined) {
        this.#calls.delete(call.toolCallId);
        throw new MandateApprovalPending(state.approval);
      }
    }
    const { authorization } = state;
    if (!authorization.authorized) {
      this.#calls.delete(call.toolCallId);
      const reason = (authorization.reason ?? "action_not_permitted") as DenyReason;
      throw new MandateRefusal(reason, authorization.aar_id, refusalText(call.request, reason, authorization.aar_id));
    }
    return authorization;
  }

  /** Completes the call's record as the run ended, and forgets the call. */
  async #complete(call: MandateToolCall, aarId: string, outcome: { output: unknown } | { cancelled: boolean }): Promise<void> {
    this.#calls.delete(call.toolCallId);
    const auth: AgentAuth = { ...this.#auth(), idempotencyKey: `complete-${aarId}` };
    if ("cancelled" in outcome) {
      await this.#options.client.complete(aarId, { result: outcome.cancelled ? "cancelled" : "error" }, auth);
      return;
    }
    const hash = (this.#options.resultHash ?? outputHash)(outcome.output, call);
    await this.#options.client.complete(
      aarId,
      hash === undefined ? { result: "success" } : { result: "success", result_hash: hash },
      auth,
    );
  }

  /** `execute` of a wrapped tool whose execute returns its output (or an iterable, consumed to its last value). */
  async run(name: string, execute: Execute, input: unknown, options: ToolExecutionOptions<unknown>): Promise<unknown> {
    const call = this.#call(name, { toolName: name, toolCallId: options.toolCallId, input });
    const signal = options.abortSignal;
    const { aar_id: aarId } = await this.#authorized(call, signal);
    let output: unknown;
    try {
      output = await execute(input, options);
      if (isAsyncIterable(output)) {
        let last: unknown;
        for await (const value of output) {
          last = value;
        }
        output = last;
      }
    } catch (error) {
      await this.#complete(call, aarId, { cancelled: signal?.aborted === true });
      throw error;
    }
    await this.#complete(call, aarId, { output });
    return output;
  }

  /** `execute` of a wrapped streaming tool: authorized when the SDK starts reading, completed with the last value. */
  async *stream(
    name: string,
    execute: Execute,
    input: unknown,
    options: ToolExecutionOptions<unknown>,
  ): AsyncGenerator<unknown, void, undefined> {
    const call = this.#call(name, { toolName: name, toolCallId: options.toolCallId, input });
    const signal = options.abortSignal;
    const { aar_id: aarId } = await this.#authorized(call, signal);
    let last: unknown;
    try {
      const values = execute(input, options);
      if (!isAsyncIterable(values)) {
        throw new TypeError(`the tool "${name}" is an async generator function that returned no iterable`);
      }
      for await (const value of values) {
        last = value;
        yield value;
      }
    } catch (error) {
      await this.#complete(call, aarId, { cancelled: signal?.aborted === true });
      throw error;
    }
    await this.#complete(call, aarId, { output: last });
  }
}

/**
 * The tool set with each tool's `execute` run as a Mandate action with the
 * agent's token: authorize (refused → `MandateRefusal`; approval needed and
 * not given → `MandateApprovalPending`; in both cases the tool does not run),
 * then the tool, then complete with the output's `result_hash`, or `error`
 * when it throws (rethrown) and `cancelled` when the SDK's abort signal
 * fired. A tool without `execute` (one the client runs) is returned as it
 * is. Every tool must have an action in `options.actions`.
 */
export function withMandate<TOOLS extends ToolSet>(tools: TOOLS, options: WithMandateOptions<TOOLS>): TOOLS {
  requireSupported(AI_SUPPORT);
  if (typeof options?.token !== "string" || options.token === "") {
    throw invalidOptions("withMandate needs the agent's token");
  }
  const actions = options.actions as Partial<Record<string, MandateToolAction<unknown>>> | undefined;
  const missing = Object.keys(tools).filter((name) => typeof actions?.[name]?.action !== "string");
  if (missing.length > 0) {
    throw invalidOptions(`no Mandate action is declared for the tools: ${missing.join(", ")}`);
  }
  const gate = new Gate(options as WithMandateOptions<ToolSet>);
  const wrapped: Record<string, TOOLS[keyof TOOLS]> = {};
  for (const [name, tool] of Object.entries(tools) as Array<[string, TOOLS[keyof TOOLS]]>) {
    const execute = tool.execute as Execute | undefined;
    if (execute === undefined) {
      wrapped[name] = tool;
      continue;
    }
    const run = isAsyncGeneratorFunction(execute)
      ? (input: unknown, executeOptions: ToolExecutionOptions<unknown>) =>
          gate.stream(name, execute, input, executeOptions)
      : (input: unknown, executeOptions: ToolExecutionOptions<unknown>) =>
          gate.run(name, execute, input, executeOptions);
    const copy = { ...tool, execute: run } as TOOLS[keyof TOOLS];
    gated.set(copy, { gate, name });
    wrapped[name] = copy;
  }
  return wrapped as unknown as TOOLS;
}

/**
 * The AI SDK's `toolApproval` hook backed by Mandate: pass it as
 * `toolApproval` with tools from `withMandate`. For each call of such a tool
 * it authorizes once (the record `execute` then completes): permitted →
 * no approval (`not-applicable`); refused, or Mandate unreachable →
 * `denied` with the reason; needing a human's approval → waits for the
 * reviewer's decision when `waitForApproval` is set (`approved` or
 * `denied`), else `user-approval` with the reviewer's page as the reason.
 * When the app resumes with an approval response, the SDK asks again, and
 * Mandate's decision is the answer: an approval response alone never runs
 * a tool Mandate has not approved. Tools not made by `withMandate` are left
 * to the SDK (`not-applicable`).
 */
export function mandateToolApproval(): MandateToolApproval {
  requireSupported(AI_SUPPORT);
  return async ({ toolCall, tools }) => {
    const owner = tools === undefined ? undefined : ownerOf(tools, toolCall.toolName);
    if (owner === undefined) {
      return "not-applicable";
    }
    return owner.gate.approve(owner.name, toolCall);
  };
}

/**
 * The SDK's `tool-approval-response` for a `tool-approval-request` part the
 * hook made (`user-approval`), from the reviewer's decision in Mandate:
 * `approved: true` once approved, `false` with the reason when denied or
 * expired; `undefined` while it is still pending after
 * `options.timeoutSeconds`, and for a request about a tool not made by
 * `withMandate` (`tools` is the set given to the SDK). Push the responses
 * in a `tool` message and call the SDK again.
 */
export async function mandateApprovalResponse(
  tools: ToolSet,
  request: ApprovalRequestLike,
  options: ApprovalResponseOptions = {},
): Promise<ToolApprovalResponse | undefined> {
  const owner = ownerOf(tools, request.toolCall.toolName);
  if (owner === undefined || request.isAutomatic === true) {
    return undefined;
  }
  return owner.gate.respond(owner.name, request, options);
}
