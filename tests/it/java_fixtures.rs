//! The JVM front-end end to end on the JUnit 4 projects of fixtures/java: each is compiled
//! (`javac -g`) and traced for real by the agent, then the dump's outcomes, its EPG (snapshots),
//! the paper's Fig. 1 and Fig. 3 rankings (equal to the hand-encoded dumps'), counterfactual
//! re-runs through the dump's `[rerun]` command (Fig. 3's flip, a flip that hangs) and the
//! faulty lines' positions are checked.
//!
//! Every fixture is copied, compiled and traced once per test process, in a scratch directory
//! outside the repository (shared by the tests through [`built`]). Without a JDK, ASM or JUnit 4
//! every test fails, naming what is missing (`common::require_jdk`).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use prosecutor::dump::Outcome;
use prosecutor::frontend::java::Toolchain;
use serde_json::Value;

use crate::common::*;

/// Every project of fixtures/java (checked against the directory by
/// [`every_fixture_is_tested`]).
const FIXTURES: [&str; 11] = [
    "class_init",
    "expected_exception",
    "field_mutation",
    "hang_on_flip",
    "interface_dispatch",
    "lambda_callback",
    "leftpad_fig1",
    "leftpad_fig3",
    "static_init",
    "try_catch",
    "while_true_fig6",
];

/// Ground truth of a fixture (its `fixture.toml`; keys in fixtures/java/README.md).
struct Truth {
    failing: Vec<String>,
    passing: Vec<String>,
    /// (file relative to the project, line)
    faulty: (String, u32),
}

fn truth(name: &str) -> Truth {
    let path = root().join("fixtures/java").join(name).join("fixture.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let t: toml::Value = toml::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let list = |key: &str| -> Vec<String> {
        t[key]
            .as_array()
            .unwrap_or_else(|| panic!("{path:?}: no `{key}` list"))
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    let faulty = list("faulty");
    assert_eq!(faulty.len(), 1, "{name}: one faulty line");
    let (file, line) = faulty[0].rsplit_once(':').unwrap();
    Truth {
        failing: list("failing"),
        passing: list("passing"),
        faulty: (file.to_owned(), line.parse().unwrap()),
    }
}

/// A fixture compiled and traced: the project (a copy of the fixture's sources, the working
/// directory of tracing and re-runs), its class directories and the dump.
struct Built {
    project: PathBuf,
    classes: PathBuf,
    test_classes: PathBuf,
    dump: PathBuf,
    /// The JUnit test classes (`pkg.FooTest`).
    test_classes_names: Vec<String>,
}

/// Directories older than this whose process is gone are left-overs of earlier test runs.
const STALE: Duration = Duration::from_secs(3600);
const SCRATCH_PREFIX: &str = "prosecutor-java-fixtures-";

/// This process's scratch directory (`$TMPDIR/prosecutor-java-fixtures-PID`). The builds live as
/// long as the process (the dumps' re-run commands name their class directories), so they cannot
/// be dropped with a `TempDir`; instead each process removes those of earlier processes that
/// have ended (on Linux, where /proc says so) and are more than an hour old.
fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let tmp = std::env::temp_dir();
        if Path::new("/proc/self").exists() {
            for e in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(pid) = name.strip_prefix(SCRATCH_PREFIX) else {
                    continue;
                };
                let old = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| SystemTime::now().duration_since(t).ok())
                    .is_some_and(|age| age > STALE);
                if pid.parse::<u32>().is_ok() && old && !Path::new("/proc").join(pid).exists() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let d = tmp.join(format!("{SCRATCH_PREFIX}{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

/// The fixture compiled and traced, once per process.
fn built(name: &str) -> &'static Built {
    static CELLS: [OnceLock<Built>; FIXTURES.len()] = [const { OnceLock::new() }; FIXTURES.len()];
    let i = FIXTURES
        .iter()
        .position(|f| *f == name)
        .unwrap_or_else(|| panic!("no fixture {name}"));
    CELLS[i].get_or_init(|| {
        let dir = scratch().join(name);
        let _ = std::fs::remove_dir_all(&dir);
        let b = compile_fixture(name, &dir);
        trace_fixture(&b, &b.dump);
        b
    })
}

/// The `.java` files under `dir`, sorted.
fn java_files(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            v.extend(java_files(&p));
        } else if p.extension().is_some_and(|x| x == "java") {
            v.push(p);
        }
    }
    v.sort();
    v
}

