"""``x[key] = value``: in-place writes into owned storage, copy-on-write, batched inserts.

An array whose value is computed (its expression is a leaf ``Table`` of its tensor) is
updated in its storage. It may write in place only when it *owns* the storage:
- setitem made that tensor itself (a private copy, or the merge of pending entries); the
  first assignment into a computed array therefore copies its data once (a kernel's or
  the user's data is never written), later ones write in place;
- nothing acquired a reference since: the leaf's ``Subquery``/``Table``/``Immediate``
  nodes, the tensor and its values array have no more references than when setitem
  installed them (``sys.getrefcount``). Another array sharing the leaf (``x.copy()``), an
  expression built from ``x``, ``x.tensor()`` kept by the user, a NumPy view of the values
  (``np.asarray(x)``, a view leaf such as ``x[None]``) each hold one, so the next write
  copies first (copy-on-write) and everything built earlier keeps the old value.
Installing a tensor also gives the array a fresh alias, so expressions built before it was
computed keep reading the value it had then (the old alias's result, ``api.memo``).

Dense storage is written through a NumPy view with NumPy's indexing. Sparse storage
overwrites stored entries in place (a stored entry set to the fill value stays stored,
still correct); new coordinates wait in ``Pending`` and are merged once, sorted and
vectorized, when the array is next read (``LazyArray._sync``, called by ``expr``,
``result`` and ``stored``).

A lazy target keeps the functional form: its plan becomes ``where(mask, values, plan)``
with small sparse mask/value tensors. A second assignment into an array that still
carries such a layer computes it first and continues in place, so repeated assignments
never grow a plan.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lazysparse import formats
from lazysparse.api.array.devices import is_device_tensor
from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.building.elementwise import apply_operator, astype
from lazysparse.api.chapters import compute as execution
from lazysparse.api.chapters.creation import asarray
from lazysparse.api.chapters.manipulation import broadcast_to
from lazysparse.api.stored.insert_buffer import InsertBuffer, fits
from lazysparse.api.stored.selection import equals_fill, last_wins, locate, selection
from lazysparse.formats import tensor_ops as T
from lazysparse.formats.compiled.sync import Counters
from lazysparse.logic import dtypes as _dt
from lazysparse.logic.nodes import Alias, Table
from lazysparse.logic.operators import get_operator

# how often each path ran (tests check that in-place writes do not copy)
STATS = Counters("copies", "merges", "layers", "computes", "regions")

# threads reading arrays with pending entries merge or probe them one at a time
_MERGING = threading.RLock()
# pending chunks past this count are compacted into one (bounded bookkeeping)
_COMPACT_CHUNKS = 256


class Pending:
    """New coordinates of a sparse array, not stored yet, with their values (in assignment
    order: later ones win)."""

    def __init__(self) -> None:
        self.coords: list[np.ndarray] = []
        self.values: list[np.ndarray] = []

    def __bool__(self) -> bool:
        return bool(self.coords)

    def add(self, coords: np.ndarray, values: np.ndarray) -> None:
        """Queue ``values`` at ``coords`` (``(ndim, n)``)."""
        self.coords.append(coords)
        self.values.append(values)
        if len(self.coords) > _COMPACT_CHUNKS:
            coords, values = self.take()
            self.coords, self.values = [coords], [values]

    def take(self) -> tuple[np.ndarray, np.ndarray]:
        """Every queued entry, one per coordinate (the last assignment kept), and empty the
        queue."""
        out = self.entries()
        self.clear()
        return out

    def entries(self) -> tuple[np.ndarray, np.ndarray]:
        """Every queued entry, one per coordinate (the last assignment kept)."""
        return last_wins(np.concatenate(self.coords, axis=1), np.concatenate(self.values))

    def clear(self) -> None:
        """Empty the queue."""
        self.coords, self.values = [], []


@dataclass(eq=False)
class Owned:
    """``x`` owns ``tensor``: setitem installed it as ``x``'s leaf (see the module
    docstring); ``pending`` holds the new sparse entries not merged yet: a hashed insert
    buffer where the layout takes one (``api.insert_buffer``), else a queue."""

    tensor: formats.Tensor
    pending: Pending | InsertBuffer = field(init=False)

    def __post_init__(self) -> None:
        self.pending = InsertBuffer(self.tensor) if fits(self.tensor) else Pending()

    @property
    def dirty(self) -> bool:
        """Whether new sparse entries wait to be merged into the storage."""
        return bool(self.pending)

    def flush(self, x: LazyArray) -> None:
        """Merge the pending entries into ``x``'s storage, once when several threads read
        ``x`` first: the entries stay pending (a reader waits here) until the merged
        storage is ``x``'s (docs/architecture.md, "Threads")."""
        with _MERGING:
            if x._update is self and self.dirty:
                merged = self._merged()
                if merged is not None:
                    STATS.bump("merges")
                    _adopt(x, merged)
                self.pending.clear()

    def _merged(self) -> formats.Tensor | None:
        """The storage with the pending entries: an insert buffer appends them to their
        rows (an unordered level, nothing sorted); a queue sorts once. Entries that equal
        the fill value need no storage (None: nothing to store)."""
        t = self.tensor
        if isinstance(self.pending, InsertBuffer):
            return self.pending.merged(t)
        coords, values = self.pending.entries()
        keep = ~equals_fill(values, t.fill_value)
        if not keep.any():
            return None
        old_coords, old_values = T.coo_parts(t)
        return formats.Tensor.from_coords(
            list(np.concatenate([old_coords, coords[:, keep]], axis=1)),
            np.concatenate([old_values, values[keep]]), t.shape, format=t.spec,
            fill_value=t.fill_value)


