"""Charts of the reports' numbers: eigenvalue bars, the bandwidth scan, curves, ranked and grouped bars."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .canvas import NEG_COLOR, POS_COLOR, new_figure, to_png
from .svg import flag_at, value_at


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
    fig = new_figure(6.0, 3.0)
    ax = fig.add_subplot()
    x = np.arange(len(heights))
    null_top = null_top or {}
    band = [
        *[value_at(null_top.get("test"), i) for i in range(len(pos))],
        *[-value_at(null_top.get("reference"), i) for i in range(len(neg))],
    ]
    if any(b == b for b in band):
        ax.bar(x, np.nan_to_num(np.asarray(band, float)), width=0.95, color="#d9dce2", zorder=0,
               label="95% of the permutation null" if not null_top.get("level") else null_top["level"])
    sig = significant or {}
    flags = [*[flag_at(sig.get("test"), i) for i in range(len(pos))],
             *[flag_at(sig.get("reference"), i) for i in range(len(neg))]]
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


def bandwidth_scan(scan: dict) -> bytes:
    """The stable-bandwidth scan: per scanned kernel ('prompt', 'output'), the top eigenvalues against the
    bandwidth multiplier, the chosen one marked."""
    kinds = [k for k in ("prompt", "output") if isinstance(scan.get(k), dict)]
    fig = new_figure(3.6 * max(len(kinds), 1), 3.0)
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

def curves(
    names: Sequence[str],
    series: dict[str, Sequence[float]],
    *,
    ylabel: str,
    styles: dict[str, str] | None = None,
    colors: dict[str, str] | None = None,
) -> bytes:
    """One line per series over the ordered ``names`` (checkpoints)."""
    fig = new_figure(7.0, 3.6)
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
    fig = new_figure(6.4, 0.5 + 0.28 * max(n, 1))
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
    fig = new_figure(6.4, 3.4)
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
