"""Static facts of one Python source file, computed from its AST.

For every function / method / class body / module body (a *method* of the dump) this module
computes its statements (*nodes*), their DEF/USE sets (in the spirit of Table 2 of the paper),
an intra-procedural CFG with normal and exceptional edges, loop heads, formals, and the call-site
facts (positional actuals, receiver).  It also computes, for the tracer, the *regions* that map a
bytecode position back to a node, and for the instrumenter the expressions to wrap
(branch conditions, short-circuit operands, ``for`` iterables).

Nodes are statements at statement granularity, plus pseudo-statements:

* ``<id>:and`` / ``<id>:or`` -- a short-circuit operand that decides control,
* ``<id>:if``  -- the test of a conditional expression (``a if c else b``),
* ``<id>:case`` -- a ``case`` clause of a ``match`` statement,
* ``<id>:exit`` -- the implicit ``__exit__`` call at the end of a ``with`` block.

See docs/frontend-python.md for the full mapping.
"""

from __future__ import annotations

import ast
import builtins
import dis
import os
import re
import sys
import types

# Python 3.11+ maps every instruction to a source span (co_positions, co_qualname); on 3.9 and
# 3.10 an instruction has a line only (docs/frontend-python.md "Supported Pythons").
HAS_POSITIONS = hasattr(types.CodeType, "co_positions")
# 3.12 inlines list / set / dict comprehensions into the enclosing code (PEP 709): their loop's
# backward jumps are line events of the enclosing statement.
INLINED_COMPREHENSIONS = sys.version_info >= (3, 12)
# `match` (3.10+): a class no node is an instance of where the AST has no Match
_MATCH = getattr(ast, "Match", type("_NoMatch", (), {}))
# Where the positions of a `with` block's __exit__ call are not the `with` statement's span (3.11,
# 3.12: `Method.exact`), the units of that call are found by their order: the units after the
# block's body with the `with`'s line (3.10) or a context expression's span (3.13+).
EXIT_BY_ORDER = not HAS_POSITIONS or sys.version_info >= (3, 13)
# Python 3.9 compiles the __exit__ call of a `with` with the body's last line (no line event): its
# units are found in the bytecode (_with_exit_units) and their line gets opcode events.
EXIT_BY_BYTECODE = sys.version_info < (3, 10)
_BACKWARD_JUMPS = frozenset(dis.opmap[n] for n in ("JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT")
                            if n in dis.opmap)


def _with_exit_units(co):
    """Python 3.9: {line of a SETUP_WITH: offsets of its __exit__ call's units}: the exceptional
    exit (from the handler SETUP_WITH names to the next line start) and the normal one (the
    `POP_BLOCK; LOAD_CONST None; DUP_TOP; DUP_TOP; CALL_FUNCTION 3; POP_TOP; JUMP_FORWARD` just
    before the handler)."""
    out = {}
    try:
        ins = list(dis.get_instructions(co))
        starts = {off for off, _ in dis.findlinestarts(co)}
    except Exception:
        return out
    at = {i.offset: k for k, i in enumerate(ins)}
    line = None
    for k, i in enumerate(ins):
        if i.starts_line is not None:
            line = i.starts_line
        if i.opname != "SETUP_WITH" or line in out:
            continue
        j = at.get(i.argval)
        if j is None:
            continue
        units = set()
        while j < len(ins) and (j == at[i.argval] or ins[j].offset not in starts):
            units.add(ins[j].offset)
            j += 1
        j = at[i.argval] - 1
        back = []
        while j > k and ins[j].opname in ("LOAD_CONST", "DUP_TOP", "CALL_FUNCTION", "POP_TOP", "JUMP_FORWARD"):
            back.append(ins[j].offset)
            j -= 1
        if j > k and ins[j].opname == "POP_BLOCK" and len(back) >= 4:
            units.update(back)
            units.add(ins[j].offset)
        out[line] = units
    return out


