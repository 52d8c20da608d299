"""Indexing: ``__getitem__``, ``__setitem__``, ``take``, ``take_along_axis``.

Lazy: keys made of full slices, ``...`` and ``None`` (a relabel/reorder, no data moved).
Eager (compute ``x`` first): integers, partial or strided slices, integer and boolean
arrays; a dense tensor is indexed by NumPy, a sparse one by filtering and renumbering its
stored coordinates (it stays sparse). ``__setitem__`` writes into a computed array's
storage (copy-on-write) and is a ``where`` layer on a lazy one (``api/chapters/setitem.py``).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.array.operands import as_array
from lazysparse.api.building.elementwise import apply_operator
from lazysparse.api.building.views import index_lazy, index_tensor, indexed_strides, unit_view
from lazysparse.api.chapters import setitem as S
from lazysparse.api.chapters.manipulation import expand_dims, normalize_axis, reshape
from lazysparse.api.stored.eager import eager_apply, leaf
from lazysparse.api.stored.selection import locate, selection
from lazysparse.formats import tensor_ops as T
from lazysparse.logic import dtypes as _dt
from lazysparse.logic.operators import get_operator

Key = tuple[Any, ...]


def _is_int(k: Any) -> bool:
    return isinstance(k, int | np.integer) and not isinstance(k, bool | np.bool_)


def _component(k: Any) -> Any:
    """Normalize one key component: ints, slices, None, Ellipsis stay; arrays become NumPy
    (computing lazy ones); 0-d integer arrays become ints."""
    if k is None or k is Ellipsis or isinstance(k, slice) or _is_int(k):
        return k
    if isinstance(k, bool | np.bool_):
        return np.asarray(k)
    if isinstance(k, LazyArray):
        if k.dtype.kind in "iu" and k.ndim == 0:
            return int(k)
        if k.dtype.kind not in "iub":
            raise IndexError(f"arrays used as indices must be of integer or boolean type, "
                             f"not {k.dtype}")
        return np.asarray(k)
    if isinstance(k, np.ndarray):
        if k.dtype.kind not in "iub":
            raise IndexError(f"arrays used as indices must be of integer or boolean type, "
                             f"not {k.dtype}")
        return k
    if isinstance(k, list):
        arr = np.asarray(k)
        if arr.size == 0:
            arr = arr.astype(np.int64)
        if arr.dtype.kind not in "iub":
            raise IndexError(f"index lists must hold integers or booleans, got {k!r}")
        return arr
    raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and integer or "
                     f"boolean arrays are valid indices, got {type(k).__name__}")


def normalize_key(key: Any, shape: tuple[int, ...]) -> list[Any]:
    """The key as a list with the ellipsis expanded and ints range-checked."""
    items = list(key) if isinstance(key, tuple) else [key]
    items = [_component(k) for k in items]
    n_ell = sum(1 for k in items if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(k.ndim if isinstance(k, np.ndarray) and k.dtype == np.bool_ else
               (0 if k is None or k is Ellipsis else 1) for k in items)
    if used > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {used} were indexed")
    if n_ell:
        i = next(j for j, k in enumerate(items) if k is Ellipsis)
        items[i:i + 1] = [slice(None)] * (len(shape) - used)
    else:
        items += [slice(None)] * (len(shape) - used)
    axis = 0
    for j, k in enumerate(items):
        if k is None:
            continue
        if isinstance(k, np.ndarray) and k.dtype == np.bool_:
            want = shape[axis:axis + k.ndim]
            if k.shape != want:
                raise IndexError(f"boolean index of shape {k.shape} does not match the "
                                 f"indexed axes of shape {want}")
            axis += k.ndim
            continue
        n = shape[axis]
        if _is_int(k):
            i = int(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            items[j] = i % n
        axis += 1
    return items


def _is_full(k: Any, n: int) -> bool:
    return isinstance(k, slice) and k.indices(n) == (0, n, 1)


def getitem(x: LazyArray, key: Any) -> LazyArray:
    """``x[key]`` following the Array API (and NumPy) indexing rules. A basic index
    (integers, slices, ``...``, ``None``) with an n-d result is what NumPy makes a view:
    marked so (``LazyArray.view_of``): a write into it is written into ``x`` too, and it
    follows later writes into ``x``."""
    x._refresh()  # noqa: SLF001 - a stale view's storage must not be read below
    if isinstance(key, LazyArray) and key.dtype == _dt.BOOL and key.ndim == x.ndim > 0:
        out = _sparse_mask(x, key)
        if out is not None:
            return out
    items = normalize_key(key, x.shape)
    out = _select(x, items)
    if out.ndim and not any(isinstance(k, np.ndarray) for k in items):
        out.view_of(x, IndexLink(tuple(items)), indexed_strides(x, items))
    return out


@dataclass(frozen=True)
class IndexLink:
    """``x[items]`` (basic indexing) as a view of ``x``: taken again as ``x[items]``; a
    write into it repeated as ``x[items] = view``, the size-1 axes ``None`` added dropped
    from the view first."""

    items: tuple[Any, ...]

    def read(self, parent: LazyArray, view: LazyArray) -> LazyArray:
        return _select(parent, list(self.items))

    def write(self, parent: LazyArray, view: LazyArray) -> tuple[Any, Any]:
        kept = tuple(k for k in self.items if k is not None)
        axes = [k for k in self.items if k is None or isinstance(k, slice)]
        axes += [slice(None)] * (view.ndim - len(axes))  # trailing, unindexed axes
        shape = tuple(d for d, k in zip(view.shape, axes, strict=True) if k is not None)
        return kept, view if shape == view.shape else reshape(view, shape, copy=True)

    def region(self, values: np.ndarray, view: LazyArray) -> np.ndarray:
        return values[self.items]


def _select(x: LazyArray, items: list[Any]) -> LazyArray:
    """``x`` indexed by normalized ``items``."""
    # lazy: full slices and new axes only
    axis = 0
    lazy = True
    for k in items:
        if k is None:
            continue
        if isinstance(k, np.ndarray) or not _is_full(k, x.shape[axis]):
            lazy = False
            break
        axis += 1
    if lazy:
        return _lazy_view(x, items)
    out = _zero_d_mask(x, items)
    if out is not None:
        return out
    orth = _orthogonal(items, x.shape)
    if orth is None:
        return _advanced(x, items)
    if x._result is None:  # noqa: SLF001 - not ``result``: that would merge pending inserts
        out = index_lazy(x, orth)
        if out is not None:
            return out
    if len(orth) == x.ndim and all(type(k) is int for k in orth):
        return _element(x, orth)
    return _select_stored(x, orth)


def _orthogonal(items: list[Any], shape: tuple[int, ...]) -> list[Any] | None:
    """``items`` with its index array (at most one, 1-D: a 1-D boolean mask is its
    ``nonzero()``) wrapped and bounds-checked, when NumPy's result equals selecting each
    axis on its own (orthogonally): the array's axis stays where it is unless integers
    around it are not adjacent to it and a slice or ``None`` precedes it (NumPy then moves
    it to the front). None for other keys (several or n-d arrays, 0-d masks)."""
    arrays = [j for j, k in enumerate(items) if isinstance(k, np.ndarray)]
    if not arrays:
        return items
    if len(arrays) > 1:
        return None
    j = arrays[0]
    k = items[j]
    if k.ndim != 1:
        return None
    advanced = [i for i, c in enumerate(items) if i == j or _is_int(c)]
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    if not adjacent and any(c is None or isinstance(c, slice) for c in items[:j]):
        return None
    axis = sum(1 for c in items[:j] if c is not None)
    k = np.flatnonzero(k) if k.dtype == np.bool_ else _wrapped(k, shape[axis], axis)
    return [*items[:j], k, *items[j + 1:]]


def _wrapped(k: np.ndarray, n: int, axis: int) -> np.ndarray:
    """Integer index array ``k`` as int64 with negative entries wrapped (NumPy's
    IndexError past ``n``)."""
    k = k.astype(np.int64, copy=False)
    if k.size and (int(k.min()) < -n or int(k.max()) >= n):
        bad = int(k[(k < -n) | (k >= n)][0])
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
    return np.where(k < 0, k + n, k) if k.size and int(k.min()) < 0 else k


def _element(x: LazyArray, items: list[int]) -> LazyArray:
    """``x[i, j, ...]``: one element, found by walking the levels (O(log nnz) for sparse
    storage, no scan of the stored entries)."""
    value = S.peek(x, items)  # a new entry set in a loop: no merge to read it back
    if value is not None:
        t = x._update.tensor  # noqa: SLF001 - the owned storage the buffer belongs to
    else:
        t = x.tensor()
        pos = int(locate(t, np.array(items, dtype=np.int64).reshape(-1, 1))[0])
        value = t.values[pos] if pos >= 0 else t.fill_value
    fill = None if T.is_dense(t) else t.fill_value  # as every eager result of sparse data
    return leaf(T.dense(np.array(value, dtype=x.dtype), fill), x)


def _sparse_mask(x: LazyArray, key: LazyArray) -> LazyArray | None:
    """``x[mask]`` for a full-rank boolean mask stored sparse with fill False, from the
    stored entries of both (the mask is never densified): the selected row-major positions
    are the mask's stored True entries; ``x``'s values there come from its stored entries
    (its fill elsewhere). None when the mask's fill is True (its selection is dense-sized)."""
    if key.shape != x.shape:
        raise IndexError(f"boolean index of shape {key.shape} does not match the indexed "
                         f"array of shape {x.shape}")
    mt = key.tensor()
    if T.is_dense(mt) or bool(mt.fill_value):
        return None
    mc, mv = T.coo_parts(mt)
    sel = np.sort(np.ravel_multi_index(tuple(mc[:, mv.astype(bool)]), x.shape))
    t = x.tensor()
    if T.is_dense(t):
        vals = np.asarray(t.to_numpy()).reshape(-1)[sel]
        return leaf(T.dense(vals), x)
    c, v = T.coo_parts(t)
    flat = np.ravel_multi_index(tuple(c), x.shape) if c.shape[1] else np.zeros(0, np.int64)
    pos = np.searchsorted(sel, flat)
    hit = np.zeros(flat.size, bool)
    if sel.size:
        hit = sel[np.minimum(pos, sel.size - 1)] == flat
    return leaf(T.from_coords((int(sel.size),), pos[hit][None, :], v[hit], t.fill_value), x)


