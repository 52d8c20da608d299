"""lazysparse: a lazy, fused, compiled sparse array library with an Array API namespace.

``import lazysparse as xp`` gives the Array API 2024.12 namespace (every call builds a
Finch-Logic plan; values are computed when observed or by ``xp.compute``) plus extras:
``asformat``, ``to_scipy``, ``random``, ``compute``, ``clear_cache``, and the native
iterative solvers ``xp.sparse_linalg`` (``cg``, ``gmres``, ``lsqr``, ``lobpcg`` ...).
"""

import importlib
from types import ModuleType

from lazysparse.api.chapters.compute import explain as explain
from lazysparse.api.namespace import NAMESPACE as _NAMESPACE
from lazysparse.engine import clear_cache as clear_cache

__version__ = "0.1.0"
__array_api_version__ = "2024.12"

globals().update(_NAMESPACE)


def __getattr__(name: str) -> ModuleType:
    """``xp.sparse_linalg``, imported on first use: the solvers are the top stage and not
    needed to build or compute arrays (PEP 562; keeps ``import lazysparse`` short)."""
    if name == "sparse_linalg":
        return importlib.import_module("lazysparse.sparse_linalg")
    raise AttributeError(f"module 'lazysparse' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "sparse_linalg"})


__all__ = sorted([*_NAMESPACE, "clear_cache", "explain", "sparse_linalg",
                  "__array_api_version__"])
