// An independent verifier of Mandate's record log, written apart from
// mandate-core from the texts of the standards alone: C2SP signed-note
// (Ed25519), tlog-checkpoint, tlog-proof@v1 and tlog-cosignature (the
// Ed25519 cosignature/v1 of witnesses), RFC 6962 §2.1 hashing and
// the RFC 9162 §2.1.3.2 / §2.1.4.2 verification algorithms. Plain
// JavaScript over node:crypto, no dependency; sizes and indexes are BigInts.
//
// Failures throw a TlogError whose `code` names the rule broken, spelled
// as core spells it, so tests can hold the two implementations to the same
// verdicts. The live-server tests reuse it to check what a server sends.
//
// Not checked here (core checks them): that a leaf is a canonical log
// entry, and that an Ed25519 public key is not of small order.

import { createHash, createPublicKey, verify } from "node:crypto";

/** Caps, as the verifier chooses them (signed-note asks for at least 16 signatures). */
export const MAX_NOTE_BYTES = 1024 * 1024;
export const MAX_NOTE_SIGNATURES = 100;
export const MAX_PROOF_HASHES = 64;
export const MAX_TLOG_PROOF_BYTES = MAX_NOTE_BYTES + 4096;

export class TlogError extends Error {
  constructor(code, message) {
    super(message ?? code);
    this.name = "TlogError";
    this.code = code;
  }
}

function fail(code, message) {
  throw new TlogError(code, message);
}

function sha256(...parts) {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return hash.digest();
}

/** RFC 6962: SHA-256(0x00 || leaf). */
export function leafHash(bytes) {
  return sha256(Buffer.from([0]), bytes);
}

/** RFC 6962: SHA-256(0x01 || left || right). */
export function nodeHash(left, right) {
  return sha256(Buffer.from([1]), left, right);
}

/** Standard base64 with padding, accepted only in its one canonical spelling. */
export function decodeBase64(text) {
  if (typeof text !== "string" || text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) {
    return null;
  }
  const bytes = Buffer.from(text, "base64");
  return bytes.toString("base64") === text ? bytes : null;
}

const DECIMAL = /^(0|[1-9][0-9]*)$/;
const U64_MAX = (1n << 64n) - 1n;

function decimal(text) {
  if (!DECIMAL.test(text)) return null;
  const value = BigInt(text);
  return value <= U64_MAX ? value : null;
}

/** Key names: non-empty, no Unicode white space, no `+`, no control character. */
function validKeyName(name) {
  return name.length > 0 && !/[\p{White_Space}\p{Cc}+]/u.test(name);
}

/** Signature types (signed-note): a log's Ed25519 key, a witness's cosignature/v1 key. */
const ED25519 = 0x01;
const COSIGNATURE_V1 = 0x04;

/** The signed-note key id of an Ed25519 key: SHA-256(name || 0x0A || type || key)[:4], big-endian. */
export function keyId(name, publicKey, type = ED25519) {
  return sha256(Buffer.from(name, "utf8"), Buffer.from([0x0a, type]), publicKey).readUInt32BE(0);
}

/** Parses a vkey `<name>+<hex id>+<base64(type || key)>`; a log's keys are type 0x01. */
export function parseVkey(vkey, type = ED25519) {
  const first = vkey.indexOf("+");
  const second = first < 0 ? -1 : vkey.indexOf("+", first + 1);
  if (second < 0) fail("vkey_malformed", "a vkey has three parts");
  const name = vkey.slice(0, first);
  const idText = vkey.slice(first + 1, second);
  const material = decodeBase64(vkey.slice(second + 1));
  if (!validKeyName(name)) fail("note_key_name_invalid", "bad key name");
  if (!/^[0-9a-f]{8}$/.test(idText)) fail("vkey_malformed", "the id is 8 lowercase hex digits");
  if (material === null || material.length === 0) fail("vkey_malformed", "the key is standard base64");
  if (material[0] !== type) {
    fail(type === ED25519 ? "vkey_unsupported_type" : "witness_vkey_unsupported_type", `only type ${type}`);
  }
  const raw = material.subarray(1);
  if (raw.length !== 32) fail("vkey_malformed", "an Ed25519 key is 32 bytes");
  let key;
  try {
    key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
  } catch {
    fail("vkey_malformed", "not an Ed25519 public key");
  }
  const id = Number.parseInt(idText, 16);
  if (keyId(name, raw, type) !== id) fail("vkey_id_mismatch", "the id is not the name's and key's");
  return { name, id, key };
}

