//! CP: "Capturing Propagation of Infected Program States" (Zhang et al.,
//! ESEC/FSE 2009), per spec `cp-seed-001.md`.
//!
//! Input ([`CpInput`]): a CFG over basic blocks (edges with stable ids; entry
//! edges may come from outside the graph, self-loops and parallel edges are
//! allowed) and one edge profile + verdict per test. Use
//! [`build_basic_blocks`] to derive blocks from a statement-level CFG.
//!
//! Steps (spec §3):
//! 1. `θ✓(e)`, `θ×(e)`: fraction of passed / failed tests covering `e` (eq. 1;
//!    `θ✓ = 0` when there is no passed test). At least one failed test is required.
//! 2. Edges with `θ✓ = θ× = 0` are excluded; blocks with no incident kept
//!    edge leave the system (score `None`).
//! 3. `θΔ = (θ× − θ✓)/(θ× + θ✓)` (eq. 2).
//! 4. `D(b) = Σ θΔ` over kept in-edges of `b`; if `|D| < zero_threshold`
//!    (default `1e-15`) the eq. 4 denominator becomes `epsilon` (`1e-10`).
//!    Negative denominators are used as they are.
//! 5. Exit blocks ([`ExitMode::Dynamic`], default: no kept out-edge;
//!    [`ExitMode::Static`]: no out-edge at all) get `BR = D(b)` (eq. 6, no
//!    epsilon); other blocks `BR(j) = Σ_{kept j→k} BR(k)·θΔ(j→k)/D'(k)`
//!    (eqs. 4–5).
//! 6. The linear system `(I − M)·BR = c` is solved exactly (no iteration) by
//!    strongly connected components in reverse topological order: acyclic
//!    parts are plain substitution, each loop (SCC) is a dense LU with
//!    partial pivoting. A singular SCC (the paper has no answer, spec G5) gets the
//!    least-squares solution of least norm, listed in [`CpDiagnostics::least_squares`].
//!
//! [`cp_statement_ranking`] turns block scores into the paper's statement
//! ranking: statements inherit their block's score, scores are merged into
//! tie groups with a relative tolerance, statements in no block come after
//! every ranked block and unexecuted/non-executable statements last; the
//! pessimistic position ([`Position::worst`](crate::metrics::Position)) is
//! CP's rank.

use crate::metrics::linalg::{DenseMatrix, LinalgError, Lu};
use crate::metrics::{MetricError, Ranking};

/// The least-squares solution of least norm of a singular `a·x = b` (what the pseudo-inverse
/// gives), as the limit of Tikhonov regularization: `(aᵀa + λI)x = aᵀb` with `λ` 1e-12 of
/// `aᵀa`'s largest entry. `aᵀb` has no part in `a`'s null space, so `x` stays bounded and its
/// null-space part is 0 (a loop without an exit gets `BR = 0`, as the spec says of a
/// homogeneous subsystem). `None` if even that overflows.
fn min_norm_least_squares(a: &DenseMatrix<f64>, b: &[f64]) -> Option<Vec<f64>> {
    let n = a.n;
    let mut ata = DenseMatrix::<f64>::zeros(n);
    for i in 0..n {
        for j in 0..n {
            let v: f64 = (0..n).map(|r| a.get(r, i) * a.get(r, j)).sum();
            ata.set(i, j, v);
        }
    }
    let atb: Vec<f64> = (0..n)
        .map(|i| (0..n).map(|r| a.get(r, i) * b[r]).sum())
        .collect();
    let scale = ata.data.iter().fold(0f64, |m, v| m.max(v.abs())).max(1.0);
    for i in 0..n {
        ata.add_to(i, i, 1e-12 * scale);
    }
    let x = Lu::factor(ata).and_then(|lu| lu.solve(&atb)).ok()?;
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// A CFG edge between blocks. `from = None` is an entry edge from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CpEdge {
    pub from: Option<u32>,
    pub to: u32,
}

/// One test: verdict and the ids of the edges it traversed (at least once;
/// duplicated ids are ignored, so counts are binarized).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EdgeProfile {
    pub passed: bool,
    pub covered: Vec<u32>,
}

/// Which blocks use eq. 6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExitMode {
    /// No successor through a kept (traversed) edge (spec G3 default).
    #[default]
    Dynamic,
    /// No successor in the static CFG.
    Static,
}

/// Tunables; `Default` gives the paper's values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpConfig {
    /// Replacement for a zero eq. 4 denominator (paper: 1e-10).
    pub epsilon: f64,
    /// `|D| < zero_threshold` counts as zero (spec G4: 1e-15).
    pub zero_threshold: f64,
    pub exit_mode: ExitMode,
}

impl Default for CpConfig {
    fn default() -> Self {
        CpConfig {
            epsilon: 1e-10,
            zero_threshold: 1e-15,
            exit_mode: ExitMode::Dynamic,
        }
    }
}

/// CP input: blocks `0..n_blocks`, edges (id = index), per-test profiles.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CpInput {
    pub n_blocks: usize,
    pub edges: Vec<CpEdge>,
    pub tests: Vec<EdgeProfile>,
    pub config: CpConfig,
}

/// Per-edge statistics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpEdgeStats {
    /// `θ✓` (eq. 1).
    pub theta_pass: f64,
    /// `θ×` (eq. 1).
    pub theta_fail: f64,
    /// `θΔ` (eq. 2); `None` for excluded (never traversed) edges.
    pub delta: Option<f64>,
    /// `Prob` (eq. 3, for reports only); `None` for excluded edges.
    pub prob: Option<f64>,
    /// `θΔ(e)/D'(to)`: this edge's contribution to `W(from, to)` (eq. 4).
    pub w: Option<f64>,
}

