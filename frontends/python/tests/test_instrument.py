"""The instrumentation must not change behaviour: instrumented copies of standard-library
modules compute the same results as the originals, with and without an active tracer."""

import importlib
import os
import sys
import types

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from prosecutor_tracer import instrument  # noqa: E402
from prosecutor_tracer.tracer import Registry, Tracer  # noqa: E402

TEXT = ("The quick brown fox -- jumps over the lazy dog; it's 42 o'clock and "
        "ein Übermaß an Text, \"quoted\" and 'single' words.\n\n   Second paragraph.\t tabbed")

CASES = {
    "textwrap": lambda m: (m.fill(TEXT, width=23), m.dedent("  a\n    b\n"), m.shorten(TEXT, 30),
                           m.indent("x\n\ny", "> ")),
    "shlex": lambda m: (m.split("a 'b c' \"d\\\" e\" f#g # comment", comments=True), m.quote("it's")),
    "difflib": lambda m: (list(m.unified_diff(["a\n", "b\n", "c\n"], ["a\n", "c\n", "d\n"])),
                          m.SequenceMatcher(None, "abxcd", "abcd").ratio(),
                          m.get_close_matches("appel", ["ape", "apple", "peach", "puppy"])),
    "fractions": lambda m: (str(m.Fraction(3, 4) + m.Fraction("1/6")), m.Fraction(0.1).limit_denominator(100)),
    "colorsys": lambda m: (m.rgb_to_hls(0.2, 0.4, 0.4), m.hsv_to_rgb(0.5, 0.5, 0.4)),
    "statistics": lambda m: (m.median([3, 1, 4, 1, 5]), m.mode([1, 1, 2]), round(m.stdev([1.5, 2.5, 2.5, 2.75]), 12)),
    "string": lambda m: (m.Template("$a and ${b}").safe_substitute(a=1), m.capwords(" hello   world ")),
    "calendar": lambda m: (m.month(2024, 2), m.isleap(1900), m.monthrange(2023, 2)),
}


def load_instrumented(name):
    orig = importlib.import_module(name)
    path = orig.__file__
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    code, facts = instrument.compile_instrumented(source, path, os.path.basename(path))
    mod = types.ModuleType(name + "_instrumented")
    mod.__file__ = path
    # (a module body may look itself up: 3.13's calendar uses enum.global_enum)
    sys.modules[mod.__name__] = mod
    try:
        exec(code, mod.__dict__)
    finally:
        del sys.modules[mod.__name__]
    return orig, mod, facts


@pytest.mark.parametrize("name", sorted(CASES))
def test_instrumented_module_behaves_the_same(name):
    orig, inst, facts = load_instrumented(name)
    assert facts.wrap, "nothing was instrumented"
    assert CASES[name](inst) == CASES[name](orig)


@pytest.mark.parametrize("name", ["textwrap", "difflib"])
def test_same_results_under_an_active_tracer(name, tmp_path):
    orig, inst, facts = load_instrumented(name)
    reg = Registry(os.path.dirname(orig.__file__), os.getcwd())
    rp = os.path.realpath(orig.__file__)
    reg.register(rp, facts)
    reg.test_files.add(os.path.realpath(__file__))
    tracer = Tracer(reg)
    instrument.set_tracer(tracer)
    try:
        def root():
            return CASES[name](inst)
        tracer.start("x", root.__code__)
        got = root()
        rec = tracer.stop()
    finally:
        instrument.set_tracer(Tracer(Registry(os.getcwd(), os.getcwd())))
    assert got == CASES[name](orig)
    assert rec.nsteps > 50 and rec.branch
    assert not tracer.errors


def flip_of(nid, occ):
    """The forced set of a flip: one instance, to the opposite of its natural outcome."""
    return {nid: {occ: None}}


