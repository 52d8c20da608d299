"""What ``optimizer.pipeline.optimize`` costs per expression, cold (not a test).

Usage: ``python benchmarks/bench_optimizer_cost.py [--reps N] [--profile] [--explain FILE]``.
Each case's plan is built once (``api.array.materialize.build_plan``); its optimization
is timed with
every optimizer memo emptied first (what a new process pays for a new expression: the best
of N runs). The scipy ``hessian(rosen, x)`` plans are captured by wrapping the plan cache's
``optimize`` while scipy runs on the eager tier (no compiles). ``--profile`` adds cProfile's
cumulative time per pass over all cases; ``--explain`` writes every case's chosen plan
(``logic.format_plan`` of the optimized plan) to compare two trees.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import os
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.sparse as sp

os.environ.setdefault("SCIPY_ARRAY_API", "1")
os.environ.setdefault("LAZYSPARSE_COMPILE", "eager")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import lazysparse as xp  # noqa: E402
from lazysparse.api.array.materialize import build_plan  # noqa: E402
from lazysparse.engine import plan_cache  # noqa: E402
from lazysparse.logic.nodes import Plan  # noqa: E402
from lazysparse.logic.printer import format_plan  # noqa: E402
from lazysparse.optimizer import pipeline  # noqa: E402


def clear_memos() -> None:
    """Empty every memo of the optimizer's modules (a new process's state)."""
    for name, mod in list(sys.modules.items()):
        if not name.startswith("lazysparse.optimizer"):
            continue
        for obj in vars(mod).values():
            clear = getattr(obj, "cache_clear", None)
            if callable(clear) and isinstance(obj, functools._lru_cache_wrapper):
                clear()


def ordinary_cases() -> dict[str, Callable[[], object]]:
    """The ordinary expressions: elementwise chains, reductions, products, CG's lines."""
    rng = np.random.default_rng(0)
    n = 200
    A = xp.asarray(sp.random(n, n, density=0.05, format="csr", random_state=1))
    B = xp.asarray(sp.random(n, n, density=0.05, format="csr", random_state=2))
    D = xp.asarray(rng.random((n, n)))
    E = xp.asarray(rng.random((n, n)))
    x = xp.asarray(rng.random(n))
    y = xp.asarray(rng.random(n))
    z = xp.asarray(rng.random(n))
    L = xp.asarray(sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr"))
    return {
        "dense 2-op chain": lambda: D * 2.0 + E,
        "dense 5-op chain": lambda: xp.exp(D) * E - D / 3.0 + xp.sqrt(E),
        "dense 8-op chain": lambda: ((D + E) * (D - E) / 2.0 + xp.abs(D) - E * 3.0) ** 2,
        "csr 2-op chain": lambda: A * 2.0 + B,
        "csr 4-op chain": lambda: xp.abs(A * 3.0) * B - A,
        "sum(D, axis=0)": lambda: xp.sum(D * E, axis=0),
        "sum(A, axis=1)": lambda: xp.sum(A * A, axis=1),
        "A @ x": lambda: A @ x,
        "A.T @ x": lambda: A.T @ x,
        "A @ B": lambda: A @ B,
        "x / norms[:, None]": lambda: D / xp.sqrt(xp.sum(D * D, axis=1))[:, None],
        "5-term axpy": lambda: 2.0 * x + 3.0 * y - 0.5 * z + x * 4.0 + y / 7.0,
        "CG: L @ p": lambda: L @ x,
        "CG: alpha": lambda: xp.vecdot(x, x) / xp.vecdot(y, L @ y),
        "CG: x + alpha p": lambda: x + 0.25 * y,
        "CG: r - alpha Ap": lambda: x - 0.25 * (L @ y),
        "CG: p = r + beta p": lambda: z + (xp.vecdot(x, x) / xp.vecdot(y, y)) * y,
    }


def wide_plans() -> dict[str, Plan]:
    """Contractions of 5-7 vectors to a scalar: every loop order is a candidate (up to 7!)."""
    rng = np.random.default_rng(1)
    vs = [xp.asarray(rng.random(4 + k)) for k in range(7)]
    return {f"wide: {n}-vector einsum": build_plan((xp.einsum(
        ",".join("abcdefg"[:n]) + "->", *vs[:n]),)) for n in (5, 6, 7)}


def ordinary_plans() -> dict[str, Plan]:
    """Each ordinary case's plan."""
    return {k: build_plan((f(),)) for k, f in ordinary_cases().items()}  # type: ignore[arg-type]


def hessian_plans() -> dict[str, Plan]:
    """Every distinct plan ``scipy.differentiate.hessian(rosen, x)`` optimizes."""
    from scipy.differentiate import hessian
    from scipy.optimize import rosen

    seen: dict[str, Plan] = {}
    real = plan_cache.optimize

    def capture(plan: Plan, device: str = "cpu") -> Plan:
        seen.setdefault(f"hessian #{len(seen):03d}", plan)
        return real(plan, device)

    plan_cache.optimize = capture  # type: ignore[assignment]
    try:
        hessian(rosen, xp.asarray(np.array([0.5, 1.1, 0.9, 1.4, 0.7])))
    finally:
        plan_cache.optimize = real  # type: ignore[assignment]
    return seen


def cold_ms(plan: Plan, reps: int) -> float:
    """The best of ``reps`` cold optimizations of ``plan``, in ms."""
    best = float("inf")
    for _ in range(reps):
        clear_memos()
        t0 = time.perf_counter()
        pipeline.optimize(plan)
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def pass_times(plans: dict[str, Plan], reps: int) -> dict[str, float]:
    """Milliseconds per pass, summed over ``plans`` (each optimized cold, best of ``reps``)."""
    total = {f.__name__: 0.0 for f in pipeline.PASSES}
    for plan in plans.values():
        best = {k: float("inf") for k in total}
        for _ in range(reps):
            clear_memos()
            p = plan
            for f in pipeline.PASSES:
                t0 = time.perf_counter()
                p = f(p)
                best[f.__name__] = min(best[f.__name__], time.perf_counter() - t0)
        for k, t in best.items():
            total[k] += t * 1e3
    return total


def pass_profile(plans: dict[str, Plan], reps: int) -> None:
    """Per-pass time over all plans, then cProfile's top functions (all plans cold once)."""
    times = pass_times(plans, reps)
    print(f"\nper pass ({len(plans)} plans cold, best of {reps}, {sum(times.values()):.1f} ms):")
    for name, t in sorted(times.items(), key=lambda r: -r[1]):
        print(f"  {name:22s} {t:8.2f} ms")
    prof = cProfile.Profile()
    clear_memos()
    prof.enable()
    for p in plans.values():
        pipeline.optimize(p)
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


def explained(plans: dict[str, Plan]) -> str:
    """Every case's ``xp.explain`` (ordinary cases: loop orders, formats, schedules, kernel
    sources) and every plan's optimized form, to diff two trees' choices."""
    parts = [f"== {k}\n{xp.explain(f())}\n" for k, f in ordinary_cases().items()]
    parts += [f"== {k}\n{format_plan(pipeline.optimize(p))}\n" for k, p in plans.items()]
    return "".join(parts)


def main() -> None:
    """Time each case, print a table and the totals."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--explain", type=Path)
    args = ap.parse_args()
    plans = {**ordinary_plans(), **wide_plans(), **hessian_plans()}
    for p in plans.values():  # warm imports and registries
        pipeline.optimize(p)
    if args.explain:
        args.explain.write_text(explained(plans))
    times = {k: cold_ms(p, args.reps) for k, p in plans.items()}
    for k, t in times.items():
        print(f"{k:24s} {t:8.2f} ms")
    ordinary = [t for k, t in times.items() if not k.startswith(("hessian", "wide"))]
    hess = [t for k, t in times.items() if k.startswith("hessian")]
    print(f"ordinary: {len(ordinary)} plans, total {sum(ordinary):.1f} ms, "
          f"max {max(ordinary):.2f} ms")
    print(f"hessian: {len(hess)} plans, total {sum(hess):.1f} ms, max {max(hess):.2f} ms")
    if args.profile:
        pass_profile(plans, args.reps)


if __name__ == "__main__":
    main()
