"""The warm experiment runner (issue 13 §1): `flip.py --serve` starts the test session once and
answers each request (a flip experiment, JSON lines on stdin / stdout) in a forked child.

A small project is traced for real (the plugin in trace mode); the server is started with the
dump's own `[rerun] serve` command, as `prosecutor localize` starts it, and its answers are
checked against what the flipped code does and against the cold path (`[rerun] command`, one
process per experiment)."""

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from test_tracer import run  # noqa: E402

LIB = """
    import os
    import time


    def sign(x):
        if x > 0:
            return 1
        return -1


    def guard(ok):
        if not ok:
            while True:
                time.sleep(0.01)
        return 1


    def check(ok):
        if not ok:
            os._exit(3)
        return 1


    def shoot(ok):
        if not ok:
            os.kill(os.getpid(), 9)
        return 1
    """

# what the session and the tests print, also straight to fd 1, must not reach the protocol
CONFTEST = ("import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'src'))\n"
            "print('conftest {\"id\": 1, \"outcome\": \"pass\"}')\n"
            "os.write(1, b'{\"id\": 2, \"outcome\": \"pass\"}\\n')\n")

TESTS = """
    import os
    import time

    from app import sign, guard, check, shoot


    def test_main():
        print('{"id": 3, "outcome": "pass"}')
        os.write(1, b'{"id": 4, "outcome": "pass"}\\n')
        assert guard(True) == 1
        assert check(True) == 1
        assert shoot(True) == 1
        assert sign(0) == 1


    def test_two():
        assert sign(3) + sign(0) == 2


    def test_stamp():
        d = os.environ.get("STAMP_DIR")
        if d:
            p = os.path.join(d, str(os.getpid()))
            with open(p + ".start", "w") as fh:
                fh.write(repr(time.time()))
            time.sleep(1.0)
            with open(p + ".end", "w") as fh:
                fh.write(repr(time.time()))
        assert sign(0) == 1


    def test_ok():
        assert sign(2) == 1
    """

MAIN = "tests/test_app.py::test_main"
TWO = "tests/test_app.py::test_two"
STAMP = "tests/test_app.py::test_stamp"


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("warm")
    d = run(tmp, {"src/app.py": LIB, "tests/conftest.py": CONFTEST, "tests/test_app.py": TESTS})
    assert d.manifest is not None, d.proc.stdout
    assert "serve" in d.manifest["rerun"], d.manifest["rerun"]
    return d


def stmt(d, text):
    (sid,) = [s for s, r in d.stmts().items() if r[5] == text]
    return sid


def req(i, test, stmt="", occ=0, timeout_s=60):
    return {"id": i, "test": test, "stmt": stmt, "occurrence": occ, "timeout_s": timeout_s}


class Server:
    """The dump's `[rerun] serve` command, run in the dump's cwd with its env."""

    def __init__(self, d, jobs=2, env=None):
        rr = d.manifest["rerun"]
        argv = [a.replace("{jobs}", str(jobs)).replace("{dump}", d.d) for a in rr["serve"]]
        e = dict(os.environ)
        e.update(rr["env"])
        e.update(env or {})
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen(argv, cwd=rr["cwd"], env=e, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.err)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.hello = self.next(120)

    def _read(self):
        for line in self.p.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def stderr(self):
        self.err.seek(0)
        return self.err.read().decode("utf-8", "replace")[-3000:]

    def next(self, timeout):
        try:
            line = self.lines.get(timeout=max(timeout, 0.1))
        except queue.Empty:
            raise AssertionError("no answer in time; server stderr:\n" + self.stderr())
        assert line is not None, "the server ended; its stderr:\n" + self.stderr()
        return json.loads(line)    # every line is a protocol line

    def ask(self, reqs, timeout=180):
        for r in reqs:
            self.p.stdin.write((json.dumps(r) + "\n").encode())
        self.p.stdin.flush()
        out = {}
        deadline = time.monotonic() + timeout
        while len(out) < len(reqs):
            rep = self.next(deadline - time.monotonic())
            out[rep["id"]] = rep
        assert set(out) == {r["id"] for r in reqs}, out
        return out

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=60)
        assert self.lines.get(timeout=10) is None   # nothing but the answers
        return rc


