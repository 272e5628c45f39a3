"""PromptSplit on a dask LocalCluster of 2 processes equals the single-process run, even if a worker dies."""

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from method_tester import VOLATILE, assert_same_result  # noqa: E402
from promptprism import PromptSplit, load_paired  # noqa: E402
from promptprism.datasets import gaussian_mixture  # noqa: E402
from promptprism.scale import execution  # noqa: E402

pytestmark = pytest.mark.slow  # minutes in all: run by `make test` / CI, not by -m 'not slow'


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """The planted-mixture sets, in memory and as .npy folders that workers read themselves."""
    test, ref, _ = gaussian_mixture(2, per_component=150, seed=3)
    root = tmp_path_factory.mktemp("npy")
    for name, s in (("test", test), ("reference", ref)):
        (root / name).mkdir()
        np.save(root / name / "prompt_embeddings.npy", s.prompt_embeddings)
        np.save(root / name / "output_embeddings.npy", s.output_embeddings)
        np.save(root / name / "prompts.npy", np.array(s.prompts))
    return test, ref, load_paired(root / "test"), load_paired(root / "reference")


def _same(a, b):
    """The shared comparison (method_tester.assert_same_result) at this route's precision."""
    # float32 random features (the rff default) round differently with other BLAS kernels and chunk shapes:
    # equal up to a few float32 ulps of the spectrum's scale; float64 routes to 1e-9
    f32 = a.config.get("precision") == "float32"
    scale = np.abs(a.eigenvalues).max()
    tol = 64 * np.finfo(np.float32).eps * scale if f32 else 1e-9 * scale
    rel = 1e-5 if f32 else 1e-9
    # config: the sets' names (in memory) or paths (files), partition_rows used on a cluster only
    assert_same_result(a, b, rtol=rel, atol=tol,
                       ignore=(*VOLATILE, "partition_rows", "config.test", "config.reference"),
                       tolerances={"eigenvalues": (0, tol), "distance": (0, tol), "score": (rel, 0)})


@pytest.mark.parametrize("method", ["rff", "sketch"])
def test_cluster_equals_single_process(client, sets, method):
    test, ref, test_files, ref_files = sets
    kernel = "gaussian" if method == "rff" else "cosine"
    est = PromptSplit(kernel=kernel, method=method, n_features=400, n_modes=4, chunk_size=100,
                      partition_rows=250, seed=5)
    local = est.fit(test, ref)
    with execution(client):
        on_cluster = est.fit(test_files, ref_files)  # workers read the .npy partitions
    _same(local, on_cluster)
    assert on_cluster.config["partition_rows"] == 300  # rounded up to whole chunks
    with execution(client):
        in_memory_on_cluster = est.fit(test, ref)  # slices shipped to the workers
    _same(local, in_memory_on_cluster)


def test_sharded_npy_on_cluster(client, sets, tmp_path):
    """A set stored as .npy shards is read shard by shard by the workers; same result as in memory."""
    test, ref, _, _ = sets
    for name, s in (("test", test), ("reference", ref)):
        (tmp_path / name).mkdir()
        for k, (a, b) in enumerate([(0, 500), (500, 1000), (1000, len(s))]):
            np.save(tmp_path / name / f"prompt_embeddings-{k:05d}.npy", s.prompt_embeddings[a:b])
            np.save(tmp_path / name / f"output_embeddings-{k:05d}.npy", s.output_embeddings[a:b])
            np.save(tmp_path / name / f"prompts-{k:05d}.npy", np.array(s.prompts[a:b]))
    est = PromptSplit(method="rff", n_features=300, n_modes=3, chunk_size=128, partition_rows=384, seed=2)
    with execution(client):
        sharded = est.fit(load_paired(tmp_path / "test"), load_paired(tmp_path / "reference"))
    _same(est.fit(test, ref), sharded)


def test_worker_killed_mid_run_gives_same_result(sets):
    """A worker process is SIGKILLed while tasks run: the scheduler re-runs its tasks (the nanny restarts
    the process) and nothing is counted twice."""
    from conftest import run_killing_a_worker

    test, ref, test_files, ref_files = sets
    est = PromptSplit(method="rff", n_features=600, n_modes=3, chunk_size=50, partition_rows=50, seed=1)
    expected = est.fit(test, ref)
    def fit_on(c):
        with execution(c):
            return est.fit(test_files, ref_files)

    got = run_killing_a_worker(fit_on)
    _same(expected, got)


def test_parquet_dataset_on_cluster(client, sets, tmp_path):
    """A Parquet dataset is read by the workers row group by row group; same result as in memory."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from promptprism.data.inputs import load_input

    test, ref, _, _ = sets
    for name, s in (("test", test), ("reference", ref)):
        (tmp_path / name).mkdir()
        for k, (a, b) in enumerate([(0, 700), (700, len(s))]):
            pq.write_table(pa.table({"prompt": s.prompts[a:b],
                                     "prompt_embedding": [list(r) for r in s.prompt_embeddings[a:b]],
                                     "output_embedding": [list(r) for r in s.output_embeddings[a:b]]}),
                           tmp_path / name / f"part-{k}.parquet", row_group_size=256)
    est = PromptSplit(method="rff", n_features=300, n_modes=3, chunk_size=128, partition_rows=384, seed=2)
    with execution(client):
        on_cluster = est.fit(load_input(tmp_path / "test", cache=None),
                             load_input(tmp_path / "reference", cache=None))
    _same(est.fit(test, ref), on_cluster)
