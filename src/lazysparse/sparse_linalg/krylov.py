"""Short-recurrence Krylov solvers: conjugate gradients (``cg``) and BiCGSTAB
(``bicgstab``), with scipy.sparse.linalg's signatures and ``(x, info)`` results.

Each iteration computes every vector and dot product it can in one plan (fused kernels),
with the scalars read as Python floats; a step size that only later vectors of the same
iteration read stays a lazy 0-d array, so its compute is not split at a scalar read:

- cg: one compute, ``p, A p, alpha = rho / p.Ap, x + alpha p, r - alpha A p, M r, r.Mr,
  r.r`` (scipy's passes: one SpMV, two vector updates, two or three dots);
- bicgstab: one compute, ``p, M p, v = A M p, alpha = rho / rhat.v, s = r - alpha v,
  A M s, omega = t.s / t.t, x + alpha M p + omega M s, s - omega t`` and the dots
  ``rhat.v, s.s, t.s, t.t, rhat.s, rhat.t, r.r``; the next ``rho = rhat.s - omega rhat.t``
  and the breakdown tests are host scalars.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.sparse_linalg.operators import (
    Operator,
    Vector,
    apply,
    as_preconditioner,
    iterations,
    norm,
    ratio,
    square_operator,
    start,
    tolerance,
    xp,
    zeros,
)

Callback = Callable[[LazyArray], Any] | None


def cg(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0,
       maxiter: int | None = None, M: Any = None, callback: Callback = None
       ) -> tuple[LazyArray, int]:
    """Conjugate gradients for a symmetric positive definite ``A``: ``(x, info)`` with
    ``info`` 0 when ``||b - A x|| <= max(atol, rtol ||b||)``, else the iteration count
    (default cap ``10 n``). ``M`` approximates ``A^-1`` (SPD); ``callback(x)`` runs after
    each iteration."""
    op, b = square_operator(A, b, "cg")
    psolve = as_preconditioner(M, op.shape[0], op.device, "cg")
    x = start(op, b, x0, "cg")
    bnorm = norm(b)
    if bnorm == 0.0:
        return zeros(b.shape, b), 0
    tol = tolerance(bnorm, rtol, atol, "cg")
    maxiter = iterations(maxiter, 10 * op.shape[0], "cg")
    r = b if x0 is None else b - op.matvec(x)
    r, z, rho, rr = _preconditioned(r, psolve)
    p, rho_old = z, 1.0
    for it in range(maxiter):
        if math.sqrt(max(rr, 0.0)) <= tol:
            return x, 0
        if it:
            p = z + (rho / rho_old) * p
        rho_old = rho
        x, r, z, p, rho, rr = _cg_step(op, psolve, x, r, p, rho)
        if callback is not None:
            callback(x)
    return x, (0 if math.sqrt(max(rr, 0.0)) <= tol else maxiter)


def _preconditioned(r: LazyArray, psolve: Vector | None
                    ) -> tuple[LazyArray, LazyArray, float, float]:
    """``r``, ``z = M r``, ``r.z`` and ``r.r`` computed in one plan."""
    if psolve is None:
        r, rr = xp.compute(r, xp.vecdot(r, r))
        return r, r, float(rr), float(rr)
    z = psolve(r)
    r, z, rz, rr = xp.compute(r, z, xp.vecdot(r, z), xp.vecdot(r, r))
    return r, z, float(rz), float(rr)


def _cg_step(op: Operator, psolve: Vector | None, x: LazyArray, r: LazyArray, p: LazyArray,
             rho: float) -> tuple[LazyArray, LazyArray, LazyArray, LazyArray, float, float]:
    """One CG iteration in one plan: ``q = A p``, the step ``alpha = rho / p.q`` (a lazy
    0-d array the two updates read), ``x + alpha p``, ``r - alpha q``, ``z = M r`` and the
    dots ``r.z``, ``r.r``; returns ``x, r, z, p, r.z, r.r``."""
    x, r = _cg_updates(op, x, r, p, rho)
    if psolve is None:
        x, r, p, rr = xp.compute(x, r, p, xp.vecdot(r, r))
        return x, r, r, p, float(rr), float(rr)
    z = psolve(r)
    x, r, z, p, rz, rr = xp.compute(x, r, z, p, xp.vecdot(r, z), xp.vecdot(r, r))
    return x, r, z, p, float(rz), float(rr)


def _cg_updates(op: Operator, x: LazyArray, r: LazyArray, p: LazyArray, rho: float
                ) -> tuple[LazyArray, LazyArray]:
    """``x + alpha p`` and ``r - alpha A p`` for ``alpha = rho / p.Ap``, lazy. Its
    temporaries (``A p``, ``alpha``) die on return: a compute that finds no other
    uncomputed array held skips the search for held values (``api.held_values``)."""
    q = op.matvec(p)
    alpha = ratio(rho, xp.vecdot(p, q), p.dtype)
    return x + alpha * p, r - alpha * q


def bicgstab(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0,
             maxiter: int | None = None, M: Any = None, callback: Callback = None
             ) -> tuple[LazyArray, int]:
    """BiCGSTAB for a general square ``A``: ``(x, info)`` as scipy's ``bicgstab`` (0:
    converged, > 0: the iteration cap (default ``10 n``) hit, -10/-11: breakdown)."""
    op, b = square_operator(A, b, "bicgstab")
    psolve = as_preconditioner(M, op.shape[0], op.device, "bicgstab")
    x = start(op, b, x0, "bicgstab")
    bnorm = norm(b)
    if bnorm == 0.0:
        return zeros(b.shape, b), 0
    tol = tolerance(bnorm, rtol, atol, "bicgstab")
    maxiter = iterations(maxiter, 10 * op.shape[0], "bicgstab")
    eps2 = float(xp.finfo(b.dtype).eps) ** 2
    r = b if x0 is None else b - op.matvec(x)
    r, rr = xp.compute(r, xp.vecdot(r, r))
    rhat, rho, rr = r, float(rr), float(rr)
    if math.sqrt(max(rr, 0.0)) <= tol:
        return x, 0
    p = v = None
    alpha = omega = rho_old = 1.0
    rr_exact = rr
    for _ in range(maxiter):
        if abs(rho) < eps2 * rr:
            return xp.compute(x), -10
        if p is None:
            p = r
        else:
            if abs(omega) < eps2:
                return xp.compute(x), -11
            if math.sqrt(max(rr_exact, 0.0)) <= tol:  # the computed residual's test
                return x, 0
            p = r + ((rho / rho_old) * (alpha / omega)) * (p - omega * v)
        st = _bicgstab_step(op, psolve, x, r, p, rhat, rho)
        if st.rv == 0.0:
            return x, -11
        if math.sqrt(max(st.ss, 0.0)) <= tol:
            return xp.compute(x + st.alpha * st.phat), 0
        alpha = rho / st.rv
        omega = st.ts / st.tt if st.tt != 0.0 else 0.0
        x, r, p, v, rr_exact = st.x, st.r, st.p, st.v, st.rr
        rho_old, rho = rho, st.rs - omega * st.rt
        rr = _speculative_norm2(st.ss, st.ts, st.tt, omega)
        if callback is not None:
            callback(x)
    x, r, rr = xp.compute(x, r, xp.vecdot(r, r))
    return x, (0 if math.sqrt(max(float(rr), 0.0)) <= tol else maxiter)


@dataclass(frozen=True)
class _Step:
    """One BiCGSTAB iteration's computed vectors and host scalars: ``p``, ``phat = M p``,
    ``v = A phat``, the lazy-then-computed step ``alpha = rho / rhat.v``, the updated
    ``x`` and ``r``, and the dots ``rhat.v``, ``s.s``, ``t.s``, ``t.t``, ``rhat.s``,
    ``rhat.t`` and ``r.r`` (``s = r - alpha v``, ``t = A M s``)."""

    p: LazyArray
    phat: LazyArray
    v: LazyArray
    alpha: LazyArray
    x: LazyArray
    r: LazyArray
    rv: float
    ss: float
    ts: float
    tt: float
    rs: float
    rt: float
    rr: float


def _bicgstab_step(op: Operator, psolve: Vector | None, x: LazyArray, r: LazyArray,
                   p: LazyArray, rhat: LazyArray, rho: float) -> _Step:
    """BiCGSTAB's two half-steps in one plan (``_bicgstab_vectors``): nothing read to the
    host in between, the step sizes ``alpha`` and ``omega`` lazy 0-d arrays."""
    vecs, dots = _bicgstab_vectors(op, psolve, x, r, p, rhat, rho)
    out = xp.compute(*vecs, *dots)
    p, phat, v, alpha, x, r = out[:6] if psolve is not None else (
        out[0], out[0], *out[1:5])
    n = len(vecs)
    return _Step(p, phat, v, alpha, x, r, *[float(d) for d in out[n:]])


def _bicgstab_vectors(op: Operator, psolve: Vector | None, x: LazyArray, r: LazyArray,
                      p: LazyArray, rhat: LazyArray, rho: float
                      ) -> tuple[tuple[LazyArray, ...], tuple[LazyArray, ...]]:
    """The lazy vectors ``p, [phat,] v, alpha, x', r'`` and dots of a BiCGSTAB iteration
    (``omega = t.s / t.t``, 0 where ``t.t`` is; ``x' = x + alpha phat + omega shat``,
    ``r' = s - omega t``). The temporaries ``s``, ``shat``, ``t`` and ``omega`` die on
    return: the compute finds no other uncomputed array held."""
    phat = apply(psolve, p)
    v = op.matvec(phat)
    rv = xp.vecdot(rhat, v)
    alpha = ratio(rho, rv, p.dtype)
    s = r - alpha * v
    shat = apply(psolve, s)
    t = op.matvec(shat)
    ts, tt = xp.vecdot(t, s), xp.vecdot(t, t)
    omega = xp.where(tt != 0, ts / tt, 0.0)
    x, r = x + alpha * phat + omega * shat, s - omega * t
    vecs = (p, v, alpha, x, r) if psolve is None else (p, phat, v, alpha, x, r)
    return vecs, (rv, xp.vecdot(s, s), ts, tt, xp.vecdot(rhat, s), xp.vecdot(rhat, t),
                  xp.vecdot(r, r))


def _speculative_norm2(ss: float, ts: float, tt: float, omega: float) -> float:
    """``||s - omega t||^2`` from the dot products, for the breakdown test only (the
    convergence test reads the computed residual's norm)."""
    return max(ss - 2.0 * omega * ts + omega * omega * tt, 0.0)
