//! Where the faulty line lands in a ranking: positions with ties, top-k hits, EXAM.
//!
//! A ranking is a `localize` line ranking (`Vec<Ranked>`, competition ranks: entries sharing a
//! `rank` are one tie group). For a fault given as a set of lines (several lines = one fault that
//! spans them), with `s` lines ranked strictly before the first tie group holding a faulty line,
//! `g` lines in that group and `k` of them faulty:
//!
//! * **pessimistic position** `s + g` (the end of the tie group),
//! * **average position** `s + (g + 1) / (k + 1)`, the expected position of the first faulty line
//!   under uniformly random tie-breaking,
//! * **top-k** (pessimistic) hit: pessimistic position `<= k`; the *average* top-k count adds the
//!   probability of a hit under random tie-breaking,
//! * **EXAM** = pessimistic position / number of lines in the ranking.
//!
//! A fault none of whose lines is ranked is **not found**: its position is `n + 1` (n = number of
//! ranked lines), so its EXAM is `(n + 1) / n`, worse than any found fault, and it is never a top-k
//! hit. The numbers come from [`crate::metrics::Ranking`] (tie groups = equal ranks).

use crate::localize::ranking::Ranked;
use crate::metrics::Ranking;

/// One fault: a file (as written in the manifest, relative to the source directory) and lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultyLines {
    pub file: String,
    pub lines: Vec<u32>,
}

impl FaultyLines {
    /// Parses `file:line[,line...]`.
    pub fn parse(s: &str) -> Result<FaultyLines, String> {
        let (file, lines) = s
            .rsplit_once(':')
            .ok_or_else(|| format!("faulty entry {s:?}: expected FILE:LINE[,LINE...]"))?;
        if file.is_empty() {
            return Err(format!("faulty entry {s:?}: empty file name"));
        }
        let mut out = Vec::new();
        for l in lines.split(',') {
            let l = l.trim();
            match l.parse::<u32>() {
                Ok(n) if n > 0 => out.push(n),
                _ => {
                    return Err(format!(
                        "faulty entry {s:?}: {l:?} is not a line number (positive integer)"
                    ))
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(FaultyLines {
            file: file.to_owned(),
            lines: out,
        })
    }

    /// Whether a ranked entry's file (as the front-end wrote it) is this fault's file: equal,
    /// or equal after dropping leading directories on either side (`src/a.py` vs `a.py`).
    pub fn file_matches(&self, ranked_file: &str) -> bool {
        path_suffix_eq(ranked_file, &self.file)
    }
}

/// `a` and `b` name the same file if one is a path suffix of the other (whole components).
pub fn path_suffix_eq(a: &str, b: &str) -> bool {
    let norm = |s: &str| -> Vec<String> {
        s.replace('\\', "/")
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .map(str::to_owned)
            .collect()
    };
    let (a, b) = (norm(a), norm(b));
    if a.is_empty() || b.is_empty() {
        return false;
    }
    let n = a.len().min(b.len());
    a[a.len() - n..] == b[b.len() - n..]
}

/// Where a fault landed in one ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    /// Number of lines in the ranking.
    pub n_lines: usize,
    /// `None`: no faulty line is ranked.
    pub position: Option<crate::metrics::Position>,
    /// The ranking as tie groups (element = index in the line ranking) and the faulty elements.
    ranking: Ranking,
    faulty: Vec<u32>,
}

impl Located {
    pub fn found(&self) -> bool {
        self.position.is_some()
    }

    /// Pessimistic position (`n_lines + 1` when not found).
    pub fn pessimistic(&self) -> f64 {
        self.position.map_or(self.n_lines as f64 + 1.0, |p| p.worst)
    }

    /// Expected position under random tie-breaking (`n_lines + 1` when not found).
    pub fn average(&self) -> f64 {
        self.position
            .map_or(self.n_lines as f64 + 1.0, |p| p.average)
    }

    /// Pessimistic position / number of ranked lines (`None` for an empty ranking).
    pub fn exam(&self) -> Option<f64> {
        (self.n_lines > 0).then(|| self.pessimistic() / self.n_lines as f64)
    }

    /// Top-k hit with the faulty line at the end of its tie group.
    pub fn hit(&self, k: usize) -> bool {
        self.position.is_some_and(|p| p.worst <= k as f64)
    }

    /// Probability of a top-k hit under uniformly random tie-breaking.
    pub fn hit_expected(&self, k: usize) -> f64 {
        if self.position.is_none() {
            return 0.0;
        }
        self.ranking
            .top_k(&self.faulty, k)
            .map_or(0.0, |t| t.expected)
    }
}

/// Locates a fault (all its lines, possibly in several files) in a line ranking.
pub fn locate(ranking: &[Ranked], fault: &[FaultyLines]) -> Located {
    let scores: Vec<(u32, f64)> = ranking
        .iter()
        .enumerate()
        .map(|(i, r)| (i as u32, -(r.rank as f64)))
        .collect();
    let faulty: Vec<u32> = ranking
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            fault
                .iter()
                .any(|f| f.lines.contains(&r.line) && f.file_matches(&r.file))
        })
        .map(|(i, _)| i as u32)
        .collect();
    located(ranking.len(), scores, faulty)
}