@dataclass(eq=False)
class Layer:
    """``x``'s plan is a ``where`` layer setitem built (the subquery named ``alias``)."""

    alias: Alias
    dirty = False

    def flush(self, x: LazyArray) -> None:  # pragma: no cover - never dirty
        """Nothing waits in a functional layer."""


def peek(x: LazyArray, items: list[int]) -> Any | None:
    """``x[i, j, ...]`` while new entries wait in a hashed insert buffer, without merging
    them: the buffer's probe, else the stored entry (None when ``x`` has no such buffer)."""
    if not _buffered(x):
        return None
    coords = np.array(items, dtype=np.int64).reshape(-1, 1)
    with _MERGING:  # a probe inserts the staged entries first, and no merge runs meanwhile
        if not _buffered(x):  # merged by another thread since
            return None
        state = x._update
        hit, vals = state.pending.lookup(coords)
        if hit[0]:
            return vals[0]
        t = state.tensor
        pos = int(locate(t, coords)[0])
        return t.values[pos] if pos >= 0 else t.fill_value


def _buffered(x: LazyArray) -> bool:
    """Whether new entries of ``x`` wait in a hashed insert buffer."""
    state = x._update
    return isinstance(state, Owned) and isinstance(state.pending, InsertBuffer) and \
        bool(state.pending)


def _leaf_objects(x: LazyArray) -> tuple[Any, ...] | None:
    """The objects of ``x``'s leaf whose references decide sharing, or None when ``x``'s
    expression is not a ``Table`` of its result."""
    leaf = x._expr
    table = leaf.arg
    if not isinstance(table, Table) or table.tns.val is not x._result:
        return None
    return leaf, table, table.tns, x._result, x._result.values


def _refcounts(x: LazyArray) -> tuple[int, ...]:
    objs = _leaf_objects(x)
    if objs is None:
        return ()
    return tuple(sys.getrefcount(o) for o in objs)


_UNSHARED: list[tuple[int, ...]] = []


def _unshared() -> tuple[int, ...]:
    """The reference counts ``_refcounts`` sees on an owned leaf nothing else holds:
    measured once on a probe array installed the same way (so the counts never depend on
    which frames happen to hold the tensor when a real one is installed)."""
    if not _UNSHARED:
        probe = LazyArray.from_tensor(T.dense(np.zeros(1)))
        _adopt(probe, _own_copy(T.dense(np.zeros(1))))
        _UNSHARED.append(_refcounts(probe))
    return _UNSHARED[0]


def _adopt(x: LazyArray, tensor: formats.Tensor) -> Owned:
    """Install ``tensor`` (made by setitem, owning its values) as ``x``'s leaf, owned by
    ``x``, under a fresh alias."""
    x.replace_with(LazyArray.from_tensor(tensor, x.device))
    state = Owned(tensor)
    x._update = state
    return state


def owned_state(x: LazyArray) -> Owned:
    """``x``'s ownership state, copying its storage first unless ``x`` owns it and nothing
    else references it (copy-on-write)."""
    state = x._update
    if isinstance(state, Owned) and state.tensor is x._result:
        now = _refcounts(x)
        if now and all(a <= b for a, b in zip(now, _unshared(), strict=True)):
            return state
    x._sync()
    STATS.bump("copies")
    return _adopt(x, _own_copy(x.stored()))


