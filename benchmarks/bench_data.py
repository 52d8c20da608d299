"""Inputs shared by the benchmarks: random sparse matrices and 3-d tensors, seeded."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def rand_csr(n: int, m: int, per_row: int, seed: int) -> sp.csr_array:
    """An ``n × m`` CSR matrix with about ``per_row`` uniformly placed entries per row."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), per_row)
    cols = rng.integers(0, m, n * per_row)
    a = sp.coo_array((rng.random(n * per_row), (rows, cols)), shape=(n, m)).tocsr()
    a.sum_duplicates()
    a.sort_indices()
    return a


def rand_coo3(n: int, nnz: int, seed: int) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """Sorted unique coordinates ``(i, j, k)`` of about ``nnz`` entries of an ``n³`` tensor
    and their values."""
    rng = np.random.default_rng(seed)
    flat = np.unique(rng.integers(0, n**3, nnz))
    return np.unravel_index(flat, (n, n, n)), rng.random(flat.size)


def symmetric_pattern(n: int, per_row: int, seed: int) -> sp.csr_array:
    """A symmetric 0/1 CSR matrix (an undirected graph) with about ``per_row`` entries per
    row: the triangle-counting input."""
    t = rand_csr(n, n, per_row // 2, seed)
    t = ((t + t.T) > 0).astype(np.float64).tocsr()
    t.sort_indices()
    return t
