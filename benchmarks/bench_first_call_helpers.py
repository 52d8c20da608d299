"""First calls of the common constructors and conversions, each in a fresh process with an
empty kernel cache: seconds, and which package helpers Numba compiled (issue 35).

Each case runs in a child process (``--case NAME``) whose ``LAZYSPARSE_CACHE_DIR`` is a new
temporary directory and whose ``LAZYSPARSE_COMPILE`` is ``eager`` (no fused kernel compiles,
so what is left is the helpers'); the child wraps Numba's ``Dispatcher._compile_for_args``
and reports each compile. The time is the case alone (after the imports and its inputs).

Usage: ``python benchmarks/bench_first_call_helpers.py [--n 300]`` (with ``PYTHONPATH``
naming the lazysparse to measure).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import scipy.sparse as sp


def _cases(n: int) -> dict[str, Callable[[], Any]]:
    """Each case's thunk, over an n x (n + 100) matrix of density 0.05."""
    import lazysparse as xp

    s = sp.random(n, n + 100, density=0.05, format="csr", random_state=0)
    dense = s.toarray()

    def built() -> Any:
        return xp.asarray(s)

    def setitem() -> None:
        b = xp.asarray(s.copy())
        b[1, 2] = 5.0
        xp.compute(b)

    return {
        "asarray(scipy csr)": lambda: xp.asarray(s),
        "asarray(scipy csc)": lambda: xp.asarray(s.tocsc()),
        "asarray(scipy coo)": lambda: xp.asarray(s.tocoo()),
        "asarray(scipy dia)": lambda: xp.asarray(sp.diags_array([1.0, 2.0, 3.0], offsets=[-1, 0, 1],
                                                                shape=(n, n)).todia()),
        "asarray(scipy bsr)": lambda: xp.asarray(s[:, :n - n % 3].tobsr(blocksize=(3, 3))),
        "asarray(dense, csr)": lambda: xp.asarray(dense, format="csr"),
        "asarray(dense, coo)": lambda: xp.asarray(dense, format="coo"),
        "eye(csr)": lambda: xp.eye(n, format="csr"),
        "eye(coo)": lambda: xp.eye(n, format="coo"),
        "zeros(csr)": lambda: xp.zeros((n, n), format="csr"),
        "ones(csr)": lambda: xp.ones((n, n), format="csr"),
        "full(coo)": lambda: xp.full((n, n), 2.0, format="coo"),
        "asformat(csr, coo)": lambda: xp.asformat(built(), "coo"),
        "asformat(csr, csc)": lambda: xp.asformat(built(), "csc"),
        "asformat(coo, csr)": lambda: xp.asformat(xp.asarray(s.tocoo()), "csr"),
        "tocsr(csc)": lambda: xp.asarray(s.tocsc()).tocsr(),
        "to_scipy(csr)": lambda: built().to_scipy(),
        "concat(csr, csr)": lambda: xp.concat([built(), built()]),
        "concat(csr, csr, axis=1)": lambda: xp.concat([built(), built()], axis=1),
        "A[:10]": lambda: built()[:10],
        "A[3]": lambda: built()[3],
        "A[:, 3]": lambda: built()[:, 3],
        "A[:, 2:9]": lambda: built()[:, 2:9],
        "nonzero(A)": lambda: xp.nonzero(built()),
        "unique_values(A)": lambda: xp.unique_values(built()),
        "sort(A, axis=1)": lambda: xp.sort(built(), axis=1),
        "A[i, j] = v": setitem,
    }


def _child(name: str, n: int) -> None:
    """Run one case, print a JSON line: seconds and the helpers compiled."""
    import numba.core.dispatcher as dispatcher

    log: list[tuple[str, float]] = []
    original = dispatcher.Dispatcher._compile_for_args

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            log.append((f"{self.py_func.__module__}.{self.py_func.__name__}",
                        time.perf_counter() - t))

    dispatcher.Dispatcher._compile_for_args = timed
    import lazysparse as xp

    thunk = _cases(n)[name]
    t = time.perf_counter()
    out = thunk()
    for v in out if isinstance(out, tuple) else (out,):
        if isinstance(v, xp.LazyArray):
            xp.compute(v)
    seconds = time.perf_counter() - t
    print(json.dumps({"seconds": seconds, "compiles": log}))


def run_case(name: str, n: int) -> dict[str, Any]:
    """One case in a fresh process on an empty kernel cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, LAZYSPARSE_CACHE_DIR=cache, LAZYSPARSE_COMPILE="eager")
        out = subprocess.run([sys.executable, __file__, "--case", name, "--n", str(n)],
                             env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Every case, one fresh process each; a markdown table on stdout."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--case")
    args = ap.parse_args()
    if args.case:
        _child(args.case, args.n)
        return
    print(f"| first call (n = {args.n}) | seconds | helpers Numba compiled (seconds) |")
    print("|---|---|---|")
    for name in _cases(args.n):
        r = run_case(name, args.n)
        helpers = ", ".join(f"`{m.rsplit('.', 1)[-1]}` {s:.2f}" for m, s in r["compiles"])
        print(f"| `{name}` | {r['seconds']:.3f} | {helpers or 'none'} |", flush=True)


if __name__ == "__main__":
    main()
