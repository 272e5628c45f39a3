"""DINOv2 and SigLIP image encoders through ``transformers``, from a local folder or the local Hugging Face
cache (``local_files_only``: nothing is downloaded).

* DINOv2 (``model_type: dinov2``): the CLS token after the final layer norm (``pooler_output``);
* SigLIP (``model_type: siglip``): ``get_image_features`` (and ``get_text_features`` when the folder holds a
  tokenizer), the joint image-text space.

Outputs are float32 and L2-normalised. The identity holds the model type, the folder name and a fingerprint
of every file of the checkpoint, the image processor's configuration (the preprocessing) included.
Registry names: a model folder (its ``config.json`` says which), or ``dinov2:NAME`` / ``siglip:NAME`` for a
folder or a hub name already in the cache.
"""

from __future__ import annotations

import json
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

KINDS = ("dinov2", "siglip")


def model_type(path: Path) -> str | None:
    """``model_type`` of a transformers folder's config.json (None when unreadable)."""
    try:
        return json.loads((path / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError):
        return None


class VisionEncoder(PretrainedEncoder):
    """A DINOv2 or SigLIP checkpoint as an encoder (see the module docstring)."""

    model_class = "AutoModel"
    processor_class = "AutoImageProcessor"

    def __init__(self, name_or_path: str | Path, *, kind: str | None = None, device: str = "cpu",
                 batch_size: int = 64, option: str = "--image-model") -> None:
        super().__init__(name_or_path, option=option, device=device, batch_size=batch_size)
        found = model_type(self.path)
        kind = kind or found
        if kind not in KINDS or (found is not None and found != kind):
            raise OptionError(f"{option} {str(name_or_path)!r}: config.json says model_type {found!r}; "
                              f"expected {kind if kind in KINDS else ' or '.join(KINDS)}")
        self.kind = kind
        has_tokenizer = any((self.path / f).is_file() for f in ("tokenizer.json", "spiece.model",
                                                                 "tokenizer_config.json"))
        self.modalities = frozenset({"image", "text"} if kind == "siglip" and has_tokenizer else {"image"})
        self.identity = self.fingerprinted(kind, "l2")

    def encode_images(self, images: Sequence[ImageLike]) -> np.ndarray:
        """(n, d) L2-normalised image features."""
        import torch

        model, _ = self.load()
        parts = []
        for pix in self.pixel_batches(images):
            with torch.inference_mode():
                if self.kind == "dinov2":
                    out = model(pixel_values=pix)
                else:
                    out = model.get_image_features(pixel_values=pix)
            parts.append(projected_features(out))
        if not parts:
            return np.zeros((0, 0), np.float32)
        return l2_normalize(np.concatenate(parts))

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """SigLIP with a tokenizer: (n, d) L2-normalised text features; otherwise an error."""
        if "text" not in self.modalities:
            raise OptionError(f"{self.kind} {self.path.name}: embeds images only (no tokenizer in the "
                              f"folder)")
        import torch
        from transformers import AutoTokenizer

        model, _ = self.load()
        tok = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
        parts = []
        for start in range(0, len(texts), self.batch_size):
            enc = tok(list(texts[start:start + self.batch_size]), padding="max_length", truncation=True,
                      return_tensors="pt")
            with torch.inference_mode():
                out = model.get_text_features(input_ids=enc["input_ids"].to(self.device))
            parts.append(projected_features(out))
        return l2_normalize(np.concatenate(parts)) if parts else np.zeros((0, 0), np.float32)
