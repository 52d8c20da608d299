"""The ``linalg`` extension's factorizations and other dense-by-nature functions.

det, inv, solve, cholesky, qr, svd, svdvals, eigh, eigvalsh, slogdet, pinv, matrix_rank and
cross compute their inputs, densify them (``DensifyError`` past the densify limit) and call
``numpy.linalg``: their results are dense whatever the input's sparsity. Integer inputs
compute in float64 (NumPy's rule); bool inputs are rejected. ``diagonal`` works on the stored
entries (a sparse input gives a sparse diagonal).
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.building.lazy_plans import check_array, check_kind, reduction_is_dense
from lazysparse.api.stored import eager, sparse_solve
from lazysparse.logic import dtypes as _dt

QRResult = namedtuple("QRResult", ["Q", "R"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])


def _matrix(x: Any, fname: str, square: bool = False) -> tuple[LazyArray, np.ndarray]:
    """``x`` checked (numeric, >= 2-D, square if asked) and densified in a float dtype."""
    x = check_array(x, fname)
    check_kind(x, "numeric", fname)
    if x.ndim < 2:
        raise ValueError(f"{fname}: x must have at least 2 dimensions, got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{fname}: x must be a stack of square matrices, got shape {x.shape}")
    a = eager.to_numpy(x, fname)
    if a.dtype.kind in "iu":
        a = a.astype(_dt.DEFAULT_FLOAT)
    return x, a


def _out(a: Any, like: LazyArray) -> LazyArray:
    return eager.from_numpy(np.asarray(a), like.device)


def _run(fname: str, fn: Any, *args: Any) -> Any:
    """Call a NumPy routine; its LinAlgError (singular, not positive definite ...) becomes a
    ValueError naming ``fname``."""
    try:
        return fn(*args)
    except np.linalg.LinAlgError as e:
        raise ValueError(f"{fname}: {e}") from e


def det(x: Any, /) -> LazyArray:
    """Determinant of each square matrix (computed with NumPy)."""
    x, a = _matrix(x, "det", square=True)
    return _out(_run("det", np.linalg.det, a), x)


def slogdet(x: Any, /) -> SlogdetResult:
    """Sign and natural log of the absolute determinant."""
    x, a = _matrix(x, "slogdet", square=True)
    s, ld = _run("slogdet", np.linalg.slogdet, a)
    return SlogdetResult(_out(s, x), _out(ld, x))


def inv(x: Any, /) -> LazyArray:
    """Inverse of each square matrix (ValueError if singular)."""
    x, a = _matrix(x, "inv", square=True)
    return _out(_run("inv", np.linalg.inv, a), x)


def solve(x1: Any, x2: Any, /) -> LazyArray:
    """Solution of ``x1 @ out = x2`` (a 1-D ``x2`` is a vector, as the standard says).

    A sparse 2-D ``x1`` (fill value 0) with ``x2`` of shape ``(n,)`` or ``(n, k)`` is
    factorized sparsely (``api/stored/sparse_solve.py``, SuperLU cached per computed matrix); other
    inputs (dense, batched, broadcast) densify and call ``numpy.linalg.solve``."""
    x1c = check_array(x1, "solve")
    check_kind(x1c, "numeric", "solve")
    x2 = check_array(x2, "solve", "x2")
    check_kind(x2, "numeric", "solve", "x2")
    if sparse_solve.applies(x1c, x2):
        return sparse_solve.solve(x1c, x2)
    x1, a = _matrix(x1c, "solve", square=True)
    b = eager.to_numpy(x2, "solve")
    dt = np.result_type(a.dtype, b.dtype if b.dtype.kind not in "iub" else a.dtype)
    a, b = a.astype(dt), b.astype(dt)
    if b.ndim == 1:
        if b.shape[0] != a.shape[-1]:
            raise ValueError(f"solve: x2 of shape {b.shape} does not match x1 of shape "
                             f"{a.shape}")
        out = _run("solve", np.linalg.solve, a, b[..., None])[..., 0]
    else:
        out = _run("solve", np.linalg.solve, a, b)
    return _out(out, x1)


def cholesky(x: Any, /, *, upper: bool = False) -> LazyArray:
    """Cholesky factor (lower, or upper with ``upper=True``) of Hermitian positive-definite
    matrices."""
    x, a = _matrix(x, "cholesky", square=True)
    lower = _run("cholesky", np.linalg.cholesky, a)
    if upper:
        lower = np.conj(np.swapaxes(lower, -1, -2))
    return _out(lower, x)


def qr(x: Any, /, *, mode: str = "reduced") -> QRResult:
    """QR decomposition (``mode`` 'reduced' or 'complete')."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    x, a = _matrix(x, "qr")
    q, r = _run("qr", np.linalg.qr, a, mode)
    return QRResult(_out(q, x), _out(r, x))


