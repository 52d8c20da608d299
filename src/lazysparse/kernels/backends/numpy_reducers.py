"""How a reduction operator folds a whole axis at once in NumPy (a ufunc's ``reduce``, or
keeping the first/last value): what the NumPy and run-length runners fold with, and what
decides whether they may run a query (``compile.runners``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.logic.operators import OPERATORS, Operator


class Reducer:
    """Folds the last axis of an array with a reduction operator, starting from ``init``
    (``acc = op(acc, x)`` in index order, as the compiled kernels define it)."""

    def reduce(self, arr: np.ndarray, init: Any, dtype: np.dtype) -> np.ndarray:
        """The fold of ``arr`` (already at the operand dtype) along its last axis."""
        raise NotImplementedError


@dataclass(frozen=True)
class UfuncReducer(Reducer):
    """A binary ufunc's ``.reduce`` (sequential for non-reorderable ufuncs, pairwise sums
    for ``add`` on floats, as NumPy's own ``sum``)."""

    ufunc: np.ufunc

    def reduce(self, arr: np.ndarray, init: Any, dtype: np.dtype) -> np.ndarray:
        with np.errstate(all="ignore"):
            return self.ufunc.reduce(arr, axis=-1, dtype=dtype, initial=init)


@dataclass(frozen=True)
class KeepReducer(Reducer):
    """``overwrite`` keeps the last value (``init`` on an empty axis); ``first`` keeps the
    accumulator, so its fold is ``init``."""

    keep_last: bool

    def reduce(self, arr: np.ndarray, init: Any, dtype: np.dtype) -> np.ndarray:
        out = np.full(arr.shape[:-1], init, dtype=dtype)
        if self.keep_last and arr.shape[-1] > 0:
            out[...] = arr[..., -1]
        return out


_KEEP = {OPERATORS["overwrite"]: KeepReducer(True), OPERATORS["first"]: KeepReducer(False)}


def reducer_for(op: Operator, acc_dtype: np.dtype, arg_dtype: np.dtype) -> Reducer | None:
    """The vectorized fold of ``op`` accumulating ``arg_dtype`` values at ``acc_dtype``, or
    None when NumPy has none (the operator is no binary ufunc, or its operand dtypes differ
    from the accumulator's, so each step would cast)."""
    if op in _KEEP:
        return _KEEP[op]
    fn = op.numpy
    if not (isinstance(fn, np.ufunc) and fn.nin == 2 and fn.nout == 1):
        return None
    ods = op.operand_dtypes(acc_dtype, arg_dtype)
    if ods[0] != acc_dtype or ods[1] != acc_dtype or op.result_dtype(*ods) != acc_dtype:
        return None
    return UfuncReducer(fn)


__all__ = ["KeepReducer", "Reducer", "UfuncReducer", "reducer_for"]
