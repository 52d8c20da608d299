"""optimizer stage of lazysparse: heuristic passes from an api plan to normal form.

Public: :func:`optimize`, :data:`PASSES`, :func:`explain` (``xp.explain``),
:func:`compiled_executor` (the api's ``compiled`` executor).
"""

from lazysparse.optimizer.executor import compiled_executor, install
from lazysparse.optimizer.explain import Explanation, KernelExplanation, explain, explain_plan
from lazysparse.optimizer.pipeline import PASSES, optimize, run_passes

__all__ = ["PASSES", "Explanation", "KernelExplanation", "compiled_executor", "explain",
           "explain_plan", "install", "optimize", "run_passes"]
