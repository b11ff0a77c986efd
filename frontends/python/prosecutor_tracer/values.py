"""The values a re-run's steps see, and capturing / patching locals at a step (seed 004's
stores and its induction runs; docs/trace-format.md "Values, capture and patch").

`encode(v)` is a canonical text of a value: equal content gives equal text in any process,
whatever the objects' identities.  It reads builtin containers and objects' ``__dict__`` /
``__slots__`` directly and calls no Python code of the program (no ``__repr__``, ``__eq__``,
``__iter__``, ``__getattr__``): a value is read, never changed.

A `Recorder` is the tracer's hook for one record (a test, or the setup recording), called at
every recorded step (`Tracer.step` and the inline step of the local trace function) before the
step's statement runs: it patches, captures and records the locals of the step's frame, in that
order.  The tracer holds one only in a re-run given ``values`` (`Tracer.values`), so that a run
without them pays one ``is not None`` test per step.
"""

from __future__ import annotations

import base64
import pickle
import sys
import types
from itertools import islice

MAX_OBJECTS = 20000      # objects one value's encoding visits at most
MAX_CHARS = 4000         # characters of one value's encoding at most (then ELLIPSIS)
ELLIPSIS = "\u2026"      # ends an encoding cut by a cap
UNBOUND = "<unbound>"    # a local the frame's previous step had and this one has not

# PEP 667 (3.13+): frame.f_locals is a write-through proxy.  Before, it is a dict that
# PyFrame_LocalsToFast copies into the frame's fast locals (the trace trampoline does it after
# a trace function returns; a condition wrapper is no trace function: see Recorder._patch).
_PROXY_LOCALS = sys.version_info >= (3, 13)
_CO_OPTIMIZED = 0x1
_locals_to_fast = None


def _to_fast(frame):
    global _locals_to_fast
    f = _locals_to_fast
    if f is None:
        import ctypes
        f = ctypes.pythonapi.PyFrame_LocalsToFast
        f.argtypes = [ctypes.py_object, ctypes.c_int]
        f.restype = None
        _locals_to_fast = f
    f(frame, 0)


# ------------------------------------------------------------------------ encoding
class _Full(Exception):
    """A cap was reached: the encoding stops here."""


class _State:
    __slots__ = ("objects", "path")

    def __init__(self):
        self.objects = 0
        self.path = set()        # ids of the containers on the current encoding path


# Escaping of text that does not come from repr() of a str / bytes (which escapes already):
# backslash, TAB, LF, CR as \\ \t \n \r, other C0 controls, DEL and the Unicode line breaks
# U+0085, U+2028, U+2029 as \xNN / \uNNNN: an encoding is one line without TABs.
_ESC = {0x5C: "\\\\", 0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}
for _c in list(range(0x20)) + [0x7F, 0x85]:
    _ESC.setdefault(_c, "\\x%02x" % _c)
_ESC[0x2028] = "\\u2028"
_ESC[0x2029] = "\\u2029"
_ESC_CHARS = frozenset(chr(c) for c in _ESC)


def escape(s):
    if _ESC_CHARS.isdisjoint(s):
        return s
    return s.translate(_ESC)


_type_dict = type.__dict__["__dict__"].__get__          # a class's own namespace (no metaclass code)
_type_mro = type.__dict__["__mro__"].__get__
_type_qualname = type.__dict__["__qualname__"].__get__
_type_name = type.__dict__["__name__"].__get__
_GETSET = types.GetSetDescriptorType
_MEMBER = types.MemberDescriptorType


def _qualname(t):
    try:
        return escape(_type_qualname(t))
    except Exception:
        return "?"


class _Layout:
    """What the encoder reads of an instance of one type."""
    __slots__ = ("kind", "name", "dict_get", "slots", "base", "fields")


_layouts = {}

_SCALARS = (type(None), bool, int, float, complex)
_CONTAINERS = (list, tuple, dict, set, frozenset)


