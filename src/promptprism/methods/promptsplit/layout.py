"""The sample map of a PromptSplit result: a seeded subsample embedded in 2-D, each point assigned to a mode.

Computed once, when the result is written (:func:`with_layout`; stored as ``PromptSplitResult.layout``), so
that the report and ``promptprism report DIR`` draw it without computing anything. Cost is bounded whatever n
is: at most ``map_points`` samples (a seeded subsample, proportional per set) are drawn; at most
``LANDMARKS`` of them are scored on their own top modes by the exact route (one small Gram matrix, Lanczos)
and projected to 2-D (by default kernel PCA with the result's own kernel: one small eigen-solve, no
scikit-learn import; ``projection="t-sne"``: scikit-learn's t-SNE with few iterations), and the others
are placed by a local affine map of their
nearest landmarks and scored by their k-NN interpolation (:mod:`.landmarks`; so 20,000 points cost about as
much as 600). Rows
whose embeddings are not finite or are extreme (e.g. one row scaled by 1e300, which would overflow every
distance) are left out, so the embedding never sees a value it cannot handle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from ...array_ops import sorted_subsample
from ...scale.threads import openmp_threads
from .landmarks import (
    LANDMARKS,
    interpolate,
    knn_weights,
    landmark_indices,
    place_on_landmarks,
    project_on_landmarks,
)

#: at most this many samples go into the map (a seeded subsample above it); beyond ``LANDMARKS`` of them the
#: others are placed by k-NN interpolation, so the cost grows slowly; the page grows by about 0.1-0.45 MB
#: per 1,000 drawn samples (short texts to long texts with thumbnails; docs/architecture.md)
MAP_POINTS = 5_000
#: t-SNE iterations (sklearn's minimum is 250, the early-exaggeration phase)
TSNE_ITERATIONS = 300
#: Barnes-Hut angle of the t-SNE (sklearn's default 0.5; 0.8, the top of its advised range, took about 16 %
#: less CPU on 600 landmarks and kept the same share of 10-NN: 0.796 vs 0.793, benchmarks/report_map.py)
TSNE_ANGLE = 0.8
#: the map's 2-D projection by default (:data:`PROJECTIONS`)
PROJECTION = "kernel-pca"
#: the projections' names as the page writes them
PROJECTION_NAMES = {"kernel-pca": "kernel PCA", "t-sne": "t-SNE"}
#: the map assigns points to the top modes of each sign, up to this many
MAP_MODES_PER_SIGN = 4
#: a point is 'weak' when its largest |score| is below this fraction of its mode's 99th percentile
WEAK = 0.25
#: a row is 'extreme' when its largest |coordinate| exceeds this multiple of the median row's
EXTREME = 1e6
WEAK_NAME = "weak (models agree)"


def mode_label(side: str, rank: int) -> str:
    """'+1' for the first positive (test) mode, '−2' for the second negative (reference) one."""
    return f"{'+' if side == 'test' else '−'}{rank}"


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
    """Coordinates whose Euclidean distances follow the product kernel: [t/sigma_t, z/sigma_z] (gaussian) or
    the unit-normalised [t, z] (cosine)."""
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


def mode_scores(result: Any, t: dict[str, np.ndarray], z: dict[str, np.ndarray], n_modes: int
                ) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Exact-route scores (eq. 3's eigenvectors of the weighted Gram matrix) of the given samples (test rows
    first) on their own top ``n_modes`` modes per sign, with the result's kernel, bandwidths and eta:
    (scores (N, k), labels '+1', '-1', ..., eigenvalues)."""
    from ...stats.eigen import select_modes, weighted_gram_eigenpairs
    from .core import joint_gram, signed_weights

    cfg = result.config
    n, m = t["test"].shape[0], t["reference"].shape[0]
    eta = float(cfg.get("eta", 1.0))
    gram = joint_gram(t["test"], z["test"], t["reference"], z["reference"],
                      kernel=cfg.get("kernel", "gaussian"),
                      sigma_prompt=cfg.get("sigma_prompt"), sigma_output=cfg.get("sigma_output"))
    # a few modes of a large Gram matrix: Lanczos (ARPACK, to machine precision) beats the full spectrum
    eig = weighted_gram_eigenpairs(gram, signed_weights(n, m, eta), n_positive=n_modes, n_negative=n_modes,
                                   solver="lanczos" if n + m > 500 else "auto")
    sel = select_modes(eig.eigenvalues, n_modes, 1.0 + eta)
    vals = eig.eigenvalues[sel]
    labels, counts = [], {"test": 0, "reference": 0}
    for v in vals:
        side = "test" if v > 0 else "reference"
        counts[side] += 1
        labels.append(mode_label(side, counts[side]))
    return eig.scores[:, sel], labels, vals


