"""Timing helpers shared by the benchmarks that compare one call with a peer's."""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable


def seconds(fn: Callable[[], object]) -> float:
    """Wall time of one call (its result dropped before the next)."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def paired_times(ours: Callable[[], object], theirs: Callable[[], object], repeat: int
                 ) -> tuple[float, float, float, float]:
    """Median times of both, the median and the best per-pair ratio; runs alternate so
    both share the machine's noise."""
    a, b = [], []
    for i in range(repeat):
        first, second = (ours, theirs) if i % 2 == 0 else (theirs, ours)
        t1, t2 = seconds(first), seconds(second)
        ta, tb = (t1, t2) if i % 2 == 0 else (t2, t1)
        a.append(ta)
        b.append(tb)
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    return statistics.median(a), statistics.median(b), statistics.median(ratios), min(ratios)


def extra_peak(fn: Callable[[], object]) -> float:
    """Peak bytes allocated while ``fn`` runs, its result included."""
    gc.collect()
    tracemalloc.start()
    try:
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del out
    return float(peak)
