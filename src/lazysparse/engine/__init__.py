"""engine stage of lazysparse: runs the plans the api builds.

The one place that picks an executor by device (:func:`executor_for`: the CUDA backend,
the compiled Numba path or the reference interpreter by ``LAZYSPARSE_EXECUTOR``), holds
the plan cache (``engine.plan_cache``), runs optimize → kernels, and builds
:func:`explain_plan`. Below the api, above the kernels and the optimizer.
"""

from lazysparse.engine import plan_store
from lazysparse.engine.executors import (
    DEFAULT_EXECUTOR,
    Executor,
    compiled_executor,
    cuda_executor,
    executor_for,
    get_executor,
    reference_executor,
    register_executor,
)
from lazysparse.engine.explain import Explanation, KernelExplanation, explain_plan
from lazysparse.engine.plan_cache import clear_plan_cache
from lazysparse.engine.preview import PlanPreview, ResultPreview, preview_plan


def clear_cache(*args: object, **kwargs: object) -> object:
    """Drop compiled kernels from the kernel cache (``lazysparse.kernels.backends.clear_cache``) and
    the optimized plans cached by structure, in memory and on disk."""
    from lazysparse.kernels.backends import clear_cache as clear_kernels  # the backend loads lazily

    clear_plan_cache()
    plan_store.clear()
    return clear_kernels(*args, **kwargs)


__all__ = ["DEFAULT_EXECUTOR", "Executor", "Explanation", "KernelExplanation", "clear_cache",
           "clear_plan_cache", "compiled_executor", "cuda_executor", "executor_for",
           "explain_plan", "get_executor", "PlanPreview", "preview_plan", "reference_executor",
           "register_executor", "ResultPreview"]
