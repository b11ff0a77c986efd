//! Running independent, blocking jobs (test re-runs, evaluation cases) on a fixed number of
//! plain OS threads.
//!
//! Not rayon: a rayon worker that waits — on a child process, or on a nested pool's `install` —
//! steals other queued items of its own pool meanwhile, so `--jobs N` would not bound how many
//! cases or test processes run at once. Here each of `jobs` threads takes the next item only when
//! its current one is finished; work inside a job may still use rayon's global pool.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Applies `f` to every item with at most `jobs` items in progress at a time; the results are in
/// the order of `items`.
pub fn map<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    let workers = jobs.max(1).min(items.len());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                slots.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
            });
        }
    });
    slots
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|r| r.expect("every item was mapped"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn keeps_order_and_bounds_concurrency() {
        for jobs in [1, 2, 3, 8] {
            let running = AtomicUsize::new(0);
            let peak = AtomicUsize::new(0);
            let items: Vec<u32> = (0..24).collect();
            let out = map(&items, jobs, |&x| {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                // a job that blocks, as a child process does, and nests rayon work
                std::thread::sleep(Duration::from_millis(2));
                use rayon::prelude::*;
                let s: u32 = (0..x).into_par_iter().sum();
                running.fetch_sub(1, Ordering::SeqCst);
                s
            });
            assert_eq!(
                out,
                items.iter().map(|&x| (0..x).sum()).collect::<Vec<u32>>()
            );
            assert!(
                peak.load(Ordering::SeqCst) <= jobs,
                "jobs {jobs}: peak {peak:?}"
            );
        }
        assert!(map(&[] as &[u8], 4, |_| 0u8).is_empty());
    }
}
