"""Heap accesses by object identity: heap_access.facts (static) and heap.facts (traced), see
docs/trace-format.md and docs/frontend-python.md ("Heap accesses")."""

import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_PARENT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, PKG_PARENT)

import dumpcheck  # noqa: E402
from prosecutor_tracer import heap, static_facts as sf  # noqa: E402

CONFTEST = "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'src'))\n"


# ---------------------------------------------------------------------------------- static

STATIC_SRC = """\
_cache = {}


class Stack:
    def __init__(self):
        self._items = []

    def add(self, k):
        self._items.insert(0, k)

    def first(self):
        return self._items[0]

    def alias(self, x):
        items = self._items
        items.append(x)

    def misc(self, i, e, xs):
        self.a.b[i] = e
        self.n += 1
        self._items[i] += 1
        del self._items[i]
        del self.tag
        self.total = e
        xs += [e]
        y = xs.pop()
        helper(xs, key=e)
        n = len(xs)
        return y


def put(k, v):
    _cache[k] = v
"""


def static_rows():
    f, _ = sf.analyze_source(STATIC_SRC, "m.py", "m.py", "app")
    by_line = {}
    for nid, rows in f.heap_access.items():
        n = f.nodes[nid]
        by_line[n.line] = set(rows)
        # the invariant the core checks: def rows name DEF variables, use rows USE variables
        for (v, attr, mode) in rows:
            assert v in (n.defs if mode == "def" else n.uses), (nid, v, mode)
    return by_line


def test_heap_access_rows_of_each_statement_kind():
    rows = static_rows()
    d, u = "def", "use"
    expect = {
        6: {("self", "-", d), ("self", "-", u)},                                   # self._items = []
        9: {("self", "-", d), ("self", "_items", d), ("self", "-", u),             # insert(0, k)
            ("self", "_items", u), ("k", "-", d), ("k", "-", u)},
        12: {("self", "-", u), ("self", "_items", u)},                             # return self._items[0]
        15: {("self", "-", u), ("self", "_items", u)},                             # items = self._items
        16: {("items", "-", d), ("items", "-", u), ("x", "-", d), ("x", "-", u)},  # items.append(x)
        19: {("self", "-", d), ("self", "a", d), ("self", "-", u), ("self", "a", u),
             ("i", "-", u), ("e", "-", u)},                                        # self.a.b[i] = e
        20: {("self", "-", d), ("self", "n", d), ("self", "-", u), ("self", "n", u)},  # self.n += 1
        21: {("self", "-", d), ("self", "_items", d), ("self", "-", u),
             ("self", "_items", u), ("i", "-", u)},                                # self._items[i] += 1
        22: {("self", "-", d), ("self", "_items", d), ("self", "-", u),
             ("self", "_items", u), ("i", "-", u)},                                # del self._items[i]
        23: {("self", "-", d), ("self", "-", u)},                                  # del self.tag
        24: {("self", "-", d), ("self", "-", u), ("e", "-", u)},                   # self.total = e
        25: {("xs", "-", u), ("e", "-", u)},      # xs += [e]: a rebinding (no def row, as `x = e`)
        26: {("xs", "-", u)},              # y = xs.pop(): xs is not in DEF (Table 2), so no def row
        27: {("helper", "-", u), ("xs", "-", d), ("xs", "-", u), ("e", "-", d), ("e", "-", u)},
        28: {("len", "-", u), ("xs", "-", u)},                                     # pure builtin
        29: {("y", "-", u)},
        33: {("_cache", "-", d), ("_cache", "-", u), ("k", "-", u), ("v", "-", u)},
    }
    for line, want in expect.items():
        assert rows.get(line) == want, (line, rows.get(line))
    # plain rebinding is not a heap def; statements without names have no rows
    assert 1 not in rows and 5 not in rows


def test_heap_access_ignores_names_bound_inside_lambdas_and_comprehensions():
    src = textwrap.dedent("""\
        def f(xs, out):
            ys = [x.append(1) for x in xs]
            out.sort(key=lambda o: o.k)
            return ys
        """)
    f, _ = sf.analyze_source(src, "m.py", "m.py", "app")
    rows = {f.nodes[n].line: set(r) for n, r in f.heap_access.items()}
    assert rows[2] == {("xs", "-", "use")}
    assert rows[3] == {("out", "-", "def"), ("out", "-", "use")}


