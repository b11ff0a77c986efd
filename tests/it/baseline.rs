//! `prosecutor baseline` on the hand-encoded dumps: SBFL and CP rankings with the shape of
//! `localize`'s, and the properties the techniques must have on the paper's examples.

use std::collections::BTreeMap;

use crate::common::*;

const TECHNIQUES: [&str; 8] = [
    "ochiai",
    "tarantula",
    "dstar",
    "op2",
    "jaccard",
    "barinel",
    "naish1",
    "cp",
];
const SBFL: [&str; 7] = [
    "ochiai",
    "tarantula",
    "dstar",
    "op2",
    "jaccard",
    "barinel",
    "naish1",
];

fn baseline(fixture: &str, technique: &str, extra: &[&str]) -> (i32, String, String) {
    let d = root().join("fixtures/dumps").join(fixture);
    let mut args = vec!["baseline", d.to_str().unwrap(), "--technique", technique];
    args.extend_from_slice(extra);
    let out = run(&args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        stderr,
    )
}

/// line → rank from `--format csv` output.
fn ranks(csv: &str) -> BTreeMap<u32, usize> {
    csv.lines()
        .skip(1)
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            (c[2].parse().unwrap(), c[0].parse().unwrap())
        })
        .collect()
}

/// One snapshot per fixture: the CSV ranking of every technique (or its error).
#[test]
fn csv_rankings_of_every_fixture() {
    for (name, _) in dump_fixtures() {
        let mut all = String::new();
        for t in TECHNIQUES {
            let (code, out, err) = baseline(&name, t, &["--format", "csv"]);
            all.push_str(&format!("## {t}\n"));
            if code == 0 {
                all.push_str(&out);
            } else {
                assert_eq!(code, 2, "{name} {t}: {err}");
                let err = err.replace(root().to_str().unwrap(), "<root>");
                all.push_str(&err);
            }
        }
        insta::assert_snapshot!(format!("baseline_{name}"), all);
    }
}

/// Fig. 1: every line both tests execute (3 … 21, the bug on line 9 among them) has the same
/// spectrum, so no SBFL formula can separate them: one tie group. Line 22 (passing test only) is last.
#[test]
fn leftpad_fig1_sbfl_cannot_separate_lines_both_tests_execute() {
    let both = [3, 6, 9, 10, 11, 12, 13, 16, 19, 21];
    for t in SBFL {
        let (code, out, err) = baseline("leftpad_fig1", t, &["--format", "csv"]);
        assert_eq!(code, 0, "{err}");
        let r = ranks(&out);
        let group: Vec<usize> = both.iter().map(|l| r[l]).collect();
        assert!(group.iter().all(|&g| g == group[0]), "{t}: {r:?}");
        // failing-only loop lines 24-26 come first, the tie holds 10 lines, line 22 after it
        assert!(r[&24] < r[&9] && r[&26] < r[&9], "{t}: {r:?}");
        assert!(r[&22] > r[&9], "{t}: {r:?}");
        assert_eq!(r[&9], 4, "{t}: {r:?}");
        assert_eq!(r.len(), 14);
    }
}

/// Fig. 3: line 22 is executed by the failing test only: every technique ranks it first, alone.
#[test]
fn leftpad_fig3_failing_only_line_is_first() {
    for t in TECHNIQUES {
        let (code, out, err) = baseline("leftpad_fig3", t, &["--format", "csv"]);
        assert_eq!(code, 0, "{err}");
        let r = ranks(&out);
        assert_eq!(r[&22], 1, "{t}: {r:?}");
        assert_eq!(r.values().filter(|&&x| x == 1).count(), 1, "{t}: {r:?}");
    }
}

