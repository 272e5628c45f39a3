"""A class-prompted diffusion model of Fashion-MNIST: the network, its checkpoints and a batched generator.

A checkpoint is a folder in the diffusers layout::

    unet/        UNet2DModel (fp16 safetensors + config.json)
    scheduler/   the DDPM training scheduler's config (sampling uses DDIM over the same noise schedule)
    promptprism_generator.json   class names, prompts, image size, seed, epoch and the command that made it

The UNet is conditioned on a class index (``num_class_embeds`` = 10 classes + 1 null class, the
unconditional branch of classifier-free guidance). Prompts are "a photo of a {class}" (see
:func:`promptprism.datasets.fashion_prompt`); :func:`generate` maps each prompt to its class.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, OptionError

#: the class names behind the prompts (Fashion-MNIST's, "T-shirt/top" shortened to "T-shirt")
CLASS_NAMES = ("T-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag",
               "ankle boot")
NULL_CLASS = len(CLASS_NAMES)  #: the class index of the unconditional (classifier-free guidance) branch
META_FILE = "promptprism_generator.json"
#: environment variable naming the checkpoint folder :func:`generate` loads (else the packaged weights)
CHECKPOINT_ENV = "PROMPTPRISM_FASHION_CHECKPOINT"


def class_prompts() -> tuple[str, ...]:
    """The ten prompts, in class order."""
    from ..datasets import fashion_prompt

    return tuple(fashion_prompt(name) for name in CLASS_NAMES)


def resized(x: Any, image_size: int) -> Any:
    """uint8 images (n, 28, 28) -> a float tensor (n, 1, s, s) on the 0..255 scale, resized with
    antialiased bilinear interpolation (what the model is trained on)."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    t = torch.from_numpy(np.array(x, dtype=np.float32))[:, None]  # a copy: the IDX arrays are read-only
    if image_size == t.shape[-1]:
        return t
    return F.interpolate(t, size=(image_size, image_size), mode="bilinear", antialias=True,
                         align_corners=False)


def real_images(split: str, image_size: int = 16) -> tuple[Any, Any]:
    """Real Fashion-MNIST images of ``split`` at the model's resolution, (n, s, s) uint8, and labels."""
    import numpy as np

    from ..datasets import fashion_mnist

    x, y = fashion_mnist(split)
    small = resized(x, image_size)[:, 0].round().clamp(0, 255).numpy().astype(np.uint8)
    return small, y


@dataclass(frozen=True)
class UNetShape:
    """The network's shape: image size and channels per resolution level."""

    image_size: int = 16
    channels: tuple[int, ...] = (16, 32, 64)
    layers_per_block: int = 2

    def build(self, seed: int):
        """A freshly initialised ``UNet2DModel`` (weights drawn under ``seed``)."""
        import torch
        from diffusers import UNet2DModel

        torch.manual_seed(seed)
        levels = len(self.channels)
        return UNet2DModel(
            sample_size=self.image_size, in_channels=1, out_channels=1, block_out_channels=self.channels,
            layers_per_block=self.layers_per_block, down_block_types=("DownBlock2D",) * levels,
            up_block_types=("UpBlock2D",) * levels, num_class_embeds=NULL_CLASS + 1,
            norm_num_groups=min(8, self.channels[0]))


def training_scheduler():
    """The DDPM noise schedule the model is trained with (1000 steps, cosine betas, noise prediction)."""
    from diffusers import DDPMScheduler

    return DDPMScheduler(num_train_timesteps=1000, beta_schedule="squaredcos_cap_v2",
                         prediction_type="epsilon", clip_sample=True)


@dataclass
class FashionCheckpoint:
    """A loaded checkpoint: the UNet (float32, eval mode), the DDPM scheduler and the metadata."""

    unet: Any
    scheduler: Any
    meta: dict = field(default_factory=dict)

    @property
    def image_size(self) -> int:
        """The side of the square images the model makes (pixels)."""
        return int(self.meta.get("image_size", self.unet.config.sample_size))


