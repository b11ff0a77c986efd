//! What `prosecutor explain` prints: for one ranked line, its propagation path through the EPG
//! (with each vertex's posterior), the nearest successful run of seed 003 (the branch
//! instances that had to evaluate differently for the test to pass) and seed 004's causal path
//! ([`super::causal_report`]), as a table, JSON or DOT.

use std::io::Write;

use serde::Serialize;

use super::pathgen::{Outcome, Verdict};
use crate::dump::{Dump, Trace};
use crate::eval::score::FaultyLines;
use crate::localize::paths::LinePath;
use crate::localize::ranking::Ranked;

/// The output formats of `explain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Dot,
}

/// One step of a path: where, what, and its value or belief.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub file: String,
    pub line: u32,
    pub code: String,
    /// Propagation path: what the vertex is (`statement`, `x at step 12`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub what: Option<String>,
    /// Propagation path: the posterior `Pr(incorrect | evidence)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub belief: Option<f64>,
    /// Nearest successful run: the branch's outcome there (`true` / `false`). Causal path: the
    /// value the step gives (a string; `VAR=VALUE, ...` when it gives several), or a predicate's
    /// outcome in the failing run (`true` / `false`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    /// Nearest successful run: its outcome in the failing run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_value: Option<bool>,
    /// Nearest successful run and causal path: the step of the failing run (its trace's
    /// numbering).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// Causal path: the relevant variables the step gives, with their values.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub given: Vec<super::causal_report::Given>,
}

/// The explained line.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    pub file: String,
    pub line: u32,
    pub rank: usize,
    pub score: f64,
}

/// One candidate of the search, as shown.
#[derive(Debug, Clone, Serialize)]
pub struct CandidateRow {
    /// `file:line` of each forced instance, in failing-run order.
    pub forced: Vec<String>,
    pub verdict: Verdict,
    /// Number of branch instances of the failing run its run evaluated differently.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distance: Option<usize>,
    /// What the re-run reported (why it crashed, which instance was not reached, ...).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// Seed 003's search: how it went.
#[derive(Debug, Clone, Serialize)]
pub struct PathGeneration {
    pub test: String,
    pub found: bool,
    /// Distinct statements in the report (the paper's report size).
    pub size: usize,
    pub runs: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// With `--faulty`: the report's score `1 − |DS*| / |PDG|` (spec §4) and its Table 4 bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket: Option<u32>,
    /// `|PDG|`: the application statements the score is a share of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pdg_nodes: Option<usize>,
    pub candidates: Vec<CandidateRow>,
}

/// Everything `explain` prints.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub line: Target,
    /// The model whose posteriors the propagation path shows, and the product of its beliefs.
    pub model: String,
    pub probability: f64,
    pub propagation_path: Vec<Step>,
    pub nearest_successful_run: Vec<Step>,
    pub path_generation: Option<PathGeneration>,
    /// Seed 004: the defining points that carried the failure, in the order given (`what` says
    /// "At LINE, VAR is given VALUE").
    pub causal_path: Vec<Step>,
    pub causal: Option<super::causal_report::CausalPath>,
    pub warnings: Vec<String>,
}

impl Explanation {
    pub fn new(e: &Ranked, path: Option<&LinePath>) -> Explanation {
        let propagation_path = path.map_or_else(Vec::new, |p| {
            p.vertices
                .iter()
                .map(|v| Step {
                    file: v.file.clone(),
                    line: v.line,
                    code: v.text.clone(),
                    what: Some(v.label.clone()),
                    belief: Some(v.belief),
                    value: None,
                    failing_value: None,
                    step: None,
                    given: Vec::new(),
                })
                .collect()
        });
        Explanation {
            line: Target {
                file: e.file.clone(),
                line: e.line,
                rank: e.rank,
                score: e.score,
            },
            model: path.map_or_else(String::new, |p| p.model.to_owned()),
            probability: path.map_or(0.0, |p| p.probability),
            propagation_path,
            nearest_successful_run: Vec::new(),
            path_generation: None,
            causal_path: Vec::new(),
            causal: None,
            warnings: Vec::new(),
        }
    }

    /// Adds seed 003's result: `failing` is the run the search aligned with.
    pub fn with_path_generation(&mut self, dump: &Dump, failing: &Trace, out: &Outcome) {
        let stmt_at = |p: u32| &dump.stmts[failing.steps[p as usize].stmt as usize];
        if let Some(report) = &out.report {
            self.nearest_successful_run = report
                .0
                .iter()
                .map(|&p| {
                    let st = stmt_at(p);
                    let was = failing.branch[p as usize];
                    Step {
                        file: st.file.clone(),
                        line: st.line,
                        code: st.text.clone(),
                        what: None,
                        belief: None,
                        value: was.map(|b| serde_json::Value::Bool(!b)),
                        failing_value: was,
                        step: Some(p),
                        given: Vec::new(),
                    }
                })
                .collect();
        }
        let mut stmts: Vec<_> = self
            .nearest_successful_run
            .iter()
            .map(|s| (s.file.clone(), s.line, s.code.clone()))
            .collect();
        stmts.sort();
        stmts.dedup();
        self.path_generation = Some(PathGeneration {
            test: dump.manifest.tests[failing.test].id.clone(),
            found: out.found.is_some(),
            size: stmts.len(),
            runs: out.runs,
            stopped: out.stopped.clone(),
            score: None,
            bucket: None,
            pdg_nodes: None,
            candidates: out
                .candidates
                .iter()
                .map(|c| CandidateRow {
                    forced: c
                        .forced
                        .iter()
                        .map(|&p| format!("{}:{}", stmt_at(p).file, stmt_at(p).line))
                        .collect(),
                    verdict: c.verdict,
                    distance: c.distance.as_ref().map(Vec::len),
                    detail: c.detail.clone(),
                })
                .collect(),
        });
    }

