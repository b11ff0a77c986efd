//! Which traces a model is built from: the failing traces, the passing traces chosen for F∪P
//! ([`select_passing`]), and the subset of them that fits the step budget ([`fit`]).

use std::collections::BTreeSet;

use serde::Serialize;

use super::Options;
use crate::dump::{Dump, Role, StmtId};
use crate::forward::TraceView;

/// How F∪P chooses its passing traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PassingSelection {
    /// Paper §4: most app methods shared with the failing traces first (ties: shorter).
    Methods,
    /// Greedy cover of the statements the failing traces executed: each pick adds the most
    /// not-yet-covered statements (ties: shorter trace), then the most shared statements;
    /// traces longer than the budget are skipped (docs/model.md, "Passing traces").
    Coverage,
}

/// A passing trace longer than this many times the failing traces' steps (and than
/// [`PASSING_MIN_BUDGET`]) is not used in F∪P by the coverage selection.
pub const PASSING_BUDGET_FACTOR: usize = 2;
pub const PASSING_MIN_BUDGET: usize = 50_000;

/// The failing traces of the dump (those with a failure step), in trace order.
pub fn failing_traces(dump: &Dump) -> Vec<usize> {
    (0..dump.traces.len())
        .filter(|&t| dump.failure_step(&dump.traces[t]).is_some())
        .collect()
}

/// F∪P's passing traces (at most `passing`) for the failing traces `failing`: those the model
/// holds, so that a failing trace left out of it (over the step budget) neither widens the
/// passing traces' length budget nor asks for its statements to be covered.
pub fn select_passing(
    dump: &Dump,
    failing: &[usize],
    passing: usize,
    how: PassingSelection,
) -> Vec<usize> {
    let candidates: Vec<usize> = (0..dump.traces.len())
        .filter(|&t| dump.failure_step(&dump.traces[t]).is_none())
        .collect();
    match how {
        PassingSelection::Methods => by_methods(dump, failing, candidates, passing),
        PassingSelection::Coverage => by_coverage(dump, failing, candidates, passing),
    }
}

fn by_methods(dump: &Dump, failing: &[usize], cands: Vec<usize>, passing: usize) -> Vec<usize> {
    let methods = |t: usize| -> BTreeSet<u32> {
        dump.traces[t]
            .frames
            .iter()
            .map(|f| f.method)
            .filter(|&m| dump.methods[m as usize].role == Role::App)
            .collect()
    };
    let fm: BTreeSet<u32> = failing.iter().flat_map(|&t| methods(t)).collect();
    let mut cands: Vec<(usize, usize, usize)> = cands
        .into_iter()
        .map(|t| {
            (
                methods(t).intersection(&fm).count(),
                dump.traces[t].steps.len(),
                t,
            )
        })
        .filter(|c| c.0 > 0)
        .collect();
    cands.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    cands.into_iter().take(passing).map(|c| c.2).collect()
}

fn by_coverage(dump: &Dump, failing: &[usize], cands: Vec<usize>, passing: usize) -> Vec<usize> {
    let app_stmts = |t: usize| -> BTreeSet<StmtId> {
        dump.traces[t]
            .steps
            .iter()
            .map(|s| s.stmt)
            .filter(|&s| dump.methods[dump.stmts[s as usize].method as usize].role == Role::App)
            .collect()
    };
    let target: BTreeSet<StmtId> = failing.iter().flat_map(|&t| app_stmts(t)).collect();
    let failing_steps: usize = failing.iter().map(|&t| dump.traces[t].steps.len()).sum();
    let budget = (PASSING_BUDGET_FACTOR * failing_steps).max(PASSING_MIN_BUDGET);
    // (shared statements, steps, trace)
    let mut pool: Vec<(BTreeSet<StmtId>, usize, usize)> = cands
        .into_iter()
        .filter(|&t| dump.traces[t].steps.len() <= budget)
        .map(|t| {
            let shared: BTreeSet<StmtId> = app_stmts(t).intersection(&target).copied().collect();
            (shared, dump.traces[t].steps.len(), t)
        })
        .filter(|c| !c.0.is_empty())
        .collect();
    let mut covered: BTreeSet<StmtId> = BTreeSet::new();
    let mut out = Vec::new();
    while out.len() < passing && !pool.is_empty() {
        let key = |c: &(BTreeSet<StmtId>, usize, usize)| {
            let new = c.0.difference(&covered).count();
            (
                std::cmp::Reverse(new),
                std::cmp::Reverse(c.0.len()),
                c.1,
                c.2,
            )
        };
        let best = (0..pool.len()).min_by_key(|&i| key(&pool[i])).unwrap();
        let (shared, _, t) = pool.swap_remove(best);
        covered.extend(shared);
        out.push(t);
    }
    out
}

