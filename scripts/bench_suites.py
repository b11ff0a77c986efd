#!/usr/bin/env python3
"""Per-suite cost of prosecutor: plain test command, `trace`, and `localize` (issue 13).

usage: bench_suites.py MANIFEST --bin PROSECUTOR [--ref PROSECUTOR] [--runs N]
                       [--cases NAME,...] [--test-timeout T] [--json OUT]

For each case of a `prosecutor eval` manifest (TOML, `[[case]]` with `name`, `dir`, `src`,
`test`; `dir` relative to the manifest's folder unless absolute, `src` relative to `dir`; a
`src` that is a file stands for its folder, as in `eval`), measures the wall time of

  plain     the test command, run in `dir` (a non-zero exit is expected: a test fails);
            for a Java case (`language = "java"`), JUnitCore on its test classes with its
            class directories, `classpath` and JUnit 4 (Debian's jars, or
            $PROSECUTOR_JUNIT_JARS), and trace / localize get --java and its class flags;
  trace     BIN trace --src SRC --out TMP --test-timeout T -- TEST, run in `dir`;
  localize  BIN localize --src SRC --format json --test-timeout T -- TEST, run in `dir`
            (trace + inference + counterfactual experiments; its dump goes to a temporary
            directory that prosecutor removes itself).

Each step runs --runs times, interleaved (plain, trace, localize, plain, ...) so that machine
load hits all three alike. With --ref, a second (reference) binary's trace and localize run
interleaved with them too (ref-trace, ref-localize after localize), and the table adds their
medians and new / reference ratios: an A/B measured in one run. Per case: the medians and the ratios of the medians, trace/plain
and localize/plain; over all cases: the median and the max of those ratios. A case's own
`timeout` overrides --test-timeout, as in `eval`.

Peak RSS: `ru_maxrss` of the rusage that os.wait4 returns for each child, i.e. the largest
single process of the child's tree (prosecutor or one of the Python processes it waited for),
not the sum of processes running at the same time. The largest value over the runs is reported.

Localize's JSON output also gives the number of counterfactual experiments it ran and the
sum of their durations (medians over the runs), to show where its time goes.

A markdown table goes to stdout, progress to stderr, and --json OUT writes every measurement.
A case that cannot be run, a command that fails to start, or a prosecutor run that exits
non-zero is reported in the table (exit code and last stderr line) and left out of the
summary; it is never skipped silently (the exit code is then 1).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

STEPS = ("plain", "trace", "localize")
REF_STEPS = ("ref-trace", "ref-localize")
RSS_METHOD = "ru_maxrss from os.wait4 of each child (largest single process in its tree), kB"


def parse_args(argv):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("manifest", type=Path, help="a `prosecutor eval` manifest (TOML)")
    p.add_argument("--bin", required=True, type=Path, help="the prosecutor binary")
    p.add_argument("--ref", type=Path, help="a reference prosecutor binary, run interleaved")
    p.add_argument("--runs", type=int, default=3, help="runs per step (default 3)")
    p.add_argument("--cases", help="comma-separated case names (default: all)")
    p.add_argument("--test-timeout", type=float, default=10.0,
                   help="per-test timeout of trace and localize, s (default 10)")
    p.add_argument("--json", type=Path, help="write the results as JSON here")
    a = p.parse_args(argv)
    if a.runs < 1:
        p.error("--runs must be at least 1")
    return a


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- manifest

def load_cases(manifest, wanted):
    """The manifest's cases (resolved), restricted to `wanted` names in manifest order."""
    data = tomllib.loads(manifest.read_text())
    base = manifest.parent if str(manifest.parent) else Path(".")
    cases = [resolve_case(c, base) for c in data.get("case", [])]
    if wanted is None:
        return cases
    names = [n.strip() for n in wanted.split(",") if n.strip()]
    unknown = sorted(set(names) - {c["name"] for c in cases})
    if unknown:
        sys.exit(f"{manifest}: no case named {', '.join(unknown)}")
    return [c for c in cases if c["name"] in names]


def resolve_path(base, p):
    p = Path(p)
    return p if p.is_absolute() else base / p


