//! `prosecutor explain`: why a test fails, beyond a ranking of lines.
//!
//! * [`index`]: execution indexing (seed 004 §2) and the alignment of two runs by index (seed
//!   003 Def. 2);
//! * [`pathgen`]: seed 003's nearest successful run (Def. 3–4, Fig. 3), each candidate a real
//!   re-run with a set of branch instances forced;
//! * [`causal`]: seed 004's causal path, comparing the failing run with the nearest successful
//!   run at aligned points ([`values`]: the stores the runs recorded);
//! * [`rerun`]: the [`pathgen::Executor`] and [`causal::Replayer`] of a dump, through its
//!   `[rerun]` commands;
//! * [`report`], [`causal_report`]: the command's output (table, JSON, DOT).

pub mod causal;
pub mod causal_report;
pub mod index;
pub mod pathgen;
pub mod report;
pub mod rerun;
pub mod score;
pub mod values;
pub mod versions;

#[cfg(test)]
mod causal_tests;
#[cfg(test)]
mod tests;

use crate::cdg::ControlDeps;
use crate::dump::Dump;
use crate::localize::cfx::RunOptions;
use crate::localize::Options;
use crate::pipeline::Rules;
use report::Explanation;

/// What to explain and how far to search.
#[derive(Debug, Clone)]
pub struct Request {
    /// `FILE:LINE` of a ranked line (default: the top one).
    pub line: Option<String>,
    /// The failing test whose run seed 003 starts from (default: the test the propagation path
    /// ends in, else the first failing test with a trace).
    pub test: Option<String>,
    /// Seed 003's search: `None` = not searched.
    pub search: Option<(pathgen::Config, RunOptions)>,
    /// Seed 004's causal path: `None` = not computed.
    pub causal: Option<causal::Config>,
    /// Seed 004's reference in regression mode: a dump of the fixed version (traced from the
    /// same test command); without it, patch mode against the nearest successful run.
    pub reference: Option<std::path::PathBuf>,
    /// The faulty lines, when known: the report is then scored (spec §4).
    pub faulty: Vec<crate::eval::score::FaultyLines>,
}

/// Localizes, picks the line, and explains it.
pub fn explain(
    dump: &Dump,
    rules: &Rules,
    o: &Options,
    req: &Request,
) -> Result<Explanation, String> {
    let mut o = o.clone();
    o.paths = usize::MAX;
    let loc = crate::localize::localize(dump, rules, &o).map_err(|e| e.to_string())?;
    let entry = pick(&loc.ranking, req.line.as_deref())?;
    let path = loc.details.as_ref().and_then(|d| {
        d.paths
            .iter()
            .find(|p| p.file == entry.file && p.line == entry.line)
    });
    let mut ex = Explanation::new(entry, path);
    ex.warnings = loc.warnings.clone();
    let Some((config, run)) = &req.search else {
        return Ok(ex);
    };
    let from_path = path.and_then(|p| p.vertices.iter().rev().find(|v| !v.test.is_empty()));
    let test = req
        .test
        .clone()
        .or_else(|| from_path.map(|v| v.test.clone()));
    let trace = failing_trace(dump, test.as_deref())?;
    let cd = ControlDeps::compute(dump);
    let (mut exec, control) = match rerun::DumpExecutor::start(dump, trace, run) {
        Ok(x) => x,
        Err(why) => {
            ex.warnings
                .push(format!("nearest successful run not searched: {why}"));
            return Ok(ex);
        }
    };
    let out = match pathgen::search(dump, &cd, &control, &mut exec, config) {
        Ok(out) => out,
        Err(why) => {
            ex.warnings
                .push(format!("nearest successful run not searched: {why}"));
            return Ok(ex);
        }
    };
    if run.progress {
        eprintln!("path generation: {} re-runs; {}", out.runs, exec.summary());
    }
    ex.with_path_generation(dump, &control, &out);
    if !req.faulty.is_empty() {
        ex.score_report(dump, &cd, &control, &out, &req.faulty);
    }
    if req.causal.is_some() {
        if let Err(why) = causal_path(dump, &cd, &control, &out, &mut exec, req, &mut ex) {
            ex.warnings.push(format!("causal path not computed: {why}"));
        } else if !req.faulty.is_empty() {
            ex.score_causal_path(&req.faulty);
        }
        if run.progress {
            eprintln!(
                "causal path: {} re-runs in all; {}",
                exec.runs(),
                exec.summary()
            );
        }
    }
    Ok(ex)
}

