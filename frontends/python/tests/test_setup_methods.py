"""unittest setUp / tearDown are traced as part of the test (docs/frontend-python.md, "Tracing
model"): their frames and the test function's are callees of the synthetic root
`<prosecutor>::<setup>`, in execution order. Before, only the test function's frame was a root:
a test failing in setUp (BugsInPy scrapy-1: `setUp` calls `spider_opened` -> `get_host_regex`,
which raises) had no trace and no coverage, and app code called by setUp was in no trace."""

from test_defects import base_env, plain, trace, write

FILES = {
    "src/reg/__init__.py": "",
    "src/reg/registry.py": """
        class Registry:
            def __init__(self):
                self.items = {}

            def open(self, names):
                for n in names:
                    if n is None:
                        raise TypeError("name is None")
                    self.items[n] = len(n)
                return self

            def get(self, n):
                return self.items[n]


        def scale(x, big):
            if big:
                return x * 10
            return x
        """,
    "tests/conftest.py": "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'src'))\n",
    # a base class in a helper module of the tests (not a test file, outside SRC): traced
    # because a collected test inherits its setUp / tearDown
    "tests/base.py": """
        import unittest

        from reg.registry import Registry


        class Base(unittest.TestCase):
            def setUp(self):
                self.reg = Registry().open(["a", "bb"])
                self.log = []

            def tearDown(self):
                self.log.append("down")
        """,
    "tests/test_reg.py": """
        import unittest

        from base import Base
        from reg.registry import Registry, scale


        class TestPass(Base):
            def test_get(self):
                self.assertEqual(self.reg.get("bb"), 2)


        class TestFailBody(Base):
            def test_get(self):
                self.assertEqual(self.reg.get("a"), 2)


        class TestBadSetUp(unittest.TestCase):
            def setUp(self):
                self.reg = Registry()
                self.reg.open(["a", None])

            def test_get(self):
                self.assertEqual(self.reg.get("a"), 1)


        class TestScale(unittest.TestCase):
            def setUp(self):
                self.v = scale(3, True)

            def test_scale(self):
                self.assertEqual(self.v, 3)


        def test_plain_function():
            assert Registry().open(["x"]).get("x") == 1
        """,
}


def traced(tmp_path, extra=None):
    write(tmp_path, FILES)
    d = trace(tmp_path, extra=extra)
    assert d.status["ok"], d.proc.stdout
    return d


def layout(d, t):
    """[(method, call_step)] of the trace's steps, and the index of the root's test step."""
    frames = d.frames(t["trace"])
    steps = d.steps(t["trace"])
    meth = [(frames[r[3]][2], frames[r[3]][3]) for r in steps]
    (k,) = [i for i, r in enumerate(steps) if r[2] == "<prosecutor>:2:0"]
    return steps, meth, k


def test_a_test_failing_in_setup_is_traced_with_its_app_code(tmp_path):
    d = traced(tmp_path)
    t = d.test("TestBadSetUp::test_get")
    assert t["outcome"] == "fail" and t["failure"].startswith("TypeError"), t
    assert t.get("trace") and "untraced" not in t, t
    assert "tests/test_reg.py::TestBadSetUp::test_get" not in d.manifest["notes"]["untraced_tests"]
    steps, meth, k = layout(d, t)
    stmts = d.stmts()
    # setUp is a callee of the synthetic root; Registry.open's steps are in the trace
    assert ("tests/test_reg.py::TestBadSetUp.setUp", str(k)) in meth
    assert any(m == "reg/registry.py::Registry.open" for (m, _) in meth)
    # the failure point: the statement raising in the app code
    fs = steps[t["failure_step"]]
    assert stmts[fs[2]][5] == 'raise TypeError("name is None")', (fs, stmts[fs[2]])
    # the test function was never entered: no frame of it
    assert not any(m == "tests/test_reg.py::TestBadSetUp.test_get" for (m, _) in meth)
    # coverage holds the app code setUp ran
    cov = d.coverage(t["id"])
    assert fs[2] in cov
    d.check()


