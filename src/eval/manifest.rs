//! The evaluation manifest: TOML with one `[[case]]` table per fault.
//!
//! ```toml
//! [[case]]
//! name = "leftpad_fig1"            # unique; also the name of its dump directory under OUT/dumps
//! dir = "leftpad_fig1"             # project root (relative to this file, or absolute)
//! src = "src"                      # code under analysis, relative to dir: a directory or one file
//! test = ["python3", "-m", "pytest", "-q", "tests"]   # argv, run in dir
//! faulty = ["leftpad.py:9"]        # FILE:LINE[,LINE...], FILE relative to src (the file name
//!                                  # when src is a file); several entries = one fault
//! dump = "dumps/leftpad_fig1"      # optional: an existing trace dump (no tracing)
//! kind = "wrong variable"          # optional, free text
//! timeout = 10                     # optional: per-test time limit when tracing, in seconds
//! ```
//!
//! A manifest that is not valid TOML, has unknown keys, a missing `name`/`faulty` or a duplicate
//! name is rejected as a whole (`FILE:LINE: message`). Everything that concerns one case only
//! (missing directories or files, a malformed `faulty` entry, a line past the end of its file) is
//! checked by [`Case::resolve`] and reported for that case alone.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::score::FaultyLines;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    #[serde(default, rename = "case")]
    cases: Vec<RawCase>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    name: Spanned<String>,
    #[serde(default)]
    dir: Option<String>,
    #[serde(default)]
    src: Option<String>,
    #[serde(default)]
    test: Option<Vec<String>>,
    faulty: Vec<Spanned<String>>,
    #[serde(default)]
    dump: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    timeout: Option<f64>,
}

/// One case as written in the manifest (paths not yet resolved or checked).
#[derive(Debug, Clone)]
pub struct CaseEntry {
    pub name: String,
    /// Line of `name = ...` in the manifest.
    pub line: usize,
    pub dir: Option<String>,
    pub src: Option<String>,
    pub test: Option<Vec<String>>,
    /// (entry, its line in the manifest)
    pub faulty: Vec<(String, usize)>,
    pub dump: Option<String>,
    pub kind: Option<String>,
    pub timeout: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct EvalManifest {
    pub path: PathBuf,
    /// The directory relative paths are resolved against.
    pub base: PathBuf,
    pub cases: Vec<CaseEntry>,
}

fn line_at(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

impl EvalManifest {
    /// Reads and parses the manifest; errors are `FILE:LINE: message`.
    pub fn read(path: &Path) -> Result<EvalManifest, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        Self::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<EvalManifest, String> {
        let raw: RawManifest = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_at(text, s.start)).unwrap_or(1);
            format!("{}:{line}: {}", path.display(), e.message().trim_end())
        })?;
        let mut cases: Vec<CaseEntry> = Vec::new();
        for c in raw.cases {
            let line = line_at(text, c.name.span().start);
            let name = c.name.into_inner();
            let bad = |msg: String| Err(format!("{}:{line}: {msg}", path.display()));
            if name.is_empty()
                || name.starts_with('.')
                || name.contains(['/', '\\'])
                || name.chars().any(char::is_control)
            {
                return bad(format!("case name {name:?} must be a non-empty file name (no '/', not starting with '.')"));
            }
            if let Some(prev) = cases.iter().find(|p| p.name == name) {
                return bad(format!(
                    "duplicate case name {name:?} (first on line {})",
                    prev.line
                ));
            }
            if c.faulty.is_empty() {
                return bad(format!(
                    "case {name:?}: `faulty` is empty (give at least one FILE:LINE)"
                ));
            }
            if let Some(t) = c.timeout {
                if !(t.is_finite() && t > 0.0) {
                    return bad(format!(
                        "case {name:?}: timeout must be a positive number of seconds, found {t}"
                    ));
                }
            }
            cases.push(CaseEntry {
                name,
                line,
                dir: c.dir,
                src: c.src,
                test: c.test,
                faulty: c
                    .faulty
                    .into_iter()
                    .map(|f| (line_at(text, f.span().start), f.into_inner()))
                    .map(|(l, f)| (f, l))
                    .collect(),
                dump: c.dump,
                kind: c.kind,
                timeout: c.timeout,
            });
        }
        if cases.is_empty() {
            return Err(format!("{}:1: no [[case]] entries", path.display()));
        }
        let base = path
            .parent()
            .map(Path::to_path_buf)
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from("."));
        Ok(EvalManifest {
            path: path.to_owned(),
            base,
            cases,
        })
    }
}

/// How a case gets its dump.
#[derive(Debug, Clone)]
pub enum Source {
    /// An existing dump directory.
    Dump(PathBuf),
    /// Trace `test` (run in `dir`) with `src_dir` as the code under analysis.
    Trace {
        dir: PathBuf,
        src_dir: PathBuf,
        test: Vec<String>,
        timeout: Option<f64>,
    },
}

/// A case whose paths are resolved and whose ground truth is checked.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub kind: Option<String>,
    pub source: Source,
    pub fault: Vec<FaultyLines>,
    /// When `src` is one file: its name (rankings are restricted to it).
    pub only_file: Option<String>,
}

fn resolve_path(base: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_owned()
    } else {
        base.join(p)
    }
}

fn count_lines(path: &Path) -> Result<usize, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(text.lines().count())
}

/// Files under `dir` (recursively) whose path ends with `rel` (whole components).
fn find_suffix(dir: &Path, rel: &str) -> Option<PathBuf> {
    let direct = dir.join(rel);
    if direct.is_file() {
        return Some(direct);
    }
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(r) = p.strip_prefix(dir) {
                if super::score::path_suffix_eq(&r.to_string_lossy(), rel) {
                    return Some(p);
                }
            }
        }
    }
    None
}

