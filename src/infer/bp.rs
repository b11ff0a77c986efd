//! Loopy belief propagation engine (schedules, damping, convergence, beliefs).

use rayon::prelude::*;

use super::kernel::{clip, sig_pair, sigmoid, FactorKernel, Scratch};
use super::{check_evidence, BpOptions, Convergence, Cpd, Dag, InferError, Marginals, Schedule};

/// Message state. Factor-to-variable messages: `pi_v[v]` (f_v → v) and `lam_e[pos]`
/// (f_v → u, indexed by the position of u in v's parent list). Variable-to-factor messages:
/// `lam_v[v]` (v → f_v) and `pi_e[pos]` (u → f_c, indexed by the position of c in u's child list).
struct State {
    pi_v: Vec<f64>,
    lam_e: Vec<f64>,
    lam_v: Vec<f64>,
    pi_e: Vec<f64>,
    /// Sum of the constant (static-factor) `λ_{c→v}` of each unobserved v, set after iteration 1.
    const_lam: Vec<f64>,
}

/// Clamp log-odds of an observation (`Some(true)` = correct).
#[inline]
fn clamp_of(obs: bool) -> f64 {
    if obs {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    }
}

/// Applies damping to a new factor message and returns (stored value, change in probability).
/// The change is only computed exactly when it could exceed `floor` (the largest change seen so
/// far in this batch), using `|σ(a) - σ(b)| ≤ |a - b| / 4`; otherwise 0 is returned.
#[inline]
fn damp(new: f64, old: f64, damping: f64, log_domain: bool, floor: f64) -> (f64, f64) {
    let stored = if damping == 0.0 {
        new
    } else if log_domain {
        (1.0 - damping) * new + damping * old
    } else {
        let (a_new, b_new) = sig_pair(new);
        let (a_old, b_old) = sig_pair(old);
        let b = (1.0 - damping) * b_new + damping * b_old;
        let a = (1.0 - damping) * a_new + damping * a_old;
        (b / a).ln()
    };
    // NaN bound (∞ - ∞: same certainty) compares false: no change.
    let change = if (stored - old).abs() * 0.25 > floor {
        (sigmoid(stored) - sigmoid(old)).abs()
    } else {
        0.0
    };
    (stored, change)
}

/// Accumulated result of a batch of updates.
#[derive(Clone, Copy)]
struct Acc {
    max_change: f64,
    /// Smallest vertex at which a contradiction (NaN message) was found.
    contradiction: Option<u32>,
}

impl Acc {
    fn new() -> Acc {
        Acc {
            max_change: 0.0,
            contradiction: None,
        }
    }
    #[inline]
    fn change(&mut self, c: f64) {
        if c > self.max_change {
            self.max_change = c;
        }
    }
    #[inline]
    fn check(&mut self, msg: f64, v: usize) {
        if msg.is_nan() {
            let v = v as u32;
            self.contradiction = Some(self.contradiction.map_or(v, |w| w.min(v)));
        }
    }
    fn merge(self, o: Acc) -> Acc {
        Acc {
            max_change: self.max_change.max(o.max_change),
            contradiction: match (self.contradiction, o.contradiction) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

struct Engine<'a> {
    dag: &'a Dag,
    evidence: &'a [Option<bool>],
    /// `pi_static[v]`: all parents of v are observed, so `π_v` never changes after iteration 1.
    /// (`π_v` of an observed v is not used by any message; it is computed once, at the end.)
    pi_static: Vec<bool>,
    /// `lam_static[v]`: the factor's `λ` outputs never change after iteration 1: v is observed
    /// correct (then `λ_{v→u} = ln p` whatever the other parents do, as `λ(0) = C_{¬u}`,
    /// `λ(1) = p·C_{¬u}`), or v and all its parents are observed.
    lam_static: Vec<bool>,
    /// Per unobserved vertex, the child-list positions (into `Dag::ch`) of the children whose
    /// factor is not `lam_static`; only these exchange changing messages after iteration 1.
    dyn_off: Vec<usize>,
    dyn_pos: Vec<usize>,
    /// Vertices with work after iteration 1 (unobserved, or a factor with changing `λ`
    /// outputs), in topological order, and sorted by id.
    active: Vec<u32>,
    active_sorted: Vec<u32>,
    kern: FactorKernel,
    damping: f64,
    log_domain: bool,
}

impl Engine<'_> {
    /// The vertices of `a..b` to visit in this iteration.
    fn range(&self, a: usize, b: usize, first: bool) -> Box<dyn Iterator<Item = usize> + '_> {
        if first {
            Box::new(a..b)
        } else {
            let lo = self.active_sorted.partition_point(|&v| (v as usize) < a);
            let hi = self.active_sorted.partition_point(|&v| (v as usize) < b);
            Box::new(self.active_sorted[lo..hi].iter().map(|&v| v as usize))
        }
    }

