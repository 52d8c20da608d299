"""The compile worker's own loop (``python -m lazysparse.engine.compile_worker``): read
``(id, optimized plan)`` jobs from stdin, run each plan through the compiled kernels so every
kernel it needs is compiled into the disk cache, answer ``(id, ok, message)`` on stdout.

Frames are an 8-byte little-endian length and a pickle. The child runs at a lower priority
than the user's process and with ``LAZYSPARSE_COMPILE=sync`` (it never starts a worker of its
own); anything its code prints goes to stderr, so stdout carries only answers.
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
    try:
        os.nice(10)
    except (AttributeError, OSError):
        pass
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints must not corrupt the answer stream
    while (frame := read_frame(source)) is not None:
        job_id, payload = pickle.loads(frame)
        ok, message = _compile(payload)
        write_frame(sink, pickle.dumps((job_id, ok, message)))


if __name__ == "__main__":
    main()
