//! The Java front-end driver (JVM bytecode, JUnit 4 tests).
//!
//! The agent's sources (`frontends/java/src/org/prosecutor/jvm/*.java`) are embedded in the
//! binary and compiled once per content hash into the cache
//! (`$XDG_CACHE_HOME/prosecutor/java/<hash>/` or `~/.cache/prosecutor/java/<hash>/`: `src/`,
//! `classes/`, `MANIFEST.MF`, `prosecutor-agent.jar`) with the JDK's `javac` and `jar`, against
//! ASM and JUnit 4; the hash also covers the `javac` it was compiled with (another JDK compiles
//! its own copy). [`trace`] runs
//!
//! ```text
//! java -XX:+UnlockExperimentalVMOptions -XX:hashCode=2 -javaagent:AGENT.jar -cp AGENT.jar:ASM:CLASSES:TEST_CLASSES:USER_CP:JUNIT \
//!      org.prosecutor.jvm.Main trace --out DUMP --project PROJECT --classes CLASSES \
//!      --test-classes TEST_CLASSES [--source-root DIR]... --step-cap N --test-timeout-ms MS \
//!      --max-passing N TEST...
//! ```
//!
//! in the project directory (all paths absolute; JUnit's jars only when the user's class path
//! has no `junit` jar). `Main` writes the whole dump, its `[rerun]` recipe included, and exits 0
//! (failing tests are normal), 2 on bad arguments or when it finds no test, 1 on an internal
//! error; its stderr (progress) goes to ours as it comes. Nothing the user gave is modified:
//! only `--out` and the cache are written.

use std::collections::{HashSet, VecDeque};
use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{absolute, cache, TraceSummary};

/// The embedded agent sources: (path relative to the cache directory, contents). Every
/// `.java` file of frontends/java/src must be here: the agent is compiled from this list
/// (`tests::every_agent_source_is_embedded` checks it).
const SOURCES: &[(&str, &str)] = &[
    (
        "src/org/prosecutor/jvm/Agent.java",
        include_str!("../../frontends/java/src/org/prosecutor/jvm/Agent.java"),
    ),
    (
        "src/org/prosecutor/jvm/Main.java",
        include_str!("../../frontends/java/src/org/prosecutor/jvm/Main.java"),
    ),
    (
        "src/org/prosecutor/jvm/Bytecode.java",
        include_str!("../../frontends/java/src/org/prosecutor/jvm/Bytecode.java"),
    ),
    (
        "src/org/prosecutor/jvm/Instrument.java",
        include_str!("../../frontends/java/src/org/prosecutor/jvm/Instrument.java"),
    ),
    (
        "src/org/prosecutor/jvm/Rt.java",
        include_str!("../../frontends/java/src/org/prosecutor/jvm/Rt.java"),
    ),
    (
        "src/org/prosecutor/jvm/Dump.java",
        include_str!("../../frontends/java/src/org/prosecutor/jvm/Dump.java"),
    ),
    (
        "src/org/prosecutor/jvm/Recording.java",
        include_str!("../../frontends/java/src/org/prosecutor/jvm/Recording.java"),
    ),
    (
        "src/org/prosecutor/jvm/Registry.java",
        include_str!("../../frontends/java/src/org/prosecutor/jvm/Registry.java"),
    ),
    (
        "src/org/prosecutor/jvm/ClassIsolation.java",
        include_str!("../../frontends/java/src/org/prosecutor/jvm/ClassIsolation.java"),
    ),
    (
        "src/org/prosecutor/jvm/Outcomes.java",
        include_str!("../../frontends/java/src/org/prosecutor/jvm/Outcomes.java"),
    ),
];

/// The agent jar in the cache directory.
pub const AGENT_JAR: &str = "prosecutor-agent.jar";
/// The agent's entry point for `java -javaagent` (the jar manifest's `Premain-Class`).
const PREMAIN_CLASS: &str = "org.prosecutor.jvm.Agent";
/// The driver's main class.
const MAIN_CLASS: &str = "org.prosecutor.jvm.Main";
/// What to install when the JDK or a library is missing (Debian, Ubuntu).
pub const INSTALL_HINT: &str =
    "apt-get install default-jdk-headless libasm-java junit4 libhamcrest-java";
/// ASM (bytecode reading and rewriting), unless `PROSECUTOR_ASM_JARS` says otherwise.
pub const DEFAULT_ASM_JARS: &[&str] = &[
    "/usr/share/java/asm.jar",
    "/usr/share/java/asm-tree.jar",
    "/usr/share/java/asm-analysis.jar",
];
/// JUnit 4 and Hamcrest, unless `PROSECUTOR_JUNIT_JARS` says otherwise.
pub const DEFAULT_JUNIT_JARS: &[&str] =
    &["/usr/share/java/junit4.jar", "/usr/share/java/hamcrest.jar"];
/// Lines of the Java process's output an error message quotes.
const TAIL_LINES: usize = 20;

/// Options of one tracing run.
#[derive(Debug, Clone)]
pub struct JavaTraceOptions {
    /// The dump directory to write (created if missing).
    pub out: PathBuf,
    /// The project directory: the Java process's working directory (the dump's file paths are
    /// relative to it). Relative paths of these options are taken relative to the current
    /// directory, as the Python front-end's are.
    pub cwd: PathBuf,
    /// Compiled classes of the code under analysis (e.g. `target/classes`).
    pub classes: PathBuf,
    /// Compiled test classes (e.g. `target/test-classes`).
    pub test_classes: PathBuf,
    /// More class path entries (libraries); a `dir/*` entry is every jar of `dir`, as for `java`.
    pub classpath: Vec<PathBuf>,
    /// Where the sources are (directories holding the package trees); empty: `src/main/java` and
    /// `src/test/java` of the project, those that exist, else the project directory itself.
    pub source_roots: Vec<PathBuf>,
    /// JUnit 4 test classes (`org.example.FooTest`) or methods (`org.example.FooTest::testBar`);
    /// `!` before one leaves it out (`!org.example.FooTest::testBroken`).
    pub tests: Vec<String>,
    /// Options for the JVM that runs the tests (`-Xmx2g`, `-Duser.timezone=UTC`, `--add-opens=...`),
    /// before the agent's own; the experiments' re-runs inherit them.
    pub jvm_args: Vec<String>,
    /// The tests whose failure witnesses the fault (ids or classes); a test failing that is not
    /// one of them is left out of the dump with a warning. Empty: every failing test counts.
    pub witnesses: Vec<String>,
    /// Run the tests once without instrumentation first (in the same JVM) and leave out, with a
    /// warning, the tests whose outcome tracing changes.
    pub plain_run: bool,
    /// Per-test time limit; a test running longer fails with `failure_kind = "timeout"`.
    pub test_timeout: Duration,
    /// How many passing tests get a full trace.
    pub max_passing: usize,
    /// Maximum number of recorded steps per test.
    pub step_cap: usize,
    /// Pass the Java process's stderr (its progress lines) to ours as it comes; without it,
    /// the output is only quoted in an error.
    pub progress: bool,
}

impl JavaTraceOptions {
    /// Options with the defaults (those of the Python front-end): 10 s per test, 20 passing
    /// traces, 2,000,000 steps; the current directory as the project.
    pub fn new(
        classes: impl Into<PathBuf>,
        test_classes: impl Into<PathBuf>,
        out: impl Into<PathBuf>,
        tests: Vec<String>,
    ) -> Self {
        JavaTraceOptions {
            out: out.into(),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            classes: classes.into(),
            test_classes: test_classes.into(),
            classpath: Vec::new(),
            source_roots: Vec::new(),
            tests,
            jvm_args: Vec::new(),
            witnesses: Vec::new(),
            plain_run: true,
            test_timeout: Duration::from_secs(10),
            max_passing: 20,
            step_cap: super::DEFAULT_STEP_CAP,
            progress: false,
        }
    }
}

/// Why tracing failed.
#[derive(thiserror::Error, Debug)]
pub enum JavaError {
    /// The options do not describe a run (no test, a directory that does not exist, ...).
    #[error("{0}")]
    Usage(String),
    /// `java`, `javac` or `jar` is missing.
    #[error("{0}")]
    NoJdk(String),
    /// A jar of ASM or JUnit is missing.
    #[error("{0}")]
    MissingJars(String),
    #[error("--out {path}: {message}")]
    Out { path: PathBuf, message: String },
    #[error("cannot install the Java agent into {path}: {source}")]
    Cache {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot compile the Java agent: `{tool}` {status}{detail}")]
    Compile {
        tool: String,
        status: String,
        detail: String,
    },
    #[error("cannot run `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    /// `Main` exited with 2.
    #[error(
        "the Java tracer rejected its arguments or found no test to run (exit status 2){detail}"
    )]
    NoTests { detail: String },
    /// `Main` exited with another non-zero status, or was killed.
    #[error("the Java tracer failed ({status}){detail}")]
    Failed { status: String, detail: String },
    /// `Main` exited with 0 but its dump's manifest does not load.
    #[error("the Java tracer wrote no usable dump: {0}")]
    Dump(crate::dump::DumpError),
    #[error("no failing test ({passing} passed): there is nothing to localize")]
    NoFailingTest { passing: usize },
}

/// Where the JDK's tools and the libraries are.
#[derive(Debug, Clone)]
pub struct Toolchain {
    pub java: PathBuf,
    pub javac: PathBuf,
    pub jar: PathBuf,
    /// ASM's jars (compile and run).
    pub asm: Vec<PathBuf>,
    /// JUnit 4's jars (compile; run when the user's class path has no JUnit).
    pub junit: Vec<PathBuf>,
}

/// The environment a [`Toolchain`] is looked up in (a value, so that tests need not change the
/// process's environment).
#[derive(Debug, Clone, Default)]
pub struct ToolEnv {
    /// `JAVA_HOME`: when set (and not empty), the tools are `$JAVA_HOME/bin/{java,javac,jar}`.
    pub java_home: Option<OsString>,
    /// `PATH`, searched without `JAVA_HOME`.
    pub path: Option<OsString>,
    /// `PROSECUTOR_ASM_JARS` (':'-separated).
    pub asm_jars: Option<OsString>,
    /// `PROSECUTOR_JUNIT_JARS` (':'-separated).
    pub junit_jars: Option<OsString>,
}

impl ToolEnv {
    /// This process's environment.
    pub fn current() -> ToolEnv {
        ToolEnv {
            java_home: std::env::var_os("JAVA_HOME"),
            path: std::env::var_os("PATH"),
            asm_jars: std::env::var_os("PROSECUTOR_ASM_JARS"),
            junit_jars: std::env::var_os("PROSECUTOR_JUNIT_JARS"),
        }
    }
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// `name` in the directories of `path` (empty entries skipped).
fn which(name: &str, path: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

/// A ':'-separated list of paths (empty entries dropped).
fn split_list(s: &OsStr) -> Vec<PathBuf> {
    std::env::split_paths(s)
        .filter(|p| !p.as_os_str().is_empty())
        .collect()
}

/// The paths joined with ':' (as `java -cp` takes them).
fn join_list<'a>(paths: impl IntoIterator<Item = &'a Path>) -> OsString {
    let mut s = OsString::new();
    for (i, p) in paths.into_iter().enumerate() {
        if i > 0 {
            s.push(":");
        }
        s.push(p);
    }
    s
}

fn quote_list(names: &[&str]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match q.len() {
        0 | 1 => q.concat(),
        n => format!("{} and {}", q[..n - 1].join(", "), q[n - 1]),
    }
}

impl Toolchain {
    /// The tools and jars of this process's environment.
    pub fn from_env() -> Result<Toolchain, JavaError> {
        Toolchain::find(&ToolEnv::current())
    }

