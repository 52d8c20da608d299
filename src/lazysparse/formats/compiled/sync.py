"""Thread-safety tools of the package's module-level caches and counters
(docs/architecture.md, "Threads").

``d[name] += 1`` on a dict is a read and a write: two threads computing at once may lose a
count. The package's ``STATS`` dictionaries are :class:`Counters`, whose :meth:`bump` is one
locked step; reading them (``STATS["hits"]``, ``dict(STATS)``) stays a plain dict read.
A cache whose value is costly to make (a generated kernel, an NVRTC module) builds each key
under :class:`KeyLocks`: one thread builds it while the others wanting that key wait, and
threads building other keys never wait for it.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterator
from contextlib import contextmanager


class Counters(dict[str, int]):
    """A ``dict`` of named counts, each increased by an atomic :meth:`bump`."""

    __slots__ = ("_lock",)

    def __init__(self, *names: str) -> None:
        super().__init__(dict.fromkeys(names, 0))
        self._lock = threading.Lock()

    def bump(self, name: str, n: int = 1) -> None:
        """Add ``n`` to the count ``name`` (exact when threads bump it at once)."""
        with self._lock:
            self[name] += n


class KeyLocks:
    """A lock per key while its value is built (a caller checks its cache again once it
    holds it). Re-entrant: a build that needs the same key on its own thread goes on."""

    def __init__(self) -> None:
        self._locks: dict[Hashable, threading.RLock] = {}

    @contextmanager
    def holding(self, key: Hashable) -> Iterator[None]:
        """Hold ``key``'s lock for the block (made on first use, dropped when released)."""
        lock = self._locks.setdefault(key, threading.RLock())  # one lock, whoever wins
        with lock:
            yield
        if self._locks.get(key) is lock:  # a later waiter finds the value cached anyway
            self._locks.pop(key, None)


__all__ = ["Counters", "KeyLocks"]
