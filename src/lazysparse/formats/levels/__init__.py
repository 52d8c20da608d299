"""Level formats: each declares properties and capabilities; tensors compose them."""

from lazysparse.formats.levels.banded import Banded
from lazysparse.formats.levels.base import Level, LevelCapabilities, LevelProperties
from lazysparse.formats.levels.blocked import Blocked
from lazysparse.formats.levels.bytemap import Bytemap, bytemap_locate
from lazysparse.formats.levels.compressed import Compressed
from lazysparse.formats.levels.dense import Dense
from lazysparse.formats.levels.ell import Ell
from lazysparse.formats.levels.hashed import Hashed, build_table, hashed_locate
from lazysparse.formats.levels.runs import Runs
from lazysparse.formats.levels.singleton import Singleton

# structured levels carry a scalar or two besides their arrays (what io saves with them)
STRUCTURED_LEVELS = (Banded, Ell, Blocked, Runs)


def level_attrs(level: Level) -> dict[str, object]:
    """A level's scalar parameters besides its size (``length``, ``width``, ``block``)."""
    return {name: getattr(level, name) for name in level.attr_names}


def level_of_kind(kind: str, size: int, arrays: dict,  # type: ignore[type-arg]
                  attrs: dict | None = None) -> Level:  # type: ignore[type-arg]
    """The level of kind ``kind`` over its named ``arrays`` (as ``Level.arrays()`` gives
    them) and scalar ``attrs`` (as :func:`level_attrs` gives them): how a saved or
    described layout is rebuilt without knowing each class."""
    attrs = attrs or {}
    if kind == "banded":
        return Banded(size, arrays["offsets"], int(attrs["length"]))  # type: ignore[call-overload]
    if kind == "ell":
        return Ell(size, int(attrs["width"]), arrays["idx"])  # type: ignore[call-overload]
    if kind == "blocked":
        r, c = attrs["block"]  # type: ignore[misc]
        return Blocked(size, arrays["ptr"], arrays["idx"], (int(r), int(c)))
    if kind == "runs":
        return Runs(size, arrays["ptr"], arrays["idx"], arrays["end"])
    if kind == "dense":
        return Dense(size)
    if kind == "singleton":
        return Singleton(size, arrays["idx"])
    if kind == "hashed":
        return Hashed(size, arrays["ptr"], arrays["idx"], arrays.get("table"))
    if kind == "bytemap":
        return Bytemap(size, arrays["mask"], arrays["ptr"], arrays["idx"])
    return Compressed.of_kind(kind, size, arrays["ptr"], arrays["idx"])


__all__ = [
    "STRUCTURED_LEVELS",
    "Banded",
    "Blocked",
    "Ell",
    "Runs",
    "level_attrs",
    "level_of_kind",
    "Bytemap",
    "Compressed",
    "Dense",
    "Hashed",
    "Level",
    "LevelCapabilities",
    "LevelProperties",
    "Singleton",
    "build_table",
    "bytemap_locate",
    "hashed_locate",
]
