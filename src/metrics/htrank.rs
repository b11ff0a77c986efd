//! HT_Rank (Henderson, Küçük, Podgurski, SCAM 2019; spec
//! `htrank-seed-002.md`): evaluate a ranked list by the expected hitting time
//! of a Markov "debugging" process from the start state `g_0`.
//!
//! * [`def28_chain`] builds the pure ranked-list chain (Def. 28) and
//!   [`def29_chain`] the chain with jumps (Def. 29 with a jump relation
//!   [`Jumps`], Def. 26). States `0..m` are the tie groups `g_0..g_m`
//!   (most suspicious first), followed by one state per ranked element.
//! * [`hitting_times_exact`] solves exactly (generic over `f64` and the exact
//!   [`Rational`](crate::metrics::linalg::Rational)); [`hitting_times_monte_carlo`]
//!   estimates with seeded random walks.
//! * [`ht_rank_def28`] uses the proven equivalence HT_Rank = Standard Rank
//!   Score instead of solving: the Def. 28 system is exponentially
//!   ill-conditioned (`E[T]` grows like `(|L|-1)^k` in the group index `k`,
//!   spec §2.4), and dense f64 LU scrambles the order at ~14 groups.
//! * [`ht_rank_def29`] picks the engine by size and reports which one it used.
//!
//! Decisions on the spec's ambiguities (§7): start state is `g_0`; a location
//! with no J-neighbour returns to its group with probability 1; the diagonal
//! of J is excluded; J-neighbours that are not ranked elements are ignored
//! (they are not states); hitting-time ties use a relative tolerance.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use super::linalg::{DenseMatrix, Lu, Scalar};
use super::ranking::{MetricError, Ranking};

/// Symmetric-or-not jump relation `J` between element ids (Def. 26).
///
/// Weights are positive; adding a pair that already exists keeps the larger
/// weight (set union for the uniform 0/1 relation). Self pairs are ignored
/// (the diagonal is excluded).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Jumps {
    adj: HashMap<u32, Vec<(u32, f64)>>,
}

impl Jumps {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add `a -> b` with weight `w` (finite, > 0).
    pub fn add_directed(&mut self, a: u32, b: u32, w: f64) -> Result<(), MetricError> {
        if !(w.is_finite() && w > 0.0) {
            return Err(MetricError::InvalidArgument(format!(
                "jump weight {a}->{b} must be finite and > 0, got {w}"
            )));
        }
        if a == b {
            return Ok(());
        }
        let row = self.adj.entry(a).or_default();
        match row.iter_mut().find(|e| e.0 == b) {
            Some(e) => e.1 = e.1.max(w),
            None => row.push((b, w)),
        }
        Ok(())
    }

    /// Add `a -> b` and `b -> a` with weight `w`.
    pub fn add_undirected(&mut self, a: u32, b: u32, w: f64) -> Result<(), MetricError> {
        self.add_directed(a, b, w)?;
        self.add_directed(b, a, w)
    }

    /// "Same function" relation: every pair of distinct ids with the same key
    /// is connected with weight 1.
    pub fn same_group<K: Eq + std::hash::Hash>(
        members: impl IntoIterator<Item = (u32, K)>,
    ) -> Self {
        let mut by_key: HashMap<K, Vec<u32>> = HashMap::new();
        for (id, k) in members {
            let v = by_key.entry(k).or_default();
            if !v.contains(&id) {
                v.push(id);
            }
        }
        let mut j = Jumps::new();
        for ids in by_key.values() {
            for &a in ids {
                for &b in ids {
                    if a != b {
                        let row = j.adj.entry(a).or_default();
                        if !row.iter().any(|e| e.0 == b) {
                            row.push((b, 1.0));
                        }
                    }
                }
            }
        }
        j
    }

    /// Union with another relation (max of weights on common pairs).
    pub fn union(&mut self, other: &Jumps) {
        for (&a, row) in &other.adj {
            for &(b, w) in row {
                // Weights in `other` are already validated.
                let _ = self.add_directed(a, b, w);
            }
        }
    }

    /// Neighbours of `id` with weights (unordered).
    pub fn neighbors(&self, id: u32) -> &[(u32, f64)] {
        self.adj.get(&id).map(|v| v.as_slice()).unwrap_or(&[])
    }

    pub fn is_empty(&self) -> bool {
        self.adj.values().all(|v| v.is_empty())
    }
}

/// A finite Markov chain in sparse row form.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain<T> {
    /// `rows[i]` = non-zero `(j, P_ij)`.
    pub rows: Vec<Vec<(usize, T)>>,
    /// Number of group states; they occupy indices `0..n_groups`.
    pub n_groups: usize,
    /// `(element id, state index)` of every location state.
    pub locations: Vec<(u32, usize)>,
}

impl<T: Scalar> Chain<T> {
    pub fn n_states(&self) -> usize {
        self.rows.len()
    }

    /// Check entries `>= 0`, row sums `1 ± 1e-12` (exactly 1 for exact
    /// scalars) and irreducibility (every state reaches and is reached from 0).
    pub fn validate(&self) -> Result<(), MetricError> {
        let n = self.rows.len();
        for (i, row) in self.rows.iter().enumerate() {
            let mut s = T::zero();
            for &(j, p) in row {
                if j >= n || !p.is_valid() || p.to_f64() < 0.0 {
                    return Err(MetricError::InvalidArgument(format!(
                        "chain row {i}: bad entry ({j}, {:?})",
                        p
                    )));
                }
                s = s + p;
            }
            let dev = (s - T::one()).to_f64().abs();
            let ok = if T::pivot_rel_tol() == 0.0 {
                (s - T::one()).is_zero()
            } else {
                dev <= 1e-12
            };
            if !ok {
                return Err(MetricError::InvalidArgument(format!(
                    "chain row {i} sums to {:?}, not 1",
                    s
                )));
            }
        }
        if n == 0 {
            return Err(MetricError::InvalidArgument("empty chain".into()));
        }
        let reach = |fwd: bool| -> usize {
            let mut radj: Vec<Vec<usize>> = vec![Vec::new(); n];
            if !fwd {
                for (i, row) in self.rows.iter().enumerate() {
                    for &(j, p) in row {
                        if !p.is_zero() {
                            radj[j].push(i);
                        }
                    }
                }
            }
            let mut seen = vec![false; n];
            let mut stack = vec![0usize];
            seen[0] = true;
            let mut count = 1;
            while let Some(i) = stack.pop() {
                let next: Vec<usize> = if fwd {
                    self.rows[i]
                        .iter()
                        .filter(|e| !e.1.is_zero())
                        .map(|e| e.0)
                        .collect()
                } else {
                    radj[i].clone()
                };
                for j in next {
                    if !seen[j] {
                        seen[j] = true;
                        count += 1;
                        stack.push(j);
                    }
                }
            }
            count
        };
        if reach(true) != n || reach(false) != n {
            return Err(MetricError::InvalidArgument(
                "chain is not irreducible (ergodic models are required)".into(),
            ));
        }
        Ok(())
    }
}

