"""``helper_jit``: Numba's ``njit`` for the package's own compiled helpers, with their
on-disk cache under lazysparse's cache directory, or none at all.

Numba's ``cache=True`` writes beside the module, else under ``$HOME``; when both are
read-only (a system install, a container) it raises at import. The helpers here cache in
``<cache dir>/helpers`` instead (``$LAZYSPARSE_CACHE_DIR``, else ``$XDG_CACHE_HOME`` or
``~/.cache``, then ``lazysparse``, as the generated kernels do), and when that directory
cannot be written they compile in memory each process: importing and running never depend
on a writable disk. A damaged cache file is ignored (the helper compiles again).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
from numba.core.caching import CompileResultCacheImpl, FunctionCache, UserProvidedCacheLocator

ENV_VAR = "LAZYSPARSE_CACHE_DIR"
_WARNED: set[str] = set()


def cache_root() -> Path:
    """The directory lazysparse caches compiled code in (it may not exist or be usable)."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "lazysparse"


def _helpers_dir() -> Path | None:
    """``<cache root>/helpers`` when it exists or can be made and is writable, else None."""
    path = cache_root() / "helpers"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK | os.X_OK) else None


class HelperLocator(UserProvidedCacheLocator):
    """Numba cache locator of a package helper: ``<cache root>/helpers/<module path>``,
    stamped by the source file like Numba's own locators."""

    def __init__(self, py_func: Any, py_file: str) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        base = _helpers_dir()
        assert base is not None  # from_function checked it
        self._cache_path = str(base / self.get_suitable_cache_subpath(py_file))

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> HelperLocator | None:
        """A locator when the helpers directory is usable and the source is a file."""
        if _helpers_dir() is None or not os.path.isfile(py_file):
            return None
        return cls(py_func, py_file)


class _HelperCacheImpl(CompileResultCacheImpl):
    """Numba's compile-result cache looking in the helpers directory only."""

    _locator_classes = [HelperLocator]  # noqa: RUF012 - Numba's class-level list


class HelperFunctionCache(FunctionCache):
    """The disk cache of one helper: an unreadable entry is a miss, a failed save a
    warning (once per process); neither stops the helper from running."""

    _impl_class = _HelperCacheImpl

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        """The cached compile result of ``sig``, or None (Numba then compiles)."""
        try:
            return super().load_overload(sig, target_context)
        except Exception:  # noqa: BLE001 - a damaged file makes pickle raise anything
            return None

    def save_overload(self, sig: Any, data: Any) -> None:
        """Save a compile result; on failure warn once and keep it in memory."""
        try:
            super().save_overload(sig, data)
        except Exception as exc:  # noqa: BLE001 - disk full, permissions, races
            if self._cache_path not in _WARNED:
                _WARNED.add(self._cache_path)
                warnings.warn(f"lazysparse: cannot cache compiled helpers in "
                              f"{self._cache_path} ({type(exc).__name__}: {exc}); they "
                              f"compile again in the next process", RuntimeWarning,
                              stacklevel=2)


def helper_jit(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit(**options)`` whose disk cache is :class:`HelperFunctionCache` (in the
    helpers directory) when that directory is usable, and no disk cache otherwise."""
    if "cache" in options:
        raise TypeError("helper_jit decides caching itself; drop cache=")

    def decorate(fn: Callable[..., Any]) -> Any:
        dispatcher = numba.njit(**options)(fn)
        try:
            cache = HelperFunctionCache(fn)
        except RuntimeError:  # no usable directory (or no source file): memory only
            return dispatcher
        dispatcher._cache = cache  # noqa: SLF001 - what Dispatcher.enable_caching sets
        return dispatcher

    return decorate


__all__ = ["HelperFunctionCache", "HelperLocator", "cache_root", "helper_jit"]
