"""The reference metrics' fast core against brute force from the definitions.

* k-NN (:mod:`promptprism.methods.metrics.neighbours`): float32 GEMM blocks with a float64 re-check must give
  the exact float64 radii, closed-ball counts and ball memberships, on data built to break float32 (ties on a
  lattice, a large offset, tiny and huge units, points on a sphere), through the sampled-bound and triangular
  paths (small sample and block sizes), and the float32 error bound it relies on must hold.
* Kernel sums (:mod:`promptprism.methods.metrics.kernel_sums`): one Gram matrix for KID's polynomial kernel,
  the gaussian and the cosine gives the sums of the full kernel matrices, and the subset values equal the
  generic per-Gram path.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from promptprism.methods.metrics import kid as kid_module
from promptprism.methods.metrics import neighbours
from promptprism.methods.metrics.kernel_sums import SubsetKernel, kernel_sums, mmd2_from_sums
from promptprism.methods.metrics.prdc import distinct_rows, knn_radii, neighbour_indicators, prdc


def _sq(a, b):
    """Squared distances by direct differences in float64: the definition."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return ((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=-1)


def _brute_radii(x, k):
    d2 = _sq(x, x)
    kth = min(k, x.shape[0] - 1)
    r = np.partition(d2, kth, axis=1)[:, kth]
    return r, (d2 <= r[:, None]).sum(axis=1) - 1


def _brute_indicators(real, fake, k):
    """prdc.py's documented definitions, brute force (distinct rows, open balls, the round-off floor)."""
    (fr, ir, cr), (ff, jf, _) = distinct_rows(real), distinct_rows(fake)
    rr, held = _brute_radii(real[fr], k)
    rf, _ = _brute_radii(fake[ff], k)
    shift = real.astype(np.float64).mean(axis=0)
    top = max(((real - shift) ** 2).sum(1).max(), ((fake - shift) ** 2).sum(1).max())
    floor = 64 * np.finfo(np.float64).eps * top
    t_real, t_fake = np.maximum(rr - floor, floor)[ir], np.maximum(rf - floor, floor)[jf]
    d2 = _sq(fake, real)
    inside = d2 < t_real[None, :]
    weight = k / (cr[ir] * np.maximum(held[ir], 1))
    return (inside.any(axis=1), inside @ weight, (d2 < t_fake[:, None]).any(axis=0), inside.any(axis=0),
            np.sqrt(rr[ir]), np.sqrt(rf[jf]))


def _hard_sets(rng):
    sphere = rng.normal(size=(500, 3))
    sphere /= np.linalg.norm(sphere, axis=1, keepdims=True)
    return {
        "gaussian": (rng.normal(size=(400, 20)), rng.normal(size=(350, 20)) * 1.1 + 0.1),
        "lattice ties": (rng.integers(0, 3, (400, 5)).astype(float),
                         rng.integers(0, 3, (350, 5)).astype(float)),
        "offset 1e4": (rng.normal(size=(400, 30)) + 1e4, rng.normal(size=(350, 30)) + 1e4 + 0.05),
        "units 1e-30": (rng.normal(size=(300, 8)) * 1e-30, rng.normal(size=(300, 8)) * 1.2e-30),
        "units 1e30": (rng.normal(size=(300, 8)) * 1e30, rng.normal(size=(300, 8)) * 1.2e30),
        "sphere": (sphere[:250], sphere[250:]),
        "float32 offset": ((rng.normal(size=(400, 48)) * 0.01 + 3).astype(np.float32),
                           (rng.normal(size=(350, 48)) * 0.011 + 3).astype(np.float32)),
        "duplicates": (np.repeat(rng.normal(size=(120, 6)), 3, axis=0),
                       np.repeat(rng.normal(size=(100, 6)), 2, axis=0)),
        "fake far away": (rng.normal(size=(300, 10)), rng.normal(size=(250, 10)) * 0.1 + 50),
        "few distinct rows": (np.repeat(rng.normal(size=(3, 4)), 10, axis=0),
                              np.repeat(rng.normal(size=(4, 4)), 8, axis=0)),
    }


