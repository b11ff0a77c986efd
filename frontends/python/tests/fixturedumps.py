"""Trace every project of fixtures/python/ with one interpreter and one copy of the tracer
package, for the differential checks of dumpdiff.py (docs/frontend-python.md "Supported
Pythons"; docs/performance.md "Differential check"):

    python3 fixturedumps.py --python PY --pkg DIR --out OUT [--setup 0|1] [--step-cap N]
                            [--static-cache] [NAME ...]

PY runs `PY -m pytest -q TESTS` in a copy of each project at a fixed place
(`/tmp/prosecutor-fixturedumps/NAME`, so that two runs write the same paths) with the plugin of
DIR/prosecutor_tracer, as the Rust driver runs it (no plain run), with `-p keepids` (no address
is reused: heap.facts compares exactly) and address randomisation off (`setarch -R`) when it
can be turned off. The dump of NAME goes to OUT/NAME. Then

    python3 dumpdiff.py OUT_A/NAME OUT_B/NAME --mask DIR_A --mask DIR_B --mask PY_A --mask PY_B

compares two runs. `--step-cap N` traces every project with that step cap (a small one
checks what the tracer records past the cap: coverage, edges, failure points).
`--static-cache` first runs the plain run that analyses every file ahead (static_cache.py) and
traces with its results: the dump must equal one traced without them.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, "..", "..", "..", "fixtures", "python"))
WORK = "/tmp/prosecutor-fixturedumps"

# name -> (src, test args, extra environment)
SPECIAL = {
    "tests_in_package": ("pkg", ["pkg/tests"], {"PROSECUTOR_TEST_GLOBS": '["_testutil.py"]'}),
    "pythonpath_src": ("src", ["tests"], {"PYTHONPATH": "src"}),
    # the hanging test ends at the step cap, then at the time limit
    "to_base_hang": ("src", ["tests"], {"PROSECUTOR_STEP_CAP": "100000", "PROSECUTOR_TEST_TIMEOUT": "4"}),
}


def fixtures():
    return sorted(d for d in os.listdir(FIXTURES)
                  if os.path.isdir(os.path.join(FIXTURES, d)) and not d.startswith("."))


def prepare(pre, cmd, work, env, dump):
    """The plain run with PROSECUTOR_STATIC_CACHE, then wait for its child to finish the cache
    (static_cache.py): the traced run then finds every file analysed ahead."""
    import time
    cache = dump + ".static"
    shutil.rmtree(cache, ignore_errors=True)
    penv = dict(env, PROSECUTOR_MODE="plain", PROSECUTOR_STATIC_CACHE=cache,
                PROSECUTOR_PLAIN_OUT=dump + ".plain.json")
    subprocess.run(pre + cmd, cwd=work, env=penv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(cache, "complete")) and time.monotonic() < deadline:
        time.sleep(0.05)
    return cache


def trace(python, pkg, out, name, setup, step_cap=None, static_cache=False):
    work = os.path.join(WORK, name)
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(os.path.join(FIXTURES, name), work,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    src, args, extra = SPECIAL.get(name, ("src", ["tests"], {}))
    dump = os.path.join(os.path.abspath(out), name)
    shutil.rmtree(dump, ignore_errors=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PROSECUTOR_") and k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    extra = dict(extra)
    user_pp = extra.pop("PYTHONPATH", None)
    pp = [os.path.abspath(pkg), HERE] + ([user_pp] if user_pp else [])
    cmd = [python, "-m", "pytest", "-q"] + args
    env.update({
        "PYTHONPATH": os.pathsep.join(pp),
        "PYTEST_ADDOPTS": "-p keepids -p no:cacheprovider -p prosecutor_tracer.plugin",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PROSECUTOR_MODE": "trace",
        "PROSECUTOR_SRC": os.path.join(work, src),
        "PROSECUTOR_OUT": dump,
        "PROSECUTOR_SETUP": str(setup),
        "PROSECUTOR_TEST_TIMEOUT": "60",
        "PROSECUTOR_COMMAND": json.dumps(cmd),
    })
    env.update(extra)
    if step_cap is not None:
        env["PROSECUTOR_STEP_CAP"] = str(step_cap)
    pre = ["setarch", os.uname().machine, "-R"] if shutil.which("setarch") else []
    if static_cache:
        env["PROSECUTOR_STATIC_CACHE"] = prepare(pre, cmd, work, env, dump)
    p = subprocess.run(pre + cmd, cwd=work, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    status = os.path.join(dump, ".prosecutor-status.json")
    ok = False
    if os.path.exists(status):
        with open(status) as fh:
            ok = bool(json.load(fh).get("ok"))
    return ok, p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--pkg", default=os.path.normpath(os.path.join(HERE, "..")))
    ap.add_argument("--out", required=True)
    ap.add_argument("--setup", default="0")
    ap.add_argument("--step-cap", type=int, default=None)
    ap.add_argument("--static-cache", action="store_true",
                    help="analyse the files ahead in a plain run's child first (static_cache.py)")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    bad = 0
    for name in a.names or fixtures():
        ok, p = trace(a.python, a.pkg, a.out, name, a.setup, a.step_cap, a.static_cache)
        print(f"{name}: {'ok' if ok else 'FAILED'}", flush=True)
        if not ok:
            bad += 1
            print(p.stdout[-3000:])
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
