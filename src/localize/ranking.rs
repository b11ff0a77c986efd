//! From posterior marginals to a ranked list of source lines (or methods).
//!
//! A statement's suspiciousness is `Pr(¬l | e)`, the posterior probability that its statement
//! vertex is incorrect. Only statements of `app` methods are ranked. **Line rule:** a source line's
//! score is the maximum over the statements on it (a line is as suspicious as its most suspicious
//! 3-address statement). **Method rule** (`--granularity method`, Table 4): a method's score is
//! its most suspicious statement's. Ties are kept: entries with equal scores (to 12 significant
//! digits) share a rank, numbered like sports results (1, 2, 2, 4); the order inside a tie is by
//! file, then line, only for stable output. A probability too small for `f64`
//! (below [`TAIL`], e.g. `Pr(¬l | e)` of a statement that thousands of passing values vouch for)
//! is ordered by its logarithm, which BP keeps finite, so underflow never makes a tie.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::dump::{Dump, Role, StmtId};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    Line,
    Method,
    Statement,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Ranked {
    pub rank: usize,
    pub file: String,
    pub line: u32,
    /// The entry's score in its model (in `--mode both`: the F∪P score, or the F score of an
    /// entry only F ranks; the order then comes from [`Ranked::key`], not from this).
    #[serde(serialize_with = "finite_or_text")]
    pub score: f64,
    pub method: String,
    /// Statement ids aggregated into this entry.
    pub statements: Vec<String>,
    /// `--mode both` only: the aggregation key `min(r^F∪P, r^F)` that orders the entries
    /// (ties broken by `r^F∪P`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<usize>,
    /// `--mode both` only: the entry's rank and score in the F model (absent: F does not rank it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub f: Option<ModelRank>,
    /// `--mode both` only: its rank and score in the F∪P model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fp: Option<ModelRank>,
}

/// An entry's place in one of the aggregated models.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct ModelRank {
    pub rank: usize,
    #[serde(serialize_with = "finite_or_text")]
    pub score: f64,
}

/// Scores are numbers in JSON; a formula's infinity (DStar with `e_p + n_f = 0`) is the string
/// `"inf"` (JSON has no infinity, and `null` would read as "no score"), as in CSV.
fn finite_or_text<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    if x.is_finite() {
        s.serialize_f64(*x)
    } else {
        s.serialize_str(&x.to_string())
    }
}

/// Scores per statement (only executed `app` statements appear).
pub type StmtScores = BTreeMap<StmtId, Score>;

/// Below this a score is ordered by [`Score::tail`] (probabilities lose precision from 1e-308).
pub const TAIL: f64 = 1e-200;

/// A statement's suspiciousness: the reported `value` (a probability for PROSECUTOR, a formula's
/// value for a baseline) and, for values below [`TAIL`], `tail`, a number that orders them
/// (PROSECUTOR: the natural logarithm of the probability; baselines: 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score {
    pub value: f64,
    pub tail: f64,
}

impl From<f64> for Score {
    fn from(value: f64) -> Score {
        Score { value, tail: 0.0 }
    }
}

impl Score {
    /// A probability `p = σ(l)` given with its log-odds `l` (the tail is `ln σ(l)`).
    pub fn probability(p: f64, l: f64) -> Score {
        Score {
            value: p,
            tail: crate::infer::ln_sigmoid(l),
        }
    }

    /// The sort key: equal keys tie (12 significant digits).
    fn key(&self) -> (f64, f64) {
        let tail = if self.value.abs() < TAIL {
            round12(self.tail)
        } else {
            0.0
        };
        (round12(self.value), tail)
    }
}

pub fn round12(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let mag = 10f64.powi(11 - x.abs().log10().floor() as i32);
    (x * mag).round() / mag
}

/// The equal-weight mixture of two models' probabilities, `½ p_a + ½ p_b` (`--mode average`);
/// a statement one model does not score has probability 0 there (it is no candidate in that
/// model). Computed from the logarithms, so that probabilities below [`TAIL`] still order.
pub fn average(a: &StmtScores, b: &StmtScores) -> StmtScores {
    let half = 0.5f64.ln();
    let none = Score {
        value: 0.0,
        tail: f64::NEG_INFINITY,
    };
    // ln(1 - p) from ln p
    let ln_not = |s: &Score| (-s.tail.exp_m1()).ln();
    a.keys()
        .chain(b.keys())
        .map(|s| {
            let (x, y) = (a.get(s).unwrap_or(&none), b.get(s).unwrap_or(&none));
            let ln_p = half + crate::infer::log_add_exp(x.tail, y.tail);
            let ln_q = half + crate::infer::log_add_exp(ln_not(x), ln_not(y));
            (*s, Score::probability(ln_p.exp(), ln_p - ln_q))
        })
        .collect()
}

