//! Seed 004: the causal path of a failure, by comparing the failing run with a passing
//! reference run at aligned points (spec `causal-seed-004.md` §3, the decisions of §7).
//!
//! The failing run `F` and the reference `P` are aligned by execution index ([`super::index`]).
//! Walking the aligned entries backwards from the end, the **relevant set** Γ holds the
//! variables whose differing values carry the failure forward. At each pair of consecutive
//! aligned entries `a0 · a1` one rule moves Γ from `a1` back to `a0`:
//!
//! * **Def-Free** / **Definition** (the fast passes): `a0` and `a1` are consecutive in both runs
//!   and in one frame; the statement at `a0` defines nothing of Γ (Γ stays), or defines some
//!   of it with the same statement in both runs (Γ loses what it defines and gains its uses that
//!   differ at `a0`). A variable of Γ the statement does not define must keep its value from `a0`
//!   to `a1` in both runs (a mutation through an alias would break Theorem 2): else Single-Step.
//! * **Single-Step**: `D` = the variables of `a0`'s frame that differ at `a0`; a subset `c` of
//!   `D` *induces* Γ at `a1` iff re-running the reference with `c` given the failing run's values
//!   at `a0` reaches `a1`'s index with Γ's failing values (at the end: the test fails). Γ becomes
//!   a minimal inducing subset (exact for |D| ≤ 3, ddmin beyond).
//!
//! After each rule the **defining points** of the new Γ in the failing run (`defpoint`: the
//! latest step of `a0`'s frame before `a0` that defines the variable, by the static `def` facts or
//! by an observed change of its value) join the causal path (D3). The walk ends where no value
//! differs (the root), where the differences do not induce Γ (a partial path, D11), or at the
//! run budget. In patch mode the reference is the failing test with branch instances switched;
//! the switched instances before the path are its head ("critical predicate", D9).

use std::collections::{BTreeMap, HashMap};

use super::index::{align, Indexer, RunIndex};
use super::values::Values;
use crate::cdg::ControlDeps;
use crate::dump::{Dump, StmtId, Trace};
use crate::intern::Interner;

/// A run with the stores its steps saw.
#[derive(Debug, Clone)]
pub struct ValuedRun {
    pub trace: Trace,
    pub values: Values,
    /// The test failed.
    pub failed: bool,
}

/// Re-runs the reference with part of its state patched (the Induction of spec §3).
pub trait Replayer {
    /// The reference run with the variables `vars` of its step `p0`'s frame given, just
    /// before `p0`, the values they had before the failing run's step `f0`; `Ok(None)` when the
    /// patched run did not end with a verdict (a crash, a timeout, a value that cannot be
    /// carried over), `Err` when nothing can be run any more.
    fn induce(
        &mut self,
        f0: u32,
        p0: u32,
        vars: &[u32],
        names: &mut Interner,
    ) -> Result<Option<ValuedRun>, String>;
}

/// Limits of the walk.
#[derive(Debug, Clone)]
pub struct Config {
    /// At most this many patched re-runs.
    pub max_runs: usize,
    /// Use the Def-Free and Definition fast passes (else Single-Step everywhere).
    pub fast: bool,
    /// The longest failing run (in steps) whose values are recorded: every re-run records each
    /// step's locals, a few times the run's cost.
    pub max_steps: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_runs: 200,
            fast: true,
            max_steps: DEFAULT_MAX_STEPS,
        }
    }
}

/// [`Config::max_steps`] by default.
pub const DEFAULT_MAX_STEPS: usize = 200_000;

/// Which rule moved Γ back over one aligned pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    Single,
    DefFree,
    Definition,
}

/// One Single-Step, for the log.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Single {
    /// The failing run's step of `a0`, and of `a1` (`None`: the end of the run).
    pub at: u32,
    pub to: Option<u32>,
    /// The differences at `a0`, and the minimal inducing subset chosen.
    pub diffs: Vec<String>,
    pub gamma: Vec<String>,
    /// Patched re-runs this step made (cached subsets not counted).
    pub tests: usize,
}

