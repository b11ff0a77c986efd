//! Trace compression — the paper's Algorithm 1 (COMPRESS with IsLoop), in linear time per loop head.
//!
//! A loop is a run of consecutive iterations of a loop entry point `l` (a `loop_head` statement)
//! in one frame whose statement sequences repeat with a period of `P` iterations (`P` ≤ 8). Of a
//! run of at least `max(γ, 2P + 1)` iterations (γ = 3) only the last two periods before the run's
//! end are kept (σ = t_{i_b−2L} … t_{i_b−1} in Algorithm 1), which preserves the dependencies of
//! entering and of exiting the loop. Loop heads are processed in decreasing order of occurrences
//! (inner loops first), as in Algorithm 1; each pass works on the already compressed trace.
//!
//! IsLoop is decided on iteration hashes: a 64-bit polynomial hash of each iteration's statement
//! sequence (O(1) per iteration from prefix hashes, KMP-style periodic matching over iterations),
//! then the removed run is verified statement by statement, so a hash collision can never remove
//! non-repeating steps. Two occurrences in the same frame bracket a balanced piece of trace
//! (stack discipline), so removing whole iterations never breaks frames.
//!
//! Invariant: the result is an increasing subsequence of the step indices that keeps the first
//! step and every step from the last kept iteration of each loop run to the end (in particular the
//! failure point).

use crate::dump::{Dump, Trace};

/// Minimum number of iterations of a run before it is compressed (γ of Algorithm 1).
pub const GAMMA: usize = 3;
/// Largest repetition period, in iterations, that IsLoop looks for.
pub const MAX_PERIOD: usize = 8;

const BASE: u64 = 0x100000001b3;

/// Compresses steps `0..end` of `trace`, never removing step `pin`; returns the kept step indices.
pub fn compress(dump: &Dump, trace: &Trace, end: usize, pin: Option<u32>) -> Vec<u32> {
    let mut keep: Vec<u32> = (0..end as u32).collect();
    // loop heads ordered by decreasing number of occurrences
    let mut counts: Vec<(usize, u32)> = Vec::new();
    {
        let mut c = vec![0usize; dump.stmts.len()];
        for s in &trace.steps[..end] {
            if dump.loop_head[s.stmt as usize] {
                c[s.stmt as usize] += 1;
            }
        }
        for (s, &n) in c.iter().enumerate() {
            if n > GAMMA {
                counts.push((n, s as u32));
            }
        }
        counts.sort_unstable_by(|a, b| b.cmp(a));
    }
    let mut prefix: Vec<u64> = Vec::new();
    let mut pow: Vec<u64> = Vec::new();
    for &(_, l) in &counts {
        rebuild_hashes(trace, &keep, &mut prefix, &mut pow);
        let occ: Vec<usize> = keep
            .iter()
            .enumerate()
            .filter(|(_, &i)| trace.steps[i as usize].stmt == l)
            .map(|(p, _)| p)
            .collect();
        if occ.len() <= GAMMA {
            continue;
        }
        let mut remove = vec![false; keep.len()];
        let mut any = false;
        // iterations: [occ[k], occ[k+1]) when both in the same frame
        let frame = |p: usize| trace.steps[keep[p] as usize].frame;
        let mut k = 0;
        while k + 1 < occ.len() {
            // maximal chain of consecutive occurrences in one frame: occ[k..=e]
            let mut e = k;
            while e + 1 < occ.len() && frame(occ[e + 1]) == frame(occ[k]) {
                e += 1;
            }
            if e - k >= GAMMA {
                let its: Vec<(u64, usize, usize)> = (k..e)
                    .map(|j| {
                        (
                            seg_hash(&prefix, &pow, occ[j], occ[j + 1]),
                            occ[j],
                            occ[j + 1],
                        )
                    })
                    .collect();
                let pinned = pin.and_then(|p| keep.binary_search(&p).ok());
                any |= compress_chain(trace, &keep, &its, &mut remove, pinned);
            }
            k = e + 1;
        }
        if any {
            let mut i = 0;
            keep.retain(|_| {
                let r = !remove[i];
                i += 1;
                r
            });
        }
    }
    keep
}

/// Finds periodic runs in one chain of iterations and marks the removed steps. Returns whether
/// anything was removed.
fn compress_chain(
    trace: &Trace,
    keep: &[u32],
    its: &[(u64, usize, usize)],
    remove: &mut [bool],
    pinned: Option<usize>,
) -> bool {
    let n = its.len();
    let mut any = false;
    let mut a = 0;
    while a < n {
        // smallest period P with a long enough run starting at a
        let mut best: Option<(usize, usize)> = None; // (P, run end exclusive, in iterations)
        for p in 1..=MAX_PERIOD {
            if a + p >= n {
                break;
            }
            let mut b = a + p;
            while b < n
                && its[b].0 == its[b - p].0
                && its[b].2 - its[b].1 == its[b - p].2 - its[b - p].1
            {
                b += 1;
            }
            // whole periods only
            let len = (b - a) / p * p;
            if len >= GAMMA.max(2 * p + 1) {
                best = Some((p, a + len));
                break;
            }
        }
        match best {
            Some((p, b)) => {
                // remove iterations a .. b-2p (keep the last two periods)
                let first = its[a].1;
                let last = its[b - 2 * p].1; // exclusive: start of the first kept iteration
                let hits_pin = pinned.is_some_and(|q| (first..last).contains(&q));
                if !hits_pin && verify(trace, keep, first, its[a + p].1, last) {
                    for r in &mut remove[first..last] {
                        *r = true;
                    }
                    any = true;
                }
                a = b;
            }
            None => a += 1,
        }
    }
    any
}