def cold(d, test, stmt, occ, tmp_path):
    """The same experiment with the dump's `[rerun] command` (a process of its own)."""
    rr = d.manifest["rerun"]
    out = tmp_path / f"cold-{abs(hash((test, stmt, occ)))}.json"
    argv = [a.replace("{test}", test).replace("{stmt}", stmt).replace("{occurrence}", str(occ))
            .replace("{out}", str(out)).replace("{dump}", d.d) for a in rr["command"]]
    e = dict(os.environ)
    e.update(rr["env"])
    subprocess.run(argv, cwd=rr["cwd"], env=e, timeout=180, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    with open(out) as fh:
        return json.load(fh)


def test_handshake_and_a_flip_that_makes_the_test_pass(proj):
    s = Server(proj)
    assert s.hello["ready"] is True and s.hello["tests"] == 4, s.hello
    r = s.ask([req(7, MAIN, stmt(proj, "if x > 0:"), 1)])[7]
    assert r["outcome"] == "pass" and r["flipped"] is True, r
    assert r["detail"].startswith("flipped: ") and r["duration_ms"] >= 0, r
    assert s.close() == 0


def test_same_outcomes_as_the_cold_path(proj, tmp_path):
    cond = stmt(proj, "if x > 0:")
    cases = [(MAIN, "", 0), (MAIN, cond, 1), (TWO, cond, 1), (TWO, cond, 2), (MAIN, cond, 5),
             (MAIN, stmt(proj, "assert shoot(True) == 1"), 1), ("tests/test_app.py::test_gone", "", 0)]
    s = Server(proj)
    warm = s.ask([req(i, *c) for i, c in enumerate(cases)])
    s.close()
    got = {i: (warm[i]["outcome"], warm[i]["flipped"], warm[i]["detail"]) for i in warm}
    want = {}
    for i, c in enumerate(cases):
        r = cold(proj, *c, tmp_path)
        want[i] = (r["outcome"], r["flipped"], r["detail"])
    assert got == want
    # and they are what the flips do
    assert got[0][:2] == ("fail", False)                         # the control run fails
    assert got[1][:2] == ("pass", True) and got[2][:2] == ("fail", True) and got[3][:2] == ("pass", True)
    assert got[4][2].startswith("branch not reached: ")
    assert got[5][2].startswith("branch not flippable: ")      # test code
    assert got[6][:2] == ("crash", False) and got[6][2].startswith("test not collected: ")


def test_a_flip_is_traced_until_its_instance_is_reached(proj):
    """A flip re-run records nothing but its outcome: once its forced instance is reached the
    rest of the test runs untraced (Tracer._forced); a control run is traced to its end (its
    duration sets the experiments' limits), and so is a flip whose instance is never reached."""
    cond = stmt(proj, "if x > 0:")
    s = Server(proj)
    r = s.ask([req(1, MAIN), req(2, MAIN, cond, 1), req(3, TWO, cond, 5), req(4, TWO, cond, 1)])
    s.close()
    assert r[1]["outcome"] == "fail" and "detached" not in r[1], r[1]
    assert (r[2]["outcome"], r[2]["flipped"], r[2].get("detached")) == ("pass", True, True), r[2]
    assert r[3]["detail"].startswith("branch not reached") and "detached" not in r[3], r[3]
    # the second evaluation of the condition, after the flip, still gives the test its outcome
    assert (r[4]["outcome"], r[4]["flipped"], r[4].get("detached")) == ("fail", True, True), r[4]


def test_a_hang_and_a_crash_end_only_their_experiment(proj):
    cond = stmt(proj, "if x > 0:")
    # the `if not ok:` of guard (loops forever), check (os._exit(3)), shoot (SIGKILL), by line
    guard, check, shoot = [sid for _, sid in sorted((int(r[4]), sid) for sid, r in proj.stmts().items()
                                                     if r[5] == "if not ok:")]
    s = Server(proj, jobs=2)
    out = s.ask([req(1, MAIN, guard, 1, timeout_s=2), req(2, MAIN, cond, 1), req(3, MAIN, check, 1),
                 req(4, MAIN, shoot, 1), req(5, MAIN), req(6, TWO, cond, 2)])
    assert out[1]["outcome"] == "timeout" and out[1]["detail"] == "killed after 2000 ms", out[1]
    assert out[3]["outcome"] == "crash" and out[3]["flipped"] is False, out[3]
    assert out[3]["detail"].startswith("test run died: exit status 3 without a result"), out[3]
    assert out[4]["outcome"] == "crash" and out[4]["flipped"] is False, out[4]
    assert out[4]["detail"].startswith("test run died: killed by signal 9 (SIGKILL)"), out[4]
    # the other experiments of the same session
    assert out[2]["outcome"] == "pass" and out[2]["flipped"] is True, out[2]
    assert out[5]["outcome"] == "fail" and out[5]["flipped"] is False, out[5]
    assert out[6]["outcome"] == "pass" and out[6]["flipped"] is True, out[6]
    # and the session goes on after them
    again = s.ask([req(9, TWO, cond, 1)])[9]
    assert again["outcome"] == "fail" and again["flipped"] is True, again
    assert s.close() == 0


def test_requests_run_in_parallel(proj, tmp_path):
    stamps = tmp_path / "stamps"
    stamps.mkdir()
    s = Server(proj, jobs=2, env={"STAMP_DIR": str(stamps)})
    out = s.ask([req(1, STAMP), req(2, STAMP)])
    s.close()
    assert all(r["outcome"] == "fail" for r in out.values()), out
    runs = {}
    for f in os.listdir(stamps):
        pid, kind = f.split(".")
        runs.setdefault(pid, {})[kind] = float((stamps / f).read_text())
    assert len(runs) == 2, runs            # two children
    starts = [r["start"] for r in runs.values()]
    ends = [r["end"] for r in runs.values()]
    assert max(starts) < min(ends), runs   # both were running at once


def test_bad_requests_are_answered_and_the_server_goes_on(proj):
    s = Server(proj)
    s.p.stdin.write(b"not json\n")
    s.p.stdin.flush()
    bad = s.next(60)
    assert bad["id"] is None and bad["outcome"] == "crash" and bad["detail"].startswith("bad request"), bad
    out = s.ask([req(1, MAIN, stmt(proj, "if x > 0:"), 0), req(2, MAIN, stmt(proj, "if x > 0:"), 1)])
    assert out[1]["detail"].startswith("rerun config error: ") and out[1]["outcome"] == "crash", out[1]
    assert out[2]["outcome"] == "pass", out[2]
    assert s.close() == 0


def test_a_server_that_cannot_start_says_why(proj, tmp_path):
    rr = proj.manifest["rerun"]
    argv = [a.replace("{jobs}", "1").replace("{dump}", str(tmp_path / "nowhere")) for a in rr["serve"]]
    e = dict(os.environ)
    e.update(rr["env"])
    p = subprocess.run(argv, cwd=rr["cwd"], env=e, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    assert p.returncode == 2
    hello = json.loads(p.stdout)
    assert hello["ready"] is False and "rerun config error: cannot read" in hello["error"], hello


IMPORT_TIME = {
    "src/shop/__init__.py": "",
    "src/shop/norm.py": """
        def norm(x):
            if x > 0:
                return x
            return -x


        BASE = norm(-3)
        """,
    "tests/test_norm.py": """
        from shop.norm import norm


        def test_norm():
            assert norm(-2) == -2
        """,
}


def test_import_time_instances_are_numbered_as_the_trace(tmp_path):
    """With --import-time, occurrence 1 of `if x > 0:` is the evaluation at import (the session
    ran it before any fork: the server runs that flip in a new process, as the cold path does)
    and occurrence 2 the test's (run warm)."""
    d = run(tmp_path, IMPORT_TIME, extra_env={"PROSECUTOR_SETUP": "1"})
    t = d.test("test_norm")
    cond = [s for s, r in d.stmts().items() if r[5] == "if x > 0:"][0]
    s = Server(d)
    out = s.ask([req(1, t["id"], cond, 1), req(2, t["id"], cond, 2), req(3, t["id"], cond, 3)])
    s.close()
    assert out[1]["flipped"] and out[1]["outcome"] == "fail" and out[1]["runner"] == "cold", out[1]
    assert out[2]["flipped"] and out[2]["outcome"] == "pass" and "runner" not in out[2], out[2]
    assert not out[3]["flipped"] and out[3]["detail"].startswith("branch not reached: "), out[3]
    assert "(evaluated 2 times)" in out[3]["detail"], out[3]
    for i, occ in ((1, 1), (2, 2), (3, 3)):
        c = cold(d, t["id"], cond, occ, tmp_path)
        assert (c["outcome"], c["flipped"], c["detail"]) == (out[i]["outcome"], out[i]["flipped"], out[i]["detail"])


def test_a_test_that_recurses_to_the_limit_stops_where_it_stops_cold(tmp_path):
    """The child runs the test at the stack depth pytest's runtestloop runs it at in a flip
    re-run: a test stopped by RecursionError evaluates its branches as many times warm as cold
    (QuixBugs gcd, find_in_sorted: occurrences near the limit were "not reached" warm)."""
    d = run(tmp_path, {"src/deep.py": """
        def down(n):
            if n > 0:
                return down(n - 1)
            return 0
        """, "tests/test_deep.py": """
        from deep import down


        def test_deep():
            assert down(10 ** 6) == 0
        """})
    t = d.test("test_deep")["id"]
    cond = stmt(d, "if n > 0:")
    s = Server(d)
    probe = s.ask([req(1, t, cond, 10 ** 7)])[1]
    n = int(probe["detail"].split("(evaluated ")[1].split(" ")[0])
    assert "RecursionError" in probe["detail"] and n > 100, probe
    cases = [(t, cond, n - 10), (t, cond, n - 1), (t, cond, n), (t, cond, n + 1)]
    warm = s.ask([req(i, *c) for i, c in enumerate(cases)])
    s.close()
    for i, c in enumerate(cases):
        r = cold(d, *c, tmp_path)
        assert (warm[i]["outcome"], warm[i]["flipped"], warm[i]["detail"]) == \
            (r["outcome"], r["flipped"], r["detail"]), (c, warm[i], r)
    assert warm[0]["flipped"] and warm[0]["outcome"] == "pass", warm[0]


PREWARMED = """
    import os.path
    from os.path import join


    class Box:
        def get(self, k):
            return [v for v in self.items if v == k]

        @staticmethod
        def make():
            return Box()

        @property
        def size(self):
            f = lambda: 1
            return f()


    def outer(x):
        def inner(y):
            return x + y
        return inner
    """


def test_the_session_prewarms_what_each_child_would_compute(tmp_path):
    """`_Prewarm` (the serve session's `prepare`): before a request's fork, the static facts of
    its test's module and the tracer's caches of that module's code objects (and of the app
    modules') are computed once, and equal what a child computes lazily on its first call
    events."""
    import importlib.util
    import types
    import textwrap
    from prosecutor_tracer import session
    from prosecutor_tracer.tracer import Registry, Tracer

    path = tmp_path / "test_box.py"
    path.write_text(textwrap.dedent(PREWARMED))
    spec = importlib.util.spec_from_file_location("test_box_prewarmed", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def tracer():
        reg = Registry(tmp_path, tmp_path)
        reg.test_files.add(os.path.realpath(path))
        return Tracer(reg)

    warm = tracer()
    st = types.SimpleNamespace(reg=warm.reg, tracer=warm)
    item = types.SimpleNamespace(nodeid="test_box.py::test_it", module=mod)
    session._Prewarm(st, types.SimpleNamespace(items=[item]))({"test": "test_box.py::test_it"})

    assert warm.reg.files.get(os.path.realpath(path)) is not None
    names = {co.co_name for co, m in warm.code_cache.items() if m is not None}
    assert {"get", "make", "size", "outer", "inner"} <= names, names
    seen = {co.co_name for co in warm.code_cache}    # (a lambda's code is no method of its own)
    assert "<lambda>" in seen and "join" not in seen, seen  # an imported function is not the module's
    lazy = tracer()
    for co, m in warm.code_cache.items():
        if m is None:
            continue
        lm = lazy.method_of(co)
        assert lm is not None and lm.id == m.id, co
        assert lazy.posmap_of(co, lm) == warm.posmaps[co], co
        assert lazy.cover_need[co] == warm.cover_need[co], co


def test_a_session_started_from_the_preview_reads_the_tests_at_its_first_request(tmp_path):
    """PROSECUTOR_SERVE_PREVIEW (`localize` starts the warm runner while the traced run runs):
    the traced run's preview names the serve command, cwd and environment of its manifest, and a
    session started while rerun.json had no "tests" yet reads them at its first request (here:
    the setup segments that number the import-time evaluation as occurrence 1)."""
    d = run(tmp_path, IMPORT_TIME, extra_env={"PROSECUTOR_SETUP": "1", "PROSECUTOR_SERVE_PREVIEW": "1"})
    with open(os.path.join(d.d, ".prosecutor-serve.json")) as fh:
        preview = json.load(fh)
    rr = d.manifest["rerun"]
    assert (preview["serve"], preview["cwd"], preview["env"]) == (rr["serve"], rr["cwd"], rr["env"])
    cfg_path = os.path.join(d.d, "rerun.json")
    with open(cfg_path) as fh:
        final = json.load(fh)
    t = d.test("test_norm")
    assert final["tests"][t["id"]]["setup_segments"], final["tests"]
    with open(cfg_path, "w") as fh:
        json.dump(dict(final, tests={}), fh)        # as the session found it at its start
    s = Server(d)
    with open(cfg_path, "w") as fh:
        json.dump(final, fh)                        # written when the traced run ended
    cond = [s_ for s_, r in d.stmts().items() if r[5] == "if x > 0:"][0]
    out = s.ask([req(1, t["id"], cond, 1), req(2, t["id"], cond, 2)])
    s.close()
    for i, occ in ((1, 1), (2, 2)):
        c = cold(d, t["id"], cond, occ, tmp_path)
        assert (c["outcome"], c["flipped"], c["detail"]) == (out[i]["outcome"], out[i]["flipped"], out[i]["detail"])
    assert out[2]["flipped"] and out[2]["outcome"] == "pass", out[2]
