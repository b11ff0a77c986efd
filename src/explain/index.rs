//! Execution indexing (seed 004 §2, spec `causal-seed-004.md` §2 and §8) and the alignment of
//! two runs built on it (seed 003 Def. 2 is the same alignment).
//!
//! **Dynamic control dependence** (seed 003 Def. 1): step `i` depends on the last earlier step
//! *of the same frame* whose statement `i`'s statement is statically control-dependent on
//! ([`crate::cdg`]); a step with none depends on the call step that opened its frame; the root
//! frame's such steps depend on nothing (the root `S`).
//!
//! **Index.** The index of step `i` is the index of its parent followed by the parent's
//! annotated label and `i`'s own label: `[S, 2T, 6T, 7]` is statement 7 inside the true branch of
//! the `if` at 6, inside the first iteration of the loop at 2. A loop test is control-dependent
//! on itself, so iteration `k+1` nests inside iteration `k`'s `T` node, as the paper's rule says.
//! Annotations: `T`/`F` for a branch parent, `C<k>` for the call step that opened the step's
//! frame (`k` counts the frames one call step opened: an opaque call may call back several
//! times), `X` for any other controller (a statement with an exceptional edge to a `catch`).
//!
//! **Interning.** Indices are never materialised as sequences (their total length is quadratic
//! in loop trip counts): a tree node is `(parent node, statement, annotation)`, interned to a
//! dense id; a step's index is the id of its leaf node. Two runs indexed by one [`Indexer`]
//! share node ids, so aligning them is a join on ids.
//!
//! Invariants: node 0 is the root; a node's parent id is smaller than its own; within one run
//! every step has a distinct leaf (a leaf that would repeat under one context gets an ordinal,
//! [`Ann::Leaf`]), so an index identifies at most one step of a run.

use rustc_hash::FxHashMap;

use crate::cdg::ControlDeps;
use crate::dump::{StmtId, Trace};

/// How a node hangs below its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ann {
    /// The parent node is a branch step that evaluated to true / false.
    True,
    False,
    /// The `k`-th frame (0-based) opened by a call step.
    Call(u32),
    /// Any other controller step (exceptional control dependence).
    Other,
    /// A step's own label; `k` > 0 only when the same statement ran again under one context.
    Leaf(u32),
}

/// An interned index-tree node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Node {
    pub parent: u32,
    pub stmt: StmtId,
    pub ann: Ann,
}

/// The root node's id.
pub const ROOT: u32 = 0;

/// Interns index-tree nodes; index every run that is to be aligned with one indexer.
#[derive(Debug, Default)]
pub struct Indexer {
    nodes: Vec<Node>,
    ids: FxHashMap<Node, u32>,
}

/// One run's execution indices.
#[derive(Debug, Clone)]
pub struct RunIndex {
    /// The dynamic control-dependence parent of each step (seed 003 Def. 1), `None` at the root.
    pub dep: Vec<Option<u32>>,
    /// The leaf node of each step: its execution index.
    pub leaf: Vec<u32>,
    /// Whether a step's parent is the call step that opened its frame (not a controller of its
    /// own frame).
    pub via_call: Vec<bool>,
}

impl Indexer {
    pub fn new() -> Self {
        let root = Node {
            parent: u32::MAX,
            stmt: StmtId::MAX,
            ann: Ann::Other,
        };
        Indexer {
            nodes: vec![root],
            ids: FxHashMap::default(),
        }
    }

    fn intern(&mut self, n: Node) -> u32 {
        let next = self.nodes.len() as u32;
        let id = *self.ids.entry(n).or_insert(next);
        if id == next {
            self.nodes.push(n);
        }
        id
    }

    pub fn node(&self, id: u32) -> Node {
        self.nodes[id as usize]
    }

    /// Indexes every step of `tr` (a trace of a dump, or a re-run's trace loaded against it).
    pub fn index(&mut self, cd: &ControlDeps, tr: &Trace) -> RunIndex {
        self.index_as(cd, tr, None)
    }

