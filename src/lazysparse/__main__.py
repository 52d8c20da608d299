"""``python -m lazysparse``: version, devices, and a small fused sparse demo checked."""

from __future__ import annotations

import time

import numpy as np


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
    raise SystemExit(main())
