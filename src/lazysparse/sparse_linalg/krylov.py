"""Short-recurrence Krylov solvers: conjugate gradients (``cg``) and BiCGSTAB
(``bicgstab``), with scipy.sparse.linalg's signatures and ``(x, info)`` results.

Each iteration computes every vector and dot product it can in one plan (fused kernels),
with the scalars read as Python floats; a step size that only later vectors of the same
iteration read stays a lazy 0-d array, so its compute is not split at a scalar read:

- cg: one compute, ``p, A p, alpha = rho / p.Ap, x + alpha p, r - alpha A p, M r, r.Mr,
  r.r`` (scipy's passes: one SpMV, two vector updates, two or three dots);
- bicgstab: two computes, ``x, r, p, A M p, rhat.v, r.r`` then ``s, A M s, t.s, t.t,
  rhat.s, rhat.t, s.s``, the next ``rho = rhat.s - omega rhat.t`` coming from the second
  (so the ``x``/``r`` update of one iteration runs in the first compute of the next). One
  compute with lazy ``alpha`` and ``omega`` (15 queries instead of 13) measured 12-30 %
  slower (2026-12-02): its plan key costs more than the second compute saves.

Each compute is built only of computed vectors and host scalars (bicgstab carries its
pending update as ``_BiCGStab.pending``), so from the second or third iteration on a
``Replay`` (``api.array.replay``) runs it from its cached program without building it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.array.replay import Replay
from lazysparse.sparse_linalg.operators import (
    Operator,
    Vector,
    apply,
    as_preconditioner,
    iterations,
    norm,
    ratio,
    replay_for,
    square_operator,
    start,
    step_arrays,
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
    step = replay_for(op, psolve)
    for it in range(maxiter):
        if math.sqrt(max(rr, 0.0)) <= tol:
            return x, 0
        beta = rho / rho_old if it else None
        rho_old = rho
        x, r, z, p, rho, rr = _cg_step(op, psolve, (x, r, z, p), rho, beta, step)
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


def _cg_step(op: Operator, psolve: Vector | None,
             vectors: tuple[LazyArray, LazyArray, LazyArray, LazyArray], rho: float,
             beta: float | None, step: Replay | None
             ) -> tuple[LazyArray, LazyArray, LazyArray, LazyArray, float, float]:
    """One CG iteration in one plan (:func:`_cg_built`) of ``vectors`` ``x, r, z, p``;
    returns ``x, r, z, p, r.z, r.r``. From the second iteration on (``beta`` given) a
    ``Replay`` runs it from its cached program without building it again."""
    x, r, z, p = vectors
    build = lambda: _cg_built(op, psolve, vectors, rho, beta)  # noqa: E731
    if step is None or beta is None:
        out = xp.compute(*build())
    else:
        reads = (x, r, p) if psolve is None else (x, r, z, p)
        out = step(step_arrays(op, psolve, reads), (rho, beta), build)
    if psolve is None:
        x, r, p, rr = out
        return x, r, r, p, float(rr), float(rr)
    x, r, z, p, rz, rr = out
    return x, r, z, p, float(rz), float(rr)


def _cg_built(op: Operator, psolve: Vector | None,
              vectors: tuple[LazyArray, LazyArray, LazyArray, LazyArray], rho: float,
              beta: float | None) -> tuple[LazyArray, ...]:
    """The lazy arrays of one CG iteration: the direction ``p = z + beta p`` (``p`` itself
    without ``beta``), ``q = A p``, the step ``alpha = rho / p.q`` (a lazy 0-d array the two
    updates read), ``x + alpha p``, ``r - alpha q``, ``z = M r`` and the dots ``r.z``,
    ``r.r``: ``x, r, p, r.r`` or, with ``M``, ``x, r, z, p, r.z, r.r``."""
    x, r, z, p = vectors
    if beta is not None:
        p = z + beta * p
    x, r = _cg_updates(op, x, r, p, rho)
    if psolve is None:
        return x, r, p, xp.vecdot(r, r)
    z = psolve(r)
    return x, r, z, p, xp.vecdot(r, z), xp.vecdot(r, r)


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
    rho, rr = float(rr), float(rr)
    if math.sqrt(max(rr, 0.0)) <= tol:
        return x, 0
    it = _BiCGStab(op, psolve, r, x)
    alpha = omega = rho_old = 1.0
    for k in range(maxiter):
        if abs(rho) < eps2 * rr:
            return xp.compute(it.updates()[0]), -10
        if k and abs(omega) < eps2:
            return xp.compute(it.updates()[0]), -11
        rv, rr_now = it.first_half((rho / rho_old) * (alpha / omega) if k else None)
        if rr_now is not None:  # the previous iteration's x and r, and the residual test
            rr = rr_now
            if math.sqrt(max(rr, 0.0)) <= tol:
                return it.x, 0
        if rv == 0.0:
            return it.x, -11
        alpha = rho / rv
        ts, tt, rs, rt, ss = it.second_half(alpha)
        if math.sqrt(max(ss, 0.0)) <= tol:
            return xp.compute(it.x + alpha * it.phat), 0
        omega = ts / tt if tt != 0.0 else 0.0
        it.pending, it.omega = alpha, omega
        rho_old, rho = rho, rs - omega * rt
        rr = _speculative_norm2(ss, ts, tt, omega)
        if callback is not None:
            it.x, it.r = xp.compute(*it.updates())
            it.pending = None
            callback(it.x)
    x, r = it.updates()
    x, r, rr = xp.compute(x, r, xp.vecdot(r, r))
    return x, (0 if math.sqrt(max(float(rr), 0.0)) <= tol else maxiter)


class _BiCGStab:
    """BiCGSTAB's vectors between its two computes per iteration, each computed: ``x``,
    ``r``, ``p``, ``phat = M p``, ``v = A phat`` (first half), ``s``, ``shat = M s``,
    ``t = A shat`` (second half); ``pending``: the step size ``alpha`` of the updates
    ``x + alpha phat + omega shat`` and ``s - omega t`` (``omega``: the latest) when they
    have not run yet. They run in the next first half's plan, so each half is one plan
    of computed vectors and host scalars: two computes per iteration, the ``x``/``r``
    update of one iteration in the first of the next, each replayed (``Replay``) from the
    third iteration on without building it again."""

    def __init__(self, op: Operator, psolve: Vector | None, r: LazyArray, x: LazyArray
                 ) -> None:
        self.op, self.psolve, self.rhat = op, psolve, r
        self.x, self.r = x, r
        self.p = self.phat = self.v = self.s = self.shat = self.t = r
        self.pending: float | None = None
        self.omega = 1.0
        self.steps = (replay_for(op, psolve), replay_for(op, psolve))

    def updates(self) -> tuple[LazyArray, LazyArray]:
        """The lazy ``x`` and ``r`` of the pending updates (the computed ones without)."""
        if self.pending is None:
            return self.x, self.r
        alpha, omega = self.pending, self.omega
        return self.x + alpha * self.phat + omega * self.shat, self.s - omega * self.t

    def _first_built(self, coef: float | None) -> tuple[LazyArray, ...]:
        """``p = r + coef (p - omega v)`` (``r`` itself without ``coef``), ``phat``, ``v``,
        ``rhat.v`` and, with ``coef``, ``x`` and ``r`` first (the pending updates) and
        ``r.r`` last."""
        x, r = self.updates()
        p = r if coef is None else r + coef * (self.p - self.omega * self.v)
        phat = apply(self.psolve, p)
        v = self.op.matvec(phat)
        head = (p, v) if self.psolve is None else (p, phat, v)
        if coef is None:
            return (*head, xp.vecdot(self.rhat, v))
        return (x, r, *head, xp.vecdot(self.rhat, v), xp.vecdot(r, r))

    def first_half(self, coef: float | None) -> tuple[float, float | None]:
        """Run the first half (:meth:`_first_built`) in one plan: ``rhat.v`` and, with
        ``coef``, ``r.r`` (else None)."""
        build = lambda: self._first_built(coef)  # noqa: E731
        step = self.steps[0]
        if step is None or coef is None or self.pending is None:
            out = xp.compute(*build())
        else:
            reads = (self.rhat, self.x, self.phat, self.shat, self.s, self.t, self.p,
                     self.v)
            out = step(step_arrays(self.op, self.psolve, reads),
                       (self.pending, self.omega, coef), build)
        self.pending = None
        if coef is not None:
            self.x, self.r, *out = out
        if self.psolve is None:
            self.p, self.v = out[:2]
            self.phat = self.p
        else:
            self.p, self.phat, self.v = out[:3]
        if coef is None:
            return float(out[-1]), None
        return float(out[-2]), float(out[-1])

    def _second_built(self, alpha: float) -> tuple[LazyArray, ...]:
        """``s = r - alpha v``, ``shat = M s``, ``t = A shat`` and the dots ``t.s``,
        ``t.t``, ``rhat.s``, ``rhat.t``, ``s.s``."""
        s = self.r - alpha * self.v
        shat = apply(self.psolve, s)
        t = self.op.matvec(shat)
        head = (s, t) if self.psolve is None else (s, shat, t)
        return (*head, xp.vecdot(t, s), xp.vecdot(t, t), xp.vecdot(self.rhat, s),
                xp.vecdot(self.rhat, t), xp.vecdot(s, s))

    def second_half(self, alpha: float) -> tuple[float, float, float, float, float]:
        """Run BiCGSTAB's second half-step (:meth:`_second_built`) in one plan: the dots
        ``t.s``, ``t.t``, ``rhat.s``, ``rhat.t``, ``s.s`` as floats."""
        build = lambda: self._second_built(alpha)  # noqa: E731
        step = self.steps[1]
        if step is None:
            out = xp.compute(*build())
        else:
            reads = (self.rhat, self.r, self.v)
            out = step(step_arrays(self.op, self.psolve, reads), (alpha,), build)
        if self.psolve is None:
            self.s, self.t = out[:2]
            self.shat = self.s
        else:
            self.s, self.shat, self.t = out[:3]
        ts, tt, rs, rt, ss = (float(v) for v in out[-5:])
        return ts, tt, rs, rt, ss


def _speculative_norm2(ss: float, ts: float, tt: float, omega: float) -> float:
    """``||s - omega t||^2`` from the dot products, for the breakdown test only (the
    convergence test reads the computed residual's norm)."""
    return max(ss - 2.0 * omega * ts + omega * omega * tt, 0.0)
