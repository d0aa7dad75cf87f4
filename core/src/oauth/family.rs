//! A refresh-token family: the refresh tokens of one consent grant, one
//! generation after another, as one pure transition function.
//!
//! ```text
//!                        refresh with token n (n = current, in time)
//!                       ┌──────────────────────────────┐
//!                       ▼                              │
//!   consent ──▶ Active { generation n } ───────────────┘  → Active { n + 1 }
//!                 │    │    │    │
//!                 │    │    │    └─ refresh with token m < n ───────▶ Revoked(refresh_token_reused)
//!                 │    │    └────── refresh at or after expires_at ─▶ Expired(lifetime)
//!                 │    └─────────── refresh idle ≥ idle_seconds ────▶ Expired(idle)
//!                 └──────────────── revoke(reason) ─────────────────▶ Revoked(reason)
//!
//!   Expired ── revoke(reason) ──▶ Revoked(reason)   (the grant root may outlive an idle family)
//!   Revoked, Expired ── refresh ──▶ refused, unchanged
//! ```
//!
//! - **Rotation** (OAuth 2.1 "Refresh Token Grant"; MCP security
//!   considerations "Token Theft": public clients MUST rotate): a refresh
//!   with the current token succeeds once and makes the next generation
//!   current; the presented one is used.
//! - **Reuse** (RFC 9700 §4.14.2): presenting an older generation means
//!   two parties hold the family; the server cannot tell which is the
//!   thief, so the family is revoked (and with it the grant root: every
//!   access token and exchanged child). Reuse is judged before expiry, so
//!   a stolen token is reported even late. No grace window: two
//!   concurrent refreshes by the genuine client end the family too, which
//!   RFC 9700 §4.14.2 accepts.
//! - **Lifetime**: the grant's `expires_at` (≤ 30 days, the grant root's
//!   `exp`); **idle**: no refresh for `idle_seconds` (`[oauth]
//!   refresh_idle_days`). Both refuse with `invalid_grant` and end the
//!   family.
//!
//! Every refusal carries the state to keep ([`Refusal::state`]), which
//! is the input unchanged unless the refusal ends the family.

use serde::{Deserialize, Serialize};

use super::OAuthError;

/// Why a family was revoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RevokeReason {
    /// An older refresh token was presented (RFC 9700 §4.14.2).
    RefreshTokenReused,
    /// The authorization code that made the grant was redeemed twice
    /// (RFC 6749 §4.1.2: SHOULD revoke what the code issued).
    CodeReplayed,
    /// The client revoked a token of the grant (RFC 7009).
    ClientRevoked,
    /// A person revoked the grant (dashboard, API).
    Revoked,
    /// The grant root was revoked by some other path (its chain).
    RootRevoked,
}

impl RevokeReason {
    /// The reason as stored (`oauth_grants.revoke_reason`).
    pub fn as_str(self) -> &'static str {
        match self {
            RevokeReason::RefreshTokenReused => "refresh_token_reused",
            RevokeReason::CodeReplayed => "code_replayed",
            RevokeReason::ClientRevoked => "client_revoked",
            RevokeReason::Revoked => "revoked",
            RevokeReason::RootRevoked => "root_revoked",
        }
    }
}

/// Why a family expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expiry {
    /// The grant's `expires_at` has come.
    Lifetime,
    /// No refresh for the idle window.
    Idle,
}

/// Where a family stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FamilyState {
    /// `generation` is the current refresh token's; `last_used_at` the
    /// time of the consent or the last refresh (unix seconds).
    Active {
        generation: u64,
        last_used_at: i64,
        expires_at: i64,
    },
    /// Ended by a revocation; nothing of it refreshes again.
    Revoked(RevokeReason),
    /// Ended by time.
    Expired(Expiry),
}

/// What happens to a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FamilyEvent {
    /// A refresh request with the refresh token of generation `presented`.
    Refresh {
        presented: u64,
        now: i64,
        idle_seconds: i64,
    },
    /// A revocation.
    Revoke(RevokeReason),
}

/// Why a refresh or revocation is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FamilyError {
    #[error("this refresh token was already used: the grant is revoked")]
    Reused,
    #[error("no refresh token of this grant has this generation")]
    UnknownGeneration,
    #[error("the grant was revoked")]
    Revoked,
    #[error("the grant has expired")]
    Expired,
    #[error("the grant was idle too long")]
    Idle,
    #[error("the grant has been refreshed as often as it can be")]
    Exhausted,
}

