"""Import-time code (issue 20 §5): module bodies and class bodies of the code under test run when
pytest imports the modules, outside every test. The setup recording puts them at the start of
every traced test's trace, and module globals / class attributes are heap cells, so a wrong
module constant or class attribute is in the failing test's trace, linked to its reads
(docs/frontend-python.md, "Import-time code")."""

import json
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

from test_heap import CONFTEST, Heap, write  # noqa: E402
from test_heap import run as _heap_run  # noqa: E402

PROJECT = {
    "src/shop/__init__.py": "",
    "src/shop/rules.py": """
        import re

        THRESHOLD = 5          # the fault of test_bulk_order: the bulk threshold is 10
        SKU = re.compile(r"^[A-Z]{3}-[0-9]+$")


        def is_bulk(qty):
            return qty >= THRESHOLD


        def valid_sku(s):
            return SKU.match(s) is not None


        class Discount:
            RATE = 0.5         # the fault of test_discount: the rate is 0.1

            def __init__(self, price):
                self.price = price

            def apply(self):
                return round(self.price * (1 - self.RATE), 2)

            @classmethod
            def rate(cls):
                return cls.RATE


        def bump():
            global COUNTER
            COUNTER = COUNTER + 1
            return COUNTER


        COUNTER = 0
        """,
    "tests/conftest.py": CONFTEST,
    "tests/test_shop.py": """
        from shop import rules
        from shop.rules import Discount, is_bulk, valid_sku


        def test_bulk_order():
            assert not is_bulk(7)


        def test_small_order():
            assert not is_bulk(1)


        def test_discount():
            assert Discount(10.0).apply() == 9.0


        def test_rate():
            assert Discount.rate() > 0


        def test_sku():
            assert valid_sku("ABC-12")


        def test_module_attribute():
            assert rules.THRESHOLD > 0


        def test_global_statement():
            assert rules.bump() == 1
        """,
}


def run(root, traced=True, extra=None):
    """test_heap's run, with the import-time prefix on (it is opt-in)."""
    return _heap_run(root, traced, {"PROSECUTOR_SETUP": "1", **(extra or {})})


def outcomes(text):
    out = {}
    for line in text.splitlines():
        for word in ("PASSED", "FAILED"):
            if line.startswith(word + " "):
                out[line.split()[1]] = word
    return out


class Dump(Heap):
    """test_heap's dump, with frames and coverage."""

    def __init__(self, root, proc):
        super().__init__(root, proc)
        self.frames = {}
        for r in dumpcheck.read(self.d, "frame.facts"):
            self.frames[(r[0], r[1])] = (r[2], r[3])
        self.coverage = {}
        for r in dumpcheck.read(self.d, "coverage.facts"):
            self.coverage.setdefault(r[0], set()).add(r[1])

    def at(self, tr, text):
        """Step indices of trace `tr` running the statement whose text is `text` (unlike
        `Heap.at`, by trace, without the rows)."""
        return [i for i, nid in enumerate(self.steps[tr]) if self.stmts[nid][5] == text]

    def method_of_step(self, tr, i):
        return self.frames[(tr, self.step_frame[tr][i])][0]

    def link(self, tr, def_text, use_text, use_var):
        """(def step, use step, obj) where a def row of the statement `def_text` and a use row
        (variable `use_var`) of `use_text` name the same object in trace `tr`."""
        rows = self.rows.get(tr, [])
        defs = {i: {(v, o) for (j, v, o, m) in rows if j == i and m == "def"} for i in self.at(tr, def_text)}
        for u in self.at(tr, use_text):
            for (j, v, o, m) in rows:
                if j == u and m == "use" and v == use_var:
                    for i, ds in defs.items():
                        if i < u and any(obj == o for (_, obj) in ds):
                            return i, u, o
        return None


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    root = tmp_path_factory.mktemp("import_time")
    write(root, PROJECT)
    p = run(root)
    assert os.path.exists(root / "dump" / "manifest.toml"), p.stdout
    return Dump(root, p)


