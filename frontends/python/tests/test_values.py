"""Re-runs that record the locals every step sees, capture locals at a step and patch them in
at a step (seed 004's stores and induction runs; docs/trace-format.md "Values, capture and
patch").

A small project is traced for real; its re-runs are made with the dump's own `[rerun] command`
(cold: PROSECUTOR_VALUES with PROSECUTOR_EVENTS, PROSECUTOR_FORCE) and `[rerun] serve` (warm:
"values" with "events", "force"), as the Rust side makes them."""

import base64
import json
import os
import pickle
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import dumpcheck  # noqa: E402
from test_force_set import events  # noqa: E402
from test_tracer import run  # noqa: E402
from test_warm_runner import Server, stmt  # noqa: E402
from prosecutor_tracer import values as V  # noqa: E402

LIB = """
    class Node:
        def __init__(self, val):
            self.val = val
            self.next = None


    def grow(xs):
        xs.append(len(xs))


    def compute():
        x = 1
        x = 2
        xs = [1]
        grow(xs)
        n = Node(x)
        n.next = n
        setattr(n, "odd\\tname", "a\\tb\\nc")
        s = {"pear", "fig", "apple", "kiwi"}
        tmp = (x,)
        del tmp
        total = x + len(xs)
        return total


    def scale(k, double):
        if double:
            y = k * 2
        else:
            y = k
        return y + 1


    def check(a, b):
        c = 0
        if a < 0 or b > 5:
            c = 1
        return c


    def unpicklable(k):
        g = (i for i in range(k))
        f = lambda: k
        return k


    class Box:
        def __init__(self, v):
            self.v = v

        def __getstate__(self):
            state = dict(self.__dict__)
            return state

        def __setstate__(self, state):
            self.__dict__.update(state)

        def __repr__(self):
            raise RuntimeError("the program's __repr__ is called")

        def __eq__(self, other):
            raise RuntimeError("the program's __eq__ is called")

        __hash__ = object.__hash__


    def boxed(a, box):
        c = 0
        if a < 0 or box.v > 5:
            c = 1
        return c


    LIMIT = len("abc")
    DOUBLE = LIMIT * 2
    """

TESTS = """
    import unittest

    from prog import compute, scale, check, unpicklable, boxed, Box


    def test_compute():
        assert compute() == 5


    def test_scale_ok():
        assert scale(3, True) == 7


    def test_scale_bad():
        assert scale(2, False) == 7


    def test_check():
        assert check(1, 2) == 1


    def test_unpicklable():
        assert unpicklable(2) == 3


    def test_boxed():
        assert boxed(1, Box(2)) == 1


    class TestUnit(unittest.TestCase):
        def setUp(self):
            self.k = 2

        def test_scale(self):
            self.assertEqual(scale(self.k, False), 7)
    """

FILES = {"src/prog.py": LIB, "tests/test_prog.py": TESTS}
COMPUTE = "tests/test_prog.py::test_compute"
SCALE_OK = "tests/test_prog.py::test_scale_ok"
SCALE_BAD = "tests/test_prog.py::test_scale_bad"
CHECK = "tests/test_prog.py::test_check"
UNPICKLABLE = "tests/test_prog.py::test_unpicklable"
UNIT = "tests/test_prog.py::TestUnit::test_scale"
BOXED = "tests/test_prog.py::test_boxed"


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    d = run(tmp_path_factory.mktemp("values"), FILES)
    assert d.manifest is not None, d.proc.stdout
    assert {t["id"]: t["outcome"] for t in d.manifest["test"]}[SCALE_BAD] == "fail", d.manifest["test"]
    return d


@pytest.fixture(scope="module")
def import_time(tmp_path_factory):
    """The same project traced with --import-time: traces begin with prog's module body."""
    d = run(tmp_path_factory.mktemp("values_setup"), FILES, extra_env={"PROSECUTOR_SETUP": "1"})
    assert d.manifest is not None, d.proc.stdout
    return d


