"""Re-run ONE test with exactly one evaluation of one branch statement inverted.

    python3 -m prosecutor_tracer.flip --test ID --stmt S --occurrence N --out F --config rerun.json
    python3 -m prosecutor_tracer.flip --serve --jobs J --config rerun.json

`rerun.json` (written next to the dump's manifest) holds what reproduces the original run:
the SRC root, the working directory and the test command (argv).  The test command is run
again with the prosecutor plugin in flip mode, which deselects every other test, records the
same trace (so that occurrences are numbered exactly as in the dump) and inverts the N-th
evaluation of S.  The result is written to F as JSON:
``{"outcome": "pass"|"fail"|"crash", "flipped": bool, "detail": str}``.

With ``--stmt '' --occurrence 0``, PROSECUTOR_FORCE (JSON ``[[stmt, occurrence, to], ...]``)
forces a set of branch instances instead (the result gains ``"forced"``), and
PROSECUTOR_EVENTS (a directory) makes the re-run write its trace there (the result gains
``"truncated"``); docs/trace-format.md "Forcing a set of branch instances".  With events,
PROSECUTOR_VALUES (JSON ``{"record": true, "capture": {...}, "patch": {...}}``) records the
locals every step sees, pickles some at a step and sets some at a step (the result gains
``"patched"``); docs/trace-format.md "Values, capture and patch".

``--serve`` is the warm runner: the test command is started once (same cwd and environment,
the plugin in serve mode), imports and collects once, and then answers requests read as JSON
lines on stdin, one JSON line each on stdout, running each in a forked child (serve.py,
docs/frontend-python.md "Warm runner").  This process becomes the test session (exec); its
stdin / stdout are kept for the protocol, and what the session prints goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys


def _parser():
    ap = argparse.ArgumentParser(prog="python3 -m prosecutor_tracer.flip", description=__doc__.split("\n\n")[0])
    ap.add_argument("--test", help="test id (pytest node id)")
    ap.add_argument("--stmt", help="branch statement id to flip")
    ap.add_argument("--occurrence", type=int,
                    help="1-based evaluation to flip (0 with an empty --stmt: flip nothing, a control run)")
    ap.add_argument("--out", help="where to write the JSON result")
    ap.add_argument("--serve", action="store_true",
                    help="the warm runner: answer JSON-line requests on stdin (no --test/--stmt/--occurrence/--out)")
    ap.add_argument("--jobs", type=int, default=1, help="--serve: experiments run at once")
    ap.add_argument("--config", help="rerun.json of the dump (src, cwd, command)")
    ap.add_argument("--src", help="SRC root (overrides the config)")
    ap.add_argument("--cwd", help="working directory (overrides the config)")
    ap.add_argument("--timeout", type=float, help="per-test timeout in seconds")
    ap.add_argument("command", nargs="*", help="the test command (overrides the config)")
    return ap


def load_config(path):
    """(rerun.json as a dict, None) or (None, why it cannot be read); ({}, None) without one."""
    if not path:
        return {}, None
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh), None
    except (OSError, ValueError) as e:
        return None, f"rerun config error: cannot read {path}: {e}"


def read_force(raw, stmt="", occurrence=0):
    """(the forced set, None) from PROSECUTOR_FORCE's text `raw` (None when none is given), or
    (None, why it is unusable) (see check_force)."""
    if not raw:
        return None, None
    try:
        force = json.loads(raw)
    except ValueError as e:
        return None, f"rerun config error: PROSECUTOR_FORCE is not JSON: {e}"
    err = check_force(force, stmt, occurrence)
    return (None, err) if err else (force, None)


def check_force(force, stmt="", occurrence=0):
    """Why `force` (parsed JSON) is no forced set `[[stmt, occurrence, to], ...]` that can go
    with the single flip `stmt`/`occurrence` (none: "" and 0), or None."""
    if stmt != "" or occurrence != 0:
        return "rerun config error: a forced set goes with an empty stmt and occurrence 0 only"
    if not isinstance(force, list):
        return "rerun config error: the forced set must be a list [[stmt, occurrence, to], ...]"
    seen = set()
    for x in force:
        if not (isinstance(x, list) and len(x) == 3 and isinstance(x[0], str) and x[0]
                and type(x[1]) is int and x[1] >= 1 and type(x[2]) is int and x[2] in (0, 1)):
            return (f"rerun config error: bad forced instance {json.dumps(x)} "
                    f"(expected [stmt, occurrence >= 1, 0 or 1])")
        if (x[0], x[1]) in seen:
            return f"rerun config error: {x[0]}#{x[1]} is forced twice"
        seen.add((x[0], x[1]))
    return None


VALUES_KEYS = ("record", "capture", "patch")


def read_values(raw, events):
    """(the `values` object, None) from PROSECUTOR_VALUES's text `raw` (None when none is
    given), or (None, why it is unusable) (see check_values); `events`: PROSECUTOR_EVENTS."""
    if not raw:
        return None, None
    try:
        values = json.loads(raw)
    except ValueError as e:
        return None, f"rerun config error: PROSECUTOR_VALUES is not JSON: {e}"
    err = check_values(values, events)
    return (None, err) if err else (values, None)


def check_values(values, events):
    """Why `values` (parsed JSON) is no `values` object a re-run writing its events to `events`
    can take (docs/trace-format.md "Values, capture and patch"), or None."""
    import base64
    import binascii
    if not isinstance(values, dict):
        return "rerun config error: values must be a JSON object {\"record\", \"capture\", \"patch\"}"
    bad = sorted(k for k in values if k not in VALUES_KEYS)
    if bad:
        return f"rerun config error: unknown values key {bad[0]!r} (known: record, capture, patch)"
    if not events:
        return "rerun config error: values go with events only (PROSECUTOR_EVENTS / \"events\")"
    if "record" in values and not isinstance(values["record"], bool):
        return "rerun config error: values.record must be true or false"
    for key in ("capture", "patch"):
        if key not in values:
            continue
        m = values[key]
        if not isinstance(m, dict):
            return f"rerun config error: values.{key} must be an object {{\"STEP\": ...}}"
        for step, what in m.items():
            if not (step.isascii() and step.isdigit()) or (len(step) > 1 and step[0] == "0"):
                return f"rerun config error: values.{key}: {step!r} is no step (a decimal number)"
            if key == "capture":
                if not (isinstance(what, list) and all(isinstance(v, str) and v.isidentifier() for v in what)):
                    return f"rerun config error: values.capture[{step!r}] must be a list of variable names"
                continue
            if not isinstance(what, dict):
                return f"rerun config error: values.patch[{step!r}] must be an object {{\"var\": \"base64\"}}"
            for var, b64 in what.items():
                if not var.isidentifier():
                    return f"rerun config error: values.patch[{step!r}]: {var!r} is no variable name"
                try:
                    if not isinstance(b64, str):
                        raise ValueError
                    base64.b64decode(b64, validate=True)
                except (ValueError, binascii.Error):
                    return f"rerun config error: values.patch[{step!r}][{var!r}] is not base64"
    try:
        from . import values as _values  # noqa: F401
    except ImportError:
        # (a driver embedding an older copy of the package: say so rather than record nothing)
        return "rerun config error: values: this copy of prosecutor_tracer has no values.py"
    return None


def session_env(a, cfg, src):
    """The environment of a re-run's test session: the caller's, with the traced run's recorded
    variables restored, the tracer's package on PYTHONPATH and the plugin in PYTEST_ADDOPTS."""
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
        "PROSECUTOR_SRC": src,
        "PROSECUTOR_TEST_TIMEOUT": str(a.timeout if a.timeout is not None else cfg.get("timeout", 10)),
        "PROSECUTOR_STEP_CAP": str(cfg.get("step_cap", 2_000_000)),
        "PROSECUTOR_TEST_GLOBS": json.dumps(cfg.get("test_globs") or []),
    })
    if a.config:
        env["PROSECUTOR_EXCLUDE"] = os.path.dirname(os.path.abspath(a.config))  # the dump itself
    for k in ("PROSECUTOR_OUT", "PROSECUTOR_STATUS", "PROSECUTOR_FLIP_MATCH"):
        env.pop(k, None)
    return env


