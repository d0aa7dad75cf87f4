// The client's view of the generated types: the JSON values a call's
// arguments are, and the helpers every group's request and response types
// are written with (`Sent`, `Narrowed`, …) over the schemas of `openapi.ts`.
// The helpers are the client's own; only the exported value types reach the
// package.

import type { components } from "./openapi.js";

/** A JSON value, as `JSON.parse` gives one. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;

/** A JSON object: what a call's `args` is (DESIGN §15). */
export interface JsonObject {
  [member: string]: JsonValue;
}

// The request and response types come from the server's OpenAPI document:
// `openapi.ts` is generated from /v1/openapi.json by openapi-typescript
// (`cargo xtask wasm`; the package's tests fail when it is stale). Each type
// the client takes or returns is the document's schema. Where the client
// knows more than the document states (values it lists only in prose, the
// claims it calls an object, the three kinds of graph node it describes in
// one schema), members are narrowed with `Narrowed`, which the compiler
// holds to the document; the two widenings (`AgentBody`, `WithInstants`)
// are the client's own conveniences. The key set is core's `Jwks`, which
// the document calls an object.

/** The document's schemas. */
export type Schemas = components["schemas"];

/**
 * An answer as the server sends it. The document allows `null` in optional
 * members (a request may send one); an answer leaves such a member out and
 * never sends `null`.
 */
export type Sent<T> = T extends readonly (infer Item)[]
  ? Sent<Item>[]
  : T extends object
    ? { [K in keyof T]: Sent<Exclude<T[K], null>> }
    : T;

/**
 * `T` with the members of `R` in place of its own: each must be assignable
 * to the member it replaces, so a narrowing cannot contradict the document.
 */
export type Narrowed<T, R extends { [K in keyof R]: K extends keyof T ? T[K] : never }> = Omit<T, keyof R> & R;

/**
 * An agent call's body. The document requires `vat_jti`, which a call
 * without the token needs; a call that presents the token
 * (`AgentAuth.token`) may leave it out.
 */
export type AgentBody<T extends { vat_jti: unknown }> = Omit<T, "vat_jti"> & { vat_jti?: T["vat_jti"] };

/**
 * A request that carries a call's arguments (`args`, DESIGN §15): the
 * server takes them on `authorize`, `record/action` and each record of
 * `record/actions`. The client's own member, typed as a JSON object, in
 * place of the document's (which, until the server's document names it,
 * has none).
 */
export type WithArgs<T> = Omit<T, "args"> & { args?: JsonObject };

/**
 * What a record keeps of its call's arguments: `args_hash` (`sha256:` of
 * their canonical JSON) and, unless the server drops them, the arguments.
 * Added to the document's record until it names them; both optional, as a
 * record of a call without arguments has neither.
 */
export interface RecordArgs {
  args_hash?: string;
  args?: JsonObject;
}

/** A time bound: ISO 8601 text or a Date (sent as its ISO text). */
export type Instant = string | Date;

/** A query whose `since` and `until` may also be Dates. */
export type WithInstants<T> = Omit<T, "since" | "until"> & { since?: Instant | null; until?: Instant | null };

export type ActionResult = Schemas["Outcome"];
export type Rating = Schemas["Rating"];
// The document gives these as strings and lists their values in prose.
export type RecordStatus = "awaiting_approval" | "pending" | "completed" | "denied";
export type TokenState = "active" | "revoked" | "expired";
