//! Outputs of `prosecutor eval`: `summary.md` (Table 3 of the paper; with `--explain`, seeds
//! 003 and 004), `cases.csv`, `topk.svg` (Fig. 9 of the paper).

use std::fmt::Write as _;

use crate::metrics::aggregate::Summary;

use super::harness::{CaseResult, Explained, Run, Tech};
use super::score::Located;

/// The k of the top-k columns (pessimistic).
pub const TOP_K: [usize; 5] = [1, 3, 5, 10, 20];
/// The k of the average (random tie-breaking) top-k columns.
pub const TOP_K_AVG: [usize; 3] = [1, 3, 5];

/// Aggregates of one technique over the cases that could be evaluated.
#[derive(Debug, Clone)]
pub struct TechSummary {
    pub tech: Tech,
    /// Cases counted (every case without a case-level error).
    pub cases: usize,
    /// Faults at pessimistic position <= k, for k in [`TOP_K`].
    pub hits: Vec<usize>,
    /// Expected faults within top-k under random tie-breaking, for k in [`TOP_K_AVG`].
    pub hits_avg: Vec<f64>,
    /// EXAM per case (1 for a run that failed or ranked nothing).
    pub exam: Vec<f64>,
    /// Pessimistic position of the fault per case; a fault not ranked (or a failed run) counts
    /// as one past the longest ranking any technique gave for that case.
    pub positions: Vec<f64>,
    /// Times of the runs without error.
    pub seconds: Vec<f64>,
    pub not_found: usize,
    pub errors: usize,
}

/// Where a fault is scored: at its lines, or at the methods that hold them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Line,
    Method,
}

impl Level {
    fn of(self, r: &Run) -> Option<&Located> {
        match self {
            Level::Line => r.located.as_ref(),
            Level::Method => r.located_method.as_ref(),
        }
    }
}

/// The run of `tech` in a case (cases without a case-level error have every technique).
fn run_of(c: &CaseResult, tech: Tech) -> Option<&Run> {
    c.runs.iter().find(|r| r.tech == tech)
}

/// EXAM of a run; a failed run or an empty ranking counts as examining everything.
fn run_exam(r: &Run, level: Level) -> f64 {
    level.of(r).and_then(|l| l.exam()).unwrap_or(1.0)
}

/// Pessimistic position of the fault in a run; not ranked or failed: one past the longest
/// ranking of the case (so that a short ranking is no advantage).
pub fn run_position(c: &CaseResult, r: &Run) -> f64 {
    run_position_at(c, r, Level::Line)
}

fn run_position_at(c: &CaseResult, r: &Run, level: Level) -> f64 {
    match level.of(r).and_then(|l| l.position) {
        Some(p) => p.worst,
        None => {
            let longest = c
                .runs
                .iter()
                .filter_map(|r| level.of(r))
                .map(|l| l.n_lines)
                .max()
                .unwrap_or(0);
            longest as f64 + 1.0
        }
    }
}

/// Line-level aggregates of every technique.
pub fn summarize(results: &[CaseResult]) -> Vec<TechSummary> {
    summarize_at(results, Level::Line)
}

pub fn summarize_at(results: &[CaseResult], level: Level) -> Vec<TechSummary> {
    let ok: Vec<&CaseResult> = results.iter().filter(|c| c.error.is_none()).collect();
    Tech::all()
        .into_iter()
        .map(|tech| {
            let runs: Vec<&Run> = ok.iter().filter_map(|c| run_of(c, tech)).collect();
            let hit = |k: usize| {
                runs.iter()
                    .filter(|r| level.of(r).is_some_and(|l| l.hit(k)))
                    .count()
            };
            let hit_avg = |k: usize| {
                runs.iter()
                    .filter_map(|r| level.of(r))
                    .map(|l| l.hit_expected(k))
                    .sum()
            };
            TechSummary {
                tech,
                cases: ok.len(),
                hits: TOP_K.iter().map(|&k| hit(k)).collect(),
                hits_avg: TOP_K_AVG.iter().map(|&k| hit_avg(k)).collect(),
                exam: runs.iter().map(|r| run_exam(r, level)).collect(),
                positions: ok
                    .iter()
                    .filter_map(|c| run_of(c, tech).map(|r| run_position_at(c, r, level)))
                    .collect(),
                // time of the runs that produced a ranking (a failure is often instantaneous)
                seconds: runs
                    .iter()
                    .filter(|r| r.error.is_none())
                    .map(|r| r.seconds)
                    .collect(),
                not_found: runs
                    .iter()
                    .filter(|r| level.of(r).is_some_and(|l| !l.found()))
                    .count(),
                errors: runs.iter().filter(|r| r.error.is_some()).count(),
            }
        })
        .collect()
}

