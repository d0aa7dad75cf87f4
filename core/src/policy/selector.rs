//! Selectors: jq-style paths into the arguments, as UCAN 1.0 writes them.
//!
//! ```text
//! selector = "." [ident] *( ("." ident / "[" index "]" / "[" string "]" / "[]") ["?"] )
//! ident    = (ALPHA / "_") *(ALPHA / DIGIT / "_")
//! index    = ["-"] 1*DIGIT          ; from the end when negative
//! string   = a JSON string literal  ; any member name
//! ```
//!
//! `.` is the whole value; `.a` and `.["a"]` a member; `.a[0]` an element,
//! `.a[-1]` the last; `.a[]` every element of an array (every member value
//! of an object, in code point order of the names), with what follows
//! applied to each. A segment followed by `?` is optional: when it finds
//! nothing, the whole selector yields `null` (which is found). Anything
//! else — an empty segment, `..`, a trailing `.`, `??`, whitespace, an
//! index beyond ±2^53 — is malformed.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use crate::limits::MAX_JSON_SAFE_INTEGER;

/// One step of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// A member of an object.
    Field(String),
    /// An element of an array; negative counts from the end.
    Index(i64),
    /// Every element of an array, or every member value of an object.
    Values,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Segment {
    step: Step,
    optional: bool,
}

/// A parsed selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    segments: Vec<Segment>,
}

/// A selector that is not in the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MalformedSelector;

fn ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl Selector {
    /// Parses a selector, refusing every form outside the grammar.
    pub fn parse(text: &str) -> Result<Selector, MalformedSelector> {
        let rest = text.strip_prefix('.').ok_or(MalformedSelector)?;
        let mut segments = Vec::new();
        let mut rest = rest;
        // The root's dot may begin the first member (`.a`), never be
        // followed by another (`..a` is jq's recursive descent).
        if rest.starts_with('.') {
            return Err(MalformedSelector);
        }
        if rest.starts_with(ident_start) {
            let (name, after) = take_ident(rest);
            segments.push(Segment {
                step: Step::Field(name.to_owned()),
                optional: false,
            });
            rest = after;
            rest = take_optional(rest, &mut segments)?;
        }
        while !rest.is_empty() {
            let (step, after) = if let Some(after) = rest.strip_prefix('.') {
                if !after.starts_with(ident_start) {
                    return Err(MalformedSelector);
                }
                let (name, after) = take_ident(after);
                (Step::Field(name.to_owned()), after)
            } else if let Some(after) = rest.strip_prefix('[') {
                take_bracket(after)?
            } else {
                return Err(MalformedSelector);
            };
            segments.push(Segment {
                step,
                optional: false,
            });
            rest = take_optional(after, &mut segments)?;
        }
        Ok(Selector { segments })
    }

    /// What the selector finds in `value`: `None` when it finds nothing
    /// (a missing member or element, a step into the wrong type). What it
    /// finds is borrowed from `value` where it can be: only `[]` and an
    /// optional step that finds nothing make a value of their own.
    pub fn select<'a>(&self, value: &'a Value) -> Option<Cow<'a, Value>> {
        select(&self.segments, value)
    }

    /// Replaces every value the selector finds in `value` with
    /// `replacement` (`[]` steps into every element or member value);
    /// what it does not find is left alone. `.` replaces nothing: the
    /// whole value is never redacted away.
    pub fn replace(&self, value: &mut Value, replacement: &Value) {
        if !self.segments.is_empty() {
            replace(&self.segments, value, replacement);
        }
    }
}

fn replace(segments: &[Segment], value: &mut Value, replacement: &Value) {
    let Some((first, rest)) = segments.split_first() else {
        *value = replacement.clone();
        return;
    };
    match (&first.step, value) {
        (Step::Field(name), Value::Object(members)) => {
            if let Some(member) = members.get_mut(name) {
                replace(rest, member, replacement);
            }
        }
        (Step::Index(index), Value::Array(items)) => {
            let Ok(len) = i64::try_from(items.len()) else {
                return;
            };
            let at = if *index < 0 { len + index } else { *index };
            if let Some(item) = usize::try_from(at).ok().and_then(|at| items.get_mut(at)) {
                replace(rest, item, replacement);
            }
        }
        (Step::Values, Value::Array(items)) => {
            for item in items {
                replace(rest, item, replacement);
            }
        }
        (Step::Values, Value::Object(members)) => {
            for member in members.values_mut() {
                replace(rest, member, replacement);
            }
        }
        _ => {}
    }
}

