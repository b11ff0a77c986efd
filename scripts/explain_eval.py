#!/usr/bin/env python3
"""Seeds 003 and 004's evaluation: `prosecutor explain` on every case of an eval manifest, its
nearest successful run scored against the case's faulty lines (docs/explain.md, spec §4), and its
causal path's length and whether it reaches a faulty line (seed 004's "Roots").

usage: explain_eval.py MANIFEST --out DIR [--bin PROSECUTOR] [--cases A,B] [--max-runs N]
                       [--test-timeout S] [--regression] [--explain-arg ARG ...]

MANIFEST  an `eval` manifest (cases with `dir`, `src`, `test` and `faulty`, as
          scripts/quixbugs_manifest.py writes; a case with `dump` uses that dump instead).
DIR       gets one JSON per case (explain's output, or {"error": ...}), explain.tsv (case, found,
          size, runs, score, bucket, report_has_fault, seconds, error) and summary.md: cases
          explained, reports found, report sizes, the share of reports scoring >= 80 % (the
          paper: 43.9 % of 107 Siemens versions), the Table 4 bucket histogram, and how many
          reports name a faulty line; then the causal paths: computed, complete, their median
          length, and how many contain a faulty line.

--regression  seed 004 in regression mode: a case with `reference_src` and `reference_test` (the
          fixed version and the command that tests it; scripts/quixbugs_manifest.py writes them)
          is first traced with `trace --passing-ok` into DIR/reference/CASE, and explain gets
          `--reference` that dump. Without it the causal path is in patch mode (against the
          nearest successful run, when one is found).

Each case runs `explain --no-cfx --format json --faulty F...` (the ranking's experiments are
not what is measured here), one case at a time; its re-runs use the warm runner.
`--explain-arg` passes more arguments to explain (repeatable; e.g. `--explain-arg=--force-loops`).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
BUCKETS = [100, 90, 80, 70, 60, 50, 40, 30, 20, 10, 0]


def command(case, base, args):
    """The explain command line and its working directory for one case."""
    cmd = [args.bin, "explain", "--no-cfx", "--format", "json", "--max-runs", str(args.max_runs)]
    cmd += args.explain_arg
    for f in case.get("faulty", []):
        cmd += ["--faulty", f]
    if "dump" in case:
        return cmd + [str((base / case["dump"]).resolve())], None
    cwd = (base / case["dir"]).resolve()
    src = case["src"]
    if (cwd / src).is_file():  # a file: its folder is the code under analysis, as in eval
        src = str(Path(src).parent)
    cmd += ["--src", src, "--test-timeout", str(case.get("timeout", args.test_timeout))]
    return cmd + ["--"] + list(case["test"]), cwd


def has_fault(report, faulty):
    """Whether a step of the report is on a faulty line."""
    lines = set()
    for f in faulty:
        path, ls = f.rsplit(":", 1)
        lines |= {(os.path.basename(path), int(x)) for x in ls.split(",")}
    return any((os.path.basename(s["file"]), s["line"]) in lines for s in report)


def trace_reference(case, base, args, out):
    """Traces the case's fixed version into OUT/reference/NAME: (its dump, None) or (None, why)."""
    cwd = (base / case["dir"]).resolve()
    src = case["reference_src"]
    if (cwd / src).is_file():
        src = str(Path(src).parent)
    dump = (out / "reference" / case["name"]).resolve()
    cmd = [args.bin, "trace", "--passing-ok", "--src", src, "--out", str(dump),
           "--test-timeout", str(case.get("timeout", args.test_timeout)), "--"]
    p = subprocess.run(cmd + list(case["reference_test"]), cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, "reference: " + ((p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1])
    return dump, None


def run_case(case, base, args, out):
    cmd, cwd = command(case, base, args)
    start = time.monotonic()
    if args.regression and "reference_src" in case:
        ref, err = trace_reference(case, base, args, out)
        if err:
            return {"error": err}, time.monotonic() - start
        cmd = cmd[:2] + ["--reference", str(ref)] + cmd[2:]
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    took = time.monotonic() - start
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}, took
    return json.loads(p.stdout), took


