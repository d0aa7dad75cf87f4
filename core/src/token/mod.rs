//! Tokens (VATs): typed claims, issuing and delegating, signing, the one
//! verification routine host and wasm both use, and a token's status.
//!
//! - `claims`: [`Claims`] and what each claim must be, ancestry by jti hash
//!   (and so which tokens govern a token), and the validity window at a
//!   moment;
//! - `jws`: the compact form: [`Header`], [`sign`], [`verify`] (every rule
//!   in a documented order, an error variant each),
//!   [`verify_ignoring_lifetime`] and [`decode_unverified`];
//! - `issue`: [`issue_root`], [`delegate`], [`renew`] and [`renew_within`], with
//!   [`delegated_grant`] and [`check_fan_out`], and the deny reason a
//!   refused delegation is recorded with;
//! - `status`: [`TokenStatus`], a stored token's status at a moment.
//!
//! Everything is re-exported here, so callers name `mandate_core::token::X`
//! (or `mandate_core::X`) whichever file holds it.

mod claims;
mod issue;
mod jws;
mod status;

pub use claims::{Actor, AssuranceLevel, Claims, Confirmation};
pub use issue::{
    IssueError, Renewal, RootIssue, TokenRequest, check_fan_out, delegate, delegated_grant,
    issue_root, renew, renew_within,
};
pub use jws::{
    ALG, Header, Segment, SignError, TYP, VerifiedToken, VerifyError, VerifyOptions,
    decode_unverified, sign, verify, verify_ignoring_lifetime,
};
pub(crate) use jws::{Kind, sign_payload, verify_signature};
pub use status::TokenStatus;
