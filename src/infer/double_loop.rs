//! Double-loop belief propagation: the concave-convex procedure (CCCP) of Yuille (2002), "CCCP
//! algorithms to minimize the Bethe and Kikuchi free energies: convergent alternatives to belief
//! propagation", on the schedules of [`super::bp`].
//!
//! Loopy BP's fixed points are the stationary points of the Bethe free energy
//!
//! ```text
//! F = Σ_α Σ_{x_α} b_α ln(b_α / ψ_α)  +  Σ_i (1 - n_i) Σ_{x_i} b_i ln b_i
//! ```
//!
//! (`α` the factors, `n_i` the number of factors that hold variable `i`), but BP need not reach
//! one: on EPGs with many short loops through near-deterministic factors its messages wander
//! (issue 20 §6). CCCP splits `F` into a convex part (the factor terms plus `Σ_i b_i ln b_i`)
//! and a concave one (`-Σ_i n_i b_i ln b_i`). The **outer loop** replaces the concave part by its
//! tangent at the current beliefs `b^t`; the **inner loop** minimises the resulting convex
//! problem under the marginalisation constraints. Solving the inner problem's stationarity
//! conditions for one variable at a time gives BP's own message form with one change: the
//! belief a variable hands its factors is
//!
//! ```text
//! b_i ∝ [ (b_i^t)^{κ_i} · Π_{α ∋ i} m_{α→i} ]^{1 / (κ_i + 1)},     μ_{i→α} ∝ b_i / m_{α→i}
//! ```
//!
//! i.e. in log-odds `ℓ_i = (κ_i · a_i + t_i) / (κ_i + 1)` with `a_i` the *anchor* (the log-odds of
//! `b_i^t`) and `t_i` BP's sum of incoming factor messages. Yuille bounds all of `n_i H_i`
//! (`κ_i = n_i`); we use the tighter split of Heskes (2006, "Convexity arguments for efficient
//! minimization of the Bethe and Kikuchi free energies"): each factor `f_v` of the EPG pairs its
//! entropy with its child's, `-H_{f_v} + H_v` is convex, so only `κ_v = n_v - 2 = |Ch(v)| - 1`
//! units of `H_v` need bounding, and a vertex with at most one child is not anchored at all.
//! Where the double loop settles, `ℓ_i = a_i = t_i`: its fixed points are exactly BP's (the same
//! beliefs BP would give if it converged; the polytree and reference-BP tests run it too).
//!
//! Each outer step lowers `F` when its inner problem is solved. The inner loop is the
//! schedule's ordinary sweeps; it starts with one sweep per outer step, which was the fastest
//! on every EPG measured (docs/model.md), and doubles its sweeps (up to [`MAX_INNER`]) whenever
//! the outer loop stalls. The run has converged when a sweep's messages and the anchors both
//! moved less than `tol` (in probability).

use rayon::prelude::*;

use super::kernel::sigmoid;

/// Inner sweeps per outer step start at 1 and double (up to [`MAX_INNER`]) whenever the anchors
/// have not reached a new smallest move for [`PATIENCE`] outer steps.
pub(super) const MAX_INNER: usize = 64;
pub(super) const PATIENCE: usize = 50;

/// Per-vertex anchors `a_v` (log-odds of the outer loop's last beliefs); empty until the first
/// outer step, and always empty for plain BP.
#[derive(Default)]
pub(super) struct Anchors {
    a: Vec<f64>,
}

impl Anchors {
    /// Whether no outer step has set the anchors yet (always, for plain BP).
    #[inline]
    pub(super) fn is_unset(&self) -> bool {
        self.a.is_empty()
    }

    /// The inner problem's belief of `v`, `(κ·a + t) / (κ + 1)`, from BP's sum `t` and the
    /// weight `κ` of `v`'s bounded entropy (`n`). `None` (use `t`) for plain BP, before the first
    /// outer step, where `κ = 0`, and where `t` or the anchor is certain (exact deductions from
    /// evidence stay as they are).
    #[inline]
    pub(super) fn belief(&self, v: usize, n: usize, t: f64) -> Option<f64> {
        let a = *self.a.get(v)?;
        if n == 0 || !(t.is_finite() && a.is_finite()) {
            return None;
        }
        let n = n as f64;
        Some((n * a + t) / (n + 1.0))
    }

    /// An outer step: the anchors become `new` (the current beliefs). Returns the largest change
    /// of an anchor in probability (0 for the first step, which only sets them).
    pub(super) fn set(&mut self, new: Vec<f64>) -> f64 {
        let moved = if self.a.len() == new.len() {
            self.a
                .par_iter()
                .zip(&new)
                .map(|(&o, &n)| {
                    let d = (sigmoid(n) - sigmoid(o)).abs();
                    if d.is_nan() {
                        0.0
                    } else {
                        d
                    }
                })
                .reduce(|| 0.0, f64::max)
        } else {
            0.0
        };
        self.a = new;
        moved
    }
}

