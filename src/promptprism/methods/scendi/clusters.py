"""Model-driven clusters: the top eigenvectors of Lambda_I (and of C_II) with the samples scoring highest.

Each eigenvector is oriented so that its strongest sample scores positive; a cluster lists the ``top_k``
samples with the largest scores along it (kernel PCA of the nullified features, eq. 7, resp. of the plain
output features). Scores come from a streaming pass in feature space (:func:`stream_cluster_scores`) or
directly from the sample-space eigenvectors (:func:`top_samples`).
"""

from __future__ import annotations

import numpy as np

from ..._progress import progress_enabled
from ...data.paired import PairedSet
from ...kernels.scendi_features import ScendiFeatureMaps
from ...scale.runner import current_client, current_runner, partition_size
from ...scale.runner import partition_rows as partition_rows_of
from ...stats.accumulators import TopKAccumulator
from .core import EIGEN_FLOOR
from .nullifier import chunks, cluster_scores_partition
from .results import Cluster, ClusterSample


def top_samples(model_scores: np.ndarray, output_scores: np.ndarray, top_k: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """(ids, scores) of the ``top_k`` rows along each direction, both signs, in the streaming pass's layout:
    columns are [model +, output +, model -, output -] scores (one column per eigenvector in each)."""
    s = np.concatenate([model_scores, output_scores], axis=1)
    top = TopKAccumulator(top_k, 2 * s.shape[1])
    top.update(np.arange(s.shape[0]), np.concatenate([np.maximum(s, 0.0), np.maximum(-s, 0.0)], axis=1))
    return top.compute()


def stream_cluster_scores(data: PairedSet, maps: ScendiFeatureMaps, gamma: np.ndarray, li_vecs: np.ndarray,
                          c_vecs: np.ndarray, *, chunk_size: int, partition_rows: int, top_k: int,
                          progress: bool | None) -> tuple[np.ndarray, np.ndarray]:
    """Second streaming pass on the current runner: project the nullified (and plain) output features on the
    top eigenvectors of Lambda_I (and C_II); (ids, scores) as in :func:`top_samples`."""
    client = current_client()
    size = chunk_size if client is None else partition_size(partition_rows, chunk_size)
    top = current_runner().map_reduce(cluster_scores_partition, [
        (maps, gamma, li_vecs, c_vecs, *partition_rows_of(data, a, b), a, chunk_size, top_k)
        for a, b in chunks(len(data), size)],
        description="Scendi: clusters", progress=progress_enabled(progress))
    return top.compute()


def build_clusters(data: PairedSet, ids: np.ndarray, scores: np.ndarray, *, eigenvalues: np.ndarray,
                   trace: float, k: int, offset: int) -> list[Cluster]:
    """Clusters from the top-sample table: column ``offset + j`` (positive) or ``2k + offset + j``
    (negative), whichever holds the stronger sample; share = eigenvalue / trace."""
    out = []
    for j in range(k):
        pos, neg = offset + j, 2 * k + offset + j
        best_pos = scores[0, pos] if scores.shape[0] else 0.0
        best_neg = scores[0, neg] if scores.shape[0] else 0.0
        col = pos if best_pos >= best_neg else neg
        samples = [ClusterSample(index=int(i), prompt=data.prompt_label(int(i)),
                                 output=data.output_label(int(i)), score=float(sc))
                   for i, sc in zip(ids[:, col], scores[:, col], strict=True) if sc > 0]
        share = float(eigenvalues[j] / trace) if trace > EIGEN_FLOOR else 0.0
        out.append(Cluster(rank=j + 1, eigenvalue=float(eigenvalues[j]), share=share, top_samples=samples))
    return out
