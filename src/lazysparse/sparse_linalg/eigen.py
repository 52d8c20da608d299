"""A few extreme eigenpairs of a symmetric matrix: LOBPCG (``lobpcg``, scipy's
signature for the standard problem) and ``eigsh`` on top of it.

An iteration multiplies ``A`` with the block of preconditioned residuals (one sparse
times dense-block product), forms the Gram matrices ``S^T S`` and ``S^T A S`` of the
basis ``S = [X, W, P]`` in one compute, and solves the small Rayleigh–Ritz problem on the
host (a ``3k x 3k`` NumPy ``eigh``, after orthonormalizing the basis through the
eigendecomposition of ``S^T S``, dropping directions that became dependent). The new
blocks ``S C`` stay lazy arrays on the data's device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.sparse_linalg.operators import (
    Operator,
    Vector,
    as_operator,
    as_preconditioner,
    iterations,
    xp,
)

WHICH = ("LA", "SA")


@dataclass(frozen=True)
class _Block:
    """Basis vectors as columns of a dense ``n x k`` array, and ``A`` times them."""

    x: LazyArray
    ax: LazyArray


def _matmat(op: Operator, block: LazyArray) -> LazyArray:
    """``A @ block`` for a matrix (one product), column by column for an operator."""
    if op.matrix is not None:
        return op.matrix @ block
    cols = [op.matvec(block[:, j]) for j in range(block.shape[1])]
    return xp.stack(cols, axis=1)


def _rayleigh_ritz(s: _Block, k: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` extreme Ritz values of ``A`` on span(S) and their coefficients ``C``
    (``S C`` has orthonormal columns)."""
    gram, proj = xp.compute(s.x.T @ s.x, s.x.T @ s.ax)
    gram, proj = np.asarray(gram, dtype=np.float64), np.asarray(proj, dtype=np.float64)
    gram, proj = (gram + gram.T) / 2, (proj + proj.T) / 2
    g_vals, g_vecs = np.linalg.eigh(gram)
    keep = g_vals > max(g_vals.max(initial=0.0), 0.0) * 1e3 * np.finfo(np.float64).eps
    t = g_vecs[:, keep] / np.sqrt(g_vals[keep])
    vals, vecs = np.linalg.eigh(t.T @ proj @ t)
    order = np.argsort(vals)
    order = order[::-1][:k] if largest else order[:k]
    return vals[order], t @ vecs[:, order]


def _times(b: _Block, c: np.ndarray) -> _Block:
    """``S C`` and ``A S C`` (lazy)."""
    cd = xp.asarray(c.astype(b.x.dtype), device=b.x.device)
    return _Block(b.x @ cd, b.ax @ cd)


def _join(blocks: list[_Block]) -> _Block:
    """Columns of several blocks side by side (one copy)."""
    if len(blocks) == 1:
        return blocks[0]
    x = xp.concat([blk.x for blk in blocks], axis=1)
    ax = xp.concat([blk.ax for blk in blocks], axis=1)
    return _Block(x, ax)


def lobpcg(A: Any, X: Any, B: Any = None, M: Any = None, Y: Any = None,
           tol: float | None = None, maxiter: int | None = None, largest: bool = True
           ) -> tuple[np.ndarray, LazyArray]:
    """The ``k = X.shape[1]`` largest (or smallest) eigenvalues of a symmetric ``A`` and
    their eigenvectors, from the starting block ``X`` (``n x k``): ``(values, vectors)``
    as scipy's ``lobpcg`` (values descending for ``largest``, else ascending; vectors an
    ``n x k`` lazysparse array). ``M`` preconditions the residuals; ``tol`` bounds each
    residual's norm (default ``sqrt(eps) n``); ``maxiter`` defaults to 20. The generalized
    problem (``B``) and constraints (``Y``) are not supported."""
    if B is not None or Y is not None:
        raise ValueError("lobpcg: the generalized problem (B) and constraints (Y) are not "
                         "supported by the native lobpcg")
    xdev = X.device if isinstance(X, LazyArray) else None
    op = as_operator(A, "lobpcg", device=xdev)
    n = op.shape[0]
    if op.shape[1] != n:
        raise ValueError(f"lobpcg: A must be square, got shape {op.shape}")
    x = X if isinstance(X, LazyArray) else xp.asarray(X, device=op.device)
    if x.ndim == 1:
        x = xp.reshape(x, (n, 1)) if x.shape[0] == n else x
    if x.ndim != 2 or x.shape[0] != n:
        raise ValueError(f"lobpcg: X must have shape ({n}, k), got {x.shape}")
    k = x.shape[1]
    if not 0 < k <= n:
        raise ValueError(f"lobpcg: the block size k={k} must be in 1..{n}")
    dtype = np.result_type(op.dtype, x.dtype)
    dtype = dtype if dtype.kind == "f" else np.dtype(np.float64)
    x = xp.asformat(xp.astype(x, dtype), "dense")
    psolve = as_preconditioner(M, n, op.device, "lobpcg")
    tol = math.sqrt(float(np.finfo(dtype).eps)) * n if tol is None else float(tol)
    maxiter = iterations(maxiter, 20, "lobpcg")
    return _iterate(op, _Block(x, _matmat(op, x)), psolve, k, largest, tol, maxiter)