@pytest.fixture(params=["whole rows", "sampled bound"])
def path(request, monkeypatch):
    if request.param == "sampled bound":  # the sampled bound and the triangular pass at these sizes
        monkeypatch.setattr(neighbours, "SAMPLE_COLUMNS", 16)
    return request.param


@pytest.mark.parametrize("block_rows", [None, 23])
def test_radii_are_the_float64_ones_on_sets_that_break_float32(path, block_rows):
    for name, (x, _) in _hard_sets(np.random.default_rng(0)).items():
        u = x[np.sort(distinct_rows(x)[0])]
        radii, held = knn_radii(u, None, 5, block_rows=block_rows)
        r, h = _brute_radii(u, 5)
        np.testing.assert_allclose(radii, r, rtol=1e-13, atol=0, err_msg=name)
        np.testing.assert_array_equal(held, h, err_msg=name)


@pytest.mark.parametrize("block_rows", [None, 299])
def test_radii_with_the_samples_distances_read_once(monkeypatch, block_rows):
    """The sample rows first, their distances to every row both the bounds and the pass's first blocks
    (block_rows None: the sample fits one block; 299: it does not, the bounds come from their own product):
    the same float64 radii and counts, with lattice ties and a sample of several blocks."""
    monkeypatch.setattr(neighbours, "SAMPLE_COLUMNS", 300)
    rng = np.random.default_rng(9)
    x = np.concatenate([rng.normal(size=(1100, 12)), rng.integers(0, 3, (400, 12)).astype(float)])
    u = x[np.sort(distinct_rows(x)[0])]
    assert 600 < len(u)  # (a sampled bound: 2 x 300 samples below the rows)
    radii, held = knn_radii(u, None, 5, block_rows=block_rows)
    r, h = _brute_radii(u, 5)
    np.testing.assert_allclose(radii, r, rtol=1e-13, atol=0)
    np.testing.assert_array_equal(held, h)


@pytest.mark.parametrize("block_rows", [None, 23])
def test_memberships_are_the_float64_ones_on_sets_that_break_float32(path, block_rows):
    for name, (real, fake) in _hard_sets(np.random.default_rng(1)).items():
        ind = neighbour_indicators(real, fake, 5, block_rows=block_rows)
        in_real, balls, in_fake, covered, r_real, r_fake = _brute_indicators(real, fake, 5)
        np.testing.assert_array_equal(ind.in_real_manifold, in_real, err_msg=name)
        np.testing.assert_array_equal(ind.in_fake_manifold, in_fake, err_msg=name)
        np.testing.assert_array_equal(ind.covered, covered, err_msg=name)
        np.testing.assert_allclose(ind.real_balls, balls, rtol=1e-12, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(ind.real_radii, r_real, rtol=1e-13, err_msg=name)
        np.testing.assert_allclose(ind.fake_radii, r_fake, rtol=1e-13, err_msg=name)


def test_ties_at_a_radius_are_counted_exactly():
    # on a lattice many neighbours sit exactly on a ball's sphere: the closed-ball counts (density's
    # weights) must count all of them, not whichever the round-off of an expansion left inside
    rng = np.random.default_rng(2)
    real = rng.integers(0, 3, (300, 4)).astype(float) + 0.1  # (centring on the mean is not exact)
    fake = rng.integers(0, 3, (300, 4)).astype(float) + 0.1
    u = real[np.sort(distinct_rows(real)[0])]
    _, held = knn_radii(u, None, 5)
    assert np.array_equal(held, _brute_radii(u, 5)[1]) and held.max() > 5  # ties present
    assert prdc(real, fake, 5)["density"] == pytest.approx(
        float(_brute_indicators(real, fake, 5)[1].mean() / 5), rel=1e-12)


@pytest.mark.slow  # (about a second or more: out of the quick loop)
def test_float32_distance_error_stays_within_the_margin():
    # the bound |D_ij - d_ij| <= c (|x_i|^2 + |x_j|^2) that every exact decision relies on, measured where
    # float32 suffers most: a large offset (removed by the centring) and many dimensions
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 512)) * rng.uniform(0.1, 10, size=(300, 1)) + 1e3
    rows = neighbours.Rows(x, None)
    form = neighbours.make_form(rows, rows.mean())
    left = neighbours._left((x - form.shift) * form.scale)
    d2 = (left @ form.right.T).astype(np.float64) / form.scale**2
    err = np.abs(d2 - _sq(x, x))
    bound = neighbours.margin_factor(512) * (form.sq[:, None] + form.sq[None, :])
    assert np.all(err <= bound)
    assert err.max() > 1e-3 * bound.max()  # the bound is not vacuous: within 3 orders of the real error


