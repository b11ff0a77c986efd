//! The database of relations, evaluation driver, and `.facts` / output files.

use std::cell::Ref;
use std::collections::{HashMap, HashSet};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use datafrog::Iteration;

use crate::diag::{Diagnostic, Diagnostics};
use crate::eval::{make_var, permuted_index, sort_dedup, summary, Batch, DynVar, Exec};
use crate::program::{Const, Plan, Program, Step, View, SIGN};
use crate::{ColumnType, Symbols};

/// Relations by name, as flat row-major `u32` vectors, plus the symbol table.
///
/// Values: `symbol` = id in [`Database::symbols`], `number` = the `i32` bit pattern
/// (`x as u32`), `unsigned` = the value.
#[derive(Debug, Clone, Default)]
pub struct Database {
    pub symbols: Symbols,
    relations: HashMap<String, StoredRelation>,
    /// Most rows one rule evaluation may add to a derived relation (see [`Database::set_row_limit`]).
    row_limit: Option<usize>,
}

#[derive(Debug, Clone)]
struct StoredRelation {
    arity: usize,
    rows: Vec<u32>,
}

/// Errors found while evaluating a program against a database.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error("input relation `{0}` was never provided")]
    MissingInput(String),
    #[error("relation `{relation}` was provided with arity {found}, but is declared with {expected} columns")]
    ArityMismatch {
        relation: String,
        expected: usize,
        found: usize,
    },
    #[error("relation `{relation}`: {len} values is not a whole number of rows of arity {arity}")]
    RaggedRows {
        relation: String,
        arity: usize,
        len: usize,
    },
    #[error(
        "relation `{relation}`, column {column}: symbol id {value} is not in the symbol table"
    )]
    UnknownSymbol {
        relation: String,
        column: usize,
        value: u32,
    },
    #[error("{path}:{line}: division by zero while evaluating a rule for `{relation}`")]
    DivisionByZero {
        path: String,
        line: usize,
        relation: String,
    },
    #[error("relation `{0}` has an unsupported arity")]
    UnsupportedArity(String),
    #[error("{path}:{line}: relation `{relation}` grew past {limit} rows while this rule was evaluated; evaluation stopped (the input is too large for this rule set)")]
    TooManyRows {
        path: String,
        line: usize,
        relation: String,
        limit: usize,
    },
}

/// Statistics of one evaluation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EvalStats {
    /// Number of strata evaluated.
    pub strata: usize,
    /// Total number of semi-naive rounds over all strata.
    pub iterations: usize,
    /// Size of every derived relation, in evaluation order.
    pub derived: Vec<(String, usize)>,
}

impl Database {
    /// Stops evaluation with [`EvalError::TooManyRows`] when a derived relation would hold more
    /// than `rows` rows (`None`: no limit, the default): a rule whose join explodes on some
    /// input then fails with its file and line instead of exhausting memory.
    pub fn set_row_limit(&mut self, rows: Option<usize>) {
        self.row_limit = rows;
    }

    pub fn new() -> Self {
        Self::default()
    }

    /// Set a relation's tuples (flat, row-major, `len = arity * rows`). Unsorted rows and
    /// duplicates are allowed. Arity and well-formedness are checked by
    /// [`Program::evaluate`].
    pub fn insert_flat(&mut self, relation: &str, arity: usize, rows: Vec<u32>) {
        self.relations
            .insert(relation.to_string(), StoredRelation { arity, rows });
    }

    /// The arity and flat rows of a relation. After [`Program::evaluate`], every input and
    /// derived relation of the program is sorted (lexicographically, `number` columns in
    /// signed order) and deduplicated.
    pub fn rows(&self, relation: &str) -> Option<(usize, &[u32])> {
        self.relations
            .get(relation)
            .map(|r| (r.arity, r.rows.as_slice()))
    }

    /// Remove a relation, returning its arity and rows.
    pub fn take(&mut self, relation: &str) -> Option<(usize, Vec<u32>)> {
        self.relations.remove(relation).map(|r| (r.arity, r.rows))
    }

