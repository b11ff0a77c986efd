//! Compressed (CSR) directed acyclic graph with parent and child adjacency.

use super::InferError;

/// A DAG over vertices `0..n`, stored as CSR arrays of parents and of children (each sorted and
/// free of duplicates), together with a topological order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dag {
    n: usize,
    par_off: Vec<usize>,
    par: Vec<u32>,
    ch_off: Vec<usize>,
    ch: Vec<u32>,
    /// For the j-th child entry (position in `ch`) of `u` with child `c`: the position of `u`
    /// in `c`'s parent list (index into `par`).
    ch_to_par: Vec<usize>,
    /// For each position in `par`: the matching position in `ch`.
    par_to_ch: Vec<usize>,
    topo: Vec<u32>,
}

impl Dag {
    /// Builds from (parent, child) edges; duplicate edges are merged; self-loops and cycles are an
    /// error naming one vertex on the cycle ([`InferError::Cycle`]); vertices must be `< n`.
    pub fn from_edges(n: usize, edges: &[(u32, u32)]) -> Result<Dag, InferError> {
        if n > u32::MAX as usize {
            return Err(InferError::BadParameter(format!(
                "{n} vertices do not fit in u32 vertex ids"
            )));
        }
        for (i, &(a, b)) in edges.iter().enumerate() {
            if a as usize >= n || b as usize >= n {
                return Err(InferError::VertexOutOfRange {
                    edge_index: i,
                    parent: a,
                    child: b,
                    n,
                });
            }
            if a == b {
                return Err(InferError::Cycle { vertex: a });
            }
        }
        // Parent CSR via counting sort by child, then sort + dedup each list.
        let mut par_off = vec![0usize; n + 1];
        for &(_, b) in edges {
            par_off[b as usize + 1] += 1;
        }
        for i in 0..n {
            par_off[i + 1] += par_off[i];
        }
        let mut fill = par_off.clone();
        let mut par = vec![0u32; edges.len()];
        for &(a, b) in edges {
            par[fill[b as usize]] = a;
            fill[b as usize] += 1;
        }
        // Sort and dedup per child, compacting in place.
        let mut new_off = vec![0usize; n + 1];
        let mut w = 0usize;
        for v in 0..n {
            let (s, e) = (par_off[v], par_off[v + 1]);
            par[s..e].sort_unstable();
            for i in s..e {
                if i == s || par[i] != par[i - 1] {
                    par[w] = par[i];
                    w += 1;
                }
            }
            new_off[v + 1] = w;
        }
        par.truncate(w);
        let par_off = new_off;
        let m = par.len();

        // Child CSR (children sorted because we scan children v in increasing order).
        let mut ch_off = vec![0usize; n + 1];
        for &u in &par {
            ch_off[u as usize + 1] += 1;
        }
        for i in 0..n {
            ch_off[i + 1] += ch_off[i];
        }
        let mut fill = ch_off.clone();
        let mut ch = vec![0u32; m];
        let mut ch_to_par = vec![0usize; m];
        let mut par_to_ch = vec![0usize; m];
        for v in 0..n {
            for pos in par_off[v]..par_off[v + 1] {
                let u = par[pos] as usize;
                let cpos = fill[u];
                fill[u] += 1;
                ch[cpos] = v as u32;
                ch_to_par[cpos] = pos;
                par_to_ch[pos] = cpos;
            }
        }

        // When ids already follow creation order (every parent id < child id, as in EPGs built
        // from traces) the identity is a topological order with the best memory locality.
        if (0..n).all(|v| {
            par[par_off[v]..par_off[v + 1]]
                .iter()
                .all(|&u| (u as usize) < v)
        }) {
            let topo = (0..n as u32).collect();
            return Ok(Dag {
                n,
                par_off,
                par,
                ch_off,
                ch,
                ch_to_par,
                par_to_ch,
                topo,
            });
        }
        // Kahn's algorithm, visiting ready vertices in id order: a vertex whose parents are all
        // placed is placed as soon as the scan reaches it, and one the scan has passed (a parent
        // with a larger id) right after its last parent. EPG ids follow trace time, so the order
        // stays close to it; inference relabels the graph by this order for memory locality
        // (a FIFO order scatters a deep recursion's vertices over the whole id range).
        let mut indeg: Vec<u32> = (0..n)
            .map(|v| (par_off[v + 1] - par_off[v]) as u32)
            .collect();
        let mut topo: Vec<u32> = Vec::with_capacity(n);
        let mut stack: Vec<u32> = Vec::new();
        for v in 0..n {
            if indeg[v] != 0 {
                continue;
            }
            stack.push(v as u32);
            while let Some(u) = stack.pop() {
                topo.push(u);
                let u = u as usize;
                for &c in ch[ch_off[u]..ch_off[u + 1]].iter().rev() {
                    indeg[c as usize] -= 1;
                    if indeg[c as usize] == 0 && (c as usize) < v {
                        stack.push(c);
                    }
                }
            }
        }
        if topo.len() < n {
            // Every remaining vertex has a remaining parent; walk parents until a repeat.
            let mut on_path = vec![false; n];
            let mut v = (0..n)
                .find(|&v| indeg[v] > 0)
                .expect("a vertex left by Kahn");
            loop {
                if on_path[v] {
                    return Err(InferError::Cycle { vertex: v as u32 });
                }
                on_path[v] = true;
                v = par[par_off[v]..par_off[v + 1]]
                    .iter()
                    .map(|&u| u as usize)
                    .find(|&u| indeg[u] > 0)
                    .expect("a vertex left by Kahn has a parent left by Kahn");
            }
        }
        Ok(Dag {
            n,
            par_off,
            par,
            ch_off,
            ch,
            ch_to_par,
            par_to_ch,
            topo,
        })
    }

