"""MINRES for symmetric (possibly indefinite) systems: Paige and Saunders' algorithm as in
scipy.sparse.linalg.minres (same stopping tests, ``rtol`` relative to ``||A|| ||x||``).

An iteration is two ``xp.compute`` calls: ``v, A v - c r1, v.(A v - c r1)`` (with the
previous iteration's ``w``, ``x`` and ``||x||^2``, whose tests then run) and ``r2, M r2,
r2.M r2``; the plane rotations and norm estimates are host scalars.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.sparse_linalg.operators import (
    Vector,
    apply,
    as_preconditioner,
    iterations,
    square_operator,
    start,
    xp,
    zeros,
)
from lazysparse.sparse_linalg.paige_saunders import stop_code, sym_ortho, with_norm


@dataclass(frozen=True)
class _Scalars:
    """The host scalars of a MINRES step (the rotation and the norm estimates)."""

    beta1: float
    oldb: float = 0.0
    beta: float = 0.0
    dbar: float = 0.0
    epsln: float = 0.0
    phibar: float = 0.0
    cs: float = -1.0
    sn: float = 0.0
    tnorm2: float = 0.0
    gmax: float = 0.0
    gmin: float = math.inf
    rhs1: float = 0.0
    rhs2: float = 0.0


@dataclass(frozen=True)
class _Step:
    """What an iteration hands the ``x`` update and the stopping tests."""

    phi: float
    denom: float
    delta: float
    oldeps: float
    gbar: float
    root: float


def _rotate(s: _Scalars, alfa: float, beta: float, eps: float) -> tuple[_Scalars, _Step]:
    """Apply the previous rotation, make the next one and update the norm estimates."""
    oldeps = s.epsln
    delta = s.cs * s.dbar + s.sn * alfa
    gbar = s.sn * s.dbar - s.cs * alfa
    epsln = s.sn * beta
    dbar = -s.cs * beta
    root = math.hypot(gbar, dbar)
    cs, sn, gamma = sym_ortho(gbar, beta)
    if gamma < eps:  # scipy's floor on the rotation's norm
        cs, sn, gamma = gbar / eps, beta / eps, eps
    phi = cs * s.phibar
    z = s.rhs1 / gamma
    new = replace(s, oldb=s.beta, beta=beta, dbar=dbar, epsln=epsln, phibar=sn * s.phibar,
                  cs=cs, sn=sn, tnorm2=s.tnorm2 + alfa ** 2 + s.beta ** 2 + beta ** 2,
                  gmax=max(s.gmax, gamma), gmin=min(s.gmin, gamma),
                  rhs1=s.rhs2 - delta * z, rhs2=-epsln * z)
    return new, _Step(phi, 1.0 / gamma, delta, oldeps, gbar, root)


def _stop(s: _Scalars, step: _Step, ynorm: float, itn: int, maxiter: int, rtol: float,
          eps: float) -> int:
    """scipy's ``istop`` for the iteration just finished (0: go on)."""
    anorm = math.sqrt(s.tnorm2)
    rnorm = s.phibar
    test1 = math.inf if ynorm == 0 or anorm == 0 else rnorm / (anorm * ynorm)
    test2 = math.inf if anorm == 0 else step.root / anorm
    acond = s.gmax / s.gmin
    return stop_code(0, ((1 + test2 <= 1, 2), (1 + test1 <= 1, 1), (itn >= maxiter, 6),
                         (acond >= 0.1 / eps, 4), (anorm * ynorm * eps >= s.beta1, 3),
                         (test2 <= rtol, 2), (test1 <= rtol, 1)))


def _preconditioned(psolve: Vector | None, r: LazyArray) -> tuple[LazyArray, LazyArray, float]:
    """``r``, ``y = M r`` and Lanczos' ``beta = sqrt(r.y)`` in one plan (a negative
    ``r.y`` means ``A`` is not symmetric)."""
    if psolve is None:
        r, beta = with_norm(r)
        return r, r, beta
    y = psolve(r)
    r, y, ry = xp.compute(r, y, xp.vecdot(r, y))
    if float(ry) < 0:
        raise ValueError("minres: non-symmetric matrix")
    return r, y, math.sqrt(float(ry))


def minres(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5,
           maxiter: int | None = None, M: Any = None,
           callback: Callable[[LazyArray], Any] | None = None) -> tuple[LazyArray, int]:
    """MINRES for a symmetric ``A`` (and a symmetric positive definite ``M``): ``(x, info)``
    with ``info`` 0 when converged (scipy's tests) and ``maxiter`` (default ``5 n``) when
    the cap was hit. A non-symmetric ``A`` or indefinite ``M`` detected on the way raises
    ``ValueError`` as scipy's does."""
    op, b = square_operator(A, b, "minres")
    if rtol < 0:
        raise ValueError(f"minres: rtol must be non-negative, got {rtol}")
    psolve = as_preconditioner(M, op.shape[0], op.device, "minres")
    x = start(op, b, x0, "minres")
    maxiter = iterations(maxiter, 5 * op.shape[0], "minres")
    eps = float(xp.finfo(b.dtype).eps)
    r1 = b if x0 is None else b - op.matvec(x)
    y = apply(psolve, r1)
    r1, y, beta1, bb = xp.compute(r1, y, xp.vecdot(r1, y), xp.vecdot(b, b))
    beta1 = float(beta1)
    if beta1 < 0:
        raise ValueError("minres: indefinite preconditioner")
    if beta1 == 0 or float(bb) == 0:
        return (zeros(b.shape, b) if float(bb) == 0 else x), 0
    beta1 = math.sqrt(beta1)
    s = _Scalars(beta1, beta=beta1, phibar=beta1, rhs1=beta1)
    w = w2 = zeros(b.shape, b)
    r2 = r1
    step: _Step | None = None
    for itn in range(1, maxiter + 1):
        v = y / s.beta
        y = op.matvec(v)
        if itn >= 2:
            y = y - (s.beta / s.oldb) * r1
        if step is None:
            v, y, alfa = xp.compute(v, y, xp.vecdot(v, y))
        else:  # the previous step's x, then its tests
            w, x, v, y, alfa, xx = xp.compute(w, x, v, y, xp.vecdot(v, y), xp.vecdot(x, x))
            if callback is not None:
                callback(x)
            if _stop(s, step, math.sqrt(float(xx)), itn - 1, maxiter, rtol, eps):
                return x, 0
        alfa = float(alfa)
        y = y - (alfa / s.beta) * r2
        r1, r2 = r2, y
        r2, y, beta = _preconditioned(psolve, r2)
        s, step = _rotate(s, alfa, beta, eps)
        w1, w2 = w2, w
        w = (v - step.oldeps * w1 - step.delta * w2) * step.denom
        x = x + step.phi * w
        if itn == 1 and s.beta / beta1 <= 10 * eps:  # b spans an invariant subspace
            x = xp.compute(x)
            if callback is not None:
                callback(x)
            return x, 0
    x, xx = xp.compute(x, xp.vecdot(x, x))
    if callback is not None and step is not None:
        callback(x)
    istop = 0 if step is None else _stop(s, step, math.sqrt(float(xx)), maxiter, maxiter,
                                         rtol, eps)
    return x, (maxiter if istop == 6 else 0)

