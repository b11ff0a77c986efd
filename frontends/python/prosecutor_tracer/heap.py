"""Heap accesses by object identity (docs/trace-format.md: ``heap_access.facts``, ``heap.facts``).

The model links a use of a variable to its last definition by *name* within one frame.  Much
wrong state travels through the heap instead (``self._items.insert(0, k)`` in one method,
``return self._items[0]`` in another; an alias ``items = self._items; items.append(x)``; a
module-level dict filled by one function and read by another).  This module provides the data
for the core to follow such values by object identity:

* statically, per statement, the variables whose object it may MUTATE (``def``: stores into
  attributes / items, augmented assignment, ``del u[i]``, method calls, arguments of non-pure
  calls) or READ (``use``), optionally through the first attribute after the variable
  (``self._items``): :func:`analyze` fills ``FileFacts.heap_access`` and ``FileFacts.heap_info``;
* at run time, :class:`HeapRecorder` (one per traced test, owned by the tracer) evaluates those
  variables at the start of each step and records ``(index, var, id(object), mode)``: every
  mutation of a mutable object, and the uses of objects mutated earlier in the trace.

It never calls ``getattr`` (properties, ``__getattr__`` would run user code), keeps no reference
to a user object beyond the evaluation of a step, and reads ``frame.f_locals`` (costly on
CPython < 3.13, and it leaves a snapshot of the locals in the frame) only when a step needs a
local it has not seen since that local was last rebound, or an attribute of a local's value.
"""

from __future__ import annotations

import ast
import os
import sys
import types

from . import static_facts as sf

# PROSECUTOR_HEAP=0: record nothing (no heap_access.facts / heap.facts: the name-only model)
ENABLED = os.environ.get("PROSECUTOR_HEAP", "1").strip() != "0"

# ---------------------------------------------------------------------------- static side


def _first_attr(e):
    """The first attribute after the root name of an attribute/subscript chain (`a` in
    `u.a.b[i]`, `u.a`), or None (`u`, `u[i].b`, or no root name)."""
    above = None
    while True:
        if isinstance(e, ast.Name):
            return above.attr if isinstance(above, ast.Attribute) else None
        if isinstance(e, (ast.Attribute, ast.Subscript)):
            above = e
            e = e.value
        else:
            return None


