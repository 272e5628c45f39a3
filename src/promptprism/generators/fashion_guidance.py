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
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError

#: the prompt bandwidth of one-hot class prompts
SIGMA_PROMPT = 0.5


def reference_pixels(images: list[Any], image_size: int, source: str = "reference") -> np.ndarray:
    """uint8 images (H, W) or (H, W, 3) of any size -> pixel rows (n, s * s) in [-1, 1] at ``image_size``."""
    from .fashion import resized

    gray = []
    for i, im in enumerate(images):
        a = np.asarray(im)
        if a.ndim == 3:
            a = a[..., :3].mean(axis=2)
        if a.ndim != 2:
            raise InputError(f"{source}: image {i} has shape {a.shape}; expected a grey or RGB image")
        gray.append(np.asarray(resized(a[None].astype(np.uint8), image_size))[0, 0])
    return np.stack(gray).reshape(len(gray), -1) / 127.5 - 1.0


def fashion_guidance(request: Any, prompts: list[str], image_size: int):
    """The eq. 5 guidance of ``request`` for a batch of ``prompts`` (pixels, one-hot class prompts)."""
    from ..guidance import PromptSplitGuidance
    from .fashion import NULL_CLASS, prompt_classes

    onehot = np.eye(NULL_CLASS)
    ref_classes = prompt_classes(list(request.reference_prompts))
    pixels = reference_pixels(list(request.reference_images), image_size, request.source)
    return PromptSplitGuidance(pixels, onehot[ref_classes], onehot[prompt_classes(prompts)],
                               scale=request.scale, rho=request.rho, sigma_prompt=SIGMA_PROMPT,
                               min_sigma_output=0.5 * float(np.sqrt(pixels.shape[1])))
