use super::synth::SplitMix64;
use super::*;

fn sig(l: f64) -> f64 {
    kernel::sigmoid(l)
}

fn random_log_odds(rng: &mut SplitMix64) -> f64 {
    match rng.below(12) {
        0 => f64::INFINITY,
        1 => f64::NEG_INFINITY,
        2 => 30.0 * (rng.next_f64() - 0.5),
        _ => 6.0 * (rng.next_f64() - 0.5),
    }
}

fn opts(schedule: Schedule, log_domain: bool) -> BpOptions {
    BpOptions {
        tol: 1e-13,
        max_iter: 5000,
        damping: 0.0,
        schedule,
        log_domain,
        prune_barren: true,
        double_loop: false,
        stop_swinging: false,
    }
}

/// Every schedule, in both domains, and the double loop (whose fixed points are BP's).
fn all_opts() -> Vec<BpOptions> {
    let mut v = Vec::new();
    for schedule in [Schedule::Sequential, Schedule::Parallel, Schedule::Flooding] {
        for log_domain in [false, true] {
            v.push(opts(schedule, log_domain));
        }
        v.push(BpOptions {
            double_loop: true,
            ..opts(schedule, schedule == Schedule::Parallel)
        });
    }
    v
}

fn random_evidence(rng: &mut SplitMix64, n: usize, p_obs: f64) -> Vec<Option<bool>> {
    (0..n)
        .map(|_| {
            if rng.chance(p_obs) {
                Some(rng.chance(0.6))
            } else {
                None
            }
        })
        .collect()
}

// ---------------------------------------------------------------- Dag

#[test]
fn dag_merges_duplicates_and_builds_both_adjacencies() {
    let d = Dag::from_edges(4, &[(0, 2), (1, 2), (0, 2), (2, 3), (0, 3), (0, 3)]).unwrap();
    assert_eq!(d.len(), 4);
    assert_eq!(d.num_edges(), 4);
    assert_eq!(d.parents(2), &[0, 1]);
    assert_eq!(d.parents(3), &[0, 2]);
    assert_eq!(d.children(0), &[2, 3]);
    assert_eq!(d.children(1), &[2]);
    assert!(d.children(3).is_empty());
    let pos: Vec<usize> = {
        let mut p = vec![0; 4];
        for (i, &v) in d.topological_order().iter().enumerate() {
            p[v as usize] = i;
        }
        p
    };
    for (u, v) in d.edges() {
        assert!(pos[u as usize] < pos[v as usize]);
    }
}

#[test]
fn topological_order_stays_close_to_id_order() {
    // 3 -> 1: vertex 1 waits for its larger parent and is placed right after it.
    let d = Dag::from_edges(5, &[(0, 1), (3, 1), (1, 4), (2, 4)]).unwrap();
    assert!(!d.ids_topological());
    assert_eq!(d.topological_order(), &[0, 2, 3, 1, 4]);
    let (r, order) = d.relabeled();
    assert_eq!(order, vec![0, 2, 3, 1, 4]);
    assert!(r.ids_topological());
    // the relabeled graph has exactly the renamed edges
    let new_id = |v: u32| order.iter().position(|&o| o == v).unwrap() as u32;
    let mut renamed: Vec<(u32, u32)> = d
        .edges()
        .into_iter()
        .map(|(u, v)| (new_id(u), new_id(v)))
        .collect();
    renamed.sort_by_key(|&(u, v)| (v, u));
    assert_eq!(r.edges(), renamed);
    let ident = Dag::from_edges(3, &[(0, 1), (1, 2), (0, 2)]).unwrap();
    assert!(ident.ids_topological());
}

/// BP renumbers a graph whose ids are not topological (EPG call vertices) for locality: the
/// marginals must be those of the same graph with topological ids, vertex by vertex, and an
/// impossible-evidence error must name the caller's vertex.
#[test]
fn bp_is_invariant_under_vertex_renaming() {
    let mut rng = SplitMix64::new(77);
    for trial in 0..40 {
        let n = 30 + rng.below(200);
        let dag = random_dag(&mut rng, n, 4);
        let ev = random_evidence(&mut rng, n, 0.2);
        // a random permutation: vertex v is called perm[v]
        let mut perm: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            perm.swap(i, rng.below(i + 1));
        }
        let edges: Vec<(u32, u32)> = dag
            .edges()
            .into_iter()
            .map(|(u, v)| (perm[u as usize], perm[v as usize]))
            .collect();
        let pdag = Dag::from_edges(n, &edges).unwrap();
        let mut pev = vec![None; n];
        for v in 0..n {
            pev[perm[v] as usize] = ev[v];
        }
        let o = BpOptions {
            damping: 0.5,
            tol: 1e-12,
            ..opts(Schedule::Sequential, false)
        };
        match (
            loopy_bp(&dag, &Cpd::default(), &ev, &o),
            loopy_bp(&pdag, &Cpd::default(), &pev, &o),
        ) {
            (Ok(a), Ok(b)) => {
                assert!(a.convergence.converged && b.convergence.converged);
                for (v, &pv) in perm.iter().enumerate() {
                    let (x, y) = (a.p_incorrect[v], b.p_incorrect[pv as usize]);
                    assert!((x - y).abs() < 1e-8, "trial {trial} vertex {v}: {x} vs {y}");
                }
            }
            (
                Err(InferError::ImpossibleEvidence { .. }),
                Err(InferError::ImpossibleEvidence { .. }),
            ) => {}
            (a, b) => panic!("trial {trial}: {a:?} vs {b:?}"),
        }
    }
    // 0 -> 1 -> 2 with 1 observed incorrect and its only parent observed correct, and the same
    // graph named backwards (v is called 2 - v): the error names the same vertex.
    let o = BpOptions::default();
    let fwd = Dag::from_edges(3, &[(0, 1), (1, 2)]).unwrap();
    let Err(InferError::ImpossibleEvidence { vertex: Some(w) }) =
        loopy_bp(&fwd, &Cpd::default(), &[Some(true), Some(false), None], &o)
    else {
        panic!("impossible evidence not detected")
    };
    let bwd = Dag::from_edges(3, &[(2, 1), (1, 0)]).unwrap();
    assert!(!bwd.ids_topological());
    assert_eq!(
        loopy_bp(&bwd, &Cpd::default(), &[None, Some(false), Some(true)], &o).unwrap_err(),
        InferError::ImpossibleEvidence {
            vertex: Some(2 - w)
        }
    );
}

/// BP runs on the ancestral set of the evidence and gives the barren rest its marginals by one
/// forward pass: that must equal BP on the whole graph (where the barren vertices take part in
/// every sweep), vertex by vertex, for every schedule and kernel; with no evidence at all, every
/// vertex is barren and the result is the prior pushed forward.
#[test]
fn pruning_barren_vertices_changes_no_marginal() {
    let mut rng = SplitMix64::new(4242);
    let cpd = Cpd::default();
    let mut pruned = 0usize;
    for trial in 0..60 {
        let n = 20 + rng.below(300);
        let dag = random_dag(&mut rng, n, 4);
        // few observations, some in the middle, so that many vertices are barren
        let ev = random_evidence(&mut rng, n, if trial % 6 == 0 { 0.0 } else { 0.03 });
        for o in all_opts() {
            let o = BpOptions {
                damping: 0.3,
                tol: 1e-13,
                ..o
            };
            let whole = loopy_bp(
                &dag,
                &cpd,
                &ev,
                &BpOptions {
                    prune_barren: false,
                    ..o
                },
            );
            let part = loopy_bp(&dag, &cpd, &ev, &o);
            match (whole, part) {
                (Ok(a), Ok(b)) => {
                    assert!(a.convergence.converged && b.convergence.converged);
                    let d = max_abs_diff(&a.p_incorrect, &b.p_incorrect);
                    assert!(d < 1e-9, "trial {trial} {o:?}: differs by {d}");
                }
                (
                    Err(InferError::ImpossibleEvidence { .. }),
                    Err(InferError::ImpossibleEvidence { .. }),
                ) => {}
                (a, b) => panic!("trial {trial}: {a:?} vs {b:?}"),
            }
        }
        let mut below = vec![false; n];
        for v in (0..n).rev() {
            below[v] = ev[v].is_some() || dag.children(v as u32).iter().any(|&c| below[c as usize]);
        }
        pruned += below.iter().filter(|&&r| !r).count();
    }
    assert!(
        pruned > 1000,
        "the graphs must have barren vertices ({pruned})"
    );
    // no evidence: a chain 0 -> 1 -> 2 is its prior pushed forward; k is incorrect only if its
    // parent is and the edge passes the error on: P(incorrect) = 0.15^(k+1)
    let chain = Dag::from_edges(3, &[(0, 1), (1, 2)]).unwrap();
    let m = loopy_bp(&chain, &cpd, &[None; 3], &BpOptions::default()).unwrap();
    for (k, &p) in m.p_incorrect.iter().enumerate() {
        let want = 0.15f64.powi(k as i32 + 1);
        assert!((p - want).abs() < 1e-12, "vertex {k}: {p} vs {want}");
    }
}

