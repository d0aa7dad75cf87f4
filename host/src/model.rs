//! The JSON bodies of the API: requests as clients send them (plain types,
//! unknown fields refused) and responses as Mandate answers. Field names are
//! exactly the spec's. Requests are checked and turned into core's types in
//! `api::input`.

pub mod authzen;
pub mod dashboard;
pub mod oauth;
pub mod trust;
pub mod webhooks;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Text forms of core's values, for the OpenAPI document only: each states
/// the rule core enforces, so generated clients and test tools know it.
#[allow(
    dead_code,
    reason = "these types only describe schemas; nothing builds them"
)]
pub mod forms {
    use utoipa::ToSchema;

    /// A bare agent id: 1–128 of `A-Z a-z 0-9 . _ -`, starting with a letter or digit.
    #[derive(Debug, ToSchema)]
    #[schema(value_type = String, pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]
    pub struct AgentId(String);

    /// An action: `a-z` first, then `a-z 0-9 _ . -`, at most 64.
    #[derive(Debug, ToSchema)]
    #[schema(value_type = String, pattern = r"^[a-z][a-z0-9_.-]{0,63}$")]
    pub struct Action(String);

    /// A resource, `<namespace>:<name>`: the name is printable ASCII without
    /// `*`, in segments separated by `/` or `:` (it may begin with `/`),
    /// none empty, `.` or `..`, and no `%2e`, `%2f` or `%3a`.
    #[derive(Debug, ToSchema)]
    #[schema(value_type = String, max_length = 256, pattern = r"^[a-z0-9][a-z0-9_.-]{0,63}:[!-)+-~]+$")]
    pub struct Resource(String);

    /// A resource; `<namespace>:*` for every resource of the namespace; or
    /// a prefix, `<namespace>:<prefix>/*` or `<namespace>:<prefix>:*`, for
    /// every resource whose name extends it (`crm:contact/*`).
    #[derive(Debug, ToSchema)]
    #[schema(value_type = String, max_length = 256, pattern = r"^[a-z0-9][a-z0-9_.-]{0,63}:(\*|[!-)+-~]+|[!-)+-~]*[/:]\*)$")]
    pub struct ResourcePattern(String);

    /// A compliance framework: `a-z 0-9 _ . -`, starting with a letter or digit.
    #[derive(Debug, ToSchema)]
    #[schema(value_type = String, pattern = r"^[a-z0-9][a-z0-9_.-]{0,63}$")]
    pub struct Framework(String);

    /// A token id, `vat_root_<ulid>` or `vat_del_<ulid>`.
    #[derive(Debug, ToSchema)]
    #[schema(value_type = String, pattern = r"^vat_(root|del)_[0-7][0-9a-hjkmnp-tv-z]{25}$")]
    pub struct Jti(String);

    /// A jti hash (`jth`): base64url SHA-256 of a jti, 43 characters. Lists,
    /// records, graphs and events name tokens by it; it names a token and
    /// acts as none.
    #[derive(Debug, ToSchema)]
    #[schema(value_type = String, pattern = r"^[A-Za-z0-9_-]{43}$")]
    pub struct Jth(String);

    /// A record id, `aar_<ulid>`.
    #[derive(Debug, ToSchema)]
    #[schema(value_type = String, pattern = r"^aar_[0-7][0-9a-hjkmnp-tv-z]{25}$")]
    pub struct AarId(String);

    /// A workflow id, `prov_<ulid>`.
    #[derive(Debug, ToSchema)]
    #[schema(value_type = String, pattern = r"^prov_[0-7][0-9a-hjkmnp-tv-z]{25}$")]
    pub struct ProvenanceRef(String);

    /// `sha256:` and 64 lowercase hex digits.
    #[derive(Debug, ToSchema)]
    #[schema(value_type = String, pattern = r"^sha256:[0-9a-f]{64}$")]
    pub struct Sha256Ref(String);

    /// An e-mail address: one `@` between non-empty parts, no spaces or
    /// control characters, at most 254 characters.
    #[derive(Debug, ToSchema)]
    #[schema(value_type = String, max_length = 254, pattern = r"^[^@\s\x00-\x1f\x7f-\x9f]+@[^@\s\x00-\x1f\x7f-\x9f]+$")]
    pub struct Email(String);

    /// How an action ended.
    #[derive(Debug, ToSchema)]
    #[schema(rename_all = "snake_case")]
    pub enum Outcome {
        Success,
        Error,
        Timeout,
        Cancelled,
    }

    /// The `result` filter of a record query: a result, `denied`,
    /// `pending` or `awaiting_approval`.
    #[derive(Debug, ToSchema)]
    #[schema(rename_all = "snake_case")]
    pub enum ResultFilter {
        Success,
        Error,
        Timeout,
        Cancelled,
        Denied,
        Pending,
        AwaitingApproval,
    }

