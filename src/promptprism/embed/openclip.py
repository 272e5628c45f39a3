"""open_clip checkpoints (ViT image tower + transformer text tower) run by transformers' ``CLIPModel``.

open_clip stores a model on the hub (or in a folder) as ``open_clip_config.json`` (``model_cfg``:
``embed_dim``, ``vision_cfg``, ``text_cfg``, ``quick_gelu``; ``preprocess_cfg``: mean, std, interpolation,
resize mode) and ``open_clip_model.safetensors`` or ``open_clip_pytorch_model.bin``. open_clip itself needs
torchvision (no build matches the pinned CPU torch), so its state dict is mapped onto ``CLIPModel``, which
is the same network (OpenAI CLIP's layout): each ``resblocks.N.attn.in_proj_weight`` splits into the
q/k/v projections, ``ln_1/ln_2`` -> ``layer_norm1/2``, ``mlp.c_fc/c_proj`` -> ``mlp.fc1/fc2``,
``visual.proj`` / ``text_projection`` (x @ P) -> the transposed linear projections, and the strict load
rejects any weight that is not mapped (layer scale, attentional pooling, timm or Hugging Face towers: those
architectures are refused by name before that).

Preprocessing (open_clip's, part of the identity): RGB, resize the short side to the image size
(``resize_mode`` shortest, or squash to a square), centre crop, scale to [0, 1], normalise with the
checkpoint's mean/std (OpenAI's by default). Texts need CLIP tokenizer files (``vocab.json`` +
``merges.txt`` or ``tokenizer.json``) in the folder, or, for open_clip's default OpenAI vocabulary, the
``openai/clip-vit-base-patch32`` tokenizer in the local cache (:func:`tokenizer_folder`); the text feature
is read at the end-of-text token. Outputs are float32, L2-normalised unless ``normalize=False``.

Registry name ``open_clip:FOLDER_OR_HUB_ID`` (``hf-hub:`` prefixes are accepted); hub ids resolve in the
local Hugging Face cache only: nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..data.imageio import to_rgb
from ..errors import OptionError
from .base import (
    ImageLike,
    l2_normalize,
    load_strictly,
    model_fingerprint,
    offline_env,
    projected_features,
    read_state_dict,
    resolve_model_path,
)

CONFIG_FILE = "open_clip_config.json"
#: the tokenizer of open_clip's default (OpenAI) vocabulary, used from the local cache when a folder has none
OPENAI_TOKENIZER = "openai/clip-vit-base-patch32"
WEIGHT_FILES = ("open_clip_model.safetensors", "open_clip_pytorch_model.safetensors",
                "open_clip_pytorch_model.bin")
OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)
#: open_clip options whose non-default values change the network beyond what CLIPModel computes
_VISION_DEFAULTS = {"timm_model_name": (None,), "ls_init_value": (None,),
                    "attentional_pool": (False, None), "no_ln_pre": (False, None), "pool_type": ("tok", None),
                    "global_average_pool": (False, None), "final_ln_after_pool": (False, None),
                    "pos_embed_type": ("learnable", None), "output_tokens": (False, None)}
_TEXT_DEFAULTS = {"hf_model_name": (None,), "ls_init_value": (None,), "embed_cls": (False, None),
                  "no_causal_mask": (False, None), "pool_type": ("argmax", None), "proj_bias": (False, None),
                  "proj_type": ("linear", None), "final_ln_after_pool": (False, None)}
_BLOCK_KEYS = {"ln_1": "layer_norm1", "ln_2": "layer_norm2", "mlp.c_fc": "mlp.fc1", "mlp.c_proj": "mlp.fc2",
               "attn.out_proj": "self_attn.out_proj"}
_TOP_KEYS = {"visual.class_embedding": "vision_model.embeddings.class_embedding",
             "visual.positional_embedding": "vision_model.embeddings.position_embedding.weight",
             "visual.conv1.weight": "vision_model.embeddings.patch_embedding.weight",
             "visual.ln_pre": "vision_model.pre_layrnorm", "visual.ln_post": "vision_model.post_layernorm",
             "token_embedding.weight": "text_model.embeddings.token_embedding.weight",
             "positional_embedding": "text_model.embeddings.position_embedding.weight",
             "ln_final": "text_model.final_layer_norm", "logit_scale": "logit_scale"}


def _check_supported(cfg: dict, defaults: dict, tower: str, where: str) -> None:
    for key, allowed in defaults.items():
        if cfg.get(key) not in allowed:
            raise OptionError(f"{where}: {tower} {key}={cfg.get(key)!r} is an open_clip architecture this "
                              f"loader does not map onto CLIP (ViT + text transformer only)")


def clip_config(model_cfg: dict, *, where: str = "open_clip", special: dict | None = None) -> Any:
    """The transformers ``CLIPConfig`` of an open_clip ``model_cfg`` (a ViT image tower and open_clip's
    text transformer); an OptionError names any option that makes the network something else.

    ``special``: the tokenizer's ``bos_token_id`` / ``eos_token_id`` / ``pad_token_id``; by default
    open_clip's (start and end of text the last two ids, padding 0). The text feature is read at the
    first end-of-text token, which is open_clip's argmax pooling when end-of-text is the largest id."""
    from transformers import CLIPConfig

    vision, text = dict(model_cfg.get("vision_cfg") or {}), dict(model_cfg.get("text_cfg") or {})
    if not isinstance(vision.get("layers", 12), int):
        raise OptionError(f"{where}: vision_cfg layers={vision.get('layers')!r} is a ResNet image tower; "
                          f"only ViT towers are mapped onto CLIP")
    _check_supported(vision, _VISION_DEFAULTS, "vision_cfg", where)
    _check_supported(text, _TEXT_DEFAULTS, "text_cfg", where)
    image_size, patch_size = vision.get("image_size", 224), vision.get("patch_size", 16)
    if isinstance(image_size, (list, tuple)):
        if len(set(image_size)) != 1:
            raise OptionError(f"{where}: non-square image_size {image_size} is not supported")
        image_size = image_size[0]
    act = "quick_gelu" if model_cfg.get("quick_gelu") else "gelu"
    width_v, width_t = int(vision.get("width", 768)), int(text.get("width", 512))
    embed_dim = int(model_cfg.get("embed_dim", 512))
    vocab = int(text.get("vocab_size", 49408))
    ids = {"bos_token_id": vocab - 2, "eos_token_id": vocab - 1, "pad_token_id": 0}
    ids.update({k: v for k, v in (special or {}).items() if v is not None})
    return CLIPConfig(
        vision_config=dict(hidden_size=width_v, intermediate_size=int(width_v * vision.get("mlp_ratio", 4.0)),
                           num_hidden_layers=int(vision.get("layers", 12)),
                           num_attention_heads=width_v // int(vision.get("head_width", 64)),
                           image_size=int(image_size), patch_size=int(patch_size), hidden_act=act,
                           layer_norm_eps=1e-5, projection_dim=embed_dim),
        text_config=dict(vocab_size=vocab, hidden_size=width_t,
                         intermediate_size=int(width_t * text.get("mlp_ratio", 4.0)),
                         num_hidden_layers=int(text.get("layers", 12)),
                         num_attention_heads=int(text.get("heads", 8)),
                         max_position_embeddings=int(text.get("context_length", 77)), hidden_act=act,
                         layer_norm_eps=1e-5, projection_dim=embed_dim, **ids),
        projection_dim=embed_dim)


