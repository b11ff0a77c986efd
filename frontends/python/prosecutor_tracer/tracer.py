"""Run-time tracing of one test with ``sys.settrace``.

Model (see docs/frontend-python.md):

* the root frame is the test function (fixtures are not traced); a unittest TestCase's
  ``setUp`` and ``tearDown`` run around it are root frames too (the trace writer puts them and
  the test function under one synthetic root, in execution order);
* code of app files (under SRC) and of test files is traced; every other frame is opaque: it
  gets no frame, but traced code it calls back into is traced, with the call step being the
  current step of the nearest traced frame on the stack;
* every activation of a traced code object is a frame, and so is every resumption of a
  generator / coroutine (a resumption is a new frame opened by the step that resumed it); a
  local trace function only ever records for the activation it was made for (CPython keeps a
  frame's old ``f_trace`` when the ``call`` event of a resumption returns None);
* a test function that is a generator / coroutine (driven by an event loop) runs until its
  last activation returns: while it is suspended, it stays at the bottom of the stack and what
  the loop runs is called from its suspension step; resumed with nothing traced above it, it
  continues as the same frame;
* a step is recorded when execution enters a node different from the frame's current node, or
  jumps backwards within the same node (a loop of one statement);
* branch outcomes come from the instrumentation wrappers (app code) or are inferred from the
  next step of the same frame (test code, uninstrumented code).
"""

from __future__ import annotations

import dis
import inspect
import itertools
import os
import sys
import threading

try:
    from . import heap as _heap
except ImportError:  # a driver whose embedded package lacks heap.py: no heap facts (name-only model)
    _heap = None
try:
    from . import values as _values
except ImportError:  # (as heap.py)
    _values = None
from . import static_facts as sf

_MISSING = object()
# opcodes a frame leaves by without an exception (a `return`, or a generator's `yield`); a
# frame ending elsewhere ended by an exception (Tracer._watch_throw)
_NORMAL_EXIT_OPS = frozenset(dis.opmap[n] for n in (
    "RETURN_VALUE", "RETURN_CONST", "YIELD_VALUE", "RETURN_GENERATOR", "SEND",
    "YIELD_FROM", "GET_AWAITABLE") if n in dis.opmap)

# code flags of generators, coroutines and async generators (inspect.CO_*)
_GEN_FLAGS = 0x20 | 0x80 | 0x200
_YIELD_VALUE = dis.opmap["YIELD_VALUE"]
# Where f_lasti is when a frame suspends: at the YIELD_VALUE (3.11, 3.12); at the RESUME after
# it (3.13+); on 3.9 / 3.10 at the YIELD_VALUE of a `yield`, or one unit before the YIELD_FROM
# of an `await` / `yield from` (which re-runs when the frame resumes).
_YIELD_FROM = dis.opmap.get("YIELD_FROM")
_RESUME = dis.opmap.get("RESUME")
_AFTER_YIELD = sys.version_info >= (3, 13)
# Opcode events (two statements on one line) under the `sys.monitoring` based settrace of 3.12+:
# see Tracer.start and Tracer._call.
_OPCODE_EVENTS_AT_SETTRACE = sys.version_info[:2] == (3, 12)
_OPCODES_NEED_F_TRACE = sys.version_info >= (3, 13)
# generators, coroutines, async generators: one frame, many activations
_RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def _at_yield(code, i):
    """Is the instruction at `f_lasti` = `i` a suspension point (see above)?"""
    if not 0 <= i < len(code):
        return False
    if _AFTER_YIELD:
        return code[i] == _RESUME and i >= 2 and code[i - 2] == _YIELD_VALUE
    if code[i] == _YIELD_VALUE:
        return True
    return _YIELD_FROM is not None and i + 2 < len(code) and code[i + 2] == _YIELD_FROM


def _suspends(frame, rec):
    """Is the `return` event of `frame` a suspension (yield / await) rather than the end of the
    activation?  CPython reports both as `return`; a suspension stops at a YIELD_VALUE.  An
    exception thrown in at a yield (``gen.throw``) and not caught also leaves from there: an
    exception seen at the very instruction the frame leaves from (`rec.exc`) is an end.  (An
    exception seen elsewhere since the last step was handled: the StopIteration of an `await`
    that completed, before another `await` of the same statement suspends.)"""
    co = frame.f_code
    if not co.co_flags & _GEN_FLAGS:
        return False
    try:
        code = co.co_code
        i = frame.f_lasti
        return _at_yield(code, i) and i != rec.exc
    except Exception:
        return False


def _drop_comprehension_heads(co, pm, m):
    """Python 3.12+ inlines a list / set / dict comprehension into the code of its statement
    (PEP 709), and each of its iterations jumps back, which is a `line` event of the statement:
    a step per item, where 3.11 ran the comprehension in a code object of its own (opaque, no
    step).  A backward jump from a node to itself that is no loop head (a `for` / `while` of one
    line jumps back to its own header: a new step, as before) is such a loop: its target and
    the jump itself (3.13 reports the event at the jump) are left out of the position map, so
    those events begin no step."""
    heads = m.facts.loop_heads
    try:
        for ins in dis.get_instructions(co):
            if ins.opcode in sf._BACKWARD_JUMPS:
                src = pm.get(ins.offset)
                tgt = ins.argval
                if src is not None and pm.get(tgt) == src and src not in heads:
                    del pm[tgt]
                    pm.pop(ins.offset, None)
    except Exception:
        pass


# Code that only renders the report of a failed assertion: app / test code it calls (directly
# or through other opaque frames) is not program behaviour and is not traced.  Whole modules
# (difflib, pprint, reprlib are not among them: app code may use them for real; they are
# reporting only when called from the code below) ...
REPORT_MODULES = ("_pytest.assertion", "_pytest._io")
# ... single functions ...
REPORT_FUNCTIONS = {
    "unittest.util": {"safe_repr", "_common_shorten_repr", "_shorten", "strclass"},
    "unittest.case": {"_formatMessage", "_truncateMessage"},
}
# ... and, in unittest.case, the part of an assertion method after its comparison:
# {method: source of the `if` test deciding the outcome}; everything after that test is
# message building (assertSequenceEqual compares the items again to find the first difference).
REPORT_AFTER = {
    "assertSequenceEqual": "seq1 == seq2",
    "assertSetEqual": "not (difference1 or difference2)",
    "assertCountEqual": "differences",
    "assertDictEqual": "d1 != d2",
    "assertMultiLineEqual": "first != second",
    "_baseAssertEqual": "not first == second",
}


def _report_regions(path):
    """Line ranges of unittest.case that build messages after the comparison (REPORT_AFTER)."""
    import ast
    out = []
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except Exception:
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in REPORT_AFTER:
            for sub in ast.walk(node):
                if isinstance(sub, ast.If) and ast.unparse(sub.test) == REPORT_AFTER[node.name]:
                    out.append((sub.test.end_lineno + 1, node.end_lineno))
                    break
    return out


