//! Loopy belief propagation engine (schedules, damping, convergence, beliefs).
//!
//! All schedules except flooding are *block Gauss-Seidel* schedules: the vertices are cut into
//! contiguous id ranges (blocks); one iteration sweeps every block in place (forward in
//! topological order, then backward), blocks in parallel. A block reads the messages that cross
//! into it from another block from *ghost* copies (`gpi`, `glam`) that are refreshed between
//! iterations, so blocks never read memory another block writes, and the result does not depend
//! on the number of threads or on how rayon schedules the blocks. With one block this is exactly
//! the sequential schedule.

use rayon::prelude::*;

use super::cycle::{Stuck, TwoCycle};
use super::double_loop::{Anchors, OuterLoop, Step};
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
    /// Block schedules with several blocks: `gpi[pos]` (parent position) is the last synchronised
    /// value of `π_{u→v}` for an unobserved parent u outside v's block (observed parents send
    /// their clamp, read from the evidence); `glam[pos]` (child position) the last synchronised
    /// `λ_{c→u}` for a child c outside u's block. Empty with one block.
    gpi: Vec<f64>,
    glam: Vec<f64>,
}

/// Block schedule: the blocks are at least this much work (vertices + edges visited), so small
/// graphs are a single block (= the sequential schedule).
pub(crate) const MIN_BLOCK_WORK: usize = 1 << 14;
/// At most about this many blocks (a fixed number, so results do not depend on the thread count;
/// enough for load balance on a few cores, few enough that most messages stay inside a block).
pub(crate) const MAX_BLOCKS: usize = 32;

/// Damping mixes in probability space only below these log-odds (probabilities above ~1e-130).
const PROB_DAMP_MAX: f64 = 300.0;

/// Clamp log-odds of an observation (`Some(true)` = correct).
#[inline]
fn clamp_of(obs: bool) -> f64 {
    if obs {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    }
}

/// `(m(0), m(1))` normalised, from the odds `r = m(1) / m(0)` (`r = ∞`: certainly 1).
#[inline]
fn ratio_pair(r: f64) -> (f64, f64) {
    if r == f64::INFINITY {
        (0.0, 1.0)
    } else {
        let t = 1.0 / (1.0 + r);
        (t, r * t)
    }
}

