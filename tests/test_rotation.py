"""``rotation`` (tests/conftest.py): the fast tier keeps every case and every choice once."""

from __future__ import annotations

from tests.conftest import covering, rotation


def _split(params: list) -> tuple[list[tuple], list[tuple]]:
    """The values of the fast and of the slow-marked parameter sets."""
    fast = [p.values for p in params if not any(m.name == "slow" for m in p.marks)]
    slow = [p.values for p in params if any(m.name == "slow" for m in p.marks)]
    return fast, slow


def test_every_case_and_choice_stays_in_the_fast_tier() -> None:
    params = rotation(["a", "b", "c", "d"], [0, 1, None])
    fast, slow = _split(params)
    assert fast == [("a", 0), ("b", 1), ("c", None), ("d", 0)]
    assert sorted(map(str, fast + slow)) == sorted(
        str((c, x)) for c in "abcd" for x in (0, 1, None))


def test_tuples_spread_over_argument_names_and_slow_extras_stay_slow() -> None:
    params = rotation([("x", 1), ("y", 2)], [("dense", "coo"), ("coo", "coo")],
                      case_ids=["X", "Y"], slow_choices=[("csr", "csr")],
                      slow_cases=[("z", 3)])
    fast, slow = _split(params)
    assert fast == [("x", 1, "dense", "coo"), ("y", 2, "coo", "coo")]
    assert len(slow) == 2 * 3 + 3 - 2 and ("z", 3, "dense", "coo") in slow
    assert [p.id for p in params][:2] == ["X-dense-coo", "X-coo-coo"]


def test_a_tuple_choice_wrapped_once_is_one_value() -> None:
    (param,) = rotation(["sum"], [((0, 1),)])
    assert param.values == ("sum", (0, 1)) and param.id == "sum-(0, 1)"


class _Spec:
    """A stand-in for a parametrized item's ``callspec``."""

    def __init__(self, params: dict) -> None:
        self.params = params


class _Item:
    def __init__(self, **params) -> None:
        self.callspec = _Spec(params)


def test_covering_keeps_every_value_of_every_axis_once() -> None:
    dtypes, fmts, ops = ["f8", "i4", "b1"], ["csr", "coo"], ["add", "mul", "max", "min"]
    items = [_Item(dtype=d, fmt=f, op=o) for d in dtypes for f in fmts for o in ops]
    picked = covering(items)
    assert len(picked) == len(ops) < len(items)  # the longest axis, not the product
    for name, values in (("dtype", dtypes), ("fmt", fmts), ("op", ops)):
        assert {it.callspec.params[name] for it in picked} == set(values)
    assert picked == [it for it in items if it in picked]  # in collection order


def test_covering_of_one_axis_keeps_every_item() -> None:
    items = [_Item(case=c) for c in "abc"]
    assert covering(items) == items
