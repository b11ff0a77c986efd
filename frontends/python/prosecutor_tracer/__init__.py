"""prosecutor_tracer: the Python front-end of prosecutor.

It turns a pytest run into a prosecutor trace dump (see docs/trace-format.md and
docs/frontend-python.md): static facts from the AST of the traced files, run-time traces
recorded with ``sys.settrace``, and a re-runner that flips one branch instance
(``python3 -m prosecutor_tracer.flip``).  Only the standard library is used.

Supported: CPython 3.9 to 3.13 (docs/frontend-python.md "Supported Pythons").  This file is
imported first by the plugin and by ``-m prosecutor_tracer.flip``, so it is written to parse on
any Python (2.7 too) and refuses an older one with a message naming it, before the other
modules (which an older Python cannot even compile) are loaded.
"""

import sys

VERSION = "0.1.0"
SUPPORTED = "3.9 to 3.13"
MIN_PYTHON = (3, 9)


def _unsupported():
    import os
    v = sys.version_info
    msg = ("Python %d.%d.%d (%s) is not supported by the prosecutor tracer: it needs Python %s; "
           "run the test command with a supported interpreter (e.g. `python3.11 -m pytest ...`)"
           % (v[0], v[1], v[2], sys.executable or "python", SUPPORTED))
    mode = os.environ.get("PROSECUTOR_MODE")
    if mode in ("trace", "plain"):
        path = os.environ.get("PROSECUTOR_STATUS")
        if not path and os.environ.get("PROSECUTOR_OUT"):
            path = os.path.join(os.environ["PROSECUTOR_OUT"], ".prosecutor-status.json")
        if path:
            try:
                import json
                with open(path, "w") as fh:
                    fh.write(json.dumps({"ok": False, "kind": "python_version", "error": msg,
                                         "warnings": []}))
            except Exception:
                pass
    sys.stderr.write("prosecutor: " + msg + "\n")
    return msg


def _precompile():
    """Writes the bytecode of this package's modules next to them (``__pycache__``, or under
    ``sys.pycache_prefix``) where it is missing, once per interpreter: the package lives in
    prosecutor's own cache directory, and where the environment says not to write bytecode
    (``PYTHONDONTWRITEBYTECODE``) every Python process of a run (the plain run, the traced run,
    the warm runner, each cold flip re-run) compiled its 8,000 lines from source again, a tenth of
    a second or more each.  Nothing is written anywhere else; a directory that cannot be written
    is left as it is."""
    import os
    try:
        import importlib.util
        import py_compile
        here = os.path.dirname(os.path.abspath(__file__))
        for name in sorted(os.listdir(here)):
            if not name.endswith(".py"):
                continue
            src = os.path.join(here, name)
            pyc = importlib.util.cache_from_source(src)
            if not os.path.exists(pyc):
                py_compile.compile(src, cfile=pyc, doraise=True)
    except Exception:
        pass


if sys.version_info[:2] < MIN_PYTHON:
    raise ImportError(_unsupported())
_precompile()
