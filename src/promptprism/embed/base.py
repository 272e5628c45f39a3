"""The encoder protocol and what every encoder shares: devices, image decoding, model fingerprints.

An encoder maps texts or images to a float32 matrix (one row per item). ``identity`` names the model and
every option that changes its numbers; the embedding cache is keyed by it, so two encoders with different
identities never share cache entries.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import InputError, OptionError

#: an image an encoder accepts: a file path, an (H, W[, C]) array, or a PIL image
ImageLike = Any


@runtime_checkable
class Encoder(Protocol):
    """Texts and/or images -> float32 (n, d) embeddings."""

    identity: str
    #: the modalities this encoder embeds: a subset of {"text", "image"}
    modalities: frozenset[str]

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Texts -> float32 (n, d) embeddings."""

    def encode_images(self, images: Sequence[ImageLike]) -> np.ndarray:
        """Images -> float32 (n, d) embeddings."""


def resolve_device(device: str | None) -> str:
    """``auto``/None -> cuda when torch sees a GPU, else cpu; otherwise a torch device string."""
    if device is None or device == "auto":
        try:
            import torch
        except ImportError:
            return "cpu"
        return "cuda" if torch.cuda.is_available() else "cpu"
    d = str(device).strip().lower()
    if d.startswith("cuda") and (d == "cuda" or (d.startswith("cuda:") and d[5:].isdigit())):
        try:
            import torch

            n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        except ImportError:
            n = 0
        index = int(d[5:]) if ":" in d else 0
        if index >= n:
            why = "no CUDA device is available" if n == 0 else f"only {n} CUDA device(s) here"
            raise OptionError(f"device {device}: {why}; use device=cpu or device=auto")
        return d
    if d in ("cpu", "mps"):
        return d
    raise OptionError(f"device must be auto, cpu, cuda, cuda:N or mps, got {device!r}")


def check_batch_size(batch_size: Any) -> int:
    """``batch_size`` as an int; an OptionError unless it is a positive integer."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise OptionError(f"batch_size must be a positive integer, got {batch_size!r}")
    return int(batch_size)


def to_rgb(image: ImageLike, where: str = "image"):
    """A PIL RGB image from a path, bytes, an array (H, W), (H, W, 3|4) or a PIL image.

    Files and PIL images go through :func:`promptprism.data.imageio.read_rgb` / ``as_rgb`` (pixel limit,
    16-bit scaling, palette and alpha rules documented there)."""
    from PIL import Image

    from ..data.imageio import as_rgb, read_rgb

    if isinstance(image, (str, os.PathLike)):
        return read_rgb(image, where if str(image) in where else f"{where}: image file {str(image)!r}")
    if isinstance(image, (bytes, bytearray)):
        return read_rgb(image, where)
    if isinstance(image, Image.Image):
        return as_rgb(image, where)
    arr = np.asarray(image)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[..., 0]
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (3, 4)):
        raise InputError(f"{where}: an image array must be (H, W), (H, W, 3) or (H, W, 4), got {arr.shape}")
    if arr.dtype != np.uint8:
        a = arr.astype(np.float64)
        if not np.isfinite(a).all():
            raise InputError(f"{where}: the image array holds NaN or inf")
        if a.max(initial=0.0) <= 1.0:  # floats in [0, 1]
            a = a * 255.0
        arr = np.clip(np.rint(a), 0, 255).astype(np.uint8)
    return Image.fromarray(arr).convert("RGB")


def model_fingerprint(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """A short hash of a model folder: relative names, sizes, small files whole, large files' ends.

    Cheap (reads at most 2 MiB per weight file) and changes when any file of the checkpoint changes size or
    its first or last MiB changes.
    """
    root = Path(path)
    h = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))
    for p in files:
        rel = p.relative_to(root).as_posix()
        if rel.split("/", 1)[0] in ("README.md",):
            continue
        size = p.stat().st_size
        h.update(f"{rel}\0{size}\0".encode())
        with open(p, "rb") as fh:
            if size <= 2 * chunk:
                h.update(fh.read())
            else:
                h.update(fh.read(chunk))
                fh.seek(-chunk, os.SEEK_END)
                h.update(fh.read(chunk))
    return h.hexdigest()[:16]


def as_float32(x: Any) -> np.ndarray:
    """A C-contiguous float32 numpy array from an array or a torch tensor."""
    if hasattr(x, "detach"):
        x = x.detach().to("cpu").float().numpy()
    return np.ascontiguousarray(np.asarray(x, dtype=np.float32))


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit Euclidean norm (zero rows stay zero), float32."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


def offline_env() -> None:
    """Models are only ever loaded from local files: make sure no library tries the network."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def quiet_hf_progress() -> None:
    """transformers' own "Loading weights" bars: promptprism shows its own progress instead."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass
