"""Re-runs that force a set of branch instances and write their trace (seed 003's path
generation; docs/trace-format.md "Forcing a set of branch instances, and the re-run's events").

A small project is traced for real; its re-runs are made with the dump's own `[rerun] command`
(cold: PROSECUTOR_FORCE, PROSECUTOR_EVENTS) and `[rerun] serve` (warm: "force", "events"), as
the Rust side makes them, and checked against what the forced code does and against the dump's
own trace of the test."""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import dumpcheck  # noqa: E402
from test_tracer import run  # noqa: E402
from test_warm_runner import Server, stmt  # noqa: E402

# the program of Fig. 2 of the path-generation paper, and a loop
LIB = """
    def f(a, b, c, d):
        i = j = k = 0
        if a:
            i += 1
        if b:
            j += 1
        if c:
            if d:
                k += 1
            else:
                k += 2
        return (i, j, k)


    def count_pos(xs):
        n = 0
        for x in xs:
            if x > 0:
                n += 1
        return n


    BASE = count_pos([5])
    """

TESTS = """
    import unittest

    from fig2 import f, count_pos


    def test_fig2():
        assert f(0, 0, 1, 1) == (1, 0, 2)


    def test_count():
        assert count_pos([1, -1, 2, -3]) == 4


    def test_long():
        assert count_pos(range(-100, 100)) == 0


    class TestF(unittest.TestCase):
        def setUp(self):
            self.base = f(1, 1, 0, 0)

        def test_f(self):
            self.assertEqual(f(0, 1, 1, 0), (0, 1, 1))
    """

FILES = {"src/fig2.py": LIB, "tests/test_fig2.py": TESTS}
FIG2 = "tests/test_fig2.py::test_fig2"
COUNT = "tests/test_fig2.py::test_count"
LONG = "tests/test_fig2.py::test_long"
UNIT = "tests/test_fig2.py::TestF::test_f"
CAP = 300     # test_long's trace hits it, the others do not
RELATIONS = ("frame.facts", "step.facts", "branch.facts")


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    d = run(tmp_path_factory.mktemp("force"), FILES, extra_env={"PROSECUTOR_STEP_CAP": str(CAP)})
    assert d.manifest is not None, d.proc.stdout
    assert {t["id"]: t["outcome"] for t in d.manifest["test"]} == {
        FIG2: "fail", COUNT: "fail", LONG: "fail", UNIT: "fail"}, d.manifest["test"]
    return d


@pytest.fixture(scope="module")
def import_time(tmp_path_factory):
    """The same project traced with --import-time: traces begin with the module body of fig2,
    which evaluates `if x > 0:` once (BASE)."""
    d = run(tmp_path_factory.mktemp("force_setup"), FILES, extra_env={"PROSECUTOR_SETUP": "1"})
    assert d.manifest is not None, d.proc.stdout
    return d