    /// Rows of `relation` rendered as text per column (symbols resolved, numbers in
    /// decimal), typed by the program's declaration. `None` if the relation is absent,
    /// undeclared, or has the wrong arity.
    pub fn rows_text(&self, program: &Program, relation: &str) -> Option<Vec<Vec<String>>> {
        let decl = program.decl(relation)?;
        let (arity, rows) = self.rows(relation)?;
        if arity != decl.arity() {
            return None;
        }
        Some(
            rows.chunks_exact(arity)
                .map(|row| {
                    row.iter()
                        .zip(&decl.columns)
                        .map(|(&v, (_, t))| match t {
                            ColumnType::Symbol => self
                                .symbols
                                .resolve(v)
                                .map(str::to_string)
                                .unwrap_or_else(|| format!("<unknown symbol {v}>")),
                            ColumnType::Number => (v as i32).to_string(),
                            ColumnType::Unsigned => v.to_string(),
                        })
                        .collect()
                })
                .collect(),
        )
    }

    /// Names of all relations present.
    pub fn relation_names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.relations.keys().map(|s| s.as_str()).collect();
        v.sort_unstable();
        v
    }

    /// Read every `.input` relation of `program` from `dir/<name>.facts` (or the `filename=`
    /// given in the program): one tuple per line, columns separated by TAB, empty lines
    /// ignored.
    pub fn load_facts_dir(&mut self, program: &Program, dir: &Path) -> Result<(), Diagnostics> {
        let mut diags = Vec::new();
        for decl in program.decls().iter().filter(|d| d.is_input) {
            let file = program
                .input_file_name(&decl.name)
                .unwrap_or_else(|| format!("{}.facts", decl.name));
            let path = dir.join(file);
            let shown = path.display().to_string();
            let bytes = match std::fs::read(&path) {
                Ok(b) => b,
                Err(e) => {
                    diags.push(Diagnostic::at_line(
                        &shown,
                        0,
                        format!("cannot read facts for `{}`: {e}", decl.name),
                    ));
                    continue;
                }
            };
            let types: Vec<ColumnType> = decl.columns.iter().map(|c| c.1).collect();
            match parse_facts(&bytes, &types, &shown, &mut self.symbols) {
                Ok(rows) => self.insert_flat(&decl.name, types.len(), rows),
                Err(mut d) => diags.append(&mut d),
            }
        }
        if diags.is_empty() {
            Ok(())
        } else {
            Err(Diagnostics(diags))
        }
    }

    /// Write every `.output` relation of `program` to `dir/<name>.csv` (tab-separated, one
    /// tuple per line; symbols as text, numbers in decimal). A relation absent from the
    /// database is written as an empty file.
    pub fn write_output_dir(&self, program: &Program, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        for decl in program.decls().iter().filter(|d| d.is_output) {
            let file = program
                .output_file_name(&decl.name)
                .unwrap_or_else(|| format!("{}.csv", decl.name));
            let mut w = BufWriter::new(std::fs::File::create(dir.join(file))?);
            if let Some((arity, rows)) = self.rows(&decl.name) {
                if arity != decl.arity() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!(
                            "relation `{}` has arity {arity}, declared {}",
                            decl.name,
                            decl.arity()
                        ),
                    ));
                }
                for row in rows.chunks_exact(arity.max(1)) {
                    for (i, (&v, (_, t))) in row.iter().zip(&decl.columns).enumerate() {
                        if i > 0 {
                            w.write_all(b"\t")?;
                        }
                        match t {
                            ColumnType::Symbol => {
                                let s = self.symbols.resolve(v).ok_or_else(|| {
                                    std::io::Error::new(
                                        std::io::ErrorKind::InvalidData,
                                        format!(
                                            "relation `{}`: symbol id {v} is not in the symbol table",
                                            decl.name
                                        ),
                                    )
                                })?;
                                w.write_all(s.as_bytes())?;
                            }
                            ColumnType::Number => write!(w, "{}", v as i32)?,
                            ColumnType::Unsigned => write!(w, "{v}")?,
                        }
                    }
                    w.write_all(b"\n")?;
                }
            }
            w.flush()?;
        }
        Ok(())
    }
}

