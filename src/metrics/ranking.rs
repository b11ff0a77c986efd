//! Ranked lists with tie groups, and the classical position-based metrics.
//!
//! A [`Ranking`] is built from `(element id, score)` pairs. Higher score =
//! more suspicious. Elements with equal scores form a *tie group* (exact
//! equality by default, or a relative tolerance with
//! [`Ranking::with_tolerance`]). Positions are **1-based**.
//!
//! For a set of faulty elements, the *first faulty group* is the earliest tie
//! group containing at least one faulty element. With `s` elements ranked
//! strictly before that group, `g` elements in it and `k` of them faulty:
//!
//! | quantity | value | name in the literature |
//! |---|---|---|
//! | [`Position::best`] | `s + 1` | optimistic |
//! | [`Position::worst`] | `s + g` | pessimistic; Tarantula rank (Def. 14), CP's rank |
//! | [`Position::average`] | `s + (g+1)/(k+1)` | expected position of the first faulty element under uniformly random tie-breaking; equals the Steinmann rank score (Def. 18) |
//! | [`Ranking::standard_rank_score`] | `s + g/2` | Ali et al.'s Standard Rank Score (Def. 17); 0.5 for a unique top element |
//!
//! Faulty ids that are not in the ranking are ignored; if none is ranked the
//! metrics return [`MetricError::NoFaultRanked`].

use std::collections::HashSet;

/// Errors of the metric functions.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MetricError {
    #[error("score of element {id} is NaN")]
    NanScore { id: u32 },
    #[error("element {id} appears more than once in the ranking")]
    DuplicateId { id: u32 },
    #[error("none of the faulty elements is in the ranking")]
    NoFaultRanked,
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("linear algebra: {0}")]
    Linalg(#[from] crate::metrics::linalg::LinalgError),
}

/// How ties are resolved when a single number is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TieMode {
    /// First position of the tie group (optimistic).
    Best,
    /// Expected position under random tie-breaking: `s + (g+1)/(k+1)`.
    Average,
    /// Last position of the tie group (pessimistic).
    Worst,
}

/// Position of the first faulty element (1-based).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Position {
    pub best: f64,
    pub average: f64,
    pub worst: f64,
    /// Elements ranked strictly before the first faulty group.
    pub before: usize,
    /// Size of the first faulty group.
    pub group_size: usize,
    /// Faulty elements inside that group.
    pub faulty_in_group: usize,
}

impl Position {
    pub fn get(&self, mode: TieMode) -> f64 {
        match mode {
            TieMode::Best => self.best,
            TieMode::Average => self.average,
            TieMode::Worst => self.worst,
        }
    }
}

/// Top-k hit for the first faulty element.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TopK {
    /// Hit even if all ties break against us (`worst <= k`).
    pub pessimistic: bool,
    /// Hit if ties break in our favour (`best <= k`).
    pub optimistic: bool,
    /// Probability of a hit under uniformly random tie-breaking.
    pub expected: f64,
}

/// A ranked list of elements with tie groups.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    /// Sorted by descending score, then ascending id (deterministic).
    entries: Vec<(u32, f64)>,
    /// `group_start[g]..group_start[g+1]` indexes `entries`.
    group_start: Vec<usize>,
}

impl Ranking {
    /// Ranking with ties = exactly equal scores. Fails on NaN or duplicate ids.
    /// `+inf`/`-inf` are allowed and tie with themselves.
    pub fn new(scores: Vec<(u32, f64)>) -> Result<Self, MetricError> {
        Self::with_tolerance(scores, 0.0)
    }

    /// Ranking where consecutive scores (in sorted order) `a >= b` are tied if
    /// `a - b <= rel_tol * max(1, |a|, |b|)`. Ties chain: a group may span
    /// more than `rel_tol` in total if its neighbours are each within it.
    pub fn with_tolerance(mut scores: Vec<(u32, f64)>, rel_tol: f64) -> Result<Self, MetricError> {
        if !rel_tol.is_finite() || rel_tol < 0.0 {
            return Err(MetricError::InvalidArgument(format!(
                "tie tolerance must be a finite number >= 0, got {rel_tol}"
            )));
        }
        let mut seen = HashSet::with_capacity(scores.len());
        for &(id, s) in &scores {
            if s.is_nan() {
                return Err(MetricError::NanScore { id });
            }
            if !seen.insert(id) {
                return Err(MetricError::DuplicateId { id });
            }
        }
        scores.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut group_start = Vec::new();
        for i in 0..scores.len() {
            let tied = i > 0 && {
                let (a, b) = (scores[i - 1].1, scores[i].1);
                a == b || {
                    let d = a - b;
                    d.is_finite() && d <= rel_tol * 1f64.max(a.abs()).max(b.abs())
                }
            };
            if !tied {
                group_start.push(i);
            }
        }
        group_start.push(scores.len());
        Ok(Ranking {
            entries: scores,
            group_start,
        })
    }