def _layout(t):
    lay = _layouts.get(t)
    if lay is not None:
        return lay
    import collections
    import enum
    lay = _Layout()
    lay.name = _qualname(t)
    lay.base = None
    lay.fields = None
    mro = _type_mro(t)
    ns = [_type_dict(c) for c in mro]
    # instance attributes: the __dict__ of a C getset descriptor (not a property), then the
    # __slots__ of each class, base first (a private name is mangled with its class's name)
    lay.dict_get = None
    for d in ns:
        g = d.get("__dict__")
        if g is not None:
            if type(g) is _GETSET:
                lay.dict_get = g.__get__
            break
    lay.slots = []
    for c, d in reversed(list(zip(mro, ns))):
        s = d.get("__slots__")
        if s is None:
            continue
        names = [s] if isinstance(s, str) else list(s) if isinstance(s, (tuple, list, dict)) else []
        for n in names:
            if type(n) is not str or n in ("__dict__", "__weakref__"):
                continue
            m = n
            if n.startswith("__") and not n.endswith("__"):
                m = "_" + _type_name(c).lstrip("_") + n
            desc = d.get(m)
            if type(desc) is _MEMBER:
                lay.slots.append((escape(n), desc.__get__))
    if issubclass(t, type):
        lay.kind = "class"
    elif t is types.FunctionType:
        lay.kind = "function"
    elif t is types.MethodType:
        lay.kind = "method"
    elif t is types.BuiltinFunctionType:
        lay.kind = "builtin"
    elif issubclass(t, types.ModuleType):
        lay.kind = "module"
    elif enum.Enum in mro:
        lay.kind = "enum"
    elif t in (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType) or _is_io(mro) or any(
            "__next__" in d for d in ns):
        lay.kind = "opaque"          # generators, iterators, files: never consumed
    else:
        lay.kind = "repr"
        for b in (collections.OrderedDict, collections.deque) + _CONTAINERS + (str, bytes, bytearray) + _SCALARS:
            if b in mro:
                lay.kind = "sub"     # a subclass of a builtin type: its content, its attributes
                lay.base = b
                break
        if lay.base is tuple:
            f = None
            for d in ns:
                if "_fields" in d:
                    f = d["_fields"]
                    break
            if type(f) is tuple and all(type(x) is str for x in f):
                lay.fields = f       # a namedtuple: its fields by name
        if lay.kind == "repr" and (lay.dict_get is not None or lay.slots):
            lay.kind = "exception" if BaseException in mro else "object"
        if lay.kind == "repr":
            r = None
            for d in ns:
                if "__repr__" in d:
                    r = d["__repr__"]
                    break
            if not isinstance(r, (types.WrapperDescriptorType, types.BuiltinFunctionType,
                                  types.MethodDescriptorType)):
                lay.kind = "opaque"  # a __repr__ of the program's: not called
    if len(_layouts) < 10000:
        _layouts[t] = lay
    return lay


def _is_io(mro):
    try:
        import _io
        return _io._IOBase in mro
    except Exception:
        return False


# work items of the encoder's stack: (_OBJ, value) to encode, (_TEXT, s) to write, (_POP, id)
# to leave a container, (_SET, items) the elements of a set, (_FULL, None) the rest of a
# container the object budget cannot reach
_OBJ, _TEXT, _POP, _SET, _FULL = 0, 1, 2, 3, 4
_EMPTY_SET = {set: "set()", frozenset: "frozenset()"}


