"""Prompt-output alignment in a joint embedding space: CLIPScore (Hessel et al. 2021).

CLIPScore(c, v) = w * max(cos(E_c, E_v), 0), w = 2.5 (Hessel et al. 2021, eq. 1), for a prompt embedding
E_c and an output embedding E_v from one joint model (CLIP, SigLIP, open_clip). torchmetrics' CLIPScore is
max(100 * mean cos, 0): w = 100 and the clamp on the mean, not per sample.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InputError, OptionError

#: Hessel et al.'s rescaling weight
CLIPSCORE_WEIGHT = 2.5


def check_joint_space(prompt_dim: int, output_dim: int, *, prompt_space: str | None = None,
                      output_space: str | None = None) -> None:
    """Refuse alignment between embeddings of different spaces (dimensions, or named encoders that differ)."""
    if prompt_dim != output_dim:
        raise InputError(f"alignment needs prompts and outputs embedded by one joint model (CLIP, SigLIP, "
                         f"open_clip); the prompt embeddings have {prompt_dim} dimensions and the outputs "
                         f"{output_dim}")
    if prompt_space and output_space and prompt_space != output_space:
        raise InputError(f"alignment needs prompts and outputs embedded by one joint model; the prompts "
                         f"come from {prompt_space} and the outputs from {output_space}")


def cosine_rows(a: Any, b: Any) -> np.ndarray:
    """cos(a_i, b_i) for each row pair, in float64."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    num = np.einsum("ij,ij->i", a, b)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    if np.any(den == 0):
        raise InputError(f"row {int(np.flatnonzero(den == 0)[0])} (0-based) has a zero embedding; its cosine "
                         "similarity is undefined")
    return num / den


def clip_scores(prompt_embeddings: Any, output_embeddings: Any, *, weight: float = CLIPSCORE_WEIGHT
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per pair: (CLIPScore = w max(cos, 0) (Hessel et al. 2021, eq. 1), the raw cosine)."""
    if not weight > 0:
        raise OptionError(f"weight must be > 0, got {weight!r}")
    check_joint_space(prompt_embeddings.shape[1], output_embeddings.shape[1])
    if prompt_embeddings.shape[0] != output_embeddings.shape[0]:
        raise InputError(f"{prompt_embeddings.shape[0]} prompt and {output_embeddings.shape[0]} output "
                         "embeddings; alignment needs one prompt per output")
    cos = cosine_rows(prompt_embeddings, output_embeddings)
    return weight * np.maximum(cos, 0.0), cos
