"""A condition with short-circuit operands is a branch step whatever operand decided it
(issue 20 §4b).

`if A or B:` used to be recorded as a step of the `if` only when `B` was evaluated: when `A`
decided, control went from the `A:or` pseudo-step straight to the body, the `if` had no step
and no outcome, and a flip of `A` (the only instance there was) let `B` decide instead, so
the experiment changed nothing.  Now the operands' steps come first, then the statement's step
with the truth value of the whole condition, then the body / else; flipping that step inverts
the whole condition.  Each project is traced for real (pytest + the plugin) and flipped through
the dump's `[rerun]` recipe, as the Rust side runs experiments.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_defects import base_env, trace, write  # noqa: E402

SRC = """
    def classify(n, strict):
        if n < 0 or strict:
            kind = "bad"
        else:
            kind = "ok"
        return kind


    def both(a, b):
        if a > 0 and b > 0:
            return "both"
        return "not both"


    def nested(a, b, c):
        if a and (b or c):
            return 1
        return 2


    def negated(a, b):
        if not (a or b): return 1
        return 2


    def scan(xs, stop):
        i = 0
        while i < len(xs) and xs[i] != stop:
            i += 1
        return i


    def grade(a, b, c):
        if a and b:
            return "A"
        elif b or c:
            return "B"
        else:
            return "C"


    def checked(a, b):
        assert a or b, "neither"
        return 1


    def label(a, b):
        return "x" if a or b else "y"


    def one_line(a, b, c):
        if (a and b) or c: return 1
        return 2
    """

TESTS = """
    from cond import both, checked, classify, grade, label, negated, nested, one_line, scan


    def test_or_first_decides():
        assert classify(-1, True) == "ok"          # fails: passes only if the whole `if` is inverted


    def test_and_first_decides():
        assert both(-1, -1) == "both"              # fails: passes only if the whole `if` is inverted


    def test_others():
        assert nested(1, 1, 0) == 1
        assert nested(0, 1, 1) == 2
        assert negated(1, 0) == 2
        assert scan([1, 2, 3], 2) == 1
        assert grade(0, 1, 0) == "B"
        assert checked(1, 0) == 1
        assert label(1, 0) == "x"
        assert one_line(1, 1, 0) == 1
    """


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    root = tmp_path_factory.mktemp("cond")
    write(root, {"src/cond.py": SRC, "tests/conftest.py": CONFTEST, "tests/test_cond.py": TESTS})
    d = trace(root)
    assert d.status and d.status["ok"], d.proc.stdout
    return root, d


CONFTEST = "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'src'))\n"


def stmt_id(d, line, suffix=None):
    """The first statement (or the pseudo-statement) of cond.py starting at `line`."""
    ids = [r[0] for r in d.rows("stmt.facts") if r[3] == "cond.py" and r[4] == str(line)]
    ids = [i for i in ids if (i.endswith(":" + suffix) if suffix else i.count(":") == 2)]
    assert len(ids) == 1 or (ids and not suffix), (line, suffix, ids)
    return min(ids, key=lambda i: int(i.split(":")[2]))


def steps_with_outcomes(d, test):
    tr = d.test(test)["trace"]
    out = {int(r[1]): int(r[2]) for r in d.rows("branch.facts") if r[0] == tr}
    return [(r[2], out.get(int(r[1]))) for r in d.steps(tr)]


def after(steps, sid, k=1):
    """The k-th step of `sid` and the steps that follow it."""
    seen = 0
    for i, (s, _) in enumerate(steps):
        if s == sid:
            seen += 1
            if seen == k:
                return steps[i:]
    raise AssertionError(f"{sid} is not a step {k} times: {steps}")


def test_the_statement_is_a_step_when_the_first_operand_decides(proj):
    _, d = proj
    stats = d.check()
    assert stats["pairs"] == stats["cfg_pairs"], stats["non_cfg"]
    # `n < 0` true decides `or`: its operand step, then the `if` (outcome 1), then the body
    s = steps_with_outcomes(d, "test_or_first_decides")
    op, if_, body = stmt_id(d, 3, "or"), stmt_id(d, 3), stmt_id(d, 4)
    assert after(s, op)[:3] == [(op, 1), (if_, 1), (body, None)], s
    # `a > 0` false decides `and`: the `if` is a step with outcome 0, then what follows the `if`
    s = steps_with_outcomes(d, "test_and_first_decides")
    op, if_, nxt = stmt_id(d, 11, "and"), stmt_id(d, 11), stmt_id(d, 13)
    assert after(s, op)[:3] == [(op, 0), (if_, 0), (nxt, None)], s


def test_static_facts_go_through_the_statement(proj):
    _, d = proj
    cfg = {(r[0], r[1]) for r in d.rows("cfg.facts")}
    op, if_ = stmt_id(d, 3, "or"), stmt_id(d, 3)
    # the deciding outcome of an operand goes to the statement, never around it
    assert (op, if_) in cfg and (op, stmt_id(d, 4)) not in cfg
    assert (if_, stmt_id(d, 4)) in cfg and (if_, stmt_id(d, 6)) in cfg
    op, if_ = stmt_id(d, 11, "and"), stmt_id(d, 11)
    assert (op, if_) in cfg and (op, stmt_id(d, 13)) not in cfg
    # every operand pseudo-statement only leads to another operand or its statement
    kinds = {r[0]: r[2] for r in d.rows("stmt.facts")}
    for (a, b) in cfg:
        if a.startswith("cond.py:") and (a.endswith(":or") or a.endswith(":and")):
            assert b.split(":")[:2] == a.split(":")[:2] or kinds[b] == "branch", (a, b)
            assert b.startswith(":".join(a.split(":")[:2]) + ":"), (a, b)


def test_nested_not_while_elif_assert_ternary(proj):
    _, d = proj
    s = steps_with_outcomes(d, "test_others")
    # nested(1, 1, 0): `a`, then `b` decides `(b or c)` and the whole condition
    a, b, if_ = stmt_id(d, 17, "and"), stmt_id(d, 17, "or"), stmt_id(d, 17)
    assert after(s, a)[:4] == [(a, 1), (b, 1), (if_, 1), (stmt_id(d, 18), None)]
    # nested(0, 1, 1): `a` false decides: the `if` is a step with outcome 0
    assert after(s, a, 2)[:3] == [(a, 0), (if_, 0), (stmt_id(d, 19), None)]
    # negated(1, 0): `a` true decides `a or b`: `not (a or b)` is false
    op, if_ = stmt_id(d, 23, "or"), stmt_id(d, 23)
    assert after(s, op)[:3] == [(op, 1), (if_, 0), (stmt_id(d, 24), None)]
    assert "cond.py:23:21" not in [x for (x, _) in s]          # `return 1` on the `if` line
    # scan: the loop ends when `i < len(xs)` holds and `xs[i] != stop` does not (the statement
    # evaluates the last operand), and the `while` is a step at every evaluation
    op, wh = stmt_id(d, 29, "and"), stmt_id(d, 29)
    assert [o for (x, o) in s if x == wh] == [1, 0]
    assert [o for (x, o) in s if x == op] == [1, 1]
    # grade(0, 1, 0): `a` false decides the `if` (0); `b` true decides the `elif` (1)
    a, if_ = stmt_id(d, 35, "and"), stmt_id(d, 35)
    b, elif_ = stmt_id(d, 37, "or"), stmt_id(d, 37)
    assert after(s, a)[:5] == [(a, 0), (if_, 0), (b, 1), (elif_, 1), (stmt_id(d, 38), None)]
    # checked(1, 0): the assert held on its first operand
    op, as_ = stmt_id(d, 44, "or"), stmt_id(d, 44)
    assert after(s, op)[:3] == [(op, 1), (as_, 1), (stmt_id(d, 45), None)]
    # label(1, 0): the ternary test is a `:if` pseudo-statement over the whole test
    op, t = stmt_id(d, 49, "or"), stmt_id(d, 49, "if")
    assert after(s, op)[:3] == [(op, 1), (t, 1), (stmt_id(d, 49), None)]
    # one_line(1, 1, 0): two statements on a line are traced instruction by instruction; the
    # operands' own jumps, run after their wrappers moved the step on, begin no step
    if_ = stmt_id(d, 53)
    a, b = sorted({x for (x, _) in s if x.startswith("cond.py:53:") and x.endswith(":and")},
                  key=lambda i: int(i.split(":")[2]))
    if sys.version_info < (3, 11):
        # Python 3.9 / 3.10: an instruction has a line, no column; the line is the `if`'s, and
        # the `return` after it on the same line begins no step of its own
        assert after(s, a)[:3] == [(a, 1), (b, 1), (if_, 1)], s
        return
    assert after(s, a)[:4] == [(a, 1), (b, 1), (if_, 1), ("cond.py:53:23", None)], s


def flip(d, root, test, stmt, occ, name):
    return d.flip(f"tests/test_cond.py::{test}", stmt, occ, root / name, base_env())


def test_flipping_the_statement_inverts_the_whole_condition(proj):
    root, d = proj
    # `if n < 0 or strict:` decided by `n < 0` (strict is True too): inverting the operand lets
    # `strict` decide, the body still runs and the test still fails ...
    r = flip(d, root, "test_or_first_decides", stmt_id(d, 3, "or"), 1, "or_op.json")
    assert r["flipped"] is True and r["outcome"] == "fail", r
    # ... inverting the `if` skips the body: the test passes
    r = flip(d, root, "test_or_first_decides", stmt_id(d, 3), 1, "or_if.json")
    assert r["flipped"] is True and r["outcome"] == "pass", r
    assert r["detail"].startswith(f"flipped: {stmt_id(d, 3)}#1 to 0"), r
    # `if a > 0 and b > 0:` decided by a false `a > 0`: inverting it leaves `b > 0` false ...
    r = flip(d, root, "test_and_first_decides", stmt_id(d, 11, "and"), 1, "and_op.json")
    assert r["flipped"] is True and r["outcome"] == "fail", r
    # ... inverting the `if` enters the body without evaluating `b > 0`: the test passes
    r = flip(d, root, "test_and_first_decides", stmt_id(d, 11), 1, "and_if.json")
    assert r["flipped"] is True and r["outcome"] == "pass", r
    assert r["detail"].startswith(f"flipped: {stmt_id(d, 11)}#1 to 1"), r


def test_flip_occurrences_count_every_evaluation_of_the_statement(proj):
    root, d = proj
    # `nested` runs twice in test_others; its `if` is a step both times (once decided by `b`,
    # once by a false `a`): occurrence 2 is the second call, whose inversion returns 1, not 2
    if_ = stmt_id(d, 17)
    s = steps_with_outcomes(d, "test_others")
    assert [o for (x, o) in s if x == if_] == [1, 0]
    r = flip(d, root, "test_others", if_, 2, "nested2.json")
    assert r["flipped"] is True and r["detail"].startswith(f"flipped: {if_}#2 to 1"), r
    assert r["outcome"] == "fail" and "assert 1 == 2" in r["detail"], r
    r = flip(d, root, "test_others", if_, 3, "nested3.json")
    assert r["flipped"] is False and r["outcome"] == "pass", r
