"""End-to-end tests of the tracer: run pytest with the plugin on small projects and check the dump."""

import json
import os
import subprocess
import sys
import textwrap
import tomllib

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_PARENT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import dumpcheck  # noqa: E402

CONFTEST = "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'src'))\n"


def run(tmp_path, files, extra_env=None, args=("tests",)):
    files = dict(files)
    files.setdefault("tests/conftest.py", CONFTEST)
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    dump = tmp_path / "dump"
    env = dict(os.environ)
    env.update({
        "PYTHONPATH": PKG_PARENT,
        "PYTEST_ADDOPTS": "-p prosecutor_tracer.plugin -p no:cacheprovider",
        "PROSECUTOR_MODE": "trace",
        "PROSECUTOR_SRC": str(tmp_path / "src"),
        "PROSECUTOR_OUT": str(dump),
        "PYTHONHASHSEED": "0",
    })
    env.update(extra_env or {})
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", *args], cwd=tmp_path, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    return Dump(dump, p)


class Dump:
    def __init__(self, d, proc):
        self.d = str(d)
        self.proc = proc
        self.status = None
        sp = os.path.join(self.d, ".prosecutor-status.json")
        if os.path.exists(sp):
            with open(sp) as fh:
                self.status = json.load(fh)
        mp = os.path.join(self.d, "manifest.toml")
        self.manifest = None
        if os.path.exists(mp):
            with open(mp, "rb") as fh:
                self.manifest = tomllib.load(fh)

    def rows(self, name):
        return dumpcheck.read(self.d, name)

    def test(self, name):
        for t in self.manifest["test"]:
            if t["id"].endswith("::" + name):
                return t
        raise KeyError(name)

    def stmts(self):
        return {r[0]: r for r in self.rows("stmt.facts")}

    def steps(self, trace):
        return [r[2] for r in self.rows("step.facts") if r[0] == trace]

    def check(self):
        errors, stats = dumpcheck.check(self.d)
        assert errors == [], errors[:10]
        return stats


LIB = """
def left_pad(s, size, pad=" "):
    pads = size - len(s)
    if pads <= 0:
        return s
    pad_chars = list(s)          # bug: should be list(pad)
    out = []
    for i in range(pads):
        out.append(pad_chars[i % len(pad)])
    return "".join(out) + s


def count_until(xs, stop, *, strict=False):
    n = 0
    for x in xs:
        if x == stop or strict and x < 0:
            break
        n += 1
    return n


def spin(n):
    while n != 0:
        n = n - 2
    return n


def apply_all(f, xs):
    return sorted(xs, key=f)


def neg(v):
    return -v


def gen(n):
    for i in range(n):
        yield i * 2
"""

TESTS = """
from padlib import left_pad, count_until, spin, apply_all, neg, gen


def test_short():
    assert left_pad("abc", 2, "-") == "abc"


def test_pad_crash():
    assert left_pad("ab", 7, "xyz") == "xyzxyab"


def test_pad_wrong():
    assert left_pad("a", 2, "*") == "*a"


def test_count():
    xs = [3, 4, 5]
    assert count_until(xs, stop=5) == 2
    assert count_until(xs, 9, strict=True) == 3


def test_callback():
    assert apply_all(neg, [1, 3, 2]) == [3, 2, 1]


def test_gen():
    assert list(gen(3)) == [0, 2, 4]
"""


