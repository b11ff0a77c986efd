"""scripts/explain_eval.py: the command it runs per case and the summary it makes of the
answers, with a stand-in for `prosecutor` that records its arguments and answers as `explain`
would (the real command is tested in tests/it/explain.rs)."""
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "explain_eval.py"

FAKE = r'''#!/usr/bin/env python3
import json, os, sys
with open(os.environ["FAKE_LOG"], "a") as fh:
    fh.write(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd()}) + "\n")
if "--src" in sys.argv and sys.argv[sys.argv.index("--src") + 1] == "broken":
    sys.stderr.write("prosecutor: error: tracing failed\n")
    sys.exit(2)
if sys.argv[1] == "trace":
    print(sys.argv[sys.argv.index("--out") + 1])
    sys.exit(0)
regression = "--reference" in sys.argv
causal = {"mode": "regression" if regression else "patch", "length": 3, "complete": True,
          "runs": 5, "reaches_fault": regression}
found = "--faulty" in sys.argv and sys.argv[sys.argv.index("--faulty") + 1] == "a.py:3"
report = [{"file": "pkg/a.py", "line": 3, "code": "if x:", "value": True, "failing_value": False}]
print(json.dumps({
    "nearest_successful_run": report if found else [],
    "path_generation": {"found": found, "size": 1 if found else 0, "runs": 4,
                        "score": 0.85 if found else 0.0, "bucket": 80 if found else 0},
    "causal": causal if (found or regression) else None,
    "warnings": [],
}))
'''


def write(tmp, text):
    (tmp / "cases.toml").write_text(text)
    fake = tmp / "fake-prosecutor"
    fake.write_text(FAKE)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    (tmp / "proj" / "src").mkdir(parents=True)
    (tmp / "proj" / "src" / "a.py").write_text("x = 1\n")
    return fake


def run(tmp, fake, *extra):
    env = dict(os.environ, FAKE_LOG=str(tmp / "log.jsonl"))
    return subprocess.run([sys.executable, str(SCRIPT), str(tmp / "cases.toml"), "--out", str(tmp / "out"),
                           "--bin", str(fake), *extra], capture_output=True, text=True, env=env)


CASES = '''
[[case]]
name = "one"
dir = "proj"
src = "src/a.py"
test = ["python3", "-m", "pytest", "-q"]
faulty = ["a.py:3"]

[[case]]
name = "two"
dir = "proj"
src = "src"
test = ["python3", "-m", "pytest"]
faulty = ["a.py:9"]
timeout = 2

[[case]]
name = "three"
dir = "proj"
src = "broken"
test = ["python3"]
faulty = ["a.py:1"]
'''


def test_commands_rows_and_summary(tmp_path):
    fake = write(tmp_path, CASES)
    p = run(tmp_path, fake, "--max-runs", "7", "--explain-arg=--force-loops")
    assert p.returncode == 0, p.stderr
    calls = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    first = calls[0]["argv"]
    # a file as src: its folder is the code under analysis; the case's command after --
    assert first[first.index("--src") + 1] == "src"
    assert first[first.index("--") + 1:] == ["python3", "-m", "pytest", "-q"]
    assert first[first.index("--max-runs") + 1] == "7" and "--no-cfx" in first
    assert first.index("--force-loops") < first.index("--")
    assert calls[0]["cwd"] == str((tmp_path / "proj").resolve())
    assert calls[1]["argv"][calls[1]["argv"].index("--test-timeout") + 1] == "2"
    rows = (tmp_path / "out" / "explain.tsv").read_text().splitlines()
    header = rows[0].split("\t")
    one, two, three = (dict(zip(header, r.split("\t"))) for r in rows[1:])
    assert (one["found"], one["score"], one["bucket"], one["report_has_fault"]) == ("True", "0.85", "80", "True")
    assert (two["found"], two["score"], two["report_has_fault"]) == ("False", "0.0", "False")
    assert three["error"] == "prosecutor: error: tracing failed"
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| nearest successful run found | 1 |" in summary
    assert "| score >= 80 % (of all cases) | 1 (33.3 %) |" in summary
    assert "| 80-89 % | 1 |" in summary and "| 0-9 % | 2 |" in summary
    assert json.loads((tmp_path / "out" / "three.json").read_text())["error"].endswith("tracing failed")


def test_cases_subset(tmp_path):
    fake = write(tmp_path, CASES)
    p = run(tmp_path, fake, "--cases", "two")
    assert p.returncode == 0, p.stderr
    assert len((tmp_path / "log.jsonl").read_text().splitlines()) == 1
    assert "| cases | 1 |" in (tmp_path / "out" / "summary.md").read_text()


REGRESSION = CASES.replace('faulty = ["a.py:9"]', 'faulty = ["a.py:9"]\nreference_src = "fixed/a.py"\n'
                           'reference_test = ["python3", "-m", "pytest", "--fixed"]')


def test_regression_traces_the_fixed_version_first(tmp_path):
    fake = write(tmp_path, REGRESSION)
    (tmp_path / "proj" / "fixed").mkdir()
    (tmp_path / "proj" / "fixed" / "a.py").write_text("x = 2\n")
    p = run(tmp_path, fake, "--regression", "--cases", "one,two")
    assert p.returncode == 0, p.stderr
    calls = [json.loads(line)["argv"] for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    # case one has no reference: patch mode; case two is traced first, then explained against it
    assert calls[0][0] == "explain" and "--reference" not in calls[0]
    trace, explain = calls[1], calls[2]
    assert trace[:2] == ["trace", "--passing-ok"]
    assert trace[trace.index("--src") + 1] == "fixed"
    assert trace[trace.index("--") + 1:] == ["python3", "-m", "pytest", "--fixed"]
    ref = explain[explain.index("--reference") + 1]
    assert ref == trace[trace.index("--out") + 1] and ref.endswith("reference/two")
    rows = (tmp_path / "out" / "explain.tsv").read_text().splitlines()
    header = rows[0].split("\t")
    one, two = (dict(zip(header, r.split("\t"))) for r in rows[1:])
    assert (one["causal_mode"], one["causal_reaches_fault"]) == ("patch", "False")
    assert (two["causal_mode"], two["causal_length"], two["causal_reaches_fault"]) == ("regression", "3", "True")
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| causal path computed | 2 (patch, regression) |" in summary
    assert "| causal path contains a faulty line | 1 (50.0 % of paths, 50.0 % of cases) |" in summary
