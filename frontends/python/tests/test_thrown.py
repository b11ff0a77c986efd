"""A flip re-run reports `thrown` when the outermost call into the code under analysis that was
open at the flip ended by an exception, which then reached test code (Tracer._watch_throw;
docs/model.md, "A pass by a thrown exception"): a test that expects an exception passes on any
flipped branch that throws one. Checked on the warm runner and the cold path alike."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from test_tracer import run  # noqa: E402
from test_warm_runner import Server, cold, req, stmt  # noqa: E402

LIB = """
    def parse_age(text):
        value = int(text)
        if value < -1:
            raise ValueError("negative")
        return value


    def sign(x):
        if x > 0:
            return 1
        return -1


    def strict(text):
        if text.isdigit():
            return int(text)
        raise ValueError(text)


    def lenient(text):
        try:
            return strict(text)
        except ValueError:
            return -1


    def ages(texts):
        return list(map(parse_age, texts))


    def countdown(n):
        if n == 0:
            return 0
        return countdown(n - 1)
    """

TESTS = """
    import pytest

    from app import ages, countdown, lenient, parse_age, sign


    def test_negative():
        with pytest.raises(ValueError):
            parse_age("-1")


    def test_sign():
        assert sign(0) == 1


    def test_lenient():
        assert lenient("7") == -1


    def test_ages():
        with pytest.raises(ValueError):
            ages(["3", "-1"])


    def test_runaway():
        assert countdown(-1) == 0
    """


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("thrown")
    d = run(tmp, {"src/app.py": LIB, "tests/test_app.py": TESTS})
    assert d.manifest is not None, d.proc.stdout
    return d


def cases(d):
    t = "tests/test_app.py::"
    return [
        # the flip throws out of parse_age into pytest.raises
        (t + "test_negative", stmt(d, "if value < -1:"), 1),
        # the flip returns the expected value: no exception
        (t + "test_sign", stmt(d, "if x > 0:"), 1),
        # the flip throws in strict, but lenient (the outermost call) catches it
        (t + "test_lenient", stmt(d, "if text.isdigit():"), 1),
        # parse_age runs under map() inside ages: the library frame between is passed over,
        # and ages is the call that throws into the test
        (t + "test_ages", stmt(d, "if value < -1:"), 2),
    ]


WANT = [("pass", True), ("pass", False), ("pass", False), ("pass", True)]


def test_a_pass_by_a_thrown_exception_is_reported_warm(proj):
    s = Server(proj)
    got = s.ask([req(i, *c) for i, c in enumerate(cases(proj))])
    s.close()
    assert [(got[i]["outcome"], got[i].get("thrown", False)) for i in range(4)] == WANT, got
    assert got[0]["detail"].endswith("passed by an exception: the call that held the flip threw it into the test")


def test_a_pass_by_a_thrown_exception_is_reported_cold(proj, tmp_path):
    got = [cold(proj, *c, tmp_path) for c in cases(proj)]
    assert [(r["outcome"], r.get("thrown", False)) for r in got] == WANT, got


def test_the_control_run_reports_nothing_thrown(proj, tmp_path):
    """Nothing is forced, so nothing is watched, although the test's own call throws."""
    r = cold(proj, "tests/test_app.py::test_lenient", "", 0, tmp_path)
    assert r["outcome"] == "fail" and "thrown" not in r, r


def test_a_flip_at_the_recursion_limit_is_reached(proj, tmp_path):
    """The watch starts at the first forced instance. At the recursion limit (a runaway
    recursion, as QuixBugs `gcd`) looking for the frame to watch raises RecursionError: the
    instance still counts as reached, so the flip is an experiment, not a void one (before,
    every such flip was void: "its outcome is not reported by the instrumentation")."""
    t = proj.test("test_runaway")
    assert t["outcome"] == "fail", t
    sid = stmt(proj, "if n == 0:")
    n = proj.steps(t["trace"]).count(sid)
    assert n > 100, n
    # the next-to-last instance: at the last one, Python 3.9 and 3.13 leave the forcing code
    # itself no room (not flippable with or without the watch); the watch's walk needed about
    # five instances of room (953-957 of 957 were void on 3.11)
    got = cold(proj, "tests/test_app.py::test_runaway", sid, n - 1, tmp_path)
    # flipped (it may still fail: at the limit the tracer's own callbacks raise RecursionError,
    # as in the traced run), not "branch not flippable: its outcome is not reported ..."
    assert got["detail"].startswith("flipped: "), got
    assert got.get("thrown", False) is False, got