def _zero_d_mask(x: LazyArray, items: list[Any]) -> LazyArray | None:
    """``x[True]``/``x[False]`` (NumPy: a new axis of length 1 or 0 where the 0-d mask
    stands), other components full slices or None: a lazy view, or an empty array. None
    for other keys."""
    at = [j for j, k in enumerate(items)
          if isinstance(k, np.ndarray) and k.dtype == np.bool_ and k.ndim == 0]
    if len(at) != 1:
        return None
    shape: list[int] = []
    axis = 0
    for k in items:
        if k is None or isinstance(k, np.ndarray):
            shape.append(1)
            continue
        if not _is_full(k, x.shape[axis]):
            return None
        shape.append(x.shape[axis])
        axis += 1
    j = at[0]
    if bool(items[j]):
        return _lazy_view(x, [None if i == j else k for i, k in enumerate(items)])
    shape[j] = 0
    return leaf(T.dense(np.zeros(shape, x.dtype), x.fill_value), x)


def _lazy_view(x: LazyArray, items: list[Any]) -> LazyArray:
    """``x`` with new axes where ``items`` has None (every other item a full slice)."""
    if all(k is not None for k in items):
        return x
    it = iter(x.shape)
    return unit_view(x, tuple(1 if k is None else next(it) for k in items))