    /// Number of vertices.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the graph has no vertices.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Number of (distinct) edges.
    pub fn num_edges(&self) -> usize {
        self.par.len()
    }

    /// Sorted parents of `v` (panics if `v >= len()`, like slice indexing).
    pub fn parents(&self, v: u32) -> &[u32] {
        let v = v as usize;
        &self.par[self.par_off[v]..self.par_off[v + 1]]
    }

    /// Sorted children of `v` (panics if `v >= len()`, like slice indexing).
    pub fn children(&self, v: u32) -> &[u32] {
        let v = v as usize;
        &self.ch[self.ch_off[v]..self.ch_off[v + 1]]
    }

    /// A topological order (parents before children): the identity when every edge goes from a
    /// smaller to a larger id, else one that stays close to the id order.
    pub fn topological_order(&self) -> &[u32] {
        &self.topo
    }

    /// Whether every edge goes from a smaller to a larger id (the identity is topological).
    pub fn ids_topological(&self) -> bool {
        self.topo.iter().enumerate().all(|(i, &v)| i == v as usize)
    }

    /// The same graph with vertex `topological_order()[k]` renamed `k`, so that ids are
    /// topological; returns it with that order (new id → old id).
    pub fn relabeled(&self) -> (Dag, Vec<u32>) {
        self.induced(&vec![true; self.n])
    }

    /// The subgraph induced by the vertices with `keep[v]`, renamed `0..` in topological order
    /// (so that its ids are topological); returns it with the renaming (new id → old id).
    pub fn induced(&self, keep: &[bool]) -> (Dag, Vec<u32>) {
        assert_eq!(keep.len(), self.n, "one flag per vertex");
        let order: Vec<u32> = self
            .topo
            .iter()
            .copied()
            .filter(|&v| keep[v as usize])
            .collect();
        let mut new_id = vec![u32::MAX; self.n];
        for (k, &v) in order.iter().enumerate() {
            new_id[v as usize] = k as u32;
        }
        let mut edges = Vec::with_capacity(self.par.len());
        for &v in &order {
            for &u in self.parents(v) {
                if keep[u as usize] {
                    edges.push((new_id[u as usize], new_id[v as usize]));
                }
            }
        }
        let dag = Dag::from_edges(order.len(), &edges).expect("a subgraph of a DAG is a DAG");
        (dag, order)
    }

    /// All edges as (parent, child), sorted by child then parent.
    pub fn edges(&self) -> Vec<(u32, u32)> {
        let mut out = Vec::with_capacity(self.par.len());
        for v in 0..self.n {
            for &u in &self.par[self.par_off[v]..self.par_off[v + 1]] {
                out.push((u, v as u32));
            }
        }
        out
    }

    /// All parent lists, concatenated (CSR values; `par_off` delimits them).
    pub(crate) fn par(&self) -> &[u32] {
        &self.par
    }
    /// All child lists, concatenated (CSR values; `ch_off` delimits them).
    pub(crate) fn ch(&self) -> &[u32] {
        &self.ch
    }
    pub(crate) fn par_off(&self) -> &[usize] {
        &self.par_off
    }
    pub(crate) fn ch_off(&self) -> &[usize] {
        &self.ch_off
    }
    pub(crate) fn ch_to_par(&self) -> &[usize] {
        &self.ch_to_par
    }
    pub(crate) fn par_to_ch(&self) -> &[usize] {
        &self.par_to_ch
    }
}
