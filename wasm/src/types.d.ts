/** A JSON Web Key Set, as served at `/.well-known/jwks.json`. */
export interface Jwks {
  keys: Jwk[];
}

/** One key of a set. Only Ed25519 keys (`kty` OKP, `crv` Ed25519) verify. */
export interface Jwk {
  kty: string;
  crv?: string;
  x?: string;
  kid?: string;
  alg?: string;
  use?: string;
  [member: string]: unknown;
}

/** Why a call refused its input: core's stable `code`, a sentence, and where. */
export interface ErrorInfo {
  code: string;
  message: string;
  /**
   * `input`: an argument; `jwks`: the key set; `verify`: a token; `chain`: a chain's links; `dpop`: a bound token's proof;
   * `log`: a record log checkpoint, proof, key or leaf; `status_list`: a status list token; `status`: a token's status in its
   * list (`token_revoked`, `status_unknown`, `status_stale`…); `webhook`: a webhook's secret, headers, signature, timestamp or
   * payload (`webhook_signature_invalid`, `webhook_timestamp_too_old`…); `trust`: a signed trust statement
   * (`statement_expired`, `invalid_signature`, `wrong_typ`…).
   */
  stage: "input" | "jwks" | "verify" | "chain" | "dpop" | "log" | "status_list" | "status" | "webhook" | "trust";
  /** The position of the offending token in a chain. */
  index?: number;
}

/** The protected header of a Mandate token. */
export interface Header {
  alg: "EdDSA";
  typ: "vat+jwt";
  kid: string;
}

/** Resource patterns (`<namespace>:<name>` or `<namespace>:*`) and actions. */
export interface Scope {
  resources: string[];
  actions: string[];
}

/** When an action needs a human's approval first: any member matching. */
export interface ApprovalRequirement {
  /** Actions that always need approval. */
  actions?: string[];
  /** Resource patterns whose resources always need approval. */
  resources?: string[];
  /** Spending strictly more than this (USD) needs approval. */
  spend_over_usd?: number;
  /** UCAN policy statements over the arguments: an attempt needs approval
   * when they all hold or are undefined (absent arguments included). */
  args?: PolicyStatement[];
}

/** A statement of UCAN 1.0's policy language, e.g. `["==", ".to", "a@example.com"]`,
 * `["like", ".to", "*@example.com"]`, `["all", ".to", ["like", ".", "*@example.com"]]`. */
export type PolicyStatement = unknown[];

/** An argument rule: the attempts it applies to (absent: all) and the
 * statements their arguments must satisfy. */
export interface ArgsRule {
  actions?: string[];
  resources?: string[];
  pol: PolicyStatement[];
}

/** The truth of a policy over arguments, in three-valued logic; only `true` permits. */
export type PolicyResult =
  | { ok: true; truth: "true" | "false" | "undefined"; permits: boolean }
  | { ok: false; error: ErrorInfo };

/** Budget limits, cumulative over a token and its descendants, and when an
 * action needs a human's approval first. */
export interface Constraints {
  max_spend_usd?: number;
  max_actions?: number;
  /** The least trust in [0, 1] the token's agent must hold to act; a delegation may only raise it. */
  min_trust?: number;
  require_approval?: ApprovalRequirement;
  /** Argument rules: every statement of every rule that applies must be true. */
  args?: ArgsRule[];
}

/** Compliance frameworks a token asserts. */
export interface Policy {
  frameworks: string[];
}

/** RFC 8693 actor: who delegated, nearest delegator first. */
export interface Actor {
  sub: string;
  act?: Actor;
}

export type AssuranceLevel = "L1" | "L2" | "L3";

/** The claims of a Mandate token (a VAT). */
export interface Claims {
  iss: string;
  /** `agent:<agent_id>`. */
  sub: string;
  /** The one resource server the token is for (RFC 8707 resource URI); absent for any. Always one string, never an array. */
  aud?: string;
  iat: number;
  nbf: number;
  exp: number;
  /** `vat_root_<ulid>` or `vat_del_<ulid>`. */
  jti: string;
  svc_trust_score: number;
  svc_scope: Scope;
  svc_constraints?: Constraints;
  svc_policy?: Policy;
  /** `prov_<ulid>`, shared by the whole chain. */
  svc_prov: string;
  /** `sha256:<hex>`. */
  svc_human: string;
  svc_assurance: AssuranceLevel;
  svc_depth: number;
  /** The parent's jti hash (base64url SHA-256 of its jti): never another token's jti. */
  svc_parent?: string;
  /** The jti hashes of every ancestor, root first. */
  svc_chain?: string[];
  /** A bound token: the RFC 7638 thumbprint of its holder's key (RFC 9449). */
  cnf?: { jkt: string };
  /** Where the token's status is published (IETF Token Status List); absent on tokens issued before lists were. */
  status?: StatusClaim;
  act?: Actor;
}

