//! Propagation paths for the HTML report: for a ranked line, the most probable way its error
//! travelled through the EPG to the failure.
//!
//! **Choice of path.** A path starts at one of the line's statement vertices, follows EPG edges
//! (statement → the values it computed → the values computed from them ...) and ends at the first
//! vertex observed incorrect (the failing value, `V_n^d` of §3.3). Among all such paths we show
//! the one whose vertices have the largest **product of posterior beliefs** `Pr(v incorrect | e)`
//! (the final marginals of the primary model, F, or F∪P in `--mode fp`): the chain of events
//! "each of these is wrong" that the model finds most probable, treating the beliefs as
//! independent. A vertex observed correct (belief 0) never lies on a path. The EPG is acyclic, so
//! one dynamic program over its reverse topological order gives the best continuation of every
//! vertex at once (`O(V + E)` for all lines together). Computed only when asked
//! ([`super::Options::paths`]).

use std::collections::HashMap;

use serde::Serialize;

use super::ranking::Ranked;
use super::Model;
use crate::dump::Dump;
use crate::forward::Vertex;
use crate::infer::Dag;

/// Paths longer than this many vertices are shown with their middle left out.
pub const MAX_SHOWN: usize = 30;

/// One vertex of a path, as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub struct PathVertex {
    /// `statement` or `value` (a value, a variable, an argument or a receiver at one step).
    pub kind: &'static str,
    /// The vertex's name in `derive`'s output (`stmt:ID`, `t2:x@12`, ...).
    pub name: String,
    /// What it is, for people: `statement`, `x at step 12`, `value at step 12` (of a step that
    /// defines no variable), `argument x at step 12`, `receiver at step 12`.
    pub label: String,
    /// The statement (of the step, for a value vertex).
    pub stmt: String,
    pub file: String,
    pub line: u32,
    pub text: String,
    /// The test of the trace a value belongs to (empty for a statement).
    pub test: String,
    /// Posterior `Pr(incorrect | e)`.
    pub belief: f64,
    /// `incorrect` or `correct` when observed, else empty.
    pub observed: &'static str,
}

/// The path of one ranked entry (`vertices[i] → vertices[i+1]` derived by `rules[i]`).
#[derive(Debug, Clone, Serialize)]
pub struct LinePath {
    pub file: String,
    pub line: u32,
    /// The ranked entry's statements (its key in the report).
    pub statements: Vec<String>,
    pub model: &'static str,
    pub vertices: Vec<PathVertex>,
    pub rules: Vec<String>,
    /// The product of the beliefs on the whole path.
    pub probability: f64,
    /// Vertices left out of the middle of a long path (after `vertices[MAX_SHOWN / 2 - 1]`; that
    /// edge's rule then says so).
    pub elided: usize,
}

/// Best continuation of every vertex toward an observed-incorrect vertex.
struct Best {
    /// `ln` of the product of beliefs from the vertex to the failure (`-inf`: no path).
    score: Vec<f64>,
    /// The successor on the best path and the index of the edge's rule.
    next: Vec<Option<(u32, u16)>>,
}

/// `None` when the EPG has a cycle (inference refuses such a model before paths are asked for).
fn best_continuations(model: &Model, belief: &[f64]) -> Option<Best> {
    let n = model.premises.vertices.len();
    let mut out: Vec<Vec<(u32, u16)>> = vec![Vec::new(); n];
    for e in &model.epg.edges {
        out[e.src as usize].push((e.dst, e.rule));
    }
    // the topological order inference uses, visited backwards: every successor is final
    // before its predecessors
    let dag = Dag::from_edges(n, &model.pairs).ok()?;
    let order = dag.topological_order();
    let mut best = Best {
        score: vec![f64::NEG_INFINITY; n],
        next: vec![None; n],
    };
    for &v in order.iter().rev() {
        let v = v as usize;
        let own = belief.get(v).copied().unwrap_or(0.0).ln();
        if model.evidence[v] == Some(false) {
            best.score[v] = own;
            continue;
        }
        if model.evidence[v] == Some(true) {
            continue;
        }
        for &(w, rule) in &out[v] {
            let s = own + best.score[w as usize];
            if s > best.score[v] {
                best.score[v] = s;
                best.next[v] = Some((w, rule));
            }
        }
    }
    Some(best)
}

