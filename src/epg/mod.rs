//! The error propagation graph: derivation from premises with the rules (interpreted from a
//! `.dl` file, or the compiled default), vertex naming, the acyclicity check, and output formats.
//!
//! Invariant: an [`Epg`] returned by `derive_*` has sorted, duplicate-free `(src, dst, rule)` edges
//! whose endpoints are valid vertex ids.

pub mod compiled;
mod output;

use std::collections::HashMap;

pub use output::{write_csv, write_dot, write_json, write_tsv, Format};

use crate::dump::Dump;
use crate::forward::{Premises, Vertex, RELATIONS};

/// Most rows a relation derived by the rules may hold (about 1.2 GB at arity 3). At 1M trace
/// steps the default rules derive 4M edges; a rule whose join explodes on some trace (the
/// paper's R_CTRL2 premise on an uncompressed endless loop is quadratic in its length) stops
/// with an error naming the rule instead of exhausting memory.
pub const MAX_DERIVED_ROWS: usize = 100_000_000;

/// The default rule set, embedded in the binary (`rules/epg.dl`).
pub const DEFAULT_RULES: &str = include_str!("../../rules/epg.dl");
/// The name under which the embedded default rules are reported in diagnostics.
pub const DEFAULT_RULES_PATH: &str = "rules/epg.dl";

/// The eleven rules of the paper (Figs. 5, 7, 8), as the compiled rule set tags its edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuleName {
    Rl,
    RDu,
    RCtrl1,
    RCtrl2,
    ROp1,
    ROp2,
    ROp3,
    ROp4,
    RCl1,
    RCl2,
    RCl3,
    RHeap,
    RNest,
}

impl RuleName {
    pub const ALL: [RuleName; 13] = [
        RuleName::Rl,
        RuleName::RDu,
        RuleName::RCtrl1,
        RuleName::RCtrl2,
        RuleName::ROp1,
        RuleName::ROp2,
        RuleName::ROp3,
        RuleName::ROp4,
        RuleName::RCl1,
        RuleName::RCl2,
        RuleName::RCl3,
        RuleName::RHeap,
        RuleName::RNest,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RuleName::Rl => "R_l",
            RuleName::RDu => "R_DU",
            RuleName::RCtrl1 => "R_CTRL1",
            RuleName::RCtrl2 => "R_CTRL2",
            RuleName::ROp1 => "R_OP1",
            RuleName::ROp2 => "R_OP2",
            RuleName::ROp3 => "R_OP3",
            RuleName::ROp4 => "R_OP4",
            RuleName::RCl1 => "R_CL1",
            RuleName::RCl2 => "R_CL2",
            RuleName::RCl3 => "R_CL3",
            RuleName::RHeap => "R_HEAP",
            RuleName::RNest => "R_NEST",
        }
    }
}

/// One derived edge; `rule` indexes [`Epg::rule_names`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Edge {
    pub src: u32,
    pub dst: u32,
    pub rule: u16,
}

#[derive(Debug, Clone)]
pub struct Epg {
    pub vertices: Vec<Vertex>,
    pub edges: Vec<Edge>,
    pub rule_names: Vec<String>,
}

impl Epg {
    /// The subgraph of the edges derived by `rules` (names as in the rule file) and the vertices
    /// they join (`derive --rule`). An unknown name is an error that lists the known ones.
    pub fn only_rules(&self, rules: &[String]) -> Result<Epg, String> {
        let mut keep = vec![false; self.rule_names.len()];
        for r in rules {
            let i = self.rule_names.iter().position(|n| n == r).ok_or_else(|| {
                format!(
                    "--rule {r}: no such rule; the rules are {}",
                    self.rule_names.join(", ")
                )
            })?;
            keep[i] = true;
        }
        let mut new_index = vec![u32::MAX; self.vertices.len()];
        let mut vertices = Vec::new();
        let mut edges = Vec::new();
        for e in self.edges.iter().filter(|e| keep[e.rule as usize]) {
            let mut map = |v: u32| {
                if new_index[v as usize] == u32::MAX {
                    new_index[v as usize] = vertices.len() as u32;
                    vertices.push(self.vertices[v as usize]);
                }
                new_index[v as usize]
            };
            let (src, dst) = (map(e.src), map(e.dst));
            edges.push(Edge { src, dst, ..*e });
        }
        Ok(Epg {
            vertices,
            edges,
            rule_names: self.rule_names.clone(),
        })
    }
}