    /// Indexes `tr` with its statements labelled by `label` (another version's statement
    /// space, [`super::versions::labels`]); `cd` is `tr`'s own dump's.
    pub fn index_as(&mut self, cd: &ControlDeps, tr: &Trace, label: Option<&[StmtId]>) -> RunIndex {
        let lab = |s: StmtId| label.map_or(s, |l| l[s as usize]);
        let dep = dynamic_cd(cd, tr);
        let ordinal = frame_ordinals(tr);
        let n = tr.steps.len();
        let mut ctx_of: Vec<u32> = Vec::with_capacity(n);
        let mut leaf = Vec::with_capacity(n);
        let mut seen: FxHashMap<(u32, StmtId), u32> = FxHashMap::default();
        let mut via_call = Vec::with_capacity(n);
        for (i, s) in tr.steps.iter().enumerate() {
            via_call.push(dep[i].is_some_and(|p| tr.steps[p as usize].frame != s.frame));
            let ctx = match dep[i] {
                None => ROOT,
                Some(p) => {
                    let ps = tr.steps[p as usize];
                    // the call step that opened the frame (itself maybe a branch whose
                    // condition makes the call: its outcome comes after the callee's steps)
                    let ann = match tr.branch[p as usize] {
                        _ if ps.frame != s.frame => Ann::Call(ordinal[s.frame as usize]),
                        Some(true) => Ann::True,
                        Some(false) => Ann::False,
                        None => Ann::Other,
                    };
                    self.intern(Node {
                        parent: ctx_of[p as usize],
                        stmt: lab(ps.stmt),
                        ann,
                    })
                }
            };
            ctx_of.push(ctx);
            let k = seen.entry((ctx, lab(s.stmt))).or_insert(0);
            let node = Node {
                parent: ctx,
                stmt: lab(s.stmt),
                ann: Ann::Leaf(*k),
            };
            *k += 1;
            leaf.push(self.intern(node));
        }
        RunIndex {
            dep,
            leaf,
            via_call,
        }
    }

    /// The index of a node as the paper writes it: `[S, 2T, 6T, 7]`, each statement shown by
    /// `label` (e.g. its line).
    pub fn render(&self, id: u32, label: &dyn Fn(StmtId) -> String) -> String {
        let mut parts = Vec::new();
        let mut at = id;
        while at != ROOT {
            let n = self.nodes[at as usize];
            let suffix = match n.ann {
                Ann::True => "T".to_owned(),
                Ann::False => "F".to_owned(),
                Ann::Call(0) => "C".to_owned(),
                Ann::Call(k) => format!("C{k}"),
                Ann::Other => "X".to_owned(),
                Ann::Leaf(0) => String::new(),
                Ann::Leaf(k) => format!("#{k}"),
            };
            parts.push(format!("{}{suffix}", label(n.stmt)));
            at = n.parent;
        }
        parts.push("S".to_owned());
        parts.reverse();
        format!("[{}]", parts.join(", "))
    }
}

/// Seed 003 Def. 1 per frame: the last earlier step of the same frame whose statement the
/// step's statement is control-dependent on, else the call step that opened the frame.
pub fn dynamic_cd(cd: &ControlDeps, tr: &Trace) -> Vec<Option<u32>> {
    let mut last: FxHashMap<(u32, StmtId), u32> = FxHashMap::default();
    let mut dep = Vec::with_capacity(tr.steps.len());
    for (i, s) in tr.steps.iter().enumerate() {
        let in_frame = cd.parents[s.stmt as usize]
            .iter()
            .filter_map(|&r| last.get(&(s.frame, r)).copied())
            .max();
        dep.push(in_frame.or(tr.frames[s.frame as usize].call_step));
        if cd.is_controller[s.stmt as usize] {
            last.insert((s.frame, s.stmt), i as u32);
        }
    }
    dep
}

/// For each frame, how many frames its call step opened before it.
fn frame_ordinals(tr: &Trace) -> Vec<u32> {
    let mut count: FxHashMap<u32, u32> = FxHashMap::default();
    tr.frames
        .iter()
        .map(|f| match f.call_step {
            None => 0,
            Some(c) => {
                let k = count.entry(c).or_insert(0);
                *k += 1;
                *k - 1
            }
        })
        .collect()
}

/// Seed 003 Def. 2 / seed 004's join: for each step of `a`, the step of `b` with the same
/// execution index, if any. Both runs must come from one [`Indexer`].
pub fn align(a: &RunIndex, b: &RunIndex) -> Vec<Option<u32>> {
    let at: FxHashMap<u32, u32> = b
        .leaf
        .iter()
        .enumerate()
        .map(|(j, &l)| (l, j as u32))
        .collect();
    a.leaf.iter().map(|l| at.get(l).copied()).collect()
}

/// Whether step `e` is (transitively) dynamically control-dependent on the *outcome* of step
/// `on`: the steps of a call that `on`'s own condition makes hang below `on` but run before its
/// outcome exists, so they do not depend on it.
pub fn depends_on(idx: &RunIndex, e: u32, on: u32) -> bool {
    let mut child = e;
    while let Some(p) = idx.dep[child as usize] {
        if p == on {
            return !idx.via_call[child as usize];
        }
        if p < on {
            return false; // parents precede their children: `on` is not above
        }
        child = p;
    }
    false
}