fn fmt_avg(x: f64) -> String {
    // `+ 0.0` turns the -0.0 of an empty sum (a technique that failed on every case) into 0
    let r = (x * 10.0).round() / 10.0 + 0.0;
    if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or("–".to_owned(), |x| format!("{:.1}", x * 100.0))
}

/// The Table 3-like Markdown table.
pub fn technique_table(sums: &[TechSummary]) -> String {
    let mut s = String::new();
    s.push_str("| technique |");
    for k in TOP_K {
        let _ = write!(s, " @{k} |");
    }
    for k in TOP_K_AVG {
        let _ = write!(s, " @{k} avg |");
    }
    s.push_str(" EXAM median % | EXAM mean % | mean pos | not found | errors | median s |\n|---|");
    s.push_str(&"---:|".repeat(TOP_K.len() + TOP_K_AVG.len() + 6));
    s.push('\n');
    for t in sums {
        let _ = write!(s, "| {} |", t.tech.label());
        for h in &t.hits {
            let _ = write!(s, " {h} |");
        }
        for h in &t.hits_avg {
            let _ = write!(s, " {} |", fmt_avg(*h));
        }
        let ex = Summary::of(&t.exam);
        let secs = Summary::of(&t.seconds);
        let pos = Summary::of(&t.positions);
        let _ = writeln!(
            s,
            " {} | {} | {} | {} | {} | {} |",
            pct(ex.map(|e| e.median)),
            pct(ex.map(|e| e.mean)),
            pos.map_or("–".to_owned(), |p| format!("{:.1}", p.mean)),
            t.not_found,
            t.errors,
            secs.map_or("–".to_owned(), |x| format!("{:.3}", x.median))
        );
    }
    s
}

/// Failed cases and failed runs, one line each.
pub fn error_list(results: &[CaseResult]) -> String {
    let mut s = String::new();
    for c in results {
        if let Some(e) = &c.error {
            let _ = writeln!(s, "- `{}`: {}", c.name, one_line(e));
        }
        for r in c.runs.iter().filter(|r| r.error.is_some()) {
            let _ = writeln!(
                s,
                "- `{}` / {}: {}",
                c.name,
                r.tech.id(),
                one_line(r.error.as_deref().unwrap_or(""))
            );
        }
    }
    s
}