/** Splits a signed note into its text and its signature lines `{ name, id, signature }`. */
function splitNote(note) {
  if (Buffer.byteLength(note, "utf8") > MAX_NOTE_BYTES) fail("note_too_large");
  if (/[\u0000-\u0009\u000b-\u001f]/.test(note)) fail("note_malformed", "a control character");
  const blank = note.lastIndexOf("\n\n");
  if (blank < 0) fail("note_malformed", "no blank line");
  const text = note.slice(0, blank + 1);
  const block = note.slice(blank + 2);
  if (!block.endsWith("\n")) fail("note_malformed", "the signatures end with a newline");
  const lines = block.slice(0, -1).split("\n");
  if (lines.length > MAX_NOTE_SIGNATURES) fail("note_too_many_signatures");
  const signatures = lines.map((line) => {
    if (!line.startsWith("\u2014 ")) fail("note_malformed", "a signature line starts with an em dash");
    const rest = line.slice(2);
    const space = rest.indexOf(" ");
    if (space < 0) fail("note_malformed", "name and signature");
    const name = rest.slice(0, space);
    const bytes = decodeBase64(rest.slice(space + 1));
    if (!validKeyName(name) || bytes === null || bytes.length < 5) fail("note_malformed", "a signature line");
    return { name, id: bytes.readUInt32BE(0), signature: bytes.subarray(4) };
  });
  return { text, signatures };
}

/** Opens a signed note with trusted keys (parsed vkeys); returns `{ text, verifiedBy }`. */
export function openNote(note, keys) {
  const { text, signatures } = splitNote(note);
  const seen = new Set();
  const verifiedBy = [];
  for (const { name, id, signature } of signatures) {
    const key = keys.find((k) => k.name === name && k.id === id);
    if (key === undefined) continue;
    const tag = `${name}\n${id}`;
    if (seen.has(tag)) fail("note_duplicate_signature");
    seen.add(tag);
    if (signature.length !== 64 || !verify(null, Buffer.from(text, "utf8"), key.key, signature)) {
      fail("note_signature_invalid");
    }
    verifiedBy.push(name);
  }
  if (verifiedBy.length === 0) fail("note_unknown_key");
  return { text, verifiedBy };
}

/** Parses a checkpoint's note text: `{ origin, size (BigInt), root (Buffer), extensions }`. */
export function parseCheckpoint(text) {
  if (/[\u0000-\u0009\u000b-\u001f]/.test(text) || !text.endsWith("\n")) fail("checkpoint_malformed");
  const lines = text.slice(0, -1).split("\n");
  if (lines.length < 3) fail("checkpoint_malformed", "three lines at least");
  const [origin, sizeText, rootText, ...extensions] = lines;
  const size = decimal(sizeText);
  const root = decodeBase64(rootText);
  if (origin === "" || size === null || root === null || root.length !== 32 || extensions.some((e) => e === "")) {
    fail("checkpoint_malformed");
  }
  return { origin, size, root, extensions };
}

/** Opens a checkpoint note: signed by a trusted key, well formed, of `origin` when given. */
export function openCheckpoint(note, keys, origin) {
  const { text } = openNote(note, keys);
  const checkpoint = parseCheckpoint(text);
  if (origin !== undefined && origin !== null && checkpoint.origin !== origin) fail("checkpoint_origin_mismatch");
  return checkpoint;
}