/// Aggregates statement scores into ranked entries.
pub fn rank(dump: &Dump, scores: &StmtScores, g: Granularity) -> Vec<Ranked> {
    // (file, line, statement or method) → (best score, its method, statements)
    type Group = (Score, String, Vec<String>);
    let mut groups: BTreeMap<(String, u32, String), Group> = BTreeMap::new();
    for (&s, &score) in scores {
        let st = &dump.stmts[s as usize];
        let m = &dump.methods[st.method as usize];
        if m.role != Role::App {
            continue;
        }
        let key = match g {
            Granularity::Line => (st.file.clone(), st.line, String::new()),
            Granularity::Statement => (st.file.clone(), st.line, st.id.clone()),
            Granularity::Method => {
                // the line that declares it, else its first statement's
                let first = m.line.unwrap_or_else(|| {
                    m.stmts
                        .iter()
                        .map(|&x| dump.stmts[x as usize].line)
                        .min()
                        .unwrap_or(st.line)
                });
                (st.file.clone(), first, m.id.clone())
            }
        };
        let e = groups.entry(key).or_insert((
            Score::from(f64::NEG_INFINITY),
            String::new(),
            Vec::new(),
        ));
        let better = score.value > e.0.value || (score.value == e.0.value && score.tail > e.0.tail);
        if better || e.1.is_empty() {
            e.0 = score;
            e.1 = m.id.clone();
        }
        e.2.push(st.id.clone());
    }
    let mut v: Vec<((f64, f64), Ranked)> = groups
        .into_iter()
        .map(|((file, line, _), (score, method, statements))| {
            let r = Ranked {
                rank: 0,
                file,
                line,
                score: score.value,
                method,
                statements,
                key: None,
                f: None,
                fp: None,
            };
            (score.key(), r)
        })
        .collect();
    v.sort_by(|(ka, a), (kb, b)| {
        (kb.0.total_cmp(&ka.0))
            .then(kb.1.total_cmp(&ka.1))
            .then_with(|| (&a.file, a.line).cmp(&(&b.file, b.line)))
    });
    let keys: Vec<(f64, f64)> = v.iter().map(|x| x.0).collect();
    let mut v: Vec<Ranked> = v.into_iter().map(|x| x.1).collect();
    assign_ranks(&mut v, &keys);
    v
}

/// Competition ranks (1, 2, 2, 4) of the entries of `out`, sorted by `keys`: equal keys share
/// the smallest rank.
pub(crate) fn assign_ranks<K: PartialEq>(out: &mut [Ranked], keys: &[K]) {
    for i in 0..out.len() {
        out[i].rank = if i > 0 && keys[i] == keys[i - 1] {
            out[i - 1].rank
        } else {
            i + 1
        };
    }
}

/// Pessimistic position (end of the tie group: entries sharing its rank) of the first entry
/// matching `hit`, if any.
pub fn pessimistic_position(v: &[Ranked], hit: impl Fn(&Ranked) -> bool) -> Option<usize> {
    let i = v.iter().position(hit)?;
    let rank = v[i].rank;
    Some(v.iter().rposition(|r| r.rank == rank).unwrap() + 1)
}

