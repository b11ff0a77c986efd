//! The Python front-end driver.
//!
//! `trace` runs the user's test command (pytest) with the `prosecutor_tracer` pytest plugin,
//! which writes a trace dump (docs/trace-format.md). The Python package is embedded in the
//! binary and written once into a content-addressed cache directory
//! (`$XDG_CACHE_HOME/prosecutor/python/<hash>/` or `~/.cache/prosecutor/python/<hash>/`), which is
//! put on `PYTHONPATH`; the plugin is loaded with `-p prosecutor_tracer.plugin` through
//! `PYTEST_ADDOPTS`. Nothing the user gave is modified: only `--out` and the cache are written.
//! See docs/frontend-python.md.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub use super::TraceSummary;
use super::{absolute, cache};

/// The embedded Python package: (path relative to the package parent directory, contents).
const PACKAGE: &[(&str, &str)] = &[
    (
        "prosecutor_tracer/__init__.py",
        include_str!("../../frontends/python/prosecutor_tracer/__init__.py"),
    ),
    (
        "prosecutor_tracer/static_facts.py",
        include_str!("../../frontends/python/prosecutor_tracer/static_facts.py"),
    ),
    (
        "prosecutor_tracer/tracer.py",
        include_str!("../../frontends/python/prosecutor_tracer/tracer.py"),
    ),
    (
        "prosecutor_tracer/code_profile.py",
        include_str!("../../frontends/python/prosecutor_tracer/code_profile.py"),
    ),
    (
        "prosecutor_tracer/static_cache.py",
        include_str!("../../frontends/python/prosecutor_tracer/static_cache.py"),
    ),
    (
        "prosecutor_tracer/instrument.py",
        include_str!("../../frontends/python/prosecutor_tracer/instrument.py"),
    ),
    (
        "prosecutor_tracer/plugin.py",
        include_str!("../../frontends/python/prosecutor_tracer/plugin.py"),
    ),
    (
        "prosecutor_tracer/session.py",
        include_str!("../../frontends/python/prosecutor_tracer/session.py"),
    ),
    (
        "prosecutor_tracer/flip.py",
        include_str!("../../frontends/python/prosecutor_tracer/flip.py"),
    ),
    (
        "prosecutor_tracer/heap.py",
        include_str!("../../frontends/python/prosecutor_tracer/heap.py"),
    ),
    (
        "prosecutor_tracer/serve.py",
        include_str!("../../frontends/python/prosecutor_tracer/serve.py"),
    ),
    (
        "prosecutor_tracer/values.py",
        include_str!("../../frontends/python/prosecutor_tracer/values.py"),
    ),
];

/// Options of one tracing run.
#[derive(Debug, Clone)]
pub struct PythonTraceOptions {
    /// Root of the code under analysis (its files are the suspects).
    pub src: PathBuf,
    /// The dump directory to write (created if missing).
    pub out: PathBuf,
    /// The test command as typed, e.g. `["pytest", "tests/"]` or `["python3", "-m", "pytest"]`.
    pub command: Vec<String>,
    /// Working directory of the test command.
    pub cwd: PathBuf,
    /// Per-test time limit; a test running longer fails with `failure_kind = "timeout"`.
    pub test_timeout: Duration,
    /// The user gave `test_timeout` (rather than the default): it is the plain pre-run's limit
    /// too ([`plain_timeout`]).
    pub test_timeout_given: bool,
    /// How many passing tests get a full trace (those sharing most functions with the failing ones).
    pub max_passing: usize,
    /// Maximum number of recorded steps per test (coverage stays complete beyond it).
    pub step_cap: usize,
    /// Globs (relative to `src`, or file names) of files under `src` that are test code.
    pub test_globs: Vec<String>,
    /// Run the test command once without tracing first (the plain pre-run): each test's plain
    /// duration raises its tracer time limit, and tests whose outcome tracing changes are left
    /// out of the dump (docs/frontend-python.md "Plain pre-run"). Default: on, unless the
    /// environment has `PROSECUTOR_PLAIN_RUN=0`.
    pub plain_run: bool,
    /// Run the plain pre-run alongside the traced run (two processes at once) instead of
    /// before it: the traced run reads each test's plain result as soon as the plain run has
    /// it and waits for it when it matters, so the time limits and the comparison are those
    /// of a plain run before (docs/frontend-python.md "Plain pre-run"). Opt-in
    /// (`PROSECUTOR_PLAIN_RUN=alongside`, on two or more CPUs): two copies of a suite at once can
    /// disturb each other (fixed file names in the cwd, fixed ports), and it pays off only with
    /// an idle core (docs/performance.md "Tracer cost").
    pub plain_alongside: bool,
    /// Run the plain pre-run as a child the traced run forks once it has collected (the
    /// default where Python can fork), not as a process of its own: the interpreter's and
    /// pytest's start-up and the collection are paid once (docs/frontend-python.md "Plain
    /// pre-run"). `PROSECUTOR_PLAIN_RUN=serial` runs it as a process of its own, before.
    pub plain_fork: bool,
    /// Begin each trace with the import-time code of the modules under test (module and class
    /// bodies; docs/frontend-python.md "Import-time code"). Default: off, unless the environment
    /// has `PROSECUTOR_SETUP=1`.
    pub import_time: bool,
    /// Print progress lines on stderr (when it is a terminal).
    pub progress: bool,
    /// A dump in which every test passes is no error (a fixed version's dump, the reference of
    /// `explain --reference`).
    pub passing_ok: bool,
    /// The traced run writes a preview of its warm runner's command into the dump at start-up
    /// (`PROSECUTOR_SERVE_PREVIEW`), from which `localize` starts it early
    /// (`localize::cfx::early`).
    pub serve_preview: bool,
}

impl PythonTraceOptions {
    /// Options with the defaults: 10 s per test, 20 passing traces, 2,000,000 steps.
    pub fn new(src: impl Into<PathBuf>, out: impl Into<PathBuf>, command: Vec<String>) -> Self {
        PythonTraceOptions {
            src: src.into(),
            out: out.into(),
            command,
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            test_timeout: Duration::from_secs(10),
            test_timeout_given: false,
            max_passing: 20,
            step_cap: super::DEFAULT_STEP_CAP,
            test_globs: Vec::new(),
            plain_run: std::env::var("PROSECUTOR_PLAIN_RUN").map_or(true, |v| v.trim() != "0"),
            plain_alongside: std::env::var("PROSECUTOR_PLAIN_RUN")
                .is_ok_and(|v| v.trim() == "alongside")
                && std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2),
            plain_fork: cfg!(unix)
                && std::env::var("PROSECUTOR_PLAIN_RUN").map_or(true, |v| v.trim() != "serial"),
            import_time: std::env::var("PROSECUTOR_SETUP").is_ok_and(|v| v.trim() == "1"),
            progress: false,
            passing_ok: false,
            serve_preview: false,
        }
    }
}