/// Reads an identifier at the start of `text` (known to begin with one).
fn take_ident(text: &str) -> (&str, &str) {
    let end = text
        .char_indices()
        .find(|&(_, c)| !ident_char(c))
        .map_or(text.len(), |(i, _)| i);
    text.split_at(end)
}

/// Marks the last segment optional when `text` begins with one `?`.
fn take_optional<'a>(
    text: &'a str,
    segments: &mut [Segment],
) -> Result<&'a str, MalformedSelector> {
    let Some(after) = text.strip_prefix('?') else {
        return Ok(text);
    };
    if after.starts_with('?') {
        return Err(MalformedSelector);
    }
    let last = segments.last_mut().ok_or(MalformedSelector)?;
    last.optional = true;
    Ok(after)
}

/// Reads what follows a `[`: `]`, an index and `]`, or a JSON string and `]`.
fn take_bracket(text: &str) -> Result<(Step, &str), MalformedSelector> {
    if let Some(after) = text.strip_prefix(']') {
        return Ok((Step::Values, after));
    }
    if text.starts_with('"') {
        // The string ends at the first `"` not escaped by a backslash.
        let mut escaped = false;
        let mut end = None;
        for (i, c) in text.char_indices().skip(1) {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let end = end.ok_or(MalformedSelector)?;
        let (literal, after) = text.split_at(end + 1);
        let name: String = serde_json::from_str(literal).map_err(|_| MalformedSelector)?;
        let after = after.strip_prefix(']').ok_or(MalformedSelector)?;
        return Ok((Step::Field(name), after));
    }
    let (digits, after) = text.split_once(']').ok_or(MalformedSelector)?;
    let magnitude = digits.strip_prefix('-').unwrap_or(digits);
    if magnitude.is_empty()
        || magnitude.len() > 16
        || !magnitude.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(MalformedSelector);
    }
    let index: i64 = digits.parse().map_err(|_| MalformedSelector)?;
    if index.unsigned_abs() > MAX_JSON_SAFE_INTEGER {
        return Err(MalformedSelector);
    }
    Ok((Step::Index(index), after))
}

fn step<'a>(step: &Step, value: &'a Value) -> Option<Cow<'a, Value>> {
    match (step, value) {
        (Step::Field(name), Value::Object(members)) => members.get(name).map(Cow::Borrowed),
        (Step::Index(index), Value::Array(items)) => {
            let len = i64::try_from(items.len()).ok()?;
            let at = if *index < 0 { len + index } else { *index };
            items.get(usize::try_from(at).ok()?).map(Cow::Borrowed)
        }
        (Step::Values, Value::Array(_)) => Some(Cow::Borrowed(value)),
        (Step::Values, Value::Object(members)) => {
            let mut members: Vec<(&String, &Value)> = members.iter().collect();
            members.sort_unstable_by_key(|&(name, _)| name);
            Some(Cow::Owned(Value::Array(
                members.into_iter().map(|(_, v)| v.clone()).collect(),
            )))
        }
        _ => None,
    }
}