def encode(v):
    """The canonical text of `v` (docs/trace-format.md "Values, capture and patch" has the
    rules): one line, no TAB, at most MAX_CHARS characters and then ELLIPSIS."""
    t = type(v)
    if t is int and v.bit_length() < 13000 or t is bool or t is float or v is None:
        return repr(v)     # (the common case first: what _encode_into makes of it)
    if t is str:
        s = repr(v) if len(v) <= MAX_CHARS else repr(v[:MAX_CHARS + 1])
        return s if len(s) <= MAX_CHARS else s[:MAX_CHARS] + ELLIPSIS
    out = []
    try:
        _encode_into(v, _State(), out, MAX_CHARS)
    except _Full:
        return "".join(out)[:MAX_CHARS] + ELLIPSIS
    except RecursionError:
        raise
    except Exception as e:      # (never seen; a value the rules above cannot read)
        return "<error " + escape(type(e).__name__) + ">"
    s = "".join(out)
    return s if len(s) <= MAX_CHARS else s[:MAX_CHARS] + ELLIPSIS


def _encode_into(v, st, out, room):
    """Appends the encoding of `v` to `out`; raises _Full past `room` characters or past the
    object budget `st.objects` (what was written so far stays in `out`).  Iterative: a deep
    structure (a long linked list) costs no recursion, except sets in sets."""
    n = 0
    todo = [(_OBJ, v)]
    pop = todo.pop
    push = todo.append
    while todo:
        kind, x = pop()
        if kind == _OBJ:
            st.objects += 1
            if st.objects > MAX_OBJECTS:
                raise _Full
            t = type(x)
            if t is str or t is bytes:
                s = repr(x) if len(x) <= room else repr(x[:room + 1])
            elif t is int:
                s = repr(x) if x.bit_length() < 13000 else hex(x)
            elif t in _SCALARS:
                s = repr(x)
            else:
                s = None
                i = id(x)
                if i in st.path:
                    s = "<cycle>"
                else:
                    node = _node(x, t, room, MAX_OBJECTS - st.objects + 1)
                    if type(node) is str:
                        s = node
                    else:
                        head, parts, tail = node
                        st.path.add(i)
                        push((_POP, i))
                        push((_TEXT, tail))
                        for j in range(len(parts) - 1, -1, -1):
                            push(parts[j])
                        s = head
            out.append(s)
            n += len(s)
        elif kind == _TEXT:
            out.append(x)
            n += len(x)
        elif kind == _POP:
            st.path.discard(x)
            continue
        elif kind == _SET:
            # the elements in the order of their encodings (each encoded apart, so that what
            # is written does not depend on the set's iteration order, which follows hashes)
            texts = []
            for e in x:
                sub = []
                _encode_into(e, st, sub, room - n)     # (_Full: the value is cut at the "{")
                texts.append("".join(sub))
            texts.sort()
            s = ", ".join(texts)
            out.append(s)
            n += len(s)
        else:
            raise _Full
        if n > room:
            raise _Full
    return n


def _items(base, x, left):
    """(open, work items, close) of the contents of builtin container type `base` of `x`
    (read with `base`'s own C methods: a subclass's overrides are not called), at most
    `left` items (then _FULL)."""
    import collections
    if base is dict or base is collections.OrderedDict:
        items = list(islice(base.items(x), left))
        parts = []
        for k, v in items:
            if parts:
                parts.append((_TEXT, ", "))
            parts += [(_OBJ, k), (_TEXT, ": "), (_OBJ, v)]
        o, c = "{", "}"
    else:
        items = list(islice(base.__iter__(x), left))
        if base is set or base is frozenset:
            if not items:
                return _EMPTY_SET[base], [], ""
            parts = [(_SET, items)]
            o, c = ("{", "}") if base is set else ("frozenset({", "})")
        else:
            parts = []
            for e in items:
                if parts:
                    parts.append((_TEXT, ", "))
                parts.append((_OBJ, e))
            if base is tuple:
                o, c = "(", ",)" if len(items) == 1 else ")"
            else:
                o, c = "[", "]"
    if len(items) >= left:
        parts.append((_FULL, None))
    return o, parts, c


_KIND_WORD = {"function": "function", "builtin": "built-in function", "method": "method"}