def _iterate(op: Operator, xb: _Block, psolve: Vector | None, k: int, largest: bool, tol: float,
             maxiter: int) -> tuple[np.ndarray, LazyArray]:
    """The LOBPCG loop from the block ``xb`` (Rayleigh–Ritz on ``[X, W, P]``)."""
    vals, c = _rayleigh_ritz(xb, k, largest)
    xb = _computed(_times(xb, c))
    p: _Block | None = None
    for _ in range(maxiter):
        lam = xp.asarray(vals.astype(xb.x.dtype), device=xb.x.device)
        r = xb.ax - xb.x * lam[None, :]
        r, rnorm = xp.compute(r, xp.sum(r * r, axis=0))
        if np.all(np.sqrt(np.maximum(np.asarray(rnorm), 0.0)) <= tol):
            break
        w = r if psolve is None else _precondition(psolve, r)
        w = xp.compute(xp.asformat(w, "dense"))
        wb = _Block(w, _matmat(op, w))
        s = _computed(_join([xb] + [wb] + ([p] if p is not None else [])))
        vals, c = _rayleigh_ritz(s, k, largest)
        new_x = _times(s, c)
        c_rest = c.copy()
        c_rest[:k] = 0.0
        p = _times(s, c_rest)
        xb, p = _computed(new_x), _computed(p)
    return vals, xb.x


def _precondition(psolve: Vector, r: LazyArray) -> LazyArray:
    """``M`` applied to each residual column (a Jacobi/diagonal ``M`` in one product)."""
    cols = [psolve(r[:, j]) for j in range(r.shape[1])]
    return xp.stack(cols, axis=1)


def _computed(b: _Block) -> _Block:
    x, ax = xp.compute(b.x, b.ax)
    return _Block(x, ax)


def eigsh(A: Any, k: int = 6, which: str = "LA", v0: Any = None, maxiter: int | None = None,
          tol: float | None = None, M: Any = None, seed: int = 0
          ) -> tuple[np.ndarray, LazyArray]:
    """The ``k`` largest (``which="LA"``) or smallest (``"SA"``) eigenpairs of a symmetric
    ``A`` by LOBPCG from a random start (``seed``; ``v0`` as its first column): ``(w, v)``
    with ``w`` ascending as scipy's ``eigsh``. ``maxiter`` defaults to 200."""
    if which not in WHICH:
        raise ValueError(f"eigsh: which must be one of {WHICH}, got {which!r} (the native "
                         "eigsh finds algebraically largest or smallest eigenvalues)")
    op = as_operator(A, "eigsh")
    n = op.shape[0]
    if op.shape[1] != n:
        raise ValueError(f"eigsh: A must be square, got shape {op.shape}")
    if not 0 < k < n:
        raise ValueError(f"eigsh: k must be in 1..{n - 1}, got {k}")
    start = np.random.default_rng(seed).standard_normal((n, k))
    if v0 is not None:
        start[:, 0] = np.asarray(v0, dtype=np.float64).reshape(n)
    x = xp.asarray(start.astype(op.dtype if op.dtype.kind == "f" else np.float64),
                   device=op.device)
    vals, vecs = lobpcg(A, x, M=M, tol=tol, maxiter=iterations(maxiter, 200, "eigsh"),
                        largest=which == "LA")
    if which == "LA":  # lobpcg gives them descending
        return vals[::-1].copy(), xp.flip(vecs, axis=1)
    return vals, vecs