/** The `status` claim: entry `idx` of the status list at `uri`. */
export interface StatusClaim {
  status_list: { idx: number; uri: string };
}

/** A token that passed every check. */
export interface VerifiedToken {
  header: Header;
  claims: Claims;
}

export interface VerifyOptions {
  /** Unix seconds; default the JavaScript clock. */
  now?: number;
  /** Clock skew tolerated on `exp` and `nbf`; default 60. */
  leewaySeconds?: number;
  /** When set, `iss` must equal it. */
  issuer?: string;
  /** Revoked tokens, by jti or jti hash: a token is refused (`revoked`) when it or any ancestor it names is among them. */
  revoked?: string[];
  /** The request a bound token came with, to check its proof (no replay check; see `Verifier.verifyRequest`). */
  request?: { method: string; url: string; proof?: string };
  /** Check a bound token without its proof: to show it, never to authorize with it. */
  skipProofOfPossession?: boolean;
  /**
   * A status list token (`statuslist+jwt`) for the token's status uri, verified against the same key set: the token is
   * refused unless its entry is VALID (`token_revoked`, `token_suspended`…). A token without a status claim passes.
   */
  statusList?: string;
  /** With `statusList`: refuse a list signed longer ago than this (`status_stale`). */
  maxStalenessSeconds?: number;
  /**
   * With `statusList`: the origins (`https://host[:port]`) the issuer serves status lists from; a token whose status
   * uri is on another is refused (`status_origin_not_allowed`), as a token issued with a forged `Host` would be.
   */
  statusOrigins?: string[];
}

export type VerifyResult =
  | ({ valid: true } & VerifiedToken)
  | { valid: false; error: ErrorInfo };

/** What `decodeTokenUnverified` read. Nothing in it is trustworthy. */
export type DecodeResult =
  | ({ ok: true } & VerifiedToken)
  | { ok: false; error: ErrorInfo };

export interface VerifierOptions {
  leewaySeconds?: number;
  issuer?: string;
  /** Most verified tokens to remember (two generations of half each); below 2, no cache. */
  cacheSize?: number;
  /** Revoked tokens, by jti or jti hash; a revoked token voids its descendants too. */
  revoked?: string[];
  /**
   * Refuse a token that carries a status claim unless a list given to `setStatusList` for its uri says it is VALID:
   * `token_revoked`, or, failing closed, `status_unknown` (no list held) and `status_stale` (see `maxStalenessSeconds`).
   */
  checkStatus?: boolean;
  /** With `checkStatus`: refuse a token whose list was signed longer ago than this (`status_stale`). */
  maxStalenessSeconds?: number;
  /**
   * With `checkStatus`: the origins (`https://host[:port]`) the issuer serves status lists from. A token whose status
   * uri is on another is refused (`status_origin_not_allowed`), and `setStatusList` refuses a list signed for another:
   * a token issued with a forged `Host` names a list its holder may keep unrevoked. Set it whenever the lists given
   * to `setStatusList` are fetched from the uri a token names.
   */
  statusOrigins?: string[];
}

/** What `verifyStatusList` checks a status list token against. */
export interface StatusListCheck {
  /** The `uri` of the token whose status is wanted: the list's `sub` must equal it. */
  uri?: string;
  /** Unix seconds; default the JavaScript clock. */
  now?: number;
}

/** What a verified status list token says about itself. */
export interface StatusListInfo {
  /** Its `sub`: the URI tokens name it by. */
  uri: string;
  kid: string;
  /** When it was signed (unix seconds); its age is counted from here. */
  iat: number;
  /** When it stops being good (unix seconds). */
  exp: number;
  /** Seconds it may be kept before it is fetched again. */
  ttl: number;
  /** Bits per token. */
  bits: 1 | 2 | 4 | 8;
  /** Entries. */
  size: number;
}

export type StatusListResult =
  | ({ valid: true } & StatusListInfo)
  | { valid: false; error: ErrorInfo };

/** `held`: whether this list is now the one checked against (false when one of its uri signed later is held). */
export type SetStatusListResult =
  | ({ ok: true; held: boolean } & StatusListInfo)
  | { ok: false; error: ErrorInfo };

