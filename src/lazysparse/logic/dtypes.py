"""Array API dtypes, dtype kinds and type promotion (the standard's lattice, NumPy beyond it).

Promotion follows the Array API 2024.12 table for pairs of array dtypes inside one kind
(bool, signed/unsigned integer, real/complex floating, and the mixed int/uint pairs it
defines). Pairs the standard leaves unspecified (bool with int, int with float, int64 with
uint64) follow NumPy 2 unless ``strict=True``. Python scalars are *weak*: they take the
array operand's dtype when their kind fits (NEP 50 / the standard's scalar rules).

Mixed-kind arithmetic (implementation-defined in the standard) follows NumPy 2 too: a
binary function of a numeric kind takes a bool operand as the number 0/1
(:func:`accepts_kind`), so ``x * (x > t)`` is ``x``'s dtype; two bools compute as
:func:`bool_pair_operands` says (NumPy's loops: ``add`` stays bool, ``pow`` is int8,
``subtract`` raises).
"""

from __future__ import annotations

from typing import Any

import numpy as np

BOOL = np.dtype(np.bool_)
INT_DTYPES = tuple(np.dtype(t) for t in ("int8", "int16", "int32", "int64"))
UINT_DTYPES = tuple(np.dtype(t) for t in ("uint8", "uint16", "uint32", "uint64"))
REAL_FLOAT_DTYPES = (np.dtype("float32"), np.dtype("float64"))
COMPLEX_DTYPES = (np.dtype("complex64"), np.dtype("complex128"))
ALL_DTYPES: tuple[np.dtype, ...] = (
    BOOL, *INT_DTYPES, *UINT_DTYPES, *REAL_FLOAT_DTYPES, *COMPLEX_DTYPES
)
DEFAULT_INT = np.dtype("int64")
DEFAULT_FLOAT = np.dtype("float64")
DEFAULT_COMPLEX = np.dtype("complex128")
INDEX_DTYPE = np.dtype("int64")  # dtype of a Field used as a value

KIND_NAMES = (
    "bool", "signed integer", "unsigned integer", "integral", "real floating",
    "complex floating", "numeric", "real numeric", "floating-point", "integer or boolean",
    "any",
)


def as_dtype(dt: Any) -> np.dtype:
    """``np.dtype(dt)``, rejecting dtypes outside the Array API set with a TypeError."""
    try:
        d = np.dtype(dt)
    except TypeError as e:
        raise TypeError(f"not a data type: {dt!r}") from e
    if d not in ALL_DTYPES:
        raise TypeError(f"unsupported data type {d} (lazysparse supports the Array API dtypes: "
                        f"{', '.join(str(x) for x in ALL_DTYPES)})")
    return d


def isdtype(dtype: Any, kind: str | tuple[str, ...] | Any) -> bool:
    """Array API ``isdtype``: does ``dtype`` belong to ``kind`` (a kind name, dtype or tuple)."""
    d = np.dtype(dtype)
    if isinstance(kind, tuple):
        return any(isdtype(d, k) for k in kind)
    if not isinstance(kind, str):
        return d == np.dtype(kind)
    match kind:
        case "bool":
            return d == BOOL
        case "signed integer":
            return d in INT_DTYPES
        case "unsigned integer":
            return d in UINT_DTYPES
        case "integral":
            return d in INT_DTYPES or d in UINT_DTYPES
        case "real floating":
            return d in REAL_FLOAT_DTYPES
        case "complex floating":
            return d in COMPLEX_DTYPES
        case "floating-point":
            return d in REAL_FLOAT_DTYPES or d in COMPLEX_DTYPES
        case "real numeric":
            return d != BOOL and d not in COMPLEX_DTYPES and d in ALL_DTYPES
        case "numeric":
            return d != BOOL and d in ALL_DTYPES
        case "integer or boolean":
            return d == BOOL or d in INT_DTYPES or d in UINT_DTYPES
        case "any":
            return d in ALL_DTYPES
    raise ValueError(f"unknown dtype kind {kind!r}; expected one of {KIND_NAMES}")


# Kinds a bool operand of a binary function also satisfies, as the number 0/1 (NumPy 2:
# ``True + 1.5``, ``x * mask``, ``mask < 0.5``). Bitwise kinds ("integral") are not here:
# shifts and the other kind-bound functions keep their kinds.
BOOL_AS_NUMBER_KINDS = ("numeric", "real numeric")

# The operand dtype NumPy 2 computes a binary numeric function of two bools in, by operator
# name (``ufunc.resolve_dtypes((bool, bool, None))``): bool where it has a bool loop, int8
# where its smallest safe loop is int8; None where NumPy raises (``True - True``). Functions
# of the "float" dtype rule need no entry (they compute bools in float64, as integers).
_BOOL_PAIR_OPERANDS: dict[str, np.dtype | None] = {
    "add": BOOL, "multiply": BOOL, "maximum": BOOL, "minimum": BOOL,
    "less": BOOL, "less_equal": BOOL, "greater": BOOL, "greater_equal": BOOL,
    "floor_divide": np.dtype("int8"), "remainder": np.dtype("int8"), "pow": np.dtype("int8"),
    "subtract": None,
}


