//! Aggregation helpers used by the papers' evaluations (CP spec §4/§6.8,
//! HT_Rank spec §3): summary statistics, "% of faults located within x%
//! effort", difference bins, %Δ and percentage error, and the CP paper's
//! truncated percentages.

/// min / max / median / mean / sample standard deviation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub max: f64,
    /// Mean of the two middle values for an even count.
    pub median: f64,
    pub mean: f64,
    /// Sample standard deviation (`n − 1` denominator; 0 for `n = 1`).
    pub stdev: f64,
}

impl Summary {
    /// `None` for an empty slice or if any value is NaN.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() || values.iter().any(|v| v.is_nan()) {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let stdev = if n > 1 {
            (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(Summary {
            n,
            min: v[0],
            max: v[n - 1],
            median,
            mean,
            stdev,
        })
    }
}

/// Fraction (0..=1) of versions whose effort (a fraction, e.g. EXAM) is
/// `<= budget`. 0 for an empty slice.
pub fn fraction_located(efforts: &[f64], budget: f64) -> f64 {
    if efforts.is_empty() {
        return 0.0;
    }
    efforts.iter().filter(|&&e| e <= budget).count() as f64 / efforts.len() as f64
}

/// Counts of `ours[i] − peer[i]` below `−t`, within `[−t, t]`, above `t`
/// (CP paper Table 3; a negative difference means "ours" is better).
/// `None` if the slices differ in length.
pub fn difference_bins(ours: &[f64], peer: &[f64], t: f64) -> Option<(usize, usize, usize)> {
    if ours.len() != peer.len() {
        return None;
    }
    let mut bins = (0, 0, 0);
    for (a, b) in ours.iter().zip(peer) {
        let d = a - b;
        if d < -t {
            bins.0 += 1;
        } else if d > t {
            bins.2 += 1;
        } else {
            bins.1 += 1;
        }
    }
    Some(bins)
}

/// `%Δ = 100·(new − base)/base` (HT_Rank Table IV; negative = `new` better).
pub fn percent_delta(new: f64, base: f64) -> f64 {
    100.0 * (new - base) / base
}

/// Percentage error of an estimate: `|est − exact| / exact · 100`.
pub fn percent_error(estimate: f64, exact: f64) -> f64 {
    (estimate - exact).abs() / exact * 100.0
}

/// HT_Rank estimation equivalence rule (spec §3): two scores are equivalent
/// if they differ by at most `rel` (e.g. 0.05) relative to the larger one.
pub fn equivalent_within(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs())
}

/// Truncate to two decimals as the CP paper prints percentages
/// (e.g. `100·10/21 = 47.619…` → `47.61`). A tiny relative slack absorbs
/// binary rounding (`100·0.29 = 28.999…` → `29.00`).
pub fn truncate2(x: f64) -> f64 {
    let y = x * 100.0;
    (y + y.abs() * 1e-12).trunc() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cp_paper_truncation_and_mean_over_programs() {
        assert_eq!(truncate2(100.0 * 10.0 / 21.0), 47.61);
        assert_eq!(truncate2(100.0 * 47.0 / 110.0), 42.72);
        assert_eq!(truncate2(100.0 * 0.29), 29.0);
        // Figure 2: mean over 4 programs of % located at 5% effort (flex 10/21,
        // grep 9/17, gzip 12/55, sed 12/17) printed as 48.24.
        let per_program = [10.0 / 21.0, 9.0 / 17.0, 12.0 / 55.0, 12.0 / 17.0];
        let printed: Vec<f64> = per_program.iter().map(|f| truncate2(100.0 * f)).collect();
        assert_eq!(printed, vec![47.61, 52.94, 21.81, 70.58]);
        let mean = per_program.iter().sum::<f64>() / 4.0;
        assert_eq!(truncate2(100.0 * mean), 48.24);
    }

    #[test]
    fn summary_located_bins() {
        let s = Summary::of(&[0.3, 0.1, 0.2, 0.4]).unwrap();
        assert_eq!((s.n, s.min, s.max), (4, 0.1, 0.4));
        assert!((s.median - 0.25).abs() < 1e-15);
        assert!((s.mean - 0.25).abs() < 1e-15);
        // sample variance = (0.0225+0.0025+0.0025+0.0225)/3 = 0.05/3
        assert!((s.stdev - (0.05f64 / 3.0).sqrt()).abs() < 1e-15);
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
        assert_eq!(Summary::of(&[2.0]).unwrap().stdev, 0.0);

        assert_eq!(fraction_located(&[0.01, 0.05, 0.2, 0.5], 0.05), 0.5);
        assert_eq!(fraction_located(&[], 0.05), 0.0);

        let ours = [0.10, 0.20, 0.30, 0.40];
        let peer = [0.20, 0.205, 0.30, 0.30];
        assert_eq!(difference_bins(&ours, &peer, 0.01), Some((1, 2, 1)));
        assert_eq!(difference_bins(&ours, &peer[..2], 0.01), None);
    }

    #[test]
    fn htrank_percentages() {
        // Table IV, avl RelativeF1 HT: 9.1 -> 4.9 printed as -47% (from unrounded
        // means; the rounded ones give -46.2%, within the ±1 pp tolerance).
        assert!((percent_delta(4.9, 9.1) - (-47.0)).abs() <= 1.0);
        assert!((percent_delta(2.0, 4.6) - (-56.0)).abs() <= 1.0);
        assert!((percent_error(103.7, 100.0) - 3.7).abs() < 1e-9);
        // Ochiai/compiler HT: 3137.2 vs 2988.8 (-5%) counts as equivalent.
        assert!(equivalent_within(3137.2, 2988.8, 0.05));
        assert!(!equivalent_within(9.1, 4.9, 0.05));
    }
}