/// Where the `faulty` elements land among `n` elements scored by `scores` (distinct ids).
fn located(n: usize, scores: Vec<(u32, f64)>, faulty: Vec<u32>) -> Located {
    // ids are distinct and scores finite: `Ranking::new` cannot fail.
    let r =
        Ranking::new(scores).unwrap_or_else(|_| Ranking::new(Vec::new()).expect("empty ranking"));
    Located {
        n_lines: n,
        position: r.position(&faulty),
        ranking: r,
        faulty,
    }
}

/// The methods (ids, as in [`Ranked::method`]) that hold a fault's lines: those with an
/// application statement on a faulty line; for a faulty line without one (a declaration, a
/// line javac emits nothing for), the method whose statements span it in that file, the
/// narrowest one.
pub fn faulty_methods(dump: &crate::dump::Dump, fault: &[FaultyLines]) -> Vec<String> {
    use crate::dump::Role;
    let mut out = std::collections::BTreeSet::new();
    for f in fault {
        // method -> (first line, last line) of its statements in this file
        let mut spans: std::collections::BTreeMap<u32, (u32, u32)> = Default::default();
        for st in dump.stmts.iter().filter(|st| f.file_matches(&st.file)) {
            if dump.methods[st.method as usize].role != Role::App {
                continue;
            }
            let e = spans.entry(st.method).or_insert((st.line, st.line));
            *e = (e.0.min(st.line), e.1.max(st.line));
            if f.lines.contains(&st.line) {
                out.insert(dump.methods[st.method as usize].id.clone());
            }
        }
        for &l in &f.lines {
            let on_line = dump
                .stmts
                .iter()
                .any(|st| st.line == l && f.file_matches(&st.file));
            if on_line {
                continue;
            }
            if let Some((m, _)) = spans
                .iter()
                .filter(|(_, (a, b))| *a <= l && l <= *b)
                .min_by_key(|(_, (a, b))| b - a)
            {
                out.insert(dump.methods[*m as usize].id.clone());
            }
        }
    }
    out.into_iter().collect()
}

/// Locates a fault at method level in a line ranking: a method ranks where its best line does
/// (methods whose best lines tie, tie), and the fault is found where its first method is.
pub fn locate_method(ranking: &[Ranked], methods: &[String]) -> Located {
    let mut best: Vec<(&str, usize)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for r in ranking {
        if seen.insert(r.method.as_str()) {
            best.push((r.method.as_str(), r.rank));
        }
    }
    let scores: Vec<(u32, f64)> = best
        .iter()
        .enumerate()
        .map(|(i, (_, rank))| (i as u32, -(*rank as f64)))
        .collect();
    let faulty: Vec<u32> = best
        .iter()
        .enumerate()
        .filter(|(_, (m, _))| methods.iter().any(|x| x == m))
        .map(|(i, _)| i as u32)
        .collect();
    located(best.len(), scores, faulty)
}

