"""``xp.linalg.solve`` on a sparse 2-D Laplacian next to ``scipy.sparse.linalg.spsolve``.

Grids of g x g points (n = g^2 unknowns, 5 stored entries a row). Three rows per grid:
the first solve (``xp.asarray`` of a fresh csr copy, so the SuperLU factorization is not
cached yet) against ``spsolve``, and a repeated solve with the same matrix (cached
factorization) against ``spsolve`` again (scipy refactorizes each call), and scipy's own
``splu(A).solve`` reuse as the fair peer of the cached path. Best of ``--repeat`` runs,
alternating so both sides share the machine's noise; the ratio is ours / scipy's.

Not a test: ``python benchmarks/bench_solve.py [--grids 100 300 --repeat 5]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import lazysparse as xp


def laplacian_2d(g: int) -> sp.csr_array:
    """The 5-point Laplacian of a g x g grid (n = g^2, symmetric positive definite)."""
    t = sp.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(g, g))
    eye = sp.eye_array(g)
    return sp.csr_array(sp.kron(t, eye) + sp.kron(eye, t))


def best(fn: Callable[[], object], repeat: int) -> float:
    """Best wall time of ``repeat`` calls of ``fn`` (seconds)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run(g: int, repeat: int) -> None:
    """Print the three comparisons for one grid."""
    a = laplacian_2d(g)
    b = np.linspace(1.0, 2.0, a.shape[0])
    ref = spla.spsolve(a.tocsc(), b)
    cached = xp.asarray(a)
    out = np.asarray(xp.linalg.solve(cached, xp.asarray(b)))  # also warms the cache
    assert np.allclose(out, ref, rtol=1e-8, atol=1e-10), "solve differs from spsolve"

    def first() -> object:
        return xp.linalg.solve(xp.asarray(a.copy()), b)

    def ours_cached() -> object:
        return xp.linalg.solve(cached, b)

    def theirs() -> object:
        return spla.spsolve(a.tocsc(), b)

    lu = spla.splu(a.tocsc())
    rows = [("first solve vs spsolve", first, theirs),
            ("repeat solve vs spsolve", ours_cached, theirs),
            ("repeat solve vs splu.solve", ours_cached, lambda: lu.solve(b))]
    for name, ours, peer in rows:
        t_ours, t_peer = best(ours, repeat), best(peer, repeat)
        print(f"grid {g}x{g} (n={a.shape[0]}, nnz={a.nnz}) {name:28s} "
              f"ours {t_ours * 1e3:9.2f} ms  scipy {t_peer * 1e3:9.2f} ms  "
              f"ratio {t_ours / t_peer:6.2f}")


def main() -> None:
    """Parse the grid sizes and run each."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--grids", type=int, nargs="+", default=[100, 300])
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    for g in args.grids:
        run(g, args.repeat)


if __name__ == "__main__":
    main()
