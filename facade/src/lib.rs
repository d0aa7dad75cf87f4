//! # mandate-facade
//!
//! What the two SDK façades share: `mandate-wasm` (the npm package
//! `mandate-sdk`) and `mandate-python` (the PyPI package `mandate-sdk`) call
//! these functions, so a rule of the SDKs lives once. Here: the prepared
//! verifier's state (held status lists, the memory of accepted proofs, the
//! cache of verified tokens) and its sequence ([`Verifier`]); the sequence
//! of a one-off token check ([`verify_token`]) and the rules of its status
//! options ([`status_options`]); refusals with the stage that refused
//! ([`Failure`]); and the glue of the record log ([`log`]), of scopes and
//! grants ([`scope`]) and of webhooks ([`webhook`]) over core's rules.
//!
//! Like core it does no I/O, reads no clock and draws no randomness: the
//! façades pass `now` in. Unlike core it speaks the SDKs' language: a
//! refusal is `{ code, message, stage, index? }`, which the wasm façade
//! hands to JavaScript as a value and the Python façade raises as
//! `MandateError`. What stays in each façade is the conversion of
//! JavaScript or Python values in and out, and the clock.

#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::unreachable,
        clippy::todo
    )
)]

mod failure;
pub mod log;
pub mod scope;
mod token;
mod verifier;
pub mod webhook;

pub use failure::{
    Failure, Stage, chain_failure, dpop_failure, jwks_failure, revoked_failure, scope_failure,
    status_failure, status_list_failure, verify_failure,
};
pub use token::{
    Binding, ListInfo, RequestInput, StatusListCheck, StatusOptionFault, StatusOptions,
    status_options, verify_options, verify_token,
};
pub use verifier::{Verifier, VerifierSetup, parse_revoked};
