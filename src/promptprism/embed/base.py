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
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from ..data.imageio import to_rgb
from ..errors import OptionError

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
    """``auto``/None -> cuda when torch sees a GPU, else cpu; 'torch' (the array core's torch-on-the-CPU
    backend, ``promptprism.backend``) -> cpu; otherwise a torch device string."""
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
    if d == "torch":
        return "cpu"
    raise OptionError(f"device must be auto, cpu, torch, cuda, cuda:N or mps, got {device!r}")


def check_batch_size(batch_size: Any) -> int:
    """``batch_size`` as an int; an OptionError unless it is a positive integer."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise OptionError(f"batch_size must be a positive integer, got {batch_size!r}")
    return int(batch_size)


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


def load_pretrained(path: str | os.PathLike, *, model: str, processor: str, option: str, device: str):
    """``(model, processor)`` of the transformers checkpoint folder ``path``, loaded offline, the model moved
    to ``device`` in eval mode.

    ``model`` and ``processor`` name transformers classes (e.g. ``"CLIPModel"``, ``"CLIPProcessor"``); they
    are imported only after :func:`offline_env`, so no library tries the network. Failures are OptionErrors
    naming ``option`` and the folder.
    """
    offline_env()
    quiet_hf_progress()
    try:
        import transformers
    except ImportError:
        raise OptionError(f"{option} needs transformers (pip install transformers)") from None
    try:
        proc = getattr(transformers, processor).from_pretrained(str(path), local_files_only=True)
        net = getattr(transformers, model).from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise OptionError(f"{option} {str(path)!r}: cannot be loaded offline ({first})") from None
    return net.to(device).eval(), proc


def resolve_model_path(name_or_path: str, *, option: str, hint: str = "") -> Path:
    """A local model folder, or a hub name already in the local Hugging Face cache (never downloads).

    Errors name ``option``; ``hint`` (e.g. ``"; pass the folder of a CLIP checkpoint"``) ends the message.
    """
    p = Path(name_or_path).expanduser()
    if p.is_dir():
        return p
    if p.exists():
        raise OptionError(f"{option} {name_or_path!r}: is a file; expected a model folder or a hub name")
    offline_env()
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name_or_path, local_files_only=True))
    except Exception:
        raise OptionError(f"{option} {name_or_path!r}: not a local folder and not in the local Hugging Face "
                          f"cache (nothing is downloaded){hint}") from None


def projected_features(out: Any) -> np.ndarray:
    """float32 features from a transformers forward: the tensor itself (transformers < 5's
    ``get_*_features``), or the ``pooler_output`` of an output object (5.x, and vision backbones)."""
    if hasattr(out, "pooler_output") and not hasattr(out, "shape"):
        out = out.pooler_output
    return as_float32(out)


def fold_batchnorm(net: Any, pairs: dict[str, str]) -> Any:
    """Fold each eval-mode batch norm into the convolution before it (``torch.nn.utils.fusion``), in place.

    ``pairs`` maps a convolution's attribute name to its batch norm's (``{"conv": "bn"}``); every module of
    ``net`` holding such a pair gets the fused convolution and an identity in the norm's place. The same
    function, one pass fewer over every activation map: inference is faster (about 1.5x for
    EfficientNet-Lite0 on a CPU) and the outputs differ by float rounding only."""
    import torch
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    for module in list(net.modules()):
        for conv_name, bn_name in pairs.items():
            conv, bn = getattr(module, conv_name, None), getattr(module, bn_name, None)
            if isinstance(conv, torch.nn.Conv2d) and isinstance(bn, torch.nn.BatchNorm2d):
                setattr(module, conv_name, fuse_conv_bn_eval(conv, bn))
                setattr(module, bn_name, torch.nn.Identity())
    return net


def listed_keys(label: str, keys: list[str]) -> str:
    """``"missing a, b, c and 4 more"``: state-dict keys for a one-line error."""
    return f"{label} {', '.join(keys[:3])}" + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")


def load_strictly(net: Any, state: dict, *, mismatch: str, ignored: Sequence[str] = (),
                  unmapped: Sequence[str] = ()) -> Any:
    """``net.load_state_dict(state, strict=True)``; a key mismatch or a shape error raises one OptionError
    line: ``mismatch`` followed by the missing / unexpected keys (``unmapped``: keys of the file that found
    no place in the network; keys of ``net`` ending in one of ``ignored`` may be absent)."""
    expected = set(net.state_dict())
    optional = {k for k in expected if k.endswith(tuple(ignored))} if ignored else set()
    missing = sorted(expected - set(state) - optional)
    unexpected = sorted(list(unmapped) + [k for k in state if k not in expected])
    if missing or unexpected:
        what = "; ".join(listed_keys(label, keys) for label, keys
                         in (("missing", missing), ("unexpected", unexpected)) if keys)
        raise OptionError(f"{mismatch} ({what})")
    try:
        net.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise OptionError(f"{mismatch} ({' '.join(str(exc).split())[:200]})") from None
    return net


def rgb_batches(images: Sequence[ImageLike], batch_size: int):
    """``images`` in lists of at most ``batch_size`` RGB PIL images (each checked by :func:`to_rgb`, its
    errors naming the image's position)."""
    for start in range(0, len(images), batch_size):
        chunk = images[start:start + batch_size]
        yield [to_rgb(im, where=f"image {start + i}") for i, im in enumerate(chunk)]


class PretrainedEncoder:
    """What the transformers checkpoint encoders share: the resolved folder (:func:`resolve_model_path`), the
    device and batch size, the cache identity and the (model, processor) loaded once, offline.

    Subclasses name the transformers classes in ``model_class`` and ``processor_class``.
    """

    model_class: ClassVar[str] = "AutoModel"
    processor_class: ClassVar[str] = "AutoProcessor"

    def __init__(self, name_or_path: str | os.PathLike, *, option: str, device: str, batch_size: int,
                 hint: str = "") -> None:
        self.path = resolve_model_path(str(name_or_path), option=option, hint=hint)
        self.option = option
        self.device = device
        self.batch_size = batch_size
        self._model = None
        self._processor = None

    def fingerprinted(self, kind: str, suffix: str) -> str:
        """The cache identity ``KIND-FOLDER-FINGERPRINT-SUFFIX`` (:func:`model_fingerprint` of the folder)."""
        return f"{kind}-{self.path.name}-{model_fingerprint(self.path)}-{suffix}"

    def load(self):
        """``(model, processor)``, loaded once, offline; an OptionError names the folder if they cannot."""
        if self._model is None:
            self._model, self._processor = load_pretrained(self.path, model=self.model_class,
                                                           processor=self.processor_class,
                                                           option=self.option, device=self.device)
        return self._model, self._processor

    def pixel_batches(self, images: Sequence[ImageLike]):
        """The images' ``pixel_values`` tensors on the device, ``batch_size`` images at a time (each image
        checked by :func:`to_rgb`)."""
        _, proc = self.load()
        proc = getattr(proc, "image_processor", proc)  # a joint processor (CLIP) holds the image one
        for batch in rgb_batches(images, self.batch_size):
            yield proc(images=batch, return_tensors="pt")["pixel_values"].to(self.device)


def read_state_dict(path: str | os.PathLike, where: str) -> dict:
    """The tensors of a weights file (``.safetensors``, or a torch pickle read with ``weights_only``), a
    ``{'state_dict': ...}`` wrapper and ``module.`` prefixes removed. A damaged or foreign file raises one
    OptionError line that starts with ``where`` (e.g. "image_model inception") and names the file."""
    path = Path(path)
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(str(path))
        else:
            import torch

            state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a damaged or foreign file: one line, not a traceback
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise OptionError(f"{where}: cannot read {str(path)!r} ({first})") from None
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise OptionError(f"{where}: {str(path)!r} holds no state dict")
    return {k.removeprefix("module."): v for k, v in state.items()}
