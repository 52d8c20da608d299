"""Eager helpers on stored ``formats.Tensor`` data, for the operations Finch-Logic cannot
express (slicing with steps, reshape, concat, flip ...): read a tensor's coordinates, build a
sparse tensor from coordinates, and apply an operation densely (NumPy) or on coordinates.

A dense tensor is handled as a NumPy array; a sparse one through its coordinate list, so its
sparsity and fill value survive and it is never densified.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lazysparse import formats
from lazysparse.formats.config import DensifyError
from lazysparse.formats.layouts import canonical
from lazysparse.formats.levels.registry import is_located


def is_dense(t: formats.Tensor) -> bool:
    """Whether every level of ``t`` is dense (a plain NumPy array holds it)."""
    return all(is_located(getattr(lv, "kind", "")) for lv in t.levels)


def coo_parts(t: formats.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates ``(ndim, nnz)`` (int64, axis order) and values of ``t``'s stored entries,
    by walking its levels (Dense: every coordinate; Compressed: ptr/idx; Singleton: idx),
    in storage order (unordered, hashed and bytemap levels are made canonical first)."""
    t = canonical(t)
    pos = np.zeros(1, dtype=np.int64)
    level_coords: list[np.ndarray] = []
    for lv in t.levels:
        owner, coord, pos = lv.children(pos)
        level_coords = [c[owner] for c in level_coords]
        level_coords.append(coord)
    values = np.asarray(t.values)[pos] if t.levels else np.asarray(t.values)[:1]
    coords = np.empty((t.ndim, pos.size), dtype=np.int64)
    for k, axis in enumerate(t.mode_order):
        coords[axis] = level_coords[k]
    return coords, values


def sparse_format_for(ndim: int, like: str | None = None) -> str:
    """The sparse format a result of ``ndim`` axes gets: ``like`` when it fits that ndim,
    else csr for 2-D, csf otherwise (a 1-D csf is a sparse vector)."""
    if like not in (None, "dense"):
        try:
            formats.format_spec(like, ndim)
            return like
        except ValueError:
            pass
    if ndim == 0:
        return "dense"
    return "csr" if ndim == 2 else "csf"


def from_coords(shape: tuple[int, ...], coords: np.ndarray, values: np.ndarray,
                fill_value: Any, format: str | None = None, *,
                sorted_unique: bool = False, requested: bool = False) -> formats.Tensor:
    """A sparse tensor of ``shape`` storing ``values`` at unique ``coords`` (``(ndim, n)``).
    ``requested``: ``format`` is the user's explicit choice, returned or refused (ValueError
    when it does not fit ``shape``, DensifyError past the densify limit), never swapped."""
    ndim = len(shape)
    values = np.asarray(values)
    if requested and format is not None:
        return _requested_layout(shape, coords, values, fill_value, format)
    fmt = sparse_format_for(ndim, format)
    if ndim == 0:
        val = values[0] if values.size else fill_value
        return dense(np.asarray(val, dtype=values.dtype), fill_value)
    coords = np.asarray(coords, dtype=np.int64).reshape(ndim, -1)
    if _pointers_too_large(fmt, shape, int(values.size)):
        fmt = "coo"  # hypersparse eager result: csr's pointer per row would pass the limit
    return formats.Tensor.from_coords(list(coords), values, shape, format=fmt,
                                      fill_value=fill_value)


def _requested_layout(shape: tuple[int, ...], coords: np.ndarray, values: np.ndarray,
                      fill_value: Any, fmt: str) -> formats.Tensor:
    """``from_coords`` in exactly the layout ``fmt`` the user asked for: its clear
    ValueError when ``fmt`` has no form of ``len(shape)`` axes, and a DensifyError naming
    ``fmt`` (and the hypersparse layouts that fit) when its dense levels pass the limit."""
    formats.format_spec(fmt, len(shape))  # ValueError: no such layout for this ndim
    if not shape:  # one element: its value (or the fill) in that layout
        val = values[0] if values.size else fill_value
        return formats.Tensor.from_numpy(np.asarray(val, dtype=values.dtype), fmt, fill_value)
    coords = np.asarray(coords, dtype=np.int64).reshape(len(shape), -1)
    try:
        return formats.Tensor.from_coords(list(coords), values, shape, format=fmt,
                                          fill_value=fill_value)
    except DensifyError as e:
        raise DensifyError(
            f"format={fmt!r} for shape {shape}: {e} Its dense levels hold one item per "
            "coordinate; a hypersparse layout stores only the entries: format='coo' (or "
            "'dcsr' for 2-D, 'csf' otherwise).") from None


