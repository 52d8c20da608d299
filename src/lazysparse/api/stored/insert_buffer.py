"""New entries of a sparse array written by ``x[key] = v``, held in a hashed insert buffer.

For storage whose last level is compressed under dense levels (CSR, CSC, a sparse vector),
new coordinates go into a :class:`~lazysparse.formats.compiled.hash_insert.HashedBuilder` keyed by
(parent position, coordinate): an assignment costs O(its entries) amortized (a repeated
coordinate is overwritten in place, last write wins), and reading one element probes the
table (no merge). When the whole array is read, the buffer merges into the storage in one
O(stored + new) pass that appends each row's new entries after its stored ones: the last
level becomes *unordered* compressed, so nothing is sorted (issue 14: the issue asks for
inserts into a hashed or unordered level rather than a sort-and-rebuild).
"""

from __future__ import annotations

import math

import numpy as np

from lazysparse import formats
from lazysparse.api.stored.selection import equals_fill
from lazysparse.formats.compiled.hash_insert import HashedBuilder
from lazysparse.formats.compiled.sortkernels import stable_order
from lazysparse.formats.dtypes import choose_index_dtype
from lazysparse.formats.levels import Compressed, Dense

# staged assignments inserted into the table at once
_STAGED = 256


def fits(t: formats.Tensor) -> bool:
    """Whether ``t``'s layout takes a hashed insert buffer (dense levels over one unique
    compressed level)."""
    if not t.levels or not all(isinstance(lv, Dense) for lv in t.levels[:-1]):
        return False
    last = t.levels[-1]
    return isinstance(last, Compressed) and last.unique


class InsertBuffer:
    """The new entries of one owned sparse tensor (see the module docstring)."""

    def __init__(self, t: formats.Tensor) -> None:
        self.order = t.mode_order
        self.dims = tuple(t.shape[m] for m in t.mode_order)
        self.builder = HashedBuilder(self.dims[-1], math.prod(self.dims[:-1]), t.dtype)
        # assignments not inserted yet: a single-element assignment costs a list append;
        # they enter the table in one call when a probe or the merge needs them
        self._coords: list[np.ndarray] = []
        self._values: list[np.ndarray] = []

    def __bool__(self) -> bool:
        return len(self.builder) > 0 or bool(self._coords)

    def _insert_staged(self) -> None:
        """Insert the staged assignments, in order (later writes win)."""
        if not self._coords:
            return
        coords = np.concatenate(self._coords, axis=1)
        values = np.concatenate(self._values)
        self.builder.insert(*self._keys(coords), values)
        self._coords, self._values = [], []  # after: a reader never sees the buffer empty

    def _keys(self, coords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Parent positions and last-level coordinates of ``coords`` (``(ndim, n)``, axis
        order)."""
        lead = [coords[m] for m in self.order[:-1]]
        parents = (np.ravel_multi_index(lead, self.dims[:-1]) if lead
                   else np.zeros(coords.shape[1], np.int64))
        return parents, coords[self.order[-1]]

    def add(self, coords: np.ndarray, values: np.ndarray) -> None:
        """Write ``values`` at ``coords`` (later writes of a coordinate win)."""
        self._coords.append(coords)
        self._values.append(values)
        if len(self._coords) >= _STAGED:
            self._insert_staged()

    def lookup(self, coords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of ``coords`` are buffered, and their values there."""
        self._insert_staged()
        q = self.builder.lookup(*self._keys(coords))
        hit = q >= 0
        return hit, self.builder.values[np.where(hit, q, 0)]

    def clear(self) -> None:
        """Forget the buffered entries (merged): a fresh table for the next batch."""
        self._coords, self._values = [], []
        self.builder.n = 0
        self.builder.table[:] = -1

    def merged(self, t: formats.Tensor) -> formats.Tensor | None:
        """``t`` with the buffered entries appended to their rows (an unordered last level);
        entries equal to the fill need no storage. None when nothing is to be stored. The
        entries stay buffered until :meth:`clear`."""
        self._insert_staged()
        b = self.builder
        n = len(b)
        keep = ~equals_fill(b.values[:n], t.fill_value)
        parents, coords, values = b.parents[:n][keep], b.coords[:n][keep], b.values[:n][keep]
        if not parents.size:
            return None
        last = t.levels[-1]
        assert isinstance(last, Compressed)
        nparents = int(last.ptr.size) - 1
        old_len = np.diff(last.ptr.astype(np.int64))
        add_len = np.bincount(parents, minlength=nparents)
        ptr = np.zeros(nparents + 1, np.int64)
        np.cumsum(old_len + add_len, out=ptr[1:])
        total = int(ptr[-1])
        idt = choose_index_dtype(t.shape, total)
        idx = np.empty(total, idt)
        vals = np.empty(total, t.values.dtype)
        nold = int(last.idx.shape[0])
        # stored entries keep their order; row r's move by the new entries of rows < r
        shift = np.repeat(ptr[:-1] - last.ptr[:-1].astype(np.int64), old_len)
        dest = np.arange(nold, dtype=np.int64) + shift
        idx[dest], vals[dest] = last.idx, t.values
        # new entries go after their row's stored ones, grouped by row (counting sort)
        by_row = stable_order(parents, nparents)
        rank = np.arange(parents.size, dtype=np.int64) - np.repeat(
            np.cumsum(add_len) - add_len, add_len)
        rows = parents[by_row]
        dest_new = ptr[rows] + old_len[rows] + rank
        idx[dest_new], vals[dest_new] = coords[by_row], values[by_row]
        level = Compressed(last.size, ptr.astype(idt, copy=False), idx, ordered=False)
        return formats.Tensor(t.shape, (*t.levels[:-1], level), t.mode_order, vals,
                              t.fill_value, check=False)


__all__ = ["InsertBuffer", "fits"]
