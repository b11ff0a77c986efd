//! Period-2 cycles: BP whose messages alternate between two states never converges, so the run
//! stops as soon as it is caught in one instead of sweeping on to `max_iter`.
//!
//! Undamped BP on EPGs often settles into such a cycle within a few sweeps: on corpus
//! `sqlparse-012`'s F∪P model (625,014 iterated vertices) every sweep moves some message by
//! 0.9998 and every second sweep restores it, so `localize`'s undamped attempt spent 200 sweeps
//! (two thirds of the model's inference time) before the damped retry it was always going to
//! need. The test is BP's own convergence test applied to two sweeps: every factor message is
//! within `tol` (in probability) of its value two sweeps earlier, while in both of these sweeps
//! some message moved by at least [`MIN_SWING`]. An alternating sequence `x* + c·(-r)^t` that
//! still converges shows the same picture with `D2 / D1 = (1 - r) / r` (`D1`, `D2`: the largest
//! one- and two-sweep changes), and needs `ln(D1 / tol) / -ln r ≤ ln(D1 / tol) · (1 + D1 / D2)`
//! more sweeps to get within `tol`; the run stops only when that bound exceeds the sweeps it has
//! left, so it stops only where it would not have converged. The check runs every second sweep,
//! on the sweeps of `max_iter`'s parity, so the marginals it stops with are those the run to
//! `max_iter` would have ended with, up to the cycle's drift.
//!
//! Undamped BP also oscillates without a period of 2 (or with one whose drift the check above
//! will not call a cycle): the largest message change stays at 0.3–1.0 sweep after sweep up to
//! `max_iter`. [`Stuck`] stops such a run once its largest change has stayed at or above
//! [`STUCK_CHANGE`] for [`STUCK_SWEEPS`] sweeps in a row, from sweep [`STUCK_FROM`] on. Measured
//! on the 357 undamped runs of `localize` on the stored dumps of four corpora (Defects4J Lang
//! odd, the corpus development subset, BugsInPy, QuixBugs; session 28): no run that converged
//! ever had a change of 0.3 or more for 15 sweeps in a row after its 15th sweep (the largest
//! such run of 15: 0.12), while 43 of the 70 runs that did not converge and lasted 30 sweeps
//! did, and stopping them at once saves 27 % of all the vertex-sweeps of those localizations.
//! Only undamped runs are checked: the changes of damped runs that do not converge (0.02–0.16
//! per sweep) overlap those of damped runs that converge, in their first 150 sweeps.

use rayon::prelude::*;

use super::kernel::sigmoid;

/// The smallest largest-change (in probability) that counts as a swing of an oscillating run.
pub(super) const STUCK_CHANGE: f64 = 0.3;
/// Sweeps in a row with such a swing after which the run is stopped.
pub(super) const STUCK_SWEEPS: usize = 15;
/// No run is stopped by [`Stuck`] before this sweep.
pub(super) const STUCK_FROM: usize = 30;

/// Counts the sweeps in a row whose largest change was at least [`STUCK_CHANGE`].
#[derive(Default)]
pub(super) struct Stuck {
    streak: usize,
}

impl Stuck {
    /// After sweep `it`, whose largest message change was `change`: whether the run has swung
    /// by [`STUCK_CHANGE`] or more for the last [`STUCK_SWEEPS`] sweeps (from [`STUCK_FROM`]).
    pub(super) fn caught(&mut self, it: usize, change: f64) -> bool {
        self.streak = if change >= STUCK_CHANGE {
            self.streak + 1
        } else {
            0
        };
        it >= STUCK_FROM && self.streak >= STUCK_SWEEPS
    }
}

/// Only a cycle whose messages swing by at least this much (in probability) per sweep is
/// stopped: the cycles of undamped BP on EPGs swing by 0.45 to 0.9998, while a small
/// alternation that still drifts can end elsewhere than where it was stopped.
pub(super) const MIN_SWING: f64 = 1e-2;

/// The first sweep whose messages are kept for the check (undamped runs that converge mostly
/// do within a few dozen sweeps, and the check costs a copy of the factor messages).
pub(super) const FIRST_CHECK: usize = 8;

/// Factor messages of two sweeps earlier (empty when that sweep swung by less than
/// [`MIN_SWING`]).
#[derive(Default)]
pub(super) struct TwoCycle {
    pi_v: Vec<f64>,
    lam_e: Vec<f64>,
}

