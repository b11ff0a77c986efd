"""The pytest session of the tracer: its hooks trace the tests and write a dump.

pytest loads it through ``-p prosecutor_tracer.plugin`` (plugin.py, which re-exports the hooks
from here: pytest would rewrite and compile a module named by ``-p`` on every run).

It does nothing unless PROSECUTOR_MODE is set ("trace", "flip", "serve" or "plain"); see
docs/frontend-python.md for the environment variables.  "plain" installs no import hook and
no tracer: it only records each test's outcome and wall-clock duration (the driver's plain
pre-run, read by the traced run through PROSECUTOR_PLAIN).  "serve" is the warm experiment
runner: collect once, then run each requested flip as flip mode would, in a forked child
(serve.py; started by ``flip.py --serve``).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import pickle
import re
import shutil
import signal
import sys
import threading
import time
import types

import _pytest as _pytest_pkg
import pluggy
import pytest

from . import VERSION
from . import code_profile
from . import instrument
from . import static_facts as sf
from . import static_cache
from .flip import read_force, read_values
try:
    from . import heap as _heap
except ImportError:  # a driver whose embedded package lacks heap.py: no heap facts (name-only model)
    _heap = None
from .tracer import _MISSING, _RESUMABLE, Registry, Tracer, TestRecord, TestTimeout, code_key, exc_signature, _NoCount

_state = None

# The tracer's time limit of a test whose plain duration is known is
# max(PROSECUTOR_TEST_TIMEOUT, PLAIN_FACTOR x its plain duration): tracing is slower per test than
# a plain run (measured on the fixtures and QuixBugs, docs/frontend-python.md "Plain pre-run"),
# and a test cut by the tracer fails somewhere else than it does.
PLAIN_FACTOR = 150.0
# The steps a test that hangs in the plain pre-run is traced for (State.step_limit_for), checked
# every STEP_POLL_S; its time limit stays the flat one, for a hang outside traced code.
HANG_STEPS = 100_000
STEP_POLL_S = 0.02
# How soon a time limit that struck inside the harness or the tracer strikes again (_alarm).
HARNESS_RETRY_S = 0.005

_PKG_ROOT = os.path.dirname(os.path.realpath(__file__)) + os.sep
_T_IMPORT = time.monotonic()   # the plugin is imported by `-p`, before conftests and collection


def _env_float(name, default):
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def _env_int(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def _test_globs():
    try:
        return [str(g) for g in json.loads(os.environ.get("PROSECUTOR_TEST_GLOBS") or "[]")]
    except ValueError:
        return []


def registry(src, cwd, out):
    """The file registry of a run: the dump directory and PROSECUTOR_EXCLUDE left out,
    PROSECUTOR_TEST_GLOBS (--exclude) as test code (also the static cache's child)."""
    reg = Registry(src, cwd)
    if out:
        reg.exclude.append(os.path.realpath(out))
    for ex in os.environ.get("PROSECUTOR_EXCLUDE", "").split(os.pathsep):
        if ex:
            reg.exclude.append(os.path.realpath(ex))
    reg.test_globs = _test_globs()
    return reg


class State:
    def __init__(self, config, mode):
        self.config = config
        self.mode = mode
        self.src = os.path.realpath(os.environ.get("PROSECUTOR_SRC", os.getcwd()))
        self.cwd = os.path.realpath(os.getcwd())
        self.out = os.environ.get("PROSECUTOR_OUT")
        self.status_path = os.environ.get("PROSECUTOR_STATUS") or (
            os.path.join(self.out, ".prosecutor-status.json") if self.out else None)
        self.timeout = _env_float("PROSECUTOR_TEST_TIMEOUT", 10.0)
        self.max_passing = _env_int("PROSECUTOR_MAX_PASSING", 20)
        self.app_key = {}             # plain-run code key index -> the key if an app function, else None (_app_profile)
        self.step_cap = _env_int("PROSECUTOR_STEP_CAP", 2_000_000)
        self.trace_all = os.environ.get("PROSECUTOR_TRACE_ALL", "") not in ("", "0")
        self.reg = registry(self.src, self.cwd, self.out)
        if mode == "flip":
            self.flip_test = os.environ.get("PROSECUTOR_FLIP_TEST", "")
            self.flip_out = os.environ.get("PROSECUTOR_FLIP_OUT")
        elif mode == "serve":
            self.flip_test, self.flip_out = "", None
        # the plain pre-run (PROSECUTOR_PLAIN, trace mode): node id -> {"outcome", "duration_s"}
        # The plain run alongside this one (PROSECUTOR_PLAIN_DONE, set by the driver): its
        # results come in as it goes (PROSECUTOR_PLAIN_STREAM, read by _plain_poll) and are
        # complete once the driver's marker PROSECUTOR_PLAIN_DONE exists (_plain_finish).
        self.plain_done = os.environ.get("PROSECUTOR_PLAIN_DONE") if mode == "trace" else None
        self.plain_stream = os.environ.get("PROSECUTOR_PLAIN_STREAM") or None
        self.plain_stream_pos = 0
        self.plain_pending = bool(self.plain_done)
        self.parent_pid = os.getppid()   # the driver: if it is gone, no marker will come
        self.plain_wall = None       # its wall time, s (from the marker)
        self.limit_pending = None    # node id of the running test whose limit awaits its plain result
        self.call_t0 = 0.0
        self.plain_keys = []         # the plain run's code keys (see _code_run)
        # node ids of the tests traced in full; the others are traced for coverage only
        # (None: every test in full; see _preselect)
        self.full = _MISSING
        # the plain pass forked from this run once it has collected (PROSECUTOR_PLAIN_FORK, set by
        # the driver; _plain_pass): its results are read before the first test
        self.plain_fork = mode == "trace" and os.environ.get("PROSECUTOR_PLAIN_FORK") == "1" and hasattr(os, "fork")
        self.forked_s = 0.0          # its wall time, before the first traced test
        if self.plain_pending or self.plain_fork:
            self.plain, self.plain_error = ({}, None) if self.plain_pending else (None, None)
        else:
            self.plain, self.plain_error = (_load_plain(os.environ.get("PROSECUTOR_PLAIN"), self.plain_keys)
                                            if mode == "trace" else (None, None))
        if mode == "trace" and self.plain is None and not self.plain_error:
            self.plain_error = os.environ.get("PROSECUTOR_PLAIN_ERROR") or None
        self.plain_factor = _env_float("PROSECUTOR_PLAIN_FACTOR", PLAIN_FACTOR)
        self.cur_timeout = self.timeout
        self.flip_steps = 0          # flip mode: rerun.json tests[ID].steps of a test that hangs
        self.stop_steps = 0          # the running test stops past this many steps (0 = no limit)
        self.first_test_at = None    # time.monotonic() when the first test's call phase began
        if mode == "flip":
            try:
                fp = json.loads(os.environ.get("PROSECUTOR_FLIP_MATCH") or "null")
                # the test's own tracer limit in the traced run (raised from its plain duration)
                if isinstance(fp, dict) and self.timeout > 0 and float(fp.get("timeout") or 0) > self.timeout:
                    self.timeout = float(fp["timeout"])
                # a test that hangs: the steps its trace reached (see step_limit_for)
                self.flip_steps = int(fp.get("steps") or 0) if isinstance(fp, dict) else 0
            except (ValueError, TypeError):
                pass
        self.setup = None            # the setup recording (tracer.TestRecord), see _start_setup
        self.flip_unmatched = None   # "test not matched: ..." when the flip test cannot be found
        self.flip_matched = None     # how it was found when its node id changed
        self.collect_errors = []
        self.internal_error = None   # pytest's INTERNALERROR in a flip run (the test's report lost)
        self.param_counts = {}       # function (node id without parameters) -> parametrizations
        # a re-run (flip and serve modes; serve as a control run until a child is told what to
        # force): see _set_rerun
        self.tracer = (_ServeTracer if mode == "serve" else Tracer)(
            self.reg, step_cap=self.step_cap, force={} if mode in ("flip", "serve") else None)
        self.instances = []          # a re-run's forced instances: (stmt, occurrence, outcome or None)
        self.force_list = None       # its forced set as given (PROSECUTOR_FORCE), None: a flip
        self.events = None           # where it writes its trace (PROSECUTOR_EVENTS), None: nowhere
        self.values = None           # what it records, captures, patches (PROSECUTOR_VALUES)
        self.setup_view = None       # _Setup of the setup recording (_events_prefix)
        self.rerun_error = None      # why PROSECUTOR_FORCE / PROSECUTOR_VALUES is unusable
        if mode == "flip":
            stmt, occ = os.environ.get("PROSECUTOR_FLIP_STMT", ""), _env_int("PROSECUTOR_FLIP_OCC", 1)
            events = os.environ.get("PROSECUTOR_EVENTS")
            force, self.rerun_error = read_force(os.environ.get("PROSECUTOR_FORCE"), stmt, occ)
            values, err = read_values(os.environ.get("PROSECUTOR_VALUES"), events)
            self.rerun_error = self.rerun_error or err
            _set_rerun(self, stmt, occ, force, events, values)
        self.tests = []           # dicts in run order
        self.by_id = {}
        self.running = None       # node id of the test whose call phase is running
        self.subtest_failure = {} # node id -> the first failing subtest's failure (see _subtest_report)
        self.tmp = None
        self.spill = None         # _Spill: the tests' traces until the dump is written
        self.error = None
        self.collected = 0
        self.finder = None
        self.checked = False
        self.patterns = ["test_*.py", "*_test.py"]

    def timeout_for(self, nodeid):
        """The tracer's time limit of one test: PROSECUTOR_TEST_TIMEOUT, raised to PLAIN_FACTOR x
        the test's plain duration when the plain pre-run measured it (0 = none)."""
        if self.timeout <= 0:
            return 0.0
        if self.plain_pending and nodeid not in self.plain:
            _plain_poll(self)
        p = self.plain.get(nodeid) if self.plain else None
        if p and p.get("outcome") in ("pass", "fail"):
            try:
                return max(self.timeout, self.plain_factor * float(p.get("duration_s") or 0.0))
            except (TypeError, ValueError):
                pass
        return self.timeout

    def hangs(self, nodeid):
        """The plain pre-run stopped the test at its limit: it hangs (it fails as a timeout
        whatever the tracer's limit)."""
        p = self.plain.get(nodeid) if self.plain else None
        return bool(p) and p.get("outcome") == "timeout"

    def step_limit_for(self, nodeid):
        """Steps after which the test stops as a timeout (0 = none; checked every STEP_POLL_S).
        A test that hangs is traced for HANG_STEPS steps, and its flip re-runs (rerun.json
        tests[ID].steps) run to the steps its trace reached and a tenth more: a re-run reaches
        every branch instance of the trace whatever the machine's load, which a time limit
        does not promise (a re-run 10 % slower than the traced run would not reach the last
        evaluations, the ones nearest its failure that the planner flips first)."""
        if self.mode == "trace":
            return HANG_STEPS if self.hangs(nodeid) else 0
        if self.mode == "flip" and self.flip_steps > 0:
            return self.flip_steps + max(1000, self.flip_steps // 10)
        return 0

    # ------------------------------------------------------------ status
    def write_status(self, **kw):
        if not self.status_path:
            return
        try:
            os.makedirs(os.path.dirname(os.path.abspath(self.status_path)), exist_ok=True)
            if static_cache.counts["hit"] or static_cache.counts["miss"]:
                kw = dict(kw, static_cache=dict(static_cache.counts))
            if static_cache.ahead["computed"]:
                kw = dict(kw, static_ahead=dict(static_cache.ahead))
            with open(self.status_path, "w", encoding="utf-8") as fh:
                json.dump(kw, fh)
        except OSError:
            pass


def _plain_poll(st):
    """Reads the results the plain run alongside has streamed since the last call (one JSON
    line per finished test: {"id": node id, "r": its result}) into st.plain."""
    path = st.plain_stream
    if not path:
        return
    try:
        with open(path, "rb") as fh:
            fh.seek(st.plain_stream_pos)
            data = fh.read()
    except OSError:
        return
    end = data.rfind(b"\n")
    if end < 0:
        return
    st.plain_stream_pos += end + 1
    for line in data[:end].split(b"\n"):
        try:
            d = json.loads(line)
            if isinstance(d.get("r"), dict):
                st.plain[str(d["id"])] = d["r"]
        except (ValueError, KeyError, TypeError, AttributeError):
            pass


def _plain_done(st):
    """The driver's marker that the plain run alongside has ended (its JSON), or None."""
    try:
        with open(st.plain_done, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        pass
    if os.getppid() != st.parent_pid:
        return {"ok": False, "error": "the driver that ran it ended before it did"}
    return None


def _plain_wait(st, nodeid):
    """Waits until the plain run alongside has a result for `nodeid` or has ended."""
    while True:
        _plain_poll(st)
        if nodeid in st.plain or _plain_done(st) is not None:
            _plain_poll(st)
            return
        time.sleep(0.02)


def _plain_finish(st):
    """The traced run is over: waits for the plain run alongside to end and takes its results
    exactly as after a plain run before (the driver's checks of that run are in the marker).
    Every test's time limit is then the one it had (or, for a test that ended before its
    limit mattered, would have had) with the whole plain run known before."""
    if not st.plain_pending:
        return
    while True:
        m = _plain_done(st)
        if m is not None:
            break
        time.sleep(0.05)
    st.plain_pending = False
    if m.get("ok"):
        st.plain, st.plain_error = _load_plain(os.environ.get("PROSECUTOR_PLAIN"))
        try:
            st.plain_wall = float(m.get("seconds"))
        except (TypeError, ValueError):
            st.plain_wall = None
    else:
        st.plain, st.plain_error = None, str(m.get("error") or "unknown error")
    for t in st.tests:
        if "timeout_s" in t:
            t["timeout_s"] = st.timeout_for(t["id"])


def _load_plain(path, keys=None):
    """(node id -> plain result, None), or (None, why not) when PROSECUTOR_PLAIN names no
    readable plain-run file, or (None, None) without one. `keys` (a list) gets the file's
    "code_keys" (see _code_run)."""
    if not path:
        return None, None
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        tests = data["tests"]
        if not isinstance(tests, dict):
            raise ValueError("no tests")
        if keys is not None and isinstance(data.get("code_keys"), list):
            keys.extend(str(k) for k in data["code_keys"])
        return {str(k): v for k, v in tests.items() if isinstance(v, dict)}, None
    except (OSError, ValueError, KeyError, TypeError) as e:
        return None, f"cannot read the plain run's results {path}: {e}"


class PlainState:
    """PROSECUTOR_MODE=plain: no import hook, no tracer; each test's outcome (classified as the
    traced run classifies it: setup failures and failing subtests fail, skips and xfails are
    skips) and the wall-clock duration of its call phase, written as JSON to PROSECUTOR_PLAIN_OUT:
    {"version": 1, "tests": {node id: {"outcome": "pass"|"fail"|"skip"|"timeout",
    "duration_s": float, "failure_kind": ...}}, "startup_s": ..., "wall_s": ...,
    "timeout_s": ...}.  A test running past PROSECUTOR_PLAIN_TIMEOUT seconds is stopped
    (outcome "timeout": its plain outcome is unknown)."""

    mode = "plain"

    def __init__(self):
        # the traced run compiles app modules in memory: the plain run writes no __pycache__
        # into the user's tree either
        sys.dont_write_bytecode = True
        self.out = os.environ.get("PROSECUTOR_PLAIN_OUT")
        self.timeout = _env_float("PROSECUTOR_PLAIN_TIMEOUT", 60.0)
        self.tests = {}
        self.running = None
        self.timed_out = False
        self.current = None
        self.subtest_failure = {}
        self.first_test_at = None
        # the traced run alongside reads each test's result from here as soon as it is known
        self.stream = None
        path = os.environ.get("PROSECUTOR_PLAIN_STREAM")
        if path:
            try:
                self.stream = open(path, "a", encoding="utf-8")
            except OSError:
                self.stream = None
        # which code of the project each test runs (code_profile.py: no Python call of ours
        # inside the test up to 3.11, one per function and test from 3.12): the traced run
        # chooses from it the passing tests it traces in full (_preselect). Not for the plain
        # run alongside, whose results come too late for that, nor where the traced run traces
        # every test in full anyway.
        self.profiler = None
        if (not path and os.environ.get("PROSECUTOR_PRESELECT", "1").strip() != "0"
                and os.environ.get("PROSECUTOR_TRACE_ALL", "") in ("", "0")
                and os.environ.get("PROSECUTOR_SETUP", "0").strip() != "1"):
            self.profiler = code_profile.profiler()
        # (the run's cwd before any test could change it: the warm runner's preview names it)
        self.cwd = os.path.realpath(os.getcwd())
        roots = {self.cwd, os.path.realpath(os.environ.get("PROSECUTOR_SRC") or os.getcwd())}
        self.code_roots = tuple(r.rstrip(os.sep) + os.sep for r in roots)
        self.code_index = {}         # code key -> its index in the output's "code_keys"
        self.code_of = {}            # code object -> its index, or None (not the project's)
        self.path_ok = {}            # file name -> real path under a root, or None
        self.current_code = None
        self.profile_extended = False   # the running test's limit was extended (_plain_alarm)

    def streamed(self, nodeid):
        """Test `nodeid` is done: its result to the stream (one line, flushed)."""
        r = self.tests.get(nodeid)
        if self.stream is None or r is None:
            return
        try:
            self.stream.write(json.dumps({"id": nodeid, "r": r}) + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def write(self, began=None):
        """The results to PROSECUTOR_PLAIN_OUT; `began`: when the run began (time.monotonic(); the
        plugin's import, or the fork of a plain pass)."""
        if not self.out:
            return
        now = time.monotonic()
        began = _T_IMPORT if began is None else began
        data = {"version": 1, "tests": self.tests, "timeout_s": self.timeout, "code_keys": list(self.code_index),
                "startup_s": round(max(0.0, (self.first_test_at or now) - began), 6),
                "wall_s": round(now - began, 6)}
        tmp = self.out + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(data, fh)
            os.replace(tmp, self.out)
        except OSError:
            pass


def _plain_alarm(signum, frame):
    st = _state
    if st is None or st.running is None:
        return
    if st.profiler is not None and not st.profile_extended:
        st.profile_extended = True
        extra = _profiler_extension(st.timeout, st.profiler.overhead())
        if extra > 0.001:
            signal.setitimer(signal.ITIMER_REAL, extra)
            return
    st.timed_out = True
    if frame is not None and _in_harness(frame.f_code.co_filename):
        signal.setitimer(signal.ITIMER_REAL, HARNESS_RETRY_S)   # as in _alarm
        return
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    raise TestTimeout(f"test ran longer than {st.timeout:g} s (prosecutor plain run)")


def _profiler_extension(limit, overhead):
    """Seconds a profiled test that reached the plain run's `limit` gets on top: the profiler
    (cProfile, Python <= 3.11) slows call-heavy code (`fib(27)`: 5.7x on 3.11, 2.3x on 3.9), so
    such a test may not hang by the user's measure. Of its `limit` s, `overhead` went to the
    profiler and `limit - overhead` to the test; what it may still need of the limit then takes
    `overhead * limit / (limit - overhead)` s at that pace, at most `5 * limit` (a 6x slowdown;
    a call-heavy loop that never ends costs that much). A loop without calls, as most hangs,
    has no overhead and gets nothing."""
    if overhead <= 0:
        return 0.0
    if overhead >= 5 * limit / 6:
        return 5 * limit
    return overhead * limit / (limit - overhead)


@contextlib.contextmanager
def _running(st, item, timeout, handler):
    """The test's call phase: `handler` on SIGALRM after `timeout` s (where an alarm can be
    used), `st.running` set; yields the start time. The alarm is disarmed first on the way out
    (before the caller stops a tracer: a re-armed alarm there would lose the test's report)."""
    use_alarm = timeout > 0 and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    old = None
    if use_alarm:
        old = signal.signal(signal.SIGALRM, handler)
        # with a step limit, the alarm polls the step count (_alarm; the plain run's state has none)
        signal.setitimer(signal.ITIMER_REAL, min(timeout, STEP_POLL_S) if getattr(st, "stop_steps", 0) else timeout)
    t0 = time.monotonic()
    if st.first_test_at is None:
        st.first_test_at = t0
    st.running = item.nodeid
    try:
        yield t0
    finally:
        st.running = None
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old if old is not None else signal.SIG_DFL)


def _plain_call(st, item):
    st.timed_out = False
    st.profile_extended = False
    prof = st.profiler
    st.current_code = None
    if prof is not None:
        # as the tracer roots its trace: the test function, a unittest setUp / tearDown; but a
        # generator or coroutine test function's trace also holds what its driver (an event
        # loop) runs while it is suspended, which is not below it: then every function counts
        roots = {c for c in (_root_code(item), *_unittest_roots(item)) if c is not None}
        prof.roots = set() if any(c.co_flags & _RESUMABLE for c in roots) else roots
    with _running(st, item, st.timeout, _plain_alarm) as t0:
        try:
            if prof is not None:
                prof.enable()
            yield
        finally:
            if prof is not None:
                prof.disable()
            st.current = time.monotonic() - t0
    if prof is not None:
        st.current_code = _code_run(st, prof)


def _code_run(st, prof):
    """The project's functions the test ran, from the profiler (code_profile.py): [[code key
    index, calls], ...] (calls: 1 each from Python 3.12).
    A code key is "REALPATH:FIRSTLINE:QUALNAME:NAME" of a code object in a file under the
    working directory or SRC (not in site-packages, not this package)."""
    out = {}
    try:
        for co, calls in prof.take().items():
            i = st.code_of.get(co, _MISSING)
            if i is _MISSING:
                i = None
                fn = co.co_filename
                rp = st.path_ok.get(fn, _MISSING)
                if rp is _MISSING:
                    rp = None
                    if fn and not fn.startswith("<"):
                        real = os.path.realpath(fn)
                        if (real.startswith(st.code_roots) and "site-packages" not in real
                                and not real.startswith(_PKG_ROOT)):
                            rp = real
                    st.path_ok[fn] = rp
                if rp is not None:
                    # (the qualified name is "" where the code object has none, Python < 3.11)
                    key = code_key(rp, co)
                    i = st.code_index.setdefault(key, len(st.code_index))
                st.code_of[co] = i
            if i is not None:
                out[i] = out.get(i, 0) + calls
    except Exception:
        return None
    return sorted([i, n] for i, n in out.items())


def _plain_report(st, item, call, rep):
    """The outcome of one test as pytest_runtest_makereport classifies it in trace mode."""
    nid = item.nodeid
    if call.when == "setup":
        if rep.failed:
            st.tests[nid] = {"outcome": "fail", "duration_s": 0.0, "failure_kind": "setup"}
        elif rep.skipped:
            st.tests.setdefault(nid, {"outcome": "skip", "duration_s": 0.0})
        return
    if call.when != "call":
        return
    if st.running == nid:
        # a subtest's report: the first failing one makes the test fail
        if rep.failed and nid not in st.subtest_failure:
            exc = call.excinfo.value if call.excinfo is not None else None
            st.subtest_failure[nid] = "assertion" if isinstance(exc, AssertionError) else "exception"
        return
    sub = st.subtest_failure.pop(nid, None)
    dur, st.current = st.current or 0.0, None
    code, st.current_code = st.current_code, None
    if hasattr(rep, "wasxfail") or rep.skipped:
        r = {"outcome": "skip", "duration_s": dur}
    elif rep.failed:
        exc = call.excinfo.value if call.excinfo is not None else None
        if isinstance(exc, TestTimeout) or st.timed_out:
            r = {"outcome": "timeout", "duration_s": dur}
        else:
            r = {"outcome": "fail", "duration_s": dur,
                 "failure_kind": "assertion" if isinstance(exc, AssertionError) else "exception"}
    elif sub is not None:
        r = {"outcome": "fail", "duration_s": dur, "failure_kind": sub}
    else:
        r = {"outcome": "pass", "duration_s": dur}
    if code is not None:
        r["code"] = code
    st.tests.setdefault(nid, r)


def _early_setup():
    """Runs when pytest imports the plugin (`-p`), before any conftest.py: the import hook must
    be in place before a conftest imports the code under analysis."""
    mode = os.environ.get("PROSECUTOR_MODE")
    if mode == "plain":
        return PlainState()
    if mode not in ("trace", "flip", "serve"):
        return None
    st = State(None, mode)
    if mode == "serve":
        _protocol_fds()
    st.patterns = ["test_*.py", "*_test.py"]
    instrument.set_tracer(st.tracer)
    st.finder = instrument.install(st.reg, st.patterns)
    _start_setup(st)
    return st


# The setup recording: import-time code of the app modules (module bodies, class bodies, and
# what they call) runs when pytest imports them (conftests, collection), before and outside
# every test. It is recorded from here until the first test's call phase, and every traced test's
# trace begins with the segments (module bodies) relevant to it (docs/frontend-python.md,
# "Import-time code").
SETUP_CAP = 200_000


def _start_setup(st):
    # opt-in (`--import-time`, PROSECUTOR_SETUP=1; docs/frontend-python.md "Import-time code"); a
    # flip re-run counts exactly the segments its test's trace holds (none when it was off); the
    # warm runner counts every segment apart (_ServeTracer) and each child keeps its test's
    if st.mode not in ("flip", "serve") and os.environ.get("PROSECUTOR_SETUP", "0").strip() != "1":
        return
    finder = st.finder

    def root_ok(filename):
        rp = st.reg.real(filename)
        return bool(rp) and st.reg.is_app_path(rp) and not (finder is not None and finder.is_test_file(rp)) and not _is_test_file(st, rp)

    keep = None
    cap = _env_int("PROSECUTOR_SETUP_CAP", SETUP_CAP)
    if st.mode == "flip":
        # count only the segments the test's trace holds (rerun.json tests[ID].setup_segments)
        try:
            fp = json.loads(os.environ.get("PROSECUTOR_FLIP_MATCH") or "null")
        except ValueError:
            fp = None
        keep = _setup_keep(fp)
    if st.mode in ("flip", "serve"):
        cap = 10 ** 12
    try:
        # (a re-run records the steps of the segments its trace begins with only for its events)
        st.tracer.start_setup(root_ok, cap, keep=keep, record_steps=(st.mode == "trace" or bool(st.events)))
    except Exception as e:   # never break the test run
        st.tracer.errors.append(f"setup recording: {type(e).__name__}: {e}")


def _setup_keep(fp):
    """The setup segments a failing test's trace holds (its rerun.json fingerprint)."""
    if not isinstance(fp, dict):
        return set()
    try:
        return {int(k) for k in fp.get("setup_segments") or ()}
    except (TypeError, ValueError):
        return set()


class _ServeTracer(Tracer):
    """Serve mode: the setup recording counts each segment's branch evaluations apart
    (`segment_occ[k]`), so that a child can number occurrences from the segments its test's
    trace holds, as a flip re-run does (_resume_setup)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.segment_occ = []

    def _begin_segment(self, m):
        super()._begin_segment(m)
        if self.setup_keep is None:      # the session: every segment counted, each apart
            self.segment_occ.append({})
            self.setup_rec.occ = self.segment_occ[-1]


def _stop_setup(st):
    """Ends the setup recording (the first test starts, or the session ends)."""
    if st.tracer.setup_mode:
        try:
            st.setup = st.tracer.stop_setup()
        except Exception as e:
            st.tracer.errors.append(f"setup recording: {type(e).__name__}: {e}")
            st.tracer.setup_mode = False
            st.setup = None


def _checks(st, config):
    """Dump directory, SRC, and every app file must parse (a syntax error is reported as
    file:line).  Done once, as early as possible."""
    if st.checked:
        return
    st.checked = True
    try:
        patterns = config.getini("python_files") or ["test_*.py", "*_test.py"]
    except Exception:
        patterns = ["test_*.py", "*_test.py"]
    st.patterns = list(patterns)
    if st.finder is not None:
        st.finder.test_patterns = list(patterns) + ["conftest.py"]
    if st.mode == "trace":
        if not st.out:
            raise pytest.UsageError("prosecutor: PROSECUTOR_OUT (the dump directory) is not set")
        os.makedirs(st.out, exist_ok=True)
        st.tmp = os.path.join(st.out, ".prosecutor-tmp")
        shutil.rmtree(st.tmp, ignore_errors=True)
        os.makedirs(st.tmp, exist_ok=True)
    if not os.path.isdir(st.src):
        msg = f"prosecutor: --src {st.src} is not a directory"
        st.write_status(ok=False, error=msg)
        raise pytest.UsageError(msg)
    import importlib.util
    bad = []
    for path in _app_files(st):
        try:
            with open(path, "rb") as fh:
                data = fh.read()
            source = importlib.util.decode_source(data)
            known = static_cache.load_compiles(path, source)
            if isinstance(known, tuple):
                bad.append((path, f"{sf.relpath_for(path, st.src)}:{known[0]}: syntax error: {known[1]}"))
                continue
            if known is None:
                compile(source, path, "exec", dont_inherit=True)
        except SyntaxError as e:
            bad.append((path, f"{sf.relpath_for(path, st.src)}:{e.lineno or 0}: syntax error: {e.msg}"))
        except (OSError, ValueError, UnicodeDecodeError) as e:
            bad.append((path, f"{sf.relpath_for(path, st.src)}:0: cannot read: {e}"))
    if bad:
        # A file under SRC that this Python cannot compile cannot be imported either (a test
        # data file such as tests/data/py2_syntax.py, code for another Python version): it is
        # not traced and not ranked, and the dump says which files were left out and why. If
        # the tests do import one, the test run itself reports the SyntaxError.
        for path, _ in bad:
            st.reg.unparsable.add(os.path.realpath(path))
        st.reg.warnings.append(f"{len(bad)} file(s) under SRC do not compile with Python "
                               f"{sys.version_info[0]}.{sys.version_info[1]} and are left out (not traced, "
                               "not ranked): " + "; ".join(m for _, m in bad[:5]) + (" ..." if len(bad) > 5 else ""))


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    if _state is not None and _state.mode != "plain":
        _checks(_state, early_config)


def pytest_configure(config):
    st = _state
    if st is None:
        return
    if st.mode == "plain":
        # the static analysis the traced run needs, done meanwhile on the idle core
        static_cache.fork_prepare(config)
        return
    st.config = config
    _checks(st, config)
    if st.mode == "trace" and st.out and os.environ.get("PROSECUTOR_SERVE_PREVIEW") == "1":
        _write_serve_preview(st)


def _app_files(st, test_code=None):
    """The .py files under SRC that are app code; files that are test code only because of a test
    directory or an ``--exclude`` glob are appended to `test_code` as (path, reason)."""
    out = []
    for root, dirs, files in os.walk(st.src):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("__pycache__", "node_modules", "site-packages") and not d.endswith(".egg-info"))
        for f in sorted(files):
            if f.endswith(".py"):
                p = os.path.join(root, f)
                rp = os.path.realpath(p)
                if st.reg.role_of(rp) == "app" and not _is_test_file(st, p):
                    out.append(p)
                elif test_code is not None and st.reg.is_app_path(rp) and f != "__init__.py" \
                        and not _is_test_file(st, p) and st.reg.test_reason(rp):
                    test_code.append((rp, st.reg.test_reason(rp)))
    return out


def _is_test_file(st, path):
    import fnmatch
    base = os.path.basename(path)
    return base == "conftest.py" or any(fnmatch.fnmatch(base, p) for p in st.patterns)


def pytest_internalerror(excrepr, excinfo):
    """A flip run whose test ran but whose report pytest lost to an internal error (CPython
    3.11.7 raises `SystemError: AST constructor recursion depth mismatch` when pytest parses the
    source of a traceback after a RecursionError): the experiment says so instead of calling the
    test "not collected"."""
    st = _state
    if st is not None and st.mode == "flip" and st.internal_error is None:
        try:
            st.internal_error = sf.one_line(f"{excinfo.type.__name__}: {excinfo.value}", 200)
        except Exception:
            st.internal_error = "unknown"


def pytest_collectreport(report):
    st = _state
    if st is None or st.mode not in ("flip", "serve") or not report.failed:
        return
    try:
        text = str(report.longrepr).strip().splitlines()
        msg = next((l for l in reversed(text) if l.startswith("E ")), text[-1] if text else "")
        st.collect_errors.append(f"{report.nodeid}: " + sf.one_line(msg.lstrip("E ").strip(), 200))
    except Exception:
        st.collect_errors.append(str(report.nodeid))


def pytest_collection_modifyitems(session, config, items):
    st = _state
    if st is None or st.mode == "plain":
        return
    stale = False
    for it in items:
        p = str(getattr(it, "path", None) or it.fspath)
        rp = os.path.realpath(p)
        st.reg.test_files.add(rp)
        if rp in st.reg.files and st.reg.files[rp] is None:
            # looked up (as untraced) while the setup recording saw it imported
            del st.reg.files[rp]
            stale = True
    if st.reg.add_test_dirs(st.reg.test_files) or stale:
        st.tracer.code_cache.clear()
    for it in items:
        # the file defining the function pytest calls is test code too (a mixin or base class
        # in tests/__init__.py or tests/helpers.py, a test function imported from elsewhere)
        co = _root_code(it)
        fn = getattr(co, "co_filename", "") if co is not None else ""
        if fn and not fn.startswith("<"):
            rp = os.path.realpath(fn)
            if rp not in st.reg.test_files:
                st.reg.mark_test_file(rp)
                st.tracer.code_cache.clear()
        # so is the file defining a unittest setUp / tearDown (a base class in a helper module
        # outside SRC would not be traced at all) if it is a project file, unless it is app
        # code under SRC (a testing base class the package ships keeps its role; one from an
        # installed library stays untraced)
        for co in _unittest_roots(it):
            fn = co.co_filename
            if fn and not fn.startswith("<"):
                rp = os.path.realpath(fn)
                if (rp not in st.reg.test_files and _project_file(st, rp)
                        and st.reg.role_of(rp) != "app"):
                    st.reg.mark_test_file(rp)
                    st.tracer.code_cache.clear()
    st.param_counts = {}
    for it in items:
        if getattr(it, "callspec", None) is not None:
            b = _base_id(it)
            st.param_counts[b] = st.param_counts.get(b, 0) + 1
    if st.mode == "flip":
        chosen = _match_flip_test(st, items)
        keep = [it for it in items if it is chosen]
        desel = [it for it in items if it is not chosen]
        if desel:
            config.hook.pytest_deselected(items=desel)
        items[:] = keep
    st.collected = len(items)


# ---------------------------------------------------------------- matching a test across runs
# A node id can differ between the traced run and a re-run (parametrize over a set whose order
# depends on hashing, ids made of object addresses): failing tests that are parametrized get a
# fingerprint in rerun.json (their function, the parameters' values as stable text, their
# indices), and a re-run matches on it when the node id alone is not reliable.

_ADDR = re.compile(r"0x[0-9a-fA-F]{4,}")


def _stable_repr(v, depth=0):
    """Text of a parameter value that does not depend on hashing or addresses."""
    try:
        if depth < 4 and isinstance(v, (set, frozenset)):
            return type(v).__name__ + "({" + ", ".join(sorted(_stable_repr(x, depth + 1) for x in v)) + "})"
        if depth < 4 and isinstance(v, dict):
            return "{" + ", ".join(sorted(_stable_repr(k, depth + 1) + ": " + _stable_repr(x, depth + 1)
                                          for k, x in v.items())) + "}"
        if depth < 4 and type(v) in (list, tuple):
            return type(v).__name__ + "(" + ", ".join(_stable_repr(x, depth + 1) for x in v) + ")"
        r = repr(v)
    except Exception:
        r = "<unrepresentable " + type(v).__qualname__ + ">"
    return sf.one_line(_ADDR.sub("0x?", r), 500)


def _base_id(item):
    parent = getattr(item, "parent", None)
    name = getattr(item, "originalname", None) or item.name.split("[", 1)[0]
    return (parent.nodeid + "::" + name) if parent is not None and parent.nodeid else name


def _fingerprint(st, item):
    cs = getattr(item, "callspec", None)
    if cs is None:
        return None
    try:
        b = _base_id(item)
        return {"base": b, "params": {k: _stable_repr(v) for k, v in sorted(cs.params.items())},
                "indices": {k: int(i) for k, i in sorted(cs.indices.items())},
                "count": st.param_counts.get(b, 0)}
    except Exception:
        return None


def _env_fingerprint():
    try:
        return json.loads(os.environ.get("PROSECUTOR_FLIP_MATCH") or "null")
    except ValueError:
        return None


def _match_flip_test(st, items, fp=None):
    """The item to re-run: the node id if it names the same test, else the one test of the same
    function whose parameters have the recorded values, else (same number of parametrizations)
    the one with the same parameter indices.  Sets st.flip_unmatched / st.flip_matched.
    `fp`: the test's fingerprint (rerun.json tests[ID]; default PROSECUTOR_FLIP_MATCH)."""
    want = st.flip_test
    if fp is None:
        fp = _env_fingerprint()
    exact = [it for it in items if it.nodeid == want]
    if not isinstance(fp, dict) or "base" not in fp:
        return exact[0] if exact else None
    cands = [it for it in items if getattr(it, "callspec", None) is not None and _base_id(it) == fp["base"]]
    if not cands:
        return exact[0] if exact else None
    def params(it):
        return {k: _stable_repr(v) for k, v in sorted(it.callspec.params.items())}
    same_values = [it for it in cands if params(it) == fp.get("params")]
    chosen, how = None, None
    if len(same_values) == 1:
        chosen, how = same_values[0], "by its parameter values"
    else:
        pool = same_values or cands
        why = "several tests have its parameter values" if same_values else "its parameter values differ in this run"
        ex = [it for it in pool if it.nodeid == want]
        if ex:
            chosen, how = ex[0], f"by its node id ({why})"
        elif len(cands) == fp.get("count"):
            # the same number of parametrizations: the same position in their order
            idx = [it for it in pool if {k: int(i) for k, i in it.callspec.indices.items()} == fp.get("indices")]
            if len(idx) == 1:
                chosen, how = idx[0], f"by its parameter indices ({why})"
    if chosen is None:
        shown = ", ".join(f"{k}={v}" for k, v in (fp.get("params") or {}).items())
        st.flip_unmatched = (f"test not matched: {want} ({len(cands)} tests of {fp['base']} here, "
                             f"{fp.get('count', '?')} when traced; "
                             + (f"{len(same_values)} with the recorded parameters {shown}" if same_values else
                                f"none with the recorded parameters {shown}") + ")")
        return None
    if chosen.nodeid != want or same_values != [chosen]:
        st.flip_matched = f"test matched as {chosen.nodeid} {how}"
    st.flip_test = chosen.nodeid
    return chosen


def _root_code(item):
    obj = getattr(item, "obj", None)
    if obj is None:
        return None
    try:
        obj = inspect.unwrap(obj)
    except Exception:
        pass
    obj = getattr(obj, "__func__", obj)
    return getattr(obj, "__code__", None)


def _code_of(obj):
    try:
        obj = inspect.unwrap(obj)
    except Exception:
        pass
    obj = getattr(obj, "__func__", obj)
    co = getattr(obj, "__code__", None)
    return co if isinstance(co, types.CodeType) else None


def _project_file(st, rp):
    """A .py file under the project directory (pytest's cwd), not in an installed package."""
    base = st.reg.cwd
    if not rp.endswith(".py") or not rp.startswith(base + os.sep):
        return False
    parts = os.path.relpath(rp, base).split(os.sep)[:-1]
    return not any(p in ("site-packages", "dist-packages", "__pycache__", "node_modules")
                   or p.startswith(".") for p in parts)


def _unittest_roots(item):
    """Code objects of the `setUp` and `tearDown` of a unittest TestCase test (resolved through
    the class's MRO, as TestCase.run calls them), traced as root frames around the test
    function (docs/frontend-python.md, "Tracing model").  unittest's own (empty) methods are
    not traced code and are left out."""
    cls = getattr(item, "cls", None)
    if cls is None or not isinstance(cls, type):
        return ()
    try:
        import unittest
        if not issubclass(cls, unittest.TestCase):
            return ()
    except Exception:
        return ()
    out = []
    for name in ("setUp", "tearDown"):
        try:
            fn = getattr(cls, name, None)
        except Exception:
            fn = None
        if fn is None or fn is getattr(unittest.TestCase, name, None):
            continue
        co = _code_of(fn)
        if co is not None:
            out.append(co)
    return tuple(out)


_HARNESS_DIRS = tuple(os.path.dirname(m.__file__) + os.sep for m in (pytest, _pytest_pkg, pluggy)) + (
    os.path.dirname(os.path.abspath(__file__)) + os.sep,)


def _in_harness(filename):
    return os.path.abspath(filename).startswith(_HARNESS_DIRS)


def _alarm(signum, frame):
    st = _state
    if st is None or st.tracer.cur is None:
        # The test has already ended (the alarm raced its end): raising now would hit pytest's
        # own machinery and lose the test's report.
        return
    if st.stop_steps and st.tracer.cur.nsteps < st.stop_steps:
        left = st.cur_timeout - (time.monotonic() - st.call_t0)
        if left > 0:
            signal.setitimer(signal.ITIMER_REAL, min(left, STEP_POLL_S))
            return
    if st.limit_pending is not None:
        # the base limit ran out before the plain run alongside had this test's result: wait
        # for it (the wait does not count), and go on up to the limit the test would have had
        # with the plain run before (max(timeout, factor x its plain duration))
        # (the handler runs wherever the test is, also near the recursion limit: if the wait
        # cannot run there, it is tried again a moment later, never raised into the test)
        try:
            nid = st.limit_pending
            w0 = time.monotonic()
            _plain_wait(st, nid)
            now = time.monotonic()
            limit = st.timeout_for(nid)
        except Exception:
            signal.setitimer(signal.ITIMER_REAL, 0.05)
            return
        st.limit_pending = None
        st.cur_timeout = limit
        st.call_t0 += now - w0
        left = limit - (now - st.call_t0)
        if left > 0:
            signal.setitimer(signal.ITIMER_REAL, left)
            return
    st.tracer.cur.timed_out = True
    if frame is not None and _in_harness(frame.f_code.co_filename):
        # Interrupted inside pytest, pluggy or this tracer (the test is unwinding or being
        # reported, or the tracer is recording a step): an exception here would not fail the
        # test but break its report. Try again in a moment: a traced loop spends most of its
        # time in the tracer, and waiting a whole second per miss let a 1 s limit run 45 s
        # (QuixBugs `bitcount`).
        signal.setitimer(signal.ITIMER_REAL, HARNESS_RETRY_S)
        return
    signal.setitimer(signal.ITIMER_REAL, 1.0)  # keep insisting if it is swallowed
    if st.stop_steps and st.tracer.cur.nsteps >= st.stop_steps:
        raise TestTimeout(f"test ran past {st.stop_steps} steps: it hangs (the plain run stopped it at its "
                          f"limit; prosecutor timeout)")
    raise TestTimeout(f"test ran longer than {st.cur_timeout:g} s (prosecutor timeout)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    st = _state
    if st is None:
        yield
        return
    if st.mode == "plain":
        yield from _plain_call(st, item)
        return
    _stop_setup(st)
    if st.full is _MISSING:
        st.full = _preselect(st) if st.mode == "trace" else None
    cover_only = st.full is not None and item.nodeid in st.plain and item.nodeid not in st.full
    st.cur_timeout = st.timeout_for(item.nodeid) if st.mode == "trace" else st.timeout
    st.stop_steps = st.step_limit_for(item.nodeid)
    # (the plain run alongside has no result for it yet: the base limit, extended by _alarm)
    st.limit_pending = (item.nodeid if st.mode == "trace" and st.plain_pending and st.cur_timeout > 0
                        and item.nodeid not in st.plain else None)
    t0 = st.call_t0 = time.monotonic()
    if st.values is not None and st.mode == "flip":
        # the test's step i is step i + offset of the trace the re-run writes: capture and
        # patch steps are numbered so (checked when the trace is written, _flip_result)
        st.tracer.values_cfg = (st.values, _events_prefix(st, item))
    st.tracer.profile = _app_profile(st, item.nodeid) if st.mode == "trace" and not cover_only else None
    # a flip re-run that writes no trace and is not stopped by a step limit needs its tracer
    # only until every forced instance is reached (not a control run: its duration sets the
    # experiments' limits, and they are traced up to their flips)
    st.tracer.detach_reached = (st.mode == "flip" and bool(st.instances) and not st.events
                                and st.values is None and not st.stop_steps)
    try:
        with _running(st, item, st.cur_timeout, _alarm):
            st.tracer.start(item.nodeid, _root_code(item), extra_roots=_unittest_roots(item), cover_only=cover_only,
                            record_steps=st.mode == "trace" or bool(st.events))
            outcome = yield
            excinfo = getattr(outcome, "excinfo", None)
            st.tracer.origin_after_detach(excinfo[1] if excinfo else None)
    finally:
        # after the alarm is disarmed: stopping the tracer of a long (timed-out) test can take
        # longer than the re-armed alarm, and a TestTimeout raised there would lose the report
        rec = st.tracer.stop()
        st.limit_pending = None
        st.current = (rec, time.monotonic() - t0, st.cur_timeout)


def pytest_runtest_logfinish(nodeid, location):
    st = _state
    if st is not None and st.mode == "plain":
        st.streamed(nodeid)
    if _progress is not None:
        _progress.done += 1
        _progress.write()


def pytest_collection_finish(session):
    # (with so few tests that the traced run traces every passing test in full anyway, the
    # profile still tells the tracer when a test past its step cap has nothing left to cover:
    # Tracer._detach; _preselect ignores it then)
    if _progress is not None:
        _progress.total = len(session.items)
        _progress.write(force=True)


def pytest_runtest_logreport(report):
    if _progress is not None and report.failed:
        _progress.failed.add(report.nodeid)


class _Progress:
    """Tests done, collected and failed so far, in the file PROSECUTOR_PROGRESS names (plain and
    trace modes): the driver polls it to draw a progress bar on a terminal. At most ten writes a
    second; a write replaces the file whole (`os.replace`), so a reader never sees half a line."""

    def __init__(self, path):
        self.path = path
        self.total = self.done = 0
        self.failed = set()
        self.last = 0.0

    def write(self, force=False):
        now = time.monotonic()
        if not force and now - self.last < 0.1:
            return
        self.last = now
        try:
            tmp = self.path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(f"{self.done} {self.total} {len(self.failed)}\n")
            os.replace(tmp, self.path)
        except OSError:
            pass


_progress = (_Progress(os.environ["PROSECUTOR_PROGRESS"])
             if os.environ.get("PROSECUTOR_PROGRESS") and os.environ.get("PROSECUTOR_MODE") in ("plain", "trace")
             else None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    st = _state
    if st is None:
        return
    rep = outcome.get_result()
    if st.mode == "plain":
        _plain_report(st, item, call, rep)
        return
    if call.when == "setup":
        if rep.failed:
            st.by_id[item.nodeid] = t = {"id": item.nodeid, "outcome": "fail", "failure_kind": "exception",
                                         "failure": "error in setup: " + _exc_text(call.excinfo), "rec": None,
                                         "setup_failed": True}
            st.tests.append(t)
        elif rep.skipped and st.mode == "flip":
            st.by_id.setdefault(item.nodeid, {"id": item.nodeid, "outcome": "pass", "skipped": True})
        return
    if call.when != "call":
        return
    if st.running == item.nodeid:
        _subtest_report(st, item, call, rep)
        return
    sub = st.subtest_failure.pop(item.nodeid, None)
    if hasattr(rep, "wasxfail") or rep.skipped:
        st.current = None
        if st.mode == "flip":
            st.by_id.setdefault(item.nodeid, {"id": item.nodeid, "outcome": "pass", "skipped": True})
        return
    rec, dur, limit = getattr(st, "current", None) or (None, 0.0, st.timeout)
    st.current = None
    failed = rep.failed or sub is not None
    t = {"id": item.nodeid, "outcome": "fail" if failed else "pass", "duration_ms": int(dur * 1000), "rec": None,
         "timeout_s": limit}
    if not rep.failed and sub is not None:
        # the test body passed, a subtest failed: the first failing subtest is the failure
        t["match"] = _fingerprint(st, item)
        t["failure_kind"], t["failure"] = sub[0], sub[1]
        if rec is not None and rec.nsteps:
            t["failure_step"] = min(sub[2], min(rec.nsteps, st.step_cap) - 1)
    elif rep.failed:
        t["match"] = _fingerprint(st, item)
        exc = call.excinfo.value if call.excinfo is not None else None
        timed_out = isinstance(exc, TestTimeout) or (rec is not None and rec.timed_out)
        t["failure_kind"] = "timeout" if timed_out else ("assertion" if isinstance(exc, AssertionError) else "exception")
        t["failure"] = _exc_text(call.excinfo)
        if rec is not None and rec.nsteps:
            step = _origin_step(rec, exc)
            if step is None or step < 0 or step >= min(rec.nsteps, st.step_cap):
                step = min(rec.nsteps, st.step_cap) - 1
            t["failure_step"] = _with_body_step(st, rec, step)
    if (rec is not None and not rec.root_seen) or (rec is None and failed):
        t["untraced"] = True
    if rec is not None:
        if st.mode == "flip":
            t["evals"] = {nid: rec.occ.get(nid, 0) for (nid, _, _) in st.instances}
        st.tracer.infer_branches(rec, t.get("failure_step"))
        rec.origins = {}
        if rec.cover_only:
            t["coverage_only"] = True
        t["truncated"] = rec.truncated and not rec.cover_only
        if rec.detached:
            t["detached"] = True
        t["steps"] = min(rec.nsteps, st.step_cap)
        # root frames besides the test function's: a unittest setUp / tearDown run around it
        # (the trace gets the synthetic root, see write_dump)
        t["extra_roots"] = bool(rec.extra_roots)
        t["methods"] = sorted(rec.methods)
        t["coverage"] = sorted(rec.coverage)
        t["edges"] = sorted(rec.edges)
        if st.events and rec.record_steps:
            t["run"] = (rec.steps_node, rec.steps_frame, rec.frames, rec.branch, rec.binds)
            t["values"] = getattr(rec, "values", None)
        if st.mode == "trace" and rec.nsteps:
            spill = st.spill
            if spill is None:
                spill = st.spill = _Spill(os.path.join(st.tmp, "traces.pkl"))
            t["rec"] = spill.put((rec.steps_node, rec.steps_frame, rec.frames, rec.branch, rec.binds))
            if _heap is not None:
                rows = getattr(rec, "heap", None)
                t["heap"] = spill.put(rows) if rows else None
    if item.nodeid in st.by_id:
        return
    st.by_id[item.nodeid] = t
    st.tests.append(t)


_WITH_EXIT = re.compile(r":exit(#\d+)?$")


class _Spill:
    """The tests' traces and heap rows until the dump is written: pickled one after the other
    into one scratch file (a file per test cost about 1.5 ms each to create on the loaded test
    machine, seconds for a suite of a thousand tests); a token (truthy) says where each is."""

    def __init__(self, path):
        self.path = path
        self.w = open(path, "wb")
        self.r = None

    def put(self, obj):
        off = self.w.tell()
        pickle.dump(obj, self.w, protocol=pickle.HIGHEST_PROTOCOL)
        return ("spill", off)

    def get(self, token):
        if not token:
            return []
        if self.r is None:
            self.w.flush()
            self.r = open(self.path, "rb")
        self.r.seek(token[1])
        return pickle.load(self.r)

    def close(self):
        for fh in (self.w, self.r):
            if fh is not None:
                fh.close()


def _with_body_step(st, rec, step):
    """A failure raised by the exit of a `with` block of test code is about what the block's
    body did: `with pytest.raises(E): f()` failing with DID NOT RAISE, unittest's
    `with self.assertRaises(E)` ("E not raised"), a `match=` that did not match. The exit step
    depends only on the context manager (test code), so the failure point becomes the body's
    last step in the same frame (the call of code under test, whose value is then observed
    incorrect; issue 20 §1). Any other step is returned as it is."""
    nodes, frames = rec.steps_node, rec.steps_frame
    if step >= len(nodes) or not isinstance(nodes[step], str) or not _WITH_EXIT.search(nodes[step]):
        return step
    nid = nodes[step]
    if not any(f is not None and f.role == "test" and nid in f.nodes for f in st.reg.files.values()):
        return step
    entry = _WITH_EXIT.sub("", nid)
    for k in range(step - 1, -1, -1):
        if frames[k] == frames[step]:
            # the body ran nothing in this frame when the previous step is the `with` itself
            return step if nodes[k].split("#")[0] == entry else k
    return step


def _origin_step(rec, exc):
    """The step of test record `rec` where exception `exc` arose, if the tracer saw it."""
    origin = rec.origins.get(id(exc)) if exc is not None else None
    return origin[0] if origin is not None and origin[1] == exc_signature(exc) else None


def _subtest_report(st, item, call, rep):
    """A report made while the test's call phase still runs is a subtest's (`self.subTest` of
    unittest, pytest's `subtests` fixture; pytest >= 9 reports each through
    pytest_runtest_makereport with when == "call"). It is not the test's outcome: the first
    failing subtest is kept, with the step where its exception arose (or the current step), and
    decides the test's outcome and failure point when the test's own report comes."""
    if not rep.failed or item.nodeid in st.subtest_failure:
        return
    exc = call.excinfo.value if call.excinfo is not None else None
    cur = st.tracer.cur
    step = -1
    if cur is not None and cur.nsteps:
        step = _origin_step(cur, exc)
        if step is None:
            step = cur.nsteps - 1
    kind = "assertion" if isinstance(exc, AssertionError) else "exception"
    st.subtest_failure[item.nodeid] = (kind, _exc_text(call.excinfo), max(step, 0))


def _exc_text(excinfo):
    if excinfo is None:
        return ""
    try:
        e = excinfo.value
        msg = str(e).strip().splitlines()
        text = type(e).__name__ + (": " + msg[0] if msg else "")
    except Exception:
        text = "exception"
    return sf.one_line(text, 300)


def pytest_sessionfinish(session, exitstatus):
    if _progress is not None:
        _progress.write(force=True)
    st = _state
    if st is None:
        return
    if st.mode == "plain":
        st.write()
        if os.environ.get("PROSECUTOR_SERVE_PREVIEW") == "1" and os.environ.get("PROSECUTOR_OUT"):
            # its tests are done: the warm runner's session starts now, not at the traced run's
            # configure (its interpreter and pytest start-up later), nor while the plain run's
            # tests still need the second core
            _write_serve_preview(_preview_state(session.config, st.cwd))
        return
    _stop_setup(st)
    if st.mode == "flip":
        _finish_flip(st)
        return
    if st.mode == "serve":
        return
    try:
        _plain_finish(st)
        summary = write_dump(st)
        st.write_status(ok=True, **summary)
    except Exception as e:  # report, do not crash pytest
        import traceback
        st.write_status(ok=False, error=f"prosecutor: writing the dump failed: {type(e).__name__}: {e}",
                        traceback=traceback.format_exc())
        raise
    finally:
        if st.spill is not None:
            st.spill.close()
        shutil.rmtree(st.tmp, ignore_errors=True)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    st = _state
    if st is None or st.mode != "trace":
        return
    nf = sum(1 for t in st.tests if t["outcome"] == "fail")
    tr = terminalreporter
    tr.write_sep("-", "prosecutor trace")
    if not st.tests:
        tr.write_line("prosecutor: no test ran (the command collected nothing)")
    elif nf == 0:
        tr.write_line("prosecutor: no failing test: there is nothing to localize")
    else:
        tr.write_line(f"prosecutor: {len(st.tests)} tests, {nf} failing; dump in {st.out}")
    for w in (st.reg.warnings + st.tracer.errors)[:20]:
        tr.write_line("prosecutor warning: " + w)


# ---------------------------------------------------------------- serve mode (warm runner)
# `flip.py --serve` starts the test command once with PROSECUTOR_MODE=serve: the session imports
# and collects as a flip re-run does (same import hook, same setup recording, no test
# deselected), then, instead of running tests, answers requests (serve.py), each in a child
# forked from here that becomes a flip re-run of one test (_serve_child). The session itself
# sets up no fixture and runs no test.

def _protocol_fds():
    """The protocol's (stdin, stdout) that flip.py --serve kept; no process the session starts
    inherits them."""
    try:
        fds = [int(x) for x in os.environ.get("PROSECUTOR_SERVE_FDS", "").split(",") if x.strip()]
        for fd in fds:
            os.set_inheritable(fd, False)
    except (ValueError, OSError):
        fds = []
    return fds


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    st = _state
    if st is not None and st.mode == "trace" and st.plain_fork:
        _plain_pass(st, session)
        return None      # pytest's own loop runs the traced tests
    if st is None or st.mode != "serve":
        return None
    from . import serve
    sys.settrace(None)   # the setup recording pauses here; each child resumes it
    fds = _protocol_fds()
    if len(fds) != 2:
        raise pytest.UsageError("prosecutor: serve mode needs PROSECUTOR_SERVE_FDS (run flip.py --serve)")
    st.serve_tests = None      # read at the first request (_before_fork)
    opt = session.config.option
    # a flip re-run does not run its test either when collection failed (pytest's runtestloop)
    st.serve_blocked = bool(session.testsfailed and not opt.continue_on_collection_errors) or opt.collectonly
    task = serve.serve(fds[0], fds[1], _env_int("PROSECUTOR_SERVE_JOBS", 1), {"tests": len(session.items)},
                       prepare=_before_fork(st, session))
    if task is None:
        return True      # the session: the requests have ended
    # a child: one flip re-run; the test protocol is called from this frame, at the stack depth
    # pytest's own runtestloop calls it from (a test that recurses to the limit stops where it
    # stops in a flip re-run)
    try:
        item, res = _serve_child(st, session, task.request)
        if item is not None:
            _plain_failure_repr(item)
            try:
                item.config.hook.pytest_runtest_protocol(item=item, nextitem=None)
            except (KeyboardInterrupt, pytest.exit.Exception):
                pass        # the session would end here: the test has no report
            except Exception as e:   # pytest's INTERNALERROR in a flip re-run
                st.internal_error = sf.one_line(f"{type(e).__name__}: {e}", 200)
        sys.settrace(None)
        task.finish(res if res is not None else _flip_result(st))
    except BaseException:
        task.abort()


# ---------------------------------------------------------------- the plain pass (forked)
# With PROSECUTOR_PLAIN_FORK the plain pre-run is not a process of its own: once the traced run
# has collected, a child forked from it runs every collected test without tracing, as the plain
# run would (PlainState, the same hooks), writes PROSECUTOR_PLAIN_OUT and exits; the traced run
# waits for it and reads the results before its first test. The interpreter's and pytest's
# start-up and the collection are paid once (docs/frontend-python.md "Plain pre-run").

def _plain_pass(st, session):
    opt = session.config.option
    if (session.testsfailed and not opt.continue_on_collection_errors) or opt.collectonly:
        st.plain, st.plain_error = None, "it ran no test (collection failed, or --collect-only)"
        return
    t0 = time.monotonic()
    try:
        if threading.active_count() > 1:
            # a forked child would have this thread only (a server a conftest started, say)
            _plain_subprocess(st)
            return
        sys.stdout.flush()
        sys.stderr.flush()
        import warnings
        with warnings.catch_warnings():
            # (3.12+ warns of a fork where it sees other OS threads; a suite run with -W error
            # must not fail)
            warnings.simplefilter("ignore")
            pid = os.fork()
    finally:
        st.forked_s = time.monotonic() - t0
    if pid == 0:
        code = 1
        try:
            os.setpgid(0, 0)     # its own process group: what it leaves running is ended below
            _plain_child(st, session, t0)
            code = 0
        except BaseException:
            pass
        finally:
            _plain_child_exit(code)
    try:
        try:
            os.setpgid(pid, pid)     # (as the child does: whichever comes first)
        except OSError:
            pass
        status = _plain_pass_wait(st, pid)
    finally:
        try:
            # a process the plain tests started and left behind (an orphaned server) would
            # outlive the pass and could hold the driver's pipes open
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    st.plain_wall = st.forked_s = time.monotonic() - t0
    end = (f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
           else f"exit status {os.WEXITSTATUS(status)}")
    out = os.environ.get("PROSECUTOR_PLAIN_OUT")
    if not out or not os.path.exists(out):
        st.plain, st.plain_error = None, f"it wrote no results ({end}; forked after collection)"
        return
    st.plain, st.plain_error = _load_plain(out, st.plain_keys)
    if st.plain is not None and not st.plain:
        st.plain, st.plain_error = None, f"it recorded no test ({end})"


def _plain_child_exit(code):
    """Ends the forked plain pass without the session's end (no report, no atexit of the
    traced run), but with multiprocessing's own clean-up of what its tests started (a
    `multiprocessing.Manager()`'s server process, a `Pool`'s workers: its finalizers of objects
    made in another process do nothing), as a plain run's interpreter would at exit."""
    try:
        mp = sys.modules.get("multiprocessing.util")
        if mp is not None:
            mp._exit_function()
    except BaseException:
        pass
    os._exit(code)


def _plain_pass_wait(st, pid):
    """The forked plain pass's exit status; meanwhile the warm runner's preview and the analysis
    ahead (on the core this process leaves idle)."""
    if os.environ.get("PROSECUTOR_SERVE_PREVIEW") == "fork" and st.out:
        # the warm runner's session starts now, on the core this process leaves idle while
        # the plain pass runs
        _write_serve_preview(st)
    done = []

    def busy():
        if not done:
            r = os.waitpid(pid, os.WNOHANG)
            if r[0] == pid:
                done.append(r[1])
        return not done

    if os.environ.get("PROSECUTOR_AHEAD", "1").strip() != "0":
        previous = sys.gettrace()     # (the import-time recording's: it records none of this)
        sys.settrace(None)
        try:
            static_cache.prepare_ahead(st.reg, [os.path.realpath(p) for p in _app_files(st)], busy)
        except Exception:
            pass
        finally:
            sys.settrace(previous)
    return done[0] if done else os.waitpid(pid, 0)[1]


def _plain_subprocess(st):
    """The plain pass as a process of its own (the test command with PROSECUTOR_MODE=plain), for
    a traced run that cannot fork it: threads other than this one are running."""
    import subprocess
    env = dict(os.environ, PROSECUTOR_MODE="plain")
    env.pop("PROSECUTOR_PLAIN_FORK", None)
    if env.get("PROSECUTOR_SERVE_PREVIEW") == "fork":
        env["PROSECUTOR_SERVE_PREVIEW"] = "1"
    t0 = time.monotonic()
    try:
        argv = json.loads(os.environ.get("PROSECUTOR_COMMAND") or "[]")
        r = subprocess.run(argv, cwd=st.cwd, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = f"exit status {r.returncode}"
    except (OSError, ValueError) as e:
        end = f"{type(e).__name__}: {e}"
    st.plain_wall = time.monotonic() - t0
    st.plain_fork = False            # (the notes say it was not forked)
    out = os.environ.get("PROSECUTOR_PLAIN_OUT")
    st.plain, st.plain_error = (_load_plain(out, st.plain_keys) if out and os.path.exists(out)
                                else (None, f"it wrote no results ({end}; run on its own: "
                                      f"{threading.active_count() - 1} other thread(s) running)"))


def _plain_child(st, session, t0):
    """The forked plain pass: no tracer, no instrumentation of what is imported from now on, no
    terminal output; each collected test through pytest's test protocol (fixtures, other
    plugins' hooks, their time limits), as pytest's loop would run it."""
    global _state, _progress
    sys.settrace(None)
    threading.settrace(None)
    instrument.detach(st.finder)
    _progress = None
    config = session.config
    tr = config.pluginmanager.getplugin("terminalreporter")
    if tr is not None:
        config.pluginmanager.unregister(tr)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (1, 2):
        os.dup2(null, fd)
    plain = _state = PlainState()
    items = session.items
    for i, item in enumerate(items):
        if session.shouldfail or session.shouldstop:
            break
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=items[i + 1] if i + 1 < len(items) else None)
    plain.write(began=t0)


def _before_fork(st, session):
    """serve.serve's `prepare`, run in the session before each request's fork: rerun.json's
    per-test entries (read at the first request) and the prewarmed caches (_Prewarm)."""
    prewarm = _Prewarm(st, session)

    def prepare(req):
        if st.serve_tests is None:
            st.serve_tests = _serve_tests()
        prewarm(req)
    return prepare


def _serve_tests():
    """rerun.json's per-test entries, read at the first request: a session started while the
    traced run ran (SERVE_PREVIEW) began before they were written."""
    try:
        with open(os.environ.get("PROSECUTOR_SERVE_CONFIG") or "", encoding="utf-8") as fh:
            return json.load(fh).get("tests") or {}
    except (OSError, ValueError, AttributeError):
        return {}


class _Prewarm:
    """What every child of the serve-mode session would compute for itself on its first call
    events, computed once in the session before the fork (serve.serve's `prepare`): the static
    facts of the requested test's module (test files are analysed when their code first runs;
    app modules were analysed when the import hook instrumented them), and the tracer's caches
    of each code object of that module and of the app modules (method, position map, coverage
    needs). The values are those the child would compute: only when they are computed changes."""

    def __init__(self, st, session):
        self.st, self.session = st, session
        self.done = set()       # modules warmed
        self.app = False

    def __call__(self, req):
        test = req.get("test")
        mods = [it.module for it in self.session.items
                if it.nodeid == test and getattr(it, "module", None) is not None]
        if not self.app:
            self.app = True
            reg = self.st.reg
            mods += [m for m in list(sys.modules.values())
                     if reg.files.get(reg.real(getattr(m, "__file__", None) or "")) is not None]
        for m in mods:
            if id(m) not in self.done:
                self.done.add(id(m))
                self._module(m)

    def _module(self, mod):
        tr = self.st.tracer
        if getattr(mod, "__file__", None):
            self.st.reg.facts_for(mod.__file__, running=True)
        for co in _module_codes(mod):
            m = tr.method_of(co)
            if m is not None:
                tr.posmap_of(co, m)


def _module_codes(mod):
    """The code objects of the functions, methods and classes `mod` defines (and those nested in
    them: closures, lambdas, comprehensions); not those of a decorator's wrapper."""
    name = getattr(mod, "__name__", None)
    seen, codes, todo = set(), [], list(vars(mod).values())
    while todo:
        o = todo.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        if isinstance(o, (staticmethod, classmethod)):
            todo.append(o.__func__)
        elif isinstance(o, property):
            todo.extend(f for f in (o.fget, o.fset, o.fdel) if f is not None)
        elif isinstance(o, types.FunctionType) and o.__module__ == name:
            codes.append(o.__code__)
        elif isinstance(o, type) and o.__module__ == name:
            todo.extend(vars(o).values())
    out, stack = [], codes
    while stack:
        co = stack.pop()
        out.append(co)
        stack.extend(c for c in co.co_consts if isinstance(c, types.CodeType))
    return out


def _plain_failure_repr(item):
    """In a warm runner's child: pytest's report of a failure is a one-line string, not the
    formatted traceback (which reads every frame's source: a third of a short test's re-run).
    Nobody reads it: the child's output goes to a file read only to explain a crash, and the
    result comes from the exception itself (_exc_text); the outcome is pytest's, unchanged."""
    def short(excinfo, *args, **kwargs):
        try:
            return sf.one_line(f"{excinfo.typename}: {excinfo.value}", 500)
        except Exception:
            return "failed"
    item.repr_failure = short
    item._repr_failure_py = short


def _serve_child(st, session, req):
    """In a child forked from the serve-mode session: sets up the flip re-run `req` asks for
    exactly as flip mode does (the same test matching, occurrence numbering and time limit);
    returns (the item to run or None, None), or (None, the result) of a flip the child cannot
    make."""
    _fresh_capture(session.config)
    test, stmt, occ = req["test"], req.get("stmt", ""), int(req.get("occurrence", 0))
    fp = st.serve_tests.get(test)
    keep = _setup_keep(fp)
    counted = _resume_setup(st, keep)
    _set_rerun(st, stmt, occ, req.get("force"), req.get("events"), req.get("values"))
    if any(n <= counted.get(nid, 0) for (nid, n, _) in st.instances) or (st.events and keep):
        # an instance the session evaluated before the fork, or a trace that begins with setup
        # segments (the session recorded no steps of them)
        sys.settrace(None)
        return None, _cold_flip(test, req)
    st.mode, st.flip_test = "flip", test
    if isinstance(fp, dict) and st.timeout > 0 and _number(fp.get("timeout")) > st.timeout:
        st.timeout = _number(fp["timeout"])
    st.flip_steps = int(_number(fp.get("steps"))) if isinstance(fp, dict) else 0
    chosen = _match_flip_test(st, session.items, fp if fp is not None else {})
    return (chosen if not st.serve_blocked else None), None


def _number(v):
    try:
        return float(v or 0)
    except (TypeError, ValueError):
        return 0.0


def _resume_setup(st, keep):
    """In a child: the setup recording goes on as a flip re-run's of this test would (counting the
    segments in `keep` only) until the test's call phase; returns the occurrences counted so far
    (the evaluations of the kept segments the session ran before the fork)."""
    tr = st.tracer
    counted = {}
    for k in sorted(keep):
        for nid, n in (tr.segment_occ[k] if k < len(tr.segment_occ) else {}).items():
            counted[nid] = counted.get(nid, 0) + n
    if tr.setup_mode and tr.setup_rec is not None:
        tr.setup_rec.occ = dict(counted)
        tr.setup_keep = keep
        scratch = TestRecord("<setup:other>", False)
        scratch.occ = _NoCount()
        tr.setup_scratch = scratch
        tr.cur = tr.setup_rec
        sys.settrace(tr._global)
    return counted


def _set_rerun(st, stmt, occ, force, events, values=None):
    """What a re-run forces: the set `force` ([[stmt, occurrence, to], ...], checked), or else
    the flip of evaluation `occ` of `stmt` (a set of one whose outcome is the opposite of the
    natural one), or nothing (`stmt` empty); where it writes its trace (`events`); and what it
    records, captures and patches (`values`, checked; with events only)."""
    st.force_list = force
    st.instances = ([tuple(x) for x in force] if force is not None
                    else [(stmt, occ, None)] if stmt else [])
    st.tracer.force = {}
    for (nid, n, to) in st.instances:
        st.tracer.force.setdefault(nid, {})[n] = to
    st.events = events or None
    st.values = values if st.events and isinstance(values, dict) else None
    # the setup recording (import-time code, before the test) records values, renumbered when
    # the trace is written (_value_rows); it captures and patches nothing
    st.tracer.values_cfg = (st.values, None) if st.values is not None and st.values.get("record") else None


def _events_prefix(st, item):
    """How many steps the re-run's trace will have before the test's own (as _trace_rows puts
    them): the synthetic root and the setup segments, or the synthetic root alone when a
    unittest setUp / tearDown of traced code runs around the test, or none."""
    setup = _setup_view(st)
    if setup is not None and setup.segments:
        return len(setup.prefix(setup.segments)[0])
    roots = [co for co in _unittest_roots(item) if st.tracer.method_of(co) is not None]
    return 2 if roots else 0


def _setup_view(st):
    """The setup recording as the re-run's trace holds it (_Setup), or None."""
    if st.setup_view is None and st.setup is not None and st.setup.record_steps and st.setup.steps_node:
        st.setup_view = _Setup(st.setup, st.reg)
    return st.setup_view


def _cold_flip(test, req):
    """A re-run the child cannot make (an instance in import-time code the session already
    ran, or the events of a trace that begins with setup segments): a new process makes it
    (flip.py, as the cold runner does), run from this child."""
    import tempfile
    from . import flip
    fd, out = tempfile.mkstemp(prefix="prosecutor-flip-", suffix=".json")
    os.close(fd)
    args = json.loads(os.environ.get("PROSECUTOR_SERVE_ARGS") or "[]")
    for key, var in (("force", "PROSECUTOR_FORCE"), ("events", "PROSECUTOR_EVENTS"),
                     ("values", "PROSECUTOR_VALUES")):
        if key in req:
            os.environ[var] = req[key] if key == "events" else json.dumps(req[key])
        else:
            os.environ.pop(var, None)
    flip.main(["--test", test, "--stmt", req.get("stmt", ""), "--occurrence", str(req.get("occurrence", 0)),
               "--out", out] + args)
    try:
        with open(out, encoding="utf-8") as fh:
            res = json.load(fh)
        os.remove(out)
    except (OSError, ValueError) as e:
        res = {"outcome": "crash", "flipped": False, "detail": f"test command failed: no result: {e}"}
    res["runner"] = "cold"
    return res


def _fresh_capture(config):
    """A child gets capture files of its own: the session's are shared by every child (one file
    offset), and pytest truncates them while reading."""
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is None or getattr(capman, "_global_capturing", None) is None:
        return
    try:
        capman._global_capturing = None
        capman.start_global_capturing()
        capman.suspend_global_capture()
    except Exception:
        pass


# ---------------------------------------------------------------- flip result
# Reasons a flip re-run reports in `detail` (the text before the first ": "; the Rust side
# counts void / crashed experiments by reason):
#   "flipped: STMT#OCC to B"                 the instance was flipped (then "; " + the failure)
#   "forced: STMT#OCC to B, ..."              every instance of a forced set was reached
#   "control run: nothing flipped"            nothing to flip or force
#   "test not collected: ID"                  no collected test has that id (nor its function)
#   "pytest internal error: ID: ERROR (...)"  the test ran, pytest lost its report (INTERNALERROR)
#   "test not matched: ID (WHY)"              its function is there but no parametrization matches
#   "test setup failed: ID: ERROR"            collected, but a fixture / setUp failed
#   "test skipped: ID"                        skipped or xfailed in the re-run
#   "branch not reached: STMT#OCC (...)"      the test ran but evaluated STMT fewer than OCC times
#   "branch not flippable: STMT#OCC: WHY"     reached, but that instance cannot be inverted
#                                             (a forced set: the first such instance, then
#                                             " (K of N forced instances reached)")
#   "test command failed: ..."                (flip.py) the command wrote no result
#   "rerun config error: ..."                 (flip.py) unusable rerun.json / arguments
def _finish_flip(st):
    res = _flip_result(st)
    if st.flip_out:
        with open(st.flip_out, "w", encoding="utf-8") as fh:
            json.dump(res, fh)


def _flip_result(st):
    """The re-run's result: outcome, flipped, detail; with a forced set "forced", with events
    "truncated" (after writing them)."""
    t = st.by_id.get(st.flip_test)
    why = _not_run(st, t)
    if why is not None:
        res = {"outcome": "crash", "flipped": False, "detail": why}
    else:
        flipped, detail = _forced_detail(st, t)
        if st.flip_matched:
            detail += "; " + st.flip_matched
        if t["outcome"] == "fail":
            detail += "; " + t.get("failure", "")
        res = {"outcome": t["outcome"], "flipped": flipped, "detail": detail}
        if st.tracer.thrown:
            # the code under analysis threw at the flip's call, into the test (Tracer._watch_throw)
            res["thrown"] = True
            if t["outcome"] == "pass":
                res["detail"] += "; passed by an exception: the call that held the flip threw it into the test"
        if t.get("detached"):
            res["detached"] = True     # traced until its forced instances were reached (Tracer._forced)
    if st.force_list is not None:
        reached = st.tracer.reached
        res["forced"] = [{"stmt": nid, "occurrence": n, "to": to, "reached": (nid, n) in reached,
                          "was": reached.get((nid, n))} for (nid, n, to) in st.instances]
    off = None
    if st.events:
        truncated, off = _write_events(st, t) if why is None else (False, None)
        res["truncated"] = bool(truncated)
    if st.values is not None:
        _values_result(st, t, off, res)
    return res


def _values_result(st, t, off, res):
    """The result keys of a re-run given `values`: `patched` (the steps patched, numbered as
    the trace written), `patch_errors`; a crash when the trace's prefix is not what the steps
    were numbered by when the test began (_events_prefix)."""
    vr = t.get("values") if t is not None else None
    base = vr.offset if vr is not None else 0
    if "patch" in st.values:
        res["patched"] = sorted(i + base for i in vr.patched) if vr is not None else []
    if vr is not None and vr.patch_errors:
        res["patch_errors"] = [f"{i + base} {var}: {why}" for (i, var, why) in vr.patch_errors]
    if vr is not None and off is not None and off != vr.offset and (st.values.get("capture") or st.values.get("patch")):
        res.update(outcome="crash", flipped=False,
                   detail=f"values: the trace begins with {off} steps before the test's own, not the "
                          f"{vr.offset} its capture / patch steps were numbered by when it began")


def _not_run(st, t):
    """Why the re-run's test did not run (a crash), or None."""
    if st.rerun_error:
        return st.rerun_error
    if st.flip_unmatched:
        return st.flip_unmatched
    if t is None and st.internal_error:
        return (f"pytest internal error: {st.flip_test}: {st.internal_error} (the re-run's "
                f"report was lost)")
    if t is None:
        why = st.flip_test
        if st.collect_errors:
            why += " (collection errors: " + "; ".join(st.collect_errors[:3]) + ")"
        return "test not collected: " + why
    if t.get("setup_failed"):
        return f"test setup failed: {st.flip_test}: {t.get('failure', '')}"
    if t.get("skipped"):
        return f"test skipped: {st.flip_test}"
    return None


def _forced_detail(st, t):
    """(flipped, detail) of a re-run whose test ran: whether every instance it forced was
    reached, and what became of them (the first one not reached)."""
    if not st.instances:
        return False, "control run: nothing flipped"
    reached = st.tracer.reached
    done = [f"{nid}#{n} to {1 - reached[(nid, n)] if to is None else to}"
            for (nid, n, to) in st.instances if (nid, n) in reached]
    missed = [(nid, n) for (nid, n, _) in st.instances if (nid, n) not in reached]
    if missed:
        more = "" if st.force_list is None else f" ({len(done)} of {len(st.instances)} forced instances reached)"
        return False, _unreached(st, t, *missed[0]) + more
    return True, ("flipped: " if st.force_list is None else "forced: ") + ", ".join(done)


def _unreached(st, t, nid, n):
    """Why instance `n` of `nid` was not forced."""
    inst = f"{nid}#{n}"
    why = st.tracer.unforceable.get((nid, n))
    if why:
        return f"branch not flippable: {inst}: {why}"
    evals = t.get("evals", {}).get(nid, 0)
    if evals >= n:
        return (f"branch not flippable: {inst}: its outcome is not reported by the instrumentation "
                f"(test code, a case clause, or a module imported before the tracer)")
    return f"branch not reached: {inst} (evaluated {evals} time{'s' if evals != 1 else ''})"


RUN_TRACE = "r"      # the trace id of a re-run's events


def _write_events(st, t):
    """Writes the re-run's trace into st.events as the dump writes a test's trace (frame, step
    and branch facts, trace id RUN_TRACE), with values.facts and capture.json when `values`
    asks for them; each file complete or absent, step.facts last.  Returns (whether the trace
    hit the step cap, how many steps it has before the test's own)."""
    # (only the segments this test's trace holds ran counted)
    setup = _Setup(st.setup, st.reg) if st.setup is not None and st.setup.record_steps and st.setup.steps_node else None
    segs = setup.segments if setup is not None else []
    run = t.get("run") or ([], [], [], {}, [])
    segs, off, (nodes, frames_of, frames, branch, _, _) = _trace_rows(st, setup, segs, t, run)
    d = st.events
    os.makedirs(d, exist_ok=True)
    names = ["frame", "branch", "step"]
    w = {n: _Facts(d, f".{n}.facts.tmp") for n in names}
    _write_trace(w, RUN_TRACE, nodes, frames_of, frames, branch)
    for f in w.values():
        f.close()
    files = [f"{n}.facts" for n in names]
    vals = st.values or {}
    extra = []
    if vals.get("record"):
        _write_values(os.path.join(d, ".values.facts.tmp"), _value_rows(st, setup, segs, off, t))
        extra.append("values.facts")
    if "capture" in vals:
        vr = t.get("values")
        cap = {} if vr is None else {str(i + off): got for i, got in sorted(vr.captured.items())}
        with open(os.path.join(d, ".capture.json.tmp"), "w", encoding="utf-8") as fh:
            json.dump(cap, fh)
        extra.append("capture.json")
    for name in ("values.facts", "capture.json"):
        if name not in extra:
            try:
                os.remove(os.path.join(d, name))      # (an earlier run's, in a reused directory)
            except OSError:
                pass
    for name in files[:-1] + extra + files[-1:]:
        os.replace(os.path.join(d, "." + name + ".tmp"), os.path.join(d, name))
    return bool(t.get("truncated")), off


def _write_values(path, rows):
    with open(path, "w", encoding="utf-8", errors="backslashreplace", newline="\n") as fh:
        for lo in range(0, len(rows), 65536):
            fh.write("".join([f"{i}\t{var}\t{s}\n" for (i, var, s) in rows[lo:lo + 65536]]))


def _value_rows(st, setup, segs, off, t):
    """The rows of values.facts, (step, var, encoding) sorted, numbered as the trace written:
    the test's steps shifted by the prefix `off`; the setup recording's steps renumbered as
    the prefix holds them (_Setup.prefix), those of a left-out inert statement merged into its
    frame's next step that is kept (a statement's changes show at the next step)."""
    out = []
    vr = t.get("values")
    if vr is not None:
        out = [(i + off, var, s) for (i, var, s) in vr.rows]
    svr = getattr(st.setup, "values", None) if segs else None
    if svr is not None and svr.rows:
        by_step = {}
        for (i, var, s) in svr.rows:
            by_step.setdefault(i, {})[var] = s
        import bisect
        starts = [g.s0 for g in segs]
        soffs = []
        pos = 1                          # (step 0 is the synthetic root's)
        for g in segs:
            soffs.append(pos - g.s0)
            pos += g.s1 - g.s0
        keep, newi, frame_of = setup.keep, setup.newi, setup.src_steps_frame
        pending = {}
        for i in range(len(keep)):
            r = by_step.get(i)
            if not keep[i]:
                if r:
                    pending.setdefault(frame_of[i], {}).update(r)
                continue
            p = pending.pop(frame_of[i], None) if pending else None
            if not r and not p:
                continue
            if p:
                p.update(r or {})
                r = p
            c = newi[i]
            j = bisect.bisect_right(starts, c) - 1
            if j < 0 or c >= segs[j].s1:
                continue                 # (a segment the trace does not hold)
            w = c + soffs[j]
            out.extend((w, var, s) for var, s in r.items())
    out.sort()
    return out


# ---------------------------------------------------------------- dump writer
def _clean(s):
    s = str(s)
    if "\t" in s or "\n" in s or "\r" in s:
        s = s.replace("\t", " ").replace("\n", " ").replace("\r", " ")
    return s


class _Facts:
    def __init__(self, out, name):
        self.fh = open(os.path.join(out, name), "w", encoding="utf-8", newline="\n")

    def row(self, *cols):
        self.fh.write("\t".join(_clean(c) for c in cols))
        self.fh.write("\n")

    def close(self):
        self.fh.close()


def _preselect(st):
    """The tests to trace in full, chosen before they run from the plain pre-run's results
    (None: trace every test in full). The other tests are traced for coverage, edge coverage
    and methods only (the tracer past its step cap: no steps, bindings or heap rows): they are
    tests whose trace the dump would not keep (_select). Traced in full: every test the plain
    run saw fail or time out or has no profile of, and twice PROSECUTOR_MAX_PASSING passing
    tests that share the most methods with them, fewest calls first (the plain run's profile,
    _method_of_key); _select then keeps PROSECUTOR_MAX_PASSING of these by their traced
    methods and steps, as it would have among all. Not with PROSECUTOR_TRACE_ALL,
    PROSECUTOR_PRESELECT=0, import-time recording (its segments are chosen per test from
    every test's heap rows), or without a plain run before this one."""
    if (st.trace_all or not st.plain or st.plain_pending or st.setup is not None or not st.plain_keys
            or os.environ.get("PROSECUTOR_PRESELECT", "1").strip() == "0"
            or len(st.plain) <= 2 * max(st.max_passing, 0) + 1):
        # (so few tests that every passing one is traced in full, as without a profile)
        return None
    method = {}

    def methods(code):
        out = {}
        for i, n in code:
            m = method.get(i, _MISSING)
            if m is _MISSING:
                m = method[i] = _method_of_key(st, st.plain_keys[i]) if 0 <= i < len(st.plain_keys) else None
            if m is not None:
                out[m] = out.get(m, 0) + n
        return out

    full = set()
    fail_methods = set()
    for nid, r in st.plain.items():
        if r.get("outcome") in ("fail", "timeout"):
            full.add(nid)
            fail_methods.update(methods(r.get("code") or ()))
    scored = []
    for order, (nid, r) in enumerate(st.plain.items()):
        if r.get("outcome") != "pass":
            continue
        code = r.get("code")
        if not isinstance(code, list):
            full.add(nid)
            continue
        ms = methods(code)
        common = len(fail_methods.intersection(ms))
        if common:
            scored.append((-common, sum(ms.values()), order, nid))
    scored.sort()
    full.update(x[3] for x in scored[:2 * max(st.max_passing, 0)])
    return full


def _app_profile(st, nodeid):
    """The code keys of the app functions the plain run saw test `nodeid` run (its profile,
    without lambdas and comprehensions, which are no methods), or None (no profile): past the
    step cap, the tracer stops once all of them have nothing left to cover (Tracer._detach)."""
    r = st.plain.get(nodeid) if st.plain else None
    code = r.get("code") if isinstance(r, dict) else None
    if not isinstance(code, list) or not st.plain_keys:
        return None
    app = st.app_key
    out = set()
    try:
        for i, _calls in code:
            key = app.get(i, _MISSING)
            if key is _MISSING:
                key = st.plain_keys[i]
                path, _line, _qual, name = key.rsplit(":", 3)
                key = app[i] = key if name not in sf.OPAQUE_CODE_NAMES and st.reg.role_of(path) == "app" else None
            if key is not None:
                out.add(key)
    except (IndexError, TypeError, ValueError):
        return None
    return out


def _method_of_key(st, key):
    """The method a plain-run code key (see _code_run) stands for: its method id where the
    file's static facts are known already (the same id the traced run's `methods` hold), the
    key itself in another file the tracer traces, None elsewhere or for code that is no method
    (a lambda, a comprehension)."""
    try:
        path, line, qual, name = key.rsplit(":", 3)
        f = st.reg.files.get(path, _MISSING)
        if f is _MISSING:
            return key if st.reg.role_of(path) is not None and name not in sf.OPAQUE_CODE_NAMES else None
        m = f.method_for(name, qual or None, int(line)) if f is not None else None
        return m.id if m is not None else None
    except (ValueError, AttributeError):
        return None


def _select(st):
    failing = [t for t in st.tests if t["outcome"] == "fail" and t.get("rec")]
    fail_methods = set()
    for t in failing:
        fail_methods |= set(t.get("methods", ()))
    scored = []
    for i, t in enumerate(st.tests):
        if t["outcome"] != "pass" or not t.get("rec"):
            continue
        common = len(fail_methods & set(t.get("methods", ())))
        if common > 0 or st.trace_all:
            scored.append((-common, t.get("steps", 0), i, t))
    scored.sort(key=lambda x: x[:3])
    keep = len(scored) if st.trace_all else max(st.max_passing, 0)
    chosen = {id(x[3]) for x in scored[:keep]}
    return {id(t) for t in failing} | chosen


def _ids(ts, n=10):
    ids = [t["id"] if isinstance(t, dict) else t for t in ts]
    return ", ".join(ids[:n]) + (" ..." if len(ids) > n else "")


def _compare_plain(st):
    """Compares each traced test's outcome with the plain pre-run's and returns the warnings.
    A test whose outcome tracing changed (it passes plainly but fails or times out under the
    tracer, or fails plainly but passes under it) is left out of st.tests: no trace, no
    coverage, no outcome (kept, with a warning, if leaving them out would leave no failing
    test). A test that fails plainly and was stopped by the tracer's timeout stays a failing
    test with plain_outcome "fail"."""
    st.tracing_changed, st.tracing_changed_kept = [], False
    warnings = []
    if st.plain is None:
        return warnings
    fail_only, pass_only, stopped = [], [], []
    for t in st.tests:
        p = st.plain.get(t["id"])
        po = p.get("outcome") if p else None
        if po not in ("pass", "fail"):
            continue   # not run plainly, skipped, or stopped by the plain run's own timeout
        t["plain_duration_ms"] = int(float(p.get("duration_s") or 0) * 1000)
        if po == "pass" and t["outcome"] == "fail":
            fail_only.append(t)
        elif po == "fail" and t["outcome"] == "pass":
            pass_only.append(t)
        elif po == "fail" and t.get("failure_kind") == "timeout":
            t["plain_outcome"] = "fail"
            stopped.append(t)
    st.tracing_changed = [t["id"] for t in fail_only + pass_only]
    keep_fail_only = False
    if fail_only:
        gone = {id(t) for t in fail_only + pass_only}
        keep_fail_only = not any(t["outcome"] == "fail" for t in st.tests if id(t) not in gone)
    if keep_fail_only:
        # leaving them out would leave nothing to localize: keep them, say so
        st.tracing_changed_kept = True
        for t in fail_only:
            t["plain_outcome"] = "pass"
        warnings.append(f"{len(fail_only)} test(s) fail only under tracing (they pass in a plain run) but are kept: "
                        f"leaving them out would leave no failing test, and their failures may be the tracer's, "
                        f"not the code's: " + _ids(fail_only))
    elif fail_only:
        warnings.append(f"{len(fail_only)} test(s) fail only under tracing and are left out (they passed in the "
                        f"plain run before; no trace, no coverage; a test that fails on the state it left behind "
                        f"in an earlier run, such as a file, shows the same): " + _ids(fail_only))
    if pass_only:
        warnings.append(f"{len(pass_only)} test(s) pass only under tracing and are left out (they fail in a "
                        f"plain run; no trace, no coverage): " + _ids(pass_only))
    gone = {id(t) for t in (pass_only if keep_fail_only else fail_only + pass_only)}
    if gone:
        st.tests = [t for t in st.tests if id(t) not in gone]
    if stopped:
        warnings.append(f"{len(stopped)} failing test(s) were stopped by the tracer's time limit before they failed "
                        f"(they fail in a plain run): their traces stop where the tracer stopped them, not at the "
                        f"tests' failures; raise --test-timeout: "
                        + ", ".join(f"{t['id']} ({t.get('timeout_s', st.timeout):g} s traced, "
                                    f"{t['plain_duration_ms'] / 1000:g} s plain)" for t in stopped[:5])
                        + (" ..." if len(stopped) > 5 else ""))
    return warnings


# The synthetic root of a trace that begins with setup segments: one frame of a test-code method
# with two statements, "import-time code" (the call step of every segment's module frame) and
# "the test" (the call step of the test function's frame). A trace has one root frame
# (docs/trace-format.md); the module bodies and the test are its callees, so neither returns
# into the other and the test function's arguments are no callee arguments of a module's step.
SETUP_FILE = "<prosecutor>"
SETUP_METHOD = "<prosecutor>::<setup>"
SETUP_STMT = "<prosecutor>:1:0"
SETUP_TEST_STMT = "<prosecutor>:2:0"


def _method_file(mid):
    return mid.rpartition("::")[0]


def _inert(node, m=None):
    """An import-time statement whose step reads and writes nothing the recording follows
    (see _Setup): with heap recording, a statement without any heap_access row (no use, no
    namespace slot or object it defines: a docstring, an import, a `def` without decorators or
    defaults, `_cache = {}`); without, a `nop`, an import or such a `def`."""
    if node is None or not node.real or node.kind == "branch":
        return False
    if node.kind == "nop":
        return True
    if m is not None and _heap is not None and _heap.ENABLED:
        return not m.facts.heap_access.get(node.id)
    t = node.text or ""
    if t.startswith(("import ", "from ")):
        return True
    return t.startswith(("def ", "async def ")) and not node.uses and "=" not in t


class _Segment:
    __slots__ = ("k", "s0", "s1", "f0", "f1", "root", "files", "coverage", "edges", "heap")


class _Setup:
    """The setup recording cut into segments (one per module body that began with nothing
    traced), and the trace prefix of a set of segments.

    Inert import-time steps are left out (of the prefix and of the coverage): in a module or
    class body, a statement that reads no variable and binds nothing a heap row follows (a
    docstring, an `import`, a `def` without decorators or default values, `_cache = {}`; see
    _inert), when its step opens no frame (an `import` running a module's body for the first
    time stays). Their values reach nothing, and in every failing trace they would sit at the
    prior, above real suspects that the evidence exonerates in part."""

    def __init__(self, rec, reg):
        import bisect
        import types as _types
        self.truncated = bool(rec.truncated)
        n = len(rec.steps_node)
        methods = {}
        for f in list(reg.files.values()):
            if f is not None:
                for m in f.methods:
                    methods[m.id] = m
        opened = {cs for (_, _, cs) in rec.frames if cs is not None}
        body = {}
        keep = [True] * n
        for i in range(n):
            if i in opened:
                continue
            mid = rec.frames[rec.steps_frame[i]][1]
            b = body.get(mid)
            if b is None:
                m = methods.get(mid)
                b = body[mid] = m is not None and m.params is None   # a module or class body
            if b and _inert(reg.node_index.get(rec.steps_node[i]), methods.get(mid)):
                keep[i] = False
        newi = [0] * (n + 1)
        c = 0
        for i in range(n):
            newi[i] = c
            if keep[i]:
                c += 1
        newi[n] = c
        used = [False] * len(rec.frames)
        for i in range(n):
            if keep[i]:
                used[rec.steps_frame[i]] = True
        newf = [0] * (len(rec.frames) + 1)
        c = 0
        for fid in range(len(rec.frames)):
            newf[fid] = c
            if used[fid]:
                c += 1
        newf[len(rec.frames)] = c
        # (the values of a re-run: _value_rows)
        self.keep, self.newi, self.src_steps_frame = keep, newi, rec.steps_frame
        cr = _types.SimpleNamespace()
        cr.steps_node = [rec.steps_node[i] for i in range(n) if keep[i]]
        cr.steps_frame = [newf[rec.steps_frame[i]] for i in range(n) if keep[i]]
        cr.frames = [(newf[fid], mid, None if cs is None else newi[cs])
                     for (fid, mid, cs) in rec.frames if used[fid]]
        cr.branch = {newi[i]: b for i, b in rec.branch.items() if i < n and keep[i]}
        cr.binds = [(newi[cs], newf[fid], formal, actual) for (cs, fid, formal, actual) in rec.binds
                    if fid < len(rec.frames) and used[fid] and cs < n]
        heap_rows = [(newi[i], v, o, m) for (i, v, o, m) in (rec.heap or []) if i < n and keep[i]]
        hidx = [r[0] for r in heap_rows]
        self.rec = cr
        self.segments = []
        segs = list(rec.segments)
        for j, (k, s0, f0, root) in enumerate(segs):
            s1 = segs[j + 1][1] if j + 1 < len(segs) else n
            f1 = segs[j + 1][2] if j + 1 < len(segs) else len(rec.frames)
            if s1 <= s0:
                continue
            g = _Segment()
            g.k, g.root = k, root
            g.s0, g.s1, g.f0, g.f1 = newi[s0], newi[min(s1, n)], newf[f0], newf[min(f1, len(rec.frames))]
            if g.s1 <= g.s0:
                continue
            g.files = {_method_file(mid) for (_, mid, _) in rec.frames[f0:f1]}
            g.coverage = {rec.steps_node[i] for i in range(s0, s1) if keep[i]}
            g.edges = set()
            last = {}
            for i in range(s0, s1):
                if not keep[i]:
                    continue
                fid = rec.steps_frame[i]
                p = last.get(fid)
                if p is not None:
                    g.edges.add((rec.steps_node[p], rec.steps_node[i]))
                last[fid] = i
            g.heap = heap_rows[bisect.bisect_left(hidx, g.s0):bisect.bisect_left(hidx, g.s1)]
            self.segments.append(g)
        if self.truncated and self.segments:
            # the segment the cap cut: a flip re-run could not number its evaluations as the
            # dump does (it runs to its end); left out of every trace
            self.segments.pop()
        # object (a namespace slot, a mutated object) -> the segments whose steps mutated it
        self.def_segs = {}
        for g in self.segments:
            for (_, _, o, m) in g.heap:
                if m == "def":
                    self.def_segs.setdefault(o, set()).add(g.k)
        self.modules = sum(1 for (_, mid, _) in rec.frames if mid.endswith("::<module>"))
        self.steps = len(cr.steps_node)
        self._cache = {}

    def for_test(self, t, heap_rows=()):
        """The segments relevant to a test: one of the segment's frames is of a file some
        method of the test's trace belongs to, or the test reads an object (a module global,
        a class attribute, a mutated object) the segment's steps mutated."""
        if SETUP_SCOPE == "all":
            return self.segments
        files = {_method_file(m) for m in t.get("methods", ())}
        ks = set()
        ds = self.def_segs
        for (_, _, o, m) in heap_rows:
            if m == "use" and o in ds:
                ks |= ds[o]
        return [g for g in self.segments if g.k in ks or g.files & files]

    def prefix(self, segs):
        """(steps_node, steps_frame, frames, branch, binds, heap rows) of the trace prefix:
        the synthetic root's first step, the segments renumbered, the root's test step."""
        key = tuple(g.k for g in segs)
        p = self._cache.get(key)
        if p is not None:
            return p
        rec = self.rec
        nodes, fr_of, frames, branch, binds, heap = [SETUP_STMT], [0], [(0, SETUP_METHOD, None)], {}, [], []
        for g in segs:
            soff = len(nodes) - g.s0
            foff = len(frames) - g.f0
            nodes.extend(rec.steps_node[g.s0:g.s1])
            fr_of.extend(f + foff for f in rec.steps_frame[g.s0:g.s1])
            for (fid, mid, cs) in rec.frames[g.f0:g.f1]:
                frames.append((fid + foff, mid, 0 if cs is None else cs + soff))
            for i in range(g.s0, g.s1):
                b = rec.branch.get(i)
                if b is not None:
                    branch[i + soff] = b
            for (cs, fid, formal, actual) in rec.binds:
                if g.f0 <= fid < g.f1:
                    binds.append((cs + soff, fid + foff, formal, actual))
            heap.extend((i + soff, v, o, m) for (i, v, o, m) in g.heap)
        nodes.append(SETUP_TEST_STMT)
        fr_of.append(0)
        p = (nodes, fr_of, frames, branch, binds, heap)
        if len(self._cache) < 64:
            self._cache[key] = p
        return p


def _bare_prefix():
    """The trace prefix without setup segments: the synthetic root's two steps."""
    return [SETUP_STMT, SETUP_TEST_STMT], [0, 0], [(0, SETUP_METHOD, None)], {}, [], []


SETUP_SCOPE = os.environ.get("PROSECUTOR_SETUP_SCOPE", "relevant").strip() or "relevant"


def _trace_rows(st, setup, segs, t, run):
    """The trace of test `t` (dump and re-run events alike): its record `run` (steps_node,
    steps_frame, frames, branch, binds) behind the prefix of its setup segments `segs`, or of
    the synthetic root alone when a unittest setUp / tearDown ran around it.  Returns (the
    segments kept, the prefix's length (0: none), (steps_node, steps_frame, frames, branch,
    binds, the prefix's heap rows))."""
    steps_node, steps_frame, frames, branch, binds = run
    if segs and 2 + sum(g.s1 - g.s0 for g in segs) + len(steps_node) > st.step_cap:
        # the step cap bounds the whole trace, and the test's own steps come first: a
        # trace the prefix would push past the cap (a test the tracer truncated) has none
        segs = []
    if not (segs or t.get("extra_roots")):
        return segs, 0, (steps_node, steps_frame, frames, branch, binds, [])
    # the trace begins with the setup segments: step 0 is the synthetic root's, the test
    # function's frame is called from its second step (and so are the frames of a unittest
    # setUp / tearDown, before and after it)
    p_nodes, p_frames_of, p_frames, p_branch, p_binds, p_heap = (
        setup.prefix(segs) if setup is not None else _bare_prefix())
    off = len(p_nodes)
    foff = len(p_frames)
    tstep = off - 1
    frames = p_frames + [(fid + foff, mid, tstep if cs is None else cs + off) for (fid, mid, cs) in frames]
    steps_node = p_nodes + list(steps_node)
    steps_frame = p_frames_of + [f + foff for f in steps_frame]
    nb = dict(p_branch)
    nb.update((i + off, b) for i, b in branch.items())
    binds = p_binds + [(cs + off, fid + foff, formal, actual) for (cs, fid, formal, actual) in binds]
    return segs, off, (steps_node, steps_frame, frames, nb, binds, p_heap)


def _write_trace(w, trace_id, steps_node, steps_frame, frames, branch):
    """The frame, step and branch rows of one trace (writers `w` by relation name)."""
    for (fid, mid, cs) in frames:
        w["frame"].row(trace_id, f"f{fid}", mid, "-" if cs is None else cs)
    # ids are tab/newline-free by construction: write the big relations directly
    fh = w["step"].fh
    for lo in range(0, len(steps_node), 65536):
        fh.write("".join([f"{trace_id}\t{i}\t{nid}\tf{fid}\n" for i, nid, fid in
                          zip(range(lo, lo + 65536), steps_node[lo:lo + 65536], steps_frame[lo:lo + 65536])]))
    n = len(steps_node)
    at = sorted(i for i in branch if i < n)
    for lo in range(0, len(at), 65536):
        w["branch"].fh.write("".join([f"{trace_id}\t{i}\t{branch[i]}\n" for i in at[lo:lo + 65536]]))


def write_dump(st):
    out = st.out
    plain_warnings = _compare_plain(st)
    tests = st.tests
    selected = _select(st)
    setup = None
    if st.setup is not None and st.setup.record_steps and st.setup.steps_node:
        setup = _Setup(st.setup, st.reg)
        if not setup.segments:
            setup = None
    # static facts: every app file under SRC, plus the test files that ran
    files = {}
    test_code = []
    for path in _app_files(st, test_code):
        rp = os.path.realpath(path)
        if rp in st.reg.test_files or _is_test_file(st, rp):
            continue
        f = st.reg.facts_for(rp)
        if f is not None:
            files[rp] = f
    for rp, f in st.reg.files.items():
        if f is not None:
            files[rp] = f
    names = ["stmt", "method", "method_line", "def", "use", "cfg", "formal", "this_formal", "actual", "receiver",
             "loop_head", "copy", "frame", "step", "branch", "bind", "coverage", "edge_coverage"]
    heap_on = _heap is not None and _heap.ENABLED
    if heap_on:
        names += ["heap_access", "heap"]
    elif _heap is None:
        st.reg.warnings.append("prosecutor_tracer/heap.py is missing: no heap facts (name-only model)")
    w = {n: _Facts(out, n + ".facts") for n in names}
    known = set()
    cfg_edges = set()
    src_dir = os.path.join(out, "source")
    shutil.rmtree(src_dir, ignore_errors=True)
    for rp in sorted(files, key=lambda p: files[p].rel):
        f = files[rp]
        for m in f.methods:
            if not m.nodes or m.entry is None:
                continue  # an empty module (comments only): nothing can execute
            w["method"].row(m.id, m.role, m.entry)
            if m.defline is not None:
                w["method_line"].row(m.id, m.defline)
            for i, v in enumerate(m.formals):
                w["formal"].row(m.id, i, v)
            if m.this_formal:
                w["this_formal"].row(m.id, m.this_formal)
            for nid in m.nodes:
                n = f.nodes[nid]
                known.add(nid)
                w["stmt"].row(nid, n.method, n.kind, n.file, n.line, n.text or "-")
                for v in sorted(n.defs):
                    w["def"].row(nid, v)
                for v in sorted(n.uses):
                    w["use"].row(nid, v)
                for i, v in enumerate(n.actuals):
                    if v is not None:
                        w["actual"].row(nid, i, v)
                if n.receiver:
                    w["receiver"].row(nid, n.receiver)
                if n.copy:
                    w["copy"].row(nid)
                if heap_on:
                    for (v, at, mode) in f.heap_access.get(nid, ()):
                        w["heap_access"].row(nid, v, at, mode)
        for (a, b, k) in sorted(f.edges):
            w["cfg"].row(a, b, k)
            cfg_edges.add((a, b))
        for h in sorted(f.loop_heads):
            w["loop_head"].row(h)
        # a copy of the source, for display
        try:
            dst = os.path.join(src_dir, f.rel)
            if not os.path.relpath(dst, src_dir).startswith(".."):
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                with open(dst, "w", encoding="utf-8") as fh:
                    fh.write(f.source)
        except OSError:
            pass
    multi_root = any(t.get("extra_roots") for t in tests if id(t) in selected and t.get("rec"))
    if setup is not None or multi_root:
        # the synthetic root of traces that begin with setup segments, or whose test ran its
        # unittest setUp / tearDown around the test function (test code)
        w["method"].row(SETUP_METHOD, "test", SETUP_STMT)
        w["stmt"].row(SETUP_STMT, SETUP_METHOD, "call", SETUP_FILE, 1,
                      "import-time code of the modules under test (run when pytest imported them)")
        w["stmt"].row(SETUP_TEST_STMT, SETUP_METHOD, "call", SETUP_FILE, 2, "the test (called by pytest)")
        w["cfg"].row(SETUP_STMT, SETUP_TEST_STMT, "normal")
        cfg_edges.add((SETUP_STMT, SETUP_TEST_STMT))
    # traces
    entries = []
    tcount = 0
    nfail = npass = 0
    prefixed = []
    for t in tests:
        if t["outcome"] == "fail":
            nfail += 1
        else:
            npass += 1
        # (the rows of a test are read only when something uses them: its trace is written,
        # or they decide its setup segments)
        need_rows = heap_on and (setup is not None or (id(t) in selected and t.get("rec")))
        heap_rows = st.spill.get(t.get("heap")) if need_rows and st.spill is not None else []
        segs = setup.for_test(t, heap_rows) if setup is not None else []
        cov = set(t.get("coverage", ()))
        edges = set(t.get("edges", ()))
        for g in segs:
            # the module bodies run before the test are part of what it executed
            cov |= g.coverage
            edges |= g.edges
        for nid in sorted(cov):
            if nid in known:
                w["coverage"].row(t["id"], nid)
        for (a, b) in sorted(edges):
            if (a, b) in cfg_edges:
                w["edge_coverage"].row(t["id"], a, b)
        trace_id = None
        if id(t) in selected and t.get("rec"):
            segs, off, (steps_node, steps_frame, frames, branch, binds, p_heap) = _trace_rows(
                st, setup, segs, t, st.spill.get(t["rec"]))
            t["setup_segments"] = [g.k for g in segs]
            if off:
                if heap_on:
                    heap_rows = p_heap + [(i + off, v, o, m) for (i, v, o, m) in heap_rows]
                if t.get("failure_step") is not None:
                    t["failure_step"] += off
                t["setup_steps"] = off
                if segs:
                    prefixed.append(off)
            tcount += 1
            trace_id = f"t{tcount}"
            _write_trace(w, trace_id, steps_node, steps_frame, frames, branch)
            n = len(steps_node)
            for (cs, fid, formal, actual) in binds:
                w["bind"].row(trace_id, cs, f"f{fid}", formal, actual)
            if heap_on:
                _heap.write(w["heap"].fh, trace_id, heap_rows, n)
        entries.append((t, trace_id))
    st.setup_summary = _setup_summary(st, setup, prefixed)
    for x in w.values():
        x.close()
    if test_code:
        shown = "; ".join(f"{sf.relpath_for(rp, st.src)} ({why})" for rp, why in test_code[:8])
        st.reg.warnings.insert(0, f"{len(test_code)} file(s) under SRC treated as test code, not suspects: "
                               + shown + (" ..." if len(test_code) > 8 else ""))
    warnings = []
    if st.plain_error:
        warnings.append(f"the plain run (the test command without tracing, to measure each test) gave no "
                        f"results: {st.plain_error}; traced without it (time limit {st.timeout:g} s for every test, "
                        f"tests whose outcome tracing changes are not detected)")
    warnings += plain_warnings
    timeouts = [t for t in tests if t.get("failure_kind") == "timeout" and t.get("plain_outcome") != "fail"]
    hung = [t for t in timeouts if st.hangs(t["id"])]
    if hung:
        timeouts = [t for t in timeouts if t not in hung]
        warnings.append(f"{len(hung)} test(s) hang: the plain run stopped them at its limit, so they were traced "
                        f"for {HANG_STEPS} steps only (at most {_limits(st, hung)}; their flip re-runs for as many "
                        f"steps): " + _ids(hung, 5))
    if timeouts:
        shown = _limits(st, timeouts)
        warnings.append(f"{len(timeouts)} test(s) stopped after {shown} under tracing (tracing is "
                        f"much slower than a plain run; raise the timeout if they do not hang): "
                        + _ids(timeouts, 5))
    untraced = _untraced(tests)
    if untraced:
        warnings.append(_untraced_warning(untraced))
    truncated = [t["id"] for t in tests if t.get("truncated")]
    if truncated:
        warnings.append(f"{len(truncated)} trace(s) truncated at the step cap ({st.step_cap} steps): "
                        + ", ".join(truncated[:5]) + (" ..." if len(truncated) > 5 else ""))
    if setup is not None and setup.truncated:
        warnings.append(f"the import-time code (setup recording) was cut at {len(st.setup.steps_node)} "
                        f"steps (PROSECUTOR_SETUP_CAP): the module bodies after that are in no trace")
    _write_manifest(st, entries, warnings)
    return {"tests": len(tests), "failing": nfail, "passing": npass, "traced": tcount,
            "untraced": len(untraced), "collected": st.collected, "warnings": warnings + (st.reg.warnings + st.tracer.errors)[:200]}


def _limits(st, tests):
    """The tracer's time limits of `tests`, for a warning: "5 s" or "5-60 s"."""
    limits = sorted({t.get("timeout_s", st.timeout) for t in tests})
    return f"{limits[0]:g} s" if len(limits) == 1 else f"{limits[0]:g}-{limits[-1]:g} s"


def _setup_summary(st, setup, prefixed):
    """[notes] lines about the setup recording."""
    rec = st.setup
    if rec is None:
        return ["setup_steps = 0", "setup_modules = 0"]
    lines = [f"setup_steps = {len(rec.steps_node)}",
             f"setup_steps_kept = {setup.steps if setup is not None else 0}",
             f"setup_modules = {setup.modules if setup is not None else 0}",
             f"setup_segments = {len(setup.segments) if setup is not None else 0}",
             f"setup_scope = {_q(SETUP_SCOPE)}",
             f"setup_truncated = {'true' if rec.truncated else 'false'}"]
    if prefixed:
        lines.append(f"setup_prefix_steps_max = {max(prefixed)}")
        lines.append(f"setup_prefix_steps_mean = {sum(prefixed) / len(prefixed):.1f}")
    return lines


def _plain_notes(st):
    """[notes] lines about the plain pre-run."""
    lines = [f"plain_run = {'true' if st.plain is not None else 'false'}"]
    if st.plain_fork:
        lines.append("plain_run_forked = true")
    wall = os.environ.get("PROSECUTOR_PLAIN_WALL") if st.plain_wall is None else st.plain_wall
    if st.plain is not None and wall:
        try:
            lines.append(f"plain_run_s = {float(wall):.3f}")
        except ValueError:
            pass
    if st.plain_error:
        lines.append(f"plain_run_error = {_q(st.plain_error)}")
    if st.plain is not None:
        lines.append(f"plain_timeout_factor = {st.plain_factor:g}")
        lines.append("tracing_changed = [" + ", ".join(_q(x) for x in st.tracing_changed) + "]")
        if st.tracing_changed_kept:
            lines.append("tracing_changed_kept = true")
    return lines


def _untraced(tests):
    return [t["id"] for t in tests if t.get("untraced")]


def _untraced_warning(ids):
    return (f"{len(ids)} test(s) ran but were not traced (their test function was never entered by "
            f"traced code; no trace, no coverage): " + ", ".join(ids[:10]) + (" ..." if len(ids) > 10 else ""))


def _q(s):
    return json.dumps(str(s), ensure_ascii=False)


def _pkg_parent():
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# The variables of the traced run that a flip re-run must see exactly as they were (the rest of
# the environment is inherited from whoever runs the experiments; nothing else is recorded, so
# no secret ends up in a dump).  The tracer's own additions are removed here and added again by
# flip.py: its package directory in front of PYTHONPATH, `-p prosecutor_tracer.plugin` in
# PYTEST_ADDOPTS.
RECORDED_ENV = ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTHONHASHSEED", "PYTHONSAFEPATH", "PYTHONNOUSERSITE",
                "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")


def user_environment(environ=None):
    """{name: value or None} of RECORDED_ENV in the traced run, without the tracer's additions
    (None: the variable was not set)."""
    environ = os.environ if environ is None else environ
    out = {k: environ.get(k) for k in RECORDED_ENV}
    pp = out["PYTHONPATH"]
    if pp is not None:
        mine = os.path.realpath(_pkg_parent())
        parts = pp.split(os.pathsep)
        for i, p in enumerate(parts):
            if p and os.path.realpath(p) == mine:
                del parts[i]
                break
        out["PYTHONPATH"] = os.pathsep.join(parts) if parts else None
    ao = out["PYTEST_ADDOPTS"]
    if ao is not None:
        ao = ao.replace("-p prosecutor_tracer.plugin", "").strip()
        out["PYTEST_ADDOPTS"] = " ".join(ao.split()) if ao else None
    return out


def _rerun_tests(st, entries):
    """rerun.json "tests": the fingerprint of each parametrized failing test, and "timeout" for a
    failing test whose tracer limit was raised from its plain duration (the flip re-run uses it)."""
    out = {}
    for (t, _) in entries:
        m = dict(t["match"]) if t.get("match") else {}
        if t["outcome"] == "fail" and st.timeout > 0 and t.get("timeout_s", st.timeout) > st.timeout:
            m["timeout"] = t["timeout_s"]
        if t["outcome"] == "fail" and st.hangs(t["id"]) and t.get("steps"):
            m["steps"] = t["steps"]       # flip re-runs stop past these (State.step_limit_for)
        if t["outcome"] == "fail" and t.get("setup_segments"):
            # the setup segments its trace begins with: a flip re-run numbers occurrences so
            m["setup_segments"] = t["setup_segments"]
        if m:
            out[t["id"]] = m
    return out


def _rerun_config(st, tests):
    """rerun.json: how a re-run starts the test session (flip.py reads it), and `tests`."""
    argv = None
    raw = os.environ.get("PROSECUTOR_COMMAND")
    if raw:
        try:
            argv = [str(a) for a in json.loads(raw)]
        except ValueError:
            argv = None
    if not argv:
        argv = [sys.executable, "-m", "pytest"] + [str(a) for a in st.config.invocation_params.args]
    return {"src": st.src, "cwd": st.cwd, "command": argv, "timeout": st.timeout,
            "step_cap": st.step_cap, "test_globs": st.reg.test_globs, "pythonpath": _pkg_parent(),
            "env": user_environment(), "tests": tests}


def _serve_argv():
    """The warm runner's command (the manifest's [rerun] serve; placeholders {jobs}, {dump})."""
    return [sys.executable, "-m", "prosecutor_tracer.flip", "--serve", "--jobs", "{jobs}",
            "--config", "{dump}/rerun.json"]


def _serve_env(user_env):
    """The environment the manifest's [rerun] section gives the re-runs and the warm runner."""
    return {"PYTHONHASHSEED": user_env.get("PYTHONHASHSEED") or "0", "PYTHONPATH": _pkg_parent()}


def _write_json(path, data):
    """Writes `data` to `path` whole (a reader polling for the file never sees half of it)."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
    os.replace(tmp, path)


# The warm runner started while the traced run runs (PROSECUTOR_SERVE_PREVIEW=1, set by
# `localize` when it will run experiments; for the plain run before the traced run when there is
# one, which then writes it from _preview_state at its session's end): at configure the traced run writes rerun.json
# without its per-test entries, then SERVE_PREVIEW with the serve command, its cwd and
# environment, as the manifest will give them; the driver starts the warm runner from it, whose
# session imports and collects alongside the traced run. rerun.json's final version (with
# "tests") is written at the end, before the first request: the warm runner reads "tests" then.
SERVE_PREVIEW = ".prosecutor-serve.json"


def _preview_state(config, cwd):
    """What _rerun_config reads of the traced run's State, as the plain run before it knows it
    (the same environment: PROSECUTOR_SRC, _TEST_TIMEOUT, _STEP_CAP, _TEST_GLOBS, _COMMAND;
    `cwd`: the plain run's at its start, since a test may have left another one),
    so that the warm runner can start as the plain run ends (the driver sets
    PROSECUTOR_SERVE_PREVIEW for the plain run when there is one before the traced run)."""
    return types.SimpleNamespace(
        src=os.path.realpath(os.environ.get("PROSECUTOR_SRC", cwd)), cwd=cwd,
        out=os.environ.get("PROSECUTOR_OUT"), timeout=_env_float("PROSECUTOR_TEST_TIMEOUT", 10.0),
        step_cap=_env_int("PROSECUTOR_STEP_CAP", 2_000_000), reg=types.SimpleNamespace(test_globs=_test_globs()),
        config=config)


def _write_serve_preview(st):
    try:
        cfg = _rerun_config(st, {})
        _write_json(os.path.abspath(os.path.join(st.out, "rerun.json")), cfg)
        _write_json(os.path.join(st.out, SERVE_PREVIEW),
                    {"serve": _serve_argv(), "cwd": st.cwd, "env": _serve_env(cfg["env"])})
    except (OSError, TypeError, ValueError):
        pass        # no early start: the warm runner starts after the traced run, as without


def _write_manifest(st, entries, warnings):
    rerun_cfg = _rerun_config(st, _rerun_tests(st, entries))
    user_env = rerun_cfg["env"]
    _write_json(os.path.abspath(os.path.join(st.out, "rerun.json")), rerun_cfg)
    # An experiment re-runs one test traced (flip mode traces it as here, without heap recording),
    # in a new process that starts pytest, imports through the instrumenting hook and collects
    # again: its budget is the test's traced duration (not its plain one, which is shorter by
    # the tracing factor) plus this run's measured start-up (plugin import to the first test).
    durations = [t.get("duration_ms", 0) for (t, _) in entries if t["outcome"] == "fail"]
    # (less the plain pass forked before the first test, which no flip re-run pays)
    startup_ms = int(max(0.0, (st.first_test_at or _T_IMPORT) - _T_IMPORT - st.forked_s) * 1000)
    timeout_ms = int(max([10_000] + [d * 10 + 5_000 + 2 * startup_ms for d in durations]))
    lines = [
        'format = "prosecutor-dump"',
        "version = 1",
        "",
        "[frontend]",
        'name = "python"',
        f"version = {_q(VERSION)}",
        f'language = {_q("python " + sys.version.split()[0])}',
        "",
        "[rerun]",
        "command = [" + ", ".join(_q(a) for a in [sys.executable, "-m", "prosecutor_tracer.flip", "--test", "{test}",
                                                  "--stmt", "{stmt}", "--occurrence", "{occurrence}",
                                                  "--out", "{out}", "--config", "{dump}/rerun.json"]) + "]",
        # the warm runner: one session answers every experiment (flip.py --serve)
        "serve = [" + ", ".join(_q(a) for a in _serve_argv()) + "]",
        f"cwd = {_q(st.cwd)}",
        f"timeout_ms = {timeout_ms}",
        "env = { " + ", ".join(f"{k} = {_q(v)}" for k, v in _serve_env(user_env).items()) + " }",
        # app files imported before the tracer: their branches cannot be flipped by a re-run
        "not_flippable = [" + ", ".join(_q(f) for f in st.reg.uninstrumented) + "]",
        "",
        "[notes]",
        f"src = {_q(st.src)}",
        f"step_cap = {st.step_cap}",
        f"test_timeout_s = {st.timeout}",
        f"startup_ms = {startup_ms}",
    ] + getattr(st, "setup_summary", []) + _plain_notes(st) + [
        "truncated_traces = [" + ", ".join(_q(t["id"]) for (t, tid) in entries if t.get("truncated")) + "]",
        "untraced_tests = [" + ", ".join(_q(x) for x in _untraced([t for (t, _) in entries])) + "]",
        # tests traced for coverage only, chosen before they ran (_preselect)
        f"coverage_only_tests = {sum(1 for (t, _) in entries if t.get('coverage_only'))}",
        # truncated traces whose tracing stopped once no app code was left to cover (Tracer._detach)
        f"detached_traces = {sum(1 for (t, _) in entries if t.get('detached'))}",
        "warnings = [" + ", ".join(_q(x) for x in warnings + (st.reg.warnings + st.tracer.errors)[:50]) + "]",
        "",
    ]
    for (t, tid) in entries:
        lines.append("[[test]]")
        lines.append(f"id = {_q(t['id'])}")
        if tid:
            lines.append(f"trace = {_q(tid)}")
        lines.append(f"outcome = {_q(t['outcome'])}")
        if tid and t["outcome"] == "fail" and t.get("failure_step") is not None:
            lines.append(f"failure_step = {t['failure_step']}")
        if t.get("failure_kind") and t["outcome"] == "fail":
            lines.append(f"failure_kind = {_q(t['failure_kind'])}")
        if t.get("failure") and t["outcome"] == "fail":
            lines.append(f"failure = {_q(t['failure'])}")
        if t.get("duration_ms") is not None:
            lines.append(f"duration_ms = {int(t['duration_ms'])}")
        if tid and t.get("setup_steps"):
            lines.append(f"setup_steps = {t['setup_steps']}")
        if t.get("plain_outcome"):
            lines.append(f"plain_outcome = {_q(t['plain_outcome'])}")
        if t.get("coverage_only"):
            lines.append("coverage_only = true")
        if t.get("detached"):
            lines.append(f"# note: trace truncated at the step cap ({st.step_cap} steps); tracing stopped "
                         "where no app code had anything left to cover: app coverage is complete")
        elif t.get("truncated"):
            lines.append(f"# note: trace truncated at the step cap ({st.step_cap} steps); coverage is complete")
        lines.append("")
    with open(os.path.join(st.out, "manifest.toml"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))


_state = _early_setup()