/// The causal path and how the walk went.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The failing run's defining points on the path, with the relevant variables each gives.
    /// Each entry: the variable and its value (interned) just before the entry that needed it.
    pub path: BTreeMap<u32, Vec<(u32, u32)>>,
    /// Switched branch instances (patch mode) that head the path, failing-run steps.
    pub head: Vec<u32>,
    pub singles: Vec<Single>,
    /// How often each fast pass fired (Def-Free also counts the entries of a call stepped over,
    /// which left the relevant set as it was).
    pub def_free: usize,
    pub definition: usize,
    /// Entries the two runs share.
    pub aligned: usize,
    pub runs: usize,
    /// Why the walk ended.
    pub ended: String,
    /// It ended by the rules (no difference left), not by a failed induction or the budget.
    pub complete: bool,
    /// The failing run's step of the entry where it ended (`None`: it walked past the first).
    pub stop_at: Option<u32>,
    /// Where it ended, when that statement instance behaved differently on equal values (an
    /// edited statement, another branch outcome, the failure point): the path's root.
    pub root: Option<u32>,
}

/// Where Γ is: an aligned entry (its position in the aligned list) or the end of the run.
type At = Option<usize>;

/// The pseudo-variable of the end of the run: the test's verdict.
const OUTCOME: u32 = u32::MAX;

/// The reference run's side: its dump and control dependences (the failing run's in patch
/// mode), its statements' labels in the failing dump's space (regression mode,
/// [`super::versions`]), and the failing run's steps whose branch the reference switched
/// (patch mode).
#[derive(Clone, Copy)]
pub struct Reference<'a> {
    pub dump: &'a Dump,
    pub cd: &'a ControlDeps,
    pub labels: Option<&'a [StmtId]>,
    pub switched: &'a [u32],
}

/// Computes the causal path of `f` (failing) against `p` (passing).
pub fn causal_path<R: Replayer>(
    dump: &Dump,
    cd: &ControlDeps,
    runs: (&ValuedRun, &ValuedRun),
    reference: Reference,
    replayer: &mut R,
    names: &mut Interner,
    config: &Config,
) -> Result<Outcome, String> {
    let (f, p) = runs;
    if !f.failed || p.failed {
        return Err("the failing run must fail and the reference run pass".to_owned());
    }
    let mut indexer = Indexer::new();
    let fidx = indexer.index(cd, &f.trace);
    let pidx = indexer.index_as(reference.cd, &p.trace, reference.labels);
    let (fs, ps) = (
        unit_starts(dump, &f.trace),
        unit_starts(reference.dump, &p.trace),
    );
    // statement instances aligned: a step's pair of statement instances, the first pair kept
    let mut aligned: Vec<(u32, u32)> = Vec::new();
    for (i, q) in align(&fidx, &pidx).iter().enumerate() {
        let Some(q) = *q else { continue };
        let pair = (fs[i], ps[q as usize]);
        if aligned.last().is_none_or(|l| l.0 < pair.0 && l.1 < pair.1) {
            aligned.push(pair);
        }
    }
    let mut w = Walk {
        dump,
        reference,
        f,
        p,
        fidx,
        indexer,
        aligned,
        replayer,
        names,
        config,
        cache: HashMap::new(),
        frame_steps: frame_steps(&f.trace),
        out: Outcome::default(),
    };
    w.out.aligned = w.aligned.len();
    w.walk()?;
    // before a switched instance the two runs do not differ: the walk stops at or after it
    let stop = w.out.stop_at.unwrap_or(0);
    w.out.head = reference
        .switched
        .iter()
        .copied()
        .filter(|&s| s <= stop)
        .collect();
    Ok(w.out)
}

/// How one step of the walk ended.
enum Moved {
    To(Vec<u32>, Rule),
    Stop(String, bool),
}

struct Walk<'a, R: Replayer> {
    dump: &'a Dump,
    reference: Reference<'a>,
    f: &'a ValuedRun,
    p: &'a ValuedRun,
    fidx: RunIndex,
    indexer: Indexer,
    /// (failing step, reference step) of each shared index, in failing-run order.
    aligned: Vec<(u32, u32)>,
    replayer: &'a mut R,
    names: &'a mut Interner,
    config: &'a Config,
    cache: HashMap<(usize, Vec<u32>), bool>,
    /// Each frame's steps of the failing run, increasing.
    frame_steps: Vec<Vec<u32>>,
    out: Outcome,
}

