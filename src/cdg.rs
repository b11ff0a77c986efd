//! Static control dependence (`RDFINVERSE`) per method.
//!
//! Computed from post-dominance frontiers (Cytron et al. 1991) on each method's CFG, extended
//! with a virtual `EXIT` node:
//! * statements without successors (returns, uncaught throws) flow to `EXIT`;
//! * **paper Fig. 6** — a back edge `s → h` whose natural loop has no normal edge leaving it from
//!   `h` or `s` (a syntactically infinite loop such as `while (true)`) gets a virtual edge
//!   `s → EXIT`, so that statements after an exit test inside the loop become control-dependent on it;
//! * **try/catch (paper §3.1.1)** — a `catch` statement (target of exceptional edges) is
//!   control-dependent on every statement with an exceptional edge to it, and every statement of its
//!   catch block (strictly dominated by it) is control-dependent on it instead of on the try block.
//!
//! Invariant: `parents[l]` lists the statements `l_r` with `l ∈ RDFINVERSE(l_r)`, all in `l`'s method.

use std::collections::{HashMap, HashSet};

use petgraph::algo::dominators::{simple_fast, Dominators};
use petgraph::graph::{DiGraph, NodeIndex};

use crate::dump::{Dump, StmtId};

/// Control dependence of every statement of a dump.
#[derive(Debug, Clone, Default)]
pub struct ControlDeps {
    /// `parents[l]` = statements `l` is control-dependent on.
    pub parents: Vec<Vec<StmtId>>,
    /// Whether some statement is control-dependent on `l` (it is a controller).
    pub is_controller: Vec<bool>,
}

impl ControlDeps {
    pub fn compute(dump: &Dump) -> ControlDeps {
        let n = dump.stmts.len();
        let mut parents: Vec<Vec<StmtId>> = vec![Vec::new(); n];
        let mut succs: Vec<Vec<(StmtId, bool)>> = vec![Vec::new(); n];
        for e in &dump.cfg {
            succs[e.from as usize].push((e.to, e.exceptional));
        }
        for m in &dump.methods {
            method_cd(dump, &m.stmts, m.entry, &succs, &mut parents);
        }
        let mut is_controller = vec![false; n];
        for ps in &mut parents {
            ps.sort_unstable();
            ps.dedup();
            for &p in ps.iter() {
                is_controller[p as usize] = true;
            }
        }
        ControlDeps {
            parents,
            is_controller,
        }
    }

    /// All `(l_r, l)` pairs with `l ∈ RDFINVERSE(l_r)`.
    pub fn rdfinverse(&self) -> impl Iterator<Item = (StmtId, StmtId)> + '_ {
        self.parents
            .iter()
            .enumerate()
            .flat_map(|(l, ps)| ps.iter().map(move |&r| (r, l as StmtId)))
    }
}

