//! Timing of loopy BP on [`synthetic_dag`] graphs (for `prosecutor bench` and the ignored
//! timing test). Nothing here asserts on time.

use std::fmt::Write as _;
use std::time::Instant;

use serde::Serialize;

use super::{loopy_bp, synthetic_dag, BpOptions, Cpd, InferError, Schedule};

/// Timing of one BP configuration (median over `runs`).
#[derive(Debug, Clone, Serialize)]
pub struct BenchRun {
    pub n: usize,
    pub edges: usize,
    pub unobserved: usize,
    pub schedule: Schedule,
    pub log_domain: bool,
    pub damping: f64,
    pub threads: usize,
    pub runs: usize,
    /// Median wall-clock seconds of `loopy_bp` (graph construction excluded).
    pub median_secs: f64,
    pub min_secs: f64,
    pub max_secs: f64,
    /// Median process CPU seconds (user + system, all threads) per run, from `/proc/self/stat`
    /// (Linux only; 10 ms resolution). Less sensitive than wall time to a loaded machine.
    pub median_cpu_secs: Option<f64>,
    /// Median over runs of the CPU seconds of the busiest pool thread (from
    /// `/proc/thread-self/stat`, Linux only). On an idle machine this is about the wall time; with
    /// the work spread evenly it is about `median_cpu_secs / threads`, whatever the machine's load.
    pub median_busiest_thread_cpu_secs: Option<f64>,
    pub iterations: usize,
    pub max_change: f64,
    pub converged: bool,
}

/// Process CPU time (user + system) in seconds, from `/proc/self/stat` (Linux).
fn process_cpu_secs() -> Option<f64> {
    cpu_secs_of("/proc/self/stat")
}

/// CPU time (user + system) of the calling thread in seconds (Linux).
fn thread_cpu_secs() -> Option<f64> {
    cpu_secs_of("/proc/thread-self/stat")
}

/// CPU time of every thread of `pool` (one entry per thread).
fn pool_cpu_secs(pool: &rayon::ThreadPool) -> Option<Vec<f64>> {
    pool.broadcast(|_| thread_cpu_secs()).into_iter().collect()
}

/// User + system time of a `/proc/.../stat` file, in seconds.
fn cpu_secs_of(path: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(path).ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0) // USER_HZ is 100 on Linux
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let k = v.len();
    if k % 2 == 1 {
        v[k / 2]
    } else {
        0.5 * (v[k / 2 - 1] + v[k / 2])
    }
}

/// Times BP on `synthetic_dag(n, seed)` for: Sequential on 1 thread, then Parallel and Flooding
/// each on 1 thread and on `threads` threads (if > 1), each `runs` times, with default options
/// otherwise (`log_domain` and `damping` as given).
pub fn bench_runs(
    n: usize,
    threads: usize,
    runs: usize,
    seed: u64,
    log_domain: bool,
    damping: f64,
) -> Result<Vec<BenchRun>, InferError> {
    let runs = runs.max(1);
    let (dag, ev) = synthetic_dag(n, seed);
    let unobserved = ev.iter().filter(|e| e.is_none()).count();
    let mut configs = vec![(Schedule::Sequential, 1)];
    for schedule in [Schedule::Parallel, Schedule::Flooding] {
        configs.push((schedule, 1));
        if threads > 1 {
            configs.push((schedule, threads));
        }
    }
    let mut out = Vec::new();
    for (schedule, t) in configs {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .map_err(|e| {
                InferError::BadParameter(format!("cannot build a {t}-thread pool: {e}"))
            })?;
        let opts = BpOptions {
            schedule,
            log_domain,
            damping,
            max_iter: BENCH_MAX_ITER,
            ..BpOptions::default()
        };
        let mut times = Vec::with_capacity(runs);
        let mut cpu = Vec::with_capacity(runs);
        let mut busiest = Vec::with_capacity(runs);
        let mut last = None;
        for _ in 0..runs {
            let p0 = pool_cpu_secs(&pool);
            let c0 = process_cpu_secs();
            let t0 = Instant::now();
            let m = pool.install(|| loopy_bp(&dag, &Cpd::default(), &ev, &opts))?;
            times.push(t0.elapsed().as_secs_f64());
            if let (Some(a), Some(b)) = (c0, process_cpu_secs()) {
                cpu.push(b - a);
            }
            if let (Some(a), Some(b)) = (p0, pool_cpu_secs(&pool)) {
                let max = a.iter().zip(&b).map(|(x, y)| y - x).fold(0.0, f64::max);
                busiest.push(max);
            }
            last = Some(m.convergence);
        }
        let conv = last.expect("runs >= 1");
        let min_secs = times.iter().cloned().fold(f64::INFINITY, f64::min);
        let max_secs = times.iter().cloned().fold(0.0, f64::max);
        out.push(BenchRun {
            n,
            edges: dag.num_edges(),
            unobserved,
            schedule,
            log_domain,
            damping,
            threads: t,
            runs,
            median_secs: median(&mut times),
            min_secs,
            max_secs,
            median_cpu_secs: (cpu.len() == runs).then(|| median(&mut cpu)),
            median_busiest_thread_cpu_secs: (busiest.len() == runs).then(|| median(&mut busiest)),
            iterations: conv.iterations,
            max_change: conv.max_change,
            converged: conv.converged,
        });
    }
    Ok(out)
}

/// Iteration cap of the benchmark runs (convergence is reported, not assumed).
pub const BENCH_MAX_ITER: usize = 1000;

/// Damping used by [`bench_report`]: undamped sequential BP falls into a period-2 oscillation on
/// the hub statements of large synthetic EPGs (and flooding converges very slowly), 0.5 converges.
pub const BENCH_DAMPING: f64 = 0.5;

/// Human-readable report of [`bench_runs`] (`runs` runs per configuration, damping
/// [`BENCH_DAMPING`], linear domain, plus the log domain when `with_log_domain`).
pub fn bench_report(n: usize, threads: usize, runs: usize, with_log_domain: bool) -> String {
    let mut s = String::new();
    let domains: &[bool] = if with_log_domain {
        &[false, true]
    } else {
        &[false]
    };
    for &log_domain in domains {
        match bench_runs(n, threads, runs, 1, log_domain, BENCH_DAMPING) {
            Ok(rows) => {
                if let Some(r) = rows.first() {
                    let _ = writeln!(
                        s,
                        "loopy BP on synthetic_dag(n = {}, seed = 1): {} edges, {} unobserved, log_domain = {}, damping = {}",
                        r.n, r.edges, r.unobserved, log_domain, r.damping
                    );
                }
                for r in &rows {
                    let _ = writeln!(
                        s,
                        "  {:<10} threads={} wall median {:.3} s (min {:.3}, max {:.3}, {} runs), cpu median {} (busiest thread {})  iterations={} max_change={:.2e} converged={}",
                        format!("{:?}", r.schedule),
                        r.threads,
                        r.median_secs,
                        r.min_secs,
                        r.max_secs,
                        r.runs,
                        r.median_cpu_secs.map_or("n/a".to_string(), |c| format!("{c:.2} s")),
                        r.median_busiest_thread_cpu_secs
                            .map_or("n/a".to_string(), |c| format!("{c:.2} s")),
                        r.iterations,
                        r.max_change,
                        r.converged
                    );
                }
            }
            Err(e) => {
                let _ = writeln!(s, "benchmark failed (log_domain = {log_domain}): {e}");
            }
        }
    }
    s
}
