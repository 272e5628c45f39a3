"""Near-singular, rank-deficient and duplicated inputs on every PromptSplit route, against brute force.

Brute force: the Gram matrix from direct differences |a_i - b_j|^2 = sum_k (a_ik - b_jk)^2 (no expansion that
could cancel), the same median bandwidths, Lambda's non-zero spectrum = eigenvalues of G D (SPEC), and
||Lambda||_F^2 = sum_ij D_i D_j G_ij^2.
"""

import itertools

import numpy as np
import pytest

from promptprism import PairedSet
from promptprism.kernels.bandwidth import median_pairwise_distance
from promptprism.kernels.gram import squared_distances
from promptprism.methods.promptsplit import PromptSplit

N, D = 36, 8


def _sets(kind):
    rng = np.random.default_rng(7)
    if kind == "near-singular":  # every row a vector of ones plus 1e-12 noise (bandwidth ~ 4e-12)
        rows = lambda: np.ones((N, D)) + 1e-12 * rng.standard_normal((N, D))  # noqa: E731
    elif kind == "rank-deficient":  # rows in a 2-d subspace of R^8, far from the origin
        basis = rng.standard_normal((2, D))
        rows = lambda: 50.0 + rng.standard_normal((N, 2)) @ basis  # noqa: E731
    else:  # duplicated: 12 distinct rows, each three times
        rows = lambda: np.repeat(rng.standard_normal((N // 3, D)), 3, axis=0)  # noqa: E731
    prompts = [f"p{i % 6}" for i in range(N)]
    return (PairedSet(prompt_embeddings=rows(), output_embeddings=rows(), prompts=prompts),
            PairedSet(prompt_embeddings=rows(), output_embeddings=rows(), prompts=prompts))


def _direct(x):
    diff = x[:, None, :] - x[None, :, :]
    return np.einsum("ijk,ijk->ij", diff, diff)


def _brute(a, b, kernel):
    t = np.r_[a.prompt_embeddings, b.prompt_embeddings]
    z = np.r_[a.output_embeddings, b.output_embeddings]
    if kernel == "gaussian":
        st, sz = median_pairwise_distance(t), median_pairwise_distance(z)
        g = np.exp(-_direct(t) / (2 * st * st) - _direct(z) / (2 * sz * sz))
    else:
        tn = t / np.linalg.norm(t, axis=1, keepdims=True)
        zn = z / np.linalg.norm(z, axis=1, keepdims=True)
        g = (tn @ tn.T) * (zn @ zn.T)
    w = np.r_[np.full(N, 1 / N), np.full(N, -1 / N)]
    distance = float((np.outer(w, w) * g * g).sum())
    ev = np.sort(np.linalg.eigvals(g * w[None, :]).real)[::-1]
    return distance, ev


@pytest.mark.parametrize("kind", ["near-singular", "rank-deficient", "duplicated"])
def test_squared_distances_match_direct_differences(kind):
    a, b = _sets(kind)
    x = np.r_[a.prompt_embeddings, b.prompt_embeddings]
    exact = _direct(x)
    got = squared_distances(x)
    assert (got >= 0).all()
    np.testing.assert_allclose(got, exact, rtol=1e-9, atol=1e-12 * exact.max())
    # the large-block route (expansion after centring) agrees too
    import promptprism.kernels.distances as distances

    old, distances.DIRECT_MAX = distances.DIRECT_MAX, 0
    try:
        np.testing.assert_allclose(squared_distances(x, x), exact, rtol=1e-6, atol=1e-9 * exact.max())
    finally:
        distances.DIRECT_MAX = old


@pytest.mark.parametrize("kind", ["near-singular", "rank-deficient", "duplicated"])
def test_exact_route_equals_brute_force(kind):
    a, b = _sets(kind)
    result = PromptSplit(method="exact", seed=0, progress=False).fit(a, b)
    distance, ev = _brute(a, b, "gaussian")
    assert result.distance >= 0
    np.testing.assert_allclose(result.distance, distance, rtol=1e-4)
    top = np.sort(np.asarray(result.eigenvalues, dtype=float))[::-1][:3]
    np.testing.assert_allclose(top, ev[:3], rtol=1e-4, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["near-singular", "rank-deficient", "duplicated"])
def test_rff_route_close_to_brute_force(kind):
    """Random features: a Monte-Carlo estimate; never all zeros on near-duplicates (float32 phases)."""
    a, b = _sets(kind)
    result = PromptSplit(method="rff", n_features=800, seed=0, progress=False).fit(a, b)
    distance, ev = _brute(a, b, "gaussian")
    assert result.distance > 0
    assert abs(result.distance - distance) <= 0.15 * distance + 1e-3
    top = max(result.eigenvalues)
    assert abs(top - ev[0]) <= 0.15 * ev[0] + 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["near-singular", "rank-deficient", "duplicated"])
def test_sketch_route_close_to_brute_force(kind):
    a, b = _sets(kind)
    result = PromptSplit(method="sketch", kernel="cosine", n_features=800, seed=0, progress=False).fit(a, b)
    distance, _ = _brute(a, b, "cosine")
    assert np.isfinite(result.distance) and result.distance >= 0
    assert abs(result.distance - distance) <= 0.2 * distance + 2e-3


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "gemm"])
@pytest.mark.parametrize("scale", [1e17, 1e30, 1e300])
def test_one_extreme_row_leaves_the_other_distances_exact(device, direct, scale, monkeypatch):
    # centring on the mean moved every row by scale / n and wiped their distances into round-off
    import warnings

    import promptprism.kernels.distances as distances
    import promptprism.kernels.gram as gram
    from promptprism.backend import resolve_backend, to_numpy

    if not direct:
        monkeypatch.setattr(distances, "DIRECT_MAX", 0)
    x = np.random.default_rng(0).standard_normal((24, 6))
    y = x.copy()
    y[3] *= scale
    keep = [i for i in range(24) if i != 3]
    backend = resolve_backend(device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = to_numpy(gram.squared_distances(backend.asarray(y)))
    brute = ((x[keep][:, None, :] - x[keep][None, :, :]) ** 2).sum(axis=2)
    np.testing.assert_allclose(d[np.ix_(keep, keep)], brute, rtol=1e-12, atol=1e-12)
    assert not np.isnan(d).any() and np.all(np.sqrt(d[3, keep]) >= 0.5 * scale)


def test_cosine_features_of_rows_near_the_float64_limits_are_their_directions(device):
    # |a|^2 of a row at 1e300 overflows (and at 1e-300 underflows): the unit row must still be a / |a|
    import warnings

    from promptprism.backend import resolve_backend, to_numpy
    from promptprism.kernels.features import cosine_features

    x = np.random.default_rng(0).standard_normal((5, 4))
    y = x.copy()
    y[2] *= 1e300
    y[3] *= 1e-300
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        unit = to_numpy(cosine_features(resolve_backend(device).asarray(y)))
    np.testing.assert_allclose(unit, x / np.linalg.norm(x, axis=1, keepdims=True), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("threads", [1, 3])
def test_the_blocked_expansion_equals_direct_differences_across_blocks(monkeypatch, threads):
    """numpy's expansion route, a block of rows at a time (blocks of 7 over 40 and 33 rows: uneven; on one
    thread, or on three under one BLAS thread each), with repeated rows, a near-duplicate 1e-9 away, rows
    far from the origin and one whose square overflows: every distance as direct differences give it
    (repeats exactly 0, the overflowing row inf, never NaN), a matrix of one set with itself zero on its
    diagonal and symmetric bit for bit (its upper block triangle computed, the rest mirrored), and the
    gaussian kernel finished on each block equal to exp(-d / (2 sigma^2)) of those distances."""
    import promptprism.kernels.distances as distances
    import promptprism.kernels.gram as gram

    monkeypatch.setattr(distances, "DIRECT_MAX", 0)
    monkeypatch.setattr(distances, "BLOCK_ROWS", 7)
    monkeypatch.setattr(distances, "blas_thread_count", lambda: threads)
    rng = np.random.default_rng(3)
    a = 1e4 + rng.standard_normal((40, 5))
    a[10] = a[3]  # a repeat
    a[20] = a[5] + 1e-9  # a near-duplicate: cancels in the expansion
    b = np.r_[a[:30] + 0.5 * rng.standard_normal((30, 5)), a[[3, 5]], np.full((1, 5), 1e300)]
    for x, y, (same, near) in ((a, None, (3, 5)), (a, b, (30, 31))):
        exact = _direct_pair(x, x if y is None else y)
        got = squared_distances(x, y)
        finite = np.isfinite(exact)
        assert not np.isnan(got).any() and (got >= 0).all()
        np.testing.assert_array_equal(np.isfinite(got), finite)
        np.testing.assert_allclose(got[finite], exact[finite], rtol=1e-6, atol=1e-9)
        assert got[10, same] == 0.0 and abs(got[20, near] - exact[20, near]) <= 1e-6 * exact[20, near]
        if y is None:
            assert (np.diag(got) == 0.0).all()
            np.testing.assert_array_equal(got, got.T)
        k = gram.gaussian_gram(x, y, sigma=2.0)
        want = np.exp(-np.where(finite, exact, np.inf) / 8.0)
        np.testing.assert_allclose(k, want, rtol=1e-6, atol=1e-300)
        if y is None:
            np.testing.assert_array_equal(k, k.T)


def _direct_pair(x, y):
    with np.errstate(over="ignore", invalid="ignore"):
        diff = x[:, None, :] - y[None, :, :]
        return np.einsum("ijk,ijk->ij", diff, diff)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_block_square_sums_equal_the_brute_force_whatever_the_threads(monkeypatch, threads, dtype):
    """S_ab = sum over block a's rows and block b's columns of G_ij^2 (float64, of a float32 or float64 G,
    which stays as it was), blocks of 5 rows (ragged) summed on one thread or three: the brute force to
    round-off, and bit for bit the same numbers either way (the blocks' sums are added in row order); the
    PromptSplit distance read off them is ||C_a - eta C_b||_F^2 = sum_ij D_i D_j G_ij^2."""
    import promptprism.array_ops as array_ops
    import promptprism.kernels.gram as gram

    rng = np.random.default_rng(8)
    g = rng.random((23, 23)).astype(dtype)
    g = g + g.T
    given = g.copy()
    bounds = [0, 9, 17, 23]
    monkeypatch.setattr(gram, "_SQUARE_ROWS", 5)
    serial = gram.block_square_sums(g, bounds)
    monkeypatch.setattr(array_ops, "blas_thread_count", lambda: threads)
    got = gram.block_square_sums(g, bounds)
    sq = g.astype(np.float64) ** 2
    want = np.array([[sq[a0:a1, b0:b1].sum() for b0, b1 in itertools.pairwise(bounds)]
                     for a0, a1 in itertools.pairwise(bounds)])
    np.testing.assert_allclose(got, want, rtol=1e-13)
    np.testing.assert_array_equal(got, serial)
    d = np.r_[np.full(9, 1 / 9), np.full(14, -0.7 / 14)]
    np.testing.assert_allclose(gram.covariance_difference_norm(g, 9, 0.7), d @ sq @ d, rtol=1e-12)
    np.testing.assert_array_equal(g, given)


@pytest.mark.parametrize("kernel", ["gaussian", "cosine"])
def test_joint_gram_columns_equal_the_joint_gram_and_the_brute_force(monkeypatch, kernel):
    """The columns a pivoted Cholesky reads, from rows scaled, joined and centred once (gaussian, numpy):
    G[:, idx] of the joint Gram matrix computed whole, and for the gaussian the brute force exp(-|w - w'|^2 /
    2) of direct differences, on rows far from the origin with a repeated pair (kernel exactly 1); blocks of
    rows small enough that several are centred and several expanded."""
    import promptprism.kernels.gram as gram

    rng = np.random.default_rng(4)
    t = (300.0 + rng.standard_normal((150, 6))).astype(np.float32)
    z = (-50.0 + rng.standard_normal((150, 5))).astype(np.float32)
    t[17], z[17] = t[3], z[3]
    sigmas = {"sigma_prompt": 1.5, "sigma_output": 0.8} if kernel == "gaussian" else {}
    import promptprism.kernels.distances as distances

    for module, name, value in ((distances, "DIRECT_MAX", 0), (distances, "BLOCK_ROWS", 16),
                                (gram, "_CENTRING_ROWS", 40)):
        monkeypatch.setattr(module, name, value)
    columns = gram.joint_gram_columns(t, z, kernel=kernel, precision="float32", **sigmas)
    whole = gram.joint_gram(t, z, kernel=kernel, precision="float64", **sigmas)
    for idx in (np.array([3, 0, 149]), rng.choice(150, 40, replace=False)):
        got = columns(idx)
        assert got.dtype == np.float32 and got.shape == (150, idx.size)
        np.testing.assert_allclose(got, whole[:, idx], rtol=2e-5, atol=2e-6)
    got = columns(np.array([3]))
    assert got[17, 0] == 1.0 and got[3, 0] == 1.0
    if kernel == "gaussian":
        w = np.c_[t.astype(np.float64) / 1.5, z.astype(np.float64) / 0.8]
        np.testing.assert_allclose(whole, np.exp(-_direct_pair(w, w) / 2.0), rtol=1e-9, atol=1e-12)
