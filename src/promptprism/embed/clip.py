"""CLIP image and text encoder through ``transformers`` (CLIPModel + CLIPProcessor), offline only.

Any CLIP checkpoint in a local folder (``save_pretrained`` layout) or already in the user's Hugging Face
cache (``openai/clip-vit-base-patch32``, resolved with ``local_files_only``). Images and texts land in one
joint space; the outputs are the projected features, float32 and L2-normalised (CLIP's cosine convention).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import OptionError
from .base import (
    ImageLike,
    PretrainedEncoder,
    l2_normalize,
    projected_features,
)


class CLIPEncoder(PretrainedEncoder):
    """CLIP text and image embeddings from a local transformers checkpoint, batched, L2-normalised or raw."""

    modalities = frozenset({"text", "image"})
    model_class = "CLIPModel"
    processor_class = "CLIPProcessor"

    def __init__(self, name_or_path: str | Path, *, device: str = "cpu", batch_size: int = 64,
                 normalize: bool = True):
        super().__init__(name_or_path, option="clip_model", device=device, batch_size=batch_size,
                         hint="; pass the folder of a CLIP checkpoint")
        cfg = self.path / "config.json"
        if not cfg.is_file():
            raise OptionError(f"clip_model {str(name_or_path)!r}: {self.path} has no config.json; not a "
                              f"transformers checkpoint")
        self.normalize = normalize
        self.identity = self.fingerprinted("clip", "l2" if normalize else "raw")

    def _finish(self, x: np.ndarray) -> np.ndarray:
        return l2_normalize(x) if self.normalize else x.astype(np.float32)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Texts -> float32 (n, d) CLIP text features (truncated to the model's length), in batches."""
        import torch

        model, proc = self.load()
        parts = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            enc = proc.tokenizer(batch, padding=True, truncation=True, return_tensors="pt",
                                 max_length=model.config.text_config.max_position_embeddings)
            enc = {k: v.to(self.device) for k, v in enc.items()}
            with torch.inference_mode():
                parts.append(projected_features(model.get_text_features(**enc)))
        if not parts:
            return np.zeros((0, model.config.projection_dim), dtype=np.float32)
        return self._finish(np.concatenate(parts))

    def token_counts(self, texts: Sequence[str]) -> tuple[np.ndarray, int]:
        """Tokens per text before truncation (start and end tokens included), and the context length past
        which :meth:`encode_texts` truncates: the prompts it embeds only in part are those above it."""
        model, proc = self.load()
        ids = proc.tokenizer(list(texts), truncation=False)["input_ids"]
        return np.asarray([len(i) for i in ids], dtype=np.int64), int(
            model.config.text_config.max_position_embeddings)

    def encode_images(self, images: Sequence[ImageLike]) -> np.ndarray:
        """Images -> float32 (n, d) CLIP image features, in batches."""
        import torch

        model, _ = self.load()
        parts = []
        for pix in self.pixel_batches(images):
            with torch.inference_mode():
                parts.append(projected_features(model.get_image_features(pixel_values=pix)))
        if not parts:
            return np.zeros((0, model.config.projection_dim), dtype=np.float32)
        return self._finish(np.concatenate(parts))
