//! The page of one localization (`localize --html FILE`).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use super::{esc, num_cell, page, script_json, sortable};
use crate::dump::{Dump, Outcome};
use crate::localize::cfx::CfxOutcome;
use crate::localize::ranking::{Granularity, Ranked};
use crate::localize::Report;

/// Rows of the ranking table at most.
const MAX_ROWS: usize = 500;
/// The source view shows the files of this many top entries.
const SOURCE_ENTRIES: usize = 100;
/// Longest failure message or experiment detail shown (characters).
const MAX_MESSAGE: usize = 300;

/// The whole page of a localization report.
pub fn localize_page(dump: &Dump, r: &Report) -> String {
    let sources = Sources::load(dump, &r.ranking);
    let body = [
        header(dump, r),
        top(r, &sources),
        sources.html(r),
        tests(dump),
        experiments(r),
        inference(r),
    ]
    .concat();
    let title = format!("prosecutor: {}", dump.dir.display());
    page(&title, &body, &data(r))
}

/// The JSON the page's script reads: the paths by row key, and how many entries have one.
fn data(r: &Report) -> String {
    let mut paths = BTreeMap::new();
    if let Some(d) = &r.details {
        for (i, e) in r.ranking.iter().enumerate().take(super::PATHS) {
            let found = d
                .paths
                .iter()
                .find(|p| p.file == e.file && p.line == e.line && p.statements == e.statements);
            if let Some(p) = found {
                paths.insert(i.to_string(), p);
            }
        }
    }
    script_json(&serde_json::json!({ "paths": paths, "top": super::PATHS }))
}

fn header(dump: &Dump, r: &Report) -> String {
    let c = &r.convergence;
    let badge = if c.runs.is_empty() {
        String::new()
    } else if c.converged {
        "<span class=\"badge ok\">inference converged</span>".to_owned()
    } else {
        "<span class=\"badge bad\">inference did not converge</span>".to_owned()
    };
    let s = &r.stats;
    // a traced dump is often a temporary directory: name the code instead
    let (what, place) = match dump.manifest.notes.get("src").and_then(|v| v.as_str()) {
        Some(src) => ("code", src.to_owned()),
        None => ("dump", dump.dir.display().to_string()),
    };
    let mut h = format!(
        "<header><h1><span class=\"tool\">prosecutor</span> fault localization</h1>\
         <div class=\"meta\"><span>{what} <b class=\"mono\">{}</b></span><span>{} · {}</span>\
         <span><b>{}</b> failing, <b>{}</b> passing traces</span><span>{} steps ({} after \
         compression)</span><span>{:.2} s</span>{badge}</div>",
        esc(&place),
        esc(&dump.manifest.frontend.language),
        mode_text(r),
        s.failing_traces,
        s.passing_traces,
        s.steps,
        s.kept_steps,
        s.seconds,
    );
    if !r.warnings.is_empty() {
        h.push_str("<ul class=\"warnings\">");
        for w in &r.warnings {
            let _ = write!(h, "<li>{}</li>", esc(w));
        }
        h.push_str("</ul>");
    }
    h.push_str("</header>");
    h
}

fn mode_text(r: &Report) -> String {
    let g = match r.granularity {
        Granularity::Line => "lines",
        Granularity::Statement => "statements",
        Granularity::Method => "methods",
    };
    let m = serde_json::to_value(r.mode)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    format!("ranking {g}, mode {}", esc(&m))
}