    /// Messages with constant inputs are set undamped (they are final after one update).
    #[inline]
    fn pi_damping(&self, v: usize) -> f64 {
        if self.pi_static[v] {
            0.0
        } else {
            self.damping
        }
    }
    #[inline]
    fn lam_damping(&self, v: usize) -> f64 {
        if self.lam_static[v] {
            0.0
        } else {
            self.damping
        }
    }

    /// Factor `f_v`: new `π_v` from `pi_e` (`g` is a gather buffer).
    #[inline]
    fn factor_pi(&self, v: usize, pi_e: &[f64], g: &mut Vec<f64>) -> f64 {
        let (lo, hi) = (self.dag.par_off()[v], self.dag.par_off()[v + 1]);
        g.clear();
        g.extend(self.dag.par_to_ch()[lo..hi].iter().map(|&j| pi_e[j]));
        self.kern.pi_out(g)
    }

    /// Factor `f_v`: new `λ_{v→u}` for all parents into `out` (not damped yet).
    #[inline]
    fn factor_lam(
        &self,
        v: usize,
        pi_e: &[f64],
        lam_v: f64,
        out: &mut [f64],
        s: &mut Scratch,
        g: &mut Vec<f64>,
    ) {
        let (lo, hi) = (self.dag.par_off()[v], self.dag.par_off()[v + 1]);
        g.clear();
        g.extend(self.dag.par_to_ch()[lo..hi].iter().map(|&j| pi_e[j]));
        self.kern.lam_out(g, lam_v, out, s);
    }

