//! Every number Mandate's rules depend on, named once. Host, wasm and the
//! documentation refer to these constants; nothing repeats their values.

/// Base trust of a token issued on an API key (assurance level L1).
pub const TRUST_L1: f64 = 0.4;
/// Base trust of a token issued on an OIDC sign-in (assurance level L2).
pub const TRUST_L2: f64 = 0.7;
/// Base trust of a token issued on biometric or provider verification (L3).
pub const TRUST_L3: f64 = 0.95;

/// Weight of the execution score in combined reputation.
pub const EXECUTION_WEIGHT: f64 = 0.6;
/// Weight of the feedback score in combined reputation.
pub const FEEDBACK_WEIGHT: f64 = 0.4;

/// Clock skew tolerated on `exp` and `nbf` unless the caller says otherwise.
pub const DEFAULT_LEEWAY_SECONDS: u64 = 60;
/// Compact tokens longer than this are refused before any decoding.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// Lifetime of a root token when the issuer names none.
pub const DEFAULT_TTL_SECONDS: u64 = 3600;
/// Shortest lifetime a token may be given.
pub const MIN_TTL_SECONDS: u64 = 1;
/// Longest lifetime a root token may be given (30 days).
pub const MAX_TTL_SECONDS: u64 = 30 * 24 * 3600;
/// Deepest delegation chain: a root at depth 0 and this many levels below it.
pub const MAX_DELEGATION_DEPTH: u32 = 8;

/// Most agents a walk up the agent registry passes (an agent, its parent,
/// and so on) before it gives up and refuses: registrations never form a
/// cycle, and no organisation nests its agents this deep.
pub const MAX_AGENT_TREE_DEPTH: usize = 1024;

/// Characters in a ULID.
pub const ULID_LEN: usize = 26;
/// Longest agent id.
pub const MAX_AGENT_ID_LEN: usize = 128;
/// Longest resource or resource pattern, `<namespace>:<name>` together.
pub const MAX_RESOURCE_LEN: usize = 256;
/// Longest namespace part of a resource.
pub const MAX_NAMESPACE_LEN: usize = 64;
/// Longest action name and framework name.
pub const MAX_NAME_LEN: usize = 64;
/// Most resources, actions or frameworks a scope or policy may list.
pub const MAX_LIST_LEN: usize = 64;

/// Money is held as whole micro-dollars: six decimal places, never rounded.
pub const MICROS_PER_USD: u64 = 1_000_000;
/// Largest amount accepted anywhere (one billion dollars); every micro-dollar
/// below it is exactly representable as a JSON number.
pub const MAX_USD: u64 = 1_000_000_000;
/// Largest `max_actions` a token may carry.
pub const MAX_ACTIONS_LIMIT: u64 = 1_000_000_000;

/// Most tokens one token may delegate to directly. Delegation needs the
/// `delegate` action, and each child counts against `max_actions` when the
/// chain sets one; this caps a chain that sets none.
pub const MAX_CHILDREN_PER_TOKEN: u64 = 1000;

/// How far a DPoP proof's `iat` may be from the verifier's clock, either way.
pub const DPOP_IAT_WINDOW_SECONDS: i64 = 60;
/// Compact DPoP proofs longer than this are refused before any decoding.
pub const MAX_PROOF_BYTES: usize = 8 * 1024;
/// Shortest `jti` of a DPoP proof: 16 base64url characters are 96 bits.
pub const MIN_PROOF_JTI_LEN: usize = 16;
/// Longest `jti` of a DPoP proof; verifiers remember each for the window.
pub const MAX_PROOF_JTI_LEN: usize = 128;

/// Longest URI accepted as an OAuth `client_id`, `redirect_uri` or
/// `resource`, in bytes.
pub const MAX_OAUTH_URI_BYTES: usize = 2048;
/// Largest client ID metadata document read, in bytes
/// (draft-ietf-oauth-client-id-metadata-document-01 §6.6: 5 KB).
pub const MAX_CLIENT_DOCUMENT_BYTES: usize = 5120;
/// Longest `client_name` of a client metadata document, in characters.
pub const MAX_CLIENT_NAME_CHARS: usize = 200;
/// Most redirect URIs a client metadata document may list.
pub const MAX_REDIRECT_URIS: usize = 16;
/// Shortest PKCE code verifier (RFC 7636 §4.1).
pub const MIN_CODE_VERIFIER_LEN: usize = 43;
/// Longest PKCE code verifier (RFC 7636 §4.1).
pub const MAX_CODE_VERIFIER_LEN: usize = 128;
/// Length of an S256 code challenge: 32 bytes in unpadded base64url
/// (RFC 7636 §4.2).
pub const S256_CHALLENGE_LEN: usize = 43;
/// Base32 characters of the digest an OAuth agent id keeps (100 bits).
pub const OAUTH_AGENT_CHARS: usize = 20;