impl TwoCycle {
    /// After sweep `it` of at most `max_iter`, whose largest message change was `change` (`D1`):
    /// whether the messages `pi_v`, `lam_e` are caught in a period-2 cycle that will not
    /// converge within `tol` before `max_iter` (see the module docs).
    pub(super) fn caught(
        &mut self,
        it: usize,
        max_iter: usize,
        pi_v: &[f64],
        lam_e: &[f64],
        change: f64,
        tol: f64,
    ) -> bool {
        if it < FIRST_CHECK || !(max_iter - it).is_multiple_of(2) {
            return false;
        }
        if change < MIN_SWING.max(tol) {
            self.pi_v.clear();
            self.lam_e.clear();
            return false;
        }
        let caught = !self.pi_v.is_empty() && {
            let d2 = largest_change(&self.pi_v, pi_v).max(largest_change(&self.lam_e, lam_e));
            d2 <= tol && sweeps_to_converge(change, d2, tol) > (max_iter - it) as f64
        };
        self.pi_v.clear();
        self.pi_v.extend_from_slice(pi_v);
        self.lam_e.clear();
        self.lam_e.extend_from_slice(lam_e);
        caught
    }
}

/// At most the sweeps an alternating geometric sequence with one- and two-sweep changes
/// `d1 > tol`, `d2` needs to change by less than `tol` per sweep: `ln(d1 / tol) / -ln r`, with
/// `-ln r ≥ 1 - r` and `1 / (1 - r) = 1 + d1 / d2` (infinite for an exact cycle, `d2 = 0`).
pub(super) fn sweeps_to_converge(d1: f64, d2: f64, tol: f64) -> f64 {
    (d1 / tol).ln() * (1.0 + d1 / d2)
}

/// `max |σ(a_i) - σ(b_i)|`; a pair of equal certainties (`∞ - ∞`) has not moved.
fn largest_change(a: &[f64], b: &[f64]) -> f64 {
    a.par_iter()
        .zip(b)
        .with_min_len(4096)
        .fold(
            || 0.0f64,
            |m, (&x, &y)| {
                // |σ(x) - σ(y)| ≤ |x - y| / 4: the exact value only where it could be larger.
                if (x - y).abs() * 0.25 > m {
                    m.max((sigmoid(x) - sigmoid(y)).abs())
                } else {
                    m
                }
            },
        )
        .reduce(|| 0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exact_cycle_is_caught_on_the_parity_of_max_iter() {
        let mut c = TwoCycle::default();
        let (a, b) = (vec![2.0, f64::NEG_INFINITY], vec![-2.0, f64::NEG_INFINITY]);
        let msgs = |it: usize| if it.is_multiple_of(2) { &a } else { &b };
        let caught: Vec<usize> = (1..=30)
            .filter(|&it| c.caught(it, 31, msgs(it), msgs(it), 0.76, 1e-7))
            .collect();
        // kept at 9, caught at 11 (odd, like 31): from there on every second sweep
        assert_eq!(caught.first(), Some(&11));
    }

    #[test]
    fn a_slowly_alternating_convergence_is_not_stopped() {
        // x_t = 0.3·(-0.9)^t: the two-sweep change is far smaller than the one-sweep change,
        // but the run converges within its sweeps.
        let x = |t: usize| 0.3 * (-0.9f64).powi(t as i32);
        let mut c = TwoCycle::default();
        for it in 1..=400 {
            let change = (sigmoid(x(it)) - sigmoid(x(it - 1))).abs();
            assert!(
                !c.caught(it, 400, &[x(it)], &[], change, 1e-7),
                "stopped at sweep {it}"
            );
        }
    }

    #[test]
    fn a_run_is_stuck_after_fifteen_large_swings_in_a_row_from_sweep_thirty() {
        let mut c = Stuck::default();
        // large swings from the start: stopped at sweep 30, not before
        let first = (1..=100).find(|&it| c.caught(it, 0.9));
        assert_eq!(first, Some(STUCK_FROM));
        // a sweep below the threshold starts the count again
        let mut c = Stuck::default();
        let changes = |it: usize| if it == 20 { 0.29 } else { 0.5 };
        let first = (1..=100).find(|&it| c.caught(it, changes(it)));
        assert_eq!(first, Some(20 + STUCK_SWEEPS));
        // a run that keeps changing by less never is
        let mut c = Stuck::default();
        assert!((1..=1000).all(|it| !c.caught(it, STUCK_CHANGE * 0.99)));
    }

    #[test]
    fn remaining_sweeps_follow_the_alternation_ratio() {
        assert!(sweeps_to_converge(0.5, 0.0, 1e-7).is_infinite());
        // r = 1/2: d2 / d1 = 1; from 1e-3 to 1e-7 takes ln(1e4) / ln 2 = 13.3 sweeps
        let bound = sweeps_to_converge(1e-3, 1e-3, 1e-7);
        assert!((13.3..20.0).contains(&bound), "{bound}");
    }
}
