//! Spectrum-based fault localization (SBFL) formulas.
//!
//! Input: a coverage [`Spectrum`] (per test: verdict + covered element
//! indices). For every element the four standard counts are
//!
//! * `ef` failing tests that cover it, `ep` passing tests that cover it,
//! * `nf` failing tests that do not, `np` passing tests that do not,
//!
//! with `F = ef + nf` (all failing) and `P = ep + np` (all passing).
//!
//! | [`Formula`] | score | 0/0 and x/0 handling |
//! |---|---|---|
//! | `ochiai` | `ef / sqrt(F · (ef + ep))` | denominator 0 → 0 |
//! | `tarantula` | `(ef/F) / (ef/F + ep/P)` | `ef/F` := 0 if `F = 0`, `ep/P` := 0 if `P = 0`; 0/0 → 0 |
//! | `dstar` | `ef² / (ep + nf)` (exponent 2) | denominator 0: 0 if `ef = 0`, else `f64::MAX` (covered by every failing test and no passing test: most suspicious; all such elements tie) |
//! | `op2` | `ef − ep / (P + 1)` | never divides by 0 |
//! | `jaccard` | `ef / (ef + nf + ep)` | denominator 0 → 0 |
//! | `barinel` | `1 − ep / (ep + ef)` | never covered → 0 |
//! | `naish1` | `−1` if `nf > 0`, else `np` | — |
//!
//! No formula ever returns NaN or an infinity.

use std::fmt;
use std::str::FromStr;

/// A coverage spectrum over `n_elements` program elements.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Spectrum {
    pub n_elements: usize,
    pub tests: Vec<SpectrumTest>,
}

/// One test: verdict and the indices (`< n_elements`) of covered elements.
/// Duplicated indices count once.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpectrumTest {
    pub passed: bool,
    pub covered: Vec<u32>,
}

/// Per-element spectrum counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub ef: u32,
    pub ep: u32,
    pub nf: u32,
    pub np: u32,
}

/// Errors of SBFL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SbflError {
    #[error(
        "test #{test} covers element {element}, but the spectrum has only {n_elements} elements"
    )]
    ElementOutOfRange {
        test: usize,
        element: u32,
        n_elements: usize,
    },
    #[error("unknown SBFL formula {0:?} (expected one of: ochiai tarantula dstar op2 jaccard barinel naish1)")]
    UnknownFormula(String),
}

/// An SBFL ranking formula.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Formula {
    Ochiai,
    Tarantula,
    /// DStar with exponent 2.
    DStar,
    Op2,
    Jaccard,
    Barinel,
    Naish1,
}

impl Formula {
    pub const ALL: [Formula; 7] = [
        Formula::Ochiai,
        Formula::Tarantula,
        Formula::DStar,
        Formula::Op2,
        Formula::Jaccard,
        Formula::Barinel,
        Formula::Naish1,
    ];

    /// Lower-case name, as accepted by `FromStr`.
    pub fn name(self) -> &'static str {
        match self {
            Formula::Ochiai => "ochiai",
            Formula::Tarantula => "tarantula",
            Formula::DStar => "dstar",
            Formula::Op2 => "op2",
            Formula::Jaccard => "jaccard",
            Formula::Barinel => "barinel",
            Formula::Naish1 => "naish1",
        }
    }

    /// Score of one element from its counts (see the module table).
    pub fn score(self, c: Counts) -> f64 {
        let (ef, ep, nf, np) = (c.ef as f64, c.ep as f64, c.nf as f64, c.np as f64);
        let f = ef + nf;
        let p = ep + np;
        let ratio = |a: f64, b: f64| if b == 0.0 { 0.0 } else { a / b };
        match self {
            Formula::Ochiai => ratio(ef, (f * (ef + ep)).sqrt()),
            Formula::Tarantula => {
                let fr = ratio(ef, f);
                let pr = ratio(ep, p);
                ratio(fr, fr + pr)
            }
            Formula::DStar => {
                let d = ep + nf;
                if d == 0.0 {
                    if ef == 0.0 {
                        0.0
                    } else {
                        f64::MAX
                    }
                } else {
                    ef * ef / d
                }
            }
            Formula::Op2 => ef - ep / (p + 1.0),
            Formula::Jaccard => ratio(ef, ef + nf + ep),
            Formula::Barinel => {
                if ep + ef == 0.0 {
                    0.0
                } else {
                    1.0 - ep / (ep + ef)
                }
            }
            Formula::Naish1 => {
                if c.nf > 0 {
                    -1.0
                } else {
                    np
                }
            }
        }
    }
}