def test_setup_test_and_teardown_frames_in_execution_order(tmp_path):
    # with the import-time prefix (`--import-time`), so that module bodies precede setUp
    d = traced(tmp_path, extra={"PROSECUTOR_SETUP": "1"})
    for name, outcome in (("TestPass::test_get", "pass"), ("TestFailBody::test_get", "fail")):
        t = d.test(name)
        assert t["outcome"] == outcome, t
        steps, meth, k = layout(d, t)
        cls = name.split("::")[0]
        roots = [(i, m) for i, (m, cs) in enumerate(meth) if cs == str(k)]
        # first step of each frame called from the root's test step (the module bodies of
        # the prefix are called from step 0)
        firsts = []
        for i, m in roots:
            if not firsts or firsts[-1][1] != m:
                firsts.append((i, m))
        assert [m for (_, m) in firsts] == ["tests/base.py::Base.setUp",
                                            f"tests/test_reg.py::{cls}.test_get",
                                            "tests/base.py::Base.tearDown"], firsts
        setup_steps = [i for i, (m, _) in enumerate(meth) if m == "tests/base.py::Base.setUp"]
        test_steps = [i for i, (m, _) in enumerate(meth) if m == f"tests/test_reg.py::{cls}.test_get"]
        down_steps = [i for i, (m, _) in enumerate(meth) if m == "tests/base.py::Base.tearDown"]
        assert max(setup_steps) < min(test_steps) and max(test_steps) < min(down_steps)
        # the app code setUp calls is in the trace, between setUp's steps and the test's
        opens = [i for i, (m, _) in enumerate(meth) if m == "reg/registry.py::Registry.open"]
        assert opens and min(setup_steps) < min(opens) < min(test_steps)
        if outcome == "fail":
            fs = steps[t["failure_step"]]
            assert d.stmts()[fs[2]][5] == 'self.assertEqual(self.reg.get("a"), 2)', fs
    # setUp's object flows to the test through `self` (heap rows of the same trace)
    t = d.test("TestPass::test_get")
    rows = [r for r in d.rows("heap.facts") if r[0] == t["trace"]]
    assert rows
    # a plain test function keeps its layout (no synthetic root unless a prefix needs it)
    t = d.test("test_plain_function")
    steps, meth, k = layout(d, t)
    assert meth[k + 1] == ("tests/test_reg.py::test_plain_function", str(k))
    d.check()


def test_without_the_import_time_prefix_the_synthetic_root_holds_setup(tmp_path):
    d = traced(tmp_path, extra={"PROSECUTOR_SETUP": "0"})
    d.check()
    t = d.test("TestPass::test_get")
    steps, meth, k = layout(d, t)
    assert [r[2] for r in steps[:2]] == ["<prosecutor>:1:0", "<prosecutor>:2:0"] and k == 1
    assert meth[2] == ("tests/base.py::Base.setUp", "1")
    # a test without setUp / tearDown: its function is the root, as before
    t = d.test("test_plain_function")
    frames = d.frames(t["trace"])
    first = d.steps(t["trace"])[0]
    assert frames[first[3]][2:] == ["tests/test_reg.py::test_plain_function", "-"]
    # a test failing in setUp: its only frame besides the synthetic root's is setUp's, and
    # the failure step counts from the synthetic root's step 0
    t = d.test("TestBadSetUp::test_get")
    steps, meth, k = layout(d, t)
    assert k == 1 and meth[2] == ("tests/test_reg.py::TestBadSetUp.setUp", "1")
    fs = steps[t["failure_step"]]
    assert d.stmts()[fs[2]][5] == 'raise TypeError("name is None")'


def test_flip_reaches_a_branch_of_app_code_called_from_setup(tmp_path):
    d = traced(tmp_path)
    t = d.test("TestScale::test_scale")
    assert t["outcome"] == "fail", t
    steps, meth, k = layout(d, t)
    stmts = d.stmts()
    (i,) = [i for i, r in enumerate(steps) if stmts[r[2]][5] == "if big:"]
    assert meth[i][0] == "reg/registry.py::scale"
    stmt = steps[i][2]
    r = d.flip(t["id"], stmt, 1, tmp_path / "r1.json", base_env())
    assert r["flipped"] is True and r["outcome"] == "pass", r
    r = d.flip(t["id"], stmt, 2, tmp_path / "r2.json", base_env())
    assert r["flipped"] is False and r["detail"].startswith("branch not reached"), r


def test_outcomes_equal_a_plain_run(tmp_path):
    d = traced(tmp_path)
    d.check()
    outcomes, _ = plain(tmp_path)
    assert outcomes == {tid: t["outcome"] for tid, t in d.tests().items()}
    assert len(outcomes) == 5
    # every test has a trace (PROSECUTOR_TRACE_ALL), the one failing in setUp too
    assert all(t.get("trace") for t in d.tests().values()), d.tests()