    /// What a person decides on an approval.
    #[derive(Debug, ToSchema)]
    #[schema(rename_all = "snake_case")]
    pub enum Decision {
        Approve,
        Deny,
    }

    /// Where an approval stands.
    #[derive(Debug, ToSchema)]
    #[schema(rename_all = "snake_case")]
    pub enum ApprovalStatus {
        Pending,
        Approved,
        Denied,
        Expired,
    }

    /// An approval id, `apr_<ulid>`.
    #[derive(Debug, ToSchema)]
    #[schema(value_type = String, pattern = r"^apr_[0-7][0-9A-HJKMNP-TV-Z]{25}$")]
    pub struct ApprovalId(String);

    /// A human's rating.
    #[derive(Debug, ToSchema)]
    #[schema(rename_all = "snake_case")]
    pub enum Rating {
        Approved,
        Flagged,
        Rejected,
    }

    /// A holder's public Ed25519 key as a JWK (RFC 8037): the token is bound
    /// to it (RFC 9449), and every call made with the token carries a proof
    /// signed by it. `d` (the private key) is refused.
    #[derive(Debug, ToSchema)]
    pub struct HolderKey {
        /// `OKP`.
        #[schema(pattern = "^OKP$")]
        kty: String,
        /// `Ed25519`.
        #[schema(pattern = "^Ed25519$")]
        crv: String,
        /// The 32-byte public key, base64url.
        #[schema(pattern = r"^[A-Za-z0-9_-]{43}$")]
        x: String,
    }

    /// Free text without control characters other than tab and newline.
    #[derive(Debug, ToSchema)]
    #[schema(value_type = String, pattern = r"^[^\x00-\x08\x0b-\x1f\x7f-\x9f]*$")]
    pub struct Text(String);
}

/// Reads an optional whole number that JSON may write as `5` or `5.0` (one
/// number to JSON and JSON Schema); a fraction, a negative number or one
/// past 2^53 is refused.
fn whole_number<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u64>, D::Error> {
    use serde::de::Error as _;
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    if let Some(n) = number.as_u64() {
        return Ok(Some(n));
    }
    match number.as_f64() {
        Some(x) if x >= 0.0 && x.fract() == 0.0 && x <= 9_007_199_254_740_992.0 => {
            Ok(Some(x as u64))
        }
        _ => Err(D::Error::custom(format!(
            "invalid value: {number}, expected a whole number"
        ))),
    }
}

/// Reads an optional nested object. serde's derived structs also read a
/// positional list (`[1, 5]` as `{max_spend_usd: 1, max_actions: 5}`); the
/// API documents objects, so anything else is refused. The members are read
/// in place, so an error in one names it (`constraints.max_actions`).
fn object<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    use serde::de::value::MapAccessDeserializer;
    use serde::de::{Deserializer, MapAccess, Visitor};

    struct Object<T>(std::marker::PhantomData<T>);

    impl<'de, T: Deserialize<'de>> Visitor<'de> for Object<T> {
        type Value = Option<T>;

        fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
            formatter.write_str("a JSON object")
        }

        fn visit_none<E: serde::de::Error>(self) -> Result<Option<T>, E> {
            Ok(None)
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<Option<T>, E> {
            Ok(None)
        }

        fn visit_some<D2: Deserializer<'de>>(self, inner: D2) -> Result<Option<T>, D2::Error> {
            inner.deserialize_map(self)
        }

        fn visit_map<A: MapAccess<'de>>(self, members: A) -> Result<Option<T>, A::Error> {
            T::deserialize(MapAccessDeserializer::new(members)).map(Some)
        }
    }

    deserializer.deserialize_option(Object(std::marker::PhantomData))
}

/// A member that must be a JSON object (not null, not a list): see
/// [`object`].
fn required_object<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    object(deserializer)?
        .ok_or_else(|| serde::de::Error::custom("expected a JSON object, not null"))
}

/// Budget limits, as sent.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConstraintsBody {
    /// Most US dollars the token and its descendants may spend (≤ 6 decimals).
    #[schema(minimum = 0, maximum = 1_000_000_000, multiple_of = 0.000001)]
    pub max_spend_usd: Option<f64>,
    /// Most US dollars one act may spend, on its own (≤ 6 decimals):
    /// judged at `authorize`, `record/action` and a completion reporting
    /// more than was reserved. A delegation keeps its parent's and may
    /// only lower it.
    #[schema(minimum = 0, maximum = 1_000_000_000, multiple_of = 0.000001)]
    pub max_spend_per_action_usd: Option<f64>,
    /// Most actions the token and its descendants may be authorized for.
    #[schema(minimum = 0, maximum = 1_000_000_000)]
    #[serde(default, deserialize_with = "whole_number")]
    pub max_actions: Option<u64>,
    /// Actions that need a human's approval before they are done. A
    /// delegation that leaves it out inherits its parent's; one that sets
    /// it adds to the parent's and may only lower the threshold.
    pub require_approval: Option<ApprovalRequirementBody>,
    /// The least trust (`GET /v1/trust/agents/{agent_id}`) the agent must
    /// hold to act with the token: below it, `authorize` and
    /// `record/action` refuse with a denied record, `trust_too_low`. A
    /// delegation keeps its parent's and may only raise it.
    #[schema(minimum = 0, maximum = 1)]
    pub min_trust: Option<f64>,
    /// Argument rules (DESIGN §15): 1 to 32 rules `{actions?, resources?,
    /// pol}`, at most 4 KiB as canonical JSON with
    /// `require_approval.args`. An attempt a rule applies to (its action
    /// listed, absent: every action; its resource covered by a pattern,
    /// absent: every resource) is permitted only when every statement of
    /// `pol` (UCAN 1.0's policy language, judged in three-valued logic)
    /// is true of its `args`. A delegation that leaves it out inherits its
    /// parent's rules; one that sets it keeps each of them unchanged and
    /// may add rules.
    #[schema(value_type = Option<Vec<Object>>, min_items = 1, max_items = 32)]
    pub args: Option<mandate_core::StrictJson>,
}

