"""Guiding a diffusion model's sampler with PromptSplit (PromptSplit paper, section 4, eq. 5).

* :func:`sample`: one sampling loop for diffusers-style denoisers (class labels or text encoder states),
  DDIM by default, CFG, batched over prompts and seeded per sample, with an optional ``guidance=``.
* :class:`PromptSplitGuidance`: the eq. 5 guidance toward (or away from) a reference set, exact or with
  random features for large references.
* the differentiable losses :func:`promptsplit_distance`, :func:`joint_diversity` and their random-feature
  forms.

torch (and diffusers, for the DDIM scheduler) are imported inside the functions that use them.
"""

from .guide import SCHEDULES, PromptSplitGuidance, resolve_schedule
from .losses import (
    joint_diversity,
    joint_diversity_rff,
    promptsplit_distance,
    promptsplit_distance_rff,
    reference_covariance,
)
from .request import GuidanceRequest
from .sampler import SAMPLERS, Guidance, as_condition_kwargs, predicted_x0, sample, sample_seeds

__all__ = [
    "SAMPLERS",
    "SCHEDULES",
    "Guidance",
    "GuidanceRequest",
    "PromptSplitGuidance",
    "as_condition_kwargs",
    "joint_diversity",
    "joint_diversity_rff",
    "predicted_x0",
    "promptsplit_distance",
    "promptsplit_distance_rff",
    "reference_covariance",
    "resolve_schedule",
    "sample",
    "sample_seeds",
]
