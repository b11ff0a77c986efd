//! Running one case: get a dump (trace, or reuse), run every technique on it, locate the fault.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::dump::Dump;
use crate::localize::cfx::{ExperimentResult, RunOptions};
use crate::localize::ranking::{rank, Granularity, Ranked};
use crate::localize::{self, CfxSource, Options};
use crate::pipeline::Rules;
use crate::variants::{Variant, VARIANTS};

use super::baseline::{self, Technique};
use super::manifest::{Case, Frontend, JavaTarget, Reference, Source};
use super::score::{filter_ranking, locate, path_suffix_eq, Located};

/// A technique of the evaluation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tech {
    /// PROSECUTOR or one of its ablations (declared in `crate::variants`).
    Prosecutor(&'static Variant),
    Baseline(Technique),
}

impl Tech {
    /// Every technique, in table order.
    pub fn all() -> Vec<Tech> {
        VARIANTS
            .iter()
            .map(Tech::Prosecutor)
            .chain(Technique::all().into_iter().map(Tech::Baseline))
            .collect()
    }

    /// PROSECUTOR as shipped.
    pub fn full() -> Tech {
        Tech::Prosecutor(Variant::full())
    }

    pub fn is_full(self) -> bool {
        matches!(self, Tech::Prosecutor(v) if v.is_full())
    }

    /// Machine name (cases.csv).
    pub fn id(self) -> &'static str {
        match self {
            Tech::Prosecutor(v) => v.id,
            Tech::Baseline(t) => t.name(),
        }
    }

    /// Display name (summary.md, topk.svg).
    pub fn label(self) -> &'static str {
        match self {
            Tech::Prosecutor(v) => v.label,
            Tech::Baseline(t) => t.label(),
        }
    }
}

/// Settings shared by all cases.
pub struct Settings<'a> {
    pub rules: &'a Rules,
    /// Where dumps of traced cases go (`OUT/dumps/<name>`) and experiment outcomes (`OUT/cfx`).
    pub out: PathBuf,
    /// Run counterfactual experiments (when the dump has a `[rerun]` recipe).
    pub cfx: bool,
    pub cfx_jobs: usize,
    pub cfx_timeout: Option<Duration>,
    /// What a successful experiment's `cfx` vertex depends on (every PROSECUTOR variant).
    pub cfx_model: localize::CfxModel,
    /// Reuse experiment outcomes an earlier run wrote to `OUT/cfx/` (see [`CfxCache::load`]).
    pub reuse_cfx: bool,
    /// Default per-test time limit when tracing.
    pub test_timeout: Duration,
    /// `--test-timeout` was given: the plain pre-run's limit is `test_timeout`, not twice it.
    pub test_timeout_given: bool,
    /// Step limit of every PROSECUTOR model (see `localize::Options::max_steps`).
    pub max_steps: Option<usize>,
    /// Tracing: skip the plain pre-run; begin traces with the import-time code.
    pub no_plain_run: bool,
    pub import_time: bool,
    /// `eval --explain`: seeds 003 and 004 on every case (`None`: not run).
    pub explain: Option<ExplainSettings>,
}

/// How `eval --explain` explains a case.
#[derive(Debug, Clone, Copy)]
pub struct ExplainSettings {
    /// Re-runs seed 003's search may make (`explain --max-runs`).
    pub max_runs: usize,
    /// Patched re-runs seed 004's causal path may make (`explain --causal-runs`; 0: none).
    pub causal_runs: usize,
}

/// Seed 003's nearest successful run, as `explain --faulty` reports it (`path_generation`).
#[derive(Debug, Clone, PartialEq)]
pub struct NearestRun {
    pub found: bool,
    /// Distinct statements in the report.
    pub size: usize,
    /// Re-runs the search made.
    pub runs: usize,
    /// `1 − |DS*| / |PDG|` (0 for an empty report) and its Table 4 bucket.
    pub score: Option<f64>,
    pub bucket: Option<u32>,
}

