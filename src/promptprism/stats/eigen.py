"""Eigen-solvers for symmetric matrices and for kernel matrices with signed sample weights.

The PromptSplit operator is Lambda = Psi^T D Psi with D = diag(w) (w_i = 1/n on the test set, -eta/m on the
reference set) and Psi the (unknown, possibly infinite) joint features, of which we only know the Gram matrix
G = Psi Psi^T. With a factor G = L L^T (pivoted Cholesky, rank r), Psi = L Q^T for some Q with orthonormal
columns, so Lambda = Q (L^T D L) Q^T: its non-zero eigenvalues are those of the symmetric r x r matrix
B = L^T D L (= those of D G, eq. 3 of the paper), the unit eigenvector is v = Q w, and the score of sample s
on v is psi(s) . v = (L w)_s.

Backends (``promptprism.backend``): every function takes numpy arrays or torch tensors and answers in kind.
The solvers that are best done by a numpy-only library on the CPU (LAPACK's pivoted Cholesky, ARPACK) keep
that for numpy and give torch its own branch in one place each (:func:`symmetric_eigenpairs`,
:func:`gram_factor`, :func:`symmetric_extreme_eigenpairs`: a dense ``eigh`` on the device;
:func:`weighted_gram_eigenpairs`' top-k step: Lanczos with vectors, :mod:`.lanczos`). The permutation
test's batched solvers are in :mod:`.batched_eigen`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..array_ops import symmetric_eigh
from ..backend import array_namespace, backend_of, float_dtype, is_numpy, populated_copy
from .lanczos import weighted_gram_lanczos


def symmetric_eigenpairs(a: Any) -> tuple[Any, Any]:
    """All eigenpairs of a symmetric matrix, eigenvalues in descending order (float64, on a's backend;
    :func:`promptprism.array_ops.symmetric_eigh`: LAPACK divide and conquer for numpy)."""
    xp = array_namespace(a)
    vals, vecs = symmetric_eigh(xp.asarray(a, dtype=xp.float64))
    if is_numpy(vals):
        return vals[::-1].copy(), vecs[:, ::-1].copy()
    return xp.flip(vals, axis=0), xp.flip(vecs, axis=1)


def gram_factor(gram: np.ndarray, *, tol: float = -1.0) -> np.ndarray:
    """L (N x rank) with G = L L^T, by LAPACK's pivoted Cholesky (dpstrf), rows in G's original order.

    The default tolerance (N * eps * max diag) drops directions of G below round-off, so the rank is the
    numerical rank of G and the factor is exact to machine precision; for a float32 G, eps is float32's
    (its round-off would otherwise enter as spurious directions of size sqrt(eps), and D G's eigenvalues
    near zero with them: ~2e-5 instead of ~5e-8 on two identical sets).
    """
    if not is_numpy(gram):
        return _eigh_factor(gram)
    if tol < 0 and np.asarray(gram).dtype == np.float32:
        tol = gram.shape[0] * float(np.finfo(np.float32).eps) * float(np.max(np.diagonal(gram)))
    from scipy.linalg import lapack

    g = np.array(gram, dtype=np.float64, order="F")
    c, piv, rank, info = lapack.dpstrf(g, lower=1, tol=tol, overwrite_a=1)
    if info < 0:
        raise RuntimeError(f"dpstrf failed with info={info}")
    rank = max(int(rank), 1)
    factor = np.tril(c[:, :rank])
    out = np.empty_like(factor, order="C")
    out[piv - 1] = factor
    return out


def _eigh_factor(gram: Any) -> Any:
    """Torch's :func:`gram_factor`: L = U sqrt(S) over the eigenvalues of G above N eps max diag(G) (the
    pivoted Cholesky's tolerance: G's numerical rank; eps of G's precision). Another factor than the
    pivoted Cholesky one (L Q for an orthogonal Q), so the same eigenvalues of L^T D L and scores L w."""
    xp = array_namespace(gram)
    eps = float(xp.finfo(gram.dtype).eps)
    tol = gram.shape[0] * eps * float(xp.max(xp.linalg.diagonal(gram)))
    vals, vecs = xp.linalg.eigh(xp.asarray(gram, dtype=xp.float64))
    keep = vals > tol
    vals, vecs = vals[keep], vecs[:, keep]
    if vals.shape[0] == 0:
        return xp.zeros((gram.shape[0], 1), dtype=xp.float64, device=gram.device)
    return xp.flip(vecs * xp.sqrt(vals)[None, :], axis=1)


def _order_desc(vals: np.ndarray, vecs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(-vals, kind="stable")
    return vals[order], vecs[:, order]


@dataclass(frozen=True)
class GramEigen:
    """Eigenvalues of Lambda = Psi^T D Psi (descending) and ``scores[s, j] = psi(s) . v_j`` (unit v_j)."""

    eigenvalues: np.ndarray
    scores: np.ndarray  #: (N, k), one column per eigenvalue
    spectrum: np.ndarray | None = None  #: the whole spectrum, when a dense solve computed more than was kept
    kept: np.ndarray | None = None  #: indices of ``eigenvalues`` within ``spectrum``


#: sizes up to which ``solver='auto'`` may diagonalise fully (pivoted Cholesky + dense eigen-decomposition)
DENSE_SIZE_LIMIT = 3000

#: :func:`weighted_gram_eigenpairs`, ``solver='auto'``, numpy, more than this many rows and at most
#: :data:`DENSE_SIZE_LIMIT`: Lanczos first, within a budget of ``max(GRAM_LANCZOS_MIN_WIDTH, N //
#: GRAM_LANCZOS_WIDTH_DIVISOR)`` Krylov vectors, the dense decomposition when it has not converged by then.
#: Measured (2-core AMD EPYC, float64 G, top 10 + 10, eta = 1): synthetic mixture N = 1,000 / 2,000 /
#: 3,000: dense 0.26 / 1.06 / 3.6 s, Lanczos 0.016 / 0.06 / 0.14 s (52 vectors; eigenvalues equal to
#: 2e-15); the demo (N = 1,600) 0.90 s / 0.04 s (46 vectors); MiniLM answers (N = 1,440) 0.54 s / 0.04 s
#: (76-84 vectors). Slow spectra (eta = 1e4 or 0.01: 500-1,000 vectors at N = 3,000) spend the budget
#: and then take the dense route; below 800 rows the dense route costs less than such a budget.
GRAM_LANCZOS_MIN_ROWS = 800
GRAM_LANCZOS_MIN_WIDTH = 100
GRAM_LANCZOS_WIDTH_DIVISOR = 20


def symmetric_operator(a: np.ndarray, dtype: Any, *, weights: np.ndarray | None = None) -> Any:
    """SciPy LinearOperator x -> A x (or weights * A x) of a symmetric matrix, float64 vectors: BLAS symv
    reads one triangle (about twice as fast as a general product) of A held in ``dtype`` (float32: half
    the memory traffic again, A rounded to float32)."""
    import scipy.sparse.linalg as spla
    from scipy.linalg.blas import dsymv, ssymv

    dtype = np.dtype(dtype)
    a = a if a.flags.f_contiguous else np.ascontiguousarray(a).T  # (A = A^T: its Fortran-ordered view)
    a = a if a.dtype == dtype else populated_copy(a, dtype, order="F")
    symv = ssymv if dtype == np.float32 else dsymv

    def matvec(x: np.ndarray) -> np.ndarray:
        ax = symv(1.0, a, np.ravel(x).astype(dtype, copy=False), lower=1).astype(np.float64)
        return ax if weights is None else weights * ax

    return spla.LinearOperator(a.shape, dtype=np.float64, matvec=matvec)


def lanczos_too_wide(size: int, n_pos: int, n_neg: int) -> bool:
    """Whether the extremes asked for are too many of an N = ``size`` problem for Lanczos (the dense solve
    of :func:`weighted_gram_eigenpairs` answers instead)."""
    return max(n_pos, n_neg) + 2 >= size or 2 * max(n_pos, n_neg) + 1 >= size


def weighted_gram_eigenpairs(
    gram: np.ndarray,
    weights: np.ndarray,
    *,
    n_positive: int | None = None,
    n_negative: int | None = None,
    solver: str = "auto",
) -> GramEigen:
    """Eigenpairs of Lambda = Psi^T diag(weights) Psi, given only G = Psi Psi^T.

    ``solver='dense'``: pivoted Cholesky G = L L^T, then every eigenpair of the symmetric r x r matrix
    B = L^T D L (v = Q w, scores L w); exact to machine precision, O(N^3).
    ``solver='lanczos'``: only the ``n_positive`` largest and ``n_negative`` smallest eigenvalues, by
    Lanczos in the G inner product, in which D G (whose eigenvalues are real: it is similar to the
    symmetric G^{1/2} D G^{1/2}) is self-adjoint: one Krylov run for both ends, each step one product G X
    with a block of vectors and no factorisation. For an eigenvector u of D G, v = Psi^T u / |Psi^T u| and
    the scores are G u / |u|_G.
    ``'auto'``: dense when every eigenpair is wanted or N <= :data:`GRAM_LANCZOS_MIN_ROWS`; up to
    :data:`DENSE_SIZE_LIMIT` (numpy) lanczos within a budget of Krylov vectors, dense when that is spent;
    above it lanczos. (A torch ``gram``: dense up to :data:`DENSE_SIZE_LIMIT`: a device's ``eigh`` is
    fast.)

    A float32 ``gram`` is kept float32 (half the memory): the dense route factors a float64 copy, lanczos
    multiplies in float32 with float64 Krylov vectors; the scores are float64 either way.
    A torch ``gram`` is solved on its device (dense factor and eigh; the same Lanczos,
    :func:`~promptprism.stats.lanczos.weighted_gram_lanczos`); the results are tensors there.
    """
    xp, on = array_namespace(gram), backend_of(gram)
    if gram.dtype != xp.float32:
        gram = xp.asarray(gram, dtype=xp.float64)
    weights = on.asarray(weights, dtype="float64")
    size = gram.shape[0]
    want_all = n_positive is None and n_negative is None
    n_pos = size if n_positive is None else n_positive
    n_neg = size if n_negative is None else n_negative
    budget = None  # (Krylov vectors a Lanczos run may take before the dense route answers instead)
    use_dense = solver == "dense" or want_all
    if solver == "auto" and size <= DENSE_SIZE_LIMIT:
        use_dense = use_dense or size <= GRAM_LANCZOS_MIN_ROWS or not is_numpy(gram)
        budget = max(GRAM_LANCZOS_MIN_WIDTH, size // GRAM_LANCZOS_WIDTH_DIVISOR)
    if not use_dense and lanczos_too_wide(size, n_pos, n_neg):
        use_dense = True
    if not use_dense:
        found = weighted_gram_lanczos(gram, weights, n_pos, n_neg, max_width=budget)
        if found is not None:
            return GramEigen(*found)
    factor = gram_factor(gram)
    rank = factor.shape[1]
    vals, w = symmetric_eigenpairs(factor.T @ (weights[:, None] * factor))
    if not want_all:
        keep = np.r_[np.arange(min(n_pos, rank)), np.arange(max(rank - n_neg, min(n_pos, rank)), rank)]
        cols = on.asarray(keep)
        return GramEigen(vals[cols], factor @ w[:, cols], spectrum=vals, kept=keep)
    return GramEigen(vals, factor @ w)


def prefetch_extreme_solver() -> None:
    """Import ARPACK's wrapper (``scipy.sparse.linalg``, ~0.08 s: :func:`symmetric_extreme_eigenpairs`) on
    a background thread, for a caller about to spend seconds in BLAS products that leave the interpreter
    idle (PromptSplit's covariance pass): the first extreme eigen-solve then finds it imported. Once per
    process."""
    import importlib
    import sys
    import threading

    if "scipy.sparse.linalg" not in sys.modules:
        threading.Thread(target=importlib.import_module, args=("scipy.sparse.linalg",), daemon=True).start()


def symmetric_extreme_eigenpairs(a: Any, n_each: int, *, precision: str = "float64") -> tuple[Any, Any]:
    """The ``n_each`` largest and ``n_each`` smallest eigenpairs of a symmetric matrix, descending.

    Lanczos (ARPACK ``eigsh``, which='BE', converged to machine precision, deterministic start vector):
    O(r^2) per iteration instead of the O(r^3) of a full decomposition when only the extremes are needed;
    each product reads one triangle of A (:func:`symmetric_operator`), in float32 when ``precision`` is
    'float32' (A rounded to float32: eigenvalue errors ~1e-7 ||A||, below the round-off of the float32
    features A was summed from; a quarter of the float64 product's memory traffic).
    A torch matrix: a dense ``eigh`` on its device (fast on an accelerator), the same extremes kept.

    Lanczos needs more steps as the spectrum's spread grows against the gaps at its ends (PromptSplit's
    eta = 1e4 took 6,000 products at 2,000 features): up to :data:`DENSE_SIZE_LIMIT`, the run stops after
    about ``size`` / :data:`LANCZOS_BUDGET_DIVISOR` products (about a dense decomposition's cost) and the
    dense decomposition answers instead (:func:`dense_extremes`).
    """
    size = a.shape[0]
    if 2 * n_each + 1 >= size:
        return symmetric_eigenpairs(a)
    if not is_numpy(a):
        return dense_extremes(a, n_each)
    import scipy.sparse.linalg as spla

    op = symmetric_operator(np.asarray(a, dtype=np.float64), float_dtype(np, precision))
    v0 = np.full(size, 1.0 / np.sqrt(size))
    ncv = min(size, max(4 * n_each + 1, 40))
    budgeted = size <= DENSE_SIZE_LIMIT
    restarts = max(10, size // (LANCZOS_BUDGET_DIVISOR * max(1, ncv - 2 * n_each))) if budgeted else None
    try:
        vals, vecs = spla.eigsh(op, k=2 * n_each, which="BE", v0=v0, tol=0.0, ncv=ncv, maxiter=restarts)
    except spla.ArpackNoConvergence:
        if not budgeted:
            raise
        return dense_extremes(a, n_each)
    return _order_desc(vals, vecs)


#: a budgeted Lanczos run (:func:`symmetric_extreme_eigenpairs`) stops after about size / this many products
LANCZOS_BUDGET_DIVISOR = 2


def dense_extremes(a: Any, n_each: int) -> tuple[Any, Any]:
    """The ``n_each`` largest and smallest eigenpairs of a symmetric matrix (descending) from its full
    decomposition."""
    size = a.shape[0]
    vals, vecs = symmetric_eigenpairs(a)
    cols = backend_of(a).asarray(np.r_[np.arange(n_each), np.arange(size - n_each, size)])
    return vals[cols], vecs[:, cols]


#: relative round-off below which an eigenvalue is not a mode, by the precision Lambda was computed in
ROUNDOFF = {"float64": 1e-12, "float32": 1e-6}


def select_modes(vals: np.ndarray, n_modes: int, norm: float = 0.0, *, precision: str = "float64"
                 ) -> np.ndarray:
    """Indices (into the descending ``vals``) of the top ``n_modes`` positive and negative eigenvalues.

    Eigenvalues within round-off of zero are not modes. Round-off is relative to the size of Lambda's two
    terms, ``norm`` = 1 + eta for PromptSplit (normalised kernels: each covariance has trace 1), so that two
    identical sets (Lambda = 0, computed eigenvalues ~1e-17) report no modes rather than noise; the relative
    threshold is :data:`ROUNDOFF` of the ``precision`` Lambda was computed in.
    """
    vals = np.asarray(vals, dtype=np.float64)
    scale = max(float(np.max(np.abs(vals))) if vals.size else 0.0, norm, 1e-300)
    tol = ROUNDOFF[precision] * scale
    pos = np.flatnonzero(vals > tol)[:n_modes]
    neg = np.flatnonzero(vals < -tol)[::-1][:n_modes]
    return np.r_[pos, neg].astype(np.int64)


def signed_extremes(vals: np.ndarray, n_top: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n_top`` largest positive eigenvalues and the ``n_top`` largest |negative| ones, both as
    descending magnitudes, zero-padded to length ``n_top``; ``vals`` in any order, along the last axis."""
    vals = np.sort(np.asarray(vals, dtype=np.float64), axis=-1)
    pos = np.clip(vals[..., ::-1][..., :n_top], 0.0, None)
    neg = np.clip(-vals[..., :n_top], 0.0, None)
    pad = [(0, 0)] * (vals.ndim - 1) + [(0, max(0, n_top - pos.shape[-1]))]
    return np.pad(pos, pad), np.pad(neg, pad)
