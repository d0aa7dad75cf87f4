//! The cost of one identity-verifier plugin call: a fresh wasmtime store and
//! instance of the reference plugin, the JSON in and the verdict out. Prints
//! JSON. `plugin_cost <reference_verifier.wasm> [--quick]`

use std::hint::black_box;
use std::time::Duration;

use mandate_bench::{Spread, interleave};
use mandate_host::assurance::plugin::{Limits, Plugin};
use mandate_host::assurance::verifier::IDENTITY_VERIFIER_KIND;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let module = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: plugin_cost <module.wasm> [--quick]"))?;
    let quick = args.any(|a| a == "--quick");
    let (rounds, calls) = if quick { (3, 20) } else { (11, 300) };
    let limits = Limits {
        fuel: 50_000_000,
        memory_bytes: 32 << 20,
        timeout: Duration::from_secs(1),
    };
    let compiled = std::time::Instant::now();
    let plugin = Plugin::load(module.as_ref(), IDENTITY_VERIFIER_KIND, limits)?;
    let compile_ms = compiled.elapsed().as_secs_f64() * 1000.0;
    let captures: Vec<serde_json::Value> = [
        "face_liveness",
        "deepfake_detection",
        "voice",
        "gesture",
        "geolocation",
        "behavioural",
    ]
    .iter()
    .map(|m| serde_json::json!({"modality": m, "score": 0.97}))
    .collect();
    let input = serde_json::to_vec(&serde_json::json!({
        "verifier": "reference",
        "evidence": {"subject": "person-42", "captures": captures}
    }))?;
    let verdict = plugin.call(&input).map_err(|e| anyhow::anyhow!("{e}"))?;
    anyhow::ensure!(
        String::from_utf8_lossy(&verdict).contains("\"verified\":true"),
        "the plugin did not verify"
    );
    let mut call = || {
        black_box(plugin.call(black_box(&input)).is_ok());
    };
    let samples = interleave(rounds, calls, &mut [&mut call]);
    let report = serde_json::json!({
        "compile_ms": compile_ms,
        "module_bytes": std::fs::metadata(&module)?.len(),
        "call_ns": Spread::of(&samples[0]).json(),
    });
    #[allow(clippy::print_stdout, reason = "the report is the program's output")]
    {
        println!("{report}");
    }
    Ok(())
}
