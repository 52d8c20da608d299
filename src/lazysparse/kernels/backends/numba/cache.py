"""Kernel cache: in memory, and on disk as importable modules Numba caches next to.

Each generated module is written once to ``<cache dir>/lsk_<hash>.py`` (temp file plus
atomic rename, so two processes compiling the same kernel never see a torn file) and run
from its source string under that file name; ``njit(cache=True)`` then keeps the machine
code in the ``__pycache__`` beside it, so a second process loads instead of compiling
(``cache_store`` guards those Numba files). The code object Python compiles from the source
is kept there too (``lsk_<hash>.<tag>.lsc``, keyed by the source's sha256), so a second
process does not compile the module's Python either. The directory is
``$LAZYSPARSE_CACHE_DIR``, else ``$XDG_CACHE_HOME/lazysparse``, else ``~/.cache/lazysparse``.
A directory that cannot be created or written leaves the kernels it cannot hold in memory
only (one ``KernelCacheWarning``); a read-only one still serves the kernels it holds.
"""

from __future__ import annotations

import hashlib
import importlib.util
import linecache
import marshal
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

import numba

import lazysparse
from lazysparse.formats.compiled.jit import cache_root
from lazysparse.formats.compiled.sync import Counters
from lazysparse.kernels.backends.numba.cache_store import (
    MODULE_PREFIX,
    STAMP,
    KernelCacheWarning,
    install,
    source_stamp,
    warn_memory_only,
)

__all__ = ["STATS", "KernelCacheWarning", "cache_dir", "clear_cache", "load_module",
           "memory_get", "memory_put", "source_hash"]

STATS = Counters("memory_hits", "generated", "compiled", "disk_loaded", "numpy")
_MEMORY: dict[Any, Any] = {}
_MODULES: dict[str, ModuleType] = {}
_LOCK = threading.Lock()
_MEMORY_FILE = "<lazysparse kernel {digest}>"  # the file name of a memory-only module
CODE_SUFFIX = ".lsc"  # a kernel module's marshalled code object, in ``__pycache__``


def cache_dir() -> Path:
    """The on-disk kernel cache directory (created on demand when possible; never raises)."""
    base = cache_root()
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass  # the kernels then stay in memory; ``_usable_dir`` warns
    return base


def _usable_dir() -> Path | None:
    """The cache directory, or None (with one warning) when it is not a directory and
    cannot be made one: a regular file, a missing parent that cannot be created."""
    base = cache_root()
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if not base.is_dir():
            warn_memory_only(base, exc, "cannot use the kernel cache directory")
            return None
    return base


def source_hash(source: str) -> str:
    """Content hash of a generated module (with the tool versions that compile it)."""
    h = hashlib.sha256()
    h.update(f"{lazysparse.__version__}|{numba.__version__}|".encode())
    h.update(source.encode())
    return h.hexdigest()[:24]


def _write_atomic(path: Path, text: str | bytes) -> None:
    """Write ``text`` to ``path`` through a temporary file and an atomic rename."""
    fd, tmp = tempfile.mkstemp(prefix=path.stem, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8") if isinstance(text, str) else text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _module_file(digest: str, source: str) -> Path | None:
    """The cache file holding exactly ``source`` (written when missing or different), or
    None when the directory cannot hold it (warned once; the kernel stays in memory)."""
    base = _usable_dir()
    if base is None:
        return None
    path = base / f"lsk_{digest}.py"
    try:
        if path.read_bytes() == source.encode("utf-8"):
            return path
    except OSError:
        pass  # missing, unreadable or not a file: write it
    try:
        _write_atomic(path, source)
    except OSError as exc:
        warn_memory_only(base, exc, "cannot write kernels to")
        return None
    return path


def _import(digest: str, source: str, path: Path | None) -> ModuleType:
    """Run ``source`` as the kernel module ``lazysparse_kernel_<digest>``: under ``path``
    (Numba caches beside it) or, when None, as a memory-only module with no disk cache.
    The source string is run, not the file, so a file changed since is never executed."""
    name = MODULE_PREFIX + digest
    if path is None:
        filename = _MEMORY_FILE.format(digest=digest)
        mod = ModuleType(name)
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    else:
        filename = str(path)
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None:
            raise ImportError(f"cannot import generated kernel {path}")
        mod = importlib.util.module_from_spec(spec)
    stamp = mod.__dict__[STAMP] = source_stamp(source)
    sys.modules[name] = mod
    try:
        code = compile(source, filename, "exec") if path is None else \
            _module_code(source, stamp, path)
        exec(code, mod.__dict__)  # noqa: S102 - generated kernel
    except BaseException:
        del sys.modules[name]
        raise
    install(mod, on_disk=path is not None)
    return mod


def _code_file(path: Path) -> Path:
    """Where the code object of the kernel module at ``path`` is kept (beside Numba's files)."""
    return path.parent / "__pycache__" / f"{path.stem}.{sys.implementation.cache_tag}{CODE_SUFFIX}"


def _module_code(source: str, stamp: bytes, path: Path) -> CodeType:
    """The code object of ``source`` compiled under ``path``: read from its code file when
    that holds exactly this source's code (this interpreter's bytecode magic, the source's
    sha256 ``stamp``, the file name), else compiled and the file written (atomically; a
    directory that cannot be written only costs the compile next time). Saves Python's
    compile of the module (~2 ms a kernel) in every new process."""
    cached = _code_file(path)
    head = importlib.util.MAGIC_NUMBER + stamp
    try:
        blob = cached.read_bytes()
        if blob.startswith(head):
            code = marshal.loads(blob[len(head):])
            if isinstance(code, CodeType) and code.co_filename == str(path):
                return code
    except (OSError, ValueError, EOFError, TypeError):
        pass  # missing or damaged: compile and rewrite it
    code = compile(source, str(path), "exec")
    try:
        cached.parent.mkdir(exist_ok=True)
        _write_atomic(cached, head + marshal.dumps(code))
    except OSError:
        pass  # a read-only cache: compiled again next time
    return code


def load_module(digest: str, source: str) -> ModuleType:
    """The kernel module of generated ``source``, from the disk cache when it can hold it."""
    with _LOCK:
        mod = _MODULES.get(digest)
        if mod is None:
            mod = _MODULES[digest] = _import(digest, source, _module_file(digest, source))
        return mod


def memory_get(key: Any) -> Any:
    """A compiled kernel from the in-memory cache, or None."""
    k = _MEMORY.get(key)
    if k is not None:
        STATS.bump("memory_hits")
    return k


def memory_put(key: Any, kernel: Any) -> None:
    """Remember a compiled kernel for this process."""
    _MEMORY[key] = kernel


def clear_cache() -> None:
    """Forget compiled kernels in memory and delete the on-disk cache's kernels (files that
    cannot be deleted, e.g. in a read-only directory, are left)."""
    with _LOCK:
        _MEMORY.clear()
        _MODULES.clear()
        d = cache_root()
        if d.is_dir():
            for p in [*d.glob("lsk_*.py"), *d.glob("lsk_*.tmp")]:
                try:
                    p.unlink(missing_ok=True)
                except OSError:
                    pass
            shutil.rmtree(d / "__pycache__", ignore_errors=True)
        for k in list(sys.modules):
            if k.startswith(MODULE_PREFIX):
                del sys.modules[k]
        for f in [f for f in linecache.cache if f.startswith("<lazysparse kernel ")]:
            del linecache.cache[f]