    /// Ranking of a dense score vector: element id = index (e.g. the output of
    /// `baselines::sbfl::sbfl_scores`).
    pub fn from_dense(scores: &[f64]) -> Result<Self, MetricError> {
        Self::new(
            scores
                .iter()
                .enumerate()
                .map(|(i, &s)| (i as u32, s))
                .collect(),
        )
    }

    /// Number of ranked elements.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    /// Entries in rank order (descending score, ties by ascending id).
    pub fn entries(&self) -> &[(u32, f64)] {
        &self.entries
    }
    /// Number of tie groups.
    pub fn n_groups(&self) -> usize {
        self.group_start.len() - 1
    }
    /// Tie groups in rank order, most suspicious first.
    pub fn groups(&self) -> impl Iterator<Item = &[(u32, f64)]> + '_ {
        self.group_start
            .windows(2)
            .map(move |w| &self.entries[w[0]..w[1]])
    }
    /// Sizes of the tie groups in rank order.
    pub fn group_sizes(&self) -> Vec<usize> {
        self.group_start.windows(2).map(|w| w[1] - w[0]).collect()
    }
    /// Group index (0 = most suspicious) of every element, as `(id, group)`.
    pub fn group_of(&self) -> Vec<(u32, usize)> {
        let mut out = Vec::with_capacity(self.entries.len());
        for (g, w) in self.group_start.windows(2).enumerate() {
            for e in &self.entries[w[0]..w[1]] {
                out.push((e.0, g));
            }
        }
        out
    }

    /// Position of the first faulty element, or `None` if no faulty id is ranked.
    pub fn position(&self, faulty: &[u32]) -> Option<Position> {
        let faulty: HashSet<u32> = faulty.iter().copied().collect();
        for w in self.group_start.windows(2) {
            let group = &self.entries[w[0]..w[1]];
            let k = group.iter().filter(|e| faulty.contains(&e.0)).count();
            if k > 0 {
                let s = w[0];
                let g = group.len();
                return Some(Position {
                    best: (s + 1) as f64,
                    average: s as f64 + (g as f64 + 1.0) / (k as f64 + 1.0),
                    worst: (s + g) as f64,
                    before: s,
                    group_size: g,
                    faulty_in_group: k,
                });
            }
        }
        None
    }

    fn position_or_err(&self, faulty: &[u32]) -> Result<Position, MetricError> {
        self.position(faulty).ok_or(MetricError::NoFaultRanked)
    }

    /// Top-k hit of the first faulty element. `k = 0` never hits.
    pub fn top_k(&self, faulty: &[u32], k: usize) -> Result<TopK, MetricError> {
        let p = self.position_or_err(faulty)?;
        let (s, g, f) = (p.before, p.group_size, p.faulty_in_group);
        let expected = if k <= s {
            0.0
        } else if s + g <= k {
            1.0
        } else {
            // m = k - s slots filled by a uniform random subset of the group;
            // miss probability = C(g-f, m) / C(g, m) = prod_{i<m} (g-f-i)/(g-i).
            let m = k - s;
            let mut miss = 1.0f64;
            for i in 0..m {
                if g - f <= i {
                    miss = 0.0;
                    break;
                }
                miss *= (g - f - i) as f64 / (g - i) as f64;
            }
            1.0 - miss
        };
        Ok(TopK {
            pessimistic: p.worst <= k as f64,
            optimistic: p.best <= k as f64,
            expected,
        })
    }

    /// EXAM = position / `denominator`. The denominator is the number of
    /// ranked, executable or all elements, as the caller's study defines it;
    /// it must be `>= 1` (it may be smaller than [`Ranking::len`] only if the
    /// position still fits, otherwise an error is returned).
    pub fn exam(
        &self,
        faulty: &[u32],
        denominator: usize,
        mode: TieMode,
    ) -> Result<f64, MetricError> {
        let p = self.position_or_err(faulty)?;
        if denominator == 0 {
            return Err(MetricError::InvalidArgument(
                "EXAM denominator must be >= 1".into(),
            ));
        }
        let pos = p.get(mode);
        if pos > denominator as f64 {
            return Err(MetricError::InvalidArgument(format!(
                "EXAM position {pos} exceeds the denominator {denominator}"
            )));
        }
        Ok(pos / denominator as f64)
    }

    /// Standard Rank Score (Ali et al., Def. 17 in the HT_Rank paper):
    /// `|{x: s(x) > s(f)}| + |{x: s(x) = s(f)}| / 2` for the first faulty
    /// element `f`.
    pub fn standard_rank_score(&self, faulty: &[u32]) -> Result<f64, MetricError> {
        let p = self.position_or_err(faulty)?;
        Ok(p.before as f64 + p.group_size as f64 / 2.0)
    }

    /// Steinmann Rank Score (Def. 18), for multi-line faults:
    /// `|{x: s(x) > s(f)}| + (|{x: s(x) = s(f)}| + 1) / (|{x: s(x) = s(f), x faulty}| + 1)`.
    pub fn steinmann_rank_score(&self, faulty: &[u32]) -> Result<f64, MetricError> {
        Ok(self.position_or_err(faulty)?.average)
    }

    /// Tarantula Rank Score (Def. 14): `|{x: s(x) >= s(f)}|` = pessimistic position.
    pub fn tarantula_rank(&self, faulty: &[u32]) -> Result<f64, MetricError> {
        Ok(self.position_or_err(faulty)?.worst)
    }

    /// Standard Rank Score of every element (Def. 17 applied to each), in rank order.
    pub fn standard_scores_all(&self) -> Vec<(u32, f64)> {
        let mut out = Vec::with_capacity(self.entries.len());
        for w in self.group_start.windows(2) {
            let v = w[0] as f64 + (w[1] - w[0]) as f64 / 2.0;
            for e in &self.entries[w[0]..w[1]] {
                out.push((e.0, v));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HT_Rank paper Fig. 1 ranked list (Relative F1 scores).
    /// ids: 0 Node.Has(2), 1 Node.String(3), 2 Node.Verify(4) @0.98;
    /// 3 Node.Has(4), 4 Node.Has(6) @0.97; 5 Node.Has(3) @0.95;
    /// 6 main(1), 7 Scanner.Scan(24), 8 Node.Verify(0) @0.94.
    pub(crate) fn fig1() -> Ranking {
        Ranking::new(vec![
            (0, 0.98),
            (1, 0.98),
            (2, 0.98),
            (3, 0.97),
            (4, 0.97),
            (5, 0.95),
            (6, 0.94),
            (7, 0.94),
            (8, 0.94),
        ])
        .unwrap()
    }

    #[test]
    fn fig1_standard_rank_scores() {
        let r = fig1();
        assert_eq!(r.group_sizes(), vec![3, 2, 1, 3]);
        assert_eq!(r.standard_rank_score(&[1]).unwrap(), 1.5);
        assert_eq!(r.standard_rank_score(&[4]).unwrap(), 4.0);
        // The paper prints 6 for this row; Def. 17 gives 5.5 (spec §5).
        assert_eq!(r.standard_rank_score(&[5]).unwrap(), 5.5);
        assert_eq!(r.standard_rank_score(&[7]).unwrap(), 7.5);
        // The first faulty element counts.
        assert_eq!(r.standard_rank_score(&[7, 3]).unwrap(), 4.0);
    }

    #[test]
    fn narrative_ten_tied_gives_five() {
        let r = Ranking::new((0..10).map(|i| (i, 1.0)).chain([(10, 0.5)]).collect()).unwrap();
        assert_eq!(r.standard_rank_score(&[3]).unwrap(), 5.0);
        assert_eq!(
            Ranking::new(vec![(0, 1.0)])
                .unwrap()
                .standard_rank_score(&[0])
                .unwrap(),
            0.5
        );
    }

    #[test]
    fn positions_and_steinmann() {
        let r = fig1();
        // Group [3,4] at positions 4..5; one fault.
        let p = r.position(&[4]).unwrap();
        assert_eq!((p.best, p.average, p.worst), (4.0, 4.5, 5.0));
        // Last group of 3 with 2 faults: s=6, (3+1)/(2+1) = 4/3.
        let p = r.position(&[6, 8]).unwrap();
        assert_eq!(p.best, 7.0);
        assert_eq!(p.worst, 9.0);
        assert!((p.average - (6.0 + 4.0 / 3.0)).abs() < 1e-15);
        assert_eq!(r.steinmann_rank_score(&[6, 8]).unwrap(), p.average);
        assert_eq!(r.tarantula_rank(&[6, 8]).unwrap(), 9.0);
        // Unknown ids are ignored; no ranked fault -> None / error.
        assert!(r.position(&[99]).is_none());
        assert_eq!(
            r.standard_rank_score(&[99]),
            Err(MetricError::NoFaultRanked)
        );
        assert_eq!(r.position(&[99, 5]).unwrap().worst, 6.0);
    }

    #[test]
    fn top_k_and_exam() {
        let r = fig1();
        // Fault 1 in the top group of 3 (positions 1..3).
        let t = r.top_k(&[1], 1).unwrap();
        assert!(!t.pessimistic && t.optimistic);
        assert!((t.expected - 1.0 / 3.0).abs() < 1e-15);
        let t = r.top_k(&[1], 2).unwrap();
        // 1 - C(2,2)/C(3,2) = 1 - 1/3.
        assert!((t.expected - 2.0 / 3.0).abs() < 1e-15);
        let t = r.top_k(&[1], 3).unwrap();
        assert!(t.pessimistic && t.expected == 1.0);
        // Two faults in the last group of 3 (s = 6), k = 7: one slot, hit prob 2/3.
        let t = r.top_k(&[6, 8], 7).unwrap();
        assert!((t.expected - 2.0 / 3.0).abs() < 1e-15);
        assert_eq!(r.top_k(&[6, 8], 6).unwrap().expected, 0.0);
        assert!(!r.top_k(&[1], 0).unwrap().optimistic);

        assert_eq!(r.exam(&[5], 9, TieMode::Worst).unwrap(), 6.0 / 9.0);
        assert_eq!(r.exam(&[4], 10, TieMode::Average).unwrap(), 0.45);
        assert_eq!(r.exam(&[4], 10, TieMode::Best).unwrap(), 0.4);
        assert!(r.exam(&[4], 0, TieMode::Best).is_err());
        assert!(r.exam(&[8], 5, TieMode::Worst).is_err());
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            /// best <= Steinmann (= average) <= worst, Standard within the group,
            /// expected top-k monotone and consistent with best/worst.
            #[test]
            fn position_invariants(
                scores in proptest::collection::vec(0u8..6, 1..40),
                faulty in proptest::collection::vec(0u32..40, 1..4),
            ) {
                let r = Ranking::from_dense(&scores.iter().map(|&s| s as f64).collect::<Vec<_>>()).unwrap();
                if let Some(p) = r.position(&faulty) {
                    prop_assert!(p.best <= p.average && p.average <= p.worst);
                    let std = r.standard_rank_score(&faulty).unwrap();
                    prop_assert!(std >= p.best - 0.5 && std <= p.worst);
                    let mut last = 0.0;
                    for k in 0..=r.len() {
                        let t = r.top_k(&faulty, k).unwrap();
                        prop_assert!(t.expected >= last - 1e-12);
                        prop_assert_eq!(t.pessimistic, k as f64 >= p.worst);
                        prop_assert_eq!(t.optimistic, k as f64 >= p.best);
                        if t.pessimistic { prop_assert!((t.expected - 1.0).abs() < 1e-12); }
                        if !t.optimistic { prop_assert_eq!(t.expected, 0.0); }
                        last = t.expected;
                    }
                    // Expected position from the top-k curve: E[pos] = Σ_k P(pos > k).
                    let e: f64 = (0..r.len()).map(|k| 1.0 - r.top_k(&faulty, k).unwrap().expected).sum();
                    prop_assert!((e - p.average).abs() < 1e-9, "{} vs {}", e, p.average);
                } else {
                    prop_assert!(faulty.iter().all(|&f| f as usize >= scores.len()));
                }
            }
        }
    }

    #[test]
    fn construction_errors_and_tolerance() {
        assert_eq!(
            Ranking::new(vec![(1, 0.5), (2, f64::NAN)]),
            Err(MetricError::NanScore { id: 2 })
        );
        assert_eq!(
            Ranking::new(vec![(1, 0.5), (1, 0.4)]),
            Err(MetricError::DuplicateId { id: 1 })
        );
        // CP spec §5: b1 and b4 differ in the last bits; merged with tolerance only.
        let v = vec![
            (1, 0.11111111111111116),
            (4, 0.11111111111111105),
            (2, 10.0 / 9.0),
        ];
        assert_eq!(Ranking::new(v.clone()).unwrap().n_groups(), 3);
        let r = Ranking::with_tolerance(v, 1e-9).unwrap();
        assert_eq!(r.group_sizes(), vec![1, 2]);
        assert!(Ranking::with_tolerance(vec![], -1.0).is_err());
        // Infinities tie with themselves and sort first/last.
        let r = Ranking::new(vec![
            (0, f64::INFINITY),
            (1, 1.0),
            (2, f64::INFINITY),
            (3, f64::NEG_INFINITY),
        ])
        .unwrap();
        assert_eq!(r.group_sizes(), vec![2, 1, 1]);
        assert_eq!(r.entries()[3].0, 3);
    }
}
