"""pytest plugin: the Numba compiles and wall time of each test, for the suite's time table.

Loaded with ``-p suite_kernels_plugin`` (``benchmarks/`` on ``PYTHONPATH``); each finished test
appends one JSON line to ``$SUITE_KERNELS_OUT`` (default ``suite-kernels.jsonl`` in the
temporary directory): its node id, its wall seconds (setup, call and teardown), the Numba
compiles it started from Python (``top``: a generated kernel or a compiled helper the host
calls; a disk load is not one), those nested in them (``nested``: the ``@njit`` helpers a
kernel calls, compiled for its types) and the seconds the top-level ones took. Numba's own
``numba:compile`` events are counted, so the numbers are deterministic for one test order
and cache state. ``benchmarks/suite_kernels.py`` sums them per file.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from numba.core import event

OUT = Path(os.environ.get("SUITE_KERNELS_OUT",
                          Path(tempfile.gettempdir()) / "suite-kernels.jsonl"))


class CompileCounter(event.Listener):
    """Counts Numba compiles by nesting depth, and the top-level ones' seconds."""

    def __init__(self) -> None:
        self._local = threading.local()
        self.top = 0
        self.nested = 0
        self.seconds = 0.0

    def on_start(self, ev: event.Event) -> None:
        """A compile begins: a top-level one when no other is running on this thread."""
        stack = self._local.__dict__.setdefault("stack", [])
        if stack:
            self.nested += 1
        else:
            self.top += 1
        stack.append(time.perf_counter())

    def on_end(self, ev: event.Event) -> None:
        """A compile ends: its seconds count when it was a top-level one."""
        stack = self._local.stack
        started = stack.pop()
        if not stack:
            self.seconds += time.perf_counter() - started

    def take(self) -> tuple[int, int, float]:
        """The counts since the last take, then zero."""
        got = (self.top, self.nested, self.seconds)
        self.top, self.nested, self.seconds = 0, 0, 0.0
        return got


COUNTER = CompileCounter()
event.register("numba:compile", COUNTER)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Generator[None, None, None]:
    """Record one test's compiles and wall time (its fixtures' work included)."""
    COUNTER.take()
    start = time.perf_counter()
    yield
    top, nested, seconds = COUNTER.take()
    record = {"test": item.nodeid, "wall": round(time.perf_counter() - start, 4),
              "top": top, "nested": nested, "compile_s": round(seconds, 4)}
    with OUT.open("a") as f:
        f.write(json.dumps(record) + "\n")
