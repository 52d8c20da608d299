"""The helpers LSQR and MINRES share (``sparse_linalg.paige_saunders``), against scipy's
own rotation and NumPy: a change to one solver's rotation or stopping rule shows here
before it shows as an iteration count."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.sparse.linalg._isolve.lsqr import _sym_ortho

import lazysparse as xp
from lazysparse.sparse_linalg.paige_saunders import stop_code, sym_ortho, with_norm

VALUES = (0.0, -0.0, 1.0, -2.5, 3e-300, -7e200, 0.75)


@pytest.mark.parametrize(("a", "b"), list(itertools.product(VALUES, VALUES)))
def test_sym_ortho_is_scipys_rotation(a: float, b: float) -> None:
    """A rotation (``c² + s² = 1``) taking ``[a, b]`` to ``[r, 0]``, ``r = hypot(a, b)``;
    scipy's up to rounding where it gives one (its ``(0, 0)`` case is ``c = s = 0``)."""
    c, s, r = sym_ortho(a, b)
    assert c * c + s * s == pytest.approx(1.0, rel=1e-15)
    assert r == np.hypot(a, b)
    np.testing.assert_allclose([c * a + s * b, -s * a + c * b], [r, 0.0], rtol=1e-15,
                               atol=1e-15 * r)
    if a != 0 or b != 0:
        np.testing.assert_allclose((c, s, r), _sym_ortho(a, b), rtol=1e-15)


def test_stop_code_is_the_last_test_that_holds() -> None:
    assert stop_code(0, ((False, 1), (False, 2))) == 0
    assert stop_code(7, ()) == 7
    assert stop_code(7, ((True, 6), (False, 5), (True, 2), (False, 1))) == 2


def test_with_norm_computes_the_vector_and_its_norm() -> None:
    v = np.arange(7, dtype=np.float64) - 3
    out, n = with_norm(xp.asarray(v) * 2)
    np.testing.assert_allclose(np.asarray(out), v * 2)
    assert n == pytest.approx(np.linalg.norm(v * 2), rel=1e-15)
    assert with_norm(xp.zeros(3))[1] == 0.0