/// At most this many diagnostics are reported per facts file.
const MAX_FACT_ERRORS: usize = 50;

/// Parse TAB-separated facts. Errors are `path:LINE: message`.
pub fn parse_facts(
    bytes: &[u8],
    types: &[ColumnType],
    path: &str,
    symbols: &mut Symbols,
) -> Result<Vec<u32>, Vec<Diagnostic>> {
    let mut rows = Vec::new();
    let mut diags = Vec::new();
    let mut extra = 0usize;
    for (lineno, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let mut push = |d: Diagnostic| {
            if diags.len() < MAX_FACT_ERRORS {
                diags.push(d);
            } else {
                extra += 1;
            }
        };
        let n = line.split(|&b| b == b'\t').count();
        if n != types.len() {
            push(Diagnostic::at_line(
                path,
                lineno + 1,
                format!("expected {} columns, found {n}", types.len()),
            ));
            continue;
        }
        let start = rows.len();
        let mut ok = true;
        for (c, (field, t)) in line.split(|&b| b == b'\t').zip(types).enumerate() {
            let text = match std::str::from_utf8(field) {
                Ok(s) => s,
                Err(_) => {
                    push(Diagnostic::at_line(
                        path,
                        lineno + 1,
                        format!("column {} is not valid UTF-8", c + 1),
                    ));
                    ok = false;
                    break;
                }
            };
            let v = match t {
                ColumnType::Symbol => Some(symbols.intern(text)),
                ColumnType::Number => text.trim().parse::<i32>().ok().map(|v| v as u32),
                ColumnType::Unsigned => text.trim().parse::<u32>().ok(),
            };
            match v {
                Some(v) => rows.push(v),
                None => {
                    let what = if *t == ColumnType::Number {
                        "a number"
                    } else {
                        "an unsigned number"
                    };
                    push(Diagnostic::at_line(
                        path,
                        lineno + 1,
                        format!("column {} ({text:?}) is not {what}", c + 1),
                    ));
                    ok = false;
                    break;
                }
            }
        }
        if !ok {
            rows.truncate(start);
        }
    }
    if extra > 0 {
        diags.push(Diagnostic::at_line(
            path,
            0,
            format!("... and {extra} more errors"),
        ));
    }
    if diags.is_empty() {
        Ok(rows)
    } else {
        Err(diags)
    }
}

fn encode_columns(rows: &mut [u32], types: &[ColumnType]) {
    let n = types.len();
    let num_cols: Vec<usize> = (0..n).filter(|&c| types[c] == ColumnType::Number).collect();
    if num_cols.is_empty() || n == 0 {
        return;
    }
    for row in rows.chunks_exact_mut(n) {
        for &c in &num_cols {
            row[c] ^= SIGN;
        }
    }
}

