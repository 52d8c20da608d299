"""Scattered writes into a hashed level: :class:`HashedBuilder` inserts entries in any order
(amortized O(1) each) and freezes into a Tensor whose last level is :class:`Hashed`.

The builder keeps growable ``parents``/``coords``/``values`` arrays (entry ``q`` of the
builder) and a hash table over them with the exact hash of :mod:`.levels.hashed` (a slot
matches when ``parents[q] == p and coords[q] == c``). Arrays double when full and the table
doubles (and is rehashed) when an insert would make it more than half full. ``freeze``
counting-sorts the entries by parent (O(n + parents), no sort by coordinate) and remaps the
table's slots to the new positions: same keys, so no rehash.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lazysparse.formats.compiled import hash_python as HP
from lazysparse.formats.compiled.jit import Helper, helper_jit
from lazysparse.formats.compiled.sortkernels import stable_order
from lazysparse.formats.config import check_bins
from lazysparse.formats.dtypes import check_dtype, choose_index_dtype, normalize_fill
from lazysparse.formats.levels import Compressed, Dense, Hashed, Level
from lazysparse.formats.levels.hashed import (
    EMPTY,
    build_table,
    hash_on_python,
    hash_slot,
    table_shift,
    table_size,
)
from lazysparse.formats.specs import infer_spec
from lazysparse.formats.tensor import Tensor


def _make_inserter(combine: Helper | None) -> Helper:
    """A compiled insert loop that overwrites (``combine is None``) or combines values.
    Not disk-cached: a closure's cells enter Numba's cache key, which then never matches
    again (the index only grew), and Numba's own cache would write beside the package."""
    overwrite = combine is None
    op = combine if combine is not None else _first

    @helper_jit(nogil=True, disk_cache=False)
    def insert(bp, bc, bv, table, shift, n, size, parents, coords, values,
               start):  # pragma: no cover - compiled
        """Insert entries ``start..`` until done or until the arrays or the table would
        overfill; returns (next entry, new count)."""
        mask = np.uint64(table.size - 1)
        for i in range(start, parents.size):
            p, c = parents[i], coords[i]
            slot = hash_slot(p, c, size, shift)
            while True:
                q = table[slot]
                if q == EMPTY:
                    break
                if bc[q] == c and bp[q] == p:
                    break
                slot = (slot + np.uint64(1)) & mask
            if q != EMPTY:
                if overwrite:
                    bv[q] = values[i]
                else:
                    bv[q] = op(bv[q], values[i])
                continue
            if n >= bp.size or 2 * (n + 1) > table.size:
                return i, n
            bp[n] = p
            bc[n] = c
            bv[n] = values[i]
            table[slot] = n
            n += 1
        return parents.size, n

    return insert


@helper_jit(nogil=True)
def _first(a, b):  # pragma: no cover - compiled
    return b


@helper_jit(nogil=True)
def _add(a, b):  # pragma: no cover - compiled
    return a + b


@helper_jit(nogil=True)
def _mul(a, b):  # pragma: no cover - compiled
    return a * b


@helper_jit(nogil=True)
def _min(a, b):  # pragma: no cover - compiled
    return b if b < a else a


@helper_jit(nogil=True)
def _max(a, b):  # pragma: no cover - compiled
    return b if b > a else a


@helper_jit(nogil=True)
def _or(a, b):  # pragma: no cover - compiled
    return a | b


@helper_jit(nogil=True)
def _and(a, b):  # pragma: no cover - compiled
    return a & b


_NAMED_OPS: dict[Any, Any] = {
    "add": _add, np.add: _add, "multiply": _mul, np.multiply: _mul,
    "min": _min, np.minimum: _min, "max": _max, np.maximum: _max,
    "or": _or, np.logical_or: _or, np.bitwise_or: _or,
    "and": _and, np.logical_and: _and, np.bitwise_and: _and,
}
_INSERTERS: dict[Any, Any] = {None: _make_inserter(None)}
for _op in {id(f): f for f in _NAMED_OPS.values()}.values():
    _INSERTERS[_op] = _make_inserter(_op)


