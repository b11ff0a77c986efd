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
//! language = "python"              # optional: "python" (the default) or "java"
//! reference_src = "fixed/leftpad.py"  # optional, Python: the fixed version's code (relative
//! reference_test = ["python3", "-m", "pytest", "-q", "tests", "--fixed"]  # to dir, a file or a
//!                                  # directory as `src`) and the command testing it, run in dir
//! ```
//!
//! `reference_src` and `reference_test` come together, on a Python case with a `dir`. Only
//! `eval --explain` uses them: it traces the fixed version as `trace --passing-ok` does into
//! `OUT/reference/<name>` and gives that dump to `explain` as its `--reference` (seed 004's
//! regression mode, docs/explain.md); scripts/explain_eval.py --regression does the same. Whether
//! `reference_src` exists is checked then, and only then: a missing fixed version is an error of
//! the case's explanation, not of its rankings.
//!
//! A Java case (`language = "java"`) is traced with the JVM front-end (`trace --java`): `dir` is
//! the project root (the working directory of the run; the dump's file paths are relative to
//! it), `src` the code under analysis as for Python, `test` lists JUnit test classes or methods
//! (not a command), and four keys only a Java case may have say where its classes are:
//!
//! ```toml
//! [[case]]
//! name = "GCD"
//! language = "java"
//! dir = "/tmp/qb/qbx"
//! src = "java_programs/GCD.java"
//! classes = "build/classes"               # relative to this file, or absolute
//! test_classes = "build/test-classes"     # relative to this file, or absolute
//! classpath = ["lib/extra.jar"]           # optional: more class path entries (relative to this file)
//! source_roots = ["."]                    # optional: relative to dir (default: src/main/java and
//!                                         # src/test/java of dir, those that exist, else dir)
//! jvm_args = ["-Xmx2g"]                   # optional: options of the JVM that runs the tests
//! failing = ["java_testcases.junit.GCD_TEST::test_1"] # optional: the tests whose failure witnesses
//!                                         # the fault (`trace --witness`); other failing tests are
//!                                         # left out of the dump
//! test = ["java_testcases.junit.GCD_TEST"] # `!Class::method` leaves a test out
//! faulty = ["GCD.java:19"]
//! timeout = 3
//! ```
//!
//! A manifest that is not valid TOML, has unknown keys, a missing `name`/`faulty`, a duplicate
//! name, an unknown `language` or a Java key on a case that is not Java is rejected as a whole
//! (`FILE:LINE: message`). Everything that concerns one case only (missing directories or files,
//! a malformed `faulty` entry, a line past the end of its file) is checked by [`Case::resolve`]
//! and reported for that case alone.

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
    #[serde(default)]
    language: Option<Spanned<String>>,
    #[serde(default)]
    classes: Option<Spanned<String>>,
    #[serde(default)]
    test_classes: Option<Spanned<String>>,
    #[serde(default)]
    classpath: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    source_roots: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    jvm_args: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    failing: Option<Spanned<Vec<String>>>,
    /// The fixed version and its test command (`eval --explain`: seed 004's regression mode).
    #[serde(default)]
    reference_src: Option<Spanned<String>>,
    #[serde(default)]
    reference_test: Option<Spanned<Vec<String>>>,
}

/// The language of a case: which front-end traces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Language {
    #[default]
    Python,
    Java,
}

