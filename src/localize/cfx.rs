//! Counterfactual experiments (paper §2.3, §3.3): plan, run, read back.
//!
//! **Plan**: after the first inference, the `k` most suspicious run-time branch conditions — value
//! vertices `⟨#@r⟩` of `branch` steps of `app` code in failing traces — ranked by posterior
//! `Pr(¬⟨#@r⟩ | e)`. An experiment re-runs the failing test with exactly that branch instance
//! (the `occurrence`-th evaluation of the statement in that test) inverted.
//!
//! **Run**: warm when the dump's `[rerun]` has a `serve` command ([`warm`]: one test session that
//! forks a child per run), else (or when that server fails: the remaining runs) cold, the
//! `[rerun] command`, one process per run; several runs in parallel, each with a timeout. A
//! flipped branch may loop forever or crash: a timeout or a crash is an outcome, never an error.
//!
//! **Evidence**: for each experiment whose failing test then passes, a virtual `cfx` vertex
//! observed incorrect, with an edge from `⟨#@r⟩` (and, with `--cfx-model successors` / `reroute`,
//! from `⟨#@r⟩`'s immediate successors / the statements the instance controls; docs/model.md).
//! With `--cfx-evidence coincidence` the `cfx` vertex also has a root parent of its own (a pass
//! may be a coincidence), and with `outcomes` a flip that still fails is a `cfx` vertex observed
//! correct ([`super::CfxEvidence`]).

pub mod early;
mod warm;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::dump::{Dump, Role, StmtKind};
use crate::forward::Vertex;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Experiment {
    pub id: usize,
    pub test: String,
    pub trace: String,
    /// Step index of the branch instance in the original (uncompressed) trace.
    pub step: u32,
    pub stmt: String,
    /// Which evaluation of `stmt` in this test (1-based).
    pub occurrence: u32,
    pub file: String,
    pub line: u32,
    /// The flipped branch's source text (the condition), for display; empty in results files
    /// written before it existed.
    #[serde(default)]
    pub text: String,
    /// Posterior probability that the branch condition was evaluated incorrectly.
    pub score: f64,
    /// A set of branch instances to force instead of the one flip (`explain`'s path
    /// generation): `(statement, occurrence, outcome 0/1)`; `stmt` is then empty
    /// (docs/trace-format.md "Forcing a set of branch instances").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub force: Vec<(String, u32, u8)>,
    /// Where the re-run writes its trace (`step.facts`, `frame.facts`, `branch.facts`).
    #[serde(skip)]
    pub events: Option<PathBuf>,
    /// Values to record, capture or patch in the re-run (with `events`; docs/trace-format.md
    /// "Values, capture and patch"): passed to the front-end as given.
    #[serde(skip)]
    pub values: Option<serde_json::Value>,
}