/** The request `verifier.verifyRequest` checks a token against. */
export interface RequestCheck {
  /** The HTTP method, as sent. */
  method: string;
  /** The URL the request was sent to. */
  url: string;
  /** The `DPoP` header, for a bound token. */
  proof?: string;
  /** Unix seconds; default the JavaScript clock. */
  now?: number;
}

/** What `verifyProof` checks a DPoP proof against. */
export interface ProofCheck {
  method: string;
  url: string;
  /** The token sent with the proof. */
  accessToken: string;
  /** The `cnf.jkt` of that token. */
  jkt: string;
  now?: number;
}

export type ProofResult =
  | { valid: true; jti: string; iat: number; jkt: string }
  | { valid: false; error: ErrorInfo };

/** What an `AgentKey` signs a proof for. */
export interface ProofFor {
  method: string;
  url: string;
  accessToken: string;
  now?: number;
}

export type ProofMade = { ok: true; proof: string } | { ok: false; error: ErrorInfo };

/**
 * What a gate's relay proof (`Mandate-Relay`) is made for: the Mandate
 * request, the client's token sent with it, and the client's DPoP proof it
 * forwards (`Mandate-Client-DPoP`), if any.
 */
export interface RelayFor {
  method: string;
  url: string;
  accessToken: string;
  forwardedProof?: string;
  now?: number;
}

/** An Ed25519 public key as `holder_key` takes it. */
export interface PublicJwk {
  crv: "Ed25519";
  kty: "OKP";
  x: string;
}

/** An Ed25519 key with its secret `d`: keep it secret. */
export interface PrivateJwk extends PublicJwk {
  d: string;
}

export type DelegatedGrantResult =
  | { ok: true; grant: Grant }
  | { ok: false; code: string; violations: Violation[] }
  | { ok: false; error: ErrorInfo };

export type ChainResult =
  | { valid: true; tokens: VerifiedToken[] }
  | { valid: false; error: ErrorInfo };

export type RevokeResult = { ok: true } | { ok: false; error: ErrorInfo };

export type SetKeysResult = { ok: true } | { ok: false; error: ErrorInfo };

export type PermitResult =
  | { ok: true }
  | { ok: false; reason: { code: "action_not_permitted" | "resource_not_permitted"; message: string } }
  | {
      ok: false;
      /** The token's argument rule `rule` applies and its statement `statement` is not true. */
      reason: {
        code: "args_required" | "args_not_permitted";
        message: string;
        rule: number;
        statement?: number;
        truth?: "false" | "undefined";
      };
    }
  | { ok: false; error: ErrorInfo };

/** What a token grants, as narrowing compares it. */
export interface Grant extends Scope {
  constraints?: Constraints;
  policy?: Policy;
  /** Unix seconds after which the grant is void. */
  exp: number;
  /** The one resource server the grant is for (`aud`); a child keeps its parent's. */
  aud?: string;
}

/** One way a child is wider than its parent. */
export interface Violation {
  /** The widening request field: `resources`, `actions`, `constraints.max_spend_usd`, `policy.frameworks`, `exp`… */
  field: string;
  code: string;
  message: string;
}

export interface NarrowingResult {
  ok: boolean;
  violations: Violation[];
  /** Set when an argument could not be read (then `ok` is false and `violations` empty). */
  error?: ErrorInfo;
}

/** Record counts of an agent, as `counts` of the reputation endpoint. */
export interface ReputationCounts {
  successes?: number;
  failures?: number;
  pending?: number;
  /** Records denied at `authorize` (the pre-flight check) or by an approval's decision (denied or expired). */
  denied_requests?: number;
  approved?: number;
  flagged?: number;
  rejected?: number;
}

export interface Reputation {
  total_actions: number;
  execution_score: number;
  feedback_score: number;
  combined_reputation: number;
  has_human_feedback: boolean;
}

/** The members of an action record a workflow summary reads. */
export interface SummaryRecord {
  agent_id: string;
  action: string;
  status: "awaiting_approval" | "pending" | "completed" | "denied";
  result?: "success" | "error" | "timeout" | "cancelled" | null;
  provenance_ref?: string;
}

export interface WorkflowSummary {
  provenance_ref: string;
  total_records: number;
  unique_agents: number;
  actions_by_type: Record<string, number>;
  results_by_type: Record<string, number>;
}

/** A record log checkpoint (C2SP tlog-checkpoint) whose signature verified. */
export interface LogCheckpoint {
  /** The log's identity, e.g. `mandate.example/log`. */
  origin: string;
  /** How many leaves the tree has. */
  size: number;
  /** The tree's RFC 6962 root, standard base64. */
  root: string;
  /** Extension lines, when the checkpoint has any. */
  extensions?: string[];
}

