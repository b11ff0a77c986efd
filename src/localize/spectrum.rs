//! The spectrum likelihood of each statement being the fault (`--spectrum-weight`, docs/model.md
//! "Spectrum likelihood").
//!
//! The EPG sees the failing traces and a few passing ones; the dump's coverage covers every test
//! that ran. Under the single-fault hypothesis "statement `l` is the fault", a test that executes
//! `l` fails with an unknown probability `h` (uniform prior) and a test that does not execute it
//! fails with probability `ε` (another cause: the single-fault assumption made robust). The
//! marginal likelihood of the observed outcomes is
//!
//! ```text
//! L(l) = ∫ h^{e_f} (1 - h)^{e_p} dh · ε^{n_f} (1 - ε)^{n_p} = B(e_f + 1, e_p + 1) · ε^{n_f} (1 - ε)^{n_p}
//! ```
//!
//! (`e_f`, `e_p`: failing / passing tests executing `l`; `n_f`, `n_p`: failing / passing tests
//! not executing it).
//! It orders statements like DStar for one failing test (fewer passing executions first) but is a
//! probability, so it combines with the EPG's posterior by Bayes' rule: the posterior log-odds of
//! `l` gain `w · ln(L(l) / max L)`, where `w` is the weight (0: off, 1: the likelihood as is).
//! Adding it after inference is exact for each statement's own prior given its likelihood
//! message from the EPG, and ignores the (second-order) change of explaining-away among
//! statements.

use std::collections::HashMap;

use crate::dump::{Dump, StmtId};

/// Default `ε`: the probability that a test which does not execute the fault fails anyway
/// (`--other-cause`; docs/model.md, "Spectrum likelihood").
pub const OTHER_CAUSE: f64 = 0.001;

/// `ln(L(l) / max L)` of every statement some test executed (≤ 0; 0 for the likeliest), with
/// `eps` = `ε` in (0, 1).
pub fn log_likelihoods(dump: &Dump, eps: f64) -> HashMap<StmtId, f64> {
    let (spectrum, executed) = crate::eval::baseline::stmt_spectrum(dump);
    // element ids come from the dump's statements: always in range
    let counts = crate::baselines::sbfl::spectrum_counts(&spectrum).unwrap_or_default();
    // ln k! for k up to the number of tests + 1
    let mut ln_fact = vec![0.0f64; spectrum.tests.len() + 2];
    for k in 1..ln_fact.len() {
        ln_fact[k] = ln_fact[k - 1] + (k as f64).ln();
    }
    let raw: Vec<(StmtId, f64)> = executed
        .into_iter()
        .map(|s| {
            let c = counts[s as usize];
            let (ef, ep) = (c.ef as usize, c.ep as usize);
            let ln_l = ln_fact[ef] + ln_fact[ep] - ln_fact[ef + ep + 1]
                + c.nf as f64 * eps.ln()
                + c.np as f64 * (-eps).ln_1p();
            (s, ln_l)
        })
        .collect();
    let max = raw.iter().map(|r| r.1).fold(f64::NEG_INFINITY, f64::max);
    raw.into_iter().map(|(s, l)| (s, l - max)).collect()
}

#[cfg(test)]
mod tests {
    /// B(e_f + 1, e_p + 1) by its closed form, against numeric integration.
    #[test]
    fn beta_likelihood_matches_the_integral() {
        for (ef, ep) in [(1usize, 0usize), (1, 3), (2, 5), (4, 1)] {
            let n = 200_000;
            let integral: f64 = (0..n)
                .map(|k| {
                    let h = (k as f64 + 0.5) / n as f64;
                    h.powi(ef as i32) * (1.0 - h).powi(ep as i32)
                })
                .sum::<f64>()
                / n as f64;
            let fact = |k: usize| (1..=k).map(|x| x as f64).product::<f64>();
            let closed = fact(ef) * fact(ep) / fact(ef + ep + 1);
            assert!(
                (integral - closed).abs() < 1e-6 * closed.max(1e-12),
                "{ef} {ep}"
            );
        }
    }
}

#[cfg(test)]
mod fixture_tests {
    use super::*;

    /// Fig. 3 (one failing, one passing test): the statement only the failing test runs (line
    /// 22) is the likeliest fault, with B(2,1) (1-ε); one the passing test runs too has
    /// B(2,2)/(B(2,1) (1-ε)) = 1/(3 (1-ε)) of its likelihood; one only the passing test runs,
    /// ε B(1,2)/(B(2,1) (1-ε)) = ε/(1-ε).
    #[test]
    fn likelihoods_on_fig3() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dumps/leftpad_fig3");
        let dump = Dump::load(&dir).unwrap();
        let eps = 0.1;
        let ll = log_likelihoods(&dump, eps);
        let cov = crate::eval::baseline::stmt_coverage(&dump);
        let ran = |t: usize, s: StmtId| cov.iter().any(|(x, c)| *x == t && c.contains(&s));
        let (fail, pass) = (0, 1);
        let mut seen = [false; 3];
        for (&s, &l) in &ll {
            let expected = match (ran(fail, s), ran(pass, s)) {
                (true, false) => 0.0,
                (true, true) => (1.0 / (3.0 * (1.0 - eps))).ln(),
                (false, true) => (eps / (1.0 - eps)).ln(),
                (false, false) => unreachable!("only executed statements are scored"),
            };
            assert!(
                (l - expected).abs() < 1e-12,
                "{}: {l} vs {expected}",
                dump.stmts[s as usize].id
            );
            seen[(ran(fail, s) as usize) + (ran(pass, s) as usize)] = true;
        }
        let line22 = dump.stmts.iter().position(|s| s.line == 22).unwrap() as StmtId;
        assert_eq!(ll[&line22], 0.0);
        assert!(
            seen[1] && seen[2],
            "the fixture has both kinds of statements"
        );
    }
}
