"""Kernel tests share compiled kernels through the on-disk cache (the user cache directory
unless LAZYSPARSE_CACHE_DIR is set), so reruns do not recompile."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
