"""Figures for the reports (matplotlib, Agg canvas, PNG bytes) and downscaled image thumbnails.

The figures live by family: :mod:`.canvas` (the drawing surface, PNG bytes, :class:`FiguresUnavailable`),
:mod:`.thumbnails` (numpy/zlib PNG and Pillow thumbnails, no matplotlib), :mod:`.charts` (eigenvalue bars,
the bandwidth scan, curves, bars) and :mod:`.map_figures` (the sample map, the region map, the pixel
matrix). This module gathers them under one name, as the report pages use them (``figures.hbars``).
"""

from __future__ import annotations

from .canvas import NEG_COLOR, POS_COLOR, FiguresUnavailable, new_figure, to_png
from .charts import bandwidth_scan, curves, eigenvalue_bars, grouped_bars, hbars
from .map_figures import matrix_heatmap, region_colors, region_map, scatter_map
from .thumbnails import (
    THUMB_SIZE,
    ImageTooLarge,
    array_thumbnail,
    as_uint8,
    downscale,
    file_thumbnail,
    pil_thumbnail,
    png_bytes,
)

__all__ = [
    "NEG_COLOR",
    "POS_COLOR",
    "THUMB_SIZE",
    "FiguresUnavailable",
    "ImageTooLarge",
    "array_thumbnail",
    "as_uint8",
    "bandwidth_scan",
    "curves",
    "downscale",
    "eigenvalue_bars",
    "file_thumbnail",
    "grouped_bars",
    "hbars",
    "matrix_heatmap",
    "new_figure",
    "pil_thumbnail",
    "png_bytes",
    "region_colors",
    "region_map",
    "scatter_map",
    "to_png",
]
