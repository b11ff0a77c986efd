//! `prosecutor bench`: reproducible throughput measurements recorded in docs/performance.md.
//!
//! Each measurement is repeated `runs` times and the median is reported, together with a
//! reference measured in the same run (so ratios survive a noisy, shared machine).

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use crate::cdg::ControlDeps;
use crate::dump::Dump;
use crate::epg::Epg;
use crate::error::Error;
use crate::forward::forward;
use crate::pipeline::{all_traces, Rules};
use crate::synth::{write_dump, SynthOptions};

pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// Peak resident set size of this process so far, in MiB (Linux `VmHWM`).
pub fn peak_rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Largest dump on which `bench derive` also times the compiled (crepe) rules: crepe needs
/// minutes beyond this size (264 s at 1M steps), which would dominate the benchmark.
pub const CREPE_MAX_STEPS: usize = 300_000;

/// Derivation throughput: generate a synthetic dump of `steps` steps, then time load, forward
/// pass and rules (interpreted), and, once, the compiled rules on the same premises (only up
/// to [`CREPE_MAX_STEPS`] steps). The peak RSS is read before crepe runs, so it is the one of
/// the interpreted pipeline.
pub fn derive(
    steps: usize,
    runs: usize,
    seed: u64,
    rules: &Rules,
    compiled_too: bool,
) -> Result<String, Error> {
    let o = SynthOptions {
        steps,
        seed,
        ..SynthOptions::default()
    };
    let (_dir, path, total) = temp_synth(&o)?;
    let mut report = String::new();
    writeln!(
        report,
        "synthetic dump: {total} steps in {} traces, {} methods (seed {seed})",
        o.traces, o.methods
    )
    .unwrap();
    let mut t_load = Vec::new();
    let mut t_fwd = Vec::new();
    let mut t_rules = Vec::new();
    let mut cpu = [Vec::new(), Vec::new(), Vec::new()];
    let mut n_edges = 0;
    for _ in 0..runs.max(1) {
        let (dump, load, c_load) = time_cpu(|| Dump::load(&path));
        let dump = dump?;
        let (premises, fwd, c_fwd) = time_cpu(|| {
            let cd = ControlDeps::compute(&dump);
            forward(&dump, &cd, &all_traces(&dump))
        });
        let (epg, r, c_rules) = time_cpu(|| derive_with(&dump, &premises, rules));
        let epg = epg?;
        n_edges = epg.edges.len();
        t_load.push(load);
        t_fwd.push(fwd);
        t_rules.push(r);
        for (v, c) in cpu.iter_mut().zip([c_load, c_fwd, c_rules]) {
            v.push(c);
        }
        drop(epg);
        drop(premises);
        drop(dump);
    }
    let rss = peak_rss_mib();
    let (l, f, r) = (median(t_load), median(t_fwd), median(t_rules));
    let total_s = l + f + r;
    writeln!(report, "edges derived: {n_edges}").unwrap();
    writeln!(
        report,
        "median of {runs} runs: load {l:.3} s, forward pass {f:.3} s, rules ({}) {r:.3} s",
        rules.describe()
    )
    .unwrap();
    writeln!(report, "end to end: {total_s:.3} s = {:.0} steps/s (paper's implementation: 70 steps/s; ratio {:.0}x)", total as f64 / total_s, total as f64 / total_s / 70.0)
        .unwrap();
    let [cl, cf, cr] = cpu.map(median);
    let cpu_total = cl + cf + cr;
    writeln!(
        report,
        "CPU time (this thread), median: load {cl:.3} s, forward pass {cf:.3} s, rules {cr:.3} s; end to end {cpu_total:.3} s = {:.0} steps per CPU-second",
        total as f64 / cpu_total
    )
    .unwrap();
    if let Some(m) = rss {
        writeln!(report, "peak RSS: {m:.0} MiB").unwrap();
    }
    if compiled_too && total <= CREPE_MAX_STEPS {
        let dump = Dump::load(&path)?;
        let cd = ControlDeps::compute(&dump);
        let premises = forward(&dump, &cd, &all_traces(&dump));
        let (e2, c) = time(|| Epg::derive_compiled(&premises));
        let e2 = e2?;
        if e2.edges.len() != n_edges {
            writeln!(
                report,
                "WARNING: compiled and interpreted rules disagree ({} vs {n_edges} edges)",
                e2.edges.len(),
            )
            .unwrap();
        }
        writeln!(
            report,
            "compiled (crepe) rules, 1 run: {c:.3} s; interpreted / compiled = {:.3}",
            r / c
        )
        .unwrap();
    } else if compiled_too {
        writeln!(
            report,
            "compiled (crepe) rules: not timed above {CREPE_MAX_STEPS} steps (too slow)"
        )
        .unwrap();
    }
    Ok(report)
}

pub fn derive_with(
    dump: &Dump,
    premises: &crate::forward::Premises,
    rules: &Rules,
) -> Result<Epg, Error> {
    crate::pipeline::derive_premises(dump, premises, rules)
}

/// CPU time of the calling thread so far, in seconds (Linux `/proc/thread-self/schedstat`,
/// nanosecond resolution); `None` where unavailable.
pub fn thread_cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

/// Wall and CPU (this thread) time of `f`; CPU time is NaN where unavailable.
pub fn time_cpu<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let c0 = thread_cpu_s();
    let (x, wall) = time(f);
    let cpu = match (c0, thread_cpu_s()) {
        (Some(a), Some(b)) => b - a,
        _ => f64::NAN,
    };
    (x, wall, cpu)
}

pub fn time<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let x = f();
    (x, t.elapsed().as_secs_f64())
}

