"""Element-wise assignment loops: lazysparse vs NumPy (dense) and scipy.sparse (lil/csr).

Each case is a loop a user writes — ``x[i, j] = v`` a thousand times at random positions
of a 1000 x 1000 array, then one read; ``count:`` ``x[i, j] = x[i, j] + 1`` (reading each
element back: new entries wait in a hashed insert buffer that element reads probe, csr) — or
a diagonal fill ``x[i, i] = 0`` of a lazy
array, or scikit-learn's ``euclidean_distances`` with lazysparse input (when installed).
Times are wall milliseconds of the whole loop including the read (best of ``--repeat``; the
first run, with cold kernels, is printed apart). Every result is checked against NumPy.
Not a test: nothing is asserted beyond correctness.

Usage: ``python benchmarks/bench_setitem.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

import lazysparse as xp

N = 1000
RNG = np.random.default_rng(0)
POS = RNG.integers(0, N, size=(1000, 2)).tolist()
VALS = RNG.standard_normal(1000).tolist()
BASE = sp.random_array((N, N), density=0.01, format="csr", random_state=1)


def _assign(x: Any) -> Any:
    for (i, j), v in zip(POS, VALS, strict=True):
        x[i, j] = v
    return x


def _count(x: Any) -> Any:
    """A counting loop: read each element, write it back plus one (new entries mostly)."""
    for i, j in POS:
        x[i, j] = x[i, j] + 1.0
    return x


def _expected() -> np.ndarray:
    return _assign(BASE.toarray())


def _timed(run: Callable[[], np.ndarray], repeat: int) -> tuple[float, float, np.ndarray]:
    """(first, best of the rest) seconds and the last result."""
    times = []
    out = np.zeros(0)
    for _ in range(repeat + 1):
        t0 = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - t0)
    return times[0], min(times[1:]), out


def _cases() -> dict[str, tuple[Callable[[], np.ndarray], np.ndarray]]:
    dense_expected = _expected()
    diag = np.full((N, N), 2.0)
    np.fill_diagonal(diag, 0.0)

    def lazy_diag(n: int) -> np.ndarray:
        x = xp.ones((n, n)) + 1.0
        for i in range(n):
            x[i, i] = 0.0
        return np.asarray(x)

    def scipy_lil() -> np.ndarray:
        m = BASE.tolil()
        return _assign(m).tocsr().toarray()

    def scipy_csr() -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sp.SparseEfficiencyWarning)
            return _assign(BASE.copy()).toarray()

    count_expected = _count(BASE.toarray())

    def scipy_dok_count() -> np.ndarray:
        return _count(BASE.todok()).toarray()

    def scipy_lil_count() -> np.ndarray:
        return _count(BASE.tolil()).toarray()

    def lazy_count(fmt: str) -> np.ndarray:
        x = _count(xp.asarray(BASE.asformat(fmt)))
        return np.asarray(x)

    return {
        "numpy dense": (lambda: _assign(BASE.toarray()), dense_expected),
        "lazysparse dense": (lambda: np.asarray(_assign(xp.asarray(BASE.toarray()))),
                             dense_expected),
        "scipy csr": (scipy_csr, dense_expected),
        "scipy lil->csr": (scipy_lil, dense_expected),
        "lazysparse csr": (lambda: np.asarray(_assign(xp.asarray(BASE))), dense_expected),
        "lazysparse coo": (lambda: np.asarray(_assign(xp.asarray(BASE.tocoo()))),
                           dense_expected),
        "lazysparse lazy diagonal n=60": (lambda: lazy_diag(60), diag[:60, :60]),
        f"lazysparse lazy diagonal n={N}": (lambda: lazy_diag(N), diag),
        "count: numpy dense": (lambda: _count(BASE.toarray()), count_expected),
        "count: scipy dok": (scipy_dok_count, count_expected),
        "count: scipy lil": (scipy_lil_count, count_expected),
        "count: lazysparse csr": (lambda: lazy_count("csr"), count_expected),
        "count: lazysparse coo": (lambda: lazy_count("coo"), count_expected),
    }


SKLEARN = """
import numpy as np, sklearn, time, lazysparse as xp
from sklearn.metrics.pairwise import euclidean_distances
for n in (60, 200):
    X = np.random.default_rng(n).standard_normal((n, 8))
    expected = euclidean_distances(X)
    with sklearn.config_context(array_api_dispatch=True):
        t0 = time.perf_counter()
        out = np.asarray(euclidean_distances(xp.asarray(X)))
        t = time.perf_counter() - t0
    ok = np.allclose(out, expected, atol=1e-12)
    print(f"  sklearn euclidean_distances n={n}: {t:.3f} s ({'ok' if ok else 'WRONG'})")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"1000 x[i, j] = v at random positions of {N}x{N} (csr: 1% stored), then a read")
    for name, (run, expected) in _cases().items():
        first, best, out = _timed(run, args.repeat)
        ok = np.array_equal(out, expected)
        print(f"  {name:34s} first {1e3 * first:8.1f} ms  best {1e3 * best:8.1f} ms"
              f"  {'ok' if ok else 'WRONG'}")
    try:
        import sklearn  # noqa: F401
    except ImportError:
        print("  scikit-learn not installed: euclidean_distances skipped")
        return
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    subprocess.run([sys.executable, "-c", SKLEARN], env=env, check=False)


if __name__ == "__main__":
    main()
