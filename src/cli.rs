//! Command-line interface: one function per subcommand. Every flag lives here.

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::error::Error;
use crate::infer::{BpOptions, Cpd, Schedule};
use crate::localize::cfx::RunOptions;
use crate::localize::ranking::Granularity;
use crate::localize::{CfxEvidence, CfxModel, CfxSource, CfxThrown, Mode, Options};
use crate::pipeline::{self, Rules};
use crate::report::Format as ReportFormat;

/// `derive` says on stderr how much it is about to write above this many edges.
const LARGE_EPG_EDGES: usize = 100_000;

#[derive(Parser, Debug)]
#[command(name = "prosecutor", version, about = "Bayesian counterfactual fault localization", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// parsed once per process: the size of `Localize` (all of localize's flags) does not matter
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Derive the error propagation graph (EPG) of a trace dump and print it.
    Derive {
        /// The trace dump directory.
        dump: PathBuf,
        /// A rule file (default: the built-in rules/epg.dl).
        #[arg(long)]
        rules: Option<PathBuf>,
        /// Use the compiled (crepe) default rules instead of interpreting a rule file.
        #[arg(long, conflicts_with = "rules")]
        compiled: bool,
        #[arg(long, value_enum, default_value = "tsv")]
        format: crate::epg::Format,
        /// Print only the edges this rule derived (repeatable; e.g. --rule R_DU) and the
        /// vertices they join: a large dump's whole EPG is millions of lines.
        #[arg(long = "rule", value_name = "NAME")]
        only: Vec<String>,
    },
    /// Rank the source lines most likely to be the fault.
    Localize(LocalizeArgs),
    /// Explain why the test fails: a ranked line's propagation path to the failure (with each
    /// vertex's posterior) and the nearest successful run (seed 003: the branch instances that
    /// had to evaluate differently for the failing test to pass).
    Explain(ExplainArgs),
    /// Run a test command under the tracer and write a trace dump (Python/pytest, or with
    /// --java JUnit 4 tests on the JVM).
    Trace {
        #[command(flatten)]
        trace: TraceArgs,
        /// The dump directory to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// Print the counterfactual experiments `localize` would run, as JSON.
    Plan {
        dump: PathBuf,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Rank lines with a baseline technique (SBFL formulas, CP) on the same dump.
    Baseline(crate::eval::BaselineArgs),
    /// Run PROSECUTOR, its ablations and every baseline on the cases of a manifest.
    Eval(crate::eval::EvalArgs),
    /// Benchmarks (results go to docs/performance.md).
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
    /// Validate a rule file: parse, safety and stratification checks.
    CheckRules {
        /// The rule file.
        file: PathBuf,
    },
}

#[derive(clap::Args, Debug, Clone)]
pub struct ModelArgs {
    /// A rule file (default: the built-in rules/epg.dl).
    #[arg(long, help_heading = "Model")]
    pub rules: Option<PathBuf>,
    /// Run a variant of `eval`'s table by its id (prosecutor, prosecutor-nocfx, prosecutor-f,
    /// prosecutor-fp, prosecutor-minrank, prosecutor-nocompress, prosecutor-nospectrum,
    /// prosecutor-eps01, prosecutor-noheap, prosecutor-failure-at-raise,
    /// prosecutor-passing-methods, prosecutor-cfx-successors,
    /// prosecutor-cfx-spread, prosecutor-cfx-coincidence, prosecutor-cfx-outcomes,
    /// prosecutor-cfx-thrown, prosecutor-cfx-thrown-weak, prosecutor-paper-rules, prosecutor-paper;
    /// src/variants.rs): its settings override the other model flags.
    #[arg(long, help_heading = "Model")]
    pub variant: Option<String>,
    /// Weight of the spectrum likelihood of each statement (docs/model.md; 0 = off, the
    /// paper's model).
    #[arg(long, default_value_t = crate::localize::SPECTRUM_WEIGHT, help_heading = "Model")]
    pub spectrum_weight: f64,
    /// ε of the spectrum likelihood: the probability that a test which does not execute the
    /// fault fails anyway (another cause; docs/model.md), in (0, 1).
    #[arg(long, default_value_t = crate::localize::spectrum::OTHER_CAUSE, help_heading = "Model")]
    pub other_cause: f64,
    /// How the F∪P model chooses its passing traces: coverage (greedy cover of the failing
    /// traces' statements, short traces first) or methods (the paper's shared methods).
    #[arg(long, value_enum, default_value = "coverage", help_heading = "Model")]
    pub passing_selection: crate::localize::PassingSelection,
    /// Follow values by variable name only, not through the heap (ignore the dump's
    /// heap.facts; rule R_HEAP then derives nothing).
    #[arg(long, help_heading = "Model")]
    pub no_heap: bool,
    /// Where a failure raised by the program's own `throw` / `raise` is observed: decision (the
    /// branch that sent control to it; the default) or raise (the exception itself, as in the
    /// paper).
    #[arg(long, value_enum, default_value = "decision", help_heading = "Model")]
    pub failure_at: crate::localize::evidence::FailureAt,
    /// Which traces build the model: f (failing only), fp (failing + passing), average (both,
    /// posteriors averaged; the default), both (both, min-rank aggregation as in the paper).
    #[arg(long, value_enum, default_value = "average", help_heading = "Model")]
    pub mode: Mode,
    /// Do not compress loops in traces (Algorithm 1).
    #[arg(long, help_heading = "Model")]
    pub no_compress: bool,
    /// How many of the dump's passing traces the F∪P model uses (at most); compare
    /// --max-passing, how many are traced.
    #[arg(long, default_value_t = 10, help_heading = "Model")]
    pub passing: usize,
    /// Step budget of a model (after loop compression; compare --step-cap, the recording limit
    /// per test while tracing): the failing traces are taken smallest first,
    /// then the passing ones, while they fit; what does not fit is left out with a warning, and
    /// when no failing trace fits the ranking is the spectrum likelihood alone; 0 = no limit.
    #[arg(long, default_value_t = crate::localize::DEFAULT_MAX_STEPS, help_heading = "Model")]
    pub max_steps: usize,
    /// Number of counterfactual experiments: the k most suspicious branch instances are each
    /// flipped in one re-run of their failing test (the paper's k).
    #[arg(
        long,
        default_value_t = 20,
        help_heading = "Counterfactual experiments"
    )]
    pub k: usize,
    /// What a successful counterfactual's cfx vertex depends on: the flipped branch value alone
    /// (branch), it and its successors (paper §3.3), or it and the statements the flipped branch
    /// instance controls (reroute).
    #[arg(
        long,
        value_enum,
        default_value_t,
        help_heading = "Counterfactual experiments"
    )]
    pub cfx_model: CfxModel,
    /// What an experiment's outcome is evidence of: a pass is certain proof against the
    /// flipped value (certain, the paper's), a pass may be a coincidence (coincidence), or that
    /// and a flip that still fails counts too (outcomes); docs/model.md.
    #[arg(
        long,
        value_enum,
        default_value_t,
        help_heading = "Counterfactual experiments"
    )]
    pub cfx_evidence: CfxEvidence,
    /// What a flip that passes by a thrown exception is evidence of: the call into the code
    /// under analysis that held the flip threw, and the test accepted the exception (an
    /// expected-exception check, which any throwing path satisfies). `ignore`: none (default);
    /// `evidence`: as any pass (the paper); `coincidence`: finite evidence, a pass that may be a
    /// coincidence (as `--cfx-evidence coincidence` has every pass). Reported by the JVM and
    /// Python front-ends.
    #[arg(
        long,
        value_enum,
        default_value_t,
        help_heading = "Counterfactual experiments"
    )]
    pub cfx_thrown: CfxThrown,
    /// At most N of the experiments flip instances of one statement (0: no limit, the paper's
    /// planner; `--variant prosecutor-cfx-spread` is 2).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        help_heading = "Counterfactual experiments"
    )]
    pub cfx_per_statement: usize,
    /// Noisy-OR strength p of the model's conditional distributions: a vertex with w incorrect
    /// parents is correct with probability p^w (the paper's p; compare --prior).
    #[arg(
        long,
        default_value_t = 0.85,
        help_heading = "Inference (belief propagation)"
    )]
    pub p: f64,
    /// Prior probability that a vertex without parents (a statement) is correct.
    #[arg(
        long,
        default_value_t = 0.85,
        help_heading = "Inference (belief propagation)"
    )]
    pub prior: f64,
    /// Belief propagation: convergence tolerance.
    #[arg(
        long,
        default_value_t = 1e-7,
        help_heading = "Inference (belief propagation)"
    )]
    pub tol: f64,
    /// Belief propagation: maximum iterations.
    #[arg(
        long,
        default_value_t = 2000,
        help_heading = "Inference (belief propagation)"
    )]
    pub max_iter: usize,
    /// Belief propagation: damping in [0, 1).
    #[arg(
        long,
        default_value_t = 0.0,
        help_heading = "Inference (belief propagation)"
    )]
    pub damping: f64,
    /// Belief propagation schedule of every run: sequential (in-place sweeps in topological
    /// order) or parallel (block Gauss-Seidel on every core; the blocks depend on the graph
    /// only). Default: the first, undamped run parallel and its retries sequential.
    #[arg(long, value_enum, help_heading = "Inference (belief propagation)")]
    pub schedule: Option<ScheduleArg>,
    /// Belief propagation: run the double loop (CCCP) from the start, instead of only when
    /// plain and damped BP do not converge.
    #[arg(long, help_heading = "Inference (belief propagation)")]
    pub double_loop: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ScheduleArg {
    Sequential,
    Parallel,
}

