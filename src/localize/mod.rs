//! `prosecutor localize`: from a dump to a ranked list of suspicious lines.
//!
//! Models are built in two settings (paper §4): **F**, failing traces only, and **F∪P**, failing
//! traces plus passing traces chosen by overlap of executed methods. Each model is an EPG turned
//! into a Bayesian network (noisy-OR CPDs, `infer`), conditioned on the evidence of §3.3. The first
//! inference plans the counterfactual experiments; their outcomes add `cfx` evidence and the
//! models are inferred again. The final ranking is `min(r^{F∪P}, r^F)` with ties broken by F∪P.

pub mod cfx;
pub mod evidence;
pub mod paths;
pub mod ranking;
pub mod spectrum;
pub mod traces;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use crate::dump::{Dump, StmtId};
use crate::epg::Epg;
use crate::error::Error;
use crate::forward::{Premises, TraceView, Vertex};
use crate::infer::{self, BpOptions, Convergence, Cpd, Dag, Marginals, Schedule};
use crate::pipeline::Rules;
use cfx::{CfxOutcome, Experiment, ExperimentResult, RunOptions};
use ranking::{Granularity, Ranked, Score, StmtScores};
pub use traces::{
    failing_traces, select_passing, views, PassingSelection, PASSING_BUDGET_FACTOR,
    PASSING_MIN_BUDGET,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Failing traces only.
    F,
    /// Failing and selected passing traces.
    Fp,
    /// Both, aggregated: min(r^{F∪P}, r^F), ties broken by F∪P.
    Both,
    /// Both, averaged: `Pr(¬l | e) = ½ Pr_F + ½ Pr_F∪P`, Bayesian model averaging over "the
    /// passing runs are informative" (F∪P) or not (F; coincidental correctness), docs/model.md.
    Average,
}

/// Which vertices a successful counterfactual experiment's `cfx` vertex depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CfxModel {
    /// Paper §3.3 verbatim: the flipped value vertex `⟨#@r⟩` and its immediate successors.
    Successors,
    /// The flipped value vertex and the statement vertices of the steps the branch instance
    /// controls (directly, and every step of calls they make): "rerouting control flow around a
    /// buggy statement prevents the failure" (paper §1). Avoids explaining the cfx observation
    /// away by the branch value alone.
    Reroute,
    /// The flipped value vertex alone (the default, docs/model.md): a flip that makes the test
    /// pass is evidence that the branch instance's outcome was wrong, explained by its condition
    /// or the condition's inputs, not by values already known to be wrong downstream of it.
    #[default]
    Branch,
}

/// What an experiment's outcome is evidence of (docs/model.md, "What an outcome is evidence
/// of").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CfxEvidence {
    /// The paper's: a flip that makes the test pass observes its `cfx` vertex incorrect, and a
    /// noisy-OR without leak makes that certain proof that a parent (the flipped value) was
    /// incorrect; a flip that still fails is not evidence.
    #[default]
    Certain,
    /// A pass may be a coincidence (a weak oracle: a test expecting an exception passes on any
    /// path that throws one): the `cfx` vertex gets a second parent, a root "coincidence"
    /// vertex with the model's prior, so a pass is finite evidence (leak `(1 - prior)·(1 - p)`,
    /// likelihood ratio about 7.5 with the default CPD); a flip that still fails is not evidence.
    Coincidence,
    /// As `coincidence`, and a flip that still fails observes its `cfx` vertex correct: had
    /// the flipped value been the cause, the flip would likely have repaired the test.
    Outcomes,
}

/// What a flip that passes *by a thrown exception* is evidence of: the outermost call into the
/// code under analysis that was open at the flip threw, and the test accepted the exception
/// (an expected-exception check; docs/model.md, "A pass by a thrown exception").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CfxThrown {
    /// No evidence: a check that expects an exception passes on any path that throws it, so the
    /// pass says nothing about the flipped branch.
    #[default]
    Ignore,
    /// Evidence like any other pass (`--cfx-evidence`), as the paper reads every pass.
    Evidence,
    /// Finite evidence: the pass may be a coincidence (its `cfx` vertex gets the root
    /// "coincidence" parent of `--cfx-evidence coincidence`, whatever `--cfx-evidence` says of
    /// the other passes), since the check would have passed on any throwing path.
    Coincidence,
}

/// One experiment's evidence: the `cfx` vertex's parents and what was observed.
#[derive(Debug, Clone)]
pub struct CfxObservation {
    pub parents: Vec<Vertex>,
    /// The flipped test passed (`cfx` observed incorrect); else it still failed.
    pub passed: bool,
    /// The `cfx` vertex also has a root "coincidence" parent (a leak).
    pub coincidence: bool,
}

impl CfxObservation {
    /// Vertices [`Model::infer`] adds for it: the `cfx` vertex, and its coincidence root.
    pub fn added_vertices(&self) -> usize {
        1 + usize::from(self.coincidence)
    }
}

/// Where counterfactual outcomes come from.
#[derive(Debug, Clone)]
pub enum CfxSource {
    /// No counterfactual experiments.
    Off,
    /// Run the planned experiments when the dump says how to re-run tests.
    Run(RunOptions),
    /// Read outcomes from a JSON file (a `plan` with outcomes).
    Results(PathBuf),
}