impl FamilyError {
    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            FamilyError::Reused => "refresh_token_reused",
            FamilyError::UnknownGeneration => "refresh_token_unknown",
            FamilyError::Revoked => "grant_revoked",
            FamilyError::Expired => "grant_expired",
            FamilyError::Idle => "grant_idle",
            FamilyError::Exhausted => "grant_exhausted",
        }
    }

    /// The OAuth `error`: `invalid_grant` (RFC 6749 §5.2).
    pub fn oauth_error(&self) -> OAuthError {
        OAuthError::for_code(self.code())
    }
}

/// A refused event, with the state to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    pub error: FamilyError,
    pub state: FamilyState,
}

fn refuse(error: FamilyError, state: FamilyState) -> Result<FamilyState, Refusal> {
    Err(Refusal { error, state })
}

/// The one transition function of a refresh family.
pub fn transition(state: FamilyState, event: FamilyEvent) -> Result<FamilyState, Refusal> {
    use FamilyEvent as E;
    use FamilyState as S;
    match (state, event) {
        (
            S::Active {
                generation,
                last_used_at,
                expires_at,
            },
            E::Refresh {
                presented,
                now,
                idle_seconds,
            },
        ) => {
            if presented < generation {
                return refuse(
                    FamilyError::Reused,
                    S::Revoked(RevokeReason::RefreshTokenReused),
                );
            }
            if presented > generation {
                return refuse(FamilyError::UnknownGeneration, state);
            }
            if now >= expires_at {
                return refuse(FamilyError::Expired, S::Expired(Expiry::Lifetime));
            }
            if now.saturating_sub(last_used_at) >= idle_seconds {
                return refuse(FamilyError::Idle, S::Expired(Expiry::Idle));
            }
            match generation.checked_add(1) {
                Some(next) => Ok(S::Active {
                    generation: next,
                    last_used_at: now,
                    expires_at,
                }),
                None => refuse(FamilyError::Exhausted, S::Expired(Expiry::Lifetime)),
            }
        }
        (S::Active { .. } | S::Expired(_), E::Revoke(reason)) => Ok(S::Revoked(reason)),
        (S::Revoked(_), E::Refresh { .. } | E::Revoke(_)) => refuse(FamilyError::Revoked, state),
        (S::Expired(Expiry::Lifetime), E::Refresh { .. }) => refuse(FamilyError::Expired, state),
        (S::Expired(Expiry::Idle), E::Refresh { .. }) => refuse(FamilyError::Idle, state),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400;
    const IDLE: i64 = 14 * DAY;
    const START: i64 = 1_800_000_000;
    const END: i64 = START + 30 * DAY;

    fn active(generation: u64, last_used_at: i64) -> FamilyState {
        FamilyState::Active {
            generation,
            last_used_at,
            expires_at: END,
        }
    }

    fn refresh(presented: u64, now: i64) -> FamilyEvent {
        FamilyEvent::Refresh {
            presented,
            now,
            idle_seconds: IDLE,
        }
    }

    #[test]
    fn rotation() {
        let mut state = active(0, START);
        for (generation, now) in [(0, START + 10), (1, START + DAY), (2, START + 14 * DAY)] {
            state = transition(state, refresh(generation, now)).unwrap();
            assert_eq!(state, active(generation + 1, now));
        }
    }

    #[test]
    fn reuse_revokes_the_family() {
        let state = transition(active(0, START), refresh(0, START + 1)).unwrap();
        let refused = transition(state, refresh(0, START + 2)).unwrap_err();
        assert_eq!(
            refused,
            Refusal {
                error: FamilyError::Reused,
                state: FamilyState::Revoked(RevokeReason::RefreshTokenReused),
            }
        );
        // The current token is refused from then on.
        let after = transition(refused.state, refresh(1, START + 3)).unwrap_err();
        assert_eq!(after.error, FamilyError::Revoked);
        assert_eq!(after.state, refused.state);
        // Reuse is judged before time: a late reuse still revokes.
        let late = transition(active(5, START), refresh(2, END + DAY)).unwrap_err();
        assert_eq!(late.error, FamilyError::Reused);
        assert_eq!(
            late.state,
            FamilyState::Revoked(RevokeReason::RefreshTokenReused)
        );
    }

    #[test]
    fn the_whole_table() {
        use FamilyError as F;
        use FamilyState as S;
        let idle = S::Expired(Expiry::Idle);
        let lifetime = S::Expired(Expiry::Lifetime);
        let revoked = S::Revoked(RevokeReason::Revoked);
        let cases: Vec<(&str, FamilyState, FamilyEvent, Result<FamilyState, Refusal>)> = vec![
            (
                "current, in time",
                active(3, START),
                refresh(3, START + 60),
                Ok(active(4, START + 60)),
            ),
            (
                "older",
                active(3, START),
                refresh(2, START + 60),
                Err(Refusal {
                    error: F::Reused,
                    state: S::Revoked(RevokeReason::RefreshTokenReused),
                }),
            ),
            (
                "first after many",
                active(3, START),
                refresh(0, START + 60),
                Err(Refusal {
                    error: F::Reused,
                    state: S::Revoked(RevokeReason::RefreshTokenReused),
                }),
            ),
            (
                "newer than current",
                active(3, START),
                refresh(4, START + 60),
                Err(Refusal {
                    error: F::UnknownGeneration,
                    state: active(3, START),
                }),
            ),
            (
                "at expires_at",
                active(3, START),
                refresh(3, END),
                Err(Refusal {
                    error: F::Expired,
                    state: lifetime,
                }),
            ),
            (
                "after expires_at",
                active(3, START),
                refresh(3, END + 1),
                Err(Refusal {
                    error: F::Expired,
                    state: lifetime,
                }),
            ),
            (
                "one second before idle",
                active(3, START),
                refresh(3, START + IDLE - 1),
                Ok(active(4, START + IDLE - 1)),
            ),
            (
                "idle exactly",
                active(3, START),
                refresh(3, START + IDLE),
                Err(Refusal {
                    error: F::Idle,
                    state: idle,
                }),
            ),
            (
                "idle long",
                active(3, START),
                refresh(3, START + IDLE + DAY),
                Err(Refusal {
                    error: F::Idle,
                    state: idle,
                }),
            ),
            (
                "idle counts from the last refresh",
                active(3, START + 10 * DAY),
                refresh(3, START + 20 * DAY),
                Ok(active(4, START + 20 * DAY)),
            ),
            (
                "last generation",
                active(u64::MAX, START),
                refresh(u64::MAX, START + 1),
                Err(Refusal {
                    error: F::Exhausted,
                    state: lifetime,
                }),
            ),
            (
                "revoke active",
                active(3, START),
                FamilyEvent::Revoke(RevokeReason::Revoked),
                Ok(revoked),
            ),
            (
                "code replayed",
                active(0, START),
                FamilyEvent::Revoke(RevokeReason::CodeReplayed),
                Ok(S::Revoked(RevokeReason::CodeReplayed)),
            ),
            (
                "client revokes",
                active(0, START),
                FamilyEvent::Revoke(RevokeReason::ClientRevoked),
                Ok(S::Revoked(RevokeReason::ClientRevoked)),
            ),
            (
                "root revoked",
                active(0, START),
                FamilyEvent::Revoke(RevokeReason::RootRevoked),
                Ok(S::Revoked(RevokeReason::RootRevoked)),
            ),
            (
                "revoke idle",
                idle,
                FamilyEvent::Revoke(RevokeReason::Revoked),
                Ok(revoked),
            ),
            (
                "revoke expired",
                lifetime,
                FamilyEvent::Revoke(RevokeReason::ClientRevoked),
                Ok(S::Revoked(RevokeReason::ClientRevoked)),
            ),
            (
                "revoke revoked",
                revoked,
                FamilyEvent::Revoke(RevokeReason::ClientRevoked),
                Err(Refusal {
                    error: F::Revoked,
                    state: revoked,
                }),
            ),
            (
                "refresh revoked",
                revoked,
                refresh(3, START + 1),
                Err(Refusal {
                    error: F::Revoked,
                    state: revoked,
                }),
            ),
            (
                "refresh expired",
                lifetime,
                refresh(3, START + 1),
                Err(Refusal {
                    error: F::Expired,
                    state: lifetime,
                }),
            ),
            (
                "refresh idle",
                idle,
                refresh(3, START + 1),
                Err(Refusal {
                    error: F::Idle,
                    state: idle,
                }),
            ),
        ];
        for (name, state, event, expect) in cases {
            assert_eq!(transition(state, event), expect, "{name}");
        }
    }

    #[test]
    fn codes_and_names() {
        for e in [
            FamilyError::Reused,
            FamilyError::UnknownGeneration,
            FamilyError::Revoked,
            FamilyError::Expired,
            FamilyError::Idle,
            FamilyError::Exhausted,
        ] {
            assert!(super::super::listed(e.code()), "{}", e.code());
            assert_eq!(e.oauth_error(), OAuthError::InvalidGrant);
        }
        for reason in [
            RevokeReason::RefreshTokenReused,
            RevokeReason::CodeReplayed,
            RevokeReason::ClientRevoked,
            RevokeReason::Revoked,
            RevokeReason::RootRevoked,
        ] {
            assert_eq!(serde_json::to_value(reason).unwrap(), reason.as_str());
        }
    }
}
