//! Factor-graph inference (loopy BP with O(k) noisy-OR messages, exact enumeration for tests).
//!
//! This module knows nothing about rules, traces or programs: it takes a DAG (the error
//! propagation graph, EPG), the CPD parameters and per-vertex evidence, and returns the posterior
//! marginal `P(v incorrect | evidence)` of every vertex.
//!
//! # Model (PROSECUTOR §2.2, §3.2)
//!
//! Every vertex `v` is a Boolean variable `x_v`; we write `x_v = 1` for *incorrect* and `x_v = 0`
//! for *correct*. With `w = Σ_{u ∈ Pred(v)} x_u` the number of incorrect parents,
//!
//! ```text
//! P(x_v = 0 | x_Pred(v)) = p^w            P(x_v = 1 | x_Pred(v)) = 1 - p^w
//! ```
//!
//! and a vertex without parents has prior `P(x_v = 0) = prior`. This is a noisy-OR on
//! incorrectness with (equal) link probabilities `q = 1 - p` and no leak: every incorrect parent
//! independently "fails to propagate" with probability `p`. Evidence clamps a vertex to a value.
//!
//! # Messages
//!
//! We run loopy belief propagation on the factor graph with one factor `f_v = P(x_v | x_Pred(v))`
//! per vertex. Every message is a distribution over one Boolean variable and is stored as a single
//! number, its log-odds `ℓ = ln(m(1) / m(0))` (`±∞` encode certainty, which only evidence and exact
//! deductions from it can produce). Variable-to-factor messages are sums of log-odds:
//!
//! ```text
//! v → f_v  :  λ_v      = ev_v + Σ_{c ∈ Ch(v)} λ_{c→v}
//! u → f_c  :  π_{u→c}  = ev_u + π_u + Σ_{c' ∈ Ch(u), c' ≠ c} λ_{c'→u}
//! ```
//!
//! (the leave-one-out sums use prefix/suffix sums, so `+∞` and `-∞` never meet unless the
//! evidence is contradictory; observed variables send their clamp `±∞`). Finite log-odds stay
//! finite and keep their magnitude, however far beyond what an `f64` probability can hold: a
//! statement that 100,000 passing values vouch for has log-odds of about -16,000, and when a
//! failure can only be explained by such statements, the least vouched-for one must still come
//! out as the cause (`heavily_vouched_statements_keep_their_magnitudes`; an earlier version
//! clipped at ±700 and made every such statement look certainly correct). Certainty only ever
//! comes from evidence.
//!
//! Factor-to-variable messages exploit the noisy-OR structure (Pearl 1988 §4.3.2; Díez 1993).
//! Normalise each incoming parent message to `(1 - b_u, b_u)` with `b_u = σ(π_{u→v})` and let
//!
//! ```text
//! c_u = Σ_x m_u(x) p^x = (1 - b_u) + p·b_u          (expected "no-propagation" weight of u)
//! C_{¬u} = Π_{w ≠ u} c_w,   C = Π_w c_w,   D = 1 - C
//! ```
//!
//! Because the CPD factorises as `P(x_v = 0 | x) = Π_u p^{x_u}`, the sums over all `2^k` parent
//! configurations collapse into products:
//!
//! ```text
//! f_v → v  :  π_v(0) = C,            π_v(1) = 1 - C
//! f_v → u  :  λ_{v→u}(x_u) = β + (α - β) · p^{x_u} · C_{¬u}      where (α, β) = normalised λ_v
//!          i.e. λ(0) = β·(1 - C_{¬u}) + α·C_{¬u},   λ(1) = β·(1 - p·C_{¬u}) + α·p·C_{¬u}
//! ```
//!
//! The leave-one-out products `C_{¬u}` come from prefix and suffix products, so one factor update
//! costs O(k) for k parents, with no division (a `c_w` may be 0 when `p = 0`). The complements
//! `1 - C` are accumulated as sums of non-negative terms (`1 - P·c = (1 - P) + P·(1 - c)`), which
//! avoids cancellation when all parents are almost surely correct. With
//! [`BpOptions::log_domain`] the same equations are evaluated on logarithms: prefix/suffix sums
//! of `ln c_u`, and `ln D` as a log-sum-exp of the same non-negative terms
//! (`D = Σ_u (Π_{u' < u} c_u')·q·b_u`, with `ln b_u = -softplus(-ℓ_u)`), which is exact for any
//! magnitude of the incoming log-odds. The linear kernel is used only where its products stay far
//! from underflow (every incoming log-odds within ±300, `C` above 1e-150) and hands everything
//! else to the log kernel. Roots send the constant `π_v = ln((1 - prior)/prior)`.
//!
//! The posterior is `P(x_v = 1 | e) = σ(π_v + Σ_c λ_{c→v})`.
//!
//! # Barren vertices
//!
//! A vertex with no observation among itself and its descendants is *barren*: every message it
//! sends to a parent is uniform (`λ_v = 0`, and a factor whose child message is uniform sends
//! uniform messages up), so it changes no other vertex's marginal. [`loopy_bp`] therefore runs the
//! iterations on the ancestral set of the evidence only (closed under parents, so its factors are
//! whole; [`BpOptions::prune_barren`]), and gives each barren `v`, in topological order, its exact marginal
//! `π_v = f(beliefs of its parents)`: the message `π_{u→v}` of a parent is its belief, because
//! `λ_{v→u} = 0`. In an EPG most vertices are barren (values that never reach the failure point:
//! 81 % of the 1.17M vertices of QuixBugs `levenshtein`), so this is most of the speed of
//! `localize` on large traces. Convergence (iterations, max change) is that of the ancestral set.
//!
//! # Schedules
//!
//! * [`Schedule::Sequential`]: in place, one iteration = a forward sweep in topological order
//!   (factor `π_v`, then `v`'s `π_{v→c}`) followed by a backward sweep in reverse topological order
//!   (`λ_v`, then factor `λ_{v→u}`). Every message is recomputed once per iteration.
//! * [`Schedule::Parallel`]: block Gauss-Seidel. The vertices are cut into at most ~32
//!   contiguous id ranges of about equal work (the number depends on the graph only, never on the
//!   thread count, so results are identical for any number of threads; graphs with less than
//!   ~16k units of work are one block, i.e. the sequential schedule). Each iteration sweeps every
//!   block as the sequential schedule does, blocks in parallel (rayon); messages from another
//!   block are read from ghost copies refreshed between iterations. Converges in about as many
//!   iterations as the sequential schedule (EPG edges are mostly local in id order).
//! * [`Schedule::Flooding`]: as libDAI's `PARALL`: all factor-to-variable messages are computed
//!   (with rayon) from the previous iteration's variable-to-factor messages, then all
//!   variable-to-factor messages from the new factor messages. Needs more iterations.
//!
//! All schedules reach the same fixed points; on polytrees they are exact. The phases around the
//! iterations (setup, constant messages, beliefs) run in parallel for every schedule.
//!
//! Damping mixes each new factor-to-variable message with its previous value (in probability space,
//! or in log-odds when `log_domain` or when either value's log-odds exceed ±300, which
//! probability space cannot hold). The reported `max_change` is the largest absolute change of a
//! factor-to-variable message (and, for the block schedule, of a variable-to-factor message that
//! crosses a block boundary, as it is read one iteration late), in probability, during the last
//! iteration; BP stops when it drops below `tol`, or after `max_iter` iterations (then
//! `converged` is false), or, outside the double loop, as soon as its messages are caught in a
//! cycle of period 2 that swings by at least 0.01 and cannot settle within the iterations left
//! (`cycle.rs`; `converged` is false, and the marginals are those of the sweeps of `max_iter`'s
//! parity). Undamped BP on EPGs often falls into such cycles (on the 112 corpus dumps 136 of
//! the 146 undamped runs that did not converge were caught, after a median of 18 sweeps).
//!
//! Contradictory evidence (probability zero, e.g. a vertex observed incorrect whose parents are all
//! observed correct) is detected when some message or belief has zero total mass and reported as
//! [`InferError::ImpossibleEvidence`]. Zero-mass detection is sound for BP on loopy graphs too
//! (zero messages are exact deductions, as in unit propagation).

