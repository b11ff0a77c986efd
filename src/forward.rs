//! The forward pass: one pass over each trace computing the rule-independent premises of the
//! paper's rules (Figs. 5, 7, 8): the vertex sets `V_i^d` / `V_i^a`, `LASTDEF`, `LASTCTRL`,
//! `OPEN`, `CLOSE`, `STKTOP`, `ISARG`, `ISRCVOBJ`, `MAP`, plus the static `DEF`, `USE` and
//! `RDFINVERSE`. Modeling decisions (which edges exist) live in `rules/*.dl`, not here.
//!
//! Invariants of the output ([`Premises`]):
//! * global step ids increase in execution order within a trace (traces are laid out one after
//!   another), so the rules may compare step ids with `<`;
//! * every vertex id indexes [`Premises::vertices`]; vertex ids are dense;
//! * `lastdef(i, u, j, w)` exists exactly for the uses `u ∈ USE(l_i)` with a reaching definition in
//!   the context of step `i`, and `w` is the vertex `⟨u@j⟩` (or the argument vertex bound to `u`).

use rustc_hash::FxHashMap;

use crate::cdg::ControlDeps;
use crate::dump::{Dump, HeapAccess, StmtId, Trace, VarId};

/// One kind of EPG vertex. Steps are indices within their trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vertex {
    /// A program statement `l` (shared by all traces).
    Stmt(StmtId),
    /// `⟨v@i⟩`: the value step `i` assigned to `v ∈ DEF(l_i)`.
    Def { trace: u32, step: u32, var: VarId },
    /// `⟨#@i⟩`: the value computed by a step that defines nothing.
    Value { trace: u32, step: u32 },
    /// `⟨x@i⟩`: formal `x` of the callee frame `frame`, bound when call step `i` entered it.
    Arg {
        trace: u32,
        step: u32,
        frame: u32,
        var: VarId,
    },
    /// `⟨this@i⟩`: the receiver bound when call step `i` entered callee frame `frame`.
    This { trace: u32, step: u32, frame: u32 },
}

/// Which steps of which trace to process (after selection and compression).
#[derive(Debug, Clone)]
pub struct TraceView {
    /// Index into `dump.traces`.
    pub trace: usize,
    /// Original step indices to keep, increasing. `None` = every step.
    pub keep: Option<Vec<u32>>,
}

/// A relation of premises: flat rows of `arity` u32 values.
#[derive(Debug, Clone)]
pub struct Rel {
    pub name: &'static str,
    pub arity: usize,
    pub rows: Vec<u32>,
}

/// Symbol ids used in symbol columns. Statements are `0..n_stmts`; then `#` and `this`; then
/// variables **scoped by method** (`x` in `f` and `x` in `g` are different symbols, named
/// `f::x` and `g::x` when handed to the Datalog engine).
#[derive(Debug, Clone, Default)]
pub struct SymbolLayout {
    pub n_stmts: u32,
    /// (method, variable) of each scoped variable symbol, in id order.
    pub scoped: Vec<(u32, VarId)>,
    index: FxHashMap<(u32, VarId), u32>,
}

impl SymbolLayout {
    pub fn stmt(&self, s: StmtId) -> u32 {
        s
    }
    pub fn hash(&self) -> u32 {
        self.n_stmts
    }
    pub fn this(&self) -> u32 {
        self.n_stmts + 1
    }
    /// The symbol of variable `v` of method `m` (allocated on first use).
    pub fn var(&mut self, m: u32, v: VarId) -> u32 {
        let next = self.n_stmts + 2 + self.scoped.len() as u32;
        *self.index.entry((m, v)).or_insert_with(|| {
            self.scoped.push((m, v));
            next
        })
    }
    pub fn len(&self) -> u32 {
        self.n_stmts + 2 + self.scoped.len() as u32
    }
    pub fn is_empty(&self) -> bool {
        false
    }
    /// The name of a symbol (for handing symbols to the Datalog engine).
    pub fn name(&self, dump: &Dump, sym: u32) -> String {
        if sym < self.n_stmts {
            dump.stmts[sym as usize].id.clone()
        } else if sym == self.hash() {
            "#".to_owned()
        } else if sym == self.this() {
            "this".to_owned()
        } else {
            let (m, v) = self.scoped[(sym - self.n_stmts - 2) as usize];
            format!("{}::{}", dump.methods[m as usize].id, dump.vars.name(v))
        }
    }
}