/// Errors of rule loading and derivation (all are bad input: exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum EpgError {
    #[error("{0}")]
    Rules(String),
    #[error("{path}: {message}")]
    Interface { path: String, message: String },
    #[error("rule evaluation failed: {0}")]
    Eval(String),
    #[error("the error propagation graph has a cycle through {vertex} (the Bayesian network needs a DAG): check the rules that produced {edges}")]
    Cycle { vertex: String, edges: String },
}

impl Epg {
    fn from_triples(
        vertices: Vec<Vertex>,
        triples: impl IntoIterator<Item = (u32, u32, String)>,
    ) -> Result<Epg, EpgError> {
        let mut rule_ids: HashMap<String, u16> = HashMap::new();
        let mut rule_names: Vec<String> = Vec::new();
        for r in RuleName::ALL {
            rule_ids.insert(r.as_str().to_owned(), rule_names.len() as u16);
            rule_names.push(r.as_str().to_owned());
        }
        let n = vertices.len() as u32;
        let mut edges = Vec::new();
        for (src, dst, rule) in triples {
            if src >= n || dst >= n {
                return Err(EpgError::Eval(format!(
                    "rule {rule} derived an edge {src} → {dst} whose endpoint is not a vertex id (there are {n} vertices)"
                )));
            }
            let id = *rule_ids.entry(rule.clone()).or_insert_with(|| {
                rule_names.push(rule);
                (rule_names.len() - 1) as u16
            });
            edges.push(Edge { src, dst, rule: id });
        }
        edges.sort_unstable();
        edges.dedup();
        Ok(Epg {
            vertices,
            edges,
            rule_names,
        })
    }

    /// Derives the EPG with the compiled default rules.
    pub fn derive_compiled(p: &Premises) -> Result<Epg, EpgError> {
        let triples = compiled::derive(p)
            .into_iter()
            .map(|(a, b, r)| (a, b, r.as_str().to_owned()));
        Epg::from_triples(p.vertices.clone(), triples)
    }

