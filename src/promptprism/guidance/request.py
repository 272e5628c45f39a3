"""What ``promptprism generate --guide-reference`` hands a generator: the reference pairs and the step sizes.

The generator knows how its prompts become conditions and how its images become pixels, so it turns the
request into a :class:`~promptprism.guidance.PromptSplitGuidance` (e.g.
``promptprism.models.fashion_guidance``); this module only carries and validates the values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from .guide import _finite_nonnegative


@dataclass(frozen=True)
class GuidanceRequest:
    """Reference pairs (prompt, uint8 image array) to guide toward, with ``scale`` and ``rho`` (eq. 5)."""

    reference_prompts: Sequence[str]
    reference_images: Sequence[Any]
    scale: float = 1.0
    rho: float = 0.0
    source: str = "reference"

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", _finite_nonnegative(self.scale, "scale"))
        object.__setattr__(self, "rho", _finite_nonnegative(self.rho, "rho"))
        if not len(self.reference_prompts):
            raise InputError(f"{self.source}: no reference rows to guide toward")
        if len(self.reference_prompts) != len(self.reference_images):
            raise InputError(f"{self.source}: {len(self.reference_prompts)} prompts for "
                             f"{len(self.reference_images)} images")

    def describe(self) -> dict:
        """The request's settings, as recorded in the manifest's settings."""
        return {"reference": self.source, "reference_rows": len(self.reference_prompts), "scale": self.scale,
                "rho": self.rho}