fn one_line(s: &str) -> String {
    s.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// `summary.md` (`explain`: `eval --explain` ran, its section is added).
pub fn summary_md(manifest_name: &str, results: &[CaseResult], explain: bool) -> String {
    let sums = summarize(results);
    let failed = results.iter().filter(|c| c.error.is_some()).count();
    let mut s = String::new();
    let _ = writeln!(s, "# Evaluation: {manifest_name}\n");
    let _ = writeln!(
        s,
        "{} cases, {} evaluated, {} failed (excluded from the table). Line-level rankings; \
         @k = faults whose line is within the top k at the end of its tie group (pessimistic); \
         @k avg = expected number under random tie-breaking; EXAM = pessimistic position / lines ranked \
         (a fault not ranked: (lines + 1) / lines; a failed run: 1). Definitions: docs/evaluation.md.\n",
        results.len(),
        results.len() - failed,
        failed
    );
    s.push_str(&technique_table(&sums));
    s.push_str(
        "\n## Method level\n\nThe same rankings by method (Table 4 of the paper): a method ranks where its \
         best line does, the fault is found at the first method holding one of its lines (the \
         narrowest method spanning a faulty line that has no statement); EXAM = position / \
         methods ranked.\n\n",
    );
    s.push_str(&technique_table(&summarize_at(results, Level::Method)));
    // per-case positions
    s.push_str(
        "\n## Position of the faulty line per case (pessimistic / lines ranked)\n\n| case |",
    );
    for t in Tech::all() {
        let _ = write!(s, " {} |", t.label());
    }
    s.push_str("\n|---|");
    s.push_str(&"---:|".repeat(Tech::all().len()));
    s.push('\n');
    for c in results {
        let _ = write!(s, "| {} |", c.name);
        for t in Tech::all() {
            let cell = match (&c.error, run_of(c, t)) {
                (Some(_), _) | (None, None) => "error".to_owned(),
                (None, Some(r)) => match &r.located {
                    None => "error".to_owned(),
                    Some(l) if !l.found() => format!("–/{}", l.n_lines),
                    Some(l) => format!("{}/{}", l.pessimistic(), l.n_lines),
                },
            };
            // a ranking from marginals that did not converge is marked
            let cell = match run_of(c, t) {
                Some(r) if !r.not_converged.is_empty() && r.located.is_some() => {
                    format!("{cell} ⚠")
                }
                _ => cell,
            };
            let _ = write!(s, " {cell} |");
        }
        s.push('\n');
    }
    let nc = non_convergence_list(results);
    if !nc.is_empty() {
        let _ = write!(
            s,
            "\n## Inference that did not converge (⚠: the ranking comes from the last iteration)\n\n{nc}"
        );
    }
    if explain {
        s.push_str(&explain_md(results));
    }
    let errs = error_list(results);
    if !errs.is_empty() {
        let _ = write!(s, "\n## Errors\n\n{errs}");
    }
    s
}

/// The share `k / n` in percent, one decimal.
fn share(k: usize, n: usize) -> String {
    format!("{:.1} %", 100.0 * k as f64 / n.max(1) as f64)
}

/// Seed 003's report scores at least this (the paper's Table 4: 43.9 % of the Siemens versions).
pub const GOOD_SCORE: f64 = 0.8;

/// The `eval --explain` section of `summary.md`: seeds 003 and 004 over the cases (shares of
/// all cases, those that could not be evaluated included), then each case's explain error or
/// warnings.
pub fn explain_md(results: &[CaseResult]) -> String {
    let n = results.len();
    let ex: Vec<(&str, &Explained)> = results
        .iter()
        .filter_map(|c| c.explain.as_ref().map(|e| (c.name.as_str(), e)))
        .collect();
    let mut s = String::from(
        "\n## Seeds 003 and 004 (`eval --explain`)\n\n`explain` on each case's top-ranked line \
         (default model, no counterfactual experiments), as `explain --no-cfx --faulty F...`: seed \
         003's nearest successful run of the failing test, its report scored 1 − |DS*| / |PDG| \
         against the faulty lines; seed 004's causal path, in regression mode against the fixed \
         version (`reference_src`) or in patch mode against the nearest successful run. Shares \
         are of all cases. Definitions: docs/explain.md.\n\n| | cases |\n|---|---:|\n",
    );
    let ok = ex.iter().filter(|(_, e)| e.error.is_none()).count();
    let _ = writeln!(s, "| cases | {n} |");
    let _ = writeln!(s, "| explained without error | {ok} |");
    let found = ex
        .iter()
        .filter(|(_, e)| e.nearest.as_ref().is_some_and(|r| r.found))
        .count();
    let _ = writeln!(s, "| nearest successful run found | {found} |");
    let good = ex
        .iter()
        .filter(|(_, e)| {
            e.nearest
                .as_ref()
                .is_some_and(|r| r.found && r.score.is_some_and(|x| x >= GOOD_SCORE))
        })
        .count();
    let _ = writeln!(
        s,
        "| report scoring ≥ 80 % (the paper: 43.9 % on Siemens) | {good} ({}) |",
        share(good, n)
    );
    let paths: Vec<_> = ex.iter().filter_map(|(_, e)| e.causal.as_ref()).collect();
    let mut modes: Vec<&str> = paths.iter().map(|c| c.mode.as_str()).collect();
    modes.sort_unstable();
    modes.dedup();
    let by_mode = modes
        .iter()
        .map(|m| format!("{m} {}", paths.iter().filter(|c| c.mode == *m).count()))
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(
        s,
        "| causal path computed | {}{} |",
        paths.len(),
        if by_mode.is_empty() {
            String::new()
        } else {
            format!(" ({by_mode})")
        }
    );
    let complete = paths.iter().filter(|c| c.complete).count();
    let _ = writeln!(
        s,
        "| causal path complete (ended at its root) | {complete} |"
    );
    let lengths: Vec<f64> = paths.iter().map(|c| c.length as f64).collect();
    let _ = writeln!(
        s,
        "| causal path length: median | {} |",
        Summary::of(&lengths).map_or("–".to_owned(), |x| fmt_avg(x.median))
    );
    let reach = paths.iter().filter(|c| c.reaches_fault).count();
    let _ = writeln!(
        s,
        "| causal path contains a faulty line | {reach} ({} of paths, {} of cases) |",
        share(reach, paths.len()),
        share(reach, n)
    );
    let secs: Vec<f64> = ex.iter().filter_map(|(_, e)| e.seconds).collect();
    let _ = writeln!(
        s,
        "| explain seconds: median | {} |",
        Summary::of(&secs).map_or("–".to_owned(), |x| format!("{:.2}", x.median))
    );
    let mut notes = String::new();
    for (name, e) in &ex {
        if let Some(err) = &e.error {
            let _ = writeln!(notes, "- `{name}`: {}", one_line(err));
        }
        for w in &e.warnings {
            let _ = writeln!(notes, "- `{name}`: warning: {}", one_line(w));
        }
    }
    if !notes.is_empty() {
        let _ = write!(s, "\n### Explain errors and warnings\n\n{notes}");
    }
    s
}

/// The `eval --explain` columns of a case's rows (all empty without it).
fn explain_cells(e: Option<&Explained>) -> String {
    let Some(e) = e else {
        return ",".repeat(EXPLAIN_COLUMNS.len() - 1);
    };
    let opt = |x: Option<String>| x.unwrap_or_default();
    let r = e.nearest.as_ref();
    let c = e.causal.as_ref();
    let problems: Vec<String> = e
        .error
        .iter()
        .cloned()
        .chain(e.warnings.iter().map(|w| format!("warning: {w}")))
        .collect();
    [
        opt(r.map(|r| r.found.to_string())),
        opt(r.map(|r| r.size.to_string())),
        opt(r.map(|r| r.runs.to_string())),
        opt(r.and_then(|r| r.score).map(|x| format!("{x:.4}"))),
        opt(r.and_then(|r| r.bucket).map(|b| b.to_string())),
        opt(c.map(|c| csv_field(&c.mode))),
        opt(c.map(|c| c.length.to_string())),
        opt(c.map(|c| c.complete.to_string())),
        opt(c.map(|c| c.reaches_fault.to_string())),
        opt(c.map(|c| c.runs.to_string())),
        opt(e.seconds.map(|x| format!("{x:.3}"))),
        csv_field(&one_line(&problems.join("\n"))),
    ]
    .join(",")
}

/// The fields of one line of `cases.csv` (quoted as [`csv_field`] writes them: `"..."`, `""` an
/// escaped quote).
pub fn csv_fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// The columns `eval --explain` fills (per case: the same on each of its rows).
pub const EXPLAIN_COLUMNS: [&str; 12] = [
    "nsr_found",
    "nsr_size",
    "nsr_runs",
    "nsr_score",
    "nsr_bucket",
    "causal_mode",
    "causal_length",
    "causal_complete",
    "causal_reaches_fault",
    "causal_runs",
    "explain_seconds",
    "explain_error",
];

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// Inference runs that did not converge, one line each (their rankings still count).
pub fn non_convergence_list(results: &[CaseResult]) -> String {
    let mut s = String::new();
    for c in results {
        for r in &c.runs {
            for n in &r.not_converged {
                let _ = writeln!(s, "- `{}` / {}: {n}", c.name, r.tech.id());
            }
        }
    }
    s
}

/// `cases.csv`: one row per case × technique (`converged`: `yes`/`no` for PROSECUTOR runs that
/// produced a ranking, empty otherwise), then the case's [`EXPLAIN_COLUMNS`] (empty without
/// `--explain`).
pub fn cases_csv(results: &[CaseResult]) -> String {
    let mut s = String::from(
        "case,technique,position_pessimistic,position_average,exam,n_lines,method_position,n_methods,\
         seconds,trace_seconds,failing_steps,converged,error",
    );
    for col in EXPLAIN_COLUMNS {
        let _ = write!(s, ",{col}");
    }
    s.push('\n');
    for c in results {
        let explain = explain_cells(c.explain.as_ref());
        for t in Tech::all() {
            let name = csv_field(&c.name);
            match (&c.error, run_of(c, t)) {
                (Some(e), _) => {
                    let _ = write!(s, "{name},{},,,,,,,,,,,{}", t.id(), csv_field(&one_line(e)));
                }
                (None, None) => {
                    let _ = write!(s, "{name},{},,,,,,,,,,,not run", t.id());
                }
                (None, Some(r)) => match &r.located {
                    Some(l) => {
                        let converged = match (t, r.not_converged.is_empty()) {
                            (Tech::Baseline(_), _) => "",
                            (_, true) => "yes",
                            (_, false) => "no",
                        };
                        let (mp, mn) = r
                            .located_method
                            .as_ref()
                            .map_or((String::new(), String::new()), |m| {
                                (m.pessimistic().to_string(), m.n_lines.to_string())
                            });
                        let _ = write!(
                            s,
                            "{name},{},{},{},{},{},{mp},{mn},{:.3},{:.3},{},{converged},",
                            t.id(),
                            l.pessimistic(),
                            fmt_pos(l.average()),
                            l.exam().map_or(String::new(), |e| format!("{e:.6}")),
                            l.n_lines,
                            r.seconds,
                            c.trace_seconds,
                            c.failing_steps
                        );
                    }
                    None => {
                        let _ = write!(
                            s,
                            "{name},{},,,,,,,{:.3},{:.3},{},,{}",
                            t.id(),
                            r.seconds,
                            c.trace_seconds,
                            c.failing_steps,
                            csv_field(&one_line(r.error.as_deref().unwrap_or("")))
                        );
                    }
                },
            }
            let _ = writeln!(s, ",{explain}");
        }
    }
    s
}

fn fmt_pos(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.4}")
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Colours and dash patterns per technique (PROSECUTOR thick, ablations dashed).
fn style(i: usize, t: Tech) -> (&'static str, &'static str, f64) {
    const COLORS: [&str; 13] = [
        "#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#1f77b4", "#2ca02c", "#17becf",
        "#bcbd22", "#7f7f7f", "#393b79", "#637939", "#000000",
    ];
    let color = COLORS[i % COLORS.len()];
    match t {
        t if t.is_full() => (color, "", 3.0),
        Tech::Prosecutor(_) => (color, "6 3", 1.8),
        Tech::Baseline(_) => (color, "", 1.5),
    }
}

/// `topk.svg`: number of faults within the top k (pessimistic) against k, one line per technique.
pub fn topk_svg(results: &[CaseResult]) -> String {
    let ok: Vec<&CaseResult> = results.iter().filter(|c| c.error.is_none()).collect();
    let max_len = ok
        .iter()
        .flat_map(|c| c.runs.iter())
        .filter_map(|r| r.located.as_ref())
        .map(|l| l.n_lines)
        .max()
        .unwrap_or(1);
    let kmax = max_len.clamp(1, 20);
    let n = ok.len().max(1);
    let (w, h) = (760.0, 460.0);
    let (left, right, top, bottom) = (60.0, 200.0, 40.0, 50.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let x = |k: usize| {
        if kmax == 1 {
            left + pw / 2.0
        } else {
            left + pw * (k - 1) as f64 / (kmax - 1) as f64
        }
    };
    let y = |v: usize| top + ph - ph * v as f64 / n as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="14">Faults found within the top k ({} cases, pessimistic ties)</text>"#,
        left + pw / 2.0,
        ok.len()
    );
    // grid, ticks and labels
    let ystep = [1usize, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
        .into_iter()
        .find(|st| n / st <= 10)
        .unwrap_or(n.max(1));
    let mut v = 0;
    while v <= n {
        let yy = y(v);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#e0e0e0"/>"##,
            left + pw
        );
        let _ = writeln!(
            s,
            r#"<line x1="{:.1}" y1="{yy:.1}" x2="{left}" y2="{yy:.1}" stroke="black"/>"#,
            left - 5.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{v}</text>"#,
            left - 8.0,
            yy + 4.0
        );
        v += ystep;
    }
    for k in 1..=kmax {
        let xx = x(k);
        let _ = writeln!(
            s,
            r#"<line x1="{xx:.1}" y1="{:.1}" x2="{xx:.1}" y2="{:.1}" stroke="black"/>"#,
            top + ph,
            top + ph + 5.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{xx:.1}" y="{:.1}" text-anchor="middle">{k}</text>"#,
            top + ph + 18.0
        );
    }
    let _ = writeln!(
        s,
        r#"<line x1="{left}" y1="{top}" x2="{left}" y2="{:.1}" stroke="black"/><line x1="{left}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="black"/>"#,
        top + ph,
        top + ph,
        left + pw,
        top + ph
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">k</text>"#,
        left + pw / 2.0,
        h - 12.0
    );
    let _ = writeln!(
        s,
        r#"<text x="16" y="{:.1}" text-anchor="middle" transform="rotate(-90 16 {:.1})">faults in top k</text>"#,
        top + ph / 2.0,
        top + ph / 2.0
    );
    // one polyline per technique, then the legend
    for (i, t) in Tech::all().into_iter().enumerate() {
        let pts: Vec<String> = (1..=kmax)
            .map(|k| {
                let c = ok
                    .iter()
                    .filter(|c| {
                        run_of(c, t)
                            .and_then(|r| r.located.as_ref())
                            .is_some_and(|l| l.hit(k))
                    })
                    .count();
                format!("{:.1},{:.1}", x(k), y(c))
            })
            .collect();
        let (color, dash, width) = style(i, t);
        let dash_attr = if dash.is_empty() {
            String::new()
        } else {
            format!(r#" stroke-dasharray="{dash}""#)
        };
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="{width}"{dash_attr} points="{}"><title>{}</title></polyline>"#,
            pts.join(" "),
            esc(t.label())
        );
        let ly = top + 10.0 + 18.0 * i as f64;
        let lx = left + pw + 20.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="{width}"{dash_attr}/><text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 28.0,
            lx + 34.0,
            ly + 4.0,
            esc(t.label())
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::baseline::Technique;
    use crate::eval::score::{locate, FaultyLines};
    use crate::localize::ranking::Ranked;
    use crate::variants::Variant;

    /// A ranking computed from marginals that did not converge still counts, but is marked in
    /// the per-case table, listed with its final change, and `no` in cases.csv.
    #[test]
    fn rankings_from_unconverged_inference_are_marked() {
        let ranked = |line, rank| Ranked {
            rank,
            file: "a.py".into(),
            line,
            score: 0.5,
            method: "f".into(),
            ..Ranked::default()
        };
        let fault = [FaultyLines::parse("a.py:7").unwrap()];
        let located = locate(&[ranked(7, 1), ranked(3, 2)], &fault);
        let run = |tech, nc: &[&str]| Run {
            tech,
            located: Some(located.clone()),
            located_method: None,
            seconds: 0.5,
            error: None,
            not_converged: nc.iter().map(|x| x.to_string()).collect(),
        };
        let results = [CaseResult {
            name: "c".into(),
            kind: None,
            error: None,
            trace_seconds: 0.0,
            failing_steps: 0,
            experiments: Vec::new(),
            explain: None,
            runs: vec![
                run(
                    Tech::full(),
                    &["F∪P initial: max change 1.280e-1 after 2000 iterations"],
                ),
                run(
                    Tech::Prosecutor(Variant::by_id("prosecutor-f").unwrap()),
                    &[],
                ),
                run(Tech::Baseline(Technique::all()[0]), &[]),
            ],
        }];
        let md = summary_md("m", &results, false);
        assert!(md.contains("| c | 1/2 ⚠ |"), "{md}");
        assert!(
            md.contains(
                "- `c` / prosecutor: F∪P initial: max change 1.280e-1 after 2000 iterations"
            ),
            "{md}"
        );
        let csv = cases_csv(&results);
        let conv = |tech: &str| {
            csv.lines()
                .find(|l| l.starts_with(&format!("c,{tech},")))
                .map(|l| l.split(',').nth(11).unwrap().to_owned())
        };
        assert_eq!(conv("prosecutor").as_deref(), Some("no"));
        assert_eq!(conv("prosecutor-f").as_deref(), Some("yes"));
        assert_eq!(conv(Technique::all()[0].name()).as_deref(), Some(""));
        // the technique table counts the run normally (a top-1 hit)
        assert_eq!(summarize(&results)[0].hits[0], 1);
    }

    /// `eval --explain`'s columns: per case, on each of its rows, empty without it; its
    /// summary section counts over all cases.
    #[test]
    fn explain_columns_and_section() {
        use crate::eval::harness::{CausalSummary, NearestRun};
        let case = |name: &str, explain: Option<Explained>| CaseResult {
            name: name.into(),
            kind: None,
            error: None,
            trace_seconds: 0.0,
            failing_steps: 0,
            experiments: Vec::new(),
            explain,
            runs: Vec::new(),
        };
        let good = Explained {
            nearest: Some(NearestRun {
                found: true,
                size: 2,
                runs: 5,
                score: Some(0.875),
                bucket: Some(80),
            }),
            causal: Some(CausalSummary {
                mode: "regression".into(),
                length: 3,
                complete: true,
                reaches_fault: true,
                runs: 4,
            }),
            seconds: Some(1.5),
            error: None,
            warnings: Vec::new(),
        };
        let patch = Explained {
            nearest: Some(NearestRun {
                found: false,
                size: 0,
                runs: 60,
                score: Some(0.0),
                bucket: Some(0),
            }),
            causal: None,
            seconds: Some(2.5),
            error: None,
            warnings: vec!["causal path not computed: no successful run, to compare".into()],
        };
        let broken = Explained {
            error: Some("the fixed version (reference_src): tracing failed: boom".into()),
            ..Explained::default()
        };
        let results = [
            case("a", Some(good)),
            case("b", Some(patch)),
            case("c", Some(broken)),
            CaseResult::failed("d", None, "no dump".into()),
        ];
        let csv = cases_csv(&results);
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        assert_eq!(header[12], "error");
        assert_eq!(&header[13..], &EXPLAIN_COLUMNS[..]);
        let tail = |name: &str| {
            let rows: Vec<Vec<String>> = csv
                .lines()
                .filter(|l| l.starts_with(&format!("{name},")))
                .map(csv_fields)
                .collect();
            assert_eq!(rows.len(), Tech::all().len());
            assert!(rows.iter().all(|r| r.len() == header.len()), "{rows:?}");
            assert!(rows.iter().all(|r| r[13..] == rows[0][13..]), "{rows:?}");
            rows[0][13..].join(",")
        };
        assert_eq!(
            tail("a"),
            "true,2,5,0.8750,80,regression,3,true,true,4,1.500,"
        );
        assert_eq!(
            tail("b"),
            "false,0,60,0.0000,0,,,,,,2.500,warning: causal path not computed: no successful \
             run, to compare"
        );
        assert!(csv.contains(",2.500,\"warning: causal path"), "{csv}");
        assert_eq!(
            tail("c"),
            ",,,,,,,,,,,the fixed version (reference_src): tracing failed: boom"
        );
        assert_eq!(tail("d"), ",,,,,,,,,,,");
        assert!(!summary_md("m", &results, false).contains("Seeds 003"));
        let md = summary_md("m", &results, true);
        for row in [
            "| cases | 4 |",
            "| explained without error | 2 |",
            "| nearest successful run found | 1 |",
            "| report scoring ≥ 80 % (the paper: 43.9 % on Siemens) | 1 (25.0 %) |",
            "| causal path computed | 1 (regression 1) |",
            "| causal path complete (ended at its root) | 1 |",
            "| causal path length: median | 3 |",
            "| causal path contains a faulty line | 1 (100.0 % of paths, 25.0 % of cases) |",
            "| explain seconds: median | 2.00 |",
            "- `b`: warning: causal path not computed: no successful run, to compare",
            "- `c`: the fixed version (reference_src): tracing failed: boom",
        ] {
            assert!(md.contains(row), "{row}\n{md}");
        }
        // before the case errors
        assert!(md.find("## Seeds 003 and 004").unwrap() < md.find("## Errors").unwrap());
    }

    #[test]
    fn averages_print_without_negative_zero() {
        let empty: f64 = std::iter::empty::<f64>().sum();
        assert_eq!(fmt_avg(empty), "0");
        assert_eq!(fmt_avg(2.0), "2");
        assert_eq!(fmt_avg(4.66), "4.7");
    }
}
