//! Interop with de-facto fault-localization tools (formats in `docs/formats.md`):
//!
//! * GZoltar `matrix.txt` + `spectra.csv` → [`Spectrum`] ([`read_gzoltar`]),
//! * FauxPy `Scores_<Technique>.csv` → [`NamedScores`] ([`read_fauxpy_scores`]),
//! * rankings as GZoltar-style `name;suspiciousness_value` CSV
//!   ([`write_gzoltar_ranking`], read back with [`parse_gzoltar_ranking`]).
//!
//! Every parse error names `file:line` (1-based; line 0 = the whole file).

use std::fmt;
use std::io::Write;
use std::path::Path;

use super::sbfl::{Spectrum, SpectrumTest};
use crate::metrics::{MetricError, Ranking};

/// A parse or I/O error located in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InteropError {
    pub file: String,
    /// 1-based line; 0 when the error concerns the whole file.
    pub line: usize,
    pub msg: String,
}

impl fmt::Display for InteropError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.msg)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.msg)
        }
    }
}
impl std::error::Error for InteropError {}

fn err(file: &str, line: usize, msg: impl Into<String>) -> InteropError {
    InteropError {
        file: file.to_string(),
        line,
        msg: msg.into(),
    }
}

fn read_text(path: &Path) -> Result<String, InteropError> {
    std::fs::read_to_string(path)
        .map_err(|e| err(&path.display().to_string(), 0, format!("cannot read: {e}")))
}

/// Lines with their 1-based numbers, `\r` stripped.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
}

/// A GZoltar spectrum: element names (from `spectra.csv`) and coverage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GzoltarSpectrum {
    /// Element `i` of the spectrum is `elements[i]`, e.g.
    /// `org.example$Calc#add(int,int):10`.
    pub elements: Vec<String>,
    pub spectrum: Spectrum,
}

/// Read GZoltar's `matrix.txt` and `spectra.csv`.
pub fn read_gzoltar(matrix: &Path, spectra: &Path) -> Result<GzoltarSpectrum, InteropError> {
    let m = read_text(matrix)?;
    let s = read_text(spectra)?;
    parse_gzoltar(
        &m,
        &matrix.display().to_string(),
        &s,
        &spectra.display().to_string(),
    )
}

/// Parse `spectra.csv` (one element name per line; an optional first line
/// `name` is a header) and `matrix.txt` (one line per test: one
/// whitespace-separated coverage value per element, then `+` for a passed or
/// `-` for a failed test). Coverage values are non-negative integers; any
/// value > 0 counts as covered. Blank lines are skipped.
pub fn parse_gzoltar(
    matrix_text: &str,
    matrix_name: &str,
    spectra_text: &str,
    spectra_name: &str,
) -> Result<GzoltarSpectrum, InteropError> {
    let mut elements = Vec::new();
    for (no, line) in lines(spectra_text) {
        let name = line.trim();
        if name.is_empty() {
            continue;
        }
        if elements.is_empty() && no == 1 && name == "name" {
            continue;
        }
        elements.push(name.to_string());
    }
    if elements.is_empty() {
        return Err(err(spectra_name, 0, "no elements (empty spectra file)"));
    }
    let n = elements.len();
    let mut tests = Vec::new();
    for (no, line) in lines(matrix_text) {
        let toks: Vec<&str> = line.split_whitespace().collect();
        if toks.is_empty() {
            continue;
        }
        let (verdict, values) = toks.split_last().expect("non-empty");
        let passed = match *verdict {
            "+" => true,
            "-" => false,
            other => {
                return Err(err(
                    matrix_name,
                    no,
                    format!("last column must be '+' (pass) or '-' (fail), found {other:?}"),
                ))
            }
        };
        if values.len() != n {
            return Err(err(
                matrix_name,
                no,
                format!(
                    "{} coverage columns, but {spectra_name} lists {n} elements",
                    values.len()
                ),
            ));
        }
        let mut covered = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let x: u64 = v.parse().map_err(|_| {
                err(
                    matrix_name,
                    no,
                    format!(
                        "column {}: expected a non-negative integer, found {v:?}",
                        i + 1
                    ),
                )
            })?;
            if x > 0 {
                covered.push(i as u32);
            }
        }
        tests.push(SpectrumTest { passed, covered });
    }
    if tests.is_empty() {
        return Err(err(matrix_name, 0, "no tests (empty matrix file)"));
    }
    Ok(GzoltarSpectrum {
        elements,
        spectrum: Spectrum {
            n_elements: n,
            tests,
        },
    })
}

