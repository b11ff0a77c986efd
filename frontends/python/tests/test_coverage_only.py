"""Coverage-only tracing (issue 13 §3): past the step cap, and for the passing tests the traced
run chooses before they run not to keep (docs/frontend-python.md "Coverage-only tracing"), the
tracer records coverage, edge coverage and methods only. These must be what full tracing
records, and the choice must keep the traces the dump would keep."""

import json
import sys

from test_defects import CONFTEST, trace, write
from test_plain_run import plain_run, traced_after_plain

LIB = """
    def step(x, acc):
        if x % 2:
            acc = acc + x
        return acc


    def walk(xs):
        acc = 0
        for x in xs:
            acc = step(x, acc)
        return acc


    def parse(x):
        if x < 0:
            raise ValueError("negative: " + str(x))
        return x


    def parse_all(xs):
        out = []
        for x in xs:
            try:
                out.append(parse(x))
            except ValueError:
                out.append(0)
        return out


    def total(xs):
        s = 0
        for x in xs:
            if x > 0 and x < 100:
                s += x
        return s + 1          # the fault


    def unrelated(n):
        out = []
        for i in range(n):
            out.append(i * i)
        return out
    """

TESTS = """
    from lib import parse, parse_all, total, unrelated, walk


    def test_fails():
        assert total([1, 2]) == 3


    def test_parse_late_failure():
        # far past a small step cap, `parse` (every node and edge covered by then) raises
        assert sum(parse_all([1, -1] * 40)) == 40
        parse(-7)


    def test_total_long():
        for _ in range(3):
            assert total(list(range(60))) > 0


    def test_total_short():
        assert total([]) == 1


    def test_total_mid():
        assert total([5, 6, 7]) > 0
        assert total([1]) > 0


    def test_walk_deep():
        # `step` is fully covered after two calls: the other 300 run without line events
        assert walk(range(1, 300)) > 0


    def test_unrelated():
        assert len(unrelated(30)) == 30
    """


BOX = """
    class Box:
        def __init__(self, v):
            self.v = v

        def __eq__(self, other):
            return self.v == other.v

        def __repr__(self):
            return "Box(%r)" % (self.v,)
    """

BOX_TESTS = """
    from box import Box


    def test_boxes():
        assert Box(1) == Box(2)     # pytest's report calls Box.__repr__ twice


    def test_shown():
        assert repr(Box(3)) == "Box(3)"
    """


def project(tmp_path):
    write(tmp_path, {"src/lib.py": LIB, "tests/conftest.py": CONFTEST, "tests/test_lib.py": TESTS})
    return tmp_path


def edges(d):
    return sorted(tuple(r) for r in d.rows("edge_coverage.facts"))


def coverage(d):
    return sorted(tuple(r) for r in d.rows("coverage.facts"))


def test_past_the_step_cap_coverage_and_edges_are_complete(tmp_path):
    root = project(tmp_path / "a")
    full = trace(root)
    capped = trace(project(tmp_path / "b"), extra={"PROSECUTOR_STEP_CAP": "25"})
    capped.check()
    assert full.status["ok"] and capped.status["ok"]
    # same tests, same outcomes; every test's trace cut at 25 steps
    assert {k: t["outcome"] for k, t in full.tests().items()} == {
        k: t["outcome"] for k, t in capped.tests().items()}
    truncated = capped.manifest["notes"]["truncated_traces"]
    assert any(x.endswith("::test_walk_deep") for x in truncated)
    for t in capped.manifest["test"]:
        if "trace" in t:
            assert len(capped.steps(t["trace"])) <= 25
    # what was recorded past the cap: the whole coverage and edge coverage of every test
    # (the fixture's tmp paths differ: compare node ids, which are relative)
    assert coverage(capped) == coverage(full)
    assert edges(capped) == edges(full)
    late = capped.test("test_parse_late_failure")
    assert late["outcome"] == "fail" and "negative: -7" in late["failure"]
    print(late)