impl Experiment {
    /// What identifies the flipped branch instance (test, statement, occurrence): re-running
    /// it has the same outcome whatever model planned it.
    pub fn key(&self) -> (String, String, u32) {
        (self.test.clone(), self.stmt.clone(), self.occurrence)
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CfxOutcome {
    /// The failing test passed with the branch flipped.
    Pass,
    /// It still failed.
    Fail,
    /// The re-run crashed (the harness, not the test, failed), or wrote no result.
    Crash,
    /// It ran past its timeout and was killed.
    Timeout,
    /// The branch instance was never reached, so nothing was flipped.
    Void,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExperimentResult {
    #[serde(flatten)]
    pub experiment: Experiment,
    pub outcome: CfxOutcome,
    #[serde(default)]
    pub detail: String,
    #[serde(default)]
    pub duration_ms: u64,
    /// How it ran: `warm` (a child of the warm runner), `cold` (a process of its own), or `cold:
    /// REASON` when it ran cold because the warm runner could not serve it. Empty when nothing
    /// ran (a void experiment of a test whose control run did not fail).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub runner: String,
    /// The re-run reported on its forced set ([`Experiment::force`]): a front-end that does
    /// not know the request leaves it false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forced: bool,
    /// The front-end's report on each forced instance (`[{"stmt", "occurrence", "to",
    /// "reached", "was"}, ...]`), when it gave one.
    #[serde(skip)]
    pub forced_report: Option<serde_json::Value>,
    /// The steps the re-run patched (when [`Experiment::values`] asked for a patch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patched: Option<Vec<u64>>,
    /// The outermost call into the code under analysis that was open at the flip ended by an
    /// exception, which reached the test: a pass this way is the test accepting a thrown
    /// exception (docs/model.md, "A pass by a thrown exception"). A front-end that does not
    /// report it leaves it false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub thrown: bool,
}

/// How counterfactual experiments run (`localize --cfx-runner`, or the environment variable
/// [`RUNNER_ENV`] when the flag is not given).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CfxRunner {
    /// Warm when the dump's `[rerun]` has a `serve` command; cold when it has none, and for the
    /// remaining runs when the warm runner fails.
    Auto,
    /// Warm: an error when the dump has no `serve` command or the warm runner does not start.
    Warm,
    /// Cold: one process per run (the `[rerun] command`).
    Cold,
}

/// The environment variable that picks the runner when `--cfx-runner` is not given.
pub const RUNNER_ENV: &str = "PROSECUTOR_CFX_RUNNER";

/// The environment variable that gives a cold re-run its forced set (JSON `[[stmt, occurrence,
/// to], ...]`; docs/trace-format.md "Forcing a set of branch instances").
pub const FORCE_ENV: &str = "PROSECUTOR_FORCE";

/// The environment variable that asks a cold re-run to write its trace into a directory.
pub const EVENTS_ENV: &str = "PROSECUTOR_EVENTS";

/// The environment variable that gives a cold re-run its `values` request (JSON).
pub const VALUES_ENV: &str = "PROSECUTOR_VALUES";

impl CfxRunner {
    /// `given`, else [`RUNNER_ENV`], else `auto`.
    pub fn resolve(given: Option<CfxRunner>) -> Result<CfxRunner, String> {
        if let Some(r) = given {
            return Ok(r);
        }
        match std::env::var(RUNNER_ENV) {
            Ok(v) if !v.trim().is_empty() => {
                <CfxRunner as clap::ValueEnum>::from_str(v.trim(), true)
                    .map_err(|_| format!("{RUNNER_ENV}={v:?}: expected auto, warm or cold"))
            }
            _ => Ok(CfxRunner::Auto),
        }
    }
}

/// Picks the `k` most suspicious branch instances, at most `per_stmt` of one statement (0: no
/// limit). `p_incorrect` is indexed like `vertices`.
pub fn plan(
    dump: &Dump,
    vertices: &[Vertex],
    p_incorrect: &[f64],
    k: usize,
    per_stmt: usize,
) -> Vec<Experiment> {
    let mut cands: Vec<(f64, u32, u32)> = Vec::new(); // (score, trace, step)
    let not_flippable: Vec<&str> = dump
        .manifest
        .rerun
        .iter()
        .flat_map(|r| r.not_flippable.iter().map(String::as_str))
        .collect();
    for (v, vx) in vertices.iter().enumerate() {
        let Vertex::Value { trace, step } = *vx else {
            continue;
        };
        let tr = &dump.traces[trace as usize];
        let test = &dump.manifest.tests[tr.test];
        if dump.failure_step(tr).is_none()
            || step < test.setup_steps.unwrap_or(0)
            || (dump.failure_step(tr) == Some(step) && unevaluated_failure(test))
        {
            continue;
        }
        let st = &dump.stmts[tr.steps[step as usize].stmt as usize];
        if st.kind != StmtKind::Branch
            || dump.methods[st.method as usize].role != Role::App
            || not_flippable.contains(&st.file.as_str())
        {
            continue;
        }
        cands.push((p_incorrect[v], trace, step));
    }
    cands.sort_by(|a, b| b.0.total_cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    if per_stmt > 0 {
        let mut taken: std::collections::HashMap<u32, usize> = Default::default();
        cands.retain(|&(_, trace, step)| {
            let stmt = dump.traces[trace as usize].steps[step as usize].stmt;
            let n = taken.entry(stmt).or_default();
            *n += 1;
            *n <= per_stmt
        });
    }
    cands.truncate(k);
    cands
        .into_iter()
        .enumerate()
        .map(|(id, (score, trace, step))| {
            let tr = &dump.traces[trace as usize];
            let stmt = tr.steps[step as usize].stmt;
            let occurrence = tr.steps[..=step as usize]
                .iter()
                .filter(|s| s.stmt == stmt)
                .count() as u32;
            let st = &dump.stmts[stmt as usize];
            Experiment {
                id,
                test: dump.manifest.tests[tr.test].id.clone(),
                trace: tr.id.clone(),
                step,
                stmt: st.id.clone(),
                occurrence,
                file: st.file.clone(),
                line: st.line,
                text: st.text.clone(),
                score,
                force: Vec::new(),
                events: None,
                values: None,
            }
        })
        .collect()
}

/// Whether the failure point of `test` is unevaluated: it failed with an exception other than
/// an assertion, or was stopped by the tracer. A branch there never produced an outcome (its condition raised, or
/// the run was cut while it evaluated it), so no re-run can flip it. (A failed `assert` of code
/// under test is an outcome, `failure_kind = "assertion"`, and stays a candidate.)
fn unevaluated_failure(test: &crate::dump::TestCase) -> bool {
    matches!(test.failure_kind.as_deref(), Some("exception" | "timeout"))
}

/// Checks that results read from a file correspond to the plan (same test, statement and
/// occurrence for every result); returns them in plan order.
pub fn match_results(
    plan: &[Experiment],
    results: Vec<ExperimentResult>,
    path: &Path,
) -> Result<Vec<ExperimentResult>, String> {
    let mut out = Vec::new();
    for r in results {
        let e = &r.experiment;
        let Some(p) = plan.iter().find(|p| p.key() == e.key()) else {
            return Err(format!(
                "{}: experiment (test {:?}, stmt {:?}, occurrence {}) is not in the plan for this dump (run `prosecutor plan` with the same options)",
                path.display(),
                e.test,
                e.stmt,
                e.occurrence
            ));
        };
        let mut r = r.clone();
        r.experiment = p.clone();
        out.push(r);
    }
    out.sort_by_key(|r| r.experiment.id);
    out.dedup_by_key(|r| r.experiment.id);
    Ok(out)
}

/// The `[rerun] serve` command with its placeholders filled in: `{jobs}` (at least 1) and
/// `{dump}` (the dump directory).
fn serve_command(argv: &[String], jobs: usize, dump_dir: &Path) -> Vec<String> {
    argv.iter()
        .map(|a| {
            a.replace("{jobs}", &jobs.max(1).to_string())
                .replace("{dump}", &dump_dir.display().to_string())
        })
        .collect()
}

/// How to run experiments.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub jobs: usize,
    /// Overrides the per-experiment timeout.
    pub timeout: Option<Duration>,
    pub progress: bool,
    /// Outcomes already measured (same dump), by test, statement and occurrence: a planned
    /// experiment found here is not run again (`eval` shares them between PROSECUTOR's variants).
    pub known: Vec<ExperimentResult>,
    /// Warm, cold or auto; `None`: [`CfxRunner::resolve`] (the environment, else auto).
    pub runner: Option<CfxRunner>,
    /// A warm runner started while the dump was traced ([`early::watch`]); used when the dump
    /// asks for the same one.
    pub early: early::Slot,
}

/// The runner of a dump's re-runs, started before the experiments are planned ([`prestart`]).
pub struct Started<'a>(Result<Runner<'a>, String>);

/// Starts the runner of `dump`'s re-runs now (the warm runner's session imports and collects),
/// so that its start-up overlaps the first inference, whose marginals plan the experiments:
/// `None` when no run will be needed (the dump cannot be re-run, or `o.known` holds results,
/// as when a harness replays them). A warm runner that is not used (the plan turns out empty)
/// is stopped when dropped.
pub fn prestart<'a>(dump: &'a Dump, o: &RunOptions) -> Option<Started<'a>> {
    if !o.known.is_empty() {
        return None;
    }
    let rerun = dump.manifest.rerun.as_ref()?;
    Some(Started(Runner::new(dump, rerun, o)))
}