fn method_cd(
    dump: &Dump,
    stmts: &[StmtId],
    entry: StmtId,
    succs: &[Vec<(StmtId, bool)>],
    parents: &mut [Vec<StmtId>],
) {
    if stmts.is_empty() {
        return;
    }
    let local: HashMap<StmtId, usize> = stmts.iter().enumerate().map(|(i, &s)| (s, i)).collect();
    let k = stmts.len();
    let exit = k; // virtual exit node
    let mut edges: Vec<(usize, usize)> = Vec::new();
    let mut normal_succ: Vec<Vec<usize>> = vec![Vec::new(); k];
    let mut catch_sources: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, &s) in stmts.iter().enumerate() {
        let mut any = false;
        for &(t, exc) in &succs[s as usize] {
            let j = local[&t];
            edges.push((i, j));
            any = true;
            if exc {
                catch_sources.entry(j).or_default().push(i);
            } else {
                normal_succ[i].push(j);
            }
        }
        if !any {
            edges.push((i, exit));
        }
    }
    let entry_l = local[&entry];
    // Forward dominators from the entry (for back edges and catch blocks).
    let fwd = build(k + 1, &edges, false);
    let fdom = simple_fast(&fwd, NodeIndex::new(entry_l));

    // Paper Fig. 6: virtual exits for syntactically infinite loops.
    for i in 0..k {
        for &h in &normal_succ[i] {
            if !dump.loop_head[stmts[h] as usize] || !dominates(&fdom, h, i) {
                continue;
            }
            let body = natural_loop(&edges, k + 1, h, i);
            let leaves = |x: usize| normal_succ[x].iter().any(|&y| !body.contains(&y));
            if !leaves(h) && !leaves(i) {
                edges.push((i, exit));
            }
        }
    }
    // Any node that still cannot reach EXIT (an infinite loop with no recognised back edge)
    // gets a virtual edge, so post-dominance is defined everywhere.
    loop {
        let reach = reaches_exit(&edges, k + 1, exit);
        match (0..k).find(|&i| !reach[i]) {
            Some(i) => edges.push((i, exit)),
            None => break,
        }
    }
    let rev = build(k + 1, &edges, true);
    let pdom = simple_fast(&rev, NodeIndex::new(exit));
    let ipdom = |x: usize| {
        pdom.immediate_dominator(NodeIndex::new(x))
            .map(|n| n.index())
    };
    let mut cd: Vec<HashSet<usize>> = vec![HashSet::new(); k];
    for &(a, b) in &edges {
        if a == exit || b == exit {
            continue; // EXIT post-dominates everything
        }
        if b != a && dominates(&pdom, b, a) {
            continue; // b post-dominates a
        }
        let stop = ipdom(a);
        let mut runner = Some(b);
        while let Some(r) = runner {
            if Some(r) == stop || r == exit {
                break;
            }
            cd[r].insert(a);
            runner = ipdom(r);
        }
    }
    // try/catch (paper §3.1.1).
    for (&h, srcs) in &catch_sources {
        let tries: HashSet<usize> = srcs.iter().copied().collect();
        cd[h].extend(tries.iter().copied());
        for (x, cdx) in cd.iter_mut().enumerate() {
            if x != h && dominates(&fdom, h, x) {
                cdx.retain(|p| !tries.contains(p));
                cdx.insert(h);
            }
        }
    }
    for (x, ps) in cd.into_iter().enumerate() {
        parents[stmts[x] as usize].extend(ps.into_iter().map(|p| stmts[p]));
    }
}

fn build(n: usize, edges: &[(usize, usize)], reverse: bool) -> DiGraph<(), ()> {
    let mut g = DiGraph::with_capacity(n, edges.len());
    for _ in 0..n {
        g.add_node(());
    }
    for &(a, b) in edges {
        let (a, b) = if reverse { (b, a) } else { (a, b) };
        g.add_edge(NodeIndex::new(a), NodeIndex::new(b), ());
    }
    g
}

/// Does `a` dominate `b` (reflexive)? Unreachable nodes are dominated by nothing.
fn dominates(d: &Dominators<NodeIndex>, a: usize, b: usize) -> bool {
    match d.dominators(NodeIndex::new(b)) {
        Some(mut it) => it.any(|x| x.index() == a),
        None => false,
    }
}

/// Natural loop of back edge `latch → head`: head plus every node reaching latch without passing head.
fn natural_loop(edges: &[(usize, usize)], n: usize, head: usize, latch: usize) -> HashSet<usize> {
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(a, b) in edges {
        preds[b].push(a);
    }
    let mut body: HashSet<usize> = HashSet::from([head, latch]);
    let mut work = vec![latch];
    while let Some(x) = work.pop() {
        if x == head {
            continue;
        }
        for &p in &preds[x] {
            if body.insert(p) {
                work.push(p);
            }
        }
    }
    body
}

fn reaches_exit(edges: &[(usize, usize)], n: usize, exit: usize) -> Vec<bool> {
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(a, b) in edges {
        preds[b].push(a);
    }
    let mut seen = vec![false; n];
    seen[exit] = true;
    let mut work = vec![exit];
    while let Some(x) = work.pop() {
        for &p in &preds[x] {
            if !seen[p] {
                seen[p] = true;
                work.push(p);
            }
        }
    }
    seen
}