def test_float32_precision_reads_float32_distances():
    rng = np.random.default_rng(4)
    real, fake = rng.normal(size=(300, 12)), rng.normal(size=(280, 12)) + 0.2
    ref = prdc(real, fake, 5)
    assert prdc(real, fake, 5, dtype=np.float32) == pytest.approx(ref, abs=2e-2)


def test_helpers_match_numpy():
    rng = np.random.default_rng(5)
    for shape in [(7, 13), (64, 40), (3, 1)]:
        mask = rng.random(shape) < 0.05
        for got, want in zip(neighbours.sparse_nonzero(mask), np.nonzero(mask), strict=True):
            np.testing.assert_array_equal(got, want)
    rows = np.sort(rng.integers(0, 9, 200))
    vals = rng.normal(size=200)
    kth = neighbours.segment_kth(rows, vals, 1, 9)
    for r in range(9):
        mine = np.sort(vals[rows == r])
        assert kth[r] == (mine[1] if mine.size > 1 else np.inf)


def test_distinct_rows_by_hash_equals_sorting_the_bytes():
    rng = np.random.default_rng(6)
    x = np.repeat(rng.normal(size=(50, 7)).astype(np.float32), rng.integers(1, 4, 50), axis=0)
    x = np.r_[x, np.zeros((1, 7), np.float32), -np.zeros((1, 7), np.float32)]  # -0.0 differs in its bytes
    first, inverse, counts = distinct_rows(x)
    assert first.size == 52
    np.testing.assert_array_equal(x[first[inverse]].view(np.uint32), x.view(np.uint32))
    assert counts.sum() == x.shape[0] and np.all(counts == np.bincount(inverse))
    odd = x[:, :3].astype(np.float16)  # 6 bytes a row: sorted by bytes
    first16, inverse16, _ = distinct_rows(odd)
    np.testing.assert_array_equal(odd[first16[inverse16]], odd)


@pytest.mark.slow  # (about a second or more: out of the quick loop)
def test_memory_stays_within_the_block_budget(monkeypatch):
    import importlib

    # (the package's attribute prdc is the function)
    prdc_module = importlib.import_module("promptprism.methods.metrics.prdc")
    rng = np.random.default_rng(7)
    n = 3000
    real, fake = rng.normal(size=(n, 8)).astype(np.float32), rng.normal(size=(n, 8)).astype(np.float32)
    monkeypatch.setattr(prdc_module, "BLOCK_BYTES", 2**20)
    tracemalloc.start()
    neighbour_indicators(real, fake, 5)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < n * n * 4 / 4  # a quarter of one n x n float32 matrix (prdc holds three)


# --- kernel sums --------------------------------------------------------------------------------------------
KERNELS = {
    "polynomial": (SubsetKernel("polynomial"), lambda a, b: (a @ b.T / a.shape[1] + 1) ** 3),
    "gaussian": (SubsetKernel("gaussian", sigma=3.0), lambda a, b: np.exp(-_sq(a, b) / 18.0)),
    "cosine": (SubsetKernel("cosine"), lambda a, b: (a @ b.T) / np.outer(np.linalg.norm(a, axis=1),
                                                                         np.linalg.norm(b, axis=1))),
}