# ---------------------------------------------------------------------------------- traced

PROJECT = {
    "src/stack.py": """
        _cache = {}


        class Stack:
            def __init__(self):
                self._items = []

            def add(self, k):
                self._items.insert(0, k)

            def first(self):
                return self._items[0]

            def push_alias(self, x):
                items = self._items
                items.append(x)

            def last(self):
                return self._items[-1]

            def pick(self, flag):
                return max(self.last(), 1 if flag else 2)


        def put(k, v):
            _cache[k] = v


        def get(k):
            return _cache.get(k)


        def count(n):
            return n + 1
        """,
    "tests/conftest.py": CONFTEST,
    "tests/test_s.py": """
        from stack import Stack, put, get, count


        def test_first():
            s = Stack()
            s.add(3)
            s.add(4)
            assert s.first() == 4


        def test_alias():
            s = Stack()
            s.push_alias(7)
            assert s.last() == 8          # fails


        def test_cache():
            put("a", [1])
            assert get("a") == [1]


        def test_int():
            n = 3
            n = count(n)
            assert n == 4


        def test_relabel():
            s = Stack()
            s.add(5)
            assert s.pick(True) == 5
        """,
}

GC_PROJECT = {
    "src/box.py": """
        import sys
        import weakref


        class Box:
            def __init__(self):
                self.items = []

            def add(self, x):
                self.items.append(x)


        def drop_in_kept_frame(keep):
            b = Box()
            b.add(1)
            keep.append((sys._getframe(), weakref.ref(b)))
            b = None
        """,
    "tests/conftest.py": CONFTEST,
    "tests/test_gc.py": """
        import gc
        import weakref

        from box import Box, drop_in_kept_frame


        def test_del_then_weakref():
            o = Box()
            w = weakref.ref(o)
            o.add(1)
            del o
            assert w() is None


        def test_rebind_then_collect():
            o = Box()
            w = weakref.ref(o)
            o.items.append(2)
            o = None
            gc.collect()
            assert w() is None


        def test_finalizer_after_rebinding():
            done = []
            o = Box()
            weakref.finalize(o, done.append, "x")
            o.add(len(done))
            o = None
            assert done == ["x"]


        def test_frame_kept_alive():
            keep = []
            drop_in_kept_frame(keep)
            assert keep[0][1]() is None


        def test_weak_value_dict():
            d = weakref.WeakValueDictionary()
            o = Box()
            o.add(3)
            d["k"] = o
            o = None
            assert "k" not in d
        """,
}


def write(root, files):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


def run(root, traced=True, extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PROSECUTOR_") and k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    env.update({"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
                "PYTEST_ADDOPTS": "-p no:cacheprovider"})
    if traced:
        env.update({"PYTHONPATH": PKG_PARENT,
                    "PYTEST_ADDOPTS": "-p no:cacheprovider -p prosecutor_tracer.plugin",
                    "PROSECUTOR_MODE": "trace", "PROSECUTOR_SRC": str(root / "src"),
                    "PROSECUTOR_OUT": str(root / "dump"), "PROSECUTOR_TRACE_ALL": "1",
                    "PROSECUTOR_TEST_TIMEOUT": "120"})
    env.update(extra or {})
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "tests"], cwd=root, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
    return p


class Heap:
    """The dump of a traced run, with its heap rows per test."""

    def __init__(self, root, proc):
        import tomllib
        self.d = str(root / "dump")
        self.proc = proc
        with open(os.path.join(self.d, "manifest.toml"), "rb") as fh:
            self.manifest = tomllib.load(fh)
        self.stmts = {r[0]: r for r in dumpcheck.read(self.d, "stmt.facts")}
        # per trace: the statement and the frame of each step
        self.steps, self.step_frame = {}, {}
        for r in dumpcheck.read(self.d, "step.facts"):
            self.steps.setdefault(r[0], []).append(r[2])
            self.step_frame.setdefault(r[0], []).append(r[3])
        self.rows = {}
        for r in dumpcheck.read(self.d, "heap.facts"):
            self.rows.setdefault(r[0], []).append((int(r[1]), r[2], int(r[3]), r[4]))

    def test(self, name):
        """The manifest entry of the test whose id ends with `::name`."""
        for t in self.manifest["test"]:
            if t["id"].endswith("::" + name):
                return t
        raise KeyError(name)

    def trace(self, name):
        return self.test(name).get("trace")

    def at(self, name, text):
        """(step index, rows) of each step of test `name` whose statement text is `text`."""
        tr = self.trace(name)
        out = []
        for i, nid in enumerate(self.steps[tr]):
            if self.stmts[nid][5] == text:
                out.append((i, [(v, o, m) for (j, v, o, m) in self.rows.get(tr, []) if j == i]))
        return out


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    root = tmp_path_factory.mktemp("heap")
    write(root, PROJECT)
    p = run(root)
    assert os.path.exists(root / "dump" / "manifest.toml"), p.stdout
    return Heap(root, p)