def _own_copy(t: formats.Tensor) -> formats.Tensor:
    """A copy of ``t`` whose values array owns its memory (so every view of it counts as a
    reference to it)."""
    out = T.copy_tensor(t)
    if out.values.base is not None:
        out.values = np.array(out.values, copy=True)
    return out


# --- the paths --------------------------------------------------------------------------

def value_operand(x: LazyArray, value: Any) -> Any:
    """``value`` as a scalar of ``x``'s dtype or a lazy array of it, cast as NumPy's
    assignment casts (``logic.dtypes``: a Python scalar by ``assigned_scalar``, arrays and
    NumPy scalars alike by ``check_assignable``; TypeError naming the value's type when it
    cannot be assigned)."""
    if _dt.is_python_scalar(value):
        return _dt.assigned_scalar(value, x.dtype)
    if isinstance(value, np.generic):
        _dt.check_assignable(value.dtype, x.dtype)
        return np.asarray(value).astype(x.dtype)[()]
    if isinstance(value, np.ndarray):
        value = asarray(value)
    if isinstance(value, LazyArray):
        if value.dtype == x.dtype:
            return value
        _dt.check_assignable(value.dtype, x.dtype)
        return astype(value, x.dtype)
    raise TypeError(f"cannot assign a {type(value).__name__} to a lazysparse array")


