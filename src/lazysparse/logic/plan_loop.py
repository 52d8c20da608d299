"""The one loop over a plan's statements (issue 37; JAX's ``eval_jaxpr``): each query's
value bound under its alias in order, then the values ``Produces`` names.

The reference interpreter (``logic.interpreter``) and the backends' host
(``kernels.backends.host.run_plan``) differ only in what one query is, so each passes that
in (``run_query``; the host also checks each input table, ``check_input``). The cached
program (``kernels.backends.program.Program``) still keeps its own loop over the statements
it decoded once: its per-call path binds recipes with no walk of the plan, and a callback
per query there would add Python calls to every compute (tests/api/test_call_budget.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lazysparse.logic.nodes import Alias, Immediate, Plan, Produces, Query, Table

# (query, environment by alias) -> the query's value
RunQuery = Callable[[Query, dict[Alias, Any]], Any]
# (alias, an input table's value) -> raises unless the caller runs on that value
CheckInput = Callable[[Alias, Any], None]


def run_statements(plan: Plan, env: dict[Alias, Any], run_query: RunQuery,
                   check_input: CheckInput | None = None) -> tuple[Any, ...] | None:
    """Run ``plan``'s statements in order into ``env``: a query's value is ``run_query``'s
    (with ``check_input``, an input table's value is bound as it is, once checked), a
    nested plan runs in place; returns the values ``Produces`` names (None: the plan has
    no ``Produces``)."""
    for body in plan.bodies:
        match body:
            case Query(lhs=lhs, rhs=Table(tns=Immediate(val=t))) if check_input is not None:
                check_input(lhs, t)
                env[lhs] = t
            case Query(lhs=lhs):
                env[lhs] = run_query(body, env)
            case Produces(args=args):
                return produced(args, env)
            case Plan():
                out = run_statements(body, env, run_query, check_input)
                if out is not None:
                    return out
            case _:
                raise ValueError(f"not a plan statement: {body!r}")
    return None


def produced(args: tuple[Any, ...], env: dict[Alias, Any]) -> tuple[Any, ...]:
    """The values of ``Produces(args)`` (a ValueError names an alias nothing defined)."""
    out = []
    for a in args:
        if not isinstance(a, Alias) or a not in env:
            raise ValueError(f"produces {a!r}, which is not a defined alias")
        out.append(env[a])
    return tuple(out)


__all__ = ["CheckInput", "RunQuery", "produced", "run_statements"]
