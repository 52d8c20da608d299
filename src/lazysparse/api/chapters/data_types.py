"""Array API data-type functions: ``astype``, ``can_cast``, ``finfo``, ``iinfo``, ``isdtype``,
``result_type``. Type rules live in ``logic.dtypes``; these are the user-facing forms."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.logic import dtypes as _dt


def _dtype_arg(x: Any, fname: str) -> np.dtype:
    """The dtype of an array or a dtype argument; TypeError naming ``fname`` otherwise."""
    if hasattr(x, "dtype") and not isinstance(x, np.dtype | type):
        return _dt.as_dtype(x.dtype)
    try:
        return _dt.as_dtype(x)
    except TypeError:
        raise TypeError(f"{fname}: expected an array or a data type, got {x!r}") from None


def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether ``dtype`` is of ``kind`` (a kind name, a dtype, or a tuple of those)."""
    if not isinstance(dtype, np.dtype):
        dtype = _dtype_arg(dtype, "isdtype")
    return _dt.isdtype(dtype, kind)


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """The dtype type promotion gives ``arrays_and_dtypes`` (Python scalars are weak)."""
    args = []
    for a in arrays_and_dtypes:
        if _dt.is_python_scalar(a):
            args.append(a)
        else:
            args.append(_dtype_arg(a, "result_type"))
    return _dt.result_type(*args)


_CAST_ORDER = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def can_cast(from_: Any, to: Any, /) -> bool:
    """Whether ``from_`` (array or dtype) casts to ``to`` under the promotion rules."""
    f = _dtype_arg(from_, "can_cast")
    t = _dtype_arg(to, "can_cast")
    return bool(np.can_cast(f, t, casting="safe"))


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the standard's name
    """Machine limits of a floating-point dtype (the standard's ``finfo_object``)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801 - the standard's name
    """Machine limits of an integer dtype (the standard's ``iinfo_object``)."""

    bits: int
    max: int
    min: int
    dtype: np.dtype


def finfo(type: Any, /) -> finfo_object:  # noqa: A002 - the standard's signature
    """Machine limits of a floating-point dtype (complex: of its real part)."""
    d = _dtype_arg(type, "finfo")
    if d.kind not in "fc":
        raise TypeError(f"finfo: {d} is not a floating-point data type")
    fi = np.finfo(d)
    return finfo_object(int(fi.bits), float(fi.eps), float(fi.max), float(fi.min),
                        float(fi.smallest_normal), _dt.real_dtype(d) if d.kind == "c" else d)


def iinfo(type: Any, /) -> iinfo_object:  # noqa: A002 - the standard's signature
    """Machine limits of an integer dtype."""
    d = _dtype_arg(type, "iinfo")
    if d.kind not in "iu":
        raise TypeError(f"iinfo: {d} is not an integer data type")
    ii = np.iinfo(d)
    return iinfo_object(int(ii.bits), int(ii.max), int(ii.min), d)
