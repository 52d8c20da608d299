"""lazysparse: a lazy, fused, compiled sparse array library with an Array API namespace.

``import lazysparse as xp`` gives the Array API 2024.12 namespace (every call builds a
Finch-Logic plan; values are computed when observed or by ``xp.compute``) plus extras:
``asformat``, ``to_scipy``, ``random``, ``compute``, ``clear_cache``.
"""

from lazysparse.api.namespace import NAMESPACE as _NAMESPACE

__version__ = "0.1.0"
__array_api_version__ = "2024.12"

globals().update(_NAMESPACE)


def clear_cache() -> None:
    """Drop compiled kernels from the in-memory and on-disk caches (when kernels exist)."""
    try:
        from lazysparse.kernels import clear_cache as _clear
    except ImportError:
        return
    _clear()


__all__ = sorted([*_NAMESPACE, "clear_cache", "__array_api_version__"])