/// Combines the F and F∪P rankings (paper §4): `r = min(r^{F∪P}, r^F)`, ties broken by `r^{F∪P}`.
/// Entries are identified by (file, line), method or statement; the reported score is the F∪P score (the F
/// score when the entry is only in F), and each entry carries its key and both models' ranks and
/// scores, so that a reader can follow the order.
pub fn aggregate(f: &[Ranked], fp: &[Ranked], g: Granularity) -> Vec<Ranked> {
    let key = |r: &Ranked| match g {
        Granularity::Line => (r.file.clone(), r.line, String::new()),
        Granularity::Method => (String::new(), 0, r.method.clone()),
        Granularity::Statement => (String::new(), 0, r.statements[0].clone()),
    };
    let place = |r: &Ranked| ModelRank {
        rank: r.rank,
        score: r.score,
    };
    let rf: BTreeMap<_, ModelRank> = f.iter().map(|r| (key(r), place(r))).collect();
    let rfp: BTreeMap<_, ModelRank> = fp.iter().map(|r| (key(r), place(r))).collect();
    let mut all: BTreeMap<_, Ranked> = BTreeMap::new();
    for r in f.iter().chain(fp.iter()) {
        all.entry(key(r)).or_insert_with(|| r.clone());
    }
    for r in fp {
        all.insert(key(r), r.clone());
    }
    let big = usize::MAX / 2;
    let mut v: Vec<((usize, usize), Ranked)> = all
        .into_iter()
        .map(|(k, mut r)| {
            r.f = rf.get(&k).copied();
            r.fp = rfp.get(&k).copied();
            let a = r.f.map_or(big, |m| m.rank);
            let b = r.fp.map_or(big, |m| m.rank);
            r.key = Some(a.min(b));
            ((a.min(b), b), r)
        })
        .collect();
    v.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| (&a.1.file, a.1.line).cmp(&(&b.1.file, b.1.line)))
    });
    let keys: Vec<(usize, usize)> = v.iter().map(|x| x.0).collect();
    let mut out: Vec<Ranked> = v.into_iter().map(|x| x.1).collect();
    assign_ranks(&mut out, &keys);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(l: f64) -> Score {
        Score::probability(1.0 / (1.0 + (-l).exp()), l)
    }

    /// Probabilities that underflow (a statement vouched for by thousands of passing values)
    /// still order by their log-odds; equal ones tie; above the tail only the value counts.
    #[test]
    fn underflowing_probabilities_order_by_their_logarithm() {
        let (a, b) = (p(-2000.0), p(-3000.0));
        assert_eq!((a.value, b.value), (0.0, 0.0));
        assert!(a.key() > b.key());
        assert_eq!(p(-2000.0).key(), a.key());
        assert!(p(-10.0).key() > a.key());
        assert!(p(2.0).key() > p(1.0).key());
        // ln σ(l) is accurate on both sides
        assert!((p(-3000.0).tail + 3000.0).abs() < 1e-9);
        assert!((p(3.0).tail - (1.0f64 / (1.0 + (-3.0f64).exp())).ln()).abs() < 1e-15);
        // baselines: no tail, plain values (12 significant digits)
        assert_eq!(Score::from(0.3).key(), Score::from(0.3 + 1e-15).key());
        assert!(Score::from(0.3).key() > Score::from(0.2).key());
    }

    /// The mixture is the arithmetic mean of the two probabilities, a statement one model lacks
    /// counts 0 there, and mixtures of underflowing probabilities still order by their logarithm.
    #[test]
    fn average_is_the_mean_of_the_probabilities() {
        let a: StmtScores = [(0, p(1.0)), (1, p(-2.0)), (2, p(-3000.0))].into();
        let b: StmtScores = [(0, p(-1.0)), (2, p(-2000.0)), (3, p(0.5))].into();
        let m = average(&a, &b);
        let sig = |l: f64| 1.0 / (1.0 + (-l).exp());
        assert!((m[&0].value - 0.5).abs() < 1e-12, "{:?}", m[&0]);
        assert!((m[&1].value - 0.5 * sig(-2.0)).abs() < 1e-15);
        assert!((m[&3].value - 0.5 * sig(0.5)).abs() < 1e-15);
        // ln(½ e^-2000 + ½ e^-3000) = ln ½ - 2000 (to double precision)
        assert_eq!(m[&2].value, 0.0);
        assert!(
            (m[&2].tail - (0.5f64.ln() - 2000.0)).abs() < 1e-9,
            "{:?}",
            m[&2]
        );
        assert!(m[&1].key() > m[&2].key());
        // the log-odds of a mixture agree with its probability
        let l = m[&1].tail - (-m[&1].tail.exp_m1()).ln();
        assert!((sig(l) - m[&1].value).abs() < 1e-15);
    }

    #[test]
    fn competition_ranks_share_the_smallest_rank() {
        let r = |line| Ranked {
            rank: 0,
            file: "f.py".into(),
            line,
            score: 0.0,
            method: String::new(),
            ..Ranked::default()
        };
        let mut v: Vec<Ranked> = (1..=5).map(r).collect();
        assign_ranks(&mut v, &[3, 2, 2, 1, 1]);
        let ranks: Vec<usize> = v.iter().map(|x| x.rank).collect();
        assert_eq!(ranks, vec![1, 2, 2, 4, 4]);
    }
}