def code_key(realpath, co):
    """A code object's key as the plain run's profile writes it: "REALPATH:FIRSTLINE:QUALNAME:
    NAME" (the qualified name is "" where the code object has none, Python < 3.11)."""
    return f"{realpath}:{co.co_firstlineno}:{getattr(co, 'co_qualname', '')}:{co.co_name}"


def exc_signature(exc, tb=None):
    """(type, code, instruction) of the innermost traceback entry of an exception: the same while
    it propagates (entries are added at the head) or is re-raised by a bare `raise`."""
    tb = tb if tb is not None else getattr(exc, "__traceback__", None)
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return (type(exc), None, -1)
    return (type(exc), tb.tb_frame.f_code, tb.tb_lasti)


class TestTimeout(BaseException):
    """Raised into a test that ran past its time limit (a BaseException so that ``except
    Exception`` in the code under test does not swallow it)."""


class FrameRec:
    __slots__ = ("fid", "method", "pyframe", "call_step", "last_step", "node", "prev", "off",
                 "pending", "posmap", "binds", "exc", "chained",
                 "vals")       # values.Recorder: the encodings of the previous step (set by it)

    def __init__(self, method, pyframe, call_step, posmap):
        self.fid = None
        self.method = method
        self.pyframe = pyframe
        self.call_step = call_step
        self.last_step = None
        self.node = None
        self.prev = None
        self.off = -1
        self.pending = False
        self.posmap = posmap
        self.binds = None
        self.exc = -1             # instruction offset of the last exception seen since the last step
        # the current step was begun by a condition wrapper (the node after a short-circuit
        # operand: the next operand or the statement deciding the condition), not by an
        # instruction: instructions of the statement's earlier operands still to run (the
        # operand's jump) belong to that operand and begin no step
        self.chained = False


class _NoCount(dict):
    """Occurrence counts of setup segments a flip re-run runs but does not count: never equal
    to a requested occurrence."""

    def get(self, k, d=None):
        return -1


class TestRecord:
    """Everything recorded for one test."""

    def __init__(self, test_id, record_steps):
        self.test_id = test_id
        self.record_steps = record_steps
        self.steps_node = []
        self.steps_frame = []
        self.frames = []          # (fid, method id, call_step or None)
        self.branch = {}          # step index -> 0/1
        self.binds = []           # (call_step, fid, formal, actual)
        self.coverage = set()
        self.edges = set()
        self.methods = set()
        self.occ = {}
        self.truncated = False
        self.origins = {}         # id(exception) -> (step, exc_signature(exception))
        self.nsteps = 0
        self.root_seen = False
        self.extra_roots = False  # a unittest setUp / tearDown was a root frame
        self.timed_out = False
        self.timeout_step = None
        self.cover_only = False   # traced for coverage only (Tracer.start)
        self.detached = False     # tracing stopped past the cap: nothing left to cover (_detach)


class Registry:
    """Which files are traced and their static facts."""

    def __init__(self, src_root, cwd):
        self.src_root = os.path.realpath(src_root)
        self.cwd = os.path.realpath(cwd)
        self.test_files = set()
        self.test_dirs = []       # test directories under SRC (tests/ holding collected tests)
        self.unparsable = set()   # files under SRC this Python cannot compile: never app code
        self.test_globs = []      # --exclude: globs (relative to SRC) of files that are test code
        self.exclude = []         # directories never traced (the dump directory)
        self.files = {}           # real path -> FileFacts or None
        self.warnings = []
        self.uninstrumented = []  # app files analysed while running (imported before the tracer)
        self.node_index = {}
        self.branch_ids = set()
        self.eager = {}
        self.stmt_of = {}         # node id -> its statement (a statement -> itself)
        self._real = {}

    def real(self, path):
        r = self._real.get(path)
        if r is None:
            r = os.path.realpath(path) if path and not path.startswith("<") else ""
            self._real[path] = r
        return r

    def is_app_path(self, rp):
        if not rp.endswith(".py"):
            return False
        if not (rp == self.src_root or rp.startswith(self.src_root + os.sep)):
            return False
        if rp in self.unparsable:
            return False
        for ex in self.exclude:
            if rp.startswith(ex + os.sep):
                return False
        rel = os.path.relpath(rp, self.src_root)
        parts = rel.split(os.sep)
        for p in parts[:-1]:
            if p.startswith(".") or p in ("site-packages", "__pycache__", "node_modules") or p.endswith(".egg-info"):
                return False
        return True

    def role_of(self, rp):
        if rp in self.test_files:
            return "test"
        if self.is_app_path(rp):
            return "test" if self.test_reason(rp) else "app"
        return None

    def test_reason(self, rp):
        """Why a file under SRC is test code although pytest did not collect tests from it:
        it lies in a test directory, or it matches an ``--exclude`` glob (None: it does not)."""
        for d in self.test_dirs:
            if rp.startswith(d + os.sep):
                return "in the test directory " + sf.relpath_for(d, self.src_root)
        if self.test_globs:
            import fnmatch
            rel = os.path.relpath(rp, self.src_root).replace(os.sep, "/")
            for g in self.test_globs:
                if fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(os.path.basename(rp), g):
                    return "--exclude " + g
        return None

    def add_test_dirs(self, collected):
        """The directories named test/tests/testing under SRC that hold collected test files are
        test directories: their helper modules (fixtures, fakes, assertions) are test code.
        Returns the files already analysed as app code that this makes test code."""
        names = ("test", "tests", "testing")
        for rp in collected:
            if not (rp.startswith(self.src_root + os.sep)):
                continue
            parts = os.path.relpath(rp, self.src_root).split(os.sep)[:-1]
            for i in range(len(parts), 0, -1):
                if parts[i - 1] in names:
                    d = os.path.join(self.src_root, *parts[:i])
                    if d not in self.test_dirs:
                        self.test_dirs.append(d)
                    break
        moved = [rp for rp, f in list(self.files.items())
                 if rp and rp not in self.test_files and (f is None or f.role != "test") and self.test_reason(rp)]
        for rp in moved:
            self.mark_test_file(rp)
        return moved

    def mark_test_file(self, rp):
        """`rp` defines a collected test function (a mixin in tests/__init__.py, a helper module
        a test module imports its tests from): it is test code, wherever it is.  If it was
        already analysed as app code (it is under SRC and was imported through the hook), its
        facts stay (the instrumented code refers to their ids) and only the role changes."""
        if not rp or rp in self.test_files:
            return
        self.test_files.add(rp)
        f = self.files.get(rp, _MISSING)
        if f is None:
            del self.files[rp]        # not traced so far: analyse it again, as test code
        elif f is not _MISSING and f.role != "test":
            f.role = "test"
            for m in f.methods:
                m.role = "test"

    def rel_of(self, rp, role):
        root = self.src_root if role == "app" else self.cwd
        return sf.relpath_for(rp, root)

    def register(self, rp, facts):
        self.files[rp] = facts
        if facts is not None:
            self.node_index.update(facts.nodes)
            for nid, n in facts.nodes.items():
                self.stmt_of[nid] = n.stmt
                if n.kind == "branch":
                    self.branch_ids.add(nid)
                    # pseudo-statements followed by another node of the same statement
                    if not n.real and n.wrapped:
                        self.eager[nid] = n.stmt

    def facts_for(self, path, running=False):
        """Static facts of a traced file (None if it is not traced). `running`: asked for code
        that is executing, so an app module that did not go through the import hook is
        uninstrumented: analyse it without wrapper-driven pseudo-statements."""
        rp = self.real(path)
        f = self.files.get(rp, _MISSING)
        if f is not _MISSING:
            return f
        role = self.role_of(rp) if rp else None
        if role is None:
            self.files[rp] = None
            return None
        try:
            f = sf.analyze_file(rp, self.rel_of(rp, role), role,
                                instrument=(role == "app" and not running))
            self.warnings.extend(f.warnings)
            if running and role == "app":
                self.uninstrumented.append(self.rel_of(rp, role))
                self.warnings.append(f"{self.rel_of(rp, role)}: imported before the tracer: not "
                                     f"instrumented (branch outcomes inferred, no flipping)")
        except sf.StaticError as e:
            self.warnings.append(str(e))
            f = None
        except Exception as e:  # never crash the test run
            self.warnings.append(f"{rp}:0: static analysis failed: {type(e).__name__}: {e}")
            f = None
        self.register(rp, f)
        return f


