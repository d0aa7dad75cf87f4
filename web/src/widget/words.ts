// What each verification error code means, in words a reader understands
// at a glance. The codes are mandate-core's; the SDK's message adds detail.

const WORDS: Record<string, string> = {
  token_too_large: "The token is larger than a Mandate token may be",
  malformed_token: "This is not a compact JWT (three base64url parts)",
  invalid_base64: "A part of the token is not valid base64url",
  malformed_header: "The token's header is malformed",
  unsupported_alg: "The token is not signed with EdDSA (Ed25519)",
  forbidden_header_param: "The header tries to choose its own key",
  invalid_typ: "The token is not of type vat+jwt",
  missing_kid: "The header names no key (kid)",
  unknown_kid: "The token was signed with a key that is not in the key set",
  malformed_signature: "The signature is malformed",
  invalid_signature: "The signature does not match: the token was altered or signed by someone else",
  malformed_claims: "The claims are malformed",
  duplicate_claim: "A claim appears twice",
  missing_exp: "The token has no expiry",
  invalid_exp: "The expiry is not a valid time",
  invalid_nbf: "The not-before time is not a valid time",
  invalid_iat: "The issue time is not a valid time",
  invalid_claim: "A Mandate claim is invalid",
  issuer_mismatch: "The token comes from another issuer",
  expired: "The token has expired",
  not_yet_valid: "The token is not valid yet",
  revoked: "The token or one of its ancestors is revoked",
  binding_dropped: "The token's parent is bound to a key and this token is not",
  token_revoked: "The token's status list says it is revoked",
  token_suspended: "The token's status list says it is suspended",
  status_unknown: "No status list is known for the token",
  status_stale: "The token's status list is too old to rely on",
  status_list_expired: "The token's status list has expired",
  status_index_out_of_range: "The token's entry is beyond the end of its status list",
  status_uri_mismatch: "The status list is not the one the token names",
  status_unrecognised: "The token's status list gives a status Mandate does not define",
  status_origin_not_allowed: "The token's status list is on a host this verifier does not ask",
  subject_mismatch: "The status list is not the one the token names",
};

/** A sentence for a verification error code; the code itself when unknown. */
export function inWords(code: string): string {
  return WORDS[code] ?? code.replaceAll("_", " ");
}
