// mandate-sdk/openai-agents: Mandate around the function tools of the
// OpenAI Agents SDK for JavaScript (@openai/agents). Every call a model makes
// to a wrapped tool is one Mandate record: authorized before the tool runs,
// completed with the output's `result_hash` after it (or as `error` when it
// throws, `cancelled` when the run aborts it); a refused call never runs and
// the model is told why; a call that needs a human's approval in Mandate
// interrupts the run, and `resolveApprovals` applies the reviewer's decision
// to the run's state so that it resumes under the same record.
//
// How the SDK's extension points carry it (version 0.20):
// - `needsApproval(runContext, input, callId)` is the first code of ours the
//   runner calls for a call, with the parsed input and the call id, and the
//   only one that can interrupt the run. So the call is authorized there, and
//   a pending Mandate approval answers `true`.
// - An input guardrail (`inputGuardrails`, a plain `{name, run}`) sees the
//   call id (`toolCall.callId`) after any approval was given and before the
//   tool starts; its `rejectContent` keeps the tool from running and shows
//   the model a message. It rejects a refused call, and a call whose Mandate
//   approval was not given.
// - Completing cannot be left to the output side: an output guardrail and the
//   `agent_tool_end` hook both see the call id, but a tool built by `tool()`
//   turns a thrown error into an ordinary string output (its errorFunction)
//   before either sees it, and with `errorFunction: null` output guardrails
//   do not run at all and the hook is handed `String(error)`: neither can
//   tell a failure from a result. So `withMandate` also wraps `execute`,
//   which sees the output and the thrown error first-hand, and completes the
//   record there.
// Hence `withMandate` rewrites `tool()`'s options (before `tool()` builds the
// tool) rather than a built FunctionTool, whose `invoke` already swallows
// errors.
//
// The parsed input (an object) is sent as the call's `args` and judged first
// offline against the token's argument rules (`checkArgsOffline`): a call
// they refuse is refused (`args_required`, `args_not_permitted`) without
// asking Mandate, and has no record.
//
// An authorization is bound to the call as it was asked for: the call id,
// the tool, the action, resource and spend, and the hash of the parsed
// input's canonical JSON (`argsHash`); the binding is also the authorize
// call's Idempotency-Key. A call id met again with other arguments (a stored
// RunState edited before it is resumed) is another request, authorized anew
// under its own record — in `resolveApprovals`, the guardrail and `execute`
// alike — and never runs under the first call's approval. The arguments of
// a restored call are parsed with the tool's `parameters` (a Standard Schema
// such as Zod; plain JSON otherwise), as the runner parses them for
// `execute`, so that both see the same input.
//
// Nothing of @openai/agents is imported, not even its types: the shapes this
// module reads are declared here, structurally compatible with the SDK's, so
// mandate-sdk installs and type-checks without the SDK (whose declarations do
// not compile under `skipLibCheck: false`). `mandateAgents` checks that this
// Node and the installed SDK are ones the adapter supports (Node 22 or
// later, @openai/agents >=0.20.0 <1: `support.ts`) and throws
// `unsupported_environment` otherwise.

import {
  MandateError,
  argsHash,
  argsOf,
  checkArgsOffline,
  outputHash,
  type AbortSignalLike,
  type ActionRecord,
  type AgentAuth,
  type ApprovalStatus,
  type AuthorizeResponse,
  type AuthorizeRequest,
  type CompleteRequest,
  type JsonObject,
  type MandateClient,
  type PendingApproval,
} from "./client/index.js";
import type { AgentKey } from "./mandate_wasm.js";
import { OPENAI_AGENTS_SUPPORT, requireSupported } from "./support.js";

/** A model's call of a function tool, as the runner hands it on (the part of the SDK's `FunctionCallItem` read here). */
export interface FunctionCallLike {
  callId: string;
  name: string;
  /** The call's arguments: the JSON text the model wrote. */
  arguments: string;
}

/** The third argument of a tool's `execute` (the part of the SDK's `ToolCallDetails` read here). */
export interface ToolCallDetailsLike {
  toolCall?: FunctionCallLike;
  signal?: AbortSignalLike;
}

/** What a tool guardrail answers (the SDK's `ToolGuardrailFunctionOutput`). */
export interface ToolGuardrailOutput {
  behavior: { type: "allow" } | { type: "rejectContent"; message: string } | { type: "throwException" };
  outputInfo?: MandateToolCall;
}