/// Runs the experiments of `plan` that `o.known` does not hold; the results follow `plan`.
/// `started`: the runner [`prestart`] started, else one is started here if needed.
pub fn run_missing(
    dump: &Dump,
    plan: &[Experiment],
    o: &RunOptions,
    started: Option<Started<'_>>,
) -> Result<Vec<ExperimentResult>, String> {
    let known: std::collections::HashMap<_, &ExperimentResult> =
        o.known.iter().map(|k| (k.experiment.key(), k)).collect();
    let find = |e: &Experiment| known.get(&e.key()).copied();
    let missing: Vec<Experiment> = plan.iter().filter(|e| find(e).is_none()).cloned().collect();
    let mut fresh = if missing.is_empty() {
        Vec::new()
    } else {
        run(dump, &missing, o, started)?
    }
    .into_iter();
    Ok(plan
        .iter()
        .map(|e| match find(e) {
            Some(k) => ExperimentResult {
                experiment: e.clone(),
                ..k.clone()
            },
            None => fresh.next().expect("one result per missing experiment"),
        })
        .collect())
}

/// What the detail of a void experiment says when its test's control run passed.
pub const NOT_REPRODUCED: &str = "passes when re-run alone with nothing flipped";

/// The tests whose control run passed (their failure does not reproduce when re-run alone), as
/// the void experiments of `results` say.
pub fn not_reproduced(results: &[ExperimentResult]) -> Vec<&str> {
    let mut tests: Vec<&str> = results
        .iter()
        .filter(|r| r.outcome == CfxOutcome::Void && r.detail.starts_with("control: "))
        .filter(|r| r.detail.contains(NOT_REPRODUCED))
        .map(|r| r.experiment.test.as_str())
        .collect();
    tests.sort_unstable();
    tests.dedup();
    tests
}

/// What a control run (the failing test re-run with nothing flipped) found for one test.
#[derive(Debug, Clone, PartialEq)]
enum Control {
    /// It fails as traced; the re-run took this long (a cold re-run's process start-up included).
    Fails(Duration),
    /// It did not fail (or could not run): every experiment of the test is void for this reason.
    Unusable(String),
}

/// The control run of one test, and why its experiments run cold although the warm runner
/// serves: its warm control run crashed (the test does not survive the fork) and a cold one
/// did not.
struct TestControl {
    test: String,
    verdict: Control,
    cold: Option<String>,
}

