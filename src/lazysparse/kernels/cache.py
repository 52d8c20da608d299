"""Kernel cache: in memory, and on disk as importable modules Numba caches next to.

Each generated module is written once to ``<cache dir>/lsk_<hash>.py`` (temp file plus
atomic rename, so two processes compiling the same kernel never see a torn file) and
imported with importlib; ``njit(cache=True)`` then keeps the machine code in the
``__pycache__`` beside it, so a second process loads instead of compiling. The directory is
``$LAZYSPARSE_CACHE_DIR``, else ``$XDG_CACHE_HOME/lazysparse``, else ``~/.cache/lazysparse``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import numba

import lazysparse

STATS: dict[str, int] = {"memory_hits": 0, "generated": 0, "compiled": 0, "disk_loaded": 0,
                         "numpy": 0}
_MEMORY: dict[Any, Any] = {}
_MODULES: dict[str, ModuleType] = {}
_LOCK = threading.Lock()


def cache_dir() -> Path:
    """The on-disk kernel cache directory (created on demand)."""
    env = os.environ.get("LAZYSPARSE_CACHE_DIR")
    if env:
        base = Path(env)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "lazysparse"
    base.mkdir(parents=True, exist_ok=True)
    return base


def source_hash(source: str) -> str:
    """Content hash of a generated module (with the tool versions that compile it)."""
    h = hashlib.sha256()
    h.update(f"{lazysparse.__version__}|{numba.__version__}|".encode())
    h.update(source.encode())
    return h.hexdigest()[:24]


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` unless an identical file is already there."""
    if path.exists():
        try:
            if path.read_text() == text:
                return
        except OSError:
            pass
    fd, tmp = tempfile.mkstemp(prefix=path.stem, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_module(digest: str, source: str) -> ModuleType:
    """Import generated ``source`` from the disk cache (writing it first if missing)."""
    with _LOCK:
        mod = _MODULES.get(digest)
        if mod is not None:
            return mod
        path = cache_dir() / f"lsk_{digest}.py"
        _write_atomic(path, source)
        name = f"lazysparse_kernel_{digest}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import generated kernel {path}")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        _MODULES[digest] = mod
        return mod


def memory_get(key: Any) -> Any:
    """A compiled kernel from the in-memory cache, or None."""
    k = _MEMORY.get(key)
    if k is not None:
        STATS["memory_hits"] += 1
    return k


def memory_put(key: Any, kernel: Any) -> None:
    """Remember a compiled kernel for this process."""
    _MEMORY[key] = kernel


def note_first_call(dispatcher: Any) -> None:
    """Count whether a kernel's first call compiled or loaded machine code from disk."""
    stats = getattr(dispatcher, "stats", None)
    if stats is None:
        return
    hits = sum(stats.cache_hits.values())
    misses = sum(stats.cache_misses.values())
    STATS["disk_loaded"] += hits
    STATS["compiled"] += misses


def clear_cache() -> None:
    """Forget compiled kernels in memory and delete the on-disk cache's kernels."""
    with _LOCK:
        _MEMORY.clear()
        _MODULES.clear()
        d = cache_dir()
        for p in d.glob("lsk_*.py"):
            p.unlink(missing_ok=True)
        pyc = d / "__pycache__"
        if pyc.exists():
            shutil.rmtree(pyc, ignore_errors=True)
        for k in list(sys.modules):
            if k.startswith("lazysparse_kernel_"):
                del sys.modules[k]
