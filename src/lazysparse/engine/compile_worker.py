"""The compile worker's own loop (``python -m lazysparse.engine.compile_worker``): read
``(id, optimized plan)`` jobs from stdin, run each plan through the compiled kernels so every
kernel it needs is compiled into the disk cache, answer ``(id, ok, message)`` on stdout.

Frames are an 8-byte little-endian length and a pickle. The child runs at the lowest
priority (:func:`lower_priority`, set by the parent as it starts the child, so its imports,
a second of CPU, run at it too) and with ``LAZYSPARSE_COMPILE=sync`` (it never starts a
worker of its own); anything its code prints goes to stderr, so stdout carries only
answers.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from typing import BinaryIO

_LENGTH = struct.Struct("<Q")


def write_frame(sink: BinaryIO, payload: bytes) -> None:
    """Write one length-prefixed frame and flush it."""
    sink.write(_LENGTH.pack(len(payload)) + payload)
    sink.flush()


#: the niceness of the worker (the lowest priority: it runs on what CPU time the user's
#: process and the machine's other work leave, and still runs on a busy machine)
WORKER_NICENESS = 19


def lower_priority(pid: int) -> None:
    """Give process ``pid`` (0: this one) the lowest priority, :data:`WORKER_NICENESS`
    (where the system has priorities)."""
    try:
        now = os.getpriority(os.PRIO_PROCESS, pid)
        os.setpriority(os.PRIO_PROCESS, pid, max(WORKER_NICENESS, now))
    except (AttributeError, OSError):
        pass


def read_frame(source: BinaryIO) -> bytes | None:
    """Read one frame; None at the end of the stream."""
    head = source.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (n,) = _LENGTH.unpack(head)
    body = source.read(n)
    if len(body) < n:
        return None
    return body


def _compile(payload: bytes) -> tuple[bool, str]:
    """Run one optimized plan (its results are dropped: the kernels are what it leaves)."""
    from lazysparse.kernels.backends.execute import execute_plan  # the worker's one real import

    try:
        execute_plan(pickle.loads(payload))
    except Exception as exc:  # reported to the parent, which compiles in process instead
        return False, f"{type(exc).__name__}: {exc}"
    return True, ""


def main() -> None:
    """Serve jobs until stdin closes."""
    os.environ["LAZYSPARSE_COMPILE"] = "sync"
    lower_priority(0)  # the parent lowered it at the start already; a worker run by hand too
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints must not corrupt the answer stream
    while (frame := read_frame(source)) is not None:
        job_id, payload = pickle.loads(frame)
        ok, message = _compile(payload)
        write_frame(sink, pickle.dumps((job_id, ok, message)))


if __name__ == "__main__":
    main()
