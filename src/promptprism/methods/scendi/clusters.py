"""Model-driven clusters: the top eigenvectors of Lambda_I (and of C_II) with the samples scoring highest.

Each eigenvector is oriented so that its strongest sample scores positive; a cluster lists the ``top_k``
samples with the largest scores along it (kernel PCA of the nullified features, eq. 7, resp. of the plain
output features). Scores come from a streaming pass in feature space
(:func:`.streaming.stream_cluster_scores`) or directly from the in-memory eigenvectors (:func:`top_samples`).
"""

from __future__ import annotations

import numpy as np

from ...data.paired import PairedSet
from ...stats.accumulators import TopKAccumulator
from .core import EIGEN_FLOOR
from .result import Cluster, ClusterSample


def top_samples(model_scores: np.ndarray, output_scores: np.ndarray, top_k: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """(ids, scores) of the ``top_k`` rows along each direction, both signs, in the streaming pass's layout:
    columns are [model +, output +, model -, output -] scores (one column per eigenvector in each)."""
    s = np.concatenate([model_scores, output_scores], axis=1)
    top = TopKAccumulator(top_k, 2 * s.shape[1])
    top.update(np.arange(s.shape[0]), np.concatenate([np.maximum(s, 0.0), np.maximum(-s, 0.0)], axis=1))
    return top.compute()


def build_clusters(data: PairedSet, ids: np.ndarray, scores: np.ndarray, *, eigenvalues: np.ndarray,
                   trace: float, k: int, offset: int) -> list[Cluster]:
    """Clusters from the top-sample table: column ``offset + j`` (positive) or ``2k + offset + j``
    (negative), whichever holds the stronger sample; share = eigenvalue / trace, in [0, 1]. Directions of
    no variance (an eigenvalue at round-off, e.g. the second of a two-row set) are not clusters: left out."""
    out = []
    top = float(np.max(eigenvalues[:k])) if k else 0.0
    for j in range(k):
        if not eigenvalues[j] > max(EIGEN_FLOOR, 1e-12 * top):
            continue
        pos, neg = offset + j, 2 * k + offset + j
        best_pos = scores[0, pos] if scores.shape[0] else 0.0
        best_neg = scores[0, neg] if scores.shape[0] else 0.0
        col = pos if best_pos >= best_neg else neg
        samples = [ClusterSample(index=int(i), prompt=data.prompt_label(int(i)),
                                 output=data.output_label(int(i)), score=float(sc))
                   for i, sc in zip(ids[:, col], scores[:, col], strict=True) if sc > 0]
        share = min(1.0, max(0.0, float(eigenvalues[j] / trace))) if trace > EIGEN_FLOOR else 0.0
        out.append(Cluster(rank=j + 1, eigenvalue=float(eigenvalues[j]), share=share, top_samples=samples))
    return out
