//! Trace dumps: loading and validating the directory format of `docs/trace-format.md`.
//!
//! Invariant: a [`Dump`] that `load` returned is well-formed — every id resolves, steps are
//! consecutive, frames follow stack discipline, branch outcomes exist for every branch step.
//! Later stages index into it without re-checking.

mod facts;
mod manifest;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

pub use facts::read_rows;
pub use manifest::{Manifest, Outcome, Rerun, TestCase, FORMAT_VERSION};

use crate::intern::Interner;

pub type StmtId = u32;
pub type MethodId = u32;
pub type VarId = u32;

/// A load or validation error, located at `path:line` (line 0 = the whole file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpError {
    pub path: PathBuf,
    pub line: usize,
    pub message: String,
}

impl DumpError {
    pub fn at(path: &Path, line: usize, message: String) -> Self {
        DumpError {
            path: path.to_owned(),
            line,
            message,
        }
    }
}

impl fmt::Display for DumpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.path.display(), self.line, self.message)
        } else {
            write!(f, "{}: {}", self.path.display(), self.message)
        }
    }
}

impl std::error::Error for DumpError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StmtKind {
    Assign,
    Call,
    Branch,
    Goto,
    Return,
    Throw,
    Catch,
    Nop,
}

impl StmtKind {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "assign" => Self::Assign,
            "call" => Self::Call,
            "branch" => Self::Branch,
            "goto" => Self::Goto,
            "return" => Self::Return,
            "throw" => Self::Throw,
            "catch" => Self::Catch,
            "nop" => Self::Nop,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    App,
    Test,
}

#[derive(Debug, Clone)]
pub struct Stmt {
    pub id: String,
    pub method: MethodId,
    pub kind: StmtKind,
    pub file: String,
    pub line: u32,
    pub text: String,
}

#[derive(Debug, Clone)]
pub struct Method {
    pub id: String,
    pub role: Role,
    pub entry: StmtId,
    /// Formal parameters by position (receiver excluded).
    pub formals: Vec<VarId>,
    pub this_formal: Option<VarId>,
    pub stmts: Vec<StmtId>,
    /// The line that declares it (`def`, `class`; `method_line.facts`), if the dump says.
    pub line: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CfgEdge {
    pub from: StmtId,
    pub to: StmtId,
    pub exceptional: bool,
}

#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub stmt: StmtId,
    /// Index into [`Trace::frames`].
    pub frame: u32,
}

#[derive(Debug, Clone)]
pub struct Frame {
    pub id: String,
    pub method: MethodId,
    /// The step (index in this trace) that opened the frame; `None` for the root frame.
    pub call_step: Option<u32>,
}

#[derive(Debug, Clone)]
pub struct Trace {
    pub id: String,
    /// Index into `manifest.tests`.
    pub test: usize,
    pub steps: Vec<Step>,
    pub frames: Vec<Frame>,
    /// Branch outcome per step (`None` for non-branch steps).
    pub branch: Vec<Option<bool>>,
    /// Run-time bindings: (call step, callee frame) → [(formal, actual)].
    pub binds: HashMap<(u32, u32), Vec<(VarId, VarId)>>,
    /// Heap accesses (`heap.facts`), in step order: the object a variable of the step's
    /// statement referred to, and whether the step mutated it or read it.
    pub heap: Vec<HeapAccess>,
    /// Call steps that opened more than one frame (built on first use).
    pub multi_open: std::sync::OnceLock<std::collections::HashSet<u32>>,
}

/// One row of `heap.facts`: at step `step`, variable `var` of its statement referred to object
/// `obj` (an identity, unique among the objects alive at the same time), which the step
/// mutated (`def`) or read (`use`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapAccess {
    pub step: u32,
    pub var: VarId,
    pub obj: u64,
    pub def: bool,
}

impl Trace {
    /// A trace with no rows yet, of manifest test `test`.
    pub fn empty(id: &str, test: usize) -> Trace {
        Trace {
            id: id.to_owned(),
            test,
            steps: Vec::new(),
            frames: Vec::new(),
            branch: Vec::new(),
            binds: HashMap::new(),
            heap: Vec::new(),
            multi_open: Default::default(),
        }
    }

