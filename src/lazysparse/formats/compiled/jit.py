"""``helper_jit``: Numba's ``njit`` for the package's own compiled helpers, made when a
helper is first used, so that ``import lazysparse`` does not import Numba.

A decorated helper is a :class:`Helper`: called from Python it compiles (importing Numba
and :mod:`.jit_numba`, which gives it its on-disk cache under lazysparse's cache directory,
or none at all) and runs; referenced from compiled code (a helper calling another, a
generated kernel calling ``lsk.<name>``) Numba types it through ``_numba_type_``, which
makes the real dispatcher first, and reads ``targetoptions``/``py_func`` (``inline=``)
from it. :func:`helper_overload` is ``numba.extending.overload`` for helpers' typing
hooks, registered before the first helper compiles.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from lazysparse.formats.compiled.cache_dir import cache_root

_LOCK = threading.Lock()
# (function, typer) pairs for numba.extending.overload; None once registered with Numba
_PENDING_OVERLOADS: list[tuple[Callable[..., Any], Callable[..., Any]]] | None = []


class Helper:
    """A package helper compiled by Numba on first use (call, typing or attribute read).

    Until then it holds only the Python function and the ``njit`` options; afterwards
    every call and attribute read goes to the Numba dispatcher (``.dispatcher``).
    """

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any],
                 disk_cache: bool = True) -> None:
        self._fn = fn
        self._options = options
        self._disk_cache = disk_cache
        self._dispatcher: Any = None
        functools.update_wrapper(self, fn)  # __name__, __module__, __doc__ as Numba's own

    @property
    def dispatcher(self) -> Any:
        """The Numba dispatcher (made, with its disk cache, on first read)."""
        disp = self._dispatcher
        if disp is None:
            # made outside the lock (a thread typing a kernel holds Numba's compiler lock
            # and may ask for this one); two threads racing make two, one of them is kept
            made = _numba().dispatcher(self._fn, self._options, self._disk_cache)
            with _LOCK:
                if self._dispatcher is None:
                    self._dispatcher = made
                disp = self._dispatcher
        return disp

    @property
    def _numba_type_(self) -> Any:
        """What Numba's ``typeof`` reads: the dispatcher's type, so compiled callers link
        the compiled helper."""
        return self.dispatcher._numba_type_

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.dispatcher(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        """Dispatcher attributes (``py_func``, ``targetoptions``, ``overloads``, ...)."""
        if name.startswith("__") or name in _OWN:
            raise AttributeError(name)
        return getattr(self.dispatcher, name)

    def __reduce__(self) -> str:
        """Pickled by reference, as the module-level name it is."""
        return self.__qualname__

    def __repr__(self) -> str:
        state = "compiled on first use" if self._dispatcher is None else "dispatcher ready"
        return f"<helper {self.__module__}.{self.__qualname__} ({state})>"


_OWN = frozenset({"_fn", "_options", "_disk_cache", "_dispatcher"})


def _numba() -> Any:
    """:mod:`.jit_numba` (importing Numba), with the pending overloads registered."""
    global _PENDING_OVERLOADS
    from lazysparse.formats.compiled import jit_numba

    with _LOCK:
        if _PENDING_OVERLOADS is not None:
            for fn, typer in _PENDING_OVERLOADS:
                jit_numba.register_overload(fn, typer)
            _PENDING_OVERLOADS = None
    return jit_numba


def helper_jit(*, disk_cache: bool = True,
               **options: Any) -> Callable[[Callable[..., Any]], Helper]:
    """``numba.njit(**options)``, compiled on first use, disk-cached in the helpers
    directory when that directory is usable and in memory otherwise (``disk_cache=False``:
    always in memory, for closures, whose cells would enter the cache key)."""
    if "cache" in options:
        raise TypeError("helper_jit decides caching itself; drop cache=")

    def decorate(fn: Callable[..., Any]) -> Helper:
        return Helper(fn, dict(options), disk_cache)

    return decorate


def helper_overload(fn: Callable[..., Any]) -> Callable[[Callable[..., Any]], Any]:
    """``numba.extending.overload(fn)``, registered before the first helper compiles (at
    once when one already has)."""

    def register(typer: Callable[..., Any]) -> Callable[..., Any]:
        with _LOCK:
            if _PENDING_OVERLOADS is not None:
                _PENDING_OVERLOADS.append((fn, typer))
                return typer
        _numba().register_overload(fn, typer)
        return typer

    return register


__all__ = ["Helper", "cache_root", "helper_jit", "helper_overload"]
