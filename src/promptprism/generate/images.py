"""Image generations from a Python callable (``module:function``) or a diffusers pipeline in a local folder.

The callable is called once per (prompt, sample) as ``fn(prompt, seed=SEED)`` (or ``fn(prompt)`` when it
takes no ``seed``) and must return one image: a PIL image, an (H, W[, 3|4]) array, or a path to an image
file. Images are written as PNG beside the manifest, in ``<manifest stem>_images/``, each named by a
readable slug of its prompt and its row's content key (:func:`image_name`): names never collide, whatever
the ids or prompts (``a b``, ``a/b``, ``猫``), and a row keeps its file when the prompts file is edited.
Anything but one image from the generator (an empty or object array, ``sys.exit``, ``KeyboardInterrupt``)
is an error naming the row.
"""

from __future__ import annotations

import inspect
import io
import os
import re
import unicodedata
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


def image_name(task: Task) -> str:
    """``<slug of the prompt>_<sample>_<content key>.png``: ASCII, lower case, unique per content key."""
    ascii_text = unicodedata.normalize("NFKD", task.prompt.prompt).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:40].strip("-") or "prompt"
    return f"{slug}_{task.sample}_{task.key[:16]}.png"


def _call(fn: Callable, task: Task, takes_seed: bool, where: str) -> Any:
    """The user's generator on one task; whatever it raises (SystemExit, KeyboardInterrupt included: it runs
    on a worker thread, where no Ctrl-C arrives) is an error naming the row."""
    try:
        return fn(task.prompt.prompt, seed=task.seed) if takes_seed else fn(task.prompt.prompt)
    except SystemExit as exc:
        raise InputError(f"{where}: the generator called sys.exit({exc.code!r}) instead of returning an "
                         "image") from None
    except BaseException as exc:  # noqa: BLE001 - the user's code: report which prompt broke it
        raise InputError(f"{where}: the generator raised {type(exc).__name__}: {exc}") from None


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
        image = _call(fn, task, takes_seed, where)
        name = image_name(task)
        atomic_write_bytes(folder / name, _png(image, where))
        return {"image": f"{folder.name}/{name}", "generator": label}

    settings = {"kind": "image", "generator": label, "samples": samples, "seed": seed,
                "steps": steps if diffusers is not None else None}
    return run_tasks(plan(rows, samples=samples, seed=seed), work, manifest=manifest, settings=settings,
                     fields=("image", "generator"), concurrency=concurrency, progress=progress,
                     description=f"generating with {label}")