JUNIT_JARS = ["/usr/share/java/junit4.jar", "/usr/share/java/hamcrest.jar"]


def resolve_java(raw, base, case):
    """A Java case's class directories, class path and source roots (`eval`'s keys)."""
    d = Path(case["dir"])
    case["java"] = {
        "classes": str(resolve_path(base, raw.get("classes", "")).resolve()),
        "test_classes": str(resolve_path(base, raw.get("test_classes", "")).resolve()),
        "classpath": [str(resolve_path(base, c).resolve()) for c in raw.get("classpath", [])],
        "source_roots": [str(resolve_path(d, r)) for r in raw.get("source_roots", [])],
    }
    if not (raw.get("classes") and raw.get("test_classes")):
        case["error"] = "a Java case needs `classes` and `test_classes`"
    elif any("::" in t for t in case["test"]):
        case["error"] = "the plain JUnit run takes test classes only, not Class::method"


def resolve_case(raw, base):
    """name, dir, src_dir, test, timeout and, when the case cannot be run, `error`."""
    case = {"name": raw.get("name", "?"), "timeout": raw.get("timeout")}
    if not (raw.get("dir") and raw.get("src") and raw.get("test")):
        case["error"] = "needs `dir`, `src` and `test` (a `dump` case has no test command)"
        return case
    d = resolve_path(base, raw["dir"]).resolve()
    src = resolve_path(d, raw["src"])
    case.update(dir=str(d), test=list(raw["test"]),
                src=str(src if src.is_dir() else src.parent))
    if raw.get("language") == "java":
        resolve_java(raw, base, case)
    if "error" in case:
        pass
    elif not d.is_dir():
        case["error"] = f"dir {d} is not a directory"
    elif not src.exists():
        case["error"] = f"src {src} does not exist"
    return case


# ---------------------------------------------------------------- running

def last_line(text):
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1].strip() if lines else ""


def run_timed(argv, cwd, stdout):
    """Runs argv in cwd; returns seconds, exit code, peak RSS (kB) and last stderr line."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        try:
            proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL,
                                    stdout=stdout, stderr=err)
        except OSError as e:
            return {"seconds": None, "exit": None, "rss_kb": None,
                    "stderr": f"cannot start {argv[0]}: {e}"}
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = last_line(err.read().decode(errors="replace"))
    return {"seconds": seconds, "exit": proc.returncode, "rss_kb": usage.ru_maxrss,
            "stderr": tail}


def java_plain(case):
    """The plain JUnit run of a Java case's test classes (JUnitCore, JUnit 4)."""
    j = case["java"]
    junit = os.environ.get("PROSECUTOR_JUNIT_JARS")
    cp = [j["classes"], j["test_classes"], *j["classpath"],
          *(junit.split(":") if junit else JUNIT_JARS)]
    return ["java", "-cp", ":".join(cp), "org.junit.runner.JUnitCore", *case["test"]]


def java_flags(case):
    j = case["java"]
    flags = ["--java", "--classes", j["classes"], "--test-classes", j["test_classes"]]
    if j["classpath"]:
        flags += ["--cp", ":".join(j["classpath"])]
    for r in j["source_roots"]:
        flags += ["--source-root", r]
    return flags


def steps_of(ref):
    return STEPS + (REF_STEPS if ref else ())


def step_argv(step, case, binary, timeout, tmp):
    step = step.removeprefix("ref-")
    if step == "plain":
        return java_plain(case) if "java" in case else case["test"]
    what = java_flags(case) if "java" in case else ["--src", case["src"]]
    common = [*what, "--test-timeout", str(timeout)]
    if step == "trace":
        return [str(binary), "trace", *common, "--out", str(Path(tmp) / "dump"),
                "--", *case["test"]]
    return [str(binary), "localize", *common, "--format", "json", "--", *case["test"]]