/// Same output shapes as `localize`: table, JSON, method granularity, --top.
#[test]
fn output_formats_and_granularity() {
    let (code, out, _) = baseline(
        "interproc",
        "ochiai",
        &["--format", "json", "--granularity", "method"],
    );
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let methods: Vec<&str> = v["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["method"].as_str().unwrap())
        .collect();
    let mut sorted = methods.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        vec!["Account.deposit", "Bank.clamp", "Bank.fill", "Bank.process"]
    );
    assert_eq!(v["granularity"], "method");
    // the bug (Bank.clamp, line 8) is executed by the failing test only
    assert_eq!(methods[0], "Bank.clamp");
    let (code, out, _) = baseline("leftpad_fig1", "tarantula", &["--top", "3"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("rank  location"), "{out}");
    assert!(
        out.contains("StringUtils.java:24") && out.contains("... 11 more (use --top)"),
        "{out}"
    );
    let (code, out, _) = baseline(
        "try_catch",
        "op2",
        &["--format", "csv", "--granularity", "statement"],
    );
    assert_eq!(code, 0);
    // parseOrDefault line 14 has one statement; the two branch statements of line 4 are separate
    assert_eq!(
        out.lines()
            .filter(|l| l.contains(",Parser.java,4,"))
            .count(),
        2,
        "{out}"
    );
}

#[test]
fn dstar_infinite_score_prints_as_inf() {
    let (code, out, _) = baseline("leftpad_fig3", "dstar", &["--format", "csv"]);
    assert_eq!(code, 0);
    assert!(
        out.lines()
            .nth(1)
            .unwrap()
            .starts_with("1,StringUtils.java,22,inf,"),
        "{out}"
    );
    // JSON says the same (it used to write `null`, which reads as "no score")
    let (code, out, _) = baseline("leftpad_fig3", "dstar", &["--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ranking"][0]["line"], 22);
    assert_eq!(v["ranking"][0]["score"], "inf", "{out}");
    assert!(v["ranking"][1]["score"].is_number(), "{out}");
}

#[test]
fn unknown_technique_and_bad_dump_exit_2() {
    let (code, out, err) = baseline("leftpad_fig1", "ochiaii", &[]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(
        err.contains("unknown technique \"ochiaii\"")
            && err.contains("ochiai, tarantula, dstar, op2, jaccard, barinel, naish1, cp"),
        "{err}"
    );
    let out = run(&["baseline", "/nonexistent/dump", "--technique", "cp"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a directory"));
}

/// GZoltar interop on the command line: `baseline --gzoltar DIR` ranks a spectrum GZoltar
/// collected, and `--format gzoltar` writes GZoltar's ranking file (here: the same file GZoltar
/// would write for that spectrum and Ochiai, committed beside it).
#[test]
fn gzoltar_spectrum_in_gzoltar_ranking_out() {
    let dir = root().join("src/baselines/testdata/gzoltar");
    let d = dir.to_str().unwrap();
    let out = run(&[
        "baseline",
        "--gzoltar",
        d,
        "--technique",
        "ochiai",
        "--format",
        "gzoltar",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = std::fs::read_to_string(dir.join("ochiai.ranking.csv")).unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), want);
    // CP needs control flow that a spectrum does not have: a clear error, exit 2
    let out = run(&["baseline", "--gzoltar", d, "--technique", "cp"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a trace dump"));
    // localize's ranking as GZoltar's file: a header, then `file:line;score` in rank order
    let dump = root().join("fixtures/dumps/leftpad_fig1");
    let out = run(&[
        "localize",
        dump.to_str().unwrap(),
        "--no-cfx",
        "--format",
        "gzoltar",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("name;suspiciousness_value"));
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("StringUtils.java:26;0.55"),
        "{text}"
    );
}

/// CP on the two bundled Python fixtures whose loops make `I − M` singular (`find_peaks`,
/// `tokenizer_generator`): a ranking that holds the fault, not "singular or near-singular CP
/// system" and no ranking (spec G5: the loop gets the least-squares solution of least norm).
#[test]
fn cp_ranks_the_fixtures_with_singular_loops() {
    crate::eval::require_pytest();
    for (name, fault) in [
        ("find_peaks", ("peaks.py", 7)),
        ("tokenizer_generator", ("calc.py", 16)),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join(name);
        copy_dir(&root().join("fixtures/python").join(name), &project);
        let dump = tmp.path().join("dump");
        let out = localize_python(&project, &dump, &["--no-cfx", "--format", "json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = run(&[
            "baseline",
            dump.to_str().unwrap(),
            "--technique",
            "cp",
            "--format",
            "json",
        ]);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ranked = r["ranking"].as_array().unwrap();
        assert!(
            ranked
                .iter()
                .any(|e| e["file"].as_str().unwrap().ends_with(fault.0)
                    && e["line"].as_u64() == Some(fault.1)),
            "{name}: CP does not rank {}:{}",
            fault.0,
            fault.1
        );
    }
}