impl fmt::Display for Formula {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Formula {
    type Err = SbflError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Formula::ALL
            .iter()
            .copied()
            .find(|f| f.name() == s)
            .ok_or_else(|| SbflError::UnknownFormula(s.to_string()))
    }
}

/// Counts `(ef, ep, nf, np)` of every element.
pub fn spectrum_counts(s: &Spectrum) -> Result<Vec<Counts>, SbflError> {
    let n = s.n_elements;
    let mut ef = vec![0u32; n];
    let mut ep = vec![0u32; n];
    let mut seen = vec![usize::MAX; n];
    let (mut total_f, mut total_p) = (0u32, 0u32);
    for (ti, t) in s.tests.iter().enumerate() {
        if t.passed {
            total_p += 1;
        } else {
            total_f += 1;
        }
        for &e in &t.covered {
            let i = e as usize;
            if i >= n {
                return Err(SbflError::ElementOutOfRange {
                    test: ti,
                    element: e,
                    n_elements: n,
                });
            }
            if seen[i] == ti {
                continue;
            }
            seen[i] = ti;
            if t.passed {
                ep[i] += 1;
            } else {
                ef[i] += 1;
            }
        }
    }
    Ok((0..n)
        .map(|i| Counts {
            ef: ef[i],
            ep: ep[i],
            nf: total_f - ef[i],
            np: total_p - ep[i],
        })
        .collect())
}

/// Score of every element (index = element) under `formula`.
pub fn sbfl_scores(s: &Spectrum, formula: Formula) -> Result<Vec<f64>, SbflError> {
    Ok(spectrum_counts(s)?
        .into_iter()
        .map(|c| formula.score(c))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(passed: bool, covered: &[u32]) -> SpectrumTest {
        SpectrumTest {
            passed,
            covered: covered.to_vec(),
        }
    }

    /// 5 elements, 2 failing + 3 passing tests (F = 2, P = 3):
    ///   t1 F {0,1,2}; t2 F {0,2,2}; t3 P {0,1}; t4 P {1,3}; t5 P {0,3}
    /// counts (ef,ep,nf,np): e0 (2,2,0,1) e1 (1,2,1,1) e2 (2,0,0,3)
    ///                       e3 (0,2,2,1) e4 (0,0,2,3) (never covered)
    fn hand() -> Spectrum {
        Spectrum {
            n_elements: 5,
            tests: vec![
                t(false, &[0, 1, 2]),
                t(false, &[0, 2, 2]), // duplicate 2 counts once
                t(true, &[0, 1]),
                t(true, &[1, 3]),
                t(true, &[0, 3]),
            ],
        }
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!(
                (x - y).abs() <= 1e-15 * y.abs().max(1.0),
                "element {i}: {x} vs {y}"
            );
        }
    }

    #[test]
    fn counts_of_hand_spectrum() {
        let c = spectrum_counts(&hand()).unwrap();
        let c: Vec<(u32, u32, u32, u32)> = c.iter().map(|c| (c.ef, c.ep, c.nf, c.np)).collect();
        assert_eq!(
            c,
            vec![
                (2, 2, 0, 1),
                (1, 2, 1, 1),
                (2, 0, 0, 3),
                (0, 2, 2, 1),
                (0, 0, 2, 3)
            ]
        );
    }

    #[test]
    fn formulas_on_hand_spectrum() {
        let s = hand();
        let sc = |f: Formula| sbfl_scores(&s, f).unwrap();
        // Ochiai: 2/sqrt(2*4), 1/sqrt(2*3), 2/sqrt(2*2), 0/sqrt(2*2), 0/0 -> 0.
        close(
            &sc(Formula::Ochiai),
            &[2.0 / 8f64.sqrt(), 1.0 / 6f64.sqrt(), 1.0, 0.0, 0.0],
        );
        // Tarantula: (1)/(1+2/3)=3/5, (1/2)/(1/2+2/3)=3/7, 1/(1+0)=1, 0/(0+2/3)=0, 0/0 -> 0.
        close(&sc(Formula::Tarantula), &[0.6, 3.0 / 7.0, 1.0, 0.0, 0.0]);
        // DStar^2: 4/(2+0)=2, 1/(2+1)=1/3, 4/0 -> MAX, 0/(2+2)=0, 0/(0+2)=0.
        close(&sc(Formula::DStar), &[2.0, 1.0 / 3.0, f64::MAX, 0.0, 0.0]);
        // Op2: ef - ep/(P+1) with P+1 = 4: 2-1/2, 1-1/2, 2-0, 0-1/2, 0.
        close(&sc(Formula::Op2), &[1.5, 0.5, 2.0, -0.5, 0.0]);
        // Jaccard: 2/(2+0+2), 1/(1+1+2), 2/(2+0+0), 0/4, 0/2.
        close(&sc(Formula::Jaccard), &[0.5, 0.25, 1.0, 0.0, 0.0]);
        // Barinel: 1-2/4, 1-2/3, 1-0/2, 1-2/2, never covered -> 0.
        close(&sc(Formula::Barinel), &[0.5, 1.0 / 3.0, 1.0, 0.0, 0.0]);
        // Naish1: nf>0 -> -1 else np: e0 np=1, e1 -1, e2 np=3, e3 -1, e4 -1.
        close(&sc(Formula::Naish1), &[1.0, -1.0, 3.0, -1.0, -1.0]);
    }

    #[test]
    fn never_nan_on_degenerate_spectra() {
        // No tests at all, only passing tests, only failing tests.
        let specs = [
            Spectrum {
                n_elements: 3,
                tests: vec![],
            },
            Spectrum {
                n_elements: 3,
                tests: vec![t(true, &[0]), t(true, &[])],
            },
            Spectrum {
                n_elements: 3,
                tests: vec![t(false, &[0, 1]), t(false, &[0])],
            },
        ];
        for s in &specs {
            for f in Formula::ALL {
                for v in sbfl_scores(s, f).unwrap() {
                    assert!(v.is_finite(), "{f} gave {v}");
                }
            }
        }
    }

    /// CP paper Figure 1 baselines (spec cp-seed-001 §4/§5): statement-level
    /// Tarantula/Jaccard on blocks b1..b4, and Ochiai on edges e1..e5 ("Branch").
    #[test]
    fn cp_figure1_baseline_scores() {
        // Blocks executed per test (t1..t7; t3, t6 fail).
        let blocks = Spectrum {
            n_elements: 4,
            tests: vec![
                t(true, &[0, 1, 3]),
                t(true, &[0, 3]),
                t(false, &[0, 1, 2, 3]),
                t(true, &[0, 3]),
                t(true, &[0, 1, 3]),
                t(false, &[0, 1, 3]),
                t(true, &[0, 3]),
            ],
        };
        let r2 = |v: Vec<f64>| {
            v.iter()
                .map(|x| (x * 100.0).round() / 100.0)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            r2(sbfl_scores(&blocks, Formula::Tarantula).unwrap()),
            vec![0.5, 0.71, 1.0, 0.5]
        );
        assert_eq!(
            r2(sbfl_scores(&blocks, Formula::Jaccard).unwrap()),
            vec![0.29, 0.5, 0.5, 0.29]
        );
        let edges = Spectrum {
            n_elements: 6,
            tests: vec![
                t(true, &[0, 1, 4]),
                t(true, &[0, 2]),
                t(false, &[0, 1, 3, 5]),
                t(true, &[0, 2]),
                t(true, &[0, 1, 4]),
                t(false, &[0, 1, 4]),
                t(true, &[0, 2]),
            ],
        };
        assert_eq!(
            r2(sbfl_scores(&edges, Formula::Ochiai).unwrap())[..5].to_vec(),
            vec![0.53, 0.71, 0.0, 0.71, 0.41]
        );
    }

    #[test]
    fn parse_and_errors() {
        for f in Formula::ALL {
            assert_eq!(f.name().parse::<Formula>().unwrap(), f);
            assert_eq!(f.to_string(), f.name());
        }
        assert!(matches!(
            "Ochiai".parse::<Formula>(),
            Err(SbflError::UnknownFormula(_))
        ));
        let bad = Spectrum {
            n_elements: 2,
            tests: vec![t(true, &[0]), t(false, &[2])],
        };
        assert_eq!(
            sbfl_scores(&bad, Formula::Ochiai),
            Err(SbflError::ElementOutOfRange {
                test: 1,
                element: 2,
                n_elements: 2
            })
        );
    }
}
