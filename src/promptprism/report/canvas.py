"""The drawing surface every report figure shares: a matplotlib ``Figure`` on the Agg canvas, PNG bytes.

Figures are drawn on ``matplotlib.figure.Figure`` with the Agg canvas directly: no pyplot, so nothing here
changes the backend or the state of a notebook that imports it. When matplotlib is missing,
:class:`FiguresUnavailable` says how to get it and the report shows that note instead of the figure.
"""

from __future__ import annotations

import io

POS_COLOR = "#2f6db5"
NEG_COLOR = "#c8641c"


class FiguresUnavailable(RuntimeError):
    """matplotlib (or Pillow, for image files) is not installed."""


def new_figure(width: float, height: float):
    """A ``width`` x ``height`` inch figure (100 dpi) on the Agg canvas; :class:`FiguresUnavailable` without
    matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise FiguresUnavailable("figures need matplotlib: pip install matplotlib") from None
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def to_png(fig, dpi: int = 100) -> bytes:
    """The figure as PNG bytes, cropped to its content (``bbox_inches='tight'``)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", pad_inches=0.08)
    return buf.getvalue()