    /// Like [`Self::var_out`] after iteration 1: only the dynamic children, plus the constant
    /// sum of the static ones. `out` holds child positions `base..`.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn var_out_dyn(
        &self,
        v: usize,
        pi_v: f64,
        const_lam: f64,
        lam_e: &[f64],
        out: &mut [f64],
        base: usize,
        pre: &mut Vec<f64>,
    ) -> f64 {
        let pos = &self.dyn_pos[self.dyn_off[v]..self.dyn_off[v + 1]];
        let c2p = self.dag.ch_to_par();
        pre.clear();
        let mut acc = const_lam;
        for &j in pos {
            pre.push(acc);
            acc += lam_e[c2p[j]];
        }
        let total = acc;
        let mut suf = 0.0f64;
        for (i, &j) in pos.iter().enumerate().rev() {
            out[j - base] = clip(pi_v + pre[i] + suf);
            suf += lam_e[c2p[j]];
        }
        clip(total)
    }

    /// Variable `v` (unobserved): `λ_v = Σ_c λ_{c→v}` and `π_{v→c}` for every child into `out`.
    #[inline]
    fn var_out(
        &self,
        v: usize,
        pi_v: f64,
        lam_e: &[f64],
        out: &mut [f64],
        pre: &mut Vec<f64>,
    ) -> f64 {
        let (lo, hi) = (self.dag.ch_off()[v], self.dag.ch_off()[v + 1]);
        let c2p = &self.dag.ch_to_par()[lo..hi];
        pre.clear();
        let mut acc = 0.0f64;
        for &j in c2p {
            pre.push(acc);
            acc += lam_e[j];
        }
        let total = acc;
        let mut suf = 0.0f64;
        for i in (0..c2p.len()).rev() {
            out[i] = clip(pi_v + pre[i] + suf);
            suf += lam_e[c2p[i]];
        }
        clip(total)
    }

    fn init(&self) -> State {
        let dag = self.dag;
        let n = dag.len();
        let m = dag.num_edges();
        let mut st = State {
            pi_v: vec![0.0; n],
            lam_e: vec![0.0; m],
            lam_v: vec![0.0; n],
            pi_e: vec![0.0; m],
            const_lam: vec![0.0; n],
        };
        for v in 0..n {
            if dag.parents(v as u32).is_empty() {
                st.pi_v[v] = self.kern.root_pi;
            }
            if let Some(obs) = self.evidence[v] {
                let c = clamp_of(obs);
                st.lam_v[v] = c;
                let (lo, hi) = (dag.ch_off()[v], dag.ch_off()[v + 1]);
                st.pi_e[lo..hi].fill(c);
            }
        }
        st
    }

    /// One sequential iteration: forward sweep (π) then backward sweep (λ).
    fn sweep(
        &self,
        st: &mut State,
        s: &mut Scratch,
        g: &mut Vec<f64>,
        buf: &mut Vec<f64>,
        first: bool,
    ) -> Acc {
        let dag = self.dag;
        let mut acc = Acc::new();
        let order = if first {
            dag.topological_order()
        } else {
            &self.active
        };
        for &v in order {
            let v = v as usize;
            if !dag.parents(v as u32).is_empty()
                && self.evidence[v].is_none()
                && (first || !self.pi_static[v])
            {
                let new = self.factor_pi(v, &st.pi_e, g);
                let (stored, ch) = damp(
                    new,
                    st.pi_v[v],
                    self.pi_damping(v),
                    self.log_domain,
                    acc.max_change,
                );
                acc.check(stored, v);
                acc.change(ch);
                st.pi_v[v] = stored;
            }
            if self.evidence[v].is_none() {
                let (lo, hi) = (dag.ch_off()[v], dag.ch_off()[v + 1]);
                let l = if first {
                    self.var_out(v, st.pi_v[v], &st.lam_e, &mut st.pi_e[lo..hi], buf)
                } else {
                    self.var_out_dyn(
                        v,
                        st.pi_v[v],
                        st.const_lam[v],
                        &st.lam_e,
                        &mut st.pi_e,
                        0,
                        buf,
                    )
                };
                // An output is NaN only if the full sum (belief) is NaN.
                acc.check(st.pi_v[v] + l, v);
            }
        }
        for &v in order.iter().rev() {
            let v = v as usize;
            if self.evidence[v].is_none() {
                // λ_v = Σ_c λ_{c→v}
                let (lo, hi) = (dag.ch_off()[v], dag.ch_off()[v + 1]);
                let l: f64 = if first {
                    dag.ch_to_par()[lo..hi].iter().map(|&j| st.lam_e[j]).sum()
                } else {
                    let c2p = dag.ch_to_par();
                    st.const_lam[v]
                        + self.dyn_pos[self.dyn_off[v]..self.dyn_off[v + 1]]
                            .iter()
                            .map(|&j| st.lam_e[c2p[j]])
                            .sum::<f64>()
                };
                let l = clip(l);
                acc.check(l, v);
                st.lam_v[v] = l;
            }
            let (lo, hi) = (dag.par_off()[v], dag.par_off()[v + 1]);
            if hi > lo && (first || !self.lam_static[v]) {
                buf.resize(hi - lo, 0.0);
                self.factor_lam(v, &st.pi_e, st.lam_v[v], buf, s, g);
                for (i, &new) in buf.iter().enumerate() {
                    let (stored, ch) = damp(
                        new,
                        st.lam_e[lo + i],
                        self.lam_damping(v),
                        self.log_domain,
                        acc.max_change,
                    );
                    acc.check(stored, v);
                    acc.change(ch);
                    st.lam_e[lo + i] = stored;
                }
            }
        }
        acc
    }

    /// One flooding iteration: all factor messages from the old variable messages (parallel over
    /// vertex chunks), then all variable messages from the new factor messages.
    fn flood(&self, st: &mut State, fchunks: &[usize], vchunks: &[usize], first: bool) -> Acc {
        let dag = self.dag;
        // Phase A: factors.
        let acc_a = {
            let parts = split(fchunks, dag.par_off(), &mut st.pi_v, &mut st.lam_e);
            let pi_e = &st.pi_e;
            let lam_v = &st.lam_v;
            parts
                .into_par_iter()
                .map(|(a, b, pv, le)| {
                    let mut s = Scratch::default();
                    let mut g = Vec::new();
                    let mut buf = Vec::new();
                    let mut acc = Acc::new();
                    let base = dag.par_off()[a];
                    for v in self.range(a, b, first) {
                        let (lo, hi) = (dag.par_off()[v] - base, dag.par_off()[v + 1] - base);
                        if hi == lo {
                            continue;
                        }
                        if self.evidence[v].is_none() && (first || !self.pi_static[v]) {
                            let new = self.factor_pi(v, pi_e, &mut g);
                            let (stored, ch) = damp(
                                new,
                                pv[v - a],
                                self.pi_damping(v),
                                self.log_domain,
                                acc.max_change,
                            );
                            acc.check(stored, v);
                            acc.change(ch);
                            pv[v - a] = stored;
                        }
                        if !first && self.lam_static[v] {
                            continue;
                        }
                        buf.resize(hi - lo, 0.0);
                        self.factor_lam(v, pi_e, lam_v[v], &mut buf, &mut s, &mut g);
                        for (i, &new) in buf.iter().enumerate() {
                            let (stored, ch) = damp(
                                new,
                                le[lo + i],
                                self.lam_damping(v),
                                self.log_domain,
                                acc.max_change,
                            );
                            acc.check(stored, v);
                            acc.change(ch);
                            le[lo + i] = stored;
                        }
                    }
                    acc
                })
                .reduce(Acc::new, Acc::merge)
        };
        // Phase B: variables.
        let acc_b = {
            let parts = split(vchunks, dag.ch_off(), &mut st.lam_v, &mut st.pi_e);
            let pi_v = &st.pi_v;
            let lam_e = &st.lam_e;
            let const_lam = &st.const_lam;
            parts
                .into_par_iter()
                .map(|(a, b, lv, pe)| {
                    let mut pre = Vec::new();
                    let mut acc = Acc::new();
                    let base = dag.ch_off()[a];
                    for v in self.range(a, b, first) {
                        if self.evidence[v].is_some() {
                            continue;
                        }
                        let (lo, hi) = (dag.ch_off()[v] - base, dag.ch_off()[v + 1] - base);
                        let l = if first {
                            self.var_out(v, pi_v[v], lam_e, &mut pe[lo..hi], &mut pre)
                        } else {
                            self.var_out_dyn(v, pi_v[v], const_lam[v], lam_e, pe, base, &mut pre)
                        };
                        // An output is NaN only if the full sum (belief) is NaN.
                        acc.check(pi_v[v] + l, v);
                        lv[v - a] = l;
                    }
                    acc
                })
                .reduce(Acc::new, Acc::merge)
        };
        // Variable messages are not counted in max_change (they are functions of the factor
        // messages), but contradictions there are reported.
        Acc {
            max_change: acc_a.max_change,
            contradiction: acc_a.merge(acc_b).contradiction,
        }
    }
}

