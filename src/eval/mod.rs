//! Baselines on dumps (`prosecutor baseline`) and the evaluation harness (`prosecutor eval`).
//!
//! * [`baseline`]: SBFL (7 formulas) and CP statement scores from a dump's coverage.
//! * [`score`]: where the faulty line lands in a ranking (positions with ties, top-k, EXAM).
//! * [`manifest`]: the `[[case]]` manifest of `eval`.
//! * [`harness`]: one case: trace or reuse a dump, run PROSECUTOR, its ablations and the
//!   baselines; with `--explain`, seeds 003 and 004 (`crate::explain`) on it.
//! * [`output`]: `summary.md`, `cases.csv`, `topk.svg`.
//! * `gzoltar`: `baseline --gzoltar DIR`, SBFL on a spectrum GZoltar collected.
//!
//! Metric definitions and how to run: docs/evaluation.md.

pub mod baseline;
mod gzoltar;
pub mod harness;
pub mod manifest;
pub mod output;
pub mod score;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::localize::{Mode, Report};

pub use baseline::Technique;

pub use harness::{run_case, CaseResult, Explained, Run, Settings, Tech};
pub use manifest::{Case, EvalManifest};
pub use score::{locate, FaultyLines, Located};

/// `prosecutor baseline DUMP --technique NAME` (or `--gzoltar DIR` instead of DUMP).
#[derive(clap::Args, Debug)]
pub struct BaselineArgs {
    /// The trace dump directory.
    #[arg(required_unless_present = "gzoltar", conflicts_with = "gzoltar")]
    pub dump: Option<PathBuf>,
    /// Rank the elements of a spectrum GZoltar collected (DIR/matrix.txt and DIR/spectra.csv,
    /// docs/formats.md) instead of a dump's; SBFL formulas only.
    #[arg(long, value_name = "DIR")]
    pub gzoltar: Option<PathBuf>,
    /// ochiai, tarantula, dstar, op2, jaccard, barinel, naish1 or cp.
    #[arg(long)]
    pub technique: String,
    #[arg(long, value_enum, default_value = "table")]
    pub format: crate::report::Format,
    #[arg(long, value_enum, default_value = "line")]
    pub granularity: crate::localize::ranking::Granularity,
    /// Print only the N most suspicious entries (0: all of them, as without --top).
    #[arg(long)]
    pub top: Option<usize>,
}

/// `prosecutor eval MANIFEST`.
#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    /// The evaluation manifest (TOML, `[[case]]` entries).
    pub manifest: PathBuf,
    /// Where to write the summary, per-case CSV and the SVG plot (and the dumps of traced cases).
    #[arg(long, default_value = "eval-out")]
    pub out: PathBuf,
    /// Cases evaluated in parallel (default: number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Do not run counterfactual experiments (PROSECUTOR then equals its "w/o Cfx" ablation).
    #[arg(long)]
    pub no_cfx: bool,
    /// Timeout of one counterfactual experiment in seconds (default: as `localize
    /// --cfx-timeout`, from each test's control run).
    #[arg(long, value_parser = crate::cli::positive_seconds)]
    pub cfx_timeout: Option<f64>,
    /// What a successful experiment's cfx vertex depends on, in every PROSECUTOR variant (see
    /// `localize --help`).
    #[arg(long, value_enum, default_value_t)]
    pub cfx_model: crate::localize::CfxModel,
    /// Run every counterfactual experiment again, even those whose outcomes an earlier run with
    /// the same dump left in OUT/cfx/ (by default they are reused).
    #[arg(long)]
    pub rerun_cfx: bool,
    /// Per-test time limit when tracing, in seconds (default 10; a case's `timeout` overrides
    /// it). Given (here or as a case's `timeout`), it is also the plain pre-run's limit, as in
    /// `localize --test-timeout`.
    #[arg(long, value_parser = crate::cli::positive_seconds)]
    pub test_timeout: Option<f64>,
    /// Step budget of every PROSECUTOR variant's model (after its compression setting), as
    /// `localize --max-steps`: traces that do not fit are left out with a warning, and a variant
    /// in which no failing trace fits ranks by the spectrum likelihood alone (a guard against the
    /// `w/o compression` ablation on an endless loop); 0 = no limit.
    #[arg(long, default_value_t = crate::localize::DEFAULT_MAX_STEPS)]
    pub max_steps: usize,
    /// Trace without the plain pre-run (as `trace --no-plain-run`; also `PROSECUTOR_PLAIN_RUN=0`).
    #[arg(long)]
    pub no_plain_run: bool,
    /// Begin every trace with the import-time code (as `trace --import-time`; also
    /// `PROSECUTOR_SETUP=1`).
    #[arg(long)]
    pub import_time: bool,
    /// Also run `explain` on every case, after its rankings, and measure seeds 003 and 004 (the
    /// cases.csv columns nsr_* and causal_*, and a summary.md section): seed 003's nearest
    /// successful run of the failing test (found, report size, re-runs, its score against the
    /// case's faulty lines and the score's bucket) and seed 004's causal path (mode, length,
    /// complete, whether it reaches a faulty line, patched re-runs). `explain` explains the top
    /// line of the default PROSECUTOR model without counterfactual experiments, as `explain
    /// --no-cfx --faulty F...` does; its re-runs run as the case's experiments (--cfx-timeout).
    /// A case with `reference_src` and `reference_test` (its fixed version) has its causal path
    /// in regression mode: the fixed version is traced first, as `trace --passing-ok`, into
    /// OUT/reference/<case> (reused by a later run, as the dumps are), and is `explain
    /// --reference`; other cases are in patch mode (against the nearest successful run).
    /// Whatever goes wrong explaining a case is recorded in its explain_error column; its
    /// rankings count all the same.
    #[arg(long)]
    pub explain: bool,
    /// With --explain: re-runs seed 003's search may make per case (`explain --max-runs`).
    #[arg(long, default_value_t = 60, value_name = "N", requires = "explain")]
    pub explain_max_runs: usize,
    /// With --explain: patched re-runs seed 004's causal path may make per case (`explain
    /// --causal-runs`; 0: no causal path).
    #[arg(long, default_value_t = 200, value_name = "N", requires = "explain")]
    pub explain_causal_runs: usize,
}

