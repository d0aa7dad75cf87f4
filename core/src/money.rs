//! Money: US dollars held as whole micro-dollars.
//!
//! JSON carries amounts as numbers (`12.5`). An amount is accepted only when it
//! is finite, not negative, at most [`MAX_USD`] and has at most six decimal
//! places; anything else is refused, never rounded. A number a client computed
//! with binary floating point (`0.1 + 0.2`, `3 * 0.000001`) lands a unit or two
//! in the last place away from the decimal it means; such noise, at most
//! [`FLOAT_NOISE_ULPS`] units in the last place and a millionth of a
//! micro-dollar, is read as that decimal.
//! Inside Mandate amounts are integers, so sums over many records are exact.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::limits::{MAX_USD, MICROS_PER_USD};

/// How far, in units in the last place, a number may lie from a six-place
/// decimal and still be read as it: the noise of a few float operations.
pub const FLOAT_NOISE_ULPS: u64 = 4;

/// However few units in the last place, noise is never more than a
/// millionth of a micro-dollar: large amounts must be exact.
const MAX_NOISE_USD: f64 = 1e-12;

/// Why a number is not an acceptable amount of money.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    #[error("amount must be a finite number")]
    NotFinite,
    #[error("amount must not be negative")]
    Negative,
    #[error("amount must not exceed {MAX_USD} USD")]
    TooLarge,
    #[error("amount must have at most six decimal places; it is never rounded")]
    TooPrecise,
}

impl MoneyError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            MoneyError::NotFinite => "amount_not_finite",
            MoneyError::Negative => "amount_negative",
            MoneyError::TooLarge => "amount_too_large",
            MoneyError::TooPrecise => "amount_too_precise",
        }
    }
}

/// An amount of US dollars, exact to the micro-dollar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Usd(u64);

impl Usd {
    /// Nothing.
    pub const ZERO: Usd = Usd(0);

    /// An amount in micro-dollars.
    pub fn from_micros(micros: u64) -> Result<Usd, MoneyError> {
        if micros > MAX_USD * MICROS_PER_USD {
            return Err(MoneyError::TooLarge);
        }
        Ok(Usd(micros))
    }

    /// Converts a JSON number, refusing what would need rounding.
    pub fn from_f64(amount: f64) -> Result<Usd, MoneyError> {
        if !amount.is_finite() {
            return Err(MoneyError::NotFinite);
        }
        if amount < 0.0 {
            return Err(MoneyError::Negative);
        }
        if amount > MAX_USD as f64 {
            return Err(MoneyError::TooLarge);
        }
        let micros = (amount * MICROS_PER_USD as f64).round();
        // Below MAX_USD every micro-dollar count is an exact f64, and the
        // division is correctly rounded: `decimal` is the double nearest to
        // the six-place decimal `micros` stands for. Non-negative doubles
        // order like their bit patterns, so the distance in bits counts units
        // in the last place.
        let decimal = micros / MICROS_PER_USD as f64;
        let noise = decimal.to_bits().abs_diff(amount.to_bits()) <= FLOAT_NOISE_ULPS
            && (decimal - amount).abs() <= MAX_NOISE_USD;
        if !noise {
            return Err(MoneyError::TooPrecise);
        }
        // `micros` is a whole number in 0..=1e15, exactly convertible.
        Usd::from_micros(micros as u64)
    }

    /// Micro-dollars.
    pub fn micros(self) -> u64 {
        self.0
    }

    /// The amount as a JSON number.
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / MICROS_PER_USD as f64
    }

    /// Sum, or `None` when it would pass [`MAX_USD`].
    pub fn checked_add(self, other: Usd) -> Option<Usd> {
        self.0
            .checked_add(other.0)
            .and_then(|sum| Usd::from_micros(sum).ok())
    }

    /// Difference, floored at zero.
    pub fn saturating_sub(self, other: Usd) -> Usd {
        Usd(self.0.saturating_sub(other.0))
    }
}