def svd(x: Any, /, *, full_matrices: bool = True) -> SVDResult:
    """Singular value decomposition ``U @ diag(S) @ Vh``."""
    x, a = _matrix(x, "svd")
    u, s, vh = _run("svd", lambda m: np.linalg.svd(m, full_matrices=full_matrices), a)
    return SVDResult(_out(u, x), _out(s, x), _out(vh, x))


def svdvals(x: Any, /) -> LazyArray:
    """Singular values, descending."""
    x, a = _matrix(x, "svdvals")
    return _out(_run("svdvals", lambda m: np.linalg.svd(m, compute_uv=False), a), x)


def eigh(x: Any, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices."""
    x, a = _matrix(x, "eigh", square=True)
    w, v = _run("eigh", np.linalg.eigh, a)
    return EighResult(_out(w, x), _out(v, x))


def eigvalsh(x: Any, /) -> LazyArray:
    """Eigenvalues (ascending) of Hermitian matrices."""
    x, a = _matrix(x, "eigvalsh", square=True)
    return _out(_run("eigvalsh", np.linalg.eigvalsh, a), x)


def _rtol(rtol: Any, a: np.ndarray, fname: str) -> Any:
    if rtol is None:
        return max(a.shape[-2:]) * np.finfo(_dt.real_dtype(a.dtype)).eps
    if isinstance(rtol, LazyArray):
        return eager.to_numpy(rtol, fname)[..., None]
    if isinstance(rtol, bool) or not isinstance(rtol, int | float | np.floating):
        raise TypeError(f"{fname}: rtol must be a real number or array, got {rtol!r}")
    return rtol


def pinv(x: Any, /, *, rtol: Any = None) -> LazyArray:
    """Moore-Penrose pseudo-inverse (singular values below ``rtol * max`` are dropped)."""
    x, a = _matrix(x, "pinv")
    r = _rtol(rtol, a, "pinv")
    if isinstance(r, np.ndarray):
        r = r[..., 0]
    return _out(_run("pinv", lambda m: np.linalg.pinv(m, rtol=r), a), x)


def matrix_rank(x: Any, /, *, rtol: Any = None) -> LazyArray:
    """Number of singular values above ``rtol`` times the largest (default-int result)."""
    x, a = _matrix(x, "matrix_rank")
    if a.shape[-1] == 0 or a.shape[-2] == 0:
        return _out(np.zeros(a.shape[:-2], dtype=_dt.DEFAULT_INT), x)
    s = _run("matrix_rank", lambda m: np.linalg.svd(m, compute_uv=False), a)
    tol = s.max(axis=-1, keepdims=True) * _rtol(rtol, a, "matrix_rank")
    return _out(np.count_nonzero(s > tol, axis=-1).astype(_dt.DEFAULT_INT), x)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> LazyArray:
    """Cross product of 3-element vectors along ``axis`` (computed with NumPy)."""
    x1 = check_array(x1, "cross", "x1")
    x2 = check_array(x2, "cross", "x2")
    check_kind(x1, "numeric", "cross", "x1")
    check_kind(x2, "numeric", "cross", "x2")
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
        raise TypeError(f"cross: axis must be an int, got {type(axis).__name__}")
    nmin = min(x1.ndim, x2.ndim)
    if nmin == 0 or not -nmin <= axis < 0:
        raise np.exceptions.AxisError(
            f"cross: axis must be a negative integer in [-{nmin}, -1], got {axis}")
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"cross: axis {axis} must have size 3 in both operands, got shapes "
                         f"{x1.shape} and {x2.shape}")
    a, b = eager.to_numpy(x1, "cross"), eager.to_numpy(x2, "cross")
    dt = _dt.result_type(x1.dtype, x2.dtype)
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"cross: shapes {x1.shape} and {x2.shape} do not broadcast") from None
    with np.errstate(all="ignore"):
        out = np.cross(a.astype(dt), b.astype(dt), axis=axis)
    return _out(out.astype(dt), x1)


def diagonal(x: Any, /, *, offset: int = 0) -> LazyArray:
    """The ``offset`` diagonal of the last two axes, read from the stored entries; dense
    (as NumPy's and scipy's ``A.diagonal()``) unless its length is far past the entries
    stored, as a reduction to a vector (``plans.reduction_is_dense``): a Jacobi step's
    ``x / d`` then reads it by position."""
    x = check_array(x, "diagonal")
    if x.ndim < 2:
        raise ValueError(f"diagonal: x must have at least 2 dimensions, got {x.ndim}")
    if isinstance(offset, bool) or not isinstance(offset, int | np.integer):
        raise TypeError(f"diagonal: offset must be an int, got {type(offset).__name__}")
    n, m = x.shape[-2:]
    length = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    shape = (*x.shape[:-2], length)
    t = eager.tensor_of(x)
    coords, values = eager.stored_entries(t)
    keep = (coords[-1] - coords[-2]) == offset
    k = coords[-2][keep] - max(0, -offset)
    new = (*(c[keep] for c in coords[:-2]), k)
    vals = values[keep]
    if eager.is_dense(t) or reduction_is_dense((math.prod(shape),), t.dtype, int(t.nnz)):
        out = np.full(shape, t.fill_value, dtype=t.dtype)
        out[new] = vals
        return _out(out, x)
    return eager.from_coords(new, vals, shape, t.fill_value, x.device)


def identity_like(x: LazyArray) -> LazyArray:
    """Identity matrices with ``x``'s shape and dtype (``matrix_power(x, 0)``)."""
    out = np.zeros(x.shape, dtype=x.dtype)
    eager.check_dense_size(x.shape, x.dtype, "matrix_power(x, 0)")
    idx = np.arange(x.shape[-1])
    out[..., idx, idx] = 1
    return _out(out, x)


def singular_value_norm(x: LazyArray, ord: Any, keepdims: bool) -> LazyArray:  # noqa: A002
    """Matrix 2-norm (largest singular value), -2 (smallest) or nuclear (sum)."""
    _, a = _matrix(x, "matrix_norm")
    s = _run("matrix_norm", lambda m: np.linalg.svd(m, compute_uv=False), a)
    if s.shape[-1] == 0 and ord != "nuc":
        raise ValueError(f"matrix_norm: ord={ord} of an empty matrix has no identity")
    r = {2: np.max, -2: np.min, "nuc": np.sum}[ord](s, axis=-1)
    if keepdims:
        r = r[..., None, None]
    return _out(r.astype(_dt.real_dtype(a.dtype)), x)



EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])


def _complex_of(a: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out`` in the complex dtype matching ``a``'s precision (the standard's eig rule)."""
    want = np.dtype("complex64") if a.dtype in (np.float32, np.complex64) else np.complex128
    return np.asarray(out).astype(want)


def eig(x: Any, /) -> EigResult:
    """Eigenvalues and right eigenvectors of general square matrices (complex results)."""
    x, a = _matrix(x, "eig", square=True)
    w, v = _run("eig", np.linalg.eig, a)
    return EigResult(_out(_complex_of(a, w), x), _out(_complex_of(a, v), x))


def eigvals(x: Any, /) -> LazyArray:
    """Eigenvalues of general square matrices (complex results)."""
    x, a = _matrix(x, "eigvals", square=True)
    return _out(_complex_of(a, _run("eigvals", np.linalg.eigvals, a)), x)