/// The ranking (left) and the path of the selected entry (right).
fn top(r: &Report, sources: &Sources) -> String {
    let models: Vec<&str> = r
        .details
        .iter()
        .flat_map(|d| d.model_scores.iter().map(|m| m.0))
        .collect();
    let mut head: Vec<(&str, bool)> = vec![("rank", true), ("location", false), ("code", false)];
    head.push(("score", true));
    let labels: Vec<String> = models.iter().map(|m| format!("{m} model")).collect();
    head.extend(labels.iter().map(|l| (l.as_str(), true)));
    let top_score = r.ranking.first().map_or(0.0, |e| e.score);
    let rows: String = r
        .ranking
        .iter()
        .take(MAX_ROWS)
        .enumerate()
        .map(|(i, e)| ranking_row(i, e, r, sources, top_score))
        .collect();
    let more = r.ranking.len().saturating_sub(MAX_ROWS);
    let note = if more > 0 {
        format!("<p class=\"legend\">{more} more entries not shown.</p>")
    } else {
        String::new()
    };
    format!(
        "<div class=\"top\"><section><h2>Ranking</h2><div class=\"panel scroll\">{}</div>\
         <p class=\"legend\">Click a row to see its path; click a header to sort.</p>{note}\
         </section><section><h2>Propagation path</h2><div class=\"panel scroll\" id=\"path\">\
         <p class=\"none\">(drawn by the page's script)</p></div><p class=\"legend\">From the \
         line's statement along the error propagation graph to the failing value: the path whose \
         beliefs Pr(wrong) have the largest product (docs/formats.md).</p></section></div>",
        sortable("ranking", &head, &rows)
    )
}

fn ranking_row(i: usize, e: &Ranked, r: &Report, sources: &Sources, top: f64) -> String {
    let loc = location(e, r.granularity);
    let anchor = sources.anchor(&e.file, e.line);
    let code = sources
        .text(&e.file, e.line)
        .unwrap_or("")
        .trim()
        .to_owned();
    let width = (shade(e.score, top) * 36.0).round().max(3.0);
    let mut s = format!(
        "<tr data-key=\"{i}\" data-loc=\"{}\" data-src=\"{}\">{}<td><a href=\"#{}\">{}</a></td>\
         <td class=\"code\" title=\"{}\">{}</td><td class=\"num\" data-v=\"{}\"><span class=\"bar\" \
         style=\"width:{width}px\"></span>{}</td>",
        esc(&loc),
        esc(&anchor),
        num_cell(e.rank as f64, &e.rank.to_string()),
        esc(&anchor),
        esc(&loc),
        esc(&code),
        esc(&code),
        e.score,
        esc(&fmt_score(e.score))
    );
    for (_, scores) in r.details.iter().flat_map(|d| &d.model_scores) {
        let v = e
            .statements
            .iter()
            .filter_map(|s| scores.get(s))
            .copied()
            .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))));
        match v {
            Some(v) => s.push_str(&num_cell(v, &fmt_score(v))),
            None => s.push_str("<td class=\"num\" data-v=\"-1\">–</td>"),
        }
    }
    s.push_str("</tr>");
    s
}

/// Where an entry points, as `localize`'s table shows it.
fn location(e: &Ranked, g: Granularity) -> String {
    match (g, e.statements.first()) {
        (Granularity::Statement, Some(id)) => id.clone(),
        (Granularity::Method, _) => format!("{} ({}:{})", e.method, e.file, e.line),
        _ => format!("{}:{}", e.file, e.line),
    }
}

fn fmt_score(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || x.abs() >= 1e-3 {
        format!("{x:.6}")
    } else {
        format!("{x:.3e}")
    }
}

/// Suspiciousness in [0, 1] for shading: the score relative to the top score (square root, so
/// that the second and third lines stay visible).
fn shade(score: f64, top: f64) -> f64 {
    if top > 0.0 && top.is_finite() && score.is_finite() && score > 0.0 {
        (score / top).clamp(0.0, 1.0).sqrt()
    } else {
        0.0
    }
}

/// The source files shown: the files of the top entries, read from the dump's `source/`, from
/// the traced source directory, or else pieced together from the statements' texts.
struct Sources {
    files: Vec<(String, BTreeMap<u32, String>, bool)>,
    index: HashMap<String, usize>,
}

impl Sources {
    fn load(dump: &Dump, ranking: &[Ranked]) -> Sources {
        let mut s = Sources {
            files: Vec::new(),
            index: HashMap::new(),
        };
        for e in ranking.iter().take(SOURCE_ENTRIES) {
            if !s.index.contains_key(&e.file) {
                s.index.insert(e.file.clone(), s.files.len());
                let (lines, whole) = read_source(dump, &e.file);
                s.files.push((e.file.clone(), lines, whole));
            }
        }
        s
    }

