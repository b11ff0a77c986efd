//! Baseline techniques on a trace dump: the seven SBFL formulas on statement coverage and CP on
//! the statement CFG with per-test edge profiles. Their statement scores go through
//! [`crate::localize::ranking::rank`], so a baseline ranking has exactly the shape of a PROSECUTOR
//! ranking (same line / method / statement aggregation, same tie rule).
//!
//! **Tests.** When the dump has `coverage.facts` (resp. `edge_coverage.facts`), every manifest
//! test is in the spectrum (a test without rows covered nothing). Otherwise coverage is derived
//! from the traces and only traced tests take part (an untraced test's coverage is unknown).
//!
//! **Derived coverage.** Statement coverage: the statements a trace executed (every step).
//! Edge coverage: for each frame, consecutive steps of that frame `a, b` give the edge `a → b`
//! when it is a `normal` edge of `cfg.facts` (a callee's steps in between do not break the pair).
//!
//! **CP graph.** Statement nodes, the `normal` CFG edges plus an entry edge (from outside) into
//! every method's entry statement, grouped into basic blocks by
//! [`crate::baselines::build_basic_blocks`]. A test covers a method's entry edge when it executed
//! the entry statement. A virtual exit node receives an edge from every statement where a traced
//! frame ended abruptly (a crash, an exception unwinding a call, a failure point), so that CP has
//! an exit to propagate from in a failing run that stops inside a loop. A statement's CP score is its block's `BR`; statements of blocks outside
//! the CP system (never executed) are not ranked.
//!
//! **Ranked statements.** SBFL ranks the statements at least one test in the spectrum executed;
//! CP the statements of scored blocks; only statements of `app` methods appear in the ranking.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::str::FromStr;

use crate::baselines::{
    build_basic_blocks, cp_scores, sbfl_scores, CpConfig, CpEdge, CpInput, EdgeProfile, Formula,
    Spectrum, SpectrumTest,
};
use crate::dump::{Dump, Outcome, StmtId};
use crate::localize::ranking::StmtScores;

/// A baseline technique.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Technique {
    Sbfl(Formula),
    Cp,
}

impl Technique {
    /// The seven SBFL formulas, then CP.
    pub fn all() -> Vec<Technique> {
        Formula::ALL
            .iter()
            .map(|&f| Technique::Sbfl(f))
            .chain([Technique::Cp])
            .collect()
    }

    pub fn name(self) -> &'static str {
        match self {
            Technique::Sbfl(f) => f.name(),
            Technique::Cp => "cp",
        }
    }

    /// Display name (as in the paper's tables).
    pub fn label(self) -> &'static str {
        match self {
            Technique::Sbfl(Formula::Ochiai) => "Ochiai",
            Technique::Sbfl(Formula::Tarantula) => "Tarantula",
            Technique::Sbfl(Formula::DStar) => "DStar",
            Technique::Sbfl(Formula::Op2) => "Op2",
            Technique::Sbfl(Formula::Jaccard) => "Jaccard",
            Technique::Sbfl(Formula::Barinel) => "Barinel",
            Technique::Sbfl(Formula::Naish1) => "Naish1",
            Technique::Cp => "CP",
        }
    }
}

