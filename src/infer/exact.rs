//! Exact marginals by enumerating the unobserved vertices (depth-first in topological order,
//! multiplying each CPD in as soon as its parents are assigned, pruning zero-weight branches).

use super::{check_evidence, Convergence, Cpd, Dag, InferError, Marginals};

/// Most unobserved vertices [`exact`] accepts.
pub const MAX_EXACT_UNOBSERVED: usize = 26;

/// Upper bound on (2^unobserved · (vertices + edges)), the enumeration work.
const MAX_WORK: f64 = 1.5e10;

struct Enum<'a> {
    dag: &'a Dag,
    cpd: &'a Cpd,
    evidence: &'a [Option<bool>],
    order: &'a [u32],
    /// x[v] = true when v is incorrect.
    x: Vec<bool>,
    acc1: Vec<f64>,
    acc0: Vec<f64>,
}

impl Enum<'_> {
    /// `P(x_v = value | current parent assignment)`.
    fn cpd_value(&self, v: usize, incorrect: bool) -> f64 {
        let parents = self.dag.parents(v as u32);
        let p_correct = if parents.is_empty() {
            self.cpd.prior
        } else {
            let w = parents.iter().filter(|&&u| self.x[u as usize]).count();
            self.cpd.p.powi(w as i32)
        };
        if incorrect {
            1.0 - p_correct
        } else {
            p_correct
        }
    }

    /// Sum of the joint weight over all completions of the assignment of `order[..pos]`,
    /// starting from the partial product `weight`.
    fn rec(&mut self, mut pos: usize, mut weight: f64) -> f64 {
        while pos < self.order.len() {
            let v = self.order[pos] as usize;
            match self.evidence[v] {
                Some(obs) => {
                    self.x[v] = !obs;
                    weight *= self.cpd_value(v, !obs);
                    if weight == 0.0 {
                        return 0.0;
                    }
                    pos += 1;
                }
                None => {
                    self.x[v] = true;
                    let w1 = weight * self.cpd_value(v, true);
                    let s1 = if w1 > 0.0 { self.rec(pos + 1, w1) } else { 0.0 };
                    self.x[v] = false;
                    let w0 = weight * self.cpd_value(v, false);
                    let s0 = if w0 > 0.0 { self.rec(pos + 1, w0) } else { 0.0 };
                    self.acc1[v] += s1;
                    self.acc0[v] += s0;
                    return s0 + s1;
                }
            }
        }
        weight
    }
}

/// Exact marginals by enumeration, for small graphs: at most [`MAX_EXACT_UNOBSERVED`] unobserved
/// vertices (and 2^unobserved·(n + edges) ≤ 1.5e10), otherwise [`InferError::TooLarge`].
/// Evidence of probability zero gives [`InferError::ImpossibleEvidence`] with `vertex: None`.
#[allow(clippy::needless_range_loop)]
pub fn exact(dag: &Dag, cpd: &Cpd, evidence: &[Option<bool>]) -> Result<Marginals, InferError> {
    cpd.validate()?;
    check_evidence(dag, evidence)?;
    let n = dag.len();
    let unobserved = evidence.iter().filter(|e| e.is_none()).count();
    let size = (n + dag.num_edges() + 1) as f64;
    let limit_by_work = (MAX_WORK / size).log2().floor().max(0.0) as usize;
    let limit = MAX_EXACT_UNOBSERVED.min(limit_by_work);
    if unobserved > limit {
        return Err(InferError::TooLarge { unobserved, limit });
    }
    let mut e = Enum {
        dag,
        cpd,
        evidence,
        order: dag.topological_order(),
        x: vec![false; n],
        acc1: vec![0.0; n],
        acc0: vec![0.0; n],
    };
    let z = e.rec(0, 1.0);
    if z.is_nan() || z <= 0.0 {
        return Err(InferError::ImpossibleEvidence { vertex: None });
    }
    let mut p_incorrect = Vec::with_capacity(n);
    let mut log_odds_incorrect = Vec::with_capacity(n);
    for v in 0..n {
        match evidence[v] {
            Some(obs) => {
                p_incorrect.push(if obs { 0.0 } else { 1.0 });
                log_odds_incorrect.push(if obs {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                });
            }
            None => {
                p_incorrect.push(e.acc1[v] / z);
                log_odds_incorrect.push((e.acc1[v] / e.acc0[v]).ln());
            }
        }
    }
    Ok(Marginals {
        p_incorrect,
        log_odds_incorrect,
        convergence: Convergence {
            iterations: 0,
            max_change: 0.0,
            converged: true,
        },
    })
}