impl From<ScheduleArg> for Schedule {
    fn from(s: ScheduleArg) -> Schedule {
        match s {
            ScheduleArg::Sequential => Schedule::Sequential,
            ScheduleArg::Parallel => Schedule::Parallel,
        }
    }
}

impl ModelArgs {
    pub fn options(&self) -> Result<(Rules, Options), Error> {
        let mut rules = Rules::load(self.rules.as_deref())?;
        let mut o = Options {
            mode: self.mode,
            compress: !self.no_compress,
            passing: self.passing,
            max_steps: (self.max_steps > 0).then_some(self.max_steps),
            cpd: Cpd {
                p: self.p,
                prior: self.prior,
            },
            bp: BpOptions {
                tol: self.tol,
                max_iter: self.max_iter,
                damping: self.damping,
                schedule: self.schedule.map_or(Schedule::Sequential, Schedule::from),
                log_domain: false,
                prune_barren: true,
                double_loop: self.double_loop,
                stop_swinging: false,
            },
            first_schedule: self
                .schedule
                .map_or(crate::localize::FIRST_SCHEDULE, Schedule::from),
            granularity: Granularity::Line,
            k: self.k,
            cfx: CfxSource::Off,
            cfx_model: self.cfx_model,
            cfx_evidence: self.cfx_evidence,
            cfx_thrown: self.cfx_thrown,
            cfx_per_stmt: self.cfx_per_statement,
            spectrum_weight: self.spectrum_weight,
            other_cause: self.other_cause,
            heap: !self.no_heap,
            failure_at: self.failure_at,
            passing_selection: self.passing_selection,
            paths: 0,
        };
        if !(self.spectrum_weight.is_finite() && self.spectrum_weight >= 0.0) {
            return Err(Error::Other(format!(
                "--spectrum-weight must be a non-negative number, found {}",
                self.spectrum_weight
            )));
        }
        if !(self.other_cause > 0.0 && self.other_cause < 1.0) {
            return Err(Error::Other(format!(
                "--other-cause must be a probability strictly between 0 and 1, found {}",
                self.other_cause
            )));
        }
        if let Some(id) = &self.variant {
            if let Some(r) = crate::variants::Variant::by_id(id)?.apply(&mut o)? {
                rules = r;
            }
        }
        o.cpd.validate().map_err(|e| Error::Other(e.to_string()))?;
        o.bp.validate().map_err(|e| Error::Other(e.to_string()))?;
        Ok((rules, o))
    }
}

