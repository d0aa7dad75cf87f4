//! What the measurements say: wrk's output read into a [`Load`] per run,
//! the bench programs' JSON read into a [`Spread`], and a comparison's
//! rounds folded into the median and range of one figure.

use serde_json::Value;

/// Median and range of per-round figures.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spread {
    pub(super) median: f64,
    pub(super) min: f64,
    pub(super) max: f64,
}

impl Spread {
    pub(super) fn of(samples: &[f64]) -> Spread {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        Spread {
            median: sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN),
            min: sorted.first().copied().unwrap_or(f64::NAN),
            max: sorted.last().copied().unwrap_or(f64::NAN),
        }
    }

    pub(super) fn from_json(value: &Value) -> Spread {
        let get = |k: &str| value[k].as_f64().unwrap_or(f64::NAN);
        Spread {
            median: get("median"),
            min: get("min"),
            max: get("max"),
        }
    }
}

/// One load run of wrk.
#[derive(Debug, Clone, Copy)]
pub(super) struct Load {
    pub(super) rps: f64,
    pub(super) p50_ms: f64,
    pub(super) p99_ms: f64,
    pub(super) errors: u64,
}

pub(super) fn ms(text: &str) -> f64 {
    let (number, unit) = text.split_at(
        text.find(|c: char| c.is_ascii_alphabetic())
            .unwrap_or(text.len()),
    );
    let value: f64 = number.parse().unwrap_or(f64::NAN);
    match unit {
        "us" => value / 1000.0,
        "ms" => value,
        "s" => value * 1000.0,
        _ => f64::NAN,
    }
}

pub(super) fn parse_wrk(output: &str) -> Load {
    let mut load = Load {
        rps: f64::NAN,
        p50_ms: f64::NAN,
        p99_ms: f64::NAN,
        errors: 0,
    };
    for line in output.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["Requests/sec:", rps] => load.rps = rps.parse().unwrap_or(f64::NAN),
            ["50%", value] => load.p50_ms = ms(value),
            ["99%", value] => load.p99_ms = ms(value),
            ["Non-2xx", "or", "3xx", "responses:", n] => {
                load.errors += n.parse::<u64>().unwrap_or(0)
            }
            ["Socket", "errors:", rest @ ..] => {
                load.errors += rest
                    .iter()
                    .filter_map(|w| w.trim_end_matches(',').parse::<u64>().ok())
                    .sum::<u64>();
            }
            _ => {}
        }
    }
    load
}

pub(super) fn rps(loads: &[Load]) -> Spread {
    Spread::of(&loads.iter().map(|l| l.rps).collect::<Vec<_>>())
}

pub(super) fn p(loads: &[Load], pick: fn(&Load) -> f64) -> Spread {
    Spread::of(&loads.iter().map(pick).collect::<Vec<_>>())
}

pub(super) fn ratio(a: &[Load], b: &[Load]) -> Spread {
    Spread::of(
        &a.iter()
            .zip(b)
            .map(|(a, b)| a.rps / b.rps)
            .collect::<Vec<_>>(),
    )
}

/// Per-round ratios of the p99 latencies of `a` and `b`.
pub(super) fn p99_ratio(a: &[Load], b: &[Load]) -> Spread {
    Spread::of(
        &a.iter()
            .zip(b)
            .map(|(a, b)| a.p99_ms / b.p99_ms)
            .collect::<Vec<_>>(),
    )
}

pub(super) fn errors(loads: &[Load]) -> u64 {
    loads.iter().map(|l| l.errors).sum()
}