#[test]
fn dag_rejects_self_loops_cycles_and_bad_ids() {
    assert_eq!(
        Dag::from_edges(3, &[(0, 1), (2, 2)]),
        Err(InferError::Cycle { vertex: 2 })
    );
    // 0 -> 1 -> 2 -> 3 -> 1, and 4 hanging off the cycle
    let err = Dag::from_edges(5, &[(0, 1), (1, 2), (2, 3), (3, 1), (3, 4)]).unwrap_err();
    match err {
        InferError::Cycle { vertex } => assert!([1, 2, 3].contains(&vertex), "{vertex}"),
        e => panic!("unexpected {e:?}"),
    }
    let err = Dag::from_edges(3, &[(0, 1), (1, 3)]).unwrap_err();
    assert!(matches!(
        err,
        InferError::VertexOutOfRange {
            edge_index: 1,
            parent: 1,
            child: 3,
            n: 3
        }
    ));
    assert!(err.to_string().contains("1 -> 3"));
}

// ---------------------------------------------------------------- kernels

#[test]
fn noisy_or_messages_match_brute_force_k1_to_8() {
    let mut rng = SplitMix64::new(42);
    let mut worst = 0.0f64;
    for k in 1..=8usize {
        for trial in 0..200 {
            let p = if trial % 10 == 0 { 0.0 } else { rng.next_f64() };
            let parents: Vec<f64> = (0..k).map(|_| random_log_odds(&mut rng)).collect();
            let child = random_log_odds(&mut rng);
            let (bc, bp) = noisy_or_factor_messages_brute_force(p, 0.85, &parents, child).unwrap();
            for log_domain in [false, true] {
                let (fc, fp) = noisy_or_factor_messages(p, 0.85, &parents, child, log_domain);
                let pairs =
                    std::iter::once((fc, bc)).chain(fp.iter().cloned().zip(bp.iter().cloned()));
                for (fast, brute) in pairs {
                    if brute.is_nan() {
                        // zero-mass message: the fast kernel must flag it too
                        assert!(
                            fast.is_nan(),
                            "k={k} p={p} {parents:?} {child}: {fast} vs NaN"
                        );
                        continue;
                    }
                    let e = (sig(fast) - sig(brute)).abs();
                    worst = worst.max(e);
                    assert!(
                        e < 1e-12,
                        "k={k} p={p} log={log_domain} parents={parents:?} child={child}: {fast} vs {brute}"
                    );
                    if brute.is_finite() && brute.abs() < 30.0 {
                        assert!(
                            (fast - brute).abs() < 1e-8 * (1.0 + brute.abs()),
                            "{fast} vs {brute}"
                        );
                    } else if brute.is_infinite() {
                        assert_eq!(fast, brute, "k={k} p={p} {parents:?} {child}");
                    }
                }
            }
        }
    }
    eprintln!("max |fast - brute force| (probability) = {worst:.3e}");
}

/// Factor messages by enumeration in log space (exact for log-odds of any magnitude).
fn factor_messages_log_brute_force(p: f64, parents: &[f64], child: f64) -> (f64, Vec<f64>) {
    let lse = |xs: &[f64]| {
        let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        if m == f64::NEG_INFINITY {
            return m;
        }
        m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
    };
    let k = parents.len();
    let (ln_alpha, ln_beta) = (ln_sigmoid(-child), ln_sigmoid(child));
    let (mut to0, mut to1) = (Vec::new(), Vec::new());
    let mut par: Vec<[Vec<f64>; 2]> = vec![[Vec::new(), Vec::new()]; k];
    for cfg in 0u32..(1 << k) {
        let w = cfg.count_ones() as f64;
        let (ln_f0, ln_f1) = (w * p.ln(), (1.0 - p.powf(w)).ln());
        let ln_m = |i: usize| {
            if cfg >> i & 1 == 1 {
                ln_sigmoid(parents[i])
            } else {
                ln_sigmoid(-parents[i])
            }
        };
        let all: f64 = (0..k).map(ln_m).sum();
        to0.push(ln_f0 + all);
        to1.push(ln_f1 + all);
        for (i, m) in par.iter_mut().enumerate() {
            let rest: f64 = (0..k).filter(|&j| j != i).map(ln_m).sum();
            let x = (cfg >> i & 1) as usize;
            m[x].push(lse(&[ln_alpha + ln_f0, ln_beta + ln_f1]) + rest);
        }
    }
    (
        lse(&to1) - lse(&to0),
        par.iter().map(|m| lse(&m[1]) - lse(&m[0])).collect(),
    )
}