/// Def. 28: the ranked-list chain. Equivalent to [`def29_chain`] with no jumps.
pub fn def28_chain<T: Scalar>(ranking: &Ranking) -> Result<Chain<T>, MetricError> {
    def29_chain(ranking, &Jumps::new(), 0.0)
}

/// Def. 29: ranked-list chain with jumps.
///
/// Group rows (with `L` = number of ranked elements, groups `g_0..g_m`):
/// `g_k -> g_{k-1}` (or the `g_0` self-loop) `(L-1)/(2L)`, `g_k -> g_{k+1}`
/// (or the `g_m` self-loop) `1/(2L)`, `g_k -> l` `1/(2|g_k|)` for `l ∈ g_k`.
/// Location rows: `l -> group(l)` `1 - p_jump` and `l -> l'`
/// `p_jump * J(l,l') / Σ_k J(l,k)` if `l` has ranked J-neighbours, else
/// `l -> group(l)` with probability 1.
pub fn def29_chain<T: Scalar>(
    ranking: &Ranking,
    jumps: &Jumps,
    p_jump: f64,
) -> Result<Chain<T>, MetricError> {
    if !(0.0..1.0).contains(&p_jump) {
        return Err(MetricError::InvalidArgument(format!(
            "p_jump must be in [0, 1) to keep the chain ergodic, got {p_jump}"
        )));
    }
    if ranking.is_empty() {
        return Err(MetricError::InvalidArgument("empty ranking".into()));
    }
    let sizes = ranking.group_sizes();
    let m = sizes.len();
    let l_count = ranking.len();
    let n = m + l_count;
    let two_l = T::from_usize(2 * l_count);
    let up = T::from_usize(l_count - 1) / two_l;
    let down = T::one() / two_l;
    let mut rows: Vec<Vec<(usize, T)>> = vec![Vec::new(); n];
    let push = |rows: &mut Vec<Vec<(usize, T)>>, i: usize, j: usize, p: T| {
        if p.is_zero() {
            return;
        }
        if let Some(e) = rows[i].iter_mut().find(|e| e.0 == j) {
            e.1 = e.1 + p;
        } else {
            rows[i].push((j, p));
        }
    };
    for k in 0..m {
        push(&mut rows, k, if k == 0 { 0 } else { k - 1 }, up);
        push(&mut rows, k, if k + 1 == m { k } else { k + 1 }, down);
    }
    let mut state_of: HashMap<u32, usize> = HashMap::with_capacity(l_count);
    let mut group_of_state = vec![0usize; n];
    let mut locations = Vec::with_capacity(l_count);
    let mut next = m;
    for (g, group) in ranking.groups().enumerate() {
        let p = T::one() / T::from_usize(2 * group.len());
        for &(id, _) in group {
            state_of.insert(id, next);
            group_of_state[next] = g;
            locations.push((id, next));
            push(&mut rows, g, next, p);
            next += 1;
        }
    }
    let pj = T::from_f64(p_jump);
    for &(id, s) in &locations {
        let g = group_of_state[s];
        let nbrs: Vec<(usize, f64)> = if p_jump > 0.0 {
            jumps
                .neighbors(id)
                .iter()
                .filter_map(|&(b, w)| state_of.get(&b).map(|&t| (t, w)))
                .filter(|&(t, _)| t != s)
                .collect()
        } else {
            Vec::new()
        };
        if nbrs.is_empty() {
            push(&mut rows, s, g, T::one());
        } else {
            let total = nbrs.iter().fold(T::zero(), |acc, e| acc + T::from_f64(e.1));
            push(&mut rows, s, g, T::one() - pj);
            for (t, w) in nbrs {
                push(&mut rows, s, t, pj * T::from_f64(w) / total);
            }
        }
    }
    let chain = Chain {
        rows,
        n_groups: m,
        locations,
    };
    if chain.rows.iter().flatten().any(|e| !e.1.is_valid()) {
        return Err(MetricError::InvalidArgument(
            "chain probabilities are not representable (overflow)".into(),
        ));
    }
    Ok(chain)
}

fn dense_p<T: Scalar>(chain: &Chain<T>) -> DenseMatrix<T> {
    let n = chain.n_states();
    let mut p = DenseMatrix::zeros(n);
    for (i, row) in chain.rows.iter().enumerate() {
        for &(j, v) in row {
            p.add_to(i, j, v);
        }
    }
    p
}

/// Stationary distribution `w` (`wP = w`, `Σ w = 1`) by a dense solve.
pub fn stationary<T: Scalar>(chain: &Chain<T>) -> Result<Vec<T>, MetricError> {
    let n = chain.n_states();
    let p = dense_p(chain);
    // (I - P)ᵀ w = 0 with the last equation replaced by Σ w = 1.
    let mut a = DenseMatrix::zeros(n);
    for i in 0..n {
        for j in 0..n {
            let d = if i == j { T::one() } else { T::zero() };
            a.set(j, i, d - p.get(i, j));
        }
    }
    for j in 0..n {
        a.set(n - 1, j, T::one());
    }
    let mut b = vec![T::zero(); n];
    b[n - 1] = T::one();
    Ok(Lu::factor(a)?.solve(&b)?)
}

/// Engine used for exact hitting times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExactMethod {
    /// One solve of `(I - Q_j) t = 1` per target `j` (the paper's definition,
    /// `O(N^4)` dense; for small chains and cross-checks).
    PerTarget,
    /// Fundamental matrix `Z = (I - P + 1w)^{-1}`:
    /// `E[T_{s,j}] = (Z_jj - Z_sj) / w_j`; one LU plus `N` solves, `O(N^3)`.
    Fundamental,
}