fn select<'a>(segments: &[Segment], value: &'a Value) -> Option<Cow<'a, Value>> {
    let mut current = Cow::Borrowed(value);
    for (i, segment) in segments.iter().enumerate() {
        let next = match current {
            Cow::Borrowed(value) => step(&segment.step, value),
            Cow::Owned(ref value) => step(&segment.step, value).map(|v| Cow::Owned(v.into_owned())),
        };
        let Some(next) = next else {
            return segment.optional.then_some(Cow::Owned(Value::Null));
        };
        if segment.step == Step::Values {
            let rest = segments.get(i + 1..).unwrap_or_default();
            let Value::Array(items) = next.as_ref() else {
                return None;
            };
            return items
                .iter()
                .map(|item| select(rest, item).map(Cow::into_owned))
                .collect::<Option<Vec<Value>>>()
                .map(|items| Cow::Owned(Value::Array(items)));
        }
        current = next;
    }
    Some(current)
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.segments.is_empty() {
            return f.write_str(".");
        }
        for segment in &self.segments {
            match &segment.step {
                Step::Field(name)
                    if name.starts_with(ident_start) && name.chars().all(ident_char) =>
                {
                    write!(f, ".{name}")?;
                }
                Step::Field(name) => {
                    let literal = serde_json::to_string(name).map_err(|_| fmt::Error)?;
                    write!(f, "[{literal}]")?;
                }
                Step::Index(index) => write!(f, "[{index}]")?,
                Step::Values => f.write_str("[]")?,
            }
            if segment.optional {
                f.write_str("?")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sel(text: &str) -> Selector {
        Selector::parse(text).unwrap()
    }

    #[test]
    fn grammar() {
        for good in [
            ".",
            ".a",
            ".a.b",
            ".[\"a b\"]",
            ".a[0]",
            ".a[-1]",
            ".a[]",
            ".a[].b",
            ".a?",
            ".a?.b?",
            ".[0]",
            ".[]",
            "._x1",
            ".a[\"]\"]",
            ".a[\"\\\"\"]",
        ] {
            assert!(Selector::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "a",
            "..",
            ".a.",
            ".a..b",
            ".1",
            ".a[",
            ".a[x]",
            ".a[1",
            ".a??",
            ".?",
            ". a",
            ".a[ 1]",
            ".a[+1]",
            ".a[\"x]",
            ".a[\"x\"",
            ".a-b",
            ".a[1.0]",
            ".é",
            ".a[99999999999999999]",
        ] {
            assert_eq!(Selector::parse(bad), Err(MalformedSelector), "{bad:?}");
        }
    }

    #[test]
    fn selection() {
        let v = json!({"a": [1, 2, {"b": 3}], "m": {"y": 2, "x": 1}, "k w": true});
        assert_eq!(sel(".").select(&v).map(Cow::into_owned), Some(v.clone()));
        assert_eq!(sel(".a[0]").select(&v).map(Cow::into_owned), Some(json!(1)));
        assert_eq!(
            sel(".a[-1].b").select(&v).map(Cow::into_owned),
            Some(json!(3))
        );
        assert_eq!(sel(".a[-4]").select(&v).map(Cow::into_owned), None);
        assert_eq!(sel(".a[3]").select(&v).map(Cow::into_owned), None);
        assert_eq!(
            sel(".[\"k w\"]").select(&v).map(Cow::into_owned),
            Some(json!(true))
        );
        assert_eq!(
            sel(".m[]").select(&v).map(Cow::into_owned),
            Some(json!([1, 2]))
        );
        assert_eq!(sel(".a[].b").select(&v).map(Cow::into_owned), None);
        assert_eq!(
            sel(".a[].b?").select(&v).map(Cow::into_owned),
            Some(json!([null, null, 3]))
        );
        assert_eq!(sel(".z").select(&v).map(Cow::into_owned), None);
        assert_eq!(
            sel(".z?").select(&v).map(Cow::into_owned),
            Some(Value::Null)
        );
        assert_eq!(
            sel(".z?.y").select(&v).map(Cow::into_owned),
            Some(Value::Null)
        );
        assert_eq!(sel(".a.b").select(&v).map(Cow::into_owned), None);
        assert_eq!(sel(".a[0][0]").select(&v).map(Cow::into_owned), None);
    }

    #[test]
    fn display_round_trips() {
        for text in [".", ".a", ".a[0]", ".a[-1]?", ".a[][\"x y\"]", ".a.b?"] {
            assert_eq!(sel(text).to_string(), text);
            assert_eq!(sel(&sel(text).to_string()), sel(text));
        }
    }
}
