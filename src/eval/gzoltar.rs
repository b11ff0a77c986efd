//! `prosecutor baseline --gzoltar DIR --technique NAME`: an SBFL formula on a spectrum that
//! GZoltar collected (`DIR/matrix.txt`, `DIR/spectra.csv`; docs/formats.md), printed as the
//! same report as a dump's baseline.

use std::path::Path;
use std::time::Instant;

use crate::baselines::interop::read_gzoltar;
use crate::baselines::sbfl::sbfl_scores;
use crate::error::Error;
use crate::localize::ranking::{assign_ranks, round12, Granularity, Ranked};
use crate::localize::{Mode, Report, Stats};

use super::Technique;

/// The ranking of GZoltar's elements by `t` (an SBFL formula). An element
/// `pkg$Class#method(args):line` is the entry `file` = `pkg$Class#method(args)`, `line`; a name
/// without a `:line` suffix keeps line 0. Entries whose scores agree to 12 significant digits
/// share a rank, as in every other ranking.
pub fn report(dir: &Path, t: Technique) -> Result<Report, Error> {
    let start = Instant::now();
    let Technique::Sbfl(formula) = t else {
        return Err(Error::Other(format!(
            "--gzoltar: {t} needs a trace dump (GZoltar's spectrum has no control flow); use an \
             SBFL formula"
        )));
    };
    let g = read_gzoltar(&dir.join("matrix.txt"), &dir.join("spectra.csv"))
        .map_err(|e| Error::Other(e.to_string()))?;
    let scores = sbfl_scores(&g.spectrum, formula)
        .map_err(|e| Error::Other(format!("{}: {e}", dir.display())))?;
    let mut entries: Vec<Ranked> = g
        .elements
        .iter()
        .zip(scores)
        .map(|(name, score)| {
            let (file, line) = match name.rsplit_once(':') {
                Some((f, l)) if l.parse::<u32>().is_ok() => (f.to_owned(), l.parse().unwrap()),
                _ => (name.clone(), 0),
            };
            Ranked {
                rank: 0,
                method: file.clone(),
                statements: vec![name.clone()],
                file,
                line,
                score,
                key: None,
                f: None,
                fp: None,
            }
        })
        .collect();
    // the order and ties of every ranking: scores equal to 12 significant digits share a rank
    entries.sort_by(|a, b| {
        round12(b.score)
            .total_cmp(&round12(a.score))
            .then_with(|| (&a.file, a.line).cmp(&(&b.file, b.line)))
    });
    let keys: Vec<f64> = entries.iter().map(|e| round12(e.score)).collect();
    assign_ranks(&mut entries, &keys);
    let failing = g.spectrum.tests.iter().filter(|t| !t.passed).count();
    let stats = Stats {
        failing_traces: failing,
        passing_traces: g.spectrum.tests.len() - failing,
        steps: 0,
        kept_steps: 0,
        seconds: start.elapsed().as_secs_f64(),
    };
    Ok(Report::ranking_only(
        Mode::Both,
        Granularity::Line,
        entries,
        Vec::new(),
        stats,
    ))
}
