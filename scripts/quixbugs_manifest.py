#!/usr/bin/env python3
"""Write an evaluation manifest (cases.toml format) for the 40 QuixBugs Python programs.

usage: quixbugs_manifest.py CHECKOUT OUT.toml [TSV] [--timeout SECONDS] [--correct] [--relative]

CHECKOUT  a QuixBugs work tree (holds python_programs/, python_testcases/, conftest.py);
          its code is only referred to, never copied.
OUT.toml  the manifest to write.
TSV       ground truth with the columns program, buggy_file, faulty_lines, bug_kind, ...
          (default: ../shared/bench/quixbugs-python.tsv relative to the repository root).

QuixBugs' root conftest.py adds the pytest options --correct (import correct_python_programs
instead of python_programs) and --runslow; without them its tests import the buggy programs,
so the test command needs no flag. Some buggy programs (bitcount, find_first_in_sorted, sqrt:
the TSV's timeout_tests column) loop forever on some inputs: --timeout N adds pytest-timeout's per-test limit
(`--timeout=N`, needs the pytest-timeout package). --correct writes test
commands that run the correct versions (to check that every suite passes there).
--relative writes `dir` relative to the manifest's folder instead of as an absolute path.
"""
import argparse
import csv
import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TSV = REPO_ROOT / ".." / "shared" / "bench" / "quixbugs-python.tsv"
REQUIRED_COLUMNS = ("program", "buggy_file", "faulty_lines", "bug_kind")


class ManifestError(Exception):
    pass


def toml_str(s):
    """A TOML basic string."""
    out = []
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_list(items):
    return "[" + ", ".join(toml_str(i) for i in items) + "]"


def read_ground_truth(tsv):
    """Rows of the ground-truth table as dicts, each with its 1-based line number."""
    try:
        text = tsv.read_text(encoding="utf-8")
    except OSError as e:
        raise ManifestError("%s: cannot read ground truth: %s" % (tsv, e.strerror or e))
    reader = csv.DictReader(text.splitlines(), delimiter="\t")
    missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise ManifestError("%s:1: missing column(s): %s" % (tsv, ", ".join(missing)))
    rows = []
    seen = {}
    for line_no, row in enumerate(reader, start=2):
        if not any((v or "").strip() for v in row.values()):
            continue
        where = "%s:%d" % (tsv, line_no)
        for col in REQUIRED_COLUMNS:
            if not (row.get(col) or "").strip():
                raise ManifestError("%s: empty %s" % (where, col))
        program = row["program"].strip()
        if not program.isidentifier():
            raise ManifestError("%s: program %r is not a Python module name" % (where, program))
        if program in seen:
            raise ManifestError("%s: program %s already listed on line %d" % (where, program, seen[program]))
        seen[program] = line_no
        expected_file = "python_programs/%s.py" % program
        if row["buggy_file"].strip() != expected_file:
            raise ManifestError("%s: buggy_file %r, expected %r" % (where, row["buggy_file"].strip(), expected_file))
        lines = []
        for part in row["faulty_lines"].split(","):
            part = part.strip()
            if not part.isdigit() or int(part) < 1:
                raise ManifestError("%s: faulty_lines %r: %r is not a line number" % (where, row["faulty_lines"], part))
            lines.append(int(part))
        rows.append({"line": line_no, "program": program, "file": expected_file,
                     "lines": lines, "kind": row["bug_kind"].strip(), "row": row})
    if not rows:
        raise ManifestError("%s: no programs listed" % tsv)
    return rows


