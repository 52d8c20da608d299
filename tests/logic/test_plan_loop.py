"""logic.plan_loop: the one loop over a plan's statements that the reference interpreter and
the backends' host (``kernels.backends.host.run_plan``) plug their per-query step into.
Values are checked against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from lazysparse.logic import interpret
from lazysparse.logic.nodes import Alias, Plan, Produces, Query, Relabel
from lazysparse.logic.plan_loop import run_statements
from tests.logic.plans import i, j, mapjoin, table

rng = np.random.default_rng(37)


def test_statements_run_in_order_with_inputs_checked() -> None:
    """Inputs are checked and bound as they are, queries take ``run_query``'s value, a
    nested plan runs in place, ``Produces`` returns the named values in its order."""
    a = rng.random((3, 4))
    x, y = Alias("X"), Alias("Y")
    inp = table(a, i, j)
    plan = Plan((Query(x, inp), Plan((Query(y, mapjoin("add", x, 1.0)),)), Produces((y, x))))
    seen: list[str] = []

    def run_query(q: Query, env: dict[Alias, Any]) -> Any:
        seen.append(q.lhs.name)
        return f"value of {q.lhs.name}"

    def check(alias: Alias, t: Any) -> None:
        seen.append(f"input {alias.name}")

    env: dict[Alias, Any] = {}
    out = run_statements(plan, env, run_query, check)
    assert seen == ["input X", "Y"]
    assert out == ("value of Y", inp.tns.val) and env[x] is inp.tns.val
    assert run_statements(Plan((Query(x, inp),)), {}, run_query) is None  # no Produces
    assert seen[-1] == "X"  # without a checker an input table is a query like any other


def test_the_interpreter_runs_through_the_loop() -> None:
    a, b = rng.random((3, 4)), rng.random((3, 4))
    x, y, z = Alias("X"), Alias("Y"), Alias("Z")
    plan = Plan((Query(x, table(a, i, j)), Query(y, table(b, i, j)),
                 Plan((Query(z, mapjoin("multiply", Relabel(x, (i, j)), Relabel(y, (i, j)))),)),
                 Produces((z,))))
    (ref,) = interpret(plan)
    np.testing.assert_allclose(ref.to_numpy(), a * b)
    with pytest.raises(ValueError, match="not a defined alias"):
        interpret(Plan((Query(x, table(a, i, j)), Produces((y,)))))
    with pytest.raises(TypeError, match="expected a Plan"):
        interpret(table(a, i, j))
