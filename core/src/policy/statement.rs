//! Statements of the UCAN 1.0 policy language, parsed into a typed tree
//! and judged in three-valued (Kleene) logic.

use serde_json::Value;

use super::selector::Selector;
use super::{PolicyError, PolicyFault, Truth};
use crate::limits::{MAX_JSON_SAFE_INTEGER, MAX_POLICY_DEPTH, MAX_POLICY_STATEMENTS};

/// A numeric comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Lt,
    Le,
    Gt,
    Ge,
}

/// One statement, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// `["==", sel, value]`: deep equality, numbers by value.
    Eq(Selector, Value),
    /// `["!=", sel, value]`: `["not", ["==", sel, value]]`.
    Ne(Selector, Value),
    /// `["<" | "<=" | ">" | ">=", sel, number]`.
    Compare(Comparison, Selector, f64),
    /// `["like", sel, pattern]`.
    Like(Selector, Glob),
    /// `["not", statement]`.
    Not(Box<Statement>),
    /// `["and", [statements]]`.
    And(Vec<Statement>),
    /// `["or", [statements]]`.
    Or(Vec<Statement>),
    /// `["all", sel, statement]`.
    All(Selector, Box<Statement>),
    /// `["any", sel, statement]`.
    Any(Selector, Box<Statement>),
}

/// A `like` pattern: literal fragments between unescaped `*`s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    /// The literal fragments; one more than the number of `*`s.
    fragments: Vec<String>,
}

impl Glob {
    /// Parses a pattern: `*` matches any run of characters (none
    /// included), `\*` a literal `*`. A backslash before anything else
    /// is refused: it would mean different things to different readers.
    pub fn parse(pattern: &str) -> Option<Glob> {
        let mut fragments = vec![String::new()];
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            match c {
                '*' => fragments.push(String::new()),
                '\\' => {
                    if chars.next() != Some('*') {
                        return None;
                    }
                    fragments.last_mut()?.push('*');
                }
                c => fragments.last_mut()?.push(c),
            }
        }
        Some(Glob { fragments })
    }

    /// Whether `text` matches, character by character (no normalisation).
    pub fn matches(&self, text: &str) -> bool {
        let Some((first, rest)) = self.fragments.split_first() else {
            return false;
        };
        let Some((last, middle)) = rest.split_last() else {
            return text == first;
        };
        let Some(mut text) = text.strip_prefix(first.as_str()) else {
            return false;
        };
        let Some(end) = text.len().checked_sub(last.len()) else {
            return false;
        };
        if !text.is_char_boundary(end) || text.get(end..) != Some(last.as_str()) {
            return false;
        }
        text = text.get(..end).unwrap_or_default();
        for fragment in middle {
            match text.find(fragment.as_str()) {
                Some(at) => text = text.get(at + fragment.len()..).unwrap_or_default(),
                None => return false,
            }
        }
        true
    }
}

/// A number of a statement or of the arguments, as a double: every number
/// Mandate accepts lies within ±(2^53 − 1), where doubles are exact for
/// integers.
fn number(value: &Value) -> Option<f64> {
    value.as_f64()
}

/// Deep equality with numbers compared by value (`1`, `1.0` and `1e0` are
/// equal).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => number(a) == number(b),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(name, a)| y.get(name).is_some_and(|b| json_eq(a, b)))
        }
        _ => a == b,
    }
}

impl Statement {
    /// The statement's truth over `args`.
    pub fn evaluate(&self, args: &Value) -> Truth {
        match self {
            Statement::Eq(sel, value) => match sel.select(args) {
                Some(found) => Truth::from(json_eq(&found, value)),
                None => Truth::Undefined,
            },
            Statement::Ne(sel, value) => match sel.select(args) {
                Some(found) => Truth::from(!json_eq(&found, value)),
                None => Truth::Undefined,
            },
            Statement::Compare(op, sel, bound) => {
                match sel.select(args).as_deref().and_then(number) {
                    Some(x) => Truth::from(match op {
                        Comparison::Lt => x < *bound,
                        Comparison::Le => x <= *bound,
                        Comparison::Gt => x > *bound,
                        Comparison::Ge => x >= *bound,
                    }),
                    None => Truth::Undefined,
                }
            }
            Statement::Like(sel, glob) => match sel.select(args).as_deref() {
                Some(Value::String(text)) => Truth::from(glob.matches(text)),
                _ => Truth::Undefined,
            },
            Statement::Not(inner) => inner.evaluate(args).not(),
            Statement::And(inner) => Truth::all(inner.iter().map(|s| s.evaluate(args))),
            // UCAN: an empty `or` holds (its published fixtures say so).
            Statement::Or(inner) if inner.is_empty() => Truth::True,
            Statement::Or(inner) => Truth::any(inner.iter().map(|s| s.evaluate(args))),
            Statement::All(sel, inner) => over(sel, args, &mut |items| {
                Truth::all(items.map(|item| inner.evaluate(item)))
            }),
            Statement::Any(sel, inner) => over(sel, args, &mut |items| {
                Truth::any(items.map(|item| inner.evaluate(item)))
            }),
        }
    }
}