/// Checks that steps [first, last) repeat with period (second - first) exactly (statement ids).
fn verify(trace: &Trace, keep: &[u32], first: usize, second: usize, last: usize) -> bool {
    let period = second - first;
    (first + period..last + 2 * period).all(|i| {
        i >= keep.len()
            || trace.steps[keep[i] as usize].stmt == trace.steps[keep[i - period] as usize].stmt
    })
}

fn rebuild_hashes(trace: &Trace, keep: &[u32], prefix: &mut Vec<u64>, pow: &mut Vec<u64>) {
    prefix.clear();
    prefix.push(0);
    let mut h = 0u64;
    for &i in keep {
        let x = trace.steps[i as usize].stmt as u64 + 1;
        h = h
            .wrapping_mul(BASE)
            .wrapping_add(x.wrapping_mul(0x9E3779B97F4A7C15));
        prefix.push(h);
    }
    if pow.len() < keep.len() + 1 {
        pow.clear();
        pow.push(1);
        for i in 0..keep.len() {
            let p = pow[i].wrapping_mul(BASE);
            pow.push(p);
        }
    }
}

/// Hash of kept positions [a, b).
fn seg_hash(prefix: &[u64], pow: &[u64], a: usize, b: usize) -> u64 {
    prefix[b].wrapping_sub(prefix[a].wrapping_mul(pow[b - a]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dump::{Frame, Step};

    fn trace(stmts: &[u32]) -> Trace {
        Trace {
            id: "t".into(),
            test: 0,
            steps: stmts.iter().map(|&s| Step { stmt: s, frame: 0 }).collect(),
            frames: vec![Frame {
                id: "f".into(),
                method: 0,
                call_step: None,
            }],
            branch: vec![None; stmts.len()],
            binds: Default::default(),
            heap: Vec::new(),
            multi_open: Default::default(),
        }
    }

    fn chain(tr: &Trace, head: u32) -> Vec<u32> {
        // emulate `compress` for a single loop head without a Dump
        let keep: Vec<u32> = (0..tr.steps.len() as u32).collect();
        let (mut prefix, mut pow) = (Vec::new(), Vec::new());
        rebuild_hashes(tr, &keep, &mut prefix, &mut pow);
        let occ: Vec<usize> = (0..keep.len())
            .filter(|&p| tr.steps[p].stmt == head)
            .collect();
        let its: Vec<(u64, usize, usize)> = occ
            .windows(2)
            .map(|w| (seg_hash(&prefix, &pow, w[0], w[1]), w[0], w[1]))
            .collect();
        let mut remove = vec![false; keep.len()];
        compress_chain(tr, &keep, &its, &mut remove, None);
        keep.into_iter().filter(|&i| !remove[i as usize]).collect()
    }

    #[test]
    fn keeps_last_two_iterations_of_a_simple_loop() {
        // 0: init, loop head 1, body 2 3, ... 5 iterations, then exit 1 and 9
        let mut s = vec![0];
        for _ in 0..5 {
            s.extend([1, 2, 3]);
        }
        s.extend([1, 9]);
        let tr = trace(&s);
        let kept = chain(&tr, 1);
        let stmts: Vec<u32> = kept.iter().map(|&i| s[i as usize]).collect();
        assert_eq!(stmts, vec![0, 1, 2, 3, 1, 2, 3, 1, 9]);
        // the kept steps are the original last iterations
        assert_eq!(kept, vec![0, 10, 11, 12, 13, 14, 15, 16, 17]);
    }

    #[test]
    fn short_loops_are_left_alone() {
        let s = vec![0, 1, 2, 1, 2, 1, 9];
        assert_eq!(chain(&trace(&s), 1).len(), s.len());
    }

    #[test]
    fn alternating_bodies_have_period_two() {
        // iterations alternate A = [1,2] and B = [1,3]; 8 iterations
        let mut s = vec![0];
        for k in 0..8 {
            s.extend(if k % 2 == 0 { [1, 2] } else { [1, 3] });
        }
        s.extend([1, 9]);
        let kept = chain(&trace(&s), 1);
        let stmts: Vec<u32> = kept.iter().map(|&i| s[i as usize]).collect();
        assert_eq!(stmts, vec![0, 1, 2, 1, 3, 1, 2, 1, 3, 1, 9]);
    }

    #[test]
    fn a_differing_iteration_splits_runs() {
        let mut s = vec![0];
        for k in 0..9 {
            s.extend(if k == 4 { vec![1, 7, 7] } else { vec![1, 2] });
        }
        s.extend([1, 9]);
        let kept = chain(&trace(&s), 1);
        let stmts: Vec<u32> = kept.iter().map(|&i| s[i as usize]).collect();
        // run of 4 before the odd iteration -> keep 2; run of 4 after -> keep 2
        assert_eq!(stmts, vec![0, 1, 2, 1, 2, 1, 7, 7, 1, 2, 1, 2, 1, 9]);
    }
}
