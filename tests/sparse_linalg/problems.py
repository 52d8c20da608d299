"""Test problems for the native solvers: an SPD 2-D Laplacian, a nonsymmetric
convection–diffusion operator, a symmetric indefinite matrix and a tall sparse least
squares matrix (scipy CSR, fixed seeds)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def laplacian_2d(side: int) -> sp.csr_array:
    """The 5-point Laplacian on a ``side`` x ``side`` grid (SPD)."""
    t = sp.diags_array([-np.ones(side - 1), 4 * np.ones(side), -np.ones(side - 1)],
                       offsets=[-1, 0, 1])
    off = sp.diags_array([-np.ones(side - 1), -np.ones(side - 1)], offsets=[-1, 1])
    return (sp.kron(sp.eye_array(side), t) + sp.kron(off, sp.eye_array(side))).tocsr()


def convection_diffusion(side: int, wind: float = 0.4) -> sp.csr_array:
    """The Laplacian plus a first-order upwind convection term along x (nonsymmetric)."""
    n = side * side
    conv = sp.diags_array([wind * np.ones(n), -wind * np.ones(n - 1)], offsets=[0, -1])
    return (laplacian_2d(side) + conv).tocsr()


def indefinite(side: int) -> sp.csr_array:
    """A symmetric indefinite matrix: the Laplacian shifted into its spectrum."""
    a = laplacian_2d(side)
    return (a - 2.3 * sp.eye_array(a.shape[0])).tocsr()


def tall(m: int = 300, n: int = 40, seed: int = 1) -> sp.csr_array:
    """A tall sparse matrix of full column rank."""
    a = sp.random_array((m, n), density=0.08, format="csr", rng=np.random.default_rng(seed))
    return (a + sp.eye_array(m, n)).tocsr()


def rhs(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n)
