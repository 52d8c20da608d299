"""Numba's on-disk entries of generated kernels, guarded so a cache never takes a process down.

A generated kernel module (``lazysparse_kernel_<hash>``, see ``cache.py``) compiles its
functions with ``njit(cache=True)``; Numba keeps, per function, an index (``.nbi``: Numba
version, source stamp, signature -> data file) and machine code (``.nbc``) in the
``__pycache__`` beside the module. Here:

- ``KernelLocator`` (first in Numba's locator list, claiming only kernel modules) puts those
  files in ``<cache dir>/__pycache__`` even when it is read-only, so a read-only, populated
  cache still loads; the source stamp is the module's source hash.
- ``KernelFunctionCache`` replaces each kernel function's Numba cache after import. Loading
  checks the index (this Numba, this source, this function's data files), the data file's
  checksum, and that the machine code is this function's; any failure or exception discards
  the function's files (one ``KernelCacheWarning`` per kernel) and Numba compiles. A save that
  cannot write warns once per directory and keeps the kernel in memory.
- Numba writes both files to a temporary name and renames them (``os.replace``), so
  concurrent writers never leave a torn file; the worst race loses a cache write.
"""

from __future__ import annotations

import glob
import hashlib
import os
import pickle
import threading
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

from numba.core import caching, config
from numba.core.caching import FunctionCache, IndexDataCacheFile, NullCache
from numba.core.dispatcher import Dispatcher

from lazysparse.formats import numba_load

MODULE_PREFIX = "lazysparse_kernel_"
STAMP = "__lazysparse_source_sha256__"  # a kernel module's global: the hash of its source
ENV_VAR = "LAZYSPARSE_CACHE_DIR"
_MAGIC = b"LSK-NBC1"  # starts a checksummed data file: magic, sha256 of the pickle, pickle
_WARNED: set[tuple[str, str]] = set()
_WARNED_LOCK = threading.Lock()
_CODEGEN_TUPLES: dict[Any, tuple[Any, Any]] = {}  # (codegen id, CPU settings) -> (codegen, tuple)


class KernelCacheWarning(RuntimeWarning):
    """The kernel cache was damaged or unusable; lazysparse recovered (kernels recompile)."""


class DamagedCacheEntry(Exception):
    """A kernel's cache file is unreadable, truncated, stale or another kernel's."""


def source_stamp(source: str) -> bytes:
    """The stamp Numba stores in a kernel's index: the sha256 of the module's source (equal
    to Numba's own stamp of a file holding that source, so older caches stay valid)."""
    return hashlib.sha256(source.encode("utf-8")).digest()


def warn_once(kind: str, subject: str, message: str) -> None:
    """Issue ``message`` as a ``KernelCacheWarning`` once per process per (kind, subject)."""
    with _WARNED_LOCK:  # once also when threads hit the same fault together
        if (kind, subject) in _WARNED:
            return
        _WARNED.add((kind, subject))
    warnings.warn(message, KernelCacheWarning, stacklevel=3)


def warn_memory_only(directory: Path, exc: BaseException, what: str) -> None:
    """Say once that ``directory`` cannot hold kernels (``what`` went wrong) and how to fix it."""
    reason = getattr(exc, "strerror", None) or exc
    warn_once("dir", str(directory),
              f"lazysparse kernel cache: {what} {directory} ({type(exc).__name__}: {reason}); "
              f"kernels compiled from now on are kept in memory only and compile again in the "
              f"next process. Set {ENV_VAR} to a writable directory to keep them.")


