//! The page of an evaluation (`eval`'s `DIR/index.html`): the technique table, the top-k plot
//! `eval` draws (`topk.svg`, inline) and the per-case table.

use std::fmt::Write as _;

use super::{esc, num_cell, page, script_json, sortable};
use crate::eval::harness::{CaseResult, Tech};
use crate::eval::output::{self, TOP_K};
use crate::metrics::aggregate::Summary;

/// The whole page; `topk_svg` is `eval`'s own plot (generated, its labels escaped).
pub fn eval_page(manifest: &str, results: &[CaseResult], topk_svg: &str) -> String {
    let failed = results.iter().filter(|c| c.error.is_some()).count();
    let body = format!(
        "<header><h1><span class=\"tool\">prosecutor</span> evaluation</h1><div class=\"meta\">\
         <span>manifest <b class=\"mono\">{}</b></span><span><b>{}</b> cases</span>\
         <span>{failed} failed</span></div></header>{}<h2>Faults within the top k</h2>\
         <div class=\"plot\">{}</div>{}",
        esc(manifest),
        results.len(),
        techniques(results),
        topk_svg.replacen("<svg ", "<svg class=\"topk\" ", 1),
        cases(results)
    );
    page(
        &format!("prosecutor eval: {manifest}"),
        &body,
        &script_json(&serde_json::json!({})),
    )
}

fn techniques(results: &[CaseResult]) -> String {
    let sums = output::summarize(results);
    let rows: String = sums
        .iter()
        .map(|t| {
            let mut s = format!("<tr><td>{}</td>", esc(t.tech.label()));
            for h in &t.hits {
                s.push_str(&num_cell(*h as f64, &h.to_string()));
            }
            let pos = Summary::of(&t.positions).map_or(f64::NAN, |p| p.mean);
            let exam = Summary::of(&t.exam).map_or(f64::NAN, |e| e.median * 100.0);
            s.push_str(&num_cell(pos, &format!("{pos:.1}")));
            s.push_str(&num_cell(exam, &format!("{exam:.1}")));
            s.push_str(&num_cell(t.not_found as f64, &t.not_found.to_string()));
            s.push_str(&num_cell(t.errors as f64, &t.errors.to_string()));
            s.push_str("</tr>");
            s
        })
        .collect();
    let labels: Vec<String> = TOP_K.iter().map(|k| format!("top {k}")).collect();
    let mut head: Vec<(&str, bool)> = vec![("technique", false)];
    head.extend(labels.iter().map(|l| (l.as_str(), true)));
    head.extend([
        ("mean position", true),
        ("EXAM median %", true),
        ("not found", true),
        ("errors", true),
    ]);
    format!(
        "<h2>Techniques</h2><div class=\"panel\">{}</div><p class=\"legend\">Faults whose \
         pessimistic position is within the top k; a fault not ranked counts as one past the \
         longest ranking of its case.</p>",
        sortable("techniques", &head, &rows)
    )
}

fn cases(results: &[CaseResult]) -> String {
    let techs = Tech::all();
    let mut head: Vec<(&str, bool)> = vec![("case", false), ("kind", false)];
    head.extend(techs.iter().map(|t| (t.label(), true)));
    head.push(("experiments", true));
    let rows: String = results.iter().map(|c| case_row(c, &techs)).collect();
    format!(
        "<h2>Cases: position of the faulty line</h2><div class=\"panel\" \
         style=\"overflow-x:auto\">{}</div><p class=\"legend\">Pessimistic position (ties count \
         against the technique); green: ranked first.</p>",
        sortable("cases", &head, &rows)
    )
}

fn case_row(c: &CaseResult, techs: &[Tech]) -> String {
    let mut s = format!(
        "<tr><td class=\"mono\">{}</td><td class=\"kind\">{}</td>",
        esc(&c.name),
        esc(c.kind.as_deref().unwrap_or(""))
    );
    if let Some(e) = &c.error {
        let _ = write!(
            s,
            "<td class=\"fail\" colspan=\"{}\">{}</td></tr>",
            techs.len() + 1,
            esc(e.lines().next().unwrap_or(""))
        );
        return s;
    }
    for &t in techs {
        let run = c.runs.iter().find(|r| r.tech == t);
        match run.map(|r| (r, &r.located)) {
            Some((r, Some(l))) => {
                let p = output::run_position(c, r);
                let text = if l.found() {
                    format!("{p:.0}")
                } else {
                    "not ranked".to_owned()
                };
                let cell = num_cell(p, &text);
                if l.hit(1) {
                    // the fault on top: shown as a hit
                    s.push_str(&cell.replacen("class=\"num\"", "class=\"num hit\"", 1));
                } else {
                    s.push_str(&cell);
                }
            }
            Some((r, None)) => {
                let why = r.error.as_deref().unwrap_or("error");
                let _ = write!(
                    s,
                    "<td class=\"num fail\" data-v=\"1e9\" title=\"{}\">error</td>",
                    esc(why)
                );
            }
            None => s.push_str("<td class=\"num\" data-v=\"1e9\">–</td>"),
        }
    }
    s.push_str(&num_cell(
        c.experiments.len() as f64,
        &c.experiments.len().to_string(),
    ));
    s.push_str("</tr>");
    s
}