/** Parses a c2sp.org/tlog-proof@v1 text: `{ extra, index (BigInt), path, checkpoint }`. */
export function parseTlogProof(text) {
  if (Buffer.byteLength(text, "utf8") > MAX_TLOG_PROOF_BYTES) fail("tlog_proof_too_large");
  const blank = text.indexOf("\n\n");
  if (blank < 0) fail("tlog_proof_malformed", "no empty line");
  const checkpoint = text.slice(blank + 2);
  if (checkpoint === "") fail("tlog_proof_malformed", "no checkpoint");
  const lines = text.slice(0, blank).split("\n");
  if (lines.shift() !== "c2sp.org/tlog-proof@v1") fail("tlog_proof_malformed", "the header line");
  let extra = null;
  if (lines.length > 0 && lines[0].startsWith("extra ")) {
    extra = decodeBase64(lines.shift().slice(6));
    if (extra === null) fail("tlog_proof_malformed", "extra is base64");
  }
  const indexLine = lines.shift();
  const index = indexLine?.startsWith("index ") ? decimal(indexLine.slice(6)) : null;
  if (index === null) fail("tlog_proof_malformed", "the index line");
  const path = [];
  for (const line of lines) {
    if (path.length === MAX_PROOF_HASHES) fail("log_proof_too_long");
    const hash = decodeBase64(line);
    if (hash === null || hash.length !== 32) fail("tlog_proof_malformed", "a hash line");
    path.push(hash);
  }
  return { extra, index, path, checkpoint };
}

const odd = (n) => (n & 1n) === 1n;

