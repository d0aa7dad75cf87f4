//! The rule vectors of `tests/vectors/` that the SDK has no export for
//! (token status, governance, refusals, counts changes, budget chains,
//! the permission table of roles, the status list encodings of the IETF
//! draft, approval before the act, Mandate's webhook payloads and event
//! times, W3C `traceparent`),
//! judged by core compiled for wasm32 and run under Node
//! (`wasm-bindgen-test`). The judge is core's own, the same source its
//! native `vectors` test runs, so both builds must reach the same verdicts;
//! the module the package ships is left as it is.

#![cfg(target_arch = "wasm32")]

#[path = "../../core/tests/rules/mod.rs"]
mod rules;

use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen_test]
fn status_vectors() {
    rules::token_status();
}

#[wasm_bindgen_test]
fn governance_vectors() {
    rules::governance();
}

#[wasm_bindgen_test]
fn refusal_vectors() {
    rules::refusals();
}

#[wasm_bindgen_test]
fn counts_vectors() {
    rules::counts();
}

#[wasm_bindgen_test]
fn budget_vectors() {
    rules::budgets();
}

#[wasm_bindgen_test]
fn role_vectors() {
    rules::roles();
}

#[wasm_bindgen_test]
fn status_list_encoding_vectors() {
    rules::status_list_encodings();
}

#[wasm_bindgen_test]
fn approval_requirement_vectors() {
    rules::approvals::approval_requirements();
}

#[wasm_bindgen_test]
fn approval_matching_vectors() {
    rules::approvals::approval_matching();
}

#[wasm_bindgen_test]
fn approval_narrowing_vectors() {
    rules::approvals::approval_narrowing();
}

#[wasm_bindgen_test]
fn approval_reachability_vectors() {
    rules::approvals::approval_reachability();
}

#[wasm_bindgen_test]
fn approval_lifecycle_vectors() {
    rules::approvals::approval_lifecycle();
}

#[wasm_bindgen_test]
fn approval_leaf_vectors() {
    rules::approvals::approval_leaves();
}

#[wasm_bindgen_test]
fn args_evaluation_vectors() {
    rules::args::evaluations();
}

#[wasm_bindgen_test]
fn args_rule_error_vectors() {
    rules::args::rule_errors();
}

#[wasm_bindgen_test]
fn args_form_vectors() {
    rules::args::args_forms();
}

#[wasm_bindgen_test]
fn args_check_vectors() {
    rules::args::checks();
}

#[wasm_bindgen_test]
fn args_narrowing_vectors() {
    rules::args::narrowing();
}

#[wasm_bindgen_test]
fn args_approval_vectors() {
    rules::args::approval();
}

#[wasm_bindgen_test]
fn webhook_payload_vectors() {
    rules::webhook_payloads();
}

#[wasm_bindgen_test]
fn traceparent_vectors() {
    rules::traceparents();
}

#[wasm_bindgen_test]
fn trust_graph_vectors() {
    rules::trust::trust_graphs();
}

#[wasm_bindgen_test]
fn trust_statement_vectors() {
    rules::trust::trust_statements();
}