/// A flag's number of seconds: finite and positive (a `Duration` cannot hold anything else).
pub fn positive_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 => Ok(t),
        _ => Err(format!("{s:?} is not a positive number of seconds")),
    }
}

/// Help heading of the tracing flags (Python, and those Java shares).
const TRACING: &str = "Tracing (with --src SRC -- TEST COMMAND)";
/// Help heading of the flags of the Java front-end.
const TRACING_JAVA: &str = "Tracing Java (with --java)";

#[derive(clap::Args, Debug, Clone)]
pub struct TraceArgs {
    /// The code under analysis (its statements are the suspects); tests outside it are test code.
    #[arg(long, conflicts_with = "java", help_heading = TRACING)]
    pub src: Option<PathBuf>,
    /// Per-test timeout in seconds (default 10): a test running longer fails as a timeout.
    /// Given, it is also the plain pre-run's limit (a test that does not end within it hangs);
    /// the default allows twice as long there.
    #[arg(long, value_parser = positive_seconds, help_heading = TRACING)]
    pub test_timeout: Option<f64>,
    /// How many passing tests get a full trace in the dump (the others keep only their
    /// coverage); compare --passing, how many of the traced ones a model uses.
    #[arg(long, default_value_t = 20, help_heading = TRACING)]
    pub max_passing: usize,
    /// Steps recorded per test while tracing; a longer test's trace is cut there (with a
    /// warning). Default: 2,000,000 for `trace`; for `localize` and `explain` one step past
    /// --max-steps (at most 2,000,000), since a longer trace cannot enter the model unless loop
    /// compression shrinks it.
    #[arg(long, help_heading = TRACING)]
    pub step_cap: Option<usize>,
    /// Files under SRC matching GLOB (relative to SRC, or a file name; repeatable) are test
    /// code, not suspects: test helpers pytest does not collect tests from. Files pytest collects,
    /// conftest.py and the modules in a test directory under SRC (tests/ holding collected
    /// tests) are test code without it; the dump's warnings list every file so treated.
    #[arg(long, value_name = "GLOB", conflicts_with = "java", help_heading = TRACING)]
    pub exclude: Vec<String>,
    /// Do not run the test command once without tracing first. The plain pre-run measures each
    /// test: a test's time limit under tracing becomes at least 150 times its plain duration, and
    /// tests whose outcome tracing changes (pass plainly, fail traced, or the reverse) are left
    /// out of the dump with a warning. Skip it for suites too slow to run twice (also
    /// `PROSECUTOR_PLAIN_RUN=0`; `eval --no-plain-run`). With --java the plain run happens in
    /// the tracing JVM (classes not instrumented) and the time limit is not raised: a test that
    /// passes plainly and runs past the limit traced is left out.
    #[arg(long, help_heading = TRACING)]
    pub no_plain_run: bool,
    /// Every test passing is no error: trace a fixed version, the reference of `explain
    /// --reference` (Python).
    #[arg(long, conflicts_with = "java", help_heading = TRACING)]
    pub passing_ok: bool,
    /// Begin every trace with the import-time code of the modules under test (module and class
    /// bodies run when pytest imports them), so that a wrong module constant, class attribute or
    /// default argument can be ranked (also `PROSECUTOR_SETUP=1`; `eval --import-time`). Off by
    /// default: on real projects its statements crowd the ranking (docs/evaluation.md).
    #[arg(long, conflicts_with = "java", help_heading = TRACING)]
    pub import_time: bool,
    /// Trace JUnit 4 tests on the JVM instead of a pytest command: the words after `--` are
    /// test classes (`org.example.FooTest`) or methods (`org.example.FooTest::testBar`), run in
    /// the current directory, the project root (needs a JDK with ASM and JUnit 4: `apt-get
    /// install default-jdk-headless libasm-java junit4 libhamcrest-java`). --test-timeout,
    /// --max-passing and --step-cap apply as for Python.
    #[arg(long, help_heading = TRACING_JAVA)]
    pub java: bool,
    /// The compiled classes of the code under analysis (e.g. target/classes); required with
    /// --java.
    #[arg(long, value_name = "DIR", requires = "java", help_heading = TRACING_JAVA)]
    pub classes: Option<PathBuf>,
    /// The compiled test classes (e.g. target/test-classes); required with --java.
    #[arg(long, value_name = "DIR", requires = "java", help_heading = TRACING_JAVA)]
    pub test_classes: Option<PathBuf>,
    /// More class path entries the tests need (libraries), ':'-separated as for `java -cp`.
    /// JUnit 4 and Hamcrest are added unless it holds a junit jar.
    #[arg(long, value_name = "CLASSPATH", requires = "java", help_heading = TRACING_JAVA)]
    pub cp: Option<String>,
    /// A directory holding source trees (repeatable), where the dump finds the sources of
    /// the classes; default: src/main/java and src/test/java (those that exist), else the
    /// current directory.
    #[arg(long = "source-root", value_name = "DIR", requires = "java", help_heading = TRACING_JAVA)]
    pub source_roots: Vec<PathBuf>,
    /// An option for the JVM that runs the tests (repeatable; e.g. `--jvm-arg=-Xmx2g
    /// --jvm-arg=-Duser.timezone=UTC`); the re-runs of the experiments get it too.
    #[arg(long = "jvm-arg", value_name = "OPTION", allow_hyphen_values = true, requires = "java", help_heading = TRACING_JAVA)]
    pub jvm_args: Vec<String>,
    /// A test whose failure witnesses the fault (repeatable; a class or `Class::method`): any
    /// other test that fails is left out of the dump, with a warning (e.g. a test that fails for
    /// a reason unrelated to the bug under study). Default: every failing test.
    #[arg(long = "witness", value_name = "TEST", requires = "java", help_heading = TRACING_JAVA)]
    pub witnesses: Vec<String>,
    /// The test command, after `--` (e.g. `-- pytest tests/`); with --java, the JUnit test
    /// classes or methods (e.g. `-- org.example.FooTest org.example.BarTest::testBaz`).
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// The step cap when `--step-cap` is not given: [`crate::frontend::DEFAULT_STEP_CAP`], and for
/// a dump traced for a model with a step budget (`localize`, `explain`) at most one step past
/// the budget. A trace cut there that loop compression does not shrink is left out of the model,
/// as the whole trace would be; recording it further would only cost time (QuixBugs
/// `longest_common_subsequence`: a failing test recorded to 2,000,000 steps for 31 s, then left
/// out of the model of --max-steps 1,000,000).
pub fn default_step_cap(budget: Option<usize>) -> usize {
    let cap = crate::frontend::DEFAULT_STEP_CAP;
    budget.map_or(cap, |b| cap.min(b.saturating_add(1)))
}

impl TraceArgs {
    /// Whether these flags ask for a trace (rather than naming none: `localize DUMP`).
    fn given(&self) -> bool {
        self.java || !self.command.is_empty()
    }

