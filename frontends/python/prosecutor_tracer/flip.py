"""Re-run ONE test with exactly one evaluation of one branch statement inverted.

    python3 -m prosecutor_tracer.flip --test ID --stmt S --occurrence N --out F --config rerun.json

`rerun.json` (written next to the dump's manifest) holds what reproduces the original run:
the SRC root, the working directory and the test command (argv).  The test command is run
again with the prosecutor plugin in flip mode, which deselects every other test, records the
same trace (so that occurrences are numbered exactly as in the dump) and inverts the N-th
evaluation of S.  The result is written to F as JSON:
``{"outcome": "pass"|"fail"|"crash", "flipped": bool, "detail": str}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m prosecutor_tracer.flip", description=__doc__.split("\n\n")[0])
    ap.add_argument("--test", required=True, help="test id (pytest node id)")
    ap.add_argument("--stmt", required=True, help="branch statement id to flip")
    ap.add_argument("--occurrence", required=True, type=int,
                    help="1-based evaluation to flip (0 with an empty --stmt: flip nothing, a control run)")
    ap.add_argument("--out", required=True, help="where to write the JSON result")
    ap.add_argument("--config", help="rerun.json of the dump (src, cwd, command)")
    ap.add_argument("--src", help="SRC root (overrides the config)")
    ap.add_argument("--cwd", help="working directory (overrides the config)")
    ap.add_argument("--timeout", type=float, help="per-test timeout in seconds")
    ap.add_argument("command", nargs="*", help="the test command (overrides the config)")
    a = ap.parse_args(argv)

    def fail(detail, outcome="crash"):
        with open(a.out, "w", encoding="utf-8") as fh:
            json.dump({"outcome": outcome, "flipped": False, "detail": detail}, fh)
        return 0

    cfg = {}
    if a.config:
        try:
            with open(a.config, encoding="utf-8") as fh:
                cfg = json.load(fh)
        except (OSError, ValueError) as e:
            return fail(f"rerun config error: cannot read {a.config}: {e}")
    src = a.src or cfg.get("src")
    cwd = a.cwd or cfg.get("cwd") or os.getcwd()
    command = a.command or cfg.get("command")
    if not src or not command:
        return fail("rerun config error: no SRC or test command given (use --config or --src and the command)")
    if a.occurrence < 1 and not (a.stmt == "" and a.occurrence == 0):
        # (an empty --stmt with --occurrence 0 is a control run: the test re-run, nothing flipped)
        return fail("rerun config error: --occurrence must be >= 1")
    env = dict(os.environ)
    pkg_parent = cfg.get("pythonpath") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    recorded = cfg.get("env")
    if isinstance(recorded, dict):
        # the environment of the traced run: these variables exactly as they were then (our
        # own PYTHONPATH, set to run this module, is not the user's)
        for k, v in recorded.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = str(v)
    elif env.get("PYTHONPATH") and os.path.realpath(env["PYTHONPATH"]) == os.path.realpath(pkg_parent):
        env.pop("PYTHONPATH")  # an old dump without a recorded environment
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTEST_ADDOPTS"] = (env.get("PYTEST_ADDOPTS", "") + " -p prosecutor_tracer.plugin").strip()
    env.setdefault("PYTHONHASHSEED", "0")
    env.update({
        "PROSECUTOR_MODE": "flip",
        "PROSECUTOR_SRC": src,
        "PROSECUTOR_FLIP_TEST": a.test,
        "PROSECUTOR_FLIP_STMT": a.stmt,
        "PROSECUTOR_FLIP_OCC": str(a.occurrence),
        "PROSECUTOR_FLIP_OUT": os.path.abspath(a.out),
        "PROSECUTOR_TEST_TIMEOUT": str(a.timeout if a.timeout is not None else cfg.get("timeout", 10)),
        "PROSECUTOR_STEP_CAP": str(cfg.get("step_cap", 2_000_000)),
        "PROSECUTOR_TEST_GLOBS": json.dumps(cfg.get("test_globs") or []),
    })
    match = (cfg.get("tests") or {}).get(a.test)
    if match:
        env["PROSECUTOR_FLIP_MATCH"] = json.dumps(match)
    else:
        env.pop("PROSECUTOR_FLIP_MATCH", None)
    if a.config:
        env["PROSECUTOR_EXCLUDE"] = os.path.dirname(os.path.abspath(a.config))  # the dump itself
    env.pop("PROSECUTOR_OUT", None)
    env.pop("PROSECUTOR_STATUS", None)
    try:
        os.remove(a.out)
    except OSError:
        pass
    try:
        p = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as e:
        return fail(f"test command failed: cannot run {command[0]!r}: {e}")
    if not os.path.exists(a.out):
        tail = p.stdout.decode("utf-8", "replace").strip().splitlines()[-5:]
        return fail(f"test command failed: exit status {p.returncode} without a result: " + " | ".join(tail))
    return 0


if __name__ == "__main__":
    sys.exit(main())
