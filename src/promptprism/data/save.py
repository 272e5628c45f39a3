"""Writing paired sets: :func:`save_paired` writes the ``.npz`` that :func:`~promptprism.data.load_paired`
reads back (the layout every method and ``promptprism embed`` use)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..io import atomic_save_npz

_FLOAT32_MAX = float(np.finfo(np.float32).max)


def float32_embeddings(values: Any, name: str, where: str | None = None) -> np.ndarray:
    """``values`` as float32; InputError naming the first row whose values lie beyond float32's range
    (writing them would store inf, a silently wrong embedding)."""
    arr = np.asarray(values)
    if arr.dtype != np.float32 and arr.size:
        over = np.abs(arr) > _FLOAT32_MAX
        if over.any():
            row, col = (int(i) for i in np.argwhere(over)[0])
            raise InputError(f"{where + ': ' if where else ''}{name}: row {row} (0-based), column {col} is "
                             f"{float(arr[row, col]):.3g}, beyond float32's range (3.4e38) that embeddings "
                             "are stored in; rescale the embeddings")
    return np.asarray(arr, dtype=np.float32)


def paired_arrays(paired: Any, *, ids: Sequence[str] | None = None,
                  encoders: Mapping[str, str] | None = None, **extra: Any) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` layout: ``prompt_embeddings``, ``output_embeddings`` (float32),
    ``prompts``, ``outputs`` and ``ids`` (strings, when known), ``<side>_encoder`` (the encoder identities),
    and any ``extra`` arrays (e.g. ``images``)."""
    where = getattr(paired, "where", None)
    arrays = {name: float32_embeddings(getattr(paired, name), name, where)
              for name in ("prompt_embeddings", "output_embeddings")}
    if paired.prompts is not None:
        arrays["prompts"] = np.array(paired.prompts, dtype=str)
    if paired.outputs is not None:
        arrays["outputs"] = np.array(paired.outputs, dtype=str)
    if ids is not None:
        arrays["ids"] = np.array(list(ids), dtype=str)
    for side, identity in (encoders or {}).items():
        arrays[f"{side}_encoder"] = np.array(identity)
    arrays.update({k: np.asarray(v) for k, v in extra.items()})
    return arrays


def save_paired(path: str | os.PathLike, paired: Any, *, ids: Sequence[str] | None = None,
                encoders: Mapping[str, str] | None = None, **extra: Any) -> Path:
    """Write ``paired`` (a :class:`~promptprism.data.PairedSet`) to the ``.npz`` ``path``, atomically (the
    name is kept exactly). ``load_paired(path)`` reads it back; see :func:`paired_arrays` for the layout."""
    return atomic_save_npz(path, **paired_arrays(paired, ids=ids, encoders=encoders, **extra))
