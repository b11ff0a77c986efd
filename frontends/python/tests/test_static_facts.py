"""Unit tests of the AST -> facts mapping (static_facts.py)."""

import os
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from prosecutor_tracer import static_facts as sf  # noqa: E402


def facts(src, role="app"):
    f, _ = sf.analyze_source(textwrap.dedent(src), "/x/m.py", "m.py", role)
    return f


def node_at(f, line, suffix=None):
    cands = [n for n in f.nodes.values() if n.line == line and (suffix is None) == n.real
             and (suffix is None or n.id.endswith(":" + suffix))]
    assert len(cands) >= 1, (line, suffix, [n.id for n in f.nodes.values() if n.line == line])
    return min(cands, key=lambda n: n.col)


def edges(f, a, b):
    return {k for (x, y, k) in f.edges if x == a.id and y == b.id}


def test_def_use_table():
    f = facts("""
    def f(u, t, x, a):
        t2 = u.field
        u.field = t
        u[x] = t
        t3 = u[x]
        u.method(a)
        t4 = u.method(a)
        t += 1
        for i, (j, k) in enumerate(a):
            pass
        with open(t) as fh:
            pass
        try:
            pass
        except ValueError as e:
            pass
        import os.path as p, json
        ys = [y * x for y in a if y]
        g = lambda z: z + t
        if (w := len(a)) > 0:
            pass
        print(t)
        del u[x]
        return t
    """)
    d = lambda line: (node_at(f, line).defs, node_at(f, line).uses)
    assert d(3) == ({"t2"}, {"u"})
    assert d(4) == ({"u"}, {"u", "t"})
    assert d(5) == ({"u"}, {"u", "x", "t"})
    assert d(6) == ({"t3"}, {"u", "x"})
    # a call whose result is discarded defines its receiver; names passed as arguments are defined
    assert d(7) == ({"u", "a"}, {"u", "a"})
    assert d(8) == ({"t4", "a"}, {"u", "a"})
    assert d(9) == ({"t"}, {"t"})
    assert d(10)[0] == {"i", "j", "k"}
    assert "a" in d(10)[1]
    assert d(12)[0] == {"fh"}
    assert d(16)[0] == {"e"} and d(16)[1] == {"ValueError"}
    assert d(18)[0] == {"p", "json"}
    # a comprehension is one statement; its own variables are neither defined nor used
    assert d(19) == ({"ys"}, {"x", "a"})
    assert d(20) == ({"g"}, {"t"})
    assert "w" in d(21)[0]
    # print is a known-pure builtin: its arguments are not defined
    assert d(23) == (set(), {"print", "t"})
    assert d(24) == ({"u"}, {"u", "x"})
    assert d(25) == (set(), {"t"})


def test_kinds_methods_formals():
    f = facts("""
    import os

    class C:
        def m(self, a, b=1, *args, k, **kw):
            x = self.g(a)
            self.g(a)
            if a:
                raise ValueError()
            return x

        @staticmethod
        def s(p, q):
            pass

        @classmethod
        def c(cls, z):
            pass

    def top(u):
        def inner(v):
            return v
        return inner(u)
    """)
    ms = {m.id: m for m in f.methods}
    assert set(ms) == {"m.py::<module>", "m.py::C", "m.py::C.m", "m.py::C.s", "m.py::C.c",
                       "m.py::top", "m.py::top.<locals>.inner"}
    assert ms["m.py::C.m"].this_formal == "self"
    assert ms["m.py::C.m"].formals == ["a", "b"]
    assert ms["m.py::C.s"].this_formal is None and ms["m.py::C.s"].formals == ["p", "q"]
    assert ms["m.py::C.c"].this_formal == "cls"
    kinds = {n.line: n.kind for n in f.nodes.values() if n.real}
    assert kinds[2] == "assign" and kinds[6] == "call" and kinds[7] == "call"
    assert kinds[8] == "branch" and kinds[9] == "throw" and kinds[10] == "return"
    n6 = node_at(f, 6)
    assert n6.actuals == ["a"] and n6.receiver == "self"
    assert ms["m.py::C.m"].entry == n6.id
    assert all(f.nodes[n].method == m.id for m in f.methods for n in m.nodes)