type Part<'a> = (usize, usize, &'a mut [f64], &'a mut [f64]);

/// Splits per-vertex data `vd` and per-edge data `ed` (CSR offsets `off`) at the vertex
/// boundaries `bounds` (0 = b_0 < b_1 < ... = n).
fn split<'a>(
    bounds: &[usize],
    off: &[usize],
    vd: &'a mut [f64],
    ed: &'a mut [f64],
) -> Vec<Part<'a>> {
    let mut out = Vec::with_capacity(bounds.len());
    let (mut vrest, mut erest) = (vd, ed);
    for w in bounds.windows(2) {
        let (a, b) = (w[0], w[1]);
        let (vh, vt) = vrest.split_at_mut(b - a);
        let (eh, et) = erest.split_at_mut(off[b] - off[a]);
        out.push((a, b, vh, eh));
        vrest = vt;
        erest = et;
    }
    out
}

/// Vertex chunk boundaries (0 = b_0 < ... = n) with roughly `total / pieces` (at least
/// `min_target`) units of work each, where `weight(v)` is the work of vertex v.
fn chunk_bounds(
    n: usize,
    pieces: usize,
    min_target: usize,
    weight: impl Fn(usize) -> usize,
) -> Vec<usize> {
    let total: usize = (0..n).map(&weight).sum();
    let target = (total / pieces.max(1)).max(min_target).max(1);
    let mut b = vec![0];
    let mut acc = 0usize;
    for v in 0..n {
        acc += weight(v);
        if acc >= target {
            b.push(v + 1);
            acc = 0;
        }
    }
    if b.last() != Some(&n) {
        b.push(n);
    }
    b
}