def run_step(step, case, binary, timeout):
    tmp = tempfile.mkdtemp(prefix="bench_suites.")
    out = Path(tmp) / "stdout"
    try:
        with open(out, "wb") as f:
            r = run_timed(step_argv(step, case, binary, timeout, tmp), case["dir"], f)
        # The test command may exit non-zero (a test fails); prosecutor must not.
        r["ok"] = r["exit"] is not None and (step == "plain" or r["exit"] == 0)
        if step.endswith("localize") and r["ok"]:
            r.update(experiment_stats(out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return r


def experiment_stats(path):
    """How many experiments localize's JSON lists, and their summed durations (s)."""
    try:
        exps = json.loads(path.read_text()).get("experiments") or []
    except (OSError, ValueError, AttributeError):
        return {}
    return {"experiments": len(exps),
            "experiment_s": sum(e.get("duration_ms", 0) for e in exps) / 1000}


def measure_case(case, binary, runs, default_timeout, label, ref=None):
    timeout = case.get("timeout") or default_timeout
    steps = steps_of(ref)
    results = {s: [] for s in steps}
    for i in range(runs):
        for step in steps:
            results[step].append(run_step(step, case, ref if step.startswith("ref-") else binary, timeout))
        log(f"{label} run {i + 1}/{runs}: " + ", ".join(
            f"{s} {fmt_s(results[s][-1]['seconds'])} (exit {results[s][-1]['exit']})"
            for s in steps))
    return results


# ---------------------------------------------------------------- summary

def describe_failure(r):
    if r["exit"] is None:
        return f"did not start: {r['stderr']}"
    return f"exit {r['exit']}: {r['stderr']}"


def summarize_step(runs):
    ok = all(r["ok"] for r in runs)
    bad = next((r for r in runs if not r["ok"]), None)
    rss = [r["rss_kb"] for r in runs if r["rss_kb"] is not None]
    return {
        "ok": ok,
        "median_s": statistics.median(r["seconds"] for r in runs) if ok else None,
        "times_s": [r["seconds"] for r in runs],
        "exit_codes": [r["exit"] for r in runs],
        "peak_rss_kb": max(rss) if rss else None,
        "error": None if ok else describe_failure(bad),
        **median_of(runs, "experiments"), **median_of(runs, "experiment_s"),
    }


def median_of(runs, key):
    vals = [r[key] for r in runs if r.get(key) is not None]
    return {f"median_{key}": statistics.median(vals)} if vals else {}


def ratio(num, den):
    return num / den if num is not None and den else None


def summarize_case(case, results):
    out = {k: case.get(k) for k in ("name", "dir", "src", "test", "timeout")}
    if "error" in case:
        out["error"] = case["error"]
        return out
    steps = {s: summarize_step(results[s]) for s in results}
    out.update(steps)
    plain = steps["plain"]["median_s"]
    out["trace_over_plain"] = ratio(steps["trace"]["median_s"], plain)
    out["localize_over_plain"] = ratio(steps["localize"]["median_s"], plain)
    for s in REF_STEPS:
        if s in steps:
            out[s.replace("-", "_") + "_over_plain"] = ratio(steps[s]["median_s"], plain)
            out[s.removeprefix("ref-") + "_over_ref"] = ratio(steps[s.removeprefix("ref-")]["median_s"],
                                                             steps[s]["median_s"])
    errors = [f"{s}: {steps[s]['error']}" for s in steps if steps[s]["error"]]
    out["error"] = "; ".join(errors) or None
    return out


def over_cases(cases, key):
    vals = [c[key] for c in cases if c.get(key) is not None]
    if not vals:
        return {"n": 0, "median": None, "max": None, "max_case": None}
    worst = max((c for c in cases if c.get(key) is not None), key=lambda c: c[key])
    return {"n": len(vals), "median": statistics.median(vals), "max": max(vals),
            "max_case": worst["name"]}


# ---------------------------------------------------------------- output

def fmt_s(x):
    return "—" if x is None else f"{x:.2f}"


def fmt_ratio(x):
    return "—" if x is None else f"{x:.2f}×"


def fmt_mb(case, step):
    kb = case.get(step, {}).get("peak_rss_kb")
    return "—" if kb is None else f"{kb / 1024:.0f}"


def fmt_experiments(case):
    loc = case.get("localize", {})
    n, secs = loc.get("median_experiments"), loc.get("median_experiment_s")
    return "—" if n is None else f"{n:g} ({secs:.1f} s)"


def table_row(c, ref):
    med = lambda s: fmt_s(c.get(s, {}).get("median_s"))
    status = (c.get("error") or "ok").replace("|", "\\|")
    extra = ""
    if ref:
        extra = (f" {med('ref-trace')} | {med('ref-localize')} | "
                 f"{fmt_ratio(c.get('ref_trace_over_plain'))} | "
                 f"{fmt_ratio(c.get('ref_localize_over_plain'))} | "
                 f"{fmt_ratio(c.get('trace_over_ref'))} | {fmt_ratio(c.get('localize_over_ref'))} |")
    return (f"| {c['name']} | {med('plain')} | {med('trace')} | {med('localize')} | "
            f"{fmt_ratio(c.get('trace_over_plain'))} | "
            f"{fmt_ratio(c.get('localize_over_plain'))} |{extra} "
            f"{fmt_mb(c, 'trace')} | {fmt_mb(c, 'localize')} | {fmt_experiments(c)} | "
            f"{status} |")


def markdown(report):
    ref = bool(report.get("ref"))
    head = ("| case | plain s | trace s | localize s | trace/plain | localize/plain "
            + ("| ref trace s | ref localize s | ref trace/plain | ref localize/plain "
               "| trace new/ref | localize new/ref " if ref else "")
            + "| trace peak RSS MB | localize peak RSS MB | experiments (summed s) | status |")
    lines = [
        head,
        "|" + "---|" * (head.count("|") - 1),
        *(table_row(c, ref) for c in report["cases"]),
        "",
    ]
    keys = [("trace_over_plain", "trace / plain"), ("localize_over_plain", "localize / plain")]
    if ref:
        keys += [("ref_trace_over_plain", "reference trace / plain"),
                 ("ref_localize_over_plain", "reference localize / plain"),
                 ("trace_over_ref", "trace new / reference"),
                 ("localize_over_ref", "localize new / reference")]
    for key, label in keys:
        s = report["summary"][key]
        lines.append(f"* {label}: median {fmt_ratio(s['median'])}, max "
                     f"{fmt_ratio(s['max'])} ({s['max_case'] or '—'}) over {s['n']} cases")
    lines.append(f"* medians of {report['runs']} interleaved runs; peak RSS: {RSS_METHOD}")
    lines.append("* experiments: localize's counterfactual experiments (its JSON `experiments`)"
                 " and the sum of their durations (they run in parallel up to --jobs)")
    return "\n".join(lines)


def main(argv=None):
    a = parse_args(argv)
    binary = a.bin.resolve()
    if not binary.is_file():
        sys.exit(f"--bin {a.bin}: no such file")
    ref = a.ref.resolve() if a.ref else None
    if ref is not None and not ref.is_file():
        sys.exit(f"--ref {a.ref}: no such file")
    cases = load_cases(a.manifest, a.cases)
    summaries = []
    for i, case in enumerate(cases):
        label = f"[{i + 1}/{len(cases)}] {case['name']}"
        results = None
        if "error" in case:
            log(f"{label}: cannot run: {case['error']}")
        else:
            results = measure_case(case, binary, a.runs, a.test_timeout, label, ref)
        summaries.append(summarize_case(case, results))
    report = {
        "manifest": str(a.manifest.resolve()), "bin": str(binary),
        "ref": str(ref) if ref else None, "runs": a.runs,
        "test_timeout": a.test_timeout, "rss_method": RSS_METHOD,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cases": summaries,
        "summary": {k: over_cases(summaries, k)
                    for k in ("trace_over_plain", "localize_over_plain", "ref_trace_over_plain",
                              "ref_localize_over_plain", "trace_over_ref", "localize_over_ref")},
    }
    if a.json:
        a.json.write_text(json.dumps(report, indent=2) + "\n")
    print(markdown(report))
    return 1 if any(c.get("error") for c in summaries) else 0


if __name__ == "__main__":
    sys.exit(main())