def test_the_plain_run_profiles_the_project_code_each_test_runs(tmp_path):
    root = project(tmp_path)
    # (7 tests: a profile is worth it only with more than 2 x PROSECUTOR_MAX_PASSING of them)
    _, data = plain_run(root, extra={"PROSECUTOR_MAX_PASSING": "1"})
    keys = data["code_keys"]
    names = {k: k.rsplit(":", 1)[1] for k in keys}
    assert all(k.startswith(str(root)) for k in keys), keys   # no pytest, no site-packages

    def ran(test):
        r = next(v for k, v in data["tests"].items() if k.endswith("::" + test))
        return {names[keys[i]]: n for i, n in r["code"]}

    # calls up to Python 3.11 (cProfile); from 3.12 each function once (code_profile.py)
    calls = (lambda n: 1) if sys.version_info >= (3, 12) else (lambda n: n)
    assert ran("test_fails") == {"test_fails": 1, "total": 1}
    assert ran("test_parse_late_failure") == {"test_parse_late_failure": 1, "parse_all": 1, "parse": calls(81)}
    assert ran("test_walk_deep") == {"test_walk_deep": 1, "walk": 1, "step": calls(299)}
    assert ran("test_total_long") == {"test_total_long": 1, "total": calls(3)}
    # code that only renders a failure report is left out, as the tracer leaves it out
    write(tmp_path / "rep", {"src/box.py": BOX, "tests/conftest.py": CONFTEST, "tests/test_box.py": BOX_TESTS})
    _, rep = plain_run(tmp_path / "rep", extra={"PROSECUTOR_MAX_PASSING": "0"})
    names = [k.rsplit(":", 1)[1] for k in rep["code_keys"]]
    ran_box = {names[i]: n for i, n in next(v for k, v in rep["tests"].items() if k.endswith("::test_boxes"))["code"]}
    assert ran_box == {"test_boxes": 1, "__init__": calls(2), "__eq__": 1}
    ran_shown = {names[i]: n for i, n in next(v for k, v in rep["tests"].items() if k.endswith("::test_shown"))["code"]}
    assert ran_shown == {"test_shown": 1, "__init__": 1, "__repr__": 1}
    # code run above the test function (a harness under SRC wrapping it) is not traced: left out
    write(tmp_path / "wrap", {
        "src/harness.py": """
            import functools


            def prepare():
                return 1


            def run_test(fn):
                @functools.wraps(fn)
                def run(*args):
                    prepare()
                    return fn(*args)
                return run


            def work(n):
                return n * 2
            """,
        "tests/conftest.py": CONFTEST,
        "tests/test_wrapped.py": """
            from harness import run_test, work


            @run_test
            def test_wrapped():
                assert work(2) == 4


            def test_plain():
                assert work(1) == 2
            """,
    })
    _, wrapped = plain_run(tmp_path / "wrap", extra={"PROSECUTOR_MAX_PASSING": "0"})
    names = [k.rsplit(":", 1)[1] for k in wrapped["code_keys"]]
    ran_wrapped = {names[i]: n for i, n in next(
        v for k, v in wrapped["tests"].items() if k.endswith("::test_wrapped"))["code"]}
    assert ran_wrapped == {"test_wrapped": 1, "work": 1}
    # no profile with PROSECUTOR_PRESELECT=0
    off = {"PROSECUTOR_PRESELECT": "0", "PROSECUTOR_MAX_PASSING": "1"}
    _, data0 = plain_run(project(tmp_path / "off"), extra=off)
    assert data0["code_keys"] == [] and all("code" not in r for r in data0["tests"].values())
    # where every passing test is traced in full anyway (7 tests, 2 x 3 passing ones traced in
    # full), the profile is there (for Tracer._detach), and no test is traced for coverage only
    few = {"PROSECUTOR_MAX_PASSING": "3"}
    data3, traced = traced_after_plain(project(tmp_path / "few"), "60", extra=few, plain_extra=few)
    assert data3["code_keys"] and all("code" in r for r in data3["tests"].values())
    assert traced.manifest["notes"]["coverage_only_tests"] == 0


def test_passing_tests_that_cannot_be_kept_are_traced_for_coverage_only(tmp_path):
    # one passing trace kept: the traced run traces two passing tests in full, chosen before
    # they run from the plain run's profile (methods shared with the failing tests, then fewest
    # calls: total_short and total_mid, not total_long; from Python 3.12, without call counts,
    # the first two in run order: total_long and total_short), and keeps the one with fewest
    # steps
    keep2 = {"PROSECUTOR_MAX_PASSING": "1"}
    _, chosen = traced_after_plain(project(tmp_path / "a"), "60", extra=keep2, plain_extra=keep2)
    off = dict(keep2, PROSECUTOR_PRESELECT="0")
    _, every = traced_after_plain(project(tmp_path / "b"), "60", extra=off, plain_extra=off)
    chosen.check()
    assert chosen.status["ok"] and every.status["ok"]

    def traced(d):
        return sorted(t["id"].split("::")[-1] for t in d.manifest["test"] if "trace" in t)

    # the same traces as when every test is traced in full and the dump keeps one passing one
    assert traced(chosen) == traced(every) == ["test_fails", "test_parse_late_failure", "test_total_short"]
    coverage_only = [t["id"].split("::")[-1] for t in chosen.manifest["test"] if t.get("coverage_only")]
    skipped = "test_total_mid" if sys.version_info >= (3, 12) else "test_total_long"
    assert sorted(coverage_only) == sorted([skipped, "test_unrelated", "test_walk_deep"])
    assert chosen.manifest["notes"]["coverage_only_tests"] == 3
    assert every.manifest["notes"]["coverage_only_tests"] == 0
    # the other tests' coverage and edge coverage are those full tracing records
    assert coverage(chosen) == coverage(every)
    assert edges(chosen) == edges(every)
    for name in ("step", "frame", "branch", "bind", "stmt", "cfg"):
        assert chosen.rows(name + ".facts") == every.rows(name + ".facts"), name
    # no trace was cut: coverage-only tests are not "truncated"
    assert chosen.manifest["notes"]["truncated_traces"] == []
    assert json.dumps(chosen.manifest["notes"]["warnings"]).count("truncated") == 0