pub mod bench;
mod bp;
mod cycle;
mod dag;
mod double_loop;
mod exact;
mod kernel;
pub mod synth;
#[cfg(test)]
mod tests;

pub use bench::{bench_report, bench_runs, BenchRun};
pub use bp::loopy_bp;
pub use dag::Dag;
pub use exact::{exact, MAX_EXACT_UNOBSERVED};
pub use kernel::{
    ln_sigmoid, log_add_exp, noisy_or_factor_messages, noisy_or_factor_messages_brute_force,
    sigmoid,
};
pub use synth::synthetic_dag;

use serde::Serialize;

/// Errors of the inference module.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InferError {
    /// The edges contain a cycle (or a self-loop) through `vertex`.
    #[error("the graph is not acyclic: vertex {vertex} lies on a cycle")]
    Cycle { vertex: u32 },
    /// An edge names a vertex outside `0..n`.
    #[error("edge {edge_index} ({parent} -> {child}) names a vertex >= n = {n}")]
    VertexOutOfRange {
        edge_index: usize,
        parent: u32,
        child: u32,
        n: usize,
    },
    /// The evidence slice does not have one entry per vertex.
    #[error("evidence has {found} entries but the graph has {expected} vertices")]
    EvidenceLength { expected: usize, found: usize },
    /// The evidence has probability zero under the model.
    #[error("the evidence has probability zero{}", match .vertex { Some(v) => format!(" (contradiction detected at vertex {v})"), None => String::new() })]
    ImpossibleEvidence { vertex: Option<u32> },
    /// Exact inference was asked for a graph that is too large.
    #[error("exact inference needs {unobserved} unobserved vertices enumerated, more than the limit {limit}")]
    TooLarge { unobserved: usize, limit: usize },
    /// A parameter (CPD or BP option) is out of range.
    #[error("bad parameter: {0}")]
    BadParameter(String),
}