def test_cfg_if_while_for_break_continue():
    f = facts("""
    def f(xs, n):
        total = 0
        for x in xs:
            if x < 0:
                continue
            elif x > 100:
                break
            total += x
        else:
            total = -1
        while n > 0:
            n -= 1
        return total
    """)
    fr, if1, cont, if2, brk, acc, els, wh, dec, ret = (node_at(f, i) for i in (4, 5, 6, 7, 8, 9, 11, 12, 13, 14))
    assert fr.kind == "branch" and fr.id in f.loop_heads
    assert edges(f, fr, if1) == {"normal"} and edges(f, fr, els) == {"normal"}
    assert edges(f, if1, cont) and edges(f, if1, if2)
    assert edges(f, cont, fr) and edges(f, brk, wh)
    assert edges(f, acc, fr) and edges(f, els, wh)
    assert edges(f, wh, dec) and edges(f, wh, ret) and edges(f, dec, wh)
    assert wh.id in f.loop_heads
    assert not [e for e in f.edges if e[0] == ret.id]


def test_while_true_has_no_exit_edge():
    f = facts("""
    def f(n):
        while True:
            if n > 10:
                break
            n += 1
        return n
    """)
    wh, test, brk, inc, ret = (node_at(f, i) for i in range(3, 8))
    if sys.version_info < (3, 10):
        # Python 3.9 compiles `while True:` to no instruction (no line event, no step): the
        # header is spliced out and the loop goes back to the `if`
        assert not wh.code and edges(f, inc, test) and edges(f, brk, ret)
        return
    assert {y for (x, y, k) in f.edges if x == wh.id} == {test.id}
    assert edges(f, brk, ret) and edges(f, inc, wh)
    assert wh.id in f.loop_heads


@pytest.mark.skipif(sys.version_info < (3, 10), reason="`match` is Python 3.10+ syntax")
def test_cfg_try_with_match_assert():
    f = facts("""
    def f(v):
        try:
            r = 10 // v
        except ZeroDivisionError as e:
            r = 0
        finally:
            v = 1
        with open("/dev/null") as fh:
            fh.read()
        match r:
            case 0:
                r = 1
            case _:
                pass
        assert r, "no"
        return r
    """)
    tr, div, exc, r0, fin = (node_at(f, i) for i in (3, 4, 5, 6, 8))
    assert tr.kind == "nop" and exc.kind == "catch"
    assert edges(f, div, exc) == {"exceptional"}
    assert edges(f, exc, r0) and edges(f, r0, fin) and edges(f, div, fin)
    w, read = node_at(f, 9), node_at(f, 10)
    x = node_at(f, 9, "exit")
    assert edges(f, w, read) and edges(f, read, x) and x.kind == "call"
    m, c0, c1 = node_at(f, 11), node_at(f, 12, "case"), node_at(f, 14, "case")
    assert edges(f, m, c0) and edges(f, c0, node_at(f, 13)) and edges(f, c0, c1)
    a, ret = node_at(f, 16), node_at(f, 17)
    assert a.kind == "branch" and edges(f, a, ret)
    assert {y for (x, y, k) in f.edges if x == a.id} == {ret.id}


def test_short_circuit_and_ternary_pseudo_statements():
    f = facts("""
    def f(a, b, c):
        if a and b or c:
            x = 1
        y = a or b
        return 1 if c else 2
    """)
    s = node_at(f, 3)
    pa = [n for n in f.nodes.values() if n.line == 3 and not n.real]
    # `a and b or c` is Or(And(a, b), c): a and b are operands of the `and`, c is decided by s
    assert sorted(n.id.rsplit(":", 1)[1] for n in pa) == ["and", "and"]
    p_a = min(pa, key=lambda n: n.col)
    p_b = max(pa, key=lambda n: n.col)
    x1 = node_at(f, 4)
    # a false `a` skips `b` and goes to `c` (evaluated by the statement); a true `b` decides
    # the condition: it goes to the statement, which branches on the whole condition (issue 20)
    assert edges(f, p_a, p_b) and edges(f, p_a, s)
    assert edges(f, p_b, s) and not edges(f, p_b, x1)
    assert edges(f, s, x1) and edges(f, s, node_at(f, 5, "or"))
    assert (sf.BR, s.id) in f.wrap.values()      # the whole condition is wrapped for s
    assert f.wrap and all(w[0] in (sf.BR, sf.SC) for w in f.wrap.values())
    t = node_at(f, 6, "if")
    assert t.kind == "branch" and edges(f, t, node_at(f, 6))
    # test code gets no pseudo-statements
    g = facts("def f(a, b):\n    return a and b\n", role="test")
    assert all(n.real for n in g.nodes.values()) and not g.wrap


def test_no_code_statements_are_spliced():
    f = facts('''
    def f(x):
        "doc"
        global G
        y: int
        return x
    ''')
    doc, ret = node_at(f, 3), node_at(f, 6)
    assert not doc.code and ret.code
    m = [m for m in f.methods if m.qualname == "f"][0]
    assert m.entry == ret.id
    assert not [e for e in f.edges if doc.id in e[:2]]