/// Re-runs each test of the plan once with nothing flipped (`{stmt}` empty, `{occurrence}` 0):
/// an experiment means something only if the unflipped re-run fails as the traced run did, and
/// its wall time (start-up of a cold re-run included) sets the experiments' time limit.
fn control_runs(
    dump: &Dump,
    plan: &[Experiment],
    o: &RunOptions,
    runner: &Runner,
) -> Vec<TestControl> {
    let mut tests: Vec<&str> = plan.iter().map(|e| e.test.as_str()).collect();
    tests.sort_unstable();
    tests.dedup();
    let controls: Vec<Experiment> = tests
        .iter()
        .map(|t| Experiment {
            id: usize::MAX,
            test: (*t).to_owned(),
            stmt: String::new(),
            occurrence: 0,
            ..plan[0].clone()
        })
        .collect();
    crate::jobs::map(&controls, o.jobs, |c| {
        let limit = o.timeout.unwrap_or(base_timeout(dump, &c.test)) * 2;
        let mut r = runner.run(c, limit, true, None);
        let mut cold = None;
        if r.runner == "warm" && r.outcome == CfxOutcome::Crash {
            let why = format!("its control run crashed in the warm runner ({})", r.detail);
            r = runner.run(c, limit, true, Some(&why));
            cold = Some(why);
        }
        TestControl {
            test: c.test.clone(),
            verdict: verdict(c, &r, limit),
            cold,
        }
    })
}

fn verdict(c: &Experiment, r: &ExperimentResult, limit: Duration) -> Control {
    match r.outcome {
        CfxOutcome::Fail => Control::Fails(Duration::from_millis(r.duration_ms)),
        CfxOutcome::Pass => Control::Unusable(format!(
            "control: {} {NOT_REPRODUCED} (it fails only in the traced session or only under \
             tracing, or is flaky)",
            c.test
        )),
        CfxOutcome::Timeout => Control::Unusable(format!(
            "control: the re-run with nothing flipped was killed after {} ms",
            limit.as_millis()
        )),
        _ => Control::Unusable(format!(
            "control: the re-run with nothing flipped failed to run: {}",
            r.detail
        )),
    }
}

/// The time limit of a re-run before its control run was measured: the dump's `timeout_ms`
/// (default 10 s), at least five times the test's traced duration.
fn base_timeout(dump: &Dump, test: &str) -> Duration {
    let base_ms = dump
        .manifest
        .rerun
        .as_ref()
        .and_then(|r| r.timeout_ms)
        .unwrap_or(10_000);
    let orig = dump
        .manifest
        .tests
        .iter()
        .find(|t| t.id == test)
        .and_then(|t| t.duration_ms)
        .unwrap_or(0);
    Duration::from_millis(base_ms.max(orig.saturating_mul(5)))
}

/// The time limit of an experiment whose test's control run (the same re-run with nothing
/// flipped) took `took`: `max(2 s, 3 × took)`. It is measured on the re-run itself, not on
/// the traced run: a test that tracing slows 250× (QuixBugs `levenshtein`: 1.5 s plain) had
/// limits of 5 × its traced duration, and each of its 20 experiments ran ~3 minutes. A cold
/// run (a new process) gets at least [`MIN_COLD_LIMIT`] ([`Runner::run`]).
fn measured_limit(took: Duration) -> Duration {
    (took * 3).max(MIN_EXPERIMENT_LIMIT)
}

/// The least time limit of an experiment after its control run, in the warm runner: a forked
/// child starts in milliseconds, so a flip that makes a 50 ms test loop costs 2 s, not 10.
const MIN_EXPERIMENT_LIMIT: Duration = Duration::from_secs(2);

/// The least time limit of a cold run (unless `--cfx-timeout` sets the limit): a new
/// interpreter imports pytest and the project first, and that start-up varies with the load.
const MIN_COLD_LIMIT: Duration = Duration::from_secs(10);