def _select_stored(x: LazyArray, items: list[Any]) -> LazyArray:
    """``x[items]`` of computed data (integers, slices, one index array, new axes; an
    orthogonal key): the selected parts of its storage (``views.index_tensor``), new axes
    then inserted. A copy, not a view: the result owns its data, so assigning into x later
    needs no copy-on-write of x (api/chapters/setitem.py)."""
    it = iter(x.shape)
    sel = [None if k is None else (k, next(it))[0] if isinstance(k, int | np.ndarray)
           else range(*k.indices(next(it))) for k in items]
    kept = [k for k in sel if k is not None]
    t = index_tensor(x.tensor(), kept)
    shape = tuple(1 if k is None else len(k) for k in sel if not isinstance(k, int))
    return leaf(T.with_shape(t, shape) if shape != t.shape else t, x)


def _advanced(x: LazyArray, items: list[Any]) -> LazyArray:
    """Integer/boolean array indexing (data-dependent for masks): NumPy semantics."""
    np_key = tuple(items)
    arrays = [k for k in items if isinstance(k, np.ndarray)]
    t = x.tensor()
    if len(arrays) == 1 and arrays[0].dtype == np.bool_ and arrays[0].ndim == x.ndim and \
            not T.is_dense(t) and len(items) == 1:
        mask = arrays[0]

        def sparse_fn(c: np.ndarray, v: np.ndarray, shape: tuple[int, ...]) -> Any:
            flat = np.ravel_multi_index(tuple(c), shape) if c.shape[1] else \
                np.zeros(0, np.int64)
            sel = np.flatnonzero(mask)
            pos = np.searchsorted(sel, flat)
            pos_c = np.minimum(pos, max(sel.size - 1, 0))
            hit = (sel.size > 0) & (sel[pos_c] == flat) if sel.size else np.zeros(
                flat.size, bool)
            return (int(sel.size),), pos[hit][None, :], v[hit]

        return eager_apply(x, lambda a: a[np_key], sparse_fn)
    for k in arrays:
        if k.dtype.kind in "iu":
            _check_int_bounds(k, items, x.shape)
    return eager_apply(x, lambda a: a[np_key])


