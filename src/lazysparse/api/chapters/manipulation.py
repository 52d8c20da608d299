"""Array API manipulation functions.

Lazy (relabel/reorder, no data movement): ``permute_dims``, ``matrix_transpose``,
``moveaxis``, ``expand_dims``, ``squeeze``, ``broadcast_to``/``broadcast_arrays`` (a
``MapJoin(overwrite, extent, x)`` whose first operand is an entry-less sparse tensor giving
the new axes their extent), and ``reshape`` when it only adds or drops size-1 axes.
Eager (compute the input, then move stored entries; sparse stays sparse): ``reshape``,
``concat``, ``stack``, ``flip``, ``roll``, ``tile``, ``repeat``; ``unstack`` is indexing.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.array.materialize import compute_arrays
from lazysparse.api.array.operands import as_array, is_array_like
from lazysparse.api.array.plan_nodes import access, broadcast_shapes, fresh_fields, identify
from lazysparse.api.building.views import reshaped_strides, strides_of, unit_view
from lazysparse.api.stored.eager import eager_apply, leaf
from lazysparse.formats import Tensor, convert
from lazysparse.formats import tensor_ops as T
from lazysparse.formats.concat import concat_tensors, join_layout, with_leading_axis
from lazysparse.formats.config import check_allocation
from lazysparse.formats.dtypes import same_value
from lazysparse.logic import dtypes as _dt
from lazysparse.logic.nodes import Immediate, MapJoin, Relabel, Reorder
from lazysparse.logic.operators import get_operator


def _arr(x: Any, fname: str, arg: str = "x") -> LazyArray:
    """``x`` as a lazysparse array (``operands.as_array``: NumPy and scipy.sparse inputs
    convert without copying)."""
    return as_array(x, fname, arg)


def normalize_axis(axis: Any, ndim: int, fname: str) -> int:
    """``axis`` in ``[0, ndim)``; NumPy's AxisError (an IndexError and a ValueError, with
    NumPy's wording, which clients match) when out of range."""
    try:
        a = operator.index(axis)
    except TypeError:
        raise TypeError(f"{fname}: axis must be an integer, got {axis!r}") from None
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(a, ndim, fname)
    return a % ndim


def normalize_axes(axes: Any, ndim: int, fname: str) -> tuple[int, ...]:
    """A tuple of distinct normalized axes (an int or a sequence)."""
    if isinstance(axes, int | np.integer):
        axes = (axes,)
    out = tuple(normalize_axis(a, ndim, fname) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"{fname}: repeated axis in {tuple(axes)}")
    return out


def _wrap(x: LazyArray, body: Any, shape: tuple[int, ...], fmt: str | None = None) -> LazyArray:
    return LazyArray(identify(body), shape, x.dtype, x.fill_value, x.device, fmt)


@dataclass(frozen=True)
class WholeLink:
    """A whole-array view (transpose, reshape) of ``parent``: taken again as
    ``forward(parent, view)``; a write into it repeated as
    ``parent[...] = back(view, parent)``; ``numpy(values, shape)``: the same view of the
    parent's dense values (a NumPy view, None where NumPy would copy)."""

    forward: Callable[[LazyArray, LazyArray], LazyArray]
    back: Callable[[LazyArray, LazyArray], LazyArray]
    numpy: Callable[[np.ndarray, tuple[int, ...]], np.ndarray | None]

    def read(self, parent: LazyArray, view: LazyArray) -> LazyArray:
        return self.forward(parent, view)

    def write(self, parent: LazyArray, view: LazyArray) -> tuple[Any, Any]:
        return ..., self.back(view, parent)

    def region(self, values: np.ndarray, view: LazyArray) -> np.ndarray | None:
        return self.numpy(values, view.shape)


def _permuted(source: LazyArray, other: LazyArray, axes: tuple[int, ...]) -> LazyArray:
    """``source`` permuted by ``axes`` (to ``other``'s shape)."""
    return permute_dims(source, axes)


