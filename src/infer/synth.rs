//! Synthetic EPG-shaped random DAGs with test evidence, for benchmarks and stress tests.
//!
//! Shape (vertices are numbered in creation order, so every edge goes from a lower to a higher id):
//! * `n / 25` *statement* roots (ids `0..S`), each shared by many runtime values; statement use is
//!   skewed (half of the uses go to a few hot statements, half to a per-trace code region);
//! * the remaining vertices are runtime *values*, grouped into traces (tests) of 200–4000 values;
//!   a value has its statement as parent, often a recent control-dependence value, and 1+
//!   data-dependence parents, mostly recent ones (chains) and sometimes any earlier value of the
//!   same trace; in-degree is mostly 2–6, and about 0.2 % of the values (aggregates, counterfactual
//!   vertices) have a heavy tail of 20–300 parents;
//! * evidence as in PROSECUTOR §3.3: a trace fails with probability 5 % (at most 8 failing
//!   traces, at least 1); all values of passing traces are observed correct; in each failing
//!   trace the last 1–3 values are observed incorrect and the rest is unobserved; one statement in 20 (test-procedure code) is observed correct, never the
//!   statement of a failure point, so the evidence always has positive probability (for p > 0).

use super::Dag;

/// Probability that a trace (test) fails, and the most failing traces in one graph (a bug is
/// typically revealed by a handful of failing tests; at least one trace always fails).
const FAILING_TRACE_PROB: f64 = 0.05;
const MAX_FAILING_TRACES: usize = 8;

/// SplitMix64 pseudo-random generator (Steele, Lea, Flood 2014).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Geometric number of failures before a success, with mean `mean`.
    pub fn geometric(&mut self, mean: f64) -> usize {
        let q = mean / (1.0 + mean);
        let u = self.next_f64();
        ((1.0 - u).ln() / q.ln()).floor().min(1e9) as usize
    }

    /// Bernoulli(prob).
    pub fn chance(&mut self, prob: f64) -> bool {
        self.next_f64() < prob
    }
}

/// A realistic EPG-shaped random DAG with `n` vertices and evidence (see the module docs).
/// Deterministic in `(n, seed)`.
pub fn synthetic_dag(n: usize, seed: u64) -> (Dag, Vec<Option<bool>>) {
    let mut rng = SplitMix64::new(seed ^ 0x005E_ED0F_E9C0_u64);
    let n_stmt = (n / 25).max(1).min(n);
    let is_test_stmt = |s: usize| s.checked_rem(20) == Some(0);
    let mut evidence: Vec<Option<bool>> = vec![None; n];
    for (s, e) in evidence.iter_mut().enumerate().take(n_stmt) {
        if is_test_stmt(s) {
            *e = Some(true);
        }
    }
    let mut edges: Vec<(u32, u32)> = Vec::with_capacity(n * 4);
    let mut traces: Vec<(usize, usize, bool)> = Vec::new();
    let mut start = n_stmt;
    let mut n_failing = 0usize;
    while start < n {
        let len = (200 + rng.below(3801)).min(n - start);
        let failing = n_failing < MAX_FAILING_TRACES && rng.chance(FAILING_TRACE_PROB);
        n_failing += failing as usize;
        traces.push((start, start + len, failing));
        start += len;
    }
    if !traces.iter().any(|t| t.2) {
        if let Some(t) = traces.last_mut() {
            t.2 = true;
        }
    }
    let hot = (n_stmt / 50).max(1);
    let region = 500.min(n_stmt);
    for &(t0, t1, failing) in &traces {
        let base = rng.below(n_stmt);
        let n_fail = if failing { 1 + rng.below(3) } else { 0 };
        let fail_from = t1.saturating_sub(n_fail).max(t0);
        for v in t0..t1 {
            let fail_point = failing && v >= fail_from;
            // statement parent
            let mut s = if rng.chance(0.5) {
                let u = rng.next_f64();
                ((hot as f64) * u * u) as usize
            } else {
                (base + rng.below(region)) % n_stmt
            };
            if fail_point && is_test_stmt(s) {
                s = (s + 1) % n_stmt;
                if is_test_stmt(s) {
                    // only possible when n_stmt == 1: leave the statement unobserved
                    evidence[s] = None;
                }
            }
            edges.push((s as u32, v as u32));
            let avail = v - t0; // earlier values in this trace
            if avail > 0 {
                let recent =
                    |rng: &mut SplitMix64, mean: f64| v - 1 - rng.geometric(mean).min(avail - 1);
                if rng.chance(0.5) {
                    let u = recent(&mut rng, 8.0);
                    edges.push((u as u32, v as u32));
                }
                let d = 1 + rng.geometric(1.2).min(8);
                for _ in 0..d {
                    let u = if rng.chance(0.8) {
                        recent(&mut rng, 20.0)
                    } else {
                        t0 + rng.below(avail)
                    };
                    edges.push((u as u32, v as u32));
                }
                if rng.chance(0.002) {
                    let u = rng.next_f64();
                    let extra = 20 + (280.0 * u * u) as usize;
                    for _ in 0..extra {
                        let w = t0 + rng.below(avail);
                        edges.push((w as u32, v as u32));
                    }
                }
            }
            evidence[v] = if failing {
                if fail_point {
                    Some(false)
                } else {
                    None
                }
            } else {
                Some(true)
            };
        }
    }
    let dag = match Dag::from_edges(n, &edges) {
        Ok(d) => d,
        // Unreachable: all edges go from a lower to a higher id and all ids are < n.
        Err(e) => unreachable!("synthetic DAG construction failed: {e}"),
    };
    (dag, evidence)
}