def cold(d, test, out, force=None, events=None, stmt="", occ=0):
    """A re-run with the dump's `[rerun] command`, as the Rust side makes it."""
    rr = d.manifest["rerun"]
    argv = [a.replace("{test}", test).replace("{stmt}", stmt).replace("{occurrence}", str(occ))
            .replace("{out}", str(out)).replace("{dump}", d.d) for a in rr["command"]]
    e = {k: v for k, v in os.environ.items() if not k.startswith("PROSECUTOR_")}
    e.update(rr["env"])
    if force is not None:
        e["PROSECUTOR_FORCE"] = json.dumps(force)
    if events is not None:
        e["PROSECUTOR_EVENTS"] = str(events)
    subprocess.run(argv, cwd=rr["cwd"], env=e, timeout=180, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    with open(out) as fh:
        return json.load(fh)


def warm_req(i, test, force=None, events=None):
    r = {"id": i, "test": test, "stmt": "", "occurrence": 0, "timeout_s": 60}
    if force is not None:
        r["force"] = force
    if events is not None:
        r["events"] = str(events)
    return r


def events(dirpath):
    """{relation: rows without the trace column} of a re-run's events (all of trace `r`)."""
    out = {}
    for name in RELATIONS:
        rows = dumpcheck.read(str(dirpath), name)
        assert all(r[0] == "r" for r in rows), rows[:3]
        out[name] = [r[1:] for r in rows]
    return out


def dump_trace(d, test):
    """The same relations of the dump's trace of `test`."""
    (t,) = [t for t in d.manifest["test"] if t["id"] == test]
    return {name: [r[1:] for r in d.rows(name) if r[0] == t["trace"]] for name in RELATIONS}


def ran(d, ev):
    """The statement texts of the events' steps, in order."""
    stmts = d.stmts()
    return [stmts[r[1]][5] for r in ev["step.facts"]]


def outcomes(d, ev, text):
    """The branch outcomes of the steps of the statement `text`, in order."""
    sid = stmt(d, text)
    out = {r[0]: int(r[1]) for r in ev["branch.facts"]}
    return [out[r[0]] for r in ev["step.facts"] if r[1] == sid]


def test_forcing_two_instances_changes_the_path(proj, tmp_path):
    if_a, if_d = stmt(proj, "if a:"), stmt(proj, "if d:")
    r = cold(proj, FIG2, tmp_path / "r.json", force=[[if_a, 1, 1], [if_d, 1, 0]], events=tmp_path / "ev")
    assert r["outcome"] == "pass" and r["flipped"] is True, r
    assert r["forced"] == [{"stmt": if_a, "occurrence": 1, "to": 1, "reached": True, "was": 0},
                           {"stmt": if_d, "occurrence": 1, "to": 0, "reached": True, "was": 1}], r
    assert r["detail"] == f"forced: {if_a}#1 to 1, {if_d}#1 to 0", r
    assert r["truncated"] is False, r
    ev = events(tmp_path / "ev")
    assert ran(proj, ev) == ["assert f(0, 0, 1, 1) == (1, 0, 2)", "i = j = k = 0", "if a:", "i += 1", "if b:",
                             "if c:", "if d:", "k += 2", "return (i, j, k)"], ran(proj, ev)
    assert outcomes(proj, ev, "if a:") == [1] and outcomes(proj, ev, "if d:") == [0]
    # one instance alone, forced to what it evaluates to anyway: reached, nothing changes
    r = cold(proj, FIG2, tmp_path / "same.json", force=[[if_d, 1, 1]])
    assert r["outcome"] == "fail" and r["flipped"] is True, r
    assert r["forced"] == [{"stmt": if_d, "occurrence": 1, "to": 1, "reached": True, "was": 1}], r
    assert "truncated" not in r, r


def test_occurrences_are_counted_per_statement_within_the_run(proj, tmp_path):
    cond = stmt(proj, "if x > 0:")
    # xs = [1, -1, 2, -3]: the 2nd evaluation (-1) forced to 1, the 3rd (2) to 0
    r = cold(proj, COUNT, tmp_path / "r.json", force=[[cond, 2, 1], [cond, 3, 0]], events=tmp_path / "ev")
    assert r["outcome"] == "fail" and r["flipped"] is True, r
    assert [(x["reached"], x["was"]) for x in r["forced"]] == [(True, 0), (True, 1)], r
    ev = events(tmp_path / "ev")
    assert outcomes(proj, ev, "if x > 0:") == [1, 1, 0, 0]
    assert ran(proj, ev).count("n += 1") == 2
    # a `for` header: its 3rd evaluation forced to 0 ends the loop after two items; its 5th
    # (the iterator exhausted) cannot be forced to 1
    loop = stmt(proj, "for x in xs:")
    r = cold(proj, COUNT, tmp_path / "r2.json", force=[[loop, 3, 0]], events=tmp_path / "ev2")
    assert r["flipped"] is True and r["forced"][0]["was"] == 1, r
    ev = events(tmp_path / "ev2")
    assert outcomes(proj, ev, "for x in xs:") == [1, 1, 0] and outcomes(proj, ev, "if x > 0:") == [1, 0]
    r = cold(proj, COUNT, tmp_path / "r3.json", force=[[loop, 5, 1]], events=tmp_path / "ev3")
    assert r["flipped"] is False and r["forced"][0]["reached"] is False and r["forced"][0]["was"] is None, r
    assert r["detail"].startswith(f"branch not flippable: {loop}#5: a `for` header whose iterator is exhausted"), r
    assert outcomes(proj, events(tmp_path / "ev3"), "for x in xs:") == [1, 1, 1, 1, 0]


def test_an_instance_not_reached(proj, tmp_path):
    if_a, if_d = stmt(proj, "if a:"), stmt(proj, "if d:")
    r = cold(proj, FIG2, tmp_path / "r.json", force=[[if_a, 1, 1], [if_d, 2, 0]])
    assert r["outcome"] == "fail" and r["flipped"] is False, r
    assert [(x["reached"], x["was"]) for x in r["forced"]] == [(True, 0), (False, None)], r
    assert r["detail"].startswith(f"branch not reached: {if_d}#2 (evaluated 1 time) (1 of 2 forced instances "
                                  f"reached); AssertionError"), r
    # forcing `if c:` to 0 skips `if d:`: its instance is not reached
    r = cold(proj, FIG2, tmp_path / "r2.json", force=[[stmt(proj, "if c:"), 1, 0], [if_d, 1, 0]])
    assert r["flipped"] is False and [x["reached"] for x in r["forced"]] == [True, False], r


def test_bad_forced_sets_are_config_errors(proj, tmp_path):
    if_a = stmt(proj, "if a:")
    for bad in ([[if_a, 0, 1]], [[if_a, 1, 2]], [[if_a, 1, 1], [if_a, 1, 0]], {"x": 1}):
        r = cold(proj, FIG2, tmp_path / "bad.json", force=bad)
        assert r["outcome"] == "crash" and r["detail"].startswith("rerun config error: "), (bad, r)
    r = cold(proj, FIG2, tmp_path / "both.json", force=[[if_a, 1, 1]], stmt=if_a, occ=1)
    assert r["outcome"] == "crash" and r["detail"].startswith("rerun config error: "), r


@pytest.mark.parametrize("test", [FIG2, COUNT, LONG, UNIT])
def test_nothing_forced_gives_the_dumps_trace(proj, tmp_path, test):
    r = cold(proj, test, tmp_path / "r.json", events=tmp_path / "ev")
    assert r["outcome"] == "fail" and r["flipped"] is False and "forced" not in r, r
    assert r["truncated"] is (test == LONG), r
    assert events(tmp_path / "ev") == dump_trace(proj, test)
    # and an empty forced set is the same run
    r = cold(proj, test, tmp_path / "r2.json", force=[], events=tmp_path / "ev2")
    assert r["forced"] == [] and r["flipped"] is False, r
    assert events(tmp_path / "ev2") == dump_trace(proj, test)


def test_the_warm_runner_gives_the_cold_results_and_events(proj, tmp_path):
    if_a, if_d, cond = stmt(proj, "if a:"), stmt(proj, "if d:"), stmt(proj, "if x > 0:")
    cases = [(FIG2, [[if_a, 1, 1], [if_d, 1, 0]]), (COUNT, [[cond, 2, 1], [cond, 3, 0]]),
             (FIG2, [[if_a, 1, 1], [if_d, 2, 0]]), (FIG2, None), (UNIT, None), (LONG, [[cond, 150, 0]]),
             (UNIT, [[if_a, 1, 0], [if_d, 1, 1]])]
    s = Server(proj)
    warm = s.ask([warm_req(i, t, f, tmp_path / f"w{i}") for i, (t, f) in enumerate(cases)]
                 + [warm_req(99, FIG2, [[if_a, 1, 1]])]
                 + [dict(warm_req(98, FIG2, [[if_a, 1, 1]]), stmt=if_a, occurrence=1)])
    assert s.close() == 0
    for i, (t, f) in enumerate(cases):
        c = cold(proj, t, tmp_path / f"c{i}.json", f, tmp_path / f"c{i}")
        w = {k: v for k, v in warm[i].items() if k not in ("id", "duration_ms")}
        assert w == c, (i, w, c)
        assert events(tmp_path / f"w{i}") == events(tmp_path / f"c{i}"), i
    assert warm[1]["flipped"] and warm[2]["flipped"] is False, warm
    # occurrence 1 of `if a:` is setUp's (a = 1), the test's own `if d:` makes it pass
    assert warm[6]["outcome"] == "pass" and [x["was"] for x in warm[6]["forced"]] == [1, 0], warm[6]
    assert events(tmp_path / "w3") == dump_trace(proj, FIG2)
    assert events(tmp_path / "w4") == dump_trace(proj, UNIT)
    assert warm[99]["flipped"] and "truncated" not in warm[99], warm[99]    # no events asked
    assert warm[98]["outcome"] == "crash" and warm[98]["detail"].startswith("rerun config error: "), warm[98]


def test_import_time_segments_begin_the_trace_and_count_occurrences(import_time, tmp_path):
    d = import_time
    t = d.test("test_count")
    assert t.get("setup_steps"), t        # the trace begins with fig2's module body
    assert events_of_cold(d, COUNT, tmp_path, "ctl") == dump_trace(d, COUNT)
    # occurrence 1 of `if x > 0:` is the import's (x = 5), 2 to 5 the test's
    cond = stmt(d, "if x > 0:")
    r = cold(d, COUNT, tmp_path / "r.json", force=[[cond, 3, 1]], events=tmp_path / "ev")
    assert r["flipped"] and r["forced"][0]["was"] == 0, r
    assert outcomes(d, events(tmp_path / "ev"), "if x > 0:") == [1, 1, 1, 1, 0]
    # the warm runner makes both in a new process (the session recorded no step of the import)
    s = Server(d)
    warm = s.ask([warm_req(1, COUNT, None, tmp_path / "w1"), warm_req(2, COUNT, [[cond, 3, 1]], tmp_path / "w2"),
                  warm_req(3, COUNT, [[cond, 1, 0]])])
    assert s.close() == 0
    assert warm[1]["runner"] == "cold" and events(tmp_path / "w1") == dump_trace(d, COUNT), warm[1]
    assert warm[2]["runner"] == "cold" and events(tmp_path / "w2") == events(tmp_path / "ev"), warm[2]
    assert warm[3]["runner"] == "cold" and warm[3]["forced"][0]["was"] == 1, warm[3]


def events_of_cold(d, test, tmp_path, name):
    r = cold(d, test, tmp_path / f"{name}.json", events=tmp_path / name)
    assert r["outcome"] == "fail" and r["truncated"] is False, r
    return events(tmp_path / name)
