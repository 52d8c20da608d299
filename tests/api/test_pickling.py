"""Pickling: a lazysparse array travels as its stored tensor (a lazy one is computed
first), unpickles as a fresh leaf of this process, and a Tensor pickles as its arrays."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sps

import lazysparse as xp
from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.formats import Tensor

A = sps.random_array((300, 200), density=0.02, format="csr", rng=7)


def stored_bytes(m: sps.csr_array) -> int:
    return m.data.nbytes + m.indices.nbytes + m.indptr.nbytes


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "dense"])
def test_tensor_round_trip_is_compact(fmt: str) -> None:
    t = xp.asformat(xp.asarray(A), fmt).tensor()
    blob = pickle.dumps(t, protocol=5)
    back = pickle.loads(blob)
    assert isinstance(back, Tensor) and back.format == t.format and back.shape == t.shape
    np.testing.assert_array_equal(back.to_numpy(), A.toarray())
    if fmt == "csr":
        assert len(blob) < stored_bytes(A) + 2000


def test_computed_array_pickles_as_its_data() -> None:
    x = xp.asarray(A)
    blob = pickle.dumps(x)
    assert len(blob) < stored_bytes(A) + 2000
    y = pickle.loads(blob)
    assert isinstance(y, LazyArray) and y.format == "csr" and y.result is not None
    assert y.expr.lhs != x.expr.lhs  # a fresh alias of this process
    np.testing.assert_array_equal(xp.to_numpy(y), A.toarray())


def test_lazy_array_is_computed_then_pickled_without_its_history() -> None:
    x = xp.asarray(A)
    lazy = xp.sin(x * 2.0) + x
    assert lazy.result is None
    y = pickle.loads(pickle.dumps(lazy))
    assert lazy.result is not None  # pickling computed it (once, kept)
    assert y.result is not None and y.format == lazy.format
    np.testing.assert_allclose(xp.to_numpy(y), np.sin(A.toarray() * 2.0) + A.toarray())
    # the copy is a leaf: later expressions of it never read the old plan's aliases
    np.testing.assert_allclose(xp.to_numpy(xp.sum(y * 2, axis=1)),
                               2 * (np.sin(A.toarray() * 2.0) + A.toarray()).sum(axis=1))


def test_unpickled_aliases_never_clash_with_this_processes_arrays() -> None:
    # an array pickled elsewhere names aliases of that process; here they may denote other
    # arrays, so an unpickled array must not reuse them
    x = xp.asarray(A)
    blob = pickle.dumps(x * 3.0)
    others = [xp.compute(xp.asarray(A) * k) for k in range(5)]
    y = pickle.loads(blob)
    assert y.expr.lhs not in {o.expr.lhs for o in others}
    np.testing.assert_allclose(xp.to_numpy(y + others[2]), A.toarray() * 5.0)


def test_scalars_and_nonzero_fill() -> None:
    s = pickle.loads(pickle.dumps(xp.sum(xp.asarray(A))))
    assert s.ndim == 0 and float(s) == pytest.approx(A.sum())
    f = xp.asarray(np.where(A.toarray() == 0, np.nan, A.toarray()), format="csr",
                   fill_value=np.nan)
    g = pickle.loads(pickle.dumps(f))
    assert np.isnan(g.fill_value) and g.format == "csr"
    np.testing.assert_array_equal(xp.to_numpy(g), xp.to_numpy(f))