    /// Whether call step `step` opened several frames (an opaque call calling back into traced
    /// code more than once).
    pub fn opened_several_frames(&self, step: u32) -> bool {
        self.multi_open
            .get_or_init(|| {
                let mut n: HashMap<u32, u32> = HashMap::new();
                for f in &self.frames {
                    if let Some(c) = f.call_step {
                        *n.entry(c).or_insert(0) += 1;
                    }
                }
                n.into_iter()
                    .filter(|&(_, k)| k > 1)
                    .map(|(c, _)| c)
                    .collect()
            })
            .contains(&step)
    }
}

/// A loaded, validated trace dump.
#[derive(Debug, Clone)]
pub struct Dump {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub stmts: Vec<Stmt>,
    pub stmt_ids: Interner,
    pub methods: Vec<Method>,
    pub method_ids: Interner,
    pub vars: Interner,
    pub defs: Vec<Vec<VarId>>,
    pub uses: Vec<Vec<VarId>>,
    pub cfg: Vec<CfgEdge>,
    /// Positional actual arguments per statement: (index, variable).
    pub actuals: Vec<Vec<(u32, VarId)>>,
    pub receiver: Vec<Option<VarId>>,
    pub loop_head: Vec<bool>,
    /// Statements that only copy one variable's value (`copy.facts`, optional).
    pub copy: Vec<bool>,
    pub traces: Vec<Trace>,
    /// Statement coverage per test (index into `manifest.tests`), when the front-end wrote it.
    pub coverage: Option<Vec<(usize, StmtId)>>,
    /// CFG edge coverage per test, when the front-end wrote it.
    pub edge_coverage: Option<Vec<(usize, StmtId, StmtId)>>,
}

impl Dump {
    /// Loads and validates the dump in `dir`.
    pub fn load(dir: &Path) -> Result<Dump, DumpError> {
        if !dir.is_dir() {
            return Err(DumpError::at(
                dir,
                0,
                "not a directory (expected a trace dump directory)".to_owned(),
            ));
        }
        let manifest = Manifest::read(dir)?;
        let mut d = Dump {
            dir: dir.to_owned(),
            manifest,
            stmts: Vec::new(),
            stmt_ids: Interner::new(),
            methods: Vec::new(),
            method_ids: Interner::new(),
            vars: Interner::new(),
            defs: Vec::new(),
            uses: Vec::new(),
            cfg: Vec::new(),
            actuals: Vec::new(),
            receiver: Vec::new(),
            loop_head: Vec::new(),
            copy: Vec::new(),
            traces: Vec::new(),
            coverage: None,
            edge_coverage: None,
        };
        d.load_static()?;
        d.load_traces()?;
        d.load_coverage()?;
        Ok(d)
    }

    pub fn stmt(&self, name: &str) -> Option<StmtId> {
        self.stmt_ids.get(name)
    }