@pytest.mark.parametrize("sizes", [(40, 30), (700, 650)])  # whole matrices; chunks over the upper triangle
def test_kernel_sums_are_the_full_matrices_sums(sizes):
    rng = np.random.default_rng(8)
    a = rng.normal(size=(sizes[0], 6)) * 2 + 5
    b = rng.normal(size=(sizes[1], 6)) * 2.2 + 5.3
    sums = kernel_sums(a, b, [spec for spec, _ in KERNELS.values()])
    for (name, (_, k)), got in zip(KERNELS.items(), sums, strict=True):
        kaa, kbb, kab = k(a, a), k(b, b), k(a, b)
        for mine, want in [(got.rows_aa, kaa.sum(1)), (got.diag_aa, np.diag(kaa)), (got.rows_bb, kbb.sum(1)),
                           (got.diag_bb, np.diag(kbb)), (got.rows_ab, kab.sum(1)), (got.cols_ab, kab.sum(0))]:
            np.testing.assert_allclose(mine, want, rtol=1e-11, err_msg=name)
        m, n = sizes
        want = ((kaa.sum() - np.trace(kaa)) / (m * (m - 1)) + (kbb.sum() - np.trace(kbb)) / (n * (n - 1))
                - 2 * kab.mean())
        assert mmd2_from_sums(got) == pytest.approx(want, rel=1e-9, abs=1e-14), name


def test_kid_and_mmd_from_one_gram_equal_the_per_gram_path():
    from promptprism.kernels import kernel_gram, polynomial_gram

    rng = np.random.default_rng(9)
    x, y = rng.normal(size=(900, 12)) + 2, rng.normal(size=(800, 12)) * 1.1 + 2.1
    groups = (np.arange(900) % 7, np.arange(800) % 5)
    opts = dict(n_subsets=4, subset_size=300, seed=3, groups=groups)
    (kid, kid_parts), (mmd, mmd_parts) = kid_module.kid_and_mmd2(x, y, kernel="gaussian", sigma=4.0, **opts)
    old_kid, old_kid_parts = kid_module.subset_mmd2(x, y, lambda a, b: polynomial_gram(a, b), **opts)
    old_mmd, old_mmd_parts = kid_module.subset_mmd2(
        x, y, lambda a, b: kernel_gram("gaussian", a, b, sigma=4.0), **opts)
    np.testing.assert_allclose(kid, old_kid, rtol=1e-10)
    np.testing.assert_allclose(kid_parts, old_kid_parts, rtol=1e-10)
    np.testing.assert_allclose(mmd, old_mmd, rtol=1e-10)
    np.testing.assert_allclose(mmd_parts, old_mmd_parts, rtol=1e-10)
    cos = kid_module.kernel_mmd2(x, y, kernel="cosine", **opts)[0]
    np.testing.assert_allclose(cos, kid_module.subset_mmd2(
        x, y, lambda a, b: kernel_gram("cosine", a, b), **opts)[0], rtol=1e-9)


def test_subset_pairs_on_threads_give_the_same_values(monkeypatch):
    rng = np.random.default_rng(10)
    x, y = rng.normal(size=(600, 128)), rng.normal(size=(600, 128)) + 0.05
    monkeypatch.setattr("promptprism.scale.runner.usable_cores", lambda: 1)
    alone = kid_module.kernel_inception_distance(x, y, n_subsets=6, subset_size=512)
    monkeypatch.setattr("promptprism.scale.runner.usable_cores", lambda: 3)
    threaded = kid_module.kernel_inception_distance(x, y, n_subsets=6, subset_size=512)
    np.testing.assert_array_equal(alone, threaded)


def test_prdc_on_threads_gives_the_same_indicators(monkeypatch):
    import importlib

    prdc_module = importlib.import_module("promptprism.methods.metrics.prdc")
    monkeypatch.setattr(prdc_module, "PARALLEL_ENTRIES", 1)
    monkeypatch.setattr(prdc_module, "MAX_BLOCK_ROWS", 64)
    rng = np.random.default_rng(11)
    real, fake = rng.normal(size=(500, 16)), rng.normal(size=(450, 16)) + 0.1
    monkeypatch.setattr("promptprism.scale.runner.usable_cores", lambda: 1)
    alone = neighbour_indicators(real, fake, 5)
    monkeypatch.setattr("promptprism.scale.runner.usable_cores", lambda: 3)
    threaded = neighbour_indicators(real, fake, 5)
    fields = ("in_real_manifold", "real_balls", "in_fake_manifold", "covered", "real_radii", "fake_radii")
    for field in fields:
        np.testing.assert_array_equal(getattr(alone, field), getattr(threaded, field), err_msg=field)


