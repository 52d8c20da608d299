"""Where a cached kernel's load goes in a new process (issue 35 item 3): fresh processes on a
warm kernel cache, each timing the one-time costs (the backend's import, Numba's target
initialization) and then, per kernel loaded from disk, the library's part (lowering and
printing the kernel to find its cache file, running the module) and Numba's (its index
key, reading the index and data files, rebuilding the LLVM library, the rest of the
dispatcher's compile path). Best of ``--repeat`` processes per item; ``PYTHONPATH`` picks
the tree to measure, so two trees compare in one run.

Usage: ``python benchmarks/bench_kernel_load.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

# (label, module, attribute): wrapped to time it, in the child
TIMED = [
    ("library: lower + print (build_kernel)", "lazysparse.kernels.backends.numba.kernel",
     "build_kernel"),
    ("library: run the module (load_module)", "lazysparse.kernels.backends.numba.cache",
     "load_module"),
    ("numba: dispatcher compile path (total)", "numba.core.dispatcher", "Dispatcher.compile"),
    ("numba: load_overload (before: Numba's own)", "numba.core.caching",
     "FunctionCache.load_overload"),
    ("load_overload (after: formats.numba_load)", "lazysparse.formats.numba_load",
     "load_overload"),
    ("numba: target refresh", "numba.core.base", "BaseContext.refresh"),
    ("numba: index key", "numba.core.caching", "FunctionCache._index_key"),
    ("numba: rebuild library (LLVM)", "numba.core.codegen", "CPUCodeLibrary._unserialize"),
]


def _wrap(totals: dict[str, float], counts: collections.Counter, label: str, mod: str,
          attr: str) -> None:
    import importlib

    try:  # a tree without the function (the tree before a change) leaves it out
        owner: Any = importlib.import_module(mod)
        *path, name = attr.split(".")
        for p in path:
            owner = getattr(owner, p)
        fn = getattr(owner, name)
    except (ImportError, AttributeError):
        return

    def timed(*a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            totals[label] += time.perf_counter() - t
            counts[label] += 1

    setattr(owner, name, timed)


def _cells(xp: Any) -> list[Any]:
    import numpy as np
    import scipy.sparse as sp

    a = xp.asarray(sp.random_array((2000, 3000), density=0.01, format="csr", rng=0))
    v, w = xp.asarray(np.ones(3000)), xp.asarray(np.ones(2000))
    return [lambda: xp.compute(a * 3.0 + a), lambda: xp.compute(xp.sum(a, axis=0)),
            lambda: xp.compute(a.T @ w), lambda: xp.compute(xp.max(a, axis=1)),
            lambda: xp.compute(a @ a.T), lambda: xp.compute(xp.exp(v) + v),
            lambda: float(xp.vecdot(v, v)), lambda: xp.compute(a * (a > 0.5)),
            lambda: xp.compute(xp.sqrt(a) + 1.0), lambda: xp.compute(xp.mean(a, axis=1))]


def _child() -> None:
    t0 = time.perf_counter()
    import numpy as np
    import scipy.sparse as sp

    import lazysparse as xp
    out: dict[str, Any] = {"import lazysparse": time.perf_counter() - t0}
    t = time.perf_counter()
    import lazysparse.kernels.backends.program  # noqa: F401 - the backend, with Numba

    out["import the backend (Numba)"] = time.perf_counter() - t
    totals: dict[str, float] = collections.defaultdict(float)
    counts: collections.Counter = collections.Counter()
    for label, mod, attr in TIMED:
        _wrap(totals, counts, label, mod, attr)
    a = xp.asarray(sp.random_array((300, 200), density=0.05, format="csr", rng=1))
    t = time.perf_counter()
    float(xp.sum(a @ xp.asarray(np.ones(200))))  # Numba's target initialization + one kernel
    out["first compiled call"] = time.perf_counter() - t
    out["first compiled call: of which Numba's target refresh"] = \
        totals["numba: target refresh"]
    totals.clear()
    counts.clear()
    from lazysparse.kernels.backends.numba import cache

    loaded = cache.STATS["disk_loaded"]
    cells = _cells(xp)
    t = time.perf_counter()
    for c in cells:
        c()
    out["later calls (all)"] = time.perf_counter() - t
    t = time.perf_counter()
    for c in cells:
        c()
    out["the same calls again (hot)"] = time.perf_counter() - t
    n = cache.STATS["disk_loaded"] - loaded
    out["kernel functions loaded"] = n
    out["compiled"] = cache.STATS["compiled"]
    out["per loaded function: the calls' extra time over hot"] = \
        (out["later calls (all)"] - out["the same calls again (hot)"]) / max(n, 1)
    for label in totals:
        out[f"per loaded function: {label}"] = totals[label] / max(n, 1)
    print(json.dumps(out))


def _spawn(cache: str) -> dict[str, Any]:
    env = dict(os.environ, LAZYSPARSE_CACHE_DIR=cache, LAZYSPARSE_COMPILE="sync",
               NUMBA_NUM_THREADS="1")
    res = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--child", action="store_true")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    if args.child:
        _child()
        return
    cache = tempfile.mkdtemp(prefix="lsk-kernel-load-")
    _spawn(cache)  # populate
    runs = [_spawn(cache) for _ in range(args.repeat)]
    print(f"| item | best of {args.repeat} | unit |")
    print("|---|---:|---|")
    for k in runs[0]:
        best = min(r.get(k, 0) for r in runs)
        unit = "" if k in ("kernel functions loaded", "compiled") else "ms"
        print(f"| {k} | {best if not unit else best * 1000:.1f} | {unit} |")


if __name__ == "__main__":
    main()
