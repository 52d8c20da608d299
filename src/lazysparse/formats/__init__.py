"""formats stage of lazysparse: level-based tensors, named formats and conversions.

A Tensor is a tree of levels (Dense, Compressed, Singleton, Hashed, Bytemap) over a values
array with a fill value; each level declares properties and capabilities that code generation
reasons about.
"""

from lazysparse.formats.config import DensifyError, get_densify_limit, set_densify_limit
from lazysparse.formats.conversion import pydata as convert_pydata
from lazysparse.formats.conversion import scipy_sparse as convert_scipy
from lazysparse.formats.conversion.convert import as_tensor, asformat, convert, from_coords
from lazysparse.formats.conversion.numpy_arrays import from_numpy, to_numpy
from lazysparse.formats.dtypes import SUPPORTED_DTYPES
from lazysparse.formats.levels import (
    Bytemap,
    Compressed,
    Dense,
    Hashed,
    Level,
    LevelCapabilities,
    LevelProperties,
    Singleton,
)
from lazysparse.formats.random import random
from lazysparse.formats.specs import FORMAT_NAMES, LEVEL_KINDS, FormatSpec, format_spec
from lazysparse.formats.tensor import Tensor, TensorConversions, install_conversions
from lazysparse.formats.validation.inputs import CoordinateError

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
