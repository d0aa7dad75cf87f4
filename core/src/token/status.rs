//! A token's status at a moment: active, revoked or expired, as the status
//! of a stored token reads and as the refusal of a presented one is
//! recorded.
//!
//! It knows nothing of where revocations are kept: the caller says whether
//! the token is revoked. Unlike verification it allows no clock skew: a
//! token is expired from the second of its `exp` on.

use serde::{Deserialize, Serialize};

use crate::record::DenyReason;

/// Where a token stands at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenStatus {
    Active,
    Revoked,
    Expired,
}

impl TokenStatus {
    /// The status at `now` of a token that ends at `exp` (both unix
    /// seconds): revoked when `revoked`, even once expired; else expired
    /// when `now >= exp`; else active.
    pub fn at(exp: i64, revoked: bool, now: i64) -> TokenStatus {
        if revoked {
            TokenStatus::Revoked
        } else if now >= exp {
            TokenStatus::Expired
        } else {
            TokenStatus::Active
        }
    }

    /// The wire name: `active`, `revoked` or `expired`.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenStatus::Active => "active",
            TokenStatus::Revoked => "revoked",
            TokenStatus::Expired => "expired",
        }
    }

    /// Why an attempt with a token in this status is refused: none when it
    /// is active.
    pub fn deny_reason(self) -> Option<DenyReason> {
        match self {
            TokenStatus::Active => None,
            TokenStatus::Revoked => Some(DenyReason::TokenRevoked),
            TokenStatus::Expired => Some(DenyReason::TokenExpired),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXP: i64 = 1_800_000_600;

    #[test]
    fn expired_from_the_second_of_exp() {
        assert_eq!(TokenStatus::at(EXP, false, EXP - 1), TokenStatus::Active);
        assert_eq!(TokenStatus::at(EXP, false, EXP), TokenStatus::Expired);
        assert_eq!(TokenStatus::at(EXP, false, EXP + 1), TokenStatus::Expired);
    }

    #[test]
    fn revoked_wins_over_expired() {
        assert_eq!(TokenStatus::at(EXP, true, EXP - 1), TokenStatus::Revoked);
        assert_eq!(TokenStatus::at(EXP, true, EXP), TokenStatus::Revoked);
        assert_eq!(
            TokenStatus::at(i64::MIN, true, i64::MAX),
            TokenStatus::Revoked
        );
    }

    #[test]
    fn extreme_times() {
        assert_eq!(
            TokenStatus::at(i64::MAX, false, i64::MIN),
            TokenStatus::Active
        );
        assert_eq!(
            TokenStatus::at(i64::MIN, false, i64::MIN),
            TokenStatus::Expired
        );
        assert_eq!(
            TokenStatus::at(i64::MAX, false, i64::MAX),
            TokenStatus::Expired
        );
    }

    #[test]
    fn names_and_reasons() {
        let all = [
            (TokenStatus::Active, "active", None),
            (
                TokenStatus::Revoked,
                "revoked",
                Some(DenyReason::TokenRevoked),
            ),
            (
                TokenStatus::Expired,
                "expired",
                Some(DenyReason::TokenExpired),
            ),
        ];
        for (status, name, reason) in all {
            assert_eq!(status.as_str(), name);
            assert_eq!(status.deny_reason(), reason);
            let json = serde_json::to_value(status).unwrap();
            assert_eq!(json, serde_json::json!(name));
            assert_eq!(serde_json::from_value::<TokenStatus>(json).unwrap(), status);
        }
        assert!(serde_json::from_str::<TokenStatus>("\"Active\"").is_err());
    }
}
