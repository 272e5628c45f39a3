"""Disentangled CMS on real images: scikit-learn digits and crops of scikit-image's bundled pictures.

* Regions must be spatially coherent: at least 85% of the pixels have a 4-neighbour in their own region,
  far above what the same region sizes scattered at random give (the 99th percentile of 200 shuffles).
* "Generated" sets are held-out real images, then the same images with one discovered region corrupted
  (blur, noise, shift, masking applied to the image and pasted into that region's pixels only): the
  corrupted region's CMS must drop, and drop most; the other regions see identical pixels and must keep
  their CMS exactly. Held-out real images ("corrupting nothing") give CMS near 1 in every region.
* Random crops of natural images are a stationary distribution (a shifted random crop is another random
  crop), so only corruptions that change pixel statistics (noise, masking) are checked on them.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

from promptprism import RegionCMS

pytestmark = pytest.mark.slow  # minutes in all: run by `make test` / CI, not by -m 'not slow'

skdata = pytest.importorskip("skimage.data")


def coherence(labels: np.ndarray) -> float:
    """Fraction of pixels with a 4-neighbour in the same region."""
    g = labels
    same = np.zeros(g.shape, bool)
    same[1:] |= g[1:] == g[:-1]
    same[:-1] |= g[:-1] == g[1:]
    same[:, 1:] |= g[:, 1:] == g[:, :-1]
    same[:, :-1] |= g[:, :-1] == g[:, 1:]
    return float(same.mean())


def shuffled_coherence(labels: np.ndarray, seed: int = 0, n: int = 200) -> float:
    rng = np.random.default_rng(seed)
    flat = labels.reshape(-1)
    scores = [coherence(rng.permutation(flat).reshape(labels.shape)) for _ in range(n)]
    return float(np.quantile(scores, 0.99))


def corrupt(images: np.ndarray, kind: str, seed: int = 1) -> np.ndarray:
    spatial = (0, 1.5, 1.5) + ((0,) if images.ndim == 4 else ())
    if kind == "blur":
        return ndimage.gaussian_filter(images, sigma=spatial)
    if kind == "noise":
        return np.clip(images + np.random.default_rng(seed).normal(0, 0.3, images.shape), 0, 1)
    if kind == "shift":
        return np.roll(images, 2, axis=2)
    if kind == "mask":
        return np.zeros_like(images)
    raise AssertionError(kind)


def paste(original: np.ndarray, corrupted: np.ndarray, region: np.ndarray) -> np.ndarray:
    out = original.copy()
    out[:, region] = corrupted[:, region]
    return out


def check_one_region_corruptions(est: RegionCMS, test: np.ndarray, kinds: list[str]) -> list[tuple]:
    labels = est.regions_.reshape(test.shape[1:3])
    n_reg = int(labels.max()) + 1
    sets, names, targets = [test], ["identity"], [None]
    for r in range(n_reg):
        for kind in kinds:
            bad = paste(test, corrupt(test, kind), labels == r)
            if np.allclose(bad, test):  # e.g. masking a region that is black already
                continue
            sets.append(bad)
            names.append(f"{kind}@{r}")
            targets.append(r)
    res = est.compare(sets, names)
    base = np.array(res.region_cms[0])
    assert res.cms[0] > 0.97, res.cms[0]
    assert base.min() > 0.99, base
    rows = []
    for k in range(1, len(sets)):
        rc = np.array(res.region_cms[k])
        drop = np.log(base) - np.log(rc)
        r = targets[k]
        assert drop[r] > 0, (names[k], rc, base)
        assert int(np.argmax(drop)) == r, (names[k], rc, base)
        others = np.arange(n_reg) != r
        assert np.allclose(rc[others], base[others], rtol=1e-12, atol=0), names[k]
        assert res.cms[k] < res.cms[0], names[k]
        rows.append((names[k], res.cms[k], res.product_cms[k], rc[r], base[r]))
    return rows


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    x = load_digits().images / 16.0
    perm = np.random.default_rng(0).permutation(len(x))
    return x[perm[:1000]], x[perm[1000:]]


def test_digits_regions_coherent_and_corruptions_localised(digits):
    train, test = digits
    est = RegionCMS(n_regions=4, seed=0).fit(train)
    labels = est.regions_.reshape(8, 8)
    assert len(np.unique(labels)) == 4
    assert coherence(labels) >= 0.85
    assert coherence(labels) > shuffled_coherence(labels)
    rows = check_one_region_corruptions(est, test, ["blur", "noise", "shift", "mask"])
    assert len(rows) >= 14  # 4 regions x 4 corruptions, less no-op ones (masking a black region)


def natural_crops(images: list[np.ndarray], size: int, per_image: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = []
    for img in images:
        img = np.asarray(img, dtype=np.float64) / 255.0
        for r, c in zip(rng.integers(0, img.shape[0] - size, per_image),
                        rng.integers(0, img.shape[1] - size, per_image), strict=True):
            out.append(img[r:r + size, c:c + size])
    x = np.stack(out)
    return x[rng.permutation(len(x))]


def test_skimage_grey_crops(tmp_path):
    names = ["camera", "moon", "coins", "grass", "gravel", "brick", "clock", "page"]
    x = natural_crops([getattr(skdata, n)() for n in names], 16, 200, seed=0)
    train, test = x[:1000], x[1000:]
    est = RegionCMS(n_regions=4, seed=0).fit(train)
    labels = est.regions_.reshape(16, 16)
    assert len(np.unique(labels)) == 4
    assert coherence(labels) >= 0.9
    assert coherence(labels) > shuffled_coherence(labels)
    # each region is one connected blob (4-connectivity), as nearby pixels of natural images co-vary
    for r in range(4):
        _, n_parts = ndimage.label(labels == r)
        assert n_parts == 1, (r, labels)
    check_one_region_corruptions(est, test, ["noise", "mask"])


def test_skimage_colour_crops():
    names = ["astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry"]
    x = natural_crops([getattr(skdata, n)() for n in names], 10, 240, seed=1)
    assert x.shape[1:] == (10, 10, 3)
    train, test = x[:800], x[800:]
    est = RegionCMS(n_regions=3, seed=0).fit(train)
    labels = est.regions_.reshape(10, 10)
    assert coherence(labels) >= 0.9
    check_one_region_corruptions(est, test, ["noise", "mask"])


def test_digits_monitoring_curve_follows_the_degrading_region(digits):
    """A 'training run' whose checkpoints add more and more noise to one region: that region's CMS falls
    checkpoint after checkpoint, the others stay put, and the whole-image CMS and the product follow."""
    train, test = digits
    est = RegionCMS(n_regions=4, seed=0).fit(train)
    labels = est.regions_.reshape(8, 8)
    target = int(np.argmax(np.bincount(est.regions_)))
    rng = np.random.default_rng(3)
    noise = rng.normal(0, 1, test.shape)
    sets = [paste(test, np.clip(test + s * noise, 0, 1), labels == target)
            for s in (0.0, 0.05, 0.1, 0.2, 0.4)]
    res = est.compare(sets, [f"epoch {k}" for k in range(5)])
    curve = np.array(res.region_cms)
    assert np.all(np.diff(curve[:, target]) < 0), curve[:, target]
    others = np.arange(4) != target
    assert np.allclose(curve[:, others], curve[0, others], rtol=1e-12, atol=0)
    assert np.all(np.diff(res.cms) < 0) and np.all(np.diff(res.product_cms) < 0)