class _Walk:
    """Collects heap candidates of a statement's expressions: (var, attr) mutated and
    (var, attr) read through an attribute, ignoring names bound by lambdas / comprehensions."""

    def __init__(self):
        self.defs = set()      # (var, attr or "-")
        self.attr_uses = set()  # (var, attr)
        self.rebinds = set()   # names a walrus binds

    def mutated(self, e, bound):
        """The object of expression `e` is mutated (the value of a store target, a receiver,
        an augmented target `u.x += ...`): its root variable, and its first attribute."""
        r = sf.root_var(e)
        if r is None or r in bound:
            return
        self.defs.add((r, "-"))
        a = _first_attr(e)
        if a is not None:
            self.defs.add((r, a))

    def target(self, t, bound, aug=False):
        if isinstance(t, (ast.Tuple, ast.List)):
            for x in t.elts:
                self.target(x, bound)
        elif isinstance(t, ast.Starred):
            self.target(t.value, bound)
        elif isinstance(t, (ast.Attribute, ast.Subscript)):
            self.mutated(t.value, bound)
            if aug:
                # `u.x += e` also mutates the object of u.x in place when it is mutable (a list)
                self.mutated(t, bound)
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id not in bound:
                    self.attr_uses.add((t.value.id, t.attr))     # and reads it
            self.expr(t, bound)

    def expr(self, e, bound):
        if e is None:
            return
        stack = [(e, bound)]
        while stack:
            n, b = stack.pop()
            if isinstance(n, ast.Lambda):
                a = n.args
                inner = set(b) | {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
                if a.vararg:
                    inner.add(a.vararg.arg)
                if a.kwarg:
                    inner.add(a.kwarg.arg)
                for d in a.defaults + [d for d in a.kw_defaults if d is not None]:
                    stack.append((d, b))
                stack.append((n.body, frozenset(inner)))
                continue
            if isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                inner = set(b)
                for g in n.generators:
                    for t in ast.walk(g.target):
                        if isinstance(t, ast.Name):
                            inner.add(t.id)
                inner = frozenset(inner)
                for i, g in enumerate(n.generators):
                    # the first iterable is evaluated in the enclosing scope
                    stack.append((g.iter, b if i == 0 else inner))
                    for c in g.ifs:
                        stack.append((c, inner))
                elts = [n.key, n.value] if isinstance(n, ast.DictComp) else [n.elt]
                for x in elts:
                    stack.append((x, inner))
                continue
            if isinstance(n, ast.NamedExpr):
                self.rebinds.add(n.target.id)
            elif isinstance(n, ast.Call):
                f = n.func
                if isinstance(f, ast.Attribute):
                    self.mutated(f.value, b)          # a method call may mutate its receiver
                    # `u.m(...)`: `m` is a method lookup, not an object stored in u
                    stack.append((f.value, b))
                    for c in n.args:
                        stack.append((c, b))
                    for k in n.keywords:
                        stack.append((k, b))
                pure = isinstance(f, ast.Name) and f.id in sf.PURE_BUILTINS
                if not pure:                          # R_a: names passed to a non-pure call
                    for a in n.args:
                        v = a.value if isinstance(a, ast.Starred) else a
                        if isinstance(v, ast.Name) and v.id not in b:
                            self.defs.add((v.id, "-"))
                    for k in n.keywords:
                        if isinstance(k.value, ast.Name) and k.value.id not in b:
                            self.defs.add((k.value.id, "-"))
                if isinstance(f, ast.Attribute):
                    continue
            elif (isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)
                  and isinstance(n.value, ast.Name) and n.value.id not in b):
                self.attr_uses.add((n.value.id, n.attr))
            for c in ast.iter_child_nodes(n):
                if isinstance(c, ast.AST):
                    stack.append((c, b))


def _names(t, out):
    """Plain names bound by an assignment target."""
    if isinstance(t, ast.Name):
        out.add(t.id)
    elif isinstance(t, (ast.Tuple, ast.List)):
        for x in t.elts:
            _names(x, out)
    elif isinstance(t, ast.Starred):
        _names(t.value, out)


_IMM_CALLS = frozenset({"len", "int", "float", "str", "bool", "repr", "hash", "id", "ord", "chr",
                        "abs", "round", "hex", "oct", "bin", "format"})


def _immutable_value(e):
    """The expression's value is certainly an immutable scalar (a constant, `len(...)`, a
    `not` / `is` / `in` test, an f-string): a local rebound to it needs no reading."""
    if isinstance(e, ast.Constant):
        return True
    if isinstance(e, ast.UnaryOp):
        return isinstance(e.op, ast.Not) or isinstance(e.operand, ast.Constant)
    if isinstance(e, ast.JoinedStr):
        return True
    if isinstance(e, ast.Compare):
        return all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in e.ops)
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in _IMM_CALLS:
        return True
    return False


def _immutable_rebinds(a):
    """Names the statement `a` certainly rebinds to an immutable scalar."""
    out = set()
    if isinstance(a, ast.Assign) and _immutable_value(a.value):
        for t in a.targets:
            if isinstance(t, ast.Name):
                out.add(t.id)
    elif isinstance(a, ast.AnnAssign) and a.value is not None and _immutable_value(a.value):
        if isinstance(a.target, ast.Name):
            out.add(a.target.id)
    elif (isinstance(a, ast.AugAssign) and isinstance(a.target, ast.Name)
          and isinstance(a.value, ast.Constant) and type(a.value.value) in (int, float)
          and isinstance(a.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod))):
        out.add(a.target.id)                        # `n += 1`
    elif (isinstance(a, ast.For) and isinstance(a.iter, ast.Call)
          and isinstance(a.iter.func, ast.Name)):
        if a.iter.func.id == "range" and isinstance(a.target, ast.Name):
            out.add(a.target.id)                    # `for i in range(n)`
        elif (a.iter.func.id == "enumerate" and isinstance(a.target, ast.Tuple)
              and a.target.elts and isinstance(a.target.elts[0], ast.Name)):
            out.add(a.target.elts[0].id)            # `for i, x in enumerate(xs)`
    return out


