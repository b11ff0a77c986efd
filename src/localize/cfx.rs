//! Counterfactual experiments (paper §2.3, §3.3): plan, run, read back.
//!
//! **Plan**: after the first inference, the `k` most suspicious run-time branch conditions — value
//! vertices `⟨#@r⟩` of `branch` steps of `app` code in failing traces — ranked by posterior
//! `Pr(¬⟨#@r⟩ | e)`. An experiment re-runs the failing test with exactly that branch instance
//! (the `occurrence`-th evaluation of the statement in that test) inverted.
//!
//! **Run**: the dump's `[rerun]` command, one process per experiment, several in parallel, each
//! with a timeout. A flipped branch may loop forever or crash: a timeout or a crash is an outcome,
//! never an error.
//!
//! **Evidence**: for each experiment whose failing test then passes, a virtual `cfx` vertex with
//! edges from `⟨#@r⟩` and from each immediate successor of `⟨#@r⟩`, observed incorrect.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
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
    /// Posterior probability that the branch condition was evaluated incorrectly.
    pub score: f64,
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
}

/// Picks the `k` most suspicious branch instances. `p_incorrect` is indexed like `vertices`.
pub fn plan(dump: &Dump, vertices: &[Vertex], p_incorrect: &[f64], k: usize) -> Vec<Experiment> {
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
                score,
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
}

/// Runs the experiments of `plan` that `o.known` does not hold; the results follow `plan`.
pub fn run_missing(
    dump: &Dump,
    plan: &[Experiment],
    o: &RunOptions,
) -> Result<Vec<ExperimentResult>, String> {
    let known: std::collections::HashMap<_, &ExperimentResult> =
        o.known.iter().map(|k| (k.experiment.key(), k)).collect();
    let find = |e: &Experiment| known.get(&e.key()).copied();
    let missing: Vec<Experiment> = plan.iter().filter(|e| find(e).is_none()).cloned().collect();
    let mut fresh = if missing.is_empty() {
        Vec::new()
    } else {
        run(dump, &missing, o)?
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
    /// It fails as traced; the re-run took this long (process start-up included).
    Fails(Duration),
    /// It did not fail (or could not run): every experiment of the test is void for this reason.
    Unusable(String),
}

/// Re-runs each test of the plan once with nothing flipped (`{stmt}` empty, `{occurrence}` 0):
/// an experiment means something only if the unflipped re-run fails as the traced run did, and
/// its wall time (start-up of the re-run included) sets the experiments' time limit.
fn control_runs(
    dump: &Dump,
    plan: &[Experiment],
    o: &RunOptions,
    run: &(dyn Fn(&Experiment, Duration, bool) -> ExperimentResult + Sync),
) -> Vec<(String, Control)> {
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
        let r = run(c, limit, true);
        let took = Duration::from_millis(r.duration_ms);
        let verdict = match r.outcome {
            CfxOutcome::Fail => Control::Fails(took),
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
        };
        (c.test.clone(), verdict)
    })
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

/// Runs every experiment with the dump's `[rerun]` command, after one control run per test
/// ([`control_runs`]): experiments of a test whose control run does not fail are void (with
/// the reason), the others get `max(base limit, 3 × the control run's wall time)` unless
/// `--cfx-timeout` is given.
pub fn run(
    dump: &Dump,
    plan: &[Experiment],
    o: &RunOptions,
) -> Result<Vec<ExperimentResult>, String> {
    let rerun = dump
        .manifest
        .rerun
        .as_ref()
        .ok_or_else(|| "the dump has no [rerun] section".to_owned())?;
    let cwd: PathBuf = match &rerun.cwd {
        Some(c) if Path::new(c).is_absolute() => PathBuf::from(c),
        Some(c) => dump.dir.join(c),
        None => dump.dir.clone(),
    };
    if plan.is_empty() {
        return Ok(Vec::new());
    }
    let tmp = tempfile::tempdir().map_err(|e| format!("cannot create a temp dir: {e}"))?;
    let counter = std::sync::atomic::AtomicUsize::new(0);
    let run = |e: &Experiment, limit: Duration, control: bool| {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let out = tmp.path().join(format!("run{n}.json"));
        run_one(rerun, &dump.dir, &cwd, e, &out, limit, control)
    };
    let controls = control_runs(dump, plan, o, &run);
    let bar = o
        .progress
        .then(|| crate::progress::bar(plan.len() as u64, "counterfactual experiments"));
    let results: Vec<ExperimentResult> = crate::jobs::map(plan, o.jobs, |e| {
        let control = controls.iter().find(|(t, _)| *t == e.test).map(|c| &c.1);
        let r = match control {
            Some(Control::Unusable(why)) => ExperimentResult {
                experiment: e.clone(),
                outcome: CfxOutcome::Void,
                detail: why.clone(),
                duration_ms: 0,
            },
            Some(Control::Fails(took)) => {
                let limit = o
                    .timeout
                    .unwrap_or_else(|| base_timeout(dump, &e.test).max(*took * 3));
                run(e, limit, false)
            }
            None => run(e, o.timeout.unwrap_or(base_timeout(dump, &e.test)), false),
        };
        if let Some(b) = &bar {
            b.inc(1);
        }
        r
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(results)
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
    let dump_dir = std::fs::canonicalize(dump_dir).unwrap_or_else(|_| dump_dir.to_path_buf());
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
    }
    fn yes() -> bool {
        true
    }
    match std::fs::read_to_string(out)
        .ok()
        .and_then(|t| serde_json::from_str::<Reported>(&t).ok())
    {
        Some(r) if !r.flipped && !control => finish(CfxOutcome::Void, r.detail),
        Some(r) => {
            let o = match r.outcome.as_str() {
                "pass" => CfxOutcome::Pass,
                "fail" => CfxOutcome::Fail,
                _ => CfxOutcome::Crash,
            };
            finish(o, r.detail)
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
/// grouped by reason; `None` when every experiment passed or failed.
pub fn degraded_summary(results: &[ExperimentResult]) -> Option<String> {
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
        line.push_str(
            "; the time limit includes the re-run's start-up: raise it with --cfx-timeout SECONDS",
        );
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(outcome: CfxOutcome, detail: &str) -> ExperimentResult {
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
                score: 0.5,
            },
            outcome,
            detail: detail.into(),
            duration_ms: 5,
        }
    }

    /// Void, timed-out and crashed experiments are counted by outcome and reason (the reason
    /// without its particulars), with an example; passes and failures are information.
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
    }
}