def save_checkpoint(folder: str | os.PathLike, unet, scheduler, meta: dict) -> Path:
    """Write ``unet`` (as fp16 safetensors), ``scheduler`` and ``meta`` to ``folder`` (created)."""
    import copy

    import torch

    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    half = copy.deepcopy(unet)
    if "_name_or_path" in half.config:  # where a fine-tune's start was loaded from: a local path, not kept
        from diffusers.configuration_utils import FrozenDict

        half._internal_dict = FrozenDict({k: v for k, v in half.config.items() if k != "_name_or_path"})
    for tensor in (*half.parameters(), *half.buffers()):  # not Module.to: diffusers warns about casting
        if tensor.is_floating_point():
            tensor.data = tensor.data.to(torch.float16)
    half.save_pretrained(path / "unet", safe_serialization=True)
    scheduler.save_pretrained(path / "scheduler")
    (path / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    return path


def load_checkpoint(folder: str | os.PathLike) -> FashionCheckpoint:
    """Load a checkpoint folder offline (float32 on the CPU)."""
    path = Path(folder).expanduser()
    if not (path / "unet").is_dir() or not (path / META_FILE).is_file():
        raise InputError(f"checkpoint {str(folder)!r}: not a Fashion generator checkpoint (expected unet/, "
                         f"scheduler/ and {META_FILE})")
    import torch
    from diffusers import DDPMScheduler, UNet2DModel

    unet = UNet2DModel.from_pretrained(str(path / "unet"), local_files_only=True,
                                       torch_dtype=torch.float32, low_cpu_mem_usage=False).eval()
    scheduler = DDPMScheduler.from_pretrained(str(path / "scheduler"), local_files_only=True)
    meta = json.loads((path / META_FILE).read_text())
    return FashionCheckpoint(unet=unet, scheduler=scheduler, meta=meta)


def packaged_weights() -> Path:
    """The folder of checkpoints shipped with the package (see its README.md for how they were made)."""
    return Path(__file__).with_name("weights") / "fashion-16px"


def find_checkpoints(folder: str | os.PathLike) -> tuple[list[Path], Path | None]:
    """In a folder of checkpoints: the training run's, in step order, and a fine-tuned second generator
    (one trained with ``answers``; None when there is none)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise OptionError(f"weights {str(folder)!r}: not a folder of generator checkpoints")
    metas = {p.parent: json.loads(p.read_text()) for p in sorted(folder.glob(f"*/{META_FILE}"))}
    training = sorted((p for p, m in metas.items() if not m.get("answers") and not m.get("init")),
                      key=lambda p: metas[p].get("steps", 0))
    second = [p for p, m in metas.items() if m.get("answers")]
    if not training:
        raise OptionError(f"weights {str(folder)!r}: holds no checkpoint of a training run ({META_FILE} "
                          f"files)")
    return training, (second[-1] if second else None)


def packaged_checkpoint() -> Path:
    """The final checkpoint of the packaged training run."""
    return find_checkpoints(packaged_weights())[0][-1]


def prompt_classes(prompts: list[str]) -> list[int]:
    """Each prompt's class index; a prompt that names no class is an error naming it."""
    lookup = {p.lower(): i for i, p in enumerate(class_prompts())}
    lookup.update({name.lower(): i for i, name in enumerate(CLASS_NAMES)})
    out = []
    for p in prompts:
        key = p.strip().lower()
        if key not in lookup:
            raise InputError(f"prompt {p!r} is not a Fashion-MNIST class prompt (expected e.g. "
                             f"{class_prompts()[0]!r} or a class name: {', '.join(CLASS_NAMES)})")
        out.append(lookup[key])
    return out


def sample_images(checkpoint: FashionCheckpoint, classes, seeds, *, guidance_scale: float = 2.0,
                  steps: int = 50, batch_size: int = 64, guidance=None) -> Any:
    """Images (n, H, W) uint8 of the given class indices, sample i from noise seeded by ``seeds[i]``:
    DDIM over the training noise schedule with classifier-free guidance (the shared loop,
    :func:`promptprism.guidance.sample`; ``guidance`` is its optional sampler-side guidance)."""
    import numpy as np
    import torch

    from ..guidance import sample

    labels = np.asarray(classes, dtype=np.int64)
    if labels.size and (labels.min() < 0 or labels.max() >= NULL_CLASS):
        raise InputError(f"classes must lie in 0..{NULL_CLASS - 1}, got {labels.min()}..{labels.max()}")
    with torch.no_grad() if guidance is None else torch.enable_grad():
        x = sample(checkpoint.unet, checkpoint.scheduler, labels, null_condition=NULL_CLASS,
                   guidance_scale=guidance_scale, steps=steps, seeds=list(seeds), batch_size=batch_size,
                   guidance=guidance)
    pixels = ((x.detach().float().clamp(-1.0, 1.0) + 1.0) * 127.5).round().to(torch.uint8)
    return pixels[:, 0].numpy()


#: the prompt bandwidth of one-hot class prompts
SIGMA_PROMPT = 0.5


def reference_pixels(images: list[Any], image_size: int, source: str = "reference") -> np.ndarray:
    """uint8 images (H, W) or (H, W, 3) of any size -> pixel rows (n, s * s) in [-1, 1] at ``image_size``."""
    gray = []
    for i, im in enumerate(images):
        a = np.asarray(im)
        if a.ndim == 3:
            a = a[..., :3].mean(axis=2)
        if a.ndim != 2:
            raise InputError(f"{source}: image {i} has shape {a.shape}; expected a grey or RGB image")
        gray.append(np.asarray(resized(a[None].astype(np.uint8), image_size))[0, 0])
    return np.stack(gray).reshape(len(gray), -1) / 127.5 - 1.0


def fashion_guidance(request: Any, prompts: list[str], image_size: int):
    """The eq. 5 guidance of ``request`` for a batch of ``prompts`` (pixels, one-hot class prompts)."""
    from ..guidance import PromptSplitGuidance

    onehot = np.eye(NULL_CLASS)
    ref_classes = prompt_classes(list(request.reference_prompts))
    pixels = reference_pixels(list(request.reference_images), image_size, request.source)
    return PromptSplitGuidance(pixels, onehot[ref_classes], onehot[prompt_classes(prompts)],
                               scale=request.scale, rho=request.rho, sigma_prompt=SIGMA_PROMPT,
                               min_sigma_output=0.5 * float(np.sqrt(pixels.shape[1])))


def fashion_generator(checkpoint: str | os.PathLike | None = None, *, guidance_scale: float = 2.0,
                      steps: int = 50, batch_size: int = 64):
    """A batched generator for ``promptprism generate`` (``fn(prompts, seeds)`` -> one (H, W) uint8 image
    per prompt) over the checkpoint folder ``checkpoint`` (default: the packaged weights)."""
    from .._validation import check_positive_number
    from ..generate.images import batched

    check_positive_number(guidance_scale, "guidance_scale", allow_zero=True)
    ckpt = load_checkpoint(checkpoint if checkpoint is not None else packaged_checkpoint())

    def generate_batch(prompts: list[str], seeds: list[int], guidance=None) -> list:
        guide = None if guidance is None else fashion_guidance(guidance, list(prompts), ckpt.image_size)
        images = sample_images(ckpt, prompt_classes(list(prompts)), seeds, guidance_scale=guidance_scale,
                               steps=steps, batch_size=batch_size, guidance=guide)
        return list(images)

    return batched(generate_batch, batch_size)


_DEFAULT: dict[str, Any] = {}


def generate(prompts: list[str], seeds: list[int], guidance=None) -> list:
    """``--generator promptprism.models.fashion:generate``: the Fashion generator, batched. Reads the
    checkpoint folder from ``PROMPTPRISM_FASHION_CHECKPOINT`` (default: the packaged weights), the CFG
    scale from ``PROMPTPRISM_FASHION_CFG`` (default 2) and the DDIM steps from ``PROMPTPRISM_FASHION_STEPS``
    (default 50)."""
    key = tuple(os.environ.get(k, "") for k in (CHECKPOINT_ENV, "PROMPTPRISM_FASHION_CFG",
                                                 "PROMPTPRISM_FASHION_STEPS"))
    if key not in _DEFAULT:
        try:
            scale, steps = float(key[1] or 2.0), int(key[2] or 50)
        except ValueError:
            raise OptionError(f"PROMPTPRISM_FASHION_CFG must be a number and PROMPTPRISM_FASHION_STEPS an "
                              f"integer, got {key[1]!r} and {key[2]!r}") from None
        _DEFAULT.clear()
        _DEFAULT[key] = fashion_generator(key[0] or None, guidance_scale=scale, steps=steps,
                                          batch_size=generate.batch_size)
    return _DEFAULT[key](prompts, seeds, guidance=guidance)


generate.batch_size = 64  # type: ignore[attr-defined]