/** A tool input guardrail as `tool()` accepts it in `inputGuardrails` (the SDK's `{name, run}` form). */
export interface ToolInputGuardrailLike {
  name: string;
  run(data: { toolCall: FunctionCallLike }): Promise<ToolGuardrailOutput>;
}

/**
 * The input a tool's `parameters` parse to, as the SDK types it: a Zod or
 * other Standard Schema's output; `string` without parameters; `unknown`
 * for a plain JSON schema (annotate `execute`'s input then).
 */
export type ParsedInput<P> = P extends { readonly "~standard": { readonly types?: infer T } }
  ? NonNullable<T> extends { readonly output: infer O }
    ? O
    : unknown
  : P extends undefined
    ? string
    : unknown;

/**
 * The options of `tool()` that `withMandate` reads and replaces; the rest
 * are passed through untouched. (Methods, so the SDK's own, more precise
 * types fit.)
 */
export interface WrappableToolOptions<TInput> {
  name?: string;
  execute(input: TInput, context?: unknown, details?: ToolCallDetailsLike): unknown;
  needsApproval?: boolean | ((runContext: never, input: never, callId?: string) => Promise<boolean>);
  inputGuardrails?: readonly unknown[];
}

/** A value of the policy: fixed, or computed from the call's parsed input. */
export type FromInput<TInput, T> = T | ((input: TInput) => T);

/** What Mandate is asked for each call of one tool. */
export interface MandateToolPolicy<TInput = unknown> {
  /** The action checked against the token's scope, e.g. `send`. */
  action: FromInput<TInput, string>;
  /** The resource, e.g. `(input) => \`mail:${input.to}\``. */
  resource: FromInput<TInput, string>;
  /** US dollars reserved against the budget for the call. */
  spendUsd?: FromInput<TInput, number | undefined>;
  /**
   * The `result_hash` of the tool's output. Default: the client's
   * `outputHash` (`sha256Ref` of a string as it is, of anything else its
   * `JSON.stringify` text; none for `undefined`).
   */
  resultHash?: (output: unknown) => string | undefined;
}

/** Where a call stands with Mandate. */
export type MandateCallState = "awaiting_approval" | "authorized" | "refused" | "running" | "completed";

/** One call of a wrapped tool and its record. */
export interface MandateToolCall {
  callId: string;
  tool: string;
  action: string;
  resource: string;
  spendUsd?: number;
  /** `sha256:` of the parsed input's canonical JSON (RFC 8785): the authorization holds for this input only. */
  argsHash: string;
  state: MandateCallState;
  /** The record; absent only when the refusal came before the server wrote one (e.g. `dpop_key_missing`). */
  aarId?: string;
  /** Why the call was refused: a `DenyReason`, or the code of the error that stopped it (e.g. `token_revoked`). */
  reason?: string;
  /** The approval the call waits for (or waited for), with the reviewer's page. */
  approval?: PendingApproval;
  /** How the tool ended, once completed. */
  result?: "success" | "error" | "cancelled";
  /** The `result_hash` sent on completion. */
  resultHash?: string;
}

/** Options of `mandateAgents`. */
export interface MandateAgentsOptions {
  client: MandateClient;
  /** The agent's token (its compact JWT): every call is authorized and completed with it. */
  token: string;
  /** The agent's key, for a token bound to it: each request then carries a DPoP proof. */
  key?: AgentKey;
  /** A W3C `traceparent` the records' spans join. */
  traceparent?: string;
  /**
   * The text the model reads in place of the output of a call that did not
   * run. Default: `Mandate refused <tool>: <reason>` (and, for an approval
   * still pending, the reviewer's page).
   */
  refusalMessage?: (call: MandateToolCall) => string;
  /**
   * Called once when a call needs a human's approval, before the run is
   * interrupted: to show `approval.url`. A rejection fails the run.
   */
  onApproval?: (approval: PendingApproval, call: MandateToolCall) => void | Promise<void>;
  /** Called when a call ends: completed, or refused (it did not run). */
  onCallEnd?: (call: MandateToolCall) => void;
}

/** A tool approval interruption, as far as `resolveApprovals` reads it (the SDK's `RunToolApprovalItem`). */
export interface ApprovalItemLike {
  rawItem: { type?: string; callId?: string; name?: string; arguments?: string };
}

/** A run's state as `resolveApprovals` uses it (the SDK's `RunState`, or a `RunResult`'s `state`). */
export interface ApprovalStateLike<Item extends ApprovalItemLike> {
  getInterruptions(): Item[];
  approve(item: Item): void;
  reject(item: Item, options?: { message?: string }): void;
}