/// CPD parameters: `P(v correct | parents) = p^w` (w = number of incorrect parents) and
/// `P(root correct) = prior`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Cpd {
    pub p: f64,
    pub prior: f64,
}

impl Default for Cpd {
    fn default() -> Self {
        Cpd {
            p: 0.85,
            prior: 0.85,
        }
    }
}

impl Cpd {
    /// Checks that `p` and `prior` are probabilities.
    pub fn validate(&self) -> Result<(), InferError> {
        for (name, x) in [("p", self.p), ("prior", self.prior)] {
            if !(0.0..=1.0).contains(&x) {
                return Err(InferError::BadParameter(format!(
                    "Cpd::{name} = {x} is not a probability in [0, 1]"
                )));
            }
        }
        Ok(())
    }
}

/// Message update schedule (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Schedule {
    /// Block Gauss-Seidel (rayon-parallel over blocks): sequential sweeps inside contiguous
    /// vertex blocks, messages between blocks from the previous iteration.
    Parallel,
    /// In place, topological forward sweep then backward sweep.
    Sequential,
    /// Flooding: every message from the previous iteration's values (rayon-parallel).
    Flooding,
}

/// Loopy BP options (libDAI-like).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BpOptions {
    /// Stop when the largest message change (in probability) of an iteration is below `tol`.
    pub tol: f64,
    /// Maximum number of iterations.
    pub max_iter: usize,
    /// Damping in `[0, 1)`: new = (1 - damping)·computed + damping·old.
    pub damping: f64,
    pub schedule: Schedule,
    /// Evaluate the factor messages in the log domain.
    pub log_domain: bool,
    /// Iterate on the ancestral set of the evidence only and give barren vertices their
    /// (identical) marginals in one forward pass (see the module docs). Off only as a
    /// benchmark reference.
    pub prune_barren: bool,
    /// Double-loop BP (CCCP, `double_loop.rs`): converges where plain BP's messages wander, to
    /// one of BP's own fixed points, at the cost of more sweeps.
    pub double_loop: bool,
    /// Undamped plain BP: stop (not converged) once the largest message change has stayed at
    /// or above 0.3 for 15 sweeps in a row, from sweep 30 on (`cycle.rs`, `Stuck`): such a run
    /// oscillates and will not converge. `localize` sets it for its first, undamped run, which
    /// a damped retry follows. Measured on the EPGs of four corpora, not a property of BP in
    /// general: evidence that crosses many blocks of the block schedule, or strong
    /// propagation on small loopy graphs, can swing that long and still converge.
    pub stop_swinging: bool,
}

