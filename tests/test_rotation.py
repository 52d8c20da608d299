"""``rotation`` (tests/conftest.py): the fast tier keeps every case and every choice once."""

from __future__ import annotations

from tests.conftest import rotation


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
