//! Printing a localization report: a table for people, JSON and CSV for tools.

use std::io::{self, Write};

use crate::localize::cfx::CfxOutcome;
use crate::localize::ranking::ModelRank;
use crate::localize::Report;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
}

pub fn write(w: &mut dyn Write, r: &Report, format: Format, top: Option<usize>) -> io::Result<()> {
    // `--top 0` (like no `--top`) prints every entry
    let n = top
        .filter(|&k| k > 0)
        .unwrap_or(usize::MAX)
        .min(r.ranking.len());
    match format {
        Format::Json => {
            let mut v = serde_json::to_value(r).map_err(io::Error::other)?;
            if let Some(a) = v.get_mut("ranking").and_then(|a| a.as_array_mut()) {
                a.truncate(n);
            }
            serde_json::to_writer_pretty(&mut *w, &v)?;
            writeln!(w)
        }
        Format::Csv => {
            let both = r.ranking.iter().any(|e| e.key.is_some());
            if both {
                writeln!(
                    w,
                    "rank,file,line,key,score_fp,rank_fp,score_f,rank_f,method"
                )?;
            } else {
                writeln!(w, "rank,file,line,score,method")?;
            }
            for e in &r.ranking[..n] {
                write!(w, "{},{},{},", e.rank, csv(&e.file), e.line)?;
                if both {
                    let m = |m: Option<ModelRank>| {
                        m.map_or_else(|| ",".to_owned(), |m| format!("{:.6},{}", m.score, m.rank))
                    };
                    write!(w, "{},{},{},", e.key.unwrap_or(0), m(e.fp), m(e.f))?;
                } else {
                    write!(w, "{:.6},", e.score)?;
                }
                writeln!(w, "{}", csv(&e.method))?;
            }
            for warning in &r.warnings {
                writeln!(w, "# warning: {warning}")?;
            }
            Ok(())
        }
        Format::Table => {
            let wf = r.ranking[..n]
                .iter()
                .map(|e| e.file.len() + 1 + digits(e.line))
                .max()
                .unwrap_or(8)
                .max(8);
            let both = r.ranking.iter().any(|e| e.key.is_some());
            if both {
                writeln!(
                    w,
                    "{:>4}  {:<wf$}  {:>3}  {:>15}  {:>15}  method",
                    "rank", "location", "key", "F∪P score (#)", "F score (#)"
                )?;
            } else {
                writeln!(
                    w,
                    "{:>4}  {:<wf$}  {:>8}  method",
                    "rank", "location", "score"
                )?;
            }
            for e in &r.ranking[..n] {
                let loc = format!("{}:{}", e.file, e.line);
                if both {
                    let m = |m: Option<ModelRank>| {
                        m.map_or_else(
                            || "-".to_owned(),
                            |m| format!("{:.6} ({})", m.score, m.rank),
                        )
                    };
                    writeln!(
                        w,
                        "{:>4}  {:<wf$}  {:>3}  {:>15}  {:>15}  {}",
                        e.rank,
                        loc,
                        e.key.unwrap_or(0),
                        m(e.fp),
                        m(e.f),
                        e.method
                    )?;
                } else {
                    writeln!(
                        w,
                        "{:>4}  {:<wf$}  {:>8.6}  {}",
                        e.rank, loc, e.score, e.method
                    )?;
                }
            }
            if both {
                writeln!(
                    w,
                    "(order: key = min(F∪P rank, F rank), ties broken by the F∪P rank; paper §4)"
                )?;
            }
            if r.ranking.len() > n {
                writeln!(w, "  ... {} more (use --top)", r.ranking.len() - n)?;
            }
            let c = &r.convergence;
            if c.runs.is_empty() {
                // a baseline (or the spectrum fallback): no inference ran
                writeln!(
                    w,
                    "\ntraces: {} failing, {} passing; {} steps",
                    r.stats.failing_traces, r.stats.passing_traces, r.stats.steps
                )?;
                for warning in &r.warnings {
                    writeln!(w, "warning: {warning}")?;
                }
                return Ok(());
            }
            writeln!(
                w,
                "\ninference: {} ({} iterations, final max change {:.1e}){}",
                if c.converged {
                    "converged"
                } else {
                    "DID NOT CONVERGE"
                },
                c.iterations,
                c.max_change,
                if c.converged {
                    ""
                } else {
                    " — scores are approximate"
                }
            )?;
            if !r.experiments.is_empty() {
                let passed = r
                    .experiments
                    .iter()
                    .filter(|e| e.outcome == CfxOutcome::Pass)
                    .count();
                writeln!(
                    w,
                    "counterfactual experiments: {} run, {} made the failing test pass",
                    r.experiments.len(),
                    passed
                )?;
                for e in &r.experiments {
                    let x = &e.experiment;
                    let why = if e.outcome == CfxOutcome::Pass || e.outcome == CfxOutcome::Fail {
                        String::new()
                    } else {
                        format!(": {}", e.detail.lines().next().unwrap_or(""))
                    };
                    writeln!(
                        w,
                        "  flip {}:{} (#{} in {}) -> {:?}{why}",
                        x.file, x.line, x.occurrence, x.test, e.outcome
                    )?;
                }
            }
            writeln!(
                w,
                "traces: {} failing, {} passing; {} steps ({} after compression); {:.2} s",
                r.stats.failing_traces,
                r.stats.passing_traces,
                r.stats.steps,
                r.stats.kept_steps,
                r.stats.seconds
            )?;
            for warning in &r.warnings {
                writeln!(w, "warning: {warning}")?;
            }
            Ok(())
        }
    }
}

fn digits(x: u32) -> usize {
    x.to_string().len()
}

fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}
