"""The pixel encoder: resize to size x size RGB, scale to [0, 1], flatten (float32, not normalised).

For small images (digits, icons) and for the region method, which works on pixels. No model, no torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..data.imageio import to_rgb
from .base import ImageLike


class PixelEncoder:
    """Images -> their ``size`` x ``size`` RGB pixels in [0, 1], flattened (3 size² dimensions)."""

    modalities = frozenset({"image"})

    def __init__(self, size: int = 32):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            from ..errors import OptionError

            raise OptionError(f"pixel size must be a positive integer, got {size!r}")
        self.size = size
        self.identity = f"pixels-v1-{size}x{size}-rgb-bilinear"

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Not supported: the pixel encoder embeds images only (an :class:`OptionError`)."""
        from ..errors import OptionError

        raise OptionError("the pixel encoder embeds images only; pick a text model for texts")

    def encode_images(self, images: Sequence[ImageLike]) -> np.ndarray:
        """(len(images), 3 size²) float32: each image read by :func:`~promptprism.embed.base.to_rgb`,
        resized bilinearly, scaled to [0, 1]."""
        from PIL import Image

        out = np.empty((len(images), self.size * self.size * 3), dtype=np.float32)
        for i, img in enumerate(images):
            im = to_rgb(img, where=f"image {i}").resize((self.size, self.size), Image.BILINEAR)
            out[i] = np.asarray(im, dtype=np.float32).reshape(-1) / 255.0
        return out
