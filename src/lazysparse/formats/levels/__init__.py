"""Level formats: each declares properties and capabilities; tensors compose them."""

from .base import Level, LevelCapabilities, LevelProperties
from .compressed import Compressed
from .dense import Dense
from .singleton import Singleton

__all__ = ["Compressed", "Dense", "Level", "LevelCapabilities", "LevelProperties", "Singleton"]