/// Exact expected hitting times `E[T_{start, j}]` for every state `j`
/// (`0` for `j = start`). Validates the chain first.
pub fn hitting_times_exact<T: Scalar>(
    chain: &Chain<T>,
    start: usize,
    method: ExactMethod,
) -> Result<Vec<T>, MetricError> {
    chain.validate()?;
    let n = chain.n_states();
    if start >= n {
        return Err(MetricError::InvalidArgument(format!(
            "start state {start} out of range 0..{n}"
        )));
    }
    let p = dense_p(chain);
    let mut out = vec![T::zero(); n];
    match method {
        ExactMethod::PerTarget => {
            for (j, out_j) in out.iter_mut().enumerate() {
                if j == start {
                    continue;
                }
                // Unknowns: states != j, in order.
                let idx: Vec<usize> = (0..n).filter(|&i| i != j).collect();
                let mut a = DenseMatrix::zeros(n - 1);
                for (r, &i) in idx.iter().enumerate() {
                    for (c, &k) in idx.iter().enumerate() {
                        let d = if r == c { T::one() } else { T::zero() };
                        a.set(r, c, d - p.get(i, k));
                    }
                }
                let t = Lu::factor(a)?.solve(&vec![T::one(); n - 1])?;
                let r = idx.iter().position(|&i| i == start).unwrap_or(0);
                *out_j = t[r];
            }
        }
        ExactMethod::Fundamental => {
            let w = stationary(chain)?;
            let mut a = DenseMatrix::zeros(n);
            for i in 0..n {
                for (j, &wj) in w.iter().enumerate() {
                    let d = if i == j { T::one() } else { T::zero() };
                    a.set(i, j, d - p.get(i, j) + wj);
                }
            }
            let lu = Lu::factor(a)?;
            let mut e = vec![T::zero(); n];
            e[start] = T::one();
            // Row `start` of Z: Zᵀ e_start.
            let z_row = lu.solve_transpose(&e)?;
            // Diagonal of Z, one partial solve per target, in parallel.
            let diag: Vec<(usize, T)> = (0..n)
                .into_par_iter()
                .filter(|&j| j != start)
                .map(|j| lu.inverse_diagonal_entry(j).map(|z| (j, z)))
                .collect::<Result<_, _>>()?;
            for (j, zjj) in diag {
                out[j] = (zjj - z_row[j]) / w[j];
            }
        }
    }
    if out.iter().any(|v| !v.is_valid()) {
        return Err(MetricError::Linalg(super::linalg::LinalgError::Overflow));
    }
    Ok(out)
}

/// Exact `E[T_{start, target}]` for one target: one solve of
/// `(I - Q_target) t = 1` (`O(N^3)`).
pub fn hitting_time_exact_single<T: Scalar>(
    chain: &Chain<T>,
    start: usize,
    target: usize,
) -> Result<T, MetricError> {
    chain.validate()?;
    let n = chain.n_states();
    if start >= n || target >= n {
        return Err(MetricError::InvalidArgument(format!(
            "start {start} / target {target} out of range 0..{n}"
        )));
    }
    if start == target {
        return Ok(T::zero());
    }
    let idx: Vec<usize> = (0..n).filter(|&i| i != target).collect();
    let mut pos = vec![usize::MAX; n];
    for (r, &i) in idx.iter().enumerate() {
        pos[i] = r;
    }
    let mut a = DenseMatrix::identity(n - 1);
    for (r, &i) in idx.iter().enumerate() {
        for &(k, p) in &chain.rows[i] {
            if k != target {
                a.add_to(r, pos[k], -p);
            }
        }
    }
    let t = Lu::factor(a)?.solve(&vec![T::one(); n - 1])?;
    Ok(t[pos[start]])
}

/// Monte Carlo estimate of hitting times.
#[derive(Debug, Clone, PartialEq)]
pub struct McEstimate {
    /// Sample mean of the first-visit step per state (start state: 0).
    /// Walks that never reached a state within `max_steps` contribute
    /// `max_steps` (right-censored).
    pub times: Vec<f64>,
    /// Per state, number of walks censored at `max_steps`.
    pub censored: Vec<usize>,
}

/// Seeded xoshiro256** generator (no external crate needed).
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut s = [0u64; 4];
        for v in &mut s {
            // splitmix64
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            *v = z ^ (z >> 31);
        }
        Rng { s }
    }
    pub fn next_u64(&mut self) -> u64 {
        let r = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        r
    }
    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Estimate `E[T_{start, j}]` for all states with `walks` random walks of at