def test_float32_features_take_a_float32_gram_and_agree_with_float64():
    """float32 inputs: the subset Gram in float32 (the features' own precision), the kernels and sums in
    float64; KID and MMD^2 agree with the float64 path to far below their own sampling error."""
    from promptprism.kernels import polynomial_gram

    rng = np.random.default_rng(11)
    x = (rng.normal(size=(700, 256)) + 3.0).astype(np.float32)  # an offset: centring keeps the precision
    y = (rng.normal(size=(650, 256)) * 1.05 + 3.02).astype(np.float32)
    assert kid_module.gram_precision(x, y) is np.float32
    assert kid_module.gram_precision(x, y.astype(np.float64)) is np.float64
    opts = dict(n_subsets=3, subset_size=600, seed=1)
    kid32, mmd32 = kid_module.kid_and_mmd2(x, y, kernel="gaussian", sigma=20.0, **opts)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    kid64, mmd64 = kid_module.kid_and_mmd2(x64, y64, kernel="gaussian", sigma=20.0, **opts)
    brute = kid_module.subset_mmd2(x64, y64, lambda a, b: polynomial_gram(a, b), **opts)
    np.testing.assert_allclose(kid64, brute, rtol=1e-10)
    scale = float(np.mean(polynomial_gram(x64[:200], y64[:200])))  # the kernel's own size
    assert np.max(np.abs(kid32 - kid64)) <= 1e-6 * scale
    assert np.max(np.abs(mmd32 - mmd64)) <= 1e-6
    assert not np.array_equal(kid32, kid64)  # the float32 product did run


def test_fd_interval_that_leaves_out_its_estimate_is_widened_to_hold_it():
    from promptprism.methods.metrics import ReferenceMetrics

    rng = np.random.default_rng(12)  # few rows in 16 dimensions: FD's bias exceeds its interval's width
    x, y = rng.normal(size=(60, 16)), rng.normal(size=(60, 16))
    res = ReferenceMetrics(bootstrap=200, seed=0).fit(x, y).models[0]
    iv = res.intervals["fd"]
    assert iv["low"] <= res.fd <= iv["high"] and iv["contains_estimate"]
    lo, hi = iv["widened_from"]
    assert hi < res.fd and iv["low"] == lo and iv["high"] == res.fd
    assert any("widened" in n for n in res.notes)


@pytest.mark.parametrize("offset, sigma", [(20.0, 8.0), (0.0, 4.0)])
def test_float32_operand_matches_the_float64_kernel_sums(offset, sigma):
    """The float32 path centres the rows in float32 and takes the per-row terms from them: every kernel sum
    (polynomial, gaussian) agrees with the float64 path to float32's precision of the kernel values, and
    MMD^2_u to 1e-6 of the kernel's size, with and without an offset that the centring must remove."""
    rng = np.random.default_rng(21)
    a = (rng.normal(size=(400, 64)) + offset).astype(np.float32)
    b = (rng.normal(size=(380, 64)) * 1.1 + offset + 0.05).astype(np.float32)
    kernels = [SubsetKernel("polynomial"), SubsetKernel("gaussian", sigma=sigma)]
    fast = kernel_sums(a, b, kernels, gram_dtype=np.float32)
    exact = kernel_sums(a.astype(np.float64), b.astype(np.float64), kernels)
    for kernel, f, e in zip(kernels, fast, exact, strict=True):
        size = float(np.max(e.diag_aa))  # the kernel's largest value on these rows
        for field in ("rows_aa", "diag_aa", "rows_bb", "diag_bb", "rows_ab", "cols_ab"):
            got, want = getattr(f, field), getattr(e, field)
            per_entry = 1 if field.startswith("diag") else (380 if field in ("rows_ab", "rows_bb") else 400)
            assert np.max(np.abs(got - want)) <= 1e-5 * size * per_entry, (kernel.kind, field)
        assert abs(mmd2_from_sums(f) - mmd2_from_sums(e)) <= 1e-6 * size, kernel.kind