def code_positions(co):
    """``(line, end line, col, end col)`` of every 2-byte code unit of `co` (``co_positions()``).
    Before Python 3.11 only the line is known: ``(line, line, None, None)``."""
    if HAS_POSITIONS:
        return list(co.co_positions())
    n = len(co.co_code) // 2
    out = [(None, None, None, None)] * n
    if hasattr(co, "co_lines"):         # 3.10
        for start, end, line in co.co_lines():
            if line is not None:
                p = (line, line, None, None)
                for i in range(start // 2, min(end // 2, n)):
                    out[i] = p
    else:                               # 3.9
        starts = list(dis.findlinestarts(co))
        for k, (off, line) in enumerate(starts):
            end = starts[k + 1][0] if k + 1 < len(starts) else 2 * n
            p = (line, line, None, None)
            for i in range(off // 2, min(end // 2, n)):
                out[i] = p
    return out

# Built-in functions known not to mutate their arguments: names passed to them are not added
# to DEF (the "reference arguments may be defined" rule of Table 2 is over-approximate enough).
PURE_BUILTINS = frozenset(
    """abs all any ascii bin bool callable chr complex divmod enumerate filter float format
    frozenset getattr hasattr hash hex id int isinstance issubclass iter len list map max min
    next oct open ord pow print range repr reversed round set sorted str sum tuple type zip dict""".split()
)

OPAQUE_CODE_NAMES = frozenset({"<lambda>", "<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})

BR = "__prosecutor_br__"  # wraps a branch condition leaf: returns bool(value), maybe flipped
SC = "__prosecutor_sc__"  # wraps a value-context short-circuit operand: returns the value
IT = "__prosecutor_it__"  # wraps the iterable of a for loop


class StaticError(Exception):
    """A file that cannot be analysed (syntax error): message names file:line."""


class Node:
    __slots__ = (
        "id", "method", "kind", "file", "line", "col", "text", "defs", "uses", "real",
        "actuals", "receiver", "tsucc", "fsucc", "stmt", "wrapped", "code", "copy",
    )

    def __init__(self, nid, method, kind, file, line, col, text, real, stmt=None):
        self.id = nid
        self.method = method
        self.kind = kind
        self.file = file
        self.line = line
        self.col = col
        self.text = text
        self.defs = set()
        self.uses = set()
        self.real = real            # a statement (True) or a pseudo-statement (False)
        self.actuals = []           # positional actual variables of the main call (None = not a var)
        self.receiver = None        # receiver variable of the main call
        self.tsucc = None           # branch: target when the condition is true (raw: id or Label)
        self.fsucc = None           # branch: target when false
        self.stmt = stmt or nid     # the statement this (pseudo-)node belongs to
        self.wrapped = False        # its outcome is reported by an instrumentation wrapper
        self.code = False           # some bytecode maps to it (it can be executed)
        self.copy = False           # it only copies one variable's value (copy.facts)


class Method:
    __slots__ = (
        "id", "role", "qualname", "firstlineno", "nodes", "entry", "formals", "this_formal",
        "regions", "exact", "line_nodes", "multi_lines", "calls", "params", "facts",
        "_line_index", "with_exits", "defline",
    )

    def __init__(self, mid, role, qualname, firstlineno, facts):
        self.id = mid
        self.role = role
        self.qualname = qualname
        self.firstlineno = firstlineno
        self.defline = None         # the `def` / `class` line (method_line.facts; not a module's)
        self.nodes = []             # node ids in source order
        self.entry = None
        self.formals = []           # positional formals without the receiver
        self.this_formal = None
        self.regions = []           # (l1, c1, l2, c2, node id)
        self.exact = {}             # exact position span -> node id (with-exit)
        # (exit node id, `with` line, body start, block end, context expression spans)
        self.with_exits = []
        self.line_nodes = {}        # line -> first node id starting there (fallback)
        self.multi_lines = set()    # lines where two or more event-driven nodes have code
        self.calls = {}             # node id -> list of call descriptors (for bind.facts)
        self.params = None          # parameter descriptor (for bind.facts)
        self.facts = facts
        self._line_index = None

    def _build_line_index(self):
        """line -> the regions covering it (so a lookup does not scan the whole method)."""
        idx = {}
        for r in self.regions:
            for line in range(r[0], r[2] + 1):
                idx.setdefault(line, []).append(r)
        self._line_index = idx
        return idx

    def node_at(self, pos, line):
        """The node a bytecode position belongs to (innermost region), or None."""
        l, el, c, ec = pos if pos is not None else (None, None, None, None)
        if l is None or c is None:
            return self.line_nodes.get(line) if HAS_POSITIONS else self.node_at_line(line)
        n = self.exact.get((l, el, c, ec))
        if n is not None:
            return n
        return self._best_region(l, lambda l1, c1, l2, c2: (l1, c1, -l2, -c2) if (l1, c1) <= (l, c) < (l2, c2)
                                 else None)

    def node_at_line(self, line):
        """Python < 3.11 (an instruction has a line, no column): the node of a line.  Of the
        regions starting on the line, the leftmost (the statement rather than an operand of it;
        of two statements on one line, the first); else the innermost region covering the line
        (a continuation line of a multi-line statement)."""
        if line is None:
            return None
        return self._best_region(line, lambda l1, c1, l2, c2: (1, -c1, l2, c2) if l1 == line
                                 else (0, l1, c1, -l2, -c2))

    def _best_region(self, line, key):
        """The node of the region covering `line` (the line index) whose `key(l1, c1, l2, c2)` is
        largest; a key of None leaves the region out."""
        idx = self._line_index
        if idx is None:
            idx = self._build_line_index()
        best = bkey = None
        for (l1, c1, l2, c2, nid) in idx.get(line, ()):
            k = key(l1, c1, l2, c2)
            if k is not None and (bkey is None or k > bkey):
                best, bkey = nid, k
        return best

    def code_nodes(self, co, positions=None):
        """The node of every code unit of `co` (None: no node), from its positions."""
        if positions is None:
            positions = code_positions(co)
        out = [self.node_at(pos, pos[0]) for pos in positions]
        if EXIT_BY_ORDER and self.with_exits:
            for (xid, wline, body, end, items) in self.with_exits:
                inside = False
                for i, pos in enumerate(positions):
                    ln, eln, c, ec = pos
                    if ln is None:
                        continue
                    if not inside:
                        if c is None:
                            inside = wline < ln and body[0] <= ln <= end[0]
                        else:
                            inside = body <= (ln, c) <= end
                    elif (ln == wline) if c is None else ((ln, eln, c, ec) in items):
                        out[i] = xid
            if EXIT_BY_BYTECODE:
                units = _with_exit_units(co)
                for (xid, wline, body, end, items) in self.with_exits:
                    for off in units.get(wline, ()):
                        if off // 2 < len(out):
                            out[off // 2] = xid
        return out


class Label:
    __slots__ = ("target",)

    def __init__(self, target=None):
        self.target = target


def resolve(t):
    seen = 0
    while isinstance(t, Label):
        t = t.target
        seen += 1
        if seen > 10000:
            return None
    return t


def root_var(e):
    """The variable at the root of an attribute/subscript chain (`a` in `a.b[c].d`)."""
    while True:
        if isinstance(e, ast.Name):
            return e.id
        if isinstance(e, (ast.Attribute, ast.Subscript, ast.Starred)):
            e = e.value
        else:
            return None


class _Names(ast.NodeVisitor):
    """Collects used names, walrus targets and call facts of an expression."""

    def __init__(self):
        self.uses = set()
        self.defs = set()
        self.bound = set()

    def visit_Name(self, n):
        if isinstance(n.ctx, ast.Load):
            self.uses.add(n.id)

    def visit_NamedExpr(self, n):
        self.visit(n.value)
        self.defs.add(n.target.id)

    def visit_Lambda(self, n):
        inner = _Names()
        inner.visit(n.body)
        for d in n.args.defaults + [d for d in n.args.kw_defaults if d is not None]:
            self.visit(d)
        params = {a.arg for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs}
        if n.args.vararg:
            params.add(n.args.vararg.arg)
        if n.args.kwarg:
            params.add(n.args.kwarg.arg)
        self.uses |= inner.uses - params

    def _comp(self, n, elts):
        inner = _Names()
        targets = set()
        for g in n.generators:
            inner.visit(g.iter)
            for t in ast.walk(g.target):
                if isinstance(t, ast.Name):
                    targets.add(t.id)
            for cond in g.ifs:
                inner.visit(cond)
        for e in elts:
            inner.visit(e)
        self.uses |= inner.uses - targets
        self.defs |= inner.defs - targets  # walrus in a comprehension binds in the enclosing scope

    def visit_ListComp(self, n):
        self._comp(n, [n.elt])

    visit_SetComp = visit_ListComp
    visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, n):
        self._comp(n, [n.key, n.value])

    def visit_Call(self, n):
        self.generic_visit(n)
        pure = isinstance(n.func, ast.Name) and n.func.id in PURE_BUILTINS and not hasattr(builtins, "__prosecutor_shadow__")
        if not pure:
            for a in n.args:
                v = a.value if isinstance(a, ast.Starred) else a
                if isinstance(v, ast.Name):
                    self.defs.add(v.id)
            for k in n.keywords:
                if isinstance(k.value, ast.Name):
                    self.defs.add(k.value.id)


def expr_names(e):
    v = _Names()
    if e is not None:
        v.visit(e)
    return v


def target_facts(t, defs, uses):
    """DEF/USE of an assignment target (Table 2: a store u.f = t / u[x] = t defines u)."""
    if isinstance(t, ast.Name):
        defs.add(t.id)
    elif isinstance(t, (ast.Tuple, ast.List)):
        for e in t.elts:
            target_facts(e, defs, uses)
    elif isinstance(t, ast.Starred):
        target_facts(t.value, defs, uses)
    elif isinstance(t, (ast.Attribute, ast.Subscript)):
        r = root_var(t)
        if r is not None:
            defs.add(r)
            uses.add(r)
        inner = t
        while isinstance(inner, (ast.Attribute, ast.Subscript)):
            if isinstance(inner, ast.Subscript):
                n = expr_names(inner.slice)
                uses |= n.uses
                defs |= n.defs
            inner = inner.value
        if not isinstance(inner, ast.Name):
            n = expr_names(inner)
            uses |= n.uses
            defs |= n.defs


def pattern_captures(p, out):
    for n in ast.walk(p):
        if isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            out.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            out.add(n.rest)


def one_line(text, limit=160):
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def main_call(s):
    """The call a statement is mainly about (for actual/receiver facts), or None."""
    v = None
    if isinstance(s, ast.Expr):
        v = s.value
    elif isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)):
        v = s.value
    if isinstance(v, ast.Await):
        v = v.value
    return v if isinstance(v, ast.Call) else None


def call_descr(c):
    """Descriptor of a call site used to compute run-time bindings."""
    func = c.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    recv = root_var(func.value) if isinstance(func, ast.Attribute) else None
    pos = []
    star = None
    for a in c.args:
        if isinstance(a, ast.Starred):
            star = a.value.id if isinstance(a.value, ast.Name) else None
            break
        pos.append(a.id if isinstance(a, ast.Name) else None)
    kw = {}
    dstar = None
    for k in c.keywords:
        if k.arg is None:
            dstar = k.value.id if isinstance(k.value, ast.Name) else None
        else:
            kw[k.arg] = k.value.id if isinstance(k.value, ast.Name) else None
    return (name, recv, tuple(pos), star, kw, dstar)


class FileFacts:
    """All static facts of one file."""

    def __init__(self, path, rel, role, source):
        self.path = path
        self.rel = rel
        # ids must not contain TAB / newline (docs/trace-format.md)
        self.rel_id = rel.replace("\t", " ").replace("\n", " ").replace("\r", " ")
        self.role = role
        self.source = source
        self.methods = []
        self.by_key = {}
        self.by_qualname = {}
        self.by_name_line = {}      # (name, first line) -> method (Python < 3.11: no co_qualname)
        self.nodes = {}
        self.edges = set()          # (from, to, kind)
        self.loop_heads = set()
        self.wrap = {}              # id(ast expr) -> (wrapper name, node id)
        # id(ast expr) -> (lineno, col, end_lineno, end_col) of the wrapper call when it must
        # not carry the expression's own location (a whole short-circuit condition, see cond)
        self.wrap_loc = {}
        self.warnings = []
        self.heap_access = {}       # node id -> [(var, attr, mode)] (heap.py)
        self.heap_info = {}         # node id -> run-time heap descriptor (heap.py)
        self._raw_edges = []
        self._loop_labels = []
        self._method_ids = set()

    # ---------------------------------------------------------------- lookup
    def method_for_code(self, co):
        return self.method_for(co.co_name, getattr(co, "co_qualname", None), co.co_firstlineno)

    def method_for(self, name, qual, firstlineno):
        """The method of a code object with this name, qualified name (None before Python
        3.11) and first line."""
        if name in OPAQUE_CODE_NAMES:
            return None
        if qual is None:
            # Python < 3.11: no co_qualname; the name and first line (of the first decorator)
            # tell a method apart as well
            m = self.by_name_line.get((name, firstlineno))
            if m is not None:
                return m
            qual = name
        m = self.by_key.get((qual, firstlineno))
        if m is not None:
            return m
        ms = self.by_qualname.get(qual)
        if ms:
            if len(ms) == 1:
                return ms[0]
            best = min(ms, key=lambda m: abs(m.firstlineno - firstlineno))
            return best
        return None


class Analyzer:
    def __init__(self, facts: FileFacts, tree: ast.Module, instrument: bool):
        self.f = facts
        self.tree = tree
        self.instrument = instrument   # create wrapper-driven pseudo nodes (app code)
        # line splitting as the tokenizer does it (str.splitlines also splits at \f, \v, ...)
        self.lines = re.split(r"\r\n|\r|\n", facts.source)
        self.blines = [ln.encode("utf-8", "surrogatepass") for ln in self.lines]
        self.ast_of = {}            # node id -> the AST node it was made from (heap.py)

    # ------------------------------------------------------------ helpers
    def segment(self, n, limit=400):
        """Source text of a node (AST columns are UTF-8 byte offsets), at most ~limit chars;
        ast.get_source_segment re-splits the whole file on every call."""
        try:
            l1, l2, c1, c2 = n.lineno, n.end_lineno, n.col_offset, n.end_col_offset
            if l2 is None or c2 is None:
                return None
            if l1 == l2:
                return self.blines[l1 - 1][c1:c2].decode("utf-8", "replace")
            parts = [self.blines[l1 - 1][c1:].decode("utf-8", "replace")]
            size = len(parts[0])
            for ln in range(l1 + 1, l2):
                if size > limit:
                    break
                t = self.blines[ln - 1].decode("utf-8", "replace")
                parts.append(t)
                size += len(t)
            else:
                parts.append(self.blines[l2 - 1][:c2].decode("utf-8", "replace"))
            return "\n".join(parts)
        except Exception:
            return None

    def text(self, n):
        seg = self.segment(n)
        if seg is None:
            try:
                seg = self.lines[n.lineno - 1].strip()
            except Exception:
                seg = ""
        if isinstance(n, (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try,
                          ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, _MATCH,
                          ast.ExceptHandler)) or getattr(ast, "TryStar", None) and isinstance(n, getattr(ast, "TryStar")):
            seg = seg.splitlines()[0] if seg else ""
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                try:
                    seg = self.lines[n.lineno - 1].strip()
                except Exception:
                    pass
        return one_line(seg)

    def new_node(self, m, ast_node, kind, real, suffix=None, stmt=None, line=None, col=None, text=None):
        line = ast_node.lineno if line is None else line
        col = ast_node.col_offset if col is None else col
        nid = f"{self.f.rel_id}:{line}:{col}"
        if suffix:
            nid += ":" + suffix
        base, k = nid, 2
        while nid in self.f.nodes:
            nid = f"{base}#{k}"
            k += 1
        n = Node(nid, m.id, kind, self.f.rel, line, col, text if text is not None else self.text(ast_node), real, stmt)
        self.f.nodes[nid] = n
        self.ast_of[nid] = ast_node
        m.nodes.append(nid)
        return n

    def region(self, m, nid, l1, c1, l2, c2):
        m.regions.append((l1, c1, l2, c2, nid))
        m.line_nodes.setdefault(l1, nid)

    def edge(self, a, b, kind="normal"):
        if a is None or b is None:
            return
        self.f._raw_edges.append((a, b, kind))

    # ------------------------------------------------------------ methods
    def new_method(self, qualname, firstlineno, ast_def):
        mid = f"{self.f.rel_id}::{qualname}"
        if mid in self.f._method_ids:
            mid = f"{mid}@{firstlineno}"
        self.f._method_ids.add(mid)
        m = Method(mid, self.f.role, qualname, firstlineno, self.f)
        self.f.methods.append(m)
        self.f.by_key[(qualname, firstlineno)] = m
        self.f.by_qualname.setdefault(qualname, []).append(m)
        self.f.by_name_line.setdefault((qualname.rsplit(".", 1)[-1], firstlineno), m)
        return m

    def nested(self, qual_prefix, s, in_class):
        """Create the method of a nested def/class statement and analyse its body."""
        first = min([s.lineno] + [d.lineno for d in s.decorator_list])
        qual = f"{qual_prefix}{s.name}"
        m = self.new_method(qual, first, s)
        m.defline = s.lineno        # after its decorators (`first` is the first decorator's)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = s.args
            pos = [x.arg for x in a.posonlyargs + a.args]
            static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in s.decorator_list)
            if in_class and pos and not static:
                m.this_formal = pos[0]
                m.formals = pos[1:]
            else:
                m.formals = pos
            m.params = (
                tuple(pos),
                tuple(x.arg for x in a.kwonlyargs),
                a.vararg.arg if a.vararg else None,
                a.kwarg.arg if a.kwarg else None,
                m.this_formal,
            )
        child_prefix = qual + "." if isinstance(s, ast.ClassDef) else qual + ".<locals>."
        self.prefix_stack.append((child_prefix, isinstance(s, ast.ClassDef)))
        self.raw_entries[m.id] = self.block(m, s.body, None, Ctx())
        self.prefix_stack.pop()
        return m

    # ------------------------------------------------------------ expressions
    def vchain(self, m, e, nxt, stmt):
        """Control flow of evaluating expression e (value context) and then going to nxt."""
        if e is None or not self.instrument:
            return nxt
        if isinstance(e, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return nxt
        if isinstance(e, ast.BoolOp):
            suffix = "and" if isinstance(e.op, ast.And) else "or"
            cont = self.vchain(m, e.values[-1], nxt, stmt)
            for op in reversed(e.values[:-1]):
                p = self.pseudo(m, op, suffix, stmt, SC)
                if suffix == "and":
                    p.tsucc, p.fsucc = cont, nxt
                else:
                    p.tsucc, p.fsucc = nxt, cont
                self.edge(p.id, cont)
                self.edge(p.id, nxt)
                cont = self.vchain(m, op, p.id, stmt)
            return cont
        if isinstance(e, ast.IfExp):
            b = self.vchain(m, e.body, nxt, stmt)
            o = self.vchain(m, e.orelse, nxt, stmt)
            return self.cond(m, e.test, b, o, None, stmt, "if")
        cont = nxt
        for child in reversed([c for c in ast.iter_child_nodes(e) if isinstance(c, ast.expr)]):
            cont = self.vchain(m, child, cont, stmt)
        return cont

    def pseudo(self, m, e, suffix, stmt, wrapper):
        p = self.new_node(m, e, "branch", False, suffix=suffix, stmt=stmt)
        p.wrapped = True
        p.code = True
        ns = expr_names(e)
        p.uses |= ns.uses
        p.defs |= {w.target.id for w in ast.walk(e) if isinstance(w, ast.NamedExpr)}
        self.region(m, p.id, e.lineno, e.col_offset, e.end_lineno, e.end_col_offset)
        self.f.wrap[id(e)] = (wrapper, p.id)
        return p

    @staticmethod
    def _is_walrus(e, name):
        return any(isinstance(n, ast.NamedExpr) and n.target.id == name for n in ast.walk(e))

    @staticmethod
    def _short_circuit(e):
        """Is condition `e` decided by short-circuit operands (`a or b`, `not (a and b)`)?"""
        return isinstance(e, ast.BoolOp) or (
            isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not) and isinstance(e.operand, ast.BoolOp))

    @staticmethod
    def _const_truth(e):
        """The truth value of condition `e` when it cannot depend on run-time values (a constant
        operand decides it: `x or True`), else None."""
        if isinstance(e, ast.Constant):
            return bool(e.value)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            t = Analyzer._const_truth(e.operand)
            return None if t is None else not t
        if isinstance(e, ast.BoolOp):
            ts = [Analyzer._const_truth(v) for v in e.values]
            if isinstance(e.op, ast.Or):
                return True if True in ts else (False if all(t is False for t in ts) else None)
            return False if False in ts else (True if all(t is True for t in ts) else None)
        return None

    def cond(self, m, e, T, F, final, stmt, suffix):
        """Control flow of a condition deciding between T and F. `final` is the statement node
        that evaluates the last leaf (None: every leaf is a pseudo-statement).

        A condition with short-circuit operands (`if a or b:`, `not (a and b)`, the test of
        `x if a or b else y`) is decided by one node for the WHOLE condition: the statement
        (`final`), or for a ternary test a `:if` pseudo-statement over the test.  Every operand
        but the last is a pseudo-statement whose deciding outcome goes to that node (`a` true in
        `a or b`), the other to the next operand; the last operand is evaluated by that node.
        The instrumentation wraps the whole condition, so the node's outcome is the truth value
        of the condition whichever operand decided it, and flipping it inverts the condition."""
        if self.instrument and self._short_circuit(e):
            if final is not None:
                node = self.f.nodes[final]
            else:
                node = self.pseudo(m, e, suffix, stmt, BR)
            const = self._const_truth(e)
            node.tsucc = T if const is not False else None
            node.fsucc = F if const is not True else None
            if const is None:
                node.wrapped = True
                node.code = True        # the wrapper's call runs as the node (see below)
                self.f.wrap[id(e)] = (BR, node.id)
                # the wrapper call (its CALL instruction, after the operands) maps to the node,
                # not to the first operand whose region starts where the condition starts
                first = e.operand if isinstance(e, ast.UnaryOp) else e
                first = first.values[0]
                self.f.wrap_loc[id(e)] = (first.end_lineno, first.end_col_offset, e.end_lineno, e.end_col_offset)
            # (a constant condition: the statement is not wrapped, its outcome is inferred; a
            # ternary's `:if` stays wrapped, as a constant ternary test is)
            if node.tsucc is not None:
                self.edge(node.id, node.tsucc)
            if node.fsucc is not None:
                self.edge(node.id, node.fsucc)
            return self.operands(m, e, node.id, node.id, True, stmt, suffix)
        if self.instrument and isinstance(e, ast.BoolOp):
            sfx = "and" if isinstance(e.op, ast.And) else "or"
            cont = self.cond(m, e.values[-1], T, F, final, stmt, sfx)
            for op in reversed(e.values[:-1]):
                if sfx == "and":
                    cont = self.cond(m, op, cont, F, None, stmt, sfx)
                else:
                    cont = self.cond(m, op, T, cont, None, stmt, sfx)
            return cont
        if self.instrument and isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not) and isinstance(e.operand, ast.BoolOp):
            return self.cond(m, e.operand, F, T, final, stmt, suffix)
        if final is not None:
            node = self.f.nodes[final]
        else:
            node = self.pseudo(m, e, suffix, stmt, BR)
        const = isinstance(e, ast.Constant)
        if const:
            node.tsucc = T if e.value else None
            node.fsucc = None if e.value else F
        else:
            node.tsucc, node.fsucc = T, F
            if self.instrument and final is not None:
                node.wrapped = True
                self.f.wrap[id(e)] = (BR, node.id)
        if node.tsucc is not None:
            self.edge(node.id, node.tsucc)
        if node.fsucc is not None:
            self.edge(node.id, node.fsucc)
        return self.vchain(m, e, node.id, stmt)

    def operands(self, m, e, T, F, last, stmt, suffix):
        """Operands of a short-circuit condition decided by node T == F (see cond): `e` true
        goes to T, false to F; `last`: e ends with the condition's last operand, which the
        deciding node evaluates itself."""
        if isinstance(e, ast.BoolOp):
            sfx = "and" if isinstance(e.op, ast.And) else "or"
            cont = self.operands(m, e.values[-1], T, F, last, stmt, sfx)
            for op in reversed(e.values[:-1]):
                if sfx == "and":
                    cont = self.operands(m, op, cont, F, False, stmt, sfx)
                else:
                    cont = self.operands(m, op, T, cont, False, stmt, sfx)
            return cont
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not) and isinstance(e.operand, ast.BoolOp):
            return self.operands(m, e.operand, F, T, last, stmt, suffix)
        if last:
            return self.vchain(m, e, T, stmt)
        p = self.pseudo(m, e, suffix, stmt, BR)
        if isinstance(e, ast.Constant):
            p.tsucc = T if e.value else None
            p.fsucc = None if e.value else F
        else:
            p.tsucc, p.fsucc = T, F
        if p.tsucc is not None:
            self.edge(p.id, p.tsucc)
        if p.fsucc is not None:
            self.edge(p.id, p.fsucc)
        return self.vchain(m, e, p.id, stmt)

    # ------------------------------------------------------------ statements
    def block(self, m, stmts, follow, ctx):
        cont = follow
        for s in reversed(stmts):
            cont = self.stmt(m, s, cont, ctx)
        return cont

    def exc_edges(self, nodes, ctx):
        if ctx.handler is not None:
            for n in nodes:
                self.edge(n, ctx.handler, "exceptional")

    def simple_node(self, m, s, kind):
        n = self.new_node(m, s, kind, True)
        self.region(m, n.id, s.lineno, s.col_offset, s.end_lineno, s.end_col_offset)
        return n

    def stmt(self, m, s, follow, ctx):
        k0 = len(m.nodes)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            fc = min([(s.lineno, s.col_offset)] + [(d.lineno, d.col_offset) for d in s.decorator_list])
            n = self.new_node(m, s, "assign", True)
            self.region(m, n.id, fc[0], fc[1], s.end_lineno, s.end_col_offset)
            n.defs.add(s.name)
            exprs = list(s.decorator_list)
            if isinstance(s, ast.ClassDef):
                exprs += s.bases + [k.value for k in s.keywords]
            else:
                exprs += s.args.defaults + [d for d in s.args.kw_defaults if d is not None]
            for e in exprs:
                ns = expr_names(e)
                n.uses |= ns.uses
            prefix, in_class = self.prefix_stack[-1]
            self.nested(prefix, s, isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and in_class)
            self.edge(n.id, follow)
            self.exc_edges([n.id], ctx)
            return n.id
        if isinstance(s, ast.If):
            n = self.new_node(m, s, "branch", True)
            self.region(m, n.id, s.lineno, s.col_offset, s.end_lineno, s.end_col_offset)
            ns = expr_names(s.test)
            n.uses |= ns.uses
            n.defs |= ns.defs
            self.call_facts(m, n, s, [s.test])
            t = self.block(m, s.body, follow, ctx)
            f = self.block(m, s.orelse, follow, ctx) if s.orelse else follow
            entry = self.cond(m, s.test, t, f, n.id, n.id, "and")
            self.exc_edges(self.own_nodes(m, k0, n.id), ctx)
            return entry
        if isinstance(s, ast.While):
            n = self.new_node(m, s, "branch", True)
            self.region(m, n.id, s.lineno, s.col_offset, s.end_lineno, s.end_col_offset)
            ns = expr_names(s.test)
            n.uses |= ns.uses
            n.defs |= ns.defs
            self.call_facts(m, n, s, [s.test])
            head = Label()
            f = self.block(m, s.orelse, follow, ctx) if s.orelse else follow
            t = self.block(m, s.body, head, ctx.loop(head, follow))
            entry = self.cond(m, s.test, t, f, n.id, n.id, "and")
            head.target = entry
            self.f._loop_labels.append(head)
            self.exc_edges(self.own_nodes(m, k0, n.id), ctx)
            return entry
        if isinstance(s, (ast.For, ast.AsyncFor)):
            n = self.new_node(m, s, "branch", True)
            self.region(m, n.id, s.lineno, s.col_offset, s.end_lineno, s.end_col_offset)
            target_facts(s.target, n.defs, n.uses)
            ns = expr_names(s.iter)
            n.uses |= ns.uses
            n.defs |= ns.defs
            self.call_facts(m, n, s, [s.iter])
            head = Label(n.id)
            self.f._loop_labels.append(head)
            f = self.block(m, s.orelse, follow, ctx) if s.orelse else follow
            t = self.block(m, s.body, head, ctx.loop(head, follow))
            n.tsucc, n.fsucc = t, f
            self.edge(n.id, t)
            self.edge(n.id, f)
            if self.instrument and isinstance(s, ast.For):
                n.wrapped = True
                self.f.wrap[id(s.iter)] = (IT, n.id)
            entry = self.vchain(m, s.iter, n.id, n.id)
            self.exc_edges(self.own_nodes(m, k0, n.id), ctx)
            return entry
        if isinstance(s, (ast.With, ast.AsyncWith)):
            n = self.new_node(m, s, "call", True)
            self.region(m, n.id, s.lineno, s.col_offset, s.end_lineno, s.end_col_offset)
            x = self.new_node(m, s, "call", False, suffix="exit", stmt=n.id, text="exit " + self.text(s))
            m.exact[(s.lineno, s.end_lineno, s.col_offset, s.end_col_offset)] = x.id
            if EXIT_BY_ORDER and s.body:
                items = {(i.context_expr.lineno, i.context_expr.end_lineno, i.context_expr.col_offset,
                          i.context_expr.end_col_offset) for i in s.items}
                m.with_exits.append((x.id, s.lineno, (s.body[0].lineno, s.body[0].col_offset),
                                     (s.end_lineno, s.end_col_offset), items))
            for item in s.items:
                ns = expr_names(item.context_expr)
                n.uses |= ns.uses
                n.defs |= ns.defs
                x.uses |= ns.uses
                if item.optional_vars is not None:
                    target_facts(item.optional_vars, n.defs, n.uses)
                    x.uses |= {v for v in n.defs}
            self.call_facts(m, n, s, [item.context_expr for item in s.items])
            self.edge(x.id, follow)
            self.exc_edges([x.id], ctx)
            # an exception in the body runs __exit__ and leaves to the enclosing handler: the
            # exceptional edges go there (an edge to :exit would make every statement after the
            # `with` control-dependent on the body, see docs/frontend-python.md)
            body = self.block(m, s.body, x.id, ctx)
            self.edge(n.id, body)
            cont = n.id
            for item in reversed(s.items):
                cont = self.vchain(m, item.context_expr, cont, n.id)
            self.exc_edges(self.own_nodes(m, k0, n.id), ctx)
            return cont
        if isinstance(s, ast.Try) or (hasattr(ast, "TryStar") and isinstance(s, ast.TryStar)):
            n = self.new_node(m, s, "nop", True)
            self.region(m, n.id, s.lineno, s.col_offset, s.end_lineno, s.end_col_offset)
            fin = self.block(m, s.finalbody, follow, ctx) if s.finalbody else None
            after = fin if fin is not None else follow
            # exceptions escaping the handlers (and the try body, when no handler exists) run the
            # finally block on their way out: their exceptional edges go to the enclosing handler
            hctx = ctx
            catch_ids = []
            nxt_catch = fin  # an exception no handler matches goes to finally (or leaves)
            for h in reversed(s.handlers):
                c = self.new_node(m, h, "catch", True)
                # a handler computes nothing: it binds the exception in flight, which reaches it
                # through the statement that raised (the handler is control-dependent on it)
                c.copy = True
                self.region(m, c.id, h.lineno, h.col_offset, h.end_lineno, h.end_col_offset)
                if h.name:
                    c.defs.add(h.name)
                if h.type is not None:
                    c.uses |= expr_names(h.type).uses
                hb = self.block(m, h.body, after, hctx.with_finally(fin))
                self.edge(c.id, hb)
                if h.type is not None and nxt_catch is not None:
                    self.edge(c.id, nxt_catch)
                if fin is not None:
                    self.exc_edges([c.id], hctx)
                elif ctx.handler is not None:
                    self.edge(c.id, ctx.handler, "exceptional")
                nxt_catch = c.id
                catch_ids.append(c.id)
            first_catch = nxt_catch
            els = self.block(m, s.orelse, after, hctx.with_finally(fin)) if s.orelse else after
            bctx = (ctx.with_handler(first_catch) if first_catch is not None else ctx).with_finally(fin)
            body = self.block(m, s.body, els, bctx)
            self.edge(n.id, body)
            return n.id
        if isinstance(s, _MATCH):
            n = self.new_node(m, s, "nop", True)
            self.region(m, n.id, s.lineno, s.col_offset, s.subject.end_lineno, s.subject.end_col_offset)
            ns = expr_names(s.subject)
            n.uses |= ns.uses
            n.defs |= ns.defs
            self.call_facts(m, n, s, [s.subject])
            nxt = follow
            for case in reversed(s.cases):
                p = case.pattern
                c = self.new_node(m, p, "branch", False, suffix="case", stmt=n.id, text="case " + self.text(p))
                end = case.body[-1] if case.body else p
                self.region(m, c.id, p.lineno, p.col_offset, end.end_lineno, end.end_col_offset)
                pattern_captures(p, c.defs)
                for sub in ast.walk(p):
                    if isinstance(sub, ast.MatchValue):
                        c.uses |= expr_names(sub.value).uses
                if case.guard is not None:
                    g = expr_names(case.guard)
                    c.uses |= g.uses
                    c.defs |= g.defs
                body = self.block(m, case.body, follow, ctx)
                wildcard = isinstance(p, ast.MatchAs) and p.pattern is None and case.guard is None
                c.tsucc, c.fsucc = body, (None if wildcard else nxt)
                self.edge(c.id, body)
                if not wildcard:
                    self.edge(c.id, nxt)
                self.exc_edges([c.id], ctx)
                nxt = c.id
            self.edge(n.id, nxt)
            self.exc_edges([n.id], ctx)
            return self.vchain(m, s.subject, n.id, n.id)
        # ---- simple statements
        if isinstance(s, ast.Return):
            n = self.simple_node(m, s, "return")
            n.copy = isinstance(s.value, ast.Name)      # `return x`
            ns = expr_names(s.value)
            n.uses |= ns.uses
            n.defs |= ns.defs
            self.call_facts(m, n, s)
            if ctx.finally_entry is not None:
                self.edge(n.id, ctx.finally_entry)
            entry = self.vchain(m, s.value, n.id, n.id)
            self.exc_edges(self.own_nodes(m, k0, n.id), ctx)
            return entry
        if isinstance(s, ast.Raise):
            n = self.simple_node(m, s, "throw")
            # `raise e` and a bare `raise` hand an existing exception on, as `return x` does
            n.copy = s.cause is None and (s.exc is None or isinstance(s.exc, ast.Name))
            for e in (s.exc, s.cause):
                ns = expr_names(e)
                n.uses |= ns.uses
                n.defs |= ns.defs
            self.call_facts(m, n, s, [s.exc, s.cause])
            self.exc_edges([n.id], ctx)
            return n.id
        if isinstance(s, (ast.Break, ast.Continue)):
            n = self.simple_node(m, s, "goto")
            if ctx.finally_entry is not None and ctx.finally_inside_loop:
                self.edge(n.id, ctx.finally_entry)
            if ctx.loop_head is not None:
                self.edge(n.id, ctx.loop_exit if isinstance(s, ast.Break) else ctx.loop_head)
            return n.id
        if isinstance(s, ast.Assert):
            n = self.simple_node(m, s, "branch")
            ns = expr_names(s.test)
            n.uses |= ns.uses
            n.defs |= ns.defs
            if s.msg is not None:
                n.uses |= expr_names(s.msg).uses
            self.call_facts(m, n, s, [s.test, s.msg])
            entry = self.cond(m, s.test, follow, None, n.id, n.id, "and")
            self.exc_edges(self.own_nodes(m, k0, n.id), ctx)
            return entry
        kind = "assign"
        value = None
        n = None
        if isinstance(s, ast.Expr):
            value = s.value
            if isinstance(value, ast.Constant):
                kind = "nop"
            else:
                kind = "call" if main_call(s) is not None else "assign"
            n = self.simple_node(m, s, kind)
            # `yield x` hands x's value to the consumer as `return x` does: a copy
            n.copy = isinstance(value, ast.Yield) and isinstance(value.value, ast.Name)
            ns = expr_names(value)
            n.uses |= ns.uses
            n.defs |= ns.defs
            c = main_call(s)
            if c is not None and isinstance(c.func, ast.Attribute):
                r = root_var(c.func.value)
                if r is not None:
                    n.defs.add(r)   # a call whose result is discarded defines its receiver
        elif isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            value = s.value
            kind = "call" if main_call(s) is not None else "assign"
            n = self.simple_node(m, s, kind)
            ns = expr_names(value)
            n.uses |= ns.uses
            n.defs |= ns.defs
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            # `y = x` (one plain name to one plain name): the value is x's, no operation
            n.copy = (not isinstance(s, ast.AugAssign) and isinstance(value, ast.Name)
                      and len(targets) == 1 and isinstance(targets[0], ast.Name))
            for t in targets:
                if isinstance(s, ast.AnnAssign) and s.value is None:
                    continue
                target_facts(t, n.defs, n.uses)
            if isinstance(s, ast.AugAssign):
                r = root_var(s.target)
                if r is not None:
                    n.uses.add(r)
        elif isinstance(s, ast.Delete):
            n = self.simple_node(m, s, "assign")
            for t in s.targets:
                target_facts(t, n.defs, n.uses)
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            n = self.simple_node(m, s, "assign")
            for a in s.names:
                if a.name == "*":
                    continue
                n.defs.add(a.asname or a.name.split(".")[0])
        elif isinstance(s, (ast.Global, ast.Nonlocal, ast.Pass)):
            n = self.simple_node(m, s, "nop")
        elif type(s).__name__ == "TypeAlias":
            # `type X[T] = ...` (3.12+, PEP 695): binds X; the value is evaluated lazily, when
            # X.__value__ is first read, so the statement reads nothing
            n = self.simple_node(m, s, "assign")
            if isinstance(s.name, ast.Name):
                n.defs.add(s.name.id)
        else:
            n = self.simple_node(m, s, "nop")
            self.f.warnings.append(f"{self.f.rel}:{s.lineno}: statement {type(s).__name__} modelled as nop")
        self.call_facts(m, n, s)
        self.edge(n.id, follow)
        entry = self.vchain(m, value, n.id, n.id)
        if not isinstance(s, (ast.Pass, ast.Global, ast.Nonlocal)):
            self.exc_edges(self.own_nodes(m, k0, n.id), ctx)
        return entry

    def own_nodes(self, m, k0, nid):
        """The nodes of the statement just built (itself and its pseudo-statements)."""
        return [x for x in m.nodes[k0:] if self.f.nodes[x].stmt == nid]

    def call_facts(self, m, n, s, exprs=None):
        c = main_call(s) if exprs is None else None
        if c is not None:
            d = call_descr(c)
            n.actuals = list(d[2])
            n.receiver = d[1]
        calls = []
        subs = []
        for e in ([s] if exprs is None else exprs):
            if e is not None:
                subs.extend(ast.walk(e))
        for sub in subs:
            if isinstance(sub, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub is not s:
                continue
            if isinstance(sub, ast.Call):
                calls.append(call_descr(sub))
        if calls:
            m.calls[n.id] = calls


class Ctx:
    __slots__ = ("handler", "loop_head", "loop_exit", "finally_entry", "finally_inside_loop")

    def __init__(self):
        self.handler = None
        self.loop_head = None
        self.loop_exit = None
        self.finally_entry = None
        self.finally_inside_loop = False

    def copy(self):
        c = Ctx()
        c.handler, c.loop_head, c.loop_exit = self.handler, self.loop_head, self.loop_exit
        c.finally_entry, c.finally_inside_loop = self.finally_entry, self.finally_inside_loop
        return c

    def loop(self, head, exit_):
        c = self.copy()
        c.loop_head, c.loop_exit = head, exit_
        c.finally_inside_loop = False
        return c

    def with_handler(self, h):
        c = self.copy()
        if h is not None:
            c.handler = h
        return c

    def with_finally(self, fin):
        c = self.copy()
        if fin is not None:
            c.finally_entry = fin
            c.finally_inside_loop = True
        return c


# ---------------------------------------------------------------------------- driver

def analyze_source(source, path, rel, role, instrument=None, tree=None):
    """Analyse one file. `instrument` (default: role == 'app') creates the wrapper-driven
    pseudo-statements; the instrumenter must then wrap `facts.wrap` on the same `tree`."""
    if instrument is None:
        instrument = role == "app"
    if tree is None:
        try:
            tree = ast.parse(source, filename=path)
        except SyntaxError as e:
            raise StaticError(f"{path}:{e.lineno or 0}: syntax error: {e.msg}") from None
        except ValueError as e:  # null bytes
            raise StaticError(f"{path}:1: cannot parse: {e}") from None
    facts = FileFacts(path, rel, role, source)
    a = Analyzer(facts, tree, instrument)
    a.prefix_stack = [("", False)]
    a.raw_entries = {}
    mod = a.new_method("<module>", 1, None)
    a.raw_entries[mod.id] = a.block(mod, tree.body, None, Ctx())
    _finish(facts, a, a.raw_entries, tree)
    try:
        from . import heap
    except ImportError:   # not shipped: no heap facts
        heap = None
    if heap is not None and heap.ENABLED:
        heap.analyze(facts, a.ast_of, tree)
    a.ast_of = None
    return facts, tree


def _finish(facts, a, raw_entries, tree):
    # resolve labels
    edges = set()
    for (x, y, k) in facts._raw_edges:
        y = resolve(y)
        if y is None or x == y and k == "exceptional":
            continue
        edges.add((x, y, k))
    for lab in facts._loop_labels:
        t = resolve(lab)
        if t is not None:
            facts.loop_heads.add(t)
    for n in facts.nodes.values():
        n.tsucc = resolve(n.tsucc)
        n.fsucc = resolve(n.fsucc)
    # which nodes have bytecode: compile the source and map every instruction position
    try:
        code = compile(facts.source, facts.path, "exec", dont_inherit=True)
    except SyntaxError as e:
        raise StaticError(f"{facts.path}:{e.lineno or 0}: syntax error: {e.msg}") from None
    stack = [code]
    per_line = {}
    while stack:
        co = stack.pop()
        for c in co.co_consts:
            if isinstance(c, types.CodeType):
                stack.append(c)
        m = facts.method_for_code(co)
        if m is None:
            continue
        lines = per_line.setdefault(m.id, {})
        positions = code_positions(co)
        for pos, nid in zip(positions, m.code_nodes(co, positions)):
            if nid is None:
                continue
            n = facts.nodes[nid]
            n.code = True
            if n.real or nid.endswith(":case") or (EXIT_BY_BYTECODE and nid.endswith(":exit")):
                lines.setdefault(pos[0], set()).add(nid)
    for m in facts.methods:
        for line, ns in per_line.get(m.id, {}).items():
            if len(ns) > 1:
                m.multi_lines.add(line)
    # splice out nodes without bytecode (docstrings, global, bare annotations, ...)
    succ = {}
    pred = {}
    for (x, y, k) in edges:
        succ.setdefault(x, set()).add((y, k))
        pred.setdefault(y, set()).add((x, k))
    for nid, n in facts.nodes.items():
        if n.code:
            continue
        ins = pred.pop(nid, set())
        outs = succ.pop(nid, set())
        for (x, k1) in ins:
            succ.get(x, set()).discard((nid, k1))
        for (y, k2) in outs:
            pred.get(y, set()).discard((nid, k2))
        for (x, k1) in ins:
            if x == nid:
                continue
            for (y, k2) in outs:
                if y == nid:
                    continue
                k = "exceptional" if "exceptional" in (k1, k2) else "normal"
                succ.setdefault(x, set()).add((y, k))
                pred.setdefault(y, set()).add((x, k))
        if nid in facts.loop_heads:
            facts.loop_heads.discard(nid)
            for (y, k2) in outs:
                if k2 == "normal":
                    facts.loop_heads.add(y)
    facts.edges = {(x, y, k) for x, ys in succ.items() for (y, k) in ys}
    # a pair with both a normal and an exceptional edge keeps the normal one only
    normal = {(x, y) for (x, y, k) in facts.edges if k == "normal"}
    facts.edges = {(x, y, k) for (x, y, k) in facts.edges if k == "normal" or (x, y) not in normal}
    facts.succ_normal = {}
    for (x, y, k) in facts.edges:
        if k == "normal":
            facts.succ_normal.setdefault(x, set()).add(y)

    def first_code(t, seen=None):
        if t is None:
            return frozenset()
        if facts.nodes[t].code:
            return frozenset([t])
        out = set()
        seen = seen or set()
        if t in seen:
            return frozenset()
        seen.add(t)
        for (y, k) in _raw_succ(t):
            out |= first_code(y, seen)
        return frozenset(out)

    raw_succ = {}
    for (x, y, k) in {(x, resolve(y), k) for (x, y, k) in facts._raw_edges}:
        if y is not None and k == "normal":
            raw_succ.setdefault(x, set()).add((y, k))

    def _raw_succ(t):
        return raw_succ.get(t, ())

    for n in facts.nodes.values():
        n.tsucc = first_code(n.tsucc) if n.kind == "branch" else n.tsucc
        n.fsucc = first_code(n.fsucc) if n.kind == "branch" else n.fsucc
    # method entries: the first node (in CFG order) with bytecode
    for m in facts.methods:
        if not m.nodes:
            continue
        order = {x: i for i, x in enumerate(m.nodes)}
        firsts = first_code(resolve(raw_entries.get(m.id)))
        if firsts:
            m.entry = min(firsts, key=lambda x: order.get(x, 0))
        else:
            cands = [x for x in m.nodes if facts.nodes[x].code]
            m.entry = cands[0] if cands else m.nodes[0]
    facts._raw_edges = None
    facts._loop_labels = None


def analyze_file(path, rel, role, instrument=None):
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise StaticError(f"{path}:0: cannot read: {e}") from None
    try:
        import importlib.util
        source = importlib.util.decode_source(data)
    except Exception as e:
        raise StaticError(f"{path}:0: cannot decode: {e}") from None
    from . import static_cache
    hit = static_cache.load_facts(path, rel, role, instrument, source)
    if hit is not None:
        return hit
    return analyze_source(source, path, rel, role, instrument=instrument)[0]


def relpath_for(path, root):
    try:
        rel = os.path.relpath(path, root)
    except ValueError:
        return path
    return rel.replace(os.sep, "/")
