"""formats stage of lazysparse: level-based tensors, named formats and conversions.

A Tensor is a tree of levels (Dense, Compressed, Singleton, Hashed, Bytemap) over a values
array with a fill value; each level declares properties and capabilities that code generation
reasons about.
"""

from .config import DensifyError, get_densify_limit, set_densify_limit
from .convert import as_tensor, convert
from .dtypes import SUPPORTED_DTYPES
from .levels import (
    Bytemap,
    Compressed,
    Dense,
    Hashed,
    Level,
    LevelCapabilities,
    LevelProperties,
    Singleton,
)
from .random import random
from .specs import FORMAT_NAMES, LEVEL_KINDS, FormatSpec, format_spec
from .tensor import Tensor
from .validation import CoordinateError

__all__ = [
    "FORMAT_NAMES",
    "LEVEL_KINDS",
    "SUPPORTED_DTYPES",
    "Bytemap",
    "Compressed",
    "CoordinateError",
    "Dense",
    "DensifyError",
    "FormatSpec",
    "Hashed",
    "Level",
    "LevelCapabilities",
    "LevelProperties",
    "Singleton",
    "Tensor",
    "as_tensor",
    "convert",
    "format_spec",
    "get_densify_limit",
    "random",
    "set_densify_limit",
]
