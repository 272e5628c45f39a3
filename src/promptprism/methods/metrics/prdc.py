"""Precision, recall (Kynkäänniemi et al. 2019) and density, coverage (Naeem et al. 2020), in row blocks.

With real (reference) samples X_1..X_N, fake (generated) samples Y_1..Y_M and the k-nearest-neighbour radius
r_k(Z) of a sample within its own set (the distance to its k-th nearest other sample):

* precision = (1/M) sum_j 1[exists i: |Y_j - X_i| < r_k(X_i)]             (Kynkäänniemi et al. eq. 1-2)
* recall    = (1/N) sum_i 1[exists j: |X_i - Y_j| < r_k(Y_j)]             (Kynkäänniemi et al. eq. 1-2)
* density   = (1/(kM)) sum_j sum_i w_i 1[|Y_j - X_i| < r_k(X_i)]          (Naeem et al. eq. 3, w_i = 1)
* coverage  = (1/N) sum_i 1[exists j: |X_i - Y_j| < r_k(X_i)]             (Naeem et al. eq. 4)

Balls are open, as in the reference package ``prdc`` (with closed balls two identical sets would read
density (k + 1) / k: each ball's k-th neighbour sits on its sphere). For sets without exact duplicate rows
this is exactly ``prdc`` (tests/). Duplicates are where the published definitions break down, and where
this module departs, on purpose:

* A radius counts distinct neighbours: the copies of a sample are not its neighbours (in ``prdc``, k copies
  make its radius 0, its open ball empty, and two identical constant sets read density and coverage 0:
  prdc issue #7); a sample with fewer than k distinct neighbours gets the distance to its farthest one.
* Distances within round-off of a radius count as on the sphere (outside), so identical sets read exactly 1;
  a radius of 0 (a set with one distinct row) is a ball of round-off size: it holds its own copies.
* Density weights each reference ball by w_i = k / (m_i max(h_i, 1)), with m_i the multiplicity of X_i and
  h_i the distinct neighbours its closed ball holds (k without ties at the radius): 1 without duplicates;
  duplicating both sets leaves every metric unchanged, and two identical constant sets read 1 throughout.

Distances are computed in row blocks against the whole other set (bounded memory: ``block_rows`` x N
distances at a time), never as the full N x M matrix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InputError, OptionError

#: the distance block's budget in bytes (block_rows x other-set rows x 8)
BLOCK_BYTES = 256 * 2**20


@dataclass(frozen=True)
class NeighbourIndicators:
    """Per-sample indicators behind the four metrics (their means are the metrics; bootstrap resamples them).

    ``in_real_manifold[j]`` (fake j inside some real ball), ``real_balls[j]`` (the weighted count of real
    balls holding fake j), ``in_fake_manifold[i]`` (real i inside some fake ball), ``covered[i]`` (real i's
    own ball holds a fake sample), the radii, and the exact duplicate rows of each set.
    """

    in_real_manifold: np.ndarray
    real_balls: np.ndarray
    in_fake_manifold: np.ndarray
    covered: np.ndarray
    real_radii: np.ndarray
    fake_radii: np.ndarray
    k: int
    duplicates: dict

    def metrics(self) -> dict[str, float]:
        """{'precision', 'recall', 'density', 'coverage'}: the means of the indicators."""
        return {"precision": float(self.in_real_manifold.mean()),
                "recall": float(self.in_fake_manifold.mean()),
                "density": float(self.real_balls.mean() / self.k), "coverage": float(self.covered.mean())}


def check_nearest_k(k: Any, n_real: int, n_fake: int) -> int:
    """``k`` when both sets have more than k rows (a k-NN radius leaves the sample itself out)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise OptionError(f"nearest_k must be an integer >= 1, got {k!r}")
    for what, n in (("reference", n_real), ("generated", n_fake)):
        if n < k + 1:
            raise InputError(f"the {what} set has {n} samples; nearest_k={k} needs at least {k + 1} (each "
                             f"sample's k-NN radius is the distance to its {k}-th nearest other sample)",
                             parameter="nearest_k")
    return int(k)


