"""``xp.concat`` of compressed blocks next to scipy's ``vstack``/``hstack``, one run.

Two ``n x m`` blocks with ``nnz`` stored entries each (float64; scipy's index dtype), joined
along rows and along columns in csr and csc, a csr + csc mix (scipy converts to the
requested format too), a stack along a new leading axis (next to scipy's vstack, which
moves the same data), and the join followed by column sums (issue 23's workflow and
``text_ngrams_min_df``'s first step). Each row gives the median time of both sides (runs
alternate so they share the machine's noise), the median and the best per-pair time ratio,
and the extra peak memory of one call of each (tracemalloc) with its ratio. Target: time
ratio <= 1.0 for the joins.

Not a test: ``python benchmarks/bench_concat.py [--n N --m M --nnz K --repeat R]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from bench_timing import extra_peak, paired_times

import lazysparse as xp

MiB = 2.0**20


@dataclass(frozen=True)
class Case:
    """One comparison: our call, scipy's, and a check that both agree."""

    name: str
    ours: Callable[[], object]
    theirs: Callable[[], object]
    check: Callable[[object, object], None]


def block(n: int, m: int, nnz: int, seed: int, fmt: str) -> sp.sparray:
    """An ``n x m`` block with about ``nnz`` random entries (float64, int32 indices as
    scipy gives them) in ``fmt``."""
    rng = np.random.default_rng(seed)
    rows, cols = (rng.integers(0, k, nnz, dtype=np.int32) for k in (n, m))
    coo = sp.coo_array((rng.random(nnz), (rows, cols)), shape=(n, m))
    coo.sum_duplicates()
    out = coo.asformat(fmt)
    assert out.indices.dtype == np.int32
    return out


def same_matrix(ours: object, theirs: object) -> None:
    """Same format, shape and stored arrays as scipy's result."""
    got = xp.to_scipy(ours)
    assert got.format == theirs.format and got.shape == theirs.shape, (got, theirs)
    np.testing.assert_array_equal(got.indptr, theirs.indptr)
    np.testing.assert_array_equal(got.indices, theirs.indices)
    np.testing.assert_array_equal(got.data, theirs.data)


def same_entries(ours: object, theirs: object) -> None:
    """A stack holds the stored entries of scipy's vstack, in the same order."""
    t = ours.tensor()
    assert ours.format == "csf" and t.nnz == theirs.nnz
    np.testing.assert_array_equal(t.levels[-1].idx, theirs.indices)
    np.testing.assert_array_equal(t.values, theirs.data)


def same_sums(ours: object, theirs: object) -> None:
    """Equal column sums."""
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-12)


def cases(n: int, m: int, nnz: int) -> list[Case]:
    """The joins and join-then-sum workflows."""
    out = []
    for fmt in ("csr", "csc"):
        a, b = block(n, m, nnz, 1, fmt), block(n, m, nnz, 2, fmt)
        xa, xb = xp.asarray(a), xp.asarray(b)
        for axis, stack in ((0, sp.vstack), (1, sp.hstack)):
            out.append(Case(f"{stack.__name__} {fmt}",
                            lambda xa=xa, xb=xb, axis=axis: xp.concat([xa, xb], axis=axis),
                            lambda a=a, b=b, stack=stack, fmt=fmt: stack([a, b], format=fmt),
                            same_matrix))
    a, c = block(n, m, nnz, 1, "csr"), block(n, m, nnz, 3, "csc")
    xa, xc = xp.asarray(a), xp.asarray(c)
    out.append(Case("vstack csr + csc", lambda: xp.concat([xa, xc], axis=0),
                    lambda: sp.vstack([a, c], format="csr"), same_matrix))
    b = block(n, m, nnz, 2, "csr")
    xb = xp.asarray(b)
    out.append(Case("stack csr (new axis 0; scipy vstack)", lambda: xp.stack([xa, xb]),
                    lambda: sp.vstack([a, b], format="csr"), same_entries))
    for axis, stack in ((0, sp.vstack), (1, sp.hstack)):
        out.append(Case(
            f"{stack.__name__} csr + column sums",
            lambda axis=axis: np.asarray(xp.sum(xp.concat([xa, xb], axis=axis), axis=0)),
            lambda stack=stack: stack([a, b], format="csr").sum(axis=0), same_sums))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--m", type=int, default=100_000)
    parser.add_argument("--nnz", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    print(f"two {args.n} x {args.m} blocks, {args.nnz} entries each; median of "
          f"{args.repeat} alternating runs")
    print(f"{'case':34s} {'ours ms':>9s} {'scipy ms':>9s} {'ratio':>6s} {'best':>6s} "
          f"{'ours MiB':>9s} {'scipy MiB':>9s} {'mem':>5s}")
    for case in cases(args.n, args.m, args.nnz):
        case.check(case.ours(), case.theirs())  # also warms both up (Numba, caches)
        ours, theirs, ratio, best = paired_times(case.ours, case.theirs, args.repeat)
        mo, mt = extra_peak(case.ours), extra_peak(case.theirs)
        print(f"{case.name:34s} {ours * 1e3:9.2f} {theirs * 1e3:9.2f} {ratio:6.2f} "
              f"{best:6.2f} {mo / MiB:9.1f} {mt / MiB:9.1f} {mo / mt:5.2f}")


if __name__ == "__main__":
    main()
