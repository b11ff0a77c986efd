//! `prosecutor eval` on manifests pointing at the hand-encoded dumps (no tracing), bad manifests,
//! and (when pytest is available) the no-re-trace rule on a Python fixture.

use std::path::{Path, PathBuf};

use crate::common::*;

/// The fixtures with their known faulty lines (fixture READMEs).
const CASES: [(&str, &str); 5] = [
    ("leftpad_fig1", "StringUtils.java:9"),
    ("leftpad_fig3", "StringUtils.java:22"),
    ("while_true_fig6", "SumDown.java:5"),
    ("try_catch", "Parser.java:16"),
    ("interproc", "Bank.java:8"),
];

fn case(name: &str, dump: &Path, faulty: &str) -> String {
    format!(
        "[[case]]\nname = \"{name}\"\ndump = \"{}\"\nfaulty = [\"{faulty}\"]\n\n",
        dump.display()
    )
}

fn good_manifest() -> String {
    CASES
        .iter()
        .map(|(n, f)| case(n, &root().join("fixtures/dumps").join(n), f))
        .collect()
}

fn eval(manifest: &Path, out: &Path) -> (i32, String, String) {
    let o = run(&[
        "eval",
        manifest.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--jobs",
        "2",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8(o.stdout).unwrap(),
        stderr,
    )
}

/// Replaces the last cell (median seconds) of the technique table rows: times vary.
pub(crate) fn redact_times(md: &str) -> String {
    let mut in_table = false;
    md.lines()
        .map(|l| {
            if l.starts_with("| technique |") {
                in_table = true;
            } else if !l.starts_with('|') {
                in_table = false;
            }
            if in_table && l.starts_with("| ") && !l.starts_with("| technique") {
                let mut cells: Vec<&str> = l.trim_end_matches('|').split('|').collect();
                let n = cells.len();
                cells[n - 1] = " <s> ";
                format!("{}|", cells.join("|"))
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Rows of cases.csv: case, technique, pessimistic, average, exam, n_lines, method position,
/// n_methods, seconds, trace_seconds, failing_steps, converged, error (0..=12), then the 12
/// columns of `eval --explain` (13..=24).
pub(crate) fn csv_rows(out: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(out.join("cases.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "case,technique,position_pessimistic,position_average,exam,n_lines,method_position,\
         n_methods,seconds,trace_seconds,failing_steps,converged,error,nsr_found,nsr_size,\
         nsr_runs,nsr_score,nsr_bucket,causal_mode,causal_length,causal_complete,\
         causal_reaches_fault,causal_runs,explain_seconds,explain_error"
    );
    lines
        .map(|l| {
            let r = prosecutor::eval::output::csv_fields(l);
            assert_eq!(r.len(), 25, "{l}");
            r
        })
        .collect()
}

fn row<'a>(rows: &'a [Vec<String>], case: &str, tech: &str) -> &'a [String] {
    rows.iter()
        .find(|r| r[0] == case && r[1] == tech)
        .unwrap_or_else(|| panic!("no row {case} {tech}"))
}

#[test]
fn fixtures_summary() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("fixtures.toml");
    std::fs::write(&m, good_manifest()).unwrap();
    let out = dir.path().join("out");
    let (code, stdout, stderr) = eval(&m, &out);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    // stdout has the same technique table
    let table: Vec<&str> = summary
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains(" | ") && !l.contains("/"))
        .collect();
    for l in &table[..3] {
        assert!(stdout.contains(l), "{l}\n{stdout}");
    }
    insta::assert_snapshot!("eval_fixtures_summary", redact_times(&summary));

    let rows = csv_rows(&out);
    assert_eq!(rows.len(), 5 * prosecutor::eval::Tech::all().len());
    // every PROSECUTOR inference on the fixtures converges; baselines have no such column
    for r in rows.iter().filter(|r| !r[2].is_empty()) {
        let want = if r[1].starts_with("prosecutor") {
            "yes"
        } else {
            ""
        };
        assert_eq!(r[11], want, "{r:?}");
    }
    // Fig. 3: every baseline puts line 22 first (alone: the only line only the failing test
    // runs); PROSECUTOR without counterfactuals (the fixture cannot be re-run) and without the
    // spectrum likelihood puts the branch `pads < padLen` (line 21) first and line 22 second, as
    // in the paper's §2.3; the likelihood (line 22: failing test only) lifts line 22 to first
    for r in rows.iter().filter(|r| r[0] == "leftpad_fig3") {
        let want = if r[1] == "prosecutor-nospectrum" {
            "2"
        } else {
            "1"
        };
        assert_eq!((r[2].as_str(), r[3].as_str()), (want, want), "{r:?}");
    }
    // Fig. 1: SBFL ties line 9 with the 10 lines both tests execute: 3 before, so 4..13
    let o = row(&rows, "leftpad_fig1", "ochiai");
    assert_eq!(
        (o[2].as_str(), o[3].as_str(), o[5].as_str()),
        ("13", "8.5000", "14"),
        "{o:?}"
    );
    assert_eq!(o[4], format!("{:.6}", 13.0 / 14.0));
    // PROSECUTOR separates it
    let p = row(&rows, "leftpad_fig1", "prosecutor");
    assert!(p[2].parse::<f64>().unwrap() < 13.0, "{p:?}");
    // CP's system is singular on the while(true) loop (no exit): its least-norm solution gives
    // every block 0, one tie group of all 6 lines (spec G5), and no error
    let cp = row(&rows, "while_true_fig6", "cp");
    assert!(cp[2] == "6" && cp[12].is_empty(), "{cp:?}");

    let svg = std::fs::read_to_string(out.join("topk.svg")).unwrap();
    assert!(
        svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"")
            && svg.trim_end().ends_with("</svg>")
    );
    assert_eq!(
        svg.matches("<polyline").count(),
        prosecutor::eval::Tech::all().len()
    );
    assert!(svg.contains("<title>PROSECUTOR</title>") && svg.contains("<title>F∪P</title>"));
    // k axis runs to 16 (the longest ranking: interproc's 16 lines)
    assert!(svg.contains(">16</text>") && !svg.contains(">17</text>"));

    // a second run gives the same positions
    let (code, _, _) = eval(&m, &out);
    assert_eq!(code, 0);
    let again = csv_rows(&out);
    let strip = |rows: &[Vec<String>]| {
        rows.iter()
            .map(|r| [&r[..8], &r[10..]].concat())
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&rows), strip(&again));
}