def _node_candidates(node, a):
    """(walk, rebinds) of one node; `a` is the AST node the node was created from."""
    w = _Walk()
    rebinds = set()
    empty = frozenset()
    suffix = node.id.split(":")[-1].split("#")[0] if not node.real else ""
    if not node.real:
        if suffix == "exit":
            for item in a.items:                    # `__exit__` of the managers
                w.expr(item.context_expr, empty)
        elif suffix == "case":
            rebinds |= node.defs                    # captures
            w.expr(a, empty)
        else:
            w.expr(a, empty)                        # an operand / a ternary test
    elif isinstance(a, (ast.If, ast.While)):
        w.expr(a.test, empty)
    elif isinstance(a, (ast.For, ast.AsyncFor)):
        w.target(a.target, empty)
        _names(a.target, rebinds)
        w.expr(a.iter, empty)
    elif isinstance(a, (ast.With, ast.AsyncWith)):
        for item in a.items:
            w.expr(item.context_expr, empty)
            if item.optional_vars is not None:
                w.target(item.optional_vars, empty)
                _names(item.optional_vars, rebinds)
    elif isinstance(a, sf._MATCH):
        w.expr(a.subject, empty)
    elif isinstance(a, ast.ExceptHandler):
        w.expr(a.type, empty)
        if a.name:
            rebinds.add(a.name)
    elif isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        rebinds.add(a.name)
        exprs = list(a.decorator_list)
        if isinstance(a, ast.ClassDef):
            exprs += a.bases + [k.value for k in a.keywords]
        else:
            exprs += a.args.defaults + [d for d in a.args.kw_defaults if d is not None]
        for e in exprs:
            w.expr(e, empty)
    elif isinstance(a, ast.Assign):
        for t in a.targets:
            w.target(t, empty)
            _names(t, rebinds)
        w.expr(a.value, empty)
    elif isinstance(a, ast.AnnAssign):
        if a.value is not None:
            w.target(a.target, empty)
            _names(a.target, rebinds)
            w.expr(a.value, empty)
    elif isinstance(a, ast.AugAssign):
        w.target(a.target, empty, aug=True)
        _names(a.target, rebinds)
        w.expr(a.value, empty)
    elif isinstance(a, ast.Delete):
        for t in a.targets:
            if isinstance(t, (ast.Attribute, ast.Subscript)):
                w.target(t, empty)
            else:
                _names(t, rebinds)
    elif isinstance(a, (ast.Import, ast.ImportFrom)):
        rebinds |= node.defs
    elif isinstance(a, ast.Return):
        w.expr(a.value, empty)
    elif isinstance(a, ast.Raise):
        w.expr(a.exc, empty)
        w.expr(a.cause, empty)
    elif isinstance(a, ast.Assert):
        w.expr(a.test, empty)
        w.expr(a.msg, empty)
    elif isinstance(a, ast.Expr):
        w.expr(a.value, empty)
    elif isinstance(a, (ast.Try, ast.Pass, ast.Global, ast.Nonlocal, ast.Break, ast.Continue)) or (
            hasattr(ast, "TryStar") and isinstance(a, getattr(ast, "TryStar"))):
        pass
    else:
        rebinds |= node.defs                        # unknown: assume it rebinds its DEF
    rebinds |= w.rebinds
    return w, rebinds