def main(argv=None):
    ap = _parser()
    a = ap.parse_args(argv)
    if not a.serve and None in (a.test, a.stmt, a.occurrence, a.out):
        ap.error("--test, --stmt, --occurrence and --out are required (or --serve)")
    cfg, err = load_config(a.config)
    src = a.src or (cfg or {}).get("src")
    cwd = a.cwd or (cfg or {}).get("cwd") or os.getcwd()
    command = a.command or (cfg or {}).get("command")
    if err is None and (not src or not command):
        err = "rerun config error: no SRC or test command given (use --config or --src and the command)"
    if a.serve:
        return serve(a, cfg, src, cwd, command, err)
    if err is not None:
        return _fail(a, err)
    if a.occurrence < 1 and not (a.stmt == "" and a.occurrence == 0):
        # (an empty --stmt with --occurrence 0 is a control run: the test re-run, nothing flipped)
        return _fail(a, "rerun config error: --occurrence must be >= 1")
    _, err = read_force(os.environ.get("PROSECUTOR_FORCE"), a.stmt, a.occurrence)
    if err is None:
        _, err = read_values(os.environ.get("PROSECUTOR_VALUES"), os.environ.get("PROSECUTOR_EVENTS"))
    if err is not None:
        return _fail(a, err)
    return flip(a, cfg, src, cwd, command)