def check_checkout(checkout, rows, tsv):
    for need in ("conftest.py", "python_programs", "python_testcases"):
        if not (checkout / need).exists():
            raise ManifestError("%s: not a QuixBugs checkout (no %s)" % (checkout, need))
    for r in rows:
        where = "%s:%d" % (tsv, r["line"])
        program_file = checkout / r["file"]
        test_file = checkout / "python_testcases" / ("test_%s.py" % r["program"])
        if not program_file.is_file():
            raise ManifestError("%s: %s does not exist" % (where, program_file))
        if not test_file.is_file():
            raise ManifestError("%s: %s does not exist" % (where, test_file))
        n = len(program_file.read_text(encoding="utf-8").splitlines())
        for line in r["lines"]:
            if line > n:
                raise ManifestError("%s: faulty line %d is past the end of %s (%d lines)"
                                    % (where, line, program_file, n))


# Seconds a test of a program whose tests loop forever may run under tracing (FauxPy's anchor
# ran them under pytest-timeout's 5 s).
HANG_TIMEOUT = 5


def render(rows, dir_value, timeout, correct):
    out = [
        "# QuixBugs Python programs: evaluation manifest written by scripts/quixbugs_manifest.py.",
        "# Tests import the buggy python_programs/ unless pytest gets --correct.",
    ]
    hanging = [r["program"] for r in rows
               if (r["row"].get("timeout_tests") or "0").strip() not in ("", "0")]
    if timeout is None and hanging:
        out.append("# Tests of %s never end: their cases get `timeout = %g` (the tracer's per-test"
                   % (", ".join(hanging), HANG_TIMEOUT))
        out.append("# limit); every other case uses eval's --test-timeout, so give it room: tests run")
        out.append("# 20-100x slower under tracing, and a slow test stopped early would count as failing.")
    out.append("")
    for r in rows:
        test = ["python3", "-m", "pytest", "-q", "python_testcases/test_%s.py" % r["program"]]
        if timeout is not None:
            test.append("--timeout=%g" % timeout)
        if correct:
            test.append("--correct")
        counts = [("failing", "failing_tests"), ("passing", "passing_tests"),
                  ("timeouts", "timeout_tests")]
        known = ["%s %s" % (r["row"][col].strip(), label) for label, col in counts
                 if (r["row"].get(col) or "").strip()]
        if known:
            out.append("# ground truth: " + ", ".join(known))
        out += [
            "[[case]]",
            "name = %s" % toml_str(r["program"]),
            "dir = %s" % toml_str(dir_value),
            "src = %s" % toml_str(r["file"]),
            "test = %s" % toml_list(test),
            "faulty = %s" % toml_list(["%s.py:%s" % (r["program"], ",".join(map(str, r["lines"])))]),
            "kind = %s" % toml_str(r["kind"]),
        ]
        if timeout is None and r["program"] in hanging:
            out.append("timeout = %g" % HANG_TIMEOUT)
        out.append("")
    return "\n".join(out)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkout", type=Path, help="QuixBugs work tree")
    ap.add_argument("out", type=Path, help="manifest to write")
    ap.add_argument("tsv", type=Path, nargs="?", default=DEFAULT_TSV, help="ground-truth table")
    ap.add_argument("--timeout", type=float, help="per-test limit in seconds (pytest-timeout)")
    ap.add_argument("--correct", action="store_true", help="run the correct versions")
    ap.add_argument("--relative", action="store_true", help="write dir relative to OUT's folder")
    args = ap.parse_args(argv)
    if args.timeout is not None and not args.timeout > 0:
        ap.error("--timeout must be positive, got %g" % args.timeout)
    try:
        tsv = args.tsv.resolve()
        checkout = args.checkout.resolve()
        rows = read_ground_truth(tsv)
        check_checkout(checkout, rows, tsv)
        out = args.out.resolve()
        dir_value = os.path.relpath(checkout, out.parent) if args.relative else str(checkout)
        text = render(rows, dir_value, args.timeout, args.correct)
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as e:
            raise ManifestError("%s: cannot write manifest: %s" % (out, e.strerror or e))
    except ManifestError as e:
        print("quixbugs_manifest: error: %s" % e, file=sys.stderr)
        return 1
    print("wrote %d cases to %s" % (len(rows), out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