/// The paths of the first `top` entries of `ranking` in `model` (entries without a path to the
/// failure are left out).
pub fn paths(
    dump: &Dump,
    model: &Model,
    belief: &[f64],
    ranking: &[Ranked],
    top: usize,
) -> Vec<LinePath> {
    let Some(best) = best_continuations(model, belief) else {
        return Vec::new();
    };
    ranking
        .iter()
        .take(top)
        .filter_map(|e| entry_path(dump, model, belief, &best, e))
        .collect()
}

fn entry_path(
    dump: &Dump,
    model: &Model,
    belief: &[f64],
    best: &Best,
    e: &Ranked,
) -> Option<LinePath> {
    let start = e
        .statements
        .iter()
        .filter_map(|s| dump.stmt(s))
        .filter_map(|s| model.index.get(&Vertex::Stmt(s)).copied())
        .filter(|&v| best.score[v as usize].is_finite())
        .max_by(|&a, &b| best.score[a as usize].total_cmp(&best.score[b as usize]))?;
    let mut chain = vec![start];
    let mut rules = Vec::new();
    while let Some((w, rule)) = best.next[*chain.last()? as usize] {
        chain.push(w);
        rules.push(model.epg.rule_names[rule as usize].clone());
    }
    let mut vertices: Vec<PathVertex> = chain
        .iter()
        .map(|&v| path_vertex(dump, model, belief, v))
        .collect();
    let elided = vertices.len().saturating_sub(MAX_SHOWN);
    if elided > 0 {
        let keep = MAX_SHOWN / 2;
        vertices.drain(keep..keep + elided);
        rules.drain(keep..keep + elided);
        rules[keep - 1] = format!("\u{22ef} {elided} vertices not shown \u{22ef}");
    }
    Some(LinePath {
        file: e.file.clone(),
        line: e.line,
        statements: e.statements.clone(),
        model: model.name,
        vertices,
        rules,
        probability: best.score[start as usize].exp(),
        elided,
    })
}

fn path_vertex(dump: &Dump, model: &Model, belief: &[f64], v: u32) -> PathVertex {
    let vertex = model.premises.vertices[v as usize];
    let (kind, stmt, test) = match vertex {
        Vertex::Stmt(s) => ("statement", s, String::new()),
        Vertex::Def { trace, step, .. }
        | Vertex::Value { trace, step }
        | Vertex::Arg { trace, step, .. }
        | Vertex::This { trace, step, .. } => {
            let tr = &dump.traces[trace as usize];
            let test = dump.manifest.tests[tr.test].id.clone();
            ("value", tr.steps[step as usize].stmt, test)
        }
    };
    let st = &dump.stmts[stmt as usize];
    PathVertex {
        kind,
        name: crate::epg::vertex_name(dump, &vertex),
        label: label(dump, &vertex),
        stmt: st.id.clone(),
        file: st.file.clone(),
        line: st.line,
        text: st.text.clone(),
        test,
        belief: belief.get(v as usize).copied().unwrap_or(0.0),
        observed: match model.evidence[v as usize] {
            Some(false) => "incorrect",
            Some(true) => "correct",
            None => "",
        },
    }
}

fn label(dump: &Dump, v: &Vertex) -> String {
    match *v {
        Vertex::Stmt(_) => "statement".to_owned(),
        Vertex::Def { step, var, .. } => format!("{} at step {step}", dump.vars.name(var)),
        Vertex::Value { step, .. } => format!("value at step {step}"),
        Vertex::Arg { step, var, .. } => {
            format!("argument {} at step {step}", dump.vars.name(var))
        }
        Vertex::This { step, .. } => format!("receiver at step {step}"),
    }
}

/// What the HTML report needs beyond the ranking ([`super::Report::details`]).
#[derive(Debug, Clone, Default)]
pub struct Details {
    /// Propagation paths of the top entries.
    pub paths: Vec<LinePath>,
    /// Each model's final score of every statement it scores (by statement id).
    pub model_scores: Vec<(&'static str, HashMap<String, f64>)>,
}

/// Statement scores by statement id.
pub fn by_id(dump: &Dump, scores: &super::ranking::StmtScores) -> HashMap<String, f64> {
    scores
        .iter()
        .map(|(&s, score)| (dump.stmts[s as usize].id.clone(), score.value))
        .collect()
}