/// The first step of each step's statement instance: a statement with condition operands is
/// several steps on one line, its operands' first (docs/trace-format.md "Values, capture and
/// patch"), and "before the statement" is before its first step. The walk's entries are these
/// first steps; an edited statement's instances align by any of their steps.
fn unit_starts(dump: &Dump, tr: &Trace) -> Vec<u32> {
    let at = |i: usize| {
        let s = tr.steps[i];
        let st = &dump.stmts[s.stmt as usize];
        (s.frame, st.line, &st.file)
    };
    let mut start = 0u32;
    (0..tr.steps.len())
        .map(|i| {
            if i > 0 && at(i - 1) != at(i) {
                start = i as u32;
            }
            start
        })
        .collect()
}

/// The steps of each frame of `tr`, increasing.
fn frame_steps(tr: &Trace) -> Vec<Vec<u32>> {
    let mut v = vec![Vec::new(); tr.frames.len()];
    for (i, s) in tr.steps.iter().enumerate() {
        v[s.frame as usize].push(i as u32);
    }
    v
}

impl<R: Replayer> Walk<'_, R> {
    fn walk(&mut self) -> Result<(), String> {
        let mut gamma = vec![OUTCOME];
        let mut a1: At = None;
        for k in (0..self.aligned.len()).rev() {
            if self.inside_unrelated_call(k, a1, &gamma) {
                self.out.def_free += 1;
                continue;
            }
            match self.step(k, a1, &gamma)? {
                Moved::To(g0, rule) => {
                    match rule {
                        Rule::DefFree => self.out.def_free += 1,
                        Rule::Definition => self.out.definition += 1,
                        Rule::Single => {}
                    }
                    self.add_defpoints(&g0, self.aligned[k].0);
                    gamma = g0;
                    a1 = Some(k);
                }
                Moved::Stop(why, complete) => {
                    let at = self.aligned[k].0;
                    self.out.stop_at = Some(at);
                    if !complete && self.reference.switched.contains(&at) {
                        // the difference comes from the switch itself: the critical predicate
                        self.out.ended = format!(
                            "{}: the reference switched this branch instance (the critical \
                             predicate)",
                            self.entry(at)
                        );
                        self.out.complete = true;
                    } else {
                        self.out.ended = why;
                        self.out.complete = complete;
                    }
                    return Ok(());
                }
            }
        }
        self.out.ended = "the first aligned entry".to_owned();
        self.out.complete = true;
        Ok(())
    }

    /// Whether entry `k` lies inside a call that `a1`'s frame made and that left Γ (variables of
    /// that frame) as it was, in both runs: such a call carries nothing of Γ, and the walk goes
    /// on from the step that made it (the paper's store is global; ours is a frame's locals, so a
    /// callee's entry alone would see no difference).
    fn inside_unrelated_call(&self, k: usize, a1: At, gamma: &[u32]) -> bool {
        let Some(a1) = a1 else {
            return false;
        };
        let ((f0, _), (f1, p1)) = (self.aligned[k], self.aligned[a1]);
        let (ft, pt) = (&self.f.trace, &self.p.trace);
        let g = ft.steps[f1 as usize].frame;
        if ft.steps[f0 as usize].frame == g {
            return false;
        }
        let steps = &self.frame_steps[g as usize];
        let Some(&c) = steps[..steps.partition_point(|&s| s < f1)].last() else {
            return false; // a1 opened its frame: a0 is in the caller
        };
        if c >= f0 {
            return false;
        }
        let Ok(i) = self.aligned.binary_search_by_key(&c, |a| a.0) else {
            return false; // the call step is not a shared entry
        };
        let pc = self.aligned[i].1;
        let (pg, pg1) = (pt.steps[pc as usize].frame, pt.steps[p1 as usize].frame);
        pg == pg1
            && gamma.iter().all(|&v| {
                self.f.values.at(g, v, c) == self.f.values.at(g, v, f1)
                    && self.p.values.at(pg, v, pc) == self.p.values.at(pg, v, p1)
            })
    }

    /// Moves Γ (at `a1`) back to the aligned entry `k`.
    fn step(&mut self, k: usize, a1: At, gamma: &[u32]) -> Result<Moved, String> {
        if self.config.fast {
            if let Some(m) = self.fast(k, a1, gamma) {
                return Ok(m);
            }
        }
        self.single(k, a1, gamma)
    }

    /// The Def-Free or Definition pass, when it applies.
    fn fast(&mut self, k: usize, a1: At, gamma: &[u32]) -> Option<Moved> {
        let a1 = a1?;
        let ((f0, p0), (f1, p1)) = (self.aligned[k], self.aligned[a1]);
        let (ft, pt) = (&self.f.trace, &self.p.trace);
        let frame = ft.steps[f0 as usize].frame;
        if f1 != f0 + 1 || p1 != p0 + 1 || ft.steps[f1 as usize].frame != frame {
            return None;
        }
        let pframe = pt.steps[p0 as usize].frame;
        if pt.steps[p1 as usize].frame != pframe {
            return None;
        }
        let stmt = ft.steps[f0 as usize].stmt as usize;
        let pst = &self.reference.dump.stmts[pt.steps[p0 as usize].stmt as usize];
        if pst.text != self.dump.stmts[stmt].text {
            return None; // an edited statement (regression mode): its defs and uses may differ
        }
        let lhs = self.var_names(&self.dump.defs[stmt]);
        let kept: Vec<u32> = gamma.iter().copied().filter(|v| !lhs.contains(v)).collect();
        let unchanged = kept.iter().all(|&v| {
            self.f.values.at(frame, v, f0) == self.f.values.at(frame, v, f1)
                && self.p.values.at(pframe, v, p0) == self.p.values.at(pframe, v, p1)
        });
        if !unchanged {
            return None;
        }
        if kept.len() == gamma.len() {
            return Some(Moved::To(gamma.to_vec(), Rule::DefFree));
        }
        let rhs = self.var_names(&self.dump.uses[stmt]);
        let mut g0 = kept;
        for v in rhs {
            if !g0.contains(&v) && self.differs(f0, p0, v) {
                g0.push(v);
            }
        }
        g0.sort_unstable();
        if g0.is_empty() {
            let why = format!(
                "{}: what it defines of the relevant set comes from values equal in both runs",
                self.entry(f0)
            );
            return Some(Moved::Stop(why, true));
        }
        Some(Moved::To(g0, Rule::Definition))
    }

    /// The dump's variables as names of the value interner.
    fn var_names(&mut self, vars: &[crate::dump::VarId]) -> Vec<u32> {
        vars.iter()
            .map(|&v| self.names.intern(self.dump.vars.name(v)))
            .collect()
    }

    fn differs(&self, f0: u32, p0: u32, v: u32) -> bool {
        let ff = self.f.trace.steps[f0 as usize].frame;
        let pf = self.p.trace.steps[p0 as usize].frame;
        self.f.values.at(ff, v, f0) != self.p.values.at(pf, v, p0)
    }

    /// The variables of the aligned entry's frame whose values differ there.
    fn diffs(&self, f0: u32, p0: u32) -> Vec<u32> {
        let ff = self.f.trace.steps[f0 as usize].frame;
        let pf = self.p.trace.steps[p0 as usize].frame;
        let mut vars: Vec<u32> = self.f.values.vars(ff).to_vec();
        vars.extend_from_slice(self.p.values.vars(pf));
        vars.sort_unstable();
        vars.dedup();
        vars.retain(|&v| self.differs(f0, p0, v));
        vars
    }

    /// Whether the statement instance at an aligned entry, given equal values, behaves
    /// differently in the two runs: an edited statement (regression mode), a branch with
    /// another outcome, or the failing run's last step (where it failed). Such a root is the
    /// fault itself evaluated (Theorem 1) and heads the path.
    fn runs_differently(&self, f0: u32, p0: u32) -> bool {
        let (ft, pt) = (&self.f.trace, &self.p.trace);
        let fst = &self.dump.stmts[ft.steps[f0 as usize].stmt as usize];
        let pst = &self.reference.dump.stmts[pt.steps[p0 as usize].stmt as usize];
        fst.text != pst.text
            || ft.branch[f0 as usize] != pt.branch[p0 as usize]
            || f0 as usize + 1 == ft.steps.len()
    }

    fn single(&mut self, k: usize, a1: At, gamma: &[u32]) -> Result<Moved, String> {
        let (f0, p0) = self.aligned[k];
        let d = self.diffs(f0, p0);
        if d.is_empty() {
            let why = format!("{}: no value differs there (the root)", self.entry(f0));
            if self.runs_differently(f0, p0) {
                self.out.root = Some(f0);
            }
            return Ok(Moved::Stop(why, true));
        }
        let runs = self.out.runs;
        let found = match self.induces(k, a1, gamma, &d)? {
            None => None,
            Some(false) => {
                let why = format!(
                    "{}: its differences ({}) do not induce the next relevant set (a partial path)",
                    self.entry(f0),
                    self.show(&d)
                );
                return Ok(Moved::Stop(why, false));
            }
            Some(true) => self.minimize(k, a1, gamma, &d)?,
        };
        let Some(g0) = found else {
            let why = format!(
                "the budget of {} patched re-runs was spent at {}",
                self.config.max_runs,
                self.entry(f0)
            );
            return Ok(Moved::Stop(why, false));
        };
        self.out.singles.push(Single {
            at: f0,
            to: a1.map(|a| self.aligned[a].0),
            diffs: self.show_vec(&d),
            gamma: self.show_vec(&g0),
            tests: self.out.runs - runs,
        });
        Ok(Moved::To(g0, Rule::Single))
    }

    /// A minimal subset of `d` (which induces): by increasing size when small, else ddmin.
    /// `None` when the budget ran out.
    fn minimize(
        &mut self,
        k: usize,
        a1: At,
        gamma: &[u32],
        d: &[u32],
    ) -> Result<Option<Vec<u32>>, String> {
        if d.len() == 1 {
            return Ok(Some(d.to_vec()));
        }
        if d.len() <= 3 {
            for c in subsets_by_size(d) {
                match self.induces(k, a1, gamma, &c)? {
                    None => return Ok(None),
                    Some(true) => return Ok(Some(c)),
                    Some(false) => {}
                }
            }
            return Ok(Some(d.to_vec()));
        }
        let mut budget_out = false;
        let r = ddmin(d.to_vec(), &mut |c: &[u32]| {
            if budget_out {
                return Ok(false);
            }
            match self.induces(k, a1, gamma, c)? {
                None => {
                    budget_out = true;
                    Ok(false)
                }
                Some(b) => Ok(b),
            }
        })?;
        Ok((!budget_out).then_some(r))
    }

    /// Whether `c` (variables of entry `k`) induces Γ at `a1`; `None` when the budget is spent.
    fn induces(
        &mut self,
        k: usize,
        a1: At,
        gamma: &[u32],
        c: &[u32],
    ) -> Result<Option<bool>, String> {
        if let Some(&b) = self.cache.get(&(k, c.to_vec())) {
            return Ok(Some(b));
        }
        if self.out.runs >= self.config.max_runs {
            return Ok(None);
        }
        self.out.runs += 1;
        let (f0, p0) = self.aligned[k];
        let run = self.replayer.induce(f0, p0, c, self.names)?;
        let b = run.is_some_and(|r| self.matches(&r, a1, gamma));
        self.cache.insert((k, c.to_vec()), b);
        Ok(Some(b))
    }

    /// The patched run reaches `a1`'s index with Γ's failing values (at the end: it fails).
    fn matches(&mut self, r: &ValuedRun, a1: At, gamma: &[u32]) -> bool {
        let Some(a1) = a1 else {
            return r.failed;
        };
        let f1 = self.aligned[a1].0;
        let target = self.fidx.leaf[f1 as usize];
        // one indexer for all runs, so that node ids match the failing run's
        let (cd, labels) = (self.reference.cd, self.reference.labels);
        let ridx = self.indexer.index_as(cd, &r.trace, labels);
        let Some(s) = ridx.leaf.iter().position(|&l| l == target) else {
            return false;
        };
        let rf = r.trace.steps[s].frame;
        let ff = self.f.trace.steps[f1 as usize].frame;
        gamma
            .iter()
            .all(|&v| r.values.at(rf, v, s as u32) == self.f.values.at(ff, v, f1))
    }

    /// Adds the defining points of `vars` before the failing run's step `at`.
    fn add_defpoints(&mut self, vars: &[u32], at: u32) {
        let frame = self.f.trace.steps[at as usize].frame;
        for &v in vars {
            if let Some(d) = self.defpoint(v, at) {
                // the value the definition gave: the one `at` sees (nothing redefined it since)
                let value = self.f.values.at(frame, v, at);
                let given = self.out.path.entry(d).or_default();
                if !given.iter().any(|g| g.0 == v) {
                    given.push((v, value));
                }
            }
        }
    }

    /// The latest step of `at`'s frame before `at` that defines `v` (a `def` fact, or the step
    /// after which its value was seen changed); the frame's call step for a value it was
    /// called with.
    fn defpoint(&mut self, v: u32, at: u32) -> Option<u32> {
        let tr = &self.f.trace;
        let frame = tr.steps[at as usize].frame;
        let steps = &self.frame_steps[frame as usize];
        let before = &steps[..steps.partition_point(|&s| s < at)];
        let name = self.names.name(v).to_owned();
        let by_def = before.iter().rev().copied().find(|&s| {
            self.dump.defs[tr.steps[s as usize].stmt as usize]
                .iter()
                .any(|&d| self.dump.vars.name(d) == name)
        });
        let by_change = self.f.values.last_change(frame, v, at).map(|c| {
            let k = steps.partition_point(|&s| s < c);
            if k == 0 {
                tr.frames[frame as usize].call_step
            } else {
                Some(steps[k - 1])
            }
        });
        by_def.max(by_change.flatten())
    }

    fn entry(&self, f0: u32) -> String {
        let st = &self.dump.stmts[self.f.trace.steps[f0 as usize].stmt as usize];
        format!("step {f0} (line {} of {})", st.line, st.file)
    }

    fn show(&self, vars: &[u32]) -> String {
        self.show_vec(vars).join(", ")
    }

    fn show_vec(&self, vars: &[u32]) -> Vec<String> {
        vars.iter()
            .map(|&v| {
                if v == OUTCOME {
                    "<outcome>".to_owned()
                } else {
                    self.names.name(v).to_owned()
                }
            })
            .collect()
    }
}

