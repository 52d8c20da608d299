"""Loading a cached Numba compile result without Numba's target refresh, where that is safe.

Numba's ``FunctionCache.load_overload`` first calls ``target_context.refresh()``: it imports
every lowering and typing registry (``numba.np.arraymath``, ``linalg`` with a SciPy import
for BLAS, the typed containers, ...) — 0.3–0.6 s, paid by a new process's first cached
kernel although loading machine code needs almost none of it. What a cached library does need at
load is that every external symbol it declares resolves: Numba's C helpers and exception
objects (registered when the target context is made), the math library (at its ``init``),
the NRT (``rtsys.initialize``, done here) and the symbols a registry module adds when
imported (e.g. ``numba.cpython.hashing``'s secrets). :func:`load_overload` reads the cached
result, checks each undefined symbol of its object code (the ELF symbol table; elsewhere the
declarations of its bitcode) against what the process already resolves (LLVM's symbol table
and the JIT engine's defined symbols), and refreshes only when one is missing — so a
library is never finalized with a symbol LLVM could not resolve (which aborts the
process). Compiling is unchanged: Numba's compiler refreshes itself.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable
from typing import Any

import llvmlite.binding as ll
from numba.core.caching import FunctionCache
from numba.core.runtime import rtsys

from lazysparse.formats.compiled.sync import Counters

STATS = Counters("without_refresh", "refreshed")


def load_overload(cache: FunctionCache, sig: Any, target_context: Any,
                  check: Callable[[Any], None] | None = None) -> Any:
    """``cache``'s compile result of ``sig`` rebuilt in ``target_context``, or None when it
    holds none (``check`` may raise on a payload that is not the function's); the target is
    refreshed first only when the result declares a symbol the process does not resolve."""
    rtsys.initialize(target_context)  # the NRT every compiled function links against
    if not cache._enabled:  # noqa: SLF001 - Numba's cache interface
        return None
    key = cache._index_key(sig, target_context.codegen())  # noqa: SLF001
    payload = cache._cache_file.load(key)  # noqa: SLF001
    if payload is None:
        return None
    if check is not None:
        check(payload)
    if links_now(payload[0], target_context):
        STATS.bump("without_refresh")
    else:
        STATS.bump("refreshed")
        target_context.refresh()
    return cache._impl.rebuild(target_context, payload)  # noqa: SLF001


def links_now(libdata: Any, target_context: Any) -> bool:
    """Whether every external symbol the serialized library ``libdata`` needs resolves in
    this process now (False for a form this check does not read: then refresh)."""
    try:
        _, kind, data = libdata
    except (TypeError, ValueError):
        return False
    if kind != "object":
        return False
    names = elf_undefined(data[0])
    if names is None:  # not ELF: the declarations of the bitcode it was compiled from
        module = ll.parse_bitcode(data[1])
        names = [gv.name for gv in itertools.chain(module.functions, module.global_variables)
                 if gv.is_declaration]
    engine = target_context.codegen()._engine  # noqa: SLF001 - Numba's JIT engine
    return all(n.startswith("llvm.") or engine.is_symbol_defined(n) or ll.address_of_symbol(n)
               for n in names)


_ELF64_LE = b"\x7fELF\x02\x01"
_SHT_SYMTAB = 2
_SYM_SIZE = 24  # an Elf64_Sym


def elf_undefined(obj: bytes) -> list[str] | None:
    """The undefined symbols of a little-endian ELF64 object file (what the JIT linker must
    resolve), read from its symbol table: ~0.1 ms where parsing the library's bitcode takes
    ~3 ms; None for another format or a table it cannot read."""
    if not obj.startswith(_ELF64_LE):
        return None
    try:
        (shoff,) = struct.unpack_from("<Q", obj, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
        names = []
        for i in range(shnum):
            head = shoff + i * shentsize
            if struct.unpack_from("<I", obj, head + 4)[0] != _SHT_SYMTAB:
                continue
            offset, size, link = struct.unpack_from("<QQI", obj, head + 0x18)
            (strings,) = struct.unpack_from("<Q", obj, shoff + link * shentsize + 0x18)
            for j in range(size // _SYM_SIZE):
                name, _, _, section = struct.unpack_from("<IBBH", obj, offset + j * _SYM_SIZE)
                if section == 0 and name:  # SHN_UNDEF, named
                    start = strings + name
                    names.append(obj[start:obj.index(b"\0", start)].decode())
        return names
    except (struct.error, ValueError, UnicodeDecodeError):
        return None


__all__ = ["STATS", "elf_undefined", "links_now", "load_overload"]