/// Per-block result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpBlockScore {
    /// `BR(b)`; `None` if the block is not in the system (never executed).
    pub score: Option<f64>,
    pub exit: bool,
    /// `D(b)`: sum of `θΔ` over kept in-edges (before the epsilon rule).
    pub in_delta_sum: f64,
}

/// Solver diagnostics.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpDiagnostics {
    pub kept_edges: usize,
    pub system_blocks: usize,
    pub exit_blocks: usize,
    /// Strongly connected components of the system (loops + singletons).
    pub components: usize,
    pub largest_component: usize,
    /// Blocks whose eq. 4 denominator was replaced by `epsilon`.
    pub epsilon_denominators: usize,
    /// Loops (blocks of one SCC) whose system `(I − M)x = c` is singular, solved by the
    /// least-squares solution of least norm instead (spec G5).
    pub least_squares: Vec<Vec<u32>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CpResult {
    pub edges: Vec<CpEdgeStats>,
    pub blocks: Vec<CpBlockScore>,
    pub diagnostics: CpDiagnostics,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CpError {
    #[error("CP needs at least one failed test")]
    NoFailingTests,
    #[error("edge {edge} refers to block {block}, but there are only {n_blocks} blocks")]
    BlockOutOfRange {
        edge: usize,
        block: u32,
        n_blocks: usize,
    },
    #[error("test #{test} covers edge {edge}, but there are only {n_edges} edges")]
    EdgeOutOfRange {
        test: usize,
        edge: u32,
        n_edges: usize,
    },
    #[error("statement {stmt} refers to block {block}, but there are only {n_blocks} blocks")]
    StatementBlockOutOfRange {
        stmt: usize,
        block: u32,
        n_blocks: usize,
    },
    #[error("statement edge {edge} refers to statement {stmt}, but there are only {n_statements}")]
    StatementOutOfRange {
        edge: usize,
        stmt: u32,
        n_statements: usize,
    },
    #[error("singular or near-singular CP system in the loop formed by blocks {blocks:?}")]
    Singular { blocks: Vec<u32> },
    #[error("numeric overflow in the CP system (blocks {blocks:?})")]
    Overflow { blocks: Vec<u32> },
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("ranking: {0}")]
    Ranking(#[from] MetricError),
}

/// Run CP (eqs. 1–6) and solve for the block scores.
pub fn cp_scores(input: &CpInput) -> Result<CpResult, CpError> {
    let cfg = input.config;
    let eps_ok = cfg.epsilon.is_finite() && cfg.epsilon > 0.0;
    let thr_ok = cfg.zero_threshold.is_finite() && cfg.zero_threshold >= 0.0;
    if !eps_ok || !thr_ok {
        return Err(CpError::Config(format!(
            "epsilon must be finite and > 0 and zero_threshold >= 0 (got {}, {})",
            cfg.epsilon, cfg.zero_threshold
        )));
    }
    let n = input.n_blocks;
    let m = input.edges.len();
    for (i, e) in input.edges.iter().enumerate() {
        for b in e.from.into_iter().chain([e.to]) {
            if b as usize >= n {
                return Err(CpError::BlockOutOfRange {
                    edge: i,
                    block: b,
                    n_blocks: n,
                });
            }
        }
    }
    // Eq. 1.
    let mut cnt_p = vec![0u32; m];
    let mut cnt_f = vec![0u32; m];
    let mut seen = vec![usize::MAX; m];
    let (mut u, mut v) = (0u32, 0u32);
    for (ti, t) in input.tests.iter().enumerate() {
        if t.passed {
            u += 1
        } else {
            v += 1
        }
        for &e in &t.covered {
            if e as usize >= m {
                return Err(CpError::EdgeOutOfRange {
                    test: ti,
                    edge: e,
                    n_edges: m,
                });
            }
            if seen[e as usize] == ti {
                continue;
            }
            seen[e as usize] = ti;
            if t.passed {
                cnt_p[e as usize] += 1
            } else {
                cnt_f[e as usize] += 1
            }
        }
    }
    if v == 0 {
        return Err(CpError::NoFailingTests);
    }
    let mut edges: Vec<CpEdgeStats> = (0..m)
        .map(|i| {
            let tp = if u == 0 {
                0.0
            } else {
                cnt_p[i] as f64 / u as f64
            };
            let tf = cnt_f[i] as f64 / v as f64;
            let kept = tp + tf > 0.0;
            CpEdgeStats {
                theta_pass: tp,
                theta_fail: tf,
                delta: kept.then(|| (tf - tp) / (tf + tp)),
                prob: kept.then(|| {
                    let (a, b) = (v as f64 * tf, u as f64 * tp);
                    a / (a + b)
                }),
                w: None,
            }
        })
        .collect();
    // Steps 2-5.
    let mut in_sys = vec![false; n];
    let mut d = vec![0f64; n];
    let mut has_out_kept = vec![false; n];
    let mut has_out_static = vec![false; n];
    let mut kept_edges = 0;
    for (i, e) in input.edges.iter().enumerate() {
        if let Some(f) = e.from {
            has_out_static[f as usize] = true;
        }
        if let Some(delta) = edges[i].delta {
            kept_edges += 1;
            in_sys[e.to as usize] = true;
            d[e.to as usize] += delta;
            if let Some(f) = e.from {
                in_sys[f as usize] = true;
                has_out_kept[f as usize] = true;
            }
        }
    }
    let mut eps_count = 0;
    let denom: Vec<f64> = d
        .iter()
        .enumerate()
        .map(|(b, &x)| {
            if x.abs() < cfg.zero_threshold {
                if in_sys[b] {
                    eps_count += 1;
                }
                cfg.epsilon
            } else {
                x
            }
        })
        .collect();
    let exit: Vec<bool> = (0..n)
        .map(|b| {
            in_sys[b]
                && match cfg.exit_mode {
                    ExitMode::Dynamic => !has_out_kept[b],
                    ExitMode::Static => !has_out_static[b],
                }
        })
        .collect();
    // M as adjacency: out[j] = [(k, w)] for kept edges j->k with j non-exit.
    let mut out: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
    for (i, e) in input.edges.iter().enumerate() {
        if let Some(delta) = edges[i].delta {
            let w = delta / denom[e.to as usize];
            edges[i].w = Some(w);
            if let Some(f) = e.from {
                if !exit[f as usize] {
                    out[f as usize].push((e.to as usize, w));
                }
            }
        }
    }
    let c: Vec<f64> = (0..n).map(|b| if exit[b] { d[b] } else { 0.0 }).collect();

    // Step 6: solve by SCCs, sinks first.
    let sccs = tarjan_sccs(n, &in_sys, &out);
    let mut br = vec![0f64; n];
    let mut comp_of = vec![usize::MAX; n];
    let mut largest = 0;
    let mut least_squares: Vec<Vec<u32>> = Vec::new();
    for (ci, comp) in sccs.iter().enumerate() {
        largest = largest.max(comp.len());
        for &b in comp {
            comp_of[b] = ci;
        }
        let blocks_u32 = || comp.iter().map(|&b| b as u32).collect::<Vec<_>>();
        if comp.len() == 1 && !out[comp[0]].iter().any(|&(k, _)| k == comp[0]) {
            let j = comp[0];
            let s: f64 = c[j] + out[j].iter().map(|&(k, w)| w * br[k]).sum::<f64>();
            if !s.is_finite() {
                return Err(CpError::Overflow {
                    blocks: blocks_u32(),
                });
            }
            br[j] = s;
            continue;
        }
        let local: std::collections::HashMap<usize, usize> =
            comp.iter().enumerate().map(|(i, &b)| (b, i)).collect();
        let sz = comp.len();
        let mut a = DenseMatrix::<f64>::identity(sz);
        let mut rhs = vec![0f64; sz];
        for (r, &j) in comp.iter().enumerate() {
            rhs[r] = c[j];
            for &(k, w) in &out[j] {
                match local.get(&k) {
                    Some(&col) => a.add_to(r, col, -w),
                    None => rhs[r] += w * br[k],
                }
            }
        }
        let x = match Lu::factor(a.clone()).and_then(|lu| lu.solve(&rhs)) {
            Ok(x) => x,
            Err(LinalgError::Overflow) => {
                return Err(CpError::Overflow {
                    blocks: blocks_u32(),
                })
            }
            // Spec G5: the paper has no answer for a singular loop; take the least-squares
            // solution of least norm (the pseudo-inverse's), recorded in the diagnostics.
            Err(_) => {
                least_squares.push(blocks_u32());
                min_norm_least_squares(&a, &rhs).ok_or_else(|| CpError::Singular {
                    blocks: blocks_u32(),
                })?
            }
        };
        for (r, &j) in comp.iter().enumerate() {
            br[j] = x[r];
        }
    }
    let blocks = (0..n)
        .map(|b| CpBlockScore {
            score: in_sys[b].then_some(br[b]),
            exit: exit[b],
            in_delta_sum: d[b],
        })
        .collect();
    Ok(CpResult {
        edges,
        blocks,
        diagnostics: CpDiagnostics {
            kept_edges,
            system_blocks: in_sys.iter().filter(|&&x| x).count(),
            exit_blocks: exit.iter().filter(|&&x| x).count(),
            components: sccs.len(),
            largest_component: largest,
            epsilon_denominators: eps_count,
            least_squares,
        },
    })
}

/// Iterative Tarjan over the system blocks; returns SCCs in reverse
/// topological order (every SCC after all SCCs it reaches).
fn tarjan_sccs(n: usize, active: &[bool], out: &[Vec<(usize, f64)>]) -> Vec<Vec<usize>> {
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut sccs = Vec::new();
    let mut next = 0usize;
    for root in 0..n {
        if !active[root] || index[root] != usize::MAX {
            continue;
        }
        // (node, next child position)
        let mut call: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut pos)) = call.last_mut() {
            if *pos < out[v].len() {
                let w = out[v][*pos].0;
                *pos += 1;
                if !active[w] {
                    continue;
                }
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                call.pop();
                if let Some(&(p, _)) = call.last() {
                    low[p] = low[p].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut comp = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        comp.push(w);
                        if w == v {
                            break;
                        }
                    }
                    comp.sort_unstable();
                    sccs.push(comp);
                }
            }
        }
    }
    sccs
}

