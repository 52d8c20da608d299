"""Where lazysparse caches compiled code: ``$LAZYSPARSE_CACHE_DIR``, else
``$XDG_CACHE_HOME`` or ``~/.cache``, then ``lazysparse`` (generated kernels and package
helpers alike). Plain paths, no Numba: importing this costs nothing."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "LAZYSPARSE_CACHE_DIR"


def cache_root() -> Path:
    """The directory lazysparse caches compiled code in (it may not exist or be usable)."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "lazysparse"


def helpers_dir() -> Path | None:
    """``<cache root>/helpers`` when it exists or can be made and is writable, else None."""
    path = cache_root() / "helpers"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK | os.X_OK) else None


__all__ = ["ENV_VAR", "cache_root", "helpers_dir"]
