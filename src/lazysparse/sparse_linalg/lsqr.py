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
from lazysparse.api.array.replay import Replay
from lazysparse.sparse_linalg.operators import (
    Operator,
    as_operator,
    as_vector,
    iterations,
    replay_for,
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
                             ) -> tuple[tuple[LazyArray, float | None],
                                        tuple[LazyArray, float | None], _State]:
    """Golub–Kahan's first vectors ``u = (b - A x0) / beta``, ``v = A^T u / alpha`` (each
    as its computed raw vector and divisor, None: none) and the state they start."""
    u = b if x0 is None else b - op.matvec(x)
    u, uu, bb = xp.compute(u, xp.vecdot(u, u), xp.vecdot(b, b))
    beta, bnorm = math.sqrt(float(uu)), math.sqrt(float(bb))
    alpha = 0.0
    v: tuple[LazyArray, float | None] = (x, None)
    if beta > 0:
        assert op.rmatvec is not None
        v_raw, alpha = with_norm(op.rmatvec(u / beta))
        v = (v_raw, alpha if alpha > 0 else None)
    s = _State(alpha, beta, rhobar=alpha, phibar=beta, bnorm=bnorm, rnorm=beta,
               r1norm=beta, arnorm=alpha * beta)
    return (u, beta if beta > 0 else None), v, s


@dataclass
class _Vectors:
    """LSQR's vectors before an iteration's first compute, as computed arrays and host
    scalars (so its plan can be replayed, ``Replay``): ``u = u_raw / u_div`` and ``v =
    v_raw / v_div`` (None: no division), ``x = x_old + t1 w_old`` and ``w = v + t2 w_old``
    (``t`` None: ``x_old`` and ``v`` themselves, the first iteration)."""

    u_raw: LazyArray
    u_div: float | None
    v_raw: LazyArray
    v_div: float | None
    x_old: LazyArray
    w_old: LazyArray
    t: tuple[float, float] | None = None

    def v(self) -> LazyArray:
        return self.v_raw if self.v_div is None else self.v_raw / self.v_div

    def x_and_w(self, v: LazyArray) -> tuple[LazyArray, LazyArray]:
        """The lazy ``x`` and ``w`` (``v``: the lazy ``v``)."""
        if self.t is None:
            return self.x_old, v
        t1, t2 = self.t
        return self.x_old + t1 * self.w_old, v + t2 * self.w_old


def _first_built(op: Operator, vec: _Vectors, alpha: float) -> tuple[LazyArray, ...]:
    """``x, w, w.w, u' = A v - alpha u, u'.u'`` and, where ``v`` is a division read twice
    (by ``A v`` and ``w``), ``v`` (the value a compute keeps: ``api.held_values``)."""
    u = vec.u_raw if vec.u_div is None else vec.u_raw / vec.u_div
    v = vec.v()
    x, w = vec.x_and_w(v)
    u = op.matvec(v) - alpha * u
    kept = (v,) if vec.t is not None and vec.v_div is not None else ()
    return (x, w, xp.vecdot(w, w), u, xp.vecdot(u, u), *kept)


def _first_compute(op: Operator, vec: _Vectors, alpha: float, step: Replay | None
                   ) -> tuple[LazyArray, LazyArray, float, LazyArray, float, LazyArray]:
    """An iteration's first plan (:func:`_first_built`): ``x, w, w.w, u', u'.u'`` and the
    computed ``v``; replayed where every division and update is there."""
    build = lambda: _first_built(op, vec, alpha)  # noqa: E731
    if step is None or vec.t is None or vec.u_div is None or vec.v_div is None:
        out = xp.compute(*build())
    else:
        reads = (op.matrix, vec.u_raw, vec.v_raw, vec.x_old, vec.w_old)
        out = step(reads, (vec.u_div, alpha, *vec.t), build)  # type: ignore[arg-type]
    x, w, ww, u, uu = out[:5]
    v = out[5] if len(out) > 5 else (w if vec.t is None else vec.v())
    return x, w, float(ww), u, float(uu), v


def _bidiagonalization_step(op: Operator, s: _State, u: LazyArray, uu: float, v: LazyArray,
                            damp: float, step: Replay | None
                            ) -> tuple[LazyArray, float | None, LazyArray, float | None]:
    """Normalize ``u = A v - alpha u`` (``beta = ||u||``, ``uu`` its square), update
    ``||A||``, and make the next ``v = (A^T u - beta v) / alpha`` (``v`` computed): the
    next ``u`` and ``v`` as ``_Vectors`` hold them, raw and divisor."""
    s.beta = math.sqrt(max(uu, 0.0))
    if not s.beta > 0:
        return u, None, v, None
    s.anorm = math.sqrt(s.anorm ** 2 + s.alpha ** 2 + s.beta ** 2 + damp ** 2)
    beta = s.beta
    build = lambda: _second_built(op, u, beta, v)  # noqa: E731
    if step is None:
        v_raw, vv = xp.compute(*build())
    else:
        v_raw, vv = step((op.matrix, u, v), (beta,), build)  # type: ignore[arg-type]
    s.alpha = math.sqrt(max(float(vv), 0.0))  # ``with_norm``'s
    return u, beta, v_raw, (s.alpha if s.alpha > 0 else None)


def _second_built(op: Operator, u: LazyArray, beta: float, v: LazyArray
                  ) -> tuple[LazyArray, LazyArray]:
    """``A^T (u / beta) - beta v`` and its square norm."""
    assert op.rmatvec is not None
    w = op.rmatvec(u / beta) - beta * v
    return w, xp.vecdot(w, w)


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
    if s.arnorm == 0:
        x = xp.compute(x)
        return LsqrResult(x, 0, 0, s.beta, s.beta, 0.0, 0.0, 0.0, 0.0, zeros_n)
    vec = _Vectors(*u, *v, x, x)
    steps = (replay_for(op, None), replay_for(op, None))
    itn = istop = 0
    while itn < iter_lim:
        itn += 1
        x, w, ww, u_new, uu, v_now = _first_compute(op, vec, s.alpha, steps[0])
        u_raw, u_div, v_raw, v_div = _bidiagonalization_step(op, s, u_new, uu, v_now, damp,
                                                             steps[1])
        vec = _Vectors(u_raw, u_div, v_raw, v_div, x, w, s.rotate(damp, ww))
        istop = s.istop(itn, iter_lim, atol, btol, ctol, eps)
        if istop != 0:
            break
    x = xp.compute(vec.x_and_w(vec.v())[0])
    return LsqrResult(x, istop, itn, s.r1norm, s.rnorm, s.anorm, s.acond, s.arnorm,
                      s.xnorm, zeros_n)
