"""Charts drawn as inline SVG markup by small pure functions: no matplotlib, no raster, no script.

Used where a page's figure is simple enough for a few shapes (the PromptSplit page's eigenvalue bars, its
static sample map and the bandwidth scan): the markup is text in the page, scales with it, prints sharply,
and costs milliseconds where a matplotlib figure costs a second (its import alone about half of that).
Each function returns :class:`~promptprism.report.html.Html` (an ``<svg role="img">`` whose ``aria-label``
is the figure's description); :func:`svg_figure` wraps one in a ``<figure>`` with its caption.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .canvas import NEG_COLOR, POS_COLOR
from .html import Html, el

FONT = "font-family:system-ui,-apple-system,'Segoe UI',sans-serif"
AXIS, NULL_GREY, MUTED = "#333", "#d9dce2", "#555"
#: the static map draws at most this many points (an evenly spaced subsample of the stored map)
MAP_MAX_POINTS = 2_000


def _n(value: float) -> str:
    """A coordinate, short: one decimal, no trailing zeros."""
    return f"{value:.1f}".rstrip("0").rstrip(".") if np.isfinite(value) else "0"


def svg(width: int, height: int, children: list, *, label: str) -> Html:
    """An ``<svg>`` of ``width`` x ``height`` user units that scales to its container's width."""
    return el("svg", el("title", label), children, viewBox=f"0 0 {width} {height}", role="img",
              aria_label=label, style=f"max-width:{width}px;width:100%;height:auto;{FONT}")


def svg_figure(chart: Html, caption: Any = None) -> Html:
    """A chart in a ``<figure>``, with its caption."""
    return el("figure", chart, el("figcaption", caption) if caption else None)


def text(x: float, y: float, s: str, *, size: float = 10, anchor: str = "middle", fill: str = AXIS,
         rotate: float | None = None) -> Html:
    """A label at (x, y) (baseline), optionally rotated about that point."""
    turn = f"rotate({_n(rotate)} {_n(x)} {_n(y)})" if rotate is not None else None
    return el("text", s, x=_n(x), y=_n(y), font_size=_n(size), text_anchor=anchor, fill=fill, transform=turn)


def nice_ticks(lo: float, hi: float, count: int = 5) -> np.ndarray:
    """Round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten, about ``count`` of
    them."""
    if not (np.isfinite(lo) and np.isfinite(hi)) or hi <= lo:
        return np.array([lo if np.isfinite(lo) else 0.0])
    raw = (hi - lo) / max(count, 1)
    power = 10.0 ** np.floor(np.log10(raw))
    step = power * next(m for m in (1.0, 2.0, 5.0, 10.0) if m * power >= raw)
    return np.arange(np.ceil(lo / step), np.floor(hi / step) + 1) * step


def _tick_label(v: float) -> str:
    return "0" if v == 0 else f"{v:.3g}"


def _y_axis(ticks: np.ndarray, y_of, left: float, right: float) -> list:
    """Grid lines and labels of a value axis."""
    out = []
    for t in ticks:
        y = y_of(t)
        out.append(el("line", x1=_n(left), x2=_n(right), y1=_n(y), y2=_n(y), stroke="#eceef2"))
        out.append(text(left - 4, y + 3, _tick_label(float(t)), size=9, anchor="end"))
    return out


def eigenvalue_bars_svg(eigenvalues: Sequence[float], n_each: int = 10, *, null_top: dict | None = None,
                        significant: dict | None = None, label: str = "eigenvalues") -> Html:
    """The top ``n_each`` positive and negative eigenvalues as bars (+1, +2, ... then −1, −2, ...), as
    :func:`promptprism.report.charts.eigenvalue_bars` draws them: ``null_top`` ({'test': [q_k],
    'reference': [...]}, the permutation null's |eigenvalue| per rank) as a grey band behind the bars,
    ``significant`` ({'test': [bool per rank], ...}) drawing the bars of modes that are not significant pale
    and hatched."""
    vals = np.asarray(eigenvalues, dtype=float)
    vals = vals[np.isfinite(vals)]
    pos, neg = np.sort(vals[vals > 0])[::-1][:n_each], np.sort(vals[vals < 0])[:n_each]
    heights = np.r_[pos, neg]
    null_top, sig = null_top or {}, significant or {}
    band = np.array([*[value_at(null_top.get("test"), i) for i in range(pos.size)],
                     *[-value_at(null_top.get("reference"), i) for i in range(neg.size)]], dtype=float)
    flags = [*[flag_at(sig.get("test"), i) for i in range(pos.size)],
             *[flag_at(sig.get("reference"), i) for i in range(neg.size)]]
    width, height, left, top, bottom = 600, 300, 58, 26, 52
    span = np.r_[heights, band[np.isfinite(band)], 0.0]
    lo, hi = float(span.min()), float(span.max())
    lo, hi = (lo - 1.0, hi + 1.0) if hi == lo else (lo - 0.04 * (hi - lo), hi + 0.04 * (hi - lo))
    plot_h = height - top - bottom
    def y_of(v: float) -> float:
        return top + (hi - v) / (hi - lo) * plot_h
    slot = (width - left - 10) / max(heights.size, 1)
    out = _y_axis(nice_ticks(lo, hi), y_of, left, width - 10)
    out.append(el("defs", el("pattern", el("path", d="M0 6L6 0", stroke="#fff", stroke_width="1.2"),
                             id="pp-hatch", width="6", height="6", patternUnits="userSpaceOnUse")))
    for i, (h, b, f) in enumerate(zip(heights, band, flags, strict=True)):
        x0, color = left + i * slot, POS_COLOR if h > 0 else NEG_COLOR
        if np.isfinite(b):
            out.append(_rect(x0 + 0.025 * slot, y_of(b), 0.95 * slot, y_of(0.0), NULL_GREY))
        out.append(_rect(x0 + 0.2 * slot, y_of(h), 0.6 * slot, y_of(0.0), color, pale=f is False))
        name = f"{'+' if h > 0 else '−'}{i + 1 if h > 0 else i - pos.size + 1}"
        out.append(text(x0 + slot / 2, height - bottom + 14, name, size=9 if heights.size > 14 else 10))
    out.append(el("line", x1=_n(left), x2=_n(width - 10), y1=_n(y_of(0.0)), y2=_n(y_of(0.0)), stroke=AXIS))
    out.append(text(left + (width - left) / 2, height - 12, "mode (+: test model does more, −: reference "
                    "does more)", size=10))
    out.append(text(14, top + plot_h / 2, "eigenvalue of Λ", size=10, rotate=-90))
    if np.isfinite(band).any():
        level = null_top.get("level") or "95% of the permutation null"
        out += [_rect(width - 200, 8, 12, 16, NULL_GREY), text(width - 184, 16, str(level), size=9,
                                                              anchor="start")]
    return svg(width, height, out, label=label)