    /// Traces into `out`; `print_warnings`: the front-end's warnings on stderr (`localize` prints
    /// them itself, with its own, from the dump); `budget`: the step budget of the model the
    /// dump is for (`localize --max-steps`), which bounds the default step cap.
    fn run(
        &self,
        out: PathBuf,
        print_warnings: bool,
        early: Option<&RunOptions>,
        budget: Option<usize>,
    ) -> Result<crate::frontend::TraceSummary, Error> {
        let cap = self.step_cap.unwrap_or_else(|| default_step_cap(budget));
        let s = if self.java {
            self.run_java(out, cap)?
        } else {
            self.run_python(out, early, cap)?
        };
        for w in s.warnings.iter().filter(|_| print_warnings) {
            eprintln!("warning: {w}");
        }
        crate::progress::note(
            false,
            &format!(
                "tests: {} run ({} failing, {} passing), {} with a full trace, {} untraced; \
                 dump: {}",
                s.failing + s.passing,
                s.failing,
                s.passing,
                s.traced,
                s.untraced,
                s.dump.display()
            ),
        );
        Ok(s)
    }

    /// `early`: the experiments to follow; their warm runner is started while the traced run
    /// runs (unless they run cold).
    fn run_python(
        &self,
        out: PathBuf,
        early: Option<&RunOptions>,
        step_cap: usize,
    ) -> Result<crate::frontend::TraceSummary, Error> {
        let src = self.src.clone().ok_or_else(|| {
            Error::Other("--src SRC is required to trace a test command".to_owned())
        })?;
        let cwd = std::env::current_dir()
            .map_err(|e| Error::Other(format!("no current directory: {e}")))?;
        let mut o =
            crate::frontend::python::PythonTraceOptions::new(src, out, self.command.clone());
        o.cwd = cwd;
        if let Some(t) = self.test_timeout {
            o.test_timeout = std::time::Duration::from_secs_f64(t);
            o.test_timeout_given = true;
        }
        o.max_passing = self.max_passing;
        o.step_cap = step_cap;
        o.test_globs = self.exclude.clone();
        o.plain_run &= !self.no_plain_run;
        o.import_time |= self.import_time;
        o.passing_ok = self.passing_ok;
        o.progress = true;
        let early = early.filter(|r| {
            !matches!(
                crate::localize::cfx::CfxRunner::resolve(r.runner),
                Ok(crate::localize::cfx::CfxRunner::Cold) | Err(_)
            )
        });
        let Some(run) = early else {
            return crate::frontend::python::trace(&o).map_err(|e| Error::Other(e.to_string()));
        };
        o.serve_preview = true;
        let dump = o.out.clone();
        std::thread::scope(|s| {
            let traced = s.spawn(|| crate::frontend::python::trace(&o));
            crate::localize::cfx::early::watch(&dump, run.jobs, &run.early, || {
                traced.is_finished()
            });
            traced
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
        .map_err(|e| Error::Other(e.to_string()))
    }

    fn run_java(
        &self,
        out: PathBuf,
        step_cap: usize,
    ) -> Result<crate::frontend::TraceSummary, Error> {
        let need = |flag: &str, what: &str| {
            Error::Other(format!(
                "--java needs {flag} DIR, the compiled {what} (e.g. `--classes target/classes \
                 --test-classes target/test-classes`)"
            ))
        };
        let classes = self
            .classes
            .clone()
            .ok_or_else(|| need("--classes", "classes of the code under analysis"))?;
        let test_classes = self
            .test_classes
            .clone()
            .ok_or_else(|| need("--test-classes", "test classes"))?;
        let mut o = crate::frontend::java::JavaTraceOptions::new(
            classes,
            test_classes,
            out,
            self.command.clone(),
        );
        o.cwd = std::env::current_dir()
            .map_err(|e| Error::Other(format!("no current directory: {e}")))?;
        o.classpath = self
            .cp
            .as_deref()
            .map(|cp| {
                std::env::split_paths(cp)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        o.source_roots = self.source_roots.clone();
        o.jvm_args = self.jvm_args.clone();
        o.witnesses = self.witnesses.clone();
        o.plain_run &= !self.no_plain_run;
        if let Some(t) = self.test_timeout {
            o.test_timeout = std::time::Duration::from_secs_f64(t);
        }
        o.max_passing = self.max_passing;
        o.step_cap = step_cap;
        o.progress = true;
        crate::frontend::java::trace(&o).map_err(|e| Error::Other(e.to_string()))
    }
}

#[derive(clap::Args, Debug)]
pub struct LocalizeArgs {
    #[command(flatten)]
    pub input: RunInput,
    /// Print only the N most suspicious entries (0: all of them, as without --top).
    #[arg(long, help_heading = "Output")]
    pub top: Option<usize>,
    #[arg(long, value_enum, default_value = "table", help_heading = "Output")]
    pub format: ReportFormat,
    /// Also write a self-contained HTML report to FILE (ranking, highlighted sources, the
    /// propagation path of each top line, tests, experiments, convergence; docs/formats.md).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub html: Option<PathBuf>,
    /// Rank lines, statements or methods (a method's score is its most suspicious statement's).
    #[arg(long, value_enum, default_value = "line", help_heading = "Output")]
    pub granularity: Granularity,
}

#[derive(clap::Args, Debug)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub input: RunInput,
    /// The ranked line to explain, as FILE:LINE (default: the top one).
    #[arg(long, value_name = "FILE:LINE", help_heading = "Explain")]
    pub line: Option<String>,
    /// The failing test whose run the nearest successful run is searched from (default: the
    /// test the propagation path ends in, else the first failing test).
    #[arg(long, value_name = "TEST", help_heading = "Explain")]
    pub test: Option<String>,
    /// Re-runs the nearest-successful-run search may make (each forces a set of branch
    /// instances of the failing run).
    #[arg(long, default_value_t = 200, help_heading = "Explain")]
    pub max_runs: usize,
    /// Also force loop branches (loop heads); seed 003's prototype never does.
    #[arg(long, help_heading = "Explain")]
    pub force_loops: bool,
    /// Do not search for the nearest successful run (nor, then, compute the causal path).
    #[arg(long, help_heading = "Explain")]
    pub no_search: bool,
    /// Patched re-runs seed 004's causal path may make (its Induction tests); 0: no causal path.
    #[arg(long, default_value_t = 200, help_heading = "Explain")]
    pub causal_runs: usize,
    /// Causal path: Single-Step (a patched re-run) at every aligned entry, without the
    /// Def-Free and Definition fast passes.
    #[arg(long, help_heading = "Explain")]
    pub no_fast_passes: bool,
    /// Causal path: the longest failing run (steps) whose values are recorded; a longer one
    /// gets no causal path (a warning says so).
    #[arg(long, default_value_t = crate::explain::causal::DEFAULT_MAX_STEPS, help_heading = "Explain")]
    pub causal_max_steps: usize,
    /// Causal path in regression mode: a dump of the fixed version, traced with the same test
    /// (e.g. `prosecutor trace --src fixed_src --out REF -- TEST COMMAND`); default: patch mode,
    /// against the nearest successful run.
    #[arg(long, value_name = "DUMP", help_heading = "Explain")]
    pub reference: Option<PathBuf>,
    /// The faulty lines, when known (repeatable; FILE:LINE[,LINE...]): the nearest successful
    /// run's report is then scored as seed 003 scores it (1 − |DS*| / |PDG|).
    #[arg(long, value_name = "FILE:LINE", help_heading = "Explain")]
    pub faulty: Vec<String>,
    #[arg(long, value_enum, default_value = "table", help_heading = "Output")]
    pub format: crate::explain::report::Format,
}

/// What `localize` and `explain` run on: a dump or tests to trace, the model, and how the
/// counterfactual experiments run.
#[derive(clap::Args, Debug)]
pub struct RunInput {
    /// A trace dump directory (or give --src SRC -- TEST COMMAND, or --java ... -- TEST..., to
    /// trace first).
    pub dump: Option<PathBuf>,
    #[command(flatten)]
    pub trace: TraceArgs,
    /// Keep the dump written when tracing (default: a temporary directory).
    #[arg(long, help_heading = TRACING)]
    pub keep_dump: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Counterfactual outcomes from a file (JSON list: `prosecutor plan` entries with an "outcome").
    #[arg(
        long,
        conflicts_with = "no_cfx",
        help_heading = "Counterfactual experiments"
    )]
    pub cfx: Option<PathBuf>,
    /// Do not run counterfactual experiments.
    #[arg(long, help_heading = "Counterfactual experiments")]
    pub no_cfx: bool,
    /// Parallel experiments (default: number of CPUs).
    #[arg(long, help_heading = "Counterfactual experiments")]
    pub jobs: Option<usize>,
    /// Timeout of one experiment in seconds (default: 3x its test's control run, at least 2 s,
    /// and at least 10 s for a run in a new process).
    #[arg(long, value_parser = positive_seconds, help_heading = "Counterfactual experiments")]
    pub cfx_timeout: Option<f64>,
    /// How experiments run: warm (one test session started once, each run a forked child; the
    /// dump's [rerun] serve command), cold (a process per run), auto (warm, cold when the dump
    /// has no serve command or the warm runner fails). Default: $PROSECUTOR_CFX_RUNNER, else auto.
    #[arg(long, value_enum, help_heading = "Counterfactual experiments")]
    pub cfx_runner: Option<crate::localize::cfx::CfxRunner>,
}

impl RunInput {
    /// The dump to read: the one given, or the one tracing writes (into `keep_dump`, else a
    /// directory under `tmp`, which the caller keeps alive).
    pub fn dump_dir(&self, tmp: &mut Option<tempfile::TempDir>) -> Result<PathBuf, Error> {
        self.dump_dir_with(tmp, None)
    }

