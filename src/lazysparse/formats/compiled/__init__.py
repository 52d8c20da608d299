"""The formats stage's compiled helper loops (Numba), their NumPy twins for small inputs, and the
helper JIT itself."""
