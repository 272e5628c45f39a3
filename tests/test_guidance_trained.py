"""Section 5.4 in small, on a model trained here (slow): a tiny class-prompted diffusion model of
Fashion-MNIST at 8 px, trained for a few hundred steps; reference = its own samples (other seeds) with a
white frame on two guided prompts and plain on two control prompts. Guided samples are significantly
closer to the reference than unguided ones on the guided prompts, and not on the controls (a permutation
test per prompt)."""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pytest

from promptprism.datasets import fashion_mnist_available

# (looked up, not imported: collecting the fast subset stays free of torch's and diffusers' import)
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(any(find_spec(m) is None for m in ("torch", "diffusers")),
                                 reason="needs torch and diffusers"),
              pytest.mark.skipif(not fashion_mnist_available(),
                                 reason="needs Debian's dataset-fashion-mnist")]

GUIDED, CONTROL = (1, 8), (0, 7)  # trouser, bag framed; T-shirt, sneaker plain
PER_PROMPT, STEPS = 24, 10


def _framed(images):
    out = images.copy()
    out[:, 0, :] = out[:, -1, :] = out[:, :, 0] = out[:, :, -1] = 255
    return out


def _pixels(images):
    return images.reshape(len(images), -1).astype(np.float64) / 127.5 - 1.0


def _mmd2(a, b, sigma):
    """Squared MMD (biased, gaussian kernel) between two sets of pixel rows."""
    from promptprism.kernels import gaussian_gram

    return (gaussian_gram(a, sigma=sigma).mean() + gaussian_gram(b, sigma=sigma).mean()
            - 2 * gaussian_gram(a, b, sigma=sigma).mean())


def _closer_p_value(guided, plain, ref, sigma, permutations=300, seed=0):
    """One-sided permutation p-value of 'guided samples are closer to ref than plain ones' (labels
    guided/plain exchanged under the null)."""
    pooled, n = np.concatenate([guided, plain]), len(guided)
    stat = _mmd2(plain, ref, sigma) - _mmd2(guided, ref, sigma)
    rng = np.random.default_rng(seed)
    null = []
    for _ in range(permutations):
        idx = rng.permutation(len(pooled))
        null.append(_mmd2(pooled[idx[n:]], ref, sigma) - _mmd2(pooled[idx[:n]], ref, sigma))
    return (1 + np.sum(np.array(null) >= stat)) / (1 + permutations)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from promptprism.models import fashion
    from promptprism.models.fashion_train import train

    shape = fashion.UNetShape(image_size=8, channels=(16, 32), layers_per_block=1)
    folder = train(tmp_path_factory.mktemp("tiny-fashion"), epochs=1, shape=shape, batch_size=64, lr=2e-3,
                   seed=0, subset=20000, max_steps=400)[-1]
    return fashion.load_checkpoint(folder)


def test_guided_samples_are_closer_on_the_guided_prompts_only(trained):
    from promptprism.guidance import PromptSplitGuidance, sample_seeds
    from promptprism.models.fashion import NULL_CLASS, sample_images

    prompts = np.array([*GUIDED, *CONTROL])
    classes = np.repeat(prompts, PER_PROMPT)
    guided_rows = np.isin(classes, GUIDED)

    def reference(offset):
        imgs = sample_images(trained, classes, sample_seeds(offset, len(classes)), steps=STEPS)
        imgs[guided_rows] = _framed(imgs[guided_rows])
        return _pixels(imgs)

    guide_ref, eval_ref = reference(1000), reference(2000)
    onehot = np.eye(NULL_CLASS)
    guide = PromptSplitGuidance(guide_ref, onehot[classes], onehot[classes], scale=60.0, sigma_prompt=0.5,
                                sigma_output=4.0)
    seeds = sample_seeds(0, len(classes))
    plain = _pixels(sample_images(trained, classes, seeds, steps=STEPS))
    guided = _pixels(sample_images(trained, classes, seeds, steps=STEPS, guidance=guide))
    p = {int(c): _closer_p_value(guided[classes == c], plain[classes == c], eval_ref[classes == c], 4.0)
         for c in prompts}
    for c in GUIDED:
        assert p[c] < 0.01, p
    for c in CONTROL:
        assert p[c] > 0.01, p
