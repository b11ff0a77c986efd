//! Semantic checks (declarations, arity, types, safety, stratification) and compilation of
//! rules into join plans.

use std::collections::{HashMap, HashSet};

use crate::ast::*;
use crate::diag::{Diagnostic, Diagnostics, SourceMap};
use crate::parser;
use crate::{ColumnType, RelationDecl, MAX_ARITY};

/// Bit flipped to store `number` values so that unsigned order equals signed order.
pub(crate) const SIGN: u32 = 0x8000_0000;

/// A constant of the program, resolved to a value at evaluation time.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Const {
    Sym(String),
    /// Already in internal encoding.
    Val(u32),
}

/// A compiled expression over slots of the binding environment.
#[derive(Debug, Clone)]
pub(crate) enum CExpr {
    Slot(usize),
    Bin(BinOp, ColumnType, Box<CExpr>, Box<CExpr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum View {
    /// A complete relation (earlier stratum / input).
    Full,
    /// Tuples of a recursive relation known before the last iteration.
    Stable,
    /// Tuples of a recursive relation new in the last iteration.
    Recent,
    /// Stable + recent.
    Total,
}

#[derive(Debug, Clone)]
pub(crate) enum Act {
    Bind(usize),
    Check(usize),
}

#[derive(Debug, Clone)]
pub(crate) struct RangeSpec {
    /// (bound, strict): column > bound (strict) or >= bound.
    pub lower: Vec<(CExpr, bool)>,
    /// (bound, strict): column < bound (strict) or <= bound.
    pub upper: Vec<(CExpr, bool)>,
}

#[derive(Debug, Clone)]
pub(crate) struct Scan {
    /// Index into `Plan::sources`.
    pub source: usize,
    pub arity: usize,
    /// Slots giving the values of the leading (sorted) key columns of the index.
    pub key: Vec<usize>,
    /// Range restriction on the column right after the key.
    pub range: Option<RangeSpec>,
    /// Per remaining column (position in the index order): bind or check.
    pub actions: Vec<(usize, Act)>,
    /// Look the key up in a hash table of the index's key prefixes rather than by galloping
    /// from the previous position: set for lookups whose keys come in no particular order
    /// (every scan of a complete relation with a variable in its key, except the one the
    /// first scan is sorted for).
    pub hashed: bool,
}

#[derive(Debug, Clone)]
pub(crate) enum Step {
    Scan(Scan),
    /// Fails if the index has a row whose leading columns equal the key.
    Neg {
        index: usize,
        arity: usize,
        key: Vec<usize>,
    },
    Filter(CExpr, CmpOp, CExpr),
    Assign(usize, CExpr),
}

#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub head_rel: usize,
    pub head: Vec<CExpr>,
    pub steps: Vec<Step>,
    pub n_slots: usize,
    /// (slot, constant id)
    pub consts: Vec<(usize, usize)>,
    /// (index id, view) per scan step.
    pub sources: Vec<(usize, View)>,
    pub line: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct IndexDef {
    pub rel: usize,
    pub perm: Vec<usize>,
}

impl IndexDef {
    pub fn is_identity(&self) -> bool {
        self.perm.iter().enumerate().all(|(i, &p)| i == p)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Stratum {
    pub rels: Vec<usize>,
    /// Rules without atoms of this stratum: evaluated once.
    pub base: Vec<Plan>,
    /// One plan per (recursive rule, recursive atom position).
    pub delta: Vec<Plan>,
}

/// A parsed and checked Datalog program.
#[derive(Debug, Clone)]
pub struct Program {
    pub(crate) path: String,
    pub(crate) decls: Vec<RelationDecl>,
    pub(crate) by_name: HashMap<String, usize>,
    pub(crate) input_files: Vec<Option<String>>,
    pub(crate) output_files: Vec<Option<String>>,
    pub(crate) consts: Vec<Const>,
    pub(crate) indexes: Vec<IndexDef>,
    pub(crate) strata: Vec<Stratum>,
}

fn type_name(t: ColumnType) -> &'static str {
    match t {
        ColumnType::Symbol => "symbol",
        ColumnType::Number => "number",
        ColumnType::Unsigned => "unsigned",
    }
}

fn article(t: ColumnType) -> &'static str {
    match t {
        ColumnType::Symbol => "a symbol",
        ColumnType::Number => "a number",
        ColumnType::Unsigned => "an unsigned",
    }
}

/// Type of an expression: `None` = integer literal(s) only (fits number or unsigned).
type ETy = Option<ColumnType>;

struct Checker<'a> {
    sm: SourceMap<'a>,
    diags: Vec<Diagnostic>,
}

impl<'a> Checker<'a> {
    fn err(&mut self, span: Span, msg: impl Into<String>) {
        let d = self.sm.diag(span.start, span.end, msg);
        self.diags.push(d);
    }
}

/// Per-rule information produced by the checks.
struct RuleInfo {
    var_types: HashMap<String, ColumnType>,
}

impl Program {
    /// Parse `source` (named `path` in diagnostics) and run all checks.
    pub fn parse(source: &str, path: &str) -> Result<Program, Diagnostics> {
        let (ast, perrs) = parser::parse(source);
        let mut ck = Checker {
            sm: SourceMap::new(path, source),
            diags: Vec::new(),
        };
        for e in perrs {
            ck.err(e.span, e.message);
        }

        // Declarations.
        let mut decls: Vec<RelationDecl> = Vec::new();
        let mut by_name: HashMap<String, usize> = HashMap::new();
        let mut decl_spans: Vec<Span> = Vec::new();
        for d in &ast.decls {
            if let Some(&prev) = by_name.get(&d.name) {
                let (l, c) = {
                    let p = ck.sm.diag(decl_spans[prev].start, decl_spans[prev].end, "");
                    (p.line, p.col)
                };
                ck.err(
                    d.name_span,
                    format!(
                        "duplicate declaration of relation `{}` (first declared at {l}:{c})",
                        d.name
                    ),
                );
                continue;
            }
            let mut cols = Vec::new();
            let mut seen_cols = HashSet::new();
            for (cname, ty, tspan) in &d.columns {
                let t = match ty.as_str() {
                    "symbol" => ColumnType::Symbol,
                    "number" => ColumnType::Number,
                    "unsigned" => ColumnType::Unsigned,
                    _ => {
                        ck.err(
                            *tspan,
                            format!(
                                "unknown type `{ty}` (expected `symbol`, `number` or `unsigned`)"
                            ),
                        );
                        ColumnType::Number
                    }
                };
                if !seen_cols.insert(cname.clone()) {
                    ck.err(*tspan, format!("duplicate column name `{cname}`"));
                }
                cols.push((cname.clone(), t));
            }
            if cols.is_empty() || cols.len() > MAX_ARITY {
                ck.err(
                    d.name_span,
                    format!(
                        "relation `{}` has {} columns; between 1 and {MAX_ARITY} are supported",
                        d.name,
                        cols.len()
                    ),
                );
            }
            // Even a faulty declaration is registered to avoid cascading
            // "undeclared relation" errors (the program is rejected anyway).
            by_name.insert(d.name.clone(), decls.len());
            decl_spans.push(d.name_span);
            decls.push(RelationDecl {
                name: d.name.clone(),
                columns: cols,
                is_input: false,
                is_output: false,
            });
        }
        let mut input_files: Vec<Option<String>> = vec![None; decls.len()];
        let mut output_files: Vec<Option<String>> = vec![None; decls.len()];
        for io in &ast.ios {
            match by_name.get(&io.name) {
                None => ck.err(
                    io.span,
                    format!(
                        "`.{}` of undeclared relation `{}`",
                        if io.is_input { "input" } else { "output" },
                        io.name
                    ),
                ),
                Some(&r) => {
                    if io.is_input {
                        decls[r].is_input = true;
                        if io.filename.is_some() {
                            input_files[r] = io.filename.clone();
                        }
                    } else {
                        decls[r].is_output = true;
                        if io.filename.is_some() {
                            output_files[r] = io.filename.clone();
                        }
                    }
                }
            }
        }

        // Per-rule checks.
        let mut good_rules: Vec<(&Rule, RuleInfo)> = Vec::new();
        for rule in &ast.rules {
            if let Some(info) = check_rule(&mut ck, rule, &decls, &by_name) {
                good_rules.push((rule, info));
            }
        }

        // Stratification.
        let n = decls.len();
        let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (rule, _) in &good_rules {
            let h = by_name[&rule.head.rel];
            for lit in &rule.body {
                if let Literal::Pos(a) | Literal::Neg(a) = lit {
                    edges[h].push(by_name[&a.rel]);
                }
            }
        }
        let sccs = tarjan(&edges);
        let mut scc_of = vec![0usize; n];
        for (i, c) in sccs.iter().enumerate() {
            for &r in c {
                scc_of[r] = i;
            }
        }
        for (rule, _) in &good_rules {
            let h = by_name[&rule.head.rel];
            for lit in &rule.body {
                if let Literal::Neg(a) = lit {
                    let b = by_name[&a.rel];
                    if scc_of[b] == scc_of[h] {
                        let mut names: Vec<&str> = sccs[scc_of[h]]
                            .iter()
                            .map(|&r| decls[r].name.as_str())
                            .collect();
                        names.sort_unstable();
                        ck.err(
                            a.span,
                            format!(
                                "negation of `{}` inside a recursive cycle ({}): the program is not stratifiable",
                                a.rel,
                                names.join(", ")
                            ),
                        );
                    }
                }
            }
        }

        if !ck.diags.is_empty() {
            let mut d = ck.diags;
            d.sort_by_key(|d| (d.line, d.col));
            return Err(Diagnostics(d));
        }

        // Compile.
        let mut comp = Compiler {
            consts: Vec::new(),
            const_ids: HashMap::new(),
            indexes: Vec::new(),
            index_ids: HashMap::new(),
            decls: &decls,
            by_name: &by_name,
            sm: &ck.sm,
        };
        let mut strata = Vec::new();
        for scc in &sccs {
            let in_scc: HashSet<usize> = scc.iter().copied().collect();
            let rules: Vec<&(&Rule, RuleInfo)> = good_rules
                .iter()
                .filter(|(r, _)| in_scc.contains(&by_name[&r.head.rel]))
                .collect();
            if rules.is_empty() {
                continue;
            }
            let mut st = Stratum {
                rels: {
                    let mut v = scc.clone();
                    v.sort_unstable();
                    v
                },
                base: Vec::new(),
                delta: Vec::new(),
            };
            for (rule, info) in rules {
                let pos: Vec<&Atom> = rule
                    .body
                    .iter()
                    .filter_map(|l| match l {
                        Literal::Pos(a) => Some(a),
                        _ => None,
                    })
                    .collect();
                let rec_positions: Vec<usize> = pos
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| in_scc.contains(&by_name[&a.rel]))
                    .map(|(i, _)| i)
                    .collect();
                if rec_positions.is_empty() {
                    st.base.push(comp.plan(rule, info, &in_scc, None));
                } else {
                    for &d in &rec_positions {
                        st.delta.push(comp.plan(rule, info, &in_scc, Some(d)));
                    }
                }
            }
            strata.push(st);
        }
        let consts = comp.consts;
        let indexes = comp.indexes;
        Ok(Program {
            path: path.to_string(),
            decls,
            by_name,
            input_files,
            output_files,
            consts,
            indexes,
            strata,
        })
    }

