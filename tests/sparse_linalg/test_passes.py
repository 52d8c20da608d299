"""Deterministic guards on the native solvers' work per iteration (issue 34): how many
plans (one per ``xp.compute``) and queries (kernel passes or host-runner calls) an
iteration runs, counted by ``kernels.backends.execute.RUNS``, never timed; and a natural
CG loop costing the same whatever spelling its dot products use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse.linalg as spla

import lazysparse as xp
from lazysparse.kernels.backends.execute import RUNS
from tests.sparse_linalg.problems import convection_diffusion, laplacian_2d, rhs, tall

SL = xp.sparse_linalg
SPD = laplacian_2d(10)
NONSYM = convection_diffusion(10)
TALL = tall()


def _per_iteration(run: Callable[[int], Any], k: int = 4) -> tuple[float, float]:
    """Plans and queries per iteration: the difference between ``2k`` and ``k``
    iterations (the set-up's work cancels), each run once before it is counted."""
    counts = []
    for iters in (k, 2 * k):
        run(iters)  # plans cached, recipes derived
        p0, q0 = RUNS["plans"], RUNS["queries"]
        run(iters)
        counts.append((RUNS["plans"] - p0, RUNS["queries"] - q0))
    return ((counts[1][0] - counts[0][0]) / k, (counts[1][1] - counts[0][1]) / k)


def _cg(m: Any = None) -> Callable[[int], Any]:
    a, b = xp.asarray(SPD), rhs(SPD.shape[0])
    return lambda k: SL.cg(a, b, rtol=0.0, maxiter=k, M=m)


# solver -> (one run of k iterations, plans per iteration, queries per iteration). scipy's
# loop makes per iteration: cg one SpMV, the direction update, two vector updates and two
# dots (three with M: and M r); minres one SpMV, four vector updates, two dots (and the
# norm of x its test reads); bicgstab two SpMVs, six updates, five dots; lsqr one product
# with A and one with A^T, four updates, two norms
CASES: dict[str, tuple[Callable[[int], Any], int, int]] = {
    "cg": (_cg(), 1, 6),
    "cg_jacobi": (_cg(SL.jacobi(xp.asarray(SPD))), 1, 8),
    "minres": (lambda k: SL.minres(xp.asarray(SPD), rhs(100), rtol=0.0, maxiter=k), 1, 8),
    "bicgstab": (lambda k: SL.bicgstab(xp.asarray(NONSYM), rhs(100), rtol=0.0, maxiter=k),
                 2, 13),
    "lsqr": (lambda k: SL.lsqr(xp.asarray(TALL), rhs(TALL.shape[0]), atol=0.0, btol=0.0,
                               conlim=0.0, iter_lim=k), 2, 8),
}


@pytest.mark.parametrize("name", list(CASES))
def test_plans_and_queries_per_iteration(name: str) -> None:
    """cg and minres: one compute per iteration (the step size a lazy 0-d array the
    updates read in the same plan); no iteration runs a pass more than counted here."""
    run, plans, queries = CASES[name]
    assert _per_iteration(run) == (plans, queries)


def test_cg_step_size_stays_lazy_and_matches_scipy() -> None:
    """One iteration at a time: the native cg's iterates are scipy's (same algorithm,
    ``alpha`` never read to the host) and each is one compute."""
    b = rhs(SPD.shape[0], seed=4)
    ours: list[np.ndarray] = []
    theirs: list[np.ndarray] = []
    SL.cg(xp.asarray(SPD), b, rtol=0.0, maxiter=6, callback=lambda x: ours.append(np.asarray(x)))
    spla.cg(SPD, b, rtol=0.0, maxiter=6, callback=lambda x: theirs.append(x.copy()))
    assert len(ours) == len(theirs) == 6
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-14)


DOTS: dict[str, Callable[[Any, Any], Any]] = {
    "vecdot": lambda a, c: xp.vecdot(a, c),
    "sum_of_product": lambda a, c: xp.sum(a * c),
    "matmul": lambda a, c: a @ c,
    "tensordot": lambda a, c: xp.tensordot(a, c, axes=1),
}


def _natural_cg(dot: Callable[[Any, Any], Any], iters: int) -> tuple[Any, float]:
    """CG as a notebook writes it: nothing computed explicitly, ``float`` reads only."""
    a, b = xp.asarray(SPD), xp.asarray(rhs(SPD.shape[0], seed=7))
    x = xp.zeros(SPD.shape[0])
    r = b - a @ x
    p, rr = r, float(dot(r, r))
    for _ in range(iters):
        ap = a @ p
        alpha = rr / float(dot(p, ap))
        x, r = x + alpha * p, r - alpha * ap
        rr_new = float(dot(r, r))
        p, rr = r + (rr_new / rr) * p, rr_new
    return x, rr


def _natural_cg_numpy(iters: int) -> np.ndarray:
    a, b = SPD, rhs(SPD.shape[0], seed=7)
    x = np.zeros(a.shape[0])
    r = b - a @ x
    p, rr = r, float(r @ r)
    for _ in range(iters):
        ap = a @ p
        alpha = rr / float(p @ ap)
        x, r = x + alpha * p, r - alpha * ap
        rr_new = float(r @ r)
        p, rr = r + (rr_new / rr) * p, rr_new
    return x


def test_natural_cg_costs_the_same_in_every_dot_spelling() -> None:
    """Issue 34 item 4: each spelling of a dot plans the same inside a loop (the same
    plans and queries per iteration) and gives NumPy's iterate."""
    ref = _natural_cg_numpy(8)
    seen = {}
    for name, dot in DOTS.items():
        seen[name] = _per_iteration(lambda k, d=dot: _natural_cg(d, k))
        np.testing.assert_allclose(np.asarray(_natural_cg(dot, 8)[0]), ref, rtol=1e-10,
                                   atol=1e-12)
    assert len(set(seen.values())) == 1, seen
