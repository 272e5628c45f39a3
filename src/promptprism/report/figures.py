"""Figures for the reports (matplotlib, Agg canvas, PNG bytes) and downscaled image thumbnails.

Figures are drawn on ``matplotlib.figure.Figure`` with the Agg canvas directly: no pyplot, so nothing here
changes the backend or the state of a notebook that imports it. When matplotlib is missing,
:class:`FiguresUnavailable` says how to get it and the report shows that note instead of the figure.
Thumbnails need no matplotlib: arrays are downscaled with numpy and encoded as PNG with zlib; image files are
read and downscaled with Pillow (and photos stored as JPEG).
"""

from __future__ import annotations

import io
import os
import struct
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

#: longest side of a thumbnail, in pixels (the page shows them at 96 px)
THUMB_SIZE = 96
POS_COLOR = "#2f6db5"
NEG_COLOR = "#c8641c"


class FiguresUnavailable(RuntimeError):
    """matplotlib (or Pillow, for image files) is not installed."""


class ImageTooLarge(ValueError):
    """An image file has more pixels than Pillow's decompression-bomb limit: the page shows a placeholder."""


def _figure(width: float, height: float):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise FiguresUnavailable("figures need matplotlib: pip install matplotlib") from None
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def to_png(fig, dpi: int = 100) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", pad_inches=0.08)
    return buf.getvalue()


# ------------------------------------------------------------------------------------------- thumbnails
def png_bytes(arr: np.ndarray) -> bytes:
    """Encode an (H, W), (H, W, 1), (H, W, 3) or (H, W, 4) uint8 array as PNG (numpy + zlib only)."""
    a = np.asarray(arr, dtype=np.uint8)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[..., 0]
    if a.ndim == 2:
        color, channels = 0, 1
    elif a.ndim == 3 and a.shape[2] in (3, 4):
        color, channels = (2, 3) if a.shape[2] == 3 else (6, 4)
    else:
        raise ValueError(f"cannot encode an array of shape {a.shape} as an image")
    h, w = a.shape[:2]
    raw = np.concatenate([np.zeros((h, 1), np.uint8), a.reshape(h, w * channels)], axis=1).tobytes()

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def as_uint8(image: Any) -> np.ndarray:
    """An image array (H, W[, C]) as uint8: floats in [0, 1] are scaled by 255, 16-bit values by 1/257."""
    a = np.asarray(image)
    if a.dtype == np.uint8:
        return a
    if a.dtype == np.bool_:
        return a.astype(np.uint8) * 255
    kind = a.dtype.kind
    f = np.nan_to_num(a.astype(np.float64))
    if kind == "f" and f.max(initial=0.0) <= 1.0 + 1e-9:
        f = f * 255.0
    elif kind in "iu" and f.max(initial=0.0) > 255:
        f = f / 257.0
    return np.clip(f, 0, 255).round().astype(np.uint8)