    /// Finds `java`, `javac` and `jar` (in `$JAVA_HOME/bin` when `JAVA_HOME` is set, else on
    /// `PATH`) and checks that ASM's jars exist (JUnit's are checked where they are used,
    /// [`Toolchain::check_junit`]).
    pub fn find(env: &ToolEnv) -> Result<Toolchain, JavaError> {
        const TOOLS: [&str; 3] = ["java", "javac", "jar"];
        let java_home = env.java_home.as_ref().filter(|h| !h.is_empty());
        let found: Vec<Option<PathBuf>> = match java_home {
            Some(home) => {
                let bin = Path::new(home).join("bin");
                TOOLS
                    .iter()
                    .map(|t| Some(bin.join(t)).filter(|p| is_executable(p)))
                    .collect()
            }
            None => TOOLS
                .iter()
                .map(|t| env.path.as_deref().and_then(|p| which(t, p)))
                .collect(),
        };
        let missing: Vec<&str> = TOOLS
            .iter()
            .zip(&found)
            .filter(|(_, f)| f.is_none())
            .map(|(t, _)| *t)
            .collect();
        if !missing.is_empty() {
            let verb = if missing.len() == 1 { "is" } else { "are" };
            let where_ = match java_home {
                Some(home) => format!(
                    "JAVA_HOME is {}, and {} {verb} not in its bin/ (is it a JDK, not a JRE?)",
                    Path::new(home).display(),
                    quote_list(&missing)
                ),
                None => format!("{} {verb} not on PATH", quote_list(&missing)),
            };
            return Err(JavaError::NoJdk(format!(
                "the Java front-end needs a JDK (java, javac and jar): {where_}; install one \
                 (`{INSTALL_HINT}`) or set JAVA_HOME to one"
            )));
        }
        let [java, javac, jar] = <[Option<PathBuf>; 3]>::try_from(found)
            .expect("three tools")
            .map(|p| p.expect("checked above"));
        let list = |var: &Option<OsString>, default: &[&str]| match var {
            Some(v) if !v.is_empty() => split_list(v),
            _ => default.iter().map(PathBuf::from).collect(),
        };
        let tc = Toolchain {
            java,
            javac,
            jar,
            asm: list(&env.asm_jars, DEFAULT_ASM_JARS),
            junit: list(&env.junit_jars, DEFAULT_JUNIT_JARS),
        };
        check_jars("ASM", &tc.asm, "PROSECUTOR_ASM_JARS")?;
        Ok(tc)
    }

    /// JUnit's jars exist.
    pub fn check_junit(&self) -> Result<(), JavaError> {
        check_jars("JUnit 4", &self.junit, "PROSECUTOR_JUNIT_JARS")
    }
}

fn check_jars(what: &str, jars: &[PathBuf], var: &str) -> Result<(), JavaError> {
    let missing: Vec<String> = jars
        .iter()
        .filter(|j| !j.is_file())
        .map(|j| j.display().to_string())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(JavaError::MissingJars(format!(
        "the Java front-end needs {what}, and {} {} not exist; install it (`{INSTALL_HINT}`) \
         or list its jars in {var} (':'-separated)",
        missing.join(", "),
        if missing.len() == 1 { "does" } else { "do" }
    )))
}

/// The cache directory of the agent compiled by `tc`'s `javac` (by the embedded sources and
/// that `javac`'s real path).
fn agent_key(tc: &Toolchain, sources: &[(&str, &str)]) -> String {
    let javac = std::fs::canonicalize(&tc.javac).unwrap_or_else(|_| tc.javac.clone());
    cache::Hash::default()
        .files(sources)
        .bytes(javac.as_os_str().as_encoded_bytes())
        .hex()
}

/// Installs and compiles the agent into the cache (once per hash); returns its directory, which
/// holds [`AGENT_JAR`].
pub fn install_agent(tc: &Toolchain) -> Result<PathBuf, JavaError> {
    install_agent_in(&cache::root("java"), tc, SOURCES)
}

/// [`install_agent`] under `root`, from `sources`.
fn install_agent_in(
    root: &Path,
    tc: &Toolchain,
    sources: &[(&str, &str)],
) -> Result<PathBuf, JavaError> {
    let err = |path: &Path, source| JavaError::Cache {
        path: path.to_path_buf(),
        source,
    };
    cache::install(
        root,
        &agent_key(tc, sources),
        |d| cache::has_files(d, sources) && d.join(AGENT_JAR).is_file(),
        |d| compile_agent(d, tc, sources),
        err,
    )
}

/// Writes the sources into `dir` and builds `dir/prosecutor-agent.jar`.
fn compile_agent(dir: &Path, tc: &Toolchain, sources: &[(&str, &str)]) -> Result<(), JavaError> {
    let err = |path: &Path, source| JavaError::Cache {
        path: path.to_path_buf(),
        source,
    };
    tc.check_junit()?;
    cache::write_files(dir, sources).map_err(|(p, e)| err(&p, e))?;
    let classes = dir.join("classes");
    std::fs::create_dir_all(&classes).map_err(|e| err(&classes, e))?;
    let mut javac = Command::new(&tc.javac);
    javac
        .args(["-g", "-encoding", "UTF-8", "-nowarn", "-d"])
        .arg(&classes)
        .arg("-cp")
        .arg(join_list(
            tc.asm.iter().chain(&tc.junit).map(PathBuf::as_path),
        ))
        .args(
            sources
                .iter()
                .filter(|(n, _)| n.ends_with(".java"))
                .map(|(n, _)| dir.join(n)),
        );
    run_tool(&mut javac, "javac")?;
    let manifest = dir.join("MANIFEST.MF");
    std::fs::write(&manifest, format!("Premain-Class: {PREMAIN_CLASS}\n"))
        .map_err(|e| err(&manifest, e))?;
    let mut jar = Command::new(&tc.jar);
    jar.arg("cfm")
        .arg(dir.join(AGENT_JAR))
        .arg(&manifest)
        .arg("-C")
        .arg(&classes)
        .arg(".");
    run_tool(&mut jar, "jar")
}

/// Runs a JDK tool to its end; its output is quoted when it fails.
fn run_tool(c: &mut Command, tool: &str) -> Result<(), JavaError> {
    let o = c
        .stdin(Stdio::null())
        .output()
        .map_err(|e| JavaError::Spawn {
            program: tool.to_owned(),
            source: e,
        })?;
    if o.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    // the first lines: a compiler's first error is the one to read
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut detail = String::new();
    if !lines.is_empty() {
        let n = lines.len().min(TAIL_LINES);
        detail = format!(":\n  {}", lines[..n].join("\n  "));
        if lines.len() > n {
            detail.push_str(&format!("\n  ... ({} more lines)", lines.len() - n));
        }
    }
    Err(JavaError::Compile {
        tool: tool.to_owned(),
        status: status_text(o.status),
        detail,
    })
}

fn status_text(s: std::process::ExitStatus) -> String {
    match s.code() {
        Some(c) => format!("exited with status {c}"),
        None => "was killed by a signal".to_owned(),
    }
}

/// The last [`TAIL_LINES`] lines, indented, for an error message ("" when there are none).
fn detail(lines: &VecDeque<String>) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let start = lines.len().saturating_sub(TAIL_LINES);
    let v: Vec<&str> = lines.iter().skip(start).map(String::as_str).collect();
    format!(":\n  {}", v.join("\n  "))
}

