"""What the namespace accepts where it takes an array, converted without copying.

Every function and operator converts its array arguments here: ``as_array`` for positions
that need an array (``matmul``, ``concat``, reductions...), ``as_operand`` where the Array
API also allows a Python scalar (elementwise functions, ``where``, ``clip`` bounds). A
lazysparse array passes through; a NumPy array or NumPy scalar becomes a dense leaf sharing
its memory; a ``scipy.sparse`` array or matrix, a pydata ``sparse`` array and a CuPy array
become leaves sharing their arrays (``xp.asarray`` with ``copy=None``). Lists, tuples and
other objects are rejected with a TypeError that names the function and the argument: the
standard does not require them, and their dtype would be a guess (``xp.asarray`` converts
them explicitly).
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.formats import Tensor
from lazysparse.formats import tensor_ops as T
from lazysparse.formats.device import DeviceTensor, from_cupyx
from lazysparse.formats.levels import Dense
from lazysparse.formats.specs import format_spec
from lazysparse.logic import dtypes as _dt

Scalar = bool | int | float | complex
Operand = LazyArray | Scalar

# top-level modules whose arrays ``xp.asarray`` converts without copying (checked by the
# class's module, so testing an argument never imports them)
_FOREIGN_MODULES = ("numpy", "scipy", "sparse", "cupy", "cupyx")


def is_foreign_array(x: Any) -> bool:
    """Whether ``x`` is an array of another library that converts without a copy: a NumPy
    array or scalar, a scipy.sparse array/matrix, a pydata sparse array or a CuPy array."""
    if isinstance(x, np.ndarray | np.generic):
        return True
    root = (type(x).__module__ or "").split(".")[0]
    if root not in _FOREIGN_MODULES or root == "numpy":
        return False
    if root == "scipy":
        sparse_mod = sys.modules.get("scipy.sparse")
        return sparse_mod is not None and bool(sparse_mod.issparse(x))
    return hasattr(x, "shape") and hasattr(x, "dtype")


def is_array_like(x: Any) -> bool:
    """Whether ``as_array`` accepts ``x`` (a lazysparse array or a foreign array)."""
    return isinstance(x, LazyArray) or is_foreign_array(x)


def is_operand(x: Any) -> bool:
    """Whether ``as_operand`` accepts ``x`` (an array or a Python scalar): what operators
    check before returning ``NotImplemented``."""
    return isinstance(x, LazyArray) or _dt.is_python_scalar(x) or is_foreign_array(x)


def as_array(x: Any, fname: str, arg: str = "x") -> LazyArray:
    """``x`` as a lazysparse array (foreign arrays become leaves sharing their memory);
    TypeError naming ``fname`` and ``arg`` for a Python scalar or any other object."""
    if isinstance(x, LazyArray):
        return x
    if is_foreign_array(x):
        return _convert(x)
    if _dt.is_python_scalar(x):
        raise TypeError(f"{fname}: {arg} must be an array, got a Python "
                        f"{type(x).__name__} ({fname} does not accept scalars here)")
    raise TypeError(_unsupported(x, fname, arg, "a lazysparse array, a NumPy array or a "
                                 "scipy.sparse array"))


def as_operand(x: Any, fname: str, arg: str = "x") -> Operand:
    """``x`` as a lazysparse array or a weak Python scalar (left as is, promoted by the
    standard's rules for scalars); TypeError naming ``fname`` and ``arg`` otherwise."""
    if isinstance(x, LazyArray) or _dt.is_python_scalar(x):
        return x
    if is_foreign_array(x):
        return _convert(x)
    raise TypeError(_unsupported(x, fname, arg, "a lazysparse array, a NumPy array, a "
                                 "scipy.sparse array or a Python scalar"))


@functools.cache
def operand_names(n: int) -> tuple[str, ...]:
    """The standard's argument names of an ``n``-argument function: ``x`` or ``x1, x2...``
    (cached: it is on every operator's path)."""
    return ("x",) if n == 1 else tuple(f"x{k + 1}" for k in range(n))


def _convert(x: Any) -> LazyArray:
    """A foreign array as a leaf sharing its memory (``xp.asarray(x)``)."""
    return LazyArray.from_tensor(foreign_tensor(x))


def _unsupported(x: Any, fname: str, arg: str, expected: str) -> str:
    hint = " (convert it with xp.asarray first)" if isinstance(
        x, list | tuple | range | memoryview) else ""
    return (f"{fname}: unsupported operand type {type(x).__name__!r} for {arg}; expected "
            f"{expected}{hint}")


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