def test_multi_statement_lines_are_marked():
    f = facts("def f(a):\n    if a: return 1\n    x = 1; y = 2\n    return x + y\n")
    m = [m for m in f.methods if m.qualname == "f"][0]
    # (before 3.11 an instruction has no column: a line is one node, none is marked)
    assert m.multi_lines == ({2, 3} if sf.HAS_POSITIONS else set())


def test_syntax_error_names_file_and_line():
    with pytest.raises(sf.StaticError, match=r"/x/m.py:2: syntax error"):
        facts("x = 1\ndef f(:\n")


def test_statement_ids_are_unique_and_tab_free():
    f = facts("def f(a, b):\n    return (a or b) or (a or b)\n")
    ids = list(f.nodes)
    assert len(ids) == len(set(ids))
    assert all("\t" not in n.text and "\n" not in n.text for n in f.nodes.values())


def test_copies_hand_over_one_variable_unchanged():
    f = facts("""
    def g(x, xs):
        y = x
        y += x
        z = x + 1
        yield x
        yield (x, y)
        yield from xs
        w = yield x
        return y
    """)
    copies = {line for line in range(3, 11) if node_at(f, line).copy}
    # `y = x`, `yield x` and `return y` only copy a value; the others compute one
    # (`w = yield x` defines w from the value the consumer sends)
    assert copies == {3, 6, 10}


def test_handlers_and_reraises_hand_an_exception_on():
    f = facts("""
    def g(s):
        try:
            v = int(s)
        except ValueError as e:
            raise e
        except KeyError:
            raise
        except TypeError as e:
            raise RuntimeError(s) from e
        return v
    """)
    copies = {line for line in range(3, 12) if node_at(f, line).copy}
    # a handler binds the exception in flight; `raise e` and a bare `raise` hand it on; `raise
    # X(s) from e` builds a new one and `int(s)` computes
    assert copies == {5, 6, 7, 8, 9, 11}, copies


@pytest.mark.skipif(sys.version_info < (3, 12), reason="PEP 695 syntax is Python 3.12+")
def test_type_parameters_and_type_aliases():
    src = ("type Pair[T] = tuple[T, T]\n\n"
           "def first[T](xs: list[T]) -> T:\n    if not xs: return None\n    return xs[0]\n\n"
           "class Box[T]:\n    def get(self) -> T:\n        return self.v\n")
    f = facts(src)
    alias = node_at(f, 1)
    assert alias.kind == "assign" and alias.defs == {"Pair"} and alias.code
    assert not f.warnings, f.warnings
    ns = {}
    exec(compile(src, "m.py", "exec"), ns)
    for fn, mid in ((ns["first"], "m.py::first"), (ns["Box"].get, "m.py::Box.get")):
        m = f.method_for_code(fn.__code__)
        assert m is not None and m.id == mid
        assert any(m.code_nodes(fn.__code__))


def test_with_exit_has_code_on_every_version():
    """The `__exit__` call ending a `with` block is the `:exit` node on every supported Python:
    by its span (3.11, 3.12), by its order after the body (3.10: the `with`'s line; 3.13: a
    context expression's span), by the bytecode (3.9: the body's last line, opcode events)."""
    src = ("import contextlib\n\ndef f(a):\n    with contextlib.suppress(ValueError):\n"
           "        y = a + 1\n        raise ValueError\n    return 0\n")
    f = facts(src)
    x = [n for n in f.nodes.values() if n.id.endswith(":exit")][0]
    assert x.code
    ns = {}
    exec(compile(src, "/x/m.py", "exec"), ns)
    co = ns["f"].__code__
    m = f.method_for_code(co)
    nodes = m.code_nodes(co)
    assert x.id in nodes
    assert max(i for i, n in enumerate(nodes) if n == x.id) > nodes.index(node_at(f, 5).id)
    if sys.version_info < (3, 10):
        assert 6 in m.multi_lines      # the exit's units have the body's last line


def test_a_method_is_declared_on_its_def_line_after_its_decorators():
    f = facts("""
    import functools


    @functools.lru_cache(maxsize=None)
    def f(n):
        return n


    class C:
        @staticmethod
        def g():
            return 1
    """)
    ms = {m.qualname: m for m in f.methods}
    assert ms["f"].defline == 6 and ms["f"].firstlineno == 5, (ms["f"].defline, ms["f"].firstlineno)
    assert ms["C"].defline == 10
    assert ms["C.g"].defline == 12
    assert ms["<module>"].defline is None