/** Options of `resolveApprovals`. */
export interface ResolveApprovalsOptions {
  /** Wait up to this many seconds (0–30) for each approval still pending; default 0, read it once. */
  waitSeconds?: number;
  /** Abandons the wait: the call rejects with a MandateError `aborted`. */
  signal?: AbortSignalLike;
}

/** What `resolveApprovals` did with a run's interruptions. */
export interface ApprovalResolution<Item> {
  /** Approved in Mandate: approved in the run's state, to run under their record. */
  approved: MandateToolCall[];
  /** Denied or expired in Mandate: rejected in the run's state; the model reads why. */
  rejected: MandateToolCall[];
  /** Still pending in Mandate: left as they are (resume later, or ask again). */
  pending: MandateToolCall[];
  /** Interruptions that are not Mandate's (another tool's `needsApproval`): left to the caller. */
  other: Item[];
}

/** The longest wait the server takes on one read of an approval, seconds. */
const MAX_APPROVAL_WAIT_SECONDS = 30;

function valueOf<TInput, T>(value: FromInput<TInput, T>, input: TInput): T {
  return typeof value === "function" ? (value as (input: TInput) => T)(input) : value;
}

/** A Standard Schema (Zod and others) as far as it parses a restored call's arguments. */
interface StandardSchemaLike {
  "~standard": {
    validate(value: unknown): { value?: unknown; issues?: readonly unknown[] } | Promise<{ value?: unknown; issues?: readonly unknown[] }>;
  };
}

function isStandardSchema(value: unknown): value is StandardSchemaLike {
  const standard = typeof value === "object" && value !== null ? (value as { "~standard"?: unknown })["~standard"] : undefined;
  return typeof standard === "object" && standard !== null && typeof (standard as { validate?: unknown }).validate === "function";
}

/** A call's arguments (the model's JSON text) as the runner hands them to `execute`: parsed by the tool's Standard Schema, if it has one. */
async function parsedArguments(text: string, parameters: unknown): Promise<unknown> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new MandateError(0, { code: "invalid_arguments", title: "Arguments are not JSON", detail: "the call's arguments are not JSON" });
  }
  if (!isStandardSchema(parameters)) {
    return json;
  }
  const result = await parameters["~standard"].validate(json);
  if (result.issues !== undefined) {
    throw new MandateError(0, {
      code: "invalid_arguments",
      title: "Invalid arguments",
      detail: "the call's arguments do not match the tool's parameters",
    });
  }
  return result.value;
}

/** What a call's authorization is bound to, as hex SHA-256: its id, tool, action, resource, spend and arguments' hash. */
function bindingOf(call: MandateToolCall): string {
  return argsHash({
    call_id: call.callId,
    tool: call.tool,
    action: call.action,
    resource: call.resource,
    spend_usd: call.spendUsd,
    args_hash: call.argsHash,
  }).slice("sha256:".length);
}

/** What one call asks: the request from the tool's policy, and what it is bound to. */
interface Asked {
  call: MandateToolCall;
  /** The input, sent as the call's `args` when it is an object. */
  args: JsonObject | undefined;
  /** Hex SHA-256 of the call id, tool, action, resource, spend and arguments' hash: the Idempotency-Key's body. */
  binding: string;
}

/** One call's entry: its binding and its authorization (made once per binding). */
interface Entry {
  binding: string;
  call: Promise<MandateToolCall>;
}

/**
 * Mandate for the tools of one agent token: `withMandate` wraps a tool's
 * options, `resolveApprovals` applies Mandate's decisions to a run's
 * interruptions.
 */
export class MandateAgents {
  readonly #client: MandateClient;
  readonly #auth: AgentAuth;
  readonly #options: MandateAgentsOptions;
  /**
   * The calls not yet ended, by call id; a call's entry is made once,
   * however many times it is asked for, and replaced when the call id comes
   * with another binding (the call changed).
   */
  readonly #calls = new Map<string, Entry>();
  /** The policies and parameters by tool name, to authorize a call from its arguments' text (a restored run). */
  readonly #policies = new Map<string, { policy: MandateToolPolicy<never>; parameters: unknown }>();

  constructor(options: MandateAgentsOptions) {
    requireSupported(OPENAI_AGENTS_SUPPORT);
    this.#client = options.client;
    this.#options = options;
    this.#auth = { token: options.token, key: options.key, traceparent: options.traceparent };
  }

