//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use prosecutor::dump::Dump;
use prosecutor::epg::Epg;
use prosecutor::pipeline::{derive_all, Rules};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The hand-encoded dump fixtures (fixtures/dumps/*), sorted by name.
pub fn dump_fixtures() -> Vec<(String, PathBuf)> {
    let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(root().join("fixtures/dumps"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("manifest.toml").exists())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    v.sort();
    v
}

pub fn load(path: &Path) -> Dump {
    Dump::load(path).unwrap_or_else(|e| panic!("{e}"))
}

pub fn derive(dump: &Dump, rules: &Rules) -> Epg {
    derive_all(dump, rules).unwrap_or_else(|e| panic!("{e}")).0
}

/// Edges as (rule, source name, target name).
pub fn named_edges(dump: &Dump, g: &Epg) -> Vec<(String, String, String)> {
    g.edges
        .iter()
        .map(|e| {
            (
                g.rule_names[e.rule as usize].clone(),
                g.vertex_name(dump, e.src),
                g.vertex_name(dump, e.dst),
            )
        })
        .collect()
}

pub fn csv(dump: &Dump, g: &Epg) -> String {
    let mut buf = Vec::new();
    prosecutor::epg::write_csv(&mut buf, dump, g).unwrap();
    String::from_utf8(buf).unwrap()
}

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_prosecutor"))
}

pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run prosecutor")
}

/// Copies a directory tree (fixtures are never modified in place).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// `prosecutor localize --src src --keep-dump DUMP OPTIONS -- python3 -m pytest -q -p
/// no:cacheprovider tests`, run in `project` (a Python project laid out as the fixtures are),
/// without writing bytecode into it.
pub fn localize_python(project: &Path, dump: &Path, options: &[&str]) -> Command {
    localize_python_in(project, "src", "tests", dump, options)
}

/// `prosecutor trace --src src --out DUMP -- python3 -m pytest -q -p no:cacheprovider tests`,
/// run in `project` as [`localize_python`] runs it.
#[allow(dead_code)] // for the modules that only trace
/// The test command the Python fixtures run with (no cache files left in a fixture).
const PYTEST: [&str; 6] = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"];

pub fn trace_python(project: &Path, dump: &Path) -> Command {
    trace_python_version(project, "src", dump, &[], &[])
}

/// `prosecutor trace --src SRC FLAGS --out DUMP -- python3 -m pytest ... tests TEST_ARGS` in
/// `project`: a version of the code (a fixed one: `--passing-ok`, and the option its tests
/// take to import it).
pub fn trace_python_version(
    project: &Path,
    src: &str,
    dump: &Path,
    flags: &[&str],
    test_args: &[&str],
) -> Command {
    let mut c = bin();
    c.current_dir(project)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg("trace")
        .args(flags)
        .args(["--src", src, "--out"])
        .arg(dump)
        .arg("--")
        .args(PYTEST)
        .arg("tests")
        .args(test_args);
    c
}

/// [`localize_python`] with another code directory (`--src SRC`) and test directory.
pub fn localize_python_in(
    project: &Path,
    src: &str,
    tests: &str,
    dump: &Path,
    options: &[&str],
) -> Command {
    let mut c = bin();
    c.current_dir(project)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(["localize", "--src", src, "--keep-dump"])
        .arg(dump)
        .args(options)
        .arg("--")
        .args(PYTEST)
        .arg(tests);
    c
}

/// The Java front-end's end-to-end tests need a JDK (`javac` in `$JAVA_HOME/bin`, else on PATH)
/// with ASM and JUnit 4; without them a test fails, naming what is missing and how to install
/// it (`scripts/test` installs them when missing).
#[allow(dead_code)] // for the end-to-end tests of the Java front-end
pub fn require_jdk(test: &str) {
    let tc =
        prosecutor::frontend::java::Toolchain::from_env().and_then(|t| t.check_junit().map(|()| t));
    if let Err(e) = tc {
        panic!(
            "{test}: the Java front-end's tests need a JDK with ASM and JUnit 4: {e} \
             (apt-get install default-jdk-headless libasm-java junit4 libhamcrest-java; \
             scripts/test does it when missing)"
        );
    }
}
