"""Structural keys kept per subquery (``logic.structural_key.subquery_key``): the fast
paths give the walk's key token for token, sharing inside a history stays in the key,
a known subquery is not keyed again, and copies of a node do not carry its key. Results
are checked against NumPy."""

from __future__ import annotations

import copy
import pickle
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
import lazysparse.logic.structural_key  # noqa: F401  (the module, not the function)
from lazysparse.api.chapters.compute import build_plan
from lazysparse.engine.plan_cache import input_key, plan_key

SK = sys.modules["lazysparse.logic.structural_key"]

_RNG = np.random.default_rng(7)
_V, _P = _RNG.random(6), _RNG.random(6)
_M = _RNG.random((3, 6))
_S = sp.random_array((6, 6), density=0.4, format="csr", rng=_RNG)


def _arrays() -> dict[str, Any]:
    return {"v": xp.asarray(_V), "p": xp.asarray(_P), "m": xp.asarray(_M),
            "S": xp.asarray(_S)}


def _shared(a: dict[str, Any]) -> Any:
    y = a["v"] * 2.0 + 1.0  # uncomputed, read twice
    return y * y - y


def _inner_twins(a: dict[str, Any], second: bool) -> Any:
    """``c = x + y`` with ``x``, ``y`` of one structure, then ``c`` plus one of them."""
    x, y = a["v"] * 2.0, a["p"] * 2.0
    c = x + y
    return c + (y if second else x)


BUILDERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "axpy": lambda a: a["v"] + 0.5 * a["p"],
    "chain": lambda a: ((a["v"] - 1.0) * a["p"] + 3) / 2.0,
    "broadcast": lambda a: a["m"] * a["v"] + a["v"][None, :],
    "transpose": lambda a: a["m"].T * 2.0 - 1.0,
    "reduction": lambda a: xp.sum(a["v"] * a["p"]) + 1.0,
    "axis sum": lambda a: xp.sum(a["m"] * 2.0, axis=1) * 3.0,
    "matvec": lambda a: a["S"] @ (a["v"] * 2.0) + a["p"],
    "where": lambda a: xp.where(a["v"] > 0.5, a["v"], a["p"] * 2.0),
    "same leaf": lambda a: a["v"] * a["v"] + a["v"],
    "shared": _shared,
    "inner twin x": lambda a: _inner_twins(a, False),
    "inner twin y": lambda a: _inner_twins(a, True),
}

EXPECTED: dict[str, Callable[[], Any]] = {
    "axpy": lambda: _V + 0.5 * _P,
    "chain": lambda: ((_V - 1.0) * _P + 3) / 2.0,
    "broadcast": lambda: _M * _V + _V[None, :],
    "transpose": lambda: _M.T * 2.0 - 1.0,
    "reduction": lambda: np.sum(_V * _P) + 1.0,
    "axis sum": lambda: np.sum(_M * 2.0, axis=1) * 3.0,
    "matvec": lambda: _S @ (_V * 2.0) + _P,
    "where": lambda: np.where(_V > 0.5, _V, _P * 2.0),
    "same leaf": lambda: _V * _V + _V,
    "shared": lambda: (_V * 2.0 + 1.0) ** 2 - (_V * 2.0 + 1.0),
    "inner twin x": lambda: _V * 2.0 + _P * 2.0 + _V * 2.0,
    "inner twin y": lambda: _V * 2.0 + _P * 2.0 + _P * 2.0,
}