/// Where a global step id comes from.
#[derive(Debug, Clone, Copy)]
pub struct StepOrigin {
    pub trace: u32,
    pub index: u32,
}

/// Output of the forward pass.
#[derive(Debug, Clone)]
pub struct Premises {
    pub symbols: SymbolLayout,
    pub vertices: Vec<Vertex>,
    pub steps: Vec<StepOrigin>,
    pub rels: Vec<Rel>,
    /// Global step id of each failing trace's failure point, with the trace index.
    pub failure_points: Vec<(usize, u32)>,
}

impl Premises {
    pub fn rel(&self, name: &str) -> &Rel {
        self.rels
            .iter()
            .find(|r| r.name == name)
            .expect("known relation")
    }
}

/// The relations the forward pass produces, with their column types (`u` unsigned, `s` symbol).
pub const RELATIONS: &[(&str, &str)] = &[
    ("step", "us"),
    ("ctx", "uu"),
    ("stmt_vertex", "su"),
    ("vd", "usu"),
    ("va", "usu"),
    ("def", "ss"),
    ("use", "ss"),
    ("lastdef", "usuu"),
    ("lastctrl", "uu"),
    ("open", "u"),
    ("close", "u"),
    ("stktop", "uu"),
    ("isarg", "us"),
    ("isrcvobj", "us"),
    ("map", "ussu"),
    ("lastdef_close", "usuu"),
    ("rdfinverse", "ss"),
    ("copy", "s"),
    ("heapdef", "usuu"),
    ("nested", "uu"),
];

struct Out {
    rels: Vec<Vec<u32>>,
}

impl Out {
    #[inline]
    fn push(&mut self, r: usize, row: &[u32]) {
        self.rels[r].extend_from_slice(row);
    }

    /// Sorts the rows of relation `r` (arity `N`) pushed since it had `from` values, so that
    /// the rows of one step come in column order: then the whole relation is sorted (steps
    /// are pushed in increasing order) and the rule engine need not sort it again.
    #[inline]
    fn sort_since<const N: usize>(&mut self, r: usize, from: usize) {
        let tail = &mut self.rels[r][from..];
        if tail.len() > N {
            let (rows, _) = tail.as_chunks_mut::<N>();
            rows.sort_unstable();
        }
    }
}

// Relation indices in RELATIONS order.
const STEP: usize = 0;
const CTX: usize = 1;
const STMT_VERTEX: usize = 2;
const VD: usize = 3;
const VA: usize = 4;
const DEF: usize = 5;
const USE: usize = 6;
const LASTDEF: usize = 7;
const LASTCTRL: usize = 8;
const OPEN: usize = 9;
const CLOSE: usize = 10;
const STKTOP: usize = 11;
const ISARG: usize = 12;
const ISRCVOBJ: usize = 13;
const MAP: usize = 14;
const LASTDEF_CLOSE: usize = 15;
const RDFINVERSE: usize = 16;
const COPY: usize = 17;
const HEAPDEF: usize = 18;
const NESTED: usize = 19;

/// A formal bound at a call step: (variable, (global step of the call, argument vertex)).
type Binding = (VarId, (u32, u32));

struct FrameState {
    frame: u32,
    gframe: u32,
    /// var → (global step of the definition, vertex)
    defs: FxHashMap<VarId, (u32, u32)>,
    /// controller statement → last global step that executed it in this frame
    last_exec: FxHashMap<StmtId, u32>,
    last_step: u32,
    call_gid: Option<u32>,
    /// The callee's receiver formal, if any (LASTDEF(this) at close).
    this_var: Option<VarId>,
    /// Formals bound at entry (LASTDEF at close is reported for these only).
    formals: Vec<VarId>,
    method: u32,
    /// Heap mutations of this frame's latest step, (object, global step, vertex): they count
    /// as the objects' last mutations once the frame moves on (its next step or its close).
    /// A call step's definitions stand for the values after its callees ran, so a use inside
    /// a callee must not link to them (that would be a cycle).
    heap_pending: Vec<(u64, u32, u32)>,
    /// Argument vertices of callees that the same call step opens after this frame, for
    /// formals bound to no named actual (a nested call's result, `f(g(x))`): `nested` rows at
    /// this frame's close.
    later_args: Vec<u32>,
}