/// Seed 004's causal path, as `explain --faulty` reports it (`causal`).
#[derive(Debug, Clone, PartialEq)]
pub struct CausalSummary {
    /// `regression` (against the fixed version) or `patch` (against the nearest successful run).
    pub mode: String,
    pub length: usize,
    pub complete: bool,
    /// A step of the path is on a faulty line.
    pub reaches_fault: bool,
    /// Patched re-runs made.
    pub runs: usize,
}

/// `eval --explain` on one case: what `explain` found, or why it could not run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Explained {
    /// `None`: not searched (an error, or a dump whose front-end cannot re-run a set).
    pub nearest: Option<NearestRun>,
    /// `None`: not computed (see `warnings`).
    pub causal: Option<CausalSummary>,
    /// Time of `explain` itself, not of tracing the reference (`None`: it did not run).
    pub seconds: Option<f64>,
    /// Why `explain` did not run or failed (the reference could not be traced, ...).
    pub error: Option<String>,
    /// `explain`'s warnings (e.g. why the causal path was not computed).
    pub warnings: Vec<String>,
}

/// One technique on one case.
#[derive(Debug, Clone)]
pub struct Run {
    pub tech: Tech,
    pub located: Option<Located>,
    /// The fault at method level (the methods of its lines, in the line ranking's order).
    pub located_method: Option<Located>,
    pub seconds: f64,
    pub error: Option<String>,
    /// PROSECUTOR's inference runs that did not converge (model, phase, final change,
    /// iterations); empty when all converged, and for baselines.
    pub not_converged: Vec<String>,
}

/// One case: every technique, or the reason the case could not be evaluated.
#[derive(Debug, Clone)]
pub struct CaseResult {
    pub name: String,
    pub kind: Option<String>,
    pub error: Option<String>,
    /// Tracing time (0 when the dump was given or reused).
    pub trace_seconds: f64,
    /// Steps recorded in the failing tests' traces of the dump (0 when it could not be read).
    pub failing_steps: usize,
    pub runs: Vec<Run>,
    /// The counterfactual experiments of the full PROSECUTOR run (empty without them).
    pub experiments: Vec<ExperimentResult>,
    /// `eval --explain`: seeds 003 and 004 on the case (`None` without it, or when the case
    /// failed).
    pub explain: Option<Explained>,
}

impl CaseResult {
    pub fn failed(name: &str, kind: Option<String>, error: String) -> CaseResult {
        CaseResult {
            name: name.to_owned(),
            kind,
            error: Some(error),
            trace_seconds: 0.0,
            failing_steps: 0,
            runs: Vec::new(),
            experiments: Vec::new(),
            explain: None,
        }
    }

    /// Whether the case could not be evaluated at all (bad manifest entry, tracing failed, dump
    /// does not load). A technique that fails on a case is a result, not a case failure.
    pub fn failed_case(&self) -> bool {
        self.error.is_some()
    }
}

/// The dump of a case: the given one, a previous run's (`OUT/dumps/<name>`), or a new trace.
fn obtain_dump(case: &Case, s: &Settings) -> Result<(Dump, f64), String> {
    match &case.source {
        Source::Dump(p) => Ok((Dump::load(p).map_err(|e| e.to_string())?, 0.0)),
        Source::Trace {
            dir,
            src_dir,
            test,
            timeout,
            frontend,
        } => {
            let out = s.out.join("dumps").join(&case.name);
            if out.join("manifest.toml").is_file() {
                if let Ok(d) = Dump::load(&out) {
                    return Ok((d, 0.0));
                }
                // an unreadable dump of an interrupted run: trace again
            }
            if out.exists() {
                std::fs::remove_dir_all(&out)
                    .map_err(|e| format!("cannot remove the stale dump {}: {e}", out.display()))?;
            }
            let start = Instant::now();
            let timeout = timeout.map(Duration::from_secs_f64);
            match frontend {
                Frontend::Python => trace_python(dir, src_dir, test, &out, timeout, false, s)?,
                Frontend::Java(j) => trace_java(dir, j, test, &out, timeout, s)?,
            }
            let secs = start.elapsed().as_secs_f64();
            Ok((
                Dump::load(&out).map_err(|e| format!("the traced dump does not load: {e}"))?,
                secs,
            ))
        }
    }
}