impl Default for BpOptions {
    fn default() -> Self {
        BpOptions {
            tol: 1e-9,
            max_iter: 10_000,
            damping: 0.0,
            schedule: Schedule::Sequential,
            log_domain: false,
            prune_barren: true,
            double_loop: false,
            stop_swinging: false,
        }
    }
}

impl BpOptions {
    /// Checks the ranges of the options.
    pub fn validate(&self) -> Result<(), InferError> {
        if !(self.tol >= 0.0 && self.tol.is_finite()) {
            return Err(InferError::BadParameter(format!(
                "BpOptions::tol = {} must be a finite number >= 0",
                self.tol
            )));
        }
        if !(0.0..1.0).contains(&self.damping) {
            return Err(InferError::BadParameter(format!(
                "BpOptions::damping = {} must be in [0, 1)",
                self.damping
            )));
        }
        if self.max_iter == 0 {
            return Err(InferError::BadParameter(
                "BpOptions::max_iter must be at least 1".to_string(),
            ));
        }
        Ok(())
    }
}

/// How an inference run ended.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Convergence {
    /// Iterations run (exact inference reports 0).
    pub iterations: usize,
    /// Largest factor-to-variable message change (in probability) in the last iteration.
    pub max_change: f64,
    /// Whether `max_change < tol` was reached (always true for exact inference).
    pub converged: bool,
}

/// Posterior marginals.
#[derive(Debug, Clone, PartialEq)]
pub struct Marginals {
    /// `P(v incorrect | evidence)` for every vertex (observed vertices: 0 or 1).
    pub p_incorrect: Vec<f64>,
    /// `ln P(v incorrect | e) - ln P(v correct | e)`; keeps resolution where `p_incorrect` rounds
    /// to 0 or 1 (useful to break ties in a ranking). `±∞` for observed vertices.
    pub log_odds_incorrect: Vec<f64>,
    pub convergence: Convergence,
}

/// The first vertex (in topological order) observed incorrect that no parent can explain: each
/// of its parents is observed correct or can only be correct (every path into it starts at
/// observed-correct vertices), so the evidence has probability zero. `None` if every vertex
/// observed incorrect has a parent that can be incorrect (or is a root with `prior < 1`).
///
/// BP detects impossible evidence where a message first loses all its mass, which may be a
/// statement vertex far from the failure; this names the failure that cannot be explained.
pub fn unexplained_failure(dag: &Dag, cpd: &Cpd, evidence: &[Option<bool>]) -> Option<u32> {
    let mut can = vec![false; dag.len()];
    for &v in dag.topological_order() {
        let parents = dag.parents(v);
        let possible = if parents.is_empty() {
            cpd.prior < 1.0
        } else {
            cpd.p < 1.0 && parents.iter().any(|&u| can[u as usize])
        };
        match evidence[v as usize] {
            Some(false) if !possible => return Some(v),
            Some(true) => {}
            _ => can[v as usize] = possible,
        }
    }
    None
}

/// Checks the evidence length against the graph.
fn check_evidence(dag: &Dag, evidence: &[Option<bool>]) -> Result<(), InferError> {
    if evidence.len() != dag.len() {
        return Err(InferError::EvidenceLength {
            expected: dag.len(),
            found: evidence.len(),
        });
    }
    Ok(())
}