  /**
   * `tool()`'s options with Mandate around each call: pass the result to
   * `tool()`. Sets `needsApproval` (Mandate's approval, or the options' own
   * when Mandate needs none), adds an input guardrail (first), and wraps
   * `execute`; everything else is kept.
   */
  withMandate<P, TOptions extends WrappableToolOptions<ParsedInput<P>> & { parameters: P }>(
    options: TOptions & { parameters: P } & WrappableToolOptions<ParsedInput<P>>,
    policy: MandateToolPolicy<ParsedInput<P>>,
  ): TOptions {
    type Input = ParsedInput<P>;
    const name = options.name ?? (options.execute as { name?: string }).name ?? "";
    if (name !== "") {
      this.#policies.set(name, { policy, parameters: options.parameters });
    }
    const own = options.needsApproval;
    const execute = options.execute as (input: Input, context?: unknown, details?: ToolCallDetailsLike) => unknown;
    const needsApproval = async (runContext: unknown, input: Input, callId?: string): Promise<boolean> => {
      if (callId === undefined) {
        return false;
      }
      const call = await this.#authorize(callId, name, input, policy);
      if (call.state === "awaiting_approval") {
        return true;
      }
      if (call.state === "authorized" && own !== undefined) {
        return typeof own === "boolean" ? own : (own as (c: unknown, i: Input, id?: string) => Promise<boolean>)(runContext, input, callId);
      }
      return false;
    };
    const guardrail: ToolInputGuardrailLike = {
      name: "mandate",
      run: async ({ toolCall }) => this.#check(toolCall),
    };
    const wrapped = async (input: Input, context?: unknown, details?: ToolCallDetailsLike): Promise<unknown> => {
      const callId = details?.toolCall?.callId;
      if (callId === undefined) {
        throw new MandateError(0, {
          code: "call_id_missing",
          title: "No call id",
          detail: "the runner gave the tool no call id, so its call cannot be tied to a Mandate record",
        });
      }
      // The input as it runs: a call changed since it was authorized is authorized anew here.
      const call = await this.#authorize(callId, name, input, policy);
      if (call.state !== "authorized" || call.aarId === undefined) {
        // Reached when the guardrail did not run (the options were changed after wrapping), or the input changed after it: fail closed.
        const code = call.state === "awaiting_approval" ? "approval_pending" : (call.reason ?? "not_authorized");
        throw new MandateError(403, { code, title: "Refused", detail: this.#message(call) });
      }
      return this.#run(call, () => execute(input, context, details), policy, details?.signal);
    };
    return {
      ...options,
      // The name `tool()` would have taken from `execute`, which is replaced.
      ...(name === "" ? {} : { name }),
      needsApproval,
      inputGuardrails: [guardrail, ...(options.inputGuardrails ?? [])],
      execute: wrapped,
    };
  }

  /**
   * Applies Mandate's decisions to a run's interruptions: each interruption
   * that is a wrapped tool's call waiting for a Mandate approval is read
   * (with the agent's token, waiting up to `waitSeconds`) and, once decided,
   * approved or rejected in `state`. Resume the run with the same state
   * (`run(agent, state)`): an approved call runs under the record the
   * approval was for, without being authorized again.
   */
  async resolveApprovals<Item extends ApprovalItemLike>(
    state: ApprovalStateLike<Item>,
    options: ResolveApprovalsOptions = {},
  ): Promise<ApprovalResolution<Item>> {
    const resolution: ApprovalResolution<Item> = { approved: [], rejected: [], pending: [], other: [] };
    const wait = Math.max(0, Math.min(MAX_APPROVAL_WAIT_SECONDS, options.waitSeconds ?? 0));
    await Promise.all(
      state.getInterruptions().map(async (item) => {
        const call = await this.#callOf(item);
        if (call === undefined || call.state !== "awaiting_approval" || call.approval === undefined) {
          resolution.other.push(item);
          return;
        }
        const decided = this.#decided(call, await this.#read(call.approval.approval_id, wait, options.signal));
        if (decided === "authorized") {
          state.approve(item);
          resolution.approved.push(call);
        } else if (decided === "refused") {
          state.reject(item, { message: this.#message(call) });
          this.#end(call);
          resolution.rejected.push(call);
        } else {
          resolution.pending.push(call);
        }
      }),
    );
    return resolution;
  }

  /** The Mandate call behind an interruption, for its arguments as they are now (a restored run's, or a changed call's, authorized here). */
  async #callOf(item: ApprovalItemLike): Promise<MandateToolCall | undefined> {
    const { callId, name, arguments: args, type } = item.rawItem;
    if ((type !== undefined && type !== "function_call") || callId === undefined || name === undefined) {
      return undefined;
    }
    const entry = this.#policies.get(name);
    if (entry === undefined || args === undefined) {
      return this.#calls.get(callId)?.call;
    }
    return this.#fromText({ callId, name, arguments: args }, entry);
  }

  /** A call known only by its text (a restored run, the guardrail): its arguments parsed as `execute` will get them, then authorized. */
  async #fromText(
    toolCall: FunctionCallLike,
    entry: { policy: MandateToolPolicy<never>; parameters: unknown },
  ): Promise<MandateToolCall> {
    let input: unknown;
    try {
      input = await parsedArguments(toolCall.arguments, entry.parameters);
    } catch (error) {
      if (!(error instanceof MandateError)) {
        throw error;
      }
      return { callId: toolCall.callId, tool: toolCall.name, action: "", resource: "", argsHash: "", state: "refused", reason: error.code };
    }
    return this.#authorize(toolCall.callId, toolCall.name, input as never, entry.policy);
  }

  /**
   * The call's entry, made once per binding: the call authorized with
   * Mandate. The Idempotency-Key is the binding, so asking again for the
   * same call (in another process too, for the server keeps the key) gets
   * the first answer and never a second record, and a changed call is a new
   * request, never answered with the first one's record.
   */
  async #authorize<TInput>(callId: string, tool: string, input: TInput, policy: MandateToolPolicy<TInput>): Promise<MandateToolCall> {
    let asked: Asked;
    try {
      asked = this.#request(callId, tool, input, policy);
    } catch (error) {
      if (!(error instanceof MandateError)) {
        throw error;
      }
      // Arguments no canonical JSON can hold are bound to nothing: refused.
      return { callId, tool, action: "", resource: "", argsHash: "", state: "refused", reason: error.code };
    }
    const known = this.#calls.get(callId);
    if (known !== undefined && known.binding === asked.binding) {
      return known.call;
    }
    const made = this.#ask(asked);
    const entry: Entry = { binding: asked.binding, call: made };
    this.#calls.set(callId, entry);
    made.catch(() => {
      if (this.#calls.get(callId) === entry) {
        this.#calls.delete(callId);
      }
    });
    return made;
  }

  /** What a call asks, from the tool's policy and the input, and what its authorization is bound to. */
  #request<TInput>(callId: string, tool: string, input: TInput, policy: MandateToolPolicy<TInput>): Asked {
    const spendUsd = policy.spendUsd === undefined ? undefined : valueOf(policy.spendUsd, input);
    const call: MandateToolCall = {
      callId,
      tool,
      action: valueOf(policy.action, input),
      resource: valueOf(policy.resource, input),
      argsHash: argsHash(input),
      state: "refused",
    };
    if (spendUsd !== undefined) {
      call.spendUsd = spendUsd;
    }
    return { call, args: argsOf(input), binding: bindingOf(call) };
  }

