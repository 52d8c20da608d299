"""Per-call overhead of small computations, lazysparse vs NumPy/scipy (not a test).

Usage: ``python benchmarks/bench_overhead.py [--reps N]``. Each case is written as a user
would (``xp.compute(b + c)``, ``float(xp.sum(b * c))``, ``A + B`` on small sparse matrices)
and timed per call (the 10th percentile of N calls after warm-up, so a loaded machine's
outliers do not count). The main column is what the user pays per line: **total** =
building the expression + ``xp.compute`` of it (``xp.compute(v + 0.5 * p)`` as written).
It is split into the build, everything ``xp.compute`` does (plan, cache lookup, recipe
binding, the kernel, the result), and the kernel's own run (the cached recipe called
directly, NumPy's work included for small dense queries); "overhead" is total minus the
kernel's own run, "× peer" the total over NumPy/scipy's time for the same line.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import lazysparse as xp  # noqa: E402
from lazysparse.api.chapters.compute import build_plan  # noqa: E402
from lazysparse.engine.plan_cache import lookup  # noqa: E402
from lazysparse.engine.tiers import CompileMode, compile_mode_set  # noqa: E402


def warm(build: Callable[[], Any]) -> None:
    """Compute one array of this shape compiling in process: the timed calls run the
    compiled tier a user's loop reaches once the background compile is done (not the eager
    tier of a shape's first calls)."""
    with compile_mode_set(CompileMode.SYNC):
        xp.compute(build())


def per_call(fn: Callable[[], Any], reps: int) -> float:
    """The 10th-percentile time of one call, in microseconds."""
    for _ in range(5):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        ts.append(time.perf_counter_ns() - t0)
    ts.sort()
    return ts[len(ts) // 10] / 1e3


def kernel_only(build: Callable[[], Any]) -> Callable[[], Any]:
    """A call of the compiled query of a built array's plan alone (its cached recipe)."""
    warm(build)  # a plan of this shape is cached with its program
    y = build()  # uncomputed: its plan is the query (a computed one would be its table)
    entry, inputs, params = lookup(build_plan((y,)))
    prog = entry.program
    assert prog is not None and len(prog.recipes) == 1, "one compute query expected"
    (j, recipe), = prog.recipes.items()
    env = {body.lhs: inputs[body.rhs.tns.val.index]
           for i, body in enumerate(entry.template.bodies) if i in entry.slots}
    data = recipe.data(env, params)
    return lambda: recipe.run(data)


def split(build: Callable[[], Any], reps: int) -> tuple[float, float, float]:
    """(total, build, kernel's own run) in microseconds; total is the time of
    ``xp.compute(build())``: the build and the compute, as the user's line pays them."""
    warm(build)
    t_build = per_call(build, reps)
    t_total = per_call(lambda: xp.compute(build()), reps)
    t_kernel = per_call(kernel_only(build), reps)
    return t_total, t_build, t_kernel


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=3000)
    args = ap.parse_args()
    reps = args.reps
    rng = np.random.default_rng(0)
    bn, cn = rng.random(100), rng.random(100)
    b, c = xp.asarray(bn), xp.asarray(cn)
    sa = sp.random_array((100, 100), density=0.05, format="csr", rng=rng)
    sb = sp.random_array((100, 100), density=0.05, format="csr", rng=rng)
    A, B = xp.asarray(sa), xp.asarray(sb)
    v = xp.asarray(rng.random(10_000))
    v1n, p1n = rng.random(1000), rng.random(1000)
    v1, p1 = xp.asarray(v1n), xp.asarray(p1n)
    sa1 = sp.random_array((1000, 1000), density=0.01, format="csr", rng=rng)
    A1 = xp.asarray(sa1)

    print("| case | total µs (build + compute) | build µs | compute µs | kernel µs | "
          "overhead µs | peer µs | × peer |")
    print("|---|---|---|---|---|---|---|---|")
    cases: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
        ("`xp.compute(v + 0.5 * p)`, n=1000", lambda: v1 + 0.5 * p1, lambda: v1n + 0.5 * p1n),
        ("`xp.compute(b + c)`, n=100", lambda: b + c, lambda: bn + cn),
        ("`xp.sum(b * c)`, n=100", lambda: xp.sum(b * c), lambda: (bn * cn).sum()),
        ("`A + B`, 100×100 CSR, 5%", lambda: A + B, lambda: sa + sb),
        ("`A @ x`, 100×100 CSR", lambda: A @ b, lambda: sa @ bn),
        ("`A @ x`, 1000×1000 CSR, 1%", lambda: A1 @ v1, lambda: sa1 @ v1n),
    ]
    for name, build, peer in cases:
        t_t, t_b, t_k = split(build, reps)
        t_p = per_call(peer, reps)
        print(f"| {name} | {t_t:.1f} | {t_b:.1f} | {t_t - t_b:.1f} | {t_k:.1f} | "
              f"{t_t - t_k:.1f} | {t_p:.1f} | {t_t / t_p:.0f} |", flush=True)
    warm(lambda: xp.sum(v * 2.0))
    t_f = per_call(lambda: float(xp.sum(v * 2.0)), reps)
    vn = v.tensor().values
    t_fp = per_call(lambda: float((vn * 2.0).sum()), reps)
    print(f"| `float(xp.sum(v * 2.0))`, n=10,000 | {t_f:.1f} | | | | | {t_fp:.1f} | "
          f"{t_f / t_fp:.0f} |")


if __name__ == "__main__":
    main()
