"""minijax.lax.linalg: linear-algebra primitives, mirroring ``jax.lax.linalg``.

Each primitive lives in its own file with all of its rules. On CPU they lower
to jaxlib's LAPACK kernels (``stablehlo.custom_call @lapack_...``), which take
stacks of matrices, so a batch (leading dimensions, or a vmapped axis) is one
kernel call.
"""

from minijax.lax.linalg.cholesky import (cholesky, cholesky_p, cholesky_update,
                                         cholesky_update_p)
from minijax.lax.linalg.triangular_solve import triangular_solve, triangular_solve_p
from minijax.lax.linalg.lu import (lu, lu_p, lu_pivots_to_permutation,
                                   lu_pivots_to_permutation_p)
from minijax.lax.linalg.qr import (geqp3, geqp3_p, geqrf, geqrf_p, householder_product,
                                   householder_product_p, ormqr, ormqr_p, qr, qr_p)
from minijax.lax.linalg.eigh import EighImplementation, eigh, eigh_p
from minijax.lax.linalg.svd import SvdAlgorithm, svd, svd_p
from minijax.lax.linalg.eig import EigImplementation, eig, eig_p
from minijax.lax.linalg.hessenberg import hessenberg, hessenberg_p
from minijax.lax.linalg.schur import schur, schur_p
from minijax.lax.linalg.symmetric_product import symmetric_product, symmetric_product_p
from minijax.lax.linalg.tridiagonal import tridiagonal, tridiagonal_p
from minijax.lax.linalg.tridiagonal_solve import tridiagonal_solve, tridiagonal_solve_p