/// The step budget of `localize --max-steps` and `eval --max-steps` unless given: every
/// corpus and BugsInPy evaluation ran with it (docs/evaluation.md), and without a budget a
/// test traced up to the step cap builds a model that takes gigabytes and tens of minutes
/// (QuixBugs `longest_common_subsequence`, docs/performance.md).
pub const DEFAULT_MAX_STEPS: usize = 1_000_000;

#[derive(Debug, Clone)]
pub struct Options {
    pub mode: Mode,
    pub compress: bool,
    /// Maximum number of passing traces in F∪P.
    pub passing: usize,
    pub cpd: Cpd,
    pub bp: BpOptions,
    /// The schedule of the first, undamped run of [`bp_with_retries`] (its retries use
    /// `bp.schedule`).
    pub first_schedule: Schedule,
    pub granularity: Granularity,
    /// Number of counterfactual experiments (k of the paper).
    pub k: usize,
    pub cfx: CfxSource,
    pub cfx_model: CfxModel,
    /// What an experiment's outcome is evidence of.
    pub cfx_evidence: CfxEvidence,
    /// What a pass by a thrown exception is evidence of.
    pub cfx_thrown: CfxThrown,
    /// At most this many of the k experiments flip instances of one statement (0: no limit,
    /// the paper's planner: the k most suspicious instances, whatever their statement).
    pub cfx_per_stmt: usize,
    /// Refuse to build a model over more trace steps than this (after compression); `None` = no
    /// limit. A guard for harnesses: an uncompressed endless loop can hold millions of steps.
    pub max_steps: Option<usize>,
    /// Weight of the spectrum likelihood added to each statement's posterior log-odds
    /// ([`spectrum`]; 0 = the paper's model).
    pub spectrum_weight: f64,
    /// `ε` of the spectrum likelihood: the probability that a test which does not execute the
    /// fault fails anyway ([`spectrum::OTHER_CAUSE`]).
    pub other_cause: f64,
    /// Follow values through the heap by object identity (`heap.facts`, rule R_HEAP).
    pub heap: bool,
    /// Where a failure the program raised itself is observed.
    pub failure_at: evidence::FailureAt,
    /// How F∪P chooses its passing traces.
    pub passing_selection: PassingSelection,
    /// For the HTML report: the propagation paths of this many top entries and each model's
    /// scores go into [`Report::details`] (0: none, nothing computed).
    pub paths: usize,
}

/// Default of [`Options::spectrum_weight`].
pub const SPECTRUM_WEIGHT: f64 = 1.0;