/// Traces a test command with the Python front-end into `out` (`passing_ok`: a fixed version,
/// whose tests all pass, as `trace --passing-ok`).
fn trace_python(
    dir: &Path,
    src: &Path,
    test: &[String],
    out: &Path,
    timeout: Option<Duration>,
    passing_ok: bool,
    s: &Settings,
) -> Result<(), String> {
    let mut o = crate::frontend::python::PythonTraceOptions::new(src, out, test.to_vec());
    o.cwd = dir.to_owned();
    o.passing_ok = passing_ok;
    o.test_timeout = timeout.unwrap_or(s.test_timeout);
    o.test_timeout_given = timeout.is_some() || s.test_timeout_given;
    o.plain_run &= !s.no_plain_run;
    o.import_time |= s.import_time;
    crate::frontend::python::trace(&o)
        .map(|_| ())
        .map_err(|e| format!("tracing failed: {e}"))
}

/// Traces JUnit tests with the Java front-end into `out` (the case's `dir` is the project).
fn trace_java(
    dir: &Path,
    j: &JavaTarget,
    tests: &[String],
    out: &Path,
    timeout: Option<Duration>,
    s: &Settings,
) -> Result<(), String> {
    let mut o = crate::frontend::java::JavaTraceOptions::new(
        &j.classes,
        &j.test_classes,
        out,
        tests.to_vec(),
    );
    o.cwd = dir.to_owned();
    o.classpath = j.classpath.clone();
    o.source_roots = j.source_roots.clone();
    o.jvm_args = j.jvm_args.clone();
    o.witnesses = j.failing.clone();
    o.plain_run &= !s.no_plain_run;
    o.test_timeout = timeout.unwrap_or(s.test_timeout);
    crate::frontend::java::trace(&o)
        .map(|_| ())
        .map_err(|e| format!("tracing failed: {e}"))
}

/// A baseline's line (or method, statement) ranking.
pub fn baseline_ranking(dump: &Dump, t: Technique, g: Granularity) -> Result<Vec<Ranked>, String> {
    Ok(rank(dump, &baseline::stmt_scores(dump, t)?, g))
}

/// Outcomes of the counterfactual experiments already run for one case, by (test, statement,
/// occurrence): a re-run with the same branch instance flipped has the same outcome, so the
/// ablations reuse what the full run (or an earlier ablation) measured.
struct CfxCache {
    /// `OUT/cfx/<case>.json`; variant `v` writes `OUT/cfx/<case>-<v>.json`.
    file: PathBuf,
    done: HashMap<(String, String, u32), ExperimentResult>,
}

impl CfxCache {
    fn remember(&mut self, results: &[ExperimentResult]) {
        for r in results {
            self.done.insert(r.experiment.key(), r.clone());
        }
    }

    fn known(&self) -> Vec<ExperimentResult> {
        self.done.values().cloned().collect()
    }

    /// Where variant `id` writes its outcomes (the full run: `<case>.json`).
    fn file_of(&self, id: &str) -> PathBuf {
        if id == Tech::full().id() {
            return self.file.clone();
        }
        let stem = self
            .file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.file.with_file_name(format!("{stem}-{id}.json"))
    }

    /// Takes in the outcomes an earlier run of this case wrote (`OUT/cfx/<case>.json` and
    /// `<case>-prosecutor*.json`) when they are newer than the dump's manifest (a re-traced dump
    /// invalidates them). A file that cannot be read as outcomes is ignored: its experiments
    /// are then run again.
    fn load(&mut self, dump_manifest: &Path) {
        let (Some(dir), Some(stem)) = (self.file.parent(), self.file.file_stem()) else {
            return;
        };
        let stem = stem.to_string_lossy().into_owned();
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        let (Some(dumped), Ok(entries)) = (modified(dump_manifest), std::fs::read_dir(dir)) else {
            return;
        };
        for entry in entries.flatten() {
            let p = entry.path();
            let ours = p
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".json"))
                .is_some_and(|b| b == stem || b.starts_with(&format!("{stem}-prosecutor")));
            if !ours || modified(&p).is_none_or(|t| t < dumped) {
                continue;
            }
            if let Some(results) = std::fs::read_to_string(&p)
                .ok()
                .and_then(|t| serde_json::from_str::<Vec<ExperimentResult>>(&t).ok())
            {
                self.remember(&results);
            }
        }
    }
}

