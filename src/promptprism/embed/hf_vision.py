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
    as_float32,
    l2_normalize,
    model_fingerprint,
    offline_env,
    quiet_hf_progress,
    to_rgb,
)

KINDS = ("dinov2", "siglip")


def resolve_model_path(name_or_path: str, *, option: str) -> Path:
    """A local folder, or a hub name already in the local cache (never downloads)."""
    p = Path(name_or_path).expanduser()
    if p.is_dir():
        return p
    offline_env()
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name_or_path, local_files_only=True))
    except Exception:
        raise OptionError(f"{option} {name_or_path!r}: not a local folder and not in the local Hugging Face "
                          f"cache (nothing is downloaded)") from None


def model_type(path: Path) -> str | None:
    """``model_type`` of a transformers folder's config.json (None when unreadable)."""
    try:
        return json.loads((path / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError):
        return None


class VisionEncoder:
    """A DINOv2 or SigLIP checkpoint as an encoder (see the module docstring)."""

    def __init__(self, name_or_path: str | Path, *, kind: str | None = None, device: str = "cpu",
                 batch_size: int = 64, option: str = "--image-model") -> None:
        self.path = resolve_model_path(str(name_or_path), option=option)
        found = model_type(self.path)
        kind = kind or found
        if kind not in KINDS or (found is not None and found != kind):
            raise OptionError(f"{option} {str(name_or_path)!r}: config.json says model_type {found!r}; "
                              f"expected {kind if kind in KINDS else ' or '.join(KINDS)}")
        self.kind = kind
        self.device = device
        self.batch_size = batch_size
        self.option = option
        has_tokenizer = any((self.path / f).is_file() for f in ("tokenizer.json", "spiece.model",
                                                                 "tokenizer_config.json"))
        self.modalities = frozenset({"image", "text"} if kind == "siglip" and has_tokenizer else {"image"})
        self.identity = f"{kind}-{self.path.name}-{model_fingerprint(self.path)}-l2"
        self._model = None

    def load(self):
        """(model, image processor), loaded once, offline."""
        if self._model is None:
            offline_env()
            quiet_hf_progress()
            from transformers import AutoImageProcessor, AutoModel

            try:
                self._processor = AutoImageProcessor.from_pretrained(str(self.path), local_files_only=True)
                self._model = AutoModel.from_pretrained(str(self.path), local_files_only=True)
            except (OSError, ValueError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise OptionError(f"{self.option} {str(self.path)!r}: cannot be loaded offline "
                                  f"({first})") from None
            self._model = self._model.to(self.device).eval()
        return self._model, self._processor

    def encode_images(self, images: Sequence[ImageLike]) -> np.ndarray:
        """(n, d) L2-normalised image features."""
        import torch

        model, proc = self.load()
        parts = []
        for start in range(0, len(images), self.batch_size):
            batch = [to_rgb(im, where=f"image {start + i}")
                     for i, im in enumerate(images[start:start + self.batch_size])]
            pix = proc(images=batch, return_tensors="pt")["pixel_values"].to(self.device)
            with torch.inference_mode():
                if self.kind == "dinov2":
                    out = model(pixel_values=pix).pooler_output
                else:
                    out = model.get_image_features(pixel_values=pix)
                    out = getattr(out, "pooler_output", out) if not hasattr(out, "shape") else out
            parts.append(as_float32(out))
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
                out = getattr(out, "pooler_output", out) if not hasattr(out, "shape") else out
            parts.append(as_float32(out))
        return l2_normalize(np.concatenate(parts)) if parts else np.zeros((0, 0), np.float32)
