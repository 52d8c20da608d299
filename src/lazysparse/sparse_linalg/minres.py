"""MINRES for symmetric (possibly indefinite) systems: Paige and Saunders' algorithm as in
scipy.sparse.linalg.minres (same stopping tests, ``rtol`` relative to ``||A|| ||x||``).

An iteration is one ``xp.compute``: ``v``, ``u = A v - c r1``, ``alfa = v.u`` (a lazy 0-d
array the next vector reads in the same plan), ``r2 = u - (alfa / beta) r2``, ``M r2`` and
``r2.M r2``, with the previous iteration's ``w``, ``x`` and ``||x||^2``, whose tests then
run; the plane rotations and norm estimates are host scalars.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.array.replay import Replay
from lazysparse.sparse_linalg.operators import (
    Operator,
    Vector,
    apply,
    as_preconditioner,
    iterations,
    ratio,
    replay_for,
    square_operator,
    start,
    step_arrays,
    xp,
    zeros,
)
from lazysparse.sparse_linalg.paige_saunders import stop_code, sym_ortho


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


def _lanczos_vectors(op: Operator, psolve: Vector | None, y: LazyArray, r1: LazyArray,
                     r2: LazyArray, s: _Scalars, itn: int
                     ) -> tuple[LazyArray, LazyArray, LazyArray, LazyArray]:
    """A Lanczos step's lazy ``v = y / beta``, ``r2' = u - (alfa / beta) r2`` (``u = A v``
    less ``(beta / oldb) r1`` after the first), ``y' = M r2'`` and ``alfa = v.u``. The
    temporary ``u`` dies on return: the compute finds no other uncomputed array held."""
    v = y / s.beta
    u = op.matvec(v)
    if itn >= 2:
        u = u - (s.beta / s.oldb) * r1
    alfa = xp.vecdot(v, u)
    r2 = u - ratio(alfa, s.beta, r2.dtype) * r2
    return v, r2, apply(psolve, r2), alfa


@dataclass(frozen=True)
class _Held:
    """The previous iteration's pending updates ``w = (v - oldeps w1 - delta w2) denom``
    and ``x + phi w``, as the arrays and scalars they are made of (built inside the next
    iteration's plan, so a replay of it builds nothing)."""

    v: LazyArray
    w1: LazyArray
    w2: LazyArray
    x: LazyArray
    oldeps: float
    delta: float
    denom: float
    phi: float

    def updates(self) -> tuple[LazyArray, LazyArray]:
        """The lazy ``w`` and ``x``."""
        w = (self.v - self.oldeps * self.w1 - self.delta * self.w2) * self.denom
        return w, self.x + self.phi * w


def _lanczos(op: Operator, psolve: Vector | None, vectors: tuple[LazyArray, ...],
             s: _Scalars, itn: int, held: _Held | None, step: Replay | None
             ) -> tuple[LazyArray, LazyArray, LazyArray, float, float, tuple[Any, ...]]:
    """One MINRES iteration's vectors in one plan (:func:`_lanczos_built`) of ``vectors``
    ``y, r1, r2`` (``y`` is ``r2`` without ``M``): returns ``v, r2', y', alfa, r2'.y'``
    and ``(w, x, ||x||^2)`` (empty without ``held``). With ``held`` and from the second
    Lanczos step on, a ``Replay`` runs it from its cached program."""
    build = lambda: _lanczos_built(op, psolve, vectors, s, itn, held)  # noqa: E731
    if step is None or held is None or itn < 2:
        out = xp.compute(*build())
    else:
        h = held
        reads = (*vectors[psolve is None:], h.v, h.w1, h.w2, h.x)
        scalars = (s.beta, s.beta / s.oldb, h.oldeps, h.delta, h.denom, h.phi)
        out = step(step_arrays(op, psolve, reads), scalars, build)
    n = 2 if psolve is None else 3
    y = out[1] if psolve is None else out[2]
    done = () if held is None else (out[n + 2], out[n + 3], float(out[n + 4]))
    return out[0], out[1], y, float(out[n]), float(out[n + 1]), done


def _lanczos_built(op: Operator, psolve: Vector | None, vectors: tuple[LazyArray, ...],
                   s: _Scalars, itn: int, held: _Held | None) -> tuple[LazyArray, ...]:
    """The lazy arrays of one MINRES iteration: ``_lanczos_vectors``, ``r2'.y'`` and, with
    ``held``, the previous step's ``w``, ``x`` and ``||x||^2``."""
    y, r1, r2 = vectors
    prev: tuple[LazyArray, ...] = ()
    if held is not None:
        w, x = held.updates()
        prev = (w, x, xp.vecdot(x, x))
    v, r2, y, alfa = _lanczos_vectors(op, psolve, y, r1, r2, s, itn)
    vecs = (v, r2) if psolve is None else (v, r2, y)
    return (*vecs, alfa, xp.vecdot(r2, y), *prev)


def _beta(ry: float, psolve: Vector | None) -> float:
    """Lanczos' ``beta = sqrt(r.M r)`` (a negative ``r.M r`` means ``A`` is not
    symmetric; without ``M`` a rounding-negative square is 0)."""
    if psolve is None:
        return math.sqrt(max(ry, 0.0))
    if ry < 0:
        raise ValueError("minres: non-symmetric matrix")
    return math.sqrt(ry)


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
    held: _Held | None = None
    replay = replay_for(op, psolve)
    for itn in range(1, maxiter + 1):
        v, r2_new, y, alfa, ry, done = _lanczos(op, psolve, (y, r1, r2), s, itn, held,
                                                replay)
        if step is not None:  # the previous step's x, then its tests
            w, x, xx = done
            if callback is not None:
                callback(x)
            if _stop(s, step, math.sqrt(xx), itn - 1, maxiter, rtol, eps):
                return x, 0
        r1, r2 = r2, r2_new
        s, step = _rotate(s, alfa, _beta(ry, psolve), eps)
        w1, w2 = w2, w
        held = _Held(v, w1, w2, x, step.oldeps, step.delta, step.denom, step.phi)
        if itn == 1 and s.beta / beta1 <= 10 * eps:  # b spans an invariant subspace
            x = xp.compute(held.updates()[1])
            if callback is not None:
                callback(x)
            return x, 0
    if held is not None:
        x = held.updates()[1]
    x, xx = xp.compute(x, xp.vecdot(x, x))
    if callback is not None and step is not None:
        callback(x)
    istop = 0 if step is None else _stop(s, step, math.sqrt(float(xx)), maxiter, maxiter,
                                         rtol, eps)
    return x, (maxiter if istop == 6 else 0)