/// The outer loop's bookkeeping.
pub(super) struct OuterLoop {
    /// Sweeps since the anchors last moved.
    inner: usize,
    /// Sweeps per inner loop (at most; an inner loop that settles within `tol` ends early).
    inner_len: usize,
    /// Smallest anchor move so far, and outer steps since it was reached.
    best: f64,
    stalled: usize,
    /// Outer steps taken (the first only sets the anchors).
    pub(super) steps: usize,
}

/// What to do after a sweep of the double loop.
pub(super) enum Step {
    /// Keep sweeping the inner loop.
    Inner,
    /// Move the anchors to the current beliefs.
    Outer,
}

impl OuterLoop {
    pub(super) fn new() -> OuterLoop {
        OuterLoop {
            inner: 0,
            inner_len: 1,
            best: f64::INFINITY,
            stalled: 0,
            steps: 0,
        }
    }

    /// After a sweep whose largest message change was `change`: move the anchors when the inner
    /// loop has settled (within `tol`) or has run its sweeps, and right after the first sweep
    /// (which sets the anchors to plain BP's first beliefs).
    pub(super) fn after_sweep(&mut self, change: f64, tol: f64) -> Step {
        self.inner += 1;
        if self.steps == 0 || change <= tol || self.inner >= self.inner_len {
            self.inner = 0;
            self.steps += 1;
            Step::Outer
        } else {
            Step::Inner
        }
    }

    /// After an outer step whose anchors moved by `moved`: solve the inner problems more
    /// thoroughly when the outer loop stalls. One sweep per outer step is the fastest on every
    /// EPG measured (docs/model.md), but only a solved inner problem makes each outer step lower
    /// the free energy; a stall (no new smallest move for [`PATIENCE`] steps) doubles the sweeps.
    pub(super) fn after_outer(&mut self, moved: f64) {
        if moved < self.best {
            self.best = moved;
            self.stalled = 0;
        } else {
            self.stalled += 1;
            if self.stalled >= PATIENCE {
                self.inner_len = (self.inner_len * 2).min(MAX_INNER);
                self.stalled = 0;
                self.best = moved;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_anchor_weighs_like_the_factors_it_stands_for() {
        let mut a = Anchors::default();
        assert_eq!(
            a.belief(0, 3, 1.0),
            None,
            "plain BP until the first outer step"
        );
        assert_eq!(a.set(vec![2.0, f64::NEG_INFINITY]), 0.0);
        // (3·2 + 6) / 4
        assert_eq!(a.belief(0, 3, 6.0), Some(3.0));
        // at a fixed point (t = a) the belief is BP's
        assert_eq!(a.belief(0, 7, 2.0), Some(2.0));
        assert_eq!(a.belief(1, 3, 6.0), None, "a certain anchor is left alone");
        assert_eq!(a.belief(0, 3, f64::INFINITY), None);
        let moved = a.set(vec![0.0, f64::NEG_INFINITY]);
        assert!((moved - (sigmoid(2.0) - 0.5)).abs() < 1e-15, "{moved}");
    }

    #[test]
    fn the_outer_loop_solves_inner_problems_longer_when_it_stalls() {
        let mut o = OuterLoop::new();
        assert!(
            matches!(o.after_sweep(0.5, 1e-7), Step::Outer),
            "first sweep sets anchors"
        );
        assert!(
            matches!(o.after_sweep(0.5, 1e-7), Step::Outer),
            "one sweep per step"
        );
        for k in 0..PATIENCE {
            o.after_outer(0.1 / (k + 1) as f64);
        }
        assert!(
            matches!(o.after_sweep(0.5, 1e-7), Step::Outer),
            "still improving"
        );
        for _ in 0..PATIENCE {
            o.after_outer(0.2);
        }
        assert!(
            matches!(o.after_sweep(0.5, 1e-7), Step::Inner),
            "stalled: two sweeps"
        );
        assert!(matches!(o.after_sweep(0.5, 1e-7), Step::Outer));
        assert!(matches!(o.after_sweep(0.5, 1e-7), Step::Inner));
        assert!(
            matches!(o.after_sweep(1e-8, 1e-7), Step::Outer),
            "settled early"
        );
        for _ in 0..20 * PATIENCE {
            o.after_outer(0.3);
        }
        assert_eq!(o.inner_len, MAX_INNER);
    }
}