/// The keys of a Java case that say where its classes are (as written).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JavaEntry {
    /// Relative to the manifest's folder, or absolute.
    pub classes: Option<String>,
    pub test_classes: Option<String>,
    pub classpath: Vec<String>,
    /// Relative to `dir`.
    pub source_roots: Vec<String>,
    /// Options for the JVM that runs the tests (as `trace --jvm-arg`).
    pub jvm_args: Vec<String>,
    /// The tests whose failure witnesses the fault (as `trace --witness`; empty: all).
    pub failing: Vec<String>,
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
    pub language: Language,
    /// Where a Java case's classes are (default, all empty, for a Python case).
    pub java: JavaEntry,
    /// The fixed version's code (relative to `dir`) and its test command (both or neither).
    pub reference_src: Option<String>,
    pub reference_test: Option<Vec<String>>,
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
            let language = match &c.language {
                None => Language::Python,
                Some(l) => match l.get_ref().as_str() {
                    "python" => Language::Python,
                    "java" => Language::Java,
                    other => {
                        return Err(format!(
                            "{}:{}: case {name:?}: language must be \"python\" or \"java\", found {other:?}",
                            path.display(),
                            line_at(text, l.span().start)
                        ))
                    }
                },
            };
            let java_keys = [
                ("classes", c.classes.as_ref().map(Spanned::span)),
                ("test_classes", c.test_classes.as_ref().map(Spanned::span)),
                ("classpath", c.classpath.as_ref().map(Spanned::span)),
                ("source_roots", c.source_roots.as_ref().map(Spanned::span)),
                ("jvm_args", c.jvm_args.as_ref().map(Spanned::span)),
                ("failing", c.failing.as_ref().map(Spanned::span)),
            ];
            if language != Language::Java {
                if let Some((key, Some(span))) = java_keys.iter().find(|(_, s)| s.is_some()) {
                    return Err(format!(
                        "{}:{}: case {name:?}: `{key}` is a key of Java cases: add language = \"java\"",
                        path.display(),
                        line_at(text, span.start)
                    ));
                }
            }
            let (reference_src, reference_test) = match (c.reference_src, c.reference_test) {
                (None, None) => (None, None),
                (Some(s), Some(t)) => {
                    let at = |span: std::ops::Range<usize>, msg: &str| {
                        Err(format!(
                            "{}:{}: case {name:?}: {msg}",
                            path.display(),
                            line_at(text, span.start)
                        ))
                    };
                    if language != Language::Python {
                        return at(
                            s.span(),
                            "`reference_src` and `reference_test` are keys of Python cases",
                        );
                    }
                    if c.dir.is_none() {
                        return at(
                            s.span(),
                            "`reference_src` needs `dir` (it is relative to dir, where \
                                 `reference_test` runs)",
                        );
                    }
                    if t.get_ref().is_empty() {
                        return at(t.span(), "`reference_test` is an empty command");
                    }
                    (Some(s.into_inner()), Some(t.into_inner()))
                }
                (Some(s), None) => {
                    return Err(format!(
                        "{}:{}: case {name:?}: `reference_src` needs `reference_test` (the \
                             command that tests the fixed version)",
                        path.display(),
                        line_at(text, s.span().start)
                    ))
                }
                (None, Some(t)) => {
                    return Err(format!(
                        "{}:{}: case {name:?}: `reference_test` needs `reference_src` (the \
                             fixed version's code)",
                        path.display(),
                        line_at(text, t.span().start)
                    ))
                }
            };
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
                language,
                java: JavaEntry {
                    classes: c.classes.map(Spanned::into_inner),
                    test_classes: c.test_classes.map(Spanned::into_inner),
                    classpath: c.classpath.map(Spanned::into_inner).unwrap_or_default(),
                    source_roots: c.source_roots.map(Spanned::into_inner).unwrap_or_default(),
                    jvm_args: c.jvm_args.map(Spanned::into_inner).unwrap_or_default(),
                    failing: c.failing.map(Spanned::into_inner).unwrap_or_default(),
                },
                reference_src,
                reference_test,
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
        /// Python: the test command's argv; Java: test classes or methods.
        test: Vec<String>,
        timeout: Option<f64>,
        frontend: Frontend,
    },
}

/// Which front-end traces a case, with what it needs beyond the common keys.
#[derive(Debug, Clone, PartialEq)]
pub enum Frontend {
    Python,
    Java(Box<JavaTarget>),
}

