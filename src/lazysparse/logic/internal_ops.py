"""Operators the api and kernels need beyond the standard's elementwise functions.

- ``where(c, a, b)``: ifelse.
- ``astype_op(dtype)``: cast, one operator per target dtype (``params=(dtype name,)``).
- ``first(a, b) = a`` / ``overwrite(a, b) = b``: "keep one" reductions for unique writes.
- ``isequal(a, b)``: equality where NaN equals NaN.
- ``coalesce(a, b, fill)``: ``a`` unless it is the fill value, else ``b`` (concatenation:
  each operand is padded with its fill outside its own tile).

argmin/argmax are pair-free (two aggregates, no tuple values):
``m = aggregate(minimum, +inf, x, i)`` then
``argmin = aggregate(minimum, n, mapjoin(where, mapjoin(isequal, x, m), i, n), i)``,
the first index whose value equals the minimum; ``isequal`` makes a NaN minimum (NumPy's
NaN-first rule) find the first NaN.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from lazysparse.logic.dtypes import as_dtype
from lazysparse.logic.elementwise_ops import by_kind
from lazysparse.logic.operator_registry import (
    OPERATORS,
    Operator,
    Selection,
    register,
    register_family,
)


def _isequal_np(a: Any, b: Any) -> Any:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "c":
        return _isequal_np(a.real, b.real) & _isequal_np(a.imag, b.imag)
    eq = np.equal(a, b)
    if a.dtype.kind == "f":
        eq = eq | (np.isnan(a) & np.isnan(b))
    return eq


def _first_np(a: Any, b: Any) -> Any:
    return np.broadcast_to(a, np.broadcast_shapes(np.shape(a), np.shape(b))).copy()


def _overwrite_np(a: Any, b: Any) -> Any:
    return np.broadcast_to(b, np.broadcast_shapes(np.shape(a), np.shape(b))).copy()


WHERE = register(Operator(
    "where", 3, np.where, "({1} if {0} else {2})", "({0} ? {1} : {2})", "where",
    ("any",), selections=(Selection(0, False, 2), Selection(0, True, 1)),
    keeps_finite=True, doc="ifelse(c, a, b)"))
ISEQUAL = register(Operator(
    "isequal", 2, _isequal_np,
    by_kind("({0} == {1})", f="lsops.isequal_float({0}, {1})",
            c="lsops.isequal_complex({0}, {1})"),
    "ls_isequal({0}, {1})", "compare", ("any",), commutative=True,
    doc="a == b, with NaN equal to NaN"))
FIRST = register(Operator(
    "first", 2, _first_np, "{0}", "{0}", "promote", ("any",), associative=True,
    idempotent=True, doc="first(a, b) = a"))
OVERWRITE = register(Operator(
    "overwrite", 2, _overwrite_np, "{1}", "{1}", "promote", ("any",), associative=True,
    idempotent=True, doc="overwrite(a, b) = b"))
COALESCE = register(Operator(
    "coalesce", 3, lambda a, b, fill: np.where(_isequal_np(a, fill), b, a),
    by_kind("lsops.coalesce_int({0}, {1}, {2})", f="lsops.coalesce_float({0}, {1}, {2})",
            c="lsops.coalesce_complex({0}, {1}, {2})"),
    "(ls_isequal({0}, {2}) ? {1} : {0})", "coalesce", ("any",),
    doc="a unless a is the fill value, else b"))

_CUDA_TYPES = {
    "bool": "bool", "int8": "signed char", "int16": "short", "int32": "int",
    "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
    "uint32": "unsigned int", "uint64": "unsigned long long", "float32": "float",
    "float64": "double", "complex64": "complex<float>", "complex128": "complex<double>",
}


def cuda_type(dtype: Any) -> str:
    """The CUDA C type name of a dtype (CuPy's ``complex<T>`` for complex)."""
    return _CUDA_TYPES[as_dtype(dtype).name]


@cache
def astype_op(dtype: Any) -> Operator:
    """The cast to ``dtype`` (complex to real keeps the real part, to bool is ``!= 0``)."""
    target = as_dtype(dtype)
    t = target.name

    def numba_form(dtypes: tuple[np.dtype, ...]) -> str:
        src = dtypes[0]
        if target.kind == "b":
            return "({0} != 0)"
        if src.kind == "c" and target.kind != "c":
            return f"np.{t}({{0}}.real)"
        return f"np.{t}({{0}})"

    def cuda_form(dtypes: tuple[np.dtype, ...]) -> str:
        src = dtypes[0]
        if target.kind == "b":
            return "ls_nonzero({0})"
        if src.kind == "c" and target.kind != "c":
            return f"static_cast<{cuda_type(target)}>(({{0}}).real())"
        return f"static_cast<{cuda_type(target)}>({{0}})"

    return Operator("astype", 1, lambda x: x, numba_form, cuda_form, "cast", ("any",),
                    params=(t,), idempotent=True, doc=f"cast to {t}")


register_family("astype", astype_op)

REDUCTIONS: dict[str, Operator] = {
    "sum": OPERATORS["add"], "prod": OPERATORS["multiply"], "max": OPERATORS["maximum"],
    "min": OPERATORS["minimum"], "any": OPERATORS["logical_or"],
    "all": OPERATORS["logical_and"],
}