_SCOPE_STOP = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _scopes(tree):
    """id(AST node) -> the names a binding of that statement stores into a namespace slot
    (a module global or a class attribute): None = every name it binds (module and class
    bodies), else the names declared `global` in the enclosing function."""
    out = {}

    def globals_of(fn):
        names = set()
        stack = list(fn.body)
        while stack:
            n = stack.pop()
            if isinstance(n, ast.Global):
                names.update(n.names)
            if isinstance(n, _SCOPE_STOP):
                continue
            stack.extend(ast.iter_child_nodes(n))
        return frozenset(names)

    def walk(body, slots):
        stack = list(body)
        while stack:
            n = stack.pop()
            out[id(n)] = slots
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                walk(n.body, globals_of(n))
                continue
            if isinstance(n, ast.ClassDef):
                walk(n.body, None)
                continue
            if isinstance(n, ast.Lambda):
                continue
            stack.extend(c for c in ast.iter_child_nodes(n)
                         if isinstance(c, (ast.stmt, ast.ExceptHandler, ast.excepthandler))
                         or type(c).__name__ == "match_case")

    walk(tree.body, None)
    return out


_EMPTY_CALLS = frozenset({"dict", "list", "set", "OrderedDict", "defaultdict", "deque", "Counter",
                          "WeakValueDictionary", "WeakKeyDictionary", "WeakSet", "ChainMap"})


def _empty_container(e):
    """`{}`, `[]`, `set()`, `dict()`, `defaultdict(list)`, `deque()`, ...: a registry or cache,
    filled later (its content is followed by object identity, not by its binding)."""
    if isinstance(e, ast.Dict):
        return not e.keys
    if isinstance(e, (ast.List, ast.Set)):
        return not e.elts
    if isinstance(e, ast.Call) and not e.keywords:
        f = e.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if name in _EMPTY_CALLS:
            return not e.args or (name == "defaultdict" and len(e.args) == 1)
    return False


def _slot_binds(a, rebinds, imm, node):
    """The names statement `a` binds that are namespace slots and get a synthetic `def` row:
    assignments (also augmented, annotated, `for` / `with` / `except` targets, walrus,
    `del`), and a `def` with default values (its defaults are import-time values); not
    imports, classes or `def`s without defaults (every call of a function would otherwise
    link to its `def` line), nor a binding to an empty container (`_cache = {}`: the cache's
    content is followed by object identity; its binding would tie with every statement that
    reads the cache)."""
    if isinstance(a, (ast.Import, ast.ImportFrom, ast.ClassDef)):
        return set()
    if isinstance(a, (ast.Assign, ast.AnnAssign)) and a.value is not None and _empty_container(a.value):
        return set()            # `_cache = {}`: a registry filled later, see _empty_container
    if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = a.args
        if not args.defaults and not any(d is not None for d in args.kw_defaults):
            return set()
    return (set(rebinds) | set(imm)) & set(node.defs)


def analyze(facts, ast_of, tree=None):
    """Fill ``facts.heap_access`` (node id -> sorted [(var, attr, mode)], the rows of
    heap_access.facts) and ``facts.heap_info`` (node id -> run-time descriptor) from the AST
    node each node was created from (``ast_of``: node id -> AST node).  With the module's
    `tree`, a binding of a module global or class attribute (a module / class body statement,
    or a function's `global` name) also gets a `def` row: at run time it writes the synthetic
    object of that namespace slot (:func:`slot_id`)."""
    access = {}
    info = {}
    scopes = _scopes(tree) if tree is not None else {}
    for nid, node in facts.nodes.items():
        a = ast_of.get(nid)
        rows = set()
        rebinds = set()
        imm = set()
        gdefs = ()
        if a is not None:
            try:
                w, rebinds = _node_candidates(node, a)
                if node.real:
                    imm = _immutable_rebinds(a) & rebinds
                sa = a if node.real else ast_of.get(node.stmt, a)
                if id(sa) in scopes:
                    slots = scopes[id(sa)]
                    g = _slot_binds(a, rebinds, imm, node)
                    if slots is not None:
                        g &= slots
                    gdefs = tuple(sorted(g))
            except Exception as e:   # never fail the analysis of a file for this
                facts.warnings.append(f"{facts.rel}:{node.line}: heap analysis failed: {type(e).__name__}: {e}")
                continue
            # def rows only for variables def.facts lists, use rows for those use.facts lists
            for (v, at) in w.defs:
                if v in node.defs:
                    rows.add((v, at, "def"))
            for v in node.uses:
                rows.add((v, "-", "use"))
            for (v, at) in w.attr_uses:
                if v in node.uses:
                    rows.add((v, at, "use"))
        rows = sorted(rows)
        doc = sorted(set(rows) | {(v, "-", "def") for v in gdefs})
        if doc:
            access[nid] = doc
        if rows or rebinds or gdefs:
            info[nid] = _compile(rows, rebinds - imm, imm, gdefs)
    facts.heap_access = access
    facts.heap_info = info