def convert_state_dict(state: dict) -> tuple[dict, list[str]]:
    """open_clip (OpenAI CLIP layout) weights -> ``CLIPModel`` names, and the keys that have no mapping.

    ``in_proj_weight`` (3w x w) / ``in_proj_bias`` split row-wise into q, k, v; the projections
    ``visual.proj`` and ``text_projection`` (used as x @ P) become ``linear.weight = P.T``."""
    out, unmapped = {}, []
    for key, value in state.items():
        if key.endswith("attn_mask"):  # a buffer older checkpoints saved: the causal mask itself
            continue
        if key in ("visual.proj", "text_projection"):
            out["visual_projection.weight" if key == "visual.proj" else "text_projection.weight"] = value.T
            continue
        head, _, rest = key.partition("transformer.resblocks.")
        if rest and head in ("", "visual."):
            tower = "vision_model" if head else "text_model"
            layer, _, name = rest.partition(".")
            prefix = f"{tower}.encoder.layers.{layer}."
            if name in ("attn.in_proj_weight", "attn.in_proj_bias"):
                kind = name.rsplit("_", 1)[1]
                for proj, part in zip("qkv", value.chunk(3, dim=0), strict=True):
                    out[f"{prefix}self_attn.{proj}_proj.{kind}"] = part
                continue
            module, _, param = name.rpartition(".")
            if module in _BLOCK_KEYS:
                out[f"{prefix}{_BLOCK_KEYS[module]}.{param}"] = value
                continue
        else:
            module, _, param = key.rpartition(".")
            if key in _TOP_KEYS:
                out[_TOP_KEYS[key]] = value
                continue
            if module in _TOP_KEYS:
                out[f"{_TOP_KEYS[module]}.{param}"] = value
                continue
        unmapped.append(key)
    return out, unmapped


def _has_tokenizer_files(folder: Path) -> bool:
    return any((folder / f).is_file() for f in ("tokenizer.json", "vocab.json"))