def cold(d, test, out, values=None, events=None, force=None, env=None):
    """A re-run with the dump's `[rerun] command`, as the Rust side makes it."""
    rr = d.manifest["rerun"]
    argv = [a.replace("{test}", test).replace("{stmt}", "").replace("{occurrence}", "0")
            .replace("{out}", str(out)).replace("{dump}", d.d) for a in rr["command"]]
    e = {k: v for k, v in os.environ.items() if not k.startswith("PROSECUTOR_")}
    e.update(rr["env"])
    e.update(env or {})
    if values is not None:
        e["PROSECUTOR_VALUES"] = values if isinstance(values, str) else json.dumps(values)
    if events is not None:
        e["PROSECUTOR_EVENTS"] = str(events)
    if force is not None:
        e["PROSECUTOR_FORCE"] = json.dumps(force)
    p = subprocess.run(argv, cwd=rr["cwd"], env=e, timeout=180, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert os.path.exists(out), p.stdout.decode()[-3000:]
    with open(out) as fh:
        return json.load(fh)


def values_of(dirpath):
    """values.facts as {step: {var: encoding}}, checking that each line is one row of 3 columns."""
    out = {}
    with open(os.path.join(str(dirpath), "values.facts"), encoding="utf-8", newline="") as fh:
        text = fh.read()
    assert "\r" not in text
    for line in text.split("\n")[:-1]:
        cols = line.split("\t")
        assert len(cols) == 3, line
        step, var, val = cols
        assert var not in out.get(int(step), {}), line
        out.setdefault(int(step), {})[var] = val
    assert text.endswith("\n") or not text
    return out


def steps_of(d, dirpath):
    """[(step, statement text, frame)] of a re-run's events."""
    stmts = d.stmts()
    return [(int(r[0]), stmts[r[1]][5], r[2]) for r in events(dirpath)["step.facts"]]


def step_at(d, dirpath, text, nth=0):
    """The index of the `nth` step of the statement `text` in a re-run's events."""
    return [i for (i, t, _) in steps_of(d, dirpath) if t == text][nth]


def at(vals, steps, step):
    """{var: encoding} that step `step`'s frame had before it ran (the rows of that frame's
    steps up to it)."""
    frame = {i: f for (i, _, f) in steps}[step]
    out = {}
    for (i, _, f) in steps:
        if i > step:
            break
        if f == frame:
            out.update(vals.get(i, {}))
    return {k: v for k, v in out.items() if v != "<unbound>"}


def pickled(v):
    return base64.b64encode(pickle.dumps(v, protocol=4)).decode()


def test_record_writes_the_changes_each_step_sees(proj, tmp_path):
    r = cold(proj, COMPUTE, tmp_path / "r.json", {"record": True}, tmp_path / "ev")
    assert r["outcome"] == "fail" and "patched" not in r, r
    vals = values_of(tmp_path / "ev")
    steps = steps_of(proj, tmp_path / "ev")
    assert max(vals) < len(steps)
    s = {t: step_at(proj, tmp_path / "ev", t) for t in (
        "x = 1", "x = 2", "xs = [1]", "grow(xs)", "n = Node(x)", "n.next = n",
        'setattr(n, "odd\\tname", "a\\tb\\nc")', 's = {"pear", "fig", "apple", "kiwi"}', "tmp = (x,)",
        "del tmp", "total = x + len(xs)", "return total", "xs.append(len(xs))", "self.val = val")}
    # the frame's first step: all its locals (none); then only what changed, before the step
    assert s["x = 1"] not in vals
    assert vals[s["x = 2"]] == {"x": "1"}
    assert vals[s["xs = [1]"]] == {"x": "2"}
    assert vals[s["grow(xs)"]] == {"xs": "[1]"}
    # the callee's frame: its arguments at its first step; its mutation shows at the caller's next step
    assert vals[s["xs.append(len(xs))"]] == {"xs": "[1]"}
    assert vals[s["n = Node(x)"]] == {"xs": "[1, 1]"}
    assert vals[s["self.val = val"]] == {"self": "Node()", "val": "2"}
    assert vals[s["n.next = n"]] == {"n": "Node(val=2, next=None)"}
    # an object in a cycle, an attribute name and a str with TAB / newline: escaped, one line
    assert vals[s['setattr(n, "odd\\tname", "a\\tb\\nc")']] == {"n": "Node(val=2, next=<cycle>)"}
    assert vals[s['s = {"pear", "fig", "apple", "kiwi"}']] == {
        "n": "Node(val=2, next=<cycle>, odd\\tname='a\\tb\\nc')"}
    # a set: its elements sorted by their encodings
    assert vals[s["tmp = (x,)"]] == {"s": "{'apple', 'fig', 'kiwi', 'pear'}"}
    assert vals[s["del tmp"]] == {"tmp": "(2,)"}
    assert vals[s["total = x + len(xs)"]] == {"tmp": "<unbound>"}
    assert vals[s["return total"]] == {"total": "4"}
    assert at(vals, steps, s["return total"]) == {
        "x": "2", "xs": "[1, 1]", "n": "Node(val=2, next=<cycle>, odd\\tname='a\\tb\\nc')",
        "s": "{'apple', 'fig', 'kiwi', 'pear'}", "total": "4"}
    # the test's frame too (test code)
    assert s["x = 1"] - 1 in {i for (i, t, _) in steps if t == "assert compute() == 5"}
    # the trace itself is the one written without values
    r2 = cold(proj, COMPUTE, tmp_path / "r2.json", events=tmp_path / "ev2")
    assert events(tmp_path / "ev2") == events(tmp_path / "ev"), r2
    assert not os.path.exists(tmp_path / "ev2" / "values.facts")


def test_two_processes_write_the_same_values(proj, tmp_path):
    cold(proj, COMPUTE, tmp_path / "a.json", {"record": True}, tmp_path / "a")
    # another hash seed: another iteration order of the set of str, other addresses
    cold(proj, COMPUTE, tmp_path / "b.json", {"record": True}, tmp_path / "b", env={"PYTHONHASHSEED": "12345"})
    a = (tmp_path / "a" / "values.facts").read_bytes()
    assert a and a == (tmp_path / "b" / "values.facts").read_bytes()


def test_capture_then_patch_makes_a_failing_test_pass(proj, tmp_path):
    # capture k in the passing test where `y = k * 2` runs
    ev = tmp_path / "ok"
    cold(proj, SCALE_OK, tmp_path / "ok0.json", {"record": True}, ev)
    k_ok = step_at(proj, ev, "y = k * 2")
    r = cold(proj, SCALE_OK, tmp_path / "ok.json", {"capture": {str(k_ok): ["k", "double", "nope"]}}, ev)
    assert r["outcome"] == "pass", r
    with open(ev / "capture.json") as fh:
        cap = json.load(fh)
    assert set(cap) == {str(k_ok)} and cap[str(k_ok)]["nope"] is None, cap
    assert pickle.loads(base64.b64decode(cap[str(k_ok)]["k"])) == 3
    assert pickle.loads(base64.b64decode(cap[str(k_ok)]["double"])) is True
    # the failing test with `if double:` forced to 1 still fails (2 * 2 + 1) ...
    ifd = stmt(proj, "if double:")
    force = [[ifd, 1, 1]]
    ev = tmp_path / "bad"
    r = cold(proj, SCALE_BAD, tmp_path / "bad0.json", {"record": True}, ev, force)
    assert r["outcome"] == "fail" and r["flipped"] is True, r
    k_bad = step_at(proj, ev, "y = k * 2")
    assert at(values_of(ev), steps_of(proj, ev), k_bad) == {"k": "2", "double": "False"}
    # ... and passes with the captured k patched in where `y = k * 2` runs
    patch = {str(k_bad): {"k": cap[str(k_ok)]["k"]}}
    r = cold(proj, SCALE_BAD, tmp_path / "bad.json", {"record": True, "patch": patch}, ev, force)
    assert r["outcome"] == "pass" and r["flipped"] is True and r["patched"] == [k_bad], r
    vals = values_of(ev)
    assert vals[k_bad] == {"k": "3"}
    assert at(vals, steps_of(proj, ev), k_bad) == {"k": "3", "double": "False"}
    # a step never reached is left out (`y = k` is not run), and so is a patch that is not made
    k_else = step_at(proj, tmp_path / "ok", "return y + 1")
    r = cold(proj, SCALE_BAD, tmp_path / "bad2.json", {"patch": {str(k_bad): {"k": pickled(3)}, "99999": {"k": pickled(3)}}},
             tmp_path / "bad2", force)
    assert r["outcome"] == "pass" and r["patched"] == [k_bad], r
    r = cold(proj, SCALE_BAD, tmp_path / "bad3.json", {"patch": {str(k_bad): {"nope": pickled(3)}}}, tmp_path / "bad3",
             force)
    assert r["outcome"] == "fail" and r["patched"] == [] and "nope" in r["patch_errors"][0], r
    # patched before a step whose statement is not the one using k: no change
    r = cold(proj, SCALE_BAD, tmp_path / "bad4.json", {"patch": {str(k_else): {"k": pickled(3)}}}, tmp_path / "bad4",
             force)
    assert r["outcome"] == "fail" and r["patched"] == [k_else], r


def test_patch_at_a_step_a_condition_wrapper_begins(proj, tmp_path):
    """`if a < 0 or b > 5:`: the operand `a < 0` is a step of its own; its wrapper (a call from
    the program, not a trace function) begins the `if` step, before `b > 5` is evaluated.  A
    patch of b there must reach the frame's fast locals."""
    ev = tmp_path / "ev"
    r = cold(proj, CHECK, tmp_path / "r0.json", {"record": True}, ev)
    assert r["outcome"] == "fail", r
    steps = steps_of(proj, ev)
    texts = [t for (_, t, _) in steps]
    i = texts.index("c = 0")
    assert texts[i + 1:i + 4] == ["a < 0", "if a < 0 or b > 5:", "return c"], texts
    k_if = steps[i + 2][0]
    r = cold(proj, CHECK, tmp_path / "r1.json", {"patch": {str(k_if): {"b": pickled(7)}}}, tmp_path / "ev1")
    assert r["outcome"] == "pass" and r["patched"] == [k_if], r
    # (and with record, which reads f_locals again after the patch)
    r = cold(proj, CHECK, tmp_path / "r.json", {"record": True, "patch": {str(k_if): {"b": pickled(7)}}}, ev)
    assert r["outcome"] == "pass" and r["patched"] == [k_if], r
    texts = [t for (_, t, _) in steps_of(proj, ev)]
    assert texts[i + 1:i + 4] == ["a < 0", "if a < 0 or b > 5:", "c = 1"], texts
    assert values_of(ev)[k_if] == {"b": "7"}
    # and at the operand's step (begun by a trace event): a patch of a
    k_op = steps[i + 1][0]
    r = cold(proj, CHECK, tmp_path / "r2.json", {"patch": {str(k_op): {"a": pickled(-1)}}}, tmp_path / "ev2")
    assert r["outcome"] == "pass" and r["patched"] == [k_op], r


def test_the_programs_pickling_code_is_not_traced(proj, tmp_path):
    """Capturing and patching an object whose class pickles with app code (__getstate__,
    __setstate__) at a step a trace event begins (the operand `a < 0`) and at one a condition
    wrapper begins (the `if`): that code runs untraced, the trace is the one without values;
    record calls none of the program's methods (its __repr__ and __eq__ raise)."""
    ev = tmp_path / "ev"
    r = cold(proj, BOXED, tmp_path / "r0.json", events=ev)
    assert r["outcome"] == "fail", r
    plain = events(ev)
    steps = steps_of(proj, ev)
    texts = [t for (_, t, _) in steps]
    i = texts.index("c = 0")
    assert texts[i + 1:i + 4] == ["a < 0", "if a < 0 or box.v > 5:", "return c"], texts
    k_op, k_if = steps[i + 1][0], steps[i + 2][0]
    r = cold(proj, BOXED, tmp_path / "r1.json", {"capture": {str(k_op): ["box"], str(k_if): ["box"]}, "record": True}, ev)
    assert r["outcome"] == "fail", r
    assert events(ev) == plain
    with open(ev / "capture.json") as fh:
        cap = json.load(fh)
    assert set(cap) == {str(k_op), str(k_if)} and all(cap[k]["box"] for k in cap), cap
    vals = values_of(ev)
    assert at(vals, steps_of(proj, ev), k_if) == {"a": "1", "box": "Box(v=2)", "c": "0"}
    # the captured box patched back in at both steps: unpickled (__setstate__) untraced
    patch = {str(k_op): {"box": cap[str(k_op)]["box"]}, str(k_if): {"box": cap[str(k_if)]["box"]}}
    r = cold(proj, BOXED, tmp_path / "r2.json", {"patch": patch}, ev)
    assert r["outcome"] == "fail" and r["patched"] == [k_op, k_if], r
    assert events(ev) == plain
    # errors of the tracer would be warnings of the run; none here: the program ran as before
    assert "patch_errors" not in r, r


def test_capture_of_what_does_not_pickle_is_null(proj, tmp_path):
    ev = tmp_path / "ev"
    cold(proj, UNPICKLABLE, tmp_path / "r0.json", {"record": True}, ev)
    k = step_at(proj, ev, "return k")
    r = cold(proj, UNPICKLABLE, tmp_path / "r.json", {"capture": {str(k): ["g", "f", "k"], "99999": ["k"]}}, ev)
    assert r["outcome"] == "fail", r
    with open(ev / "capture.json") as fh:
        cap = json.load(fh)
    assert cap == {str(k): {"g": None, "f": None, "k": pickled(2)}}, cap
    assert not os.path.exists(ev / "values.facts")     # (record not asked: the first run's is gone)
    vals = values_of(tmp_path / "ev") if os.path.exists(ev / "values.facts") else None
    assert vals is None


def test_a_trace_with_a_prefix_numbers_values_as_its_steps(proj, import_time, tmp_path):
    # a unittest setUp: the synthetic root's two steps come first
    ev = tmp_path / "unit"
    r = cold(proj, UNIT, tmp_path / "u0.json", {"record": True}, ev)
    assert r["outcome"] == "fail", r
    steps = steps_of(proj, ev)
    assert [(t, f) for (_, t, f) in steps[:3]][2:] == [("self.k = 2", "f1")] and steps[1][2] == "f0", steps[:3]
    k_y = step_at(proj, ev, "y = k")
    assert at(values_of(ev), steps, k_y) == {"k": "2", "double": "False"}
    r = cold(proj, UNIT, tmp_path / "u.json", {"record": True, "patch": {str(k_y): {"k": pickled(6)}}}, ev)
    assert r["outcome"] == "pass" and r["patched"] == [k_y], r
    assert values_of(ev)[k_y] == {"k": "6"}
    # import-time segments: prog's module body begins the trace, its globals are its locals
    d = import_time
    ev = tmp_path / "setup"
    r = cold(d, SCALE_BAD, tmp_path / "s0.json", {"record": True}, ev)
    assert r["outcome"] == "fail", r
    steps = steps_of(d, ev)
    assert events(ev) == {n: [r[1:] for r in d.rows(n) if r[0] == d.test("test_scale_bad")["trace"]]
                          for n in ("frame.facts", "step.facts", "branch.facts")}
    vals = values_of(ev)
    # the `def`s are inert (left out of the trace): what they bound shows at the next step kept
    k_limit, k_double = step_at(d, ev, 'LIMIT = len("abc")'), step_at(d, ev, "DOUBLE = LIMIT * 2")
    assert "def scale(k, double):" not in [t for (_, t, _) in steps]
    assert vals[k_limit] == {"Box": "<class Box>", "boxed": "<function boxed>"}, vals[k_limit]
    assert at(vals, steps, k_limit)["scale"] == "<function scale>"
    assert vals[k_double] == {"LIMIT": "3"}
    assert at(vals, steps, k_double)["Node"] == "<class Node>"
    k_y = step_at(d, ev, "y = k")
    assert k_y > k_double and at(vals, steps, k_y) == {"k": "2", "double": "False"}
    r = cold(d, SCALE_BAD, tmp_path / "s.json", {"record": True, "patch": {str(k_y): {"k": pickled(6)}}}, ev)
    assert r["outcome"] == "pass" and r["patched"] == [k_y], r
    assert values_of(ev)[k_y] == {"k": "6"}


def test_bad_values_are_config_errors(proj, tmp_path):
    ev = tmp_path / "ev"
    for bad in ("[1]", "not json", {"recrd": True}, {"record": 1}, {"capture": {"x": ["k"]}},
                {"capture": {"01": ["k"]}}, {"capture": {"1": "k"}}, {"capture": {"1": ["1k"]}},
                {"patch": {"1": ["k"]}}, {"patch": {"1": {"k": "not base64!"}}}, {"patch": {"1": {"k": 3}}}):
        r = cold(proj, SCALE_BAD, tmp_path / "bad.json", bad, ev)
        assert r["outcome"] == "crash" and r["detail"].startswith("rerun config error: "), (bad, r)
    r = cold(proj, SCALE_BAD, tmp_path / "noev.json", {"record": True})
    assert r["outcome"] == "crash" and r["detail"].startswith("rerun config error: values go with events"), r
    assert not os.path.exists(ev)


def test_values_without_the_values_module_are_a_config_error(monkeypatch):
    """A copy of the package without values.py (a driver embedding an older file list) must
    not take a values request and record nothing."""
    from prosecutor_tracer import flip
    assert flip.check_values({"record": True}, "/tmp/ev") is None
    import prosecutor_tracer
    monkeypatch.setitem(sys.modules, "prosecutor_tracer.values", None)
    monkeypatch.delattr(prosecutor_tracer, "values", raising=False)
    why = flip.check_values({"record": True}, "/tmp/ev")
    assert why == "rerun config error: values: this copy of prosecutor_tracer has no values.py", why


def test_the_warm_runner_takes_values(proj, tmp_path):
    ifd = stmt(proj, "if double:")
    force = [[ifd, 1, 1]]
    ev = tmp_path / "c0"
    cold(proj, SCALE_BAD, tmp_path / "c0.json", {"record": True}, ev, force)
    k_bad = step_at(proj, ev, "y = k * 2")
    values = {"record": True, "patch": {str(k_bad): {"k": pickled(3)}}, "capture": {str(k_bad): ["k"]}}
    k_if = step_at(proj, ev, "if double:")

    def req(i, test, values, events=None, force=None):
        r = {"id": i, "test": test, "stmt": "", "occurrence": 0, "timeout_s": 60, "values": values}
        if events is not None:
            r["events"] = str(events)
        if force is not None:
            r["force"] = force
        return r

    s = Server(proj)
    warm = s.ask([req(1, SCALE_BAD, values, tmp_path / "w1", force),
                  req(2, CHECK, {"record": True}, tmp_path / "w2"),
                  req(3, SCALE_BAD, {"record": True}),
                  req(4, SCALE_BAD, {"patch": {"1": {"k": 3}}}, tmp_path / "w4"),
                  req(5, SCALE_BAD, [], tmp_path / "w5")])
    assert s.close() == 0
    c = cold(proj, SCALE_BAD, tmp_path / "c1.json", values, tmp_path / "c1", force)
    w = {k: v for k, v in warm[1].items() if k not in ("id", "duration_ms")}
    assert w == c and c["outcome"] == "pass" and c["patched"] == [k_bad], (w, c)
    for name in ("values.facts", "capture.json", "step.facts"):
        assert (tmp_path / "w1" / name).read_bytes() == (tmp_path / "c1" / name).read_bytes(), name
    assert values_of(tmp_path / "w1")[k_bad] == {"k": "3"} and k_if < k_bad
    cold(proj, CHECK, tmp_path / "c2.json", {"record": True}, tmp_path / "c2")
    assert (tmp_path / "w2" / "values.facts").read_bytes() == (tmp_path / "c2" / "values.facts").read_bytes()
    for i in (3, 4, 5):
        assert warm[i]["outcome"] == "crash" and warm[i]["detail"].startswith("rerun config error: "), warm[i]


class _Slots:
    __slots__ = ("a", "__b", "c")

    def __init__(self):
        self.a = 1
        self.__b = [2]


class _Plain:
    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        raise AssertionError("the encoder called __repr__")

    def __eq__(self, other):
        raise AssertionError("the encoder called __eq__")

    __hash__ = object.__hash__

    def __getattr__(self, name):
        raise AssertionError("the encoder called __getattr__")


class _Tricky(list):
    def __iter__(self):
        raise AssertionError("the encoder called __iter__")


class _NoRepr:
    __slots__ = ()

    def __repr__(self):
        raise AssertionError("the encoder called __repr__")


def test_encoding_rules():
    import collections
    import decimal
    import enum

    class Color(enum.Enum):
        RED = 1

    Point = collections.namedtuple("Point", "x y")
    e = V.encode
    assert [e(v) for v in (None, True, 3, -0.0, 1.5, "a\tb\n", b"\x00", (1,), (), [1, [2]], {"k": (1, 2)})] == [
        "None", "True", "3", "-0.0", "1.5", "'a\\tb\\n'", "b'\\x00'", "(1,)", "()", "[1, [2]]", "{'k': (1, 2)}"]
    assert e({10, 9, 100}) == "{10, 100, 9}" and e(set()) == "set()" and e(frozenset("ba")) == "frozenset({'a', 'b'})"
    assert e(_Slots()) == "_Slots(a=1, __b=[2])"
    p = _Plain(x=1, y=[_Plain()])
    p.me = [p]
    assert e(p) == "_Plain(x=1, y=[_Plain()], me=[<cycle>])"
    shared = [1]
    assert e([shared, shared]) == "[[1], [1]]"           # shared, not a cycle
    assert e(_Tricky([1, 2])) == "_Tricky([1, 2])"
    assert e(_NoRepr()) == "<_NoRepr>"
    assert e(Color.RED) == "test_encoding_rules.<locals>.Color.RED"
    assert e(Point(1, y=2)) == "Point(x=1, y=2)"
    assert e(collections.deque([1])) == "deque([1])" and e(collections.Counter("aab")) == "Counter({'a': 2, 'b': 1})"
    assert e(ValueError("no")) == "ValueError(args=('no',))"
    assert e(decimal.Decimal("1.5")) == "Decimal(Decimal('1.5'))" and e(object()) == "<object>"
    assert e(iter([1])) == "<list_iterator>" and e(x for x in ()) == "<generator>"
    assert e(len) == "<built-in function len>" and e(collections) == "<module collections>"
    assert e(test_encoding_rules) == "<function test_encoding_rules>" and e(_Plain) == "<class _Plain>"
    # escaping: an attribute name, a C type's repr; no TAB / newline in any encoding
    assert e(_Plain(**{"a\tb": 1, "c\\d": 2})) == "_Plain(a\\tb=1, c\\\\d=2)"
    # caps: 4000 characters, 20000 objects, then an ellipsis; a set cut at its brace
    big = e(list(range(100000)))
    assert len(big) == V.MAX_CHARS + 1 and big.endswith("\u2026") and big.startswith("[0, 1, 2")
    assert len(e("x" * 10000)) == V.MAX_CHARS + 1
    deep = None
    for _ in range(50000):
        deep = [deep]
    assert e(deep) == "[" * 4000 + "\u2026"                  # no recursion
    wide = [[]] * 30000
    assert e(wide) == ("[" + "[], " * 1000)[:V.MAX_CHARS] + "\u2026"
    many = [0] * 25000
    cut = e({"k": many})
    assert cut.endswith("\u2026") and len(cut) == V.MAX_CHARS + 1
    # (a set's elements each fit: sorted, then cut; one does not: cut at the brace)
    assert e([1, {"t" * 3000, "s" * 3000}]) == ("[1, {'" + "s" * 3000 + "', '" + "t" * 3000)[:V.MAX_CHARS] + "\u2026"
    assert e([1, {"t", "s" * 5000}]) == "[1, {\u2026"
    assert "\t" not in e(_Plain(**{"x\ty": "\t"})) and "\n" not in e(_Plain(**{"x\ny": 1}))


def test_encoding_is_the_same_in_another_process():
    code = ("import sys; sys.path.insert(0, %r); from prosecutor_tracer.values import encode\n"
            "class N:\n def __init__(s, v): s.v = v; s.n = None\n"
            "a = N({'x', 'y', 'z', frozenset({'p', 'q'})}); a.n = N([a]); print(encode(a))") % os.path.dirname(HERE)
    outs = {subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONHASHSEED=str(seed)),
                           stdout=subprocess.PIPE, text=True, check=True).stdout for seed in (1, 2, 3)}
    assert outs == {"N(v={'x', 'y', 'z', frozenset({'p', 'q'})}, n=N(v=[<cycle>], n=None))\n"}, outs