def accepts_kind(d: np.dtype, kind: str, nargs: int) -> bool:
    """Whether an argument of dtype ``d`` fits ``kind`` for a function of ``nargs``
    arguments: ``isdtype``, and a bool also fits the numeric kinds of binary functions
    (NumPy's mixed-kind arithmetic; unary functions keep the standard's kinds)."""
    return isdtype(d, kind) or (d == BOOL and nargs == 2 and kind in BOOL_AS_NUMBER_KINDS)


def bool_pair_operands(name: str) -> np.dtype:
    """The dtype a binary numeric function ``name`` computes two bool operands in (NumPy 2);
    TypeError where NumPy raises (``subtract``) or the function takes no bools."""
    if name == "subtract":
        raise TypeError("subtract: boolean subtraction is not supported (as in NumPy); use "
                        "bitwise_xor or logical_xor")
    d = _BOOL_PAIR_OPERANDS.get(name)
    if d is None:
        raise TypeError(f"{name}: arguments are both bool, expected a numeric dtype")
    return d


def _kind_rank(d: np.dtype) -> int:
    """0 bool, 1 integer, 2 real floating, 3 complex floating."""
    if d == BOOL:
        return 0
    if d.kind in "iu":
        return 1
    return 2 if d.kind == "f" else 3


def _standard_pair(a: np.dtype, b: np.dtype) -> bool:
    """Whether the Array API standard defines the promotion of ``a`` with ``b``."""
    ka, kb = _kind_rank(a), _kind_rank(b)
    if ka != kb:
        return {ka, kb} == {2, 3}
    if ka == 1 and a.kind != b.kind:
        u = a if a.kind == "u" else b
        return u.itemsize < 8
    return True


def promote_types(a: Any, b: Any, *, strict: bool = False) -> np.dtype:
    """Promote two array dtypes. ``strict`` raises TypeError outside the standard's table."""
    da, db = as_dtype(a), as_dtype(b)
    if strict and not _standard_pair(da, db):
        raise TypeError(f"the Array API standard does not define promotion of {da} with {db}")
    return as_dtype(np.promote_types(da, db))


def _python_scalar_rank(x: Any) -> int:
    if isinstance(x, bool):
        return 0
    if isinstance(x, int):
        return 1
    return 2 if isinstance(x, float) else 3


def is_python_scalar(x: Any) -> bool:
    """A Python bool/int/float/complex (weakly typed), not a NumPy scalar."""
    return isinstance(x, bool | int | float | complex) and not isinstance(x, np.generic)


_DEFAULT_FOR_RANK = {0: BOOL, 1: DEFAULT_INT, 2: DEFAULT_FLOAT, 3: DEFAULT_COMPLEX}


def _with_weak_scalar(d: np.dtype, rank: int) -> np.dtype:
    """The dtype of ``d`` combined with a Python scalar of kind ``rank``."""
    dr = _kind_rank(d)
    if rank <= dr:
        return d
    if rank == 3:
        return np.dtype("complex64") if d == np.dtype("float32") else DEFAULT_COMPLEX
    return _DEFAULT_FOR_RANK[rank]


def dtype_of(x: Any) -> np.dtype | None:
    """The dtype of an array-like/dtype/NumPy scalar, or None for a Python scalar."""
    if is_python_scalar(x):
        return None
    if not isinstance(x, type | np.dtype | str) and hasattr(x, "dtype"):
        return as_dtype(x.dtype)
    return as_dtype(x)


def result_type(*args: Any, strict: bool = False) -> np.dtype:
    """Array API ``result_type`` over dtypes, arrays, NumPy scalars and weak Python scalars."""
    if not args:
        raise ValueError("result_type needs at least one argument")
    strong = [d for d in (dtype_of(a) for a in args) if d is not None]
    weak = [_python_scalar_rank(a) for a in args if is_python_scalar(a)]
    if strong:
        res = strong[0]
        for d in strong[1:]:
            res = promote_types(res, d, strict=strict)
    else:
        res = _DEFAULT_FOR_RANK[max(weak)]
        weak = []
    for rank in weak:
        res = _with_weak_scalar(res, rank)
    return res


def real_dtype(d: np.dtype) -> np.dtype:
    """The real counterpart of a complex dtype (other dtypes unchanged)."""
    if d == np.dtype("complex64"):
        return np.dtype("float32")
    if d == np.dtype("complex128"):
        return DEFAULT_FLOAT
    return d


def floating_dtype(d: np.dtype) -> np.dtype:
    """``d`` if floating-point, else the default float (what float-only math gives ints)."""
    return d if d.kind in "fc" else DEFAULT_FLOAT