def _key(fast: bool, name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """(key, data ids, parameter values) of a fresh plan of ``BUILDERS[name]``, keyed with
    the fast paths on or off (fresh nodes: nothing cached from the other mode)."""
    monkeypatch.setattr(SK, "FAST_PATH", fast)
    a = _ARRAYS
    key, data, nodes = SK.key_data_and_parameter_nodes(build_plan((BUILDERS[name](a),)),
                                                       input_key)
    return key, tuple(id(d) for d in data), tuple(n.val for n in nodes)


_ARRAYS = _arrays()


@pytest.mark.parametrize("name", list(BUILDERS))
def test_fast_paths_give_the_walks_key(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _key(True, name, monkeypatch) == _key(False, name, monkeypatch)


def test_keys_tell_structures_and_sharing_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = {name: _key(True, name, monkeypatch)[0] for name in BUILDERS}
    assert len(set(keys.values())) == len(keys)  # twelve structures, twelve keys
    # the same structure built again (new nodes, new names) keys the same
    assert _key(True, "shared", monkeypatch)[0] == keys["shared"]


def test_a_read_twice_and_two_equal_reads_differ() -> None:
    a = _ARRAYS
    y = a["v"] * 2.0
    twice = y + y
    copies = y + xp.asarray(_V) * 2.0  # the same structure, values and data, twice
    k1, d1, _ = plan_key(build_plan((twice,)))
    k2, d2, _ = plan_key(build_plan((copies,)))
    assert k1 != k2 and len(d1) == 1 and len(d2) == 2
    np.testing.assert_allclose(np.asarray(twice), 4.0 * _V)
    np.testing.assert_allclose(np.asarray(copies), 4.0 * _V)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_results_match_numpy_with_a_warm_cache(name: str) -> None:
    for _ in range(2):  # the second build hits the plan cache
        got = xp.compute(BUILDERS[name](_ARRAYS))
        np.testing.assert_allclose(np.asarray(got), EXPECTED[name](), rtol=1e-12)


def test_a_known_history_is_not_keyed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan over a keyed uncomputed history keys only the nodes it adds."""
    a = _ARRAYS
    x = a["v"]
    for _ in range(10):
        x = x * 0.5 + a["p"]  # twenty uncomputed arrays
    plan_key(build_plan((x,)))
    made: list[int] = []
    real = SK._mapjoin_key
    monkeypatch.setattr(SK, "_mapjoin_key", lambda n: made.append(1) or real(n))
    plan_key(build_plan((x + 1.0,)))
    assert len(made) == 1  # the new ``+ 1.0`` only
    np.testing.assert_allclose(np.asarray(x + 1.0), _expected_loop() + 1.0)


def _expected_loop() -> np.ndarray:
    x = _V
    for _ in range(10):
        x = x * 0.5 + _P
    return x


def test_copies_of_a_node_leave_its_key_behind() -> None:
    y = _ARRAYS["v"] * 2.0 + 1.0
    plan_key(build_plan((y,)))
    node = y.expr
    assert node.key_cache is not None
    for other in (copy.deepcopy(node), pickle.loads(pickle.dumps(node))):
        assert other.key_cache is None
        assert SK.structural_key(other) == SK.structural_key(node)


@pytest.mark.parametrize("name", ["axpy", "chain", "transpose", "reduction", "axis sum",
                                  "where", "same leaf", "shared"])
def test_operations_key_without_the_walker(name: str, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    """Once its leaves are keyed, a plan of elementwise operations and reductions takes
    the loop-free paths only (the walker keys leaves, other bodies, and a subquery that
    shares a node inside another operand's key: ``broadcast`` reads ``v`` in both)."""
    _key(True, name, monkeypatch)  # the leaves' keys
    walked: list[int] = []
    real = SK._walked_key
    monkeypatch.setattr(SK, "_walked_key", lambda n: walked.append(1) or real(n))
    _key(True, name, monkeypatch)
    assert walked == []


def test_scalar_kinds_by_type_agree_with_dtypes() -> None:
    """A constant's parameter kind read from the by-type table is its dtype's text (NumPy
    scalars) or ``py-<type>`` (Python's), as computed without it."""
    from lazysparse.logic.structural_key import _KINDS, scalar_kind

    for t, kind in _KINDS.items():
        val = t(1)
        want = val.dtype.str if isinstance(val, np.generic) else f"py-{t.__name__}"
        assert kind == want == scalar_kind(val)
    assert scalar_kind(np.datetime64("2026-01-01")) == np.dtype("datetime64[D]").str


def test_equal_structures_are_one_object_and_data_free() -> None:
    """A subquery's key is hash-consed and holds no data class: two builds of one
    structure share one ``Structure`` (other data types too); their plan keys differ by
    the data's classes only; another structure is another object."""
    a = _ARRAYS
    v32 = xp.asarray(_V.astype(np.float32))
    first, again = a["v"] + 0.5 * a["p"], a["v"] + 0.5 * a["p"]
    other_data = v32 + 0.5 * a["p"]
    other = a["v"] - 0.5 * a["p"]
    keys = [plan_key(build_plan((x,)))[0] for x in (first, again, other_data, other)]
    s = [x.expr.key_cache.key for x in (first, again, other_data, other)]
    assert s[0] is s[1] is s[2] and s[3] is not s[0]
    assert keys[0] == keys[1] and keys[0] != keys[2] and keys[0] != keys[3]
    assert keys[0][0][0] == keys[2][0][0]  # the same structure, other data classes
    assert pickle.loads(pickle.dumps(s[0])) is s[0]  # unpickled: the live object again
    np.testing.assert_allclose(np.asarray(other_data),
                               _V.astype(np.float32) + 0.5 * _P, rtol=1e-6)


def test_the_plan_stores_text_of_a_key_round_trips() -> None:
    """The plan store's canonical text of a key holding structures is its token streams:
    equal for equal keys built apart, different for other structures or data, and the
    same after the key is pickled and loaded."""
    from lazysparse.engine.plan_store import canonical

    a = _ARRAYS
    texts = [canonical(plan_key(build_plan((b(a),)))[0]) for b in (
        BUILDERS["chain"], BUILDERS["chain"], BUILDERS["matvec"])]
    assert texts[0] == texts[1] != texts[2]
    key = plan_key(build_plan((BUILDERS["chain"](a),)))[0]
    assert canonical(pickle.loads(pickle.dumps(key))) == texts[0]
    assert "S(" in texts[0] and "Structure" not in texts[0]


def test_a_plan_of_several_arrays_keeps_their_sharing(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    """Arrays computed together that share an uncomputed subquery key as the walk keys them
    (the fast path checks sharing only between queries: one query needs no set of its
    history), and apart from two arrays over equal copies."""
    a = _ARRAYS

    def plans(shared: bool) -> Any:
        y = a["v"] * 2.0 + 1.0
        y2 = y if shared else a["v"] * 2.0 + 1.0
        return build_plan((y * 3.0, y2 - 1.0))

    keys = {}
    for shared in (True, False):
        for fast in (True, False):
            monkeypatch.setattr(SK, "FAST_PATH", fast)
            keys[shared, fast] = SK.key_data_and_parameter_nodes(plans(shared), input_key)[0]
    assert keys[True, True] == keys[True, False]
    assert keys[False, True] == keys[False, False]
    assert keys[True, True] != keys[False, True]
    monkeypatch.setattr(SK, "FAST_PATH", True)
    y = a["v"] * 2.0 + 1.0
    got = xp.compute(y * 3.0, y - 1.0)
    np.testing.assert_allclose(np.asarray(got[0]), (_V * 2.0 + 1.0) * 3.0, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got[1]), _V * 2.0, rtol=1e-12)