/// Keeps the entries `keep` accepts and renumbers the ranks (ties stay ties).
pub fn filter_ranking(ranking: Vec<Ranked>, keep: impl Fn(&Ranked) -> bool) -> Vec<Ranked> {
    let mut out: Vec<Ranked> = Vec::with_capacity(ranking.len());
    let mut prev_old = None;
    for r in ranking.into_iter().filter(|r| keep(r)) {
        let old = r.rank;
        let mut r = r;
        r.rank = match (prev_old, out.last()) {
            (Some(p), Some(last)) if p == old => last.rank,
            _ => out.len() + 1,
        };
        prev_old = Some(old);
        out.push(r);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ranking from (file, line, rank) triples.
    fn ranking(v: &[(&str, u32, usize)]) -> Vec<Ranked> {
        v.iter()
            .map(|&(f, l, r)| Ranked {
                rank: r,
                file: f.to_owned(),
                line: l,
                score: 0.0,
                method: "m".to_owned(),
                ..Ranked::default()
            })
            .collect()
    }

    fn fault(s: &str) -> Vec<FaultyLines> {
        vec![FaultyLines::parse(s).unwrap()]
    }

    #[test]
    fn methods_rank_where_their_best_line_does() {
        let mut r = ranking(&[
            ("a.py", 7, 1),
            ("a.py", 3, 2),
            ("a.py", 9, 2),
            ("a.py", 5, 4),
        ]);
        for (e, m) in r.iter_mut().zip(["f", "g", "h", "g"]) {
            e.method = m.to_owned();
        }
        // f: 1st alone; g and h tie at 2-3 (their best lines tie)
        let l = locate_method(&r, &["g".to_owned()]);
        assert_eq!((l.n_lines, l.pessimistic(), l.average()), (3, 3.0, 2.5));
        assert!(l.hit(3) && !l.hit(2));
        let l = locate_method(&r, &["f".to_owned(), "h".to_owned()]);
        assert_eq!(l.pessimistic(), 1.0);
        let l = locate_method(&r, &["k".to_owned()]);
        assert!(!l.found());
        assert_eq!(l.pessimistic(), 4.0);
    }

    #[test]
    fn parse_faulty_entries() {
        assert_eq!(
            FaultyLines::parse("a.py:9").unwrap(),
            FaultyLines {
                file: "a.py".into(),
                lines: vec![9]
            }
        );
        assert_eq!(
            FaultyLines::parse("pkg/a.py:12, 9,12").unwrap().lines,
            vec![9, 12]
        );
        assert!(FaultyLines::parse("a.py")
            .unwrap_err()
            .contains("FILE:LINE"));
        assert!(FaultyLines::parse("a.py:0")
            .unwrap_err()
            .contains("\"0\" is not a line number"));
        assert!(FaultyLines::parse("a.py:x").is_err());
        assert!(FaultyLines::parse(":3").is_err());
    }

    #[test]
    fn file_matching_by_path_suffix() {
        let f = FaultyLines::parse("leftpad.py:9").unwrap();
        assert!(f.file_matches("leftpad.py"));
        assert!(f.file_matches("src/leftpad.py"));
        assert!(f.file_matches("./leftpad.py"));
        assert!(!f.file_matches("src/notleftpad.py"));
        assert!(!f.file_matches("leftpad.pyx"));
        let g = FaultyLines::parse("pkg/m.py:1").unwrap();
        assert!(g.file_matches("m.py"));
        assert!(!g.file_matches("other/m.py"));
    }

    #[test]
    fn unique_top_entry() {
        let r = ranking(&[("a", 9, 1), ("a", 3, 2), ("a", 4, 3)]);
        let l = locate(&r, &fault("a:9"));
        assert_eq!((l.pessimistic(), l.average(), l.n_lines), (1.0, 1.0, 3));
        assert!(l.hit(1));
        assert_eq!(l.hit_expected(1), 1.0);
        assert_eq!(l.exam(), Some(1.0 / 3.0));
    }

    #[test]
    fn ties_pessimistic_and_average() {
        // one line before, then a tie of 4 holding the faulty line, then one more.
        let r = ranking(&[
            ("a", 1, 1),
            ("a", 2, 2),
            ("a", 9, 2),
            ("a", 3, 2),
            ("a", 4, 2),
            ("a", 5, 6),
        ]);
        let l = locate(&r, &fault("a:9"));
        assert_eq!(l.pessimistic(), 5.0);
        assert_eq!(l.average(), 1.0 + 5.0 / 2.0); // s + (g+1)/(k+1) = 1 + 5/2
        assert!(!l.hit(3) && l.hit(5));
        // top-3: 2 of the 4 tied slots are inside; P(hit) = 1 - C(3,2)/C(4,2) = 1/2.
        assert!((l.hit_expected(3) - 0.5).abs() < 1e-12);
        assert_eq!(l.hit_expected(1), 0.0);
        assert_eq!(l.hit_expected(5), 1.0);
        assert_eq!(l.exam(), Some(5.0 / 6.0));
    }

    #[test]
    fn multi_line_fault_counts_at_its_best_line() {
        let r = ranking(&[("a", 1, 1), ("a", 7, 2), ("a", 9, 3), ("a", 8, 3)]);
        let l = locate(&r, &fault("a:9,7"));
        assert_eq!((l.pessimistic(), l.average()), (2.0, 2.0));
        // two faulty lines in one tie group of 3: average = s + (3+1)/(2+1).
        let r = ranking(&[("a", 1, 1), ("a", 7, 2), ("a", 9, 2), ("a", 8, 2)]);
        let l = locate(&r, &fault("a:9,7"));
        assert_eq!(l.pessimistic(), 4.0);
        assert!((l.average() - (1.0 + 4.0 / 3.0)).abs() < 1e-12);
        // top-2: one tied slot, P(faulty) = 2/3.
        assert!((l.hit_expected(2) - 2.0 / 3.0).abs() < 1e-12);
        // lines of a fault in two files
        let r = ranking(&[("a", 1, 1), ("b", 4, 2)]);
        let two = vec![
            FaultyLines::parse("a:9").unwrap(),
            FaultyLines::parse("b:4").unwrap(),
        ];
        assert_eq!(locate(&r, &two).pessimistic(), 2.0);
    }

    #[test]
    fn not_found() {
        let r = ranking(&[("a", 1, 1), ("a", 2, 1), ("b", 9, 3)]);
        let l = locate(&r, &fault("a:9"));
        assert!(!l.found());
        assert_eq!((l.pessimistic(), l.average()), (4.0, 4.0));
        assert_eq!(l.exam(), Some(4.0 / 3.0));
        assert!(!l.hit(20));
        assert_eq!(l.hit_expected(20), 0.0);
        let empty = locate(&[], &fault("a:9"));
        assert_eq!(
            (empty.n_lines, empty.exam(), empty.pessimistic()),
            (0, None, 1.0)
        );
    }

    #[test]
    fn filtering_keeps_ties() {
        let r = ranking(&[
            ("a", 1, 1),
            ("b", 2, 1),
            ("a", 3, 1),
            ("b", 4, 4),
            ("a", 5, 5),
            ("a", 6, 5),
        ]);
        let f = filter_ranking(r, |e| e.file == "a");
        let got: Vec<(u32, usize)> = f.iter().map(|e| (e.line, e.rank)).collect();
        assert_eq!(got, vec![(1, 1), (3, 1), (5, 3), (6, 3)]);
    }
}