/// Loopy belief propagation. `evidence[v]`: `Some(true)` observed correct, `Some(false)` observed
/// incorrect, `None` unobserved. Returns `P(v incorrect | evidence)` for every vertex.
///
/// Errors: evidence length mismatch, parameters out of range, or evidence of probability zero
/// ([`InferError::ImpossibleEvidence`], detected as a message or belief of zero mass).
pub fn loopy_bp(
    dag: &Dag,
    cpd: &Cpd,
    evidence: &[Option<bool>],
    opts: &BpOptions,
) -> Result<Marginals, InferError> {
    cpd.validate()?;
    opts.validate()?;
    check_evidence(dag, evidence)?;
    let pi_static: Vec<bool> = (0..dag.len())
        .map(|v| {
            dag.parents(v as u32)
                .iter()
                .all(|&u| evidence[u as usize].is_some())
        })
        .collect();
    let lam_static: Vec<bool> = (0..dag.len())
        .map(|v| evidence[v] == Some(true) || (pi_static[v] && evidence[v].is_some()))
        .collect();
    let mut dyn_off = Vec::with_capacity(dag.len() + 1);
    let mut dyn_pos = Vec::new();
    dyn_off.push(0);
    for (v, e) in evidence.iter().enumerate() {
        if e.is_none() {
            let lo = dag.ch_off()[v];
            for (i, &c) in dag.children(v as u32).iter().enumerate() {
                if !lam_static[c as usize] {
                    dyn_pos.push(lo + i);
                }
            }
        }
        dyn_off.push(dyn_pos.len());
    }
    let active: Vec<u32> = dag
        .topological_order()
        .iter()
        .copied()
        .filter(|&v| evidence[v as usize].is_none() || !lam_static[v as usize])
        .collect();
    let mut active_sorted = active.clone();
    active_sorted.sort_unstable();
    let eng = Engine {
        dag,
        evidence,
        pi_static,
        lam_static,
        dyn_off,
        dyn_pos,
        active,
        active_sorted,
        kern: FactorKernel::new(cpd.p, cpd.prior, opts.log_domain),
        damping: opts.damping,
        log_domain: opts.log_domain,
    };
    let mut st = eng.init();
    let mut conv = Convergence {
        iterations: 0,
        max_change: 0.0,
        converged: true,
    };
    if dag.is_empty() {
        return eng.beliefs(&mut st, conv);
    }
    let n_vertices = dag.len();
    // Chunks for the first iteration (all vertices) and for later ones (balanced on the work
    // that remains: active factors and dynamic children).
    let pieces = 8 * rayon::current_num_threads();
    let (mut fchunks, mut vchunks) = (Vec::new(), Vec::new());
    let (mut fchunks_later, mut vchunks_later) = (Vec::new(), Vec::new());
    if opts.schedule == Schedule::Parallel {
        let (po, co) = (dag.par_off(), dag.ch_off());
        fchunks = chunk_bounds(n_vertices, pieces, 4096, |v| 1 + po[v + 1] - po[v]);
        vchunks = chunk_bounds(n_vertices, pieces, 4096, |v| 1 + co[v + 1] - co[v]);
        let active = |v: usize| evidence[v].is_none() || !eng.lam_static[v];
        fchunks_later = chunk_bounds(n_vertices, pieces, 1024, |v| {
            if active(v) {
                1 + po[v + 1] - po[v]
            } else {
                0
            }
        });
        vchunks_later = chunk_bounds(n_vertices, pieces, 1024, |v| {
            if evidence[v].is_none() {
                1 + eng.dyn_off[v + 1] - eng.dyn_off[v]
            } else {
                0
            }
        });
    }
    let (mut s, mut g, mut buf) = (Scratch::default(), Vec::new(), Vec::new());
    conv.converged = false;
    for it in 1..=opts.max_iter {
        let acc = match opts.schedule {
            Schedule::Sequential => eng.sweep(&mut st, &mut s, &mut g, &mut buf, it == 1),
            Schedule::Parallel if it == 1 => eng.flood(&mut st, &fchunks, &vchunks, true),
            Schedule::Parallel => eng.flood(&mut st, &fchunks_later, &vchunks_later, false),
        };
        if let Some(v) = acc.contradiction {
            return Err(InferError::ImpossibleEvidence { vertex: Some(v) });
        }
        if it == 1 {
            eng.set_const_lam(&mut st);
        }
        conv.iterations = it;
        conv.max_change = acc.max_change;
        if acc.max_change <= opts.tol {
            conv.converged = true;
            break;
        }
    }
    eng.beliefs(&mut st, conv)
}