def test_dump_is_well_formed_and_rows_match_def_use(traced):
    errors, _ = dumpcheck.check(traced.d)
    assert errors == [], errors[:10]
    defs, uses = {}, {}
    for r in dumpcheck.read(traced.d, "def.facts"):
        defs.setdefault(r[0], set()).add(r[1])
    for r in dumpcheck.read(traced.d, "use.facts"):
        uses.setdefault(r[0], set()).add(r[1])
    access = {}
    for r in dumpcheck.read(traced.d, "heap_access.facts"):
        assert len(r) == 4 and r[3] in ("def", "use"), r
        assert r[1] in (defs if r[3] == "def" else uses).get(r[0], ()), r
        access.setdefault(r[0], set()).add((r[1], r[3]))
    assert access, "heap_access.facts is empty"
    for tr, rows in traced.rows.items():
        steps = traced.steps[tr]
        assert [r[0] for r in rows] == sorted(r[0] for r in rows), "rows not in step order"
        assert len(rows) == len(set(rows)), "duplicate rows"
        for (i, v, o, m) in rows:
            stmt = steps[i]
            assert v in (defs if m == "def" else uses).get(stmt, ()), (tr, i, stmt, v, m)
            assert (v, m) in access[stmt]
            assert o > 0


def test_insert_in_one_method_is_used_by_another(traced):
    (init, init_rows), = traced.at("test_first", "self._items = []")
    adds = traced.at("test_first", "self._items.insert(0, k)")
    (ret, ret_rows), = traced.at("test_first", "return self._items[0]")
    assert len(adds) == 2
    obj_self = {o for (v, o, m) in init_rows if v == "self" and m == "def"}
    assert len(obj_self) == 1
    (i2, add_rows) = adds[1]
    add_defs = {o for (v, o, m) in add_rows if v == "self" and m == "def"}
    assert len(add_defs) == 2 and obj_self < add_defs        # self and self._items
    (obj_items,) = add_defs - obj_self
    ret_uses = {o for (v, o, m) in ret_rows if v == "self" and m == "use"}
    assert ret_uses == add_defs                              # the same objects, another frame
    assert init < i2 < ret
    # the first insert reads self._items too: mutated before? no, only self (by __init__)
    (i1, first_rows) = adds[0]
    assert ("self", obj_items, "use") not in first_rows
    assert ("self", next(iter(obj_self)), "use") in first_rows


def test_alias_mutation_reaches_the_attribute_read(traced):
    (i, rows), = traced.at("test_alias", "items.append(x)")
    (objs,) = [{o for (v, o, m) in rows if v == "items" and m == "def"}]
    assert len(objs) == 1
    (j, last_rows), = traced.at("test_alias", "return self._items[-1]")
    assert objs <= {o for (v, o, m) in last_rows if v == "self" and m == "use"}
    assert i < j


def test_module_global_dict(traced):
    (i, put_rows), = traced.at("test_cache", "_cache[k] = v")
    (j, get_rows), = traced.at("test_cache", "return _cache.get(k)")
    (obj,) = [o for (v, o, m) in put_rows if v == "_cache" and m == "def"]
    assert ("_cache", obj, "use") in get_rows
    assert i < j


def test_ints_give_no_rows(traced):
    tr = traced.trace("test_int")
    assert traced.rows.get(tr, []) == []


def test_uses_before_any_mutation_are_not_recorded(traced):
    # test_alias: `s = Stack()` runs __init__, whose `self._items = []` mutates self; the
    # test's own `s = Stack()` step comes before that, so it has no use row
    tr = traced.trace("test_alias")
    assert traced.rows[tr][0][3] == "def"


