//! Small JSON helpers for the strict parsers: presence of a member whatever
//! its value, and detection of duplicate members.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};

/// Marks that a member was present, whatever its value (even `null`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Present;

/// `deserialize_with` helper: any value, `null` included, becomes `Some(Present)`.
pub(crate) fn present<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Present>, D::Error> {
    IgnoredAny::deserialize(deserializer).map(|_| Some(Present))
}

use serde::Deserialize as _;

/// Whether the top-level JSON object in `bytes` names some member twice.
/// Returns `false` for anything that is not an object.
pub(crate) fn has_duplicate_member(bytes: &[u8]) -> bool {
    struct Keys;

    impl<'de> Visitor<'de> for Keys {
        type Value = bool;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
            // The whole map must be read, or the parser reports an error.
            let mut seen: Vec<String> = Vec::new();
            let mut duplicate = false;
            while let Some(key) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                duplicate |= seen.contains(&key);
                seen.push(key);
            }
            Ok(duplicate)
        }
    }

    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    deserializer.deserialize_map(Keys).unwrap_or(false)
}

/// A JSON value that should be an integer number of seconds: kept as read so
/// that a missing claim and a claim of the wrong type get their own errors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum NumericDate {
    /// Not in the document.
    #[default]
    Absent,
    /// An integer.
    Int(i64),
    /// Present but not an integer that fits i64 (a string, a fraction, `null`…).
    Invalid,
}

impl<'de> de::Deserialize<'de> for NumericDate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<NumericDate, D::Error> {
        struct Any;

        impl<'de> Visitor<'de> for Any {
            type Value = NumericDate;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_i64<E>(self, v: i64) -> Result<NumericDate, E> {
                Ok(NumericDate::Int(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<NumericDate, E> {
                Ok(i64::try_from(v).map_or(NumericDate::Invalid, NumericDate::Int))
            }
            fn visit_f64<E>(self, _: f64) -> Result<NumericDate, E> {
                Ok(NumericDate::Invalid)
            }
            fn visit_bool<E>(self, _: bool) -> Result<NumericDate, E> {
                Ok(NumericDate::Invalid)
            }
            fn visit_str<E>(self, _: &str) -> Result<NumericDate, E> {
                Ok(NumericDate::Invalid)
            }
            fn visit_unit<E>(self) -> Result<NumericDate, E> {
                Ok(NumericDate::Invalid)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<NumericDate, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(NumericDate::Invalid)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NumericDate, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(NumericDate::Invalid)
            }
        }

        deserializer.deserialize_any(Any)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates() {
        assert!(has_duplicate_member(br#"{"a":1,"b":{"a":2},"a":3}"#));
        assert!(has_duplicate_member(
            br#"{"a":1,"a":{"x":[1]},"c":{"d":5.0}}"#
        ));
        assert!(!has_duplicate_member(br#"{"a":1,"b":{"a":2,"a":3}}"#));
        assert!(!has_duplicate_member(b"[1,1]"));
        assert!(!has_duplicate_member(b"{"));
    }

    #[test]
    fn numeric_dates() {
        let read = |s: &str| serde_json::from_str::<NumericDate>(s).unwrap();
        assert_eq!(read("5"), NumericDate::Int(5));
        assert_eq!(read("-5"), NumericDate::Int(-5));
        for invalid in [
            "5.0",
            "\"5\"",
            "null",
            "true",
            "[5]",
            "{\"a\":5}",
            "18446744073709551615",
        ] {
            assert_eq!(read(invalid), NumericDate::Invalid, "{invalid}");
        }
    }
}