export type CheckpointResult =
  | {
      valid: true;
      checkpoint: LogCheckpoint;
      /** With `options.policy`: the fresh cosignatures that counted. */
      cosigned_by?: Cosigned[];
    }
  | { valid: false; error: ErrorInfo };

export interface CheckpointOptions {
  /** The log the checkpoint must be of. */
  origin?: string;
  /** The caller's witness policy: the checkpoint must carry its threshold of fresh cosignatures. */
  policy?: WitnessPolicy;
  /** Unix seconds; default the JavaScript clock. */
  now?: number;
}

/**
 * Which witnesses a verifier trusts (C2SP tlog-cosignature, cosignature/v1):
 * the caller's own configuration, never one fetched from the log it checks.
 */
export interface WitnessPolicy {
  /** The witnesses' vkeys (`name+keyid+base64`, key type 0x04); each carries its name. */
  witnesses: string[];
  /** How many fresh cosignatures by distinct witnesses a checkpoint needs (the k of k of n). */
  threshold: number;
  /** The oldest a cosignature may be, in seconds, and still count. */
  max_age_seconds: number;
}

export interface WitnessedOptions {
  /** The log the checkpoint must be of. */
  origin?: string;
  /** Unix seconds; default the JavaScript clock. */
  now?: number;
}

/** A cosignature that counted: the witness's name and when it cosigned (unix seconds). */
export interface Cosigned {
  name: string;
  timestamp: number;
}

export type WitnessedResult =
  | { valid: true; checkpoint: LogCheckpoint; cosigned_by: Cosigned[] }
  | { valid: false; error: ErrorInfo };

export type CosignatureResult =
  | { valid: true; timestamp: number }
  | { valid: false; error: ErrorInfo };

/** One leaf of the record log: a state change, as its canonical JSON (RFC 8785). */
export type LogEntry = {
  v: 1;
  org: string;
  /** Unix milliseconds. */
  at: number;
} & (
  | {
      kind: "token.issued";
      /** The token's jti hash. */
      jth: string;
      /** The parent's jti hash, for a delegated token. */
      parent?: string;
      agent_id: string;
      provenance_ref: string;
      depth: number;
      human_ref: string;
      assurance: AssuranceLevel;
      /** Unix seconds. */
      exp: number;
      kid: string;
      /** base64url SHA-256 of the token's stored claims JSON text. */
      claims_sha256: string;
      jkt?: string;
      status_idx?: number;
    }
  | {
      kind: "token.revoked";
      jth: string;
      /** The token the revocation named. */
      cause: string;
      reason?: string;
    }
  | {
      kind: "record.created";
      aar_id: string;
      /** The jti hash of the token the record was made with. */
      jth: string;
      agent_id: string;
      provenance_ref: string;
      action: string;
      resource: string;
      status: "awaiting_approval" | "pending" | "completed" | "denied";
      result?: "success" | "error" | "timeout" | "cancelled";
      deny_reason?: string;
      result_hash?: string;
      spend_micros: number;
      credential: "jti" | "token";
      delegated_jth?: string;
    }
  | {
      kind: "record.completed";
      aar_id: string;
      result: "success" | "error" | "timeout" | "cancelled";
      result_hash?: string;
      spend_micros: number;
    }
  | {
      kind: "record.rated";
      aar_id: string;
      rating: "approved" | "flagged" | "rejected";
      note?: string;
      /** The API key that rated. */
      by: string;
    }
  | {
      kind: "approval.decided";
      aar_id: string;
      decision: "approved" | "denied" | "expired";
      /** Never on an expiry. */
      note?: string;
      /** The API key that decided; absent for an expiry. */
      by?: string;
    }
);

export type LogProofResult =
  | { valid: true; index: number; checkpoint: LogCheckpoint; entry: LogEntry }
  | { valid: false; error: ErrorInfo };

/** An older cosigned checkpoint and the consistency proof from it to the checkpoint a record's proofs lead to (a record proof answer's `cosigned`). */
export interface CosignedLink {
  /** The checkpoint note with the log's signature and the witnesses' cosignature lines. */
  checkpoint: string;
  /** RFC 6962 consistency proof hashes, standard base64. */
  consistency: string[];
}

export interface WitnessedProofOptions {
  /** The log the checkpoint must be of. */
  origin?: string;
  /** Unix seconds; default the JavaScript clock. */
  now?: number;
  /** The link a record proof answer carries when its checkpoint is not cosigned yet. */
  cosigned?: CosignedLink | null;
}