def _check_int_bounds(k: np.ndarray, items: list[Any], shape: tuple[int, ...]) -> None:
    axis = 0
    for it in items:
        if it is k:
            n = shape[axis]
            if k.size and (k.min() < -n or k.max() >= n):
                raise IndexError(f"index out of bounds for axis {axis} with size {n}")
            return
        if it is None:
            continue
        axis += it.ndim if isinstance(it, np.ndarray) and it.dtype == np.bool_ else 1


def take(x: LazyArray, indices: Any, /, *, axis: int | None = None) -> LazyArray:
    """Elements of ``x`` at integer ``indices`` along ``axis``: ``x[..., indices, ...]``
    (NumPy's ``take``). A computed sparse ``x`` reads only what it selects and stays
    sparse (rows of CSR by pointer ranges, columns by one pass over the stored entries,
    ``formats.select``); an uncomputed ``x`` takes the selection into its expression."""
    x = as_array(x, "take")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis is required for a {x.ndim}-d array")
        axis = 0
    ax = normalize_axis(axis, x.ndim, "take")
    idx = np.asarray(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"take: indices must have an integer dtype, got {idx.dtype}")
    if idx.ndim != 1:
        raise ValueError(f"take: indices must be 1-D, got shape {idx.shape}")
    n = x.shape[ax]
    if idx.size and (int(idx.min()) < -n or int(idx.max()) >= n):
        raise IndexError(f"take: index out of bounds for axis {ax} with size {n}")
    key = [slice(None)] * x.ndim
    key[ax] = _wrapped(idx, n, ax)
    if x._result is None:  # noqa: SLF001 - not ``result``: that would merge pending inserts
        out = index_lazy(x, key)
        if out is not None:
            return out
    return _select_stored(x, key)


def take_along_axis(x: LazyArray, indices: Any, /, *, axis: int = -1) -> LazyArray:
    """``x`` gathered at ``indices`` along ``axis`` (same ndim; computes both)."""
    x = as_array(x, "take_along_axis")
    ax = normalize_axis(axis, x.ndim, "take_along_axis")
    idx = np.asarray(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"take_along_axis: indices must be integers, got {idx.dtype}")
    if idx.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices must have {x.ndim} dimensions, got "
                         f"{idx.ndim}")
    n = x.shape[ax]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"take_along_axis: index out of bounds for axis {ax} with size {n}")
    try:
        np.broadcast_shapes(tuple(d for k, d in enumerate(x.shape) if k != ax),
                            tuple(d for k, d in enumerate(idx.shape) if k != ax))
    except ValueError:
        raise ValueError(f"take_along_axis: indices of shape {idx.shape} do not broadcast "
                         f"with x of shape {x.shape}") from None
    return eager_apply(x, lambda a: np.take_along_axis(a, idx, axis=ax))