fn run_ok(c: &mut Command, what: &str) -> Output {
    let o = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        o.status.success(),
        "{what}: {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Copies fixtures/java/NAME's sources to `dir/project` and compiles them with `javac -g` (the
/// application's classes, then the tests' against them and JUnit) into `dir/classes` and
/// `dir/test-classes`.
fn compile_fixture(name: &str, dir: &Path) -> Built {
    let tc = Toolchain::from_env().unwrap_or_else(|e| panic!("{e}"));
    let project = dir.join("project");
    copy_dir(
        &root().join("fixtures/java").join(name).join("src"),
        &project.join("src"),
    );
    let (classes, test_classes) = (dir.join("classes"), dir.join("test-classes"));
    let javac = |out: &Path, cp: Vec<PathBuf>, src: &Path| {
        let mut c = Command::new(&tc.javac);
        c.args(["-g", "-nowarn", "-encoding", "UTF-8", "-d"])
            .arg(out);
        if !cp.is_empty() {
            c.arg("-cp").arg(std::env::join_paths(cp).unwrap());
        }
        c.args(java_files(src));
        run_ok(&mut c, &format!("{name}: javac {}", src.display()));
    };
    javac(&classes, vec![], &project.join("src/main/java"));
    let mut cp = vec![classes.clone()];
    cp.extend(tc.junit.iter().cloned());
    javac(&test_classes, cp, &project.join("src/test/java"));
    let tests_root = project.join("src/test/java");
    let test_classes_names = java_files(&tests_root)
        .iter()
        .filter(|p| p.to_string_lossy().ends_with("Test.java"))
        .map(|p| {
            let rel = p.strip_prefix(&tests_root).unwrap().with_extension("");
            rel.to_string_lossy().replace('/', ".")
        })
        .collect::<Vec<_>>();
    assert!(!test_classes_names.is_empty(), "{name}: no *Test.java");
    Built {
        dump: dir.join("dump"),
        project,
        classes,
        test_classes,
        test_classes_names,
    }
}

/// `prosecutor trace --java` of every test class of `b` into `out`, in the project directory
/// (its default source roots, src/main/java and src/test/java).
fn trace_fixture(b: &Built, out: &Path) {
    let mut c = bin();
    c.current_dir(&b.project)
        .args(["trace", "--java", "--classes"])
        .arg(&b.classes)
        .arg("--test-classes")
        .arg(&b.test_classes)
        .arg("--out")
        .arg(out)
        .arg("--")
        .args(&b.test_classes_names);
    let o = run_ok(&mut c, &format!("trace {}", b.project.display()));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// The stdout of `prosecutor ARGS`, which must exit with 0.
fn stdout_of(args: &[&OsStr]) -> String {
    let o = run_ok(bin().args(args), &format!("prosecutor {args:?}"));
    String::from_utf8(o.stdout).unwrap()
}

/// `localize DUMP --format json EXTRA...`, parsed.
fn localize_json(dump: &Path, extra: &[&str]) -> Value {
    serde_json::from_slice(&localize_output(dump, extra).stdout).unwrap()
}

/// `localize DUMP --format json EXTRA...`: its output, once it succeeded.
fn localize_output(dump: &Path, extra: &[&str]) -> std::process::Output {
    let mut args: Vec<&OsStr> = vec!["localize".as_ref(), dump.as_ref()];
    args.extend(["--format", "json"].iter().chain(extra).map(OsStr::new));
    run_ok(bin().args(&args), &format!("prosecutor {args:?}"))
}

/// The ranking as (file name, line) → (rank, score).
fn ranking_by_file_name(v: &Value) -> BTreeMap<(String, u64), (u64, f64)> {
    let mut m = BTreeMap::new();
    for r in v["ranking"].as_array().unwrap() {
        let file = Path::new(r["file"].as_str().unwrap())
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let key = (file, r["line"].as_u64().unwrap());
        let val = (r["rank"].as_u64().unwrap(), r["score"].as_f64().unwrap());
        assert!(m.insert(key.clone(), val).is_none(), "{key:?} twice");
    }
    m
}

/// Pessimistic position of (file, line) in a JSON ranking: how many lines score at least as high.
fn position(v: &Value, file: &str, line: u32) -> Option<usize> {
    let rows = v["ranking"].as_array().unwrap();
    let score = rows
        .iter()
        .find(|r| r["file"] == file && r["line"] == line)?["score"]
        .as_f64()
        .unwrap();
    Some(
        rows.iter()
            .filter(|r| r["score"].as_f64().unwrap() >= score)
            .count(),
    )
}

/// One fixture: its traced outcomes are exactly fixture.toml's, and its EPG (`derive`, TSV:
/// vertices with their source lines, then edges with their rules) is deterministic (a second
/// trace gives the same) and snapshot-tested.
fn outcomes_and_epg(name: &str) {
    require_jdk(name);
    let b = built(name);
    let t = truth(name);
    let dump = load(&b.dump);
    assert_eq!(dump.manifest.frontend.name, "java");
    let outcomes: BTreeMap<&str, Outcome> = dump
        .manifest
        .tests
        .iter()
        .map(|c| (c.id.as_str(), c.outcome))
        .collect();
    assert_eq!(outcomes.len(), dump.manifest.tests.len(), "{name}: ids");
    let want: BTreeMap<&str, Outcome> = t
        .failing
        .iter()
        .map(|id| (id.as_str(), Outcome::Fail))
        .chain(t.passing.iter().map(|id| (id.as_str(), Outcome::Pass)))
        .collect();
    assert_eq!(outcomes, want, "{name}: outcomes of the dump's tests");
    for c in &dump.manifest.tests {
        assert!(c.trace.is_some(), "{name}: {} has no trace", c.id);
        if c.outcome == Outcome::Fail {
            assert!(c.failure_kind.is_some(), "{name}: {} no failure kind", c.id);
        }
    }

    // a second trace, derived: the same EPG
    let again = tempfile::tempdir().unwrap();
    let dump2 = again.path().join("dump");
    trace_fixture(b, &dump2);
    let derive = |d: &Path| stdout_of(&["derive".as_ref(), d.as_ref()]);
    let tsv = derive(&b.dump);
    assert_eq!(tsv, derive(&dump2), "{name}: two traces, two EPGs");
    assert!(tsv.contains("\n# edges: "), "{tsv}");
    // file paths are relative to the project: nothing of the machine's directories
    for dir in [scratch(), again.path(), &root()] {
        assert!(
            !tsv.contains(dir.to_str().unwrap()),
            "{name}: {} in the EPG",
            dir.display()
        );
    }
    insta::assert_snapshot!(format!("java_epg_{name}"), tsv);
}

#[test]
fn class_init() {
    outcomes_and_epg("class_init");
}

#[test]
fn expected_exception() {
    outcomes_and_epg("expected_exception");
}

#[test]
fn field_mutation() {
    outcomes_and_epg("field_mutation");
}

#[test]
fn hang_on_flip() {
    outcomes_and_epg("hang_on_flip");
}

#[test]
fn interface_dispatch() {
    outcomes_and_epg("interface_dispatch");
}

#[test]
fn lambda_callback() {
    outcomes_and_epg("lambda_callback");
}

#[test]
fn leftpad_fig1() {
    outcomes_and_epg("leftpad_fig1");
}

#[test]
fn leftpad_fig3() {
    outcomes_and_epg("leftpad_fig3");
}

#[test]
fn static_init() {
    outcomes_and_epg("static_init");
}

#[test]
fn try_catch() {
    outcomes_and_epg("try_catch");
}

#[test]
fn while_true_fig6() {
    outcomes_and_epg("while_true_fig6");
}

/// A fixture added to fixtures/java gets its test here.
#[test]
fn every_fixture_is_tested() {
    let mut dirs: Vec<String> = std::fs::read_dir(root().join("fixtures/java"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("fixture.toml").exists())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    assert_eq!(dirs, FIXTURES);
}

/// The real trace of the Java program of Fig. 1 / Fig. 3 gives the hand-encoded dump's
/// ranking: every line with the same score (within 1e-6) and the same rank.
fn same_ranking_as_hand_dump(name: &str) {
    require_jdk(name);
    let real = localize_json(&built(name).dump, &["--no-cfx"]);
    let hand = localize_json(&root().join("fixtures/dumps").join(name), &["--no-cfx"]);
    let (real, hand) = (ranking_by_file_name(&real), ranking_by_file_name(&hand));
    assert!(hand.len() >= 10, "{name}: {hand:?}");
    assert_eq!(
        real.keys().collect::<Vec<_>>(),
        hand.keys().collect::<Vec<_>>(),
        "{name}: ranked lines"
    );
    for (k, (rank, score)) in &hand {
        let (r, s) = real[k];
        assert!(
            (s - score).abs() <= 1e-6,
            "{name}: {k:?} scores {s} traced, {score} hand-encoded"
        );
        assert_eq!(r, *rank, "{name}: {k:?} rank");
    }
}

#[test]
fn fig1_ranking_equals_hand_encoded_dump() {
    same_ranking_as_hand_dump("leftpad_fig1");
}

#[test]
fn fig3_ranking_equals_hand_encoded_dump() {
    same_ranking_as_hand_dump("leftpad_fig3");
}

/// The experiments of a JSON output as (file name, line, occurrence, test, outcome).
fn experiments(v: &Value) -> Vec<(String, u64, u64, String, String)> {
    v["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let s = |k: &str| {
                e[k].as_str()
                    .unwrap_or_else(|| panic!("{k}: {e}"))
                    .to_owned()
            };
            let file = s("file");
            let file = file.rsplit('/').next().unwrap().to_owned();
            (
                file,
                e["line"].as_u64().unwrap(),
                e["occurrence"].as_u64().unwrap(),
                s("test"),
                s("outcome"),
            )
        })
        .collect()
}

/// Fig. 3's counterfactual, traced and localized in one go (`localize --java`, re-runs through
/// the JVM): flipping the first evaluation of line 21 (`pads < padLen`) in the failing testCase1
/// makes it pass; every other flip leaves it failing.
#[test]
fn fig3_flip_of_line_21_makes_the_failing_test_pass() {
    require_jdk("fig3_flip_of_line_21_makes_the_failing_test_pass");
    let b = built("leftpad_fig3");
    let mut c = bin();
    c.current_dir(&b.project)
        .args(["localize", "--java", "--format", "json", "--classes"])
        .arg(&b.classes)
        .arg("--test-classes")
        .arg(&b.test_classes)
        .arg("--")
        .args(&b.test_classes_names);
    let o = run_ok(&mut c, "localize --java leftpad_fig3");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let ex = experiments(&v);
    let failing = "fixtures.leftpad_fig3.StringUtilsTest::testCase1";
    let flip21: Vec<_> = ex
        .iter()
        .filter(|e| e.0 == "StringUtils.java" && e.1 == 21 && e.2 == 1)
        .collect();
    assert_eq!(flip21.len(), 1, "{ex:?}");
    assert_eq!(flip21[0].3, failing, "{ex:?}");
    assert_eq!(flip21[0].4, "pass", "{ex:?}");
    let others: Vec<_> = ex.iter().filter(|e| e.1 != 21).collect();
    assert!(others.len() >= 3, "{ex:?}");
    for e in others {
        assert_eq!((e.3.as_str(), e.4.as_str()), (failing, "fail"), "{e:?}");
    }
}

/// A flip that passes because the call holding it threw into a test that expects the exception
/// is reported as thrown and is no evidence by default (expected_exception's fixture.toml,
/// `flip_outcomes`): in testNegative the flips of lines 5 and 12 throw out of `parseAge` into
/// the test's catch; in testNegativeDefault the same flips throw into `ageOr`'s catch, so its
/// passes are ordinary ones. With `--cfx-thrown evidence` every pass counts, as in the paper.
#[test]
fn a_pass_by_a_thrown_exception_is_reported_and_not_evidence() {
    require_jdk("a_pass_by_a_thrown_exception_is_reported_and_not_evidence");
    let dump = &built("expected_exception").dump;
    let out = localize_output(dump, &[]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let pkg = "fixtures.expected_exception.AgesTest::";
    let mut passes = BTreeMap::new();
    for e in v["experiments"].as_array().unwrap() {
        if e["outcome"] == "pass" {
            let test = e["test"]
                .as_str()
                .unwrap()
                .trim_start_matches(pkg)
                .to_owned();
            let thrown = e.get("thrown").and_then(Value::as_bool).unwrap_or(false);
            passes.insert((test, e["line"].as_u64().unwrap()), thrown);
        }
    }
    let want: BTreeMap<(String, u64), bool> = [
        (("testNegative".to_owned(), 5), true),
        (("testNegative".to_owned(), 12), true),
        (("testNegativeDefault".to_owned(), 5), false),
        (("testNegativeDefault".to_owned(), 12), false),
    ]
    .into();
    assert_eq!(passes, want, "{}", v["experiments"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "2 of 4 passing counterfactual experiments passed by an exception the test accepted"
        ) && err.contains("not counted as evidence"),
        "{err}"
    );
    // counted, the two passes of testNegative add evidence: some score changes
    let counted = localize_json(dump, &["--cfx-thrown", "evidence"]);
    assert_ne!(
        ranking_by_file_name(&v),
        ranking_by_file_name(&counted),
        "the thrown passes moved nothing"
    );
}

/// A flip whose re-run never ends (hang_on_flip's fixture.toml, `hang_flip`): forcing the 4th
/// evaluation of `while (n != 1)` (Bits.java:7) in testCeilPowerOfTwo makes `n` 0 forever. The
/// re-run is killed and recorded as a timeout; the other experiments keep their own outcomes
/// (`flip_outcomes`: the 3rd evaluation and line 17 pass, the 1st and 2nd fail).
#[test]
fn hang_on_flip_experiment_times_out() {
    require_jdk("hang_on_flip_experiment_times_out");
    let v = localize_json(&built("hang_on_flip").dump, &["--cfx-timeout", "5"]);
    let ex = experiments(&v);
    let test = "fixtures.hang_on_flip.BitsTest::testCeilPowerOfTwo";
    let mut seen = BTreeSet::new();
    for e in &ex {
        assert_eq!((e.0.as_str(), e.3.as_str()), ("Bits.java", test), "{ex:?}");
        let want = match (e.1, e.2) {
            (7, 4) => "timeout",
            (7, 3) | (17, 1) => "pass",
            (7, 1 | 2) => "fail",
            _ => panic!("unexpected experiment {e:?}"),
        };
        assert_eq!(e.4, want, "{e:?} in {ex:?}");
        seen.insert((e.1, e.2));
    }
    assert!(
        seen.contains(&(7, 4)),
        "no flip of the 4th evaluation: {ex:?}"
    );
    assert!(
        seen.contains(&(7, 3)) || seen.contains(&(17, 1)),
        "no passing flip: {ex:?}"
    );
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("timeout"), "{warnings}");
}

/// The faulty line within the top 3 without experiments (pessimistic position), on the
/// fixtures that exercise the front-end's statement model: exceptions caught in a caller, heap
/// fields, interface dispatch, Fig. 6's `while (true)`. interface_dispatch's faulty line
/// (PercentOff.java:12) was 4th until void returns became copy statements: its constructor's
/// `return` (line 8) no longer takes the blame for the object it built.
#[test]
fn faulty_line_in_top_3_without_experiments() {
    require_jdk("faulty_line_in_top_3_without_experiments");
    let mut got = Vec::new();
    for name in [
        "try_catch",
        "field_mutation",
        "while_true_fig6",
        "interface_dispatch",
    ] {
        let t = truth(name);
        let v = localize_json(&built(name).dump, &["--no-cfx"]);
        let pos = position(&v, &t.faulty.0, t.faulty.1)
            .unwrap_or_else(|| panic!("{name}: {:?} not ranked: {v}", t.faulty));
        got.push((name, pos));
    }
    for &(name, pos) in &got {
        assert!(pos <= 3, "{name}: position {pos}: {got:?}");
    }
}

/// The statements of the methods whose id ends with `suffix` (e.g. `.DayOfYear.<clinit>`).
fn stmts_of(dump: &prosecutor::dump::Dump, suffix: &str) -> BTreeSet<usize> {
    dump.stmts
        .iter()
        .enumerate()
        .filter(|(_, s)| dump.methods[s.method as usize].id.ends_with(suffix))
        .map(|(i, _)| i)
        .collect()
}

/// Per test id, the statements of `of` that `coverage.facts` gives it.
fn coverage_of<'a>(
    dump: &'a prosecutor::dump::Dump,
    of: &BTreeSet<usize>,
) -> BTreeMap<&'a str, BTreeSet<usize>> {
    let mut covered: BTreeMap<&str, BTreeSet<usize>> = BTreeMap::new();
    for &(t, s) in dump.coverage.as_ref().expect("coverage.facts") {
        if of.contains(&(s as usize)) {
            covered
                .entry(dump.manifest.tests[t].id.as_str())
                .or_default()
                .insert(s as usize);
        }
    }
    covered
}