def test_a_test_that_profiles_itself_passes_in_the_profiled_plain_run(tmp_path):
    # from Python 3.12 cProfile is a sys.monitoring tool: had the plain run used it, this test's
    # own profiler would fail ("Another profiling tool is already active")
    write(tmp_path, {
        "src/lib.py": "def f(n):\n    return sum(range(n))\n",
        "tests/conftest.py": CONFTEST,
        "tests/test_prof.py": """
            import cProfile

            from lib import f


            def test_profiles_itself():
                p = cProfile.Profile()
                p.enable()
                assert f(10) == 45
                p.disable()
                assert any(getattr(e.code, "co_name", "") == "f" for e in p.getstats())


            def test_other():
                assert f(3) == 3
            """,
    })
    _, data = plain_run(tmp_path, extra={"PROSECUTOR_MAX_PASSING": "0"})
    outcomes = {k.split("::")[-1]: r["outcome"] for k, r in data["tests"].items()}
    assert outcomes == {"test_profiles_itself": "pass", "test_other": "pass"}
    assert data["code_keys"], "the plain run profiled nothing"


LEV = """
    def lev(a, b):
        if not a or not b:
            return len(a) + len(b)
        if a[0] == b[0]:
            return lev(a[1:], b[1:])
        return 1 + min(lev(a, b[1:]), lev(a[1:], b), lev(a[1:], b[1:]))


    def shout(s):
        if not s:
            return ""
        return s.upper()
    """

LEV_TESTS = """
    from lev import lev, shout


    def test_far():
        assert lev("kitten", "sitting!") == 0


    def test_later():
        d = lev("sunday", "saturday")
        assert shout("x") == "X" and shout("") == ""    # app code still to run after the recursion
        assert d == 0


    def test_near():
        assert lev("ab", "ab") == 0
    """


def lev_project(tmp_path):
    write(tmp_path, {"src/lev.py": LEV, "tests/conftest.py": CONFTEST, "tests/test_lev.py": LEV_TESTS})
    return tmp_path


def app_rows(rows):
    return sorted(tuple(r) for r in rows if any(str(x).startswith("lev.py:") for x in r))


def test_past_the_cap_tracing_stops_once_no_app_code_is_left_to_cover(tmp_path):
    """Tracer._detach: past the step cap, once every app function the plain run saw the test run
    (and every app activation on the stack) has all its nodes and edges covered, the tracer stops
    for the rest of the test. The app coverage, edge coverage and the failure step are those of
    the traced run that never stops (no plain run, so no profile), and a test that still has app
    code to run after the recursion (`shout`) is not stopped."""
    cap = {"PROSECUTOR_STEP_CAP": "60"}
    # (the plain run profiles the tests only when there are more than 2 x PROSECUTOR_MAX_PASSING)
    few = {"PROSECUTOR_MAX_PASSING": "0"}
    _, stopped = traced_after_plain(lev_project(tmp_path / "a"), "120", extra=dict(cap, **few), plain_extra=few)
    going = trace(lev_project(tmp_path / "b"), extra=cap)
    full = trace(lev_project(tmp_path / "c"))
    stopped.check()
    assert stopped.manifest["notes"]["detached_traces"] == 1, stopped.manifest["notes"]
    assert going.manifest["notes"]["detached_traces"] == 0
    assert any(x.endswith("::test_far") for x in stopped.manifest["notes"]["truncated_traces"])
    assert any(x.endswith("::test_later") for x in stopped.manifest["notes"]["truncated_traces"])
    for f in ("coverage.facts", "edge_coverage.facts"):
        assert app_rows(stopped.rows(f)) == app_rows(going.rows(f)) == app_rows(full.rows(f)), f
    for name in ("test_far", "test_later"):
        a, b = stopped.test(name), going.test(name)
        assert a["outcome"] == b["outcome"] == "fail"
        assert a["failure_step"] == b["failure_step"], (a, b)   # (the failing assertion)