def downscale(a: np.ndarray, size: int = THUMB_SIZE) -> np.ndarray:
    """Area-average an (H, W[, C]) uint8 array so that its longest side is at most ``size`` (never
    upscaled)."""
    h, w = a.shape[:2]
    if max(h, w) <= size:
        return a
    scale = size / max(h, w)
    nh, nw = max(1, round(h * scale)), max(1, round(w * scale))
    row_starts = np.searchsorted((np.arange(h) * nh) // h, np.arange(nh))
    col_starts = np.searchsorted((np.arange(w) * nw) // w, np.arange(nw))
    f = np.add.reduceat(np.add.reduceat(a.astype(np.float64), row_starts, axis=0), col_starts, axis=1)
    counts = np.diff(np.r_[row_starts, h])[:, None] * np.diff(np.r_[col_starts, w])[None, :]
    counts = counts.reshape(counts.shape + (1,) * (a.ndim - 2))
    return np.clip(f / counts, 0, 255).round().astype(np.uint8)


def array_thumbnail(image: Any, size: int = THUMB_SIZE) -> tuple[bytes, str, bool]:
    """(PNG bytes, mime, pixelated): an image array downscaled; small images stay small and the page
    enlarges them without smoothing (``pixelated``)."""
    a = as_uint8(image)
    if a.ndim == 3 and a.shape[2] not in (1, 3, 4) and a.shape[0] in (1, 3, 4):  # CHW -> HWC
        a = np.moveaxis(a, 0, -1)
    small = max(a.shape[:2]) <= 32
    return png_bytes(downscale(a, size)), "image/png", small


def file_thumbnail(path: str | os.PathLike, size: int = THUMB_SIZE) -> tuple[bytes, str, bool]:
    """(bytes, mime, pixelated) of an image file downscaled with Pillow: JPEG for photos, PNG for small or
    transparent images."""
    try:
        from PIL import Image
    except ImportError:
        raise FiguresUnavailable("image thumbnails need Pillow: pip install pillow") from None
    try:
        with Image.open(path) as im:
            return _encode_thumbnail(im, size)
    except Image.DecompressionBombError as exc:
        raise ImageTooLarge(f"{os.path.basename(path)}: too many pixels for a thumbnail ({exc})") from None


def _encode_thumbnail(im: Any, size: int) -> tuple[bytes, str, bool]:
    from PIL import Image

    im.load()
    small = max(im.size) <= 32
    has_alpha = im.mode in ("RGBA", "LA", "PA") or "transparency" in im.info
    im = im.convert("RGBA" if has_alpha else "RGB")
    im.thumbnail((size, size), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    if small or has_alpha:
        im.save(buf, format="PNG", optimize=True)
        return buf.getvalue(), "image/png", small
    im.save(buf, format="JPEG", quality=82, optimize=True)
    return buf.getvalue(), "image/jpeg", False


def pil_thumbnail(image: Any, size: int = THUMB_SIZE) -> tuple[bytes, str, bool]:
    """A thumbnail of a PIL image, an array or a path (whatever an image source hands back)."""
    if isinstance(image, (str, os.PathLike)):
        return file_thumbnail(image, size)
    if hasattr(image, "convert") and hasattr(image, "size"):  # a PIL image
        return array_thumbnail(np.asarray(image.convert("RGB")), size)
    return array_thumbnail(image, size)


# ------------------------------------------------------------------------------------------------ charts
def eigenvalue_bars(
    eigenvalues: Sequence[float],
    n_each: int = 10,
    *,
    null_top: dict | None = None,
    significant: dict | None = None,
) -> bytes:
    """The top ``n_each`` positive and negative eigenvalues as bars (+1, +2, ... then -1, -2, ...).

    ``null_top``: ``{'test': [q_1, q_2, ...], 'reference': [...]}``, the permutation null's quantile of the
    k-th largest |eigenvalue| of each sign, drawn as a grey band behind the bars (a bar inside it is what
    chance alone gives). ``significant``: ``{'test': [bool per rank], 'reference': [...]}``; bars of modes
    that are not significant are drawn pale and hatched.
    """
    vals = np.asarray(eigenvalues, dtype=float)
    vals = vals[np.isfinite(vals)]
    pos = np.sort(vals[vals > 0])[::-1][:n_each]
    neg = np.sort(vals[vals < 0])[:n_each]
    labels = [f"+{i}" for i in range(1, len(pos) + 1)] + [f"−{i}" for i in range(1, len(neg) + 1)]
    heights = np.r_[pos, neg]
    fig = _figure(6.0, 3.0)
    ax = fig.add_subplot()
    x = np.arange(len(heights))
    null_top = null_top or {}
    band = [
        *[_at(null_top.get("test"), i) for i in range(len(pos))],
        *[-_at(null_top.get("reference"), i) for i in range(len(neg))],
    ]
    if any(b == b for b in band):
        ax.bar(x, np.nan_to_num(np.asarray(band, float)), width=0.95, color="#d9dce2", zorder=0,
               label="95% of the permutation null" if not null_top.get("level") else null_top["level"])
    sig = significant or {}
    flags = [*[_flag(sig.get("test"), i) for i in range(len(pos))],
             *[_flag(sig.get("reference"), i) for i in range(len(neg))]]
    colors = [POS_COLOR] * len(pos) + [NEG_COLOR] * len(neg)
    for xi, h, c, f in zip(x, heights, colors, flags, strict=True):
        ax.bar(xi, h, width=0.6, color=c, alpha=0.35 if f is False else 1.0,
               hatch="///" if f is False else None, edgecolor=c if f is False else None, zorder=2)
    ax.axhline(0, color="#333", lw=0.8)
    ax.set_xticks(x, labels, fontsize=7 if len(labels) > 14 else 8)
    ax.set_ylabel("eigenvalue of Λ")
    ax.set_xlabel("mode (+: test model does more, −: reference does more)", fontsize=9)
    if any(b == b for b in band):
        ax.legend(fontsize=7, frameon=False, loc="upper right")
    ax.spines[["top", "right"]].set_visible(False)
    return to_png(fig)


def _at(values: Any, i: int) -> float:
    try:
        v = float(values[i])
    except (TypeError, IndexError, ValueError):
        return float("nan")
    return v if np.isfinite(v) else float("nan")


def _flag(values: Any, i: int) -> bool | None:
    try:
        v = values[i]
    except (TypeError, IndexError):
        return None
    return None if v is None else bool(v)


def bandwidth_scan(scan: dict) -> bytes:
    """The stable-bandwidth scan: per scanned kernel ('prompt', 'output'), the top eigenvalues against the
    bandwidth multiplier, the chosen one marked."""
    kinds = [k for k in ("prompt", "output") if isinstance(scan.get(k), dict)]
    fig = _figure(3.6 * max(len(kinds), 1), 3.0)
    for i, kind in enumerate(kinds, 1):
        s = scan[kind]
        ax = fig.add_subplot(1, max(len(kinds), 1), i)
        mult = np.asarray(s.get("multipliers") or [], dtype=float)
        tops = s.get("top_eigenvalues") or []
        width = max((len(t) for t in tops if isinstance(t, (list, tuple))), default=0)
        arr = np.full((len(tops), width), np.nan)
        for r, t in enumerate(tops):
            if isinstance(t, (list, tuple)):
                arr[r, : len(t)] = np.asarray(t, dtype=float)
        if mult.size == arr.shape[0] and width:
            for j in range(width):
                ax.plot(mult, np.abs(arr[:, j]), "-o", ms=3, lw=1.0, label=f"|λ| #{j + 1}" if j < 3 else None)
            ax.set_xscale("log")
            ax.minorticks_off()
            ax.set_xticks(mult, [f"{m:g}×" for m in mult], fontsize=7)
        chosen = s.get("chosen")
        sigmas = np.asarray(s.get("sigmas") or [], dtype=float)
        if chosen is not None and sigmas.size == mult.size and sigmas.size:
            j = int(np.argmin(np.abs(sigmas - float(chosen))))
            ax.axvline(mult[j], color="#333", ls="--", lw=0.8, label="chosen")
        ax.set_xlabel("multiple of the median distance", fontsize=8)
        ax.set_ylabel("top |eigenvalues|", fontsize=8)
        plateau = "plateau found" if s.get("plateau") else "no plateau: median kept"
        ax.set_title(f"σ_{kind}: {plateau}", fontsize=9)
        ax.legend(fontsize=6, frameon=False)
        ax.spines[["top", "right"]].set_visible(False)
    return to_png(fig)


def scatter_map(
    xy: np.ndarray,
    labels: Sequence[str],
    groups: Sequence[str],
    colors: dict[str, str],
    markers: Sequence[str],
    marker_of: dict[str, str],
    title: str,
) -> bytes:
    """A 2-D map: points coloured by ``labels`` (legend order = ``colors`` order), shaped by ``markers``."""
    fig = _figure(7.6, 5.6)
    ax = fig.add_subplot()
    labels = np.asarray(labels)
    markers = np.asarray(markers)
    # marker area by the number of points: readable dots at a hundred samples, no blobs at thousands
    size = float(np.clip(6000.0 / max(len(labels), 1), 8.0, 60.0))
    for name, color in colors.items():
        for group in groups:
            sel = (labels == name) & (markers == group)
            if not sel.any():
                continue
            ax.scatter(
                xy[sel, 0],
                xy[sel, 1],
                s=size,
                c=color,
                marker=marker_of[group],
                linewidths=0.3,
                alpha=0.75 if not str(name).startswith("weak") else 0.35,
            )
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], ls="", marker="o", color=c, label=n) for n, c in colors.items() if (labels == n).any()
    ]
    handles += [Line2D([], [], ls="", marker=marker_of[g], color="#555", label=g) for g in groups]
    ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=10)
    return to_png(fig)