class KernelLocator(caching._CacheLocator):  # noqa: SLF001 - Numba's locator interface
    """Numba cache locator for lazysparse kernel modules: ``__pycache__`` beside the module,
    read-only or not (a failed save is handled by ``KernelFunctionCache``)."""

    def __init__(self, py_func: Any, py_file: str) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._stamp = py_func.__globals__.get(STAMP)
        # a memory-only module has no file; its cache is replaced by a NullCache on import
        self._cache_path = os.path.join(os.path.dirname(os.path.abspath(py_file)),
                                        "__pycache__")

    def ensure_cache_path(self) -> None:
        """Create the cache directory (no write probe: a read-only one still loads)."""
        os.makedirs(self._cache_path, exist_ok=True)

    def get_cache_path(self) -> str:
        """The ``__pycache__`` beside the kernel module."""
        return self._cache_path

    def get_source_stamp(self) -> Any:
        """The kernel source's hash, set as a module global before the module runs."""
        return self._stamp

    def get_disambiguator(self) -> str:
        """The function's first line, as Numba's in-tree locator names its files."""
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> KernelLocator | None:
        """A locator for functions of kernel modules only (others go to Numba's locators)."""
        module = getattr(py_func, "__module__", None) or ""
        if not module.startswith(MODULE_PREFIX) or STAMP not in py_func.__globals__:
            return None
        return cls(py_func, py_file)


def _register_locator() -> None:
    """Put ``KernelLocator`` first in Numba's locator list (once; it claims only kernels)."""
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # noqa: SLF001
    if KernelLocator not in impl._locator_classes:  # noqa: SLF001
        impl._locator_classes.insert(0, KernelLocator)  # noqa: SLF001


class KernelIndexFile(IndexDataCacheFile):
    """Numba's index/data files of one kernel function, read strictly: a stale, foreign or
    damaged index, and a data file failing its checksum, raise ``DamagedCacheEntry``."""

    def __init__(self, cache_path: str, filename_base: str, source_stamp: Any) -> None:
        super().__init__(cache_path=cache_path, filename_base=filename_base,
                         source_stamp=source_stamp)
        self._base = filename_base

    def _load_index(self) -> dict[Any, str]:
        """This function's overloads (``{}`` when it has no index yet)."""
        try:
            with open(self._index_path, "rb") as f:
                version = pickle.load(f)
                stamp, overloads = pickle.loads(f.read())
        except FileNotFoundError:
            return {}
        if version != self._version:
            raise DamagedCacheEntry(f"index written by Numba {version!r}")
        if stamp != self._source_stamp:
            raise DamagedCacheEntry("index of another kernel's source")
        names = overloads.values() if isinstance(overloads, dict) else [None]
        if not all(isinstance(n, str) and n.startswith(self._base + ".") for n in names):
            raise DamagedCacheEntry("index naming another function's machine code")
        return overloads

    def _save_data(self, name: str, data: Any) -> None:
        """Write the pickled machine code behind a magic and its sha256 (temp + rename)."""
        blob = self._dump(data)
        with self._open_for_write(self._data_path(name)) as f:
            f.write(_MAGIC + hashlib.sha256(blob).digest() + blob)

    def _load_data(self, name: str) -> Any:
        """Read machine code, verifying the checksum (files Numba wrote itself have none)."""
        with open(self._data_path(name), "rb") as f:
            blob = f.read()
        if blob.startswith(_MAGIC):
            digest, blob = blob[len(_MAGIC):len(_MAGIC) + 32], blob[len(_MAGIC) + 32:]
            if hashlib.sha256(blob).digest() != digest:
                raise DamagedCacheEntry(f"machine code {name} fails its checksum")
        return pickle.loads(blob)


def _check_owner(payload: Any, py_func: Any) -> None:
    """Raise unless a cached compile result is ``py_func``'s: a data file copied from another
    kernel unpickles when that kernel is loaded too, and would run its code."""
    fndesc = next((p for p in payload if hasattr(p, "modname") and hasattr(p, "qualname")),
                  None)
    if fndesc is None:
        raise DamagedCacheEntry("machine code without a function descriptor")
    if (fndesc.modname, fndesc.qualname) != (py_func.__module__, py_func.__qualname__):
        raise DamagedCacheEntry(f"machine code of {fndesc.modname}.{fndesc.qualname}")