/// Named scores in file order; element id = index.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedScores {
    pub names: Vec<String>,
    pub scores: Vec<f64>,
}

impl NamedScores {
    /// Ranking over ids `0..len` (exact ties).
    pub fn ranking(&self) -> Result<Ranking, MetricError> {
        Ranking::new(
            self.scores
                .iter()
                .enumerate()
                .map(|(i, &s)| (i as u32, s))
                .collect(),
        )
    }
    /// Id of an element name.
    pub fn id_of(&self, name: &str) -> Option<u32> {
        self.names.iter().position(|n| n == name).map(|i| i as u32)
    }
    pub fn len(&self) -> usize {
        self.names.len()
    }
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// Split one CSV record (RFC 4180 quoting: `"a,b"`, `""` for a quote).
/// Records spanning several lines are not supported.
fn split_csv_line(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut at_start = true;
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    cur.push('"');
                } else {
                    quoted = false;
                    match chars.peek() {
                        None | Some(',') => {}
                        Some(x) => return Err(format!("unexpected {x:?} after closing quote")),
                    }
                }
            } else {
                cur.push(c);
            }
        } else if c == ',' {
            fields.push(std::mem::take(&mut cur));
            at_start = true;
            continue;
        } else if c == '"' && at_start {
            quoted = true;
        } else {
            cur.push(c);
        }
        at_start = false;
    }
    if quoted {
        return Err("unterminated quoted field".into());
    }
    fields.push(cur);
    Ok(fields)
}

fn parse_score(s: &str) -> Option<f64> {
    match s.trim() {
        "Infinity" | "inf" | "+inf" => Some(f64::INFINITY),
        "-Infinity" | "-inf" => Some(f64::NEG_INFINITY),
        t => t.parse::<f64>().ok().filter(|x| !x.is_nan()),
    }
}

/// Read a FauxPy `Scores_<Technique>.csv` file.
pub fn read_fauxpy_scores(path: &Path) -> Result<NamedScores, InteropError> {
    parse_fauxpy_scores(&read_text(path)?, &path.display().to_string())
}

/// Parse FauxPy scores: comma-separated with header `Entity,Score`, one
/// `entity,score` row per program entity (statement `path::line`, function
/// `path::name::first::last`). Duplicate entities and NaN scores are errors.
pub fn parse_fauxpy_scores(text: &str, file: &str) -> Result<NamedScores, InteropError> {
    let mut names = Vec::new();
    let mut scores = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut header = false;
    for (no, line) in lines(text) {
        if line.trim().is_empty() {
            continue;
        }
        let f = split_csv_line(line).map_err(|m| err(file, no, m))?;
        if !header {
            if f.len() == 2 && f[0].trim() == "Entity" && f[1].trim() == "Score" {
                header = true;
                continue;
            }
            return Err(err(
                file,
                no,
                format!("expected header \"Entity,Score\", found {line:?}"),
            ));
        }
        if f.len() != 2 {
            return Err(err(
                file,
                no,
                format!("expected 2 fields (entity, score), found {}", f.len()),
            ));
        }
        let score =
            parse_score(&f[1]).ok_or_else(|| err(file, no, format!("invalid score {:?}", f[1])))?;
        if !seen.insert(f[0].clone()) {
            return Err(err(file, no, format!("duplicate entity {:?}", f[0])));
        }
        names.push(f[0].clone());
        scores.push(score);
    }
    if !header {
        return Err(err(file, 0, "empty file (no \"Entity,Score\" header)"));
    }
    Ok(NamedScores { names, scores })
}

/// Parse a GZoltar ranking (`name;suspiciousness_value` header, then
/// `name;score` rows). The name may itself not contain `;`.
pub fn parse_gzoltar_ranking(text: &str, file: &str) -> Result<NamedScores, InteropError> {
    let mut names = Vec::new();
    let mut scores = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut header = false;
    for (no, line) in lines(text) {
        if line.trim().is_empty() {
            continue;
        }
        if !header {
            if line.trim() == "name;suspiciousness_value" {
                header = true;
                continue;
            }
            return Err(err(
                file,
                no,
                format!("expected header \"name;suspiciousness_value\", found {line:?}"),
            ));
        }
        let (name, score) = line
            .rsplit_once(';')
            .ok_or_else(|| err(file, no, "expected \"name;score\""))?;
        if name.contains(';') {
            return Err(err(file, no, "more than one ';' in the row"));
        }
        let s =
            parse_score(score).ok_or_else(|| err(file, no, format!("invalid score {score:?}")))?;
        if !seen.insert(name.to_string()) {
            return Err(err(file, no, format!("duplicate element {name:?}")));
        }
        names.push(name.to_string());
        scores.push(s);
    }
    if !header {
        return Err(err(
            file,
            0,
            "empty file (no \"name;suspiciousness_value\" header)",
        ));
    }
    Ok(NamedScores { names, scores })
}

