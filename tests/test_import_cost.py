"""``import lazysparse`` loads no compiler and no optional heavy library (issue 26): Numba
(and llvmlite) come with the first kernel or compiled helper, CuPy with the first device
array, SciPy with the first SciPy conversion or solver. Each check runs in a fresh
interpreter, since this test process has imported all of them already. Import time
itself is measured, not asserted (docs/formats.md, "Import cost")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import lazysparse

SRC = str(Path(lazysparse.__file__).parent.parent)

DEFERRED = ("numba", "llvmlite", "cupy", "scipy", "sparse", "dask")

CHILD = """
import sys
import lazysparse as xp
loaded = sorted(m for m in {deferred!r} if m in sys.modules)
assert not loaded, f"import lazysparse imported {{loaded}}"
import numpy as np
{work}
print("ok")
"""

# a compiled kernel (a sparse product and a reduction) on data validated and sorted by the
# compiled helpers (COO from coordinates, then CSR)
KERNEL = """
rng = np.random.default_rng(0)
a = np.where(rng.random((30, 20)) < 0.2, rng.random((30, 20)), 0.0)
r, c = np.nonzero(a)
order = rng.permutation(r.size)
x = xp.asarray(a, format="csr")
got = np.asarray(xp.sum(x.T @ x, axis=0))
np.testing.assert_allclose(got, (a.T @ a).sum(axis=0))
from lazysparse.formats import Tensor
t = Tensor.from_coords([r[order], c[order]], a[r, c][order], a.shape, format="csr")
np.testing.assert_array_equal(t.to_numpy(), a)
assert "numba" in sys.modules
"""

# the helpers that are compiled only on first call (hashed scatter, structural selection)
HELPERS = """
from lazysparse.formats.compiled.hash_insert import HashedBuilder
b = HashedBuilder(5, 1, np.float64, shape=(5,))
b.insert(np.zeros(4, np.int64), np.array([3, 1, 3, 0]), np.array([1.0, 2.0, 4.0, 8.0]),
         combine="add")
np.testing.assert_array_equal(b.freeze().to_numpy(), [8.0, 2.0, 0.0, 5.0, 0.0])
b.insert([0, 0], [3, 4], [1.0, 7.0], combine=lambda old, new: old - new)  # a Python combine
np.testing.assert_array_equal(b.freeze().to_numpy(), [8.0, 2.0, 0.0, 4.0, 7.0])
import numba
b.insert([0], [1], [3.0], combine=numba.njit(lambda old, new: old * new))  # a compiled one
np.testing.assert_array_equal(b.freeze().to_numpy(), [8.0, 6.0, 0.0, 4.0, 7.0])
x = xp.asarray(np.arange(12.0).reshape(3, 4), format="csr")
np.testing.assert_array_equal(np.asarray(x[1:, ::-2]), np.arange(12.0).reshape(3, 4)[1:, ::-2])
"""


def _child(work: str) -> None:
    code = CHILD.format(deferred=DEFERRED, work=work)
    out = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC}


def test_import_loads_no_compiler_then_a_kernel_runs() -> None:
    _child(KERNEL)


@pytest.mark.slow
def test_helpers_compile_on_first_call() -> None:
    _child(HELPERS)