/// What the plain pre-run measured.
#[derive(Debug, Clone)]
pub struct PlainRun {
    /// Tests it recorded (skipped ones included).
    pub tests: usize,
    /// Its wall time (the whole command).
    pub seconds: f64,
}

/// The plain pre-run's time limit per test. A limit the user gave is theirs: a test that runs
/// longer plainly hangs (it fails as a timeout), and each such test costs that limit here
/// (QuixBugs `bitcount`: 9 of them). The default limit is a guess: twice it, so that a slow
/// test the default would cut (issue 20 §7: 16.7 s against the default 10 s) is still
/// measured (0 = none, as for the tracer).
fn plain_timeout(o: &PythonTraceOptions) -> Duration {
    if o.test_timeout_given {
        o.test_timeout
    } else {
        o.test_timeout * 2
    }
}

/// Why tracing failed.
#[derive(thiserror::Error, Debug)]
pub enum FrontendError {
    #[error("no test command given: expected e.g. `prosecutor trace --src SRC --out DUMP -- pytest tests/`")]
    NoCommand,
    #[error("--src {0}: not a directory")]
    SrcNotDir(PathBuf),
    #[error("working directory {0}: not a directory")]
    CwdNotDir(PathBuf),
    #[error("--out {path}: {message}")]
    Out { path: PathBuf, message: String },
    #[error("cannot write the Python tracer package to {path}: {source}")]
    Cache {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot run `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    /// A file under SRC does not parse (`FILE:LINE: syntax error: ...`).
    #[error("{0}")]
    Syntax(String),
    #[error("the test command collected no tests (exit status {status}){detail}")]
    NoTests { status: String, detail: String },
    #[error("no failing test ({passing} passed): there is nothing to localize")]
    NoFailingTest { passing: usize },
    #[error(
        "the test command exited with status {status} before the tracer wrote the dump{detail}"
    )]
    CommandFailed { status: String, detail: String },
    #[error("the Python tracer failed: {0}")]
    Tracer(String),
    /// The test command's Python is older than the tracer supports (3.9 to 3.13).
    #[error("{0}")]
    UnsupportedPython(String),
}

/// The Pythons the tracer supports (docs/frontend-python.md "Supported Pythons").
pub const SUPPORTED_PYTHONS: &str = "3.9 to 3.13";

/// When the test command starts with a Python interpreter (`python3 -m pytest`,
/// `/usr/bin/python2.7 -m pytest`), its version, `(major, minor, patch)`; `None` for any other
/// command (`pytest`: the tracer package itself refuses an old Python, see
/// `prosecutor_tracer/__init__.py`) or when the interpreter cannot say.
pub fn interpreter_version(command: &[String]) -> Option<(u32, u32, u32)> {
    let prog = command.first()?;
    let name = Path::new(prog).file_name()?.to_str()?;
    if !name.starts_with("python") {
        return None;
    }
    // (parses on Python 2 too)
    let o = Command::new(prog)
        .args([
            "-c",
            "import sys; sys.stdout.write('%d.%d.%d' % tuple(sys.version_info[:3]))",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&o.stdout);
    let mut it = text.trim().split('.').map(|x| x.parse::<u32>().ok());
    Some((it.next()??, it.next()??, it.next()??))
}

/// The error for a test command whose Python is older than 3.9.
fn check_interpreter(command: &[String]) -> Result<(), FrontendError> {
    match interpreter_version(command) {
        Some((a, b, c)) if (a, b) < (3, 9) => Err(FrontendError::UnsupportedPython(format!(
            "Python {a}.{b}.{c} (`{}`) is not supported by the prosecutor tracer: it needs \
             Python {SUPPORTED_PYTHONS}; run the test command with a supported interpreter \
             (e.g. `python3.11 -m pytest ...`)",
            command[0]
        ))),
        _ => Ok(()),
    }
}

/// Runs the test command under the tracer and writes the dump to `opts.out`.
pub fn trace(opts: &PythonTraceOptions) -> Result<TraceSummary, FrontendError> {
    if opts.command.is_empty() {
        return Err(FrontendError::NoCommand);
    }
    let cwd = absolute(&opts.cwd);
    if !cwd.is_dir() {
        return Err(FrontendError::CwdNotDir(opts.cwd.clone()));
    }
    let src = if opts.src.is_absolute() {
        opts.src.clone()
    } else {
        absolute(&opts.src)
    };
    if !src.is_dir() {
        return Err(FrontendError::SrcNotDir(opts.src.clone()));
    }
    let out = absolute(&opts.out);
    if out.exists() && !out.is_dir() {
        return Err(FrontendError::Out {
            path: opts.out.clone(),
            message: "exists and is not a directory".into(),
        });
    }
    std::fs::create_dir_all(&out).map_err(|e| FrontendError::Out {
        path: opts.out.clone(),
        message: format!("cannot create: {e}"),
    })?;
    let status_path = out.join(".prosecutor-status.json");
    let _ = std::fs::remove_file(&status_path);
    let pkg = install_package()?;

    let plain_path = out.join(".prosecutor-plain.json");
    let _ = std::fs::remove_file(&plain_path);
    let mut env: Vec<(&str, OsString)> = vec![("PROSECUTOR_MODE", "trace".into())];
    // the warm runner's preview: from the plain run when it comes first (the server then starts
    // while the plain run runs), else from the traced run
    let preview_from_plain = opts.serve_preview && opts.plain_run && !opts.plain_alongside;
    if opts.serve_preview && !preview_from_plain {
        env.push(("PROSECUTOR_SERVE_PREVIEW", "1".into()));
    }
    let mut plain_run = None;
    if opts.plain_run && opts.plain_alongside {
        return trace_with_plain_alongside(opts, &cwd, &src, &out, &pkg, &status_path, &plain_path);
    }
    if opts.plain_run && opts.plain_fork {
        return trace_with_plain_fork(opts, &cwd, &src, &out, &pkg, &status_path, &plain_path);
    }
    // the plain run's child analyses the files meanwhile, the traced run reads its results
    // (docs/frontend-python.md "Static cache"); removed once the traced run is done
    let cache = out.join(".prosecutor-static");
    let _ = std::fs::remove_dir_all(&cache);
    if opts.plain_run {
        env.push(("PROSECUTOR_STATIC_CACHE", cache.clone().into_os_string()));
        if opts.progress {
            crate::progress::note(false, "plain run: the test command without tracing ...");
        }
        let mut extra = vec![("PROSECUTOR_STATIC_CACHE", cache.clone().into_os_string())];
        if preview_from_plain {
            extra.push(("PROSECUTOR_SERVE_PREVIEW", "1".into()));
        }
        match run_plain_with(
            opts,
            &cwd,
            &src,
            &out,
            &pkg,
            &status_path,
            &plain_path,
            &extra,
        )? {
            Ok(p) => {
                if opts.progress {
                    crate::progress::note(
                        false,
                        &format!("plain run: {} tests in {:.1} s", p.tests, p.seconds),
                    );
                }
                env.push(("PROSECUTOR_PLAIN", plain_path.clone().into_os_string()));
                env.push(("PROSECUTOR_PLAIN_WALL", format!("{:.3}", p.seconds).into()));
                plain_run = Some(p);
            }
            Err(why) => env.push(("PROSECUTOR_PLAIN_ERROR", why.into())),
        }
    }
    let output = run_command(opts, &cwd, &src, &out, &pkg, &status_path, &env);
    let _ = std::fs::remove_file(&plain_path);
    let _ = std::fs::remove_dir_all(&cache);
    too_old_or(
        opts,
        finish(output?, out, &status_path, plain_run, opts.passing_ok),
    )
}

/// The plain pre-run forked from the traced run once it has collected
/// (`PROSECUTOR_PLAIN_FORK`): the child runs every collected test without tracing and writes
/// `plain_path`, which the traced run reads before its first test (docs/frontend-python.md
/// "Plain pre-run"). The warm runner's preview comes from the traced run as it forks the child.
fn trace_with_plain_fork(
    opts: &PythonTraceOptions,
    cwd: &Path,
    src: &Path,
    out: &Path,
    pkg: &Path,
    status_path: &Path,
    plain_path: &Path,
) -> Result<TraceSummary, FrontendError> {
    let mut env: Vec<(&str, OsString)> = vec![
        ("PROSECUTOR_MODE", "trace".into()),
        ("PROSECUTOR_PLAIN_FORK", "1".into()),
        ("PROSECUTOR_PLAIN_OUT", plain_path.as_os_str().to_owned()),
        (
            "PROSECUTOR_PLAIN_TIMEOUT",
            format!("{}", plain_timeout(opts).as_secs_f64()).into(),
        ),
    ];
    if opts.serve_preview {
        env.push(("PROSECUTOR_SERVE_PREVIEW", "fork".into()));
    }
    let output = run_command(opts, cwd, src, out, pkg, status_path, &env);
    let plain_run = read_plain(plain_path, "").ok();
    let _ = std::fs::remove_file(plain_path);
    if let (true, Some(p)) = (opts.progress, &plain_run) {
        crate::progress::note(
            false,
            &format!(
                "plain run (forked after collection): {} tests in {:.1} s",
                p.tests, p.seconds
            ),
        );
    }
    too_old_or(
        opts,
        finish(
            output?,
            out.to_path_buf(),
            status_path,
            plain_run,
            opts.passing_ok,
        ),
    )
}

/// A test command that ended without a dump may have run a Python older than the tracer
/// supports, which then could not even load the plugin (its pytest failing first): asked only
/// then, since asking costs an interpreter start on every run.
fn too_old_or(
    opts: &PythonTraceOptions,
    r: Result<TraceSummary, FrontendError>,
) -> Result<TraceSummary, FrontendError> {
    match r {
        Err(e @ (FrontendError::CommandFailed { .. } | FrontendError::NoTests { .. })) => {
            check_interpreter(&opts.command)?;
            Err(e)
        }
        r => r,
    }
}

/// The plain pre-run alongside the traced run: both processes start at once. The plain run
/// appends each test's result to a stream file as soon as the test is done
/// (`PROSECUTOR_PLAIN_STREAM`); the traced run gives a test whose plain result is not known yet
/// the base time limit first and, when that runs out, waits for the result and extends the limit
/// to what it would have been (session.py `_alarm`); before writing the dump it waits for the
/// marker this thread writes when the plain run has ended (`PROSECUTOR_PLAIN_DONE`: its wall
/// time, or why it gave no results), then compares outcomes as after a plain run before.
fn trace_with_plain_alongside(
    opts: &PythonTraceOptions,
    cwd: &Path,
    src: &Path,
    out: &Path,
    pkg: &Path,
    status_path: &Path,
    plain_path: &Path,
) -> Result<TraceSummary, FrontendError> {
    let stream_path = out.join(".prosecutor-plain.stream");
    let done_path = out.join(".prosecutor-plain.done");
    for p in [&stream_path, &done_path] {
        let _ = std::fs::remove_file(p);
    }
    if opts.progress {
        crate::progress::note(
            false,
            "plain run: the test command without tracing, alongside the traced run ...",
        );
    }
    let env: Vec<(&str, OsString)> = vec![
        ("PROSECUTOR_MODE", "trace".into()),
        ("PROSECUTOR_PLAIN", plain_path.as_os_str().to_owned()),
        (
            "PROSECUTOR_PLAIN_STREAM",
            stream_path.as_os_str().to_owned(),
        ),
        ("PROSECUTOR_PLAIN_DONE", done_path.as_os_str().to_owned()),
    ];
    let (plain, output) = std::thread::scope(|s| {
        let plain = s.spawn(|| {
            let extra = [(
                "PROSECUTOR_PLAIN_STREAM",
                stream_path.as_os_str().to_owned(),
            )];
            let r = run_plain_with(opts, cwd, src, out, pkg, status_path, plain_path, &extra);
            let marker = match &r {
                Ok(Ok(p)) => {
                    serde_json::json!({"ok": true, "seconds": p.seconds, "tests": p.tests})
                }
                Ok(Err(why)) => serde_json::json!({"ok": false, "error": why}),
                Err(e) => serde_json::json!({"ok": false, "error": e.to_string()}),
            };
            // written whole, then renamed: the traced run never reads half a marker
            let tmp = done_path.with_extension("done.tmp");
            let _ = std::fs::write(&tmp, marker.to_string())
                .and_then(|()| std::fs::rename(&tmp, &done_path));
            r
        });
        let output = run_command(opts, cwd, src, out, pkg, status_path, &env);
        (plain.join(), output)
    });
    for p in [plain_path, stream_path.as_path(), done_path.as_path()] {
        let _ = std::fs::remove_file(p);
    }
    let plain = match plain {
        Ok(r) => r?,
        Err(_) => Err("the thread running it panicked".to_string()),
    };
    let plain_run = match plain {
        Ok(p) => {
            if opts.progress {
                crate::progress::note(
                    false,
                    &format!("plain run: {} tests in {:.1} s", p.tests, p.seconds),
                );
            }
            Some(p)
        }
        Err(_) => None,
    };
    too_old_or(
        opts,
        finish(output?, out.to_path_buf(), status_path, plain_run, false),
    )
}

/// The traced run's result: its status file, read into a summary (or the error it reports).
fn finish(
    output: Output,
    out: PathBuf,
    status_path: &Path,
    plain_run: Option<PlainRun>,
    passing_ok: bool,
) -> Result<TraceSummary, FrontendError> {
    let status = match output.status.code() {
        Some(c) => c.to_string(),
        None => "killed by a signal".to_string(),
    };
    let detail = tail_of(&output);
    let text = match std::fs::read_to_string(status_path) {
        Ok(t) => t,
        Err(_) => {
            return Err(if output.status.code() == Some(5) {
                FrontendError::NoTests { status, detail }
            } else {
                FrontendError::CommandFailed { status, detail }
            })
        }
    };
    let _ = std::fs::remove_file(status_path);
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| FrontendError::Tracer(format!("unreadable status file: {e}")))?;
    let warnings: Vec<String> = v["warnings"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if v["ok"].as_bool() != Some(true) {
        let msg = v["error"].as_str().unwrap_or("unknown error").to_owned();
        return Err(if v["kind"].as_str() == Some("syntax") {
            FrontendError::Syntax(msg)
        } else if v["kind"].as_str() == Some("python_version") {
            FrontendError::UnsupportedPython(msg)
        } else {
            FrontendError::Tracer(msg)
        });
    }
    let count = |k: &str| v[k].as_u64().unwrap_or(0) as usize;
    let (failing, passing, tests) = (count("failing"), count("passing"), count("tests"));
    if tests == 0 {
        return Err(FrontendError::NoTests { status, detail });
    }
    if failing == 0 && !passing_ok {
        return Err(FrontendError::NoFailingTest { passing });
    }
    Ok(TraceSummary {
        dump: out,
        failing,
        passing,
        traced: count("traced"),
        untraced: count("untraced"),
        warnings,
        plain_run,
    })
}

/// The plain pre-run: the test command once without tracing (`PROSECUTOR_MODE=plain`, same cwd
/// and environment as the traced run), which writes each test's outcome and duration to
/// `plain_path`. `Ok(Err(why))`: it gave no usable results (the traced run goes on without them
/// and warns); `Err`: the command cannot be started at all. `extra`: more environment variables for it.
#[allow(clippy::too_many_arguments)]
fn run_plain_with(
    opts: &PythonTraceOptions,
    cwd: &Path,
    src: &Path,
    out: &Path,
    pkg: &Path,
    status_path: &Path,
    plain_path: &Path,
    extra: &[(&str, OsString)],
) -> Result<Result<PlainRun, String>, FrontendError> {
    let mut env: Vec<(&str, OsString)> = vec![
        ("PROSECUTOR_MODE", "plain".into()),
        ("PROSECUTOR_PLAIN_OUT", plain_path.as_os_str().to_owned()),
        (
            "PROSECUTOR_PLAIN_TIMEOUT",
            format!("{}", plain_timeout(opts).as_secs_f64()).into(),
        ),
    ];
    env.extend(extra.iter().cloned());
    let start = Instant::now();
    let output = run_command(opts, cwd, src, out, pkg, status_path, &env)?;
    let seconds = start.elapsed().as_secs_f64();
    let status = match output.status.code() {
        Some(c) => format!("exit status {c}"),
        None => "killed by a signal".to_string(),
    };
    if !plain_path.exists() {
        let tail = tail_of(&output);
        let last: Vec<&str> = tail.lines().rev().take(3).collect();
        let last: Vec<&str> = last.into_iter().rev().map(str::trim).collect();
        return Ok(Err(format!(
            "it wrote no results ({status}){}",
            if last.is_empty() {
                String::new()
            } else {
                format!(": {}", last.join(" | "))
            }
        )));
    }
    Ok(
        read_plain(plain_path, &format!(" ({status})")).map(|tests| PlainRun {
            tests: tests.tests,
            seconds,
        }),
    )
}

/// The results a plain run wrote to `plain_path` (`seconds`: its `wall_s`); `Err(why)` when
/// they are missing, do not parse or hold no test (`status`: appended to the last).
fn read_plain(plain_path: &Path, status: &str) -> Result<PlainRun, String> {
    let text =
        std::fs::read_to_string(plain_path).map_err(|e| format!("it wrote no results: {e}"))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("its results do not parse: {e}"))?;
    let tests = v["tests"].as_object().map_or(0, |t| t.len());
    if tests == 0 {
        return Err(format!("it recorded no test{status}"));
    }
    Ok(PlainRun {
        tests,
        seconds: v["wall_s"].as_f64().unwrap_or(0.0),
    })
}

fn run_command(
    opts: &PythonTraceOptions,
    cwd: &Path,
    src: &Path,
    out: &Path,
    pkg: &Path,
    status_path: &Path,
    env: &[(&str, OsString)],
) -> Result<Output, FrontendError> {
    let build = |argv: &[String]| {
        let mut c = Command::new(&argv[0]);
        c.args(&argv[1..]).current_dir(cwd);
        let mut pythonpath = OsString::from(pkg.as_os_str());
        if let Some(old) = std::env::var_os("PYTHONPATH").filter(|s| !s.is_empty()) {
            pythonpath.push(if cfg!(windows) { ";" } else { ":" });
            pythonpath.push(old);
        }
        let addopts = match std::env::var("PYTEST_ADDOPTS") {
            Ok(old) if !old.trim().is_empty() => format!("{old} -p prosecutor_tracer.plugin"),
            _ => "-p prosecutor_tracer.plugin".to_string(),
        };
        for k in [
            "PROSECUTOR_PLAIN",
            "PROSECUTOR_PLAIN_OUT",
            "PROSECUTOR_PLAIN_WALL",
            "PROSECUTOR_PLAIN_ERROR",
            "PROSECUTOR_PLAIN_TIMEOUT",
            "PROSECUTOR_PLAIN_STREAM",
            "PROSECUTOR_PLAIN_DONE",
            "PROSECUTOR_SERVE_PREVIEW",
            "PROSECUTOR_STATIC_CACHE",
            "PROSECUTOR_PLAIN_FORK",
        ] {
            c.env_remove(k);
        }
        c.env("PYTHONPATH", pythonpath)
            .env("PYTEST_ADDOPTS", addopts)
            .env("PROSECUTOR_SRC", src)
            .env("PROSECUTOR_OUT", out)
            .env("PROSECUTOR_STATUS", status_path)
            .env(
                "PROSECUTOR_TEST_TIMEOUT",
                format!("{}", opts.test_timeout.as_secs_f64()),
            )
            .env("PROSECUTOR_MAX_PASSING", opts.max_passing.to_string())
            .env("PROSECUTOR_SETUP", if opts.import_time { "1" } else { "0" })
            .env("PROSECUTOR_STEP_CAP", opts.step_cap.to_string())
            .env(
                "PROSECUTOR_TEST_GLOBS",
                serde_json::to_string(&opts.test_globs).unwrap_or_default(),
            )
            .env(
                "PROSECUTOR_COMMAND",
                serde_json::to_string(argv).unwrap_or_default(),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if std::env::var_os("PYTHONHASHSEED").is_none() {
            // the flip runs must see the same hash order as the traced run
            c.env("PYTHONHASHSEED", "0");
        }
        for (k, v) in env {
            c.env(k, v);
        }
        c
    };
    let label = progress_label(opts, env);
    let progress = out.join(".prosecutor-progress");
    let run = |mut c: Command| match label {
        Some(what) => output_with_progress(&mut c, what, &progress),
        None => c.output(),
    };
    match run(build(&opts.command)) {
        Ok(o) => Ok(o),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && opts.command[0] == "pytest" => {
            // `pytest` is not on PATH: run it as a module of python3
            let mut argv = vec!["python3".to_string(), "-m".into(), "pytest".into()];
            argv.extend(opts.command[1..].iter().cloned());
            run(build(&argv)).map_err(|e| FrontendError::Spawn {
                program: "pytest (nor python3 -m pytest)".into(),
                source: e,
            })
        }
        Err(e) => Err(FrontendError::Spawn {
            program: opts.command[0].clone(),
            source: e,
        }),
    }
}

/// What the progress bar of a run of the test command says, if it gets one: only with
/// `opts.progress` and stderr on a terminal, and not for the plain run alongside the traced
/// run (two bars at once would garble each other; the traced run's is the one that matters).
fn progress_label(opts: &PythonTraceOptions, env: &[(&str, OsString)]) -> Option<&'static str> {
    use std::io::IsTerminal;
    if !opts.progress || !std::io::stderr().is_terminal() {
        return None;
    }
    let plain = env
        .iter()
        .any(|(k, v)| *k == "PROSECUTOR_MODE" && v.to_str() == Some("plain"));
    let alongside = env.iter().any(|(k, _)| *k == "PROSECUTOR_PLAIN_STREAM");
    match (plain, alongside) {
        (true, true) => None,
        (true, false) => Some("plain run"),
        (false, _) => Some("tracing"),
    }
}

/// Runs `c` to its end as `Command::output` does, drawing a bar of the tests done while it
/// runs: the plugin rewrites `progress` (`DONE TOTAL FAILED`) as tests finish
/// (PROSECUTOR_PROGRESS), and this polls it ten times a second.
fn output_with_progress(c: &mut Command, what: &str, progress: &Path) -> std::io::Result<Output> {
    let _ = std::fs::remove_file(progress);
    let child = c.env("PROSECUTOR_PROGRESS", progress).spawn()?;
    let bar = crate::progress::bar(0, what);
    let done = std::sync::atomic::AtomicBool::new(false);
    let output = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some((n, total, failed)) = read_progress(progress) {
                    bar.set_length(total.max(n));
                    bar.set_position(n);
                    bar.set_message(format!("{what} ({failed} failed)"));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let output = child.wait_with_output();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        output
    });
    bar.finish_and_clear();
    let _ = std::fs::remove_file(progress);
    output
}

/// `DONE TOTAL FAILED` from the progress file, if it holds a whole line.
fn read_progress(path: &Path) -> Option<(u64, u64, u64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut it = text.trim_end().split(' ').map(|x| x.parse::<u64>().ok());
    match (it.next()??, it.next()??, it.next()??) {
        (n, total, failed) if it.next().is_none() && text.ends_with('\n') => {
            Some((n, total, failed))
        }
        _ => None,
    }
}

/// The last lines of the command's output, for error messages.
fn tail_of(o: &Output) -> String {
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let start = lines.len().saturating_sub(12);
    format!(":\n  {}", lines[start..].join("\n  "))
}

/// Writes the embedded package into the cache (`cache::root("python")/<hash>`, once per content
/// hash); returns the directory to put on PYTHONPATH.
pub fn install_package() -> Result<PathBuf, FrontendError> {
    let err = |path: &Path, source| FrontendError::Cache {
        path: path.to_path_buf(),
        source,
    };
    cache::install(
        &cache::root("python"),
        &cache::Hash::default().files(PACKAGE).hex(),
        |d| cache::has_files(d, PACKAGE),
        |d| cache::write_files(d, PACKAGE).map_err(|(p, e)| err(&p, e)),
        err,
    )
}

/// Whether `python3 -c 'import pytest'` succeeds (the tests of the Python front-end need it).
pub fn pytest_available() -> bool {
    Command::new("python3")
        .args(["-c", "import pytest"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Every module of the tracer package is embedded in the binary (a missing one makes the
    /// extracted package fail at the first import of it, or quietly lose a feature).
    #[test]
    fn every_tracer_module_is_embedded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("frontends/python/prosecutor_tracer");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if name.ends_with(".py") {
                let rel = format!("prosecutor_tracer/{name}");
                assert!(
                    PACKAGE.iter().any(|(p, _)| *p == rel),
                    "{rel} is not in PACKAGE"
                );
            }
        }
    }

    /// The Python front-end tests need python3 with pytest: without it they fail, saying so.
    fn require_pytest() {
        assert!(
            pytest_available(),
            "python3 with pytest is required by this test: `python3 -c 'import pytest'` fails \
             (install it with `python3 -m pip install pytest`, as .ci/run does)"
        );
    }

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn facts(dump: &Path, name: &str) -> Vec<Vec<String>> {
        std::fs::read_to_string(dump.join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.split('\t').map(str::to_owned).collect())
            .collect()
    }

    const LIB: &str = r#"def mean(xs, scale=1):
    total = 0
    for x in xs:
        if x < 0:
            raise ValueError("negative")
        total += x
    return total * scale / len(xs)


def describe(xs):
    k = 2
    m = mean(scale=k, xs=xs)
    return "big" if m > 10 else "small"
"#;

    const TESTS: &str = r#"import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from stats import mean, describe


def test_mean():
    assert mean([2, 4]) == 3


def test_describe():
    assert describe([1, 2]) == "big"


def test_negative():
    assert mean([1, -1]) == 0
"#;

    fn project() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "src/stats.py", LIB);
        write(d.path(), "tests/test_stats.py", TESTS);
        d
    }

    fn opts(d: &Path) -> PythonTraceOptions {
        let mut o = PythonTraceOptions::new(
            d.join("src"),
            d.join("dump"),
            vec![
                "python3".into(),
                "-m".into(),
                "pytest".into(),
                "-q".into(),
                "-p".into(),
                "no:cacheprovider".into(),
                "tests".into(),
            ],
        );
        o.cwd = d.to_path_buf();
        o
    }

    #[test]
    fn traces_a_small_project() {
        require_pytest();
        let d = project();
        let s = trace(&opts(d.path())).expect("trace");
        assert_eq!((s.failing, s.passing), (2, 1));
        assert_eq!(s.traced, 3);
        let dump = s.dump;
        for f in [
            "manifest.toml",
            "stmt.facts",
            "method.facts",
            "def.facts",
            "use.facts",
            "cfg.facts",
            "formal.facts",
            "this_formal.facts",
            "actual.facts",
            "receiver.facts",
            "loop_head.facts",
            "frame.facts",
            "step.facts",
            "branch.facts",
            "bind.facts",
            "coverage.facts",
            "edge_coverage.facts",
        ] {
            assert!(dump.join(f).is_file(), "{f} missing");
        }
        let manifest: toml::Value =
            toml::from_str(&std::fs::read_to_string(dump.join("manifest.toml")).unwrap()).unwrap();
        assert_eq!(manifest["format"].as_str(), Some("prosecutor-dump"));
        let rerun = manifest["rerun"]["command"].as_array().unwrap();
        assert!(rerun
            .iter()
            .any(|x| x.as_str() == Some("prosecutor_tracer.flip")));
        let tests = manifest["test"].as_array().unwrap();
        let by_id: HashMap<&str, &toml::Value> = tests
            .iter()
            .map(|t| (t["id"].as_str().unwrap(), t))
            .collect();
        let stmts: HashMap<String, Vec<String>> = facts(&dump, "stmt.facts")
            .into_iter()
            .map(|r| (r[0].clone(), r))
            .collect();
        let steps = facts(&dump, "step.facts");
        let step_of = |trace: &str, i: i64| -> String {
            steps
                .iter()
                .find(|r| r[0] == trace && r[1] == i.to_string())
                .map(|r| r[2].clone())
                .unwrap()
        };
        // the assertion failure: the failing assert of the test
        let t = by_id["tests/test_stats.py::test_describe"];
        assert_eq!(t["outcome"].as_str(), Some("fail"));
        assert_eq!(t["failure_kind"].as_str(), Some("assertion"));
        let tr = t["trace"].as_str().unwrap();
        let fs = step_of(tr, t["failure_step"].as_integer().unwrap());
        assert_eq!(stmts[&fs][3], "tests/test_stats.py");
        assert!(
            stmts[&fs][5].starts_with("assert describe"),
            "{:?}",
            stmts[&fs]
        );
        // the exception: the raise statement in the app code
        let t = by_id["tests/test_stats.py::test_negative"];
        assert_eq!(t["failure_kind"].as_str(), Some("exception"));
        let tr2 = t["trace"].as_str().unwrap();
        let fs = step_of(tr2, t["failure_step"].as_integer().unwrap());
        assert_eq!(stmts[&fs][2], "throw");
        assert_eq!(stmts[&fs][3], "stats.py");
        assert_eq!(stmts[&fs][4], "5");
        // branch outcomes: the `if x < 0` of test_negative is 0 then 1
        let branches = facts(&dump, "branch.facts");
        let if_stmt = "stats.py:4:8";
        let outcomes: Vec<&str> = steps
            .iter()
            .filter(|r| r[0] == tr2 && r[2] == if_stmt)
            .map(|r| {
                branches
                    .iter()
                    .find(|b| b[0] == tr2 && b[1] == r[1])
                    .map(|b| b[2].as_str())
                    .expect("branch step without outcome")
            })
            .collect();
        assert_eq!(outcomes, ["0", "1"]);
        // every branch step has an outcome
        for r in &steps {
            if stmts[&r[2]][2] == "branch" {
                assert!(branches.iter().any(|b| b[0] == r[0] && b[1] == r[1]));
            }
        }
        // the keyword arguments of describe's call `mean(scale=k, xs=xs)` are bound at run time
        let binds = facts(&dump, "bind.facts");
        for (formal, actual) in [("xs", "xs"), ("scale", "k")] {
            assert!(
                binds
                    .iter()
                    .any(|b| b[0] == tr && b[3] == formal && b[4] == actual),
                "{formal} <- {actual} missing: {binds:?}"
            );
        }
        let frames = facts(&dump, "frame.facts");
        assert!(frames
            .iter()
            .any(|f| f[0] == tr && f[2] == "stats.py::mean" && f[3] != "-"));
        // loop head and CFG
        assert!(facts(&dump, "loop_head.facts")
            .iter()
            .any(|r| r[0] == "stats.py:3:4"));
        let cfg = facts(&dump, "cfg.facts");
        assert!(cfg
            .iter()
            .any(|e| e[0] == "stats.py:4:8" && e[1] == "stats.py:5:12"));
        // DEF/USE
        let defs = facts(&dump, "def.facts");
        assert!(defs
            .iter()
            .any(|r| r[0] == "stats.py:6:8" && r[1] == "total"));
        let uses = facts(&dump, "use.facts");
        assert!(uses.iter().any(|r| r[0] == "stats.py:6:8" && r[1] == "x"));
        // coverage of every test, including the untraced-or-not passing one
        let cov = facts(&dump, "coverage.facts");
        assert!(cov
            .iter()
            .any(|r| r[0] == "tests/test_stats.py::test_mean" && r[1] == "stats.py:7:4"));
        // the conditional expression is a flippable pseudo-statement
        assert!(stmts
            .keys()
            .any(|k| k.starts_with("stats.py:13:") && k.ends_with(":if")));
        // nothing written into the project
        assert!(!d.path().join("src/__pycache__").exists());
    }

    #[test]
    fn flip_runner_inverts_one_branch() {
        require_pytest();
        let d = project();
        let s = trace(&opts(d.path())).expect("trace");
        let manifest: toml::Value =
            toml::from_str(&std::fs::read_to_string(s.dump.join("manifest.toml")).unwrap())
                .unwrap();
        let rerun = &manifest["rerun"];
        let out = d.path().join("flip.json");
        let argv: Vec<String> = rerun["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                x.as_str()
                    .unwrap()
                    .replace("{test}", "tests/test_stats.py::test_negative")
                    .replace("{stmt}", "stats.py:4:8")
                    .replace("{occurrence}", "2")
                    .replace("{out}", out.to_str().unwrap())
                    .replace("{dump}", s.dump.to_str().unwrap())
            })
            .collect();
        let mut c = Command::new(&argv[0]);
        c.args(&argv[1..])
            .current_dir(rerun["cwd"].as_str().unwrap());
        for (k, v) in rerun["env"].as_table().unwrap() {
            c.env(k, v.as_str().unwrap());
        }
        let st = c.status().unwrap();
        assert!(st.success());
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        // with the negative element not rejected, mean([1, -1]) == 0 holds: the test passes
        assert_eq!(v["flipped"], serde_json::json!(true), "{v}");
        assert_eq!(v["outcome"], serde_json::json!("pass"), "{v}");
    }

    /// A file under SRC that does not compile and that no test imports (test data, another
    /// Python's syntax) is left out with a warning naming file and line; the trace goes on.
    #[test]
    fn syntax_error_names_file_and_line() {
        require_pytest();
        let d = project();
        write(d.path(), "src/broken.py", "def f(:\n    pass\n");
        let s = trace(&opts(d.path())).expect("the trace goes on");
        assert!(
            s.warnings
                .iter()
                .any(|w| w.contains("broken.py:1: syntax error") && w.contains("left out")),
            "{:?}",
            s.warnings
        );
        assert!(s.failing > 0);
    }

    #[test]
    fn no_failing_test_is_an_error() {
        require_pytest();
        let d = project();
        write(
            d.path(),
            "tests/test_stats.py",
            "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'src'))\nfrom stats import mean\n\ndef test_ok():\n    assert mean([1]) == 1\n",
        );
        match trace(&opts(d.path())) {
            Err(FrontendError::NoFailingTest { passing: 1 }) => {}
            other => panic!("expected NoFailingTest, got {other:?}"),
        }
        let mut o = opts(d.path());
        o.command.push("-k".into());
        o.command.push("nothing_matches".into());
        match trace(&o) {
            Err(FrontendError::NoTests { .. }) => {}
            other => panic!("expected NoTests, got {other:?}"),
        }
    }

    fn manifest(dump: &Path) -> toml::Value {
        toml::from_str(&std::fs::read_to_string(dump.join("manifest.toml")).unwrap()).unwrap()
    }

    fn test_entry<'a>(m: &'a toml::Value, name: &str) -> Option<&'a toml::Value> {
        m["test"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"].as_str().unwrap().ends_with(&format!("::{name}")))
    }

    /// The one warning of `s` about tests that fail only under tracing.
    fn tracing_changed_warning(s: &TraceSummary) -> &str {
        let w: Vec<&String> = s
            .warnings
            .iter()
            .filter(|w| w.contains("fail only under tracing"))
            .collect();
        assert_eq!(w.len(), 1, "{:?}", s.warnings);
        w[0]
    }

    /// The plain pre-run: a test that passes plainly but fails under tracing is left out of the
    /// dump (no entry, no coverage) and named in the warnings; the genuine failures stay.
    #[test]
    fn plain_run_leaves_out_tests_that_fail_only_under_tracing() {
        require_pytest();
        let d = project();
        let tests =
            format!("{TESTS}\n\ndef test_untraced_only():\n    assert sys.gettrace() is None\n");
        write(d.path(), "tests/test_stats.py", &tests);
        let s = trace(&opts(d.path())).expect("trace");
        let p = s.plain_run.as_ref().expect("the plain run ran");
        assert_eq!(p.tests, 4);
        assert_eq!((s.failing, s.passing), (2, 1));
        let w = tracing_changed_warning(&s);
        assert!(
            w.starts_with("1 test(s) fail only under tracing and are left out")
                && w.contains("test_untraced_only"),
            "{w}"
        );
        let m = manifest(&s.dump);
        assert!(test_entry(&m, "test_untraced_only").is_none());
        assert_eq!(
            test_entry(&m, "test_describe").unwrap()["outcome"].as_str(),
            Some("fail")
        );
        assert!(!facts(&s.dump, "coverage.facts")
            .iter()
            .any(|r| r[0].ends_with("test_untraced_only")));
        let notes = &m["notes"];
        assert_eq!(notes["plain_run"].as_bool(), Some(true));
        assert!(notes["plain_run_s"].as_float().unwrap() > 0.0);
        assert_eq!(
            notes["tracing_changed"].as_array().unwrap()[0].as_str(),
            Some("tests/test_stats.py::test_untraced_only")
        );
        assert!(!s.dump.join(".prosecutor-plain.json").exists());
        // without it, the test is a failing test of the dump
        let mut o = opts(d.path());
        o.plain_run = false;
        let s = trace(&o).expect("trace");
        assert!(s.plain_run.is_none());
        assert_eq!(s.failing, 3);
        assert_eq!(
            manifest(&s.dump)["notes"]["plain_run"].as_bool(),
            Some(false)
        );
    }

    /// A test that fails on what its first run left behind (here a file it creates next to
    /// itself; BugsInPy `luigi-13` leaves files in /tmp) passes in the plain run and fails in the
    /// traced run after it: it is left out as changed by tracing, and the warning says that
    /// such a test looks the same. In every later `trace` both runs fail it, and it is kept.
    #[test]
    fn plain_run_leaves_out_a_test_that_fails_on_its_own_leftovers() {
        require_pytest();
        let d = project();
        let tests = format!(
            "{TESTS}\n\ndef test_leaves_a_file():\n    import pathlib\n    \
             marker = pathlib.Path(__file__).with_name('leftover.txt')\n    \
             assert not marker.exists()\n    marker.write_text('x')\n"
        );
        write(d.path(), "tests/test_stats.py", &tests);
        let s = trace(&opts(d.path())).expect("trace");
        assert_eq!((s.failing, s.passing), (2, 1));
        let w = tracing_changed_warning(&s);
        assert!(
            w.contains("test_leaves_a_file") && w.contains("state it left behind"),
            "{w}"
        );
        assert!(test_entry(&manifest(&s.dump), "test_leaves_a_file").is_none());
        // the file is there now: the plain run fails the test too, and it is a failing test
        let s = trace(&opts(d.path())).expect("trace");
        assert_eq!((s.failing, s.passing), (3, 1));
        let m = manifest(&s.dump);
        assert_eq!(
            test_entry(&m, "test_leaves_a_file").unwrap()["outcome"].as_str(),
            Some("fail")
        );
        assert!(m["notes"]["tracing_changed"].as_array().unwrap().is_empty());
    }

    /// A failing test slower than the time limit in a plain run gets a limit from its plain
    /// duration: it fails at its assertion, not where the tracer would have cut it.
    #[test]
    fn plain_run_lets_a_slow_failing_test_reach_its_failure() {
        require_pytest();
        let d = project();
        let tests = TESTS.replace(
            "def test_describe():\n",
            "def test_describe():\n    import time\n    time.sleep(0.6)\n",
        );
        write(d.path(), "tests/test_stats.py", &tests);
        let mut o = opts(d.path());
        o.test_timeout = Duration::from_millis(500);
        // the plain run before the traced run, and alongside it (the traced run reaches the
        // base limit first, waits for the plain result and goes on to the raised limit)
        for alongside in [false, true] {
            o.plain_alongside = alongside;
            let s = trace(&o).expect("trace");
            let m = manifest(&s.dump);
            let t = test_entry(&m, "test_describe").unwrap();
            assert_eq!(t["failure_kind"].as_str(), Some("assertion"), "{t:?}");
            assert!(s.plain_run.is_some());
            for f in [
                ".prosecutor-plain.json",
                ".prosecutor-plain.stream",
                ".prosecutor-plain.done",
            ] {
                assert!(!s.dump.join(f).exists(), "{f} left in the dump");
            }
        }
        o.plain_run = false;
        let s = trace(&o).expect("trace");
        let m = manifest(&s.dump);
        let t = test_entry(&m, "test_describe").unwrap();
        assert_eq!(t["failure_kind"].as_str(), Some("timeout"), "{t:?}");
    }

    /// A plain run that writes nothing (it crashes) is a warning; the trace goes on without it.
    /// Serial: the plain run is a process of its own, which exits while pytest starts.
    #[test]
    fn a_failed_plain_run_is_a_warning() {
        require_pytest();
        let (_d, s) = trace_with_conftest(
            "import os\nif os.environ.get('PROSECUTOR_MODE') == 'plain':\n    os._exit(3)\n",
            false,
        );
        failed_plain_run_warned(&s);
    }

    /// The same with the plain pass forked from the traced run (the default): its child (not the
    /// process that imported the conftest) ends in the first test it sets up.
    #[test]
    fn a_failed_forked_plain_run_is_a_warning() {
        require_pytest();
        let (_d, s) = trace_with_conftest(
            "import os, pytest\nPID = os.getpid()\n@pytest.fixture(autouse=True)\ndef crash():\n    \
             if os.getpid() != PID:\n        os._exit(3)\n    yield\n",
            true,
        );
        failed_plain_run_warned(&s);
        assert!(s
            .warnings
            .iter()
            .any(|w| w.contains("forked after collection")));
    }

    /// Where a conftest left a thread running, a forked child would lack it: the traced run
    /// runs the plain pass as a process of its own instead, with the same results.
    #[test]
    fn with_threads_the_plain_pass_is_not_forked() {
        require_pytest();
        let (d, s) = trace_with_conftest(
            "import threading, time\nthreading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n",
            true,
        );
        assert_eq!(
            s.plain_run.as_ref().map(|p| p.tests),
            Some(3),
            "{:?}",
            s.warnings
        );
        assert_eq!((s.failing, s.passing), (2, 1));
        let m = manifest(&s.dump);
        assert_eq!(m["notes"]["plain_run"].as_bool(), Some(true));
        assert!(m["notes"].get("plain_run_forked").is_none());
        let mut o = opts(d.path());
        o.plain_fork = true;
        std::fs::remove_file(d.path().join("tests/conftest.py")).unwrap();
        let s = trace(&o).expect("trace");
        let m = manifest(&s.dump);
        assert_eq!(m["notes"]["plain_run_forked"].as_bool(), Some(true));
    }

    /// The test project with `conftest` as its tests/conftest.py, traced with the plain pass
    /// forked (`fork`) or a process of its own.
    fn trace_with_conftest(conftest: &str, fork: bool) -> (tempfile::TempDir, TraceSummary) {
        let d = project();
        write(d.path(), "tests/conftest.py", conftest);
        let mut o = opts(d.path());
        o.plain_fork = fork;
        let s = trace(&o).expect("trace");
        (d, s)
    }

    fn failed_plain_run_warned(s: &TraceSummary) {
        assert!(s.plain_run.is_none());
        assert!(
            s.warnings.iter().any(|w| w.starts_with("the plain run")
                && w.contains("exit status 3")
                && w.contains("traced without it")),
            "{:?}",
            s.warnings
        );
        assert_eq!((s.failing, s.passing), (2, 1));
        let m = manifest(&s.dump);
        assert_eq!(m["notes"]["plain_run"].as_bool(), Some(false));
        assert!(m["notes"]["plain_run_error"]
            .as_str()
            .unwrap()
            .contains("exit status 3"));
    }

    #[test]
    fn progress_file_lines() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("progress");
        assert_eq!(read_progress(&p), None);
        for (text, want) in [
            ("3 10 1\n", Some((3, 10, 1))),
            ("3 10 1", None),
            ("3 10\n", None),
            ("3 10 1 4\n", None),
            ("x 10 1\n", None),
        ] {
            std::fs::write(&p, text).unwrap();
            assert_eq!(read_progress(&p), want, "{text:?}");
        }
    }

    #[test]
    fn plain_run_time_limit() {
        let mut o = PythonTraceOptions::new("src", "out", vec!["pytest".to_owned()]);
        for (t, default, given) in [(0, 0, 0), (2, 4, 2), (10, 20, 10)] {
            o.test_timeout = Duration::from_secs(t);
            o.test_timeout_given = false;
            assert_eq!(plain_timeout(&o), Duration::from_secs(default));
            o.test_timeout_given = true;
            assert_eq!(plain_timeout(&o), Duration::from_secs(given));
        }
    }

    #[test]
    fn missing_command_and_src_are_errors() {
        let d = tempfile::tempdir().unwrap();
        let mut o = PythonTraceOptions::new(d.path(), d.path().join("out"), vec![]);
        assert!(matches!(trace(&o), Err(FrontendError::NoCommand)));
        o.command = vec!["pytest".into()];
        o.src = d.path().join("nope");
        assert!(matches!(trace(&o), Err(FrontendError::SrcNotDir(_))));
    }

    #[test]
    fn package_is_cached_by_content() {
        let a = install_package().unwrap();
        let b = install_package().unwrap();
        assert_eq!(a, b);
        assert!(a.join("prosecutor_tracer/plugin.py").is_file());
    }
}