/// Levels of the Merkle tree one tile spans (C2SP tlog-tiles).
pub const LOG_TILE_HEIGHT: u32 = 8;
/// Hashes in a full tile: 2^[`LOG_TILE_HEIGHT`].
pub const LOG_TILE_WIDTH: usize = 256;
/// Highest tile level a path may name (tlog-tiles: 0 to 63).
pub const MAX_TILE_LEVEL: u8 = 63;
/// Longest inclusion or consistency proof accepted, in hashes: a tree of up
/// to 2^64 leaves needs no more.
pub const MAX_PROOF_HASHES: usize = 64;
/// Most signatures a signed note may carry (signed-note asks verifiers to
/// accept at least 16).
pub const MAX_NOTE_SIGNATURES: usize = 100;
/// Longest signed note, in bytes.
pub const MAX_NOTE_BYTES: usize = 1024 * 1024;
/// Longest tlog-proof text: a note and a proof of the most hashes.
pub const MAX_TLOG_PROOF_BYTES: usize = MAX_NOTE_BYTES + 4096;
/// Longest add-checkpoint request body (C2SP tlog-witness): a note and
/// the old size line and consistency proof before it.
pub const MAX_ADD_CHECKPOINT_BYTES: usize = MAX_NOTE_BYTES + 4096;
/// Most consistency proof lines an add-checkpoint request may carry (C2SP
/// tlog-witness: "The client MUST NOT send more than 63").
pub const MAX_ADD_CHECKPOINT_PROOF_LINES: usize = 63;
/// How far in the future a cosignature's timestamp may be and still count
/// toward a witness policy: a witness's clock a minute ahead is tolerated,
/// as token lifetimes tolerate [`DEFAULT_LEEWAY_SECONDS`].
pub const COSIGNATURE_FUTURE_SKEW_SECONDS: i64 = 60;
/// Longest leaf: tlog-tiles entry bundles prefix each entry with a 16-bit
/// length.
pub const MAX_LEAF_BYTES: usize = 65_535;
/// Largest number a log entry may hold, 2^53 − 1: every integer up to it is
/// exact in JSON (I-JSON, RFC 7493) and written alike by JCS and plain
/// decimal.
pub const MAX_JSON_SAFE_INTEGER: u64 = (1 << 53) - 1;
/// Longest key id (`kid`) a log entry names.
pub const MAX_KID_LEN: usize = 128;
/// Longest note accepted with a rating, in characters.
pub const MAX_RATING_NOTE_CHARS: usize = 2048;
/// Longest note accepted with an approval's decision, in characters.
pub const MAX_APPROVAL_NOTE_CHARS: usize = 2048;
/// Longest revocation reason, in characters.
pub const MAX_REVOKE_REASON_CHARS: usize = 512;
/// Tokens per status list: a token's place in the deployment's sequence of
/// status entries is list `n = i / STATUS_LIST_SIZE`, offset
/// `i % STATUS_LIST_SIZE` (see [`crate::status_list::location`]). At one bit
/// per token a list is 8 KiB before compression.
pub const STATUS_LIST_SIZE: u64 = 65_536;
/// Longest status list URI a token may name.
pub const MAX_STATUS_URI_LEN: usize = 512;
/// Longest audience (`aud`) a token may carry, and longest OAuth `resource`
/// (RFC 8707) Mandate takes, in bytes.
pub const MAX_AUDIENCE_LEN: usize = 2048;
/// Largest status list index a token may carry: 2^53 - 1, the largest
/// integer JavaScript numbers hold exactly, so the SDK reads what the server
/// wrote.
pub const MAX_STATUS_INDEX: u64 = (1 << 53) - 1;
/// Compact status list tokens longer than this are refused before any
/// decoding. Mandate's own list, at worst (half its tokens revoked at
/// random), compresses to about 8 KiB, a token of 15 KB (`lst` is base64url
/// inside the base64url payload).
pub const MAX_STATUS_LIST_TOKEN_BYTES: usize = 64 * 1024;
/// The most bytes a status list may inflate to; a `lst` that would inflate
/// further is refused (a zip bomb) before more is allocated. 2^20 tokens at
/// 8 bits, the size of the largest test vectors of the IETF draft; Mandate's
/// own lists are 8 KiB.
pub const MAX_STATUS_LIST_BYTES: usize = 1 << 20;

