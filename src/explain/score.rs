//! Seed 003's report score (spec `pathgen-seed-003.md` §4, Renieris & Reiss): how much of the
//! program a programmer who searches breadth-first from the report's statements through the
//! program dependence graph can skip before meeting a faulty statement.
//!
//! * **PDG**: the application statements of the program's files — those the failing run
//!   executed a statement of (a dump's `--src` may hold many programs: QuixBugs' folder holds
//!   40); edges `c → s` for static control
//!   dependence (`src/cdg.rs`), `d → u` for intra-procedural data dependence (a definition of
//!   `v` that reaches a use of `v` along the CFG without another definition of `v` between), and
//!   call edges seen in the traces (the call statement → the callee's entry, each `return` of
//!   the callee → the call: CodeSurfer's parameter and return edges, without a call graph).
//! * `DS(n)` = the statements within `n` directed edges of a report statement, forward or
//!   backward (two breadth-first searches, not mixed); `DS*` the first `DS(n)` holding a faulty
//!   statement; **score = 1 − |DS*| / |PDG|**. An empty report, or one from which no faulty
//!   statement can be reached, scores 0 (the spec's fallback).

use std::collections::{HashSet, VecDeque};

use crate::cdg::ControlDeps;
use crate::dump::{Dump, Role, StmtId};

/// The PDG of a dump's application code.
pub struct Pdg {
    /// Application statements (the nodes).
    pub nodes: usize,
    succ: Vec<Vec<StmtId>>,
    pred: Vec<Vec<StmtId>>,
    app: Vec<bool>,
}

impl Pdg {
    /// The PDG of the application code in the files `run` executed.
    pub fn build(dump: &Dump, cd: &ControlDeps, run: &crate::dump::Trace) -> Pdg {
        let n = dump.stmts.len();
        let files: HashSet<&str> = run
            .steps
            .iter()
            .map(|s| dump.stmts[s.stmt as usize].file.as_str())
            .collect();
        let app: Vec<bool> = dump
            .stmts
            .iter()
            .map(|s| {
                dump.methods[s.method as usize].role == Role::App && files.contains(s.file.as_str())
            })
            .collect();
        let mut edges: HashSet<(StmtId, StmtId)> = HashSet::new();
        for (s, ps) in cd.parents.iter().enumerate() {
            edges.extend(ps.iter().map(|&p| (p, s as StmtId)));
        }
        data_edges(dump, &mut edges);
        call_edges(dump, &mut edges);
        let mut succ = vec![Vec::new(); n];
        let mut pred = vec![Vec::new(); n];
        for (a, b) in edges {
            if app[a as usize] && app[b as usize] && a != b {
                succ[a as usize].push(b);
                pred[b as usize].push(a);
            }
        }
        Pdg {
            nodes: app.iter().filter(|&&a| a).count(),
            succ,
            pred,
            app,
        }
    }

    /// `1 − |DS*| / |PDG|` for the report's statements `blamed` and the faulty statements.
    pub fn score(&self, blamed: &[StmtId], faulty: &[StmtId]) -> f64 {
        let blamed: Vec<StmtId> = blamed
            .iter()
            .copied()
            .filter(|&b| self.app[b as usize])
            .collect();
        if blamed.is_empty() || self.nodes == 0 {
            return 0.0;
        }
        let fwd = distances(&self.succ, &blamed);
        let bwd = distances(&self.pred, &blamed);
        let within = |s: usize, n: u32| fwd[s] <= n || bwd[s] <= n;
        let Some(n) = faulty
            .iter()
            .map(|&f| fwd[f as usize].min(bwd[f as usize]))
            .filter(|&d| d != u32::MAX)
            .min()
        else {
            return 0.0;
        };
        let ds = (0..self.app.len())
            .filter(|&s| self.app[s] && within(s, n))
            .count();
        1.0 - ds as f64 / self.nodes as f64
    }
}

/// Breadth-first distances from `from` along `adj` (`u32::MAX`: unreachable).
fn distances(adj: &[Vec<StmtId>], from: &[StmtId]) -> Vec<u32> {
    let mut d = vec![u32::MAX; adj.len()];
    let mut q: VecDeque<StmtId> = VecDeque::new();
    for &f in from {
        d[f as usize] = 0;
        q.push_back(f);
    }
    while let Some(v) = q.pop_front() {
        for &w in &adj[v as usize] {
            if d[w as usize] == u32::MAX {
                d[w as usize] = d[v as usize] + 1;
                q.push_back(w);
            }
        }
    }
    d
}

/// Reaching definitions by search: from each definition of `v`, the uses of `v` reached along
/// normal CFG edges before another definition of `v`.
fn data_edges(dump: &Dump, edges: &mut HashSet<(StmtId, StmtId)>) {
    let mut succs: Vec<Vec<StmtId>> = vec![Vec::new(); dump.stmts.len()];
    for e in dump.cfg.iter().filter(|e| !e.exceptional) {
        succs[e.from as usize].push(e.to);
    }
    for (d, vars) in dump.defs.iter().enumerate() {
        for &v in vars {
            let mut seen: HashSet<StmtId> = HashSet::new();
            let mut stack: Vec<StmtId> = succs[d].clone();
            while let Some(s) = stack.pop() {
                if !seen.insert(s) {
                    continue;
                }
                if dump.uses[s as usize].contains(&v) {
                    edges.insert((d as StmtId, s));
                }
                if !dump.defs[s as usize].contains(&v) {
                    stack.extend(&succs[s as usize]);
                }
            }
        }
    }
}

/// Call → callee entry and callee return → call, for every call the traces saw.
fn call_edges(dump: &Dump, edges: &mut HashSet<(StmtId, StmtId)>) {
    use crate::dump::StmtKind;
    for tr in &dump.traces {
        for f in &tr.frames {
            let Some(c) = f.call_step else { continue };
            let call = tr.steps[c as usize].stmt;
            let m = &dump.methods[f.method as usize];
            edges.insert((call, m.entry));
            for &s in &m.stmts {
                if dump.stmts[s as usize].kind == StmtKind::Return {
                    edges.insert((s, call));
                }
            }
        }
    }
}

/// The paper's Table 4 bucket of a score: `100`, or the tens `90` (90–99 %) … `0` (0–9 %).
pub fn bucket(score: f64) -> u32 {
    let pct = (score * 100.0).round() as u32;
    if pct >= 100 {
        100
    } else {
        pct / 10 * 10
    }
}