# --- __setitem__ ------------------------------------------------------------------------

def setitem(x: LazyArray, key: Any, value: Any) -> None:
    """``x[key] = value`` with NumPy's semantics: written into ``x``'s storage when ``x`` is
    computed (copy-on-write), a ``where`` layer when it is lazy (``api/chapters/setitem.py``).
    A write into a view is written into the array it views too
    (``LazyArray.write_through``)."""
    x._refresh()  # noqa: SLF001 - a stale view takes its array's value before the write
    if x._view is not None:  # noqa: SLF001 - a view over dense storage: one region write
        items = _basic_items(x, key)
        if items is not None and x.write_region(items, value):
            return
    assign(x, key, value)
    x.write_through()


def _basic_items(x: LazyArray, key: Any) -> tuple[Any, ...] | None:
    """``key`` normalized when it is a basic index (integers, slices, ``...``, ``None``),
    else None."""
    if isinstance(key, LazyArray):
        return None
    items = normalize_key(key, x.shape)
    return None if any(isinstance(k, np.ndarray) for k in items) else tuple(items)


def assign(x: LazyArray, key: Any, value: Any) -> None:
    """``x[key] = value`` into ``x`` alone (a view's write goes on up its chain in
    ``LazyArray.write_through``)."""
    val = S.value_operand(x, value)
    scalar = not isinstance(val, LazyArray) or val.ndim == 0
    if isinstance(key, LazyArray) and key.dtype == _dt.BOOL and key.ndim > 0:
        if scalar and not S.has_layer(x) and (x._result is None or _fill_true(key)):
            _mask_layer(x, key, val)
            return
        key = _mask_key(x, key)
    items = normalize_key(key, x.shape)
    if x._result is None and S.has_layer(x):
        S.materialize(x)  # a second assignment: continue in the computed storage
    if not S.in_place_capable(x):
        coords, sel_shape = selection(items, x.shape)
        S.functional(x, coords, sel_shape, val)
        return
    if x.ndim and all(_is_full(k, n) for k, n in zip(items, x.shape, strict=False)) and \
            len(items) == x.ndim and not T.is_dense(x._result):
        S.assign_all(x, val)
        return
    S.write(x, items, val)


def _mask_layer(x: LazyArray, mask: LazyArray, val: Any) -> None:
    """Lazy ``x[mask] = scalar``: ``where(mask, value, x)``, the mask broadcast over
    trailing axes."""
    _check_mask_shape(x, mask)
    m = mask
    if m.ndim < x.ndim:
        m = expand_dims(m, axis=tuple(range(m.ndim, x.ndim)))
    S.mark_layer(x, apply_operator(get_operator("where"), m, val, x, fname="__setitem__"))


def _check_mask_shape(x: LazyArray, mask: LazyArray) -> None:
    if mask.shape != x.shape[:mask.ndim]:
        raise IndexError(f"boolean index of shape {mask.shape} does not match the indexed "
                         f"axes of shape {x.shape[:mask.ndim]}")


def _fill_true(mask: LazyArray) -> bool:
    """Whether ``mask`` is stored sparse with fill True (it selects almost everything)."""
    t = mask.tensor()
    return not T.is_dense(t) and bool(t.fill_value)


def _mask_key(x: LazyArray, mask: LazyArray) -> Any:
    """A boolean array key as a NumPy key: the row-major coordinates of its stored True
    entries when it is stored sparse with fill False (never densified), else its values."""
    _check_mask_shape(x, mask)
    t = mask.tensor()
    if T.is_dense(t) or bool(t.fill_value):
        return np.asarray(t.to_numpy(), dtype=bool)
    coords, values = T.coo_parts(t)
    coords = coords[:, values.astype(bool)]
    return tuple(coords[:, np.lexsort(coords[::-1])])


def _check_index(i: Any) -> int:
    return operator.index(i)