impl CaseEntry {
    /// Resolves paths and checks the ground truth against the source files.
    pub fn resolve(&self, m: &EvalManifest) -> Result<Case, String> {
        let at = |msg: String| {
            format!(
                "{}:{}: case {:?}: {msg}",
                m.path.display(),
                self.line,
                self.name
            )
        };
        let dir = self.dir.as_deref().map(|d| resolve_path(&m.base, d));
        if let Some(d) = &dir {
            if !d.is_dir() {
                return Err(at(format!("dir {} is not a directory", d.display())));
            }
        }
        let src = match (&dir, &self.src) {
            (Some(d), Some(s)) => {
                let p = resolve_path(d, s);
                if !p.exists() {
                    return Err(at(format!("src {} does not exist", p.display())));
                }
                Some(p)
            }
            (None, Some(_)) => return Err(at("`src` needs `dir`".to_owned())),
            _ => None,
        };
        let source = match (&self.dump, &dir, &src, &self.test) {
            (Some(d), _, _, _) => {
                let p = resolve_path(&m.base, d);
                if !p.join("manifest.toml").is_file() {
                    return Err(at(format!(
                        "dump {} is not a trace dump directory (no manifest.toml)",
                        p.display()
                    )));
                }
                Source::Dump(p)
            }
            (None, Some(d), Some(s), Some(t)) => {
                if t.is_empty() {
                    return Err(at("`test` is an empty command".to_owned()));
                }
                let src_dir = if s.is_dir() {
                    s.clone()
                } else {
                    s.parent()
                        .map(Path::to_path_buf)
                        .unwrap_or_else(|| d.clone())
                };
                Source::Trace {
                    dir: d.clone(),
                    src_dir,
                    test: t.clone(),
                    timeout: self.timeout,
                }
            }
            _ => {
                return Err(at(
                    "needs `dir`, `src` and `test` (to trace), or `dump`".to_owned()
                ))
            }
        };
        let only_file = src
            .as_ref()
            .filter(|s| s.is_file())
            .and_then(|s| s.file_name())
            .map(|n| n.to_string_lossy().into_owned());
        let mut fault = Vec::new();
        for (entry, line) in &self.faulty {
            let at =
                |msg: String| format!("{}:{line}: case {:?}: {msg}", m.path.display(), self.name);
            let f = FaultyLines::parse(entry).map_err(at)?;
            // The source file that holds the faulty lines.
            let file = match (&src, &source) {
                (Some(s), _) if s.is_file() => {
                    if !super::score::path_suffix_eq(&s.to_string_lossy(), &f.file) {
                        return Err(at(format!(
                            "faulty file {:?} is not the src file {}",
                            f.file,
                            s.display()
                        )));
                    }
                    s.clone()
                }
                (Some(s), _) => {
                    let p = s.join(&f.file);
                    if !p.is_file() {
                        return Err(at(format!("faulty file {} does not exist", p.display())));
                    }
                    p
                }
                (None, Source::Dump(d)) => {
                    find_suffix(&d.join("source"), &f.file).ok_or_else(|| {
                        at(format!(
                            "faulty file {:?} is not in {} (the dump's copies of the sources)",
                            f.file,
                            d.join("source").display()
                        ))
                    })?
                }
                (None, Source::Trace { .. }) => unreachable!("tracing needs src"),
            };
            let n = count_lines(&file).map_err(at)?;
            if let Some(&bad) = f.lines.iter().find(|&&l| l as usize > n) {
                return Err(at(format!(
                    "faulty line {bad} is past the end of {} ({n} lines)",
                    file.display()
                )));
            }
            fault.push(f);
        }
        Ok(Case {
            name: self.name.clone(),
            kind: self.kind.clone(),
            source,
            fault,
            only_file,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_have_file_and_line() {
        let p = Path::new("m.toml");
        let e = EvalManifest::parse("[[case]]\nname = \"a\"\nfaulty = [\"x:1\"]\nbogus = 1\n", p)
            .unwrap_err();
        assert!(e.starts_with("m.toml:4: ") && e.contains("bogus"), "{e}");
        let e = EvalManifest::parse("[[case]]\nname = \"a\"\n", p).unwrap_err();
        assert!(e.starts_with("m.toml:") && e.contains("faulty"), "{e}");
        let e = EvalManifest::parse("[[case]]\nname = \"a\"\nfaulty = [\"x:1\"]\n[[case]]\nname = \"a\"\nfaulty = [\"x:1\"]\n", p)
            .unwrap_err();
        assert!(
            e.starts_with("m.toml:5: duplicate case name \"a\" (first on line 2)"),
            "{e}"
        );
        let e =
            EvalManifest::parse("[[case]]\nname = \"../x\"\nfaulty = [\"x:1\"]\n", p).unwrap_err();
        assert!(
            e.starts_with("m.toml:2: ") && e.contains("file name"),
            "{e}"
        );
        let e = EvalManifest::parse("[[case]\n", p).unwrap_err();
        assert!(e.starts_with("m.toml:1: "), "{e}");
        assert!(EvalManifest::parse("", p)
            .unwrap_err()
            .contains("no [[case]]"));
    }

    #[test]
    fn faulty_entries_keep_their_lines() {
        let m = EvalManifest::parse(
            "[[case]]\nname = \"a\"\nfaulty = [\n  \"x.py:1\",\n  \"y.py:2,3\",\n]\n",
            Path::new("m.toml"),
        )
        .unwrap();
        assert_eq!(
            m.cases[0].faulty,
            vec![("x.py:1".to_owned(), 4), ("y.py:2,3".to_owned(), 5)]
        );
        assert_eq!(m.cases[0].line, 2);
        assert_eq!(m.base, PathBuf::from("."));
    }
}
