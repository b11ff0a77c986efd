"""The plain pre-run (issue 20 §2 and §7, issue 12 §1.3): the driver runs the test command once
without tracing (PROSECUTOR_MODE=plain) to learn each test's outcome and duration; the traced
run (PROSECUTOR_PLAIN) then leaves out the tests whose outcome tracing changes and gives a slow
test a time limit derived from its plain duration, so that it fails at its own failure and not
where the tracer cut it."""

import json
import os
import subprocess
import sys
import time

from test_defects import CONFTEST, PKG_PARENT, base_env, trace, write


def plain_run(root, timeout="10", args=("tests",), extra=None):
    """The driver's plain pre-run: same environment as the traced run, PROSECUTOR_MODE=plain."""
    env = base_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)   # the plain run itself must not write __pycache__
    env["PYTHONPATH"] = PKG_PARENT
    env["PYTEST_ADDOPTS"] = "-p no:cacheprovider -p prosecutor_tracer.plugin"
    out = root / "plain.json"
    env.update({"PROSECUTOR_MODE": "plain", "PROSECUTOR_PLAIN_OUT": str(out), "PROSECUTOR_PLAIN_TIMEOUT": timeout,
                "PROSECUTOR_SRC": str(root / "src")})
    env.update(extra or {})
    subprocess.run([sys.executable, "-m", "pytest", "-q", *args], cwd=root, env=env,
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    with open(out) as fh:
        return out, json.load(fh)


def traced_after_plain(root, timeout, extra=None, plain_extra=None):
    path, data = plain_run(root, extra=plain_extra)
    env = {"PROSECUTOR_PLAIN": str(path), "PROSECUTOR_PLAIN_WALL": "1.5", "PROSECUTOR_TEST_TIMEOUT": timeout,
           "PROSECUTOR_TRACE_ALL": "0"}
    env.update(extra or {})
    return data, trace(root, extra=env)


LIB = """
    def total(xs):
        s = 0
        for x in xs:
            s += x
        return s + 1          # the fault
    """

CHANGED = {
    "src/calc.py": LIB,
    "tests/conftest.py": CONFTEST,
    "tests/test_calc.py": """
        import sys
        import time

        from calc import total


        def test_genuine():
            assert total([1, 2]) == 3


        def test_passes():
            assert total([]) >= 0


        def test_fails_only_under_tracing():
            assert total([5]) > 0
            assert sys.gettrace() is None      # a tracer is installed only when traced


        def test_wall_clock():
            t0 = time.perf_counter()
            for _ in range(3000):
                total([1, 2, 3, 4, 5, 6, 7, 8])
            assert time.perf_counter() - t0 < 0.05   # ~5 ms plainly, much slower when traced
        """,
}


def test_a_test_that_fails_only_under_tracing_is_left_out(tmp_path):
    write(tmp_path, CHANGED)
    data, d = traced_after_plain(tmp_path, "120")
    outcomes = {k.rsplit("::", 1)[1]: v["outcome"] for k, v in data["tests"].items()}
    assert outcomes == {"test_genuine": "fail", "test_passes": "pass", "test_fails_only_under_tracing": "pass",
                        "test_wall_clock": "pass"}, data
    assert d.status["ok"], d.proc.stdout
    d.check()
    ids = d.tests()
    gone = [i for i in ids if i.endswith(("test_fails_only_under_tracing", "test_wall_clock"))]
    assert gone == [], ids
    assert ids["tests/test_calc.py::test_genuine"]["outcome"] == "fail"
    assert ids["tests/test_calc.py::test_passes"]["outcome"] == "pass"
    # neither the model nor the spectrum may count them: no trace, no coverage
    assert {r[0] for r in d.rows("coverage.facts")} == {"tests/test_calc.py::test_genuine",
                                                        "tests/test_calc.py::test_passes"}
    notes = d.manifest["notes"]
    assert sorted(notes["tracing_changed"]) == ["tests/test_calc.py::test_fails_only_under_tracing",
                                                "tests/test_calc.py::test_wall_clock"], notes
    assert notes["plain_run"] is True and notes["plain_run_s"] == 1.5
    w = [x for x in notes["warnings"] if "fail only under tracing" in x]
    assert len(w) == 1 and w[0].startswith("2 test(s) fail only under tracing and are left out"), notes["warnings"]
    assert "test_fails_only_under_tracing" in w[0] and "test_wall_clock" in w[0]
    assert any("fail only under tracing" in x for x in d.status["warnings"])
    assert (d.status["failing"], d.status["passing"]) == (1, 1)
    assert not (tmp_path / "src" / "__pycache__").exists()


def test_they_are_kept_when_no_other_test_fails(tmp_path):
    files = dict(CHANGED)
    files["src/calc.py"] = LIB.replace("s + 1          # the fault", "s")
    write(tmp_path, files)
    data, d = traced_after_plain(tmp_path, "120")
    assert [v["outcome"] for v in data["tests"].values()].count("fail") == 0, data
    assert d.status["ok"], d.proc.stdout
    t = d.test("test_fails_only_under_tracing")
    assert t["outcome"] == "fail" and t["plain_outcome"] == "pass", t
    assert d.manifest["notes"].get("tracing_changed_kept") is True
    w = [x for x in d.manifest["notes"]["warnings"] if "only under tracing" in x]
    assert len(w) == 1 and "but are kept" in w[0] and "leaving them out would leave no failing test" in w[0], w


SLOW = {
    "src/calc.py": LIB,
    "tests/conftest.py": CONFTEST,
    "tests/test_slow.py": """
        import time

        from calc import total


        def test_slow_failure():
            time.sleep(0.6)                       # longer than the 0.5 s limit
            assert total([1, 2]) == 3


        def test_fast():
            assert total([]) >= 0
        """,
}


def test_a_slow_failing_test_is_traced_to_its_own_failure(tmp_path):
    write(tmp_path, SLOW)
    # without the plain run, the tracer cuts it: a timeout at the sleep
    d0 = trace(tmp_path, extra={"PROSECUTOR_TEST_TIMEOUT": "0.5"})
    assert d0.test("test_slow_failure")["failure_kind"] == "timeout"
    data, d = traced_after_plain(tmp_path, "0.5")
    p = data["tests"]["tests/test_slow.py::test_slow_failure"]
    assert p["outcome"] == "fail" and p["duration_s"] >= 0.6, p
    assert d.status["ok"], d.proc.stdout
    d.check()
    t = d.test("test_slow_failure")
    assert t["failure_kind"] == "assertion", t
    assert "plain_outcome" not in t
    steps = d.steps(t["trace"])
    stmts = d.stmts()
    assert stmts[steps[t["failure_step"]][2]][5].startswith("assert total"), stmts[steps[t["failure_step"]][2]]
    assert not any("stopped" in w for w in d.manifest["notes"]["warnings"]), d.manifest["notes"]["warnings"]
    # the flip re-runs get the same raised limit
    with open(os.path.join(d.d, "rerun.json")) as fh:
        rr = json.load(fh)
    assert rr["tests"]["tests/test_slow.py::test_slow_failure"]["timeout"] > 0.6, rr["tests"]
    r = d.flip(t["id"], "", 0, tmp_path / "control.json", base_env())
    assert r["outcome"] == "fail" and "AssertionError" in r["detail"], r


def test_a_failing_test_stopped_by_the_tracer_says_so(tmp_path):
    files = dict(SLOW)
    files["tests/test_slow.py"] = """
        from calc import total


        def test_slow_failure():
            # a fixed amount of work (a few hundredths of a second plainly) that tracing makes
            # many times slower whatever the machine's load: the limit (0.1 s) always cuts it
            for _ in range(50_000):
                total([1, 2, 3])
            assert total([1, 2]) == 3
        """
    write(tmp_path, files)
    # factor 1: the limit is the plain duration, which tracing exceeds
    _, d = traced_after_plain(tmp_path, "0.1", extra={"PROSECUTOR_PLAIN_FACTOR": "1"})
    assert d.status["ok"], d.proc.stdout
    t = d.test("test_slow_failure")
    assert t["outcome"] == "fail" and t["failure_kind"] == "timeout", t
    assert t["plain_outcome"] == "fail", t
    assert t["trace"]
    w = [x for x in d.manifest["notes"]["warnings"] if "stopped by the tracer" in x]
    assert len(w) == 1 and "not at the tests' failures" in w[0] and "test_slow_failure" in w[0], w


def test_the_plain_run_classifies_outcomes_as_the_traced_run(tmp_path):
    write(tmp_path, {
        "src/calc.py": LIB,
        "tests/conftest.py": CONFTEST + "import pytest\n\n@pytest.fixture\ndef broken():\n    raise RuntimeError('x')\n",
        "tests/test_kinds.py": """
            import time
            import unittest

            import pytest


            def test_pass():
                pass


            def test_fail():
                assert 1 == 2


            def test_error():
                raise KeyError(1)


            def test_setup(broken):
                pass


            @pytest.mark.skip
            def test_skip():
                pass


            @pytest.mark.xfail
            def test_xfail():
                assert 0


            def test_hangs():
                time.sleep(30)


            class T(unittest.TestCase):
                def test_subtest(self):
                    for i in (1, 2):
                        with self.subTest(i=i):
                            self.assertEqual(i, 1)
            """,
    })
    _, data = plain_run(tmp_path, timeout="1")
    got = {k.rsplit("::", 1)[1]: (v["outcome"], v.get("failure_kind")) for k, v in data["tests"].items()}
    assert got == {"test_pass": ("pass", None), "test_fail": ("fail", "assertion"),
                   "test_error": ("fail", "exception"), "test_setup": ("fail", "setup"),
                   "test_skip": ("skip", None), "test_xfail": ("skip", None), "test_hangs": ("timeout", None),
                   "test_subtest": ("fail", "assertion")}, got
    assert 0.9 < data["tests"]["tests/test_kinds.py::test_hangs"]["duration_s"] < 5
    assert data["wall_s"] >= data["startup_s"] >= 0
    # nothing written by the tracer
    assert not (tmp_path / "dump").exists()


def test_an_unreadable_plain_file_is_a_warning(tmp_path):
    write(tmp_path, SLOW)
    d = trace(tmp_path, extra={"PROSECUTOR_PLAIN": str(tmp_path / "missing.json"), "PROSECUTOR_TEST_TIMEOUT": "0.5"})
    assert d.status["ok"], d.proc.stdout
    assert d.manifest["notes"]["plain_run"] is False
    assert any(w.startswith("the plain run") and "traced without it" in w for w in d.manifest["notes"]["warnings"])
    assert d.test("test_slow_failure")["failure_kind"] == "timeout"


HANGS = {
    "src/bits.py": """
        def bitcount(n):
            count = 0
            while n:
                n ^= n - 1        # the fault (n &= n - 1): never reaches 0 from an odd n > 1
                count += 1
            return count
        """,
    "tests/conftest.py": CONFTEST,
    "tests/test_bits.py": """
        from bits import bitcount


        def test_hangs():
            assert bitcount(127) == 7


        def test_zero():
            assert bitcount(0) == 0
        """,
}


def test_a_test_that_hangs_plainly_is_traced_for_the_hang_limit_only(tmp_path):
    write(tmp_path, HANGS)
    path, data = plain_run(tmp_path, timeout="1")
    assert data["tests"]["tests/test_bits.py::test_hangs"]["outcome"] == "timeout", data
    env = {"PROSECUTOR_PLAIN": str(path), "PROSECUTOR_PLAIN_WALL": "1.5", "PROSECUTOR_TEST_TIMEOUT": "60",
           "PROSECUTOR_TRACE_ALL": "0"}
    d = trace(tmp_path, extra=env)
    assert d.status["ok"], d.proc.stdout
    d.check()
    t = d.test("test_hangs")
    # stopped at HANG_STEPS steps, not at the flat 60 s
    assert t["outcome"] == "fail" and t["failure_kind"] == "timeout", t
    assert t["duration_ms"] < 10_000, t
    steps = len(d.steps(t["trace"]))
    assert 100_000 <= steps < 1_000_000, steps   # HANG_STEPS, polled every 20 ms
    w = [x for x in d.manifest["notes"]["warnings"] if "hang" in x]
    assert len(w) == 1 and "100000 steps only (at most 60 s" in w[0] and "test_hangs" in w[0], d.manifest["notes"]["warnings"]
    with open(os.path.join(d.d, "rerun.json")) as fh:
        rr = json.load(fh)
    assert rr["tests"]["tests/test_bits.py::test_hangs"]["steps"] == steps, rr["tests"]
    # its flip re-runs run past the steps its trace reached, whatever the time that takes: the
    # last evaluation of the loop's condition in the trace is reached and flipped
    cond = "bits.py:4:4"       # while n:
    at = {r[1] for r in d.rows("branch.facts") if r[0] == t["trace"]}
    last = sum(1 for r in d.steps(t["trace"]) if r[1] in at and r[2] == cond)
    assert last > 1000, last
    t0 = time.monotonic()
    r = d.flip(t["id"], cond, last, tmp_path / "flip.json", base_env())
    took = time.monotonic() - t0
    assert r["flipped"] and r["outcome"] == "fail" and "AssertionError" in r["detail"], r
    assert took < 30, took     # a new process: start-up, collection, then the steps (was up to 60 s)
    r = d.flip(t["id"], "", 0, tmp_path / "control.json", base_env())
    assert r["outcome"] == "fail" and "steps" in r["detail"], r


def test_the_forked_plain_pass_stops_a_hang_at_its_limit(tmp_path):
    """The plain pass forked after collection (PROSECUTOR_PLAIN_FORK) runs the app modules the
    traced run imported instrumented: its branch wrappers must not be Python calls there, or the
    profiler's allowance for profiled calls (_profiler_extension) takes the endless loop of
    `test_hangs`, one wrapper call per iteration, for call-heavy code and lets it run up to six
    times the limit (QuixBugs bitcount: 30 s per test where the limit was 5 s)."""
    write(tmp_path, HANGS)
    out = tmp_path / "plain.json"
    env = {"PROSECUTOR_PLAIN_FORK": "1", "PROSECUTOR_PLAIN_OUT": str(out), "PROSECUTOR_PLAIN_TIMEOUT": "1",
           "PROSECUTOR_TEST_TIMEOUT": "60", "PROSECUTOR_TRACE_ALL": "0"}
    d = trace(tmp_path, extra=env)
    assert d.status["ok"], d.proc.stdout
    notes = d.manifest["notes"]
    assert notes["plain_run"] is True and notes["plain_run_forked"] is True, notes
    with open(out) as fh:
        r = json.load(fh)["tests"]["tests/test_bits.py::test_hangs"]
    assert r["outcome"] == "timeout" and r["duration_s"] < 2.5, r
    t = d.test("test_hangs")
    assert t["failure_kind"] == "timeout" and t["duration_ms"] < 10_000, t


def test_the_forked_plain_pass_leaves_no_process_behind(tmp_path):
    """A plain test that starts a `multiprocessing.Manager()` and never shuts it down (luigi's
    MockFileSystem keeps one in a class attribute): a plain run's interpreter shuts it down at
    exit. The forked plain pass ends with os._exit, so it runs multiprocessing's clean-up itself,
    and the traced run ends the child's process group: the manager's server, holding the pipes
    the traced run inherited, kept the driver waiting for ever (BugsInPy luigi-4)."""
    files = dict(HANGS)
    files["tests/test_manager.py"] = """
        import multiprocessing


        class Keeper:
            manager = None


        def test_keeps_a_manager():
            Keeper.manager = multiprocessing.Manager()
            Keeper.manager.dict()["a"] = 1
        """
    write(tmp_path, files)
    out = tmp_path / "plain.json"
    env = {"PROSECUTOR_PLAIN_FORK": "1", "PROSECUTOR_PLAIN_OUT": str(out), "PROSECUTOR_PLAIN_TIMEOUT": "1",
           "PROSECUTOR_TEST_TIMEOUT": "60", "PROSECUTOR_TRACE_ALL": "0"}
    t0 = time.monotonic()
    d = trace(tmp_path, extra=env)       # (pipes: it returns once every holder has ended)
    assert time.monotonic() - t0 < 60
    assert d.status["ok"], d.proc.stdout
    with open(out) as fh:
        r = json.load(fh)["tests"]["tests/test_manager.py::test_keeps_a_manager"]
    assert r["outcome"] == "pass", r


def _fib_taking(seconds):
    """(n, plain seconds of fib(n)) for the smallest n whose fib takes at least `seconds` here."""
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)
    n = 20
    while True:
        t0 = time.perf_counter()
        fib(n)
        took = time.perf_counter() - t0
        if took >= seconds:
            return n, took
        n += 1


def test_a_test_the_profiler_slows_past_the_limit_does_not_hang(tmp_path):
    """The plain run profiles each test's calls (cProfile up to Python 3.11, which slows a
    recursion 2-6x). A test that ends within the limit plainly but not under the profiler is
    not a hang: at the limit it gets what the profiler cost it on top (QuixBugs levenshtein's
    failing test, 1.5 s plainly, was a hang under --test-timeout 5)."""
    n, took = _fib_taking(0.4)
    write(tmp_path, {
        "src/fib.py": """
            def fib(n):
                return n if n < 2 else fib(n - 1) + fib(n - 2)
            """,
        "tests/conftest.py": CONFTEST,
        "tests/test_fib.py": f"""
            from fib import fib


            def test_slow():
                assert fib({n}) > 0
            """,
    })
    limit = 2 * took
    _, data = plain_run(tmp_path, timeout=f"{limit:.3f}")
    r = data["tests"]["tests/test_fib.py::test_slow"]
    assert r["outcome"] == "pass", (r, limit)
    # its profile is whole (the qualified name is "" before Python 3.11)
    assert any("fib.py:" in k and k.endswith(":fib") for k in data["code_keys"]), data["code_keys"]