/// The non-empty subsets of `d` by increasing size, each in `d`'s order (for |d| ≤ 3).
fn subsets_by_size(d: &[u32]) -> Vec<Vec<u32>> {
    let n = d.len();
    let mut all: Vec<Vec<u32>> = (1u32..(1 << n) - 1)
        .map(|m| (0..n).filter(|i| m >> i & 1 == 1).map(|i| d[i]).collect())
        .collect();
    all.sort_by_key(|c: &Vec<u32>| c.len());
    all
}

/// Zeller's ddmin: a 1-minimal subset of `c` for which `test` holds, given that it holds for
/// `c` (every element of the result is needed).
pub fn ddmin<T: Clone + PartialEq>(
    mut c: Vec<T>,
    test: &mut dyn FnMut(&[T]) -> Result<bool, String>,
) -> Result<Vec<T>, String> {
    let mut n = 2usize;
    while c.len() >= 2 {
        let chunks = split(&c, n);
        if let Some(s) = first_passing(&chunks, test)? {
            c = s;
            n = 2;
            continue;
        }
        let complements: Vec<Vec<T>> = (0..chunks.len())
            .map(|i| {
                c.iter()
                    .filter(|x| !chunks[i].contains(x))
                    .cloned()
                    .collect()
            })
            .collect();
        if n > 2 {
            if let Some(s) = first_passing(&complements, test)? {
                c = s;
                n = (n - 1).max(2);
                continue;
            }
        }
        if n >= c.len() {
            break;
        }
        n = (2 * n).min(c.len());
    }
    Ok(c)
}

fn first_passing<T: Clone>(
    sets: &[Vec<T>],
    test: &mut dyn FnMut(&[T]) -> Result<bool, String>,
) -> Result<Option<Vec<T>>, String> {
    for s in sets {
        if test(s)? {
            return Ok(Some(s.clone()));
        }
    }
    Ok(None)
}

/// `c` in `n` chunks of (almost) equal size, in order.
fn split<T: Clone>(c: &[T], n: usize) -> Vec<Vec<T>> {
    let mut out = Vec::with_capacity(n);
    let mut start = 0;
    for i in 0..n {
        let end = start + (c.len() - start) / (n - i);
        out.push(c[start..end].to_vec());
        start = end;
    }
    out
}