def test_wrong_module_constant_is_in_the_failing_trace_and_linked(traced):
    t = traced.test("test_bulk_order")
    assert t["outcome"] == "fail"
    tr = t["trace"]
    (k,) = traced.at(tr, "THRESHOLD = 5")
    assert traced.method_of_step(tr, k) == "shop/rules.py::<module>"
    # the module body's frame is a callee of the synthetic root, as is the test function
    assert traced.frames[(tr, traced.step_frame[tr][0])] == ("<prosecutor>::<setup>", "-")
    assert traced.frames[(tr, traced.step_frame[tr][k])][1] == "0"
    link = traced.link(tr, "THRESHOLD = 5", "return qty >= THRESHOLD", "THRESHOLD")
    assert link is not None, traced.rows.get(tr)
    i, u, obj = link
    assert i == k and traced.method_of_step(tr, u) == "shop/rules.py::is_bulk"
    assert obj >= 1 << 60                        # a synthetic id, not a CPython id()
    # the failure point is the test's assert, after the prefix
    fs = t["failure_step"]
    assert traced.steps[tr][fs].startswith("tests/test_shop.py:")
    assert traced.method_of_step(tr, fs) == "tests/test_shop.py::test_bulk_order"
    assert fs > u or traced.stmts[traced.steps[tr][fs]][5] == "assert not is_bulk(7)"
    # the module line is covered by the test (the spectrum sees it)
    assert traced.steps[tr][k] in traced.coverage[t["id"]]


def test_wrong_class_attribute_is_in_the_failing_trace_and_linked(traced):
    t = traced.test("test_discount")
    assert t["outcome"] == "fail"
    tr = t["trace"]
    (k,) = traced.at(tr, "RATE = 0.5")
    assert traced.method_of_step(tr, k) == "shop/rules.py::Discount"
    link = traced.link(tr, "RATE = 0.5", "return round(self.price * (1 - self.RATE), 2)", "self")
    assert link is not None, traced.rows.get(tr)
    assert link[0] == k
    # cls.RATE in a class method reads the same slot
    tr2 = traced.test("test_rate")["trace"]
    assert traced.link(tr2, "RATE = 0.5", "return cls.RATE", "cls") is not None


def test_module_attribute_and_global_statement(traced):
    # `rules.THRESHOLD` in test code reads the module's global: the test runs no code of
    # rules.py, but its trace reads a slot that module's body bound, so the segment is in
    tr = traced.test("test_module_attribute")["trace"]
    assert traced.link(tr, "THRESHOLD = 5", "assert rules.THRESHOLD > 0", "rules") is not None
    # `global COUNTER; COUNTER = COUNTER + 1` reads the module-level binding and writes the slot
    tr = traced.test("test_global_statement")["trace"]
    assert traced.link(tr, "COUNTER = 0", "COUNTER = COUNTER + 1", "COUNTER") is not None
    assert traced.link(tr, "COUNTER = COUNTER + 1", "return COUNTER", "COUNTER") is not None


def test_only_relevant_segments_and_notes(traced):
    notes = traced.manifest["notes"]
    assert notes["setup_steps"] > 0 and notes["setup_modules"] >= 1
    assert notes["setup_scope"] == "relevant"
    # every trace begins with the synthetic root's two steps around the module body
    for t in traced.manifest["test"]:
        steps = traced.steps[t["trace"]]
        assert steps[0] == "<prosecutor>:1:0"
        assert steps.count("<prosecutor>:2:0") == 1


def test_outcomes_equal_a_plain_run(traced, tmp_path):
    write(tmp_path, PROJECT)
    plain = outcomes(run(tmp_path, traced=False).stdout)
    assert plain == outcomes(traced.proc.stdout)
    got = {t["id"]: t["outcome"] for t in traced.manifest["test"]}
    assert {k: ("fail" if v == "FAILED" else "pass") for k, v in plain.items()} == got


def test_dump_is_well_formed(traced):
    errors, stats = dumpcheck.check(traced.d)
    assert errors == [], errors[:10]
    # consecutive steps of a frame are CFG edges, except around the inert import-time
    # statements left out of module and class bodies (docstrings, imports, plain defs)
    for (a, b) in stats["non_cfg"]:
        for x in (a, b):
            assert traced.stmts[x][1] in ("shop/rules.py::<module>", "shop/rules.py::Discount"), (a, b)
    defs, uses = {}, {}
    for r in dumpcheck.read(traced.d, "def.facts"):
        defs.setdefault(r[0], set()).add(r[1])
    for r in dumpcheck.read(traced.d, "use.facts"):
        uses.setdefault(r[0], set()).add(r[1])
    access = {}
    for r in dumpcheck.read(traced.d, "heap_access.facts"):
        access.setdefault(r[0], set()).add((r[1], r[3]))
    for tr, rows in traced.rows.items():
        assert [r[0] for r in rows] == sorted(r[0] for r in rows), "rows not in step order"
        for (i, v, o, m) in rows:
            stmt = traced.steps[tr][i]
            assert v in (defs if m == "def" else uses).get(stmt, ()), (tr, i, stmt, v, m)
            assert (v, m) in access[stmt], (tr, i, stmt, v, m)


