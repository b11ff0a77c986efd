//! From posterior marginals to a ranked list of source lines (or methods).
//!
//! A statement's suspiciousness is `Pr(¬l | e)`, the posterior probability that its statement
//! vertex is incorrect. Only statements of `app` methods are ranked. **Line rule:** a source line's
//! score is the maximum over the statements on it (a line is as suspicious as its most suspicious
//! 3-address statement). **Method rule** (`--granularity method`, Table 4): a method's score is
//! its most suspicious statement's. Ties are kept: entries with equal scores (to 12 significant
//! digits) share a rank, numbered like sports results (1, 2, 2, 4); the order inside a tie is by
//! file, then line, only for stable output.

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

#[derive(Debug, Clone, Serialize)]
pub struct Ranked {
    pub rank: usize,
    pub file: String,
    pub line: u32,
    pub score: f64,
    pub method: String,
    /// Statement ids aggregated into this entry.
    pub statements: Vec<String>,
}

/// Scores per statement (only executed `app` statements appear).
pub type StmtScores = BTreeMap<StmtId, f64>;

pub fn round12(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let mag = 10f64.powi(11 - x.abs().log10().floor() as i32);
    (x * mag).round() / mag
}

/// Aggregates statement scores into ranked entries.
pub fn rank(dump: &Dump, scores: &StmtScores, g: Granularity) -> Vec<Ranked> {
    // (file, line, statement or method) → (best score, its method, statements)
    type Group = (f64, String, Vec<String>);
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
                let first = m
                    .stmts
                    .iter()
                    .map(|&x| dump.stmts[x as usize].line)
                    .min()
                    .unwrap_or(st.line);
                (st.file.clone(), first, m.id.clone())
            }
        };
        let e = groups
            .entry(key)
            .or_insert((f64::NEG_INFINITY, String::new(), Vec::new()));
        if score > e.0 {
            e.0 = score;
            e.1 = m.id.clone();
        }
        e.2.push(st.id.clone());
    }
    let mut v: Vec<Ranked> = groups
        .into_iter()
        .map(|((file, line, _), (score, method, statements))| Ranked {
            rank: 0,
            file,
            line,
            score,
            method,
            statements,
        })
        .collect();
    v.sort_by(|a, b| {
        round12(b.score)
            .total_cmp(&round12(a.score))
            .then_with(|| (&a.file, a.line).cmp(&(&b.file, b.line)))
    });
    assign_ranks(&mut v, |r| round12(r.score));
    v
}

/// Competition ranking over an already sorted list: equal keys share the smallest rank.
pub fn assign_ranks<T: HasRank>(v: &mut [T], key: impl Fn(&T) -> f64) {
    let mut prev: Option<f64> = None;
    let mut rank = 0;
    for (i, r) in v.iter_mut().enumerate() {
        let k = key(r);
        if prev != Some(k) {
            rank = i + 1;
            prev = Some(k);
        }
        r.set_rank(rank);
    }
}

pub trait HasRank {
    fn set_rank(&mut self, r: usize);
}

impl HasRank for Ranked {
    fn set_rank(&mut self, r: usize) {
        self.rank = r;
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
/// score when the entry is only in F).
pub fn aggregate(f: &[Ranked], fp: &[Ranked], g: Granularity) -> Vec<Ranked> {
    let key = |r: &Ranked| match g {
        Granularity::Line => (r.file.clone(), r.line, String::new()),
        Granularity::Method => (String::new(), 0, r.method.clone()),
        Granularity::Statement => (String::new(), 0, r.statements[0].clone()),
    };
    let rf: BTreeMap<_, usize> = f.iter().map(|r| (key(r), r.rank)).collect();
    let rfp: BTreeMap<_, usize> = fp.iter().map(|r| (key(r), r.rank)).collect();
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
        .map(|(k, r)| {
            let a = rf.get(&k).copied().unwrap_or(big);
            let b = rfp.get(&k).copied().unwrap_or(big);
            ((a.min(b), b), r)
        })
        .collect();
    v.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| (&a.1.file, a.1.line).cmp(&(&b.1.file, b.1.line)))
    });
    let keys: Vec<(usize, usize)> = v.iter().map(|x| x.0).collect();
    let mut out: Vec<Ranked> = v.into_iter().map(|x| x.1).collect();
    let mut rank = 0;
    for i in 0..out.len() {
        if i == 0 || keys[i] != keys[i - 1] {
            rank = i + 1;
        }
        out[i].rank = rank;
    }
    out
}