def test_flip_inverts_exactly_one_instance():
    src = "def f(xs):\n    out = []\n    for x in xs:\n        if x > 1:\n            out.append(x)\n    return out\n"
    path = os.path.join(os.path.dirname(__file__), "_flip_probe.py")
    code, facts = instrument.compile_instrumented(src, path, "_flip_probe.py")
    reg = Registry(os.path.dirname(path), os.getcwd())
    reg.register(os.path.realpath(path), facts)
    reg.test_files.add(os.path.realpath(__file__))
    results = []
    for occ in (1, 2, 3, 9):
        tracer = Tracer(reg, force=flip_of("_flip_probe.py:4:8", occ))
        instrument.set_tracer(tracer)
        ns = {}
        exec(code, ns)

        def root():
            return ns["f"]([0, 2, 3])
        tracer.start("x", root.__code__)
        got = root()
        tracer.stop()
        results.append((got, bool(tracer.reached)))
    instrument.set_tracer(Tracer(Registry(os.getcwd(), os.getcwd())))
    assert results == [([0, 2, 3], True), ([3], True), ([2], True), ([2, 3], False)]


def test_stdlib_sample_is_analysed_without_errors():
    root = os.path.dirname(os.__file__)
    names = ["argparse.py", "dataclasses.py", "enum.py", "functools.py", "inspect.py", "typing.py",
             "pathlib.py", "asyncio/tasks.py", "json/decoder.py", "email/_header_value_parser.py"]
    for n in names:
        p = os.path.join(root, n)
        if not os.path.exists(p):   # pathlib is a package since 3.13
            p = os.path.join(root, n[:-3], "__init__.py")
        with open(p, encoding="utf-8") as fh:
            src = fh.read()
        code, facts = instrument.compile_instrumented(src, p, n)
        for (a, b, k) in facts.edges:
            assert facts.nodes[a].method == facts.nodes[b].method
        for m in facts.methods:
            assert m.entry in facts.nodes and facts.nodes[m.entry].method == m.id
        assert all("\t" not in x and "\n" not in x for x in facts.nodes)


def _run_flipped(src, flip):
    path = os.path.join(os.path.dirname(__file__), "_flip_probe2.py")
    code, facts = instrument.compile_instrumented(src, path, "_flip_probe2.py")
    reg = Registry(os.path.dirname(path), os.getcwd())
    reg.register(os.path.realpath(path), facts)
    reg.test_files.add(os.path.realpath(__file__))
    tracer = Tracer(reg, force=flip_of(*flip) if flip else None)
    instrument.set_tracer(tracer)
    ns = {}
    exec(code, ns)

    def root():
        return ns["f"](0, 5)
    try:
        tracer.start("x", root.__code__)
        got = root()
        rec = tracer.stop()
    finally:
        instrument.set_tracer(Tracer(Registry(os.getcwd(), os.getcwd())))
    return got, bool(tracer.reached), rec, facts


def test_flip_short_circuit_operand_and_ternary():
    src = "def f(a, b):\n    y = a or b\n    z = 'big' if y > 3 else 'small'\n    return y, z\n"
    got, flipped, rec, facts = _run_flipped(src, None)
    assert got == (5, "big") and not flipped
    steps = rec.steps_node[1:]   # step 0: the statement of root() calling f
    assert steps == ["_flip_probe2.py:2:8:or", "_flip_probe2.py:2:4", "_flip_probe2.py:3:17:if",
                     "_flip_probe2.py:3:4", "_flip_probe2.py:4:4"]
    assert [rec.branch[i] for i in (1, 3)] == [0, 1]
    # the falsy `a` flipped: `or` short-circuits with a truthy stand-in (True == 1)
    got, flipped, _, _ = _run_flipped(src, ("_flip_probe2.py:2:8:or", 1))
    assert flipped and got == (True, "small")
    got, flipped, _, _ = _run_flipped(src, ("_flip_probe2.py:3:17:if", 1))
    assert flipped and got == (5, "small")