impl fmt::Display for Technique {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Technique {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim().to_ascii_lowercase();
        if s == "cp" {
            return Ok(Technique::Cp);
        }
        s.parse::<Formula>().map(Technique::Sbfl).map_err(|_| {
            format!(
                "unknown technique {s:?} (expected one of: {})",
                Technique::all()
                    .iter()
                    .map(|t| t.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }
}

/// Statement coverage: per test in the spectrum, (manifest test index, executed statements).
pub fn stmt_coverage(dump: &Dump) -> Vec<(usize, BTreeSet<StmtId>)> {
    match &dump.coverage {
        Some(rows) => {
            let mut per: Vec<BTreeSet<StmtId>> = vec![BTreeSet::new(); dump.manifest.tests.len()];
            for &(t, s) in rows {
                per[t].insert(s);
            }
            per.into_iter().enumerate().collect()
        }
        None => dump
            .traces
            .iter()
            .map(|tr| (tr.test, tr.steps.iter().map(|s| s.stmt).collect()))
            .collect(),
    }
}

/// Edge coverage: per test in the profile, (manifest test index, traversed (from, to) pairs).
pub fn edge_coverage(dump: &Dump) -> Vec<(usize, BTreeSet<(StmtId, StmtId)>)> {
    match &dump.edge_coverage {
        Some(rows) => {
            let mut per: Vec<BTreeSet<(StmtId, StmtId)>> =
                vec![BTreeSet::new(); dump.manifest.tests.len()];
            for &(t, a, b) in rows {
                per[t].insert((a, b));
            }
            per.into_iter().enumerate().collect()
        }
        None => {
            let normal: std::collections::HashSet<(StmtId, StmtId)> = dump
                .cfg
                .iter()
                .filter(|e| !e.exceptional)
                .map(|e| (e.from, e.to))
                .collect();
            dump.traces
                .iter()
                .map(|tr| {
                    let mut last: Vec<Option<StmtId>> = vec![None; tr.frames.len()];
                    let mut edges = BTreeSet::new();
                    for s in &tr.steps {
                        let f = s.frame as usize;
                        if let Some(prev) = last[f] {
                            if normal.contains(&(prev, s.stmt)) {
                                edges.insert((prev, s.stmt));
                            }
                        }
                        last[f] = Some(s.stmt);
                    }
                    (tr.test, edges)
                })
                .collect()
        }
    }
}

fn passed(dump: &Dump, test: usize) -> bool {
    dump.manifest.tests[test].outcome == Outcome::Pass
}

/// The statement spectrum of a dump (one test per covered test) and the statements some test
/// executed.
pub fn stmt_spectrum(dump: &Dump) -> (Spectrum, BTreeSet<StmtId>) {
    let cov = stmt_coverage(dump);
    let executed: BTreeSet<StmtId> = cov.iter().flat_map(|(_, s)| s.iter().copied()).collect();
    let spectrum = Spectrum {
        n_elements: dump.stmts.len(),
        tests: cov
            .iter()
            .map(|(t, s)| SpectrumTest {
                passed: passed(dump, *t),
                covered: s.iter().copied().collect(),
            })
            .collect(),
    };
    (spectrum, executed)
}

/// SBFL score of every statement some test in the spectrum executed.
pub fn sbfl_stmt_scores(dump: &Dump, formula: Formula) -> Result<StmtScores, String> {
    let (spectrum, executed) = stmt_spectrum(dump);
    if spectrum.tests.iter().all(|t| t.passed) {
        return Err(
            "no failing test in the coverage spectrum: SBFL has nothing to rank".to_owned(),
        );
    }
    let scores = sbfl_scores(&spectrum, formula).map_err(|e| e.to_string())?;
    // DStar's "covered by every failing test and no passing test" is f64::MAX: print it as inf.
    let finite = |x: f64| if x == f64::MAX { f64::INFINITY } else { x };
    Ok(executed
        .into_iter()
        .map(|s| (s, finite(scores[s as usize]).into()))
        .collect())
}

/// Statements at which a traced frame ended without reaching an exit of its method (a crash, an
/// exception propagating through a call, the failure point of a test), per traced test.
fn abrupt_ends(dump: &Dump) -> HashMap<usize, BTreeSet<StmtId>> {
    let mut has_succ = vec![false; dump.stmts.len()];
    for e in dump.cfg.iter().filter(|e| !e.exceptional) {
        has_succ[e.from as usize] = true;
    }
    let mut out: HashMap<usize, BTreeSet<StmtId>> = HashMap::new();
    for tr in &dump.traces {
        let mut last: Vec<Option<StmtId>> = vec![None; tr.frames.len()];
        for s in &tr.steps {
            last[s.frame as usize] = Some(s.stmt);
        }
        let ends = out.entry(tr.test).or_default();
        ends.extend(last.into_iter().flatten().filter(|&s| has_succ[s as usize]));
    }
    out
}

/// CP score (`BR` of the statement's basic block) of every statement in the CP system.
///
/// Besides the normal CFG edges and one entry edge per method, the graph has a virtual exit node
/// with an edge from every statement at which a traced frame ended abruptly ([`abrupt_ends`]):
/// CP propagates suspiciousness backwards from exits, and a crashing or failing run would
/// otherwise end inside a loop or a straight-line block with no exit to start from.
pub fn cp_stmt_scores(dump: &Dump) -> Result<StmtScores, String> {
    let n = dump.stmts.len();
    let exit = n as StmtId; // the virtual exit node
    let ends = abrupt_ends(dump);
    // Statement-level edges: normal CFG edges, abrupt ends → exit, one entry edge per method.
    let mut edges: Vec<CpEdge> = Vec::new();
    let mut edge_id: HashMap<(StmtId, StmtId), Vec<u32>> = HashMap::new();
    let end_stmts: BTreeSet<StmtId> = ends.values().flatten().copied().collect();
    let static_edges = dump
        .cfg
        .iter()
        .filter(|e| !e.exceptional)
        .map(|e| (e.from, e.to))
        .chain(end_stmts.iter().map(|&s| (s, exit)));
    for (a, b) in static_edges {
        edge_id.entry((a, b)).or_default().push(edges.len() as u32);
        edges.push(CpEdge {
            from: Some(a),
            to: b,
        });
    }
    let mut entry_edge: HashMap<StmtId, u32> = HashMap::new();
    for m in &dump.methods {
        entry_edge.insert(m.entry, edges.len() as u32);
        edges.push(CpEdge {
            from: None,
            to: m.entry,
        });
    }
    let graph = build_basic_blocks(n + 1, &edges).map_err(|e| format!("CP basic blocks: {e}"))?;
    let stmts = stmt_coverage(dump);
    let stmt_cov: HashMap<usize, &BTreeSet<StmtId>> = stmts.iter().map(|(t, s)| (*t, s)).collect();
    let mut tests = Vec::new();
    for (t, mut pairs) in edge_coverage(dump) {
        if let Some(e) = ends.get(&t) {
            pairs.extend(e.iter().map(|&s| (s, exit)));
        }
        let mut covered: Vec<u32> = pairs
            .iter()
            .filter_map(|p| edge_id.get(p))
            .flatten()
            .copied()
            .collect();
        // entry edges: the entry statement was executed (coverage), or an edge leaves it
        let executed = |s: StmtId| {
            stmt_cov.get(&t).is_some_and(|c| c.contains(&s)) || pairs.iter().any(|p| p.0 == s)
        };
        covered.extend(
            entry_edge
                .iter()
                .filter(|(&s, _)| executed(s))
                .map(|(_, &e)| e),
        );
        let covered = graph
            .map_profile(&covered)
            .map_err(|e| format!("CP edge profile: {e}"))?;
        tests.push(EdgeProfile {
            passed: passed(dump, t),
            covered,
        });
    }
    let input = CpInput {
        n_blocks: graph.blocks.len(),
        edges: graph.edges.clone(),
        tests,
        config: CpConfig::default(),
    };
    let result = cp_scores(&input).map_err(|e| format!("CP: {e}"))?;
    let mut out = StmtScores::new();
    for (s, &b) in graph.block_of.iter().enumerate().take(n) {
        if let Some(score) = result.blocks[b as usize].score {
            out.insert(s as StmtId, score.into());
        }
    }
    Ok(out)
}

/// Statement scores of a baseline technique.
pub fn stmt_scores(dump: &Dump, t: Technique) -> Result<StmtScores, String> {
    match t {
        Technique::Sbfl(f) => sbfl_stmt_scores(dump, f),
        Technique::Cp => cp_stmt_scores(dump),
    }
}
