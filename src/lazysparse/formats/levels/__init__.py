"""Level formats: each declares properties and capabilities; tensors compose them."""

from .base import Level, LevelCapabilities, LevelProperties
from .bytemap import Bytemap, bytemap_locate
from .compressed import Compressed
from .dense import Dense
from .hashed import Hashed, build_table, hashed_locate
from .singleton import Singleton

__all__ = [
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