/// Runs every experiment, after one control run per test ([`control_runs`]): experiments of a
/// test whose control run does not fail are void (with the reason), the others get
/// [`measured_limit`] of the control run's wall time unless `--cfx-timeout` is given. Runs go
/// to the warm runner while it serves ([`Runner`]); a line on stderr (with `o.progress`) says
/// how they ran.
pub fn run(
    dump: &Dump,
    plan: &[Experiment],
    o: &RunOptions,
    started: Option<Started<'_>>,
) -> Result<Vec<ExperimentResult>, String> {
    let rerun = dump
        .manifest
        .rerun
        .as_ref()
        .ok_or_else(|| "the dump has no [rerun] section".to_owned())?;
    if plan.is_empty() {
        return Ok(Vec::new());
    }
    let runner = match started {
        Some(s) => s.0?,
        None => Runner::new(dump, rerun, o)?,
    };
    let controls = control_runs(dump, plan, o, &runner);
    let bar = o
        .progress
        .then(|| crate::progress::bar(plan.len() as u64, "counterfactual experiments"));
    let results: Vec<ExperimentResult> = crate::jobs::map(plan, o.jobs, |e| {
        let control = controls.iter().find(|c| c.test == e.test);
        let r = experiment(dump, e, o, &runner, control);
        if let Some(b) = &bar {
            b.inc(1);
        }
        r
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if o.progress {
        eprintln!("{}", runner.summary());
    }
    Ok(results)
}

/// Single re-runs through the dump's runners, warm while the warm runner serves, one at a
/// time as the caller asks (`explain`'s path generation, whose next run depends on the last).
pub struct Reruns<'a> {
    runner: Runner<'a>,
}

impl<'a> Reruns<'a> {
    pub fn new(dump: &'a Dump, o: &RunOptions) -> Result<Self, String> {
        let rerun = dump.manifest.rerun.as_ref().ok_or_else(|| {
            "the dump has no [rerun] section: its tests cannot be re-run".to_owned()
        })?;
        Ok(Reruns {
            runner: Runner::new(dump, rerun, o)?,
        })
    }

    /// Runs `e` (a control run when `control`) within `limit`.
    pub fn run(&self, e: &Experiment, limit: Duration, control: bool) -> ExperimentResult {
        self.runner.run(e, limit, control, None)
    }

    /// The time limit of a run after a control run of `took` (as for experiments).
    pub fn limit_after(took: Duration) -> Duration {
        measured_limit(took)
    }

    /// The limit of a control run of `test`.
    pub fn control_limit(dump: &Dump, test: &str) -> Duration {
        base_timeout(dump, test) * 2
    }

    /// How the runs ran (warm, cold and why).
    pub fn summary(&self) -> String {
        self.runner.summary()
    }
}

/// One experiment of a test whose control run is `control`.
fn experiment(
    dump: &Dump,
    e: &Experiment,
    o: &RunOptions,
    runner: &Runner,
    control: Option<&TestControl>,
) -> ExperimentResult {
    let Some(c) = control else {
        return runner.run(
            e,
            o.timeout.unwrap_or(base_timeout(dump, &e.test)),
            false,
            None,
        );
    };
    match &c.verdict {
        Control::Unusable(why) => ExperimentResult {
            experiment: e.clone(),
            outcome: CfxOutcome::Void,
            detail: why.clone(),
            duration_ms: 0,
            runner: String::new(),
            forced: false,
            forced_report: None,
            patched: None,
            thrown: false,
        },
        Control::Fails(took) => {
            let limit = o.timeout.unwrap_or_else(|| measured_limit(*took));
            runner.run(e, limit, false, c.cold.as_deref())
        }
    }
}

/// Runs re-runs: through the warm runner while it serves, else cold (one process each); counts
/// both, with the reasons for cold runs, for [`Runner::summary`].
struct Runner<'a> {
    rerun: &'a crate::dump::Rerun,
    dump_dir: PathBuf,
    cwd: PathBuf,
    tmp: tempfile::TempDir,
    counter: AtomicUsize,
    warm: Option<warm::Server>,
    /// The warm runner was started while the dump was traced ([`early`]).
    early: bool,
    /// Why every run is cold although nothing failed (`--cfx-runner cold`, an older dump).
    expected: Option<String>,
    /// Why the warm runner stopped serving (or never did), once it has.
    fallback: Mutex<Option<String>>,
    /// Runs made warm and cold, and the reasons of the cold ones.
    warm_runs: AtomicUsize,
    cold_runs: AtomicUsize,
    cold_reasons: Mutex<std::collections::BTreeSet<String>>,
    /// `--cfx-timeout` sets every limit: cold runs get no [`MIN_COLD_LIMIT`].
    explicit_limit: bool,
}

