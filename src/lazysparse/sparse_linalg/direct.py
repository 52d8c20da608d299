"""Direct least squares: ``lstsq(A, b)`` on a sparse matrix by one cached sparse LU of
the augmented system (``api/stored/sparse_solve.py``), never densifying ``A``.

The Array API's ``linalg`` has no ``lstsq`` and ``np.linalg.lstsq`` refuses lazysparse
arrays, so this is the sparse path; ``lsqr`` is the iterative one (any device, rank
deficient matrices, an operator ``A``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.stored import sparse_solve
from lazysparse.sparse_linalg.operators import xp


def lstsq(A: Any, b: Any) -> LazyArray:
    """The least-squares solution ``x`` minimizing ``||A x - b||`` (the minimum-norm
    solution for a wide ``A`` of full row rank); ``b`` of shape ``(m,)`` or ``(m, k)``.
    A sparse cpu ``A`` is factorized once (cached for that array, as ``xp.linalg.solve``
    is); a dense ``A`` uses NumPy's ``lstsq``. A rank-deficient sparse ``A`` raises
    ``numpy.linalg.LinAlgError`` (use ``lsqr``)."""
    a = A if isinstance(A, LazyArray) else xp.asarray(A)
    if a.ndim != 2:
        raise ValueError(f"lstsq: A must be 2-D, got shape {a.shape}")
    bv = b if isinstance(b, LazyArray) else xp.asarray(b, device=a.device)
    if bv.ndim not in (1, 2) or bv.shape[0] != a.shape[0]:
        raise ValueError(f"lstsq: b has shape {bv.shape}, expected ({a.shape[0]},) or "
                         f"({a.shape[0]}, k)")
    if a.dtype.kind not in "biufc" or bv.dtype.kind not in "biufc":
        raise TypeError(f"lstsq: numeric arrays expected, got {a.dtype} and {bv.dtype}")
    if a.shape[0] == 0 or a.shape[1] == 0:
        dtype = sparse_solve.solve_dtype(a.dtype, bv.dtype)
        return xp.zeros((a.shape[1], *bv.shape[1:]), dtype=dtype, device=a.device)
    if sparse_solve.lstsq_applies(a, bv):
        return sparse_solve.lstsq(a, bv)
    if a.device.name != "cpu":
        raise ValueError("lstsq: the direct solve runs on the cpu; use "
                         "xp.sparse_linalg.lsqr for arrays on another device")
    if a.format not in (None, "dense") and not bool(np.asarray(a.fill_value) == 0):
        raise ValueError("lstsq: a sparse A with a non-zero fill value is not supported")
    dtype = sparse_solve.solve_dtype(a.dtype, bv.dtype)
    x = np.linalg.lstsq(np.asarray(a).astype(dtype), np.asarray(bv).astype(dtype),
                        rcond=None)[0]
    return xp.asarray(x, device=a.device)