/// Seed 004: the failing run against a reference that passes, both re-run recording values.
/// Regression mode when the request names a fixed version's dump, else patch mode (the
/// nearest successful run).
fn causal_path(
    dump: &Dump,
    cd: &ControlDeps,
    control: &crate::dump::Trace,
    out: &pathgen::Outcome,
    exec: &mut rerun::DumpExecutor,
    req: &Request,
    ex: &mut Explanation,
) -> Result<(), String> {
    let (Some(config), Some((_, run))) = (&req.causal, &req.search) else {
        return Ok(());
    };
    if control.steps.len() > config.max_steps {
        return Err(format!(
            "the failing run has {} steps, more than the {} whose values are recorded \
             (--causal-max-steps)",
            control.steps.len(),
            config.max_steps
        ));
    }
    let mut names = values::interner();
    let record = serde_json::json!({ "record": true });
    let f = ended(
        exec.valued_run(&[], record.clone(), &mut names)?,
        true,
        "the failing test",
    )?;
    // patch mode names the switched instances by the control run's steps
    if req.reference.is_none() && f.trace.steps.len() != control.steps.len() {
        return Err(format!(
            "the failing test is not deterministic: re-run recording values it took {} steps, \
             before {}",
            f.trace.steps.len(),
            control.steps.len()
        ));
    }
    let id = &dump.manifest.tests[control.test].id;
    let (walk, mode, reference, unpatched) = if let Some(dir) = &req.reference {
        let rd = Dump::load(dir).map_err(|e| format!("the reference dump: {e}"))?;
        let t = rd
            .manifest
            .tests
            .iter()
            .position(|t| &t.id == id)
            .ok_or_else(|| format!("the reference dump {} has no test {id}", dir.display()))?;
        let (mut pexec, _) =
            rerun::DumpExecutor::start_test(&rd, t, run, crate::localize::cfx::CfxOutcome::Pass)
                .map_err(|e| format!("the reference version: {e}"))?;
        let p = ended(
            pexec.valued_run(&[], record, &mut names)?,
            false,
            "the reference version's run",
        )?;
        let labels = versions::labels(dump, &versions::match_statements(dump, &rd));
        let pcd = ControlDeps::compute(&rd);
        let reference = causal::Reference {
            dump: &rd,
            cd: &pcd,
            labels: Some(&labels),
            switched: &[],
        };
        let mut rep = rerun::DumpReplayer::new(exec, Some(&mut pexec), Vec::new());
        let walk =
            causal::causal_path(dump, cd, (&f, &p), reference, &mut rep, &mut names, config)?;
        let shown = vec![format!("the fixed version ({})", dir.display())];
        (walk, "regression", shown, rep.unpatched)
    } else {
        let found = out
            .found
            .ok_or("no successful run to compare with (seed 003 found none; a fixed version's dump can be given with --reference)")?;
        // the instances that evaluated to their forced outcome anyway changed nothing
        let keep = |i: &usize| !out.found_noop.get(*i).copied().unwrap_or(false);
        let idx: Vec<usize> = (0..out.found_forced.len()).filter(keep).collect();
        let forced: Vec<pathgen::Forced> = idx.iter().map(|&i| out.found_forced[i]).collect();
        let p = ended(
            exec.valued_run(&forced, record, &mut names)?,
            false,
            "the nearest successful run",
        )?;
        let switched: Vec<u32> = idx
            .iter()
            .map(|&i| out.candidates[found].forced[i])
            .collect();
        let reference = causal::Reference {
            dump,
            cd,
            labels: None,
            switched: &switched,
        };
        let mut rep = rerun::DumpReplayer::new(exec, None, forced);
        let walk =
            causal::causal_path(dump, cd, (&f, &p), reference, &mut rep, &mut names, config)?;
        let shown = switched
            .iter()
            .map(|&k| {
                let st = &dump.stmts[control.steps[k as usize].stmt as usize];
                format!("{}:{} switched", st.file, st.line)
            })
            .collect();
        (walk, "patch", shown, rep.unpatched)
    };
    if unpatched > 0 {
        ex.warnings.push(format!(
            "causal path: {unpatched} patched re-runs could not carry a value over or did not \
             reach the patched step (counted as not inducing)"
        ));
    }
    ex.with_causal_path(dump, &f, &walk, mode, reference, &names);
    Ok(())
}

/// The run of a re-run recording values, which must have failed (`fail`) or passed.
fn ended(
    (run, r): (
        Option<causal::ValuedRun>,
        crate::localize::cfx::ExperimentResult,
    ),
    fail: bool,
    what: &str,
) -> Result<causal::ValuedRun, String> {
    match run {
        Some(run) if run.failed == fail => Ok(run),
        _ => Err(format!(
            "{what}, re-run recording values, did not {}: {:?}, {}",
            if fail { "fail" } else { "pass" },
            r.outcome,
            r.detail
        )),
    }
}

/// The ranked entry `line` (`FILE:LINE`, the file as ranked or a path ending in it), or the top.
fn pick<'a>(
    ranking: &'a [crate::localize::ranking::Ranked],
    line: Option<&str>,
) -> Result<&'a crate::localize::ranking::Ranked, String> {
    let Some(spec) = line else {
        return ranking
            .first()
            .ok_or_else(|| "the ranking is empty".to_owned());
    };
    let (file, n) = spec
        .rsplit_once(':')
        .and_then(|(f, l)| Some((f, l.parse::<u32>().ok()?)))
        .ok_or_else(|| format!("--line {spec:?}: expected FILE:LINE"))?;
    let same =
        |f: &str| f == file || f.ends_with(&format!("/{file}")) || file.ends_with(&format!("/{f}"));
    ranking
        .iter()
        .find(|e| e.line == n && same(&e.file))
        .ok_or_else(|| {
            format!(
                "--line {spec}: not a ranked line ({} lines are ranked)",
                ranking.len()
            )
        })
}

/// The trace of failing test `test`, or of the first failing test with a trace.
fn failing_trace<'a>(dump: &'a Dump, test: Option<&str>) -> Result<&'a crate::dump::Trace, String> {
    let failing = |t: &&crate::dump::Trace| dump.failure_step(t).is_some();
    match test {
        Some(id) => dump
            .traces
            .iter()
            .filter(failing)
            .find(|t| dump.manifest.tests[t.test].id == id)
            .ok_or_else(|| format!("--test {id}: no failing test with a trace has this id")),
        None => dump
            .traces
            .iter()
            .find(failing)
            .ok_or_else(|| "the dump has no failing test with a trace".to_owned()),
    }
}