def test_setup_recording_can_be_switched_off(tmp_path):
    write(tmp_path, PROJECT)
    run(tmp_path, extra={"PROSECUTOR_SETUP": "0"})
    d = Dump(tmp_path, None)
    tr = d.test("test_bulk_order")["trace"]
    assert d.at(tr, "THRESHOLD = 5") == []
    assert d.frames[(tr, d.step_frame[tr][0])][1] == "-"


def test_flip_numbers_occurrences_as_the_trace(tmp_path):
    """A function run at import time and by the test: the flip re-run counts the evaluations of
    the setup segments the trace holds, so occurrence 1 is the import-time one."""
    files = dict(PROJECT)
    files["src/shop/norm.py"] = """
        def norm(x):
            if x > 0:
                return x
            return -x


        BASE = norm(-3)
        """
    files["tests/test_norm.py"] = """
        from shop.norm import norm


        def test_norm():
            assert norm(-2) == -2
        """
    write(tmp_path, files)
    run(tmp_path)
    d = Dump(tmp_path, None)
    t = d.test("test_norm")
    tr = t["trace"]
    ifs = d.at(tr, "if x > 0:")
    assert len(ifs) == 2 and d.method_of_step(tr, ifs[0]) == "shop/norm.py::norm"
    with open(tmp_path / "dump" / "rerun.json") as fh:
        assert json.load(fh)["tests"][t["id"]]["setup_segments"]
    stmt = d.steps[tr][ifs[0]]
    res = {}
    for occ in (1, 2):
        out = tmp_path / f"flip{occ}.json"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROSECUTOR_")}
        env["PYTHONPATH"] = PKG_PARENT
        subprocess.run([sys.executable, "-m", "prosecutor_tracer.flip", "--test", t["id"], "--stmt", stmt,
                        "--occurrence", str(occ), "--out", str(out), "--config",
                        str(tmp_path / "dump" / "rerun.json")], cwd=tmp_path, env=env, timeout=180,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        with open(out) as fh:
            res[occ] = json.load(fh)
    assert res[1]["flipped"] and res[1]["outcome"] == "fail"     # BASE = norm(-3) at import
    assert res[2]["flipped"] and res[2]["outcome"] == "pass"     # the test's norm(-2)


def test_static_slot_rows():
    """heap_access.facts: which bindings are namespace slots (a `def` row without mutation)."""
    from prosecutor_tracer import static_facts as sf
    src = textwrap.dedent("""\
        import re
        LIMIT = 10
        _cache = {}
        TABLE = {"a": 1}


        def f(x, k=LIMIT):
            global LIMIT
            LIMIT = x
            y = x
            return y


        def g(x):
            return x


        class C:
            RATE = 0.5
            registry = []

            def m(self):
                return self.RATE
        """)
    facts, _ = sf.analyze_source(src, "m.py", "m.py", "app")
    rows = {facts.nodes[n].line: set(r) for n, r in facts.heap_access.items()}
    d = "def"
    assert ("LIMIT", "-", d) in rows[2] and ("TABLE", "-", d) in rows[4]
    assert ("_cache", "-", d) not in rows.get(3, set())       # an empty container: no slot
    assert 1 not in rows                                      # an import: no slot
    assert ("f", "-", d) in rows[7]                           # a def with defaults
    assert ("g", "-", d) not in rows.get(14, set())           # a def without: no slot
    assert ("LIMIT", "-", d) in rows[9]                       # `global LIMIT; LIMIT = x`
    assert ("y", "-", d) not in rows.get(10, set())           # a local
    assert ("RATE", "-", d) in rows[19] and ("registry", "-", d) not in rows.get(20, set())
