"""Restarted GMRES (right-preconditioned, so the tolerance is on the true residual
``||b - A x||``), with scipy.sparse.linalg.gmres's signature.

The Krylov basis is one dense ``(restart + 1) x n`` lazysparse array, zero where no
vector is stored yet, so the Gram–Schmidt projections ``V @ w`` and ``V.T @ h`` have one
shape for every step (the same compiled kernels at every step). Orthogonalization is
classical Gram–Schmidt run twice (CGS2: as stable as modified Gram–Schmidt, with two
matrix–vector products per pass instead of ``j`` dot products; on the test problems the
first pass cancels most of the vector at nearly every step, so a conditional second pass
saves nothing); a step is three ``xp.compute`` calls and one row write (which today
copies the whole basis: the copy-on-write check of ``x[i] = v`` sees references that
the kernel caches keep to an array a compute has read). The small Hessenberg
least-squares problem (Givens rotations, the triangular solve) runs on the host in NumPy,
as scipy's does. The three computes read only computed arrays, so each replays from its
cached program once recorded (``api.array.replay``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.array.replay import Replay
from lazysparse.sparse_linalg.operators import (
    Operator,
    Vector,
    apply,
    as_preconditioner,
    iterations,
    norm,
    replay_for,
    square_operator,
    start,
    step_arrays,
    tolerance,
    xp,
    zeros,
)

CALLBACK_TYPES = ("pr_norm", "x")


@dataclass
class _Hessenberg:
    """The rotated Hessenberg matrix of one cycle and its right-hand side (host)."""

    restart: int
    beta: float
    r: np.ndarray = field(init=False)
    g: np.ndarray = field(init=False)
    cs: np.ndarray = field(init=False)
    sn: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        m = self.restart
        self.r = np.zeros((m + 1, m))
        self.g = np.zeros(m + 1)
        self.g[0] = self.beta
        self.cs, self.sn = np.zeros(m), np.zeros(m)

    def add_column(self, j: int, h: np.ndarray) -> float:
        """Rotate column ``j`` (``h[: j + 2]``) and return the new residual estimate."""
        col = h[: j + 2].astype(np.float64, copy=True)
        for k in range(j):
            a, b = col[k], col[k + 1]
            col[k], col[k + 1] = self.cs[k] * a + self.sn[k] * b, -self.sn[k] * a + \
                self.cs[k] * b
        mag = math.hypot(col[j], col[j + 1])
        c, s = (1.0, 0.0) if mag == 0.0 else (col[j] / mag, col[j + 1] / mag)
        self.cs[j], self.sn[j] = c, s
        col[j], col[j + 1] = mag, 0.0
        self.r[: j + 2, j] = col
        self.g[j], self.g[j + 1] = c * self.g[j], -s * self.g[j]
        return abs(self.g[j + 1])

    def solution(self, k: int) -> np.ndarray:
        """The coefficients ``y`` of the first ``k`` basis vectors (back substitution; a
        zero pivot contributes nothing, as scipy's pseudo-solve)."""
        y = self.g[:k].copy()
        for i in range(k - 1, -1, -1):
            y[i] = 0.0 if self.r[i, i] == 0.0 else (y[i] - self.r[i, i + 1:k] @ y[i + 1:k]) / \
                self.r[i, i]
        return y


def _basis(m: int, n: int, like: LazyArray) -> LazyArray:
    """A zero dense ``(m + 1) x n`` basis, computed (rows are written in place)."""
    return xp.compute(zeros((m + 1, n), like))


def _arnoldi_step(op: Operator, psolve: Vector | None, basis: LazyArray, v: LazyArray,
                  steps: tuple[Replay | None, ...]
                  ) -> tuple[LazyArray, np.ndarray, float, float]:
    """``w = A M v`` orthogonalized against the basis by classical Gram–Schmidt run twice
    (CGS2): the new direction, the Hessenberg column's projections, ``||w||`` after and
    before. Its three computes read only computed arrays: each a ``Replay`` (``steps``)
    runs from its cached program once recorded."""
    w, h1, w0 = _run(steps[0], op, psolve, (basis, v),
                     lambda: _projected(basis, op.matvec(apply(psolve, v))))
    w, h2 = _run(steps[1], op, psolve, (basis, w, h1),
                 lambda: _projected(basis, w - basis.T @ h1)[:2])
    w, h, ww = _run(steps[2], op, psolve, (basis, w, h1, h2),
                    lambda: _last_pass(basis, w, h1, h2))
    return w, np.asarray(h), math.sqrt(max(float(ww), 0.0)), math.sqrt(max(float(w0), 0.0))


def _projected(basis: LazyArray, w: LazyArray) -> tuple[LazyArray, LazyArray, LazyArray]:
    """``w``, its projections ``V @ w`` and ``w.w``."""
    return w, basis @ w, xp.vecdot(w, w)


def _last_pass(basis: LazyArray, w: LazyArray, h1: LazyArray, h2: LazyArray
               ) -> tuple[LazyArray, LazyArray, LazyArray]:
    """The second pass's ``w - V^T h2``, the column ``h1 + h2`` and the new ``w.w``."""
    w = w - basis.T @ h2
    return w, h1 + h2, xp.vecdot(w, w)


def _run(step: Replay | None, op: Operator, psolve: Vector | None,
         reads: tuple[LazyArray, ...], build: Callable[[], tuple[LazyArray, ...]]
         ) -> tuple[LazyArray, ...]:
    """``build()``'s arrays computed: replayed by ``step`` when there is one."""
    if step is None:
        return xp.compute(*build())
    return step(step_arrays(op, psolve, reads), (), build)


def gmres(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0,
          restart: int | None = None, maxiter: int | None = None, M: Any = None,
          callback: Callable[[Any], Any] | None = None, callback_type: str | None = None
          ) -> tuple[LazyArray, int]:
    """Restarted GMRES: ``(x, info)``, ``info`` 0 when ``||b - A x|| <= max(atol, rtol
    ||b||)``, else ``maxiter`` (the cap on restart cycles, default ``10 n``). ``restart``
    is the basis size (default 20); ``callback_type`` "pr_norm" (default; scipy's
    "legacy" is taken as "pr_norm", ``maxiter`` still counting cycles) calls
    ``callback(residual / ||b||)`` every inner step, "x" calls ``callback(x)`` per cycle."""
    op, b = square_operator(A, b, "gmres")
    n = op.shape[0]
    psolve = as_preconditioner(M, n, op.device, "gmres")
    ctype = "pr_norm" if callback_type in (None, "legacy") else callback_type
    if ctype not in CALLBACK_TYPES:
        raise ValueError(f"gmres: unknown callback_type {callback_type!r}; expected one of "
                         f"{CALLBACK_TYPES}")
    x = start(op, b, x0, "gmres")
    bnorm = norm(b)
    if bnorm == 0.0:
        return zeros(b.shape, b), 0
    tol = tolerance(bnorm, rtol, atol, "gmres")
    maxiter = iterations(maxiter, 10 * n, "gmres")
    m = max(1, min(int(restart) if restart is not None else 20, n))
    eps = float(xp.finfo(b.dtype).eps)
    r = b if x0 is None else b - op.matvec(x)
    r, rr = xp.compute(r, xp.vecdot(r, r))
    beta = math.sqrt(max(float(rr), 0.0))
    steps = tuple(replay_for(op, psolve) for _ in range(3))
    for _ in range(maxiter):
        if beta <= tol:
            return x, 0
        basis = _basis(m, n, b)
        v, k = r / beta, 0
        basis[0, :] = v
        hess = _Hessenberg(m, beta)
        for j in range(m):
            w, h, hnorm, w0 = _arnoldi_step(op, psolve, basis, v, steps)
            h[j + 1] = hnorm
            presid = hess.add_column(j, h)
            k = j + 1
            if ctype == "pr_norm" and callback is not None:
                callback(presid / bnorm)
            if presid <= tol or hnorm <= eps * w0 or j + 1 == m:
                break
            v = w / hnorm
            basis[j + 1, :] = v
        coef = np.zeros(m + 1, dtype=b.dtype)
        coef[:k] = hess.solution(k)
        x = x + apply(psolve, basis.T @ xp.asarray(coef, device=op.device))
        r = b - op.matvec(x)
        x, r, rr = xp.compute(x, r, xp.vecdot(r, r))
        beta = math.sqrt(max(float(rr), 0.0))
        if ctype == "x" and callback is not None:
            callback(x)
    return x, (0 if beta <= tol else maxiter)
