// The record log: a record's events with their inclusion proofs, the
// log's signed checkpoint, its verifier keys and consistency proofs.

import { queryString, type RequestOptions, segment, type Transport } from "./transport.js";
import type { Narrowed, Schemas, Sent } from "./types.js";

// The record log's JSON answers; the checkpoint and the keys are
// text/plain, and the client returns them as strings.

/** One event of a record, as `GET /v1/vat/aar/{aar_id}/proof` lists it. */
export type RecordProofEvent = Narrowed<
  Sent<Schemas["LogEventBody"]>,
  {
    /** The event's kind, which the document lists in prose. */
    kind: "record.created" | "record.completed" | "record.rated" | "approval.decided";
  }
>;

/** `GET /v1/vat/aar/{aar_id}/proof`: every event of a record with its proof. */
export type RecordProof = Narrowed<Sent<Schemas["RecordProofBody"]>, { events: RecordProofEvent[] }>;

/** `GET /v1/log/consistency?old=N&new=M`: RFC 6962 consistency proof hashes, standard base64. */
export type LogConsistency = Sent<Schemas["ConsistencyBody"]>;

/** `GET /v1/vat/aar/{aar_id}/proof`: every event of a record with its inclusion proof; check it with `verifyRecordProof`. */
export function recordProof(t: Transport, aarId: string, options: RequestOptions = {}): Promise<RecordProof> {
  return t.call("GET", `/v1/vat/aar/${segment(aarId)}/proof`, t.key(), undefined, { ...options, retry: "read" });
}

/** `GET /v1/log/checkpoint`: the record log's latest signed checkpoint (a C2SP signed note); check it with `verifyCheckpoint`. */
export function logCheckpoint(t: Transport, options: RequestOptions = {}): Promise<string> {
  return t.text("/v1/log/checkpoint", options);
}

/** `GET /v1/log/key`: the log's verifier keys (signed-note vkeys), one a line, the active one first. */
export function logKey(t: Transport, options: RequestOptions = {}): Promise<string> {
  return t.text("/v1/log/key", options);
}

/** `GET /v1/log/consistency?old=N&new=M`: the proof that the tree of `newSize` leaves extends the tree of `oldSize`. */
export function logConsistency(t: Transport, oldSize: number, newSize: number, options: RequestOptions = {}): Promise<LogConsistency> {
  return t.call("GET", `/v1/log/consistency${queryString({ old: oldSize, new: newSize })}`, t.key(), undefined, { ...options, retry: "read" });
}
