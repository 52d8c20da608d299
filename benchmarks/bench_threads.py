"""``--threads N`` pinned before NumPy, BLAS and Numba load: a benchmark imports this first
and calls :func:`pin_threads` (imported modules read their thread counts once)."""

from __future__ import annotations

import os
import sys

THREAD_VARS = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "MKL_NUM_THREADS")


def threads_from_argv(default: str = "1") -> str:
    """The ``--threads`` value on the command line (``N`` or a list ``1,2``), else
    ``default``."""
    args = sys.argv[1:]
    for i, a in enumerate(args):
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
        if a == "--threads" and i + 1 < len(args):
            return args[i + 1]
    return default


def pin_threads(default: str = "1") -> str:
    """Set every thread-count variable to the first ``--threads`` value; return it."""
    n = threads_from_argv(default).split(",")[0]
    for var in THREAD_VARS:
        os.environ[var] = n
    return n
