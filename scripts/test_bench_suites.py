"""Runs scripts/bench_suites.py once on fixtures/python/leftpad_fig1.

python3 -m pytest -q scripts/test_bench_suites.py   (needs a built prosecutor binary:
$PROSECUTOR_BIN, else target/release or target/debug; `cargo test` runs it with the binary it
built, tests/it/python_tracer_suite.rs)
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "bench_suites.py"
FIXTURE = ROOT / "fixtures" / "python" / "leftpad_fig1"


def find_binary():
    if os.environ.get("PROSECUTOR_BIN"):
        return Path(os.environ["PROSECUTOR_BIN"])
    for profile in ("release", "debug"):
        p = ROOT / "target" / profile / "prosecutor"
        if p.is_file():
            return p
    pytest.fail("no prosecutor binary: set PROSECUTOR_BIN or run `cargo build --release` (or "
                "`cargo build`) first; looked for target/release/prosecutor and target/debug/prosecutor")


def write_manifest(path):
    path.write_text(
        "[[case]]\n"
        'name = "leftpad_fig1"\n'
        f"dir = {json.dumps(str(FIXTURE))}\n"
        'src = "src"\n'
        'test = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]\n'
        'faulty = ["leftpad.py:9"]\n'
    )


def test_one_run_measures_all_three_steps(tmp_path):
    binary = find_binary()
    manifest, out = tmp_path / "m.toml", tmp_path / "out.json"
    write_manifest(manifest)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(manifest), "--bin", str(binary), "--runs", "1",
         "--json", str(out)],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    assert [c["name"] for c in report["cases"]] == ["leftpad_fig1"]
    case = report["cases"][0]
    assert case["error"] is None
    medians = {s: case[s]["median_s"] for s in ("plain", "trace", "localize")}
    assert all(m > 0 for m in medians.values()), medians
    assert case["trace_over_plain"] == pytest.approx(medians["trace"] / medians["plain"])
    assert case["localize_over_plain"] == pytest.approx(medians["localize"] / medians["plain"])
    assert case["plain"]["exit_codes"] == [1]  # the fixture's test fails: that is its bug
    assert case["trace"]["peak_rss_kb"] > 0 and case["localize"]["peak_rss_kb"] > 0
    assert case["localize"]["median_experiments"] >= 1  # the fixture plans experiments
    assert "| leftpad_fig1 |" in proc.stdout


def test_missing_dir_is_reported_not_skipped(tmp_path):
    binary = find_binary()
    manifest = tmp_path / "m.toml"
    manifest.write_text('[[case]]\nname = "gone"\ndir = "nowhere"\nsrc = "src"\n'
                        'test = ["python3", "-c", "pass"]\nfaulty = ["a.py:1"]\n')
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(manifest), "--bin", str(binary), "--runs", "1"],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "| gone |" in proc.stdout and "is not a directory" in proc.stdout


def test_a_reference_binary_runs_interleaved(tmp_path):
    """--ref: the reference binary's trace and localize run in every round too, and the report
    gives both sets of medians and the new / reference ratios (here a binary against itself)."""
    binary = find_binary()
    manifest, out = tmp_path / "m.toml", tmp_path / "out.json"
    write_manifest(manifest)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(manifest), "--bin", str(binary), "--ref", str(binary),
         "--runs", "1", "--json", str(out)],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    case = report["cases"][0]
    assert report["ref"] == str(binary.resolve())
    for s in ("ref-trace", "ref-localize"):
        assert case[s]["ok"] and case[s]["median_s"] > 0, case[s]
    assert case["trace_over_ref"] == pytest.approx(case["trace"]["median_s"] / case["ref-trace"]["median_s"])
    assert case["ref_localize_over_plain"] == pytest.approx(
        case["ref-localize"]["median_s"] / case["plain"]["median_s"])
    assert case["ref-localize"]["median_experiments"] >= 1
    assert "trace new / reference" in proc.stdout and "| ref trace s |" in proc.stdout
    assert report["summary"]["localize_over_ref"]["n"] == 1