def row(name, out, took, faulty):
    g = out.get("path_generation") or {}
    err = out.get("error") or ("" if g else "; ".join(out.get("warnings", [])) or "not searched")
    report = out.get("nearest_successful_run", [])
    c = out.get("causal") or {}
    return {
        "case": name,
        "found": bool(g.get("found")),
        "size": g.get("size", 0),
        "runs": g.get("runs", 0),
        "score": g.get("score", 0.0) if g.get("found") else 0.0,
        "bucket": g.get("bucket", 0) if g.get("found") else 0,
        "report_has_fault": has_fault(report, faulty) if report else False,
        "causal_mode": c.get("mode", ""),
        "causal_length": c.get("length", 0),
        "causal_complete": bool(c.get("complete")),
        "causal_reaches_fault": bool(c.get("reaches_fault")),
        "causal_runs": c.get("runs", 0),
        "seconds": round(took, 2),
        "error": err.replace("\t", " "),
    }


def summary(rows):
    n = len(rows)
    found = [r for r in rows if r["found"]]
    lines = ["| | value |", "|---|---|", f"| cases | {n} |",
             f"| explained without error | {sum(1 for r in rows if not r['error'])} |",
             f"| nearest successful run found | {len(found)} |"]
    if found:
        sizes = [r["size"] for r in found]
        lines.append(f"| report size: median, max (statements) | {statistics.median(sizes)}, {max(sizes)} |")
        lines.append(f"| reports with <= 7 statements | {sum(s <= 7 for s in sizes)} |")
    good = sum(1 for r in rows if r["score"] >= 0.8)
    lines.append(f"| score >= 80 % (of all cases) | {good} ({100.0 * good / max(n, 1):.1f} %) |")
    lines.append(f"| report names a faulty line | {sum(r['report_has_fault'] for r in rows)} |")
    lines.append(f"| re-runs: median | {statistics.median([r['runs'] for r in rows]) if rows else 0} |")
    lines.append(f"| seconds per case: median, max | {statistics.median([r['seconds'] for r in rows]) if rows else 0}, "
                 f"{max([r['seconds'] for r in rows], default=0)} |")
    paths = [r for r in rows if r["causal_mode"]]
    lines.append(f"| causal path computed | {len(paths)} ({', '.join(sorted({r['causal_mode'] for r in paths})) or '-'}) |")
    if paths:
        reach = sum(r["causal_reaches_fault"] for r in paths)
        lines.append(f"| causal path complete (ended at its root) | {sum(r['causal_complete'] for r in paths)} |")
        lines.append(f"| causal path length: median, max | {statistics.median([r['causal_length'] for r in paths])}, "
                     f"{max(r['causal_length'] for r in paths)} |")
        lines.append(f"| causal path contains a faulty line | {reach} ({100.0 * reach / len(paths):.1f} % of paths, "
                     f"{100.0 * reach / max(n, 1):.1f} % of cases) |")
        lines.append(f"| causal path patched re-runs: median | {statistics.median([r['causal_runs'] for r in paths])} |")
    hist = ["", "| score bucket | cases |", "|---|---|"]
    for b in BUCKETS:
        label = "100 %" if b == 100 else f"{b}-{b + 9} %"
        hist.append(f"| {label} | {sum(1 for r in rows if r['bucket'] == b)} |")
    return "\n".join(lines + hist) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("manifest")
    ap.add_argument("--out", required=True)
    ap.add_argument("--bin", default=str(REPO / "target" / "release" / "prosecutor"))
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    ap.add_argument("--max-runs", type=int, default=200)
    ap.add_argument("--test-timeout", type=float, default=10)
    ap.add_argument("--regression", action="store_true",
                    help="seed 004 against the fixed version (reference_src / reference_test)")
    ap.add_argument("--explain-arg", action="append", default=[], help="more arguments for explain")
    args = ap.parse_args(argv)
    manifest = Path(args.manifest)
    cases = tomllib.loads(manifest.read_text())["case"]
    if args.cases:
        keep = set(args.cases.split(","))
        cases = [c for c in cases if c["name"] in keep]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, c in enumerate(cases, 1):
        result, took = run_case(c, manifest.parent, args, out)
        (out / f"{c['name']}.json").write_text(json.dumps(result, indent=1))
        r = row(c["name"], result, took, c.get("faulty", []))
        rows.append(r)
        print(f"[{i}/{len(cases)}] {c['name']}: found={r['found']} size={r['size']} "
              f"score={r['score']:.3f} runs={r['runs']} causal={r['causal_mode'] or '-'}:"
              f"{r['causal_length']}{'+' if r['causal_reaches_fault'] else ''} {r['seconds']} s {r['error']}",
              file=sys.stderr)
    cols = list(rows[0]) if rows else []
    with open(out / "explain.tsv", "w") as fh:
        fh.write("\t".join(cols) + "\n")
        for r in rows:
            fh.write("\t".join(str(r[k]) for k in cols) + "\n")
    text = summary(rows)
    (out / "summary.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
