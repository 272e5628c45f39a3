"""Embed a list of texts or images through the cache: hash, look up, encode only the misses, store.

Identical items (same text, same image bytes) are embedded once per run, and never again while the cache
holds them. Misses are encoded in chunks; each chunk is stored as one atomic shard as soon as it is done,
so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._execution import current_client
from .._progress import progress_bar
from ..data.imageio import to_rgb
from ..errors import InputError, OptionError
from .base import Encoder
from .cache import EmbeddingCache, array_key, file_key, text_key

#: items encoded (and stored as one cache shard) per step
CHUNK = 256


@dataclass
class EmbedStats:
    """What one call did: items, unique items, cache hits, items encoded, seconds."""

    items: int = 0
    unique: int = 0
    hits: int = 0
    encoded: int = 0
    seconds: float = 0.0


def item_key(item: Any, kind: str, where: str) -> bytes:
    """The cache key of a text or an image (file, PIL image, array); an InputError if a file is unreadable."""
    if kind == "text":
        return text_key(item)
    if isinstance(item, (str, os.PathLike)):
        try:
            return file_key(item)
        except OSError as exc:
            raise InputError(f"{where}: image file {str(item)!r} cannot be read "
                             f"({exc.strerror or exc})") from None
    from PIL import Image

    if isinstance(item, Image.Image):
        return array_key(np.asarray(item.convert("RGB")))
    return array_key(np.asarray(item))


def _encode_batch(encoder: Encoder, kind: str, batch: Sequence[Any], wheres: Sequence[str]) -> np.ndarray:
    if kind == "text":
        vec = encoder.encode_texts(list(batch))
    else:
        vec = encoder.encode_images([to_rgb(it, where=_image_where(w, it)) for it, w in zip(batch, wheres,
                                                                                          strict=True)])
    vec = np.asarray(vec, dtype=np.float32)
    if vec.ndim != 2 or vec.shape[0] != len(batch) or not np.isfinite(vec).all():
        raise RuntimeError(f"encoder {encoder.identity} returned an array of shape {vec.shape} "
                           f"(finite: {bool(np.isfinite(vec).all())}) for {len(batch)} items")
    return vec


def encode_chunk_task(spec: dict, kind: str, batch: Sequence[Any], wheres: Sequence[str],
                      keys: Sequence[bytes], cache_folder: str | None, identity: str) -> np.ndarray:
    """Cluster task: encode one chunk on a worker and append it to the shared cache.

    The worker builds the encoder from ``spec`` (the arguments of ``get_encoder``) once and keeps it for
    every later chunk it runs; image paths are opened on the worker, so they must be readable there.
    """
    from .registry import get_encoder

    encoder = get_encoder(**spec)
    if encoder.identity != identity:
        raise RuntimeError(f"worker built encoder {encoder.identity}, the client {identity}: install the "
                           "same models and package versions on the workers")
    vec = _encode_batch(encoder, kind, batch, wheres)
    if cache_folder is not None:
        from .cache import DiskStore

        DiskStore(Path(cache_folder), identity).append(keys, vec)
    return vec


def _look_up(items: Sequence[Any], kind: str, encoder: Encoder, cache: EmbeddingCache,
             wheres: Sequence[str]) -> tuple[list[bytes], dict[bytes, int], Any, dict[bytes, np.ndarray]]:
    """Each item's key, the first item of each key, the encoder's cache store and the vectors it holds."""
    keys = [item_key(it, kind, w) for it, w in zip(items, wheres, strict=True)]
    first: dict[bytes, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    try:
        store = cache.store(encoder.identity)
        found = store.get(first)
    except OSError as exc:
        raise OptionError(f"cache folder {cache.root}: cannot be used ({exc}); pass cache=DIR or "
                          f"cache=None", parameter="cache") from None
    return keys, first, store, found


def _encode_on_cluster(client: Any, chunks: list[list[bytes]], spec: dict, job: dict, found: dict,
                       st: EmbedStats, bar: Any) -> None:
    """Encode the missing chunks on the cluster's workers (they append to a shared cache; an in-memory
    cache is filled here)."""
    items, wheres, first, kind = job["items"], job["wheres"], job["first"], job["kind"]
    encoder, cache, store = job["encoder"], job["cache"], job["store"]
    folder = cache.folder(encoder.identity)
    futures = [client.submit(encode_chunk_task, spec, kind, [items[first[k]] for k in ks],
                             [wheres[first[k]] for k in ks], ks, None if folder is None else str(folder),
                             encoder.identity, pure=False, retries=2) for ks in chunks]
    for ks, fut in zip(chunks, futures, strict=True):
        vec = fut.result()
        if folder is None:
            store.put(ks, vec)
        found.update(zip(ks, vec, strict=True))
        st.encoded += len(ks)
        bar.advance(len(ks))


def _encode_here(chunks: list[list[bytes]], job: dict, found: dict, st: EmbedStats, bar: Any) -> None:
    """Encode the missing chunks in this process, storing each as soon as it is done."""
    items, wheres, first, kind = job["items"], job["wheres"], job["first"], job["kind"]
    encoder, cache, store = job["encoder"], job["cache"], job["store"]
    for ks in chunks:
        idx = [first[k] for k in ks]
        vec = _encode_batch(encoder, kind, [items[i] for i in idx], [wheres[i] for i in idx])
        try:
            store.put(ks, vec)
        except OSError as exc:
            raise OptionError(f"cache folder {cache.root}: cannot be written ({exc}); pass cache=DIR "
                              f"or cache=None", parameter="cache") from None
        found.update(zip(ks, vec, strict=True))
        st.encoded += len(ks)
        bar.advance(len(ks))


def embed_items(items: Sequence[Any], kind: str, encoder: Encoder, cache: EmbeddingCache, *,
                wheres: Sequence[str] | None = None, progress: bool = False, chunk: int = CHUNK,
                stats: EmbedStats | None = None, description: str | None = None,
                encoder_spec: dict | None = None) -> np.ndarray:
    """Embeddings (len(items) x d, float32) of texts (``kind='text'``) or images (``kind='image'``).

    ``wheres`` labels each item in error messages (e.g. "runs.jsonl: row 3 (line 3)"). Inside
    ``with execution(client)`` (:func:`promptprism.scale.execution`) and with the ``encoder_spec`` that
    rebuilds the encoder (``get_encoder`` arguments), the chunks
    that miss the cache are encoded on the cluster's workers, which write them to the (shared) cache.
    """
    client = current_client()
    t0 = time.perf_counter()
    n = len(items)
    wheres = list(wheres) if wheres is not None else [f"item {i}" for i in range(n)]
    keys, first, store, found = _look_up(items, kind, encoder, cache, wheres)
    missing = [k for k in first if k not in found]
    st = stats if stats is not None else EmbedStats()
    st.items += n
    st.unique += len(first)
    st.hits += len(first) - len(missing)
    desc = description or f"embedding {kind}s ({encoder.identity.split('-')[0]})"
    chunks = [missing[start : start + chunk] for start in range(0, len(missing), chunk)]
    job = {"items": items, "wheres": wheres, "first": first, "kind": kind, "encoder": encoder,
           "cache": cache, "store": store}
    on_cluster = client is not None and encoder_spec is not None and bool(chunks)
    with progress_bar(len(missing), desc, enabled=progress and bool(chunks), rate="items") as bar:
        if on_cluster:
            _encode_on_cluster(client, chunks, encoder_spec, job, found, st, bar)
        else:
            _encode_here(chunks, job, found, st, bar)
    if n == 0:
        return np.zeros((0, 0), dtype=np.float32)
    dims = {v.shape[0] for v in found.values()}
    if len(dims) != 1:
        raise RuntimeError(f"cache for encoder {encoder.identity} holds vectors of several sizes "
                           f"{sorted(dims)}; remove {cache.folder(encoder.identity)}")
    out = np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
    st.seconds += time.perf_counter() - t0
    return out


def _image_where(where: str, item: Any) -> str:
    if isinstance(item, (str, os.PathLike)) and str(item) not in where:
        return f"{where}: image file {str(Path(item))!r}"
    return where