    /// All declared relations, in declaration order.
    pub fn decls(&self) -> &[RelationDecl] {
        &self.decls
    }

    /// The declaration of relation `name`.
    pub fn decl(&self, name: &str) -> Option<&RelationDecl> {
        self.by_name.get(name).map(|&i| &self.decls[i])
    }

    /// The path the program was parsed from (as given to [`Program::parse`]).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Names of relations derived by rules (or facts) of the program.
    pub fn derived_relations(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .strata
            .iter()
            .flat_map(|s| s.rels.iter().map(|&r| self.decls[r].name.as_str()))
            .collect();
        v.sort_unstable();
        v
    }

    /// The file name (relative to a facts directory) read for input relation `name`.
    pub fn input_file_name(&self, name: &str) -> Option<String> {
        let &r = self.by_name.get(name)?;
        Some(
            self.input_files[r]
                .clone()
                .unwrap_or_else(|| format!("{name}.facts")),
        )
    }

    /// The file name (relative to an output directory) written for output relation `name`
    /// (`<name>.csv`, tab-separated, as Soufflé does, unless `filename=` was given).
    pub fn output_file_name(&self, name: &str) -> Option<String> {
        let &r = self.by_name.get(name)?;
        Some(
            self.output_files[r]
                .clone()
                .unwrap_or_else(|| format!("{name}.csv")),
        )
    }