    /// Derives the EPG by interpreting a rule program. A derived relation that grows past
    /// [`MAX_DERIVED_ROWS`] stops the evaluation with an error naming the rule.
    pub fn derive_interpreted(
        dump: &Dump,
        p: &Premises,
        program: &datalog::Program,
        rules_path: &str,
    ) -> Result<Epg, EpgError> {
        let t0 = std::time::Instant::now();
        let mut db = datalog::Database::new();
        db.set_row_limit(Some(MAX_DERIVED_ROWS));
        let remap: Vec<u32> = (0..p.symbols.len())
            .map(|s| db.symbols.intern(&p.symbols.name(dump, s)))
            .collect();
        // Distinct names are interned in order, so the ids usually stay the same.
        let identity = remap.iter().enumerate().all(|(i, &r)| r == i as u32);
        for decl in program.decls().iter().filter(|d| d.is_input) {
            let Some(&(_, cols)) = RELATIONS.iter().find(|(n, _)| *n == decl.name) else {
                return Err(EpgError::Interface {
                    path: rules_path.to_owned(),
                    message: format!(
                        "`.input {}`: the forward pass provides no relation `{}` (it provides: {})",
                        decl.name,
                        decl.name,
                        RELATIONS.iter().map(|r| r.0).collect::<Vec<_>>().join(", ")
                    ),
                });
            };
            let want: Vec<datalog::ColumnType> = cols
                .chars()
                .map(|c| {
                    if c == 's' {
                        datalog::ColumnType::Symbol
                    } else {
                        datalog::ColumnType::Unsigned
                    }
                })
                .collect();
            let got: Vec<datalog::ColumnType> = decl.columns.iter().map(|c| c.1).collect();
            if want != got {
                return Err(EpgError::Interface {
                    path: rules_path.to_owned(),
                    message: format!(
                        "`.decl {}` must have columns ({}) to match the forward pass",
                        decl.name,
                        cols.chars()
                            .map(|c| if c == 's' { "symbol" } else { "unsigned" })
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
            let rel = p.rel(&decl.name);
            let sym_cols: Vec<bool> = cols.chars().map(|c| c == 's').collect();
            let mut rows = rel.rows.clone();
            if !identity && sym_cols.iter().any(|&b| b) {
                for row in rows.chunks_exact_mut(rel.arity) {
                    for (k, v) in row.iter_mut().enumerate() {
                        if sym_cols[k] {
                            *v = remap[*v as usize];
                        }
                    }
                }
            }
            db.insert_flat(&decl.name, rel.arity, rows);
        }
        prof("epg: inputs", t0);
        match program.decl("edge") {
            Some(d)
                if d.is_output
                    && d.columns.iter().map(|c| c.1).collect::<Vec<_>>()
                        == [datalog::ColumnType::Unsigned, datalog::ColumnType::Unsigned, datalog::ColumnType::Symbol] => {}
            _ => {
                return Err(EpgError::Interface {
                    path: rules_path.to_owned(),
                    message: "the rules must declare `.decl edge(src: unsigned, dst: unsigned, rule: symbol)` and `.output edge`"
                        .to_owned(),
                })
            }
        }
        let t = std::time::Instant::now();
        program
            .evaluate(&mut db)
            .map_err(|e| EpgError::Eval(e.to_string()))?;
        let t = prof("epg: evaluate", t);
        let (arity, rows) = db.rows("edge").unwrap_or((3, &[]));
        debug_assert_eq!(arity, 3);
        let r = Epg::from_sorted_rows(p.vertices.clone(), rows, &db.symbols);
        prof("epg: edges", t);
        r
    }

    /// The EPG of `edge` rows `(src, dst, rule symbol)` sorted lexicographically (as the
    /// engine returns them): rule symbols are resolved once per distinct symbol, and only runs
    /// of equal `(src, dst)` are re-sorted (rule ids do not follow symbol ids).
    fn from_sorted_rows(
        vertices: Vec<Vertex>,
        rows: &[u32],
        symbols: &datalog::Symbols,
    ) -> Result<Epg, EpgError> {
        let mut rule_names: Vec<String> = RuleName::ALL
            .iter()
            .map(|r| r.as_str().to_owned())
            .collect();
        // Symbol id -> rule id (u16::MAX: not seen yet), filled lazily. Consecutive rows
        // rarely share a rule (rows are sorted by endpoints), so this is a dense table.
        let mut rule_of: Vec<u16> = vec![u16::MAX; symbols.len()];
        let n = vertices.len() as u32;
        let mut edges = Vec::with_capacity(rows.len() / 3);
        for r in rows.chunks_exact(3) {
            let (src, dst, sym) = (r[0], r[1], r[2]);
            let id = match rule_of.get(sym as usize) {
                Some(&id) if id != u16::MAX => id,
                _ => {
                    let name = symbols.resolve(sym).unwrap_or("?");
                    let id = match rule_names.iter().position(|x| x == name) {
                        Some(i) => i as u16,
                        None => {
                            rule_names.push(name.to_owned());
                            (rule_names.len() - 1) as u16
                        }
                    };
                    if let Some(slot) = rule_of.get_mut(sym as usize) {
                        *slot = id;
                    }
                    id
                }
            };
            if src >= n || dst >= n {
                return Err(EpgError::Eval(format!(
                    "rule {} derived an edge {src} → {dst} whose endpoint is not a vertex id (there are {n} vertices)",
                    rule_names[id as usize]
                )));
            }
            edges.push(Edge { src, dst, rule: id });
        }
        // Rows are sorted by (src, dst, symbol): re-sort each run of equal (src, dst) by rule id.
        let mut i = 0;
        while i < edges.len() {
            let mut j = i + 1;
            while j < edges.len() && (edges[j].src, edges[j].dst) == (edges[i].src, edges[i].dst) {
                j += 1;
            }
            if j - i > 1 {
                edges[i..j].sort_unstable();
            }
            i = j;
        }
        if !edges.windows(2).all(|w| w[0] < w[1]) {
            // Not sorted by (src, dst) after all (rows from another source): sort fully.
            edges.sort_unstable();
            edges.dedup();
        }
        Ok(Epg {
            vertices,
            edges,
            rule_names,
        })
    }

    /// Human-readable name of a vertex (docs/trace-format.md, "The derived model").
    pub fn vertex_name(&self, dump: &Dump, v: u32) -> String {
        vertex_name(dump, &self.vertices[v as usize])
    }

    /// Checks that the graph is a DAG (Kahn's algorithm); on a cycle names a vertex on it.
    pub fn check_acyclic(&self, dump: &Dump) -> Result<(), EpgError> {
        let n = self.vertices.len();
        let mut indeg = vec![0u32; n];
        let mut out: Vec<Vec<u32>> = vec![Vec::new(); n];
        for e in &self.edges {
            indeg[e.dst as usize] += 1;
            out[e.src as usize].push(e.dst);
        }
        let mut stack: Vec<u32> = (0..n as u32).filter(|&v| indeg[v as usize] == 0).collect();
        let mut seen = 0;
        while let Some(v) = stack.pop() {
            seen += 1;
            for &w in &out[v as usize] {
                indeg[w as usize] -= 1;
                if indeg[w as usize] == 0 {
                    stack.push(w);
                }
            }
        }
        if seen == n {
            return Ok(());
        }
        // Walk backwards inside the remaining subgraph until a vertex repeats: that's on a cycle.
        let mut v = (0..n).find(|&v| indeg[v] > 0).unwrap() as u32;
        let mut visited = vec![false; n];
        while !visited[v as usize] {
            visited[v as usize] = true;
            v = self
                .edges
                .iter()
                .find(|e| e.dst == v && indeg[e.src as usize] > 0)
                .map(|e| e.src)
                .unwrap_or(v);
        }
        let rules: Vec<&str> = self
            .edges
            .iter()
            .filter(|e| e.dst == v && indeg[e.src as usize] > 0)
            .map(|e| self.rule_names[e.rule as usize].as_str())
            .collect();
        Err(EpgError::Cycle {
            vertex: self.vertex_name(dump, v),
            edges: rules.join(", "),
        })
    }

    /// Distinct `(src, dst)` pairs (several rules may derive the same edge).
    pub fn pairs(&self) -> Vec<(u32, u32)> {
        let mut p: Vec<(u32, u32)> = self.edges.iter().map(|e| (e.src, e.dst)).collect();
        p.sort_unstable();
        p.dedup();
        p
    }

    /// Number of edges per rule name.
    pub fn rule_counts(&self) -> Vec<(String, usize)> {
        let mut c = vec![0usize; self.rule_names.len()];
        for e in &self.edges {
            c[e.rule as usize] += 1;
        }
        self.rule_names.iter().cloned().zip(c).collect()
    }
}

pub fn vertex_name(dump: &Dump, v: &Vertex) -> String {
    let tr = |t: u32| dump.traces[t as usize].id.as_str();
    match *v {
        Vertex::Stmt(s) => format!("stmt:{}", dump.stmts[s as usize].id),
        Vertex::Def { trace, step, var } => {
            format!("{}:{}@{}", tr(trace), dump.vars.name(var), step)
        }
        Vertex::Value { trace, step } => format!("{}:#@{}", tr(trace), step),
        Vertex::Arg {
            trace,
            step,
            frame,
            var,
        } => {
            format!(
                "{}:arg:{}@{}{}",
                tr(trace),
                dump.vars.name(var),
                step,
                frame_suffix(dump, trace, step, frame)
            )
        }
        Vertex::This { trace, step, frame } => format!(
            "{}:arg:this@{}{}",
            tr(trace),
            step,
            frame_suffix(dump, trace, step, frame)
        ),
    }
}

/// `[frame]` when one call step opened several frames (callbacks), else empty.
fn frame_suffix(dump: &Dump, trace: u32, step: u32, frame: u32) -> String {
    let t = &dump.traces[trace as usize];
    if t.opened_several_frames(step) {
        format!("[{}]", t.frames[frame as usize].id)
    } else {
        String::new()
    }
}

fn prof(what: &str, t: std::time::Instant) -> std::time::Instant {
    if std::env::var_os("DATALOG_PROFILE").is_some() {
        eprintln!("{what}: {:.3} s", t.elapsed().as_secs_f64());
    }
    std::time::Instant::now()
}