/// When an action needs a human's approval: any member matching is enough;
/// at least one member.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequirementBody {
    /// These actions always need approval.
    #[schema(value_type = Option<Vec<forms::Action>>, min_items = 1, max_items = 64)]
    pub actions: Option<Vec<String>>,
    /// Resources these patterns cover always need approval.
    #[schema(value_type = Option<Vec<forms::ResourcePattern>>, min_items = 1, max_items = 64)]
    pub resources: Option<Vec<String>>,
    /// Spending strictly more than this needs approval.
    #[schema(minimum = 0, maximum = 1_000_000_000, multiple_of = 0.000001)]
    pub spend_over_usd: Option<f64>,
    /// Statements over the attempt's `args` (UCAN 1.0's policy language):
    /// when they all hold, or are undefined (a member missing, `args` left
    /// out), the attempt needs approval. A delegation keeps the parent's
    /// unchanged.
    #[schema(value_type = Option<Vec<Value>>, min_items = 1)]
    pub args: Option<mandate_core::StrictJson>,
}

/// Policy assertions, as sent.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyBody {
    /// Compliance frameworks (`hipaa`, `gdpr`, `soc2`, …).
    #[schema(value_type = Vec<forms::Framework>, max_items = 64)]
    pub frameworks: Vec<String>,
}

