"""backends stage of lazysparse: runs normal-form plans, query by query, on a device.

What every backend shares (``host``: the plan loop and result assembly), the single place a
query's runner is chosen (``execute.choose_runner``: NumPy, run-length, relayout or the
compiled kernel), and the backends: ``numba/`` (CPU) and ``cuda/`` (GPU). Loop IR and
lowering come from ``compile/``.

Public: :func:`compile_query`, :func:`execute_plan`, :class:`Kernel`, :func:`clear_cache`,
:func:`cache_dir`, :data:`STATS` (compile/cache counters), :class:`KernelCacheWarning` (a
damaged or unwritable cache entry was discarded or skipped). See docs/kernels.md.
"""

from lazysparse.kernels.backends.execute import Kernel, compile_query, execute_plan, run_query
from lazysparse.kernels.backends.numba.cache import (
           STATS,
           KernelCacheWarning,
           cache_dir,
           clear_cache,
)

__all__ = ["STATS", "Kernel", "KernelCacheWarning", "cache_dir", "clear_cache",
           "compile_query", "execute_plan", "run_query"]
