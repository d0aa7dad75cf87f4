//! Small JSON helpers for the strict parsers: presence of a member whatever
//! its value, detection of duplicate members (at the top level, and at every
//! depth with [`Strict`]) and RFC 8785 canonical JSON.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use crate::limits::MAX_JSON_SAFE_INTEGER;

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

/// A number RFC 8785 canonical JSON is not written for here: an integer
/// beyond ±(2^53 − 1), which JavaScript cannot hold exactly (I-JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UnsafeNumber;

/// Writes `value` as RFC 8785 (JCS) canonical JSON: members sorted by
/// their UTF-16 code units at every level, no whitespace, numbers as
/// ECMAScript writes them.
pub(crate) fn write_canonical(value: &Value, out: &mut Vec<u8>) -> Result<(), UnsafeNumber> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => {
            let text = if let Some(n) = number.as_u64() {
                (n <= MAX_JSON_SAFE_INTEGER).then(|| n.to_string())
            } else if let Some(n) = number.as_i64() {
                (n.unsigned_abs() <= MAX_JSON_SAFE_INTEGER).then(|| n.to_string())
            } else {
                number.as_f64().and_then(ecmascript_number)
            };
            out.extend_from_slice(text.ok_or(UnsafeNumber)?.as_bytes());
        }
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out)?;
            }
            out.push(b']');
        }
        Value::Object(members) => {
            let mut members: Vec<(&String, &Value)> = members.iter().collect();
            members.sort_unstable_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            out.push(b'{');
            for (i, (name, member)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(name, out);
                out.push(b':');
                write_canonical(member, out)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// serde_json escapes exactly what JCS escapes: `"`, `\` and the control
/// characters, with the short forms and lowercase `\u00xx`.
fn write_string(text: &str, out: &mut Vec<u8>) {
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

/// A finite double as ECMAScript's `Number.prototype.toString` writes it
/// (ECMA-262 Number::toString, radix 10: the shortest digits that read back
/// as `x`, the closest of them, ties to even).
pub(crate) fn ecmascript_number(x: f64) -> Option<String> {
    x.is_finite()
        .then(|| ryu_js::Buffer::new().format_finite(x).to_owned())
}

/// Why a JSON document was refused by [`Strict`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StrictRefusal {
    /// An object names a member twice (serde_json would keep the last;
    /// JavaScript and Python parsers differ, so no reading is safe).
    DuplicateMember,
    /// A number beyond ±(2^53 − 1): JavaScript cannot hold it exactly.
    UnsafeNumber,
}

/// A JSON value read strictly: every object at every depth names each
/// member once and every number lies within ±(2^53 − 1). A refusal is a
/// value, not a parse error, so that it keeps its own code; the whole
/// document is still read.
pub(crate) struct Strict(pub(crate) Result<Value, StrictRefusal>);

impl<'de> de::Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Strict, D::Error> {
        deserializer.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

/// The largest safe magnitude, as a double (2^53 − 1 is exact).
const SAFE: f64 = MAX_JSON_SAFE_INTEGER as f64;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E>(self) -> Result<Strict, E> {
        Ok(Strict(Ok(Value::Null)))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Strict, E> {
        Ok(Strict(Ok(Value::Bool(v))))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Strict, E> {
        Ok(Strict(if v.unsigned_abs() <= MAX_JSON_SAFE_INTEGER {
            Ok(Value::from(v))
        } else {
            Err(StrictRefusal::UnsafeNumber)
        }))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Strict, E> {
        Ok(Strict(if v <= MAX_JSON_SAFE_INTEGER {
            Ok(Value::from(v))
        } else {
            Err(StrictRefusal::UnsafeNumber)
        }))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Strict, E> {
        Ok(Strict(
            serde_json::Number::from_f64(v)
                .filter(|_| v.abs() <= SAFE)
                .map(Value::Number)
                .ok_or(StrictRefusal::UnsafeNumber),
        ))
    }
    fn visit_str<E>(self, v: &str) -> Result<Strict, E> {
        Ok(Strict(Ok(Value::String(v.to_owned()))))
    }
    fn visit_string<E>(self, v: String) -> Result<Strict, E> {
        Ok(Strict(Ok(Value::String(v))))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        let mut items = Vec::new();
        let mut refusal = None;
        while let Some(Strict(item)) = seq.next_element::<Strict>()? {
            match item {
                Ok(item) => items.push(item),
                Err(r) => refusal = refusal.or(Some(r)),
            }
        }
        Ok(Strict(refusal.map_or(Ok(Value::Array(items)), Err)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        let mut members = serde_json::Map::new();
        let mut refusal = None;
        while let Some(key) = map.next_key::<String>()? {
            let Strict(member) = map.next_value::<Strict>()?;
            if members.contains_key(&key) {
                refusal = refusal.or(Some(StrictRefusal::DuplicateMember));
            }
            match member {
                Ok(member) => {
                    members.insert(key, member);
                }
                Err(r) => refusal = refusal.or(Some(r)),
            }
        }
        Ok(Strict(refusal.map_or(Ok(Value::Object(members)), Err)))
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