/// Random bytes of a webhook signing secret Mandate makes: HMAC-SHA256's
/// output length, the shortest key RFC 2104 §3 recommends; Standard
/// Webhooks asks for 24 to 64.
pub const WEBHOOK_SECRET_BYTES: usize = 32;
/// Fewest bytes of a webhook secret accepted (Standard Webhooks: 24).
pub const MIN_WEBHOOK_SECRET_BYTES: usize = 24;
/// Most bytes of a webhook secret accepted (Standard Webhooks: 64, also
/// HMAC-SHA256's block, so no secret is hashed before use).
pub const MAX_WEBHOOK_SECRET_BYTES: usize = 64;
/// How far a webhook's `webhook-timestamp` may be from the receiver's clock,
/// either way, unless the receiver says otherwise: the five minutes of the
/// Standard Webhooks reference libraries.
pub const WEBHOOK_TOLERANCE_SECONDS: u64 = 300;
/// Longest `webhook-id` accepted.
pub const MAX_WEBHOOK_ID_LEN: usize = 128;
/// Longest webhook URL accepted, in bytes.
pub const MAX_WEBHOOK_URL_LEN: usize = 2048;
/// Longest description of a webhook, in characters.
pub const MAX_WEBHOOK_DESCRIPTION_CHARS: usize = 256;
/// Most entries of a webhook's list of event types.
pub const MAX_WEBHOOK_EVENTS: usize = 64;
/// Most webhooks one organisation may have: each is a delivery worker's
/// lease and a cursor that keeps its organisation's events until it has
/// them.
pub const MAX_WEBHOOKS_PER_ORG: u64 = 32;
/// How long a webhook's previous secret still signs deliveries after a
/// rotation (24 hours), so receivers can switch to the new one.
pub const WEBHOOK_ROTATION_OVERLAP_MS: i64 = 24 * 3600 * 1000;
/// The longest wait between two attempts at one webhook delivery (an
/// hour): retries double from the first delay up to this.
pub const WEBHOOK_MAX_RETRY_DELAY_MS: u64 = 3600 * 1000;
/// Most records one bulk rating (`POST /v1/vat/aar/feedback`) rates: one
/// transaction of the writer, each rating a leaf in the record log.
pub const MAX_BULK_RATINGS: usize = 1000;
/// Most records one batch (`POST /v1/vat/record/actions`) holds: one job of
/// the writer, committed in one transaction, each record a leaf in the
/// record log. The 64 KiB body cap usually binds first (about 300 records
/// naming their `vat_jti` with a result hash).
pub const MAX_BATCH_RECORDS: usize = 1000;

/// Lifetime of a signed trust statement when the server names none
/// ([`crate::trust_statement`]): trust moves, so a statement is short-lived.
pub const TRUST_STATEMENT_TTL_SECONDS: u64 = 300;
/// Longest lifetime a trust statement may be signed with or accepted at.
pub const MAX_TRUST_STATEMENT_TTL_SECONDS: u64 = 3600;
/// Compact trust statements longer than this are refused before any
/// decoding (a statement is about 500 bytes).
pub const MAX_TRUST_STATEMENT_BYTES: usize = 4 * 1024;

/// Deepest nesting of policy statements (`not`, `and`, `or`, `all`, `any`
/// each go one level down; a policy's own statements are level 1).
pub const MAX_POLICY_DEPTH: usize = 16;
/// Most statements in one policy, nested ones included.
pub const MAX_POLICY_STATEMENTS: usize = 64;
/// Most argument rules in one grant (`svc_constraints.args`).
pub const MAX_ARGS_RULES: usize = 32;
/// Largest a grant's argument rules may be, as RFC 8785 canonical JSON;
/// the same bound holds for an approval requirement's statements.
pub const MAX_ARGS_RULES_BYTES: usize = 4 * 1024;
/// Largest an attempt's arguments may be, as RFC 8785 canonical JSON.
pub const MAX_ARGS_BYTES: usize = 16 * 1024;