def scalar_as(value: Any, dtype: Any) -> np.generic:
    """Convert a Python/NumPy scalar to a NumPy scalar of ``dtype``; OverflowError if it
    does not fit an integer dtype, TypeError for a complex value into a real dtype."""
    if type(value) is getattr(dtype, "type", None) and dtype in _SCALAR_DTYPES:
        return value  # already one (NumPy scalars are immutable)
    d = as_dtype(dtype)
    if d == BOOL and isinstance(value, complex | np.complexfloating):
        return np.bool_(value != 0)
    if isinstance(value, np.generic):
        if np.iscomplexobj(value) and d.kind != "c" and value.imag != 0:
            raise TypeError(f"cannot represent complex value {value!r} as {d}")
        if np.iscomplexobj(value) and d.kind != "c":
            value = value.real
        return np.asarray(value).astype(d)[()]
    if isinstance(value, complex) and d.kind != "c":
        if value.imag != 0:
            raise TypeError(f"cannot represent complex value {value!r} as {d}")
        value = value.real
    if d.kind in "iu" and isinstance(value, int) and not isinstance(value, bool):
        info = np.iinfo(d)
        if not info.min <= value <= info.max:
            raise OverflowError(f"Python integer {value} out of bounds for {d}")
    if d.kind in "iu" and isinstance(value, float):
        if not np.isfinite(value):
            raise ValueError(f"cannot convert {value!r} to integer dtype {d}")
    return np.asarray(value).astype(d)[()]


# --- casting on writes: in-place operators and ``__setitem__`` ---------------------------

def can_store(result: Any, target: Any) -> bool:
    """Whether an in-place operator may store a result of dtype ``result`` in an array of
    dtype ``target``: NumPy's ``same_kind`` casting (a safe cast, or a narrower dtype of the
    same kind: ``float64`` into ``float32`` yes, ``float64`` into ``int64`` no)."""
    return bool(np.can_cast(np.dtype(result), np.dtype(target), casting="same_kind"))


def check_in_place(what: str, result: Any, target: Any) -> None:
    """TypeError (naming ``what``, the operator, and both dtypes) unless ``can_store``: the
    one casting rule of every in-place operator (``x /= 1.5`` on integers refuses, as NumPy
    does, instead of truncating)."""
    if not can_store(result, target):
        raise TypeError(f"{what}: cannot cast the result dtype {np.dtype(result)} to the "
                        f"array's dtype {np.dtype(target)} with casting rule 'same_kind' "
                        f"(as NumPy); compute it out of place for a {np.dtype(result)} "
                        f"result")


def check_assignable(value: Any, target: Any) -> None:
    """TypeError for assigning values of dtype ``value`` (an array or NumPy scalar) to an
    array of dtype ``target`` when the cast would drop an imaginary part (complex into an
    integer or real floating array: NumPy only warns). Every other pair casts, as NumPy's
    assignment does (unsafe casting: ``1.7`` into ``int64`` is ``1``)."""
    v, t = np.dtype(value), np.dtype(target)
    if v.kind == "c" and t.kind in "iuf":
        raise TypeError(f"cannot assign {v} values to a {t} array: the imaginary part "
                        f"would be discarded (take .real explicitly)")


def assigned_scalar(value: Any, target: Any) -> np.generic:
    """Python scalar ``value`` as ``x[k] = value`` stores it in a ``target`` array, with
    NumPy 2's rule: a bool array takes its truth value; an integer array ``int(value)``
    (a float truncates; OverflowError when it does not fit, ValueError for NaN); a
    complex value into an integer or real array is a TypeError."""
    d = as_dtype(target)
    if d == BOOL:
        return np.bool_(bool(value))
    if isinstance(value, complex) and d.kind != "c":
        raise TypeError(f"cannot assign complex {value!r} to a {d} array: the imaginary "
                        f"part would be discarded")
    if d.kind in "iu" and isinstance(value, float):
        value = int(value)  # truncates; ValueError for NaN, OverflowError for infinity
    return scalar_as(value, d)


# dtypes whose NumPy scalar type names exactly one dtype (scalar_as's fast path)
_SCALAR_DTYPES = frozenset(np.dtype(t) for t in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128"))


def dtype_min(d: np.dtype) -> np.generic:
    """The smallest value of ``d`` (-inf for floats, False for bool)."""
    if d == BOOL:
        return np.bool_(False)
    if d.kind in "iu":
        return d.type(np.iinfo(d).min)
    return d.type(-np.inf)


def dtype_max(d: np.dtype) -> np.generic:
    """The largest value of ``d`` (+inf for floats, True for bool)."""
    if d == BOOL:
        return np.bool_(True)
    if d.kind in "iu":
        return d.type(np.iinfo(d).max)
    return d.type(np.inf)
