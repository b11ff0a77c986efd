//! The causal path (seed 004) in `explain`'s output: each defining point rendered as the paper
//! renders it ("At 5, x is given True"), the switched predicate as the head ("At 6, (if x:) is
//! true"), in the order the values were given, with how the walk went.

use std::io::Write;

use serde::Serialize;

use super::causal::{Outcome, Single, ValuedRun};
use super::report::{Explanation, Step};
use crate::dump::Dump;
use crate::eval::score::FaultyLines;
use crate::intern::Interner;

/// A variable a causal-path step gives, and the value (the front-end's encoding).
#[derive(Debug, Clone, Serialize)]
pub struct Given {
    pub var: String,
    pub value: String,
}

/// How the causal path was computed.
#[derive(Debug, Clone, Serialize)]
pub struct CausalPath {
    /// `patch`: the reference is the failing test with the nearest successful run's branch
    /// instances switched (spec §1, D9); `regression`: the fixed version's run of the test.
    pub mode: String,
    /// What the reference is: each switched branch instance (`file:line switched`), or the
    /// fixed version's dump.
    pub reference: Vec<String>,
    /// Steps on the path (the head included): the paper's path length.
    pub length: usize,
    /// The walk ended by the rules (else a partial path: a failed induction or the budget).
    pub complete: bool,
    pub ended: String,
    /// Entries the runs share, patched re-runs made, and the rules that fired.
    pub aligned: usize,
    pub runs: usize,
    pub def_free: usize,
    pub definition: usize,
    pub singles: Vec<Single>,
    /// With `--faulty`: a step of the path is on a faulty line (the paper's "Roots").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reaches_fault: Option<bool>,
}

/// The path's steps in the order their values were given: the head and the root, then each
/// defining point by the frame's next step (when the value is first seen), with the variables it
/// gives and their values.
/// A path step: the failing run's step and the `(variable, value)` pairs it gives.
type PathStep = (u32, Vec<(u32, u32)>);

fn ordered(out: &Outcome, f: &ValuedRun) -> Vec<PathStep> {
    let tr = &f.trace;
    let next_in_frame = |k: u32| {
        let fr = tr.steps[k as usize].frame;
        (k + 1..tr.steps.len() as u32).find(|&j| tr.steps[j as usize].frame == fr)
    };
    let mut body: Vec<(u32, PathStep)> = out
        .path
        .iter()
        .map(|(&k, given)| (next_in_frame(k).unwrap_or(k), (k, given.clone())))
        .collect();
    body.sort();
    let mut v: Vec<PathStep> = out.head.iter().map(|&h| (h, Vec::new())).collect();
    if let Some(r) = out
        .root
        .filter(|r| !out.head.contains(r) && !out.path.contains_key(r))
    {
        v.push((r, Vec::new()));
    }
    v.extend(body.into_iter().map(|(_, step)| step));
    v
}

/// What a path step says: "At LINE, VAR is given VALUE, ..." for a definition; for the head
/// or root, the branch's outcome, or that the failing run failed there, or (an edited
/// statement) that the reference ran another version of it.
fn says(line: u32, code: &str, given: &[Given], outcome: Option<bool>, last: bool) -> String {
    if !given.is_empty() {
        let g: Vec<String> = given
            .iter()
            .map(|g| format!("{} is given {}", g.var, g.value))
            .collect();
        return format!("At {line}, {}", g.join(", "));
    }
    match outcome {
        Some(b) => format!("At {line}, ({code}) is {b}"),
        None if last => format!("At {line}, ({code}) fails"),
        None => format!("At {line}, ({code}) runs (the reference runs another version of it)"),
    }
}

impl Explanation {
    /// Adds seed 004's causal path of failing run `f`; `reference` are the switched instances.
    pub fn with_causal_path(
        &mut self,
        dump: &Dump,
        f: &ValuedRun,
        out: &Outcome,
        mode: &str,
        reference: Vec<String>,
        names: &Interner,
    ) {
        let tr = &f.trace;
        let steps = ordered(out, f);
        self.causal_path = steps
            .iter()
            .map(|(k, given)| {
                let st = &dump.stmts[tr.steps[*k as usize].stmt as usize];
                let given: Vec<Given> = given
                    .iter()
                    .map(|&(v, value)| Given {
                        var: names.name(v).to_owned(),
                        value: names.name(value).to_owned(),
                    })
                    .collect();
                let last = *k as usize + 1 == tr.steps.len();
                let value = match given.as_slice() {
                    [] => tr.branch[*k as usize].map(serde_json::Value::Bool),
                    [g] => Some(serde_json::Value::String(g.value.clone())),
                    many => {
                        let all: Vec<String> = many
                            .iter()
                            .map(|g| format!("{}={}", g.var, g.value))
                            .collect();
                        Some(serde_json::Value::String(all.join(", ")))
                    }
                };
                Step {
                    file: st.file.clone(),
                    line: st.line,
                    code: st.text.clone(),
                    what: Some(says(
                        st.line,
                        &st.text,
                        &given,
                        tr.branch[*k as usize],
                        last,
                    )),
                    belief: None,
                    value,
                    failing_value: None,
                    step: Some(*k),
                    given,
                }
            })
            .collect();
        self.causal = Some(CausalPath {
            mode: mode.to_owned(),
            reference,
            length: steps.len(),
            complete: out.complete,
            ended: out.ended.clone(),
            aligned: out.aligned,
            runs: out.runs,
            def_free: out.def_free,
            definition: out.definition,
            singles: out.singles.clone(),
            reaches_fault: None,
        });
    }

    /// Whether a step of the causal path is on a faulty line.
    pub fn score_causal_path(&mut self, faulty: &[FaultyLines]) {
        let on = self.causal_path.iter().any(|s| {
            faulty
                .iter()
                .any(|f| f.lines.contains(&s.line) && f.file_matches(&s.file))
        });
        if let Some(c) = &mut self.causal {
            c.reaches_fault = Some(on);
        }
    }

    pub(super) fn write_causal_table(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let Some(c) = &self.causal else {
            return writeln!(w, "Causal path: not computed");
        };
        writeln!(
            w,
            "Causal path ({} mode, {} steps; reference: {}; {} re-runs; {}):",
            c.mode,
            c.length,
            c.reference.join(", "),
            c.runs,
            if c.complete { "complete" } else { "partial" }
        )?;
        for s in &self.causal_path {
            writeln!(
                w,
                "  {}:{}  {}",
                s.file,
                s.line,
                s.what.as_deref().unwrap_or("")
            )?;
        }
        writeln!(w, "  ended: {}", c.ended)
    }

    pub(super) fn write_causal_dot(
        &self,
        w: &mut dyn Write,
        esc: &dyn Fn(&str) -> String,
    ) -> std::io::Result<()> {
        writeln!(w, "  subgraph cluster_causal {{ label=\"causal path\";")?;
        for (i, s) in self.causal_path.iter().enumerate() {
            let label = format!(
                "{}:{}\\n{}",
                s.file,
                s.line,
                esc(s.what.as_deref().unwrap_or(""))
            );
            writeln!(w, "    c{i} [label=\"{label}\"];")?;
            if i > 0 {
                writeln!(w, "    c{} -> c{i};", i - 1)?;
            }
        }
        writeln!(w, "  }}")
    }
}
