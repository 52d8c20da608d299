"""A basic-index write through a view chain over dense storage is one NumPy region write
into the top array (docs/api.md "Views and writes"; issue #33): no coordinate mask, no
``where`` layer, no kernel for a scalar write; values, copy-on-write and every view's
value as NumPy's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lazysparse as xp
from lazysparse.api.chapters import setitem as S
from lazysparse.engine import tiers
from lazysparse.formats import tensor_ops

BASE = np.arange(120).reshape(4, 5, 6)


def _np_ns() -> Any:
    """NumPy's spellings of the manipulation functions the chains call."""
    class M:
        permute_dims = staticmethod(np.transpose)
        reshape = staticmethod(np.reshape)
        flip = staticmethod(np.flip)
    return M


# view chains NumPy makes of a (4, 5, 6) array (each a NumPy view)
CHAINS: dict[str, Callable[[Any, Any], Any]] = {
    "slice": lambda a, m: a[1:3],
    "steps": lambda a, m: a[::2, 1::2, ::-2],
    "negative_steps": lambda a, m: a[::-1, 4:0:-2],
    "ellipsis_int": lambda a, m: a[..., 3],
    "newaxis": lambda a, m: a[None, 1, :, None],
    "permuted_slice": lambda a, m: m.permute_dims(a, (2, 0, 1))[1:4][:, ::-1],
    "flip_of_slice": lambda a, m: m.flip(a[1:], axis=2)[0],
    "reshaped": lambda a, m: m.reshape(a, (20, 6))[3:11:3],
    "long": lambda a, m: m.permute_dims(m.permute_dims(a, (1, 0, 2))[1:], (1, 0, 2))[:, 2:][2],
}

# keys into the view: steps, negative steps, ellipsis, newaxis, 0-d, empty selections
KEYS: list[Any] = [(...,), (slice(None, None, 2),), (slice(None, None, -1),), (..., -1),
                   (None, 0), (0,) * 2, (slice(2, 2),), (slice(None), slice(1, 1))]


def _pair(dtype: str) -> tuple[np.ndarray, Any]:
    ref = BASE.astype(dtype)
    return ref, xp.asarray(ref.copy())


def _both(ref: np.ndarray, z: Any, key: Any, value: Any) -> None:
    """``[key] = value`` into both, the same error (type) when NumPy raises one."""
    try:
        ref[key] = value
    except (TypeError, ValueError, IndexError) as e:
        with pytest.raises(type(e)):
            z[key] = value
        return
    z[key] = value


def _key_fits(view: np.ndarray, key: Any) -> bool:
    try:
        view[key]
    except IndexError:
        return False
    return True


@pytest.mark.parametrize("dtype", ["int64", "float64", "float32"])
@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_region_writes_match_numpy(chain: str, dtype: str) -> None:
    ref, a = _pair(dtype)
    rv, zv = CHAINS[chain](ref, _np_ns()), CHAINS[chain](a, xp)
    sibling_ref, sibling = ref[1:], a[1:]  # another view: sees every write
    assert np.shares_memory(rv, ref)
    for n, key in enumerate(KEYS):
        if _key_fits(rv, key):
            _both(rv, zv, key, n + 0.5 if dtype != "int64" else n)
    _both(rv, zv, (...,), np.arange(rv.shape[-1]) * 3)  # broadcast along the last axis
    _both(rv, zv, (...,), xp.asarray(np.ones((1,) * rv.ndim, dtype)))
    _both(rv, zv, (...,), np.ones(rv.shape[-1] + 1))  # cannot broadcast: ValueError
    rv += 2
    zv += 2
    for r, z in ((ref, a), (rv, zv), (sibling_ref, sibling)):
        assert z.dtype == r.dtype
        np.testing.assert_array_equal(np.asarray(z), r)


def test_casting_as_numpy_assignments() -> None:
    ref, a = _pair("int64")
    rv, zv = ref[1:, ::2], a[1:, ::2]
    _both(rv, zv, (0, 0), 2.75)  # a Python float into an int view, as today's rule
    _both(rv, zv, (...,), np.full(rv.shape, 1.5))  # float64 array into int64: TypeError
    np.testing.assert_array_equal(np.asarray(a), ref)


def test_a_region_write_builds_no_mask_and_runs_no_kernel(monkeypatch: Any) -> None:
    _, a = _pair("float64")
    a[0, 0, 0] = 1.0  # owned storage from here on
    v = xp.permute_dims(a, (2, 1, 0))[1:5][:, ::-1]
    built: list[Any] = []
    real = tensor_ops.from_coords
    monkeypatch.setattr(tensor_ops, "from_coords",
                        lambda *args, **kw: built.append(args) or real(*args, **kw))
    before_stats, before_runs = dict(S.STATS), tiers.STATS["eager"] + tiers.STATS["compiled"]
    for k in range(10):
        v[k % 4, 1:3] = float(k)
    assert built == []
    assert S.STATS["layers"] == before_stats["layers"]
    assert S.STATS["regions"] == before_stats["regions"] + 10
    assert tiers.STATS["eager"] + tiers.STATS["compiled"] == before_runs  # no kernel


def test_an_in_place_operator_through_a_chain_computes_the_value_once() -> None:
    ref, a = _pair("float64")
    a = a * 1.0  # a lazy top array: computed once by the first write
    rv = np.transpose(ref, (1, 0, 2))[1:][:, 2:]
    zv = xp.permute_dims(a, (1, 0, 2))[1:][:, 2:]
    before, runs = dict(S.STATS), tiers.STATS["eager"] + tiers.STATS["compiled"]
    for _ in range(3):
        rv += 1.0
        zv += 1.0
    assert S.STATS["layers"] == before["layers"]
    assert S.STATS["computes"] == before["computes"] + 1
    # the top array once, then each write's value: one kernel (or eager run) each
    assert tiers.STATS["eager"] + tiers.STATS["compiled"] - runs <= 4
    np.testing.assert_array_equal(np.asarray(a), ref)
    np.testing.assert_array_equal(np.asarray(zv), rv)


def test_shared_buffers_are_copied_first() -> None:
    user = BASE.astype(float)
    a = xp.asarray(user)
    c = a.copy()
    before = a * 2.0  # an expression built before the write keeps the old values
    v = a[1:, ::2]
    v[0] = -1.0
    np.testing.assert_array_equal(user, BASE)  # the user's array is never written
    np.testing.assert_array_equal(np.asarray(c), BASE)  # a copy stays a copy
    np.testing.assert_array_equal(np.asarray(before), BASE * 2.0)
    ref = BASE.astype(float)
    ref[1:, ::2][0] = -1.0
    np.testing.assert_array_equal(np.asarray(a), ref)


def test_sparse_storage_keeps_its_path() -> None:
    ref = np.zeros((4, 6))
    ref[1, 2] = 3.0
    a = xp.asformat(xp.asarray(ref.copy()), "csr")
    v = a[1:]
    before = S.STATS["regions"]
    v[0, 4] = 5.0
    ref[1:][0, 4] = 5.0
    assert S.STATS["regions"] == before
    assert not tensor_ops.is_dense(a.tensor())
    np.testing.assert_array_equal(np.asarray(a), ref)