impl FrameState {
    /// Makes this frame's pending heap mutations the objects' last ones.
    fn settle_heap(&mut self, mutated: &mut FxHashMap<u64, (u32, u32)>) {
        for (obj, gid, v) in self.heap_pending.drain(..) {
            mutated.insert(obj, (gid, v));
        }
    }
}

/// Runs the forward pass over the given traces, with the heap accesses of the dump.
pub fn forward(dump: &Dump, cd: &ControlDeps, views: &[TraceView]) -> Premises {
    forward_with(dump, cd, views, true)
}

/// The forward pass; `heap`: compute `heapdef` from the traces' heap accesses (`heap.facts`),
/// else leave it empty (the name-only model).
///
/// `heapdef(i, u, j, w)`: `u ∈ USE(l_i)` referred at step `i` to an object that step `j` (any
/// frame of the trace, kept by compression) mutated last, through its variable `x ∈ DEF(l_j)`,
/// `w = ⟨x@j⟩`; only when that is not already `LASTDEF(u, t_i)`.
pub fn forward_with(dump: &Dump, cd: &ControlDeps, views: &[TraceView], heap: bool) -> Premises {
    let mut pass = Pass::new(dump, cd, views);
    pass.static_relations();
    for view in views {
        pass.trace(view, heap);
    }
    pass.finish()
}

/// What the forward pass has computed so far, over all traces.
struct Pass<'a> {
    dump: &'a Dump,
    cd: &'a ControlDeps,
    layout: SymbolLayout,
    out: Out,
    vertices: Vec<Vertex>,
    /// Statement → its vertex (`u32::MAX` until the statement first runs).
    stmt_vertex: Vec<u32>,
    steps: Vec<StepOrigin>,
    failure_points: Vec<(usize, u32)>,
    /// Global frame id of the current trace's frame 0.
    gframe_base: u32,
    /// Per statement: the symbols of its uses and definitions, filled at the first point where
    /// the pass asks for each (so symbols are allocated in the same order as without the cache).
    use_syms: Vec<Vec<u32>>,
    def_syms: Vec<Vec<u32>>,
    /// Frame states to reuse (their maps keep their capacity).
    pool: Vec<FrameState>,
}

/// The pass over one trace: its open frames and the cursors into its calls and heap rows.
struct Walk<'a> {
    tr: &'a Trace,
    t: u32,
    stack: Vec<FrameState>,
    calls: CallState,
    /// Heap: object → (global step, vertex) of its last kept mutation; a cursor into the rows.
    mutated: FxHashMap<u64, (u32, u32)>,
    heap_rows: &'a [HeapAccess],
    heap_at: usize,
}

/// The calls of one trace into traced code.
struct CallState {
    /// (call step, frame) sorted by call step (frames in id order), walked with a cursor as the
    /// kept steps increase.
    opens: Vec<(u32, u32)>,
    open_at: usize,
    /// Pending bindings of frames not yet entered: frame → [(var, (gid, vertex))].
    pending: FxHashMap<u32, Vec<Binding>>,
    /// Frame → argument vertices of the callees its call step opens after it (`nested`).
    later: FxHashMap<u32, Vec<u32>>,
}

