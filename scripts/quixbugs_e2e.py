#!/usr/bin/env python3
"""End to end per QuixBugs program (issue 13: median <= 3.5 s, none above 30 s, same top-k).

    python3 scripts/quixbugs_e2e.py MANIFEST --bin BIN [--json OUT]

MANIFEST is `scripts/quixbugs_manifest.py`'s `eval` manifest. For each `[[case]]` it runs, in
the case's `dir`, `BIN localize --src DIR --format json [--test-timeout 5] -- TEST` (DIR: the
case's `src`, or its folder when `src` is a file, as `eval` reads it; `--test-timeout 5` for a
program whose ground-truth comment in the manifest counts tests that time out, i.e. never end)
and records the wall time and the faulty line's pessimistic place in the ranking (every line
scoring at least as high as the best-scored faulty line is counted). Progress lines go to
stderr; the per-program lines, the median, the programs above 30 s and top-1/3/5/10 to stdout.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib


def place(report, faulty):
    faults = set()
    for f in faulty:
        name, lines = f.split(":")
        faults |= {(name, int(x)) for x in lines.split(",")}
    ranking = report.get("ranking") or []
    scores = [x["score"] for x in ranking if (os.path.basename(x["file"]), x["line"]) in faults]
    if not scores:
        return None
    best = max(scores)
    return sum(1 for x in ranking if x["score"] >= best)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("manifest")
    ap.add_argument("--bin", required=True)
    ap.add_argument("--json")
    a = ap.parse_args()
    with open(a.manifest, encoding="utf-8") as fh:
        text = fh.read()
    hangs = {m.group(2) for m in re.finditer(
        r'# ground truth: .*?(\d+) timeouts\n\[\[case\]\]\nname = "([^"]+)"', text) if int(m.group(1)) > 0}
    rows = []
    for c in tomllib.loads(text)["case"]:
        src = os.path.dirname(c["src"]) if c["src"].endswith(".py") else c["src"]
        cmd = [a.bin, "localize", "--src", src, "--format", "json"]
        cmd += ["--test-timeout", "5"] if c["name"] in hangs else []
        t0 = time.monotonic()
        p = subprocess.run(cmd + ["--", *c["test"]], cwd=c["dir"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        seconds = time.monotonic() - t0
        try:
            pos = place(json.loads(p.stdout), c["faulty"])
        except ValueError:
            pos = None
            print(f"{c['name']}: exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        rows.append({"name": c["name"], "seconds": round(seconds, 3), "place": pos})
        print(f"{c['name']} {seconds:.2f} s, fault at {pos}", flush=True)
    places = [r["place"] or float("inf") for r in rows]
    print(f"median {statistics.median(r['seconds'] for r in rows):.2f} s over {len(rows)} programs")
    print("above 30 s: " + (", ".join(f"{r['name']} {r['seconds']:.1f} s" for r in rows if r["seconds"] > 30) or "none"))
    print("top-1/3/5/10: " + " / ".join(str(sum(1 for p in places if p <= k)) for k in (1, 3, 5, 10)))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)
    sys.exit(1 if any(r["place"] is None for r in rows) else 0)


if __name__ == "__main__":
    main()