    fn anchor(&self, file: &str, line: u32) -> String {
        match self.index.get(file) {
            Some(i) => format!("L{i}-{line}"),
            None => String::new(),
        }
    }

    fn text(&self, file: &str, line: u32) -> Option<&str> {
        let &i = self.index.get(file)?;
        self.files[i].1.get(&line).map(String::as_str)
    }

    fn html(&self, r: &Report) -> String {
        // (file, line) → best rank and score
        let mut ranked: HashMap<(&str, u32), &Ranked> = HashMap::new();
        for e in &r.ranking {
            ranked.entry((e.file.as_str(), e.line)).or_insert(e);
        }
        let top = r.ranking.first().map_or(0.0, |e| e.score);
        let mut s = String::from("<h2>Source</h2><div class=\"files\">");
        for (i, (file, lines, whole)) in self.files.iter().enumerate() {
            let note = if *whole {
                ""
            } else {
                " <span class=\"legend\">(source not found: the statements' texts)</span>"
            };
            let _ = write!(
                s,
                "<section class=\"panel file\" id=\"F{i}\"><h3>{}{note}</h3><table class=\"src\">",
                esc(file)
            );
            for (&n, text) in lines {
                s.push_str(&source_row(
                    i,
                    n,
                    text,
                    ranked.get(&(file.as_str(), n)),
                    top,
                ));
            }
            s.push_str("</table></section>");
        }
        s.push_str("</div>");
        s
    }
}

fn source_row(f: usize, n: u32, text: &str, e: Option<&&Ranked>, top: f64) -> String {
    match e {
        Some(e) => {
            let a = 0.10 + 0.55 * shade(e.score, top);
            format!(
                "<tr id=\"L{f}-{n}\" class=\"ranked\" data-rank=\"{}\"><td class=\"g\" \
                 style=\"opacity:{:.2}\">{}</td><td class=\"n\">{n}</td><td class=\"c\" \
                 style=\"background:rgba(255,80,70,{a:.3})\">{}</td></tr>",
                e.rank,
                0.35 + a,
                e.rank,
                esc(text)
            )
        }
        None => format!(
            "<tr id=\"L{f}-{n}\"><td class=\"g\"></td><td class=\"n\">{n}</td><td class=\"c\">{}</td></tr>",
            esc(text)
        ),
    }
}

/// The lines of `file` by number, and whether they are the whole file.
fn read_source(dump: &Dump, file: &str) -> (BTreeMap<u32, String>, bool) {
    let mut candidates = vec![dump.dir.join("source").join(file)];
    if let Some(src) = dump.manifest.notes.get("src").and_then(|v| v.as_str()) {
        candidates.push(std::path::Path::new(src).join(file));
    }
    for p in candidates {
        if let Ok(text) = std::fs::read_to_string(&p) {
            let lines = text
                .lines()
                .enumerate()
                .map(|(i, l)| (i as u32 + 1, l.to_owned()))
                .collect();
            return (lines, true);
        }
    }
    let mut lines: BTreeMap<u32, String> = BTreeMap::new();
    for st in dump.stmts.iter().filter(|s| s.file == file) {
        let e = lines.entry(st.line).or_default();
        if st.text.len() > e.len() {
            *e = st.text.clone();
        }
    }
    (lines, false)
}

fn clip(s: &str) -> String {
    let first = s.lines().next().unwrap_or("");
    match first.char_indices().nth(MAX_MESSAGE) {
        Some((i, _)) => format!("{}…", &first[..i]),
        None => first.to_owned(),
    }
}