def _pointers_too_large(fmt: str, shape: tuple[int, ...], n: int) -> bool:
    """Whether layout ``fmt`` of ``shape`` would need a pointer array under its leading
    dense levels that passes the densify limit and dwarfs the ``n`` entries (an eager
    result of a hypersparse csr keeps its entries in coo instead of raising)."""
    limit = formats.get_densify_limit()
    if limit is None:
        return False
    spec = formats.format_spec(fmt, len(shape))
    parents = 1
    for kind, m in zip(spec.level_kinds, spec.mode_order, strict=True):
        if not is_located(kind):
            break
        parents *= shape[m]
    return (parents + 1) * 8 > limit and parents > 8 * n + 4096


def empty_sparse(shape: tuple[int, ...], dtype: np.dtype, fill_value: Any,
                 format: str | None = None, *, requested: bool = False) -> formats.Tensor:
    """A tensor of ``shape`` with no stored entries: every element is ``fill_value``
    (``requested``: ``format`` is the user's, see :func:`from_coords`)."""
    if len(shape) == 0 and not requested:
        return dense(np.asarray(fill_value, dtype=dtype), fill_value)
    return from_coords(shape, np.zeros((len(shape), 0), np.int64), np.zeros(0, dtype),
                       fill_value, format, sorted_unique=True, requested=requested)


def copy_tensor(t: formats.Tensor) -> formats.Tensor:
    """A copy of ``t`` owning its index and value arrays."""
    levels = [lv.with_arrays(**{k: a.copy() for k, a in lv.arrays().items()})
              if lv.arrays() else lv for lv in t.levels]
    return formats.Tensor(t.shape, levels, t.mode_order, np.array(t.values, copy=True),
                          t.fill_value, format=t.spec)


def dense(arr: np.ndarray, fill_value: Any = None) -> formats.Tensor:
    """``arr`` as a dense tensor (no copy when its layout allows)."""
    arr = np.asarray(arr)
    fill = arr.dtype.type(0) if fill_value is None else fill_value
    if arr.dtype not in formats.SUPPORTED_DTYPES:
        return formats.Tensor.from_numpy(arr, "dense", fill)  # its clear dtype error
    order = _storage_order(arr)
    values = np.ascontiguousarray(arr.transpose(order)).reshape(-1)
    return formats.Tensor(arr.shape, [formats.Dense(arr.shape[a]) for a in order], order,
                          values, fill, format="dense", check=False)


def _storage_order(arr: np.ndarray) -> tuple[int, ...]:
    """``arr``'s axes by decreasing stride when that order is C-contiguous (a transposed or
    Fortran-ordered array is then stored as it lies, no copy); else the axis order."""
    if arr.ndim < 2 or arr.flags.c_contiguous:
        return tuple(range(arr.ndim))
    order = tuple(sorted(range(arr.ndim), key=lambda a: -arr.strides[a]))
    return order if arr.transpose(order).flags.c_contiguous else tuple(range(arr.ndim))


def with_shape(t: formats.Tensor, shape: tuple[int, ...]) -> formats.Tensor:
    """``t`` with size-1 axes inserted or removed to get ``shape`` (same elements): a view
    for dense data, renumbered coordinates for sparse (same format where it fits)."""
    if is_dense(t):
        return dense(t.to_numpy().reshape(shape), t.fill_value)
    coords, values = coo_parts(t)
    kept = coords[[k for k, d in enumerate(t.shape) if d != 1]]
    out = np.zeros((len(shape), coords.shape[1]), dtype=np.int64)
    out[[k for k, d in enumerate(shape) if d != 1]] = kept
    return from_coords(shape, out, values, t.fill_value, t.format)


def apply_eager(t: formats.Tensor, dense_fn: Callable[[np.ndarray], np.ndarray],
                sparse_fn: Callable[[np.ndarray, np.ndarray, tuple[int, ...]],
                                    tuple[tuple[int, ...], np.ndarray, np.ndarray]] | None = None,
                ) -> formats.Tensor:
    """``dense_fn`` on a dense tensor's array, or ``sparse_fn`` on a sparse one's stored
    entries (see :func:`eager`): the tensor it gives."""
    if is_dense(t) or sparse_fn is None or t.ndim == 0:
        out = np.asarray(dense_fn(t.to_numpy()))
        return dense(out, t.fill_value if not is_dense(t) else None)
    coords, values = coo_parts(t)
    shape, coords, values = sparse_fn(coords, values, t.shape)
    return from_coords(shape, coords, values, t.fill_value, t.format)