def _permuted_values(values: np.ndarray, shape: tuple[int, ...], axes: tuple[int, ...]
                     ) -> np.ndarray:
    """``values`` transposed by ``axes`` (a NumPy view)."""
    return values.transpose(axes)


def _reshaped(source: LazyArray, other: LazyArray) -> LazyArray:
    """``source`` reshaped to ``other``'s shape (not marked a view: ``copy=True``)."""
    return reshape(source, other.shape, copy=True)


def _reshaped_values(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """NumPy's reshape of ``values`` as a view of them (None where it would copy)."""
    try:
        return np.reshape(values, shape, copy=False)
    except ValueError:
        return None


RESHAPED = WholeLink(_reshaped, _reshaped, _reshaped_values)


def permute_dims(x: LazyArray, /, axes: tuple[int, ...]) -> LazyArray:
    """``x`` with its axes permuted (lazy: Reorder of a Relabel)."""
    x = _arr(x, "permute_dims")
    perm = normalize_axes(tuple(axes), x.ndim, "permute_dims")
    if len(perm) != x.ndim:
        raise ValueError(f"permute_dims: axes {tuple(axes)} is not a permutation of "
                         f"{x.ndim} axes")
    if perm == tuple(range(x.ndim)):
        return x
    f = fresh_fields(x.ndim)
    body = Reorder(Relabel(x.expr, f), tuple(f[a] for a in perm))
    inverse = tuple(sorted(range(len(perm)), key=perm.__getitem__))  # no NumPy call per .T
    link = WholeLink(partial(_permuted, axes=perm), partial(_permuted, axes=inverse),
                     partial(_permuted_values, axes=perm))
    strides = strides_of(x)
    return _wrap(x, body, tuple(x.shape[a] for a in perm)).view_of(
        x, link, tuple(strides[a] for a in perm))  # NumPy: a view


def transpose(x: LazyArray, /, axes: tuple[int, ...] | None = None) -> LazyArray:
    """NumPy's ``transpose``: ``permute_dims`` with the axes reversed when ``axes`` is None
    (not in the standard; NumPy-based libraries such as xarray call ``xp.transpose``)."""
    x = _arr(x, "transpose")
    return permute_dims(x, tuple(range(x.ndim))[::-1] if axes is None else tuple(axes))


def matrix_transpose(x: LazyArray, /) -> LazyArray:
    """Swap the last two axes (lazy)."""
    x = _arr(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: needs at least 2 dimensions, got {x.ndim}")
    perm = (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2)
    return permute_dims(x, perm)


def moveaxis(x: LazyArray, source: Any, destination: Any, /) -> LazyArray:
    """Move axes ``source`` to positions ``destination`` (lazy)."""
    x = _arr(x, "moveaxis")
    src = normalize_axes(source, x.ndim, "moveaxis")
    dst = normalize_axes(destination, x.ndim, "moveaxis")
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination need the same number of axes")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return permute_dims(x, tuple(order))


def expand_dims(x: LazyArray, /, axis: int | tuple[int, ...] = 0) -> LazyArray:
    """Insert size-1 axes at ``axis`` (positions in the result; lazy)."""
    x = _arr(x, "expand_dims")
    n = x.ndim + (len(axis) if isinstance(axis, tuple) else 1)
    axes = normalize_axes(axis, n, "expand_dims")
    shape_it = iter(x.shape)
    return _unit_view_of(x, tuple(1 if k in axes else next(shape_it) for k in range(n)))


def squeeze(x: LazyArray, /, axis: int | tuple[int, ...]) -> LazyArray:
    """Remove size-1 axes ``axis`` (lazy); ValueError if one is not of size 1."""
    x = _arr(x, "squeeze")
    axes = normalize_axes(axis, x.ndim, "squeeze")
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1")
    if not axes:
        return x
    return _unit_view_of(x, tuple(d for k, d in enumerate(x.shape) if k not in axes))


def _unit_view_of(x: LazyArray, shape: tuple[int, ...]) -> LazyArray:
    """``x`` with size-1 axes added or dropped (``views.unit_view``), a view of ``x`` (in
    NumPy too: such a reshape never copies)."""
    strides = reshaped_strides(x, shape)
    assert strides is not None
    return unit_view(x, shape).view_of(x, RESHAPED, strides)


def broadcast_to(x: LazyArray, /, shape: tuple[int, ...]) -> LazyArray:
    """``x`` broadcast to ``shape`` (lazy; ValueError when incompatible)."""
    x = _arr(x, "broadcast_to")
    shape = tuple(operator.index(d) for d in shape)
    try:
        ok = len(shape) >= x.ndim and broadcast_shapes(x.shape, shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to {shape}")
    if shape == x.shape:
        return x
    if shape[len(shape) - x.ndim:] == x.shape and all(
            d == 1 for d in shape[: len(shape) - x.ndim]):
        # only leading size-1 axes are added
        return unit_view(x, shape)
    fill = x.fill_value if x.fill_value is not None else x.dtype.type(0)
    extent = T.empty_sparse(shape, x.dtype, fill)
    out = fresh_fields(len(shape))
    extent_leaf = LazyArray.from_tensor(extent).expr
    body = MapJoin(Immediate(get_operator("overwrite")),
                   (Relabel(extent_leaf, out), access(x.expr, x.shape, out, shape)))
    return LazyArray(identify(body), shape, x.dtype, x.fill_value, x.device)


def broadcast_arrays(*arrays: LazyArray) -> list[LazyArray]:
    """Every array broadcast to their common shape (lazy)."""
    arrays = tuple(_arr(a, "broadcast_arrays", f"arrays[{k}]") for k, a in enumerate(arrays))
    shape = broadcast_shapes(*(a.shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def reshape(x: LazyArray, /, shape: tuple[int, ...], *, copy: bool | None = None) -> LazyArray:
    """``x`` with a new shape (C order). Lazy when only size-1 axes change, else computes
    ``x`` and relinearizes its stored coordinates (sparse stays sparse). A view of ``x``
    where NumPy's is one (``views.reshaped_strides``), else a copy (ValueError for
    ``copy=False``, as NumPy)."""
    x = _arr(x, "reshape")
    if isinstance(shape, int | np.integer):
        shape = (shape,)
    shape = tuple(operator.index(d) for d in shape)
    if sum(1 for d in shape if d == -1) > 1:
        raise ValueError("reshape: only one dimension can be -1")
    if any(d < -1 for d in shape):
        raise ValueError(f"reshape: invalid shape {shape}")
    if -1 in shape:
        rest = math.prod(d for d in shape if d != -1)
        if rest == 0 or x.size % rest:
            raise ValueError(f"reshape: cannot reshape array of size {x.size} into {shape}")
        shape = tuple(x.size // rest if d == -1 else d for d in shape)
    if math.prod(shape) != x.size:
        raise ValueError(f"reshape: cannot reshape array of shape {x.shape} (size {x.size}) "
                         f"into shape {shape}")
    if shape == x.shape:
        return x.copy() if copy else x
    strides = None if copy else reshaped_strides(x, shape)
    if strides is None and copy is False:
        raise ValueError(f"reshape: cannot reshape an array of shape {x.shape} with these "
                         f"strides into {shape} without a copy, but copy=False (as NumPy)")
    if [d for d in shape if d != 1] == [d for d in x.shape if d != 1]:
        out = unit_view(x, shape)
        return out if strides is None else out.view_of(x, RESHAPED, strides)

    def sparse_fn(c: np.ndarray, v: np.ndarray, old: tuple[int, ...]) -> Any:
        flat = np.ravel_multi_index(tuple(c), old) if c.shape[1] else np.zeros(0, np.int64)
        new = np.array(np.unravel_index(flat, shape), dtype=np.int64).reshape(len(shape), -1)
        return shape, new, v

    out = eager_apply(x, lambda a: np.reshape(a, shape), sparse_fn)
    # NumPy: a view unless copy, or the strides of x (a transposed view) need one
    return out if strides is None else out.view_of(x, RESHAPED, strides)


def _same_dtype_list(arrays: Any, fname: str) -> list[LazyArray]:
    if isinstance(arrays, LazyArray) or not isinstance(arrays, Sequence):
        raise TypeError(f"{fname}: expected a tuple or list of arrays")
    out = [_arr(a, fname, f"arrays[{k}]") for k, a in enumerate(arrays)]
    if not out:
        raise ValueError(f"{fname}: needs at least one array")
    return out


def _common(arrays: list[LazyArray]) -> np.dtype:
    d = arrays[0].dtype
    for a in arrays[1:]:
        d = _dt.promote_types(d, a.dtype)
    return d


def concat(arrays: tuple[LazyArray, ...] | list[LazyArray], /, *,
           axis: int | None = 0) -> LazyArray:
    """Join arrays along ``axis`` (None: flatten first). Computes the inputs; when all are
    sparse with one fill value the result is sparse."""
    arrays = _same_dtype_list(arrays, "concat")
    if axis is None:
        arrays = [reshape(a, (-1,)) for a in arrays]
        axis = 0
    ndim = arrays[0].ndim
    if ndim == 0:
        raise ValueError("concat: zero-dimensional arrays cannot be concatenated")
    ax = normalize_axis(axis, ndim, "concat")
    for a in arrays:
        if a.ndim != ndim or any(d != e for k, (d, e) in enumerate(
                zip(a.shape, arrays[0].shape, strict=True)) if k != ax):
            raise ValueError(f"concat: shapes {[b.shape for b in arrays]} do not match "
                             f"outside axis {ax}")
    d = _common(arrays)
    tensors = _sparse_of_one_fill(arrays, d)
    shape = list(arrays[0].shape)
    shape[ax] = sum(a.shape[ax] for a in arrays)
    if tensors is not None:
        return leaf(_concat_sparse(tensors, tuple(shape), ax, d), arrays[0])
    tensors = [a.tensor() for a in arrays]
    # the dense result: more than the dense inputs hold means sparse ones were densified
    check_allocation(math.prod(shape), d, "concat's dense result", shape=tuple(shape),
                     within=sum(int(t.values.size) for t in tensors if T.is_dense(t)))
    out = np.concatenate([t.to_numpy().astype(d, copy=False) for t in tensors], axis=ax)
    return leaf(T.dense(out), arrays[0])


def _sparse_of_one_fill(arrays: list[LazyArray], d: np.dtype) -> list[Tensor] | None:
    """The computed arrays' tensors when all are sparse with one fill value (in ``d``): a
    join keeps them sparse; None when one is dense or the fills differ (a dense result).
    The operands are computed together, each keeping its implicit region (a product's
    unreached entries stay implicit in the join: ``api.held_regions``)."""
    compute_arrays(tuple(arrays), keep_regions=True)
    tensors = [a.tensor() for a in arrays]
    fill = np.asarray(tensors[0].fill_value).astype(d)[()]
    if all(not T.is_dense(t) and same_value(np.asarray(t.fill_value).astype(d)[()], fill)
           for t in tensors):
        return tensors
    return None


def _concat_sparse(tensors: list[Tensor], shape: tuple[int, ...], ax: int,
                   d: np.dtype) -> Tensor:
    """Sparse operands of one fill value joined along ``ax`` in the first one's format: by
    pointer offset and copy where the format allows (formats.concat), else by coordinates
    (also when the format's pointers per row would pass the densify limit: coo then)."""
    fill = d.type(tensors[0].fill_value)
    fmt = tensors[0].format
    plan = join_layout(tensors[0].spec, ax)
    if plan is not None and not T._pointers_too_large(plan[1].name, shape,
                                                      sum(t.nnz for t in tensors)):
        out = concat_tensors(tensors, ax, d, fill, tensors[0].spec)
        if out is not None:
            return out
    cs, vs, off = [], [], 0
    for t in tensors:
        c, v = T.coo_parts(t)
        c = c.copy()
        c[ax] += off
        off += t.shape[ax]
        cs.append(c)
        vs.append(v.astype(d))
    return T.from_coords(shape, np.concatenate(cs, axis=1), np.concatenate(vs), fill, fmt)


def stack(arrays: tuple[LazyArray, ...] | list[LazyArray], /, *, axis: int = 0) -> LazyArray:
    """Join arrays along a new axis (computes the inputs)."""
    arrays = _same_dtype_list(arrays, "stack")
    shape = arrays[0].shape
    for a in arrays:
        if a.shape != shape:
            raise ValueError(f"stack: all arrays need one shape, got "
                             f"{[b.shape for b in arrays]}")
    ax = normalize_axis(axis, len(shape) + 1, "stack")
    if ax == 0:
        out = _stack_leading(arrays, shape)
        if out is not None:
            return out
    return concat([expand_dims(a, axis=ax) for a in arrays], axis=ax)


def _stack_leading(arrays: list[LazyArray], shape: tuple[int, ...]) -> LazyArray | None:
    """Sparse arrays of one fill value stacked along a new leading axis: each operand's
    arrays under one new coordinate (formats.concat.with_leading_axis), then joined by
    offset and copy. None where that does not apply (a dense operand, other fills, a layout
    without it, a matrix whose pointer per row would pass the densify limit)."""
    if len(shape) == 2 and T._pointers_too_large("csr", shape, 0):
        return None  # a csc would become csr, a csr's rows are compressed: both per row
    d = _common(arrays)
    tensors = _sparse_of_one_fill(arrays, d)
    if tensors is None:
        return None
    lead = [with_leading_axis(convert(t, tensors[0].spec)) for t in tensors]
    parts = [t for t in lead if t is not None]
    if len(parts) < len(lead):
        return None
    return leaf(_concat_sparse(parts, (len(arrays), *shape), 0, d), arrays[0])


def unstack(x: LazyArray, /, *, axis: int = 0) -> tuple[LazyArray, ...]:
    """Split ``x`` along ``axis`` into a tuple of arrays (indexing)."""
    x = _arr(x, "unstack")
    if x.ndim == 0:
        raise ValueError("unstack: x must have at least one dimension")
    ax = normalize_axis(axis, x.ndim, "unstack")
    pre = (slice(None),) * ax
    return tuple(x[(*pre, i)] for i in range(x.shape[ax]))


def flip(x: LazyArray, /, *, axis: int | tuple[int, ...] | None = None) -> LazyArray:
    """Reverse the order of elements along ``axis`` (all when None; computes ``x``); a view
    of ``x``, as NumPy's."""
    x = _arr(x, "flip")
    axes = tuple(range(x.ndim)) if axis is None else normalize_axes(axis, x.ndim, "flip")
    if not axes or x.ndim == 0:
        return x

    def sparse_fn(c: np.ndarray, v: np.ndarray, shape: tuple[int, ...]) -> Any:
        c = c.copy()
        for a in axes:
            c[a] = shape[a] - 1 - c[a]
        return shape, c, v

    link = WholeLink(partial(_flipped, axes=axes), partial(_flipped, axes=axes),
                     partial(_flipped_values, axes=axes))
    strides = tuple(-s if k in axes else s for k, s in enumerate(strides_of(x)))
    return eager_apply(x, lambda a: np.flip(a, axis=axes), sparse_fn).view_of(
        x, link, strides)  # NumPy: a view


def _flipped_values(values: np.ndarray, shape: tuple[int, ...], axes: tuple[int, ...]
                    ) -> np.ndarray:
    """``values`` reversed along ``axes`` (a NumPy view)."""
    return np.flip(values, axis=axes)


def _flipped(source: LazyArray, other: LazyArray, axes: tuple[int, ...]) -> LazyArray:
    """``source`` reversed along ``axes`` (either way: its own inverse)."""
    return flip(source, axis=axes)


def roll(x: LazyArray, /, shift: int | tuple[int, ...], *,
         axis: int | tuple[int, ...] | None = None) -> LazyArray:
    """Shift elements cyclically along ``axis`` (flattened when None; computes ``x``)."""
    x = _arr(x, "roll")
    if axis is None:
        if not isinstance(shift, int | np.integer):
            raise ValueError("roll: shift must be an int when axis is None")
        flat = reshape(x, (-1,))
        return reshape(roll(flat, int(shift), axis=0), x.shape)
    shifts = (shift,) if isinstance(shift, int | np.integer) else tuple(shift)
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    axes = tuple(normalize_axis(a, x.ndim, "roll") for a in axes)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError("roll: shift and axis must have the same length")

    def sparse_fn(c: np.ndarray, v: np.ndarray, shape: tuple[int, ...]) -> Any:
        c = c.copy()
        for s, a in zip(shifts, axes, strict=True):
            if shape[a]:
                c[a] = (c[a] + int(s)) % shape[a]
        return shape, c, v

    return eager_apply(x, lambda a: np.roll(a, shifts, axis=axes), sparse_fn)


def tile(x: LazyArray, repetitions: tuple[int, ...], /) -> LazyArray:
    """Repeat the whole of ``x`` ``repetitions`` times per axis (computes ``x``)."""
    x = _arr(x, "tile")
    reps = tuple(operator.index(r) for r in repetitions)
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repetitions must be non-negative, got {reps}")
    n = max(len(reps), x.ndim)
    reps_full = (1,) * (n - len(reps)) + reps
    if x.ndim < n:
        x = reshape(x, (1,) * (n - x.ndim) + x.shape)

    def sparse_fn(c: np.ndarray, v: np.ndarray, shape: tuple[int, ...]) -> Any:
        new_shape = tuple(d * r for d, r in zip(shape, reps_full, strict=True))
        for a, r in enumerate(reps_full):
            if r == 1:
                continue
            offs = np.repeat(np.arange(r, dtype=np.int64) * shape[a], c.shape[1])
            c = np.tile(c, (1, r))
            c[a] += offs
            v = np.tile(v, r)
        return new_shape, c, v

    _check_dense_result(x, tuple(d * r for d, r in zip(x.shape, reps_full, strict=True)),
                        "tile", sparse_ok=True)
    return eager_apply(x, lambda a: np.tile(a, reps_full), sparse_fn)


def repeat(x: LazyArray, repeats: Any, /, *, axis: int | None = None) -> LazyArray:
    """Repeat each element of ``x`` (along ``axis``, or of the flattened ``x``)."""
    x = _arr(x, "repeat")
    if axis is None:
        x = reshape(x, (-1,))
        axis = 0
    ax = normalize_axis(axis, x.ndim, "repeat")
    if is_array_like(repeats):
        repeats = _arr(repeats, "repeat", "repeats")
        if repeats.dtype.kind not in "iu":
            raise TypeError(f"repeat: repeats must be integers, got {repeats.dtype}")
        reps = np.asarray(repeats)
        if reps.ndim > 1 or reps.ndim == 1 and reps.shape[0] not in (1, x.shape[ax]):
            raise ValueError(f"repeat: repeats of shape {reps.shape} does not match axis "
                             f"{ax} of size {x.shape[ax]}")
    else:
        reps = np.asarray(operator.index(repeats))
    if np.any(reps < 0):
        raise ValueError("repeat: repeats must be non-negative")
    flat = reps.reshape(-1)
    n = int(flat.sum()) if flat.size == x.shape[ax] else int(flat[0]) * x.shape[ax]
    _check_dense_result(x, x.shape[:ax] + (n,) + x.shape[ax + 1:], "repeat", sparse_ok=False)
    return eager_apply(x, lambda a: np.repeat(a, reps, axis=ax))


def _check_dense_result(x: LazyArray, shape: tuple[int, ...], fname: str,
                        sparse_ok: bool) -> None:
    """DensifyError before an eager function's dense result of ``shape`` passes the
    densify limit (``x`` computed first; unless it is no larger than ``x``'s own dense
    values). ``sparse_ok``: a sparse ``x`` gives a sparse result (nothing to check)."""
    t = x.tensor()
    dense = T.is_dense(t)
    if sparse_ok and not dense and t.ndim:
        return
    check_allocation(math.prod(shape), t.dtype, f"{fname}'s dense result", shape=shape,
                     within=int(t.values.size) if dense else 0)