/// A mutex's guard; a panic of another holder does not poison the counts and reasons kept here.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<'a> Runner<'a> {
    /// Starts the warm runner unless the cold one is chosen or the dump has no `serve`
    /// command; with `--cfx-runner warm` a warm runner that cannot start is an error.
    fn new(dump: &Dump, rerun: &'a crate::dump::Rerun, o: &RunOptions) -> Result<Self, String> {
        let choice = CfxRunner::resolve(o.runner)?;
        let dump_dir = std::fs::canonicalize(&dump.dir).unwrap_or_else(|_| dump.dir.clone());
        let cwd: PathBuf = match &rerun.cwd {
            Some(c) if Path::new(c).is_absolute() => PathBuf::from(c),
            Some(c) => dump.dir.join(c),
            None => dump.dir.clone(),
        };
        let mut r = Runner {
            rerun,
            dump_dir,
            cwd,
            tmp: tempfile::tempdir().map_err(|e| format!("cannot create a temp dir: {e}"))?,
            counter: AtomicUsize::new(0),
            warm: None,
            early: false,
            expected: None,
            fallback: Mutex::new(None),
            warm_runs: AtomicUsize::new(0),
            cold_runs: AtomicUsize::new(0),
            cold_reasons: Mutex::default(),
            explicit_limit: o.timeout.is_some(),
        };
        r.connect(choice, dump, o)?;
        Ok(r)
    }

    /// The warm runner, unless `choice` or the dump says cold (or it does not start, under
    /// auto: then every run is cold and says why).
    fn connect(&mut self, choice: CfxRunner, dump: &Dump, o: &RunOptions) -> Result<(), String> {
        let argv = match (choice, &self.rerun.serve) {
            (CfxRunner::Cold, _) => {
                self.expected = Some(format!("chosen (--cfx-runner or {RUNNER_ENV})"));
                return Ok(());
            }
            (CfxRunner::Warm, None) => {
                return Err(format!(
                    "--cfx-runner warm: {NO_SERVE}; re-trace it, or use --cfx-runner auto"
                ))
            }
            (_, None) => {
                self.expected = Some(NO_SERVE.to_owned());
                return Ok(());
            }
            (_, Some(argv)) => argv,
        };
        match self.start_warm(argv, dump, o) {
            Ok((s, early)) => (self.warm, self.early) = (Some(s), early),
            Err(why) if choice == CfxRunner::Warm => {
                return Err(format!(
                    "--cfx-runner warm: the warm runner did not start: {why}"
                ))
            }
            Err(why) => {
                *lock(&self.fallback) = Some(format!("the warm runner did not start: {why}"))
            }
        }
        Ok(())
    }

    fn start_warm(
        &self,
        argv: &[String],
        dump: &Dump,
        o: &RunOptions,
    ) -> Result<(warm::Server, bool), String> {
        if argv.is_empty() {
            return Err("[rerun] serve is empty".to_owned());
        }
        let argv = serve_command(argv, o.jobs, &self.dump_dir);
        // as long as a control run may take: the server's start-up is a cold re-run's
        let base = o.timeout.unwrap_or(base_timeout(dump, ""));
        let limit = (base * 2).max(HANDSHAKE_MIN);
        // an early server that does not shake hands (it shared the machine with the traced
        // run) gets no say: a server of our own is started as without it
        if let Some(Ok(s)) = o
            .early
            .take(&argv, &self.cwd, &self.rerun.env)
            .map(|early| early.spawned.ready(limit))
        {
            return Ok((s, true));
        }
        warm::Server::start(&argv, &self.cwd, &self.rerun.env, limit).map(|s| (s, false))
    }

    /// Runs `e` with time limit `limit` (`control`: a control run, which flips nothing on
    /// purpose); cold, with reason `cold`, when that is given.
    fn run(
        &self,
        e: &Experiment,
        limit: Duration,
        control: bool,
        cold: Option<&str>,
    ) -> ExperimentResult {
        if let (Some(server), None) = (&self.warm, cold) {
            match server.request(e, limit) {
                Ok(reply) => return self.warm_result(e, reply, control),
                Err(why) => {
                    lock(&self.fallback).get_or_insert(format!("the warm runner stopped: {why}"));
                }
            }
        }
        let limit = if self.explicit_limit {
            limit
        } else {
            limit.max(MIN_COLD_LIMIT)
        };
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let out = self.tmp.path().join(format!("run{n}.json"));
        let mut r = run_one(
            self.rerun,
            &self.dump_dir,
            &self.cwd,
            e,
            &out,
            limit,
            control,
        );
        let why = cold
            .map(str::to_owned)
            .or_else(|| lock(&self.fallback).clone());
        r.runner = self.count_cold(why);
        r
    }

    fn warm_result(&self, e: &Experiment, reply: warm::Reply, control: bool) -> ExperimentResult {
        let runner = if reply.runner.as_deref() == Some("cold") {
            // a flip in import-time code the session already ran: the server ran it in a
            // process of its own
            self.count_cold(None);
            "cold".to_owned()
        } else {
            self.warm_runs.fetch_add(1, Ordering::Relaxed);
            "warm".to_owned()
        };
        let (outcome, detail) = classify(&reply.outcome, reply.flipped, reply.detail, control);
        ExperimentResult {
            experiment: e.clone(),
            outcome,
            detail,
            duration_ms: reply.duration_ms,
            runner,
            forced: reply.forced.is_some(),
            forced_report: reply.forced,
            patched: reply.patched,
            thrown: reply.thrown,
        }
    }

    /// Counts a cold run; its `runner` label: `cold: WHY` when the warm runner could not serve
    /// it, else `cold`.
    fn count_cold(&self, why: Option<String>) -> String {
        self.cold_runs.fetch_add(1, Ordering::Relaxed);
        let shown = why.clone().or_else(|| self.expected.clone());
        lock(&self.cold_reasons).insert(shown.unwrap_or_else(|| IMPORT_TIME.to_owned()));
        why.map_or_else(|| "cold".to_owned(), |w| format!("cold: {w}"))
    }

    /// One line: how many runs (control runs included) were warm, how many cold and why.
    fn summary(&self) -> String {
        let (w, c) = (
            self.warm_runs.load(Ordering::Relaxed),
            self.cold_runs.load(Ordering::Relaxed),
        );
        let when = if self.early {
            ", started while tracing"
        } else {
            ""
        };
        let warm = format!("warm runner (forked{when}), {w} runs");
        let why: Vec<String> = lock(&self.cold_reasons).iter().cloned().collect();
        let cold = format!(
            "cold runner (a process per run), {c} runs: {}",
            why.join("; ")
        );
        let body = match (w, c) {
            (_, 0) => warm,
            (0, _) => cold,
            _ => format!("{warm}; {cold}"),
        };
        format!("counterfactual experiments: {body}")
    }
}

