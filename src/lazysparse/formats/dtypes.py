"""Dtypes lazysparse stores, fill-value checks and the per-tensor index dtype."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: The Array API dtypes a tensor may hold, as NumPy dtypes.
SUPPORTED_DTYPES: tuple[np.dtype, ...] = tuple(
    np.dtype(name)
    for name in (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float32",
        "float64",
        "complex64",
        "complex128",
    )
)

#: The same, as a set (``dtype in SUPPORTED_DTYPE_SET`` is a hash lookup; a dtype of the
#: other byte order compares unequal, so it is not in it).
SUPPORTED_DTYPE_SET: frozenset[np.dtype] = frozenset(SUPPORTED_DTYPES)

_INT32_MAX = int(np.iinfo(np.int32).max)


def check_dtype(dtype: Any, what: str = "values") -> np.dtype:
    """Return ``dtype`` as a NumPy dtype, or raise TypeError when lazysparse cannot store it."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"{what}: {dtype!r} is not a dtype") from exc
    if dt.byteorder not in ("=", "|"):
        dt = dt.newbyteorder("=")
    if dt not in SUPPORTED_DTYPES:
        names = ", ".join(str(d) for d in SUPPORTED_DTYPES)
        raise TypeError(f"{what}: unsupported dtype {dt}; lazysparse stores only {names}")
    return dt


def choose_index_dtype(shape: tuple[int, ...], nnz: int) -> np.dtype:
    """int32 when every dimension and the number of stored entries fit in int32, else int64."""
    largest = max((*shape, nnz), default=0)
    return np.dtype(np.int32) if largest <= _INT32_MAX else np.dtype(np.int64)


def normalize_fill(fill_value: Any, dtype: np.dtype) -> np.generic:
    """Return ``fill_value`` as a NumPy scalar of ``dtype``; ValueError when it does not fit."""
    if type(fill_value) is dtype.type:
        return fill_value  # already one (NumPy scalars are immutable)
    value = fill_value.item() if isinstance(fill_value, (np.generic, np.ndarray)) else fill_value
    if isinstance(fill_value, np.ndarray) and fill_value.ndim != 0:
        raise ValueError(f"fill value must be a scalar, got an array of shape {fill_value.shape}")
    if not isinstance(value, (bool, int, float, complex)):
        raise ValueError(f"fill value {fill_value!r} is not a number or bool")
    problem = _fill_problem(value, dtype)
    if problem:
        raise ValueError(f"fill value {fill_value!r} does not fit dtype {dtype}: {problem}")
    return dtype.type(value)


def _fill_problem(value: bool | int | float | complex, dtype: np.dtype) -> str:
    """Why ``value`` cannot be represented in ``dtype`` (empty string when it can)."""
    if isinstance(value, complex) and dtype.kind != "c":
        if value.imag != 0:
            return "it has a nonzero imaginary part"
        value = value.real
    if dtype.kind in "biu":
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                return "it is not an integer"
            value = int(value)
        if dtype.kind == "b":
            return "" if value in (0, 1) else "bool holds only 0/1 (False/True)"
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            return f"it is outside [{info.min}, {info.max}]"
        return ""
    limit = float(np.finfo(dtype).max)
    parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
    for part in parts:
        if math.isfinite(part) and abs(part) > limit:
            return f"it overflows {dtype} (max {limit:g})"
    return ""


def is_nan_scalar(value: Any) -> bool:
    """True when ``value`` is a NaN (for complex: either part NaN)."""
    return bool(np.isnan(value)) if np.asarray(value).dtype.kind in "fc" else False


def equals_fill(values: np.ndarray, fill: np.generic) -> np.ndarray:
    """Elementwise ``values == fill``, where NaN equals NaN (for complex: part by part)."""
    if not is_nan_scalar(fill):
        return values == fill
    if np.asarray(values).dtype.kind == "c" or np.asarray(fill).dtype.kind == "c":
        f = complex(fill)
        return _same(np.real(values), f.real) & _same(np.imag(values), f.imag)
    return np.isnan(values)


def _same(part: np.ndarray, value: float) -> np.ndarray:
    """``part == value`` with NaN equal to NaN."""
    return np.isnan(part) if math.isnan(value) else part == value


def fill_key(fill: Any) -> tuple[str, ...]:
    """A hashable key of a fill value: its dtype and its value, every NaN the same and
    ``-0.0`` apart from ``0.0`` (the identity of a fill in tensor signatures and kernel
    keys). Values of any dtypes are compared with :func:`same_value`."""
    value = np.asarray(fill)[()]
    dt = value.dtype
    if dt.kind == "c":
        parts = (complex(value).real, complex(value).imag)
    elif dt.kind == "f":
        parts = (float(value),)
    else:
        return (dt.str, repr(value.item()))
    return (dt.str, *("nan" if math.isnan(p) else repr(p) for p in parts))


def same_value(a: Any, b: Any) -> bool:
    """Whether scalars ``a`` and ``b`` are the same number whatever their dtypes, NaN equal
    to NaN (a NaN in either part of a complex counts); False for None or a non-number."""
    if a is None or b is None:
        return False
    try:
        x, y = complex(a), complex(b)
    except (TypeError, ValueError):
        return False
    if x == y:
        return True
    return _has_nan(x) and _has_nan(y)


def _has_nan(c: complex) -> bool:
    return math.isnan(c.real) or math.isnan(c.imag)
