"""Per-call cost of a repeated expression (issue 34), as a deterministic count: the Python
function calls one repeated ``xp.compute`` makes, counted with ``sys.setprofile``. A
regression that puts a history walk, an inference or a plan rebuild back on the path of a
known shape adds calls and fails here; no timing is asserted. Every result is checked
against NumPy/scipy on the same data."""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp


def calls_once(fn: Callable[[], Any]) -> int:
    """The Python function calls one call of ``fn`` makes (``sys.setprofile``; no garbage
    collection meanwhile: a collection's callbacks are not the expression's cost)."""
    n = 0

    def count(_frame: Any, event: str, _arg: Any) -> None:
        nonlocal n
        if event == "call":
            n += 1

    was_enabled = gc.isenabled()
    gc.disable()
    sys.setprofile(count)
    try:
        fn()
    finally:
        sys.setprofile(None)
        if was_enabled:
            gc.enable()
    return n


def python_calls(fn: Callable[[], Any]) -> int:
    """The Python function calls of one call of ``fn`` (the fewest of three, after two
    warm-up calls: a cache cleared by an earlier test fills again first)."""
    fn()
    fn()
    return min(calls_once(fn) for _ in range(3))


_RNG = np.random.default_rng(34)
_VN, _PN = _RNG.random(1000), _RNG.random(1000)
_BN, _CN = _RNG.random(100), _RNG.random(100)
_SA = sp.random_array((100, 100), density=0.05, format="csr", rng=_RNG)
_SB = sp.random_array((100, 100), density=0.05, format="csr", rng=_RNG)


def _cases() -> dict[str, tuple[Callable[[], Any], Callable[[], Any], int]]:
    """Each case: (the user's call, NumPy/scipy's answer, its call budget). The budgets sit
    about 5% above what the code reaches (110, 130, 130, 202, 181 calls on CPython 3.11
    with ``LAZYSPARSE_COMPILE=sync`` and the default threads, after a known shape's compute
    reaches its program from the root's key without a plan, ``engine.known_shapes``, and
    the operators' common operands taken inline; ``A + B``'s plan carries exact counts'
    verdicts, so it keeps the full path; 151, 162, 166, 218, 209 before, with one thread
    212 and 203 for the sparse cases, after data-free hash-consed subquery keys, plain tuple
    plan-cache keys, a one-array compute's direct recipe call, map-bound recipes and the
    direct scalar read; 168, 179, 188, 236, 226 before them, after constants' parameter
    kinds read by type; 170,
    179, 190, 236, 226 before, after the environment settings parsed once per value,
    the builders' counted history extents and the NumPy runner's direct array-and-constant
    ufunc calls; 182, 191, 206, 245, 236 before them; 181, 190, 205, 244, 235 after the
    kernels' host facts, the NumPy runner's decoded folds, the contraction's cached
    inference and the recipes' input slots; 194, 219, 228, 332, 258 before them; 296,
    318, 306, 367, 337 before precomputed subquery keys; the first commit measured made
    435, 437, 425, 417, 394: benchmarks/results/per-call-2026-12-01.md)."""
    v, p = xp.asarray(_VN), xp.asarray(_PN)
    b, c = xp.asarray(_BN), xp.asarray(_CN)
    A, B = xp.asarray(_SA), xp.asarray(_SB)
    return {
        "v + 0.5 * p": (lambda: xp.compute(v + 0.5 * p), lambda: _VN + 0.5 * _PN, 116),
        "sum(b * c)": (lambda: xp.compute(xp.sum(b * c)), lambda: (_BN * _CN).sum(), 137),
        "float(sum(v * 2.0))": (lambda: float(xp.sum(v * 2.0)), lambda: (_VN * 2.0).sum(),
                                137),
        "A @ b": (lambda: xp.compute(A @ b), lambda: _SA @ _BN, 212),
        "A + B": (lambda: xp.compute(A + B), lambda: (_SA + _SB).toarray(), 190),
    }


@pytest.mark.parametrize("case", list(_cases()))
def test_repeated_compute_stays_within_its_call_budget(case: str) -> None:
    run, expected, budget = _cases()[case]
    got = run()
    np.testing.assert_allclose(got if isinstance(got, float) else np.asarray(got), expected(),
                               rtol=1e-12)
    calls = python_calls(run)
    assert calls <= budget, f"{case}: {calls} Python calls per repeated compute (budget {budget})"


