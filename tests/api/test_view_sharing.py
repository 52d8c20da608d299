"""Views share values with their arrays in both directions, as NumPy's do (docs/api.md
"Views and writes"): the same sequence of views and writes is replayed on NumPy arrays and
on lazysparse arrays, and every array and view is compared afterwards."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import lazysparse as xp
from lazysparse.api.building import views
from tests.conftest import slow_except

BASE = np.array([[1.0, 0.0, 2.0, 0.0, 0.0, 3.0],
                 [0.0, 4.0, 0.0, 0.0, 5.0, 0.0],
                 [6.0, 0.0, 0.0, 7.0, 0.0, 0.0],
                 [0.0, 0.0, 8.0, 0.0, 9.0, 1.5]])
FORMATS = ["dense", "csr", "csc", "coo", "csf"]
FAST_FORMATS = ("dense", "csr")  # the fast tier's: every view kind, dense and sparse


class NumpyNS:
    """The manipulation functions the view kinds call, as NumPy spells them."""

    permute_dims = staticmethod(np.transpose)
    reshape = staticmethod(np.reshape)
    expand_dims = staticmethod(np.expand_dims)
    squeeze = staticmethod(np.squeeze)
    flip = staticmethod(np.flip)


# every kind of view NumPy makes of a (4, 6) array (each shares memory in NumPy)
VIEWS: dict[str, Callable[[Any, Any], Any]] = {
    "row": lambda a, m: a[1],
    "strided": lambda a, m: a[1:, ::2],
    "negative_step": lambda a, m: a[::-1, 4:1:-1],
    "column": lambda a, m: a[..., 2],
    "new_axis": lambda a, m: a[None, 1:3, :],
    "int_and_new_axis": lambda a, m: a[2, None],
    "T": lambda a, m: a.T,
    "mT": lambda a, m: a.mT,
    "permute_dims": lambda a, m: m.permute_dims(a, (1, 0)),
    "reshape_flat": lambda a, m: m.reshape(a, (-1,)),
    "reshape_split": lambda a, m: m.reshape(a, (2, 2, 6)),
    "reshape_unit": lambda a, m: m.reshape(a, (4, 1, 6)),
    "expand_dims": lambda a, m: m.expand_dims(a, axis=1),
    "squeeze": lambda a, m: m.squeeze(a[1:2], axis=0),
    "flip": lambda a, m: m.flip(a, axis=1),
    "flip_all_of_a_slice": lambda a, m: m.flip(a[1:3]),
    "chain": lambda a, m: a[1:][0],
    "chain_transposed": lambda a, m: a.T[1:5][:, 2],
}


@dataclass
class Replay:
    """The same named arrays in NumPy and lazysparse, with each step applied to both."""

    ref: dict[str, np.ndarray]
    lazy: dict[str, Any]

    @classmethod
    def start(cls, fmt: str, data: np.ndarray = BASE) -> Replay:
        base = xp.asarray(data.copy())
        return cls({"a": data.copy()}, {"a": base if fmt == "dense" else
                                         xp.asformat(base, fmt)})

    def view(self, name: str, src: str, kind: str) -> None:
        self.ref[name] = VIEWS[kind](self.ref[src], NumpyNS)
        self.lazy[name] = VIEWS[kind](self.lazy[src], xp)
        assert np.shares_memory(self.ref[name], self.ref["a"])  # a view in NumPy

    def set(self, name: str, key: Any, value: float) -> None:
        self.ref[name][key] = value
        self.lazy[name][key] = value

    def iadd(self, name: str, value: float) -> None:
        r, z = self.ref[name], self.lazy[name]
        r += value
        z += value

    def mask(self, name: str, value: float) -> None:
        r, z = self.ref[name], self.lazy[name]
        r[r > 3.0] = value
        z[z > 3.0] = value

    def check(self) -> None:
        for name, r in self.ref.items():
            z = self.lazy[name]
            assert z.shape == r.shape and z.dtype == r.dtype, name
            np.testing.assert_array_equal(np.asarray(z), r, err_msg=name)


def _first(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (0,) * len(shape)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", sorted(VIEWS))
def test_a_write_into_the_array_reaches_its_views(kind: str, fmt: str) -> None:
    r = Replay.start(fmt)
    r.view("v", "a", kind)
    r.set("a", (1, 2), 7.0)
    r.set("a", (slice(None), 4), -1.0)
    r.check()
    r.iadd("a", 0.5)
    r.check()
    r.mask("a", 0.0)
    r.check()


@pytest.mark.parametrize("fmt", slow_except(FORMATS, FAST_FORMATS))
@pytest.mark.parametrize("kind", sorted(VIEWS))
def test_a_write_through_another_view_reaches_every_view(kind: str, fmt: str) -> None:
    r = Replay.start(fmt)
    r.view("v", "a", kind)
    r.view("w", "a", kind)
    r.view("t", "a", "T")
    r.set("w", _first(r.ref["w"].shape), 11.0)
    r.check()
    r.iadd("t", 1.0)
    r.check()
    r.mask("w", -2.0)
    r.check()


@pytest.mark.parametrize("fmt", slow_except(FORMATS, FAST_FORMATS))
@pytest.mark.parametrize("kind", sorted(VIEWS))
def test_a_write_through_the_view_itself(kind: str, fmt: str) -> None:
    r = Replay.start(fmt)
    r.view("v", "a", kind)
    r.view("row", "a", "row")
    r.set("v", _first(r.ref["v"].shape), 5.0)
    r.iadd("v", 1.0)
    r.check()
    r.set("a", (1, 1), 3.0)  # and back: the view follows again
    r.mask("v", 9.0)
    r.check()


@pytest.mark.parametrize("fmt", ["dense", "coo"])
def test_views_of_a_three_d_array(fmt: str) -> None:
    data = np.arange(24.0).reshape(2, 3, 4) % 5
    r = Replay.start(fmt, data)
    for name, view in {"mT": lambda a, m: a.mT, "perm": lambda a, m: m.permute_dims(a, (2, 0, 1)),
                       "plane": lambda a, m: a[:, 1], "flat": lambda a, m: m.reshape(a, (6, 4))
                       }.items():
        r.ref[name], r.lazy[name] = view(r.ref["a"], NumpyNS), view(r.lazy["a"], xp)
    r.set("plane", (1, 2), 40.0)
    r.iadd("perm", 1.0)
    r.set("a", (0, 0, 0), -3.0)
    r.check()


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_reshape_copies_where_numpy_does(fmt: str) -> None:
    """A reshape NumPy cannot make from the strides of a transposed or strided view is a
    copy, in both directions; one it can (splitting an axis) stays a view."""
    r = Replay.start(fmt)
    cases = {"flat_T": lambda a, m: m.reshape(a.T, (-1,)),
             "strided": lambda a, m: m.reshape(a[:, ::2], (12,)),
             "split_T": lambda a, m: m.reshape(a.T, (2, 3, 4)),
             "unit_T": lambda a, m: m.expand_dims(a.T, axis=0)}
    for name, make in cases.items():
        r.ref[name], r.lazy[name] = make(r.ref["a"], NumpyNS), make(r.lazy["a"], xp)
    assert not np.shares_memory(r.ref["flat_T"], r.ref["a"])
    assert np.shares_memory(r.ref["split_T"], r.ref["a"])
    r.set("flat_T", 0, 70.0)
    r.set("strided", 1, 71.0)
    r.set("split_T", (1, 1, 1), 72.0)
    r.set("a", (0, 0), 73.0)
    r.set("unit_T", (0, 5, 3), 74.0)
    r.check()
    with pytest.raises(ValueError, match="copy=False"):
        xp.reshape(r.lazy["a"].T, (-1,), copy=False)
    np.testing.assert_array_equal(np.asarray(xp.reshape(r.lazy["a"], (-1,), copy=False)),
                                  r.ref["a"].reshape(-1))


def test_the_reported_case_and_chains() -> None:
    a = xp.asarray(np.array([[1.0, 2.0], [3.0, 4.0]]))
    b, c = a[0, :], a[0, :]
    c[0] = 9.0
    assert (float(b[0]), float(a[0, 0])) == (9.0, 9.0)
    w = a[1:][0]  # the intermediate a[1:] is kept alive by w
    a[1, 1] = 8.0
    np.testing.assert_array_equal(np.asarray(w), [3.0, 8.0])
    w[0] = 5.0
    np.testing.assert_array_equal(np.asarray(a), [[9.0, 2.0], [5.0, 8.0]])


@pytest.mark.parametrize("fmt", ["dense", "csr", "coo"])
def test_tanhsinh_like_pattern(fmt: str) -> None:
    """scipy.integrate.tanhsinh's ``_euler_maclaurin_sum``: ``fj = fj.T``, then
    ``fr, fl = xp.reshape(fj, ...)`` written into by masks, then ``fj`` read."""
    rng = np.random.default_rng(0)
    data = rng.standard_normal((3, 8))
    data[0, 1] = data[2, 6] = np.inf
    for m in (np, xp):
        fj = data.copy() if m is np else xp.asarray(data)
        if m is xp and fmt != "dense":
            fj = xp.asformat(fj, fmt)
        fj = fj.T
        n_x, n_active = fj.shape
        fr, fl = m.reshape(fj, (2, n_x // 2, n_active))
        invalid_r = ~m.isfinite(fr) | (fr > 1.0)
        invalid_l = ~m.isfinite(fl)
        fr[invalid_r] = 0
        fl[invalid_l] = 0
        total = m.sum(fj * 2.0, axis=0)
        if m is np:
            want_fj, want_total = fj, total
    np.testing.assert_array_equal(np.asarray(fj), want_fj)
    np.testing.assert_allclose(np.asarray(total), want_total)


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_an_expression_built_before_the_write_keeps_the_old_values(fmt: str) -> None:
    r = Replay.start(fmt)
    r.view("v", "a", "row")
    r.view("t", "a", "T")
    before = {"row": r.lazy["v"] * 2.0, "T": r.lazy["t"] + 0.0}
    want = {"row": r.ref["v"] * 2.0, "T": r.ref["t"] + 0.0}
    r.set("a", (1, 1), 100.0)
    r.iadd("t", 1.0)
    for k in before:
        np.testing.assert_array_equal(np.asarray(before[k]), want[k])
    after = r.lazy["v"] * 2.0  # built after: the new values
    np.testing.assert_array_equal(np.asarray(after), r.ref["v"] * 2.0)
    r.check()


def test_copies_stay_copies() -> None:
    a = xp.asarray(BASE.copy())
    copies = {"advanced": a[[0, 2]], "mask": a[a > 2.0], "copy": xp.asarray(a, copy=True),
              "reshape_copy": xp.reshape(a, (-1,), copy=True), "arith": a + 0.0,
              "method_copy": a.copy(), "flatten": a.flatten()}
    want = {k: np.asarray(v).copy() for k, v in copies.items()}
    ref = BASE.copy()
    a[0, 0] = ref[0, 0] = -50.0
    a += 1.0
    ref += 1.0
    for k, v in copies.items():
        np.testing.assert_array_equal(np.asarray(v), want[k], err_msg=k)
    for v in copies.values():
        v[(0,) * v.ndim] = 123.0
    np.testing.assert_array_equal(np.asarray(a), ref)


def test_a_view_whose_array_died_keeps_its_value() -> None:
    a = xp.asarray(BASE.copy())
    v = a[1:3].T
    alive = weakref.ref(a)
    del a
    gc.collect()
    assert alive() is None  # views hold their first array weakly
    np.testing.assert_array_equal(np.asarray(v), BASE[1:3].T)
    v[0, 0] = 1.0
    np.testing.assert_array_equal(np.asarray(v)[0], [1.0, 6.0])


def test_no_reference_cycles_keep_arrays_alive() -> None:
    gc.collect()
    gc.disable()
    try:
        a = xp.asarray(BASE.copy())
        v = a[1:][0]
        t = a.T
        v[0] = 2.0
        t += 1.0
        float(v[1])
        refs = [weakref.ref(o) for o in (a, v, t)]
        del a, v, t
        assert all(r() is None for r in refs)  # freed by reference counting alone
    finally:
        gc.enable()


def test_reading_a_current_view_takes_nothing_again() -> None:
    a = xp.asarray(BASE.copy())
    other = xp.zeros(3)
    v = a[1:]
    expr = v.expr
    other[0] = 1.0  # a write elsewhere
    assert v.expr is expr
    a[3, 0] = 2.0
    assert v.expr is not expr
    np.testing.assert_array_equal(np.asarray(v)[2], [2.0, 0.0, 8.0, 0.0, 9.0, 1.5])
    assert a._view is None  # noqa: SLF001 - a non-view pays one attribute test


def test_a_long_chain_of_views() -> None:
    a, ref = xp.asarray(BASE.copy()), BASE.copy()
    v, rv = a, ref
    for _ in range(1500):
        v, rv = v.T, rv.T
    v[0, 1] = 42.0
    rv[0, 1] = 42.0
    np.testing.assert_array_equal(np.asarray(a), ref)
    a[2, 2] = -1.0
    ref[2, 2] = -1.0
    np.testing.assert_array_equal(np.asarray(v), rv)


def test_int_dtype_and_matmul_in_place() -> None:
    a, ref = xp.asarray(np.arange(16).reshape(4, 4)), np.arange(16).reshape(4, 4)
    v, rv = a[1:3, 1:3], ref[1:3, 1:3]
    t, rt = a.T, ref.T
    m = np.array([[0, 1], [1, 0]])
    v @= xp.asarray(m)
    rv @= m
    np.testing.assert_array_equal(np.asarray(t), rt)
    np.testing.assert_array_equal(np.asarray(v), rv)
    assert t.dtype == a.dtype == np.asarray(a).dtype


def test_reshape_view_rule_is_numpys() -> None:
    """``views.reshaped_strides`` decides view or copy as NumPy does, for random strided
    views (transposes, steps, new axes) and target shapes."""
    rng = np.random.default_rng(3)
    seen = {True: 0, False: 0}
    for _ in range(400):
        base = np.zeros(tuple(int(d) for d in rng.integers(1, 5, rng.integers(1, 4))))
        a, z = base, xp.zeros(base.shape)
        for _ in range(int(rng.integers(1, 4))):
            kind = rng.integers(0, 3)
            if kind == 0 and a.ndim:
                perm = tuple(int(p) for p in rng.permutation(a.ndim))
                a, z = a.transpose(perm), xp.permute_dims(z, perm)
            elif kind == 1 and a.ndim:
                key = tuple(slice(None, None, int(rng.choice([1, 2, -1]))) for _ in a.shape)
                a, z = a[key], z[key]
            elif a.ndim < 4:
                at = int(rng.integers(0, a.ndim + 1))
                key = (slice(None),) * at + (None,)
                a, z = a[key], z[key]
        if a.size == 0:
            continue
        shapes = [(-1,), (a.size, 1), (1, *a.shape[::-1])]
        shapes += [(a.shape[0], -1)] if a.ndim > 1 else []
        shapes += [(2, -1)] if a.size % 2 == 0 else []
        for shape in shapes:
            try:
                want = np.reshape(a, shape, copy=False)
            except ValueError:
                want = None
            got = views.reshaped_strides(z, np.reshape(a, shape).shape)
            seen[want is None] += 1
            if want is None:
                assert got is None, (a.shape, a.strides, shape)
            else:
                assert got is not None, (a.shape, a.strides, shape)
                kept = [(g, w // 8) for g, w, d in zip(got, want.strides, want.shape,
                                                       strict=True) if d != 1]
                assert all(g == w for g, w in kept), (a.shape, a.strides, shape, got)
    assert seen[True] > 50 and seen[False] > 50  # both outcomes are exercised
