"""The Regions page's explorer: a table with one row per region (its size and each generated set's CMS),
each row opening the region view (``#region=<r>``: the region's mask over the pixel grid, each set's CMS
and interval on it, and a few images of every set with the region picked out), and the view's data.

Nothing is recomputed: the values are result.json's, the images the inputs' first few.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import figures
from .common import mapping
from .html import data_uri, el, fmt, p, table

#: images per set in the region view
VIEW_IMAGES = 4


def region_table(result: Any, head: dict) -> Any:
    """One row per region: its size and each set's CMS on it; a row opens the region's view."""
    names = list(result.names)
    rows = [[f"region {r}", f"{size:,}", *(fmt(head["region_cms"][k][r]) for k in range(len(names)))]
            for r, size in enumerate(result.region_sizes)]
    return el(
        "div",
        el("h3", "Per region"),
        p("Click a region for its mask, each generated set's CMS on it and images of every set with the "
          "region picked out.", cls="muted small"),
        table(["region", "pixels", *names], rows, numeric=range(1, 2 + len(names)),
              row_attrs=[{"data_pp_item": True, "data_pp_region": r} for r in range(len(rows))]),
    )


def _sets(inputs: Any, names: list[str]) -> list[tuple[str, Any]]:
    real, gen = mapping(inputs).get("real"), mapping(inputs).get("generated")
    out = [("real", real)] if real is not None else []
    if isinstance(gen, dict):
        out += list(gen.items())
    elif isinstance(gen, (list, tuple)):
        out += list(zip(names, gen, strict=False))
    return out


def region_samples(inputs: Any, names: list[str]) -> tuple[dict[str, list[int]], list[str]]:
    """The first ``VIEW_IMAGES`` images of every set (real first) as thumbnails: ({set: [thumb ids]},
    thumbnails as data URIs); a set whose images cannot be drawn is left out."""
    samples: dict[str, list[int]] = {}
    thumbs: list[str] = []
    for name, arr in _sets(inputs, names):
        idx = np.arange(min(VIEW_IMAGES, len(arr)))
        try:
            first = arr.read(idx) if hasattr(arr, "read") and not isinstance(arr, np.ndarray) else arr[idx]
            picks = [figures.array_thumbnail(im) for im in np.asarray(first, dtype=float)]
        except (TypeError, ValueError, IndexError, figures.FiguresUnavailable):
            continue
        samples[str(name)] = []
        for v in picks:
            samples[str(name)].append(len(thumbs))
            thumbs.append(data_uri(v[0], v[1]))
    return samples, thumbs
