// The record log, offline: a record's proof checked event by event, and a
// monitor that holds a log to its past. Every rule is core's, through the
// wasm exports (verifyCheckpoint, verifyLogProof, verifyWitnessedLogProof,
// verifyConsistency); this file only combines their verdicts. With a witness
// policy — the caller's configuration, never one the log sends — a
// checkpoint counts only with the policy's threshold of fresh cosignatures.

import {
  verifyCheckpoint,
  verifyConsistency,
  verifyLogProof,
  verifyWitnessedLogProof,
  type Cosigned,
  type CosignedLink,
  type ErrorInfo,
  type LogCheckpoint,
  type LogEntry,
  type WitnessPolicy,
} from "./mandate_wasm.js";
import { MandateClient, MandateError, type FetchLike, type RecordProof } from "./client/index.js";

/** Trusted log keys: one vkey, several one a line (as `GET /v1/log/key` serves them), or a list. */
export type LogKeys = string | string[];

/** One event of a record whose proof verified. */
export interface VerifiedRecordEvent {
  /** The leaf's index in the log. */
  index: number;
  /** The leaf, read as a log entry. */
  entry: LogEntry;
}

export type RecordProofResult =
  | {
      valid: true;
      aar_id: string;
      checkpoint: LogCheckpoint;
      events: VerifiedRecordEvent[];
      /** With a policy: the checkpoint that met it (the proofs' own, or the older cosigned one linked to) and the cosignatures that counted. */
      witnessed?: { checkpoint: LogCheckpoint; cosigned_by: Cosigned[]; linked: boolean };
    }
  | { valid: false; error: ErrorInfo };

/** How a record proof or a log's checkpoints are judged. */
export interface LogTrustOptions {
  /** The log's origin: checkpoints of another log are refused. */
  origin?: string;
  /** The caller's witness policy (never one fetched from the log): checkpoints need its threshold of fresh cosignatures. */
  policy?: WitnessPolicy;
  /** Unix seconds to judge freshness at; default the JavaScript clock. */
  now?: number;
}

