"""Plain-Python twins of the hashed builder's compiled loops (insert, rehash, lookup of
:mod:`.hash_insert`), for a few entries: the same probes in the same order, so the same
tables, positions and values, with no Numba compile, so that a first ``x[i, j] = v`` does
not wait on the compiler (issue 35).

Open addressing is sequential (where an entry lands depends on those before it), so these
are loops, not vectorized. :func:`.levels.hashed.hash_on_python` is the one decision (for
these and for the table fill there): the twins up to ``HASH_PYTHON_MAX`` entries, the
compiled loops above.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lazysparse.formats.levels.hashed import EMPTY, slot_of


def _probe(bp: list[int], bc: list[int], table: np.ndarray, slot: int, p: int,
           c: int) -> tuple[int, int]:
    """Linear probing from ``slot``: (slot, entry) of key ``(p, c)``, or (empty slot, -1)."""
    mask = table.size - 1
    while True:
        q = int(table[slot])
        if q == EMPTY or (bc[q] == c and bp[q] == p):
            return slot, q
        slot = (slot + 1) & mask


def _min(a: Any, b: Any) -> Any:
    return b if b < a else a


def _max(a: Any, b: Any) -> Any:
    return b if b > a else a


#: the compiled helpers' operations on NumPy scalars (ufuncs: no scalar-overflow warning;
#: a narrow integer wraps as the compiled store into its array does)
PY_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add, "multiply": np.multiply, "min": _min, "max": _max,
    "or": np.bitwise_or, "and": np.bitwise_and,
}


def insert(bp: np.ndarray, bc: np.ndarray, bv: np.ndarray, table: np.ndarray, shift: int,
           n: int, size: int, parents: np.ndarray, coords: np.ndarray, values: np.ndarray,
           start: int, op: Callable[[Any, Any], Any] | None) -> tuple[int, int]:
    """``hash_insert``'s compiled insert loop (``op`` None overwrites): insert entries
    ``start..`` until done or until the arrays or the table would overfill; returns (next
    entry, new count)."""
    ps, cs = parents.tolist(), coords.tolist()
    keys_p, keys_c = bp[:n].tolist(), bc[:n].tolist()
    for i in range(start, len(ps)):
        p, c = ps[i], cs[i]
        slot, q = _probe(keys_p, keys_c, table, slot_of(p, c, size, shift), p, c)
        if q != EMPTY:
            bv[q] = values[i] if op is None else op(bv[q], values[i])
            continue
        if n >= bp.size or 2 * (n + 1) > table.size:
            return i, n
        bp[n], bc[n], bv[n] = p, c, values[i]
        keys_p.append(p)
        keys_c.append(c)
        table[slot] = n
        n += 1
    return len(ps), n


def rehash(bp: np.ndarray, bc: np.ndarray, n: int, size: int, table: np.ndarray,
           shift: int) -> None:
    """Builder entries ``0..n-1`` (unique keys) into an empty table."""
    mask = table.size - 1
    for q, (p, c) in enumerate(zip(bp[:n].tolist(), bc[:n].tolist(), strict=True)):
        slot = slot_of(p, c, size, shift)
        while table[slot] != EMPTY:
            slot = (slot + 1) & mask
        table[slot] = q


def lookup(bp: np.ndarray, bc: np.ndarray, n: int, table: np.ndarray, shift: int, size: int,
           parents: np.ndarray, coords: np.ndarray) -> np.ndarray:
    """The builder entry of each ``(parents[j], coords[j])``, or -1."""
    keys_p, keys_c = bp[:n].tolist(), bc[:n].tolist()
    out = np.empty(parents.size, np.int64)
    for j, (p, c) in enumerate(zip(parents.tolist(), coords.tolist(), strict=True)):
        out[j] = _probe(keys_p, keys_c, table, slot_of(p, c, size, shift), p, c)[1]
    return out