def _values_for(val: Any, sel_shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """The assigned values broadcast to the selection, flattened in selection order."""
    vals = np.asarray(val, dtype=dtype)
    try:
        vals = np.broadcast_to(vals, sel_shape)
    except ValueError:
        raise ValueError(f"__setitem__: value of shape {vals.shape} cannot be broadcast to "
                         f"the selection's shape {sel_shape}") from None
    return vals.reshape(-1)


def write(x: LazyArray, items: list[Any], val: Any) -> None:
    """Assign into computed ``x`` in its (owned) storage."""
    if isinstance(val, LazyArray):
        val = np.asarray(val)
    t = owned_state(x).tensor
    if T.is_dense(t):
        _write_dense(t, items, val)
    else:
        _write_sparse(x, t, items, val)


def _write_dense(t: formats.Tensor, items: list[Any], val: Any) -> None:
    """NumPy assignment through a view of ``t``'s values in axis order."""
    _assign_region(_axis_view(t), tuple(items), val)


def _axis_view(t: formats.Tensor) -> np.ndarray:
    """Dense ``t``'s values as a NumPy view in axis order."""
    inverse = tuple(int(i) for i in np.argsort(t.mode_order))
    return t.values.reshape([t.shape[m] for m in t.mode_order]).transpose(inverse)


def _assign_region(region: np.ndarray, key: Any, val: Any) -> None:
    """``region[key] = val`` by NumPy (ValueError naming the value's shape)."""
    try:
        region[key] = val
    except (ValueError, TypeError) as e:  # NumPy says TypeError for some shapes
        raise ValueError(f"__setitem__: value of shape {np.shape(val)} cannot be assigned "
                         f"to the selection ({e})") from None


def write_region(chain: list[tuple[LazyArray, Any, LazyArray]], key: Any, val: Any
                 ) -> bool:
    """``view[key] = val`` (``key`` None: the view's own value, written whole) as NumPy's
    region assignment into the dense storage of the chain's top array, through the NumPy
    views its links make (``chain``: ``LazyArray._chain``, from the view up): a lazy top
    array is computed first (as NumPy's is), then the value; the storage is copied first
    when shared (copy-on-write, as ``write``). False, nothing written, when the top array
    is not dense on the host or a link has no NumPy view (the per-array path then runs)."""
    view, top = chain[0][0], chain[-1][2]
    if view.dtype != top.dtype:
        return False
    if top._result is None:  # NumPy's array is computed: so is this one, once
        materialize(top)
    t = top._result
    if not in_place_capable(top) or not T.is_dense(t) or \
            _region(_axis_view(t), chain) is None:
        return False
    value = np.asarray(view if key is None else value_operand(view, val))
    STATS.bump("regions")
    region = _region(_axis_view(owned_state(top).tensor), chain)
    assert region is not None
    _assign_region(region, ... if key is None else key, value)
    return True


def _region(values: np.ndarray, chain: list[tuple[LazyArray, Any, LazyArray]]
            ) -> np.ndarray | None:
    """The NumPy view of the top array's ``values`` that ``chain``'s first view is (links
    applied top-down), None when a link has none."""
    region: np.ndarray | None = values
    for view, state, _parent in reversed(chain):
        region = state.link.region(region, view)
        if region is None:
            return None
    return region


def _write_sparse(x: LazyArray, t: formats.Tensor, items: list[Any], val: Any) -> None:
    """Overwrite stored entries in place; queue new coordinates for one merge."""
    coords, sel_shape = selection(items, x.shape)
    vals = _values_for(val, sel_shape, x.dtype)
    if t.levels[-1].run_valued:  # one value per run: an assignment splits runs
        _adopt(x, _rewritten_runs(t, coords, vals))
        return
    pos = locate(t, coords)
    hit = pos >= 0
    t.values[pos[hit]] = vals[hit]
    if not hit.all():
        state = x._update
        assert isinstance(state, Owned)
        state.pending.add(coords[:, ~hit], vals[~hit])


def _rewritten_runs(t: formats.Tensor, coords: np.ndarray, vals: np.ndarray
                    ) -> formats.Tensor:
    """Run-length ``t`` with ``vals`` assigned at ``coords``: its entries and the new ones
    (the last assignment of a coordinate wins) laid out as runs again, O(stored + new)."""
    from lazysparse.formats.assemble import expand
    from lazysparse.formats.conversion.convert import from_coords

    stored, svals = expand(t)
    inverse = np.argsort(t.mode_order)
    old = np.stack([stored[k] for k in inverse]).astype(np.int64).reshape(t.ndim, -1)
    coords, vals = last_wins(np.concatenate([old, coords.astype(np.int64)], axis=1),
                             np.concatenate([svals, vals.astype(svals.dtype)]))
    return from_coords(coords, vals, t.shape, format=t.spec, fill_value=t.fill_value)


def assign_all(x: LazyArray, val: Any) -> None:
    """``x[...] = val`` for a sparse ``x``: a scalar becomes the fill value of an empty
    tensor of ``x``'s format (nothing stored, nothing densified); an array becomes ``x``'s
    plan (its storage kept)."""
    if isinstance(val, LazyArray):
        try:
            new = broadcast_to(val, x.shape)
        except ValueError:
            raise ValueError(f"__setitem__: value of shape {val.shape} cannot be broadcast "
                             f"to {x.shape}") from None
        x.replace_with(new)  # shares val's leaf: either's next write copies first
        return
    _adopt(x, T.empty_sparse(x.shape, x.dtype, val, x.format))


def functional(x: LazyArray, coords: np.ndarray, sel_shape: tuple[int, ...],
               val: Any) -> None:
    """Lazy ``x``: its plan becomes ``where(mask, values, plan)`` over the selection."""
    vals = _values_for(val, sel_shape, x.dtype)
    if not vals.size:
        return
    coords, vals = last_wins(coords, vals)
    if x.ndim == 0:
        x.replace_with(LazyArray.from_tensor(T.dense(vals[:1].reshape(())), x.device))
        return
    fill = x.fill_value if x.fill_value is not None else x.dtype.type(0)
    mask_t = T.from_coords(x.shape, coords, np.ones(coords.shape[1], bool), np.False_)
    vals_t = T.from_coords(x.shape, coords, vals, fill)
    new = apply_operator(get_operator("where"), LazyArray.from_tensor(mask_t, x.device),
                         LazyArray.from_tensor(vals_t, x.device), x, fname="__setitem__")
    mark_layer(x, new)


def mark_layer(x: LazyArray, new: LazyArray) -> None:
    """Make ``new`` (a ``where`` over ``x``) ``x``'s plan, remembered as a setitem layer."""
    x.replace_with(new)
    x._update = Layer(x._expr.lhs)
    STATS.bump("layers")


def has_layer(x: LazyArray) -> bool:
    """Whether lazy ``x``'s plan is a setitem layer (the next assignment computes it)."""
    state = x._update
    return isinstance(state, Layer) and state.alias is x._expr.lhs


def materialize(x: LazyArray) -> None:
    """Compute lazy ``x`` so that assignments continue in its storage."""
    STATS.bump("computes")
    execution.compute(x)


def in_place_capable(x: LazyArray) -> bool:
    """Whether ``x`` is computed on the host (its storage can be written)."""
    return x._result is not None and not is_device_tensor(x._result)
