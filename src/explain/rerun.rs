//! The [`Executor`] of a dump: re-runs of one failing test through the dump's `[rerun]`
//! commands (the warm runner while it serves), each forcing a set of branch instances and
//! writing its trace (docs/trace-format.md "Forcing a set of branch instances").

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use super::causal::{Replayer, ValuedRun};
use super::pathgen::{Executor, Forced, Run, Verdict};
use super::values::Values;
use crate::dump::{Dump, Trace};
use crate::intern::Interner;
use crate::localize::cfx::{CfxOutcome, Experiment, ExperimentResult, Reruns, RunOptions};

/// Re-runs one test of a dump.
pub struct DumpExecutor<'a> {
    dump: &'a Dump,
    reruns: Reruns<'a>,
    test: usize,
    trace: String,
    tmp: tempfile::TempDir,
    runs: usize,
    limit: Duration,
}

/// The id of a re-run's trace in the files it writes.
const RUN_TRACE: &str = "r";

impl<'a> DumpExecutor<'a> {
    /// Starts the runners and makes the control run of `trace`'s test (nothing forced), which
    /// must fail; returns the executor and the control run's trace (the failing run `π_f` the
    /// forced runs are aligned with).
    pub fn start(dump: &'a Dump, trace: &Trace, o: &RunOptions) -> Result<(Self, Trace), String> {
        Self::start_test(dump, trace.test, o, CfxOutcome::Fail)
    }

    /// Starts the runners for test `test` (an index of the dump's manifest) and makes its
    /// control run, which must end with `expect` (a fixed version's test passes).
    pub fn start_test(
        dump: &'a Dump,
        test: usize,
        o: &RunOptions,
        expect: CfxOutcome,
    ) -> Result<(Self, Trace), String> {
        let id = dump.manifest.tests[test].id.clone();
        let mut ex = DumpExecutor {
            dump,
            reruns: Reruns::new(dump, o)?,
            test,
            trace: dump.manifest.tests[test].trace.clone().unwrap_or_default(),
            tmp: tempfile::tempdir().map_err(|e| format!("cannot create a temp dir: {e}"))?,
            runs: 0,
            limit: Duration::ZERO,
        };
        let limit = o
            .timeout
            .unwrap_or_else(|| Reruns::control_limit(dump, &id));
        let (r, dir) = ex.rerun(&[], limit, true, None);
        if r.outcome != expect {
            return Err(format!(
                "the control run of {id} (re-run alone, nothing forced) ended {:?}, not {expect:?}: {}",
                r.outcome, r.detail
            ));
        }
        ex.limit = o
            .timeout
            .unwrap_or_else(|| Reruns::limit_after(Duration::from_millis(r.duration_ms)));
        let control = ex.load(&dir)?.ok_or_else(|| {
            format!(
                "the control run of {id} wrote no trace into {}: the front-end cannot write \
                 a re-run's events (docs/trace-format.md \"Forcing a set of branch instances\")",
                dir.display()
            )
        })?;
        Ok((ex, control))
    }

    /// How the runs ran (warm, cold and why).
    pub fn summary(&self) -> String {
        self.reruns.summary()
    }

    fn rerun(
        &mut self,
        forced: &[Forced],
        limit: Duration,
        control: bool,
        values: Option<serde_json::Value>,
    ) -> (ExperimentResult, PathBuf) {
        self.runs += 1;
        let dir = self.tmp.path().join(format!("run{}", self.runs));
        let e = Experiment {
            id: self.runs,
            test: self.dump.manifest.tests[self.test].id.clone(),
            trace: self.trace.clone(),
            step: 0,
            stmt: String::new(),
            occurrence: 0,
            file: String::new(),
            line: 0,
            text: String::new(),
            score: 0.0,
            force: forced
                .iter()
                .map(|f| {
                    (
                        self.dump.stmts[f.stmt as usize].id.clone(),
                        f.occurrence,
                        u8::from(f.to),
                    )
                })
                .collect(),
            events: Some(dir.clone()),
            values,
        };
        (self.reruns.run(&e, limit, control), dir)
    }

    /// Re-runs with `forced` and the `values` request (docs/trace-format.md "Values, capture
    /// and patch"): the result and the directory the run wrote into.
    pub fn valued(
        &mut self,
        forced: &[Forced],
        values: serde_json::Value,
    ) -> (ExperimentResult, PathBuf) {
        // nothing forced: a control run (its outcome stands, no flip to check); recording
        // values costs a few times the run
        let limit = (self.limit * 4).max(Duration::from_secs(20));
        self.rerun(forced, limit, forced.is_empty(), Some(values))
    }

    /// Re-runs with `forced`, recording values: the run, `None` when it did not end with a
    /// verdict or wrote no trace (an error when what it wrote is malformed).
    pub fn valued_run(
        &mut self,
        forced: &[Forced],
        values: serde_json::Value,
        names: &mut Interner,
    ) -> Result<(Option<ValuedRun>, ExperimentResult), String> {
        let (r, dir) = self.valued(forced, values);
        if !matches!(r.outcome, CfxOutcome::Pass | CfxOutcome::Fail) {
            return Ok((None, r));
        }
        let Some(trace) = self.load(&dir)? else {
            return Ok((None, r));
        };
        if !dir.join("values.facts").is_file() {
            return Err(format!(
                "a re-run asked to record values wrote no values.facts into {} ({}): the \
                 front-end cannot record values (docs/trace-format.md \"Values, capture and patch\")",
                dir.display(),
                r.detail
            ));
        }
        let values = Values::load(&dir, &trace, names)?;
        let run = ValuedRun {
            failed: r.outcome == CfxOutcome::Fail,
            trace,
            values,
        };
        Ok((Some(run), r))
    }