#[test]
fn bad_entries_are_reported_per_case() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("bad.toml");
    let fig3 = root().join("fixtures/dumps/leftpad_fig3");
    let text = [
        case("good", &fig3, "StringUtils.java:22"),
        case(
            "missing_dump",
            &dir.path().join("no-such-dump"),
            "StringUtils.java:22",
        ),
        case("past_the_end", &fig3, "StringUtils.java:22,99"),
        case("no_such_file", &fig3, "Nope.java:3"),
        "[[case]]\nname = \"incomplete\"\ndir = \".\"\nfaulty = [\"a.py:1\"]\n".to_owned(),
    ]
    .concat();
    std::fs::write(&m, &text).unwrap();
    let out = dir.path().join("out");
    let (code, stdout, stderr) = eval(&m, &out);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let line_of = |needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let m_s = m.display().to_string();
    for (name, at, msg) in [
        (
            "missing_dump",
            line_of("name = \"missing_dump\""),
            "is not a trace dump directory (no manifest.toml)".to_owned(),
        ),
        (
            "past_the_end",
            line_of("StringUtils.java:22,99"),
            "faulty line 99 is past the end of".to_owned(),
        ),
        (
            "no_such_file",
            line_of("Nope.java:3"),
            "faulty file \"Nope.java\" is not in".to_owned(),
        ),
        (
            "incomplete",
            line_of("name = \"incomplete\""),
            "needs `dir`, `src` and `test` (to trace), or `dump`".to_owned(),
        ),
    ] {
        let expect = format!("- `{name}`: {m_s}:{at}: case \"{name}\": ");
        let l = stdout
            .lines()
            .find(|l| l.starts_with(&expect))
            .unwrap_or_else(|| panic!("{expect}\n{stdout}"));
        assert!(l.contains(&msg), "{l}");
    }
    assert!(stdout.contains("(37 lines)"), "{stdout}"); // StringUtils.java of leftpad_fig3
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("5 cases, 1 evaluated, 4 failed (excluded from the table)"),
        "{summary}"
    );
    let rows = csv_rows(&out);
    assert_eq!(rows.len(), 5 * prosecutor::eval::Tech::all().len());
    // Fig. 3 without counterfactuals (no rerun here): line 22 is second, behind branch line 21,
    // in the paper's inference; the spectrum likelihood puts it first (only the failing test
    // runs it)
    assert_eq!(row(&rows, "good", "prosecutor-nospectrum")[2], "2");
    assert_eq!(row(&rows, "good", "prosecutor")[2], "1");
    let bad = row(&rows, "missing_dump", "ochiai");
    assert!(
        bad[2].is_empty() && bad[12].contains("no-such-dump"),
        "{bad:?}"
    );
    // the good case's position counts (1st), the failed ones are excluded
    assert!(
        stdout.contains("| PROSECUTOR | 1 | 1 | 1 | 1 | 1 |"),
        "{stdout}"
    );
}

#[test]
fn unparseable_manifest_exits_2_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.toml");
    std::fs::write(&m, "[[case]]\nname = \"a\"\nfaulty = [\"x:1\"]\ndump = 3\n").unwrap();
    let (code, stdout, stderr) = eval(&m, &dir.path().join("out"));
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    assert!(stderr.contains(&format!("{}:4: ", m.display())), "{stderr}");
    std::fs::write(
        &m,
        "[[case]]\nname = \"a\"\nfaulty = [\"x:1\"]\nfaulty_lines = [1]\n",
    )
    .unwrap();
    let (code, _, stderr) = eval(&m, &dir.path().join("out"));
    assert_eq!(code, 2);
    assert!(
        stderr.contains(&format!("{}:4: ", m.display())) && stderr.contains("faulty_lines"),
        "{stderr}"
    );
    let (code, _, stderr) = eval(&dir.path().join("missing.toml"), &dir.path().join("out"));
    assert_eq!(code, 2);
    assert!(stderr.contains("missing.toml: cannot read"), "{stderr}");
}

