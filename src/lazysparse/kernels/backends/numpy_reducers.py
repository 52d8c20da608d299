"""How a reduction operator folds a whole axis at once in NumPy (a ufunc's ``reduce``, or
keeping the first/last value): what the NumPy and run-length runners fold with. Which
operators have such a fold is a runner fact (``compile.planning.runners.numpy_folds``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.kernels.compile.planning.runners import KEEPS_LAST, numpy_folds
from lazysparse.logic.operators import Operator


class Reducer:
    """Folds the last axis of an array with a reduction operator, starting from ``init``
    (``acc = op(acc, x)`` in index order, as the compiled kernels define it)."""

    def reduce(self, arr: np.ndarray, init: Any, dtype: np.dtype) -> np.ndarray:
        """The fold of ``arr`` (already at the operand dtype) along its last axis."""
        raise NotImplementedError

    def reduce_quiet(self, arr: np.ndarray, init: Any, dtype: np.dtype) -> np.ndarray:
        """:meth:`reduce` for a caller that already silences floating-point warnings."""
        return self.reduce(arr, init, dtype)


@dataclass(frozen=True)
class UfuncReducer(Reducer):
    """A binary ufunc's ``.reduce`` (sequential for non-reorderable ufuncs, pairwise sums
    for ``add`` on floats, as NumPy's own ``sum``)."""

    ufunc: np.ufunc

    def reduce(self, arr: np.ndarray, init: Any, dtype: np.dtype) -> np.ndarray:
        with np.errstate(all="ignore"):
            return self.reduce_quiet(arr, init, dtype)

    def reduce_quiet(self, arr: np.ndarray, init: Any, dtype: np.dtype) -> np.ndarray:
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


def reducer_for(op: Operator, acc_dtype: np.dtype, arg_dtype: np.dtype) -> Reducer | None:
    """The vectorized fold of ``op`` accumulating ``arg_dtype`` values at ``acc_dtype``, or
    None when NumPy has none (``numpy_folds``)."""
    if not numpy_folds(op, acc_dtype, arg_dtype):
        return None
    if op in KEEPS_LAST:
        return KeepReducer(KEEPS_LAST[op])
    return UfuncReducer(op.numpy)


__all__ = ["KeepReducer", "Reducer", "UfuncReducer", "reducer_for"]