function refusal(code: string, message: string, index?: number): { valid: false; error: ErrorInfo } {
  const error: ErrorInfo = { code, message, stage: "log" };
  if (index !== undefined) {
    error.index = index;
  }
  return { valid: false, error };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Checks a record's proof as `GET /v1/vat/aar/{aar_id}/proof` answers it:
 * the checkpoint is signed by a trusted key (of `origin`, when given), and
 * every event's leaf is included in that same tree at the index given, is
 * a log entry of the kind given, and names this record. With
 * `options.policy`, the checkpoint must also carry the policy's threshold
 * of fresh cosignatures, or the answer's `cosigned` must carry an older
 * checkpoint that does with a consistency proof that the proofs'
 * checkpoint extends it. A refusal names the event at fault
 * (`error.index`). Never throws.
 */
export function verifyRecordProof(
  proof: RecordProof,
  vkeys: LogKeys,
  options: LogTrustOptions = {},
): RecordProofResult {
  if (!isObject(proof) || typeof proof.aar_id !== "string" || typeof proof.checkpoint !== "string" || !Array.isArray(proof.events)) {
    return refusal("invalid_argument", "proof must be { aar_id, checkpoint, events }");
  }
  if (proof.events.length === 0) {
    return refusal("record_no_events", "the answer lists no event of the record");
  }
  const opened = verifyCheckpoint(proof.checkpoint, vkeys, options.origin);
  if (!opened.valid) {
    return { valid: false, error: opened.error };
  }
  const checkpoint = opened.checkpoint;
  const cosigned: unknown = (proof as { cosigned?: unknown }).cosigned;
  if (cosigned !== undefined && cosigned !== null && !isObject(cosigned)) {
    return refusal("invalid_argument", "cosigned must be { checkpoint, consistency }");
  }
  let witnessed: { checkpoint: LogCheckpoint; cosigned_by: Cosigned[]; linked: boolean } | undefined;
  const events: VerifiedRecordEvent[] = [];
  for (const [index, event] of proof.events.entries()) {
    if (!isObject(event) || typeof event.proof !== "string" || typeof event.leaf !== "string") {
      return refusal("invalid_argument", "an event is { kind, index, leaf, proof }", index);
    }
    let verified;
    if (options.policy === undefined) {
      verified = verifyLogProof(event.proof, event.leaf, vkeys, options.origin);
    } else {
      verified = verifyWitnessedLogProof(event.proof, event.leaf, vkeys, options.policy, {
        origin: options.origin,
        now: options.now,
        cosigned: (cosigned ?? null) as CosignedLink | null,
      });
      if (verified.valid) {
        witnessed = { ...verified.witnessed, linked: verified.linked };
      }
    }
    if (!verified.valid) {
      return { valid: false, error: { ...verified.error, index } };
    }
    if (verified.checkpoint.size !== checkpoint.size || verified.checkpoint.root !== checkpoint.root) {
      return refusal("record_checkpoint_mismatch", "the event's proof leads to another checkpoint than the answer's", index);
    }
    if (verified.index !== event.index) {
      return refusal("record_index_mismatch", "the event's index is not the one its proof proves", index);
    }
    if (verified.entry.kind !== event.kind) {
      return refusal("record_kind_mismatch", "the event's kind is not its leaf's", index);
    }
    if (!("aar_id" in verified.entry) || verified.entry.aar_id !== proof.aar_id) {
      return refusal("record_mismatch", "the event's leaf is of another record", index);
    }
    events.push({ index: verified.index, entry: verified.entry });
  }
  return witnessed === undefined
    ? { valid: true, aar_id: proof.aar_id, checkpoint, events }
    : { valid: true, aar_id: proof.aar_id, checkpoint, events, witnessed };
}

export interface LogMonitorOptions {
  /** A client of the server; or give `baseUrl` (and `fetch`). */
  client?: MandateClient;
  baseUrl?: string;
  fetch?: FetchLike;
  /** The log keys to trust. */
  vkeys: LogKeys;
  /** The log's origin: checkpoints of another log are refused. */
  origin: string;
  /** The checkpoint note trusted last (`monitor.trusted` of an earlier run), to resume from. Its signature is checked, not its cosignatures, which have aged since. */
  trusted?: string;
  /** The caller's witness policy: a served checkpoint is trusted only with its threshold of fresh cosignatures. */
  policy?: WitnessPolicy;
  /** The clock freshness is judged by, unix seconds; default the JavaScript clock. */
  now?: () => number;
}

/** What one `check()` found. */
export type LogMonitorResult =
  /** No checkpoint was trusted; the served one is now. */
  | { status: "first"; checkpoint: LogCheckpoint }
  /** The same tree as the trusted one. */
  | { status: "unchanged"; checkpoint: LogCheckpoint }
  /** A larger tree that extends the trusted one (its consistency proof verified); it is trusted now. */
  | { status: "grew"; old: LogCheckpoint; new: LogCheckpoint }
  /**
   * The log contradicts what it showed before: another root at the same
   * size, a smaller tree, or a larger one that does not extend the trusted
   * one. The new checkpoint is not trusted. `oldNote` and `newNote` are the
   * two signed checkpoints that together prove it: report them.
   */
  | { status: "fork"; old: LogCheckpoint; new: LogCheckpoint; error: ErrorInfo; oldNote: string; newNote: string }
  /** The served checkpoint does not verify (signature, key, origin or form; with a policy, too few fresh cosignatures). Nothing changes. */
  | { status: "invalid"; error: ErrorInfo };

/**
 * Watches a record log: each `check()` fetches the latest checkpoint,
 * verifies it with the trusted keys and holds it to the last trusted one
 * (RFC 6962 consistency). With `policy`, a checkpoint is trusted only
 * with the policy's threshold of fresh cosignatures. Persist `trusted` to
 * resume later. A fork or rollback is reported with both signed
 * checkpoints and never trusted.
 */
export class LogMonitor {
  readonly #client: MandateClient;
  readonly #vkeys: LogKeys;
  readonly #origin: string;
  readonly #policy: WitnessPolicy | undefined;
  readonly #now: (() => number) | undefined;
  #trusted: { note: string; checkpoint: LogCheckpoint } | undefined;

  constructor(options: LogMonitorOptions) {
    if (options.client !== undefined) {
      this.#client = options.client;
    } else if (options.baseUrl !== undefined) {
      this.#client = new MandateClient({ baseUrl: options.baseUrl, fetch: options.fetch });
    } else {
      throw new TypeError("LogMonitor needs a client or a baseUrl");
    }
    this.#vkeys = options.vkeys;
    this.#origin = options.origin;
    this.#policy = options.policy;
    this.#now = options.now;
    if (options.trusted !== undefined) {
      const opened = verifyCheckpoint(options.trusted, this.#vkeys, this.#origin);
      if (!opened.valid) {
        throw new MandateError(0, { code: opened.error.code, title: "Untrusted checkpoint", detail: opened.error.message });
      }
      this.#trusted = { note: options.trusted, checkpoint: opened.checkpoint };
    }
  }

  /** The checkpoint note trusted last: persist it to resume. */
  get trusted(): string | undefined {
    return this.#trusted?.note;
  }

  /** The checkpoint trusted last, read. */
  get checkpoint(): LogCheckpoint | undefined {
    return this.#trusted?.checkpoint;
  }

  /** Fetches and judges the latest checkpoint (see `LogMonitorResult`). Rejects only when the server cannot be reached or answers an error. */
  async check(): Promise<LogMonitorResult> {
    const note = await this.#client.logCheckpoint();
    const opened = verifyCheckpoint(note, this.#vkeys, {
      origin: this.#origin,
      policy: this.#policy,
      now: this.#now?.(),
    });
    if (!opened.valid) {
      return { status: "invalid", error: opened.error };
    }
    const latest = opened.checkpoint;
    const trusted = this.#trusted;
    if (trusted === undefined) {
      this.#trusted = { note, checkpoint: latest };
      return { status: "first", checkpoint: latest };
    }
    const old = trusted.checkpoint;
    const fork = (code: string, message: string): LogMonitorResult => ({
      status: "fork",
      old,
      new: latest,
      error: { code, message, stage: "log" },
      oldNote: trusted.note,
      newNote: note,
    });
    if (latest.size === old.size) {
      return latest.root === old.root
        ? { status: "unchanged", checkpoint: old }
        : fork("log_fork", `two roots for the tree of ${old.size} leaves`);
    }
    if (latest.size < old.size) {
      return fork("log_rollback", `the log shows ${latest.size} leaves after showing ${old.size}`);
    }
    const answer = await this.#client.logConsistency(old.size, latest.size);
    if (!isObject(answer) || answer.old !== old.size || answer.new !== latest.size || !Array.isArray(answer.proof)) {
      return fork("log_consistency_unusable", "the consistency answer is not for the sizes asked");
    }
    const consistent = verifyConsistency({
      old_size: old.size,
      old_root: old.root,
      new_size: latest.size,
      new_root: latest.root,
      proof: answer.proof,
    });
    if (!consistent.valid) {
      return { status: "fork", old, new: latest, error: consistent.error, oldNote: trusted.note, newNote: note };
    }
    this.#trusted = { note, checkpoint: latest };
    return { status: "grew", old, new: latest };
  }
}
