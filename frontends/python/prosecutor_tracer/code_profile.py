"""Which functions each test runs, for the plain pre-run (docs/frontend-python.md "Tracing
model", coverage-only tracing): the traced run chooses from it, before the tests run, the
passing tests it traces in full.

The plain run must stay plain: no Python function of ours may run inside a test where it could
change what the test does (its recursion depth above all). Up to Python 3.11 `cProfile` (C,
`builtins=False`) counts every call of a Python function. From 3.12 `cProfile` is a
`sys.monitoring` tool that a test enabling its own profiler would collide with ("Another
profiling tool is already active"): there a `sys.monitoring` tool of our own (a free tool id)
sees each function's first start in the test and then disables that event, so each function
costs one Python callback per test, at the depth of its first call; it counts functions, not
calls. (Each test begins with `sys.monitoring.restart_events()`: a coverage tool of the user's
that disabled its events sees them again, and disables them again.)

Either way only what the tracer would trace counts: code run by the test's root frames (the test
function, a unittest `setUp` / `tearDown`; `roots`, set before each test; empty for a generator or
coroutine test function, whose trace also holds what its driver runs), not the harness
around them (tornado's `gen_test` runs the test function inside `IOLoop.run_sync`, which is app
code), and not the code that only renders an assertion's failure report (tracer.REPORT_MODULES,
REPORT_FUNCTIONS: a `__repr__` pytest's saferepr calls is not among a traced test's methods).
"""

import os
import sys
import time

from .tracer import REPORT_FUNCTIONS, REPORT_MODULES


class ReportCode:
    """Tells code that renders failure reports (the tracer's report modules and functions; their
    files are looked up at the first question, when pytest has imported them)."""

    def __init__(self):
        self.dirs = None
        self.funcs = None
        self.known = {}

    def _load(self):
        dirs, funcs = [], set()
        for m in REPORT_MODULES:
            for d in getattr(sys.modules.get(m), "__path__", None) or ():
                dirs.append(os.path.realpath(d) + os.sep)
        for m, names in REPORT_FUNCTIONS.items():
            f = getattr(sys.modules.get(m), "__file__", None)
            if f:
                funcs.update((os.path.realpath(f), n) for n in names)
        self.dirs = tuple(dirs)
        self.funcs = funcs

    def __call__(self, co):
        r = self.known.get(co)
        if r is None:
            if self.dirs is None:
                self._load()
            rp = os.path.realpath(co.co_filename)
            r = self.known[co] = rp.startswith(self.dirs) or (rp, co.co_name) in self.funcs
        return r


class CallProfile:
    """Python <= 3.11: cProfile. `take()`: {code object: calls} of the last enable..disable,
    of the functions the roots call, directly or not, without report code (a function all of
    whose callers in the profile are report code is report code too; the profile's call graph
    has no stacks, so a function called by a report and by other code is kept, and so is one
    called both by a root and above it)."""

    def __init__(self, report):
        import cProfile
        call_cost()                # measured now: not while a test's profiler is enabled
        self.prof = cProfile.Profile(builtins=False)
        self.report = report
        self.roots = set()         # code objects of the test's root frames (empty: unknown)

    def enable(self):
        self.prof.enable()

    def disable(self):
        self.prof.disable()

    def overhead(self):
        """An upper estimate of what the profiler has cost the running test so far, in seconds:
        its calls so far times the measured cost of a profiled call (`call_cost`). The test
        stays profiled."""
        calls = sum(e.callcount for e in self.prof.getstats())
        return calls * call_cost()

    def take(self):
        try:
            entries = self.prof.getstats()
        finally:
            self.prof.clear()
        report = set()
        callers = {}
        for e in entries:
            co = e.code
            if isinstance(co, str):
                continue
            if self.report(co):
                report.add(co)
            for sub in e.calls or ():
                if not isinstance(sub.code, str):
                    callers.setdefault(sub.code, set()).add(co)
        changed = bool(report)
        while changed:
            changed = False
            for co, by in callers.items():
                if co not in report and by <= report:
                    report.add(co)
                    changed = True
        keep = None
        if self.roots:
            # what the roots call, directly or not (the profile's call graph)
            callees = {}
            for e in entries:
                if not isinstance(e.code, str):
                    callees[e.code] = [sub.code for sub in e.calls or () if not isinstance(sub.code, str)]
            keep = set(co for co in self.roots if co in callees)
            if not keep:
                keep = None     # no root ran (or it is not the code that ran): every function
            todo = list(keep or ())
            while todo:
                for c in callees.get(todo.pop(), ()):
                    if c not in keep and c not in report:
                        keep.add(c)
                        todo.append(c)
        return {e.code: e.callcount for e in entries
                if not isinstance(e.code, str) and e.code not in report and (keep is None or e.code in keep)}


