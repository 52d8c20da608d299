"""formats stage of lazysparse: level-based tensors, named formats and conversions.

A Tensor is a tree of levels (Dense, Compressed, Singleton, Hashed, Bytemap) over a values
array with a fill value; each level declares properties and capabilities that code generation
reasons about.
"""

from . import convert_pydata, convert_scipy
from .config import DensifyError, get_densify_limit, set_densify_limit
from .convert import as_tensor, asformat, convert, from_coords
from .convert_numpy import from_numpy, to_numpy
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
from .tensor import Tensor, TensorConversions, install_conversions
from .validation import CoordinateError

# Tensor's from_*/to_*/asformat methods call these (the converters build Tensors, so
# Tensor does not import them: tensor.py, TensorConversions)
install_conversions(TensorConversions(
    from_numpy=from_numpy, from_coords=from_coords, from_scipy=convert_scipy.from_scipy,
    from_pydata=convert_pydata.from_pydata, to_numpy=to_numpy, to_scipy=convert_scipy.to_scipy,
    to_pydata=convert_pydata.to_pydata, asformat=asformat,
))

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
