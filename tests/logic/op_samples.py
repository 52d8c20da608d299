"""Sample operand values per dtype for checking operator forms against NumPy."""

from __future__ import annotations

import itertools

import numpy as np

from lazysparse.logic.operators import Operator

REPRESENTATIVE_DTYPES = tuple(np.dtype(t) for t in (
    "bool", "int8", "int32", "int64", "uint8", "uint64", "float32", "float64", "complex64",
    "complex128"))


def sample_values(d: np.dtype) -> np.ndarray:
    """Edge-case-rich values of dtype ``d``."""
    if d.kind == "b":
        vals: list = [False, True]
    elif d.kind == "i":
        info = np.iinfo(d)
        vals = [0, 1, -1, 2, 3, -7, 5, info.max, info.min]
    elif d.kind == "u":
        vals = [0, 1, 2, 3, 7, np.iinfo(d).max]
    elif d.kind == "f":
        vals = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.75, 1e3, np.nan, np.inf, -np.inf]
    else:
        vals = [0, 1 + 0j, -1.5 + 2j, 0.5 - 0.25j, 3j, complex(np.nan, 0), complex(np.inf, 1)]
    return np.array(vals, dtype=d)


def operand_grid(op: Operator, d: np.dtype) -> list[np.ndarray]:
    """All combinations of sample values for ``op``'s arguments, every argument of dtype
    ``d`` (``where``'s condition is bool), restricted to valid inputs."""
    per_arg = []
    for i in range(op.nargs):
        per_arg.append(sample_values(np.dtype(bool) if (op.name == "where" and i == 0) else d))
    combos = list(itertools.product(*(range(len(v)) for v in per_arg)))
    cols = [np.array([per_arg[i][c[i]] for c in combos], dtype=per_arg[i].dtype)
            for i in range(op.nargs)]
    if op.name == "astype" and d.kind in "fc" and np.dtype(op.params[0]).kind in "iu":
        info = np.iinfo(np.dtype(op.params[0]))  # out-of-range float -> int is unspecified
        re = np.real(cols[0])
        keep = np.isfinite(re) & (re >= info.min) & (re <= info.max)
        cols = [c[keep] for c in cols]
    if op.name == "pow" and d.kind in "iu":
        keep = (cols[1] >= 0) & (cols[1] < 8)
        cols = [c[keep] for c in cols]
    return cols


def accepts(op: Operator, d: np.dtype) -> bool:
    """Whether ``op`` accepts all arguments of dtype ``d``."""
    args = [np.dtype(bool) if (op.name == "where" and i == 0) else d for i in range(op.nargs)]
    try:
        op.operand_dtypes(*args)
    except TypeError:
        return False
    return True