def _compile(rows, rebinds, imm, gdefs=()):
    """Run-time form: (groups, any_def, rebinds, imm, gdefs); a group is
    (var, root_def, root_use, attrs_def, attrs_use); `imm`: names the statement rebinds to
    an immutable scalar, `rebinds`: the other names it rebinds, `gdefs`: the namespace slots
    (module globals, class attributes) it binds."""
    g = {}
    for (v, at, mode) in rows:
        e = g.setdefault(v, [False, False, [], []])
        if at == "-":
            e[0 if mode == "def" else 1] = True
        else:
            e[2 if mode == "def" else 3].append(at)
    groups = tuple((v, e[0], e[1], tuple(e[2]), tuple(e[3])) for v, e in sorted(g.items()))
    any_def = any(e[0] or e[2] for e in g.values())
    return (groups, any_def, tuple(sorted(rebinds)), tuple(sorted(imm)), tuple(gdefs))


# ---------------------------------------------------------------------------- run-time side

_MISSING = object()
_NOT_MUTABLE_EXACT = frozenset([
    type(None), bool, int, float, complex, str, bytes, tuple, frozenset, range, type,
    types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
    types.MethodWrapperType, types.WrapperDescriptorType, types.MethodDescriptorType,
    types.ClassMethodDescriptorType, types.CodeType, type(Ellipsis), type(NotImplemented),
])
_NOT_MUTABLE = (int, float, complex, str, bytes, tuple, frozenset, type, types.ModuleType,
                types.FunctionType)
_DICT_TYPES = (dict, types.MappingProxyType)
_obj_getattribute = object.__getattribute__
_CO_OPTIMIZED = 0x0001
# On CPython < 3.13 f_locals is a snapshot dict kept in the frame (PEP 667 changed that).
_SNAPSHOT = sys.version_info < (3, 13)


def _mutable_id(v):
    """id(v) if v is a mutable object worth following, else 0 (never calls user code:
    type() and issubclass on built-in classes only)."""
    tp = type(v)
    if tp in _NOT_MUTABLE_EXACT:
        return 0
    if issubclass(tp, _NOT_MUTABLE):
        return 0
    return id(v)


def _inst_dict(v):
    """The __dict__ of v (plain instance attributes; a class's or module's namespace), or
    None.  No getattr: properties, descriptors and __getattr__ are never run."""
    tp = type(v)
    if tp is type(None) or tp is int or tp is str or tp is float or tp is bool or tp is tuple:
        return None
    try:
        if not tp.__dictoffset__:
            return None          # no instance dict (list, dict, __slots__ classes)
        d = _obj_getattribute(v, "__dict__")
    except Exception:
        return None
    if type(d) not in _DICT_TYPES:
        return None
    return d


# ---- namespace slots: module globals and class attributes as heap cells
# A binding of a module global or a class attribute (`LIMIT = 10` in a module body,
# `_VALID_URL = ...` in a class body, `global n; n = 0` in a function) is recorded as a
# mutation of a synthetic object, one per (namespace, name), and a read of that global
# (`LIMIT` in any function of the module, `mod.LIMIT`) or class attribute (`self._VALID_URL`
# not shadowed by the instance, `cls.X`, `C.X`) as a use of it: the core then links the read
# to the binding across frames (R_HEAP), as it does for mutable objects.  The ids are
# SLOT_BASE + n: above every CPython id() (a user-space address, < 2**57 on 64-bit
# platforms), stable for the whole run (the setup recording and every test share them).
SLOT_BASE = 1 << 60
_slots = {}              # ("m", module, name) / ("c", module, class qualname, name) -> id
_type_mro = type.__dict__["__mro__"].__get__
_type_dict = type.__dict__["__dict__"].__get__
_type_qualname = type.__dict__["__qualname__"].__get__


