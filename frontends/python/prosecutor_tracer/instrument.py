"""AST instrumentation of app modules (under SRC), installed as an import hook.

Every branch condition leaf is wrapped as ``__prosecutor_br__("<node id>", <expr>)`` (a
condition with short-circuit operands is wrapped whole, for the statement deciding it, and each
operand but the last as a leaf of its own), every
value-context short-circuit operand as ``__prosecutor_sc__("<node id>", <expr>)`` and every
``for`` iterable as ``__prosecutor_it__("<node id>", <expr>)``.  The wrappers live in
``builtins`` (dunder names are not mangled inside classes) and report the outcome of each
evaluation to the active tracer, which may force it (a re-run, ``prosecutor_tracer.flip``).  The new AST
nodes carry the location of the wrapped expression, so line numbers, tracebacks and the
position-to-statement mapping of the tracer are unchanged.  Nothing is written to disk
(no ``__pycache__``).
"""

from __future__ import annotations

import ast
import builtins
import fnmatch
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

from . import static_facts as sf
from . import static_cache

_tracer = None  # the active Tracer (set by the plugin)
_report = None


def set_tracer(t):
    global _tracer, _report
    _tracer = t
    br, sc, _report = t.make_wrappers()
    builtins.__prosecutor_br__ = br
    builtins.__prosecutor_sc__ = sc


def detach(finder):
    """This process runs no traced test any more (the plain pass forked from the traced run,
    session._plain_pass): app modules imported from now on are not instrumented, and the
    wrappers of those already imported only pass their values on."""
    global _tracer
    _tracer = None
    try:
        sys.meta_path.remove(finder)
    except ValueError:
        pass
    # (node id, value) -> value, a C function: no Python frame per evaluation, which the plain
    # pass's profiler would count (cProfile's overhead allowance, session._plain_alarm: QuixBugs
    # bitcount's endless loop got 25 s more per test) and which would slow the plain tests. The
    # value itself, not bool(value): a condition tests its truth once, as uninstrumented code
    # does; a `for` calls iter() on the iterable once.
    passthrough = {}.pop
    builtins.__prosecutor_br__ = passthrough
    builtins.__prosecutor_sc__ = passthrough
    builtins.__prosecutor_it__ = passthrough


def _br(nid, value):
    return bool(value)


def _sc(nid, value):
    return value


def _it(nid, iterable):
    it = iter(iterable)
    return _IterWrap(nid, it)


class _IterWrap:
    """Iterator reporting one outcome per ``next``: 1 = an item, 0 = exhausted.  Forcing a 1 to
    0 ends the loop early (as if exhausted); forcing a 0 to 1 cannot produce an item (the
    instance is not reached)."""

    __slots__ = ("nid", "it", "done")

    def __init__(self, nid, it):
        self.nid = nid
        self.it = it
        self.done = False

    def __iter__(self):
        return self

    def __next__(self):
        if self.done:
            raise StopIteration
        t = _tracer
        try:
            item = next(self.it)
        except StopIteration:
            self.done = True
            if t is not None:
                f = sys._getframe(1)
                if _report(self.nid, False, f):
                    t.iter_exhausted_forced(self.nid, f)
            raise
        if t is not None and not _report(self.nid, True, sys._getframe(1)):
            self.done = True
            raise StopIteration
        return item


builtins.__prosecutor_br__ = _br
builtins.__prosecutor_sc__ = _sc
builtins.__prosecutor_it__ = _it


class _Wrapper(ast.NodeTransformer):
    def __init__(self, wrap, wrap_loc=None):
        self.wrap = wrap
        self.wrap_loc = wrap_loc or {}

    def visit(self, node):
        key = id(node)
        node = super().visit(node)
        w = self.wrap.get(key)
        if w is not None and isinstance(node, ast.expr):
            fn, nid = w
            call = ast.Call(func=ast.Name(id=fn, ctx=ast.Load()), args=[ast.Constant(value=nid), node], keywords=[])
            for n in (call, call.func, call.args[0]):
                ast.copy_location(n, node)
            loc = self.wrap_loc.get(key)
            if loc is not None:
                # a whole short-circuit condition: its CALL, run after the operands, must map
                # to the statement deciding it, not to the operand the condition starts with
                call.lineno, call.col_offset, call.end_lineno, call.end_col_offset = loc
            return call
        return node


