"""Array API creation functions, plus ``asarray`` of sparse inputs and ``random``.

Creation makes lazy *leaves* (stored tensors). Arrays whose every element is one value
(``zeros``, ``empty``, ``ones``, ``full`` and their ``_like`` forms) are stored as sparse
tensors with no entries and that value as fill value: O(1) memory whatever the shape
(csr for 2-D, csf otherwise, dense for 0-d). ``eye``, ``tril``/``triu`` of sparse input stay
sparse; ``arange``, ``linspace`` and NumPy input are dense.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from lazysparse import formats
from lazysparse.api.array.devices import Device, as_device
from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.array.operands import (
    as_array,
    foreign_tensor,
    from_cupy,
    is_cupy,
    is_pydata_sparse,
    is_scipy_sparse,
    to_numpy,
)
from lazysparse.api.building.elementwise import astype
from lazysparse.api.chapters.interop import asformat
from lazysparse.api.chapters.manipulation import broadcast_to, expand_dims
from lazysparse.api.stored.eager import eager_apply
from lazysparse.formats import tensor_ops as T
from lazysparse.formats.config import check_allocation
from lazysparse.formats.validation.inputs import check_extents
from lazysparse.logic import dtypes as _dt


def _check_device(device: Any, fname: str) -> Device | None:
    """The requested ``Device`` (None when not given); ValueError for an unknown one, or
    for ``"cuda"`` without CuPy and a GPU."""
    return as_device(device, fname)


def _place(x: LazyArray, device: Device | None) -> LazyArray:
    """``x`` moved to ``device`` when one was requested (creation builds on the host)."""
    return x if device is None or device == x.device else x.to_device(device)


def _shape_arg(shape: Any, fname: str) -> tuple[int, ...]:
    if isinstance(shape, int | np.integer) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        out = tuple(int(operator_index(d)) for d in shape)
    except TypeError:
        raise TypeError(f"{fname}: shape must be an int or a tuple of ints, got {shape!r}"
                        ) from None
    if any(d < 0 for d in out):
        raise ValueError(f"{fname}: negative dimension in shape {out}")
    return check_extents(out)


def operator_index(d: Any) -> int:
    import operator

    return operator.index(d)


def _finish(x: LazyArray, dtype: np.dtype | None, copy: bool | None, format: str | None,
            fname: str) -> LazyArray:
    """Apply a requested dtype and format to an array obtained without conversion."""
    if dtype is not None and dtype != x.dtype:
        if copy is False:
            raise ValueError(f"{fname}: converting {x.dtype} to {dtype} needs a copy, but "
                             "copy=False")
        x = astype(x, dtype)
    if format is not None:
        x = asformat(x, format)
    return x


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            format: str | None = None, fill_value: Any = None) -> LazyArray:
    """``obj`` as a lazysparse array: lazy arrays, ``formats.Tensor``, scipy.sparse and
    pydata sparse (their layout kept, no copy where possible), NumPy arrays, scalars and
    nested sequences. ``format``/``fill_value`` choose the storage of the result."""
    dev = _check_device(device, "asarray")
    d = _dt.as_dtype(dtype) if dtype is not None else None
    if dev is not None and dev.name == "cuda" or is_cupy(obj):
        if copy is False and dev is not None and not is_cupy(obj) and not (
                isinstance(obj, LazyArray) and obj.device == dev):
            raise ValueError("asarray: copying to device 'cuda' needs a copy, but copy=False")
        x = LazyArray.from_tensor(from_cupy(obj)) if is_cupy(obj) else asarray(
            obj, dtype=d, copy=copy, format=format, fill_value=fill_value)
        return _finish(_place(x, dev), d, copy, format, "asarray")
    if isinstance(obj, LazyArray):
        x = obj.copy() if copy else obj
        return _finish(_place(x, dev), d, copy, format, "asarray")
    if isinstance(obj, formats.Tensor):
        t = T.copy_tensor(obj) if copy else obj
        return _finish(LazyArray.from_tensor(t), d, copy, format, "asarray")
    if is_scipy_sparse(obj) or is_pydata_sparse(obj):
        t = foreign_tensor(obj, copy)
        return _finish(LazyArray.from_tensor(t), d, copy, format, "asarray")
    arr = to_numpy(obj, d, copy)
    if fill_value is not None or format not in (None, "dense"):
        fmt = format if format is not None else T.sparse_format_for(arr.ndim)
        t = formats.Tensor.from_numpy(arr, fmt, 0 if fill_value is None else fill_value)
    else:
        t = T.dense(arr)
    return LazyArray.from_tensor(t)


def _scalar_dtype(value: Any, fname: str) -> np.dtype:
    if isinstance(value, LazyArray | np.ndarray | np.generic):
        return _dt.as_dtype(value.dtype)
    if not _dt.is_python_scalar(value):
        raise TypeError(f"{fname}: fill_value must be a scalar, got {type(value).__name__}")
    return _dt.result_type(value)


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
         format: str | None = None) -> LazyArray:
    """An array of ``shape`` whose every element is ``fill_value``: stored as a sparse
    tensor with no entries and that fill value (O(1) memory)."""
    dev = _check_device(device, "full")
    s = _shape_arg(shape, "full")
    d = _dt.as_dtype(dtype) if dtype is not None else _scalar_dtype(fill_value, "full")
    if isinstance(fill_value, LazyArray):
        fill_value = fill_value._scalar("full")
    value = _dt.scalar_as(fill_value, d)
    t = T.empty_sparse(s, d, value, format, requested=format is not None)
    return LazyArray.from_tensor(t, dev)


def zeros(shape: Any, *, dtype: Any = None, device: Any = None,
          format: str | None = None) -> LazyArray:
    """An array of zeros (a sparse tensor with no entries, fill 0)."""
    return full(shape, 0, dtype=_dt.DEFAULT_FLOAT if dtype is None else dtype, device=device,
                format=format)


def empty(shape: Any, *, dtype: Any = None, device: Any = None,
          format: str | None = None) -> LazyArray:
    """An uninitialized array; lazysparse gives zeros (no entries stored, fill 0)."""
    return zeros(shape, dtype=dtype, device=device, format=format)


def ones(shape: Any, *, dtype: Any = None, device: Any = None,
         format: str | None = None) -> LazyArray:
    """An array of ones (no entries stored, fill 1)."""
    return full(shape, 1, dtype=_dt.DEFAULT_FLOAT if dtype is None else dtype, device=device,
                format=format)


def _like(x: Any, fname: str) -> LazyArray:
    return as_array(x, fname)


def full_like(x: LazyArray, /, fill_value: Any, *, dtype: Any = None, device: Any = None,
              format: str | None = None) -> LazyArray:
    """``full(x.shape, fill_value)`` with ``x``'s dtype unless ``dtype`` is given."""
    x = _like(x, "full_like")
    d = x.dtype if dtype is None else _dt.as_dtype(dtype)
    if _dt.is_python_scalar(fill_value) and not _dt.isdtype(d, "bool") and isinstance(
            fill_value, bool) is False:
        pass
    return full(x.shape, fill_value, dtype=d, device=x.device if device is None else device,
                format=format)