fn tests(dump: &Dump) -> String {
    let mut tests: Vec<_> = dump.manifest.tests.iter().collect();
    tests.sort_by_key(|t| t.outcome != Outcome::Fail);
    let rows: String = tests
        .iter()
        .map(|t| {
            let (class, outcome) = match t.outcome {
                Outcome::Fail => ("fail", "fail"),
                Outcome::Pass => ("pass", "pass"),
            };
            let failure = match (&t.failure_kind, &t.failure) {
                (Some(k), Some(m)) => format!("{k}: {m}"),
                (Some(k), None) => k.clone(),
                (None, Some(m)) => m.clone(),
                (None, None) => String::new(),
            };
            let ms = t.duration_ms.map_or(String::new(), |d| d.to_string());
            format!(
                "<tr><td class=\"mono\">{}</td><td class=\"{class}\">{outcome}</td><td>{}</td>\
                 <td class=\"mono\">{}</td>{}</tr>",
                esc(&t.id),
                esc(t.trace.as_deref().unwrap_or("—")),
                esc(&clip(&failure)),
                num_cell(t.duration_ms.unwrap_or(0) as f64, &ms)
            )
        })
        .collect();
    let failing = dump
        .manifest
        .tests
        .iter()
        .filter(|t| t.outcome == Outcome::Fail)
        .count();
    format!(
        "<h2>Tests: {failing} failing, {} passing</h2><div class=\"panel scroll\">{}</div>",
        dump.manifest.tests.len() - failing,
        sortable(
            "tests",
            &[
                ("test", false),
                ("outcome", false),
                ("trace", false),
                ("failure", false),
                ("ms", true)
            ],
            &rows
        )
    )
}

fn experiments(r: &Report) -> String {
    if r.experiments.is_empty() {
        return "<h2>Counterfactual experiments</h2><p class=\"none\">None ran.</p>".to_owned();
    }
    let rows: String = r
        .experiments
        .iter()
        .map(|x| {
            let e = &x.experiment;
            let outcome = serde_json::to_value(x.outcome)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let class = match x.outcome {
                CfxOutcome::Pass => "pass",
                CfxOutcome::Fail => "fail",
                _ => "",
            };
            format!(
                "<tr>{}<td class=\"mono\">{}:{}</td><td class=\"mono\">{}</td>{}<td class=\"mono\">{}</td>\
                 <td class=\"{class}\">{}</td>{}<td>{}</td><td class=\"mono\">{}</td></tr>",
                num_cell(e.id as f64, &e.id.to_string()),
                esc(&e.file),
                e.line,
                esc(&e.stmt),
                num_cell(e.occurrence as f64, &format!("#{}", e.occurrence)),
                esc(e.text.trim()),
                esc(&outcome),
                num_cell(x.duration_ms as f64, &format!("{} ms", x.duration_ms)),
                esc(&e.test),
                esc(&clip(&x.detail))
            )
        })
        .collect();
    let passed = r
        .experiments
        .iter()
        .filter(|x| x.outcome == CfxOutcome::Pass)
        .count();
    format!(
        "<h2>Counterfactual experiments: {} run, {passed} made the failing test pass</h2>\
         <div class=\"panel scroll\">{}</div>",
        r.experiments.len(),
        sortable(
            "experiments",
            &[
                ("#", true),
                ("location", false),
                ("branch", false),
                ("instance", true),
                ("condition", false),
                ("outcome", false),
                ("time", true),
                ("test", false),
                ("detail", false)
            ],
            &rows
        )
    )
}

fn inference(r: &Report) -> String {
    let c = &r.convergence;
    if c.runs.is_empty() {
        return "<h2>Inference</h2><p class=\"none\">No inference ran (the ranking is not \
                PROSECUTOR's model).</p>"
            .to_owned();
    }
    let rows: String = c
        .runs
        .iter()
        .map(|run| {
            let (class, text) = if run.converged {
                ("pass", "yes")
            } else {
                ("fail", "NO")
            };
            format!(
                "<tr><td>{}</td><td>{}</td>{}{}{}{}<td class=\"{class}\">{text}</td></tr>",
                esc(run.model),
                esc(run.phase),
                num_cell(run.vertices as f64, &run.vertices.to_string()),
                num_cell(run.edges as f64, &run.edges.to_string()),
                num_cell(run.iterations as f64, &run.iterations.to_string()),
                num_cell(run.max_change, &format!("{:.1e}", run.max_change)),
            )
        })
        .collect();
    format!(
        "<h2>Inference (loopy belief propagation)</h2><div class=\"panel\">{}</div>",
        sortable(
            "inference",
            &[
                ("model", false),
                ("phase", false),
                ("vertices", true),
                ("edges", true),
                ("iterations", true),
                ("final max change", true),
                ("converged", false)
            ],
            &rows
        )
    )
}
