"""Exact stored-entry counts of results, from the operands' patterns (issue 36).

Where the optimizer's estimate of a result's density is unsure and the format choice depends
on it, a cheap exact count decides before anything is allocated, as scipy's symbolic pass
sizes a product's output:

* :func:`product_pattern_entries`: the entries of ``C[i, j] = sum_t A[i, t] B[t, j]``, the
  distinct ``(i, j)`` reached through some ``t`` (structural, as a Gustavson kernel or
  scipy stores them), row by row with one marker per column: O(work + n);
* :func:`adjacency`: a 2-d tensor's pattern as lists from the coordinates of one axis to the
  other's (a csr-like tensor's own arrays along its outer axis; otherwise one counting
  sort, O(nnz + extent) as scipy's ``tocsc``), what the product count walks;
  :func:`native_axis` says which axis needs no sort;
* :func:`stored_values`: the values at a tensor's stored positions, what a map's count
  evaluates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from lazysparse.formats.assemble import expand
from lazysparse.formats.compiled.jit import helper_jit
from lazysparse.formats.levels import Compressed, Dense

if TYPE_CHECKING:
    from lazysparse.formats.tensor import Tensor


def native_axis(t: Tensor) -> int | None:
    """The axis of 2-d ``t`` whose lists :func:`adjacency` reads without a sort (a csr-like
    tensor's outer axis), else None."""
    lv = t.levels
    if t.ndim == 2 and len(lv) == 2 and isinstance(lv[0], Dense) and isinstance(
            lv[1], Compressed):
        return int(t.mode_order[0])
    return None


def adjacency(t: Tensor, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ptr, idx)``: the coordinates along the other axis of 2-d ``t`` stored at each
    coordinate ``c`` of ``axis`` are ``idx[ptr[c]:ptr[c + 1]]`` (every stored position,
    an explicitly stored fill included)."""
    if t.ndim != 2 or axis not in (0, 1):
        raise ValueError(f"adjacency needs a 2-d tensor and axis 0 or 1, got {t.ndim}-d "
                         f"and axis {axis}")
    lv = t.levels
    if native_axis(t) == axis:
        return np.asarray(lv[1].ptr, dtype=np.int64), np.asarray(lv[1].idx, dtype=np.int64)
    coords, _ = expand(t)
    by_axis = dict(zip(t.mode_order, coords, strict=True))
    outer = np.asarray(by_axis[axis], dtype=np.int64)
    inner = np.asarray(by_axis[1 - axis], dtype=np.int64)
    ptr = np.zeros(t.shape[axis] + 1, dtype=np.int64)
    np.cumsum(np.bincount(outer, minlength=t.shape[axis]), out=ptr[1:])
    return ptr, _bucketed(outer, inner, ptr)


@helper_jit(nogil=True)
def _bucketed(outer, inner, ptr):  # type: ignore[no-untyped-def]
    """``inner`` grouped by ``outer`` (a stable counting sort into ``ptr``'s segments)."""
    nxt = ptr[:-1].copy()
    out = np.empty(inner.size, dtype=np.int64)
    for k in range(inner.size):
        c = outer[k]
        out[nxt[c]] = inner[k]
        nxt[c] += 1
    return out


def stored_values(t: Tensor) -> np.ndarray:
    """The values at ``t``'s stored positions (one per stored entry, in storage order)."""
    lv = t.levels
    if len(lv) == 2 and isinstance(lv[0], Dense) and isinstance(lv[1], Compressed):
        return t.values[: int(lv[1].ptr[-1])]
    return expand(t)[1]


def product_pattern_entries(a: tuple[np.ndarray, np.ndarray],
                            b: tuple[np.ndarray, np.ndarray], ncols: int) -> int:
    """Distinct ``(i, j)`` with ``j`` in ``b``'s list of some ``t`` in ``a``'s list of
    ``i`` (``a``: rows to ``t``, ``b``: ``t`` to ``ncols`` columns, :func:`adjacency`)."""
    if a[0].size < 2 or ncols <= 0:
        return 0
    return int(_product_count(a[0], a[1], b[0], b[1], ncols))


@helper_jit(nogil=True)
def _product_count(a_ptr, a_idx, b_ptr, b_idx, ncols):  # type: ignore[no-untyped-def]
    """The row-by-row symbolic count of :func:`product_pattern_entries`."""
    mark = np.full(ncols, -1, dtype=np.int64)
    total = 0
    for i in range(a_ptr.size - 1):
        for p in range(a_ptr[i], a_ptr[i + 1]):
            t = a_idx[p]
            for q in range(b_ptr[t], b_ptr[t + 1]):
                j = b_idx[q]
                if mark[j] != i:
                    mark[j] = i
                    total += 1
    return total


__all__ = ["adjacency", "native_axis", "product_pattern_entries", "stored_values"]