impl Program {
    /// Evaluate the program over `db`: input relations are read from `db` (by name), every
    /// derived relation is written back to `db`, sorted and deduplicated.
    pub fn evaluate(&self, db: &mut Database) -> Result<EvalStats, EvalError> {
        let t_eval = Clock::now();
        let decls = &self.decls;
        let derived: HashSet<usize> = self.strata.iter().flat_map(|s| s.rels.clone()).collect();
        // Validate the provided relations.
        for d in decls {
            match db.relations.get(&d.name) {
                None => {
                    if d.is_input {
                        return Err(EvalError::MissingInput(d.name.clone()));
                    }
                }
                Some(rel) => {
                    if rel.arity != d.arity() {
                        return Err(EvalError::ArityMismatch {
                            relation: d.name.clone(),
                            expected: d.arity(),
                            found: rel.arity,
                        });
                    }
                    if rel.rows.len() % rel.arity != 0 {
                        return Err(EvalError::RaggedRows {
                            relation: d.name.clone(),
                            arity: rel.arity,
                            len: rel.rows.len(),
                        });
                    }
                    let nsym = db.symbols.len() as u64;
                    for (c, (_, t)) in d.columns.iter().enumerate() {
                        if *t == ColumnType::Symbol {
                            if let Some(&v) = rel
                                .rows
                                .iter()
                                .skip(c)
                                .step_by(rel.arity)
                                .find(|&&v| v as u64 >= nsym)
                            {
                                return Err(EvalError::UnknownSymbol {
                                    relation: d.name.clone(),
                                    column: c + 1,
                                    value: v,
                                });
                            }
                        }
                    }
                }
            }
        }
        let consts: Vec<u32> = self
            .consts
            .iter()
            .map(|c| match c {
                Const::Sym(s) => db.symbols.intern(s),
                Const::Val(v) => *v,
            })
            .collect();

        // Take the data out of the database (internal encoding, sorted).
        let mut data: Vec<Vec<u32>> = Vec::with_capacity(decls.len());
        let mut present: Vec<bool> = Vec::with_capacity(decls.len());
        for (r, d) in decls.iter().enumerate() {
            let types: Vec<ColumnType> = d.columns.iter().map(|c| c.1).collect();
            match db.relations.remove(&d.name) {
                Some(rel) => {
                    let mut rows = rel.rows;
                    encode_columns(&mut rows, &types);
                    let t = Clock::now();
                    sort_dedup(d.arity(), &mut rows);
                    prof_since(&format!("input `{}` sorted", d.name), t);
                    data.push(rows);
                    present.push(true);
                }
                None => {
                    data.push(Vec::new());
                    present.push(derived.contains(&r));
                }
            }
        }

        prof_since("evaluate: validate, encode, sort inputs", t_eval);
        let limit = db.row_limit.unwrap_or(usize::MAX);
        let result = self.run_strata(&mut data, &consts, limit);

        let t = Clock::now();
        // Put everything back (also on error, so inputs are not lost).
        for (r, d) in decls.iter().enumerate() {
            if present[r] || derived.contains(&r) {
                let mut rows = std::mem::take(&mut data[r]);
                let types: Vec<ColumnType> = d.columns.iter().map(|c| c.1).collect();
                encode_columns(&mut rows, &types);
                db.insert_flat(&d.name, d.arity(), rows);
            }
        }
        prof_since("evaluate: write back", t);
        result
    }

