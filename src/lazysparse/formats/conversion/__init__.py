"""Conversions between Tensors and other representations: formats, NumPy, scipy.sparse, pydata
sparse."""
