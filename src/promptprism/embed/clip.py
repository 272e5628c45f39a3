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
    as_float32,
    l2_normalize,
    model_fingerprint,
    offline_env,
    quiet_hf_progress,
    to_rgb,
)


def resolve_clip_path(name_or_path: str) -> Path:
    """A local folder, or a hub name already in the local cache (never downloads)."""
    p = Path(name_or_path).expanduser()
    if p.is_dir():
        return p
    if p.exists():
        raise OptionError(f"clip_model {name_or_path!r}: is a file; expected a model folder or a hub name")
    offline_env()
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name_or_path, local_files_only=True))
    except Exception:
        raise OptionError(f"clip_model {name_or_path!r}: not a local folder and not in the local Hugging "
                          f"Face cache (nothing is downloaded); pass the folder of a CLIP "
                          f"checkpoint") from None


def _features(out) -> np.ndarray:
    # transformers < 5 returns the projected tensor; 5.x returns an output object whose pooler_output is it
    if hasattr(out, "pooler_output") and not hasattr(out, "shape"):
        out = out.pooler_output
    return as_float32(out)


class CLIPEncoder:
    """CLIP text and image embeddings from a local transformers checkpoint, batched, L2-normalised or raw."""
    modalities = frozenset({"text", "image"})

    def __init__(self, name_or_path: str | Path, *, device: str = "cpu", batch_size: int = 64,
                 normalize: bool = True):
        self.path = resolve_clip_path(str(name_or_path))
        cfg = self.path / "config.json"
        if not cfg.is_file():
            raise OptionError(f"clip_model {str(name_or_path)!r}: {self.path} has no config.json; not a "
                              f"transformers checkpoint")
        self.device = device
        self.batch_size = batch_size
        self.normalize = normalize
        self.identity = f"clip-{self.path.name}-{model_fingerprint(self.path)}-{'l2' if normalize else 'raw'}"
        self._model = None
        self._processor = None

    def load(self):
        """The model and processor, loaded once (offline); an OptionError names the folder if they cannot."""
        if self._model is None:
            offline_env()
            quiet_hf_progress()
            try:
                from transformers import CLIPModel, CLIPProcessor
            except ImportError:
                raise OptionError("CLIP needs transformers (pip install transformers)") from None
            try:
                self._processor = CLIPProcessor.from_pretrained(str(self.path), local_files_only=True)
                model = CLIPModel.from_pretrained(str(self.path), local_files_only=True)
            except (OSError, ValueError) as exc:
                raise OptionError(f"clip_model {str(self.path)!r}: cannot be loaded offline "
                                  f"({exc})") from None
            self._model = model.to(self.device).eval()
        return self._model, self._processor

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
                parts.append(_features(model.get_text_features(**enc)))
        if not parts:
            return np.zeros((0, model.config.projection_dim), dtype=np.float32)
        return self._finish(np.concatenate(parts))

    def encode_images(self, images: Sequence[ImageLike]) -> np.ndarray:
        """Images -> float32 (n, d) CLIP image features, in batches."""
        import torch

        model, proc = self.load()
        parts = []
        for start in range(0, len(images), self.batch_size):
            chunk = images[start : start + self.batch_size]
            batch = [to_rgb(im, where=f"image {start + i}") for i, im in enumerate(chunk)]
            pix = proc.image_processor(images=batch, return_tensors="pt")["pixel_values"].to(self.device)
            with torch.inference_mode():
                parts.append(_features(model.get_image_features(pixel_values=pix)))
        if not parts:
            return np.zeros((0, model.config.projection_dim), dtype=np.float32)
        return self._finish(np.concatenate(parts))
