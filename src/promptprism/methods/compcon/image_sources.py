"""Text-to-image models as the pipeline sees them: something that gives images for a prompt.

* :class:`CallableGenerator` wraps a Python callable ``fn(prompt) -> images`` (PIL images, HxWxC uint8
  arrays or image paths); it can make images for the new prompts each CompCon iteration writes.
* :class:`ImageBank` holds images already generated for a prompt bank: a manifest (``.jsonl`` / ``.csv`` with
  ``prompt`` and ``image`` columns, one row per image; or ``.json`` mapping prompt -> [paths]) or a folder
  holding one (``manifest.jsonl|csv|json``), or the image folder + ``prompts.jsonl|csv|parquet`` (id,
  prompt; image stem = id) that every other command reads
  (:func:`promptprism.data.manifest.read_image_folder`), or sub-folders each with a ``prompt.txt`` and its
  images.
  It looks prompts up (exact text, then whitespace/case-normalised) and cannot make new images.

:func:`missing_images` says which prompts of a bank have no images for a model.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from ...errors import InputError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif")
MANIFEST_NAMES = ("manifest.jsonl", "manifest.csv", "manifest.json")


class ImageSource(Protocol):
    """Images per prompt. ``can_generate``: whether prompts outside a fixed bank can be asked for."""

    name: str
    can_generate: bool

    def images(self, prompt: str) -> list[Any]:
        """The images for ``prompt`` (PIL images, arrays or paths)."""
        ...


def normalise_prompt(prompt: str) -> str:
    """Case- and whitespace-insensitive form of a prompt, for look-ups."""
    return re.sub(r"\s+", " ", prompt).strip().casefold()


def pil() -> Any:
    """The PIL package, or a clear error saying how to get it."""
    try:
        import PIL.Image
    except ImportError:
        raise InputError("CompCon needs Pillow for images: pip install pillow") from None
    return PIL


def load_image(item: Any) -> Any:
    """A PIL RGB image from a PIL image, an array, or a path (:func:`~promptprism.data.imageio.to_rgb`:
    the error names the file)."""
    pil()
    from ...data.imageio import to_rgb

    return to_rgb(item, where=str(item) if isinstance(item, (str, os.PathLike)) else "image")


class CallableGenerator:
    """A Python callable ``fn(prompt) -> list of images`` (results are memoised per prompt)."""

    can_generate = True

    def __init__(self, fn: Callable[[str], Sequence[Any]], name: str = "generator") -> None:
        if not callable(fn):
            raise InputError(f"{name}: generator must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.name = name
        self._memo: dict[str, list[Any]] = {}

    def images(self, prompt: str) -> list[Any]:
        """The images for ``prompt`` as PIL RGB images (empty when the bank has none)."""
        if prompt not in self._memo:
            out = self.fn(prompt)
            if out is None:
                out = []
            if not isinstance(out, (list, tuple)):
                out = [out]
            self._memo[prompt] = [load_image(x) for x in out]
        return self._memo[prompt]

    def describe(self) -> dict:
        """What the source is, for ``result.json``."""
        return {"type": "callable", "name": self.name}


class PromptFiles:
    """Samples already made for a prompt bank, as ``prompt -> [entries]`` (image paths, answers) read from
    files; prompts looked up exactly, then whitespace/case-normalised. It cannot make new ones."""

    can_generate = False
    #: the name when none is given
    default_name = "samples"

    def __init__(self, mapping: dict[str, list[str]], name: str | None = None, source: str = "") -> None:
        self.name = self.default_name if name is None else name
        self.source = source
        self.mapping = {p: list(v) for p, v in mapping.items()}
        self._norm: dict[str, str] = {}
        for p in self.mapping:
            self._norm.setdefault(normalise_prompt(p), p)

    def lookup(self, prompt: str) -> str | None:
        """The source's own spelling of ``prompt`` (exact, else normalised), or None."""
        if prompt in self.mapping:
            return prompt
        return self._norm.get(normalise_prompt(prompt))


class ImageBank(PromptFiles):
    """Images already generated for a prompt bank, from a manifest or a folder (see the module docstring)."""

    default_name = "bank"

    # ------------------------------------------------------------------------------------------ loading
    @classmethod
    def load(cls, path: str | os.PathLike, name: str | None = None) -> ImageBank:
        """A bank from a manifest file or a folder (see the module docstring for the forms)."""
        path = Path(path)
        label = name or path.name
        if not path.exists():
            raise InputError(f"{path}: no such image bank (folder or manifest) for model {label}")
        if path.is_dir():
            from ...data.tables import read_text

            for m in MANIFEST_NAMES:
                if (path / m).exists():
                    return cls(_read_manifest(path / m), label, str(path))
            from ...data.manifest import find_prompts_file, read_image_folder

            if find_prompts_file(path) is not None:  # the image folder + prompts file that split reads
                mapping = {}
                for row in read_image_folder(path).rows:
                    mapping.setdefault(row.prompt, []).append(str(row.image))
                return cls(mapping, label, str(path))
            mapping: dict[str, list[str]] = {}
            for sub in sorted(p for p in path.iterdir() if p.is_dir()):
                ptxt = sub / "prompt.txt"
                if not ptxt.exists():
                    continue
                prompt = read_text(ptxt).strip()
                imgs = sorted(str(f) for f in sub.iterdir() if f.suffix.lower() in IMAGE_SUFFIXES)
                mapping.setdefault(prompt, []).extend(imgs)
            if not mapping:
                raise InputError(
                    f"{path}: no {' / '.join(MANIFEST_NAMES)} and no sub-folders with a prompt.txt; "
                    "cannot tell which images belong to which prompt"
                )
            return cls(mapping, label, str(path))
        return cls(_read_manifest(path), label, str(path))

    # ------------------------------------------------------------------------------------------ look-up
    def images(self, prompt: str) -> list[Any]:
        """The images for ``prompt`` as PIL RGB images (empty when the bank has none)."""
        key = self.lookup(prompt)
        if key is None:
            return []
        return [load_image(p) for p in self.mapping[key]]

    def n_images(self, prompt: str) -> int:
        """How many images the bank holds for ``prompt``."""
        key = self.lookup(prompt)
        return 0 if key is None else len(self.mapping[key])

    def image_paths(self, prompt: str) -> list[str]:
        """The image paths of ``prompt`` (empty when absent)."""
        key = self.lookup(prompt)
        return [] if key is None else list(self.mapping[key])

    def describe(self) -> dict:
        """What the source is, for ``result.json``."""
        return {"type": "bank", "name": self.name, "source": self.source, "n_prompts": len(self.mapping)}