/// The options with absolute, checked paths.
#[derive(Debug, Clone)]
struct Run {
    cwd: PathBuf,
    out: PathBuf,
    classes: PathBuf,
    test_classes: PathBuf,
    classpath: Vec<PathBuf>,
    source_roots: Vec<PathBuf>,
    /// The user's class path holds JUnit: ours is not added.
    user_junit: bool,
}

/// Whether a class path entry is (or, `dir/*`, holds) a jar whose name contains "junit".
fn is_junit_entry(p: &Path) -> bool {
    let junit_jar = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .map(str::to_ascii_lowercase)
            .is_some_and(|n| n.contains("junit") && n.ends_with(".jar"))
    };
    if p.file_name().is_some_and(|n| n == "*") {
        let dir = p.parent().unwrap_or(Path::new("."));
        return std::fs::read_dir(dir)
            .map(|rd| rd.flatten().any(|e| junit_jar(&e.path())))
            .unwrap_or(false);
    }
    junit_jar(p)
}

fn check(opts: &JavaTraceOptions) -> Result<Run, JavaError> {
    let usage = |m: String| Err(JavaError::Usage(m));
    if opts.tests.is_empty() {
        return usage(
            "no test given: name the JUnit test classes (or methods) after `--`, e.g. \
             `-- org.example.FooTest org.example.BarTest::testBaz`"
                .to_owned(),
        );
    }
    if let Some(t) = opts
        .tests
        .iter()
        .find(|t| t.is_empty() || t.starts_with('-') || t.chars().any(char::is_whitespace))
    {
        return usage(format!(
            "{t:?} is not a test: expected a JUnit test class (`org.example.FooTest`) or method \
             (`org.example.FooTest::testBar`)"
        ));
    }
    let cwd = absolute(&opts.cwd);
    if !cwd.is_dir() {
        return usage(format!(
            "project directory {}: not a directory",
            opts.cwd.display()
        ));
    }
    let dir = |flag: &str, p: &Path| {
        let a = absolute(p);
        if a.is_dir() {
            Ok(a)
        } else {
            Err(JavaError::Usage(format!(
                "{flag} {}: not a directory",
                p.display()
            )))
        }
    };
    let classes = dir("--classes", &opts.classes)?;
    let test_classes = dir("--test-classes", &opts.test_classes)?;
    let mut classpath = Vec::new();
    for p in &opts.classpath {
        let a = absolute(p);
        let exists = if a.file_name().is_some_and(|n| n == "*") {
            a.parent().is_some_and(Path::is_dir)
        } else {
            a.exists()
        };
        if !exists {
            return usage(format!(
                "--cp: class path entry {} does not exist",
                p.display()
            ));
        }
        classpath.push(a);
    }
    let source_roots = if opts.source_roots.is_empty() {
        let std_roots: Vec<PathBuf> = ["src/main/java", "src/test/java"]
            .iter()
            .map(|r| cwd.join(r))
            .filter(|r| r.is_dir())
            .collect();
        if std_roots.is_empty() {
            vec![cwd.clone()]
        } else {
            std_roots
        }
    } else {
        opts.source_roots
            .iter()
            .map(|r| dir("--source-root", r))
            .collect::<Result<_, _>>()?
    };
    let out = absolute(&opts.out);
    if out.exists() && !out.is_dir() {
        return Err(JavaError::Out {
            path: opts.out.clone(),
            message: "exists and is not a directory".into(),
        });
    }
    Ok(Run {
        user_junit: classpath.iter().any(|p| is_junit_entry(p)),
        cwd,
        out,
        classes,
        test_classes,
        classpath,
        source_roots,
    })
}

/// The `java` command line of a trace (contract: module docs).
fn command(r: &Run, opts: &JavaTraceOptions, tc: &Toolchain, agent_dir: &Path) -> Vec<OsString> {
    let agent = agent_dir.join(AGENT_JAR);
    let mut cp: Vec<&Path> = vec![&agent];
    cp.extend(tc.asm.iter().map(PathBuf::as_path));
    cp.push(&r.classes);
    cp.push(&r.test_classes);
    cp.extend(r.classpath.iter().map(PathBuf::as_path));
    if !r.user_junit {
        cp.extend(tc.junit.iter().map(PathBuf::as_path));
    }
    let mut javaagent = OsString::from("-javaagent:");
    javaagent.push(&agent);
    let mut argv: Vec<OsString> = vec![
        tc.java.clone().into(),
        // Identity hash codes all 1: a HashSet of objects without their own hashCode iterates in
        // insertion order, the same in the traced run and in every flip run (a JVM's default
        // codes differ run to run, and so would the evaluations a flip counts).
        "-XX:+UnlockExperimentalVMOptions".into(),
        "-XX:hashCode=2".into(),
    ];
    argv.extend(opts.jvm_args.iter().map(OsString::from));
    argv.extend([
        javaagent,
        "-cp".into(),
        join_list(cp),
        MAIN_CLASS.into(),
        "trace".into(),
    ]);
    let mut flag = |f: &str, v: &OsStr| {
        argv.push(f.into());
        argv.push(v.to_owned());
    };
    flag("--out", r.out.as_os_str());
    flag("--project", r.cwd.as_os_str());
    flag("--classes", r.classes.as_os_str());
    flag("--test-classes", r.test_classes.as_os_str());
    for s in &r.source_roots {
        flag("--source-root", s.as_os_str());
    }
    flag("--step-cap", opts.step_cap.to_string().as_ref());
    flag(
        "--test-timeout-ms",
        opts.test_timeout.as_millis().to_string().as_ref(),
    );
    flag("--max-passing", opts.max_passing.to_string().as_ref());
    for w in &opts.witnesses {
        flag("--witness", w.as_ref());
    }
    if !opts.plain_run {
        flag("--plain-run", "off".as_ref());
    }
    argv.extend(opts.tests.iter().map(OsString::from));
    argv
}

