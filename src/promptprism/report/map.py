"""The PromptSplit page's map: the result's sample map (``PromptSplitResult.layout``), drawn.

The map is computed once, when the result is written (:mod:`promptprism.methods.promptsplit.layout`); this
module only draws it. A result without one (a library fit rendered with its sets) gets it computed here, by
that module, with this module's :func:`embed_2d` as the projection (kernel PCA unless the stored map
names another).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..data.paired import PairedSet
from ..methods.promptsplit.layout import (  # noqa: F401 (the map's constants, used by the page and tests)
    MAP_MODES_PER_SIGN,
    MAP_POINTS,
    PROJECTION,
    PROJECTION_NAMES,
    WEAK,
    WEAK_NAME,
    embed_2d,
    joint_features,
    mode_label,
    mode_scores,
    sample_map,
    usable_rows,
)
from .html import el, note, p
from .svg import scatter_svg

#: what the caption says of each projection
PROJECTION_CAPTIONS = {
    "t-sne": "t-SNE places similar samples close together; distances between far-apart groups mean little.",
    "kernel-pca": "Kernel PCA (the result's kernel) keeps the two directions of largest variance in its "
                  "feature space: close points are similar, but groups may overlap in two dimensions.",
}
POS_PALETTE = ("#1f4e9c", "#3f8fd8", "#1a9c8c", "#7fb3e8")
NEG_PALETTE = ("#c8461c", "#e8912c", "#a8326e", "#f0b87a")


def mode_colors(labels: list[str]) -> dict[str, str]:
    """A colour per mode label (blues for the test side, oranges for the reference) and grey for weak."""
    colors: dict[str, str] = {}
    pos_i = neg_i = 0
    for lab in labels:
        if lab.startswith("+"):
            colors[lab], pos_i = POS_PALETTE[pos_i % len(POS_PALETTE)], pos_i + 1
        else:
            colors[lab], neg_i = NEG_PALETTE[neg_i % len(NEG_PALETTE)], neg_i + 1
    colors[WEAK_NAME] = "#c9ccd2"
    colors.setdefault("no mode", "#888888")
    return colors


def _map_caption(result: Any, shown: int, total: int, left_out: int, per_sign: int, origin: str,
                 weak: bool, projection: str) -> Any:
    """How the map was sampled and coloured, and how to read it."""
    rate = shown / total
    extreme = (
        f" {left_out:,} sampled rows with non-finite or extreme embeddings are left out of the map."
        if left_out
        else ""
    )
    return p(
        f"Sampling rate: {shown:,} of {total:,} samples ({rate:.1%}"
        + ("" if shown == total else f", a random subsample seeded with {result.seed}, proportional per set")
        + f").{extreme} "
        f"Each point is coloured by the mode (top {per_sign} of each sign: {origin}) on which it has "
        "the largest |score|, each mode's scores measured in units of their 99th percentile |score| on "
        "the map's samples"
        + (f"; grey, '{WEAK_NAME}': below {WEAK:g} of that on every coloured mode. " if weak else ". ")
        + "Circles: test model, triangles: reference. "
        + (PROJECTION_CAPTIONS.get(projection, PROJECTION_CAPTIONS["t-sne"])),
        cls="muted small",
    )


def map_label(projection: str) -> str:
    """The map figure's accessible name: 'kernel PCA map of the samples coloured by mode'."""
    return f"{PROJECTION_NAMES.get(projection, 't-SNE')} map of the samples coloured by mode"


def _scatter(xy: np.ndarray, assign: np.ndarray, colors: dict, sides: list[str], names: dict[str, str],
             shown: int, total: int, projection: str) -> Any:
    """The static map figure (inline SVG: what a page without scripts, or printed, shows): colour by mode,
    marker by model."""
    markers = [names[side] for side in sides]
    return el("figure", scatter_svg(
        xy, assign.astype(str), markers, colors, {names["test"]: "o", names["reference"]: "^"},
        f"{PROJECTION_NAMES.get(projection, 't-SNE')} of the joint (prompt, output) embeddings · "
        f"{shown:,} of {total:,} samples",
        label=map_label(projection)))


def layout_of(result: Any, sets: dict[str, PairedSet], map_points: int,
              step: Callable[[str], None] = lambda _: None) -> dict | None:
    """The result's stored sample map when it was made for ``map_points``, holds every sample within them,
    or no embeddings are at hand to make another; else one computed from ``sets`` (None without both sets
    and a stored map)."""
    stored = getattr(result, "layout", None) or {}
    shown = int(stored.get("shown", -1)) if stored else -1
    whole = shown == int(stored.get("total", -2)) <= map_points if stored else False
    if stored and (int(stored.get("map_points", MAP_POINTS)) == int(map_points) or whole
                   or set(sets) != {"test", "reference"}):
        return stored
    if set(sets) != {"test", "reference"}:
        return None
    projection = stored.get("projection", PROJECTION) if stored else PROJECTION
    return sample_map(result, sets, map_points, embed=lambda x, seed: embed_2d(x, seed, projection),
                      step=step, projection=projection)


def map_section(
    result: Any,
    sets: dict[str, PairedSet],
    map_points: int,
    names: dict[str, str],
    *,
    step: Callable[[str], None] = lambda _: None,
    sink: dict | None = None,
    texts: dict[str, PairedSet] | None = None,
) -> list:
    """The map and its caption (or a note saying why there is none); ``step(name)`` reports progress.
    ``sink``, when given, receives the drawn points for the interactive map: ``x``, ``y``, ``mode``,
    ``points`` ((set, index) per point) and ``colors``, when ``texts`` (default: ``sets``; e.g. a manifest's
    texts read again without embeddings) hold both sets' samples."""
    layout = layout_of(result, sets, map_points, step)
    if layout is None:
        return [
            note(
                "The map needs the embeddings of both sets, which result.json does not hold: write the "
                "report from the command that computed the result, or keep the inputs where config "
                "names them and run promptprism report DIR."
            )
        ]
    if "note" in layout:
        return [note(layout["note"])]
    xy = np.column_stack([layout["x"], layout["y"]]).astype(float)
    assign = np.asarray(layout["mode"], dtype=object)
    colors = mode_colors(list(layout["labels"]))
    if sink is not None and set(texts or sets) == {"test", "reference"}:  # (the views need their texts)
        sink.update(x=list(layout["x"]), y=list(layout["y"]), mode=list(layout["mode"]),
                    points=[(t, int(i)) for t, i in layout["points"]], colors=colors)
    step("map: drawing")
    shown, total = int(layout["shown"]), int(layout["total"])
    projection = layout.get("projection", "t-sne")  # (maps stored before the option were t-SNE's)
    fig = _scatter(xy, assign, colors, [t for t, _ in layout["points"]], names, shown, total, projection)
    return [
        el("div", cls="pp-widget", data_pp_widget="map"),
        el("div", fig, cls="pp-static"),
        _map_caption(result, shown, total, int(layout["left_out"]), int(layout["per_sign"]), layout["origin"],
                     bool((assign == WEAK_NAME).any()), projection),
    ]
