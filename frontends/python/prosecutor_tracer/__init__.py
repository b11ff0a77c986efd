"""prosecutor_tracer: the Python front-end of prosecutor.

It turns a pytest run into a prosecutor trace dump (see docs/trace-format.md and
docs/frontend-python.md): static facts from the AST of the traced files, run-time traces
recorded with ``sys.settrace``, and a re-runner that flips one branch instance
(``python3 -m prosecutor_tracer.flip``).  Only the standard library is used.
"""

VERSION = "0.1.0"