# each named operation's Python twin (hash_python.PY_OPS) and the value kinds it matches
# the compiled one on (elsewhere Numba's typing decides, as before)
_PY_OP_NAMES = {_add: ("add", "biufc"), _mul: ("multiply", "biufc"), _min: ("min", "biuf"),
                _max: ("max", "biuf"), _or: ("or", "biu"), _and: ("and", "biu")}
_NO_TWIN = object()


def _python_op(combine: Any, dtype: np.dtype) -> Any:
    """The Python twin's ``op`` for ``combine`` on ``dtype`` values (None: overwrite), or
    ``_NO_TWIN`` for a user function or a dtype the named operation does not take."""
    if combine is None:
        return None
    name_kinds = _PY_OP_NAMES.get(_NAMED_OPS.get(combine, combine))
    if name_kinds is None or dtype.kind not in name_kinds[1]:
        return _NO_TWIN
    return HP.PY_OPS[name_kinds[0]]


def _rehash_any(bp: np.ndarray, bc: np.ndarray, n: int, size: int, table: np.ndarray) -> None:
    """Builder entries ``0..n-1`` into the empty ``table``: in Python for a few, else
    compiled."""
    rehash = HP.rehash if hash_on_python(n) else _rehash
    rehash(bp, bc, n, size, table, table_shift(table.size))


@helper_jit(nogil=True)
def _rehash(bp, bc, n, size, table, shift):  # pragma: no cover - compiled
    """Insert builder entries ``0..n-1`` (unique keys) into an empty table."""
    mask = np.uint64(table.size - 1)
    for q in range(n):
        slot = hash_slot(bp[q], bc[q], size, shift)
        while table[slot] != EMPTY:
            slot = (slot + np.uint64(1)) & mask
        table[slot] = q


@helper_jit(nogil=True)
def _lookup(bp, bc, table, shift, size, parents, coords, out):  # pragma: no cover - compiled
    """Entry of each ``(parents[j], coords[j])`` in the builder, or -1."""
    mask = np.uint64(table.size - 1)
    for j in range(parents.size):
        slot = hash_slot(parents[j], coords[j], size, shift)
        out[j] = -1
        while table[slot] != EMPTY:
            q = table[slot]
            if bp[q] == parents[j] and bc[q] == coords[j]:
                out[j] = q
                break
            slot = (slot + np.uint64(1)) & mask


def _inserter(combine: Any) -> Any:
    """The compiled insert loop for ``combine``: None, a name (``"add"``, ``"multiply"``,
    ``"min"``, ``"max"``, ``"or"``, ``"and"``), the matching NumPy ufunc, or any binary
    function Numba can compile (a ``numba.njit`` function or a plain Python one)."""
    if isinstance(combine, str) and combine not in _NAMED_OPS:
        names = sorted(k for k in _NAMED_OPS if isinstance(k, str))
        raise ValueError(f"unknown combine {combine!r}; expected one of {names} or a function")
    op = _NAMED_OPS.get(combine, combine)
    if op in _INSERTERS:
        return _INSERTERS[op]
    if not callable(op):
        raise TypeError(f"combine must be None, a name or a binary function, got {combine!r}")
    jitted = op if isinstance(op, Helper) else helper_jit(disk_cache=False)(op)
    _INSERTERS[op] = _make_inserter(jitted)
    return _INSERTERS[op]