/// Traces `opts.tests` with the JVM front-end and writes the dump to `opts.out`.
pub fn trace(opts: &JavaTraceOptions) -> Result<TraceSummary, JavaError> {
    let r = check(opts)?;
    let tc = Toolchain::from_env()?;
    run(&r, opts, &tc, &install_agent(&tc)?)
}

/// [`trace`] with a given toolchain and cache root.
#[cfg(test)]
fn trace_with(
    opts: &JavaTraceOptions,
    tc: &Toolchain,
    cache_root: &Path,
    sources: &[(&str, &str)],
) -> Result<TraceSummary, JavaError> {
    let r = check(opts)?;
    run(&r, opts, tc, &install_agent_in(cache_root, tc, sources)?)
}

fn run(
    r: &Run,
    opts: &JavaTraceOptions,
    tc: &Toolchain,
    agent_dir: &Path,
) -> Result<TraceSummary, JavaError> {
    if !r.user_junit {
        tc.check_junit()?;
    }
    std::fs::create_dir_all(&r.out).map_err(|e| JavaError::Out {
        path: opts.out.clone(),
        message: format!("cannot create: {e}"),
    })?;
    let argv = command(r, opts, tc, agent_dir);
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(&r.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| JavaError::Spawn {
            program: tc.java.display().to_string(),
            source: e,
        })?;
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let (out_tail, err_tail) = std::thread::scope(|s| {
        let o = s.spawn(|| stdout.map(|p| tail(p, false)).unwrap_or_default());
        let e = s.spawn(|| stderr.map(|p| tail(p, opts.progress)).unwrap_or_default());
        (o.join().unwrap_or_default(), e.join().unwrap_or_default())
    });
    let status = child.wait().map_err(|e| JavaError::Spawn {
        program: tc.java.display().to_string(),
        source: e,
    })?;
    let lines = if err_tail.is_empty() {
        &out_tail
    } else {
        &err_tail
    };
    match status.code() {
        Some(0) => summarize(&r.out),
        Some(2) => Err(JavaError::NoTests {
            detail: detail(lines),
        }),
        _ => Err(JavaError::Failed {
            status: status_text(status),
            detail: detail(lines),
        }),
    }
}

/// Reads `r` to its end, keeping its last [`TAIL_LINES`] non-empty lines; with `echo`, each
/// line also goes to our stderr as it comes.
fn tail(r: impl Read, echo: bool) -> VecDeque<String> {
    let mut lines = VecDeque::new();
    let mut reader = BufReader::new(r);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if echo {
            let mut e = std::io::stderr().lock();
            let _ = e.write_all(&buf);
            if !buf.ends_with(b"\n") {
                let _ = e.write_all(b"\n");
            }
        }
        let line = String::from_utf8_lossy(&buf).trim_end().to_owned();
        if !line.trim().is_empty() {
            if lines.len() == TAIL_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }
    lines
}