/// Format a score like Java's `Double.toString` for common values
/// (`1.0`, `0.5`, `Infinity`); other values use Rust's shortest round-trip form.
fn format_score(x: f64) -> String {
    if x == f64::INFINITY {
        "Infinity".into()
    } else if x == f64::NEG_INFINITY {
        "-Infinity".into()
    } else if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// Write `(name, score)` pairs as a GZoltar ranking: header
/// `name;suspiciousness_value`, rows sorted by descending score (ties keep
/// input order). Names containing `;` or a line break, and NaN scores, are
/// rejected before anything is written (`file` = `"<output>"`, `line` = the
/// output line the entry would have had).
pub fn write_gzoltar_ranking<W: Write>(
    mut out: W,
    entries: &[(String, f64)],
) -> Result<(), InteropError> {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    for (i, (name, s)) in entries.iter().enumerate() {
        if name.contains(';') || name.contains('\n') || name.contains('\r') {
            return Err(err(
                "<output>",
                i + 2,
                format!("element name {name:?} contains ';' or a line break"),
            ));
        }
        if s.is_nan() {
            return Err(err("<output>", i + 2, format!("score of {name:?} is NaN")));
        }
    }
    order.sort_by(|&a, &b| entries[b].1.total_cmp(&entries[a].1));
    let io = |e: std::io::Error| err("<output>", 0, format!("write failed: {e}"));
    writeln!(out, "name;suspiciousness_value").map_err(io)?;
    for i in order {
        writeln!(out, "{};{}", entries[i].0, format_score(entries[i].1)).map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baselines::sbfl::{sbfl_scores, Formula};

    fn testdata(p: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/baselines/testdata")
            .join(p)
    }

    #[test]
    fn gzoltar_files_to_spectrum_to_ranking_csv() {
        let g = read_gzoltar(
            &testdata("gzoltar/matrix.txt"),
            &testdata("gzoltar/spectra.csv"),
        )
        .unwrap();
        assert_eq!(g.elements.len(), 5);
        assert_eq!(g.elements[0], "org.example$Calc#add(int,int):10");
        assert_eq!(g.spectrum.tests.len(), 5);
        assert!(!g.spectrum.tests[0].passed && g.spectrum.tests[2].passed);
        assert_eq!(g.spectrum.tests[0].covered, vec![0, 1, 2]);
        // Same spectrum as the hand-computed SBFL example.
        let sc = sbfl_scores(&g.spectrum, Formula::Ochiai).unwrap();
        let entries: Vec<(String, f64)> = g.elements.iter().cloned().zip(sc).collect();
        let mut buf = Vec::new();
        write_gzoltar_ranking(&mut buf, &entries).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let want = std::fs::read_to_string(testdata("gzoltar/ochiai.ranking.csv")).unwrap();
        assert_eq!(text, want);
        // Round trip.
        let back = parse_gzoltar_ranking(&text, "mem").unwrap();
        assert_eq!(back.names[0], "org.example$Calc#sub(int,int):20");
        assert_eq!(back.scores[1], 2.0 / 8f64.sqrt());
        let rk = back.ranking().unwrap();
        let id = back.id_of("org.example$Calc#add(int,int):11").unwrap();
        assert_eq!(rk.position(&[id]).unwrap().worst, 3.0);
    }

    #[test]
    fn gzoltar_errors_name_file_and_line() {
        let spectra = "name\na\nb\n";
        let e = parse_gzoltar("1 0 +\n1 1 x\n", "m.txt", spectra, "s.csv").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("m.txt", 2));
        assert!(e.to_string().starts_with("m.txt:2: last column"));
        let e = parse_gzoltar("1 0 +\n\n1 -\n", "m.txt", spectra, "s.csv").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.msg.contains("1 coverage columns") && e.msg.contains("2 elements"));
        let e = parse_gzoltar("1 z -\n", "m.txt", spectra, "s.csv").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.msg.contains("column 2"));
        assert_eq!(
            parse_gzoltar("", "m.txt", spectra, "s.csv")
                .unwrap_err()
                .line,
            0
        );
        assert_eq!(
            parse_gzoltar("1 -\n", "m.txt", "name\n", "s.csv")
                .unwrap_err()
                .file,
            "s.csv"
        );
        // Counts are binarized; CRLF and a headerless spectra file are accepted.
        let g = parse_gzoltar("3 0 -\r\n0 2 +\r\n", "m", "a\r\nb\r\n", "s").unwrap();
        assert_eq!(g.elements, vec!["a", "b"]);
        assert_eq!(g.spectrum.tests[0].covered, vec![0]);
        assert_eq!(g.spectrum.tests[1].covered, vec![1]);
        let e = read_gzoltar(
            &testdata("gzoltar/missing.txt"),
            &testdata("gzoltar/spectra.csv"),
        )
        .unwrap_err();
        assert!(e.file.ends_with("missing.txt") && e.line == 0);
    }

    #[test]
    fn fauxpy_scores_file() {
        let s = read_fauxpy_scores(&testdata("fauxpy/Scores_Tarantula.csv")).unwrap();
        assert_eq!(s.len(), 7);
        assert_eq!(s.names[0], "/home/dev/triangle/code/equilateral.py::13");
        assert_eq!(s.names[5], "/home/dev/odd,dir/code/isosceles.py::8");
        assert_eq!(
            s.names[6],
            "/home/dev/triangle/code/q\"uote.py::isosceles_area::4::11"
        );
        assert_eq!(s.scores[3], 0.75625);
        let rk = s.ranking().unwrap();
        let fault = s
            .id_of("/home/dev/triangle/code/equilateral.py::11")
            .unwrap();
        let p = rk.position(&[fault]).unwrap();
        assert_eq!((p.best, p.worst), (1.0, 3.0));
        assert_eq!(rk.standard_rank_score(&[fault]).unwrap(), 1.5);
    }

    #[test]
    fn fauxpy_errors_name_file_and_line() {
        let e = parse_fauxpy_scores("Entity,Score\r\na.py::1,0.5\r\na.py::2,abc\r\n", "S.csv")
            .unwrap_err();
        assert_eq!(e.to_string(), "S.csv:3: invalid score \"abc\"");
        let e = parse_fauxpy_scores("Entity;Score\n", "S.csv").unwrap_err();
        assert_eq!(e.line, 1);
        let e = parse_fauxpy_scores("Entity,Score\n\"a.py::1,0.5\n", "S.csv").unwrap_err();
        assert_eq!((e.line, e.msg.as_str()), (2, "unterminated quoted field"));
        let e = parse_fauxpy_scores("Entity,Score\na,1\nb,2,3\n", "S.csv").unwrap_err();
        assert_eq!(e.line, 3);
        let e = parse_fauxpy_scores("Entity,Score\na,1\na,2\n", "S.csv").unwrap_err();
        assert!(e.msg.contains("duplicate"));
        assert!(parse_fauxpy_scores("Entity,Score\na,NaN\n", "S.csv").is_err());
        assert_eq!(parse_fauxpy_scores("", "S.csv").unwrap_err().line, 0);
        // Header only: an empty ranking is valid.
        assert!(parse_fauxpy_scores("Entity,Score\r\n", "S.csv")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn ranking_writer_rejects_bad_names_and_formats_like_java() {
        let mut buf = Vec::new();
        let e =
            write_gzoltar_ranking(&mut buf, &[("a".into(), 1.0), ("b;c".into(), 0.5)]).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(buf.is_empty());
        assert!(write_gzoltar_ranking(&mut buf, &[("a".into(), f64::NAN)]).is_err());
        write_gzoltar_ranking(
            &mut buf,
            &[
                ("x".into(), 0.0),
                ("y".into(), f64::INFINITY),
                ("z".into(), -1.0),
                ("w".into(), 0.25),
            ],
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "name;suspiciousness_value\ny;Infinity\nw;0.25\nx;0.0\nz;-1.0\n"
        );
        let back = parse_gzoltar_ranking("name;suspiciousness_value\ny;Infinity\n", "r").unwrap();
        assert_eq!(back.scores, vec![f64::INFINITY]);
        let e = parse_gzoltar_ranking("name;suspiciousness_value\nfoo\n", "r.csv").unwrap_err();
        assert_eq!(e.to_string(), "r.csv:2: expected \"name;score\"");
    }
}