/// most `max_steps` steps each. A walk stops early once every state in
/// `targets` (all states if empty) has been visited.
pub fn hitting_times_monte_carlo(
    chain: &Chain<f64>,
    start: usize,
    targets: &[usize],
    walks: usize,
    max_steps: u64,
    seed: u64,
) -> Result<McEstimate, MetricError> {
    chain.validate()?;
    let n = chain.n_states();
    if start >= n || walks == 0 || max_steps == 0 {
        return Err(MetricError::InvalidArgument(format!(
            "Monte Carlo needs start < {n}, walks >= 1, max_steps >= 1 (got {start}, {walks}, {max_steps})"
        )));
    }
    // Cumulative rows for sampling.
    let cum: Vec<(Vec<usize>, Vec<f64>)> = chain
        .rows
        .iter()
        .map(|row| {
            let mut acc = 0.0;
            let mut js = Vec::with_capacity(row.len());
            let mut cs = Vec::with_capacity(row.len());
            for &(j, p) in row {
                if p > 0.0 {
                    acc += p;
                    js.push(j);
                    cs.push(acc);
                }
            }
            (js, cs)
        })
        .collect();
    let is_target: Vec<bool> = if targets.is_empty() {
        vec![true; n]
    } else {
        let mut v = vec![false; n];
        for &t in targets {
            if t < n {
                v[t] = true;
            }
        }
        v
    };
    let n_targets = is_target.iter().filter(|&&b| b).count();
    // Walk `w` uses its own generator seeded from (seed, w) and the sums are
    // integers, so the estimate does not depend on the thread count.
    let run_walks = |range: std::ops::Range<usize>| -> (Vec<u64>, Vec<usize>) {
        let mut sum = vec![0u64; n];
        let mut censored = vec![0usize; n];
        let mut first = vec![u64::MAX; n];
        for w in range {
            let mut rng = Rng::new(seed ^ (w as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
            first.iter_mut().for_each(|f| *f = u64::MAX);
            let mut cur = start;
            first[cur] = 0;
            let mut remaining = n_targets - usize::from(is_target[cur]);
            let mut step = 0u64;
            while remaining > 0 && step < max_steps {
                let (js, cs) = &cum[cur];
                let total = *cs.last().unwrap_or(&1.0);
                let u = rng.next_f64() * total;
                let k = cs.partition_point(|&c| c <= u).min(js.len() - 1);
                cur = js[k];
                step += 1;
                if first[cur] == u64::MAX {
                    first[cur] = step;
                    if is_target[cur] {
                        remaining -= 1;
                    }
                }
            }
            for j in 0..n {
                if first[j] == u64::MAX {
                    sum[j] += max_steps;
                    censored[j] += 1;
                } else {
                    sum[j] += first[j];
                }
            }
        }
        (sum, censored)
    };
    let chunk = walks
        .div_ceil(rayon::current_num_threads().max(1) * 4)
        .max(1);
    let ranges: Vec<std::ops::Range<usize>> = (0..walks)
        .step_by(chunk)
        .map(|s| s..(s + chunk).min(walks))
        .collect();
    let (sum, censored) = ranges.into_par_iter().map(run_walks).reduce(
        || (vec![0u64; n], vec![0usize; n]),
        |(mut s1, mut c1), (s2, c2)| {
            s1.iter_mut().zip(&s2).for_each(|(a, b)| *a += b);
            c1.iter_mut().zip(&c2).for_each(|(a, b)| *a += b);
            (s1, c1)
        },
    );
    Ok(McEstimate {
        times: sum.into_iter().map(|s| s as f64 / walks as f64).collect(),
        censored,
    })
}

/// HT_Rank from hitting times (Def. 17 with `s = -E[T]`) of the first faulty
/// element, and its Steinmann variant for multi-line faults (spec §3).
/// Returns `(ht_rank, ht_rank_steinmann)`.
pub fn ht_rank_from_hitting_times(
    times: &[(u32, f64)],
    faulty: &[u32],
    rel_tol: f64,
) -> Result<(f64, f64), MetricError> {
    let neg: Vec<(u32, f64)> = times.iter().map(|&(id, t)| (id, -t)).collect();
    let r = Ranking::with_tolerance(neg, rel_tol)?;
    Ok((
        r.standard_rank_score(faulty)?,
        r.steinmann_rank_score(faulty)?,
    ))
}

/// HT_Rank under Def. 28. Uses the proven equivalence HT_Rank = Standard Rank
/// Score (closed form), never the ill-conditioned solve (spec §2.4).
pub fn ht_rank_def28(ranking: &Ranking, faulty: &[u32]) -> Result<f64, MetricError> {
    ranking.standard_rank_score(faulty)
}

/// Configuration of [`ht_rank_def29`].
#[derive(Debug, Clone, PartialEq)]
pub struct HtRankConfig {
    /// Jump probability (paper: 0.5). Must be in `[0, 1)`.
    pub p_jump: f64,
    /// Largest number of states solved exactly; above it, Monte Carlo ([ref]: 1000).
    pub max_states_exact: usize,
    /// Monte Carlo walks (paper: 500).
    pub walks: usize,
    /// Monte Carlo step cap per walk (paper: 1,000,000).
    pub max_steps: u64,
    /// Monte Carlo seed.
    pub seed: u64,
    /// Relative tolerance for equal hitting times.
    pub tie_rel_tol: f64,
    /// Exact solves whose hitting times span more than this ratio
    /// (max/min) are rejected as ill-conditioned.
    pub max_time_ratio: f64,
}

impl Default for HtRankConfig {
    fn default() -> Self {
        HtRankConfig {
            p_jump: 0.5,
            max_states_exact: 1000,
            walks: 500,
            max_steps: 1_000_000,
            seed: 0,
            tie_rel_tol: 1e-9,
            max_time_ratio: 1e12,
        }
    }
}

/// Which engine produced the hitting times.
#[derive(Debug, Clone, PartialEq)]
pub enum HtEngine {
    /// No ranked element has a ranked J-neighbour (or `p_jump = 0`): the
    /// chain is Def. 28 and HT_Rank = Standard Rank Score; no times computed.
    ClosedForm,
    /// Exact dense solve (fundamental matrix).
    Exact,
    /// Random-walk estimate.
    MonteCarlo {
        walks: usize,
        max_steps: u64,
        seed: u64,
        /// Walks censored at `max_steps` for at least one location, summed over locations.
        censored: usize,
    },
}

/// Result of [`ht_rank_def29`].
#[derive(Debug, Clone, PartialEq)]
pub struct HtRankReport {
    /// HT_Rank of the first faulty element (Def. 17 on `-E[T]`).
    pub ht_rank: f64,
    /// Steinmann-based HT_Rank (multi-line faults).
    pub ht_rank_steinmann: f64,
    /// `E[T_{g_0, l}]` per ranked element (empty for [`HtEngine::ClosedForm`]).
    pub hitting_times: Vec<(u32, f64)>,
    pub engine: HtEngine,
    pub n_states: usize,
}

/// HT_Rank under Def. 29 (ranked list + jumps), start state `g_0`.
pub fn ht_rank_def29(
    ranking: &Ranking,
    jumps: &Jumps,
    faulty: &[u32],
    cfg: &HtRankConfig,
) -> Result<HtRankReport, MetricError> {
    let ranked: HashSet<u32> = ranking.entries().iter().map(|e| e.0).collect();
    if !faulty.iter().any(|f| ranked.contains(f)) {
        return Err(MetricError::NoFaultRanked);
    }
    let has_jump = cfg.p_jump > 0.0
        && ranked.iter().any(|&a| {
            jumps
                .neighbors(a)
                .iter()
                .any(|&(b, _)| b != a && ranked.contains(&b))
        });
    let n_states = ranking.n_groups() + ranking.len();
    if !has_jump {
        if !(0.0..1.0).contains(&cfg.p_jump) {
            return Err(MetricError::InvalidArgument(format!(
                "p_jump must be in [0, 1), got {}",
                cfg.p_jump
            )));
        }
        return Ok(HtRankReport {
            ht_rank: ranking.standard_rank_score(faulty)?,
            ht_rank_steinmann: ranking.steinmann_rank_score(faulty)?,
            hitting_times: Vec::new(),
            engine: HtEngine::ClosedForm,
            n_states,
        });
    }
    let chain: Chain<f64> = def29_chain(ranking, jumps, cfg.p_jump)?;
    ht_rank_on_chain(&chain, faulty, cfg)
}

/// HT_Rank on any chain whose location states are listed in
/// `chain.locations`, from start state 0: exact (fundamental matrix) up to
/// `cfg.max_states_exact` states, Monte Carlo above.
pub fn ht_rank_on_chain(
    chain: &Chain<f64>,
    faulty: &[u32],
    cfg: &HtRankConfig,
) -> Result<HtRankReport, MetricError> {
    if !chain.locations.iter().any(|(id, _)| faulty.contains(id)) {
        return Err(MetricError::NoFaultRanked);
    }
    let n_states = chain.n_states();
    let (times, engine) = if n_states <= cfg.max_states_exact {
        let t = hitting_times_exact(chain, 0, ExactMethod::Fundamental)?;
        let (lo, hi) = chain
            .locations
            .iter()
            .map(|&(_, s)| t[s])
            .fold((f64::INFINITY, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        if lo.is_nan() || lo < 1.0 || !hi.is_finite() || hi / lo > cfg.max_time_ratio {
            return Err(MetricError::InvalidArgument(format!(
                "ill-conditioned hitting times (min {lo}, max {hi}); use Monte Carlo (lower max_states_exact)"
            )));
        }
        (t, HtEngine::Exact)
    } else {
        let targets: Vec<usize> = chain.locations.iter().map(|e| e.1).collect();
        let est =
            hitting_times_monte_carlo(chain, 0, &targets, cfg.walks, cfg.max_steps, cfg.seed)?;
        let censored = targets.iter().map(|&s| est.censored[s]).sum();
        (
            est.times,
            HtEngine::MonteCarlo {
                walks: cfg.walks,
                max_steps: cfg.max_steps,
                seed: cfg.seed,
                censored,
            },
        )
    };
    let hitting_times: Vec<(u32, f64)> = chain
        .locations
        .iter()
        .map(|&(id, s)| (id, times[s]))
        .collect();
    let (ht_rank, ht_rank_steinmann) =
        ht_rank_from_hitting_times(&hitting_times, faulty, cfg.tie_rel_tol)?;
    Ok(HtRankReport {
        ht_rank,
        ht_rank_steinmann,
        hitting_times,
        engine,
        n_states,
    })
}

/// A reported fragment (suspicious subgraph, SBBFL): score and locations.
#[derive(Debug, Clone, PartialEq)]
pub struct Fragment {
    pub score: f64,
    /// Location ids (duplicates are ignored).
    pub locations: Vec<u32>,
}

/// Def. 30: chain for a ranked list of fragments. States: groups `0..m`
/// (fragments with equal score within `tie_rel_tol`), then one state per
/// fragment, then one per distinct location that occurs in some fragment
/// (`chain.locations`). Transitions (`H` = number of fragments):
/// `l -> h ∋ l` `1/c(l)`; `h -> l ∈ V_h` `1/(2|V_h|)`; `h ->` its group `1/2`;
/// group walk as Def. 28 with `|H|` for `|L|`; `g_k -> h ∈ g_k` `1/(2|g_k|)`.
///
/// With `p_jump > 0` a location that has J-neighbours among the location
/// states goes to each containing fragment with `(1 − p_jump)/c(l)` and to
/// neighbours with `p_jump · J/ΣJ` (the authors' code's extension, without
/// its sub-stochastic extra states); otherwise `1/c(l)` per fragment.
pub fn def30_chain<T: Scalar>(
    fragments: &[Fragment],
    jumps: &Jumps,
    p_jump: f64,
    tie_rel_tol: f64,
) -> Result<Chain<T>, MetricError> {
    if !(0.0..1.0).contains(&p_jump) {
        return Err(MetricError::InvalidArgument(format!(
            "p_jump must be in [0, 1), got {p_jump}"
        )));
    }
    if fragments.is_empty() {
        return Err(MetricError::InvalidArgument("no fragments".into()));
    }
    let frank = Ranking::with_tolerance(
        fragments
            .iter()
            .enumerate()
            .map(|(i, f)| (i as u32, f.score))
            .collect(),
        tie_rel_tol,
    )?;
    let m = frank.n_groups();
    let h_count = fragments.len();
    // Fragment states in rank order.
    let mut frag_state = vec![0usize; h_count];
    let mut frag_group = vec![0usize; h_count];
    let mut next = m;
    for (g, group) in frank.groups().enumerate() {
        for &(fi, _) in group {
            frag_state[fi as usize] = next;
            frag_group[fi as usize] = g;
            next += 1;
        }
    }
    // Distinct locations, numbered in rank order of first appearance.
    let mut loc_state: HashMap<u32, usize> = HashMap::new();
    let mut locations = Vec::new();
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); h_count];
    let mut containing: HashMap<u32, Vec<usize>> = HashMap::new();
    for &(fi, _) in frank.entries() {
        let fi = fi as usize;
        for &l in &fragments[fi].locations {
            if members[fi].contains(&l) {
                continue;
            }
            members[fi].push(l);
            containing.entry(l).or_default().push(fi);
            if let std::collections::hash_map::Entry::Vacant(e) = loc_state.entry(l) {
                let s = next + locations.len();
                e.insert(s);
                locations.push((l, s));
            }
        }
        if members[fi].is_empty() {
            return Err(MetricError::InvalidArgument(format!(
                "fragment {fi} has no locations"
            )));
        }
    }
    let n = next + locations.len();
    let mut rows: Vec<Vec<(usize, T)>> = vec![Vec::new(); n];
    let push = |rows: &mut Vec<Vec<(usize, T)>>, i: usize, j: usize, p: T| {
        if p.is_zero() {
            return;
        }
        if let Some(e) = rows[i].iter_mut().find(|e| e.0 == j) {
            e.1 = e.1 + p;
        } else {
            rows[i].push((j, p));
        }
    };
    let two_h = T::from_usize(2 * h_count);
    let up = T::from_usize(h_count - 1) / two_h;
    let down = T::one() / two_h;
    for k in 0..m {
        push(&mut rows, k, if k == 0 { 0 } else { k - 1 }, up);
        push(&mut rows, k, if k + 1 == m { k } else { k + 1 }, down);
    }
    let half = T::one() / T::from_usize(2);
    for (g, group) in frank.groups().enumerate() {
        let p = T::one() / T::from_usize(2 * group.len());
        for &(fi, _) in group {
            push(&mut rows, g, frag_state[fi as usize], p);
        }
    }
    for fi in 0..h_count {
        let hs = frag_state[fi];
        push(&mut rows, hs, frag_group[fi], half);
        let p = T::one() / T::from_usize(2 * members[fi].len());
        for l in &members[fi] {
            push(&mut rows, hs, loc_state[l], p);
        }
    }
    let pj = T::from_f64(p_jump);
    for &(l, s) in &locations {
        let hs = &containing[&l];
        let c = T::from_usize(hs.len());
        let nbrs: Vec<(usize, f64)> = if p_jump > 0.0 {
            jumps
                .neighbors(l)
                .iter()
                .filter_map(|&(b, w)| loc_state.get(&b).map(|&t| (t, w)))
                .filter(|&(t, _)| t != s)
                .collect()
        } else {
            Vec::new()
        };
        let stay = if nbrs.is_empty() {
            T::one()
        } else {
            T::one() - pj
        };
        for &fi in hs {
            push(&mut rows, s, frag_state[fi], stay / c);
        }
        if !nbrs.is_empty() {
            let total = nbrs.iter().fold(T::zero(), |acc, e| acc + T::from_f64(e.1));
            for (t, w) in nbrs {
                push(&mut rows, s, t, pj * T::from_f64(w) / total);
            }
        }
    }
    let chain = Chain {
        rows,
        n_groups: m,
        locations,
    };
    if chain.rows.iter().flatten().any(|e| !e.1.is_valid()) {
        return Err(MetricError::InvalidArgument(
            "chain probabilities are not representable (overflow)".into(),
        ));
    }
    Ok(chain)
}

/// HT_Rank of a fragment report (Def. 30, optionally with jumps). A faulty
/// location in no fragment is unlocalized ([`MetricError::NoFaultRanked`]).
pub fn ht_rank_def30(
    fragments: &[Fragment],
    jumps: &Jumps,
    faulty: &[u32],
    cfg: &HtRankConfig,
) -> Result<HtRankReport, MetricError> {
    let chain: Chain<f64> = def30_chain(fragments, jumps, cfg.p_jump, cfg.tie_rel_tol)?;
    ht_rank_on_chain(&chain, faulty, cfg)
}

/// Standard (Def. 17) and Steinmann (Def. 18) rank scores of a fragment
/// report, counted in fragments: a fragment is "faulty" if it contains a
/// faulty location. Returns `(standard, steinmann)`; one top fragment that
/// contains the fault scores `(0.5, 1)`.
pub fn fragment_rank_scores(
    fragments: &[Fragment],
    faulty: &[u32],
    tie_rel_tol: f64,
) -> Result<(f64, f64), MetricError> {
    let frank = Ranking::with_tolerance(
        fragments
            .iter()
            .enumerate()
            .map(|(i, f)| (i as u32, f.score))
            .collect(),
        tie_rel_tol,
    )?;
    let bad: Vec<u32> = fragments
        .iter()
        .enumerate()
        .filter(|(_, f)| f.locations.iter().any(|l| faulty.contains(l)))
        .map(|(i, _)| i as u32)
        .collect();
    Ok((
        frank.standard_rank_score(&bad)?,
        frank.steinmann_rank_score(&bad)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::linalg::Rational;

    fn r(n: i128, d: i128) -> Rational {
        Rational::new(n, d)
    }

    fn ranking_from_sizes(sizes: &[usize]) -> Ranking {
        let mut v = Vec::new();
        let mut id = 0u32;
        for (g, &s) in sizes.iter().enumerate() {
            for _ in 0..s {
                v.push((id, -(g as f64)));
                id += 1;
            }
        }
        Ranking::new(v).unwrap()
    }

    /// Exact Def. 28 hitting time of each group's locations (first location of each group).
    fn def28_times(sizes: &[usize], method: ExactMethod) -> Vec<Rational> {
        let rk = ranking_from_sizes(sizes);
        let chain: Chain<Rational> = def28_chain(&rk).unwrap();
        let t = hitting_times_exact(&chain, 0, method).unwrap();
        let mut out = Vec::new();
        let mut first = 0;
        for &s in sizes {
            let state = chain
                .locations
                .iter()
                .find(|e| e.0 == first as u32)
                .unwrap()
                .1;
            // All locations of a group have the same hitting time.
            for id in first..first + s {
                let st = chain.locations.iter().find(|e| e.0 == id as u32).unwrap().1;
                assert_eq!(t[st], t[state]);
            }
            out.push(t[state]);
            first += s;
        }
        out
    }

    #[test]
    fn def28_exact_rational_oracles() {
        // spec §5 "Def. 28 from g_0 [derived]".
        for method in [ExactMethod::PerTarget, ExactMethod::Fundamental] {
            assert_eq!(def28_times(&[1], method), vec![r(2, 1)]);
            assert_eq!(def28_times(&[4], method), vec![r(11, 1)]);
            assert_eq!(def28_times(&[1, 1], method), vec![r(5, 1), r(11, 1)]);
            assert_eq!(def28_times(&[2, 1], method), vec![r(8, 1), r(17, 1)]);
            assert_eq!(def28_times(&[1, 2], method), vec![r(7, 2), r(26, 1)]);
            assert_eq!(
                def28_times(&[3, 2, 1, 3], method),
                vec![r(4753, 512), r(2587, 32), r(3907, 8), r(7505, 1)]
            );
        }
    }

    #[test]
    fn def28_stationary_group_mass() {
        // Fig. 1, |L| = 9: group masses proportional to 1024, 128, 16, 2 (/1755 of the group part).
        let rk = ranking_from_sizes(&[3, 2, 1, 3]);
        let chain: Chain<Rational> = def28_chain(&rk).unwrap();
        let w = stationary(&chain).unwrap();
        let g: Vec<Rational> = w[..4].to_vec();
        assert_eq!(g[0] / g[1], r(8, 1));
        assert_eq!(g[1] / g[2], r(8, 1));
        assert_eq!(g[2] / g[3], r(8, 1));
        let total = w.iter().fold(Rational::zero(), |a, &b| a + b);
        assert_eq!(total, Rational::one());
    }

    #[test]
    fn def28_closed_form_equals_hitting_time_ranks() {
        let rk = ranking_from_sizes(&[3, 2, 1, 3]);
        let chain: Chain<Rational> = def28_chain(&rk).unwrap();
        let t = hitting_times_exact(&chain, 0, ExactMethod::Fundamental).unwrap();
        let times: Vec<(u32, f64)> = chain
            .locations
            .iter()
            .map(|&(id, s)| (id, t[s].to_f64()))
            .collect();
        for id in 0..9u32 {
            let (ht, _) = ht_rank_from_hitting_times(&times, &[id], 1e-9).unwrap();
            assert_eq!(ht, ht_rank_def28(&rk, &[id]).unwrap());
        }
        assert_eq!(ht_rank_def28(&rk, &[5]).unwrap(), 5.5);
    }

    /// HT_Rank paper Fig. 1 with ids as in `ranking::tests::fig1` and J = same function.
    fn fig1_with_jumps() -> (Ranking, Jumps) {
        let rk = Ranking::new(vec![
            (0, 0.98), // Node.Has(2)
            (1, 0.98), // Node.String(3)
            (2, 0.98), // Node.Verify(4)
            (3, 0.97), // Node.Has(4)
            (4, 0.97), // Node.Has(6)
            (5, 0.95), // Node.Has(3)
            (6, 0.94), // main(1)
            (7, 0.94), // Scanner.Scan(24)
            (8, 0.94), // Node.Verify(0)
        ])
        .unwrap();
        let funcs = [
            (0, "Node.Has"),
            (1, "Node.String"),
            (2, "Node.Verify"),
            (3, "Node.Has"),
            (4, "Node.Has"),
            (5, "Node.Has"),
            (6, "main"),
            (7, "Scanner.Scan"),
            (8, "Node.Verify"),
        ];
        (rk, Jumps::same_group(funcs))
    }

    fn fig1_expected() -> Vec<(u32, Rational, f64)> {
        vec![
            (0, r(426173, 39327), 0.5),
            (2, r(124848, 9763), 1.5),
            (1, r(432109, 25209), 2.5),
            (3, r(4472765, 195783), 4.0),
            (4, r(4472765, 195783), 4.0),
            (5, r(50266, 2055), 5.5),
            (8, r(432224, 15883), 6.5),
            (6, r(1175925, 6557), 8.0),
            (7, r(1175925, 6557), 8.0),
        ]
    }

    #[test]
    fn def29_fig1_exact_rational_oracles() {
        let (rk, j) = fig1_with_jumps();
        let chain: Chain<Rational> = def29_chain(&rk, &j, 0.5).unwrap();
        chain.validate().unwrap();
        for method in [ExactMethod::PerTarget, ExactMethod::Fundamental] {
            let t = hitting_times_exact(&chain, 0, method).unwrap();
            for (id, want, _) in fig1_expected() {
                let s = chain.locations.iter().find(|e| e.0 == id).unwrap().1;
                assert_eq!(t[s], want, "id {id} method {method:?}");
            }
        }
    }

    #[test]
    fn def29_fig1_f64_ht_rank() {
        let (rk, j) = fig1_with_jumps();
        let cfg = HtRankConfig::default();
        for (id, want, ht) in fig1_expected() {
            let rep = ht_rank_def29(&rk, &j, &[id], &cfg).unwrap();
            assert_eq!(rep.engine, HtEngine::Exact);
            assert_eq!(rep.ht_rank, ht, "id {id}");
            let got = rep.hitting_times.iter().find(|e| e.0 == id).unwrap().1;
            assert!(
                (got - want.to_f64()).abs() <= 1e-12 * want.to_f64(),
                "id {id}: {got} vs {want}"
            );
        }
        // Steinmann variant: faults Has(4) and Has(6) tied (2 of 2): 3 + 3/3 = 4.
        let rep = ht_rank_def29(&rk, &j, &[3, 4], &cfg).unwrap();
        assert_eq!(rep.ht_rank, 4.0);
        assert_eq!(rep.ht_rank_steinmann, 4.0);
        let rep = ht_rank_def29(&rk, &j, &[6, 7], &cfg).unwrap();
        assert_eq!(rep.ht_rank_steinmann, 7.0 + 1.0);
        assert_eq!(rep.ht_rank, 8.0);
    }

    #[test]
    fn def29_without_jumps_uses_closed_form() {
        let (rk, _) = fig1_with_jumps();
        let rep = ht_rank_def29(&rk, &Jumps::new(), &[5], &HtRankConfig::default()).unwrap();
        assert_eq!(rep.engine, HtEngine::ClosedForm);
        assert_eq!(rep.ht_rank, 5.5);
        // Jumps only to unranked ids are ignored as well.
        let mut j = Jumps::new();
        j.add_undirected(5, 100, 1.0).unwrap();
        let rep = ht_rank_def29(&rk, &j, &[5], &HtRankConfig::default()).unwrap();
        assert_eq!(rep.engine, HtEngine::ClosedForm);
    }

    #[test]
    fn monte_carlo_matches_exact_within_tolerance() {
        let (rk, j) = fig1_with_jumps();
        let cfg = HtRankConfig {
            max_states_exact: 0,
            walks: 20_000,
            seed: 7,
            ..HtRankConfig::default()
        };
        let rep = ht_rank_def29(&rk, &j, &[0], &cfg).unwrap();
        assert!(matches!(
            rep.engine,
            HtEngine::MonteCarlo { censored: 0, .. }
        ));
        for (id, want, _) in fig1_expected() {
            let got = rep.hitting_times.iter().find(|e| e.0 == id).unwrap().1;
            let rel = (got - want.to_f64()).abs() / want.to_f64();
            // The largest mean is ~179 with sd ~ mean: 20k walks give ~0.7% s.e.
            assert!(rel < 0.04, "id {id}: est {got} exact {want} rel {rel}");
        }
        // Same seed, same estimate.
        let rep2 = ht_rank_def29(&rk, &j, &[0], &cfg).unwrap();
        assert_eq!(rep.hitting_times, rep2.hitting_times);
    }

    #[test]
    fn monte_carlo_censors_at_cap() {
        let rk = ranking_from_sizes(&[1, 1, 1, 1, 1, 1]);
        let chain: Chain<f64> = def28_chain(&rk).unwrap();
        let est = hitting_times_monte_carlo(&chain, 0, &[], 50, 3, 1).unwrap();
        // Group g_5 is at distance 5 from g_0: unreachable within 3 steps.
        assert_eq!(est.censored[5], 50);
        assert_eq!(est.times[5], 3.0);
        assert_eq!(est.times[0], 0.0);
    }

    #[test]
    fn invalid_inputs_are_errors() {
        let (rk, j) = fig1_with_jumps();
        assert!(def29_chain::<f64>(&rk, &j, 1.0).is_err());
        assert!(def29_chain::<f64>(&rk, &j, -0.1).is_err());
        assert!(Jumps::new().add_directed(1, 2, 0.0).is_err());
        assert!(Jumps::new().add_directed(1, 2, f64::NAN).is_err());
        assert_eq!(
            ht_rank_def29(&rk, &j, &[42], &HtRankConfig::default()).unwrap_err(),
            MetricError::NoFaultRanked
        );
        let bad = Chain::<f64> {
            rows: vec![vec![(0, 0.5)], vec![(1, 1.0)]],
            n_groups: 1,
            locations: vec![],
        };
        assert!(bad.validate().is_err());
        let reducible = Chain::<f64> {
            rows: vec![vec![(1, 1.0)], vec![(1, 1.0)]],
            n_groups: 1,
            locations: vec![],
        };
        assert!(reducible.validate().is_err());
    }

    /// ~1000 states (400 groups, 600 locations, functions of 6 blocks plus a
    /// DCFG-like ring): exact all-targets solve agrees with single-target
    /// solves. Ignored by default (slow in debug); run with
    /// `cargo test --release -- --ignored`.
    #[test]
    #[ignore]
    fn def29_thousand_states_fundamental_matches_single_solves() {
        let mut v = Vec::new();
        for id in 0..600u32 {
            v.push((id, -(((id * 7919) % 400) as f64)));
        }
        let rk = Ranking::new(v).unwrap();
        assert_eq!(rk.n_groups(), 400);
        let mut j = Jumps::same_group((0..600u32).map(|id| (id, id / 6)));
        for id in 0..600u32 {
            j.add_undirected(id, (id + 1) % 600, 1.0).unwrap();
        }
        let chain: Chain<f64> = def29_chain(&rk, &j, 0.5).unwrap();
        assert_eq!(chain.n_states(), 1000);
        let t = hitting_times_exact(&chain, 0, ExactMethod::Fundamental).unwrap();
        for &(_, s) in chain.locations.iter().step_by(150) {
            let single = hitting_time_exact_single(&chain, 0, s).unwrap();
            assert!(
                (t[s] - single).abs() <= 1e-9 * single,
                "{} vs {single}",
                t[s]
            );
        }
        let rep = ht_rank_def29(&rk, &j, &[5], &HtRankConfig::default()).unwrap();
        assert_eq!(rep.engine, HtEngine::Exact);
    }

    #[test]
    fn single_target_solve_matches_oracle() {
        let (rk, j) = fig1_with_jumps();
        let chain: Chain<Rational> = def29_chain(&rk, &j, 0.5).unwrap();
        let s = chain.locations.iter().find(|e| e.0 == 5).unwrap().1;
        assert_eq!(
            hitting_time_exact_single(&chain, 0, s).unwrap(),
            r(50266, 2055)
        );
        assert_eq!(
            hitting_time_exact_single(&chain, 0, 0).unwrap(),
            Rational::zero()
        );
        assert!(hitting_time_exact_single(&chain, 0, 99).is_err());
    }

    fn def30_example() -> Vec<Fragment> {
        // a=0, b=1, c=2, d=3; h1={a,b} 0.9, h2={b,c} 0.9, h3={c,d} 0.5.
        vec![
            Fragment {
                score: 0.9,
                locations: vec![0, 1],
            },
            Fragment {
                score: 0.9,
                locations: vec![1, 2],
            },
            Fragment {
                score: 0.5,
                locations: vec![2, 3],
            },
        ]
    }

    #[test]
    fn def30_exact_rational_oracles() {
        let chain: Chain<Rational> =
            def30_chain(&def30_example(), &Jumps::new(), 0.0, 0.0).unwrap();
        assert_eq!(chain.n_states(), 2 + 3 + 4);
        let t = hitting_times_exact(&chain, 0, ExactMethod::Fundamental).unwrap();
        let want = [
            (1, r(769, 44)),
            (2, r(211, 11)),
            (0, r(421, 11)),
            (3, r(1007, 22)),
        ];
        for (id, w) in want {
            let s = chain.locations.iter().find(|e| e.0 == id).unwrap().1;
            assert_eq!(t[s], w, "location {id}");
        }
        let cfg = HtRankConfig {
            p_jump: 0.0,
            ..HtRankConfig::default()
        };
        for (id, ht) in [(1, 0.5), (2, 1.5), (0, 2.5), (3, 3.5)] {
            let rep = ht_rank_def30(&def30_example(), &Jumps::new(), &[id], &cfg).unwrap();
            assert_eq!(rep.ht_rank, ht, "location {id}");
        }
        assert_eq!(
            ht_rank_def30(&def30_example(), &Jumps::new(), &[9], &cfg).unwrap_err(),
            MetricError::NoFaultRanked
        );
        // With jumps the chain stays stochastic and irreducible.
        let mut j = Jumps::new();
        j.add_undirected(0, 3, 1.0).unwrap();
        let chain: Chain<Rational> = def30_chain(&def30_example(), &j, 0.5, 0.0).unwrap();
        chain.validate().unwrap();
        let bad = vec![Fragment {
            score: 1.0,
            locations: vec![],
        }];
        assert!(def30_chain::<f64>(&bad, &Jumps::new(), 0.0, 0.0).is_err());
    }

    #[test]
    fn fragment_scores_narrative() {
        // One top fragment of 10 blocks containing the fault: SBBFL "rank 1"
        // (Steinmann over fragments); the same 10 blocks tied at the top of a
        // block list give a Standard score of 5.
        let frags = vec![
            Fragment {
                score: 0.9,
                locations: (0..10).collect(),
            },
            Fragment {
                score: 0.4,
                locations: vec![10, 11],
            },
        ];
        assert_eq!(fragment_rank_scores(&frags, &[3], 0.0).unwrap(), (0.5, 1.0));
        let blocks = Ranking::new(
            (0..10)
                .map(|i| (i, 0.9))
                .chain([(10, 0.4), (11, 0.4)])
                .collect(),
        )
        .unwrap();
        assert_eq!(blocks.standard_rank_score(&[3]).unwrap(), 5.0);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(24))]
            /// The paper's claim (spec §2.1): under Def. 28, HT_Rank equals the
            /// Standard Rank Score. Checked with exact rational hitting times.
            #[test]
            fn def28_ht_rank_equals_standard_rank(sizes in proptest::collection::vec(1usize..4, 1..5)) {
                let rk = ranking_from_sizes(&sizes);
                let chain: Chain<Rational> = def28_chain(&rk).unwrap();
                let t = hitting_times_exact(&chain, 0, ExactMethod::Fundamental).unwrap();
                // Exact comparison of rationals: sort by value via cross-multiplication.
                let loc: Vec<(u32, Rational)> = chain.locations.iter().map(|&(id, s)| (id, t[s])).collect();
                for &(id, ti) in &loc {
                    let less = loc.iter().filter(|(_, x)| (*x - ti).to_f64() < 0.0 && !(*x - ti).is_zero()).count();
                    let eq = loc.iter().filter(|(_, x)| (*x - ti).is_zero()).count();
                    let ht = less as f64 + eq as f64 / 2.0;
                    prop_assert_eq!(ht, rk.standard_rank_score(&[id]).unwrap());
                }
            }
        }
    }

    #[test]
    fn jumps_union_and_same_group() {
        let mut a = Jumps::same_group([(1, 'f'), (2, 'f'), (3, 'g')]);
        assert_eq!(a.neighbors(1), &[(2, 1.0)]);
        assert!(a.neighbors(3).is_empty());
        let mut b = Jumps::new();
        b.add_undirected(1, 3, 2.0).unwrap();
        b.add_undirected(1, 2, 0.5).unwrap();
        b.add_directed(4, 4, 1.0).unwrap(); // diagonal ignored
        a.union(&b);
        let mut n1 = a.neighbors(1).to_vec();
        n1.sort_by_key(|x| x.0);
        assert_eq!(n1, vec![(2, 1.0), (3, 2.0)]);
        assert!(a.neighbors(4).is_empty());
    }
}