impl<'a> Pass<'a> {
    fn new(dump: &'a Dump, cd: &'a ControlDeps, views: &[TraceView]) -> Pass<'a> {
        let mut out = Out {
            rels: vec![Vec::new(); RELATIONS.len()],
        };
        // Reserve the per-step relations for the steps to process (about one row per step each,
        // `lastdef` up to two; vertices: about one per step, two reserved), so that they do not
        // grow by copying. Capacity that is never written is never touched, so over-reserving
        // costs address space only.
        let n: usize = views
            .iter()
            .map(|v| match &v.keep {
                Some(k) => k.len(),
                None => dump.traces[v.trace].steps.len(),
            })
            .sum();
        for (r, rows_per_step) in [(STEP, 1), (CTX, 1), (VD, 1), (LASTDEF, 2), (LASTCTRL, 1)] {
            let arity = RELATIONS[r].1.len();
            out.rels[r].reserve(n * rows_per_step * arity + 1024);
        }
        Pass {
            dump,
            cd,
            layout: SymbolLayout {
                n_stmts: dump.stmts.len() as u32,
                ..SymbolLayout::default()
            },
            out,
            vertices: Vec::with_capacity(2 * n + 1024),
            stmt_vertex: vec![u32::MAX; dump.stmts.len()],
            steps: Vec::with_capacity(n),
            failure_points: Vec::new(),
            gframe_base: 0,
            use_syms: dump.uses.iter().map(|u| vec![u32::MAX; u.len()]).collect(),
            def_syms: dump.defs.iter().map(|d| vec![u32::MAX; d.len()]).collect(),
            pool: Vec::new(),
        }
    }

    /// `DEF`, `USE`, `RDFINVERSE`, `COPY`.
    fn static_relations(&mut self) {
        let (dump, out, layout) = (self.dump, &mut self.out, &mut self.layout);
        for (s, ds) in dump.defs.iter().enumerate() {
            let m = dump.stmts[s].method;
            for &v in ds {
                let sym = layout.var(m, v);
                out.push(DEF, &[layout.stmt(s as u32), sym]);
            }
        }
        for (s, us) in dump.uses.iter().enumerate() {
            let m = dump.stmts[s].method;
            for &v in us {
                let sym = layout.var(m, v);
                out.push(USE, &[layout.stmt(s as u32), sym]);
            }
        }
        for (r, l) in self.cd.rdfinverse() {
            out.push(RDFINVERSE, &[layout.stmt(r), layout.stmt(l)]);
        }
        for (s, _) in dump.copy.iter().enumerate().filter(|c| *c.1) {
            out.push(COPY, &[layout.stmt(s as u32)]);
        }
    }

    /// The kept steps of one trace, in order. The whole trace: the failure step marks the
    /// failing value, not the end of the trace (a failing `assert f(x) == y` is a call step;
    /// f's steps follow it).
    fn trace(&mut self, view: &TraceView, heap: bool) {
        let dump = self.dump;
        let tr = &dump.traces[view.trace];
        let end = tr.steps.len();
        let mut opens: Vec<(u32, u32)> = tr
            .frames
            .iter()
            .enumerate()
            .filter_map(|(f, fr)| fr.call_step.map(|c| (c, f as u32)))
            .collect();
        opens.sort_unstable();
        let mut w = Walk {
            tr,
            t: view.trace as u32,
            stack: Vec::new(),
            calls: CallState {
                opens,
                open_at: 0,
                pending: FxHashMap::default(),
                later: FxHashMap::default(),
            },
            mutated: FxHashMap::default(),
            heap_rows: if heap { &tr.heap } else { &[] },
            heap_at: 0,
        };
        let failure_step = dump.failure_step(tr);
        let all: Vec<u32>;
        let keep: &[u32] = match &view.keep {
            Some(k) => k,
            None => {
                all = (0..end as u32).collect();
                &all
            }
        };
        for &idx in keep {
            if idx as usize >= end {
                break;
            }
            let gid = self.step(&mut w, idx);
            if failure_step == Some(idx) {
                self.failure_points.push((view.trace, gid));
            }
        }
        while let Some(f) = w.stack.pop() {
            close_frame(&mut self.out, &mut self.layout, &f);
            self.pool.push(f);
        }
        self.gframe_base += tr.frames.len() as u32;
    }

    /// One kept step `idx` of the walk's trace; returns its global id.
    fn step(&mut self, w: &mut Walk, idx: u32) -> u32 {
        let step = w.tr.steps[idx as usize];
        let gid = self.steps.len() as u32;
        self.steps.push(StepOrigin {
            trace: w.t,
            index: idx,
        });
        let l = step.stmt;
        self.enter(w, step.frame);
        let cm = self.dump.stmts[l as usize].method;
        let top = w.stack.last_mut().expect("a frame is open");
        top.settle_heap(&mut w.mutated);
        top.last_step = gid;
        self.out.push(STEP, &[gid, self.layout.stmt(l)]);
        self.out.push(CTX, &[gid, top.gframe]);
        if self.stmt_vertex[l as usize] == u32::MAX {
            let v = self.vertices.len() as u32;
            self.stmt_vertex[l as usize] = v;
            self.vertices.push(Vertex::Stmt(l));
            self.out.push(STMT_VERTEX, &[self.layout.stmt(l), v]);
        }
        self.uses(top, gid, l, cm);
        let step_heap = step_heap(w.heap_rows, &mut w.heap_at, idx);
        self.heap_links(top, &w.mutated, step_heap, gid, cm);
        self.last_ctrl(top, gid, l);
        self.calls(w.tr, w.t, &mut w.calls, gid, idx, l);
        let top = w.stack.last_mut().expect("a frame is open");
        self.defs(top, step_heap, w.t, gid, idx, l);
        if self.cd.is_controller[l as usize] {
            top.last_exec.insert(l, gid);
        }
        gid
    }

    /// Frame transitions before a step of `frame`: returns (pops) and entries (pushes).
    fn enter(&mut self, w: &mut Walk, frame: u32) {
        if w.stack.last().map(|f| f.frame) == Some(frame) {
            return;
        }
        if let Some(pos) = w.stack.iter().rposition(|f| f.frame == frame) {
            self.pop_above(w, pos);
            return;
        }
        let fr = &w.tr.frames[frame as usize];
        if let Some(c) = fr.call_step {
            // pop returned frames above the caller
            let caller = w.tr.steps[c as usize].frame;
            if let Some(pos) = w.stack.iter().rposition(|f| f.frame == caller) {
                self.pop_above(w, pos);
            }
        }
        let mut fs = self.pool.pop().unwrap_or_else(|| FrameState {
            frame: 0,
            gframe: 0,
            defs: FxHashMap::default(),
            last_exec: FxHashMap::default(),
            last_step: 0,
            call_gid: None,
            this_var: None,
            formals: Vec::new(),
            method: 0,
            heap_pending: Vec::new(),
            later_args: Vec::new(),
        });
        fs.later_args.clear();
        if let Some(a) = w.calls.later.remove(&frame) {
            fs.later_args = a;
        }
        fs.defs.clear();
        fs.formals.clear();
        fs.heap_pending.clear();
        fs.last_exec.clear();
        fs.frame = frame;
        fs.gframe = self.gframe_base + frame;
        fs.call_gid = None;
        fs.this_var = self.dump.methods[fr.method as usize].this_formal;
        fs.method = fr.method;
        if let Some(binds) = w.calls.pending.remove(&frame) {
            for (v, dv) in binds {
                fs.call_gid = Some(dv.0);
                fs.defs.insert(v, dv);
                fs.formals.push(v);
            }
        }
        if fs.call_gid.is_none() {
            // A frame with no formals still knows its call step.
            fs.call_gid = fr.call_step.and_then(|c| call_gid_of(&self.steps, w.t, c));
        }
        w.stack.push(fs);
    }

    /// Closes the frames above stack position `pos`.
    fn pop_above(&mut self, w: &mut Walk, pos: usize) {
        while w.stack.len() > pos + 1 {
            let mut f = w.stack.pop().unwrap();
            f.settle_heap(&mut w.mutated);
            close_frame(&mut self.out, &mut self.layout, &f);
            self.pool.push(f);
        }
    }

    /// Uses: `LASTDEF` in the current context (read before this step's own definitions).
    fn uses(&mut self, top: &FrameState, gid: u32, l: StmtId, cm: u32) {
        let from = self.out.rels[LASTDEF].len();
        for (k, &u) in self.dump.uses[l as usize].iter().enumerate() {
            if let Some(&(j, w)) = top.defs.get(&u) {
                let cached = &mut self.use_syms[l as usize][k];
                if *cached == u32::MAX {
                    *cached = self.layout.var(cm, u);
                }
                self.out.push(LASTDEF, &[gid, *cached, j, w]);
            }
        }
        self.out.sort_since::<4>(LASTDEF, from);
    }

    /// Heap uses: the last mutation of the object, unless `LASTDEF` already links it.
    fn heap_links(
        &mut self,
        top: &FrameState,
        mutated: &FxHashMap<u64, (u32, u32)>,
        step_heap: &[HeapAccess],
        gid: u32,
        cm: u32,
    ) {
        let mut links: Vec<[u32; 4]> = Vec::new();
        for h in step_heap.iter().filter(|h| !h.def) {
            if let Some(&(j, w)) = mutated.get(&h.obj) {
                if top.defs.get(&h.var).map(|d| d.1) != Some(w) {
                    links.push([gid, self.layout.var(cm, h.var), j, w]);
                }
            }
        }
        links.sort_unstable();
        links.dedup();
        for row in &links {
            self.out.push(HEAPDEF, row);
        }
    }

    /// `LASTCTRL`: the most recent controller of `l` executed in this context.
    fn last_ctrl(&mut self, top: &FrameState, gid: u32, l: StmtId) {
        let mut lc: Option<u32> = None;
        for &r in &self.cd.parents[l as usize] {
            if let Some(&j) = top.last_exec.get(&r) {
                lc = Some(lc.map_or(j, |x: u32| x.max(j)));
            }
        }
        if let Some(j) = lc {
            self.out.push(LASTCTRL, &[gid, j]);
        }
    }

    /// Calls into traced code at step `idx` (global `gid`, statement `l`): `V_i^a`, `OPEN`,
    /// `ISARG`, `ISRCVOBJ`, `MAP`; the callees' bindings wait in `calls.pending`.
    fn calls(&mut self, tr: &Trace, t: u32, calls: &mut CallState, gid: u32, idx: u32, l: StmtId) {
        let opens = &calls.opens;
        while calls.open_at < opens.len() && opens[calls.open_at].0 < idx {
            calls.open_at += 1;
        }
        let first_open = calls.open_at;
        while calls.open_at < opens.len() && opens[calls.open_at].0 == idx {
            calls.open_at += 1;
        }
        if first_open == calls.open_at {
            return;
        }
        self.out.push(OPEN, &[gid]);
        // argument vertices without a named actual, per callee in call order
        let mut unbound: Vec<(u32, Vec<u32>)> = Vec::new();
        for &(_, f) in &opens[first_open..calls.open_at] {
            let (binds, free) = self.callee(tr, t, gid, idx, l, f);
            unbound.push((f, free));
            calls.pending.insert(f, binds);
        }
        for k in 0..unbound.len().saturating_sub(1) {
            let after: Vec<u32> = unbound[k + 1..]
                .iter()
                .flat_map(|u| u.1.iter().copied())
                .collect();
            if !after.is_empty() {
                calls.later.insert(unbound[k].0, after);
            }
        }
    }

    /// One callee frame `f` opened by step `idx`: its argument vertices, the premises of its
    /// actuals, its bindings and its argument vertices bound to no named actual.
    fn callee(
        &mut self,
        tr: &Trace,
        t: u32,
        gid: u32,
        idx: u32,
        l: StmtId,
        f: u32,
    ) -> (Vec<Binding>, Vec<u32>) {
        let dump = self.dump;
        let cm = dump.stmts[l as usize].method;
        let fm = tr.frames[f as usize].method;
        let m = &dump.methods[fm as usize];
        let mut binds: Vec<Binding> = Vec::new();
        let mut formal_vertex: FxHashMap<VarId, u32> = FxHashMap::default();
        for &x in &m.formals {
            let v = self.vertices.len() as u32;
            self.vertices.push(Vertex::Arg {
                trace: t,
                step: idx,
                frame: f,
                var: x,
            });
            let sym = self.layout.var(fm, x);
            self.out.push(VA, &[gid, sym, v]);
            formal_vertex.insert(x, v);
            binds.push((x, (gid, v)));
        }
        let this_v = m.this_formal.map(|x| {
            let v = self.vertices.len() as u32;
            self.vertices.push(Vertex::This {
                trace: t,
                step: idx,
                frame: f,
            });
            self.out.push(VA, &[gid, self.layout.this(), v]);
            binds.push((x, (gid, v)));
            (x, v)
        });
        let mut pairs: Vec<(VarId, VarId)> = Vec::new();
        match tr.binds.get(&(idx, f)) {
            Some(b) => pairs.extend_from_slice(b),
            None => {
                for &(k, a) in &dump.actuals[l as usize] {
                    if let Some(&x) = m.formals.get(k as usize) {
                        pairs.push((x, a));
                    }
                }
                if let (Some((x, _)), Some(r)) = (this_v, dump.receiver[l as usize]) {
                    pairs.push((x, r));
                }
            }
        }
        for &(x, a) in &pairs {
            let asym = self.layout.var(cm, a);
            if this_v.map(|(tx, _)| tx) == Some(x) {
                self.out.push(ISRCVOBJ, &[gid, asym]);
            } else if let Some(&wv) = formal_vertex.get(&x) {
                let xsym = self.layout.var(fm, x);
                self.out.push(ISARG, &[gid, asym]);
                self.out.push(MAP, &[gid, asym, xsym, wv]);
            }
        }
        let free = m
            .formals
            .iter()
            .filter(|x| !pairs.iter().any(|p| p.0 == **x))
            .map(|x| formal_vertex[x])
            .collect();
        (binds, free)
    }

    /// Definitions: `V_i^d` (a step that defines nothing has its value vertex `⟨#@i⟩`); the
    /// heap mutations through them wait in the frame until it moves on.
    fn defs(
        &mut self,
        top: &mut FrameState,
        step_heap: &[HeapAccess],
        t: u32,
        gid: u32,
        idx: u32,
        l: StmtId,
    ) {
        let ds = &self.dump.defs[l as usize];
        if ds.is_empty() {
            let v = self.vertices.len() as u32;
            self.vertices.push(Vertex::Value {
                trace: t,
                step: idx,
            });
            self.out.push(VD, &[gid, self.layout.hash(), v]);
            return;
        }
        let cm = self.dump.stmts[l as usize].method;
        let from = self.out.rels[VD].len();
        for (k, &d) in ds.iter().enumerate() {
            let v = self.vertices.len() as u32;
            self.vertices.push(Vertex::Def {
                trace: t,
                step: idx,
                var: d,
            });
            let cached = &mut self.def_syms[l as usize][k];
            if *cached == u32::MAX {
                *cached = self.layout.var(cm, d);
            }
            self.out.push(VD, &[gid, *cached, v]);
            top.defs.insert(d, (gid, v));
            for h in step_heap.iter().filter(|h| h.def && h.var == d) {
                top.heap_pending.push((h.obj, gid, v));
            }
        }
        self.out.sort_since::<3>(VD, from);
    }

    fn finish(self) -> Premises {
        let rels = RELATIONS
            .iter()
            .zip(self.out.rels)
            .map(|(&(name, cols), rows)| Rel {
                name,
                arity: cols.len(),
                rows,
            })
            .collect();
        Premises {
            symbols: self.layout,
            vertices: self.vertices,
            steps: self.steps,
            rels,
            failure_points: self.failure_points,
        }
    }
}