    /// As [`Self::dump_dir`]; `early`: the experiments that will follow, whose warm runner is
    /// then started while a Python test command is traced (`localize::cfx::early`).
    pub fn dump_dir_with(
        &self,
        tmp: &mut Option<tempfile::TempDir>,
        early: Option<&RunOptions>,
    ) -> Result<PathBuf, Error> {
        match (&self.dump, self.trace.given()) {
            (Some(d), false) => Ok(d.clone()),
            (Some(_), true) => Err(Error::Other(
                "give either a DUMP or tests to trace (--src SRC -- TEST COMMAND, or \
                 --java ... -- TEST...), not both"
                    .to_owned(),
            )),
            (None, true) => {
                let out = match &self.keep_dump {
                    Some(p) => p.clone(),
                    None => {
                        let t = tempfile::tempdir()
                            .map_err(|e| Error::Other(format!("cannot create a temp dir: {e}")))?;
                        let out = t.path().join("dump");
                        *tmp = Some(t);
                        out
                    }
                };
                let budget = (self.model.max_steps > 0).then_some(self.model.max_steps);
                Ok(self.trace.run(out, false, early, budget)?.dump)
            }
            (None, false) => Err(Error::Other(
                "give a DUMP directory, or --src SRC -- TEST COMMAND, or \
                 --java --classes DIR --test-classes DIR -- TEST..."
                    .to_owned(),
            )),
        }
    }

