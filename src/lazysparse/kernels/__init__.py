"""kernels stage of lazysparse: loop IR, Numba code generation, kernel cache, execution.

Public: :func:`compile_query`, :func:`execute_plan`, :class:`Kernel`, :func:`clear_cache`,
:func:`cache_dir`, :data:`STATS` (compile/cache counters), :class:`KernelCacheWarning` (a
damaged or unwritable cache entry was discarded or skipped). See docs/kernels.md.
"""

from lazysparse.kernels.cache import STATS, KernelCacheWarning, cache_dir, clear_cache
from lazysparse.kernels.execute import Kernel, compile_query, execute_plan, run_query

__all__ = ["STATS", "Kernel", "KernelCacheWarning", "cache_dir", "clear_cache",
           "compile_query", "execute_plan", "run_query"]
