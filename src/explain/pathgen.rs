//! Seed 003, automated path generation (spec `pathgen-seed-003.md`): the successful run
//! nearest to the failing one, found by forcing sets of branch instances of the failing run.
//!
//! * [`Distance`] is Def. 3's `dist(π_f, π)`: the positions, in the failing run `π_f`, of its
//!   branch events that the other run evaluates differently (aligned by execution index, Def. 2
//!   = [`super::index::align`]). Its `Ord` is Def. 4 (smaller = closer).
//! * [`search`] is Fig. 3's `generatePaths`, the last branch instance first, depth-first, with
//!   line 3's rule (a branch on which an already forced instance depends is skipped). Each
//!   candidate is a **real execution**: the failing test re-run with the candidate's instances
//!   forced to their other outcome ([`Executor`]), so "feasible and successful" means every
//!   forced instance was reached and the test passed. There is no splicing and no solver, so
//!   Fig. 3's `get_all` has one alternative per (two-way) branch and the branches inside a new
//!   region take whatever outcome the run gives them; the pruning of lines 11 and 24–27 (a
//!   solver's infeasible suffix) has nothing to prune.
//! * **Locating an instance in a re-run.** A forced set `b_1 < … < b_k` (positions in `π_f`) is
//!   run as a chain: `b_1` is the same evaluation in every run that forces it (the runs agree
//!   before it); `b_{j+1}` is the event aligned with it in the run forcing `b_1 … b_j`, numbered
//!   by its occurrence there. A `b_{j+1}` with no aligned event makes the candidate infeasible.
//!   Runs are cached by forced prefix, so a chain shares its runs with earlier candidates.
//! * Decisions (spec §8): loop branches (loop heads) are not forced unless asked (the paper's
//!   prototype never flips them); branches of test code are never forced (forcing the test's own
//!   checks would make any run "pass"); a crash or timeout is a failing candidate; the search
//!   stops at the first successful candidate or when its budget of runs is spent.

use std::cmp::Ordering;
use std::collections::HashMap;

use super::index::{align, depends_on, Indexer, RunIndex};
use crate::cdg::ControlDeps;
use crate::dump::{Dump, Role, StmtId, StmtKind, Trace};

/// Seed 003 Def. 3: positions in the failing run, increasing. Empty = the same control flow
/// (the paper's `⟨e_0⟩`), which is farther than any other distance (Def. 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distance(pub Vec<u32>);

impl Ord for Distance {
    /// Def. 4: compare from the last position backwards; at the first difference the distance
    /// with the later position is closer (smaller); a proper suffix is closer than the longer.
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.0.is_empty(), other.0.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        for (a, b) in self.0.iter().rev().zip(other.0.iter().rev()) {
            if a != b {
                return b.cmp(a);
            }
        }
        self.0.len().cmp(&other.0.len())
    }
}

impl PartialOrd for Distance {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Def. 3: the branch events of `f` whose aligned event in `other` has another outcome
/// (`f_to_other` = [`align`] of `f` to `other`). Only the program's branches count: the test's
/// own checks (an `assert` is a branch) differ between any failing and passing run.
pub fn dist(dump: &Dump, f: &Trace, other: &Trace, f_to_other: &[Option<u32>]) -> Distance {
    let app = |i: usize| {
        let st = &dump.stmts[f.steps[i].stmt as usize];
        dump.methods[st.method as usize].role == Role::App
    };
    let positions = f
        .branch
        .iter()
        .enumerate()
        .filter_map(|(i, o)| {
            let o = (*o)?;
            let j = f_to_other[i]?;
            (other.branch[j as usize] != Some(o) && app(i)).then_some(i as u32)
        })
        .collect();
    Distance(positions)
}

/// One branch instance to force in a re-run: the `occurrence`-th (1-based) evaluation of
/// `stmt` in that run takes the outcome `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forced {
    pub stmt: StmtId,
    pub occurrence: u32,
    pub to: bool,
}

/// How a re-run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Crash,
    Timeout,
    /// A forced instance was not reached (an infeasible candidate).
    Unreached,
}

/// A re-run: its verdict, its trace (when the run got far enough to write one) and why.
#[derive(Debug, Clone)]
pub struct Run {
    pub verdict: Verdict,
    pub trace: Option<Trace>,
    pub detail: String,
    /// Per forced instance, the outcome its condition evaluated to (before forcing), when the
    /// front-end reported it: an instance that evaluated to its forced outcome anyway changed
    /// nothing.
    pub was: Vec<Option<bool>>,
}

