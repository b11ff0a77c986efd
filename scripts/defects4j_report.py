#!/usr/bin/env python3
"""Tables of a Defects4J Lang `prosecutor eval` run, per subset: the paper's 58, the odd and the
even bugs (development and held-out halves), and all scored bugs; line and method level; time.

usage: defects4j_report.py EVAL_OUT [EVAL_OUT ...] [--tsv TSV] [--techniques all|main] [--per-bug]

EVAL_OUT  an `eval --out` folder (its cases.csv); several are merged (e.g. the odd half's and
          the even half's runs), a case seen twice taking its last folder's rows.
TSV       the ground truth (default ../shared/bench/defects4j-lang.tsv beside the repository),
          for the paper's 58 (column prosecutor58_guess).

Positions are pessimistic (the end of the faulty line's tie group); a fault not ranked counts
as not found (as eval's summary). EXAM = position / lines ranked by that technique; EXAM of
covered = position / the longest ranking of the case (SBFL's: every line a test ran), the same
denominator for every technique (a fault not found: 1). End-to-end time = tracing
(trace_seconds) + the full PROSECUTOR run (inference and experiments).
"""
import argparse
import csv
import statistics
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TSV = REPO_ROOT / ".." / "shared" / "bench" / "defects4j-lang.tsv"
TOP_K = (1, 3, 5, 10)
MAIN = ("prosecutor", "prosecutor-nocfx", "prosecutor-f", "prosecutor-fp", "prosecutor-nocompress",
        "prosecutor-paper-rules", "prosecutor-paper", "ochiai", "tarantula", "dstar", "op2", "jaccard",
        "barinel", "naish1", "cp")
PAPER_58 = {"prosecutor": (20, 31, 41, 49, 6.0)}


def read_cases(folders):
    rows = {}
    for f in folders:
        path = Path(f) / "cases.csv"
        with open(path, newline="", encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                rows[(r["case"], r["technique"])] = r
    return rows


def bug_of(case):
    return int(case.split("-")[1])


def covered(rows, case, n_key):
    """The longest ranking any technique gave for a case (SBFL's: every line a test ran)."""
    return max((int(r[n_key]) for (c, _), r in rows.items() if c == case and r[n_key]), default=0)


def stats(rows, cases, tech, level):
    pos_key, n_key = ("position_pessimistic", "n_lines") if level == "line" else ("method_position", "n_methods")
    hits = [0] * len(TOP_K)
    exams, exams_cov, n = [], [], 0
    for c in cases:
        r = rows.get((c, tech))
        if r is None:
            continue
        n += 1
        if not r[pos_key] or r.get("error"):
            exams.append(1.0)
            exams_cov.append(1.0)
            continue
        pos, total, cov = float(r[pos_key]), int(r[n_key] or 0), covered(rows, c, n_key)
        found = pos <= total
        for i, k in enumerate(TOP_K):
            hits[i] += found and pos <= k
        exams.append(pos / total if total else 1.0)
        exams_cov.append(min(pos, cov + 1) / cov if found and cov else 1.0)
    med = lambda xs: statistics.median(xs) * 100 if xs else float("nan")  # noqa: E731
    return n, hits, med(exams), med(exams_cov)


def table(rows, cases, techs, level):
    out = ["| technique | bugs | " + " | ".join("@%d" % k for k in TOP_K)
           + " | EXAM median % | EXAM of covered median % |",
           "|---|---:|" + "---:|" * (len(TOP_K) + 2)]
    for t in techs:
        n, hits, exam, exam_cov = stats(rows, cases, t, level)
        if n:
            out.append("| %s | %d | %s | %.1f | %.1f |" % (t, n, " | ".join(map(str, hits)), exam, exam_cov))
    return "\n".join(out)


def times(rows, cases):
    e2e = []
    for c in cases:
        r = rows.get((c, "prosecutor"))
        if r and r["seconds"]:
            e2e.append((float(r["trace_seconds"] or 0) + float(r["seconds"]), c))
    if not e2e:
        return "no timed case"
    e2e.sort()
    secs = [s for s, _ in e2e]
    return ("end-to-end per bug (trace + PROSECUTOR with experiments), %d bugs: median %.1f s, "
            "geometric mean %.1f s, max %.1f s (%s); above 10 min: %d" % (
                len(secs), statistics.median(secs), statistics.geometric_mean(secs), secs[-1], e2e[-1][1],
                sum(s > 600 for s in secs)))


def per_bug(rows, cases):
    """One row per bug: positions (PROSECUTOR, without experiments, Ochiai), lines ranked, the
    method position, failing-trace steps and times."""
    out = ["| bug | PROSECUTOR | w/o Cfx | Ochiai | lines ranked | method | failing steps | trace s | "
           "PROSECUTOR s | end-to-end s |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in cases:
        p, n, o = (rows.get((c, t), {}) for t in ("prosecutor", "prosecutor-nocfx", "ochiai"))
        if p.get("error") or not p.get("position_pessimistic"):
            out.append("| %s | %s |" % (c, (p.get("error") or "no ranking")[:120].replace("|", "/")))
            continue
        t, s = float(p["trace_seconds"] or 0), float(p["seconds"] or 0)
        out.append("| %s | %s | %s | %s | %s | %s | %s | %.1f | %.1f | %.1f |" % (
            c, p["position_pessimistic"], n.get("position_pessimistic", ""), o.get("position_pessimistic", ""),
            p["n_lines"], p["method_position"], p["failing_steps"], t, s, t + s))
    return "\n".join(out)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="+")
    ap.add_argument("--tsv", type=Path, default=DEFAULT_TSV)
    ap.add_argument("--techniques", choices=("all", "main"), default="main")
    ap.add_argument("--per-bug", action="store_true", help="also one row per bug")
    a = ap.parse_args(argv)
    rows = read_cases(a.out)
    with open(a.tsv, newline="", encoding="utf-8") as fh:
        in58 = {int(r["bug_id"]) for r in csv.DictReader(fh, delimiter="\t") if r["prosecutor58_guess"] == "y"}
    cases = sorted({c for c, _ in rows}, key=bug_of)
    techs = sorted({t for _, t in rows}, key=lambda t: (MAIN.index(t) if t in MAIN else len(MAIN), t))
    if a.techniques == "main":
        techs = [t for t in techs if t in MAIN]
    subsets = [
        ("the paper's 58 (scored)", [c for c in cases if bug_of(c) in in58]),
        ("odd bugs (development half)", [c for c in cases if bug_of(c) % 2 == 1]),
        ("even bugs (held-out half)", [c for c in cases if bug_of(c) % 2 == 0]),
        ("all scored bugs", cases),
    ]
    for name, sub in subsets:
        if not sub:
            continue
        print("## %s: %d bugs\n" % (name, len(sub)))
        print("Line level:\n")
        print(table(rows, sub, techs, "line"))
        print("\nMethod level:\n")
        print(table(rows, sub, techs, "method"))
        print("\n" + times(rows, sub) + "\n")
    if a.per_bug:
        print("## Per bug\n")
        print(per_bug(rows, cases))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