    fn load_static(&mut self) -> Result<(), DumpError> {
        let dir = self.dir.clone();
        // method.facts first: statements refer to methods. Entries are resolved after stmt.facts
        // (a second read of method.facts, so errors keep their line numbers).
        read_rows(&dir, "method", 3, true, |_, c| {
            let role = match c[1] {
                "app" => Role::App,
                "test" => Role::Test,
                other => return Err(format!("role must be `app` or `test`, found {other:?}")),
            };
            if self.method_ids.get(c[0]).is_some() {
                return Err(format!("method {:?} declared twice", c[0]));
            }
            self.method_ids.intern(c[0]);
            self.methods.push(Method {
                id: c[0].to_owned(),
                role,
                entry: u32::MAX,
                formals: Vec::new(),
                this_formal: None,
                stmts: Vec::new(),
                line: None,
            });
            Ok(())
        })?;
        read_rows(&dir, "method_line", 2, false, |_, c| {
            let m = self
                .method_ids
                .get(c[0])
                .ok_or_else(|| format!("unknown method {:?} (not in method.facts)", c[0]))?;
            let line = facts::uint(c[1], "line")?;
            if self.methods[m as usize].line.replace(line).is_some() {
                return Err(format!("method {:?} has two lines", c[0]));
            }
            Ok(())
        })?;
        read_rows(&dir, "stmt", 6, true, |_, c| {
            if self.stmt_ids.get(c[0]).is_some() {
                return Err(format!("statement {:?} declared twice", c[0]));
            }
            let method = self
                .method_ids
                .get(c[1])
                .ok_or_else(|| format!("unknown method {:?} (not in method.facts)", c[1]))?;
            let kind = StmtKind::parse(c[2]).ok_or_else(|| {
                format!("unknown statement kind {:?} (expected assign, call, branch, goto, return, throw, catch or nop)", c[2])
            })?;
            let line = facts::uint(c[4], "line")?;
            let id = self.stmt_ids.intern(c[0]);
            self.methods[method as usize].stmts.push(id);
            self.stmts.push(Stmt {
                id: c[0].to_owned(),
                method,
                kind,
                file: c[3].to_owned(),
                line,
                text: c[5].to_owned(),
            });
            Ok(())
        })?;
        let n = self.stmts.len();
        // Resolve method entries (re-read for line numbers in messages).
        let mut idx = 0usize;
        read_rows(&dir, "method", 3, true, |_, c| {
            let m = &mut self.methods[idx];
            idx += 1;
            let entry = self.stmt_ids.get(c[2]).ok_or_else(|| {
                format!(
                    "entry statement {:?} of method {:?} is not in stmt.facts",
                    c[2], c[0]
                )
            })?;
            if self.stmts[entry as usize].method as usize != idx - 1 {
                return Err(format!(
                    "entry statement {:?} belongs to another method",
                    c[2]
                ));
            }
            m.entry = entry;
            Ok(())
        })?;
        self.defs = vec![Vec::new(); n];
        self.uses = vec![Vec::new(); n];
        self.actuals = vec![Vec::new(); n];
        self.receiver = vec![None; n];
        self.loop_head = vec![false; n];
        self.copy = vec![false; n];
        let stmt_ids = &self.stmt_ids;
        let lookup = |s: &str| {
            stmt_ids
                .get(s)
                .ok_or_else(|| format!("unknown statement {s:?} (not in stmt.facts)"))
        };
        {
            let vars = &mut self.vars;
            let defs = &mut self.defs;
            read_rows(&dir, "def", 2, true, |_, c| {
                let s = lookup(c[0])?;
                let v = vars.intern(c[1]);
                if !defs[s as usize].contains(&v) {
                    defs[s as usize].push(v);
                }
                Ok(())
            })?;
            let uses = &mut self.uses;
            read_rows(&dir, "use", 2, true, |_, c| {
                let s = lookup(c[0])?;
                let v = vars.intern(c[1]);
                if !uses[s as usize].contains(&v) {
                    uses[s as usize].push(v);
                }
                Ok(())
            })?;
        }
        let stmts = &self.stmts;
        let cfg = &mut self.cfg;
        read_rows(&dir, "cfg", 3, true, |_, c| {
            let from = lookup(c[0])?;
            let to = lookup(c[1])?;
            let exceptional = match c[2] {
                "normal" => false,
                "exceptional" => true,
                other => {
                    return Err(format!(
                        "edge kind must be `normal` or `exceptional`, found {other:?}"
                    ))
                }
            };
            if stmts[from as usize].method != stmts[to as usize].method {
                return Err(format!(
                    "cfg edge {:?} → {:?} crosses methods (cfg.facts is intra-procedural)",
                    c[0], c[1]
                ));
            }
            cfg.push(CfgEdge {
                from,
                to,
                exceptional,
            });
            Ok(())
        })?;
        let method_ids = &self.method_ids;
        let methods = &mut self.methods;
        let vars = &mut self.vars;
        let mut formals: Vec<Vec<(u32, VarId)>> = vec![Vec::new(); methods.len()];
        read_rows(&dir, "formal", 3, true, |_, c| {
            let m = method_ids
                .get(c[0])
                .ok_or_else(|| format!("unknown method {:?}", c[0]))?;
            let i = facts::uint(c[1], "index")?;
            let v = vars.intern(c[2]);
            if formals[m as usize].iter().any(|&(j, _)| j == i) {
                return Err(format!(
                    "formal index {i} of method {:?} declared twice",
                    c[0]
                ));
            }
            formals[m as usize].push((i, v));
            Ok(())
        })?;
        for (m, mut f) in formals.into_iter().enumerate() {
            f.sort_unstable();
            for (k, &(i, _)) in f.iter().enumerate() {
                if i as usize != k {
                    return Err(DumpError::at(
                        &dir.join("formal.facts"),
                        0,
                        format!(
                            "formals of method {:?} are not numbered 0..n (index {k} missing)",
                            methods[m].id
                        ),
                    ));
                }
            }
            methods[m].formals = f.into_iter().map(|(_, v)| v).collect();
        }
        read_rows(&dir, "this_formal", 2, true, |_, c| {
            let m = method_ids
                .get(c[0])
                .ok_or_else(|| format!("unknown method {:?}", c[0]))?;
            let v = vars.intern(c[1]);
            if methods[m as usize].this_formal.replace(v).is_some() {
                return Err(format!("method {:?} has two receiver formals", c[0]));
            }
            Ok(())
        })?;
        let actuals = &mut self.actuals;
        read_rows(&dir, "actual", 3, true, |_, c| {
            let s = lookup(c[0])?;
            let i = facts::uint(c[1], "index")?;
            let v = vars.intern(c[2]);
            actuals[s as usize].push((i, v));
            Ok(())
        })?;
        let receiver = &mut self.receiver;
        read_rows(&dir, "receiver", 2, true, |_, c| {
            let s = lookup(c[0])?;
            let v = vars.intern(c[1]);
            if receiver[s as usize].replace(v).is_some() {
                return Err(format!("call statement {:?} has two receivers", c[0]));
            }
            Ok(())
        })?;
        let loop_head = &mut self.loop_head;
        read_rows(&dir, "loop_head", 1, true, |_, c| {
            loop_head[lookup(c[0])? as usize] = true;
            Ok(())
        })?;
        let copy = &mut self.copy;
        read_rows(&dir, "copy", 1, false, |_, c| {
            copy[lookup(c[0])? as usize] = true;
            Ok(())
        })?;
        Ok(())
    }