def test_the_count_grows_with_the_expression() -> None:
    """The counter is not blind: one more operation per compute counts more calls."""
    v, p = xp.asarray(_VN), xp.asarray(_PN)
    one = python_calls(lambda: xp.compute(v + 0.5 * p))
    assert python_calls(lambda: xp.compute(v + 0.5 * p - 0.25 * p)) > one


def _key_builds(monkeypatch: pytest.MonkeyPatch, fn: Callable[[], Any]) -> dict[str, int]:
    """How many subquery keys one call of ``fn`` builds (after two warm-up calls), by the
    builder: ``operation`` (``_mapjoin_key``, one new node from its operands' keys) or
    ``walk`` (``_walked_key``, a walk of a body)."""
    sk = importlib.import_module("lazysparse.logic.structural_key")  # the package's
    # ``structural_key`` attribute is the function of that name
    fn()
    fn()
    counts = {"operation": 0, "walk": 0}
    built, walked = sk._mapjoin_key, sk._walked_key

    def operation(*args: Any) -> Any:
        counts["operation"] += 1
        return built(*args)

    def walk(*args: Any) -> Any:
        counts["walk"] += 1
        return walked(*args)

    monkeypatch.setattr(sk, "_mapjoin_key", operation)
    monkeypatch.setattr(sk, "_walked_key", walk)
    fn()
    monkeypatch.undo()
    return counts


@pytest.mark.parametrize("length", [5, 40])
def test_a_known_shape_keys_only_its_new_nodes(monkeypatch: pytest.MonkeyPatch,
                                               length: int) -> None:
    """A repeated compute builds the keys of the nodes its expression adds, each from its
    operands' kept keys, and walks no history (issue 34): ``v + 0.5 * p`` two, an operation
    on a long held history one, whatever the history's length."""
    v, p = xp.asarray(_VN), xp.asarray(_PN)
    assert _key_builds(monkeypatch, lambda: xp.compute(v + 0.5 * p)) == {
        "operation": 2, "walk": 0}
    x, want = v, _VN
    for k in range(length):  # a held history, computed once by the first compute
        x, want = x * 0.5 + p * float(k), want * 0.5 + _PN * float(k)
    assert _key_builds(monkeypatch, lambda: xp.compute(x * 2.0)) == {
        "operation": 1, "walk": 0}
    np.testing.assert_allclose(np.asarray(xp.compute(x * 2.0)), want * 2.0, rtol=1e-12)


def test_a_scalar_read_costs_a_few_calls_over_its_compute() -> None:
    """``float``/``item``-style reads of a 0-d result read the stored value directly
    (issue 34: a scalar read adds <= 5 us): at most 2 calls over ``xp.compute`` of the same
    expression, and the values are NumPy's."""
    v = xp.asarray(_VN)
    computed = python_calls(lambda: xp.compute(xp.sum(v * 2.0)))
    read = python_calls(lambda: float(xp.sum(v * 2.0)))
    assert read - computed <= 2, (read, computed)
    assert float(xp.sum(v * 2.0)) == pytest.approx((_VN * 2.0).sum(), rel=1e-12)
    assert bool(xp.sum(v * 2.0) > 1.0) is bool((_VN * 2.0).sum() > 1.0)
    assert complex(xp.sum(v * 2.0)) == pytest.approx(complex((_VN * 2.0).sum()), rel=1e-12)
    with pytest.raises(TypeError, match="0-d array"):
        float(v * 2.0)


def test_a_one_array_compute_runs_its_recipe_without_alias_tables() -> None:
    """The program of a one-array compute, one query on its inputs, calls that query's
    recipe directly (``Program.only``, no alias tables); a compute of two arrays keeps the
    general path. Both agree with NumPy, and the direct path is fewer calls."""
    from lazysparse.api.array.materialize import build_plan
    from lazysparse.engine.plan_cache import lookup

    v, p = xp.asarray(_VN), xp.asarray(_PN)
    for _ in range(2):
        one = xp.compute(v + 0.5 * p)
        two = xp.compute(v * 2.0, p - 1.0)
    np.testing.assert_allclose(np.asarray(one), _VN + 0.5 * _PN, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(two[0]), _VN * 2.0, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(two[1]), _PN - 1.0, rtol=1e-12)
    single = lookup(build_plan((v + 0.5 * p,)))[0].program
    pair = lookup(build_plan((v * 2.0, p - 1.0)))[0].program
    assert single.only is not None and single.only in single.slots
    assert pair.only is None
    direct = python_calls(lambda: xp.compute(v + 0.5 * p))
    single.only = None  # the general path for the same plan
    try:
        assert python_calls(lambda: xp.compute(v + 0.5 * p)) > direct
    finally:
        single.only = single.queries[0][0]