def slot_id(key, create=False):
    """The synthetic object id of a namespace slot (None: never bound, when not `create`)."""
    sid = _slots.get(key)
    if sid is None and create:
        sid = _slots[key] = SLOT_BASE + len(_slots)
    return sid


def _attr_slot(v, d, a):
    """The namespace slot that reading attribute `a` of `v` (instance dict `d`) reads: the
    module's global, or the class attribute found along the class's MRO (not for an instance
    whose own __dict__ has `a`); None otherwise.  Runs no user code."""
    try:
        tp = type(v)
        if issubclass(tp, types.ModuleType):
            if d is not None and a in d:
                return ("m", d.get("__name__"), a)
            return None
        if issubclass(tp, type):
            chain = _type_mro(v)
        else:
            if d is not None and a in d:
                return None
            chain = _type_mro(tp)
        for c in chain:
            cd = _type_dict(c)
            if a in cd:
                key = ("c", cd.get("__module__"), _type_qualname(c), a)
                hash(key)
                return key
    except Exception:
        pass
    return None


class _Frame:
    """Per-frame state: ids of fast locals seen since their last rebinding (ints only), and
    whether f_locals was read and the snapshot may since hold a rebound local's old value."""
    __slots__ = ("cache", "snap", "dirty", "kind", "mod")

    def __init__(self, kind):
        self.cache = {}
        self.snap = False
        self.dirty = False
        self.kind = kind         # (optimized, cacheable fast locals, cell/free names)
        self.mod = _MISSING      # the module's __name__ (namespace slots)