/// `judge` over the elements `all` and `any` range over: an array's
/// elements or an object's member values; undefined for anything else or
/// nothing found.
fn over(
    sel: &Selector,
    args: &Value,
    judge: &mut dyn FnMut(&mut dyn Iterator<Item = &Value>) -> Truth,
) -> Truth {
    let Some(found) = sel.select(args) else {
        return Truth::Undefined;
    };
    match found.as_ref() {
        Value::Array(items) => judge(&mut items.iter()),
        Value::Object(members) => judge(&mut members.values()),
        _ => Truth::Undefined,
    }
}

/// Counts statements and depth while a policy is parsed.
pub(super) struct Budget {
    pub(super) statements: usize,
}

/// Parses one statement at `path` (for errors), `depth` levels down (1 at
/// the top of a policy).
pub(super) fn parse(
    value: &Value,
    path: &str,
    depth: usize,
    budget: &mut Budget,
) -> Result<Statement, PolicyError> {
    let fault = |fault: PolicyFault, at: String| Err(PolicyError { path: at, fault });
    if depth > MAX_POLICY_DEPTH {
        return fault(PolicyFault::TooDeep, path.to_owned());
    }
    budget.statements += 1;
    if budget.statements > MAX_POLICY_STATEMENTS {
        return fault(PolicyFault::TooManyStatements, path.to_owned());
    }
    let Value::Array(parts) = value else {
        return fault(PolicyFault::MalformedStatement, path.to_owned());
    };
    let Some(Value::String(op)) = parts.first() else {
        return fault(PolicyFault::MalformedStatement, format!("{path}[0]"));
    };
    let arity = match op.as_str() {
        "==" | "!=" | "<" | "<=" | ">" | ">=" | "like" | "all" | "any" => 3,
        "not" | "and" | "or" => 2,
        _ => return fault(PolicyFault::UnknownOperator, format!("{path}[0]")),
    };
    if parts.len() != arity {
        return fault(PolicyFault::MalformedStatement, path.to_owned());
    }
    let at = |i: usize| format!("{path}[{i}]");
    let second = parts.get(1).unwrap_or(&Value::Null);
    let third = parts.get(2).unwrap_or(&Value::Null);
    let selector = || match second {
        Value::String(text) => Selector::parse(text).map_err(|_| PolicyError {
            path: at(1),
            fault: PolicyFault::MalformedSelector,
        }),
        _ => Err(PolicyError {
            path: at(1),
            fault: PolicyFault::MalformedSelector,
        }),
    };
    let bound = || match number(third) {
        Some(x) if x.abs() <= MAX_JSON_SAFE_INTEGER as f64 => Ok(x),
        _ => Err(PolicyError {
            path: at(2),
            fault: PolicyFault::NotANumber,
        }),
    };
    Ok(match op.as_str() {
        "==" => Statement::Eq(selector()?, third.clone()),
        "!=" => Statement::Ne(selector()?, third.clone()),
        "<" => Statement::Compare(Comparison::Lt, selector()?, bound()?),
        "<=" => Statement::Compare(Comparison::Le, selector()?, bound()?),
        ">" => Statement::Compare(Comparison::Gt, selector()?, bound()?),
        ">=" => Statement::Compare(Comparison::Ge, selector()?, bound()?),
        "like" => {
            let selector = selector()?;
            let glob = third.as_str().and_then(Glob::parse).ok_or(PolicyError {
                path: at(2),
                fault: PolicyFault::MalformedPattern,
            })?;
            Statement::Like(selector, glob)
        }
        "all" | "any" => {
            let selector = selector()?;
            let inner = Box::new(parse(third, &at(2), depth + 1, budget)?);
            if op == "all" {
                Statement::All(selector, inner)
            } else {
                Statement::Any(selector, inner)
            }
        }
        "not" => Statement::Not(Box::new(parse(second, &at(1), depth + 1, budget)?)),
        _ => {
            let Value::Array(items) = second else {
                return fault(PolicyFault::MalformedStatement, at(1));
            };
            let inner = items
                .iter()
                .enumerate()
                .map(|(i, item)| parse(item, &format!("{path}[1][{i}]"), depth + 1, budget))
                .collect::<Result<Vec<_>, _>>()?;
            if op == "and" {
                Statement::And(inner)
            } else {
                Statement::Or(inner)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(p: &str) -> Glob {
        Glob::parse(p).unwrap()
    }

    #[test]
    fn globs() {
        for (pattern, text, expected) in [
            ("hello world", "hello world", true),
            ("*@example.com", "alice@example.com", true),
            ("*@example.com", "alice@example.com.evil", false),
            ("hello*", "hello world", true),
            ("h*o*d", "hello world", true),
            ("*", "", true),
            ("*", "anything", true),
            ("", "", true),
            ("", "x", false),
            ("\\*", "*", true),
            ("\\*", "x", false),
            ("a*a", "a", false),
            ("a*a", "aa", true),
            ("*é*", "café", true),
            ("caf*", "café", true),
            ("*\u{e9}", "cafe\u{301}", false),
            ("日本*", "日本語", true),
            ("**", "", true),
            ("a*b*c", "abc", true),
            ("a*b*c", "acb", false),
        ] {
            assert_eq!(glob(pattern).matches(text), expected, "{pattern} ~ {text}");
        }
        for bad in ["\\", "a\\b", "\\\\*", "x\\"] {
            assert_eq!(Glob::parse(bad), None, "{bad}");
        }
    }
}
