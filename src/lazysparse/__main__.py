"""``python -m lazysparse``: version, devices, and a small fused sparse demo checked.

``python -m lazysparse warm [--dtype D ...] [--layout csr|dense ...] [--only OP ...]``
compiles the kernels of the common operations into the disk cache (``lazysparse.warm``) so
later processes load them instead of compiling.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def warm_command(argv: list[str]) -> int:
    """Compile (or load) the common operations' kernels; print one line each and a total."""
    from lazysparse import warm  # loads the namespace and Numba: only for this command
    from lazysparse.kernels.backends import cache_dir

    parser = argparse.ArgumentParser(prog="python -m lazysparse warm",
                                     description=warm.__doc__.split("\n")[0])
    parser.add_argument("--dtype", action="append", choices=warm.DTYPES,
                        help="dtypes to warm (default: all of " + ", ".join(warm.DTYPES) + ")")
    parser.add_argument("--layout", action="append", choices=[x.value for x in warm.Layout],
                        help="matrix storage to warm (default: csr and dense)")
    parser.add_argument("--only", action="append", choices=warm.operation_names(),
                        help="warm only these operations (default: all)")
    args = parser.parse_args(argv)
    dtypes = tuple(args.dtype or warm.DTYPES)
    layouts = tuple(warm.Layout(v) for v in args.layout) if args.layout else tuple(warm.Layout)
    print(f"warming the kernel cache {cache_dir()}")
    compiled = loaded = 0
    start = time.perf_counter()
    only = frozenset(args.only) if args.only else None
    for w in warm.warm(layouts, dtypes, only):
        compiled, loaded = compiled + w.compiled, loaded + w.loaded
        layout = w.layout.value if w.layout is not None else "vector"
        print(f"  {w.name:<18} {layout:<6} {w.dtype:<7} compiled {w.compiled}, "
              f"loaded {w.loaded}  {w.seconds:6.2f} s")
    print(f"{compiled} kernels compiled, {loaded} loaded from disk in "
          f"{time.perf_counter() - start:.1f} s")
    return 0


def main() -> int:
    """Print the version and devices, then build, explain, run and check a fused computation."""
    import lazysparse as xp
    from lazysparse.engine import executor_for

    print(f"lazysparse {xp.__version__}")
    info = xp.__array_namespace_info__()
    print("devices:", ", ".join(str(d) for d in info.devices()))

    n, k = 2000, 16
    S = xp.random((n, n), density=0.002, format="csr", seed=0)
    rng = np.random.default_rng(0)
    U = xp.asarray(rng.standard_normal((n, k)))
    V = xp.asarray(rng.standard_normal((n, k)))
    # the executor compute() picks for these arrays (engine.executor_for: the device's
    # backend, else LAZYSPARSE_EXECUTOR's, default ``compiled``)
    print(f"executor: {executor_for(S.device.name).__name__} (device {S.device.name})")
    print(f"\nS: {S.shape} {S.format}, nnz={S.nnz}; U, V: {U.shape} dense")

    print("\nSDDMM  R = S * (U @ V.T)   (lazy: nothing has run yet)")
    R = S * (U @ V.T)
    print(xp.explain(R))

    t0 = time.perf_counter()
    xp.compute(R)
    t1 = time.perf_counter()
    expected = np.asarray(S) * (np.asarray(U) @ np.asarray(V).T)
    ok = np.allclose(np.asarray(R), expected)
    print(f"computed in {t1 - t0:.3f} s (first call includes compilation); "
          f"result format {R.format}, nnz={R.nnz}; matches NumPy: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["warm"]:
        raise SystemExit(warm_command(sys.argv[2:]))
    raise SystemExit(main())