def embed_tsne(x: np.ndarray, seed: int) -> np.ndarray:
    """t-SNE (sklearn, Barnes-Hut with angle ``TSNE_ANGLE``, ``TSNE_ITERATIONS`` iterations, PCA init) of
    rows already checked by :func:`usable_rows`; the rows are centred and scaled to unit median norm first."""
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE

    n = x.shape[0]
    x = x - x.mean(axis=0)
    scale = float(np.median(np.linalg.norm(x, axis=1)))
    x = x / (scale if scale > 0 else 1.0)
    if x.shape[1] > 50 and n > 50:
        x = PCA(50, random_state=seed).fit_transform(x)
    perplexity = float(min(30.0, max(2.0, (n - 1) / 3.0)))
    tsne = TSNE(2, perplexity=perplexity, init="pca", learning_rate="auto", max_iter=TSNE_ITERATIONS,
                angle=TSNE_ANGLE, random_state=seed)
    with openmp_threads():
        return tsne.fit_transform(x)


def embed_kernel_pca(x: np.ndarray, seed: int) -> np.ndarray:
    """Kernel PCA (Schölkopf et al. 1998) of rows already checked by :func:`usable_rows`, with the kernel
    k(a, b) = exp(-|a - b|^2 / 2) on the rows of :func:`joint_features` (for the gaussian kernel: the
    result's own product kernel, eq. 2): the top two eigenpairs (lambda, v) of the doubly centred Gram
    matrix H K H, coordinates v sqrt(lambda), each axis signed so that its largest |coordinate| is
    positive (deterministic; ``seed`` is unused). One eigen-decomposition of the landmarks' Gram matrix
    (numpy's: 600 landmarks in ~0.025 s, and no import of ``scipy.linalg``)."""
    x = np.asarray(x, dtype=np.float64)
    sq = np.einsum("ij,ij->i", x, x)
    gram = np.exp(-0.5 * np.maximum(sq[:, None] + sq[None, :] - 2.0 * (x @ x.T), 0.0))
    gram -= gram.mean(axis=0, keepdims=True)
    gram -= gram.mean(axis=1, keepdims=True)
    vals, vecs = np.linalg.eigh(gram)
    xy = vecs[:, ::-1][:, :2] * np.sqrt(np.maximum(vals[::-1][:2], 0.0))
    top = np.abs(xy).argmax(axis=0)
    return xy * np.where(xy[top, [0, 1]] < 0, -1.0, 1.0)


#: the map's projections by name: (rows, seed) -> (rows, 2)
PROJECTIONS = {"kernel-pca": embed_kernel_pca, "t-sne": embed_tsne}


def embed_2d(x: np.ndarray, seed: int, projection: str = PROJECTION) -> np.ndarray:
    """The map's 2-D projection of rows already checked by :func:`usable_rows`: :data:`PROJECTIONS`'
    ``projection``."""
    return PROJECTIONS[projection](x, seed)


def _origin(result: Any, whole: bool, vals: np.ndarray, per_sign: int) -> str:
    if whole and result.method == "exact":
        ref = np.r_[[mm.eigenvalue for mm in result.positive_modes[:per_sign]],
                    [mm.eigenvalue for mm in result.negative_modes[:per_sign]]]
        mine = np.r_[vals[vals > 0], vals[vals < 0]]
        agree = ref.size == mine.size and np.allclose(np.sort(ref), np.sort(mine), rtol=1e-6, atol=1e-12)
        return ("the result's own modes" if agree
                else "modes recomputed on these samples (their eigenvalues differ from the result's)")
    if whole:
        return f"the exact route's modes on all samples (the result used the {result.method} route)"
    return "modes re-estimated by the exact route on the map's landmarks"


def assign_modes(scores: np.ndarray, labels: list[str]) -> np.ndarray:
    """Each point's mode: the one on which its |score|, in units of the mode's own spread (its 99th
    percentile |score|), is largest (so the top mode, whose scores are the largest, does not take every
    point); ``WEAK_NAME`` below ``WEAK`` of that on every mode."""
    if scores.shape[1] == 0:
        return np.array(["no mode"] * scores.shape[0], dtype=object)
    spread = np.quantile(np.abs(scores), 0.99, axis=0)
    strength = np.abs(scores) / np.where(spread > 0, spread, 1.0)
    assign = np.array([labels[j] for j in strength.argmax(axis=1)], dtype=object)
    assign[strength.max(axis=1) < WEAK] = WEAK_NAME
    return assign


def sample_indices(result: Any, map_points: int) -> tuple[dict[str, np.ndarray], int]:
    """The map's seeded subsample, proportional per set: ({set: sorted row indices}, points asked for)."""
    total = result.n_test + result.n_reference
    k = max(2, min(int(map_points), total))
    rng = np.random.default_rng(result.seed)
    k_test = min(result.n_test, max(1, round(k * result.n_test / total)))
    pick = {"test": (result.n_test, k_test), "reference": (result.n_reference, k - k_test)}
    return {s: (np.arange(n) if j >= n else sorted_subsample(n, j, rng))
            for s, (n, j) in pick.items()}, k


