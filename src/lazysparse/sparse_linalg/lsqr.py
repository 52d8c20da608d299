"""LSQR for least squares ``min ||A x - b||`` (and damped, ``min ||A x - b||^2 + damp^2
||x||^2``) with a rectangular ``A``: Paige and Saunders' algorithm, ported from
scipy.sparse.linalg.lsqr with its stopping tests and its 10-tuple result.

An iteration is two ``xp.compute`` calls: ``u = A v - alpha u, ||u||^2`` (with the
previous iteration's ``x``, ``w`` and ``||w||^2``) and ``v = A^T u - beta v, ||v||^2``;
the normalizations ``u / beta`` and ``v / alpha`` fuse into the next products.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.sparse_linalg.operators import (
    Operator,
    as_operator,
    as_vector,
    iterations,
    result_dtype,
    xp,
    zeros,
)
from lazysparse.sparse_linalg.paige_saunders import stop_code, sym_ortho, with_norm


class LsqrResult(NamedTuple):
    """scipy's ``lsqr`` result (a 10-tuple), with its fields named."""

    x: LazyArray
    istop: int
    itn: int
    r1norm: float
    r2norm: float
    anorm: float
    acond: float
    arnorm: float
    xnorm: float
    var: LazyArray


@dataclass
class _State:
    """The host scalars of the bidiagonalization and the norm estimates."""

    alpha: float
    beta: float
    rhobar: float
    phibar: float
    bnorm: float
    anorm: float = 0.0
    ddnorm: float = 0.0
    res2: float = 0.0
    xxnorm: float = 0.0
    z: float = 0.0
    cs2: float = -1.0
    sn2: float = 0.0
    acond: float = 0.0
    rnorm: float = 0.0
    arnorm: float = 0.0
    xnorm: float = 0.0
    r1norm: float = 0.0

    def rotate(self, damp: float, ww: float) -> tuple[float, float]:
        """One step's rotations: the ``x`` and ``w`` coefficients ``t1``, ``t2``."""
        if damp > 0:
            rhobar1 = math.hypot(self.rhobar, damp)
            cs1, sn1 = self.rhobar / rhobar1, damp / rhobar1
            psi, self.phibar = sn1 * self.phibar, cs1 * self.phibar
        else:
            rhobar1, psi = self.rhobar, 0.0
        cs, sn, rho = sym_ortho(rhobar1, self.beta)
        theta = sn * self.alpha
        self.rhobar = -cs * self.alpha
        phi = cs * self.phibar
        self.phibar = sn * self.phibar
        tau = sn * phi
        self.ddnorm += ww / rho ** 2
        delta, gambar = self.sn2 * rho, -self.cs2 * rho
        rhs = phi - delta * self.z
        zbar = rhs / gambar
        self.xnorm = math.sqrt(self.xxnorm + zbar ** 2)
        gamma = math.hypot(gambar, theta)
        self.cs2, self.sn2, self.z = gambar / gamma, theta / gamma, rhs / gamma
        self.xxnorm += self.z ** 2
        self.acond = self.anorm * math.sqrt(self.ddnorm)
        self.res2 += psi ** 2
        self.rnorm = math.sqrt(self.phibar ** 2 + self.res2)
        self.arnorm = self.alpha * abs(tau)
        r1sq = self.rnorm ** 2 - damp ** 2 * self.xxnorm
        self.r1norm = math.copysign(math.sqrt(abs(r1sq)), r1sq)
        return phi / rho, -theta / rho

    def istop(self, itn: int, iter_lim: int, atol: float, btol: float, ctol: float,
              eps: float) -> int:
        """scipy's stopping rule (0: go on)."""
        test1 = self.rnorm / self.bnorm
        test2 = self.arnorm / (self.anorm * self.rnorm + eps)
        test3 = 1 / (self.acond + eps)
        t1 = test1 / (1 + self.anorm * self.xnorm / self.bnorm)
        rtol = btol + atol * self.anorm * self.xnorm / self.bnorm
        return stop_code(7 if itn >= iter_lim else 0, (
            (1 + test3 <= 1, 6), (1 + test2 <= 1, 5), (1 + t1 <= 1, 4), (test3 <= ctol, 3),
            (test2 <= atol, 2), (test1 <= rtol, 1)))


