"""Ground truth of QuixBugs Java (issue 15): the faulty lines of each of the 40 programs of
`java_programs/`, found by comparing it with its fixed version in `correct_java_programs/`.

    python3 corpus/quixbugs-java/truth.py CHECKOUT OUT.tsv [--python-truth TSV]

CHECKOUT is a jkoppel/QuixBugs checkout (read only). The comparison ignores what differs
between the two folders without being the fix: the `package` line, `import` lines, comments,
blank lines and whitespace. Of each differing hunk, in buggy-file coordinates:

* replaced or deleted lines are faulty; where such a line continues a statement begun on an
  earlier line (that line does not end a statement: `;`, `{`, `}`), the statement's first line
  is faulty too (a ranking of lines may name either);
* an insertion (a line the fix adds) makes the statements just before and just after the
  insertion point faulty (lines of braces or `else` only are not statements), as
  `../shared/bench/quixbugs-python.tsv` does for the Python programs.

Two programs' diffs say more than their bug; OVERRIDES names their faulty lines and says why
(the `note` column). Any listed line counts. With --python-truth the table of the same 40 bugs in Python is read and
each program's hunk kind (replace / insert) is compared with its Python twin's: the columns
`python_hunk_kind` and `python_bug_kind` are filled and a program whose kind differs is named
on stderr (exit status 1).
"""

import argparse
import csv
import difflib
import os
import re
import sys

# Where the diff says more than the bug (checked by hand against the JUnit tests and the Python
# twin): program -> (faulty lines, hunk kind, why)
OVERRIDES = {
    "BREADTH_FIRST_SEARCH": ([24], "replace", "the fix also uncomments the final `return false;`, which "
                             "javac rejects as unreachable after the buggy `while (true)`: a consequence, "
                             "not the fault"),
    "SHORTEST_PATHS": ([30], "replace", "the buggy file has a second `shortest_paths(Node, List<WeightedEdge>)` "
                       "that the fixed one lacks and no test calls; the fault of the tested method is the "
                       "assignment target on line 30"),
}

STRUCTURAL = re.compile(r"^(\}|\{|\)|;|\s)*(else)?(\s|\{|\})*$")
HELPERS = {"Node", "WeightedEdge"}


def code_lines(text):
    """[(line number, normalized code)] of a Java source: comments, `package` and `import`
    lines and blank lines dropped, whitespace collapsed."""
    out = []
    in_block = False
    for no, raw in enumerate(text.splitlines(), 1):
        line, i, buf, in_str = raw, 0, [], None
        while i < len(line):
            c = line[i]
            if in_block:
                if line.startswith("*/", i):
                    in_block = False
                    i += 2
                else:
                    i += 1
                continue
            if in_str:
                buf.append(c)
                if c == "\\" and i + 1 < len(line):
                    buf.append(line[i + 1])
                    i += 2
                    continue
                if c == in_str:
                    in_str = None
                i += 1
                continue
            if c in "\"'":
                in_str = c
            elif line.startswith("//", i):
                break
            elif line.startswith("/*", i):
                in_block = True
                i += 2
                continue
            buf.append(c)
            i += 1
        code = " ".join("".join(buf).split())
        if not code or re.match(r"^(package|import)\s", code):
            continue
        out.append((no, code))
    return out


def is_statement(code):
    return not STRUCTURAL.match(code)


def statement_start(lines, k):
    """Index of the first line of the statement that line `lines[k]` belongs to."""
    while k > 0 and not lines[k - 1][1].endswith((";", "{", "}")) and not lines[k - 1][1].startswith("@"):
        k -= 1
    return k


def compare(buggy_text, fixed_text):
    """(faulty lines, changed lines, hunk kind) of one program, in buggy-file coordinates."""
    a = code_lines(buggy_text)
    b = code_lines(fixed_text)
    # (compared without any whitespace: `put("+",1)` and `put("+", 1)` are the same line)
    sm = difflib.SequenceMatcher(a=["".join(c.split()) for _, c in a], b=["".join(c.split()) for _, c in b],
                                 autojunk=False)
    faulty, changed, kinds = set(), set(), set()
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        if tag in ("replace", "delete"):
            kinds.add("replace")
            for k in range(i1, i2):
                changed.add(a[k][0])
                faulty.add(a[k][0])
                faulty.add(a[statement_start(a, k)][0])
        else:  # insert: the statements around the insertion point
            kinds.add("insert")
            before = next((a[k][0] for k in range(i1 - 1, -1, -1) if is_statement(a[k][1])), None)
            after = next((a[k][0] for k in range(i1, len(a)) if is_statement(a[k][1])), None)
            for no in (before, after):
                if no is not None:
                    faulty.add(no)
                    changed.add(no)
    kind = "+".join(sorted(kinds)) if kinds else "none"
    return sorted(faulty), sorted(changed), kind


def programs(checkout):
    d = os.path.join(checkout, "java_programs")
    return sorted(f[:-5] for f in os.listdir(d) if f.endswith(".java") and f[:-5] not in HELPERS)


def read_python_truth(path):
    with open(path, encoding="utf-8") as fh:
        return {r["program"]: r for r in csv.DictReader(fh, delimiter="\t")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout")
    ap.add_argument("out")
    ap.add_argument("--python-truth")
    a = ap.parse_args(argv)
    py = read_python_truth(a.python_truth) if a.python_truth else {}
    rows, bad = [], []
    for name in programs(a.checkout):
        with open(os.path.join(a.checkout, "java_programs", name + ".java"), encoding="utf-8") as fh:
            buggy = fh.read()
        with open(os.path.join(a.checkout, "correct_java_programs", name + ".java"), encoding="utf-8") as fh:
            fixed = fh.read()
        faulty, changed, kind = compare(buggy, fixed)
        note = ""
        if name in OVERRIDES:
            faulty, kind, note = OVERRIDES[name]
        twin = py.get(name.lower(), {})
        row = {"program": name, "buggy_file": f"java_programs/{name}.java",
               "faulty_lines": ",".join(map(str, faulty)), "hunk_kind": kind,
               "changed_lines": ",".join(map(str, changed)),
               "python_hunk_kind": twin.get("hunk_kind", ""), "python_bug_kind": twin.get("bug_kind", ""),
               "note": note}
        if not faulty:
            bad.append(f"{name}: no difference found")
        elif py and twin.get("hunk_kind") != kind:
            bad.append(f"{name}: hunk kind {kind}, Python's {twin.get('hunk_kind') or 'missing'}")
        rows.append(row)
    with open(a.out, "w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    for m in bad:
        print(f"truth.py: {m}", file=sys.stderr)
    print(f"truth.py: {len(rows)} programs, {len(bad)} disagreement(s); written to {a.out}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
