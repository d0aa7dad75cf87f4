//! `traceparent.json`: W3C Trace Context `traceparent` values read or
//! refused (with the code core gives), the headers of child spans, and
//! new traces. Many values follow the cases of the W3C test suite
//! (`test/test.py` of w3c/trace-context), written out here.

use mandate_core::{SpanId, TraceId, TraceParent};
use serde_json::{Value, json};

use crate::{Rng, hex};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";
/// The W3C test suite's ids.
const SUITE_TRACE: &str = "12345678901234567890123456789012";
const SUITE_PARENT: &str = "1234567890123456";

fn parse_case(name: &str, header: &str) -> Value {
    let expect = match TraceParent::parse(header) {
        Ok(parsed) => json!({
            "valid": true,
            "trace_id": parsed.trace_id.to_string(),
            "parent_id": parsed.parent_id.to_string(),
            "flags": parsed.flags.bits(),
            "sampled": parsed.flags.sampled(),
            "random": parsed.flags.random(),
            "header": parsed.to_string(),
        }),
        Err(error) => json!({"valid": false, "error": error.code()}),
    };
    json!({"name": name, "header": header, "expect": expect})
}

pub(crate) fn traceparent_vectors(rng: &mut Rng) -> Value {
    let (t, p) = (TRACE, PARENT);
    let (st, sp) = (SUITE_TRACE, SUITE_PARENT);
    let upper_hex_trace = TRACE.to_uppercase();
    let upper_hex_parent = PARENT.to_uppercase();
    let zeros32 = "0".repeat(32);
    let zeros16 = "0".repeat(16);
    let parse: Vec<Value> = [
        ("sampled", format!("00-{t}-{p}-01")),
        ("not_sampled", format!("00-{t}-{p}-00")),
        ("random_trace_id", format!("00-{t}-{p}-02")),
        ("every_flag", format!("00-{t}-{p}-ff")),
        ("suite_ids", format!("00-{st}-{sp}-01")),
        ("leading_space", format!(" 00-{st}-{sp}-01")),
        ("leading_tab", format!("\t00-{st}-{sp}-01")),
        ("trailing_space", format!("00-{st}-{sp}-01 ")),
        ("trailing_tab", format!("00-{st}-{sp}-01\t")),
        ("spaces_and_tabs_around", format!("\t 00-{st}-{sp}-01 \t")),
        ("higher_version", format!("cc-{st}-{sp}-01")),
        (
            "higher_version_more_fields",
            format!("cc-{st}-{sp}-01-what-the-future-will-be-like"),
        ),
        (
            "higher_version_unknown_flags_dropped",
            format!("cc-{st}-{sp}-ff"),
        ),
        ("version_fe", format!("fe-{st}-{sp}-01")),
        (
            "version_00_more_fields",
            format!("00-{st}-{sp}-01-what-the-future-will-be-like"),
        ),
        ("version_00_trailing_dash", format!("00-{st}-{sp}-01-")),
        ("version_00_trailing_dot", format!("00-{st}-{sp}-01.")),
        (
            "higher_version_flags_then_dot",
            format!("cc-{st}-{sp}-01.what-the-future-will-be-like"),
        ),
        ("version_ff", format!("ff-{st}-{sp}-01")),
        ("version_upper_case", format!("0A-{st}-{sp}-01")),
        ("version_illegal_first", format!(".0-{st}-{sp}-01")),
        ("version_illegal_second", format!("0.-{st}-{sp}-01")),
        ("version_three_digits", format!("000-{st}-{sp}-01")),
        ("version_four_digits", format!("0000-{st}-{sp}-01")),
        ("version_one_digit", format!("0-{st}-{sp}-01")),
        ("trace_id_all_zeros", format!("00-{zeros32}-{sp}-01")),
        (
            "trace_id_upper_case",
            format!("00-{upper_hex_trace}-{p}-01"),
        ),
        (
            "trace_id_illegal_first",
            format!("00-.2345678901234567890123456789012-{sp}-01"),
        ),
        (
            "trace_id_illegal_last",
            format!("00-1234567890123456789012345678901.-{sp}-01"),
        ),
        ("trace_id_33_digits", format!("00-{st}3-{sp}-01")),
        ("trace_id_31_digits", format!("00-{}-{sp}-01", &st[..31])),
        ("parent_id_all_zeros", format!("00-{st}-{zeros16}-01")),
        (
            "parent_id_upper_case",
            format!("00-{t}-{upper_hex_parent}-01"),
        ),
        (
            "parent_id_illegal_first",
            format!("00-{st}-.234567890123456-01"),
        ),
        (
            "parent_id_illegal_last",
            format!("00-{st}-123456789012345.-01"),
        ),
        ("parent_id_17_digits", format!("00-{st}-{sp}7-01")),
        ("parent_id_15_digits", format!("00-{st}-{}-01", &sp[..15])),
        ("flags_illegal_first", format!("00-{st}-{sp}-.0")),
        ("flags_illegal_second", format!("00-{st}-{sp}-0.")),
        ("flags_upper_case", format!("00-{st}-{sp}-0F")),
        ("flags_three_digits", format!("00-{st}-{sp}-001")),
        ("flags_one_digit", format!("00-{st}-{sp}-1")),
        (
            "higher_version_trace_id_upper_case",
            format!("cc-{upper_hex_trace}-{p}-01"),
        ),
        (
            "higher_version_trace_id_all_zeros",
            format!("cc-{zeros32}-{sp}-01"),
        ),
        (
            "higher_version_parent_id_all_zeros",
            format!("cc-{st}-{zeros16}-01"),
        ),
        ("higher_version_shorter_than_55", format!("cc-{st}-{sp}-1")),
        ("missing_flags", format!("00-{st}-{sp}")),
        ("missing_parent_and_flags", format!("00-{st}")),
        ("version_only", "00".to_owned()),
        ("version_and_dash", "00-".to_owned()),
        ("underscores", format!("00_{st}_{sp}_01")),
        ("empty", String::new()),
        ("inner_space", format!("00-{st} -{sp}-01")),
    ]
    .iter()
    .map(|(name, header)| parse_case(name, header))
    .collect();

    let child = |name: &str, parent: &str, span: [u8; 8]| {
        let expect = match (TraceParent::parse(parent), SpanId::from_bytes(span)) {
            (Ok(parent), Ok(span)) => json!({"header": parent.child(span).to_string()}),
            (Err(error), _) | (_, Err(error)) => json!({"error": error.code()}),
        };
        json!({"name": name, "parent": parent, "span_id": hex(&span), "expect": expect})
    };
    let children = vec![
        child(
            "sampled",
            &format!("00-{t}-{p}-01"),
            rng.bytes("child span id"),
        ),
        child(
            "not_sampled",
            &format!("00-{t}-{p}-00"),
            rng.bytes("child span id"),
        ),
        child(
            "unknown_flags_cleared",
            &format!("00-{t}-{p}-ff"),
            rng.bytes("child span id"),
        ),
        child(
            "from_a_higher_version",
            &format!("cc-{t}-{p}-03-future"),
            rng.bytes("child span id"),
        ),
        child("zero_span_id", &format!("00-{t}-{p}-01"), [0; 8]),
    ];
    let start = |name: &str, trace: [u8; 16], span: [u8; 8], sampled: bool| {
        let expect = match (TraceId::from_bytes(trace), SpanId::from_bytes(span)) {
            (Ok(trace), Ok(span)) => {
                json!({"header": TraceParent::start(trace, span, sampled).to_string()})
            }
            (Err(error), _) | (_, Err(error)) => json!({"error": error.code()}),
        };
        json!({"name": name, "trace_id": hex(&trace), "span_id": hex(&span), "sampled": sampled, "expect": expect})
    };
    let starts = vec![
        start(
            "sampled",
            rng.bytes("new trace id"),
            rng.bytes("new span id"),
            true,
        ),
        start(
            "not_sampled",
            rng.bytes("new trace id"),
            rng.bytes("new span id"),
            false,
        ),
        start("zero_trace_id", [0; 16], rng.bytes("new span id"), true),
        start("zero_span_id", rng.bytes("new trace id"), [0; 8], true),
    ];
    json!({
        "description": "W3C Trace Context `traceparent` vectors. `parse`: read `header`; expect its trace-id, parent-id, flags (as a number, with the sampled and random-trace-id bits) and the header written again as version 00, or the code of the refusal. `children`: the header of a child span of `parent` whose id is `span_id` (the caller's random bytes, hex); unknown flags are cleared. `starts`: a new trace from random `trace_id` and `span_id` bytes (hex), sampled or not; the random-trace-id flag is set.",
        "generator": "cargo xtask vectors",
        "parse": parse,
        "children": children,
        "starts": starts,
    })
}