    fn load_traces(&mut self) -> Result<(), DumpError> {
        let dir = self.dir.clone();
        let mut trace_ids = Interner::new();
        for (ti, t) in self.manifest.tests.iter().enumerate() {
            if let Some(tr) = &t.trace {
                if trace_ids.get(tr).is_some() {
                    return Err(DumpError::at(
                        &dir.join("manifest.toml"),
                        0,
                        format!("trace {tr:?} is used by two tests"),
                    ));
                }
                trace_ids.intern(tr);
                self.traces.push(Trace::empty(tr, ti));
            }
        }
        let frame_ids = read_control(
            &dir,
            &self.stmts,
            &self.method_ids,
            &trace_ids,
            &mut self.traces,
        )?;
        let unknown_trace = |s: &str| {
            format!("unknown trace {s:?} (no [[test]] in manifest.toml has trace = {s:?})")
        };
        {
            let traces = &mut self.traces;
            let vars = &mut self.vars;
            read_rows(&dir, "bind", 5, false, |_, c| {
                let t = trace_ids.get(c[0]).ok_or_else(|| unknown_trace(c[0]))? as usize;
                let step = facts::uint(c[1], "call_step")?;
                let frame = *frame_ids[t]
                    .get(c[2])
                    .ok_or_else(|| format!("unknown frame {:?}", c[2]))?;
                let tr = &mut traces[t];
                if tr.frames[frame as usize].call_step != Some(step) {
                    return Err(format!("frame {:?} was not opened by step {step}", c[2]));
                }
                let (f, a) = (vars.intern(c[3]), vars.intern(c[4]));
                tr.binds.entry((step, frame)).or_default().push((f, a));
                Ok(())
            })?;
        }
        self.load_heap(&dir, &trace_ids)?;
        for tr in &self.traces {
            self.check_trace(tr)?;
        }
        Ok(())
    }

