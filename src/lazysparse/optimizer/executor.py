"""The compiled executor: api plan -> ``optimize`` (``plan_cache``) -> ``kernels.execute_plan``.

``install()`` registers it with the api as ``LAZYSPARSE_EXECUTOR=compiled`` (the default
once registered); ``reference`` stays available as the dense NumPy oracle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lazysparse.logic.nodes import Plan
from lazysparse.optimizer.plan_cache import lookup

if TYPE_CHECKING:
    from lazysparse.formats import Tensor


def compiled_executor(plan: Plan) -> tuple[Tensor, ...]:
    """Run ``plan`` through the optimizer (cached by structure) and the generated kernels;
    a plan of a shape seen before runs its cached program (``kernels.program``)."""
    from lazysparse.kernels.program import run_cached

    entry, inputs, params = lookup(plan)
    return run_cached(entry, inputs, params)


def install() -> None:
    """Register :func:`compiled_executor` with the api under the name ``compiled``."""
    from lazysparse.api.execution import register_executor

    register_executor("compiled", lambda: compiled_executor)
