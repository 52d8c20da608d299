"""Skewed sparse inputs (issue 36): zipf-distributed term counts and Chung–Lu power-law
graphs, deterministic per seed (scipy CSR, float64). Shared by the skewed-plan tests and
``benchmarks/bench_products.py``."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def zipf_terms(docs: int, terms: int, nnz: int, seed: int = 0,
               exponent: float = 1.1) -> sp.csr_array:
    """A docs x terms count matrix: ``nnz`` draws, documents uniform, term ids zipf
    (rank ``r`` drawn with probability ``∝ r^-exponent``), duplicates summed."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, terms + 1) ** exponent
    p /= p.sum()
    rows = rng.integers(0, docs, nnz)
    cols = rng.choice(terms, nnz, p=p)
    t = sp.csr_array((np.ones(nnz), (rows, cols)), shape=(docs, terms))
    t.sum_duplicates()
    return t


def row_normalized(t: sp.csr_array) -> sp.csr_array:
    """Rows scaled to unit L2 norm (empty rows stay empty)."""
    norms = np.sqrt(np.asarray(t.multiply(t).sum(axis=1))).ravel()
    norms[norms == 0] = 1.0
    return sp.csr_array(sp.diags_array(1.0 / norms) @ t)


def chung_lu(n: int, mean_degree: float, seed: int = 0, beta: float = 2.5) -> sp.csr_array:
    """A symmetric 0/1 adjacency matrix (no self loops) of a Chung–Lu graph: vertex ``i``
    has expected degree ``∝ (i + 1)^(-1 / (beta - 1))`` (a power law of exponent
    ``beta``), scaled to ``mean_degree``; edge endpoints drawn proportionally to it."""
    rng = np.random.default_rng(seed)
    w = (np.arange(1, n + 1, dtype=np.float64)) ** (-1.0 / (beta - 1.0))
    w /= w.sum()
    m = int(n * mean_degree / 2)
    a, b = rng.choice(n, m, p=w), rng.choice(n, m, p=w)
    keep = a != b
    a, b = a[keep], b[keep]
    g = sp.csr_array((np.ones(2 * a.size), (np.r_[a, b], np.r_[b, a])), shape=(n, n))
    g.sum_duplicates()
    g.data[:] = 1.0
    return g


def community_terms(docs: int, terms: int, nnz: int, groups: int, seed: int = 0,
                    exponent: float = 1.1) -> sp.csr_array:
    """Zipf term counts in ``groups`` communities: document ``d`` draws its terms only from
    vocabulary ``d % groups`` (terms ``t`` with ``t % groups == d % groups``), zipf within
    it; the heavy terms of one community never meet another's documents, which an
    estimate assuming the documents and terms independent does not see."""
    rng = np.random.default_rng(seed)
    per = terms // groups
    p = 1.0 / np.arange(1, per + 1) ** exponent
    p /= p.sum()
    rows = rng.integers(0, docs, nnz)
    cols = rng.choice(per, nnz, p=p) * groups + rows % groups
    t = sp.csr_array((np.ones(nnz), (rows, cols)), shape=(docs, terms))
    t.sum_duplicates()
    return t