/// Trace views, compressed or not.
pub fn views(dump: &Dump, traces: &[usize], compress: bool) -> Vec<TraceView> {
    traces
        .iter()
        .map(|&t| {
            let tr = &dump.traces[t];
            TraceView {
                trace: t,
                keep: compress.then(|| {
                    crate::compress::compress(dump, tr, tr.steps.len(), dump.failure_step(tr))
                }),
            }
        })
        .collect()
}

/// The traces a localization builds its models from, after [`fit`].
pub struct Fitted {
    /// Failing traces in the models (F and F∪P).
    pub failing: Vec<usize>,
    /// Passing traces in F∪P.
    pub passing: Vec<usize>,
    /// The view of every trace above, by trace index.
    views: Vec<(usize, TraceView)>,
    /// What was left out to fit the budget (empty when everything fits).
    pub warnings: Vec<String>,
}

impl Fitted {
    /// The views of `traces` (each one of [`Fitted::failing`] or [`Fitted::passing`]).
    pub fn views(&self, traces: &[usize]) -> Vec<TraceView> {
        traces
            .iter()
            .filter_map(|t| self.views.iter().find(|(u, _)| u == t))
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Steps the widest model (failing and passing traces) holds after compression.
    pub fn steps(&self, dump: &Dump) -> usize {
        self.views.iter().map(|(_, v)| kept(dump, v)).sum()
    }
}

fn kept(dump: &Dump, v: &TraceView) -> usize {
    v.keep
        .as_ref()
        .map_or(dump.traces[v.trace].steps.len(), |k| k.len())
}

/// Fits the models into `o.max_steps` trace steps (after compression): the failing traces
/// smallest first, each one taken while it fits; then the passing traces `choose` picks for the
/// failing traces taken, in its order, each one while it fits. What does not fit is left out
/// with a warning that names it. With no limit, or when everything fits, every trace is kept.
/// `failing` comes back empty when not even the smallest failing trace fits (the caller then
/// falls back to the spectrum, [`super::localize`]).
pub fn fit(
    dump: &Dump,
    failing: &[usize],
    o: &Options,
    choose: impl FnOnce(&[usize]) -> Vec<usize>,
) -> Fitted {
    let mut all: Vec<(usize, TraceView)> = failing
        .iter()
        .copied()
        .zip(views(dump, failing, o.compress))
        .collect();
    let size = |views: &[(usize, TraceView)], t: usize| {
        kept(dump, &views.iter().find(|(u, _)| *u == t).unwrap().1)
    };
    let max = o.max_steps.unwrap_or(usize::MAX);
    let mut by_size = failing.to_vec();
    by_size.sort_by_key(|&t| (size(&all, t), t));
    let mut used = 0;
    let mut fits = |n: usize| {
        let fits = used + n <= max;
        if fits {
            used += n;
        }
        fits
    };
    let (kf, lf): (Vec<usize>, Vec<usize>) =
        by_size.iter().copied().partition(|&t| fits(size(&all, t)));
    let kf: Vec<usize> = failing.iter().copied().filter(|t| kf.contains(t)).collect();
    let passing = if kf.is_empty() {
        Vec::new()
    } else {
        choose(&kf)
    };
    all.extend(
        passing
            .iter()
            .copied()
            .zip(views(dump, &passing, o.compress)),
    );
    let (kp, lp): (Vec<usize>, Vec<usize>) =
        passing.iter().copied().partition(|&t| fits(size(&all, t)));
    let warnings = fit_warnings(dump, &lf, &lp, max, |t| size(&all, t));
    Fitted {
        views: all
            .into_iter()
            .filter(|(t, _)| kf.contains(t) || kp.contains(t))
            .collect(),
        failing: kf,
        passing: kp,
        warnings,
    }
}

fn fit_warnings(
    dump: &Dump,
    failing: &[usize],
    passing: &[usize],
    max: usize,
    size: impl Fn(usize) -> usize,
) -> Vec<String> {
    let id = |t: usize| dump.manifest.tests[dump.traces[t].test].id.as_str();
    let mut out: Vec<String> = failing
        .iter()
        .map(|&t| {
            format!(
                "failing test {} left out of the model: its trace holds {} steps (after its \
                 compression setting), more than the smaller failing traces leave of \
                 --max-steps {max}",
                id(t),
                size(t)
            )
        })
        .collect();
    if !passing.is_empty() {
        out.push(format!(
            "{} passing trace(s) left out of the F∪P model to stay within --max-steps {max} \
             (first: {})",
            passing.len(),
            id(passing[0])
        ));
    }
    out
}
