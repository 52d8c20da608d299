"""Sparse direct solve for ``xp.linalg.solve``: SuperLU (scipy's ``splu``) on the stored
entries, cached per computed matrix.

A dense LU of a sparse n x n matrix costs O(n^3) time and n^2 memory (24 s against 25 ms for
``spsolve`` on a 10^4 x 10^4 Laplacian); ``splu`` factorizes the CSC form of the stored
entries. The factorization is kept for the array (dropped when the array goes) and
the tensor it was built from (a new value after ``x[...] = v`` is factorized again), so
repeated solves with one matrix pay one factorization.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.stored import eager
from lazysparse.formats.compiled.sync import KeyLocks
from lazysparse.formats.tensor import Tensor
from lazysparse.logic import dtypes as _dt

# dtypes SuperLU factorizes (s, d, c, z)
_LU_DTYPES = frozenset(np.dtype(t) for t in ("float32", "float64", "complex64", "complex128"))

# id(array) -> (a weak reference to the array, the tensor factorized, {dtype: SuperLU});
# keyed by id since arrays compare elementwise (no WeakKeyDictionary); the weak
# reference's callback drops the entry when the array goes
_FACTORS: dict[int, tuple[weakref.ref[LazyArray], Tensor, dict[Any, Any]]] = {}
_FACTORING = KeyLocks()


def solve_dtype(a: np.dtype, b: np.dtype) -> np.dtype:
    """The result dtype of ``solve`` (NumPy's: integers compute in float64; an integer or
    bool right-hand side takes the matrix's float dtype)."""
    if a.kind in "iu":
        a = np.dtype(_dt.DEFAULT_FLOAT)
    return np.result_type(a, b if b.kind not in "iub" else a)


def applies(x1: LazyArray, x2: LazyArray) -> bool:
    """Whether the sparse path serves ``solve(x1, x2)``: a 2-D square sparse cpu matrix with
    fill value 0 and a right-hand side of shape ``(n,)`` or ``(n, k)`` (batches, broadcasts
    and dense matrices keep the dense path)."""
    if x1.ndim != 2 or x2.ndim not in (1, 2) or x1.device.name != "cpu":
        return False
    n = x1.shape[0]
    if n == 0 or x1.shape[1] != n or x2.shape[0] != n:
        return False
    if solve_dtype(x1.dtype, x2.dtype) not in _LU_DTYPES:
        return False
    if not bool(np.asarray(x1.fill_value) == 0):
        return False
    return not eager.is_dense(x1.tensor())


def factorization(x1: LazyArray, dtype: np.dtype, build: bool = True) -> Any:
    """The SuperLU factorization of ``x1`` in ``dtype`` (cached; LinAlgError if singular).
    ``build=False`` only sets up ``x1``'s cache entry (for the least-squares factors)."""
    t = x1.tensor()
    key = id(x1)
    with _FACTORING.holding(key):  # threads solving with one matrix factorize it once
        return _factorize(x1, t, key, dtype, build)


def _factorize(x1: LazyArray, t: Tensor, key: int, dtype: np.dtype, build: bool) -> Any:
    """``factorization``'s cache lookup and LU (the caller holds ``x1``'s key lock)."""
    entry = _FACTORS.get(key)
    if entry is None or entry[0]() is not x1 or entry[1] is not t:
        ref = entry[0] if entry is not None and entry[0]() is x1 else weakref.ref(
            x1, lambda _r, k=key: _FACTORS.pop(k, None))
        entry = (ref, t, {})
        _FACTORS[key] = entry
    if not build:
        return None
    lu = entry[2].get(dtype)
    if lu is None:
        # scipy.sparse.linalg loads with the first sparse solve, not ``import lazysparse``
        import scipy.sparse.linalg as spla

        a = t.to_scipy("csc").astype(dtype)
        try:
            lu = spla.splu(a)
        except RuntimeError as e:  # "Factor is exactly singular"
            raise np.linalg.LinAlgError(f"solve: Singular matrix ({e})") from None
        entry[2][dtype] = lu
    return lu


def solve(x1: LazyArray, x2: LazyArray) -> LazyArray:
    """``x1 @ out = x2`` by a cached sparse LU of ``x1`` (``applies`` must hold)."""
    dtype = solve_dtype(x1.dtype, x2.dtype)
    lu = factorization(x1, dtype)
    b = eager.to_numpy(x2, "solve").astype(dtype, copy=False)
    out = lu.solve(np.ascontiguousarray(b))
    if not np.all(np.isfinite(out)) and np.all(np.isfinite(b)):
        raise np.linalg.LinAlgError("solve: Singular matrix (non-finite solution)")
    return eager.from_numpy(out.astype(dtype, copy=False), x1.device)


# --- least squares ----------------------------------------------------------------------
# The Array API has no ``lstsq`` and ``np.linalg.lstsq`` refuses a lazysparse array, so
# the sparse least-squares solve is ``xp.sparse_linalg.lstsq``. Normal equations
# (``A^T A x = A^T b``) would square the condition number; scipy has no sparse QR. The
# augmented system keeps it ~cond(A) and is one sparse LU, cached like ``solve``'s:
#   tall or square (full column rank):  [[I, A], [A^T, 0]] [r; x] = [b; 0]  (r = b - A x)
#   wide (full row rank, minimum norm):  [[I, A^T], [A, 0]] [x; -y] = [0; b]

_AUGMENTED = "augmented"


def lstsq_applies(x1: LazyArray, x2: LazyArray) -> bool:
    """Whether ``lstsq(x1, x2)`` can factorize: a 2-D sparse cpu matrix with fill 0 and a
    right-hand side of shape ``(m,)`` or ``(m, k)``, in a dtype SuperLU takes."""
    if x1.ndim != 2 or x2.ndim not in (1, 2) or x1.device.name != "cpu":
        return False
    if x2.shape[0] != x1.shape[0] or solve_dtype(x1.dtype, x2.dtype) not in _LU_DTYPES:
        return False
    return bool(np.asarray(x1.fill_value) == 0) and not eager.is_dense(x1.tensor())


def _augmented_factorization(x1: LazyArray, dtype: np.dtype) -> Any:
    """The SuperLU factorization of ``x1``'s augmented system (cached with ``solve``'s
    factorizations of the same array; LinAlgError when ``x1`` is rank deficient)."""
    with _FACTORING.holding(id(x1)):  # factorize once (re-entered by factorization)
        factorization(x1, dtype, build=False)
        return _augmented_lu(x1, _FACTORS[id(x1)][2], dtype)


def _augmented_lu(x1: LazyArray, factors: dict[Any, Any], dtype: np.dtype) -> Any:
    """The augmented system's LU from ``factors``, made and kept there when missing."""
    lu = factors.get((_AUGMENTED, dtype))
    if lu is None:
        import scipy.sparse as sps
        import scipy.sparse.linalg as spla

        a = x1.tensor().to_scipy("csc").astype(dtype)
        m, n = a.shape
        inner = a if m >= n else a.conj().T
        k = inner.shape[0]
        aug = sps.block_array([[sps.eye_array(k, dtype=dtype), inner],
                               [inner.conj().T, None]], format="csc")
        try:
            lu = spla.splu(aug)
        except RuntimeError as e:
            raise np.linalg.LinAlgError(
                f"lstsq: the matrix is rank deficient ({e}); use xp.sparse_linalg.lsqr") from None
        factors[(_AUGMENTED, dtype)] = lu
    return lu


def lstsq(x1: LazyArray, x2: LazyArray) -> LazyArray:
    """The least-squares solution of ``x1 @ out = x2`` (the minimum-norm one for a wide
    ``x1``) from the cached sparse LU of the augmented system (``lstsq_applies`` must hold)."""
    dtype = solve_dtype(x1.dtype, x2.dtype)
    lu = _augmented_factorization(x1, dtype)
    m, n = x1.shape
    b = eager.to_numpy(x2, "lstsq").astype(dtype, copy=False)
    tail = b.shape[1:]
    if m >= n:  # [b; 0] -> [r; x]
        rhs = np.concatenate([b, np.zeros((n, *tail), dtype=dtype)])
        out = lu.solve(np.ascontiguousarray(rhs))[m:]
    else:  # [0; b] -> [x; -y]
        rhs = np.concatenate([np.zeros((n, *tail), dtype=dtype), b])
        out = lu.solve(np.ascontiguousarray(rhs))[:n]
    if not np.all(np.isfinite(out)) and np.all(np.isfinite(b)):
        raise np.linalg.LinAlgError("lstsq: the matrix is rank deficient (non-finite "
                                    "solution); use xp.sparse_linalg.lsqr")
    return eager.from_numpy(out.astype(dtype, copy=False), x1.device)