    fn run_strata(
        &self,
        data: &mut [Vec<u32>],
        consts: &[u32],
        limit: usize,
    ) -> Result<EvalStats, EvalError> {
        let mut stats = EvalStats::default();
        // Last stratum that reads each index of a complete relation (to free it early).
        let mut last_use: HashMap<usize, usize> = HashMap::new();
        for (si, st) in self.strata.iter().enumerate() {
            for p in st.base.iter().chain(&st.delta) {
                for &(ix, _) in &p.sources {
                    last_use.insert(ix, si);
                }
                for s in &p.steps {
                    if let Step::Neg { index, .. } = s {
                        last_use.insert(*index, si);
                    }
                }
            }
        }
        let mut cache: HashMap<usize, Vec<u32>> = HashMap::new();
        let mut summaries: HashMap<usize, Vec<u32>> = HashMap::new();

        for (si, st) in self.strata.iter().enumerate() {
            let t0 = Clock::now();
            // Build the permuted indexes of complete relations this stratum reads.
            for p in st.base.iter().chain(&st.delta) {
                let mut needed: Vec<usize> = p
                    .sources
                    .iter()
                    .filter(|(_, v)| *v == View::Full)
                    .map(|&(ix, _)| ix)
                    .collect();
                for s in &p.steps {
                    if let Step::Neg { index, .. } = s {
                        needed.push(*index);
                    }
                }
                for ix in needed {
                    let def = &self.indexes[ix];
                    let arity = self.decls[def.rel].arity();
                    if !def.is_identity() && !cache.contains_key(&ix) {
                        let t = Clock::now();
                        cache.insert(ix, permuted_index(arity, &data[def.rel], &def.perm));
                        prof_since(
                            &format!("index of `{}` {:?}", self.decls[def.rel].name, def.perm),
                            t,
                        );
                    }
                    if let std::collections::hash_map::Entry::Vacant(e) = summaries.entry(ix) {
                        let rows = if def.is_identity() {
                            &data[def.rel]
                        } else {
                            &cache[&ix]
                        };
                        e.insert(summary(rows, arity));
                    }
                }
            }

            prof_since("stratum: permuted indexes", t0);
            if st.delta.is_empty() {
                // Not recursive: evaluate every rule once into one buffer per relation, then
                // sort and deduplicate once (no semi-naive bookkeeping, no batch merges).
                let t_nr = Clock::now();
                // The stratum's rules do not read its relations: move their input tuples out.
                let mut seeds: Vec<Vec<u32>> = st
                    .rels
                    .iter()
                    .map(|&r| std::mem::take(&mut data[r]))
                    .collect();
                let complete = |ix: usize| -> Batch {
                    let def = &self.indexes[ix];
                    let rows = if def.is_identity() {
                        &data[def.rel]
                    } else {
                        cache.get(&ix).map(|v| v.as_slice()).unwrap_or(&[])
                    };
                    let summary = summaries.get(&ix).map(|v| v.as_slice()).unwrap_or(&[]);
                    Batch::new(rows, summary, self.decls[def.rel].arity())
                };
                let mut outs: Vec<(usize, Vec<u32>)> = Vec::with_capacity(st.rels.len());
                for (k, &r) in st.rels.iter().enumerate() {
                    let d = &self.decls[r];
                    if d.arity() == 0 || d.arity() > crate::MAX_ARITY {
                        return Err(EvalError::UnsupportedArity(d.name.clone()));
                    }
                    let mut out = std::mem::take(&mut seeds[k]);
                    for p in st.base.iter().filter(|p| p.head_rel == r) {
                        if let Some(d) = build_data(p, &[], &complete) {
                            out = self.exec(p, d, consts, out, limit)?;
                        }
                    }
                    outs.push((r, out));
                }
                let t_sort = Clock::now();
                let mut any = false;
                for (r, mut rows) in outs {
                    sort_dedup(self.decls[r].arity(), &mut rows);
                    any |= !rows.is_empty();
                    data[r] = rows;
                }
                // One round, as semi-naive evaluation would count it.
                stats.iterations += usize::from(any);
                prof_since("stratum (not recursive): sort", t_sort);
                if profiling() {
                    let sizes: Vec<String> = st
                        .rels
                        .iter()
                        .map(|&r| {
                            let d = &self.decls[r];
                            format!("`{}` {} rows", d.name, data[r].len() / d.arity())
                        })
                        .collect();
                    prof_since(
                        &format!("stratum (not recursive) {}", sizes.join(", ")),
                        t_nr,
                    );
                }
                for &r in &st.rels {
                    stats.derived.push((
                        self.decls[r].name.clone(),
                        data[r].len() / self.decls[r].arity(),
                    ));
                }
                stats.strata += 1;
                cache.retain(|ix, _| last_use.get(ix).is_some_and(|&l| l > si));
                summaries.retain(|ix, _| last_use.get(ix).is_some_and(|&l| l > si));
                continue;
            }
            let t0 = Clock::now();
            let mut iteration = Iteration::new();
            let mut vars: HashMap<usize, Box<dyn DynVar>> = HashMap::new();
            for &r in &st.rels {
                let d = &self.decls[r];
                let v = make_var(&mut iteration, d.arity(), &d.name)
                    .ok_or_else(|| EvalError::UnsupportedArity(d.name.clone()))?;
                v.insert_flat(&data[r]);
                vars.insert(r, v);
            }
            // Index variables of recursive relations with a non-identity column order.
            let mut idx_vars: HashMap<usize, Box<dyn DynVar>> = HashMap::new();
            for p in &st.delta {
                for &(ix, view) in &p.sources {
                    let def = &self.indexes[ix];
                    if view != View::Full && !def.is_identity() && !idx_vars.contains_key(&ix) {
                        let d = &self.decls[def.rel];
                        let v = make_var(&mut iteration, d.arity(), &d.name)
                            .ok_or_else(|| EvalError::UnsupportedArity(d.name.clone()))?;
                        v.insert_permuted(&data[def.rel], &def.perm);
                        idx_vars.insert(ix, v);
                    }
                }
            }

            prof_since("stratum: variables", t0);
            let t_it = Clock::now();
            {
                let data_ref: &[Vec<u32>] = data;
                let cache_ref = &cache;
                let sums_ref = &summaries;
                let complete = |ix: usize| -> Batch {
                    let def = &self.indexes[ix];
                    let rows = if def.is_identity() {
                        &data_ref[def.rel]
                    } else {
                        cache_ref.get(&ix).map(|v| v.as_slice()).unwrap_or(&[])
                    };
                    let summary = sums_ref.get(&ix).map(|v| v.as_slice()).unwrap_or(&[]);
                    Batch::new(rows, summary, self.decls[def.rel].arity())
                };
                for p in &st.base {
                    let out = {
                        let guards = collect_guards(self, p, &vars, &idx_vars);
                        match build_data(p, &guards, &complete) {
                            Some(d) => Some(self.exec(p, d, consts, Vec::new(), limit)?),
                            None => None,
                        }
                    };
                    if let Some(out) = out {
                        let t = Clock::now();
                        self.add_rows(p.head_rel, out, &vars, &idx_vars);
                        prof_since("stratum: add rows", t);
                    }
                }
                while iteration.changed() {
                    stats.iterations += 1;
                    for p in &st.delta {
                        let out = {
                            let guards = collect_guards(self, p, &vars, &idx_vars);
                            match build_data(p, &guards, &complete) {
                                Some(d) => Some(self.exec(p, d, consts, Vec::new(), limit)?),
                                None => None,
                            }
                        };
                        if let Some(out) = out {
                            self.add_rows(p.head_rel, out, &vars, &idx_vars);
                        }
                    }
                }
            }
            prof_since("stratum: rules + iterate", t_it);
            let t0 = Clock::now();
            drop(idx_vars);
            for (r, v) in vars.drain() {
                data[r] = v.complete_flat();
            }
            for &r in &st.rels {
                stats.derived.push((
                    self.decls[r].name.clone(),
                    data[r].len() / self.decls[r].arity(),
                ));
            }
            prof_since("stratum: complete", t0);
            stats.strata += 1;
            cache.retain(|ix, _| last_use.get(ix).is_some_and(|&l| l > si));
            summaries.retain(|ix, _| last_use.get(ix).is_some_and(|&l| l > si));
        }
        Ok(stats)
    }
}

