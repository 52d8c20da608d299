"""The registry's finiteness facts (``Operator.keeps_finite``, ``finite_annihilator``),
checked on NumPy: what the optimizer's fill rule for a product read by another product
relies on (``optimizer.unreached.region_matters``)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lazysparse.logic.operators import OPERATORS

# finite float64 values, extremes included (what overflow and poles would need)
FINITE = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-300, -1e-300, 1e300, -1e300,
                   np.finfo(np.float64).max, -np.finfo(np.float64).max])


def _float_operators() -> list[str]:
    """Registered operators a float64 operand fits (``where`` takes a bool first)."""
    return [name for name, op in OPERATORS.items() if name != "astype"
            and _applies(op)]


def _applies(op: object) -> bool:
    try:
        op.check_args(*([np.dtype(np.float64)] * op.nargs))  # type: ignore[attr-defined]
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("name", [n for n in _float_operators() if OPERATORS[n].keeps_finite])
def test_keeps_finite_on_every_finite_operand(name: str) -> None:
    """An operator marked ``keeps_finite`` gives a finite result for every combination of
    finite float64 operands, the largest ones included."""
    op = OPERATORS[name]
    for args in itertools.product(FINITE, repeat=op.nargs):
        with np.errstate(all="ignore"):
            out = np.asarray(op.apply(*[np.float64(a) for a in args]))
        assert np.isfinite(out.astype(np.float64)).all(), (name, args, out)


@pytest.mark.parametrize("name", ["multiply", "add", "exp", "divide", "pow", "log"])
def test_unmarked_operators_can_leave_the_finite_numbers(name: str) -> None:
    """The conservative default is right for these: some finite operands give ±inf or NaN
    (overflow, a pole, a log of 0)."""
    op = OPERATORS[name]
    assert not op.keeps_finite
    with np.errstate(all="ignore"):
        outs = [np.asarray(op.apply(*[np.float64(a) for a in args]))
                for args in itertools.product(FINITE, repeat=op.nargs)]
    assert not all(np.isfinite(o).all() for o in outs)


@pytest.mark.parametrize("name", [n for n in _float_operators()
                                  if OPERATORS[n].annihilator is not None])
def test_finite_annihilator_matches_numpy(name: str) -> None:
    """``finite_annihilator`` says whether the annihilator at its positions gives itself for
    every finite other operand: true for ``multiply``, ``maximum``; false for ``divide``
    (0 / 0 is NaN)."""
    op = OPERATORS[name]
    z = op.annihilator_for(np.dtype(np.float64))
    holds = True
    for pos in op.annihilates_at if op.annihilates_at is not None else range(op.nargs):
        for others in itertools.product(FINITE, repeat=op.nargs - 1):
            args = [np.float64(a) for a in others]
            args.insert(pos, np.float64(z))
            with np.errstate(all="ignore"):
                out = op.apply(*args)
            holds = holds and bool(out == z)
    assert holds == op.finite_annihilator, name
