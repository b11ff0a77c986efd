//! Printing an EPG: TSV, CSV (source,target,rule), JSON and Graphviz DOT.

use std::io::{self, Write};

use super::Epg;
use crate::dump::Dump;
use crate::forward::Vertex;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Tsv,
    Csv,
    Json,
    Dot,
}

fn kind(v: &Vertex) -> &'static str {
    match v {
        Vertex::Stmt(_) => "statement",
        Vertex::Def { .. } => "variable",
        Vertex::Value { .. } => "value",
        Vertex::Arg { .. } | Vertex::This { .. } => "argument",
    }
}

fn location(dump: &Dump, v: &Vertex) -> String {
    let s = match *v {
        Vertex::Stmt(s) => s,
        Vertex::Def { trace, step, .. }
        | Vertex::Value { trace, step }
        | Vertex::Arg { trace, step, .. }
        | Vertex::This { trace, step, .. } => dump.traces[trace as usize].steps[step as usize].stmt,
    };
    let st = &dump.stmts[s as usize];
    format!("{}:{}", st.file, st.line)
}

/// Vertices then edges, TAB-separated, each section introduced by a `#` line.
pub fn write_tsv(w: &mut dyn Write, dump: &Dump, g: &Epg) -> io::Result<()> {
    writeln!(w, "# vertices: name\tkind\tlocation")?;
    for v in &g.vertices {
        writeln!(
            w,
            "{}\t{}\t{}",
            super::vertex_name(dump, v),
            kind(v),
            location(dump, v)
        )?;
    }
    writeln!(w, "# edges: source\ttarget\trule")?;
    for e in &g.edges {
        writeln!(
            w,
            "{}\t{}\t{}",
            g.vertex_name(dump, e.src),
            g.vertex_name(dump, e.dst),
            g.rule_names[e.rule as usize]
        )?;
    }
    Ok(())
}

/// Edges only: `source,target,rule` with a header (the format of the fixture snapshots).
pub fn write_csv(w: &mut dyn Write, dump: &Dump, g: &Epg) -> io::Result<()> {
    writeln!(w, "source,target,rule")?;
    for e in &g.edges {
        writeln!(
            w,
            "{},{},{}",
            csv_field(&g.vertex_name(dump, e.src)),
            csv_field(&g.vertex_name(dump, e.dst)),
            g.rule_names[e.rule as usize]
        )?;
    }
    Ok(())
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

pub fn write_json(w: &mut dyn Write, dump: &Dump, g: &Epg) -> io::Result<()> {
    let vertices: Vec<serde_json::Value> = g
        .vertices
        .iter()
        .enumerate()
        .map(|(i, v)| {
            serde_json::json!({
                "id": i,
                "name": super::vertex_name(dump, v),
                "kind": kind(v),
                "location": location(dump, v),
            })
        })
        .collect();
    let edges: Vec<serde_json::Value> = g
        .edges
        .iter()
        .map(|e| serde_json::json!({"source": e.src, "target": e.dst, "rule": g.rule_names[e.rule as usize]}))
        .collect();
    let counts: serde_json::Map<String, serde_json::Value> = g
        .rule_counts()
        .into_iter()
        .map(|(r, c)| (r, serde_json::Value::from(c)))
        .collect();
    let doc = serde_json::json!({"vertices": vertices, "edges": edges, "rule_counts": counts});
    serde_json::to_writer_pretty(&mut *w, &doc)?;
    writeln!(w)
}

pub fn write_dot(w: &mut dyn Write, dump: &Dump, g: &Epg) -> io::Result<()> {
    writeln!(w, "digraph epg {{")?;
    writeln!(
        w,
        "  rankdir=LR; node [fontname=\"monospace\", fontsize=10];"
    )?;
    for (i, v) in g.vertices.iter().enumerate() {
        let (shape, color) = match v {
            Vertex::Stmt(_) => ("box", "lightgray"),
            Vertex::Def { .. } => ("ellipse", "lightyellow"),
            Vertex::Value { .. } => ("ellipse", "lightblue"),
            Vertex::Arg { .. } | Vertex::This { .. } => ("ellipse", "palegreen"),
        };
        // Each part is escaped once; `\n` between them is DOT's line break.
        let name = dot_escape(&super::vertex_name(dump, v));
        let label = match v {
            Vertex::Stmt(s) => format!("{name}\\n{}", dot_escape(&dump.stmts[*s as usize].text)),
            _ => name,
        };
        writeln!(
            w,
            "  v{i} [label=\"{label}\", shape={shape}, style=filled, fillcolor={color}];"
        )?;
    }
    for e in &g.edges {
        let rule = &g.rule_names[e.rule as usize];
        let color = match rule.as_str() {
            "R_DU" | "R_OP1" | "R_OP2" | "R_CL2" | "R_CL3" => "goldenrod",
            "R_CTRL1" => "blue",
            "R_CTRL2" | "R_OP3" | "R_OP4" => "purple",
            "R_CL1" => "darkgreen",
            _ => "gray40",
        };
        writeln!(
            w,
            "  v{} -> v{} [label=\"{}\", color={color}, fontsize=8];",
            e.src,
            e.dst,
            dot_escape(rule)
        )?;
    }
    writeln!(w, "}}")
}

/// Text as the inside of a DOT string: backslashes and quotes escaped, line breaks as `\n`.
fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace("\r\n", "\\n")
        .replace('\n', "\\n")
}
