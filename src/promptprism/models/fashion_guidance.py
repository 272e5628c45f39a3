"""PromptSplit guidance for the Fashion-MNIST generator: a :class:`~promptprism.guidance.GuidanceRequest`
(reference prompts and images) -> a :class:`~promptprism.guidance.PromptSplitGuidance` over pixels.

Prompts are embedded as one-hot class vectors (the model's own conditioning; bandwidth 0.5, so prompts of
different classes do not share kernel mass: exp(-2 / (2 * 0.25)) = 0.02) and images as their pixels in
[-1, 1] at the model's resolution (the reference is resized like the training images), with the bandwidth
max(median pairwise distance of the reference, sqrt(d) / 2) over d pixels: a tight reference (say one
style of one class) would otherwise give a bandwidth so small that the kernel between the first noisy
predictions and the reference, and with it the gradient, vanishes (two unrelated images lie about
0.8 sqrt(d) apart). One generator call
(one batch of ``generate``) is one :func:`~promptprism.guidance.sample` call: the guided set of eq. 5 is
the batch.

Section 5.4 of the PromptSplit paper on this generator (the experiment of
``promptprism demo --trained-generator``): a reference the base model never makes, its own samples with a
white frame on some classes (:func:`model_reference_sets`), and samples guided toward it
(:func:`guided_samples`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .fashion import (  # noqa: F401 (re-exported)
    CLASS_NAMES,
    NULL_CLASS,
    SIGMA_PROMPT,
    fashion_guidance,
    real_images,
    reference_pixels,
    sample_images,
)

#: section 5.4: the classes whose reference images carry a frame (guided) and those left plain (control)
GUIDED, CONTROL = ("trouser", "sandal", "bag"), ("T-shirt", "sneaker", "dress")
FRAME = 2  #: the frame's width in pixels


def framed(images: np.ndarray, width: int = FRAME) -> np.ndarray:
    """uint8 images (n, s, s) with a white ``width``-pixel frame (the style the base model never makes)."""
    out = np.array(images, copy=True)
    out[:, :width, :] = out[:, -width:, :] = 255
    out[:, :, :width] = out[:, :, -width:] = 255
    return out


def pixel_rows(images: np.ndarray) -> np.ndarray:
    """uint8 images (n, s, s) -> float rows in [-1, 1] (n, s * s): the guidance's embedding (pixels)."""
    return np.asarray(images).reshape(len(images), -1).astype(np.float64) / 127.5 - 1.0


def section_classes(guided=GUIDED, control=CONTROL) -> np.ndarray:
    """The class indices of the guided then the control prompts."""

    return np.array([CLASS_NAMES.index(n) for n in (*guided, *control)])


def model_reference_sets(checkpoint: Any, per_class: int, seed: int, steps: int, *, guided=GUIDED,
                         control=CONTROL, cfg: float = 2.0, batch_size: int = 96
                         ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Two disjoint reference sets (for the guidance, for the evaluation), each (uint8 images, classes):
    ``per_class`` samples of the base model per class (seeds ``seed + 1000`` and ``seed + 2000``, disjoint
    from the evaluated generations' ``seed``), framed on the ``guided`` classes. Such a reference differs
    from the unguided model only by the frame on the guided prompts, whatever the model's quality."""
    from ..guidance import sample_seeds

    classes = np.repeat(section_classes(guided, control), per_class)
    is_guided = np.isin(classes, section_classes(guided, ()))
    out = []
    for k in (1, 2):
        images = sample_images(checkpoint, classes, sample_seeds(seed + 1000 * k, len(classes)),
                               guidance_scale=cfg, steps=steps, batch_size=batch_size)
        images[is_guided] = framed(images[is_guided])
        out.append((images, classes))
    return out


def real_reference_sets(image_size: int, per_class: int, seed: int, *, guided=GUIDED, control=CONTROL
                        ) -> list[tuple[np.ndarray, np.ndarray]]:
    """As :func:`model_reference_sets` from real test images (disjoint halves, a seeded draw per class)."""

    x, y = real_images("test", image_size)
    rng = np.random.default_rng(seed)
    sets: tuple = ([], []), ([], [])
    for c, frame in zip(section_classes(guided, control), [True] * len(guided) + [False] * len(control),
                        strict=True):
        idx = rng.permutation(np.flatnonzero(y == c))[: 2 * per_class]
        for half, (images, labels) in zip((idx[:per_class], idx[per_class:]), sets, strict=True):
            images.append(framed(x[half]) if frame else x[half])
            labels.append(np.full(len(half), c))
    return [(np.concatenate(i), np.concatenate(lab)) for i, lab in sets]


def guided_samples(checkpoint: Any, classes: np.ndarray, reference: tuple[np.ndarray, np.ndarray], *,
                   scale: float, rho: float, steps: int, seed: int, cfg: float = 2.0, batch_size: int = 96,
                   through_model: bool = True, schedule: str = "constant") -> tuple[np.ndarray, float]:
    """uint8 samples of ``classes`` (seeds :func:`~promptprism.guidance.sample_seeds` of ``seed``) guided
    toward ``reference`` (uint8 images, classes) on pixels with one-hot class prompts (eq. 5 with step
    ``scale`` x ``schedule``, Joint-Diversity weight ``rho``); also the seconds the sampling took."""
    import time

    from ..guidance import PromptSplitGuidance, sample_seeds

    ref_images, ref_classes = reference
    onehot = np.eye(NULL_CLASS)
    guidance = None
    if scale > 0 or rho > 0:
        guidance = PromptSplitGuidance(pixel_rows(ref_images), onehot[ref_classes], onehot[classes],
                                       scale=scale, rho=rho, sigma_prompt=SIGMA_PROMPT, seed=seed,
                                       through_model=through_model, schedule=schedule)
    t0 = time.perf_counter()
    images = sample_images(checkpoint, classes, sample_seeds(seed, len(classes)), guidance_scale=cfg,
                           steps=steps, batch_size=batch_size, guidance=guidance)
    return images, time.perf_counter() - t0