/// `POST /v1/vat/issue/l1`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IssueL1Request {
    #[schema(value_type = forms::Email)]
    pub developer_email: String,
    #[schema(value_type = forms::AgentId)]
    pub agent_id: String,
    #[schema(value_type = Vec<forms::ResourcePattern>, min_items = 1, max_items = 64)]
    pub resources: Vec<String>,
    #[schema(value_type = Vec<forms::Action>, min_items = 1, max_items = 64)]
    pub actions: Vec<String>,
    #[serde(default, deserialize_with = "object")]
    pub constraints: Option<ConstraintsBody>,
    #[serde(default, deserialize_with = "object")]
    pub policy: Option<PolicyBody>,
    /// Lifetime in seconds (default 3600, at most 2592000).
    #[schema(minimum = 1, maximum = 2_592_000)]
    #[serde(default, deserialize_with = "whole_number")]
    pub ttl_seconds: Option<u64>,
    /// Binds the token to this public key (RFC 9449 DPoP).
    #[schema(value_type = Option<forms::HolderKey>)]
    #[serde(default, deserialize_with = "object")]
    pub holder_key: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `POST /v1/vat/issue/l2`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IssueL2Request {
    /// An OIDC ID token from a configured identity provider.
    #[schema(max_length = 16384)]
    pub id_token: String,
    /// The nonce the ID token must carry, when the sign-in used one.
    #[schema(value_type = Option<forms::Text>, max_length = 1024)]
    pub nonce: Option<String>,
    #[schema(value_type = forms::AgentId)]
    pub agent_id: String,
    #[schema(value_type = Vec<forms::ResourcePattern>, min_items = 1, max_items = 64)]
    pub resources: Vec<String>,
    #[schema(value_type = Vec<forms::Action>, min_items = 1, max_items = 64)]
    pub actions: Vec<String>,
    #[serde(default, deserialize_with = "object")]
    pub constraints: Option<ConstraintsBody>,
    #[serde(default, deserialize_with = "object")]
    pub policy: Option<PolicyBody>,
    #[schema(minimum = 1, maximum = 2_592_000)]
    #[serde(default, deserialize_with = "whole_number")]
    pub ttl_seconds: Option<u64>,
    /// Binds the token to this public key (RFC 9449 DPoP).
    #[schema(value_type = Option<forms::HolderKey>)]
    #[serde(default, deserialize_with = "object")]
    pub holder_key: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `POST /v1/vat/auth/capture`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CaptureRequest {
    /// The captured verification data, or a provider's result
    /// (`{"attestation": "<JWS>"}` for provider verifiers).
    #[schema(value_type = Object)]
    pub evidence: serde_json::Map<String, serde_json::Value>,
    /// The name of a configured verifier.
    #[schema(min_length = 1, max_length = 128)]
    pub verifier: String,
    #[schema(value_type = forms::AgentId)]
    pub agent_id: String,
    #[schema(value_type = Vec<forms::ResourcePattern>, min_items = 1, max_items = 64)]
    pub resources: Vec<String>,
    #[schema(value_type = Vec<forms::Action>, min_items = 1, max_items = 64)]
    pub actions: Vec<String>,
    #[serde(default, deserialize_with = "object")]
    pub constraints: Option<ConstraintsBody>,
    #[serde(default, deserialize_with = "object")]
    pub policy: Option<PolicyBody>,
    #[schema(minimum = 1, maximum = 2_592_000)]
    #[serde(default, deserialize_with = "whole_number")]
    pub ttl_seconds: Option<u64>,
    /// Binds the token to this public key (RFC 9449 DPoP).
    #[schema(value_type = Option<forms::HolderKey>)]
    #[serde(default, deserialize_with = "object")]
    pub holder_key: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A newly issued token.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct IssuedToken {
    pub jti: String,
    pub provenance_ref: String,
    pub compact_jwt: String,
    /// `Bearer`, or `DPoP` for a token bound to a holder key: the
    /// `Authorization` scheme to send it with (RFC 9449 §5).
    pub token_type: String,
    /// The token's claims, as signed.
    #[schema(value_type = Object)]
    pub claims: serde_json::Value,
    pub expires_at: String,
    pub delegation_depth: u32,
    /// The parent's `delegate` record (delegated tokens only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aar_id: Option<String>,
}

/// `POST /v1/vat/record/action`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordActionRequest {
    /// The token's jti; may be left out when a Bearer token is sent.
    #[schema(value_type = forms::Jti, required = true)]
    pub vat_jti: Option<String>,
    #[schema(value_type = forms::Action)]
    pub action: String,
    #[schema(value_type = forms::Resource)]
    pub resource: String,
    /// `success`, `error`, `timeout` or `cancelled`.
    #[schema(value_type = forms::Outcome)]
    pub result: String,
    /// `sha256:<64 hex>` of the result.
    #[schema(value_type = Option<forms::Sha256Ref>)]
    pub result_hash: Option<String>,
    /// US dollars spent by the action (≤ 6 decimals).
    #[schema(minimum = 0, maximum = 1_000_000_000, multiple_of = 0.000001)]
    pub spend_usd: Option<f64>,
    /// The arguments of the act (a JSON object, at most 16 KiB as RFC 8785
    /// canonical JSON; no member named twice, every number within
    /// ±(2^53 − 1)), judged against the argument rules of the token's
    /// chain. The record keeps their `args_hash`.
    #[schema(value_type = Option<Object>)]
    pub args: Option<mandate_core::StrictJson>,
}

/// A recorded action.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RecordActionResponse {
    pub recorded: bool,
    pub aar_id: String,
    pub provenance_ref: String,
    pub trust_score: f64,
    /// The trust in force the act was judged with: the minimum over the
    /// agents of the token's chain (an agent with no history of its own
    /// counting as its delegator's), beside the spec's `trust_score`, the
    /// token's base trust. Absent when judging stopped before trust.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_in_force: Option<f64>,
    pub delegation_depth: u32,
}

/// `POST /v1/vat/record/actions`: many `record/action` requests in one
/// call, recorded in this order and committed together.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordActionsRequest {
    /// 1 to 1000 records, each as `record/action` takes it (within the
    /// 64 KiB body). With the token presented a record may leave
    /// `vat_jti` out, and one naming another token is refused alone.
    #[schema(min_items = 1, max_items = 1000)]
    pub records: Vec<RecordActionRequest>,
}

/// The answer to a batch that was committed: one result per record, in the
/// order sent.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RecordActionsResponse {
    pub results: Vec<RecordActionResult>,
}

/// What came of one record of a batch: recorded, or refused with the
/// problem `record/action` would have answered for it alone.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum RecordActionResult {
    Recorded(RecordedAction),
    Refused(RefusedAction),
}

/// `recorded: true`, as a schema: generated clients tell the two results
/// apart by it.
fn recorded_true() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Boolean)
        .enum_values(Some([true]))
        .build()
}

/// `recorded: false`, as a schema.
fn recorded_false() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Boolean)
        .enum_values(Some([false]))
        .build()
}

/// A record of a batch, recorded: what `record/action` answers with 201.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RecordedAction {
    /// The record's position in the request, from 0.
    pub index: u32,
    #[schema(schema_with = recorded_true)]
    pub recorded: bool,
    pub aar_id: String,
    pub provenance_ref: String,
    pub trust_score: f64,
    /// The trust in force the act was judged with: the minimum over the
    /// agents of the token's chain (an agent with no history of its own
    /// counting as its delegator's), beside the spec's `trust_score`, the
    /// token's base trust. Absent when judging stopped before trust.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_in_force: Option<f64>,
    pub delegation_depth: u32,
}

