//! Printing a localization report: a table for people, JSON and CSV for tools.

use std::io::{self, Write};

use crate::localize::cfx::CfxOutcome;
use crate::localize::ranking::{Granularity, ModelRank, Ranked};
use crate::localize::Report;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
    /// GZoltar's ranking file (`name;suspiciousness_value`), names `file:line` (the statement
    /// id at statement grain, the method at method grain), for tools that read GZoltar's output.
    Gzoltar,
}

pub fn write(w: &mut dyn Write, r: &Report, format: Format, top: Option<usize>) -> io::Result<()> {
    // `--top 0` (like no `--top`) prints every entry
    let n = top
        .filter(|&k| k > 0)
        .unwrap_or(usize::MAX)
        .min(r.ranking.len());
    match format {
        Format::Gzoltar => {
            let entries: Vec<(String, f64)> = r.ranking[..n]
                .iter()
                .map(|e| (gzoltar_name(e, r.granularity), e.score))
                .collect();
            crate::baselines::interop::write_gzoltar_ranking(&mut *w, &entries)
                .map_err(|e| io::Error::other(e.to_string()))
            // (no place for warnings in this format: `localize` prints them on stderr)
        }
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
            let prec = precision(&r.ranking[..n]);
            for e in &r.ranking[..n] {
                write!(w, "{},{},{},", e.rank, csv(&e.file), e.line)?;
                if both {
                    let m = |m: Option<ModelRank>| {
                        m.map_or_else(|| ",".to_owned(), |m| format!("{:.6},{}", m.score, m.rank))
                    };
                    write!(w, "{},{},{},", e.key.unwrap_or(0), m(e.fp), m(e.f))?;
                } else {
                    write!(w, "{:.prec$},", e.score)?;
                }
                writeln!(w, "{}", csv(&e.method))?;
            }
            for warning in &r.warnings {
                writeln!(w, "# warning: {warning}")?;
            }
            Ok(())
        }
        Format::Table => {
            let shown = &r.ranking[..n];
            let locs: Vec<String> = shown.iter().map(|e| location(e, r.granularity)).collect();
            let wf = locs.iter().map(String::len).max().unwrap_or(8).max(8);
            let prec = precision(shown);
            let ws = prec + 2;
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
                    "{:>4}  {:<wf$}  {:>ws$}  method",
                    "rank", "location", "score"
                )?;
            }
            for (e, loc) in shown.iter().zip(&locs) {
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
                        "{:>4}  {:<wf$}  {:>ws$.prec$}  {}",
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
                    let text = x.text.trim();
                    let cond = if text.is_empty() {
                        String::new()
                    } else {
                        format!(" `{text}`")
                    };
                    writeln!(
                        w,
                        "  flip {}{cond} (#{} in {}) -> {:?}{why}",
                        x.stmt, x.occurrence, x.test, e.outcome
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

/// Where an entry points: `file:line`; at statement grain the statement itself (its id, which
/// the Python front-end makes `file:line:column[:operator]`), so two statements on one line
/// print apart.
fn location(e: &Ranked, g: Granularity) -> String {
    let loc = format!("{}:{}", e.file, e.line);
    match (g, e.statements.first()) {
        (Granularity::Statement, Some(id)) if id.starts_with(&format!("{loc}:")) => id.clone(),
        (Granularity::Statement, Some(id)) if *id != loc => format!("{loc} ({id})"),
        _ => loc,
    }
}

/// An entry's element name in a GZoltar ranking.
fn gzoltar_name(e: &Ranked, g: Granularity) -> String {
    match g {
        Granularity::Line => format!("{}:{}", e.file, e.line),
        Granularity::Statement => location(e, g),
        Granularity::Method => e.method.clone(),
    }
}

/// Decimals that make every two neighbouring entries of different rank print different scores
/// (6 at least, 15 at most): the printed numbers show the order instead of contradicting it.
fn precision(shown: &[Ranked]) -> usize {
    let apart = |p: usize| {
        shown.windows(2).all(|w| {
            w[0].rank == w[1].rank || format!("{:.p$}", w[0].score) != format!("{:.p$}", w[1].score)
        })
    };
    (6..=15).find(|&p| apart(p)).unwrap_or(15)
}

fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(rank: usize, score: f64, stmt: &str) -> Ranked {
        Ranked {
            rank,
            file: "a.py".into(),
            line: 3,
            score,
            method: "a.py::f".into(),
            statements: vec![stmt.into()],
            key: None,
            f: None,
            fp: None,
        }
    }

    /// Two entries of different rank never print the same score; tied ones may.
    #[test]
    fn scores_print_with_the_digits_that_order_them() {
        let v = [
            entry(1, 0.15000000012, "a.py:3:0"),
            entry(2, 0.15000000001, "a.py:3:4"),
            entry(3, 0.1, "a.py:3:8"),
            entry(3, 0.1, "a.py:3:9"),
        ];
        let p = precision(&v);
        assert_eq!(p, 10);
        assert_ne!(format!("{:.p$}", v[0].score), format!("{:.p$}", v[1].score));
        assert_eq!(precision(&v[2..]), 6);
    }

    /// At statement grain two statements of one line print apart.
    #[test]
    fn statement_grain_shows_the_statement() {
        let py = entry(1, 0.5, "a.py:3:8");
        assert_eq!(location(&py, Granularity::Statement), "a.py:3:8");
        assert_eq!(location(&py, Granularity::Line), "a.py:3");
        let java = entry(1, 0.5, "lp.22b");
        assert_eq!(location(&java, Granularity::Statement), "a.py:3 (lp.22b)");
    }
}