impl Engine<'_> {
    /// Sums the (now final) messages of static factors into `const_lam`.
    fn set_const_lam(&self, st: &mut State) {
        let dag = self.dag;
        for v in 0..dag.len() {
            if self.evidence[v].is_none() {
                let lo = dag.ch_off()[v];
                st.const_lam[v] = dag
                    .children(v as u32)
                    .iter()
                    .enumerate()
                    .filter(|&(_, &c)| self.lam_static[c as usize])
                    .map(|(i, _)| st.lam_e[dag.ch_to_par()[lo + i]])
                    .sum();
            }
        }
    }

    #[allow(clippy::needless_range_loop)]
    fn beliefs(&self, st: &mut State, convergence: Convergence) -> Result<Marginals, InferError> {
        let (dag, evidence) = (self.dag, self.evidence);
        // Refresh every π_{u→c} (after iteration 1 only those to dynamic factors were updated).
        let mut pre = Vec::new();
        for v in 0..dag.len() {
            if evidence[v].is_none() {
                let (lo, hi) = (dag.ch_off()[v], dag.ch_off()[v + 1]);
                let _ = self.var_out(v, st.pi_v[v], &st.lam_e, &mut st.pi_e[lo..hi], &mut pre);
            }
        }
        let n = dag.len();
        // π_v of observed vertices (only needed to detect contradictions).
        let mut g = Vec::new();
        for v in 0..n {
            if evidence[v].is_some() && !dag.parents(v as u32).is_empty() {
                st.pi_v[v] = self.factor_pi(v, &st.pi_e, &mut g);
            }
        }
        let mut p_incorrect = Vec::with_capacity(n);
        let mut log_odds_incorrect = Vec::with_capacity(n);
        for v in 0..n {
            let (lo, hi) = (dag.ch_off()[v], dag.ch_off()[v + 1]);
            let s: f64 = st.pi_v[v]
                + dag.ch_to_par()[lo..hi]
                    .iter()
                    .map(|&j| st.lam_e[j])
                    .sum::<f64>();
            let impossible = match evidence[v] {
                None => s.is_nan(),
                Some(true) => s.is_nan() || s == f64::INFINITY,
                Some(false) => s.is_nan() || s == f64::NEG_INFINITY,
            };
            if impossible {
                return Err(InferError::ImpossibleEvidence {
                    vertex: Some(v as u32),
                });
            }
            let l = match evidence[v] {
                None => s,
                Some(obs) => clamp_of(obs),
            };
            log_odds_incorrect.push(l);
            p_incorrect.push(sigmoid(l));
        }
        Ok(Marginals {
            p_incorrect,
            log_odds_incorrect,
            convergence,
        })
    }
}
