"""pytest plugin (``-p prosecutor_tracer.plugin``): the hooks of :mod:`prosecutor_tracer.session`.

pytest rewrites the asserts of a module named by ``-p`` and, where bytecode is not written
(``PYTHONDONTWRITEBYTECODE``, common in CI images), parses and compiles it from source on every
run: for the session's 2,700 lines that was a fifth of a second in the plain run, the traced
run, the warm runner and every cold flip re-run.  So this module is a few lines (and
PYTEST_DONT_REWRITE), and the session is imported as any module, from the bytecode the package
keeps of itself (``prosecutor_tracer._precompile``).
"""

from .session import *  # noqa: F401,F403  (the pytest_* hooks)