/// The Python tests need `python3` with pytest (`.ci/run` installs it). A machine without it
/// fails these tests with that message instead of skipping them, so a missing dependency never
/// passes for a green run.
pub(crate) fn require_pytest() {
    assert!(
        prosecutor::frontend::python::pytest_available(),
        "python3 with pytest is required by this test: `python3 -c 'import pytest'` fails \
         (install it with `python3 -m pip install pytest`, as .ci/run does)"
    );
}

/// Writes `DIR/py.toml`: one traced case `name` of the Python fixture `fixture` (pytest on its
/// `tests`, `src` as SRC) whose fault is `faulty`.
fn python_case_manifest(dir: &Path, name: &str, fixture: &str, faulty: &str) -> PathBuf {
    let project = root().join("fixtures/python").join(fixture);
    let m = dir.join("py.toml");
    std::fs::write(
        &m,
        format!(
            "[[case]]\nname = \"{name}\"\ndir = \"{}\"\nsrc = \"src\"\ntest = [\"python3\", \"-m\", \"pytest\", \"-q\", \"tests\"]\nfaulty = [\"{faulty}\"]\n",
            project.display()
        ),
    )
    .unwrap();
    m
}

/// A traced case: the dump lands in OUT/dumps/<name>; a second run reuses it (no re-trace).
#[test]
fn traced_case_is_not_traced_again() {
    require_pytest();
    let dir = tempfile::tempdir().unwrap();
    let m = python_case_manifest(dir.path(), "lp3", "leftpad_fig3", "leftpad.py:22");
    let out = dir.path().join("out");
    let o = run(&[
        "eval",
        m.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-cfx",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let stamp = out.join("dumps/lp3/manifest.toml");
    let before = std::fs::metadata(&stamp).unwrap().modified().unwrap();
    let first = std::fs::read_to_string(out.join("cases.csv")).unwrap();
    let o = run(&[
        "eval",
        m.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-cfx",
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        std::fs::metadata(&stamp).unwrap().modified().unwrap(),
        before,
        "the dump was rewritten"
    );
    let second = std::fs::read_to_string(out.join("cases.csv")).unwrap();
    let positions = |t: &str| {
        t.lines()
            .map(|l| l.split(',').take(6).collect::<Vec<_>>().join(","))
            .collect::<Vec<_>>()
    };
    assert_eq!(positions(&first), positions(&second));
    // the buggy line is executed by the failing test only: SBFL ranks it first
    assert!(
        first.lines().any(|l| l.starts_with("lp3,ochiai,1,1,")),
        "{first}"
    );
    // With counterfactuals: the experiments run once; a second run reuses their outcomes
    // (same durations recorded), and the ablations plan within what the full run measured.
    let with_cfx = || {
        let o = run(&["eval", m.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let text = std::fs::read_to_string(out.join("cfx/lp3.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["stmt"].to_string(),
                    e["occurrence"].to_string(),
                    e["outcome"].to_string(),
                    e["duration_ms"].as_u64().unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    let a = with_cfx();
    assert!(!a.is_empty());
    assert!(a.iter().any(|e| e.2 == "\"pass\""), "{a:?}");
    assert_eq!(a, with_cfx(), "the experiments were run again");
}

/// `eval --no-plain-run --import-time` traces as `trace` does with the same flags (they used to
/// be reachable from `eval` only through the environment).
#[test]
fn eval_passes_the_tracing_flags_on() {
    require_pytest();
    let dir = tempfile::tempdir().unwrap();
    let m = python_case_manifest(dir.path(), "mc", "module_constant", "grading.py:3");
    let notes = |flags: &[&str]| {
        let out = dir.path().join(format!("out{}", flags.len()));
        let mut args = vec!["eval", m.to_str().unwrap(), "--out", out.to_str().unwrap()];
        args.extend(["--no-cfx"].iter().chain(flags));
        let o = run(&args);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let d = prosecutor::dump::Dump::load(&out.join("dumps/mc")).unwrap();
        let get = |k: &str| d.manifest.notes.get(k).cloned();
        (get("plain_run"), get("setup_steps"))
    };
    let (plain, setup) = notes(&[]);
    assert_eq!(plain, Some(toml::Value::Boolean(true)));
    assert_eq!(setup, Some(toml::Value::Integer(0)));
    let (plain, setup) = notes(&["--no-plain-run", "--import-time"]);
    assert_eq!(plain, Some(toml::Value::Boolean(false)));
    assert!(
        matches!(setup, Some(toml::Value::Integer(n)) if n > 0),
        "{setup:?}"
    );
}
