"""Figures drawn over a plane or a grid: the 2-D map of samples, the map of pixel regions, and a
pixel-by-pixel matrix as a heatmap."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .canvas import new_figure, to_png
from .thumbnails import as_uint8


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
    fig = new_figure(7.6, 5.6)
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
    fig = new_figure(4.2 * (1 if background is None else 2), 4.2 * h / max(w, 1) + 0.4)
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
    fig = new_figure(5.0, 4.4)
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