const NO_SERVE: &str =
    "the dump's [rerun] has no serve command (an older dump, or a front-end without a warm runner)";
const IMPORT_TIME: &str = "flips in import-time code, run by the warm runner in a new process";
/// The least time the warm runner gets to start (import and collect).
const HANDSHAKE_MIN: Duration = Duration::from_secs(30);

/// The outcome of a re-run from what it reported (a cold run's result file, a warm run's
/// answer): `outcome` (pass, fail, crash, or a warm run's timeout), whether the branch instance
/// was flipped, the detail. A run that flipped nothing is void, except a control run (which
/// flips nothing on purpose) and a timeout.
fn classify(outcome: &str, flipped: bool, detail: String, control: bool) -> (CfxOutcome, String) {
    let o = match outcome {
        "timeout" => CfxOutcome::Timeout,
        _ if !flipped && !control => CfxOutcome::Void,
        "pass" => CfxOutcome::Pass,
        "fail" => CfxOutcome::Fail,
        _ => CfxOutcome::Crash,
    };
    (o, detail)
}

fn run_one(
    rerun: &crate::dump::Rerun,
    dump_dir: &Path,
    cwd: &Path,
    e: &Experiment,
    out: &Path,
    timeout: Duration,
    control: bool,
) -> ExperimentResult {
    let subst = |a: &str| {
        a.replace("{test}", &e.test)
            .replace("{stmt}", &e.stmt)
            .replace("{occurrence}", &e.occurrence.to_string())
            .replace("{out}", &out.display().to_string())
            .replace("{dump}", &dump_dir.display().to_string())
    };
    let argv: Vec<String> = rerun.command.iter().map(|a| subst(a)).collect();
    let start = Instant::now();
    let finish = |outcome, detail: String| ExperimentResult {
        experiment: e.clone(),
        outcome,
        detail,
        duration_ms: start.elapsed().as_millis() as u64,
        runner: String::new(),
        forced: false,
        forced_report: None,
        patched: None,
        thrown: false,
    };
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in &rerun.env {
        cmd.env(k, v);
    }
    if !e.force.is_empty() {
        cmd.env(
            FORCE_ENV,
            serde_json::to_string(&e.force).unwrap_or_default(),
        );
    }
    if let Some(dir) = &e.events {
        cmd.env(EVENTS_ENV, dir);
    }
    if let Some(v) = &e.values {
        cmd.env(VALUES_ENV, v.to_string());
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(err) => {
            return finish(
                CfxOutcome::Crash,
                format!("cannot start {:?}: {err}", argv[0]),
            )
        }
    };
    // Read stderr while the child runs: a child that fills the pipe would block until killed.
    let reader = child.stderr.take().map(|mut s| {
        std::thread::spawn(move || {
            use std::io::Read;
            let mut text = String::new();
            let _ = s.read_to_string(&mut text);
            text
        })
    });
    use wait_timeout::ChildExt;
    let status = match child.wait_timeout(timeout) {
        Ok(Some(s)) => s,
        Ok(None) => {
            let _ = child.kill();
            let _ = child.wait();
            return finish(
                CfxOutcome::Timeout,
                format!("killed after {} ms", timeout.as_millis()),
            );
        }
        Err(err) => return finish(CfxOutcome::Crash, format!("waiting failed: {err}")),
    };
    let stderr = reader.and_then(|h| h.join().ok()).unwrap_or_default();
    #[derive(Deserialize)]
    struct Reported {
        outcome: String,
        #[serde(default = "yes")]
        flipped: bool,
        #[serde(default)]
        detail: String,
        #[serde(default)]
        forced: Option<serde_json::Value>,
        #[serde(default)]
        patched: Option<Vec<u64>>,
        #[serde(default)]
        thrown: bool,
    }
    fn yes() -> bool {
        true
    }
    match std::fs::read_to_string(out)
        .ok()
        .and_then(|t| serde_json::from_str::<Reported>(&t).ok())
    {
        Some(r) => {
            let (o, detail) = classify(&r.outcome, r.flipped, r.detail, control);
            ExperimentResult {
                forced: r.forced.is_some(),
                forced_report: r.forced,
                patched: r.patched,
                thrown: r.thrown,
                ..finish(o, detail)
            }
        }
        None if status.success() => finish(
            CfxOutcome::Pass,
            "exit status 0 (no result file)".to_owned(),
        ),
        None => finish(
            CfxOutcome::Crash,
            format!("exit status {status}; {}", last_line(&stderr)),
        ),
    }
}

