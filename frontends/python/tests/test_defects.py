"""Regression tests of silent data errors of the tracer (issue 12 §1, items 1-5), each on a
small project traced for real.

Set PROSECUTOR_TRACER_PKG to the parent directory of another copy of `prosecutor_tracer`
(e.g. the previous version) to run these tests against it.
"""

import json
import os
import subprocess
import sys
import textwrap
import tomllib

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_PARENT = os.environ.get("PROSECUTOR_TRACER_PKG") or os.path.dirname(HERE)
sys.path.insert(0, HERE)

import dumpcheck  # noqa: E402

CONFTEST = "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'src'))\n"


def write(root, files):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


def base_env(pythonpath=None, hashseed="0"):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PROSECUTOR_") and k not in ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTHONHASHSEED")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    if hashseed is not None:
        env["PYTHONHASHSEED"] = hashseed
    return env


def plain(root, env=None, args=("tests",)):
    """The suite without the tracer: {test id: outcome} and pytest's output."""
    env = dict(env or base_env())
    env["PYTEST_ADDOPTS"] = "-p no:cacheprovider"
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", *args], cwd=root, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    out = {}
    for line in p.stdout.splitlines():
        for word, res in (("PASSED ", "pass"), ("FAILED ", "fail"), ("ERROR ", "fail")):
            if line.startswith(word):
                out[line[len(word):].split(" - ")[0].strip()] = res
    return out, p.stdout


