"""Exact pair counts kept by the operands' patterns, not only their statistics (issue 36).

``exact_counts`` memoizes a product's count with its operands' statistics, which belong to
one tensor object. A repeated slice (``lc[:300] @ lc.T`` in a loop) is a new tensor on every
call, with new statistics, so its 4.4M-step count ran again on each (12-20 ms of a 50 ms
call). The pattern of a csr-like tensor is its shape, mode order and two index arrays: a
16-byte BLAKE2 digest of them (computed once per tensor, kept with its statistics) keys a
bounded table of counts, so the same pattern counts once. A count only decides a result's
format and the pricer's verdict, never an allocation (the kernels size their outputs
themselves), so a digest collision could cost speed, not correctness.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from lazysparse.formats.pattern_counts import native_axis
from lazysparse.formats.statistics import TensorStats

if TYPE_CHECKING:
    from lazysparse.formats.tensor import Tensor

# counts kept by pattern (least recently used dropped first)
PATTERN_COUNTS_KEPT = 256
_COUNTS: OrderedDict[tuple[Any, ...], int] = OrderedDict()
_DIGESTS: weakref.WeakKeyDictionary[TensorStats, bytes] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()  # the optimizer also runs on background compile threads


def pattern_digest(t: Tensor, stats: TensorStats) -> bytes | None:
    """A digest of csr-like ``t``'s pattern (shape, mode order, ptr and idx), once per
    statistics object; None for other layouts (their pattern is not two arrays)."""
    with _LOCK:
        found = _DIGESTS.get(stats)
    if found is not None:
        return found
    if native_axis(t) is None:
        return None
    lv = t.levels[1]
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((tuple(t.shape), tuple(t.mode_order))).encode())
    for arr in (lv.ptr, lv.idx[: int(lv.ptr[-1])]):
        a = np.ascontiguousarray(arr, dtype=np.int64)
        h.update(a.view(np.uint8))
    digest = h.digest()
    with _LOCK:
        _DIGESTS[stats] = digest
    return digest


def count_by_pattern(key: tuple[Any, ...] | None, count: Callable[[], int | None]
                     ) -> int | None:
    """``count()`` once per ``key`` (digests and axes; None: not keyed, always counted)."""
    if key is None:
        return count()
    with _LOCK:
        n = _COUNTS.get(key)
        if n is not None:
            _COUNTS.move_to_end(key)
            return n
    n = count()
    if n is not None:
        with _LOCK:
            _COUNTS[key] = n
            while len(_COUNTS) > PATTERN_COUNTS_KEPT:
                _COUNTS.popitem(last=False)
    return n


def clear_pattern_counts() -> None:
    """Forget every count kept by pattern (tests that count the counts start clean)."""
    with _LOCK:
        _COUNTS.clear()


__all__ = ["PATTERN_COUNTS_KEPT", "clear_pattern_counts", "count_by_pattern",
           "pattern_digest"]