/// The tests whose trace has a step of a statement of `of`.
fn traces_running<'a>(dump: &'a prosecutor::dump::Dump, of: &BTreeSet<usize>) -> Vec<&'a str> {
    dump.traces
        .iter()
        .filter(|tr| tr.steps.iter().any(|st| of.contains(&(st.stmt as usize))))
        .map(|tr| dump.manifest.tests[tr.test].id.as_str())
        .collect()
}

/// A static initializer runs once per test class, inside the test that first loads the class
/// (`static_init`: the passing `test1January`, `@FixMethodOrder`). Its statements count as
/// covered by every test that ran code of the class (docs/frontend-java.md, "Static
/// initializers"): here every test, so the faulty `<clinit>` line 12 is covered by both failing
/// tests, although only `test1January`'s trace has its steps.
#[test]
fn static_initializer_covered_by_every_test_of_its_class() {
    require_jdk("static_initializer_covered_by_every_test_of_its_class");
    let b = built("static_init");
    let dump = load(&b.dump);
    let init = stmts_of(&dump, ".DayOfYear.<clinit>");
    let line12: BTreeSet<usize> = init
        .iter()
        .copied()
        .filter(|&i| dump.stmts[i].line == 12)
        .collect();
    assert!(!line12.is_empty(), "no <clinit> statement on line 12");
    let covered = coverage_of(&dump, &init);
    let all: BTreeSet<usize> = covered.values().flatten().copied().collect();
    assert!(all.is_superset(&line12), "{covered:?}");
    for t in &dump.manifest.tests {
        assert_eq!(
            covered.get(t.id.as_str()),
            Some(&all),
            "{}: <clinit> coverage",
            t.id
        );
    }
    // only the coverage: the steps stay in the trace of the test that ran the initializer
    assert_eq!(
        traces_running(&dump, &init),
        ["fixtures.static_init.DayOfYearTest::test1January"]
    );
    let added = dump.manifest.notes["static_initializer_coverage"]
        .as_integer()
        .unwrap();
    assert!(added > 0, "{added}");
}

