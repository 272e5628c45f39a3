"""Reference-set metrics against their reference implementations and the pitfalls they must survive.

Oracles: ``prdc`` (precision/recall/density/coverage), torchmetrics' KID and CLIPScore fed the same features
(identity feature extractor; fake CLIP model), and clean-fid's ``kernel_distance`` formula restated (clean-fid
imports torchvision at module level, which promptprism does not depend on).
"""

from __future__ import annotations

import numpy as np
import pytest

from promptprism.data.paired import PairedSet
from promptprism.errors import InputError
from promptprism.methods.metrics import (
    ReferenceMetrics,
    clip_scores,
    kernel_inception_distance,
    kernel_mmd2,
    neighbour_indicators,
    prdc,
)


def _pair(n=200, m=180, d=10, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    real = rng.normal(size=(n, d))
    fake = rng.normal(size=(m, d)) * 1.2 + 0.3
    return real.astype(dtype), fake.astype(dtype)


def cleanfid_kernel_distance(feats1, feats2):
    """clean-fid's ``kernel_distance`` restated for one subset holding every row (equal sizes m)."""
    n = feats1.shape[1]
    m = feats1.shape[0]
    x, y = feats2, feats1
    a = (x @ x.T / n + 1) ** 3 + (y @ y.T / n + 1) ** 3
    b = (x @ y.T / n + 1) ** 3
    return float(((a.sum() - np.diag(a).sum()) / (m - 1) - b.sum() * 2 / m) / m)


@pytest.mark.parametrize(("k", "dtype", "block_rows"), [(5, np.float64, 17), (3, np.float32, None)])
def test_prdc_equals_the_prdc_package(k, dtype, block_rows):
    ref = pytest.importorskip("prdc")
    real, fake = _pair(dtype=dtype, seed=k)
    expected = ref.compute_prdc(real, fake, k)
    ours = prdc(real, fake, k, block_rows=block_rows)
    for name in ("precision", "recall", "density", "coverage"):
        assert ours[name] == pytest.approx(float(expected[name]), rel=1e-6), name


def test_identical_sets_read_one_where_prdc_reads_zero():
    ref = pytest.importorskip("prdc")
    constant = np.full((40, 6), 3.7)
    assert float(ref.compute_prdc(constant, constant, 5)["coverage"]) == 0.0  # prdc issue #7
    assert prdc(constant, constant, 5) == pytest.approx(
        {"precision": 1.0, "recall": 1.0, "density": 1.0, "coverage": 1.0})
    real, _ = _pair()
    assert prdc(real, real, 5) == pytest.approx(
        {"precision": 1.0, "recall": 1.0, "density": 1.0, "coverage": 1.0})


def test_duplicating_both_sets_changes_nothing():
    real, fake = _pair(n=120, m=100)
    once = prdc(real, fake, 5)
    thrice = prdc(np.repeat(real, 3, axis=0), np.repeat(fake, 3, axis=0), 5)
    assert thrice == pytest.approx(once, rel=1e-12)
    ind = neighbour_indicators(np.repeat(real, 3, axis=0), fake, 5)
    assert ind.duplicates == {"reference": 240, "generated": 0}


def test_fewer_samples_than_k_refused():
    real, fake = _pair(n=5, m=50)
    with pytest.raises(InputError, match="reference set has 5 samples; nearest_k=5 needs at least 6"):
        prdc(real, fake, 5)


@pytest.mark.slow  # imports torchmetrics (and transformers through it): the slow tier
def test_kid_equals_torchmetrics_and_cleanfid_on_one_whole_subset():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchmetrics")
    from torchmetrics.image.kid import KernelInceptionDistance

    real, fake = _pair(n=150, m=150, d=12, seed=3)

    class Identity(torch.nn.Module):
        def forward(self, z):
            return z

    metric = KernelInceptionDistance(feature=Identity(), subsets=1, subset_size=150)
    metric.set_dtype(torch.float64)
    metric.update(torch.from_numpy(real), real=True)
    metric.update(torch.from_numpy(fake), real=False)
    tm_mean, _ = metric.compute()
    ours = kernel_inception_distance(fake, real, n_subsets=1, subset_size=150).mean()
    assert ours == pytest.approx(float(tm_mean), rel=1e-6)
    assert ours == pytest.approx(cleanfid_kernel_distance(fake, real), rel=1e-6)


def test_kid_subset_is_the_u_statistic_of_its_rows():
    from promptprism.methods.metrics.kid import subset_indices

    real, fake = _pair(n=40, m=30, d=5, seed=4)
    k = lambda a, b: (a @ b.T / 5 + 1) ** 3  # noqa: E731
    (i, j), = subset_indices(30, 40, 20, 1, seed=9)
    value = kernel_inception_distance(fake, real, n_subsets=1, subset_size=20, seed=9)[0]
    kxx, kyy, kxy = k(fake[i], fake[i]), k(real[j], real[j]), k(fake[i], real[j])
    assert value == pytest.approx((kxx.sum() - np.trace(kxx)) / 380 + (kyy.sum() - np.trace(kyy)) / 380
                                  - 2 * kxy.mean(), rel=1e-10)


def test_mmd_with_promptprism_kernels_reuses_mmd2():
    from promptprism.kernels import gaussian_gram
    from promptprism.methods.regions.two_sample import mmd2

    real, fake = _pair(n=60, m=60, d=4, seed=5)
    ours = kernel_mmd2(fake, real, kernel="gaussian", sigma=2.0, n_subsets=1, subset_size=60)[0]
    expected = mmd2(gaussian_gram(fake, real, sigma=2.0), gaussian_gram(fake, sigma=2.0),
                    gaussian_gram(real, sigma=2.0), unbiased=True)
    assert ours == pytest.approx(expected, rel=1e-12)


@pytest.mark.slow  # imports torchmetrics (and transformers through it): the slow tier
def test_clip_score_equals_torchmetrics_with_the_same_features():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchmetrics")
    from torchmetrics.functional.multimodal.clip_score import _clip_score_update

    rng = np.random.default_rng(6)
    text = rng.normal(size=(8, 16))
    image = text + rng.normal(size=(8, 16)) * 1.5

    class Processor:
        def __call__(self, text=None, images=None, **_):
            if images is not None:
                return {"pixel_values": torch.stack(images)}
            ids = torch.tensor([int(t) for t in text])
            return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

    class Model:
        config = object()

        def to(self, _):
            return self

        def get_image_features(self, pixels):
            return pixels.reshape(pixels.shape[0], -1)

        def get_text_features(self, ids, mask):
            return torch.from_numpy(text)[ids]

    images = [torch.from_numpy(row.reshape(1, 4, 4)) for row in image]
    tm, _ = _clip_score_update(images, [str(i) for i in range(8)], Model(), Processor())
    score, cos = clip_scores(text, image, weight=100.0)
    np.testing.assert_allclose(100 * cos, tm.numpy(), rtol=1e-6)
    np.testing.assert_allclose(score, np.maximum(tm.numpy(), 0), rtol=1e-6)
    # torchmetrics' CLIPScore clamps the mean (max(mean, 0)); Hessel et al. clamp each pair
    assert clip_scores(text, image)[0] == pytest.approx(2.5 * np.maximum(cos, 0))


def _paired(x, prompts_emb, labels, name):
    return PairedSet(prompt_embeddings=prompts_emb, output_embeddings=x,
                     prompts=[f"p{g}" for g in labels], name=name)


def test_alignment_refused_across_spaces():
    rng = np.random.default_rng(7)
    gen = PairedSet(prompt_embeddings=rng.normal(size=(30, 5)), output_embeddings=rng.normal(size=(30, 8)))
    ref = rng.normal(size=(30, 8))
    with pytest.raises(InputError, match="one joint model.*5 dimensions and the outputs 8"):
        ReferenceMetrics(alignment="on", bootstrap=0, subset_size=10, subsets=2).compare(gen, ref)
    result = ReferenceMetrics(bootstrap=0, subset_size=10, subsets=2).compare(gen, ref)
    assert result.models[0].clip_score is None
    assert any(n.startswith("no CLIPScore") for n in result.models[0].notes)
    same = PairedSet(prompt_embeddings=rng.normal(size=(30, 8)), output_embeddings=rng.normal(size=(30, 8)))
    with pytest.raises(InputError, match="prompts come from clip-a and the outputs from dinov2-b"):
        ReferenceMetrics(alignment="on", bootstrap=0, subset_size=10, subsets=2).compare(
            same, ref, names=["s"], spaces={"s": ("clip-a", "dinov2-b")})


def test_estimator_intervals_breakdown_and_notes():
    rng = np.random.default_rng(8)
    d, groups = 6, np.repeat(np.arange(6), 20)
    centres = rng.normal(size=(6, d))
    ref = _paired(centres[groups] + rng.normal(size=(120, d)), centres[groups], groups, "ref")
    keep = groups < 5  # the sixth prompt only in the reference; the fifth with few generated samples
    keep[np.flatnonzero(groups == 4)[4:]] = False
    gen = _paired(centres[groups[keep]] + rng.normal(size=(keep.sum(), d)), centres[groups[keep]],
                  groups[keep], "gen")
    res = ReferenceMetrics(bootstrap=50, subset_size=50, subsets=10, min_group_size=10,
                           alignment="on").compare(gen, ref)  # (a joint space by construction, asserted)
    m = res.models[0]
    for name in ("precision", "recall", "density", "coverage", "kid", "clip_score"):
        iv = m.intervals[name]
        assert iv["low"] <= getattr(m, name) <= iv["high"], name
    # FD's basic bootstrap interval corrects its bias and may exclude the estimate (5 prompts): then a note
    fd = m.intervals["fd"]
    assert 0 <= fd["low"] <= fd["high"]
    assert fd["low"] <= m.fd <= fd["high"] or any("FD's interval" in n and "excludes" in n for n in m.notes)
    assert "fd" in m.interval_validity["not_calibrated"]  # 5 prompts: below 40
    assert [row["prompt"] for row in m.per_prompt] == ["p0", "p1", "p2", "p3"]
    assert all({"recall", "coverage", "kid", "fd"} <= set(row) for row in m.per_prompt)
    assert any("1 prompt(s) have fewer than 10 generated samples" in n for n in m.notes)
    assert res.config["min_samples"]["prdc"] == 6 and res.seed == 0
    again = ReferenceMetrics(bootstrap=50, subset_size=50, subsets=10, min_group_size=10,
                             alignment="on").compare(gen, ref)
    assert again.models[0].intervals == m.intervals  # seeded


def test_fd_with_fewer_samples_than_dimensions_says_so():
    real, fake = _pair(n=20, m=20, d=30)
    res = ReferenceMetrics(bootstrap=0, subset_size=10, subsets=2).compare(fake, real)
    assert res.models[0].fd > 0
    assert any("FD from 20 samples in 30 dimensions" in n for n in res.models[0].notes)
