"""The plain run alongside the traced run (issue 13 §3): on a machine with two CPUs the driver
starts the plain run (PROSECUTOR_MODE=plain) and the traced run at once instead of one after the
other. The plain run streams each test's result (PROSECUTOR_PLAIN_STREAM); the traced run gives
a test whose plain result is not in yet the base time limit and, when that runs out, waits for
the result and extends the limit to what it would have been; before writing the dump it waits
for the driver's marker (PROSECUTOR_PLAIN_DONE). The dump must be the one a plain run *before*
gives: same limits, same tests left out, same facts."""

import json
import os
import subprocess
import sys
import threading
import time

from test_defects import CONFTEST, PKG_PARENT, Dump, base_env, write
from test_plain_run import LIB, SLOW, traced_after_plain


def alongside(root, timeout, plain_delay=0.0, plain_fails=False, extra=None):
    """Runs the suite as the driver does with the plain run alongside: both processes at once
    (the plain one `plain_delay` s later), the marker written when the plain one has ended."""
    dump = root / "dump"
    dump.mkdir(exist_ok=True)
    plain_out, stream, done = dump / ".prosecutor-plain.json", dump / ".prosecutor-plain.stream", dump / ".prosecutor-plain.done"
    args = [sys.executable, "-m", "pytest", "-q", "tests"]
    common = base_env()
    common["PYTHONPATH"] = PKG_PARENT
    common["PYTEST_ADDOPTS"] = "-p no:cacheprovider -p prosecutor_tracer.plugin"
    common.update({"PROSECUTOR_SRC": str(root / "src"), "PROSECUTOR_TEST_TIMEOUT": timeout})
    penv = dict(common, PROSECUTOR_MODE="plain", PROSECUTOR_PLAIN_OUT=str(plain_out),
                PROSECUTOR_PLAIN_TIMEOUT="60", PROSECUTOR_PLAIN_STREAM=str(stream))
    tenv = dict(common, PROSECUTOR_MODE="trace", PROSECUTOR_OUT=str(dump), PROSECUTOR_TRACE_ALL="0",
                PROSECUTOR_COMMAND=json.dumps(args), PROSECUTOR_PLAIN=str(plain_out),
                PROSECUTOR_PLAIN_STREAM=str(stream), PROSECUTOR_PLAIN_DONE=str(done))
    tenv.update(extra or {})

    def plain():
        time.sleep(plain_delay)
        t0 = time.monotonic()
        if not plain_fails:     # (a plain run that dies before its first test streams nothing)
            subprocess.run(args, cwd=root, env=penv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=120)
        if plain_fails:
            marker = {"ok": False, "error": "it wrote no results (exit status 3)"}
        else:
            marker = {"ok": True, "seconds": round(time.monotonic() - t0, 3), "tests": 2}
        (dump / "done.tmp").write_text(json.dumps(marker))
        os.replace(dump / "done.tmp", done)

    th = threading.Thread(target=plain)
    th.start()
    p = subprocess.run(args, cwd=root, env=tenv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=120)
    th.join()
    return Dump(dump, p)


def test_a_limit_waits_for_the_plain_result_and_is_extended(tmp_path):
    """test_slow_failure sleeps 0.6 s, past the 0.5 s base limit; the plain run starts 1.5 s late,
    so its result is not in when the base limit runs out: the traced run waits for it and lets
    the test go on to its own failure, with the raised limit in rerun.json, as after a plain
    run before (test_plain_run.py)."""
    write(tmp_path, SLOW)
    d = alongside(tmp_path, "0.5", plain_delay=1.5)
    assert d.status["ok"], d.proc.stdout
    d.check()
    t = d.test("test_slow_failure")
    assert t["failure_kind"] == "assertion", t
    assert not any("stopped" in w for w in d.manifest["notes"]["warnings"]), d.manifest["notes"]["warnings"]
    with open(os.path.join(d.d, "rerun.json")) as fh:
        rr = json.load(fh)
    assert rr["tests"]["tests/test_slow.py::test_slow_failure"]["timeout"] > 0.6, rr["tests"]
    notes = d.manifest["notes"]
    assert notes["plain_run"] is True and notes["plain_run_s"] > 0


def _facts(d):
    out = {}
    for name in sorted(os.listdir(d.d)):
        if name.endswith(".facts") and name != "heap.facts":
            with open(os.path.join(d.d, name)) as fh:
                out[name] = fh.read()
    return out


def _tests(d):
    keep = ("id", "trace", "outcome", "failure_step", "failure_kind", "plain_outcome")
    return [{k: t[k] for k in keep if k in t} for t in d.manifest["test"]]


SAME = {
    "src/calc.py": LIB,
    "tests/conftest.py": CONFTEST,
    "tests/test_calc.py": """
        import sys

        from calc import total


        def test_genuine():
            assert total([1, 2]) == 3


        def test_passes():
            assert total([]) >= 0


        def test_fails_only_under_tracing():
            assert total([5]) > 0
            assert sys.gettrace() is None      # a tracer is installed only when traced
        """,
}


def test_the_dump_is_the_one_a_plain_run_before_gives(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for r in (a, b):
        r.mkdir()
        write(r, SAME)
    _, before = traced_after_plain(a, "120")
    now = alongside(b, "120")
    assert before.status["ok"] and now.status["ok"], now.proc.stdout
    assert _facts(before) == _facts(now)
    assert _tests(before) == _tests(now)
    for k in ("plain_run", "tracing_changed", "warnings", "plain_timeout_factor"):
        assert before.manifest["notes"].get(k) == now.manifest["notes"].get(k), k
    assert now.manifest["notes"]["tracing_changed"] == ["tests/test_calc.py::test_fails_only_under_tracing"]


def test_a_plain_run_without_results_is_a_warning(tmp_path):
    write(tmp_path, SLOW)
    d = alongside(tmp_path, "0.5", plain_delay=1.0, plain_fails=True)
    assert d.status["ok"], d.proc.stdout
    notes = d.manifest["notes"]
    assert notes["plain_run"] is False
    assert "exit status 3" in notes["plain_run_error"]
    assert any(w.startswith("the plain run") and "traced without it" in w for w in notes["warnings"])
    # the base limit ran out while the plain run was still going; it ended with no result: the
    # test was stopped at the base limit, as without a plain run
    assert d.test("test_slow_failure")["failure_kind"] == "timeout"
