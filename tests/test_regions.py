"""Disentangled mean embeddings against brute force from the SPEC definitions (eq. 4, 11, 13, 16)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from backends import DEVICES, HAS_TORCH
from method_tester import VOLATILE, assert_same_result
from promptprism import (
    InputError,
    OptionError,
    RegionCMS,
    RegionsResult,
    block_cka,
    block_cms,
    block_hsic,
    block_mmd2,
    cka,
    cms,
    discover_regions,
    hsic,
    load_result,
    mmd2,
    pixel_cka_matrix,
    rbf_kernel,
    region_cms,
    suggest_n_regions,
)
from promptprism.methods.regions import cross_region_cka
from regions_oracle import pixel_cka_loop


# ------------------------------------------------------------------------------------------- brute force
def k_rbf(a, b, gamma):
    return math.exp(-gamma * sum((float(u) - float(v)) ** 2 for u, v in zip(np.ravel(a), np.ravel(b),
                                                                             strict=True)))


def gram_loop(xs, ys, gamma):
    return np.array([[k_rbf(a, b, gamma) for b in ys] for a in xs])


def hsic_loop(k, l):  # noqa: E741
    """tr(K H L H) expanded into sums (the empirical form of eq. 9), with explicit loops."""
    n = len(k)
    t1 = sum(k[i][j] * l[i][j] for i in range(n) for j in range(n))
    t2 = sum(k[i][j] * l[i][q] for i in range(n) for j in range(n) for q in range(n)) / n
    t3 = sum(k[i][j] for i in range(n) for j in range(n)) * sum(l[i][j] for i in range(n) for j in range(n))
    return t1 - 2.0 * t2 + t3 / n**2


def cms_loop(xs, ys, gamma):
    num = sum(k_rbf(a, b, gamma) for a in xs for b in ys)
    kxx = sum(k_rbf(a, b, gamma) for a in xs for b in xs)
    kyy = sum(k_rbf(a, b, gamma) for a in ys for b in ys)
    return num / math.sqrt(kxx * kyy)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


# --------------------------------------------------------------------------------- two-sample estimators
def test_hsic_and_cka_equal_loop_definitions(rng):
    x = rng.normal(size=(12, 3))
    y = x[:, :2] ** 2 + 0.3 * rng.normal(size=(12, 2))
    k, l = gram_loop(x, x, 0.4), gram_loop(y, y, 0.7)  # noqa: E741
    h = np.eye(12) - np.ones((12, 12)) / 12
    assert hsic(k, l) == pytest.approx(hsic_loop(k, l), rel=1e-12, abs=1e-14)
    assert hsic(k, l) == pytest.approx(np.trace(k @ h @ l @ h), rel=1e-12)
    expected = hsic_loop(k, l) / math.sqrt(hsic_loop(k, k) * hsic_loop(l, l))
    assert cka(k, l) == pytest.approx(expected, rel=1e-12)
    assert cka(k, k) == pytest.approx(1.0, abs=1e-12)
    assert 0.0 < cka(k, l) < 1.0


def test_cka_of_constant_variable_is_zero_not_nan(rng):
    k = gram_loop(rng.normal(size=(8, 2)), rng.normal(size=(8, 2)), 1.0)
    k = (k + k.T) / 2
    ones = np.ones((8, 8))
    assert cka(ones, k) == 0.0
    assert cka(ones, ones) == 0.0
    assert hsic(ones, k) == pytest.approx(0.0, abs=1e-12)


def test_cms_equals_eq4(rng):
    x, y = rng.normal(size=(9, 4)), rng.normal(0.5, 1.2, size=(7, 4))
    g = 0.3
    kern = rbf_kernel(g)
    expected = cms_loop(x, y, g)
    got = cms(gram_loop(x, y, g), gram_loop(x, x, g), gram_loop(y, y, g))
    assert got == pytest.approx(expected, rel=1e-12)
    assert block_cms(x, y, kern) == pytest.approx(expected, rel=1e-12)
    assert block_cms(x, x, kern) == pytest.approx(1.0, rel=1e-12)
    assert 0.0 < expected < 1.0


def test_mmd2_biased_and_unbiased_equal_definitions(rng):
    x, y = rng.normal(size=(6, 2)), rng.normal(1.0, 1.0, size=(5, 2))
    g = 0.5
    kxx, kyy, kxy = gram_loop(x, x, g), gram_loop(y, y, g), gram_loop(x, y, g)
    n, m = 6, 5
    biased = (sum(kxx[i][j] for i in range(n) for j in range(n)) / n**2
              + sum(kyy[i][j] for i in range(m) for j in range(m)) / m**2
              - 2 * sum(kxy[i][j] for i in range(n) for j in range(m)) / (n * m))
    unbiased = (sum(kxx[i][j] for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
                + sum(kyy[i][j] for i in range(m) for j in range(m) if i != j) / (m * (m - 1))
                - 2 * sum(kxy[i][j] for i in range(n) for j in range(m)) / (n * m))
    assert mmd2(kxy, kxx, kyy) == pytest.approx(biased, rel=1e-12)
    assert mmd2(kxy, kxx, kyy, unbiased=True) == pytest.approx(unbiased, rel=1e-12)
    assert block_mmd2(x, y, rbf_kernel(g), unbiased=True) == pytest.approx(unbiased, rel=1e-12)
    assert biased > unbiased  # the plug-in estimator carries the positive diagonal bias


def test_block_estimators_average_documented_blocks(rng):
    x, y = rng.normal(size=(23, 3)), rng.normal(0.3, 1.0, size=(17, 3))
    kern, b, seed = rbf_kernel(0.2), 5, 7
    r = np.random.default_rng(seed)
    px, py = r.permutation(23), r.permutation(17)
    nb = 17 // b  # floor(min(n, m) / b) blocks; left-over rows unused
    manual = np.mean([cms_loop(x[px[s * b:(s + 1) * b]], y[py[s * b:(s + 1) * b]], 0.2) for s in range(nb)])
    assert block_cms(x, y, kern, block_size=b, seed=seed) == pytest.approx(manual, rel=1e-12)
    xs = x[px[: nb * b]]
    manual_mmd = np.mean([mmd2(gram_loop(x[px[s * b:(s + 1) * b]], y[py[s * b:(s + 1) * b]], 0.2),
                               gram_loop(x[px[s * b:(s + 1) * b]], x[px[s * b:(s + 1) * b]], 0.2),
                               gram_loop(y[py[s * b:(s + 1) * b]], y[py[s * b:(s + 1) * b]], 0.2))
                          for s in range(nb)])
    assert block_mmd2(x, y, kern, block_size=b, seed=seed) == pytest.approx(manual_mmd, rel=1e-12)
    # paired (HSIC/CKA): one permutation for both samples
    z = x ** 2
    p = np.random.default_rng(seed).permutation(23)
    blocks = [p[s * b:(s + 1) * b] for s in range(23 // b)]
    man_cka = np.mean([cka(gram_loop(x[i], x[i], 0.2), gram_loop(z[i], z[i], 0.2)) for i in blocks])
    man_hsic = np.mean([hsic_loop(gram_loop(x[i], x[i], 0.2), gram_loop(z[i], z[i], 0.2)) for i in blocks])
    assert block_cka(x, z, kern, block_size=b, seed=seed) == pytest.approx(man_cka, rel=1e-12)
    assert block_hsic(x, z, kern, block_size=b, seed=seed) == pytest.approx(man_hsic, rel=1e-12)
    assert xs.shape[0] == 15


def test_block_estimators_reject_too_few_rows(rng):
    x, y = rng.normal(size=(10, 2)), rng.normal(size=(4, 2))
    with pytest.raises(InputError, match="fewer rows than one block"):
        block_cms(x, y, rbf_kernel(1.0), block_size=5)
    with pytest.raises(InputError, match="paired"):
        block_cka(x, y, rbf_kernel(1.0))


# -------------------------------------------------------------------------------------- pixel CKA matrix
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(20, 4, 5), (20, 3, 3, 3)])
def test_fast_pixel_cka_equals_pairwise_loop(rng, shape, device):
    imgs = rng.random(shape)
    imgs[:, 0, 1] = imgs[:, 0, 0] ** 2  # a dependent pair
    g = 0.8
    fast = pixel_cka_matrix(imgs, gamma=g, block_size=None, device=device)
    loop = pixel_cka_loop(imgs, gamma=g)
    assert np.abs(fast - loop).max() < 1e-10
    # the brute force, entry by entry, from eq. 13 with explicit Gram matrices
    px = imgs.reshape(shape[0], -1, 1 if len(shape) == 3 else shape[-1])
    ka = gram_loop(px[:, 0], px[:, 0], g)
    kb = gram_loop(px[:, 1], px[:, 1], g)
    assert fast[0, 1] == pytest.approx(hsic_loop(ka, kb) / math.sqrt(hsic_loop(ka, ka) * hsic_loop(kb, kb)),
                                       rel=1e-10)
    assert fast[0, 1] > 0.5
    # mini-batch version (paper's appendix C): same blocks as the loop
    fb = pixel_cka_matrix(imgs, gamma=g, block_size=6, max_images=None, seed=3, device=device)
    assert np.abs(fb - pixel_cka_loop(imgs, gamma=g, block_size=6, seed=3)).max() < 1e-10
    # memory-bounded paths give the same numbers
    for budget in (4000, 40):
        assert np.abs(pixel_cka_matrix(imgs, gamma=g, block_size=6, max_images=None, seed=3,
                                       max_bytes=budget, device=device) - fb).max() < 1e-12
        assert np.abs(pixel_cka_matrix(imgs, gamma=g, block_size=None, max_bytes=budget, device=device)
                      - fast).max() < 1e-12
    assert np.allclose(fast, fast.T) and np.allclose(np.diag(fast), 1.0)
    single = pixel_cka_matrix(imgs, gamma=g, block_size=6, max_images=None, seed=3, dtype="float32",
                              device=device)
    assert np.abs(single - fb).max() < 1e-5


def test_pixel_cka_constant_pixel_is_handled(rng):
    imgs = rng.random((15, 3, 3))
    imgs[:, 1, 1] = 0.25
    m = pixel_cka_matrix(imgs, gamma=1.0, block_size=None)
    assert not np.isnan(m).any()
    assert m[4, 4] == 1.0 and np.all(m[4, np.arange(9) != 4] == 0.0)


def test_median_gamma_convention(rng):
    imgs = rng.random((30, 4, 4))
    flat = imgs.reshape(30, -1)
    d = [np.linalg.norm(flat[i] - flat[j]) for i in range(30) for j in range(i + 1, 30)]
    est = RegionCMS(n_regions=2, seed=0).fit(imgs)
    assert est.gamma_ == pytest.approx(1.0 / np.median(d), rel=1e-12)
    assert RegionCMS(n_regions=2, gamma="0.5*median").fit(imgs).gamma_ == pytest.approx(0.5 / np.median(d))


# ---------------------------------------------------------------------------------------------- clustering
def block_matrix(sizes, within=0.8, between=0.05, rng=None):
    d = sum(sizes)
    m = np.full((d, d), between)
    s = 0
    for size in sizes:
        m[s:s + size, s:s + size] = within
        s += size
    if rng is not None:
        noise = rng.uniform(-0.03, 0.03, (d, d))
        m += (noise + noise.T) / 2
    np.fill_diagonal(m, 1.0)
    return m


def test_discover_regions_recovers_blocks(rng):
    sizes = [5, 8, 4]
    m = block_matrix(sizes, rng=rng)
    perm = rng.permutation(17)
    truth = np.repeat([0, 1, 2], sizes)[perm]
    labels = discover_regions(m[np.ix_(perm, perm)], 3)
    # same partition (labels up to renaming)
    assert len({(a, b) for a, b in zip(labels, truth, strict=True)}) == 3
    assert suggest_n_regions(m, max_regions=6) == 3
    assert (discover_regions(m, "auto") == np.repeat([0, 1, 2], sizes)).all()


def test_discover_regions_more_regions_than_pixels():
    with pytest.raises(OptionError, match="more than the 4 pixels"):
        discover_regions(np.eye(4), 5)


def test_outlier_pixels_do_not_take_a_region(rng):
    m = block_matrix([10, 10], rng=rng)
    d = 22
    big = np.zeros((d, d))
    big[:20, :20] = m
    big[20:, :] = big[:, 20:] = 0.01  # two pixels with (almost) no dependence on anything
    big[20, 21] = big[21, 20] = 0.0
    np.fill_diagonal(big, 1.0)
    labels = discover_regions(big, 2)
    assert (labels[:10] == labels[0]).all() and (labels[10:20] == labels[10]).all()
    assert labels[0] != labels[10]
    plain = discover_regions(big, 2, min_region_size=1)  # the plain cut isolates an outlier
    assert np.bincount(plain).min() <= 2


# ------------------------------------------------------------------------------------ Theorem 1 exactly
def cartesian_images(a, b):
    """Images whose left half is a row of ``a`` and right half a row of ``b``, all pairs: the empirical
    distribution is exactly the product of its marginals, so the regions are independent."""
    na, nb = len(a), len(b)
    return np.concatenate([np.repeat(a, nb, axis=0), np.tile(b, (na, 1, 1))], axis=2)


@pytest.mark.parametrize("device", DEVICES)
def test_independent_regions_product_equals_whole(rng, device):
    h = 3
    xa, xb = rng.random((7, h, 2)), rng.random((6, h, 3))
    ya, yb = rng.random((5, h, 2)) ** 2, rng.random((8, h, 3)) * 0.8
    x, y = cartesian_images(xa, xb), cartesian_images(ya, yb)
    labels = np.tile([0, 0, 1, 1, 1], h)
    g = 0.7
    out = region_cms(x, y, labels, g, device=device)
    assert out["product_cms"] == pytest.approx(out["cms"], rel=1e-10)
    assert out["cms"] == pytest.approx(cms_loop(x.reshape(len(x), -1), y.reshape(len(y), -1), g), rel=1e-10)
    assert out["region_cms"][0] == pytest.approx(cms_loop(xa.reshape(7, -1), ya.reshape(5, -1), g), rel=1e-10)
    assert out["region_cms"][1] == pytest.approx(cms_loop(xb.reshape(6, -1), yb.reshape(8, -1), g), rel=1e-10)
    assert out["cms"] < 0.99


def test_gap_grows_with_cross_region_dependence(rng):
    h = 3
    a, b = rng.random((8, h, 3)), rng.random((8, h, 3))
    x = cartesian_images(a, b)
    labels = np.tile([0, 0, 0, 1, 1, 1], h)
    g = 1.0
    gaps, cross = [], []
    for lam in (0.0, 0.3, 0.6, 0.9):
        y = x.copy()
        y[:, :, 3:] = (1 - lam) * x[:, :, 3:] + lam * x[:, :, :3]  # right half copies the left half
        out = region_cms(x, y, labels, g)
        gaps.append(abs(math.log(out["cms"]) - math.log(out["product_cms"])))
        cross.append(cross_region_cka(y, labels, g, block_size=None)[0, 1])
    assert gaps[0] < 1e-10
    assert all(g2 > g1 for g1, g2 in zip(gaps, gaps[1:], strict=False)), gaps
    assert all(c2 > c1 for c1, c2 in zip(cross, cross[1:], strict=False)), cross
    assert cross[0] < 1e-10


@pytest.mark.parametrize("device", DEVICES)
def test_log_space_cms_survives_tiny_kernels(rng, device):
    x, y = rng.random((6, 20, 20)), rng.random((5, 20, 20))
    labels = np.arange(400) // 200
    out = region_cms(x, y, labels, 50.0, device=device)  # k(x, y) ~ exp(-50 * 67): below the smallest float
    assert np.isfinite(out["cms"]) and np.isfinite(out["product_cms"]) and 0.0 <= out["cms"] < 1e-100


# ---------------------------------------------------------------------------------------------- estimator
def test_region_cms_estimator_and_result_roundtrip(rng, tmp_path):
    real = rng.random((60, 6, 6))
    real[:, :, 3:] = real[:, :, :3] ** 2 + 0.05 * rng.random((60, 6, 3))  # right half depends on left
    gen = [real[:30], np.clip(real[30:] + rng.normal(0, 0.4, (30, 6, 6)), 0, 1)]
    est = RegionCMS(n_regions=3, seed=4)
    res = est.fit(real).compare(gen, ["same", "noisy"])
    assert isinstance(res, RegionsResult)
    assert len(res.cms) == len(res.product_cms) == 2 and len(res.region_cms[0]) == 3
    assert len(res.regions) == 36 and sorted(set(res.regions)) == [0, 1, 2]
    assert res.seed == 4 and res.config["gamma_value"] == res.gamma
    assert res.cms[1] < res.cms[0]
    # whole-image CMS against brute force eq. 4 on the pixels
    assert res.cms[1] == pytest.approx(cms_loop(real.reshape(60, -1), gen[1].reshape(30, -1), res.gamma),
                                       rel=1e-9)
    res.save(tmp_path)
    back = load_result(tmp_path)
    assert isinstance(back, RegionsResult) and back.cms == res.cms and back.regions == res.regions
    assert np.allclose(np.load(tmp_path / "cka_matrix.npy"), np.asarray(res.cka_matrix))
    assert (tmp_path / "curves.csv").read_text().splitlines()[0].startswith("set,cms,product_cms")


def test_estimator_bad_inputs(rng):
    real = rng.random((30, 4, 4))
    with pytest.raises(OptionError, match="more than the 16 pixels"):
        RegionCMS(n_regions=17).fit(real)
    est = RegionCMS(n_regions=2).fit(real)
    with pytest.raises(InputError, match="same size"):
        est.compare([rng.random((10, 5, 4))])
    with pytest.raises(InputError, match="channel"):
        est.compare([rng.random((10, 4, 4, 3))])
    with pytest.raises(InputError, match="fewer images than one block"):
        RegionCMS(n_regions=2, block_size=20).fit(real).compare([rng.random((10, 4, 4))])
    with pytest.raises(InputError, match="fewer images than one CKA block"):
        RegionCMS(n_regions=2, cka_block_size=50).fit(real)
    with pytest.raises(InputError, match="every pixel is constant"):
        RegionCMS(n_regions=2, gamma=1.0).fit(np.ones((10, 3, 3)))


@pytest.mark.parametrize("block_size", [None, 6])
def test_region_cms_on_torch_gives_the_reference_result(rng, block_size):
    """RegionCMS(device='torch'): the pixel CKA matrix, the regions and every CMS equal numpy's."""
    if not HAS_TORCH:
        pytest.skip("torch is not installed")
    real = rng.random((40, 4, 4))
    real[:, :, 2:] = real[:, :, :2] ** 2  # two dependent halves
    gen = rng.random((30, 4, 4)) ** 1.5
    kw = dict(n_regions=2, seed=2, block_size=block_size, bootstrap=20, cka_block_size=10)
    a = RegionCMS(device="cpu", **kw).fit(real).compare(gen)
    b = RegionCMS(device="torch", **kw).fit(real).compare(gen)
    assert b.config["device"] == "torch:cpu" and a.config["device"] == "numpy"
    # every field: the regions, the CKA matrix, every CMS and interval (the shared comparison)
    assert_same_result(a, b, rtol=1e-10, atol=1e-12, ignore=(*VOLATILE, "config.device"),
                       tolerances={k: (1e-10, 0) for k in ("cms", "product_cms", "mmd2", "region_cms")}
                       | {"cka_matrix": (0, 1e-12)})