_CALL_COST = None


def call_cost():
    """Seconds cProfile adds to one Python call and return, measured once (best of 3 runs of
    10,000 calls with and without a profiler, about 10 ms in all, when `CallProfile` is made:
    enabling a second profiler while a test's is enabled would replace it) and doubled: an upper
    estimate, so that a test the profiler slowed past the plain run's limit is not taken for a
    hang (plugin.py `_plain_alarm`)."""
    global _CALL_COST
    if _CALL_COST is None:
        import cProfile

        def f():
            return None

        def loop():
            t = time.perf_counter()
            for _ in range(10_000):
                f()
            return time.perf_counter() - t

        plain = min(loop() for _ in range(3))
        best = None
        for _ in range(3):
            p = cProfile.Profile(builtins=False)
            p.enable()
            try:
                t = loop()
            finally:
                p.disable()
            best = t if best is None else min(best, t)
        _CALL_COST = 2 * max(best - plain, 0.0) / 10_000
    return _CALL_COST


class StartProfile:
    """Python >= 3.12: a sys.monitoring tool of our own. `take()`: {code object: 1} for each
    function started between enable and disable below a root frame and outside a failure report
    (its frame's callers include a root and no report code; a function first started elsewhere
    is watched until it starts there)."""

    def __init__(self, report):
        mon = sys.monitoring
        # (0-2 are the debugger's, coverage's and the profiler's, 5 the optimizer's)
        free = [i for i in (4, 3) if mon.get_tool(i) is None]
        if not free:
            raise RuntimeError("no free sys.monitoring tool id")
        self.tool = free[0]
        mon.use_tool_id(self.tool, "prosecutor plain run")
        self.report = report
        self.seen = {}
        self.roots = set()         # code objects of the test's root frames (empty: unknown)
        getframe = sys._getframe
        disable = mon.DISABLE
        seen = self.seen
        above = self.above = {}    # started, but not below a root (the fallback of take())
        prof = self

        def start(code, offset):
            roots = prof.roots
            under = not roots
            f = getframe(1)
            while f is not None:
                co = f.f_code
                if report(co):
                    return None
                if co in roots:
                    under = True
                f = f.f_back
            if not under:
                above[code] = 1
                return None     # (watched until it starts below a root)
            seen[code] = 1
            return disable

        mon.register_callback(self.tool, mon.events.PY_START, start)

    def enable(self):
        self.seen.clear()
        self.above.clear()
        sys.monitoring.restart_events()
        sys.monitoring.set_events(self.tool, sys.monitoring.events.PY_START)

    def disable(self):
        sys.monitoring.set_events(self.tool, 0)

    def overhead(self):
        """As `CallProfile.overhead`; this tool costs a test one callback per function: 0."""
        return 0.0

    def take(self):
        # (no function started below a root: no root ran, or it is not the code that ran)
        out = dict(self.seen) if self.seen or not self.roots else dict(self.above)
        self.seen.clear()
        self.above.clear()
        return out


def profiler():
    """The profiler for this Python, or None when none can be had."""
    try:
        report = ReportCode()
        return StartProfile(report) if sys.version_info >= (3, 12) else CallProfile(report)
    except Exception:
        return None