def magic_tuple(codegen: Any) -> Any:
    """Numba's description of ``codegen`` (target triple, host CPU name, features) that keys
    its cache index: asked of LLVM once per codegen and CPU setting (an LLVM call of ~1.5 ms
    on every index read otherwise), since neither changes while the process runs."""
    key = (id(codegen), config.CPU_NAME, config.CPU_FEATURES)
    hit = _CODEGEN_TUPLES.get(key)
    if hit is None or hit[0] is not codegen:
        hit = _CODEGEN_TUPLES[key] = (codegen, codegen.magic_tuple())
    return hit[1]


class KernelFunctionCache(FunctionCache):
    """Numba's disk cache of one kernel function that never raises: a damaged entry is
    discarded and the function compiles; a save that cannot write keeps it in memory."""

    def __init__(self, py_func: Any) -> None:
        super().__init__(py_func)
        self._cache_file = KernelIndexFile(self._cache_path, self._impl.filename_base,
                                           self._impl.locator.get_source_stamp())
        code = py_func.__code__.co_code
        # Numba's own index key of a function without a closure (generated kernels have
        # none), its bytecode hashed once: equal keys, so caches written before stay valid
        self._code_key = None if py_func.__closure__ is not None else (
            hashlib.sha256(code).hexdigest(), hashlib.sha256(b"").hexdigest())

    def _index_key(self, sig: Any, codegen: Any) -> Any:
        """Numba's index key (signature, codegen, bytecode hashes), without asking LLVM
        for the host CPU on every read (:func:`magic_tuple`)."""
        if self._code_key is None:
            return super()._index_key(sig, codegen)
        return (sig, magic_tuple(codegen), self._code_key)

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        """The cached compile result of ``sig``, or None (then Numba compiles): the machine
        code checked to be this function's, loaded without Numba's target refresh where its
        symbols already resolve (``formats.numba_load``)."""
        try:
            return numba_load.load_overload(self, sig, target_context, self._check_owner)
        except Exception as exc:  # noqa: BLE001 - a damaged file makes pickle raise anything
            self._discard(exc)
            return None

    def _check_owner(self, payload: Any) -> None:
        """Raise unless ``payload`` is this function's compile result."""
        _check_owner(payload, self._py_func)

    def save_overload(self, sig: Any, data: Any) -> None:
        """Save a compile result; a directory that cannot be written warns once."""
        try:
            super().save_overload(sig, data)
        except OSError as exc:
            warn_memory_only(Path(self._cache_path).parent, exc, "cannot write kernels to")
        except Exception as exc:  # noqa: BLE001 - e.g. an index damaged since the load
            self._discard(exc)

    def _discard(self, exc: Exception) -> None:
        """Delete this function's index and data files and warn once for the kernel."""
        base, directory = self._impl.filename_base, Path(self._cache_path)
        files = [directory / f"{base}.nbi",
                 *map(Path, glob.glob(os.path.join(glob.escape(str(directory)),
                                                   glob.escape(base) + ".*.nbc")))]
        kept = []
        for p in files:
            try:
                p.unlink(missing_ok=True)
            except OSError:
                kept.append(p.name)
        module = self._py_func.__module__
        note = f" (could not delete {', '.join(kept)})" if kept else ""
        warn_once("entry", module,
                  f"lazysparse kernel cache: discarded a damaged cache entry of kernel "
                  f"{module.removeprefix(MODULE_PREFIX)} in {directory} "
                  f"({type(exc).__name__}: {exc}){note}; the kernel compiles again.")


def install(module: ModuleType, on_disk: bool) -> None:
    """Give each kernel function of ``module`` a ``KernelFunctionCache`` (``on_disk``) or
    none at all (memory-only: its source has no file)."""
    for value in list(vars(module).values()):
        if isinstance(value, Dispatcher) and value.py_func.__module__ == module.__name__:
            value._cache = KernelFunctionCache(value.py_func) if on_disk else NullCache()  # noqa: SLF001


_register_locator()
