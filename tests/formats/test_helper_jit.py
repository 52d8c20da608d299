"""``helper_jit`` helpers compile on first use (issue 26): called from Python, from another
helper (a global, a closure cell, an ``inline="always"`` callee) or as an argument, they
behave as the Numba dispatchers they become."""

from __future__ import annotations

import pickle

import numba
import numpy as np
import pytest

from lazysparse.formats.compiled.jit import Helper, helper_jit, helper_overload
from lazysparse.formats.levels.hashed import hash_slot


@helper_jit(disk_cache=False)
def _square(x):  # pragma: no cover - compiled
    return x * x


@helper_jit(disk_cache=False, inline="always")
def _twice(x):  # pragma: no cover - compiled
    return 2 * x


@helper_jit(disk_cache=False)
def _sum_squares(a):  # pragma: no cover - compiled
    """Calls a helper (global) and an inlined helper."""
    s = 0
    for v in a:
        s += _twice(_square(v))
    return s


def _kind(x):  # pragma: no cover - replaced in compiled code by the overload below
    return "python"


@helper_overload(_kind)
def _kind_typed(x):  # pragma: no cover - typing
    if isinstance(x, numba.types.Integer):
        return lambda x: x + 100
    return lambda x: x - 100


@helper_jit(disk_cache=False)
def _use_kind(x):  # pragma: no cover - compiled
    return _kind(x)


def test_compiles_on_first_call() -> None:
    fresh = helper_jit(disk_cache=False)(lambda a, b: a - b)
    assert isinstance(fresh, Helper) and fresh._dispatcher is None
    assert "compiled on first use" in repr(fresh)
    assert fresh(7, 3) == 4
    assert isinstance(fresh.dispatcher, numba.core.dispatcher.Dispatcher)
    assert len(fresh.signatures) == 1  # dispatcher attributes read through


def test_helpers_call_helpers() -> None:
    a = np.arange(5, dtype=np.int64)
    assert _sum_squares(a) == 2 * int((a * a).sum())
    assert _sum_squares(a.astype(np.float32)) == pytest.approx(60.0)
    assert _twice.py_func(4) == 8 and _twice.targetoptions["inline"] == "always"


def test_overload_registered_before_first_compile() -> None:
    assert _use_kind(1) == 101
    assert _use_kind(1.5) == pytest.approx(-98.5)


def test_closure_cell_and_argument() -> None:
    sq = _square

    @numba.njit
    def via_cell(n):  # pragma: no cover - compiled
        return sq(n) + 1

    @numba.njit
    def via_arg(f, n):  # pragma: no cover - compiled
        return f(n)

    assert via_cell(6) == 37
    assert via_arg(_square, 9) == 81
    assert numba.typeof(_square) == numba.typeof(_square.dispatcher)


def test_package_helper_from_a_plain_njit_function() -> None:
    """A generated kernel calls package helpers as globals (``hash_slot``) and compiles."""

    @numba.njit
    def slots(p, c):  # pragma: no cover - compiled
        return hash_slot(p, c, 64, 3)

    assert slots(np.int64(3), np.int64(5)) == hash_slot(np.int64(3), np.int64(5), 64, 3)


def test_pickles_by_name_and_rejects_cache_option() -> None:
    assert pickle.loads(pickle.dumps(_square)) is _square
    with pytest.raises(TypeError, match="cache="):
        helper_jit(cache=True)
    with pytest.raises(AttributeError):
        _ = _square.__no_such_dunder__