/// Where a statement lives, for [`cp_statement_ranking`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementKind {
    /// Executable statement in this block.
    InBlock(u32),
    /// Executable but in no block (e.g. a global definition gcov does not
    /// log): ranked below every scored block (spec step 9).
    NoBlock,
    /// Not executable (comment, declaration): last group (spec step 10).
    NonExecutable,
}

/// Statement ranking per spec steps 8–11: ids are statement indices.
///
/// Scores: a statement in a scored block gets `BR(block)`; statements in no
/// block get `min − max(1, |min|)` (below every block, `min` = lowest block
/// score); statements of unexecuted blocks and non-executable statements get
/// `−∞` (one final group). Tie groups merge scores within `rel_tol`
/// (spec G7: `1e-9`). The pessimistic position `Ranking::position(..).worst`
/// is CP's rank; effort = rank / number of statements.
pub fn cp_statement_ranking(
    result: &CpResult,
    statements: &[StatementKind],
    rel_tol: f64,
) -> Result<Ranking, CpError> {
    let n_blocks = result.blocks.len();
    let mut min = f64::INFINITY;
    for (i, s) in statements.iter().enumerate() {
        if let StatementKind::InBlock(b) = *s {
            let blk = result
                .blocks
                .get(b as usize)
                .ok_or(CpError::StatementBlockOutOfRange {
                    stmt: i,
                    block: b,
                    n_blocks,
                })?;
            if let Some(x) = blk.score {
                min = min.min(x);
            }
        }
    }
    if !min.is_finite() {
        min = 0.0;
    }
    let no_block = min - min.abs().max(1.0);
    let scores = statements
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let v = match *s {
                StatementKind::InBlock(b) => {
                    result.blocks[b as usize].score.unwrap_or(f64::NEG_INFINITY)
                }
                StatementKind::NoBlock => no_block,
                StatementKind::NonExecutable => f64::NEG_INFINITY,
            };
            (i as u32, v)
        })
        .collect();
    Ok(Ranking::with_tolerance(scores, rel_tol)?)
}