impl Default for Options {
    fn default() -> Self {
        Options {
            mode: Mode::Average,
            compress: true,
            passing: 10,
            cpd: Cpd::default(),
            bp: BpOptions {
                tol: 1e-7,
                max_iter: 2000,
                ..BpOptions::default()
            },
            first_schedule: FIRST_SCHEDULE,
            granularity: Granularity::Line,
            k: 20,
            cfx: CfxSource::Off,
            cfx_model: CfxModel::default(),
            cfx_evidence: CfxEvidence::default(),
            cfx_thrown: CfxThrown::default(),
            cfx_per_stmt: 0,
            max_steps: None,
            spectrum_weight: SPECTRUM_WEIGHT,
            other_cause: spectrum::OTHER_CAUSE,
            heap: true,
            failure_at: evidence::FailureAt::Decision,
            passing_selection: PassingSelection::Coverage,
            paths: 0,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct InferenceRun {
    pub model: &'static str,
    pub phase: &'static str,
    pub vertices: usize,
    pub edges: usize,
    pub iterations: usize,
    pub max_change: f64,
    pub converged: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConvergenceReport {
    /// Largest iteration count of the final inference runs.
    pub iterations: usize,
    /// Largest final max message change of the final inference runs.
    pub max_change: f64,
    /// Whether every inference run converged.
    pub converged: bool,
    pub runs: Vec<InferenceRun>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    pub failing_traces: usize,
    pub passing_traces: usize,
    pub steps: usize,
    pub kept_steps: usize,
    pub seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub mode: Mode,
    pub granularity: Granularity,
    pub ranking: Vec<Ranked>,
    pub convergence: ConvergenceReport,
    pub experiments: Vec<ExperimentResult>,
    pub stats: Stats,
    /// Everything that degraded this result (inference that did not converge, experiments that
    /// gave no information, ...): printed on stderr and in every output format.
    pub warnings: Vec<String>,
    /// With [`Options::paths`] > 0: what the HTML report shows beyond the ranking (not in the
    /// other formats).
    #[serde(skip)]
    pub details: Option<paths::Details>,
}

impl Report {
    /// A ranking that no inference produced (a baseline, the spectrum fallback): nothing to
    /// converge, no experiments, every trace counted with all its steps.
    pub fn without_inference(
        dump: &Dump,
        mode: Mode,
        granularity: Granularity,
        ranking: Vec<Ranked>,
        warnings: Vec<String>,
        start: Instant,
    ) -> Report {
        let failing = dump
            .traces
            .iter()
            .filter(|t| dump.failure_step(t).is_some())
            .count();
        let steps = dump.traces.iter().map(|t| t.steps.len()).sum();
        let stats = Stats {
            failing_traces: failing,
            passing_traces: dump.traces.len() - failing,
            steps,
            kept_steps: steps,
            seconds: start.elapsed().as_secs_f64(),
        };
        Report::ranking_only(mode, granularity, ranking, warnings, stats)
    }

    /// A report of a ranking alone (no inference ran, no experiments): a baseline on a dump or
    /// on a spectrum another tool collected.
    pub fn ranking_only(
        mode: Mode,
        granularity: Granularity,
        ranking: Vec<Ranked>,
        warnings: Vec<String>,
        stats: Stats,
    ) -> Report {
        Report {
            mode,
            granularity,
            ranking,
            convergence: ConvergenceReport {
                iterations: 0,
                max_change: 0.0,
                converged: true,
                runs: Vec::new(),
            },
            experiments: Vec::new(),
            stats,
            warnings,
            details: None,
        }
    }
}

/// One Bayesian network: an EPG of some traces plus its evidence.
pub struct Model {
    pub name: &'static str,
    pub premises: Premises,
    pub epg: Epg,
    pub pairs: Vec<(u32, u32)>,
    pub evidence: Vec<Option<bool>>,
    pub index: HashMap<Vertex, u32>,
}

impl Model {
    pub fn build(
        name: &'static str,
        dump: &Dump,
        rules: &Rules,
        views: &[TraceView],
        heap: bool,
        at: evidence::FailureAt,
    ) -> Result<Model, Error> {
        let (epg, premises) = crate::pipeline::derive_with(dump, rules, views, heap)?;
        let evidence = evidence::evidence(dump, &premises, at);
        let pairs = epg.pairs();
        let index = premises
            .vertices
            .iter()
            .enumerate()
            .map(|(i, v)| (*v, i as u32))
            .collect();
        Ok(Model {
            name,
            premises,
            epg,
            pairs,
            evidence,
            index,
        })
    }

    /// Infers marginals with `cfx` virtual vertices added (each: its parents, observed
    /// incorrect for a pass and correct for a failure; with a root "coincidence" parent of its
    /// own when asked).
    pub fn infer(
        &self,
        dump: &Dump,
        cfx: &[CfxObservation],
        cpd: &Cpd,
        bp: &BpOptions,
        first: Schedule,
    ) -> Result<Marginals, Error> {
        let n = self.premises.vertices.len();
        let mut pairs = self.pairs.clone();
        let mut evidence = self.evidence.clone();
        for obs in cfx {
            // the cfx vertex comes last (after its coincidence root)
            let c = (evidence.len() + obs.added_vertices() - 1) as u32;
            if obs.coincidence {
                pairs.push((c - 1, c));
                evidence.push(None);
            }
            evidence.push(Some(!obs.passed));
            for v in &obs.parents {
                if let Some(&id) = self.index.get(v) {
                    pairs.push((id, c));
                }
            }
        }
        let dag = Dag::from_edges(evidence.len(), &pairs)
            .map_err(|e| Error::Other(format!("{}: {e}", self.name)))?;
        let result = bp_with_retries(|o| infer::loopy_bp(&dag, cpd, &evidence, o), bp, first);
        result.map_err(|e| match e {
            infer::InferError::ImpossibleEvidence { vertex: Some(v) } if (v as usize) < n => {
                self.contradiction(dump, &dag, cpd, &evidence, v)
            }
            e => Error::Other(format!("inference on {}: {e}", self.name)),
        })
    }

    /// The error for evidence of probability zero that BP noticed at vertex `v`. BP may notice
    /// it at a statement (no trace): the failure that nothing can explain is blamed instead, so
    /// that `localize` can leave its trace out.
    fn contradiction(
        &self,
        dump: &Dump,
        dag: &Dag,
        cpd: &Cpd,
        evidence: &[Option<bool>],
        v: u32,
    ) -> Error {
        let n = self.premises.vertices.len();
        let v = match vertex_trace(&self.premises.vertices[v as usize]) {
            Some(_) => v,
            None => infer::unexplained_failure(dag, cpd, evidence)
                .filter(|&u| (u as usize) < n)
                .unwrap_or(v),
        };
        Error::Contradiction {
            trace: vertex_trace(&self.premises.vertices[v as usize]).unwrap_or(usize::MAX),
            message: format!(
                "the evidence is contradictory at {} (observed incorrect, but everything it depends \
                 on is known correct: the failure point depends only on test code?)",
                self.epg.vertex_name(dump, v)
            ),
        }
    }

    /// `Pr(¬l | e)` per executed statement; with `spectrum` (log-likelihood ratios and their
    /// weight), the log-odds gain `w · ln(L(l) / max L)` ([`spectrum`]).
    pub fn stmt_scores(
        &self,
        m: &Marginals,
        spectrum: Option<(&HashMap<StmtId, f64>, f64)>,
    ) -> StmtScores {
        self.premises
            .vertices
            .iter()
            .enumerate()
            .filter_map(|(i, v)| match v {
                Vertex::Stmt(s) => {
                    let shift = spectrum
                        .and_then(|(ll, w)| ll.get(s).map(|l| w * l))
                        .unwrap_or(0.0);
                    let l = m.log_odds_incorrect[i];
                    Some((
                        *s,
                        if shift == 0.0 {
                            Score::probability(m.p_incorrect[i], l)
                        } else {
                            Score::probability(infer::sigmoid(l + shift), l + shift)
                        },
                    ))
                }
                _ => None,
            })
            .collect()
    }

    fn run_info(&self, phase: &'static str, c: &Convergence, extra: usize) -> InferenceRun {
        InferenceRun {
            model: self.name,
            phase,
            vertices: self.premises.vertices.len() + extra,
            edges: self.pairs.len(),
            iterations: c.iterations,
            max_change: c.max_change,
            converged: c.converged,
        }
    }
}

/// Loopy BP as `localize` runs it (docs/model.md, "Inference"). Undamped BP can oscillate on
/// EPGs whose statement vertices are shared by many loop iterations or recursive calls: an
/// undamped run that has not converged after [`UNDAMPED_MAX_ITER`] iterations is retried with
/// damping [`RETRY_DAMPING`] (same fixed points), and if its messages still wander (issue 20
/// §6), with the double loop, which settles on one of BP's own fixed points
/// (`src/infer/double_loop.rs`). The first retry that converges is returned, else the run
/// with the smallest final change; the reported convergence is that of the returned marginals.
/// The undamped run uses the schedule `first` ([`FIRST_SCHEDULE`] unless `--schedule` is
/// given), the retries `bp.schedule`. Explicit `--damping` or `--double-loop` runs exactly as
/// asked.
fn bp_with_retries(
    run: impl Fn(&BpOptions) -> Result<Marginals, infer::InferError>,
    bp: &BpOptions,
    first: Schedule,
) -> Result<Marginals, infer::InferError> {
    if bp.damping != 0.0 || bp.double_loop {
        return run(bp);
    }
    let mut best = run(&BpOptions {
        max_iter: bp.max_iter.min(UNDAMPED_MAX_ITER),
        schedule: first,
        stop_swinging: true,
        ..*bp
    })?;
    let retries = [
        BpOptions {
            damping: RETRY_DAMPING,
            max_iter: bp.max_iter.min(DAMPED_MAX_ITER),
            ..*bp
        },
        BpOptions {
            double_loop: true,
            max_iter: bp.max_iter.saturating_mul(DOUBLE_LOOP_ITER_FACTOR),
            tol: bp.tol.max(DOUBLE_LOOP_TOL),
            ..*bp
        },
    ];
    for o in retries {
        if best.convergence.converged {
            break;
        }
        match run(&o) {
            Ok(m)
                if m.convergence.converged
                    || m.convergence.max_change < best.convergence.max_change =>
            {
                best = m
            }
            _ => {}
        }
    }
    Ok(best)
}

/// The double-loop retry stops once a sweep's messages and anchors move less than this (or
/// `--tol`, if larger): its outer loop converges linearly, and going on from 1e-5 to 1e-7 took
/// more than half its sweeps (corpus `parse-001`: 1,601 of 3,785). On 146 stored dumps of four
/// corpora with their experiments' outcomes replayed no ranking's top 10 moved; without
/// experiments one of 153 did (Defects4J Lang-9, fault 86 → 89; docs/performance.md, session 21).
pub const DOUBLE_LOOP_TOL: f64 = 1e-5;
/// The schedule of the first, undamped run: the block schedule (`Schedule::Parallel`) sweeps on
/// every core and, where undamped BP converges, converged in fewer sweeps than the sequential
/// one (QuixBugs `levenshtein`'s F: 33 against 109). The retries keep the sequential schedule:
/// with the block schedule's cross-block messages one sweep late, damped BP wandered on QuixBugs
/// `longest_common_subsequence`'s F∪P (max change 1e-3 after 4,000 sweeps) where the sequential
/// one converges. On 181 stored dumps of five corpora no ranking's top 10 moved
/// (docs/performance.md, session 24).
pub const FIRST_SCHEDULE: Schedule = Schedule::Parallel;
/// Damping of the retry when undamped belief propagation does not converge.
pub const RETRY_DAMPING: f64 = 0.5;
/// Iterations after which an undamped run that has not converged is retried with damping.
pub const UNDAMPED_MAX_ITER: usize = 200;
/// Iterations after which a damped retry that has not converged gives way to the double loop:
/// damped BP converged within 410 sweeps on every model of five corpora where it converged at
/// all (median 41; docs/performance.md, session 20), and where it did not, its messages still
/// wandered after 2,000 sweeps, time the double loop then had to make up for.
pub const DAMPED_MAX_ITER: usize = 500;
/// The double-loop retry (when damped BP does not converge either) may take this many times
/// `--max-iter` sweeps: its outer loop converges linearly (1,500–1,800 sweeps on the EPGs where
/// damped BP wanders, docs/model.md); where it does not converge (QuixBugs
/// `longest_common_subsequence`, 111,643 vertices) every sweep is time spent for nothing.
pub const DOUBLE_LOOP_ITER_FACTOR: usize = 2;

/// The vertices a successful experiment's `cfx` vertex depends on (see [`CfxModel`]).
fn cfx_parents(model: &Model, e: &Experiment, dump: &Dump, how: CfxModel) -> Vec<Vertex> {
    let Some(t) = dump.traces.iter().position(|t| t.id == e.trace) else {
        return Vec::new();
    };
    let v = Vertex::Value {
        trace: t as u32,
        step: e.step,
    };
    let Some(&id) = model.index.get(&v) else {
        return Vec::new();
    };
    let mut out = vec![v];
    match how {
        CfxModel::Branch => {}
        CfxModel::Successors => {
            for &(a, b) in &model.pairs {
                if a == id {
                    out.push(model.premises.vertices[b as usize]);
                }
            }
        }
        CfxModel::Reroute => {
            // global step id of the branch instance
            let steps = &model.premises.steps;
            let Some(r) = steps
                .iter()
                .position(|s| s.trace == t as u32 && s.index == e.step)
            else {
                return out;
            };
            let r = r as u32;
            let lastctrl = model.premises.rel("lastctrl");
            let mut controlled: std::collections::HashSet<u32> = lastctrl
                .rows
                .chunks_exact(2)
                .filter(|c| c[1] == r)
                .map(|c| c[0])
                .collect();
            // steps of frames entered from controlled call steps (transitively)
            let tr = &dump.traces[t];
            let mut frames: std::collections::HashSet<u32> = std::collections::HashSet::new();
            let first = r as usize + 1;
            // this trace's kept steps: contiguous, in trace order (a binary search finds the
            // global id of a trace step; a backward scan per step was quadratic in deep recursion)
            let lo = steps[..=r as usize]
                .iter()
                .rposition(|s| s.trace != t as u32)
                .map_or(0, |k| k + 1);
            let hi = first
                + steps[first..]
                    .iter()
                    .position(|s| s.trace != t as u32)
                    .unwrap_or(steps.len() - first);
            let global = |index: u32| {
                steps[lo..hi]
                    .binary_search_by_key(&index, |s| s.index)
                    .ok()
                    .map(|k| (lo + k) as u32)
            };
            for (g, s) in steps.iter().enumerate().take(hi).skip(first) {
                let f = tr.steps[s.index as usize].frame;
                if let Some(c) = tr.frames[f as usize].call_step {
                    let cg = global(c).filter(|&cg| (cg as usize) < g);
                    if frames.contains(&f) || cg.is_some_and(|cg| controlled.contains(&cg)) {
                        frames.insert(f);
                        controlled.insert(g as u32);
                    }
                }
            }
            let mut stmts: Vec<u32> = controlled
                .iter()
                .map(|&g| tr.steps[steps[g as usize].index as usize].stmt)
                .collect();
            stmts.sort_unstable();
            stmts.dedup();
            out.extend(stmts.into_iter().map(Vertex::Stmt));
        }
    }
    out
}

/// Plans the experiments from a fresh inference on the primary model (F, or F∪P in mode fp).
pub fn plan(dump: &Dump, rules: &Rules, o: &Options) -> Result<Vec<Experiment>, Error> {
    let failing = failing_traces(dump);
    if failing.is_empty() {
        return Err(Error::Other(format!(
            "{}: no failing test has a trace: nothing to localize",
            dump.dir.display()
        )));
    }
    let fit = traces::fit(dump, &failing, o, |kept| match o.mode {
        Mode::Fp => select_passing(dump, kept, o.passing, o.passing_selection),
        _ => Vec::new(),
    });
    if fit.failing.is_empty() {
        return Ok(Vec::new());
    }
    let traces: Vec<usize> = fit.failing.iter().chain(&fit.passing).copied().collect();
    let model = Model::build("F", dump, rules, &fit.views(&traces), o.heap, o.failure_at)?;
    let m = model.infer(dump, &[], &o.cpd, &o.bp, o.first_schedule)?;
    Ok(cfx::plan(
        dump,
        &model.premises.vertices,
        &m.p_incorrect,
        o.k,
        o.cfx_per_stmt,
    ))
}

/// The trace a value vertex belongs to (`None` for statement vertices).
fn vertex_trace(v: &Vertex) -> Option<usize> {
    match *v {
        Vertex::Stmt(_) => None,
        Vertex::Def { trace, .. }
        | Vertex::Value { trace, .. }
        | Vertex::Arg { trace, .. }
        | Vertex::This { trace, .. } => Some(trace as usize),
    }
}

/// Localizes with every failing trace; a failing trace whose failure the model cannot connect
/// to code under test (contradictory evidence) is left out with a warning naming its test, and
/// when no failing trace is left the ranking falls back to the spectrum likelihood alone
/// ([`spectrum`]), so that `localize` never answers with less than the spectrum of the dump.
pub fn localize(dump: &Dump, rules: &Rules, o: &Options) -> Result<Report, Error> {
    let start = Instant::now();
    let mut excluded: Vec<usize> = Vec::new();
    let mut warnings = dump_warnings(dump);
    loop {
        match localize_excluding(dump, rules, o, &excluded) {
            Ok(mut r) => {
                warnings.append(&mut r.warnings);
                r.warnings = warnings;
                return Ok(r);
            }
            Err(Error::Contradiction { trace, message })
                if trace < dump.traces.len() && !excluded.contains(&trace) =>
            {
                let test = &dump.manifest.tests[dump.traces[trace].test].id;
                warnings.push(format!(
                    "failing test {test} left out of the model: {message}"
                ));
                excluded.push(trace);
                let left = (0..dump.traces.len())
                    .filter(|t| !excluded.contains(t))
                    .any(|t| dump.failure_step(&dump.traces[t]).is_some());
                if !left {
                    warnings.push(
                        "no failing trace could be connected to code under test: the ranking is \
                         the spectrum likelihood alone (docs/model.md)"
                            .to_owned(),
                    );
                    return Ok(spectrum_report(dump, o, warnings, start));
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// What the front-end reported when it wrote the dump (`[notes] warnings`: untraced tests, test
/// timeouts, truncated traces, files treated as test code), so that every output carries them.
fn dump_warnings(dump: &Dump) -> Vec<String> {
    match dump.manifest.notes.get("warnings") {
        Some(toml::Value::Array(a)) => a
            .iter()
            .filter_map(|w| w.as_str())
            .map(|w| format!("trace: {w}"))
            .collect(),
        _ => Vec::new(),
    }
}

/// The ranking by the spectrum likelihood alone (the fallback of [`localize`]).
fn spectrum_report(dump: &Dump, o: &Options, warnings: Vec<String>, start: Instant) -> Report {
    let scores: StmtScores = spectrum::log_likelihoods(dump, o.other_cause)
        .into_iter()
        .map(|(s, l)| {
            (
                s,
                Score {
                    value: l.exp(),
                    tail: l,
                },
            )
        })
        .collect();
    Report::without_inference(
        dump,
        o.mode,
        o.granularity,
        ranking::rank(dump, &scores, o.granularity),
        warnings,
        start,
    )
}

/// Issue 20 §2: a failing test whose control run passes (it fails only in the traced session,
/// only under tracing, or is flaky) is left out of the model, with a warning naming it, when
/// another failing trace is left; the localization is then redone without it, reusing the
/// experiments already run. `None`: nothing to leave out.
fn without_unreproduced(
    dump: &Dump,
    rules: &Rules,
    o: &Options,
    excluded: &[usize],
    failing: &[usize],
    experiments: &[ExperimentResult],
) -> Option<Result<Report, Error>> {
    let tests = cfx::not_reproduced(experiments);
    let id = |t: usize| dump.manifest.tests[dump.traces[t].test].id.as_str();
    let drop: Vec<usize> = failing
        .iter()
        .copied()
        .filter(|&t| tests.contains(&id(t)))
        .collect();
    if drop.is_empty() || drop.len() == failing.len() {
        return None;
    }
    let mut o2 = o.clone();
    if let CfxSource::Run(ro) = &mut o2.cfx {
        ro.known.extend(experiments.iter().cloned());
    }
    let all: Vec<usize> = excluded.iter().chain(&drop).copied().collect();
    Some(localize_excluding(dump, rules, &o2, &all).map(|mut r| {
        let notes = drop.iter().map(|&t| {
            format!(
                "failing test {} left out of the model: it {} (it fails only in the traced \
                 session, only under tracing, or is flaky): its experiments were void",
                id(t),
                cfx::NOT_REPRODUCED
            )
        });
        r.warnings.splice(0..0, notes);
        r
    }))
}

/// A model's final marginals, the vertices its experiments added and the run's phase.
type FinalRun = (Marginals, usize, &'static str);

/// The models of a localization, their first marginals (`None`: deferred, see
/// [`infer_initial`]) and those runs' convergence.
type Initial = (Vec<Model>, Vec<Option<Marginals>>, Vec<InferenceRun>);

/// Builds the models of `specs` (name, traces) side by side and runs the first inference: on
/// the first model, whose marginals plan the experiments, and without experiments on every
/// model. With experiments the other models' first inference waits for their outcomes: when
/// one passes (or fails, as evidence), only the inference with them is needed.
fn infer_initial(
    dump: &Dump,
    rules: &Rules,
    o: &Options,
    specs: &[(&'static str, &[usize])],
    fit: &traces::Fitted,
) -> Result<Initial, Error> {
    let built: Vec<Result<Model, Error>> = specs
        .par_iter()
        .map(|&(name, traces)| {
            Model::build(name, dump, rules, &fit.views(traces), o.heap, o.failure_at)
        })
        .collect();
    let models: Vec<Model> = built.into_iter().collect::<Result<_, _>>()?;
    let now = |i: usize| i == 0 || matches!(o.cfx, CfxSource::Off);
    let inferred: Vec<Option<Result<Marginals, Error>>> = models
        .par_iter()
        .enumerate()
        .map(|(i, m)| now(i).then(|| m.infer(dump, &[], &o.cpd, &o.bp, o.first_schedule)))
        .collect();
    let mut runs = Vec::new();
    let mut first: Vec<Option<Marginals>> = Vec::new();
    for (m, marg) in models.iter().zip(inferred) {
        let marg = marg.transpose()?;
        if let Some(marg) = &marg {
            runs.push(m.run_info("initial", &marg.convergence, 0));
        }
        first.push(marg);
    }
    Ok((models, first, runs))
}

/// The experiments planned from the first model's marginals: run (through `started`, the
/// runner [`cfx::prestart`] started, if any), or read from a results file, or none.
fn run_experiments(
    dump: &Dump,
    o: &Options,
    primary: (&Model, &Marginals),
    started: Option<cfx::Started<'_>>,
) -> Result<Vec<ExperimentResult>, Error> {
    let plan = || {
        cfx::plan(
            dump,
            &primary.0.premises.vertices,
            &primary.1.p_incorrect,
            o.k,
            o.cfx_per_stmt,
        )
    };
    match &o.cfx {
        CfxSource::Off => Ok(Vec::new()),
        CfxSource::Run(ro) => {
            let plan = plan();
            if dump.manifest.rerun.is_some() && !plan.is_empty() {
                cfx::run_missing(dump, &plan, ro, started).map_err(Error::Other)
            } else {
                Ok(Vec::new())
            }
        }
        CfxSource::Results(path) => {
            let plan = plan();
            let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
                path: path.display().to_string(),
                source: e,
            })?;
            let results: Vec<ExperimentResult> = serde_json::from_str(&text).map_err(|e| {
                Error::Other(format!(
                    "{}:{}: not a list of experiment results: {e}",
                    path.display(),
                    e.line()
                ))
            })?;
            cfx::match_results(&plan, results, path).map_err(Error::Other)
        }
    }
}

fn localize_excluding(
    dump: &Dump,
    rules: &Rules,
    o: &Options,
    excluded: &[usize],
) -> Result<Report, Error> {
    let start = Instant::now();
    let mut failing = failing_traces(dump);
    failing.retain(|t| !excluded.contains(t));
    if failing.is_empty() {
        return Err(Error::Other(format!(
            "{}: no failing test has a trace: nothing to localize",
            dump.dir.display()
        )));
    }
    let fit = traces::fit(dump, &failing, o, |kept| {
        select_passing(dump, kept, o.passing, o.passing_selection)
    });
    if fit.failing.is_empty() {
        let mut w = fit.warnings;
        w.push(format!(
            "no failing trace fits --max-steps {}: the ranking is the spectrum likelihood alone \
             (docs/model.md)",
            o.max_steps.unwrap_or(0)
        ));
        return Ok(spectrum_report(dump, o, w, start));
    }
    let (failing, passing) = (fit.failing.clone(), fit.passing.clone());
    let fp_traces: Vec<usize> = failing.iter().chain(&passing).copied().collect();
    // The models (F, F∪P) are independent: they are built and inferred side by side.
    let mut specs: Vec<(&'static str, &[usize])> = Vec::new();
    if o.mode != Mode::Fp {
        specs.push(("F", &failing));
    }
    if o.mode != Mode::F {
        specs.push(("F∪P", &fp_traces));
    }
    let (models, mut first, mut runs, experiments) = std::thread::scope(|s| {
        // the runner of the re-runs starts while the models are built and inferred
        let started = match &o.cfx {
            CfxSource::Run(ro) => Some(s.spawn(move || cfx::prestart(dump, ro))),
            _ => None,
        };
        let initial = infer_initial(dump, rules, o, &specs, &fit);
        let started =
            started.and_then(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        let (models, first, runs) = initial?;
        let primary = first[0]
            .as_ref()
            .expect("the first model is inferred at once");
        let experiments = run_experiments(dump, o, (&models[0], primary), started)?;
        Ok::<_, Error>((models, first, runs, experiments))
    })?;
    // steps kept after compression, in the widest model (F∪P, or F alone)
    let kept = models.last().map_or(0, |m| m.premises.steps.len());
    if let Some(r) = without_unreproduced(dump, rules, o, excluded, &failing, &experiments) {
        return r;
    }
    let observed: Vec<(&Experiment, Observed)> = experiments
        .iter()
        .filter_map(|r| evidence_of(r, o).map(|seen| (&r.experiment, seen)))
        .collect();
    let likelihoods =
        (o.spectrum_weight != 0.0).then(|| spectrum::log_likelihoods(dump, o.other_cause));
    let mut final_runs = Vec::new();
    // each model's final inference: with the experiments' outcomes, or the first one (deferred
    // until now for all but the first model when experiments were planned)
    let with_cfx: Vec<Option<Result<FinalRun, Error>>> = models
        .par_iter()
        .enumerate()
        .map(|(i, m)| {
            if observed.is_empty() {
                return first[i].is_none().then(|| {
                    m.infer(dump, &[], &o.cpd, &o.bp, o.first_schedule)
                        .map(|g| (g, 0, "initial"))
                });
            }
            let obs: Vec<CfxObservation> = observed
                .iter()
                .map(|&(e, seen)| CfxObservation {
                    parents: cfx_parents(m, e, dump, o.cfx_model),
                    passed: seen.passed,
                    coincidence: seen.coincidence,
                })
                .collect();
            let added = obs.iter().map(CfxObservation::added_vertices).sum();
            Some(
                m.infer(dump, &obs, &o.cpd, &o.bp, o.first_schedule)
                    .map(|g| (g, added, "with counterfactuals")),
            )
        })
        .collect();
    let mut scores: Vec<StmtScores> = Vec::new();
    let mut beliefs: Vec<Vec<f64>> = Vec::new();
    for ((i, m), again) in models.iter().enumerate().zip(with_cfx) {
        let marg = match again {
            None => first[i].take().expect("inferred first, or now"),
            Some(r) => {
                let (marg, n, phase) = r?;
                runs.push(m.run_info(phase, &marg.convergence, n));
                marg
            }
        };
        final_runs.push(marg.convergence);
        let spec = likelihoods.as_ref().map(|ll| (ll, o.spectrum_weight));
        scores.push(m.stmt_scores(&marg, spec));
        if o.paths > 0 && i == 0 {
            beliefs.push(marg.p_incorrect);
        }
    }
    let ranking = match o.mode {
        Mode::Both => {
            let r: Vec<Vec<Ranked>> = scores
                .iter()
                .map(|s| ranking::rank(dump, s, o.granularity))
                .collect();
            ranking::aggregate(&r[0], &r[1], o.granularity)
        }
        Mode::Average => ranking::rank(
            dump,
            &ranking::average(&scores[0], &scores[1]),
            o.granularity,
        ),
        _ => ranking::rank(dump, &scores[0], o.granularity),
    };
    let convergence = ConvergenceReport {
        iterations: final_runs.iter().map(|c| c.iterations).max().unwrap_or(0),
        max_change: final_runs.iter().map(|c| c.max_change).fold(0.0, f64::max),
        converged: runs.iter().all(|r| r.converged),
        runs,
    };
    let details = beliefs.first().map(|b| paths::Details {
        paths: paths::paths(dump, &models[0], b, &ranking, o.paths),
        model_scores: models
            .iter()
            .zip(&scores)
            .map(|(m, s)| (m.name, paths::by_id(dump, s)))
            .collect(),
    });
    let steps = fp_traces.iter().map(|&t| dump.traces[t].steps.len()).sum();
    let mut warnings = fit.warnings;
    warnings.extend(report_warnings(&convergence, &experiments));
    warnings.extend(thrown_passes(&experiments, o.cfx_thrown));
    Ok(Report {
        mode: o.mode,
        granularity: o.granularity,
        ranking,
        convergence,
        experiments,
        stats: Stats {
            failing_traces: failing.len(),
            passing_traces: passing.len(),
            steps,
            kept_steps: kept,
            seconds: start.elapsed().as_secs_f64(),
        },
        warnings,
        details,
    })
}

/// What an experiment's outcome observes (`evidence_of`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Observed {
    /// The flipped test passed; else it still failed.
    passed: bool,
    /// The observation may be a coincidence (finite evidence, `CfxObservation::coincidence`).
    coincidence: bool,
}

/// What an experiment's outcome observes: a pass, a flip that still failed (only with
/// `--cfx-evidence outcomes`), or `None`, no evidence (a void, timed-out or crashed run, a failed
/// flip under the other settings, a pass by a thrown exception under `--cfx-thrown ignore`).
fn evidence_of(r: &ExperimentResult, o: &Options) -> Option<Observed> {
    let seen = |passed, coincidence| {
        Some(Observed {
            passed,
            coincidence,
        })
    };
    let coincidence = o.cfx_evidence != CfxEvidence::Certain;
    match r.outcome {
        CfxOutcome::Pass if r.thrown => match o.cfx_thrown {
            CfxThrown::Ignore => None,
            CfxThrown::Evidence => seen(true, coincidence),
            CfxThrown::Coincidence => seen(true, true),
        },
        CfxOutcome::Pass => seen(true, coincidence),
        CfxOutcome::Fail if o.cfx_evidence == CfxEvidence::Outcomes => seen(false, coincidence),
        _ => None,
    }
}

/// How many passing experiments passed by a thrown exception the test accepted, and what was
/// made of them; `None` when there were none.
fn thrown_passes(experiments: &[ExperimentResult], how: CfxThrown) -> Option<String> {
    let n = experiments
        .iter()
        .filter(|r| r.outcome == CfxOutcome::Pass && r.thrown)
        .count();
    let passes = experiments
        .iter()
        .filter(|r| r.outcome == CfxOutcome::Pass)
        .count();
    let made = match how {
        CfxThrown::Ignore => {
            "not counted as evidence: an expected-exception check passes on any \
                              path that throws (--cfx-thrown evidence counts them)"
        }
        CfxThrown::Evidence => "counted as evidence (--cfx-thrown evidence)",
        CfxThrown::Coincidence => {
            "counted as finite evidence, a pass that may be a coincidence (--cfx-thrown \
             coincidence)"
        }
    };
    (n > 0).then(|| {
        format!(
            "{n} of {passes} passing counterfactual experiments passed by an exception the test \
             accepted (the call that held the flip threw it): {made}"
        )
    })
}

/// What degraded a localization: inference runs that did not converge, experiments that gave
/// no information.
fn report_warnings(c: &ConvergenceReport, experiments: &[ExperimentResult]) -> Vec<String> {
    let mut out: Vec<String> = c
        .runs
        .iter()
        .filter(|r| !r.converged)
        .map(|r| {
            format!(
                "inference on {} ({}) did not converge: max change {:.1e} after {} iterations; \
                 its scores are approximate",
                r.model, r.phase, r.max_change, r.iterations
            )
        })
        .collect();
    out.extend(cfx::degraded_summary(experiments));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfx::tests::result;

    /// A pass by a thrown exception is no evidence by default and a pass with `--cfx-thrown
    /// evidence`; a failed flip is evidence only with `--cfx-evidence outcomes`, thrown or not.
    #[test]
    fn what_an_outcome_observes() {
        let thrown = |outcome| ExperimentResult {
            thrown: true,
            ..result(outcome, "")
        };
        let d = Options::default();
        let counted = Options {
            cfx_thrown: CfxThrown::Evidence,
            ..Options::default()
        };
        let outcomes = Options {
            cfx_evidence: CfxEvidence::Outcomes,
            ..Options::default()
        };
        let weak = Options {
            cfx_thrown: CfxThrown::Coincidence,
            ..Options::default()
        };
        let seen = |passed, coincidence| {
            Some(Observed {
                passed,
                coincidence,
            })
        };
        let pass = result(CfxOutcome::Pass, "");
        assert_eq!(evidence_of(&pass, &d), seen(true, false));
        assert_eq!(evidence_of(&thrown(CfxOutcome::Pass), &d), None);
        assert_eq!(
            evidence_of(&thrown(CfxOutcome::Pass), &counted),
            seen(true, false)
        );
        assert_eq!(evidence_of(&thrown(CfxOutcome::Pass), &outcomes), None);
        // only the thrown pass is finite evidence under `--cfx-thrown coincidence`
        assert_eq!(
            evidence_of(&thrown(CfxOutcome::Pass), &weak),
            seen(true, true)
        );
        assert_eq!(evidence_of(&pass, &weak), seen(true, false));
        assert_eq!(evidence_of(&pass, &outcomes), seen(true, true));
        assert_eq!(evidence_of(&result(CfxOutcome::Fail, ""), &d), None);
        assert_eq!(
            evidence_of(&thrown(CfxOutcome::Fail), &outcomes),
            seen(false, true)
        );
        for o in [CfxOutcome::Void, CfxOutcome::Timeout, CfxOutcome::Crash] {
            assert_eq!(evidence_of(&result(o, ""), &outcomes), None);
        }
    }
}