def _rect(x: float, y1: float, w: float, y2: float, fill: str, *, pale: bool = False) -> Html:
    """A bar from y1 to y2 (either order); ``pale``: light and hatched (a mode that is not significant)."""
    y, h = min(y1, y2), max(abs(y2 - y1), 0.5)
    bar = el("rect", x=_n(x), y=_n(y), width=_n(w), height=_n(h), fill=fill,
             fill_opacity="0.35" if pale else None)
    if not pale:
        return bar
    return Html(bar + el("rect", x=_n(x), y=_n(y), width=_n(w), height=_n(h), fill="url(#pp-hatch)",
                         stroke=fill, stroke_width="0.8"))


def value_at(values: Any, i: int) -> float:
    """``values[i]`` as a finite float, or NaN when missing or not finite (a significance record's lists)."""
    try:
        v = float(values[i])
    except (TypeError, IndexError, ValueError):
        return float("nan")
    return v if np.isfinite(v) else float("nan")


def flag_at(values: Any, i: int) -> bool | None:
    """``values[i]`` as a bool, or None when missing."""
    try:
        v = values[i]
    except (TypeError, IndexError):
        return None
    return None if v is None else bool(v)


def _marker_path(x: np.ndarray, y: np.ndarray, shape: str, r: float) -> str:
    """One path drawing a marker at every (x, y): circles ('o') or triangles (anything else)."""
    if shape == "o":
        step = f"m{_n(-r)} 0a{_n(r)} {_n(r)} 0 1 0 {_n(2 * r)} 0a{_n(r)} {_n(r)} 0 1 0 {_n(-2 * r)} 0"
    else:
        step = f"m0 {_n(-1.2 * r)}l{_n(r * 1.05)} {_n(r * 1.8)}h{_n(-2.1 * r)}z"
    return "".join(f"M{_n(a)} {_n(b)}{step}" for a, b in zip(x, y, strict=True))