export type WitnessedLogProofResult =
  | {
      valid: true;
      index: number;
      /** The checkpoint the inclusion proof leads to. */
      checkpoint: LogCheckpoint;
      entry: LogEntry;
      /** Whether the policy was met by the linked, older checkpoint. */
      linked: boolean;
      /** The checkpoint that met the policy and the cosignatures that counted. */
      witnessed: { checkpoint: LogCheckpoint; cosigned_by: Cosigned[] };
    }
  | { valid: false; error: ErrorInfo };

/** A consistency proof between two trees, as `GET /v1/log/consistency` gives its hashes, with the roots the caller holds. */
export interface ConsistencyCheck {
  old_size: number;
  /** standard base64 */
  old_root: string;
  new_size: number;
  /** standard base64 */
  new_root: string;
  /** The proof's hashes, standard base64. */
  proof: string[];
}

export type ConsistencyResult = { valid: true } | { valid: false; error: ErrorInfo };

export type LogLeafResult = { ok: true; entry: LogEntry } | { ok: false; error: ErrorInfo };

/** The events Mandate sends as webhooks. */
export type WebhookEventType =
  | "record.denied"
  | "record.failed"
  | "record.rated"
  | "token.revoked"
  | "approval.requested"
  | "approval.decided"
  | "budget.threshold";

/** A webhook's payload (Standard Webhooks' `{ type, timestamp, data }`). */
export interface WebhookEvent {
  type: WebhookEventType;
  /** When the event happened: RFC 3339 in UTC with milliseconds (`2027-01-15T08:00:00.000Z`). */
  timestamp: string;
  /** The event's members; which ones depends on `type`. */
  data: Record<string, unknown>;
}

/**
 * A webhook checked: `id` is its `webhook-id`, the same on every retry of one event (remember it to process an event
 * once).
 */
export type WebhookResult =
  | { valid: true; id: string; event: WebhookEvent }
  | { valid: false; error: ErrorInfo };

/** Who vouches: a person of the organisation, by the id of the API key they vouched with, or an agent. */
export type TrustVoucher = { kind: "human"; key_id: string } | { kind: "agent"; agent_id: string };

/** One agent of an organisation, as the trust rule reads it. */
export interface TrustAgent {
  agent_id: string;
  /** Its combined reputation, in [0, 1]. */
  reputation: number;
  /** Unix seconds: its first token. */
  created_at: number;
  /** The `svc_human` of its first token. */
  creator: string;
  /** Unix seconds of its latest record. */
  last_active?: number;
  /** Whether some token of it was issued by a human (depth 0). */
  has_root: boolean;
  /** The agents whose tokens delegated to it. */
  delegators?: string[];
}

/** One active vouch. */
export interface TrustVouch {
  voucher: TrustVoucher;
  target: string;
  /** In (0, 1]. */
  weight: number;
  /** Unix seconds. */
  expires_at?: number;
}

export interface TrustGraph {
  agents: TrustAgent[];
  vouches?: TrustVouch[];
}

/** The rule's parameters; each left out takes its default. */
export interface TrustParams {
  /** d, default 0.85. */
  damping?: number;
  /** β, default 0.5. */
  reputation_weight?: number;
  /** Default 30. */
  half_life_days?: number;
  /** Default 7. */
  sybil_window_days?: number;
  /** Default 100. */
  max_iterations?: number;
  /** Default 1e-9. */
  tolerance?: number;
}

export interface TrustScoresOptions {
  /** Unix seconds; default the JavaScript clock. */
  now?: number;
  params?: TrustParams;
}

/** An agent's trust and its parts, each in [0, 1]. */
export interface TrustScore {
  trust: number;
  reputation: number;
  graph: number;
  decay: number;
  ceiling: number;
  /** Active vouches received, after sybil grouping. */
  vouchers: number;
}

export type TrustScoresResult = { scores: Record<string, TrustScore> } | { error: ErrorInfo };

export interface TrustStatementCheck {
  /** Unix seconds; default the JavaScript clock. */
  now?: number;
  /** Clock skew tolerated on `exp` and `iat`, default 60. */
  leewaySeconds?: number;
}

/** The claims of a signed trust statement. */
export interface TrustStatementClaims {
  iss: string;
  /** `agent:<agent_id>`. */
  sub: string;
  org: string;
  iat: number;
  exp: number;
  trust: number;
  reputation: number;
  graph: number;
  ceiling: number;
  /** When the score was computed (unix seconds). */
  computed_at: number;
}

export type TrustStatementResult =
  | { valid: true; claims: TrustStatementClaims }
  | { valid: false; error: ErrorInfo };