/// The heap rows of step `idx` (rows of steps compression dropped are passed over); `at` is
/// the cursor, left after them.
fn step_heap<'h>(rows: &'h [HeapAccess], at: &mut usize, idx: u32) -> &'h [HeapAccess] {
    while *at < rows.len() && rows[*at].step < idx {
        *at += 1;
    }
    let first = *at;
    while *at < rows.len() && rows[*at].step == idx {
        *at += 1;
    }
    &rows[first..*at]
}

/// The global id of local step `c` of trace `t` if it was kept (binary search over kept steps).
fn call_gid_of(steps: &[StepOrigin], t: u32, c: u32) -> Option<u32> {
    let start = steps.partition_point(|s| s.trace < t);
    let slice = &steps[start..];
    let pos = slice.partition_point(|s| s.trace == t && s.index < c);
    (slice.get(pos).is_some_and(|s| s.trace == t && s.index == c)).then_some((start + pos) as u32)
}

fn close_frame(out: &mut Out, layout: &mut SymbolLayout, f: &FrameState) {
    let Some(c) = f.call_gid else { return };
    let i = f.last_step;
    out.push(CLOSE, &[i]);
    out.push(STKTOP, &[i, c]);
    for &a in &f.later_args {
        out.push(NESTED, &[i, a]);
    }
    // LASTDEF of the formals (and receiver) at the close: bound at the call step c, or redefined.
    for &v in &f.formals {
        let (j, w) = f.defs[&v];
        if Some(v) == f.this_var {
            out.push(LASTDEF_CLOSE, &[i, layout.this(), j, w]);
        } else {
            let sym = layout.var(f.method, v);
            out.push(LASTDEF_CLOSE, &[i, sym, j, w]);
        }
    }
}
