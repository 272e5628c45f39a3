"""LAPACK's two-stage eigenvalue solver, the Lanczos top vectors beside it, and the small symmetric helpers,
each against a dense ``eigh`` or the plain numpy expression."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from promptprism import array_ops
from promptprism._two_stage import eigvalsh_two_stage, has_two_stage

pytestmark = pytest.mark.skipif(not has_two_stage(np.float64), reason="no loaded LAPACK has dsyevd_2stage")


def _spd(size: int, seed: int, dtype=np.float64) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((size + 20, size))
    return (x.T @ x / size).astype(dtype)


@pytest.mark.parametrize("size", [1, 2, 7, 300, 701])
@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
@pytest.mark.slow
def test_two_stage_values_equal_divide_and_conquer(size, dtype, tol):
    a = _spd(size, size, dtype)
    kept = a.copy()
    got = eigvalsh_two_stage(a)
    np.testing.assert_array_equal(a, kept)  # not overwritten unless asked
    expected = scipy.linalg.eigvalsh(a.astype(np.float64))
    assert got.dtype == dtype
    np.testing.assert_allclose(got, expected, atol=tol * np.abs(expected).max())


def test_two_stage_overwrites_only_when_asked_and_reads_the_lower_triangle():
    a = np.asfortranarray(_spd(50, 1))
    lower_only = np.tril(a) + np.triu(np.full_like(a, 99.0), 1)  # garbage above the diagonal
    np.testing.assert_allclose(eigvalsh_two_stage(np.asfortranarray(lower_only)), scipy.linalg.eigvalsh(a),
                               rtol=1e-12, atol=1e-12)
    work = a.copy(order="F")
    eigvalsh_two_stage(work, overwrite_a=True)
    assert not np.array_equal(work, a)
    with pytest.raises(ValueError):
        eigvalsh_two_stage(np.ones((3, 4)))


def _check_top(vals, vecs, a, n_top):
    ref_vals, ref_vecs = scipy.linalg.eigh(a.astype(np.float64))
    scale = np.abs(ref_vals).max()
    np.testing.assert_allclose(vals, ref_vals[::-1], atol=1e-11 * scale)
    # the top n_top vectors span the same subspace (projectors agree) and are orthonormal eigenvectors
    top = ref_vecs[:, ::-1][:, :n_top]
    np.testing.assert_allclose(vecs @ vecs.T, top @ top.T, atol=1e-8)
    np.testing.assert_allclose(a @ vecs, vecs * vals[:n_top], atol=1e-9 * scale)


def test_lanczos_top_vectors_beside_two_stage_values_equal_dense_eigh():
    a = _spd(400, 3)
    vals, vecs = array_ops.two_stage_values_and_top_vectors(a, 10)
    _check_top(vals, vecs, a, 10)


def test_a_repeated_top_eigenvalue_still_gives_the_top_subspace():
    size = 400
    q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((size, 40)))
    lam = np.r_[3.0, 3.0, 3.0, 2.0, 2.0, np.linspace(1.0, 0.1, 35)]
    a = (q * lam) @ q.T
    pair = array_ops.two_stage_values_and_top_vectors(a, 5)
    if pair is None:  # Lanczos missed a copy: the caller's tridiagonal route then answers
        pair = array_ops.tridiagonal_values_and_top_vectors(a, 5)
    _check_top(*pair, a, 5)


@pytest.mark.slow
def test_values_and_top_vectors_routes_agree(monkeypatch):
    a, b = _spd(600, 4), _spd(600, 5)
    monkeypatch.setattr(array_ops, "TWO_STAGE_MIN", 500)
    side_by_side = array_ops.values_and_top_vectors_of([a, b], 6)
    for (vals, vecs), m in zip(side_by_side, (a, b), strict=True):
        _check_top(vals, vecs, m, 6)
    monkeypatch.setattr(array_ops, "has_two_stage", lambda dtype: False)  # a LAPACK without the routine
    fallback = array_ops.values_and_top_vectors(a, 6)
    np.testing.assert_allclose(fallback[0], side_by_side[0][0], atol=1e-12)
    _check_top(*fallback, a, 6)


@pytest.mark.parametrize("size", [1, 5, 512, 513, 1100])
def test_symmetric_part_and_column_gram_equal_the_numpy_expressions(size):
    rng = np.random.default_rng(size)
    a = rng.standard_normal((size, size))
    got = array_ops.symmetric_part(a)
    np.testing.assert_allclose(got, 0.5 * (a + a.T), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(got, got.T)
    f = rng.standard_normal((37, size))
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-4)):
        gram = array_ops.column_gram(f.astype(dtype))
        assert gram.dtype == dtype
        np.testing.assert_allclose(gram, f.T @ f, atol=tol * size)
        np.testing.assert_array_equal(gram, gram.T)


@pytest.mark.slow
def test_arpack_failure_falls_back_to_the_tridiagonal_route(monkeypatch):
    zero = np.zeros((600, 600))  # ARPACK cannot start on the zero matrix
    assert array_ops.two_stage_values_and_top_vectors(zero, 4) is None
    monkeypatch.setattr(array_ops, "TWO_STAGE_MIN", 500)
    vals, vecs = array_ops.values_and_top_vectors(zero, 4)
    np.testing.assert_array_equal(vals, np.zeros(600))
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(4), atol=1e-12)


def test_populated_zeros_are_zeros_in_the_order_asked_and_fall_back_when_mapping_fails(monkeypatch):
    import mmap

    from promptprism import backend

    big = (3000, 2000)  # 48 MB: above POPULATE_BYTES
    for order in ("C", "F"):
        a = backend.populated_zeros(big, np.float64, order=order)
        assert a.shape == big and not a.any()
        assert a.flags.f_contiguous if order == "F" else a.flags.c_contiguous
        a[-1, -1] = 1.0  # writable

    def refuse(*args, **kwargs):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(mmap, "mmap", refuse)
    b = backend.populated_zeros(big, np.float32, order="F")
    assert b.dtype == np.float32 and b.flags.f_contiguous and not b.any()
