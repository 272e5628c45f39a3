"""What CompCon needs from CLIP: images and texts into one embedding space.

:class:`ClipEmbedder` is the protocol; :class:`TransformersClip` adapts the one CLIP wrapper of the encoder
layer (:class:`promptprism.embed.clip.CLIPEncoder`, a transformers ``CLIPModel`` loaded from a local path or
the local Hugging Face cache with ``local_files_only``: nothing is downloaded; or, for ``open_clip:X``,
:class:`promptprism.embed.openclip.OpenCLIPEncoder`) to it, with raw (not
normalised) projected features. The verification maths (:mod:`.verify`) only ever sees the arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ...errors import InputError, OptionError


class ClipEmbedder(Protocol):
    """Images and texts -> arrays in one space."""

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        """Images -> (n, d) embeddings."""

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Texts -> (n, d) embeddings in the images' space."""


class TransformersClip:
    """CLIP image/text embeddings (CPU by default), batched, float32: the encoder layer's CLIP, loaded now."""

    def __init__(
        self, model: str = "openai/clip-vit-base-patch32", device: str = "cpu", batch_size: int = 32
    ) -> None:
        from ...embed.registry import clip_encoder

        try:
            self.encoder = clip_encoder(model, device=device, batch_size=int(batch_size), normalize=False)
            self.encoder.load()
            if "text" not in self.encoder.modalities:  # (an image-only open_clip folder: says why)
                self.encoder.tokenizer()
        except OptionError as exc:
            raise InputError(
                f"cannot load CLIP model {model!r} from local files (nothing is downloaded): "
                f"{exc}; pass clip_model= a local folder holding a CLIP model", parameter="clip_model"
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


class LazyClip:
    """A CLIP embedder (``embed_images``/``embed_texts``) loaded on first use.

    ``spec``: a local CLIP folder or a hub name already in the local cache, or ``open_clip:FOLDER_OR_HUB_ID``
    (loaded with :class:`TransformersClip`), or ``module:factory`` naming a class or
    object with ``embed_images``/``embed_texts``.
    """

    def __init__(self, spec: str) -> None:
        self.name = spec
        self._model: Any = None

    def _get(self) -> Any:
        if self._model is None:
            if ":" in self.name and not Path(self.name).exists() and not self.name.startswith("open_clip:"):
                from .image_sources import import_object

                obj = import_object(self.name, what="CLIP embedder")
                self._model = obj() if isinstance(obj, type) or not hasattr(obj, "embed_images") else obj
            else:
                self._model = TransformersClip(self.name)
        return self._model

    def embed_images(self, images: Any) -> Any:
        """Image embeddings (n x d), loading the model first if needed."""
        return self._get().embed_images(images)

    def embed_texts(self, texts: Any) -> Any:
        """Text embeddings (n x d), loading the model first if needed."""
        return self._get().embed_texts(texts)