class HashedBuilder:
    """Entries ``(parent position, coordinate) -> value`` of a hashed level, inserted in any
    order; ``freeze`` makes the Tensor.

    ``size``: the level's dimension; ``nparents``: positions of the level above (for the
    ``hash`` format, the product of the leading dimensions in storage order); ``upper``: the
    levels above (default: Dense levels, fixed at ``freeze`` from its shape).
    """

    def __init__(self, size: int, nparents: int, dtype: Any, *, capacity: int = 16,
                 upper: Sequence[Level] | None = None, shape: Sequence[int] | None = None,
                 mode_order: Sequence[int] | None = None, fill_value: Any = None) -> None:
        self.size = int(size)
        self.nparents = int(nparents)
        self.dtype = check_dtype(dtype, "HashedBuilder")
        cap = max(int(capacity), 8)
        self.parents = np.empty(cap, dtype=np.int64)
        self.coords = np.empty(cap, dtype=np.int64)
        self.values = np.empty(cap, dtype=self.dtype)
        self.table = np.full(table_size(cap // 2), EMPTY, dtype=np.int64)
        self.n = 0
        self.upper = None if upper is None else tuple(upper)
        self.shape = None if shape is None else tuple(int(s) for s in shape)
        self.mode_order = None if mode_order is None else tuple(int(m) for m in mode_order)
        self.fill_value = fill_value

    def __len__(self) -> int:
        """How many distinct entries are stored."""
        return self.n

    def _grow(self, need_arrays: bool) -> None:
        """Double the entry arrays (``need_arrays``) or the table (rehashing it)."""
        if need_arrays:
            cap = 2 * self.parents.size
            for name in ("parents", "coords", "values"):
                old = getattr(self, name)
                new = np.empty(cap, dtype=old.dtype)
                new[: self.n] = old[: self.n]
                setattr(self, name, new)
            return
        table = np.full(2 * self.table.size, EMPTY, dtype=np.int64)
        _rehash_any(self.parents, self.coords, self.n, self.size, table)
        self.table = table

    def insert(self, parents: Any, coords: Any, values: Any,
               combine: Callable[..., Any] | str | None = None) -> None:
        """Write ``values[i]`` at ``(parents[i], coords[i])`` for every ``i``, in order; an
        entry already stored is overwritten, or combined as ``combine(old, new)``.

        ``values`` may be a scalar (broadcast). Parents must be in ``[0, nparents)`` and
        coordinates in ``[0, size)`` (IndexError otherwise).
        """
        p = np.ascontiguousarray(parents, dtype=np.int64).reshape(-1)
        c = np.ascontiguousarray(coords, dtype=np.int64).reshape(-1)
        v = np.asarray(values)
        if v.dtype.kind not in "biufc":
            raise TypeError(f"cannot insert values of dtype {v.dtype} into {self.dtype}")
        v = np.ascontiguousarray(np.broadcast_to(v.astype(self.dtype, copy=False), p.shape))
        if c.size != p.size:
            raise ValueError(f"parents has {p.size} entries but coords has {c.size}")
        if p.size and (p.min() < 0 or p.max() >= self.nparents):
            bad = int(p[(p < 0) | (p >= self.nparents)][0])
            raise IndexError(f"parent position {bad} is out of range for {self.nparents} parents")
        if c.size and (c.min() < 0 or c.max() >= self.size):
            bad = int(c[(c < 0) | (c >= self.size)][0])
            raise IndexError(f"coordinate {bad} is out of range for a dimension of size "
                             f"{self.size}")
        kernel = _inserter(combine)
        op = _python_op(combine, self.dtype)
        start = 0
        while start < p.size:
            args = (self.parents, self.coords, self.values, self.table,
                    table_shift(self.table.size), self.n, self.size, p, c, v, start)
            if op is not _NO_TWIN and hash_on_python(p.size - start):
                start, self.n = HP.insert(*args, op)
            else:
                start, self.n = kernel(*args)
            start, self.n = int(start), int(self.n)
            if start < p.size:
                self._grow(self.n >= self.parents.size)

    def lookup(self, parents: Any, coords: Any) -> np.ndarray:
        """The builder entry holding each ``(parents[j], coords[j])`` (an index into
        ``values``), -1 where none does: a probe per key, no freeze."""
        p = np.ascontiguousarray(parents, dtype=np.int64).reshape(-1)
        c = np.ascontiguousarray(coords, dtype=np.int64).reshape(-1)
        shift = table_shift(self.table.size)
        if hash_on_python(p.size):
            return HP.lookup(self.parents, self.coords, self.n, self.table, shift, self.size,
                             p, c)
        out = np.empty(p.size, np.int64)
        _lookup(self.parents, self.coords, self.table, shift, self.size, p, c, out)
        return out

    def freeze(self, shape: Sequence[int] | None = None, mode_order: Sequence[int] | None = None,
               fill: Any = None) -> Tensor:
        """The Tensor of the inserted entries: levels above as given (default Dense), last
        level Hashed (positions grouped by parent, coordinates in insertion order within a
        parent), values of the builder's dtype. The builder may go on inserting after."""
        shape = self.shape if shape is None else tuple(int(s) for s in shape)
        if shape is None:
            raise ValueError("freeze needs the tensor's shape")
        ndim = len(shape)
        order = self.mode_order if mode_order is None else tuple(int(m) for m in mode_order)
        order = tuple(range(ndim)) if order is None else order
        fill = self.fill_value if fill is None else fill
        fill_value = normalize_fill(0 if fill is None else fill, self.dtype)
        dims = tuple(shape[m] for m in order)
        if ndim == 0 or dims[-1] != self.size:
            raise ValueError(f"shape {shape} (mode order {order}) does not end in this "
                             f"builder's dimension of size {self.size}")
        upper = self.upper
        if upper is None:
            if math.prod(dims[:-1]) != self.nparents:
                raise ValueError(f"shape {shape} has {math.prod(dims[:-1])} parent positions, "
                                 f"the builder {self.nparents}")
            upper = tuple(Dense(d) for d in dims[:-1])
        n = self.n
        idt = choose_index_dtype(shape, max(n, self.nparents))
        check_bins(self.nparents + 1, n, np.int64, f"a hashed level's pointer array under "
                   f"dense levels of {self.nparents} parents")
        order_q = stable_order(self.parents[:n], self.nparents) if n else np.empty(0, np.int64)
        ptr = np.zeros(self.nparents + 1, dtype=idt)
        if n:
            np.cumsum(np.bincount(self.parents[:n], minlength=self.nparents), out=ptr[1:])
        idx = self.coords[:n][order_q].astype(idt)
        values = self.values[:n][order_q]
        newpos = np.empty(n, dtype=np.int64)
        newpos[order_q] = np.arange(n, dtype=np.int64)
        table = self.table
        if n == 0 or table.size > table_size(n) * 4:  # shrink a table oversized by repeats
            table = build_table(ptr, idx, self.size)
        else:
            full = table >= 0
            table = np.where(full, newpos[np.where(full, table, 0)], EMPTY)
        levels = (*upper, Hashed(self.size, ptr, idx, table.astype(np.int64, copy=False)))
        spec = infer_spec(tuple(lv.kind for lv in levels), order)
        return Tensor(shape, levels, order, values, fill_value, format=spec, check=False)


def builder_from_tensor(t: Tensor, *, capacity: int | None = None) -> HashedBuilder:
    """A builder holding ``t``'s entries, for a tensor whose last level is Hashed or a unique
    Compressed (ordered or not); ``freeze()`` keeps ``t``'s upper levels, shape, mode order
    and fill value. ``t``'s arrays are copied, never written."""
    if not t.levels or not isinstance(t.levels[-1], (Hashed, Compressed)) or (
            isinstance(t.levels[-1], Compressed) and not t.levels[-1].unique):
        raise ValueError(f"a hashed builder starts from a tensor whose last level is hashed or "
                         f"unique compressed; format {t.format!r} has levels {t.spec.level_kinds}")
    last = t.levels[-1]
    ptr = last.ptr
    nparents, n = int(ptr.size) - 1, int(last.idx.size)
    cap = max(16, 2 * n if capacity is None else int(capacity), n)
    b = HashedBuilder(last.size, nparents, t.dtype, capacity=cap, upper=t.levels[:-1],
                      shape=t.shape, mode_order=t.mode_order, fill_value=t.fill_value)
    b.parents[:n] = np.repeat(np.arange(nparents, dtype=np.int64), np.diff(ptr))
    b.coords[:n] = last.idx
    b.values[:n] = t.values
    b.n = n
    if isinstance(last, Hashed):
        b.table = last.table.copy()  # t's positions are the builder's entries, same keys
    else:
        b.table = np.full(table_size(cap // 2), EMPTY, dtype=np.int64)
        _rehash_any(b.parents, b.coords, n, b.size, b.table)
    return b