    /// Scores the report against the faulty lines (the statements on them are the defects).
    pub fn score_report(
        &mut self,
        dump: &Dump,
        cd: &crate::cdg::ControlDeps,
        failing: &Trace,
        out: &Outcome,
        faulty: &[FaultyLines],
    ) {
        let Some(g) = &mut self.path_generation else {
            return;
        };
        let blamed: Vec<_> = out.report.as_ref().map_or_else(Vec::new, |d| {
            d.0.iter()
                .map(|&p| failing.steps[p as usize].stmt)
                .collect()
        });
        let defects: Vec<_> = (0..dump.stmts.len() as u32)
            .filter(|&s| {
                let st = &dump.stmts[s as usize];
                faulty
                    .iter()
                    .any(|f| f.lines.contains(&st.line) && f.file_matches(&st.file))
            })
            .collect();
        let pdg = super::score::Pdg::build(dump, cd, failing);
        let score = pdg.score(&blamed, &defects);
        g.pdg_nodes = Some(pdg.nodes);
        g.score = Some(score);
        g.bucket = Some(super::score::bucket(score));
    }

    pub fn write(&self, w: &mut dyn Write, format: Format) -> std::io::Result<()> {
        match format {
            Format::Json => {
                serde_json::to_writer_pretty(&mut *w, self)?;
                writeln!(w)
            }
            Format::Table => self.write_table(w),
            Format::Dot => self.write_dot(w),
        }
    }

    fn write_table(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let t = &self.line;
        writeln!(
            w,
            "{}:{} (rank {}, score {:.4})",
            t.file, t.line, t.rank, t.score
        )?;
        writeln!(w)?;
        if self.propagation_path.is_empty() {
            writeln!(
                w,
                "Propagation path: none (the line has no path to the failure in the model)"
            )?;
        } else {
            writeln!(
                w,
                "Propagation path ({} model, product of beliefs {:.4}):",
                self.model, self.probability
            )?;
            for s in &self.propagation_path {
                writeln!(
                    w,
                    "  {:>7.4}  {}:{}  {}  [{}]",
                    s.belief.unwrap_or(0.0),
                    s.file,
                    s.line,
                    s.code,
                    s.what.as_deref().unwrap_or("")
                )?;
            }
        }
        writeln!(w)?;
        self.write_nearest_table(w)?;
        if self.causal.is_some() || self.path_generation.is_some() {
            writeln!(w)?;
            self.write_causal_table(w)?;
        }
        Ok(())
    }

    fn write_nearest_table(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let Some(g) = &self.path_generation else {
            return writeln!(w, "Nearest successful run: not searched");
        };
        if !g.found {
            let why = g
                .stopped
                .as_deref()
                .unwrap_or("no forced set of branch instances made it pass");
            return writeln!(
                w,
                "Nearest successful run of {}: none found ({} candidates, {} re-runs): {why}",
                g.test,
                g.candidates.len(),
                g.runs
            );
        }
        writeln!(
            w,
            "Nearest successful run of {} ({} branch instances evaluated differently, {} statements; \
             candidate {} of the search, {} re-runs):",
            g.test,
            self.nearest_successful_run.len(),
            g.size,
            g.candidates.len(),
            g.runs
        )?;
        if let Some(score) = g.score {
            writeln!(
                w,
                "  report score (1 - |DS*| / |PDG|): {:.1} %",
                score * 100.0
            )?;
        }
        for s in &self.nearest_successful_run {
            let show = |b: Option<bool>| b.map_or("?", |b| if b { "true" } else { "false" });
            writeln!(
                w,
                "  {}:{}  {}  {} -> {}  (step {})",
                s.file,
                s.line,
                s.code,
                show(s.failing_value),
                show(s.value.as_ref().and_then(serde_json::Value::as_bool)),
                s.step.unwrap_or(0)
            )?;
        }
        Ok(())
    }

    fn write_dot(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let esc = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        writeln!(w, "digraph explain {{")?;
        writeln!(w, "  rankdir=TB; node [shape=box, fontname=\"monospace\"];")?;
        writeln!(
            w,
            "  subgraph cluster_propagation {{ label=\"propagation path\";"
        )?;
        for (i, s) in self.propagation_path.iter().enumerate() {
            let label = format!(
                "{}:{}\\n{}\\n{} ({:.3})",
                s.file,
                s.line,
                esc(&s.code),
                esc(s.what.as_deref().unwrap_or("")),
                s.belief.unwrap_or(0.0)
            );
            writeln!(w, "    p{i} [label=\"{label}\"];")?;
            if i > 0 {
                writeln!(w, "    p{} -> p{i};", i - 1)?;
            }
        }
        writeln!(w, "  }}")?;
        writeln!(
            w,
            "  subgraph cluster_nearest {{ label=\"nearest successful run\";"
        )?;
        for (i, s) in self.nearest_successful_run.iter().enumerate() {
            let to = if s.value == Some(serde_json::Value::Bool(true)) {
                "true"
            } else {
                "false"
            };
            let label = format!("{}:{}\\n{}\\nis {to}", s.file, s.line, esc(&s.code));
            writeln!(w, "    n{i} [label=\"{label}\"];")?;
            if i > 0 {
                writeln!(w, "    n{} -> n{i};", i - 1)?;
            }
        }
        writeln!(w, "  }}")?;
        self.write_causal_dot(w, &esc)?;
        writeln!(w, "}}")
    }
}