def zeros_like(x: LazyArray, /, *, dtype: Any = None, device: Any = None,
               format: str | None = None) -> LazyArray:
    """Zeros of ``x``'s shape (and dtype unless given)."""
    return full_like(x, 0, dtype=dtype, device=device, format=format)


def empty_like(x: LazyArray, /, *, dtype: Any = None, device: Any = None,
               format: str | None = None) -> LazyArray:
    """An uninitialized array like ``x`` (zeros)."""
    return zeros_like(x, dtype=dtype, device=device, format=format)


def ones_like(x: LazyArray, /, *, dtype: Any = None, device: Any = None,
              format: str | None = None) -> LazyArray:
    """Ones of ``x``'s shape (and dtype unless given)."""
    return full_like(x, 1, dtype=dtype, device=device, format=format)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None,
        device: Any = None, format: str | None = None) -> LazyArray:
    """Ones on diagonal ``k``, stored sparse (csr, fill 0)."""
    dev = _check_device(device, "eye")
    n = operator_index(n_rows)
    m = n if n_cols is None else operator_index(n_cols)
    k = operator_index(k)
    if n < 0 or m < 0:
        raise ValueError(f"eye: negative dimension ({n}, {m})")
    check_extents((n, m))
    d = _dt.DEFAULT_FLOAT if dtype is None else _dt.as_dtype(dtype)
    lo, hi = max(0, -k), min(n, m - k) if m - k > 0 else 0
    # the diagonal's entries (two int64 coordinates and a value each): one per row
    check_allocation(max(hi - lo, 0), np.dtype([("row", np.int64), ("col", np.int64),
                                                ("value", d)]), "eye's diagonal entries")
    rows = np.arange(lo, hi, dtype=np.int64)
    coords = np.stack([rows, rows + k]) if rows.size else np.zeros((2, 0), np.int64)
    t = T.from_coords((n, m), coords, np.ones(rows.size, d), d.type(0),
                      format or "csr", sorted_unique=True, requested=format is not None)
    return LazyArray.from_tensor(t, dev)