/// Where a Java case's classes are (absolute paths, checked to exist).
#[derive(Debug, Clone, PartialEq)]
pub struct JavaTarget {
    pub classes: PathBuf,
    pub test_classes: PathBuf,
    pub classpath: Vec<PathBuf>,
    pub source_roots: Vec<PathBuf>,
    pub jvm_args: Vec<String>,
    pub failing: Vec<String>,
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
    /// The fixed version (`reference_src`, `reference_test`; Python cases only).
    pub reference: Option<Reference>,
}

/// A case's fixed version: what `eval --explain` traces as the reference of seed 004's
/// regression mode (as `trace --passing-ok --src SRC -- TEST` run in `dir`).
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// Where the command runs: the case's `dir`.
    pub dir: PathBuf,
    /// `reference_src` resolved against `dir` (a file or a directory; not checked to exist).
    pub src: PathBuf,
    pub test: Vec<String>,
}

impl Reference {
    /// The code under analysis: `src`, or its folder when it is a file (as a case's `src`).
    pub fn src_dir(&self) -> PathBuf {
        if self.src.is_file() {
            self.src
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| self.dir.clone())
        } else {
            self.src.clone()
        }
    }
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
    /// A Java case's class directories, class path and source roots, resolved (absolute: the
    /// front-end takes relative paths relative to the project `dir`) and checked.
    fn java_target(&self, m: &EvalManifest, dir: &Path) -> Result<JavaTarget, String> {
        let j = &self.java;
        let resolve_path = |base: &Path, p: &str| {
            let p = resolve_path(base, p);
            std::path::absolute(&p).unwrap_or(p)
        };
        let need = |key: &str, v: &Option<String>| match v {
            Some(p) => {
                let p = resolve_path(&m.base, p);
                if p.is_dir() {
                    Ok(p)
                } else {
                    Err(format!("{key} {} is not a directory", p.display()))
                }
            }
            None => Err(format!(
                "a Java case needs `classes` and `test_classes` (the directories of its \
                 compiled classes and test classes) to be traced; `{key}` is missing"
            )),
        };
        let classes = need("classes", &j.classes)?;
        let test_classes = need("test_classes", &j.test_classes)?;
        let classpath = j
            .classpath
            .iter()
            .map(|e| {
                let p = resolve_path(&m.base, e);
                let exists = if p.file_name().is_some_and(|n| n == "*") {
                    p.parent().is_some_and(Path::is_dir)
                } else {
                    p.exists()
                };
                if exists {
                    Ok(p)
                } else {
                    Err(format!("classpath entry {} does not exist", p.display()))
                }
            })
            .collect::<Result<_, _>>()?;
        let source_roots = j
            .source_roots
            .iter()
            .map(|r| {
                let p = resolve_path(dir, r);
                if p.is_dir() {
                    Ok(p)
                } else {
                    Err(format!("source root {} is not a directory", p.display()))
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(JavaTarget {
            classes,
            test_classes,
            classpath,
            source_roots,
            jvm_args: j.jvm_args.clone(),
            failing: j.failing.clone(),
        })
    }

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
                    return Err(at(match self.language {
                        Language::Python => "`test` is an empty command".to_owned(),
                        Language::Java => "`test` names no test class".to_owned(),
                    }));
                }
                let frontend = match self.language {
                    Language::Python => Frontend::Python,
                    Language::Java => Frontend::Java(Box::new(self.java_target(m, d).map_err(at)?)),
                };
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
                    frontend,
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
        let reference = match (&dir, &self.reference_src, &self.reference_test) {
            (Some(d), Some(s), Some(t)) => Some(Reference {
                dir: d.clone(),
                src: resolve_path(d, s),
                test: t.clone(),
            }),
            _ => None,
        };
        Ok(Case {
            name: self.name.clone(),
            kind: self.kind.clone(),
            source,
            fault,
            only_file,
            reference,
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

    /// A project with a Java program of 20 lines and class directories, and a manifest beside
    /// it whose one case has the extra lines `extra`.
    fn java_project(extra: &str) -> (tempfile::TempDir, EvalManifest) {
        let d = tempfile::tempdir().unwrap();
        let qb = d.path().join("qbx");
        std::fs::create_dir_all(qb.join("java_programs")).unwrap();
        std::fs::write(qb.join("java_programs/GCD.java"), "x\n".repeat(20)).unwrap();
        for p in ["build/classes", "build/test-classes", "lib"] {
            std::fs::create_dir_all(d.path().join(p)).unwrap();
        }
        std::fs::write(d.path().join("lib/extra.jar"), "").unwrap();
        let text = format!(
            "[[case]]\nname = \"GCD\"\nlanguage = \"java\"\ndir = \"qbx\"\n\
             src = \"java_programs/GCD.java\"\ntest = [\"java_testcases.junit.GCD_TEST\"]\n\
             faulty = [\"GCD.java:19\"]\ntimeout = 3\n{extra}"
        );
        let path = d.path().join("m.toml");
        std::fs::write(&path, &text).unwrap();
        let m = EvalManifest::read(&path).unwrap();
        (d, m)
    }

    #[test]
    fn a_java_case_resolves() {
        let (d, m) = java_project(
            "classes = \"build/classes\"\ntest_classes = \"build/test-classes\"\n\
             classpath = [\"lib/extra.jar\", \"lib/*\"]\nsource_roots = [\".\"]\n\
             jvm_args = [\"-Xmx2g\", \"--add-opens=java.base/java.lang=ALL-UNNAMED\"]\n\
             failing = [\"T::t\"]\n",
        );
        // read through a relative path: the Java paths come out absolute all the same
        let cwd = std::env::current_dir().unwrap();
        let up = "../".repeat(cwd.components().count() - 1);
        let rel = PathBuf::from(up).join(m.path.strip_prefix("/").unwrap());
        let m = EvalManifest::read(&rel).unwrap();
        assert!(m.base.is_relative());
        let e = &m.cases[0];
        assert_eq!(e.language, Language::Java);
        assert_eq!(e.java.classes.as_deref(), Some("build/classes"));
        let c = e.resolve(&m).unwrap();
        assert_eq!(c.only_file.as_deref(), Some("GCD.java"));
        let Source::Trace {
            dir,
            test,
            timeout,
            frontend: Frontend::Java(j),
            ..
        } = c.source
        else {
            panic!("not a traced Java case: {:?}", c.source)
        };
        let base = d.path();
        // `..` taken out (the paths go through the manifest's relative path)
        let norm = |p: &Path| {
            assert!(p.is_absolute(), "{}", p.display());
            let mut out = PathBuf::new();
            for c in p.components() {
                match c {
                    std::path::Component::ParentDir => {
                        out.pop();
                    }
                    c => out.push(c),
                }
            }
            out
        };
        let j = JavaTarget {
            classes: norm(&j.classes),
            test_classes: norm(&j.test_classes),
            classpath: j.classpath.iter().map(|p| norm(p)).collect(),
            source_roots: j.source_roots.iter().map(|p| norm(p)).collect(),
            jvm_args: j.jvm_args.clone(),
            failing: j.failing.clone(),
        };
        assert_eq!(norm(&std::path::absolute(dir).unwrap()), base.join("qbx"));
        assert_eq!(test, ["java_testcases.junit.GCD_TEST"]);
        assert_eq!(timeout, Some(3.0));
        assert_eq!(
            j,
            JavaTarget {
                classes: base.join("build/classes"),
                test_classes: base.join("build/test-classes"),
                classpath: vec![base.join("lib/extra.jar"), base.join("lib/*")],
                source_roots: vec![base.join("qbx")],
                jvm_args: vec![
                    "-Xmx2g".to_owned(),
                    "--add-opens=java.base/java.lang=ALL-UNNAMED".to_owned()
                ],
                failing: vec!["T::t".to_owned()],
            }
        );
        // absolute paths stay as they are; source roots are optional
        let abs = base.join("build/classes").display().to_string();
        let (_d, m) = java_project(&format!(
            "classes = \"{abs}\"\ntest_classes = \"build/test-classes\"\n"
        ));
        let c = m.cases[0].resolve(&m).unwrap();
        let Source::Trace {
            frontend: Frontend::Java(j),
            ..
        } = c.source
        else {
            panic!()
        };
        assert_eq!(j.classes, base.join("build/classes"));
        assert!(j.classpath.is_empty() && j.source_roots.is_empty());
        // a Python case stays one
        let m = EvalManifest::parse(
            "[[case]]\nname = \"a\"\nlanguage = \"python\"\nfaulty = [\"x:1\"]\n",
            Path::new("m.toml"),
        )
        .unwrap();
        assert_eq!(m.cases[0].language, Language::Python);
        assert_eq!(m.cases[0].java, JavaEntry::default());
    }

    #[test]
    fn a_java_case_without_its_classes_is_a_case_error() {
        let (_d, m) = java_project("test_classes = \"build/test-classes\"\n");
        let e = m.cases[0].resolve(&m).unwrap_err();
        assert!(
            e.contains("m.toml:2: case \"GCD\": a Java case needs `classes` and `test_classes`")
                && e.ends_with("`classes` is missing"),
            "{e}"
        );
        let (_d, m) = java_project("classes = \"nope\"\ntest_classes = \"build/test-classes\"\n");
        let e = m.cases[0].resolve(&m).unwrap_err();
        assert!(
            e.contains("classes ") && e.ends_with("nope is not a directory"),
            "{e}"
        );
        let (_d, m) = java_project(
            "classes = \"build/classes\"\ntest_classes = \"build/test-classes\"\n\
             classpath = [\"lib/gone.jar\"]\n",
        );
        let e = m.cases[0].resolve(&m).unwrap_err();
        assert!(e.ends_with("gone.jar does not exist"), "{e}");
        let (_d, m) = java_project(
            "classes = \"build/classes\"\ntest_classes = \"build/test-classes\"\n\
             source_roots = [\"src/main/java\"]\n",
        );
        let e = m.cases[0].resolve(&m).unwrap_err();
        assert!(e.ends_with("src/main/java is not a directory"), "{e}");
    }

    #[test]
    fn java_keys_need_a_java_case() {
        let p = Path::new("m.toml");
        for (key, value) in [
            ("classes", "\"c\""),
            ("test_classes", "\"t\""),
            ("classpath", "[\"x.jar\"]"),
            ("source_roots", "[\".\"]"),
            ("jvm_args", "[\"-Xmx1g\"]"),
            ("failing", "[\"T::t\"]"),
        ] {
            for language in ["", "language = \"python\"\n"] {
                let text = format!(
                    "[[case]]\nname = \"a\"\n{language}faulty = [\"x:1\"]\n\n{key} = {value}\n"
                );
                let e = EvalManifest::parse(&text, p).unwrap_err();
                let line = text.lines().position(|l| l.starts_with(key)).unwrap() + 1;
                assert_eq!(
                    e,
                    format!(
                        "m.toml:{line}: case \"a\": `{key}` is a key of Java cases: add language = \"java\""
                    )
                );
            }
        }
        let e = EvalManifest::parse(
            "[[case]]\nname = \"a\"\nfaulty = [\"x:1\"]\nlanguage = \"kotlin\"\n",
            p,
        )
        .unwrap_err();
        assert_eq!(
            e,
            "m.toml:4: case \"a\": language must be \"python\" or \"java\", found \"kotlin\""
        );
        // unknown keys stay rejected on Java cases too
        let e = EvalManifest::parse(
            "[[case]]\nname = \"a\"\nlanguage = \"java\"\nfaulty = [\"x:1\"]\njars = []\n",
            p,
        )
        .unwrap_err();
        assert!(e.starts_with("m.toml:5: ") && e.contains("jars"), "{e}");
    }

    #[test]
    fn a_reference_is_a_python_case_s_fixed_version() {
        let p = Path::new("m.toml");
        let head = "[[case]]\nname = \"a\"\nfaulty = [\"x.py:1\"]\n";
        let src = "reference_src = \"fixed/x.py\"\n";
        let test = "reference_test = [\"pytest\", \"--fixed\"]\n";
        let m = EvalManifest::parse(&format!("{head}dir = \"d\"\n{src}{test}"), p).unwrap();
        assert_eq!(m.cases[0].reference_src.as_deref(), Some("fixed/x.py"));
        assert_eq!(
            m.cases[0].reference_test.as_deref(),
            Some(&["pytest".to_owned(), "--fixed".to_owned()][..])
        );
        for (extra, want) in [
            (
                format!("dir = \"d\"\n{src}"),
                "m.toml:5: case \"a\": `reference_src` needs `reference_test`",
            ),
            (
                format!("dir = \"d\"\n{test}"),
                "m.toml:5: case \"a\": `reference_test` needs `reference_src`",
            ),
            (
                format!("{src}{test}"),
                "m.toml:4: case \"a\": `reference_src` needs `dir`",
            ),
            (
                format!("dir = \"d\"\n{src}reference_test = []\n"),
                "m.toml:6: case \"a\": `reference_test` is an empty command",
            ),
            (
                format!("dir = \"d\"\nlanguage = \"java\"\n{src}{test}"),
                "m.toml:6: case \"a\": `reference_src` and `reference_test` are keys of Python",
            ),
        ] {
            let e = EvalManifest::parse(&format!("{head}{extra}"), p).unwrap_err();
            assert!(e.starts_with(want), "{e}");
        }
    }

    #[test]
    fn a_reference_resolves_against_dir_unchecked() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("p/src")).unwrap();
        std::fs::create_dir_all(d.path().join("p/fixed")).unwrap();
        std::fs::write(d.path().join("p/src/x.py"), "x = 1\n").unwrap();
        std::fs::write(d.path().join("p/fixed/x.py"), "x = 2\n").unwrap();
        let case = |reference: &str| {
            let text = format!(
                "[[case]]\nname = \"a\"\ndir = \"p\"\nsrc = \"src/x.py\"\ntest = [\"pytest\"]\n\
                 faulty = [\"x.py:1\"]\nreference_src = \"{reference}\"\n\
                 reference_test = [\"pytest\", \"--fixed\"]\n"
            );
            let path = d.path().join("m.toml");
            std::fs::write(&path, text).unwrap();
            let m = EvalManifest::read(&path).unwrap();
            m.cases[0].resolve(&m).unwrap().reference.unwrap()
        };
        let r = case("fixed/x.py");
        assert_eq!(r.dir, d.path().join("p"));
        assert_eq!(r.src, d.path().join("p/fixed/x.py"));
        assert_eq!(r.src_dir(), d.path().join("p/fixed"));
        assert_eq!(r.test, ["pytest", "--fixed"]);
        assert_eq!(case("fixed").src_dir(), d.path().join("p/fixed"));
        // a missing fixed version is not the case's error: `eval --explain` reports it
        assert_eq!(case("gone").src, d.path().join("p/gone"));
    }

    #[test]
    fn a_java_case_names_its_tests() {
        let (_d, m) =
            java_project("classes = \"build/classes\"\ntest_classes = \"build/test-classes\"\n");
        let mut e = m.cases[0].clone();
        e.test = Some(Vec::new());
        let err = e.resolve(&m).unwrap_err();
        assert!(err.ends_with("`test` names no test class"), "{err}");
    }
}
