"""No first call on small data waits on Numba for the package's own helpers (issue 35): a
child process on a fresh kernel cache runs the common constructors and conversions and
counts Numba compiles (``Dispatcher._compile_for_args``); on small inputs there are none,
and above the twins' thresholds the compiled helpers still run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import lazysparse

COUNT = """
import json, sys
import numba.core.dispatcher as dispatcher
compiled = []
original = dispatcher.Dispatcher._compile_for_args
def counted(self, *args, **kwargs):
    compiled.append(self.py_func.__module__ + "." + self.py_func.__qualname__)
    return original(self, *args, **kwargs)
dispatcher.Dispatcher._compile_for_args = counted
import numpy as np, scipy.sparse as sp, lazysparse as xp
"""

SMALL = COUNT + """
n = 60
s = sp.random_array((n, n + 7), density=0.1, format="csr", rng=0)
dup = sp.coo_array((np.ones(4), (np.array([3, 1, 3, 0]), np.array([2, 5, 2, 0]))), shape=(n, n))
d = s.toarray()
a = xp.asarray(s)
b = xp.asarray(s.copy())
b[1, 2] = 5.0
b[[3, 4], [0, 1]] = 2.0
results = [
    a, xp.asarray(s.tocsc()), xp.asarray(s.tocoo()), xp.asarray(dup),
    xp.asarray(sp.diags_array([1.0, 2.0], offsets=[0, 1], shape=(n, n)).todia()),
    xp.asarray(s[:, :n].tobsr(blocksize=(3, 3))), xp.asarray(d, format="csr"),
    xp.asarray(d, format="coo"), xp.eye(n, format="csr"), xp.eye(n, k=2, format="coo"),
    xp.zeros((n, n), format="csr"), xp.ones((n, n), format="csr"),
    xp.full((n, n), 2.0, format="coo"), xp.asformat(a, "coo"), xp.asformat(a, "csc"),
    xp.asformat(xp.asarray(s.tocoo()), "csr"), xp.asarray(s.tocsc()).tocsr(),
    xp.concat([a, a]), xp.concat([a, a], axis=1), a[:10], a[3], a[:, 3], a[:, 2:9],
    *xp.nonzero(a), xp.unique_values(a),
    xp.sort(a, axis=1), b, b[1, 2],
]
xp.compute(*[r for r in results if isinstance(r, xp.LazyArray)])
a.to_scipy()
want = d.copy()
want[1, 2], want[3, 0], want[4, 1] = 5.0, 2.0, 2.0
np.testing.assert_array_equal(np.asarray(b), want)
np.testing.assert_array_equal(np.asarray(xp.eye(n, format="csr")), np.eye(n))
np.testing.assert_array_equal(np.asarray(xp.asarray(dup)), dup.toarray())
print(json.dumps(compiled))
"""

LARGE = COUNT + """
n = (1 << 20) + 16
s = sp.csr_array((np.ones(n), np.arange(n) % 1000, np.arange(n + 1)), shape=(n, 1000))
xp.asarray(s)                          # check_compressed on more than 2**20 entries
e = xp.eye(n, format="csr")            # the counting-sort scatter and segment helpers
b = xp.asarray(sp.csr_array((2000, 2000)))
b[np.arange(1500), np.arange(1500)] = 1.0  # 1500 new entries at once: the compiled insert
assert b.to_scipy().nnz == 1500
print(json.dumps(compiled))
"""


def _compiled(script: str, tmp_path: Path) -> list[str]:
    """The functions Numba compiled while ``script`` ran in a fresh process on an empty
    kernel cache (eager tier: no fused kernel compiles, so any compile is a helper's)."""
    env = {**os.environ, "LAZYSPARSE_CACHE_DIR": str(tmp_path / "cache"),
           "LAZYSPARSE_COMPILE": "eager",
           "PYTHONPATH": str(Path(lazysparse.__file__).parents[1])}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_small_first_calls_compile_no_helper(tmp_path: Path) -> None:
    assert _compiled(SMALL, tmp_path) == []


def test_large_inputs_still_take_the_compiled_helpers(tmp_path: Path) -> None:
    names = {name.rsplit(".", 1)[-1] for name in _compiled(LARGE, tmp_path)}
    assert {"check_compressed", "_scatter", "insert"} <= names, names
