"""Arrays of other libraries as lazysparse tensors, converted without copying where the
layout allows: NumPy arrays and scalars (and anything with ``__array__``/``__dlpack__``),
``scipy.sparse`` and pydata ``sparse`` arrays (their layout kept), CuPy arrays and
``cupyx.scipy.sparse`` matrices (device tensors). ``xp.asarray`` and the operands of every
function and operator (``operands.as_operand``) convert through here. Each library is
recognised by its objects' class module, so testing an argument never imports it.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from lazysparse.api import tensors as T
from lazysparse.formats import Tensor
from lazysparse.formats.device import DeviceTensor, from_cupyx
from lazysparse.formats.levels import Dense
from lazysparse.formats.specs import format_spec
from lazysparse.logic import dtypes as _dt


def foreign_tensor(obj: Any, copy: bool | None = None) -> Tensor | DeviceTensor:
    """The tensor of a foreign array ``obj`` (copied only when ``copy``): a device tensor
    for CuPy input, the same layout for scipy.sparse and pydata sparse input, else a dense
    tensor of its NumPy array (NumPy's dtype kept)."""
    if is_cupy(obj):
        return from_cupy(obj)
    if is_scipy_sparse(obj):
        return Tensor.from_scipy(obj.copy() if copy else obj)
    if is_pydata_sparse(obj):
        return Tensor.from_pydata(obj.copy() if copy else obj)
    return T.dense(to_numpy(obj, None, copy))


def is_cupy(obj: Any) -> bool:
    """Whether ``obj`` comes from CuPy (a ``cupy`` array or a ``cupyx.scipy.sparse``
    matrix): its class's module is read, so ordinary inputs never import CuPy."""
    return (type(obj).__module__ or "").split(".")[0] in ("cupy", "cupyx")


def from_cupy(obj: Any) -> Any:
    """A ``DeviceTensor`` of a CuPy array (dense) or ``cupyx.scipy.sparse`` matrix."""
    import cupy  # only for CuPy input: the class of ``obj`` says CuPy is there
    import cupyx.scipy.sparse as cps

    if cps.issparse(obj):
        return from_cupyx(obj)

    arr = cupy.ascontiguousarray(obj)
    _dt.as_dtype(arr.dtype)
    return DeviceTensor(arr.shape, [Dense(n) for n in arr.shape],
                        tuple(range(arr.ndim)), arr.reshape(-1), arr.dtype.type(0),
                        format_spec("dense", arr.ndim))


def is_scipy_sparse(obj: Any) -> bool:
    """Whether ``obj`` is a scipy.sparse array or matrix (none exists before scipy.sparse is
    imported, so ``import lazysparse`` does not import it)."""
    sp = sys.modules.get("scipy.sparse")
    return sp is not None and bool(sp.issparse(obj))


def is_pydata_sparse(obj: Any) -> bool:
    """Whether ``obj`` is a pydata ``sparse`` array."""
    return type(obj).__module__.split(".")[0] == "sparse" and hasattr(obj, "fill_value")


def to_numpy(obj: Any, dtype: np.dtype | None, copy: bool | None) -> np.ndarray:
    """A NumPy array of ``obj`` with the standard's default dtypes for Python scalars."""
    if isinstance(obj, np.ndarray | np.generic) or hasattr(obj, "__array__") or hasattr(
            obj, "__dlpack__"):
        try:
            arr = np.asarray(obj, dtype=dtype, copy=copy)
        except ValueError as e:
            raise ValueError(f"asarray: {e}") from None
        if isinstance(obj, np.ndarray) and copy is None and dtype is None:
            pass
        _dt.as_dtype(arr.dtype)
        return arr
    if copy is False and not isinstance(obj, memoryview | bytes | bytearray):
        raise ValueError("asarray: copy=False is impossible for a Python scalar or sequence")
    if isinstance(obj, memoryview | bytes | bytearray):
        arr = np.asarray(memoryview(obj), dtype=dtype)
        if copy:
            arr = arr.copy()
        return arr
    if dtype is None:
        dtype = infer_dtype(obj)
    try:
        with np.errstate(over="raise"):
            arr = np.array(obj, dtype=dtype)
    except OverflowError as e:
        raise OverflowError(f"asarray: {e}") from None
    except (TypeError, ValueError) as e:
        raise type(e)(f"asarray: cannot convert {type(obj).__name__} to an array: {e}"
                      ) from None
    _dt.as_dtype(arr.dtype)
    return arr


def infer_dtype(obj: Any) -> np.dtype | None:
    """Default dtype of Python scalars / nested sequences (bool, int64, float64,
    complex128) — or None to let NumPy decide (sequences of arrays)."""
    rank = -1
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, bool | np.bool_):
            rank = max(rank, 0)
        elif isinstance(o, int) and not isinstance(o, bool):
            rank = max(rank, 1)
        elif isinstance(o, float):
            rank = max(rank, 2)
        elif isinstance(o, complex):
            rank = max(rank, 3)
        elif isinstance(o, list | tuple):
            stack.extend(o)
        else:
            return None
    return {-1: _dt.DEFAULT_FLOAT, 0: _dt.BOOL, 1: _dt.DEFAULT_INT, 2: _dt.DEFAULT_FLOAT,
            3: _dt.DEFAULT_COMPLEX}[rank]