/// Re-runs the failing test with a set of branch instances forced.
pub trait Executor {
    /// `Err` when nothing can be run at all (the search stops with that error).
    fn run(&mut self, forced: &[Forced]) -> Result<Run, String>;
}

/// Limits and choices of the search.
#[derive(Debug, Clone)]
pub struct Config {
    /// Also force loop branches (loop heads); the paper's prototype never does.
    pub loops: bool,
    /// At most this many re-runs.
    pub max_runs: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            loops: false,
            max_runs: 200,
        }
    }
}

/// One candidate of the search, in the order tried (the spec's Table 2).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Candidate {
    /// The forced instances: positions in the failing run, increasing.
    pub forced: Vec<u32>,
    pub verdict: Verdict,
    /// Def. 3 distance of the candidate's run from the failing run (none when it wrote no trace).
    pub distance: Option<Vec<u32>>,
    pub detail: String,
}

/// What the search found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The candidates in the order tried.
    pub candidates: Vec<Candidate>,
    /// Index into `candidates` of the successful run, if one was found.
    pub found: Option<usize>,
    /// The report: dist(π_f, π_s) of the successful run.
    pub report: Option<Distance>,
    /// The forced set that gave the successful run (empty when none was found).
    pub found_forced: Vec<Forced>,
    /// Per instance of `found_forced`: it evaluated to its forced outcome anyway (forcing it
    /// changed nothing; the run is the same without it).
    pub found_noop: Vec<bool>,
    /// Re-runs made (a candidate's chain may need several; cached runs are not counted twice).
    pub runs: usize,
    /// Why the search stopped before it was exhausted (budget), if it did.
    pub stopped: Option<String>,
}

/// A run of a forced prefix, cached.
struct Realized {
    forced: Vec<Forced>,
    was: Vec<Option<bool>>,
    verdict: Verdict,
    detail: String,
    run: Option<(Trace, RunIndex, Vec<Option<u32>>)>,
}

struct Search<'a, E: Executor> {
    dump: &'a Dump,
    cd: &'a ControlDeps,
    exec: &'a mut E,
    config: &'a Config,
    failing: &'a Trace,
    indexer: Indexer,
    fidx: RunIndex,
    /// Branch positions of the failing run that may be forced, increasing.
    eligible: Vec<u32>,
    cache: HashMap<Vec<u32>, Realized>,
    out: Outcome,
}

/// Fig. 3 on `failing` (a failing trace of `dump`).
pub fn search<E: Executor>(
    dump: &Dump,
    cd: &ControlDeps,
    failing: &Trace,
    exec: &mut E,
    config: &Config,
) -> Result<Outcome, String> {
    let mut indexer = Indexer::new();
    let fidx = indexer.index(cd, failing);
    let eligible = eligible_branches(dump, failing, config.loops);
    let mut s = Search {
        dump,
        cd,
        exec,
        config,
        failing,
        indexer,
        fidx,
        eligible,
        cache: HashMap::new(),
        out: Outcome {
            candidates: Vec::new(),
            found: None,
            report: None,
            found_forced: Vec::new(),
            found_noop: Vec::new(),
            runs: 0,
            stopped: None,
        },
    };
    let last = failing.steps.len() as u32;
    s.generate(&[], last)?;
    Ok(s.out)
}

/// Branch events of app code (not loop heads unless `loops`) in the failing run.
pub fn eligible_branches(dump: &Dump, tr: &Trace, loops: bool) -> Vec<u32> {
    (0..tr.steps.len() as u32)
        .filter(|&i| {
            let l = tr.steps[i as usize].stmt as usize;
            let st = &dump.stmts[l];
            st.kind == StmtKind::Branch
                && tr.branch[i as usize].is_some()
                && dump.methods[st.method as usize].role == Role::App
                && (loops || !dump.loop_head[l])
        })
        .collect()
}