impl fmt::Display for Usd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 / MICROS_PER_USD;
        let frac = self.0 % MICROS_PER_USD;
        if frac == 0 {
            write!(f, "{whole}")
        } else {
            let digits = format!("{frac:06}");
            write!(f, "{whole}.{}", digits.trim_end_matches('0'))
        }
    }
}

impl Serialize for Usd {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.as_f64())
    }
}

impl<'de> Deserialize<'de> for Usd {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Usd, D::Error> {
        let amount = f64::deserialize(deserializer)?;
        Usd::from_f64(amount).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_up_to_six_places() {
        assert_eq!(Usd::from_f64(0.0), Ok(Usd(0)));
        assert_eq!(Usd::from_f64(0.1), Ok(Usd(100_000)));
        assert_eq!(Usd::from_f64(12.5), Ok(Usd(12_500_000)));
        assert_eq!(Usd::from_f64(0.000001), Ok(Usd(1)));
        assert_eq!(
            Usd::from_f64(999_999_999.999999),
            Ok(Usd(999_999_999_999_999))
        );
        assert_eq!(Usd::from_f64(1e9), Ok(Usd(1_000_000_000_000_000)));
    }

    #[test]
    fn refuses_rather_than_rounds() {
        assert_eq!(Usd::from_f64(0.0000001), Err(MoneyError::TooPrecise));
        assert_eq!(Usd::from_f64(0.1234567), Err(MoneyError::TooPrecise));
        assert_eq!(Usd::from_f64(-0.01), Err(MoneyError::Negative));
        assert_eq!(Usd::from_f64(f64::NAN), Err(MoneyError::NotFinite));
        assert_eq!(Usd::from_f64(f64::INFINITY), Err(MoneyError::NotFinite));
        assert_eq!(Usd::from_f64(1e9 + 1.0), Err(MoneyError::TooLarge));
        assert_eq!(Usd::from_f64(1e29), Err(MoneyError::TooLarge));
    }

    #[test]
    fn float_noise_reads_as_the_decimal_meant() {
        assert_eq!(Usd::from_f64(0.1 + 0.2), Ok(Usd(300_000)));
        assert_eq!(Usd::from_f64(3.0 * 0.000001), Ok(Usd(3)));
        assert_eq!(Usd::from_f64(1.1 * 3.0), Ok(Usd(3_300_000)));
        assert_eq!(Usd::from_f64(0.000_000_5), Err(MoneyError::TooPrecise));
        assert_eq!(Usd::from_f64(1.000_000_1), Err(MoneyError::TooPrecise));
        assert_eq!(
            Usd::from_f64(999_999_999.999_999_5),
            Err(MoneyError::TooPrecise)
        );
    }

    #[test]
    fn json_round_trip() {
        let amount: Usd = serde_json::from_str("19.99").unwrap();
        assert_eq!(amount.micros(), 19_990_000);
        assert_eq!(serde_json::to_string(&amount).unwrap(), "19.99");
        assert!(serde_json::from_str::<Usd>("\"1\"").is_err());
        assert!(serde_json::from_str::<Usd>("1e400").is_err());
        assert!(serde_json::from_str::<Usd>("123456789012345678901234567890").is_err());
    }

    #[test]
    fn display_and_arithmetic() {
        assert_eq!(Usd(1_500_000).to_string(), "1.5");
        assert_eq!(Usd(3_000_000).to_string(), "3");
        assert_eq!(Usd(10).to_string(), "0.00001");
        assert_eq!(Usd(5).checked_add(Usd(7)), Some(Usd(12)));
        let max = Usd::from_micros(MAX_USD * MICROS_PER_USD).unwrap();
        assert_eq!(max.checked_add(Usd(1)), None);
        assert_eq!(Usd(5).saturating_sub(Usd(7)), Usd(0));
    }
}