def _fail(a, detail, outcome="crash"):
    with open(a.out, "w", encoding="utf-8") as fh:
        json.dump({"outcome": outcome, "flipped": False, "detail": detail}, fh)
    return 0


def flip(a, cfg, src, cwd, command):
    env = session_env(a, cfg, src)
    env.update({
        "PROSECUTOR_MODE": "flip",
        "PROSECUTOR_FLIP_TEST": a.test,
        "PROSECUTOR_FLIP_STMT": a.stmt,
        "PROSECUTOR_FLIP_OCC": str(a.occurrence),
        "PROSECUTOR_FLIP_OUT": os.path.abspath(a.out),
    })
    match = (cfg.get("tests") or {}).get(a.test)
    if match:
        env["PROSECUTOR_FLIP_MATCH"] = json.dumps(match)
    if env.get("PROSECUTOR_EVENTS"):
        env["PROSECUTOR_EVENTS"] = os.path.abspath(env["PROSECUTOR_EVENTS"])   # (the session's cwd is cfg's)
    try:
        os.remove(a.out)
    except OSError:
        pass
    try:
        p = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as e:
        return _fail(a, f"test command failed: cannot run {command[0]!r}: {e}")
    if not os.path.exists(a.out):
        tail = p.stdout.decode("utf-8", "replace").strip().splitlines()[-5:]
        return _fail(a, f"test command failed: exit status {p.returncode} without a result: " + " | ".join(tail))
    return 0


def serve_args(a):
    """The arguments that make a flip.py run use this server's configuration (a request the warm
    runner hands to a cold re-run)."""
    out = []
    for opt in ("config", "src", "cwd", "timeout"):
        v = getattr(a, opt)
        if v is not None:
            out += [f"--{opt}", os.path.abspath(v) if opt == "config" else str(v)]
    return out + (["--", *a.command] if a.command else [])


def serve(a, cfg, src, cwd, command, err):
    """Becomes the test session in serve mode (exec), the protocol on dups of stdin / stdout.
    Without a session to start, one handshake line says why not (exit status 2)."""
    if err is None and not hasattr(os, "fork"):
        err = "no os.fork on this platform"
    if err is not None:
        return _not_ready(err)
    env = session_env(a, cfg, src)
    proto_in, proto_out = os.dup(0), os.dup(1)
    os.set_inheritable(proto_in, True)
    os.set_inheritable(proto_out, True)
    env.update({
        "PROSECUTOR_MODE": "serve",
        "PROSECUTOR_SERVE_FDS": f"{proto_in},{proto_out}",
        "PROSECUTOR_SERVE_JOBS": str(max(1, a.jobs)),
        "PROSECUTOR_SERVE_CONFIG": os.path.abspath(a.config) if a.config else "",
        "PROSECUTOR_SERVE_ARGS": json.dumps(serve_args(a)),
    })
    try:
        os.chdir(cwd)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(2, 1)              # pytest's output goes to stderr, never into the protocol
        os.execvpe(command[0], command, env)
    except OSError as e:
        os.dup2(proto_out, 1)
        return _not_ready(f"test command failed: cannot run {command[0]!r}: {e}")


def _not_ready(why):
    sys.stdout.write(json.dumps({"ready": False, "error": why}) + "\n")
    sys.stdout.flush()
    return 2


if __name__ == "__main__":
    sys.exit(main())