def _node(x, t, room, left):
    """The encoding of `x` (of type `t`, no str / int / scalar): its text, or (head, work
    items, tail) of a container or an object with attributes."""
    if t in _CONTAINERS:
        o, parts, c = _items(t, x, left)
        return o if not parts and not c else (o, parts, c)
    lay = _layout(t)
    k = lay.kind
    if k in _KIND_WORD:
        try:
            q = (x.__func__ if k == "method" else x).__qualname__
        except Exception:
            q = None
        return "<%s %s>" % (_KIND_WORD[k], escape(q) if type(q) is str else "?")
    if k == "class":
        return "<class " + _qualname(x) + ">"
    if k == "module":
        try:
            nm = _module_dict(x).get("__name__")
        except Exception:
            nm = None
        return "<module " + (escape(nm) if type(nm) is str else "?") + ">"
    if k == "enum":
        d = lay.dict_get(x) if lay.dict_get is not None else None
        nm = d.get("_name_") if type(d) is dict else None
        return lay.name + "." + (escape(nm) if type(nm) is str else "?")
    if k == "opaque":
        return "<" + lay.name + ">"
    if k == "repr":
        try:
            r = repr(x)
        except Exception:
            r = None
        if type(r) is not str or " at 0x" in r:
            return "<" + lay.name + ">"
        return lay.name + "(" + escape(r if len(r) <= room else r[:room + 1]) + ")"
    # a builtin type's subclass, an exception, an object with attributes: TypeName(...)
    parts = []

    def field(label, v):
        if parts:
            parts.append((_TEXT, ", "))
        if label is not None:
            parts.append((_TEXT, label))
        parts.append((_OBJ, v))

    base = lay.base
    if lay.fields is not None:
        for f, v in zip(lay.fields, islice(tuple.__iter__(x), len(lay.fields))):
            field(escape(f) + "=", v)
    elif base in (str, bytes, bytearray, int, float, complex):
        r = base.__repr__(x)
        parts.append((_TEXT, r if len(r) <= room else r[:room + 1]))
    elif base is not None:
        o, items, c = _items(base, x, left)
        parts.append((_TEXT, o))
        parts += items
        if c:
            parts.append((_TEXT, c))
    if k == "exception":
        try:
            args = BaseException.__dict__["args"].__get__(x)
        except Exception:
            args = None
        field("args=", args)
    if lay.dict_get is not None:
        try:
            d = lay.dict_get(x)
        except Exception:
            d = None
        if type(d) is dict and d:
            items = list(islice(dict.items(d), left))
            for a, v in items:
                if type(a) is str:
                    field(escape(a) + "=", v)
                else:
                    field(None, a)
                    parts.append((_TEXT, "="))
                    parts.append((_OBJ, v))
            if len(items) >= left:
                parts.append((_FULL, None))
    for name, get in lay.slots:
        try:
            v = get(x)
        except AttributeError:
            continue           # an empty slot
        field(name + "=", v)
    return lay.name + "(", parts, ")"


_module_dict = types.ModuleType.__dict__["__dict__"].__get__