/// A record of a batch, refused: the status, code and detail of the problem
/// `record/action` answers for it alone, with the denied record's `aar_id`
/// when one was written (out of scope, over budget, `approval_required`, an
/// inactive token).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RefusedAction {
    /// The record's position in the request, from 0.
    pub index: u32,
    #[schema(schema_with = recorded_false)]
    pub recorded: bool,
    /// The HTTP status the record alone would have been answered with.
    pub status: u16,
    /// Stable snake_case code, as in a problem body.
    pub code: String,
    pub detail: String,
    /// The denied record written for this refusal, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aar_id: Option<String>,
}

/// `POST /v1/vat/authorize`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthorizeRequest {
    #[schema(value_type = forms::Jti, required = true)]
    pub vat_jti: Option<String>,
    #[schema(value_type = forms::Action)]
    pub action: String,
    #[schema(value_type = forms::Resource)]
    pub resource: String,
    /// US dollars to reserve against the budget.
    #[schema(minimum = 0, maximum = 1_000_000_000, multiple_of = 0.000001)]
    pub spend_usd: Option<f64>,
    /// The arguments of the act (a JSON object, at most 16 KiB as RFC 8785
    /// canonical JSON; no member named twice, every number within
    /// ±(2^53 − 1)), judged against the argument rules of the token's
    /// chain. The record keeps their `args_hash`.
    #[schema(value_type = Option<Object>)]
    pub args: Option<mandate_core::StrictJson>,
}

/// The answer to a pre-flight check.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AuthorizeResponse {
    pub authorized: bool,
    pub aar_id: String,
    pub trust_score: f64,
    /// The trust in force the act was judged with: the minimum over the
    /// agents of the token's chain (an agent with no history of its own
    /// counting as its delegator's), beside the spec's `trust_score`, the
    /// token's base trust. Absent when judging stopped before trust.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_in_force: Option<f64>,
    pub provenance_ref: String,
    pub human_ref: String,
    pub assurance_level: String,
    /// Why not, when `authorized` is false and no approval is awaited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Which argument rule and statement refused the arguments
    /// (`args_required`, `args_not_permitted`), in words: told only to a
    /// caller who presented the token itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_detail: Option<String>,
    /// The approval the action waits for (answered 202): a grant requires
    /// a human's yes first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalRef>,
}

/// A delegation waiting for a human's approval (answered 202): once it
/// is approved, the same request repeated with the same `Idempotency-Key`
/// returns the child token.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DelegationAwaitingApproval {
    /// The `delegate` record, `awaiting_approval`.
    pub aar_id: String,
    pub approval: ApprovalRef,
}

/// The approval an authorized action waits for.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ApprovalRef {
    #[schema(value_type = forms::ApprovalId)]
    pub approval_id: String,
    #[schema(value_type = forms::ApprovalStatus)]
    pub status: String,
    pub expires_at: String,
}

/// An approval, with what the agent asks to do and the chain it acts for.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ApprovalBody {
    #[schema(value_type = forms::ApprovalId)]
    pub approval_id: String,
    /// The record waiting; left out while its `aar_id` completes it (a
    /// record made with a bare `vat_jti`, not yet completed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aar_id: Option<String>,
    #[schema(value_type = forms::ApprovalStatus)]
    pub status: String,
    /// `agent:<agent_id>` of the agent asking.
    pub agent_id: String,
    pub provenance_ref: String,
    pub action: String,
    pub resource: String,
    /// What the action would spend (reserved while it waits).
    pub spend_usd: f64,
    pub delegation_depth: u32,
    pub human_ref: String,
    pub assurance_level: String,
    /// The agents of the chain, root first, the asking agent last.
    pub chain: Vec<ChainLink>,
    /// The record's status now: `awaiting_approval`, then `pending` (and
    /// on) or `denied`.
    pub record_status: String,
    pub requested_at: String,
    pub expires_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    /// The API key that decided (absent for an expiry).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// `sha256:` of the RFC 8785 canonical JSON of the arguments the act
    /// was attempted with (absent without arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<forms::Sha256Ref>)]
    pub args_hash: Option<String>,
    /// The arguments as kept: `[records] redact_args` values replaced by
    /// `"[redacted]"`; absent when none were given, or not kept
    /// (`[records] keep_args = false`, once no approval waits on them).
    /// Attacker-controlled text: show it as text, never as markup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub args: Option<serde_json::Value>,
}

/// One token of a chain.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ChainLink {
    /// `agent:<agent_id>`.
    pub agent_id: String,
    pub delegation_depth: u32,
}

