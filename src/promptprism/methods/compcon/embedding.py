"""What CompCon needs from CLIP: images and texts into one embedding space.

:class:`ClipEmbedder` is the protocol; :class:`TransformersClip` adapts the one CLIP wrapper of the encoder
layer (:class:`promptprism.embed.clip.CLIPEncoder`, a transformers ``CLIPModel`` loaded from a local path or
the local Hugging Face cache with ``local_files_only``: nothing is downloaded) to it, with raw (not
normalised) projected features. The verification maths (:mod:`.verify`) only ever sees the arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from ...errors import InputError, OptionError


class ClipEmbedder(Protocol):
    """Images and texts -> arrays in one space."""

    def embed_images(self, images: Sequence[Any]) -> np.ndarray: ...

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray: ...


class TransformersClip:
    """CLIP image/text embeddings (CPU by default), batched, float32: the encoder layer's CLIP, loaded now."""

    def __init__(
        self, model: str = "openai/clip-vit-base-patch32", device: str = "cpu", batch_size: int = 32
    ) -> None:
        from ...embed.clip import CLIPEncoder

        try:
            self.encoder = CLIPEncoder(model, device=device, batch_size=int(batch_size), normalize=False)
            self.encoder.load()
        except OptionError as exc:
            raise InputError(
                f"cannot load CLIP model {model!r} from local files (nothing is downloaded): "
                f"{exc}; pass clip_model= a local folder holding a CLIP model"
            ) from None
        self.name = model
        self.device = device
        self.batch_size = int(batch_size)

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        """(n, projection_dim) image features."""
        return self.encoder.encode_images(images)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """(n, projection_dim) text features."""
        return self.encoder.encode_texts(list(texts))
