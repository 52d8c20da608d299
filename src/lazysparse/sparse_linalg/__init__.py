"""Native iterative solvers on lazysparse arrays (``xp.sparse_linalg``), beside the
standard ``xp.linalg`` extension.

scipy.sparse.linalg's signatures and results: ``cg``, ``bicgstab``, ``gmres``, ``minres``
return ``(x, info)``; ``lsqr`` scipy's 10-tuple; ``lobpcg`` and ``eigsh`` eigenpairs of a
symmetric matrix; ``lstsq`` a direct sparse least-squares solve (cached sparse LU of
the augmented system); ``jacobi(A)`` is a built-in preconditioner. ``A`` may be a lazysparse
array (sparse or dense), a scipy sparse matrix or NumPy array, a LinearOperator-like
object or a callable. Each iteration is a few fused compiled kernels on the data's device
(the package sits above the api stage and builds everything with the lazy API).
"""

from __future__ import annotations

from lazysparse.sparse_linalg.direct import lstsq
from lazysparse.sparse_linalg.eigen import eigsh, lobpcg
from lazysparse.sparse_linalg.gmres import gmres
from lazysparse.sparse_linalg.krylov import bicgstab, cg
from lazysparse.sparse_linalg.lsqr import LsqrResult, lsqr
from lazysparse.sparse_linalg.minres import minres
from lazysparse.sparse_linalg.operators import Jacobi, jacobi

__all__ = ["Jacobi", "LsqrResult", "bicgstab", "cg", "eigsh", "gmres", "jacobi", "lobpcg",
           "lsqr", "lstsq", "minres"]
