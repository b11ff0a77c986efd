//! `localize` on the paper's examples: Table 1 (Fig. 1), counterfactuals (Fig. 3), compression,
//! planning, and bad counterfactual input.

use serde_json::Value;

use crate::common::*;

fn localize_json(args: &[&str]) -> Value {
    let mut all = vec!["localize"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let out = run(&all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn dump(name: &str) -> String {
    root()
        .join("fixtures/dumps")
        .join(name)
        .to_str()
        .unwrap()
        .to_owned()
}

/// (rank, score) of the first ranking entry whose statements include `stmt`, or at `line`.
fn find(r: &Value, pred: impl Fn(&Value) -> bool) -> (u64, f64) {
    let e = r["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| pred(e))
        .expect("entry in ranking");
    (e["rank"].as_u64().unwrap(), e["score"].as_f64().unwrap())
}

fn line(r: &Value, l: u64) -> (u64, f64) {
    find(r, |e| e["line"].as_u64() == Some(l))
}

fn stmt(r: &Value, s: &str) -> (u64, f64) {
    find(r, |e| {
        e["statements"].as_array().unwrap().iter().any(|x| x == s)
    })
}

/// Table 1: line 26 (the crash) first, the buggy line 9 within the top 3; convergence reported.
/// The paper's examples are stated for the paper's inference (no spectrum likelihood): the
/// tests of Table 1 and Fig. 3 run with `--spectrum-weight 0`; `spectrum_likelihood_on_fig1`
/// checks what the likelihood changes.
const PAPER: [&str; 2] = ["--spectrum-weight", "0"];

#[test]
fn fig1_table1() {
    let r = localize_json(&[&dump("leftpad_fig1"), "--no-cfx", PAPER[0], PAPER[1]]);
    assert_eq!(r["ranking"][0]["line"], 26);
    let (rank9, _) = line(&r, 9);
    assert!(rank9 <= 3, "line 9 at rank {rank9}");
    assert_eq!(r["convergence"]["converged"], true);
    assert!(r["convergence"]["iterations"].as_u64().unwrap() > 0);
    assert!(r["convergence"]["max_change"].as_f64().unwrap() < 1e-6);
    // the paper's Table 1 order of the top three: 26, 25, then the buggy line
    assert_eq!(r["ranking"][1]["line"], 25);
}

/// Fig. 1's passing test also runs the buggy line 9 and line 25; only the failing test runs line
/// 24 and the crashing line 26. The spectrum likelihood (B(2,1) (1-ε) for those, the passing test
/// not running them; B(2,2) = 1/6 for lines both tests run) lowers line 9's log-odds by exactly
/// ln(3 (1-ε)), and leaves line 24's.
#[test]
fn spectrum_likelihood_on_fig1() {
    let d = dump("leftpad_fig1");
    let paper = localize_json(&[&d, "--no-cfx", "--mode", "f", PAPER[0], PAPER[1]]);
    let with = localize_json(&[&d, "--no-cfx", "--mode", "f"]);
    let logit = |p: f64| (p / (1.0 - p)).ln();
    let eps = prosecutor::localize::spectrum::OTHER_CAUSE;
    for (l, shift) in [(9u64, -(3.0 * (1.0 - eps)).ln()), (24, 0.0), (26, 0.0)] {
        let (a, b) = (line(&paper, l).1, line(&with, l).1);
        assert!(
            (logit(b) - logit(a) - shift).abs() < 1e-6,
            "line {l}: {a} -> {b}, expected a log-odds shift of {shift}"
        );
    }
}

/// Writes the plan of leftpad_fig3 with outcomes: only flipping `pads < padLen` (step 11) passes,
/// as the paper's §2.3 says.
fn fig3_results(dir: &std::path::Path) -> String {
    let out = run(&["plan", &dump("leftpad_fig3")]);
    assert!(out.status.success());
    let mut plan: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!plan.is_empty() && plan.len() <= 20);
    assert!(
        plan.iter()
            .any(|e| e["stmt"] == "lp.21" && e["step"] == 11 && e["occurrence"] == 1),
        "lp.21@11 is planned"
    );
    for e in &mut plan {
        let pass = e["stmt"] == "lp.21" && e["occurrence"] == 1;
        e["outcome"] = Value::from(if pass { "pass" } else { "fail" });
    }
    let p = dir.join("results.json");
    std::fs::write(&p, serde_json::to_string(&plan).unwrap()).unwrap();
    p.to_str().unwrap().to_owned()
}

/// Fig. 3 (§2.3): without counterfactuals line 22 is *not* first: the branch `pads < padLen`
/// (line 21), whose value every step after it depends on, is. Flipping that branch at step 11
/// makes the failing test pass; fed back, the outcome raises line 22 to rank 1 (paper:
/// 0.47 → 0.61; here 0.238 → 0.384 with `--cfx-model reroute`), and the faulty statement
/// (`substring`, lp.22a) climbs at statement granularity.
///
/// The paper's literal §3.3 construction (cfx ← the flipped value and its successors) moves
/// line 22 only slightly: the flipped value is a parent of cfx and an ancestor of every other cfx
/// parent, so it explains most of the observation away and line 21 stays first. The default
/// (cfx ← the flipped value alone) raises line 21 further (docs/model.md).
#[test]
fn fig3_counterfactual_raises_line_22() {
    let dir = tempfile::tempdir().unwrap();
    let results = fig3_results(dir.path());
    let base = localize_json(&[&dump("leftpad_fig3"), "--no-cfx", PAPER[0], PAPER[1]]);
    let cfx = localize_json(&[
        &dump("leftpad_fig3"),
        "--cfx",
        &results,
        "--cfx-model",
        "reroute",
        PAPER[0],
        PAPER[1],
    ]);
    let (r0, s0) = line(&base, 22);
    let (r1, s1) = line(&cfx, 22);
    assert!(
        r0 > 1,
        "without counterfactuals line 22 must not be first (rank {r0})"
    );
    assert_eq!(line(&base, 21).0, 1, "the flipped branch's line leads");
    assert_eq!(r1, 1, "line 22 rises to the top: {s0} -> {s1}");
    assert!(s1 > s0 + 0.1, "line 22: {s0} -> {s1}");
    assert_eq!(
        cfx["experiments"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["outcome"] == "pass")
            .count(),
        1
    );
    assert!(cfx["convergence"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["phase"] == "with counterfactuals"));

    let base_s = localize_json(&[
        &dump("leftpad_fig3"),
        "--no-cfx",
        "--granularity",
        "statement",
        PAPER[0],
        PAPER[1],
    ]);
    let cfx_s = localize_json(&[
        &dump("leftpad_fig3"),
        "--cfx",
        &results,
        "--cfx-model",
        "reroute",
        "--granularity",
        "statement",
        PAPER[0],
        PAPER[1],
    ]);
    let (a0, _) = stmt(&base_s, "lp.22a");
    let (a1, _) = stmt(&cfx_s, "lp.22a");
    assert!(a1 < a0, "faulty statement lp.22a: rank {a0} -> {a1}");

    // the paper's literal construction: line 21 keeps the lead, line 22 barely moves
    let with = |model: &str| {
        localize_json(&[
            &dump("leftpad_fig3"),
            "--cfx",
            &results,
            "--cfx-model",
            model,
            PAPER[0],
            PAPER[1],
        ])
    };
    let lit = with("successors");
    let (r2, s2) = line(&lit, 22);
    assert!(
        r2 > 1 && (s2 - s0).abs() < 0.05,
        "successors model: line 22 rank {r2}, {s0} -> {s2}"
    );
    assert_eq!(line(&lit, 21).0, 1);

    // the default (`branch`): the passing flip is evidence against the flipped branch value
    // itself, which no value downstream of it can explain away, so its condition (line 21)
    // gains far more than with the paper's successors
    let branch = localize_json(&[&dump("leftpad_fig3"), "--cfx", &results, PAPER[0], PAPER[1]]);
    let (r21, s21) = line(&branch, 21);
    let (_, s21_lit) = line(&lit, 21);
    let (_, s21_base) = line(&base, 21);
    assert_eq!(r21, 1);
    assert!(
        s21 - s21_base > 3.0 * (s21_lit - s21_base) && s21 > s21_base + 0.1,
        "line 21: {s21_base} without, {s21_lit} with successors, {s21} with branch"
    );
}

/// `--cfx-evidence`: with a coincidence parent a passing flip is finite evidence, so Fig. 3's
/// flipped branch (line 21) gains less than under the paper's certain evidence, but still gains;
/// with `outcomes` the flips that still failed count against their branches too.
#[test]
fn fig3_cfx_evidence_certain_coincidence_outcomes() {
    let dir = tempfile::tempdir().unwrap();
    let results = fig3_results(dir.path());
    let with = |evidence: &str| {
        localize_json(&[
            &dump("leftpad_fig3"),
            "--cfx",
            &results,
            "--cfx-evidence",
            evidence,
            PAPER[0],
            PAPER[1],
        ])
    };
    let base = localize_json(&[&dump("leftpad_fig3"), "--no-cfx", PAPER[0], PAPER[1]]);
    let (certain, coincidence, outcomes) = (with("certain"), with("coincidence"), with("outcomes"));
    let s = |r: &Value| line(r, 21).1;
    assert!(
        s(&base) + 0.01 < s(&coincidence) && s(&coincidence) + 0.01 < s(&certain),
        "line 21: {} without, {} coincidence, {} certain",
        s(&base),
        s(&coincidence),
        s(&certain)
    );
    // the failed flips' branches: some lose under `outcomes`, none gains
    let failed: Vec<u64> = outcomes["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["outcome"] == "fail" && e["line"] != 21)
        .map(|e| e["line"].as_u64().unwrap())
        .collect();
    assert!(!failed.is_empty());
    let lower = failed
        .iter()
        .filter(|&&l| line(&outcomes, l).1 < line(&coincidence, l).1 - 1e-3)
        .count();
    assert!(lower > 0, "no failed flip's line lost: {failed:?}");
    let runs = outcomes["convergence"]["runs"].as_array().unwrap();
    let vertices = |phase: &str| {
        runs.iter()
            .find(|r| r["phase"] == phase && r["model"] == "F")
            .map(|r| r["vertices"].as_u64().unwrap())
            .unwrap()
    };
    assert_eq!(
        vertices("with counterfactuals") - vertices("initial"),
        2 * outcomes["experiments"].as_array().unwrap().len() as u64,
        "every pass and failure is a cfx vertex with a coincidence parent"
    );
}

#[test]
fn cfx_results_that_do_not_match_the_plan_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.json");
    std::fs::write(&p, r#"[{"id":0,"test":"StringUtils::testCase1","trace":"tc1","step":3,"stmt":"lp.999","occurrence":1,"file":"x","line":1,"score":0.5,"outcome":"pass"}]"#).unwrap();
    let out = run(&[
        "localize",
        &dump("leftpad_fig3"),
        "--cfx",
        p.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.json") && err.contains("not in the plan"),
        "{err}"
    );
    std::fs::write(&p, "{ not json").unwrap();
    let out = run(&[
        "localize",
        &dump("leftpad_fig3"),
        "--cfx",
        p.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.json:1"));
}

/// Compression keeps two iterations of every loop: on the fixtures the order of lines is the same
/// with and without it. Scores of loop-body lines may move slightly, because a passing trace
/// then shows fewer (identical) correct iterations of the loop body.
#[test]
fn compression_keeps_the_ranking_order() {
    for (name, _) in dump_fixtures() {
        let a = localize_json(&[&dump(&name), "--no-cfx"]);
        let b = localize_json(&[&dump(&name), "--no-cfx", "--no-compress"]);
        let order = |r: &Value| {
            r["ranking"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["line"].as_u64().unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(order(&a), order(&b), "{name}");
    }
    let a = localize_json(&[&dump("leftpad_fig3"), "--no-cfx"]);
    assert!(
        a["stats"]["kept_steps"].as_u64().unwrap() < a["stats"]["steps"].as_u64().unwrap(),
        "the passing loop trace is compressed"
    );
}

#[test]
fn modes_and_granularity() {
    let d = dump("leftpad_fig1");
    for mode in ["f", "fp", "both"] {
        let r = localize_json(&[&d, "--no-cfx", "--mode", mode]);
        assert_eq!(r["ranking"][0]["line"], 26, "mode {mode}");
        assert_eq!(r["mode"], mode);
    }
    let m = localize_json(&[&d, "--no-cfx", "--granularity", "method"]);
    assert_eq!(m["ranking"].as_array().unwrap().len(), 1);
    assert_eq!(m["ranking"][0]["method"], "leftPad");
    // the method's score is its most suspicious statement's
    let l = localize_json(&[&d, "--no-cfx"]);
    assert_eq!(m["ranking"][0]["score"], l["ranking"][0]["score"]);
}

#[test]
fn table_and_csv_output() {
    let out = run(&["localize", &dump("leftpad_fig1"), "--no-cfx", "--top", "3"]);
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(
        t.contains("StringUtils.java:26")
            && t.contains("inference: converged")
            && t.contains("... 11 more"),
        "{t}"
    );
    let out = run(&[
        "localize",
        &dump("leftpad_fig1"),
        "--no-cfx",
        "--mode",
        "both",
        "--format",
        "csv",
    ]);
    let c = String::from_utf8(out.stdout).unwrap();
    assert!(
        c.starts_with(
            "rank,file,line,key,score_fp,rank_fp,score_f,rank_f,method\n1,StringUtils.java,26,1,"
        ),
        "{c}"
    );
    let out = run(&[
        "localize",
        &dump("leftpad_fig1"),
        "--no-cfx",
        "--mode",
        "fp",
        "--format",
        "csv",
    ]);
    let c = String::from_utf8(out.stdout).unwrap();
    assert!(
        c.starts_with("rank,file,line,score,method\n1,StringUtils.java,26,"),
        "{c}"
    );
}

/// `--mode both` orders by `min(r^F∪P, r^F)` (ties by `r^F∪P`): every entry shows that key and
/// both models' ranks and scores, and the key never decreases top-down (a lone `score` could
/// print 0.0 at rank 4 and 0.88 at rank 5).
#[test]
fn mode_both_shows_the_key_and_both_models() {
    for fixture in ["leftpad_fig1", "leftpad_fig3", "interproc", "try_catch"] {
        let r = localize_json(&[&dump(fixture), "--no-cfx", "--mode", "both"]);
        let f = localize_json(&[&dump(fixture), "--no-cfx", "--mode", "f"]);
        let fp = localize_json(&[&dump(fixture), "--no-cfx", "--mode", "fp"]);
        let place = |m: &Value, e: &Value| {
            m["ranking"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["file"] == e["file"] && x["line"] == e["line"])
                .map(|x| (x["rank"].as_u64().unwrap(), x["score"].as_f64().unwrap()))
        };
        let mut last = (0, 0);
        for e in r["ranking"].as_array().unwrap() {
            let key = e["key"].as_u64().expect("key");
            let mine = |k: &str| {
                e.get(k)
                    .map(|m| (m["rank"].as_u64().unwrap(), m["score"].as_f64().unwrap()))
            };
            assert_eq!(mine("f"), place(&f, e), "{fixture}: {e}");
            assert_eq!(mine("fp"), place(&fp, e), "{fixture}: {e}");
            let ranks = [mine("f"), mine("fp")].into_iter().flatten().map(|m| m.0);
            assert_eq!(Some(key), ranks.min(), "{fixture}: {e}");
            let order = (key, mine("fp").map_or(u64::MAX, |m| m.0));
            assert!(order >= last, "{fixture}: {e} after {last:?}");
            last = order;
        }
    }
}

#[test]
fn bad_model_parameters_are_rejected() {
    let out = run(&["localize", &dump("leftpad_fig1"), "--p", "1.5"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a probability"));
    let out = run(&["localize", &dump("leftpad_fig1"), "--damping", "1"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `--max-steps` is a budget: the passing trace that does not fit is left out of F∪P, and when
/// not even the failing trace fits the ranking is the spectrum likelihood, never an error; every
/// trace left out is named in the warnings.
#[test]
fn max_steps_leaves_out_what_does_not_fit() {
    let fig1 = dump("leftpad_fig1");
    // 40 steps: testCase1 (passing) 17, testCase2 (failing) 23, neither loop compressible
    let all = localize_json(&[&fig1, "--no-cfx", "--max-steps", "40"]);
    assert_eq!(all["warnings"], serde_json::json!([]));
    let f_only = localize_json(&[&fig1, "--no-cfx", "--max-steps", "30"]);
    let w = f_only["warnings"].to_string();
    assert!(
        w.contains("1 passing trace(s) left out") && w.contains("testCase1"),
        "{w}"
    );
    assert_eq!(
        line(&f_only, 26).0,
        1,
        "the crash stays first in the F model"
    );
    let none = localize_json(&[&fig1, "--no-cfx", "--max-steps", "10"]);
    let w = none["warnings"].to_string();
    assert!(
        w.contains("failing test StringUtils::testCase2 left out"),
        "{w}"
    );
    assert!(w.contains("spectrum likelihood alone"), "{w}");
    assert!(!none["ranking"].as_array().unwrap().is_empty());
}

/// No experiment is planned where a re-run cannot flip: the set-up steps a trace shares with
/// every test (`setup_steps`: import-time code; a flip there breaks collection) and the files
/// the front-end lists in `[rerun] not_flippable` (modules imported before the tracer).
#[test]
fn plan_skips_setup_steps_and_files_that_cannot_be_flipped() {
    let plan = |dir: &std::path::Path| -> Vec<Value> {
        let out = run(&["plan", dir.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("fig3");
    copy_dir(&root().join("fixtures/dumps/leftpad_fig3"), &d);
    let all = plan(&d);
    let steps: Vec<u64> = all.iter().map(|e| e["step"].as_u64().unwrap()).collect();
    assert!(
        steps.iter().any(|&s| s < 11) && steps.contains(&11),
        "{steps:?}"
    );
    let manifest = std::fs::read_to_string(d.join("manifest.toml")).unwrap();
    let with_setup = manifest.replacen(
        "failure_step = 15",
        "failure_step = 15\nsetup_steps = 11",
        1,
    );
    std::fs::write(d.join("manifest.toml"), &with_setup).unwrap();
    let later = plan(&d);
    assert!(!later.is_empty());
    assert!(
        later.iter().all(|e| e["step"].as_u64().unwrap() >= 11),
        "{later:?}"
    );
    // A branch at the failure point of a test that failed with an exception never produced an
    // outcome (its condition raised); a failed assertion there did.
    let at_branch = |kind: &str| {
        manifest
            .replacen("failure_step = 15", "failure_step = 11", 1)
            .replacen(
                "failure_kind = \"assertion\"",
                &format!("failure_kind = \"{kind}\""),
                1,
            )
    };
    for (kind, planned) in [
        ("assertion", true),
        ("exception", false),
        ("timeout", false),
    ] {
        std::fs::write(d.join("manifest.toml"), at_branch(kind)).unwrap();
        let p = plan(&d);
        let has11 = p.iter().any(|e| e["step"] == 11);
        assert_eq!(has11, planned, "{kind}: {p:?}");
        assert!(p.iter().any(|e| e["step"] == 10), "{kind}: {p:?}");
    }
    std::fs::write(
        d.join("manifest.toml"),
        format!(
            "{manifest}\n[rerun]\ncommand = [\"true\"]\nnot_flippable = [\"StringUtils.java\"]\n"
        ),
    )
    .unwrap();
    assert_eq!(plan(&d), Vec::<Value>::new());
}

/// The stdout of `prosecutor ARGS EXTRA...`, which must succeed.
fn stdout_ok(args: &[&str], extra: &[&str]) -> Vec<u8> {
    let all: Vec<&str> = args.iter().chain(extra).copied().collect();
    let out = run(&all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `--top 0` prints every row, as no `--top` does (it printed none).
#[test]
fn top_zero_prints_every_row() {
    let rows = |extra: &[&str]| {
        let d = dump("leftpad_fig1");
        let out = stdout_ok(
            &["localize", d.as_str(), "--no-cfx", "--format", "csv"],
            extra,
        );
        String::from_utf8(out).unwrap().lines().count() - 1
    };
    let all = rows(&[]);
    assert!(all > 3, "{all}");
    assert_eq!(rows(&["--top", "0"]), all);
    assert_eq!(rows(&["--top", "2"]), 2);
}

/// Output cut short by its reader (`prosecutor localize ... | head -1`) ends the run quietly with
/// exit code 0, as ripgrep does, instead of "cannot write output: Broken pipe" and exit 2.
#[test]
fn a_closed_output_pipe_exits_quietly() {
    // The pipe's read end is closed before prosecutor starts, so its first write fails with
    // EPIPE whatever the timing (Python hands the write end over as stdout).
    let script = "import os, subprocess, sys\n\
                  r, w = os.pipe()\n\
                  os.close(r)\n\
                  p = subprocess.run(sys.argv[1:], stdout=w, stderr=subprocess.PIPE)\n\
                  sys.stderr.write(p.stderr.decode())\n\
                  sys.exit(p.returncode)\n";
    let out = std::process::Command::new("python3")
        .args(["-c", script, env!("CARGO_BIN_EXE_prosecutor"), "localize"])
        .arg(dump("leftpad_fig1"))
        .args(["--no-cfx", "--format", "csv"])
        .output()
        .expect("python3 runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        !err.contains("Broken pipe") && !err.contains("panicked"),
        "{err}"
    );
}

/// `--cfx-per-statement N` (the `prosecutor-cfx-spread` variant's unit) keeps the plan's order
/// but takes at most N instances of one statement: Fig. 6's loop condition is evaluated three
/// times in the failing trace, and all three are planned without a limit.
#[test]
fn plan_takes_at_most_n_instances_of_one_statement() {
    let plan = |extra: &[&str]| -> Vec<(String, u64)> {
        let d = dump("while_true_fig6");
        serde_json::from_slice::<Vec<Value>>(&stdout_ok(&["plan", d.as_str()], extra))
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["stmt"].as_str().unwrap().to_owned(),
                    e["occurrence"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let all = plan(&[]);
    let count = |p: &[(String, u64)], s: &str| p.iter().filter(|(x, _)| x == s).count();
    let (busiest, _) = all
        .iter()
        .max_by_key(|(s, _)| count(&all, s))
        .cloned()
        .unwrap();
    assert_eq!(count(&all, &busiest), 3, "{all:?}");
    for n in [1, 2] {
        let capped = plan(&["--cfx-per-statement", &n.to_string()]);
        assert_eq!(count(&capped, &busiest), n, "{capped:?}");
        // the first n of that statement, in the unlimited plan's order, and nothing else dropped
        let mut seen = 0;
        let want: Vec<(String, u64)> = all
            .iter()
            .filter(|(s, _)| {
                if *s == busiest {
                    seen += 1;
                    seen <= n
                } else {
                    true
                }
            })
            .cloned()
            .collect();
        assert_eq!(capped, want, "{all:?}");
    }
}