/// A page of approvals, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ApprovalPage {
    pub approvals: Vec<ApprovalBody>,
    /// Pass back as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `POST /v1/vat/approvals/{approval_id}/decision`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    #[schema(value_type = forms::Decision)]
    pub decision: String,
    /// Why, for the record (at most 2048 characters).
    #[schema(value_type = Option<forms::Text>, max_length = 2048)]
    pub note: Option<String>,
}

/// `POST /v1/vat/aar/{aar_id}/complete`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteRequest {
    #[schema(value_type = forms::Outcome)]
    pub result: String,
    #[schema(value_type = Option<forms::Sha256Ref>)]
    pub result_hash: Option<String>,
    /// The actual spend; replaces the amount reserved at authorize.
    #[schema(minimum = 0, maximum = 1_000_000_000, multiple_of = 0.000001)]
    pub spend_usd: Option<f64>,
}

/// `POST /v1/vat/aar/{aar_id}/feedback`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FeedbackRequest {
    /// `approved`, `flagged` or `rejected`.
    #[schema(value_type = forms::Rating)]
    pub rating: String,
    /// Free text, at most 2 KiB.
    #[schema(value_type = Option<forms::Text>, max_length = 2048)]
    pub note: Option<String>,
}

/// A rating, as set.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct FeedbackResponse {
    pub aar_id: String,
    pub rating: String,
    pub feedback_at: String,
}

/// An action record, in full.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RecordBody {
    /// The record's id. Left out of lists, graphs and approvals while it
    /// completes the record — one made with a bare `vat_jti`, pending or
    /// awaiting approval: then only the agent that made it (the
    /// `authorize` answer) and whoever names it are shown it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aar_id: Option<String>,
    pub provenance_ref: String,
    /// The jti hash of the token the record was made with (a jti is shown
    /// only to whoever receives the token).
    #[schema(value_type = forms::Jth)]
    pub jth: String,
    pub agent_id: String,
    pub action: String,
    pub resource: String,
    /// `pending`, `completed` or `denied`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deny_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_hash: Option<String>,
    pub spend_usd: f64,
    pub trust_score: f64,
    /// The trust in force the record was judged with: the minimum over the
    /// agents of the token's chain (an agent with no history of its own
    /// counting as its delegator's), beside the spec's `trust_score`, the
    /// token's base trust. Absent when judging stopped before trust, and for records made
    /// before schema 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_in_force: Option<f64>,
    pub delegation_depth: u32,
    pub human_ref: String,
    pub assurance_level: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rating: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback_at: Option<String>,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    /// The jti hash of the child token, for `delegate` records.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<forms::Jth>)]
    pub delegated_jth: Option<String>,
    /// What the agent proved it held: `token` (the token itself, with its
    /// proof when bound) or `jti` (a bare `vat_jti`, which proves nothing).
    pub credential: String,
    /// `sha256:` of the RFC 8785 canonical JSON of the arguments the act
    /// was attempted with (absent without arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<forms::Sha256Ref>)]
    pub args_hash: Option<String>,
    /// The arguments as kept: `[records] redact_args` values replaced by
    /// `"[redacted]"`; absent when none were given, or not kept
    /// (`[records] keep_args = false`, once no approval waits on them).
    /// Attacker-controlled text: show it as text, never as markup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub args: Option<serde_json::Value>,
    /// The call that made the record: `authorize`, `record_action`,
    /// `delegate`, `evaluation` (an AuthZEN evaluation by a gateway:
    /// permitted and completed in one step, or denied, or awaiting
    /// approval), or `unknown` (made before the origin was stored).
    pub origin: String,
}

/// A page of records, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RecordPage {
    pub records: Vec<RecordBody>,
    /// Pass back as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The counts reputation is computed from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
pub struct ReputationCountsBody {
    pub successes: u64,
    pub failures: u64,
    pub pending: u64,
    /// Records denied at `authorize` (the pre-flight check) or by an
    /// approval's decision (denied or expired): they count towards
    /// `total_actions` only.
    pub denied_requests: u64,
    pub approved: u64,
    pub flagged: u64,
    pub rejected: u64,
}

/// An agent's reputation (spec 2.3) with its counts.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ReputationBody {
    /// `agent:<agent_id>`.
    pub agent_id: String,
    pub total_actions: u64,
    pub execution_score: f64,
    pub feedback_score: f64,
    pub combined_reputation: f64,
    pub has_human_feedback: bool,
    pub counts: ReputationCountsBody,
}

/// Every action of a workflow, counted (spec 2.4).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SummaryBody {
    pub provenance_ref: String,
    pub total_records: u64,
    pub unique_agents: u64,
    pub actions_by_type: BTreeMap<String, u64>,
    pub results_by_type: BTreeMap<String, u64>,
}

