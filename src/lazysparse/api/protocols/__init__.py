"""NumPy's and scipy's protocols for lazysparse arrays (__array_ufunc__, __array_function__,
methods, LinearOperator)."""