/// Writes a synthetic dump (for `prosecutor bench gen`).
pub fn generate(out: &Path, steps: usize, seed: u64) -> Result<usize, Error> {
    let o = SynthOptions {
        steps,
        seed,
        ..SynthOptions::default()
    };
    write_synth(out, &o)
}

/// Writes a synthetic dump to `out`; returns its number of steps.
fn write_synth(out: &Path, o: &SynthOptions) -> Result<usize, Error> {
    write_dump(out, o).map_err(|e| Error::Io {
        path: out.display().to_string(),
        source: e,
    })
}

/// A synthetic dump in a temporary directory (deleted when the returned `TempDir` drops): the
/// directory, the dump's path and its number of steps.
fn temp_synth(o: &SynthOptions) -> Result<(tempfile::TempDir, std::path::PathBuf, usize), Error> {
    let dir =
        tempfile::tempdir().map_err(|e| Error::Other(format!("cannot create a temp dir: {e}")))?;
    let path = dir.path().join("dump");
    let total = write_synth(&path, o)?;
    Ok((dir, path, total))
}

/// Compression throughput: Algorithm 1 over every trace of a loop-heavy synthetic dump.
pub fn compress(steps: usize, runs: usize, seed: u64) -> Result<String, Error> {
    let o = SynthOptions {
        steps,
        seed,
        max_iter: 40,
        ..SynthOptions::default()
    };
    let (_dir, path, total) = temp_synth(&o)?;
    let dump = Dump::load(&path)?;
    let mut times = Vec::new();
    let mut kept = 0;
    for _ in 0..runs {
        let (k, t) = time(|| {
            dump.traces
                .iter()
                .map(|tr| {
                    crate::compress::compress(&dump, tr, tr.steps.len(), dump.failure_step(tr))
                        .len()
                })
                .sum::<usize>()
        });
        kept = k;
        times.push(t);
    }
    let t = median(times);
    let mut report = String::new();
    writeln!(
        report,
        "synthetic dump: {total} steps (loops of up to 40 iterations, seed {seed})"
    )
    .unwrap();
    writeln!(report, "compression, median of {runs} runs: {t:.3} s = {:.0} steps/s; kept {kept} of {total} steps ({:.1}%)", total as f64 / t, 100.0 * kept as f64 / total as f64).unwrap();
    writeln!(
        report,
        "paper: 710 steps/s; ratio {:.0}x",
        total as f64 / t / 710.0
    )
    .unwrap();
    Ok(report)
}

/// What `bench localize` runs on.
pub enum LocalizeInput<'a> {
    /// A synthetic dump of about `steps` steps.
    Synthetic { steps: usize, seed: u64 },
    /// A dump on disk (e.g. a traced QuixBugs program); it is only read.
    Dump(&'a Path),
}

/// `localize` without counterfactuals (load, compression, both models, BP), median of `runs`.
/// With `reference`, the same runs again with BP iterating on the whole graph
/// (`BpOptions::prune_barren` off), interleaved, for a ratio measured under the same load.
pub fn localize(
    input: LocalizeInput,
    runs: usize,
    reference: bool,
    rules: &Rules,
) -> Result<String, Error> {
    let (_dir, path, what) = match input {
        LocalizeInput::Synthetic { steps, seed } => {
            let o = SynthOptions {
                steps,
                seed,
                ..SynthOptions::default()
            };
            let (dir, path, total) = temp_synth(&o)?;
            let what = format!(
                "synthetic dump: {total} steps in {} traces (seed {seed})",
                o.traces
            );
            (Some(dir), path, what)
        }
        LocalizeInput::Dump(p) => (None, p.to_path_buf(), format!("dump {}", p.display())),
    };
    let run = |prune: bool| -> Result<(crate::localize::Report, f64), Error> {
        let mut o = crate::localize::Options::default();
        o.bp.prune_barren = prune;
        let (r, t) = time(|| -> Result<crate::localize::Report, Error> {
            let dump = Dump::load(&path)?;
            crate::localize::localize(&dump, rules, &o)
        });
        Ok((r?, t))
    };
    let describe = |r: &crate::localize::Report| {
        format!(
            "{} ranked lines; inference {} after {} iterations; {} steps kept of {}",
            r.ranking.len(),
            if r.convergence.converged {
                "converged"
            } else {
                "did not converge"
            },
            r.convergence.iterations,
            r.stats.kept_steps,
            r.stats.steps
        )
    };
    let (mut times, mut ref_times) = (Vec::new(), Vec::new());
    let (mut last, mut same) = (String::new(), true);
    for _ in 0..runs {
        let (r, t) = run(true)?;
        last = describe(&r);
        times.push(t);
        if reference {
            let (r0, t0) = run(false)?;
            ref_times.push(t0);
            same &= r0
                .ranking
                .iter()
                .map(|x| (&x.file, x.line, x.rank))
                .eq(r.ranking.iter().map(|x| (&x.file, x.line, x.rank)));
        }
    }
    let t = median(times);
    let mut report = String::new();
    writeln!(report, "{what}").unwrap();
    writeln!(
        report,
        "localize (no counterfactuals, mode both), median of {runs} runs: {t:.2} s ({last})"
    )
    .unwrap();
    if reference {
        let t0 = median(ref_times);
        writeln!(
            report,
            "reference, BP on the whole graph (no barren-vertex pruning), median of {runs} runs: {t0:.2} s; ratio {:.2}x; {}",
            t0 / t,
            if same { "same ranking" } else { "RANKINGS DIFFER" }
        )
        .unwrap();
    }
    writeln!(
        report,
        "paper: 240 s per bug (geometric mean); ratio {:.0}x",
        240.0 / t
    )
    .unwrap();
    if let Some(m) = peak_rss_mib() {
        writeln!(report, "peak RSS: {m:.0} MiB").unwrap();
    }
    Ok(report)
}