/// `POST /v1/vat/delegate`, made with the parent token itself
/// (`Authorization: Bearer`, or `DPoP` with its proof when bound).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DelegateRequest {
    /// The parent token's jti, if given, must be the presented token's.
    #[schema(value_type = Option<forms::Jti>)]
    pub vat_jti: Option<String>,
    #[schema(value_type = forms::AgentId)]
    pub agent_id: String,
    #[schema(value_type = Vec<forms::ResourcePattern>, min_items = 1, max_items = 64)]
    pub resources: Vec<String>,
    #[schema(value_type = Vec<forms::Action>, min_items = 1, max_items = 64)]
    pub actions: Vec<String>,
    #[serde(default, deserialize_with = "object")]
    pub constraints: Option<ConstraintsBody>,
    #[serde(default, deserialize_with = "object")]
    pub policy: Option<PolicyBody>,
    /// Lifetime in seconds; by default the child ends with its parent.
    #[schema(minimum = 1, maximum = 2_592_000)]
    #[serde(default, deserialize_with = "whole_number")]
    pub ttl_seconds: Option<u64>,
    /// Binds the child to this public key (RFC 9449 DPoP); without it, a
    /// child of a bound token is bound to its parent's key.
    #[schema(value_type = Option<forms::HolderKey>)]
    #[serde(default, deserialize_with = "object")]
    pub holder_key: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `POST /v1/vat/revoke`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeRequest {
    /// The token to revoke, with every descendant, by its jti (as its
    /// holder was given it)…
    #[schema(value_type = Option<forms::Jti>)]
    pub jti: Option<String>,
    /// …or by its jti hash (as lists, records and events show it): exactly
    /// one of the two.
    #[schema(value_type = Option<forms::Jth>)]
    pub jth: Option<String>,
    #[schema(value_type = Option<forms::Text>, max_length = 512)]
    pub reason: Option<String>,
    /// When an agent revokes with its token, that token's jti, if given;
    /// it must be the presented token's.
    #[schema(value_type = Option<forms::Jti>)]
    pub vat_jti: Option<String>,
}

/// The tokens a revocation ended.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RevokeResponse {
    /// The jti hashes of the revoked token and its descendants: every
    /// one, or the first 1000 when `truncated` (the rest:
    /// `GET /v1/vat/tokens/{jth}`).
    #[schema(value_type = Vec<forms::Jth>)]
    pub revoked: Vec<String>,
    /// How many tokens the revocation covers.
    pub revoked_count: u64,
    pub truncated: bool,
    pub revoked_at: String,
}

/// A descendant in a token status.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TokenSummary {
    #[schema(value_type = forms::Jth)]
    pub jth: String,
    pub agent_id: String,
    /// The parent's jti hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<forms::Jth>)]
    pub parent: Option<String>,
    pub delegation_depth: u32,
    /// `active`, `revoked` or `expired`.
    pub status: String,
}

/// The status of a token and its descendants.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TokenStatus {
    #[schema(value_type = forms::Jth)]
    pub jth: String,
    /// `active`, `revoked` or `expired`.
    pub status: String,
    pub agent_id: String,
    /// The parent's jti hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<forms::Jth>)]
    pub parent: Option<String>,
    pub delegation_depth: u32,
    pub provenance_ref: String,
    pub issued_at: String,
    pub expires_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoke_reason: Option<String>,
    /// The token's constraints as it carries them (`svc_constraints`): a
    /// delegated token's include what it inherited. Absent when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<ConstraintsBody>)]
    pub constraints: Option<mandate_core::Constraints>,
    /// A page of the token's descendants, by depth, then issue time.
    pub descendants: Vec<TokenSummary>,
    /// Pass back as `cursor` for the next page of descendants; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A workflow in the list of recent workflows.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkflowBody {
    pub provenance_ref: String,
    /// The jti hash of the workflow's root token.
    #[schema(value_type = forms::Jth)]
    pub root_jth: String,
    pub root_agent_id: String,
    pub human_ref: String,
    /// What the organisation knows the human by, when it knows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub human_label: Option<String>,
    pub assurance_level: String,
    pub total_records: u64,
    pub created_at: String,
    pub last_activity: String,
}

/// A page of workflows, most recently active first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkflowPage {
    pub workflows: Vec<WorkflowBody>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A node of a workflow graph: the human, a token, or a record.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct GraphNode {
    pub id: String,
    /// `human`, `token` or `record`.
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub human_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assurance_level: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegation_depth: Option<u32>,
    /// Token: `active`/`revoked`/`expired`; record: `pending`/`completed`/`denied`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deny_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rating: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

/// An edge of a workflow graph.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct GraphEdge {
    pub from: String,
    pub to: String,
    /// `issued` (human → root), `delegated` (parent → child), `action` (token → record).
    pub kind: String,
}

/// The execution graph of one workflow.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct GraphBody {
    pub provenance_ref: String,
    pub human_ref: String,
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
    /// Whether records (the oldest) or tokens (the deepest) were left out
    /// because there are more than `limit` of them.
    pub truncated: bool,
}

