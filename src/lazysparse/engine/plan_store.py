"""Optimized plans kept on disk, so a new process skips the optimizer for shapes it knows.

A plan-cache entry (``engine.plan_cache``: the template with ``_Slot`` inputs and ``_Param``
constants; a shape cached under its constants' values stays in memory, so the store holds
one file per shape, never one per constant) is written to
``<kernel cache dir>/plans/<version>/<key digest>.lsp`` after its first eager run (marked
eager-only) and once it ran compiled (marked compiled: ``engine.plan_cache.persist``), and
read by a later process on a memory miss before it optimizes. The key is written as a canonical
text (:func:`canonical`: tuples, strings, numbers, dtypes and classes only; a key holding an
object's identity is never persisted), so equal keys name one file in every process.

Nothing stale or foreign is ever used:

- ``<version>`` is a digest of the library's source files (every module of the package) and
  of Python's, NumPy's and the pickle protocol's versions: a changed optimizer, pass, node or
  key function reads a directory of its own.
- A file holds a magic, the sha256 of its payload and the payload (a pickle of the version,
  the canonical key and the entry); a file failing any check (truncated, corrupt, another
  key's, another version's, not unpicklable) is ignored and the plan is optimized again
  (and the file rewritten).
- Only the package's own operators are persisted (a user-registered operator may mean
  something else in the next process): a plan or key naming another is kept in memory only.
- Writes go through a temporary file and ``os.replace``: a reader sees a whole file or none.
  A directory that cannot be written keeps plans in memory (the kernel cache warns about it).
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import sys
import threading
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from lazysparse.formats.compiled.cache_dir import cache_root
from lazysparse.formats.compiled.sync import Counters
from lazysparse.logic.operator_registry import FAMILIES
from lazysparse.logic.operators import OPERATORS, Operator  # every built-in registered
from lazysparse.logic.structural_key import Structure

MAGIC = b"LSPLAN1\n"
PROTOCOL = 5
SUFFIX = ".lsp"
STATS = Counters("loaded", "saved", "rejected", "unpersistable")
# the operators the package registered before any user code ran (this module is imported by
# ``import lazysparse``, after ``logic.operators`` registered every built-in)
_PACKAGE_OPERATORS: dict[str, Operator] = dict(OPERATORS)
_PACKAGE_FAMILIES = frozenset(FAMILIES)
_PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # lazysparse/, its __version__ included
_VERSION: list[str] = []  # the source digest, computed once per process
_VERSION_LOCK = threading.Lock()


class Unpersistable(Exception):
    """A key or plan that must not be kept on disk (an identity, a user's operator)."""


def source_version() -> str:
    """The digest of the package's modules (sources, and the byte code of a module shipped
    without its source; ``__init__.py``'s version among them) and of the tool versions plans
    depend on. Raises ``Unpersistable`` when they cannot be read (nothing is persisted)."""
    with _VERSION_LOCK:
        if not _VERSION:
            h = hashlib.sha256(f"{sys.version}|{np.__version__}|{PROTOCOL}".encode())
            try:
                for p in sorted(_PACKAGE_ROOT.rglob("*.py*")):
                    if p.suffix == ".py" or (p.suffix == ".pyc" and
                                             p.parent.name != "__pycache__"):
                        h.update(p.relative_to(_PACKAGE_ROOT).as_posix().encode() + b"\0")
                        h.update(p.read_bytes() + b"\0")
            except OSError as exc:
                _VERSION.append("")
                raise Unpersistable(f"cannot read the package's modules ({exc})") from exc
            _VERSION.append(h.hexdigest()[:20])
        if not _VERSION[0]:
            raise Unpersistable("the package's modules could not be read")
        return _VERSION[0]


def canonical(key: Any) -> str:
    """``key`` as a text equal in every process for equal keys; raises ``Unpersistable`` for
    anything but tuples, strings, numbers, None, dtypes, classes and hash-consed structures
    (``logic.structural_key.Structure``, written as their token streams), and for
    identities (``("id", n)`` tokens of ``logic.nodes._scalar_key``). A structure's text is
    kept with it (no key-level memo: equal keys such as ``(1,)`` and ``(1.0,)`` differ here)."""
    out: list[str] = []
    _encode(key, out)
    return "".join(out)


# each live structure's text (or the reason it is unpersistable): a structure recurs in the
# keys of one expression over other shapes, and its sub-structures in other expressions'
_STRUCTURE_TEXTS: weakref.WeakKeyDictionary[Structure, str | Unpersistable] = \
    weakref.WeakKeyDictionary()


def _structure_text(x: Structure) -> str:
    """``x``'s canonical text (memoized per structure; raises ``Unpersistable`` as
    :func:`_encode` does)."""
    found = _STRUCTURE_TEXTS.get(x)
    if found is None:
        out: list[str] = ["S"]
        try:
            _encode(x.tokens, out)
            found = "".join(out)
        except Unpersistable as exc:
            found = exc
        _STRUCTURE_TEXTS[x] = found
    if isinstance(found, Unpersistable):
        raise Unpersistable(str(found))
    return found


def _encode(x: Any, out: list[str]) -> None:
    """Append ``x``'s canonical text to ``out`` (see :func:`canonical`)."""
    if isinstance(x, tuple):
        if len(x) == 2 and x[0] == "id" and isinstance(x[1], int):
            raise Unpersistable("a key holding an object's identity")
        if len(x) == 3 and x[0] == "op" and isinstance(x[1], str) and \
                x[1] not in _PACKAGE_OPERATORS and x[1] not in _PACKAGE_FAMILIES:
            raise Unpersistable(f"operator {x[1]!r} is not the package's")
        out.append("(")
        for v in x:
            _encode(v, out)
            out.append(",")
        out.append(")")
    elif type(x) is Structure:  # one object per stream in a process: its tokens in a file
        out.append(_structure_text(x))
    elif x is None or isinstance(x, bool | int | float | complex | str | bytes):
        out.append(f"{type(x).__name__}:{x!r}")
    elif isinstance(x, np.dtype):
        out.append(f"dtype:{x.str}")
    elif isinstance(x, np.generic):
        out.append(f"np:{x.dtype.str}:{x.item()!r}")
    elif isinstance(x, type):
        out.append(f"class:{x.__module__}.{x.__qualname__}")
    else:
        raise Unpersistable(f"a key holding a {type(x).__name__}")


class _PlanPickler(pickle.Pickler):
    """Pickles a plan-cache entry, refusing operators that are not the package's own."""

    def reducer_override(self, obj: Any) -> Any:
        """Refuse a user's operator (pickled by name, it could mean another op later)."""
        if isinstance(obj, Operator) and _PACKAGE_OPERATORS.get(obj.name) is not obj and \
                obj.name not in _PACKAGE_FAMILIES:
            raise Unpersistable(f"operator {obj.name!r} is not the package's")
        return NotImplemented


def _plans_dir() -> Path:
    """This version's plan directory (it may not exist)."""
    return cache_root() / "plans" / source_version()


def _path(text: str) -> Path:
    """The file of the key whose canonical text is ``text``."""
    return _plans_dir() / (hashlib.sha256(text.encode()).hexdigest()[:32] + SUFFIX)


def load(key: Any) -> Any:
    """The entry persisted under ``key``, or None (none, unpersistable, or a file that fails
    a check: it is then optimized again and rewritten)."""
    try:
        text = canonical(key)
        blob = _path(text).read_bytes()
    except (Unpersistable, OSError):
        return None
    entry = _decode(blob, text)
    STATS.bump("loaded" if entry is not None else "rejected")
    return entry


def _decode(blob: bytes, text: str) -> Any:
    """The entry in ``blob`` when it is whole, this version's and ``text``'s, else None."""
    head = len(MAGIC) + 32
    if not blob.startswith(MAGIC) or len(blob) <= head:
        return None
    payload = blob[head:]
    if hashlib.sha256(payload).digest() != blob[len(MAGIC):head]:
        return None
    try:
        version, stored, entry = pickle.loads(payload)  # noqa: S301 - our own cache
    except Exception:  # noqa: BLE001 - a damaged or foreign pickle raises anything
        return None
    if version != source_version() or stored != text:
        return None
    return entry


def save(key: Any, entry: Any) -> None:
    """Persist ``entry`` under ``key`` (atomically); silently kept in memory only when the
    key or the entry may not be persisted or the directory cannot be written."""
    try:
        text = canonical(key)
        buf = io.BytesIO()
        _PlanPickler(buf, protocol=PROTOCOL).dump((source_version(), text, entry))
    except (Unpersistable, pickle.PicklingError, TypeError, AttributeError, RecursionError):
        STATS.bump("unpersistable")
        return
    payload = buf.getvalue()
    try:
        _write_atomic(_path(text), MAGIC + hashlib.sha256(payload).digest() + payload)
    except OSError:
        return
    STATS.bump("saved")


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and ``os.replace``."""
    import tempfile  # on the first save only: ``import lazysparse`` does not pay for it

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.stem, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def clear() -> None:
    """Delete every persisted plan (of every version) in the cache directory."""
    import shutil  # only when clearing: ``import lazysparse`` does not pay for it

    shutil.rmtree(cache_root() / "plans", ignore_errors=True)


__all__ = ["STATS", "Unpersistable", "canonical", "clear", "load", "save", "source_version"]
