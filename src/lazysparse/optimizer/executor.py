"""The compiled executor: api plan -> ``optimize`` (``plan_cache``) -> ``kernels.execute_plan``.

``install()`` registers it with the api as ``LAZYSPARSE_EXECUTOR=compiled`` (the default
once registered); ``reference`` stays available as the dense NumPy oracle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lazysparse.logic.nodes import Plan
from lazysparse.optimizer.plan_cache import optimize_cached

if TYPE_CHECKING:
    from lazysparse.formats import Tensor


def compiled_executor(plan: Plan) -> tuple[Tensor, ...]:
    """Run ``plan`` through the optimizer (cached by structure) and the generated kernels."""
    from lazysparse.kernels import execute_plan

    return execute_plan(optimize_cached(plan))


def install() -> None:
    """Register :func:`compiled_executor` with the api under the name ``compiled``."""
    from lazysparse.api.execution import register_executor

    register_executor("compiled", lambda: compiled_executor)
