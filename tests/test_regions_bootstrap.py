"""Regions: bootstrap intervals, the bias-corrected block CMS, and pixels beyond float64's comfort zone.

Brute force from SPEC's definitions: eq. 4 on explicitly resampled images, pair means over explicit blocks,
direct pixel differences.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from backends import DEVICES
from promptprism import InputError, OptionError, RegionCMS, RegionsResult, block_cms, cms, rbf_kernel
from promptprism.cli import main
from promptprism.kernels.bandwidth import gamma_from_median
from promptprism.methods.regions import region_cms
from promptprism.methods.regions.comparison import bootstrap_rng, compare_sources, resample_counts
from promptprism.methods.regions.sources import as_pixels
from promptprism.methods.regions.two_sample import block_indices, cms_from_pair_means


def gram(a, b, gamma):
    """exp(-gamma |a_i - b_j|^2) by direct differences (rows are samples, any trailing shape)."""
    a, b = a.reshape(len(a), -1), b.reshape(len(b), -1)
    return np.exp(-gamma * ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))


def u_cms(x, y, gamma, x_ids=None, y_ids=None):
    """The U-statistic form of eq. 4: mean K_xy / sqrt(mean_{i != j} K_xx * mean_{i != j} K_yy).

    ``x_ids``/``y_ids``: which original image each row is (a resample): rows that are copies of one image
    are not a pair of distinct images.
    """
    x_ids = np.arange(len(x)) if x_ids is None else x_ids
    y_ids = np.arange(len(y)) if y_ids is None else y_ids
    dx, dy = x_ids[:, None] != x_ids[None, :], y_ids[:, None] != y_ids[None, :]
    uxx = gram(x, x, gamma)[dx].mean()
    uyy = gram(y, y, gamma)[dy].mean()
    return gram(x, y, gamma).mean() / math.sqrt(uxx * uyy)


REGIONS = np.array([0, 0, 1, 1])  # 2 x 2 images: top row region 0, bottom row region 1


def pixels_of(images, region):
    return images.reshape(len(images), -1)[:, REGIONS == region]


# ---------------------------------------------------------------------------------- bootstrap, brute force
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("partition_rows", [512, 5])
def test_exact_bootstrap_equals_eq4_on_resampled_images(partition_rows, device):
    rng = np.random.default_rng(3)
    x, y = rng.random((14, 2, 2)), rng.random((11, 2, 2)) ** 2
    g, b_rep, seed = 0.9, 30, 5
    out = region_cms(x, y, REGIONS, g, bootstrap=b_rep, seed=seed, partition_rows=partition_rows,
                     device=device)
    draw = bootstrap_rng(seed)
    wx, wy = resample_counts(14, b_rep, draw), resample_counts(11, b_rep, draw)
    reps = []
    for b in range(b_rep):
        ix = np.repeat(np.arange(14), wx[:, b].astype(int))
        iy = np.repeat(np.arange(11), wy[:, b].astype(int))
        xs, ys = x[ix], y[iy]
        reps.append([u_cms(pixels_of(xs, 0), pixels_of(ys, 0), g, ix, iy),
                     u_cms(pixels_of(xs, 1), pixels_of(ys, 1), g, ix, iy), u_cms(xs, ys, g, ix, iy)])
    reps = np.array(reps)
    # percentile intervals intersected with [-1, 1], the range of a cosine (the U form can exceed 1)
    lo, hi = np.clip(np.quantile(reps, [0.025, 0.975], axis=0), -1.0, 1.0)
    lo_p, hi_p = np.clip(np.quantile(reps[:, 0] * reps[:, 1], [0.025, 0.975]), -1.0, 1.0)
    assert reps.max() > 1.0  # (the clipping is exercised)
    iv = out["intervals"]
    got_lo = [iv["region_cms"][0]["low"], iv["region_cms"][1]["low"], iv["cms"]["low"]]
    got_hi = [iv["region_cms"][0]["high"], iv["region_cms"][1]["high"], iv["cms"]["high"]]
    np.testing.assert_allclose(got_lo, lo, rtol=1e-10)
    np.testing.assert_allclose(got_hi, hi, rtol=1e-10)
    assert iv["product_cms"]["low"] == pytest.approx(lo_p, rel=1e-10)
    assert iv["product_cms"]["high"] == pytest.approx(hi_p, rel=1e-10)
    assert iv["cms"]["debiased"] == pytest.approx(min(u_cms(x, y, g), 1.0), rel=1e-10)
    assert iv["region_cms"][1]["debiased"] == pytest.approx(
        min(u_cms(pixels_of(x, 1), pixels_of(y, 1), g), 1.0), rel=1e-10)
    # the point estimates are eq. 4 as before, untouched by the bootstrap
    plain = region_cms(x, y, REGIONS, g, partition_rows=partition_rows, device=device)
    assert out["cms"] == plain["cms"] and list(out["region_cms"]) == list(plain["region_cms"])
    assert plain["intervals"] == {}


@pytest.mark.parametrize("device", DEVICES)
def test_block_bootstrap_resamples_blocks_brute_force(device):
    rng = np.random.default_rng(4)
    x, y = rng.random((40, 2, 2)), rng.random((33, 2, 2)) * 0.9
    g, b, b_rep, seed = 1.3, 6, 25, 2
    out = region_cms(x, y, REGIONS, g, block_size=b, bootstrap=b_rep, seed=seed, device=device)
    blocks = list(block_indices(40, 33, b, seed))
    nb = len(blocks)
    assert nb == 5

    def sums(i, j, sel):
        kxy, kxx, kyy = (gram(x[i].reshape(b, -1)[:, sel], y[j].reshape(b, -1)[:, sel], g),
                         gram(x[i].reshape(b, -1)[:, sel], x[i].reshape(b, -1)[:, sel], g),
                         gram(y[j].reshape(b, -1)[:, sel], y[j].reshape(b, -1)[:, sel], g))
        return kxy.sum(), kxx.sum() - b, kyy.sum() - b

    per = np.array([[sums(i, j, sel) for sel in (REGIONS == 0, REGIONS == 1, slice(None))]
                    for i, j in blocks])
    counts = bootstrap_rng(seed).multinomial(nb, np.full(nb, 1.0 / nb), size=b_rep)  # (B, nb)
    pooled = np.einsum("bs,srk->brk", counts, per)
    within = nb * b * (b - 1)
    reps = (pooled[..., 0] / (nb * b * b)) / np.sqrt(pooled[..., 1] * pooled[..., 2] / within**2)
    lo, hi = np.clip(np.quantile(reps, [0.025, 0.975], axis=0), -1.0, 1.0)  # intersected with [-1, 1]
    iv = out["intervals"]
    np.testing.assert_allclose([iv["region_cms"][0]["low"], iv["region_cms"][1]["low"], iv["cms"]["low"]], lo,
                               rtol=1e-10)
    np.testing.assert_allclose([iv["region_cms"][0]["high"], iv["region_cms"][1]["high"], iv["cms"]["high"]],
                               hi, rtol=1e-10)


def test_same_distribution_covers_one_and_a_shift_is_detected():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 1, 2))
    y = rng.normal(size=(100, 1, 2))
    y[..., 1] += 1.0  # pixel 1 differs, pixel 0 does not
    out = region_cms(x, y, np.array([0, 1]), 0.5, bootstrap=200, seed=1)
    iv = out["intervals"]
    same, moved = iv["region_cms"]
    assert same["low"] <= 1.0 <= same["high"]  # eq. 4's own value (< 1) is biased; the interval covers 1
    assert out["region_cms"][0] < 1.0
    assert moved["high"] < 0.95 and iv["cms"]["high"] < 0.95  # power: the shifted pixel is separated
    for b in (same, moved, iv["cms"], iv["product_cms"]):
        assert b["low"] <= b["debiased"] <= b["high"]


@pytest.mark.slow
def test_bootstrap_coverage_on_a_simulation():
    """Percentile intervals of the U-form replicates cover the population CMS about 95% of the time.

    x ~ N(0, 1), y ~ N(0.7, 1), k = exp(-g (a - b)^2): E k(x, y) = (1 + 4 g)^(-1/2) exp(-g 0.49 / (1 + 4 g)),
    so the population CMS is exp(-g 0.49 / (1 + 4 g)). 120 simulated data sets of n = m = 80.
    """
    g, shift, n, runs = 0.5, 0.7, 80, 120
    truth = math.exp(-g * shift**2 / (1 + 4 * g))
    hits = same_hits = 0
    for r in range(runs):
        rng = np.random.default_rng(1000 + r)
        x, y, z = rng.normal(size=(n, 1, 1)), rng.normal(size=(n, 1, 1)) + shift, rng.normal(size=(n, 1, 1))
        iv = region_cms(x, y, np.array([0]), g, bootstrap=100, seed=r)["intervals"]["cms"]
        hits += iv["low"] <= truth <= iv["high"]
        iv0 = region_cms(x, z, np.array([0]), g, bootstrap=100, seed=r)["intervals"]["cms"]
        same_hits += iv0["low"] <= 1.0 <= iv0["high"]
    assert 0.85 <= hits / runs <= 0.995, hits / runs
    assert 0.85 <= same_hits / runs, same_hits / runs  # false "differs" rate of a same-distribution pair


def test_result_carries_intervals_ties_and_bootstrap_record(tmp_path):
    rng = np.random.default_rng(2)
    real = rng.random((60, 4, 4))
    gen = real[:30] * 0.95 + 0.05 * rng.random((30, 4, 4))
    res = RegionCMS(n_regions=2, seed=3, bootstrap=50).fit(real).compare([gen, real[30:]], ["a", "b"])
    validity = res.bootstrap["validity"]
    record = {k: v for k, v in res.bootstrap.items() if k != "validity"}
    assert record == {"replicates": 50, "level": 0.95, "seed": 3,
                      "resample": "images (real and each generated set, with replacement)",
                      "around": "the U-form estimate M_xy / sqrt(U_xx U_yy) on all images ('debiased'); the "
                                "point estimate cms is eq. 4, the same with or without intervals"}
    assert validity["holds"] is False and "30 images" in validity["reason"]  # below 200: flagged
    assert len(res.intervals) == 2 and len(res.intervals[0]["region_cms"]) == 2
    assert res.block_bias is None
    iv = res.intervals[1]["region_cms"]
    overlap = iv[0]["low"] <= iv[1]["high"] and iv[1]["low"] <= iv[0]["high"]
    assert res.region_ties(1) == ([(0, 1)] if overlap else [])
    res.save(tmp_path)
    back = json.loads((tmp_path / "result.json").read_text())
    assert back["intervals"] == res.intervals and back["bootstrap"]["replicates"] == 50
    header = (tmp_path / "curves.csv").read_text().splitlines()[0].split(",")
    assert "cms_uform_low" in header and "region_1_uform_high" in header
    # a result.json written before intervals existed still loads
    old = {k: v for k, v in back.items() if k not in ("intervals", "bootstrap", "block_bias")}
    (tmp_path / "result.json").write_text(json.dumps(old))
    from promptprism import load_result

    again = load_result(tmp_path)
    assert isinstance(again, RegionsResult) and again.intervals == [] and again.region_ties() == []


# ------------------------------------------------------------------------------------ block bias corrected
def test_corrected_block_cms_is_eq4_of_pooled_pair_means():
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=(23, 3)), rng.normal(0.4, 1.0, size=(19, 3))
    kern, g = rbf_kernel(0.3), 0.3
    # on one block of everything the closed form *is* eq. 4
    full = cms(gram(x, y, g), gram(x, x, g), gram(y, y, g))
    assert block_cms(x, y, kern, corrected=True) == pytest.approx(full, rel=1e-12)
    blocks = list(block_indices(23, 19, 5, 9))
    m_xy = np.mean([gram(x[i], y[j], g).mean() for i, j in blocks])
    u = [[(gram(a, a, g).sum() - 5) / 20 for a in (x[i], y[j])] for i, j in blocks]
    u_xx, u_yy = np.mean(u, axis=0)
    expected = m_xy / math.sqrt((1 / 23 + 22 / 23 * u_xx) * (1 / 19 + 18 / 19 * u_yy))
    assert block_cms(x, y, kern, block_size=5, seed=9, corrected=True) == pytest.approx(expected, rel=1e-12)
    assert cms_from_pair_means(m_xy, u_xx, u_yy, 23, 19) == pytest.approx(expected, rel=1e-14)


@pytest.mark.slow
def test_corrected_block_cms_matches_full_estimator_on_digits():
    """Same-distribution digits: the paper's block average reads 0.923 at b = 150 where eq. 4 reads 0.987;
    the corrected block estimate is within 0.01 of eq. 4 (its sampling sd here is about 0.002)."""
    from sklearn.datasets import load_digits

    x = load_digits().images / 16.0
    perm = np.random.default_rng(0).permutation(len(x))
    real, gen = as_pixels(x[perm[:900]]), as_pixels(x[perm[900:]])
    g = gamma_from_median(real)
    labels = np.repeat([0, 1], 32)
    full = compare_sources(real, [gen], labels, g)[0]
    assert full["cms"] == pytest.approx(0.987, abs=0.002)
    for b in (50, 150):
        paper = compare_sources(real, [gen], labels, g, block_size=b, block_estimator="paper")[0]
        fixed = compare_sources(real, [gen], labels, g, block_size=b, bootstrap=100)[0]
        assert paper["cms"] < full["cms"] - 0.05
        assert abs(fixed["cms"] - full["cms"]) < 0.01 * (2 if b == 50 else 1), (b, fixed["cms"])
        np.testing.assert_allclose(fixed["region_cms"], full["region_cms"], atol=0.01)
        assert abs(fixed["mmd2"] - full["mmd2"]) < abs(paper["mmd2"] - full["mmd2"])
        assert fixed["intervals"]["cms"]["low"] <= fixed["intervals"]["cms"]["debiased"] <= \
            fixed["intervals"]["cms"]["high"]


def test_block_bias_is_stated_in_the_result():
    rng = np.random.default_rng(5)
    real = rng.random((60, 4, 4))
    est = RegionCMS(n_regions=2, block_size=20).fit(real)
    assert "bias-corrected" in est.compare(real[:40]).block_bias
    paper = RegionCMS(n_regions=2, block_size=20, block_estimator="paper").fit(real).compare(real[:40])
    assert "biased downwards" in paper.block_bias and paper.config["block_estimator"] == "paper"


# ---------------------------------------------------------------------------------------------- numerics
@pytest.mark.parametrize("device", DEVICES)
def test_pixels_of_1e300_give_exact_values_not_nan(device):
    rng = np.random.default_rng(1)
    x, y = rng.random((12, 2, 2)), rng.random((9, 2, 2)) * 1e300
    g = 0.8
    out = region_cms(x, y, REGIONS, g, bootstrap=30, device=device)
    # every cross kernel value is exp(-g * 1e600) = 0 in float64, distinct huge images too: K_yy = I
    assert out["cms"] == 0.0 and out["product_cms"] == 0.0 and list(out["region_cms"]) == [0.0, 0.0]
    assert out["mmd2"] == pytest.approx(gram(x, x, g).mean() + 1 / 9, rel=1e-12)
    assert out["intervals"]["cms"] == {"low": 0.0, "high": 0.0, "debiased": 0.0}


def test_huge_scaled_images_give_the_same_cms_scale_invariance():
    rng = np.random.default_rng(2)
    x, y = rng.random((10, 2, 2)), rng.random((8, 2, 2)) ** 2
    g = 0.7
    ref = region_cms(x, y, REGIONS, g)
    s = 2.0**500  # exact scaling: gamma |s a - s b|^2 with gamma / s^2 is the same number
    big = region_cms(x * s, y * s, REGIONS, g / s**2)
    for key in ("cms", "product_cms", "mmd2"):
        assert big[key] == pytest.approx(ref[key], rel=1e-12), key
    np.testing.assert_allclose(big["region_cms"], ref["region_cms"], rtol=1e-12)


def test_offset_pixels_use_direct_differences():
    rng = np.random.default_rng(3)
    x, y = rng.random((10, 2, 2)), rng.random((8, 2, 2))
    g = 0.9
    out = region_cms(x + 1e9, y + 1e9, REGIONS, g)
    xo, yo = x + 1e9, y + 1e9  # the brute force on the shifted values themselves
    expected = gram(xo, yo, g).sum() / math.sqrt(gram(xo, xo, g).sum() * gram(yo, yo, g).sum())
    assert out["cms"] == pytest.approx(expected, rel=1e-12)
    assert out["cms"] == pytest.approx(region_cms(x, y, REGIONS, g)["cms"], rel=1e-6)


def test_huge_real_images_fit_or_are_refused_with_a_reason():
    rng = np.random.default_rng(4)
    real = rng.random((30, 3, 3))
    res = RegionCMS(n_regions=2).fit(real * 1e300).compare(real[:10] * 1e300)
    assert all(math.isfinite(v) for v in res.cms + res.mmd2 + res.region_cms[0])
    assert np.isfinite(np.asarray(res.cka_matrix)).all()
    ok = RegionCMS(n_regions=2).fit(real * 1e308)  # median distance ~1e308: still a float, gamma subnormal
    assert 0.0 < ok.gamma_ < 1e-300
    with pytest.raises(InputError, match="rescale the images"):  # 36 pixels of ~1e308: the median overflows
        RegionCMS(n_regions=2).fit(rng.random((30, 6, 6)) * 1.7e308)


def test_cli_huge_generated_pixels_exit_0_without_null(tmp_path, capsys):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "real.npy", rng.random((30, 4, 4)))
    np.save(tmp_path / "huge.npy", rng.random((12, 4, 4)) * 1e300)
    code = main(["regions", "--real", str(tmp_path / "real.npy"), "--generated", str(tmp_path / "huge.npy"),
                 "--regions", "2", "--bootstrap", "20", "--out", str(tmp_path / "out"), "-q", "--no-report"])
    assert code == 0, capsys.readouterr().err
    r = json.loads((tmp_path / "out" / "result.json").read_text())
    for key in ("cms", "product_cms", "mmd2"):
        assert None not in r[key], key
    assert None not in r["region_cms"][0] and r["cms"] == [0.0]


# ------------------------------------------------------------------------------------------ validation
def test_parameters_are_validated_when_the_estimator_is_made():
    for kwargs, word in [({"bootstrap": -1}, "bootstrap"), ({"bootstrap": 5}, "bootstrap"),
                         ({"bootstrap": 1.5}, "bootstrap"), ({"level": 1.5}, "level"),
                         ({"block_estimator": "median"}, "block_estimator"), ({"n_regions": 0}, "n_regions"),
                         ({"block_size": 1}, "block_size"), ({"gamma": "mode"}, "gamma")]:
        with pytest.raises(OptionError, match=word):
            RegionCMS(**kwargs)
    est = RegionCMS(n_regions=2)
    assert est.validate() is est
    real = np.random.default_rng(0).random((20, 3, 3))
    fitted = est.fit(real)  # the contract: fit returns the regions it learned; the estimator is unchanged
    assert fitted.estimator is est and est == RegionCMS(n_regions=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.bootstrap = -3
    with pytest.raises(OptionError, match="bootstrap"):
        est.set_params(bootstrap=-3)


@pytest.mark.parametrize("value,expected", [("-1", "bootstrap"), ("abc", "--bootstrap"), ("3", "bootstrap")])
def test_cli_bad_bootstrap_is_one_line(tmp_path, capsys, value, expected):
    np.save(tmp_path / "real.npy", np.random.default_rng(0).random((20, 3, 3)))
    code = main(["regions", "--real", str(tmp_path / "real.npy"), "--generated", str(tmp_path / "real.npy"),
                 "--bootstrap", value, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and expected in err and "Traceback" not in err
    assert not (tmp_path / "out" / "result.json").exists()


def test_cli_table_shows_intervals_and_ties(tmp_path, capsys):
    rng = np.random.default_rng(0)
    real = rng.random((40, 4, 4))
    np.save(tmp_path / "real.npy", real)
    np.save(tmp_path / "gen.npy", real[:20])
    code = main(["regions", "--real", str(tmp_path / "real.npy"), "--generated", str(tmp_path / "gen.npy"),
                 "--regions", "2", "--bootstrap", "40", "--block-size", "4", "--out", str(tmp_path / "out"),
                 "--no-report"])
    out = capsys.readouterr().out
    assert code == 0
    assert "95% bootstrap interval for the population CMS (40 resamples of the blocks" in out
    assert "bias-corrected" in out
    r = json.loads((tmp_path / "out" / "result.json").read_text())
    assert r["bootstrap"]["seed"] == 0 and len(r["intervals"][0]["region_cms"]) == 2
    lo, hi = r["intervals"][0]["cms"]["low"], r["intervals"][0]["cms"]["high"]
    assert f"{lo:.4f}" in out and f"{hi:.4f}" in out  # (rich may wrap the cell)
    # generated images that copy real ones: cross pairs include identical images while the within-set
    # means leave them out, so the U form exceeds 1 (eq. 4 itself stays <= 1): reported clipped to 1, the
    # interval intersected with [-1, 1], and a note naming the unclipped values
    assert lo == hi == r["intervals"][0]["cms"]["debiased"] == 1.0 >= r["cms"][0]
    u_note = [n for n in r["notes"] if n.startswith("gen: the U-form CMS exceeded 1 before clipping")]
    assert len(u_note) == 1 and ("entirely above 1" in u_note[0] or "wholly above 1" in u_note[0])
    assert f"! {u_note[0][:40]}" in out
    # the corrected block estimator pools pair means of different blocks: its point estimate is no cosine
    # of two embeddings and can exceed 1 too (here region 0): clipped, and named in a note
    assert any(n.startswith("gen: the point estimate exceeded 1 before clipping (") and "region 0 1.0" in n
               for n in r["notes"]) and r["region_cms"][0][0] == 1.0
    ties = RegionsResult.from_dict(r).region_ties(0)
    assert ("regions 0 and 1 tie" in out) == (ties == [(0, 1)])


def test_a_block_bootstrap_over_fewer_than_five_blocks_is_refused():
    """2 blocks a set gave an interval of one point ([1.0000, 1.0000]) and a ranking built on it."""
    import promptprism as pp
    from promptprism.errors import InputError

    real = np.random.default_rng(0).random((40, 4, 4))
    with pytest.raises(InputError, match="block_size 10 a set has 2 block\\(s\\) to resample; at least 5"):
        pp.RegionCMS(n_regions=2, seed=0, block_size=10, bootstrap=20).fit(real).compare([real[:20]])


def test_a_set_of_one_image_under_the_bootstrap_is_named():
    """'every image set needs at least 2 images' did not say which set."""
    import promptprism as pp
    from promptprism.errors import InputError

    real = np.random.default_rng(0).random((20, 4, 4))
    with pytest.raises(InputError, match="^one: 1 image; intervals need at least 2 in every set"):
        pp.RegionCMS(n_regions=2, seed=0, bootstrap=20).fit(real).compare([real[:5], real[:1]],
                                                                         names=["five", "one"])