def tokenizer_folder(path: Path, model_cfg: dict) -> Path | None:
    """Where the text tokenizer comes from: the checkpoint folder when it holds CLIP tokenizer files; else,
    for open_clip's default vocabulary (49,408 ids: OpenAI's BPE, which every such model shares), the
    ``openai/clip-vit-base-patch32`` tokenizer when it is in the local Hugging Face cache; else None (the
    model embeds images only). Nothing is downloaded."""
    if _has_tokenizer_files(path):
        return path
    text = model_cfg.get("text_cfg") or {}
    if int(text.get("vocab_size", 49408)) != 49408 or text.get("hf_tokenizer_name"):
        return None
    try:
        cached = resolve_model_path(OPENAI_TOKENIZER, option="tokenizer")
    except OptionError:
        return None
    return cached if _has_tokenizer_files(cached) else None


def tokenizer_hash(folder: Path) -> str:
    """A short sha256 of a folder's tokenizer files (part of the identity when they come from elsewhere)."""
    h = hashlib.sha256()
    for name in ("tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json"):
        if (folder / name).is_file():
            h.update(name.encode() + b"\0" + (folder / name).read_bytes())
    return h.hexdigest()[:12]


def preprocess(images: Sequence[ImageLike], *, size: int, mean=OPENAI_MEAN, std=OPENAI_STD,
               resample: str = "bicubic", resize_mode: str = "shortest", offset: int = 0) -> np.ndarray:
    """(n, 3, size, size) float32, open_clip's eval transform: resize (the short side to ``size``, the long
    side ``int(size * long / short)``; or ``squash`` to size x size), centre crop (top/left offsets rounded),
    / 255, (x - mean) / std."""
    from PIL import Image

    method = {"bicubic": Image.BICUBIC, "bilinear": Image.BILINEAR}[resample]
    m, s = np.asarray(mean, np.float32), np.asarray(std, np.float32)
    out = np.empty((len(images), 3, size, size), dtype=np.float32)
    for i, img in enumerate(images):
        im = to_rgb(img, where=f"image {offset + i}")
        w, h = im.size
        if resize_mode == "squash":
            new = (size, size)
        elif w <= h:
            new = (size, int(size * h / w))
        else:
            new = (int(size * w / h), size)
        if new != (w, h):
            im = im.resize(new, method)
        left, top = int(round((im.width - size) / 2.0)), int(round((im.height - size) / 2.0))
        arr = np.asarray(im.crop((left, top, left + size, top + size)), dtype=np.float32) / 255.0
        out[i] = ((arr - m) / s).transpose(2, 0, 1)
    return out