def test_outcomes_are_unchanged(traced):
    got = {t["id"].split("::")[-1]: t["outcome"] for t in traced.manifest["test"]}
    assert got == {"test_first": "pass", "test_alias": "fail", "test_cache": "pass",
                   "test_int": "pass", "test_relabel": "pass"}


def test_step_cap_bounds_the_rows(tmp_path):
    write(tmp_path, PROJECT)
    run(tmp_path, extra={"PROSECUTOR_STEP_CAP": "4"})
    h = Heap(tmp_path, None)
    assert h.rows, "no heap rows at all"
    for tr, rows in h.rows.items():
        assert all(i < 4 for (i, v, o, m) in rows), rows


def test_heap_recording_keeps_weakref_and_gc_outcomes(tmp_path):
    write(tmp_path, GC_PROJECT)
    plain = run(tmp_path, traced=False)
    assert "5 passed" in plain.stdout, plain.stdout
    p = run(tmp_path)
    h = Heap(tmp_path, p)
    got = {t["id"].split("::")[-1]: t["outcome"] for t in h.manifest["test"]}
    assert got == {"test_del_then_weakref": "pass", "test_rebind_then_collect": "pass",
                   "test_finalizer_after_rebinding": "pass", "test_frame_kept_alive": "pass",
                   "test_weak_value_dict": "pass"}, p.stdout
    # ... and the mutations were recorded (the recorder did read these frames)
    (i, rows), = h.at("test_finalizer_after_rebinding", "o.add(len(done))")
    assert any(v == "o" and m == "def" for (v, o, m) in rows)


def test_heap_recording_can_be_switched_off(tmp_path):
    write(tmp_path, PROJECT)
    run(tmp_path, extra={"PROSECUTOR_HEAP": "0"})
    files = os.listdir(tmp_path / "dump")
    assert "step.facts" in files
    assert "heap.facts" not in files and "heap_access.facts" not in files


def test_recursion_limit_keeps_the_dump_well_formed(tmp_path):
    write(tmp_path, {
        "src/deep.py": """
            def down(acc, n):
                acc.append(n)
                return down(acc, n + 1)
            """,
        "tests/conftest.py": CONFTEST,
        "tests/test_deep.py": """
            import pytest

            from deep import down


            def test_deep():
                acc = []
                with pytest.raises(RecursionError):
                    down(acc, 0)
                assert len(acc) > 100


            def test_fails():
                acc = []
                down(acc, 0)
            """,
    })
    p = run(tmp_path)
    h = Heap(tmp_path, p)
    errors, _ = dumpcheck.check(h.d)
    assert errors == [], errors[:10]
    got = {t["id"].split("::")[-1]: t["outcome"] for t in h.manifest["test"]}
    assert got == {"test_deep": "pass", "test_fails": "fail"}, p.stdout
    tr = h.trace("test_fails")
    appends = [i for i, nid in enumerate(h.steps[tr]) if h.stmts[nid][5] == "acc.append(n)"]
    rows = {i for (i, v, o, m) in h.rows[tr] if v == "acc" and m == "def"}
    assert len(rows & set(appends)) > 100      # (`return down(acc, ...)` passes acc: a def too)


