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

from lazysparse.api.foreign import foreign_tensor
from lazysparse.api.lazy_array import LazyArray
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
