"""Diagnostic pytest plugin for differential checks (dumpdiff.py), not part of the tracer:
``-p keepids`` (with this directory on PYTHONPATH) keeps alive every object whose id() the
tracer's heap recorder and exception bookkeeping take, so that no address is ever reused during
the run and heap.facts cannot alias a dead object. Two tracers that record the same facts then
write the same heap.facts (ids renamed per trace), whatever each allocates itself. It changes
what the traced program sees (nothing it drops is freed): use it only to compare tracers."""

import builtins

_KEEP = []
_id = builtins.id


def _kept_id(o):
    _KEEP.append(o)
    return _id(o)


try:
    from prosecutor_tracer import heap as _heap, tracer as _tracer
    _heap.id = _kept_id          # module globals shadow the builtin in those modules only
    _tracer.id = _kept_id
except Exception as e:  # never break the run
    print(f"keepids: {type(e).__name__}: {e}")
