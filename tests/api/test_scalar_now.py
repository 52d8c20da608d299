"""Computed 0-d operands run at once (``api.building.elementwise.scalar_now``) and iterating a dense
vector yields computed elements: ``max(H)``, ``a < b`` of two elements and scalar bookkeeping
in loops cost NumPy work, not a plan per operation. Values and dtypes are NumPy's."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from tests.conftest import slow_except

BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow",
          "maximum", "minimum", "less", "less_equal", "greater", "equal", "not_equal",
          "logical_and", "logical_or", "bitwise_and", "bitwise_xor", "atan2", "hypot",
          "copysign", "logaddexp"]
NUMPY_NAME = {"pow": "power", "atan2": "arctan2"}
DTYPES = ["bool", "int8", "uint8", "int64", "float32", "float64", "complex128"]
VALUES = {"bool": [True, False], "int8": [-7, 3], "uint8": [200, 3], "int64": [-(2**40), 5],
          "float32": [-1.5, 0.0], "float64": [np.inf, -2.25], "complex128": [1 - 2j, 0j]}


def _numpy(name: str, *args: Any) -> Any:
    with np.errstate(all="ignore"):
        return getattr(np, NUMPY_NAME.get(name, name))(*args)


def _same(got: Any, want: Any, what: str) -> None:
    want = np.asarray(want)
    assert got.result is not None, f"{what}: not computed at once"
    assert got.shape == () and got.dtype == want.dtype, (what, got.dtype, want.dtype)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, equal_nan=True,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=what)


@pytest.mark.parametrize("name", slow_except(BINARY, BINARY[::4]))
def test_binary_of_computed_scalars_is_the_plan_path_at_once(name: str) -> None:
    """Value and dtype of the at-once result are the plan path's (the same op on 1-element
    arrays, computed by the kernels) and NumPy's where NumPy has the same dtype."""
    fn = getattr(xp, name)
    for d1, d2 in itertools.product(DTYPES, repeat=2):
        for v1, v2 in itertools.product(VALUES[d1], VALUES[d2]):
            n1, n2 = np.asarray(v1, dtype=d1), np.asarray(v2, dtype=d2)
            try:
                plan = xp.compute(fn(xp.asarray(n1.reshape(1)), xp.asarray(n2.reshape(1))))
            except (TypeError, ValueError) as e:  # refused kinds; integers to negative
                with pytest.raises(type(e)):  # powers (NumPy's ValueError): the same here
                    fn(xp.asarray(n1), xp.asarray(n2))
                continue
            what = f"{name}({d1} {v1}, {d2} {v2})"
            got = fn(xp.asarray(n1), xp.asarray(n2))
            _same(got, np.asarray(plan)[0], what)
            try:
                ref = np.asarray(_numpy(name, n1, n2))
            except (TypeError, ValueError):
                continue
            if ref.dtype == got.dtype:
                np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-6, equal_nan=True,
                                           err_msg=what)


@pytest.mark.parametrize("scalar", [3, -2.5, True, 1j])
@pytest.mark.parametrize("dtype", ["int8", "float32", "float64", "complex128"])
def test_python_scalars_promote_weakly(scalar: Any, dtype: str) -> None:
    a = np.asarray(VALUES[dtype][1] or 2, dtype=dtype)
    for fn, npfn in ((lambda x, y: x * y, np.multiply), (lambda x, y: y - x, None)):
        try:
            want = np.asarray(npfn(a, scalar) if npfn else scalar - a)
        except TypeError:
            continue
        if want.dtype != a.dtype and not (np.asarray(scalar).dtype.kind == "c"
                                          and dtype != "complex128"):
            continue  # where NumPy's weak promotion changes dtype the rule is tested elsewhere
        with np.errstate(all="ignore"):
            got = fn(xp.asarray(a), scalar)
        _same(got, want, f"{dtype} {scalar!r}")


def test_unary_and_uncomputed_operands() -> None:
    a = xp.asarray(np.float64(2.0))
    _same(xp.sqrt(a), np.sqrt(2.0), "sqrt")
    _same(-a, np.float64(-2.0), "negative")
    lazy = xp.sum(xp.asarray(np.arange(4.0)))  # not computed: the lazy path
    out = lazy + a
    assert out.result is None
    assert float(out) == 8.0


def test_builtin_reductions_over_a_vector_match_numpy() -> None:
    rng = np.random.default_rng(1)
    v = rng.standard_normal(500)
    h = xp.asarray(v)
    assert float(max(h)) == v.max() and float(min(h)) == v.min()
    np.testing.assert_allclose(float(sum(h)), v.sum())
    assert sorted(float(e) for e in h) == sorted(v.tolist())
    assert [e.dtype for e in xp.asarray(np.arange(3, dtype=np.int8))] == [xp.int8] * 3


def test_iterated_elements_are_copies() -> None:
    h = xp.asarray(np.array([1.0, 2.0, 3.0]))
    first = next(iter(h))
    h[0] = 9.0
    assert float(first) == 1.0 and float(h[0]) == 9.0


def test_iterating_sparse_and_lazy_vectors() -> None:
    s = xp.asarray(sp.random_array((1, 40), density=0.2, format="csr", rng=2).toarray()[0],
                   format="coo")
    want = s.tensor().to_numpy()
    np.testing.assert_array_equal([float(e) for e in s], want)
    lazy = s * 2.0
    np.testing.assert_array_equal([float(e) for e in lazy], want * 2.0)
    m = xp.asarray(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal([np.asarray(r) for r in m], np.arange(6.0).reshape(2, 3))
    with pytest.raises(TypeError, match="0-d"):
        iter(xp.asarray(1.0))


def test_truth_value_of_a_one_element_array_is_numpys() -> None:
    """``bool()`` of a one-element array of any rank is its element, as in NumPy (scipy's
    elementwise solvers ask it of shape-(1,) arrays); more elements stay an error."""
    for a in (np.array([True]), np.array([[0.0]]), np.array([[[3]]], dtype=np.int8)):
        assert bool(xp.asarray(a)) is bool(a)
    assert bool(xp.asarray(np.array([[2.0]]), format="coo")) is True
    assert bool(xp.asarray(np.array([[0.0]]), format="csr")) is False
    with pytest.raises(TypeError, match="0-d"):
        bool(xp.asarray([1, 2]))
    with pytest.raises(TypeError, match="0-d"):
        bool(xp.asarray(np.zeros((0,))))