def _lsqr_problem(A: Any, b: Any, calc_var: bool) -> tuple[Operator, LazyArray]:
    """The operator (it needs ``rmatvec``) and ``b`` as a vector of the result dtype."""
    bdev = b.device if isinstance(b, LazyArray) else None
    op = as_operator(A, "lsqr", device=bdev)
    if op.rmatvec is None:
        raise TypeError("lsqr: A needs rmatvec (A^T v); pass a matrix or a LinearOperator")
    if calc_var:
        raise ValueError("lsqr: calc_var=True is not supported by the native lsqr")
    b = as_vector(b, op.shape[0], None, op.device, "b", "lsqr")
    dtype = result_dtype(op, b)
    return op, (b if b.dtype == dtype else xp.astype(b, dtype))


def _bidiagonalization_start(op: Operator, b: LazyArray, x: LazyArray, x0: Any
                             ) -> tuple[LazyArray, LazyArray, _State]:
    """Golub–Kahan's first vectors ``u = (b - A x0) / beta``, ``v = A^T u / alpha`` and
    the state they start."""
    u = b if x0 is None else b - op.matvec(x)
    u, uu, bb = xp.compute(u, xp.vecdot(u, u), xp.vecdot(b, b))
    beta, bnorm = math.sqrt(float(uu)), math.sqrt(float(bb))
    alpha = 0.0
    v = x
    if beta > 0:
        u = u / beta
        v, alpha = with_norm(op.rmatvec(u))
    if alpha > 0:
        v = v / alpha
    s = _State(alpha, beta, rhobar=alpha, phibar=beta, bnorm=bnorm, rnorm=beta,
               r1norm=beta, arnorm=alpha * beta)
    return u, v, s


def _bidiagonalization_step(op: Operator, s: _State, u: LazyArray, uu: float, v: LazyArray,
                            damp: float) -> tuple[LazyArray, LazyArray]:
    """Normalize ``u = A v - alpha u`` (``beta = ||u||``, ``uu`` its square), update
    ``||A||``, and make the next ``v = (A^T u - beta v) / alpha``."""
    s.beta = math.sqrt(max(uu, 0.0))
    if s.beta > 0:
        u = u / s.beta
        s.anorm = math.sqrt(s.anorm ** 2 + s.alpha ** 2 + s.beta ** 2 + damp ** 2)
        v, s.alpha = with_norm(op.rmatvec(u) - s.beta * v)
        if s.alpha > 0:
            v = v / s.alpha
    return u, v


def lsqr(A: Any, b: Any, damp: float = 0.0, atol: float = 1e-6, btol: float = 1e-6,
         conlim: float = 1e8, iter_lim: int | None = None, show: bool = False,
         calc_var: bool = False, x0: Any = None) -> LsqrResult:
    """LSQR: the least-squares solution of ``A x = b`` for an ``m x n`` ``A`` (a matrix or
    an object with ``matvec`` and ``rmatvec``). Returns scipy's ``(x, istop, itn, r1norm,
    r2norm, anorm, acond, arnorm, xnorm, var)``; ``calc_var`` is not supported (``var``
    is zeros) and ``show`` prints nothing."""
    op, b = _lsqr_problem(A, b, calc_var)
    n = op.shape[1]
    iter_lim = iterations(iter_lim, 2 * n, "lsqr")
    eps = float(np.finfo(b.dtype).eps)
    ctol = 1.0 / conlim if conlim > 0 else 0.0
    zeros_n = zeros(n, b)
    x = zeros_n if x0 is None else as_vector(x0, n, b.dtype, op.device, "x0", "lsqr")
    u, v, s = _bidiagonalization_start(op, b, x, x0)
    w = v
    if s.arnorm == 0:
        x = xp.compute(x)
        return LsqrResult(x, 0, 0, s.beta, s.beta, 0.0, 0.0, 0.0, 0.0, zeros_n)
    itn = istop = 0
    while itn < iter_lim:
        itn += 1
        u = op.matvec(v) - s.alpha * u
        x, w, ww, u, uu = xp.compute(x, w, xp.vecdot(w, w), u, xp.vecdot(u, u))
        u, v = _bidiagonalization_step(op, s, u, float(uu), v, damp)
        t1, t2 = s.rotate(damp, float(ww))
        x = x + t1 * w
        w = v + t2 * w
        istop = s.istop(itn, iter_lim, atol, btol, ctol, eps)
        if istop != 0:
            break
    x = xp.compute(x)
    return LsqrResult(x, istop, itn, s.r1norm, s.rnorm, s.anorm, s.acond, s.arnorm,
                      s.xnorm, zeros_n)