def distinct_rows(x: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first row of each distinct row, each row's distinct index, each distinct row's multiplicity)."""
    arr = np.ascontiguousarray(x)
    view = arr.view(np.dtype((np.void, arr.dtype.itemsize * arr.shape[1]))).ravel()
    _, first, inverse, counts = np.unique(view, return_index=True, return_inverse=True, return_counts=True)
    return first, inverse.reshape(-1), counts


def _centre(x: Any, shift: np.ndarray, dtype: np.dtype, rows: int = 8192) -> tuple[np.ndarray, np.ndarray]:
    """Rows minus ``shift`` (distances are translation invariant; the expansion |a|^2 + |b|^2 - 2<a, b> then
    works on numbers of the size of the distances) in ``dtype``, and their squared norms."""
    out = np.empty(x.shape, dtype=dtype)
    for start in range(0, x.shape[0], rows):
        out[start : start + rows] = np.asarray(x[start : start + rows], dtype=np.float64) - shift
    return out, np.einsum("ij,ij->i", out, out)


def _block_rows(other: int, block_rows: int | None) -> int:
    return int(block_rows) if block_rows else max(1, min(4096, BLOCK_BYTES // (8 * max(other, 1))))


def _sq_dist(a: np.ndarray, a_sq: np.ndarray, b: np.ndarray, b_sq: np.ndarray) -> np.ndarray:
    d2 = a @ b.T
    d2 *= -2.0
    d2 += a_sq[:, None]
    d2 += b_sq[None, :]
    np.maximum(d2, 0.0, out=d2)
    return d2


def knn_radii(x: np.ndarray, x_sq: np.ndarray, k: int, *, block_rows: int | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """Squared distance of each (distinct) row of ``x`` to its k-th nearest other row, and how many other
    rows its closed ball holds (k without ties), in row blocks. With k or fewer other rows: the farthest."""
    n = x.shape[0]
    kth = min(k, n - 1)
    radii = np.zeros(n, dtype=np.float64)
    held = np.zeros(n, dtype=np.int64)
    if kth < 1:
        return radii, held
    step = _block_rows(n, block_rows)
    for start in range(0, n, step):
        stop = min(n, start + step)
        d2 = _sq_dist(x[start:stop], x_sq[start:stop], x, x_sq)
        d2[np.arange(stop - start), np.arange(start, stop)] = 0.0  # itself, exactly
        radii[start:stop] = np.partition(d2, kth, axis=1)[:, kth]
        held[start:stop] = (d2 <= radii[start:stop, None]).sum(axis=1) - 1
    return radii, held


def _set_radii(x: Any, shift: np.ndarray, k: int, dtype: np.dtype, block_rows: int | None) -> dict:
    first, inverse, counts = distinct_rows(x)
    xc, x_sq = _centre(x, shift, dtype)
    radii, held = knn_radii(xc[first], x_sq[first], k, block_rows=block_rows)
    return {"x": xc, "sq": x_sq, "radii": radii[inverse], "held": held[inverse],
            "mult": counts[inverse], "duplicates": int(x.shape[0] - first.size)}


def neighbour_indicators(real: Any, fake: Any, k: int = 5, *, dtype: Any = np.float64,
                         block_rows: int | None = None) -> NeighbourIndicators:
    """The per-sample indicators of precision, recall, density and coverage (module docstring, eqs.).

    ``dtype``: the distances' precision (float32 halves memory and time; ties can then differ from float64
    at round-off). Memory: the two centred copies plus one block of ``block_rows`` x (N or M) distances.
    """
    if real.shape[1] != fake.shape[1]:
        raise InputError(f"the reference and generated features have {real.shape[1]} and {fake.shape[1]} "
                         "dimensions; they must come from the same encoder")
    k = check_nearest_k(k, real.shape[0], fake.shape[0])
    shift = np.zeros(real.shape[1])
    for start in range(0, real.shape[0], 8192):
        shift += np.asarray(real[start : start + 8192], dtype=np.float64).sum(axis=0)
    shift /= real.shape[0]
    re = _set_radii(real, shift, k, np.dtype(dtype), block_rows)
    fa = _set_radii(fake, shift, k, np.dtype(dtype), block_rows)
    weight = k / (re["mult"] * np.maximum(re["held"], 1))
    # the round-off of the expansion |a|^2 + |b|^2 - 2<a, b>: a sample on a ball's sphere (identical sets:
    # the k-th neighbour) stays outside whichever way its two computed distances round, and a zero radius
    # still holds its own copies
    floor = 64 * np.finfo(np.dtype(dtype)).eps * max(float(re["sq"].max()), float(fa["sq"].max()), 1e-300)
    r_real = np.maximum(re["radii"] - floor, floor)
    r_fake = np.maximum(fa["radii"] - floor, floor)
    n, m = real.shape[0], fake.shape[0]
    in_real, balls = np.zeros(m, dtype=bool), np.zeros(m)
    in_fake, nearest_fake = np.zeros(n, dtype=bool), np.full(n, np.inf)
    step = _block_rows(n, block_rows)
    for start in range(0, m, step):
        stop = min(m, start + step)
        d2 = _sq_dist(fa["x"][start:stop], fa["sq"][start:stop], re["x"], re["sq"])  # (block, N)
        inside = d2 < r_real[None, :]
        in_real[start:stop] = inside.any(axis=1)
        balls[start:stop] = inside @ weight
        in_fake |= (d2 < r_fake[start:stop, None]).any(axis=0)
        np.minimum(nearest_fake, d2.min(axis=0), out=nearest_fake)
    return NeighbourIndicators(in_real, balls, in_fake, nearest_fake < r_real, np.sqrt(re["radii"]),
                               np.sqrt(fa["radii"]), k,
                               {"reference": re["duplicates"], "generated": fa["duplicates"]})


def prdc(real: Any, fake: Any, k: int = 5, **options: Any) -> dict[str, float]:
    """{'precision', 'recall', 'density', 'coverage'} of ``fake`` against ``real`` (module docstring)."""
    return neighbour_indicators(real, fake, k, **options).metrics()