/** RFC 9162 §2.1.3.2: `leaf` (a leaf hash) is leaf `index` of the tree of `size` with `root`. */
export function verifyInclusion(leaf, index, size, path, root) {
  if (path.length > MAX_PROOF_HASHES) fail("log_proof_too_long");
  if (index >= size) fail("log_index_out_of_range");
  let fn = index;
  let sn = size - 1n;
  let r = leaf;
  for (const p of path) {
    if (sn === 0n) fail("log_proof_invalid", "too many hashes");
    if (odd(fn) || fn === sn) {
      r = nodeHash(p, r);
      while (!odd(fn) && fn !== 0n) {
        fn >>= 1n;
        sn >>= 1n;
      }
    } else {
      r = nodeHash(r, p);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) fail("log_proof_invalid", "too few hashes");
  if (!r.equals(root)) fail("log_root_mismatch");
}

const EMPTY_ROOT = sha256();

/** RFC 9162 §2.1.4.2: the tree of `newSize` with `newRoot` extends the tree of `oldSize` with `oldRoot`. */
export function verifyConsistency(oldSize, newSize, oldRoot, newRoot, path) {
  if (path.length > MAX_PROOF_HASHES) fail("log_proof_too_long");
  if (oldSize > newSize) fail("log_sizes_out_of_order");
  if (oldSize === newSize || oldSize === 0n) {
    if (path.length !== 0) fail("log_proof_invalid", "no hashes are needed");
    if (!oldRoot.equals(oldSize === 0n ? EMPTY_ROOT : newRoot)) fail("log_root_mismatch");
    return;
  }
  if (path.length === 0) fail("log_proof_invalid", "hashes are needed");
  // An old tree that is a complete subtree is the proof's implicit first node.
  const nodes = (oldSize & (oldSize - 1n)) === 0n ? [oldRoot, ...path] : [...path];
  let fn = oldSize - 1n;
  let sn = newSize - 1n;
  while (odd(fn)) {
    fn >>= 1n;
    sn >>= 1n;
  }
  let fr = nodes[0];
  let sr = nodes[0];
  for (const c of nodes.slice(1)) {
    if (sn === 0n) fail("log_proof_invalid", "too many hashes");
    if (odd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (!odd(fn) && fn !== 0n) {
        fn >>= 1n;
        sn >>= 1n;
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) fail("log_proof_invalid", "too few hashes");
  if (!fr.equals(oldRoot) || !sr.equals(newRoot)) fail("log_root_mismatch");
}

/** Parses trusted keys: one vkey, several one a line, or a list. */
export function parseVkeys(vkeys) {
  const list = typeof vkeys === "string" ? vkeys.split("\n").map((l) => l.trim()).filter(Boolean) : vkeys;
  return list.map((vkey) => parseVkey(vkey));
}

/**
 * Verifies a tlog-proof text for a leaf's bytes (step by step as
 * tlog-proof@v1 says): the leaf hash, the checkpoint (trusted keys, origin),
 * the inclusion. Returns `{ index, checkpoint }`.
 */
export function verifyTlogProof(proofText, leafBytes, vkeys, origin) {
  const proof = parseTlogProof(proofText);
  const leaf = leafHash(leafBytes);
  const checkpoint = openCheckpoint(proof.checkpoint, parseVkeys(vkeys), origin);
  verifyInclusion(leaf, proof.index, checkpoint.size, proof.path, checkpoint.root);
  return { index: proof.index, checkpoint };
}

/**
 * A witness's vkey (tlog-cosignature §Format: "MAY be encoded as vkeys with
 * signature type 0x04"), its key id SHA-256(name || "\n" || 0x04 || key)[:4].
 */
export function parseWitnessVkey(vkey) {
  return parseVkey(vkey, COSIGNATURE_V1);
}

const I64_MAX = (1n << 63n) - 1n;

/**
 * Checks one cosignature's bytes (after the key id) by `witness` on a note
 * text (tlog-cosignature §Format and §Ed25519 signed message): a u64
 * big-endian timestamp, at most 2^63 − 1, then 64 bytes of Ed25519 over
 * "cosignature/v1\n" || "time <decimal>\n" || the whole note text.
 * Returns the timestamp (BigInt).
 */
function checkCosignature(text, witness, signature) {
  if (signature.length !== 8 + 64) fail("cosignature_malformed", "a timestamp and 64 signature bytes");
  const timestamp = signature.readBigUInt64BE(0);
  if (timestamp > I64_MAX) fail("cosignature_malformed", "a timestamp above 2^63 - 1");
  const message = Buffer.from(`cosignature/v1\ntime ${timestamp}\n${text}`, "utf8");
  if (!verify(null, message, witness.key, signature.subarray(8))) fail("cosignature_invalid");
  return timestamp;
}

/**
 * Verifies one cosignature line (without its newline) by a parsed witness
 * key on a checkpoint's note text; returns its timestamp (BigInt). A line
 * by another name or key id is `note_unknown_key`.
 */
export function verifyCosignatureLine(text, line, witness) {
  const [{ name, id, signature }] = splitNote(`${text}\n${line}\n`).signatures;
  if (name !== witness.name || id !== witness.id) fail("note_unknown_key");
  return checkCosignature(text, witness, signature);
}

/**
 * Opens a checkpoint note with the log's keys (of `origin` when given) and
 * counts the cosignatures of `policy.witnesses` (vkeys) made within
 * [now − max_age_seconds, now + futureSkew]; fewer than
 * `policy.threshold` is `cosignatures_insufficient`. As signed-note says of
 * known keys, a policy witness's line that is malformed or fails rejects
 * the note, and one witness twice is a duplicate; other lines are ignored.
 * Returns `{ checkpoint, cosignedBy: [{ name, timestamp }] }`.
 */
export function verifyWitnessed(note, logVkeys, policy, now, origin, futureSkew = 60n) {
  const checkpoint = openCheckpoint(note, parseVkeys(logVkeys), origin);
  const witnesses = policy.witnesses.map((vkey) => parseWitnessVkey(vkey));
  const { text, signatures } = splitNote(note);
  const oldest = BigInt(now) - BigInt(policy.max_age_seconds);
  const newest = BigInt(now) + futureSkew;
  const seen = new Set();
  const cosignedBy = [];
  for (const { name, id, signature } of signatures) {
    const witness = witnesses.find((w) => w.name === name && w.id === id);
    if (witness === undefined) continue;
    if (seen.has(name)) fail("note_duplicate_signature");
    seen.add(name);
    const timestamp = checkCosignature(text, witness, signature);
    if (timestamp >= oldest && timestamp <= newest) cosignedBy.push({ name, timestamp });
  }
  if (cosignedBy.length < policy.threshold) fail("cosignatures_insufficient", `${cosignedBy.length} of ${policy.threshold}`);
  return { checkpoint, cosignedBy };
}