/// A consistency proof between two sizes of the record log (RFC 6962).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConsistencyBody {
    pub old: u64,
    pub new: u64,
    /// The proof's hashes, standard base64, in RFC 6962 order.
    pub proof: Vec<String>,
}

/// One event of a record in the record log.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LogEventBody {
    /// `record.created`, `record.completed` or `record.rated`.
    pub kind: String,
    /// The leaf's index in the log.
    pub index: u64,
    /// The leaf's bytes (RFC 8785 canonical JSON), standard base64.
    pub leaf: String,
    /// A C2SP `tlog-proof@v1`: the index, the inclusion proof and the
    /// signed checkpoint.
    pub proof: String,
}

/// A record's events in the record log, each proven against one
/// checkpoint.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RecordProofBody {
    pub aar_id: String,
    /// The log's name, the first line of its checkpoints.
    pub origin: String,
    /// The signed checkpoint (C2SP `tlog-checkpoint`) every proof leads
    /// to, with the witnesses' cosignatures (C2SP `tlog-cosignature`)
    /// gathered for it so far.
    pub checkpoint: String,
    pub events: Vec<LogEventBody>,
    /// With `[log] witnesses`, when `checkpoint` is not yet cosigned by
    /// `witness_threshold` of them: the newest checkpoint that is, and the
    /// consistency proof from it to `checkpoint`, so a verifier holding a
    /// witness policy can check a fresh proof. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cosigned: Option<CosignedLinkBody>,
}

/// An older, cosigned checkpoint and the RFC 6962 consistency proof from it
/// to a newer one.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CosignedLinkBody {
    /// The checkpoint, signed by the log and cosigned by the witnesses.
    pub checkpoint: String,
    /// Consistency proof hashes from its size to the newer checkpoint's,
    /// standard base64.
    pub consistency: Vec<String>,
}

/// `GET /healthz` and `GET /readyz`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Health {
    pub status: String,
}

/// An organisation's quotas; `null` is no limit.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuotasBody {
    /// Records (allowed, denied and pending alike) per UTC day.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1_000_000_000_000_i64)]
    pub records_per_day: Option<u64>,
    /// Tokens neither revoked nor expired.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1_000_000_000_000_i64)]
    pub tokens_outstanding: Option<u64>,
}

/// `POST /v1/orgs`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateOrgRequest {
    /// 1–64 of `a-z 0-9 . _ -`, starting with a letter or digit; unique.
    #[schema(pattern = r"^[a-z0-9][a-z0-9._-]{0,63}$")]
    pub name: String,
    /// The e-mail of the first owner key, if it has one.
    #[serde(default)]
    #[schema(format = Email)]
    pub owner_email: Option<String>,
    #[serde(default, deserialize_with = "object")]
    pub quotas: Option<QuotasBody>,
}

/// `PATCH /v1/orgs/{org_id}`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateOrgRequest {
    /// The quotas from now on (both replaced).
    #[serde(deserialize_with = "required_object")]
    pub quotas: QuotasBody,
}

/// An organisation.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct OrgBody {
    pub org_id: String,
    pub name: String,
    pub created_at: String,
    pub quotas: QuotasBody,
}

/// An organisation as a key names it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct OrgRef {
    pub org_id: String,
    pub name: String,
}

/// A page of organisations, oldest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct OrgPage {
    pub orgs: Vec<OrgBody>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `POST /v1/keys`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateKeyRequest {
    /// `owner`, `developer`, `reviewer`, `auditor` or `gateway`.
    #[schema(pattern = "^(owner|developer|reviewer|auditor|gateway)$")]
    pub role: String,
    /// Whose key it is; required for a developer, who issues tokens only for
    /// this address.
    #[serde(default)]
    #[schema(format = Email)]
    pub email: Option<String>,
}

/// A key just made: the only answer that holds the key itself.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct IssuedKeyBody {
    pub key_id: String,
    /// `mk_…`: shown once; store it now.
    pub api_key: String,
    pub role: String,
    pub email: Option<String>,
    pub created_at: String,
}

/// An organisation created, with its first owner key.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct OrgCreatedBody {
    pub org: OrgBody,
    pub owner_key: IssuedKeyBody,
}

/// An API key as listed (never the key itself).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct KeyBody {
    pub key_id: String,
    pub role: String,
    pub email: Option<String>,
    /// The deployment's admin key.
    pub admin: bool,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// The keys of the caller's organisation, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct KeyList {
    pub keys: Vec<KeyBody>,
}

/// `GET /v1/me`: the key a request is made with.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MeBody {
    pub key_id: String,
    pub email: Option<String>,
    pub role: String,
    /// The deployment's admin key, which also manages organisations.
    pub admin: bool,
    /// What the role allows: `read`, `issue`, `issue_for_anyone`, `rate`,
    /// `revoke`, `manage_keys`, `decide`, `manage_webhooks`, `vouch`,
    /// `evaluate`, `manage_clients`.
    pub permissions: Vec<String>,
    pub org: OrgRef,
}