def _read_manifest(path: Path) -> dict[str, list[str]]:
    """prompt -> [image paths] from ``manifest.json`` (that mapping, or a list of rows) or a ``.jsonl`` /
    ``.csv`` table read by :func:`promptprism.data.tables.read_table` (rows with ``prompt`` and ``image``)."""
    from ...data.tables import check_text, read_table, read_text

    base = path.parent
    rows: list[tuple[str, str]] = []
    suffix = path.suffix.lower()
    if suffix == ".json":
        try:
            data = json.loads(read_text(path))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: not valid JSON ({exc})") from None
        if isinstance(data, dict):
            for prompt, imgs in data.items():
                for im in [imgs] if isinstance(imgs, str) else imgs:
                    rows.append((str(prompt), str(im)))
        elif isinstance(data, list):
            for i, r in enumerate(data):
                rows.append(_row(r, path, i + 1))
        else:
            raise InputError(f"{path}: expected an object prompt -> [images] or a list of rows")
    elif suffix in (".jsonl", ".csv"):
        rows = [_row(rec.values, path, rec.number, rec.where) for rec in read_table(path).records]
    else:
        raise InputError(f"{path}: unknown manifest type {suffix!r}; use .jsonl, .csv or .json")
    mapping: dict[str, list[str]] = {}
    for prompt, image in rows:
        check_text(prompt, str(path), "prompt")
        p = Path(check_text(image, str(path), "image"))
        mapping.setdefault(prompt, []).append(str(p if p.is_absolute() else base / p))
    return mapping


def _row(r: Any, path: Path, number: int, where: str = "") -> tuple[str, str]:
    if not isinstance(r, dict) or "prompt" not in r or not any(k in r for k in ("image", "path", "file")):
        line = where[where.rfind("(line"):] if "(line" in where else ""
        raise InputError(f"{path}: row {number} needs 'prompt' and 'image' fields {line}".rstrip())
    return str(r["prompt"]), str(r.get("image") or r.get("path") or r.get("file"))


def load_prompt_bank(path: str | os.PathLike) -> list[str]:
    """The prompts of a prompts file (:func:`promptprism.data.prompts.read_prompt_rows`: one per line, a JSON
    list, or a table with a ``prompt`` column; every row a prompt), each once, in order."""
    from ...data.prompts import read_prompt_rows

    return list(dict.fromkeys(row.prompt for _, row in read_prompt_rows(path, what="prompt bank file")))


def missing_images(source: Any, prompts: Sequence[str]) -> list[str]:
    """Prompts for which a fixed bank has no images (or an answer table no answers; a generator that can
    generate is never missing)."""
    if getattr(source, "can_generate", False):
        return []
    count = source.n_samples if hasattr(source, "n_samples") else source.n_images
    return [p for p in prompts if count(p) == 0]


def resolve_source(spec: str, name: str) -> ImageSource:
    """A CLI argument: a folder/manifest path, or ``module:attribute`` naming a callable generator
    (``fn(prompt) -> images``) or a factory returning an :class:`ImageSource`."""
    if ":" in spec and not Path(spec).exists() and not re.match(r"^[A-Za-z]:[\\/]", spec):
        obj = import_object(spec, what=f"generator for model {name}")
        if hasattr(obj, "images") and hasattr(obj, "can_generate"):
            return obj
        return CallableGenerator(obj, name=name)
    return ImageBank.load(spec, name=name)


def import_object(spec: str, *, what: str) -> Any:
    """The object named ``module:attribute`` (an error naming ``what`` when it cannot be imported)."""
    module, _, attr = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"{spec}: cannot import the {what} ({exc})") from None
    return obj


def image_grid(row_a: Sequence[Any], row_b: Sequence[Any], cell: int = 256, gap: int = 8) -> Any:
    """One PIL image: A's images in the top row over B's in the bottom row (appendix C.1, Fig. 11)."""
    pil()
    from PIL import Image

    cols = max(len(row_a), len(row_b), 1)
    grid = Image.new("RGB", (cols * cell + (cols - 1) * gap, 2 * cell + gap), "white")
    for r, row in enumerate((row_a, row_b)):
        for c, im in enumerate(row):
            tile = load_image(im).copy()
            tile.thumbnail((cell, cell))
            x = c * (cell + gap) + (cell - tile.width) // 2
            y = r * (cell + gap) + (cell - tile.height) // 2
            grid.paste(tile, (x, y))
    return grid
