"""Image generations from a Python callable (``module:function``) or a diffusers pipeline in a local folder.

A plain callable is called once per (prompt, sample) as ``fn(prompt, seed=SEED)`` (or ``fn(prompt)`` when
it takes no ``seed``) and must return one image: a PIL image, an (H, W[, 3|4]) array, or a path to an image
file. A *batched* callable says so with an integer attribute ``batch_size``: it is called with lists,
``fn(prompts, seeds)``, at most ``batch_size`` at a time, and returns one image per prompt (see
:func:`batched`). Diffusers pipelines are called in batches. Images are written as PNG beside the manifest,
in ``<manifest stem>_images/``, each named by a readable slug of its prompt and its row's content key
(:func:`image_name`): names never collide, whatever the ids or prompts (``a b``, ``a/b``, ``猫``), and a row
keeps its file when the prompts file is edited. Anything but one image per prompt from the generator (an
empty or object array, ``sys.exit``, ``KeyboardInterrupt``) is an error naming the row."""

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
from .run import GenerateResult, Task, pending_tasks, plan, run_tasks


def load_callable(spec: str) -> Callable[..., Any]:
    """``module:function`` (dots allowed after the colon) -> the callable."""
    from ..methods.compcon.image_sources import import_object

    if ":" not in spec:
        raise OptionError(f"generator must be 'module:function', got {spec!r}")
    obj = import_object(spec, what="image generator")
    if not callable(obj):
        raise OptionError(f"generator {spec!r} is a {type(obj).__name__}, not a callable")
    return obj


def batched(fn: Callable[[list[str], list[int]], Sequence[Any]], batch_size: int) -> Callable:
    """Mark ``fn(prompts, seeds) -> images`` as a batched generator taking at most ``batch_size`` prompts."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise OptionError(f"batch_size must be a positive integer, got {batch_size!r}")
    fn.batch_size = batch_size  # type: ignore[attr-defined]
    return fn


def batch_size_of(fn: Callable) -> int | None:
    """The batch size a batched generator advertises (None: a per-image callable)."""
    size = getattr(fn, "batch_size", None)
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise OptionError(f"generator: its batch_size attribute must be a positive integer, got {size!r}")
    return size


def diffusers_generator(folder: str | os.PathLike, *, steps: int = 30, device: str = "cpu",
                        batch_size: int = 8) -> Callable:
    """A batched ``fn(prompts, seeds)`` over a diffusers pipeline saved in ``folder`` (loaded offline, once);
    each image's noise comes from its own seed, so an image does not depend on its batch."""
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

    def generate(prompts: list[str], seeds: list[int]):
        gens = [torch.Generator(device=device).manual_seed(s) for s in seeds]
        return pipe(list(prompts), num_inference_steps=steps, generator=gens).images

    return batched(generate, batch_size)


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


def _call(fn: Callable, args: tuple, kwargs: dict, where: str) -> Any:
    """The user's generator; whatever it raises (SystemExit, KeyboardInterrupt included: it runs on a worker
    thread, where no Ctrl-C arrives) is an error naming ``where``."""
    try:
        return fn(*args, **kwargs)
    except SystemExit as exc:
        raise InputError(f"{where}: the generator called sys.exit({exc.code!r}) instead of returning an "
                         "image") from None
    except OptionError as exc:  # an option of this run refused on the way (e.g. the guidance scale)
        if exc.parameter is None:
            raise InputError(f"{where}: the generator raised OptionError: {exc}") from None
        raise OptionError(f"{where}: {exc}", parameter=exc.parameter) from None
    except BaseException as exc:  # noqa: BLE001 - the user's code: report which prompt broke it
        raise InputError(f"{where}: the generator raised {type(exc).__name__}: {exc}") from None


def _png(image: Any, where: str) -> bytes:
    """PNG bytes of one generated image; anything else is an error naming ``where``."""
    from PIL import Image

    from ..data.imageio import to_rgb

    if isinstance(image, (list, tuple)) and len(image) == 1:
        image = image[0]
    ok = isinstance(image, (Image.Image, str, os.PathLike)) or hasattr(image, "__array_interface__")
    if not ok:
        raise InputError(f"{where}: the generator returned {type(image).__name__}; expected one image (a PIL "
                         f"image, an (H, W[, C]) array or an image path)")
    rgb = to_rgb(image, where=where)  # (over the readers' pixel limit: refused, so never written)
    buf = io.BytesIO()
    rgb.save(buf, format="PNG")
    return buf.getvalue()