impl<E: Executor> Search<'_, E> {
    /// `generatePaths(paths, last, distance)`: returns true when the search is over (found, or
    /// out of budget).
    fn generate(&mut self, distance: &[u32], last: u32) -> Result<bool, String> {
        let upto = self.eligible.partition_point(|&b| b < last);
        for k in (0..upto).rev() {
            let br = self.eligible[k];
            // line 3: an instance already forced depends on br: forcing br would remove it
            if distance.iter().any(|&d| depends_on(&self.fidx, d, br)) {
                continue;
            }
            let mut cand = Vec::with_capacity(distance.len() + 1);
            cand.push(br);
            cand.extend_from_slice(distance);
            if self.try_candidate(&cand)? || self.generate(&cand, br)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Runs one candidate and logs it; true when it succeeded or the budget is spent.
    fn try_candidate(&mut self, cand: &[u32]) -> Result<bool, String> {
        if self.out.runs >= self.config.max_runs {
            self.out.stopped = Some(format!(
                "stopped after {} re-runs (the budget); no successful run found within it",
                self.out.runs
            ));
            return Ok(true);
        }
        self.realize(cand)?;
        let r = &self.cache[cand];
        let distance = r
            .run
            .as_ref()
            .map(|(t, _, a)| dist(self.dump, self.failing, t, a));
        self.out.candidates.push(Candidate {
            forced: cand.to_vec(),
            verdict: r.verdict,
            distance: distance.as_ref().map(|d| d.0.clone()),
            detail: r.detail.clone(),
        });
        if r.verdict == Verdict::Pass && distance.is_some() {
            self.out.found = Some(self.out.candidates.len() - 1);
            self.out.report = distance;
            self.out.found_forced = r.forced.clone();
            self.out.found_noop = r
                .forced
                .iter()
                .enumerate()
                .map(|(i, f)| r.was.get(i).copied().flatten() == Some(f.to))
                .collect();
            return Ok(true);
        }
        Ok(false)
    }

    /// Runs the chain of prefixes of `cand` that is not cached yet. A prefix whose run failed
    /// to force its instances (or wrote no trace) leaves nothing to locate the next instance
    /// in: every longer prefix gets its verdict, unreached.
    fn realize(&mut self, cand: &[u32]) -> Result<(), String> {
        for k in 1..=cand.len() {
            if !self.cache.contains_key(&cand[..k]) {
                let r = self.extend(&cand[..k])?;
                self.cache.insert(cand[..k].to_vec(), r);
            }
            let r = &self.cache[&cand[..k]];
            if r.run.is_none() || r.verdict == Verdict::Unreached {
                for j in k + 1..=cand.len() {
                    let why = format!(
                        "forcing the instances before step {} gave no run to locate it in",
                        cand[j - 1]
                    );
                    self.cache
                        .entry(cand[..j].to_vec())
                        .or_insert_with(|| unreached(why));
                }
                return Ok(());
            }
        }
        Ok(())
    }

    /// Runs `prefix`, whose prefix without its last element is cached with a run.
    fn extend(&mut self, prefix: &[u32]) -> Result<Realized, String> {
        let (last, before) = prefix.split_last().expect("non-empty");
        // `realize` extends only prefixes whose run forced every instance and has a trace
        let prior = self
            .cache
            .get(before)
            .and_then(|r| Some((r, r.run.as_ref()?)));
        let (mut forced, at, base) = match prior {
            None if !before.is_empty() => {
                return Ok(unreached(format!(
                    "no run of the instances before step {last}"
                )))
            }
            None => (Vec::new(), Some(*last), self.failing),
            Some((r, (t, _, a))) => (r.forced.clone(), a[*last as usize], t),
        };
        let Some(at) = at else {
            return Ok(unreached(format!(
                "step {last} of the failing run has no aligned event once the earlier instances are forced"
            )));
        };
        let stmt = base.steps[at as usize].stmt;
        let occurrence = base.steps[..=at as usize]
            .iter()
            .filter(|s| s.stmt == stmt)
            .count() as u32;
        let to = !self.failing.branch[*last as usize].expect("a branch event");
        forced.push(Forced {
            stmt,
            occurrence,
            to,
        });
        self.out.runs += 1;
        let run = self.exec.run(&forced)?;
        let indexed = run.trace.map(|t| {
            let idx = self.indexer.index(self.cd, &t);
            let a = align(&self.fidx, &idx);
            (t, idx, a)
        });
        Ok(Realized {
            forced,
            was: run.was,
            verdict: run.verdict,
            detail: run.detail,
            run: indexed,
        })
    }
}

fn unreached(detail: String) -> Realized {
    Realized {
        forced: Vec::new(),
        was: Vec::new(),
        verdict: Verdict::Unreached,
        detail,
        run: None,
    }
}
