"""Subtests (unittest's `self.subTest`, pytest's `subtests` fixture): pytest >= 9 reports each
subtest through pytest_runtest_makereport while the test still runs. A failing subtest must make
the test a failing, traced test whose failure point is the subtest's failure, not a failing test
without a trace (which left a whole case with nothing to localize) or a passing one."""

import pytest

from test_defects import base_env, plain, trace, write

SUB_FILES = {
    "src/spec/__init__.py": "",
    "src/spec/m.py": """
        SUPPORTED = ("a", "b")


        def names(spec):
            if spec in SUPPORTED:        # the fault: `not in`
                raise ValueError(spec)
            return {"a": [1], "b": [2]}[spec]
        """,
    "tests/conftest.py": "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'src'))\n",
    "tests/test_m.py": """
        import unittest

        from spec.m import names


        class NamesTests(unittest.TestCase):
            def test_invalid(self):
                for spec in ("x", "y"):
                    with self.subTest(spec=spec):
                        with self.assertRaises(ValueError):
                            names(spec)

            def test_unrelated(self):
                self.assertEqual(len("ab"), 2)
        """,
}


def test_a_failing_unittest_subtest_makes_a_traced_failing_test(tmp_path):
    write(tmp_path, SUB_FILES)
    outcomes, out = plain(tmp_path)
    assert "failed" in out.splitlines()[-1], out
    d = trace(tmp_path)
    assert d.status["ok"], d.proc.stdout
    d.check()
    t = d.test("test_invalid")
    assert t["outcome"] == "fail", t
    assert t["failure"].startswith("KeyError"), t
    assert "untraced" not in t
    steps = [r for r in d.rows("step.facts") if r[0] == t["trace"]]
    assert steps, "the failing test has a trace"
    # the failure point is where the first subtest's KeyError arose: in `names`
    stmts = d.stmts()
    fstep = steps[t["failure_step"]]
    assert stmts[fstep[2]][3] == "spec/m.py", (fstep, stmts[fstep[2]])
    assert d.test("test_unrelated")["outcome"] == "pass"


def test_a_flip_that_repairs_every_subtest_passes(tmp_path):
    write(tmp_path, SUB_FILES)
    d = trace(tmp_path)
    stmt = next(r[0] for r in d.rows("stmt.facts") if r[3] == "spec/m.py" and r[2] == "branch")
    tid = d.test("test_invalid")["id"]
    # the first subtest alone is repaired: the second still fails
    r1 = d.flip(tid, stmt, 1, tmp_path / "r1.json", base_env())
    assert r1["flipped"] is True and r1["outcome"] == "fail", r1


@pytest.mark.skipif(int(pytest.__version__.split(".")[0]) < 9, reason="the subtests fixture is pytest >= 9")
def test_a_failing_pytest_subtest_makes_a_traced_failing_test(tmp_path):
    files = dict(SUB_FILES)
    files["tests/test_m.py"] = """
        import pytest

        from spec.m import names


        def test_invalid(subtests):
            for spec in ("x", "y"):
                with subtests.test(spec=spec):
                    with pytest.raises(ValueError):
                        names(spec)
        """
    write(tmp_path, files)
    d = trace(tmp_path)
    d.check()
    t = d.test("test_invalid")
    assert t["outcome"] == "fail" and t["failure"].startswith("KeyError"), t
    assert [r for r in d.rows("step.facts") if r[0] == t["trace"]]