type Vars = HashMap<usize, Box<dyn DynVar>>;

/// RefCell borrows of the recursive views read by the scans of `p`, in step order.
fn collect_guards<'v>(
    prog: &Program,
    p: &Plan,
    vars: &'v Vars,
    idx_vars: &'v Vars,
) -> Vec<Vec<Ref<'v, [u32]>>> {
    let mut out = Vec::new();
    for s in &p.steps {
        let Step::Scan(sc) = s else { continue };
        let (ix, view) = p.sources[sc.source];
        if view == View::Full {
            continue;
        }
        let def = &prog.indexes[ix];
        let var = if def.is_identity() {
            vars.get(&def.rel)
        } else {
            idx_vars.get(&ix)
        };
        let Some(var) = var else {
            out.push(Vec::new());
            continue;
        };
        out.push(match view {
            View::Recent => vec![var.recent()],
            View::Stable => var.stable(),
            View::Total | View::Full => {
                let mut v = var.stable();
                v.push(var.recent());
                v
            }
        });
    }
    out
}

/// The batches each step of `p` reads; `None` if some scan reads nothing (no results).
fn build_data<'g, 'c: 'g>(
    p: &Plan,
    guards: &'g [Vec<Ref<'_, [u32]>>],
    complete: &impl Fn(usize) -> Batch<'c>,
) -> Option<Vec<Vec<Batch<'g>>>> {
    let mut k = 0;
    let mut data = Vec::with_capacity(p.steps.len());
    for s in &p.steps {
        match s {
            Step::Scan(sc) => {
                let (ix, view) = p.sources[sc.source];
                let v: Vec<Batch> = if view == View::Full {
                    vec![complete(ix)]
                } else {
                    let g = guards.get(k)?;
                    k += 1;
                    g.iter().map(|r| Batch::new(r, &[], sc.arity)).collect()
                };
                let v: Vec<Batch> = v.into_iter().filter(|b| !b.rows.is_empty()).collect();
                if v.is_empty() {
                    return None;
                }
                data.push(v);
            }
            Step::Neg { index, .. } => data.push(vec![complete(*index)]),
            _ => data.push(Vec::new()),
        }
    }
    Some(data)
}

