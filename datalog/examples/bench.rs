//! Throughput benchmark of the engine on synthetic data.
//!
//! Run with: `cargo run --release -p datalog --example bench [-- N]` (N = tuples per input,
//! default 1_000_000).

use std::time::Instant;

use datalog::{Database, Program};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u32 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }
    fn below(&mut self, n: u32) -> u32 {
        self.next() % n
    }
}

/// CPU time of this thread in seconds (from /proc; robust against a loaded machine).
fn cpu_s() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map(|ns| ns / 1e9)
        .unwrap_or(f64::NAN)
}

struct Timer(Instant, f64);
impl Timer {
    fn start() -> Self {
        Timer(Instant::now(), cpu_s())
    }
    fn show(&self) -> String {
        format!(
            "{:.3} s wall, {:.3} s cpu",
            self.0.elapsed().as_secs_f64(),
            cpu_s() - self.1
        )
    }
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);

    // 1. Two-atom join.
    let src = r#"
        .decl vd(i: unsigned, k: unsigned, v: unsigned)
        .decl lastdef(i: unsigned, u: unsigned, j: unsigned, w: unsigned)
        .decl edge(w: unsigned, v: unsigned, kind: symbol)
        .input vd
        .input lastdef
        .output edge
        edge(W, V, "R_DU") :- vd(I, _, V), lastdef(I, U, J, W).
    "#;
    let program = Program::parse(src, "bench.dl").expect("parse");
    let mut db = Database::new();
    let mut vd = Vec::with_capacity(3 * n as usize);
    for _ in 0..n {
        vd.extend_from_slice(&[rng.below(n), rng.below(4), rng.below(n)]);
    }
    let mut ld = Vec::with_capacity(4 * n as usize);
    for _ in 0..n {
        ld.extend_from_slice(&[rng.below(n), rng.below(16), rng.below(n), rng.below(n)]);
    }
    db.insert_flat("vd", 3, vd);
    db.insert_flat("lastdef", 4, ld);
    let t = Timer::start();
    let stats = program.evaluate(&mut db).expect("evaluate");
    let el = t.show();
    let out = db.rows("edge").map(|(a, r)| r.len() / a).unwrap_or(0);
    println!(
        "join       : {n} vd x {n} lastdef -> {out} edge tuples in {} (strata {}, rounds {})",
        el, stats.strata, stats.iterations
    );

    // Same again: inputs are now sorted and deduplicated (no input sort needed).
    db.take("edge");
    let t = Timer::start();
    program.evaluate(&mut db).expect("evaluate");
    println!("join again : inputs already sorted -> {}", t.show());

    // 2. Range-restricted join: exec(L, C, R), J < R, R < I.
    let src = r#"
        .decl exec(l: unsigned, c: unsigned, r: unsigned)
        .decl q(l: unsigned, c: unsigned, j: unsigned, i: unsigned)
        .decl hit(l: unsigned, c: unsigned, r: unsigned)
        .input exec
        .input q
        hit(L, C, R) :- q(L, C, J, I), exec(L, C, R), J < R, R < I.
    "#;
    let program = Program::parse(src, "bench2.dl").expect("parse");
    let mut db = Database::new();
    let lines = (n / 1000).max(1);
    let mut exec = Vec::with_capacity(3 * n as usize);
    for r in 0..n {
        exec.extend_from_slice(&[rng.below(lines), rng.below(4), r]);
    }
    let mut q = Vec::new();
    for _ in 0..n / 10 {
        let j = rng.below(n);
        q.extend_from_slice(&[rng.below(lines), rng.below(4), j, j + 2000]);
    }
    db.insert_flat("exec", 3, exec);
    db.insert_flat("q", 4, q);
    let t = Timer::start();
    program.evaluate(&mut db).expect("evaluate");
    let el = t.show();
    let out = db.rows("hit").map(|(a, r)| r.len() / a).unwrap_or(0);
    println!(
        "range join : {n} exec x {} q -> {out} hit tuples in {}",
        n / 10,
        el
    );

    // 3. Recursive: reachability over a sparse random graph (linear recursion).
    let src = r#"
        .decl edge(a: unsigned, b: unsigned)
        .decl root(a: unsigned)
        .decl reach(a: unsigned)
        .input edge
        .input root
        reach(X) :- root(X).
        reach(Y) :- reach(X), edge(X, Y).
    "#;
    let program = Program::parse(src, "bench3.dl").expect("parse");
    let mut db = Database::new();
    let mut e = Vec::with_capacity(2 * n as usize);
    for _ in 0..n {
        e.extend_from_slice(&[rng.below(n), rng.below(n)]);
    }
    db.insert_flat("edge", 2, e);
    db.insert_flat("root", 1, vec![0, 1, 2, 3]);
    let t = Timer::start();
    let stats = program.evaluate(&mut db).expect("evaluate");
    let el = t.show();
    let out = db.rows("reach").map(|(a, r)| r.len() / a).unwrap_or(0);
    println!(
        "recursion  : reach over {n} edges -> {out} tuples in {} ({} rounds)",
        el, stats.iterations
    );

    // 4. Transitive closure of a chain (many rounds, output quadratic in the chain length).
    let src = r#"
        .decl edge(a: unsigned, b: unsigned)
        .decl path(a: unsigned, b: unsigned)
        .input edge
        path(X, Y) :- edge(X, Y).
        path(X, Z) :- path(X, Y), edge(Y, Z).
    "#;
    let program = Program::parse(src, "bench4.dl").expect("parse");
    let mut db = Database::new();
    let len = (2.0 * (n as f64).sqrt()) as u32; // 2000 for n = 1M: 2M path tuples
    db.insert_flat("edge", 2, (0..len).flat_map(|i| [i, i + 1]).collect());
    let t = Timer::start();
    let stats = program.evaluate(&mut db).expect("evaluate");
    let el = t.show();
    let out = db.rows("path").map(|(a, r)| r.len() / a).unwrap_or(0);
    println!(
        "closure    : chain of {len} edges -> {out} path tuples in {el} ({} rounds)",
        stats.iterations
    );
    println!("peak RSS   : {:.0} MiB", peak_rss_mb());
}
