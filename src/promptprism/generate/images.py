"""Image generations from a Python callable (``module:function``) or a diffusers pipeline in a local folder.

The callable is called once per (prompt, sample) as ``fn(prompt, seed=SEED)`` (or ``fn(prompt)`` when it
takes no ``seed``) and must return one image: a PIL image, an (H, W[, 3|4]) array, or a path to an image
file. Images are written as PNG beside the manifest, in ``<manifest stem>_images/<id>_<sample>.png``.
"""

from __future__ import annotations

import inspect
import io
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .._validation import check_seed
from ..errors import InputError, OptionError
from ..io import atomic_write_bytes
from .prompts import PromptRow, read_prompts
from .run import GenerateResult, Task, plan, run_tasks


def load_callable(spec: str) -> Callable[..., Any]:
    """``module:function`` (dots allowed after the colon) -> the callable."""
    from ..methods.compcon.generators import import_object

    if ":" not in spec:
        raise OptionError(f"generator must be 'module:function', got {spec!r}")
    obj = import_object(spec, what="image generator")
    if not callable(obj):
        raise OptionError(f"generator {spec!r} is a {type(obj).__name__}, not a callable")
    return obj


def diffusers_generator(folder: str | os.PathLike, *, steps: int = 30, device: str = "cpu") -> Callable:
    """A ``fn(prompt, seed=)`` over a diffusers pipeline saved in ``folder`` (loaded offline, once)."""
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise OptionError(f"diffusers {str(folder)!r}: not a folder holding a saved diffusers pipeline")
    try:
        import torch
        from diffusers import DiffusionPipeline
    except ImportError:
        raise OptionError("a diffusers pipeline needs the diffusers package, which is not installed "
                          "(pip install diffusers); or pass a Python callable as the generator") from None
    try:
        pipe = DiffusionPipeline.from_pretrained(str(path), local_files_only=True).to(device)
    except (OSError, ValueError) as exc:
        raise OptionError(f"diffusers {str(folder)!r}: cannot be loaded offline ({exc})") from None

    def generate(prompt: str, seed: int = 0):
        gen = torch.Generator(device=device).manual_seed(seed)
        return pipe(prompt, num_inference_steps=steps, generator=gen).images[0]

    return generate


def _takes_seed(fn: Callable) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "seed" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _png(image: Any, where: str) -> bytes:
    """PNG bytes of one generated image; anything else is an error naming ``where``."""
    from PIL import Image

    from ..embed.base import to_rgb

    if isinstance(image, (list, tuple)) and len(image) == 1:
        image = image[0]
    ok = isinstance(image, (Image.Image, str, os.PathLike)) or hasattr(image, "__array_interface__")
    if not ok:
        raise InputError(f"{where}: the generator returned {type(image).__name__}; expected one image (a PIL "
                         f"image, an (H, W[, C]) array or an image path)")
    rgb = to_rgb(image, where=where)
    buf = io.BytesIO()
    rgb.save(buf, format="PNG")
    return buf.getvalue()


def generate_images(prompts: str | os.PathLike | Sequence[PromptRow], *, out: str | os.PathLike,
                    generator: str | Callable[..., Any] | None = None,
                    diffusers: str | os.PathLike | None = None,
                    samples: int = 1, seed: int = 0, steps: int = 30, concurrency: int = 1,
                    progress: bool | None = None) -> GenerateResult:
    """Make ``samples`` images per prompt with ``generator`` (a callable or ``module:function``) or the
    diffusers pipeline in ``diffusers``; write them and a manifest (``prompt``, ``image``, ``id``...).
    Resumable (see :func:`~promptprism.generate.run.run_tasks`)."""
    check_seed(seed)
    if (generator is None) == (diffusers is None):
        raise OptionError("pass exactly one of generator (module:function) and diffusers (a pipeline folder)")
    if diffusers is not None:
        fn, label = diffusers_generator(diffusers, steps=steps), f"diffusers:{Path(diffusers).name}"
        concurrency = 1  # a pipeline is not thread-safe
    elif isinstance(generator, str):
        fn, label = load_callable(generator), generator
    else:
        if not callable(generator):
            raise OptionError(f"generator must be callable or 'module:function', got "
                              f"{type(generator).__name__}")
        fn, label = generator, getattr(generator, "__qualname__", type(generator).__name__)
    rows = read_prompts(prompts) if isinstance(prompts, (str, os.PathLike)) else list(prompts)
    if not rows:
        raise InputError("prompts: no prompts to generate for")
    manifest = Path(out)
    folder = manifest.with_name(f"{manifest.stem}_images")
    takes_seed = _takes_seed(fn)
    where_file = str(prompts) if isinstance(prompts, (str, os.PathLike)) else "prompts"

    def work(task: Task) -> dict:
        where = f"{where_file}: prompt id {task.prompt.id}, sample {task.sample} (generator {label})"
        try:
            image = fn(task.prompt.prompt, seed=task.seed) if takes_seed else fn(task.prompt.prompt)
        except Exception as exc:  # the user's generator: report which prompt broke it
            raise InputError(f"{where}: the generator raised {type(exc).__name__}: {exc}") from None
        name = f"{re.sub(r'[^A-Za-z0-9._-]+', '_', task.prompt.id)}_{task.sample}.png"
        atomic_write_bytes(folder / name, _png(image, where))
        return {"image": f"{folder.name}/{name}", "generator": label}

    settings = {"kind": "image", "generator": label, "samples": samples, "seed": seed,
                "steps": steps if diffusers is not None else None}
    return run_tasks(plan(rows, samples=samples, seed=seed), work, manifest=manifest, settings=settings,
                     concurrency=concurrency, progress=progress, description=f"generating with {label}")
