"""The PromptSplit page's map: a seeded subsample of the samples, embedded in 2-D, coloured by mode.

Cost is bounded whatever n is: at most ``MAP_POINTS`` samples (a seeded subsample, proportional per set; the
rate is printed under the map) are scored on their own top modes by the exact route (one small Gram matrix,
Lanczos) and embedded by t-SNE with few iterations. Rows whose embeddings are not finite or are extreme
(e.g. one row scaled by 1e300, which would overflow every distance) are left out of the map with a note, so
the embedding never sees a value it cannot handle.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ..data.paired import PairedSet
from . import figures
from .common import safe_figure
from .html import el, note, p

#: at most this many samples go into the map (a seeded subsample above it)
MAP_POINTS = 600
#: t-SNE iterations (sklearn's minimum is 250, the early-exaggeration phase)
TSNE_ITERATIONS = 300
#: the map colours the top modes of each sign, up to this many
MAP_MODES_PER_SIGN = 4
#: a point is 'weak' when its largest |score| is below this fraction of its mode's 99th percentile
WEAK = 0.25
#: a row is 'extreme' when its largest |coordinate| exceeds this multiple of the median row's
EXTREME = 1e6
POS_PALETTE = ("#1f4e9c", "#3f8fd8", "#1a9c8c", "#7fb3e8")
NEG_PALETTE = ("#c8461c", "#e8912c", "#a8326e", "#f0b87a")
WEAK_NAME = "weak (models agree)"


def mode_label(side: str, rank: int) -> str:
    """'+1' for the first positive (test) mode, '−2' for the second negative (reference) one."""
    return f"{'+' if side == 'test' else '−'}{rank}"


def _subsample(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(n, size=min(k, n), replace=False)) if k < n else np.arange(n)


def _row_scale(x: np.ndarray) -> np.ndarray:
    """max |x_ij| per row, without overflow (no squares)."""
    with np.errstate(invalid="ignore"):
        return np.abs(x).max(axis=1) if x.shape[1] else np.zeros(x.shape[0])


def _unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, computed after dividing by the row's max |entry| (no overflow)."""
    s = _row_scale(x)
    x = x / np.where(s > 0, s, 1.0)[:, None]
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-300)


def joint_features(t: np.ndarray, z: np.ndarray, cfg: dict) -> np.ndarray:
    """Coordinates whose Euclidean distances follow the product kernel: [t/σ_t, z/σ_z] (gaussian) or the
    unit-normalised [t, z] (cosine)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if cfg.get("kernel") == "gaussian" and cfg.get("sigma_prompt") and cfg.get("sigma_output"):
            return np.hstack([t / float(cfg["sigma_prompt"]), z / float(cfg["sigma_output"])])
        return np.hstack([_unit_rows(t), _unit_rows(z)])


def usable_rows(feats: np.ndarray) -> np.ndarray:
    """Boolean mask of rows that are finite and not extreme (largest |entry| at most ``EXTREME`` times the
    median row's): the rows a distance-based embedding can take without overflow."""
    scale = _row_scale(feats)
    ok = np.isfinite(feats).all(axis=1) & np.isfinite(scale)
    if not ok.any():
        return ok
    med = float(np.median(scale[ok]))
    limit = EXTREME * med if med > 0 else EXTREME
    return ok & (scale <= limit) & (scale < 1e100)


def mode_scores(
    result: Any, t: dict[str, np.ndarray], z: dict[str, np.ndarray], n_modes: int
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Exact-route scores of the given samples (test rows first) on their own top ``n_modes`` modes per sign,
    with the result's kernel, bandwidths and eta: (scores (N, k), labels '+1', '−1', ..., eigenvalues)."""
    from ..methods.promptsplit import joint_gram
    from ..methods.promptsplit.core import signed_weights
    from ..stats.eigen import select_modes, weighted_gram_eigenpairs

    cfg = result.config
    n, m = t["test"].shape[0], t["reference"].shape[0]
    eta = float(cfg.get("eta", 1.0))
    gram = joint_gram(
        t["test"],
        z["test"],
        t["reference"],
        z["reference"],
        kernel=cfg.get("kernel", "gaussian"),
        sigma_prompt=cfg.get("sigma_prompt"),
        sigma_output=cfg.get("sigma_output"),
    )
    # a few modes of a large Gram matrix: Lanczos (ARPACK, to machine precision) beats the full spectrum
    eig = weighted_gram_eigenpairs(
        gram,
        signed_weights(n, m, eta),
        n_positive=n_modes,
        n_negative=n_modes,
        solver="lanczos" if n + m > 500 else "auto",
    )
    sel = select_modes(eig.eigenvalues, n_modes, 1.0 + eta)
    vals = eig.eigenvalues[sel]
    labels, counts = [], {"test": 0, "reference": 0}
    for v in vals:
        side = "test" if v > 0 else "reference"
        counts[side] += 1
        labels.append(mode_label(side, counts[side]))
    return eig.scores[:, sel], labels, vals


def embed_2d(x: np.ndarray, seed: int) -> np.ndarray:
    """t-SNE (sklearn, Barnes-Hut, ``TSNE_ITERATIONS`` iterations, PCA init) of rows already checked by
    :func:`usable_rows`; the rows are centred and scaled to unit median norm first."""
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE
    from threadpoolctl import threadpool_limits

    n = x.shape[0]
    x = x - x.mean(axis=0)
    scale = float(np.median(np.linalg.norm(x, axis=1)))
    x = x / (scale if scale > 0 else 1.0)
    if x.shape[1] > 50 and n > 50:
        x = PCA(50, random_state=seed).fit_transform(x)
    perplexity = float(min(30.0, max(2.0, (n - 1) / 3.0)))
    tsne = TSNE(
        2,
        perplexity=perplexity,
        init="pca",
        learning_rate="auto",
        max_iter=TSNE_ITERATIONS,
        random_state=seed,
    )
    # few OpenMP threads: t-SNE's Barnes-Hut loop slows down by 10x or more when its threads compete with
    # other work for the cores, and gains little from many threads at a few hundred points
    with threadpool_limits(max(1, min(4, (os.cpu_count() or 2) // 2)), user_api="openmp"):
        return tsne.fit_transform(x)


def _origin(result: Any, whole: bool, vals: np.ndarray, per_sign: int) -> str:
    if whole and result.method == "exact":
        ref = np.r_[
            [mm.eigenvalue for mm in result.positive_modes[:per_sign]],
            [mm.eigenvalue for mm in result.negative_modes[:per_sign]],
        ]
        mine = np.r_[vals[vals > 0], vals[vals < 0]]
        agree = ref.size == mine.size and np.allclose(np.sort(ref), np.sort(mine), rtol=1e-6, atol=1e-12)
        return (
            "the result's own modes"
            if agree
            else "modes recomputed on these samples (their eigenvalues differ from the result's)"
        )
    if whole:
        return f"the exact route's modes on all samples (the result used the {result.method} route)"
    return "modes re-estimated by the exact route on this subsample"


def _assign(scores: np.ndarray, labels: list[str]) -> tuple[np.ndarray, dict[str, str]]:
    if scores.shape[1] == 0:
        return np.array(["no mode"] * scores.shape[0], dtype=object), {"no mode": "#888888"}
    # |score| in units of the mode's own spread (its 99th percentile here), so that the top mode, whose
    # scores are the largest, does not take every point
    spread = np.quantile(np.abs(scores), 0.99, axis=0)
    strength = np.abs(scores) / np.where(spread > 0, spread, 1.0)
    assign = np.array([labels[j] for j in strength.argmax(axis=1)], dtype=object)
    assign[strength.max(axis=1) < WEAK] = WEAK_NAME
    colors: dict[str, str] = {}
    pos_i = neg_i = 0
    for lab in labels:
        if lab.startswith("+"):
            colors[lab], pos_i = POS_PALETTE[pos_i % len(POS_PALETTE)], pos_i + 1
        else:
            colors[lab], neg_i = NEG_PALETTE[neg_i % len(NEG_PALETTE)], neg_i + 1
    colors[WEAK_NAME] = "#c9ccd2"
    return assign, colors


def _sample_indices(result: Any, map_points: int) -> tuple[dict[str, np.ndarray], int]:
    """The map's seeded subsample, proportional per set: ({set: row indices}, points asked for)."""
    total = result.n_test + result.n_reference
    k = max(2, min(int(map_points), total))
    rng = np.random.default_rng(result.seed)
    k_test = min(result.n_test, max(1, round(k * result.n_test / total)))
    idx = {
        "test": _subsample(result.n_test, k_test, rng),
        "reference": _subsample(result.n_reference, k - k_test, rng),
    }
    return idx, k


def _keep_usable(idx: dict, t: dict, z: dict, feats: np.ndarray) -> tuple[dict, dict, dict, np.ndarray, int]:
    """The sampled rows whose joint features are usable (finite, not extreme): (idx, t, z, feats, number
    left out)."""
    keep = usable_rows(feats)
    left_out = int((~keep).sum())
    if not left_out:
        return idx, t, z, feats, 0
    n_t = len(idx["test"])
    part = {"test": keep[:n_t], "reference": keep[n_t:]}
    return (
        {s: idx[s][part[s]] for s in idx},
        {s: t[s][part[s]] for s in t},
        {s: z[s][part[s]] for s in z},
        feats[keep],
        left_out,
    )


def _map_caption(result: Any, shown: int, total: int, left_out: int, per_sign: int, origin: str,
                 weak: bool) -> Any:
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
        + "Circles: test model, triangles: reference. t-SNE places similar samples close together; "
        "distances between far-apart groups mean little.",
        cls="muted small",
    )


def _scatter(xy: np.ndarray, assign: np.ndarray, colors: dict, idx: dict, names: dict[str, str],
             shown: int, total: int) -> Any:
    """The static t-SNE figure: colour by mode, marker by model."""
    groups = [names["test"], names["reference"]]
    markers = [names["test"]] * len(idx["test"]) + [names["reference"]] * len(idx["reference"])
    return safe_figure(
        figures.scatter_map,
        xy,
        assign.astype(str),
        groups,
        colors,
        markers,
        {names["test"]: "o", names["reference"]: "^"},
        f"t-SNE of the joint (prompt, output) embeddings · {shown:,} of {total:,} samples",
        alt="t-SNE map of the samples coloured by mode",
    )


def map_section(
    result: Any,
    sets: dict[str, PairedSet],
    map_points: int,
    names: dict[str, str],
    *,
    step: Callable[[str], None] = lambda _: None,
    sink: dict | None = None,
) -> list:
    """The map and its caption (or a note saying why there is none); ``step(name)`` reports progress.
    ``sink``, when given, receives the drawn points for the interactive map: ``x``, ``y``, ``mode``,
    ``points`` ((set, index) per point) and ``colors``."""
    if set(sets) != {"test", "reference"}:
        return [
            note(
                "The map needs the embeddings of both sets, which result.json does not hold: write the "
                "report from the command that computed the result, or keep the inputs where config "
                "names them and run promptprism report DIR."
            )
        ]
    total = result.n_test + result.n_reference
    idx, k = _sample_indices(result, map_points)
    if min(len(v) for v in idx.values()) < 2 or k < 12:
        return [note(f"too few samples ({k}) for a map")]
    t = {s: np.asarray(sets[s].prompt_embeddings[idx[s]], dtype=np.float64) for s in idx}
    z = {s: np.asarray(sets[s].output_embeddings[idx[s]], dtype=np.float64) for s in idx}
    drawn = sum(len(v) for v in idx.values())
    feats = joint_features(
        np.vstack([t["test"], t["reference"]]), np.vstack([z["test"], z["reference"]]), result.config
    )
    idx, t, z, feats, left_out = _keep_usable(idx, t, z, feats)
    if left_out and (min(len(v) for v in idx.values()) < 2 or feats.shape[0] < 12):
        return [
            note(
                f"map not drawn: {left_out:,} of the {drawn:,} sampled rows have non-finite or extreme "
                "embeddings (at this kernel's bandwidths) and too few remain"
            )
        ]
    per_sign = min(MAP_MODES_PER_SIGN, int(result.config.get("n_modes") or MAP_MODES_PER_SIGN))
    step("map: mode scores of the sampled points")
    scores, labels, vals = mode_scores(result, t, z, per_sign)
    if not np.isfinite(scores).all():
        return [note("map not drawn: the sampled points' mode scores are not finite")]
    shown = feats.shape[0]
    origin = _origin(result, shown == total, vals, per_sign)
    step("map: t-SNE embedding")
    xy = embed_2d(feats, result.seed)
    assign, colors = _assign(scores, labels)
    if sink is not None:
        sink.update(
            x=[round(float(v), 3) for v in xy[:, 0]],
            y=[round(float(v), 3) for v in xy[:, 1]],
            mode=[str(a) for a in assign],
            points=[(s, int(i)) for s in ("test", "reference") for i in idx[s]],
            colors=colors,
        )
    step("map: drawing")
    fig = _scatter(xy, assign, colors, idx, names, shown, total)
    return [
        el("div", cls="pp-widget", data_pp_widget="map"),
        el("div", fig, cls="pp-static"),
        _map_caption(result, shown, total, left_out, per_sign, origin, bool((assign == WEAK_NAME).any())),
    ]
