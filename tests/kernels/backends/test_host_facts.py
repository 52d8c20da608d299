"""The per-call host path of a compiled kernel and of the NumPy runner (issue 34): what a
kernel's host reads of its lowered form is derived once (``Kernel.facts``) and agrees with
the role search it replaces; a one-chunk call, a dense result built without the generic
constructor and a NumPy result kept without a copy give NumPy's values bit for bit and
never alias an operand's storage."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.api.chapters.compute import build_plan
from lazysparse.engine import plan_cache
from lazysparse.formats import Tensor
from lazysparse.kernels.backends.numba import cpu_host
from lazysparse.kernels.compile.planning.params import Role

RNG = np.random.default_rng(34)
N = 40_000  # above the NumPy runner's bound (2**14 points): the compiled kernels run
V, W = RNG.standard_normal(N), RNG.standard_normal(N)
S = sp.random_array((300, 200), density=0.05, format="csr", rng=RNG)
X = RNG.standard_normal(200)

CASES: list[tuple[str, Callable[[dict[str, Any]], Any], Callable[[], Any]]] = [
    ("axpy", lambda a: a["v"] + 0.5 * a["w"], lambda: V + 0.5 * W),
    ("dot", lambda a: xp.sum(a["v"] * a["w"]), lambda: np.sum(V * W)),
    ("max", lambda a: xp.max(a["v"] - 1.0), lambda: np.max(V - 1.0)),
    ("spmv", lambda a: a["S"] @ a["x"], lambda: S @ X),
    ("csr map", lambda a: a["S"] * 2.0, lambda: (S * 2.0).toarray()),
    ("row sums", lambda a: xp.sum(a["S"], axis=1), lambda: np.asarray(S.sum(axis=1))),
]


def _arrays() -> dict[str, Any]:
    return {"v": xp.asarray(V), "w": xp.asarray(W), "S": xp.asarray(S), "x": xp.asarray(X)}


def _kernels(y: Any) -> list[Any]:
    """The compiled kernels of the cached program that computed ``y``'s shape."""
    entry, _, _ = plan_cache.lookup(build_plan((y,)))
    assert entry.program is not None
    return [r.kernel for r in entry.program.recipes.values()
            if r is not None and r.kernel is not None]


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_facts_agree_with_the_role_search(name: str) -> None:
    build = next(b for n, b, _ in CASES if n == name)
    a = _arrays()
    xp.compute(build(a))
    kernels = _kernels(build(a))
    assert kernels, "the compiled kernels ran"
    for k in kernels:
        sig, lw, f = k.lowered.signature, k.lowered, k.facts
        assert f is k.facts  # derived once
        assert f.out_size == sig.position(Role.OUT_SIZE)
        assert f.dense_size == sig.position(Role.DENSE_SIZE)
        assert f.init == sig.position(Role.INIT)
        start = Role.RED_ID if lw.partials else Role.INIT if lw.epilogue else Role.OUT_FILL
        assert f.start == sig.position(start)
        assert f.dense is (not lw.output.mode.sparse)
        assert f.partials is lw.partials and f.folds is (lw.fold is not None)


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_repeated_calls_give_numpys_values(name: str) -> None:
    """The first call (full path) and repeated ones (recipe, one-chunk call, direct dense
    result) agree with NumPy/scipy and with each other bit for bit."""
    build, ref = next((b, r) for n, b, r in CASES if n == name)
    a = _arrays()
    got = [np.asarray(xp.compute(build(a))) for _ in range(3)]
    np.testing.assert_allclose(got[0], ref(), rtol=1e-12, atol=1e-12)
    for g in got[1:]:
        assert g.tobytes() == got[0].tobytes()


def test_dense_result_matches_the_checked_constructor() -> None:
    a = _arrays()
    y = xp.compute(a["v"] + 0.5 * a["w"])
    t = y.tensor()
    ref = Tensor(t.shape, list(t.levels), t.mode_order, t.values, t.fill_value,
                 format=t.spec)
    assert (t.shape, t.spec, t.mode_order, t._index_dtype) == (
        ref.shape, ref.spec, ref.mode_order, ref._index_dtype)
    assert [type(lv) for lv in t.levels] == [type(lv) for lv in ref.levels]
    assert [lv.size for lv in t.levels] == [lv.size for lv in ref.levels]
    assert type(t.fill_value) is type(ref.fill_value) and t.fill_value == ref.fill_value
    assert not np.shares_memory(t.values, V) and not np.shares_memory(t.values, W)


def test_same_bits_tells_signed_zeros_and_dtypes_apart() -> None:
    same = cpu_host._same_bits  # noqa: SLF001
    assert same(np.float64(0.0), np.float64(0.0))
    assert not same(np.float64(-0.0), np.float64(0.0))
    assert same(np.float64(np.nan), np.float64(np.nan))
    assert not same(np.float32(1.0), np.float64(1.0))
    assert not same(np.int64(1), np.int32(1))
    assert same(0.0, np.float64(0.0))  # a Python scalar: compared as its NumPy value


@pytest.mark.parametrize("n", [100, 5000])
@pytest.mark.parametrize("expr", ["map", "identity", "where", "sum", "transpose"])
def test_numpy_runner_results_never_alias_operands(n: int, expr: str) -> None:
    """The NumPy runner keeps an operation's fresh result without a copy, and copies
    whatever could be an operand's storage (an identity, a choice, a view)."""
    vn = RNG.standard_normal(n)
    mn = RNG.standard_normal((n // 50, 50))
    v, m = xp.asarray(vn), xp.asarray(mn)
    build, ref, src = {
        "map": (lambda: v * 2.0 + 1.0, lambda: vn * 2.0 + 1.0, vn),
        "identity": (lambda: +v, lambda: +vn, vn),
        "where": (lambda: xp.where(v > 9.0, 0.0, v), lambda: np.where(vn > 9.0, 0.0, vn), vn),
        "sum": (lambda: xp.sum(m, axis=1), lambda: mn.sum(axis=1), mn),
        "transpose": (lambda: xp.permute_dims(m, (1, 0)) * 1.0, lambda: mn.T * 1.0, mn),
    }[expr]
    for _ in range(3):  # first run and repeated (recipe) runs
        y = xp.compute(build())
        got = y.tensor().values
        np.testing.assert_allclose(np.asarray(y), ref(), rtol=1e-13, atol=1e-13)
        assert not np.shares_memory(got, src)
        assert not np.shares_memory(got, v.tensor().values)