/// The summary of a written dump, from its manifest (and coverage): a test is untraced when it
/// has neither a trace nor a coverage row.
fn summarize(out: &Path) -> Result<TraceSummary, JavaError> {
    let m = crate::dump::Manifest::read(out).map_err(JavaError::Dump)?;
    if m.tests.is_empty() {
        return Err(JavaError::NoTests {
            detail: ": the dump lists no test".to_owned(),
        });
    }
    let mut covered = HashSet::new();
    crate::dump::read_rows(out, "coverage", 2, false, |_, c| {
        covered.insert(c[0].to_owned());
        Ok(())
    })
    .map_err(JavaError::Dump)?;
    let failing = m
        .tests
        .iter()
        .filter(|t| t.outcome == crate::dump::Outcome::Fail)
        .count();
    let passing = m.tests.len() - failing;
    if failing == 0 {
        return Err(JavaError::NoFailingTest { passing });
    }
    let warnings = m
        .notes
        .get("warnings")
        .and_then(toml::Value::as_array)
        .map(|a| {
            a.iter()
                .map(|w| w.as_str().map_or_else(|| w.to_string(), str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    Ok(TraceSummary {
        dump: out.to_path_buf(),
        failing,
        passing,
        traced: m.tests.iter().filter(|t| t.trace.is_some()).count(),
        untraced: m
            .tests
            .iter()
            .filter(|t| t.trace.is_none() && !covered.contains(&t.id))
            .count(),
        warnings,
        plain_run: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_exe(path: &Path, text: &str) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Jars that exist (empty files): `Toolchain::find` only checks that they are there.
    fn fake_jars(d: &Path) -> (OsString, OsString) {
        for j in ["asm.jar", "asm-tree.jar", "junit4.jar", "hamcrest.jar"] {
            std::fs::write(d.join(j), "").unwrap();
        }
        let l = |a: &str, b: &str| join_list([d.join(a).as_path(), d.join(b).as_path()]);
        (
            l("asm.jar", "asm-tree.jar"),
            l("junit4.jar", "hamcrest.jar"),
        )
    }

    #[test]
    fn missing_jdk_is_a_clear_error() {
        let empty = tempfile::tempdir().unwrap();
        let (asm, junit) = fake_jars(empty.path());
        // JAVA_HOME without the tools (PATH is not searched then)
        let env = ToolEnv {
            java_home: Some(empty.path().into()),
            path: std::env::var_os("PATH"),
            asm_jars: Some(asm.clone()),
            junit_jars: Some(junit.clone()),
        };
        let e = Toolchain::find(&env).unwrap_err().to_string();
        assert!(
            e.contains("JAVA_HOME is")
                && e.contains("`java`, `javac` and `jar` are not in its bin/")
                && e.contains(INSTALL_HINT),
            "{e}"
        );
        // no JAVA_HOME, a PATH without the tools
        let env = ToolEnv {
            java_home: None,
            path: Some(empty.path().into()),
            asm_jars: Some(asm),
            junit_jars: Some(junit),
        };
        let e = Toolchain::find(&env).unwrap_err().to_string();
        assert!(
            e.contains("`java`, `javac` and `jar` are not on PATH") && e.contains(INSTALL_HINT),
            "{e}"
        );
        // only javac missing (a JRE)
        let jre = tempfile::tempdir().unwrap();
        for t in ["java", "jar"] {
            write_exe(&jre.path().join("bin").join(t), "#!/bin/sh\n");
        }
        let env = ToolEnv {
            java_home: Some(jre.path().into()),
            ..env
        };
        let e = Toolchain::find(&env).unwrap_err().to_string();
        assert!(e.contains("`javac` is not in its bin/"), "{e}");
    }

    #[test]
    fn missing_jars_are_named() {
        let home = fake_jdk(|_| {});
        let d = tempfile::tempdir().unwrap();
        let env = ToolEnv {
            java_home: Some(home.path().into()),
            path: None,
            asm_jars: Some(d.path().join("nope.jar").into()),
            junit_jars: None,
        };
        let e = Toolchain::find(&env).unwrap_err().to_string();
        assert!(
            e.contains("needs ASM")
                && e.contains("nope.jar does not exist")
                && e.contains("PROSECUTOR_ASM_JARS")
                && e.contains(INSTALL_HINT),
            "{e}"
        );
        let (asm, _) = fake_jars(d.path());
        let env = ToolEnv {
            asm_jars: Some(asm),
            junit_jars: Some(d.path().join("j.jar").into()),
            ..env
        };
        let tc = Toolchain::find(&env).unwrap();
        let e = tc.check_junit().unwrap_err().to_string();
        assert!(e.contains("needs JUnit 4") && e.contains("j.jar"), "{e}");
    }

    /// A JAVA_HOME whose `javac` and `jar` do what the driver needs from them (create the
    /// classes directory and the jar) and whose `java` runs `java_body` (sh).
    fn fake_jdk(edit: impl FnOnce(&Path)) -> tempfile::TempDir {
        let home = tempfile::tempdir().unwrap();
        let bin = home.path().join("bin");
        write_exe(
            &bin.join("javac"),
            "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -d ]; then mkdir -p \"$2\"/org/prosecutor/jvm; touch \"$2\"/org/prosecutor/jvm/Main.class; fi; shift; done\n",
        );
        write_exe(&bin.join("jar"), "#!/bin/sh\ncp \"$3\" \"$2\"\n");
        write_exe(&bin.join("java"), "#!/bin/sh\nexit 0\n");
        edit(&bin);
        home
    }

    fn project() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for p in ["build/classes", "build/test-classes", "src/main/java"] {
            std::fs::create_dir_all(d.path().join(p)).unwrap();
        }
        d
    }

    fn opts(project: &Path) -> JavaTraceOptions {
        let mut o = JavaTraceOptions::new(
            project.join("build/classes"),
            project.join("build/test-classes"),
            project.join("dump"),
            vec![
                "org.example.FooTest".into(),
                "org.example.BarTest::testBaz".into(),
            ],
        );
        o.cwd = project.to_path_buf();
        o
    }

    fn toolchain(home: &Path, jars: &Path) -> Toolchain {
        let (asm, junit) = fake_jars(jars);
        Toolchain::find(&ToolEnv {
            java_home: Some(home.into()),
            path: None,
            asm_jars: Some(asm),
            junit_jars: Some(junit),
        })
        .unwrap()
    }

    const MANIFEST: &str = r#"format = "prosecutor-dump"
version = 1

[frontend]
name = "java"
language = "java"

[notes]
warnings = ["one thing"]

[[test]]
id = "org.example.FooTest::testA"
trace = "t1"
outcome = "fail"

[[test]]
id = "org.example.FooTest::testB"
outcome = "pass"

[[test]]
id = "org.example.BarTest::testBaz"
outcome = "pass"
"#;

    /// The `java` command line is the contract's, the dump's manifest makes the summary, and
    /// Main's stderr is quoted when it exits non-zero.
    #[test]
    fn runs_main_as_the_contract_says() {
        let p = project();
        let jars = tempfile::tempdir().unwrap();
        let argv_file = p.path().join("argv");
        let manifest = p.path().join("m.toml");
        std::fs::write(&manifest, MANIFEST).unwrap();
        let home = fake_jdk(|bin| {
            write_exe(
                &bin.join("java"),
                &format!(
                    "#!/bin/sh\npwd -P > '{a}'\nfor x in \"$@\"; do echo \"$x\" >> '{a}'; done\n\
                     out=; while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=\"$2\"; shift; done\n\
                     cp '{m}' \"$out\"/manifest.toml\n\
                     printf 'org.example.BarTest::testBaz\\tS1\\n' > \"$out\"/coverage.facts\n\
                     echo progress >&2\n",
                    a = argv_file.display(),
                    m = manifest.display()
                ),
            )
        });
        let tc = toolchain(home.path(), jars.path());
        let cache = tempfile::tempdir().unwrap();
        let s = trace_with(&opts(p.path()), &tc, cache.path(), SOURCES).expect("trace");
        let pd = p.path().canonicalize().unwrap();
        assert_eq!(s.dump, p.path().join("dump"));
        assert_eq!((s.failing, s.passing, s.traced, s.untraced), (1, 2, 1, 1));
        assert_eq!(s.warnings, ["one thing"]);
        let argv = std::fs::read_to_string(&argv_file).unwrap();
        let lines: Vec<&str> = argv.lines().collect();
        let agent_dir = cache.path().join(agent_key(&tc, SOURCES));
        let agent = agent_dir.join(AGENT_JAR);
        let a = |p: &Path| p.display().to_string();
        let cp = [
            a(&agent),
            a(&tc.asm[0]),
            a(&tc.asm[1]),
            a(&p.path().join("build/classes")),
            a(&p.path().join("build/test-classes")),
            a(&tc.junit[0]),
            a(&tc.junit[1]),
        ]
        .join(":");
        let want = vec![
            a(&pd),
            "-XX:+UnlockExperimentalVMOptions".into(),
            "-XX:hashCode=2".into(),
            format!("-javaagent:{}", a(&agent)),
            "-cp".into(),
            cp,
            "org.prosecutor.jvm.Main".into(),
            "trace".into(),
            "--out".into(),
            a(&p.path().join("dump")),
            "--project".into(),
            a(p.path()),
            "--classes".into(),
            a(&p.path().join("build/classes")),
            "--test-classes".into(),
            a(&p.path().join("build/test-classes")),
            "--source-root".into(),
            a(&p.path().join("src/main/java")),
            "--step-cap".into(),
            "2000000".into(),
            "--test-timeout-ms".into(),
            "10000".into(),
            "--max-passing".into(),
            "20".into(),
            "org.example.FooTest".into(),
            "org.example.BarTest::testBaz".into(),
        ];
        assert_eq!(lines, want);
        assert_eq!(
            std::fs::read_to_string(agent_dir.join("MANIFEST.MF")).unwrap(),
            "Premain-Class: org.prosecutor.jvm.Agent\n"
        );
        assert!(cache::has_files(&agent_dir, SOURCES));

        // a user class path with JUnit: ours is not added; given source roots replace the default
        let mut o = opts(p.path());
        std::fs::write(p.path().join("junit-4.13.2.jar"), "").unwrap();
        o.classpath = vec![p.path().join("junit-4.13.2.jar")];
        o.source_roots = vec![p.path().to_owned()];
        trace_with(&o, &tc, cache.path(), SOURCES).expect("trace");
        let argv = std::fs::read_to_string(&argv_file).unwrap();
        // java, the two -XX flags, -javaagent, -cp, then the class path
        let cp = argv.lines().nth(5).unwrap();
        assert!(
            cp.ends_with(&format!(
                "build/test-classes:{}",
                a(&p.path().join("junit-4.13.2.jar"))
            )),
            "{cp}"
        );
        assert!(
            argv.contains(&format!("--source-root\n{}\n--step-cap", a(p.path()))),
            "{argv}"
        );
    }

    #[test]
    fn exit_statuses_of_main() {
        let p = project();
        let jars = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        for (code, want) in [
            (
                2,
                "the Java tracer rejected its arguments or found no test to run (exit status 2):\n  line 1\n  line 2\n  no test class Foo",
            ),
            (1, "the Java tracer failed (exited with status 1):\n  line 1\n  line 2\n  no test class Foo"),
            (0, "the Java tracer wrote no usable dump: "),
        ] {
            let home = fake_jdk(|bin| {
                write_exe(
                    &bin.join("java"),
                    &format!("#!/bin/sh\necho out\necho line 1 >&2\necho >&2\necho line 2 >&2\necho no test class Foo >&2\nexit {code}\n"),
                )
            });
            let tc = toolchain(home.path(), jars.path());
            let e = trace_with(&opts(p.path()), &tc, cache.path(), SOURCES)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(want), "{e}");
            if code == 0 {
                assert!(e.contains("missing manifest.toml"), "{e}");
            }
        }
        // no failing test
        let m = p.path().join("m.toml");
        std::fs::write(&m, MANIFEST.replace("\"fail\"", "\"pass\"")).unwrap();
        let home = fake_jdk(|bin| {
            write_exe(
                &bin.join("java"),
                &format!(
                    "#!/bin/sh\nout=; while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=\"$2\"; shift; done\ncp '{}' \"$out\"/manifest.toml\n",
                    m.display()
                ),
            )
        });
        let tc = toolchain(home.path(), jars.path());
        let e = trace_with(&opts(p.path()), &tc, cache.path(), SOURCES).unwrap_err();
        assert!(matches!(e, JavaError::NoFailingTest { passing: 3 }), "{e}");
    }

    #[test]
    fn bad_options_are_named() {
        let p = project();
        let jars = tempfile::tempdir().unwrap();
        let home = fake_jdk(|_| {});
        let tc = toolchain(home.path(), jars.path());
        let cache = tempfile::tempdir().unwrap();
        let err = |edit: &dyn Fn(&mut JavaTraceOptions)| {
            let mut o = opts(p.path());
            edit(&mut o);
            trace_with(&o, &tc, cache.path(), SOURCES)
                .unwrap_err()
                .to_string()
        };
        assert!(err(&|o| o.tests.clear()).starts_with("no test given"));
        assert!(err(&|o| o.tests = vec!["--foo".into()]).contains("is not a test"));
        assert_eq!(
            err(&|o| o.classes = o.cwd.join("nope")),
            format!(
                "--classes {}: not a directory",
                p.path().join("nope").display()
            )
        );
        assert_eq!(
            err(&|o| o.test_classes = o.cwd.join("nope")),
            format!(
                "--test-classes {}: not a directory",
                p.path().join("nope").display()
            )
        );
        assert_eq!(
            err(&|o| o.classpath = vec![o.cwd.join("x.jar")]),
            format!(
                "--cp: class path entry {} does not exist",
                p.path().join("x.jar").display()
            )
        );
        let e = err(&|o| o.source_roots = vec![o.cwd.join("src/test/java")]);
        assert!(
            e.starts_with("--source-root /") && e.ends_with("/src/test/java: not a directory"),
            "{e}"
        );
    }

    #[test]
    fn a_javac_error_is_quoted() {
        let jars = tempfile::tempdir().unwrap();
        let home = fake_jdk(|bin| {
            write_exe(
                &bin.join("javac"),
                "#!/bin/sh\necho 'Main.java:3: error: cannot find symbol' >&2\nexit 1\n",
            )
        });
        let tc = toolchain(home.path(), jars.path());
        let cache = tempfile::tempdir().unwrap();
        let e = install_agent_in(cache.path(), &tc, SOURCES)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "cannot compile the Java agent: `javac` exited with status 1:\n  Main.java:3: error: cannot find symbol"
        );
        // nothing half-built is left in the cache
        assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);
    }

    /// Every `.java` file of the agent's source tree is embedded (a file left out of
    /// `SOURCES` would break the agent's compilation in the cache, not the build).
    #[test]
    fn every_agent_source_is_embedded() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("frontends/java");
        let mut on_disk = Vec::new();
        let mut stack = vec![root.join("src")];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "java") {
                    on_disk.push(
                        p.strip_prefix(&root)
                            .unwrap()
                            .to_string_lossy()
                            .into_owned(),
                    );
                }
            }
        }
        on_disk.sort();
        let mut embedded: Vec<String> = SOURCES.iter().map(|(n, _)| n.to_string()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk, "SOURCES in src/frontend/java.rs");
    }

    /// Stand-ins for the agent (the real one is tested end to end): an agent whose premain
    /// marks that it ran, and a Main that checks it, loads ASM and JUnit from the class path,
    /// prints progress and writes a one-test dump.
    const STUBS: &[(&str, &str)] = &[
        (
            "src/org/prosecutor/jvm/Agent.java",
            r#"package org.prosecutor.jvm;
public final class Agent {
    public static void premain(String a, java.lang.instrument.Instrumentation i) {
        System.setProperty("prosecutor.agent", "on");
    }
}
"#,
        ),
        (
            "src/org/prosecutor/jvm/Main.java",
            r#"package org.prosecutor.jvm;
import java.nio.file.*;
public final class Main {
    public static void main(String[] args) throws Exception {
        if (!"on".equals(System.getProperty("prosecutor.agent"))) System.exit(1);
        Class.forName("org.objectweb.asm.tree.analysis.Analyzer");
        Class.forName("org.junit.runner.JUnitCore");
        Class.forName("org.hamcrest.Matcher");
        String out = null;
        for (int k = 0; k < args.length; k++) if (args[k].equals("--out")) out = args[k + 1];
        String test = args[args.length - 1];
        System.err.println("stub: " + test);
        String m = "format = \"prosecutor-dump\"\nversion = 1\n[frontend]\nname = \"java\"\n"
            + "[[test]]\nid = \"" + test + "\"\noutcome = \"fail\"\n";
        Files.write(Paths.get(out, "manifest.toml"), m.getBytes("UTF-8"));
    }
}
"#,
        ),
        (
            "src/org/prosecutor/jvm/Rt.java",
            r#"package org.prosecutor.jvm;
import org.objectweb.asm.tree.ClassNode;
import org.junit.runner.JUnitCore;
final class Rt { ClassNode n; JUnitCore c; }
"#,
        ),
    ];

    /// The machine's JDK compiles sources into the cache as a jar with the agent's manifest,
    /// once, and `java -javaagent` runs it with ASM and JUnit on the class path (fails, naming
    /// what is missing, without them).
    #[test]
    fn agent_compiles_into_the_cache_and_runs() {
        let tc = match Toolchain::from_env().and_then(|t| t.check_junit().map(|()| t)) {
            Ok(t) => t,
            Err(e) => panic!("this test needs a JDK with ASM and JUnit 4: {e}"),
        };
        let cache = tempfile::tempdir().unwrap();
        let dir = install_agent_in(cache.path(), &tc, STUBS).expect("compile");
        assert_eq!(dir, cache.path().join(agent_key(&tc, STUBS)));
        let jar = dir.join(AGENT_JAR);
        assert!(jar.is_file());
        let listing = Command::new(&tc.jar).arg("tf").arg(&jar).output().unwrap();
        let listing = String::from_utf8_lossy(&listing.stdout);
        for class in ["Agent", "Main", "Rt"] {
            assert!(
                listing.contains(&format!("org/prosecutor/jvm/{class}.class")),
                "{listing}"
            );
        }
        let x = tempfile::tempdir().unwrap();
        let st = Command::new(&tc.jar)
            .arg("xf")
            .arg(&jar)
            .arg("META-INF/MANIFEST.MF")
            .current_dir(x.path())
            .status()
            .unwrap();
        assert!(st.success());
        let mf = std::fs::read_to_string(x.path().join("META-INF/MANIFEST.MF")).unwrap();
        assert!(
            mf.contains("Premain-Class: org.prosecutor.jvm.Agent"),
            "{mf}"
        );
        // installed once: a second call compiles nothing
        let modified = std::fs::metadata(&jar).unwrap().modified().unwrap();
        assert_eq!(install_agent_in(cache.path(), &tc, STUBS).unwrap(), dir);
        assert_eq!(
            std::fs::metadata(&jar).unwrap().modified().unwrap(),
            modified
        );
        // the real JVM runs it as the agent
        let p = project();
        let s = trace_with(&opts(p.path()), &tc, cache.path(), STUBS).expect("trace");
        assert_eq!((s.failing, s.passing, s.traced), (1, 0, 0));
        // a source that does not compile: javac's message
        let mut broken: Vec<(&str, &str)> = STUBS.to_vec();
        broken[2].1 = "package org.prosecutor.jvm;\nfinal class Rt { int x = y; }\n";
        let e = install_agent_in(cache.path(), &tc, &broken)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("cannot compile the Java agent: `javac` exited with status 1")
                && e.contains("Rt.java:2: error: cannot find symbol"),
            "{e}"
        );
    }
}
