//! The title of every problem code, written for people: what went wrong,
//! the same for every problem of that code (RFC 9457 §3.1.3); the detail
//! says what happened this time. The table covers every code core and the
//! host define, not only those the API sends today, so a code that starts
//! reaching clients already has its title; a test holds it to the source
//! both ways.

/// Codes and their titles, sorted by code.
#[rustfmt::skip]
const TITLES: &[(&str, &str)] = &[
    ("action_not_held",              "Action not held by the parent"),
    ("action_not_permitted",         "Action not permitted"),
    ("admin_key",                    "The admin key is revoked by its operator"),
    ("admin_required",               "Only the admin key may do this"),
    ("agent_not_found",              "Agent not found"),
    ("already_completed",            "Record already completed"),
    ("already_rated",                "Record already rated"),
    ("amount_negative",              "Negative amount"),
    ("amount_not_finite",            "Amount is not a finite number"),
    ("amount_too_large",             "Amount too large"),
    ("amount_too_precise",           "Amount has more than six decimal places"),
    ("attestation_bad_signature",    "Attestation signature does not verify"),
    ("attestation_expired",          "Attestation expired"),
    ("attestation_invalid",          "Attestation not readable"),
    ("attestation_issued_in_future", "Attestation issued in the future"),
    ("attestation_missing_claim",    "Attestation lacks a required claim"),
    ("attestation_too_old",          "Attestation too old"),
    ("attestation_unknown_key",      "Attestation signed with an unknown key"),
    ("attestation_wrong_audience",   "Attestation for another audience"),
    ("attestation_wrong_issuer",     "Attestation from another issuer"),
    ("binding_dropped",              "Child token lost its parent's key binding"),
    ("broken_link",                  "Broken delegation chain"),
    ("budget_max_actions",           "Action budget spent"),
    ("budget_max_spend_usd",         "Spending budget exceeded"),
    ("chain_empty",                  "Empty delegation chain"),
    ("chain_too_long",               "Delegation chain too long"),
    ("claims_not_serializable",      "Claims cannot be serialised"),
    ("constraint_dropped",           "Constraint dropped by the delegation"),
    ("constraint_raised",            "Constraint raised above the parent's"),
    ("control_character",            "Text contains a control character"),
    ("delegate_not_held",            "Token may not delegate"),
    ("delegation_too_deep",          "Delegation too deep"),
    ("dpop_ath_mismatch",            "Proof made for another token"),
    ("dpop_from_future",             "Proof dated in the future"),
    ("dpop_invalid",                 "Proof of possession refused"),
    ("dpop_invalid_jti",             "Proof has an unusable jti"),
    ("dpop_invalid_key",             "Proof carries an unusable key"),
    ("dpop_invalid_signature",       "Proof signature does not verify"),
    ("dpop_invalid_typ",             "Proof has the wrong type"),
    ("dpop_invalid_url",             "Proof names an unusable URL"),
    ("dpop_key_mismatch",            "Proof signed by another key"),
    ("dpop_malformed",               "Malformed proof of possession"),
    ("dpop_malformed_claims",        "Malformed proof claims"),
    ("dpop_malformed_header",        "Malformed proof header"),
    ("dpop_method_mismatch",         "Proof made for another method"),
    ("dpop_missing_ath",             "Proof lacks the token hash"),
    ("dpop_not_bound",               "Token is not bound to a key"),
    ("dpop_replayed",                "Proof already used"),
    ("dpop_required",                "Proof of possession required"),
    ("dpop_stale",                   "Proof too old"),
    ("dpop_too_large",               "Proof too large"),
    ("dpop_unsupported_alg",         "Proof algorithm not supported"),
    ("dpop_url_mismatch",            "Proof made for another URL"),
    ("duplicate_claim",              "Token repeats a claim"),
    ("duplicate_entry",              "List repeats an entry"),
    ("duplicate_kid",                "Key set repeats a key id"),
    ("email_mismatch",               "API key belongs to another e-mail address"),
    ("empty_list",                   "Empty list"),
    ("evidence_not_verified",        "Evidence not verified"),
    ("expired",                      "Token expired"),
    ("forbidden_header_param",       "Token header member not allowed"),
    ("framework_dropped",            "Policy framework dropped by the delegation"),
    ("id_token_bad_signature",       "ID token signature does not verify"),
    ("id_token_expired",             "ID token expired"),
    ("id_token_issued_in_future",    "ID token issued in the future"),
    ("id_token_malformed",           "Malformed ID token"),
    ("id_token_missing_claim",       "ID token lacks a required claim"),
    ("id_token_nonce_mismatch",      "ID token nonce does not match"),
    ("id_token_not_yet_valid",       "ID token not yet valid"),
    ("id_token_too_old",             "ID token too old"),
    ("id_token_unknown_issuer",      "ID token from an unknown issuer"),
    ("id_token_unknown_kid",         "ID token signed with an unknown key"),
    ("id_token_unsupported_alg",     "ID token algorithm not supported"),
    ("id_token_wrong_audience",      "ID token for another audience"),
    ("idempotency_key_reused",       "Idempotency key reused with another request"),
    ("inconsistent_record",          "Inconsistent stored record"),
    ("index_out_of_range",           "Index beyond the end of the status list"),
    ("inheritance_mismatch",         "Child token does not carry its parent's limits"),
    ("internal",                     "Internal server error"),
    ("invalid_action",               "Invalid action"),
    ("invalid_agent_id",             "Invalid agent id"),
    ("invalid_base64",               "Invalid base64"),
    ("invalid_bits",                 "Status list has an unsupported number of bits"),
    ("invalid_claim",                "Invalid token claim"),
    ("invalid_compression",          "Status list is not ZLIB data"),
    ("invalid_cursor",               "Invalid cursor"),
    ("invalid_digest",               "Invalid digest"),
    ("invalid_email",                "Invalid e-mail address"),
    ("invalid_evidence",             "Invalid evidence"),
    ("invalid_exp",                  "Invalid expiry time"),
    ("invalid_field",                "Invalid value"),
    ("invalid_framework",            "Unknown policy framework"),
    ("invalid_iat",                  "Invalid issue time"),
    ("invalid_id",                   "Invalid id"),
    ("invalid_id_prefix",            "Id of the wrong kind"),
    ("invalid_idempotency_key",      "Invalid idempotency key"),
    ("invalid_key",                  "Invalid key"),
    ("invalid_lst",                  "Status list is not base64url"),
    ("invalid_nbf",                  "Invalid not-before time"),
    ("invalid_now",                  "Invalid current time"),
    ("invalid_org_name",             "Invalid organisation name"),
    ("invalid_query",                "Invalid query"),
    ("invalid_resource",             "Invalid resource"),
    ("invalid_resource_pattern",     "Invalid resource pattern"),
    ("invalid_role",                 "Unknown role"),
    ("invalid_signature",            "Token signature does not verify"),
    ("invalid_status_index",         "Status list index too large"),
    ("invalid_status_uri",           "Status list address not usable"),
    ("invalid_typ",                  "Token has the wrong type"),
    ("issuer_mismatch",              "Token from another issuer"),
    ("key_not_found",                "API key not found"),
    ("last_owner",                   "Last owner key of the organisation"),
    ("lifetime_beyond_parent",       "Lifetime beyond the parent's"),
    ("list_too_large",               "Status list too large"),
    ("list_too_long",                "List too long"),
    ("malformed_claims",             "Malformed token claims"),
    ("malformed_header",             "Malformed token header"),
    ("malformed_json",               "Malformed JSON"),
    ("malformed_jwks",               "Malformed key set"),
    ("malformed_signature",          "Malformed token signature"),
    ("malformed_token",              "Malformed token"),
    ("max_actions_too_large",        "Action limit too large"),
    ("method_not_allowed",           "Method not allowed"),
    ("missing_exp",                  "Token has no expiry time"),
    ("missing_field",                "Missing field"),
    ("missing_kid",                  "Key id missing"),
    ("no_usable_keys",               "No usable keys"),
    ("not_an_ancestor",              "Not an ancestor of the token"),
    ("not_completable",              "Record cannot be completed"),
    ("not_found",                    "Not found"),
    ("not_ratable",                  "Record cannot be rated yet"),
    ("not_root",                     "Chain does not start at a root token"),
    ("not_yet_valid",                "Token not yet valid"),
    ("oidc_discovery_mismatch",      "Identity provider names another issuer"),
    ("oidc_insecure_uri",            "Identity provider keys not served over HTTPS"),
    ("oidc_keys_unavailable",        "Identity provider keys unavailable"),
    ("org_exists",                   "Organisation name taken"),
    ("org_not_found",                "Organisation not found"),
    ("parent_expired",               "Parent token expired"),
    ("payload_too_large",            "Body too large"),
    ("plugin_bad_output",            "Verifier plugin gave an unreadable answer"),
    ("plugin_out_of_fuel",           "Verifier plugin ran out of fuel"),
    ("plugin_out_of_memory",         "Verifier plugin ran out of memory"),
    ("plugin_oversized_output",      "Verifier plugin answer too large"),
    ("plugin_timeout",               "Verifier plugin timed out"),
    ("plugin_trapped",               "Verifier plugin failed"),
    ("private_key_material",         "Private key material not accepted"),
    ("provenance_mismatch",          "Chain mixes workflows"),
    ("query_too_broad",              "Query too broad"),
    ("quota_exceeded",               "Organisation quota used up"),
    ("quota_too_large",              "Quota too large"),
    ("rate_limited",                 "Too many requests"),
    ("record_exists",                "Record already exists"),
    ("record_not_found",             "Record not found"),
    ("resource_not_covered",         "Resource not covered by the parent"),
    ("resource_not_permitted",       "Resource not permitted"),
    ("revoked",                      "Token revoked"),
    ("role_forbidden",               "Not allowed for this key's role"),
    ("scope_widening",               "Delegation would widen the parent's authority"),
    ("signing_key_revoked",          "Signing key just revoked"),
    ("status_index_out_of_range",    "Token's entry beyond the end of its status list"),
    ("status_list_expired",          "Status list expired"),
    ("status_list_not_yet_valid",    "Status list issued in the future"),
    ("status_list_too_large",        "Status list token too large"),
    ("status_stale",                 "Status list too old"),
    ("status_unknown",               "Token status unknown"),
    ("status_unrecognised",          "Token status not recognised"),
    ("status_uri_mismatch",          "Status list is not the token's"),
    ("status_value_too_wide",        "Status value does not fit the list"),
    ("subject_mismatch",             "Status list is for another address"),
    ("timestamp_out_of_range",       "Timestamp out of range"),
    ("token_expired",                "Token expired"),
    ("token_inactive",               "Token inactive"),
    ("token_mismatch",               "Token does not match"),
    ("token_not_found",              "Token not found"),
    ("token_required",               "Token required"),
    ("token_revoked",                "Token revoked"),
    ("token_suspended",              "Token suspended"),
    ("token_too_large",              "Token too large"),
    ("too_long",                     "Text too long"),
    ("too_many_children",            "Too many child tokens"),
    ("too_many_keys",                "Too many keys"),
    ("too_many_orgs",                "No room for another organisation"),
    ("ttl_out_of_range",             "Lifetime out of range"),
    ("unauthorized",                 "Authentication required"),
    ("unavailable",                  "Storage unavailable"),
    ("unknown_deny_reason",          "Unknown deny reason"),
    ("unknown_field",                "Unknown field"),
    ("unknown_kid",                  "Token signed with an unknown key"),
    ("unknown_rating",               "Unknown rating"),
    ("unknown_result",               "Unknown result"),
    ("unknown_verifier",             "Unknown verifier"),
    ("unreadable_body",              "Unreadable request body"),
    ("unsupported_alg",              "Token algorithm not supported"),
    ("unsupported_media_type",       "Body is not JSON"),
    ("verifier_bad_output",          "Verifier gave an unusable answer"),
    ("weak_key",                     "Weak key"),
    ("workflow_not_found",           "Workflow not found"),
];

/// The title of a problem code, if the table has one.
pub fn title(code: &str) -> Option<&'static str> {
    TITLES
        .binary_search_by(|(known, _)| known.cmp(&code))
        .ok()
        .and_then(|at| TITLES.get(at))
        .map(|(_, title)| *title)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_a_title_and_every_title_a_code() {
        let emitted = super::super::codes::emitted();
        let untitled: Vec<&String> = emitted.iter().filter(|c| title(c).is_none()).collect();
        assert!(untitled.is_empty(), "codes without a title: {untitled:?}");
        let stale: Vec<&str> = TITLES
            .iter()
            .map(|(code, _)| *code)
            .filter(|code| !emitted.contains(*code))
            .collect();
        assert!(
            stale.is_empty(),
            "titles of codes no source emits: {stale:?}"
        );
    }

    #[test]
    fn titles_are_sorted_and_read_as_titles() {
        for pair in TITLES.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{} before {}", pair[0].0, pair[1].0);
        }
        for (code, title) in TITLES {
            let first = title.chars().next().unwrap_or_default();
            assert!(first.is_uppercase(), "{code}: {title}");
            assert!(
                !title.contains('_') && !title.ends_with('.'),
                "{code}: {title}"
            );
        }
    }
}
