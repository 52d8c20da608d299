"""Per-call overhead of small computations, lazysparse vs NumPy/scipy (not a test).

Usage: ``python benchmarks/bench_overhead.py [--reps N]``. Each case is written as a user
would (``xp.compute(b + c)``, ``float(xp.sum(b * c))``, ``A + B`` on small sparse matrices)
and timed per call (the 10th percentile of N calls after warm-up, so a loaded machine's
outliers do not count). Time is split three ways: building the expression, everything
``xp.compute`` does (plan, cache lookup, recipe binding, the kernel, the result), and the
kernel's own run (the cached recipe called directly, NumPy's work included for small
dense queries); "overhead" is compute minus the kernel's own run.
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
from lazysparse.api.execution import build_plan  # noqa: E402
from lazysparse.engine.plan_cache import lookup  # noqa: E402


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
    xp.compute(build())  # a plan of this shape is cached with its program
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
    """(build, compute, kernel's own run) in microseconds; compute is the time of
    ``xp.compute(build())`` less the build's, as a loop builds then computes."""
    t_build = per_call(build, reps)
    t_total = per_call(lambda: xp.compute(build()), reps)
    t_kernel = per_call(kernel_only(build), reps)
    return t_build, t_total - t_build, t_kernel


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

    print("| case | build µs | compute µs | kernel µs | overhead µs | peer µs |")
    print("|---|---|---|---|---|---|")
    cases: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
        ("`xp.compute(b + c)`, n=100", lambda: b + c, lambda: bn + cn),
        ("`xp.sum(b * c)`, n=100", lambda: xp.sum(b * c), lambda: (bn * cn).sum()),
        ("`A + B`, 100×100 CSR, 5%", lambda: A + B, lambda: sa + sb),
        ("`A @ x`, 100×100 CSR", lambda: A @ b, lambda: sa @ bn),
    ]
    for name, build, peer in cases:
        t_b, t_c, t_k = split(build, reps)
        print(f"| {name} | {t_b:.1f} | {t_c:.1f} | {t_k:.1f} | {t_c - t_k:.1f} | "
              f"{per_call(peer, reps):.1f} |", flush=True)
    t_f = per_call(lambda: float(xp.sum(v * 2.0)), reps)
    print(f"\n`float(xp.sum(v * 2.0))`, n=10,000, everything: {t_f:.1f} µs "
          f"(NumPy {per_call(lambda: float((v.tensor().values * 2.0).sum()), reps):.1f} µs)")


if __name__ == "__main__":
    main()
