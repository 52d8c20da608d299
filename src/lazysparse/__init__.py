"""lazysparse: a lazy, fused, compiled sparse array library with an Array API namespace."""

__version__ = "0.1.0"