/// Applies damping to a new factor message and returns (stored value, change in probability).
/// `new` is log-odds, or the odds themselves when `is_ratio` (linear kernel, see
/// `FactorKernel::pi_out_r`). The change is only computed exactly when it could exceed `floor`
/// (the largest change seen so far in this batch), using `|σ(a) - σ(b)| ≤ |a - b| / 4`;
/// otherwise 0 is returned.
#[inline]
fn damp(
    new: f64,
    is_ratio: bool,
    old: f64,
    damping: f64,
    log_domain: bool,
    floor: f64,
) -> (f64, f64) {
    if is_ratio && damping != 0.0 && !log_domain {
        // Damping in probability space straight from the odds: one ln, one exp (for old).
        let (a_new, b_new) = ratio_pair(new);
        let (a_old, b_old) = sig_pair(old);
        let b = (1.0 - damping) * b_new + damping * b_old;
        let a = (1.0 - damping) * a_new + damping * a_old;
        // NaN (contradiction) is caught by the caller's check; its change is ignored.
        return ((b / a).ln(), (b - b_old).abs());
    }
    let new = if is_ratio { new.ln() } else { new };
    // Probability space cannot hold the log-odds of very certain messages (a statement vouched
    // for by thousands of passing values): those are damped in log-odds, like the log domain's.
    let huge = |l: f64| l.is_finite() && l.abs() > PROB_DAMP_MAX;
    let stored = if damping == 0.0 {
        new
    } else if log_domain || huge(new) || huge(old) {
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

/// `|σ(new) - σ(old)|`, computed only when it could exceed `floor` (else 0), as in [`damp`].
#[inline]
fn prob_change(new: f64, old: f64, floor: f64) -> f64 {
    if (new - old).abs() * 0.25 > floor {
        (sigmoid(new) - sigmoid(old)).abs()
    } else {
        0.0
    }
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
    /// outputs), sorted by id (= topological order when ids are).
    active_sorted: Vec<u32>,
    kern: FactorKernel,
    damping: f64,
    log_domain: bool,
    /// Double-loop BP: the outer loop's anchors (empty for plain BP; `super::double_loop`).
    anchors: Anchors,
    /// Plain BP: stop a run caught in a period-2 cycle (`super::cycle`); `None` for the double
    /// loop, whose anchors are part of its state.
    cycle: Option<TwoCycle>,
    /// Plain undamped BP with `BpOptions::stop_swinging`: stop a run whose messages keep
    /// swinging (`super::cycle::Stuck`).
    stuck: Option<Stuck>,
    max_iter: usize,
}

/// A block of the block schedule: vertices `a..b`, the vertices to visit in topological order,
/// and its own slices of the message arrays (`pb = par_off[a]`, `cb = ch_off[a]`).
struct Block<'s> {
    a: usize,
    b: usize,
    pb: usize,
    cb: usize,
    pi_v: &'s mut [f64],
    lam_v: &'s mut [f64],
    /// `pi_e[ch_off[a]..ch_off[b]]`
    pi_e: &'s mut [f64],
    /// `lam_e[par_off[a]..par_off[b]]`
    lam_e: &'s mut [f64],
    /// `gpi[par_off[a]..par_off[b]]` (empty with a single block)
    gpi: &'s mut [f64],
    /// `glam[ch_off[a]..ch_off[b]]` (empty with a single block)
    glam: &'s mut [f64],
}

/// Reusable buffers of one block sweep.
#[derive(Default)]
struct Bufs {
    s: Scratch,
    g: Vec<f64>,
    out: Vec<f64>,
    vals: Vec<f64>,
    pos: Vec<usize>,
}

/// A partition of the vertices into blocks.
struct Plan {
    /// Block `i` is the vertex range `bounds[i]..bounds[i + 1]`.
    bounds: Vec<usize>,
    /// The vertices of block `i` to visit, in topological order: `order[order_off[i]..order_off[i + 1]]`.
    order: Vec<u32>,
    order_off: Vec<usize>,
    /// Per block: parent positions (into `gpi`) and child positions (into `glam`) of the
    /// cross-block edges whose messages change after iteration 1 (unobserved parent, factor with
    /// changing `λ` outputs); the ghosts refreshed after every later iteration.
    sync_in: Vec<Vec<usize>>,
    sync_out: Vec<Vec<usize>>,
}

impl Plan {
    fn blocks(&self) -> usize {
        self.bounds.len() - 1
    }
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

    /// Double-loop BP: the belief `v` hands its factors, from BP's sum `t` of its incoming
    /// factor messages (`None`: plain BP, use `t`). `v`'s bounded entropy weighs
    /// `κ = |Ch(v)| - 1` (its own factor pairs with one unit; `double_loop.rs`).
    #[inline]
    fn anchored(&self, v: usize, t: f64) -> Option<f64> {
        if self.anchors.is_unset() {
            return None; // plain BP: nothing to compute on this hot path
        }
        let children = self.dag.ch_off()[v + 1] - self.dag.ch_off()[v];
        self.anchors.belief(v, children.saturating_sub(1), t)
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

    /// Factor `f_v`: new `π_v` from `pi_e` (`g` is a gather buffer), as odds when `ratio` and
    /// the linear kernel applies (which the flag returned tells; see `damp`).
    #[inline]
    fn factor_pi_r(&self, v: usize, pi_e: &[f64], g: &mut Vec<f64>, ratio: bool) -> (f64, bool) {
        let (lo, hi) = (self.dag.par_off()[v], self.dag.par_off()[v + 1]);
        g.clear();
        g.extend(self.dag.par_to_ch()[lo..hi].iter().map(|&j| pi_e[j]));
        self.kern.pi_out_r(g, ratio)
    }

    /// Factor `f_v`: new `λ_{v→u}` for all parents into `out` (not damped yet; odds when `ratio`
    /// and the linear kernel applies, which the result tells).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn factor_lam(
        &self,
        v: usize,
        pi_e: &[f64],
        lam_v: f64,
        out: &mut [f64],
        s: &mut Scratch,
        g: &mut Vec<f64>,
        ratio: bool,
    ) -> bool {
        let (lo, hi) = (self.dag.par_off()[v], self.dag.par_off()[v + 1]);
        g.clear();
        g.extend(self.dag.par_to_ch()[lo..hi].iter().map(|&j| pi_e[j]));
        self.kern.lam_out_r(g, lam_v, out, s, ratio)
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
        if let Some(b) = self.anchored(v, pi_v + total) {
            for &j in pos {
                out[j - base] = clip(b - lam_e[c2p[j]]);
            }
            return clip(b - pi_v);
        }
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
        if let Some(b) = self.anchored(v, pi_v + total) {
            for (o, &j) in out.iter_mut().zip(c2p) {
                *o = clip(b - lam_e[j]);
            }
            return clip(b - pi_v);
        }
        let mut suf = 0.0f64;
        for i in (0..c2p.len()).rev() {
            out[i] = clip(pi_v + pre[i] + suf);
            suf += lam_e[c2p[i]];
        }
        clip(total)
    }

    /// Initial messages: roots send their prior, observed variables their clamp, all else 0
    /// (uniform). `ghosts`: allocate the ghost arrays (block schedules with several blocks).
    fn init(&self, vchunks: &[usize], ghosts: bool) -> State {
        let dag = self.dag;
        let (n, m) = (dag.len(), dag.num_edges());
        let pi_v: Vec<f64> = (0..n)
            .into_par_iter()
            .map(|v| {
                if dag.par_off()[v] == dag.par_off()[v + 1] {
                    self.kern.root_pi
                } else {
                    0.0
                }
            })
            .collect();
        let lam_v: Vec<f64> = self
            .evidence
            .par_iter()
            .map(|e| e.map_or(0.0, clamp_of))
            .collect();
        let mut pi_e = vec![0.0; m];
        split(vchunks, dag.ch_off(), &mut [], &mut pi_e)
            .into_par_iter()
            .for_each(|(a, b, _, pe)| {
                let base = dag.ch_off()[a];
                for v in a..b {
                    if let Some(obs) = self.evidence[v] {
                        let (lo, hi) = (dag.ch_off()[v] - base, dag.ch_off()[v + 1] - base);
                        pe[lo..hi].fill(clamp_of(obs));
                    }
                }
            });
        let ghost = |len: usize| if ghosts { vec![0.0; len] } else { Vec::new() };
        State {
            pi_v,
            lam_e: vec![0.0; m],
            lam_v,
            pi_e,
            const_lam: vec![0.0; n],
            gpi: ghost(m),
            glam: ghost(m),
        }
    }

    /// Partitions the vertices into blocks of about equal `weight` (see [`MIN_BLOCK_WORK`],
    /// [`MAX_BLOCKS`]); `visit` is the list of vertices to visit, in topological order, and
    /// `later` whether the plan is for the iterations after the first (then the ghost refresh
    /// lists are built).
    fn plan(
        &self,
        visit: &[u32],
        min_block_work: usize,
        later: bool,
        weight: impl Fn(usize) -> usize + Sync,
    ) -> Plan {
        let dag = self.dag;
        let n = dag.len();
        let bounds = chunk_bounds(n, MAX_BLOCKS, min_block_work, weight);
        let k = bounds.len() - 1;
        if k == 1 {
            return Plan {
                bounds,
                order: visit.to_vec(),
                order_off: vec![0, visit.len()],
                sync_in: vec![Vec::new()],
                sync_out: vec![Vec::new()],
            };
        }
        let block_of = |v: usize| bounds.partition_point(|&b| b <= v) - 1;
        let (order, order_off) = if visit.par_windows(2).all(|w| w[0] < w[1]) {
            // Sorted by id (the topological order of EPGs): the blocks are slices of it.
            let off = bounds
                .iter()
                .map(|&b| visit.partition_point(|&v| (v as usize) < b))
                .collect();
            (visit.to_vec(), off)
        } else {
            // Counting sort of `visit` by block (stable: keeps the topological order).
            let blk: Vec<u32> = visit
                .par_iter()
                .map(|&v| block_of(v as usize) as u32)
                .collect();
            let mut order_off = vec![0usize; k + 1];
            for &bl in &blk {
                order_off[bl as usize + 1] += 1;
            }
            for i in 0..k {
                order_off[i + 1] += order_off[i];
            }
            let mut fill = order_off.clone();
            let mut order = vec![0u32; visit.len()];
            for (&v, &bl) in visit.iter().zip(&blk) {
                order[fill[bl as usize]] = v;
                fill[bl as usize] += 1;
            }
            (order, order_off)
        };
        let (mut sync_in, mut sync_out) = (vec![Vec::new(); k], vec![Vec::new(); k]);
        if later {
            let (ch, c2p) = (dag.ch(), dag.ch_to_par());
            for &u in &self.active_sorted {
                let u = u as usize;
                for &j in &self.dyn_pos[self.dyn_off[u]..self.dyn_off[u + 1]] {
                    let c = ch[j] as usize;
                    let (bu, bc) = (block_of(u), block_of(c));
                    if bu != bc {
                        sync_out[bu].push(j);
                        sync_in[bc].push(c2p[j]);
                    }
                }
            }
        }
        Plan {
            bounds,
            order,
            order_off,
            sync_in,
            sync_out,
        }
    }

    /// Cuts the state into the blocks of `plan`.
    fn blocks<'s>(&self, st: &'s mut State, plan: &Plan) -> Vec<Block<'s>> {
        let dag = self.dag;
        let bounds = &plan.bounds;
        let k = plan.blocks();
        let mut pv = split(bounds, dag.par_off(), &mut st.pi_v, &mut st.lam_e).into_iter();
        let mut lv = split(bounds, dag.ch_off(), &mut st.lam_v, &mut st.pi_e).into_iter();
        let (mut gp, mut gl) = if st.gpi.is_empty() {
            debug_assert_eq!(k, 1);
            (Vec::new().into_iter(), Vec::new().into_iter())
        } else {
            (
                split(bounds, dag.par_off(), &mut [], &mut st.gpi).into_iter(),
                split(bounds, dag.ch_off(), &mut [], &mut st.glam).into_iter(),
            )
        };
        let mut out = Vec::with_capacity(k);
        for _ in 0..k {
            let (a, b, pi_v, lam_e) = pv.next().expect("one part per block");
            let (_, _, lam_v, pi_e) = lv.next().expect("one part per block");
            let gpi = gp.next().map_or(&mut [][..], |p| p.3);
            let glam = gl.next().map_or(&mut [][..], |p| p.3);
            out.push(Block {
                a,
                b,
                pb: dag.par_off()[a],
                cb: dag.ch_off()[a],
                pi_v,
                lam_v,
                pi_e,
                lam_e,
                gpi,
                glam,
            });
        }
        out
    }

    /// Refreshes the ghosts of the cross-block messages that change after iteration 1 (these
    /// are all the ghosts later iterations read: observed parents' messages are read from the
    /// evidence). Returns the largest change (in probability) of a ghost variable-to-factor
    /// message, if larger than `floor`.
    fn sync(&self, st: &mut State, plan: &Plan, floor: f64) -> f64 {
        if plan.blocks() == 1 {
            return floor;
        }
        let dag = self.dag;
        let (p2c, c2p) = (dag.par_to_ch(), dag.ch_to_par());
        let (pi_e, lam_e) = (&st.pi_e, &st.lam_e);
        let gp = split(&plan.bounds, dag.par_off(), &mut [], &mut st.gpi);
        let gl = split(&plan.bounds, dag.ch_off(), &mut [], &mut st.glam);
        gp.into_par_iter()
            .zip(gl.into_par_iter())
            .enumerate()
            .map(|(i, ((a, _, _, gpi), (_, _, _, glam)))| {
                let (pb, cb) = (dag.par_off()[a], dag.ch_off()[a]);
                let mut change = floor;
                for &j in &plan.sync_in[i] {
                    let new = pi_e[p2c[j]];
                    change = change.max(prob_change(new, gpi[j - pb], change));
                    gpi[j - pb] = new;
                }
                for &j in &plan.sync_out[i] {
                    glam[j - cb] = lam_e[c2p[j]];
                }
                change
            })
            .reduce(|| floor, f64::max)
    }

    /// One block-schedule iteration: every block swept in place, in parallel.
    fn run_blocks(&self, st: &mut State, plan: &Plan, first: bool) -> Acc {
        let const_lam = std::mem::take(&mut st.const_lam);
        let acc = {
            let blocks = self.blocks(st, plan);
            if blocks.len() == 1 {
                let mut bufs = Bufs::default();
                let mut blocks = blocks;
                self.sweep_block(&mut blocks[0], &plan.order, &const_lam, &mut bufs, first)
            } else {
                blocks
                    .into_par_iter()
                    .enumerate()
                    .map(|(i, mut blk)| {
                        let order = &plan.order[plan.order_off[i]..plan.order_off[i + 1]];
                        let mut bufs = Bufs::default();
                        self.sweep_block(&mut blk, order, &const_lam, &mut bufs, first)
                    })
                    .reduce(Acc::new, Acc::merge)
            }
        };
        st.const_lam = const_lam;
        acc
    }

    /// `π_{u→v}` for the parent at parent position `j` of a vertex of `blk`.
    #[inline]
    fn pi_in(&self, blk: &Block, j: usize) -> f64 {
        let u = self.dag.par()[j] as usize;
        if u >= blk.a && u < blk.b {
            blk.pi_e[self.dag.par_to_ch()[j] - blk.cb]
        } else if let Some(obs) = self.evidence[u] {
            clamp_of(obs)
        } else {
            blk.gpi[j - blk.pb]
        }
    }

    /// `λ_{c→u}` for the child at child position `j` of a vertex of `blk`.
    #[inline]
    fn lam_in(&self, blk: &Block, j: usize) -> f64 {
        let c = self.dag.ch()[j] as usize;
        if c >= blk.a && c < blk.b {
            blk.lam_e[self.dag.ch_to_par()[j] - blk.pb]
        } else {
            blk.glam[j - blk.cb]
        }
    }

    /// One in-place iteration over a block: forward sweep (factor `π_v`, then `v`'s `π_{v→c}`)
    /// in topological order, then backward sweep (`λ_v`, then the factor's `λ_{v→u}`).
    fn sweep_block(
        &self,
        blk: &mut Block,
        order: &[u32],
        const_lam: &[f64],
        bufs: &mut Bufs,
        first: bool,
    ) -> Acc {
        let dag = self.dag;
        let (po, co) = (dag.par_off(), dag.ch_off());
        let a = blk.a;
        let mut acc = Acc::new();
        for &v in order {
            let v = v as usize;
            let (plo, phi) = (po[v], po[v + 1]);
            if phi > plo && self.evidence[v].is_none() && (first || !self.pi_static[v]) {
                bufs.g.clear();
                for j in plo..phi {
                    let x = self.pi_in(blk, j);
                    bufs.g.push(x);
                }
                let d = self.pi_damping(v);
                let (new, is_ratio) = self.kern.pi_out_r(&bufs.g, d != 0.0);
                let (stored, ch) = damp(
                    new,
                    is_ratio,
                    blk.pi_v[v - a],
                    d,
                    self.log_domain,
                    acc.max_change,
                );
                acc.check(stored, v);
                acc.change(ch);
                blk.pi_v[v - a] = stored;
            }
            if self.evidence[v].is_none() {
                // π_{v→c} = π_v + Σ_{c' ≠ c} λ_{c'→v} (prefix/suffix sums over the children).
                let (start, pos) = if first {
                    bufs.pos.clear();
                    bufs.pos.extend(co[v]..co[v + 1]);
                    (0.0, &bufs.pos[..])
                } else {
                    (
                        const_lam[v],
                        &self.dyn_pos[self.dyn_off[v]..self.dyn_off[v + 1]],
                    )
                };
                bufs.vals.clear();
                for &j in pos {
                    let x = self.lam_in(blk, j);
                    bufs.vals.push(x);
                }
                bufs.g.clear();
                let mut sum = start;
                for &x in &bufs.vals {
                    bufs.g.push(sum);
                    sum += x;
                }
                let pi_v = blk.pi_v[v - a];
                if let Some(b) = self.anchored(v, pi_v + sum) {
                    for (&j, &x) in pos.iter().zip(&bufs.vals) {
                        blk.pi_e[j - blk.cb] = clip(b - x);
                    }
                } else {
                    let mut suf = 0.0f64;
                    for (i, &j) in pos.iter().enumerate().rev() {
                        blk.pi_e[j - blk.cb] = clip(pi_v + bufs.g[i] + suf);
                        suf += bufs.vals[i];
                    }
                }
                // An output is NaN only if the full sum (belief) is NaN.
                acc.check(pi_v + clip(sum), v);
            }
        }
        for &v in order.iter().rev() {
            let v = v as usize;
            if self.evidence[v].is_none() {
                // λ_v = Σ_c λ_{c→v}
                let l = if first {
                    (co[v]..co[v + 1]).map(|j| self.lam_in(blk, j)).sum::<f64>()
                } else {
                    const_lam[v]
                        + self.dyn_pos[self.dyn_off[v]..self.dyn_off[v + 1]]
                            .iter()
                            .map(|&j| self.lam_in(blk, j))
                            .sum::<f64>()
                };
                let pi_v = blk.pi_v[v - a];
                let l = clip(self.anchored(v, pi_v + l).map_or(l, |b| b - pi_v));
                acc.check(l, v);
                blk.lam_v[v - a] = l;
            }
            let (plo, phi) = (po[v], po[v + 1]);
            if phi > plo && (first || !self.lam_static[v]) {
                bufs.g.clear();
                for j in plo..phi {
                    let x = self.pi_in(blk, j);
                    bufs.g.push(x);
                }
                bufs.out.resize(phi - plo, 0.0);
                let d = self.lam_damping(v);
                let is_ratio = self.kern.lam_out_r(
                    &bufs.g,
                    blk.lam_v[v - a],
                    &mut bufs.out,
                    &mut bufs.s,
                    d != 0.0,
                );
                for (i, &new) in bufs.out.iter().enumerate() {
                    let slot = plo + i - blk.pb;
                    let (stored, ch) = damp(
                        new,
                        is_ratio,
                        blk.lam_e[slot],
                        d,
                        self.log_domain,
                        acc.max_change,
                    );
                    acc.check(stored, v);
                    acc.change(ch);
                    blk.lam_e[slot] = stored;
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
                            let d = self.pi_damping(v);
                            let (new, is_ratio) = self.factor_pi_r(v, pi_e, &mut g, d != 0.0);
                            let (stored, ch) =
                                damp(new, is_ratio, pv[v - a], d, self.log_domain, acc.max_change);
                            acc.check(stored, v);
                            acc.change(ch);
                            pv[v - a] = stored;
                        }
                        if !first && self.lam_static[v] {
                            continue;
                        }
                        buf.resize(hi - lo, 0.0);
                        let d = self.lam_damping(v);
                        let is_ratio =
                            self.factor_lam(v, pi_e, lam_v[v], &mut buf, &mut s, &mut g, d != 0.0);
                        for (i, &new) in buf.iter().enumerate() {
                            let (stored, ch) = damp(
                                new,
                                is_ratio,
                                le[lo + i],
                                d,
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
/// boundaries `bounds` (0 = b_0 < b_1 < ... = n). An empty `vd` gives empty vertex parts.
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
        let (vh, vt) = vrest.split_at_mut(if vrest.is_empty() { 0 } else { b - a });
        let (eh, et) = erest.split_at_mut(off[b] - off[a]);
        out.push((a, b, vh, eh));
        vrest = vt;
        erest = et;
    }
    out
}

/// Vertex chunk boundaries (0 = b_0 < ... = n) with roughly `total / pieces` (at least
/// `min_target`) units of work each, where `weight(v)` is the work of vertex v.
///
/// A chunk ends at the first vertex where its work reaches the target. The segment sums are
/// computed in parallel; only segments holding a boundary are scanned vertex by vertex.
fn chunk_bounds(
    n: usize,
    pieces: usize,
    min_target: usize,
    weight: impl Fn(usize) -> usize + Sync,
) -> Vec<usize> {
    const SEG: usize = 4096;
    let seg_sum: Vec<usize> = (0..n.div_ceil(SEG))
        .into_par_iter()
        .map(|s| (s * SEG..((s + 1) * SEG).min(n)).map(&weight).sum())
        .collect();
    let total: usize = seg_sum.iter().sum();
    let target = (total / pieces.max(1)).max(min_target).max(1);
    let mut b = vec![0];
    let mut acc = 0usize;
    for (s, &sum) in seg_sum.iter().enumerate() {
        if acc + sum < target {
            acc += sum;
            continue;
        }
        for v in s * SEG..((s + 1) * SEG).min(n) {
            acc += weight(v);
            if acc >= target {
                b.push(v + 1);
                acc = 0;
            }
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
/// Runs in the current rayon thread pool (e.g. inside `ThreadPool::install`); the result does not
/// depend on the number of threads.
///
/// Errors: evidence length mismatch, parameters out of range, or evidence of probability zero
/// ([`InferError::ImpossibleEvidence`], detected as a message or belief of zero mass).
pub fn loopy_bp(
    dag: &Dag,
    cpd: &Cpd,
    evidence: &[Option<bool>],
    opts: &BpOptions,
) -> Result<Marginals, InferError> {
    check_evidence(dag, evidence)?;
    // Barren vertices (no observation among them and their descendants) change no other
    // vertex's marginal: every message they send to a parent is uniform. BP runs on the rest,
    // the ancestral set of the evidence (closed under parents, so its factors are whole); the
    // barren vertices then get their exact marginals in one forward pass (below). In an EPG
    // most vertices are barren: values that never reach the failure point.
    let relevant = if opts.prune_barren {
        ancestral_set(dag, evidence)
    } else {
        vec![true; dag.len()]
    };
    let all_relevant = relevant.iter().all(|&r| r);
    if all_relevant && dag.ids_topological() {
        return loopy_bp_blocks(dag, cpd, evidence, opts, MIN_BLOCK_WORK);
    }
    // The sweeps visit vertices in topological order and index the message arrays by id; with
    // ids out of that order every access is a cache miss (EPGs: a call's vertex is created at
    // the call and defined at the return). So the subgraph is renumbered topologically too.
    let (sub, order) = if all_relevant {
        dag.relabeled()
    } else {
        dag.induced(&relevant)
    };
    let sev: Vec<Option<bool>> = order.iter().map(|&v| evidence[v as usize]).collect();
    let m = loopy_bp_blocks(&sub, cpd, &sev, opts, MIN_BLOCK_WORK).map_err(|e| match e {
        InferError::ImpossibleEvidence { vertex: Some(k) } => InferError::ImpossibleEvidence {
            vertex: Some(order[k as usize]),
        },
        e => e,
    })?;
    let mut log_odds = vec![0.0; dag.len()];
    for (k, &v) in order.iter().enumerate() {
        log_odds[v as usize] = m.log_odds_incorrect[k];
    }
    if !all_relevant {
        // A barren v receives λ = 0 from its (barren) children, so its belief is `π_v`, and the
        // message `π_{u→v}` of each parent u is u's belief (clipped like every variable
        // message): u's other children are all it hears from besides `f_u`, and `λ_{v→u} = 0`.
        let kern = FactorKernel::new(cpd.p, cpd.prior, opts.log_domain);
        let mut g = Vec::new();
        for &v in dag.topological_order() {
            if !relevant[v as usize] {
                g.clear();
                g.extend(dag.parents(v).iter().map(|&u| clip(log_odds[u as usize])));
                log_odds[v as usize] = kern.pi_out(&g);
            }
        }
    }
    Ok(Marginals {
        p_incorrect: log_odds.par_iter().map(|&l| sigmoid(l)).collect(),
        log_odds_incorrect: log_odds,
        convergence: m.convergence,
    })
}

/// `v` is observed or has an observed descendant (the ancestral set of the evidence).
fn ancestral_set(dag: &Dag, evidence: &[Option<bool>]) -> Vec<bool> {
    let mut rel: Vec<bool> = evidence.iter().map(Option::is_some).collect();
    for &v in dag.topological_order().iter().rev() {
        if !rel[v as usize] {
            rel[v as usize] = dag.children(v).iter().any(|&c| rel[c as usize]);
        }
    }
    rel
}

/// [`loopy_bp`] with a given smallest block size of the [`Schedule::Parallel`] schedule (tests
/// use tiny blocks to exercise the block machinery on small graphs).
pub(crate) fn loopy_bp_blocks(
    dag: &Dag,
    cpd: &Cpd,
    evidence: &[Option<bool>],
    opts: &BpOptions,
    min_block_work: usize,
) -> Result<Marginals, InferError> {
    loopy_bp_run(dag, cpd, evidence, opts, min_block_work, true)
}

/// [`loopy_bp_blocks`]; `stop_cycles: false` sweeps on through a period-2 cycle to `max_iter`
/// (as before `super::cycle`; tests compare the two).
pub(crate) fn loopy_bp_run(
    dag: &Dag,
    cpd: &Cpd,
    evidence: &[Option<bool>],
    opts: &BpOptions,
    min_block_work: usize,
    stop_cycles: bool,
) -> Result<Marginals, InferError> {
    cpd.validate()?;
    opts.validate()?;
    check_evidence(dag, evidence)?;
    let n = dag.len();
    let (po, co) = (dag.par_off(), dag.ch_off());
    let pi_static: Vec<bool> = (0..n)
        .into_par_iter()
        .map(|v| {
            dag.parents(v as u32)
                .iter()
                .all(|&u| evidence[u as usize].is_some())
        })
        .collect();
    let lam_static: Vec<bool> = (0..n)
        .into_par_iter()
        .map(|v| evidence[v] == Some(true) || (pi_static[v] && evidence[v].is_some()))
        .collect();
    // Dynamic child positions: counts in parallel, offsets by a prefix sum, then filled.
    let counts: Vec<usize> = (0..n)
        .into_par_iter()
        .map(|v| {
            if evidence[v].is_none() {
                dag.children(v as u32)
                    .iter()
                    .filter(|&&c| !lam_static[c as usize])
                    .count()
            } else {
                0
            }
        })
        .collect();
    let mut dyn_off = Vec::with_capacity(n + 1);
    dyn_off.push(0);
    let mut total = 0;
    for c in &counts {
        total += c;
        dyn_off.push(total);
    }
    let mut dyn_pos = Vec::with_capacity(total);
    for v in 0..n {
        if counts[v] > 0 {
            dyn_pos.extend((co[v]..co[v + 1]).filter(|&j| !lam_static[dag.ch()[j] as usize]));
        }
    }
    let active_sorted: Vec<u32> = (0..n as u32)
        .into_par_iter()
        .filter(|&v| evidence[v as usize].is_none() || !lam_static[v as usize])
        .collect();
    let threads = rayon::current_num_threads();
    let pieces = 8 * threads;
    // Vertex chunks for the per-vertex phases (work: out-degree).
    let vchunks = chunk_bounds(n, pieces, 4096, |v| 1 + co[v + 1] - co[v]);
    let mut eng = Engine {
        dag,
        evidence,
        pi_static,
        lam_static,
        dyn_off,
        dyn_pos,
        active_sorted,
        kern: FactorKernel::new(cpd.p, cpd.prior, opts.log_domain),
        damping: opts.damping,
        log_domain: opts.log_domain,
        anchors: Anchors::default(),
        cycle: (stop_cycles && !opts.double_loop).then(TwoCycle::default),
        stuck: (opts.stop_swinging && !opts.double_loop && opts.damping == 0.0)
            .then(Stuck::default),
        max_iter: opts.max_iter,
    };
    let mut outer = opts.double_loop.then(OuterLoop::new);
    let is_active = |v: usize| evidence[v].is_none() || !eng.lam_static[v];
    let mut conv = Convergence {
        iterations: 0,
        max_change: 0.0,
        converged: true,
    };
    if dag.is_empty() {
        let mut st = eng.init(&vchunks, false);
        return eng.beliefs(&mut st, &vchunks, conv);
    }
    conv.converged = false;
    match opts.schedule {
        Schedule::Flooding => {
            // Chunks for the first iteration (all vertices) and for later ones (balanced on the
            // work that remains: active factors and dynamic children).
            let fchunks = chunk_bounds(n, pieces, 4096, |v| 1 + po[v + 1] - po[v]);
            let fchunks_later = chunk_bounds(n, pieces, 1024, |v| {
                if is_active(v) {
                    1 + po[v + 1] - po[v]
                } else {
                    0
                }
            });
            let vchunks_later = chunk_bounds(n, pieces, 1024, |v| {
                if evidence[v].is_none() {
                    1 + eng.dyn_off[v + 1] - eng.dyn_off[v]
                } else {
                    0
                }
            });
            let mut st = eng.init(&vchunks, false);
            for it in 1..=opts.max_iter {
                let acc = if it == 1 {
                    eng.flood(&mut st, &fchunks, &vchunks, true)
                } else {
                    eng.flood(&mut st, &fchunks_later, &vchunks_later, false)
                };
                if eng.finish_iteration(&mut st, acc, it, opts.tol, &mut conv, &mut outer)? {
                    break;
                }
            }
            eng.beliefs(&mut st, &vchunks, conv)
        }
        Schedule::Sequential | Schedule::Parallel => {
            let min_work = match opts.schedule {
                Schedule::Sequential => usize::MAX,
                _ => min_block_work.max(1),
            };
            // First iteration: every vertex (work: its edges); later ones: the active vertices.
            let plan1 = eng.plan(dag.topological_order(), min_work, false, |v| {
                1 + po[v + 1] - po[v] + co[v + 1] - co[v]
            });
            let topo = dag.topological_order();
            let active: Vec<u32> = if topo.par_iter().enumerate().all(|(i, &v)| v as usize == i) {
                eng.active_sorted.clone()
            } else {
                topo.iter()
                    .copied()
                    .filter(|&v| is_active(v as usize))
                    .collect()
            };
            let plan2 = eng.plan(&active, min_work, true, |v| {
                let f = if is_active(v) {
                    1 + po[v + 1] - po[v]
                } else {
                    0
                };
                let d = if evidence[v].is_none() {
                    1 + eng.dyn_off[v + 1] - eng.dyn_off[v]
                } else {
                    0
                };
                f + d
            });
            drop(active);
            let ghosts = plan1.blocks() > 1 || plan2.blocks() > 1;
            let mut st = eng.init(&vchunks, ghosts);
            for it in 1..=opts.max_iter {
                let acc = if it == 1 {
                    eng.run_blocks(&mut st, &plan1, true)
                } else {
                    eng.run_blocks(&mut st, &plan2, false)
                };
                // Refresh the ghosts for the next iteration. A variable-to-factor message that
                // crosses blocks is read one iteration after it is computed, so its change counts
                // towards convergence like a factor message's.
                // (The ghosts of the first plan start as the initial messages: 0 for unobserved
                // parents, all children; observed parents are read from the evidence. The
                // ghosts that the second plan reads are all refreshed after iteration 1.)
                let acc = Acc {
                    max_change: eng.sync(&mut st, &plan2, acc.max_change),
                    ..acc
                };
                if eng.finish_iteration(&mut st, acc, it, opts.tol, &mut conv, &mut outer)? {
                    break;
                }
            }
            eng.beliefs(&mut st, &vchunks, conv)
        }
    }
}

impl Engine<'_> {
    /// Bookkeeping after iteration `it`: contradictions, the constant messages after the first
    /// iteration, the double loop's outer steps (`outer`), convergence. Returns whether BP
    /// stops: it has converged (its messages moved less than `tol`, and with the double loop,
    /// also the anchors at the outer step this sweep ended), or it is caught in a period-2
    /// cycle it will not leave, or an undamped run's messages keep swinging (`super::cycle`;
    /// then `conv.converged` is false).
    fn finish_iteration(
        &mut self,
        st: &mut State,
        acc: Acc,
        it: usize,
        tol: f64,
        conv: &mut Convergence,
        outer: &mut Option<OuterLoop>,
    ) -> Result<bool, InferError> {
        if let Some(v) = acc.contradiction {
            return Err(InferError::ImpossibleEvidence { vertex: Some(v) });
        }
        if it == 1 {
            self.set_const_lam(st);
        }
        conv.iterations = it;
        conv.max_change = acc.max_change;
        conv.converged = acc.max_change <= tol;
        if let Some(o) = outer {
            conv.converged = match o.after_sweep(acc.max_change, tol) {
                Step::Inner => false,
                Step::Outer => {
                    let first = o.steps == 1;
                    let moved = self.move_anchors(st);
                    o.after_outer(moved);
                    conv.max_change = conv.max_change.max(moved);
                    !first && conv.max_change <= tol
                }
            };
        }
        let max_iter = self.max_iter;
        let caught = self
            .cycle
            .as_mut()
            .is_some_and(|c| c.caught(it, max_iter, &st.pi_v, &st.lam_e, acc.max_change, tol));
        let stuck = self
            .stuck
            .as_mut()
            .is_some_and(|s| s.caught(it, acc.max_change));
        Ok(conv.converged || caught || stuck)
    }

    /// The double loop's outer step: every unobserved vertex's anchor becomes its belief (the
    /// inner problem's, `π_v + Σ_c λ_{c→v}` through the old anchor). Returns the largest move
    /// of an anchor, in probability.
    fn move_anchors(&mut self, st: &State) -> f64 {
        let dag = self.dag;
        let (co, c2p) = (dag.ch_off(), dag.ch_to_par());
        let new: Vec<f64> = (0..dag.len())
            .into_par_iter()
            .with_min_len(1024)
            .map(|v| {
                if self.evidence[v].is_some() {
                    return f64::NAN;
                }
                let t = st.pi_v[v]
                    + c2p[co[v]..co[v + 1]]
                        .iter()
                        .map(|&j| st.lam_e[j])
                        .sum::<f64>();
                self.anchored(v, t).unwrap_or(t)
            })
            .collect();
        self.anchors.set(new)
    }

    /// Sums the (now final) messages of static factors into `const_lam`.
    fn set_const_lam(&self, st: &mut State) {
        let dag = self.dag;
        let lam_e = &st.lam_e;
        st.const_lam.par_iter_mut().enumerate().for_each(|(v, cl)| {
            if self.evidence[v].is_none() {
                let lo = dag.ch_off()[v];
                *cl = dag
                    .children(v as u32)
                    .iter()
                    .enumerate()
                    .filter(|&(_, &c)| self.lam_static[c as usize])
                    .map(|(i, _)| lam_e[dag.ch_to_par()[lo + i]])
                    .sum();
            }
        });
    }

    fn beliefs(
        &self,
        st: &mut State,
        vchunks: &[usize],
        convergence: Convergence,
    ) -> Result<Marginals, InferError> {
        let (dag, evidence) = (self.dag, self.evidence);
        // Refresh every π_{u→c} (after iteration 1 only those to dynamic factors were updated).
        {
            let (pi_v, lam_e) = (&st.pi_v, &st.lam_e);
            split(vchunks, dag.ch_off(), &mut [], &mut st.pi_e)
                .into_par_iter()
                .for_each(|(a, b, _, pe)| {
                    let mut pre = Vec::new();
                    let base = dag.ch_off()[a];
                    for v in a..b {
                        if evidence[v].is_none() {
                            let (lo, hi) = (dag.ch_off()[v] - base, dag.ch_off()[v + 1] - base);
                            let _ = self.var_out(v, pi_v[v], lam_e, &mut pe[lo..hi], &mut pre);
                        }
                    }
                });
        }
        // Per vertex: s = π_v + Σ_c λ_{c→v}. For an observed v, `π_v` (not a message any
        // other uses) is only computed to detect contradictions: whether s is certain the other
        // way. The log-odds are NaN where the evidence is impossible.
        let (pi_v, lam_e, pi_e) = (&st.pi_v, &st.lam_e, &st.pi_e);
        let (par, p2c, c2p) = (dag.par(), dag.par_to_ch(), dag.ch_to_par());
        let log_odds_incorrect: Vec<f64> = (0..dag.len())
            .into_par_iter()
            .with_min_len(1024)
            .map_init(Vec::new, |g, v| {
                let (lo, hi) = (dag.ch_off()[v], dag.ch_off()[v + 1]);
                let lam: f64 = c2p[lo..hi].iter().map(|&j| lam_e[j]).sum();
                match evidence[v] {
                    None => self.anchored(v, pi_v[v] + lam).unwrap_or(pi_v[v] + lam),
                    Some(obs) => {
                        let (plo, phi) = (dag.par_off()[v], dag.par_off()[v + 1]);
                        let pi = if phi > plo {
                            g.clear();
                            g.extend((plo..phi).map(|j| {
                                evidence[par[j] as usize].map_or_else(|| pi_e[p2c[j]], clamp_of)
                            }));
                            self.kern.pi_out_if_certain(g)
                        } else {
                            pi_v[v]
                        };
                        let s = pi + lam;
                        let contradiction = if obs {
                            s == f64::INFINITY
                        } else {
                            s == f64::NEG_INFINITY
                        };
                        if s.is_nan() || contradiction {
                            f64::NAN
                        } else {
                            clamp_of(obs)
                        }
                    }
                }
            })
            .collect();
        if let Some(v) = log_odds_incorrect.par_iter().position_first(|l| l.is_nan()) {
            return Err(InferError::ImpossibleEvidence {
                vertex: Some(v as u32),
            });
        }
        let p_incorrect = log_odds_incorrect.par_iter().map(|&l| sigmoid(l)).collect();
        Ok(Marginals {
            p_incorrect,
            log_odds_incorrect,
            convergence,
        })
    }
}
