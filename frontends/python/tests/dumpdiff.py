"""Differential check of two trace dumps (issue 13 §3): did a change to the tracer change a fact?

    python3 dumpdiff.py DUMP_A DUMP_B [--heap-loose] [--mask PATH ...]

Every file of the dumps must be equal, except what is a wall-clock time or a path:

* ``*.facts`` byte for byte, but ``heap.facts`` with its object ids renamed per trace in order
  of first appearance (an id is an address: only which rows of one trace share an id means
  anything, and the core links heap rows within a trace only);
* ``manifest.toml`` with every ``*_ms`` / ``*_s`` value masked (durations, the plain run's wall
  time, time limits derived from plain durations) and the dump's own path masked;
* ``rerun.json`` likewise (``tests[ID].timeout`` comes from a plain duration);
* the tracer package's cache directory (``prosecutor/python/<hash>``, its hash is the package's
  content) and every ``--mask`` path are masked everywhere; ``source/`` byte for byte;
  ``.prosecutor-*`` scratch files are ignored.

Object ids are addresses, and which dead object's address a new object reuses depends on the
whole allocation history of the process: two runs of one unchanged tracer can differ in which
``use`` rows of heap.facts alias a dead object (with address randomisation on; a change of the
tracer that allocates differently does it deterministically). Run both sides with
``keepids.py`` (``-p keepids``: every object whose id the tracer takes stays alive, so no
address is reused) to compare heap.facts exactly; ``--heap-loose`` instead compares only the
``def`` rows of heap.facts (which do not depend on reuse) and counts the differing ``use`` rows.

Exit status 0 when the dumps are equal under these rules, 1 otherwise (the differences listed).
"""

import argparse
import json
import os
import re
import sys
from collections import Counter

_TIME = re.compile(r"^(\s*)(\w+_ms|\w+_s)\s*=.*$")
_CACHE = re.compile(r"prosecutor/python/[0-9a-f]{16}")


def norm_heap(text):
    per = {}
    out = []
    for line in text.splitlines():
        f = line.split("\t")
        if len(f) == 5:
            ids = per.setdefault(f[0], {})
            o = int(f[3])
            if o < (1 << 60):          # namespace slots (2**60 + k) are not addresses
                f[3] = "o%d" % ids.setdefault(o, len(ids))
        out.append("\t".join(f))
    return "\n".join(out)


def heap_loose(x, y):
    """(def rows equal, use rows only in x, use rows only in y), ids left out."""
    def parts(t):
        d, u = [], []
        for line in t.splitlines():
            f = line.split("\t")
            (d if f[4] == "def" else u).append(tuple(f[:3]))
        return d, u
    (dx, ux), (dy, uy) = parts(x), parts(y)
    cx, cy = Counter(ux), Counter(uy)
    return dx == dy, sum((cx - cy).values()), sum((cy - cx).values())


def _files(d):
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            rel = os.path.relpath(p, d)
            if not rel.startswith(".prosecutor"):
                out[rel] = p
    return out


def compare(a, b, heap_loose_mode=False, masks=()):
    """The differences between dumps `a` and `b` (an empty list: equal), and notes."""
    A, B = _files(a), _files(b)
    bad, notes = [], []
    for k in sorted(set(A) | set(B)):
        if k not in A or k not in B:
            bad.append(f"{k}: only in {'the first' if k in A else 'the second'} dump")
            continue
        with open(A[k], encoding="utf-8", errors="replace") as fh:
            x = fh.read()
        with open(B[k], encoding="utf-8", errors="replace") as fh:
            y = fh.read()
        if k == "heap.facts":
            if heap_loose_mode:
                same_defs, only_a, only_b = heap_loose(x, y)
                notes.append(f"heap.facts: def rows {'equal' if same_defs else 'DIFFER'}; "
                             f"use rows: {only_a} only in the first, {only_b} only in the second")
                if not same_defs:
                    bad.append("heap.facts: def rows differ")
                continue
            x, y = norm_heap(x), norm_heap(y)
        elif k == "manifest.toml":
            x, y = x.replace(a, "<DUMP>"), y.replace(b, "<DUMP>")
            x, y = ("\n".join(_TIME.sub(r"\1\2 = <t>", ln) for ln in t.splitlines()) for t in (x, y))
        elif k == "rerun.json":
            jx, jy = json.loads(x.replace(a, "<DUMP>")), json.loads(y.replace(b, "<DUMP>"))
            for j in (jx, jy):
                for t in (j.get("tests") or {}).values():
                    if isinstance(t, dict):
                        t.pop("timeout", None)
            x, y = json.dumps(jx, sort_keys=True), json.dumps(jy, sort_keys=True)
        x, y = _CACHE.sub("prosecutor/python/<hash>", x), _CACHE.sub("prosecutor/python/<hash>", y)
        for m in masks:
            x, y = x.replace(m, "<MASK>"), y.replace(m, "<MASK>")
        if x != y:
            xl, yl = x.splitlines(), y.splitlines()
            i = next((i for i in range(min(len(xl), len(yl))) if xl[i] != yl[i]), min(len(xl), len(yl)))
            bad.append(f"{k}: differs ({len(xl)} vs {len(yl)} lines; first at line {i + 1}: "
                       f"{xl[i] if i < len(xl) else '<end>'!r} vs {yl[i] if i < len(yl) else '<end>'!r})")
    return bad, notes


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--heap-loose", action="store_true", help="compare only the def rows of heap.facts")
    p.add_argument("--mask", action="append", default=[], help="a path to mask (e.g. each side's tracer package)")
    o = p.parse_args(argv)
    bad, notes = compare(o.a, o.b, o.heap_loose, o.mask)
    for n in notes:
        print(n)
    for x in bad:
        print(x)
    print(("DIFFERENT" if bad else "EQUAL") + f": {o.a} {o.b} ({len(_files(o.a))} files)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
