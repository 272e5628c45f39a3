"""What CompCon needs from CLIP: images and texts into one embedding space.

:class:`ClipEmbedder` is the protocol; :class:`TransformersClip` is a thin adapter over a transformers
``CLIPModel`` loaded from a local path or the local Hugging Face cache (``local_files_only=True``: nothing is
downloaded). The verification maths (:mod:`.verify`) only ever sees the arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from ...errors import InputError


class ClipEmbedder(Protocol):
    def embed_images(self, images: Sequence[Any]) -> np.ndarray: ...

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray: ...


class TransformersClip:
    """CLIP image/text embeddings via transformers (CPU by default), batched, float32."""

    def __init__(
        self, model: str = "openai/clip-vit-base-patch32", device: str = "cpu", batch_size: int = 32
    ) -> None:
        try:
            from transformers import CLIPModel, CLIPProcessor
        except ImportError as exc:  # pragma: no cover - transformers is an optional dependency
            raise InputError(f"CLIP verification needs transformers and torch ({exc})") from None
        try:
            self.model = CLIPModel.from_pretrained(model, local_files_only=True).to(device).eval()
            self.processor = CLIPProcessor.from_pretrained(model, local_files_only=True)
        except (OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(
                f"cannot load CLIP model {model!r} from local files (nothing is downloaded): "
                f"{first}; pass clip_model= a local folder holding a CLIP model"
            ) from None
        self.name = model
        self.device = device
        self.batch_size = int(batch_size)

    def _features(self, out: Any) -> Any:
        # transformers >= 5 may return a model output object instead of a tensor
        return out if hasattr(out, "detach") else getattr(out, "pooler_output", out[0])

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        import torch

        from .generators import load_image

        chunks = []
        for i in range(0, len(images), self.batch_size):
            batch = [load_image(im) for im in images[i : i + self.batch_size]]
            inputs = self.processor(images=batch, return_tensors="pt").to(self.device)
            with torch.no_grad():
                chunks.append(self._features(self.model.get_image_features(**inputs)).float().cpu().numpy())
        return (
            np.concatenate(chunks) if chunks else np.zeros((0, self.model.config.projection_dim), np.float32)
        )

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        chunks = []
        for i in range(0, len(texts), self.batch_size):
            inputs = self.processor(
                text=list(texts[i : i + self.batch_size]), return_tensors="pt", padding=True, truncation=True
            ).to(self.device)
            with torch.no_grad():
                chunks.append(self._features(self.model.get_text_features(**inputs)).float().cpu().numpy())
        return (
            np.concatenate(chunks) if chunks else np.zeros((0, self.model.config.projection_dim), np.float32)
        )