def arange(start: int | float, /, stop: int | float | None = None, step: int | float = 1, *,
           dtype: Any = None, device: Any = None) -> LazyArray:
    """Evenly spaced values in ``[start, stop)`` (dense)."""
    dev = _check_device(device, "arange")
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    if dtype is None:
        d = _dt.result_type(*(v for v in (start, stop, step)))
        if any(isinstance(v, float) for v in (start, stop, step)):
            d = _dt.DEFAULT_FLOAT
    else:
        d = _dt.as_dtype(dtype)
    n = max(0, math.ceil((stop - start) / step))
    check_extents((n,))
    check_allocation(n, np.int64 if d.itemsize < 8 else d, "arange's dense result")
    if d.kind in "iu" and all(isinstance(v, int) for v in (start, stop, step)):
        arr = np.arange(start, stop, step, dtype=np.int64 if d.kind == "i" else np.uint64)
        arr = arr.astype(d)
    else:
        arr = (start + step * np.arange(n, dtype=np.float64)).astype(d)
    return LazyArray.from_tensor(T.dense(arr), dev)


def linspace(start: int | float | complex, stop: int | float | complex, /, num: int, *,
             dtype: Any = None, device: Any = None, endpoint: bool = True) -> LazyArray:
    """``num`` evenly spaced values from ``start`` to ``stop`` (dense). The standard asks
    for a floating dtype; an integer or bool one gives NumPy's values (scipy.signal asks)."""
    dev = _check_device(device, "linspace")
    num = operator_index(num)
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, got {num}")
    is_c = isinstance(start, complex) or isinstance(stop, complex)
    d = (_dt.DEFAULT_COMPLEX if is_c else _dt.DEFAULT_FLOAT) if dtype is None else \
        _dt.as_dtype(dtype)
    if is_c and d.kind != "c":
        raise TypeError(f"linspace: complex start/stop cannot make {d} values (the imaginary "
                        "part would be lost)")
    check_extents((num,))
    check_allocation(num, np.complex128 if is_c or d.kind == "c" else np.float64,
                     "linspace's dense result")
    if d.kind in "fc":
        arr = np.linspace(start, stop, num, endpoint=endpoint, dtype=np.complex128 if is_c or
                          d.kind == "c" else np.float64).astype(d)
    else:  # integer and bool dtypes as NumPy makes them (floats rounded down, then cast)
        arr = np.linspace(start, stop, num, endpoint=endpoint, dtype=d)
    return LazyArray.from_tensor(T.dense(arr), dev)