class Tracer:
    def __init__(self, registry: Registry, step_cap=2_000_000, force=None):
        self.reg = registry
        self.step_cap = step_cap
        # a re-run's forced branch instances, {node id: {occurrence: outcome}} (outcome 0 / 1,
        # or None: the opposite of the natural one, a flip); {} a re-run forcing nothing (a
        # control run); None: not a re-run (trace mode)
        self.force = force
        self.reached = {}             # (node id, occurrence) forced and reached -> natural outcome
        # a re-run: the outermost frame of code under analysis open at the first forced
        # instance ended by an exception (_watch_throw), and whether that frame is watched
        self.thrown = False
        self._watching = False
        self.unforceable = {}         # (node id, occurrence) reached but not forced -> why
        self.cur = None
        self.active = False
        self.root_code = None
        self.roots_left = None
        self.stack = []
        self.byframe = {}
        # the test function's frame until it returns (a generator / coroutine test is suspended
        # and resumed by its driver), its first activation's record, and whether that record is
        # suspended at the bottom of the stack
        self.root_frame = None
        self.root_rec = None
        self.root_waiting = False
        self._local_code = None       # code object of the local trace functions
        self._local_maker = None      # makes them (see _make_local_maker)
        self._lite = self._make_lite()
        self._lite_codes = set()      # code objects _call made lite in the current test
        self.code_cache = {}
        # the app functions the plain run saw the current test run ("REALPATH:FIRSTLINE:
        # QUALNAME:NAME" code keys, as the plain run's profile), None: not known (see _detach);
        # and every app method's code objects by their key
        self.profile = None
        self.codes_by_key = {}
        self._detach_frames = {}
        # a flip re-run that records nothing but its outcome: stop tracing once every forced
        # instance is reached (see _forced)
        self.detach_reached = False
        self.posmaps = {}
        self.cover_need = {}         # code object -> (nodes, CFG edges) its activations can cover
        self._edges_at = {}          # id(file facts) -> node -> its CFG edges (a, b)
        self.thread = None
        self.errors = []
        self._global = None
        self._report_kind = {}       # code object -> 0 (no), 1 (report code), 2 (depends on line)
        self._report_lines = None    # report regions of unittest.case
        self.heap = None             # heap.HeapRecorder of the current test (heap.facts)
        # a re-run given `values` (record / capture / patch): (values, offset) for the next
        # start() (offset: what the record's step 0 is in the written trace, None: unknown),
        # and the values.Recorder of the current record
        self.values_cfg = None
        self.values = None
        # The setup recording (import-time code, before the first test): see start_setup.
        self.setup_mode = False
        self.setup_rec = None
        self.setup_root_ok = None
        self.setup_keep = None
        self.setup_scratch = None
        self.setup_mutated = None     # heap: ids the setup recording mutated (tests start with them)
        self._test_cap = step_cap

    # ------------------------------------------------------------ lifecycle
    def start_setup(self, root_ok, cap, keep=None, record_steps=True):
        """Record import-time code until stop_setup(): every module body of an app file
        (`root_ok(filename)`) that starts while nothing is traced is a *segment* of the setup
        recording (a root frame, with the class bodies, modules and functions it runs as its
        callees).  `keep` (flip re-runs): the indices of the segments the test's trace holds;
        the others are run but not counted (their branch evaluations do not number the
        occurrences).  `cap`: steps recorded at most."""
        self.start("<setup>", None, record_steps=record_steps)
        rec = self.cur
        rec.segments = []         # (index, first step, first frame, root method id)
        rec.nroots = 0
        self.setup_rec = rec
        self.setup_keep = keep
        self.setup_root_ok = root_ok
        self.setup_mode = True
        self._test_cap = self.step_cap
        self.step_cap = cap
        if keep is not None:
            scratch = TestRecord("<setup:other>", False)
            scratch.occ = _NoCount()
            scratch.nsteps = 0
            self.setup_scratch = scratch

    def stop_setup(self):
        """Ends the setup recording; returns its TestRecord (`heap`: its rows, `segments`)."""
        rec = self.setup_rec
        if rec is None or not self.setup_mode:
            return rec
        self.cur = rec
        hp = self.heap
        self.setup_mutated = set(hp.mutated) if hp is not None else None
        self.stop()
        self.setup_mode = False
        self.step_cap = self._test_cap
        self.setup_scratch = None
        if rec.record_steps:
            self.infer_branches(rec)
        rec.origins = {}
        return rec

    def _begin_segment(self, m):
        """A module body starts with nothing traced: a new segment of the setup recording."""
        rec = self.setup_rec
        k = rec.nroots
        rec.nroots += 1
        if self.setup_keep is not None and k not in self.setup_keep:
            self.cur = self.setup_scratch
            return
        self.cur = rec
        rec.segments.append((k, len(rec.steps_node) if rec.record_steps else rec.nsteps, len(rec.frames), m.id))

    def start(self, test_id, root_code, record_steps=True, extra_roots=(), cover_only=False):
        """Begin recording test `test_id`.  `root_code`: the test function's code object (None:
        the first test-code frame entered is the root); `extra_roots`: code objects of the
        test's unittest ``setUp`` / ``tearDown``, each also a root frame when called with
        nothing traced (the trace writer puts all root frames under the synthetic root).
        `cover_only`: the test is traced as past the step cap from its first step: coverage,
        edge coverage, methods (no steps, frames, bindings or heap rows)."""
        self.cur = TestRecord(test_id, record_steps)
        self.cur.cover_only = cover_only
        self._lite_codes.clear()
        if cover_only:
            self._full_cap = self.step_cap
            self.step_cap = 0
        if self.setup_rec is not None and not self.setup_mode and self.force is not None:
            # a flip re-run numbers a branch's evaluations as the dump's trace does: the
            # setup segments the trace begins with, then the test
            self.cur.occ = dict(self.setup_rec.occ)
        self.heap = (_heap.HeapRecorder(self.setup_mutated)
                     if _heap is not None and _heap.ENABLED and record_steps
                     and self.force is None and not cover_only else None)
        vc = self.values_cfg
        self.values = (_values.Recorder(self, self.cur, vc[0], vc[1])
                       if vc is not None and _values is not None and record_steps and not cover_only else None)
        self.root_code = root_code
        # code objects that may still begin a root frame (each once): the test function, its
        # setUp and tearDown (None: any test-code frame, once)
        self.roots_left = None if root_code is None else {root_code, *(c for c in extra_roots if c is not None)}
        self.active = False
        self.stack = []
        self.byframe = {}
        self.root_frame = None
        self.root_rec = None
        self.root_waiting = False
        self.thread = threading.get_ident()
        if self._global is None:
            self._global = self._make_global()
        if self._local_maker is None:
            self._local_maker = self._make_local_maker()
        self._previous = sys.gettrace()
        if _OPCODE_EVENTS_AT_SETTRACE:
            # 3.12: `sys.settrace` turns on opcode events only once some frame has had
            # f_trace_opcodes set (an interpreter-wide flag): set it, so that the first
            # test gets the opcode events of its two-statement lines as later ones do
            f = sys._getframe()
            f.f_trace_opcodes = True
            f.f_trace_opcodes = False
        sys.settrace(self._global)

    def stop(self):
        # give back the trace function that was there before (coverage tools, debuggers)
        sys.settrace(getattr(self, "_previous", None))
        if self._watching:
            sys.setprofile(None)
            self._watching = False
        self._previous = None
        self._detach_frames = {}
        rec = self.cur
        self._lite_codes.clear()
        hp, self.heap = self.heap, None
        vr, self.values = self.values, None
        if rec is not None:
            rec.heap = hp.finish(self.errors) if hp is not None else []
            rec.values = vr
            if rec.cover_only:
                self.step_cap = self._full_cap
        self.active = False
        for r in self.stack:
            r.pyframe = None
        self.stack = []
        self.byframe = {}
        self.root_frame = None
        self.root_rec = None
        self.root_waiting = False
        self.cur = None
        return rec

    # ------------------------------------------------------------ lookup
    def method_of(self, co):
        m = self.code_cache.get(co, _MISSING)
        if m is not _MISSING:
            return m
        m = None
        try:
            if co.co_name not in sf.OPAQUE_CODE_NAMES:
                facts = self.reg.facts_for(co.co_filename, running=True)
                if facts is not None:
                    m = facts.method_for_code(co)
                    if m is not None and m.role == "app":
                        self.codes_by_key.setdefault(code_key(self.reg.real(co.co_filename), co), []).append(co)
        except Exception as e:
            self.errors.append(f"{co.co_filename}:{co.co_firstlineno}: {type(e).__name__}: {e}")
            m = None
        self.code_cache[co] = m
        return m

    def posmap_of(self, co, m):
        pm = self.posmaps.get(co)
        if pm is None:
            pm = {}
            try:
                nodes = m.code_nodes(co)
            except Exception:
                nodes = []
            for i, nid in enumerate(nodes):
                if nid is not None:
                    pm[2 * i] = nid
            if sf.INLINED_COMPREHENSIONS:
                _drop_comprehension_heads(co, pm, m)
            self.posmaps[co] = pm
            self.cover_need[co] = self._cover_need(m, pm)
        return pm

    def _cover_need(self, m, pm):
        """What an activation of `m` (code with position map `pm`) can add to a test's coverage
        and edge coverage: the method's nodes and those its instructions map to, and every CFG
        edge from or to one of them (a step's edge joins two nodes of one activation).  None
        when it cannot be told."""
        try:
            f = m.facts
            at = self._edges_at.get(id(f))
            if at is None:
                at = {}
                for (a, b, _k) in f.edges:
                    at.setdefault(a, []).append((a, b))
                    at.setdefault(b, []).append((a, b))
                self._edges_at[id(f)] = (f, at)
            else:
                at = at[1]
            nodes = set(m.nodes) | set(pm.values())
            edges = set()
            for n in nodes:
                edges.update(at.get(n, ()))
            return (frozenset(nodes), frozenset(edges))
        except Exception:
            return None

    # ------------------------------------------------------------ trace functions
    def _make_lite(self):
        """The trace function of a lite activation (past the step cap, see _call): only an
        exception's origin is recorded (at the last step, as a traced activation past the cap
        records it)."""
        tracer = self

        def lite(frame, event, arg):
            if event == "exception":
                try:
                    cur = tracer.cur
                    if cur is not None and tracer.active:
                        exc = arg[1]
                        k = id(exc)
                        sig = exc_signature(exc, arg[2])
                        o = cur.origins.get(k)
                        if o is None or o[1] != sig:
                            cur.origins[k] = (cur.nsteps - 1, sig)
                        exc = None
                except Exception as e:
                    tracer.errors.append(f"tracer: {type(e).__name__}: {e}")
            return lite

        return lite

    def _make_global(self):
        cache_get = self.code_cache.get
        call = self._call
        lite = self._lite
        lite_codes = self._lite_codes

        def global_trace(frame, event, arg):
            # the global trace function only receives "call" events
            co = frame.f_code
            if co in lite_codes:
                # a lite activation's callee whose code _call made lite in this test: lite too
                # (everything _call checks holds: the caller's checks passed, and the step cap
                # and the covered nodes and edges only grow)
                fb = frame.f_back
                if fb is not None and fb.f_trace is lite:
                    frame.f_trace_lines = False
                    return lite
            if cache_get(co, _MISSING) is None:
                return None
            return call(frame)

        return global_trace

    def _nothing_left(self, cur):
        """Past the step cap: can the rest of the test add nothing to its app coverage, edge
        coverage and methods? True when every app function the plain run saw the test run has
        run in this test with all its nodes and CFG edges covered (`cover_need`), and so has
        every app activation still on the stack. (A function the tracer has not met yet may
        still add: then False.)"""
        need, cov, edges = self.cover_need, cur.coverage, cur.edges

        def covered(co):
            n = need.get(co)
            return n is not None and n[0] <= cov and n[1] <= edges

        for key in self.profile:
            cos = self.codes_by_key.get(key)
            if not cos or not all(covered(co) for co in cos):
                return False
        return all(r.pyframe is not None and covered(r.pyframe.f_code)
                   for r in self.stack if r.method.role == "app")

    def _detach(self, cur):
        """Stops tracing for the rest of the test (`sys.settrace(None)`, from the global trace
        function, or from a condition wrapper: no event reaches any frame until stop()): past
        the step cap when _nothing_left holds (only coverage, edge coverage, methods and
        exception origins are recorded there), or in a flip re-run once its forced instances
        are reached (_forced). Not recorded then: the coverage of the test's own code (its
        remaining lines, never suspects); an exception's origin is reconstructed from its
        traceback (origin_after_detach)."""
        cur.detached = True
        self.active = False       # (the condition wrappers of frames still running do nothing)
        # where an exception passing through a frame still running would have its origin
        # (origin_after_detach); kept until stop()
        self._detach_frames = {r.pyframe: r.last_step for r in self.stack if r.pyframe is not None}
        sys.settrace(None)

    def origin_after_detach(self, exc):
        """The origin the tracer would have recorded for `exc` (raised after _detach, or not
        seen before it): the last step of the innermost frame of its traceback that still had
        a record when tracing stopped, or the last step of the trace where a frame of traced
        code begun later (lite, or past the cap) would have seen it first."""
        cur = self.cur
        if cur is None or not cur.detached or exc is None or id(exc) in cur.origins:
            return
        frames, step = [], None
        tb = exc.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        for f in reversed(frames):
            if f in self._detach_frames:
                step = self._detach_frames[f]
                break
            if self.code_cache.get(f.f_code) is not None:
                break
        cur.origins[id(exc)] = (step if step is not None else cur.nsteps - 1, exc_signature(exc))

    def _untraced(self, frame):
        """`frame` (of traced code) is not traced now.  If it is a generator / coroutine resumed
        after an earlier traced activation, it still has that activation's local trace
        function (CPython keeps ``f_trace`` when the call event returns None): remove it."""
        t = frame.f_trace
        lc = self._local_code
        if t is not None and (t is self._lite or lc is not None and getattr(t, "__code__", None) is lc):
            frame.f_trace = None   # (another tool's trace function, e.g. coverage's, stays)
        return None

    def _call(self, frame):
        try:
            co = frame.f_code
            if self.setup_mode and not self.active and (
                    co.co_name != "<module>" or not self.setup_root_ok(co.co_filename)):
                return None     # import time: only an app module body begins a segment
            m = self.method_of(co)
            if m is None:
                return None
            cur = self.cur
            if cur is None or threading.get_ident() != self.thread:
                return self._untraced(frame)
            if not self.active:
                if self.setup_mode:
                    # import time: a module body of an app file begins a segment
                    if co.co_name != "<module>" or m.role != "app" or not self.setup_root_ok(co.co_filename):
                        return self._untraced(frame)
                    self._begin_segment(m)
                    cur = self.cur
                elif self.roots_left is not None:
                    # the test function, or its setUp / tearDown (a unittest TestCase's,
                    # called by TestCase.run around it): each is a root frame once
                    if co not in self.roots_left:
                        return self._untraced(frame)
                    self.roots_left.discard(co)
                    if co is not self.root_code:
                        cur.extra_roots = True
                elif cur.root_seen or m.role != "test":
                    return self._untraced(frame)
                cur.root_seen = True
                self.active = True
                # (a setUp / tearDown is no test function: a generator one, e.g. twisted's
                # inlineCallbacks, ends its root activation at its first suspension)
                self.root_frame = None if cur.extra_roots and co is not self.root_code else frame
                self.root_waiting = False
                caller = None
            else:
                caller = self.stack[-1] if self.stack else None
                if frame is self.root_frame and caller is self.root_rec and self.root_waiting:
                    # the suspended test function resumed by opaque code (its event loop) with
                    # nothing traced above it: the same frame goes on (its old trace function)
                    rec = caller
                    self.root_waiting = False
                    self.byframe[frame] = rec
                    return frame.f_trace
            fb = frame.f_back
            if (caller is not None and fb is not caller.pyframe and (fb is None or fb.f_trace is not self._lite)
                    and self._in_report(frame, caller.pyframe)):
                # (a lite frame's callee: its caller was checked when it began)
                return self._untraced(frame)
            capped = cur.nsteps >= self.step_cap and not self.setup_mode
            if capped and self.force is None and cur.record_steps:
                # past the step cap only coverage, edge coverage, methods and exception
                # origins are still recorded: an activation that can add no node and no edge
                # to the test's (all its method's are covered) runs lite, without line events
                # and without a record on the stack
                need = self.cover_need.get(co)
                if need is not None and need[0] <= cur.coverage and need[1] <= cur.edges:
                    self._lite_codes.add(co)
                    cur.truncated = True
                    cur.methods.add(m.id)
                    if self.profile is not None and not cur.cover_only and self._nothing_left(cur):
                        self._detach(cur)
                        return None
                    frame.f_trace_lines = False
                    if m.multi_lines:
                        frame.f_trace_opcodes = False
                    return self._lite
            call_step = None
            if caller is not None:
                call_step = caller.last_step if caller.last_step is not None else (cur.nsteps - 1 if cur.nsteps else None)
            rec = FrameRec(m, frame, call_step, self.posmap_of(co, m))
            if capped:
                pass    # (no step of this activation will have a frame: its bindings are not used)
            elif caller is not None and fb is caller.pyframe and m.params is not None:
                try:
                    rec.binds = self._binds(caller, frame, m)
                except Exception as e:
                    self.errors.append(f"bind: {type(e).__name__}: {e}")
            self.stack.append(rec)
            self.byframe[frame] = rec
            if caller is None:
                self.root_rec = rec
            cur.methods.add(m.id)
            if co.co_flags & _RESUMABLE:
                # (a generator's frame outlives its activations: an earlier one may have been lite)
                frame.f_trace_lines = True
            if m.multi_lines:
                frame.f_trace_opcodes = True
            # (the maker is called here directly: the trace functions run at the recursion
            # limit too, and a call more or less there changes what is recorded)
            tr = self._local_maker(rec, self.step_cap)
            if _OPCODES_NEED_F_TRACE and m.multi_lines:
                # 3.13: f_trace_opcodes takes effect in a call event only with f_trace set
                frame.f_trace = tr
                frame.f_trace_opcodes = True
            return tr
        except Exception as e:
            self.errors.append(f"tracer: {type(e).__name__}: {e}")
            try:
                return self._untraced(frame)
            except Exception:
                return None

    def _in_report(self, frame, stop):
        """Is `frame` (traced code called through opaque frames) called, below the traced frame
        `stop`, by code that only renders an assertion's failure report?"""
        kinds = self._report_kind
        f = frame.f_back
        n = 0
        while f is not None and f is not stop and n < 1000:
            co = f.f_code
            k = kinds.get(co)
            if k is None:
                k = kinds[co] = self._classify_report(co, f)
            if k == 1:
                return True
            if k == 2:
                if self._report_lines is None:
                    self._report_lines = _report_regions(co.co_filename)
                ln = f.f_lineno
                if any(a <= ln <= b for (a, b) in self._report_lines):
                    return True
            f = f.f_back
            n += 1
        return False

    def _classify_report(self, co, f):
        try:
            mod = f.f_globals.get("__name__") or ""
        except Exception:
            return 0
        if mod in REPORT_MODULES or mod.startswith(tuple(m + "." for m in REPORT_MODULES)):
            return 1
        names = REPORT_FUNCTIONS.get(mod)
        if names is not None and co.co_name in names:
            return 1
        if mod == "unittest.case":
            return 2
        return 0

    def _make_local_maker(self):
        """A function making local trace functions.  What every activation shares is bound
        once, here (a closure cell each); only what is the activation's own (its record, its
        method's lines and position map, the step cap in force when it was called) is a new
        cell per call: a closure per call is the tracer's main per-call cost."""
        tracer = self
        branch_ids = self.reg.branch_ids
        slow_step = self.step
        eager = self.reg.eager
        stmt_of = self.reg.stmt_of

        def make(rec, cap):
            multi = rec.method.multi_lines
            pm = rec.posmap

            def local(frame, event, arg):
                try:
                    if rec.pyframe is not frame:
                        # the activation this function was made for has ended (a generator
                        # resumed while nothing is traced keeps its old f_trace): not ours
                        frame.f_trace = None
                        return None
                    if event == "line" or (event == "opcode" and frame.f_lineno in multi):
                        off = frame.f_lasti
                        nid = pm.get(off)
                        if nid is None:
                            return local
                        if (nid != rec.node or off < rec.off) and not (
                                rec.chained and off > rec.off
                                and eager.get(nid, nid) == stmt_of.get(rec.node)):
                            # (not: a later instruction of an operand the wrapper has moved past,
                            # mapped to that operand or to the statement: see FrameRec.chained)
                            cur = tracer.cur
                            st = tracer.stack
                            if (nid in eager and eager[nid] == rec.node and cur is not None
                                    and st and st[-1] is rec and not rec.chained):
                                # an operand of the statement whose step has just begun
                                tracer._relabel(rec, nid)
                            elif cur is not None and st and st[-1] is rec and (
                                    (record := rec.fid is not None and cur.nsteps < cap)
                                    or cur.nsteps >= tracer.step_cap):
                                # what `step` does, without its call: a step, or past the step
                                # cap only the coverage, edges and occurrences
                                prev = rec.node
                                cur.coverage.add(nid)
                                if prev is not None:
                                    cur.edges.add((prev, nid))
                                if nid in branch_ids:
                                    occ = cur.occ
                                    occ[nid] = occ.get(nid, 0) + 1
                                    rec.pending = True
                                else:
                                    rec.pending = False
                                rec.prev = prev
                                rec.node = nid
                                rec.exc = -1
                                rec.chained = False
                                if record:
                                    idx = cur.nsteps
                                    cur.nsteps = idx + 1
                                    if cur.record_steps:   # (not in a re-run without events)
                                        cur.steps_node.append(nid)
                                        cur.steps_frame.append(rec.fid)
                                    rec.last_step = idx
                                    if tracer.heap is not None:
                                        try:
                                            tracer.heap.step(rec, idx, nid, frame)
                                        except Exception:   # RecursionError at the limit: no rows
                                            pass
                                    if tracer.values is not None:
                                        tracer.values.step(rec, idx, frame)
                                else:
                                    cur.truncated = True
                                    rec.last_step = None
                            else:
                                slow_step(rec, nid)
                        rec.off = off
                    elif event == "return":
                        tracer.ret(rec, frame)
                        if tracer.heap is not None:
                            tracer.heap.frame_end(rec, frame)
                    elif event == "exception":
                        rec.exc = frame.f_lasti
                        cur = tracer.cur
                        if cur is not None:
                            # the exception object is not kept (it holds its traceback, hence
                            # frames and locals): its id and a signature that tells a propagating
                            # exception from a new one that happens to reuse the id
                            exc = arg[1]
                            k = id(exc)
                            sig = exc_signature(exc, arg[2])
                            o = cur.origins.get(k)
                            if o is None or o[1] != sig:
                                st = rec.last_step if rec.last_step is not None else cur.nsteps - 1
                                cur.origins[k] = (st, sig)
                            exc = None
                except Exception as e:
                    tracer.errors.append(f"tracer: {type(e).__name__}: {e}")
                return local

            return local

        self._local_code = next(c for c in make.__code__.co_consts
                                if isinstance(c, type(make.__code__)) and c.co_name == "local")
        return make

    def make_wrappers(self):
        """The condition wrappers called by instrumented code, with the common case inline
        (every Python-level call costs a trace event)."""
        tracer = self
        getframe = sys._getframe
        eager = self.reg.eager
        slow = self.on_branch

        def report(nid, b, frame):
            if not tracer.active:
                return b
            rec = tracer.byframe.get(frame)
            if rec is None:
                return b
            if rec.node == nid and rec.pending and nid not in eager:
                force = tracer.force
                if force is None or nid not in force:
                    if rec.last_step is not None:
                        tracer.cur.branch[rec.last_step] = 1 if b else 0
                    rec.pending = False
                    return b
            return slow(nid, b, frame)

        def br(nid, value):
            b = True if value else False
            if not tracer.active:
                return b
            rec = tracer.byframe.get(getframe(1))
            if rec is None:
                return b
            if rec.node == nid and rec.pending and nid not in eager:
                force = tracer.force
                if force is None or nid not in force:
                    if rec.last_step is not None:
                        tracer.cur.branch[rec.last_step] = 1 if b else 0
                    rec.pending = False
                    return b
            return slow(nid, b, getframe(1))

        def sc(nid, value):
            b = True if value else False
            if not tracer.active:
                return value
            r = slow(nid, b, getframe(1))
            # a forced operand is replaced by a stand-in of the forced truth value
            return value if r == b else r

        return br, sc, report

    def ret(self, rec, frame):
        """The `return` event of `rec`'s frame: the activation ends (a return, an exception
        leaving it, or a yield / await).  The test function's frame is special when the test is
        a generator / coroutine run by a driver (an event loop): when its first activation
        suspends, its record stays at the bottom of the stack (what the loop runs until the
        test resumes is called from the suspension step; a resumption by opaque code with
        nothing traced above continues that frame, one by traced code is a new frame opened by
        the resuming step), and the end of its last activation ends the test's trace even if
        traced frames of the driver are still running."""
        if frame is not self.root_frame or rec.pyframe is not frame:
            self.pop(rec)
            return
        st = self.stack
        if _suspends(frame, rec):
            if rec is self.root_rec and rec in st:
                while st[-1] is not rec:
                    self._drop(st.pop())
                self.root_waiting = True
                self.byframe.pop(frame, None)
                return
            self.pop(rec)
            return
        self.root_frame = None
        self.root_rec = None
        self.root_waiting = False
        for r in st:
            self._drop(r)
        st.clear()
        rec.pyframe = None
        self.active = False

    def _drop(self, r):
        self.byframe.pop(r.pyframe, None)
        # the frame's f_trace (our closure) refers to `r`: without this, frame -> closure -> r
        # -> frame is a cycle that keeps the frame's locals alive until the garbage collector
        # runs (weakrefs, __del__ would see them late)
        r.pyframe = None

    def pop(self, rec):
        st = self.stack
        if st and st[-1] is rec:
            # the common case: the frame on top returns (`rec in st` scans the whole stack)
            st.pop()
            self._drop(rec)
            rec.pyframe = None
            if not st:
                self.active = False
            return
        if rec in st:
            while st:
                r = st.pop()
                self._drop(r)
                if r is rec:
                    break
        rec.pyframe = None
        if not st:
            self.active = False

    def step(self, rec, nid):
        cur = self.cur
        if cur is None:
            return None
        st = self.stack
        if not st or st[-1] is not rec:
            if rec not in st:
                return None
            while st[-1] is not rec:
                self._drop(st.pop())
        prev = rec.node
        cur.coverage.add(nid)
        if prev is not None:
            cur.edges.add((prev, nid))
        if nid in self.reg.branch_ids:
            cur.occ[nid] = cur.occ.get(nid, 0) + 1
        rec.prev = prev
        rec.node = nid
        rec.exc = -1
        rec.chained = False
        rec.pending = nid in self.reg.branch_ids
        if cur.nsteps >= self.step_cap:
            cur.truncated = True
            rec.last_step = None
            return None
        idx = cur.nsteps
        cur.nsteps += 1
        if rec.fid is None:
            rec.fid = len(cur.frames)
            cur.frames.append((rec.fid, rec.method.id, rec.call_step))
            if rec.binds:
                for (formal, actual) in rec.binds:
                    cur.binds.append((rec.call_step, rec.fid, formal, actual))
        if cur.record_steps:
            cur.steps_node.append(nid)
            cur.steps_frame.append(rec.fid)
        rec.last_step = idx
        if self.heap is not None:
            try:
                self.heap.step(rec, idx, nid, rec.pyframe)
            except Exception:   # RecursionError at the limit: no rows
                pass
        if self.values is not None:
            # (also from a condition wrapper (on_branch), which is no trace function)
            self.values.step(rec, idx, rec.pyframe)
        return idx

    # ------------------------------------------------------------ wrappers
    def on_branch(self, nid, outcome, frame):
        """Called by the instrumentation when condition `nid` evaluated to `outcome` in
        `frame`; returns the outcome to use (the forced one for a forced instance)."""
        rec = self.byframe.get(frame)
        cur = self.cur
        if rec is None or cur is None or not self.active:
            return outcome
        try:
            n = rec.method.facts.nodes[nid]
            if not (rec.node == nid and rec.pending):
                if rec.node is not None and rec.node == n.stmt and rec.node != nid and not rec.chained:
                    self._relabel(rec, nid)
                else:
                    self.step(rec, nid)
            if self.force:
                outcome = self._forced(nid, cur.occ.get(nid, 0), outcome)
            if rec.last_step is not None and rec.node == nid:
                cur.branch[rec.last_step] = 1 if outcome else 0
            rec.pending = False
            rec.chained = False
            succ = n.tsucc if outcome else n.fsucc
            if succ and len(succ) == 1:
                (s,) = succ
                sn = rec.method.facts.nodes.get(s)
                if sn is not None and s != nid and sn.stmt == n.stmt:
                    # the next operand, or the statement deciding the condition (which
                    # records its own step with the whole condition's outcome)
                    self.step(rec, s)
                    rec.chained = True
        except Exception as e:
            self.errors.append(f"branch: {type(e).__name__}: {e}")
        return outcome

    def _relabel(self, rec, nid):
        """The first pseudo-statement evaluated inside a statement whose step has just begun
        (e.g. the test of `a if c else b` after `f(x)` in `g(f(x), a if c else b)`): the step
        becomes the pseudo-statement's, as in the CFG (operands before the statement)."""
        cur = self.cur
        old = rec.node
        if old in self.reg.branch_ids:
            cur.occ[old] = cur.occ.get(old, 1) - 1
        cur.occ[nid] = cur.occ.get(nid, 0) + 1
        cur.coverage.add(nid)
        if rec.prev is not None:
            cur.edges.add((rec.prev, nid))
        if rec.last_step is not None:
            if cur.record_steps:
                cur.steps_node[rec.last_step] = nid
            cur.branch.pop(rec.last_step, None)
        rec.node = nid
        rec.pending = True
        if self.heap is not None and rec.last_step is not None:
            try:
                self.heap.relabel(rec, rec.last_step, nid, rec.pyframe)
            except Exception:   # RecursionError at the limit
                pass

    def _forced(self, nid, occurrence, outcome):
        """The outcome of evaluation `occurrence` of branch `nid` that evaluated to `outcome`:
        the forced one when the instance is in the forced set (it is then reached)."""
        want = self.force.get(nid)
        if want is None or occurrence not in want:
            return outcome
        to = want[occurrence]
        first = not self.reached
        self.reached[(nid, occurrence)] = 1 if outcome else 0
        if first:
            self._watch_throw()
        if self.detach_reached and all((k, n) in self.reached for k, d in self.force.items() for n in d):
            # a flip re-run that records nothing but its outcome: once every forced instance
            # is reached, the rest of the test runs untraced (no instance is left to count)
            self._detach(self.cur)
        return (not outcome) if to is None else bool(to)

    def _watch_throw(self):
        """At the first forced instance of a re-run: watch the outermost frame of code under
        analysis that is open below the first frame of test code (library frames between are
        passed over), and set `thrown` if it ends by an exception (which then reaches test
        code: a pass that way is the test accepting an exception; docs/model.md, "A pass by a
        thrown exception"). A profile function sees the frame's end whether or not tracing has
        stopped (_detach); it is removed then, or by stop()."""
        base = None
        try:
            f = sys._getframe(1)
            while f is not None:
                m = self.method_of(f.f_code)
                if m is not None and m.role == "test":
                    break
                if m is not None:
                    base = f
                f = f.f_back
        except RecursionError:
            # a forced instance at the recursion limit (a runaway recursion: QuixBugs `gcd`)
            # leaves no room to look: nothing is watched, `thrown` stays False, and the
            # instance counts as reached (it was recorded before this call)
            return
        previous = sys.getprofile()
        if base is None or previous is not None:
            return      # (a profiler of the user's is left alone: `thrown` stays unknown, False)
        normal = _NORMAL_EXIT_OPS

        def watch(frame, event, arg):
            if frame is base and event == "return":
                code = frame.f_code.co_code
                i = frame.f_lasti
                self.thrown = not (0 <= i < len(code) and code[i] in normal)
                sys.setprofile(None)
                self._watching = False

        self._watching = True
        sys.setprofile(watch)

    def iter_exhausted_forced(self, nid, frame):
        """An exhausted `for` header was forced to 1: no item can be made, the loop ends (the
        instance is not reached, its step keeps outcome 0)."""
        cur = self.cur
        key = (nid, cur.occ.get(nid, 0)) if cur is not None else None
        if self.reached.pop(key, None) is None:
            return
        self.unforceable[key] = "a `for` header whose iterator is exhausted cannot yield an item"
        rec = self.byframe.get(frame)
        if rec is not None and rec.node == nid and rec.last_step is not None:
            cur.branch[rec.last_step] = 0

    # ------------------------------------------------------------ bindings
    def _binds(self, caller, frame, m):
        # (one function, no helper calls: this runs at the recursion limit too)
        calls = caller.method.calls.get(caller.node)
        if not calls:
            return None
        co = frame.f_code
        pos, kwonly, vararg, kwarg, this = m.params
        cands = [d for d in calls if d[0] == co.co_name]
        if not cands and co.co_name == "__init__":
            cands = [d for d in calls if d[0] and d[0][:1].isupper()]
        if not cands and len(calls) == 1:
            cands = calls  # e.g. `fn(*args, **kwargs)` in a decorator's wrapper
        if not cands:
            return None
        # Run-time values are read only when they decide something: between several candidate
        # calls, or whether the receiver is implicit.  Reading f_locals makes CPython (< 3.13)
        # keep a snapshot of the frame's locals, refreshed at each trace event of the frame (an
        # object deleted by a line stays referenced until the frame's next event).
        need = len(cands) > 1
        if not need and this is not None and pos and pos[0] == this:
            name, recv, apos, star, akw, dstar = cands[0]
            need = (this not in akw and recv is not None
                    and not len(apos) + (1 if star else 0) < len(pos))
        if need:
            try:
                callee = frame.f_locals
                clocals = caller.pyframe.f_locals
            except Exception:
                return None
        else:
            callee = clocals = {}
        best, bscore = None, -1
        for d in cands:
            name, recv, apos, star, akw, dstar = d
            out = []
            score = 0
            params = list(pos)
            implicit = False
            if this is not None and params and params[0] == this:
                supplied = len(apos) + (1 if star else 0)
                if co.co_name == "__init__" and recv is None:
                    implicit = True
                elif this not in akw and (supplied < len(params) or recv is not None and recv in clocals and clocals[recv] is callee.get(this)):
                    implicit = True
            if implicit:
                if recv is not None and co.co_name != "__init__":
                    out.append((this, recv))
                    if recv in clocals and clocals[recv] is callee.get(this):
                        score += 1
                params = params[1:]
            for i, a in enumerate(apos):
                if a is None:
                    continue
                if i < len(params):
                    f = params[i]
                    out.append((f, a))
                    if a in clocals and f in callee and clocals[a] is callee[f]:
                        score += 1
                elif vararg:
                    out.append((vararg, a))
            if star and vararg:
                out.append((vararg, star))
            for k, a in akw.items():
                if a is None:
                    continue
                if k in params or k in kwonly:
                    out.append((k, a))
                    if a in clocals and k in callee and clocals[a] is callee[k]:
                        score += 1
                elif kwarg:
                    out.append((kwarg, a))
            if dstar and kwarg:
                out.append((kwarg, dstar))
            if score > bscore:
                best, bscore = out, score
        callee = clocals = None
        return best

    # ------------------------------------------------------------ inference
    def infer_branches(self, rec, failure_step=None):
        """Branch steps without a wrapper-reported outcome: inferred from the next step of the
        same frame (in the true / false successors of the node).  A branch step that is the last
        of its frame is 1 (an assert that held, a loop left by return) unless it is the failure
        point (0: the assertion failed or the condition raised)."""
        if not rec.record_steps:
            return
        # the steps to infer: branch nodes without an outcome (in instrumented code the
        # wrappers reported nearly all of them); the checks below are the authority
        known = rec.branch
        steps_node = rec.steps_node
        # (the branch steps are picked out in C: itertools.compress over a map of set lookups)
        todo = [i for i in itertools.compress(range(len(steps_node)),
                                              map(self.reg.branch_ids.__contains__, steps_node))
                if i not in known]
        if not todo:
            return
        steps_frame = rec.steps_frame
        nexts = None
        budget = 4 * len(steps_frame) + 64     # steps the scans below may pass over at most
        for i in todo:
            nid = steps_node[i]
            if i in rec.branch:
                continue
            n = self._node(nid)
            if n is None or n.kind != "branch":
                continue
            # the next step of the same frame: list.index scans in C; past the budget (deep
            # recursion in test code: long scans over and over) one pass over all steps
            if nexts is None and budget < 0:
                nexts = {}
                lastf = {}
                for j, fid in enumerate(steps_frame):
                    p = lastf.get(fid)
                    if p is not None:
                        nexts[p] = j
                    lastf[fid] = j
            if nexts is not None:
                k = nexts.get(i)
            else:
                try:
                    k = steps_frame.index(steps_frame[i], i + 1)
                    budget -= k - i
                except ValueError:
                    k = None
                    budget -= len(steps_frame) - i
            out = 0 if i == failure_step else 1
            if k is not None:
                out = 0
                nxt = rec.steps_node[k]
                if n.tsucc and nxt in n.tsucc:
                    out = 1
                elif n.fsucc and nxt in n.fsucc:
                    out = 0
                elif n.tsucc and not n.fsucc:
                    out = 1
            rec.branch[i] = out

    def _node(self, nid):
        return self.reg.node_index.get(nid)