    /// Re-runs made so far (the control run included).
    pub fn runs(&self) -> usize {
        self.runs
    }

    /// The trace a run wrote into `dir`, if it wrote one (an error when it is malformed).
    fn load(&self, dir: &std::path::Path) -> Result<Option<Trace>, String> {
        if !dir.join("step.facts").is_file() {
            return Ok(None);
        }
        self.dump
            .load_run(dir, RUN_TRACE, self.test)
            .map(Some)
            .map_err(|e| format!("a re-run's trace: {e}"))
    }
}

impl Executor for DumpExecutor<'_> {
    fn run(&mut self, forced: &[Forced]) -> Result<Run, String> {
        let (r, dir) = self.rerun(forced, self.limit, false, None);
        let verdict = match r.outcome {
            CfxOutcome::Pass => Verdict::Pass,
            CfxOutcome::Fail => Verdict::Fail,
            CfxOutcome::Crash => Verdict::Crash,
            CfxOutcome::Timeout => Verdict::Timeout,
            CfxOutcome::Void => Verdict::Unreached,
        };
        let ran = matches!(verdict, Verdict::Pass | Verdict::Fail | Verdict::Unreached);
        if ran && !r.forced {
            return Err(format!(
                "the re-run did not report on its forced set ({}): the front-end cannot force a \
                 set of branch instances",
                r.detail
            ));
        }
        let trace = self.load(&dir)?;
        if trace.is_none() && matches!(verdict, Verdict::Pass | Verdict::Fail) {
            return Err(format!(
                "a re-run that ended ({verdict:?}) wrote no trace into {}",
                dir.display()
            ));
        }
        let was = r
            .forced_report
            .as_ref()
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .map(|f| f["was"].as_u64().map(|w| w == 1))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Run {
            verdict,
            trace,
            detail: r.detail,
            was,
        })
    }
}

/// Seed 004's Induction through re-runs. Patch mode: the reference is the failing test with
/// `forced` switched. Regression mode: it is the fixed version's run of the test (`reference`,
/// nothing forced). A variable's failing value is carried over as the front-end's pickle,
/// captured by a re-run of the failing test (nothing forced) at the failing step.
pub struct DumpReplayer<'e, 'a, 'b> {
    failing: &'e mut DumpExecutor<'a>,
    reference: Option<&'e mut DumpExecutor<'b>>,
    forced: Vec<Forced>,
    /// Per failing step, the captured values by name (`None`: not capturable).
    captured: HashMap<u32, HashMap<String, Option<String>>>,
    /// Runs whose patch did not take (the step was not reached or a value not carried).
    pub unpatched: usize,
}

impl<'e, 'a, 'b> DumpReplayer<'e, 'a, 'b> {
    pub fn new(
        failing: &'e mut DumpExecutor<'a>,
        reference: Option<&'e mut DumpExecutor<'b>>,
        forced: Vec<Forced>,
    ) -> Self {
        DumpReplayer {
            failing,
            reference,
            forced,
            captured: HashMap::new(),
            unpatched: 0,
        }
    }

    /// The failing run's pickled values of `vars` before step `f0`, captured once per step.
    fn capture(&mut self, f0: u32, vars: &[String]) -> Result<Vec<Option<String>>, String> {
        let have = self.captured.entry(f0).or_default();
        let missing: Vec<&String> = vars.iter().filter(|v| !have.contains_key(*v)).collect();
        if !missing.is_empty() {
            let req = serde_json::json!({ "capture": { f0.to_string(): missing } });
            let (r, dir) = self.failing.valued(&[], req);
            let got = read_capture(&dir.join("capture.json"), f0);
            if got.is_none() && r.outcome != CfxOutcome::Fail {
                return Err(format!(
                    "the capture run of the failing test did not fail: {:?}, {}",
                    r.outcome, r.detail
                ));
            }
            let have = self.captured.entry(f0).or_default();
            for v in missing {
                let value = got.as_ref().and_then(|m| m.get(v).cloned().flatten());
                have.insert(v.clone(), value);
            }
        }
        let have = &self.captured[&f0];
        Ok(vars.iter().map(|v| have[v].clone()).collect())
    }
}

/// The values `capture.json` holds for `step` (`None` when the file is missing or malformed).
fn read_capture(path: &std::path::Path, step: u32) -> Option<HashMap<String, Option<String>>> {
    let text = std::fs::read_to_string(path).ok()?;
    let all: HashMap<String, HashMap<String, Option<String>>> = serde_json::from_str(&text).ok()?;
    all.get(&step.to_string()).cloned()
}

impl Replayer for DumpReplayer<'_, '_, '_> {
    fn induce(
        &mut self,
        f0: u32,
        p0: u32,
        vars: &[u32],
        names: &mut Interner,
    ) -> Result<Option<ValuedRun>, String> {
        let vars: Vec<String> = vars.iter().map(|&v| names.name(v).to_owned()).collect();
        let pickles = self.capture(f0, &vars)?;
        let mut patch = serde_json::Map::new();
        for (v, p) in vars.iter().zip(pickles) {
            let Some(p) = p else {
                self.unpatched += 1;
                return Ok(None); // not capturable: the subset cannot be tested
            };
            patch.insert(v.clone(), serde_json::Value::String(p));
        }
        let req = serde_json::json!({ "record": true, "patch": { p0.to_string(): patch } });
        let forced = self.forced.clone();
        let (run, r) = match self.reference.as_deref_mut() {
            Some(exec) => exec.valued_run(&forced, req, names)?,
            None => self.failing.valued_run(&forced, req, names)?,
        };
        if !r
            .patched
            .as_ref()
            .is_some_and(|p| p.contains(&u64::from(p0)))
        {
            self.unpatched += 1;
            return Ok(None);
        }
        Ok(run)
    }
}