/// Runs every technique on one case.
pub fn run_case(case: &Case, s: &Settings) -> CaseResult {
    let (dump, trace_seconds) = match obtain_dump(case, s) {
        Ok(d) => d,
        Err(e) => return CaseResult::failed(&case.name, case.kind.clone(), e),
    };
    let scope = |r: Vec<Ranked>| match &case.only_file {
        Some(f) => filter_ranking(r, |e| path_suffix_eq(&e.file, f)),
        None => r,
    };
    let run_opts = RunOptions {
        jobs: s.cfx_jobs.max(1),
        timeout: s.cfx_timeout,
        progress: false,
        known: Vec::new(),
        runner: None,
        early: Default::default(),
    };
    let experiments = s.cfx && dump.manifest.rerun.is_some();
    let mut cache = CfxCache {
        file: s.out.join("cfx").join(format!("{}.json", case.name)),
        done: HashMap::new(),
    };
    if experiments && s.reuse_cfx {
        cache.load(&dump.dir.join("manifest.toml"));
    }
    let fault_methods = super::score::faulty_methods(&dump, &case.fault);
    let mut runs = Vec::new();
    let mut full_experiments = Vec::new();
    for tech in Tech::all() {
        let start = Instant::now();
        let ranking: Result<(Vec<Ranked>, Vec<String>), String> = match tech {
            Tech::Baseline(t) => {
                baseline_ranking(&dump, t, Granularity::Line).map(|r| (r, Vec::new()))
            }
            Tech::Prosecutor(v) => {
                let mut o = Options {
                    granularity: Granularity::Line,
                    max_steps: s.max_steps,
                    cfx_model: s.cfx_model,
                    ..Options::default()
                };
                if experiments && v.cfx() {
                    o.cfx = CfxSource::Run(RunOptions {
                        known: cache.known(),
                        ..run_opts.clone()
                    });
                }
                v.apply(&mut o)
                    .map_err(|e| e.to_string())
                    .and_then(|rules| {
                        localize::localize(&dump, rules.as_ref().unwrap_or(s.rules), &o)
                            .map_err(|e| e.to_string())
                    })
                    .map(|r| {
                        if tech.is_full() {
                            if let Some(w) = crate::localize::cfx::degraded_summary(&r.experiments)
                            {
                                eprintln!("prosecutor: {}: {w}", case.name);
                            }
                            full_experiments = r.experiments.clone();
                        }
                        if !r.experiments.is_empty() {
                            cache.remember(&r.experiments);
                            let path = cache.file_of(tech.id());
                            if let Err(e) = write_json(&path, &r.experiments) {
                                eprintln!("warning: cannot write {}: {e}", path.display());
                            }
                        }
                        let nc = r
                            .convergence
                            .runs
                            .iter()
                            .filter(|c| !c.converged)
                            .map(|c| {
                                format!(
                                    "{} {}: max change {:.3e} after {} iterations",
                                    c.model, c.phase, c.max_change, c.iterations
                                )
                            })
                            .collect();
                        (r.ranking, nc)
                    })
            }
        };
        let seconds = start.elapsed().as_secs_f64();
        runs.push(match ranking {
            Ok((r, not_converged)) => {
                let r = scope(r);
                Run {
                    tech,
                    located: Some(locate(&r, &case.fault)),
                    located_method: Some(super::score::locate_method(&r, &fault_methods)),
                    seconds,
                    error: None,
                    not_converged,
                }
            }
            Err(e) => Run {
                tech,
                located: None,
                located_method: None,
                seconds,
                error: Some(e),
                not_converged: Vec::new(),
            },
        });
    }
    let explain = s
        .explain
        .map(|x| explain_case(case, &dump, s, x, &run_opts));
    CaseResult {
        name: case.name.clone(),
        kind: case.kind.clone(),
        error: None,
        trace_seconds,
        failing_steps: failing_steps(&dump),
        runs,
        experiments: full_experiments,
        explain,
    }
}