  async #ask({ call, args, binding }: Asked): Promise<MandateToolCall> {
    const request: AuthorizeRequest = { action: call.action, resource: call.resource, spend_usd: call.spendUsd };
    if (args !== undefined) {
      request.args = args;
    }
    // The token's own argument rules refuse here, before any round trip: no record is made.
    const offline = checkArgsOffline(this.#options.token, request);
    if (offline !== undefined) {
      call.reason = offline.code;
      return call;
    }
    const auth: AgentAuth = { ...this.#auth, idempotencyKey: `openai-agents-${binding}` };
    let answer: AuthorizeResponse;
    try {
      answer = await this.#client.authorize(request, auth);
    } catch (error) {
      if (!(error instanceof MandateError)) {
        throw error;
      }
      // Fail closed: whatever kept Mandate from authorizing (a revoked token, a missing proof, no answer) refuses the call.
      call.reason = error.code;
      const aarId = error.problem.aar_id;
      if (typeof aarId === "string") {
        call.aarId = aarId;
      }
      return call;
    }
    call.aarId = answer.aar_id;
    if (answer.authorized) {
      call.state = "authorized";
      return call;
    }
    const pending = answer.approval;
    if (pending !== undefined && pending.status === "pending") {
      call.state = "awaiting_approval";
      call.approval = { ...pending, aar_id: answer.aar_id, url: this.#client.approvalUrl(pending.approval_id) };
      await this.#options.onApproval?.(call.approval, call);
      return call;
    }
    call.reason = answer.reason ?? "action_not_permitted";
    return call;
  }

  /** The input guardrail: allows an authorized call (for its arguments as they are), reads the approval of one that waited, rejects the rest. */
  async #check(toolCall: FunctionCallLike): Promise<ToolGuardrailOutput> {
    const entry = this.#policies.get(toolCall.name);
    const call = entry === undefined ? await this.#calls.get(toolCall.callId)?.call : await this.#fromText(toolCall, entry);
    if (call === undefined) {
      return this.#reject({
        callId: toolCall.callId,
        tool: toolCall.name,
        action: "",
        resource: "",
        argsHash: "",
        state: "refused",
        reason: "not_authorized",
      });
    }
    if (call.state === "awaiting_approval" && call.approval !== undefined) {
      this.#decided(call, await this.#read(call.approval.approval_id, 0, undefined));
    }
    if (call.state === "authorized") {
      return { behavior: { type: "allow" }, outputInfo: call };
    }
    return this.#reject(call);
  }

  /** A guardrail's rejection of `call`: the tool does not run, the model reads why. */
  #reject(call: MandateToolCall): ToolGuardrailOutput {
    this.#end(call);
    return { behavior: { type: "rejectContent", message: this.#message(call) }, outputInfo: call };
  }

  /** An approval's status, read with the agent's token. */
  async #read(approvalId: string, wait: number, signal: AbortSignalLike | undefined): Promise<ApprovalStatus> {
    const approval = await this.#client.approval(approvalId, { token: this.#auth.token, key: this.#auth.key, wait, signal });
    return approval.status;
  }

  /** Moves a waiting call on by its approval's status; answers its state. */
  #decided(call: MandateToolCall, status: ApprovalStatus): MandateCallState {
    if (call.approval !== undefined) {
      call.approval = { ...call.approval, status };
    }
    if (status === "approved") {
      call.state = "authorized";
    } else if (status === "denied" || status === "expired") {
      call.state = "refused";
      call.reason = status === "denied" ? "approval_denied" : "approval_expired";
    }
    return call.state;
  }

  /** Runs the tool under the call's record and completes it: success with the output's hash, or error, or cancelled. */
  async #run(
    call: MandateToolCall,
    execute: () => unknown,
    policy: MandateToolPolicy<never>,
    signal: AbortSignalLike | undefined,
  ): Promise<unknown> {
    const aarId = call.aarId as string;
    // The key makes a retried completion (a lost answer) harmless.
    const auth: AgentAuth = { ...this.#auth, idempotencyKey: `complete-${aarId}` };
    call.state = "running";
    let output: unknown;
    try {
      output = await execute();
    } catch (error) {
      call.result = signal?.aborted ? "cancelled" : "error";
      await this.#complete(call, { result: call.result }, auth);
      throw error;
    }
    const hash = (policy.resultHash ?? outputHash)(output);
    const body: CompleteRequest = { result: "success" };
    if (hash !== undefined) {
      body.result_hash = hash;
      call.resultHash = hash;
    }
    call.result = "success";
    await this.#complete(call, body, auth);
    return output;
  }

  async #complete(call: MandateToolCall, body: CompleteRequest, auth: AgentAuth): Promise<ActionRecord> {
    call.state = "completed";
    try {
      return await this.#client.complete(call.aarId as string, body, auth);
    } finally {
      this.#end(call);
    }
  }

  /** Forgets an ended call (unless its id was asked for anew since) and reports it. */
  #end(call: MandateToolCall): void {
    const entry = this.#calls.get(call.callId);
    if (entry !== undefined && bindingOf(call) === entry.binding) {
      this.#calls.delete(call.callId);
    }
    this.#options.onCallEnd?.(call);
  }

  #message(call: MandateToolCall): string {
    if (this.#options.refusalMessage !== undefined) {
      return this.#options.refusalMessage(call);
    }
    if (call.state === "awaiting_approval" && call.approval !== undefined) {
      return `Mandate has not approved ${call.tool} yet (approval_pending): a reviewer decides at ${call.approval.url}`;
    }
    return `Mandate refused ${call.tool}: ${call.reason ?? "not_authorized"}`;
  }
}

/** Mandate for the tools of the agent holding `options.token`. */
export function mandateAgents(options: MandateAgentsOptions): MandateAgents {
  return new MandateAgents(options);
}