/// Log-odds far beyond what a probability holds (a statement vouched for by thousands of passing
/// values, the failure it must explain): both kernels agree with log-space enumeration to a
/// relative 1e-9 on the log-odds themselves.
#[test]
fn factor_messages_keep_extreme_log_odds() {
    let mut rng = SplitMix64::new(99);
    let extreme = |rng: &mut SplitMix64| match rng.below(4) {
        0 => -3000.0 * rng.next_f64(),
        1 => 3000.0 * rng.next_f64(),
        2 => 8.0 * (rng.next_f64() - 0.5),
        _ => -800.0 - 200.0 * rng.next_f64(),
    };
    for k in 1..=6usize {
        for _ in 0..200 {
            let p = 0.05 + 0.9 * rng.next_f64();
            let parents: Vec<f64> = (0..k).map(|_| extreme(&mut rng)).collect();
            let child = extreme(&mut rng);
            let (bc, bp) = factor_messages_log_brute_force(p, &parents, child);
            for log_domain in [false, true] {
                let (fc, fp) = noisy_or_factor_messages(p, 0.85, &parents, child, log_domain);
                for (fast, want) in std::iter::once((fc, bc)).chain(fp.into_iter().zip(bp.clone()))
                {
                    assert!(
                        (fast - want).abs() <= 1e-9 * (1.0 + want.abs()),
                        "k={k} p={p} log={log_domain} parents={parents:?} child={child}: {fast} vs {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn linear_kernel_survives_thousands_of_parents() {
    // 0.85^5000 underflows; the linear kernel must fall back to the log kernel.
    let mut rng = SplitMix64::new(7);
    let parents: Vec<f64> = (0..5000).map(|_| 4.0 + rng.next_f64()).collect();
    for child in [f64::NEG_INFINITY, f64::INFINITY, 0.3] {
        let (lc, lp) = noisy_or_factor_messages(0.85, 0.85, &parents, child, false);
        let (gc, gp) = noisy_or_factor_messages(0.85, 0.85, &parents, child, true);
        assert!(
            lc.is_finite() && (lc - gc).abs() < 1e-9 * (1.0 + gc.abs()),
            "{lc} {gc}"
        );
        for (a, b) in lp.iter().zip(&gp) {
            assert!(
                !a.is_nan() && (a - b).abs() < 1e-9 * (1.0 + b.abs()),
                "{a} {b}"
            );
        }
    }
}

// ---------------------------------------------------------------- BP vs exact

/// Random polytree: vertex i > 0 links to a random earlier vertex, with a random direction.
fn random_polytree(rng: &mut SplitMix64, n: usize) -> Dag {
    let mut edges = Vec::new();
    for i in 1..n {
        let j = rng.below(i);
        if rng.chance(0.5) {
            edges.push((j as u32, i as u32));
        } else {
            edges.push((i as u32, j as u32));
        }
    }
    Dag::from_edges(n, &edges).unwrap()
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

#[test]
fn bp_equals_exact_on_random_polytrees() {
    let mut rng = SplitMix64::new(2024);
    let mut checked = 0;
    let mut worst = 0.0f64;
    for trial in 0..300 {
        let n = 2 + rng.below(15);
        let dag = random_polytree(&mut rng, n);
        let ev = random_evidence(&mut rng, n, 0.35);
        let cpd = Cpd {
            p: if trial % 3 == 0 {
                0.85
            } else {
                0.05 + 0.9 * rng.next_f64()
            },
            prior: if trial % 3 == 0 {
                0.85
            } else {
                0.05 + 0.9 * rng.next_f64()
            },
        };
        let ex = match exact(&dag, &cpd, &ev) {
            Ok(m) => m,
            Err(InferError::ImpossibleEvidence { .. }) => {
                for o in all_opts() {
                    assert!(
                        matches!(
                            loopy_bp(&dag, &cpd, &ev, &o),
                            Err(InferError::ImpossibleEvidence { .. })
                        ),
                        "BP missed impossible evidence on a polytree: {:?} {ev:?}",
                        dag.edges()
                    );
                }
                continue;
            }
            Err(e) => panic!("{e}"),
        };
        for o in all_opts() {
            let bp = loopy_bp(&dag, &cpd, &ev, &o).unwrap();
            assert!(bp.convergence.converged, "{:?}", bp.convergence);
            let d = max_abs_diff(&bp.p_incorrect, &ex.p_incorrect);
            worst = worst.max(d);
            assert!(
                d < 1e-9,
                "trial {trial} {o:?}: diff {d}\n{:?}\n{ev:?}",
                dag.edges()
            );
        }
        // Damping changes the path, not the fixed point.
        let damped = BpOptions {
            damping: 0.5,
            ..opts(Schedule::Parallel, false)
        };
        let bp = loopy_bp(&dag, &cpd, &ev, &damped).unwrap();
        assert!(max_abs_diff(&bp.p_incorrect, &ex.p_incorrect) < 1e-9);
        checked += 1;
    }
    assert!(
        checked > 150,
        "only {checked} polytrees had possible evidence"
    );
    eprintln!("polytrees checked: {checked}, max |BP - exact| = {worst:.3e}");
}

/// Random DAG: each vertex gets up to `max_in` parents among earlier vertices.
fn random_dag(rng: &mut SplitMix64, n: usize, max_in: usize) -> Dag {
    let mut edges = Vec::new();
    for v in 1..n {
        let k = rng.below(max_in.min(v) + 1);
        for _ in 0..k {
            edges.push((rng.below(v) as u32, v as u32));
        }
    }
    Dag::from_edges(n, &edges).unwrap()
}

/// Stated accuracy of loopy BP against exact marginals on small, densely loopy random DAGs
/// (8–17 vertices, in-degree ≤ 4, 30 % of the vertices observed): the worst vertex of the worst
/// graph may be off by up to `LOOPY_MAX_TOL` (observed 0.457: short loops through a shared root
/// and its child), the average marginal is off by less than `LOOPY_MEAN_TOL`, and at least 75 % of
/// the graphs are within `LOOPY_TOL` at every vertex.
const LOOPY_TOL: f64 = 0.05;
const LOOPY_MAX_TOL: f64 = 0.5;
const LOOPY_MEAN_TOL: f64 = 0.02;

#[test]
fn bp_is_close_to_exact_on_small_loopy_dags() {
    let mut rng = SplitMix64::new(99);
    let mut worst = 0.0f64;
    let (mut sum, mut count, mut graphs, mut good) = (0.0f64, 0usize, 0usize, 0usize);
    for _ in 0..300 {
        let n = 8 + rng.below(10);
        let dag = random_dag(&mut rng, n, 4);
        let ev = random_evidence(&mut rng, n, 0.3);
        let cpd = Cpd::default();
        let ex = match exact(&dag, &cpd, &ev) {
            Ok(m) => m,
            Err(InferError::ImpossibleEvidence { .. }) => continue,
            Err(e) => panic!("{e}"),
        };
        graphs += 1;
        let mut graph_worst = 0.0f64;
        for o in [
            opts(Schedule::Sequential, false),
            opts(Schedule::Parallel, true),
        ] {
            let o = BpOptions {
                damping: 0.3,
                tol: 1e-10,
                ..o
            };
            let bp = loopy_bp(&dag, &cpd, &ev, &o).unwrap();
            assert!(bp.convergence.converged, "{:?}", bp.convergence);
            for (a, b) in bp.p_incorrect.iter().zip(&ex.p_incorrect) {
                let d = (a - b).abs();
                graph_worst = graph_worst.max(d);
                sum += d;
                count += 1;
            }
        }
        worst = worst.max(graph_worst);
        good += (graph_worst <= LOOPY_TOL) as usize;
    }
    let mean = sum / count as f64;
    eprintln!(
        "loopy DAGs: {graphs} graphs, max |BP - exact| = {worst:.4}, mean = {mean:.2e}, \
         graphs within {LOOPY_TOL}: {good}"
    );
    assert!(graphs > 150);
    assert!(worst < LOOPY_MAX_TOL, "max error {worst}");
    assert!(mean < LOOPY_MEAN_TOL, "mean error {mean}");
    assert!(good as f64 >= 0.75 * graphs as f64, "{good} of {graphs}");
}

/// Independent, naive sum-product reference: explicit (factor, variable) messages as normalised
/// probability pairs, factor messages by enumerating the full CPD table, flooding with damping.
fn reference_bp(dag: &Dag, cpd: &Cpd, ev: &[Option<bool>], iters: usize, damping: f64) -> Vec<f64> {
    let n = dag.len();
    // scope of factor v: [v, parents...]
    let scopes: Vec<Vec<usize>> = (0..n)
        .map(|v| {
            std::iter::once(v)
                .chain(dag.parents(v as u32).iter().map(|&u| u as usize))
                .collect()
        })
        .collect();
    // xs[0] = x_v, xs[1..] = parents (1 = incorrect)
    let table = |xs: &[usize]| -> f64 {
        let pc = if xs.len() == 1 {
            cpd.prior
        } else {
            cpd.p.powi(xs[1..].iter().sum::<usize>() as i32)
        };
        if xs[0] == 1 {
            1.0 - pc
        } else {
            pc
        }
    };
    let evm = |v: usize| -> [f64; 2] {
        match ev[v] {
            None => [1.0, 1.0],
            Some(true) => [1.0, 0.0],
            Some(false) => [0.0, 1.0],
        }
    };
    let norm = |m: [f64; 2]| -> [f64; 2] {
        let s = m[0] + m[1];
        [m[0] / s, m[1] / s]
    };
    let mut f2v: Vec<Vec<[f64; 2]>> = scopes.iter().map(|s| vec![[0.5, 0.5]; s.len()]).collect();
    let mut touch: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    for (f, s) in scopes.iter().enumerate() {
        for (i, &x) in s.iter().enumerate() {
            touch[x].push((f, i));
        }
    }
    for _ in 0..iters {
        let v2f: Vec<Vec<[f64; 2]>> = scopes
            .iter()
            .enumerate()
            .map(|(f, s)| {
                s.iter()
                    .map(|&x| {
                        let mut m = evm(x);
                        for &(g, j) in &touch[x] {
                            if g != f {
                                m = [m[0] * f2v[g][j][0], m[1] * f2v[g][j][1]];
                            }
                        }
                        norm(m)
                    })
                    .collect()
            })
            .collect();
        for (f, s) in scopes.iter().enumerate() {
            let k = s.len();
            let mut out = vec![[0.0f64; 2]; k];
            for cfg in 0..(1usize << k) {
                let xs: Vec<usize> = (0..k).map(|i| cfg >> i & 1).collect();
                let t = table(&xs);
                for i in 0..k {
                    let mut w = t;
                    for j in 0..k {
                        if j != i {
                            w *= v2f[f][j][xs[j]];
                        }
                    }
                    out[i][xs[i]] += w;
                }
            }
            for (i, o) in out.iter().enumerate() {
                let new = norm(*o);
                let old = f2v[f][i];
                f2v[f][i] = norm([
                    (1.0 - damping) * new[0] + damping * old[0],
                    (1.0 - damping) * new[1] + damping * old[1],
                ]);
            }
        }
    }
    (0..n)
        .map(|x| {
            let mut m = evm(x);
            for &(g, j) in &touch[x] {
                m = [m[0] * f2v[g][j][0], m[1] * f2v[g][j][1]];
            }
            norm(m)[1]
        })
        .collect()
}

#[test]
fn bp_fixed_point_equals_naive_reference_bp_on_loopy_dags() {
    // The loopy-BP error against exact inference is the method's, not the implementation's:
    // the O(k) engine reaches the same fixed point as table-based sum-product.
    let mut rng = SplitMix64::new(1234);
    let mut checked = 0;
    let mut worst = 0.0f64;
    for _ in 0..80 {
        let n = 6 + rng.below(8);
        let dag = random_dag(&mut rng, n, 4);
        let ev = random_evidence(&mut rng, n, 0.3);
        let cpd = Cpd {
            p: 0.6 + 0.35 * rng.next_f64(),
            prior: 0.85,
        };
        if exact(&dag, &cpd, &ev).is_err() {
            continue;
        }
        let reference = reference_bp(&dag, &cpd, &ev, 1500, 0.3);
        for o in all_opts() {
            let o = BpOptions {
                damping: 0.3,
                tol: 1e-14,
                ..o
            };
            let bp = loopy_bp(&dag, &cpd, &ev, &o).unwrap();
            assert!(bp.convergence.converged);
            let d = max_abs_diff(&bp.p_incorrect, &reference);
            worst = worst.max(d);
            assert!(d < 1e-9, "{o:?}: {d}\n{:?}\n{ev:?}", dag.edges());
        }
        // The block schedule with blocks of 2-3 vertices reaches the same fixed point.
        let o = BpOptions {
            damping: 0.3,
            tol: 1e-14,
            ..opts(Schedule::Parallel, false)
        };
        let bp = with_threads(2, || bp_blocks(&dag, &cpd, &ev, &o, 2)).unwrap();
        assert!(bp.convergence.converged);
        assert!(max_abs_diff(&bp.p_incorrect, &reference) < 1e-9);
        checked += 1;
    }
    assert!(checked > 40);
    eprintln!("reference BP: {checked} graphs, max |BP - reference| = {worst:.2e}");
}

// ---------------------------------------------------------------- behaviour

#[test]
fn failing_evidence_raises_and_passing_evidence_lowers_suspicion() {
    // statements s0, s1 (roots); values a = f(s0), b = f(s0, s1), c = f(a, b, s1).
    let (s0, s1, a, b, c) = (0u32, 1, 2, 3, 4);
    let dag = Dag::from_edges(5, &[(s0, a), (s0, b), (s1, b), (a, c), (b, c), (s1, c)]).unwrap();
    let cpd = Cpd::default();
    let o = BpOptions::default();
    let none = vec![None; 5];
    let prior = loopy_bp(&dag, &cpd, &none, &o).unwrap();
    assert!((prior.p_incorrect[s0 as usize] - 0.15).abs() < 1e-9);

    let mut fail = none.clone();
    fail[c as usize] = Some(false);
    let after_fail = loopy_bp(&dag, &cpd, &fail, &o).unwrap();
    let ex_fail = exact(&dag, &cpd, &fail).unwrap();
    for v in [s0, s1, a, b] {
        let v = v as usize;
        assert!(
            after_fail.p_incorrect[v] > prior.p_incorrect[v] + 0.01,
            "vertex {v}"
        );
        assert!(
            ex_fail.p_incorrect[v] > prior.p_incorrect[v] + 0.01,
            "vertex {v}"
        );
    }

    let mut pass = fail.clone();
    pass[a as usize] = Some(true); // a passing trace shows a was correct
    let after_pass = loopy_bp(&dag, &cpd, &pass, &o).unwrap();
    let ex_pass = exact(&dag, &cpd, &pass).unwrap();
    assert!(after_pass.p_incorrect[s0 as usize] < after_fail.p_incorrect[s0 as usize] - 0.01);
    assert!(ex_pass.p_incorrect[s0 as usize] < ex_fail.p_incorrect[s0 as usize] - 0.01);
    // ...and shifts the blame to s1, which a does not depend on.
    assert!(after_pass.p_incorrect[s1 as usize] > after_fail.p_incorrect[s1 as usize]);
    assert!(ex_pass.p_incorrect[s1 as usize] > ex_fail.p_incorrect[s1 as usize]);
    // This 5-vertex graph has short loops (s1 -> b -> c, s1 -> c); loopy BP keeps the
    // direction of every change but not the exact values (max error 0.18 here).
    let reference = reference_bp(&dag, &cpd, &pass, 500, 0.0);
    assert!(max_abs_diff(&after_pass.p_incorrect, &reference) < 1e-9);
    assert!(max_abs_diff(&after_pass.p_incorrect, &ex_pass.p_incorrect) < 0.2);
}

#[test]
fn hand_computed_single_edge_posterior() {
    // s -> v, v observed incorrect: P(s incorrect | ¬v) = 1 (only s can explain it).
    // s -> v, v observed correct: P(s inc | v) = 0.15·0.85 / (0.15·0.85 + 0.85) = 0.15/1.15.
    let dag = Dag::from_edges(2, &[(0, 1)]).unwrap();
    let cpd = Cpd::default();
    let m = loopy_bp(&dag, &cpd, &[None, Some(false)], &BpOptions::default()).unwrap();
    assert!((m.p_incorrect[0] - 1.0).abs() < 1e-12);
    let m = loopy_bp(&dag, &cpd, &[None, Some(true)], &BpOptions::default()).unwrap();
    assert!((m.p_incorrect[0] - 0.15 / 1.15).abs() < 1e-12);
    // two roots, one child observed incorrect: P(s0 inc | ¬v) = 0.15 / (1 - 0.85·... )
    let dag = Dag::from_edges(3, &[(0, 2), (1, 2)]).unwrap();
    let m = loopy_bp(
        &dag,
        &cpd,
        &[None, None, Some(false)],
        &BpOptions::default(),
    )
    .unwrap();
    // P(¬v) = Σ P(s0,s1)(1 - 0.85^w); P(s0 inc, ¬v) = 0.15·(0.85·0.15 + 0.15·(1-0.7225))
    let pv = 0.15 * 0.85 * 0.15 * 2.0 + 0.15 * 0.15 * (1.0 - 0.7225);
    let ps0 = 0.15 * (0.85 * 0.15 + 0.15 * (1.0 - 0.7225));
    assert!((m.p_incorrect[0] - ps0 / pv).abs() < 1e-12);
}

// ---------------------------------------------------------------- errors

#[test]
fn impossible_evidence_is_an_error_not_nan() {
    // v observed incorrect but all its parents observed correct: p^0 = 1.
    let dag = Dag::from_edges(4, &[(0, 2), (1, 2), (2, 3)]).unwrap();
    let ev = [Some(true), Some(true), Some(false), None];
    for o in all_opts() {
        let r = loopy_bp(&dag, &Cpd::default(), &ev, &o);
        assert!(
            matches!(r, Err(InferError::ImpossibleEvidence { vertex: Some(_) })),
            "{r:?}"
        );
        // ...also with one block per vertex
        let r = bp_blocks(&dag, &Cpd::default(), &ev, &o, 1);
        assert!(
            matches!(r, Err(InferError::ImpossibleEvidence { vertex: Some(_) })),
            "{r:?}"
        );
    }
    assert_eq!(
        exact(&dag, &Cpd::default(), &ev).unwrap_err(),
        InferError::ImpossibleEvidence { vertex: None }
    );
    // Deduction through an unobserved vertex: 0 -> 1 -> 2; 2 incorrect forces 1 incorrect,
    // which forces 0 incorrect; 0 observed correct contradicts.
    let dag = Dag::from_edges(3, &[(0, 1), (1, 2)]).unwrap();
    let ev = [Some(true), None, Some(false)];
    for o in all_opts() {
        for r in [
            loopy_bp(&dag, &Cpd::default(), &ev, &o),
            bp_blocks(&dag, &Cpd::default(), &ev, &o, 1),
        ] {
            assert!(
                matches!(r, Err(InferError::ImpossibleEvidence { .. })),
                "{r:?}"
            );
        }
    }
    // A root with prior 1 observed incorrect.
    let cpd = Cpd {
        p: 0.85,
        prior: 1.0,
    };
    let r = loopy_bp(
        &dag,
        &cpd,
        &[Some(false), None, None],
        &BpOptions::default(),
    );
    assert!(
        matches!(r, Err(InferError::ImpossibleEvidence { vertex: Some(0) })),
        "{r:?}"
    );
    // p = 0 (every incorrect parent propagates): observed-correct child with an incorrect parent.
    let cpd = Cpd {
        p: 0.0,
        prior: 0.85,
    };
    let r = loopy_bp(
        &dag,
        &cpd,
        &[Some(false), Some(true), None],
        &BpOptions::default(),
    );
    assert!(
        matches!(r, Err(InferError::ImpossibleEvidence { .. })),
        "{r:?}"
    );
    assert!(exact(&dag, &cpd, &[Some(false), Some(true), None]).is_err());
}

#[test]
fn bad_inputs_are_errors() {
    let dag = Dag::from_edges(3, &[(0, 1), (1, 2)]).unwrap();
    let e = loopy_bp(&dag, &Cpd::default(), &[None, None], &BpOptions::default()).unwrap_err();
    assert_eq!(
        e,
        InferError::EvidenceLength {
            expected: 3,
            found: 2
        }
    );
    assert!(e.to_string().contains("2 entries"));
    let bad = Cpd {
        p: 1.5,
        prior: 0.85,
    };
    assert!(matches!(
        loopy_bp(&dag, &bad, &[None; 3], &BpOptions::default()),
        Err(InferError::BadParameter(_))
    ));
    let bad = Cpd {
        p: f64::NAN,
        prior: 0.85,
    };
    assert!(matches!(
        exact(&dag, &bad, &[None; 3]),
        Err(InferError::BadParameter(_))
    ));
    let o = BpOptions {
        damping: 1.0,
        ..BpOptions::default()
    };
    assert!(matches!(
        loopy_bp(&dag, &Cpd::default(), &[None; 3], &o),
        Err(InferError::BadParameter(_))
    ));
    let big = Dag::from_edges(40, &[]).unwrap();
    assert!(matches!(
        exact(&big, &Cpd::default(), &[None; 40]),
        Err(InferError::TooLarge { unobserved: 40, .. })
    ));
    let empty = Dag::from_edges(0, &[]).unwrap();
    let m = loopy_bp(&empty, &Cpd::default(), &[], &BpOptions::default()).unwrap();
    assert!(m.p_incorrect.is_empty() && m.convergence.converged);
}

/// An EPG-shaped graph (28 vertices: statements 0 and 1, values 2..27, two failures observed)
/// with strong propagation (`p = 0.1`) on which loopy BP wanders: undamped and damped messages
/// never settle (issue 20 §6).
fn wandering_graph() -> (Dag, Vec<Option<bool>>, Cpd) {
    let edges: &[(u32, u32)] = &[
        (1, 2),
        (1, 3),
        (2, 3),
        (1, 4),
        (2, 4),
        (3, 4),
        (0, 5),
        (4, 5),
        (0, 6),
        (1, 7),
        (6, 7),
        (3, 7),
        (4, 7),
        (5, 7),
        (0, 8),
        (2, 8),
        (0, 9),
        (1, 10),
        (3, 10),
        (4, 10),
        (2, 10),
        (7, 10),
        (1, 11),
        (6, 11),
        (9, 11),
        (7, 11),
        (2, 11),
        (1, 12),
        (3, 12),
        (11, 12),
        (0, 13),
        (10, 13),
        (8, 13),
        (6, 13),
        (7, 13),
        (0, 14),
        (0, 15),
        (7, 15),
        (1, 16),
        (4, 16),
        (5, 16),
        (6, 16),
        (0, 17),
        (12, 17),
        (2, 17),
        (0, 18),
        (4, 18),
        (1, 19),
        (8, 19),
        (2, 19),
        (4, 19),
        (1, 20),
        (7, 20),
        (15, 20),
        (14, 20),
        (1, 21),
        (5, 21),
        (0, 22),
        (20, 22),
        (8, 22),
        (11, 22),
        (1, 23),
        (9, 23),
        (1, 24),
        (20, 24),
        (21, 24),
        (0, 25),
        (17, 25),
        (1, 26),
        (1, 27),
        (11, 27),
        (14, 27),
        (24, 27),
        (15, 27),
    ];
    let mut ev = vec![None; 28];
    (ev[21], ev[22], ev[23], ev[27]) = (Some(true), Some(true), Some(false), Some(false));
    let cpd = Cpd {
        p: 0.1,
        prior: 0.85,
    };
    (Dag::from_edges(28, edges).unwrap(), ev, cpd)
}

#[test]
fn the_double_loop_converges_where_bp_wanders() {
    let (dag, ev, cpd) = wandering_graph();
    let base = BpOptions {
        tol: 1e-7,
        max_iter: 2000,
        ..BpOptions::default()
    };
    // What `localize` tried before the double loop: undamped, then damping 0.5.
    for damping in [0.0, 0.5] {
        let m = loopy_bp(&dag, &cpd, &ev, &BpOptions { damping, ..base }).unwrap();
        assert!(
            !m.convergence.converged,
            "damping {damping}: {:?}",
            m.convergence
        );
        assert!(m.convergence.max_change > 0.01, "{:?}", m.convergence);
    }
    let dl = BpOptions {
        double_loop: true,
        tol: 1e-10,
        max_iter: 20_000,
        ..base
    };
    let seq = loopy_bp(&dag, &cpd, &ev, &dl).unwrap();
    assert!(seq.convergence.converged, "{:?}", seq.convergence);
    // The same fixed point from every schedule (blocks of 2-3 vertices; flooding).
    let blocks = with_threads(2, || {
        bp_blocks(
            &dag,
            &cpd,
            &ev,
            &BpOptions {
                schedule: Schedule::Parallel,
                ..dl
            },
            2,
        )
    })
    .unwrap();
    let flood = loopy_bp(
        &dag,
        &cpd,
        &ev,
        &BpOptions {
            schedule: Schedule::Flooding,
            ..dl
        },
    )
    .unwrap();
    for m in [&blocks, &flood] {
        assert!(m.convergence.converged, "{:?}", m.convergence);
        let d = max_abs_diff(&m.p_incorrect, &seq.p_incorrect);
        assert!(d < 1e-6, "{d}");
    }
    // The failures make some statement suspicious, and the observed values keep their clamps.
    assert!(
        seq.p_incorrect[0].max(seq.p_incorrect[1]) > 0.15,
        "{:?}",
        seq.p_incorrect
    );
    assert_eq!((seq.p_incorrect[23], seq.p_incorrect[21]), (1.0, 0.0));
}

#[test]
fn unexplained_failure_names_the_failure_not_where_bp_noticed() {
    // test statement t (observed correct) -> failing value f (observed incorrect): nothing can
    // explain f. App statement a -> value x (unobserved) -> value y (observed incorrect): a
    // explains y.
    let (t, f, a, x, y) = (0u32, 1, 2, 3, 4);
    let dag = Dag::from_edges(5, &[(t, f), (a, x), (x, y)]).unwrap();
    let cpd = Cpd::default();
    let mut ev = vec![Some(true), Some(false), None, None, Some(false)];
    assert_eq!(unexplained_failure(&dag, &cpd, &ev), Some(f));
    assert!(matches!(
        loopy_bp(&dag, &cpd, &ev, &BpOptions::default()),
        Err(InferError::ImpossibleEvidence { .. })
    ));
    // without the unexplained failure the evidence is possible
    ev[f as usize] = None;
    assert_eq!(unexplained_failure(&dag, &cpd, &ev), None);
    assert!(loopy_bp(&dag, &cpd, &ev, &BpOptions::default()).is_ok());
    // a value whose only parent is observed correct cannot be incorrect either
    ev[x as usize] = Some(true);
    assert_eq!(unexplained_failure(&dag, &cpd, &ev), Some(y));
    // a root observed incorrect explains itself (prior < 1), unless the prior is certain
    let root = vec![None, None, Some(false), None, None];
    assert_eq!(unexplained_failure(&dag, &cpd, &root), None);
    let certain = Cpd { prior: 1.0, ..cpd };
    assert_eq!(unexplained_failure(&dag, &certain, &root), Some(a));
}

#[test]
fn reports_non_convergence_honestly() {
    let (dag, ev) = synthetic_dag(3000, 5);
    let o = BpOptions {
        max_iter: 1,
        tol: 1e-12,
        ..BpOptions::default()
    };
    let m = loopy_bp(&dag, &Cpd::default(), &ev, &o).unwrap();
    assert_eq!(m.convergence.iterations, 1);
    assert!(!m.convergence.converged);
    assert!(m.convergence.max_change > 1e-12);
    let json = serde_json::to_string(&m.convergence).unwrap();
    assert!(json.contains("\"converged\":false"), "{json}");
}

// ---------------------------------------------------------------- synthetic graphs

#[test]
fn synthetic_dag_has_epg_shape() {
    let n = 20_000;
    let (dag, ev) = synthetic_dag(n, 3);
    let (dag2, ev2) = synthetic_dag(n, 3);
    assert_eq!(dag, dag2);
    assert_eq!(ev, ev2);
    assert_eq!(dag.len(), n);
    let roots: Vec<u32> = (0..n as u32)
        .filter(|&v| dag.parents(v).is_empty())
        .collect();
    assert_eq!(roots.len(), n / 25, "statement roots only");
    let max_out = roots.iter().map(|&r| dag.children(r).len()).max().unwrap();
    assert!(
        max_out > 200,
        "hot statements are shared by many values: {max_out}"
    );
    let indeg: Vec<usize> = (n / 25..n).map(|v| dag.parents(v as u32).len()).collect();
    let in_2_6 = indeg.iter().filter(|&&d| (2..=6).contains(&d)).count();
    assert!(
        in_2_6 as f64 > 0.7 * indeg.len() as f64,
        "{in_2_6} of {}",
        indeg.len()
    );
    let max_in = *indeg.iter().max().unwrap();
    assert!((50..=320).contains(&max_in), "heavy tail: {max_in}");
    let incorrect = ev.iter().filter(|e| **e == Some(false)).count();
    let correct = ev.iter().filter(|e| **e == Some(true)).count();
    assert!((1..=200).contains(&incorrect), "{incorrect}");
    assert!(correct > n / 3, "{correct}");
    // Damped BP on it converges and agrees across schedules and domains.
    let damped = BpOptions {
        damping: 0.5,
        ..Default::default()
    };
    let seq = loopy_bp(&dag, &Cpd::default(), &ev, &damped).unwrap();
    assert!(seq.convergence.converged, "{:?}", seq.convergence);
    assert!(seq.p_incorrect.iter().all(|p| (0.0..=1.0).contains(p)));
    let par = loopy_bp(
        &dag,
        &Cpd::default(),
        &ev,
        &BpOptions {
            schedule: Schedule::Parallel,
            ..damped
        },
    )
    .unwrap();
    assert!(par.convergence.converged, "{:?}", par.convergence);
    assert!(max_abs_diff(&seq.p_incorrect, &par.p_incorrect) < 1e-6);
    let log = loopy_bp(
        &dag,
        &Cpd::default(),
        &ev,
        &BpOptions {
            log_domain: true,
            ..damped
        },
    )
    .unwrap();
    assert!(max_abs_diff(&seq.p_incorrect, &log.p_incorrect) < 1e-7);
}

#[test]
#[ignore = "timing; run with --release -- --ignored --nocapture"]
fn print_bp_timings() {
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
    };
    let n = env("PROSECUTOR_BENCH_N", 1_000_000);
    let runs = env("PROSECUTOR_BENCH_RUNS", 3);
    let log = env("PROSECUTOR_BENCH_LOG", 0) == 1;
    println!("{}", bench_report(n, 2, runs, log));
}

#[test]
#[ignore = "convergence study on large synthetic graphs; --release -- --ignored --nocapture"]
fn print_convergence_study() {
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
    };
    let n = env("PROSECUTOR_BENCH_N", 1_000_000);
    for seed in 1..=env("PROSECUTOR_SEEDS", 4) as u64 {
        let (dag, ev) = synthetic_dag(n, seed);
        for (schedule, damping) in [
            (Schedule::Sequential, 0.5),
            (Schedule::Parallel, 0.5),
            (Schedule::Flooding, 0.0),
        ] {
            let o = BpOptions {
                schedule,
                damping,
                max_iter: env("PROSECUTOR_MAX_ITER", 300),
                ..Default::default()
            };
            let t = std::time::Instant::now();
            let m = loopy_bp(&dag, &Cpd::default(), &ev, &o).map(|m| m.convergence);
            println!(
                "n={n} seed={seed} {schedule:?} damping={damping}: {:.2}s {m:?}",
                t.elapsed().as_secs_f64()
            );
        }
    }
}

// ---------------------------------------------------------------- parallel schedules

/// Runs `f` in a rayon pool of `threads` threads.
fn with_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

/// The block schedule with blocks of (at least) `min_work` units of work.
fn bp_blocks(
    dag: &Dag,
    cpd: &Cpd,
    ev: &[Option<bool>],
    o: &BpOptions,
    min_work: usize,
) -> Result<Marginals, InferError> {
    bp::loopy_bp_blocks(dag, cpd, ev, o, min_work)
}

#[test]
fn parallel_schedules_equal_sequential_and_exact_on_trees_for_any_thread_count() {
    let mut rng = SplitMix64::new(77);
    let mut checked = 0;
    for trial in 0..120 {
        // Small polytrees are checked against exact inference, larger ones against sequential BP.
        let n = if trial % 2 == 0 {
            2 + rng.below(15)
        } else {
            30 + rng.below(200)
        };
        let dag = random_polytree(&mut rng, n);
        let ev = random_evidence(&mut rng, n, 0.3);
        let cpd = Cpd {
            p: 0.05 + 0.9 * rng.next_f64(),
            prior: 0.05 + 0.9 * rng.next_f64(),
        };
        let log_domain = trial % 3 == 0;
        let damping = if trial % 4 == 1 { 0.4 } else { 0.0 };
        let o = |schedule| BpOptions {
            damping,
            ..opts(schedule, log_domain)
        };
        let seq = loopy_bp(&dag, &cpd, &ev, &o(Schedule::Sequential));
        let reference = match (&seq, n <= 16) {
            (Err(InferError::ImpossibleEvidence { .. }), _) => None,
            (Err(e), _) => panic!("{e}"),
            (Ok(_), true) => Some(exact(&dag, &cpd, &ev).unwrap().p_incorrect),
            (Ok(m), false) => Some(m.p_incorrect.clone()),
        };
        for min_work in [1, 4, 16] {
            let mut first: Option<Vec<f64>> = None;
            for threads in [1, 2, 3] {
                let par = with_threads(threads, || {
                    bp_blocks(&dag, &cpd, &ev, &o(Schedule::Parallel), min_work)
                });
                let flood = with_threads(threads, || {
                    loopy_bp(&dag, &cpd, &ev, &o(Schedule::Flooding))
                });
                let Some(reference) = &reference else {
                    assert!(
                        matches!(par, Err(InferError::ImpossibleEvidence { .. }))
                            && matches!(flood, Err(InferError::ImpossibleEvidence { .. })),
                        "trial {trial}: {par:?} {flood:?}"
                    );
                    continue;
                };
                for (name, m) in [("parallel", par.unwrap()), ("flooding", flood.unwrap())] {
                    assert!(m.convergence.converged, "{name}: {:?}", m.convergence);
                    let d = max_abs_diff(&m.p_incorrect, reference);
                    assert!(
                        d < 1e-9,
                        "trial {trial} {name} threads={threads} min_work={min_work}: diff {d}"
                    );
                    if name == "parallel" {
                        // The blocks do not depend on the thread count: identical results.
                        match &first {
                            None => first = Some(m.p_incorrect.clone()),
                            Some(f) => assert_eq!(f, &m.p_incorrect, "trial {trial}"),
                        }
                    }
                }
            }
        }
        checked += reference.is_some() as usize;
    }
    assert!(checked > 60, "only {checked} trees with possible evidence");
}

#[test]
fn block_schedule_really_cuts_the_graph() {
    // A chain 0 -> 1 -> ... -> 199 with the last vertex observed incorrect. One sequential
    // iteration carries the evidence from end to start; with blocks of a few vertices, messages
    // cross one block boundary per iteration, so more iterations are needed (same answer).
    let n = 200u32;
    let edges: Vec<(u32, u32)> = (1..n).map(|v| (v - 1, v)).collect();
    let dag = Dag::from_edges(n as usize, &edges).unwrap();
    let mut ev = vec![None; n as usize];
    ev[n as usize - 1] = Some(false);
    let o = opts(Schedule::Parallel, false);
    let seq = loopy_bp(
        &dag,
        &Cpd::default(),
        &ev,
        &opts(Schedule::Sequential, false),
    )
    .unwrap();
    let one_block = loopy_bp(&dag, &Cpd::default(), &ev, &o).unwrap();
    assert_eq!(
        one_block, seq,
        "a small graph is a single block: the sequential schedule"
    );
    let blocks = with_threads(2, || bp_blocks(&dag, &Cpd::default(), &ev, &o, 8)).unwrap();
    assert!(
        blocks.convergence.iterations > seq.convergence.iterations + 5,
        "{:?} vs {:?}",
        blocks.convergence,
        seq.convergence
    );
    assert!(max_abs_diff(&blocks.p_incorrect, &seq.p_incorrect) < 1e-9);
}

#[test]
fn parallel_schedules_agree_with_sequential_on_synthetic_epgs() {
    let (dag, ev) = synthetic_dag(20_000, 11);
    let damped = |schedule| BpOptions {
        damping: 0.5,
        schedule,
        ..BpOptions::default()
    };
    let cpd = Cpd::default();
    let seq = loopy_bp(&dag, &cpd, &ev, &damped(Schedule::Sequential)).unwrap();
    assert!(seq.convergence.converged);
    let mut runs = Vec::new();
    for threads in [1, 2] {
        // ~60 blocks of the default minimum size on a 1M-vertex graph; here blocks of 500.
        let par = with_threads(threads, || {
            bp_blocks(&dag, &cpd, &ev, &damped(Schedule::Parallel), 500)
        })
        .unwrap();
        assert!(par.convergence.converged, "{:?}", par.convergence);
        assert!(max_abs_diff(&seq.p_incorrect, &par.p_incorrect) < 1e-6);
        runs.push(par);
    }
    assert_eq!(
        runs[0], runs[1],
        "the thread count does not change the result"
    );
    // Impossible evidence is found by the block schedule too: a failure point whose parents are
    // all observed correct.
    let mut bad = ev.clone();
    let v = (0..dag.len() as u32)
        .find(|&v| {
            !dag.parents(v).is_empty()
                && dag
                    .parents(v)
                    .iter()
                    .all(|&u| bad[u as usize] == Some(true))
        })
        .unwrap();
    bad[v as usize] = Some(false);
    let r = with_threads(2, || {
        bp_blocks(&dag, &cpd, &bad, &damped(Schedule::Parallel), 500)
    });
    assert!(
        matches!(r, Err(InferError::ImpossibleEvidence { vertex: Some(_) })),
        "{r:?}"
    );
}

/// A failure that only two heavily vouched-for statements can explain (S1 with 5,000 observed
/// correct children, S2 with 10,000): exactly (closed form below), S1 is the cause with log-odds
/// about +812 and S2 is not, about -812: 5,000 more passing values at ln 0.85 each. BP is exact
/// on this polytree, so it must reproduce those magnitudes, beyond what an `f64` probability
/// holds (a kernel that clips log-odds at ±700 makes the two statements look alike).
#[test]
fn heavily_vouched_statements_keep_their_magnitudes() {
    let (n1, n2) = (5000usize, 10000usize);
    // 0 = S1, 1 = S2, 2 = F (parents S1, S2), then the children
    let mut edges = vec![(0u32, 2u32), (1, 2)];
    let mut ev = vec![None, None, Some(false)];
    for i in 0..n1 + n2 {
        let v = (3 + i) as u32;
        edges.push((if i < n1 { 0 } else { 1 }, v));
        ev.push(Some(true));
    }
    let dag = Dag::from_edges(ev.len(), &edges).unwrap();
    let cpd = Cpd::default();
    let (p, prior) = (cpd.p, cpd.prior);
    // ln weight of (x1, x2): Π_i (x_i ? (1-prior)·p^{N_i} : prior) · (1 - p^{x1+x2})
    let lw = |x1: bool, x2: bool| {
        let f = |x: bool, n: usize| {
            if x {
                (1.0 - prior).ln() + n as f64 * p.ln()
            } else {
                prior.ln()
            }
        };
        let k = x1 as i32 + x2 as i32;
        f(x1, n1) + f(x2, n2) + (1.0 - p.powi(k)).ln()
    };
    let lse = |a: f64, b: f64| a.max(b) + (-(a - b).abs()).exp().ln_1p();
    // log-odds of S2 incorrect: ln[w(0,1) + w(1,1)] - ln[w(1,0)]  (w(0,0) = 0)
    let want2 = lse(lw(false, true), lw(true, true)) - lw(true, false);
    let want1 = lse(lw(true, false), lw(true, true)) - lw(false, true);
    assert!(want2 < -800.0 && want1 > 800.0, "{want1} {want2}");
    for log_domain in [false, true] {
        let m = loopy_bp(&dag, &cpd, &ev, &opts(Schedule::Sequential, log_domain)).unwrap();
        let (l1, l2) = (m.log_odds_incorrect[0], m.log_odds_incorrect[1]);
        assert!(
            (l1 - want1).abs() < 1e-6 * want1.abs() && (l2 - want2).abs() < 1e-6 * want2.abs(),
            "log_domain {log_domain}: S1 {l1} (exact {want1}), S2 {l2} (exact {want2})"
        );
    }
}

// ---------------------------------------------------------------- period-2 cycles

/// How a run with the period-2 cycle check compared with the same run without it.
#[derive(PartialEq, Debug)]
enum CycleOutcome {
    /// Both converged, with the same bits.
    Converged,
    /// Stopped early in a cycle (the full run did not converge either); the largest difference
    /// of a marginal from the full run's.
    Caught(f64),
    /// Neither converged nor stopped early (or the evidence is impossible).
    Other,
}

/// Runs `o` with and without the cycle check (`bp::loopy_bp_run`) and checks that the check
/// changes nothing but the sweeps of a run that cannot converge.
fn with_and_without_cycle_check(
    dag: &Dag,
    cpd: &Cpd,
    ev: &[Option<bool>],
    o: &BpOptions,
    min_work: usize,
) -> CycleOutcome {
    let (Ok(stop), Ok(full)) = (
        bp::loopy_bp_run(dag, cpd, ev, o, min_work, true),
        bp::loopy_bp_run(dag, cpd, ev, o, min_work, false),
    ) else {
        return CycleOutcome::Other;
    };
    if full.convergence.converged {
        assert_eq!(stop.convergence, full.convergence);
        assert_eq!(stop.p_incorrect, full.p_incorrect);
        return CycleOutcome::Converged;
    }
    assert!(!stop.convergence.converged, "{:?}", stop.convergence);
    if stop.convergence.iterations == o.max_iter {
        return CycleOutcome::Other;
    }
    assert_eq!((o.max_iter - stop.convergence.iterations) % 2, 0);
    CycleOutcome::Caught(max_abs_diff(&stop.p_incorrect, &full.p_incorrect))
}

/// Strong propagation (`p = 0.1`) on small loopy DAGs: undamped BP often settles into a cycle
/// of period 2. A run caught in one stops early (`super::cycle`); the full run does not converge
/// either, and ends with nearly the marginals the stopped run reports (the cycle drifts a
/// little); a run that converges is never stopped (same bits).
#[test]
fn a_run_caught_in_a_two_cycle_stops_with_the_marginals_of_the_full_run() {
    let mut rng = SplitMix64::new(2026);
    let cpd = Cpd {
        p: 0.1,
        prior: 0.85,
    };
    let (mut caught, mut converged, mut drift) = (0, 0, 0.0f64);
    for _ in 0..300 {
        let n = 10 + rng.below(30);
        let dag = random_dag(&mut rng, n, 5);
        let ev = random_evidence(&mut rng, n, 0.3);
        for schedule in [Schedule::Sequential, Schedule::Flooding] {
            let o = BpOptions {
                tol: 1e-7,
                max_iter: 300,
                schedule,
                ..BpOptions::default()
            };
            match with_and_without_cycle_check(&dag, &cpd, &ev, &o, bp::MIN_BLOCK_WORK) {
                CycleOutcome::Caught(d) => {
                    caught += 1;
                    drift = drift.max(d);
                }
                CycleOutcome::Converged => converged += 1,
                CycleOutcome::Other => {}
            }
        }
    }
    eprintln!("two-cycles: {caught} runs stopped early (drift {drift:.1e}), {converged} converged");
    assert!(
        caught >= 5 && converged >= 100,
        "{caught} caught, {converged} converged"
    );
    assert!(drift < 1e-3, "{drift}");
}

/// The EPG-shaped synthetic graphs (src/infer/synth.rs), undamped and damped, sequential and in
/// blocks: the cycle check changes no run that converges.
#[test]
fn the_cycle_check_leaves_converging_runs_alone_on_synthetic_epgs() {
    let mut converged = 0;
    for seed in 1..=4 {
        let (dag, ev) = synthetic_dag(2000, seed);
        for damping in [0.0, 0.5] {
            for schedule in [Schedule::Sequential, Schedule::Parallel] {
                let o = BpOptions {
                    tol: 1e-7,
                    max_iter: 300,
                    damping,
                    schedule,
                    ..BpOptions::default()
                };
                let r = with_and_without_cycle_check(&dag, &Cpd::default(), &ev, &o, 64);
                converged += (r == CycleOutcome::Converged) as usize;
            }
        }
    }
    assert!(converged >= 8, "{converged}");
}

// ---------------------------------------------------------------- runs that keep swinging

/// `BpOptions::stop_swinging` on the EPG-shaped synthetic graphs under the default CPD,
/// undamped, sequential and in blocks: every run that converges without the check converges
/// with it, with the same bits.
#[test]
fn stop_swinging_leaves_converging_runs_alone_on_synthetic_epgs() {
    let mut converged = 0;
    for seed in 1..=4 {
        let (dag, ev) = synthetic_dag(2000, seed);
        for schedule in [Schedule::Sequential, Schedule::Parallel] {
            let o = BpOptions {
                tol: 1e-7,
                max_iter: 300,
                schedule,
                ..BpOptions::default()
            };
            let full = bp_blocks(&dag, &Cpd::default(), &ev, &o, 64).unwrap();
            let stop = bp_blocks(
                &dag,
                &Cpd::default(),
                &ev,
                &BpOptions {
                    stop_swinging: true,
                    ..o
                },
                64,
            )
            .unwrap();
            if full.convergence.converged {
                assert_eq!(stop, full);
                converged += 1;
            }
        }
    }
    assert!(converged >= 4, "{converged}");
}

/// Strong propagation on small loopy DAGs: some undamped runs swing by 0.3 or more sweep after
/// sweep without converging; with `stop_swinging` they stop, not converged, at sweep 30 or
/// later instead of running to `max_iter`.
#[test]
fn a_run_that_keeps_swinging_stops_early_with_stop_swinging() {
    let mut rng = SplitMix64::new(2026);
    let cpd = Cpd {
        p: 0.1,
        prior: 0.85,
    };
    let mut stopped = 0;
    for _ in 0..300 {
        let n = 10 + rng.below(30);
        let dag = random_dag(&mut rng, n, 5);
        let ev = random_evidence(&mut rng, n, 0.3);
        let o = BpOptions {
            tol: 1e-7,
            max_iter: 300,
            ..BpOptions::default()
        };
        let Ok(full) = loopy_bp(&dag, &cpd, &ev, &o) else {
            continue;
        };
        let swinging = BpOptions {
            stop_swinging: true,
            ..o
        };
        let stop = loopy_bp(&dag, &cpd, &ev, &swinging).unwrap();
        if stop.convergence.iterations < full.convergence.iterations {
            assert!(!stop.convergence.converged, "{:?}", stop.convergence);
            assert!(stop.convergence.iterations >= 30, "{:?}", stop.convergence);
            assert!(stop.convergence.max_change >= 0.3, "{:?}", stop.convergence);
            stopped += (!full.convergence.converged) as usize;
        } else {
            assert_eq!(stop, full);
        }
    }
    assert!(stopped >= 1, "no run that does not converge was stopped");
}