def test_finalizer_run_while_a_wrapper_records_a_step(tmp_path):
    """Issue 20 (tornado: `heap.facts rows of trace .. are not in step order`): a step recorded
    by a condition wrapper (ordinary code, so user code it triggers is traced) refreshes the
    frame's locals snapshot, which drops the last reference to a rebound local's old value:
    its `__del__` runs, is traced and records the next step's rows first.  The rows must stay
    in step order."""
    write(tmp_path, {
        "src/fin.py": """
            LOG = []


            class Probe:
                def __init__(self, name):
                    self.name = name
                    self.items = []

                def __del__(self):
                    LOG.append(self.name)


            def churn(box):
                box.items.append(0)
                tmp = Probe("t")
                tmp.items.append(1)
                if (tmp := None) is None and box.items:
                    return LOG[-1]
                return None
            """,
        "tests/conftest.py": CONFTEST,
        "tests/test_fin.py": """
            from fin import Probe, churn


            def test_churn():
                assert churn(Probe("box")) == "t"
            """,
    })
    p = run(tmp_path)
    assert "1 passed" in p.stdout, p.stdout
    errors, _ = dumpcheck.check(str(tmp_path / "dump"))
    assert errors == [], errors
    h = Heap(tmp_path, p)
    tr = h.trace("test_churn")
    # the finalizer's step (LOG.append) comes right after the `if` step and has its own rows
    steps = h.steps[tr]
    i = next(k for k, s in enumerate(steps) if h.stmts[s][5].startswith("if (tmp := None)"))
    late = heap._SNAPSHOT and sf.HAS_POSITIONS
    if not late:
        # Python 3.13+: no locals snapshot (PEP 667); the finalizer runs when the walrus drops
        # the last reference, as in a plain run: right after the operand's step, before the
        # `if`'s.  On 3.9 / 3.10 (a line event has no column: it begins the operand's step,
        # the `if`'s begins at its wrapper) the snapshot is refreshed there too.
        i = next(k for k, s in enumerate(steps) if h.stmts[s][5] == "(tmp := None) is None")
        assert h.stmts[steps[i + 2]][5].startswith("if (tmp := None)")
    assert h.stmts[steps[i + 1]][5] == "LOG.append(self.name)"
    assert any(j == i + 1 for (j, v, o, m) in h.rows[tr])
    assert any(j == i for (j, v, o, m) in h.rows[tr]) or not late


def test_snapshot_does_not_keep_a_deleted_exception_alive(tmp_path):
    """tornado `test_task_refcounting` failed only under tracing: the recorder read a frame's
    locals while `except E as e:` had `e` bound; the end of the handler deletes `e` (no step, no
    rebinding), so the snapshot kept the exception, whose traceback holds the frame, which holds
    the snapshot: a cycle that reference counting no longer frees.  The snapshot is refreshed when
    the frame returns."""
    write(tmp_path, {
        "src/exc.py": """
            import weakref


            class Boom(Exception):
                pass


            def catch(box):
                try:
                    raise Boom()
                except Boom as e:
                    box.append(weakref.ref(e))
                return len(box)
            """,
        "tests/conftest.py": CONFTEST,
        "tests/test_exc.py": """
            import gc

            from exc import catch


            def test_exception_freed_by_refcounting():
                gc.disable()
                try:
                    box = []
                    assert catch(box) == 1
                    assert box[0]() is None
                finally:
                    gc.enable()
            """,
    })
    assert "1 passed" in run(tmp_path, traced=False).stdout
    p = run(tmp_path)
    h = Heap(tmp_path, p)
    (t,) = h.manifest["test"]
    assert t["outcome"] == "pass", p.stdout
    (i, rows), = h.at("test_exception_freed_by_refcounting", "box.append(weakref.ref(e))")
    assert any(v == "box" and m == "def" for (v, o, m) in rows), rows


def test_modules_imported_before_the_tracer_are_listed_as_not_flippable(tmp_path):
    """An app module imported before the plugin (by another pytest plugin) is traced without
    instrumentation, so a re-run cannot flip its branches: the manifest lists it in
    `[rerun] not_flippable` and the core plans no experiment there (scrapy-1: 20 of 20
    experiments were void)."""
    import tomllib
    write(tmp_path, {
        "src/early.py": """
            def sign(x):
                if x > 0:
                    return 1
                return 0
            """,
        "src/late.py": """
            def double(x):
                if x > 0:
                    return 2 * x
                return 0
            """,
        "plug/earlyplug.py": """
            import os, sys
            sys.path.insert(0, os.path.join(os.getcwd(), "src"))
            import early  # noqa: F401  (imported before prosecutor_tracer.plugin)
            """,
        "tests/conftest.py": CONFTEST,
        "tests/test_both.py": """
            from early import sign
            from late import double


            def test_both():
                assert sign(3) + double(2) == 6
            """,
    })
    p = run(tmp_path, extra={
        "PYTHONPATH": PKG_PARENT + os.pathsep + str(tmp_path / "plug"),
        "PYTEST_ADDOPTS": "-p no:cacheprovider -p earlyplug -p prosecutor_tracer.plugin",
    })
    with open(tmp_path / "dump" / "manifest.toml", "rb") as fh:
        m = tomllib.load(fh)
    assert m["rerun"]["not_flippable"] == ["early.py"], (m["rerun"], p.stdout)
