//! The warm experiment runner (issue 13 §1) end to end: `localize` with its experiments run by
//! the dump's `[rerun] serve` (one test session, a forked child per run) gives what the cold
//! runner (`[rerun] command`, a process per run) gives; old dumps and broken servers run cold.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::*;
use crate::eval::require_pytest;

/// `localize DUMP --format json OPTIONS` (a dump traced by the Python front-end).
fn localize_dump(dump: &Path, options: &[&str]) -> Output {
    bin()
        .args(["localize", dump.to_str().unwrap(), "--format", "json"])
        .args(options)
        .env_remove("PROSECUTOR_CFX_RUNNER")
        .output()
        .unwrap()
}

fn json_of(o: &Output) -> Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// (test, stmt, occurrence, outcome, detail) of every experiment, and each one's runner.
fn experiments(r: &Value) -> (Vec<Value>, Vec<String>) {
    let ex = r["experiments"].as_array().unwrap();
    let what = ex
        .iter()
        .map(|e| {
            serde_json::json!([
                e["test"],
                e["stmt"],
                e["occurrence"],
                e["outcome"],
                e["detail"]
            ])
        })
        .collect();
    let how = ex
        .iter()
        .map(|e| e["runner"].as_str().unwrap_or("").to_owned())
        .collect();
    (what, how)
}

fn ranking(r: &Value) -> Vec<Value> {
    let rows = r["ranking"].as_array().unwrap();
    rows.iter()
        .map(|e| serde_json::json!([e["file"], e["line"], e["rank"]]))
        .collect()
}

/// Traces a copy of `fixtures/python/leftpad_fig3` into `DIR/dump` and localizes it with the
/// warm runner (forced: an error if it cannot start); the report and stderr.
fn traced_warm(dir: &Path) -> (Value, String) {
    let project = dir.join("proj");
    copy_dir(&root().join("fixtures/python/leftpad_fig3"), &project);
    let o = localize_python(
        &project,
        &dir.join("dump"),
        &[
            "--format",
            "json",
            "--cfx-runner",
            "warm",
            "--cfx-timeout",
            "120",
        ],
    )
    .env_remove("PROSECUTOR_CFX_RUNNER")
    .output()
    .unwrap();
    (json_of(&o), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// The same experiments, outcomes, details and ranking warm and cold; stderr says which ran.
#[test]
fn warm_runner_gives_the_cold_runners_results() {
    require_pytest();
    let dir = tempfile::tempdir().unwrap();
    let (warm, stderr) = traced_warm(dir.path());
    // the server was started from the traced run's preview, which is gone from the dump
    assert!(
        stderr
            .contains("counterfactual experiments: warm runner (forked, started while tracing), "),
        "{stderr}"
    );
    assert!(!dir.path().join("dump/.prosecutor-serve.json").exists());
    let cold_out = localize_dump(
        &dir.path().join("dump"),
        &["--cfx-runner", "cold", "--cfx-timeout", "120"],
    );
    let cold = json_of(&cold_out);
    let cold_err = String::from_utf8_lossy(&cold_out.stderr);
    assert!(
        cold_err.contains("counterfactual experiments: cold runner (a process per run), "),
        "{cold_err}"
    );
    let (w, w_how) = experiments(&warm);
    let (c, c_how) = experiments(&cold);
    assert!(w.len() >= 3, "{warm}");
    assert!(
        w.iter().any(|e| e[3] == "pass"),
        "a flip that passes: {w:?}"
    );
    assert_eq!(w, c);
    assert!(w_how.iter().all(|r| r == "warm"), "{w_how:?}");
    assert!(c_how.iter().all(|r| r == "cold"), "{c_how:?}");
    assert_eq!(ranking(&warm), ranking(&cold));
    assert_eq!(warm["warnings"], cold["warnings"]);
}

/// Writes a copy of the traced dump `from` to `to` whose `[rerun] serve` line is `serve`
/// (`None`: no serve command, a dump written before the warm runner).
fn with_serve(from: &Path, to: &Path, serve: Option<&str>) {
    copy_dir(from, to);
    let m = to.join("manifest.toml");
    let text = std::fs::read_to_string(&m).unwrap();
    let lines: Vec<String> = text
        .lines()
        .filter_map(|l| match (l.starts_with("serve = "), serve) {
            (false, _) => Some(l.to_owned()),
            (true, Some(s)) => Some(format!("serve = {s}")),
            (true, None) => None,
        })
        .collect();
    assert_ne!(
        lines.join("\n"),
        text.trim_end(),
        "the dump has a serve line"
    );
    std::fs::write(&m, lines.join("\n") + "\n").unwrap();
}

/// An older dump (no serve command) runs cold under auto; `--cfx-runner warm` refuses it. A
/// warm runner that does not start, or dies after its handshake, leaves the experiments to the
/// cold runner, and a warning (stderr and output) says why.
#[test]
fn old_dumps_and_failing_servers_run_cold() {
    require_pytest();
    let dir = tempfile::tempdir().unwrap();
    let (warm, _) = traced_warm(dir.path());
    let (want, _) = experiments(&warm);
    let dump = dir.path().join("dump");
    let old = dir.path().join("old");
    with_serve(&dump, &old, None);
    let o = localize_dump(&old, &["--cfx-runner", "warm"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("has no serve command"), "{err}");
    let o = localize_dump(&old, &["--cfx-timeout", "120"]);
    let r = json_of(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cold runner") && err.contains("no serve command"),
        "{err}"
    );
    assert_eq!(
        experiments(&r),
        (want.clone(), vec!["cold".to_owned(); want.len()])
    );
    for (name, serve, why) in [
        (
            "nostart",
            r#"["sh", "-c", "echo no fork here >&2; exit 4"]"#,
            "did not start",
        ),
        (
            "dies",
            r#"["sh", "-c", "echo '{\"ready\": true}'; read x; exit 1"]"#,
            "the warm runner stopped: ",
        ),
    ] {
        let d = dir.path().join(name);
        with_serve(&dump, &d, Some(serve));
        let o = localize_dump(&d, &["--cfx-timeout", "120"]);
        let r = json_of(&o);
        let (got, how) = experiments(&r);
        assert_eq!(got, want, "{name}");
        assert!(
            how.iter()
                .all(|h| h.starts_with("cold: ") && h.contains(why)),
            "{how:?}"
        );
        let warning = format!("{} counterfactual experiments ran cold", want.len());
        assert!(
            r["warnings"].to_string().contains(&warning),
            "{}",
            r["warnings"]
        );
        assert!(String::from_utf8_lossy(&o.stderr).contains(why), "{name}");
    }
}