def region_map(labels: np.ndarray, *, background: np.ndarray | None = None) -> bytes:
    """The region of each pixel over the (H, W) grid, numbered; over ``background`` (an image) if given."""
    from matplotlib.colors import ListedColormap

    lab = np.asarray(labels)
    h, w = lab.shape
    k = int(lab.max()) + 1 if lab.size else 1
    cmap = ListedColormap(region_colors(max(k, 2)))
    fig = _figure(4.2 * (1 if background is None else 2), 4.2 * h / max(w, 1) + 0.4)
    axes = [fig.add_subplot(1, 1 if background is None else 2, 1)]
    axes[0].imshow(lab, cmap=cmap, vmin=-0.5, vmax=max(k, 2) - 0.5, interpolation="nearest")
    if h * w <= 32 * 32:
        for r in range(h):
            for c in range(w):
                axes[0].text(
                    c, r, str(lab[r, c]), ha="center", va="center", fontsize=6 if w > 16 else 8, color="white"
                )
    else:
        for region in range(k):
            rr, cc = np.nonzero(lab == region)
            if rr.size:
                axes[0].text(
                    cc.mean(),
                    rr.mean(),
                    str(region),
                    ha="center",
                    va="center",
                    fontsize=10,
                    color="white",
                    weight="bold",
                )
    axes[0].set_title(f"{k} region{'s' if k != 1 else ''} over the {h}×{w} pixel grid", fontsize=10)
    if background is not None:
        ax = fig.add_subplot(1, 2, 2)
        bg = as_uint8(background)
        ax.imshow(
            bg if bg.ndim == 3 and bg.shape[2] == 3 else bg.squeeze(), cmap="gray", interpolation="nearest"
        )
        ax.imshow(lab, cmap=cmap, vmin=-0.5, vmax=max(k, 2) - 0.5, alpha=0.45, interpolation="nearest")
        ax.set_title("over the mean real image", fontsize=10)
        axes.append(ax)
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
    return to_png(fig)


