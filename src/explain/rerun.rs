//! The [`Executor`] of a dump: re-runs of one failing test through the dump's `[rerun]`
//! commands (the warm runner while it serves), each forcing a set of branch instances and
//! writing its trace (docs/trace-format.md "Forcing a set of branch instances").

use std::path::PathBuf;
use std::time::Duration;

use super::pathgen::{Executor, Forced, Run, Verdict};
use crate::dump::{Dump, Trace};
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
        let mut ex = DumpExecutor {
            dump,
            reruns: Reruns::new(dump, o)?,
            test: trace.test,
            trace: trace.id.clone(),
            tmp: tempfile::tempdir().map_err(|e| format!("cannot create a temp dir: {e}"))?,
            runs: 0,
            limit: Duration::ZERO,
        };
        let id = &dump.manifest.tests[trace.test].id;
        let limit = o.timeout.unwrap_or_else(|| Reruns::control_limit(dump, id));
        let (r, dir) = ex.rerun(&[], limit, true);
        if r.outcome != CfxOutcome::Fail {
            return Err(format!(
                "the control run of {id} (re-run alone, nothing forced) did not fail: {:?}, {}",
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
        };
        (self.reruns.run(&e, limit, control), dir)
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
        let (r, dir) = self.rerun(forced, self.limit, false);
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
        Ok(Run {
            verdict,
            trace,
            detail: r.detail,
        })
    }
}
