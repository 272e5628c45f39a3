"""Scendi's streaming passes, run through :func:`promptprism.scale.current_runner` (one process or a dask
cluster, one task per partition of rows): the joint covariance C (Section 4) and the cluster scores (the
rows' projections on the top eigenvectors of Lambda_I and C_II)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._progress import progress_enabled
from ..._validation import chunks
from ...backend import Backend
from ...data.paired import PairedSet
from ...kernels.scendi_features import ScendiFeatureMaps
from ...scale.runner import current_client, current_runner, partition_size
from ...scale.runner import partition_rows as partition_rows_of
from ...stats.accumulators import CovarianceAccumulator, TopKAccumulator
from .core import accumulate_joint, nullify


def stream_joint_covariance(data: PairedSet, maps: ScendiFeatureMaps, *, chunk_size: int,
                            partition_rows: int, progress: bool | None) -> CovarianceAccumulator:
    """The joint covariance's accumulator, from one pass over ``data`` on the current runner: the same
    partitions and the same pairwise merges in one process as on a cluster, so the sums agree bit for bit
    and the execution does not change the result."""
    size = partition_size(partition_rows, chunk_size)
    return current_runner().map_reduce(joint_covariance_partition, [
        (maps, *partition_rows_of(data, a, b), chunk_size) for a, b in chunks(len(data), size)],
        description="Scendi: covariance", progress=progress_enabled(progress), pairwise=True)


def joint_covariance_on(backend: Backend, data: PairedSet, maps: ScendiFeatureMaps, *, chunk_size: int,
                        partition_rows: int, progress: bool | None) -> Any:
    """The joint covariance C (Section 4) as an array of ``backend``: on numpy (or with a cluster) the
    streaming pass of :func:`stream_joint_covariance`; on torch in this process, chunk by chunk on the
    device (C += f^T f, in float64)."""
    if backend.name == "numpy" or current_client() is not None:
        return backend.asarray(stream_joint_covariance(data, maps, chunk_size=chunk_size,
                                                       partition_rows=partition_rows,
                                                       progress=progress).compute())
    xp = backend.xp
    dim = maps.dim_output + maps.dim_prompt
    c = xp.zeros((dim, dim), dtype=xp.float64, device=backend.torch_device)
    for a, b in chunks(len(data), chunk_size):
        f = xp.concat([maps.outputs(np.asarray(data.output_embeddings[a:b]), backend),
                       maps.prompts(np.asarray(data.prompt_embeddings[a:b]), backend)], axis=1)
        c += f.T @ f
    return c / len(data)


def stream_cluster_scores(data: PairedSet, maps: ScendiFeatureMaps, gamma: np.ndarray, li_vecs: np.ndarray,
                          c_vecs: np.ndarray, *, chunk_size: int, partition_rows: int, top_k: int,
                          progress: bool | None) -> tuple[np.ndarray, np.ndarray]:
    """Second streaming pass on the current runner: project the nullified (and plain) output features on the
    top eigenvectors of Lambda_I (and C_II); (ids, scores) as in :func:`top_samples`."""
    size = partition_size(partition_rows, chunk_size)
    top = current_runner().map_reduce(cluster_scores_partition, [
        (maps, gamma, li_vecs, c_vecs, *partition_rows_of(data, a, b), a, chunk_size, top_k)
        for a, b in chunks(len(data), size)],
        description="Scendi: clusters", progress=progress_enabled(progress))
    return top.compute()


def joint_covariance_partition(maps: ScendiFeatureMaps, prompts: Any, outputs: Any, start: int, stop: int,
                               chunk_size: int) -> CovarianceAccumulator:
    """Task: sum_i [phi_I(x_i); phi_T(t_i)][...]^T over rows [start, stop), chunk by chunk."""
    pieces = ((maps.outputs(outputs[start + a : start + b]), maps.prompts(prompts[start + a : start + b]))
              for a, b in chunks(stop - start, chunk_size))
    return accumulate_joint(pieces, maps.dim_output, maps.dim_prompt)


def cluster_scores_partition(maps: ScendiFeatureMaps, gamma: np.ndarray, li_vecs: np.ndarray,
                             c_vecs: np.ndarray, prompts: Any, outputs: Any, start: int, stop: int,
                             first_index: int, chunk_size: int, top_k: int) -> TopKAccumulator:
    """Task: the top samples along each eigenvector of Lambda_I (nullified features) and of C_II (plain).

    Columns: positive parts then negative parts of [nullified scores, plain scores]; ``first_index`` is the
    global index of row ``start``.
    """
    k = li_vecs.shape[1]
    top = TopKAccumulator(top_k, 4 * k)
    for a, b in chunks(stop - start, chunk_size):
        fi = maps.outputs(outputs[start + a : start + b])
        ft = maps.prompts(prompts[start + a : start + b])
        s = np.concatenate([nullify(fi, ft, gamma) @ li_vecs, fi @ c_vecs], axis=1)
        top.update(np.arange(first_index + a, first_index + b),
                   np.concatenate([np.maximum(s, 0.0), np.maximum(-s, 0.0)], axis=1))
    return top


__all__ = ["chunks", "cluster_scores_partition", "joint_covariance_on", "joint_covariance_partition",
           "stream_cluster_scores", "stream_joint_covariance"]