def logspace(start: int | float, stop: int | float, /, num: int = 50, *, endpoint: bool = True,
             base: float = 10.0, dtype: Any = None, device: Any = None) -> LazyArray:
    """NumPy's ``logspace``: ``base ** linspace(start, stop, num)`` (dense; not in the
    standard, but scipy's and NumPy users' code calls ``xp.logspace``)."""
    exponents = linspace(start, stop, num, dtype=dtype, device=device, endpoint=endpoint)
    arr = np.power(np.asarray(base, dtype=exponents.dtype), exponents.tensor().to_numpy())
    return LazyArray.from_tensor(T.dense(arr.astype(exponents.dtype)), exponents.device)


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> LazyArray:
    """An array from a DLPack-exporting object (no copy unless ``copy``)."""
    dev = _check_device(device, "from_dlpack")
    if isinstance(x, LazyArray):
        return _place(x.copy() if copy else x, dev)
    if is_cupy(x) or dev is not None and dev.name == "cuda":
        return asarray(x, device=dev, copy=copy)
    try:
        arr = np.from_dlpack(x, copy=copy)
    except (TypeError, AttributeError) as e:
        raise TypeError(f"from_dlpack: {e}") from None
    return LazyArray.from_tensor(T.dense(arr))


def meshgrid(*arrays: LazyArray, indexing: str = "xy") -> list[LazyArray]:
    """Coordinate grids of 1-D ``arrays`` (lazy: broadcasts of reshaped inputs)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    arrays = tuple(as_array(a, "meshgrid", f"arrays[{k}]") for k, a in enumerate(arrays))
    for a in arrays:
        if a.ndim != 1:
            raise ValueError(f"meshgrid: arrays must be 1-D, got shape {a.shape}")
    if len({a.dtype for a in arrays}) > 1:
        raise TypeError("meshgrid: arrays must share one dtype")
    sizes = [a.shape[0] for a in arrays]
    n = len(arrays)
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for k, a in enumerate(arrays):
        pos = k
        if indexing == "xy" and n >= 2 and k < 2:
            pos = 1 - k
        others = tuple(ax for ax in range(n) if ax != pos)
        v = expand_dims(a, axis=others) if others else a
        out.append(broadcast_to(v, tuple(sizes)))
    return out


def _tri(x: Any, k: int, lower: bool, fname: str) -> LazyArray:
    x = as_array(x, fname)
    if x.ndim < 2:
        raise ValueError(f"{fname}: x must have at least 2 dimensions, got shape {x.shape}")
    k = operator_index(k)

    def dense_fn(a: np.ndarray) -> np.ndarray:
        return np.tril(a, k) if lower else np.triu(a, k)

    def sparse_fn(c: np.ndarray, v: np.ndarray, shape: tuple[int, ...]) -> Any:
        keep = (c[-1] - c[-2] <= k) if lower else (c[-1] - c[-2] >= k)
        return shape, c[:, keep], v[keep]

    t = x.tensor()
    if not T.is_dense(t) and t.fill_value != 0:
        # entries outside the triangle become 0, which is not the fill: go dense
        return eager_apply(x, dense_fn)
    return eager_apply(x, dense_fn, sparse_fn)


def tril(x: LazyArray, /, *, k: int = 0) -> LazyArray:
    """Lower triangle of the last two axes (computes ``x``; sparse input stays sparse)."""
    return _tri(x, k, True, "tril")


def triu(x: LazyArray, /, *, k: int = 0) -> LazyArray:
    """Upper triangle of the last two axes (computes ``x``; sparse input stays sparse)."""
    return _tri(x, k, False, "triu")


def random(shape: Sequence[int] | int, density: float = 0.01, *, format: str = "coo",
           dtype: Any = None, fill_value: Any = None, seed: Any = None) -> LazyArray:
    """A random sparse array (``formats.random``) as a lazy leaf."""
    s = _shape_arg(shape, "random")
    kwargs: dict[str, Any] = {"format": format, "seed": seed}
    if dtype is not None:
        kwargs["dtype"] = _dt.as_dtype(dtype)
    if fill_value is not None:
        kwargs["fill_value"] = fill_value
    return LazyArray.from_tensor(formats.random(s, density, **kwargs))