/// `eval --explain`: `explain` on the case's dump (its top-ranked line and the failing test its
/// propagation path ends in), with the default PROSECUTOR model but no counterfactual
/// experiments, seed 003's search and seed 004's causal path, scored against the case's faulty
/// lines. A case with a fixed version (`reference_src`) is explained in regression mode against
/// its trace (`OUT/reference/<name>`); an error here is the explanation's, never the case's.
fn explain_case(
    case: &Case,
    dump: &Dump,
    s: &Settings,
    x: ExplainSettings,
    run: &RunOptions,
) -> Explained {
    let failed = |error: String| Explained {
        error: Some(error),
        ..Explained::default()
    };
    let reference = match &case.reference {
        Some(r) => match trace_reference(case, r, s) {
            Ok(dir) => Some(dir),
            Err(e) => return failed(format!("the fixed version (reference_src): {e}")),
        },
        None => None,
    };
    let mut o = Options {
        granularity: Granularity::Line,
        max_steps: s.max_steps,
        cfx_model: s.cfx_model,
        ..Options::default()
    };
    let rules = match Variant::full().apply(&mut o) {
        Ok(r) => r,
        Err(e) => return failed(e.to_string()),
    };
    // explain localizes again: its ranking's experiments are not what is measured here
    o.cfx = CfxSource::Off;
    let req = crate::explain::Request {
        line: None,
        test: None,
        search: Some((
            crate::explain::pathgen::Config {
                loops: false,
                max_runs: x.max_runs,
            },
            run.clone(),
        )),
        causal: (x.causal_runs > 0).then_some(crate::explain::causal::Config {
            max_runs: x.causal_runs,
            ..Default::default()
        }),
        reference,
        faulty: case.fault.clone(),
    };
    let start = Instant::now();
    let ex = crate::explain::explain(dump, rules.as_ref().unwrap_or(s.rules), &o, &req);
    let seconds = start.elapsed().as_secs_f64();
    match ex {
        Err(e) => Explained {
            seconds: Some(seconds),
            ..failed(e)
        },
        Ok(ex) => Explained {
            nearest: ex.path_generation.as_ref().map(|g| NearestRun {
                found: g.found,
                size: g.size,
                runs: g.runs,
                score: g.score,
                bucket: g.bucket,
            }),
            causal: ex.causal.as_ref().map(|c| CausalSummary {
                mode: c.mode.clone(),
                length: c.length,
                complete: c.complete,
                reaches_fault: c.reaches_fault.unwrap_or(false),
                runs: c.runs,
            }),
            seconds: Some(seconds),
            error: None,
            warnings: ex.warnings,
        },
    }
}

/// The dump of a case's fixed version, traced as `trace --passing-ok` (its tests pass) into
/// `OUT/reference/<name>` with the case's tracing settings, or the one an earlier run left there.
fn trace_reference(case: &Case, r: &Reference, s: &Settings) -> Result<PathBuf, String> {
    let out = s.out.join("reference").join(&case.name);
    if out.join("manifest.toml").is_file() && Dump::load(&out).is_ok() {
        return Ok(out);
    }
    if !r.src.exists() {
        return Err(format!("{} does not exist", r.src.display()));
    }
    if out.exists() {
        std::fs::remove_dir_all(&out)
            .map_err(|e| format!("cannot remove the stale dump {}: {e}", out.display()))?;
    }
    let timeout = match &case.source {
        Source::Trace { timeout, .. } => timeout.map(Duration::from_secs_f64),
        Source::Dump(_) => None,
    };
    trace_python(&r.dir, &r.src_dir(), &r.test, &out, timeout, true, s)?;
    Dump::load(&out).map_err(|e| format!("the traced dump does not load: {e}"))?;
    Ok(out)
}

/// Steps recorded in the traces of the failing tests.
fn failing_steps(dump: &Dump) -> usize {
    dump.traces
        .iter()
        .filter(|t| {
            dump.manifest
                .tests
                .get(t.test)
                .is_some_and(|c| c.outcome == crate::dump::Outcome::Fail)
        })
        .map(|t| t.steps.len())
        .sum()
}

fn write_json(path: &Path, v: &impl serde::Serialize) -> Result<(), String> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
    }
    let text = serde_json::to_string_pretty(v).map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| e.to_string())
}
