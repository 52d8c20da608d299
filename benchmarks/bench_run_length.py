"""Run-length images (issue 16): lazysparse's run-at-a-time executor against NumPy on the
same data, dense, in one run (not a test).

Data: a piecewise-constant 4096 x 4096 float64 image (fill 0: a background of zeros, then 64
random rectangles of random values, 50-500 pixels wide) stored run-length ("rle"), and a
run-length mask of 32 other rectangles (a 0/1 float64 copy for products, a bool copy for
``where``). NumPy works on the dense arrays.

Cases (each written as a user writes it, through ``xp.compute``):

- ``masked-sum``: ``xp.sum(img * mask)`` vs ``np.sum(img * mask)``;
- ``row-sum``: ``xp.sum(img, axis=1)`` vs ``img.sum(axis=1)``;
- ``affine``: ``img * 2 + 1`` vs NumPy's; the optimizer picks the result's layout (dense:
  the fill changes to 1), so the runs are expanded to 16M values;
- ``affine-rle``: the same kept run-length (``xp.asformat(img * 2 + 1, "rle")``);
- ``where``: ``xp.where(mask, img, 0)`` (result layout the optimizer's: csr-like);
- ``where-rle``: the same kept run-length.

Each case is checked against NumPy, called once to warm up (compiles), then timed best of
``--reps`` rounds, lazysparse and NumPy interleaved. Ratio: NumPy time / lazysparse time
(> 1: lazysparse faster). Single thread (``NUMBA_NUM_THREADS=1`` by default).

Usage::

    python benchmarks/bench_run_length.py [--reps 5] [--n 4096]
"""

from __future__ import annotations

import os
import sys
import tempfile

os.environ.setdefault("LAZYSPARSE_CACHE_DIR", tempfile.mkdtemp(prefix="lsk-bench-rle-"))
os.environ.setdefault("NUMBA_NUM_THREADS", "1")
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import lazysparse as xp  # noqa: E402
from lazysparse.kernels.backends import run_length  # noqa: E402


def rectangles(rng: np.random.Generator, n: int, count: int, binary: bool) -> np.ndarray:
    """``count`` random rectangles (50-500 wide, 100-2000 tall) painted on zeros."""
    img = np.zeros((n, n))
    for _ in range(count):
        w, h = int(rng.integers(50, 501)), int(rng.integers(100, 2001))
        c, r = int(rng.integers(0, n - w)), int(rng.integers(0, max(1, n - h)))
        img[r:r + h, c:c + w] = 1.0 if binary else float(rng.integers(1, 256)) / 4
    return img


def best(fn: Callable[[], Any], reps: int, other: Callable[[], Any]) -> tuple[float, float]:
    """Best times of ``fn`` and ``other``, interleaved."""
    ta, tb = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ta.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        other()
        tb.append(time.perf_counter() - t0)
    return min(ta), min(tb)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--n", type=int, default=4096)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = args.n
    img = rectangles(rng, n, 64, binary=False)
    maskf = rectangles(rng, n, 32, binary=True)
    maskb = maskf > 0
    x = xp.asformat(xp.asarray(img), "rle")
    mf = xp.asformat(xp.asarray(maskf), "rle")
    mb = xp.asformat(xp.asarray(maskb), "rle")
    runs = x.tensor().levels[-1].idx.size
    print(f"image {n}x{n} float64: {runs} runs ({runs / n:.1f} per row, mean length "
          f"{x.tensor().levels[-1].nstored / max(runs, 1):.0f}); mask "
          f"{mf.tensor().levels[-1].idx.size} runs")
    cases: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
        ("masked-sum", lambda: xp.compute(xp.sum(x * mf)), lambda: np.sum(img * maskf)),
        ("row-sum", lambda: xp.compute(xp.sum(x, axis=1)), lambda: img.sum(axis=1)),
        ("affine", lambda: xp.compute(x * 2 + 1), lambda: img * 2 + 1),
        ("affine-rle", lambda: xp.compute(xp.asformat(x * 2 + 1, "rle")),
         lambda: img * 2 + 1),
        ("where", lambda: xp.compute(xp.where(mb, x, 0)), lambda: np.where(maskb, img, 0)),
        ("where-rle", lambda: xp.compute(xp.asformat(xp.where(mb, x, 0), "rle")),
         lambda: np.where(maskb, img, 0)),
    ]
    print(f"{'case':12s} {'numpy ms':>9s} {'lazysparse ms':>14s} {'ratio':>7s}  "
          "run-length executor  result")
    for name, ls, ref in cases:
        before = run_length.STATS["calls"]
        got = ls()  # warm-up: compiles
        ran = run_length.STATS["calls"] > before
        want = ref()
        ok = np.allclose(np.asarray(got), want)
        t_ls, t_np = best(ls, args.reps, ref)
        print(f"{name:12s} {t_np * 1e3:9.2f} {t_ls * 1e3:14.2f} {t_np / t_ls:7.1f}  "
              f"{'yes' if ran else 'no':19s}  {got.format}{'' if ok else '  MISMATCH'}")


if __name__ == "__main__":
    main()