    /// How re-runs run (experiments, and `explain`'s path generation).
    pub fn run_options(&self) -> RunOptions {
        RunOptions {
            jobs: self
                .jobs
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
            timeout: self.cfx_timeout.map(std::time::Duration::from_secs_f64),
            progress: true,
            known: Vec::new(),
            runner: self.cfx_runner,
            early: Default::default(),
        }
    }

    /// The rules and the localize options the flags give.
    pub fn options(&self) -> Result<(Rules, crate::localize::Options), Error> {
        let (rules, mut o) = self.model.options()?;
        let variant_cfx = match &self.model.variant {
            Some(id) => crate::variants::Variant::by_id(id)?.cfx(),
            None => true,
        };
        o.cfx = if self.no_cfx || !variant_cfx {
            CfxSource::Off
        } else if let Some(p) = &self.cfx {
            CfxSource::Results(p.clone())
        } else {
            CfxSource::Run(self.run_options())
        };
        Ok((rules, o))
    }
}

#[derive(Subcommand, Debug)]
pub enum BenchWhat {
    /// Load + forward pass + rules throughput on a synthetic dump.
    Derive {
        #[arg(long, default_value_t = 1_000_000)]
        steps: usize,
        #[arg(long, default_value_t = 3)]
        runs: usize,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// A rule file (default: the built-in rules, interpreted).
        #[arg(long)]
        rules: Option<PathBuf>,
    },
    /// Loop compression (Algorithm 1) throughput on a loop-heavy synthetic dump.
    Compress {
        #[arg(long, default_value_t = 10_000_000)]
        steps: usize,
        #[arg(long, default_value_t = 3)]
        runs: usize,
        #[arg(long, default_value_t = 42)]
        seed: u64,
    },
    /// `localize` without counterfactuals on a synthetic dump (or on --dump DIR).
    Localize {
        #[arg(long, default_value_t = 500_000)]
        steps: usize,
        #[arg(long, default_value_t = 3)]
        runs: usize,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Time this trace dump instead of a synthetic one (it is only read).
        #[arg(long)]
        dump: Option<PathBuf>,
        /// Also time BP on the whole graph (no barren-vertex pruning) as a same-run reference.
        #[arg(long)]
        reference: bool,
    },
    /// Loopy BP on a synthetic EPG-shaped network (1 vs several threads).
    Bp {
        #[arg(long, default_value_t = 1_000_000)]
        vertices: usize,
        #[arg(long, default_value_t = 2)]
        threads: usize,
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// Write a synthetic dump of about `steps` steps.
    Gen {
        out: PathBuf,
        #[arg(long, default_value_t = 100_000)]
        steps: usize,
        #[arg(long, default_value_t = 42)]
        seed: u64,
    },
}

pub fn try_main() -> Result<i32, Error> {
    let cli = Cli::parse();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match cli.command {
        Command::Derive {
            dump,
            rules,
            compiled,
            format,
            only,
        } => {
            let rules = if compiled {
                Rules::Compiled
            } else {
                Rules::load(rules.as_deref())?
            };
            let dump = crate::dump::Dump::load(&dump)?;
            let (mut epg, _) = pipeline::derive_all(&dump, &rules)?;
            if !only.is_empty() {
                epg = epg.only_rules(&only).map_err(Error::Other)?;
            }
            if epg.edges.len() > LARGE_EPG_EDGES {
                eprintln!(
                    "prosecutor: note: writing {} vertices and {} edges; --rule NAME prints the \
                     edges of one rule",
                    epg.vertices.len(),
                    epg.edges.len()
                );
            }
            match format {
                crate::epg::Format::Tsv => crate::epg::write_tsv(&mut out, &dump, &epg),
                crate::epg::Format::Csv => crate::epg::write_csv(&mut out, &dump, &epg),
                crate::epg::Format::Json => crate::epg::write_json(&mut out, &dump, &epg),
                crate::epg::Format::Dot => crate::epg::write_dot(&mut out, &dump, &epg),
            }
            .map_err(Error::Output)?;
        }
        Command::Localize(a) => {
            let mut tmp = None;
            let (rules, mut o) = a.input.options()?;
            let runs = match &o.cfx {
                CfxSource::Run(r) => Some(r),
                _ => None,
            };
            let dump_dir = a.input.dump_dir_with(&mut tmp, runs)?;
            o.granularity = a.granularity;
            if a.html.is_some() {
                o.paths = crate::html::PATHS;
            }
            let dump = crate::dump::Dump::load(&dump_dir)?;
            let report = crate::localize::localize(&dump, &rules, &o)?;
            for warning in &report.warnings {
                eprintln!("prosecutor: warning: {warning}");
            }
            if let Some(file) = &a.html {
                crate::html::write(file, &crate::html::localize_page(&dump, &report))?;
            }
            crate::report::write(&mut out, &report, a.format, a.top).map_err(Error::Output)?;
        }
        Command::Explain(a) => {
            let mut tmp = None;
            let dump_dir = a.input.dump_dir(&mut tmp)?;
            let (rules, o) = a.input.options()?;
            let dump = crate::dump::Dump::load(&dump_dir)?;
            let config = crate::explain::pathgen::Config {
                loops: a.force_loops,
                max_runs: a.max_runs,
            };
            let req = crate::explain::Request {
                line: a.line.clone(),
                test: a.test.clone(),
                search: (!a.no_search).then(|| (config, a.input.run_options())),
                causal: (a.causal_runs > 0).then_some(crate::explain::causal::Config {
                    max_runs: a.causal_runs,
                    fast: !a.no_fast_passes,
                    max_steps: a.causal_max_steps,
                }),
                reference: a.reference.clone(),
                faulty: a
                    .faulty
                    .iter()
                    .map(|f| crate::eval::score::FaultyLines::parse(f))
                    .collect::<Result<_, _>>()
                    .map_err(Error::Other)?,
            };
            let ex = crate::explain::explain(&dump, &rules, &o, &req).map_err(Error::Other)?;
            for warning in &ex.warnings {
                eprintln!("prosecutor: warning: {warning}");
            }
            ex.write(&mut out, a.format).map_err(Error::Output)?;
        }
        Command::Trace { trace, out: dir } => {
            let s = trace.run(dir, true, None, None)?;
            writeln!(out, "{}", s.dump.display()).map_err(Error::Output)?;
        }
        Command::Plan { dump, model } => {
            let (rules, o) = model.options()?;
            let dump = crate::dump::Dump::load(&dump)?;
            let plan = crate::localize::plan(&dump, &rules, &o)?;
            serde_json::to_writer_pretty(&mut out, &plan).map_err(|e| Error::Output(e.into()))?;
            writeln!(out).map_err(Error::Output)?;
        }
        Command::Baseline(a) => return crate::eval::run_baseline(&a, &mut out),
        Command::Eval(a) => return crate::eval::run_eval(&a, &mut out),
        Command::Bench { what } => match what {
            BenchWhat::Derive {
                steps,
                runs,
                seed,
                rules,
            } => {
                let rules = Rules::load(rules.as_deref())?;
                let compiled_too = !matches!(rules, Rules::Compiled);
                let report = crate::bench::derive(steps, runs, seed, &rules, compiled_too)?;
                write!(out, "{report}").map_err(Error::Output)?;
            }
            BenchWhat::Compress { steps, runs, seed } => {
                write!(out, "{}", crate::bench::compress(steps, runs, seed)?)
                    .map_err(Error::Output)?;
            }
            BenchWhat::Localize {
                steps,
                runs,
                seed,
                dump,
                reference,
            } => {
                let rules = Rules::default_rules();
                let input = match &dump {
                    Some(d) => crate::bench::LocalizeInput::Dump(d),
                    None => crate::bench::LocalizeInput::Synthetic { steps, seed },
                };
                let report = crate::bench::localize(input, runs, reference, &rules)?;
                write!(out, "{report}").map_err(Error::Output)?;
            }
            BenchWhat::Bp {
                vertices,
                threads,
                runs,
            } => {
                write!(
                    out,
                    "{}",
                    crate::infer::bench::bench_report(vertices, threads, runs, false)
                )
                .map_err(Error::Output)?;
            }
            BenchWhat::Gen {
                out: dir,
                steps,
                seed,
            } => {
                let n = crate::bench::generate(&dir, steps, seed)?;
                writeln!(out, "wrote {} ({n} steps)", dir.display()).map_err(Error::Output)?;
            }
        },
        Command::CheckRules { file } => {
            let rules = Rules::load(Some(&file))?;
            writeln!(out, "{}: ok ({})", file.display(), rules.describe())
                .map_err(Error::Output)?;
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    fn localize_help() -> String {
        let mut cmd = super::Cli::command();
        cmd.find_subcommand_mut("localize")
            .expect("localize subcommand")
            .render_long_help()
            .to_string()
    }

    /// `--variant`'s help names every variant of `eval`'s table (it went stale once).
    #[test]
    fn variant_help_names_every_variant() {
        let help = localize_help();
        for v in crate::variants::VARIANTS {
            assert!(
                help.contains(v.id),
                "--variant's help does not name {}",
                v.id
            );
        }
    }

    /// `localize --help` groups its options under headings instead of one flat list.
    #[test]
    fn localize_help_is_grouped() {
        let help = localize_help();
        let at = |h: &str| help.find(h).unwrap_or_else(|| panic!("no heading {h:?}"));
        let tracing = at("\nTracing (with --src SRC -- TEST COMMAND):");
        let java = at("\nTracing Java (with --java):");
        let model = at("\nModel:");
        let cfx = at("\nCounterfactual experiments:");
        let infer = at("\nInference (belief propagation):");
        let output = at("\nOutput:");
        // each flag sits under its own heading
        let under = |flag: &str, from: usize| {
            let line = format!("\n      {flag} ");
            let i = help.find(&line).unwrap_or_else(|| panic!("no {flag}"));
            assert!(i > from, "{flag} is not under its heading");
        };
        under("--step-cap", tracing);
        assert!(java > tracing);
        for flag in [
            "--java",
            "--classes <DIR>",
            "--test-classes <DIR>",
            "--cp <CLASSPATH>",
            "--source-root <DIR>",
        ] {
            let line = format!("\n      {flag}\n");
            assert!(
                help.find(&line).is_some_and(|i| i > java),
                "{flag} is not under its heading"
            );
        }
        under("--max-steps", model);
        under("--k", cfx);
        under("--prior", infer);
        under("--top", output);
    }
}
