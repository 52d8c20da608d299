"""Exact stored-entry counts from patterns (``formats.pattern_counts``, issue 36), against
scipy's products on the same patterns, over csr, csc and coo layouts of skewed and
rectangular operands."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from lazysparse.formats import Tensor
from lazysparse.formats.pattern_counts import adjacency, product_pattern_entries, stored_values
from tests.optimizer.skewed_data import chung_lu


def _tensor(m: sp.sparray, fmt: str) -> Tensor:
    t = Tensor.from_scipy(sp.csr_array(m))
    return t if fmt == "csr" else t.asformat(fmt)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("axis", [0, 1])
def test_adjacency_lists_each_coordinates_entries(fmt: str, axis: int) -> None:
    m = sp.random_array((7, 5), density=0.4, rng=np.random.default_rng(1), format="csr")
    ptr, idx = adjacency(_tensor(m, fmt), axis)
    lists = sp.csr_array(m) if axis == 0 else sp.csr_array(m.T)
    assert ptr.tolist() == lists.indptr.tolist()
    for c in range(lists.shape[0]):
        got = sorted(idx[ptr[c]:ptr[c + 1]].tolist())
        assert got == sorted(lists.indices[lists.indptr[c]:lists.indptr[c + 1]].tolist())


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_product_count_equals_scipys_structural_entries(fmt: str) -> None:
    g = chung_lu(300, 6, seed=3)  # power-law degrees
    r = sp.random_array((40, 300), density=0.05, rng=np.random.default_rng(2), format="csr")
    for a, b in ((g, g), (r, g), (g.T, g), (r, r.T)):
        ta, tb = _tensor(a, fmt), _tensor(b, fmt)
        want = (sp.csr_array(a, dtype=bool).astype(np.int64)
                @ sp.csr_array(b, dtype=bool).astype(np.int64)).count_nonzero()
        got = product_pattern_entries(adjacency(ta, 0), adjacency(tb, 0), b.shape[1])
        assert got == want


def test_product_count_of_empty_operands_is_zero() -> None:
    e = Tensor.from_scipy(sp.csr_array((4, 3)))
    assert product_pattern_entries(adjacency(e, 0), adjacency(e, 1), 4) == 0


def test_stored_values_in_storage_order() -> None:
    m = sp.csr_array(np.array([[0.0, 2.0], [3.0, 0.0], [0.0, 5.0]]))
    np.testing.assert_array_equal(stored_values(_tensor(m, "csr")), [2.0, 3.0, 5.0])
    np.testing.assert_array_equal(np.sort(stored_values(_tensor(m, "coo"))), [2.0, 3.0, 5.0])


def test_adjacency_rejects_other_ranks() -> None:
    t = Tensor.from_numpy(np.ones(3))
    with pytest.raises(ValueError, match="2-d tensor"):
        adjacency(t, 0)
