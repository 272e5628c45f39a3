"""The array backend: which device names resolve to which backend, and round trips through it."""

import numpy as np
import pytest

from promptprism.backend import NUMPY, Backend, array_namespace, resolve_backend, to_numpy
from promptprism.errors import OptionError

torch = pytest.importorskip("torch")


def test_cpu_is_numpy_and_auto_is_numpy_without_a_gpu():
    assert resolve_backend("cpu") is NUMPY
    expected = Backend("torch", "cuda") if torch.cuda.is_available() else NUMPY
    assert resolve_backend("auto") == expected


def test_torch_runs_on_the_cpu_and_round_trips_values():
    backend = resolve_backend("torch")
    assert backend == Backend("torch", "cpu") and backend.label == "torch:cpu"
    x = np.random.default_rng(0).normal(size=(4, 3))
    t = backend.asarray(x, dtype="float32")
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float32
    np.testing.assert_array_equal(to_numpy(t), x.astype(np.float32))
    xp = array_namespace(t)
    assert xp is backend.xp
    np.testing.assert_allclose(to_numpy(xp.linalg.eigh(t.T @ t)[0]), np.linalg.eigvalsh(x.T @ x), rtol=1e-4)


@pytest.mark.parametrize("bad", ["gpu", "", "cuda:x", 3])
def test_unknown_devices_name_the_option(bad):
    with pytest.raises(OptionError, match="device must be one of"):
        resolve_backend(bad)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
def test_cuda_without_a_gpu_says_so():
    with pytest.raises(OptionError, match="no CUDA device"):
        resolve_backend("cuda")


def test_small_matrix_loops_run_on_one_blas_thread_and_large_ones_keep_the_default():
    from threadpoolctl import threadpool_info

    from promptprism.array_ops import SMALL_BLAS, blas_threads_for

    def blas_threads():
        return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}

    before = blas_threads()
    with blas_threads_for(SMALL_BLAS):
        assert blas_threads() == {1}
    assert blas_threads() == before
    with blas_threads_for(SMALL_BLAS + 1):
        assert blas_threads() == before


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_one_tridiagonal_reduction_gives_every_eigenvalue_and_the_top_vectors(dtype, tol):
    from promptprism.array_ops import tridiagonal_values_and_top_vectors

    x = np.random.default_rng(3).standard_normal((260, 240))
    a = (x.T @ x / 240).astype(dtype)
    vals, vecs = tridiagonal_values_and_top_vectors(a.copy(), 6)
    brute_vals, brute_vecs = np.linalg.eigh(a.astype(np.float64))
    np.testing.assert_allclose(vals, brute_vals[::-1], atol=tol * brute_vals[-1])
    # the same unit eigenvectors up to sign, and A v = lambda v
    overlap = np.abs(np.sum(vecs * brute_vecs[:, ::-1][:, :6], axis=0))
    np.testing.assert_allclose(overlap, 1.0, atol=10 * tol)
    np.testing.assert_allclose(a @ vecs, vecs * vals[:6], atol=10 * tol * brute_vals[-1])
