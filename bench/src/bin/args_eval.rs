//! Argument constraints, natively, side by side in one process, over the
//! grant and arguments of `bench/args/grant.json`: judging the grant's
//! rules over arguments already parsed (what the server does per attempt
//! after reading the body), the same with reading the arguments strictly,
//! writing their canonical form and hashing it (`args_hash`) first, and
//! `evaluate_json` of the rules' statements as one policy over the
//! arguments' text (what the wasm `evaluatePolicy` does, for the wasm
//! row). Prints JSON: nanoseconds per call, median and range of the rounds.
//!
//! `args_eval [--quick]`

use std::hint::black_box;

use mandate_bench::{Spread, interleave};
use mandate_core::policy::evaluate_json;
use mandate_core::{Action, Args, ArgsRules, Resource, Truth, check_args};
use serde_json::{Value, json};

/// The benchmark's grant and arguments.
const FIXTURE: &str = include_str!("../../args/grant.json");

fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let fixture: Value = serde_json::from_str(FIXTURE)?;
    let text = |name: &str| fixture[name].as_str().unwrap_or_default().to_owned();
    let action = Action::parse(&text("action"))?;
    let resource = Resource::parse(&text("resource"))?;
    let rules = ArgsRules::parse(&fixture["rules"], "rules")?;
    let args_text = serde_json::to_vec(&fixture["args"])?;
    let args = Args::parse(&args_text)?;
    // Every rule applies to this attempt, so their statements together are
    // one policy: what `evaluatePolicy` is given in the wasm row.
    let statements: Vec<Value> = rules
        .rules()
        .iter()
        .flat_map(|rule| rule.pol().source().as_array().cloned().unwrap_or_default())
        .collect();
    let pol_text = serde_json::to_vec(&statements)?;

    // The fixture's arguments satisfy its rules: the benchmark times the
    // permitted path, where every statement is judged.
    anyhow::ensure!(check_args(&rules, &action, &resource, Some(&args)).is_ok());
    anyhow::ensure!(evaluate_json(&pol_text, &args_text)? == Truth::True);
    anyhow::ensure!(statements.len() == 10 && rules.rules().len() == 3);

    let (rounds, calls) = if quick { (2, 2_000) } else { (7, 100_000) };
    let samples = interleave(
        rounds,
        calls,
        &mut [
            &mut || {
                black_box(check_args(
                    black_box(&rules),
                    &action,
                    &resource,
                    Some(black_box(&args)),
                ))
                .ok();
            },
            &mut || {
                let args = Args::parse(black_box(&args_text)).expect("parses");
                black_box(args.hash());
                black_box(check_args(&rules, &action, &resource, Some(&args))).ok();
            },
            &mut || {
                black_box(evaluate_json(black_box(&pol_text), black_box(&args_text))).ok();
            },
        ],
    );
    let spread = |i: usize| Spread::of(&samples[i]).json();
    let out = json!({
        "statements": statements.len(),
        "args_bytes": args.canonical().len(),
        "check_ns": spread(0),
        "parse_hash_check_ns": spread(1),
        "evaluate_json_ns": spread(2),
    });
    #[allow(clippy::print_stdout, reason = "the report is the program's output")]
    {
        println!("{out}");
    }
    Ok(())
}
