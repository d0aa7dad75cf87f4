//! Shared measuring for the benchmark programs: interleaved rounds, medians
//! and spreads. The machines these run on are shared and noisy, so every
//! comparison runs its contenders in turn within each round, and reports the
//! median of the per-round figures with their range.

use std::time::Instant;

/// Median and range of a set of samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// The spread of `samples` (which must not be empty).
    pub fn of(samples: &[f64]) -> Spread {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN);
        Spread {
            median,
            min: sorted.first().copied().unwrap_or(f64::NAN),
            max: sorted.last().copied().unwrap_or(f64::NAN),
        }
    }

    /// As JSON: `{median, min, max}`.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({"median": self.median, "min": self.min, "max": self.max})
    }
}

/// Nanoseconds per call of `f`, over `calls` calls.
pub fn time_per_call(calls: u32, mut f: impl FnMut()) -> f64 {
    let started = Instant::now();
    for _ in 0..calls {
        f();
    }
    started.elapsed().as_nanos() as f64 / f64::from(calls)
}

/// Runs each contender `calls` times per round, in turn, for `rounds`
/// rounds after one warm-up round; returns per-round nanoseconds per call,
/// one list per contender.
pub fn interleave(rounds: u32, calls: u32, contenders: &mut [&mut dyn FnMut()]) -> Vec<Vec<f64>> {
    let mut samples = vec![Vec::new(); contenders.len()];
    for round in 0..=rounds {
        for (i, contender) in contenders.iter_mut().enumerate() {
            let ns = time_per_call(calls, &mut **contender);
            if round > 0
                && let Some(list) = samples.get_mut(i)
            {
                list.push(ns);
            }
        }
    }
    samples
}

/// Per-round ratios `a[i] / b[i]`.
pub fn ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(a, b)| a / b).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_and_ratios() {
        let spread = Spread::of(&[3.0, 1.0, 2.0]);
        assert_eq!((spread.median, spread.min, spread.max), (2.0, 1.0, 3.0));
        assert_eq!(ratios(&[2.0, 9.0], &[1.0, 3.0]), [2.0, 3.0]);
        let mut calls = 0;
        let samples = interleave(2, 3, &mut [&mut || calls += 1]);
        assert_eq!(samples[0].len(), 2);
        assert_eq!(calls, 9);
    }
}