class OpenCLIPEncoder:
    """An open_clip checkpoint (folder or cached hub id) as a text + image encoder (module docstring)."""

    def __init__(self, name_or_path: str | Path, *, device: str = "cpu", batch_size: int = 64,
                 normalize: bool = True, option: str = "image_model") -> None:
        name = str(name_or_path).removeprefix("hf-hub:")
        self.where = f"{option} open_clip:{name}"
        self.path = resolve_model_path(name, option=f"{option} open_clip", hint="; pass a folder holding "
                                       f"{CONFIG_FILE} and open_clip weights")
        cfg_file = self.path / CONFIG_FILE
        try:
            cfg = json.loads(cfg_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise OptionError(f"{self.where}: cannot read {cfg_file} ({type(exc).__name__}); an open_clip "
                              f"folder holds {CONFIG_FILE}") from None
        self.model_cfg = cfg.get("model_cfg") or {}
        if not isinstance(self.model_cfg, dict) or not self.model_cfg.get("vision_cfg"):
            raise OptionError(f"{self.where}: {CONFIG_FILE} has no model_cfg.vision_cfg")
        self.weights = next((self.path / f for f in WEIGHT_FILES if (self.path / f).is_file()), None)
        if self.weights is None:
            raise OptionError(f"{self.where}: no weights in {str(self.path)!r} (expected one of "
                              f"{', '.join(WEIGHT_FILES)})")
        pre = cfg.get("preprocess_cfg") or {}
        vision = self.model_cfg["vision_cfg"]
        size = vision.get("image_size", 224)
        self.size = int(size[0] if isinstance(size, (list, tuple)) else size)
        self.mean = tuple(float(v) for v in pre.get("mean", OPENAI_MEAN))
        self.std = tuple(float(v) for v in pre.get("std", OPENAI_STD))
        self.resample = pre.get("interpolation", "bicubic")
        self.resize_mode = pre.get("resize_mode", "shortest")
        if self.resample not in ("bicubic", "bilinear") or self.resize_mode not in ("shortest", "squash"):
            raise OptionError(f"{self.where}: preprocess_cfg interpolation {self.resample!r} / resize_mode "
                              f"{self.resize_mode!r} not supported (bicubic or bilinear; shortest or squash)")
        clip_config(self.model_cfg, where=self.where)  # refuse other architectures now, not at first use
        self.tokenizer_path = tokenizer_folder(self.path, self.model_cfg)
        self.has_tokenizer = self.tokenizer_path is not None
        self.modalities = frozenset({"image", "text"} if self.has_tokenizer else {"image"})
        self.device, self.batch_size, self.normalize = device, batch_size, normalize
        pre_id = (f"{self.resize_mode}{self.size}-{self.resample}-mean{','.join(f'{v:g}' for v in self.mean)}"
                  f"-std{','.join(f'{v:g}' for v in self.std)}")
        borrowed = self.tokenizer_path not in (None, self.path)
        tok_id = f"-tok{tokenizer_hash(self.tokenizer_path)}" if borrowed else ""
        self.identity = (f"open_clip-{self.path.name}-{model_fingerprint(self.path)}-{pre_id}{tok_id}-"
                         f"{'l2' if normalize else 'raw'}")
        self._model = None
        self._tokenizer = None

    def load(self) -> tuple:
        """(model, tokenizer) loaded now (the tokenizer None for an image-only checkpoint), as
        :meth:`promptprism.embed.clip.CLIPEncoder.load`."""
        return self.model(), self.tokenizer() if self.has_tokenizer else None

    def tokenizer(self):
        """The CLIP tokenizer (:func:`tokenizer_folder`, loaded once); an OptionError when there is none."""
        if self._tokenizer is None:
            if not self.has_tokenizer:
                raise OptionError(f"{self.where}: embeds images only (no tokenizer.json or vocab.json + "
                                  f"merges.txt in {str(self.path)!r}, and no {OPENAI_TOKENIZER} tokenizer "
                                  f"in the local Hugging Face cache for its OpenAI vocabulary)")
            offline_env()
            from transformers import CLIPTokenizer

            self._tokenizer = CLIPTokenizer.from_pretrained(str(self.tokenizer_path), local_files_only=True)
        return self._tokenizer

    def model(self):
        """The mapped transformers ``CLIPModel``, eval mode, on the device (built and loaded once)."""
        if self._model is None:
            import torch
            from transformers import CLIPModel

            tok = self.tokenizer() if self.has_tokenizer else None
            special = {k: getattr(tok, k, None) for k in ("bos_token_id", "eos_token_id", "pad_token_id")}
            config = clip_config(self.model_cfg, where=self.where, special=special)
            mapped, unmapped = convert_state_dict(read_state_dict(self.weights, self.where))
            torch.manual_seed(0)  # every weight is overwritten below; the draw only fills them first
            net = CLIPModel(config)
            load_strictly(net, mapped, unmapped=unmapped,
                          mismatch=f"{self.where}: {self.weights.name} does not fit {CONFIG_FILE}")
            self._model = net.to(self.device).eval()
        return self._model

    def _finish(self, parts: list[np.ndarray]) -> np.ndarray:
        dim = int(self.model_cfg.get("embed_dim", 512))
        x = np.concatenate(parts) if parts else np.zeros((0, dim), np.float32)
        return l2_normalize(x) if self.normalize else x.astype(np.float32)

    def encode_images(self, images: Sequence[ImageLike]) -> np.ndarray:
        """(n, embed_dim) float32 image features (L2-normalised unless ``normalize=False``)."""
        import torch

        net = self.model()
        parts = []
        for start in range(0, len(images), self.batch_size):
            x = preprocess(images[start:start + self.batch_size], size=self.size, mean=self.mean,
                           std=self.std, resample=self.resample, resize_mode=self.resize_mode, offset=start)
            with torch.inference_mode():
                out = net.get_image_features(pixel_values=torch.from_numpy(x).to(self.device))
            parts.append(projected_features(out))
        return self._finish(parts)

    def token_counts(self, texts: Sequence[str]) -> tuple[np.ndarray, int]:
        """Tokens per text before truncation (start and end tokens included), and the context length past
        which :meth:`encode_texts` truncates."""
        ids = self.tokenizer()(list(texts), truncation=False)["input_ids"]
        return np.asarray([len(i) for i in ids], dtype=np.int64), int(
            self.model().config.text_config.max_position_embeddings)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """(n, embed_dim) float32 text features, read at the end-of-text token (truncated to the context)."""
        import torch

        tok = self.tokenizer()
        net = self.model()
        context = net.config.text_config.max_position_embeddings
        parts = []
        for start in range(0, len(texts), self.batch_size):
            enc = tok(list(texts[start:start + self.batch_size]), padding=True, truncation=True,
                      max_length=context, return_tensors="pt")
            with torch.inference_mode():
                out = net.get_text_features(input_ids=enc["input_ids"].to(self.device),
                                            attention_mask=enc["attention_mask"].to(self.device))
            parts.append(projected_features(out))
        return self._finish(parts)