impl Program {
    /// Add derived rows of `rel` to its variable and, permuted, to each of its index
    /// variables, so that all of them advance in lockstep (identical recent/stable sets).
    fn add_rows(&self, rel: usize, out: Vec<u32>, vars: &Vars, idx_vars: &Vars) {
        for (&ix, v) in idx_vars {
            let def = &self.indexes[ix];
            if def.rel == rel {
                v.insert_permuted(&out, &def.perm);
            }
        }
        if let Some(v) = vars.get(&rel) {
            v.insert_flat(&out);
        }
    }

    fn exec(
        &self,
        p: &Plan,
        data: Vec<Vec<Batch>>,
        consts: &[u32],
        out: Vec<u32>,
        limit: usize,
    ) -> Result<Vec<u32>, EvalError> {
        let ex = Exec::new(p, data);
        let t = Clock::now();
        let before = out.len();
        let st = ex.run(consts, out, limit.saturating_mul(p.head.len().max(1)));
        if profiling() {
            eprintln!(
                "datalog: {}:{}: rule for `{}` took {}, {} rows",
                self.path,
                p.line,
                self.decls[p.head_rel].name,
                t.elapsed(),
                (st.out.len() - before) / p.head.len().max(1)
            );
        }
        if st.overflow {
            return Err(EvalError::TooManyRows {
                path: self.path.clone(),
                line: p.line,
                relation: self.decls[p.head_rel].name.clone(),
                limit,
            });
        }
        if st.div_by_zero {
            return Err(EvalError::DivisionByZero {
                path: self.path.clone(),
                line: p.line,
                relation: self.decls[p.head_rel].name.clone(),
            });
        }
        Ok(st.out)
    }
}

fn prof_since(what: &str, t: Clock) {
    if profiling() {
        eprintln!("datalog: {what}: {}", t.elapsed());
    }
}

/// Wall clock and, when profiling, the CPU time of the calling thread (Linux
/// `/proc/thread-self/schedstat`), for `DATALOG_PROFILE` reports.
#[derive(Clone, Copy)]
struct Clock {
    wall: Instant,
    cpu_ns: Option<u64>,
}

fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

impl Clock {
    fn now() -> Clock {
        Clock {
            wall: Instant::now(),
            cpu_ns: if profiling() { thread_cpu_ns() } else { None },
        }
    }

    /// "W s (cpu C s)".
    fn elapsed(&self) -> String {
        let w = self.wall.elapsed().as_secs_f64();
        match (self.cpu_ns, thread_cpu_ns()) {
            (Some(a), Some(b)) if profiling() => {
                format!("{w:.3} s (cpu {:.3} s)", b.saturating_sub(a) as f64 / 1e9)
            }
            _ => format!("{w:.3} s"),
        }
    }
}

/// Whether `DATALOG_PROFILE` is set: then the time of every rule evaluation is printed to
/// stderr.
fn profiling() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("DATALOG_PROFILE").is_some())
}
