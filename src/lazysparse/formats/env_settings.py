"""``LAZYSPARSE_*`` environment settings, parsed once per value instead of once per call.

Every compute asks which executor, which compile mode and which densify limit apply; each is
an environment variable a user, a test (``monkeypatch.setenv``) or ``compile_mode_set`` may
change at any moment. ``os.environ.get`` costs about 1 µs (a Python ``Mapping.get`` that
encodes the key and raises ``KeyError`` when it is unset), three of them a third of a
NumPy ufunc call's budget. An :class:`EnvSetting` looks the variable up in the process
environment's own table (one dict lookup in C) and re-parses only when the stored value is
another object than the one it parsed last, so a change is seen at the next call and an
unchanged value costs ~0.1 µs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_UNSET = object()  # the raw value of a variable that is not set


class EnvSetting(Generic[T]):
    """One environment variable and its parsed value: ``get()`` parses the variable's
    text (None when unset) with ``parse`` when it changed since the last call, else returns
    the value parsed then. A value ``parse`` rejects (ValueError) is never kept: every call
    raises it again until the variable is fixed."""

    __slots__ = ("name", "_parse", "_key", "_last")

    def __init__(self, name: str, parse: Callable[[str | None], T]) -> None:
        self.name = name
        self._parse = parse
        self._key = os.environ.encodekey(name) if hasattr(os.environ, "encodekey") else name
        self._last: tuple[object, T] | None = None  # (raw value, parsed): one tuple, atomic

    def get(self) -> T:
        """The parsed value of the variable now."""
        table = getattr(os.environ, "_data", None)
        if table is None:  # an environment mapping of another kind: read it the slow way
            return self._parse(os.environ.get(self.name))
        raw = table.get(self._key, _UNSET)
        last = self._last
        if last is not None and last[0] is raw:
            return last[1]
        text = None if raw is _UNSET else os.environ.get(self.name)
        value = self._parse(text)
        self._last = (raw, value)
        return value