# ------------------------------------------------------------------------ the recorder
class Recorder:
    """The values hook of one record (`record`, a tracer.TestRecord): at each of its steps,
    before the statement runs, sets the locals `patch` gives for that step, pickles those
    `capture` names, and notes the locals whose encoding changed since the frame's previous
    step (`record`).  `offset`: the record's step `i` is step `i + offset` of the trace the
    re-run writes (capture and patch keys are numbered so); None: a record whose steps are not
    numbered so at run time (the setup recording, renumbered when the trace is written):
    no capture, no patch."""

    def __init__(self, tracer, record, values, offset):
        self.tracer = tracer
        self.record = record
        self.offset = offset
        self.do_record = bool(values.get("record"))
        self.capture_at = {}
        self.patch_at = {}
        if offset is not None:
            for key, dst in (("capture", self.capture_at), ("patch", self.patch_at)):
                for s, v in (values.get(key) or {}).items():
                    i = int(s) - offset
                    if i >= 0:
                        dst[i] = v
        self.rows = []            # (step, var, encoding), steps of the record
        self.captured = {}        # step of the record -> {var: base64 pickle or None}
        self.patched = []         # steps of the record whose patch was made
        self.patch_errors = []    # (step of the record, var, why)

    def step(self, frec, idx, frame):
        """Step `idx` of the record, in `frec`'s Python frame `frame`, before it runs."""
        if self.tracer.cur is not self.record:
            return     # (the setup recording's steps of a segment the re-run does not keep)
        if self.patch_at and idx in self.patch_at:
            self._run(self._patch, frec, idx, frame)
        if self.capture_at and idx in self.capture_at:
            self._run(self._capture, frec, idx, frame)
        if self.do_record:
            try:
                self._record(frec, idx, frame)
            except Exception:
                self._run(self._record, frec, idx, frame)

    def _run(self, fn, frec, idx, frame):
        try:
            try:
                fn(frec, idx, frame)
            except RecursionError:
                # the program is at the recursion limit: a little more for us
                lim = sys.getrecursionlimit()
                sys.setrecursionlimit(lim + 500)
                try:
                    fn(frec, idx, frame)
                finally:
                    sys.setrecursionlimit(lim)
        except Exception as e:
            self.tracer.errors.append(f"values: step {idx}: {type(e).__name__}: {e}")

    def _quiet(self):
        """While the program's code runs for us (unpickling, pickling: __reduce__, __setstate__
        ...) nothing is traced: the tracer takes it for another thread's.  (In a trace function
        the interpreter traces nothing anyway; a condition wrapper is no trace function.)"""
        tr = self.tracer
        saved, tr.thread = tr.thread, None
        return saved

    def _patch(self, frec, idx, frame):
        if idx in self.patched:
            return
        co = frame.f_code
        names = None
        if co.co_flags & _CO_OPTIMIZED:
            names = set(co.co_varnames) | set(co.co_cellvars) | set(co.co_freevars)
        objs = {}
        saved = self._quiet()
        try:
            for var, b64 in self.patch_at[idx].items():
                if names is not None and var not in names:
                    self.patch_errors.append((idx, var, "not a variable of the step's function"))
                    continue
                try:
                    objs[var] = pickle.loads(base64.b64decode(b64))
                except Exception as e:
                    self.patch_errors.append((idx, var, f"cannot unpickle: {type(e).__name__}: {e}"))
        finally:
            self.tracer.thread = saved
        if len(objs) != len(self.patch_at[idx]):
            return
        loc = frame.f_locals
        for var, v in objs.items():
            loc[var] = v
        if names is not None and not _PROXY_LOCALS:
            # into the fast locals now: in a trace function the trampoline would do it when
            # the function returns, but a condition wrapper (a step it begins) is an ordinary
            # call, after which the next trace event reloads f_locals from the fast locals
            _to_fast(frame)
        self.patched.append(idx)

    def _capture(self, frec, idx, frame):
        loc = frame.f_locals
        got = {}
        saved = self._quiet()
        try:
            for var in self.capture_at[idx]:
                got[var] = None
                try:
                    if var in loc:
                        got[var] = base64.b64encode(pickle.dumps(loc[var], protocol=4)).decode("ascii")
                except Exception:
                    pass     # not picklable: null
        finally:
            self.tracer.thread = saved
        self.captured[idx] = got

    def _record(self, frec, idx, frame):
        prev = getattr(frec, "vals", None)
        new = {}
        rows = []
        enc = encode
        for k, v in list(frame.f_locals.items()):
            if type(k) is not str or k[:2] == "__" == k[-2:] or not k.isidentifier():
                continue     # (`.0` of a comprehension; __tracebackhide__, a module's __spec__ ...)
            s = new[k] = enc(v)
            if prev is None or prev.get(k) != s:
                rows.append((k, s))
        if prev:
            for k in prev:
                if k not in new:
                    rows.append((k, UNBOUND))
        rows.sort()
        frec.vals = new
        self.rows.extend((idx, k, s) for (k, s) in rows)
