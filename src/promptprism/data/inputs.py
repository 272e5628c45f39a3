"""One entry point for every method's inputs: :func:`load_input` turns what the user holds into a PairedSet.

=========================================  ============================================================
input                                      what happens
=========================================  ============================================================
``.npz``, folder of ``.npy`` arrays        read as embeddings (:func:`~promptprism.data.load_paired`)
``.parquet`` with embedding columns        ``prompt_embedding`` and ``output_embedding`` (list columns),
                                           optional ``prompt`` / ``output`` strings
manifest ``.jsonl`` / ``.csv`` / ``.parquet``  rows of prompt (or prompt_image) + output (or image): embedded
folder of images + prompts file            paired by file stem = prompt id (or a mapping column), embedded
=========================================  ============================================================

Texts go through ``text_model`` and images through ``image_model``; embeddings come from the cache when
it has them (see :mod:`promptprism.embed.cache`).
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, OptionError
from .loaders import REQUIRED, load_paired
from .manifest import IMAGE_SUFFIXES, Manifest, find_prompts_file, read_image_folder, read_manifest
from .paired import PairedSet

PARQUET_EMBEDDING_COLUMNS = (("prompt_embedding", "prompt_embeddings"),
                             ("output_embedding", "output_embeddings"))
#: notes are shown at most this many at a time, then counted
MAX_NOTES = 3


class InputNote(UserWarning):
    """Something about the input that was fixed on the way in (e.g. a non-RGB image converted to RGB)."""


@dataclass(frozen=True)
class LoadedInput:
    """A paired set plus where it came from: ``kind``, row ``ids``, the encoders used (identities)."""

    paired: PairedSet
    kind: str  #: 'embeddings', 'manifest' or 'image-folder'
    ids: list[str] | None = None
    encoders: dict[str, str] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    #: the prompts (text) and the outputs were embedded by one joint text-image encoder (CLIP, SigLIP,
    #: open_clip): what CLIPScore needs, declared by the encoder (or by ``promptprism embed``'s .npz)
    joint_space: bool = False


def npz_encoders(path: str | os.PathLike) -> tuple[dict[str, str], bool]:
    """The encoder identities (``prompt_encoder``, ``output_encoder``) and the ``joint_space`` flag that
    ``promptprism embed`` writes into its .npz; ({}, False) for a file without them."""
    try:
        with np.load(path, allow_pickle=False) as data:
            names = set(data.files)
            encoders = {side: str(data[f"{side}_encoder"]) for side in ("prompt", "output")
                        if f"{side}_encoder" in names}
            joint = bool(data["joint_space"]) if "joint_space" in names else False
    except Exception:  # noqa: BLE001 - an unreadable file is the loader's to report (read it first)
        return {}, False
    return encoders, joint and len(set(encoders.values())) == 1 and len(encoders) == 2


def _emit(notes: list[str], sink: Callable[[str], None] | None) -> None:
    if not notes:
        return
    shown = notes[:MAX_NOTES]
    if len(notes) > MAX_NOTES:
        shown = [*shown, f"... and {len(notes) - MAX_NOTES} more like these"]
    if sink is None:
        warnings.warn("\n".join(shown), InputNote, stacklevel=4)
        return
    for note in shown:
        sink(note)


def _parquet_files(path: Path) -> list[Path]:
    """A Parquet file, or the ``.parquet`` files of a dataset folder in natural name order."""
    if path.is_dir():
        return sorted(path.glob("*.parquet"), key=lambda p: [int(t) if t.isdigit() else t
                                                              for t in re.split(r"(\d+)", p.name)])
    return [path]


def _parquet_embeddings(path: Path, name: str) -> PairedSet:
    """Embeddings from a Parquet file or dataset folder: the embedding columns are streamed by row group
    (:class:`~promptprism.data.npy.ParquetRows`), the display strings are read whole."""
    import pyarrow.parquet as pq

    from .npy import ParquetRows

    files = _parquet_files(path)
    names = set(pq.read_schema(files[0]).names)
    cols = {}
    for options in PARQUET_EMBEDDING_COLUMNS:
        col = next(c for c in options if c in names)
        cols[options[1]] = ParquetRows(files, col)
    strings = {}
    for key, options in (("prompts", ("prompt", "prompts")), ("outputs", ("output", "outputs", "image"))):
        col = next((c for c in options if c in names), None)
        if col is not None:
            strings[key] = _text_column(files, col, path)
    return PairedSet(prompt_embeddings=cols["prompt_embeddings"], output_embeddings=cols["output_embeddings"],
                     name=name, source=str(path), **strings)


def _text_column(files: list[Path], column: str, path: Path) -> list[str]:
    """The strings of a Parquet text column over ``files``, refused (naming the column and the row, 0-based
    over the dataset) when it holds other types or a null, as the .npz and .jsonl readers refuse them (a
    null read as the prompt "None", integers as their digits)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out: list[str] = []
    for f in files:
        col = pq.read_table(f, columns=[column]).column(0)
        kind = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise InputError(f"{path}: column {column!r} must hold text, got {col.type}")
        values = col.to_pylist()
        if None in values:
            row = len(out) + values.index(None)
            raise InputError(f"{path}: column {column!r}, row {row} (0-based) is null; every row needs one "
                             "(or leave the column out)")
        out += values
    return out