/// Basic blocks built from a statement-level CFG.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockGraph {
    /// Block of every statement.
    pub block_of: Vec<u32>,
    /// Statements of every block, in execution order.
    pub blocks: Vec<Vec<u32>>,
    /// Block-level edges (entry edges keep `from = None`).
    pub edges: Vec<CpEdge>,
    /// For every statement edge, the block edge it became, or `None` for an
    /// edge inside a block (fall-through between consecutive statements).
    pub edge_map: Vec<Option<u32>>,
}

impl BlockGraph {
    /// Translate a statement-edge profile into a block-edge profile
    /// (intra-block edges are dropped; out-of-range ids are an error).
    pub fn map_profile(&self, covered_stmt_edges: &[u32]) -> Result<Vec<u32>, CpError> {
        let mut out = Vec::new();
        for &e in covered_stmt_edges {
            match self.edge_map.get(e as usize) {
                None => {
                    return Err(CpError::EdgeOutOfRange {
                        test: 0,
                        edge: e,
                        n_edges: self.edge_map.len(),
                    })
                }
                Some(Some(b)) => out.push(*b),
                Some(None) => {}
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}

/// Group statements into maximal chains (basic blocks).
///
/// Statement `s` starts a block if it has an entry edge, its in-degree is not
/// 1, or its single predecessor has out-degree other than 1 (or is `s`
/// itself). A pure cycle of single-in/single-out statements starts at its
/// smallest statement. Parallel edges count separately.
pub fn build_basic_blocks(
    n_statements: usize,
    stmt_edges: &[CpEdge],
) -> Result<BlockGraph, CpError> {
    let n = n_statements;
    let mut indeg = vec![0usize; n];
    let mut outdeg = vec![0usize; n];
    let mut entry = vec![false; n];
    let mut pred = vec![usize::MAX; n];
    let mut succ = vec![usize::MAX; n];
    for (i, e) in stmt_edges.iter().enumerate() {
        for s in e.from.into_iter().chain([e.to]) {
            if s as usize >= n {
                return Err(CpError::StatementOutOfRange {
                    edge: i,
                    stmt: s,
                    n_statements: n,
                });
            }
        }
        let t = e.to as usize;
        indeg[t] += 1;
        match e.from {
            None => entry[t] = true,
            Some(f) => {
                let f = f as usize;
                outdeg[f] += 1;
                pred[t] = f;
                succ[f] = t;
            }
        }
    }
    let is_leader = |s: usize| {
        entry[s] || indeg[s] != 1 || pred[s] == usize::MAX || outdeg[pred[s]] != 1 || pred[s] == s
    };
    let mut block_of = vec![u32::MAX; n];
    let mut blocks: Vec<Vec<u32>> = Vec::new();
    let grow = |start: usize, block_of: &mut Vec<u32>, blocks: &mut Vec<Vec<u32>>| {
        let id = blocks.len() as u32;
        let mut chain = vec![start as u32];
        block_of[start] = id;
        let mut cur = start;
        while outdeg[cur] == 1 {
            let t = succ[cur];
            if block_of[t] != u32::MAX || is_leader(t) {
                break;
            }
            block_of[t] = id;
            chain.push(t as u32);
            cur = t;
        }
        blocks.push(chain);
    };
    for s in 0..n {
        if is_leader(s) && block_of[s] == u32::MAX {
            grow(s, &mut block_of, &mut blocks);
        }
    }
    for s in 0..n {
        if block_of[s] == u32::MAX {
            grow(s, &mut block_of, &mut blocks);
        }
    }
    // Position of each statement in its block.
    let mut pos = vec![0usize; n];
    for b in &blocks {
        for (i, &s) in b.iter().enumerate() {
            pos[s as usize] = i;
        }
    }
    let mut edges = Vec::new();
    let mut edge_map = Vec::with_capacity(stmt_edges.len());
    for e in stmt_edges {
        let t = e.to as usize;
        let intra = match e.from {
            Some(f) => {
                let f = f as usize;
                block_of[f] == block_of[t] && pos[t] == pos[f] + 1
            }
            None => false,
        };
        if intra {
            edge_map.push(None);
        } else {
            edge_map.push(Some(edges.len() as u32));
            edges.push(CpEdge {
                from: e.from.map(|f| block_of[f as usize]),
                to: block_of[t],
            });
        }
    }
    Ok(BlockGraph {
        block_of,
        blocks,
        edges,
        edge_map,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(from: Option<u32>, to: u32) -> CpEdge {
        CpEdge { from, to }
    }
    fn prof(passed: bool, covered: &[u32]) -> EdgeProfile {
        EdgeProfile {
            passed,
            covered: covered.to_vec(),
        }
    }

    /// Spec §5: schedule v2 excerpt. Blocks b1..b4 = 0..3, edges e1..e6 = 0..5.
    fn schedule_v2() -> CpInput {
        CpInput {
            n_blocks: 4,
            edges: vec![
                edge(None, 0),    // e1: outside -> b1
                edge(Some(0), 1), // e2: b1 -> b2
                edge(Some(0), 3), // e3: b1 -> b4
                edge(Some(1), 2), // e4: b2 -> b3
                edge(Some(1), 3), // e5: b2 -> b4
                edge(Some(2), 3), // e6: b3 -> b4
            ],
            tests: vec![
                prof(true, &[0, 1, 4]),     // t1
                prof(true, &[0, 2]),        // t2
                prof(false, &[0, 1, 3, 5]), // t3
                prof(true, &[0, 2]),        // t4
                prof(true, &[0, 1, 4]),     // t5
                prof(false, &[0, 1, 4]),    // t6
                prof(true, &[0, 2]),        // t7
            ],
            config: CpConfig::default(),
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-14 * b.abs().max(1.0)
    }

    #[test]
    fn schedule_v2_edge_values() {
        let r = cp_scores(&schedule_v2()).unwrap();
        let want = [
            // θ✓, θ×, θΔ, Prob
            (1.0, 1.0, 0.0, 2.0 / 7.0),
            (0.4, 1.0, 3.0 / 7.0, 0.5),
            (0.6, 0.0, -1.0, 0.0),
            (0.0, 0.5, 1.0, 1.0),
            (0.4, 0.5, 1.0 / 9.0, 1.0 / 3.0),
            (0.0, 0.5, 1.0, 1.0),
        ];
        for (i, (tp, tf, dl, pr)) in want.iter().enumerate() {
            let e = r.edges[i];
            assert!(close(e.theta_pass, *tp), "e{} θ✓ {}", i + 1, e.theta_pass);
            assert!(close(e.theta_fail, *tf), "e{} θ× {}", i + 1, e.theta_fail);
            assert!(close(e.delta.unwrap(), *dl), "e{} θΔ {:?}", i + 1, e.delta);
            assert!(close(e.prob.unwrap(), *pr), "e{} Prob {:?}", i + 1, e.prob);
        }
        // Propagation ratios: W(b1,b2)=1, W(b1,b4)=-9, W(b2,b3)=1, W(b2,b4)=1, W(b3,b4)=9.
        let w: Vec<f64> = r.edges.iter().map(|e| e.w.unwrap()).collect();
        for (got, want) in w[1..].iter().zip([1.0, -9.0, 1.0, 1.0, 9.0]) {
            assert!(close(*got, want), "W {got} vs {want}");
        }
        // e1 into b1: D(b1) = 0 -> epsilon, W = 0/1e-10 = 0.
        assert_eq!(w[0], 0.0);
        // D(b4) = 1/9, D(b3) = 1, D(b2) = 3/7.
        assert!(close(r.blocks[3].in_delta_sum, 1.0 / 9.0));
        assert!(close(r.blocks[2].in_delta_sum, 1.0));
        assert!(close(r.blocks[1].in_delta_sum, 3.0 / 7.0));
        assert_eq!(r.diagnostics.epsilon_denominators, 1);
    }

    #[test]
    fn schedule_v2_block_scores() {
        let r = cp_scores(&schedule_v2()).unwrap();
        let br: Vec<f64> = r.blocks.iter().map(|b| b.score.unwrap()).collect();
        let want = [1.0 / 9.0, 10.0 / 9.0, 1.0, 1.0 / 9.0];
        for (i, (g, w)) in br.iter().zip(want).enumerate() {
            assert!(close(*g, w), "b{}: {g} vs {w}", i + 1);
        }
        let exits: Vec<bool> = r.blocks.iter().map(|b| b.exit).collect();
        assert_eq!(exits, vec![false, false, false, true]);
        assert_eq!(r.diagnostics.system_blocks, 4);
        assert_eq!(r.diagnostics.exit_blocks, 1);
    }

    #[test]
    fn schedule_v2_statement_ranks_and_effort() {
        let r = cp_scores(&schedule_v2()).unwrap();
        // s1 in b1; s2-s5 in b2; s6-s8 in b3; s9 in b4 (ids 0..8).
        let stmts: Vec<StatementKind> = [0, 1, 1, 1, 1, 2, 2, 2, 3]
            .iter()
            .map(|&b| StatementKind::InBlock(b))
            .collect();
        let rk = cp_statement_ranking(&r, &stmts, 1e-9).unwrap();
        let rank = |s: u32| rk.position(&[s]).unwrap().worst;
        assert_eq!(rank(0), 9.0);
        for s in 1..=4 {
            assert_eq!(rank(s), 4.0);
        }
        for s in 5..=7 {
            assert_eq!(rank(s), 7.0);
        }
        assert_eq!(rank(8), 9.0);
        // Fault s2 (id 1): effort 4/9.
        assert_eq!(
            rk.exam(&[1], 9, crate::metrics::TieMode::Worst).unwrap(),
            4.0 / 9.0
        );
        assert_eq!(rk.group_sizes(), vec![4, 3, 2]);
    }

    #[test]
    fn virtual_entry_block_changes_nothing() {
        // Spec §5: add b0 (index 4) as the source of e1.
        let mut inp = schedule_v2();
        inp.n_blocks = 5;
        inp.edges[0].from = Some(4);
        let r = cp_scores(&inp).unwrap();
        assert_eq!(r.blocks[4].score, Some(0.0));
        assert!(close(r.blocks[1].score.unwrap(), 10.0 / 9.0));
        assert!(close(r.blocks[0].score.unwrap(), 1.0 / 9.0));
    }

    #[test]
    fn excluded_edges_tail_groups_and_static_exit() {
        // Block 4 is reachable only through edge 6 (never traversed), block 5
        // has an untraversed out-edge 7 to block 4.
        let mut inp = schedule_v2();
        inp.n_blocks = 6;
        inp.edges.push(edge(Some(3), 4)); // e7 b4 -> b5, never traversed
        inp.edges.push(edge(Some(4), 5)); // e8 never traversed
        let r = cp_scores(&inp).unwrap();
        assert_eq!(r.edges[6].delta, None);
        assert_eq!(r.blocks[4].score, None);
        assert_eq!(r.blocks[5].score, None);
        // Dynamic exit: b4 still an exit block.
        assert!(r.blocks[3].exit);
        assert!(close(r.blocks[3].score.unwrap(), 1.0 / 9.0));
        // Static exit: b4 has a static successor, so it is not an exit; with no
        // kept out-edge its score is 0 and nothing propagates.
        inp.config.exit_mode = ExitMode::Static;
        let r2 = cp_scores(&inp).unwrap();
        assert!(!r2.blocks[3].exit);
        assert_eq!(r2.blocks[3].score, Some(0.0));
        // Statements: one in no block, one non-executable, one in unexecuted b5.
        let stmts = vec![
            StatementKind::InBlock(1),
            StatementKind::NoBlock,
            StatementKind::NonExecutable,
            StatementKind::InBlock(4),
            StatementKind::InBlock(3),
        ];
        let rk = cp_statement_ranking(&r, &stmts, 1e-9).unwrap();
        let worst = |s: u32| rk.position(&[s]).unwrap().worst;
        assert_eq!(worst(0), 1.0);
        assert_eq!(worst(4), 2.0);
        assert_eq!(worst(1), 3.0);
        assert_eq!(worst(2), 5.0);
        assert_eq!(worst(3), 5.0);
        assert!(cp_statement_ranking(&r, &[StatementKind::InBlock(9)], 1e-9).is_err());
    }

    /// Residual of BR(j) = Σ W·BR(k) (non-exit) / BR(j) = D(j) (exit).
    fn max_residual(inp: &CpInput, r: &CpResult) -> f64 {
        let mut acc = vec![0f64; inp.n_blocks];
        for (i, e) in inp.edges.iter().enumerate() {
            if let (Some(f), Some(w)) = (e.from, r.edges[i].w) {
                if !r.blocks[f as usize].exit {
                    acc[f as usize] += w * r.blocks[e.to as usize].score.unwrap();
                }
            }
        }
        (0..inp.n_blocks)
            .filter_map(|b| {
                let s = r.blocks[b].score?;
                let want = if r.blocks[b].exit {
                    r.blocks[b].in_delta_sum
                } else {
                    acc[b]
                };
                Some((s - want).abs())
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn loops_are_solved_exactly() {
        // 0 -> 1 -> 2 -> 1 (loop), 2 -> 3 (exit), 1 -> 1 self-loop, 0 -> 3.
        let inp = CpInput {
            n_blocks: 4,
            edges: vec![
                edge(None, 0),
                edge(Some(0), 1),
                edge(Some(1), 2),
                edge(Some(2), 1),
                edge(Some(2), 3),
                edge(Some(1), 1),
                edge(Some(0), 3),
            ],
            tests: vec![
                prof(false, &[0, 1, 2, 3, 4, 5]),
                prof(false, &[0, 1, 2, 4]),
                prof(true, &[0, 6]),
                prof(true, &[0, 1, 2, 4, 5]),
            ],
            config: CpConfig::default(),
        };
        let r = cp_scores(&inp).unwrap();
        assert_eq!(r.diagnostics.largest_component, 2);
        assert!(max_residual(&inp, &r) < 1e-12);
        // Hand check (u = v = 2): θΔ e0=0, e1=1/3, e2=1/3, e3=1, e4=1/3, e5=0, e6=-1.
        // D(1)=1/3+1+0=4/3, D(2)=1/3, D(3)=1/3-1=-2/3 (exit: BR3=-2/3), D(0)=0 -> eps.
        // W: 0->1 1/4, 1->2 1, 2->1 3/4, 2->3 -1/2, 1->1 0, 0->3 3/2.
        // BR1 = BR2; BR2 = 3/4 BR1 + 1/3 -> BR1 = BR2 = 4/3; BR0 = 1/3 - 1 = -2/3.
        let br: Vec<f64> = r.blocks.iter().map(|b| b.score.unwrap()).collect();
        for (g, w) in br
            .iter()
            .zip([-2.0 / 3.0, 4.0 / 3.0, 4.0 / 3.0, -2.0 / 3.0])
        {
            assert!(close(*g, w), "{br:?}");
        }
    }

    #[test]
    fn singular_loop_gets_the_least_norm_solution() {
        // 0 <-> 1 with no exit: M = [[0,1],[1,0]], I - M singular; the homogeneous loop's
        // least-norm solution is BR = 0 (spec G5), and the diagnostics name the loop.
        let inp = CpInput {
            n_blocks: 2,
            edges: vec![edge(None, 0), edge(Some(0), 1), edge(Some(1), 0)],
            tests: vec![prof(false, &[0, 1, 2]), prof(true, &[0])],
            config: CpConfig::default(),
        };
        let r = cp_scores(&inp).expect("a ranking for a singular loop");
        assert_eq!(r.diagnostics.least_squares, vec![vec![0, 1]]);
        for b in &r.blocks {
            assert_eq!(b.score, Some(0.0));
        }
    }

    /// The least-norm solution of a consistent singular system solves it, and has no part in
    /// the null space: x + y = 2 twice gives x = y = 1 (not, say, 2 and 0).
    #[test]
    fn least_norm_solution_of_a_consistent_singular_system() {
        let mut a = DenseMatrix::<f64>::zeros(2);
        for (i, j) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
            a.set(i, j, 1.0);
        }
        let x = min_norm_least_squares(&a, &[2.0, 2.0]).unwrap();
        assert!(
            (x[0] - 1.0).abs() < 1e-9 && (x[1] - 1.0).abs() < 1e-9,
            "{x:?}"
        );
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Appendix B: ordering edges by θΔ (eq. 2) or by Prob (eq. 3) gives
            /// the same order; the solution satisfies every equation.
            #[test]
            fn delta_and_prob_order_agree(
                cov in proptest::collection::vec(proptest::collection::vec(any::<bool>(), 6), 2..12),
                verdicts in proptest::collection::vec(any::<bool>(), 12),
            ) {
                let mut inp = schedule_v2();
                inp.tests = cov.iter().enumerate().map(|(i, c)| EdgeProfile {
                    passed: verdicts[i] && i != 0, // test 0 always fails
                    covered: (0..6u32).filter(|&e| c[e as usize]).collect(),
                }).collect();
                let r = match cp_scores(&inp) {
                    Ok(r) => r,
                    Err(CpError::Singular { .. }) => return Ok(()),
                    Err(e) => return Err(TestCaseError::fail(e.to_string())),
                };
                let kept: Vec<&CpEdgeStats> = r.edges.iter().filter(|e| e.delta.is_some()).collect();
                for a in &kept {
                    for b in &kept {
                        let (da, db) = (a.delta.unwrap(), b.delta.unwrap());
                        let (pa, pb) = (a.prob.unwrap(), b.prob.unwrap());
                        if da < db - 1e-12 { prop_assert!(pa < pb + 1e-12); }
                        if (da - db).abs() <= 1e-12 { prop_assert!((pa - pb).abs() <= 1e-12); }
                    }
                }
                // a singular loop's least-squares solution need not satisfy its equations
                if r.diagnostics.least_squares.is_empty() {
                    prop_assert!(max_residual(&inp, &r) <= 1e-9 * r.blocks.iter().filter_map(|b| b.score).fold(1.0f64, |a, s| a.max(s.abs())));
                } else {
                    prop_assert!(r.blocks.iter().filter_map(|b| b.score).all(f64::is_finite));
                }
            }
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        let mut inp = schedule_v2();
        inp.tests.retain(|t| t.passed);
        assert_eq!(cp_scores(&inp), Err(CpError::NoFailingTests));
        let mut inp = schedule_v2();
        inp.tests[0].covered.push(17);
        assert!(matches!(
            cp_scores(&inp),
            Err(CpError::EdgeOutOfRange {
                test: 0,
                edge: 17,
                ..
            })
        ));
        let mut inp = schedule_v2();
        inp.edges.push(edge(Some(9), 0));
        assert!(matches!(
            cp_scores(&inp),
            Err(CpError::BlockOutOfRange { edge: 6, .. })
        ));
        let mut inp = schedule_v2();
        inp.config.epsilon = 0.0;
        assert!(matches!(cp_scores(&inp), Err(CpError::Config(_))));
        // No passed test: θ✓ = 0 everywhere (spec G9).
        let mut inp = schedule_v2();
        inp.tests.retain(|t| !t.passed);
        let r = cp_scores(&inp).unwrap();
        assert!(r.edges.iter().all(|e| e.theta_pass == 0.0));
    }

    #[test]
    fn basic_blocks_from_statements() {
        // Statement CFG of the schedule excerpt: s1..s9 = 0..8.
        // entry->s1; s1->s2 (T), s1->s9 (F); s2->s3->s4->s5; s5->s6 (T), s5->s9 (F);
        // s6->s7->s8; s8->s9.
        let se = vec![
            edge(None, 0),
            edge(Some(0), 1),
            edge(Some(0), 8),
            edge(Some(1), 2),
            edge(Some(2), 3),
            edge(Some(3), 4),
            edge(Some(4), 5),
            edge(Some(4), 8),
            edge(Some(5), 6),
            edge(Some(6), 7),
            edge(Some(7), 8),
        ];
        let g = build_basic_blocks(9, &se).unwrap();
        assert_eq!(
            g.blocks,
            vec![vec![0], vec![1, 2, 3, 4], vec![5, 6, 7], vec![8]]
        );
        assert_eq!(g.block_of, vec![0, 1, 1, 1, 1, 2, 2, 2, 3]);
        assert_eq!(
            g.edges,
            vec![
                edge(None, 0),
                edge(Some(0), 1),
                edge(Some(0), 3),
                edge(Some(1), 2),
                edge(Some(1), 3),
                edge(Some(2), 3)
            ]
        );
        assert_eq!(
            g.edge_map,
            vec![
                Some(0),
                Some(1),
                Some(2),
                None,
                None,
                None,
                Some(3),
                Some(4),
                None,
                None,
                Some(5)
            ]
        );
        // t3 (failing) at statement level -> block edges e1,e2,e4,e6.
        let p = g.map_profile(&[0, 1, 3, 4, 5, 6, 8, 9, 10]).unwrap();
        assert_eq!(p, vec![0, 1, 3, 5]);
        assert!(g.map_profile(&[99]).is_err());
        // Pure cycle 0->1->2->0 with an exit 2->3 chain broken by out-degree.
        let g =
            build_basic_blocks(3, &[edge(Some(0), 1), edge(Some(1), 2), edge(Some(2), 0)]).unwrap();
        assert_eq!(g.blocks, vec![vec![0, 1, 2]]);
        assert_eq!(g.edges, vec![edge(Some(0), 0)]);
        assert!(build_basic_blocks(2, &[edge(Some(0), 5)]).is_err());
    }

    /// One loop of 3000 blocks with forward chords and a single exit: the
    /// whole system is one SCC solved by dense LU. Ignored by default (slow in
    /// debug); run with `cargo test --release -- --ignored`.
    #[test]
    #[ignore]
    fn single_scc_of_3000_blocks() {
        let nb = 3000u32;
        let mut edges = vec![edge(None, 0)];
        for i in 0..nb {
            edges.push(edge(Some(i), (i + 1) % nb));
            if i % 10 == 0 {
                edges.push(edge(Some(i), (i + 37) % nb));
            }
        }
        edges.push(edge(Some(nb / 3), nb)); // exit block
        let all: Vec<u32> = (0..edges.len() as u32).collect();
        let pass: Vec<u32> = all.iter().copied().filter(|&e| e % 11 != 4).collect();
        let pass2: Vec<u32> = all.iter().copied().filter(|&e| e % 5 != 1).collect();
        let inp = CpInput {
            n_blocks: nb as usize + 1,
            edges,
            tests: vec![
                prof(false, &all),
                prof(true, &pass),
                prof(true, &pass2),
                prof(false, &pass),
            ],
            config: CpConfig::default(),
        };
        let r = cp_scores(&inp).unwrap();
        assert_eq!(r.diagnostics.largest_component, nb as usize);
        let scale = r
            .blocks
            .iter()
            .filter_map(|b| b.score)
            .fold(1.0f64, |a, s| a.max(s.abs()));
        assert!(max_residual(&inp, &r) <= 1e-9 * scale);
    }

    /// A few thousand blocks: 500 loops of 4 blocks in sequence plus a big
    /// loop of 1000 blocks; checks the solution satisfies every equation.
    #[test]
    fn large_system_residual() {
        let mut edges = vec![edge(None, 0)];
        let n_small = 500usize;
        let mut n = 0u32;
        for _ in 0..n_small {
            let b = n;
            edges.push(edge(Some(b), b + 1));
            edges.push(edge(Some(b + 1), b + 2));
            edges.push(edge(Some(b + 2), b + 1)); // back edge
            edges.push(edge(Some(b + 2), b + 3));
            edges.push(edge(Some(b), b + 3)); // skip
            n += 3;
        }
        // Big ring of 1000 blocks starting at n.
        let ring = 1000u32;
        let start = n;
        for i in 0..ring {
            edges.push(edge(Some(start + i), start + (i + 1) % ring));
        }
        edges.push(edge(Some(start + ring / 2), start + ring)); // exit
        let n_blocks = (start + ring + 1) as usize;
        let all: Vec<u32> = (0..edges.len() as u32).collect();
        // Pass tests skip every third small loop's back edge and the ring exit.
        let pass: Vec<u32> = all
            .iter()
            .copied()
            .filter(|&e| !(e % 15 == 3 || e as usize == edges.len() - 1))
            .collect();
        let pass2: Vec<u32> = all.iter().copied().filter(|&e| e % 7 != 2).collect();
        let inp = CpInput {
            n_blocks,
            edges,
            tests: vec![
                prof(false, &all),
                prof(true, &pass),
                prof(true, &pass2),
                prof(false, &pass2),
            ],
            config: CpConfig::default(),
        };
        let r = cp_scores(&inp).unwrap();
        assert_eq!(r.diagnostics.system_blocks, n_blocks);
        assert!(r.diagnostics.largest_component >= ring as usize);
        let scale = r
            .blocks
            .iter()
            .filter_map(|b| b.score)
            .fold(1.0f64, |a, s| a.max(s.abs()));
        assert!(max_residual(&inp, &r) <= 1e-9 * scale, "residual too large");
    }
}