def instrument_tree(tree, facts):
    """Wrap the expressions listed in facts.wrap (computed on this very tree)."""
    new = _Wrapper(facts.wrap, getattr(facts, "wrap_loc", None)).visit(tree)
    ast.fix_missing_locations(new)
    return new


def compile_instrumented(source, path, rel):
    """(code, facts) of an app file; facts is None when instrumentation was impossible.

    The import-time (setup) recording's global trace function is suspended meanwhile: it
    records nothing of the analysis (tracer code), but its call event for each of the
    analysis's Python calls tripled the analysis's time (parse's 1,081 lines: 0.15 -> 0.45 s),
    paid by the traced run, the warm runner's session and every cold re-run at import."""
    hit = static_cache.load_code(path, rel, source)
    if hit is not None:
        return hit
    previous = sys.gettrace()
    if previous is not None:
        sys.settrace(None)
    try:
        facts, tree = sf.analyze_source(source, path, rel, "app")
        tree = instrument_tree(tree, facts)
        code = compile(tree, path, "exec", dont_inherit=True)
    finally:
        if previous is not None:
            sys.settrace(previous)
    return code, facts


class InstrumentingLoader(importlib.machinery.SourceFileLoader):
    registry = None
    warnings = None

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        data = self.get_data(path)
        source = importlib.util.decode_source(data)
        reg = self.registry
        rp = reg.real(path)
        try:
            code, facts = compile_instrumented(source, path, reg.rel_of(rp, "app"))
            reg.register(rp, facts)
            reg.warnings.extend(facts.warnings)
            return code
        except sf.StaticError:
            # let the compiler raise the real SyntaxError, exactly as an uninstrumented import
            return compile(source, path, "exec", dont_inherit=True)
        except Exception as e:  # never break an import because of the instrumentation
            reg.warnings.append(f"{path}:0: not instrumented ({type(e).__name__}: {e}); branch outcomes are inferred")
            return compile(source, path, "exec", dont_inherit=True)


class Finder(importlib.abc.MetaPathFinder):
    def __init__(self, registry, test_patterns):
        self.registry = registry
        self.test_patterns = list(test_patterns) + ["conftest.py"]
        self._busy = False

    def is_test_file(self, path):
        base = os.path.basename(path)
        return any(fnmatch.fnmatch(base, p) for p in self.test_patterns)

    def find_spec(self, fullname, path=None, target=None):
        if self._busy:
            return None
        self._busy = True
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                try:
                    spec = finder.find_spec(fullname, path, target)
                except Exception:
                    spec = None
                if spec is not None:
                    break
        finally:
            self._busy = False
        if spec is None or not spec.origin or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        origin = spec.origin
        reg = self.registry
        rp = reg.real(origin)
        if reg.role_of(rp) != "app" or self.is_test_file(rp):
            return spec
        loader = InstrumentingLoader(fullname, origin)
        loader.registry = reg
        spec.loader = loader
        return spec


def install(registry, test_patterns):
    f = Finder(registry, test_patterns)
    sys.meta_path.insert(0, f)
    already = []
    for name, mod in list(sys.modules.items()):
        fn = getattr(mod, "__file__", None)
        if fn and registry.is_app_path(registry.real(fn)):
            already.append(name)
    if already:
        registry.warnings.append(
            "modules imported before the tracer was loaded are not instrumented (branch outcomes "
            "inferred, no short-circuit pseudo-statements, no flipping): " + ", ".join(sorted(already)[:10]))
    return f
