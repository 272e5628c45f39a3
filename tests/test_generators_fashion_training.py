"""A short real training run of the Fashion-MNIST generator: its samples carry their prompt's class."""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pytest

from promptprism.datasets import fashion_mnist_available

# (looked up, not imported: collecting the suite stays free of diffusers' import)
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(find_spec("diffusers") is None or find_spec("sklearn") is None,
                                 reason="needs diffusers and scikit-learn"),
              pytest.mark.skipif(not fashion_mnist_available(), reason="needs dataset-fashion-mnist")]

SIZE, PER_CLASS, STEPS = 8, 30, 250


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from promptprism.models import fashion
    from promptprism.models.fashion_train import train

    out = tmp_path_factory.mktemp("train")
    shape = fashion.UNetShape(image_size=SIZE, channels=(16, 32), layers_per_block=1)
    saved = train(out, epochs=2, shape=shape, batch_size=64, lr=3e-3, subset=20_000, max_steps=STEPS,
                  seed=0)
    return fashion.load_checkpoint(saved[-1])


def test_a_short_run_draws_each_prompts_class_better_than_chance(trained):
    from scipy.stats import binomtest
    from sklearn.linear_model import LogisticRegression

    from promptprism.models.fashion import real_images, sample_images

    x, y = real_images("train", SIZE)
    clf = LogisticRegression(max_iter=300).fit(x[:10_000].reshape(10_000, -1) / 255.0, y[:10_000])
    classes = np.repeat(np.arange(10), PER_CLASS)
    images = sample_images(trained, classes, range(classes.size), guidance_scale=3.0, steps=20)
    hits = clf.predict(images.reshape(len(images), -1) / 255.0) == classes
    per_prompt = hits.reshape(10, PER_CLASS).sum(axis=1)
    # chance is 1/10 per prompt; ask for significance on the pooled samples and above chance on most prompts
    assert binomtest(int(hits.sum()), hits.size, 0.1, alternative="greater").pvalue < 1e-6, per_prompt
    assert (per_prompt > 0.1 * PER_CLASS).sum() >= 8, per_prompt


def test_the_checkpoint_records_its_recipe(trained):
    meta = trained.meta
    assert meta["seed"] == 0 and meta["steps"] == STEPS and meta["image_size"] == SIZE
    assert meta["class_names"][7] == "sneaker" and meta["null_class"] == 10