def sample_map(result: Any, sets: dict[str, Any], map_points: int = MAP_POINTS, *,
               landmarks: int = LANDMARKS, embed: Callable[[np.ndarray, int], np.ndarray] | None = None,
               step: Callable[[str], None] = lambda _: None, projection: str = PROJECTION) -> dict[str, Any]:
    """The map record (``embed(rows, seed) -> (n, 2)``: the projection, :func:`embed_2d` with
    ``projection`` by default; ``step(name)`` reports progress):
    ``points`` ([set, row] each), ``x``, ``y`` (the projection of at most ``landmarks`` points, the others
    placed
    by :mod:`.landmarks`' local affine map of their nearest landmarks, their mode scores by k-NN
    interpolation), ``mode`` (each point's mode
    label or ``WEAK_NAME``), ``labels`` (the modes, in order), ``origin`` (which modes they are),
    ``projection`` (its name in :data:`PROJECTIONS`), ``shown``,
    ``total``, ``landmarks``, ``left_out`` (rows with non-finite or extreme embeddings), ``per_sign``,
    ``map_points`` and ``seed``; or ``{'note': why}`` when there is no map (too few samples)."""
    total = result.n_test + result.n_reference
    idx, k = sample_indices(result, map_points)
    if min(len(v) for v in idx.values()) < 2 or k < 12:
        return {"note": f"too few samples ({k}) for a map", "map_points": int(map_points)}
    t = {s: np.asarray(sets[s].prompt_embeddings[idx[s]], dtype=np.float64) for s in idx}
    z = {s: np.asarray(sets[s].output_embeddings[idx[s]], dtype=np.float64) for s in idx}
    drawn = sum(len(v) for v in idx.values())
    feats = joint_features(np.vstack([t["test"], t["reference"]]), np.vstack([z["test"], z["reference"]]),
                           result.config)
    keep = usable_rows(feats)
    left_out = int((~keep).sum())
    if left_out:
        part = {"test": keep[:len(idx["test"])], "reference": keep[len(idx["test"]):]}
        idx, t, z = ({s: d[s][part[s]] for s in d} for d in (idx, t, z))
        feats = feats[keep]
        if min(len(v) for v in idx.values()) < 2 or feats.shape[0] < 12:
            return {"note": f"map not drawn: {left_out:,} of the {drawn:,} sampled rows have non-finite or "
                            "extreme embeddings (at this kernel's bandwidths) and too few remain",
                    "map_points": int(map_points)}
    per_sign = min(MAP_MODES_PER_SIGN, int(result.config.get("n_modes") or MAP_MODES_PER_SIGN))
    shown = feats.shape[0]
    land = landmark_indices(shown, landmarks, result.seed)
    n_t = len(idx["test"])
    part = {"test": land[land < n_t], "reference": land[land >= n_t] - n_t}
    if min(len(v) for v in part.values()) < 2:  # (a lopsided draw: every point is a landmark)
        land, part = np.arange(shown), {s: np.arange(len(idx[s])) for s in idx}
    step("map: mode scores of the sampled points")
    scores, labels, vals = mode_scores(result, {s: t[s][part[s]] for s in t}, {s: z[s][part[s]] for s in z},
                                       per_sign)
    if not np.isfinite(scores).all():
        return {"note": "map not drawn: the sampled points' mode scores are not finite",
                "map_points": int(map_points)}
    if projection not in PROJECTIONS:
        raise ValueError(f"unknown map projection {projection!r} (one of {', '.join(PROJECTIONS)})")
    step(f"map: {PROJECTION_NAMES[projection]} embedding")
    xy = (embed or PROJECTIONS[projection])(feats[land], result.seed)
    if land.size < shown:
        step("map: placing the other points by their nearest landmarks")
        proj = project_on_landmarks(feats, land)
        nb, w = knn_weights(proj, proj[land])
        xy, scores = place_on_landmarks(proj, proj[land], xy, nb, w), interpolate(scores, nb, w)
    return {"points": [[s, int(i)] for s in ("test", "reference") for i in idx[s]],
            "x": [round(float(v), 3) for v in xy[:, 0]], "y": [round(float(v), 3) for v in xy[:, 1]],
            "mode": [str(a) for a in assign_modes(scores, labels)], "labels": labels,
            "origin": _origin(result, shown == total and land.size == shown, vals, per_sign),
            "projection": projection,
            "shown": int(shown), "landmarks": int(land.size),
            "total": int(total),
            "left_out": left_out, "per_sign": int(per_sign), "map_points": int(map_points),
            "seed": int(result.seed)}


def with_layout(result: Any, sets: dict[str, Any], map_points: int = MAP_POINTS,
                projection: str = PROJECTION) -> Any:
    """``result`` with its sample map (:func:`sample_map` with ``projection``) stored in ``layout``; a map
    that cannot be computed (a degenerate subsample, a missing package) is stored as ``{'note': why}``."""
    try:
        layout = sample_map(result, sets, map_points, projection=projection)
    except (ImportError, ArithmeticError, ValueError, TypeError, RuntimeError, np.linalg.LinAlgError) as exc:
        layout = {"note": f"map not drawn: {type(exc).__name__}: {exc}", "map_points": int(map_points)}
    return dataclasses.replace(result, layout=layout)