/// A baseline's ranking of a dump, as a `localize` report (same printing, same shape).
pub fn baseline_report(
    dump: &crate::dump::Dump,
    t: Technique,
    g: crate::localize::ranking::Granularity,
) -> Result<Report, Error> {
    let start = Instant::now();
    let ranking = harness::baseline_ranking(dump, t, g)
        .map_err(|e| Error::Other(format!("{}: {t}: {e}", dump.dir.display())))?;
    Ok(Report::without_inference(
        dump,
        Mode::Both,
        g,
        ranking,
        Vec::new(),
        start,
    ))
}

pub fn run_baseline(a: &BaselineArgs, out: &mut dyn Write) -> Result<i32, Error> {
    let t: Technique = a.technique.parse().map_err(Error::Other)?;
    let report = match (&a.dump, &a.gzoltar) {
        (_, Some(dir)) => gzoltar::report(dir, t)?,
        (Some(d), None) => baseline_report(&crate::dump::Dump::load(d)?, t, a.granularity)?,
        (None, None) => unreachable!("clap requires DUMP or --gzoltar"),
    };
    crate::report::write(out, &report, a.format, a.top).map_err(Error::Output)?;
    Ok(0)
}

pub fn run_eval(a: &EvalArgs, out: &mut dyn Write) -> Result<i32, Error> {
    let m = EvalManifest::read(&a.manifest).map_err(Error::Other)?;
    let test_timeout = a.test_timeout.unwrap_or(10.0);
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .max(1);
    std::fs::create_dir_all(&a.out).map_err(|e| Error::Io {
        path: a.out.display().to_string(),
        source: e,
    })?;
    let rules = crate::pipeline::Rules::load(None)?;
    let settings = Settings {
        rules: &rules,
        out: a.out.clone(),
        cfx: !a.no_cfx,
        // experiments of one case run in parallel only when cases do not
        cfx_jobs: if m.cases.len() == 1 { jobs } else { 1 },
        cfx_timeout: a.cfx_timeout.map(Duration::from_secs_f64),
        cfx_model: a.cfx_model,
        reuse_cfx: !a.rerun_cfx,
        test_timeout: Duration::from_secs_f64(test_timeout),
        test_timeout_given: a.test_timeout.is_some(),
        max_steps: (a.max_steps > 0).then_some(a.max_steps),
        no_plain_run: a.no_plain_run,
        import_time: a.import_time,
        explain: a.explain.then_some(harness::ExplainSettings {
            max_runs: a.explain_max_runs,
            causal_runs: a.explain_causal_runs,
        }),
    };
    let bar = crate::progress::bar(m.cases.len() as u64, "eval");
    // one case per job: cases differ in cost by orders of magnitude
    let results: Vec<CaseResult> = crate::jobs::map(&m.cases, jobs, |entry| {
        let r = match entry.resolve(&m) {
            Ok(case) => run_case(&case, &settings),
            Err(e) => CaseResult::failed(&entry.name, entry.kind.clone(), e),
        };
        bar.inc(1);
        r
    });
    bar.finish_and_clear();
    let name = a.manifest.file_name().map_or_else(
        || a.manifest.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let write = |file: &str, text: String| -> Result<(), Error> {
        let p = a.out.join(file);
        std::fs::write(&p, text).map_err(|e| Error::Io {
            path: p.display().to_string(),
            source: e,
        })
    };
    write("summary.md", output::summary_md(&name, &results, a.explain))?;
    write("cases.csv", output::cases_csv(&results))?;
    let topk = output::topk_svg(&results);
    write("index.html", crate::html::eval_page(&name, &results, &topk))?;
    write("topk.svg", topk)?;
    let all: Vec<_> = results
        .iter()
        .flat_map(|c| c.experiments.iter().cloned())
        .collect();
    if !all.is_empty() {
        let line = crate::localize::cfx::degraded_summary(&all).unwrap_or_else(|| {
            format!(
                "all {} counterfactual experiments gave information (pass or fail)",
                all.len()
            )
        });
        eprintln!(
            "prosecutor: eval: {line} (PROSECUTOR, {} cases)",
            results.len()
        );
    }
    let table = output::technique_table(&output::summarize(&results));
    writeln!(out, "{table}").map_err(Error::Output)?;
    let errs = output::error_list(&results);
    if !errs.is_empty() {
        writeln!(out, "errors:\n{errs}").map_err(Error::Output)?;
    }
    writeln!(
        out,
        "wrote {}/summary.md, cases.csv, topk.svg, index.html",
        a.out.display()
    )
    .map_err(Error::Output)?;
    Ok(if results.iter().any(CaseResult::failed_case) {
        1
    } else {
        0
    })
}