def _has_embedding_columns(path: Path) -> bool:
    from .manifest import table_columns

    names = set(table_columns(path))
    return all(any(c in names for c in options) for options in PARQUET_EMBEDDING_COLUMNS)


def _resolve_cache(cache: Any):
    from ..embed.cache import EmbeddingCache

    if isinstance(cache, EmbeddingCache):
        return cache
    if cache is None or cache is False:
        return _memory_cache()
    if cache == "default" or cache is True:
        return EmbeddingCache.default()
    return EmbeddingCache(cache)


_memory = None


def _memory_cache():
    """One in-memory cache per process, shared by all inputs of a run (``--no-cache``)."""
    global _memory
    if _memory is None:
        from ..embed.cache import EmbeddingCache

        _memory = EmbeddingCache(None)
    return _memory


def embed_manifest(manifest: Manifest, *, name: str, text_model: str = "minilm", image_model: str = "auto",
                   clip_model: str | None = None, cache: Any = "default", device: str | None = "auto",
                   batch_size: int = 64, progress: bool = False) -> LoadedInput:
    """Embed the prompts and outputs of a validated manifest (on the workers of the dask client of the
    current :func:`~promptprism.scale.execution` block, if any)."""
    from ..embed.pipeline import EmbedStats, embed_items
    from ..embed.registry import get_encoder

    store = _resolve_cache(cache)
    rows = manifest.rows
    wheres = [r.where for r in rows]
    encoders: dict[str, str] = {}
    stats: dict[str, Any] = {}
    arrays = {}
    joint = manifest.prompt_kind == "text"  # (and one text-image encoder for both sides: below)
    for side, kind, items in (
        ("prompt", manifest.prompt_kind,
         [r.prompt if r.prompt is not None else r.prompt_image for r in rows]),
        ("output", manifest.output_kind, [r.output if r.output is not None else r.image for r in rows]),
    ):
        spec = dict(name=text_model if kind == "text" else image_model, modality=kind, clip_model=clip_model,
                    device=device, batch_size=batch_size)
        enc = get_encoder(**spec)
        st = EmbedStats()
        arrays[side] = embed_items(items, kind, enc, store, wheres=wheres, progress=progress, stats=st,
                                   description=f"{name}: {side}s ({kind}, {enc.identity.split('-')[0]})",
                                   encoder_spec=spec)
        encoders[side] = enc.identity
        stats[side] = vars(st)
        joint = joint and {"text", "image"} <= set(getattr(enc, "modalities", ()))
    ids = [r.id if r.id is not None else "" for r in rows]
    paired = PairedSet(prompt_embeddings=arrays["prompt"], output_embeddings=arrays["output"],
                       prompts=[r.prompt_label for r in rows], outputs=[r.output_label for r in rows],
                       name=name, source=manifest.source)
    return LoadedInput(paired=paired, kind="manifest", ids=ids if any(ids) else None, encoders=encoders,
                       stats=stats, joint_space=joint and encoders["prompt"] == encoders["output"])