class HeapRecorder:
    """Heap rows of one traced test: ``rows`` is a list of (step index, var, obj id, "def" /
    "use") in step order."""

    def __init__(self, mutated=None):
        self.rows = []
        # ids of objects a def row recorded so far (a test starts with those of the setup
        # recording, which its trace begins with)
        self.mutated = set(mutated) if mutated else set()
        self.frames = {}         # frame id -> _Frame
        self.kinds = {}          # method id -> (optimized, cacheable names, cell names)
        self.errors = []

    # ------------------------------------------------------------ per frame
    def _frame(self, rec, frame):
        fs = self.frames.get(rec.fid)
        if fs is None:
            k = self.kinds.get(rec.method.id)
            if k is None:
                co = frame.f_code
                opt = bool(co.co_flags & _CO_OPTIMIZED)
                cells = frozenset(co.co_cellvars) | frozenset(co.co_freevars)
                k = (opt, frozenset(co.co_varnames) - cells, cells)
                self.kinds[rec.method.id] = k
            fs = self.frames[rec.fid] = _Frame(k)
        return fs

    def frame_end(self, rec, frame):
        """The frame returns (or yields): a stale snapshot of its locals must not keep a
        rebound or deleted local's old value alive while the frame object lives on (a
        traceback, or a cycle through one: `except E as e` deletes `e` and `exc_info = None`
        breaks a cycle, which a snapshot taken before would keep). Any snapshot is refreshed,
        not only one a rebinding made dirty: a deletion (`del x`, the end of `except ... as
        e`) is no step."""
        try:
            fs = self.frames.pop(rec.fid, None)
            if fs is not None and (fs.dirty or fs.snap) and frame is not None:
                frame.f_locals
        except Exception as e:
            self._error(e)

    def finish(self, errors, keep_mutated=False):
        """The rows (the test ended); the recorder's own errors go to `errors`."""
        errors.extend(self.errors)
        self.frames = {}
        if not keep_mutated:
            self.mutated = set()
        return self.rows

    def _error(self, e):
        if len(self.errors) < 5:
            self.errors.append(f"heap: {type(e).__name__}: {e}")

    # ------------------------------------------------------------ per step
    def step(self, rec, idx, nid, frame):
        """Step `idx` of frame `rec` (Python frame `frame`) runs node `nid`: record its heap
        rows, with the values bound before the statement runs."""
        try:
            info = rec.method.facts.heap_info.get(nid)
            fs = self.frames.get(rec.fid)
            if info is None:
                if fs is not None and fs.dirty and frame is not None:
                    frame.f_locals      # refresh the snapshot (a rebound local's old value)
                    fs.dirty = False
                return
            if frame is None:
                return
            if fs is None:
                fs = self._frame(rec, frame)
            self._record(fs, idx, info, frame)
        except Exception as e:
            self._error(e)

    def relabel(self, rec, idx, nid, frame):
        """Step `idx` turned out to be the pseudo-statement `nid` (an operand evaluated first):
        its rows are those of `nid`."""
        try:
            rows = self.rows
            i = len(rows)
            while i > 0 and rows[i - 1][0] > idx:
                i -= 1
            j = i
            while j > 0 and rows[j - 1][0] == idx:
                j -= 1
            later = rows[i:]
            del rows[j:]
            info = rec.method.facts.heap_info.get(nid)
            if info is not None and frame is not None:
                self._record(self._frame(rec, frame), idx, info, frame)
            rows.extend(later)
        except Exception as e:
            self._error(e)

    def _slot_rows(self, fs, idx, groups, gdefs, frame, loc, out):
        """Rows of namespace slots (module globals, class attributes): a use of every USE
        variable that is a global (or, in a class body, a class attribute) bound earlier, and
        a def of every slot the statement binds."""
        mut = self.mutated
        opt, fast, cells = fs.kind
        g = frame.f_globals
        mod = fs.mod
        if mod is _MISSING:
            mod = fs.mod = g.get("__name__")
        cls = None
        if not opt and loc is not None and loc is not g:
            cls = (loc.get("__module__"), loc.get("__qualname__"))
        if mut and _slots:          # (no slot bound yet: no use of one to record)
            for (var, rdef, ruse, adef, ause) in groups:
                if not ruse:
                    continue
                if opt:
                    if var in fast or var in cells or var not in g:
                        continue
                    key = ("m", mod, var)
                elif cls is not None and var in loc:
                    key = ("c", cls[0], cls[1], var)
                elif var in g:
                    key = ("m", mod, var)
                else:
                    continue
                sid = _slots.get(key)
                if sid is not None and sid in mut:
                    out.append((idx, var, sid, "use"))
        for var in gdefs:
            key = ("c", cls[0], cls[1], var) if cls is not None else ("m", mod, var)
            try:
                sid = slot_id(key, True)
            except TypeError:       # an unhashable __module__ / __qualname__
                continue
            out.append((idx, var, sid, "def"))
            mut.add(sid)

    def _record(self, fs, idx, info, frame):
        groups, any_def, rebinds, imm, gdefs = info
        mut = self.mutated
        loc = None
        opt, fast, cells = fs.kind
        if fs.dirty:
            loc = frame.f_locals        # refresh the snapshot (see frame_end)
            fs.dirty = False
        slot_out = None
        if gdefs or (mut and groups):
            if not opt and loc is None:
                loc = frame.f_locals    # a module / class body: its namespace (no snapshot)
            if opt or type(loc) is dict:
                slot_out = []
                self._slot_rows(fs, idx, groups, gdefs, frame, loc, slot_out)
        out = None
        if groups and (any_def or mut):
            cache = fs.cache
            new = None
            for (var, rdef, ruse, adef, ause) in groups:
                if not mut and not (rdef or adef):
                    continue            # a use can only link to an earlier mutation
                attrs = adef or (ause if mut else ())
                oid = None if attrs or not opt else cache.get(var)
                if oid is None:
                    # the value bound to var: locals, then globals (builtins: skipped)
                    if opt:
                        if var in fast or var in cells:
                            if loc is None:
                                loc = frame.f_locals
                            v = loc.get(var, _MISSING)
                        else:
                            v = frame.f_globals.get(var, _MISSING)
                    else:
                        # module / class body: its namespace (a custom __prepare__ mapping:
                        # skipped, its methods are user code), then globals
                        if loc is None:
                            loc = frame.f_locals
                        if type(loc) is not dict:
                            continue
                        v = loc.get(var, _MISSING)
                        if v is _MISSING:
                            v = frame.f_globals.get(var, _MISSING)
                    if v is _MISSING:
                        continue
                    oid = _mutable_id(v)
                    if opt and var in fast:
                        cache[var] = oid
                    if attrs:
                        d = _inst_dict(v)
                        if d is not None:
                            for a in adef:
                                x = d.get(a, _MISSING)
                                if x is not _MISSING:
                                    xid = _mutable_id(x)
                                    if xid:
                                        if new is None:
                                            new = []
                                        new.append((var, xid))
                        if mut:
                            for a in ause:
                                x = d.get(a, _MISSING) if d is not None else _MISSING
                                if x is not _MISSING:
                                    xid = _mutable_id(x)
                                    if xid in mut:
                                        if out is None:
                                            out = []
                                        out.append((idx, var, xid, "use"))
                                # a module global or class attribute read through the value
                                sk = _attr_slot(v, d, a)
                                if sk is not None:
                                    sid = _slots.get(sk)
                                    if sid is not None and sid in mut:
                                        if out is None:
                                            out = []
                                        out.append((idx, var, sid, "use"))
                        x = d = None
                    v = None
                if oid:
                    if ruse and oid in mut:
                        if out is None:
                            out = []
                        out.append((idx, var, oid, "use"))
                    if rdef:
                        if new is None:
                            new = []
                        new.append((var, oid))
            if new is not None:
                if out is None:
                    out = []
                for (var, oid) in new:
                    out.append((idx, var, oid, "def"))
                    mut.add(oid)
        if slot_out:
            out = slot_out if out is None else out + slot_out
        if out is not None:
            if len(out) > 1:
                out = list(dict.fromkeys(out))
            rows = self.rows
            if rows and rows[-1][0] > idx:
                # user code ran during the evaluation above and recorded later steps: a
                # finalizer (`__del__`, weakref callback) run by the refresh of the locals
                # snapshot or by the garbage collector, traced when this step is recorded
                # by a condition wrapper (ordinary code, not a trace function): keep the
                # rows in step order
                i = len(rows)
                while i > 0 and rows[i - 1][0] > idx:
                    i -= 1
                rows[i:i] = out
            else:
                rows.extend(out)
        if loc is not None and opt and _SNAPSHOT:
            fs.snap = True
        if rebinds:
            cache = fs.cache
            for var in rebinds:
                cache.pop(var, None)
            if fs.snap:
                fs.dirty = True
        if imm and opt:
            cache = fs.cache
            for var in imm:
                if var in fast:
                    cache[var] = 0      # rebound to an immutable scalar: nothing to follow
            if fs.snap:
                fs.dirty = True
        loc = None


def save(rows, path):
    """Keep a test's rows until the dump is written (None: no rows)."""
    if not rows:
        return None
    import pickle
    with open(path, "wb") as fh:
        pickle.dump(rows, fh, protocol=pickle.HIGHEST_PROTOCOL)
    return path


def load(path):
    if not path:
        return []
    import pickle
    with open(path, "rb") as fh:
        return pickle.load(fh)


def write(fh, trace_id, rows, nsteps):
    """heap.facts rows of one trace of `nsteps` steps (names are TAB/newline-free)."""
    for lo in range(0, len(rows), 65536):
        fh.write("".join([f"{trace_id}\t{i}\t{v}\t{o}\t{m}\n" for (i, v, o, m) in rows[lo:lo + 65536]
                          if i < nsteps]))