def scatter_svg(xy: np.ndarray, labels: Sequence[str], markers: Sequence[str], colors: dict[str, str],
                marker_of: dict[str, str], title: str, *, label: str, max_points: int = MAP_MAX_POINTS
                ) -> Html:
    """A 2-D map: points coloured by ``labels`` (legend in ``colors`` order), shaped by ``markers`` (their
    group; ``marker_of``: 'o' circle, else a triangle). Above ``max_points`` points, an evenly spaced
    subsample of them (in their stored order) is drawn; the title says how many."""
    xy, labels, markers = np.asarray(xy, dtype=float), np.asarray(labels).astype(str), np.asarray(markers)
    if len(labels) > max_points:
        keep = np.unique(np.linspace(0, len(labels) - 1, max_points).round().astype(np.int64))
        xy, labels, markers = xy[keep], labels[keep], markers[keep]
        title = f"{title} · {keep.size:,} drawn"
    width, height, pad, legend = 760, 560, 14, 190
    box = width - legend - 2 * pad, height - 2 * pad - 22
    finite = np.isfinite(xy).all(axis=1)
    lo = xy[finite].min(axis=0) if finite.any() else np.zeros(2)
    span = np.maximum((xy[finite].max(axis=0) if finite.any() else np.ones(2)) - lo, 1e-12)
    r = float(np.clip(70.0 / np.sqrt(max(len(labels), 1)), 2.0, 5.0))
    inner = box[0] - 4 * r, box[1] - 4 * r  # (markers stay inside the frame)
    px = pad + 2 * r + (xy[:, 0] - lo[0]) / span[0] * inner[0]
    py = pad + 22 + 2 * r + (1.0 - (xy[:, 1] - lo[1]) / span[1]) * inner[1]
    out = [text(pad + box[0] / 2, pad + 8, title, size=12),
           el("rect", x=_n(pad), y=_n(pad + 22), width=_n(box[0]), height=_n(box[1]), fill="none",
              stroke="#e3e6ea")]
    legend_rows = []
    for name, color in colors.items():
        hit = (labels == name) & finite
        if not hit.any():
            continue
        legend_rows.append((name, color, "o"))
        faint = str(name).startswith("weak")
        for group, shape in marker_of.items():
            sel = hit & (markers == group)
            if sel.any():
                out.append(el("path", d=_marker_path(px[sel], py[sel], shape, r), fill=color,
                              fill_opacity="0.35" if faint else "0.75", stroke="#fff", stroke_width="0.3"))
    legend_rows += [(group, MUTED, shape) for group, shape in marker_of.items()]
    x0 = width - legend + 8
    for i, (name, color, shape) in enumerate(legend_rows):
        y = pad + 40 + 18 * i
        out.append(el("path", d=_marker_path(np.array([x0]), np.array([y - 4.0]), shape, 4.5), fill=color))
        out.append(text(x0 + 10, y, str(name), size=11, anchor="start"))
    return svg(width, height, out, label=label)


SERIES = ("#2f6db5", "#c8641c", "#1a9c8c", "#a8326e", "#7f7f7f")


def bandwidth_scan_svg(scan: dict, *, label: str) -> Html:
    """The stable-bandwidth scan, as :func:`promptprism.report.charts.bandwidth_scan` draws it: per scanned
    kernel ('prompt', 'output') a panel of the top |eigenvalues| against the bandwidth multiplier (log
    scale), the chosen one dashed."""
    kinds = [k for k in ("prompt", "output") if isinstance(scan.get(k), dict)]
    panel_w, height = 330, 260
    out = []
    for i, kind in enumerate(kinds):
        out += _scan_panel(scan[kind], kind, x0=i * panel_w, width=panel_w, height=height)
    return svg(panel_w * max(len(kinds), 1), height, out, label=label)


def _scan_panel(s: dict, kind: str, *, x0: float, width: float, height: float) -> list:
    left, right, top, bottom = x0 + 52, x0 + width - 10, 24, 40
    mult = np.asarray(s.get("multipliers") or [], dtype=float)
    rows = [np.abs(np.asarray(t, dtype=float)) for t in (s.get("top_eigenvalues") or [])
            if isinstance(t, (list, tuple))]
    plateau = "plateau found" if s.get("plateau") else "no plateau: median kept"
    out = [text((left + right) / 2, 14, f"σ_{kind}: {plateau}", size=11)]
    if not rows or mult.size != len(rows) or np.any(mult <= 0):
        return out
    depth = max(r.size for r in rows)
    arr = np.full((len(rows), depth), np.nan)
    for r, vals in enumerate(rows):
        arr[r, : vals.size] = vals
    lx = np.log(mult)
    span = max(float(lx.max() - lx.min()), 1e-12)
    def x_of(v: float) -> float:
        return left + (v - lx.min()) / span * (right - left) if lx.size > 1 else (left + right) / 2
    hi = float(np.nanmax(arr)) if np.isfinite(arr).any() else 1.0
    hi = hi * 1.05 if hi > 0 else 1.0
    def y_of(v: float) -> float:
        return top + (1.0 - v / hi) * (height - top - bottom)
    out += _y_axis(nice_ticks(0.0, hi, 4), y_of, left, right)
    for j in range(depth):
        ok = np.isfinite(arr[:, j])
        pts = " ".join(f"{_n(x_of(a))},{_n(y_of(b))}" for a, b in zip(lx[ok], arr[ok, j], strict=True))
        color = SERIES[j % len(SERIES)]
        out.append(el("polyline", points=pts, fill="none", stroke=color, stroke_width="1.2"))
        out += [el("circle", cx=_n(x_of(a)), cy=_n(y_of(b)), r="2.2", fill=color)
                for a, b in zip(lx[ok], arr[ok, j], strict=True)]
    for a, m in zip(lx, mult, strict=True):
        out.append(text(x_of(a), height - bottom + 13, f"{m:g}×", size=9))
    sigmas, chosen = np.asarray(s.get("sigmas") or [], dtype=float), s.get("chosen")
    if chosen is not None and sigmas.size == mult.size and sigmas.size:
        xc = x_of(lx[int(np.argmin(np.abs(sigmas - float(chosen))))])
        out.append(el("line", x1=_n(xc), x2=_n(xc), y1=_n(top), y2=_n(height - bottom), stroke=AXIS,
                      stroke_dasharray="4 3"))
    out.append(text((left + right) / 2, height - 8, "multiple of the median distance (chosen: dashed)",
                    size=9))
    return out