fn last_line(s: &str) -> String {
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

/// One line saying how many experiments gave no information (void, timeout, crash) and why,
/// grouped by reason, and how many ran cold because the warm runner could not serve them;
/// `None` when every experiment passed or failed, warm or cold as chosen.
pub fn degraded_summary(results: &[ExperimentResult]) -> Option<String> {
    let parts: Vec<String> = no_information(results)
        .into_iter()
        .chain(cold_fallback(results))
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// How many experiments ran cold (`runner = "cold: WHY"`) although the warm runner was to run
/// them, and why.
fn cold_fallback(results: &[ExperimentResult]) -> Option<String> {
    let mut why: Vec<&str> = results
        .iter()
        .filter_map(|r| r.runner.strip_prefix("cold: "))
        .collect();
    let n = why.len();
    if n == 0 {
        return None;
    }
    why.sort_unstable();
    why.dedup();
    Some(format!(
        "{n} of {} counterfactual experiments ran cold (a process each, slower) because {}",
        results.len(),
        why.join("; ")
    ))
}

fn no_information(results: &[ExperimentResult]) -> Option<String> {
    let mut groups: std::collections::BTreeMap<(String, String), (usize, String)> =
        std::collections::BTreeMap::new();
    let mut n = 0;
    for r in results {
        let outcome = match r.outcome {
            CfxOutcome::Pass | CfxOutcome::Fail => continue,
            CfxOutcome::Void => "void",
            CfxOutcome::Timeout => "timeout",
            CfxOutcome::Crash => "crash",
        };
        n += 1;
        let first = r.detail.lines().next().unwrap_or("").trim();
        // the reason without its particulars ("test not collected: <id>" → "test not collected")
        let reason = first.split(": ").next().unwrap_or("").to_owned();
        let reason = if reason.is_empty() {
            "no reason given".to_owned()
        } else {
            reason
        };
        let e = groups
            .entry((outcome.to_owned(), reason))
            .or_insert((0, first.to_owned()));
        e.0 += 1;
    }
    if n == 0 {
        return None;
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|((outcome, reason), (count, example))| {
            if example.len() > reason.len() {
                format!("{count} {outcome} ({reason}; e.g. {example})")
            } else {
                format!("{count} {outcome} ({reason})")
            }
        })
        .collect();
    let mut line = format!(
        "{n} of {} counterfactual experiments gave no information: {}",
        results.len(),
        parts.join(", ")
    );
    if groups.keys().any(|(o, _)| o == "timeout") {
        let cold = results
            .iter()
            .any(|r| r.outcome == CfxOutcome::Timeout && r.runner.starts_with("cold"));
        if cold {
            line.push_str("; a cold re-run's time limit includes its start-up");
        }
        line.push_str(": raise the limit with --cfx-timeout SECONDS");
    }
    Some(line)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An experiment on `a.py:3` with this outcome and detail (shared with the model's tests).
    pub(crate) fn result(outcome: CfxOutcome, detail: &str) -> ExperimentResult {
        ExperimentResult {
            experiment: Experiment {
                id: 0,
                test: "t".into(),
                trace: "t".into(),
                step: 3,
                stmt: "a.py:3:4".into(),
                occurrence: 1,
                file: "a.py".into(),
                line: 3,
                text: "if x:".into(),
                score: 0.5,
                force: Vec::new(),
                events: None,
                values: None,
            },
            outcome,
            detail: detail.into(),
            duration_ms: 5,
            runner: "warm".into(),
            forced: false,
            forced_report: None,
            patched: None,
            thrown: false,
        }
    }

    /// Void, timed-out and crashed experiments are counted by outcome and reason (the reason
    /// without its particulars), with an example; passes and failures are information.
    /// An experiment's limit comes from its control run, whatever the traced run took.
    #[test]
    fn experiment_limits_come_from_the_control_run() {
        assert_eq!(
            measured_limit(Duration::from_millis(20)),
            MIN_EXPERIMENT_LIMIT
        );
        assert_eq!(
            measured_limit(Duration::from_secs(5)),
            Duration::from_secs(15)
        );
    }

    #[test]
    fn experiments_without_information_are_counted_by_reason() {
        assert_eq!(degraded_summary(&[result(CfxOutcome::Pass, "")]), None);
        let rs = [
            result(CfxOutcome::Pass, ""),
            result(CfxOutcome::Fail, ""),
            result(CfxOutcome::Void, "test not collected: tests/t.py::test_a"),
            result(CfxOutcome::Void, "test not collected: tests/t.py::test_b"),
            result(CfxOutcome::Void, "branch instance not reached"),
            result(CfxOutcome::Timeout, "killed after 10000 ms"),
        ];
        let s = degraded_summary(&rs).unwrap();
        assert!(
            s.starts_with("4 of 6 counterfactual experiments gave no information: "),
            "{s}"
        );
        assert!(s.contains("1 timeout (killed after 10000 ms)"), "{s}");
        assert!(s.contains("1 void (branch instance not reached)"), "{s}");
        assert!(
            s.contains("2 void (test not collected; e.g. test not collected: tests/t.py::test_a)"),
            "{s}"
        );
        assert!(s.contains("--cfx-timeout"), "{s}");
        // a warm run's limit holds no process start-up; a cold one's does, and says so
        assert!(!s.contains("start-up"), "{s}");
        let mut cold = result(CfxOutcome::Timeout, "killed after 10000 ms");
        cold.runner = "cold".into();
        let s = degraded_summary(&[cold]).unwrap();
        assert!(
            s.contains("includes its start-up") && s.contains("--cfx-timeout"),
            "{s}"
        );
    }
}
