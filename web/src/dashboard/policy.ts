// Argument rules in words (DESIGN §15): a grant's `constraints.args` rules
// and `require_approval.args` statements, UCAN 1.0's policy language, read
// out for a person — `send on mail:*: .to like "*@example.com"`. Pure (no
// DOM), so a node test runs it as it is; the token page puts the words in
// text nodes. A statement the server would not have taken (it checks every
// one at issue and delegate) is shown as its JSON, never guessed at.

const COMPARISONS = new Set(["==", "!=", "<", "<=", ">", ">=", "like"]);

/** A value as it reads in a statement: JSON (strings quoted, as written in the rule). */
function value(json: unknown): string {
  return JSON.stringify(json) ?? String(json);
}

function isSelector(json: unknown): json is string {
  return typeof json === "string" && json.startsWith(".");
}

/**
 * One statement in words. A comparison inside `all`/`any` whose selector is
 * `.` (the element itself) drops it: `all .to: like "*@example.com"`.
 */
export function statementWords(statement: unknown, inElement = false): string {
  if (!Array.isArray(statement) || typeof statement[0] !== "string") {
    return value(statement);
  }
  const [operator, first, second] = statement as [string, unknown, unknown];
  if (COMPARISONS.has(operator) && statement.length === 3 && isSelector(first)) {
    return inElement && first === "." ? `${operator} ${value(second)}` : `${first} ${operator} ${value(second)}`;
  }
  if (operator === "not" && statement.length === 2) {
    return `not (${statementWords(first, inElement)})`;
  }
  if ((operator === "and" || operator === "or") && statement.length === 2 && Array.isArray(first)) {
    if (first.length === 0) {
      // UCAN: an empty `and` holds, an empty `or` does not.
      return operator === "and" ? "always" : "never";
    }
    const parts = first.map((part) => statementWords(part, inElement));
    return parts.length === 1 ? (parts[0] ?? "") : `(${parts.join(` ${operator} `)})`;
  }
  if ((operator === "all" || operator === "any") && statement.length === 3 && isSelector(first)) {
    return `${operator} ${first}: ${statementWords(second, true)}`;
  }
  return value(statement);
}

/** What a rule applies to: `send on mail:*`, `every action on fs:/srv/*`, `send, read on every resource`. */
export function ruleScope(rule: unknown): string {
  const members = typeof rule === "object" && rule !== null ? (rule as Record<string, unknown>) : {};
  const list = (json: unknown, all: string): string =>
    Array.isArray(json) && json.length > 0 ? json.map((item) => String(item)).join(", ") : all;
  return `${list(members["actions"], "every action")} on ${list(members["resources"], "every resource")}`;
}

/** A rule's statements in words, one a line: every one must hold (none: it always does). */
export function ruleStatements(rule: unknown): string[] {
  const pol = typeof rule === "object" && rule !== null ? (rule as Record<string, unknown>)["pol"] : undefined;
  if (!Array.isArray(pol)) {
    return [value(pol)];
  }
  return pol.length === 0 ? ["always"] : pol.map((statement) => statementWords(statement));
}

/** A rule on one line: `send on mail:*: .to like "*@example.com" and .count <= 5`. */
export function ruleWords(rule: unknown): string {
  return `${ruleScope(rule)}: ${ruleStatements(rule).join(" and ")}`;
}

/**
 * `require_approval.args` in words. Approval is also asked when a statement
 * cannot be decided (a field missing or of another type): failing closed
 * for an approval condition means asking.
 */
export function approvalWords(statements: unknown): string {
  const list = Array.isArray(statements) ? statements : [statements];
  const words = list.map((statement) => statementWords(statement)).join(" and ");
  return list.length === 1
    ? `require approval when ${words} (or when it is missing)`
    : `require approval when ${words} (or when that cannot be decided: a field missing)`;
}
