//! Refusals as both SDKs report them: core's stable code, its message, the
//! stage that refused and, in a chain, the index of the token refused.

use std::fmt::Display;

use mandate_core::{
    ChainError, ChainFault, DpopError, Jth, JwksError, ScopeError, StatusCheckError,
    StatusListError, VerifyError,
};
use serde::Serialize;

/// Where a call failed, so codes that two stages share (`missing_kid`) stay
/// distinct.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// An argument of the wrong type or shape.
    Input,
    /// The key set was refused.
    Jwks,
    /// The token was refused.
    Verify,
    /// The chain was refused for something other than one token's verification.
    Chain,
    /// A bound token's proof of possession was missing or refused.
    Dpop,
    /// A record log checkpoint, proof, key or leaf was refused.
    Log,
    /// A status list token was refused.
    StatusList,
    /// A verified token's status refuses it, or could not be established.
    Status,
    /// A webhook's secret, headers, signature, timestamp or payload was
    /// refused.
    Webhook,
    /// A signed trust statement was refused.
    Trust,
}

impl Stage {
    /// The stage's name, as it is serialised.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Input => "input",
            Stage::Jwks => "jwks",
            Stage::Verify => "verify",
            Stage::Chain => "chain",
            Stage::Dpop => "dpop",
            Stage::Log => "log",
            Stage::StatusList => "status_list",
            Stage::Status => "status",
            Stage::Webhook => "webhook",
            Stage::Trust => "trust",
        }
    }
}

/// A refusal: `{ code, message, stage, index? }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    pub code: &'static str,
    pub message: String,
    pub stage: Stage,
    /// The position of the offending token in a chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
}

impl Failure {
    pub fn new(stage: Stage, code: &'static str, message: impl Display) -> Failure {
        Failure::written(stage, code, &message)
    }

    /// [`Failure::new`] for every kind of message at once: one copy of the
    /// formatting in the wasm module rather than one per message type (21).
    fn written(stage: Stage, code: &'static str, message: &dyn Display) -> Failure {
        Failure {
            code,
            message: message.to_string(),
            stage,
            index: None,
        }
    }

    /// An argument that is not what the function takes.
    pub fn input(code: &'static str, message: impl Display) -> Failure {
        Failure::new(Stage::Input, code, message)
    }

    /// An argument of the wrong type or shape, without a code of its own.
    pub fn argument(message: impl Display) -> Failure {
        Failure::input("invalid_argument", message)
    }
}

pub fn verify_failure(error: &VerifyError) -> Failure {
    Failure::new(Stage::Verify, error.code(), error)
}

pub fn jwks_failure(error: &JwksError) -> Failure {
    Failure::new(Stage::Jwks, error.code(), error)
}

pub fn scope_failure(error: &ScopeError) -> Failure {
    Failure::input(error.code(), error)
}

pub fn dpop_failure(error: &DpopError) -> Failure {
    Failure::new(Stage::Dpop, error.code(), error)
}

pub fn status_list_failure(error: &StatusListError) -> Failure {
    Failure::new(Stage::StatusList, error.code(), error)
}

pub fn status_failure(error: &StatusCheckError) -> Failure {
    Failure::new(Stage::Status, error.code(), error)
}

/// Why a token is void through revocation, as core's chain check says it.
pub fn revoked_failure(jth: Jth) -> Failure {
    let fault = ChainFault::Revoked(jth);
    Failure::new(Stage::Verify, fault.code(), fault)
}

/// A chain's refusal: a link's verification is stage `verify`, anything
/// else about the chain stage `chain`, with the link's index.
pub fn chain_failure(error: &ChainError) -> Failure {
    let (stage, index) = match error {
        ChainError::Link {
            index,
            fault: ChainFault::Verify(_),
        } => (Stage::Verify, Some(*index)),
        ChainError::Link { index, .. } => (Stage::Chain, Some(*index)),
        ChainError::Empty | ChainError::TooLong => (Stage::Chain, None),
    };
    Failure {
        index,
        ..Failure::new(stage, error.code(), error)
    }
}
