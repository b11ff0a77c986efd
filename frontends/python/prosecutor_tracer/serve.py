"""The warm experiment runner's process management (POSIX): one request per forked child.

The test session (pytest with the plugin in serve mode) imports and collects once, then calls
`serve`.  Requests come as JSON lines on `proto_in`,
``{"id": .., "test": .., "stmt": .., "occurrence": .., "timeout_s": ..}`` (optionally ``"force"``,
a forced set, ``"events"``, where to write the run's trace, and ``"values"``, what to record,
capture and patch with it); each runs in a child
forked from the session.  In the session `serve` returns None when the requests end; in a child
it returns a `Task` (the request), so that the caller runs the request at its own stack depth
(the test then has the recursion depth it has in a flip re-run, where pytest's runtestloop calls
it) and hands its result dict back with `Task.finish`.  Each request is answered by one JSON line
on `proto_out`: the result plus ``"id"`` and ``"duration_ms"``.  At most `jobs` children run at
once; a child running past its request's ``timeout_s`` is killed (``"outcome": "timeout"``,
``"detail": "killed after N ms"``); a child that ends without a result is a ``"crash"`` (its exit
status or signal, and the last lines it printed).  Neither disturbs the other requests.

The protocol file descriptors are not the session's stdout / stdin (flip.py moved them away
before pytest started), so nothing pytest or a test prints can reach the protocol channel: a
child's fds 1 and 2 go to a file of its own, read back only to explain a crash.
"""

from __future__ import annotations

import collections
import json
import os
import select
import signal
import sys
import tempfile
import time

PROTOCOL = 1
_POLL_S = 0.2          # how often a child is checked when nothing wakes the loop (see _reap)
_EXIT_POLL_S = 0.002   # ... and while a child that closed its result pipe has not been reaped yet
_EXIT_GRACE_S = 0.5    # (for this long after the pipe closed: a child that closed it and runs on
                       # is checked at _POLL_S again)


class Task:
    """In a child: the request to run; `finish(result)` sends the result and ends the child."""

    def __init__(self, request, wfd):
        self.request = request
        self._wfd = wfd

    def finish(self, result):
        code = 70
        try:
            data = (json.dumps(result) + "\n").encode("utf-8")
            while data:
                data = data[os.write(self._wfd, data):]
            code = 0
        finally:
            _exit(code)

    def abort(self):
        """The run failed (an error of the runner, not of the test): no result, a traceback."""
        try:
            import traceback
            traceback.print_exc()
        finally:
            _exit(70)


class _Forked(BaseException):
    """Raised in a new child to unwind the server's frames up to `serve`."""

    def __init__(self, task):
        super().__init__()
        self.task = task


def _exit(code):
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass
    os._exit(code)


class _Child:
    __slots__ = ("req", "pid", "rfd", "buf", "t0", "deadline", "out", "closed_at")

    def __init__(self, req, pid, rfd, out, t0):
        self.req, self.pid, self.rfd, self.out, self.t0 = req, pid, rfd, out, t0
        self.buf = b""
        self.closed_at = None      # when its result pipe reached end of file
        limit = _number(req.get("timeout_s"), 0.0)
        self.deadline = t0 + limit if limit > 0 else None


def _number(v, default):
    try:
        return float(v)
    except (TypeError, ValueError):
        return default


def check_request(req):
    """Why request `req` (a parsed JSON line) cannot run, or None."""
    if not isinstance(req, dict) or not isinstance(req.get("test"), str):
        return "bad request: a JSON object with \"test\" (and \"stmt\", \"occurrence\") is required"
    stmt, occ = req.get("stmt", ""), req.get("occurrence", 0)
    if not isinstance(stmt, str) or not isinstance(occ, int) or isinstance(occ, bool):
        return "bad request: \"stmt\" must be a string and \"occurrence\" an integer"
    if occ < 1 and not (stmt == "" and occ == 0):
        return "rerun config error: --occurrence must be >= 1"
    if "events" in req and not (isinstance(req["events"], str) and req["events"]):
        return "bad request: \"events\" must be a directory path"
    if "force" in req:
        from .flip import check_force
        why = check_force(req["force"], stmt, occ)
        if why is not None:
            return why
    if "values" in req:
        from .flip import check_values
        return check_values(req["values"], req.get("events"))
    return None


