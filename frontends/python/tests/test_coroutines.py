"""Generators and coroutines resumed by an event loop (issue 20: tornado's `@gen_test` tests gave
dumps that did not load: "step N runs in frame F, which returned at step M").

A generator frame resumed while the tracer returns None for its `call` event keeps the trace
function of its earlier activation (CPython keeps `f_trace`); that function used to record the
resumption's steps in the old, closed frame.  And a test function that is itself a generator /
coroutine, driven by an event loop, used to end its trace at its first `yield`: what the loop ran
afterwards was not traced, except through such stale trace functions.

`fixtures/python/coroutine_driver` drives generator coroutines with an opaque loop (lib/loop.py,
outside SRC) and native coroutines with asyncio; the inline project below drives them with a
loop that is itself app code (traced), as tornado's IOLoop and gen.Runner are."""

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import test_tracer as tt  # noqa: E402

FIXTURE = os.path.join(HERE, "..", "..", "..", "fixtures", "python", "coroutine_driver")


def trace_fixture(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(FIXTURE, proj, ignore=shutil.ignore_patterns("__pycache__"))
    with open(proj / "tests" / "conftest.py") as fh:
        conftest = fh.read()
    d = tt.run(proj, {"tests/conftest.py": conftest}, extra_env={"PROSECUTOR_TRACE_ALL": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    return proj, d


def frames_of(d, trace):
    return [r for r in d.rows("frame.facts") if r[0] == trace]


def test_opaque_loop_and_asyncio(tmp_path):
    proj, d = trace_fixture(tmp_path)
    # well-formed: stack discipline, heap rows in step order
    stats = d.check()
    assert stats["pairs"] == stats["cfg_pairs"], stats["non_cfg"]
    # tracing changes no outcome
    plain = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                           cwd=proj, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert "2 failed, 3 passed" in plain.stdout, plain.stdout
    assert "2 failed, 3 passed" in d.proc.stdout, d.proc.stdout
    outcomes = {t["id"].split("::")[1]: t["outcome"] for t in d.manifest["test"]}
    assert outcomes == {"test_small_order": "pass", "test_bulk_order": "pass",
                        "test_exactly_bulk": "fail", "test_async_small_order": "pass",
                        "test_async_exactly_bulk": "fail"}
    st = d.stmts()

    # generator coroutines: the coroutines the loop resumes after the test function yielded
    # are traced (a frame per resumption), and so is what they call
    t = d.test("test_exactly_bulk")
    fr = frames_of(d, t["trace"])
    meths = [r[2] for r in fr]
    assert meths.count("shop.py::price") == 4        # 2 coroutines x (start, resumption)
    assert meths.count("shop.py::unit_price") == 2   # called after the resumptions
    # the test function is one frame: resumed by the (opaque) loop, it goes on; the code the
    # loop runs meanwhile is called from the step at which it was suspended
    roots = [r for r in fr if r[2] == "tests/test_shop.py::test_exactly_bulk"]
    steps = d.steps(t["trace"])
    # (a trace beginning with import-time code: the test is called by the synthetic root's
    # second step, docs/frontend-python.md "Import-time code")
    assert len(roots) == 1 and roots[0][3] in ("-", str(steps.index("<prosecutor>:2:0") if "<prosecutor>:2:0" in steps else -1))
    frame_of = [r[3] for r in d.rows("step.facts") if r[0] == t["trace"]]
    lines = [st[s][4] for s, f in zip(steps, frame_of) if f == roots[0][1]]
    assert lines == ["30", "31", "32", "33", "34"]
    assert st[steps[t["failure_step"]]][4] == "34"
    ta = [i for i, s in enumerate(steps) if st[s][3] == "tests/test_shop.py" and st[s][4] == "32"]
    later = [r for r in fr if r[3] != "-" and int(r[3]) == ta[0]]
    assert {r[2] for r in later} == {"shop.py::price", "shop.py::total"}

    # native coroutines under asyncio: the tasks asyncio.gather starts after the test function
    # awaited are traced too
    t = d.test("test_async_exactly_bulk")
    meths = [r[2] for r in frames_of(d, t["trace"])]
    assert meths.count("shop.py::unit_price") == 2
    assert meths.count("shop.py::aprice") >= 4


RUNNER = """
import collections
import functools

_queue = collections.deque()


class Future:
    def __init__(self):
        self.done = False
        self.value = None
        self.exc = None
        self.callbacks = []

    def set_result(self, value, exc=None):
        self.done = True
        self.value = value
        self.exc = exc
        for cb in self.callbacks:
            _queue.append(functools.partial(cb, self))

    def add_done_callback(self, cb):
        if self.done:
            _queue.append(functools.partial(cb, self))
        else:
            self.callbacks.append(cb)


def later(value):
    f = Future()
    _queue.append(lambda: f.set_result(value))
    return f


def spawn(gen):
    result = Future()

    def resume(f):
        try:
            if f is None:
                fut = gen.send(None)
            elif f.exc is not None:
                fut = gen.throw(f.exc)
            else:
                fut = gen.send(f.value)
        except StopIteration as e:
            result.set_result(e.value)
            return
        except Exception as e:
            result.set_result(None, e)
            return
        fut.add_done_callback(resume)

    resume(None)
    return result


def run_sync(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        result = spawn(fn(*args, **kwargs))
        while _queue:
            _queue.popleft()()
        assert result.done
        if result.exc is not None:
            raise result.exc
        return result.value
    return wrapper


def double(x):
    y = yield later(x)
    return 2 * y


leaked = []


def forever():
    while True:
        x = yield
        leaked.append(x)
"""

RUNNER_TESTS = """
import runner


@runner.run_sync
def test_two():
    a = runner.spawn(runner.double(1))
    b = runner.spawn(runner.double(2))
    x = yield a
    y = yield b
    assert (x, y) == (2, 4)


def test_leak_a():
    g = runner.forever()
    next(g)
    g.send(1)
    runner.leaked.append(g)


def test_leak_b():
    g = runner.leaked[-1]
    g.send(2)
    g.send(3)
    assert runner.leaked[:2] == [1, 2]


@runner.run_sync
def test_throw():
    try:
        yield runner.spawn(runner.double(None))
    except TypeError:
        pass
    assert False


@runner.run_sync
def test_throw_uncaught():
    yield runner.spawn(runner.double(None))
"""


def test_loop_in_app_code(tmp_path):
    """The loop is app code (tornado's IOLoop, gen.Runner): the test function is resumed by a
    traced frame, so each resumption is a new frame opened by the resuming step; the trace
    ends when the test function returns (or raises) although the loop's frames still run.
    A generator started by one test and resumed by another is traced in the second one only."""
    d = tt.run(tmp_path, {"src/runner.py": RUNNER, "tests/test_runner.py": RUNNER_TESTS},
               extra_env={"PROSECUTOR_TRACE_ALL": "1"})
    d.check()
    assert "3 failed, 2 passed" in d.proc.stdout, d.proc.stdout
    st = d.stmts()
    t = d.test("test_two")
    assert t["outcome"] == "pass"
    fr = frames_of(d, t["trace"])
    roots = [r for r in fr if r[2].endswith("::test_two")]
    steps = d.steps(t["trace"])
    called = "-" if "<prosecutor>:2:0" not in steps else str(steps.index("<prosecutor>:2:0"))
    assert roots[0][3] == called and len(roots) == 3       # the call and two resumptions
    resumers = {st[d.steps(t["trace"])[int(r[3])]][0].rsplit(":", 2)[0] for r in roots[1:]}
    assert resumers == {"runner.py"}
    assert [r[2] for r in fr].count("runner.py::double") == 4
    # after the test function returned, nothing is recorded (the loop's frames go on)
    steps = d.steps(t["trace"])
    frame_of = [r[3] for r in d.rows("step.facts") if r[0] == t["trace"]]
    assert frame_of[-1] == roots[-1][1] and st[steps[-1]][4] == "11"
    t = d.test("test_leak_b")
    fr = frames_of(d, t["trace"])
    assert [r[2] for r in fr].count("runner.py::forever") == 2
    # an exception thrown into the test function at its yield (gen.throw), caught there
    t = d.test("test_throw")
    assert t["outcome"] == "fail" and t["failure_kind"] == "assertion"
    assert st[d.steps(t["trace"])[t["failure_step"]]][4] == "34"
    # ... or not caught: the test function ends there (at its yield instruction), and so does
    # the trace, although the loop goes on to deliver the exception
    t = d.test("test_throw_uncaught")
    assert t["outcome"] == "fail" and t["failure_kind"] == "exception"
    steps = d.steps(t["trace"])
    assert st[steps[-1]][5].startswith("fut = gen.throw(f.exc)"), st[steps[-1]]
    assert st[steps[t["failure_step"]]][5].startswith("return 2 * y")


def test_two_awaits_in_one_statement(tmp_path):
    """The first `await` completing raises (and handles) a StopIteration in the test function's
    frame; the second `await` of the same statement then suspends it: a suspension, not the end
    of the test function (the rest of `two` is traced)."""
    d = tt.run(tmp_path, {
        "src/aw.py": """
            import asyncio


            async def one():
                await asyncio.sleep(0)
                return 1


            async def two():
                await asyncio.sleep(0)
                x = 2
                return x
            """,
        "tests/test_aw.py": """
            import asyncio
            import functools

            from aw import one, two


            def run_async(fn):
                @functools.wraps(fn)
                def wrapper(*args, **kwargs):
                    return asyncio.run(fn(*args, **kwargs))
                return wrapper


            @run_async
            async def test_both():
                assert await one() + await two() == 4
            """}, extra_env={"PROSECUTOR_TRACE_ALL": "1"})
    d.check()
    t = d.test("test_both")
    assert t["outcome"] == "fail"
    st = d.stmts()
    assert [st[s][5] for s in d.steps(t["trace"])][-2:] == ["x = 2", "return x"]