def generate_images(prompts: str | os.PathLike | Sequence[PromptRow], *, out: str | os.PathLike,
                    generator: str | Callable[..., Any] | None = None,
                    diffusers: str | os.PathLike | None = None,
                    samples: int = 1, seed: int = 0, steps: int = 30, concurrency: int = 1,
                    progress: bool | None = None, guidance: Any = None) -> GenerateResult:
    """Make ``samples`` images per prompt with ``generator`` (a callable or ``module:function``) or the
    diffusers pipeline in ``diffusers``; write them and a manifest (``prompt``, ``image``, ``id``...).
    Resumable (see :func:`~promptprism.generate.run.run_tasks`). ``guidance``: a
    :class:`~promptprism.guidance.GuidanceRequest`, passed to a batched generator that takes ``guidance=``
    (PromptSplit guidance toward a reference set, docs/guidance.md)."""
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
    where_file = str(prompts) if isinstance(prompts, (str, os.PathLike)) else "prompts"
    size = batch_size_of(fn)
    # (not the number of samples: rows are keyed by content and sample number, so raising --samples adds the
    # missing rows and lowering it keeps the first ones)
    settings = {"kind": "image", "generator": label, "seed": seed,
                "steps": steps if diffusers is not None else None}
    if guidance is not None:
        fn = _guided(fn, guidance, size, label)
        settings["guidance"] = guidance.describe()
    tasks = plan(rows, samples=samples, seed=seed)
    if size is None:
        one = _one_by_one(fn, where_file, label)
    else:
        todo = pending_tasks(tasks, manifest, settings, fields=FIELDS)
        one, concurrency = _BatchQueue(fn, size, todo, where_file, label), 1

    def work(task: Task) -> dict:
        where = f"{where_file}: prompt id {task.prompt.id}, sample {task.sample} (generator {label})"
        name = image_name(task)
        atomic_write_bytes(folder / name, _png(one(task), where))
        return {"image": f"{folder.name}/{name}", "generator": label}

    return run_tasks(tasks, work, manifest=manifest, settings=settings, fields=FIELDS,
                     concurrency=concurrency, progress=progress, description=f"generating with {label}")


#: the columns an image run writes for each row
FIELDS = ("image", "generator")


def _guided(fn: Callable, guidance: Any, size: int | None, label: str) -> Callable:
    """The batched generator ``fn`` with ``guidance=`` bound; one that cannot take it is an OptionError."""
    try:
        takes = "guidance" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes = False
    if size is None or not takes:
        raise OptionError(f"guidance: the generator {label} cannot be guided; it must be a batched generator "
                          "fn(prompts, seeds, guidance=None) (e.g. promptprism.models.fashion:generate)")

    def guided(prompts: list[str], seeds: list[int]) -> Any:
        return fn(prompts, seeds, guidance=guidance)

    return batched(guided, size)


def _one_by_one(fn: Callable, where_file: str, label: str) -> Callable[[Task], Any]:
    """Task -> image through a per-image callable."""
    takes_seed = _takes_seed(fn)

    def one(task: Task) -> Any:
        where = f"{where_file}: prompt id {task.prompt.id}, sample {task.sample} (generator {label})"
        return _call(fn, (task.prompt.prompt,), {"seed": task.seed} if takes_seed else {}, where)

    return one


class _BatchQueue:
    """Task -> image through a batched callable: the first task asked for that has no image yet brings
    the next ``size`` pending tasks (in manifest order) through one call; the others are served from it."""

    def __init__(self, fn: Callable, size: int, pending: list[Task], where_file: str, label: str) -> None:
        self.fn, self.size, self.where_file, self.label = fn, size, where_file, label
        self.queue = [t.key for t in pending]
        self.tasks = {t.key: t for t in pending}
        self.ready: dict[str, Any] = {}

    def __call__(self, task: Task) -> Any:
        if task.key not in self.ready:
            self._run(task)
        return self.ready.pop(task.key)

    def _run(self, task: Task) -> None:
        keys = [task.key] + [k for k in self.queue if k != task.key and k not in self.ready][: self.size - 1]
        batch = [self.tasks.get(k, task) for k in keys]
        self.queue = [k for k in self.queue if k not in keys]
        where = (f"{self.where_file}: prompt ids {batch[0].prompt.id}..{batch[-1].prompt.id} (a batch of "
                 f"{len(batch)}, generator {self.label})")
        out = _call(self.fn, ([t.prompt.prompt for t in batch], [t.seed for t in batch]), {}, where)
        try:
            images = list(out)
        except TypeError:
            raise InputError(f"{where}: the generator returned {type(out).__name__}; expected a list of "
                             f"{len(batch)} images") from None
        if len(images) != len(batch):
            raise InputError(f"{where}: the generator returned {len(images)} images for {len(batch)} "
                             f"prompts")
        self.ready.update(zip(keys, images, strict=True))
