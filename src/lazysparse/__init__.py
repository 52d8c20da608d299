"""lazysparse: a lazy, fused, compiled sparse array library with an Array API namespace.

``import lazysparse as xp`` gives the Array API 2024.12 namespace (every call builds a
Finch-Logic plan; values are computed when observed or by ``xp.compute``) plus extras:
``asformat``, ``to_scipy``, ``random``, ``compute``, ``clear_cache``.
"""

from lazysparse.api.namespace import NAMESPACE as _NAMESPACE

__version__ = "0.1.0"
__array_api_version__ = "2024.12"

globals().update(_NAMESPACE)

# LAZYSPARSE_EXECUTOR=compiled (the default): optimizer + generated kernels
from lazysparse.optimizer.executor import install as _install_compiled  # noqa: E402

_install_compiled()


def clear_cache(*args: object, **kwargs: object) -> object:
    """Drop compiled kernels from the kernel cache (``lazysparse.kernels.clear_cache``) and
    the optimized plans cached by structure."""
    from lazysparse.kernels import clear_cache as _clear
    from lazysparse.optimizer.plan_cache import clear_plan_cache

    clear_plan_cache()
    return _clear(*args, **kwargs)


def explain(*arrays: object) -> object:
    """How computing ``arrays`` together would run: the optimized plan, each kernel's loop
    order, formats and generated source (``lazysparse.optimizer.explain``)."""
    from lazysparse.optimizer import explain as _explain

    return _explain(*arrays)


__all__ = sorted([*_NAMESPACE, "clear_cache", "explain", "__array_api_version__"])