class Server:
    def __init__(self, proto_in, proto_out, jobs, prepare=None):
        self.proto_in, self.proto_out = proto_in, proto_out
        self.jobs = max(1, int(jobs))
        self.prepare = prepare     # called with each request in the session, before its fork
        self.queue = collections.deque()
        self.running = {}          # pid -> _Child
        self.inbuf = b""
        self.eof = False
        self.tmp = tempfile.mkdtemp(prefix="prosecutor-serve-")
        self.parent = os.getpid()

    # ------------------------------------------------------------ protocol
    def send(self, obj):
        data = (json.dumps(obj) + "\n").encode("utf-8")
        while data:
            n = os.write(self.proto_out, data)
            data = data[n:]

    def _read_requests(self):
        data = os.read(self.proto_in, 65536)
        if not data:
            self.eof = True
            return
        self.inbuf += data
        *lines, self.inbuf = self.inbuf.split(b"\n")
        for line in lines:
            if line.strip():
                self._accept(line)

    def _accept(self, line):
        try:
            req = json.loads(line)
        except ValueError as e:
            self.send({"id": None, "outcome": "crash", "flipped": False, "detail": f"bad request: {e}",
                       "duration_ms": 0})
            return
        why = check_request(req)
        if why is not None:
            rid = req.get("id") if isinstance(req, dict) else None
            self.send({"id": rid, "outcome": "crash", "flipped": False, "detail": why, "duration_ms": 0})
            return
        self.queue.append(req)

    # ------------------------------------------------------------ children
    def _start(self, req):
        if self.prepare is not None:
            try:
                self.prepare(req)
            except Exception:
                pass       # (a cache the child would have filled itself)
        out = os.path.join(self.tmp, f"{len(self.running)}-{time.monotonic_ns()}.out")
        rfd, wfd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            self._child(req, wfd, out)   # raises _Forked
        os.close(wfd)
        try:
            os.setpgid(pid, pid)         # (the child does it too; whoever is first)
        except OSError:
            pass
        self.running[pid] = _Child(req, pid, rfd, out, time.monotonic())

    def _child(self, req, wfd, out):
        try:
            os.setpgid(0, 0)             # its own group: a timeout kills what the test started too
            _die_with_parent(self.parent)
            os.close(self.proto_in)
            os.close(self.proto_out)
            for c in self.running.values():
                if c.rfd is not None:
                    os.close(c.rfd)
            fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.close(fd)
        except BaseException:
            Task(req, wfd).abort()
        raise _Forked(Task(req, wfd))

    def _read_child(self, c):
        try:
            chunk = os.read(c.rfd, 65536)
        except OSError:
            chunk = b""
        if chunk:
            c.buf += chunk
            return
        os.close(c.rfd)
        c.rfd = None
        c.closed_at = time.monotonic()

    def _finish(self, c, status):
        """Child `c` ended with wait status `status`: its result, or why there is none."""
        del self.running[c.pid]
        if c.rfd is not None:
            self._drain(c)
        ms = int((time.monotonic() - c.t0) * 1000)
        res = None
        try:
            res = json.loads(c.buf.decode("utf-8").strip() or "null")
        except ValueError:
            res = None
        if not isinstance(res, dict) or "outcome" not in res:
            res = {"outcome": "crash", "flipped": False,
                   "detail": f"test run died: {_status_text(status)} without a result: {_tail(c.out)}"}
        _remove(c.out)
        res.update({"id": c.req.get("id"), "duration_ms": ms})
        self.send(res)

    def _drain(self, c):
        os.set_blocking(c.rfd, False)
        try:
            while True:
                chunk = os.read(c.rfd, 65536)
                if not chunk:
                    break
                c.buf += chunk
        except (BlockingIOError, OSError):
            pass
        os.close(c.rfd)
        c.rfd = None

    def _reap(self):
        for c in list(self.running.values()):
            try:
                pid, status = os.waitpid(c.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status = c.pid, 0
            if pid:
                self._finish(c, status)

    def _kill_late(self):
        now = time.monotonic()
        for c in list(self.running.values()):
            if c.deadline is not None and now >= c.deadline:
                _kill(c.pid)
                del self.running[c.pid]
                if c.rfd is not None:
                    os.close(c.rfd)
                _remove(c.out)
                limit = int(_number(c.req.get("timeout_s"), 0.0) * 1000)
                self.send({"id": c.req.get("id"), "outcome": "timeout", "flipped": False,
                           "detail": f"killed after {limit} ms", "duration_ms": int((now - c.t0) * 1000)})

    def _wait_s(self):
        """How long the loop may wait for a pipe: until the next deadline, at most _POLL_S (a
        child is reaped when it has ended, which no pipe signals); only _EXIT_POLL_S while a
        child whose result pipe just closed (it is exiting) has not been reaped: its result
        waits for the reaping, and the next request for its slot."""
        if not self.running:
            return None
        now = time.monotonic()
        deadlines = [c.deadline for c in self.running.values() if c.deadline is not None]
        left = min(deadlines) - now if deadlines else _POLL_S
        if any(c.closed_at is not None and now - c.closed_at < _EXIT_GRACE_S
               for c in self.running.values()):
            left = min(left, _EXIT_POLL_S)
        return max(0.0, min(left, _POLL_S))

    # ------------------------------------------------------------ loop
    def _select(self, fds):
        if not fds:      # (only children whose pipe closed before they ended)
            time.sleep(self._wait_s())
            return []
        return select.select(fds, [], [], self._wait_s())[0]

    def loop(self):
        try:
            while not self.eof or self.queue or self.running:
                while self.queue and len(self.running) < self.jobs:
                    self._start(self.queue.popleft())
                fds = [c.rfd for c in self.running.values() if c.rfd is not None]
                if not self.eof:
                    fds.append(self.proto_in)
                ready = self._select(fds)
                if self.proto_in in ready:
                    self._read_requests()
                for c in list(self.running.values()):
                    if c.rfd is not None and c.rfd in ready:
                        self._read_child(c)
                self._reap()
                self._kill_late()
        finally:
            if os.getpid() == self.parent:      # (not in a child unwinding to serve)
                for c in list(self.running.values()):
                    _kill(c.pid)
                try:
                    os.rmdir(self.tmp)
                except OSError:
                    pass


def serve(proto_in, proto_out, jobs, hello, prepare=None):
    """Answers requests until `proto_in` ends (module docstring): returns None in the session, a
    `Task` in each child.  `hello` (a dict) is sent first: the handshake that says the session
    is ready.  `prepare(request)`, when given, runs in the session before each request's fork:
    what it computes there (caches) every later child inherits."""
    s = Server(proto_in, proto_out, jobs, prepare)
    _preload()
    s.send(dict(hello, ready=True, protocol=PROTOCOL, pid=os.getpid(), jobs=s.jobs))
    try:
        s.loop()
    except _Forked as f:
        return f.task
    except BrokenPipeError:
        pass       # the client went away: the children were killed on the way out
    return None


def _kill(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


_PRCTL = None


def _die_with_parent(parent):
    """Linux: the child is killed when the server dies (a server killed by its client must not
    leave a test running); elsewhere only checked once."""
    if _PRCTL is not None:
        try:
            _PRCTL(1, signal.SIGKILL, 0, 0, 0)     # PR_SET_PDEATHSIG
        except Exception:
            pass
    if os.getppid() != parent:
        os._exit(70)


def _preload():
    """Loads prctl for _die_with_parent once, before the first fork."""
    global _PRCTL
    if sys.platform.startswith("linux") and _PRCTL is None:
        try:
            import ctypes
            _PRCTL = ctypes.CDLL(None, use_errno=True).prctl
        except Exception:
            pass


def _status_text(status):
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "?"
        return f"killed by signal {sig} ({name})"
    if os.WIFEXITED(status):
        return f"exit status {os.WEXITSTATUS(status)}"
    return f"wait status {status}"


def _tail(path, n=5):
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 8192))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    return " | ".join(lines[-n:])


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass
