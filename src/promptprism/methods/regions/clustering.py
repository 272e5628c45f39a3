"""Regions from the pixel CKA matrix: average-linkage clustering of 1 - M, cut from the top (Algorithm 1).

The dendrogram is cut into C regions from the top, splitting the highest merge whose two branches both hold
at least ``min_region_size`` pixels (default: a quarter of the average region size, d / (4 C)); smaller
branches met on the way are not made regions and each such pixel joins the region with the highest mean CKA
to it. Without this, a few near-constant pixels (digit borders), whose CKA with everything is ~0, become
singleton "regions" and use up C. ``min_region_size=1`` is the plain cut. The largest gap between successive
split heights suggests C. Pixels constant over all training images carry no information (CKA 0 with
everything): the estimator leaves them out of the clustering and :func:`fill_constant_pixels` gives them the
region of the nearest non-constant pixel on the image grid.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._validation import check_positive_number
from ...errors import InputError, OptionError


def cka_linkage(cka_matrix: np.ndarray) -> np.ndarray:
    """Average-linkage tree (scipy) of the distances 1 - M between pixels."""
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import squareform

    dist = 1.0 - np.asarray(cka_matrix, dtype=np.float64)
    dist = np.clip((dist + dist.T) / 2.0, 0.0, None)
    np.fill_diagonal(dist, 0.0)
    return linkage(squareform(dist, checks=False), method="average")


def _top_down(m: np.ndarray, max_splits: int,
              min_size: int) -> tuple[list[list[int]], list[int], list[float]]:
    """Walk the average-linkage dendrogram of 1 - M from the root, splitting the highest merge first.

    A merge is split only when both branches hold at least ``min_size`` pixels; smaller branches met on the
    way down are set aside as outliers. Returns the cores (pixel lists), the outliers and the split heights.
    """
    from scipy.cluster.hierarchy import to_tree

    root = to_tree(cka_linkage(m))

    def descend(node):
        skipped: list[int] = []
        while not node.is_leaf():
            left, right = node.get_left(), node.get_right()
            if min(left.get_count(), right.get_count()) >= min_size:
                return node, skipped
            small, node = (left, right) if left.get_count() < right.get_count() else (right, left)
            skipped.extend(small.pre_order())
        return None, skipped

    cores, outliers, heights = [root], [], []
    while len(cores) <= max_splits:
        best = None
        for i, node in enumerate(cores):
            split, skipped = descend(node)
            if split is not None and (best is None or split.dist > best[1].dist):
                best = (i, split, skipped)
        if best is None:
            break
        i, split, skipped = best
        cores[i:i + 1] = [split.get_left(), split.get_right()]
        outliers.extend(skipped)
        heights.append(float(split.dist))
    return [c.pre_order() for c in cores], outliers, heights


def default_min_region_size(n_pixels: int, n_regions: int) -> int:
    """Smallest region the cut keeps: a quarter of the average region size (at least 1 pixel)."""
    return max(1, n_pixels // (4 * max(1, n_regions)))


def suggest_n_regions(cka_matrix: Any, *, max_regions: int = 10, min_region_size: int | None = None) -> int:
    """C at the largest gap between successive split heights of the dendrogram, C in [2, max_regions]."""
    m = np.asarray(cka_matrix, dtype=np.float64)
    d = m.shape[0]
    if d < 2:
        return 1
    ms = default_min_region_size(d, max_regions) if min_region_size is None else int(min_region_size)
    _, _, heights = _top_down(m, max_regions, ms)
    if len(heights) < 2:
        return max(1, min(max_regions, len(heights) + 1))
    # heights[k] is the split that makes k + 2 clusters; cutting between heights[c-2] and heights[c-1]
    # leaves c clusters (only C with a next split to compare with are candidates)
    gaps = {c: heights[c - 2] - heights[c - 1] for c in range(2, min(max_regions, len(heights)) + 1)}
    return max(gaps, key=lambda c: (gaps[c] - 1e-12 * c))


def discover_regions(cka_matrix: Any, n_regions: int | str = "auto", *, max_regions: int = 10,
                     min_region_size: int | None = None) -> np.ndarray:
    """Average-linkage clustering of 1 - M cut into C regions; labels 0..C-1, numbered by first pixel.

    The cut walks the dendrogram from the top and splits the highest merge whose two branches both have at
    least ``min_region_size`` pixels (default: a quarter of d / C), so that a few outlier pixels with low CKA
    to everything (near-constant borders) do not take up regions of their own; each such outlier joins the
    region with the highest mean CKA to it. ``min_region_size=1`` is the plain cut of the dendrogram into C
    clusters. ``n_regions="auto"`` picks C with :func:`suggest_n_regions`.
    """
    m = np.asarray(cka_matrix, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise InputError(f"CKA matrix: expected a square matrix, got shape {m.shape}")
    d = m.shape[0]
    if n_regions == "auto":
        n_regions = suggest_n_regions(m, max_regions=max_regions, min_region_size=min_region_size)
    c = int(check_positive_number(n_regions, "n_regions", integer=True))
    if c > d:
        raise OptionError(f"n_regions = {c} is more than the {d} pixels that can be clustered")
    if c == 1 or d == 1:
        return np.zeros(d, dtype=np.int64)
    ms = default_min_region_size(d, c) if min_region_size is None else int(
        check_positive_number(min_region_size, "min_region_size", integer=True))
    cores, outliers, _ = _top_down(m, c - 1, ms)
    if len(cores) < c and min_region_size is not None and ms > 1:  # asked for, and not possible
        raise OptionError(f"min_region_size = {ms}: the pixels do not split into {c} regions of at least "
                          f"{ms} pixels each ({d} pixels); lower min_region_size or ask for fewer regions")
    if len(cores) < c:  # C regions of the default size do not exist: plain cut
        cores, outliers, _ = _top_down(m, c - 1, 1)
    labels = np.full(d, -1, dtype=np.int64)
    for k, core in enumerate(cores):
        labels[core] = k
    if outliers:
        onehot = np.zeros((d, len(cores)))
        for k, core in enumerate(cores):
            onehot[core, k] = 1.0 / len(core)
        labels[outliers] = np.argmax(m[outliers] @ onehot, axis=1)
    return relabel(labels)


def relabel(labels: np.ndarray) -> np.ndarray:
    """Renumber labels 0..C-1 in order of their first pixel."""
    _, first = np.unique(labels, return_index=True)
    order = labels[np.sort(first)]
    mapping = {int(v): i for i, v in enumerate(order)}
    return np.array([mapping[int(v)] for v in labels], dtype=np.int64)


def fill_constant_pixels(labels: np.ndarray, constant: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Give each constant pixel (``labels`` there is ignored) the label of the nearest other pixel."""
    from scipy.ndimage import distance_transform_edt

    if not constant.any():
        return labels
    grid_const = constant.reshape(shape)
    _, (ri, ci) = distance_transform_edt(grid_const, return_indices=True)
    full = labels.reshape(shape)
    return full[ri, ci].reshape(-1).astype(np.int64)