    /// `heap.facts` (optional): each row's variable must be in DEF (mutation) or USE (read) of
    /// its step's statement.
    fn load_heap(&mut self, dir: &Path, trace_ids: &Interner) -> Result<(), DumpError> {
        let traces = &mut self.traces;
        let vars = &mut self.vars;
        let (stmts, defs, uses) = (&self.stmts, &self.defs, &self.uses);
        read_rows(dir, "heap", 5, false, |_, c| {
            let t = trace_ids.get(c[0]).ok_or_else(|| {
                format!(
                    "unknown trace {:?} (no [[test]] in manifest.toml has it)",
                    c[0]
                )
            })? as usize;
            let step = facts::uint(c[1], "step index")?;
            let tr = &mut traces[t];
            let s = tr
                .steps
                .get(step as usize)
                .ok_or_else(|| format!("step {step} does not exist in trace {:?}", c[0]))?
                .stmt as usize;
            let obj: u64 = c[3]
                .parse()
                .map_err(|_| format!("object must be a non-negative integer, found {:?}", c[3]))?;
            let var = vars.intern(c[2]);
            let def = match c[4] {
                "def" => true,
                "use" => false,
                other => return Err(format!("mode must be def or use, found {other:?}")),
            };
            let listed = if def { &defs[s] } else { &uses[s] };
            if !listed.contains(&var) {
                return Err(format!(
                    "{:?} is not in {} of statement {} (step {step} of trace {:?})",
                    c[2],
                    if def { "DEF" } else { "USE" },
                    stmts[s].id,
                    c[0]
                ));
            }
            if tr.heap.last().is_some_and(|h| h.step > step) {
                return Err(format!("rows of trace {:?} are not in step order", c[0]));
            }
            tr.heap.push(HeapAccess {
                step,
                var,
                obj,
                def,
            });
            Ok(())
        })
        .map(|_| ())
    }