/// A class's static initializer runs inside the statement that first loads the class: in
/// `class_init` the failing test's `Vat.gross(100, 2)`, whose step opens `<clinit>` and then
/// `gross`, so R_CL1 links both frames' last steps to the value the step defines. The
/// initializer's void `return` (line 7, the last static field) passes no value: the front-end
/// marks every void `return` a `copy` statement, no cause of its `#`. Without that, line 7 was
/// first (0.33) and the faulty line 10 second (0.04).
#[test]
fn a_void_return_is_no_cause_of_the_value_its_call_step_defines() {
    require_jdk("a_void_return_is_no_cause_of_the_value_its_call_step_defines");
    let b = built("class_init");
    let dump = load(&b.dump);
    let void_returns: Vec<usize> = dump
        .stmts
        .iter()
        .enumerate()
        .filter(|(_, s)| s.kind == prosecutor::dump::StmtKind::Return && s.text == "return")
        .map(|(i, _)| i)
        .collect();
    assert!(
        void_returns.iter().any(|&i| dump.stmts[i].line == 7),
        "no void return on line 7"
    );
    for &i in &void_returns {
        assert!(dump.copy[i], "{}: not a copy statement", dump.stmts[i].id);
    }
    let t = truth("class_init");
    for extra in [&["--no-cfx"][..], &[]] {
        let v = localize_json(&b.dump, extra);
        let pos = position(&v, &t.faulty.0, t.faulty.1);
        assert_eq!(pos, Some(1), "{extra:?}: {v}");
    }
}

/// What a static initializer runs below its own frame (here `Vat.copy`, called for the constant
/// `NAMES`) runs once per class loader too, inside the test that loaded the class (the failing
/// `test1Standard`): it counts as covered by every test that ran code of the class, as the
/// `<clinit>` statements do. Before, only the failing test covered `copy`, whose line 18 then
/// led the ranking at the prior (0.15) with the spectrum's best likelihood.
#[test]
fn an_initializers_callees_are_covered_by_every_test_of_its_class() {
    require_jdk("an_initializers_callees_are_covered_by_every_test_of_its_class");
    let b = built("class_init");
    let dump = load(&b.dump);
    let copy = stmts_of(&dump, ".Vat.copy");
    assert!(!copy.is_empty(), "no statement of Vat.copy");
    let covered = coverage_of(&dump, &copy);
    for t in &dump.manifest.tests {
        assert_eq!(
            covered.get(t.id.as_str()),
            Some(&copy),
            "{}: Vat.copy",
            t.id
        );
    }
    // only the coverage: the steps stay in the trace of the test that loaded the class
    assert_eq!(
        traces_running(&dump, &copy),
        ["fixtures.class_init.VatTest::test1Standard"]
    );
}