def read_input(path: str | os.PathLike, *, prompts: str | os.PathLike | None = None,
               text_model: str = "minilm", image_model: str = "auto", clip_model: str | None = None,
               cache: Any = "default", device: str | None = "auto", batch_size: int = 64,
               progress: bool | None = None,
               name: str | None = None, notes: Callable[[str], None] | None = None,
               columns: dict[str, str] | None = None) -> LoadedInput:
    """Like :func:`load_input`, with the row ids, the encoders used and cache statistics."""
    from .._progress import progress_enabled

    path = Path(path)
    name = name or path.stem
    show = progress_enabled(progress)
    opts = dict(text_model=text_model, image_model=image_model, clip_model=clip_model, cache=cache,
                device=device, batch_size=batch_size, progress=show)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    suffix = path.suffix.lower()

    def embeddings(paired_of: Callable[[], PairedSet]) -> LoadedInput:
        if columns:
            raise OptionError(f"columns cannot be used with {path}: it holds embeddings, whose arrays "
                              f"have fixed names ({', '.join(REQUIRED)}); columns maps the columns of a "
                              "manifest or of an image folder's prompts file")
        return LoadedInput(paired=paired_of(), kind="embeddings")

    if path.is_dir():
        if any((path / f"{k}.npy").exists() or any(path.glob(f"{k}-*.npy")) for k in REQUIRED):
            return embeddings(lambda: load_paired(path, name=name))
        parquet = _parquet_files(path)
        if parquet and _has_embedding_columns(parquet[0]):  # a Parquet dataset of embeddings
            return embeddings(lambda: _parquet_embeddings(path, name))
        if prompts is None and find_prompts_file(path) is None and not any(
                p.suffix.lower() in IMAGE_SUFFIXES for p in path.rglob("*")):
            raise InputError(f"{path}: a folder input must hold "
                             f"{', '.join(k + '.npy' for k in REQUIRED)}, or images and a prompts file "
                             f"(prompts.jsonl / .csv / .parquet with id, prompt)")
        manifest = read_image_folder(path, prompts, columns=columns)
        _emit(manifest.notes, notes)
        loaded = embed_manifest(manifest, name=name, **opts)
        return LoadedInput(paired=loaded.paired, kind="image-folder", ids=loaded.ids,
                           encoders=loaded.encoders, stats=loaded.stats, joint_space=loaded.joint_space)
    if suffix == ".npz":
        loaded = embeddings(lambda: load_paired(path, name=name))  # (a bad file is reported here)
        encoders, joint = npz_encoders(path)
        return replace(loaded, encoders=encoders, joint_space=joint)
    if suffix == ".parquet" and _has_embedding_columns(path):
        return embeddings(lambda: _parquet_embeddings(path, name))
    if suffix in (".jsonl", ".ndjson", ".csv", ".parquet"):
        manifest = read_manifest(path, columns=columns)
        _emit(manifest.notes, notes)
        return embed_manifest(manifest, name=name, **opts)
    raise InputError(f"{path}: unsupported input; expected a manifest (.jsonl, .csv, .parquet), embeddings "
                     f"(.npz, .parquet with prompt_embedding/output_embedding, or a folder of .npy arrays), "
                     f"or a "
                     f"folder of images with a prompts file")


def load_input(path: str | os.PathLike, *, prompts: str | os.PathLike | None = None,
               text_model: str = "minilm", image_model: str = "auto", clip_model: str | None = None,
               cache: Any = "default", device: str | None = "auto", batch_size: int = 64,
               progress: bool | None = None,
               name: str | None = None, notes: Callable[[str], None] | None = None,
               columns: dict[str, str] | None = None) -> PairedSet:
    """Any supported input -> a :class:`PairedSet` (embedding raw generations with cached encoders).

    ``cache``: ``"default"`` (``$PROMPTPRISM_CACHE`` or ``~/.cache/promptprism``), a folder, an
    :class:`~promptprism.embed.EmbeddingCache`, or ``None`` (memory only, this process). ``notes`` receives
    messages about fixed-up input (default: :class:`InputNote` warnings). ``prompts``: the prompts file of an
    image folder (default: ``prompts.jsonl|csv|parquet`` inside it). Inside ``with execution(client)``
    (:func:`promptprism.scale.execution`) the cluster's workers embed the items that miss the cache (each
    worker loads the encoder once). ``columns``: the manifest's own column names, e.g.
    ``{"prompt": "question", "output": "answer"}`` (see :func:`~promptprism.data.read_manifest`).
    """
    return read_input(path, prompts=prompts, text_model=text_model, image_model=image_model,
                      clip_model=clip_model, cache=cache, device=device, batch_size=batch_size,
                      progress=progress, name=name, notes=notes, columns=columns).paired