def region_colors(k: int) -> list[str]:
    """One colour per region, the same in the region map and the curves."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    cmap = colormaps["tab10" if k <= 10 else "tab20"]
    return [to_hex(cmap(i % cmap.N)) for i in range(k)]


def matrix_heatmap(m: np.ndarray, boundaries: Sequence[int], *, title: str, max_side: int = 400) -> bytes:
    """A square matrix (already ordered), region boundaries drawn; block-averaged above ``max_side``."""
    a = np.asarray(m, dtype=float)
    d = a.shape[0]
    step = max(1, int(np.ceil(d / max_side)))
    if step > 1:
        k = -(-d // step)
        pad = np.full((k * step, k * step), np.nan)
        pad[:d, :d] = a
        a = np.nanmean(pad.reshape(k, step, k, step), axis=(1, 3))
    fig = _figure(5.0, 4.4)
    ax = fig.add_subplot()
    im = ax.imshow(a, cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
    for b in boundaries:
        ax.axhline(b / step - 0.5, color="white", lw=0.8)
        ax.axvline(b / step - 0.5, color="white", lw=0.8)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03)
    ax.set_title(title + (f" (block means of {step}×{step})" if step > 1 else ""), fontsize=9)
    ax.set_xlabel("pixel (ordered by region)", fontsize=8)
    ax.set_ylabel("pixel (ordered by region)", fontsize=8)
    ax.set_xticks([])
    ax.set_yticks([])
    return to_png(fig)


def curves(
    names: Sequence[str],
    series: dict[str, Sequence[float]],
    *,
    ylabel: str,
    styles: dict[str, str] | None = None,
    colors: dict[str, str] | None = None,
) -> bytes:
    """One line per series over the ordered ``names`` (checkpoints)."""
    fig = _figure(7.0, 3.6)
    ax = fig.add_subplot()
    x = np.arange(len(names))
    styles = styles or {}
    colors = colors or {}
    for label, ys in series.items():
        ax.plot(
            x,
            np.asarray(ys, dtype=float),
            styles.get(label, "-o"),
            label=label,
            ms=4,
            lw=1.2 if label not in styles else 1.8,
            **({"color": colors[label]} if label in colors else {}),
        )
    ax.set_xticks(
        x,
        [str(n) for n in names],
        rotation=30 if len(names) > 4 else 0,
        ha="right" if len(names) > 4 else "center",
        fontsize=8,
    )
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return to_png(fig)


def hbars(
    labels: Sequence[str],
    values: Sequence[float],
    *,
    xlabel: str,
    limit: float | None = None,
    color: str = POS_COLOR,
) -> bytes:
    """Horizontal bars, first label on top (rankings)."""
    n = len(labels)
    fig = _figure(6.4, 0.5 + 0.28 * max(n, 1))
    ax = fig.add_subplot()
    y = np.arange(n)
    ax.barh(y, np.asarray(values, dtype=float), color=color)
    ax.set_yticks(y, [_short(s, 48) for s in labels], fontsize=8)
    ax.invert_yaxis()
    if limit is not None:
        ax.set_xlim(0, limit)
    ax.set_xlabel(xlabel, fontsize=9)
    ax.spines[["top", "right"]].set_visible(False)
    return to_png(fig)


def grouped_bars(groups: Sequence[str], series: dict[str, Sequence[float]], *, ylabel: str) -> bytes:
    """Bars per group (e.g. one per model) for each series (e.g. each score)."""
    fig = _figure(6.4, 3.4)
    ax = fig.add_subplot()
    k = max(len(series), 1)
    width = 0.8 / k
    x = np.arange(len(groups))
    for i, (label, ys) in enumerate(series.items()):
        ax.bar(x + (i - (k - 1) / 2) * width, np.asarray(ys, dtype=float), width, label=label)
    ax.set_xticks(x, [_short(g, 24) for g in groups], fontsize=8)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return to_png(fig)


def _short(s: Any, n: int) -> str:
    s = str(s)
    return s if len(s) <= n else s[: n - 1] + "…"
