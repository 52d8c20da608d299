"""Level formats: each declares properties and capabilities; tensors compose them."""

from .base import Level, LevelCapabilities, LevelProperties
from .bytemap import Bytemap, bytemap_locate
from .compressed import Compressed
from .dense import Dense
from .hashed import Hashed, build_table, hashed_locate
from .singleton import Singleton


def level_of_kind(kind: str, size: int, arrays: dict) -> Level:  # type: ignore[type-arg]
    """The level of kind ``kind`` over its named ``arrays`` (as ``Level.arrays()`` gives
    them): how a saved or described layout is rebuilt without knowing each class."""
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