    /// Number of strata (groups of mutually recursive derived relations), in evaluation order.
    pub fn strata_count(&self) -> usize {
        self.strata.len()
    }
}

/// Iterative Tarjan SCC; returns SCCs in dependency order (dependencies first).
fn tarjan(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = edges.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut out = Vec::new();
    let mut next = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut call: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&(v, ei)) = call.last() {
            if ei < edges[v].len() {
                let w = edges[v][ei];
                let top = call.len() - 1;
                call[top].1 += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                call.pop();
                if let Some(&(u, _)) = call.last() {
                    low[u] = low[u].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut comp = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        comp.push(w);
                        if w == v {
                            break;
                        }
                    }
                    out.push(comp);
                }
            }
        }
    }
    out
}

fn check_rule(
    ck: &mut Checker,
    rule: &Rule,
    decls: &[RelationDecl],
    by_name: &HashMap<String, usize>,
) -> Option<RuleInfo> {
    let mut ok = true;
    // Relations and arities.
    // Body atoms first: they define the variables' types; the head is checked against them.
    let mut atoms: Vec<(&Atom, bool)> = Vec::new();
    for lit in &rule.body {
        if let Literal::Pos(a) | Literal::Neg(a) = lit {
            atoms.push((a, false));
        }
    }
    atoms.push((&rule.head, true));
    for (a, _) in &atoms {
        match by_name.get(&a.rel) {
            None => {
                ck.err(a.rel_span, format!("relation `{}` is not declared", a.rel));
                ok = false;
            }
            Some(&r) => {
                let ar = decls[r].columns.len();
                if ar != a.args.len() {
                    ck.err(
                        a.span,
                        format!(
                            "arity mismatch: `{}` has {ar} column{}, but {} argument{} given",
                            a.rel,
                            if ar == 1 { "" } else { "s" },
                            a.args.len(),
                            if a.args.len() == 1 { " is" } else { "s are" }
                        ),
                    );
                    ok = false;
                }
            }
        }
    }
    // Wildcards and expressions where they are not allowed.
    for e in &rule.head.args {
        let mut w = Vec::new();
        e.wildcards(&mut w);
        for s in w {
            ck.err(s, "wildcard `_` is not allowed in the head");
            ok = false;
        }
    }
    for lit in &rule.body {
        match lit {
            Literal::Pos(a) | Literal::Neg(a) => {
                for e in &a.args {
                    if let Expr::Bin(..) = e {
                        ck.err(
                            e.span(),
                            "arithmetic is not allowed as an argument of a body atom; bind it with `X = expr` first",
                        );
                        ok = false;
                    }
                }
            }
            Literal::Cmp(l, _, r, _) => {
                let mut w = Vec::new();
                l.wildcards(&mut w);
                r.wildcards(&mut w);
                for s in w {
                    ck.err(s, "wildcard `_` is not allowed in a comparison");
                    ok = false;
                }
            }
        }
    }
    if !ok {
        return None;
    }

    // Types.
    let mut var_types: HashMap<String, (ColumnType, Span)> = HashMap::new();
    let col_type = |a: &Atom, i: usize| decls[by_name[&a.rel]].columns[i].1;
    for (a, _) in &atoms {
        for (i, e) in a.args.iter().enumerate() {
            if let Expr::Var(v, s) = e {
                let t = col_type(a, i);
                match var_types.get(v) {
                    None => {
                        var_types.insert(v.clone(), (t, *s));
                    }
                    Some(&(t0, s0)) if t0 != t => {
                        let p = ck.sm.diag(s0.start, s0.end, "");
                        ck.err(
                            *s,
                            format!(
                                "type mismatch: variable `{v}` is {} here (column `{}` of `{}`) but {} at {}:{}",
                                article(t),
                                decls[by_name[&a.rel]].columns[i].0,
                                a.rel,
                                article(t0),
                                p.line,
                                p.col
                            ),
                        );
                        ok = false;
                    }
                    _ => {}
                }
            }
        }
    }
    // Variables not in any atom (bound by `X = expr`, or only compared): infer their type
    // from the other side of comparisons and from the other operands of arithmetic.
    loop {
        let mut changed = false;
        for lit in &rule.body {
            if let Literal::Cmp(l, _, r, _) = lit {
                let lt = quiet_type(l, &var_types);
                let rt = quiet_type(r, &var_types);
                if let Some(t) = lt.or(rt) {
                    changed |= assign_untyped(l, t, &mut var_types);
                    changed |= assign_untyped(r, t, &mut var_types);
                }
            }
        }
        for (a, _) in &atoms {
            for e in &a.args {
                if let Some(t) = quiet_type(e, &var_types) {
                    changed |= assign_untyped(e, t, &mut var_types);
                }
            }
        }
        if !changed {
            break;
        }
    }
    // Remaining untyped variables (e.g. only compared with literals) default to number.
    for lit in &rule.body {
        if let Literal::Cmp(l, _, r, _) = lit {
            let mut vs = Vec::new();
            l.vars(&mut vs);
            r.vars(&mut vs);
            for (v, s) in vs {
                var_types
                    .entry(v.to_string())
                    .or_insert((ColumnType::Number, s));
            }
        }
    }
    // Check expressions.
    for (a, _) in &atoms {
        for (i, e) in a.args.iter().enumerate() {
            let col = &decls[by_name[&a.rel]].columns[i];
            if let Expr::Wildcard(_) = e {
                continue;
            }
            match expr_type(ck, e, &var_types) {
                Err(()) => ok = false,
                Ok(t) => {
                    let t_ok = match t {
                        Some(t) => t == col.1,
                        None => col.1 != ColumnType::Symbol,
                    };
                    if !t_ok {
                        if !matches!(e, Expr::Var(..)) {
                            ck.err(
                                e.span(),
                                format!(
                                    "type mismatch: column `{}` of `{}` has type {}, found {}",
                                    col.0,
                                    a.rel,
                                    type_name(col.1),
                                    t.map(article).unwrap_or("a number literal")
                                ),
                            );
                        }
                        ok = false;
                    } else if check_literals(ck, e, col.1).is_err() {
                        ok = false;
                    }
                }
            }
        }
    }
    for lit in &rule.body {
        if let Literal::Cmp(l, op, r, span) = lit {
            let lt = expr_type(ck, l, &var_types);
            let rt = expr_type(ck, r, &var_types);
            let (Ok(lt), Ok(rt)) = (lt, rt) else {
                ok = false;
                continue;
            };
            let t = match (lt, rt) {
                (Some(a), Some(b)) if a != b => {
                    ck.err(
                        *span,
                        format!(
                            "type mismatch: cannot compare {} with {}",
                            article(a),
                            article(b)
                        ),
                    );
                    ok = false;
                    continue;
                }
                (Some(a), _) | (_, Some(a)) => a,
                (None, None) => ColumnType::Number,
            };
            if t == ColumnType::Symbol && (lt.is_none() || rt.is_none()) {
                ck.err(
                    *span,
                    "type mismatch: cannot compare a symbol with a number",
                );
                ok = false;
                continue;
            }
            if t == ColumnType::Symbol && !matches!(op, CmpOp::Eq | CmpOp::Ne) {
                ck.err(
                    *span,
                    "type mismatch: symbols can only be compared with `=` and `!=`",
                );
                ok = false;
                continue;
            }
            if check_literals(ck, l, t).is_err() | check_literals(ck, r, t).is_err() {
                ok = false;
            }
        }
    }
    if !ok {
        return None;
    }

    // Safety.
    let mut bound: HashSet<&str> = HashSet::new();
    for lit in &rule.body {
        if let Literal::Pos(a) = lit {
            for e in &a.args {
                if let Expr::Var(v, _) = e {
                    bound.insert(v);
                }
            }
        }
    }
    loop {
        let mut changed = false;
        for lit in &rule.body {
            if let Literal::Cmp(l, CmpOp::Eq, r, _) = lit {
                for (x, e) in [(l, r), (r, l)] {
                    if let Expr::Var(v, _) = x {
                        if !bound.contains(v.as_str()) {
                            let mut vs = Vec::new();
                            e.vars(&mut vs);
                            if vs.iter().all(|(w, _)| bound.contains(w)) {
                                bound.insert(v);
                                changed = true;
                            }
                        }
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut reported: HashSet<(&str, u8)> = HashSet::new();
    let mut vs = Vec::new();
    for e in &rule.head.args {
        e.vars(&mut vs);
    }
    for (v, s) in vs.drain(..) {
        if !bound.contains(v) && reported.insert((v, 0)) {
            ck.err(
                s,
                format!("variable `{v}` in the head is not bound by any positive body atom"),
            );
            ok = false;
        }
    }
    for lit in &rule.body {
        match lit {
            Literal::Neg(a) => {
                for e in &a.args {
                    e.vars(&mut vs);
                }
                for (v, s) in vs.drain(..) {
                    if !bound.contains(v) && reported.insert((v, 1)) {
                        ck.err(
                            s,
                            format!(
                                "variable `{v}` in negated atom `{}` is not bound by any positive body atom",
                                a.rel
                            ),
                        );
                        ok = false;
                    }
                }
            }
            Literal::Cmp(l, _, r, _) => {
                l.vars(&mut vs);
                r.vars(&mut vs);
                for (v, s) in vs.drain(..) {
                    if !bound.contains(v) && reported.insert((v, 2)) {
                        ck.err(
                            s,
                            format!(
                                "variable `{v}` in a comparison is not bound by any positive body atom"
                            ),
                        );
                        ok = false;
                    }
                }
            }
            Literal::Pos(_) => {}
        }
    }
    if !ok {
        return None;
    }
    Some(RuleInfo {
        var_types: var_types.into_iter().map(|(k, (t, _))| (k, t)).collect(),
    })
}

/// Give type `t` to the untyped variables of `e` (all operands of an arithmetic expression
/// share its type). Returns whether anything changed.
fn assign_untyped(e: &Expr, t: ColumnType, vt: &mut HashMap<String, (ColumnType, Span)>) -> bool {
    match e {
        Expr::Var(v, s) if !vt.contains_key(v) => {
            vt.insert(v.clone(), (t, *s));
            true
        }
        Expr::Bin(_, a, b, _) if t != ColumnType::Symbol => {
            let x = assign_untyped(a, t, vt);
            let y = assign_untyped(b, t, vt);
            x || y
        }
        _ => false,
    }
}

/// Type of an expression without reporting errors (None if unknown or ill-typed).
fn quiet_type(e: &Expr, vt: &HashMap<String, (ColumnType, Span)>) -> Option<ColumnType> {
    match e {
        Expr::Var(v, _) => vt.get(v).map(|x| x.0),
        Expr::Str(..) => Some(ColumnType::Symbol),
        Expr::Int(..) | Expr::Wildcard(_) => None,
        Expr::Bin(_, a, b, _) => quiet_type(a, vt).or_else(|| quiet_type(b, vt)),
    }
}

fn expr_type(
    ck: &mut Checker,
    e: &Expr,
    vt: &HashMap<String, (ColumnType, Span)>,
) -> Result<ETy, ()> {
    match e {
        Expr::Var(v, _) => Ok(vt.get(v).map(|x| x.0)),
        Expr::Wildcard(_) => Ok(None),
        Expr::Str(..) => Ok(Some(ColumnType::Symbol)),
        Expr::Int(..) => Ok(None),
        Expr::Bin(_, a, b, span) => {
            let ta = expr_type(ck, a, vt)?;
            let tb = expr_type(ck, b, vt)?;
            for (t, x) in [(ta, a), (tb, b)] {
                if t == Some(ColumnType::Symbol) {
                    ck.err(
                        x.span(),
                        "type mismatch: a symbol cannot be used in arithmetic",
                    );
                    return Err(());
                }
            }
            match (ta, tb) {
                (Some(x), Some(y)) if x != y => {
                    ck.err(
                        *span,
                        format!(
                            "type mismatch: arithmetic mixes {} and {}",
                            article(x),
                            article(y)
                        ),
                    );
                    Err(())
                }
                (Some(x), _) | (_, Some(x)) => Ok(Some(x)),
                (None, None) => Ok(None),
            }
        }
    }
}

/// Check that integer literals in `e` fit type `t`.
fn check_literals(ck: &mut Checker, e: &Expr, t: ColumnType) -> Result<(), ()> {
    match e {
        Expr::Int(n, s) => {
            let fits = match t {
                ColumnType::Number => *n >= i32::MIN as i64 && *n <= i32::MAX as i64,
                ColumnType::Unsigned => *n >= 0 && *n <= u32::MAX as i64,
                ColumnType::Symbol => false,
            };
            if fits {
                Ok(())
            } else {
                ck.err(
                    *s,
                    format!("literal {n} is out of range for type {}", type_name(t)),
                );
                Err(())
            }
        }
        Expr::Bin(_, a, b, _) => {
            let x = check_literals(ck, a, t);
            let y = check_literals(ck, b, t);
            x.and(y)
        }
        _ => Ok(()),
    }
}

/// Encode a literal of type `t` (checked to fit) into the internal representation.
pub(crate) fn encode_int(n: i64, t: ColumnType) -> u32 {
    match t {
        ColumnType::Number => (n as i32 as u32) ^ SIGN,
        _ => n as u32,
    }
}

struct Compiler<'a> {
    consts: Vec<Const>,
    const_ids: HashMap<ConstKey, usize>,
    indexes: Vec<IndexDef>,
    index_ids: HashMap<(usize, Vec<usize>), usize>,
    decls: &'a [RelationDecl],
    by_name: &'a HashMap<String, usize>,
    sm: &'a SourceMap<'a>,
}

#[derive(Hash, PartialEq, Eq)]
enum ConstKey {
    Sym(String),
    Val(u32),
}

struct PlanBuilder<'r> {
    slots: HashMap<&'r str, usize>,
    n_slots: usize,
    consts: Vec<(usize, usize)>,
    var_types: &'r HashMap<String, ColumnType>,
}

impl<'a> Compiler<'a> {
    fn const_id(&mut self, k: ConstKey) -> usize {
        if let Some(&i) = self.const_ids.get(&k) {
            return i;
        }
        let i = self.consts.len();
        self.consts.push(match &k {
            ConstKey::Sym(s) => Const::Sym(s.clone()),
            ConstKey::Val(v) => Const::Val(*v),
        });
        self.const_ids.insert(k, i);
        i
    }

    fn index_id(&mut self, rel: usize, perm: Vec<usize>) -> usize {
        let key = (rel, perm);
        if let Some(&i) = self.index_ids.get(&key) {
            return i;
        }
        let i = self.indexes.len();
        self.indexes.push(IndexDef {
            rel: key.0,
            perm: key.1.clone(),
        });
        self.index_ids.insert(key, i);
        i
    }

    /// Slot holding constant or variable term `e` of type `t`.
    fn term_slot<'r>(&mut self, pb: &mut PlanBuilder<'r>, e: &'r Expr, t: ColumnType) -> usize {
        match e {
            Expr::Var(v, _) => {
                if let Some(&s) = pb.slots.get(v.as_str()) {
                    return s;
                }
                let s = pb.n_slots;
                pb.n_slots += 1;
                pb.slots.insert(v, s);
                s
            }
            Expr::Str(s, _) => {
                let id = self.const_id(ConstKey::Sym(s.clone()));
                let slot = pb.n_slots;
                pb.n_slots += 1;
                pb.consts.push((slot, id));
                slot
            }
            Expr::Int(n, _) => {
                let id = self.const_id(ConstKey::Val(encode_int(*n, t)));
                let slot = pb.n_slots;
                pb.n_slots += 1;
                pb.consts.push((slot, id));
                slot
            }
            // Wildcards/arithmetic never reach here (checked).
            _ => {
                let slot = pb.n_slots;
                pb.n_slots += 1;
                slot
            }
        }
    }

    fn cexpr<'r>(&mut self, pb: &mut PlanBuilder<'r>, e: &'r Expr, t: ColumnType) -> CExpr {
        match e {
            Expr::Bin(op, a, b, _) => {
                let ca = self.cexpr(pb, a, t);
                let cb = self.cexpr(pb, b, t);
                CExpr::Bin(*op, t, Box::new(ca), Box::new(cb))
            }
            _ => CExpr::Slot(self.term_slot(pb, e, t)),
        }
    }

    /// The type an expression evaluates to within a rule (literals default to `number`).
    fn etype(e: &Expr, vt: &HashMap<String, ColumnType>) -> Option<ColumnType> {
        match e {
            Expr::Var(v, _) => vt.get(v).copied(),
            Expr::Str(..) => Some(ColumnType::Symbol),
            Expr::Int(..) | Expr::Wildcard(_) => None,
            Expr::Bin(_, a, b, _) => Self::etype(a, vt).or_else(|| Self::etype(b, vt)),
        }
    }

    fn plan(
        &mut self,
        rule: &Rule,
        info: &RuleInfo,
        in_scc: &HashSet<usize>,
        delta: Option<usize>,
    ) -> Plan {
        let mut pb = PlanBuilder {
            slots: HashMap::new(),
            n_slots: 0,
            consts: Vec::new(),
            var_types: &info.var_types,
        };
        let pos: Vec<&Atom> = rule
            .body
            .iter()
            .filter_map(|l| match l {
                Literal::Pos(a) => Some(a),
                _ => None,
            })
            .collect();
        let mut pending: Vec<&Literal> = rule
            .body
            .iter()
            .filter(|l| !matches!(l, Literal::Pos(_)))
            .collect();
        let mut remaining: Vec<usize> = (0..pos.len()).collect();
        let mut bound: HashSet<&str> = HashSet::new();
        let mut steps = Vec::new();
        let mut sources = Vec::new();
        // The atom the first scan is sorted for (its lookups come in ascending key order).
        let mut merge_target: Option<usize> = None;

        self.place_pending(&mut pb, &mut pending, &mut bound, &mut steps);
        while !remaining.is_empty() {
            // Choose the next atom: the delta atom first, then the first (in written order)
            // atom sharing a bound variable, else the first remaining atom.
            let pick = if let Some(d) = delta.filter(|d| remaining.contains(d)) {
                d
            } else {
                *remaining
                    .iter()
                    .find(|&&j| {
                        pos[j]
                            .args
                            .iter()
                            .any(|e| matches!(e, Expr::Var(v, _) if bound.contains(v.as_str())))
                    })
                    .unwrap_or(&remaining[0])
            };
            remaining.retain(|&j| j != pick);
            let atom = pos[pick];
            let rel = self.by_name[&atom.rel];
            let view = if in_scc.contains(&rel) {
                match delta {
                    Some(d) if pick == d => View::Recent,
                    Some(d) if pick < d => View::Stable,
                    _ => View::Total,
                }
            } else {
                View::Full
            };
            let cols = &self.decls[rel].columns;
            // Key columns: constants and variables bound before this atom.
            let mut key_cols = Vec::new();
            for (i, e) in atom.args.iter().enumerate() {
                match e {
                    Expr::Str(..) | Expr::Int(..) => key_cols.push(i),
                    Expr::Var(v, _) if bound.contains(v.as_str()) => key_cols.push(i),
                    _ => {}
                }
            }
            // Range column: an unbound variable column restricted by a pending comparison
            // against an expression over already-bound variables.
            let mut range_col = None;
            let mut range = RangeSpec {
                lower: Vec::new(),
                upper: Vec::new(),
            };
            'cols: for (i, e) in atom.args.iter().enumerate() {
                let Expr::Var(v, _) = e else { continue };
                if bound.contains(v.as_str()) {
                    continue;
                }
                // The first occurrence of v in the atom only.
                if atom.args[..i]
                    .iter()
                    .any(|x| matches!(x, Expr::Var(w, _) if w == v))
                {
                    continue;
                }
                let t = cols[i].1;
                if t == ColumnType::Symbol {
                    continue;
                }
                for lit in &pending {
                    let Literal::Cmp(l, op, r, _) = lit else {
                        continue;
                    };
                    for (x, o, other) in [(l, *op, r), (r, op.flip(), l)] {
                        if !matches!(x, Expr::Var(w, _) if w == v) {
                            continue;
                        }
                        let mut vs = Vec::new();
                        other.vars(&mut vs);
                        if !vs.iter().all(|(w, _)| bound.contains(w)) {
                            continue;
                        }
                        let ce = self.cexpr(&mut pb, other, t);
                        match o {
                            CmpOp::Lt => range.upper.push((ce, true)),
                            CmpOp::Le => range.upper.push((ce, false)),
                            CmpOp::Gt => range.lower.push((ce, true)),
                            CmpOp::Ge => range.lower.push((ce, false)),
                            CmpOp::Eq => {
                                range.lower.push((ce.clone(), false));
                                range.upper.push((ce, false));
                            }
                            CmpOp::Ne => {}
                        }
                    }
                }
                if !range.lower.is_empty() || !range.upper.is_empty() {
                    range_col = Some(i);
                    break 'cols;
                }
            }
            let mut perm = key_cols.clone();
            if let Some(rc) = range_col {
                perm.push(rc);
            } else if sources.is_empty() && !remaining.is_empty() && view == View::Full {
                // First scan: order it by the key of the next atom, so that the next atom's
                // lookups come in ascending order (a merge join instead of random searches).
                let (lead, target) = self.lead_columns(atom, &pos, &remaining, &bound);
                if !lead.is_empty() {
                    merge_target = target;
                }
                perm.extend(lead);
            }
            for i in 0..atom.args.len() {
                if !perm.contains(&i) {
                    perm.push(i);
                }
            }
            let key: Vec<usize> = key_cols
                .iter()
                .map(|&i| self.term_slot(&mut pb, &atom.args[i], cols[i].1))
                .collect();
            let mut actions = Vec::new();
            let mut newly: HashSet<&str> = HashSet::new();
            for (p, &i) in perm.iter().enumerate().skip(key_cols.len()) {
                if let Expr::Var(v, _) = &atom.args[i] {
                    let slot = self.term_slot(&mut pb, &atom.args[i], cols[i].1);
                    if newly.insert(v.as_str()) {
                        actions.push((p, Act::Bind(slot)));
                    } else {
                        actions.push((p, Act::Check(slot)));
                    }
                }
            }
            let var_key = key_cols
                .iter()
                .any(|&i| matches!(atom.args[i], Expr::Var(..)));
            let hashed = view == View::Full
                && var_key
                && !(sources.len() == 1 && merge_target == Some(pick));
            let index = self.index_id(rel, perm);
            sources.push((index, view));
            steps.push(Step::Scan(Scan {
                source: sources.len() - 1,
                arity: cols.len(),
                key,
                range: range_col.map(|_| range),
                actions,
                hashed,
            }));
            for v in newly {
                bound.insert(v);
            }
            self.place_pending(&mut pb, &mut pending, &mut bound, &mut steps);
        }
        let hrel = self.by_name[&rule.head.rel];
        let head = rule
            .head
            .args
            .iter()
            .enumerate()
            .map(|(i, e)| self.cexpr(&mut pb, e, self.decls[hrel].columns[i].1))
            .collect();
        let line = self
            .sm
            .diag(rule.head.span.start, rule.head.span.end, "")
            .line;
        Plan {
            head_rel: hrel,
            head,
            steps,
            n_slots: pb.n_slots,
            consts: pb.consts,
            sources,
            line,
        }
    }

    /// Columns of `first` that provide, in order, the variable key columns of the atom that
    /// will probably be joined next (the first of `remaining` sharing a variable), and that atom.
    fn lead_columns(
        &self,
        first: &Atom,
        pos: &[&Atom],
        remaining: &[usize],
        bound: &HashSet<&str>,
    ) -> (Vec<usize>, Option<usize>) {
        let var_col = |v: &str| {
            first
                .args
                .iter()
                .position(|e| matches!(e, Expr::Var(w, _) if w == v))
        };
        let shares = |j: usize| {
            pos[j]
                .args
                .iter()
                .any(|e| matches!(e, Expr::Var(v, _) if var_col(v).is_some()))
        };
        let Some(&next) = remaining.iter().find(|&&j| shares(j)) else {
            return (Vec::new(), None);
        };
        let mut lead: Vec<usize> = Vec::new();
        for e in &pos[next].args {
            match e {
                Expr::Var(v, _) if bound.contains(v.as_str()) => break, // bound elsewhere
                Expr::Var(v, _) => {
                    if let Some(c) = var_col(v) {
                        if !lead.contains(&c) {
                            lead.push(c);
                        }
                    }
                }
                _ => {}
            }
        }
        (lead, Some(next))
    }

    fn place_pending<'r>(
        &mut self,
        pb: &mut PlanBuilder<'r>,
        pending: &mut Vec<&'r Literal>,
        bound: &mut HashSet<&'r str>,
        steps: &mut Vec<Step>,
    ) {
        loop {
            let mut progress = false;
            let mut i = 0;
            while i < pending.len() {
                let lit = pending[i];
                let placed = match lit {
                    Literal::Cmp(l, op, r, _) => {
                        let mut lv = Vec::new();
                        l.vars(&mut lv);
                        let mut rv = Vec::new();
                        r.vars(&mut rv);
                        let lb = lv.iter().all(|(v, _)| bound.contains(v));
                        let rb = rv.iter().all(|(v, _)| bound.contains(v));
                        let t = Self::etype(l, pb.var_types)
                            .or_else(|| Self::etype(r, pb.var_types))
                            .unwrap_or(ColumnType::Number);
                        if lb && rb {
                            let cl = self.cexpr(pb, l, t);
                            let cr = self.cexpr(pb, r, t);
                            steps.push(Step::Filter(cl, *op, cr));
                            true
                        } else if *op == CmpOp::Eq {
                            match (l, r) {
                                (Expr::Var(v, _), e) if rb => {
                                    let ce = self.cexpr(pb, e, t);
                                    let s = self.term_slot(pb, l, t);
                                    steps.push(Step::Assign(s, ce));
                                    bound.insert(v);
                                    true
                                }
                                (e, Expr::Var(v, _)) if lb => {
                                    let ce = self.cexpr(pb, e, t);
                                    let s = self.term_slot(pb, r, t);
                                    steps.push(Step::Assign(s, ce));
                                    bound.insert(v);
                                    true
                                }
                                _ => false,
                            }
                        } else {
                            false
                        }
                    }
                    Literal::Neg(a) => {
                        let mut vs = Vec::new();
                        for e in &a.args {
                            e.vars(&mut vs);
                        }
                        if vs.iter().all(|(v, _)| bound.contains(v)) {
                            let rel = self.by_name[&a.rel];
                            let cols = &self.decls[rel].columns;
                            let mut perm = Vec::new();
                            let mut key = Vec::new();
                            for (i, e) in a.args.iter().enumerate() {
                                if !matches!(e, Expr::Wildcard(_)) {
                                    perm.push(i);
                                    key.push(self.term_slot(pb, e, cols[i].1));
                                }
                            }
                            for i in 0..a.args.len() {
                                if !perm.contains(&i) {
                                    perm.push(i);
                                }
                            }
                            let arity = cols.len();
                            let index = self.index_id(rel, perm);
                            steps.push(Step::Neg { index, arity, key });
                            true
                        } else {
                            false
                        }
                    }
                    Literal::Pos(_) => false,
                };
                if placed {
                    pending.remove(i);
                    progress = true;
                } else {
                    i += 1;
                }
            }
            if !progress {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scans(p: &Plan) -> Vec<&Scan> {
        p.steps
            .iter()
            .filter_map(|s| match s {
                Step::Scan(sc) => Some(sc),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn comparison_on_next_atom_column_becomes_range_scan() {
        let src = "
            .decl exec(l: unsigned, c: unsigned, r: unsigned)
            .decl q(l: unsigned, c: unsigned, j: unsigned, i: unsigned)
            .decl hit(l: unsigned, r: unsigned)
            hit(L, R) :- q(L, C, J, I), exec(L, C, R), J < R, R < I.
        ";
        let p = Program::parse(src, "t.dl").unwrap();
        let plan = &p.strata[0].base[0];
        let sc = scans(plan);
        assert_eq!(sc.len(), 2);
        // exec is looked up by (L, C) with a range on R.
        assert_eq!(sc[1].key.len(), 2);
        let r = sc[1].range.as_ref().expect("range scan");
        assert_eq!((r.lower.len(), r.upper.len()), (1, 1));
        assert!(r.lower[0].1 && r.upper[0].1); // both strict
        let (ix, view) = plan.sources[sc[1].source];
        assert_eq!(view, View::Full);
        assert_eq!(p.indexes[ix].perm, vec![0, 1, 2]);
    }

    #[test]
    fn bound_non_prefix_columns_use_a_permuted_index() {
        let src = "
            .decl a(x: number, y: number)
            .decl b(x: number, y: number, z: number)
            .decl o(x: number, z: number)
            o(X, Z) :- a(X, Y), b(Z, Y, 5).
        ";
        let p = Program::parse(src, "t.dl").unwrap();
        let plan = &p.strata[0].base[0];
        let sc = scans(plan);
        let (ix, _) = plan.sources[sc[1].source];
        // b's key columns (y, const) first, then z.
        assert_eq!(p.indexes[ix].perm, vec![1, 2, 0]);
        assert_eq!(sc[1].key.len(), 2);
    }

    #[test]
    fn first_atom_is_ordered_by_the_next_atoms_key() {
        let src = "
            .decl a(x: number, y: number)
            .decl b(y: number, k: symbol, z: number)
            .decl o(x: number, z: number)
            o(X, Z) :- a(X, Y), b(Y, \"k\", Z).
            o(X, Z) :- a(X, Z), b(X, \"k\", Z).
        ";
        let p = Program::parse(src, "t.dl").unwrap();
        let plans = &p.strata[0].base;
        // a is scanned sorted by Y (its column 1), the key of b.
        let (ix, _) = plans[0].sources[0];
        assert_eq!(p.indexes[ix].perm, vec![1, 0]);
        // Already in key order: identity.
        let (ix, _) = plans[1].sources[0];
        assert_eq!(p.indexes[ix].perm, vec![0, 1]);
        let (ix, _) = plans[0].sources[1];
        assert_eq!(p.indexes[ix].perm, vec![0, 1, 2]);
    }

    #[test]
    fn lookups_after_the_merge_join_are_hashed() {
        let src = "
            .decl q(i: unsigned, u: unsigned, j: unsigned)
            .decl ctx(i: unsigned, c: unsigned)
            .decl cd(l: unsigned, u: unsigned)
            .decl exec(l: unsigned, c: unsigned, r: unsigned)
            .decl vd(i: unsigned, x: symbol, v: unsigned)
            .decl hit(i: unsigned, v: unsigned)
            hit(I, V) :- q(I, U, J), ctx(I, C), cd(L, U), exec(L, C, R), J < R, R < I, vd(R, \"#\", V).
            hit(I, V) :- vd(I, \"#\", V), ctx(I, _).
        ";
        let p = Program::parse(src, "t.dl").unwrap();
        let plans = &p.strata.iter().find(|s| !s.base.is_empty()).unwrap().base;
        let sc = scans(&plans[0]);
        assert_eq!(sc.len(), 5);
        // q is scanned sorted by I, so ctx (keyed by I) is merge-joined: no hash.
        assert!(!sc[0].hashed && !sc[1].hashed);
        // cd, exec and vd are looked up by values in no particular order.
        assert!(sc[2].hashed && sc[3].hashed && sc[4].hashed);
        // A key of constants only is not hashed (the same rows every time).
        let sc = scans(&plans[1]);
        assert!(!sc[0].hashed);
        assert_eq!(sc[0].key.len(), 1);
        assert!(!sc[1].hashed);
    }

    #[test]
    fn delta_atom_is_scanned_first() {
        let src = "
            .decl e(x: number, y: number)
            .decl p(x: number, y: number)
            p(X, Y) :- e(X, Y).
            p(X, Z) :- e(X, Y), p(Y, Z).
        ";
        let p = Program::parse(src, "t.dl").unwrap();
        let st = p.strata.iter().find(|s| !s.delta.is_empty()).unwrap();
        assert_eq!(st.delta.len(), 1);
        let plan = &st.delta[0];
        assert_eq!(plan.sources[0].1, View::Recent);
        assert_eq!(plan.sources[1].1, View::Full);
        // e is then looked up by Y, its second column.
        let (ix, _) = plan.sources[1];
        assert_eq!(p.indexes[ix].perm, vec![1, 0]);
    }
}
