"""The densify limit: how many bytes a dense result may take before lazysparse refuses."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import numpy as np

from lazysparse.formats.env_settings import EnvSetting

DEFAULT_DENSIFY_LIMIT = 4 * 2**30
ENV_VAR = "LAZYSPARSE_DENSIFY_LIMIT"

_UNSET = object()
_current: list[object] = [_UNSET]  # the value set by set_densify_limit; wins over env and default


class DensifyError(ValueError):
    """A conversion would allocate a dense array larger than the densify limit."""


def _parse_limit(value: object, source: str) -> int | None:
    """Turn a user-given limit (bytes; None/'none'/'inf' for unlimited) into an int or None."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("none", "inf", "unlimited"):
            return None
        try:
            value = int(float(text)) if ("e" in text or "." in text) else int(text)
        except ValueError as exc:
            raise ValueError(
                f"{source}: {value!r} is not a byte count (an integer, or 'none' for no limit)"
            ) from exc
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{source}: densify limit must be an int number of bytes or None")
    if value < 0:
        raise ValueError(f"{source}: densify limit must be >= 0 bytes, got {value}")
    return value


def get_densify_limit() -> int | None:
    """Bytes a dense result may take: set_densify_limit, else $LAZYSPARSE_DENSIFY_LIMIT, else 4 GiB.

    ``None`` means no limit.
    """
    if _current[0] is not _UNSET:
        return _current[0]  # type: ignore[return-value]
    return _FROM_ENV.get()


def _env_limit(env: str | None) -> int | None:
    """The limit ``$LAZYSPARSE_DENSIFY_LIMIT``'s text sets (unset or blank: the default)."""
    if env is not None and env.strip():
        return _parse_limit(env, f"environment variable {ENV_VAR}")
    return DEFAULT_DENSIFY_LIMIT


# parsed once per value (``formats.env_settings``): every compute and allocation check asks
_FROM_ENV = EnvSetting(ENV_VAR, _env_limit)


class set_densify_limit:  # noqa: N801 - used like a function
    """Set the densify limit in bytes (None: unlimited); as a context manager, restore it after.

    ``set_densify_limit(2**34)`` changes it for the process;
    ``with set_densify_limit(2**34): ...`` changes it only inside the block; ``.restore()`` on
    the returned object undoes a plain call.
    """

    def __init__(self, nbytes: int | None) -> None:
        limit = _parse_limit(nbytes, "set_densify_limit")
        self._previous = _current[0]
        _current[0] = limit

    def __enter__(self) -> set_densify_limit:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.restore()

    def restore(self) -> None:
        """Put back the limit in force before this call (what leaving the ``with`` block does)."""
        _current[0] = self._previous


def check_densify(nbytes: int, shape: tuple[int, ...], dtype: object, what: str) -> None:
    """Raise DensifyError when a dense array of ``nbytes`` exceeds the densify limit."""
    limit = get_densify_limit()
    if limit is not None and nbytes > limit:
        raise DensifyError(
            f"{what} would allocate a dense array of shape {shape} and dtype {dtype}: "
            f"{nbytes} bytes ({nbytes / 2**30:.3g} GiB), more than the densify limit of "
            f"{limit} bytes. To allow it, raise the limit with "
            f"lazysparse.formats.set_densify_limit(nbytes) (also a context manager: "
            f"`with set_densify_limit(nbytes): ...`) or the {ENV_VAR} environment variable "
            f"('none' for no limit)."
        )


# bins (pointer entries, counting-sort buckets) per stored entry, plus a constant, up to
# which an array sized by an extent counts as proportional to the entries it holds
BINS_PER_ENTRY = 8
BINS_SLACK = 4096


def check_allocation(count: int, dtype: Any, what: str, *, within: int = 0,
                     shape: tuple[int, ...] | None = None) -> None:
    """DensifyError before allocating ``count`` items of ``dtype`` sized by a shape (a
    dense result, a pointer array under dense levels, a workspace per coordinate of an
    axis) when they pass the densify limit, unless ``count <= within``: no more items than
    arrays already in memory hold (an input's stored positions), so the allocation is
    proportional to the data, not to its shape. One multiplication and two comparisons
    when it passes: cheap enough for every kernel call."""
    limit = get_densify_limit()
    if limit is None or count <= within:
        return
    dt = np.dtype(dtype)
    nbytes = int(count) * dt.itemsize
    if nbytes > limit:
        check_densify(nbytes, (int(count),) if shape is None else tuple(shape), dt, what)


def check_bins(nbins: int, entries: int, dtype: Any, what: str) -> None:
    """:func:`check_allocation` of an array with one item per bin (a pointer array of
    ``nbins`` parents, a counting sort's buckets) filled by ``entries`` stored entries:
    fine while the bins stay within a few per entry (:data:`BINS_PER_ENTRY`)."""
    check_allocation(nbins, dtype, what, within=BINS_PER_ENTRY * int(entries) + BINS_SLACK)