    /// Stack discipline, branch outcomes and the failure step of one trace.
    fn check_trace(&self, tr: &Trace) -> Result<(), DumpError> {
        self.check_control(&self.dir, tr)?;
        let test = &self.manifest.tests[tr.test];
        if let Some(fs) = test.failure_step {
            if fs as usize >= tr.steps.len() {
                return Err(DumpError::at(
                    &self.dir.join("manifest.toml"),
                    0,
                    format!(
                        "test {:?}: failure_step {fs} is past the end of trace {:?} ({} steps)",
                        test.id,
                        tr.id,
                        tr.steps.len()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Stack discipline and branch outcomes of a trace read from `dir`.
    fn check_control(&self, dir: &Path, tr: &Trace) -> Result<(), DumpError> {
        let step_path = dir.join("step.facts");
        let err = |msg: String| DumpError::at(&step_path, 0, format!("trace {:?}: {msg}", tr.id));
        if tr.steps.is_empty() {
            return Err(err("has no steps".to_owned()));
        }
        let nf = tr.frames.len();
        let mut closed_at: Vec<Option<u32>> = vec![None; nf];
        let mut entered: Vec<bool> = vec![false; nf];
        let mut stack: Vec<u32> = Vec::new();
        for (i, s) in tr.steps.iter().enumerate() {
            let f = s.frame;
            if stack.last() == Some(&f) {
                continue;
            }
            if let Some(pos) = stack.iter().rposition(|&g| g == f) {
                for g in stack.drain(pos + 1..) {
                    closed_at[g as usize] = Some(i as u32 - 1);
                }
                continue;
            }
            let frame = &tr.frames[f as usize];
            if let Some(at) = closed_at[f as usize] {
                return Err(err(format!(
                    "step {i} runs in frame {:?}, which returned at step {at}",
                    frame.id
                )));
            }
            if entered[f as usize] {
                return Err(err(format!("step {i} re-enters frame {:?}", frame.id)));
            }
            match frame.call_step {
                None if i == 0 => {}
                None => {
                    return Err(err(format!(
                        "step {i} enters root frame {:?} (only step 0 may run in a frame with call_step `-`)",
                        frame.id
                    )))
                }
                Some(c) => {
                    if c as usize >= i {
                        return Err(err(format!("frame {:?} is opened by step {c}, which does not precede its first step {i}", frame.id)));
                    }
                    let caller = tr.steps[c as usize].frame;
                    // Returns may precede the entry: pop frames above the caller.
                    let Some(pos) = stack.iter().rposition(|&g| g == caller) else {
                        return Err(err(format!(
                            "step {i} enters frame {:?} opened by step {c} of frame {:?}, which is no longer on the stack",
                            frame.id, tr.frames[caller as usize].id
                        )));
                    };
                    for g in stack.drain(pos + 1..) {
                        closed_at[g as usize] = Some(i as u32 - 1);
                    }
                }
            }
            if i == 0 && frame.call_step.is_some() {
                return Err(err(format!(
                    "step 0 must run in the root frame (call_step `-`), not in {:?}",
                    frame.id
                )));
            }
            entered[f as usize] = true;
            stack.push(f);
        }
        for (i, s) in tr.steps.iter().enumerate() {
            if self.stmts[s.stmt as usize].kind == StmtKind::Branch && tr.branch[i].is_none() {
                return Err(DumpError::at(
                    &dir.join("branch.facts"),
                    0,
                    format!(
                        "trace {:?}: branch step {i} ({}) has no outcome",
                        tr.id, self.stmts[s.stmt as usize].id
                    ),
                ));
            }
        }
        Ok(())
    }

    /// One run's trace as a re-run writes it (docs/trace-format.md "Forcing a set of branch
    /// instances"): `frame.facts`, `step.facts` and `branch.facts` of the single trace `trace` in
    /// `dir`, read against this dump's statements and methods; `test` is the manifest test it
    /// re-ran.
    pub fn load_run(&self, dir: &Path, trace: &str, test: usize) -> Result<Trace, DumpError> {
        let mut ids = Interner::new();
        ids.intern(trace);
        let mut traces = vec![Trace::empty(trace, test)];
        read_control(dir, &self.stmts, &self.method_ids, &ids, &mut traces)?;
        let tr = traces.pop().expect("one trace");
        self.check_control(dir, &tr)?;
        Ok(tr)
    }

    fn load_coverage(&mut self) -> Result<(), DumpError> {
        let dir = self.dir.clone();
        let tests: HashMap<&str, usize> = self
            .manifest
            .tests
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.as_str(), i))
            .collect();
        let stmt_ids = &self.stmt_ids;
        let mut cov = Vec::new();
        if read_rows(&dir, "coverage", 2, false, |_, c| {
            let t = *tests
                .get(c[0])
                .ok_or_else(|| format!("unknown test {:?} (not in manifest.toml)", c[0]))?;
            let s = stmt_ids
                .get(c[1])
                .ok_or_else(|| format!("unknown statement {:?}", c[1]))?;
            cov.push((t, s));
            Ok(())
        })? {
            self.coverage = Some(cov);
        }
        let mut ecov = Vec::new();
        if read_rows(&dir, "edge_coverage", 3, false, |_, c| {
            let t = *tests
                .get(c[0])
                .ok_or_else(|| format!("unknown test {:?} (not in manifest.toml)", c[0]))?;
            let a = stmt_ids
                .get(c[1])
                .ok_or_else(|| format!("unknown statement {:?}", c[1]))?;
            let b = stmt_ids
                .get(c[2])
                .ok_or_else(|| format!("unknown statement {:?}", c[2]))?;
            ecov.push((t, a, b));
            Ok(())
        })? {
            self.edge_coverage = Some(ecov);
        }
        Ok(())
    }

    /// The failure step of a failing test's trace (last step unless the manifest says otherwise).
    pub fn failure_step(&self, trace: &Trace) -> Option<u32> {
        let t = &self.manifest.tests[trace.test];
        (t.outcome == Outcome::Fail).then(|| t.failure_step.unwrap_or(trace.steps.len() as u32 - 1))
    }
}

/// Reads the control part of traces from `dir`: `frame.facts`, `step.facts` and `branch.facts`
/// (rows of the traces `trace_ids` names, which `traces_in` holds empty, in that order).
/// Returns each trace's frame ids by name.
fn read_control(
    dir: &Path,
    stmts: &[Stmt],
    method_ids: &Interner,
    trace_ids: &Interner,
    traces_in: &mut [Trace],
) -> Result<Vec<HashMap<String, u32>>, DumpError> {
    let unknown_trace =
        |s: &str| format!("unknown trace {s:?} (no [[test]] in manifest.toml has trace = {s:?})");
    // frame.facts
    let mut frame_ids: Vec<HashMap<String, u32>> = vec![HashMap::new(); traces_in.len()];
    {
        let traces = &mut *traces_in;
        read_rows(dir, "frame", 4, true, |_, c| {
            let t = trace_ids.get(c[0]).ok_or_else(|| unknown_trace(c[0]))? as usize;
            let method = method_ids
                .get(c[2])
                .ok_or_else(|| format!("unknown method {:?}", c[2]))?;
            let call_step = if c[3] == "-" {
                None
            } else {
                Some(facts::uint(c[3], "call_step")?)
            };
            let id = traces[t].frames.len() as u32;
            if frame_ids[t].insert(c[1].to_owned(), id).is_some() {
                return Err(format!(
                    "frame {:?} declared twice in trace {:?}",
                    c[1], c[0]
                ));
            }
            traces[t].frames.push(Frame {
                id: c[1].to_owned(),
                method,
                call_step,
            });
            Ok(())
        })?;
    }
    // step.facts: fast path, rows arrive in any order per trace but must be consecutive.
    {
        let traces = &mut *traces_in;

        // Statement and frame names by &str with a fast hash (one lookup per step each).
        let stmt_of: rustc_hash::FxHashMap<&str, u32> = stmts
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), i as u32))
            .collect();
        let frame_of: Vec<rustc_hash::FxHashMap<&str, u32>> = frame_ids
            .iter()
            .map(|m| m.iter().map(|(k, &v)| (k.as_str(), v)).collect())
            .collect();
        let mut last_trace: (String, usize) = (String::new(), usize::MAX);
        read_rows(dir, "step", 4, true, |_, c| {
            let t = if last_trace.1 != usize::MAX && last_trace.0 == c[0] {
                last_trace.1
            } else {
                let t = trace_ids.get(c[0]).ok_or_else(|| unknown_trace(c[0]))? as usize;
                last_trace = (c[0].to_owned(), t);
                t
            };
            let idx = facts::uint(c[1], "step index")?;
            let tr = &mut traces[t];
            if idx as usize != tr.steps.len() {
                return Err(format!(
                    "steps out of order in trace {:?}: expected step {}, found step {idx}",
                    c[0],
                    tr.steps.len()
                ));
            }
            let stmt = *stmt_of
                .get(c[2])
                .ok_or_else(|| format!("unknown statement {:?} (not in stmt.facts)", c[2]))?;
            let frame = *frame_of[t].get(c[3]).ok_or_else(|| {
                format!(
                    "unknown frame {:?} in trace {:?} (not in frame.facts)",
                    c[3], c[0]
                )
            })?;
            let fm = tr.frames[frame as usize].method;
            if stmts[stmt as usize].method != fm {
                return Err(format!(
                        "statement {:?} belongs to method {:?} but runs in frame {:?} of another method",
                        c[2], stmts[stmt as usize].method, c[3]
                    ));
            }
            tr.steps.push(Step { stmt, frame });
            Ok(())
        })?;
    }
    for tr in traces_in.iter_mut() {
        tr.branch = vec![None; tr.steps.len()];
    }
    {
        let traces = &mut *traces_in;

        read_rows(dir, "branch", 3, true, |_, c| {
            let t = trace_ids.get(c[0]).ok_or_else(|| unknown_trace(c[0]))? as usize;
            let idx = facts::uint(c[1], "step index")? as usize;
            let tr = &mut traces[t];
            let step = tr
                .steps
                .get(idx)
                .ok_or_else(|| format!("step {idx} does not exist in trace {:?}", c[0]))?;
            if stmts[step.stmt as usize].kind != StmtKind::Branch {
                return Err(format!(
                    "step {idx} of trace {:?} is not a branch statement",
                    c[0]
                ));
            }
            let o = match c[2] {
                "1" => true,
                "0" => false,
                other => return Err(format!("branch outcome must be 0 or 1, found {other:?}")),
            };
            tr.branch[idx] = Some(o);
            Ok(())
        })?;
    }
    Ok(frame_ids)
}