def test_median_rule_warns_when_the_pixel_kernel_is_degenerate():
    """0-255 pixels put the paper's gamma = 1 / median distance where exp(-gamma d^2) ~ 0 for every pair
    (every CMS would read ~0); [0, 1] pixels of the same images do not warn."""
    import warnings

    from promptprism.kernels.bandwidth import DegenerateKernelWarning, gamma_from_median

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(40, 8, 8)).astype(np.float64)
    with pytest.warns(DegenerateKernelWarning, match="scale the images to \\[0, 1\\]"):
        gamma_from_median(images.reshape(40, 64, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateKernelWarning)
        gamma_from_median((images / 255).reshape(40, 64, 1))


def test_the_region_count_bounds_are_obeyed_or_refused():
    """--max-regions 1 gave 2 regions (one split height: 'auto' returned 2 without the bound), and
    --min-region-size 100 with 2 regions of 64 pixels gave two of 32 with no word."""
    m = np.full((64, 64), 0.1)
    m[:32, :32] = m[32:, 32:] = 0.9  # two blocks of 32 pixels
    np.fill_diagonal(m, 1.0)
    assert suggest_n_regions(m, max_regions=1) == 1 and suggest_n_regions(m, max_regions=4) == 2
    assert np.unique(discover_regions(m, "auto", max_regions=1)).size == 1
    with pytest.raises(OptionError, match="min_region_size = 100: the pixels do not split into 2 regions"):
        discover_regions(m, 2, min_region_size=100)
    assert np.bincount(discover_regions(m, 2, min_region_size=30)).tolist() == [32, 32]


def test_an_interval_above_one_is_read_as_copying_only_from_settled_replicates():
    """Independent draws of one distribution sit at CMS = 1, the maximum: from 20-40 replicates a U-form
    interval lay wholly above 1 in 3-5 of 60 pairs, and the note said "the sets are not independent
    samples". From fewer than 100 replicates (or blocks) the note says the ends are noisy instead, unless
    the interval lies above 1 by more than its own width (copied images: [1.33, 1.60])."""
    from promptprism.methods.regions.bounds import SETTLED_REPLICATES, bounded_row

    above = {"low": 1.001, "high": 1.005, "debiased": 1.003}
    row = {"cms": 0.99, "product_cms": 0.99, "region_cms": np.array([0.99]), "mmd2": 0.0,
           "intervals": {"cms": above, "product_cms": above, "region_cms": [above]}}
    settled = bounded_row(row, replicates=SETTLED_REPLICATES)["notes"][0]
    assert "more than sampling noise" in settled and "not independent samples" in settled
    for unsettled in (bounded_row(row, replicates=40), bounded_row(row, replicates=500, blocks=True)):
        note = unsettled["notes"][0]
        assert "its ends are noisy themselves" in note and "not independent samples" not in note
        assert unsettled["intervals"]["cms"]["low"] == 1.0  # (clipped, as before)
    far = {"low": 1.33, "high": 1.60, "debiased": 1.45}
    copied = dict(row, intervals={"cms": far, "product_cms": far, "region_cms": [far]})
    assert "not independent samples" in bounded_row(copied, replicates=20)["notes"][0]


def test_a_block_estimator_without_blocks_is_said_not_dropped(rng):
    """--block-estimator paper without --block-size ran the exact estimator with no word; now a note (the
    numbers are the exact estimator's either way)."""
    real, gen = rng.random((30, 4, 4)), rng.random((30, 4, 4))
    noted = RegionCMS(n_regions=2, seed=0, block_estimator="paper").fit(real).compare([gen])
    plain = RegionCMS(n_regions=2, seed=0).fit(real).compare([gen])
    assert any("block_estimator='paper' applies to the block estimator only" in n for n in noted.notes)
    assert not any("block_estimator" in n for n in plain.notes)
    assert noted.cms == plain.cms


def test_region_labels_other_than_0_to_c_minus_1_are_refused():
    """-1 indexed the last region, a gap added an empty region of CMS 1 to the product, floats were
    truncated and strings raised numpy's own ValueError: each is one InputError naming ``regions``."""
    from promptprism.errors import InputError
    from promptprism.methods.regions.comparison import region_cms

    rng = np.random.default_rng(0)
    x, y = rng.uniform(size=(20, 2, 2)), rng.uniform(size=(15, 2, 2))
    for labels, words in (([-1, 0, 1, 0], "label -1"), ([0, 0, 2, 2], "region 1 has no pixel"),
                          ([0.5, 0, 1, 1], "integers"), (["a", "a", "b", "b"], "integers"),
                          ([0, 1, 1], "3 labels for 4 pixels")):
        with pytest.raises(InputError, match=words) as info:
            region_cms(x, y, labels, 1.0)
        assert info.value.parameter == "regions"
    ok = region_cms(x, y, np.array([1.0, 0.0, 1.0, 0.0]), 1.0)  # integral floats are labels
    assert ok["region_cms"].shape == (2,)


def test_pixel_cka_matrix_names_its_own_block_size():
    """The public function's error named the estimator's cka_block_size, not its own block_size."""
    from promptprism.errors import InputError
    from promptprism.methods.regions.pixel_cka import pixel_cka_matrix

    images = np.random.default_rng(0).random((60, 3, 3))
    with pytest.raises(InputError, match="block_size: 100 is more than the 60 images") as info:
        pixel_cka_matrix(images)
    assert info.value.parameter == "block_size"
    assert pixel_cka_matrix(images, block_size=None).shape == (9, 9)