@pytest.fixture(scope="module")
def padproj(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pad")
    return run(tmp, {"src/padlib.py": LIB, "tests/test_pad.py": TESTS},
               extra_env={"PROSECUTOR_TRACE_ALL": "1"})


def test_dump_is_well_formed(padproj):
    stats = padproj.check()
    assert stats["steps"] > 50
    # every consecutive pair of steps of a frame is a CFG edge
    assert stats["pairs"] == stats["cfg_pairs"], stats["non_cfg"]
    assert padproj.status["ok"] and padproj.status["failing"] == 2


def test_outcomes_are_unchanged(padproj, tmp_path):
    out = padproj.proc.stdout
    assert "2 failed, 4 passed" in out, out
    kinds = {t["id"].split("::")[1]: (t["outcome"], t.get("failure_kind")) for t in padproj.manifest["test"]}
    assert kinds["test_pad_crash"] == ("fail", "exception")
    assert kinds["test_pad_wrong"] == ("fail", "assertion")
    assert kinds["test_short"] == ("pass", None)


def test_failure_points(padproj):
    st = padproj.stmts()
    t = padproj.test("test_pad_crash")
    steps = padproj.steps(t["trace"])
    fs = steps[t["failure_step"]]
    assert st[fs][3] == "padlib.py" and st[fs][4] == "9"       # the IndexError in the loop
    t = padproj.test("test_pad_wrong")
    steps = padproj.steps(t["trace"])
    fs = steps[t["failure_step"]]
    assert st[fs][3] == "tests/test_pad.py" and st[fs][5].startswith("assert left_pad")
    # the assert evaluates the call and then fails: its step (before the callee steps) is the
    # failure point, the test's first step (after the import-time prefix, if any)
    first = steps.index("<prosecutor>:2:0") + 1 if "<prosecutor>:2:0" in steps else 0
    assert t["failure_step"] == first and len(steps) > first + 1


def test_branch_outcomes_and_loop(padproj):
    t = padproj.test("test_pad_crash")
    tr = t["trace"]
    outcomes = {int(r[1]): r[2] for r in padproj.rows("branch.facts") if r[0] == tr}
    steps = padproj.steps(tr)
    if_steps = [i for i, s in enumerate(steps) if s == "padlib.py:4:4"]
    assert [outcomes[i] for i in if_steps] == ["0"]
    for_steps = [i for i, s in enumerate(steps) if s == "padlib.py:8:4"]
    assert [outcomes[i] for i in for_steps] == ["1", "1", "1"]   # third iteration crashes
    assert "padlib.py:8:4" in {r[0] for r in padproj.rows("loop_head.facts")}


def test_short_circuit_operands_are_steps(padproj):
    t = padproj.test("test_count")
    tr = t["trace"]
    steps = padproj.steps(tr)
    outcomes = {int(r[1]): r[2] for r in padproj.rows("branch.facts") if r[0] == tr}
    first = [s for s in steps if s.startswith("padlib.py:16:")]
    # `x == stop` is an `or` operand; `strict and x < 0` has an `and` operand
    assert any(s.endswith(":or") for s in first)
    assert any(s.endswith(":and") for s in first)
    assert all(i in outcomes for i, s in enumerate(steps) if s.startswith("padlib.py:16:"))


def test_bindings(padproj):
    t = padproj.test("test_count")
    tr = t["trace"]
    binds = [r for r in padproj.rows("bind.facts") if r[0] == tr]
    pairs = {(r[3], r[4]) for r in binds}
    assert ("xs", "xs") in pairs          # positional
    frames = {r[1]: r for r in padproj.rows("frame.facts") if r[0] == tr}
    assert all(frames[r[2]][2] == "padlib.py::count_until" for r in binds)


def test_opaque_callbacks_and_generators(padproj):
    t = padproj.test("test_callback")
    frames = [r for r in padproj.rows("frame.facts") if r[0] == t["trace"]]
    negs = [r for r in frames if r[2] == "padlib.py::neg"]
    # sorted() is opaque: the three calls of the key function hang off the same call step
    assert len(negs) == 3 and len({r[3] for r in negs}) == 1
    steps = padproj.steps(t["trace"])
    assert steps[int(negs[0][3])] == "padlib.py:29:4"
    t = padproj.test("test_gen")
    frames = [r for r in padproj.rows("frame.facts") if r[0] == t["trace"]]
    assert len([r for r in frames if r[2] == "padlib.py::gen"]) == 4   # one frame per resumption


def test_coverage_for_every_test(padproj):
    cov = padproj.rows("coverage.facts")
    tests = {r[0] for r in cov}
    assert len(tests) == 6
    assert ["tests/test_pad.py::test_short", "padlib.py:5:8"] in cov
    ecov = padproj.rows("edge_coverage.facts")
    assert ["tests/test_pad.py::test_short", "padlib.py:4:4", "padlib.py:5:8"] in ecov


def test_flip_changes_the_outcome(padproj, tmp_path):
    man = padproj.manifest
    cmd = [a.replace("{test}", padproj.test("test_pad_wrong")["id"]).replace("{stmt}", "padlib.py:4:4")
           .replace("{occurrence}", "1").replace("{out}", str(tmp_path / "r.json"))
           .replace("{dump}", padproj.d) for a in man["rerun"]["command"]]
    env = dict(os.environ)
    env.update(man["rerun"]["env"])
    subprocess.run(cmd, cwd=man["rerun"]["cwd"], env=env, check=True, timeout=120)
    r = json.loads((tmp_path / "r.json").read_text())
    # flipping `pads <= 0` returns "a" unpadded: still failing, but now an assertion on another value
    assert r["flipped"] is True and r["outcome"] == "fail"
    cmd2 = [a.replace("{test}", padproj.test("test_count")["id"]).replace("{stmt}", "padlib.py:15:4")
            .replace("{occurrence}", "1").replace("{out}", str(tmp_path / "r2.json")).replace("{dump}", padproj.d) for a in man["rerun"]["command"]]
    subprocess.run(cmd2, cwd=man["rerun"]["cwd"], env=env, check=True, timeout=120)
    r2 = json.loads((tmp_path / "r2.json").read_text())
    # the for header's first evaluation flipped: the loop ends at once, count_until returns 0
    assert r2["flipped"] is True and r2["outcome"] == "fail", r2
    cmd3 = [a.replace("{test}", padproj.test("test_count")["id"]).replace("{stmt}", "padlib.py:15:4")
            .replace("{occurrence}", "99").replace("{out}", str(tmp_path / "r3.json")).replace("{dump}", padproj.d) for a in man["rerun"]["command"]]
    subprocess.run(cmd3, cwd=man["rerun"]["cwd"], env=env, check=True, timeout=120)
    r3 = json.loads((tmp_path / "r3.json").read_text())
    assert r3["flipped"] is False and r3["outcome"] == "pass"


def test_timeout_and_step_cap(tmp_path):
    d = run(tmp_path, {"src/padlib.py": LIB, "tests/test_spin.py": """
        from padlib import spin

        def test_hang():
            assert spin(3) == 1

        def test_ok():
            assert spin(4) == 0
        """}, extra_env={"PROSECUTOR_TEST_TIMEOUT": "1", "PROSECUTOR_STEP_CAP": "1000"})
    d.check()
    t = d.test("test_hang")
    assert t["outcome"] == "fail" and t["failure_kind"] == "timeout"
    steps = d.steps(t["trace"])
    assert len(steps) == 1000
    assert t["id"] in d.manifest["notes"]["truncated_traces"]
    assert d.stmts()[steps[t["failure_step"]]][3] in ("padlib.py", "tests/test_spin.py")
    assert d.test("test_ok")["outcome"] == "pass"


def test_no_failing_test_and_empty_collection(tmp_path):
    d = run(tmp_path, {"src/padlib.py": LIB, "tests/test_ok.py": """
        from padlib import neg

        def test_ok():
            assert neg(1) == -1
        """})
    assert d.status["ok"] and d.status["failing"] == 0 and d.status["passing"] == 1
    assert "no failing test" in d.proc.stdout
    d2 = run(tmp_path, {}, args=("tests", "-k", "nothing_matches"))
    assert d2.status["tests"] == 0


def test_syntax_error_in_src(tmp_path):
    # a file under SRC that does not compile (a test data file, code for another Python) and
    # that no test imports is left out with a warning naming file and line; the run goes on
    d = run(tmp_path, {"src/padlib.py": LIB, "src/bad.py": "x = (\n", "tests/test_ok.py": "def test_ok():\n    pass\n"})
    assert d.status["ok"], d.status
    assert any("bad.py:1: syntax error" in w and "left out" in w for w in d.status["warnings"]), d.status
    assert not any("bad.py" in r[0] for r in d.rows("stmt.facts"))


@pytest.mark.skipif(sys.version_info < (3, 10), reason="the project uses `match` (Python 3.10+)")
def test_unusual_code_is_traced_without_changing_outcomes(tmp_path):
    lib = """
    import asyncio, functools
    from dataclasses import dataclass

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)
        return wrapper

    @deco
    def twice(x, k=2):
        return x * k

    @dataclass
    class P:
        x: int

        @property
        def double(self):
            return self.x * 2 if self.x else 0

    async def co(x):
        await asyncio.sleep(0)
        return x + 1

    def walrus(xs):
        if (n := len(xs)) > 1 and xs[0]:
            return f"{n!r:>3}"
        return None

    def matcher(v):
        match v:
            case [a, b] if a < b:
                return "pair"
            case {"k": val}:
                return val
            case _:
                return "other"
    """
    tests = """
    import asyncio
    from lib import twice, P, co, walrus, matcher

    def test_all():
        assert twice(3) == 6 and twice(x=1, k=3) == 3
        assert P(2).double == 4
        assert asyncio.run(co(1)) == 2
        assert walrus([1, 2]) == "  2"
        assert [matcher(v) for v in ([1, 2], {"k": 5}, 3)] == ["pair", 5, "other"]

    def test_fail():
        assert matcher([2, 1]) == "pair"
    """
    d = run(tmp_path, {"src/lib.py": lib, "tests/test_lib.py": tests})
    assert "1 failed, 1 passed" in d.proc.stdout, d.proc.stdout
    stats = d.check()
    assert stats["pairs"] == stats["cfg_pairs"], stats["non_cfg"]
    methods = {r[2] for r in d.rows("frame.facts")}
    assert {"lib.py::twice", "lib.py::P.double", "lib.py::co", "lib.py::walrus", "lib.py::matcher"} <= methods
    t = d.test("test_fail")
    st = d.stmts()
    assert st[d.steps(t["trace"])[t["failure_step"]]][3] == "tests/test_lib.py"
    case_steps = [s for s in d.steps(t["trace"]) if s.endswith(":case")]
    assert len(case_steps) == 3   # [2, 1] fails the guard, is no mapping, matches `_`


def test_app_module_imported_by_conftest_is_instrumented(tmp_path):
    # the conftest imports the code under analysis before pytest_configure runs
    d = run(tmp_path, {"src/padlib.py": LIB,
                       "tests/conftest.py": CONFTEST + "import padlib  # noqa\n",
                       "tests/test_count.py": """
        from padlib import count_until

        def test_count():
            assert count_until([1, -2, 3], 3, strict=True) == 2
        """})
    d.check()
    t = d.test("test_count")
    assert t["outcome"] == "fail"
    steps = d.steps(t["trace"])
    assert any(s.endswith(":and") for s in steps), steps   # pseudo-statements: instrumented
    assert not d.manifest["notes"]["warnings"]