def trace(root, env=None, args=("tests",), src="src", extra=None):
    """The suite under the tracer, as the Rust driver runs it: the tracer's package is prepended
    to the user's PYTHONPATH and the plugin appended to PYTEST_ADDOPTS."""
    env = dict(env or base_env())
    env["PYTHONPATH"] = PKG_PARENT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTEST_ADDOPTS"] = (env.get("PYTEST_ADDOPTS", "") + " -p no:cacheprovider -p prosecutor_tracer.plugin").strip()
    dump = root / "dump"
    env.update({"PROSECUTOR_MODE": "trace", "PROSECUTOR_SRC": str(root / src), "PROSECUTOR_OUT": str(dump),
                "PROSECUTOR_TRACE_ALL": "1", "PROSECUTOR_TEST_TIMEOUT": "120",  # a loaded machine is slow
                "PROSECUTOR_COMMAND": json.dumps([sys.executable, "-m", "pytest", "-q", *args])})
    env.update(extra or {})
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", *args], cwd=root, env=env,
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
        assert os.path.exists(mp), proc.stdout
        with open(mp, "rb") as fh:
            self.manifest = tomllib.load(fh)

    def rows(self, name):
        return dumpcheck.read(self.d, name)

    def tests(self):
        return {t["id"]: t for t in self.manifest["test"]}

    def test(self, name):
        for t in self.manifest["test"]:
            if t["id"].endswith("::" + name):
                return t
        raise KeyError(name)

    def stmts(self):
        return {r[0]: r for r in self.rows("stmt.facts")}

    def frames(self, trace):
        return {r[1]: r for r in self.rows("frame.facts") if r[0] == trace}

    def steps(self, trace):
        return [r for r in self.rows("step.facts") if r[0] == trace]

    def coverage(self, test_id):
        return {r[1] for r in self.rows("coverage.facts") if r[0] == test_id}

    def check(self):
        errors, stats = dumpcheck.check(self.d)
        assert errors == [], errors[:10]
        return stats

    def flip(self, test, stmt, occurrence, out, env):
        """Runs the manifest's [rerun] recipe as the Rust side does: `env` (the environment of
        whoever localizes) updated with [rerun].env, in [rerun].cwd."""
        rr = self.manifest["rerun"]
        cmd = [a.replace("{test}", test).replace("{stmt}", stmt).replace("{occurrence}", str(occurrence))
               .replace("{out}", str(out)).replace("{dump}", self.d) for a in rr["command"]]
        env = dict(env)
        env.update(rr["env"])
        subprocess.run(cmd, cwd=rr["cwd"], env=env, check=True, timeout=120,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        with open(out) as fh:
            return json.load(fh)


# ----------------------------------------------------------------------------------------------
# 2. counterfactual re-runs keep the user's environment

PP_FILES = {
    "src/ppkg/__init__.py": "",
    "src/ppkg/m.py": """
        def absval(x):
            if x > 0:
                return x
            return x
        """,
    # no conftest: `ppkg` is importable only through PYTHONPATH=src
    "tests/test_m.py": """
        from ppkg.m import absval


        def test_pos():
            assert absval(3) == 3


        def test_neg():
            assert absval(-2) == -2
        """,
}


def test_rerun_keeps_the_users_pythonpath(tmp_path):
    write(tmp_path, PP_FILES)
    d = trace(tmp_path, base_env(pythonpath="src"))
    assert d.status["ok"], d.proc.stdout
    assert {t["id"]: t["outcome"] for t in d.manifest["test"]} == {
        "tests/test_m.py::test_pos": "pass", "tests/test_m.py::test_neg": "pass"}
    # whoever runs the experiments may have another environment (no PYTHONPATH at all here)
    r = d.flip("tests/test_m.py::test_neg", "ppkg/m.py:3:4", 1, tmp_path / "r.json", base_env())
    assert r["flipped"] is True, r
    assert r["outcome"] == "pass" and r["detail"].startswith("flipped: ppkg/m.py:3:4#1 to 1"), r
    # a user's PYTHONHASHSEED is kept too
    d2 = trace(tmp_path, base_env(pythonpath="src", hashseed="123"))
    assert d2.manifest["rerun"]["env"]["PYTHONHASHSEED"] == "123"
    with open(os.path.join(d2.d, "rerun.json")) as fh:
        cfg = json.load(fh)
    assert cfg["env"]["PYTHONPATH"] == "src" and cfg["env"]["PYTHONHASHSEED"] == "123"
    assert cfg["env"]["PYTEST_ADDOPTS"] == "-p no:cacheprovider"


def test_void_flips_say_why(tmp_path):
    write(tmp_path, PP_FILES)
    d = trace(tmp_path, base_env(pythonpath="src"))
    env = base_env()
    r = d.flip("tests/test_m.py::test_nope", "ppkg/m.py:3:4", 1, tmp_path / "r1.json", env)
    assert r == {"outcome": "crash", "flipped": False, "detail": "test not collected: tests/test_m.py::test_nope"}
    r = d.flip("tests/test_m.py::test_neg", "ppkg/m.py:3:4", 2, tmp_path / "r2.json", env)
    assert r["flipped"] is False and r["outcome"] == "pass"
    assert r["detail"] == "branch not reached: ppkg/m.py:3:4#2 (evaluated 1 time)", r
    # a test-code branch is reached but not flippable
    write(tmp_path, {"tests/test_m.py": PP_FILES["tests/test_m.py"] + """

        def test_branchy():
            if absval(1) > 0:
                assert absval(-1) == -1
        """})
    d = trace(tmp_path, base_env(pythonpath="src"))
    stmt = next(r[0] for r in d.rows("stmt.facts") if r[3] == "tests/test_m.py" and r[2] == "branch")
    r = d.flip("tests/test_m.py::test_branchy", stmt, 1, tmp_path / "r3.json", env)
    assert r["flipped"] is False and r["detail"].startswith(f"branch not flippable: {stmt}#1: "), r
    # the module cannot be imported in the re-run: the collection error is named
    (tmp_path / "src/ppkg/m.py").rename(tmp_path / "src/ppkg/gone.py")
    r = d.flip("tests/test_m.py::test_neg", "ppkg/m.py:3:4", 1, tmp_path / "r4.json", env)
    assert r["outcome"] == "crash" and r["detail"].startswith("test not collected: tests/test_m.py::test_neg "
                                                              "(collection errors: tests/test_m.py: "), r
    assert "ModuleNotFoundError" in r["detail"], r


# ----------------------------------------------------------------------------------------------
# 4. tests inherited from a base class / mixin in another module, test functions imported

MIXIN_FILES = {
    "src/lru.py": """
        class LRU:
            def __init__(self, size):
                self.size = size
                self.items = []

            def get(self, k, default=None):
                for (key, v) in self.items:
                    if key == k:
                        return v
                return default

            def put(self, k, v):
                self.items = [(a, b) for (a, b) in self.items if a != k]
                self.items.append((k, v))
                if len(self.items) > self.size + 1:      # bug: should be > self.size
                    self.items.pop(0)
        """,
    "tests/conftest.py": CONFTEST,
    "tests/__init__.py": """
        class CacheTestMixin:
            def test_get(self):
                c = self.make(2)
                c.put("a", 1)
                self.assertEqual(c.get("a"), 1)

            def test_evict(self):
                c = self.make(1)
                c.put("a", 1)
                c.put("b", 2)
                self.assertIsNone(c.get("a"))
        """,
    "tests/helpers.py": """
        from lru import LRU


        def test_shared_overwrite():
            c = LRU(2)
            c.put("a", 1)
            c.put("a", 2)
            assert c.get("a") == 2
        """,
    "tests/test_lru.py": """
        import unittest

        from lru import LRU
        from tests import CacheTestMixin
        from tests.helpers import test_shared_overwrite


        class TestLRU(CacheTestMixin, unittest.TestCase):
            def make(self, n):
                return LRU(n)

            def test_own(self):
                self.assertEqual(self.make(3).get("x", 0), 0)
        """,
    "tests/test_gen.py": """
        from lru import LRU

        # a test whose code comes from no file: it cannot be traced (and must be reported)
        exec("def test_generated():\\n    assert LRU(1).get('z') is None\\n")
        """,
}


@pytest.mark.parametrize("src", ["src", "."])
def test_inherited_and_imported_tests_are_traced(tmp_path, src):
    write(tmp_path, MIXIN_FILES)
    d = trace(tmp_path, src=src)
    d.check()
    tests = d.tests()
    assert sorted(tests) == [
        "tests/test_gen.py::test_generated",
        "tests/test_lru.py::TestLRU::test_evict",
        "tests/test_lru.py::TestLRU::test_get",
        "tests/test_lru.py::TestLRU::test_own",
        "tests/test_lru.py::test_shared_overwrite",
    ], sorted(tests)
    assert tests["tests/test_lru.py::TestLRU::test_evict"]["outcome"] == "fail"
    methods = {r[0]: r[1] for r in d.rows("method.facts")}
    lru = "lru.py" if src == "src" else "src/lru.py"
    roots = {
        "tests/test_lru.py::TestLRU::test_evict": "tests/__init__.py::CacheTestMixin.test_evict",
        "tests/test_lru.py::TestLRU::test_get": "tests/__init__.py::CacheTestMixin.test_get",
        "tests/test_lru.py::TestLRU::test_own": "tests/test_lru.py::TestLRU.test_own",
        "tests/test_lru.py::test_shared_overwrite": "tests/helpers.py::test_shared_overwrite",
    }
    for tid, root in roots.items():
        t = tests[tid]
        assert "trace" in t, tid
        frames = d.frames(t["trace"])
        # the root frame is the test function's, or the synthetic root of a trace beginning
        # with import-time code (the test function's frame is then its callee)
        tops = [f for f in frames.values() if f[3] == "-"]
        assert len(tops) == 1 and tops[0][2] in (root, "<prosecutor>::<setup>"), (tid, tops)
        assert any(f[2] == root for f in frames.values()), (tid, frames)
        # the file the test is defined in is test code; the code under test is app code
        assert methods[root] == "test", (root, methods.get(root))
        assert methods[f"{lru}::LRU.get"] == "app"
        assert any(s.startswith(lru + ":") for s in d.coverage(tid)), tid
    # the failing test's failure point is its own assertion, in the mixin
    t = tests["tests/test_lru.py::TestLRU::test_evict"]
    fs = d.steps(t["trace"])[t["failure_step"]][2]
    assert fs.startswith("tests/__init__.py:"), fs
    # the one test that cannot be traced is named in the warnings (status and manifest)
    gen = tests["tests/test_gen.py::test_generated"]
    assert "trace" not in gen and not d.coverage(gen["id"])
    for warnings in (d.status["warnings"], d.manifest["notes"]["warnings"]):
        w = [x for x in warnings if "not traced" in x]
        assert len(w) == 1 and w[0].startswith("1 test(s) ran but were not traced") \
            and "tests/test_gen.py::test_generated" in w[0], warnings
    assert d.manifest["notes"]["untraced_tests"] == ["tests/test_gen.py::test_generated"]


# ----------------------------------------------------------------------------------------------
# 1. the assertion report (pytest's rewriting, unittest's messages) is not program behaviour

REPORT_FILES = {
    "src/vec.py": """
        def fmt(x):
            return "<%s>" % x


        class Vec:
            def __init__(self, *xs):
                self.xs = list(xs)

            def __eq__(self, other):
                return isinstance(other, Vec) and self.xs == other.xs

            def __hash__(self):
                return hash(tuple(self.xs))

            def __repr__(self):
                return "Vec(" + ", ".join([fmt(x) for x in self.xs]) + ")"

            def __len__(self):
                return len(self.xs)

            def __iter__(self):
                return iter(self.xs)


        def make(n):
            return Vec(*range(n))
        """,
    "tests/conftest.py": CONFTEST,
    "tests/test_vec.py": """
        import unittest

        from vec import Vec, make


        def test_pytest_eq():
            assert make(2) == Vec(0, 2)


        def test_pytest_list():
            assert [Vec(1), Vec(2)] == [Vec(1), Vec(3)]


        def test_repr_genuine():
            assert repr(make(1)) == "Vec(0)"


        def test_repr_passing():
            assert repr(Vec(1)) == "Vec(<1>)"


        def test_pformat_genuine():
            import pprint
            assert pprint.pformat([Vec(1)]) == "[Vec(<1>)]"


        class TestUnit(unittest.TestCase):
            def test_ut_eq(self):
                self.assertEqual(make(2), Vec(0, 2))

            def test_ut_list(self):
                self.assertEqual([Vec(1), Vec(2)], [Vec(1), Vec(3)])

            def test_ut_in(self):
                self.assertIn(Vec(5), [Vec(1), Vec(2)])
        """,
}


def test_assertion_report_is_not_traced(tmp_path):
    write(tmp_path, REPORT_FILES)
    d = trace(tmp_path)
    d.check()
    stmts = d.stmts()
    # test -> (frames of Vec.__eq__ the comparison itself makes, whether __repr__ is genuine)
    want = {
        "test_pytest_eq": (1, False),
        "test_pytest_list": (2, False),
        "test_repr_genuine": (0, True),
        "test_repr_passing": (0, True),
        "test_pformat_genuine": (0, True),
        "test_ut_eq": (1, False),
        "test_ut_list": (2, False),
        "test_ut_in": (2, False),
    }
    for name, (eqs, genuine_repr) in want.items():
        t = d.test(name)
        assert t["outcome"] == ("pass" if name in ("test_repr_passing", "test_pformat_genuine") else "fail"), t
        frames = [f[2] for f in d.frames(t["trace"]).values()]
        assert frames.count("vec.py::Vec.__eq__") == eqs, (name, frames)
        reprs = {"vec.py::Vec.__repr__", "vec.py::fmt"}
        if genuine_repr:
            assert reprs <= set(frames), (name, frames)
        else:
            assert not reprs & set(frames), (name, frames)
            assert not {"vec.py::Vec.__len__", "vec.py::Vec.__iter__"} & set(frames), (name, frames)
            cov = d.coverage(t["id"])
            assert not any(stmts[s][1] in reprs for s in cov), (name, sorted(cov))
        if t["outcome"] == "fail":
            # the failure point is the failed assertion of the test
            fs = stmts[d.steps(t["trace"])[t["failure_step"]][2]]
            assert fs[3] == "tests/test_vec.py" and fs[5].startswith(("assert ", "self.assert")), (name, fs)


# ----------------------------------------------------------------------------------------------
# 3. tracing keeps no user object alive: weakrefs, finalizers and gc see what a plain run sees

GC_FILES = {
    "src/reg.py": """
        import weakref


        class Node:
            live = 0

            def __init__(self, name):
                self.name = name
                Node.live += 1

            def __del__(self):
                Node.live -= 1


        class Registry:
            def __init__(self):
                self.items = weakref.WeakValueDictionary()

            def add(self, key, obj):
                try:
                    old = self.items[key]       # a KeyError, caught: its traceback holds `obj`
                except KeyError:
                    old = None
                self.items[key] = obj
                return obj if old is None else old

            def get(self, key):
                return self.items.get(key)


        def check(obj):
            if obj.name == "bad":
                raise ValueError("bad node " + obj.name)
            return obj


        def make(name):
            return Node(name)
        """,
    "tests/conftest.py": CONFTEST,
    "tests/test_gc.py": """
        import gc
        import weakref

        from reg import Node, Registry, check, make


        def test_wvd_entry_disappears():
            r = Registry()
            n = r.add("a", make("a"))
            check(n)
            del n
            gc.collect()
            assert r.get("a") is None


        def test_weakref_without_gc():
            n = make("b")
            w = weakref.ref(n)
            check(n)
            del n
            assert w() is None


        def test_caught_exception():
            n = make("bad")
            w = weakref.ref(n)
            try:
                check(n)
            except ValueError:
                pass
            del n
            gc.collect()
            assert w() is None


        def test_weakset_and_finalize():
            s = weakref.WeakSet()
            done = []
            n = make("c")
            s.add(n)
            weakref.finalize(n, done.append, "c")
            check(n)
            del n
            assert len(s) == 0 and done == ["c"]


        def test_del_counts():
            before = Node.live
            for name in ("d", "e"):
                check(make(name))
            assert Node.live == before


        def test_fails_and_leaves_one_behind():
            n = make("left")
            check(n)
            assert n.name == "right"


        def test_counts_live_instances():
            assert Node.live == 1        # the failed test's traceback keeps its node (plain pytest too)


        def test_counts_live_instances_after_gc():
            gc.collect()
            assert Node.live == 0
        """,
}


def test_tracing_keeps_no_object_alive(tmp_path):
    write(tmp_path, GC_FILES)
    want, out = plain(tmp_path)
    assert len(want) == 8, out
    assert list(want.values()).count("fail") == 1, out
    d = trace(tmp_path)
    got = {t["id"]: t["outcome"] for t in d.manifest["test"]}
    assert got == want, d.proc.stdout
    d.check()
    assert all("trace" in t for t in d.manifest["test"])


# ----------------------------------------------------------------------------------------------
# 5. node ids that differ between the traced run and a re-run

IDS_FILES = {
    "src/words.py": """
        def vowels(word):
            n = 0
            for ch in word:
                if ch in "aeio":          # bug: "u" is missing
                    n += 1
            return n
        """,
    "tests/conftest.py": CONFTEST,
    "tests/test_words.py": """
        import os

        import pytest

        from words import vowels

        COUNT = {"fig": 1, "kiwi": 2, "plum": 1, "apple": 2, "mango": 2, "lemon": 2}


        class W:
            def __init__(self, w):
                self.w = w

            def __hash__(self):
                return hash(self.w)

            def __eq__(self, other):
                return isinstance(other, W) and other.w == self.w

            def __repr__(self):
                return f"W({self.w!r})"


        # a set: its order (so the ids w0 ... w5) depends on the hash seed
        @pytest.mark.parametrize("w", {W(x) for x in COUNT})
        def test_set_order(w):
            assert vowels(w.w) == COUNT[w.w]


        # ids made of object addresses: never the same twice
        @pytest.mark.parametrize("w", [W("fig"), W("plum")], ids=lambda w: f"{w.w}-{id(w):x}")
        def test_address_ids(w):
            assert vowels(w.w) == COUNT[w.w]


        # values (and their number) that change between runs: cannot be matched
        @pytest.mark.parametrize("tag", [f"{os.getpid()}-{i}" for i in range(int(os.environ.get("NTAGS", "2")))])
        def test_run_dependent(tag):
            assert vowels("plum" + tag) == 1
        """,
}


def test_parametrized_ids_that_change_between_runs(tmp_path):
    write(tmp_path, IDS_FILES)
    # the user's own hash seed: every process orders the set differently
    d = trace(tmp_path, base_env(hashseed="random"))
    fails = sorted(t["id"] for t in d.manifest["test"] if t["outcome"] == "fail")
    assert len(fails) == 4, fails       # plum x2, and both run-dependent tags
    stmt = "words.py:5:8"                # `if ch in "aeio"`; its 3rd evaluation sees the "u" of plum
    env = base_env()
    for tid in fails:
        if "test_run_dependent" in tid:
            continue
        r = d.flip(tid, stmt, 3, tmp_path / "r.json", env)
        # the same test was re-run (plum: flipping the "u" makes it pass), whatever its id now
        assert r["outcome"] == "pass" and r["flipped"] is True, (tid, r)
        if "test_address_ids" in tid:
            assert "; test matched as tests/test_words.py::test_address_ids[plum-" in r["detail"], r
            assert r["detail"].endswith(" by its parameter values"), r
    # a test whose parameters (and their number) differ in the re-run is reported, not guessed
    tid = next(t for t in fails if "test_run_dependent" in t)
    env["NTAGS"] = "3"
    r = d.flip(tid, stmt, 3, tmp_path / "r.json", env)
    assert r["outcome"] == "crash" and r["flipped"] is False, r
    assert r["detail"].startswith(f"test not matched: {tid} (3 tests of tests/test_words.py::test_run_dependent "
                                  f"here, 2 when traced; none with the recorded parameters tag='"), r


def test_flip_run_whose_report_pytest_loses_says_so(tmp_path):
    """A flip re-run in which pytest raises an INTERNALERROR while reporting the test (CPython
    3.11.7 does, parsing a traceback's source after a RecursionError: tornado-4) used to come
    back as "test not collected", although the test was collected and ran.  It says what
    happened."""
    write(tmp_path, {
        "src/sign.py": """
            def sign(x):
                if x > 0:
                    return 1
                return 0
            """,
        "tests/conftest.py": """
            import os, sys
            sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'src'))


            def pytest_runtest_makereport(item, call):
                if os.environ.get("BREAK_REPORTS") and call.when == "call":
                    raise RuntimeError("report lost")
            """,
        "tests/test_sign.py": """
            from sign import sign


            def test_sign():
                assert sign(3) == 0
            """,
    })
    d = trace(tmp_path)
    stmt = next(r[0] for r in d.rows("stmt.facts") if r[0].startswith("sign.py:3:"))
    env = base_env()
    r = d.flip("tests/test_sign.py::test_sign", stmt, 1, tmp_path / "ok.json", env)
    assert r["outcome"] == "pass", r
    env["BREAK_REPORTS"] = "1"
    r = d.flip("tests/test_sign.py::test_sign", stmt, 1, tmp_path / "lost.json", env)
    assert r["outcome"] == "crash" and r["detail"].startswith("pytest internal error: "), r
    assert "RuntimeError: report lost" in r["detail"], r
