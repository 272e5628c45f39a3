"""PromptSplit guidance (PromptSplit paper, eq. 5) on the text-prompted Fashion-MNIST generator, toward a
reference on one class x attribute *family*, with control families.

A family is (class word, attribute, word) of :mod:`promptprism.models.fashion_captions`, e.g.
``("bag", "brightness", "light")``; its prompts are every caption phrasing of it
(:func:`~promptprism.models.fashion_text_quality.family_prompts`). For the guidance a prompt is embedded as
the one-hot vector of its family (bandwidth 0.5: families share no kernel mass, exp(-4) = 0.02) and an image
as its 28 x 28 pixels in [-1, 1] (the padded 32 px sample cropped), with the output bandwidth
max(median pairwise distance of the reference, sqrt(d) / 2) as for the class-conditioned generator
(:mod:`promptprism.models.fashion_guidance`). The guided family's reference is real images of a family of
the same class (say dark bags for the light-bag prompts: a swap the model never makes); the controls'
reference is the model's own unguided samples (disjoint seeds), so eq. 5 has nothing to change there.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .fashion_captions import ATTRIBUTES, VALUES, attribute_table, class_words
from .fashion_guidance import pixel_rows
from .fashion_text import PAD

SIGMA_PROMPT = 0.5

Family = tuple[str, str, str]  #: (class word, attribute, word)


def family_cycle(family: Family, n: int) -> list[str]:
    """``n`` prompts of ``family``: its caption phrasings in turn."""
    from .fashion_text_quality import family_prompts

    texts = family_prompts(*family)
    return [texts[i % len(texts)] for i in range(n)]


def real_family_images(images: np.ndarray, labels: np.ndarray, thresholds: np.ndarray, family: Family,
                       n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two disjoint seeded draws of ``n`` real images (uint8) of ``family``, measured by the frozen caption
    ``thresholds`` (for the guidance and for the evaluation)."""
    cls, attribute, word = family
    c = class_words().index(cls)
    value = VALUES[attribute].index(word)
    idx = np.flatnonzero(labels == c)
    idx = idx[attribute_table(images[idx], labels[idx], thresholds)[:, ATTRIBUTES.index(attribute)] == value]
    idx = np.random.default_rng([seed, 44]).permutation(idx)
    if len(idx) < 2 * n:
        from ..errors import InputError

        raise InputError(f"{family}: {len(idx)} real images, fewer than the {2 * n} the guidance needs")
    return images[idx[:n]], images[idx[n: 2 * n]]


def crop_rows(x: Any) -> Any:
    """The guidance's encoder: padded samples (N, 1, 32, 32) -> their 28 x 28 pixels as rows (N, 784)."""
    return x[:, :, PAD: PAD + 28, PAD: PAD + 28].reshape(x.shape[0], -1)


def family_guidance(reference: np.ndarray, reference_family: np.ndarray, sample_family: np.ndarray,
                    n_families: int, *, scale: float, seed: int) -> Any:
    """The eq. 5 guidance toward ``reference`` (uint8 images whose family indices are
    ``reference_family``) for samples of families ``sample_family`` (one-hot family prompts, pixels)."""
    from ..guidance import PromptSplitGuidance

    onehot = np.eye(n_families)
    pixels = pixel_rows(reference)
    return PromptSplitGuidance(pixels, onehot[reference_family], onehot[sample_family], encoder=crop_rows,
                               scale=scale, sigma_prompt=SIGMA_PROMPT, seed=seed, through_model=False,
                               min_sigma_output=0.5 * float(np.sqrt(pixels.shape[1])))


def attribute_share(samples: np.ndarray, family: Family, thresholds: np.ndarray, word: str) -> float:
    """Share of ``samples`` (all prompted with ``family``) whose measured ``family`` attribute is ``word``."""
    cls, attribute, _ = family
    labels = np.full(len(samples), class_words().index(cls))
    measured = attribute_table(samples, labels, thresholds)[:, ATTRIBUTES.index(attribute)]
    return float(np.mean(measured == VALUES[attribute].index(word))) if len(samples) else float("nan")
