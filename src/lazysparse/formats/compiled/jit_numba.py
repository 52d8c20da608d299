"""The Numba side of :func:`~lazysparse.formats.compiled.jit.helper_jit`: a helper's dispatcher and
its on-disk cache. Imported when the first helper is compiled, not with the package.

Numba's ``cache=True`` writes beside the module, else under ``$HOME``; when both are
read-only (a system install, a container) it raises at import. The helpers cache in
``<cache dir>/helpers`` instead (:mod:`.cache_dir`), and when that directory cannot be
written they compile in memory each process: importing and running never depend on a
writable disk. A damaged cache file is ignored (the helper compiles again).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

import numba
from numba.core.caching import CompileResultCacheImpl, FunctionCache, UserProvidedCacheLocator
from numba.extending import is_jitted, overload

from lazysparse.formats import numba_load
from lazysparse.formats.compiled.cache_dir import helpers_dir

_WARNED: set[str] = set()


class HelperLocator(UserProvidedCacheLocator):
    """Numba cache locator of a package helper: ``<cache root>/helpers/<module path>``,
    stamped by the source file like Numba's own locators."""

    def __init__(self, py_func: Any, py_file: str) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        base = helpers_dir()
        assert base is not None  # from_function checked it
        self._cache_path = str(base / self.get_suitable_cache_subpath(py_file))

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> HelperLocator | None:
        """A locator when the helpers directory is usable and the source is a file."""
        if helpers_dir() is None or not os.path.isfile(py_file):
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
        """The cached compile result of ``sig``, or None (Numba then compiles); loaded
        without Numba's target refresh where its symbols already resolve (``numba_load``)."""
        try:
            return numba_load.load_overload(self, sig, target_context)
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


def dispatcher(fn: Callable[..., Any], options: dict[str, Any], disk_cache: bool) -> Any:
    """``numba.njit(**options)(fn)`` whose disk cache is :class:`HelperFunctionCache` (in
    the helpers directory) when ``disk_cache`` and that directory is usable, and no disk
    cache otherwise; ``fn`` itself when it is compiled already (a Numba dispatcher)."""
    if is_jitted(fn):
        return fn
    disp = numba.njit(**options)(fn)
    if not disk_cache:
        return disp
    try:
        cache = HelperFunctionCache(fn)
    except RuntimeError:  # no usable directory (or no source file): memory only
        return disp
    disp._cache = cache  # noqa: SLF001 - what Dispatcher.enable_caching sets
    return disp


def register_overload(fn: Callable[..., Any], typer: Callable[..., Any]) -> None:
    """``numba.extending.overload(fn)(typer)``: compiled code calling ``fn`` uses ``typer``."""
    overload(fn)(typer)


__all__ = ["HelperFunctionCache", "HelperLocator", "dispatcher", "register_overload"]
