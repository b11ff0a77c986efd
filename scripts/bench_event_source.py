#!/usr/bin/env python3
"""The cost of the Python event source alone (docs/performance.md, "The event source itself").

usage: PYTHON scripts/bench_event_source.py    (run it with each interpreter to compare)

Runs a loop of 1,000,000 iterations with a branch, plus fib(22), best of 5, plainly, under
`sys.settrace` with a line callback, and (Python >= 3.12) under `sys.monitoring` LINE + PY_START
events and LINE events that return DISABLE. Every callback only adds its location to a set.
Prints each time as a ratio to the plain run of the same interpreter.
"""
import sys
import time


def work(n):
    s = 0
    for i in range(n):
        if i % 3 == 0:
            s += i
        else:
            s -= 1
    return s
def fib(n):
    return n if n < 2 else fib(n-1) + fib(n-2)
def run():
    t = time.perf_counter(); work(1_000_000); fib(22); return time.perf_counter() - t
def best(f, k=5):
    return min(f() for _ in range(k))
plain = best(run)
cov = set()
def local(frame, event, arg):
    if event == "line":
        cov.add((frame.f_code, frame.f_lasti))
    return local
def glob(frame, event, arg):
    return local
def st():
    sys.settrace(glob)
    try: return run()
    finally: sys.settrace(None)
settr = best(st)
res = [plain, settr]
if hasattr(sys, "monitoring"):
    m = sys.monitoring
    T = 3
    m.use_tool_id(T, "bench")
    def line(code, ln):
        cov.add((code, ln))
    def pystart(code, off):
        pass
    m.register_callback(T, m.events.LINE, line)
    m.register_callback(T, m.events.PY_START, pystart)
    def mon(events):
        def f():
            m.set_events(T, events)
            try: return run()
            finally: m.set_events(T, 0)
        return f
    res.append(best(mon(m.events.LINE | m.events.PY_START)))
    def line_dis(code, ln):
        cov.add((code, ln)); return m.DISABLE
    m.register_callback(T, m.events.LINE, line_dis)
    def f2():
        m.restart_events()
        m.set_events(T, m.events.LINE)
        try: return run()
        finally: m.set_events(T, 0)
    res.append(best(f2))
print(sys.version.split()[0], "plain %.3f settrace %.2fx" % (plain, settr/plain), *("monitoring-line %.2fx" % (r/plain) for r in res[2:3]), *("monitoring-disable %.2fx" % (r/plain) for r in res[3:4]))
